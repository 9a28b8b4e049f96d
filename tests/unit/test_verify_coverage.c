/*
 * The coverage readers (src/verify/coverage.c) against reports of the real tools
 * (tests/data/coverage/, its README says which version and command produced each): gcovr,
 * lcov, coverage.py, go test/go tool cover, JaCoCo and Jest/Istanbul. Each folder is one
 * case. Then `coverage` in success conditions, and what malformed reports give.
 */
#include "test.h"

#include <math.h>

static void check_case(const char *name)
{
    char *path = NULL, *exp_path = NULL, *exp_text, *input;
    struct rein_verify_coverage cov;
    json_t *want;
    const char *read;
    double pct;
    size_t len;
    rein_error err;

    assert_true(asprintf(&path, "%s/tests/data/coverage/%s/input", REIN_SOURCE_DIR, name) > 0);
    assert_true(
        asprintf(&exp_path, "%s/tests/data/coverage/%s/expected.json", REIN_SOURCE_DIR, name) > 0);
    exp_text = test_read_file(exp_path, NULL);
    assert_non_null(exp_text);
    want = json_loads(exp_text, 0, NULL);
    assert_non_null(want);
    read = json_string_value(json_object_get(want, "read"));
    pct = json_number_value(json_object_get(want, "percent"));
    if (rein_verify_coverage_read(path, &cov, &err) != REIN_OK)
        fail_msg("%s: %s", name, err.msg);
    if (fabs(cov.percent - pct) > 1e-9 ||
        strcmp(cov.format, json_string_value(json_object_get(want, "format"))) != 0)
        fail_msg("%s: read %.12g%% as %s, want %.12g%% as %s", name, cov.percent, cov.format, pct,
                 json_string_value(json_object_get(want, "format")));
    if (json_object_get(want, "total")) {
        assert_int_equal(cov.total, json_integer_value(json_object_get(want, "total")));
        assert_int_equal(cov.covered, json_integer_value(json_object_get(want, "covered")));
    }
    if (strcmp(read, "output") == 0) {
        struct rein_verify_counts c;
        input = test_read_file(path, &len);
        assert_non_null(input);
        assert_rein_ok(
            rein_verify_output_parse(input, len, REIN_VERIFY_FORMAT_AUTO, &c, NULL, &err), &err);
        if (!c.has_coverage || fabs(c.coverage - pct) > 1e-9)
            fail_msg("%s: the output gives %s%.12g, want %.12g", name,
                     c.has_coverage ? "" : "no coverage ", c.coverage, pct);
        free(input);
    }
    json_decref(want);
    free(exp_text);
    free(path);
    free(exp_path);
}

#define CASE(fn, name)                                                                             \
    static void fn(void **state)                                                                   \
    {                                                                                              \
        (void)state;                                                                               \
        check_case(name);                                                                          \
    }

CASE(test_gcovr_text, "gcovr-text")
CASE(test_gcovr_print_summary, "gcovr-print-summary")
CASE(test_gcovr_json_summary, "gcovr-json-summary")
CASE(test_gcovr_cobertura, "gcovr-cobertura")
CASE(test_lcov_info, "lcov-info")
CASE(test_lcov_summary, "lcov-summary")
CASE(test_coveragepy_report, "coveragepy-report")
CASE(test_coveragepy_report_precision, "coveragepy-report-precision")
CASE(test_coveragepy_report_branch, "coveragepy-report-branch")
CASE(test_coveragepy_json, "coveragepy-json")
CASE(test_coveragepy_xml, "coveragepy-xml")
CASE(test_go_test_cover, "go-test-cover")
CASE(test_go_cover_func, "go-cover-func")
CASE(test_go_coverprofile, "go-coverprofile")
CASE(test_go_coverpkg, "go-coverpkg")
CASE(test_jacoco_xml, "jacoco-xml")
CASE(test_jest_text, "jest-text")
CASE(test_istanbul_summary_json, "istanbul-summary-json")

static void expect_parse_error(const char *text, const char *want)
{
    struct rein_verify_coverage cov;
    rein_error err;

    assert_int_equal(rein_verify_coverage_parse(text, strlen(text), &cov, &err), REIN_EPARSE);
    if (!strstr(err.msg, want))
        fail_msg("\"%s\": error \"%s\" does not say \"%s\"", text, err.msg, want);
}

static void test_malformed(void **state)
{
    (void)state;
    expect_parse_error("", "empty");
    expect_parse_error("{\"totals\": {}}", "none of coverage.py");
    expect_parse_error("{\"totals\": ", "not a JSON object");
    expect_parse_error("mode: set\nx.go:1.1,2.2 one 1\n", "Go coverage profile");
    expect_parse_error("<report><counter type=\"LINE\" missed=\"x\" covered=\"1\"/></report>",
                       "not a count");
    expect_parse_error("<report></report>", "no report-wide LINE counter");
    expect_parse_error("<coverage line-rate=\"1.5\"/>", "fraction");
    expect_parse_error("<html/>", "neither <report>");
    expect_parse_error("<report><counter", "malformed XML");
    expect_parse_error("<!DOCTYPE r [<!ENTITY a \"b\">]><report/>", "entity");
    expect_parse_error("SF:a.c\nLF:2\nLH:5\nend_of_record\n", "not a percentage");
    expect_parse_error("hello\n", "no coverage total");
}

/* coverage in success conditions, and a threshold on TEST. */
static void test_success_conditions(void **state)
{
    static const char *const cases[][3] = {
        /* protocol keys, the step's printed text, the expected status */
        {"success: coverage >= 70", "TOTAL 10 3 75%", "passed"},
        {"success: coverage >= 80", "TOTAL 10 3 75%", "failed"},
        {"success: coverage >= 80", "no coverage here", "failed"},
        {"coverage_threshold: 75", "TOTAL 10 3 75%", "passed"},
        {"coverage_threshold: \"76%\"", "TOTAL 10 3 75%", "failed"},
        {"coverage_threshold: 50", "nothing", "failed"},
    };
    char *dir = test_tmpdir();

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *yaml = NULL;
        rein_verify_config *cfg;
        rein_verify_report *r = NULL;
        struct rein_verify_opts o = {.cwd = dir};
        struct rein_verify_protocol_info p;
        rein_error err;
        assert_true(
            asprintf(&yaml, "protocols:\n  TEST:\n    %s\n    steps: [{command: [echo, \"%s\"]}]\n",
                     cases[i][0], cases[i][1]) > 0);
        cfg = rein_verify_config_parse(yaml, strlen(yaml), "t.yaml", &err);
        if (!cfg)
            fail_msg("%s: %s", yaml, err.msg);
        assert_rein_ok(rein_verify_run(cfg, &o, &r, &err), &err);
        assert_true(rein_verify_report_protocol(r, 0, &p));
        if (strcmp(rein_verify_status_name(p.status), cases[i][2]) != 0)
            fail_msg("%s: %s (%s), want %s", yaml, rein_verify_status_name(p.status), p.reason,
                     cases[i][2]);
        if (strstr(cases[i][0], "threshold") && strcmp(cases[i][2], "failed") == 0)
            assert_non_null(strstr(p.reason, "coverage"));
        rein_verify_report_free(r);
        rein_verify_config_free(cfg);
        free(yaml);
    }
    /* A threshold that is no percentage is the file's mistake. */
    {
        rein_error err;
        const char *bad = "protocols:\n  TEST:\n    coverage_threshold: 120\n"
                          "    steps: [{command: \"true\"}]\n";
        assert_null(rein_verify_config_parse(bad, strlen(bad), "t.yaml", &err));
        assert_non_null(strstr(err.msg, "t.yaml:3:25: protocols.TEST.coverage_threshold"));
    }
    test_rmtree(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_gcovr_text),
    cmocka_unit_test(test_gcovr_print_summary),
    cmocka_unit_test(test_gcovr_json_summary),
    cmocka_unit_test(test_gcovr_cobertura),
    cmocka_unit_test(test_lcov_info),
    cmocka_unit_test(test_lcov_summary),
    cmocka_unit_test(test_coveragepy_report),
    cmocka_unit_test(test_coveragepy_report_precision),
    cmocka_unit_test(test_coveragepy_report_branch),
    cmocka_unit_test(test_coveragepy_json),
    cmocka_unit_test(test_coveragepy_xml),
    cmocka_unit_test(test_go_test_cover),
    cmocka_unit_test(test_go_cover_func),
    cmocka_unit_test(test_go_coverprofile),
    cmocka_unit_test(test_go_coverpkg),
    cmocka_unit_test(test_jacoco_xml),
    cmocka_unit_test(test_jest_text),
    cmocka_unit_test(test_istanbul_summary_json),
    cmocka_unit_test(test_malformed),
    cmocka_unit_test(test_success_conditions),
};

REIN_TEST_MAIN(tests)
