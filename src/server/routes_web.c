/*
 * The chat page's routes (rein_server_add_web_routes in include/rein/server.h): GET / answers
 * web/index.html and GET /web/{file} the page's other files, from the copies built into the
 * library at build time (web_assets.h, cmake/ReinEmbed.cmake), so the page works wherever the
 * binary runs with nothing installed beside it. Both routes are public and inline: the files
 * hold no data (everything the page shows comes from the API routes, which keep their key
 * check) and answering is a table lookup.
 *
 * Every answer carries a Content-Security-Policy that allows only this origin's scripts,
 * styles and fetches, with no inline script: the page renders model and tool output as text,
 * and the policy is a second wall should a bug ever let markup through. Files are sent with a
 * strong ETag and "Cache-Control: no-cache", so a browser revalidates (304) instead of keeping
 * a page older than the server it talks to.
 */
#include "server/server_int.h"
#include "server/web_assets.h"

#include <string.h>

#define CSP                                                                                        \
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "                \
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const struct {
    const char *suffix;
    const char *type;
} content_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".json", "application/json"},
    {".txt", "text/plain; charset=utf-8"},
};

static const char *content_type_of(const char *name)
{
    size_t len = strlen(name);

    for (size_t i = 0; i < REIN_ARRAY_SIZE(content_types); i++) {
        size_t slen = strlen(content_types[i].suffix);
        if (len > slen && strcmp(name + len - slen, content_types[i].suffix) == 0)
            return content_types[i].type;
    }
    return "application/octet-stream";
}

static const struct rein__web_asset *find_asset(const char *name)
{
    for (size_t i = 0; i < rein__web_asset_count; i++) {
        if (strcmp(rein__web_assets[i].name, name) == 0)
            return &rein__web_assets[i];
    }
    return NULL;
}

/* True when If-None-Match (a list of quoted tags, or "*") names etag. */
static bool etag_matches(const char *if_none_match, const char *etag)
{
    const char *p;
    size_t len = strlen(etag);

    if (!if_none_match)
        return false;
    if (strcmp(if_none_match, "*") == 0)
        return true;
    for (p = strstr(if_none_match, etag); p; p = strstr(p + 1, etag)) {
        char after = p[len];
        if (after == '\0' || after == ',' || after == ' ')
            return true;
    }
    return false;
}

static void serve_asset(rein_request *req, const char *name)
{
    const struct rein__web_asset *a = find_asset(name);
    static const char *const fixed[][2] = {
        {"Content-Security-Policy", CSP},
        {"X-Content-Type-Options", "nosniff"},
        {"Referrer-Policy", "no-referrer"},
        {"Cache-Control", "no-cache"},
    };

    if (!a) {
        rein_request_reply_error(req, 404, "not_found", "the page has no file %.100s", name);
        return;
    }
    for (size_t i = 0; i < REIN_ARRAY_SIZE(fixed); i++) {
        if (rein_request_set_header(req, fixed[i][0], fixed[i][1]) != REIN_OK)
            goto out_nomem;
    }
    if (rein_request_set_header(req, "ETag", a->etag) != REIN_OK)
        goto out_nomem;
    if (etag_matches(rein_request_header(req, "If-None-Match"), a->etag)) {
        rein_request_reply(req, 304, NULL, "", 0);
        return;
    }
    rein_request_reply(req, 200, content_type_of(a->name), a->data, a->len);
    return;
out_nomem:
    rein_request_reply_error(req, 500, "internal", "out of memory");
}

static void get_index(rein_request *req, void *userdata)
{
    (void)userdata;
    serve_asset(req, "index.html");
}

static void get_file(rein_request *req, void *userdata)
{
    (void)userdata;
    serve_asset(req, rein_request_param(req, "file"));
}

rein_err rein_server_add_web_routes(rein_server *srv, rein_error *err)
{
    const unsigned flags = REIN_ROUTE_PUBLIC | REIN_ROUTE_INLINE;
    rein_err rc = rein_server_route(srv, "GET", "/", flags, get_index, NULL, err);

    if (rc == REIN_OK)
        rc = rein_server_route(srv, "GET", "/web/{file}", flags, get_file, NULL, err);
    return rc;
}
