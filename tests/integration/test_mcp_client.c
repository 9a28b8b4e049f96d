/*
 * rein as an MCP client, against real servers: `rein mcp serve` over stdio, rein's /mcp over
 * HTTP (started in the test), a scripted stdio server that misbehaves on purpose
 * (tests/support/bin/mcp_fake_server) and an HTTP host that answers what an MCP server must
 * not (tests/support/skill_http.c). Every call goes through rein_call_run(): results, tool
 * errors, progress and log events, the ledger, timeouts and cancels (the server is told),
 * servers that exit, write garbage, answer unknown ids, send too much, or speak another
 * protocol version; resumed streams and expired sessions over HTTP; the naming rule and its
 * independence from configuration order; the environment a stdio server gets.
 */
/* rein-test-timeout: 120 */
#include "test.h"

#include "core/internal.h"
#include "skill_http.h"

#include <pthread.h>
#include <unistd.h>

static const char *skills_dir(void)
{
    static char path[4096];

    snprintf(path, sizeof(path), "%s/tests/data/mcp-skills", REIN_SOURCE_DIR);
    return path;
}

static const char *fake_bin(void)
{
    static char path[4096];

    snprintf(path, sizeof(path), "%s/mcp_fake_server", test_bin_dir());
    return path;
}

/* A set with one server from JSON text, connected, its tools in a new registry. */
struct client {
    rein_mcp_clients *set;
    rein_registry *reg;
    size_t ready;
};

static void client_open(struct client *c, const char *config_json)
{
    json_t *config = json_loads(config_json, 0, NULL);
    rein_error err;

    if (!config)
        print_error("bad test config: %s\n", config_json);
    assert_non_null(config);
    c->set = rein_mcp_clients_new();
    c->reg = rein_registry_new(&err);
    assert_non_null(c->set);
    assert_non_null(c->reg);
    assert_rein_ok(rein_mcp_clients_add_config(c->set, config, NULL, &err), &err);
    json_decref(config);
    c->ready = rein_mcp_clients_connect(c->set, 0);
    assert_rein_ok(rein_mcp_clients_register(c->set, c->reg, &err), &err);
}

static void client_close(struct client *c)
{
    rein_mcp_clients_free(c->set);
    rein_registry_free(c->reg);
}

struct events {
    int progress, logs;
    double last;
    char log[128];
};

static void on_event(void *ud, const struct rein_call_event *ev)
{
    struct events *e = ud;

    if (ev->kind == REIN_CALL_EVENT_PROGRESS) {
        assert_true(ev->progress > e->last);
        e->last = ev->progress;
        e->progress++;
    } else {
        e->logs++;
        snprintf(e->log, sizeof(e->log), "%s %s", ev->level, json_string_value(ev->data) ?: "");
    }
}

struct call_ctx {
    rein_ledger *ledger;
    rein_cancel *cancel;
    struct events ev;
    int64_t timeout_ms;
};

static rein_call_result *call(struct client *c, const char *tool, const char *args,
                              struct call_ctx *ctx)
{
    struct rein_call_input in = {.name = tool, .args_text = args, .args_len = strlen(args)};
    struct rein_call_opts opts = {0};
    rein_call_result *res = NULL;

    if (ctx) {
        memset(&ctx->ev, 0, sizeof(ctx->ev));
        ctx->ev.last = -1;
        opts.ledger = ctx->ledger;
        opts.cancel = ctx->cancel;
        opts.on_event = on_event;
        opts.event_data = &ctx->ev;
        opts.timeout_ms = ctx->timeout_ms;
    }
    assert_rein_ok(rein_call_run(c->reg, &in, &opts, &res, NULL), NULL);
    return res;
}

static void expect(rein_call_result *res, enum rein_call_code code, const char *says)
{
    if (rein_call_result_code(res) != code || !strstr(rein_call_result_message(res), says)) {
        print_error("got %s \"%s\", want %s \"%s\"\n",
                    rein_call_code_name(rein_call_result_code(res)) ?: "ok",
                    rein_call_result_message(res), rein_call_code_name(code) ?: "ok", says);
        fail();
    }
}

static const char *out_text(rein_call_result *res)
{
    return json_string_value(json_object_get(
        json_array_get(json_object_get(rein_call_result_output(res), "content"), 0), "text"));
}

static json_t *status_of(struct client *c, size_t i)
{
    json_t *all = rein_mcp_clients_status_json(c->set);
    json_t *one = json_incref(json_array_get(all, i));

    json_decref(all);
    return one;
}

/* ---- against rein itself over stdio ------------------------------------------------------ */

static void stdio_rein_server(void **state)
{
    char config[8192];
    struct client c;
    struct call_ctx ctx = {0};
    rein_call_result *res;
    json_t *st, *entry;

    (void)state;
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"self\":{\"command\":\"%s\",\"args\":[\"mcp\",\"serve\","
             "\"--skills\",\"%s\"],\"env\":{\"REIN_LOG\":\"error\"}}}}",
             test_rein_bin(), skills_dir());
    client_open(&c, config);
    assert_int_equal(c.ready, 1);
    st = status_of(&c, 0);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "ready");
    assert_string_equal(json_string_value(json_object_get(st, "protocolVersion")), "2025-11-25");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(st, "serverInfo"), "name")), "rein");
    json_decref(st);
    assert_string_equal(rein_mcp_clients_tool_id(c.set, "self", "echo"), "self__echo");
    const rein_tool *t = rein_registry_get(c.reg, "self__echo");
    assert_non_null(t);
    assert_string_equal(rein_tool_runner_kind(t), "mcp");
    assert_true(rein_tool_is_read_only(t));
    assert_false(rein_tool_is_destructive(rein_registry_get(c.reg, "self__test_simple_text")));

    ctx.ledger = rein_ledger_new();
    res = call(&c, "self__echo", "{\"text\":\"over stdio\"}", &ctx);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "over stdio");
    rein_call_result_free(res);
    /* Preflight against the server's own schema happens here, before anything is sent. */
    res = call(&c, "self__echo", "{\"text\":1}", &ctx);
    expect(res, REIN_CALL_INVALID_ARGUMENTS, "");
    assert_non_null(rein_call_result_invalid_json(res));
    rein_call_result_free(res);
    /* A remote failure keeps its code and message (rein serving rein). */
    res = call(&c, "self__test_error_handling", "{}", &ctx);
    expect(res, REIN_CALL_EXECUTION_FAILED, "This tool intentionally returns an error");
    rein_call_result_free(res);
    res = call(&c, "self__test_tool_with_progress", "{}", &ctx);
    expect(res, REIN_CALL_OK, "");
    assert_int_equal(ctx.ev.progress, 3);
    rein_call_result_free(res);
    res = call(&c, "self__test_tool_with_logging", "{}", &ctx);
    expect(res, REIN_CALL_OK, "");
    assert_int_equal(ctx.ev.logs, 3);
    rein_call_result_free(res);
    /* The ledger has every call with its outcome. */
    assert_int_equal(rein_ledger_count(ctx.ledger), 5);
    entry = rein_ledger_entry_json(ctx.ledger, 0);
    assert_string_equal(json_string_value(json_object_get(entry, "tool")), "self__echo");
    assert_string_equal(json_string_value(json_object_get(entry, "status")), "success");
    json_decref(entry);
    entry = rein_ledger_entry_json(ctx.ledger, 1);
    assert_string_equal(json_string_value(json_object_get(entry, "status")), "invalid");
    json_decref(entry);
    entry = rein_ledger_entry_json(ctx.ledger, 2);
    assert_string_equal(json_string_value(json_object_get(entry, "status")), "error");
    json_decref(entry);
    assert_true(rein_ledger_verify(ctx.ledger, false, 0));
    rein_ledger_free(ctx.ledger);
    client_close(&c);
}

/* ---- a scripted server ------------------------------------------------------------------- */

static char *fake_config(const char *name, const char *mode, const char *tools, const char *log,
                         const char *extra)
{
    char *text = NULL;

    assert_true(asprintf(&text,
                         "{\"mcpServers\":{\"%s\":{\"command\":\"%s\",\"args\":[\"%s\"%s%s],"
                         "\"env\":{\"FAKE_LOG\":\"%s\",\"FAKE_VAR\":\"v-${REIN_TEST_FAKE}\"}"
                         "%s%s}}}",
                         name, fake_bin(), mode, tools[0] ? "," : "", tools, log,
                         extra[0] ? "," : "", extra) > 0);
    return text;
}

static int log_count(const char *path, const char *word)
{
    size_t len;
    char *text = test_read_file(path, &len);
    int n = 0;

    for (char *p = text; p && (p = strstr(p, word)); p += strlen(word))
        n++;
    free(text);
    return n;
}

static void fake_server_behaviours(void **state)
{
    char *dir = test_tmpdir(), log[4200], *config;
    struct client c;
    struct call_ctx ctx = {0};
    rein_call_result *res;
    const json_t *sc;

    (void)state;
    snprintf(log, sizeof(log), "%s/fake.log", dir);
    setenv("REIN_TEST_FAKE", "expanded", 1);
    setenv("OPENAI_API_KEY", "sk-must-not-leak", 1);
    config = fake_config("fake", "ok",
                         "\"plain\",\"dotted.name\",\"progress\",\"fail\",\"pingback\","
                         "\"wrongid\",\"garbage\",\"env\",\"die\",\"huge\",\"slow\"",
                         log, "\"max_message_bytes\":1048576");
    client_open(&c, config);
    free(config);
    assert_int_equal(c.ready, 1);
    /* Names outside [A-Za-z0-9_-] are replaced; the wire keeps the original. */
    assert_non_null(rein_registry_get(c.reg, "fake__dotted_name"));
    res = call(&c, "fake__dotted_name", "{\"x\":\"1\"}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "dotted.name got {\"x\":\"1\"}");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(rein_call_result_output(res), "structuredContent"), "tool")),
        "dotted.name");
    rein_call_result_free(res);
    res = call(&c, "fake__progress", "{}", &ctx);
    expect(res, REIN_CALL_OK, "");
    assert_int_equal(ctx.ev.progress, 3);
    assert_int_equal(ctx.ev.logs, 1);
    assert_string_equal(ctx.ev.log, "warning almost there");
    rein_call_result_free(res);
    res = call(&c, "fake__fail", "{}", NULL);
    expect(res, REIN_CALL_EXECUTION_FAILED, "the fake failed");
    rein_call_result_free(res);
    /* The server asks ping, sampling, roots and elicitation mid-call: rein answers ping with
     * an empty result and refuses the rest with -32601 (the fake checks), the call completes. */
    res = call(&c, "fake__pingback", "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "pong ok");
    rein_call_result_free(res);
    res = call(&c, "fake__wrongid", "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "the right one");
    rein_call_result_free(res);
    res = call(&c, "fake__garbage", "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    rein_call_result_free(res);
    /* Only a minimal environment reaches the server, never rein's provider keys. */
    res = call(&c, "fake__env", "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    sc = json_object_get(rein_call_result_output(res), "structuredContent");
    assert_true(json_is_false(json_object_get(sc, "OPENAI_API_KEY")));
    assert_string_equal(json_string_value(json_object_get(sc, "FAKE_VAR")), "v-expanded");
    assert_true(strlen(json_string_value(json_object_get(sc, "PATH"))) > 0);
    rein_call_result_free(res);
    /* A timeout tells the server to stop. */
    ctx.timeout_ms = 300;
    res = call(&c, "fake__slow", "{}", &ctx);
    expect(res, REIN_CALL_TIMEOUT, "timed out");
    rein_call_result_free(res);
    for (int i = 0; i < 500 && log_count(log, "cancelled") < 1; i++)
        rein_sleep_ms(10);
    assert_int_equal(log_count(log, "cancelled"), 1);
    ctx.timeout_ms = 0;
    /* A server that dies mid-call: the call fails with its status and last words; the next
     * call starts it again. */
    res = call(&c, "fake__die", "{}", NULL);
    expect(res, REIN_CALL_EXECUTION_FAILED, "exited (status 3): fatal: fake crash");
    rein_call_result_free(res);
    res = call(&c, "fake__plain", "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    rein_call_result_free(res);
    assert_int_equal(log_count(log, "start"), 2);
    /* Too big a message closes the connection with a clear error. */
    res = call(&c, "fake__huge", "{}", NULL);
    expect(res, REIN_CALL_EXECUTION_FAILED, "larger than 1048576 bytes");
    rein_call_result_free(res);
    res = call(&c, "fake__plain", "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    rein_call_result_free(res);
    client_close(&c);
    unsetenv("OPENAI_API_KEY");
    unsetenv("REIN_TEST_FAKE");
    test_rmtree(dir);
    free(dir);
}

struct canceller {
    rein_cancel *cancel;
    const char *log;
};

static void *cancel_soon(void *arg)
{
    struct canceller *k = arg;

    /* The server has the call once it started waiting; give the request time to arrive. */
    rein_sleep_ms(200);
    rein_cancel_trigger(k->cancel, "the user pressed stop");
    return NULL;
}

static void fake_server_cancel(void **state)
{
    char *dir = test_tmpdir(), log[4200], *config;
    struct client c;
    struct call_ctx ctx = {0};
    struct canceller k;
    pthread_t th;
    rein_call_result *res;

    (void)state;
    snprintf(log, sizeof(log), "%s/fake.log", dir);
    config = fake_config("fake", "ok", "\"slow\"", log, "");
    client_open(&c, config);
    free(config);
    ctx.cancel = rein_cancel_new();
    k = (struct canceller){ctx.cancel, log};
    assert_int_equal(pthread_create(&th, NULL, cancel_soon, &k), 0);
    res = call(&c, "fake__slow", "{}", &ctx);
    pthread_join(th, NULL);
    expect(res, REIN_CALL_CANCELLED, "the user pressed stop");
    rein_call_result_free(res);
    for (int i = 0; i < 500 && log_count(log, "cancelled") < 1; i++)
        rein_sleep_ms(10);
    assert_int_equal(log_count(log, "cancelled"), 1);
    rein_cancel_unref(ctx.cancel);
    client_close(&c);
    test_rmtree(dir);
    free(dir);
}

struct held_call {
    struct client *c;
    rein_call_result *res;
};

static void *call_hold(void *arg)
{
    struct held_call *h = arg;

    h->res = call(h->c, "fake__hold", "{}", NULL);
    return NULL;
}

/* Responses out of order: hold's answer comes after release's, each reaches its own call. */
static void fake_server_out_of_order(void **state)
{
    char *dir = test_tmpdir(), log[4200], *config;
    struct client c;
    struct held_call h = {&c, NULL};
    rein_call_result *res;
    pthread_t th;

    (void)state;
    snprintf(log, sizeof(log), "%s/fake.log", dir);
    config = fake_config("fake", "ok", "\"hold\",\"release\"", log, "");
    client_open(&c, config);
    free(config);
    assert_int_equal(c.ready, 1);
    assert_int_equal(pthread_create(&th, NULL, call_hold, &h), 0);
    for (int i = 0; i < 1000 && log_count(log, "holding") < 1; i++)
        rein_sleep_ms(10);
    assert_int_equal(log_count(log, "holding"), 1);
    res = call(&c, "fake__release", "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "released");
    rein_call_result_free(res);
    pthread_join(th, NULL);
    expect(h.res, REIN_CALL_OK, "");
    assert_string_equal(out_text(h.res), "held");
    rein_call_result_free(h.res);
    client_close(&c);
    test_rmtree(dir);
    free(dir);
}

/* tools/list over several pages: every page's tools join the registry. */
static void fake_server_pages(void **state)
{
    char *config = fake_config("paged", "paged", "\"one\",\"two\",\"three\"", "/dev/null", "");
    struct client c;
    rein_call_result *res;

    (void)state;
    client_open(&c, config);
    free(config);
    assert_int_equal(c.ready, 1);
    assert_non_null(rein_registry_get(c.reg, "paged__one"));
    assert_non_null(rein_registry_get(c.reg, "paged__two"));
    assert_non_null(rein_registry_get(c.reg, "paged__three"));
    res = call(&c, "paged__three", "{\"x\":\"3\"}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "three got {\"x\":\"3\"}");
    rein_call_result_free(res);
    client_close(&c);
}

static void expect_failed(struct client *c, const char *says)
{
    json_t *st = status_of(c, 0);
    const char *error = json_string_value(json_object_get(st, "error"));

    assert_int_equal(c->ready, 0);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "failed");
    if (!error || !strstr(error, says)) {
        print_error("error \"%s\", want \"%s\"\n", error ? error : "(none)", says);
        fail();
    }
    assert_int_equal(json_array_size(json_object_get(st, "tools")), 0);
    json_decref(st);
    assert_int_equal(rein_registry_count(c->reg), 0);
}

static void bad_stdio_servers(void **state)
{
    struct client c;
    char *config;
    int64_t t0 = rein_now_ms();

    (void)state;
    config = fake_config("junk", "garbage_only", "", "", "\"connect_timeout_ms\":500");
    client_open(&c, config);
    free(config);
    expect_failed(&c, "not JSON-RPC, the last: Traceback");
    client_close(&c);
    config = fake_config("gone", "exit", "", "", "");
    client_open(&c, config);
    free(config);
    expect_failed(&c, "exited (status 4): fatal: cannot start");
    client_close(&c);
    config = fake_config("old", "version", "", "", "");
    client_open(&c, config);
    free(config);
    expect_failed(&c, "speaks protocol 1999-01-01");
    client_close(&c);
    /* tools/list that never ends: a cursor repeated, or page after page. */
    config = fake_config("loop", "pageloop", "\"a\",\"b\"", "", "");
    client_open(&c, config);
    free(config);
    expect_failed(&c, "with the cursor it was given");
    client_close(&c);
    config = fake_config("many", "pagemany", "\"a\"", "", "");
    client_open(&c, config);
    free(config);
    expect_failed(&c, "more than 100 pages of tools");
    client_close(&c);
    client_open(&c, "{\"mcpServers\":{\"none\":{\"command\":\"/nonexistent/mcp-server\"}}}");
    expect_failed(&c, "cannot run /nonexistent/mcp-server");
    client_close(&c);
    assert_true(rein_now_ms() - t0 < 20000);
}

/* ---- naming -------------------------------------------------------------------------------- */

static rein_err nothing(void *userdata, const struct rein_invocation *inv,
                        struct rein_tool_reply *reply, rein_error *err)
{
    (void)userdata;
    (void)inv;
    (void)err;
    reply->output = json_null();
    return REIN_OK;
}

static void naming_rule(void **state)
{
    char config[8192], reversed[8192], longname[100];
    struct client a, b;
    json_t *sa, *sb;
    rein_error err;

    (void)state;
    memset(longname, 'l', 80);
    longname[80] = '\0';
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{"
             "\"a.b\":{\"command\":\"%s\",\"args\":[\"ok\",\"x\",\"only-here\"]},"
             "\"a_b\":{\"command\":\"%s\",\"args\":[\"ok\",\"x\",\"%s\"]},"
             "\"s\":{\"command\":\"%s\",\"args\":[\"ok\",\"t\",\"u\"]}}}",
             fake_bin(), fake_bin(), longname, fake_bin());
    snprintf(reversed, sizeof(reversed),
             "{\"mcpServers\":{"
             "\"s\":{\"command\":\"%s\",\"args\":[\"ok\",\"t\",\"u\"]},"
             "\"a_b\":{\"command\":\"%s\",\"args\":[\"ok\",\"x\",\"%s\"]},"
             "\"a.b\":{\"command\":\"%s\",\"args\":[\"ok\",\"x\",\"only-here\"]}}}",
             fake_bin(), fake_bin(), longname, fake_bin());
    /* A skill already named s__t: the MCP tool that would take the name gets a hashed one. */
    for (int round = 0; round < 2; round++) {
        struct client *c = round ? &b : &a;
        json_t *cfg = json_loads(round ? reversed : config, 0, NULL);
        json_t *m = json_pack("{s:s, s:s, s:{s:s}}", "id", "s__t", "description", "a skill",
                              "parameters", "type", "object");
        c->set = rein_mcp_clients_new();
        c->reg = rein_registry_new(&err);
        assert_rein_ok(rein_registry_add_builtin(c->reg, m, nothing, NULL, NULL, &err), &err);
        json_decref(m);
        assert_rein_ok(rein_mcp_clients_add_config(c->set, cfg, NULL, &err), &err);
        json_decref(cfg);
        assert_int_equal(rein_mcp_clients_connect(c->set, 0), 3);
        assert_rein_ok(rein_mcp_clients_register(c->set, c->reg, &err), &err);
    }
    /* The same names whatever the order of the configuration. */
    for (size_t i = 0; i < rein_mcp_clients_count(a.set); i++) {
        const char *servers[] = {"a.b", "a_b", "s"};
        const char *tools[][2] = {{"x", "only-here"}, {"x", longname}, {"t", "u"}};
        for (int j = 0; j < 2; j++) {
            const char *ida = rein_mcp_clients_tool_id(a.set, servers[i], tools[i][j]);
            const char *idb = rein_mcp_clients_tool_id(b.set, servers[i], tools[i][j]);
            assert_non_null(ida);
            assert_non_null(idb);
            assert_string_equal(ida, idb);
            assert_true(strlen(ida) <= 64);
            assert_non_null(rein_registry_get(a.reg, ida));
        }
    }
    /* Unique names are plain. Servers whose names come out the same ("a.b", "a_b") could want
     * the same id for tools they have not listed yet, so all their tools get a hash of server
     * and tool; so does a tool whose plain name a skill has. */
    assert_true(
        strncmp(rein_mcp_clients_tool_id(a.set, "a.b", "only-here"), "a_b__only-here_", 15) == 0);
    assert_string_equal(rein_mcp_clients_tool_id(a.set, "s", "u"), "s__u");
    assert_true(strncmp(rein_mcp_clients_tool_id(a.set, "a.b", "x"), "a_b__x_", 7) == 0);
    assert_true(strncmp(rein_mcp_clients_tool_id(a.set, "a_b", "x"), "a_b__x_", 7) == 0);
    assert_string_not_equal(rein_mcp_clients_tool_id(a.set, "a.b", "x"),
                            rein_mcp_clients_tool_id(a.set, "a_b", "x"));
    assert_true(strncmp(rein_mcp_clients_tool_id(a.set, "s", "t"), "s__t_", 5) == 0);
    assert_string_equal(rein_tool_runner_kind(rein_registry_get(a.reg, "s__t")), "builtin");
    assert_int_equal(strlen(rein_mcp_clients_tool_id(a.set, "a_b", longname)), 64);
    sa = rein_mcp_clients_status_json(a.set);
    sb = rein_mcp_clients_status_json(b.set);
    assert_int_equal(json_array_size(sa), 3);
    json_decref(sa);
    json_decref(sb);
    client_close(&a);
    client_close(&b);
}

/* ---- over HTTP ----------------------------------------------------------------------------- */

struct http_server {
    rein_registry *reg;
    rein_mcp_server *mcp;
    rein_server *srv;
    char url[128];
};

static void http_server_start(struct http_server *h, const struct rein_mcp_server_opts *opts)
{
    rein_error err;

    h->reg = rein_registry_new(&err);
    assert_rein_ok(rein_skills_register_runners(h->reg, &err), &err);
    assert_rein_ok(rein_mcp_register_runner(h->reg, &err), &err);
    assert_rein_ok(rein_skills_register_builtins(h->reg, NULL, &err), &err);
    assert_rein_ok(rein_registry_load_dir(h->reg, skills_dir(), NULL, &err), &err);
    h->mcp = rein_mcp_server_new(h->reg, opts, &err);
    h->srv = rein_server_new(&err);
    assert_non_null(h->mcp);
    assert_non_null(h->srv);
    rein_server_set_port(h->srv, 0);
    assert_rein_ok(rein_mcp_server_add_routes(h->mcp, h->srv, &err), &err);
    assert_rein_ok(rein_server_start(h->srv, &err), &err);
    snprintf(h->url, sizeof(h->url), "http://127.0.0.1:%d/mcp", rein_server_port(h->srv));
}

static void http_server_stop(struct http_server *h)
{
    rein_server_free(h->srv);
    rein_mcp_server_free(h->mcp);
    rein_registry_free(h->reg);
}

static void http_rein_server(void **state)
{
    struct rein_mcp_server_opts opts = {
        .sse_close_ms = 150, .sse_retry_ms = 100, .session_idle_ms = 1500};
    struct http_server h;
    struct client c;
    struct call_ctx ctx = {0};
    rein_call_result *res;
    char config[512];
    int64_t t0;

    (void)state;
    setenv("TEST_RECONNECTION_SLEEP", "0.5", 1);
    http_server_start(&h, &opts);
    snprintf(config, sizeof(config), "{\"mcpServers\":{\"web\":{\"url\":\"%s\"}}}", h.url);
    client_open(&c, config);
    assert_int_equal(c.ready, 1);
    res = call(&c, "web__echo", "{\"text\":\"over http\"}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "over http");
    rein_call_result_free(res);
    /* The stream ends after 150 ms; the client comes back after the server's retry delay. */
    t0 = rein_now_ms();
    res = call(&c, "web__test_reconnection", "{}", &ctx);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "Reconnection test completed");
    assert_true(rein_now_ms() - t0 >= 500);
    rein_call_result_free(res);
    res = call(&c, "web__test_tool_with_progress", "{}", &ctx);
    expect(res, REIN_CALL_OK, "");
    assert_int_equal(ctx.ev.progress, 3);
    rein_call_result_free(res);
    res = call(&c, "web__test_tool_with_logging", "{}", &ctx);
    expect(res, REIN_CALL_OK, "");
    assert_int_equal(ctx.ev.logs, 3);
    rein_call_result_free(res);
    /* The session expires on the server; the client starts a new one and goes on. Between two
     * calls, and after a call's stream closes, the client must come back within the idle time:
     * 300 ms was too short under load (a resume found the session gone and the call failed). */
    rein_sleep_ms(1700);
    res = call(&c, "web__echo", "{\"text\":\"after expiry\"}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "after expiry");
    rein_call_result_free(res);
    res = call(&c, "web__test_image_content", "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(rein_call_result_output(res), "content"), 0), "type")),
        "image");
    rein_call_result_free(res);
    client_close(&c);
    http_server_stop(&h);
    unsetenv("TEST_RECONNECTION_SLEEP");
}

static void bad_http_servers(void **state)
{
    struct skill_http *s = skill_http_start();
    int port = test_free_port();
    struct client c;
    char config[512];

    (void)state;
    assert_non_null(s);
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"h\":{\"url\":\"http://127.0.0.1:%d/html\"}}}", skill_http_port(s));
    client_open(&c, config);
    expect_failed(&c, "answered text/html");
    client_close(&c);
    /* A server that asks the client things in the middle of a call's event stream: rein
     * POSTs its answers (ping: empty result; roots, sampling, elicitation: -32601) and the
     * call completes. */
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"asks\":{\"url\":\"http://127.0.0.1:%d/mcp-asks\"}}}",
             skill_http_port(s));
    client_open(&c, config);
    assert_int_equal(c.ready, 1);
    rein_call_result *res = call(&c, "asks__ask", "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "asked");
    rein_call_result_free(res);
    int good = 0, bad = 0;
    skill_http_mcp_answers(s, &good, &bad);
    assert_int_equal(good, 4);
    assert_int_equal(bad, 0);
    client_close(&c);
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"h\":{\"url\":\"http://127.0.0.1:%d/gateway\"}}}",
             skill_http_port(s));
    client_open(&c, config);
    expect_failed(&c, "HTTP 502");
    client_close(&c);
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"h\":{\"url\":\"http://127.0.0.1:%d/broken\"}}}",
             skill_http_port(s));
    client_open(&c, config);
    expect_failed(&c, "without a JSON-RPC response");
    client_close(&c);
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"h\":{\"url\":\"http://127.0.0.1:%d/hang\","
             "\"connect_timeout_ms\":400}}}",
             skill_http_port(s));
    client_open(&c, config);
    expect_failed(&c, "timed out");
    client_close(&c);
    snprintf(config, sizeof(config), "{\"mcpServers\":{\"h\":{\"url\":\"http://127.0.0.1:%d/\"}}}",
             port);
    client_open(&c, config);
    expect_failed(&c, "127.0.0.1");
    client_close(&c);
    skill_http_stop(s);
}

/* Waits (up to 20 s) until reg has a tool named id; false when it never came. */
static bool wait_for_tool(const rein_registry *reg, const char *id, bool present)
{
    for (int i = 0; i < 2000; i++) {
        if ((rein_registry_get(reg, id) != NULL) == present)
            return true;
        rein_sleep_ms(10);
    }
    return false;
}

/* The state of server i ("ready", "failed", ...), copied into out. */
static const char *state_of(struct client *c, size_t i, char *out, size_t size)
{
    json_t *st = status_of(c, i);

    snprintf(out, size, "%s", json_string_value(json_object_get(st, "state")) ?: "");
    json_decref(st);
    return out;
}

/*
 * Issue 20: a server down at start was never retried, one that exited came back only with
 * the next call, and notifications/tools/list_changed was not followed. Supervised servers
 * (rein_mcp_clients_start) connect in the background, come back, and keep their tools current.
 */
static void supervised_servers_come_and_go(void **state)
{
    char *dir = test_tmpdir(), log[4200], ready[4200], config[12000], st[32];
    struct client c = {0};
    rein_call_result *res;
    rein_error err;
    json_t *cfg, *s;

    (void)state;
    snprintf(log, sizeof(log), "%s/fake.log", dir);
    snprintf(ready, sizeof(ready), "%s/ready", dir);
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{"
             "\"live\":{\"command\":\"%s\",\"args\":[\"ok\",\"plain\",\"die\",\"grow\"],"
             "\"env\":{\"FAKE_LOG\":\"%s\"}},"
             "\"late\":{\"command\":\"%s\",\"args\":[\"flaky\",\"x\"],"
             "\"env\":{\"FAKE_READY\":\"%s\"}}}}",
             fake_bin(), log, fake_bin(), ready);
    cfg = json_loads(config, 0, NULL);
    c.set = rein_mcp_clients_new();
    c.reg = rein_registry_new(&err);
    assert_rein_ok(rein_mcp_clients_add_config(c.set, cfg, NULL, &err), &err);
    json_decref(cfg);
    assert_rein_ok(rein_mcp_clients_start(c.set, c.reg, &err), &err);
    /* It returned at once; the tools come when the server is ready. */
    assert_true(wait_for_tool(c.reg, "live__plain", true));
    /* late cannot start yet: failed, with the time of the next attempt. */
    for (int i = 0; i < 2000 && strcmp(state_of(&c, 1, st, sizeof(st)), "failed") != 0; i++)
        rein_sleep_ms(10);
    assert_string_equal(st, "failed");
    s = status_of(&c, 1);
    assert_true(json_is_integer(json_object_get(s, "retry_in_ms")));
    json_decref(s);
    free(test_write_file(dir, "ready", "yes"));
    assert_true(wait_for_tool(c.reg, "late__x", true));
    /* A server that dies is started again without waiting for a call. */
    res = call(&c, "live__die", "{}", NULL);
    expect(res, REIN_CALL_EXECUTION_FAILED, "fatal: fake crash");
    rein_call_result_free(res);
    for (int i = 0; i < 2000 && log_count(log, "start") < 2; i++)
        rein_sleep_ms(10);
    assert_int_equal(log_count(log, "start"), 2);
    /* Its tool list changes: the registry follows. */
    for (int i = 0; i < 2000 && strcmp(state_of(&c, 0, st, sizeof(st)), "ready") != 0; i++)
        rein_sleep_ms(10);
    res = call(&c, "live__grow", "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    rein_call_result_free(res);
    assert_true(wait_for_tool(c.reg, "live__grown", true));
    res = call(&c, "live__grown", "{\"x\":\"y\"}", NULL);
    expect(res, REIN_CALL_OK, "");
    rein_call_result_free(res);
    client_close(&c);
    test_rmtree(dir);
    free(dir);
}

/*
 * Issue 20: a per-server timeout_ms fired while progress arrived, and a top-level one was
 * ignored. timeout_ms is how long a server may say nothing about a call; progress renews it.
 */
static void timeouts_renewed_by_progress(void **state)
{
    char config[4096];
    struct client c = {0};
    rein_call_result *res;

    (void)state;
    snprintf(config, sizeof(config),
             "{\"timeout_ms\":300,\"mcpServers\":{\"fake\":{\"command\":\"%s\","
             "\"args\":[\"ok\",\"ticking\",\"slow\"]}}}",
             fake_bin());
    client_open(&c, config);
    assert_int_equal(c.ready, 1);
    /* The manifest's limit is the most a call may take (max_timeout_ms, ten minutes unless
     * said otherwise). */
    assert_int_equal(rein_tool_timeout_ms(rein_registry_get(c.reg, "fake__ticking")), 600000);
    /* A second of work, reporting every 100 ms, under a 300 ms limit of silence. */
    res = call(&c, "fake__ticking", "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "ticked");
    rein_call_result_free(res);
    /* Silence ends a call after the top-level 300 ms, not the default minute. */
    int64_t t0 = rein_now_ms();
    res = call(&c, "fake__slow", "{}", NULL);
    expect(res, REIN_CALL_TIMEOUT, "said nothing about tools/call for 300 ms");
    rein_call_result_free(res);
    assert_true(rein_now_ms() - t0 < 2900);
    client_close(&c);
    /* max_timeout_ms bounds a call however much progress it reports. */
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"fake\":{\"command\":\"%s\",\"args\":[\"ok\",\"ticking\"],"
             "\"timeout_ms\":300,\"max_timeout_ms\":600}}}",
             fake_bin());
    client_open(&c, config);
    res = call(&c, "fake__ticking", "{}", NULL);
    expect(res, REIN_CALL_TIMEOUT, "");
    rein_call_result_free(res);
    client_close(&c);
}

/* Issue 20: a remote tool's outputSchema was dropped and its structuredContent not checked. */
static void remote_output_schema(void **state)
{
    char config[1024];
    struct client c;
    rein_call_result *res;

    (void)state;
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"fake\":{\"command\":\"%s\",\"args\":[\"ok\",\"typed\","
             "\"mistyped\",\"plain\"]}}}",
             fake_bin());
    client_open(&c, config);
    assert_int_equal(c.ready, 1);
    assert_string_equal(
        json_string_value(json_object_get(
            rein_tool_output_schema(rein_registry_get(c.reg, "fake__typed")), "type")),
        "object");
    assert_null(rein_tool_output_schema(rein_registry_get(c.reg, "fake__plain")));
    res = call(&c, "fake__typed", "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    rein_call_result_free(res);
    res = call(&c, "fake__mistyped", "{}", NULL);
    expect(res, REIN_CALL_EXECUTION_FAILED, "does not match its output schema");
    assert_null(rein_call_result_output(res));
    rein_call_result_free(res);
    client_close(&c);
}

/* Servers that speak only 2026-07-28 (the stateless revision): initialize is refused, so the
 * client asks server/discover and sends every request with the revision's _meta (and, over
 * HTTP, its headers, without a session). The scripted server refuses a request without them. */
static void stateless_servers(void **state)
{
    struct rein_mcp_server_opts opts = {.stateless_only = true};
    struct http_server h;
    struct client c;
    struct call_ctx ctx = {0};
    rein_call_result *res;
    char config[512], *fake;
    json_t *st;

    (void)state;
    fake = fake_config("modern", "modern", "\"plain\"", "/dev/null", "");
    client_open(&c, fake);
    free(fake);
    assert_int_equal(c.ready, 1);
    st = status_of(&c, 0);
    assert_string_equal(json_string_value(json_object_get(st, "protocolVersion")), "2026-07-28");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(st, "serverInfo"), "name")),
        "fake-modern");
    json_decref(st);
    res = call(&c, "modern__plain", "{\"x\":\"1\"}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "plain got {\"x\":\"1\"}");
    rein_call_result_free(res);
    client_close(&c);

    http_server_start(&h, &opts);
    snprintf(config, sizeof(config), "{\"mcpServers\":{\"web\":{\"url\":\"%s\"}}}", h.url);
    client_open(&c, config);
    assert_int_equal(c.ready, 1);
    st = status_of(&c, 0);
    assert_string_equal(json_string_value(json_object_get(st, "protocolVersion")), "2026-07-28");
    json_decref(st);
    res = call(&c, "web__echo", "{\"text\":\"stateless\"}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "stateless");
    rein_call_result_free(res);
    /* A streamed call: progress arrives on the request's own stream. */
    res = call(&c, "web__test_tool_with_progress", "{}", &ctx);
    expect(res, REIN_CALL_OK, "");
    assert_int_equal(ctx.ev.progress, 3);
    rein_call_result_free(res);
    client_close(&c);
    http_server_stop(&h);
}

/* ---- a server's questions passed on (rein_mcp_clients_offer) ----------------------------- */

struct asker {
    int asked;
    char method[64], message[256];
};

/* The test's own "client": accepts forms with fixed values, answers sampling with YES. */
static rein_err test_ask(void *userdata, const char *key, const char *method, const json_t *params,
                         int64_t timeout_ms, json_t **result, rein_error *err)
{
    struct asker *a = userdata;

    (void)timeout_ms;
    (void)err;
    assert_true(strncmp(key, "mcp:", 4) == 0);
    a->asked++;
    snprintf(a->method, sizeof(a->method), "%s", method);
    snprintf(a->message, sizeof(a->message), "%s",
             json_string_value(json_object_get(params, "message")) ?: "");
    if (strcmp(method, "elicitation/create") == 0)
        *result = json_pack("{s:s, s:{s:s, s:s}}", "action", "accept", "content", "username", "ada",
                            "email", "ada@example.com");
    else
        *result = json_pack("{s:s, s:{s:s, s:s}, s:s}", "role", "assistant", "content", "type",
                            "text", "text", "YES", "model", "test");
    return REIN_OK;
}

static rein_call_result *call_asking(struct client *c, const char *tool, const char *args,
                                     struct asker *a)
{
    struct rein_call_input in = {.name = tool, .args_text = args, .args_len = strlen(args)};
    struct rein_call_opts opts = {.ask = a ? test_ask : NULL, .ask_data = a};
    rein_call_result *res = NULL;

    assert_rein_ok(rein_call_run(c->reg, &in, &opts, &res, NULL), NULL);
    return res;
}

static void open_offering(struct client *c, const char *config_json, unsigned offers)
{
    json_t *config = json_loads(config_json, 0, NULL);
    rein_error err;

    assert_non_null(config);
    c->set = rein_mcp_clients_new();
    c->reg = rein_registry_new(&err);
    assert_rein_ok(rein_mcp_clients_add_config(c->set, config, NULL, &err), &err);
    json_decref(config);
    rein_mcp_clients_offer(c->set, offers);
    c->ready = rein_mcp_clients_connect(c->set, 0);
    assert_rein_ok(rein_mcp_clients_register(c->set, c->reg, &err), &err);
}

/* The fixtures' test_elicitation and test_sampling (process skills asking their client) behind
 * prefix, over whatever chain of servers; each question must reach the test's asker. */
static void expect_relayed(struct client *c, const char *prefix)
{
    struct asker a = {0};
    char tool[128];
    rein_call_result *res;

    snprintf(tool, sizeof(tool), "%stest_elicitation", prefix);
    res = call_asking(c, tool, "{\"message\":\"Who are you?\"}", &a);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "User response: action=accept, content={\"username\": "
                                       "\"ada\", \"email\": \"ada@example.com\"}");
    rein_call_result_free(res);
    assert_int_equal(a.asked, 1);
    assert_string_equal(a.method, "elicitation/create");
    assert_string_equal(a.message, "Who are you?");
    snprintf(tool, sizeof(tool), "%stest_sampling", prefix);
    res = call_asking(c, tool, "{\"prompt\":\"Say YES\"}", &a);
    expect(res, REIN_CALL_OK, "");
    assert_string_equal(out_text(res), "LLM response: YES");
    rein_call_result_free(res);
    assert_int_equal(a.asked, 2);
    assert_string_equal(a.method, "sampling/createMessage");
    /* A call without an asker (an agent's turn): the server hears -32601, and why. */
    res = call_asking(c, tool, "{\"prompt\":\"Say YES\"}", NULL);
    expect(res, REIN_CALL_EXECUTION_FAILED, "-32601 no MCP client can be asked");
    rein_call_result_free(res);
}

static void questions_passed_on(void **state)
{
    struct rein_mcp_server_opts opts = {0};
    struct http_server h;
    struct client c;
    struct asker a = {0};
    char config[8192], *dir, *inner;
    rein_call_result *res;
    json_t *cfg;

    (void)state;
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"self\":{\"command\":\"%s\",\"args\":[\"mcp\",\"serve\","
             "\"--skills\",\"%s\"],\"env\":{\"REIN_LOG\":\"error\"}}}}",
             test_rein_bin(), skills_dir());
    /* Not offered (as before): the server is told rein declared no such capability. */
    open_offering(&c, config, 0);
    assert_int_equal(c.ready, 1);
    res = call_asking(&c, "self__test_elicitation", "{\"message\":\"Who are you?\"}", &a);
    expect(res, REIN_CALL_EXECUTION_FAILED, "(-32601)");
    rein_call_result_free(res);
    assert_int_equal(a.asked, 0);
    client_close(&c);

    /* stdio: the question arrives on the connection, outside any stream. */
    open_offering(&c, config, REIN_MCP_OFFER_ALL);
    assert_int_equal(c.ready, 1);
    expect_relayed(&c, "self__");
    client_close(&c);

    /* HTTP: on the call's own event stream. */
    http_server_start(&h, &opts);
    snprintf(config, sizeof(config), "{\"mcpServers\":{\"web\":{\"url\":\"%s\"}}}", h.url);
    open_offering(&c, config, REIN_MCP_OFFER_ALL);
    assert_int_equal(c.ready, 1);
    expect_relayed(&c, "web__");
    client_close(&c);
    http_server_stop(&h);

    /* `rein mcp serve` in front of another MCP server: the inner server's question goes to
     * the outer rein's client, which is this test. */
    dir = test_tmpdir();
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"inner\":{\"command\":\"%s\",\"args\":[\"mcp\",\"serve\","
             "\"--skills\",\"%s\"],\"env\":{\"REIN_LOG\":\"error\"}}}}",
             test_rein_bin(), skills_dir());
    inner = test_write_file(dir, "inner.json", config);
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"outer\":{\"command\":\"%s\",\"args\":[\"mcp\",\"serve\"],"
             "\"env\":{\"REIN_LOG\":\"error\",\"REIN_MCP_CONFIG\":\"%s\"}}}}",
             test_rein_bin(), inner);
    cfg = json_loads(config, 0, NULL);
    assert_non_null(cfg);
    c.set = rein_mcp_clients_new();
    c.reg = rein_registry_new(NULL);
    assert_rein_ok(rein_mcp_clients_add_config(c.set, cfg, NULL, NULL), NULL);
    json_decref(cfg);
    rein_mcp_clients_offer(c.set, REIN_MCP_OFFER_ALL);
    /* Supervised: the inner server's tools join the outer one in the background, and the
     * outer one says so (tools/list_changed). */
    assert_rein_ok(rein_mcp_clients_start(c.set, c.reg, NULL), NULL);
    assert_true(wait_for_tool(c.reg, "outer__inner__test_sampling", true));
    assert_true(wait_for_tool(c.reg, "outer__inner__test_elicitation", true));
    expect_relayed(&c, "outer__inner__");
    client_close(&c);
    free(inner);
    test_rmtree(dir);
    free(dir);
}

/* ---- questions while several calls run over stdio ------------------------------------------ */

/* What the concurrent calls share: their questions are held so that both calls surely run when
 * the second question arrives. */
struct crowd {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int asked, finished;
};

struct crowd_call {
    struct client *c;
    struct crowd *k;
    const void *asker;
    rein_call_result *res;
    rein_err rc;
};

/* Holds a question until another has come too (both calls asked) or a call has ended (its
 * question was refused), at most 10 s; then accepts the form. */
static rein_err crowd_ask(void *userdata, const char *key, const char *method, const json_t *params,
                          int64_t timeout_ms, json_t **result, rein_error *err)
{
    struct crowd *k = userdata;
    struct timespec until;

    (void)key;
    (void)method;
    (void)params;
    (void)timeout_ms;
    (void)err;
    until = rein__deadline_ts(CLOCK_REALTIME, 10000);
    pthread_mutex_lock(&k->mu);
    k->asked++;
    pthread_cond_broadcast(&k->cv);
    while (k->asked < 2 && k->finished == 0 &&
           pthread_cond_timedwait(&k->cv, &k->mu, &until) == 0) {
    }
    pthread_mutex_unlock(&k->mu);
    *result = json_pack("{s:s, s:{s:s, s:s}}", "action", "accept", "content", "username", "ada",
                        "email", "ada@example.com");
    return REIN_OK;
}

static void *crowd_call_main(void *arg)
{
    struct crowd_call *cc = arg;
    static const char args[] = "{\"message\":\"Who are you?\"}";
    struct rein_call_input in = {
        .name = "self__test_elicitation", .args_text = args, .args_len = sizeof(args) - 1};
    struct rein_call_opts opts = {.ask = crowd_ask, .ask_data = cc->k, .asker = cc->asker};

    cc->rc = rein_call_run(cc->c->reg, &in, &opts, &cc->res, NULL);
    pthread_mutex_lock(&cc->k->mu);
    cc->k->finished++;
    pthread_cond_broadcast(&cc->k->cv);
    pthread_mutex_unlock(&cc->k->mu);
    return NULL;
}

/* Two calls at once; returns how many succeeded. */
static int crowd_run(struct client *c, const void *asker1, const void *asker2,
                     struct crowd_call calls[2], struct crowd *k)
{
    pthread_t th[2];
    int ok = 0;

    *k = (struct crowd){0};
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    calls[0] = (struct crowd_call){.c = c, .k = k, .asker = asker1};
    calls[1] = (struct crowd_call){.c = c, .k = k, .asker = asker2};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, crowd_call_main, &calls[i]), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        assert_rein_ok(calls[i].rc, NULL);
        ok += rein_call_result_code(calls[i].res) == REIN_CALL_OK;
    }
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    return ok;
}

/*
 * Over stdio a server's question says nothing of the call it belongs to. When every running
 * call came from one client (the same rein_call_opts.asker), that client is asked; when they
 * came from different ones, the server hears -32603 rather than one client answering another's
 * question.
 */
static void stdio_questions_of_concurrent_calls(void **state)
{
    static char client_a, client_b; /* two clients: only their addresses count */
    struct crowd_call calls[2];
    struct crowd k;
    struct client c;
    char config[4096];

    (void)state;
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"self\":{\"command\":\"%s\",\"args\":[\"mcp\",\"serve\","
             "\"--skills\",\"%s\"],\"env\":{\"REIN_LOG\":\"error\"}}}}",
             test_rein_bin(), skills_dir());
    open_offering(&c, config, REIN_MCP_OFFER_ALL);
    assert_int_equal(c.ready, 1);

    assert_int_equal(crowd_run(&c, &client_a, &client_a, calls, &k), 2);
    assert_int_equal(k.asked, 2);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(out_text(calls[i].res),
                            "User response: action=accept, content={\"username\": \"ada\", "
                            "\"email\": \"ada@example.com\"}");
        rein_call_result_free(calls[i].res);
    }

    /* Two clients: a question that comes while both calls run is refused. One always does (the
     * first question asked is held until a call ends); the other may come while both still run
     * too, or once the first call has ended, when it is its call's alone. */
    int ok = crowd_run(&c, &client_a, &client_b, calls, &k);
    assert_true(ok <= 1);
    assert_int_equal(k.asked, ok);
    for (int i = 0; i < 2; i++) {
        if (rein_call_result_code(calls[i].res) != REIN_CALL_OK)
            expect(calls[i].res, REIN_CALL_EXECUTION_FAILED, "cannot tell which of its 2");
        rein_call_result_free(calls[i].res);
    }
    client_close(&c);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(stdio_rein_server),
    cmocka_unit_test(fake_server_behaviours),
    cmocka_unit_test(fake_server_cancel),
    cmocka_unit_test(bad_stdio_servers),
    cmocka_unit_test(naming_rule),
    cmocka_unit_test(http_rein_server),
    cmocka_unit_test(bad_http_servers),
    cmocka_unit_test(fake_server_out_of_order),
    cmocka_unit_test(fake_server_pages),
    cmocka_unit_test(supervised_servers_come_and_go),
    cmocka_unit_test(timeouts_renewed_by_progress),
    cmocka_unit_test(remote_output_schema),
    cmocka_unit_test(stateless_servers),
    cmocka_unit_test(questions_passed_on),
    cmocka_unit_test(stdio_questions_of_concurrent_calls),
};

REIN_TEST_MAIN(tests)
