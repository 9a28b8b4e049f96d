/*
 * rein_doc: a JSON document as one array of nodes (include/rein/doc.h; decision 0056).
 *
 * The parser reads with json_fast.c's pieces (the string scan, the unescaping, the UTF-8 check,
 * the numbers), so it accepts the same texts rein's tree parser accepts and declines the same
 * others; a declined text goes to rein_json_parse, whose value or error is then the answer.
 * Duplicate keys are declined too (jansson keeps the last, or refuses them): an object's keys
 * are compared only when a cheap signature of two of them collides, or when it has many.
 */
#include "core/internal.h"

#include <rein/doc.h>

#include <stdlib.h>
#include <string.h>

#define DOC_MAX_DEPTH 256
#define DOC_KEY_MAX   1024
/* Objects with more members than this are checked for duplicates by sorting their keys. */
#define DOC_PAIRWISE 16
/* A text of up to this many bytes has its first nodes in the document's own allocation: a
 * tool call's arguments are mostly a few hundred bytes, parsed once each, and a second
 * allocation and free was about a fifth of parsing them. */
#define DOC_INLINE_TEXT 2048

struct rein_doc {
    struct rein_doc_node *nodes; /* NULL when tree holds the document; may be inl */
    char *strs;                  /* unescaped strings, at most the text's length; may be NULL */
    json_t *tree;                /* made on demand (atomically), or jansson's value */
    int type;
    struct rein_doc_node inl[]; /* the first nodes of a short text */
};

struct dparse {
    const char *p, *end, *text;
    struct rein_doc_node *t, *inl; /* inl: the document's own room (not to be freed), or NULL */
    size_t n, cap;
    char *strs;
    size_t nstrs;
    int depth;
    bool oom;
};

static void ws_run(struct dparse *d)
{
    while (d->p < d->end && (*d->p == ' ' || *d->p == '\t' || *d->p == '\n' || *d->p == '\r'))
        d->p++;
}

/* Skips blanks: every one is at most ' ', so most calls (no blank there) take one test. */
static inline void ws(struct dparse *d)
{
    if (d->p < d->end && (unsigned char)*d->p <= ' ')
        ws_run(d);
}

/* push's slow path: twice the room (moved out of the document's own room the first time). */
__attribute__((noinline)) static bool grow(struct dparse *d)
{
    size_t cap = d->cap * 2;
    struct rein_doc_node *t =
        d->t == d->inl ? rein_malloc(cap * sizeof(*t)) : rein_realloc(d->t, cap * sizeof(*t));

    if (!t) {
        d->oom = true;
        return false;
    }
    if (d->t == d->inl)
        memcpy(t, d->t, d->n * sizeof(*t));
    d->t = t;
    d->cap = cap;
    return true;
}

/* A new node at the end (index returned), or SIZE_MAX when memory is exhausted. */
static inline size_t push(struct dparse *d, uint32_t type)
{
    if (d->n == d->cap && !grow(d))
        return SIZE_MAX;
    d->t[d->n].type = type;
    d->t[d->n].n = 0;
    return d->n++;
}

/* A string or a key at d->p (its opening quote); false when declined. */
static bool string(struct dparse *d, bool key)
{
    const char *start = d->p + 1, *c;
    bool escaped, high;
    size_t len, at;

    c = rein__jf_scan_string(start, d->end, &escaped, &high);
    if (!c)
        return false;
    d->p = c + 1;
    len = (size_t)(c - start);
    if (len > UINT32_MAX || (key && len >= DOC_KEY_MAX))
        return false;
    if (escaped) {
        /* Unescaped text is never longer than its escaped form: one buffer the size of the
         * whole text holds every string, and only the pages written are ever touched. */
        long n;
        if (!d->strs && !(d->strs = rein_malloc((size_t)(d->end - d->text)))) {
            d->oom = true;
            return false;
        }
        n = rein__jf_unescape(start, len, d->strs + d->nstrs);
        /* jansson refuses a NUL in a key (only \u0000 makes one here). */
        if (n < 0 || (key && memchr(d->strs + d->nstrs, '\0', (size_t)n)))
            return false;
        start = d->strs + d->nstrs;
        len = (size_t)n;
        d->nstrs += len;
    }
    if (high && !rein__jf_utf8_ok(start, len))
        return false;
    at = push(d, JSON_STRING);
    if (at == SIZE_MAX)
        return false;
    d->t[at].n = (uint32_t)len;
    d->t[at].u.str = start;
    return true;
}

static bool same_key(const struct rein_doc_node *a, const struct rein_doc_node *b)
{
    return a->n == b->n && memcmp(a->u.str, b->u.str, a->n) == 0;
}

/* A key in the sort of a large object's keys. */
struct kref {
    const struct rein_doc_node *k;
};

static int key_order(const void *x, const void *y)
{
    const struct rein_doc_node *a = ((const struct kref *)x)->k;
    const struct rein_doc_node *b = ((const struct kref *)y)->k;

    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    return memcmp(a->u.str, b->u.str, a->n);
}

/* True when the object at node obj has two equal keys (or memory ran out: d->oom). */
static bool has_duplicates(struct dparse *d, const struct rein_doc_node *obj)
{
    const struct rein_doc_node *k = obj + 1;
    struct kref *keys;
    bool dup = false;

    if (obj->n <= DOC_PAIRWISE) {
        const struct rein_doc_node *seen[DOC_PAIRWISE];
        for (uint32_t i = 0; i < obj->n; i++, k = rein_doc_next(k + 1)) {
            for (uint32_t j = 0; j < i; j++) {
                if (same_key(seen[j], k))
                    return true;
            }
            seen[i] = k;
        }
        return false;
    }
    keys = rein_malloc(obj->n * sizeof(*keys));
    if (!keys) {
        d->oom = true;
        return true;
    }
    for (uint32_t i = 0; i < obj->n; i++, k = rein_doc_next(k + 1))
        keys[i].k = k;
    qsort(keys, obj->n, sizeof(*keys), key_order);
    for (uint32_t i = 1; i < obj->n && !dup; i++)
        dup = same_key(keys[i - 1].k, keys[i].k);
    rein_free(keys);
    return dup;
}

static bool value(struct dparse *d);

static bool container(struct dparse *d, bool object)
{
    size_t at = push(d, object ? JSON_OBJECT : JSON_ARRAY);
    uint64_t sigs = 0;
    bool clash = false;
    uint32_t count = 0;

    if (at == SIZE_MAX || ++d->depth > DOC_MAX_DEPTH)
        return false;
    d->p++;
    ws(d);
    if (d->p < d->end && *d->p == (object ? '}' : ']'))
        goto close;
    for (;;) {
        if (count == UINT32_MAX)
            return false;
        if (object) {
            if (d->p >= d->end || *d->p != '"' || !string(d, true))
                return false;
            /* A signature of the key (its length and last byte): equal keys collide, so
             * the keys are compared only when two signatures do. */
            const struct rein_doc_node *k = &d->t[d->n - 1];
            unsigned sig = (k->n * 7u + (k->n ? (unsigned char)k->u.str[k->n - 1] : 0u)) & 63u;
            clash |= (sigs >> sig) & 1u;
            sigs |= UINT64_C(1) << sig;
            ws(d);
            if (d->p >= d->end || *d->p != ':')
                return false;
            d->p++;
            ws(d);
        }
        if (!value(d))
            return false;
        count++;
        ws(d);
        if (d->p < d->end && *d->p == ',') {
            d->p++;
            ws(d);
            continue;
        }
        if (d->p < d->end && *d->p == (object ? '}' : ']'))
            break;
        return false;
    }
close:
    d->p++;
    d->depth--;
    d->t[at].n = count;
    d->t[at].u.skip = d->n - at;
    return !(object && (clash || count > DOC_PAIRWISE) && has_duplicates(d, &d->t[at]));
}

static bool literal(struct dparse *d, const char *word, size_t n, uint32_t type)
{
    if ((size_t)(d->end - d->p) < n || memcmp(d->p, word, n) != 0)
        return false;
    d->p += n;
    return push(d, type) != SIZE_MAX;
}

static bool value(struct dparse *d)
{
    json_int_t i;
    double r;
    size_t at;

    if (d->p >= d->end)
        return false;
    switch (*d->p) {
    case '{':
        return container(d, true);
    case '[':
        return container(d, false);
    case '"':
        return string(d, false);
    case 't':
        return literal(d, "true", 4, JSON_TRUE);
    case 'f':
        return literal(d, "false", 5, JSON_FALSE);
    case 'n':
        return literal(d, "null", 4, JSON_NULL);
    default:
        switch (rein__jf_number(&d->p, d->end, &i, &r)) {
        case 1:
            at = push(d, JSON_INTEGER);
            if (at != SIZE_MAX)
                d->t[at].u.i = i;
            return at != SIZE_MAX;
        case 2:
            at = push(d, JSON_REAL);
            if (at != SIZE_MAX)
                d->t[at].u.d = r;
            return at != SIZE_MAX;
        default:
            return false;
        }
    }
}

/* A guess at the nodes of len bytes of text that fits small arguments at once and large ones
 * after a few doublings. */
static size_t first_cap(size_t len)
{
    return len / 8 + 8;
}

/* The nodes of text, or false (declined, or d->oom); inl, when not NULL, is room for
 * first_cap(len) nodes that is not to be freed. */
static bool parse_nodes(struct dparse *d, const char *text, size_t len, struct rein_doc_node *inl)
{
    *d = (struct dparse){.p = text, .end = text + len, .text = text, .inl = inl};
    d->cap = first_cap(len);
    d->t = inl ? inl : rein_malloc(d->cap * sizeof(*d->t));
    if (!d->t) {
        d->oom = true;
        return false;
    }
    ws(d);
    if (!value(d))
        return false;
    ws(d);
    return d->p == d->end;
}

rein_doc *rein_doc_parse(const char *text, size_t len, rein_error *err)
{
    size_t room = len <= DOC_INLINE_TEXT ? first_cap(len) : 0;
    rein_doc *doc = rein_malloc(sizeof(*doc) + room * sizeof(struct rein_doc_node));
    struct dparse d;

    if (!doc) {
        rein_error_set(err, REIN_ENOMEM, "out of memory parsing a document");
        return NULL;
    }
    *doc = (struct rein_doc){0};
    if (parse_nodes(&d, text, len, room ? doc->inl : NULL)) {
        doc->nodes = d.t;
        doc->strs = d.strs;
        doc->type = (int)d.t[0].type;
        return doc;
    }
    if (d.t != doc->inl)
        rein_free(d.t);
    rein_free(d.strs);
    if (d.oom) {
        rein_free(doc);
        rein_error_set(err, REIN_ENOMEM, "out of memory parsing a document");
        return NULL;
    }
    /* Declined: jansson decides, and its tree is the document. */
    doc->tree = rein_json_parse(text, len, 0, err);
    if (!doc->tree) {
        rein_free(doc);
        return NULL;
    }
    doc->type = json_typeof(doc->tree);
    return doc;
}

void rein_doc_free(rein_doc *doc)
{
    if (!doc)
        return;
    json_decref(doc->tree);
    if (doc->nodes != doc->inl)
        rein_free(doc->nodes);
    rein_free(doc->strs);
    rein_free(doc);
}

const struct rein_doc_node *rein_doc_root(const rein_doc *doc)
{
    return doc->nodes;
}

int rein_doc_type(const rein_doc *doc)
{
    return doc->type;
}

/* The value at *n as a new jansson value; *n moves past it. NULL when memory is exhausted. */
static json_t *build(const struct rein_doc_node **n)
{
    const struct rein_doc_node *v = (*n)++;
    json_t *c;

    switch (v->type) {
    case JSON_OBJECT:
    case JSON_ARRAY:
        c = v->type == JSON_OBJECT ? json_object() : json_array();
        for (uint32_t i = 0; c && i < v->n; i++) {
            const struct rein_doc_node *k = v->type == JSON_OBJECT ? (*n)++ : NULL;
            json_t *m = build(n);
            /* Keys were checked as jansson's loader checks them (UTF-8, no NUL). */
            if (!m || (k ? json_object_setn_new_nocheck(c, k->u.str, k->n, m)
                         : json_array_append_new(c, m))) {
                json_decref(c);
                c = NULL;
            }
        }
        *n = v + v->u.skip;
        return c;
    case JSON_STRING:
        return json_stringn_nocheck(v->u.str, v->n);
    case JSON_INTEGER:
        return json_integer(v->u.i);
    case JSON_REAL:
        return json_real(v->u.d);
    case JSON_TRUE:
        return json_true();
    case JSON_FALSE:
        return json_false();
    default:
        return json_null();
    }
}

json_t *rein_doc_node_tree(const struct rein_doc_node *n)
{
    return build(&n);
}

const json_t *rein_doc_tree(const rein_doc *doc)
{
    json_t *t = __atomic_load_n(&((rein_doc *)doc)->tree, __ATOMIC_ACQUIRE), *none = NULL;

    if (t || !doc->nodes)
        return t;
    /* Two threads may build at once: the first to store its tree wins, the other's goes. */
    t = rein_doc_node_tree(doc->nodes);
    if (t && !__atomic_compare_exchange_n(&((rein_doc *)doc)->tree, &none, t, false,
                                          __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        json_decref(t);
        t = none;
    }
    return t;
}
