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

rein_err rein__json_unescape(struct rein_buf *out, const char *s, size_t len, uint32_t *hi)
{
    size_t i = 0, run = 0;
    rein_err rc;

    if (len == 0)
        return REIN_OK;
    if (*hi && s[0] != '\\') {
        rc = rein__json_unescape_flush(out, hi);
        if (rc)
            return rc;
    }
    if (!memchr(s, '\\', len))
        return rein_buf_add(out, s, len);
    rc = rein_buf_grow(out, len);
    if (rc)
        return rc;
    while (i < len) {
        const char *bs = memchr(s + i, '\\', len - i);
        char c;
        uint32_t u;

        if (!bs)
            break;
        i = (size_t)(bs - s);
        if (i > run) {
            rc = rein__json_unescape_flush(out, hi);
            if (!rc)
                rc = rein_buf_add(out, s + run, i - run);
            if (rc)
                return rc;
        }
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
            char v;
            switch (c) {
            case 'n':
                v = '\n';
                break;
            case 't':
                v = '\t';
                break;
            case 'r':
                v = '\r';
                break;
            case 'b':
                v = '\b';
                break;
            case 'f':
                v = '\f';
                break;
            case '/':
                v = '/';
                break;
            case '\\':
                v = '\\';
                break;
            case '"':
                v = '"';
                break;
            default:
                v = 0;
                break;
            }
            rc = rein__json_unescape_flush(out, hi);
            if (!rc)
                rc = v ? rein_buf_addch(out, v) : rein_buf_add(out, replacement, 3);
            i += 2;
        }
        if (rc)
            return rc;
        run = i;
    }
    if (run < len) {
        rc = rein__json_unescape_flush(out, hi);
        if (!rc)
            rc = rein_buf_add(out, s + run, len - run);
        return rc;
    }
    return REIN_OK;
}
