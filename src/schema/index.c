/*
 * The document index of the schema compiler and the public registry (rein/schema.h).
 *
 * Scanning a document walks only the places where a schema can stand (properties, items,
 * allOf, $defs, ...), so an "$id" inside an enum value or an unknown keyword is not taken for
 * a resource. Each resource gets its absolute URI, its JSON Pointer in the document and its
 * dialect ($schema, or a custom metaschema's $vocabulary); each $anchor and $dynamicAnchor is
 * attached to its resource. The compiler then resolves every $ref against this index.
 */
#include "schema/schema_int.h"

#include <string.h>

#define DEFAULT_BASE "rein:/schema.json"

rein_err rein__index_init(struct sindex *ix)
{
    memset(ix, 0, sizeof(*ix));
    ix->arena = rein_arena_new(0);
    if (!ix->arena)
        return REIN_ENOMEM;
    rein__smap_init(&ix->by_uri, false);
    rein__smap_init(&ix->by_json, true);
    return REIN_OK;
}

void rein__index_release(struct sindex *ix)
{
    for (size_t i = 0; i < ix->ndocs; i++)
        json_decref(ix->docs[i]);
    rein_free(ix->docs);
    rein__smap_release(&ix->by_uri);
    rein__smap_release(&ix->by_json);
    rein_arena_free(ix->arena);
    memset(ix, 0, sizeof(*ix));
}

struct sres *rein__index_find(const struct sindex *ix, const char *uri)
{
    return ix ? rein__smap_get(&ix->by_uri, uri) : NULL;
}

struct sres *rein__index_find_json(const struct sindex *ix, const json_t *json)
{
    return ix ? rein__smap_get(&ix->by_json, json) : NULL;
}

/* ---- dialects ----------------------------------------------------------------------------- */

static bool uri_eq(const char *uri, const char *want)
{
    size_t n = strlen(want);

    /* An empty fragment is the same URI: "…/schema#" names "…/schema". */
    return strncmp(uri, want, n) == 0 && (uri[n] == '\0' || (uri[n] == '#' && uri[n + 1] == '\0'));
}

bool rein__dialect_known(const char *uri, struct sdialect *out)
{
    static const struct {
        const char *uri;
        uint8_t version;
    } known[] = {
        {"https://json-schema.org/draft/2020-12/schema", SV_2020},
        {"http://json-schema.org/draft/2020-12/schema", SV_2020},
        {"https://json-schema.org/draft/2019-09/schema", SV_2019},
        {"http://json-schema.org/draft/2019-09/schema", SV_2019},
        {"http://json-schema.org/draft-07/schema", SV_DRAFT7},
        {"https://json-schema.org/draft-07/schema", SV_DRAFT7},
        {"http://json-schema.org/draft-06/schema", SV_DRAFT7},
        {"https://json-schema.org/draft-06/schema", SV_DRAFT7},
        /* draft-04 is still common in tool schemas: read as draft-07, with its boolean
         * exclusiveMinimum/exclusiveMaximum understood (compile.c). */
        {"http://json-schema.org/draft-04/schema", SV_DRAFT7},
        {"https://json-schema.org/draft-04/schema", SV_DRAFT7},
    };

    for (size_t i = 0; i < REIN_ARRAY_SIZE(known); i++) {
        if (uri_eq(uri, known[i].uri)) {
            out->version = known[i].version;
            out->vocab = VOC_DEFAULT;
            return true;
        }
    }
    return false;
}

static int vocab_bit(const char *uri)
{
    static const struct {
        const char *name;
        int bit;
    } vocabs[] = {
        {"core", VOC_CORE},
        {"applicator", VOC_APPLICATOR},
        {"unevaluated", VOC_UNEVALUATED},
        {"validation", VOC_VALIDATION},
        {"meta-data", VOC_METADATA},
        {"format-annotation", VOC_FORMAT_ANNOTATION},
        {"format-assertion", VOC_FORMAT_ASSERTION},
        {"format", VOC_FORMAT_ANNOTATION},
        {"content", VOC_CONTENT},
    };
    const char *tail = NULL;

    if (strncmp(uri, "https://json-schema.org/draft/2020-12/vocab/", 44) == 0)
        tail = uri + 44;
    else if (strncmp(uri, "https://json-schema.org/draft/2019-09/vocab/", 44) == 0)
        tail = uri + 44;
    if (!tail)
        return 0;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(vocabs); i++) {
        if (strcmp(tail, vocabs[i].name) == 0)
            return vocabs[i].bit;
    }
    return 0;
}

struct scan {
    struct sindex *ix;
    const struct sindex *reg;
    rein_error *err;
    struct rein_buf path;
    json_t *doc;
    const char *doc_uri;
    bool explicit_dialect;
};

static struct sres *find_any(const struct scan *s, const char *uri)
{
    struct sres *r = rein__index_find(s->ix, uri);

    return r ? r : rein__index_find(s->reg, uri);
}

/* The dialect named by a $schema value: a known draft or a registered custom metaschema. */
static rein_err dialect_of(struct scan *s, const char *uri, struct sdialect *out)
{
    struct sres *meta;
    char *base;
    json_t *vocab, *on;
    const char *key;

    if (rein__dialect_known(uri, out))
        return REIN_OK;
    base = rein_strndup(uri, rein__uri_base_len(uri));
    if (!base)
        return rein_error_set(s->err, REIN_ENOMEM, "out of memory");
    meta = find_any(s, base);
    rein_free(base);
    if (!meta)
        return rein_error_set(s->err, REIN_ESCHEMA,
                              "%s/$schema: unknown dialect \"%.120s\" (use 2020-12 or draft-07, or "
                              "register the metaschema first)",
                              s->path.ptr, uri);
    *out = meta->dialect;
    vocab = json_object_get(meta->json, "$vocabulary");
    if (!json_is_object(vocab))
        return REIN_OK;
    out->vocab = VOC_CORE;
    json_object_foreach(vocab, key, on)
    {
        int bit = vocab_bit(key);
        if (!bit && json_is_true(on))
            return rein_error_set(s->err, REIN_ESCHEMA,
                                  "%s/$schema: the metaschema requires vocabulary \"%.120s\", "
                                  "which is not supported",
                                  s->path.ptr, key);
        out->vocab |= (uint8_t)bit;
    }
    return REIN_OK;
}

/* ---- scanning ----------------------------------------------------------------------------- */

static rein_err path_push(struct scan *s, const char *seg, size_t *mark)
{
    *mark = s->path.len;
    if (rein_buf_addch(&s->path, '/'))
        return REIN_ENOMEM;
    for (const char *c = seg; *c; c++) {
        rein_err rc;
        if (*c == '~')
            rc = rein_buf_adds(&s->path, "~0");
        else if (*c == '/')
            rc = rein_buf_adds(&s->path, "~1");
        else
            rc = rein_buf_addch(&s->path, *c);
        if (rc)
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

static struct sres *new_res(struct scan *s, const char *uri, json_t *json, struct sdialect d)
{
    struct sres *r = rein_arena_calloc(s->ix->arena, 1, sizeof(*r));

    if (!r)
        return NULL;
    r->uri = rein_arena_strdup(s->ix->arena, uri);
    r->path = rein_arena_strdup(s->ix->arena, s->path.ptr);
    r->json = json;
    r->dialect = d;
    r->doc = s->doc;
    r->doc_uri = s->doc_uri;
    r->explicit_dialect = s->explicit_dialect;
    if (!r->uri || !r->path)
        return NULL;
    return r;
}

static rein_err add_res(struct scan *s, struct sres *r, const char *uri)
{
    struct sres *old = rein__index_find(s->ix, uri);

    if (old && old != r)
        return rein_error_set(s->err, REIN_EEXIST, "%s: \"%.150s\" is already defined",
                              s->path.ptr[0] ? s->path.ptr : "/", uri);
    if (rein__smap_put(&s->ix->by_uri, uri, r))
        return rein_error_set(s->err, REIN_ENOMEM, "out of memory");
    return REIN_OK;
}

static rein_err add_anchor(struct scan *s, struct sres *r, const char *name, json_t *json,
                           bool dynamic)
{
    struct sanchor *a;

    for (a = r->anchors; a; a = a->next) {
        if (strcmp(a->name, name) == 0) {
            if (a->json == json) {
                a->dynamic |= dynamic;
                return REIN_OK;
            }
            return rein_error_set(s->err, REIN_ESCHEMA, "%s: anchor \"%.100s\" is defined twice",
                                  s->path.ptr[0] ? s->path.ptr : "/", name);
        }
    }
    a = rein_arena_calloc(s->ix->arena, 1, sizeof(*a));
    if (!a || !(a->name = rein_arena_strdup(s->ix->arena, name)) ||
        !(a->path = rein_arena_strdup(s->ix->arena, s->path.ptr)))
        return rein_error_set(s->err, REIN_ENOMEM, "out of memory");
    a->json = json;
    a->dynamic = dynamic;
    a->next = r->anchors;
    r->anchors = a;
    return REIN_OK;
}

static rein_err scan_schema(struct scan *s, json_t *v, struct sres *res, int depth);

static rein_err scan_child(struct scan *s, json_t *v, const char *kw, const char *key,
                           struct sres *res, int depth)
{
    size_t m1, m2 = 0;
    rein_err rc;

    if (path_push(s, kw, &m1))
        return rein_error_set(s->err, REIN_ENOMEM, "out of memory");
    if (key && path_push(s, key, &m2))
        return rein_error_set(s->err, REIN_ENOMEM, "out of memory");
    rc = scan_schema(s, v, res, depth + 1);
    rein_buf_truncate(&s->path, m1);
    (void)m2;
    return rc;
}

static rein_err scan_array(struct scan *s, json_t *arr, const char *kw, struct sres *res, int depth)
{
    size_t i;
    json_t *item;
    char idx[24];

    json_array_foreach(arr, i, item)
    {
        snprintf(idx, sizeof(idx), "%zu", i);
        rein_err rc = scan_child(s, item, kw, idx, res, depth);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

static rein_err scan_map(struct scan *s, json_t *obj, const char *kw, struct sres *res, int depth,
                         bool skip_arrays)
{
    const char *key;
    json_t *item;

    if (!json_is_object(obj))
        return REIN_OK;
    json_object_foreach(obj, key, item)
    {
        if (skip_arrays && json_is_array(item))
            continue;
        rein_err rc = scan_child(s, item, kw, key, res, depth);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

/* $id (and, for draft-07, "$id": "#name" anchors); returns the resource v belongs to. */
static rein_err scan_id(struct scan *s, json_t *v, struct sres **res)
{
    json_t *id = json_object_get(v, "$id");
    struct sdialect d = (*res)->dialect;
    json_t *sch = json_object_get(v, "$schema");
    const char *ids;
    char *uri;
    struct sres *r;
    rein_err rc;

    if (!json_is_string(id))
        return REIN_OK;
    ids = json_string_value(id);
    if (d.version == SV_DRAFT7) {
        /* draft-07: a sibling $ref makes every other keyword, $id included, ignored. */
        if (json_object_get(v, "$ref"))
            return REIN_OK;
        if (ids[0] == '#')
            return ids[1] ? add_anchor(s, *res, ids + 1, v, false) : REIN_OK;
    } else {
        const char *h = strchr(ids, '#');
        if (h == ids)
            return ids[1] ? add_anchor(s, *res, ids + 1, v, false) : REIN_OK; /* legacy form */
        if (h && h[1])
            return rein_error_set(
                s->err, REIN_ESCHEMA,
                "%s/$id: must not contain a fragment (use $anchor), got \"%.100s\"", s->path.ptr,
                ids);
    }
    uri = rein__uri_resolve((*res)->uri, ids);
    if (!uri)
        return rein_error_set(s->err, REIN_ENOMEM, "out of memory");
    uri[rein__uri_base_len(uri)] = '\0';
    if ((*res)->json == v) {
        /* A document root's $id names the same resource as its retrieval URI: both find it,
         * and the $id is the base for what is inside. */
        if (strcmp(uri, (*res)->uri) != 0) {
            const char *copy = rein_arena_strdup(s->ix->arena, uri);
            rc = copy ? add_res(s, *res, copy)
                      : rein_error_set(s->err, REIN_ENOMEM, "out of memory");
            if (!rc)
                (*res)->uri = copy;
        } else {
            rc = REIN_OK;
        }
        rein_free(uri);
        return rc;
    }
    if (json_is_string(sch)) {
        rc = dialect_of(s, json_string_value(sch), &d);
        if (rc) {
            rein_free(uri);
            return rc;
        }
    }
    bool saved_explicit = s->explicit_dialect;
    s->explicit_dialect |= json_is_string(sch);
    r = new_res(s, uri, v, d);
    s->explicit_dialect = saved_explicit;
    if (!r) {
        rein_free(uri);
        return rein_error_set(s->err, REIN_ENOMEM, "out of memory");
    }
    rc = add_res(s, r, r->uri);
    rein_free(uri);
    if (rc)
        return rc;
    if (rein__smap_put(&s->ix->by_json, v, r))
        return rein_error_set(s->err, REIN_ENOMEM, "out of memory");
    *res = r;
    return REIN_OK;
}

static rein_err scan_schema(struct scan *s, json_t *v, struct sres *res, int depth)
{
    static const char *const single[] = {"additionalProperties",
                                         "propertyNames",
                                         "not",
                                         "if",
                                         "then",
                                         "else",
                                         "contains",
                                         "additionalItems",
                                         "unevaluatedProperties",
                                         "unevaluatedItems",
                                         "contentSchema",
                                         NULL};
    static const char *const arrays[] = {"allOf", "anyOf", "oneOf", "prefixItems", NULL};
    static const char *const maps[] = {"properties",  "patternProperties", "$defs",
                                       "definitions", "dependentSchemas",  NULL};
    json_t *a, *items;
    rein_err rc;

    if (!json_is_object(v))
        return REIN_OK;
    if (depth > SCHEMA_MAX_DEPTH)
        return rein_error_set(s->err, REIN_EDEPTH, "%s: schema nested deeper than %d levels",
                              s->path.ptr, SCHEMA_MAX_DEPTH);
    rc = scan_id(s, v, &res);
    if (rc)
        return rc;
    if (res->dialect.version != SV_DRAFT7) {
        a = json_object_get(v, "$anchor");
        if (json_is_string(a) && (rc = add_anchor(s, res, json_string_value(a), v, false)))
            return rc;
        a = json_object_get(v, "$dynamicAnchor");
        if (res->dialect.version == SV_2020 && json_is_string(a) &&
            (rc = add_anchor(s, res, json_string_value(a), v, true)))
            return rc;
    }
    for (int i = 0; single[i]; i++) {
        a = json_object_get(v, single[i]);
        if (a && (rc = scan_child(s, a, single[i], NULL, res, depth)))
            return rc;
    }
    for (int i = 0; arrays[i]; i++) {
        a = json_object_get(v, arrays[i]);
        if (json_is_array(a) && (rc = scan_array(s, a, arrays[i], res, depth)))
            return rc;
    }
    for (int i = 0; maps[i]; i++) {
        a = json_object_get(v, maps[i]);
        if (a && (rc = scan_map(s, a, maps[i], res, depth, false)))
            return rc;
    }
    a = json_object_get(v, "dependencies");
    if (a && (rc = scan_map(s, a, "dependencies", res, depth, true)))
        return rc;
    items = json_object_get(v, "items");
    if (json_is_array(items))
        return scan_array(s, items, "items", res, depth);
    if (items)
        return scan_child(s, items, "items", NULL, res, depth);
    return REIN_OK;
}

rein_err rein__index_add(struct sindex *ix, const char *uri, json_t *doc, struct sdialect dflt,
                         const struct sindex *reg, rein_error *err)
{
    struct scan s = {ix, reg, err, {0}, NULL, NULL, false};
    struct sdialect d = dflt;
    json_t *sch = json_is_object(doc) ? json_object_get(doc, "$schema") : NULL;
    struct sres *root;
    char *base;
    rein_err rc;

    rein_buf_init(&s.path, 0);
    s.doc = doc;
    s.explicit_dialect = sch != NULL;
    if (ix->ndocs == ix->docs_cap) {
        size_t ncap = ix->docs_cap ? ix->docs_cap * 2 : 8;
        json_t **nd = rein_realloc(ix->docs, ncap * sizeof(json_t *));
        if (!nd)
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
        ix->docs = nd;
        ix->docs_cap = ncap;
    }
    ix->docs[ix->ndocs++] = json_incref(doc);
    if (json_is_string(sch) && (rc = dialect_of(&s, json_string_value(sch), &d)))
        goto out;
    if (sch && !json_is_string(sch)) {
        rc = rein_error_set(err, REIN_ESCHEMA, "/$schema: must be a string, got %s",
                            rein_json_type_name(sch));
        goto out;
    }
    base = rein__uri_resolve(DEFAULT_BASE, uri ? uri : DEFAULT_BASE);
    if (!base) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto out;
    }
    base[rein__uri_base_len(base)] = '\0';
    s.doc_uri = rein_arena_strdup(ix->arena, base);
    root = s.doc_uri ? new_res(&s, base, doc, d) : NULL;
    if (!root) {
        rein_free(base);
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto out;
    }
    rc = add_res(&s, root, root->uri);
    rein_free(base);
    if (rc)
        goto out;
    if (rein__smap_put(&ix->by_json, doc, root)) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto out;
    }
    rc = scan_schema(&s, doc, root, 0);
out:
    rein_buf_release(&s.path);
    return rc;
}

/* ---- public registry ---------------------------------------------------------------------- */

rein_schema_registry *rein_schema_registry_new(void)
{
    rein_schema_registry *reg = rein_calloc(1, sizeof(*reg));

    if (!reg)
        return NULL;
    if (rein__index_init(&reg->ix)) {
        rein_free(reg);
        return NULL;
    }
    return reg;
}

void rein_schema_registry_free(rein_schema_registry *reg)
{
    if (!reg)
        return;
    rein__index_release(&reg->ix);
    rein_free(reg);
}

rein_err rein_schema_registry_add(rein_schema_registry *reg, const char *uri, json_t *doc,
                                  rein_error *err)
{
    struct sdialect d = {SV_2020, VOC_DEFAULT};
    char *abs;
    rein_err rc;

    if (!reg || !uri || !doc)
        return rein_error_set(err, REIN_EINVAL, "registry, uri and document are required");
    abs = rein__uri_resolve(NULL, uri);
    if (!abs)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    abs[rein__uri_base_len(abs)] = '\0';
    rc = rein__index_find(&reg->ix, abs) ? REIN_EEXIST : REIN_OK;
    rein_free(abs);
    if (rc)
        return rein_error_set(err, REIN_EEXIST, "\"%.200s\" is already registered", uri);
    rc = rein__index_add(&reg->ix, uri, doc, d, NULL, err);
    if (rc)
        rein_error_prefix(err, "%.100s: ", uri);
    return rc;
}
