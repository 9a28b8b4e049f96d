/*
 * The instance-form macros for rein_doc nodes (rein/doc.h): a container's members and items
 * follow it. See vi_tree.h; no include guard for the macros, as each inclusion switches the
 * form.
 */
#ifndef REIN_SCHEMA_VI_DOC_H
#define REIN_SCHEMA_VI_DOC_H

static inline bool rein__doc_member(const struct rein_doc_node **it,
                                    const struct rein_doc_node *end, const char **key, size_t *len,
                                    const struct rein_doc_node **val)
{
    const struct rein_doc_node *k = *it;

    if (k == end)
        return false;
    *key = k->u.str;
    *len = k->n;
    *val = k + 1;
    *it = rein_doc_next(k + 1);
    return true;
}

static inline const struct rein_doc_node *rein__doc_item(const struct rein_doc_node **it)
{
    const struct rein_doc_node *v = *it;

    *it = rein_doc_next(v);
    return v;
}

static inline void rein__ival_of_doc(struct rein__ival *iv, const struct rein_doc_node *v)
{
    iv->type = v->type;
    iv->str = v->type == JSON_STRING ? v->u.str : NULL;
    iv->len = v->type == JSON_STRING ? v->n : 0;
    iv->i = v->type == JSON_INTEGER ? v->u.i : 0;
    iv->d = v->type == JSON_REAL ? v->u.d : 0;
}
#endif

#include "schema/vi_undef.h"

#define VI                   const struct rein_doc_node *
#define VI_TYPE(v)           ((v)->type)
#define VI_REAL(v)           ((v)->u.d)
#define VI_STR(v)            ((v)->u.str)
#define VI_LEN(v)            ((size_t)(v)->n)
#define VI_OSIZE(v)          ((size_t)(v)->n)
#define VI_ASIZE(v)          ((size_t)(v)->n)
#define VI_MEMBERS(v)        const struct rein_doc_node *m_ = (v) + 1, *end_ = (v) + (v)->u.skip
#define VI_MEMBER(k, n, val) rein__doc_member(&m_, end_, &(k), &(n), &(val))
#define VI_ITEMS(v)          const struct rein_doc_node *i_ = (v) + 1
#define VI_ITEM()            rein__doc_item(&i_)
#define VI_IVAL(iv, v)       rein__ival_of_doc(iv, v)
