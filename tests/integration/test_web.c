/*
 * The chat page's static routes (rein_server_add_web_routes) over real sockets: every file of
 * web/ is served byte for byte from the copy built into the library, with its content type,
 * the security headers and an ETag that turns a repeat request into a 304; unknown names and
 * path tricks are refused; the page needs no API key while the API routes still do. The page
 * itself is tested in Chromium by tests/scripts/browser.sh.
 */
/* rein-test-timeout: 60 */
#include "http_client.h"
#include "test.h"

#include <curl/curl.h>
#include <dirent.h>
#include <strings.h>

/* One request through the support client; header may be NULL. */
static void http(const char *method, const char *url, const char *header, struct th_resp *out)
{
    const char *const headers[] = {header, NULL};

    th_http(method, url, NULL, header ? headers : NULL, out);
    assert_int_equal(out->curl_rc, CURLE_OK);
}

static void assert_header(const struct th_resp *r, const char *name, const char *want)
{
    const char *got = th_header(r, name);

    if (!got)
        fail_msg("no %s header in:\n%s", name, r->headers);
    if (strstr(got, want) == NULL)
        fail_msg("%s is \"%s\", expected it to contain \"%s\"", name, got, want);
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
        struct th_resp r;
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
        th_resp_free(&r);
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
    struct th_resp r, again, other;

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
    assert_non_null(th_header(&r, "ETag"));
    snprintf(etag, sizeof(etag), "%s", th_header(&r, "ETag"));
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
    th_resp_free(&r);
    th_resp_free(&again);
    th_resp_free(&other);
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
        struct th_resp r;
        snprintf(url, sizeof(url), "%s%s", f->base, cases[i].path);
        http(cases[i].method, url, NULL, &r);
        if (r.status != cases[i].status)
            fail_msg("%s %s: %ld %s", cases[i].method, cases[i].path, r.status, r.body);
        th_assert_error(&r, cases[i].status, cases[i].code);
        th_resp_free(&r);
    }
    stop(f);
}

/* With API keys set the page still loads (it holds no data) but the API wants the key. */
static void test_page_is_public_api_is_not(void **state)
{
    struct fixture *f = start("k1");
    char url[128];
    struct th_resp page, js, list, keyed;

    (void)state;
    snprintf(url, sizeof(url), "%s/", f->base);
    http("GET", url, NULL, &page);
    assert_int_equal(page.status, 200);
    snprintf(url, sizeof(url), "%s/web/app.js", f->base);
    http("GET", url, NULL, &js);
    assert_int_equal(js.status, 200);
    snprintf(url, sizeof(url), "%s/agent/conversations", f->base);
    http("GET", url, NULL, &list);
    th_assert_error(&list, 401, "unauthorized");
    http("GET", url, "Authorization: Bearer k1", &keyed);
    assert_int_equal(keyed.status, 200);
    th_resp_free(&page);
    th_resp_free(&js);
    th_resp_free(&list);
    th_resp_free(&keyed);
    stop(f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_serves_every_file),
    cmocka_unit_test(test_index_and_headers),
    cmocka_unit_test(test_bad_paths),
    cmocka_unit_test(test_page_is_public_api_is_not),
};

REIN_TEST_MAIN(tests)
