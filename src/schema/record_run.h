/*
 * Recording errors along the verdict program, over one instance form (included by validate.c
 * once per form, after vi_tree.h or vi_doc.h; the macros are verdict_run.h's). With a result
 * to fill, the verdict program's entries are walked here instead of the nodes (decision
 * 0051): the same pass as verdict_run.h's, over the same flattened entries, but with the
 * instance location kept and every error written by the walker's own writers, in the order
 * the walker finds them (type, then the keywords of the type the value has; minProperties,
 * the members in the instance's order, then the missing required names; minItems, then the
 * items). Anything undecided (too deep, a hard error) sets st->hard, and the caller walks the
 * whole instance again instead.
 *
 * What reads a value beyond the macros is the form's own, defined before the inclusion:
 *   FN(rec_enum)(st, node, v, ip)        an all-strings enum's check and error
 *   FN(rec_required)(st, op, v, ip)      the errors of the required names v lacks
 *   FN(rec_general)(st, op, v, ip, depth) the node walker on a general entry
 * and VI_IVAL(iv, v) reads a value for a message.
 */

static bool FN(rec_run)(struct vstate *st, const struct vop *op, VI v, const struct ipath *ip,
                        int depth);

static bool FN(rec_object)(struct vstate *st, const struct vop *op, VI v, const struct ipath *ip,
                           int depth)
{
    const struct snode *n = op->node;
    const struct vop *prog = st->schema->prog;
    const char *key;
    size_t len;
    VI val;
    uint32_t found = 0, hint = 0;
    bool ok = true;

    if (op->min || op->max != SIZE_MAX) {
        size_t size = VI_OSIZE(v);
        if ((size < op->min || size > op->max) &&
            !count_fail(st, n, 0, size, op->min, op->max, ip)) {
            ok = false;
            if (BAIL(st))
                return false;
        }
    }
    VI_MEMBERS(v);
    while (VI_MEMBER(key, len, val)) {
        const struct vprop *p = rein__vprop_find(op, key, len, &hint);
        uint32_t sub = op->sub;
        bool named = false;
        if (p) {
            found += p->required;
            if ((p->plain >> VI_TYPE(val)) & 1)
                continue;
            if (p->sub != VNONE) {
                sub = p->sub;
                named = true;
            }
        }
        if (sub == VNONE)
            continue;
        const struct vop *c = &prog[sub];
        if (c->kind == VK_TRUE && VI_TYPE_OK(c, val))
            continue;
        struct ipath kip = {ip, key, len};
        if (c->kind == VK_FALSE || (c->kind == VK_GENERAL && c->node->kind == SN_FALSE)) {
            ok = named ? member_false(st, n, "properties", "property ", key, len, ip)
                       : member_false(st, n, "additionalProperties", "additional property ", key,
                                      len, ip);
        } else if (!FN(rec_run)(st, c, val, &kip, depth + 1)) {
            ok = false;
        }
        if (!ok && BAIL(st))
            return false;
    }
    if (found < op->nrequired && !FN(rec_required)(st, op, v, ip))
        ok = false;
    return ok;
}

static bool FN(rec_array)(struct vstate *st, const struct vop *op, VI v, const struct ipath *ip,
                          int depth)
{
    const struct snode *n = op->node;
    size_t size = VI_ASIZE(v);
    bool ok = true;

    if ((size < op->min || size > op->max) && !count_fail(st, n, 1, size, op->min, op->max, ip)) {
        ok = false;
        if (BAIL(st))
            return false;
    }
    if (op->sub == VNONE || !size)
        return ok;
    const struct vop *c = &st->schema->prog[op->sub];
    if (c->kind == VK_FALSE || (c->kind == VK_GENERAL && c->node->kind == SN_FALSE))
        return items_false(st, n, size, ip);
    VI_ITEMS(v);
    for (size_t i = 0; i < size; i++) {
        struct ipath iip = {ip, NULL, i};
        if (!FN(rec_run)(st, c, VI_ITEM(), &iip, depth + 1)) {
            ok = false;
            if (BAIL(st))
                return false;
        }
    }
    return ok;
}

static bool FN(rec_run)(struct vstate *st, const struct vop *op, VI v, const struct ipath *ip,
                        int depth)
{
    const struct snode *n = op->node;
    struct rein__ival iv;
    bool ok = true;

    if (depth >= SCHEMA_MAX_DEPTH) {
        st->hard = REIN_EDEPTH; /* the caller walks the whole instance instead */
        return false;
    }
    if (op->kind == VK_GENERAL)
        return FN(rec_general)(st, op, v, ip, depth);
    if (op->kind == VK_FALSE) { /* false; true is VK_TRUE with every type */
        VI_IVAL(&iv, v);
        return false_error(st, n, &iv, ip);
    }
    /* The program's types are the node's (verdict.c): failing them is failing "type". */
    if (!VI_TYPE_OK(op, v)) {
        VI_IVAL(&iv, v);
        ok = type_error(st, n, &iv, ip);
        if (BAIL(st))
            return false;
    }
    switch (op->kind) {
    case VK_ENUM:
        ok &= FN(rec_enum)(st, n, v, ip);
        break;
    case VK_OBJECT:
        if (VI_TYPE(v) == JSON_OBJECT)
            ok &= FN(rec_object)(st, op, v, ip, depth);
        break;
    case VK_ARRAY:
        if (VI_TYPE(v) == JSON_ARRAY)
            ok &= FN(rec_array)(st, op, v, ip, depth);
        break;
    default:
        break;
    }
    return ok && !st->hard;
}
