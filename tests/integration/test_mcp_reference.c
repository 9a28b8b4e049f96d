/*
 * rein's MCP client against the reference servers @modelcontextprotocol/server-everything and
 * @modelcontextprotocol/server-filesystem (npm, pinned in tests/mcp/package.json, run by the
 * node@22 installed next to them), in a model turn: the scripted model server plays the model
 * over real HTTP through rein's OpenAI provider, proposes calls to the servers' tools (one of
 * them with bad arguments), and the agent loop runs every call through rein_call_run() with a
 * ledger, feeding results and the invalid payload back until the model answers.
 * Skipped (77) when the npm packages cannot be installed.
 */
/* rein-test-timeout: 300 */
#include "test.h"

#include "model_server.h"
#include "tcp_relay.h"

#include <signal.h>
#include <unistd.h>

static char mcp_dir[4096];

/* Installs the npm packages once (tests/mcp/install.sh); false when they cannot be. */
static bool npm_packages(void)
{
    char script[4200];
    const char *argv[] = {"bash", script, NULL};
    struct rein_proc_run_opts o = {.proc = {.argv = argv}, .timeout_ms = 600000};
    struct rein_proc_result res;
    rein_error err;
    bool ok;

    snprintf(mcp_dir, sizeof(mcp_dir), "%s/tests/mcp", REIN_SOURCE_DIR);
    snprintf(script, sizeof(script), "%s/install.sh", mcp_dir);
    if (rein_proc_run(&o, &res, &err) != REIN_OK)
        return false;
    ok = res.exit_code == 0;
    if (!ok)
        fprintf(stderr, "skipping: %s\n", res.err.ptr);
    rein_proc_result_release(&res);
    return ok;
}

struct turn {
    ms_server *ms;
    rein_provider_config *cfg;
    rein_provider *p;
    rein_agent *agent;
    rein_history *h;
    rein_agent_result *result;
};

static void turn_start(struct turn *t, const rein_registry *reg)
{
    rein_error err;

    memset(t, 0, sizeof(*t));
    t->ms = ms_start(0, &err);
    assert_non_null(t->ms);
    t->cfg = rein_provider_config_new();
    assert_rein_ok(rein_provider_config_set(t->cfg, "provider", "openai-compatible", &err), &err);
    assert_rein_ok(rein_provider_config_set_base_url(t->cfg, ms_openai_url(t->ms)), NULL);
    assert_rein_ok(rein_provider_config_set(t->cfg, "model", "gpt-4o", &err), &err);
    assert_rein_ok(rein_provider_config_set_api_key(t->cfg, "sk-test"), NULL);
    t->p = rein_provider_new(t->cfg, &err);
    assert_non_null(t->p);
    /* The model is offered every tool of the registry, MCP tools included. */
    t->agent = rein_agent_new(t->p, reg, &err);
    assert_non_null(t->agent);
    t->h = rein_history_new();
}

static void turn_stop(struct turn *t)
{
    rein_agent_result_free(t->result);
    rein_history_free(t->h);
    rein_agent_free(t->agent);
    rein_provider_free(t->p);
    rein_provider_config_free(t->cfg);
    ms_stop(t->ms);
}

/* One agent turn in auto mode; the ledger is the result's. */
static const char *run_turn(struct turn *t, const char *user)
{
    struct rein_agent_turn_opts opts = {.mode = REIN_AGENT_MODE_AUTO,
                                        .verification = REIN_AGENT_VERIFY_OFF};
    rein_error err;

    assert_rein_ok(rein_agent_run(t->agent, t->h, user, &opts, &t->result, &err), &err);
    assert_int_equal(rein_agent_result_stop(t->result), REIN_AGENT_STOP_FINAL_ANSWER);
    return rein_agent_result_text(t->result);
}

static void reference_servers_in_a_turn(void **state)
{
    char *dir, *config = NULL, script[8192], *content;
    rein_mcp_clients *set;
    rein_registry *reg;
    struct turn t;
    json_t *cfg, *entries;
    rein_error err;
    size_t len;

    (void)state;
    if (!npm_packages())
        skip();
    dir = test_tmpdir();
    free(test_write_file(dir, "notes.txt", "the answer is 42\n"));
    assert_true(asprintf(&config,
                         "{\"mcpServers\":{"
                         "\"everything\":{\"command\":\"%s/node_modules/node/bin/node\","
                         "\"args\":[\"%s/node_modules/@modelcontextprotocol/server-everything/"
                         "dist/index.js\",\"stdio\"]},"
                         "\"fs\":{\"command\":\"%s/node_modules/node/bin/node\","
                         "\"args\":[\"%s/node_modules/@modelcontextprotocol/server-filesystem/"
                         "dist/index.js\",\"%s\"]}}}",
                         mcp_dir, mcp_dir, mcp_dir, mcp_dir, dir) > 0);
    cfg = json_loads(config, 0, NULL);
    free(config);
    set = rein_mcp_clients_new();
    reg = rein_registry_new(&err);
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    assert_rein_ok(rein_mcp_clients_add_config(set, cfg, NULL, &err), &err);
    json_decref(cfg);
    assert_int_equal(rein_mcp_clients_connect(set, 60000), 2);
    assert_rein_ok(rein_mcp_clients_register(set, reg, &err), &err);
    entries = rein_mcp_clients_status_json(set);
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(json_array_size(json_object_get(json_array_get(entries, i), "problems")),
                         0);
    json_decref(entries);
    assert_non_null(rein_registry_get(reg, "everything__get-sum"));
    assert_non_null(rein_registry_get(reg, "fs__read_text_file"));
    assert_true(rein_tool_is_read_only(rein_registry_get(reg, "fs__read_text_file")));
    assert_true(rein_tool_is_destructive(rein_registry_get(reg, "fs__write_file")));

    turn_start(&t, reg);
    snprintf(script, sizeof(script),
             "{\"name\":\"mcp-reference\",\"api_key\":\"sk-test\",\"replies\":["
             /* 1: three calls at once, one with arguments the schema refuses */
             "{\"match\":{\"nth\":1},\"tool_calls\":["
             "{\"id\":\"call_sum\",\"name\":\"everything__get-sum\","
             "\"arguments\":\"{\\\"a\\\":2,\\\"b\\\":3}\"},"
             "{\"id\":\"call_read\",\"name\":\"fs__read_text_file\","
             "\"arguments\":\"{\\\"path\\\":\\\"%s/notes.txt\\\"}\"},"
             "{\"id\":\"call_echo\",\"name\":\"everything__echo\",\"arguments\":\"{}\"}]},"
             /* 2: the results came back: write a file from them, and fix the echo */
             "{\"match\":{\"tool_result_contains\":\"The sum of 2 and 3 is 5\"},"
             "\"tool_calls\":["
             "{\"id\":\"call_write\",\"name\":\"fs__write_file\",\"arguments\":"
             "\"{\\\"path\\\":\\\"%s/out.txt\\\",\\\"content\\\":\\\"5 and 42\\\"}\"},"
             "{\"id\":\"call_echo2\",\"name\":\"everything__echo\","
             "\"arguments\":\"{\\\"message\\\":\\\"fixed\\\"}\"}]},"
             /* 3: done */
             "{\"match\":{\"tool_result_contains\":\"Successfully wrote\"},"
             "\"text\":\"The sum is 5; I wrote it next to the answer, 42.\"}]}",
             dir, dir);
    assert_rein_ok(ms_script(t.ms, script, false, &err), &err);
    const char *answer = run_turn(&t, "Add 2 and 3, read notes.txt and write both to out.txt.");
    assert_string_equal(answer, "The sum is 5; I wrote it next to the answer, 42.");
    rein_ledger *ledger = rein_agent_result_ledger(t.result);

    /* What the servers did. */
    char path[4200];
    snprintf(path, sizeof(path), "%s/out.txt", dir);
    content = test_read_file(path, &len);
    assert_non_null(content);
    assert_string_equal(content, "5 and 42");
    free(content);
    /* What the model saw: the real results and the invalid payload for the bad call. */
    const struct ms_request *second = ms_request(t.ms, 1);
    assert_non_null(second);
    assert_non_null(strstr(second->body, "The sum of 2 and 3 is 5"));
    assert_non_null(strstr(second->body, "the answer is 42"));
    assert_non_null(strstr(second->body, "missing required field(s): message"));
    assert_non_null(strstr(ms_request(t.ms, 2)->body, "Echo: fixed"));

    /* The ledger has every call, none pending, each with its outcome. The calls of one reply
     * run in parallel, so entries are found by call id, not by position. */
    static const char *const want[][3] = {{"call_sum", "everything__get-sum", "success"},
                                          {"call_read", "fs__read_text_file", "success"},
                                          {"call_echo", "everything__echo", "invalid"},
                                          {"call_write", "fs__write_file", "success"},
                                          {"call_echo2", "everything__echo", "success"}};
    assert_int_equal(rein_ledger_count(ledger), 5);
    json_t *first = NULL;
    for (size_t w = 0; w < 5; w++) {
        bool found = false;
        for (size_t i = 0; i < 5 && !found; i++) {
            json_t *e = rein_ledger_entry_json(ledger, i);
            if (strcmp(json_string_value(json_object_get(e, "call_id")), want[w][0]) == 0) {
                found = true;
                assert_string_equal(json_string_value(json_object_get(e, "tool")), want[w][1]);
                assert_string_equal(json_string_value(json_object_get(e, "status")), want[w][2]);
                if (w == 0)
                    first = json_incref(e);
            }
            json_decref(e);
        }
        assert_true(found);
    }
    assert_true(rein_ledger_verify(ledger, false, 0));
    char *result = rein_json_dumps(json_object_get(first, "result"));
    assert_non_null(strstr(result, "The sum of 2 and 3 is 5"));
    rein_free(result);
    json_decref(first);
    turn_stop(&t);

    /* A path outside the server's folder: its own refusal, as a tool error. */
    struct rein_call_input in = {.name = "fs__read_text_file",
                                 .args_text = "{\"path\":\"/etc/passwd\"}",
                                 .args_len = strlen("{\"path\":\"/etc/passwd\"}")};
    rein_call_result *res = NULL;
    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, &err), &err);
    assert_int_equal(rein_call_result_code(res), REIN_CALL_EXECUTION_FAILED);
    assert_non_null(strstr(rein_call_result_message(res), "outside allowed directories"));
    rein_call_result_free(res);

    rein_registry_free(reg);
    rein_mcp_clients_free(set);
    test_rmtree(dir);
    free(dir);
}

/*
 * server-everything over mode (streamableHttp, sse) on a port of its own, which goes to *port;
 * NULL when it did not start listening. It takes its port from PORT: 0 has it bind one itself,
 * where one found free here could be taken by another test first. It names the port it was
 * told (0), and it says it listens even when it could not bind (express calls the listen
 * callback with the error), so the port is read from the socket it listens on.
 */
static rein_proc *everything_on(const char *mode, int *port)
{
    char node[4200], script[4200], text[4096];
    const char *argv[] = {node, script, mode, NULL};
    const char *env[] = {"PORT=0", "PATH=/usr/bin:/bin", NULL};
    struct rein_proc_opts po = {.argv = argv, .env = env};
    int64_t deadline = rein_now_ms() + 30000;
    rein_proc *p = NULL;
    rein_error err;
    ssize_t n;
    int code;

    snprintf(node, sizeof(node), "%s/node_modules/node/bin/node", mcp_dir);
    snprintf(script, sizeof(script),
             "%s/node_modules/@modelcontextprotocol/server-everything/dist/index.js", mcp_dir);
    assert_rein_ok(rein_proc_start(&po, &p, &err), &err);
    /* Up to 10 ms at a time for it to exit, then whether it listens. */
    while (rein_proc_wait(p, 10, &code) == REIN_ETIMEDOUT && rein_now_ms() < deadline) {
        *port = test_listen_port(rein_proc_pid(p));
        if (*port > 0)
            return p;
    }
    n = read(rein_proc_stderr_fd(p), text, sizeof(text) - 1);
    text[n > 0 ? n : 0] = '\0';
    print_error("server-everything %s did not start listening: %s\n", mode, text);
    rein_proc_free(p);
    return NULL;
}

static rein_proc *everything_http(int *port)
{
    return everything_on("streamableHttp", port);
}

static void everything_stop(rein_proc *p)
{
    int code;

    rein_proc_kill(p, SIGTERM);
    if (rein_proc_wait(p, 5000, &code) != REIN_OK) {
        rein_proc_kill(p, SIGKILL);
        assert_rein_ok(rein_proc_wait(p, -1, &code), NULL);
    }
    rein_proc_free(p);
}

static rein_call_result *echo(const rein_registry *reg, const char *text)
{
    char args[256];
    struct rein_call_input in = {.name = "everything__echo", .args_text = args};
    rein_call_result *res = NULL;
    rein_error err;

    snprintf(args, sizeof(args), "{\"message\":\"%s\"}", text);
    in.args_len = strlen(args);
    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, &err), &err);
    return res;
}

/*
 * Issue 20: after a remote server restarted and answered 400 to the old session, rein never
 * initialized again. The reference server, restarted under a supervised client, is used again
 * at the next call.
 */
static void everything_restarts_over_http(void **state)
{
    char config[512];
    rein_mcp_clients *set;
    rein_registry *reg;
    rein_call_result *res;
    rein_proc *srv;
    struct tcp_relay *relay;
    json_t *cfg;
    rein_error err;
    int port;

    (void)state;
    if (!npm_packages())
        skip();
    srv = everything_http(&port);
    assert_non_null(srv);
    /* The client reaches the server through a relay, whose port stays held while the server
     * restarts: the port the server had could be taken by another test before it came back
     * there. */
    relay = tcp_relay_start(port);
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"everything\":{\"url\":\"http://127.0.0.1:%d/mcp\"}}}",
             tcp_relay_port(relay));
    cfg = json_loads(config, 0, NULL);
    set = rein_mcp_clients_new();
    reg = rein_registry_new(&err);
    assert_rein_ok(rein_mcp_clients_add_config(set, cfg, NULL, &err), &err);
    json_decref(cfg);
    assert_rein_ok(rein_mcp_clients_start(set, reg, &err), &err);
    for (int i = 0; i < 3000 && !rein_registry_get(reg, "everything__echo"); i++)
        rein_sleep_ms(10);
    assert_non_null(rein_registry_get(reg, "everything__echo"));
    res = echo(reg, "before");
    assert_true(rein_call_result_ok(res));
    rein_call_result_free(res);
    /* The server restarts: it knows no session, and says so with a 400. */
    tcp_relay_target(relay, 0);
    everything_stop(srv);
    srv = everything_http(&port);
    assert_non_null(srv);
    tcp_relay_target(relay, port);
    res = echo(reg, "after");
    if (!rein_call_result_ok(res))
        print_error("echo after the restart: %s\n", rein_call_result_message(res));
    assert_true(rein_call_result_ok(res));
    char *out = rein_json_dumps(rein_call_result_output(res));
    assert_non_null(strstr(out, "Echo: after"));
    rein_free(out);
    rein_call_result_free(res);
    rein_mcp_clients_free(set);
    rein_registry_free(reg);
    tcp_relay_stop(relay);
    everything_stop(srv);
}

/*
 * The legacy HTTP+SSE transport (2024-11-05) against the reference server's own: the endpoint
 * event, messages POSTed there, answers on the stream; the tools are used like any others.
 */
static void everything_over_legacy_sse(void **state)
{
    char config[512];
    rein_mcp_clients *set;
    rein_registry *reg;
    rein_call_result *res;
    rein_proc *srv;
    json_t *cfg, *status;
    rein_error err;
    int port;

    (void)state;
    if (!npm_packages())
        skip();
    srv = everything_on("sse", &port);
    assert_non_null(srv);
    snprintf(config, sizeof(config),
             "{\"mcpServers\":{\"everything\":{\"type\":\"sse\","
             "\"url\":\"http://127.0.0.1:%d/sse\"}}}",
             port);
    cfg = json_loads(config, 0, NULL);
    set = rein_mcp_clients_new();
    reg = rein_registry_new(&err);
    assert_rein_ok(rein_mcp_clients_add_config(set, cfg, NULL, &err), &err);
    json_decref(cfg);
    assert_int_equal(rein_mcp_clients_connect(set, 20000), 1);
    assert_rein_ok(rein_mcp_clients_register(set, reg, &err), &err);
    status = rein_mcp_clients_status_json(set);
    assert_string_equal(json_string_value(json_object_get(json_array_get(status, 0), "transport")),
                        "sse");
    json_decref(status);
    res = echo(reg, "over sse");
    assert_true(rein_call_result_ok(res));
    char *out = rein_json_dumps(rein_call_result_output(res));
    assert_non_null(strstr(out, "Echo: over sse"));
    rein_free(out);
    rein_call_result_free(res);
    /* The server goes away: the stream ends, and a call fails instead of waiting. */
    everything_stop(srv);
    res = echo(reg, "gone");
    assert_false(rein_call_result_ok(res));
    rein_call_result_free(res);
    rein_registry_free(reg);
    rein_mcp_clients_free(set);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(everything_over_legacy_sse),
    cmocka_unit_test(reference_servers_in_a_turn),
    cmocka_unit_test(everything_restarts_over_http),
};

REIN_TEST_MAIN(tests)
