/*
 * Integration tests of the MCP client's token handling over real HTTP: a rein server whose /mcp
 * takes one bearer token (its API key) and which plays the authorization server's token
 * endpoint, and rein's MCP client with a token file in a state folder of the test's own. A
 * stored token the server refuses is refreshed (the refresh token, the resource), the new
 * tokens replace the old ones in the file (still 0600) and the request goes through, and the
 * next process uses them without asking again; an expired token is refreshed the same way; a
 * refresh the server refuses, with no person to log in, fails naming `rein mcp login`.
 * (The browser flow, discovery and registration run against the conformance suite's servers
 * in script.mcp_conformance.)
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include "mcp/oauth_int.h"

#include <sys/stat.h>

struct fx {
    rein_server *http;
    rein_registry *reg;
    rein_mcp_server *mcp;
    char url[128], token_url[128];
    char *dir;
    pthread_mutex_t mu;
    int refreshes;
    char form[2048];
    bool refuse;
};

/* The token endpoint: a refresh of r-1 gives tok-2 and r-2. */
static void token_route(rein_request *req, void *ud)
{
    struct fx *f = ud;
    size_t len;
    const char *body = rein_request_body(req, &len);
    char grant[64] = "", refresh[64] = "";
    bool refuse;

    pthread_mutex_lock(&f->mu);
    f->refreshes++;
    snprintf(f->form, sizeof(f->form), "%.*s", (int)len, body ? body : "");
    refuse = f->refuse;
    pthread_mutex_unlock(&f->mu);
    rein__oauth_query_get(f->form, "grant_type", grant, sizeof(grant));
    rein__oauth_query_get(f->form, "refresh_token", refresh, sizeof(refresh));
    if (refuse || strcmp(grant, "refresh_token") != 0 || strcmp(refresh, "r-1") != 0) {
        const char *e = "{\"error\":\"invalid_grant\"}";
        rein_request_reply(req, 400, "application/json", e, strlen(e));
        return;
    }
    rein_request_reply_json(req, 200,
                            json_pack("{s:s, s:s, s:i, s:s}", "access_token", "tok-2", "token_type",
                                      "Bearer", "expires_in", 3600, "refresh_token", "r-2"));
}

static void fx_start(struct fx *f)
{
    rein_error err;

    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    f->dir = test_tmpdir();
    setenv("REIN_STATE_DIR", f->dir, 1);
    f->http = rein_server_new(&err);
    assert_non_null(f->http);
    assert_rein_ok(rein_server_set_host(f->http, "127.0.0.1"), NULL);
    rein_server_set_port(f->http, 0);
    assert_rein_ok(rein_server_set_api_keys(f->http, "tok-2"), NULL);
    f->reg = rein_registry_new(&err);
    f->mcp = rein_mcp_server_new(f->reg, NULL, &err);
    assert_non_null(f->mcp);
    assert_rein_ok(rein_mcp_server_add_routes(f->mcp, f->http, &err), &err);
    assert_rein_ok(
        rein_server_route(f->http, "POST", "/token", REIN_ROUTE_PUBLIC, token_route, f, &err),
        &err);
    assert_rein_ok(rein_server_start(f->http, &err), &err);
    snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d/mcp", rein_server_port(f->http));
    snprintf(f->token_url, sizeof(f->token_url), "http://127.0.0.1:%d/token",
             rein_server_port(f->http));
}

static void fx_stop(struct fx *f)
{
    rein_server_stop(f->http, 1000);
    rein_server_free(f->http);
    rein_mcp_server_free(f->mcp);
    rein_registry_free(f->reg);
    unsetenv("REIN_STATE_DIR");
    test_rmtree(f->dir);
    free(f->dir);
    pthread_mutex_destroy(&f->mu);
}

/* Stores tok-1 / r-1 for the server, expiring expires_in seconds from now. */
static void store_tokens(struct fx *f, long expires_in)
{
    json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I}", "access_token", "tok-1",
                          "refresh_token", "r-1", "token_endpoint", f->token_url, "client_id",
                          "rein-test", "token_endpoint_auth_method", "none", "resource", f->url,
                          "expires_at", (json_int_t)(rein_wall_ms() / 1000 + expires_in));
    rein_error err;

    rein_error_clear(&err);
    assert_rein_ok(rein__oauth_store_save(f->url, e, &err), &err);
    json_decref(e);
}

/* Connects rein's client to the server; returns its status entry (a new reference). */
static json_t *connect_client(struct fx *f)
{
    rein_mcp_clients *set = rein_mcp_clients_new();
    json_t *entry = json_pack("{s:s}", "url", f->url), *status, *s;
    rein_error err;

    assert_rein_ok(rein_mcp_clients_add(set, "remote", entry, &err), &err);
    json_decref(entry);
    rein_mcp_clients_connect(set, 10000);
    status = rein_mcp_clients_status_json(set);
    s = json_incref(json_array_get(status, 0));
    json_decref(status);
    rein_mcp_clients_free(set);
    return s;
}

static void assert_refreshed(struct fx *f)
{
    char path[4096];
    struct stat st;
    json_t *e = NULL;
    rein_error err;
    char resource[256] = "";

    rein_error_clear(&err);
    assert_int_equal(f->refreshes, 1);
    assert_true(rein__oauth_query_get(f->form, "resource", resource, sizeof(resource)));
    assert_string_equal(resource, f->url);
    assert_rein_ok(rein__oauth_store_load(f->url, &e, &err), &err);
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "access_token")), "tok-2");
    assert_string_equal(json_string_value(json_object_get(e, "refresh_token")), "r-2");
    json_decref(e);
    assert_true(rein__oauth_store_path(path, sizeof(path)));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
}

/* A stored token the server refuses (401) is refreshed, and the request goes through. */
static void refused_token_refreshed(void **state)
{
    struct fx f;
    json_t *s;

    (void)state;
    fx_start(&f);
    store_tokens(&f, 3600);
    s = connect_client(&f);
    if (strcmp(json_string_value(json_object_get(s, "state")), "ready") != 0)
        fail_msg("not ready: %s", json_string_value(json_object_get(s, "error")));
    json_decref(s);
    assert_refreshed(&f);
    /* The next process uses the new token without asking again. */
    s = connect_client(&f);
    assert_string_equal(json_string_value(json_object_get(s, "state")), "ready");
    json_decref(s);
    assert_int_equal(f.refreshes, 1);
    fx_stop(&f);
}

/* An expired token is refreshed too. */
static void expired_token_refreshed(void **state)
{
    struct fx f;
    json_t *s;

    (void)state;
    fx_start(&f);
    store_tokens(&f, -60);
    s = connect_client(&f);
    assert_string_equal(json_string_value(json_object_get(s, "state")), "ready");
    json_decref(s);
    assert_refreshed(&f);
    fx_stop(&f);
}

/* A refresh the server refuses, with no person to log in: a clear failure. */
static void refused_refresh_names_login(void **state)
{
    struct fx f;
    const char *why;
    json_t *s;

    (void)state;
    fx_start(&f);
    f.refuse = true;
    store_tokens(&f, 3600);
    s = connect_client(&f);
    why = json_string_value(json_object_get(s, "error"));
    assert_string_equal(json_string_value(json_object_get(s, "state")), "failed");
    assert_non_null(why);
    assert_non_null(strstr(why, "rein mcp login remote"));
    assert_null(strstr(why, "tok-1"));
    json_decref(s);
    fx_stop(&f);
}

/* A stored token endpoint that is plain http to another machine, or that reaches one through
 * userinfo ("http://127.0.0.1:1@192.0.2.1/"), is refused before anything is sent: the refresh
 * token never travels in clear text. 192.0.2.1 (TEST-NET-1) answers nothing, so a request
 * would hang until curl's connect timeout instead of failing at once. */
static void plain_http_token_endpoint_refused(void **state)
{
    static const char *const endpoints[] = {"http://192.0.2.1/token",
                                            "http://127.0.0.1:1@192.0.2.1/token"};
    struct fx f;

    (void)state;
    for (size_t i = 0; i < 2; i++) {
        fx_start(&f);
        snprintf(f.token_url, sizeof(f.token_url), "%s", endpoints[i]);
        store_tokens(&f, -60);
        int64_t t0 = rein_now_ms();
        json_t *s = connect_client(&f);
        const char *why = json_string_value(json_object_get(s, "error"));
        assert_string_equal(json_string_value(json_object_get(s, "state")), "failed");
        if (!why || !strstr(why, "must use https"))
            fail_msg("%s: %s", endpoints[i], why ? why : "(no error)");
        assert_true(rein_now_ms() - t0 < 5000);
        assert_int_equal(f.refreshes, 0);
        json_decref(s);
        fx_stop(&f);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(refused_token_refreshed),
    cmocka_unit_test(expired_token_refreshed),
    cmocka_unit_test(refused_refresh_names_login),
    cmocka_unit_test(plain_http_token_endpoint_refused),
};

REIN_TEST_MAIN(tests)
