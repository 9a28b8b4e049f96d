/*
 * JSON string unescaping for the streaming decoders.
 *
 * A streamed field arrives as many small JSON strings (one per delta), and a model or server
 * may split a character between them: a UTF-16 surrogate pair written as two \u escapes can
 * land in two deltas. The caller keeps one `hi` slot per field, so the pair is joined across
 * deltas. Text without a backslash is copied as is (the common case, one memcpy).
 */
#include "provider_int.h"

#include <string.h>

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

static bool hex4(const char *s, uint32_t *out)
{
    uint32_t v = 0;

    for (int i = 0; i < 4; i++) {
        int h = rein__hex_digit(s[i]);
        if (h < 0)
            return false;
        v = (v << 4) | (uint32_t)h;
    }
    *out = v;
    return true;
}

static rein_err put_cp(struct rein_buf *out, uint32_t cp)
{
    char u[4];
    size_t n;

    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return rein_buf_add(out, u, n);
}

rein_err rein__json_unescape_flush(struct rein_buf *out, uint32_t *hi)
{
    if (!*hi)
        return REIN_OK;
    *hi = 0;
    return rein_buf_add(out, replacement, 3);
}

/* One \uXXXX escape (value u), joining surrogate pairs through *hi. */
static rein_err put_u16(struct rein_buf *out, uint32_t u, uint32_t *hi)
{
    rein_err rc;

    if (u >= 0xD800 && u <= 0xDBFF) {
        rc = rein__json_unescape_flush(out, hi);
        *hi = u;
        return rc;
    }
    if (u >= 0xDC00 && u <= 0xDFFF) {
        if (!*hi)
            return rein_buf_add(out, replacement, 3);
        uint32_t cp = 0x10000 + ((*hi - 0xD800) << 10) + (u - 0xDC00);
        *hi = 0;
        return put_cp(out, cp);
    }
    rc = rein__json_unescape_flush(out, hi);
    return rc ? rc : put_cp(out, u);
}

/* rein_buf_add without the call: a 10 MB argument in one delta has millions of escapes (every
 * quote of the JSON inside is one), and a call per piece was most of its unescaping time. */
static inline rein_err put(struct rein_buf *out, const char *p, size_t n)
{
    if (n >= out->alloc - out->len)
        return rein_buf_add(out, p, n);
    memcpy(out->ptr + out->len, p, n);
    out->len += n;
    out->ptr[out->len] = '\0';
    return REIN_OK;
}

/* What each character after a backslash stands for, 0 for the ones JSON does not allow. */
static const char escaped[256] = {['n'] = '\n', ['t'] = '\t', ['r'] = '\r',  ['b'] = '\b',
                                  ['f'] = '\f', ['/'] = '/',  ['\\'] = '\\', ['"'] = '"'};

#define ONES UINT64_C(0x0101010101010101)
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The index of the first flagged byte of a zero byte test's mask (the lowest set one is exact). */
#define FIRST_FLAGGED(m) ((size_t)__builtin_ctzll(m) >> 3)
#endif

/*
 * Copies s[i..len) to the end of out, unescaping the two-character escapes on the way, up to a
 * \u escape, an invalid one, a backslash at the end or the end itself; returns where it
 * stopped. The text between a long argument's escapes is often a few bytes (every quote of the
 * JSON inside is one), too short to pay for a memchr, a memcpy and a buffer call each: eight
 * bytes at a time are tested for a backslash (the zero byte test on the word XOR backslashes)
 * and stored whole, the bytes past the backslash overwritten next. out must have room for
 * len - i + 8 more bytes.
 */
static size_t copy_simple(struct rein_buf *out, const char *s, size_t i, size_t len)
{
    char *o = out->ptr + out->len, *o0 = o;

    while (i < len) {
        char v;
        for (; len - i >= 8; i += 8, o += 8) {
            uint64_t w, x, m;
            memcpy(&w, s + i, 8);
            x = w ^ (ONES * '\\');
            m = (x - ONES) & ~x & (ONES * 0x80);
            memcpy(o, &w, 8);
            if (m) {
#ifdef FIRST_FLAGGED
                size_t k = FIRST_FLAGGED(m);
                i += k;
                o += k;
#endif
                break;
            }
        }
        for (; i < len && s[i] != '\\'; i++)
            *o++ = s[i];
        if (i + 1 >= len || !(v = escaped[(unsigned char)s[i + 1]]))
            break;
        *o++ = v;
        i += 2;
    }
    out->len += (size_t)(o - o0);
    out->ptr[out->len] = '\0';
    return i;
}

rein_err rein__json_unescape(struct rein_buf *out, const char *s, size_t len, uint32_t *hi)
{
    size_t i = 0;
    rein_err rc = REIN_OK;

    if (len == 0)
        return REIN_OK;
    if (*hi && s[0] != '\\') {
        rc = rein__json_unescape_flush(out, hi);
        if (rc)
            return rc;
    }
    if (!memchr(s, '\\', len))
        return rein_buf_add(out, s, len);
    /* Room for the usual case (the text never outgrows s); replacements may outgrow it. */
    rc = rein_buf_grow(out, len);
    if (rc)
        return rc;
    while (i < len) {
        uint32_t u;
        char c;

        /* A high surrogate waits for a \u escape (or the end of the piece); anything else
         * makes it a lone half. */
        if (*hi && !(s[i] == '\\' && (i + 1 >= len || s[i + 1] == 'u'))) {
            rc = rein__json_unescape_flush(out, hi);
            if (rc)
                return rc;
        }
        if (out->alloc - out->len > len - i + 8 || rein_buf_grow(out, len - i + 8) == REIN_OK) {
            i = copy_simple(out, s, i, len);
        } else if (s[i] != '\\') {
            /* Near the buffer's limit: this run only, with the room it needs. */
            const char *bs = memchr(s + i, '\\', len - i);
            size_t n = bs ? (size_t)(bs - (s + i)) : len - i;
            rc = put(out, s + i, n);
            i += n;
            if (rc)
                return rc;
        }
        if (i >= len)
            return REIN_OK;
        if (i + 1 >= len) /* a lone backslash at the end: not JSON; keep a marker */
            return rein_buf_add(out, replacement, 3);
        c = s[i + 1];
        if (c == 'u') {
            if (i + 6 <= len && hex4(s + i + 2, &u)) {
                rc = put_u16(out, u, hi);
                i += 6;
            } else {
                rc = rein_buf_add(out, replacement, 3);
                i += 2;
            }
        } else {
            char v = escaped[(unsigned char)c];
            if (*hi)
                rc = rein__json_unescape_flush(out, hi);
            if (!rc)
                rc = v ? put(out, &v, 1) : rein_buf_add(out, replacement, 3);
            i += 2;
        }
        if (rc)
            return rc;
    }
    return REIN_OK;
}
