/*
 * Pulling fields out of JSON text with jsmn, without building a tree (docs/DESIGN.md, "JSON on
 * the hot paths"). A payload is tokenized once; lookups walk the token array in place and
 * hand out spans of the original text, so nothing is allocated per chunk except when the
 * token array must grow.
 *
 * Include after <jsmn.h> with JSMN_STATIC and JSMN_PARENT_LINKS defined (each file that uses
 * jsmn compiles its own static copy, as jsmn intends).
 */
#ifndef REIN_JPULL_H
#define REIN_JPULL_H

#include "provider_int.h"

#include <string.h>

#define JP_MAX_TOKENS (1 << 22)

struct jdoc {
    const char *js;
    jsmntok_t *t;
    int n;
};

/*
 * jtok.c: the tokens jsmn_parse gives well-formed JSON text, found faster; returns the token
 * count, REIN__JTOK_FULL when t (cap tokens) is too small, or REIN__JTOK_DECLINED for any
 * text it does not accept (then jsmn decides). t is borrowed; its contents are undefined
 * after a refusal.
 */
#define REIN__JTOK_DECLINED (-100)
#define REIN__JTOK_FULL     (-101)
int rein__jtok_fast(const char *js, size_t len, jsmntok_t *t, int cap);

/*
 * Tokenizes len bytes of js into *tokv (grown as needed; *cap is its size). Returns the
 * token count (>= 0) or a negative jsmn error: JSMN_ERROR_INVAL for bytes that are not
 * JSON, JSMN_ERROR_PART for a value cut short, JSMN_ERROR_NOMEM when memory is exhausted.
 * Well-formed text takes rein__jtok_fast; the rest, and every error, is jsmn's.
 */
static inline int jdoc_parse(struct jdoc *d, const char *js, size_t len, void **tokv, int *cap)
{
    jsmn_parser ps;
    int r;
    bool fast = true;

    if (len > (size_t)0x7fffffff)
        return JSMN_ERROR_NOMEM;
    jsmn_init(&ps);
    if (!*tokv) {
        *tokv = rein_malloc(sizeof(jsmntok_t) * 256);
        if (!*tokv)
            return JSMN_ERROR_NOMEM;
        *cap = 256;
    }
    for (;;) {
        if (fast) {
            r = rein__jtok_fast(js, len, (jsmntok_t *)*tokv, *cap);
            if (r == REIN__JTOK_FULL)
                r = JSMN_ERROR_NOMEM;
            else if (r == REIN__JTOK_DECLINED)
                fast = false;
        }
        if (!fast)
            r = jsmn_parse(&ps, js, len, (jsmntok_t *)*tokv, (unsigned)*cap);
        if (r != JSMN_ERROR_NOMEM)
            break;
        if (*cap >= JP_MAX_TOKENS)
            return JSMN_ERROR_NOMEM;
        jsmntok_t *bigger = rein_realloc(*tokv, sizeof(jsmntok_t) * (size_t)*cap * 2);
        if (!bigger)
            return JSMN_ERROR_NOMEM;
        *tokv = bigger;
        *cap *= 2;
    }
    d->js = js;
    d->t = (jsmntok_t *)*tokv;
    d->n = r > 0 ? r : 0;
    return r;
}

/* Index of the token after the value at i and everything inside it. */
static inline int jnext(const struct jdoc *d, int i)
{
    int end = d->t[i].end;
    int j = i + 1;

    while (j < d->n && d->t[j].start < end)
        j++;
    return j;
}

static inline bool jis(const struct jdoc *d, int i, jsmntype_t type)
{
    return i >= 0 && i < d->n && d->t[i].type == type;
}

/* True when token i is a string equal to lit (compared raw: lit has no escapes); i may be -1
 * (a member that was not found). */
static inline bool jeq(const struct jdoc *d, int i, const char *lit, size_t len)
{
    const jsmntok_t *t;

    if (i < 0 || i >= d->n)
        return false;
    t = &d->t[i];
    return t->type == JSMN_STRING && (size_t)(t->end - t->start) == len &&
           memcmp(d->js + t->start, lit, len) == 0;
}
#define JEQ(d, i, lit) jeq((d), (i), (lit), sizeof(lit) - 1)

/* The value of key in the object at obj, or -1. Keys are compared raw. */
static inline int jget(const struct jdoc *d, int obj, const char *key, size_t klen)
{
    int i, k, count;

    if (!jis(d, obj, JSMN_OBJECT))
        return -1;
    count = d->t[obj].size;
    i = obj + 1;
    for (k = 0; k < count && i + 1 < d->n; k++) {
        if (jeq(d, i, key, klen))
            return i + 1;
        i = jnext(d, i + 1);
    }
    return -1;
}
#define JGET(d, obj, key) jget((d), (obj), (key), sizeof(key) - 1)

/* A member name for jfields(), with its length worked out at compile time. */
struct jkey {
    const char *s;
    size_t len;
};
#define JK(lit)                                                                                    \
    {                                                                                              \
        (lit), sizeof(lit) - 1                                                                     \
    }

/*
 * One pass over the object at obj: out[k] receives the value index of keys[k], or -1. Cheaper
 * than one jget() per key when several members are wanted (each jget walks the object).
 */
static inline void jfields(const struct jdoc *d, int obj, const struct jkey *keys, int nkeys,
                           int *out)
{
    int found = 0;

    for (int k = 0; k < nkeys; k++)
        out[k] = -1;
    if (!jis(d, obj, JSMN_OBJECT))
        return;
    int count = d->t[obj].size, i = obj + 1;
    for (int c = 0; c < count && i + 1 < d->n && found < nkeys; c++) {
        const jsmntok_t *t = &d->t[i];
        const char *name = d->js + t->start;
        size_t klen = (size_t)(t->end - t->start);
        for (int k = 0; k < nkeys; k++) {
            if (out[k] < 0 && keys[k].len == klen && name[0] == keys[k].s[0] &&
                memcmp(name, keys[k].s, klen) == 0) {
                out[k] = i + 1;
                found++;
                break;
            }
        }
        i = jnext(d, i + 1);
    }
}
#define JFIELDS(d, obj, keys, out) jfields((d), (obj), (keys), (int)REIN_ARRAY_SIZE(keys), (out))

/* The i-th element of the array at arr, or -1. */
static inline int jat(const struct jdoc *d, int arr, int idx)
{
    int i;

    if (!jis(d, arr, JSMN_ARRAY) || idx >= d->t[arr].size)
        return -1;
    i = arr + 1;
    while (idx-- > 0)
        i = jnext(d, i);
    return i < d->n ? i : -1;
}

static inline bool jnull(const struct jdoc *d, int i)
{
    return i < 0 || (d->t[i].type == JSMN_PRIMITIVE && d->js[d->t[i].start] == 'n');
}

static inline bool jtrue(const struct jdoc *d, int i)
{
    return jis(d, i, JSMN_PRIMITIVE) && d->js[d->t[i].start] == 't';
}

/* The string token at i as a span (escapes intact). */
static inline struct rein__jstr jstr(const struct jdoc *d, int i)
{
    struct rein__jstr s = {"", 0, false};

    if (jis(d, i, JSMN_STRING)) {
        s.p = d->js + d->t[i].start;
        s.len = (size_t)(d->t[i].end - d->t[i].start);
        s.esc = memchr(s.p, '\\', s.len) != NULL;
    }
    return s;
}

/* A non-negative integer at i (a plain decimal, or one with a fraction of zeros) into *out. */
static inline bool jint(const struct jdoc *d, int i, int64_t *out)
{
    const char *p, *e;
    int64_t v = 0;

    if (!jis(d, i, JSMN_PRIMITIVE))
        return false;
    p = d->js + d->t[i].start;
    e = d->js + d->t[i].end;
    if (p == e || *p < '0' || *p > '9')
        return false;
    for (; p < e && *p >= '0' && *p <= '9'; p++) {
        if (v > (INT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return true;
}

/* The integer member key of the object at obj, or -1 when it is absent or not an integer
 * (usage counts, which are never negative). */
static inline int64_t jget_int(const struct jdoc *d, int obj, const char *key, size_t klen)
{
    int64_t v;

    return jint(d, jget(d, obj, key, klen), &v) ? v : -1;
}
#define JGET_INT(d, obj, key) jget_int((d), (obj), (key), sizeof(key) - 1)

/* The raw text of the value at i. */
static inline const char *jraw(const struct jdoc *d, int i, size_t *len)
{
    *len = (size_t)(d->t[i].end - d->t[i].start);
    return d->js + d->t[i].start;
}

/* A jansson value for the token at i (errors are rare: a tree is fine there). */
static inline json_t *jtree(const struct jdoc *d, int i)
{
    size_t len;
    const char *p;

    if (i < 0)
        return NULL;
    if (d->t[i].type == JSMN_STRING) {
        p = d->js + d->t[i].start - 1;
        len = (size_t)(d->t[i].end - d->t[i].start) + 2;
    } else {
        p = jraw(d, i, &len);
    }
    return rein_json_parse(p, len, 0, NULL);
}

/* True when p[0..len) is only whitespace. */
static inline bool jblank(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            return false;
    }
    return true;
}

/*
 * Tokenizes a stream payload (number n of decoder d) into doc. Returns the token count (> 0)
 * when there is JSON to read; 0 when there is nothing to read and nothing was wrong (the
 * input's last payload cut short, or a plain-text "event: error", both kept by the decoder);
 * a negative code otherwise (REIN_ENOMEM, or the REIN_EPARSE that names the payload).
 */
static inline int jdoc_payload(struct rein_provider_decoder *d, const char *event, const char *p,
                               size_t len, size_t n, struct jdoc *doc, rein_error *err)
{
    int r = jdoc_parse(doc, p, len, &d->tok, &d->tokcap);

    if (r == JSMN_ERROR_NOMEM)
        return REIN_ENOMEM;
    if (r > 0)
        return r;
    if (rein__decoder_cut_at_eof(d, r == JSMN_ERROR_PART) ||
        rein__decoder_error_text(d, event, p, len))
        return 0;
    return rein__decoder_bad(d, n, p, len,
                             r == JSMN_ERROR_PART ? "the JSON is cut short" : "not JSON", err);
}

/* A failure's code, never REIN_OK (rein__decoder_bad always fails; this says so where a
 * reader, or the analyzer, cannot see it). */
static inline rein_err jfailed(rein_err rc)
{
    return rc ? rc : REIN_EPARSE;
}

/* Tokenizes a whole body into doc: REIN_OK when it is one JSON object, else the decoder's
 * error (the body is empty, not JSON in jansson's words, or several values). */
static inline rein_err jdoc_body_seen(struct rein_provider_decoder *d, const char *p, size_t len,
                                      struct jdoc *doc, rein_error *err);
static inline rein_err jdoc_body(struct rein_provider_decoder *d, const char *p, size_t len,
                                 struct jdoc *doc, rein_error *err)
{
    doc->js = p; /* empty until tokenized, whatever the caller reads after an error */
    doc->t = NULL;
    doc->n = 0;
    if (jblank(p, len))
        return jfailed(rein__decoder_bad(d, 0, p, len, "the body is empty", err));
    rein__decoder_saw(d, p, len);
    return jdoc_body_seen(d, p, len, doc, err);
}

/* jdoc_body after its first steps: p is not blank and the decoder has counted it. */
static inline rein_err jdoc_body_seen(struct rein_provider_decoder *d, const char *p, size_t len,
                                      struct jdoc *doc, rein_error *err)
{
    int r;

    doc->js = p;
    doc->t = NULL;
    doc->n = 0;
    r = jdoc_parse(doc, p, len, &d->tok, &d->tokcap);
    if (r == JSMN_ERROR_NOMEM)
        return REIN_ENOMEM;
    if (r <= 0 || doc->t[0].type != JSMN_OBJECT || jnext(doc, 0) != doc->n) {
        rein_error jerr;
        rein_error_clear(&jerr);
        json_t *v = rein_json_parse(p, len, 0, &jerr);
        json_decref(v);
        return jfailed(rein__decoder_bad(d, 0, p, len,
                                         v ? "the body must be one JSON object" : jerr.msg, err));
    }
    return REIN_OK;
}

#endif /* REIN_JPULL_H */
