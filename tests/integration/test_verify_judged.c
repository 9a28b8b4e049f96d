/*
 * FUNCTIONALITY and ARCHITECT without steps in `rein verify`: the real `rein` binary runs in
 * generated projects (a C program and a Python module that should tell primes, each in a git
 * repository) and asks the scripted model server, over real HTTP, as its judge.
 *
 * Checked: without a model the protocols are `unverifiable` (exit 3, SUCCESS_WITH_WARNINGS,
 * the reason says how to give one) and never a configuration error; the judge's PASS passes
 * and its FAIL fails with its risks; NEEDS_REVIEW is unverifiable and asks for a person;
 * ARCHITECT sends the diff; FUNCTIONALITY with `run:` gets cases from the model through the
 * `cases` tool and runs them (one wrong answer of the program fails it, with the case named);
 * an invalid set of cases is fed back and then unverifiable.
 */
/* rein-test-timeout: 120 */
#include "test.h"

#include "model_server.h"

struct out {
    int code;
    char *text;
    json_t *report;
};

/* A C project whose is_prime is wrong for 9, in a git repository, plus the protocol file. */
static char *c_project(const char *protocols)
{
    char *dir = test_tmpdir();

    free(test_write_file(dir, "prime.c",
                         "#include <stdio.h>\n#include <stdlib.h>\n"
                         "static int is_prime(long n)\n{\n    if (n < 2)\n        return 0;\n"
                         "    for (long d = 2; d * d < n; d++)\n        if (n % d == 0)\n"
                         "            return 0;\n    return 1;\n}\n"
                         "int main(int argc, char **argv)\n{\n"
                         "    printf(\"%s\\n\", is_prime(strtol(argc > 1 ? argv[1] : \"0\", "
                         "NULL, 10)) ? \"true\" : \"false\");\n    return 0;\n}\n"));
    free(test_write_file(dir, "rein-verify.yaml", protocols));
    free(test_write_file(dir, ".gitignore", "is_prime\n"));
    test_sh(dir, "git init -q . && git add -A && git -c user.name=t -c user.email=t@example.com "
                 "commit -qm init && cc -o is_prime prime.c");
    return dir;
}

/* A Python project with a correct is_prime. */
static char *py_project(const char *protocols)
{
    char *dir = test_tmpdir();

    free(test_write_file(dir, "prime.py",
                         "import sys\n\n\ndef is_prime(n):\n    if n < 2:\n        return False\n"
                         "    d = 2\n    while d * d <= n:\n        if n % d == 0:\n"
                         "            return False\n        d += 1\n    return True\n\n\n"
                         "if __name__ == \"__main__\":\n"
                         "    print(str(is_prime(int(sys.argv[1]))).lower())\n"));
    free(test_write_file(dir, "rein-verify.yaml", protocols));
    test_sh(dir, "git init -q . && git add -A && git -c user.name=t -c user.email=t@example.com "
                 "commit -qm init");
    return dir;
}

/* Runs `rein verify --json ARGS...` in dir with the model server (ms may be NULL). */
static struct out verify(const char *dir, ms_server *ms, const char *const *args)
{
    const char *argv[24] = {test_rein_bin(), "verify", "--json"};
    const char *env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "REIN_LOG=error", NULL};
    struct rein_proc_run_opts o = {.proc = {.argv = argv, .cwd = dir, .env = env},
                                   .timeout_ms = 60000};
    struct rein_proc_result r;
    struct out res;
    size_t n = 3;

    if (ms) {
        argv[n++] = "--provider";
        argv[n++] = "openai";
        argv[n++] = "--base-url";
        argv[n++] = ms_openai_url(ms);
        argv[n++] = "--model";
        argv[n++] = "test-model";
    }
    for (size_t i = 0; args && args[i]; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    res.code = r.exit_code;
    res.text = strdup(r.out.ptr);
    res.report = json_loads(r.out.ptr, 0, NULL);
    if (!res.report)
        fail_msg("exit %d, not JSON:\n%s\nstderr:\n%s", r.exit_code, r.out.ptr, r.err.ptr);
    rein_proc_result_release(&r);
    return res;
}

static void out_free(struct out *o)
{
    free(o->text);
    json_decref(o->report);
}

static const json_t *proto(const struct out *o, const char *name)
{
    size_t i;
    const json_t *p;

    json_array_foreach(json_object_get(o->report, "protocols"), i, p)
    {
        if (strcmp(json_string_value(json_object_get(p, "name")), name) == 0)
            return p;
    }
    fail_msg("no protocol %s in %s", name, o->text);
    return NULL;
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));

    return s ? s : "";
}

#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        if (!strstr((hay), (needle)))                                                              \
            fail_msg("\"%s\" not in:\n%s", (needle), (hay));                                       \
    } while (0)

static void verdict(ms_server *ms, const char *v, const char *reasoning, const char *risks)
{
    char args[600];

    snprintf(args, sizeof(args),
             "{\"functionality_score\": 8, \"quality_score\": 8, \"risks\": %s, \"verdict\": "
             "\"%s\", \"reasoning\": \"%s\"}",
             risks, v, reasoning);
    assert_rein_ok(ms_add_tool_call(ms, NULL, "verdict", args), NULL);
}

static ms_server *server(void)
{
    rein_error err;
    ms_server *ms = ms_start(0, &err);

    if (!ms)
        fail_msg("model server: %s", err.msg);
    return ms;
}

static const char judged_protocols[] = "protocols:\n"
                                       "  FUNCTIONALITY: {priority: P1}\n"
                                       "  ARCHITECT: {priority: P2, when: [always]}\n";

static void test_without_a_model_unverifiable(void **state)
{
    char *dir = c_project(judged_protocols);
    struct out o;

    (void)state;
    o = verify(dir, NULL, NULL);
    /* Warnings, not a configuration error (2) and not a pass. */
    assert_int_equal(o.code, 3);
    assert_string_equal(str(o.report, "verdict"), "SUCCESS_WITH_WARNINGS");
    assert_string_equal(str(proto(&o, "FUNCTIONALITY"), "status"), "unverifiable");
    assert_contains(str(proto(&o, "FUNCTIONALITY"), "reason"), "no model to judge FUNCTIONALITY");
    assert_string_equal(str(proto(&o, "ARCHITECT"), "status"), "unverifiable");
    out_free(&o);
    test_rmtree(dir);
    free(dir);
}

static void test_judge_pass_and_fail(void **state)
{
    const char *goal[] = {"--goal", "is_prime tells whether a number is prime", NULL};
    char *dir = c_project(judged_protocols);
    ms_server *ms = server();
    const struct ms_request *r;
    struct out o;

    (void)state;
    /* Group 3 runs both in parallel: the replies are matched to the prompts. */
    assert_rein_ok(
        ms_script(ms,
                  "[{\"match\": {\"body_contains\": \"The code must have this "
                  "behaviour\"}, \"tool_calls\": [{\"name\": \"verdict\", "
                  "\"arguments\": \"{\\\"functionality_score\\\": 3, "
                  "\\\"quality_score\\\": 7, \\\"risks\\\": [\\\"9 is called "
                  "prime: the loop stops before d*d == n\\\"], \\\"verdict\\\": "
                  "\\\"FAIL\\\", \\\"reasoning\\\": \\\"squares of primes pass\\\"}\"}]},"
                  " {\"match\": {\"body_contains\": \"Review the architecture\"}, "
                  "\"tool_calls\": [{\"name\": \"verdict\", \"arguments\": "
                  "\"{\\\"functionality_score\\\": 8, \\\"quality_score\\\": 8, "
                  "\\\"risks\\\": [], \\\"verdict\\\": \\\"PASS\\\", "
                  "\\\"reasoning\\\": \\\"one small file\\\"}\"}]}]",
                  false, NULL),
        NULL);
    free(test_write_file(dir, "NOTES.md", "a new file, so ARCHITECT has a diff\n"));
    o = verify(dir, ms, goal);
    assert_int_equal(o.code, 1);
    assert_string_equal(str(proto(&o, "FUNCTIONALITY"), "status"), "failed");
    assert_contains(str(proto(&o, "FUNCTIONALITY"), "reason"), "the judge: squares of primes pass");
    assert_contains(
        str(json_array_get(json_object_get(proto(&o, "FUNCTIONALITY"), "diagnostics"), 0),
            "message"),
        "9 is called prime");
    assert_string_equal(str(proto(&o, "ARCHITECT"), "status"), "passed");
    assert_int_equal(ms_request_count(ms), 2);
    for (size_t i = 0; i < 2; i++) {
        r = ms_request(ms, i);
        /* The judge is a tool call: the verdict tool, named in tool_choice. */
        assert_contains(r->body, "\"name\":\"verdict\"");
        assert_contains(r->body, "is_prime tells whether a number is prime");
        assert_contains(r->body, "NOTES.md");
    }
    out_free(&o);
    ms_stop(ms);
    test_rmtree(dir);
    free(dir);
}

static void test_needs_review(void **state)
{
    char *dir = py_project("protocols:\n  ARCHITECT: {priority: P1, when: [always]}\n");
    ms_server *ms = server();
    struct out o;

    (void)state;
    verdict(ms, "NEEDS_REVIEW", "a new public module; a person should decide", "[]");
    free(test_write_file(dir, "api.py", "def public():\n    return 1\n"));
    o = verify(dir, ms, NULL);
    assert_int_equal(o.code, 3);
    assert_string_equal(str(proto(&o, "ARCHITECT"), "status"), "unverifiable");
    assert_true(json_is_true(json_object_get(json_object_get(o.report, "review"), "required")));
    assert_contains(o.text, "the judge asks for a person's review");
    out_free(&o);
    ms_stop(ms);
    test_rmtree(dir);
    free(dir);
}

/* The seed's isPrime example: the model proposes cases, the program runs them. */
static void test_cases_run_c_and_python(void **state)
{
    static const char cases[] =
        "{\"behaviour\": \"is_prime(n) is true exactly for primes\", \"cases\": ["
        "{\"input\": \"2\", \"expected\": \"true\"}, {\"input\": \"4\", \"expected\": \"false\"},"
        "{\"input\": \"17\", \"expected\": \"true\"}, {\"input\": \"1\", \"expected\": \"false\"},"
        "{\"input\": \"9\", \"expected\": \"false\", \"why\": \"a square\"}]}";
    const char *goal[] = {"--goal", "Implement is_prime", NULL};
    char *dir = c_project("protocols:\n  FUNCTIONALITY:\n    run: ./is_prime {input}\n");
    ms_server *ms = server();
    const json_t *p;
    struct out o;

    (void)state;
    assert_rein_ok(ms_add_tool_call(ms, NULL, "cases", cases), NULL);
    o = verify(dir, ms, goal);
    p = proto(&o, "FUNCTIONALITY");
    assert_int_equal(o.code, 1);
    assert_string_equal(str(p, "status"), "failed");
    /* The loop stops before d*d == n: 4 and 9 are called prime. */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "counts"), "passed")),
                     3);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "counts"), "failed")),
                     2);
    assert_string_equal(str(json_array_get(json_object_get(p, "diagnostics"), 0), "test"),
                        "case 2: 4");
    assert_string_equal(str(json_array_get(json_object_get(p, "diagnostics"), 1), "test"),
                        "case 5: 9");
    assert_contains(str(json_array_get(json_object_get(p, "diagnostics"), 0), "message"),
                    "expected \"false\", got \"true\"");
    assert_contains(ms_request(ms, 0)->body, "\"tool_choice\":{\"type\":\"function\"");
    assert_contains(ms_request(ms, 0)->body, "./is_prime {input}");
    out_free(&o);
    ms_stop(ms);
    test_rmtree(dir);
    free(dir);

    /* The Python module is right: every case passes. */
    dir = py_project("protocols:\n  FUNCTIONALITY:\n    run: python3 prime.py {input}\n");
    ms = server();
    assert_rein_ok(ms_add_tool_call(ms, NULL, "cases", cases), NULL);
    o = verify(dir, ms, goal);
    p = proto(&o, "FUNCTIONALITY");
    assert_string_equal(str(p, "status"), "passed");
    assert_contains(str(p, "reason"), "all 5 proposed cases passed");
    assert_string_equal(str(json_object_get(p, "judge"), "behaviour"),
                        "is_prime(n) is true exactly for primes");
    out_free(&o);
    ms_stop(ms);
    test_rmtree(dir);
    free(dir);
}

static void test_invalid_cases_fed_back(void **state)
{
    const char *goal[] = {"--goal", "Implement is_prime", NULL};
    char *dir = c_project("protocols:\n  FUNCTIONALITY:\n    run: ./is_prime {input}\n");
    ms_server *ms = server();
    struct out o;

    (void)state;
    assert_rein_ok(ms_add_tool_call(ms, NULL, "cases", "{\"cases\": []}"), NULL);
    assert_rein_ok(ms_add_tool_call(ms, NULL, "cases", "{\"behaviour\": \"x\"}"), NULL);
    o = verify(dir, ms, goal);
    assert_int_equal(o.code, 3);
    assert_string_equal(str(proto(&o, "FUNCTIONALITY"), "status"), "unverifiable");
    assert_contains(str(proto(&o, "FUNCTIONALITY"), "reason"),
                    "the model proposed no valid cases: no valid set of cases after 2 replies");
    /* The second request carried the pipeline's invalid payload. */
    assert_contains(ms_request(ms, 1)->body, "required property");
    out_free(&o);
    ms_stop(ms);
    test_rmtree(dir);
    free(dir);
}

static void test_protocol_file_rules(void **state)
{
    static const char *const bad[][2] = {
        {"protocols:\n  LINT: {priority: P1}\n", "only FUNCTIONALITY and ARCHITECT may have none"},
        {"protocols:\n  ARCHITECT:\n    run: x\n", "only FUNCTIONALITY without steps has `run`"},
        {"protocols:\n  FUNCTIONALITY:\n    output_schema: {type: object}\n",
         "applies to what steps print"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rein_error err;
        assert_null(rein_verify_config_parse(bad[i][0], strlen(bad[i][0]), "t.yaml", &err));
        assert_contains(err.msg, bad[i][1]);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_without_a_model_unverifiable),
    cmocka_unit_test(test_judge_pass_and_fail),
    cmocka_unit_test(test_needs_review),
    cmocka_unit_test(test_cases_run_c_and_python),
    cmocka_unit_test(test_invalid_cases_fed_back),
    cmocka_unit_test(test_protocol_file_rules),
};

REIN_TEST_MAIN(tests)
