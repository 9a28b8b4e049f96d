/*
 * `rein verify` end to end: small C projects with a Makefile and cmocka tests are written to
 * temporary directories (one passing, one with a failing test, one with a lint error, one
 * with a flaky test that passes on retry, one that does not build), and the real `rein`
 * binary is run in them. Checked: exit codes (0 SUCCESS, 1 FAILED, 3 SUCCESS_WITH_WARNINGS,
 * 2 unusable configuration), the table and the --json report, fast-fail, claims given on
 * stdin, and a malformed protocol file reported with its line and column.
 */
/* rein-test-timeout: 180 */
#include "model_server.h"
#include "test.h"

#include <sys/stat.h>

static const char calc_c[] = "int add(int a, int b)\n{\n    return a + b;\n}\n\n"
                             "int sub(int a, int b)\n{\n    return a - b;\n}\n";

static const char test_calc_c[] =
    "#include <setjmp.h>\n#include <stdarg.h>\n#include <stddef.h>\n#include <stdint.h>\n"
    "#include <stdio.h>\n#include <cmocka.h>\n\n"
    "int add(int a, int b);\nint sub(int a, int b);\n\n"
    "static void test_add(void **s) { (void)s; assert_int_equal(add(2, 2), 4); }\n"
    "static void test_sub(void **s) { (void)s; assert_int_equal(sub(5, 3), 2); }\n\n"
    "int main(void)\n{\n"
    "    const struct CMUnitTest tests[] = {cmocka_unit_test(test_add), "
    "cmocka_unit_test(test_sub)};\n"
    "    FLAKY\n"
    "    return cmocka_run_group_tests(tests, NULL, NULL);\n}\n";

static const char makefile[] = "all: libcalc.a\n"
                               "libcalc.a: src/calc.c\n"
                               "\tcc -Wall -c src/calc.c -o calc.o && ar rcs libcalc.a calc.o\n"
                               "test_calc: tests/test_calc.c libcalc.a\n"
                               "\tcc -Wall -o test_calc tests/test_calc.c libcalc.a -lcmocka\n"
                               "test: test_calc\n"
                               "\t./test_calc\n"
                               "lint:\n"
                               "\tcc -fsyntax-only -Wall -Wextra -Werror src/calc.c\n";

static const char protocols[] = "protocols:\n"
                                "  BUILD:\n"
                                "    priority: P0\n"
                                "    steps:\n"
                                "      - command: make all\n"
                                "        timeout: 120\n"
                                "  LINT:\n"
                                "    steps: [{command: make lint, timeout: 60}]\n"
                                "  TEST:\n"
                                "    priority: P1\n"
                                "    group: 2\n"
                                "    steps:\n"
                                "      - command: make test\n"
                                "        timeout: 120\n"
                                "        on_failure: retry\n"
                                "        retries: 1\n";

enum variant {
    PASSING,
    FAILING_TEST,
    LINT_ERROR,
    FLAKY_TEST,
    BROKEN_BUILD,
};

static char *replace(const char *text, const char *what, const char *with)
{
    const char *at = strstr(text, what);
    char *out = NULL;

    assert_non_null(at);
    assert_true(asprintf(&out, "%.*s%s%s", (int)(at - text), text, with, at + strlen(what)) > 0);
    return out;
}

/* A project in a new temporary directory (a git repository with one commit). */
static char *project(enum variant v)
{
    char *dir = test_tmpdir();
    char *calc = strdup(calc_c), *test, *tmp;
    const char *flaky = v == FLAKY_TEST
                            ? "FILE *m = fopen(\".ran-once\", \"r\");\n    if (!m) { m = "
                              "fopen(\".ran-once\", \"w\"); fclose(m); printf(\"first run "
                              "fails\\n\"); return 1; }\n    fclose(m);"
                            : "";

    assert_non_null(calc);
    if (v == FAILING_TEST) {
        tmp = replace(calc, "return a - b;", "return a + b;");
        free(calc);
        calc = tmp;
    } else if (v == LINT_ERROR) {
        tmp = replace(calc, "    return a + b;", "    int unused = 0;\n    return a + b;");
        free(calc);
        calc = tmp;
    } else if (v == BROKEN_BUILD) {
        tmp = replace(calc, "return a - b;", "return a - b");
        free(calc);
        calc = tmp;
    }
    test = replace(test_calc_c, "FLAKY", flaky);
    free(test_write_file(dir, "src/calc.c", calc));
    free(test_write_file(dir, "tests/test_calc.c", test));
    free(test_write_file(dir, "Makefile", makefile));
    free(test_write_file(dir, "rein-verify.yaml", protocols));
    free(test_write_file(dir, ".gitignore", "*.o\n*.a\ntest_calc\n.ran-once\n"));
    free(calc);
    free(test);
    return dir;
}

struct out {
    int code;
    char *stdout_text;
    char *stderr_text;
};

static struct out rein(const char *dir, const char *const *args, const char *input)
{
    const char *argv[16] = {test_rein_bin(), "verify"};
    struct rein_proc_run_opts o = {.proc = {.argv = argv, .cwd = dir},
                                   .input = input,
                                   .input_len = input ? strlen(input) : 0,
                                   .timeout_ms = 150000};
    struct rein_proc_result r;
    struct out res;
    size_t n = 2;

    for (size_t i = 0; args && args[i]; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    assert_false(r.timed_out);
    res.code = r.exit_code;
    res.stdout_text = strdup(r.out.ptr);
    res.stderr_text = strdup(r.err.ptr);
    rein_proc_result_release(&r);
    return res;
}

static void out_free(struct out *o)
{
    free(o->stdout_text);
    free(o->stderr_text);
}

static void expect_code(const struct out *o, int code)
{
    if (o->code != code)
        fail_msg("exit %d, expected %d\nstdout:\n%s\nstderr:\n%s", o->code, code, o->stdout_text,
                 o->stderr_text);
}

static json_t *report_of(const char *dir, const char *const *extra, int code)
{
    const char *args[8] = {"--json"};
    struct out o;
    json_t *j;
    size_t n = 1;

    for (size_t i = 0; extra && extra[i]; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    o = rein(dir, args, NULL);
    expect_code(&o, code);
    j = json_loads(o.stdout_text, 0, NULL);
    if (!j)
        fail_msg("not JSON: %s", o.stdout_text);
    out_free(&o);
    return j;
}

static json_t *protocol(json_t *report, const char *name)
{
    size_t i;
    json_t *p;

    json_array_foreach(json_object_get(report, "protocols"), i, p)
    {
        if (strcmp(json_string_value(json_object_get(p, "name")), name) == 0)
            return p;
    }
    fail_msg("no protocol %s", name);
    return NULL;
}

static const char *status_of(json_t *report, const char *name)
{
    return json_string_value(json_object_get(protocol(report, name), "status"));
}

static int64_t count_of(json_t *report, const char *name, const char *key)
{
    return json_integer_value(
        json_object_get(json_object_get(protocol(report, name), "counts"), key));
}

static void cleanup(char *dir)
{
    test_rmtree(dir);
    free(dir);
}

static void test_passing_project(void **state)
{
    char *dir = project(PASSING);
    struct out o = rein(dir, NULL, NULL);

    (void)state;
    expect_code(&o, 0);
    assert_non_null(strstr(o.stdout_text, "PROTOCOL"));
    assert_non_null(strstr(o.stdout_text, "verdict: SUCCESS"));
    assert_non_null(strstr(o.stdout_text, "2 passed, 0 failed, 0 skipped of 2"));
    out_free(&o);
    cleanup(dir);
}

static void test_failing_test_project(void **state)
{
    char *dir = project(FAILING_TEST);
    json_t *r = report_of(dir, NULL, 1), *test;

    (void)state;
    assert_string_equal(json_string_value(json_object_get(r, "verdict")), "FAILED");
    assert_string_equal(status_of(r, "BUILD"), "passed");
    assert_string_equal(status_of(r, "TEST"), "failed");
    assert_int_equal(count_of(r, "TEST", "passed"), 1);
    assert_int_equal(count_of(r, "TEST", "failed"), 1);
    assert_int_equal(count_of(r, "TEST", "total"), 2);
    test = protocol(r, "TEST");
    /* retried once, failed both times: not flaky, and the tail shows the failing test */
    assert_int_equal(json_integer_value(json_object_get(test, "attempts")), 2);
    assert_non_null(
        strstr(json_string_value(json_object_get(test, "output_tail")), "[  FAILED  ] test_sub"));
    assert_string_equal(json_string_value(json_object_get(test, "priority")), "P1");
    assert_true(json_is_integer(json_object_get(test, "duration_ms")));
    assert_true(json_is_string(json_object_get(test, "signature")));
    assert_true(json_is_number(json_object_get(r, "confidence")));
    assert_true(json_is_array(json_object_get(r, "claims")));
    json_decref(r);
    cleanup(dir);
}

static void test_lint_error_project(void **state)
{
    char *dir = project(LINT_ERROR);
    json_t *r = report_of(dir, NULL, 1), *d;

    (void)state;
    assert_string_equal(status_of(r, "BUILD"), "passed");
    assert_string_equal(status_of(r, "LINT"), "failed");
    assert_string_equal(status_of(r, "TEST"), "passed");
    assert_int_equal(count_of(r, "LINT", "errors"), 1);
    d = json_array_get(json_object_get(protocol(r, "LINT"), "diagnostics"), 0);
    assert_string_equal(json_string_value(json_object_get(d, "file")), "src/calc.c");
    assert_int_equal(json_integer_value(json_object_get(d, "line")), 3);
    assert_string_equal(json_string_value(json_object_get(d, "rule")), "-Werror=unused-variable");
    json_decref(r);
    cleanup(dir);
}

static void test_flaky_project_passes_on_retry(void **state)
{
    char *dir = project(FLAKY_TEST);
    json_t *r = report_of(dir, NULL, 0), *test;

    (void)state;
    test = protocol(r, "TEST");
    assert_string_equal(json_string_value(json_object_get(test, "status")), "passed");
    assert_true(json_is_true(json_object_get(test, "flaky")));
    assert_int_equal(json_integer_value(json_object_get(test, "attempts")), 2);
    json_decref(r);
    cleanup(dir);
}

static void test_broken_build_fails_fast(void **state)
{
    char *dir = project(BROKEN_BUILD);
    json_t *r = report_of(dir, NULL, 1);
    char path[1024];
    struct stat st;

    (void)state;
    assert_string_equal(status_of(r, "BUILD"), "failed");
    assert_int_equal(count_of(r, "BUILD", "errors"), 1);
    assert_string_equal(status_of(r, "TEST"), "not_run");
    assert_string_equal(status_of(r, "LINT"), "not_run");
    /* TEST never ran: its binary was never built. */
    snprintf(path, sizeof(path), "%s/test_calc", dir);
    assert_int_not_equal(stat(path, &st), 0);
    json_decref(r);
    cleanup(dir);
}

static void expect_claim(const json_t *claims, size_t i, const char *kind, const char *subject,
                         const char *status)
{
    const json_t *c = json_array_get(claims, i);

    assert_string_equal(json_string_value(json_object_get(c, "kind")), kind);
    assert_string_equal(json_string_value(json_object_get(c, "subject")), subject);
    assert_string_equal(json_string_value(json_object_get(c, "status")), status);
}

static void test_claims_on_stdin(void **state)
{
    char *dir = project(FAILING_TEST);
    const char *args[] = {"--claims", "-", "--json", NULL};
    struct out o;
    json_t *r, *claims;

    (void)state;
    test_sh(dir,
            "git init -q . && git add -A && git -c user.email=t@t -c user.name=t commit -qm init");
    free(test_write_file(dir, "src/mul.c", "int mul(int a, int b)\n{\n    return a * b;\n}\n"));
    o = rein(dir, args,
             "I created src/mul.c with a mul() function. I added function div to src/calc.c. "
             "所有测试通过。");
    expect_code(&o, 1);
    r = json_loads(o.stdout_text, 0, NULL);
    assert_non_null(r);
    claims = json_object_get(r, "claims");
    assert_int_equal(json_array_size(claims), 4);
    /* mul() in src/mul.c: confirmed; src/mul.c: new; div: refuted; tests pass: refuted (TEST
     * fails) */
    expect_claim(claims, 0, "function", "mul", "confirmed");
    expect_claim(claims, 1, "file_written", "src/mul.c", "confirmed");
    expect_claim(claims, 2, "function", "div", "refuted");
    expect_claim(claims, 3, "tests_pass", "tests", "refuted");
    json_decref(r);
    out_free(&o);
    cleanup(dir);
}

static void test_claims_without_config(void **state)
{
    char *dir = test_tmpdir();
    const char *args[] = {"--claims", "said.txt", NULL};
    struct out o;

    (void)state;
    free(test_write_file(dir, "said.txt", "I created notes.md and deleted old.md."));
    free(test_write_file(dir, "notes.md", "# notes\n"));
    o = rein(dir, args, NULL);
    /* no git: existence is verified at medium confidence, so only a warning-level success */
    expect_code(&o, 3);
    assert_non_null(strstr(o.stdout_text, "CLAIMS (2)"));
    assert_non_null(strstr(o.stdout_text, "verdict: SUCCESS_WITH_WARNINGS"));
    out_free(&o);
    cleanup(dir);
}

/* --ledger in its three shapes: tool claims are checked against the calls it records. */
static void test_claims_with_ledger(void **state)
{
    static const char *const ledgers[] = {
        "[{\"call_id\":\"c1\",\"tool\":\"calculator\",\"args\":{\"expression\":\"1+1\"},"
        "\"status\":\"success\",\"result\":{\"value\":2},\"call_time\":\"t\","
        "\"response_time\":\"t\",\"step\":null},{\"call_id\":\"c2\",\"tool\":\"web_search\","
        "\"args\":{},\"status\":\"error\",\"result\":{\"code\":\"timeout\"}}]",
        "{\"success\":true,\"response\":\"…\",\"tool_calls\":[{\"call_id\":\"c1\",\"tool\":"
        "\"calculator\",\"sent_name\":\"calculator\",\"arguments\":{},\"status\":\"success\","
        "\"result\":2},{\"call_id\":\"c2\",\"tool\":\"web_search\",\"arguments\":{},"
        "\"status\":\"invalid\",\"result\":{}}],\"meta\":{}}",
        "{\"title\":\"t\",\"steps\":[\"a\",\"b\"],\"step_tool_history\":{\"0\":[{\"call_id\":"
        "\"c1\",\"tool\":\"calculator\",\"args\":{},\"status\":\"success\",\"result\":2}],"
        "\"1\":[{\"call_id\":\"c2\",\"tool\":\"web_search\",\"args\":{},\"status\":"
        "\"pending\",\"result\":null}]}}"};
    char *dir = test_tmpdir();
    const char *args[] = {"--claims", "-", "--ledger", "ledger.json", "--json", NULL};
    const char *no_ledger[] = {"--claims", "-", "--json", NULL};
    const char *said = "I used the calculator and it returned 2. web_search found the docs. "
                       "我已将结果写入 result.txt。下一步我会创建 report.csv。";
    struct out o;
    json_t *r, *claims;

    (void)state;
    for (size_t i = 0; i < sizeof(ledgers) / sizeof(ledgers[0]); i++) {
        free(test_write_file(dir, "ledger.json", ledgers[i]));
        o = rein(dir, args, said);
        expect_code(&o, 1);
        r = json_loads(o.stdout_text, 0, NULL);
        assert_non_null(r);
        claims = json_object_get(r, "claims");
        assert_int_equal(json_array_size(claims), 3);
        expect_claim(claims, 0, "tool", "calculator", "confirmed");
        expect_claim(claims, 1, "tool", "web_search", "refuted");
        expect_claim(claims, 2, "file_written", "result.txt", "refuted");
        json_decref(r);
        out_free(&o);
    }
    /* without a ledger a tool claim is unverifiable, not ignored */
    o = rein(dir, no_ledger, said);
    expect_code(&o, 1);
    r = json_loads(o.stdout_text, 0, NULL);
    claims = json_object_get(r, "claims");
    expect_claim(claims, 0, "tool", "calculator", "unverifiable");
    json_decref(r);
    out_free(&o);
    cleanup(dir);
}

/* The sentences issue 14 opens with, each given alone to rein verify --claims with an empty
 * ledger: each is refuted, and the plan for later is no claim. */
static void test_claims_issue_sentences(void **state)
{
    static const char *const said[][3] = {
        {"I used the calculator and it returned 2.", "tool", "calculator"},
        {"The calculator returned 2.", "tool", "calculator"},
        {"I wrote the result to result.txt.", "file_written", "result.txt"},
        {"I saved the mean to result.txt.", "file_written", "result.txt"},
        {"Saved result.txt.", "file_written", "result.txt"},
        {"I added parse_args to src/cli.c.", "function", "parse_args"},
        {"我调用了 calculator，结果是 2。", "tool", "calculator"},
        {"我已将结果写入 result.txt。", "file_written", "result.txt"},
    };
    char *dir = test_tmpdir();
    const char *args[] = {"--claims", "-", "--ledger", "ledger.json", "--json", NULL};
    struct out o;
    json_t *r;

    (void)state;
    free(test_write_file(dir, "ledger.json", "[]"));
    for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++) {
        o = rein(dir, args, said[i][0]);
        expect_code(&o, 1);
        r = json_loads(o.stdout_text, 0, NULL);
        assert_non_null(r);
        assert_int_equal(json_array_size(json_object_get(r, "claims")), 1);
        expect_claim(json_object_get(r, "claims"), 0, said[i][1], said[i][2], "refuted");
        json_decref(r);
        out_free(&o);
    }
    o = rein(dir, args, "下一步我会创建 report.csv。");
    assert_int_not_equal(o.code, 1);
    r = json_loads(o.stdout_text, 0, NULL);
    assert_non_null(r);
    assert_int_equal(json_array_size(json_object_get(r, "claims")), 0);
    json_decref(r);
    out_free(&o);
    cleanup(dir);
}

static void expect_usage(const char *dir, const char *const *args, const char *input,
                         const char *message)
{
    struct out o = rein(dir, args, input);

    expect_code(&o, 2);
    if (!strstr(o.stderr_text, message))
        fail_msg("stderr does not say \"%s\":\n%s", message, o.stderr_text);
    out_free(&o);
}

static void test_claims_bad_ledger(void **state)
{
    char *dir = test_tmpdir();
    const char *with_ledger[] = {"--claims", "-", "--ledger", "ledger.json", NULL};
    const char *no_claims[] = {"--ledger", "ledger.json", NULL};
    const char *judge[] = {"--claims", "-", "--claims-judge", NULL};

    (void)state;
    free(test_write_file(dir, "ledger.json", "[{\"tool\": \"calculator\", \"status\""));
    expect_usage(dir, with_ledger, "I ran it.", "--ledger ledger.json");
    free(test_write_file(dir, "ledger.json", "{\"calls\": []}"));
    expect_usage(dir, with_ledger, "I ran it.", "a ledger is a JSON array of entries");
    free(test_write_file(dir, "ledger.json", "[{\"tool\": 7, \"status\": \"success\"}]"));
    expect_usage(dir, with_ledger, "I ran it.", "ledger[0]");
    with_ledger[3] = "missing.json";
    expect_usage(dir, with_ledger, "I ran it.", "missing.json");
    expect_usage(dir, no_claims, NULL, "--ledger needs --claims");
    expect_usage(dir, judge, "I ran it.", "--claims-judge needs a model");
    cleanup(dir);
}

/* --claims-judge: the model lists claims (a tool call checked against its schema, an invalid
 * one sent back), and rein checks each itself. */
static void test_claims_judge(void **state)
{
    char *dir = test_tmpdir();
    rein_error err;
    ms_server *ms = ms_start(0, &err);
    const char *args[] = {
        "--claims",   "-",  "--json",  "--claims-judge", "--provider", "openai-compatible",
        "--base-url", NULL, "--model", "judge-model",    NULL};
    struct out o;
    json_t *r, *claims;
    const struct ms_request *mr;

    (void)state;
    assert_non_null(ms);
    args[7] = ms_openai_url(ms);
    assert_rein_ok(
        ms_script(ms,
                  "[{\"tool_calls\": [{\"id\": \"j1\", \"name\": \"report_claims\", "
                  "\"arguments\": \"{\\\"claims\\\": [{\\\"kind\\\": \\\"banana\\\", "
                  "\\\"text\\\": \\\"x\\\"}]}\"}]},"
                  " {\"tool_calls\": [{\"id\": \"j2\", \"name\": \"report_claims\", "
                  "\"arguments\": \"{\\\"claims\\\": [{\\\"kind\\\": \\\"file_written\\\", "
                  "\\\"text\\\": \\\"The totals are in totals.csv.\\\", \\\"path\\\": "
                  "\\\"totals.csv\\\"}]}\"}]}]",
                  false, &err),
        &err);
    /* the extractor alone finds no claim in this sentence: nothing was said to be done */
    o = rein(dir, args, "The totals are in totals.csv.");
    expect_code(&o, 1);
    r = json_loads(o.stdout_text, 0, NULL);
    assert_non_null(r);
    claims = json_object_get(r, "claims");
    assert_int_equal(json_array_size(claims), 1);
    expect_claim(claims, 0, "file_written", "totals.csv", "refuted");
    json_decref(r);
    out_free(&o);
    assert_int_equal(ms_request_count(ms), 2);
    mr = ms_request(ms, 0);
    assert_non_null(strstr(mr->body, "\"report_claims\""));
    assert_non_null(strstr(mr->body, "The totals are in totals.csv."));
    /* the invalid list went back as the pipeline's invalid payload */
    mr = ms_request(ms, 1);
    assert_non_null(strstr(mr->body, "Invalid arguments"));
    assert_non_null(strstr(mr->body, "/claims/0/kind"));
    /* a model that cannot be reached: the claims rein finds itself are still checked */
    ms_stop(ms);
    o = rein(dir, args, "I created notes.md.");
    expect_code(&o, 1);
    assert_non_null(strstr(o.stderr_text, "--claims-judge"));
    assert_non_null(strstr(o.stdout_text, "notes.md"));
    out_free(&o);
    cleanup(dir);
}

static void test_desired_failure_is_a_warning(void **state)
{
    char *dir = project(PASSING);
    struct out o;

    (void)state;
    free(test_write_file(dir, "p2.yaml",
                         "protocols:\n"
                         "  BUILD: {steps: [{command: make all}]}\n"
                         "  DOCS: {priority: P2, steps: [{command: test -f "
                         "README.md}]}\n"));
    {
        const char *args[] = {"--config", "p2.yaml", NULL};
        o = rein(dir, args, NULL);
    }
    expect_code(&o, 3);
    assert_non_null(strstr(o.stdout_text, "SUCCESS_WITH_WARNINGS"));
    out_free(&o);
    cleanup(dir);
}

static void test_malformed_protocol_file(void **state)
{
    char *dir = test_tmpdir();
    struct out o;

    (void)state;
    free(test_write_file(dir, "rein-verify.yaml",
                         "mode: standard\nprotocols:\n  TEST:\n    "
                         "steps:\n      - command: make test\n        "
                         "on_failure: maybe\n"));
    o = rein(dir, NULL, NULL);
    expect_code(&o, 2);
    assert_non_null(strstr(o.stderr_text, "rein-verify.yaml:6:21: protocols.TEST.steps[0]"
                                          ".on_failure"));
    assert_non_null(strstr(o.stderr_text, "must be retry, skip or fail"));
    out_free(&o);
    free(test_write_file(dir, "rein-verify.yaml", "protocols:\n  TEST: [unclosed\n"));
    o = rein(dir, NULL, NULL);
    expect_code(&o, 2);
    assert_non_null(strstr(o.stderr_text, "rein-verify.yaml:3:1:"));
    out_free(&o);
    cleanup(dir);
}

static void test_unusable_command_lines(void **state)
{
    char *dir = project(PASSING);
    char *empty = test_tmpdir();
    const char *bad_mode[] = {"--mode", "quick", NULL};
    const char *bad_only[] = {"--only", "NOPE", NULL};
    const char *bad_opt[] = {"--frobnicate", NULL};
    const char *missing[] = {"--config", "nope.yaml", NULL};
    const char *help[] = {"--help", NULL};
    struct out o;

    (void)state;
    o = rein(dir, bad_mode, NULL);
    expect_code(&o, 2);
    out_free(&o);
    o = rein(dir, bad_only, NULL);
    expect_code(&o, 2);
    assert_non_null(strstr(o.stderr_text, "NOPE"));
    out_free(&o);
    o = rein(dir, bad_opt, NULL);
    expect_code(&o, 2);
    out_free(&o);
    o = rein(dir, missing, NULL);
    expect_code(&o, 2);
    out_free(&o);
    o = rein(empty, NULL, NULL);
    expect_code(&o, 2);
    assert_non_null(strstr(o.stderr_text, "no rein-verify.yaml"));
    out_free(&o);
    o = rein(dir, help, NULL);
    expect_code(&o, 0);
    assert_non_null(strstr(o.stdout_text, "usage: rein verify"));
    out_free(&o);
    cleanup(dir);
    cleanup(empty);
}

static void test_modes_and_only_from_cli(void **state)
{
    char *dir = project(FAILING_TEST);
    const char *minimal[] = {"--mode", "minimal", NULL};
    const char *only[] = {"--only", "BUILD,LINT", NULL};
    json_t *r;

    (void)state;
    r = report_of(dir, minimal, 0);
    assert_string_equal(status_of(r, "TEST"), "skipped");
    assert_string_equal(json_string_value(json_object_get(r, "mode")), "minimal");
    json_decref(r);
    r = report_of(dir, only, 0);
    assert_string_equal(status_of(r, "TEST"), "skipped");
    assert_string_equal(status_of(r, "LINT"), "passed");
    json_decref(r);
    cleanup(dir);
}

/* A program is there (exit 0 for `cmd`). */
static bool have(const char *cmd)
{
    char line[300];

    snprintf(line, sizeof(line), "%s >/dev/null 2>&1", cmd);
    return system(line) == 0;
}

/*
 * Coverage end to end with the real tools: a C project built with gcc --coverage whose
 * TEST step runs the tests and gcovr (its JSON summary is the step's coverage report; gcovr
 * also prints its table), and a Python project tested under coverage.py (`coverage json`).
 * A threshold above what the tests cover fails TEST with the numbers; one below passes.
 */
static void test_coverage_threshold_c_project(void **state)
{
    char *dir;
    json_t *j;
    static const char yaml[] = "protocols:\n"
                               "  TEST:\n"
                               "    coverage_threshold: %s\n"
                               "    steps:\n"
                               "      - command: make -s cov\n"
                               "        coverage: build/coverage.json\n";
    char text[400];

    (void)state;
    if (!have("gcovr --version"))
        skip();
    dir = project(PASSING);
    free(test_write_file(dir, "Makefile",
                         "cov:\n"
                         "\tmkdir -p build\n"
                         "\tcc --coverage -o build/t tests/test_calc.c src/calc.c -lcmocka\n"
                         "\tcd build && ./t\n"
                         "\tgcovr -r . --filter src/ --json-summary -o build/coverage.json\n"));
    /* Only add() and sub() exist and both are tested: add an untested function. */
    free(test_write_file(dir, "src/extra.c", "int twice(int a)\n{\n    return 2 * a;\n}\n"));
    free(test_write_file(dir, "Makefile",
                         "cov:\n"
                         "\tmkdir -p build\n"
                         "\tcc --coverage -o build/t tests/test_calc.c src/calc.c src/extra.c "
                         "-lcmocka\n"
                         "\t./build/t\n"
                         "\tgcovr -r . --filter src/ --json-summary -o build/coverage.json\n"));
    snprintf(text, sizeof(text), yaml, "90");
    free(test_write_file(dir, "rein-verify.yaml", text));
    j = report_of(dir, NULL, 1);
    assert_string_equal(status_of(j, "TEST"), "failed");
    /* 6 of 9 lines of src/ (add and sub tested, twice not) */
    {
        json_t *p = protocol(j, "TEST");
        double cov = json_real_value(json_object_get(json_object_get(p, "counts"), "coverage"));
        const char *why = json_string_value(json_object_get(p, "reason"));
        if (!(cov > 60 && cov < 70) || !strstr(why, "below the threshold of 90%"))
            fail_msg("coverage %g, reason %s", cov, why);
    }
    json_decref(j);
    snprintf(text, sizeof(text), yaml, "60");
    free(test_write_file(dir, "rein-verify.yaml", text));
    j = report_of(dir, NULL, 0);
    assert_string_equal(status_of(j, "TEST"), "passed");
    json_decref(j);
    cleanup(dir);
}

/* The interpreter with coverage.py and pytest: python3, else Debian's. */
static const char *python_with(const char *module)
{
    static const char *const pys[] = {"python3", "/usr/bin/python3"};
    char cmd[200];

    for (size_t i = 0; i < 2; i++) {
        snprintf(cmd, sizeof(cmd), "%s -m %s --version", pys[i], module);
        if (have(cmd))
            return pys[i];
    }
    return NULL;
}

static void test_coverage_python_project(void **state)
{
    const char *py = python_with("coverage");
    char *dir, yaml[600];
    json_t *j;
    struct out o;

    (void)state;
    if (!py || !python_with("pytest"))
        skip();
    dir = test_tmpdir();
    free(test_write_file(dir, "calc.py",
                         "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n"
                         "    if b == 0:\n        return 0\n    return a / b\n"));
    free(test_write_file(dir, "test_calc.py",
                         "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"));
    snprintf(yaml, sizeof(yaml),
             "protocols:\n"
             "  TEST:\n"
             "    coverage_threshold: 80\n"
             "    steps:\n"
             "      - command: %s -m coverage run --source=. -m pytest -q -p no:cacheprovider\n"
             "        format: pytest\n"
             "      - command: %s -m coverage json -q -o cov.json\n"
             "        coverage: cov.json\n",
             py, py);
    free(test_write_file(dir, "rein-verify.yaml", yaml));
    j = report_of(dir, NULL, 1);
    assert_int_equal(count_of(j, "TEST", "passed"), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(protocol(j, "TEST"), "counts"), "format")),
                        "pytest");
    json_decref(j);
    /* The table shows the coverage next to the counts. */
    o = rein(dir, NULL, NULL);
    expect_code(&o, 1);
    if (!strstr(o.stdout_text, "; coverage 66.7%") || !strstr(o.stdout_text, "below the threshold"))
        fail_msg("%s", o.stdout_text);
    out_free(&o);
    cleanup(dir);
}

/* A threshold without a number says why the number is missing: the report was not written,
 * was left over from an earlier run, or is not a coverage report. Before, all three read
 * "no coverage was reported" and the reason sat in the step's notes only. */
static void test_coverage_missing_says_why(void **state)
{
    static const char yaml[] = "protocols:\n"
                               "  TEST:\n"
                               "    coverage_threshold: 50\n"
                               "    steps:\n"
                               "      - command: %s\n"
                               "        shell: true\n"
                               "        coverage: cov.json\n";
    static const struct {
        const char *command, *why;
    } cases[] = {
        {"\"true\"", "no coverage was reported: no coverage report file was written"},
        {"touch -d 2001-01-01 cov.json", "1 coverage report file older than this run ignored"},
        {"echo '{\"x\":1}' > cov.json", "none of coverage.py's `coverage json`"},
    };
    char *dir = test_tmpdir();
    char text[300];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *j;
        const char *why;
        snprintf(text, sizeof(text), yaml, cases[i].command);
        free(test_write_file(dir, "rein-verify.yaml", text));
        j = report_of(dir, NULL, 1);
        why = json_string_value(json_object_get(protocol(j, "TEST"), "reason"));
        if (!why || !strstr(why, cases[i].why))
            fail_msg("%s: reason \"%s\", want \"%s\"", cases[i].command, why, cases[i].why);
        json_decref(j);
    }
    cleanup(dir);
}

/* A custom protocol with the seed's output_schema: the step's JSON output must match it. */
static void test_custom_protocol_output_schema(void **state)
{
    static const char yaml[] = "protocols:\n"
                               "  HEALTH:\n"
                               "    description: the service reports itself healthy\n"
                               "    steps: [{command: [cat, health.json]}]\n"
                               "    output_schema:\n"
                               "      type: object\n"
                               "      required: [status, checks]\n"
                               "      properties:\n"
                               "        status: {const: ok}\n"
                               "        checks: {type: array, items: {type: string}}\n";
    char *dir = test_tmpdir();
    json_t *j, *p;

    (void)state;
    free(test_write_file(dir, "rein-verify.yaml", yaml));
    free(test_write_file(dir, "health.json", "{\"status\": \"ok\", \"checks\": [\"db\"]}\n"));
    j = report_of(dir, NULL, 0);
    assert_string_equal(status_of(j, "HEALTH"), "passed");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(protocol(j, "HEALTH"), "output"), "status")),
                        "ok");
    json_decref(j);
    /* Logs first, the JSON document on the last line, which does not match. */
    free(test_write_file(dir, "health.json",
                         "checking...\n{\"status\": \"degraded\", \"checks\": [1]}\n"));
    j = report_of(dir, NULL, 1);
    p = protocol(j, "HEALTH");
    assert_string_equal(status_of(j, "HEALTH"), "failed");
    if (!strstr(json_string_value(json_object_get(p, "reason")),
                "does not match output_schema: /status:"))
        fail_msg("reason: %s", json_string_value(json_object_get(p, "reason")));
    assert_int_equal(json_array_size(json_object_get(p, "diagnostics")), 2);
    json_decref(j);
    free(test_write_file(dir, "health.json", "all good\n"));
    j = report_of(dir, NULL, 1);
    if (!strstr(json_string_value(json_object_get(protocol(j, "HEALTH"), "reason")),
                "the output is not JSON"))
        fail_msg("%s", json_string_value(json_object_get(protocol(j, "HEALTH"), "reason")));
    json_decref(j);
    /* A schema that cannot compile is the file's mistake, with its position. */
    free(test_write_file(dir, "rein-verify.yaml",
                         "protocols:\n  HEALTH:\n    steps: [{command: [cat, health.json]}]\n"
                         "    output_schema: {type: 5}\n"));
    {
        struct out o = rein(dir, NULL, NULL);
        expect_code(&o, 2);
        if (!strstr(o.stderr_text, "rein-verify.yaml:4:") ||
            !strstr(o.stderr_text, "not a usable JSON Schema"))
            fail_msg("%s", o.stderr_text);
        out_free(&o);
    }
    cleanup(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_passing_project),
    cmocka_unit_test(test_failing_test_project),
    cmocka_unit_test(test_lint_error_project),
    cmocka_unit_test(test_flaky_project_passes_on_retry),
    cmocka_unit_test(test_broken_build_fails_fast),
    cmocka_unit_test(test_claims_on_stdin),
    cmocka_unit_test(test_claims_without_config),
    cmocka_unit_test(test_claims_with_ledger),
    cmocka_unit_test(test_claims_issue_sentences),
    cmocka_unit_test(test_claims_bad_ledger),
    cmocka_unit_test(test_claims_judge),
    cmocka_unit_test(test_desired_failure_is_a_warning),
    cmocka_unit_test(test_malformed_protocol_file),
    cmocka_unit_test(test_unusable_command_lines),
    cmocka_unit_test(test_modes_and_only_from_cli),
    cmocka_unit_test(test_coverage_threshold_c_project),
    cmocka_unit_test(test_coverage_python_project),
    cmocka_unit_test(test_coverage_missing_says_why),
    cmocka_unit_test(test_custom_protocol_output_schema),
};

REIN_TEST_MAIN(tests)
