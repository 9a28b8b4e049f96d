/*
 * The chat page's static routes (rein_server_add_web_routes) over real sockets: every file of
 * web/ is served byte for byte from the copy built into the library, with its content type,
 * the security headers and an ETag that turns a repeat request into a 304; unknown names and
 * path tricks are refused; the page needs no API key while the API routes still do. The page
 * itself is tested in Chromium by tests/scripts/browser.sh.
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include <curl/curl.h>
#include <dirent.h>
#include <strings.h>

struct resp {
    long status;
    char *body;
    size_t len;
    char headers[4096];
    size_t hlen;
};

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    struct resp *r = ud;
    size_t len = size * n;
    char *grown = realloc(r->body, r->len + len + 1);

    assert_non_null(grown);
    r->body = grown;
    memcpy(r->body + r->len, data, len);
    r->len += len;
    r->body[r->len] = '\0';
    return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
    struct resp *r = ud;
    size_t len = size * n;

    if (r->hlen + len < sizeof(r->headers) - 1) {
        memcpy(r->headers + r->hlen, data, len);
        r->hlen += len;
        r->headers[r->hlen] = '\0';
    }
    return len;
}

/* One request; header may be NULL. */
static void http(const char *method, const char *url, const char *header, struct resp *out)
{
    CURL *c = curl_easy_init();
    struct curl_slist *list = NULL;

    memset(out, 0, sizeof(*out));
    assert_non_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    if (header) {
        list = curl_slist_append(list, header);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
    }
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    curl_slist_free_all(list);
    curl_easy_cleanup(c);
    if (!out->body)
        out->body = calloc(1, 1);
}

/* The value of response header name (case-insensitive), copied into out; false when absent. */
static bool header_value(const struct resp *r, const char *name, char *out, size_t size)
{
    size_t nlen = strlen(name);

    for (const char *line = r->headers; *line;) {
        const char *end = strstr(line, "\r\n");
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > nlen && strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (*v == ' ')
                v++;
            snprintf(out, size, "%.*s", (int)(len - (size_t)(v - line)), v);
            return true;
        }
        if (!end)
            break;
        line = end + 2;
    }
    return false;
}

static void assert_header(const struct resp *r, const char *name, const char *want)
{
    char got[512];

    if (!header_value(r, name, got, sizeof(got)))
        fail_msg("no %s header in:\n%s", name, r->headers);
    if (strstr(got, want) == NULL)
        fail_msg("%s is \"%s\", expected it to contain \"%s\"", name, got, want);
}

static void assert_error(const struct resp *r, long status, const char *code)
{
    json_t *o = json_loads(r->body, 0, NULL);

    if (r->status != status)
        fail_msg("expected %ld, got %ld: %s", status, r->status, r->body);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "error"), "code")),
                        code);
    json_decref(o);
}

struct fixture {
    char *dir;
    rein_store *store;
    rein_server *srv;
    char base[64];
};

static struct fixture *start(const char *keys)
{
    struct fixture *f = calloc(1, sizeof(*f));
    rein_error err;
    char url[600];

    assert_non_null(f);
    f->dir = test_tmpdir();
    snprintf(url, sizeof(url), "sqlite:%s/rein.db", f->dir);
    assert_rein_ok(rein_store_open(url, NULL, &f->store, &err), &err);
    f->srv = rein_server_new(&err);
    assert_non_null(f->srv);
    rein_server_set_port(f->srv, 0);
    assert_rein_ok(rein_server_set_api_keys(f->srv, keys), NULL);
    assert_rein_ok(rein_server_add_store_routes(f->srv, f->store, &err), &err);
    assert_rein_ok(rein_server_add_web_routes(f->srv, &err), &err);
    assert_rein_ok(rein_server_start(f->srv, &err), &err);
    snprintf(f->base, sizeof(f->base), "http://127.0.0.1:%d", rein_server_port(f->srv));
    return f;
}

static void stop(struct fixture *f)
{
    rein_server_free(f->srv);
    rein_store_free(f->store);
    test_rmtree(f->dir);
    free(f->dir);
    free(f);
}

static const char *type_for(const char *name)
{
    const char *dot = strrchr(name, '.');

    if (!dot)
        return NULL;
    if (strcmp(dot, ".html") == 0)
        return "text/html; charset=utf-8";
    if (strcmp(dot, ".css") == 0)
        return "text/css; charset=utf-8";
    if (strcmp(dot, ".js") == 0)
        return "text/javascript; charset=utf-8";
    return NULL;
}

/* Every page file in the source tree's web/ comes back byte for byte with its type. */
static void test_serves_every_file(void **state)
{
    struct fixture *f = start(NULL);
    char dir[1024], url[1400], path[1400];
    struct dirent *de;
    DIR *d;
    int served = 0;

    (void)state;
    snprintf(dir, sizeof(dir), "%s/web", REIN_SOURCE_DIR);
    d = opendir(dir);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        const char *type = type_for(de->d_name);
        struct resp r;
        size_t len = 0;
        char *want;
        if (!type)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        want = test_read_file(path, &len);
        snprintf(url, sizeof(url), "%s/web/%s", f->base, de->d_name);
        http("GET", url, NULL, &r);
        if (r.status != 200)
            fail_msg("%s: %ld %s", de->d_name, r.status, r.body);
        assert_header(&r, "Content-Type", type);
        assert_int_equal(r.len, len);
        assert_memory_equal(r.body, want, len);
        free(want);
        free(r.body);
        served++;
    }
    closedir(d);
    assert_true(served >= 5); /* index.html, app.js, api.js, style.css, ... */
    stop(f);
}

/* GET / is index.html, with the policy that keeps injected markup from running. */
static void test_index_and_headers(void **state)
{
    struct fixture *f = start(NULL);
    char url[128], etag[64];
    struct resp r, again, other;

    (void)state;
    snprintf(url, sizeof(url), "%s/", f->base);
    http("GET", url, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_header(&r, "Content-Type", "text/html; charset=utf-8");
    assert_header(&r, "Content-Security-Policy", "script-src 'self'");
    assert_header(&r, "Content-Security-Policy", "default-src 'none'");
    assert_header(&r, "X-Content-Type-Options", "nosniff");
    assert_header(&r, "Cache-Control", "no-cache");
    assert_header(&r, "X-Request-Id", "req_");
    assert_non_null(strstr(r.body, "<script type=\"module\" src=\"/web/app.js\">"));

    /* The ETag turns a repeat into a 304 with no body; another tag gets the page again. */
    assert_true(header_value(&r, "ETag", etag, sizeof(etag)));
    assert_true(strlen(etag) > 2 && etag[0] == '"' && etag[strlen(etag) - 1] == '"');
    {
        char h[128];
        snprintf(h, sizeof(h), "If-None-Match: \"zzz\", %s", etag);
        http("GET", url, h, &again);
    }
    assert_int_equal(again.status, 304);
    assert_int_equal(again.len, 0);
    http("GET", url, "If-None-Match: \"0000\"", &other);
    assert_int_equal(other.status, 200);
    assert_int_equal(other.len, r.len);
    free(r.body);
    free(again.body);
    free(other.body);
    stop(f);
}

/* Unknown files, other methods and path tricks get the JSON errors of the other routes. */
static void test_bad_paths(void **state)
{
    struct fixture *f = start(NULL);
    static const struct {
        const char *method, *path;
        long status;
        const char *code;
    } cases[] = {
        {"GET", "/web/missing.js", 404, "not_found"},
        {"GET", "/web/README.md", 404, "not_found"},
        {"GET", "/web/", 404, "not_found"},
        {"GET", "/web/x/app.js", 404, "not_found"},
        {"GET", "/web/..%2Fapp.js", 400, "invalid_id"},
        {"GET", "/web/%2e%2e", 400, "invalid_id"},
        {"GET", "/web/.hidden.js", 400, "invalid_id"},
        {"GET", "/web/app.js%00", 400, "invalid_id"},
        {"GET", "/index.html", 404, "not_found"},
        {"POST", "/", 405, "method_not_allowed"},
        {"DELETE", "/web/app.js", 405, "method_not_allowed"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char url[256];
        struct resp r;
        snprintf(url, sizeof(url), "%s%s", f->base, cases[i].path);
        http(cases[i].method, url, NULL, &r);
        if (r.status != cases[i].status)
            fail_msg("%s %s: %ld %s", cases[i].method, cases[i].path, r.status, r.body);
        assert_error(&r, cases[i].status, cases[i].code);
        free(r.body);
    }
    stop(f);
}

/* With API keys set the page still loads (it holds no data) but the API wants the key. */
static void test_page_is_public_api_is_not(void **state)
{
    struct fixture *f = start("k1");
    char url[128];
    struct resp page, js, list, keyed;

    (void)state;
    snprintf(url, sizeof(url), "%s/", f->base);
    http("GET", url, NULL, &page);
    assert_int_equal(page.status, 200);
    snprintf(url, sizeof(url), "%s/web/app.js", f->base);
    http("GET", url, NULL, &js);
    assert_int_equal(js.status, 200);
    snprintf(url, sizeof(url), "%s/agent/conversations", f->base);
    http("GET", url, NULL, &list);
    assert_error(&list, 401, "unauthorized");
    http("GET", url, "Authorization: Bearer k1", &keyed);
    assert_int_equal(keyed.status, 200);
    free(page.body);
    free(js.body);
    free(list.body);
    free(keyed.body);
    stop(f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_serves_every_file),
    cmocka_unit_test(test_index_and_headers),
    cmocka_unit_test(test_bad_paths),
    cmocka_unit_test(test_page_is_public_api_is_not),
};

REIN_TEST_MAIN(tests)
