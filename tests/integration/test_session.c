/*
 * The session module (include/rein/session.h) directly, with a real store (SQLite on a file;
 * Redis on a real redis-server for the cases that matter across instances) and an agent whose
 * model is the scripted model server: opening (lease, busy, title, must exist), a turn's
 * messages, ledger and recorded events (sequence ids, joined text, the result), a reader on a
 * second store handle following a turn while it runs, recovery of calls a dead turn left
 * open, approvals answered through the store, proposals, interruption, events of an adapter's
 * own, and a session without a store. The HTTP and terminal adapters have their own tests
 * (test_serve.c, tests/scripts/chat_cli.sh).
 */
/* rein-test-timeout: 120 */
#include "agent_fixture.h"
#include "model_server.h"
#include "redis_server.h"
#include "store_fixture.h"
#include "test.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct fx {
    char *dir;
    ms_server *ms;
    rein_provider *p;
    rein_registry *reg;
    rein_agent *a;
    rein_store *store;
    struct test_redis *redis;
    char url[600];
};

static struct fx *F;

/* Before the store is opened: a store written by the first release. */
static bool with_release_store;

static void start_backend(bool redis)
{
    rein_error err;

    F = calloc(1, sizeof(*F));
    F->dir = test_tmpdir();
    F->ms = ms_start(0, &err);
    if (!F->ms)
        fail_msg("model server: %s", err.msg);
    F->p = test_ms_provider(ms_openai_url(F->ms));
    F->reg = test_agent_registry(F->dir);
    F->a = rein_agent_new(F->p, F->reg, &err);
    assert_non_null(F->a);
    if (redis) {
        rein_store *probe = NULL;
        if (rein_store_open("redis://127.0.0.1:1", NULL, &probe, &err) == REIN_ENOTSUP) {
            print_message("[  SKIPPED ] this build has no Redis backend (hiredis missing)\n");
            skip();
        }
        F->redis = test_redis_start();
        snprintf(F->url, sizeof(F->url), "%s", F->redis->url);
        if (with_release_store)
            test_store_fixture_redis(F->redis);
    } else {
        snprintf(F->url, sizeof(F->url), "sqlite:%s/rein.db", F->dir);
        if (with_release_store)
            test_store_fixture_sqlite(F->url + strlen("sqlite:"));
    }
    with_release_store = false;
    assert_rein_ok(rein_store_open(F->url, NULL, &F->store, &err), &err);
}

static void start(void)
{
    start_backend(false);
}

/* A case run on each backend: t_NAME() after start_backend(); RELEASE: on the release's store. */
#define BOTH_(name, release)                                                                       \
    static void sqlite_##name(void **state)                                                        \
    {                                                                                              \
        (void)state;                                                                               \
        with_release_store = release;                                                              \
        start_backend(false);                                                                      \
        t_##name();                                                                                \
    }                                                                                              \
    static void redis_##name(void **state)                                                         \
    {                                                                                              \
        (void)state;                                                                               \
        with_release_store = release;                                                              \
        start_backend(true);                                                                       \
        t_##name();                                                                                \
    }
#define BOTH(name)         BOTH_(name, false)
#define BOTH_RELEASE(name) BOTH_(name, true)

static int teardown(void **state)
{
    (void)state;
    if (!F)
        return 0;
    rein_agent_free(F->a);
    rein_store_free(F->store);
    rein_registry_free(F->reg);
    rein_provider_free(F->p);
    ms_stop(F->ms);
    test_redis_stop(F->redis);
    test_rmtree(F->dir);
    free(F->dir);
    free(F);
    F = NULL;
    return 0;
}

static void script(const char *text)
{
    rein_error err;

    ms_reset(F->ms);
    assert_rein_ok(ms_script(F->ms, text, false, &err), &err);
    /* test-model states no confidence, so auto self-verifies every call (001): the verifier
     * approves them all. */
    assert_rein_ok(ms_script(F->ms,
                             "{\"match\": {\"body_contains\": \"Answer YES or NO\"}, "
                             "\"times\": 0, \"text\": \"YES\"}",
                             true, &err),
                   &err);
}

static const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* The conversation as GET /agent/conversations/{id} has it (new). */
static json_t *exported(const char *id)
{
    json_t *o = NULL;
    rein_error err;

    assert_rein_ok(rein_store_conv_export(F->store, id, &o, &err), &err);
    return o;
}

static const json_t *ledger_entry(const json_t *conv, const char *call_id)
{
    const json_t *e;
    size_t i;

    json_array_foreach(json_object_get(conv, "ledger"), i, e)
    {
        if (strcmp(jstr(e, "call_id"), call_id) == 0)
            return e;
    }
    fail_msg("no ledger entry %s", call_id);
    return NULL;
}

/* ---- what an adapter sees, and what the store has ---------------------------------------- */

#define MAX_SEEN 256

struct seen {
    pthread_mutex_t mu;
    size_t n;
    char type[MAX_SEEN][24];
    int64_t seq[MAX_SEEN];
    int deltas;        /* text deltas as the agent sent them */
    rein_store *store; /* when set: approve every approval_required through it */
    const char *conv_id;
};

static void on_event(const struct rein_session_event *ev, void *userdata)
{
    struct seen *s = userdata;
    json_t *j = json_loadb(ev->json, ev->len, 0, NULL);

    assert_non_null(j); /* every event is one JSON object */
    assert_string_equal(jstr(j, "type") ? jstr(j, "type") : ev->type, ev->type);
    json_decref(j);
    pthread_mutex_lock(&s->mu);
    if (s->n < MAX_SEEN) {
        snprintf(s->type[s->n], sizeof(s->type[0]), "%s", ev->type);
        s->seq[s->n++] = ev->seq;
    }
    if (ev->agent && ev->agent->type == REIN_AGENT_EV_TEXT_DELTA)
        s->deltas++;
    pthread_mutex_unlock(&s->mu);
    if (s->store && ev->agent && ev->agent->type == REIN_AGENT_EV_APPROVAL_REQUIRED) {
        rein_error err;
        /* The session announced the approval before this event reached anyone. */
        assert_rein_ok(
            rein_store_approval_post(s->store, s->conv_id, ev->agent->call_id, true, &err), &err);
    }
}

struct stored {
    size_t n;
    char type[MAX_SEEN][24];
    int64_t seq[MAX_SEEN];
    json_t *payloads; /* array */
};

static int collect(const struct rein_store_event *ev, void *userdata)
{
    struct stored *st = userdata;

    if (st->n < MAX_SEEN) {
        snprintf(st->type[st->n], sizeof(st->type[0]), "%s", ev->type);
        st->seq[st->n++] = ev->seq;
        json_array_append_new(st->payloads, json_loads(ev->payload, 0, NULL));
    }
    return 0;
}

static void stored_events(rein_store *store, const char *conv, int64_t after, struct stored *st)
{
    rein_error err;

    memset(st, 0, sizeof(*st));
    st->payloads = json_array();
    assert_rein_ok(rein_store_events_after(store, conv, after, 0, collect, st, &err), &err);
}

static size_t count_type(const struct stored *st, const char *type)
{
    size_t n = 0;

    for (size_t i = 0; i < st->n; i++)
        n += strcmp(st->type[i], type) == 0;
    return n;
}

/* ---- opening ------------------------------------------------------------------------------ */

static void open_busy_and_existing(void **state)
{
    struct rein_session_opts so = {.title = "  \n first line\nsecond"};
    struct rein_store_lock_info held;
    rein_session *s = NULL, *other = NULL;
    char long_title[200];
    json_t *conv;
    rein_error err;

    (void)state;
    start();
    assert_rein_ok(rein_session_open(F->store, "o1", &so, &s, NULL, &err), &err);
    assert_string_equal(rein_session_conversation_id(s), "o1");
    assert_int_equal(strlen(rein_session_trace_id(s)), 32);
    /* A second opener finds it busy, with what the turn is doing. */
    assert_int_equal(rein_session_open(F->store, "o1", NULL, &other, &held, &err), REIN_EBUSY);
    assert_null(other);
    assert_string_equal(held.state, "thinking");
    assert_non_null(strstr(err.msg, "busy"));
    rein_session_close(s);
    conv = exported("o1");
    assert_string_equal(jstr(conv, "title"), "first line");
    assert_string_equal(jstr(conv, "state"), "idle");
    json_decref(conv);
    /* Free again once closed; an existing conversation keeps its title. */
    assert_rein_ok(rein_session_open(F->store, "o1", NULL, &s, NULL, &err), &err);
    rein_session_close(s);

    /* Titles are cut on a character boundary. */
    memset(long_title, 'a', 79);
    snprintf(long_title + 79, sizeof(long_title) - 79, "中文");
    so.title = long_title;
    assert_rein_ok(rein_session_open(F->store, "o2", &so, &s, NULL, &err), &err);
    rein_session_close(s);
    conv = exported("o2");
    assert_int_equal(strlen(jstr(conv, "title")), 79);
    json_decref(conv);
    memset(long_title, 'b', 150);
    long_title[150] = '\0';
    assert_rein_ok(rein_session_open(F->store, "o3", &so, &s, NULL, &err), &err);
    rein_session_close(s);
    conv = exported("o3");
    assert_int_equal(strlen(jstr(conv, "title")), REIN_SESSION_TITLE_MAX);
    json_decref(conv);

    /* existing: nothing is created. */
    so.existing = true;
    assert_int_equal(rein_session_open(F->store, "nope", &so, &s, NULL, &err), REIN_ENOTFOUND);
    assert_false(rein_store_conv_exists(F->store, "nope", &err));
    assert_int_equal(rein_session_open(F->store, "../x", NULL, &s, NULL, &err), REIN_EINVAL);
    /* No id: a new one. */
    assert_rein_ok(rein_session_open(F->store, NULL, NULL, &s, NULL, &err), &err);
    assert_memory_equal(rein_session_conversation_id(s), "conv_", 5);
    rein_session_close(s);
}

/* ---- a turn ------------------------------------------------------------------------------- */

static void t_turn_records(void)
{
    struct seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct rein_session_opts so = {.on_event = on_event, .event_data = &seen};
    struct stored st;
    rein_session *s;
    rein_agent_result *r = NULL;
    const json_t *last, *delta = NULL;
    json_t *conv;
    rein_error err;
    size_t adapter_written = 0;

    script("[{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"Echo\", \"arguments\": "
           "\"{\\\"text\\\": \\\"hi\\\"}\"}]},"
           " {\"text\": [\"Hel\", \"lo \", \"wor\", \"ld\"]}]");
    assert_rein_ok(rein_session_open(F->store, "t1", &so, &s, NULL, &err), &err);
    assert_null(rein_session_result_text(s, NULL));
    assert_rein_ok(rein_session_run(s, F->a, "echo hi", NULL, &r, &err), &err);
    assert_int_equal(rein_agent_result_stop(r), REIN_AGENT_STOP_FINAL_ANSWER);
    assert_string_equal(rein_agent_result_text(r), "Hello world");
    {
        /* The text the session recorded is the result object as written anew: the routes
         * answer with it instead of writing it again. */
        json_t *j = rein_agent_result_json(r);
        struct rein_buf b;
        size_t len = 0;
        const char *text = rein_session_result_text(s, &len);
        rein_buf_init(&b, 0);
        assert_rein_ok(rein_json_dump(&b, j), NULL);
        assert_non_null(text);
        assert_int_equal(len, b.len);
        assert_memory_equal(text, b.ptr, len);
        rein_buf_release(&b);
        json_decref(j);
    }
    rein_agent_result_free(r);
    rein_session_close(s);

    /* Messages and the ledger are in the store. */
    conv = exported("t1");
    assert_int_equal(json_array_size(json_object_get(conv, "messages")), 5);
    assert_string_equal(jstr(ledger_entry(conv, "c1"), "status"), "success");
    assert_string_equal(jstr(ledger_entry(conv, "c1"), "tool"), "echo");
    /* The entry as the pipeline made it: the name the model sent, how long the call ran. */
    assert_string_equal(jstr(ledger_entry(conv, "c1"), "sent_name"), "Echo");
    assert_true(json_is_integer(json_object_get(ledger_entry(conv, "c1"), "latency_ms")));
    assert_true(json_is_false(json_object_get(ledger_entry(conv, "c1"), "interrupted")));
    json_decref(conv);

    /* The events: start first, the result last, sequence ids 1, 2, 3, … */
    stored_events(F->store, "t1", 0, &st);
    assert_true(st.n >= 8);
    assert_string_equal(st.type[0], "start");
    assert_string_equal(st.type[st.n - 1], "result");
    for (size_t i = 0; i < st.n; i++)
        assert_int_equal(st.seq[i], (int64_t)i + 1);
    assert_string_equal(jstr(json_array_get(st.payloads, 0), "trace_id"),
                        jstr(json_array_get(st.payloads, st.n - 1), "trace_id"));
    last = json_array_get(st.payloads, st.n - 1);
    assert_true(json_is_true(json_object_get(last, "success")));
    assert_string_equal(jstr(last, "conversation_id"), "t1");
    assert_int_equal(count_type(&st, "tool_call"), 1);
    assert_int_equal(count_type(&st, "tool_result"), 1);
    assert_int_equal(count_type(&st, "final"), 1);
    assert_true(count_type(&st, "status") >= 2);
    /* The streamed answer was held back and written as one text delta. */
    assert_true(seen.deltas >= 2);
    assert_int_equal(count_type(&st, "text_delta"), 1);
    for (size_t i = 0; i < st.n; i++) {
        if (strcmp(st.type[i], "text_delta") == 0)
            delta = json_array_get(st.payloads, i);
    }
    assert_string_equal(jstr(delta, "text"), "Hello world");

    /* The adapter saw every event in order; those it got with an id are stored under it. */
    assert_string_equal(seen.type[0], "start");
    assert_int_equal(seen.seq[0], 1);
    for (size_t i = 0; i < seen.n; i++) {
        assert_string_not_equal(seen.type[i], "result"); /* answered after closing */
        if (seen.seq[i] > 0) {
            assert_string_equal(st.type[seen.seq[i] - 1], seen.type[i]);
            adapter_written++;
        }
    }
    assert_int_equal(adapter_written,
                     st.n - count_type(&st, "status") - count_type(&st, "text_delta") - 1);
    json_decref(st.payloads);
}

BOTH(turn_records)

/* ---- a reader on another instance follows the turn --------------------------------------- */

struct follower {
    char url[600];
    const char *conv;
    struct stored got;
    bool saw_result;
    rein_err rc;
};

static void *follow(void *arg)
{
    struct follower *f = arg;
    rein_store *store = NULL;
    int64_t last = 0;
    rein_error err;

    f->rc = rein_store_open(f->url, NULL, &store, &err);
    memset(&f->got, 0, sizeof(f->got));
    f->got.payloads = json_array();
    while (f->rc == REIN_OK && !f->saw_result) {
        int64_t read = f->got.n ? f->got.seq[f->got.n - 1] : 0;
        f->rc = rein_store_events_wait(store, f->conv, read, 20000, NULL, &last, &err);
        if (f->rc == REIN_OK)
            f->rc = rein_store_events_after(store, f->conv, read, 3, collect, &f->got, &err);
        f->saw_result = f->got.n && strcmp(f->got.type[f->got.n - 1], "result") == 0;
    }
    rein_store_free(store);
    return NULL;
}

static void t_follow_from_another_handle(void)
{
    struct follower f = {.conv = "f1"};
    struct stored st;
    rein_session *s;
    rein_agent_result *r = NULL;
    rein_cancel *cancel = rein_cancel_new();
    int64_t last = -1;
    pthread_t th;
    rein_error err;

    snprintf(f.url, sizeof(f.url), "%s", F->url);
    script("[{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"echo\", \"arguments\": "
           "\"{\\\"text\\\": \\\"a\\\"}\"}]},"
           " {\"tool_calls\": [{\"id\": \"c2\", \"name\": \"echo\", \"arguments\": "
           "\"{\\\"text\\\": \\\"b\\\"}\"}]}, {\"text\": \"done\"}]");
    assert_rein_ok(rein_session_open(F->store, "f1", NULL, &s, NULL, &err), &err);
    /* A quiet conversation: the wait ends on its timeout, or at once on a cancel. */
    assert_int_equal(rein_store_events_wait(F->store, "f1", 0, 30, NULL, &last, &err),
                     REIN_ETIMEDOUT);
    assert_int_equal(last, 0);
    rein_cancel_trigger(cancel, "enough");
    assert_int_equal(rein_store_events_wait(F->store, "f1", 0, -1, cancel, NULL, &err),
                     REIN_ECANCELED);
    assert_int_equal(pthread_create(&th, NULL, follow, &f), 0);
    assert_rein_ok(rein_session_run(s, F->a, "echo twice", NULL, &r, &err), &err);
    rein_agent_result_free(r);
    rein_session_close(s);
    pthread_join(th, NULL);
    assert_rein_ok(f.rc, NULL);
    assert_true(f.saw_result);
    /* The follower read, three at a time as they came, exactly what the store has. */
    stored_events(F->store, "f1", 0, &st);
    assert_int_equal(f.got.n, st.n);
    for (size_t i = 0; i < st.n; i++) {
        assert_int_equal(f.got.seq[i], st.seq[i]);
        assert_string_equal(f.got.type[i], st.type[i]);
    }
    /* The wait sees what is there at once. */
    assert_rein_ok(rein_store_events_wait(F->store, "f1", 0, 0, NULL, &last, &err), &err);
    assert_int_equal(last, (int64_t)st.n);
    json_decref(st.payloads);
    json_decref(f.got.payloads);
    rein_cancel_unref(cancel);
}

BOTH(follow_from_another_handle)

/* ---- recovery ----------------------------------------------------------------------------- */

static void recovery_closes_open_calls(void **state)
{
    static const char *const msgs[] = {
        "{\"role\":\"system\",\"content\":\"be brief\"}",
        "{\"role\":\"user\",\"content\":\"echo twice\"}",
        "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":["
        "{\"id\":\"c8\",\"name\":\"echo\",\"arguments\":\"{\\\"text\\\":\\\"x\\\"}\"},"
        "{\"id\":\"c9\",\"name\":\"echo\",\"arguments\":\"{\\\"text\\\":\\\"y\\\"}\"}]}",
    };
    struct rein_ledger_entry e = {
        .call_id = "c8", .tool = "echo", .args = "{\"text\":\"x\"}", .call_ms = 1000, .step = -1};
    rein_session *s;
    rein_agent_result *r = NULL;
    const struct ms_request *mr;
    const json_t *m;
    json_t *conv;
    rein_error err;
    int flagged = 0;

    (void)state;
    start();
    /* A turn that died: its assistant message is stored, c8 was running (pending), c9 had
     * not even been recorded. */
    assert_rein_ok(rein_store_conv_create(F->store, "crashed", NULL, NULL, NULL, &err), &err);
    for (size_t i = 0; i < 3; i++)
        assert_rein_ok(rein_store_message_append(F->store, "crashed", msgs[i], strlen(msgs[i]),
                                                 NULL, NULL, &err),
                       &err);
    assert_rein_ok(rein_store_ledger_put(F->store, "crashed", &e, &err), &err);
    assert_rein_ok(rein_store_recover(F->store, &flagged, &err), &err);
    assert_int_equal(flagged, 1);

    assert_rein_ok(rein_session_open(F->store, "crashed", NULL, &s, NULL, &err), &err);
    /* Opening answered both calls, in memory and in the store. */
    assert_int_equal(rein_history_len(rein_session_history(s)), 5);
    conv = exported("crashed");
    assert_int_equal(json_array_size(json_object_get(conv, "messages")), 5);
    m = json_object_get(json_array_get(json_object_get(conv, "messages"), 3), "message");
    assert_string_equal(jstr(m, "tool_call_id"), "c8");
    /* c8 had started (its entry was pending): it may have run, so it is never "not run". */
    assert_non_null(strstr(jstr(m, "content"), "\"interrupted\""));
    assert_non_null(strstr(jstr(m, "content"), "may have run"));
    assert_null(strstr(jstr(m, "content"), "not run"));
    assert_string_equal(jstr(ledger_entry(conv, "c8"), "status"), "error");
    assert_string_equal(jstr(json_object_get(ledger_entry(conv, "c8"), "result"), "code"),
                        "interrupted");
    /* c9 was never recorded, so it never ran. */
    m = json_object_get(json_array_get(json_object_get(conv, "messages"), 4), "message");
    assert_string_equal(jstr(m, "tool_call_id"), "c9");
    assert_non_null(strstr(jstr(m, "content"), "not run"));
    /* Its first record is kept. */
    assert_string_equal(jstr(ledger_entry(conv, "c8"), "call_time"), "1970-01-01T00:00:01.000Z");
    assert_string_equal(jstr(ledger_entry(conv, "c9"), "status"), "error");
    assert_string_equal(jstr(json_object_get(ledger_entry(conv, "c9"), "args"), "text"), "y");
    json_decref(conv);

    /* The model then gets a history every service accepts. */
    script("[{\"text\": \"where were we?\"}]");
    assert_rein_ok(rein_session_run(s, F->a, "again", NULL, &r, &err), &err);
    assert_true(rein_agent_result_success(r));
    rein_agent_result_free(r);
    rein_session_close(s);
    mr = ms_request(F->ms, 0);
    m = json_object_get(mr->json, "messages");
    assert_int_equal(json_array_size(m), 6);
    assert_string_equal(jstr(json_array_get(m, 3), "tool_call_id"), "c8");
    assert_string_equal(jstr(json_array_get(m, 4), "tool_call_id"), "c9");
    assert_string_equal(jstr(json_array_get(m, 5), "content"), "again");
    conv = exported("crashed");
    assert_int_equal(json_array_size(json_object_get(conv, "messages")), 7);
    json_decref(conv);
}

/* ---- approvals, proposals, interruption --------------------------------------------------- */

static void approvals_through_store(void **state)
{
    struct seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER, .conv_id = "ap"};
    struct rein_session_opts so = {.on_event = on_event, .event_data = &seen};
    struct rein_agent_turn_opts turn = {.verification = REIN_AGENT_VERIFY_OFF,
                                        .approval_timeout_ms = 20000};
    rein_session *s;
    rein_agent_result *r = NULL;
    json_t *calls;
    rein_error err;

    (void)state;
    start();
    seen.store = F->store;
    script("[{\"tool_calls\": [{\"id\": \"w1\", \"name\": \"wipe\", \"arguments\": "
           "\"{\\\"path\\\": \\\"x\\\"}\"}]}, {\"text\": \"wiped\"}]");
    assert_rein_ok(rein_session_open(F->store, "ap", &so, &s, NULL, &err), &err);
    assert_rein_ok(rein_session_run(s, F->a, "wipe x", &turn, &r, &err), &err);
    calls = rein_agent_result_tool_calls_json(r);
    assert_string_equal(jstr(json_array_get(calls, 0), "status"), "success");
    assert_true(json_is_true(
        json_object_get(json_object_get(json_array_get(calls, 0), "approval"), "approved")));
    json_decref(calls);
    rein_agent_result_free(r);
    rein_session_close(s);
}

static void proposals(void **state)
{
    struct rein_agent_turn_opts turn = {.mode = REIN_AGENT_MODE_PROPOSE};
    struct rein_session_opts so = {.existing = true};
    rein_session *s;
    rein_agent_result *r = NULL;
    json_t *out = NULL, *conv;
    rein_error err;

    (void)state;
    start();
    script("[{\"tool_calls\": [{\"id\": \"p1\", \"name\": \"echo\", \"arguments\": "
           "\"{\\\"text\\\": \\\"hi\\\"}\"}, {\"id\": \"p2\", \"name\": \"calculator\", "
           "\"arguments\": \"{\\\"expression\\\": \\\"1+1\\\"}\"}]}]");
    assert_rein_ok(rein_session_open(F->store, "pp", NULL, &s, NULL, &err), &err);
    assert_rein_ok(rein_session_run(s, F->a, "plan it", &turn, &r, &err), &err);
    assert_int_equal(rein_agent_result_stop(r), REIN_AGENT_STOP_PROPOSED);
    rein_agent_result_free(r);
    rein_session_close(s);

    assert_rein_ok(rein_session_open(F->store, "pp", &so, &s, NULL, &err), &err);
    assert_rein_ok(rein_session_proposal(s, F->reg, "p1", true, &out, &err), &err);
    assert_string_equal(jstr(out, "status"), "success");
    assert_string_equal(jstr(out, "action"), "run");
    assert_string_equal(jstr(json_object_get(out, "result"), "output"), "hi");
    json_decref(out);
    assert_rein_ok(rein_session_proposal(s, F->reg, "p2", false, &out, &err), &err);
    assert_string_equal(jstr(out, "status"), "invalid");
    assert_true(json_is_null(json_object_get(out, "result")));
    json_decref(out);
    assert_int_equal(rein_session_proposal(s, F->reg, "p1", false, &out, &err), REIN_EEXIST);
    assert_non_null(strstr(err.msg, "already acted on"));
    assert_int_equal(rein_session_proposal(s, F->reg, "p9", true, &out, &err), REIN_ENOTFOUND);
    assert_null(out);
    rein_session_close(s);
    conv = exported("pp");
    assert_string_equal(jstr(ledger_entry(conv, "p1"), "status"), "success");
    assert_string_equal(jstr(json_object_get(ledger_entry(conv, "p2"), "result"), "code"),
                        "denied");
    /* Two notes for the model: the conversation says what became of its proposals. */
    assert_int_equal(json_array_size(json_object_get(conv, "messages")), 7);
    json_decref(conv);
}

struct bg_turn {
    rein_session *s;
    rein_agent_result *r;
    rein_err rc;
};

static void *run_bg(void *arg)
{
    struct bg_turn *b = arg;
    rein_error err;

    b->rc = rein_session_run(b->s, F->a, "go slow", NULL, &b->r, &err);
    return NULL;
}

static void interrupt_leaves_state(void **state)
{
    struct bg_turn b = {0};
    struct rein_store_lock_info info;
    pthread_t th;
    json_t *conv;
    rein_error err;

    (void)state;
    start();
    script("[{\"tool_calls\": [{\"id\": \"s1\", \"name\": \"slow\", \"arguments\": \"{}\"}]},"
           " {\"text\": \"stopped\"}]");
    assert_rein_ok(rein_session_open(F->store, "int", NULL, &b.s, NULL, &err), &err);
    assert_int_equal(pthread_create(&th, NULL, run_bg, &b), 0);
    for (int i = 0; i < 2000; i++) {
        if (rein_store_lock_get(F->store, "int", &info, &err) == REIN_OK &&
            strcmp(info.state, "executing") == 0)
            break;
        rein_sleep_ms(5);
    }
    assert_string_equal(info.state, "executing");
    assert_string_equal(info.tool, "slow");
    conv = exported("int");
    assert_string_equal(jstr(conv, "state"), "running");
    json_decref(conv);
    rein_session_interrupt(b.s, "the client went away");
    pthread_join(th, NULL);
    assert_rein_ok(b.rc, NULL);
    assert_int_equal(rein_agent_result_stop(b.r), REIN_AGENT_STOP_CANCELLED);
    rein_agent_result_free(b.r);
    rein_session_close(b.s);
    conv = exported("int");
    assert_string_equal(jstr(conv, "state"), "interrupted");
    assert_string_equal(jstr(ledger_entry(conv, "s1"), "status"), "error");
    json_decref(conv);
    assert_int_equal(rein_store_lock_get(F->store, "int", &info, &err), REIN_ENOTFOUND);
}

/* ---- events of an adapter's own, and a session without a store ---------------------------- */

static void adapter_events(void **state)
{
    rein_session *s;
    struct stored st;
    int64_t seq = 0;
    rein_error err;

    (void)state;
    start();
    assert_rein_ok(rein_session_open(F->store, "gw", NULL, &s, NULL, &err), &err);
    assert_rein_ok(rein_session_record(s, "upstream_call", "{\"model\":\"m\"}", &seq, &err), &err);
    assert_int_equal(seq, 1);
    assert_rein_ok(rein_session_record(s, "repair", "{\"what\":\"name\"}", &seq, &err), &err);
    assert_int_equal(seq, 2);
    assert_int_equal(rein_session_last_seq(s), 2);
    assert_int_equal(rein_session_record(s, "repair", "{not json", &seq, &err), REIN_EINVAL);
    assert_int_equal(rein_session_record(s, "", "{}", &seq, &err), REIN_EINVAL);
    rein_session_close(s);
    stored_events(F->store, "gw", 0, &st);
    assert_int_equal(st.n, 2);
    assert_string_equal(st.type[0], "upstream_call");
    assert_string_equal(jstr(json_array_get(st.payloads, 1), "what"), "name");
    json_decref(st.payloads);
    stored_events(F->store, "gw", 1, &st);
    assert_int_equal(st.n, 1);
    json_decref(st.payloads);
}

static void in_memory(void **state)
{
    struct seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct rein_session_opts so = {.on_event = on_event, .event_data = &seen};
    rein_session *s;
    rein_agent_result *r = NULL;
    json_t *out = NULL, *j;
    rein_error err;

    (void)state;
    start();
    script("[{\"text\": \"first\"}, {\"text\": \"second\"}]");
    assert_rein_ok(rein_session_open(NULL, NULL, &so, &s, NULL, &err), &err);
    assert_null(rein_session_conversation_id(s));
    assert_rein_ok(rein_session_run(s, F->a, "one", NULL, &r, &err), &err);
    j = rein_agent_result_json(r);
    assert_true(json_is_null(json_object_get(j, "conversation_id")));
    json_decref(j);
    rein_agent_result_free(r);
    /* Turns of one session continue one conversation. */
    assert_rein_ok(rein_session_run(s, F->a, "two", NULL, &r, &err), &err);
    assert_string_equal(rein_agent_result_text(r), "second");
    rein_agent_result_free(r);
    assert_int_equal(rein_history_len(rein_session_history(s)), 5);
    for (size_t i = 0; i < seen.n; i++)
        assert_int_equal(seen.seq[i], 0);
    assert_int_equal(rein_session_last_seq(s), 0);
    assert_int_equal(rein_session_proposal(s, F->reg, "p1", true, &out, &err), REIN_EINVAL);
    assert_int_equal(rein_session_record(s, "x", "{}", NULL, &err), REIN_EINVAL);
    rein_session_close(s);
    rein_session_close(NULL);
}

/* ---- a store written by the first release ------------------------------------------------ */

static void t_release_store_continues(void)
{
    rein_session *s;
    rein_agent_result *r = NULL;
    const json_t *m;
    json_t *conv;
    rein_error err;

    /* chat-4's turn was killed while its call ran: the session answers it, then goes on. */
    script("[{\"text\": \"the wait was cut short\"}]");
    assert_rein_ok(rein_session_open(F->store, "chat-4", NULL, &s, NULL, &err), &err);
    assert_rein_ok(rein_session_run(s, F->a, "what happened?", NULL, &r, &err), &err);
    assert_true(rein_agent_result_success(r));
    rein_agent_result_free(r);
    rein_session_close(s);
    m = json_object_get(ms_request(F->ms, 0)->json, "messages");
    assert_int_equal(json_array_size(m), 5);
    assert_string_equal(jstr(json_array_get(m, 3), "tool_call_id"), "s1");
    conv = exported("chat-4");
    assert_string_equal(jstr(ledger_entry(conv, "s1"), "status"), "error");
    assert_string_equal(jstr(json_object_get(ledger_entry(conv, "s1"), "result"), "code"),
                        "interrupted");
    assert_int_equal(json_array_size(json_object_get(conv, "messages")), 6);
    json_decref(conv);

    /* chat-1 goes on with the rules' two turns in its history. */
    script("[{\"text\": \"third\"}]");
    assert_rein_ok(rein_session_open(F->store, "chat-1", NULL, &s, NULL, &err), &err);
    assert_int_equal(rein_history_len(rein_session_history(s)), 9);
    assert_rein_ok(rein_session_run(s, F->a, "and now?", NULL, &r, &err), &err);
    assert_string_equal(rein_agent_result_text(r), "third");
    rein_agent_result_free(r);
    rein_session_close(s);
}

BOTH_RELEASE(release_store_continues)

/* ---- rein loop keeps its conversation in a session --------------------------------------- */

static void loop_in_a_session(void **state)
{
    static const char protocols[] = "protocols:\n"
                                    "  TEST:\n"
                                    "    priority: P1\n"
                                    "    steps: [{command: \"true\"}]\n";
    char *project = test_tmpdir(), cmd[1024];
    rein_verify_config *cfg;
    struct rein_loop_opts lo = {0};
    struct stored st;
    rein_loop_result *r = NULL;
    rein_session *s;
    json_t *conv, *j;
    rein_error err;

    (void)state;
    start();
    free(test_write_file(project, "rein-verify.yaml", protocols));
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && git init -q . && git add -A && git -c user.name=t "
             "-c user.email=t@example.com commit -qm init",
             project);
    assert_int_equal(system(cmd), 0);
    cfg = rein_verify_config_find(project, &err);
    assert_non_null(cfg);
    script("[{\"text\": \"done, the tests pass\"}]");
    assert_rein_ok(rein_session_open(F->store, "lp", NULL, &s, NULL, &err), &err);
    lo.cwd = project;
    lo.protocols = cfg;
    lo.session = s;
    lo.cancel = rein_session_cancel(s);
    assert_rein_ok(rein_loop_run(F->a, "make the tests pass", &lo, &r, &err), &err);
    assert_true(rein_loop_result_success(r));
    j = rein_loop_result_json(r);
    assert_string_equal(jstr(j, "trace_id"), rein_session_trace_id(s));
    json_decref(j);
    rein_loop_result_free(r);
    rein_session_close(s);
    /* The loop's conversation is the stored one, its turn recorded like any other. */
    conv = exported("lp");
    assert_int_equal(json_array_size(json_object_get(conv, "messages")), 3);
    assert_string_equal(
        jstr(json_object_get(json_array_get(json_object_get(conv, "messages"), 2), "message"),
             "content"),
        "done, the tests pass");
    json_decref(conv);
    stored_events(F->store, "lp", 0, &st);
    assert_string_equal(st.type[0], "start");
    assert_string_equal(st.type[st.n - 1], "result");
    json_decref(st.payloads);
    rein_verify_config_free(cfg);
    test_rmtree(project);
    free(project);
}

/* ---- commits (decision 0045) ------------------------------------------------------------- */

/* F's store opened again in exclusive mode, as `rein serve` opens it (group commit); with
 * poison, a message holding "poison" fails its commit (store_fixture.h). */
/* poison: 1 poisons messages (test_store_fixture_poison), 2 also new conversations' titles. */
static void reopen_exclusive(int poison)
{
    /* The lease's thread looks for a cancel every poll_ms, with a store call of its own: not
     * within a test's turn. */
    struct rein_store_opts opts = {.exclusive = true, .poll_ms = 600000};
    rein_error err;

    rein_store_free(F->store);
    if (poison)
        test_store_fixture_poison(F->url + strlen("sqlite:"));
    if (poison > 1)
        test_store_fixture_poison_titles(F->url + strlen("sqlite:"));
    assert_rein_ok(rein_store_open(F->url, &opts, &F->store, &err), &err);
}

/*
 * A turn whose adapter hands out no event ids (defer_events, as POST /agent/chat answering
 * JSON): its messages, ledger changes, lock states and events wait for the turn's commit
 * points, so the turn waits for the disk twice (the call about to run, with its pending entry,
 * and the end; the opening's writes go ahead of their commit and the first commit checks it)
 * instead of once per write, and everything is stored once rein_session_end says so.
 */
static void deferred_turn_commits_twice(void **state)
{
    struct seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct rein_session_opts so = {.on_event = on_event, .event_data = &seen, .defer_events = true};
    struct rein_store_counts before, after;
    struct stored st;
    struct rein_store_lock_info info;
    rein_session *s;
    rein_agent_result *r = NULL;
    json_t *conv;
    rein_error err;

    (void)state;
    start();
    reopen_exclusive(0);
    script("[{\"tool_calls\": [{\"id\": \"d1\", \"name\": \"echo\", \"arguments\": "
           "\"{\\\"text\\\": \\\"hi\\\"}\"}]}, {\"text\": [\"It said \", \"hi.\"]}]");
    rein_store_counts(F->store, &before);
    assert_rein_ok(rein_session_open(F->store, "d", &so, &s, NULL, &err), &err);
    assert_rein_ok(rein_session_run(s, F->a, "echo hi", NULL, &r, &err), &err);
    assert_string_equal(rein_agent_result_text(r), "It said hi.");
    rein_agent_result_free(r);
    assert_rein_ok(rein_session_end(s, &err), &err);
    rein_store_counts(F->store, &after);
    assert_int_equal(after.waits - before.waits, 2);

    conv = exported("d");
    assert_int_equal(json_array_size(json_object_get(conv, "messages")), 5);
    assert_string_equal(jstr(ledger_entry(conv, "d1"), "status"), "success");
    assert_string_equal(jstr(conv, "state"), "idle");
    assert_int_equal(rein_store_lock_get(F->store, "d", &info, &err), REIN_ENOTFOUND);
    json_decref(conv);
    /* Every event is stored, in order, and the adapter got none with an id. */
    stored_events(F->store, "d", 0, &st);
    assert_string_equal(st.type[0], "start");
    assert_string_equal(st.type[st.n - 1], "result");
    assert_int_equal(count_type(&st, "tool_result"), 1);
    for (size_t i = 0; i < st.n; i++)
        assert_int_equal(st.seq[i], (int64_t)i + 1);
    for (size_t i = 0; i < seen.n; i++)
        assert_int_equal(seen.seq[i], 0);
    json_decref(st.payloads);
}

/*
 * The end's commit fails (the final answer holds "poison"): rein_session_end says so, so the
 * adapter does not report the turn as kept, and nothing of the failed commit is in the store
 * while everything committed before it is. The lock is released all the same.
 */
static void lost_commit_is_reported(void **state)
{
    struct rein_session_opts so = {.defer_events = true};
    struct rein_store_lock_info info;
    rein_session *s;
    rein_agent_result *r = NULL;
    json_t *conv;
    rein_error err;

    (void)state;
    start();
    reopen_exclusive(1);
    script("[{\"tool_calls\": [{\"id\": \"p1\", \"name\": \"echo\", \"arguments\": "
           "\"{\\\"text\\\": \\\"hi\\\"}\"}]}, {\"text\": \"poison\"}]");
    assert_rein_ok(rein_session_open(F->store, "p", &so, &s, NULL, &err), &err);
    assert_rein_ok(rein_session_run(s, F->a, "echo hi", NULL, &r, &err), &err);
    rein_agent_result_free(r);
    assert_int_equal(rein_session_end(s, &err), REIN_ESTORE);
    assert_non_null(strstr(err.msg, "FOREIGN KEY"));
    conv = exported("p");
    /* system, user and the call went with the pending entry's commit; the rest was lost. */
    assert_int_equal(json_array_size(json_object_get(conv, "messages")), 3);
    assert_string_equal(jstr(ledger_entry(conv, "p1"), "status"), "pending");
    assert_int_equal(rein_store_lock_get(F->store, "p", &info, &err), REIN_ENOTFOUND);
    json_decref(conv);
}

/*
 * The opening's writes go ahead of their commit (decision 0063), and that commit fails (the new
 * conversation's title holds "poison"): the turn's first commit point, before its call runs,
 * finds it so. The call does not run, the turn is not kept, and the store holds nothing of it.
 */
static void lost_opening_stops_the_call(void **state)
{
    struct rein_session_opts so = {.defer_events = true, .title = "poison"};
    rein_session *s;
    rein_agent_result *r = NULL;
    json_t *conv = NULL;
    rein_error err;

    (void)state;
    start();
    reopen_exclusive(2);
    script("[{\"tool_calls\": [{\"id\": \"z1\", \"name\": \"echo\", \"arguments\": "
           "\"{\\\"text\\\": \\\"hi\\\"}\"}]}, {\"text\": \"done\"}]");
    assert_rein_ok(rein_session_open(F->store, "pz", &so, &s, NULL, &err), &err);
    assert_int_not_equal(rein_session_run(s, F->a, "echo hi", NULL, &r, &err), REIN_OK);
    assert_null(r);
    assert_non_null(strstr(err.msg, "opening was not stored"));
    assert_int_not_equal(rein_session_end(s, &err), REIN_OK);
    /* The turn stopped at the call, which never ran: the model was not asked for an answer
     * (one request, and the verifier's when the call was self-checked). */
    assert_true(ms_request_count(F->ms) <= 2);
    assert_null(strstr(ms_last_request(F->ms)->body, "\"role\":\"tool\""));
    assert_int_equal(rein_store_conv_get(F->store, "pz", &conv, &err), REIN_ENOTFOUND);
    json_decref(conv);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_teardown(open_busy_and_existing, teardown),
    cmocka_unit_test_teardown(sqlite_turn_records, teardown),
    cmocka_unit_test_teardown(redis_turn_records, teardown),
    cmocka_unit_test_teardown(sqlite_follow_from_another_handle, teardown),
    cmocka_unit_test_teardown(redis_follow_from_another_handle, teardown),
    cmocka_unit_test_teardown(recovery_closes_open_calls, teardown),
    cmocka_unit_test_teardown(approvals_through_store, teardown),
    cmocka_unit_test_teardown(proposals, teardown),
    cmocka_unit_test_teardown(interrupt_leaves_state, teardown),
    cmocka_unit_test_teardown(adapter_events, teardown),
    cmocka_unit_test_teardown(in_memory, teardown),
    cmocka_unit_test_teardown(loop_in_a_session, teardown),
    cmocka_unit_test_teardown(sqlite_release_store_continues, teardown),
    cmocka_unit_test_teardown(redis_release_store_continues, teardown),
    cmocka_unit_test_teardown(deferred_turn_commits_twice, teardown),
    cmocka_unit_test_teardown(lost_opening_stops_the_call, teardown),
    cmocka_unit_test_teardown(lost_commit_is_reported, teardown),
};

REIN_TEST_MAIN(tests)
