/*
 * The error list of a validation (rein_schema_result) and the small renderers that put
 * instance values into messages: quoted strings cut to a readable length, numbers as written,
 * JSON Pointers of instance locations and a depth- and size-bounded JSON brief for enum and
 * const values. All of it appends to bounded rein buffers; nothing here recurses without a
 * limit, so a hostile instance cannot exhaust the stack through a message.
 */
#include "schema/schema_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Longest received string shown in a message, in code points. */
#define QUOTE_MAX 60

rein_schema_result *rein_schema_result_new(void)
{
    rein_schema_result *res = rein_calloc(1, sizeof(*res));

    if (!res)
        return NULL;
    rein_buf_init(&res->text, (size_t)1 << 24);
    return res;
}

void rein_schema_result_free(rein_schema_result *res)
{
    if (!res)
        return;
    if (res->md)
        pcre2_match_data_free(res->md);
    rein_buf_release(&res->text);
    rein_free(res->errs);
    rein_free(res);
}

size_t rein_schema_result_count(const rein_schema_result *res)
{
    return res ? res->n : 0;
}

static const char *part(const rein_schema_result *res, size_t i, size_t which)
{
    const struct serr *e;
    size_t off;

    if (!res || i >= res->n)
        return NULL;
    e = &res->errs[i];
    switch (which) {
    case 0:
        off = e->ipath;
        break;
    case 1:
        off = e->kpath;
        break;
    case 2:
        off = e->kw;
        break;
    case 3:
        off = e->msg;
        break;
    default:
        off = e->prop;
        break;
    }
    return off == SIZE_MAX ? NULL : res->text.ptr + off;
}

const char *rein_schema_result_instance_path(const rein_schema_result *res, size_t i)
{
    return part(res, i, 0);
}

const char *rein_schema_result_keyword_path(const rein_schema_result *res, size_t i)
{
    return part(res, i, 1);
}

const char *rein_schema_result_keyword(const rein_schema_result *res, size_t i)
{
    return part(res, i, 2);
}

const char *rein_schema_result_message(const rein_schema_result *res, size_t i)
{
    return part(res, i, 3);
}

const char *rein_schema_result_property(const rein_schema_result *res, size_t i)
{
    return part(res, i, 4);
}

/* ---- renderers ---------------------------------------------------------------------------- */

void rein__mb_add_grow(struct mbuf *m, const char *s, size_t len)
{
    if (!m->failed && rein_buf_add(m->b, s, len))
        m->failed = true;
}

void rein__mb_adds(struct mbuf *m, const char *s)
{
    rein__mb_add(m, s, strlen(s));
}

static void add_u(struct mbuf *m, unsigned long long v)
{
    char tmp[24];
    size_t i = sizeof(tmp);

    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    rein__mb_add(m, tmp + i, sizeof(tmp) - i);
}

void rein__mb_int(struct mbuf *m, long long v)
{
    if (v < 0) {
        rein__mb_add(m, "-", 1);
        add_u(m, 0ull - (unsigned long long)v);
    } else {
        add_u(m, (unsigned long long)v);
    }
}

/*
 * printf-style appending. Messages are written on every failed validation, so the few
 * conversions they use (%s, %zu, %lld, %%) are done here; anything else hands the rest of
 * the format to vsnprintf.
 */
void rein__mb_addf(struct mbuf *m, const char *fmt, ...)
{
    va_list ap;
    const char *p = fmt, *lit = fmt;

    va_start(ap, fmt);
    while (*p) {
        if (*p != '%') {
            p++;
            continue;
        }
        rein__mb_add(m, lit, (size_t)(p - lit));
        if (p[1] == 's') {
            rein__mb_adds(m, va_arg(ap, const char *));
            p += 2;
        } else if (p[1] == 'z' && p[2] == 'u') {
            add_u(m, va_arg(ap, size_t));
            p += 3;
        } else if (p[1] == 'l' && p[2] == 'l' && p[3] == 'd') {
            rein__mb_int(m, va_arg(ap, long long));
            p += 4;
        } else if (p[1] == '%') {
            rein__mb_add(m, "%", 1);
            p += 2;
        } else {
            /* p is the rest of fmt, which the compiler checked at the call (REIN_PRINTF). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
            if (!m->failed && rein_buf_addvf(m->b, p, ap))
                m->failed = true;
#pragma GCC diagnostic pop
            va_end(ap);
            return;
        }
        lit = p;
    }
    rein__mb_add(m, lit, (size_t)(p - lit));
    va_end(ap);
}

size_t rein__utf8_len(const char *s, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* True when none of the 8 bytes of w needs escaping (a control character, '"' or '\\'): the
 * "has a byte less than n" word tricks, exact as to whether any byte does. */
static inline bool word_plain(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t quote = w ^ (ones * '"'), bslash = w ^ (ones * '\\');

    return !((((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) | ((bslash - ones) & ~bslash)) &
             highs);
}

static void escape_into(struct mbuf *m, const char *s, size_t len)
{
    size_t start = 0, i = 0;

    /* Most text needs no escape: skip it a word at a time. */
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (!word_plain(w))
            break;
    }
    for (; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        rein__mb_add(m, s + start, i - start);
        switch (c) {
        case '"':
            rein__mb_lit(m, "\\\"");
            break;
        case '\\':
            rein__mb_lit(m, "\\\\");
            break;
        case '\n':
            rein__mb_lit(m, "\\n");
            break;
        case '\t':
            rein__mb_lit(m, "\\t");
            break;
        case '\r':
            rein__mb_lit(m, "\\r");
            break;
        default:
            rein__mb_addf(m, "\\u%04x", c);
            break;
        }
        start = i + 1;
    }
    rein__mb_add(m, s + start, len - start);
}

void rein__quote(struct mbuf *m, const char *s, size_t len)
{
    size_t cps = 0, cut = len;

    /* A string of at most QUOTE_MAX bytes has at most as many code points: never cut. */
    for (size_t i = len <= QUOTE_MAX ? len : 0; i < len; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (cps == QUOTE_MAX) {
                cut = i;
                break;
            }
            cps++;
        }
    }
    rein__mb_add(m, "\"", 1);
    escape_into(m, s, cut);
    if (cut < len)
        rein__mb_addf(m, "…\" (%zu characters)", rein__utf8_len(s, len));
    else
        rein__mb_add(m, "\"", 1);
}

void rein__double_write(struct mbuf *m, double d)
{
    char tmp[40];
    int n = 0;

    if (!isfinite(d)) {
        rein__mb_adds(m, d != d ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
        return;
    }
    if (d == floor(d) && fabs(d) < 1e15) {
        /* Integral values print exactly as integers, the common case, without snprintf. */
        if (d == 0 && signbit(d))
            rein__mb_add(m, "-", 1);
        rein__mb_int(m, (long long)d);
        rein__mb_add(m, ".0", 2);
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    if (n > 0 && (size_t)n < sizeof(tmp) - 3 && !strpbrk(tmp, ".eEn")) {
        memcpy(tmp + n, ".0", 3);
        n += 2;
    }
    rein__mb_add(m, tmp, n > 0 ? (size_t)n : 0);
}

void rein__num_write(struct mbuf *m, const struct snum *n)
{
    if (n->is_int)
        rein__mb_int(m, n->i);
    else
        rein__double_write(m, n->d);
}

static void brief(struct mbuf *m, const json_t *v, size_t max, int depth)
{
    const char *key;
    size_t klen;
    json_t *item;
    size_t i = 0;

    if (m->b->len > max) {
        rein__mb_lit(m, "…");
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        if (depth > 8) {
            rein__mb_lit(m, "{…}");
            return;
        }
        rein__mb_add(m, "{", 1);
        json_object_keylen_foreach((json_t *)v, key, klen, item)
        {
            if (i++)
                rein__mb_add(m, ",", 1);
            if (m->b->len > max) {
                rein__mb_lit(m, "…");
                break;
            }
            rein__mb_add(m, "\"", 1);
            escape_into(m, key, klen);
            rein__mb_add(m, "\":", 2);
            brief(m, item, max, depth + 1);
        }
        rein__mb_add(m, "}", 1);
        break;
    case JSON_ARRAY:
        if (depth > 8) {
            rein__mb_lit(m, "[…]");
            return;
        }
        rein__mb_add(m, "[", 1);
        for (i = 0; i < json_array_size(v); i++) {
            if (i)
                rein__mb_add(m, ",", 1);
            if (m->b->len > max) {
                rein__mb_lit(m, "…");
                break;
            }
            brief(m, json_array_get(v, i), max, depth + 1);
        }
        rein__mb_add(m, "]", 1);
        break;
    case JSON_STRING:
        rein__quote(m, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        rein__mb_int(m, (long long)json_integer_value(v));
        break;
    case JSON_REAL:
        rein__double_write(m, json_real_value(v));
        break;
    case JSON_TRUE:
        rein__mb_lit(m, "true");
        break;
    case JSON_FALSE:
        rein__mb_lit(m, "false");
        break;
    default:
        rein__mb_lit(m, "null");
        break;
    }
}

void rein__json_brief(struct mbuf *m, const json_t *v, size_t max)
{
    brief(m, v, m->b->len + max, 0);
}

void rein__describe_ival(struct mbuf *m, const struct rein__ival *v, bool with_type)
{
    /* Scalars written directly: what rein__json_brief would write for them, without its
     * bookkeeping (this runs for most errors). */
    switch (v->type) {
    case JSON_OBJECT:
        rein__mb_lit(m, "object");
        return;
    case JSON_ARRAY:
        rein__mb_lit(m, "array");
        return;
    case JSON_NULL:
        rein__mb_lit(m, "null");
        return;
    case JSON_STRING:
        if (with_type)
            rein__mb_lit(m, "string ");
        rein__quote(m, v->str, v->len);
        return;
    case JSON_INTEGER:
        if (with_type)
            rein__mb_lit(m, "integer ");
        rein__mb_int(m, (long long)v->i);
        return;
    case JSON_REAL:
        if (with_type)
            rein__mb_lit(m, "number ");
        rein__double_write(m, v->d);
        return;
    case JSON_TRUE:
        rein__mb_add(m, "boolean true", with_type ? 12 : 4);
        return;
    default:
        rein__mb_add(m, "boolean false", with_type ? 13 : 5);
        return;
    }
}

void rein__ival_of(struct rein__ival *iv, const json_t *v)
{
    iv->type = json_typeof(v);
    iv->str = iv->type == JSON_STRING ? json_string_value(v) : NULL;
    iv->len = iv->type == JSON_STRING ? json_string_length(v) : 0;
    iv->i = iv->type == JSON_INTEGER ? json_integer_value(v) : 0;
    iv->d = iv->type == JSON_REAL ? json_real_value(v) : 0;
}

void rein__describe(struct mbuf *m, const json_t *v, bool with_type)
{
    struct rein__ival iv;

    rein__ival_of(&iv, v);
    rein__describe_ival(m, &iv, with_type);
}

static void pointer_token(struct mbuf *m, const char *s, size_t len)
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

void rein__ipath_write(struct mbuf *m, const struct ipath *ip)
{
    const struct ipath *chain[64];
    size_t n = 0;

    if (!ip)
        return;
    /* The chain runs from the leaf up; write it from the root down. Very deep paths are
     * written in pieces so no frame count limits the output. */
    if (ip->up) {
        const struct ipath *p = ip;
        size_t depth = 0;
        while (p) {
            depth++;
            p = p->up;
        }
        if (depth > 64) {
            const struct ipath *q = ip;
            for (size_t k = 0; k < 64; k++)
                q = q->up;
            rein__ipath_write(m, q);
            for (p = ip; p != q; p = p->up)
                chain[n++] = p;
            goto emit;
        }
    }
    for (const struct ipath *p = ip; p; p = p->up)
        chain[n++] = p;
emit:
    while (n > 0) {
        const struct ipath *p = chain[--n];
        rein__mb_add(m, "/", 1);
        if (p->key)
            pointer_token(m, p->key, p->len);
        else
            rein__mb_int(m, (long long)p->len);
    }
}

/* ---- equality ----------------------------------------------------------------------------- */

static bool num_eq(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b))
        return json_integer_value(a) == json_integer_value(b);
    if (json_is_real(a) && json_is_real(b))
        return json_real_value(a) == json_real_value(b);
    const json_t *i = json_is_integer(a) ? a : b;
    double d = json_is_real(a) ? json_real_value(a) : json_real_value(b);
    long long iv = json_integer_value(i);
    if (d != floor(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
        return false;
    return (long long)d == iv;
}

bool rein__json_equal(const json_t *a, const json_t *b, int depth, bool *too_deep)
{
    const char *key;
    size_t klen;
    json_t *va;

    if (a == b)
        return true;
    if (depth > SCHEMA_MAX_DEPTH) {
        *too_deep = true;
        return false;
    }
    if (json_is_number(a) && json_is_number(b))
        return num_eq(a, b);
    if (json_typeof(a) != json_typeof(b))
        return false;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++) {
            if (!rein__json_equal(json_array_get(a, i), json_array_get(b, i), depth + 1, too_deep))
                return false;
        }
        return true;
    case JSON_OBJECT:
        if (json_object_size(a) != json_object_size(b))
            return false;
        json_object_keylen_foreach((json_t *)a, key, klen, va)
        {
            json_t *vb = json_object_getn(b, key, klen);
            if (!vb || !rein__json_equal(va, vb, depth + 1, too_deep))
                return false;
        }
        return true;
    default:
        return true;
    }
}
