/*
 * Fuzz target for the Ollama NDJSON decoder (src/providers/ollama.c) and the assembler and
 * text-call scanner behind it: each input line is one /api/chat stream line (as in
 * an Ollama NDJSON stream), fed in pieces. A run that decodes must give a response
 * whose JSON form and neutral message can be built; the same bytes as a whole JSON body go
 * through the non-streamed decoder.
 */
#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_decode(REIN_WIRE_OLLAMA_NDJSON, false, data, size);
    fuzz_decode(REIN_WIRE_OLLAMA_JSON, false, data, size);
    return 0;
}
