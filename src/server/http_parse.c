/*
 * The server's own parsers of untrusted bytes (src/server/server_int.h): percent-decoding of
 * path segments and query values, route matching, content types, Accept and
 * Authorization. libmicrohttpd is told not to decode the path, so an encoded '/' or "..%2F"
 * reaches route matching as written and is judged after exactly one decoding.
 */
#include "server/server_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool rein__http_pct_decode(const char *in, size_t len, bool plus_space, char *out, size_t *out_len)
{
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (c == '%') {
            int hi, lo;
            if (i + 2 >= len)
                return false;
            hi = rein__hex_digit(in[i + 1]);
            lo = rein__hex_digit(in[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                return false;
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus_space) {
            out[o++] = ' ';
        } else if (c == '\0') {
            return false;
        } else {
            out[o++] = c;
        }
    }
    out[o] = '\0';
    if (out_len)
        *out_len = o;
    return true;
}

/* Length of the segment starting at s (up to '/' or the end). */
static size_t seg_len(const char *s)
{
    const char *slash = strchr(s, '/');

    return slash ? (size_t)(slash - s) : strlen(s);
}

bool rein__http_match(const char *pattern, const char *path, rein_arena *arena, char names[][32],
                      char **values, int *nparams)
{
    const char *p = pattern, *q = path;
    int n = 0;

    *nparams = 0;
    if (*p != '/' || *q != '/')
        return false;
    for (;;) {
        size_t plen, qlen;
        p++;
        q++;
        plen = seg_len(p);
        qlen = seg_len(q);
        if (plen >= 2 && p[0] == '{' && p[plen - 1] == '}') {
            char *v;
            size_t vlen;
            if (qlen == 0 || n >= REIN_HTTP_MAX_PARAMS || plen - 2 >= 32)
                return false;
            memcpy(names[n], p + 1, plen - 2);
            names[n][plen - 2] = '\0';
            v = rein_arena_alloc(arena, qlen + 1);
            if (v && !rein__http_pct_decode(q, qlen, false, v, &vlen))
                v = NULL;
            values[n++] = v;
        } else if (!memchr(q, '%', qlen)) {
            /* Decoding a segment without '%' changes nothing: compared as written (every
             * request tries every route, so this is most of routing's work). */
            if (qlen != plen || memcmp(q, p, plen) != 0)
                return false;
        } else {
            char buf[128];
            size_t blen;
            if (qlen >= sizeof(buf) || !rein__http_pct_decode(q, qlen, false, buf, &blen) ||
                blen != plen || memcmp(buf, p, plen) != 0)
                return false;
        }
        p += plen;
        q += qlen;
        if (*p == '\0' || *q == '\0')
            break;
    }
    if (*p != '\0' || *q != '\0')
        return false;
    *nparams = n;
    return true;
}

/* True when the media type at s (up to ';' or ',') equals want, ignoring case and spaces. */
static bool media_is(const char *s, size_t len, const char *want)
{
    size_t wl = strlen(want);

    while (len > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    return len == wl && strncasecmp(s, want, wl) == 0;
}

bool rein__http_is_json_type(const char *ct)
{
    const char *semi;

    if (!ct)
        return false;
    semi = strchr(ct, ';');
    return media_is(ct, semi ? (size_t)(semi - ct) : strlen(ct), "application/json");
}

bool rein__http_accepts_sse(const char *accept)
{
    const char *p = accept;

    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *semi = memchr(p, ';', len);
        if (media_is(p, semi ? (size_t)(semi - p) : len, "text/event-stream"))
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

bool rein_secret_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    /* Walk the longer length so the time does not depend on where the first mismatch is. */
    size_t n = alen > blen ? alen : blen;
    unsigned char diff = (unsigned char)(alen != blen);

    for (size_t i = 0; i < n; i++) {
        unsigned char x = i < alen ? (unsigned char)a[i] : 0;
        unsigned char y = i < blen ? (unsigned char)b[i] : 0;
        diff |= (unsigned char)(x ^ y);
    }
    return diff == 0;
}

bool rein__http_bearer_ok(const char *authorization, char *const *keys, int nkeys)
{
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return false;
    return rein__http_key_ok(authorization + 7, keys, nkeys);
}

bool rein__http_key_ok(const char *token, char *const *keys, int nkeys)
{
    size_t tlen;
    bool ok = false;

    if (!token)
        return false;
    while (*token == ' ')
        token++;
    tlen = strlen(token);
    while (tlen > 0 && token[tlen - 1] == ' ')
        tlen--;
    if (tlen == 0)
        return false;
    for (int i = 0; i < nkeys; i++) {
        if (rein_secret_equal(token, tlen, keys[i], strlen(keys[i])))
            ok = true;
    }
    return ok;
}

bool rein__http_parse_uint(const char *text, long lo, long hi, long *out)
{
    long v = 0;
    size_t n = 0;

    if (!text)
        return false;
    /* At most 9 digits, so the value (below 10^9) cannot overflow: summed as it is read. */
    for (; text[n]; n++) {
        if (n == 9 || text[n] < '0' || text[n] > '9')
            return false;
        v = v * 10 + (text[n] - '0');
    }
    if (n == 0 || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* ---- the first request head, before libmicrohttpd reads it ------------------------------ */

/* The line of len bytes at p ends at "\r\n" or a bare "\n" (as libmicrohttpd reads lines);
 * returns its length without the ending and sets *next past it, or returns SIZE_MAX when the
 * line has not ended within len bytes. */
static size_t head_line(const char *p, size_t len, size_t *next)
{
    const char *nl = memchr(p, '\n', len);
    size_t n;

    if (!nl)
        return SIZE_MAX;
    n = (size_t)(nl - p);
    *next = n + 1;
    return n > 0 && p[n - 1] == '\r' ? n - 1 : n;
}

/*
 * One header field as libmicrohttpd 0.9.75 keeps it: the name is the line up to the colon
 * and a continuation line (one starting with a blank) is appended to the NAME, without its
 * leading blanks (that version's folding); the value is the first line's after its leading
 * blanks. Lines are C strings to it: a NUL ends one. Only names up to sizeof(name) - 1 bytes
 * are kept (longer ones are none of the two it reads here).
 */
struct field {
    char name[24];
    size_t name_len; /* may exceed sizeof(name) - 1: then it is no name looked for */
    const char *value;
    size_t value_len;
};

static void field_name_add(struct field *f, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++, f->name_len++) {
        if (f->name_len < sizeof(f->name) - 1)
            f->name[f->name_len] = p[i];
    }
}

static bool field_is(const struct field *f, const char *name)
{
    size_t n = strlen(name);

    return f->name_len == n && n < sizeof(f->name) && strncasecmp(f->name, name, n) == 0;
}

/* libmicrohttpd's reading of a Content-Length value: 0 when it takes it, else its status. */
static int clen_verdict(const char *v, size_t len)
{
    uint64_t n = 0;
    size_t i = 0;

    if (len == 0 || v[0] < '0' || v[0] > '9')
        return 400;
    for (; i < len && v[i] >= '0' && v[i] <= '9'; i++) {
        unsigned d = (unsigned)(v[i] - '0');
        if (n > (UINT64_MAX - d) / 10)
            return 413; /* too many digits, whatever follows them */
        n = n * 10 + d;
    }
    return i == len ? 0 : 400;
}

int rein__http_head_verdict(const char *buf, size_t len, bool *complete)
{
    struct field f = {{0}, 0, NULL, 0};
    bool have_field = false, have_cl = false, have_te = false, request_line = false;
    int cl = 0;
    size_t pos = 0, next = 0;

    *complete = false;
    for (;;) {
        const char *line = buf + pos;
        size_t n = pos < len ? head_line(line, len - pos, &next) : SIZE_MAX, c;
        const char *colon;
        if (n == SIZE_MAX)
            return 0; /* the head goes on beyond what arrived */
        pos += next;
        if (!request_line) {
            request_line = n > 0; /* empty lines before the request line are skipped */
            continue;
        }
        c = strnlen(line, n);
        if (have_field && n > 0 && (line[0] == ' ' || line[0] == '\t')) {
            size_t skip = strspn(line, " \t");
            field_name_add(&f, line + skip, c > skip ? c - skip : 0);
            continue;
        }
        /* The previous field is complete. */
        if (have_field && field_is(&f, "Transfer-Encoding"))
            have_te = true;
        if (have_field && !have_cl && field_is(&f, "Content-Length")) {
            have_cl = true;
            cl = clen_verdict(f.value, f.value_len);
        }
        if (n == 0)
            break;
        colon = memchr(line, ':', c);
        if (!colon) {
            /* libmicrohttpd drops such a request itself (one 400), before it reads a length. */
            *complete = true;
            return 0;
        }
        memset(&f, 0, sizeof(f));
        field_name_add(&f, line, (size_t)(colon - line));
        f.value = colon + 1;
        f.value_len = c - (size_t)(colon - line) - 1;
        while (f.value_len && (*f.value == ' ' || *f.value == '\t')) {
            f.value++;
            f.value_len--;
        }
        have_field = true;
    }
    *complete = true;
    return have_cl && !have_te ? cl : 0;
}
