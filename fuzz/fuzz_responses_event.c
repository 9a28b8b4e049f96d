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
    fuzz_decode_named("openai-responses-sse", true, data, size);
    /* the same bytes as SSE framing */
    fuzz_decode_named("openai-responses-sse", false, data, size);
    fuzz_decode_named("openai-responses-json", false, data, size);
    return 0;
}
