/*
 * The JSON writer (include/rein/buf.h).
 *
 * Request bodies on the hot path (a conversation sent to a provider, results sent to a
 * client) are written straight into a buffer instead of building a jansson tree and
 * dumping it. Strings are escaped in runs: bytes that need no escape are copied with one
 * memcpy per run, and invalid UTF-8 becomes U+FFFD so the output is always valid JSON.
 */
#include <rein/buf.h>

#include "core/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rein_jw_init(struct rein_jw *w, struct rein_buf *buf)
{
    memset(w, 0, sizeof(*w));
    w->buf = buf;
}

static bool comma_bit(const struct rein_jw *w)
{
    return (w->need_comma[w->depth / 8] >> (w->depth % 8)) & 1;
}

static void set_comma_bit(struct rein_jw *w, bool on)
{
    uint8_t mask = (uint8_t)(1u << (w->depth % 8));

    if (on)
        w->need_comma[w->depth / 8] |= mask;
    else
        w->need_comma[w->depth / 8] &= (uint8_t)~mask;
}

/* Appends without a call while the buffer has room (alloc never exceeds max, so room below
 * alloc is always within the limit); rein_buf_add grows it otherwise. */
static inline rein_err buf_put(struct rein_buf *b, const void *s, size_t n)
{
    if (b->alloc - b->len > n) {
        memcpy(b->ptr + b->len, s, n);
        b->len += n;
        b->ptr[b->len] = '\0';
        return REIN_OK;
    }
    return rein_buf_add(b, s, n);
}

static inline void put(struct rein_jw *w, const char *s, size_t n)
{
    if (!w->err)
        w->err = buf_put(w->buf, s, n);
}

/* Called before every value and key: places the separator the position needs. */
static bool begin_item(struct rein_jw *w)
{
    if (w->err)
        return false;
    if (w->after_key) {
        w->after_key = false;
        return true;
    }
    if (comma_bit(w))
        put(w, ",", 1);
    set_comma_bit(w, true);
    return !w->err;
}

static void open_container(struct rein_jw *w, char c)
{
    if (!begin_item(w))
        return;
    if (w->depth + 1 >= REIN_JW_MAX_DEPTH) {
        w->err = REIN_EDEPTH;
        return;
    }
    put(w, &c, 1);
    w->depth++;
    set_comma_bit(w, false);
}

static void close_container(struct rein_jw *w, char c)
{
    if (w->err)
        return;
    if (w->depth == 0 || w->after_key) {
        w->err = REIN_ESTATE;
        return;
    }
    w->depth--;
    put(w, &c, 1);
}

void rein_jw_obj_begin(struct rein_jw *w)
{
    open_container(w, '{');
}

void rein_jw_obj_end(struct rein_jw *w)
{
    close_container(w, '}');
}

void rein_jw_arr_begin(struct rein_jw *w)
{
    open_container(w, '[');
}

void rein_jw_arr_end(struct rein_jw *w)
{
    close_container(w, ']');
}

/* '1' for the bytes a JSON string holds as they are: printable ASCII but '"' and '\\'. */
static const char plain[257] = "00000000000000000000000000000000" /* 0x00-0x1f */
                               "11011111111111111111111111111111" /* 0x20-0x3f */
                               "11111111111111111111111111110111" /* 0x40-0x5f */
                               "11111111111111111111111111111111" /* 0x60-0x7f */
                               "00000000000000000000000000000000" /* 0x80-0x9f */
                               "00000000000000000000000000000000" /* 0xa0-0xbf */
                               "00000000000000000000000000000000" /* 0xc0-0xdf */
                               "00000000000000000000000000000000" /* 0xe0-0xff */;

/* The escape for c (below 0x80, not plain) into esc; its length. */
static size_t escape_of(unsigned char c, char esc[8])
{
    static const char hex[] = "0123456789abcdef";

    switch (c) {
    case '"':
    case '\\':
        esc[0] = '\\', esc[1] = (char)c;
        return 2;
    case '\n':
        memcpy(esc, "\\n", 2);
        return 2;
    case '\r':
        memcpy(esc, "\\r", 2);
        return 2;
    case '\t':
        memcpy(esc, "\\t", 2);
        return 2;
    case '\b':
        memcpy(esc, "\\b", 2);
        return 2;
    case '\f':
        memcpy(esc, "\\f", 2);
        return 2;
    default:
        memcpy(esc, "\\u00", 4);
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        return 6;
    }
}

rein_err rein_json_escape(struct rein_buf *b, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t run = 0, i = 0;
    rein_err rc = REIN_OK;

    if (len >= 8 && len < b->alloc - b->len) {
        /* Room for the plain copy: the plain bytes are copied eight at a time as they are
         * checked, the last eight (overlapping the ones before) when len is no multiple of
         * eight, so a text delta of a stream (a few plain bytes) takes no byte loop and no
         * memcpy call; what follows the first eight with a byte to escape goes the general
         * way. */
        char *out = b->ptr + b->len;
        while (len - i >= 8 && rein__json_plain8(s + i)) {
            memcpy(out + i, s + i, 8);
            i += 8;
        }
        if (i < len && len - i < 8 && rein__json_plain8(s + len - 8)) {
            memcpy(out + len - 8, s + len - 8, 8);
            i = len;
        }
        b->len += i;
        b->ptr[b->len] = '\0';
        run = i;
    }
    while (!rc) {
        char esc[8];
        size_t elen, seq;

        /* The common case, a run of plain bytes: eight at a time, then by table. */
        while (len - i >= 8 && rein__json_plain8(s + i))
            i += 8;
        while (i < len && plain[s[i]] == '1')
            i++;
        if (i >= len)
            break;
        if (s[i] >= 0x80) {
            seq = rein__utf8_seq_len(s + i, len - i);
            if (seq) {
                i += seq;
                continue;
            }
            memcpy(esc, "\\ufffd", 6);
            elen = 6;
        } else {
            elen = escape_of(s[i], esc);
        }
        rc = buf_put(b, s + run, i - run);
        if (!rc)
            rc = buf_put(b, esc, elen);
        i++;
        run = i;
    }
    if (!rc && len > run)
        rc = buf_put(b, s + run, len - run);
    return rc;
}

/*
 * '"', s escaped, then tail (the closing quote, with ':' after a key). Most keys and values
 * need no escape: with room for the plain copy they are copied and checked in one pass, and
 * only a string with something to escape goes through rein_json_escape from that point on.
 */
static void quoted(struct rein_jw *w, const char *s, size_t len, const char *tail, size_t tlen)
{
    struct rein_buf *b = w->buf;
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    char *out;

    if (w->err)
        return;
    if (b->alloc - b->len <= len + 1 + tlen) {
        put(w, "\"", 1);
        if (!w->err)
            w->err = rein_json_escape(b, s, len);
        put(w, tail, tlen);
        return;
    }
    out = b->ptr + b->len;
    *out++ = '"';
    while (len - i >= 8 && rein__json_plain8(u + i)) {
        memcpy(out + i, u + i, 8);
        i += 8;
    }
    while (i < len && plain[u[i]] == '1') {
        out[i] = (char)u[i];
        i++;
    }
    b->len += 1 + i;
    b->ptr[b->len] = '\0';
    if (i < len)
        w->err = rein_json_escape(b, s + i, len - i);
    put(w, tail, tlen);
}

/* Before a key: only inside an object and not right after another key (REIN_ESTATE), then
 * the separator. False when nothing may be written. */
static bool begin_key(struct rein_jw *w)
{
    if (w->after_key || w->depth == 0) {
        if (!w->err)
            w->err = REIN_ESTATE;
        return false;
    }
    return begin_item(w);
}

void rein_jw_keyn(struct rein_jw *w, const char *key, size_t len)
{
    if (!begin_key(w))
        return;
    quoted(w, key, len, "\":", 2);
    w->after_key = true;
}

void rein_jw_key_quoted(struct rein_jw *w, const char *quoted, size_t len)
{
    if (!begin_key(w))
        return;
    put(w, quoted, len);
    w->after_key = true;
}

void rein_jw_key(struct rein_jw *w, const char *key)
{
    rein_jw_keyn(w, key, strlen(key));
}

void rein_jw_strn(struct rein_jw *w, const char *s, size_t len)
{
    if (!begin_item(w))
        return;
    quoted(w, s, len, "\"", 1);
}

void rein_jw_str(struct rein_jw *w, const char *s)
{
    if (!s)
        rein_jw_null(w);
    else
        rein_jw_strn(w, s, strlen(s));
}

/* The decimal digits of u (and a '-' when negative) ending at end; returns where they start.
 * By hand: snprintf's format machinery was about 1,500 instructions per number, and a
 * streamed answer writes several numbers per chunk. */
static char *decimal(char *end, uint64_t u, bool negative)
{
    char *p = end;

    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (negative)
        *--p = '-';
    return p;
}

void rein_jw_int(struct rein_jw *w, int64_t v)
{
    char tmp[24], *p;

    /* the magnitude as unsigned, so INT64_MIN needs no negation that overflows */
    p = decimal(tmp + sizeof(tmp), v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, v < 0);
    if (begin_item(w))
        put(w, p, (size_t)(tmp + sizeof(tmp) - p));
}

void rein_jw_uint(struct rein_jw *w, uint64_t v)
{
    char tmp[24], *p = decimal(tmp + sizeof(tmp), v, false);

    if (begin_item(w))
        put(w, p, (size_t)(tmp + sizeof(tmp) - p));
}

/*
 * The shortest decimal that reads back as v: the fewest significant digits (1 to 17) whose
 * correctly rounded value is v, laid out as Python's repr and JavaScript do it: plain
 * notation for exponents from -4 to 15 ("2.8", "0.0001", "1e+16" beyond), always with a
 * fraction or an exponent so readers keep it a real ("2.0"), exponents with at least two
 * digits ("1e-07"). One writer for every JSON rein prints, so a number reads the same on
 * every path.
 */
int rein_json_double_text(double v, char out[REIN_JSON_DOUBLE_MAX])
{
    char sci[40], digits[20] = "0";
    int prec, exp10, nd = 0, n = 0;
    const char *p;

    if (!isfinite(v)) {
        memcpy(out, "null", 5);
        return 4;
    }
    if (v == 0) {
        n = snprintf(out, REIN_JSON_DOUBLE_MAX, "%s", signbit(v) ? "-0.0" : "0.0");
        return n;
    }
    for (prec = 1; prec < 17; prec++) {
        snprintf(sci, sizeof(sci), "%.*e", prec - 1, v);
        if (strtod(sci, NULL) == v)
            break;
    }
    snprintf(sci, sizeof(sci), "%.*e", prec - 1, v);
    /* sci is "-d.ddde-XX": collect the digits and the exponent. */
    for (p = sci; *p && *p != 'e'; p++) {
        if (*p >= '0' && *p <= '9' && nd < (int)sizeof(digits) - 1)
            digits[nd++] = *p;
    }
    if (nd == 0 || *p != 'e') { /* cannot happen: %e always gives digits and an exponent */
        memcpy(out, "null", 5);
        return 4;
    }
    exp10 = (int)strtol(p + 1, NULL, 10);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    if (v < 0)
        out[n++] = '-';
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            out[n++] = '0';
            out[n++] = '.';
            for (int z = -1; z > exp10; z--)
                out[n++] = '0';
            memcpy(out + n, digits, (size_t)nd);
            n += nd;
        } else {
            for (int i = 0; i <= exp10; i++)
                out[n++] = i < nd ? digits[i] : '0';
            out[n++] = '.';
            if (nd > exp10 + 1) {
                memcpy(out + n, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
                n += nd - exp10 - 1;
            } else {
                out[n++] = '0';
            }
        }
    } else {
        out[n++] = digits[0];
        if (nd > 1) {
            out[n++] = '.';
            memcpy(out + n, digits + 1, (size_t)(nd - 1));
            n += nd - 1;
        }
        n += snprintf(out + n, (size_t)(REIN_JSON_DOUBLE_MAX - n), "e%c%02d", exp10 < 0 ? '-' : '+',
                      exp10 < 0 ? -exp10 : exp10);
    }
    out[n] = '\0';
    return n;
}

void rein_jw_double(struct rein_jw *w, double v)
{
    char tmp[REIN_JSON_DOUBLE_MAX];
    int n;

    if (!isfinite(v)) {
        rein_jw_null(w);
        return;
    }
    n = rein_json_double_text(v, tmp);
    if (begin_item(w))
        put(w, tmp, (size_t)n);
}

void rein_jw_bool(struct rein_jw *w, bool v)
{
    if (begin_item(w))
        put(w, v ? "true" : "false", v ? 4 : 5);
}

void rein_jw_null(struct rein_jw *w)
{
    if (begin_item(w))
        put(w, "null", 4);
}

void rein_jw_raw(struct rein_jw *w, const char *json, size_t len)
{
    if (begin_item(w))
        put(w, json, len);
}

rein_err rein_jw_finish(const struct rein_jw *w)
{
    if (w->err)
        return w->err;
    return (w->depth || w->after_key) ? REIN_ESTATE : REIN_OK;
}
