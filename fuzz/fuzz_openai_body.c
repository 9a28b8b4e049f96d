/*
 * Fuzz target for the one-pass reader of a whole OpenAI chat completion body
 * (rein__openai_body_fast in src/providers/oachunk.c): the input is decoded as one
 * "openai-json" body with the fast path and with the general path (jtok/jsmn and
 * take_object); the two must show the same events, response, notes and errors
 * (fuzz/oachunk_same.h).
 */
#include "providers/provider_int.h"

#include "oachunk_same.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    if (oa_compare_body(size ? (const char *)data : "", size, NULL) == OA_DIFFERENT)
        abort();
    return 0;
}
