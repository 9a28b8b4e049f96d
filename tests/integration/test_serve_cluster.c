/*
 * `rein serve` as real processes: two instances sharing one Redis (started by the test) answer
 * for the same conversations, exactly one of two concurrent messages to a conversation runs,
 * and cancel and approval requests sent to one instance reach the turn running on the other,
 * whose events the other serves from the store while it runs.
 * Then the lifecycle: kill -9 during a slow tool (nothing accepted is lost, the pending call is
 * flagged once the lease runs out, the conversation continues with the call answered), and
 * SIGTERM (a turn that ends within the grace period finishes; one that does not is cancelled
 * and left "interrupted"; the process exits 0, which under ASan also means no leak), and
 * kill -9 right after answers (every answered turn is on disk). The
 * model is the scripted model server, whose log the tests read.
 */
/* rein-test-timeout: 120 */
#include "http_client.h"
#include "model_server.h"
#include "redis_server.h"
#include "tcp_relay.h"
#include "test.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

struct inst {
    rein_proc *proc;
    int port;
    char base[64];
};

struct cl {
    char *dir;
    ms_server *ms;
    struct test_redis *redis;
    struct tcp_relay *relay; /* between rein serve and Redis, when Redis restarts */
    char store[700];
    struct inst a, b;
};

static struct cl *C;

static void setup_cluster(bool redis)
{
    char manifest[1024];
    rein_error err;

    C = calloc(1, sizeof(*C));
    C->dir = test_tmpdir();
    /* The slow tool writes its pid, so the test can stop it after a kill -9 left it behind. */
    snprintf(manifest, sizeof(manifest),
             "{\"id\": \"slow\", \"description\": \"Takes its time\", \"timeout_ms\": 60000,"
             " \"parameters\": {\"type\": \"object\"},"
             " \"runner\": {\"kind\": \"process\", \"command\": [\"/bin/sh\", \"-c\","
             " \"cat >/dev/null; echo $$ > %s/slow.pid; exec sleep 30\"]}}",
             C->dir);
    free(test_write_file(C->dir, "skills/slow/manifest.json", manifest));
    /* The tool that kills the server the moment it starts (the test writes the server's pid
     * to rein.pid): whatever of the turn is not on disk when a call starts is lost. */
    snprintf(manifest, sizeof(manifest),
             "{\"id\": \"boom\", \"description\": \"Stops the server\", \"timeout_ms\": 60000,"
             " \"parameters\": {\"type\": \"object\"},"
             " \"runner\": {\"kind\": \"process\", \"command\": [\"/bin/sh\", \"-c\","
             " \"kill -9 $(cat %s/rein.pid); exec sleep 30\"]}}",
             C->dir);
    free(test_write_file(C->dir, "skills/boom/manifest.json", manifest));
    free(test_write_file(C->dir, "skills/wipe/manifest.json",
                         "{\"id\": \"wipe\", \"description\": \"Wipe a file\", "
                         "\"destructive\": true, \"parameters\": {\"type\": \"object\"},"
                         " \"runner\": {\"kind\": \"process\", \"command\": [\"cat\"]}}"));
    C->ms = ms_start(0, &err);
    if (!C->ms)
        fail_msg("model server: %s", err.msg);
    if (redis) {
        C->redis = test_redis_start();
        snprintf(C->store, sizeof(C->store), "%s", C->redis->url);
    } else {
        snprintf(C->store, sizeof(C->store), "sqlite:%s/rein.db", C->dir);
    }
}

/* Starts `rein serve` and waits for its "listening" line. */
static void inst_start(struct inst *in, const char *lease_ms, const char *grace_ms)
{
    char skills[600], line[1024];
    const char *argv[] = {test_rein_bin(),
                          "serve",
                          "--port",
                          "0", /* rein serve binds a port of its own and names it */
                          "--store",
                          C->store,
                          "--skills",
                          skills,
                          "--threads",
                          "4",
                          "--provider",
                          "openai-compatible",
                          "--base-url",
                          ms_openai_url(C->ms),
                          "--model",
                          "test-model",
                          "--lease-ms",
                          lease_ms,
                          "--grace-ms",
                          grace_ms,
                          NULL};
    struct rein_proc_opts opts = {.argv = argv};
    int64_t deadline = rein_now_ms() + 30000;
    size_t len = 0;
    const char *at;
    rein_error err;

    snprintf(skills, sizeof(skills), "%s/skills", C->dir);
    assert_rein_ok(rein_proc_start(&opts, &in->proc, &err), &err);
    line[0] = '\0';
    while (!strchr(line, '\n') && rein_now_ms() < deadline) {
        ssize_t n = read(rein_proc_stdout_fd(in->proc), line + len, sizeof(line) - 1 - len);
        if (n > 0) {
            len += (size_t)n;
            line[len] = '\0';
        } else {
            int code;
            if (rein_proc_wait(in->proc, 0, &code) == REIN_OK)
                fail_msg("rein serve exited with %d", code);
            rein_sleep_ms(10);
        }
    }
    if (!strstr(line, "listening on"))
        fail_msg("rein serve did not start: %s", line);
    assert_non_null(strstr(line, "provider openai-compatible"));
    /* the port it bound: one found free here first could be taken by another test's
     * connection before rein serve bound it */
    at = strstr(line, "http://127.0.0.1:");
    in->port = at ? (int)strtol(at + 17, NULL, 10) : 0;
    if (in->port <= 0)
        fail_msg("rein serve named no port: %s", line);
    snprintf(in->base, sizeof(in->base), "http://127.0.0.1:%d", in->port);
}

/* SIGTERM, and the exit status must be 0 (ASan makes a leak a failure). */
static void inst_stop(struct inst *in)
{
    int code = -1;

    if (!in->proc)
        return;
    rein_proc_kill(in->proc, SIGTERM);
    assert_rein_ok(rein_proc_wait(in->proc, 30000, &code), NULL);
    if (code != 0) {
        char buf[4096];
        ssize_t n = read(rein_proc_stderr_fd(in->proc), buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = '\0';
        fail_msg("rein serve exited with %d: %s", code, buf);
    }
    rein_proc_free(in->proc);
    in->proc = NULL;
}

static void kill_leftover_tool(void)
{
    char path[600];
    char *text;

    snprintf(path, sizeof(path), "%s/slow.pid", C->dir);
    text = test_read_file(path, NULL);
    if (text) {
        long pid = strtol(text, NULL, 10);
        if (pid > 1)
            kill((pid_t)pid, SIGKILL);
        free(text);
        unlink(path);
    }
}

/* The slow tool's pid once it has written it (waiting up to ms), else 0. */
static pid_t leftover_tool_pid(int ms)
{
    char path[600];
    char *text;
    pid_t pid = 0;

    snprintf(path, sizeof(path), "%s/slow.pid", C->dir);
    for (int i = 0; i < ms / 10 && !pid; i++) {
        text = test_read_file(path, NULL);
        pid = text && strchr(text, '\n') ? (pid_t)strtol(text, NULL, 10) : 0;
        free(text);
        if (!pid)
            rein_sleep_ms(10);
    }
    return pid;
}

/* True when the slow tool's process ends within ms. */
static bool leftover_tool_gone(int ms)
{
    pid_t pid = leftover_tool_pid(ms);

    if (pid <= 1)
        return false;
    for (int i = 0; i < ms / 10 && test_pid_alive(pid); i++)
        rein_sleep_ms(10);
    return !test_pid_alive(pid);
}

static int teardown(void **state)
{
    (void)state;
    if (!C)
        return 0;
    if (C->a.proc)
        rein_proc_free(C->a.proc);
    if (C->b.proc)
        rein_proc_free(C->b.proc);
    kill_leftover_tool();
    tcp_relay_stop(C->relay);
    test_redis_stop(C->redis);
    ms_stop(C->ms);
    test_rmtree(C->dir);
    free(C->dir);
    free(C);
    C = NULL;
    return 0;
}

static const char *at(const struct inst *in, const char *path)
{
    static char url[2][1024];
    static int k;

    k ^= 1;
    snprintf(url[k], sizeof(url[k]), "%s%s", in->base, path);
    return url[k];
}

static void script(const char *text)
{
    rein_error err;

    ms_reset(C->ms);
    assert_rein_ok(ms_script(C->ms, text, false, &err), &err);
    /* test-model states no confidence, so auto self-verifies every call (001): the verifier
     * approves them all. */
    assert_rein_ok(ms_script(C->ms,
                             "{\"match\": {\"body_contains\": \"Answer YES or NO\"}, "
                             "\"times\": 0, \"text\": \"YES\"}",
                             true, &err),
                   &err);
}

/* GET /agent/conversations/{id} through in (new object). */
static json_t *conversation(const struct inst *in, const char *id)
{
    char path[128];
    struct th_resp r;
    json_t *o;

    snprintf(path, sizeof(path), "/agent/conversations/%s", id);
    th_get(at(in, path), &r);
    if (r.status != 200)
        fail_msg("GET %s: %ld %s", path, r.status, r.body);
    o = json_incref(r.json);
    th_resp_free(&r);
    return o;
}

/* Waits until in shows the conversation's lock in state (through GET). */
static void wait_state(const struct inst *in, const char *id, const char *state)
{
    int64_t deadline = rein_now_ms() + 20000;

    while (rein_now_ms() < deadline) {
        char path[128];
        struct th_resp r;
        const char *s;
        snprintf(path, sizeof(path), "/agent/conversations/%s", id);
        th_get(at(in, path), &r);
        s = th_jstr(json_object_get(r.json, "lock"), "state");
        if (s && strcmp(s, state) == 0) {
            th_resp_free(&r);
            return;
        }
        th_resp_free(&r);
        rein_sleep_ms(20);
    }
    fail_msg("%s never showed %s in state %s", in->base, id, state);
}

/* Both instances over the one Redis, with the same lease and grace (ms, as text). */
static void pair_start(const char *lease_ms, const char *grace_ms)
{
    inst_start(&C->a, lease_ms, grace_ms);
    inst_start(&C->b, lease_ms, grace_ms);
}

static void pair_stop(void)
{
    inst_stop(&C->a);
    inst_stop(&C->b);
}

/* ---- two instances, one Redis ------------------------------------------------------------ */

static void two_instances_share_conversations(void **state)
{
    struct th_resp r;
    json_t *conv;
    const json_t *msgs;

    (void)state;
    setup_cluster(true);
    pair_start("30000", "5000");
    script("[{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"echo\", \"arguments\": "
           "\"{\\\"text\\\": \\\"hi\\\"}\"}]}, {\"text\": \"It said hi.\"},"
           " {\"text\": \"From B.\"}]");
    th_post(at(&C->a, "/agent/chat"),
            "{\"message\": \"echo hi\", \"conversation_id\": \"shared\", \"verification\": "
            "\"off\"}",
            &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    /* Written through A, read through B. */
    conv = conversation(&C->b, "shared");
    assert_int_equal(json_array_size(json_object_get(conv, "messages")), 5);
    assert_string_equal(th_jstr(th_ledger_entry(conv, "c1"), "status"), "success");
    json_decref(conv);
    th_get(at(&C->b, "/agent/conversations"), &r);
    assert_string_equal(th_jstr(json_array_get(json_object_get(r.json, "conversations"), 0), "id"),
                        "shared");
    th_resp_free(&r);
    /* Continued through B: the model sees the turn A ran. */
    th_post(at(&C->b, "/agent/chat"), "{\"message\": \"more\", \"conversation_id\": \"shared\"}",
            &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(th_jstr(r.json, "response"), "From B.");
    th_resp_free(&r);
    msgs = json_object_get(ms_request(C->ms, 2)->json, "messages");
    assert_int_equal(json_array_size(msgs), 6);
    assert_string_equal(th_jstr(json_array_get(msgs, 4), "content"), "It said hi.");
    pair_stop();
}

/* The store going away is the server's trouble, not the client's: 503 with the store named,
 * the server keeps answering what does not need the store, and serves again once it is back
 * (issue 19: store I/O errors become 503s). */
static void store_down_is_503(void **state)
{
    struct th_resp r;

    (void)state;
    setup_cluster(true);
    /* rein serve reaches Redis through a relay, whose port stays held while Redis is down: the
     * port Redis had could be taken by another test before it came back there. */
    C->relay = tcp_relay_start(C->redis->port);
    snprintf(C->store, sizeof(C->store), "redis://127.0.0.1:%d", tcp_relay_port(C->relay));
    inst_start(&C->a, "30000", "5000");
    script("[{\"text\": \"Hello.\"}, {\"text\": \"Back.\"}]");
    th_post(at(&C->a, "/agent/chat"),
            "{\"message\": \"hi\", \"conversation_id\": \"c\", \"verification\": \"off\"}", &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    tcp_relay_target(C->relay, 0);
    assert_null(test_redis_command(C->redis, "SHUTDOWN NOSAVE"));
    th_get(at(&C->a, "/agent/conversations"), &r);
    th_assert_error(&r, 503, "store_unavailable");
    th_resp_free(&r);
    th_post(at(&C->a, "/agent/chat"),
            "{\"message\": \"again\", \"conversation_id\": \"c\", \"verification\": \"off\"}", &r);
    th_assert_error(&r, 503, "store_unavailable");
    th_resp_free(&r);
    th_get(at(&C->a, "/healthz"), &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    /* Redis again where the server expects it: the server reconnects on its own (the data is
     * gone: no persistence) */
    test_redis_stop(C->redis);
    C->redis = test_redis_start();
    tcp_relay_target(C->relay, C->redis->port);
    th_post(at(&C->a, "/agent/chat"),
            "{\"message\": \"again\", \"conversation_id\": \"c\", \"verification\": \"off\"}", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(th_jstr(r.json, "response"), "Back.");
    th_resp_free(&r);
    inst_stop(&C->a);
}

static void two_instances_one_turn_at_a_time(void **state)
{
    struct th_bg *x, *y;
    long sa, sb;
    const struct th_resp *busy;

    (void)state;
    setup_cluster(true);
    pair_start("30000", "5000");
    script("[{\"text\": \"the one that ran\", \"delay_headers_ms\": 1000, \"times\": 0}]");
    x = th_bg_post(at(&C->a, "/agent/chat"),
                   "{\"message\": \"one\", \"conversation_id\": \"race\"}", false);
    y = th_bg_post(at(&C->b, "/agent/chat"),
                   "{\"message\": \"two\", \"conversation_id\": \"race\"}", false);
    th_bg_join(x);
    th_bg_join(y);
    sa = x->r.status;
    sb = y->r.status;
    if (!((sa == 200 && sb == 409) || (sa == 409 && sb == 200)))
        fail_msg("expected one 200 and one 409, got %ld (%s) and %ld (%s)", sa, x->r.body, sb,
                 y->r.body);
    busy = sa == 409 ? &x->r : &y->r;
    th_assert_error(busy, 409, "conversation_busy");
    assert_string_equal(
        th_jstr(json_object_get(json_object_get(busy->json, "error"), "lock"), "state"),
        "thinking");
    /* Exactly one turn reached the model, and the conversation has one user message. */
    assert_int_equal(ms_request_count(C->ms), 1);
    {
        json_t *conv = conversation(&C->a, "race");
        assert_int_equal(json_array_size(json_object_get(conv, "messages")), 3);
        json_decref(conv);
    }
    th_bg_free(x);
    th_bg_free(y);
    pair_stop();
}

static void cancel_and_approval_across_instances(void **state)
{
    struct th_bg *x;
    struct th_resp r;
    const json_t *call;

    (void)state;
    setup_cluster(true);
    pair_start("30000", "5000");

    /* A cancel sent to B stops the tool running on A. */
    script("[{\"tool_calls\": [{\"id\": \"s1\", \"name\": \"slow\", \"arguments\": \"{}\"}]}]");
    x = th_bg_post(at(&C->a, "/agent/chat"), "{\"message\": \"go\", \"conversation_id\": \"rc\"}",
                   false);
    wait_state(&C->b, "rc", "executing");
    th_post(at(&C->b, "/agent/conversations/rc/cancel"), "{\"reason\": \"stop from B\"}", &r);
    assert_int_equal(r.status, 202);
    th_resp_free(&r);
    th_bg_join(x);
    assert_int_equal(x->r.status, 200);
    assert_string_equal(th_jstr(json_object_get(x->r.json, "meta"), "stop_reason"), "cancelled");
    assert_non_null(strstr(th_jstr(x->r.json, "response"), "stop from B"));
    call = json_array_get(json_object_get(x->r.json, "tool_calls"), 0);
    assert_string_equal(th_jstr(json_object_get(json_object_get(call, "result"), "error"), "code"),
                        "cancelled");
    th_bg_free(x);

    /* An approval posted to B lets the destructive call on A run. */
    script("[{\"tool_calls\": [{\"id\": \"w1\", \"name\": \"wipe\", \"arguments\": \"{}\"}]},"
           " {\"text\": \"wiped\"}]");
    x = th_bg_post(
        at(&C->a, "/agent/chat"),
        "{\"message\": \"wipe\", \"conversation_id\": \"ra\", \"verification\": \"off\"}", true);
    wait_state(&C->b, "ra", "waiting_approval");
    th_post(at(&C->b, "/agent/conversations/ra/approvals/w1"), "{\"approve\": true}", &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    th_post(at(&C->a, "/agent/conversations/ra/approvals/w1"), "{\"approve\": false}", &r);
    /* Answered once: a second answer, from anywhere, is refused (or finds nothing waiting). */
    assert_true(r.status == 409 || r.status == 404);
    th_resp_free(&r);
    th_bg_join(x);
    assert_int_equal(x->r.status, 200);
    {
        json_t *events = th_sse_events(x->r.body, NULL);
        const json_t *res =
            json_object_get(json_array_get(events, json_array_size(events) - 1), "data");
        call = json_array_get(json_object_get(res, "tool_calls"), 0);
        assert_string_equal(th_jstr(call, "status"), "success");
        assert_true(json_is_true(json_object_get(json_object_get(call, "approval"), "approved")));
        assert_string_equal(th_jstr(res, "response"), "wiped");
        json_decref(events);
    }
    th_bg_free(x);
    pair_stop();
}

static void events_followed_across_instances(void **state)
{
    struct th_bg *f;
    struct th_bg *x;
    struct th_resp r;
    json_t *events;
    size_t n;

    (void)state;
    setup_cluster(true);
    pair_start("30000", "5000");
    /* The turn runs on A; B serves its events, from the store, while it runs and after. */
    script("[{\"tool_calls\": [{\"id\": \"s1\", \"name\": \"slow\", \"arguments\": \"{}\"}]}]");
    x = th_bg_post(at(&C->a, "/agent/chat"), "{\"message\": \"go\", \"conversation_id\": \"fe\"}",
                   true);
    wait_state(&C->b, "fe", "executing");
    f = th_bg_get(at(&C->b, "/agent/conversations/fe/events"));
    th_post(at(&C->b, "/agent/conversations/fe/cancel"), "{}", &r);
    assert_int_equal(r.status, 202);
    th_resp_free(&r);
    th_bg_join(x);
    th_bg_join(f);
    assert_int_equal(f->r.status, 200);
    events = th_sse_events(f->r.body, NULL);
    n = json_array_size(events);
    assert_true(n >= 4);
    assert_string_equal(th_jstr(json_array_get(events, 0), "event"), "start");
    assert_string_equal(th_jstr(json_array_get(events, 0), "id"), "1");
    assert_string_equal(th_jstr(json_array_get(events, n - 1), "event"), "result");
    json_decref(events);
    /* A's own stream ended with the same result, under the same id. */
    events = th_sse_events(x->r.body, NULL);
    {
        char last[32];
        snprintf(last, sizeof(last), "%zu", n);
        assert_string_equal(th_jstr(json_array_get(events, json_array_size(events) - 1), "id"),
                            last);
    }
    json_decref(events);
    th_bg_free(f);
    th_bg_free(x);
    pair_stop();
}

/* The page that started a turn on A closes; a page served by B attaches to the turn from the
 * store, answers its approval and follows it to the end; a reader that resumes after an id
 * gets only what came after it. The turn never depended on its first client. */
static void events_of_a_turn_from_another_instance(void **state)
{
    struct th_resp r;
    struct th_bg *b;
    json_t *all;
    size_t n;
    char last[32] = "";
    bool asked = false;

    (void)state;
    setup_cluster(true);
    pair_start("30000", "5000");
    script("[{\"tool_calls\": [{\"id\": \"w1\", \"name\": \"wipe\", \"arguments\": \"{}\"}]},"
           " {\"text\": \"wiped on A\"}]");
    th_post_sse_until(
        at(&C->a, "/agent/chat"),
        "{\"message\": \"wipe\", \"conversation_id\": \"re\", \"verification\": \"off\"}",
        "event: approval_required", &r);
    th_resp_free(&r);
    b = th_bg_get(at(&C->b, "/agent/conversations/re/events?from=turn"));
    wait_state(&C->b, "re", "waiting_approval");
    th_post(at(&C->b, "/agent/conversations/re/approvals/w1"), "{\"approve\": true}", &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    th_bg_join(b);
    assert_int_equal(b->r.status, 200);
    all = th_sse_events(b->r.body, NULL);
    n = json_array_size(all);
    assert_true(n > 3);
    assert_string_equal(th_jstr(json_array_get(all, 0), "event"), "start");
    assert_string_equal(th_jstr(json_array_get(all, n - 1), "event"), "result");
    assert_string_equal(th_jstr(json_object_get(json_array_get(all, n - 1), "data"), "response"),
                        "wiped on A");
    for (size_t i = 0; i + 1 < n; i++) {
        asked = asked || strcmp(th_jstr(json_array_get(all, i), "event"), "approval_required") == 0;
        snprintf(last, sizeof(last), "%s", th_jstr(json_array_get(all, i), "id"));
    }
    assert_true(asked);
    json_decref(all);
    th_bg_free(b);
    /* Resumed through A after the last event before the result. */
    {
        char header[64];
        const char *resume[] = {header, NULL};
        snprintf(header, sizeof(header), "Last-Event-ID: %s", last);
        th_http("GET", at(&C->a, "/agent/conversations/re/events"), NULL, resume, &r);
        all = th_sse_events(r.body, NULL);
        assert_int_equal(json_array_size(all), 1);
        assert_string_equal(th_jstr(json_array_get(all, 0), "event"), "result");
        json_decref(all);
        th_resp_free(&r);
    }
    pair_stop();
}

/* ---- lifecycle --------------------------------------------------------------------------- */

/* The conversation id (new object) once in shows it recovered after a dead turn: call_id's
 * entry flagged interrupted, no lock, the state "interrupted" (or the last answer after 20 s). */
static json_t *recovered(const struct inst *in, const char *id, const char *call_id)
{
    int64_t deadline = rein_now_ms() + 20000;
    json_t *conv = NULL;

    while (rein_now_ms() < deadline) {
        json_decref(conv);
        conv = conversation(in, id);
        if (json_is_true(json_object_get(th_ledger_entry(conv, call_id), "interrupted")) &&
            json_is_null(json_object_get(conv, "lock")) && th_jstr(conv, "state") &&
            strcmp(th_jstr(conv, "state"), "interrupted") == 0)
            break;
        rein_sleep_ms(50);
    }
    return conv;
}

static void kill9_during_a_slow_tool(void **state)
{
    struct th_bg *x;
    struct th_resp r;
    json_t *conv = NULL;
    const json_t *msgs, *entry = NULL;
    const struct ms_request *mr;

    (void)state;
    setup_cluster(true);
    pair_start("1500", "5000");
    script("[{\"tool_calls\": [{\"id\": \"s1\", \"name\": \"slow\", \"arguments\": \"{}\"}]},"
           " {\"text\": \"resumed\"}]");
    x = th_bg_post(at(&C->a, "/agent/chat"),
                   "{\"message\": \"go slow\", \"conversation_id\": \"k9\"}", true);
    wait_state(&C->b, "k9", "executing");
    conv = conversation(&C->b, "k9");
    assert_string_equal(th_jstr(conv, "state"), "running");
    json_decref(conv);
    conv = NULL;
    /* The tool's process runs (it has written its pid) when the server is killed, and the
     * client has received the call's event: the server sends it before the tool starts, but
     * its network thread may not have written it yet when the tool's pid appears (under load
     * the kill came first, and the client had nothing). */
    assert_true(leftover_tool_pid(10000) > 1);
    assert_true(th_bg_wait_body(x, "event: tool_call", 10000));
    rein_proc_kill(C->a.proc, SIGKILL);
    {
        int code;
        assert_rein_ok(rein_proc_wait(C->a.proc, 10000, &code), NULL);
    }
    rein_proc_free(C->a.proc);
    C->a.proc = NULL;
    th_bg_join(x);
    /* The client saw the turn accepted and running before the process died. */
    assert_non_null(strstr(x->r.body, "event: start"));
    assert_non_null(strstr(x->r.body, "event: tool_call"));
    th_bg_free(x);

    /* Nothing accepted is lost: the message and the model's call are stored, the call
     * pending; once the dead turn's lease runs out, the call is flagged and the lock free.
     * Recovery writes the flag and the state at once, but one GET reads the conversation, its
     * messages, its ledger and its lock one after another: an answer that read the state just
     * before recovery ran and the ledger just after shows the call flagged and the state still
     * "running". So the wait is for the whole recovered view in one answer. */
    conv = recovered(&C->b, "k9", "s1");
    entry = th_ledger_entry(conv, "s1");
    assert_true(json_is_true(json_object_get(entry, "interrupted")));
    assert_string_equal(th_jstr(entry, "status"), "pending");
    assert_true(json_is_null(json_object_get(conv, "lock")));
    /* The turn never said it ended; recovery says it was interrupted. */
    assert_string_equal(th_jstr(conv, "state"), "interrupted");
    msgs = json_object_get(conv, "messages");
    assert_int_equal(json_array_size(msgs), 3);
    assert_string_equal(th_jstr(json_object_get(json_array_get(msgs, 1), "message"), "content"),
                        "go slow");
    assert_string_equal(
        th_jstr(json_array_get(json_object_get(json_object_get(json_array_get(msgs, 2), "message"),
                                               "tool_calls"),
                               0),
                "id"),
        "s1");
    json_decref(conv);
    /* The tool's process died with the server: it is not left running under PID 1. */
    assert_true(leftover_tool_gone(5000));

    /* A restarted instance continues the conversation: the call had started, so it is
     * answered "interrupted" (it may have run), never "not run", before the model is asked
     * again. */
    inst_start(&C->a, "1500", "5000");
    th_post(at(&C->a, "/agent/chat"), "{\"message\": \"and now?\", \"conversation_id\": \"k9\"}",
            &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(th_jstr(r.json, "response"), "resumed");
    th_resp_free(&r);
    mr = ms_last_request(C->ms);
    msgs = json_object_get(mr->json, "messages");
    assert_string_equal(th_jstr(json_array_get(msgs, 3), "role"), "tool");
    assert_string_equal(th_jstr(json_array_get(msgs, 3), "tool_call_id"), "s1");
    assert_non_null(strstr(th_jstr(json_array_get(msgs, 3), "content"), "\"interrupted\""));
    assert_non_null(strstr(th_jstr(json_array_get(msgs, 3), "content"), "may have run"));
    assert_null(strstr(th_jstr(json_array_get(msgs, 3), "content"), "not run"));
    conv = conversation(&C->b, "k9");
    entry = th_ledger_entry(conv, "s1");
    assert_string_equal(th_jstr(entry, "status"), "error");
    assert_false(json_is_true(json_object_get(entry, "interrupted")));
    assert_string_equal(th_jstr(conv, "state"), "idle");
    json_decref(conv);
    pair_stop();
}

static void sigterm_cancels_after_grace(void **state)
{
    struct th_bg *x;
    json_t *conv, *events;
    const json_t *res;

    (void)state;
    setup_cluster(false);
    inst_start(&C->a, "30000", "300");
    script("[{\"tool_calls\": [{\"id\": \"s1\", \"name\": \"slow\", \"arguments\": \"{}\"}]}]");
    x = th_bg_post(at(&C->a, "/agent/chat"),
                   "{\"message\": \"go slow\", \"conversation_id\": \"st\"}", true);
    wait_state(&C->a, "st", "executing");
    inst_stop(&C->a); /* SIGTERM: stops gracefully, exits 0 */
    th_bg_join(x);
    events = th_sse_events(x->r.body, NULL);
    res = json_object_get(json_array_get(events, json_array_size(events) - 1), "data");
    assert_string_equal(th_jstr(json_array_get(events, json_array_size(events) - 1), "event"),
                        "result");
    assert_string_equal(th_jstr(json_object_get(res, "meta"), "stop_reason"), "cancelled");
    json_decref(events);
    th_bg_free(x);
    /* After a restart: the conversation says it was interrupted, the call has its result. */
    inst_start(&C->a, "30000", "300");
    conv = conversation(&C->a, "st");
    assert_string_equal(th_jstr(conv, "state"), "interrupted");
    assert_string_equal(th_jstr(th_ledger_entry(conv, "s1"), "status"), "error");
    assert_true(json_is_null(json_object_get(conv, "lock")));
    json_decref(conv);
    inst_stop(&C->a);
}

static void sigterm_lets_a_turn_finish(void **state)
{
    struct th_bg *x;

    (void)state;
    setup_cluster(false);
    inst_start(&C->a, "30000", "10000");
    script("[{\"text\": \"made it\", \"delay_headers_ms\": 600}]");
    x = th_bg_post(at(&C->a, "/agent/chat"),
                   "{\"message\": \"finish\", \"conversation_id\": \"ok\"}", false);
    assert_true(ms_wait(C->ms, 1, 20000));
    inst_stop(&C->a); /* SIGTERM: stops gracefully, exits 0 */
    th_bg_join(x);
    assert_int_equal(x->r.status, 200);
    assert_string_equal(th_jstr(x->r.json, "response"), "made it");
    assert_string_equal(th_jstr(json_object_get(x->r.json, "meta"), "stop_reason"), "final_answer");
    th_bg_free(x);
}

/*
 * A turn's writes wait in memory for its commit points (decision 0045), but every turn answered
 * 200 is on disk before its answer leaves: a kill -9 right after the answers loses none of
 * them. A turn still waiting for the model when the process died leaves its conversation
 * without a gap: whatever of it was stored is a prefix.
 */
static void kill9_after_answers_keeps_them(void **state)
{
    struct th_bg *late;
    struct th_resp r;
    rein_error err;
    json_t *conv;
    const json_t *m;
    size_t i;

    (void)state;
    setup_cluster(false);
    inst_start(&C->a, "1500", "5000");
    ms_reset(C->ms);
    assert_rein_ok(
        ms_script(
            C->ms,
            "[{\"match\": {\"body_contains\": \"take your time\"}, \"times\": 0,"
            " \"text\": \"late\", \"delay_headers_ms\": 60000},"
            " {\"match\": {\"last_role\": \"user\"}, \"times\": 0, \"tool_calls\":"
            " [{\"name\": \"echo\", \"arguments\": \"{\\\"text\\\": \\\"hi\\\"}\"}]},"
            " {\"match\": {\"last_role\": \"tool\"}, \"times\": 0, \"text\": \"It said hi.\"}]",
            false, &err),
        &err);
    late = th_bg_post(at(&C->a, "/agent/chat"),
                      "{\"message\": \"take your time\", \"conversation_id\": \"late\", "
                      "\"verification\": \"off\"}",
                      false);
    for (int k = 0; k < 8; k++) {
        char body[160];
        snprintf(body, sizeof(body),
                 "{\"message\": \"echo hi\", \"conversation_id\": \"ack%d\", "
                 "\"verification\": \"off\"}",
                 k);
        th_post(at(&C->a, "/agent/chat"), body, &r);
        assert_int_equal(r.status, 200);
        assert_string_equal(th_jstr(r.json, "response"), "It said hi.");
        th_resp_free(&r);
    }
    rein_proc_kill(C->a.proc, SIGKILL);
    {
        int code;
        assert_rein_ok(rein_proc_wait(C->a.proc, 10000, &code), NULL);
    }
    rein_proc_free(C->a.proc);
    C->a.proc = NULL;
    th_bg_join(late);
    assert_int_not_equal(late->r.status, 200);
    th_bg_free(late);

    inst_start(&C->a, "1500", "5000");
    for (int k = 0; k < 8; k++) {
        char id[16];
        snprintf(id, sizeof(id), "ack%d", k);
        conv = conversation(&C->a, id);
        assert_int_equal(json_array_size(json_object_get(conv, "messages")), 5);
        m = json_object_get(json_array_get(json_object_get(conv, "messages"), 4), "message");
        assert_string_equal(th_jstr(m, "content"), "It said hi.");
        assert_string_equal(th_jstr(json_array_get(json_object_get(conv, "ledger"), 0), "status"),
                            "success");
        assert_string_equal(th_jstr(conv, "state"), "idle");
        json_decref(conv);
    }
    conv = conversation(&C->a, "late");
    json_array_foreach(json_object_get(conv, "messages"), i, m)
        assert_int_equal(json_integer_value(json_object_get(m, "position")), (json_int_t)i);
    json_decref(conv);
    inst_stop(&C->a);
}

/*
 * The ledger's rule: a call never runs before its entry is on disk. A turn's writes wait in
 * memory for its commit points (decisions 0045, 0063), and the pending entry, the person's
 * message and the model's call share the commit made right before the call runs. The tool here
 * kills the server with -9 the moment it starts, after the verifier (a model call) approved it:
 * after a restart the message, the call and its pending entry are there, and once the dead
 * turn's lease has run out the entry is flagged and the conversation says "interrupted".
 */
static void kill9_as_a_call_starts(bool redis)
{
    struct th_resp r;
    json_t *conv = NULL;
    const json_t *msgs, *entry = NULL;
    char pid[32];
    int code;

    setup_cluster(redis);
    inst_start(&C->a, "1500", "5000");
    snprintf(pid, sizeof(pid), "%d\n", rein_proc_pid(C->a.proc));
    free(test_write_file(C->dir, "rein.pid", pid));
    script("[{\"tool_calls\": [{\"id\": \"b1\", \"name\": \"boom\", \"arguments\": \"{}\"}]},"
           " {\"text\": \"after\"}]");
    th_post(at(&C->a, "/agent/chat"), "{\"message\": \"go\", \"conversation_id\": \"k9b\"}", &r);
    assert_int_not_equal(r.status, 200);
    th_resp_free(&r);
    assert_rein_ok(rein_proc_wait(C->a.proc, 10000, &code), NULL);
    rein_proc_free(C->a.proc);
    C->a.proc = NULL;
    /* The verifier was asked before the call ran. */
    assert_int_equal(ms_request_count(C->ms), 2);

    inst_start(&C->a, "1500", "5000");
    conv = recovered(&C->a, "k9b", "b1");
    entry = th_ledger_entry(conv, "b1");
    assert_non_null(entry);
    assert_string_equal(th_jstr(entry, "status"), "pending");
    assert_true(json_is_true(json_object_get(entry, "interrupted")));
    assert_string_equal(th_jstr(conv, "state"), "interrupted");
    msgs = json_object_get(conv, "messages");
    assert_int_equal(json_array_size(msgs), 3);
    assert_string_equal(th_jstr(json_object_get(json_array_get(msgs, 1), "message"), "content"),
                        "go");
    json_decref(conv);
    inst_stop(&C->a);
}

static void sqlite_kill9_as_a_call_starts(void **state)
{
    (void)state;
    kill9_as_a_call_starts(false);
}

static void redis_kill9_as_a_call_starts(void **state)
{
    (void)state;
    kill9_as_a_call_starts(true);
}

/* One of kill9_mid_batches' concurrent turns. */
struct racer {
    const struct inst *in;
    int k;
    long status;
    char response[64];
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    int *answered;
};

static void *racer_main(void *arg)
{
    struct racer *x = arg;
    struct th_resp r;
    char body[160], url[128];

    snprintf(body, sizeof(body),
             "{\"message\": \"echo hi\", \"conversation_id\": \"race%d\", "
             "\"verification\": \"off\"}",
             x->k);
    /* Not at(): its buffers are shared. */
    snprintf(url, sizeof(url), "%s/agent/chat", x->in->base);
    th_post(url, body, &r);
    pthread_mutex_lock(x->mu);
    x->status = r.status;
    if (r.status == 200)
        snprintf(x->response, sizeof(x->response), "%s", th_jstr(r.json, "response"));
    (*x->answered)++;
    pthread_cond_signal(x->cv);
    pthread_mutex_unlock(x->mu);
    th_resp_free(&r);
    return NULL;
}

#define RACERS 16

/*
 * Concurrent turns share the store's commits (the SQLite writer thread runs their groups in
 * batches), and the process is killed with -9 while some are still running: every turn that
 * was answered 200 is complete on disk, and every other conversation holds a prefix of its
 * turn without a gap.
 */
static void kill9_mid_batches_keeps_the_answered(void **state)
{
    struct racer x[RACERS];
    pthread_t th[RACERS];
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    int answered = 0, ok = 0, code;
    rein_error err;

    (void)state;
    setup_cluster(false);
    inst_start(&C->a, "1500", "5000");
    ms_reset(C->ms);
    assert_rein_ok(
        ms_script(C->ms,
                  "[{\"match\": {\"last_role\": \"user\"}, \"times\": 0, \"tool_calls\":"
                  " [{\"name\": \"echo\", \"arguments\": \"{\\\"text\\\": \\\"hi\\\"}\"}]},"
                  " {\"match\": {\"last_role\": \"tool\"}, \"times\": 0, \"text\": "
                  "\"It said hi.\"}]",
                  false, &err),
        &err);
    for (int k = 0; k < RACERS; k++) {
        x[k] = (struct racer){.in = &C->a, .k = k, .mu = &mu, .cv = &cv, .answered = &answered};
        assert_int_equal(pthread_create(&th[k], NULL, racer_main, &x[k]), 0);
    }
    pthread_mutex_lock(&mu);
    while (answered < RACERS / 2)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    rein_proc_kill(C->a.proc, SIGKILL);
    assert_rein_ok(rein_proc_wait(C->a.proc, 10000, &code), NULL);
    rein_proc_free(C->a.proc);
    C->a.proc = NULL;
    for (int k = 0; k < RACERS; k++)
        pthread_join(th[k], NULL);

    inst_start(&C->a, "1500", "5000");
    for (int k = 0; k < RACERS; k++) {
        char path[64];
        struct th_resp r;
        const json_t *m, *msgs;
        size_t i;
        snprintf(path, sizeof(path), "/agent/conversations/race%d", k);
        th_get(at(&C->a, path), &r);
        if (x[k].status != 200) { /* not answered: absent, or a prefix without a gap */
            if (r.status == 200)
                json_array_foreach(json_object_get(r.json, "messages"), i, m) assert_int_equal(
                    json_integer_value(json_object_get(m, "position")), (json_int_t)i);
            th_resp_free(&r);
            continue;
        }
        ok++;
        assert_string_equal(x[k].response, "It said hi.");
        assert_int_equal(r.status, 200);
        msgs = json_object_get(r.json, "messages");
        assert_int_equal(json_array_size(msgs), 5);
        m = json_object_get(json_array_get(msgs, 4), "message");
        assert_string_equal(th_jstr(m, "content"), "It said hi.");
        assert_string_equal(th_jstr(json_array_get(json_object_get(r.json, "ledger"), 0), "status"),
                            "success");
        th_resp_free(&r);
    }
    assert_true(ok >= RACERS / 2);
    inst_stop(&C->a);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_teardown(two_instances_share_conversations, teardown),
    cmocka_unit_test_teardown(two_instances_one_turn_at_a_time, teardown),
    cmocka_unit_test_teardown(store_down_is_503, teardown),
    cmocka_unit_test_teardown(cancel_and_approval_across_instances, teardown),
    cmocka_unit_test_teardown(events_followed_across_instances, teardown),
    cmocka_unit_test_teardown(events_of_a_turn_from_another_instance, teardown),
    cmocka_unit_test_teardown(kill9_during_a_slow_tool, teardown),
    cmocka_unit_test_teardown(sigterm_cancels_after_grace, teardown),
    cmocka_unit_test_teardown(sigterm_lets_a_turn_finish, teardown),
    cmocka_unit_test_teardown(kill9_after_answers_keeps_them, teardown),
    cmocka_unit_test_teardown(kill9_mid_batches_keeps_the_answered, teardown),
    cmocka_unit_test_teardown(sqlite_kill9_as_a_call_starts, teardown),
    cmocka_unit_test_teardown(redis_kill9_as_a_call_starts, teardown),
};

REIN_TEST_MAIN(tests)
