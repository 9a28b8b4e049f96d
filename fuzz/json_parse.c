/*
 * Fuzz target for rein's own JSON parser (src/core/json_fast.c), differential against
 * jansson: whatever it accepts, jansson's loader accepts, with and without
 * JSON_REJECT_DUPLICATES, as the same document, written out the same (members in order,
 * integers and reals as such, the same doubles, the same strings); and rein_json_parse()
 * answers exactly as jansson does, a value or an error, for both flag sets.
 */
#include <rein/rein.h>

#include "core/internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* True when a and b are both absent, or both present and written out alike. */
static bool same(const json_t *a, const json_t *b)
{
    char *ta, *tb;
    bool eq;

    if (!a || !b)
        return !a && !b;
    ta = rein_json_dumps(a);
    tb = rein_json_dumps(b);
    if (!ta || !tb)
        abort(); /* out of memory is not what this target looks for */
    eq = strcmp(ta, tb) == 0;
    rein_free(ta);
    rein_free(tb);
    return eq;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const size_t base = JSON_DECODE_ANY | JSON_ALLOW_NUL;
    json_t *fast, *strict, *loose, *api_strict, *api_loose;

    if (size > 1 << 20)
        return 0;
    fast = rein__json_parse_fast(text, size);
    strict = json_loadb(text, size, base | JSON_REJECT_DUPLICATES, NULL);
    loose = json_loadb(text, size, base, NULL);
    api_strict = rein_json_parse(text, size, JSON_REJECT_DUPLICATES, NULL);
    api_loose = rein_json_parse(text, size, 0, NULL);
    if (fast && (!same(fast, strict) || !same(fast, loose)))
        abort();
    if (!same(api_strict, strict) || !same(api_loose, loose))
        abort();
    json_decref(fast);
    json_decref(strict);
    json_decref(loose);
    json_decref(api_strict);
    json_decref(api_loose);
    return 0;
}
