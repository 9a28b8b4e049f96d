/*
 * Parsers of what OAuth servers send the MCP client (src/mcp/oauth_int.h): the Bearer
 * challenge of WWW-Authenticate (RFC 6750 §3 with RFC 9728's resource_metadata), the metadata
 * documents (RFC 9728, RFC 8414 / OpenID discovery), registration and token responses, and the
 * query of the loopback redirect. Everything here reads untrusted bytes (fuzz/mcp_oauth.c).
 */
#include "mcp/oauth_int.h"

#include <string.h>
#include <strings.h>

#define MAX_PARAM 4096

/* ---- WWW-Authenticate --------------------------------------------------------------------- */

static bool tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~/", c));
}

struct lex {
    const char *p, *end;
};

static void skip_ws(struct lex *l)
{
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t'))
        l->p++;
}

/* A token (or token68: a token followed by '='s) into out; false when there is none. */
static bool read_token(struct lex *l, char *out, size_t size)
{
    size_t n = 0;

    while (l->p < l->end && tchar(*l->p)) {
        if (n + 1 >= size)
            return false;
        out[n++] = *l->p++;
    }
    out[n] = '\0';
    return n > 0;
}

/* A token or a quoted-string (backslash escapes) into out. */
static bool read_value(struct lex *l, char *out, size_t size)
{
    size_t n = 0;

    if (l->p < l->end && *l->p == '"') {
        l->p++;
        while (l->p < l->end && *l->p != '"') {
            if (*l->p == '\\' && l->p + 1 < l->end)
                l->p++;
            if ((unsigned char)*l->p < 0x20 && *l->p != '\t')
                return false;
            if (n + 1 >= size)
                return false;
            out[n++] = *l->p++;
        }
        if (l->p >= l->end)
            return false; /* unterminated */
        l->p++;
        out[n] = '\0';
        return true;
    }
    return read_token(l, out, size);
}

static rein_err keep(char **slot, const char *value)
{
    if (*slot)
        return REIN_OK; /* the first occurrence counts */
    *slot = rein_strdup(value);
    return *slot ? REIN_OK : REIN_ENOMEM;
}

void rein__oauth_challenge_release(struct rein__oauth_challenge *ch)
{
    rein_free(ch->resource_metadata);
    rein_free(ch->scope);
    rein_free(ch->error);
    memset(ch, 0, sizeof(*ch));
}

/*
 * challenge = scheme [ 1*SP ( token68 / #auth-param ) ], challenges separated by commas, so a
 * comma starts either the next parameter or the next challenge: a token followed by '=' is a
 * parameter, one followed by a space and a token is a new scheme.
 */
rein_err rein__oauth_challenge_parse(const char *value, size_t len,
                                     struct rein__oauth_challenge *out)
{
    struct lex l = {value, value + len};
    char name[64], *v = rein_malloc(MAX_PARAM);
    bool bearer = false, in_bearer = false, found = false;
    rein_err rc = REIN_OK;

    memset(out, 0, sizeof(*out));
    if (!v)
        return REIN_ENOMEM;
    while (!rc) {
        skip_ws(&l);
        while (l.p < l.end && (*l.p == ',' || *l.p == ' '))
            l.p++;
        if (l.p >= l.end)
            break;
        if (!read_token(&l, name, sizeof(name))) {
            rc = REIN_EINVAL;
            break;
        }
        skip_ws(&l);
        if (l.p < l.end && *l.p == '=') {
            /* A parameter of the current challenge (or the '='s of a token68). */
            const char *eq = l.p;
            while (l.p < l.end && *l.p == '=')
                l.p++;
            skip_ws(&l);
            if (l.p - eq > 1 || l.p >= l.end || *l.p == ',') {
                continue; /* token68 */
            }
            if (!read_value(&l, v, MAX_PARAM)) {
                rc = REIN_EINVAL;
                break;
            }
            if (!in_bearer)
                continue;
            if (strcasecmp(name, "resource_metadata") == 0)
                rc = keep(&out->resource_metadata, v);
            else if (strcasecmp(name, "scope") == 0)
                rc = keep(&out->scope, v);
            else if (strcasecmp(name, "error") == 0)
                rc = keep(&out->error, v);
            continue;
        }
        /* A new challenge: name is its scheme. Only the first Bearer one is read. */
        bearer = strcasecmp(name, "Bearer") == 0;
        in_bearer = bearer && !found;
        found = found || bearer;
    }
    rein_free(v);
    if (rc || !found) {
        rein__oauth_challenge_release(out);
        return rc ? rc : REIN_ENOTFOUND;
    }
    return REIN_OK;
}

/* ---- metadata documents --------------------------------------------------------------------- */

bool rein__oauth_endpoint_ok(const char *url)
{
    static const char *const loopback[] = {"localhost", "127.0.0.1", "[::1]"};
    const char *host, *end;
    size_t n;

    if (!url || strpbrk(url, " \t\r\n\\"))
        return false;
    if (strncasecmp(url, "https://", 8) == 0)
        return url[8] != '\0' && !strchr("/?#", url[8]);
    if (strncasecmp(url, "http://", 7) != 0)
        return false;
    host = url + 7;
    end = host + strcspn(host, "/?#");
    /* Userinfo would make "http://localhost:80@elsewhere/" a request to elsewhere. */
    if (memchr(host, '@', (size_t)(end - host)))
        return false;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(loopback); i++) {
        n = strlen(loopback[i]);
        if ((size_t)(end - host) >= n && strncasecmp(host, loopback[i], n) == 0 &&
            (host + n == end || host[n] == ':'))
            return true;
    }
    return false;
}

bool rein__oauth_has(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;

    json_array_foreach((json_t *)arr, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    }
    return false;
}

struct member {
    const char *name;
    char type; /* 's' string, 'a' array of strings, 'i' positive integer, 'b' boolean */
    bool required;
};

static const struct member prm_members[] = {
    {"resource", 's', true},
    {"authorization_servers", 'a', false},
    {"scopes_supported", 'a', false},
    {"bearer_methods_supported", 'a', false},
    {NULL, 0, false},
};
static const struct member asm_members[] = {
    {"issuer", 's', true},
    {"authorization_endpoint", 's', true},
    {"token_endpoint", 's', true},
    {"registration_endpoint", 's', false},
    {"scopes_supported", 'a', false},
    {"response_types_supported", 'a', false},
    {"grant_types_supported", 'a', false},
    {"code_challenge_methods_supported", 'a', false},
    {"token_endpoint_auth_methods_supported", 'a', false},
    {"client_id_metadata_document_supported", 'b', false},
    {NULL, 0, false},
};
static const struct member client_members[] = {
    {"client_id", 's', true},
    {"client_secret", 's', false},
    {"token_endpoint_auth_method", 's', false},
    {NULL, 0, false},
};
static const struct member token_members[] = {
    {"access_token", 's', true}, {"token_type", 's', true},  {"refresh_token", 's', false},
    {"scope", 's', false},       {"expires_in", 'i', false}, {NULL, 0, false},
};
/* RFC 8693 §2.2.1: token_type is whatever the issued token is used as ("N_A" for an ID-JAG). */
static const struct member exchange_members[] = {
    {"access_token", 's', true}, {"issued_token_type", 's', true},
    {"token_type", 's', true},   {"expires_in", 'i', false},
    {"scope", 's', false},       {NULL, 0, false},
};
static const struct member token_err_members[] = {
    {"error", 's', true},
    {"error_description", 's', false},
    {NULL, 0, false},
};

static const char *const doc_names[] = {"protected resource metadata",
                                        "authorization server metadata",
                                        "client registration",
                                        "token response",
                                        "token error",
                                        "token exchange response"};

static bool of_type(const json_t *v, char type)
{
    size_t i;
    json_t *item;

    switch (type) {
    case 's':
        return json_is_string(v) && json_string_length(v) > 0 &&
               !memchr(json_string_value(v), '\0', json_string_length(v));
    case 'i':
        return json_is_integer(v) && json_integer_value(v) >= 0;
    case 'b':
        return json_is_boolean(v);
    default:
        if (!json_is_array(v))
            return false;
        json_array_foreach((json_t *)v, i, item)
        {
            if (!json_is_string(item))
                return false;
        }
        return true;
    }
}

rein_err rein__oauth_doc_parse(enum rein__oauth_doc kind, const char *text, size_t len,
                               json_t **out, rein_error *err)
{
    static const struct member *const tables[] = {prm_members,       asm_members,
                                                  client_members,    token_members,
                                                  token_err_members, exchange_members};
    const struct member *m = tables[kind];
    json_t *doc = rein_json_parse(text, len, 0, NULL);

    *out = NULL;
    if (!json_is_object(doc)) {
        json_decref(doc);
        return rein_error_set(err, REIN_EINVAL, "the %s is not a JSON object", doc_names[kind]);
    }
    for (; m->name; m++) {
        const json_t *v = json_object_get(doc, m->name);
        if (json_is_null(v) && !m->required)
            continue;
        if ((!v && m->required) || (v && !of_type(v, m->type))) {
            json_decref(doc);
            return rein_error_set(err, REIN_EINVAL, "the %s has %s %s", doc_names[kind],
                                  v ? "a malformed" : "no", m->name);
        }
    }
    if (kind == REIN__OAUTH_TOKEN &&
        strcasecmp(json_string_value(json_object_get(doc, "token_type")), "Bearer") != 0) {
        json_decref(doc);
        return rein_error_set(err, REIN_EINVAL, "the token response's token_type is not Bearer");
    }
    *out = doc;
    return REIN_OK;
}

/* ---- forms and queries ---------------------------------------------------------------------- */

/* Decodes n bytes of p into out (size bytes); false when it does not fit or holds a NUL. */
static bool form_decode(const char *p, size_t n, char *out, size_t size)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)p[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%') {
            int hi = i + 2 < n ? rein__hex_digit(p[i + 1]) : -1;
            int lo = i + 2 < n ? rein__hex_digit(p[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return false;
            c = hi * 16 + lo;
            i += 2;
        }
        if (c == 0 || o + 1 >= size)
            return false;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return true;
}

bool rein__oauth_query_get(const char *query, const char *name, char *out, size_t size)
{
    size_t nlen = strlen(name);

    for (const char *p = query; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t n = amp ? (size_t)(amp - p) : strlen(p);
        if (n > nlen && p[nlen] == '=' && strncmp(p, name, nlen) == 0)
            return form_decode(p + nlen + 1, n - nlen - 1, out, size);
        if (n == nlen && strncmp(p, name, nlen) == 0)
            return form_decode(p, 0, out, size);
        p = amp ? amp + 1 : NULL;
    }
    return false;
}

rein_err rein__oauth_escape(struct rein_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '.' || c == '_' || c == '~';
        rein_err rc = plain ? rein_buf_addch(b, (char)c)
                            : rein_buf_addf(b, "%%%c%c", hex[c >> 4], hex[c & 15]);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

rein_err rein__oauth_form_add(struct rein_buf *b, const char *name, const char *value)
{
    rein_err rc = b->len ? rein_buf_addch(b, '&') : REIN_OK;

    if (!rc)
        rc = rein__oauth_escape(b, name);
    if (!rc)
        rc = rein_buf_addch(b, '=');
    return rc ? rc : rein__oauth_escape(b, value);
}

/* ---- randomness and PKCE -------------------------------------------------------------------- */

/* base64 text into base64url without padding, in place. */
static void to_base64url(char *s)
{
    char *o = s;

    for (; *s && *s != '='; s++)
        *o++ = *s == '+' ? '-' : *s == '/' ? '_' : *s;
    *o = '\0';
}

char *rein__oauth_random(size_t len)
{
    unsigned char raw[96];
    char *out;

    if (len > sizeof(raw))
        len = sizeof(raw);
    rein_random_bytes(raw, len);
    out = rein__base64(raw, len);
    memset(raw, 0, sizeof(raw));
    if (out)
        to_base64url(out);
    return out;
}

void rein__oauth_s256(const char *verifier, char out[44])
{
    struct rein__sha256 h;
    uint8_t d[32];
    char *b64;

    rein__sha256_init(&h);
    rein__sha256_add(&h, verifier, strlen(verifier));
    rein__sha256_final(&h, d);
    out[0] = '\0';
    b64 = rein__base64(d, sizeof(d));
    if (!b64)
        return;
    to_base64url(b64);
    snprintf(out, 44, "%s", b64);
    rein_free(b64);
}
