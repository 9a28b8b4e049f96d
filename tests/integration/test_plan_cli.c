/*
 * `rein plan` end to end, as a process talking to the scripted model server over HTTP:
 *  - killed with SIGKILL while a later step runs (its tool call pending), then resumed from
 *    the file --save wrote: no completed step runs again (the requests the server got say
 *    so), the lost call is kept and marked, and the plan finishes;
 *  - --events and --json output;
 *  - --show and --show --dot of a saved plan, and a plan file that cannot be used;
 *  - usage errors.
 */
/* rein-test-timeout: 120 */
#include "test.h"

#include "model_server.h"

#include <rein/proc.h>

#include <signal.h>
#include <unistd.h>

extern char **environ;

struct cli {
    ms_server *ms;
    char *dir;
    char base_url[256];
    char skills[512];
    char **env;
};

/* The environment minus anything that would pick a provider or skills for rein. */
static char **clean_env(void)
{
    static const char *const drop[] = {
        "REIN_PROVIDER=", "REIN_MODEL=",       "REIN_BASE_URL=", "REIN_REPLAY=",
        "REIN_CONFIG=",   "REIN_SKILLS_PATH=", "REIN_API_KEY=",  "OPENAI_API_KEY="};
    size_t n = 0, k = 0;
    char **env;

    while (environ[n])
        n++;
    env = calloc(n + 1, sizeof(*env));
    for (size_t i = 0; i < n; i++) {
        bool skip = false;
        for (size_t d = 0; d < sizeof(drop) / sizeof(drop[0]); d++)
            skip = skip || strncmp(environ[i], drop[d], strlen(drop[d])) == 0;
        if (!skip)
            env[k++] = environ[i];
    }
    return env;
}

static void cli_start(struct cli *c)
{
    char manifest[1600];
    rein_error err;

    memset(c, 0, sizeof(*c));
    c->dir = test_tmpdir();
    c->env = clean_env();
    c->ms = ms_start(0, &err);
    if (!c->ms)
        fail_msg("model server: %s", err.msg);
    snprintf(c->base_url, sizeof(c->base_url), "%s", ms_openai_url(c->ms));
    snprintf(c->skills, sizeof(c->skills), "%s/skills", c->dir);
    snprintf(manifest, sizeof(manifest),
             "{\"id\":\"write_file\",\"description\":\"Write content to a file\","
             "\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
             "\"content\":{\"type\":\"string\"}},\"required\":[\"path\",\"content\"]},"
             "\"runner\":{\"kind\":\"process\",\"command\":[\"%s/plan_skill\",\"write\",\"%s\"]}}",
             test_bin_dir(), c->dir);
    free(test_write_file(c->dir, "skills/write_file/manifest.json", manifest));
    snprintf(manifest, sizeof(manifest),
             "{\"id\":\"block\",\"description\":\"Wait for the slow service\",\"timeout_ms\":"
             "120000,\"parameters\":{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":"
             "\"integer\"}}},\"runner\":{\"kind\":\"process\",\"command\":[\"%s/plan_skill\","
             "\"block\"]}}",
             test_bin_dir());
    free(test_write_file(c->dir, "skills/block/manifest.json", manifest));
}

static void cli_stop(struct cli *c)
{
    ms_stop(c->ms);
    test_rmtree(c->dir);
    free(c->dir);
    free(c->env);
}

static void script(struct cli *c, const char *json)
{
    rein_error err;

    if (ms_script(c->ms, json, false, &err) != REIN_OK)
        fail_msg("script: %s", err.msg);
}

/* argv for rein plan with the model options, then extra (NULL-terminated), in argv (64). */
static void plan_argv(struct cli *c, const char **argv, const char *const *extra)
{
    size_t n = 0;

    argv[n++] = test_rein_bin();
    argv[n++] = "plan";
    for (size_t i = 0; extra[i]; i++)
        argv[n++] = extra[i];
    argv[n++] = "--provider";
    argv[n++] = "openai-compatible";
    argv[n++] = "--base-url";
    argv[n++] = c->base_url;
    argv[n++] = "--model";
    argv[n++] = "test-model";
    argv[n++] = "--skills";
    argv[n++] = c->skills;
    /* test-model states no confidence: auto would self-verify every step's calls. */
    argv[n++] = "--verification";
    argv[n++] = "off";
    argv[n] = NULL;
}

/* Runs rein with argv to the end; returns its exit code, output in *out (free it). */
static int run(struct cli *c, const char *const *argv, char **out, char **errout)
{
    struct rein_proc_run_opts o = {
        .proc = {.argv = argv, .cwd = c->dir, .env = (const char *const *)c->env},
        .timeout_ms = 60000};
    struct rein_proc_result res;
    rein_error err;
    int code;

    assert_rein_ok(rein_proc_run(&o, &res, &err), &err);
    assert_false(res.timed_out);
    code = res.exit_code;
    if (out)
        *out = strdup(res.out.ptr);
    if (errout)
        *errout = strdup(res.err.ptr);
    rein_proc_result_release(&res);
    return code;
}

static json_t *load(const char *path)
{
    char *text = test_read_file(path, NULL);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;

    free(text);
    return j;
}

/* True when the saved plan shows step 1 running with its block call pending. */
static bool step_one_is_blocked_in_a_call(const char *path)
{
    json_t *j = load(path), *e;
    const char *st = json_string_value(json_object_get(json_object_get(j, "step_statuses"), "1"));
    bool yes = false;
    size_t i;

    json_array_foreach(json_object_get(json_object_get(j, "step_tool_history"), "1"), i, e)
    {
        yes = yes || (strcmp(json_string_value(json_object_get(e, "tool")), "block") == 0 &&
                      strcmp(json_string_value(json_object_get(e, "status")), "pending") == 0);
    }
    yes = yes && st && strcmp(st, "in_progress") == 0;
    json_decref(j);
    return yes;
}

static const char two_steps[] =
    "[{\"match\":{\"tools_include\":\"create_plan\"},\"tool_calls\":[{\"name\":\"create_plan\","
    "\"arguments\":\"{\\\"title\\\":\\\"Two steps\\\",\\\"steps\\\":[\\\"Save hello in "
    "a.txt\\\",\\\"Wait for the slow service\\\"],\\\"dependencies\\\":{\\\"1\\\":[0]}}\"}]},"
    "{\"match\":{\"body_contains\":\"Write the answer to the request\"},\"text\":\"all done\"},"
    "{\"match\":{\"body_contains\":\"Your step (step 0\",\"last_role\":\"user\"},\"tool_calls\":"
    "[{\"name\":\"write_file\",\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\",\\\"content\\\":"
    "\\\"hello\\\"}\"}]},"
    "{\"match\":{\"body_contains\":\"Your step (step 0\",\"last_role\":\"tool\"},\"text\":"
    "\"a.txt holds hello\"},"
    "{\"match\":{\"body_contains\":\"Your step (step 1\",\"last_role\":\"user\"},\"tool_calls\":"
    "[{\"name\":\"block\",\"arguments\":\"{\\\"ms\\\":60000}\"}]},"
    "{\"match\":{\"body_contains\":\"Your step (step 1\",\"last_role\":\"user\"},\"text\":"
    "\"the service is up\"}]";

static void test_killed_mid_plan_resumes_without_rerunning_completed_steps(void **state)
{
    const char *argv[64], *extra[8];
    struct rein_proc_opts po;
    struct cli c;
    rein_proc *p;
    rein_error err;
    char path[600], *out = NULL, *eout = NULL, *content;
    int64_t until;
    size_t before;
    int code;
    json_t *j, *calls;

    (void)state;
    cli_start(&c);
    script(&c, two_steps);
    snprintf(path, sizeof(path), "%s/plan.json", c.dir);
    extra[0] = "Save hello, then wait for the service";
    extra[1] = "--save";
    extra[2] = path;
    extra[3] = NULL;
    plan_argv(&c, argv, extra);
    memset(&po, 0, sizeof(po));
    po.argv = argv;
    po.cwd = c.dir;
    po.env = (const char *const *)c.env;
    assert_rein_ok(rein_proc_start(&po, &p, &err), &err);
    rein_proc_close_stdin(p);
    until = rein_now_ms() + 60000;
    while (!step_one_is_blocked_in_a_call(path) && rein_now_ms() < until)
        rein_sleep_ms(20);
    if (!step_one_is_blocked_in_a_call(path))
        fail_msg("step 1 never got to its call");
    rein_proc_kill(p, SIGKILL);
    assert_rein_ok(rein_proc_wait(p, 10000, &code), NULL);
    assert_int_equal(code, 128 + SIGKILL);
    rein_proc_free(p);
    before = ms_request_count(c.ms);
    assert_int_equal(before, 4); /* planner, step 0 twice, step 1 */

    /* Resume from the file: only step 1 and the answer are asked for. */
    extra[0] = "--resume";
    extra[1] = path;
    extra[2] = "--json";
    extra[3] = NULL;
    plan_argv(&c, argv, extra);
    code = run(&c, argv, &out, &eout);
    if (code != 0)
        fail_msg("resume exited %d\n%s\n%s", code, out, eout);
    assert_int_equal(ms_request_count(c.ms), before + 2);
    for (size_t i = before; i < ms_request_count(c.ms); i++)
        assert_null(strstr(ms_request(c.ms, i)->body, "Your step (step 0"));
    assert_non_null(strstr(ms_request(c.ms, before)->body, "a.txt holds hello"));
    j = json_loads(out, 0, NULL);
    assert_non_null(j);
    assert_true(json_is_true(json_object_get(j, "success")));
    assert_string_equal(json_string_value(json_object_get(j, "answer")), "all done");
    calls = json_object_get(json_array_get(json_object_get(j, "steps"), 1), "calls");
    assert_int_equal(json_array_size(calls), 1);
    assert_true(json_is_true(json_object_get(json_array_get(calls, 0), "interrupted")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(calls, 0), "status")),
                        "pending");
    /* Step 0's one write happened once. */
    assert_int_equal(
        json_array_size(json_object_get(json_array_get(json_object_get(j, "steps"), 0), "calls")),
        1);
    json_decref(j);
    snprintf(path, sizeof(path), "%s/a.txt", c.dir);
    content = test_read_file(path, NULL);
    assert_string_equal(content, "hello");
    free(content);
    free(out);
    free(eout);
    cli_stop(&c);
}

static void test_events_and_show(void **state)
{
    static const char one_step[] =
        "[{\"match\":{\"tools_include\":\"create_plan\"},\"tool_calls\":[{\"name\":"
        "\"create_plan\",\"arguments\":\"{\\\"title\\\":\\\"Hi\\\",\\\"steps\\\":[\\\"Say "
        "hi\\\",\\\"Say bye\\\"],\\\"dependencies\\\":{\\\"1\\\":[0]}}\"}]},"
        "{\"match\":{\"body_contains\":\"Write the answer\"},\"text\":\"hi and bye\"},"
        "{\"match\":{\"body_contains\":\"Your step\"},\"times\":0,\"text\":\"said it\"}]";
    const char *argv[64], *extra[8];
    struct cli c;
    char path[600], *out = NULL, *eout = NULL, *line, *save = NULL;
    uint64_t seq = 0;
    json_t *last = NULL;
    bool saw_step = false;

    (void)state;
    cli_start(&c);
    script(&c, one_step);
    snprintf(path, sizeof(path), "%s/hi.json", c.dir);
    extra[0] = "Say hi then bye";
    extra[1] = "--events";
    extra[2] = "--save";
    extra[3] = path;
    extra[4] = NULL;
    plan_argv(&c, argv, extra);
    assert_int_equal(run(&c, argv, &out, &eout), 0);
    for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *ev = json_loads(line, 0, NULL);
        if (!ev)
            fail_msg("not JSON: %s", line);
        assert_int_equal(json_integer_value(json_object_get(ev, "seq")), (json_int_t)++seq);
        saw_step = saw_step || strcmp(json_string_value(json_object_get(ev, "type")), "step") == 0;
        json_decref(last);
        last = ev;
    }
    assert_true(saw_step);
    assert_string_equal(json_string_value(json_object_get(last, "type")), "final");
    assert_string_equal(json_string_value(json_object_get(last, "answer")), "hi and bye");
    assert_true(json_is_true(json_object_get(last, "success")));
    json_decref(last);
    free(out);
    free(eout);

    /* --show and --dot read the saved plan. */
    argv[0] = test_rein_bin();
    argv[1] = "plan";
    argv[2] = "--show";
    argv[3] = path;
    argv[4] = NULL;
    assert_int_equal(run(&c, argv, &out, NULL), 0);
    assert_non_null(strstr(out, "Plan: Hi\n"));
    assert_non_null(strstr(out, "  1  completed    Say bye  (needs 0)\n"));
    assert_non_null(strstr(out, "Answer: hi and bye"));
    free(out);
    argv[4] = "--dot";
    argv[5] = NULL;
    assert_int_equal(run(&c, argv, &out, NULL), 0);
    assert_non_null(strstr(out, "digraph plan {"));
    assert_non_null(strstr(out, "s0 -> s1;"));
    free(out);
    cli_stop(&c);
}

static void test_bad_plan_files_and_usage(void **state)
{
    const char *argv[64], *extra[8];
    struct cli c;
    char *out = NULL, *eout = NULL, *bad;

    (void)state;
    cli_start(&c);
    bad = test_write_file(c.dir, "cycle.json",
                          "{\"title\":\"t\",\"steps\":[\"a\",\"b\"],\"dependencies\":{\"0\":[1],"
                          "\"1\":[0]}}");
    argv[0] = test_rein_bin();
    argv[1] = "plan";
    argv[2] = "--show";
    argv[3] = bad;
    argv[4] = NULL;
    assert_int_equal(run(&c, argv, &out, &eout), 2);
    assert_non_null(strstr(eout, "cycle.json: /dependencies: the steps depend on each other"));
    free(out);
    free(eout);
    /* --resume of the same file fails the same way, before any model is asked. */
    extra[0] = "--resume";
    extra[1] = bad;
    extra[2] = NULL;
    plan_argv(&c, argv, extra);
    assert_int_equal(run(&c, argv, &out, &eout), 2);
    assert_non_null(strstr(eout, "/dependencies"));
    free(out);
    free(eout);
    argv[1] = "plan";
    argv[2] = "--show";
    argv[3] = "/nonexistent/plan.json";
    argv[4] = NULL;
    assert_int_equal(run(&c, argv, NULL, NULL), 2);
    argv[2] = NULL;
    assert_int_equal(run(&c, argv, NULL, NULL), 2); /* nothing to do */
    argv[2] = "x";
    argv[3] = "--max-parallel";
    argv[4] = "0";
    argv[5] = NULL;
    assert_int_equal(run(&c, argv, NULL, NULL), 2);
    argv[3] = "--dot";
    argv[4] = NULL;
    assert_int_equal(run(&c, argv, NULL, NULL), 2);
    argv[3] = NULL; /* no provider configured anywhere */
    assert_int_equal(run(&c, argv, NULL, &eout), 2);
    assert_non_null(strstr(eout, "needs a model"));
    free(eout);
    assert_int_equal(ms_request_count(c.ms), 0);
    free(bad);
    cli_stop(&c);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_killed_mid_plan_resumes_without_rerunning_completed_steps),
    cmocka_unit_test(test_events_and_show),
    cmocka_unit_test(test_bad_plan_files_and_usage),
};

REIN_TEST_MAIN(tests)
