/*
 * Private to the claim files (claims.c, claims_check.c): the claims list and the compiled
 * patterns shared by extraction and checking.
 */
#ifndef REIN_VERIFY_CLAIMS_INT_H
#define REIN_VERIFY_CLAIMS_INT_H

#include "verify_int.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* One claim; the strings are owned, pub's pointers are refreshed by rein_verify_claims_get. */
struct rein__claim {
    struct rein_verify_claim pub;
    char *text;
    char *path;
    char *name;
    char *evidence;
};

/* Invariant: n <= cap; v holds n initialised claims. */
struct rein_verify_claims {
    struct rein__claim *v;
    size_t n, cap;
};

enum {
    RE_PATH,
    RE_CREATED,
    RE_MODIFIED,
    RE_DELETED,
    RE_FN_VERB,
    RE_FN_NAME,
    RE_LINE,
    RE_TESTS,
    RE_TYPES,
    RE_BUILD,
    RE_LINT,
    RE_HEDGE,
    RE_NEG,
    RE_COUNT,
};

struct rein__claims_re {
    pcre2_general_context *gctx;
    pcre2_code *code[RE_COUNT];
    pcre2_match_data *md;
};

/* A match: the whole of it, and its first participating group (0, 0 when none). */
struct rein__span {
    size_t start, end;
    size_t g_start, g_end;
};

rein_err rein__claims_re_init(struct rein__claims_re *re, rein_error *err);
void rein__claims_re_release(struct rein__claims_re *re);
bool rein__claims_find(struct rein__claims_re *re, int i, const char *s, size_t n, size_t start,
                       struct rein__span *m);

#endif /* REIN_VERIFY_CLAIMS_INT_H */
