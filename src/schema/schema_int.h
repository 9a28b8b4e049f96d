/*
 * Internals of the JSON Schema validator (include/rein/schema.h), shared by the files of
 * src/schema/: the document index (resources and anchors by URI), the compiled node graph the
 * validator walks, URI and regex helpers, format checkers and the error list.
 *
 * Pipeline: documents are scanned into an index (every schema resource by its absolute URI,
 * every $anchor and $dynamicAnchor), the root schema is compiled into nodes (one per schema
 * object, keyword values checked and converted, patterns compiled, $refs resolved to node
 * pointers), and validation walks the nodes over a jansson instance without allocating.
 */
#ifndef REIN_SCHEMA_INT_H
#define REIN_SCHEMA_INT_H

#include <rein/arena.h>
#include <rein/schema.h>

#include "core/internal.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <math.h>

/* Deepest nesting of schemas while compiling, and of schema applications while validating. */
#define SCHEMA_MAX_DEPTH 512
/* Match data kept by a compiled schema for validations without a result. */
#define SCHEMA_MD_SLOTS 4
/* Most errors one validation records; the rest are dropped (the count stops growing). */
#define SCHEMA_MAX_ERRORS 200

/* ---- string and pointer maps (map.c) ------------------------------------------------------ */

/*
 * An open-addressing hash map from a string (borrowed, must outlive the map) or a pointer to a
 * value. Invariant: n <= cap / 2 once anything is stored; cap is 0 or a power of two.
 */
struct smap_ent {
    const void *key;
    size_t hash;
    void *val;
};
struct smap {
    struct smap_ent *e;
    size_t cap, n;
    bool ptr_keys;
};
void rein__smap_init(struct smap *m, bool ptr_keys);
void rein__smap_release(struct smap *m);
/* Stores val under key (replacing). REIN_ENOMEM. */
rein_err rein__smap_put(struct smap *m, const void *key, void *val) REIN_WUR;
void *rein__smap_get(const struct smap *m, const void *key);
/* FNV-1a over len bytes. */
size_t rein__schema_hash(const char *s, size_t len);
/*
 * True when the len bytes at a and b are equal (a short inline compare for keys). Lengths of
 * 4 to 16 take two overlapping loads from each side instead of a byte loop; nothing outside
 * the len bytes is read.
 */
static inline bool rein__bytes_eq(const char *a, const char *b, size_t len)
{
    size_t i = 0;

    if (len >= 8 && len <= 16) {
        uint64_t x0, y0, x1, y1;
        __builtin_memcpy(&x0, a, 8);
        __builtin_memcpy(&y0, b, 8);
        __builtin_memcpy(&x1, a + len - 8, 8);
        __builtin_memcpy(&y1, b + len - 8, 8);
        return ((x0 ^ y0) | (x1 ^ y1)) == 0;
    }
    if (len >= 4 && len < 8) {
        uint32_t x0, y0, x1, y1;
        __builtin_memcpy(&x0, a, 4);
        __builtin_memcpy(&y0, b, 4);
        __builtin_memcpy(&x1, a + len - 4, 4);
        __builtin_memcpy(&y1, b + len - 4, 4);
        return ((x0 ^ y0) | (x1 ^ y1)) == 0;
    }
    for (; i + 8 <= len; i += 8) {
        uint64_t x, y;
        __builtin_memcpy(&x, a + i, 8);
        __builtin_memcpy(&y, b + i, 8);
        if (x != y)
            return false;
    }
    for (; i < len; i++) {
        if (a[i] != b[i])
            return false;
    }
    return true;
}

/* The first (up to) 8 bytes of s as a zero-padded word. */
static inline uint64_t rein__head8(const char *s, size_t len)
{
    uint64_t w = 0;

    if (len >= 8) {
        __builtin_memcpy(&w, s, 8);
        return w;
    }
    for (size_t i = 0; i < len; i++)
        w |= (uint64_t)(unsigned char)s[i] << (8 * i);
    return w;
}

/* ---- an object's members (members.c) ----------------------------------------------------- */

/* Offsets of a member's fields from the iterator jansson hands out; direct when known. */
struct rein__mlayout {
    bool direct;
    size_t key, key_len, value, next; /* from a member's iterator */
    size_t end;                       /* of the list head, from the object */
};
extern struct rein__mlayout rein__mlayout;
/* Finds the layout (once per process; rein_schema_compile calls it before any validation). */
void rein__members_init(void);

/* The members of an object, one at a time. */
struct rein__members {
    json_t *obj;
    void *it;
    const char *end; /* the object's list head (direct layout) */
};

static inline void *rein__ptr_at(const void *rec, size_t off)
{
    void *p;

    __builtin_memcpy(&p, (const char *)rec + off, sizeof(p));
    return p;
}

static inline void rein__members_start(struct rein__members *m, json_t *obj)
{
    m->obj = obj;
    m->end = NULL;
    if (rein__mlayout.direct) {
        m->end = (const char *)obj + rein__mlayout.end;
        m->it = rein__ptr_at(m->end, rein__mlayout.next);
        if (m->it == (const void *)m->end)
            m->it = NULL;
        return;
    }
    m->it = json_object_iter(obj);
}

/* The next member's key (borrowed), key length and value (borrowed); false after the last. */
static inline bool rein__members_next(struct rein__members *m, const char **key, size_t *len,
                                      json_t **val)
{
    void *it = m->it;

    if (!it)
        return false;
    if (rein__mlayout.direct) {
        *key = (const char *)it + rein__mlayout.key;
        __builtin_memcpy(len, (const char *)it + rein__mlayout.key_len, sizeof(*len));
        *val = rein__ptr_at(it, rein__mlayout.value);
        m->it = rein__ptr_at(it, rein__mlayout.next);
        if (m->it == (const void *)m->end)
            m->it = NULL;
        return true;
    }
    *key = json_object_iter_key(it);
    *len = json_object_iter_key_len(it);
    *val = json_object_iter_value(it);
    m->it = json_object_iter_next(m->obj, it);
    return true;
}

/* ---- URIs (uri.c) ------------------------------------------------------------------------- */

/* New string: ref resolved against base (RFC 3986 section 5.2), or NULL when out of memory. */
char *rein__uri_resolve(const char *base, const char *ref);
/* Length of uri without its fragment ("#..."). */
size_t rein__uri_base_len(const char *uri);
/* True when uri has a scheme (is absolute). */
bool rein__uri_is_absolute(const char *uri);
/* Percent-decodes len bytes of s into out (at most out_size - 1 bytes, NUL-terminated).
 * Returns false when the text is malformed or too long. */
bool rein__uri_pct_decode(const char *s, size_t len, char *out, size_t out_size);

/* ---- dialects and the document index (index.c) -------------------------------------------- */

enum sversion {
    SV_DRAFT7 = 1, /* draft-07 (and draft-06, which it extends) */
    SV_2019 = 2,   /* 2019-09: items/additionalItems arrays, $recursiveRef */
    SV_2020 = 3,   /* 2020-12 */
};
enum svocab {
    VOC_CORE = 1u << 0,
    VOC_APPLICATOR = 1u << 1,
    VOC_UNEVALUATED = 1u << 2,
    VOC_VALIDATION = 1u << 3,
    VOC_METADATA = 1u << 4,
    VOC_FORMAT_ANNOTATION = 1u << 5,
    VOC_FORMAT_ASSERTION = 1u << 6,
    VOC_CONTENT = 1u << 7,
    VOC_DEFAULT = 0xbf, /* everything but format-assertion */
};
struct sdialect {
    uint8_t version; /* enum sversion */
    uint8_t vocab;   /* enum svocab bits */
};

struct sanchor {
    struct sanchor *next;
    const char *name;
    json_t *json;     /* borrowed from the indexed document */
    const char *path; /* JSON Pointer of json in its document */
    bool dynamic;     /* declared with $dynamicAnchor */
};

/* A schema resource: a document root or a subschema with its own $id. */
struct sres {
    const char *uri;  /* absolute, without fragment */
    json_t *json;     /* borrowed from the indexed document */
    const char *path; /* JSON Pointer of json in its document ("" at the root) */
    struct sdialect dialect;
    bool explicit_dialect; /* the dialect came from a $schema, not from the default */
    json_t *doc;           /* the document the resource is in */
    const char *doc_uri;   /* the URI the document was indexed under */
    struct sanchor *anchors;
};

/*
 * Resources and anchors of a set of documents. Strings and records live in the arena; the
 * documents are referenced (json_incref) until the index is released.
 */
struct sindex {
    rein_arena *arena;
    struct smap by_uri;  /* uri -> struct sres */
    struct smap by_json; /* json_t * of a resource root -> struct sres */
    json_t **docs;
    size_t ndocs, docs_cap;
};
rein_err rein__index_init(struct sindex *ix) REIN_WUR;
void rein__index_release(struct sindex *ix);
/*
 * Scans doc (referenced by the index) as a schema document retrieved from uri (may be NULL
 * for "no base") with the given default dialect; reg (may be NULL) is consulted for custom
 * metaschemas named by $schema. REIN_ESCHEMA (bad $id, unknown $schema), REIN_EEXIST (a URI
 * already indexed), REIN_EDEPTH, REIN_ENOMEM.
 */
rein_err rein__index_add(struct sindex *ix, const char *uri, json_t *doc, struct sdialect dflt,
                         const struct sindex *reg, rein_error *err) REIN_WUR;
struct sres *rein__index_find(const struct sindex *ix, const char *uri);
struct sres *rein__index_find_json(const struct sindex *ix, const json_t *json);
/* The dialect a $schema URI names (known drafts only); false when unknown. */
bool rein__dialect_known(const char *uri, struct sdialect *out);
/* Embedded metaschema text for a URI (draft-07, 2020-12 and its vocabularies), or NULL. */
const char *rein__metaschema_text(const char *uri);

struct rein_schema_registry {
    struct sindex ix;
};

/* ---- compiled schemas --------------------------------------------------------------------- */

enum stype {
    ST_NULL = 1u << 0,
    ST_BOOL = 1u << 1,
    ST_OBJECT = 1u << 2,
    ST_ARRAY = 1u << 3,
    ST_STRING = 1u << 4,
    ST_NUMBER = 1u << 5,
    ST_INTEGER = 1u << 6,
};

/* Which groups of keywords a node has, so the validator skips what cannot apply. */
enum skw {
    KW_TYPE = 1u << 0,
    KW_CONST = 1u << 1,
    KW_ENUM = 1u << 2,
    KW_NUMERIC = 1u << 3, /* any of minimum, maximum, exclusive*, multipleOf */
    KW_STRING = 1u << 4,  /* minLength, maxLength, pattern, format, content* */
    KW_ARRAY = 1u << 5,   /* items, prefixItems, contains, min/maxItems, uniqueItems, ... */
    KW_OBJECT = 1u << 6,  /* properties, required, additionalProperties, ... */
    KW_REF = 1u << 7,
    KW_DYNREF = 1u << 8,
    KW_COMBINE = 1u << 9, /* allOf, anyOf, oneOf, not, if/then/else */
    KW_UNEVAL_PROPS = 1u << 10,
    KW_UNEVAL_ITEMS = 1u << 11,
    KW_FORMAT = 1u << 12,
};

enum snodekind {
    SN_SCHEMA = 0,
    SN_TRUE = 1,
    SN_FALSE = 2,
};

enum sformat {
    SF_NONE = 0,
    SF_DATE_TIME,
    SF_DATE,
    SF_TIME,
    SF_DURATION,
    SF_EMAIL,
    SF_IDN_EMAIL,
    SF_HOSTNAME,
    SF_IDN_HOSTNAME,
    SF_IPV4,
    SF_IPV6,
    SF_URI,
    SF_URI_REFERENCE,
    SF_IRI,
    SF_IRI_REFERENCE,
    SF_URI_TEMPLATE,
    SF_UUID,
    SF_REGEX,
    SF_JSON_POINTER,
    SF_RELATIVE_JSON_POINTER,
    SF_UNKNOWN,
};

struct snum {
    bool is_int;
    long long i;
    double d; /* also set for integers */
};

struct sregex {
    pcre2_code *code;
    const char *source; /* the ECMA-262 pattern as written */
};

struct snode;

struct sprop {
    const char *name;
    size_t len;
    size_t hash;
    uint64_t head;        /* the first (up to) 8 bytes of name, zero-padded, for quick comparison */
    struct snode *schema; /* NULL when only named by "required" */
    int required_bit;     /* index into the required bitmap, or -1 */
    struct sdepreq *depreq; /* dependentRequired entry for this name, or NULL */
    struct snode *depschema;
};

struct sname {
    const char *name;
    size_t len;
};

struct sdepreq {
    struct sname *names;
    size_t n;
    const char *kw; /* "dependentRequired" or "dependencies" */
};

struct spat {
    struct sregex re;
    struct snode *schema;
};

struct sdynanchor {
    const char *name;
    struct snode *node;
};

/* A resource as compiled into one schema: where dynamic anchors resolve to. */
struct cres {
    struct sres *res;
    struct sdynanchor *dyn;
    size_t ndyn;
};

/*
 * One compiled schema object (or boolean schema). Fields are meaningful only when the keyword
 * group's bit is set in has. Sub-schemas are shared: a $ref is a pointer to another node, so
 * the graph may have cycles (the validator guards against looping without progress).
 */
struct snode {
    uint8_t kind;  /* enum snodekind */
    uint8_t mark;  /* compile-time only: cycle search state */
    uint8_t types; /* enum stype bits of "type" */
    uint8_t version;
    uint8_t format; /* enum sformat */
    bool format_assert;
    bool unique_items;
    bool items_is_additional; /* draft-07/2019-09 "additionalItems" stored in items */
    bool content_json;        /* draft-07 contentMediaType application/json (assertion) */
    bool content_base64;      /* draft-07 contentEncoding base64 (assertion) */
    uint32_t has;             /* enum skw bits */
    const char *path;         /* JSON Pointer of this schema in its document */
    size_t path_len;
    struct cres *res;

    /* numeric */
    const struct snum *minimum, *maximum, *xminimum, *xmaximum, *multiple_of;
    /* string */
    size_t min_length, max_length; /* max SIZE_MAX when absent */
    struct sregex *pattern;
    const char *format_name;
    /* array */
    size_t min_items, max_items, min_contains, max_contains;
    struct snode **prefix;
    size_t nprefix;
    struct snode *items; /* items after the prefix */
    struct snode *contains;
    struct snode *uneval_items;
    /* object */
    size_t min_props, max_props;
    struct sprop *props; /* properties, then names only in required/dependent* */
    size_t nprops;       /* entries in props */
    size_t nprops_schema;
    size_t *prop_table; /* open addressing: index + 1 into props, 0 empty */
    size_t prop_mask;
    size_t nrequired;
    struct sprop **required; /* in "required" order */
    bool has_dependents;
    struct spat *pats;
    size_t npats;
    struct snode *additional;
    struct snode *property_names;
    struct snode *uneval_props;
    /* any type */
    json_t *const_value;     /* borrowed from the schema document */
    json_t *enum_value;      /* borrowed array */
    struct sprop *enum_strs; /* when every enum value is a string: name, len, head */
    size_t nenum_strs;
    struct snode **all_of, **any_of, **one_of;
    size_t nall_of, nany_of, none_of;
    struct snode *not_schema, *if_schema, *then_schema, *else_schema;
    struct snode *ref;
    struct snode *dynref;      /* static target of $dynamicRef */
    const char *dynref_anchor; /* non-NULL when the target is a dynamic anchor */
    json_t *default_value;     /* borrowed */
};

/* ---- the verdict program (verdict.c) ----------------------------------------------------- */

/*
 * A second compiled form of a schema for deciding valid/invalid only: the nodes reachable
 * from the root through properties, additionalProperties and items, flattened into one array
 * with their property names beside them. It holds the keywords tool schemas are made of
 * (type, enum of strings, properties, required, additionalProperties, items, min/max
 * properties and items); any other node is a VK_GENERAL entry that hands its subtree to the
 * node walker (validate.c), so the two can never disagree on a keyword only one of them knows.
 */
enum vkind {
    VK_TRUE = 0, /* nothing to check beyond jtypes */
    VK_FALSE,
    VK_ENUM,    /* an enum of strings */
    VK_OBJECT,  /* properties, required, additionalProperties, min/maxProperties */
    VK_ARRAY,   /* items, min/maxItems */
    VK_GENERAL, /* the node walker decides */
};
#define VNONE UINT32_MAX

struct vprop {
    const char *name; /* a copy in the schema's arena */
    uint32_t len;
    uint32_t sub; /* program entry of the property's schema, VNONE when only "required" */
    size_t hash;  /* rein__schema_hash of name (for objects with many properties) */
    bool required;
    /* When the property's schema is a type alone: a bit per jansson type that passes it
     * without a look at its entry (a real for "integer" is left to the entry); else 0. */
    uint8_t plain;
};

struct vop {
    uint8_t kind;   /* enum vkind */
    uint8_t jtypes; /* bit 1 << json_type for every instance type "type" accepts (0xff: any) */
    bool integral;  /* "integer" without "number": a real must have no fraction */
    uint32_t n;     /* VK_OBJECT: entries of props; VK_ENUM: entries of enums */
    uint32_t nrequired;
    uint32_t sub; /* VK_OBJECT: additionalProperties; VK_ARRAY: items (VNONE when absent) */
    size_t min, max;
    const struct vprop *props; /* VK_OBJECT, in the node's props order */
    const size_t *table;       /* VK_OBJECT: the node's prop_table (index + 1 into props) */
    size_t mask;               /* VK_OBJECT: prop_table's mask */
    const struct sprop *enums; /* VK_ENUM */
    const struct snode *node;  /* VK_GENERAL */
};

/* Objects with more properties than this look names up in the node's hash table. */
#define VPROP_LINEAR 8

/* The property named key (len bytes) of an object entry, or NULL. Arguments usually come in
 * the schema's order, so the search starts after the previous match (hint). */
static inline const struct vprop *rein__vprop_find(const struct vop *op, const char *key,
                                                   size_t len, uint32_t *hint)
{
    if (op->n <= VPROP_LINEAR) {
        uint32_t i = *hint < op->n ? *hint : 0;
        for (uint32_t k = 0; k < op->n; k++) {
            const struct vprop *p = &op->props[i];
            if (p->len == len && rein__bytes_eq(p->name, key, len)) {
                *hint = i + 1;
                return p;
            }
            if (++i == op->n)
                i = 0;
        }
        return NULL;
    }
    size_t h = rein__schema_hash(key, len);
    for (size_t j = h & op->mask;; j = (j + 1) & op->mask) {
        size_t k = op->table[j];
        if (!k)
            return NULL;
        const struct vprop *p = &op->props[k - 1];
        if (p->hash == h && p->len == len && rein__bytes_eq(p->name, key, len))
            return p;
    }
}

/* The "type" of op folded into a bit test: true when a value of json_type t (a real: of value
 * real) is one op accepts. */
static inline bool rein__vtype_is(const struct vop *op, unsigned t, double real)
{
    if (!((op->jtypes >> t) & 1))
        return false;
    if (t == JSON_REAL && op->integral)
        return real == floor(real) && isfinite(real);
    return true;
}

/* rein__vtype_is for a value of either instance form (vi_tree.h, vi_doc.h). */
#define VI_TYPE_OK(op, v) rein__vtype_is(op, VI_TYPE(v), VI_TYPE(v) == JSON_REAL ? VI_REAL(v) : 0)

/* Builds schema->prog from schema->root (NULL when the root itself is general). REIN_ENOMEM. */
rein_err rein__verdict_build(rein_schema *schema) REIN_WUR;
/* The errors of inst: 0 when valid; when not, 1 (all false: the first error decides) or the
 * number the node walker finds (all true); -1 undecided (too deep, or the walker failed):
 * walk it instead. */
long rein__verdict_run(const rein_schema *schema, json_t *inst, bool all);
/* The same for a document's node (rein/doc.h); a general entry's subtree is made into jansson
 * values for the node walker. */
long rein__verdict_run_doc(const rein_schema *schema, const struct rein_doc_node *inst, bool all);
/* The node walker's errors for inst at node n, starting at application depth depth, none
 * recorded: 0 valid; 1 at the first (all false) or every one counted (all true); -1 a hard
 * error (too deep, a pattern that backtracks too much, out of memory). */
long rein__schema_probe(const rein_schema *schema, const struct snode *n, json_t *inst, int depth,
                        bool all);
/* rein_schema_validate without the verdict program: the node walker alone (for tests that
 * compare the two). */
rein_err rein__schema_walk(const rein_schema *schema, json_t *instance, unsigned flags,
                           rein_schema_result *res, rein_error *err) REIN_WUR;

struct rein_schema {
    rein_arena *arena;
    struct sindex local; /* the root document and embedded metaschemas */
    struct snode *root;
    enum rein_schema_dialect dialect;
    pcre2_general_context *gctx;
    pcre2_compile_context *cctx;
    pcre2_match_context *mctx;
    struct sregex **regexes; /* every compiled pattern, freed with the schema */
    size_t nregexes, regexes_cap;
    bool uses_regex;
    const struct vop *prog; /* the verdict program (entry 0 is the root), or NULL */
    /* Match data for validations that pass no result (which would otherwise allocate one
     * each time): a few slots taken and given back atomically, so threads can share them. */
    pcre2_match_data *md_slots[SCHEMA_MD_SLOTS];
    int md_busy[SCHEMA_MD_SLOTS];
};

/* ---- regex (regex.c) ---------------------------------------------------------------------- */

/*
 * Translates an ECMA-262 pattern (len bytes) into PCRE2 syntax in out. False with a reason
 * in why when the pattern is not valid ECMA-262 (escapes PCRE2 would accept differently).
 */
bool rein__regex_translate(const char *src, size_t len, struct rein_buf *out, const char **why);
/*
 * Compiles pattern into re (its code owned by schema). REIN_ESCHEMA with PCRE2's reason in
 * err (the caller adds the location), REIN_ENOMEM.
 */
rein_err rein__regex_compile(rein_schema *schema, const char *pattern, size_t len,
                             struct sregex *re, rein_error *err) REIN_WUR;
/* 1 match, 0 no match, negative REIN_E* (REIN_ETOOBIG when the match limit was hit). */
int rein__regex_search(const struct sregex *re, const char *s, size_t len, pcre2_match_data *md,
                       pcre2_match_context *mctx);
/* True when pattern compiles as ECMA-262 (format "regex"). */
bool rein__regex_is_valid(const char *s, size_t len);

/* ---- formats (format.c) ------------------------------------------------------------------- */

enum sformat rein__format_id(const char *name);
/* True when s (len bytes, UTF-8) is valid for the format; unknown formats are valid. */
bool rein__format_check(enum sformat f, const char *s, size_t len);

/* ---- results (result.c) ------------------------------------------------------------------- */

struct serr {
    size_t ipath, kpath, kw, msg, prop; /* offsets into text; prop SIZE_MAX when none */
};

struct rein_schema_result {
    struct serr *errs;
    size_t n, cap;
    struct rein_buf text;
    pcre2_match_data *md; /* scratch for pattern matching, reused */
    bool oom;
};

/* Instance location while validating: a chain of frames on the C stack, read only when an
 * error is recorded. */
struct ipath {
    const struct ipath *up;
    const char *key; /* NULL for an array index */
    size_t len;      /* key length, or the index */
};

/* A message being written: appends stop at the first failure, which is remembered. */
struct mbuf {
    struct rein_buf *b;
    bool failed;
};
/* The slow path of rein__mb_add: grows the buffer. */
void rein__mb_add_grow(struct mbuf *m, const char *s, size_t len);
/* Appends len bytes; inline because messages are assembled from many short pieces. */
static inline void rein__mb_add(struct mbuf *m, const char *s, size_t len)
{
    struct rein_buf *b = m->b;

    if (b->alloc && b->len + len < b->alloc) {
        char *d = b->ptr + b->len;
        /* Short pieces by two overlapping words (like rein__bytes_eq), not a byte loop. */
        if (len >= 8 && len <= 16) {
            uint64_t x0, x1;
            __builtin_memcpy(&x0, s, 8);
            __builtin_memcpy(&x1, s + len - 8, 8);
            __builtin_memcpy(d, &x0, 8);
            __builtin_memcpy(d + len - 8, &x1, 8);
        } else if (len >= 4 && len < 8) {
            uint32_t x0, x1;
            __builtin_memcpy(&x0, s, 4);
            __builtin_memcpy(&x1, s + len - 4, 4);
            __builtin_memcpy(d, &x0, 4);
            __builtin_memcpy(d + len - 4, &x1, 4);
        } else if (len < 4) {
            for (size_t i = 0; i < len; i++)
                d[i] = s[i];
        } else {
            __builtin_memcpy(d, s, len);
        }
        b->len += len;
        b->ptr[b->len] = '\0';
        return;
    }
    rein__mb_add_grow(m, s, len);
}
void rein__mb_adds(struct mbuf *m, const char *s);
/* Appends a string literal without measuring it at run time. */
#define rein__mb_lit(m, lit) rein__mb_add((m), "" lit, sizeof(lit) - 1)
void rein__mb_addf(struct mbuf *m, const char *fmt, ...) REIN_PRINTF(2, 3);
/* Appends an integer in decimal. */
void rein__mb_int(struct mbuf *m, long long v);
/* Appends the JSON Pointer for ip ("" for the root). */
void rein__ipath_write(struct mbuf *m, const struct ipath *ip);
/* Appends a short readable rendering of v: "string \"20\"", "integer 5", "object". */
void rein__describe(struct mbuf *m, const json_t *v, bool with_type);
/* What an error's message reads of a value, in either instance form (a jansson value or a
 * rein_doc node): its json_type and, for a scalar, its contents (str borrowed). */
struct rein__ival {
    unsigned type;
    size_t len;
    const char *str;
    json_int_t i;
    double d;
};
void rein__ival_of(struct rein__ival *iv, const json_t *v);
/* rein__describe for a value read into a rein__ival. */
void rein__describe_ival(struct mbuf *m, const struct rein__ival *v, bool with_type);
/* Appends v as compact JSON, cut after about max bytes with "…". */
void rein__json_brief(struct mbuf *m, const json_t *v, size_t max);
/* Appends a quoted string, truncated with … and its length when long. */
void rein__quote(struct mbuf *m, const char *s, size_t len);
/* Appends a number as written (integers exactly, reals shortest round-trip). */
void rein__num_write(struct mbuf *m, const struct snum *n);
void rein__double_write(struct mbuf *m, double d);

/* Code points in len bytes of UTF-8. */
size_t rein__utf8_len(const char *s, size_t len);
/* JSON equality with numbers compared by value; depth-limited (false when too deep). */
bool rein__json_equal(const json_t *a, const json_t *b, int depth, bool *too_deep);

#endif /* REIN_SCHEMA_INT_H */
