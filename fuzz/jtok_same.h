/*
 * The promise of the fast tokenizer (src/providers/jtok.c), checked on one text: where it
 * accepts the text, it gives exactly the tokens jsmn_parse gives (JSMN_STRICT,
 * JSMN_PARENT_LINKS: types, offsets, sizes, parents, count), and a token array one token
 * too small is reported as full, never overrun. Shared by fuzz/fuzz_jtok.c and
 * tests/unit/test_jtok.c. Include after <jsmn.h> (those two options and JSMN_STATIC) and
 * "providers/jpull.h".
 */
#ifndef REIN_FUZZ_JTOK_SAME_H
#define REIN_FUZZ_JTOK_SAME_H

#include <rein/core.h>

enum jtok_verdict { JTOK_DECLINED, JTOK_SAME, JTOK_DIFFERENT, JTOK_NOMEM };

static enum jtok_verdict jtok_compare(const char *js, size_t len)
{
    enum jtok_verdict v = JTOK_NOMEM;
    int cap = 8, r, rj;
    jsmntok_t *fast = rein_malloc(sizeof(*fast) * (size_t)cap), *ref = NULL, *bigger;
    jsmn_parser p;

    if (!fast)
        return JTOK_NOMEM;
    while ((r = rein__jtok_fast(js, len, fast, cap)) == REIN__JTOK_FULL) {
        if (cap > (1 << 20) || !(bigger = rein_realloc(fast, sizeof(*fast) * (size_t)cap * 2)))
            goto out;
        fast = bigger;
        cap *= 2;
    }
    if (r == REIN__JTOK_DECLINED) {
        v = JTOK_DECLINED;
        goto out;
    }
    v = JTOK_DIFFERENT;
    if (r < 0)
        goto out;
    ref = rein_malloc(sizeof(*ref) * ((size_t)r + 1));
    if (!ref) {
        v = JTOK_NOMEM;
        goto out;
    }
    jsmn_init(&p);
    rj = jsmn_parse(&p, js, len, ref, (unsigned)r + 1);
    if (rj != r)
        goto out;
    for (int i = 0; i < r; i++) {
        if (fast[i].type != ref[i].type || fast[i].start != ref[i].start ||
            fast[i].end != ref[i].end || fast[i].size != ref[i].size ||
            fast[i].parent != ref[i].parent)
            goto out;
    }
    if (r > 0 && rein__jtok_fast(js, len, fast, r - 1) != REIN__JTOK_FULL)
        goto out;
    v = JTOK_SAME;
out:
    rein_free(ref);
    rein_free(fast);
    return v;
}

#endif /* REIN_FUZZ_JTOK_SAME_H */
