/*
 * Output parsers of src/verify/output.c against outputs captured from the real tools
 * (tests/data/verify_outputs/, its README says which version and command produced each):
 * pytest, Jest, Vitest 1/2/3, prove and `node --test`, cmocka, CTest, gcc, clang, GNU ld,
 * make and ESLint 8/9. Each folder is one test case: `input` is parsed in auto mode and the
 * counts, the names of the failing tests (in order) and the number of compiler or lint
 * diagnostics must equal `expected.json`.
 */
#include "test.h"

#include <dirent.h>

static char *case_path(const char *name, const char *file)
{
    char *p = NULL;

    assert_true(asprintf(&p, "%s/tests/data/verify_outputs/%s%s%s", REIN_SOURCE_DIR, name,
                         file ? "/" : "", file ? file : "") > 0);
    return p;
}

static json_t *nullable(bool known, int64_t v)
{
    return known ? json_integer(v) : json_null();
}

/* The same shape as expected.json, built from what the parser returned; "failed_messages"
 * (each failing test's message, null when it has none) only when the case lists them. */
static json_t *actual_json(const struct rein_verify_counts *c, json_t *diags, bool messages)
{
    json_t *o = json_object(), *names = json_array(), *msgs = json_array(), *d;
    int64_t lints = 0;
    size_t i;

    json_object_set_new(o, "passed", nullable(c->has_tests, c->passed));
    json_object_set_new(o, "failed", nullable(c->has_tests, c->failed));
    json_object_set_new(o, "skipped", nullable(c->has_tests, c->skipped));
    json_object_set_new(o, "total", nullable(c->has_tests, c->total));
    json_object_set_new(o, "errors", nullable(c->has_diagnostics, c->errors));
    json_object_set_new(o, "warnings", nullable(c->has_diagnostics, c->warnings));
    json_object_set_new(o, "format", c->format[0] ? json_string(c->format) : json_null());
    json_array_foreach(diags, i, d)
    {
        json_t *t = json_object_get(d, "test");
        if (t) {
            json_t *m = json_object_get(d, "message");
            json_array_append(names, t);
            json_array_append_new(msgs, m ? json_incref(m) : json_null());
        } else {
            lints++;
        }
    }
    json_object_set_new(o, "failed_tests", names);
    if (messages)
        json_object_set(o, "failed_messages", msgs);
    json_decref(msgs);
    json_object_set_new(o, "diagnostics", json_integer(lints));
    return o;
}

static void check_case(const char *name)
{
    char *in_path = case_path(name, "input"), *exp_path = case_path(name, "expected.json");
    char *input, *exp_text;
    struct rein_verify_counts c;
    json_t *diags = NULL, *expected, *actual;
    size_t len;

    input = test_read_file(in_path, &len);
    exp_text = test_read_file(exp_path, NULL);
    assert_non_null(input);
    assert_non_null(exp_text);
    assert_rein_ok(rein_verify_output_parse(input, len, REIN_VERIFY_FORMAT_AUTO, &c, &diags, NULL),
                   NULL);
    expected = json_loads(exp_text, 0, NULL);
    assert_non_null(expected);
    actual = actual_json(&c, diags, json_object_get(expected, "failed_messages") != NULL);
    if (!json_equal(expected, actual)) {
        char *a = json_dumps(actual, JSON_SORT_KEYS), *x = json_dumps(expected, JSON_SORT_KEYS);
        print_error("%s:\n  expected %s\n  got      %s\n", name, x, a);
        free(a);
        free(x);
        fail();
    }
    json_decref(expected);
    json_decref(actual);
    json_decref(diags);
    free(input);
    free(exp_text);
    free(in_path);
    free(exp_path);
}

/*
 * TAP 13's YAML block after a failure (the specification's example: "message:" with quotes),
 * as the failure's message; a block that never ends ("...") does not hide the results after
 * it, and a block after a passing test is nobody's message.
 */
static void tap13_yaml_message(void **state)
{
    static const char text[] = "TAP version 13\n1..4\n"
                               "ok 1 - Input file opened\n"
                               "  ---\n  message: 'not this one'\n  ...\n"
                               "not ok 2 - First line of the input valid\n"
                               "  ---\n"
                               "  message: 'First line invalid'\n"
                               "  severity: fail\n"
                               "  data:\n    got: 'Flirble'\n    expect: 'Fnible'\n"
                               "  ...\n"
                               "not ok 3 - Read the rest of the file\n"
                               "  ---\n  severity: fail\n"
                               "not ok 4 - Summarized correctly # TODO Not written yet\n";
    struct rein_verify_counts c;
    json_t *diags = NULL;

    (void)state;
    assert_rein_ok(
        rein_verify_output_parse(text, sizeof(text) - 1, REIN_VERIFY_FORMAT_AUTO, &c, &diags, NULL),
        NULL);
    assert_int_equal(c.total, 4);
    assert_int_equal(c.failed, 2);
    assert_int_equal(c.skipped, 1);
    assert_int_equal(json_array_size(diags), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(diags, 0), "message")),
                        "First line invalid");
    assert_null(json_object_get(json_array_get(diags, 1), "message"));
    json_decref(diags);
}

/*
 * One CTest case per captured output: unit.verify_outputs.<folder, '-' as '_'>. The build
 * finds the cases by reading the cmocka_unit_test() lines below, so each is written out.
 */
#define CASES(X)                                                                                   \
    X(pytest_collect_error, "pytest-collect-error")                                                \
    X(pytest_collect_error_q, "pytest-collect-error-q")                                            \
    X(pytest_collect_error_x, "pytest-collect-error-x")                                            \
    X(pytest_continue_rA_short, "pytest-continue-rA-short")                                        \
    X(pytest_mixed_q, "pytest-mixed-q")                                                            \
    X(pytest_mixed_v, "pytest-mixed-v")                                                            \
    X(pytest_exitfirst, "pytest-exitfirst")                                                        \
    X(pytest_deselected, "pytest-deselected")                                                      \
    X(pytest_deselected_q, "pytest-deselected-q")                                                  \
    X(pytest_all_deselected, "pytest-all-deselected")                                              \
    X(jest29_mixed, "jest29-mixed")                                                                \
    X(jest29_silent, "jest29-silent")                                                              \
    X(jest29_ci, "jest29-ci")                                                                      \
    X(jest29_verbose, "jest29-verbose")                                                            \
    X(jest29_pass, "jest29-pass")                                                                  \
    X(jest29_load_failure, "jest29-load-failure")                                                  \
    X(vitest1_mixed, "vitest1-mixed")                                                              \
    X(vitest1_load_failure, "vitest1-load-failure")                                                \
    X(vitest1_pass, "vitest1-pass")                                                                \
    X(vitest2_mixed, "vitest2-mixed")                                                              \
    X(vitest2_load_failure, "vitest2-load-failure")                                                \
    X(vitest2_silent, "vitest2-silent")                                                            \
    X(vitest3_mixed, "vitest3-mixed")                                                              \
    X(vitest3_load_failure, "vitest3-load-failure")                                                \
    X(vitest3_verbose, "vitest3-verbose")                                                          \
    X(vitest3_ci, "vitest3-ci")                                                                    \
    X(prove_mixed, "prove-mixed")                                                                  \
    X(prove_verbose, "prove-verbose")                                                              \
    X(prove_pass, "prove-pass")                                                                    \
    X(prove_bail_out, "prove-bail-out")                                                            \
    X(node_tap_nested, "node-tap-nested")                                                          \
    X(node_tap_load_failure, "node-tap-load-failure")                                              \
    X(node_tap_two_files, "node-tap-two-files")                                                    \
    X(node_spec, "node-spec")                                                                      \
    X(cmocka_tap, "cmocka-tap")                                                                    \
    X(cmocka_direct, "cmocka-direct")                                                              \
    X(ctest_plain, "ctest-plain")                                                                  \
    X(ctest_output_on_failure, "ctest-output-on-failure")                                          \
    X(ctest_parallel, "ctest-parallel")                                                            \
    X(gcc_include_chain, "gcc-include-chain")                                                      \
    X(clang_include_chain, "clang-include-chain")                                                  \
    X(gcc_color, "gcc-color")                                                                      \
    X(clang_color, "clang-color")                                                                  \
    X(gcc_fatal, "gcc-fatal")                                                                      \
    X(clang_fatal, "clang-fatal")                                                                  \
    X(gcc_undefined_reference, "gcc-undefined-reference")                                          \
    X(clang_undefined_reference, "clang-undefined-reference")                                      \
    X(gcc_missing_lib, "gcc-missing-lib")                                                          \
    X(clang_missing_lib, "clang-missing-lib")                                                      \
    X(make_gcc, "make-gcc")                                                                        \
    X(eslint8_stylish, "eslint8-stylish")                                                          \
    X(eslint8_json, "eslint8-json")                                                                \
    X(eslint8_json_clean, "eslint8-json-clean")                                                    \
    X(eslint9_stylish, "eslint9-stylish")                                                          \
    X(eslint9_json, "eslint9-json")                                                                \
    X(eslint9_json_clean, "eslint9-json-clean")                                                    \
    X(junit_pytest7, "junit-pytest7")                                                              \
    X(junit_ctest325, "junit-ctest325")

#define DEFINE_CASE(fn, dir)                                                                       \
    static void fn(void **state)                                                                   \
    {                                                                                              \
        (void)state;                                                                               \
        check_case(dir);                                                                           \
    }
CASES(DEFINE_CASE)

static const char *const case_dirs[] = {
#define CASE_DIR(fn, dir) dir,
    CASES(CASE_DIR)
#undef CASE_DIR
};

/* A folder added to tests/data/verify_outputs/ without a line in CASES would never run. */
static void every_folder_is_a_case(void **state)
{
    char *root = case_path("", NULL);
    DIR *d = opendir(root);
    struct dirent *e;
    int unlisted = 0;

    (void)state;
    assert_non_null(d);
    while ((e = readdir(d))) {
        bool listed = false;
        if (e->d_name[0] == '.' || strchr(e->d_name, '.'))
            continue;
        for (size_t i = 0; i < sizeof(case_dirs) / sizeof(case_dirs[0]); i++)
            listed |= strcmp(case_dirs[i], e->d_name) == 0;
        if (!listed) {
            print_error("tests/data/verify_outputs/%s is not in CASES\n", e->d_name);
            unlisted++;
        }
    }
    closedir(d);
    free(root);
    assert_int_equal(unlisted, 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pytest_collect_error),
    cmocka_unit_test(pytest_collect_error_q),
    cmocka_unit_test(pytest_collect_error_x),
    cmocka_unit_test(pytest_continue_rA_short),
    cmocka_unit_test(pytest_mixed_q),
    cmocka_unit_test(pytest_mixed_v),
    cmocka_unit_test(pytest_exitfirst),
    cmocka_unit_test(pytest_deselected),
    cmocka_unit_test(pytest_deselected_q),
    cmocka_unit_test(pytest_all_deselected),
    cmocka_unit_test(jest29_mixed),
    cmocka_unit_test(jest29_silent),
    cmocka_unit_test(jest29_ci),
    cmocka_unit_test(jest29_verbose),
    cmocka_unit_test(jest29_pass),
    cmocka_unit_test(jest29_load_failure),
    cmocka_unit_test(vitest1_mixed),
    cmocka_unit_test(vitest1_load_failure),
    cmocka_unit_test(vitest1_pass),
    cmocka_unit_test(vitest2_mixed),
    cmocka_unit_test(vitest2_load_failure),
    cmocka_unit_test(vitest2_silent),
    cmocka_unit_test(vitest3_mixed),
    cmocka_unit_test(vitest3_load_failure),
    cmocka_unit_test(vitest3_verbose),
    cmocka_unit_test(vitest3_ci),
    cmocka_unit_test(prove_mixed),
    cmocka_unit_test(prove_verbose),
    cmocka_unit_test(prove_pass),
    cmocka_unit_test(prove_bail_out),
    cmocka_unit_test(node_tap_nested),
    cmocka_unit_test(node_tap_load_failure),
    cmocka_unit_test(node_tap_two_files),
    cmocka_unit_test(node_spec),
    cmocka_unit_test(cmocka_tap),
    cmocka_unit_test(cmocka_direct),
    cmocka_unit_test(ctest_plain),
    cmocka_unit_test(ctest_output_on_failure),
    cmocka_unit_test(ctest_parallel),
    cmocka_unit_test(gcc_include_chain),
    cmocka_unit_test(clang_include_chain),
    cmocka_unit_test(gcc_color),
    cmocka_unit_test(clang_color),
    cmocka_unit_test(gcc_fatal),
    cmocka_unit_test(clang_fatal),
    cmocka_unit_test(gcc_undefined_reference),
    cmocka_unit_test(clang_undefined_reference),
    cmocka_unit_test(gcc_missing_lib),
    cmocka_unit_test(clang_missing_lib),
    cmocka_unit_test(make_gcc),
    cmocka_unit_test(eslint8_stylish),
    cmocka_unit_test(eslint8_json),
    cmocka_unit_test(eslint8_json_clean),
    cmocka_unit_test(eslint9_stylish),
    cmocka_unit_test(eslint9_json),
    cmocka_unit_test(eslint9_json_clean),
    cmocka_unit_test(junit_pytest7),
    cmocka_unit_test(junit_ctest325),
    cmocka_unit_test(tap13_yaml_message),
    cmocka_unit_test(every_folder_is_a_case),
};

REIN_TEST_MAIN(tests)
