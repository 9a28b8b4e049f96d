/*
 * The validator (rein_schema_validate): walks a compiled node graph over a jansson instance.
 *
 * Nothing is allocated on the way except error records, the few places that must build a
 * value (a property name for "propertyNames", default values when asked to fill them) and a
 * pattern's match data when the caller passes no result to keep it in. Instance locations
 * are frames on the C stack (struct ipath) turned into JSON Pointers only when an error is
 * recorded. Branches of anyOf, oneOf, not, if and contains are first "probed" (no errors
 * recorded, stop at the first failure); only a branch whose errors are worth showing is
 * walked again to record them.
 *
 * unevaluatedProperties and unevaluatedItems ask, per instance member, whether any
 * successfully applied in-place subschema evaluated it (eval_prop/eval_item), instead of
 * collecting annotation sets, which keeps the common path free of bookkeeping.
 *
 * Recursion is bounded by SCHEMA_MAX_DEPTH, and a $ref applied again to the same instance
 * location by one of its own in-place ancestors is reported as a cycle instead of looping.
 *
 * rein_schema_validate asks the verdict program (verdict.c) first and walks the nodes only
 * for what the verdict does not tell: the errors, or their number (decision 0044).
 */
#include "schema/schema_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct frame {
    const struct frame *up;
    const struct snode *node;
    const json_t *inst;
};

struct vstate {
    const rein_schema *schema;
    rein_schema_result *res; /* NULL: count errors only */
    rein_error *err;
    unsigned flags;
    bool collect; /* record errors (false while probing a branch) */
    bool stop;    /* REIN_SCHEMA_FIRST_ERROR and one was recorded */
    int hard;     /* a REIN_E* that aborts the validation */
    int depth;
    size_t nerr;
    pcre2_match_data *md;
    const char *pname; /* set while validating a property name */
    size_t pname_len;
    struct mbuf mb;
};

static bool v_node(struct vstate *st, const struct snode *n, json_t *inst, const struct ipath *ip,
                   const struct frame *up);

#define BAIL(st) (!(st)->collect || (st)->stop || (st)->hard)

/* ---- recording errors --------------------------------------------------------------------- */

static void kpath_token(struct mbuf *m, const char *s, size_t len)
{
    size_t start = 0;

    for (size_t i = 0; i < len; i++) {
        if (s[i] != '~' && s[i] != '/')
            continue;
        rein__mb_add(m, s + start, i - start);
        rein__mb_adds(m, s[i] == '~' ? "~0" : "~1");
        start = i + 1;
    }
    rein__mb_add(m, s + start, len - start);
}

/*
 * Starts an error at ip for keyword kw of node n (kw may be NULL for a false schema; sub is
 * an extra keyword-path token such as a property name). Returns the message buffer to write
 * the message into, then err_end(); NULL when messages are not kept (count only).
 */
static struct mbuf *err_begin(struct vstate *st, const struct snode *n, const char *kw,
                              const char *sub, size_t sublen, const struct ipath *ip,
                              const char *prop, size_t proplen)
{
    size_t kwlen = kw ? strlen(kw) : 0;
    rein_schema_result *res = st->res;
    struct serr *e;
    struct mbuf *m = &st->mb;

    if (!st->collect)
        return NULL; /* probing a branch: only the verdict matters */
    st->nerr++;
    if (st->flags & REIN_SCHEMA_FIRST_ERROR)
        st->stop = true;
    if (!res || res->n >= SCHEMA_MAX_ERRORS)
        return NULL;
    if (res->n == res->cap) {
        size_t ncap = res->cap ? res->cap * 2 : 8;
        struct serr *ne = rein_realloc(res->errs, ncap * sizeof(*ne));
        if (!ne) {
            st->hard = REIN_ENOMEM;
            return NULL;
        }
        res->errs = ne;
        res->cap = ncap;
    }
    e = &res->errs[res->n];
    m->b = &res->text;
    m->failed = false;
    e->ipath = res->text.len;
    rein__ipath_write(m, ip);
    rein__mb_add(m, "", 1);
    e->kpath = res->text.len;
    rein__mb_add(m, n->path, n->path_len);
    if (kw) {
        rein__mb_add(m, "/", 1);
        e->kw = res->text.len;
        rein__mb_add(m, kw, kwlen);
    }
    if (sub) {
        rein__mb_add(m, "/", 1);
        kpath_token(m, sub, sublen);
    }
    rein__mb_add(m, "", 1);
    if (!kw) {
        e->kw = res->text.len;
        rein__mb_lit(m, "false");
        rein__mb_add(m, "", 1);
    } else if (sub) {
        /* The keyword path goes on past the keyword: write it again on its own. */
        e->kw = res->text.len;
        rein__mb_add(m, kw, kwlen);
        rein__mb_add(m, "", 1);
    }
    e->prop = SIZE_MAX;
    if (prop) {
        e->prop = res->text.len;
        rein__mb_add(m, prop, proplen);
        rein__mb_add(m, "", 1);
    }
    e->msg = res->text.len;
    if (st->pname) {
        rein__mb_lit(m, "property name ");
        rein__quote(m, st->pname, st->pname_len);
        rein__mb_lit(m, ": ");
    }
    return m;
}

static void err_end(struct vstate *st, struct mbuf *m)
{
    if (!m)
        return;
    rein__mb_add(m, "", 1);
    if (m->failed) {
        st->hard = REIN_ENOMEM;
        return;
    }
    st->res->n++;
}

/* ---- numbers ------------------------------------------------------------------------------ */

/* Sign of d - i, exactly. */
static int cmp_d_i(double d, long long i)
{
    double fl;
    long long li;

    if (d >= 9223372036854775808.0)
        return 1;
    if (d < -9223372036854775808.0)
        return -1;
    fl = floor(d);
    li = (long long)fl;
    if (li != i)
        return li < i ? -1 : 1;
    return d > fl ? 1 : 0;
}

static int num_cmp(const json_t *v, const struct snum *n)
{
    if (json_is_integer(v)) {
        long long a = json_integer_value(v);
        if (n->is_int)
            return (a > n->i) - (a < n->i);
        return -cmp_d_i(n->d, a);
    }
    double a = json_real_value(v);
    if (n->is_int)
        return cmp_d_i(a, n->i);
    return (a > n->d) - (a < n->d);
}

static bool is_multiple(const json_t *v, const struct snum *m)
{
    double a, q;

    if (json_is_integer(v) && m->is_int)
        return m->i == 1 || json_integer_value(v) % m->i == 0;
    a = json_number_value(v);
    q = a / m->d;
    if (!isfinite(q))
        return fmod(a, m->d) == 0;
    if (fabs(q) >= 9007199254740992.0)
        return true;
    return fabs(q - rint(q)) < 1e-9;
}

static void inst_num_write(struct mbuf *m, const json_t *v)
{
    struct snum n = {json_is_integer(v), json_is_integer(v) ? json_integer_value(v) : 0,
                     json_number_value(v)};
    rein__num_write(m, &n);
}

/* ---- types -------------------------------------------------------------------------------- */

static inline unsigned inst_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return ST_OBJECT;
    case JSON_ARRAY:
        return ST_ARRAY;
    case JSON_STRING:
        return ST_STRING;
    case JSON_INTEGER:
        return ST_INTEGER;
    case JSON_REAL: {
        double d = json_real_value(v);
        return d == floor(d) && isfinite(d) ? ST_INTEGER : ST_NUMBER;
    }
    case JSON_TRUE:
    case JSON_FALSE:
        return ST_BOOL;
    default:
        return ST_NULL;
    }
}

static void types_write(struct mbuf *m, unsigned types)
{
    static const struct {
        unsigned bit;
        uint8_t len;
        const char *name;
    } order[] = {{ST_OBJECT, 6, "object"}, {ST_ARRAY, 5, "array"},     {ST_STRING, 6, "string"},
                 {ST_NUMBER, 6, "number"}, {ST_INTEGER, 7, "integer"}, {ST_BOOL, 7, "boolean"},
                 {ST_NULL, 4, "null"}};
    size_t names[8];
    size_t n = 0;

    if ((types & ST_INTEGER) && (types & ST_NUMBER))
        types &= ~(unsigned)ST_INTEGER;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(order); i++) {
        if (types & order[i].bit)
            names[n++] = i;
    }
    for (size_t i = 0; i < n; i++) {
        if (i && i + 1 == n)
            rein__mb_lit(m, " or ");
        else if (i)
            rein__mb_lit(m, ", ");
        rein__mb_add(m, order[names[i]].name, order[names[i]].len);
    }
}

/* Records that the value read into iv is none of n's types; false. */
static bool type_error(struct vstate *st, const struct snode *n, const struct rein__ival *iv,
                       const struct ipath *ip)
{
    struct mbuf *m = err_begin(st, n, "type", NULL, 0, ip, NULL, 0);

    if (m) {
        rein__mb_lit(m, "must be ");
        types_write(m, n->types);
        rein__mb_lit(m, ", got ");
        rein__describe_ival(m, iv, true);
    }
    err_end(st, m);
    return false;
}

__attribute__((noinline)) static bool check_type(struct vstate *st, const struct snode *n,
                                                 const json_t *inst, const struct ipath *ip)
{
    struct rein__ival iv;

    if (n->types & inst_type(inst))
        return true;
    rein__ival_of(&iv, inst);
    return type_error(st, n, &iv, ip);
}

/* ---- equality keywords -------------------------------------------------------------------- */

static bool equal(struct vstate *st, const json_t *a, const json_t *b)
{
    bool deep = false;
    bool eq = rein__json_equal(a, b, 0, &deep);

    if (deep && !st->hard) {
        st->hard = REIN_EDEPTH;
        rein_error_set(st->err, REIN_EDEPTH, "instance nested deeper than %d levels",
                       SCHEMA_MAX_DEPTH);
    }
    return eq;
}

__attribute__((noinline)) static bool check_const(struct vstate *st, const struct snode *n,
                                                  const json_t *inst, const struct ipath *ip)
{
    struct mbuf *m;

    if (equal(st, inst, n->const_value))
        return true;
    m = err_begin(st, n, "const", NULL, 0, ip, NULL, 0);
    if (m) {
        rein__mb_lit(m, "must be ");
        rein__json_brief(m, n->const_value, 200);
        rein__mb_lit(m, ", got ");
        rein__describe(m, inst, false);
    }
    err_end(st, m);
    return false;
}

/* Records that the value read into iv is none of n's enum values; false. */
static bool enum_error(struct vstate *st, const struct snode *n, const struct rein__ival *iv,
                       const struct ipath *ip)
{
    size_t count = json_array_size(n->enum_value);
    struct mbuf *m = err_begin(st, n, "enum", NULL, 0, ip, NULL, 0);

    if (m) {
        size_t start = m->b->len;
        rein__mb_adds(m, count == 1 ? "must be " : "must be one of ");
        for (size_t i = 0; i < count; i++) {
            if (i)
                rein__mb_lit(m, ", ");
            if (m->b->len - start > 300) {
                rein__mb_addf(m, "… (%zu values)", count);
                break;
            }
            rein__json_brief(m, json_array_get(n->enum_value, i), 100);
        }
        rein__mb_lit(m, ", got ");
        rein__describe_ival(m, iv, false);
    }
    err_end(st, m);
    return false;
}

/* A string (str, len bytes) among an all-strings enum's values: lengths and first words are
 * compared before bytes. */
static bool enum_str_in(const struct snode *n, const char *str, size_t len)
{
    for (size_t i = 0; i < n->nenum_strs; i++) {
        const struct sprop *e = &n->enum_strs[i];
        if (e->len == len && rein__bytes_eq(e->name, str, len))
            return true;
    }
    return false;
}

__attribute__((noinline)) static bool check_enum(struct vstate *st, const struct snode *n,
                                                 const json_t *inst, const struct ipath *ip)
{
    size_t count = json_array_size(n->enum_value);
    struct rein__ival iv;

    if (n->enum_strs) {
        if (json_is_string(inst) &&
            enum_str_in(n, json_string_value(inst), json_string_length(inst)))
            return true;
    } else {
        for (size_t i = 0; i < count; i++) {
            if (equal(st, inst, json_array_get(n->enum_value, i)))
                return true;
        }
    }
    rein__ival_of(&iv, inst);
    return enum_error(st, n, &iv, ip);
}

/* ---- numbers and strings ------------------------------------------------------------------ */

static bool num_fail(struct vstate *st, const struct snode *n, const char *kw, const char *what,
                     const struct snum *limit, const json_t *inst, const struct ipath *ip)
{
    struct mbuf *m = err_begin(st, n, kw, NULL, 0, ip, NULL, 0);

    if (m) {
        rein__mb_adds(m, what);
        rein__num_write(m, limit);
        rein__mb_lit(m, ", got ");
        inst_num_write(m, inst);
    }
    err_end(st, m);
    return false;
}

__attribute__((noinline)) static bool v_number(struct vstate *st, const struct snode *n,
                                               const json_t *inst, const struct ipath *ip)
{
    bool ok = true;

    if (n->minimum && num_cmp(inst, n->minimum) < 0) {
        ok = num_fail(st, n, "minimum", "must be at least ", n->minimum, inst, ip);
        if (BAIL(st))
            return false;
    }
    if (n->maximum && num_cmp(inst, n->maximum) > 0) {
        ok = num_fail(st, n, "maximum", "must be at most ", n->maximum, inst, ip);
        if (BAIL(st))
            return false;
    }
    if (n->xminimum && num_cmp(inst, n->xminimum) <= 0) {
        ok = num_fail(st, n, "exclusiveMinimum", "must be greater than ", n->xminimum, inst, ip);
        if (BAIL(st))
            return false;
    }
    if (n->xmaximum && num_cmp(inst, n->xmaximum) >= 0) {
        ok = num_fail(st, n, "exclusiveMaximum", "must be less than ", n->xmaximum, inst, ip);
        if (BAIL(st))
            return false;
    }
    if (n->multiple_of && !is_multiple(inst, n->multiple_of))
        ok = num_fail(st, n, "multipleOf", "must be a multiple of ", n->multiple_of, inst, ip);
    return ok;
}

static pcre2_match_data *match_data(struct vstate *st)
{
    if (!st->md) {
        st->md = pcre2_match_data_create(1, st->schema->gctx);
        if (st->md && st->res)
            st->res->md = st->md;
    }
    return st->md;
}

/* 1 match, 0 no match, -1 hard error (recorded in st). */
static int search(struct vstate *st, const struct sregex *re, const char *s, size_t len)
{
    pcre2_match_data *md = match_data(st);
    int rc;

    if (!md) {
        st->hard = REIN_ENOMEM;
        return -1;
    }
    rc = rein__regex_search(re, s, len, md, st->schema->mctx);
    if (rc >= 0)
        return rc;
    st->hard = rc;
    rein_error_set(st->err, rc, "pattern \"%.80s\" could not be matched: %s", re->source,
                   rc == REIN_ETOOBIG ? "the match needs too much backtracking"
                                      : "the text is not valid UTF-8");
    return -1;
}

static bool json_text_ok(const char *s, size_t len, bool b64)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *buf = NULL;
    size_t n = 0;
    json_t *v;

    if (b64) {
        unsigned acc = 0;
        int bits = 0;
        buf = rein_malloc(len + 1);
        if (!buf)
            return true; /* cannot check; an annotation at heart, so do not fail */
        for (size_t i = 0; i < len && s[i] != '='; i++) {
            const char *p = strchr(tab, s[i]);
            acc = (acc << 6) | (unsigned)(p - tab);
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                buf[n++] = (char)((acc >> bits) & 0xff);
            }
        }
        s = buf;
        len = n;
    }
    v = json_loadb(s, len, JSON_DECODE_ANY, NULL);
    rein_free(buf);
    json_decref(v);
    return v != NULL;
}

__attribute__((noinline)) static bool v_string(struct vstate *st, const struct snode *n,
                                               const json_t *inst, const struct ipath *ip)
{
    const char *s = json_string_value(inst);
    size_t len = json_string_length(inst);
    struct mbuf *m;
    bool ok = true;

    if (n->min_length || n->max_length != SIZE_MAX) {
        size_t cps = rein__utf8_len(s, len);
        if (cps < n->min_length || cps > n->max_length) {
            bool lo = cps < n->min_length;
            m = err_begin(st, n, lo ? "minLength" : "maxLength", NULL, 0, ip, NULL, 0);
            if (m)
                rein__mb_addf(m, "must be at %s %zu character%s long, got %zu",
                              lo ? "least" : "most", lo ? n->min_length : n->max_length,
                              (lo ? n->min_length : n->max_length) == 1 ? "" : "s", cps);
            err_end(st, m);
            ok = false;
            if (BAIL(st))
                return false;
        }
    }
    if (n->pattern) {
        int rc = search(st, n->pattern, s, len);
        if (rc < 0)
            return false;
        if (rc == 0) {
            m = err_begin(st, n, "pattern", NULL, 0, ip, NULL, 0);
            if (m) {
                rein__mb_lit(m, "must match pattern ");
                rein__quote(m, n->pattern->source, strlen(n->pattern->source));
                rein__mb_lit(m, ", got ");
                rein__quote(m, s, len);
            }
            err_end(st, m);
            ok = false;
            if (BAIL(st))
                return false;
        }
    }
    if ((n->has & KW_FORMAT) && !rein__format_check(n->format, s, len)) {
        m = err_begin(st, n, "format", NULL, 0, ip, NULL, 0);
        if (m) {
            rein__mb_addf(m, "must be a valid %s, got ", n->format_name);
            rein__quote(m, s, len);
        }
        err_end(st, m);
        ok = false;
        if (BAIL(st))
            return false;
    }
    if ((n->content_base64 && !rein__base64_valid(s, len)) ||
        (n->content_json && !(n->content_base64 && !rein__base64_valid(s, len)) &&
         !json_text_ok(s, len, n->content_base64))) {
        bool enc = n->content_base64 && !rein__base64_valid(s, len);
        m = err_begin(st, n, enc ? "contentEncoding" : "contentMediaType", NULL, 0, ip, NULL, 0);
        if (m)
            rein__mb_adds(m, enc ? "must be base64-encoded" : "must be a JSON document");
        err_end(st, m);
        ok = false;
    }
    return ok;
}

/* ---- applying subschemas ------------------------------------------------------------------ */

static bool probe(struct vstate *st, const struct snode *n, json_t *inst, const struct ipath *ip,
                  const struct frame *up)
{
    bool saved = st->collect, ok;
    const char *pn = st->pname;

    st->collect = false;
    ok = v_node(st, n, inst, ip, up);
    st->collect = saved;
    st->pname = pn;
    return ok && !st->hard;
}

/* Applies a $ref target in place, refusing a cycle that makes no progress. */
static bool v_ref(struct vstate *st, const struct snode *target, json_t *inst,
                  const struct ipath *ip, const struct frame *fr, const char *kw)
{
    for (const struct frame *f = fr; f && f->inst == inst; f = f->up) {
        if (f->node != target)
            continue;
        if (!st->hard) {
            st->hard = REIN_ESCHEMA;
            rein_error_set(st->err, REIN_ESCHEMA,
                           "%.100s/%s: reference cycle: the schema at \"%.80s\" applies to the "
                           "same value again without progress",
                           fr->node->path, kw, target->path[0] ? target->path : "/");
        }
        return false;
    }
    return v_node(st, target, inst, ip, fr);
}

static const struct snode *dyn_target(const struct snode *n, const struct frame *fr)
{
    const struct snode *found = NULL;

    if (!n->dynref_anchor)
        return n->dynref;
    for (const struct frame *f = fr; f; f = f->up) {
        const struct cres *cr = f->node->res;
        for (size_t i = 0; i < cr->ndyn; i++) {
            if (strcmp(cr->dyn[i].name, n->dynref_anchor) == 0) {
                found = cr->dyn[i].node;
                break;
            }
        }
    }
    return found ? found : n->dynref;
}

static bool type_compatible(const struct snode *n, const json_t *inst)
{
    for (int hops = 0; n && hops < 16; hops++) {
        if (n->kind != SN_SCHEMA)
            return n->kind == SN_TRUE;
        if (n->has & KW_TYPE)
            return (n->types & inst_type(inst)) != 0;
        if (!(n->has & KW_REF) || (n->has & ~KW_REF & (KW_CONST | KW_ENUM)))
            return true;
        n = n->ref;
    }
    return true;
}

static bool has_type(const struct snode *n, unsigned *types)
{
    for (int hops = 0; n && hops < 16; hops++) {
        if (n->kind != SN_SCHEMA)
            return false;
        if (n->has & KW_TYPE) {
            *types |= n->types;
            return true;
        }
        if (!(n->has & KW_REF))
            return false;
        n = n->ref;
    }
    return false;
}

/* Errors for anyOf/oneOf when no branch matched: the one branch of the instance's type when
 * there is exactly one, else a summary. */
static void no_branch(struct vstate *st, const struct snode *n, const char *kw,
                      struct snode *const *subs, size_t count, json_t *inst, const struct ipath *ip,
                      const struct frame *fr)
{
    size_t cand = 0, ncand = 0;
    unsigned types = 0;
    bool all_typed = true;
    struct mbuf *m;

    for (size_t i = 0; i < count; i++) {
        if (type_compatible(subs[i], inst)) {
            cand = i;
            ncand++;
        }
        all_typed &= has_type(subs[i], &types);
    }
    if (ncand == 1) {
        size_t before = st->nerr;
        v_node(st, subs[cand], inst, ip, fr);
        if (st->nerr > before || st->hard)
            return;
    }
    m = err_begin(st, n, kw, NULL, 0, ip, NULL, 0);
    if (m) {
        if (ncand == 0 && all_typed) {
            rein__mb_lit(m, "must be ");
            types_write(m, types);
            rein__mb_lit(m, ", got ");
            rein__describe(m, inst, true);
        } else {
            rein__mb_addf(m, "must match %s of the %zu schemas in %s, got ",
                          kw[0] == 'a' ? "at least one" : "exactly one", count, kw);
            rein__describe(m, inst, true);
        }
    }
    err_end(st, m);
}

__attribute__((noinline)) static bool v_combine(struct vstate *st, const struct snode *n,
                                                json_t *inst, const struct ipath *ip,
                                                const struct frame *fr)
{
    bool ok = true;
    struct mbuf *m;

    for (size_t i = 0; i < n->nall_of; i++) {
        if (!v_node(st, n->all_of[i], inst, ip, fr)) {
            ok = false;
            if (BAIL(st))
                return false;
        }
    }
    if (n->nany_of) {
        size_t i;
        for (i = 0; i < n->nany_of; i++) {
            if (probe(st, n->any_of[i], inst, ip, fr))
                break;
            if (st->hard)
                return false;
        }
        if (i == n->nany_of) {
            ok = false;
            if (!st->collect)
                return false;
            no_branch(st, n, "anyOf", n->any_of, n->nany_of, inst, ip, fr);
            if (BAIL(st))
                return false;
        }
    }
    if (n->none_of) {
        size_t matched = 0, first = 0, second = 0;
        for (size_t i = 0; i < n->none_of && matched < 2; i++) {
            if (probe(st, n->one_of[i], inst, ip, fr)) {
                if (matched++)
                    second = i;
                else
                    first = i;
            }
            if (st->hard)
                return false;
        }
        if (matched != 1) {
            ok = false;
            if (!st->collect)
                return false;
            if (matched == 0) {
                no_branch(st, n, "oneOf", n->one_of, n->none_of, inst, ip, fr);
            } else {
                m = err_begin(st, n, "oneOf", NULL, 0, ip, NULL, 0);
                if (m)
                    rein__mb_addf(m,
                                  "must match exactly one of the %zu schemas in oneOf, but "
                                  "matches schemas %zu and %zu",
                                  n->none_of, first, second);
                err_end(st, m);
            }
            if (BAIL(st))
                return false;
        }
    }
    if (n->not_schema) {
        if (probe(st, n->not_schema, inst, ip, fr)) {
            ok = false;
            m = err_begin(st, n, "not", NULL, 0, ip, NULL, 0);
            if (m) {
                rein__mb_lit(m, "must not match the schema in \"not\", got ");
                rein__describe(m, inst, true);
            }
            err_end(st, m);
            if (BAIL(st))
                return false;
        }
        if (st->hard)
            return false;
    }
    if (n->if_schema) {
        const struct snode *branch;
        if (probe(st, n->if_schema, inst, ip, fr))
            branch = n->then_schema;
        else
            branch = n->else_schema;
        if (st->hard)
            return false;
        if (branch && !v_node(st, branch, inst, ip, fr))
            ok = false;
    }
    return ok;
}

/* ---- unevaluated* ------------------------------------------------------------------------- */

/* hint: where to start looking (arguments usually come in the schema's order); updated. */
static struct sprop *prop_find(const struct snode *n, const char *key, size_t len, size_t *hint)
{
    size_t h;

    if (!n->prop_table)
        return NULL;
    /* Tool schemas have a handful of properties: comparing the first 8 bytes beats hashing. */
    if (n->nprops <= 8) {
        size_t i = *hint < n->nprops ? *hint : 0;
        for (size_t k = 0; k < n->nprops; k++) {
            struct sprop *p = &n->props[i];
            if (p->len == len && rein__bytes_eq(p->name, key, len)) {
                *hint = i + 1;
                return p;
            }
            if (++i == n->nprops)
                i = 0;
        }
        return NULL;
    }
    h = rein__schema_hash(key, len);
    for (size_t j = h & n->prop_mask;; j = (j + 1) & n->prop_mask) {
        size_t k = n->prop_table[j];
        if (!k)
            return NULL;
        struct sprop *p = &n->props[k - 1];
        if (p->hash == h && p->len == len && memcmp(p->name, key, len) == 0)
            return p;
    }
}

static struct sprop *prop_lookup(const struct snode *n, const char *key, size_t len)
{
    size_t hint = 0;

    return prop_find(n, key, len, &hint);
}

static bool pattern_matches(struct vstate *st, const struct snode *n, const char *key, size_t len)
{
    for (size_t i = 0; i < n->npats; i++) {
        if (search(st, &n->pats[i].re, key, len) > 0)
            return true;
    }
    return false;
}

typedef bool (*eval_fn)(struct vstate *st, const struct snode *n, json_t *inst, const char *key,
                        size_t idx, const struct ipath *ip, const struct frame *up, bool self);

/* Whether a successful in-place subschema of n evaluated the member (key or idx). */
static bool eval_inplace(struct vstate *st, const struct snode *n, json_t *inst, const char *key,
                         size_t idx, const struct ipath *ip, const struct frame *fr, eval_fn fn)
{
    if (n->ref && probe(st, n->ref, inst, ip, fr) && fn(st, n->ref, inst, key, idx, ip, fr, false))
        return true;
    if (n->dynref) {
        const struct snode *t = dyn_target(n, fr);
        if (probe(st, t, inst, ip, fr) && fn(st, t, inst, key, idx, ip, fr, false))
            return true;
    }
    for (size_t i = 0; i < n->nall_of; i++) {
        if (probe(st, n->all_of[i], inst, ip, fr) &&
            fn(st, n->all_of[i], inst, key, idx, ip, fr, false))
            return true;
    }
    for (size_t i = 0; i < n->nany_of; i++) {
        if (probe(st, n->any_of[i], inst, ip, fr) &&
            fn(st, n->any_of[i], inst, key, idx, ip, fr, false))
            return true;
    }
    for (size_t i = 0; i < n->none_of; i++) {
        if (probe(st, n->one_of[i], inst, ip, fr) &&
            fn(st, n->one_of[i], inst, key, idx, ip, fr, false))
            return true;
    }
    if (n->if_schema) {
        if (probe(st, n->if_schema, inst, ip, fr)) {
            if (fn(st, n->if_schema, inst, key, idx, ip, fr, false))
                return true;
            if (n->then_schema && probe(st, n->then_schema, inst, ip, fr) &&
                fn(st, n->then_schema, inst, key, idx, ip, fr, false))
                return true;
        } else if (n->else_schema && probe(st, n->else_schema, inst, ip, fr) &&
                   fn(st, n->else_schema, inst, key, idx, ip, fr, false)) {
            return true;
        }
    }
    if (n->has_dependents && json_is_object(inst)) {
        for (size_t i = 0; i < n->nprops; i++) {
            const struct sprop *p = &n->props[i];
            if (p->depschema && json_object_getn(inst, p->name, p->len) &&
                probe(st, p->depschema, inst, ip, fr) &&
                fn(st, p->depschema, inst, key, idx, ip, fr, false))
                return true;
        }
    }
    return false;
}

static bool eval_prop(struct vstate *st, const struct snode *n, json_t *inst, const char *key,
                      size_t len, const struct ipath *ip, const struct frame *up, bool self)
{
    struct frame fr = {up, n, inst};
    const struct sprop *p;
    bool r;

    if (n->kind != SN_SCHEMA || st->hard)
        return false;
    if (!self && n->uneval_props)
        return true;
    if (n->additional)
        return true;
    p = prop_lookup(n, key, len);
    if (p && p->schema)
        return true;
    if (pattern_matches(st, n, key, len))
        return true;
    if (++st->depth > SCHEMA_MAX_DEPTH) {
        st->depth--;
        return false;
    }
    r = eval_inplace(st, n, inst, key, len, ip, &fr, eval_prop);
    st->depth--;
    return r;
}

static bool eval_item(struct vstate *st, const struct snode *n, json_t *inst, const char *key,
                      size_t idx, const struct ipath *ip, const struct frame *up, bool self)
{
    struct frame fr = {up, n, inst};
    bool r;

    (void)key;
    if (n->kind != SN_SCHEMA || st->hard)
        return false;
    if (!self && n->uneval_items)
        return true;
    if (idx < n->nprefix || n->items)
        return true;
    if (n->contains) {
        struct ipath iip = {ip, NULL, idx};
        if (probe(st, n->contains, json_array_get(inst, idx), &iip, &fr))
            return true;
    }
    if (++st->depth > SCHEMA_MAX_DEPTH) {
        st->depth--;
        return false;
    }
    r = eval_inplace(st, n, inst, NULL, idx, ip, &fr, eval_item);
    st->depth--;
    return r;
}

/* ---- objects ------------------------------------------------------------------------------ */

static bool v_propname(struct vstate *st, const struct snode *n, const char *key, size_t len,
                       const struct ipath *ip, const struct frame *fr)
{
    json_t *name = json_stringn_nocheck(key, len);
    const char *saved = st->pname;
    size_t saved_len = st->pname_len;
    bool ok;

    if (!name) {
        st->hard = REIN_ENOMEM;
        return false;
    }
    st->pname = key;
    st->pname_len = len;
    ok = v_node(st, n->property_names, name, ip, fr);
    st->pname = saved;
    st->pname_len = saved_len;
    json_decref(name);
    return ok;
}

static bool member_false(struct vstate *st, const struct snode *n, const char *kw, const char *what,
                         const char *key, size_t len, const struct ipath *ip)
{
    struct mbuf *m = err_begin(st, n, kw, kw[0] == 'p' ? key : NULL, len, ip, NULL, 0);

    if (m) {
        rein__mb_adds(m, what);
        rein__quote(m, key, len);
        rein__mb_lit(m, " is not allowed");
    }
    err_end(st, m);
    return false;
}

static bool v_members(struct vstate *st, const struct snode *n, json_t *inst,
                      const struct ipath *ip, const struct frame *fr, size_t *found_required)
{
    bool ok = true;
    size_t hint = 0;
    struct rein__members mi;
    const char *key;
    size_t len;
    json_t *val;

    rein__members_start(&mi, inst);
    while (rein__members_next(&mi, &key, &len, &val)) {
        struct ipath kip = {ip, key, len};
        const struct sprop *p = prop_find(n, key, len, &hint);
        bool matched = false;

        if (p) {
            if (p->required_bit >= 0)
                (*found_required)++;
            if (p->schema) {
                matched = true;
                if (p->schema->kind == SN_FALSE)
                    ok = member_false(st, n, "properties", "property ", key, len, ip);
                else if (!v_node(st, p->schema, val, &kip, fr))
                    ok = false;
                if (!ok && BAIL(st))
                    return false;
            }
            if (p->depreq) {
                for (size_t i = 0; i < p->depreq->n; i++) {
                    const struct sname *d = &p->depreq->names[i];
                    if (json_object_getn(inst, d->name, d->len))
                        continue;
                    struct mbuf *m = err_begin(st, n, p->depreq->kw, key, len, ip, d->name, d->len);
                    if (m) {
                        rein__mb_lit(m, "property ");
                        rein__quote(m, d->name, d->len);
                        rein__mb_lit(m, " is required when ");
                        rein__quote(m, key, len);
                        rein__mb_lit(m, " is present");
                    }
                    err_end(st, m);
                    ok = false;
                    if (BAIL(st))
                        return false;
                }
            }
            if (p->depschema && !v_node(st, p->depschema, inst, ip, fr)) {
                ok = false;
                if (BAIL(st))
                    return false;
            }
        }
        for (size_t i = 0; i < n->npats; i++) {
            int rc = search(st, &n->pats[i].re, key, len);
            if (rc < 0)
                return false;
            if (rc == 0)
                continue;
            matched = true;
            if (!v_node(st, n->pats[i].schema, val, &kip, fr)) {
                ok = false;
                if (BAIL(st))
                    return false;
            }
        }
        if (!matched && n->additional) {
            if (n->additional->kind == SN_FALSE)
                ok = member_false(st, n, "additionalProperties", "additional property ", key, len,
                                  ip);
            else if (!v_node(st, n->additional, val, &kip, fr))
                ok = false;
            if (!ok && BAIL(st))
                return false;
        }
        if (n->property_names && !v_propname(st, n, key, len, ip, fr)) {
            ok = false;
            if (BAIL(st))
                return false;
        }
    }
    return ok;
}

/* A count of properties or items (what: 0 or 1) outside [min, max]: records the error of
 * min/maxProperties or min/maxItems, false. */
static bool count_fail(struct vstate *st, const struct snode *n, int what, size_t size, size_t min,
                       size_t max, const struct ipath *ip)
{
    static const char *const kws[2][2] = {{"minProperties", "maxProperties"},
                                          {"minItems", "maxItems"}};
    static const char *const nouns[2][2] = {{"property", "properties"}, {"item", "items"}};
    bool lo = size < min;
    size_t lim = lo ? min : max;
    struct mbuf *m = err_begin(st, n, kws[what][!lo], NULL, 0, ip, NULL, 0);

    if (m)
        rein__mb_addf(m, "must have at %s %zu %s, got %zu", lo ? "least" : "most", lim,
                      nouns[what][lim != 1], size);
    err_end(st, m);
    return false;
}

/* Records that required property p is missing; false. */
static bool required_error(struct vstate *st, const struct snode *n, const struct sprop *p,
                           const struct ipath *ip)
{
    struct mbuf *m = err_begin(st, n, "required", NULL, 0, ip, p->name, p->len);

    if (m) {
        rein__mb_lit(m, "required property ");
        rein__quote(m, p->name, p->len);
        rein__mb_lit(m, " is missing");
    }
    err_end(st, m);
    return false;
}

/* One error per name of "required" that inst lacks, in the keyword's order; false when any. */
static bool required_missing(struct vstate *st, const struct snode *n, json_t *inst,
                             const struct ipath *ip)
{
    bool ok = true;

    for (size_t i = 0; i < n->nrequired; i++) {
        const struct sprop *p = n->required[i];
        if (json_object_getn(inst, p->name, p->len))
            continue;
        ok = required_error(st, n, p, ip);
        if (BAIL(st))
            return false;
    }
    return ok;
}

__attribute__((noinline)) static bool v_object(struct vstate *st, const struct snode *n,
                                               json_t *inst, const struct ipath *ip,
                                               const struct frame *fr)
{
    size_t size = json_object_size(inst), found = 0;
    bool ok = true;

    if ((size < n->min_props || size > n->max_props) &&
        !count_fail(st, n, 0, size, n->min_props, n->max_props, ip)) {
        ok = false;
        if (BAIL(st))
            return false;
    }
    if (size && !v_members(st, n, inst, ip, fr, &found)) {
        ok = false;
        if (BAIL(st))
            return false;
    }
    if (found < n->nrequired && !required_missing(st, n, inst, ip))
        ok = false;
    if (!ok && BAIL(st))
        return false;
    if (n->uneval_props) {
        for (void *it = json_object_iter(inst); it; it = json_object_iter_next(inst, it)) {
            const char *key = json_object_iter_key(it);
            size_t len = json_object_iter_key_len(it);
            struct ipath kip = {ip, key, len};
            if (eval_prop(st, n, inst, key, len, ip, fr->up, true))
                continue;
            if (st->hard)
                return false;
            if (n->uneval_props->kind == SN_FALSE)
                ok = member_false(st, n, "unevaluatedProperties", "unevaluated property ", key, len,
                                  ip);
            else if (!v_node(st, n->uneval_props, json_object_iter_value(it), &kip, fr))
                ok = false;
            if (!ok && BAIL(st))
                return false;
        }
    }
    return ok;
}

/* ---- arrays ------------------------------------------------------------------------------- */

/* A hash consistent with rein__json_equal: equal values (1 and 1.0 included) hash alike. */
static uint64_t json_hash(const json_t *v, int depth)
{
    uint64_t h = (uint64_t)json_typeof(v) * 0x9e3779b97f4a7c15ull;
    const char *key;
    size_t klen;
    json_t *item;

    if (depth > SCHEMA_MAX_DEPTH)
        return h;
    switch (json_typeof(v)) {
    case JSON_INTEGER:
    case JSON_REAL: {
        double d = json_number_value(v);
        if (d == 0)
            d = 0; /* -0.0 equals 0 */
        __builtin_memcpy(&h, &d, sizeof(h));
        return h * 0xff51afd7ed558ccdull;
    }
    case JSON_STRING:
        return h ^ rein__schema_hash(json_string_value(v), json_string_length(v));
    case JSON_ARRAY:
        for (size_t i = 0; i < json_array_size(v); i++)
            h = (h ^ json_hash(json_array_get(v, i), depth + 1)) * 0x100000001b3ull;
        return h;
    case JSON_OBJECT:
        /* Members in any order: combine with a commutative sum. */
        json_object_keylen_foreach((json_t *)v, key, klen, item)
        {
            h +=
                (rein__schema_hash(key, klen) ^ json_hash(item, depth + 1)) * 0xc2b2ae3d27d4eb4full;
        }
        return h;
    default:
        return h;
    }
}

struct hitem {
    uint64_t hash;
    size_t index;
};

static int hitem_cmp(const void *a, const void *b)
{
    const struct hitem *x = a, *y = b;

    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static bool unique_fail(struct vstate *st, const struct snode *n, const struct ipath *ip, size_t a,
                        size_t b)
{
    struct mbuf *m = err_begin(st, n, "uniqueItems", NULL, 0, ip, NULL, 0);

    if (m)
        rein__mb_addf(m, "must not contain duplicate items, got items %zu and %zu equal", a, b);
    err_end(st, m);
    return false;
}

static bool v_unique(struct vstate *st, const struct snode *n, json_t *inst, const struct ipath *ip)
{
    size_t size = json_array_size(inst);
    struct hitem *h;

    if (size <= 32) {
        for (size_t i = 1; i < size; i++) {
            json_t *a = json_array_get(inst, i);
            for (size_t j = 0; j < i; j++) {
                if (equal(st, a, json_array_get(inst, j)))
                    return unique_fail(st, n, ip, j, i);
            }
            if (st->hard)
                return false;
        }
        return true;
    }
    /* Long arrays: sort by hash and compare only items that hash alike, O(n log n) instead of
     * O(n^2). This is the one place validation allocates beyond the error list. */
    h = rein_calloc(size, sizeof(*h));
    if (!h) {
        st->hard = REIN_ENOMEM;
        return false;
    }
    for (size_t i = 0; i < size; i++)
        h[i] = (struct hitem){json_hash(json_array_get(inst, i), 0), i};
    qsort(h, size, sizeof(*h), hitem_cmp);
    for (size_t i = 1; i < size; i++) {
        for (size_t j = i; j-- > 0 && h[j].hash == h[i].hash;) {
            if (equal(st, json_array_get(inst, h[j].index), json_array_get(inst, h[i].index))) {
                size_t a = h[j].index, b = h[i].index;
                rein_free(h);
                return unique_fail(st, n, ip, a < b ? a : b, a < b ? b : a);
            }
            if (st->hard)
                break;
        }
        if (st->hard)
            break;
    }
    rein_free(h);
    return !st->hard;
}

static bool v_contains(struct vstate *st, const struct snode *n, json_t *inst,
                       const struct ipath *ip, const struct frame *fr)
{
    size_t size = json_array_size(inst), count = 0;
    struct mbuf *m;

    for (size_t i = 0; i < size; i++) {
        struct ipath iip = {ip, NULL, i};
        if (probe(st, n->contains, json_array_get(inst, i), &iip, fr))
            count++;
        if (st->hard)
            return false;
        if (count >= n->min_contains && n->max_contains == SIZE_MAX)
            return true;
    }
    if (count >= n->min_contains && count <= n->max_contains)
        return true;
    bool lo = count < n->min_contains;
    size_t lim = lo ? n->min_contains : n->max_contains;
    m = err_begin(
        st, n,
        lo ? (n->min_contains == 1 || n->version == SV_DRAFT7 ? "contains" : "minContains")
           : "maxContains",
        NULL, 0, ip, NULL, 0);
    if (m)
        rein__mb_addf(m, "must contain at %s %zu item%s matching the \"contains\" schema, got %zu",
                      lo ? "least" : "most", lim, lim == 1 ? "" : "s", count);
    err_end(st, m);
    return false;
}

/* "items": false (or additionalItems) with items past the prefix: one error, false. */
static bool items_false(struct vstate *st, const struct snode *n, size_t size,
                        const struct ipath *ip)
{
    const char *kw = n->items_is_additional ? "additionalItems" : "items";
    struct mbuf *m = err_begin(st, n, kw, NULL, 0, ip, NULL, 0);

    if (m)
        rein__mb_addf(m, "must have at most %zu item%s, got %zu", n->nprefix,
                      n->nprefix == 1 ? "" : "s", size);
    err_end(st, m);
    return false;
}

__attribute__((noinline)) static bool v_array(struct vstate *st, const struct snode *n,
                                              json_t *inst, const struct ipath *ip,
                                              const struct frame *fr)
{
    size_t size = json_array_size(inst);
    struct mbuf *m;
    bool ok = true;

    if ((size < n->min_items || size > n->max_items) &&
        !count_fail(st, n, 1, size, n->min_items, n->max_items, ip)) {
        ok = false;
        if (BAIL(st))
            return false;
    }
    for (size_t i = 0; i < size && i < n->nprefix; i++) {
        struct ipath iip = {ip, NULL, i};
        if (!v_node(st, n->prefix[i], json_array_get(inst, i), &iip, fr)) {
            ok = false;
            if (BAIL(st))
                return false;
        }
    }
    if (n->items && size > n->nprefix) {
        if (n->items->kind == SN_FALSE) {
            ok = items_false(st, n, size, ip);
            if (BAIL(st))
                return false;
        } else {
            for (size_t i = n->nprefix; i < size; i++) {
                struct ipath iip = {ip, NULL, i};
                if (!v_node(st, n->items, json_array_get(inst, i), &iip, fr)) {
                    ok = false;
                    if (BAIL(st))
                        return false;
                }
            }
        }
    }
    if (n->contains && !v_contains(st, n, inst, ip, fr)) {
        ok = false;
        if (BAIL(st))
            return false;
    }
    if (n->unique_items && !v_unique(st, n, inst, ip)) {
        ok = false;
        if (BAIL(st))
            return false;
    }
    if (n->uneval_items) {
        for (size_t i = 0; i < size; i++) {
            struct ipath iip = {ip, NULL, i};
            if (eval_item(st, n, inst, NULL, i, ip, fr->up, true))
                continue;
            if (st->hard)
                return false;
            if (n->uneval_items->kind == SN_FALSE) {
                m = err_begin(st, n, "unevaluatedItems", NULL, 0, &iip, NULL, 0);
                if (m)
                    rein__mb_addf(m, "unevaluated item %zu is not allowed", i);
                err_end(st, m);
                ok = false;
            } else if (!v_node(st, n->uneval_items, json_array_get(inst, i), &iip, fr)) {
                ok = false;
            }
            if (!ok && BAIL(st))
                return false;
        }
    }
    return ok;
}

/* ---- the node ----------------------------------------------------------------------------- */

/* Records that the value read into iv meets a false schema; false. */
static bool false_error(struct vstate *st, const struct snode *n, const struct rein__ival *iv,
                        const struct ipath *ip)
{
    struct mbuf *m = err_begin(st, n, NULL, NULL, 0, ip, NULL, 0);

    if (m) {
        rein__mb_lit(m, "no value is allowed here, got ");
        rein__describe_ival(m, iv, true);
    }
    err_end(st, m);
    return false;
}

static bool v_false(struct vstate *st, const struct snode *n, const json_t *inst,
                    const struct ipath *ip)
{
    struct rein__ival iv;

    rein__ival_of(&iv, inst);
    return false_error(st, n, &iv, ip);
}

/* A schema with no subschemas (the leaves of most tool schemas): no frame, no depth. */
static bool v_leaf(struct vstate *st, const struct snode *n, json_t *inst, const struct ipath *ip)
{
    uint32_t has = n->has;
    bool ok = true;

    if ((has & KW_TYPE) && !(n->types & inst_type(inst))) {
        ok = check_type(st, n, inst, ip);
        if (BAIL(st))
            return false;
    }
    if ((has & KW_CONST) && !check_const(st, n, inst, ip)) {
        ok = false;
        if (BAIL(st))
            return false;
    }
    if ((has & KW_ENUM) && !check_enum(st, n, inst, ip)) {
        ok = false;
        if (BAIL(st))
            return false;
    }
    if ((has & KW_STRING) && json_is_string(inst))
        ok &= v_string(st, n, inst, ip);
    else if ((has & KW_NUMERIC) && json_is_number(inst))
        ok &= v_number(st, n, inst, ip);
    return ok && !st->hard;
}

/* A schema with subschemas: a frame for the dynamic scope and the depth limit. */
__attribute__((noinline)) static bool v_full(struct vstate *st, const struct snode *n, json_t *inst,
                                             const struct ipath *ip, const struct frame *up)
{
    struct frame fr = {up, n, inst};
    uint32_t has = n->has;
    bool ok = true;

    if (++st->depth > SCHEMA_MAX_DEPTH) {
        if (!st->hard) {
            st->hard = REIN_EDEPTH;
            rein_error_set(st->err, REIN_EDEPTH,
                           "validation nested deeper than %d levels (at schema \"%.100s\")",
                           SCHEMA_MAX_DEPTH, n->path[0] ? n->path : "/");
        }
        st->depth--;
        return false;
    }
#define CHECK(expr)                                                                                \
    do {                                                                                           \
        if (!(expr)) {                                                                             \
            ok = false;                                                                            \
            if (BAIL(st))                                                                          \
                goto out;                                                                          \
        }                                                                                          \
    } while (0)
    if (has & KW_TYPE)
        CHECK(check_type(st, n, inst, ip));
    if (has & KW_CONST)
        CHECK(check_const(st, n, inst, ip));
    if (has & KW_ENUM)
        CHECK(check_enum(st, n, inst, ip));
    switch (json_typeof(inst)) {
    case JSON_OBJECT:
        if (has & KW_OBJECT)
            CHECK(v_object(st, n, inst, ip, &fr));
        break;
    case JSON_ARRAY:
        if (has & KW_ARRAY)
            CHECK(v_array(st, n, inst, ip, &fr));
        break;
    case JSON_STRING:
        if (has & KW_STRING)
            CHECK(v_string(st, n, inst, ip));
        break;
    case JSON_INTEGER:
    case JSON_REAL:
        if (has & KW_NUMERIC)
            CHECK(v_number(st, n, inst, ip));
        break;
    default:
        break;
    }
    if (has & KW_REF)
        CHECK(v_ref(st, n->ref, inst, ip, &fr, "$ref"));
    if (has & KW_DYNREF)
        CHECK(v_ref(st, dyn_target(n, &fr), inst, ip, &fr, "$dynamicRef"));
    if (has & KW_COMBINE)
        CHECK(v_combine(st, n, inst, ip, &fr));
#undef CHECK
out:
    st->depth--;
    return ok && !st->hard;
}

static bool v_node(struct vstate *st, const struct snode *n, json_t *inst, const struct ipath *ip,
                   const struct frame *up)
{
    uint32_t has = n->has;

    if (n->kind != SN_SCHEMA)
        return n->kind == SN_TRUE ? true : v_false(st, n, inst, ip);
    if (!(has & (KW_OBJECT | KW_ARRAY | KW_REF | KW_DYNREF | KW_COMBINE)))
        return !has || v_leaf(st, n, inst, ip);
    return v_full(st, n, inst, ip, up);
}

/* ---- defaults ----------------------------------------------------------------------------- */

static json_t *copy_bounded(const json_t *v, int depth)
{
    json_t *out, *c;
    const char *key;
    size_t klen;
    json_t *item;

    if (depth > SCHEMA_MAX_DEPTH)
        return NULL;
    if (json_is_object(v)) {
        out = json_object();
        if (!out)
            return NULL;
        json_object_keylen_foreach((json_t *)v, key, klen, item)
        {
            c = copy_bounded(item, depth + 1);
            if (!c || json_object_setn_new_nocheck(out, key, klen, c)) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    }
    if (json_is_array(v)) {
        out = json_array();
        if (!out)
            return NULL;
        for (size_t i = 0; i < json_array_size(v); i++) {
            c = copy_bounded(json_array_get(v, i), depth + 1);
            if (!c || json_array_append_new(out, c)) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    }
    return json_copy((json_t *)v);
}

static const json_t *default_of(const struct snode *n)
{
    for (int hops = 0; n && n->kind == SN_SCHEMA && hops < 16; hops++) {
        if (n->default_value)
            return n->default_value;
        n = n->ref;
    }
    return NULL;
}

static rein_err fill(const struct snode *n, json_t *inst, int depth)
{
    rein_err rc;

    if (!n || n->kind != SN_SCHEMA || depth > SCHEMA_MAX_DEPTH)
        return REIN_OK;
    if (n->ref && (rc = fill(n->ref, inst, depth + 1)))
        return rc;
    for (size_t i = 0; i < n->nall_of; i++) {
        if ((rc = fill(n->all_of[i], inst, depth + 1)))
            return rc;
    }
    if (json_is_object(inst)) {
        for (size_t i = 0; i < n->nprops_schema; i++) {
            const struct sprop *p = &n->props[i];
            json_t *v = json_object_getn(inst, p->name, p->len);
            const json_t *d;
            if (!v && (d = default_of(p->schema))) {
                v = copy_bounded(d, 0);
                if (!v || json_object_setn_new_nocheck(inst, p->name, p->len, v))
                    return REIN_ENOMEM;
            }
            if (v && (rc = fill(p->schema, v, depth + 1)))
                return rc;
        }
    } else if (json_is_array(inst)) {
        for (size_t i = 0; i < json_array_size(inst); i++) {
            const struct snode *s = i < n->nprefix ? n->prefix[i] : n->items;
            if ((rc = fill(s, json_array_get(inst, i), depth + 1)))
                return rc;
        }
    }
    return REIN_OK;
}

/* ---- public API --------------------------------------------------------------------------- */

/* A free match-data slot of schema (index, md set), or -1 when all are in use. */
static int take_md_slot(const rein_schema *schema, pcre2_match_data **md)
{
    for (int i = 0; i < SCHEMA_MD_SLOTS; i++) {
        int expected = 0;
        /* The compiled schema is otherwise immutable; only these flags change, atomically. */
        if (__atomic_compare_exchange_n((int *)&schema->md_busy[i], &expected, 1, false,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            *md = schema->md_slots[i];
            return i;
        }
    }
    return -1;
}

/* Gives back the slot take_md_slot took (slot >= 0), or frees md when it was made during the
 * validation and nobody keeps it (own). */
static void give_md(const rein_schema *schema, int slot, pcre2_match_data *md, bool own)
{
    if (slot >= 0)
        __atomic_store_n((int *)&schema->md_busy[slot], 0, __ATOMIC_RELEASE);
    else if (own && md)
        pcre2_match_data_free(md);
}

/*
 * REIN_EINVALID with "N validation error(s)" in err (may be NULL). Written by hand: through
 * vsnprintf this one line cost more than finding the errors of a small instance.
 */
static rein_err invalid(rein_error *err, size_t nerr)
{
    static const char tail[] = " validation error";
    char digits[24];
    size_t nd = 0, at = 0;
    bool plural = nerr != 1;

    if (!err)
        return REIN_EINVALID;
    do {
        digits[nd++] = (char)('0' + nerr % 10);
        nerr /= 10;
    } while (nerr);
    err->code = REIN_EINVALID;
    while (nd)
        err->msg[at++] = digits[--nd];
    memcpy(err->msg + at, tail, sizeof(tail) - 1);
    at += sizeof(tail) - 1;
    if (plural)
        err->msg[at++] = 's';
    err->msg[at] = '\0';
    return REIN_EINVALID;
}

/* ---- recording errors along the verdict program ------------------------------------------ */

/* jansson values (record_run.h says what each of these does). */
static bool rec_enum(struct vstate *st, const struct snode *n, json_t *v, const struct ipath *ip)
{
    return check_enum(st, n, v, ip);
}

static bool rec_required(struct vstate *st, const struct vop *op, json_t *v, const struct ipath *ip)
{
    return required_missing(st, op->node, v, ip);
}

static bool rec_general(struct vstate *st, const struct vop *op, json_t *v, const struct ipath *ip,
                        int depth)
{
    int saved = st->depth;
    bool ok;

    st->depth = depth;
    ok = v_node(st, op->node, v, ip, NULL);
    st->depth = saved;
    return ok;
}

#include "schema/vi_tree.h"
#define FN(name) name
#include "schema/record_run.h"
#undef FN

/* rein_doc nodes. */
#include "schema/vi_doc.h"

static bool rec_enum_doc(struct vstate *st, const struct snode *n, const struct rein_doc_node *v,
                         const struct ipath *ip)
{
    struct rein__ival iv;

    if (v->type == JSON_STRING && enum_str_in(n, v->u.str, v->n))
        return true;
    rein__ival_of_doc(&iv, v);
    return enum_error(st, n, &iv, ip);
}

/* A document's object has no index by name: its members are marked in one more pass (only
 * when a required name was missed), so that looking each required name up stays linear. */
static bool rec_required_doc(struct vstate *st, const struct vop *op, const struct rein_doc_node *v,
                             const struct ipath *ip)
{
    const struct snode *n = op->node;
    const struct rein_doc_node *it = v + 1, *end = v + v->u.skip, *val;
    uint64_t small[8], *seen = small;
    size_t words = (op->n + 63) / 64;
    uint32_t hint = 0;
    const char *key;
    size_t len;
    bool ok = true;

    if (words > REIN_ARRAY_SIZE(small) && !(seen = rein_calloc(words, sizeof(*seen)))) {
        st->hard = REIN_ENOMEM;
        return false;
    }
    if (seen == small)
        memset(small, 0, sizeof(small));
    while (rein__doc_member(&it, end, &key, &len, &val)) {
        const struct vprop *p = rein__vprop_find(op, key, len, &hint);
        if (p)
            seen[(size_t)(p - op->props) / 64] |= 1ull << ((size_t)(p - op->props) % 64);
    }
    for (size_t i = 0; i < n->nrequired; i++) {
        size_t at = (size_t)(n->required[i] - n->props);
        if ((seen[at / 64] >> (at % 64)) & 1)
            continue;
        ok = required_error(st, n, n->required[i], ip);
        if (BAIL(st))
            break;
    }
    if (seen != small)
        rein_free(seen);
    return ok;
}

/* The node walker reads jansson values: a general entry's subtree (only it) is made into one.
 * Its errors are written before it is freed, and name the location through ip. */
static bool rec_general_doc(struct vstate *st, const struct vop *op, const struct rein_doc_node *v,
                            const struct ipath *ip, int depth)
{
    json_t *t = rein_doc_node_tree(v);
    bool ok;

    if (!t) {
        st->hard = REIN_ENOMEM; /* the caller walks the whole tree, and finds out the same */
        return false;
    }
    ok = rec_general(st, op, t, ip, depth);
    json_decref(t);
    return ok;
}

#define FN(name) name##_doc
#include "schema/record_run.h"
#undef FN

long rein__schema_probe(const rein_schema *schema, const struct snode *n, json_t *inst, int depth,
                        bool all)
{
    struct vstate st = {0};
    int slot = -1;
    bool ok;

    st.schema = schema;
    st.flags = all ? 0 : REIN_SCHEMA_FIRST_ERROR;
    st.depth = depth;
    st.collect = true; /* counted (st.res is NULL), not written */
    if (schema->uses_regex)
        slot = take_md_slot(schema, &st.md);
    ok = all ? v_node(&st, n, inst, NULL, NULL) : probe(&st, n, inst, NULL, NULL);
    give_md(schema, slot, st.md, true);
    if (st.hard || (all && ok != (st.nerr == 0)))
        return -1;
    return all ? (long)st.nerr : !ok;
}

/* The state of recording errors into res along the program. */
static struct vstate rec_state(const rein_schema *schema, unsigned flags, rein_schema_result *res,
                               rein_error *err)
{
    return (struct vstate){
        .schema = schema, .res = res, .err = err, .flags = flags, .collect = true, .md = res->md};
}

/* rein_schema_validate with a result and a verdict program: the errors recorded along the
 * program (rec_run); the node walker takes over when that cannot decide. */
static rein_err record(const rein_schema *schema, json_t *instance, unsigned flags,
                       rein_schema_result *res, rein_error *err)
{
    struct vstate st = rec_state(schema, flags, res, err);
    bool ok = rec_run(&st, schema->prog, instance, NULL, 0);

    if (st.hard)
        return rein__schema_walk(schema, instance, flags, res, err);
    if (!ok)
        return invalid(err, st.nerr);
    if ((flags & REIN_SCHEMA_FILL_DEFAULTS) && fill(schema->root, instance, 0))
        return rein_error_set(err, REIN_ENOMEM, "out of memory while filling defaults");
    return REIN_OK;
}

/* rein_schema_validate for what its fast path leaves: a result, no program, defaults to fill,
 * an instance the program cannot decide. */
static rein_err validate_rest(const rein_schema *schema, json_t *instance, unsigned flags,
                              rein_schema_result *res, rein_error *err)
{
    bool count = !res && err && !(flags & REIN_SCHEMA_FIRST_ERROR);
    long errs;

    if (res) {
        res->n = 0;
        rein_buf_reset(&res->text);
    }
    if (!schema || !instance)
        return rein_error_set(err, REIN_EINVAL, "a schema and an instance are required");
    /* With a result, the errors are recorded along the verdict program in one pass. Without,
     * the program decides alone: a valid instance has no errors to report, and the program
     * counts an invalid one's errors as the walker does. */
    if (res && schema->prog)
        return record(schema, instance, flags, res, err);
    errs = rein__verdict_run(schema, instance, count);
    if (errs == 0) {
        if ((flags & REIN_SCHEMA_FILL_DEFAULTS) && fill(schema->root, instance, 0))
            return rein_error_set(err, REIN_ENOMEM, "out of memory while filling defaults");
        return REIN_OK;
    }
    if (errs > 0 && !res)
        return invalid(err, (size_t)errs);
    return rein__schema_walk(schema, instance, flags, res, err);
}

rein_err rein_schema_validate(const rein_schema *schema, json_t *instance, unsigned flags,
                              rein_schema_result *res, rein_error *err)
{
    /* Without a result (and no defaults to fill) the program alone decides, and counts the
     * errors when a rein_error asks for all of them: kept apart from the rest, small. */
    if (!res && !(flags & ~(unsigned)REIN_SCHEMA_FIRST_ERROR) && schema && instance &&
        schema->prog) {
        long errs = rein__verdict_run(schema, instance, err && !flags);
        if (errs == 0)
            return REIN_OK;
        if (errs > 0)
            return invalid(err, (size_t)errs);
    }
    return validate_rest(schema, instance, flags, res, err);
}

/* rein_schema_validate_doc with a result: the errors recorded along the program on the nodes
 * (rec_run_doc), as record() does on a tree; *done false when that could not decide (too deep,
 * a hard error, out of memory), and the caller validates the tree instead. */
static rein_err record_doc(const rein_schema *schema, const struct rein_doc_node *root,
                           unsigned flags, rein_schema_result *res, rein_error *err, bool *done)
{
    res->n = 0;
    rein_buf_reset(&res->text);
    /* Initialized where it is declared, as record() does: assigned after its declaration, the
     * state was built in a temporary (zeroed with unaligned 16-byte stores) and copied with
     * aligned 16-byte loads that straddled those stores. Each such load waits for the stores
     * to retire instead of being forwarded from them: ~15 ns per validation with a result
     * (bench/schema.sh's looped message rows), where the tree paid nothing. */
    struct vstate st = rec_state(schema, flags, res, err);
    bool ok = rec_run_doc(&st, schema->prog, root, NULL, 0);

    *done = !st.hard;
    if (st.hard)
        return REIN_OK;
    return ok ? REIN_OK : invalid(err, st.nerr);
}

rein_err rein_schema_validate_doc(const rein_schema *schema, const rein_doc *doc, unsigned flags,
                                  rein_schema_result *res, rein_error *err)
{
    const struct rein_doc_node *root = doc ? rein_doc_root(doc) : NULL;
    const json_t *tree;

    if (flags & REIN_SCHEMA_FILL_DEFAULTS)
        return rein_error_set(err, REIN_EINVAL,
                              "a document is not changed: fill defaults into a copy of its tree");
    /* With a result, the errors are recorded along the program on the nodes; without, the
     * program decides alone, and counts an invalid one's errors when only their number is
     * asked. What neither decides is the walker's, on the tree. */
    if (schema && root && schema->prog && res) {
        bool done;
        rein_err rc = record_doc(schema, root, flags, res, err, &done);
        if (done)
            return rc;
    } else if (schema && root && schema->prog) {
        long errs = rein__verdict_run_doc(schema, root, err && !flags);
        if (errs == 0)
            return REIN_OK;
        if (errs > 0)
            return invalid(err, (size_t)errs);
    }
    tree = doc ? rein_doc_tree(doc) : NULL;
    if (doc && !tree)
        return rein_error_set(err, REIN_ENOMEM, "out of memory while validating");
    return rein_schema_validate(schema, (json_t *)tree, flags, res, err);
}

rein_err rein__schema_walk(const rein_schema *schema, json_t *instance, unsigned flags,
                           rein_schema_result *res, rein_error *err)
{
    struct vstate st = {0};
    int slot = -1;
    bool ok;

    if (res) {
        res->n = 0;
        rein_buf_reset(&res->text);
    }
    if (!schema || !instance)
        return rein_error_set(err, REIN_EINVAL, "a schema and an instance are required");
    st.schema = schema;
    st.res = res;
    st.err = err;
    st.flags = flags;
    st.collect = true;
    st.md = res ? res->md : NULL;
    if (!res && schema->uses_regex)
        slot = take_md_slot(schema, &st.md);
    ok = v_node(&st, schema->root, instance, NULL, NULL);
    give_md(schema, slot, st.md, !res);
    if (st.hard) {
        if (res)
            res->n = 0;
        if (st.hard == REIN_ENOMEM)
            return rein_error_set(err, REIN_ENOMEM, "out of memory while validating");
        return st.hard;
    }
    if (!ok)
        return invalid(err, st.nerr);
    if ((flags & REIN_SCHEMA_FILL_DEFAULTS) && fill(schema->root, instance, 0))
        return rein_error_set(err, REIN_ENOMEM, "out of memory while filling defaults");
    return REIN_OK;
}
