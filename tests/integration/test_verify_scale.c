/*
 * Many failing tests: 51, 1,000 and 100,000 failures in TAP, pytest's and CTest's output and
 * a JUnit XML report, through rein_verify_run on a generated project (the test program is an
 * awk script that prints, or writes, what the tool would). Every failure must be counted, the
 * report must describe the first 50, and the memory rein uses must not grow with the number
 * of failures: the peak of live bytes is measured (rein's, jansson's and expat's allocations)
 * and printed, and must stay under 40 MiB (the step's output tail of 8 MiB is kept twice:
 * raw and cleaned). Before the fix, 51 failures ended in "out of memory during verification".
 *
 * The real tools run too where they are installed: a CMake project with 51 failing CTest
 * tests, a Python project with 51 failing pytest tests (and its --junitxml report). Then the
 * 100,000-failure TAP project goes through the `rein verify` command, whose peak RSS is
 * printed.
 */
/* rein-test-timeout: 300 */
#include "test.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define PEAK_MAX ((size_t)40 << 20)

static const char tap_awk[] =
    "BEGIN { print \"1..\" n;\n"
    "  for (i = 1; i <= n; i++) printf \"not ok %d - test_%d\\n\", i, i;\n"
    "  exit 1 }\n";

/* pytest's default report: progress, one FAILURES section per test, the short summary. */
static const char pytest_awk[] =
    "BEGIN {\n"
    "  print \"============================= test session starts "
    "==============================\";\n"
    "  print \"collected \" n \" items\"; print \"\"; printf \"test_big.py \";\n"
    "  for (i = 1; i <= n; i++) printf \"F\"; print \" [100%]\"; print \"\";\n"
    "  print \"=================================== FAILURES "
    "===================================\";\n"
    "  for (i = 1; i <= n; i++) {\n"
    "    printf \"_________________________________ test_%d "
    "_________________________________\\n\\n\", i;\n"
    "    printf \"    def test_%d():\\n>       assert %d == 0\\nE       assert %d == 0\\n\\n\", i, "
    "i, i;\n"
    "    printf \"test_big.py:%d: AssertionError\\n\", 2 * i }\n"
    "  print \"=========================== short test summary info "
    "============================\";\n"
    "  for (i = 1; i <= n; i++) printf \"FAILED test_big.py::test_%d - assert %d == 0\\n\", i, i;\n"
    "  printf \"============================== %d failed in 12.34s "
    "==============================\\n\", n;\n"
    "  exit 1 }\n";

/* ctest's report for n failing tests. */
static const char ctest_awk[] =
    "BEGIN { print \"Test project /tmp/big/build\";\n"
    "  for (i = 1; i <= n; i++) {\n"
    "    printf \"      Start %6d: test_%d\\n\", i, i;\n"
    "    printf \"%6d/%d Test %6d: test_%d .........***Failed    0.01 sec\\n\", i, n, i, i }\n"
    "  print \"\"; printf \"0%% tests passed, %d tests failed out of %d\\n\", n, n; print \"\";\n"
    "  print \"Total Test time (real) =   1.23 sec\"; print \"\";\n"
    "  print \"The following tests FAILED:\";\n"
    "  for (i = 1; i <= n; i++) printf \"\\t%6d - test_%d (Failed)\\n\", i, i;\n"
    "  print \"Errors while running CTest\"; exit 8 }\n";

/* A JUnit XML report written to report.xml (as pytest --junitxml or Surefire would). */
static const char junit_awk[] =
    "BEGIN { f = \"report.xml\";\n"
    "  print \"<?xml version=\\\"1.0\\\" encoding=\\\"utf-8\\\"?>\" > f;\n"
    "  printf \"<testsuites><testsuite name=\\\"big\\\" tests=\\\"%d\\\" "
    "failures=\\\"%d\\\">\\n\", n, n > f;\n"
    "  for (i = 1; i <= n; i++)\n"
    "    printf \"<testcase classname=\\\"test_big\\\" name=\\\"test_%d\\\" "
    "time=\\\"0.001\\\"><failure "
    "message=\\\"assert %d == 0\\\">def test_%d():\\n&gt; assert %d == "
    "0</failure></testcase>\\n\", "
    "i, i, i, i > f;\n"
    "  print \"</testsuite></testsuites>\" > f; close(f);\n"
    "  print \"ran \" n \" tests\"; exit 1 }\n";

struct fmt {
    const char *name;
    const char *awk;
    const char *step_extra; /* more keys of the step */
    const char *first;      /* the first failing test's name in the diagnostics */
};

static const struct fmt tap = {"tap", tap_awk, "format: tap", "test_1"};
static const struct fmt pytest = {"pytest", pytest_awk, "format: pytest", "test_big.py::test_1"};
static const struct fmt ctest = {"ctest", ctest_awk, "format: ctest", "test_1"};
static const struct fmt junit = {"junit", junit_awk, "reports: [report.xml]", "test_big.test_1"};

/* The protocol file: TEST runs awk with the generator (its program in a file, n given). */
static void write_project(const char *dir, const struct fmt *f, int n)
{
    char *yaml = NULL;

    free(test_write_file(dir, "gen.awk", f->awk));
    assert_true(asprintf(&yaml,
                         "protocols:\n"
                         "  TEST:\n"
                         "    priority: P1\n"
                         "    steps:\n"
                         "      - command: [awk, -v, n=%d, -f, gen.awk]\n"
                         "        %s\n",
                         n, f->step_extra) > 0);
    free(test_write_file(dir, "rein-verify.yaml", yaml));
    free(yaml);
}

/* Runs the protocol file of dir; checks the counts and returns the peak of live bytes. */
static size_t verify_counts(const char *dir, const char *first, int n)
{
    struct rein_verify_protocol_info info;
    struct rein_verify_opts o = {.cwd = dir};
    rein_verify_report *r = NULL;
    rein_verify_config *cfg;
    json_t *j, *diags;
    rein_error err;
    size_t peak;

    test_mem_track_start();
    cfg = rein_verify_config_find(dir, &err);
    if (!cfg)
        fail_msg("config: %s", err.msg);
    assert_rein_ok(rein_verify_run(cfg, &o, &r, &err), &err);
    assert_true(rein_verify_report_protocol(r, 0, &info));
    j = rein_verify_report_json(r);
    assert_non_null(j);
    diags = json_object_get(json_array_get(json_object_get(j, "protocols"), 0), "diagnostics");
    if (!info.counts.has_tests || info.counts.failed != n || info.counts.total != n ||
        info.counts.passed != 0)
        fail_msg("%s: counts %lld failed of %lld (%s), want %d of %d", dir,
                 (long long)info.counts.failed, (long long)info.counts.total, info.counts.format, n,
                 n);
    assert_int_equal(info.status, REIN_VERIFY_STATUS_FAILED);
    assert_int_equal(rein_verify_report_verdict(r), REIN_VERIFY_FAILED);
    /* Described up to the cap, counted beyond it. */
    assert_int_equal(json_array_size(diags), 50);
    assert_string_equal(json_string_value(json_object_get(json_array_get(diags, 0), "test")),
                        first);
    json_decref(j);
    rein_verify_report_free(r);
    rein_verify_config_free(cfg);
    peak = test_mem_track_stop();
    return peak;
}

static void run_sizes(const struct fmt *f)
{
    static const int sizes[] = {51, 1000, 100000};

    for (size_t i = 0; i < 3; i++) {
        char *dir = test_tmpdir();
        size_t peak;
        write_project(dir, f, sizes[i]);
        peak = verify_counts(dir, f->first, sizes[i]);
        print_message("%s: %d failures counted, peak memory %.2f MiB\n", f->name, sizes[i],
                      (double)peak / (1 << 20));
        if (peak > PEAK_MAX)
            fail_msg("%s: %d failures took %zu bytes at peak (limit %zu)", f->name, sizes[i], peak,
                     PEAK_MAX);
        test_rmtree(dir);
        free(dir);
    }
}

static void test_tap_failures(void **state)
{
    (void)state;
    run_sizes(&tap);
}

static void test_pytest_failures(void **state)
{
    (void)state;
    run_sizes(&pytest);
}

static void test_ctest_failures(void **state)
{
    (void)state;
    run_sizes(&ctest);
}

static void test_junit_failures(void **state)
{
    (void)state;
    run_sizes(&junit);
}

/* The 51st failure, parsed from memory: the regression of the NULL diagnostic. */
static void test_parse_51(void **state)
{
    struct rein_verify_counts c;
    json_t *diags = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    rein_error err;

    (void)state;
    fprintf(m, "1..51\n");
    for (int i = 1; i <= 51; i++)
        fprintf(m, "not ok %d - t%d\n", i, i);
    fclose(m);
    assert_rein_ok(rein_verify_output_parse(text, len, REIN_VERIFY_FORMAT_AUTO, &c, &diags, &err),
                   &err);
    assert_int_equal(c.failed, 51);
    assert_int_equal(json_array_size(diags), 50);
    json_decref(diags);
    free(text);
}

/* ---- the real tools ---- */

static bool have(const char *cmd)
{
    char line[256];

    snprintf(line, sizeof(line), "%s >/dev/null 2>&1", cmd);
    return system(line) == 0;
}

/* A C project: 51 tests registered with CTest, every one exits 1. */
static void test_real_ctest_51(void **state)
{
    char *dir;
    struct rein_buf cm;

    (void)state;
    if (!have("cmake --version") || !have("ctest --version"))
        skip();
    dir = test_tmpdir();
    rein_buf_init(&cm, 0);
    assert_rein_ok(rein_buf_adds(&cm, "cmake_minimum_required(VERSION 3.13)\nproject(big C)\n"
                                      "enable_testing()\nadd_executable(fails fails.c)\n"),
                   NULL);
    for (int i = 1; i <= 51; i++)
        assert_rein_ok(rein_buf_addf(&cm, "add_test(NAME test_%d COMMAND fails)\n", i), NULL);
    free(test_write_file(dir, "CMakeLists.txt", cm.ptr));
    rein_buf_release(&cm);
    free(test_write_file(dir, "fails.c", "int main(void) { return 1; }\n"));
    test_sh(dir, "cmake -S . -B build && cmake --build build");
    free(test_write_file(dir, "rein-verify.yaml",
                         "protocols:\n  TEST:\n    steps:\n"
                         "      - {command: ctest --test-dir build -j2, format: ctest}\n"));
    verify_counts(dir, "test_1", 51);
    test_rmtree(dir);
    free(dir);
}

/* A Python project: 51 failing pytest tests, read from the output and from --junitxml. */
static void test_real_pytest_51(void **state)
{
    const char *python = have("python3 -m pytest --version")            ? "python3"
                         : have("/usr/bin/python3 -m pytest --version") ? "/usr/bin/python3"
                                                                        : NULL;
    char *dir, yaml[400];
    struct rein_buf py;

    (void)state;
    if (!python)
        skip();
    dir = test_tmpdir();
    rein_buf_init(&py, 0);
    for (int i = 1; i <= 51; i++)
        assert_rein_ok(rein_buf_addf(&py, "def test_%d():\n    assert %d == 0\n\n", i, i), NULL);
    free(test_write_file(dir, "test_big.py", py.ptr));
    rein_buf_release(&py);
    snprintf(yaml, sizeof(yaml),
             "protocols:\n  TEST:\n    steps:\n"
             "      - {command: %s -m pytest -p no:cacheprovider test_big.py, format: pytest}\n",
             python);
    free(test_write_file(dir, "rein-verify.yaml", yaml));
    verify_counts(dir, "test_big.py::test_1", 51);
    snprintf(yaml, sizeof(yaml),
             "protocols:\n  TEST:\n    steps:\n"
             "      - command: %s -m pytest -q -p no:cacheprovider --junitxml=out/junit.xml "
             "test_big.py\n"
             "        reports: out/*.xml\n",
             python);
    free(test_write_file(dir, "rein-verify.yaml", yaml));
    verify_counts(dir, "test_big.test_1", 51);
    test_rmtree(dir);
    free(dir);
}

/* `rein verify` on the 100,000-failure TAP project: the command's peak RSS is printed. */
static void test_cli_100000(void **state)
{
    char *dir = test_tmpdir(), *out = NULL;
    char line[4096];
    struct rusage ru;
    int status;
    pid_t pid;

    (void)state;
    write_project(dir, &tap, 100000);
    snprintf(line, sizeof(line), "%s/out.txt", dir);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *f = freopen(line, "w", stdout);
        (void)f;
        if (chdir(dir) != 0)
            _exit(99);
        execl(test_rein_bin(), "rein", "verify", (char *)NULL);
        _exit(98);
    }
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1); /* FAILED, not "out of memory" */
    out = test_read_file(line, NULL);
    assert_non_null(out);
    if (!strstr(out, "0 passed, 100000 failed, 0 skipped of 100000"))
        fail_msg("rein verify printed:\n%.2000s", out);
    print_message("rein verify, 100000 failures: peak RSS %.1f MiB (sanitizer build)\n",
                  (double)ru.ru_maxrss / 1024);
    free(out);
    test_rmtree(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_parse_51),        cmocka_unit_test(test_tap_failures),
    cmocka_unit_test(test_pytest_failures), cmocka_unit_test(test_ctest_failures),
    cmocka_unit_test(test_junit_failures),  cmocka_unit_test(test_real_ctest_51),
    cmocka_unit_test(test_real_pytest_51),  cmocka_unit_test(test_cli_100000),
};

REIN_TEST_MAIN(tests)
