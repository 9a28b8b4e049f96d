/*
 * The verdict program's run over one instance form (included by verdict.c once per form):
 * jansson values and rein_doc nodes. The program is one text; the form only changes how a
 * value's type, a string, a real, an object's members and an array's items are read:
 *   VI                   the instance type
 *   VI_TYPE(v)           its json_type
 *   VI_REAL(v)           a real's value
 *   VI_STR(v), VI_LEN(v) a string's bytes and length
 *   VI_OSIZE(v)          an object's member count; VI_ASIZE(v) an array's item count
 *   VI_MEMBERS(v), VI_MEMBER(key, len, val)  start and step through an object's members
 *   VI_ITEMS(v), VI_ITEM()                    start and step through an array's items
 *   VI_PROBE(x, node, v, depth)              the node walker's count for a general entry
 *   FN(name)             the name of this form's copy of a function
 */

static long FN(run)(const struct vrun *x, const struct vop *op, VI v, int depth);

static long FN(run_object)(const struct vrun *x, const struct vop *op, VI v, int depth)
{
    const char *key;
    size_t len;
    VI val;
    uint32_t found = 0, hint = 0;
    long errs = 0;

    if (op->min || op->max != SIZE_MAX) {
        size_t size = VI_OSIZE(v);
        if ((size < op->min || size > op->max) && add(x, &errs, 1))
            return errs;
    }
    VI_MEMBERS(v);
    while (VI_MEMBER(key, len, val)) {
        const struct vprop *p = rein__vprop_find(op, key, len, &hint);
        uint32_t sub = op->sub;
        if (p) {
            found += p->required;
            if ((p->plain >> VI_TYPE(val)) & 1)
                continue;
            if (p->sub != VNONE)
                sub = p->sub;
        }
        if (sub == VNONE)
            continue;
        const struct vop *c = &x->s->prog[sub];
        /* Most properties are a type alone: no call for them. */
        if (c->kind == VK_TRUE && VI_TYPE_OK(c, val))
            continue;
        if (add(x, &errs, c->kind == VK_TRUE ? 1 : FN(run)(x, c, val, depth + 1)))
            return errs;
    }
    /* Every required name missing is one error. */
    return errs + (long)(op->nrequired - found);
}

static long FN(run_array)(const struct vrun *x, const struct vop *op, VI v, int depth)
{
    size_t size = VI_ASIZE(v);
    long errs = 0;

    if ((size < op->min || size > op->max) && add(x, &errs, 1))
        return errs;
    if (op->sub == VNONE || !size)
        return errs;
    if (x->s->prog[op->sub].kind == VK_FALSE)
        return errs + 1; /* "items": false is one error, whatever the number of items */
    VI_ITEMS(v);
    for (size_t i = 0; i < size; i++) {
        if (add(x, &errs, FN(run)(x, &x->s->prog[op->sub], VI_ITEM(), depth + 1)))
            return errs;
    }
    return errs;
}

static bool FN(enum_ok)(const struct vop *op, VI v)
{
    const char *str;
    size_t len;

    if (VI_TYPE(v) != JSON_STRING)
        return false;
    str = VI_STR(v);
    len = VI_LEN(v);
    for (uint32_t i = 0; i < op->n; i++) {
        if (op->enums[i].len == len && rein__bytes_eq(op->enums[i].name, str, len))
            return true;
    }
    return false;
}

/*
 * Errors of v against op: 0 when valid; when not, 1 (x->all false) or as many as the walker
 * records; -1 when the walker must decide. As in the walker, a wrong type does not stop the
 * keywords that apply to the type v has.
 */
static long FN(run)(const struct vrun *x, const struct vop *op, VI v, int depth)
{
    unsigned t = VI_TYPE(v);
    long errs = VI_TYPE_OK(op, v) ? 0 : 1, r;

    if (errs && (!x->all || op->kind == VK_FALSE))
        return 1;
    if (depth >= SCHEMA_MAX_DEPTH)
        return -1;
    switch (op->kind) {
    case VK_ENUM:
        return errs + !FN(enum_ok)(op, v);
    case VK_OBJECT:
        r = t == JSON_OBJECT ? FN(run_object)(x, op, v, depth) : 0;
        return r < 0 ? r : errs + r;
    case VK_ARRAY:
        r = t == JSON_ARRAY ? FN(run_array)(x, op, v, depth) : 0;
        return r < 0 ? r : errs + r;
    case VK_GENERAL:
        return VI_PROBE(x, op->node, v, depth);
    default:
        return errs; /* VK_TRUE */
    }
}
