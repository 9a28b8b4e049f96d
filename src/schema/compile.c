/*
 * The schema compiler (rein_schema_compile): turns a jansson schema document into the node
 * graph that src/schema/validate.c walks.
 *
 * The root document is indexed first (index.c), then compiled from the root down: every schema
 * object becomes one node, every keyword value is checked (a bad one fails with the JSON
 * Pointer of the keyword), patterns are compiled once, and property names are put in a small
 * hash table so validation looks each instance key up once. $ref and $dynamicRef targets are
 * queued and compiled after the tree, so the C stack never grows with the length of a chain
 * of references; a reference that leaves the document must name a registered document or one
 * of the embedded metaschemas, since nothing is ever fetched.
 */
#include "schema/schema_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_BASE "rein:/schema.json"

enum pkind { P_REF, P_DYNREF, P_DYNANCHOR };

struct pending {
    enum pkind kind;
    struct snode **slot;
    struct snode *node; /* holder of the reference */
    const char *ref;    /* the reference as written (borrowed from the document) */
    const char *base;   /* URI it is resolved against */
    const char *kwpath; /* where the reference is, for errors */
    json_t *target;     /* P_DYNANCHOR: the anchored schema */
    struct sres *res;   /* P_DYNANCHOR: its resource */
    const char *tpath;  /* P_DYNANCHOR: its JSON Pointer */
};

struct comp {
    rein_schema *s;
    const struct sindex *reg;
    bool format_assert;
    rein_error *err;
    struct smap nodes; /* json_t * -> struct snode * */
    struct smap cres;  /* struct sres * -> struct cres * */
    struct pending *pend;
    size_t npend, pend_cap;
    struct rein_buf path; /* JSON Pointer of the schema being compiled */
    int depth;
};

static rein_err oom(struct comp *c)
{
    return rein_error_set(c->err, REIN_ENOMEM, "out of memory");
}

REIN_PRINTF(3, 4)
static rein_err kw_error(struct comp *c, const char *kw, const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return rein_error_set(c->err, REIN_ESCHEMA, "%.*s/%s: %s", 120, c->path.ptr, kw, msg);
}

static rein_err push_seg(struct comp *c, const char *seg, size_t len, size_t *mark)
{
    *mark = c->path.len;
    if (rein_buf_addch(&c->path, '/'))
        return oom(c);
    for (size_t i = 0; i < len; i++) {
        rein_err rc;
        if (seg[i] == '~')
            rc = rein_buf_adds(&c->path, "~0");
        else if (seg[i] == '/')
            rc = rein_buf_adds(&c->path, "~1");
        else
            rc = rein_buf_addch(&c->path, seg[i]);
        if (rc)
            return oom(c);
    }
    return REIN_OK;
}

static rein_err add_pending(struct comp *c, const struct pending *p)
{
    if (c->npend == c->pend_cap) {
        size_t ncap = c->pend_cap ? c->pend_cap * 2 : 16;
        struct pending *np = rein_realloc(c->pend, ncap * sizeof(*np));
        if (!np)
            return oom(c);
        c->pend = np;
        c->pend_cap = ncap;
    }
    c->pend[c->npend++] = *p;
    return REIN_OK;
}

static struct sres *find_json_res(const struct comp *c, const json_t *v)
{
    struct sres *r = rein__index_find_json(&c->s->local, v);

    return r ? r : rein__index_find_json(c->reg, v);
}

/* The compiled view of a resource: its dynamic anchors, compiled through the queue. */
static struct cres *get_cres(struct comp *c, struct sres *res)
{
    struct cres *cr = rein__smap_get(&c->cres, res);
    size_t n = 0;

    if (cr)
        return cr;
    cr = rein_arena_calloc(c->s->arena, 1, sizeof(*cr));
    if (!cr)
        return NULL;
    cr->res = res;
    for (struct sanchor *a = res->anchors; a; a = a->next)
        n += a->dynamic;
    if (n) {
        cr->dyn = rein_arena_calloc(c->s->arena, n, sizeof(*cr->dyn));
        if (!cr->dyn)
            return NULL;
        for (struct sanchor *a = res->anchors; a; a = a->next) {
            if (!a->dynamic)
                continue;
            struct pending p = {.kind = P_DYNANCHOR,
                                .slot = &cr->dyn[cr->ndyn].node,
                                .target = a->json,
                                .res = res,
                                .tpath = a->path};
            cr->dyn[cr->ndyn++].name = a->name;
            if (add_pending(c, &p))
                return NULL;
        }
    }
    if (rein__smap_put(&c->cres, res, cr))
        return NULL;
    return cr;
}

static struct snode *compile_node(struct comp *c, json_t *v, struct sres *res);

/* Compiles v found at path + "/" + kw [+ "/" + key]. */
static struct snode *compile_sub(struct comp *c, json_t *v, const char *kw, const char *key,
                                 size_t keylen, struct sres *res)
{
    size_t m1, m2;
    struct snode *n;

    if (push_seg(c, kw, strlen(kw), &m1))
        return NULL;
    if (key && push_seg(c, key, keylen, &m2))
        return NULL;
    n = compile_node(c, v, res);
    rein_buf_truncate(&c->path, m1);
    return n;
}

/* ---- keyword value checks ----------------------------------------------------------------- */

static bool get_num(json_t *v, struct snum *out)
{
    if (json_is_integer(v)) {
        out->is_int = true;
        out->i = json_integer_value(v);
        out->d = (double)out->i;
        return true;
    }
    if (json_is_real(v)) {
        out->is_int = false;
        out->d = json_real_value(v);
        return true;
    }
    return false;
}

static rein_err num_kw(struct comp *c, json_t *obj, const char *kw, const struct snum **out)
{
    json_t *v = json_object_get(obj, kw);
    struct snum *n;

    if (!v)
        return REIN_OK;
    n = rein_arena_calloc(c->s->arena, 1, sizeof(*n));
    if (!n)
        return oom(c);
    if (!get_num(v, n))
        return kw_error(c, kw, "must be a number, got %s", rein_json_type_name(v));
    *out = n;
    return REIN_OK;
}

static rein_err count_kw(struct comp *c, json_t *obj, const char *kw, size_t *out, bool *present)
{
    json_t *v = json_object_get(obj, kw);
    double d;

    if (present)
        *present = v != NULL;
    if (!v)
        return REIN_OK;
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            return kw_error(c, kw, "must be a non-negative integer, got %lld",
                            (long long)json_integer_value(v));
        *out = (size_t)json_integer_value(v);
        return REIN_OK;
    }
    if (json_is_real(v)) {
        d = json_real_value(v);
        if (d >= 0 && d == floor(d)) {
            *out = d >= 1.8e19 ? SIZE_MAX : (size_t)d;
            return REIN_OK;
        }
    }
    return kw_error(c, kw, "must be a non-negative integer, got %s", rein_json_type_name(v));
}

static rein_err schema_array(struct comp *c, json_t *obj, const char *kw, struct sres *res,
                             struct snode ***out, size_t *count, bool nonempty)
{
    json_t *arr = json_object_get(obj, kw);
    size_t n;
    char idx[24];

    if (!arr)
        return REIN_OK;
    if (!json_is_array(arr) || (nonempty && json_array_size(arr) == 0))
        return kw_error(c, kw, "must be a non-empty array of schemas, got %s",
                        json_is_array(arr) ? "an empty array" : rein_json_type_name(arr));
    n = json_array_size(arr);
    *out = rein_arena_calloc(c->s->arena, n ? n : 1, sizeof(struct snode *));
    if (!*out)
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        snprintf(idx, sizeof(idx), "%zu", i);
        (*out)[i] = compile_sub(c, json_array_get(arr, i), kw, idx, strlen(idx), res);
        if (!(*out)[i])
            return c->err ? c->err->code : REIN_ESCHEMA;
    }
    *count = n;
    return REIN_OK;
}

static rein_err schema_kw(struct comp *c, json_t *obj, const char *kw, struct sres *res,
                          struct snode **out)
{
    json_t *v = json_object_get(obj, kw);

    if (!v)
        return REIN_OK;
    *out = compile_sub(c, v, kw, NULL, 0, res);
    return *out ? REIN_OK : c->err->code;
}

/* ---- object keywords ---------------------------------------------------------------------- */

static struct sprop *prop_find(struct snode *n, const char *name, size_t len, size_t h)
{
    if (!n->prop_table)
        return NULL;
    for (size_t j = h & n->prop_mask;; j = (j + 1) & n->prop_mask) {
        size_t k = n->prop_table[j];
        if (!k)
            return NULL;
        struct sprop *p = &n->props[k - 1];
        if (p->hash == h && p->len == len && memcmp(p->name, name, len) == 0)
            return p;
    }
}

static struct sprop *prop_get(struct snode *n, const char *name, size_t len)
{
    size_t h = rein__schema_hash(name, len);
    struct sprop *p = prop_find(n, name, len, h);

    if (p)
        return p;
    p = &n->props[n->nprops++];
    p->name = name;
    p->len = len;
    p->hash = h;
    p->head = rein__head8(name, len);
    p->required_bit = -1;
    for (size_t j = h & n->prop_mask;; j = (j + 1) & n->prop_mask) {
        if (!n->prop_table[j]) {
            n->prop_table[j] = n->nprops;
            break;
        }
    }
    return p;
}

static size_t obj_size(json_t *obj, const char *kw)
{
    json_t *v = json_object_get(obj, kw);

    return json_is_object(v) ? json_object_size(v) : json_is_array(v) ? json_array_size(v) : 0;
}

static rein_err string_list(struct comp *c, json_t *arr, const char *kw, const char *key,
                            struct sname **out, size_t *count)
{
    size_t n = json_array_size(arr);
    char where[160];

    snprintf(where, sizeof(where), "%s%s%.100s", kw, key ? "/" : "", key ? key : "");
    if (!json_is_array(arr))
        return kw_error(c, where, "must be an array of strings, got %s", rein_json_type_name(arr));
    *out = rein_arena_calloc(c->s->arena, n ? n : 1, sizeof(**out));
    if (!*out)
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(arr, i);
        if (!json_is_string(s))
            return kw_error(c, where, "must be an array of strings, item %zu is %s", i,
                            rein_json_type_name(s));
        (*out)[i].name = json_string_value(s);
        (*out)[i].len = json_string_length(s);
    }
    *count = n;
    return REIN_OK;
}

static rein_err compile_required(struct comp *c, struct snode *n, json_t *obj)
{
    json_t *req = json_object_get(obj, "required");
    struct sname *names;
    size_t count = 0;
    rein_err rc;

    if (!req)
        return REIN_OK;
    if ((rc = string_list(c, req, "required", NULL, &names, &count)))
        return rc;
    n->required = rein_arena_calloc(c->s->arena, count ? count : 1, sizeof(struct sprop *));
    if (!n->required)
        return oom(c);
    for (size_t i = 0; i < count; i++) {
        struct sprop *p = prop_get(n, names[i].name, names[i].len);
        if (p->required_bit >= 0)
            continue; /* listed twice: count it once */
        p->required_bit = (int)n->nrequired;
        n->required[n->nrequired++] = p;
    }
    n->has |= KW_OBJECT;
    return REIN_OK;
}

static rein_err compile_dependents(struct comp *c, struct snode *n, json_t *obj, const char *kw,
                                   struct sres *res, bool allow_req, bool allow_schema)
{
    json_t *deps = json_object_get(obj, kw);
    const char *key;
    size_t klen;
    json_t *v;

    if (!deps)
        return REIN_OK;
    if (!json_is_object(deps))
        return kw_error(c, kw, "must be an object, got %s", rein_json_type_name(deps));
    json_object_keylen_foreach(deps, key, klen, v)
    {
        struct sprop *p = prop_get(n, key, klen);
        if (allow_req && json_is_array(v)) {
            struct sdepreq *d = rein_arena_calloc(c->s->arena, 1, sizeof(*d));
            rein_err rc;
            if (!d)
                return oom(c);
            if ((rc = string_list(c, v, kw, key, &d->names, &d->n)))
                return rc;
            d->kw = kw;
            p->depreq = d;
        } else if (allow_schema) {
            p->depschema = compile_sub(c, v, kw, key, klen, res);
            if (!p->depschema)
                return c->err->code;
        } else {
            return kw_error(c, kw, "\"%.60s\" must be an array of strings, got %s", key,
                            rein_json_type_name(v));
        }
        n->has_dependents = true;
    }
    n->has |= KW_OBJECT;
    return REIN_OK;
}

static rein_err compile_object_kws(struct comp *c, struct snode *n, json_t *obj, struct sres *res,
                                   bool validation, bool applicator)
{
    struct sdialect d = res->dialect;
    json_t *props = applicator ? json_object_get(obj, "properties") : NULL;
    json_t *pats = applicator ? json_object_get(obj, "patternProperties") : NULL;
    size_t cap = 0, tsize = 4;
    const char *key;
    size_t klen;
    json_t *v;
    rein_err rc;

    if (props && !json_is_object(props))
        return kw_error(c, "properties", "must be an object, got %s", rein_json_type_name(props));
    if (pats && !json_is_object(pats))
        return kw_error(c, "patternProperties", "must be an object, got %s",
                        rein_json_type_name(pats));
    if (applicator) {
        cap += obj_size(obj, "properties");
        cap += obj_size(obj, "dependencies");
        if (d.version != SV_DRAFT7)
            cap += obj_size(obj, "dependentSchemas");
    }
    if (validation) {
        cap += obj_size(obj, "required");
        if (d.version != SV_DRAFT7)
            cap += obj_size(obj, "dependentRequired");
    }
    if (cap) {
        while (tsize < cap * 2)
            tsize *= 2;
        n->props = rein_arena_calloc(c->s->arena, cap, sizeof(*n->props));
        n->prop_table = rein_arena_calloc(c->s->arena, tsize, sizeof(*n->prop_table));
        if (!n->props || !n->prop_table)
            return oom(c);
        n->prop_mask = tsize - 1;
    }
    if (props) {
        json_object_keylen_foreach(props, key, klen, v)
        {
            struct sprop *p = prop_get(n, key, klen);
            p->schema = compile_sub(c, v, "properties", key, klen, res);
            if (!p->schema)
                return c->err->code;
        }
        n->nprops_schema = n->nprops;
        n->has |= KW_OBJECT;
    }
    if (validation && (rc = compile_required(c, n, obj)))
        return rc;
    if (d.version == SV_DRAFT7) {
        if (applicator &&
            (rc = compile_dependents(c, n, obj, "dependencies", res, validation, true)))
            return rc;
    } else {
        /* "dependencies" was split in 2019-09; many schemas still use it. */
        if (applicator && validation &&
            (rc = compile_dependents(c, n, obj, "dependencies", res, true, true)))
            return rc;
        if (validation &&
            (rc = compile_dependents(c, n, obj, "dependentRequired", res, true, false)))
            return rc;
        if (applicator &&
            (rc = compile_dependents(c, n, obj, "dependentSchemas", res, false, true)))
            return rc;
    }
    if (pats && json_object_size(pats)) {
        size_t i = 0;
        n->pats = rein_arena_calloc(c->s->arena, json_object_size(pats), sizeof(*n->pats));
        if (!n->pats)
            return oom(c);
        json_object_keylen_foreach(pats, key, klen, v)
        {
            size_t m;
            if (rein__regex_compile(c->s, key, klen, &n->pats[i].re, c->err)) {
                if (c->err->code == REIN_ENOMEM)
                    return REIN_ENOMEM;
                char why[256];
                memcpy(why, c->err->msg, sizeof(why));
                if (push_seg(c, "patternProperties", 17, &m))
                    return REIN_ENOMEM;
                rc = kw_error(c, key, "invalid regular expression: %s", why);
                rein_buf_truncate(&c->path, m);
                return rc;
            }
            n->pats[i].schema = compile_sub(c, v, "patternProperties", key, klen, res);
            if (!n->pats[i].schema)
                return c->err->code;
            i++;
        }
        n->npats = i;
        n->has |= KW_OBJECT;
    }
    if (applicator) {
        if ((rc = schema_kw(c, obj, "additionalProperties", res, &n->additional)) ||
            (rc = schema_kw(c, obj, "propertyNames", res, &n->property_names)))
            return rc;
        if (n->additional || n->property_names)
            n->has |= KW_OBJECT;
    }
    if (validation) {
        bool p1, p2;
        if ((rc = count_kw(c, obj, "minProperties", &n->min_props, &p1)) ||
            (rc = count_kw(c, obj, "maxProperties", &n->max_props, &p2)))
            return rc;
        if (p1 || p2)
            n->has |= KW_OBJECT;
    }
    return REIN_OK;
}

/* ---- array keywords ----------------------------------------------------------------------- */

static rein_err compile_array_kws(struct comp *c, struct snode *n, json_t *obj, struct sres *res,
                                  bool validation, bool applicator)
{
    struct sdialect d = res->dialect;
    json_t *items = json_object_get(obj, "items");
    rein_err rc;
    bool p1, p2, p3, p4;

    if (applicator) {
        if (d.version == SV_2020) {
            if ((rc = schema_array(c, obj, "prefixItems", res, &n->prefix, &n->nprefix, true)))
                return rc;
            if (json_is_array(items))
                return kw_error(c, "items",
                                "must be a schema (use prefixItems for a tuple), got "
                                "array");
            if ((rc = schema_kw(c, obj, "items", res, &n->items)))
                return rc;
        } else if (json_is_array(items)) {
            if ((rc = schema_array(c, obj, "items", res, &n->prefix, &n->nprefix, false)) ||
                (rc = schema_kw(c, obj, "additionalItems", res, &n->items)))
                return rc;
            n->items_is_additional = n->items != NULL;
        } else if ((rc = schema_kw(c, obj, "items", res, &n->items))) {
            return rc;
        }
        if ((rc = schema_kw(c, obj, "contains", res, &n->contains)))
            return rc;
        if (n->prefix || n->items || n->contains)
            n->has |= KW_ARRAY;
    }
    if (validation) {
        json_t *u = json_object_get(obj, "uniqueItems");
        if (u && !json_is_boolean(u))
            return kw_error(c, "uniqueItems", "must be a boolean, got %s", rein_json_type_name(u));
        n->unique_items = json_is_true(u);
        if ((rc = count_kw(c, obj, "minItems", &n->min_items, &p1)) ||
            (rc = count_kw(c, obj, "maxItems", &n->max_items, &p2)))
            return rc;
        p3 = p4 = false;
        if (d.version != SV_DRAFT7 &&
            ((rc = count_kw(c, obj, "minContains", &n->min_contains, &p3)) ||
             (rc = count_kw(c, obj, "maxContains", &n->max_contains, &p4))))
            return rc;
        if (p1 || p2 || n->unique_items || ((p3 || p4) && n->contains))
            n->has |= KW_ARRAY;
    }
    return REIN_OK;
}

/* ---- everything else ---------------------------------------------------------------------- */

static rein_err compile_type(struct comp *c, struct snode *n, json_t *t)
{
    static const struct {
        const char *name;
        uint8_t bits;
    } names[] = {
        {"null", ST_NULL},       {"boolean", ST_BOOL},  {"object", ST_OBJECT},
        {"array", ST_ARRAY},     {"string", ST_STRING}, {"number", ST_NUMBER | ST_INTEGER},
        {"integer", ST_INTEGER},
    };
    size_t count = json_is_array(t) ? json_array_size(t) : 1;

    if (!json_is_string(t) && !json_is_array(t))
        return kw_error(c, "type", "must be a type name or an array of them, got %s",
                        rein_json_type_name(t));
    for (size_t i = 0; i < count; i++) {
        json_t *s = json_is_array(t) ? json_array_get(t, i) : t;
        size_t k;
        if (!json_is_string(s))
            return kw_error(c, "type", "must be a type name or an array of them, got %s",
                            rein_json_type_name(s));
        for (k = 0; k < REIN_ARRAY_SIZE(names); k++) {
            if (strcmp(json_string_value(s), names[k].name) == 0)
                break;
        }
        if (k == REIN_ARRAY_SIZE(names))
            return kw_error(c, "type",
                            "unknown type \"%.40s\" (expected null, boolean, object, array, "
                            "string, number or integer)",
                            json_string_value(s));
        n->types |= names[k].bits;
    }
    n->has |= KW_TYPE;
    return REIN_OK;
}

/* An enum of strings only (the usual case) is also kept as names for a quicker lookup. */
static rein_err string_enum(struct comp *c, struct snode *n, json_t *arr)
{
    size_t count = json_array_size(arr);

    for (size_t i = 0; i < count; i++) {
        if (!json_is_string(json_array_get(arr, i)))
            return REIN_OK;
    }
    n->enum_strs = rein_arena_calloc(c->s->arena, count ? count : 1, sizeof(*n->enum_strs));
    if (!n->enum_strs)
        return oom(c);
    for (size_t i = 0; i < count; i++) {
        json_t *s = json_array_get(arr, i);
        struct sprop *e = &n->enum_strs[i];
        e->name = json_string_value(s);
        e->len = json_string_length(s);
        e->head = rein__head8(e->name, e->len);
    }
    n->nenum_strs = count;
    return REIN_OK;
}

static rein_err compile_validation(struct comp *c, struct snode *n, json_t *obj)
{
    json_t *v;
    rein_err rc;
    bool p1, p2;

    if ((v = json_object_get(obj, "type")) && (rc = compile_type(c, n, v)))
        return rc;
    if ((v = json_object_get(obj, "const"))) {
        n->const_value = v;
        n->has |= KW_CONST;
    }
    if ((v = json_object_get(obj, "enum"))) {
        if (!json_is_array(v))
            return kw_error(c, "enum", "must be an array, got %s", rein_json_type_name(v));
        n->enum_value = v;
        n->has |= KW_ENUM;
        if ((rc = string_enum(c, n, v)))
            return rc;
    }
    if ((rc = num_kw(c, obj, "minimum", &n->minimum)) ||
        (rc = num_kw(c, obj, "maximum", &n->maximum)) ||
        (rc = num_kw(c, obj, "multipleOf", &n->multiple_of)))
        return rc;
    if (n->multiple_of && !(n->multiple_of->d > 0))
        return kw_error(c, "multipleOf", "must be greater than 0");
    /* The draft-04 form, "exclusiveMinimum": true next to "minimum", is still common in
     * tool schemas; it means the same as the number form, so it is accepted. */
    v = json_object_get(obj, "exclusiveMinimum");
    if (json_is_boolean(v)) {
        if (json_is_true(v) && !n->minimum)
            return kw_error(c, "exclusiveMinimum", "true needs \"minimum\" next to it");
        if (json_is_true(v)) {
            n->xminimum = n->minimum;
            n->minimum = NULL;
        }
    } else if ((rc = num_kw(c, obj, "exclusiveMinimum", &n->xminimum))) {
        return rc;
    }
    v = json_object_get(obj, "exclusiveMaximum");
    if (json_is_boolean(v)) {
        if (json_is_true(v) && !n->maximum)
            return kw_error(c, "exclusiveMaximum", "true needs \"maximum\" next to it");
        if (json_is_true(v)) {
            n->xmaximum = n->maximum;
            n->maximum = NULL;
        }
    } else if ((rc = num_kw(c, obj, "exclusiveMaximum", &n->xmaximum))) {
        return rc;
    }
    if (n->minimum || n->maximum || n->multiple_of || n->xminimum || n->xmaximum)
        n->has |= KW_NUMERIC;
    if ((rc = count_kw(c, obj, "minLength", &n->min_length, &p1)) ||
        (rc = count_kw(c, obj, "maxLength", &n->max_length, &p2)))
        return rc;
    if (p1 || p2)
        n->has |= KW_STRING;
    if ((v = json_object_get(obj, "pattern"))) {
        if (!json_is_string(v))
            return kw_error(c, "pattern", "must be a string, got %s", rein_json_type_name(v));
        n->pattern = rein_arena_calloc(c->s->arena, 1, sizeof(*n->pattern));
        if (!n->pattern)
            return oom(c);
        if (rein__regex_compile(c->s, json_string_value(v), json_string_length(v), n->pattern,
                                c->err)) {
            char why[256];
            if (c->err->code == REIN_ENOMEM)
                return REIN_ENOMEM;
            memcpy(why, c->err->msg, sizeof(why));
            return kw_error(c, "pattern", "invalid regular expression: %s", why);
        }
        n->has |= KW_STRING;
    }
    return REIN_OK;
}

static rein_err compile_combinators(struct comp *c, struct snode *n, json_t *obj, struct sres *res)
{
    rein_err rc;

    if ((rc = schema_array(c, obj, "allOf", res, &n->all_of, &n->nall_of, true)) ||
        (rc = schema_array(c, obj, "anyOf", res, &n->any_of, &n->nany_of, true)) ||
        (rc = schema_array(c, obj, "oneOf", res, &n->one_of, &n->none_of, true)) ||
        (rc = schema_kw(c, obj, "not", res, &n->not_schema)) ||
        (rc = schema_kw(c, obj, "if", res, &n->if_schema)) ||
        (rc = schema_kw(c, obj, "then", res, &n->then_schema)) ||
        (rc = schema_kw(c, obj, "else", res, &n->else_schema)))
        return rc;
    if (n->nall_of || n->nany_of || n->none_of || n->not_schema || n->if_schema)
        n->has |= KW_COMBINE;
    return REIN_OK;
}

static rein_err compile_ref(struct comp *c, struct snode *n, json_t *obj, const char *kw,
                            enum pkind kind, struct sres *res)
{
    json_t *v = json_object_get(obj, kw);
    struct pending p = {.kind = kind, .node = n, .base = res->uri};
    char *kwpath;

    if (!v)
        return REIN_OK;
    if (!json_is_string(v))
        return kw_error(c, kw, "must be a string, got %s", rein_json_type_name(v));
    kwpath = rein_arena_printf(c->s->arena, "%s/%s", c->path.ptr, kw);
    if (!kwpath)
        return oom(c);
    p.ref = json_string_value(v);
    p.kwpath = kwpath;
    p.slot = kind == P_REF ? &n->ref : &n->dynref;
    n->has |= kind == P_REF ? KW_REF : KW_DYNREF;
    return add_pending(c, &p);
}

static rein_err compile_defs(struct comp *c, json_t *obj, const char *kw, struct sres *res)
{
    json_t *defs = json_object_get(obj, kw);
    const char *key;
    size_t klen;
    json_t *v;

    if (!defs)
        return REIN_OK;
    if (!json_is_object(defs))
        return kw_error(c, kw, "must be an object, got %s", rein_json_type_name(defs));
    json_object_keylen_foreach(defs, key, klen, v)
    {
        if (!compile_sub(c, v, kw, key, klen, res))
            return c->err->code;
    }
    return REIN_OK;
}

static rein_err compile_object(struct comp *c, struct snode *n, json_t *obj, struct sres *res)
{
    struct sdialect d = res->dialect;
    bool validation = d.vocab & VOC_VALIDATION;
    bool applicator = d.vocab & VOC_APPLICATOR;
    json_t *v;
    rein_err rc;

    if ((rc = compile_ref(c, n, obj, "$ref", P_REF, res)))
        return rc;
    if (d.version == SV_DRAFT7 && (n->has & KW_REF))
        return compile_defs(c, obj, "definitions", res); /* siblings of $ref are ignored */
    if (d.version == SV_2020 && (rc = compile_ref(c, n, obj, "$dynamicRef", P_DYNREF, res)))
        return rc;
    if (d.version == SV_2019 && (rc = compile_ref(c, n, obj, "$recursiveRef", P_REF, res)))
        return rc;
    if (validation && (rc = compile_validation(c, n, obj)))
        return rc;
    if ((rc = compile_object_kws(c, n, obj, res, validation, applicator)) ||
        (rc = compile_array_kws(c, n, obj, res, validation, applicator)))
        return rc;
    if (applicator && (rc = compile_combinators(c, n, obj, res)))
        return rc;
    if (d.version != SV_DRAFT7 && (d.vocab & VOC_UNEVALUATED)) {
        if ((rc = schema_kw(c, obj, "unevaluatedProperties", res, &n->uneval_props)) ||
            (rc = schema_kw(c, obj, "unevaluatedItems", res, &n->uneval_items)))
            return rc;
        if (n->uneval_props)
            n->has |= KW_UNEVAL_PROPS | KW_OBJECT;
        if (n->uneval_items)
            n->has |= KW_UNEVAL_ITEMS | KW_ARRAY;
    }
    v = json_object_get(obj, "format");
    if (v && (d.vocab & (VOC_FORMAT_ANNOTATION | VOC_FORMAT_ASSERTION))) {
        if (!json_is_string(v))
            return kw_error(c, "format", "must be a string, got %s", rein_json_type_name(v));
        n->format_name = json_string_value(v);
        n->format = (uint8_t)rein__format_id(n->format_name);
        n->format_assert = c->format_assert || (d.vocab & VOC_FORMAT_ASSERTION);
        if (n->format_assert && n->format != SF_NONE && n->format != SF_UNKNOWN)
            n->has |= KW_FORMAT | KW_STRING;
    }
    if (d.version == SV_DRAFT7 && c->format_assert) {
        v = json_object_get(obj, "contentMediaType");
        n->content_json =
            json_is_string(v) && strcmp(json_string_value(v), "application/json") == 0;
        v = json_object_get(obj, "contentEncoding");
        n->content_base64 = json_is_string(v) && strcmp(json_string_value(v), "base64") == 0;
        if (n->content_json || n->content_base64)
            n->has |= KW_STRING;
    }
    n->default_value = json_object_get(obj, "default");
    if ((rc = compile_defs(c, obj, "$defs", res)) ||
        (rc = compile_defs(c, obj, "definitions", res)))
        return rc;
    return REIN_OK;
}

static struct snode *compile_node(struct comp *c, json_t *v, struct sres *res)
{
    struct snode *n = rein__smap_get(&c->nodes, v);
    struct sres *own;
    rein_err rc;

    if (n)
        return n;
    if (c->depth >= SCHEMA_MAX_DEPTH) {
        rein_error_set(c->err, REIN_EDEPTH, "%.120s: schema nested deeper than %d levels",
                       c->path.ptr, SCHEMA_MAX_DEPTH);
        return NULL;
    }
    if (!json_is_object(v) && !json_is_boolean(v)) {
        rein_error_set(c->err, REIN_ESCHEMA,
                       "%.120s: a schema must be an object or a boolean, got %s",
                       c->path.len ? c->path.ptr : "/", rein_json_type_name(v));
        return NULL;
    }
    own = find_json_res(c, v);
    if (own)
        res = own;
    n = rein_arena_calloc(c->s->arena, 1, sizeof(*n));
    if (!n || !(n->path = rein_arena_strdup(c->s->arena, c->path.ptr)) ||
        !(n->res = get_cres(c, res)) || rein__smap_put(&c->nodes, v, n)) {
        oom(c);
        return NULL;
    }
    n->path_len = strlen(n->path); /* as written into errors: up to a NUL of a key */
    n->version = res->dialect.version;
    n->max_length = n->max_items = n->max_props = n->max_contains = SIZE_MAX;
    n->min_contains = 1;
    if (json_is_boolean(v)) {
        n->kind = json_is_true(v) ? SN_TRUE : SN_FALSE;
        return n;
    }
    c->depth++;
    rc = compile_object(c, n, v, res);
    c->depth--;
    if (rc) {
        if (c->err && c->err->code != rc)
            rein_error_set(c->err, rc, "%s", rein_strerror(rc));
        return NULL;
    }
    /* An object with no keyword that asserts anything behaves as true; the validator can
     * then skip it outright. */
    return n;
}

/* ---- reference resolution ----------------------------------------------------------------- */

/*
 * The resource at uri: in the schema's own documents, in the registry, or an embedded
 * metaschema. A registered document without $schema takes the dialect of the schema that
 * refers to it (version), so it is indexed again in that dialect when they differ.
 */
static struct sres *find_res(struct comp *c, const char *uri, uint8_t version)
{
    struct sres *r = rein__index_find(&c->s->local, uri);
    const char *text;
    json_t *doc;
    struct sdialect d = {SV_2020, VOC_DEFAULT};
    rein_error e;

    rein_error_clear(&e);
    if (r)
        return r;
    r = rein__index_find(c->reg, uri);
    if (r && !r->explicit_dialect && r->dialect.version != version) {
        d.version = version;
        if (rein__index_add(&c->s->local, r->doc_uri, r->doc, d, c->reg, &e))
            return NULL;
        return rein__index_find(&c->s->local, uri);
    }
    if (r)
        return r;
    text = rein__metaschema_text(uri);
    if (!text)
        return NULL;
    doc = rein_json_parse(text, strlen(text), 0, &e);
    if (!doc)
        return NULL;
    if (rein__index_add(&c->s->local, uri, doc, d, c->reg, &e)) {
        json_decref(doc);
        return NULL;
    }
    json_decref(doc);
    return rein__index_find(&c->s->local, uri);
}

static bool parse_index(const char *s, size_t len, size_t *out)
{
    size_t v = 0;

    if (len == 0 || (len > 1 && s[0] == '0'))
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > SIZE_MAX / 10 - 1)
            return false;
        v = v * 10 + (size_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* Walks a JSON Pointer fragment (already percent-decoded) from the resource root. */
static json_t *walk_pointer(struct comp *c, struct sres **res, const char *ptr)
{
    json_t *cur = (*res)->json;
    char tok[256];

    while (*ptr == '/') {
        const char *end = strchr(ptr + 1, '/');
        size_t raw = end ? (size_t)(end - ptr - 1) : strlen(ptr + 1);
        size_t n = 0, idx;
        for (size_t i = 0; i < raw; i++) {
            char ch = ptr[1 + i];
            if (ch == '~' && i + 1 < raw && (ptr[2 + i] == '0' || ptr[2 + i] == '1')) {
                ch = ptr[2 + i] == '0' ? '~' : '/';
                i++;
            }
            if (n + 1 >= sizeof(tok))
                return NULL;
            tok[n++] = ch;
        }
        tok[n] = '\0';
        if (json_is_object(cur))
            cur = json_object_getn(cur, tok, n);
        else if (json_is_array(cur) && parse_index(tok, n, &idx))
            cur = json_array_get(cur, idx);
        else
            cur = NULL;
        if (!cur)
            return NULL;
        struct sres *r = find_json_res(c, cur);
        if (r)
            *res = r;
        ptr += 1 + raw;
    }
    return cur;
}

static rein_err resolve(struct comp *c, const struct pending *p, json_t **target,
                        struct sres **tres, const struct sanchor **anchor)
{
    char *full = rein__uri_resolve(p->base, p->ref);
    char frag[1024];
    size_t blen;
    struct sres *res;
    rein_err rc = REIN_OK;

    *anchor = NULL;
    if (!full)
        return oom(c);
    blen = rein__uri_base_len(full);
    bool has_frag = full[blen] == '#';
    full[blen] = '\0';
    res = find_res(c, full, p->node->version);
    if (!res) {
        rc = rein_error_set(c->err, REIN_ENOTFOUND,
                            "%.100s: cannot resolve \"%.120s\": remote documents are not "
                            "fetched; register it with rein_schema_registry_add()",
                            p->kwpath, p->ref);
        goto out;
    }
    const char *f = has_frag ? full + blen + 1 : "";
    if (!rein__uri_pct_decode(f, strlen(f), frag, sizeof(frag))) {
        rc = rein_error_set(c->err, REIN_ESCHEMA, "%.100s: malformed fragment in \"%.120s\"",
                            p->kwpath, p->ref);
        goto out;
    }
    if (frag[0] == '\0') {
        *target = res->json;
        *tres = res;
        rein_buf_reset(&c->path);
        rc = rein_buf_adds(&c->path, res->path) ? oom(c) : REIN_OK;
    } else if (frag[0] == '/') {
        *tres = res;
        *target = walk_pointer(c, tres, frag);
        rein_buf_reset(&c->path);
        if ((rein_buf_adds(&c->path, res->path) || rein_buf_adds(&c->path, frag)))
            rc = oom(c);
    } else {
        const struct sanchor *a;
        for (a = res->anchors; a; a = a->next) {
            if (strcmp(a->name, frag) == 0)
                break;
        }
        *target = a ? a->json : NULL;
        *tres = res;
        *anchor = a;
        rein_buf_reset(&c->path);
        if (a && rein_buf_adds(&c->path, a->path))
            rc = oom(c);
    }
    if (!rc && !*target)
        rc = rein_error_set(c->err, REIN_ENOTFOUND, "%.100s: \"%.120s\" points at nothing",
                            p->kwpath, p->ref);
out:
    rein_free(full);
    return rc;
}

static rein_err run_pending(struct comp *c)
{
    for (size_t i = 0; i < c->npend; i++) {
        struct pending p = c->pend[i];
        json_t *target;
        struct sres *tres;
        const struct sanchor *anchor = NULL;
        struct snode *n;
        rein_err rc;

        if (p.kind == P_DYNANCHOR) {
            rein_buf_reset(&c->path);
            if (rein_buf_adds(&c->path, p.tpath))
                return oom(c);
            target = p.target;
            tres = p.res;
        } else if ((rc = resolve(c, &p, &target, &tres, &anchor))) {
            return rc;
        }
        n = compile_node(c, target, tres);
        if (!n)
            return c->err->code;
        *p.slot = n;
        if (p.kind == P_DYNREF && anchor && anchor->dynamic)
            p.node->dynref_anchor = anchor->name;
    }
    return REIN_OK;
}

/* ---- reference cycles --------------------------------------------------------------------- */

/* The i-th subschema n always applies to the same value it is applied to ($ref, allOf). */
static struct snode *inplace_edge(const struct snode *n, size_t i)
{
    if (n->kind != SN_SCHEMA)
        return NULL;
    if (n->ref) {
        if (i == 0)
            return n->ref;
        i--;
    }
    return i < n->nall_of ? n->all_of[i] : NULL;
}

/*
 * Rejects a schema that reaches itself through $ref and allOf alone: evaluating it would apply
 * the same schema to the same value forever. (Cycles through conditional applicators such as
 * anyOf or if/then are caught while validating instead.) Iterative depth-first search, so a
 * long chain of references does not grow the C stack.
 */
static rein_err find_cycles(struct comp *c)
{
    struct dfs {
        struct snode *node;
        size_t next;
    } * stack;
    size_t cap = c->nodes.n + 1;
    rein_err rc = REIN_OK;

    stack = rein_calloc(cap, sizeof(*stack));
    if (!stack)
        return oom(c);
    for (size_t e = 0; e < c->nodes.cap && !rc; e++) {
        struct snode *start = c->nodes.e[e].key ? c->nodes.e[e].val : NULL;
        size_t top = 0;
        if (!start || start->mark)
            continue;
        stack[top++] = (struct dfs){start, 0};
        start->mark = 1;
        while (top && !rc) {
            struct dfs *f = &stack[top - 1];
            struct snode *next = inplace_edge(f->node, f->next++);
            if (!next) {
                f->node->mark = 2;
                top--;
            } else if (next->mark == 1) {
                rc = rein_error_set(c->err, REIN_ESCHEMA,
                                    "%.100s: reference cycle: \"%.100s\" applies itself to the "
                                    "same value through $ref/allOf without end",
                                    f->node->path[0] ? f->node->path : "/",
                                    next->path[0] ? next->path : "/");
            } else if (!next->mark && top < cap) {
                next->mark = 1;
                stack[top++] = (struct dfs){next, 0};
            }
        }
    }
    rein_free(stack);
    return rc;
}

/* ---- public API --------------------------------------------------------------------------- */

static void *pcre_malloc(size_t size, void *data)
{
    (void)data;
    return rein_malloc(size);
}

static void pcre_free(void *ptr, void *data)
{
    (void)data;
    rein_free(ptr);
}

void rein_schema_free(rein_schema *schema)
{
    if (!schema)
        return;
    for (size_t i = 0; i < schema->nregexes; i++)
        pcre2_code_free(schema->regexes[i]->code);
    for (size_t i = 0; i < SCHEMA_MD_SLOTS; i++)
        pcre2_match_data_free(schema->md_slots[i]);
    rein_free(schema->regexes);
    pcre2_match_context_free(schema->mctx);
    pcre2_compile_context_free(schema->cctx);
    pcre2_general_context_free(schema->gctx);
    rein__index_release(&schema->local);
    rein_arena_free(schema->arena);
    rein_free(schema);
}

enum rein_schema_dialect rein_schema_dialect_of(const rein_schema *schema)
{
    return schema ? schema->dialect : REIN_SCHEMA_DIALECT_DEFAULT;
}

static rein_schema *schema_alloc(void)
{
    rein_schema *s = rein_calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    s->arena = rein_arena_new(0);
    if (!s->arena || rein__index_init(&s->local)) {
        rein_arena_free(s->arena);
        rein_free(s);
        return NULL;
    }
    s->gctx = pcre2_general_context_create(pcre_malloc, pcre_free, NULL);
    s->cctx = s->gctx ? pcre2_compile_context_create(s->gctx) : NULL;
    s->mctx = s->gctx ? pcre2_match_context_create(s->gctx) : NULL;
    if (!s->cctx || !s->mctx) {
        rein_schema_free(s);
        return NULL;
    }
    /* Bound backtracking so a pathological pattern fails instead of hanging. */
    pcre2_set_match_limit(s->mctx, 1000000);
    pcre2_set_depth_limit(s->mctx, 10000);
    pcre2_set_parens_nest_limit(s->cctx, 200);
    return s;
}

rein_schema *rein_schema_compile(json_t *schema, const struct rein_schema_options *opts,
                                 rein_error *err)
{
    static const struct rein_schema_options none = {0};
    struct comp c = {0};
    rein_error local_err;
    struct sdialect d = {SV_2020, VOC_DEFAULT};
    struct sres *root;
    rein_err rc;

    if (!err)
        err = &local_err;
    rein_error_clear(err);
    if (!opts)
        opts = &none;
    if (!schema) {
        rein_error_set(err, REIN_EINVAL, "no schema given");
        return NULL;
    }
    if (opts->dialect == REIN_SCHEMA_DIALECT_DRAFT7)
        d.version = SV_DRAFT7;
    else if (opts->dialect == REIN_SCHEMA_DIALECT_2019_09)
        d.version = SV_2019;
    rein__members_init();
    c.s = schema_alloc();
    if (!c.s) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    c.reg = opts->registry ? &opts->registry->ix : NULL;
    c.format_assert = opts->format_assert;
    c.err = err;
    rein__smap_init(&c.nodes, true);
    rein__smap_init(&c.cres, true);
    rein_buf_init(&c.path, 0);
    rc = rein__index_add(&c.s->local, opts->base_uri, schema, d, c.reg, err);
    if (rc)
        goto fail;
    root = rein__index_find_json(&c.s->local, schema);
    c.s->dialect = root->dialect.version == SV_DRAFT7 ? REIN_SCHEMA_DIALECT_DRAFT7
                   : root->dialect.version == SV_2019 ? REIN_SCHEMA_DIALECT_2019_09
                                                      : REIN_SCHEMA_DIALECT_2020_12;
    c.s->root = compile_node(&c, schema, root);
    if (!c.s->root) {
        rc = err->code ? err->code : REIN_ESCHEMA;
        goto fail;
    }
    rc = run_pending(&c);
    if (!rc)
        rc = find_cycles(&c);
    if (!rc && (rc = rein__verdict_build(c.s)))
        rein_error_set(err, rc, "out of memory");
    if (rc)
        goto fail;
    for (size_t i = 0; c.s->uses_regex && i < SCHEMA_MD_SLOTS; i++) {
        c.s->md_slots[i] = pcre2_match_data_create(1, c.s->gctx);
        if (!c.s->md_slots[i]) {
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
            goto fail;
        }
    }
    rein__smap_release(&c.nodes);
    rein__smap_release(&c.cres);
    rein_free(c.pend);
    rein_buf_release(&c.path);
    return c.s;
fail:
    if (err->code == 0)
        rein_error_set(err, rc, "%s", rein_strerror(rc));
    rein_error_where(err, "schema");
    rein__smap_release(&c.nodes);
    rein__smap_release(&c.cres);
    rein_free(c.pend);
    rein_buf_release(&c.path);
    rein_schema_free(c.s);
    return NULL;
}
