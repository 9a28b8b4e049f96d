/*
 * `rein verify --init` on generated projects of every kind it knows (CMake with CTest and
 * clang-tidy, Make, pnpm with TypeScript and ESLint, npm with scripts, pytest with ruff, tox,
 * cargo, go, Maven, Gradle with its wrapper): the real `rein` binary writes rein-verify.yaml,
 * which must name the commands of that kind, load as a protocol file, and, for the C and
 * Python projects, pass `rein verify` when the project is sound. An existing file is kept
 * unless --force is given; a folder with nothing to check is exit 2.
 *
 * Then the criteria a goal gives (rein_verify_criteria_derive): ten goals in English,
 * simplified and traditional Chinese, against projects with and without tests, a linter and
 * TypeScript.
 */
/* rein-test-timeout: 120 */
#include "test.h"

struct out {
    int code;
    char *out, *err;
};

static struct out rein_in(const char *dir, const char *a1, const char *a2)
{
    const char *argv[] = {test_rein_bin(), "verify", a1, a2, NULL};
    struct rein_proc_run_opts o = {.proc = {.argv = argv, .cwd = dir}, .timeout_ms = 90000};
    struct rein_proc_result r;
    struct out res;

    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    res.code = r.exit_code;
    res.out = strdup(r.out.ptr);
    res.err = strdup(r.err.ptr);
    rein_proc_result_release(&r);
    return res;
}

static void out_free(struct out *o)
{
    free(o->out);
    free(o->err);
}

#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        if (!strstr((hay), (needle)))                                                              \
            fail_msg("\"%s\" not in:\n%s", (needle), (hay));                                       \
    } while (0)

/* Files "name=content" (NULL-terminated) into a new folder. */
static char *make_project(const char *const *files)
{
    char *dir = test_tmpdir();

    for (size_t i = 0; files[i]; i++) {
        const char *eq = strchr(files[i], '=');
        char name[200];
        snprintf(name, sizeof(name), "%.*s", (int)(eq - files[i]), files[i]);
        free(test_write_file(dir, name, eq + 1));
    }
    return dir;
}

/* --init in a new project: exit 0, and the written file holds every string of want. */
static char *init_and_check(const char *const *files, const char *const *want)
{
    char *dir = make_project(files), *path = NULL, *yaml;
    struct out o = rein_in(dir, "--init", NULL);
    rein_verify_config *cfg;
    rein_error err;

    if (o.code != 0)
        fail_msg("--init exit %d: %s", o.code, o.err);
    assert_true(asprintf(&path, "%s/rein-verify.yaml", dir) > 0);
    yaml = test_read_file(path, NULL);
    assert_non_null(yaml);
    for (size_t i = 0; want[i]; i++)
        assert_contains(yaml, want[i]);
    cfg = rein_verify_config_load(path, &err);
    if (!cfg)
        fail_msg("the written file does not load: %s\n%s", err.msg, yaml);
    rein_verify_config_free(cfg);
    free(yaml);
    free(path);
    out_free(&o);
    return dir;
}

static void done(char *dir)
{
    test_rmtree(dir);
    free(dir);
}

static void test_init_cmake_c_project(void **state)
{
    const char *files[] = {"CMakeLists.txt=cmake_minimum_required(VERSION 3.13)\nproject(calc C)\n"
                           "enable_testing()\nadd_executable(t t.c)\nadd_test(NAME t COMMAND t)\n",
                           "t.c=int main(void) { return 0; }\n",
                           ".clang-tidy=Checks: '-*,bugprone-*'\n", NULL};
    const char *want[] = {"#   cmake (CMakeLists.txt)",
                          "cmake -S . -B build",
                          "cmake --build build",
                          "ctest --test-dir build --output-on-failure",
                          "clang-tidy --quiet -p build",
                          "BUILD:\n    priority: P0",
                          NULL};
    char *dir;
    struct out o;

    (void)state;
    dir = init_and_check(files, want);
    /* A second --init keeps the file; --force replaces it. */
    o = rein_in(dir, "--init", NULL);
    assert_int_equal(o.code, 2);
    assert_contains(o.err, "already here");
    out_free(&o);
    o = rein_in(dir, "--init", "--force");
    assert_int_equal(o.code, 0);
    out_free(&o);
    /* The generated checks run: build and tests pass (clang-tidy is there in CI). */
    o = rein_in(dir, "--only", "BUILD,TEST");
    if (o.code != 0)
        fail_msg("rein verify on the initialised project: exit %d\n%s\n%s", o.code, o.out, o.err);
    assert_contains(o.out, "1 passed, 0 failed");
    out_free(&o);
    /* clang-tidy's file list comes from git: outside a repository LINT fails saying so,
     * where it used to pass having checked no file. */
    o = rein_in(dir, "--only", "LINT");
    if (o.code != 1 || !strstr(o.out, "not a git repository"))
        fail_msg("LINT outside a git repository: exit %d\n%s\n%s", o.code, o.out, o.err);
    out_free(&o);
    done(dir);
}

/* A Makefile whose first rule runs the tests: plain `make` would run them as the P0 build
 * (so one failing test stopped `rein loop` as a blocking failure), so BUILD makes the first
 * target that builds; a Makefile that only runs tests gets no BUILD from make at all. */
static void test_init_make_first_rule_runs_tests(void **state)
{
    const char *files[] = {"Makefile=test: prog\n\t./prog\nCC := cc\n%.o: %.c\n\t$(CC) -c $<\n"
                           "prog lib: p.c\n\tcc -o prog p.c\n",
                           "p.c=int main(void) { return 1; }\n", NULL};
    const char *want[] = {"command: make prog, format: gcc", "command: make test", NULL};
    const char *only_tests[] = {"Makefile=.PHONY: check\ncheck:\n\ttrue\n", NULL};
    const char *want_tests[] = {"command: make check", NULL};
    char *dir, *path = NULL, *yaml;
    struct out o;

    (void)state;
    dir = init_and_check(files, want);
    /* The build passes and the failing test fails TEST, not BUILD. */
    o = rein_in(dir, NULL, NULL);
    if (o.code != 1 || !strstr(o.out, "BUILD           P0   passed") ||
        !strstr(o.out, "TEST            P1   failed"))
        fail_msg("exit %d:\n%s%s", o.code, o.out, o.err);
    out_free(&o);
    done(dir);
    dir = init_and_check(only_tests, want_tests);
    assert_true(asprintf(&path, "%s/rein-verify.yaml", dir) > 0);
    yaml = test_read_file(path, NULL);
    if (strstr(yaml, "BUILD"))
        fail_msg("a BUILD step for a Makefile that only runs tests:\n%s", yaml);
    free(yaml);
    free(path);
    done(dir);
}

static void test_init_make_project(void **state)
{
    const char *files[] = {"Makefile=all:\n\tcc -o t t.c\ntest: all\n\t./t\nlint:\n\ttrue\n",
                           "t.c=int main(void) { return 0; }\n", NULL};
    const char *want[] = {"#   make (Makefile)", "command: make all", "command: make test",
                          "command: make lint", NULL};
    char *dir;
    struct out o;

    (void)state;
    dir = init_and_check(files, want);
    o = rein_in(dir, NULL, NULL);
    if (o.code != 0)
        fail_msg("exit %d\n%s\n%s", o.code, o.out, o.err);
    out_free(&o);
    done(dir);
}

static void test_init_node_projects(void **state)
{
    const char *pnpm[] = {"package.json={\"name\": \"x\", \"scripts\": {\"build\": \"tsc\", "
                          "\"test\": \"vitest run\"}}",
                          "pnpm-lock.yaml=lockfileVersion: '6.0'\n", "tsconfig.json={}",
                          "eslint.config.mjs=export default [];\n", NULL};
    const char *pnpm_want[] = {"#   pnpm (package.json, pnpm-lock.yaml)",
                               "#   typescript (tsconfig.json)",
                               "command: pnpm run build",
                               "TYPECHECK:",
                               "command: pnpm exec tsc --noEmit",
                               "command: pnpm test",
                               "command: pnpm exec eslint ., format: eslint",
                               NULL};
    const char *yarn[] = {"package.json={\"name\": \"x\", \"scripts\": {\"lint\": \"eslint .\", "
                          "\"test\": \"jest\"}}",
                          "yarn.lock=# yarn lockfile v1\n", NULL};
    const char *yarn_want[] = {"command: yarn test", "command: yarn run lint", NULL};
    /* Yarn without a lint script: ESLint through yarn (Plug'n'Play has no .bin for npx). */
    const char *yarn_eslint[] = {
        "package.json={\"name\": \"x\", \"scripts\": {\"test\": \"jest\"}}",
        "yarn.lock=# yarn lockfile v1\n", ".eslintrc.json={}", "tsconfig.json={}", NULL};
    const char *yarn_eslint_want[] = {"command: yarn eslint ., format: eslint",
                                      "command: yarn tsc --noEmit", NULL};
    const char *npm[] = {"package.json={\"name\": \"x\", \"scripts\": {\"test\": \"echo \\\"Error: "
                         "no test specified\\\" && exit 1\"}}",
                         ".eslintrc.json={}", NULL};
    const char *npm_want[] = {"#   npm (package.json)", "npx eslint .", NULL};
    char *dir, *path = NULL, *yaml;

    (void)state;
    done(init_and_check(pnpm, pnpm_want));
    done(init_and_check(yarn, yarn_want));
    done(init_and_check(yarn_eslint, yarn_eslint_want));
    /* npm init's placeholder test script is not a test command. */
    dir = init_and_check(npm, npm_want);
    assert_true(asprintf(&path, "%s/rein-verify.yaml", dir) > 0);
    yaml = test_read_file(path, NULL);
    assert_null(strstr(yaml, "TEST:"));
    free(yaml);
    free(path);
    done(dir);
}

static void test_init_python_projects(void **state)
{
    const char *pytest[] = {"pyproject.toml=[project]\nname = \"calc\"\n\n[tool.ruff]\n"
                            "line-length = 100\n",
                            "calc.py=def add(a, b):\n    return a + b\n",
                            "tests/test_calc.py=from calc import add\n\n\ndef test_add():\n"
                            "    assert add(2, 2) == 4\n",
                            "tests/conftest.py=import sys, os\n"
                            "sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))\n",
                            NULL};
    const char *pytest_want[] = {"#   python (pyproject.toml)", "python3 -m compileall",
                                 "python3 -m pytest -q -p no:cacheprovider, format: pytest",
                                 "command: ruff check .", NULL};
    const char *tox[] = {"tox.ini=[tox]\nenvlist = py3\n", "setup.py=# empty\n", NULL};
    const char *tox_want[] = {"#   tox (tox.ini)", "command: tox -q", NULL};
    char *dir;
    struct out o;

    (void)state;
    dir = init_and_check(pytest, pytest_want);
    /* The checks run where pytest is installed on the python3 of PATH. */
    if (system("python3 -m pytest --version >/dev/null 2>&1") == 0) {
        o = rein_in(dir, "--only", "BUILD,TEST");
        if (o.code != 0)
            fail_msg("exit %d\n%s\n%s", o.code, o.out, o.err);
        assert_contains(o.out, "1 passed, 0 failed");
        out_free(&o);
    }
    done(dir);
    done(init_and_check(tox, tox_want));
}

static void test_init_cargo_go_maven_gradle(void **state)
{
    const char *cargo[] = {"Cargo.toml=[package]\nname = \"x\"\n", "clippy.toml=\n", NULL};
    const char *cargo_want[] = {"command: cargo build", "command: cargo test",
                                "cargo clippy -- -D warnings", NULL};
    const char *go[] = {"go.mod=module example.com/x\n\ngo 1.19\n", NULL};
    const char *go_want[] = {"command: go build ./...", "command: go vet ./...",
                             "command: go test ./...", NULL};
    const char *maven[] = {"pom.xml=<project/>\n", NULL};
    const char *maven_want[] = {"mvn -B -q compile", "mvn -B -q test",
                                "reports: [target/surefire-reports/TEST-*.xml]", NULL};
    const char *gradle[] = {"build.gradle.kts=plugins { java }\n", "gradlew=#!/bin/sh\n", NULL};
    const char *gradle_want[] = {"./gradlew assemble", "./gradlew test",
                                 "reports: [build/test-results/test/*.xml]", NULL};

    (void)state;
    done(init_and_check(cargo, cargo_want));
    done(init_and_check(go, go_want));
    done(init_and_check(maven, maven_want));
    done(init_and_check(gradle, gradle_want));
}

static void test_init_nothing_here(void **state)
{
    char *dir = test_tmpdir();
    struct out o = rein_in(dir, "--init", NULL);

    (void)state;
    assert_int_equal(o.code, 2);
    assert_contains(o.err, "found nothing to check here");
    out_free(&o);
    done(dir);
}

/* ---- criteria from goals ---- */

struct goal_case {
    const char *goal;
    const char *verbs;    /* "implement,fix" */
    const char *criteria; /* ids, in order, each followed by ',' */
    bool constraint;
};

/* The ids of the criteria (checked or not) as "A,B,C,". */
static void ids_of(const json_t *cr, char *out, size_t n, char *verbs, size_t vn)
{
    size_t i, used = 0, vused = 0;
    const json_t *c;

    out[0] = verbs[0] = '\0';
    json_array_foreach(json_object_get(cr, "criteria"), i, c)
    {
        used += (size_t)snprintf(out + used, n - used, "%s,",
                                 json_string_value(json_object_get(c, "id")));
    }
    json_array_foreach(json_object_get(cr, "verbs"), i, c)
    {
        vused += (size_t)snprintf(verbs + vused, vn - vused, "%s%s", i ? "," : "",
                                  json_string_value(json_object_get(c, "class")));
    }
}

static void check_goal(const char *dir, const struct goal_case *g)
{
    rein_verify_criteria *cr;
    char ids[600], verbs[100];
    rein_error err;

    cr = rein_verify_criteria_derive(g->goal, dir, &err);
    if (!cr)
        fail_msg("%s: %s", g->goal, err.msg);
    ids_of(rein_verify_criteria_json(cr), ids, sizeof(ids), verbs, sizeof(verbs));
    if (strcmp(verbs, g->verbs) != 0 || strcmp(ids, g->criteria) != 0)
        fail_msg("\"%s\":\n  verbs %s, want %s\n  criteria %s\n  want     %s", g->goal, verbs,
                 g->verbs, ids, g->criteria);
    assert_int_equal(
        json_array_size(json_object_get(rein_verify_criteria_json(cr), "constraints")) > 0,
        g->constraint);
    rein_verify_criteria_free(cr);
}

static void test_criteria_from_ten_goals(void **state)
{
    /* A C project with tests (CMake) and a linter (clang-tidy). */
    const char *c_files[] = {"CMakeLists.txt=project(x C)\nenable_testing()\n",
                             ".clang-tidy=Checks: '*'\n", NULL};
    static const struct goal_case goals[] = {
        {"Implement is_prime in prime.c", "implement",
         "NO_SYNTAX_ERRORS,CODE_COMPILES,TESTS_PASS,FUNCTIONALITY_WORKS,LINT_PASS,"
         "NO_TODO_COMMENTS,",
         false},
        {"Add a --verbose flag to the CLI", "implement",
         "NO_SYNTAX_ERRORS,CODE_COMPILES,TESTS_PASS,FUNCTIONALITY_WORKS,LINT_PASS,"
         "NO_TODO_COMMENTS,",
         false},
        {"Fix the crash when the input file is empty", "fix",
         "NO_SYNTAX_ERRORS,BUG_RESOLVED,REGRESSION_TESTS_PASS,NO_NEW_ERRORS,TESTS_PASS,"
         "LINT_PASS,NO_TODO_COMMENTS,",
         false},
        {"Refactor the parser into smaller functions without changing the API", "refactor",
         "NO_SYNTAX_ERRORS,BEHAVIOR_UNCHANGED,CODE_QUALITY_IMPROVED,TESTS_STILL_PASS,"
         "CONSTRAINTS_KEPT,TESTS_PASS,LINT_PASS,NO_TODO_COMMENTS,",
         true},
        {"实现登录功能", "implement",
         "NO_SYNTAX_ERRORS,CODE_COMPILES,TESTS_PASS,FUNCTIONALITY_WORKS,LINT_PASS,"
         "NO_TODO_COMMENTS,",
         false},
        {"修复空输入时的崩溃", "fix",
         "NO_SYNTAX_ERRORS,BUG_RESOLVED,REGRESSION_TESTS_PASS,NO_NEW_ERRORS,TESTS_PASS,"
         "LINT_PASS,NO_TODO_COMMENTS,",
         false},
        {"重构解析器，不要改变 API。", "refactor",
         "NO_SYNTAX_ERRORS,BEHAVIOR_UNCHANGED,CODE_QUALITY_IMPROVED,TESTS_STILL_PASS,"
         "CONSTRAINTS_KEPT,TESTS_PASS,LINT_PASS,NO_TODO_COMMENTS,",
         true},
        {"實作 isPrime 函數", "implement",
         "NO_SYNTAX_ERRORS,CODE_COMPILES,TESTS_PASS,FUNCTIONALITY_WORKS,LINT_PASS,"
         "NO_TODO_COMMENTS,",
         false},
        {"修復登入錯誤並新增測試", "implement,fix",
         "NO_SYNTAX_ERRORS,CODE_COMPILES,TESTS_PASS,FUNCTIONALITY_WORKS,BUG_RESOLVED,"
         "REGRESSION_TESTS_PASS,NO_NEW_ERRORS,LINT_PASS,NO_TODO_COMMENTS,",
         false},
        {"重構模組，保持向後相容", "refactor",
         "NO_SYNTAX_ERRORS,BEHAVIOR_UNCHANGED,CODE_QUALITY_IMPROVED,TESTS_STILL_PASS,"
         "CONSTRAINTS_KEPT,TESTS_PASS,LINT_PASS,NO_TODO_COMMENTS,",
         true},
        /* No verb the seed names: the implicit criteria only. "address" is not "add". */
        {"Make the failing tests pass and address the review", "",
         "NO_SYNTAX_ERRORS,TESTS_PASS,LINT_PASS,NO_TODO_COMMENTS,", false},
    };
    char *dir = make_project(c_files);

    (void)state;
    for (size_t i = 0; i < sizeof(goals) / sizeof(goals[0]); i++)
        check_goal(dir, &goals[i]);
    done(dir);
}

/* The context decides: TypeScript adds NO_TYPE_ERRORS; no tests means TESTS_PASS is listed
 * but not checked, with the reason; the protocols derived run the project's commands. */
static void test_criteria_follow_the_project(void **state)
{
    const char *ts_files[] = {"package.json={\"scripts\": {\"test\": \"vitest run\"}}",
                              "tsconfig.json={}", NULL};
    const char *bare_files[] = {"Makefile=all:\n\ttrue\n", NULL};
    static const struct goal_case ts = {
        "Add dark mode", "implement",
        "NO_SYNTAX_ERRORS,CODE_COMPILES,TESTS_PASS,FUNCTIONALITY_WORKS,NO_TYPE_ERRORS,"
        "NO_TODO_COMMENTS,",
        false};
    char *dir = make_project(ts_files);
    rein_verify_criteria *cr;
    const json_t *c;
    rein_error err;
    size_t i;

    (void)state;
    check_goal(dir, &ts);
    cr = rein_verify_criteria_derive("Add dark mode", dir, &err);
    assert_true(rein_verify_config_has_protocol(rein_verify_criteria_config(cr), "TYPECHECK"));
    assert_true(rein_verify_config_has_protocol(rein_verify_criteria_config(cr), "FUNCTIONALITY"));
    assert_contains(rein_verify_criteria_text(cr), "P1 NO_TYPE_ERRORS");
    rein_verify_criteria_free(cr);
    done(dir);

    dir = make_project(bare_files);
    cr = rein_verify_criteria_derive("Fix the off-by-one in the loop", dir, &err);
    assert_non_null(cr);
    json_array_foreach(json_object_get(rein_verify_criteria_json(cr), "criteria"), i, c)
    {
        const char *id = json_string_value(json_object_get(c, "id"));
        if (strcmp(id, "REGRESSION_TESTS_PASS") == 0 || strcmp(id, "NO_NEW_ERRORS") == 0) {
            assert_false(json_is_true(json_object_get(c, "checked")));
            assert_non_null(json_object_get(c, "why"));
        }
    }
    assert_false(rein_verify_config_has_protocol(rein_verify_criteria_config(cr), "TEST"));
    assert_true(rein_verify_config_has_protocol(rein_verify_criteria_config(cr), "BUILD"));
    rein_verify_criteria_free(cr);
    done(dir);

    /* Nothing to derive from. */
    dir = test_tmpdir();
    assert_null(rein_verify_criteria_derive("Fix it", dir, &err));
    assert_int_equal(err.code, REIN_ENOTFOUND);
    assert_contains(err.msg, "no rein-verify.yaml");
    done(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_init_cmake_c_project),
    cmocka_unit_test(test_init_make_project),
    cmocka_unit_test(test_init_make_first_rule_runs_tests),
    cmocka_unit_test(test_init_node_projects),
    cmocka_unit_test(test_init_python_projects),
    cmocka_unit_test(test_init_cargo_go_maven_gradle),
    cmocka_unit_test(test_init_nothing_here),
    cmocka_unit_test(test_criteria_from_ten_goals),
    cmocka_unit_test(test_criteria_follow_the_project),
};

REIN_TEST_MAIN(tests)
