/*
 * The claims list and extraction's outer loop: the text is cut into sentences (at . ! ? and
 * their CJK forms followed by a space or the end, at 。！？, and at line ends; list markers
 * and emphasis are taken off), fenced code blocks are skipped, and each sentence is
 * tokenized, its tool mentions marked, and read by the English or the Chinese grammar.
 *
 * Each sentence is bounded (SENTENCE_MAX bytes, TOKENS_MAX tokens; a longer run is cut), so
 * the work per byte is bounded and extraction is linear in the text. A claim said twice (same
 * kind, same subject) is kept once.
 */
#include "claims_int.h"

#include <stdio.h>
#include <string.h>

#define SENTENCE_MAX 2000
#define TOKENS_MAX   400

static const char *const kind_names[] = {
#define REIN__CLAIM_KIND_NAME(id, name) name,
    REIN_CLAIM_KIND_MAP(REIN__CLAIM_KIND_NAME)
#undef REIN__CLAIM_KIND_NAME
};

static const char *const status_names[] = {
#define REIN__CLAIM_STATUS_NAME(id, name) name,
    REIN_CLAIM_STATUS_MAP(REIN__CLAIM_STATUS_NAME)
#undef REIN__CLAIM_STATUS_NAME
};

const char *rein_claim_kind_name(enum rein_claim_kind k)
{
    return (unsigned)k < REIN_ARRAY_SIZE(kind_names) ? kind_names[k] : "unknown";
}

bool rein_claim_kind_parse(const char *text, enum rein_claim_kind *out)
{
    for (size_t i = 0; text && i < REIN_ARRAY_SIZE(kind_names); i++) {
        if (strcmp(text, kind_names[i]) == 0) {
            *out = (enum rein_claim_kind)i;
            return true;
        }
    }
    return false;
}

const char *rein_claim_status_name(enum rein_claim_status s)
{
    return (unsigned)s < REIN_ARRAY_SIZE(status_names) ? status_names[s] : "unknown";
}

/* ---- the list ---- */

rein_claims *rein_claims_new(void)
{
    return rein_calloc(1, sizeof(struct rein_claims));
}

static void claim_release(struct rein__claim *c)
{
    rein_free(c->text);
    rein_free(c->subject);
    rein_free(c->tool);
    rein_free(c->path);
    rein_free(c->name);
    rein_free(c->evidence);
}

void rein_claims_free(rein_claims *claims)
{
    if (!claims)
        return;
    for (size_t i = 0; i < claims->n; i++)
        claim_release(&claims->v[i]);
    rein_free(claims->v);
    rein_free(claims);
}

size_t rein_claims_count(const rein_claims *claims)
{
    return claims ? claims->n : 0;
}

const struct rein_claim *rein_claims_get(const rein_claims *claims, size_t i)
{
    struct rein__claim *c;

    if (!claims || i >= claims->n)
        return NULL;
    c = &claims->v[i];
    c->pub.text = c->text;
    c->pub.subject = c->subject;
    c->pub.tool = c->tool;
    c->pub.path = c->path;
    c->pub.name = c->name;
    c->pub.evidence = c->evidence ? c->evidence : "";
    return &c->pub;
}

size_t rein_claims_count_status(const rein_claims *claims, enum rein_claim_status s)
{
    size_t n = 0;

    for (size_t i = 0; claims && i < claims->n; i++)
        n += claims->v[i].pub.status == s;
    return n;
}

/* Cuts text to at most max bytes at a UTF-8 boundary. */
static size_t cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    n = max;
    while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return n;
}

static bool same(const char *a, const char *b, size_t bn)
{
    return a && strlen(a) == bn && strncasecmp(a, b, bn) == 0;
}

/* Appends a claim from pieces of text (copied). false when memory is exhausted. */
static bool append(rein_claims *cl, const struct rein__found *f, const char *text, size_t tn,
                   size_t offset)
{
    struct rein__claim *c;

    for (size_t i = 0; i < cl->n; i++) {
        if (cl->v[i].pub.kind == f->kind && same(cl->v[i].subject, f->subject, f->subject_len))
            return true; /* said twice is still one claim */
    }
    if (cl->n >= CLAIMS_MAX)
        return true;
    if (cl->n == cl->cap) {
        size_t cap = cl->cap ? cl->cap * 2 : 8;
        struct rein__claim *v = rein_realloc(cl->v, cap * sizeof(*v));
        if (!v)
            return false;
        cl->v = v;
        cl->cap = cap;
    }
    c = &cl->v[cl->n];
    memset(c, 0, sizeof(*c));
    c->text = rein_strndup(text, cut(text, tn, CLAIM_TEXT_MAX));
    c->subject = rein_strndup(f->subject ? f->subject : "", f->subject ? f->subject_len : 0);
    c->tool = f->tool ? rein_strdup(f->tool) : NULL;
    c->path = f->path ? rein_strndup(f->path, f->path_len) : NULL;
    c->name = f->name ? rein_strndup(f->name, f->name_len) : NULL;
    if (!c->text || !c->subject || (f->tool && !c->tool) || (f->path && !c->path) ||
        (f->name && !c->name)) {
        claim_release(c);
        return false;
    }
    c->pub.kind = f->kind;
    c->pub.line = f->line;
    c->pub.offset = offset;
    c->pub.status = REIN_CLAIM_UNCHECKED;
    cl->n++;
    return true;
}

rein_err rein_claims_add(rein_claims *claims, enum rein_claim_kind kind, const char *text,
                         const char *subject, const char *path, const char *name)
{
    struct rein__found f;
    const char *t = text ? text : "";

    if (!claims || (unsigned)kind >= REIN_ARRAY_SIZE(kind_names))
        return REIN_EINVAL;
    memset(&f, 0, sizeof(f));
    f.kind = kind;
    if (!subject)
        subject = name                                ? name
                  : path                              ? path
                  : kind == REIN_CLAIM_TESTS_PASS     ? "tests"
                  : kind == REIN_CLAIM_BUILD_PASSES   ? "build"
                  : kind == REIN_CLAIM_LINT_CLEAN     ? "lint"
                  : kind == REIN_CLAIM_NO_TYPE_ERRORS ? "types"
                                                      : "";
    f.subject = subject;
    f.subject_len = strlen(subject);
    f.path = path;
    f.path_len = path ? strlen(path) : 0;
    f.name = name;
    f.name_len = name ? strlen(name) : 0;
    return append(claims, &f, t, strlen(t), 0) ? REIN_OK : REIN_ENOMEM;
}

/* ---- extraction ---- */

struct run {
    rein_claims *cl;
    struct rein__sent st;
    const char *text;
};

static bool on_found(void *ud, const struct rein__sent *st, const struct rein__found *f)
{
    struct run *r = ud;

    return append(r->cl, f, st->s, st->n, st->offset);
}

/* Length of a sentence end at s[i] (0 if none); *q when it is a question mark. */
static size_t terminator(const char *s, size_t n, size_t i, bool *q)
{
    static const char *const wide[] = {"。", "！", "？", NULL};
    char c = s[i];

    *q = false;
    if (c == '\n')
        return 1;
    if (c == '.' || c == '!' || c == '?') {
        size_t k = i + 1;
        /* "result.txt" and "3.5" go on; a quote or bracket may close the sentence first */
        while (k < n && (s[k] == '"' || s[k] == '\'' || s[k] == ')' || s[k] == '*' || s[k] == '`'))
            k++;
        if (k < n && s[k] != ' ' && s[k] != '\t' && s[k] != '\n' && s[k] != '\r' &&
            (unsigned char)s[k] < 0x80)
            return 0;
        *q = c == '?';
        return k - i;
    }
    for (size_t k = 0; wide[k]; k++) {
        if (i + 3 <= n && memcmp(s + i, wide[k], 3) == 0) {
            *q = k == 2;
            return 3;
        }
    }
    return 0;
}

/* Takes list markers, quote markers and emphasis off the start; blanks off the end. */
static void trim(const char **s, size_t *n)
{
    for (;;) {
        const char *p = *s;
        size_t k = *n;
        while (k && strchr(" \t\r>#*-+", p[0])) {
            p++;
            k--;
        }
        /* "1. " or "2) " */
        if (k > 2 && p[0] >= '0' && p[0] <= '9') {
            size_t d = 0;
            while (d < k && d < 3 && p[d] >= '0' && p[d] <= '9')
                d++;
            if (d < k - 1 && (p[d] == '.' || p[d] == ')') && p[d + 1] == ' ') {
                p += d + 2;
                k -= d + 2;
            }
        }
        if (k >= 3 && memcmp(p, "•", 3) == 0) {
            p += 3;
            k -= 3;
        }
        if (p == *s)
            break;
        *s = p;
        *n = k;
    }
    while (*n && strchr(" \t\r*", (*s)[*n - 1]))
        (*n)--;
}

static bool valid_utf8(const char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t len = rein__claims_utf8_len(s, n, i);
        if (c == 0 || (c >= 0x80 && len == 1))
            return false;
        if ((len == 2 && c < 0xc2) || (len == 3 && c == 0xe0 && (unsigned char)s[i + 1] < 0xa0) ||
            (len == 3 && c == 0xed && (unsigned char)s[i + 1] > 0x9f) ||
            (len == 4 && (c > 0xf4 || (c == 0xf0 && (unsigned char)s[i + 1] < 0x90) ||
                          (c == 0xf4 && (unsigned char)s[i + 1] > 0x8f))))
            return false;
        i += len;
    }
    return true;
}

static bool sentence(struct run *r, const char *s, size_t n, size_t offset, bool q)
{
    struct rein__sent *st = &r->st;

    trim(&s, &n);
    /* the full stop is not part of what was said */
    while (n && (s[n - 1] == '.' || s[n - 1] == '!' || s[n - 1] == ' '))
        n--;
    if (n >= 3 && (memcmp(s + n - 3, "。", 3) == 0 || memcmp(s + n - 3, "！", 3) == 0))
        n -= 3;
    if (n < 3 || !valid_utf8(s, n))
        return true; /* too short to claim anything, or not text */
    st->s = s;
    st->n = n;
    st->offset = offset + (size_t)(s - (r->text + offset));
    st->question = q;
    if (!rein__claims_tokenize(st, TOKENS_MAX))
        return false;
    if (st->nt == 0)
        return true;
    st->t[0].flags |= TF_FIRST;
    rein__claims_vocab_mark(st->vocab, st);
    return st->cjk ? rein__claims_chinese(st, on_found, r) : rein__claims_english(st, on_found, r);
}

/* True when the line at s[i..] opens or closes a fenced code block. */
static bool fence_at(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return (i + 3 <= n && memcmp(s + i, "```", 3) == 0) ||
           (i + 3 <= n && memcmp(s + i, "~~~", 3) == 0);
}

static bool each_sentence(struct run *r, const char *text, size_t len)
{
    size_t start = 0;
    bool fenced = false, line_start = true;

    for (size_t i = 0; i <= len;) {
        bool q = false;
        size_t t;
        if (i < len && line_start && fence_at(text, len, i)) {
            if (!fenced && i > start && !sentence(r, text + start, i - start, start, false))
                return false;
            fenced = !fenced;
            while (i < len && text[i] != '\n')
                i++;
            start = i;
            continue;
        }
        line_start = i < len && text[i] == '\n';
        if (i == len) {
            t = 1;
        } else if (fenced) {
            i++;
            start = i;
            continue;
        } else {
            t = terminator(text, len, i, &q);
            /* a run without an end is cut, so no sentence is unbounded */
            if (!t && i - start >= SENTENCE_MAX) {
                t = 0;
                if (!sentence(r, text + start, i - start, start, false))
                    return false;
                start = i;
            }
        }
        if (!t) {
            i += rein__claims_utf8_len(text, len, i);
            continue;
        }
        {
            size_t end = i + t <= len ? i + t : len;
            /* the terminator stays with the sentence: "?" is read, "." is trimmed */
            if (!sentence(r, text + start, end - start, start, q))
                return false;
        }
        i += t;
        start = i;
    }
    return true;
}

/* Tokens a sentence of the text can have: one per byte at most (+1 spare), and TOKENS_MAX. */
static size_t tokens_room(size_t len)
{
    return len < TOKENS_MAX ? len + 1 : TOKENS_MAX;
}

rein_claims *rein_claims_extract(const char *text, size_t len, const rein_claims_vocab *vocab,
                                 rein_error *err)
{
    struct run r;

    memset(&r, 0, sizeof(r));
    r.cl = rein_claims_new();
    /* A token takes at least a byte and a sentence is no longer than the text, so a short
     * answer (the usual one) needs room for its own length only: the whole bound was 16 KB
     * allocated and zeroed for every answer (issue 25). */
    r.st.t = rein_calloc(tokens_room(len), sizeof(*r.st.t));
    r.st.low = rein_malloc((len < SENTENCE_MAX ? len : SENTENCE_MAX) + 8);
    r.st.vocab = rein__claims_vocab_view(vocab);
    r.text = text ? text : "";
    if (!r.cl || !r.st.t || !r.st.low)
        goto out_oom;
    if (!each_sentence(&r, r.text, text ? len : 0))
        goto out_oom;
    rein_free(r.st.t);
    rein_free(r.st.low);
    return r.cl;

out_oom:
    rein_free(r.st.t);
    rein_free(r.st.low);
    rein_claims_free(r.cl);
    rein_error_set(err, REIN_ENOMEM, "out of memory extracting claims");
    return NULL;
}

/* ---- JSON ---- */

static json_t *jstr(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *rein_claims_json(const rein_claims *claims, bool refuted_only)
{
    json_t *arr = json_array();

    for (size_t i = 0; arr && claims && i < claims->n; i++) {
        const struct rein_claim *c = rein_claims_get(claims, i);
        json_t *o;
        if (refuted_only && c->status != REIN_CLAIM_REFUTED)
            continue;
        o = json_pack("{s:s, s:o, s:o, s:s, s:o, s:f}", "kind", rein_claim_kind_name(c->kind),
                      "text", jstr(c->text), "subject", jstr(c->subject), "status",
                      rein_claim_status_name(c->status), "evidence", jstr(c->evidence),
                      "confidence", c->confidence);
        if (!o || json_array_append_new(arr, o))
            goto out_fail;
        if ((c->tool && json_object_set_new(o, "tool", json_string(c->tool))) ||
            (c->path && json_object_set_new(o, "path", json_string(c->path))) ||
            (c->name && json_object_set_new(o, "name", json_string(c->name))) ||
            (c->line && json_object_set_new(o, "line", json_integer(c->line))))
            goto out_fail;
    }
    return arr;

out_fail:
    json_decref(arr);
    return NULL;
}
