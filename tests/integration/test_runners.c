/*
 * Integration tests for the process and HTTP runners (src/skills/runner_*.c), through the call
 * pipeline, against real programs (tests/support/bin/skill_proc) and a real HTTP server on
 * loopback (tests/support/skill_http.c): the call on stdin and in the POST body, results and
 * normalized errors read back, and every way an external skill can misbehave: hanging (the
 * timeout kills the whole process group), crashing, printing garbage, flooding stdout, failing
 * with a message on stderr, answering HTML, hanging up, answering too much.
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include "skill_http.h"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

static rein_registry *registry_with(const char *manifest, const char *base_dir)
{
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    json_t *m = rein_json_parse(manifest, strlen(manifest), 0, &err);

    assert_non_null(reg);
    assert_rein_ok(rein_skills_register_runners(reg, &err), &err);
    assert_non_null(m);
    assert_rein_ok(rein_registry_add_manifest(reg, m, base_dir, "test", &err), &err);
    json_decref(m);
    return reg;
}

/* A registry with one process skill running skill_proc in mode, and extra runner members. */
static rein_registry *proc_skill(const char *mode, const char *extra_args, const char *runner_extra,
                                 int timeout_ms)
{
    char manifest[4096];

    snprintf(manifest, sizeof(manifest),
             "{\"id\":\"ext\",\"description\":\"an external skill\",\"timeout_ms\":%d,"
             "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}},"
             "\"runner\":{\"kind\":\"process\",\"command\":[\"%s/skill_proc\",\"%s\"%s]%s}}",
             timeout_ms, test_bin_dir(), mode, extra_args ? extra_args : "",
             runner_extra ? runner_extra : "");
    return registry_with(manifest, NULL);
}

static rein_call_result *run(const rein_registry *reg, const char *args, rein_cancel *cancel)
{
    struct rein_call_input in = {.call_id = "call_42",
                                 .name = "ext",
                                 .args_text = args,
                                 .args_len = strlen(args),
                                 .trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"};
    struct rein_call_opts opts = {.cancel = cancel};
    rein_call_result *res = NULL;

    assert_rein_ok(rein_call_run(reg, &in, &opts, &res, NULL), NULL);
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

/* ---- process ---- */

static void test_process_gets_the_call_and_answers(void **state)
{
    rein_registry *reg;
    rein_call_result *res;
    const json_t *out, *callj, *env;

    (void)state;
    /* Secrets by allowlist: a skill gets a documented base of rein's environment, what its
     * manifest's env_allow names and its own env, nothing else; rein's REIN_* never. */
    setenv("OPENAI_API_KEY", "sk-must-not-leak", 1);
    setenv("TEST_GH_TOKEN", "ghp-handed-over", 1);
    setenv("DATABASE_URL", "postgres://u:pw@db/x", 1);
    setenv("PGPASSWORD", "pw", 1);
    setenv("GITHUB_PAT", "ghp-not-asked-for", 1);
    setenv("SECRET", "s", 1);
    setenv("openai_api_key", "sk-lower", 1);
    setenv("REIN_STORE", "redis://:password@127.0.0.1:1", 1);
    setenv("REIN_API_KEYS", "k1", 1);
    reg = proc_skill("echo", NULL,
                     ",\"env\":{\"SKILL_GREETING\":\"bonjour\","
                     "\"HANDED_TOKEN\":\"${TEST_GH_TOKEN}\"},\"env_allow\":[\"TEST_GH_TOKEN\"]",
                     10000);
    res = run(reg, "{\"city\": \"Paris\"}", NULL);
    out = rein_call_result_output(res);
    expect(res, REIN_CALL_OK, "");
    callj = json_object_get(out, "call");
    env = json_object_get(out, "env");
    assert_string_equal(json_string_value(json_object_get(callj, "tool")), "ext");
    assert_string_equal(json_string_value(json_object_get(callj, "call_id")), "call_42");
    assert_string_equal(json_string_value(json_object_get(callj, "trace_id")),
                        "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(callj, "arguments"), "city")), "Paris");
    assert_true(json_integer_value(json_object_get(callj, "timeout_ms")) > 0);
    assert_string_equal(json_string_value(json_object_get(env, "REIN_TOOL")), "ext");
    assert_string_equal(json_string_value(json_object_get(env, "REIN_CALL_ID")), "call_42");
    assert_string_equal(json_string_value(json_object_get(env, "SKILL_GREETING")), "bonjour");
    assert_string_equal(json_string_value(json_object_get(env, "OPENAI_API_KEY")), "");
    assert_string_equal(json_string_value(json_object_get(env, "HANDED_TOKEN")), "ghp-handed-over");
    for (const char *const *v =
             (const char *const[]){"DATABASE_URL", "PGPASSWORD", "GITHUB_PAT", "SECRET",
                                   "openai_api_key", "REIN_STORE", "REIN_API_KEYS", NULL};
         *v; v++)
        assert_string_equal(json_string_value(json_object_get(env, *v)), "");
    assert_string_not_equal(json_string_value(json_object_get(env, "PATH")), "");
    rein_call_result_free(res);
    rein_registry_free(reg);
    unsetenv("REIN_STORE");
    unsetenv("REIN_API_KEYS");
}

/* Runs the call with args on reg's stdin-echoing skill and checks that the call document the
 * skill read holds want. */
static void expect_stdin_has(const rein_registry *reg, const char *args, const char *want)
{
    rein_call_result *res = run(reg, args, NULL);
    const char *in;

    expect(res, REIN_CALL_OK, "");
    in = json_string_value(json_object_get(rein_call_result_output(res), "stdin"));
    assert_non_null(in);
    if (!strstr(in, want)) {
        print_error("the skill read %s, without %s\n", in, want);
        fail();
    }
    /* The result still hands out the arguments as a value. */
    assert_true(json_is_object(rein_call_result_args(res)));
    rein_call_result_free(res);
}

/* The model's validated text reaches a process as it was sent (decision 0056: no jansson tree
 * is made for it): spacing and number forms kept. Text with a line break in it, which would
 * split a line-framed call document, goes as the compact form of its tree instead. */
static void test_process_gets_the_models_own_text(void **state)
{
    rein_registry *reg = proc_skill("stdin", NULL, NULL, 10000);
    rein_call_result *res;

    (void)state;
    expect_stdin_has(reg, "{\"city\": \"Paris\",  \"n\": 1.50, \"big\": 1e3}",
                     "\"arguments\":{\"city\": \"Paris\",  \"n\": 1.50, \"big\": 1e3}");
    expect_stdin_has(reg, "{\"city\":\n \"Paris\"}", "\"arguments\":{\"city\":\"Paris\"}");
    /* Invalid arguments: the tree's errors, word for word. */
    res = run(reg, "{\"city\": 7}", NULL);
    expect(res, REIN_CALL_INVALID_ARGUMENTS, "/city: must be string, got integer 7");
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* ${VAR} in a manifest reads only what env_allow names, and never rein's own variables: such
 * a manifest is refused when it is loaded, naming the variable. */
static void test_manifest_env_reads_only_allowed_variables(void **state)
{
    static const char *const bad[] = {
        ",\"env\":{\"K\":\"${GITHUB_PAT}\"}",
        ",\"env\":{\"K\":\"${REIN_API_KEYS}\"},\"env_allow\":[\"REIN_API_KEYS\"]",
        ",\"env_allow\":[\"REIN_STORE\"]",
    };
    char manifest[4096];
    rein_error err;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rein_registry *reg = rein_registry_new(&err);
        json_t *m;
        assert_rein_ok(rein_skills_register_runners(reg, &err), &err);
        snprintf(manifest, sizeof(manifest),
                 "{\"id\":\"ext\",\"description\":\"x\",\"parameters\":{\"type\":\"object\"},"
                 "\"runner\":{\"kind\":\"process\",\"command\":[\"true\"]%s}}",
                 bad[i]);
        m = rein_json_parse(manifest, strlen(manifest), 0, &err);
        assert_non_null(m);
        rein_error_clear(&err);
        assert_int_not_equal(rein_registry_add_manifest(reg, m, NULL, "test", &err), REIN_OK);
        assert_non_null(strstr(err.msg, i == 0 ? "GITHUB_PAT" : "REIN_"));
        json_decref(m);
        rein_registry_free(reg);
    }
}

static void test_process_reports_its_own_normalized_error(void **state)
{
    rein_registry *reg = proc_skill("error", NULL, NULL, 10000);
    rein_call_result *res = run(reg, "{\"city\": \"Atlantis\"}", NULL);
    const json_t *p;

    (void)state;
    expect(res, REIN_CALL_INVALID_ARGUMENTS, "city is not known");
    p = rein_call_result_invalid_json(res);
    assert_non_null(p);
    assert_string_equal(json_string_value(json_object_get(p, "error")),
                        "Invalid arguments: city is not known");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(p, "errors"), 0), "path")),
        "/city");
    rein_call_result_free(res);
    rein_registry_free(reg);
}

struct events_seen {
    int progress, logs;
    double last_progress, last_total;
    char message[64], level[16], logger[16], data[64];
};

static void collect_event(void *ud, const struct rein_call_event *ev)
{
    struct events_seen *seen = ud;

    assert_string_equal(rein_tool_id(ev->tool), "ext");
    assert_string_equal(ev->call_id, "call_42");
    if (ev->kind == REIN_CALL_EVENT_PROGRESS) {
        seen->progress++;
        seen->last_progress = ev->progress;
        seen->last_total = ev->total;
        snprintf(seen->message, sizeof(seen->message), "%s", ev->message ? ev->message : "");
    } else {
        seen->logs++;
        snprintf(seen->level, sizeof(seen->level), "%s", ev->level);
        snprintf(seen->logger, sizeof(seen->logger), "%s", ev->logger ? ev->logger : "");
        snprintf(seen->data, sizeof(seen->data), "%s", json_string_value(ev->data) ?: "");
    }
}

/* MCP notification lines on stderr reach on_event as they come; other lines do not. */
static void test_process_reports_progress_and_logs_as_events(void **state)
{
    rein_registry *reg = proc_skill("events", NULL, NULL, 10000);
    struct rein_call_input in = {
        .call_id = "call_42", .name = "ext", .args_text = "{}", .args_len = 2};
    struct events_seen seen = {0};
    struct rein_call_opts opts = {.on_event = collect_event, .event_data = &seen};
    rein_call_result *res = NULL;

    (void)state;
    assert_rein_ok(rein_call_run(reg, &in, &opts, &res, NULL), NULL);
    expect(res, REIN_CALL_OK, "");
    assert_true(json_is_true(json_object_get(rein_call_result_output(res), "done")));
    assert_int_equal(seen.progress, 2);
    assert_true(seen.last_progress == 100 && seen.last_total == 100);
    assert_string_equal(seen.message, "done");
    assert_int_equal(seen.logs, 1);
    assert_string_equal(seen.level, "info");
    assert_string_equal(seen.logger, "skill");
    assert_string_equal(seen.data, "half way");
    rein_call_result_free(res);
    /* Without a listener the same skill runs the same way. */
    res = run(reg, "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* The answer i of the ask mode's output (an answer line rein wrote on the skill's stdin). */
static const json_t *answer_of(const rein_call_result *res, size_t i)
{
    return json_array_get(json_object_get(rein_call_result_output(res), "answers"), i);
}

static void expect_ask_error(const rein_call_result *res, size_t i, const char *id, int code,
                             const char *says)
{
    const json_t *a = answer_of(res, i), *e = json_object_get(a, "error");

    if (!e || json_integer_value(json_object_get(e, "code")) != code ||
        !strstr(json_string_value(json_object_get(e, "message")) ?: "", says) ||
        strcmp(json_string_value(json_object_get(a, "id")) ?: "", id) != 0) {
        char *t = json_dumps(a, 0);
        print_error("answer %zu: %s, want error %d saying \"%s\"\n", i, t ? t : "null", code, says);
        free(t);
        fail();
    }
}

/* A skill that may ask the client, run where no client can be asked (rein chat, an agent's
 * turn, POST /skills/{id}/invoke): each request is answered at once with -32601 and a reason,
 * and the skill goes on to finish normally. */
static void test_process_asks_outside_mcp(void **state)
{
    rein_registry *reg = proc_skill("ask",
                                    ",\"sampling/createMessage\",\"tools/list\","
                                    "\"elicitation/create\"",
                                    ",\"client_requests\":[\"sampling\"]", 10000);
    rein_call_result *res = run(reg, "{}", NULL);

    (void)state;
    expect(res, REIN_CALL_OK, "");
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(rein_call_result_output(res), "call"), "client_requests")),
                     1);
    expect_ask_error(res, 0, "q0", -32601, "does not come from an MCP client");
    expect_ask_error(res, 1, "q1", -32601, "not tools/list");
    expect_ask_error(res, 2, "q2", -32601, "does not list \"elicitation\"");
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* Without client_requests a skill's stdin ends after the call, as it always did: a request
 * line on stderr is not answered (the skill reads the end of its input). */
static void test_process_that_may_not_ask(void **state)
{
    rein_registry *reg = proc_skill("ask", ",\"sampling/createMessage\"", NULL, 10000);
    rein_call_result *res = run(reg, "{}", NULL);

    (void)state;
    expect(res, REIN_CALL_OK, "");
    assert_true(json_is_null(answer_of(res, 0)));
    assert_null(
        json_object_get(json_object_get(rein_call_result_output(res), "call"), "client_requests"));
    rein_call_result_free(res);
    rein_registry_free(reg);
}

struct asked {
    int calls;
    int64_t timeout_ms;
    char method[64];
    int asked; /* params.asked of the last request */
};

/* An embedding program's own client (rein_call_opts.ask): answers sampling with its own text,
 * refuses elicitation as a client without the capability would. */
static rein_err embedder_ask(void *ud, const char *key, const char *method, const json_t *params,
                             int64_t timeout_ms, json_t **result, rein_error *err)
{
    struct asked *a = ud;

    assert_string_equal(key, a->calls == 0 ? "q0" : "q1"); /* the skill's request ids */
    a->calls++;
    a->timeout_ms = timeout_ms;
    a->asked = (int)json_integer_value(json_object_get(params, "asked"));
    snprintf(a->method, sizeof(a->method), "%s", method);
    if (strcmp(method, "sampling/createMessage") != 0)
        return rein_error_set(err, REIN_ENOTSUP, "this client does not do %s", method);
    *result = json_pack("{s:s, s:{s:s, s:s}}", "role", "assistant", "content", "type", "text",
                        "text", "from the embedder");
    return REIN_OK;
}

/* A program embedding librein answers its skills' questions through rein_call_opts.ask,
 * within the call's remaining time; its refusal reaches the skill as -32601. */
static void test_process_asks_the_embedders_client(void **state)
{
    rein_registry *reg = proc_skill("ask", ",\"sampling/createMessage\",\"elicitation/create\"",
                                    ",\"client_requests\":[\"sampling\",\"elicitation\"]", 10000);
    struct rein_call_input in = {
        .call_id = "call_42", .name = "ext", .args_text = "{}", .args_len = 2};
    struct asked a = {0};
    struct rein_call_opts opts = {.ask = embedder_ask, .ask_data = &a};
    rein_call_result *res = NULL;

    (void)state;
    assert_rein_ok(rein_call_run(reg, &in, &opts, &res, NULL), NULL);
    expect(res, REIN_CALL_OK, "");
    const json_t *first = answer_of(res, 0);
    assert_string_equal(json_string_value(json_object_get(first, "id")), "q0");
    assert_string_equal(json_string_value(json_object_get(first, "jsonrpc")), "2.0");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(first, "result"), "content"), "text")),
                        "from the embedder");
    expect_ask_error(res, 1, "q1", -32601, "does not do elicitation/create");
    assert_int_equal(a.calls, 2);
    assert_int_equal(a.asked, 1);
    assert_true(a.timeout_ms > 0 && a.timeout_ms <= 10000);
    rein_call_result_free(res);
    rein_registry_free(reg);
}

static void test_process_that_hangs_is_killed_with_its_group(void **state)
{
    char *dir = test_tmpdir(), extra[4300], *pidfile, pidpath[4200];
    rein_registry *reg;
    rein_call_result *res;
    int64_t t0 = rein_now_ms();
    size_t len;

    (void)state;
    snprintf(pidpath, sizeof(pidpath), "%s/grandchild.pid", dir);
    snprintf(extra, sizeof(extra), ",\"%s\"", pidpath);
    /* Long enough for the skill to start its grandchild on a loaded machine (with 300 ms the
     * call could time out before the grandchild wrote its pid file). */
    reg = proc_skill("hang", extra, NULL, 2000);
    res = run(reg, "{}", NULL);
    expect(res, REIN_CALL_TIMEOUT, "process group were killed");
    assert_int_equal(rein_call_result_status(res), REIN_CALL_ERROR);
    assert_true(rein_now_ms() - t0 < 10000);
    pidfile = test_read_file(pidpath, &len);
    assert_non_null(pidfile);
    pid_t grandchild = (pid_t)strtol(pidfile, NULL, 10);
    free(pidfile);
    for (int i = 0; i < 200 && test_pid_alive(grandchild); i++)
        rein_sleep_ms(10);
    assert_false(test_pid_alive(grandchild));
    rein_call_result_free(res);
    rein_registry_free(reg);
    test_rmtree(dir);
    free(dir);
}

static void *cancel_later(void *arg)
{
    rein_sleep_ms(100);
    rein_cancel_trigger(arg, "turn cancelled");
    return NULL;
}

static void test_cancel_stops_a_process(void **state)
{
    rein_registry *reg = proc_skill("hang", NULL, NULL, 30000);
    rein_cancel *c = rein_cancel_new();
    pthread_t t;
    int64_t t0 = rein_now_ms();
    rein_call_result *res;

    (void)state;
    assert_int_equal(pthread_create(&t, NULL, cancel_later, c), 0);
    res = run(reg, "{}", c);
    pthread_join(t, NULL);
    expect(res, REIN_CALL_CANCELLED, "turn cancelled");
    assert_true(rein_now_ms() - t0 < 10000);
    rein_call_result_free(res);
    rein_cancel_unref(c);
    rein_registry_free(reg);
}

static void test_process_misbehaviour(void **state)
{
    static const struct {
        const char *mode;
        enum rein_call_code code;
        const char *says;
    } cases[] = {
        {"crash", REIN_CALL_EXECUTION_FAILED, "killed by signal 11 (SIGSEGV)"},
        {"garbage", REIN_CALL_EXECUTION_FAILED, "not one JSON document"},
        {"flood", REIN_CALL_EXECUTION_FAILED, "more than 65536 bytes"},
        {"fail", REIN_CALL_EXECUTION_FAILED, "exited with status 3: warming up fatal: the index"},
        {"nothing", REIN_CALL_EXECUTION_FAILED, "printed nothing"},
        {"two", REIN_CALL_EXECUTION_FAILED, "not one JSON document"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rein_registry *reg = proc_skill(cases[i].mode, NULL, ",\"max_output_bytes\":65536", 10000);
        rein_call_result *res = run(reg, "{}", NULL);
        expect(res, cases[i].code, cases[i].says);
        /* Failures of a skill that ran are errors, not invalid calls: no invalid payload. */
        assert_null(rein_call_result_invalid_json(res));
        if (strcmp(cases[i].mode, "fail") == 0)
            assert_non_null(strstr(rein_call_result_log(res), "the index is corrupt"));
        rein_call_result_free(res);
        rein_registry_free(reg);
    }
}

static void test_process_paths_are_relative_to_the_manifest(void **state)
{
    char *dir = test_tmpdir(), manifest[4096], target[4200], linkpath[4200];
    rein_registry *reg;
    rein_call_result *res;
    const char *cwd;

    (void)state;
    /* ./bin/skill is the skill's own program; cwd "work" is a folder next to the manifest. */
    snprintf(target, sizeof(target), "%s/skill_proc", test_bin_dir());
    snprintf(linkpath, sizeof(linkpath), "%s/bin", dir);
    assert_int_equal(mkdir(linkpath, 0755), 0);
    snprintf(linkpath, sizeof(linkpath), "%s/bin/skill", dir);
    assert_int_equal(symlink(target, linkpath), 0);
    snprintf(linkpath, sizeof(linkpath), "%s/work", dir);
    assert_int_equal(mkdir(linkpath, 0755), 0);
    snprintf(manifest, sizeof(manifest),
             "{\"id\":\"ext\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"},"
             "\"runner\":{\"kind\":\"process\",\"command\":[\"./bin/skill\",\"cwd\"],"
             "\"cwd\":\"work\"}}");
    reg = registry_with(manifest, dir);
    res = run(reg, "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    cwd = json_string_value(json_object_get(rein_call_result_output(res), "cwd"));
    assert_non_null(cwd);
    assert_non_null(strstr(cwd, "/work"));
    rein_call_result_free(res);
    rein_registry_free(reg);
    /* A program that does not exist is the skill's failure. */
    reg =
        registry_with("{\"id\":\"ext\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"},"
                      "\"runner\":{\"kind\":\"process\",\"command\":[\"./missing\"]}}",
                      dir);
    res = run(reg, "{}", NULL);
    expect(res, REIN_CALL_EXECUTION_FAILED, "cannot run");
    rein_call_result_free(res);
    rein_registry_free(reg);
    test_rmtree(dir);
    free(dir);
}

/* ---- HTTP ---- */

static rein_registry *http_skill(const struct skill_http *srv, const char *path, int timeout_ms,
                                 const char *extra)
{
    char manifest[2048];

    snprintf(manifest, sizeof(manifest),
             "{\"id\":\"ext\",\"description\":\"d\",\"timeout_ms\":%d,"
             "\"parameters\":{\"type\":\"object\"},"
             "\"runner\":{\"kind\":\"http\",\"url\":\"http://127.0.0.1:%d%s\"%s}}",
             timeout_ms, srv ? skill_http_port(srv) : test_free_port(), path, extra ? extra : "");
    return registry_with(manifest, NULL);
}

static void test_http_posts_the_call_and_reads_the_result(void **state)
{
    struct skill_http *srv = skill_http_start();
    rein_registry *reg;
    rein_call_result *res;
    const json_t *out;

    (void)state;
    assert_non_null(srv);
    reg = http_skill(srv, "/ok", 10000, NULL);
    res = run(reg, "{\"q\": \"weather\"}", NULL);
    expect(res, REIN_CALL_OK, "");
    out = rein_call_result_output(res);
    assert_string_equal(json_string_value(json_object_get(out, "trace")),
                        "4bf92f3577b34da6a3ce929d0e0e4736");
    const json_t *got = json_object_get(out, "received");
    assert_string_equal(json_string_value(json_object_get(got, "call_id")), "call_42");
    assert_string_equal(json_string_value(json_object_get(json_object_get(got, "arguments"), "q")),
                        "weather");
    rein_call_result_free(res);
    rein_registry_free(reg);
    /* A plain JSON body is the output itself. */
    reg = http_skill(srv, "/raw", 10000, NULL);
    res = run(reg, "{}", NULL);
    expect(res, REIN_CALL_OK, "");
    assert_int_equal(json_integer_value(json_object_get(rein_call_result_output(res), "answer")),
                     42);
    rein_call_result_free(res);
    rein_registry_free(reg);
    skill_http_stop(srv);
}

static void test_http_server_that_hangs_times_out(void **state)
{
    struct skill_http *srv = skill_http_start();
    rein_registry *reg = http_skill(srv, "/hang", 300, NULL);
    int64_t t0 = rein_now_ms();
    rein_call_result *res = run(reg, "{}", NULL);

    (void)state;
    expect(res, REIN_CALL_TIMEOUT, "timed out after 300 ms waiting for http://127.0.0.1");
    assert_true(rein_now_ms() - t0 < 10000);
    rein_call_result_free(res);
    rein_registry_free(reg);
    skill_http_stop(srv);
}

static void test_http_cancel(void **state)
{
    struct skill_http *srv = skill_http_start();
    rein_registry *reg = http_skill(srv, "/hang", 30000, NULL);
    rein_cancel *c = rein_cancel_new();
    pthread_t t;
    int64_t t0 = rein_now_ms();
    rein_call_result *res;

    (void)state;
    assert_int_equal(pthread_create(&t, NULL, cancel_later, c), 0);
    res = run(reg, "{}", c);
    pthread_join(t, NULL);
    expect(res, REIN_CALL_CANCELLED, "turn cancelled");
    assert_true(rein_now_ms() - t0 < 5000);
    rein_call_result_free(res);
    rein_cancel_unref(c);
    rein_registry_free(reg);
    skill_http_stop(srv);
}

static void test_http_misbehaviour(void **state)
{
    static const struct {
        const char *path, *extra;
        enum rein_call_code code;
        const char *says;
    } cases[] = {
        {"/html", NULL, REIN_CALL_EXECUTION_FAILED,
         "answered text/html; charset=utf-8 (HTTP 200), not JSON"},
        {"/error", NULL, REIN_CALL_DENIED, "quota exceeded"},
        {"/gateway", NULL, REIN_CALL_EXECUTION_FAILED, "answered HTTP 502: Bad Gateway"},
        {"/broken", NULL, REIN_CALL_EXECUTION_FAILED, "not JSON"},
        {"/big", ",\"max_response_bytes\":1048576", REIN_CALL_EXECUTION_FAILED,
         "answered more than 1048576 bytes"},
        {"/nowhere", NULL, REIN_CALL_EXECUTION_FAILED, "HTTP 404"},
    };
    struct skill_http *srv = skill_http_start();

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rein_registry *reg = http_skill(srv, cases[i].path, 10000, cases[i].extra);
        rein_call_result *res = run(reg, "{}", NULL);
        expect(res, cases[i].code, cases[i].says);
        rein_call_result_free(res);
        rein_registry_free(reg);
    }
    skill_http_stop(srv);
}

static void test_http_server_that_is_down(void **state)
{
    rein_registry *reg = http_skill(NULL, "/ok", 5000, NULL);
    rein_call_result *res = run(reg, "{}", NULL);

    (void)state;
    expect(res, REIN_CALL_EXECUTION_FAILED, "http://127.0.0.1:");
    rein_call_result_free(res);
    rein_registry_free(reg);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_process_gets_the_call_and_answers),
    cmocka_unit_test(test_process_gets_the_models_own_text),
    cmocka_unit_test(test_manifest_env_reads_only_allowed_variables),
    cmocka_unit_test(test_process_reports_its_own_normalized_error),
    cmocka_unit_test(test_process_reports_progress_and_logs_as_events),
    cmocka_unit_test(test_process_asks_outside_mcp),
    cmocka_unit_test(test_process_that_may_not_ask),
    cmocka_unit_test(test_process_asks_the_embedders_client),
    cmocka_unit_test(test_process_that_hangs_is_killed_with_its_group),
    cmocka_unit_test(test_cancel_stops_a_process),
    cmocka_unit_test(test_process_misbehaviour),
    cmocka_unit_test(test_process_paths_are_relative_to_the_manifest),
    cmocka_unit_test(test_http_posts_the_call_and_reads_the_result),
    cmocka_unit_test(test_http_server_that_hangs_times_out),
    cmocka_unit_test(test_http_cancel),
    cmocka_unit_test(test_http_misbehaviour),
    cmocka_unit_test(test_http_server_that_is_down),
};

REIN_TEST_MAIN(tests)
