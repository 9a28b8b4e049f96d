/*
 * Issue 19's hardening of `rein serve` and the skills, over real sockets (raw, so the test can
 * behave as no polite client does) against a server started in the test: deadlines for slow
 * clients (slowloris headers and bodies), the per-client connection cap, the global memory
 * bound on bodies being received, hang-ups seen at once on JSON and event-stream requests,
 * closed label sets and API keys on /metrics, duplicate Authorization, regex bombs in the
 * skills (a PCRE2 limit is an error, the deadline is checked per line), NUL in string
 * arguments, and hard links in the allowed roots.
 */
/* rein-test-timeout: 60 */
#include "raw_http.h"
#include "server/server_int.h"
#include "test.h"

#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

struct fixture {
    char *dir;
    rein_registry *reg;
    rein_server *srv;
    rein_metrics *metrics;
    int port;
};

static struct fixture *fx;

/* A JSON route whose handler waits for its request's cancellation (at most 10 s) and records
 * how long that took. */
static atomic_llong waited_ms;

static void wait_cancel(rein_request *req, void *ud)
{
    int64_t t0 = rein_now_ms();

    (void)ud;
    rein_cancel_wait(rein_request_cancel(req), 10000);
    atomic_store(&waited_ms, (long long)(rein_now_ms() - t0));
    rein_request_reply_json(req, 200, json_pack("{s:b}", "ok", 1));
}

/* A JSON route answered at once by a worker (the connection is suspended while it runs). */
static void answer_now(rein_request *req, void *ud)
{
    (void)ud;
    rein_request_reply_json(req, 200, json_pack("{s:b}", "ok", 1));
}

static void wait_cancel_sse(rein_request *req, void *ud)
{
    int64_t t0 = rein_now_ms();
    rein_sse *sse = rein_request_sse_start(req, NULL);

    (void)ud;
    if (sse && rein_sse_comment(sse, "hello") == REIN_OK)
        rein_cancel_wait(rein_request_cancel(req), 10000);
    atomic_store(&waited_ms, (long long)(rein_now_ms() - t0));
}

struct limits {
    const char *keys;
    bool metrics_public;
    int64_t header_ms, body_ms;
    unsigned client_conns;
    size_t body_memory;
};

static void start(const struct limits *l)
{
    const char *roots[2] = {NULL, NULL};
    struct rein_skills_config cfg = {.roots = roots};
    rein_error err;

    fx = calloc(1, sizeof(*fx));
    fx->dir = test_tmpdir();
    roots[0] = fx->dir;
    fx->reg = rein_registry_new(&err);
    assert_non_null(fx->reg);
    assert_rein_ok(rein_skills_register_builtins(fx->reg, &cfg, &err), &err);
    fx->metrics = rein_metrics_new();
    fx->srv = rein_server_new(&err);
    assert_non_null(fx->srv);
    rein_server_set_port(fx->srv, 0);
    rein_server_set_threads(fx->srv, 4);
    rein_server_set_metrics(fx->srv, fx->metrics);
    if (l && l->keys)
        assert_rein_ok(rein_server_set_api_keys(fx->srv, l->keys), NULL);
    if (l) {
        rein_server_set_metrics_public(fx->srv, l->metrics_public);
        rein_server_set_header_timeout_ms(fx->srv, l->header_ms);
        rein_server_set_body_timeout_ms(fx->srv, l->body_ms);
        rein_server_set_client_connections(fx->srv, l->client_conns);
        rein_server_set_body_memory(fx->srv, l->body_memory);
    }
    assert_rein_ok(rein_server_add_skill_routes(fx->srv, fx->reg, fx->metrics, &err), &err);
    assert_rein_ok(
        rein_server_route(fx->srv, "POST", "/wait", REIN_ROUTE_JSON_BODY, wait_cancel, NULL, &err),
        &err);
    assert_rein_ok(
        rein_server_route(fx->srv, "POST", "/answer", REIN_ROUTE_JSON_BODY, answer_now, NULL, &err),
        &err);
    assert_rein_ok(rein_server_route(fx->srv, "GET", "/wait-sse", 0, wait_cancel_sse, NULL, &err),
                   &err);
    assert_rein_ok(rein_server_start(fx->srv, &err), &err);
    fx->port = rein_server_port(fx->srv);
}

static int teardown(void **state)
{
    (void)state;
    if (!fx)
        return 0;
    rein_server_free(fx->srv);
    rein_registry_free(fx->reg);
    rein_metrics_free(fx->metrics);
    test_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    fx = NULL;
    return 0;
}

static void get(const char *path, const char *extra, struct rh_resp *r)
{
    char req[1024];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", path,
                     extra ? extra : "");

    rh_exchange(fx->port, req, (size_t)n, 10000, r);
}

/* POST /skills/<tool>/invoke with body; the answer in r. */
static void invoke(const char *tool, const char *body, struct rh_resp *r)
{
    char *req = NULL;
    int n = asprintf(&req,
                     "POST /skills/%s/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     tool, strlen(body), body);

    assert_true(n > 0);
    rh_exchange(fx->port, req, (size_t)n, 30000, r);
    free(req);
}

static const char *error_code(const struct rh_resp *r)
{
    return json_string_value(json_object_get(json_object_get(r->json, "error"), "code"));
}

/* ---- slow clients ---------------------------------------------------------------------- */

/* A client that sends one header line every 100 ms never goes idle, so MHD's idle timeout
 * (30 s) never fires; the header deadline closes it. */
static void slowloris_headers_are_cut(void **state)
{
    struct limits l = {.header_ms = 400};
    int fd;
    bool closed = false;
    int64_t t0;

    (void)state;
    start(&l);
    fd = rh_connect(fx->port);
    t0 = rein_now_ms();
    assert_true(rh_send(fd, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", 41));
    for (int i = 0; i < 100 && !closed; i++) {
        char line[64];
        int n = snprintf(line, sizeof(line), "X-Slow-%d: %d\r\n", i, i);
        closed = !rh_send(fd, line, (size_t)n) || rh_wait_closed(fd, 100);
    }
    assert_true(closed);
    assert_true(rein_now_ms() - t0 < 10000);
    close(fd);
    /* Everyone else is still served. */
    {
        struct rh_resp r;
        get("/healthz", NULL, &r);
        assert_int_equal(r.status, 200);
        rh_resp_free(&r);
    }
}

/* The same for a body sent a byte at a time. */
static void slow_body_is_cut(void **state)
{
    struct limits l = {.body_ms = 400};
    const char *head = "POST /wait HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                       "\r\nContent-Length: 1000\r\n\r\n";
    int fd;
    bool closed = false;

    (void)state;
    start(&l);
    fd = rh_connect(fx->port);
    assert_true(rh_send(fd, head, strlen(head)));
    for (int i = 0; i < 100 && !closed; i++)
        closed = !rh_send(fd, " ", 1) || rh_wait_closed(fd, 100);
    assert_true(closed);
    close(fd);
}

/* One client address holds at most client_conns connections; the next is closed at once. */
static void per_client_connection_cap(void **state)
{
    struct limits l = {.client_conns = 3};
    int fds[3], extra;
    struct rh_resp r;

    (void)state;
    start(&l);
    /* Three kept-alive connections, each answered once, so all three are surely held. */
    for (int i = 0; i < 3; i++) {
        fds[i] = rh_connect(fx->port);
        assert_true(rh_send(fds[i], "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 43));
        rh_read(fds[i], 5000, false, &r);
        assert_int_equal(r.status, 200);
        rh_resp_free(&r);
    }
    extra = rh_connect(fx->port);
    assert_true(rh_wait_closed(extra, 5000));
    close(extra);
    close(fds[0]);
    /* A slot is free again once one closes. */
    for (int i = 0; i < 500; i++) {
        get("/healthz", NULL, &r);
        if (r.status == 200)
            break;
        rh_resp_free(&r);
        rein_sleep_ms(20);
    }
    assert_int_equal(r.status, 200);
    rh_resp_free(&r);
    close(fds[1]);
    close(fds[2]);
}

/* Unfinished bodies share one memory budget: past it, requests get 503 and memory stays put. */
static void body_memory_is_bounded(void **state)
{
    struct limits l = {.body_memory = (size_t)1 << 20};
    char head[256];
    char *chunk = malloc(400 << 10);
    int fds[2];
    struct rh_resp r;

    (void)state;
    memset(chunk, ' ', 400 << 10);
    start(&l);
    snprintf(head, sizeof(head),
             "POST /wait HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             "Content-Length: %d\r\n\r\n",
             900 << 10);
    /* Two bodies of 900 KiB, each 400 KiB in and then stalled: 800 KiB held. */
    for (int i = 0; i < 2; i++) {
        fds[i] = rh_connect(fx->port);
        assert_true(rh_send(fds[i], head, strlen(head)));
        assert_true(rh_send(fds[i], chunk, 400 << 10));
    }
    /* A third that declares 900 KiB cannot fit: refused from its Content-Length (once the
     * server has taken in the two bodies' bytes, which a loaded machine may delay). */
    for (int i = 0; i < 50; i++) {
        int fd = rh_connect(fx->port);
        assert_true(rh_send(fd, head, strlen(head)));
        rh_read(fd, 200, false, &r);
        close(fd);
        if (r.status == 503)
            break;
        rh_resp_free(&r);
    }
    rh_assert_error(&r, 503, "overloaded");
    rh_resp_free(&r);
    close(fds[0]);
    close(fds[1]);
    free(chunk);
}

/* ---- hang-ups -------------------------------------------------------------------------- */

/* A server started with the default limits, nothing waited yet, and a connection to it. */
static int connect_fresh(void)
{
    start(NULL);
    atomic_store(&waited_ms, -1);
    return rh_connect(fx->port);
}

/* The client on fd hangs up while its request waits in wait_cancel(_sse): the handler's
 * cancellation fires at once, not at a timeout. */
static void hang_up_and_see_it(int fd)
{
    rein_sleep_ms(200);
    close(fd);
    for (int i = 0; i < 500 && atomic_load(&waited_ms) < 0; i++)
        rein_sleep_ms(10);
    assert_true(atomic_load(&waited_ms) >= 0);
    assert_true(atomic_load(&waited_ms) < 5000);
}

/* A JSON request's client that hangs up while its handler runs is seen at once: the request's
 * cancellation handle fires (the agent API turns that into a cancelled turn). */
static void json_hangup_is_seen_at_once(void **state)
{
    const char *req = "POST /wait HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                      "\r\nContent-Length: 2\r\n\r\n{}";
    int fd;

    (void)state;
    fd = connect_fresh();
    assert_true(rh_send(fd, req, strlen(req)));
    hang_up_and_see_it(fd);
}

/* An event stream's client that hangs up is seen at once, not at the next heartbeat (15 s). */
static void sse_hangup_is_seen_at_once(void **state)
{
    const char *req = "GET /wait-sse HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    struct rh_resp r;
    int fd;

    (void)state;
    fd = connect_fresh();
    assert_true(rh_send(fd, req, strlen(req)));
    rh_read(fd, 1000, true, &r);
    assert_int_equal(r.status, 200);
    rh_resp_free(&r);
    hang_up_and_see_it(fd);
}

/* A connection leaves the hang-up watch with its answer: the client closing once answered,
 * as most do, is MHD's to see, and wakes no other thread of the server. */
static void answered_connection_leaves_the_hangup_watch(void **state)
{
    const char *req = "POST /answer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                      "\r\nContent-Length: 2\r\n\r\n{}";
    struct rh_resp r;

    (void)state;
    start(NULL);
    for (int i = 0; i < 5; i++) {
        int fd = rh_connect(fx->port);
        assert_true(rh_send(fd, req, strlen(req)));
        rh_read(fd, 5000, false, &r);
        assert_int_equal(r.status, 200);
        rh_resp_free(&r);
        /* out of the set before the answer was written */
        assert_int_equal(rein__server_hangup_watched(fx->srv), 0);
        close(fd);
    }
    rein_sleep_ms(300);
    assert_int_equal(rein__server_hangup_events(fx->srv), 0);
}

/* A connection that comes back for more stays watched from its second request on, until it
 * closes (no system calls per request for a kept-alive client). */
static void kept_alive_connection_stays_watched(void **state)
{
    const char *req = "POST /answer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                      "\r\nContent-Length: 2\r\n\r\n{}";
    struct rh_resp r;
    int fd;

    (void)state;
    start(NULL);
    fd = rh_connect(fx->port);
    for (int i = 0; i < 3; i++) {
        assert_true(rh_send(fd, req, strlen(req)));
        rh_read(fd, 5000, false, &r);
        assert_int_equal(r.status, 200);
        rh_resp_free(&r);
        assert_int_equal(rein__server_hangup_watched(fx->srv), i == 0 ? 0 : 1);
    }
    close(fd);
    /* and leaves it when it closes */
    for (int i = 0; i < 500 && rein__server_hangup_watched(fx->srv) > 0; i++)
        rein_sleep_ms(10);
    assert_int_equal(rein__server_hangup_watched(fx->srv), 0);
}

/* Out of the watch between its requests, a kept-alive connection is watched again when a later
 * request goes to a worker: a hang-up then is still seen at once. */
static void kept_alive_hangup_is_seen_on_a_later_request(void **state)
{
    const char *answer = "POST /answer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                         "application/json\r\nContent-Length: 2\r\n\r\n{}";
    const char *wait = "POST /wait HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                       "\r\nContent-Length: 2\r\n\r\n{}";
    struct rh_resp r;
    int fd;

    (void)state;
    fd = connect_fresh();
    assert_true(rh_send(fd, answer, strlen(answer)));
    rh_read(fd, 5000, false, &r);
    assert_int_equal(r.status, 200);
    rh_resp_free(&r);
    assert_true(rh_send(fd, wait, strlen(wait)));
    hang_up_and_see_it(fd);
}

/* ---- metrics and auth ------------------------------------------------------------------ */

/* Invented methods all count as "other": the registry does not grow with what clients send. */
static void metrics_labels_are_closed(void **state)
{
    struct rh_resp r;

    (void)state;
    start(NULL);
    for (int i = 0; i < 40; i++) {
        char req[256];
        int n =
            snprintf(req, sizeof(req), "XMETHOD%d /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", i);
        rh_exchange(fx->port, req, (size_t)n, 5000, &r);
        rh_resp_free(&r);
    }
    get("/metrics", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_null(strstr(r.body, "XMETHOD"));
    assert_non_null(strstr(r.body, "method=\"other\""));
    rh_resp_free(&r);
}

/* With API keys set, /metrics needs one, unless the operator made it public. */
static void metrics_obey_api_keys(void **state)
{
    struct limits l = {.keys = "k1"};
    struct rh_resp r;

    (void)state;
    start(&l);
    get("/metrics", NULL, &r);
    rh_assert_error(&r, 401, "unauthorized");
    rh_resp_free(&r);
    get("/metrics", "Authorization: Bearer k1\r\n", &r);
    assert_int_equal(r.status, 200);
    rh_resp_free(&r);
    teardown(NULL);
    l.metrics_public = true;
    start(&l);
    get("/metrics", NULL, &r);
    assert_int_equal(r.status, 200);
    rh_resp_free(&r);
}

/* Two Authorization headers could be read differently by a proxy and by rein: 400. */
static void duplicate_authorization_is_refused(void **state)
{
    struct limits l = {.keys = "k1"};
    struct rh_resp r;

    (void)state;
    start(&l);
    get("/skills", "Authorization: Bearer wrong\r\nAuthorization: Bearer k1\r\n", &r);
    rh_assert_error(&r, 400, "bad_request");
    rh_resp_free(&r);
    get("/skills", "Authorization: Bearer k1\r\n", &r);
    assert_int_equal(r.status, 200);
    rh_resp_free(&r);
}

/* ---- skills ---------------------------------------------------------------------------- */

/*
 * Runs log_transform with match "(a+)+$" over n copies of line (text lines, plain format) and
 * the call's timeout_ms; the answer in r, the time it took returned.
 */
static int64_t log_bomb(const char *line, int n, int timeout_ms, struct rh_resp *r)
{
    size_t len = strlen(line);
    char *text = malloc(len * (size_t)n + 1), *req;
    json_t *body;
    int64_t t0;

    for (int i = 0; i < n; i++)
        memcpy(text + len * (size_t)i, line, len);
    text[len * (size_t)n] = '\0';
    body = json_pack("{s:{s:s, s:s, s:s}, s:i}", "arguments", "text", text, "format", "plain",
                     "match", "(a+)+$", "timeout_ms", timeout_ms);
    req = json_dumps(body, 0);
    t0 = rein_now_ms();
    invoke("log_transform", req, r);
    t0 = rein_now_ms() - t0;
    assert_int_equal(r->status, 200);
    assert_false(json_is_true(json_object_get(r->json, "ok")));
    free(req);
    json_decref(body);
    free(text);
    return t0;
}

/* 1,100 lines against (a+)+$: the first line hits PCRE2's match limit, which is an error
 * naming the line, not a silent "no match" after half a minute. */
static void regex_bomb_is_an_error(void **state)
{
    struct rh_resp r;
    int64_t took;

    (void)state;
    start(NULL);
    took = log_bomb("2024-05-01 12:00:00 INFO aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\n", 1100, 2000, &r);
    assert_string_equal(error_code(&r), "invalid_arguments");
    assert_non_null(strstr(
        json_string_value(json_object_get(json_object_get(r.json, "error"), "message")), "line 1"));
    assert_true(took < 10000);
    rh_resp_free(&r);
}

/* An expression under the limits but slow on every line: the call's deadline is checked per
 * line, so the call ends near its timeout instead of running 1,024 lines past it. 18 a's
 * before the end: (a+)+$ backtracks about 2^19 steps per line, a few ms, under the limit;
 * 3,000 lines take seconds. */
static void regex_deadline_is_checked_per_line(void **state)
{
    struct rh_resp r;
    int64_t took;

    (void)state;
    start(NULL);
    took = log_bomb("2024-05-01 12:00:00 INFO aaaaaaaaaaaaaaaaaa!\n", 3000, 300, &r);
    assert_string_equal(error_code(&r), "timeout");
    assert_true(took < 5000);
    rh_resp_free(&r);
}

/* file_search's regular expressions follow the same rules. */
static void file_search_regex_bomb_is_an_error(void **state)
{
    struct rh_resp r;
    char *path;

    (void)state;
    start(NULL);
    path = test_write_file(fx->dir, "bomb.txt", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\nfine\n");
    free(path);
    invoke("file_search", "{\"arguments\": {\"query\": \"(a+)+$\", \"regex\": true}}", &r);
    assert_int_equal(r.status, 200);
    assert_false(json_is_true(json_object_get(r.json, "ok")));
    assert_string_equal(error_code(&r), "invalid_arguments");
    rh_resp_free(&r);
}

/* "a.txt\u0000/../.." must not be searched as "a.txt" while the ledger records the whole
 * string: refused before the skill sees it, naming the field. */
static void nul_in_a_string_argument_is_refused(void **state)
{
    struct rh_resp r;
    const json_t *details;
    char *path;

    (void)state;
    start(NULL);
    path = test_write_file(fx->dir, "a.txt", "needle\n");
    free(path);
    invoke("file_search",
           "{\"arguments\": {\"query\": \"needle\", \"root_dir\": \"a.txt\\u0000/../..\"}}", &r);
    assert_int_equal(r.status, 200);
    /* The answer echoes the arguments, NUL included. */
    json_decref(r.json);
    r.json = json_loadb(r.body, r.len, JSON_ALLOW_NUL, NULL);
    assert_false(json_is_true(json_object_get(r.json, "ok")));
    assert_string_equal(error_code(&r), "invalid_arguments");
    details = json_object_get(json_object_get(r.json, "error"), "details");
    assert_string_equal(json_string_value(json_object_get(json_array_get(details, 0), "path")),
                        "/root_dir");
    rh_resp_free(&r);
}

/* A hard link inside the root to a file outside it is not read, as a symbolic link would not
 * be. */
static void hard_links_are_not_followed(void **state)
{
    struct rh_resp r;
    char *outside = test_tmpdir(), *secret, inside[600];

    (void)state;
    start(NULL);
    secret = test_write_file(outside, "secret.txt", "password=hunter2\n");
    snprintf(inside, sizeof(inside), "%s/linked.txt", fx->dir);
    if (link(secret, inside) != 0) {
        /* Another file system: a hard link cannot cross it, so nothing to test here. */
        free(secret);
        test_rmtree(outside);
        free(outside);
        skip();
    }
    invoke("file_search", "{\"arguments\": {\"query\": \"hunter2\"}}", &r);
    assert_true(json_is_true(json_object_get(r.json, "ok")));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r.json, "output"), "count")), 0);
    assert_int_equal(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(r.json, "output"), "skipped"), "hard_links")),
        1);
    rh_resp_free(&r);
    invoke("log_transform", "{\"arguments\": {\"path\": \"linked.txt\"}}", &r);
    assert_false(json_is_true(json_object_get(r.json, "ok")));
    assert_null(strstr(r.body, "hunter2"));
    rh_resp_free(&r);
    free(secret);
    test_rmtree(outside);
    free(outside);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_teardown(slowloris_headers_are_cut, teardown),
    cmocka_unit_test_teardown(slow_body_is_cut, teardown),
    cmocka_unit_test_teardown(per_client_connection_cap, teardown),
    cmocka_unit_test_teardown(body_memory_is_bounded, teardown),
    cmocka_unit_test_teardown(json_hangup_is_seen_at_once, teardown),
    cmocka_unit_test_teardown(sse_hangup_is_seen_at_once, teardown),
    cmocka_unit_test_teardown(answered_connection_leaves_the_hangup_watch, teardown),
    cmocka_unit_test_teardown(kept_alive_connection_stays_watched, teardown),
    cmocka_unit_test_teardown(kept_alive_hangup_is_seen_on_a_later_request, teardown),
    cmocka_unit_test_teardown(metrics_labels_are_closed, teardown),
    cmocka_unit_test_teardown(metrics_obey_api_keys, teardown),
    cmocka_unit_test_teardown(duplicate_authorization_is_refused, teardown),
    cmocka_unit_test_teardown(regex_bomb_is_an_error, teardown),
    cmocka_unit_test_teardown(regex_deadline_is_checked_per_line, teardown),
    cmocka_unit_test_teardown(file_search_regex_bomb_is_an_error, teardown),
    cmocka_unit_test_teardown(nul_in_a_string_argument_is_refused, teardown),
    cmocka_unit_test_teardown(hard_links_are_not_followed, teardown),
};

REIN_TEST_MAIN(tests)
