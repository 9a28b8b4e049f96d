/*
 * URI reference resolution for $id and $ref (RFC 3986 section 5.2): split a reference into
 * scheme, authority, path, query and fragment, merge it with a base and remove dot segments.
 * Only resolution is done here; nothing is ever fetched.
 */
#include "schema/schema_int.h"

#include <ctype.h>
#include <string.h>

struct uparts {
    const char *scheme, *auth, *path, *query, *frag;
    size_t scheme_len, auth_len, path_len, query_len, frag_len;
    bool has_scheme, has_auth, has_query, has_frag;
};

static void split(const char *s, struct uparts *p)
{
    const char *c = s;
    const char *q;

    memset(p, 0, sizeof(*p));
    /* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
    if (isalpha((unsigned char)*c)) {
        q = c + 1;
        while (isalnum((unsigned char)*q) || *q == '+' || *q == '-' || *q == '.')
            q++;
        if (*q == ':') {
            p->has_scheme = true;
            p->scheme = c;
            p->scheme_len = (size_t)(q - c);
            c = q + 1;
        }
    }
    if (c[0] == '/' && c[1] == '/') {
        c += 2;
        p->has_auth = true;
        p->auth = c;
        while (*c && *c != '/' && *c != '?' && *c != '#')
            c++;
        p->auth_len = (size_t)(c - p->auth);
    }
    p->path = c;
    while (*c && *c != '?' && *c != '#')
        c++;
    p->path_len = (size_t)(c - p->path);
    if (*c == '?') {
        p->has_query = true;
        p->query = ++c;
        while (*c && *c != '#')
            c++;
        p->query_len = (size_t)(c - p->query);
    }
    if (*c == '#') {
        p->has_frag = true;
        p->frag = c + 1;
        p->frag_len = strlen(p->frag);
    }
}

/* RFC 3986 5.2.4, appending the result to out. */
static rein_err remove_dots(struct rein_buf *out, const char *in, size_t len)
{
    size_t start = out->len;
    size_t i = 0;

    while (i < len) {
        const char *s = in + i;
        size_t left = len - i;
        if (left >= 3 && memcmp(s, "../", 3) == 0) {
            i += 3;
        } else if (left >= 2 && memcmp(s, "./", 2) == 0) {
            i += 2;
        } else if (left >= 3 && memcmp(s, "/./", 3) == 0) {
            i += 2;
        } else if (left == 2 && memcmp(s, "/.", 2) == 0) {
            /* "/." at the end becomes "/" */
            if (rein_buf_addch(out, '/'))
                return REIN_ENOMEM;
            i += 2;
        } else if ((left >= 4 && memcmp(s, "/../", 4) == 0) ||
                   (left == 3 && memcmp(s, "/..", 3) == 0)) {
            /* drop the last segment written */
            size_t n = out->len;
            while (n > start && out->ptr[n - 1] != '/')
                n--;
            if (n > start)
                n--;
            rein_buf_truncate(out, n);
            if (left == 3) {
                if (rein_buf_addch(out, '/'))
                    return REIN_ENOMEM;
                i += 3;
            } else {
                i += 3;
            }
        } else if ((left == 1 && s[0] == '.') || (left == 2 && memcmp(s, "..", 2) == 0)) {
            i += left;
        } else {
            size_t j = 1;
            while (j < left && s[j] != '/')
                j++;
            if (s[0] != '/') {
                j = 0;
                while (j < left && s[j] != '/')
                    j++;
            }
            if (rein_buf_add(out, s, j))
                return REIN_ENOMEM;
            i += j;
        }
    }
    return REIN_OK;
}

static rein_err add_part(struct rein_buf *b, const char *pre, const char *s, size_t len)
{
    if (pre && rein_buf_adds(b, pre))
        return REIN_ENOMEM;
    return rein_buf_add(b, s, len);
}

char *rein__uri_resolve(const char *base, const char *ref)
{
    struct uparts b, r;
    struct rein_buf out;
    rein_err rc = REIN_OK;

    split(base ? base : "", &b);
    split(ref, &r);
    rein_buf_init(&out, 0);
    if (r.has_scheme) {
        rc |= add_part(&out, NULL, r.scheme, r.scheme_len);
        rc |= rein_buf_addch(&out, ':');
        if (r.has_auth)
            rc |= add_part(&out, "//", r.auth, r.auth_len);
        rc |= remove_dots(&out, r.path, r.path_len);
        if (r.has_query)
            rc |= add_part(&out, "?", r.query, r.query_len);
    } else {
        if (b.has_scheme) {
            rc |= add_part(&out, NULL, b.scheme, b.scheme_len);
            rc |= rein_buf_addch(&out, ':');
        }
        if (r.has_auth) {
            rc |= add_part(&out, "//", r.auth, r.auth_len);
            rc |= remove_dots(&out, r.path, r.path_len);
            if (r.has_query)
                rc |= add_part(&out, "?", r.query, r.query_len);
        } else {
            if (b.has_auth)
                rc |= add_part(&out, "//", b.auth, b.auth_len);
            if (r.path_len == 0) {
                rc |= rein_buf_add(&out, b.path, b.path_len);
                if (r.has_query)
                    rc |= add_part(&out, "?", r.query, r.query_len);
                else if (b.has_query)
                    rc |= add_part(&out, "?", b.query, b.query_len);
            } else {
                if (r.path[0] == '/') {
                    rc |= remove_dots(&out, r.path, r.path_len);
                } else {
                    struct rein_buf merged;
                    rein_buf_init(&merged, 0);
                    if (b.has_auth && b.path_len == 0) {
                        rc |= rein_buf_addch(&merged, '/');
                    } else {
                        size_t k = b.path_len;
                        while (k > 0 && b.path[k - 1] != '/')
                            k--;
                        rc |= rein_buf_add(&merged, b.path, k);
                    }
                    rc |= rein_buf_add(&merged, r.path, r.path_len);
                    if (!rc)
                        rc |= remove_dots(&out, merged.ptr, merged.len);
                    rein_buf_release(&merged);
                }
                if (r.has_query)
                    rc |= add_part(&out, "?", r.query, r.query_len);
            }
        }
    }
    if (r.has_frag && r.frag_len > 0)
        rc |= add_part(&out, "#", r.frag, r.frag_len);
    if (rc) {
        rein_buf_release(&out);
        return NULL;
    }
    return rein_buf_detach(&out, NULL);
}

size_t rein__uri_base_len(const char *uri)
{
    const char *h = strchr(uri, '#');

    return h ? (size_t)(h - uri) : strlen(uri);
}

bool rein__uri_is_absolute(const char *uri)
{
    struct uparts p;

    split(uri, &p);
    return p.has_scheme;
}

bool rein__uri_pct_decode(const char *s, size_t len, char *out, size_t out_size)
{
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= len)
                return false;
            int hi = rein__hex_digit(s[i + 1]);
            int lo = rein__hex_digit(s[i + 2]);
            if (hi < 0 || lo < 0)
                return false;
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        if (o + 1 >= out_size)
            return false;
        out[o++] = c;
    }
    out[o] = '\0';
    return true;
}
