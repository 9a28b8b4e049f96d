/*
 * Fuzz target for the fast JSON tokenizer in front of jsmn (src/providers/jtok.c): on every
 * input it accepts, its tokens must be exactly jsmn's (fuzz/jtok_same.h); inputs it declines
 * go to jsmn in the decoders, so they need no check here. The input is also tokenized as it
 * is cut at every tenth of its length, which gives the decoders' "cut short" texts.
 */
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include "providers/jpull.h"

#include "jtok_same.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t k = 10; k > 0; k--) {
        if (jtok_compare((const char *)data, size * k / 10) == JTOK_DIFFERENT)
            abort();
    }
    return 0;
}
