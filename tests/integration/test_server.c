/*
 * The HTTP server core (include/rein/server.h) over real sockets: libcurl against a server
 * started in the test on an ephemeral port, with the store routes on a SQLite file. Covers
 * every guard, the conversation routes, the metrics text, SSE with a short heartbeat and
 * disconnect detection, many parallel clients, and the `rein serve` binary stopping cleanly
 * on SIGTERM.
 */
/* rein-test-timeout: 120 */
#include "http_client.h"
#include "raw_http.h"
#include "test.h"

#include "server/server_int.h"

#include <curl/curl.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

struct fixture {
    char *dir;
    rein_store *store;
    rein_server *srv;
    rein_metrics *metrics;
    char base[64];
};

static struct fixture *fx;

static void echo_json(rein_request *req, void *ud)
{
    json_t *in = rein_request_json(req);

    (void)ud;
    rein_request_reply_json(
        req, 200, json_pack("{s:O, s:s}", "got", in, "trace", rein_request_trace_id(req)));
}

static void start(const char *keys, int64_t heartbeat_ms, void (*extra)(rein_server *))
{
    rein_error err;
    char url[600];

    fx = calloc(1, sizeof(*fx));
    fx->dir = test_tmpdir();
    snprintf(url, sizeof(url), "sqlite:%s/rein.db", fx->dir);
    assert_rein_ok(rein_store_open(url, NULL, &fx->store, &err), &err);
    fx->metrics = rein_metrics_new();
    fx->srv = rein_server_new(&err);
    assert_non_null(fx->srv);
    rein_server_set_port(fx->srv, 0);
    rein_server_set_threads(fx->srv, 4);
    rein_server_set_metrics(fx->srv, fx->metrics);
    if (keys)
        assert_rein_ok(rein_server_set_api_keys(fx->srv, keys), NULL);
    if (heartbeat_ms)
        rein_server_set_heartbeat_ms(fx->srv, heartbeat_ms);
    assert_rein_ok(rein_server_add_store_routes(fx->srv, fx->store, &err), &err);
    assert_rein_ok(
        rein_server_route(fx->srv, "POST", "/echo", REIN_ROUTE_JSON_BODY, echo_json, NULL, &err),
        &err);
    if (extra)
        extra(fx->srv);
    assert_rein_ok(rein_server_start(fx->srv, &err), &err);
    assert_true(rein_server_port(fx->srv) > 0);
    snprintf(fx->base, sizeof(fx->base), "http://127.0.0.1:%d", rein_server_port(fx->srv));
}

static int teardown(void **state)
{
    (void)state;
    if (!fx)
        return 0;
    rein_server_free(fx->srv);
    rein_store_free(fx->store);
    rein_metrics_free(fx->metrics);
    test_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    fx = NULL;
    return 0;
}

static const char *u(const char *path)
{
    static char url[1024];

    snprintf(url, sizeof(url), "%s%s", fx->base, path);
    return url;
}

/* Waits (up to 10 s) until the server has trimmed its heap at least n times. */
static void wait_trims(unsigned n)
{
    int64_t deadline = rein_now_ms() + 10000;

    while (rein__server_heap_trims(fx->srv) < n) {
        if (rein_now_ms() > deadline)
            fail_msg("the heap was trimmed %u times, not %u", rein__server_heap_trims(fx->srv), n);
        rein_sleep_ms(20);
    }
}

/* When requests stop, the heap they freed goes back to the system once per quiet spell:
 * not before any request came, once after a burst, again after the next one. */
static void heap_trimmed_when_requests_stop(void **state)
{
    struct th_resp r;

    (void)state;
    start(NULL, 0, NULL);
    assert_int_equal(rein__server_heap_trims(fx->srv), 0);
    for (int i = 0; i < 20; i++) {
        th_post(u("/echo"), "{\"n\": 1}", &r);
        assert_int_equal(r.status, 200);
        th_resp_free(&r);
    }
    wait_trims(1);
    th_get(u("/healthz"), &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    wait_trims(2);
}

static void answer_ok(rein_request *req, void *userdata)
{
    (void)userdata;
    (void)rein_request_reply(req, 200, "text/plain", "ok", 2);
}

/* A waiting route, whose threads stop 1.5 s into the quiet: after the first trim. */
static void with_waiting_route(rein_server *srv)
{
    rein_error err;

    rein__server_set_wait_idle_ms(srv, 1500);
    assert_rein_ok(rein_server_route(srv, "GET", "/waits", REIN_ROUTE_WAITS, answer_ok, NULL, &err),
                   &err);
}

/* The waiting pool's threads stop after the quiet spell's trim and hand back their caches
 * then: the heap is trimmed once more, with no request in between. */
static void heap_trimmed_again_when_waiting_threads_stop(void **state)
{
    struct th_resp r;

    (void)state;
    start(NULL, 0, with_waiting_route);
    th_get(u("/waits"), &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "ok");
    th_resp_free(&r);
    wait_trims(2);
}

/* ---- guards ----------------------------------------------------------------------------- */

static void guards_routing(void **state)
{
    static const char *const bad_ids[] = {
        "/agent/conversations/..%2Fetc",
        "/agent/conversations/%2e%2e",
        "/agent/conversations/a%2Fb",
        "/agent/conversations/a%252Fb",
        "/agent/conversations/%00",
        "/agent/conversations/a%zz",
        "/agent/conversations/.hidden",
        "/agent/conversations/a..b",
        "/agent/conversations/%C3%A9t%C3%A9",
        "/agent/conversations/"
        "0123456789012345678901234567890123456789012345678901234567890123456789",
    };
    struct th_resp r;

    (void)state;
    start(NULL, 0, NULL);
    th_http_raw("GET", u("/nope"), NULL, 0, NULL, &r);
    th_assert_error(&r, 404, "not_found");
    assert_non_null(strstr(r.headers, "X-Request-Id: req_"));
    th_resp_free(&r);
    th_http_raw("GET", u("/agent/conversations/"), NULL, 0, NULL, &r);
    th_assert_error(&r, 404, "not_found");
    th_resp_free(&r);
    th_http_raw("PUT", u("/agent/conversations/abc"), "{}", 2, NULL, &r);
    th_assert_error(&r, 405, "method_not_allowed");
    assert_non_null(strstr(r.headers, "Allow: GET, PATCH, DELETE"));
    th_resp_free(&r);
    for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
        th_http_raw("GET", u(bad_ids[i]), NULL, 0, NULL, &r);
        if (r.status != 400)
            fail_msg("%s: expected 400, got %ld %s", bad_ids[i], r.status, r.body);
        th_assert_error(&r, 400, "invalid_id");
        th_resp_free(&r);
    }
    /* A plain unknown id is well-formed: 404 from the store. */
    th_http_raw("GET", u("/agent/conversations/conv_unknown"), NULL, 0, NULL, &r);
    th_assert_error(&r, 404, "not_found");
    assert_null(strstr(r.body, "no route"));
    th_resp_free(&r);
    /* Routes are told apart by their first segment as decoded: an encoded one still routes
     * (and builds the same Allow list), a different one does not. */
    th_http_raw("GET", u("/%61gent/conversations/conv_unknown"), NULL, 0, NULL, &r);
    th_assert_error(&r, 404, "not_found");
    assert_null(strstr(r.body, "no route"));
    th_resp_free(&r);
    th_http_raw("PUT", u("/%61gent/conversations/abc"), "{}", 2, NULL, &r);
    th_assert_error(&r, 405, "method_not_allowed");
    assert_non_null(strstr(r.headers, "Allow: GET, PATCH, DELETE, HEAD, OPTIONS\r\n"));
    th_resp_free(&r);
    th_http_raw("OPTIONS", u("/agent/conversations/abc"), NULL, 0, NULL, &r);
    assert_int_equal(r.status, 204);
    assert_non_null(strstr(r.headers, "Allow: GET, PATCH, DELETE, HEAD, OPTIONS\r\n"));
    th_resp_free(&r);
    th_http_raw("GET", u("/agents/conversations/abc"), NULL, 0, NULL, &r);
    th_assert_error(&r, 404, "not_found");
    assert_non_null(strstr(r.body, "no route"));
    th_resp_free(&r);
    /* As long as a route's first segment and different in its last byte only. */
    th_http_raw("GET", u("/agenx/conversations/abc"), NULL, 0, NULL, &r);
    th_assert_error(&r, 404, "not_found");
    assert_non_null(strstr(r.body, "no route"));
    th_resp_free(&r);
}

static void guards_bodies(void **state)
{
    static const char *const json_ct[] = {"Content-Type: application/json; charset=utf-8", NULL};
    static const char *const text_ct[] = {"Content-Type: text/plain", NULL};
    static const char *const tp[] = {
        "Content-Type: application/json",
        "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", NULL};
    struct th_resp r;
    json_t *o;

    (void)state;
    start(NULL, 0, NULL);
    th_http_raw("POST", u("/echo"), "{\"a\":1}", 7, text_ct, &r);
    th_assert_error(&r, 415, "unsupported_media_type");
    th_resp_free(&r);
    th_http_raw("POST", u("/echo"), "{\"a\":1}", 7, NULL, &r); /* curl sends form encoding */
    th_assert_error(&r, 415, "unsupported_media_type");
    th_resp_free(&r);
    th_http_raw("POST", u("/echo"), "{\"a\":\n  [1, 2,, 3]}", 19, json_ct, &r);
    th_assert_error(&r, 400, "invalid_json");
    assert_non_null(strstr(r.body, "line 2"));
    assert_non_null(strstr(r.body, "column"));
    th_resp_free(&r);
    th_http_raw("POST", u("/echo"), "", 0, json_ct, &r);
    th_assert_error(&r, 400, "invalid_json");
    th_resp_free(&r);

    /* 2 MiB against a 1 MiB limit: refused from Content-Length, before any of the body is
     * sent. (Sending it too would race the answer against the reset of the closed socket.) */
    {
        static const char head[] = "POST /echo HTTP/1.1\r\nHost: x\r\n"
                                   "Content-Type: application/json\r\n"
                                   "Content-Length: 2097152\r\n\r\n";
        struct rh_resp rr;
        rh_exchange(rein_server_port(fx->srv), head, sizeof(head) - 1, 10000, &rr);
        rh_assert_error(&rr, 413, "payload_too_large");
        rh_resp_free(&rr);
    }

    th_http_raw("POST", u("/echo"), "{\"k\":[1,2,3]}", 13, tp, &r);
    assert_int_equal(r.status, 200);
    o = json_loads(r.body, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(o, "trace")),
                        "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_int_equal(
        json_integer_value(json_array_get(json_object_get(json_object_get(o, "got"), "k"), 2)), 3);
    json_decref(o);
    assert_non_null(strstr(r.headers, "X-Trace-Id: 4bf92f3577b34da6a3ce929d0e0e4736"));
    th_resp_free(&r);
}

/* Chunked upload past the limit: nothing buffered past it, 413 at the end. */
struct reader {
    size_t left;
};

static size_t read_chunks(char *buf, size_t size, size_t n, void *ud)
{
    struct reader *rd = ud;
    size_t len = size * n < rd->left ? size * n : rd->left;

    memset(buf, ' ', len);
    rd->left -= len;
    return len;
}

static void guards_chunked(void **state)
{
    CURL *c = curl_easy_init();
    struct curl_slist *list = NULL;
    struct reader rd = {.left = (size_t)3 << 20 >> 1};
    struct th_resp r = {0};

    (void)state;
    start(NULL, 0, NULL);
    list = curl_slist_append(list, "Content-Type: application/json");
    list = curl_slist_append(list, "Transfer-Encoding: chunked");
    list = curl_slist_append(list, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, u("/echo"));
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_chunks);
    curl_easy_setopt(c, CURLOPT_READDATA, &rd);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, th_on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(list);
    curl_easy_cleanup(c);
    r.json = json_loads(r.body ? r.body : "", 0, NULL);
    th_assert_error(&r, 413, "payload_too_large");
    th_resp_free(&r);
}

static void guards_auth(void **state)
{
    static const char *const good[] = {"Authorization: Bearer k2", NULL};
    static const char *const wrong[] = {"Authorization: Bearer k3", NULL};
    static const char *const basic[] = {"Authorization: Basic azI=", NULL};
    static const char *const prefix[] = {"Authorization: Bearer k", NULL};
    struct th_resp r;

    (void)state;
    start(" k1 , k2,,", 0, NULL);
    th_http_raw("GET", u("/agent/conversations"), NULL, 0, NULL, &r);
    th_assert_error(&r, 401, "unauthorized");
    assert_non_null(strstr(r.headers, "WWW-Authenticate: Bearer"));
    th_resp_free(&r);
    th_http_raw("GET", u("/agent/conversations"), NULL, 0, wrong, &r);
    th_assert_error(&r, 401, "unauthorized");
    th_resp_free(&r);
    th_http_raw("GET", u("/agent/conversations"), NULL, 0, basic, &r);
    th_assert_error(&r, 401, "unauthorized");
    th_resp_free(&r);
    th_http_raw("GET", u("/agent/conversations"), NULL, 0, prefix, &r);
    th_assert_error(&r, 401, "unauthorized");
    th_resp_free(&r);
    /* Unknown paths do not reveal themselves to a client without a key. */
    th_http_raw("GET", u("/secret-route"), NULL, 0, NULL, &r);
    th_assert_error(&r, 401, "unauthorized");
    th_resp_free(&r);
    th_http_raw("GET", u("/metrics"), NULL, 0, NULL, &r);
    th_assert_error(&r, 401, "unauthorized");
    th_resp_free(&r);
    th_http_raw("GET", u("/agent/conversations"), NULL, 0, good, &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    th_http_raw("GET", u("/healthz"), NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"ok\""));
    th_resp_free(&r);
    teardown(NULL);

    /* Without keys, no route needs one. */
    start(NULL, 0, NULL);
    th_http_raw("GET", u("/agent/conversations"), NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
}

static void secret_compare(void **state)
{
    (void)state;
    assert_true(rein_secret_equal("abc", 3, "abc", 3));
    assert_false(rein_secret_equal("abc", 3, "abd", 3));
    assert_false(rein_secret_equal("abc", 3, "abcd", 4));
    assert_false(rein_secret_equal("", 0, "a", 1));
    assert_true(rein_secret_equal("", 0, "", 0));
    /* The same number of steps whatever the position of the first difference: a difference in
     * the first byte and in the last byte give the same answer through the same loop. */
    assert_false(rein_secret_equal("xbcdefgh", 8, "abcdefgh", 8));
    assert_false(rein_secret_equal("abcdefgx", 8, "abcdefgh", 8));
}

/* ---- conversations through the store ----------------------------------------------------- */

static void conversations_routes(void **state)
{
    struct rein_ledger_entry e = {
        .call_id = "call_1", .tool = "echo", .args = "{\"text\":\"hi\"}", .step = -1};
    char token[REIN_ID_MAX];
    struct th_resp r;
    json_t *o;
    rein_error err;

    (void)state;
    start(NULL, 0, NULL);
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof(id), "c%d", i);
        assert_rein_ok(rein_store_conv_create(fx->store, id, "t", NULL, NULL, &err), &err);
    }
    {
        /* Append on a later millisecond than the creations, so c2 is strictly the newest. */
        int64_t t0 = rein_wall_ms();
        while (rein_wall_ms() <= t0)
            ;
    }
    assert_rein_ok(rein_store_message_append(fx->store, "c2",
                                             "{\"role\":\"user\",\"content\":\"hi\"}", 30, NULL,
                                             NULL, &err),
                   &err);
    assert_rein_ok(rein_store_ledger_put(fx->store, "c2", &e, &err), &err);

    th_http_raw("GET", u("/agent/conversations?limit=2"), NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
    o = json_loads(r.body, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(o, "conversations")), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(o, "conversations"), 0), "id")),
                        "c2");
    {
        char path[256];
        char *cursor =
            curl_easy_escape(NULL, json_string_value(json_object_get(o, "next_cursor")), 0);
        snprintf(path, sizeof(path), "/agent/conversations?limit=10&cursor=%s", cursor);
        curl_free(cursor);
        json_decref(o);
        th_resp_free(&r);
        th_http_raw("GET", u(path), NULL, 0, NULL, &r);
        assert_int_equal(r.status, 200);
        o = json_loads(r.body, 0, NULL);
        assert_int_equal(json_array_size(json_object_get(o, "conversations")), 3);
        assert_true(json_is_null(json_object_get(o, "next_cursor")));
    }
    json_decref(o);
    th_resp_free(&r);
    th_http_raw("GET", u("/agent/conversations?limit=0"), NULL, 0, NULL, &r);
    th_assert_error(&r, 400, "bad_request");
    th_resp_free(&r);
    th_http_raw("GET", u("/agent/conversations?cursor=nonsense"), NULL, 0, NULL, &r);
    th_assert_error(&r, 400, "bad_request");
    th_resp_free(&r);

    th_http_raw("GET", u("/agent/conversations/c2"), NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
    o = json_loads(r.body, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(o, "messages")), 1);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(o, "messages"), 0), "message"),
            "content")),
        "hi");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(o, "ledger"), 0), "status")),
                        "pending");
    assert_true(json_is_null(json_object_get(o, "lock")));
    json_decref(o);
    th_resp_free(&r);

    /* While a turn holds the lock: the state is visible and deletion is refused with it. */
    assert_rein_ok(rein_store_lock_acquire(fx->store, "c2", 60000, "executing", token, NULL, &err),
                   &err);
    assert_rein_ok(rein_store_lock_set_state(fx->store, "c2", token, "executing", "echo", &err),
                   &err);
    th_http_raw("DELETE", u("/agent/conversations/c2"), NULL, 0, NULL, &r);
    th_assert_error(&r, 409, "conversation_busy");
    o = json_loads(r.body, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(o, "error"), "lock"), "tool")),
                        "echo");
    json_decref(o);
    th_resp_free(&r);
    assert_rein_ok(rein_store_lock_release(fx->store, "c2", token, &err), &err);

    th_http_raw("DELETE", u("/agent/conversations/c2"), NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    th_http_raw("GET", u("/agent/conversations/c2"), NULL, 0, NULL, &r);
    th_assert_error(&r, 404, "not_found");
    th_resp_free(&r);
    th_http_raw("DELETE", u("/agent/conversations/c2"), NULL, 0, NULL, &r);
    th_assert_error(&r, 404, "not_found");
    th_resp_free(&r);
}

/* ---- metrics ---------------------------------------------------------------------------- */

/* GET /metrics into r until its body contains needle (at most about two seconds). */
static void metrics_with(struct th_resp *r, const char *needle)
{
    for (int tries = 0;; tries++) {
        th_http_raw("GET", u("/metrics"), NULL, 0, NULL, r);
        assert_int_equal(r->status, 200);
        if (strstr(r->body, needle) || tries == 400)
            return;
        th_resp_free(r);
        nanosleep(&(struct timespec){.tv_nsec = 5 * 1000 * 1000}, NULL);
    }
}

static void metrics_text(void **state)
{
    regex_t help, type, sample;
    struct th_resp r;
    char *line, *save = NULL;
    int samples = 0, bucket_lines = 0;
    rein_error err;
    static const char *const labels[] = {"tool", NULL};
    static const char *const values[] = {"we\"ird\\tool\n"};
    rein_metric *f;

    (void)state;
    start(NULL, 0, NULL);
    rein_metrics_tool_call(fx->metrics, "echo", "success");
    rein_metrics_turns_running(fx->metrics, 1);
    rein_metrics_provider_error(fx->metrics, "openai", "http_429");
    rein_metrics_provider_retry(fx->metrics, "openai");
    f = rein_metrics_family(fx->metrics, REIN_METRIC_COUNTER, "rein_test_total", "odd labels",
                            labels, NULL, 0, &err);
    assert_non_null(f);
    rein_metric_add(f, values, 2);
    assert_null(rein_metrics_family(fx->metrics, REIN_METRIC_GAUGE, "rein_test_total", "x", labels,
                                    NULL, 0, &err));
    th_http_raw("GET", u("/healthz"), NULL, 0, NULL, &r);
    th_resp_free(&r);
    th_http_raw("GET", u("/nope"), NULL, 0, NULL, &r);
    th_resp_free(&r);
    /* The server counts a request when MHD reports it complete, which can be just after the
     * client has read the answer: wait until both requests above show (the duration is the
     * last thing counted). */
    metrics_with(&r, "rein_http_request_duration_seconds_count{route=\"/healthz\"} 1\n");
    th_resp_free(&r);
    metrics_with(&r, "rein_http_request_duration_seconds_count{route=\"unmatched\"} 1\n");
    assert_non_null(strstr(r.headers, "text/plain; version=0.0.4"));
    assert_int_equal(regcomp(&help, "^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*$", REG_NOSUB), 0);
    assert_int_equal(regcomp(&type, "^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram)$",
                             REG_NOSUB | REG_EXTENDED),
                     0);
    assert_int_equal(regcomp(&sample,
                             "^[a-zA-Z_:][a-zA-Z0-9_:]*(\\{([a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\]|"
                             "\\\\.)*\",?)*\\})? (-?[0-9.e+-]+|\\+Inf|NaN)$",
                             REG_NOSUB | REG_EXTENDED),
                     0);
    for (line = strtok_r(r.body, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "# HELP", 6) == 0)
            assert_int_equal(regexec(&help, line, 0, NULL, 0), 0);
        else if (strncmp(line, "# TYPE", 6) == 0)
            assert_int_equal(regexec(&type, line, 0, NULL, 0), 0);
        else {
            if (regexec(&sample, line, 0, NULL, 0) != 0)
                fail_msg("not a sample line: %s", line);
            samples++;
            if (strstr(line, "_bucket{"))
                bucket_lines++;
        }
    }
    regfree(&help);
    regfree(&type);
    regfree(&sample);
    assert_true(samples > 10);
    assert_true(bucket_lines > 10);
    th_resp_free(&r);
    th_http_raw("GET", u("/metrics"), NULL, 0, NULL, &r);
    assert_non_null(strstr(r.body, "rein_http_requests_total{method=\"GET\",route=\"/healthz\","
                                   "status=\"200\"} 1\n"));
    assert_non_null(strstr(r.body, "route=\"unmatched\",status=\"404\"} 1\n"));
    assert_non_null(strstr(r.body, "rein_tool_calls_total{tool=\"echo\",status=\"success\"} 1\n"));
    assert_non_null(strstr(r.body, "rein_turns_running 1\n"));
    assert_non_null(
        strstr(r.body, "rein_provider_errors_total{provider=\"openai\",kind=\"http_429\"}"));
    assert_non_null(strstr(r.body, "rein_test_total{tool=\"we\\\"ird\\\\tool\\n\"} 2\n"));
    assert_non_null(strstr(
        r.body, "rein_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"+Inf\"} 1\n"));
    assert_non_null(
        strstr(r.body, "rein_http_request_duration_seconds_count{route=\"/healthz\"} 1\n"));
    assert_non_null(strstr(r.body, "# TYPE rein_http_request_duration_seconds histogram\n"));
    th_resp_free(&r);
}

/* ---- SSE -------------------------------------------------------------------------------- */

static atomic_int sse_saw_cancel;
static atomic_int sse_started;
static atomic_int sse_late_send;

/* Sends an event, waits long enough for heartbeats, sends a second one, then returns. */
static void sse_route(rein_request *req, void *ud)
{
    rein_error err;
    rein_sse *sse = rein_request_sse_start(req, &err);
    json_t *one = json_pack("{s:i}", "n", 1);

    (void)ud;
    assert_non_null(sse);
    assert_int_equal(rein_sse_send_json(sse, "status", one), REIN_OK);
    json_decref(one);
    rein_cancel_wait(rein_request_cancel(req), 1000);
    assert_int_equal(rein_sse_send(sse, "final", "{\"text\":\"done\"}", 15), REIN_OK);
    assert_int_equal(rein_sse_send(sse, "bad", "two\nlines", 9), REIN_EINVAL);
}

/* Streams until the client goes away, which it learns through its cancellation handle; with
 * ud set the stream is held and never flushed (the server sends it on its own). */
static void sse_forever(rein_request *req, void *ud)
{
    rein_error err;
    rein_sse *sse = ud ? rein_request_sse_start_held(req, &err) : rein_request_sse_start(req, &err);

    if (!sse)
        return;
    if (rein_sse_send(sse, "status", "{\"state\":\"thinking\"}", 20) != REIN_OK)
        return;
    atomic_store(&sse_started, 1);
    if (rein_cancel_wait(rein_request_cancel(req), 20000)) {
        /* Only a client that went away makes later writes fail; a stopping server does not. */
        atomic_store(&sse_late_send, rein_sse_send(sse, "late", "{}", 2));
        atomic_store(&sse_saw_cancel, 1);
    }
}

static void add_sse_routes(rein_server *srv)
{
    rein_error err;

    assert_rein_ok(rein_server_route(srv, "GET", "/sse", 0, sse_route, NULL, &err), &err);
    assert_rein_ok(rein_server_route(srv, "GET", "/sse-forever", 0, sse_forever, NULL, &err), &err);
}

static void sse_stream(void **state)
{
    struct th_resp r;
    const char *first, *ping, *last;

    (void)state;
    start(NULL, 50, add_sse_routes);
    th_http_raw("GET", u("/sse"), NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.headers, "Content-Type: text/event-stream"));
    first = strstr(r.body, "event: status\ndata: {\"n\":1}\n\n");
    ping = strstr(r.body, ": ping\n\n");
    last = strstr(r.body, "event: final\ndata: {\"text\":\"done\"}\n\n");
    assert_non_null(first);
    assert_non_null(ping);
    assert_non_null(last);
    assert_true(first < ping && ping < last);
    assert_null(strstr(r.body, "event: bad"));
    th_resp_free(&r);
}

static size_t stop_after_first(char *data, size_t size, size_t n, void *ud)
{
    (void)data;
    (void)ud;
    (void)size;
    (void)n;
    return 0; /* abort the transfer: the client goes away */
}

static void sse_disconnect(void **state)
{
    CURL *c = curl_easy_init();
    int64_t deadline;

    (void)state;
    atomic_store(&sse_saw_cancel, 0);
    start(NULL, 50, add_sse_routes);
    curl_easy_setopt(c, CURLOPT_URL, u("/sse-forever"));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, stop_after_first);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_perform(c);
    curl_easy_cleanup(c);
    deadline = rein_now_ms() + 15000;
    while (!atomic_load(&sse_saw_cancel) && rein_now_ms() < deadline)
        rein_sleep_ms(10);
    assert_int_equal(atomic_load(&sse_saw_cancel), 1);
    assert_int_equal(atomic_load(&sse_late_send), REIN_ECANCELED);
}

/* Answers with a stream only after its client has had time to go away. */
static atomic_int late_answered;

static void sse_late(rein_request *req, void *ud)
{
    rein_error err;
    rein_sse *sse;

    rein_sleep_ms(300);
    sse = ud ? rein_request_sse_start_held(req, &err) : rein_request_sse_start(req, &err);
    if (sse && rein_sse_send(sse, "status", "{}", 2) != REIN_OK)
        rein_log(REIN_LOG_DEBUG, "test", "the late stream found its client gone");
    atomic_fetch_add(&late_answered, 1);
}

static void add_late_route(rein_server *srv)
{
    rein_error err;

    assert_rein_ok(rein_server_route(srv, "GET", "/sse-late", 0, sse_late, NULL, &err), &err);
    assert_rein_ok(rein_server_route(srv, "GET", "/sse-late-held", 0, sse_late, srv, &err), &err);
}

/*
 * A client that leaves before its stream was handed to the network thread: the stream's
 * answer held the request and the request held the answer, so both were kept for good (a
 * leak under the sanitizer; seen with MCP clients that close at once).
 */
static void sse_answer_after_client_left(void **state)
{
    const char *base;
    char req[200];
    int port, fd;

    (void)state;
    atomic_store(&late_answered, 0);
    start(NULL, 50, add_late_route);
    base = strrchr(fx->base, ':');
    port = (int)strtol(base + 1, NULL, 10);
    for (int i = 0; i < 4; i++) {
        fd = rh_connect(port);
        /* A held stream (never handed over: its client is gone first) is kept no longer. */
        snprintf(req, sizeof(req), "GET /sse-late%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
                 i % 2 ? "-held" : "", port);
        assert_true(rh_send(fd, req, strlen(req)));
        close(fd);
    }
    for (int i = 0; i < 1000 && atomic_load(&late_answered) < 4; i++)
        rein_sleep_ms(10);
    assert_int_equal(atomic_load(&late_answered), 4);
    /* The teardown stops and frees the server; the sanitizer finds what was kept. */
}

/* ---- held streams ------------------------------------------------------------------------ */

/* Two events into a held stream, flushed between them when ud is set. */
static void sse_held(rein_request *req, void *ud)
{
    rein_error err;
    rein_sse *sse = rein_request_sse_start_held(req, &err);

    assert_non_null(sse);
    /* The stream is the answer: a second start or another answer is refused. */
    assert_null(rein_request_sse_start_held(req, &err));
    assert_int_equal(err.code, REIN_ESTATE);
    assert_int_equal(rein_request_reply(req, 200, "text/plain", "x", 1), REIN_ESTATE);
    assert_int_equal(rein_sse_flush(sse), REIN_OK); /* nothing held yet: nothing sent */
    assert_int_equal(rein_sse_send(sse, "one", "{\"n\":1}", 7), REIN_OK);
    if (ud)
        assert_int_equal(rein_sse_flush(sse), REIN_OK);
    assert_int_equal(rein_sse_send(sse, "two", "{\"n\":2}", 7), REIN_OK);
}

/* The events of sse_held, framed into a buffer by the handler and queued in batches: the first
 * while the stream holds nothing (its memory is traded), the second behind it (copied), and
 * with ud set, a flush between them. */
static void sse_framed(rein_request *req, void *ud)
{
    rein_error err;
    rein_sse *sse = rein_request_sse_start_held(req, &err);
    struct rein_buf b;

    assert_non_null(sse);
    rein_buf_init(&b, 0);
    assert_int_equal(rein_sse_frame(&b, "one", "{\"n\":1}", 7), REIN_OK);
    assert_string_equal(b.ptr, "event: one\ndata: {\"n\":1}\n\n");
    /* line breaks are refused as rein_sse_send_event() refuses them; b is left as it was */
    assert_int_equal(rein_sse_frame(&b, "t\nwo", "{}", 2), REIN_EINVAL);
    assert_int_equal(rein_sse_frame(&b, NULL, "{\n}", 3), REIN_EINVAL);
    assert_int_equal(rein_sse_frame(&b, NULL, "{\r}", 3), REIN_EINVAL);
    assert_int_equal(b.len, strlen("event: one\ndata: {\"n\":1}\n\n"));
    assert_int_equal(rein_sse_send_framed(sse, &b), REIN_OK);
    assert_int_equal(b.len, 0);
    if (ud)
        assert_int_equal(rein_sse_flush(sse), REIN_OK);
    assert_int_equal(rein_sse_frame(&b, "two", "{\"n\":2}", 7), REIN_OK);
    /* the unchecked framing for data that is one line: the same bytes */
    assert_int_equal(rein_sse_frame_line(&b, NULL, "[DONE]", 6), REIN_OK);
    assert_int_equal(rein_sse_frame_line(&b, NULL, "", 0), REIN_OK);
    assert_int_equal(rein_sse_send_framed(sse, &b), REIN_OK);
    assert_int_equal(rein_sse_send_framed(sse, &b), REIN_OK); /* nothing: a no-op */
    rein_buf_release(&b);
}

/* rein_sse_frame_line() writes what rein_sse_frame() writes, event or not, and refuses an
 * event name as long as rein_sse_frame() does. */
static void test_sse_frame_line_bytes(void **state)
{
    static const char *const events[] = {NULL, "message_start", "e"};
    static const char *const data[] = {"", "{\"n\":1}", "[DONE]", "{\"text\":\"\\n\"}"};
    char name[600];
    struct rein_buf x, y;

    (void)state;
    rein_buf_init(&x, 0);
    rein_buf_init(&y, 0);
    for (size_t e = 0; e < 3; e++) {
        for (size_t d = 0; d < 4; d++) {
            assert_int_equal(rein_sse_frame(&x, events[e], data[d], strlen(data[d])), REIN_OK);
            assert_int_equal(rein_sse_frame_line(&y, events[e], data[d], strlen(data[d])), REIN_OK);
            assert_string_equal(x.ptr, y.ptr);
        }
    }
    assert_string_equal(y.ptr + y.len - 21, "data: {\"text\":\"\\n\"}\n\n");
    memset(name, 'a', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    assert_int_equal(rein_sse_frame(&x, name, "{}", 2), REIN_EINVAL);
    assert_int_equal(rein_sse_frame_line(&y, name, "{}", 2), REIN_EINVAL);
    assert_string_equal(x.ptr, y.ptr);
    rein_buf_release(&x);
    rein_buf_release(&y);
}

static void add_held_routes(rein_server *srv)
{
    rein_error err;

    assert_rein_ok(rein_server_route(srv, "GET", "/framed", 0, sse_framed, NULL, &err), &err);
    assert_rein_ok(rein_server_route(srv, "GET", "/framed-flushed", 0, sse_framed, srv, &err),
                   &err);

    assert_rein_ok(rein_server_route(srv, "GET", "/held", 0, sse_held, NULL, &err), &err);
    assert_rein_ok(rein_server_route(srv, "GET", "/held-flushed", 0, sse_held, srv, &err), &err);
    assert_rein_ok(rein_server_route(srv, "GET", "/held-waits", 0, sse_forever, srv, &err), &err);
}

/*
 * A held stream that ends before its first flush is one body with its length (the head and
 * the events in one write); one flushed before its end streams in chunks. The events are the
 * same bytes either way.
 */
static void sse_held_stream(void **state)
{
    const char *want = "event: one\ndata: {\"n\":1}\n\nevent: two\ndata: {\"n\":2}\n\n";
    struct th_resp r;
    char length[64];

    (void)state;
    snprintf(length, sizeof(length), "Content-Length: %zu\r\n", strlen(want));
    start(NULL, 0, add_held_routes);
    th_http_raw("GET", u("/held"), NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.headers, "Content-Type: text/event-stream"));
    assert_non_null(strstr(r.headers, length));
    assert_null(strstr(r.headers, "chunked"));
    assert_non_null(strstr(r.headers, "X-Trace-Id: "));
    assert_string_equal(r.body, want);
    th_resp_free(&r);
    th_http_raw("GET", u("/held-flushed"), NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.headers, "Content-Type: text/event-stream"));
    assert_non_null(strstr(r.headers, "Transfer-Encoding: chunked"));
    assert_string_equal(r.body, want);
    th_resp_free(&r);
}

/* Events framed by the handler and queued in batches arrive as the same bytes as events sent
 * one by one, whole before the first flush or streamed after it. */
static void sse_framed_events(void **state)
{
    const char *want = "event: one\ndata: {\"n\":1}\n\nevent: two\ndata: {\"n\":2}\n\n"
                       "data: [DONE]\n\ndata: \n\n";
    const char *paths[] = {"/framed", "/framed-flushed"};
    struct th_resp r;

    (void)state;
    start(NULL, 0, add_held_routes);
    for (int i = 0; i < 2; i++) {
        th_http_raw("GET", u(paths[i]), NULL, 0, NULL, &r);
        assert_int_equal(r.status, 200);
        /* whole before the first flush: one body; flushed: chunks */
        assert_int_equal(strstr(r.headers, "Transfer-Encoding: chunked") != NULL, i == 1);
        assert_string_equal(r.body, want);
        th_resp_free(&r);
    }
}

/*
 * A handler that holds an event and then waits without flushing: the server sends it anyway
 * (the client has it while the handler still waits), and the client leaving cancels the
 * handler, whose later writes fail.
 */
static void sse_held_without_a_flush(void **state)
{
    CURL *c = curl_easy_init();
    CURLcode rc;
    int64_t deadline;

    (void)state;
    atomic_store(&sse_saw_cancel, 0);
    start(NULL, 0, add_held_routes);
    curl_easy_setopt(c, CURLOPT_URL, u("/held-waits"));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, stop_after_first);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 15L);
    rc = curl_easy_perform(c);
    curl_easy_cleanup(c);
    /* The write callback stopped the transfer: the event arrived (not a timeout). */
    assert_int_equal(rc, CURLE_WRITE_ERROR);
    deadline = rein_now_ms() + 15000;
    while (!atomic_load(&sse_saw_cancel) && rein_now_ms() < deadline)
        rein_sleep_ms(10);
    assert_int_equal(atomic_load(&sse_saw_cancel), 1);
    assert_int_equal(atomic_load(&sse_late_send), REIN_ECANCELED);
}

/* ---- concurrency and shutdown ----------------------------------------------------------- */

static void slow_route(rein_request *req, void *ud)
{
    (void)ud;
    rein_cancel_wait(rein_request_cancel(req), 20);
    rein_request_reply_json(req, 200, json_pack("{s:s}", "id", rein_request_id(req)));
}

static void add_slow_route(rein_server *srv)
{
    rein_error err;

    assert_rein_ok(rein_server_route(srv, "GET", "/slow", 0, slow_route, NULL, &err), &err);
}

static void silent_route(rein_request *req, void *ud)
{
    (void)req;
    (void)ud;
}

static void add_silent_route(rein_server *srv)
{
    rein_error err;

    assert_rein_ok(rein_server_route(srv, "GET", "/silent", 0, silent_route, NULL, &err), &err);
}

/* A handler that returns without answering gets the client a 500 saying so; one that
 * answered gets its own answer (the 500 is written only when there is none). */
static void handler_without_answer(void **state)
{
    struct th_resp r;
    const json_t *e;

    (void)state;
    start(NULL, 0, add_silent_route);
    th_http_raw("GET", u("/silent"), NULL, 0, NULL, &r);
    assert_int_equal(r.status, 500);
    assert_non_null(r.json);
    e = json_object_get(r.json, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "internal");
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "the handler gave no answer");
    th_resp_free(&r);
    th_http_raw("POST", u("/echo"), "{\"a\":1}", 7,
                (const char *[]){"Content-Type: application/json", NULL}, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r.json, "got"), "a")), 1);
    th_resp_free(&r);
}

static atomic_int ok_count;

static void *client_main(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        struct th_resp r;
        char url[128];
        snprintf(url, sizeof(url), "%s%s", fx->base, i % 2 ? "/slow" : "/agent/conversations");
        th_http_raw("GET", url, NULL, 0, NULL, &r);
        if (r.status == 200)
            atomic_fetch_add(&ok_count, 1);
        else
            print_message("request %d: status %ld, curl %d: %s\n", i, r.status, r.curl_rc, r.body);
        th_resp_free(&r);
    }
    return NULL;
}

static void concurrent_clients(void **state)
{
    enum { N = 12 };
    pthread_t th[N];

    (void)state;
    atomic_store(&ok_count, 0);
    start(NULL, 0, add_slow_route);
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_create(&th[i], NULL, client_main, NULL), 0);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&ok_count), N * 20);
}

static void *stream_client(void *arg)
{
    struct th_resp *r = arg;
    CURL *c = curl_easy_init();

    curl_easy_setopt(c, CURLOPT_URL, u("/sse-forever"));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, th_on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_perform(c);
    curl_easy_cleanup(c);
    return NULL;
}

static void stop_cancels_running(void **state)
{
    struct th_resp r = {0};
    pthread_t th;
    int64_t deadline = rein_now_ms() + 10000;

    (void)state;
    atomic_store(&sse_saw_cancel, 0);
    atomic_store(&sse_started, 0);
    start(NULL, 1000, add_sse_routes);
    assert_int_equal(pthread_create(&th, NULL, stream_client, &r), 0);
    while (!atomic_load(&sse_started) && rein_now_ms() < deadline)
        rein_sleep_ms(5);
    assert_int_equal(atomic_load(&sse_started), 1);
    /* A stream that never ends by itself: stop() cancels it after the grace period. */
    rein_server_stop(fx->srv, 100);
    assert_int_equal(atomic_load(&sse_saw_cancel), 1);
    pthread_join(th, NULL);
    assert_non_null(r.body);
    assert_non_null(strstr(r.body, "thinking"));
    th_resp_free(&r);
}

/* ---- the rein serve binary -------------------------------------------------------------- */

static void serve_binary_sigterm(void **state)
{
    char *dir = test_tmpdir();
    char store[600], line[512];
    const char *at;
    rein_proc *p = NULL;
    rein_error err;
    struct th_resp r;
    int code = -1;
    size_t len = 0;
    int64_t deadline = rein_now_ms() + 20000;
    char *nl = NULL;
    int port;

    (void)state;
    snprintf(store, sizeof(store), "sqlite:%s/rein.db", dir);
    {
        /* --port 0: rein serve binds a port of its own and names it. One found free here first
         * could be taken by another test before rein serve bound it. */
        const char *argv[] = {test_rein_bin(), "serve", "--port", "0", "--store", store, NULL};
        struct rein_proc_opts opts = {.argv = argv};
        assert_rein_ok(rein_proc_start(&opts, &p, &err), &err);
    }
    /* Wait for the line that says where it listens. */
    while (!nl && rein_now_ms() < deadline) {
        ssize_t n = read(rein_proc_stdout_fd(p), line + len, sizeof(line) - 1 - len);
        if (n > 0) {
            len += (size_t)n;
            line[len] = '\0';
            nl = strchr(line, '\n');
        } else {
            rein_sleep_ms(10);
        }
    }
    assert_non_null(nl);
    at = strstr(line, "listening on http://127.0.0.1:");
    if (!at)
        fail_msg("rein serve did not start: %s", line);
    port = (int)strtol(at + strlen("listening on http://127.0.0.1:"), NULL, 10);
    if (port <= 0)
        fail_msg("rein serve named no port: %s", line);
    {
        char url[128];
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/healthz", port);
        th_http_raw("GET", url, NULL, 0, NULL, &r);
        assert_int_equal(r.status, 200);
        th_resp_free(&r);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/agent/conversations", port);
        th_http_raw("GET", url, NULL, 0, NULL, &r);
        assert_int_equal(r.status, 200);
        th_resp_free(&r);
    }
    rein_proc_kill(p, SIGTERM);
    assert_rein_ok(rein_proc_wait(p, 20000, &code), NULL);
    assert_int_equal(code, 0);
    rein_proc_free(p);
    test_rmtree(dir);
    free(dir);
}

static void serve_binary_bad_store(void **state)
{
    const char *argv[] = {
        test_rein_bin(), "serve", "--port", "0", "--store", "sqlite:/no/such/dir/x.db", NULL};
    struct rein_proc_run_opts opts = {.proc = {.argv = argv, .merge_stderr = true},
                                      .timeout_ms = 20000};
    struct rein_proc_result res;
    rein_error err;

    (void)state;
    assert_rein_ok(rein_proc_run(&opts, &res, &err), &err);
    assert_int_not_equal(res.exit_code, 0);
    assert_non_null(strstr(res.out.ptr, "/no/such/dir/x.db"));
    rein_proc_result_release(&res);
}

/* A number flag out of its range is refused with the range, before anything starts. */
static void serve_binary_wait_threads_range(void **state)
{
    static const char *const bad[] = {"0", "65537", "many"};

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *argv[] = {test_rein_bin(),  "serve", "--port", "0",
                              "--wait-threads", bad[i],  NULL};
        struct rein_proc_run_opts opts = {.proc = {.argv = argv, .merge_stderr = true},
                                          .timeout_ms = 20000};
        struct rein_proc_result res;
        rein_error err;

        assert_rein_ok(rein_proc_run(&opts, &res, &err), &err);
        assert_int_not_equal(res.exit_code, 0);
        if (!strstr(res.out.ptr, "--wait-threads") || !strstr(res.out.ptr, "1-65536"))
            fail_msg("--wait-threads %s: %s", bad[i], res.out.ptr);
        rein_proc_result_release(&res);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(serve_binary_wait_threads_range),
    cmocka_unit_test_teardown(guards_routing, teardown),
    cmocka_unit_test_teardown(guards_bodies, teardown),
    cmocka_unit_test_teardown(guards_chunked, teardown),
    cmocka_unit_test_teardown(guards_auth, teardown),
    cmocka_unit_test(secret_compare),
    cmocka_unit_test_teardown(conversations_routes, teardown),
    cmocka_unit_test_teardown(metrics_text, teardown),
    cmocka_unit_test_teardown(sse_stream, teardown),
    cmocka_unit_test_teardown(sse_disconnect, teardown),
    cmocka_unit_test_teardown(sse_answer_after_client_left, teardown),
    cmocka_unit_test_teardown(sse_held_stream, teardown),
    cmocka_unit_test_teardown(sse_framed_events, teardown),
    cmocka_unit_test(test_sse_frame_line_bytes),
    cmocka_unit_test_teardown(sse_held_without_a_flush, teardown),
    cmocka_unit_test_teardown(handler_without_answer, teardown),
    cmocka_unit_test_teardown(concurrent_clients, teardown),
    cmocka_unit_test_teardown(heap_trimmed_when_requests_stop, teardown),
    cmocka_unit_test_teardown(heap_trimmed_again_when_waiting_threads_stop, teardown),
    cmocka_unit_test_teardown(stop_cancels_running, teardown),
    cmocka_unit_test(serve_binary_sigterm),
    cmocka_unit_test(serve_binary_bad_store),
};

REIN_TEST_MAIN(tests)
