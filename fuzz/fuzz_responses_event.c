/*
 * Fuzz target for the OpenAI Responses API decoder (src/providers/responses.c) and the
 * assembler and text-call scanner behind it: each input line is one typed stream event
 * payload (as in the Vercel AI SDK's .chunks.txt recordings), fed in pieces. The same bytes
 * also go through the decoder as SSE framing (event: lines, comments, error events, a cut
 * last event) and, as a whole JSON body (a response object or an error), through the
 * non-streamed decoder.
 */
#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum rein_wire_format sse, body;

    if (rein_wire_format_parse("openai-responses-sse", &sse) != REIN_OK ||
        rein_wire_format_parse("openai-responses-json", &body) != REIN_OK)
        return 0;
    fuzz_decode(sse, true, data, size);
    fuzz_decode(sse, false, data, size); /* the same bytes as SSE framing */
    fuzz_decode(body, false, data, size);
    return 0;
}
