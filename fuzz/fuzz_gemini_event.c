/*
 * Fuzz target for the Gemini decoder (src/providers/gemini.c) and the assembler behind it:
 * each input line is one streamGenerateContent payload (as in a recorded .stream.jsonl file),
 * fed in pieces; the same bytes also go through SSE framing and, as one body (an object or
 * the JSON array a stream without alt=sse is), through the non-streamed decoder. A run that
 * decodes must give a response whose JSON form and neutral message can be built (the
 * partialArgs paths of streamed call arguments included).
 */
#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_decode_named("gemini-sse", true, data, size);
    /* the same bytes as SSE framing */
    fuzz_decode_named("gemini-sse", false, data, size);
    fuzz_decode_named("gemini-json", false, data, size);
    return 0;
}
