/*
 * The verdict program: a flat second form of a compiled schema that decides valid or invalid,
 * and counts the errors, without the node walker's bookkeeping (no instance-location frames,
 * no error records, no dynamic scope), built once by rein_schema_compile.
 *
 * Tool schemas are objects of typed properties, a required list and perhaps enums and arrays;
 * deciding them is a type test folded into each entry (a bit per jansson type), one pass over
 * the instance's members (read through members.c) with each name found among the schema's
 * properties by length and bytes (or a hash for larger objects), and required names counted
 * on the way instead of looked up afterwards. Any node with another keyword becomes a
 * VK_GENERAL entry that asks the node walker about its subtree, so every keyword keeps one
 * implementation. In the all-errors count the program records what the walker would: a wrong
 * type does not stop the keywords of the type the value has, each missing required name is
 * one error, "items": false one for the whole array.
 *
 * Only nodes reached through properties, additionalProperties and items are flattened: these
 * always apply to a member or item of the instance, so no in-place cycle can pass through the
 * program, and nodes of resources with dynamic anchors are left general, so the node walker,
 * called for a general entry, needs no frames above it (for reference cycles or the dynamic
 * scope). Nodes shared by several parents are flattened once.
 */
#include "schema/schema_int.h"

#include <string.h>

struct vbuild {
    rein_schema *schema;
    struct vop *ops;
    size_t n, cap;
    struct smap seen; /* struct snode * -> its entry's index (in the arena) */
};

static uint8_t json_types_of(unsigned st)
{
    uint8_t t = 0;

    if (st & ST_OBJECT)
        t |= 1u << JSON_OBJECT;
    if (st & ST_ARRAY)
        t |= 1u << JSON_ARRAY;
    if (st & ST_STRING)
        t |= 1u << JSON_STRING;
    if (st & (ST_NUMBER | ST_INTEGER))
        t |= 1u << JSON_INTEGER | 1u << JSON_REAL;
    if (st & ST_BOOL)
        t |= 1u << JSON_TRUE | 1u << JSON_FALSE;
    if (st & ST_NULL)
        t |= 1u << JSON_NULL;
    return t;
}

/* The entry kind node n can be flattened to, or VK_GENERAL. */
static enum vkind kind_of(const struct snode *n)
{
    uint32_t has = n->has;

    if (n->kind != SN_SCHEMA)
        return n->kind == SN_TRUE ? VK_TRUE : VK_FALSE;
    /* A resource with dynamic anchors takes part in resolving a $dynamicRef below it, which
     * the walker does through its frames: the program keeps none, so such nodes stay its. */
    if (has & ~(uint32_t)(KW_TYPE | KW_ENUM | KW_OBJECT | KW_ARRAY) || n->res->ndyn)
        return VK_GENERAL;
    if (has & KW_ENUM)
        return (has & (KW_OBJECT | KW_ARRAY)) || !n->enum_strs ? VK_GENERAL : VK_ENUM;
    if ((has & KW_OBJECT) && (has & KW_ARRAY))
        return VK_GENERAL;
    if (has & KW_OBJECT)
        return n->npats || n->property_names || n->has_dependents || n->uneval_props ||
                       n->nprops > UINT32_MAX / 2
                   ? VK_GENERAL
                   : VK_OBJECT;
    if (has & KW_ARRAY)
        return n->nprefix || n->contains || n->unique_items || n->uneval_items ? VK_GENERAL
                                                                               : VK_ARRAY;
    return VK_TRUE;
}

static uint32_t build(struct vbuild *b, const struct snode *n, int depth, rein_err *rc);

/* The entry of a subschema, VNONE when absent; *rc set on failure. */
static uint32_t build_sub(struct vbuild *b, const struct snode *n, int depth, rein_err *rc)
{
    return n && !*rc ? build(b, n, depth + 1, rc) : VNONE;
}

static rein_err build_object(struct vbuild *b, uint32_t at, const struct snode *n, int depth)
{
    struct vprop *props = NULL;
    rein_err rc = REIN_OK;
    uint32_t add;

    size_t text = 0;
    char *names = NULL;

    /* The names are copied next to each other, so that finding a member's name reads a few
     * lines of the program instead of the schema document's scattered strings. */
    for (size_t i = 0; i < n->nprops; i++)
        text += n->props[i].len + 1;
    if (n->nprops) {
        props = rein_arena_calloc(b->schema->arena, n->nprops, sizeof(*props));
        names = rein_arena_alloc(b->schema->arena, text);
        if (!props || !names)
            return REIN_ENOMEM;
    }
    for (size_t i = 0; i < n->nprops; i++) {
        const struct sprop *p = &n->props[i];
        memcpy(names, p->name, p->len);
        names[p->len] = '\0';
        props[i] = (struct vprop){names, (uint32_t)p->len, VNONE, p->hash, p->required_bit >= 0, 0};
        names += p->len + 1;
        props[i].sub = build_sub(b, p->schema, depth, &rc);
        if (rc)
            return rc;
        /* The entry's kind and types are set before anything below it is built, so they are
         * final here even when the entry is still being built (a cycle). */
        if (props[i].sub != VNONE && b->ops[props[i].sub].kind == VK_TRUE) {
            const struct vop *c = &b->ops[props[i].sub];
            props[i].plain = c->integral ? (uint8_t)(c->jtypes & ~(1u << JSON_REAL)) : c->jtypes;
        }
    }
    add = build_sub(b, n->additional, depth, &rc);
    if (rc)
        return rc;
    /* b->ops may have moved while the subschemas were built: index it only now. */
    b->ops[at].n = (uint32_t)n->nprops;
    b->ops[at].nrequired = (uint32_t)n->nrequired;
    b->ops[at].sub = add;
    b->ops[at].min = n->min_props;
    b->ops[at].max = n->max_props;
    b->ops[at].props = props;
    b->ops[at].table = n->prop_table;
    b->ops[at].mask = n->prop_mask;
    return REIN_OK;
}

static uint32_t build(struct vbuild *b, const struct snode *n, int depth, rein_err *rc)
{
    const uint32_t *seen = rein__smap_get(&b->seen, n);
    enum vkind kind = kind_of(n);
    uint32_t at, *slot;
    struct vop *op;

    if (seen)
        return *seen;
    if (b->n == b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 16;
        struct vop *nops = rein_realloc(b->ops, ncap * sizeof(*nops));
        if (!nops) {
            *rc = REIN_ENOMEM;
            return VNONE;
        }
        b->ops = nops;
        b->cap = ncap;
    }
    at = (uint32_t)b->n++;
    slot = rein_arena_alloc(b->schema->arena, sizeof(*slot));
    if (slot)
        *slot = at;
    if (!slot || rein__smap_put(&b->seen, n, slot)) {
        *rc = REIN_ENOMEM;
        return VNONE;
    }
    if (depth >= SCHEMA_MAX_DEPTH)
        kind = VK_GENERAL;
    op = &b->ops[at];
    *op = (struct vop){.kind = (uint8_t)kind, .jtypes = 0xff, .sub = VNONE, .node = n};
    if (kind == VK_GENERAL)
        return at;
    if (kind == VK_FALSE)
        op->jtypes = 0;
    if (n->has & KW_TYPE) {
        op->jtypes = json_types_of(n->types);
        op->integral = (n->types & ST_INTEGER) && !(n->types & ST_NUMBER);
    }
    if (kind == VK_ENUM) {
        op->enums = n->enum_strs;
        op->n = (uint32_t)n->nenum_strs;
    } else if (kind == VK_OBJECT) {
        *rc = build_object(b, at, n, depth);
    } else if (kind == VK_ARRAY) {
        uint32_t items = build_sub(b, n->items, depth, rc);
        b->ops[at].sub = items;
        b->ops[at].min = n->min_items;
        b->ops[at].max = n->max_items;
    }
    return at;
}

rein_err rein__verdict_build(rein_schema *schema)
{
    struct vbuild b = {schema, NULL, 0, 0, {0}};
    rein_err rc = REIN_OK;
    struct vop *ops;

    rein__smap_init(&b.seen, true);
    build(&b, schema->root, 0, &rc);
    if (!rc && b.ops[0].kind != VK_GENERAL) {
        ops = rein_arena_alloc(schema->arena, b.n * sizeof(*ops));
        if (ops) {
            memcpy(ops, b.ops, b.n * sizeof(*ops));
            schema->prog = ops;
        } else {
            rc = REIN_ENOMEM;
        }
    }
    rein__smap_release(&b.seen);
    rein_free(b.ops);
    return rc;
}

/* ---- running it --------------------------------------------------------------------------- */

/* What a run is asked: the first error only, or the number of errors the walker would find. */
struct vrun {
    const rein_schema *s;
    bool all;
};

/* Adds r, a member's or an item's errors, to *errs; true when the run stops here (the first
 * error, or undecided). */
static inline bool add(const struct vrun *x, long *errs, long r)
{
    if (r < 0) {
        *errs = -1;
        return true;
    }
    *errs += r;
    return *errs && !x->all;
}

/* jansson values: members read through members.c. */
#include "schema/vi_tree.h"
#define VI_PROBE(x, n, v, d) rein__schema_probe((x)->s, n, v, d, (x)->all)
#define FN(name)             name
#include "schema/verdict_run.h"
#undef VI_PROBE
#undef FN

/* The node walker's count for a general entry reached in a document: it reads jansson values,
 * so the subtree (only it) is made into one. -1 when memory runs out: the caller then walks
 * the whole tree, and finds out the same. */
static long probe_doc(const struct vrun *x, const struct snode *n, const struct rein_doc_node *v,
                      int depth)
{
    json_t *t = rein_doc_node_tree(v);
    long r = t ? rein__schema_probe(x->s, n, t, depth, x->all) : -1;

    json_decref(t);
    return r;
}

/* rein_doc nodes: a container's members and items follow it. */
#include "schema/vi_doc.h"
#define VI_PROBE(x, n, v, d) probe_doc(x, n, v, d)
#define FN(name)             name##_doc
#include "schema/verdict_run.h"
#undef VI_PROBE
#undef FN

long rein__verdict_run(const rein_schema *schema, json_t *inst, bool all)
{
    struct vrun x = {schema, all};

    return schema->prog ? run(&x, schema->prog, inst, 0) : -1;
}

long rein__verdict_run_doc(const rein_schema *schema, const struct rein_doc_node *inst, bool all)
{
    struct vrun x = {schema, all};

    return schema->prog ? run_doc(&x, schema->prog, inst, 0) : -1;
}
