/*
 * Fuzz target for the Anthropic event decoder (src/providers/anthropic.c) and the assembler and
 * text-call scanner behind it: each input line is one messages-stream event payload (as in
 * a recorded .stream.jsonl file), fed in pieces. A run that decodes must give a response
 * whose JSON form and neutral message can be built. The same bytes also go through the
 * decoder as SSE framing (event:, comments, error events, a cut last event) and, as a whole
 * JSON body, through the non-streamed decoder.
 */
#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_decode(REIN_WIRE_ANTHROPIC_SSE, true, data, size);
    fuzz_decode(REIN_WIRE_ANTHROPIC_SSE, false, data, size); /* the same bytes as SSE framing */
    fuzz_decode(REIN_WIRE_ANTHROPIC_JSON, false, data, size);
    return 0;
}
