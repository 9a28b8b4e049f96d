/*
 * The MCP client's OAuth 2.1 flow (the MCP authorization spec, 2025-06-18 and 2025-11-25), run
 * by the HTTP transport when a server answers 401, or 403 with insufficient_scope:
 *   protected resource metadata (the challenge's resource_metadata, else the well-known URLs
 *   of RFC 9728), whose resource must be the server's; authorization server metadata (RFC
 *   8414, then OpenID discovery; the 2025-03-26 fallbacks for servers without any); a client
 *   (pre-registered in the configuration, a client ID metadata document, or dynamic
 *   registration, RFC 7591); authorization code with PKCE S256 and the resource parameter
 *   (RFC 8707) through the browser and a loopback redirect; the token file and refresh; the
 *   client_credentials grant for machine clients; scopes from the challenge, else the
 *   resource's scopes_supported, widened on a 403 insufficient_scope (step-up).
 * Every endpoint must be https, or http on this machine. Tokens are never logged.
 */
#include "mcp/client_int.h"
#include "mcp/oauth_int.h"

#include <rein/version.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define WHERE            "mcp/oauth"
#define MAX_DOC          ((size_t)1 << 20)
#define MAX_AUTHORIZE    3
#define LOGIN_TIMEOUT_MS (5 * 60 * 1000)

/* What a connection keeps: the token in use and the stored entry it came from. */
struct rein__mcp_oauth {
    pthread_mutex_t flow_mu; /* one authorization at a time */
    char *access;            /* under c->mu */
    uint64_t gen;            /* under c->mu: changes with every new token */
    json_t *entry;           /* under flow_mu: the stored entry (tokens, client, endpoints) */
    bool loaded;             /* under flow_mu */
};

/* What discovery found. */
struct found {
    char resource[2048];
    char as[2048]; /* the authorization server's issuer URL */
    json_t *prm;   /* may be NULL (a 2025-03-26 server) */
    json_t *asm_;  /* may be NULL (the fallback endpoints) */
    char authorize[2048], token[2048], registration[2048];
};

static void found_release(struct found *f)
{
    json_decref(f->prm);
    json_decref(f->asm_);
}

/* ---- URLs ------------------------------------------------------------------------------------ */

/* Splits url into its origin (scheme://authority) and its path (without query or fragment). */
static bool split_url(const char *url, char *origin, size_t osize, char *path, size_t psize)
{
    const char *auth = strstr(url, "://"), *p;
    size_t n;

    if (!auth || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
        return false;
    p = auth + 3 + strcspn(auth + 3, "/?#");
    n = (size_t)(p - url);
    if (n >= osize || p == auth + 3)
        return false;
    memcpy(origin, url, n);
    origin[n] = '\0';
    n = strcspn(p, "?#");
    if (n >= psize)
        return false;
    memcpy(path, p, n);
    path[n] = '\0';
    if (n == 1)
        path[0] = '\0'; /* "/" is no path */
    return true;
}

/*
 * True when the resource a server's metadata names may stand for the server at url (RFC 9728
 * §3.3, RFC 8707): the same origin, and its path the server's path or a parent of it.
 */
static bool resource_covers(const char *resource, const char *url)
{
    char ro[1024], rp[1024], uo[1024], up[1024];
    size_t n;

    if (!split_url(resource, ro, sizeof(ro), rp, sizeof(rp)) ||
        !split_url(url, uo, sizeof(uo), up, sizeof(up)) || strcasecmp(ro, uo) != 0 ||
        strchr(resource, '#'))
        return false;
    n = strlen(rp);
    while (n > 0 && rp[n - 1] == '/')
        rp[--n] = '\0';
    return strncmp(up, rp, n) == 0 && (up[n] == '\0' || up[n] == '/');
}

/* ---- HTTP ---------------------------------------------------------------------------------- */

struct body {
    struct rein_buf b;
    bool too_big;
};

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    struct body *x = ud;

    if (rein_buf_add(&x->b, data, size * n)) {
        x->too_big = true;
        return 0;
    }
    return size * n;
}

/*
 * GET url (form NULL) or POST form (or a JSON body) to url, with basic (may be NULL) as the
 * Authorization header. *status and the body (at most MAX_DOC bytes) come back.
 */
static rein_err http(const char *url, const char *form, const char *json, const char *basic,
                     int64_t deadline, rein_cancel *cancel, long *status, struct rein_buf *out,
                     rein_error *err)
{
    struct body x;
    struct curl_slist *h = NULL, *next;
    char detail[CURL_ERROR_SIZE] = "", auth[1200];
    bool cancelled = false, ok = true;
    CURL *easy;
    CURLcode code;
    rein_err rc = rein__curl_global_init(err);

    *status = 0;
    if (rc)
        return rc;
    if (!rein__oauth_endpoint_ok(url))
        return rein_error_set(err, REIN_EDENIED,
                              "%s: OAuth endpoints must use https (or http on this machine)", url);
    rein_buf_init(&x.b, MAX_DOC);
    x.too_big = false;
    easy = curl_easy_init();
    if (!easy)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    const char *lines[3] = {"Accept: application/json",
                            json   ? "Content-Type: application/json"
                            : form ? "Content-Type: application/x-www-form-urlencoded"
                                   : NULL,
                            NULL};
    if (basic)
        snprintf(auth, sizeof(auth), "Authorization: Basic %s", basic);
    lines[2] = basic ? auth : NULL;
    for (size_t i = 0; i < 3 && ok; i++) {
        if (!lines[i])
            continue;
        next = curl_slist_append(h, lines[i]);
        ok = next != NULL;
        h = next ? next : h;
    }
    memset(auth, 0, sizeof(auth));
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "rein/" REIN_VERSION_STRING);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    {
        int64_t left = deadline ? deadline - rein_now_ms() : 30000;
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)(left > 1 ? left : 1));
    }
    if (form || json) {
        curl_easy_setopt(easy, CURLOPT_POST, 1L);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, json ? json : form);
    }
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, detail);
    code = ok ? rein__curl_perform(easy, cancel, &cancelled) : CURLE_OUT_OF_MEMORY;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(easy);
    curl_slist_free_all(h);
    if (cancelled)
        rc = rein_error_set(err, REIN_ECANCELED, "cancelled while asking %s", url);
    else if (x.too_big)
        rc = rein_error_set(err, REIN_ETOOBIG, "%s answered more than %zu bytes", url, MAX_DOC);
    else if (code != CURLE_OK)
        rc = rein_error_set(err, REIN_EHTTP, "%s: %s", url,
                            detail[0] ? detail : curl_easy_strerror(code));
    if (rc) {
        rein_buf_release(&x.b);
        return rc;
    }
    *out = x.b;
    return REIN_OK;
}

/* GET url as a metadata document of kind; REIN_ENOTFOUND when it is not served there. */
static rein_err get_doc(const char *url, enum rein__oauth_doc kind, int64_t deadline,
                        rein_cancel *cancel, json_t **out, rein_error *err)
{
    struct rein_buf b;
    long status;
    rein_err rc = http(url, NULL, NULL, NULL, deadline, cancel, &status, &b, err);

    *out = NULL;
    if (rc)
        return rc;
    if (status != 200) {
        rein_buf_release(&b);
        return rein_error_set(err, REIN_ENOTFOUND, "%s answered HTTP %ld", url, status);
    }
    rc = rein__oauth_doc_parse(kind, b.ptr ? b.ptr : "", b.len, out, err);
    rein_buf_release(&b);
    if (rc)
        rein_error_prefix(err, "%s: ", url);
    return rc;
}

/* ---- discovery ------------------------------------------------------------------------------- */

static rein_err find_prm(const char *url, const struct rein__oauth_challenge *ch, int64_t deadline,
                         rein_cancel *cancel, json_t **prm, rein_error *err)
{
    char origin[1024], path[1024], cand[2][2200];
    size_t n = 0;
    rein_err rc = REIN_ENOTFOUND;

    *prm = NULL;
    if (!split_url(url, origin, sizeof(origin), path, sizeof(path)))
        return rein_error_set(err, REIN_EINVAL, "%s is not an http(s) URL", url);
    if (ch && ch->resource_metadata)
        return get_doc(ch->resource_metadata, REIN__OAUTH_PRM, deadline, cancel, prm, err);
    /* RFC 9728 §3.1: the path-specific location first, then the root. */
    if (path[0])
        snprintf(cand[n++], sizeof(cand[0]), "%s/.well-known/oauth-protected-resource%s", origin,
                 path);
    snprintf(cand[n++], sizeof(cand[0]), "%s/.well-known/oauth-protected-resource", origin);
    for (size_t i = 0; i < n && rc == REIN_ENOTFOUND; i++)
        rc = get_doc(cand[i], REIN__OAUTH_PRM, deadline, cancel, prm, err);
    return rc;
}

static rein_err find_asm(const char *as, int64_t deadline, rein_cancel *cancel, json_t **asm_,
                         rein_error *err)
{
    char origin[1024], path[1024], cand[3][2200];
    size_t n = 0;
    rein_err rc = REIN_ENOTFOUND;

    if (!split_url(as, origin, sizeof(origin), path, sizeof(path)))
        return rein_error_set(err, REIN_EINVAL, "the authorization server %s is not an URL", as);
    /* RFC 8414 §3.1 inserts the well-known part before the issuer's path; OpenID discovery
     * appends it (and is tried both ways, as the MCP spec lists). */
    snprintf(cand[n++], sizeof(cand[0]), "%s/.well-known/oauth-authorization-server%s", origin,
             path);
    snprintf(cand[n++], sizeof(cand[0]), "%s/.well-known/openid-configuration%s", origin, path);
    if (path[0])
        snprintf(cand[n++], sizeof(cand[0]), "%s%s/.well-known/openid-configuration", origin, path);
    for (size_t i = 0; i < n && rc == REIN_ENOTFOUND; i++)
        rc = get_doc(cand[i], REIN__OAUTH_ASM, deadline, cancel, asm_, err);
    return rc;
}

static bool same_issuer(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);

    while (la > 0 && a[la - 1] == '/')
        la--;
    while (lb > 0 && b[lb - 1] == '/')
        lb--;
    return la == lb && strncmp(a, b, la) == 0;
}

static rein_err discover(const char *url, const struct rein__oauth_challenge *ch, int64_t deadline,
                         rein_cancel *cancel, struct found *f, rein_error *err)
{
    char origin[1024], path[1024];
    const json_t *servers;
    rein_err rc;

    memset(f, 0, sizeof(*f));
    rc = find_prm(url, ch, deadline, cancel, &f->prm, err);
    if (rc && rc != REIN_ENOTFOUND)
        return rc;
    split_url(url, origin, sizeof(origin), path, sizeof(path));
    if (f->prm) {
        const char *res = json_string_value(json_object_get(f->prm, "resource"));
        if (!resource_covers(res, url))
            return rein_error_set(err, REIN_EDENIED,
                                  "the server's protected resource metadata names the resource "
                                  "%s, which is not %s; rein does not authorize for it",
                                  res, url);
        servers = json_object_get(f->prm, "authorization_servers");
        if (!json_array_size(servers))
            return rein_error_set(err, REIN_EINVAL,
                                  "the protected resource metadata of %s names no "
                                  "authorization server: it takes a credential given otherwise "
                                  "(bearer_token or headers in its mcpServers entry)",
                                  url);
        snprintf(f->resource, sizeof(f->resource), "%s", res);
        snprintf(f->as, sizeof(f->as), "%s", json_string_value(json_array_get(servers, 0)));
    } else {
        /* A 2025-03-26 server: the authorization server is the server's origin. */
        snprintf(f->resource, sizeof(f->resource), "%.*s", (int)strcspn(url, "#"), url);
        snprintf(f->as, sizeof(f->as), "%s", origin);
    }
    rc = find_asm(f->as, deadline, cancel, &f->asm_, err);
    if (rc && rc != REIN_ENOTFOUND)
        return rc;
    if (f->asm_) {
        const json_t *methods = json_object_get(f->asm_, "code_challenge_methods_supported");
        if (f->prm && !same_issuer(json_string_value(json_object_get(f->asm_, "issuer")), f->as))
            return rein_error_set(err, REIN_EDENIED,
                                  "the authorization server metadata of %s names another "
                                  "issuer (%s)",
                                  f->as, json_string_value(json_object_get(f->asm_, "issuer")));
        if (!rein__oauth_has(methods, "S256"))
            return rein_error_set(err, REIN_EDENIED,
                                  "the authorization server %s does not offer PKCE with S256, "
                                  "which MCP requires",
                                  f->as);
        /* The browser is sent to the authorization endpoint, so it is held to the rule of the
         * endpoints rein fetches itself (a registration endpoint too, before it is used). */
        static const char *const endpoints[] = {"authorization_endpoint", "token_endpoint",
                                                "registration_endpoint"};
        for (size_t i = 0; i < REIN_ARRAY_SIZE(endpoints); i++) {
            const char *e = json_string_value(json_object_get(f->asm_, endpoints[i]));
            if (e && !rein__oauth_endpoint_ok(e))
                return rein_error_set(err, REIN_EDENIED,
                                      "the authorization server %s names the %s %.300s: OAuth "
                                      "endpoints must use https (or http on this machine)",
                                      f->as, endpoints[i], e);
        }
        snprintf(f->authorize, sizeof(f->authorize), "%s",
                 json_string_value(json_object_get(f->asm_, "authorization_endpoint")));
        snprintf(f->token, sizeof(f->token), "%s",
                 json_string_value(json_object_get(f->asm_, "token_endpoint")));
        snprintf(f->registration, sizeof(f->registration), "%s",
                 json_string_value(json_object_get(f->asm_, "registration_endpoint"))
                     ? json_string_value(json_object_get(f->asm_, "registration_endpoint"))
                     : "");
    } else if (!f->prm) {
        /* 2025-03-26: no metadata at all means the default paths at the origin. */
        snprintf(f->authorize, sizeof(f->authorize), "%s/authorize", origin);
        snprintf(f->token, sizeof(f->token), "%s/token", origin);
        snprintf(f->registration, sizeof(f->registration), "%s/register", origin);
    } else {
        return rein_error_set(err, REIN_ENOTFOUND,
                              "the authorization server %s publishes no metadata (RFC 8414 or "
                              "OpenID discovery)",
                              f->as);
    }
    rein_log(REIN_LOG_DEBUG, WHERE, "%s: resource %s, authorization server %s", url, f->resource,
             f->as);
    return REIN_OK;
}

/* ---- scopes --------------------------------------------------------------------------------- */

/* True when the space-separated words in b include the n bytes at w. */
static bool has_word(const struct rein_buf *b, const char *w, size_t n)
{
    size_t i = 0;

    while (i < b->len) {
        size_t m = 0;
        while (i + m < b->len && b->ptr[i + m] != ' ')
            m++;
        if (m == n && memcmp(b->ptr + i, w, n) == 0)
            return true;
        i += m + 1;
    }
    return false;
}

/* Adds the space-separated scopes of list to b, each once. */
static rein_err add_scopes(struct rein_buf *b, const char *list)
{
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, " ");
        if (n && !has_word(b, p, n) &&
            ((b->len && rein_buf_addch(b, ' ')) || rein_buf_add(b, p, n)))
            return REIN_ENOMEM;
        p += n + (p[n] == ' ');
    }
    return REIN_OK;
}

/*
 * The scope to ask for (the MCP spec's scope selection): the configured one, else the
 * challenge's, else everything the resource lists; after a 403 insufficient_scope, what was
 * granted before as well (step-up). offline_access joins when the authorization server offers
 * it, for a refresh token. "" asks for no scope.
 */
static rein_err choose_scope(const json_t *cfg, const struct found *f,
                             const struct rein__oauth_challenge *ch, const json_t *entry,
                             long status, struct rein_buf *out)
{
    const char *want = json_string_value(json_object_get(cfg, "scope"));
    const json_t *listed = json_object_get(f->prm, "scopes_supported");
    size_t i;
    rein_err rc = REIN_OK;

    if (status == 403)
        rc = add_scopes(out, json_string_value(json_object_get(entry, "scope")));
    if (!rc && want)
        rc = add_scopes(out, want);
    else if (!rc && ch && ch->scope)
        rc = add_scopes(out, ch->scope);
    else
        for (i = 0; !rc && i < json_array_size(listed); i++)
            rc = add_scopes(out, json_string_value(json_array_get(listed, i)));
    if (!rc && out->len &&
        rein__oauth_has(json_object_get(f->asm_, "scopes_supported"), "offline_access"))
        rc = add_scopes(out, "offline_access");
    if (!rc && rein_buf_addch(out, '\0'))
        rc = REIN_ENOMEM;
    if (!rc)
        out->len--;
    return rc;
}

/* ---- the client --------------------------------------------------------------------------- */

struct client {
    char id[2048];
    char secret[1024];
    char method[40]; /* none, client_secret_basic, client_secret_post, private_key_jwt */
    /* private_key_jwt (RFC 7523 §2.2): the key's PEM file, the algorithm ("": the key's own),
     * the key id to name ("": none) and the audience (the authorization server's issuer). */
    char key_file[1024], alg[8], kid[256], aud[2048];
};

static const char *copy_str(const json_t *obj, const char *key, char *out, size_t size)
{
    const char *v = json_string_value(json_object_get(obj, key));

    snprintf(out, size, "%s", v ? v : "");
    return v;
}

/* How a client with (or without) a secret authenticates at a server that lists methods. */
static void pick_method(struct client *cl, const json_t *asm_)
{
    const json_t *methods = json_object_get(asm_, "token_endpoint_auth_methods_supported");

    if (cl->key_file[0])
        snprintf(cl->method, sizeof(cl->method), "private_key_jwt");
    else if (!cl->secret[0])
        snprintf(cl->method, sizeof(cl->method), "none");
    else if (!methods || rein__oauth_has(methods, "client_secret_basic"))
        snprintf(cl->method, sizeof(cl->method), "client_secret_basic");
    else
        snprintf(cl->method, sizeof(cl->method), "client_secret_post");
}

/* Dynamic client registration (RFC 7591). */
static rein_err register_client(const struct found *f, const char *redirect, int64_t deadline,
                                rein_cancel *cancel, struct client *cl, rein_error *err)
{
    const json_t *methods = json_object_get(f->asm_, "token_endpoint_auth_methods_supported");
    const char *method = !methods || rein__oauth_has(methods, "none")      ? "none"
                         : rein__oauth_has(methods, "client_secret_basic") ? "client_secret_basic"
                                                                           : "client_secret_post";
    json_t *req =
        json_pack("{s:s, s:[s], s:[s,s], s:[s], s:s}", "client_name", "rein", "redirect_uris",
                  redirect, "grant_types", "authorization_code", "refresh_token", "response_types",
                  "code", "token_endpoint_auth_method", method);
    char *text = req ? rein_json_dumps(req) : NULL;
    struct rein_buf b;
    long status;
    json_t *doc = NULL;
    rein_err rc;

    json_decref(req);
    if (!text)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = http(f->registration, NULL, text, NULL, deadline, cancel, &status, &b, err);
    rein_free(text);
    if (rc)
        return rc;
    if (status != 201 && status != 200) {
        rein_buf_release(&b);
        return rein_error_set(err, REIN_EDENIED,
                              "%s refused to register rein as a client (HTTP %ld); set "
                              "oauth.client_id in the server's configuration",
                              f->registration, status);
    }
    rc = rein__oauth_doc_parse(REIN__OAUTH_CLIENT, b.ptr ? b.ptr : "", b.len, &doc, err);
    rein_buf_release(&b);
    if (rc)
        return rc;
    copy_str(doc, "client_id", cl->id, sizeof(cl->id));
    copy_str(doc, "client_secret", cl->secret, sizeof(cl->secret));
    if (!copy_str(doc, "token_endpoint_auth_method", cl->method, sizeof(cl->method)))
        pick_method(cl, f->asm_);
    json_decref(doc);
    return REIN_OK;
}

/* The client to use: configured, a metadata document URL, or registered now. */
static rein_err get_client(const json_t *cfg, const struct found *f, const char *redirect,
                           int64_t deadline, rein_cancel *cancel, struct client *cl,
                           rein_error *err)
{
    const char *cimd = json_string_value(json_object_get(cfg, "client_metadata_url"));

    memset(cl, 0, sizeof(*cl));
    if (copy_str(cfg, "client_id", cl->id, sizeof(cl->id)) && cl->id[0]) {
        copy_str(cfg, "client_secret", cl->secret, sizeof(cl->secret));
        copy_str(cfg, "private_key_file", cl->key_file, sizeof(cl->key_file));
        copy_str(cfg, "signing_algorithm", cl->alg, sizeof(cl->alg));
        copy_str(cfg, "key_id", cl->kid, sizeof(cl->kid));
        /* RFC 7523 §3: the audience identifies the authorization server: its issuer. */
        snprintf(cl->aud, sizeof(cl->aud), "%s",
                 json_string_value(json_object_get(f->asm_, "issuer"))
                     ? json_string_value(json_object_get(f->asm_, "issuer"))
                     : f->as);
        if (!copy_str(cfg, "token_endpoint_auth_method", cl->method, sizeof(cl->method)))
            pick_method(cl, f->asm_);
        return REIN_OK;
    }
    if (cimd && json_is_true(json_object_get(f->asm_, "client_id_metadata_document_supported"))) {
        snprintf(cl->id, sizeof(cl->id), "%s", cimd);
        snprintf(cl->method, sizeof(cl->method), "none");
        return REIN_OK;
    }
    if (redirect && f->registration[0])
        return register_client(f, redirect, deadline, cancel, cl, err);
    return rein_error_set(err, REIN_EINVAL,
                          "the authorization server %s registers no clients; set oauth.client_id "
                          "(and client_secret) in the server's configuration",
                          f->as);
}

/* ---- the token endpoint -------------------------------------------------------------------- */

/* Reads the private key file of a private_key_jwt client: a new string (rein_free, after
 * wiping), or NULL with err set. A key that others can read is refused, as ssh refuses one. */
static char *read_key_file(const char *path, rein_error *err)
{
    struct stat st;
    char *text = NULL;

    if (stat(path, &st) == 0 && (st.st_mode & 077)) {
        rein_error_set(err, REIN_EDENIED, "the private key %s is readable by others (chmod 600 it)",
                       path);
        return NULL;
    }
    return rein_read_file(path, 64 * 1024, &text, NULL, err) == REIN_OK ? text : NULL;
}

/* The client assertion of a private_key_jwt client (RFC 7523 §2.2, §3) into out. */
static rein_err client_assertion(const struct client *cl, struct rein_buf *out, rein_error *err)
{
    int64_t now = rein_wall_ms() / 1000;
    char *jti = rein__oauth_random(16);
    char *pem = read_key_file(cl->key_file, err);
    json_t *head = json_pack("{s:s}", "typ", "JWT");
    json_t *claims =
        jti ? json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "iss", cl->id, "sub", cl->id, "aud",
                        cl->aud, "jti", jti, "iat", (json_int_t)now, "exp", (json_int_t)now + 300)
            : NULL;
    rein_err rc;

    if (!pem)
        rc = REIN_EIO; /* err says why */
    else if (!head || !claims ||
             (cl->kid[0] && json_object_set_new(head, "kid", json_string(cl->kid))))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    else
        rc = rein__jwt_sign(cl->alg[0] ? cl->alg : NULL, pem, head, claims, out, err);
    if (rc && pem)
        rein_error_prefix(err, "private_key_jwt with %s: ", cl->key_file);
    if (pem) {
        memset(pem, 0, strlen(pem));
        rein_free(pem);
    }
    rein_free(jti);
    json_decref(head);
    json_decref(claims);
    return rc;
}

/* POSTs form (to which the client's credentials are added) to the token endpoint; the answer
 * is read as kind (a token response, or RFC 8693's token exchange response). */
static rein_err token_request(const char *endpoint, struct rein_buf *form, const struct client *cl,
                              enum rein__oauth_doc kind, int64_t deadline, rein_cancel *cancel,
                              json_t **out, rein_error *err)
{
    struct rein_buf b, basic;
    char *b64 = NULL;
    long status;
    json_t *doc = NULL;
    rein_err rc = REIN_OK;

    *out = NULL;
    rein_buf_init(&basic, 0);
    if (strcmp(cl->method, "client_secret_basic") == 0) {
        /* RFC 6749 §2.3.1: both parts form-encoded before the base64. */
        if (rein__oauth_escape(&basic, cl->id) || rein_buf_addch(&basic, ':') ||
            rein__oauth_escape(&basic, cl->secret) ||
            !(b64 = rein__base64((const unsigned char *)basic.ptr, basic.len)))
            rc = REIN_ENOMEM;
    } else if (strcmp(cl->method, "private_key_jwt") == 0) {
        struct rein_buf jwt;
        rein_buf_init(&jwt, 0);
        rc = client_assertion(cl, &jwt, err);
        if (rc) {
            rein_buf_release(&jwt);
            rein_buf_release(&basic);
            return rc;
        }
        if (rein__oauth_form_add(form, "client_id", cl->id) ||
            rein__oauth_form_add(form, "client_assertion_type",
                                 "urn:ietf:params:oauth:client-assertion-type:jwt-bearer") ||
            rein_buf_addch(&jwt, '\0') || rein__oauth_form_add(form, "client_assertion", jwt.ptr))
            rc = REIN_ENOMEM;
        rein_buf_release(&jwt);
    } else {
        rc = rein__oauth_form_add(form, "client_id", cl->id);
        if (!rc && strcmp(cl->method, "client_secret_post") == 0)
            rc = rein__oauth_form_add(form, "client_secret", cl->secret);
    }
    if (basic.ptr)
        memset(basic.ptr, 0, basic.len);
    rein_buf_release(&basic);
    if (!rc && rein_buf_addch(form, '\0'))
        rc = REIN_ENOMEM;
    if (rc) {
        rein_free(b64);
        return rein_error_set(err, rc, "out of memory");
    }
    rc = http(endpoint, form->ptr, NULL, b64, deadline, cancel, &status, &b, err);
    memset(form->ptr, 0, form->len);
    if (b64)
        memset(b64, 0, strlen(b64));
    rein_free(b64);
    if (rc)
        return rc;
    if (status != 200) {
        const char *what = NULL;
        if (rein__oauth_doc_parse(REIN__OAUTH_TOKEN_ERR, b.ptr ? b.ptr : "", b.len, &doc, NULL) ==
            REIN_OK)
            what = json_string_value(json_object_get(doc, "error"));
        rc = rein_error_set(err, REIN_EDENIED, "the token endpoint %s answered HTTP %ld%s%s",
                            endpoint, status, what ? ": " : "", what ? what : "");
        json_decref(doc);
    } else {
        rc = rein__oauth_doc_parse(kind, b.ptr ? b.ptr : "", b.len, out, err);
    }
    if (b.ptr)
        memset(b.ptr, 0, b.len);
    rein_buf_release(&b);
    return rc;
}

/* The stored entry for tokens from the token endpoint (doc) and how they were obtained. */
static json_t *make_entry(const json_t *doc, const struct client *cl, const char *endpoint,
                          const char *resource, const char *asked_scope, const json_t *old)
{
    const json_t *expires = json_object_get(doc, "expires_in");
    const char *scope = json_string_value(json_object_get(doc, "scope"));
    const json_t *refresh = json_object_get(doc, "refresh_token");
    json_t *e = json_pack("{s:O, s:s, s:s, s:s, s:s, s:s}", "access_token",
                          json_object_get(doc, "access_token"), "client_id", cl->id,
                          "token_endpoint_auth_method", cl->method, "token_endpoint", endpoint,
                          "resource", resource, "scope",
                          scope         ? scope
                          : asked_scope ? asked_scope
                                        : "");

    if (!e)
        return NULL;
    /* A refresh may come without a new refresh token: the old one stays good. */
    if (!refresh)
        refresh = json_object_get(old, "refresh_token");
    if ((refresh && json_object_set(e, "refresh_token", (json_t *)refresh)) ||
        (cl->secret[0] && json_object_set_new(e, "client_secret", json_string(cl->secret))) ||
        (cl->key_file[0] &&
         (json_object_set_new(e, "private_key_file", json_string(cl->key_file)) ||
          json_object_set_new(e, "signing_algorithm", json_string(cl->alg)) ||
          json_object_set_new(e, "key_id", json_string(cl->kid)) ||
          json_object_set_new(e, "assertion_audience", json_string(cl->aud)))) ||
        (expires &&
         json_object_set_new(e, "expires_at",
                             json_integer(rein_wall_ms() / 1000 + json_integer_value(expires))))) {
        json_decref(e);
        return NULL;
    }
    return e;
}

/* ---- the grants ------------------------------------------------------------------------------ */

/* Starts the program that shows url to the person (REIN_MCP_OAUTH_OPEN, else xdg-open when
 * there is a display); NULL when there is none or it cannot start. */
static rein_proc *open_browser(const char *url)
{
    const char *prog = getenv("REIN_MCP_OAUTH_OPEN");
    const char *argv[3] = {NULL, url, NULL};
    rein_proc *p = NULL;

    if (!prog || !prog[0])
        prog = getenv("DISPLAY") || getenv("WAYLAND_DISPLAY") ? "xdg-open" : NULL;
    if (!prog)
        return NULL;
    argv[0] = prog;
    struct rein_proc_opts o = {.argv = argv};
    if (rein_proc_start(&o, &p, NULL) != REIN_OK)
        return NULL;
    rein_proc_close_stdin(p);
    return p;
}

/* Authorization code with PKCE through the browser and the loopback redirect. */
static rein_err code_grant(struct rein__mcp_conn *c, const struct found *f, const char *scope,
                           int64_t deadline, rein_cancel *cancel, json_t **entry, rein_error *err)
{
    const json_t *cfg = c->cfg->oauth;
    const json_t *port = json_object_get(cfg, "redirect_port");
    struct rein__oauth_loopback lb;
    struct client cl;
    struct rein_buf q, form;
    char redirect[64], challenge[44], code[2048];
    char *verifier = NULL, *state = NULL;
    json_t *doc = NULL;
    rein_proc *browser = NULL;
    int64_t wait = LOGIN_TIMEOUT_MS;
    rein_err rc;

    rc = rein__oauth_loopback_open(&lb, (int)json_integer_value(port), err);
    if (rc)
        return rc;
    snprintf(redirect, sizeof(redirect), "http://127.0.0.1:%d/callback", lb.port);
    rein_buf_init(&q, 0);
    rein_buf_init(&form, 0);
    rc = get_client(cfg, f, redirect, deadline, cancel, &cl, err);
    if (rc)
        goto out;
    /* PKCE (RFC 7636): 32 random bytes make a 43-character verifier; state binds the redirect
     * to this request (RFC 6749 §10.12). Both from getrandom(). */
    verifier = rein__oauth_random(32);
    state = rein__oauth_random(24);
    if (!verifier || !state) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto out;
    }
    rein__oauth_s256(verifier, challenge);
    rc = rein_buf_adds(&q, f->authorize);
    if (!rc)
        rc = rein_buf_addch(&q, strchr(f->authorize, '?') ? '&' : '?');
    {
        size_t start = q.len;
        const char *kv[][2] = {{"response_type", "code"},         {"client_id", cl.id},
                               {"redirect_uri", redirect},        {"code_challenge", challenge},
                               {"code_challenge_method", "S256"}, {"state", state},
                               {"resource", f->resource},         {"scope", scope}};
        for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]) && !rc; i++) {
            if (!kv[i][1][0])
                continue; /* no scope: the parameter is left out */
            rc = q.len > start ? rein_buf_addch(&q, '&') : REIN_OK;
            if (!rc)
                rc = rein__oauth_escape(&q, kv[i][0]);
            if (!rc)
                rc = rein_buf_addch(&q, '=');
            if (!rc)
                rc = rein__oauth_escape(&q, kv[i][1]);
        }
    }
    if (!rc)
        rc = rein_buf_addch(&q, '\0');
    if (rc) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto out;
    }
    fprintf(stderr,
            "rein: %s asks for authorization. Open this address in a browser to allow rein:\n"
            "  %s\n"
            "rein: waiting for the answer at %s\n",
            c->cfg->name, q.ptr, redirect);
    browser = open_browser(q.ptr);
    if (json_is_integer(json_object_get(cfg, "login_timeout_ms")))
        wait = json_integer_value(json_object_get(cfg, "login_timeout_ms"));
    if (deadline && deadline - rein_now_ms() < wait)
        wait = deadline - rein_now_ms() > 0 ? deadline - rein_now_ms() : 1;
    rc = rein__oauth_loopback_wait(&lb, state, wait, cancel, code, sizeof(code), err);
    if (rc)
        goto out;
    rc = rein__oauth_form_add(&form, "grant_type", "authorization_code");
    if (!rc)
        rc = rein__oauth_form_add(&form, "code", code);
    if (!rc)
        rc = rein__oauth_form_add(&form, "redirect_uri", redirect);
    if (!rc)
        rc = rein__oauth_form_add(&form, "code_verifier", verifier);
    if (!rc)
        rc = rein__oauth_form_add(&form, "resource", f->resource);
    if (rc) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto out;
    }
    rc = token_request(f->token, &form, &cl, REIN__OAUTH_TOKEN, deadline, cancel, &doc, err);
    if (!rc && !(*entry = make_entry(doc, &cl, f->token, f->resource, scope, NULL)))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
out:
    if (browser) {
        int code_rc;
        if (rein_proc_wait(browser, 2000, &code_rc) != REIN_OK)
            rein_log(REIN_LOG_DEBUG, WHERE, "the browser program is still running; stopped");
        rein_proc_free(browser);
    }
    rein__oauth_loopback_close(&lb);
    json_decref(doc);
    if (verifier)
        memset(verifier, 0, strlen(verifier));
    rein_free(verifier);
    rein_free(state);
    memset(code, 0, sizeof(code));
    rein_buf_release(&q);
    rein_buf_release(&form);
    return rc;
}

/* client_credentials (OAuth 2.1 §4.2): a configured machine client, no person involved. */
static rein_err client_grant(struct rein__mcp_conn *c, const struct found *f, const char *scope,
                             int64_t deadline, rein_cancel *cancel, json_t **entry, rein_error *err)
{
    struct client cl;
    struct rein_buf form;
    json_t *doc = NULL;
    rein_err rc = get_client(c->cfg->oauth, f, NULL, deadline, cancel, &cl, err);

    if (rc)
        return rc;
    rein_buf_init(&form, 0);
    rc = rein__oauth_form_add(&form, "grant_type", "client_credentials");
    if (!rc)
        rc = rein__oauth_form_add(&form, "resource", f->resource);
    if (!rc && scope[0])
        rc = rein__oauth_form_add(&form, "scope", scope);
    if (rc)
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    if (!rc)
        rc = token_request(f->token, &form, &cl, REIN__OAUTH_TOKEN, deadline, cancel, &doc, err);
    if (!rc && !(*entry = make_entry(doc, &cl, f->token, f->resource, scope, NULL)))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    json_decref(doc);
    rein_buf_release(&form);
    return rc;
}

#define TOKEN_EXCHANGE "urn:ietf:params:oauth:grant-type:token-exchange"
#define JWT_BEARER     "urn:ietf:params:oauth:grant-type:jwt-bearer"
#define TYPE_ID_TOKEN  "urn:ietf:params:oauth:token-type:id_token"
#define TYPE_ID_JAG    "urn:ietf:params:oauth:token-type:id-jag"

/* The ID token the enterprise's identity provider gave the user: oauth.id_token, else the
 * first line of oauth.id_token_file (kept fresh by whatever signs the user in). */
static char *id_token(const json_t *cfg, rein_error *err)
{
    const char *given = json_string_value(json_object_get(cfg, "id_token"));
    const char *path = json_string_value(json_object_get(cfg, "id_token_file"));
    char *text = NULL;

    if (given && given[0])
        return rein_strdup(given);
    if (!path) {
        rein_error_set(err, REIN_EINVAL,
                       "oauth.grant id_jag needs oauth.id_token or id_token_file");
        return NULL;
    }
    if (rein_read_file(path, 1 << 20, &text, NULL, err) != REIN_OK)
        return NULL;
    if (text)
        text[strcspn(text, "\r\n")] = '\0';
    if (text && !text[0]) {
        rein_free(text);
        rein_error_set(err, REIN_EINVAL, "%s holds no ID token", path);
        return NULL;
    }
    return text;
}

/*
 * Enterprise-managed authorization (SEP-990, the Identity Assertion JWT Authorization Grant):
 * the user's ID token goes to the identity provider's token endpoint in a token exchange
 * (RFC 8693) for an ID-JAG naming this authorization server and resource; the ID-JAG is then
 * the assertion of a JWT bearer grant (RFC 7523 §2.1) at the authorization server, with the
 * client's own credentials. No person is involved once the user has signed in to the IdP.
 */
static rein_err jag_grant(struct rein__mcp_conn *c, const struct found *f, const char *scope,
                          int64_t deadline, rein_cancel *cancel, json_t **entry, rein_error *err)
{
    const json_t *cfg = c->cfg->oauth;
    const char *idp = json_string_value(json_object_get(cfg, "idp_token_endpoint"));
    const char *issuer = json_string_value(json_object_get(f->asm_, "issuer"));
    const json_t *grants = json_object_get(f->asm_, "grant_types_supported");
    struct client cl, idp_cl;
    struct rein_buf form;
    json_t *doc = NULL;
    char *token = NULL, *jag = NULL;
    const char *issued;
    rein_err rc;

    if (!idp || !rein__oauth_endpoint_ok(idp))
        return rein_error_set(err, REIN_EINVAL,
                              "oauth.idp_token_endpoint must name the identity provider's token "
                              "endpoint (https, or http on this machine)");
    if (grants && !rein__oauth_has(grants, JWT_BEARER))
        return rein_error_set(err, REIN_EDENIED,
                              "the authorization server %s does not take JWT bearer grants, "
                              "which oauth.grant id_jag needs",
                              f->as);
    rc = get_client(cfg, f, NULL, deadline, cancel, &cl, err);
    if (rc || !(token = id_token(cfg, err)))
        return rc ? rc : REIN_EINVAL;
    /* 1. At the identity provider: the ID token for an ID-JAG for this server. */
    memset(&idp_cl, 0, sizeof(idp_cl));
    copy_str(cfg, "idp_client_id", idp_cl.id, sizeof(idp_cl.id));
    copy_str(cfg, "idp_client_secret", idp_cl.secret, sizeof(idp_cl.secret));
    snprintf(idp_cl.method, sizeof(idp_cl.method), "%s",
             idp_cl.secret[0] ? "client_secret_basic" : "none");
    rein_buf_init(&form, 0);
    rc = rein__oauth_form_add(&form, "grant_type", TOKEN_EXCHANGE);
    if (!rc)
        rc = rein__oauth_form_add(&form, "requested_token_type", TYPE_ID_JAG);
    if (!rc)
        rc = rein__oauth_form_add(&form, "audience", issuer ? issuer : f->as);
    if (!rc)
        rc = rein__oauth_form_add(&form, "resource", f->resource);
    if (!rc && scope[0])
        rc = rein__oauth_form_add(&form, "scope", scope);
    if (!rc)
        rc = rein__oauth_form_add(&form, "subject_token", token);
    if (!rc)
        rc = rein__oauth_form_add(&form, "subject_token_type", TYPE_ID_TOKEN);
    if (rc)
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    if (!rc)
        rc = idp_cl.id[0] ? token_request(idp, &form, &idp_cl, REIN__OAUTH_EXCHANGE, deadline,
                                          cancel, &doc, err)
                          : rein_error_set(err, REIN_EINVAL,
                                           "oauth.grant id_jag needs oauth.idp_client_id (rein's "
                                           "client at the identity provider)");
    issued = json_string_value(json_object_get(doc, "issued_token_type"));
    if (!rc && (!issued || strcmp(issued, TYPE_ID_JAG) != 0))
        rc =
            rein_error_set(err, REIN_EDENIED, "the identity provider %s issued a %s, not an ID-JAG",
                           idp, issued ? issued : "(nothing)");
    if (!rc && !(jag = rein_strdup(json_string_value(json_object_get(doc, "access_token")))))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    json_decref(doc);
    doc = NULL;
    /* 2. At the authorization server: the ID-JAG for an access token. */
    rein_buf_reset(&form);
    if (!rc && (rein__oauth_form_add(&form, "grant_type", JWT_BEARER) ||
                rein__oauth_form_add(&form, "assertion", jag) ||
                rein__oauth_form_add(&form, "resource", f->resource) ||
                (scope[0] && rein__oauth_form_add(&form, "scope", scope))))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    if (!rc)
        rc = token_request(f->token, &form, &cl, REIN__OAUTH_TOKEN, deadline, cancel, &doc, err);
    if (!rc && !(*entry = make_entry(doc, &cl, f->token, f->resource, scope, NULL)))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    json_decref(doc);
    rein_buf_release(&form);
    if (token) {
        memset(token, 0, strlen(token));
        rein_free(token);
    }
    if (jag) {
        memset(jag, 0, strlen(jag));
        rein_free(jag);
    }
    memset(cl.secret, 0, sizeof(cl.secret));
    memset(idp_cl.secret, 0, sizeof(idp_cl.secret));
    return rc;
}

/* A refresh (OAuth 2.1 §4.3) with what old (the stored entry) holds. */
static rein_err refresh_grant(const json_t *old, int64_t deadline, rein_cancel *cancel,
                              json_t **entry, rein_error *err)
{
    const char *endpoint = json_string_value(json_object_get(old, "token_endpoint"));
    const char *resource = json_string_value(json_object_get(old, "resource"));
    const char *refresh = json_string_value(json_object_get(old, "refresh_token"));
    struct client cl;
    struct rein_buf form;
    json_t *doc = NULL;
    rein_err rc;

    if (!endpoint || !refresh || !copy_str(old, "client_id", cl.id, sizeof(cl.id)))
        return rein_error_set(err, REIN_ENOTFOUND, "no refresh token is stored");
    copy_str(old, "client_secret", cl.secret, sizeof(cl.secret));
    copy_str(old, "private_key_file", cl.key_file, sizeof(cl.key_file));
    copy_str(old, "signing_algorithm", cl.alg, sizeof(cl.alg));
    copy_str(old, "key_id", cl.kid, sizeof(cl.kid));
    copy_str(old, "assertion_audience", cl.aud, sizeof(cl.aud));
    if (!copy_str(old, "token_endpoint_auth_method", cl.method, sizeof(cl.method)))
        snprintf(cl.method, sizeof(cl.method), "none");
    rein_buf_init(&form, 0);
    rc = rein__oauth_form_add(&form, "grant_type", "refresh_token");
    if (!rc)
        rc = rein__oauth_form_add(&form, "refresh_token", refresh);
    if (!rc && resource)
        rc = rein__oauth_form_add(&form, "resource", resource);
    if (rc)
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    if (!rc)
        rc = token_request(endpoint, &form, &cl, REIN__OAUTH_TOKEN, deadline, cancel, &doc, err);
    if (!rc && !(*entry = make_entry(doc, &cl, endpoint, resource ? resource : "",
                                     json_string_value(json_object_get(old, "scope")), old)))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    json_decref(doc);
    memset(cl.secret, 0, sizeof(cl.secret));
    rein_buf_release(&form);
    return rc;
}

/* ---- what the transport calls -------------------------------------------------------------- */

/* c's OAuth state, made on first use (c->mu held); NULL when out of memory. */
static struct rein__mcp_oauth *state_of(struct rein__mcp_conn *c)
{
    if (!c->oauth && (c->oauth = rein_calloc(1, sizeof(*c->oauth))))
        pthread_mutex_init(&c->oauth->flow_mu, NULL);
    return c->oauth;
}

void rein__oauth_conn_release(struct rein__mcp_conn *c)
{
    struct rein__mcp_oauth *o = c->oauth;

    if (!o)
        return;
    if (o->access)
        memset(o->access, 0, strlen(o->access));
    rein_free(o->access);
    json_decref(o->entry);
    pthread_mutex_destroy(&o->flow_mu);
    rein_free(o);
    c->oauth = NULL;
}

/* Makes entry's access token the one in use (flow_mu held). */
static rein_err use_entry(struct rein__mcp_conn *c, struct rein__mcp_oauth *o, json_t *entry)
{
    char *token = rein_strdup(json_string_value(json_object_get(entry, "access_token")));

    if (!token) {
        json_decref(entry);
        return REIN_ENOMEM;
    }
    json_decref(o->entry);
    o->entry = entry;
    pthread_mutex_lock(&c->mu);
    if (o->access)
        memset(o->access, 0, strlen(o->access));
    rein_free(o->access);
    o->access = token;
    o->gen++;
    pthread_mutex_unlock(&c->mu);
    return REIN_OK;
}

/* Reads the stored entry once (flow_mu held); a token not yet expired is used. */
static void load_stored(struct rein__mcp_conn *c, struct rein__mcp_oauth *o)
{
    json_t *entry = NULL;
    rein_error err;

    if (o->loaded)
        return;
    o->loaded = true;
    rein_error_clear(&err);
    if (rein__oauth_store_load(c->cfg->url, &entry, &err) != REIN_OK) {
        rein_log(REIN_LOG_WARN, WHERE, "%s: %s", c->cfg->name, err.msg);
        return;
    }
    if (!entry)
        return;
    const json_t *exp = json_object_get(entry, "expires_at");
    if (exp && json_integer_value(exp) <= rein_wall_ms() / 1000 + 30) {
        /* Expired: kept for its refresh token, not sent. */
        json_decref(o->entry);
        o->entry = entry;
        return;
    }
    if (use_entry(c, o, entry) != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "%s: out of memory reading the stored token", c->cfg->name);
}

void rein__oauth_header(struct rein__mcp_conn *c, char *out, size_t size, uint64_t *gen)
{
    struct rein__mcp_oauth *o;

    out[0] = '\0';
    *gen = 0;
    if (c->cfg->oauth_off)
        return;
    pthread_mutex_lock(&c->mu);
    o = state_of(c);
    bool loaded = o && o->loaded;
    pthread_mutex_unlock(&c->mu);
    if (o && !loaded) {
        pthread_mutex_lock(&o->flow_mu);
        load_stored(c, o);
        pthread_mutex_unlock(&o->flow_mu);
    }
    pthread_mutex_lock(&c->mu);
    if (o && o->access && strlen(o->access) + 32 < size)
        snprintf(out, size, "Authorization: Bearer %s", o->access);
    if (o)
        *gen = o->gen;
    pthread_mutex_unlock(&c->mu);
}

/* A new token for c: refresh, client credentials, or the browser flow (flow_mu held). */
static rein_err obtain(struct rein__mcp_conn *c, struct rein__mcp_oauth *o, long status,
                       const struct rein__oauth_challenge *ch, int64_t deadline,
                       rein_cancel *cancel, rein_error *err)
{
    const json_t *cfg = c->cfg->oauth;
    const char *grant = json_string_value(json_object_get(cfg, "grant"));
    bool jag = grant && strcmp(grant, "id_jag") == 0;
    bool machine = jag || (grant && strcmp(grant, "client_credentials") == 0);
    struct found f;
    struct rein_buf scope;
    json_t *entry = NULL;
    bool login;
    rein_error refresh_err;
    rein_err rc;

    rein_error_clear(&refresh_err);
    if (status == 401 && json_object_get(o->entry, "refresh_token")) {
        rc = refresh_grant(o->entry, deadline, cancel, &entry, &refresh_err);
        if (!rc) {
            rein_log(REIN_LOG_INFO, WHERE, "%s: access token refreshed", c->cfg->name);
            goto got;
        }
        rein_log(REIN_LOG_INFO, WHERE, "%s: refresh failed (%s)", c->cfg->name, refresh_err.msg);
    }
    pthread_mutex_lock(&c->mu);
    login = c->oauth_login;
    pthread_mutex_unlock(&c->mu);
    if (!machine && !login)
        return rein_error_set(err, REIN_EDENIED,
                              "%s asks for authorization (HTTP %ld) and no usable token is "
                              "stored%s%s%s: run `rein mcp login %s`",
                              c->cfg->url, status,
                              refresh_err.msg[0] ? " (the refresh failed: " : "", refresh_err.msg,
                              refresh_err.msg[0] ? ")" : "", c->cfg->name);
    rc = discover(c->cfg->url, ch, deadline, cancel, &f, err);
    rein_buf_init(&scope, 0);
    if (!rc && choose_scope(cfg, &f, ch, o->entry, status, &scope))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    if (!rc)
        rc = jag ? jag_grant(c, &f, scope.ptr ? scope.ptr : "", deadline, cancel, &entry, err)
             : machine
                 ? client_grant(c, &f, scope.ptr ? scope.ptr : "", deadline, cancel, &entry, err)
                 : code_grant(c, &f, scope.ptr ? scope.ptr : "", deadline, cancel, &entry, err);
    rein_buf_release(&scope);
    found_release(&f);
    if (rc)
        return rc;
got:
    /* A token that cannot be stored still serves this process. */
    {
        rein_error store_err;
        rein_error_clear(&store_err);
        if (rein__oauth_store_save(c->cfg->url, entry, &store_err) != REIN_OK)
            rein_log(REIN_LOG_WARN, WHERE, "%s: the token is not stored: %s", c->cfg->name,
                     store_err.msg);
    }
    rc = use_entry(c, o, entry);
    return rc ? rein_error_set(err, rc, "out of memory") : REIN_OK;
}

rein_err rein__oauth_authorize(struct rein__mcp_conn *c, long status, const char *www, uint64_t gen,
                               int *attempt, int64_t deadline, rein_cancel *cancel, rein_error *err)
{
    struct rein__oauth_challenge ch = {0};
    struct rein__mcp_oauth *o;
    bool have_ch;
    rein_err rc;

    if (c->cfg->oauth_off)
        return rein_error_set(err, REIN_EDENIED, "%s refused the configured credentials (HTTP %ld)",
                              c->cfg->url, status);
    pthread_mutex_lock(&c->mu);
    o = state_of(c);
    pthread_mutex_unlock(&c->mu);
    if (!o)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    have_ch = www && rein__oauth_challenge_parse(www, strlen(www), &ch) == REIN_OK;
    if (status == 403 && !(have_ch && ch.error && strcmp(ch.error, "insufficient_scope") == 0)) {
        rein__oauth_challenge_release(&ch);
        return rein_error_set(err, REIN_EDENIED, "%s answered HTTP 403 (forbidden)", c->cfg->url);
    }
    pthread_mutex_lock(&o->flow_mu);
    load_stored(c, o);
    pthread_mutex_lock(&c->mu);
    bool newer = o->gen != gen;
    pthread_mutex_unlock(&c->mu);
    if (newer) {
        rc = REIN_OK; /* another request, or the token file, brought a token not tried yet */
    } else if (*attempt >= MAX_AUTHORIZE) {
        rc = rein_error_set(err, REIN_EDENIED,
                            "%s still answers HTTP %ld%s%s after %d authorizations; giving up",
                            c->cfg->url, status, have_ch && ch.error ? ": " : "",
                            have_ch && ch.error ? ch.error : "", MAX_AUTHORIZE);
    } else {
        (*attempt)++;
        rc = obtain(c, o, status, have_ch ? &ch : NULL, deadline, cancel, err);
    }
    pthread_mutex_unlock(&o->flow_mu);
    rein__oauth_challenge_release(&ch);
    return rc;
}

void rein__mcp_conn_allow_login(struct rein__mcp_conn *c, bool allow)
{
    pthread_mutex_lock(&c->mu);
    c->oauth_login = allow;
    pthread_mutex_unlock(&c->mu);
}

bool rein__mcp_conn_has_token(struct rein__mcp_conn *c)
{
    bool has;

    pthread_mutex_lock(&c->mu);
    has = c->oauth && c->oauth->access;
    pthread_mutex_unlock(&c->mu);
    return has;
}

rein_err rein__mcp_conn_forget_token(struct rein__mcp_conn *c, rein_error *err)
{
    if (!c->cfg->http)
        return REIN_OK;
    rein__oauth_conn_release(c);
    return rein__oauth_store_save(c->cfg->url, NULL, err);
}
