/*
 * Unit tests for src/verify/: output parsers (on real captured outputs in tests/data/verify),
 * protocol files (YAML, JSON, and malformed ones with their line and column), success
 * conditions, command splitting, the runner (verdicts, fast-fail, parallel groups, timeouts,
 * retries, modes, conditional protocols) with real processes in temporary directories, claim
 * extraction and checking against real git repositories, the source scanner, the termination
 * decision, tree and state hashes, confidence propagation and the judge's schema.
 */
/* rein-test-timeout: 120 */
#include "test.h"
#include "verify/verify_int.h"

#include <dirent.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---- */

/* Runs a shell command in dir; returns its exit code. */
static int sh(const char *dir, const char *cmd)
{
    const char *argv[] = {"sh", "-c", cmd, NULL};
    struct rein_proc_run_opts o = {.proc = {.argv = argv, .cwd = dir, .merge_stderr = true},
                                   .timeout_ms = 60000};
    struct rein_proc_result r;
    int code;

    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    code = r.exit_code;
    if (code != 0)
        print_message("sh(%s): %s\n", cmd, r.out.ptr);
    rein_proc_result_release(&r);
    return code;
}

/* A temporary git repository with one commit holding the files given as name, text pairs. */
static char *git_repo(const char *const *files)
{
    char *dir = test_tmpdir();

    for (size_t i = 0; files && files[i]; i += 2)
        free(test_write_file(dir, files[i], files[i + 1]));
    assert_int_equal(sh(dir, "git init -q . && git add -A && git -c user.email=t@t -c "
                             "user.name=t commit -q -m init --allow-empty"),
                     0);
    return dir;
}

static rein_verify_config *cfg_parse(const char *text)
{
    rein_error err;
    rein_verify_config *cfg =
        rein_verify_config_parse(text, strlen(text), "rein-verify.yaml", &err);

    if (!cfg)
        print_error("config: %s\n", err.msg);
    assert_non_null(cfg);
    return cfg;
}

static rein_verify_report *run_cfg(const char *dir, const char *yaml,
                                   const struct rein_verify_opts *extra)
{
    rein_verify_config *cfg = cfg_parse(yaml);
    struct rein_verify_opts o = extra ? *extra : (struct rein_verify_opts){0};
    rein_verify_report *r = NULL;
    rein_error err;

    o.cwd = dir;
    assert_rein_ok(rein_verify_run(cfg, &o, &r, &err), &err);
    rein_verify_config_free(cfg);
    return r;
}

static struct rein_verify_protocol_info proto(const rein_verify_report *r, const char *name)
{
    struct rein_verify_protocol_info info;

    for (size_t i = 0; rein_verify_report_protocol(r, i, &info); i++) {
        if (strcmp(info.name, name) == 0)
            return info;
    }
    fail_msg("no protocol %s in the report", name);
    return info;
}

static void expect_status(const rein_verify_report *r, const char *name, enum rein_verify_status st)
{
    struct rein_verify_protocol_info p = proto(r, name);

    if (p.status != st)
        fail_msg("%s: expected %s, got %s (%s)", name, rein_verify_status_name(st),
                 rein_verify_status_name(p.status), p.reason);
}

static bool exists(const char *dir, const char *name)
{
    char path[1024];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* ---- output parsers ---- */

static json_t *counts_to_json(const struct rein_verify_counts *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "passed", c->has_tests ? json_integer(c->passed) : json_null());
    json_object_set_new(o, "failed", c->has_tests ? json_integer(c->failed) : json_null());
    json_object_set_new(o, "skipped", c->has_tests ? json_integer(c->skipped) : json_null());
    json_object_set_new(o, "total", c->has_tests ? json_integer(c->total) : json_null());
    json_object_set_new(o, "errors", c->has_diagnostics ? json_integer(c->errors) : json_null());
    json_object_set_new(o, "warnings",
                        c->has_diagnostics ? json_integer(c->warnings) : json_null());
    json_object_set_new(o, "format", c->format[0] ? json_string(c->format) : json_null());
    return o;
}

static char *data_path(const char *sub)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/tests/data/verify/%s", REIN_SOURCE_DIR, sub) > 0);
    return p;
}

static void test_output_samples(void **state)
{
    char *root = data_path("");
    DIR *d = opendir(root);
    struct dirent *e;
    int cases = 0, failures = 0;

    (void)state;
    assert_non_null(d);
    while ((e = readdir(d))) {
        char *in_path, *out_path, *fmt_path, *input, *expected_text, *fmt_text;
        enum rein_verify_format fmt = REIN_VERIFY_FORMAT_AUTO;
        struct rein_verify_counts c;
        json_t *expected, *actual;
        size_t len;
        if (e->d_name[0] == '.' || strchr(e->d_name, '.'))
            continue;
        assert_true(asprintf(&in_path, "%s/%s/input", root, e->d_name) > 0);
        assert_true(asprintf(&out_path, "%s/%s/output", root, e->d_name) > 0);
        assert_true(asprintf(&fmt_path, "%s/%s/format", root, e->d_name) > 0);
        input = test_read_file(in_path, &len);
        expected_text = test_read_file(out_path, NULL);
        fmt_text = test_read_file(fmt_path, NULL);
        assert_non_null(input);
        assert_non_null(expected_text);
        if (fmt_text) {
            fmt_text[strcspn(fmt_text, "\n")] = '\0';
            assert_true(rein_verify_format_parse(fmt_text, &fmt));
        }
        assert_rein_ok(rein_verify_output_parse(input, len, fmt, &c, NULL, NULL), NULL);
        expected = json_loads(expected_text, 0, NULL);
        assert_non_null(expected);
        actual = counts_to_json(&c);
        if (!json_equal(expected, actual)) {
            char *a = json_dumps(actual, JSON_SORT_KEYS), *x = json_dumps(expected, JSON_SORT_KEYS);
            print_error("%s:\n  expected %s\n  got      %s\n", e->d_name, x, a);
            free(a);
            free(x);
            failures++;
        }
        json_decref(expected);
        json_decref(actual);
        free(input);
        free(expected_text);
        free(fmt_text);
        free(in_path);
        free(out_path);
        free(fmt_path);
        cases++;
    }
    closedir(d);
    free(root);
    assert_true(cases >= 20);
    assert_int_equal(failures, 0);
}

static json_t *parse_sample(const char *name, enum rein_verify_format fmt,
                            struct rein_verify_counts *c)
{
    char *sub = NULL, *path, *text;
    json_t *diags = NULL;
    size_t len;

    assert_true(asprintf(&sub, "%s/input", name) > 0);
    path = data_path(sub);
    text = test_read_file(path, &len);
    assert_non_null(text);
    assert_rein_ok(rein_verify_output_parse(text, len, fmt, c, &diags, NULL), NULL);
    free(text);
    free(path);
    free(sub);
    return diags;
}

static bool has_diag(json_t *diags, const char *key, const char *value)
{
    size_t i;
    json_t *d;

    json_array_foreach(diags, i, d)
    {
        const char *v = json_string_value(json_object_get(d, key));
        if (v && strcmp(v, value) == 0)
            return true;
    }
    return false;
}

static void test_output_diagnostics(void **state)
{
    struct rein_verify_counts c;
    json_t *d = parse_sample("gcc-diagnostics", REIN_VERIFY_FORMAT_AUTO, &c);
    json_t *first = json_array_get(d, 1);

    (void)state;
    assert_int_equal(json_array_size(d), 7);
    assert_string_equal(json_string_value(json_object_get(first, "severity")), "error");
    assert_string_equal(json_string_value(json_object_get(first, "file")), "bad.c");
    assert_int_equal(json_integer_value(json_object_get(first, "line")), 9);
    assert_int_equal(json_integer_value(json_object_get(first, "column")), 16);
    assert_true(has_diag(d, "rule", "-Wformat-extra-args"));
    json_decref(d);

    d = parse_sample("eslint-json", REIN_VERIFY_FORMAT_AUTO, &c);
    assert_true(has_diag(d, "rule", "no-unused-vars"));
    assert_true(has_diag(d, "message", "Parsing error: Unexpected token ("));
    json_decref(d);

    d = parse_sample("ld-undefined-reference", REIN_VERIFY_FORMAT_GCC, &c);
    assert_int_equal(json_array_size(d), 1);
    assert_non_null(strstr(json_string_value(json_object_get(json_array_get(d, 0), "message")),
                           "missing_function"));
    json_decref(d);
}

static void test_output_failure_names(void **state)
{
    struct rein_verify_counts c;
    json_t *d;

    (void)state;
    d = parse_sample("ctest-mixed", REIN_VERIFY_FORMAT_AUTO, &c);
    assert_true(has_diag(d, "test", "math.sub"));
    assert_true(has_diag(d, "test", "math.slow"));
    assert_false(has_diag(d, "test", "math.add"));
    json_decref(d);
    d = parse_sample("pytest-mixed", REIN_VERIFY_FORMAT_AUTO, &c);
    assert_true(has_diag(d, "test", "test_sample.py::test_broken"));
    assert_true(has_diag(d, "test", "test_sample.py::test_error"));
    json_decref(d);
    d = parse_sample("jest-mixed", REIN_VERIFY_FORMAT_AUTO, &c);
    assert_true(has_diag(d, "test", "subtracts"));
    json_decref(d);
    d = parse_sample("vitest-ansi", REIN_VERIFY_FORMAT_AUTO, &c);
    assert_true(has_diag(d, "test", "math.test.mjs > subtracts"));
    json_decref(d);
    d = parse_sample("node-tap", REIN_VERIFY_FORMAT_AUTO, &c);
    assert_true(has_diag(d, "test", "subtracts"));
    assert_int_equal(json_array_size(d), 1);
    json_decref(d);
    d = parse_sample("cmocka-mixed", REIN_VERIFY_FORMAT_AUTO, &c);
    assert_true(has_diag(d, "test", "test_sub"));
    assert_true(has_diag(d, "message", "0x2 != 0x3"));
    json_decref(d);
}

static void test_output_explicit_format_and_garbage(void **state)
{
    struct rein_verify_counts c;
    json_t *d = parse_sample("ctest-mixed", REIN_VERIFY_FORMAT_PYTEST, &c);
    unsigned char junk[4096];

    (void)state;
    assert_false(c.has_tests);
    assert_false(c.has_diagnostics);
    assert_int_equal(json_array_size(d), 0);
    json_decref(d);
    d = parse_sample("ctest-mixed", REIN_VERIFY_FORMAT_NONE, &c);
    assert_null(d);
    assert_string_equal(c.format, "");
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)(i * 131 + 7);
    assert_rein_ok(rein_verify_output_parse((const char *)junk, sizeof(junk),
                                            REIN_VERIFY_FORMAT_AUTO, &c, &d, NULL),
                   NULL);
    json_decref(d);
}

/* ---- protocol files ---- */

static const char full_yaml[] =
    "mode: thorough\n"
    "timeout: 90s\n"
    "env: {CI: 1}\n"
    "protocols:\n"
    "  TEST:\n"
    "    priority: P1\n"
    "    group: 2\n"
    "    steps:\n"
    "      - command: make test\n"
    "        success: exit_code == 0 and failed == 0\n"
    "        on_failure: retry\n"
    "        format: ctest\n"
    "  BUILD:\n"
    "    priority: P0\n"
    "    steps:\n"
    "      - command: [make, all]\n"
    "        timeout: 300\n"
    "  SECURITY:\n"
    "    layer: 1\n"
    "    when: [dependencies_changed]\n"
    "    success: errors == 0\n"
    "    steps: [{command: 'npm audit', shell: true, env: {X: y}}]\n"
    "  LINT:\n"
    "    steps: [{command: \"cc -fsyntax-only 'a b.c'\", on_failure: skip}]\n"
    "  ARCHITECT:\n"
    "    steps: [{command: ./review.sh}]\n";

static void test_config_yaml(void **state)
{
    rein_verify_config *cfg = cfg_parse(full_yaml);
    const char *order[] = {"BUILD", "LINT", "TEST", "ARCHITECT", "SECURITY"};

    (void)state;
    assert_int_equal(rein_verify_config_mode(cfg), REIN_VERIFY_MODE_THOROUGH);
    assert_int_equal(rein_verify_config_protocol_count(cfg), 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(rein_verify_config_protocol_name(cfg, i), order[i]);
    assert_null(rein_verify_config_protocol_name(cfg, 5));
    assert_true(rein_verify_config_has_protocol(cfg, "SECURITY"));
    assert_false(rein_verify_config_has_protocol(cfg, "security"));
    rein_verify_config_free(cfg);
}

static void test_config_json(void **state)
{
    static const char json[] =
        "{\"mode\": \"minimal\", \"protocols\": {\"TEST\": {\"steps\": [{\"command\": \"true\", "
        "\"timeout\": 0.5}]}, \"BUILD\": {\"priority\": \"P0\", \"steps\": [{\"command\": "
        "[\"true\"]}]}}}";
    rein_error err;
    rein_verify_config *cfg = rein_verify_config_parse(json, strlen(json), "x.json", &err);

    (void)state;
    assert_non_null(cfg);
    assert_int_equal(rein_verify_config_mode(cfg), REIN_VERIFY_MODE_MINIMAL);
    assert_string_equal(rein_verify_config_protocol_name(cfg, 0), "BUILD");
    rein_verify_config_free(cfg);
    /* JSON is recognised by its first character too, whatever the name. */
    cfg = rein_verify_config_parse(json, strlen(json), NULL, &err);
    assert_non_null(cfg);
    rein_verify_config_free(cfg);
}

struct bad_case {
    const char *name;
    const char *text;
    int line, column;
    const char *says;
};

static void test_config_errors_have_positions(void **state)
{
    static const struct bad_case cases[] = {
        {"rein-verify.yaml",
         "protocols:\n  TEST:\n    steps:\n      - command: make\n    "
         "  bad: [\n",
         5, 7, "did not find expected '-' indicator"},
        {"rein-verify.yaml", "protocols: {TEST: {steps: [{command: make}]}\n", 2, 1,
         "did not find expected ',' or '}'"},
        {"rein-verify.json", "{\"protocols\": {\"TEST\": {\"steps\": [}}}", 1, 35,
         "unexpected token"},
        {"rein-verify.yaml",
         "protocols:\n  TEST:\n    steps:\n      - command: make\n        "
         "on_failur: retry\n",
         5, 9, "unknown key \"on_failur\""},
        {"rein-verify.yaml",
         "protocols:\n  TEST:\n    steps:\n      - command: make\n        "
         "on_failure: again\n",
         5, 21, "must be retry, skip or fail"},
        {"rein-verify.yaml", "protocols:\n  TEST:\n    priority: P5\n    steps: [{command: x}]\n",
         3, 15, "P0 (blocking)"},
        {"rein-verify.yaml",
         "protocols:\n  TEST:\n    steps:\n      - command: sleep 1\n  "
         "      timeout: soon\n",
         5, 18, "positive number of seconds"},
        {"rein-verify.yaml", "protocols:\n  TEST:\n    steps:\n      - command: make | tee log\n",
         4, 18, "shell syntax ('|'"},
        {"rein-verify.yaml",
         "protocols:\n  TEST:\n    steps:\n      - command: make\n        "
         "success: exit_cod == 0\n",
         5, 18, "unknown name \"exit_cod\""},
        {"rein-verify.yaml",
         "protocols:\n  TEST:\n    steps: [{command: a}]\n  TEST:\n    "
         "steps: [{command: b}]\n",
         4, 3, "duplicate key \"TEST\""},
        {"rein-verify.yaml", "", 1, 1, "empty"},
        {"rein-verify.yaml", "mode: standard\nprotocols: {}\n", 2, 12, "1 to 64 protocols"},
        {"rein-verify.yaml", "protocols:\n  TEST:\n    priority: P1\n", 3, 5, "needs \"steps\""},
        {"rein-verify.json",
         "{\"protocols\": {\"TEST\": {\"steps\": [{\"command\": \"x\", "
         "\"retries\": 99}]}}}",
         1, 63, "steps[0].retries: must be a whole number from 1 to 10"},
        {"rein-verify.yaml", "protocols:\n  TEST: {steps: [{command: x}]}\n---\nmode: full\n", 4, 1,
         "second"},
        {"rein-verify.yaml", "a: &a [*a]\n", 1, 4, "alias refers to the value containing it"},
        {"rein-verify.yaml", "mode: fast\nprotocols: {T: {steps: [{command: x}]}}\n", 1, 7,
         "minimal, standard, thorough or full"},
        {"rein-verify.yaml",
         "protocols:\n  TEST:\n    steps: [{command: \"x\", success: "
         "\"failed == 'x'\"}]\n",
         3, 37, "cannot compare"},
        {"rein-verify.yaml", "- just\n- a list\n", 1, 1, "must be a mapping"},
        {"rein-verify.yaml", "protocols:\n  9lives: {steps: [{command: x}]}\n", 2, 3,
         "not a protocol name"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct bad_case *c = &cases[i];
        rein_error err;
        rein_verify_config *cfg = rein_verify_config_parse(c->text, strlen(c->text), c->name, &err);
        char where[64];
        if (cfg)
            fail_msg("case %zu: parsed, expected an error", i);
        snprintf(where, sizeof(where), "%s:%d:%d: ", c->name, c->line, c->column);
        if (err.line != c->line || err.column != c->column || !strstr(err.msg, c->says) ||
            strncmp(err.msg, where, strlen(where)) != 0)
            fail_msg("case %zu: expected %s…%s, got %d:%d %s", i, where, c->says, err.line,
                     err.column, err.msg);
        assert_true(err.code == REIN_EPARSE || err.code == REIN_EINVAL);
    }
}

static void test_config_alias_bomb_is_cheap(void **state)
{
    static const char bomb[] = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                               "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                               "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                               "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                               "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                               "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                               "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
                               "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
                               "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]\n"
                               "protocols: {T: {steps: [{command: x}]}}\n";
    int64_t t0 = rein_now_ms();
    rein_error err;

    (void)state;
    assert_null(rein_verify_config_parse(bomb, strlen(bomb), "bomb.yaml", &err));
    assert_non_null(strstr(err.msg, "unknown key \"a\""));
    assert_true(rein_now_ms() - t0 < 5000);
}

static void parse_full(void *arg)
{
    rein_verify_config *cfg;
    (void)arg;
    cfg = rein_verify_config_parse(full_yaml, strlen(full_yaml), "rein-verify.yaml", NULL);
    rein_verify_config_free(cfg);
}

static void test_config_alloc_torture(void **state)
{
    (void)state;
    test_alloc_torture(parse_full, NULL);
}

static void test_config_find_and_load(void **state)
{
    char *dir = test_tmpdir();
    rein_error err;
    rein_verify_config *cfg;

    (void)state;
    assert_null(rein_verify_config_find(dir, &err));
    assert_int_equal(err.code, REIN_ENOTFOUND);
    free(test_write_file(dir, "rein-verify.json",
                         "{\"protocols\": {\"X\": {\"steps\": "
                         "[{\"command\": \"true\"}]}}}"));
    cfg = rein_verify_config_find(dir, &err);
    assert_non_null(cfg);
    rein_verify_config_free(cfg);
    assert_null(rein_verify_config_load("/nonexistent/rein-verify.yaml", &err));
    assert_int_equal(err.code, REIN_ENOTFOUND);
    test_rmtree(dir);
    free(dir);
}

/* ---- success conditions and commands ---- */

static enum rein__tri eval_text(const char *expr, int exit_code, const struct rein_verify_counts *c,
                                const char *output)
{
    size_t off;
    char why[200], note[200];
    struct rein__expr *e = rein__verify_expr_compile(expr, &off, why, sizeof(why));
    struct rein__expr_env env = {exit_code, false, 5, c, output, strlen(output)};
    enum rein__tri t;

    if (!e)
        fail_msg("%s: %s", expr, why);
    t = rein__verify_expr_eval(e, &env, note, sizeof(note));
    rein__verify_expr_free(e);
    return t;
}

static void test_expr(void **state)
{
    struct rein_verify_counts none = {0}, tests = {.has_tests = true, .passed = 3, .total = 3};

    (void)state;
    assert_int_equal(eval_text("exit_code == 0", 0, &none, ""), REIN__TRUE);
    assert_int_equal(eval_text("exit_code != 0", 0, &none, ""), REIN__FALSE);
    assert_int_equal(eval_text("failed == 0", 0, &none, ""), REIN__UNKNOWN);
    assert_int_equal(eval_text("failed == 0 && total >= 3", 0, &tests, ""), REIN__TRUE);
    assert_int_equal(eval_text("all_tests_pass and not timed_out", 1, &tests, ""), REIN__TRUE);
    /* false wins over unknown in `and`, true in `or` */
    assert_int_equal(eval_text("exit_code == 1 and failed == 0", 0, &none, ""), REIN__FALSE);
    assert_int_equal(eval_text("exit_code == 0 or failed == 0", 0, &none, ""), REIN__TRUE);
    assert_int_equal(eval_text("output contains \"OK\"", 0, &none, "all OK here"), REIN__TRUE);
    assert_int_equal(eval_text("output matches '^ok [0-9]+$'", 0, &none, "x\nok 12\n"), REIN__TRUE);
    assert_int_equal(eval_text("!(output matches 'FAIL') && duration_ms < 10", 0, &none, "ok"),
                     REIN__TRUE);
    assert_int_equal(eval_text("(errors == 0)", 0, &none, ""), REIN__UNKNOWN);
}

static void test_expr_errors(void **state)
{
    static const struct {
        const char *text;
        size_t offset;
        const char *says;
    } cases[] = {
        {"exit_cod == 0", 0, "unknown name"},
        {"failed == \"x\"", 7, "cannot compare"},
        {"(exit_code == 0", 0, "never closed"},
        {"exit_code", 0, "expected a condition"},
        {"output matches \"(\"", 7, "bad regular expression"},
        {"exit_code == 0 garbage", 15, "unexpected text"},
        {"", 0, "expected a name"},
        {"output > 3", 7, "cannot compare"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t off = 99;
        char why[200] = "";
        struct rein__expr *e = rein__verify_expr_compile(cases[i].text, &off, why, sizeof(why));
        if (e || off != cases[i].offset || !strstr(why, cases[i].says))
            fail_msg("\"%s\": offset %zu, \"%s\"", cases[i].text, off, why);
    }
}

static void test_split_command(void **state)
{
    char why[200];
    char **argv =
        rein__verify_split_command("cc -o 'my app' \"a \\\"b\\\".c\" x\\ y", why, sizeof(why));

    (void)state;
    assert_non_null(argv);
    assert_string_equal(argv[0], "cc");
    assert_string_equal(argv[2], "my app");
    assert_string_equal(argv[3], "a \"b\".c");
    assert_string_equal(argv[4], "x y");
    assert_null(argv[5]);
    rein__verify_argv_free(argv);
    argv = rein__verify_split_command("echo '$HOME | *'", why, sizeof(why));
    assert_string_equal(argv[1], "$HOME | *");
    rein__verify_argv_free(argv);
    assert_null(rein__verify_split_command("make && make test", why, sizeof(why)));
    assert_non_null(strstr(why, "'&'"));
    assert_null(rein__verify_split_command("echo $HOME", why, sizeof(why)));
    assert_null(rein__verify_split_command("ls *.c", why, sizeof(why)));
    assert_null(rein__verify_split_command("echo 'open", why, sizeof(why)));
    assert_non_null(strstr(why, "never closed"));
    assert_null(rein__verify_split_command("   ", why, sizeof(why)));
}

/* ---- the runner ---- */

static void test_run_verdicts(void **state)
{
    char *dir = test_tmpdir();
    rein_verify_report *r;

    (void)state;
    r = run_cfg(dir,
                "protocols:\n  BUILD: {steps: [{command: 'true'}]}\n"
                "  TEST: {steps: [{command: 'true'}]}\n",
                NULL);
    assert_int_equal(rein_verify_report_verdict(r), REIN_VERIFY_SUCCESS);
    assert_true(rein_verify_report_confidence(r) == 1.0);
    assert_true(rein_verify_report_progress(r) == 1.0);
    rein_verify_report_free(r);

    /* Only a desired (P2) protocol failed: success with warnings. */
    r = run_cfg(dir,
                "protocols:\n  BUILD: {steps: [{command: 'true'}]}\n"
                "  DOCS: {priority: P2, steps: [{command: 'false'}]}\n",
                NULL);
    assert_int_equal(rein_verify_report_verdict(r), REIN_VERIFY_SUCCESS_WITH_WARNINGS);
    expect_status(r, "DOCS", REIN_VERIFY_STATUS_FAILED);
    rein_verify_report_free(r);

    /* A required (P1) protocol failed. */
    r = run_cfg(dir, "protocols:\n  TEST: {steps: [{command: 'false'}]}\n", NULL);
    assert_int_equal(rein_verify_report_verdict(r), REIN_VERIFY_FAILED);
    assert_string_equal(proto(r, "TEST").reason, "step 'false' exited with 1");
    assert_int_equal(strlen(proto(r, "TEST").signature), 16);
    rein_verify_report_free(r);

    /* Exit 0 with no tests run is not proof: UNVERIFIED, so only a warning-level success. */
    r = run_cfg(dir,
                "protocols:\n  TEST: {steps: [{command: [sh, -c, 'echo No tests were "
                "found!!!'], format: ctest}]}\n",
                NULL);
    assert_int_equal(rein_verify_report_verdict(r), REIN_VERIFY_SUCCESS_WITH_WARNINGS);
    assert_true(proto(r, "TEST").confidence < REIN_VERIFY_CONFIDENCE_HIGH);
    rein_verify_report_free(r);
    test_rmtree(dir);
    free(dir);
}

static void test_run_fast_fail(void **state)
{
    char *dir = test_tmpdir();
    rein_verify_report *r = run_cfg(dir,
                                    "protocols:\n"
                                    "  BUILD: {priority: P0, steps: [{command: 'false'}]}\n"
                                    "  TEST: {steps: [{command: 'touch ran-test'}]}\n"
                                    "  LINT: {steps: [{command: 'touch ran-lint'}]}\n",
                                    NULL);

    (void)state;
    expect_status(r, "BUILD", REIN_VERIFY_STATUS_FAILED);
    expect_status(r, "TEST", REIN_VERIFY_STATUS_NOT_RUN);
    expect_status(r, "LINT", REIN_VERIFY_STATUS_NOT_RUN);
    assert_non_null(strstr(proto(r, "TEST").reason, "BUILD failed"));
    assert_false(exists(dir, "ran-test"));
    assert_false(exists(dir, "ran-lint"));
    assert_int_equal(proto(r, "TEST").started_ms, -1);
    assert_int_equal(rein_verify_report_verdict(r), REIN_VERIFY_FAILED);
    rein_verify_report_free(r);

    /* fast_fail: false runs everything anyway. */
    r = run_cfg(dir,
                "fast_fail: false\nprotocols:\n"
                "  BUILD: {priority: P0, steps: [{command: 'false'}]}\n"
                "  TEST: {steps: [{command: 'touch ran-test'}]}\n",
                NULL);
    expect_status(r, "TEST", REIN_VERIFY_STATUS_PASSED);
    assert_true(exists(dir, "ran-test"));
    rein_verify_report_free(r);
    test_rmtree(dir);
    free(dir);
}

/*
 * Each of the two protocols marks that it started and then waits (up to 20 s) for the other
 * to start: they can only both pass if they ran at the same time, however loaded the machine.
 */
static const char rendezvous_yaml[] =
    "protocols:\n"
    "  LINT: {group: 2, steps: [{shell: true, command: 'touch lint.started; for i in $(seq "
    "200); do [ -f test.started ] && exit 0; sleep 0.1; done; exit 1'}]}\n"
    "  TEST: {group: 2, steps: [{shell: true, command: 'touch test.started; for i in $(seq "
    "200); do [ -f lint.started ] && exit 0; sleep 0.1; done; exit 1'}]}\n"
    "  BUILD: {steps: [{command: 'true'}]}\n";

static void check_overlap(const char *dir, const struct rein_verify_opts *o)
{
    rein_verify_report *r;
    struct rein_verify_protocol_info a, b, build;

    assert_int_equal(sh(dir, "rm -f lint.started test.started"), 0);
    r = run_cfg(dir, rendezvous_yaml, o);
    a = proto(r, "LINT");
    b = proto(r, "TEST");
    build = proto(r, "BUILD");
    assert_int_equal(a.status, REIN_VERIFY_STATUS_PASSED);
    assert_int_equal(b.status, REIN_VERIFY_STATUS_PASSED);
    /* Each began before the other ended, and both after BUILD (group 1) ended. */
    assert_true(a.started_ms <= b.ended_ms);
    assert_true(b.started_ms <= a.ended_ms);
    assert_true(a.started_ms >= build.ended_ms && b.started_ms >= build.ended_ms);
    rein_verify_report_free(r);
}

static void test_run_parallel_groups_overlap(void **state)
{
    char *dir = test_tmpdir();
    rein_error err;
    rein_pool *pool = rein_pool_new(2, &err);
    struct rein_verify_opts o = {.pool = pool};
    struct rein_verify_protocol_info a, b;
    rein_verify_report *r;

    (void)state;
    check_overlap(dir, &o);
    /* Without a pool the library makes one for the run. */
    check_overlap(dir, NULL);
    /* parallel: false runs one protocol after the other. */
    r = run_cfg(dir,
                "parallel: false\nprotocols:\n"
                "  LINT: {group: 2, steps: [{command: 'true'}]}\n"
                "  TEST: {group: 2, steps: [{command: 'true'}]}\n",
                &o);
    a = proto(r, "LINT");
    b = proto(r, "TEST");
    assert_true(b.started_ms >= a.ended_ms);
    rein_verify_report_free(r);
    rein_pool_free(pool);
    test_rmtree(dir);
    free(dir);
}

static void test_run_timeout_kills(void **state)
{
    char *dir = test_tmpdir();
    int64_t t0 = rein_now_ms();
    rein_verify_report *r = run_cfg(dir,
                                    "protocols:\n  TEST:\n    steps:\n      - command: "
                                    "sleep 30\n        timeout: 300ms\n",
                                    NULL);
    struct rein_verify_protocol_info p = proto(r, "TEST");
    json_t *j = rein_verify_report_json(r);

    (void)state;
    assert_true(rein_now_ms() - t0 < 10000);
    assert_int_equal(p.status, REIN_VERIFY_STATUS_FAILED);
    assert_non_null(strstr(p.reason, "timed out after 0.3 s"));
    assert_true(json_is_true(json_object_get(
        json_array_get(json_object_get(json_array_get(json_object_get(j, "protocols"), 0), "steps"),
                       0),
        "timed_out")));
    json_decref(j);
    rein_verify_report_free(r);
    test_rmtree(dir);
    free(dir);
}

static void test_run_retry_flaky(void **state)
{
    char *dir = test_tmpdir();
    rein_verify_report *r =
        run_cfg(dir,
                "protocols:\n  TEST:\n    steps:\n      - command: 'if [ -f .ran ]; then exit 0; "
                "fi; touch .ran; exit 1'\n        shell: true\n        on_failure: retry\n",
                NULL);
    struct rein_verify_protocol_info p = proto(r, "TEST");

    (void)state;
    assert_int_equal(p.status, REIN_VERIFY_STATUS_PASSED);
    assert_int_equal(p.attempts, 2);
    assert_true(p.flaky);
    assert_int_equal(rein_verify_report_verdict(r), REIN_VERIFY_SUCCESS);
    rein_verify_report_free(r);

    /* Without retry the same flaky step fails (the marker is gone again). */
    assert_int_equal(sh(dir, "rm .ran"), 0);
    r = run_cfg(dir,
                "protocols:\n  TEST:\n    steps:\n      - command: 'if [ -f .ran ]; then "
                "exit 0; fi; touch .ran; exit 1'\n        shell: true\n",
                NULL);
    expect_status(r, "TEST", REIN_VERIFY_STATUS_FAILED);
    rein_verify_report_free(r);
    test_rmtree(dir);
    free(dir);
}

static void test_run_skip_missing_env_cwd(void **state)
{
    char *dir = test_tmpdir();
    rein_verify_report *r;
    json_t *j;

    (void)state;
    assert_int_equal(sh(dir, "mkdir sub"), 0);
    r = run_cfg(dir,
                "env: {GREETING: hello}\n"
                "protocols:\n"
                "  TEST:\n"
                "    steps:\n"
                "      - command: 'false'\n"
                "        on_failure: skip\n"
                "      - command: 'test \"$GREETING-$NAME\" = hello-rein && pwd > where'\n"
                "        shell: true\n"
                "        cwd: sub\n"
                "        env: {NAME: rein}\n"
                "  LINT:\n"
                "    steps: [{command: rein-no-such-linter --all}]\n",
                NULL);
    expect_status(r, "TEST", REIN_VERIFY_STATUS_PASSED);
    assert_true(exists(dir, "sub/where"));
    expect_status(r, "LINT", REIN_VERIFY_STATUS_FAILED);
    assert_non_null(strstr(proto(r, "LINT").reason, "rein-no-such-linter"));
    j = rein_verify_report_json(r);
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(
                json_object_get(json_array_get(json_object_get(j, "protocols"), 1), "steps"), 0),
            "status")),
        "failed (ignored)");
    json_decref(j);
    rein_verify_report_free(r);
    test_rmtree(dir);
    free(dir);
}

static void test_run_conditions_and_counts(void **state)
{
    char *dir = test_tmpdir();
    rein_verify_report *r =
        run_cfg(dir,
                "protocols:\n"
                "  TEST:\n"
                "    steps:\n"
                "      - command: [sh, -c, 'printf \"1..2\\nok 1\\nnot ok 2 - b\\n\"']\n"
                "        success: failed == 0\n"
                "  LINT:\n"
                "    steps: [{command: [sh, -c, 'echo nothing to see']}]\n"
                "    success: errors == 0\n",
                NULL);
    struct rein_verify_protocol_info t = proto(r, "TEST"), l = proto(r, "LINT");

    (void)state;
    assert_int_equal(t.status, REIN_VERIFY_STATUS_FAILED);
    assert_true(t.counts.has_tests);
    assert_int_equal(t.counts.failed, 1);
    assert_non_null(strstr(t.reason, "`failed == 0` does not hold"));
    /* errors was never reported: undecided, which is a failure with the reason said. */
    assert_int_equal(l.status, REIN_VERIFY_STATUS_FAILED);
    assert_non_null(strstr(l.reason, "could not decide"));
    assert_non_null(strstr(l.reason, "diagnostic count"));
    assert_true(rein_verify_report_progress(r) > 0.2 && rein_verify_report_progress(r) < 0.3);
    rein_verify_report_free(r);
    test_rmtree(dir);
    free(dir);
}

static void test_run_modes_and_only(void **state)
{
    static const char yaml[] = "protocols:\n"
                               "  BUILD: {steps: [{command: 'true'}]}\n"
                               "  LINT: {steps: [{command: 'true'}]}\n"
                               "  TEST: {steps: [{command: 'true'}]}\n"
                               "  INTEGRATION: {layer: 3, steps: [{command: 'true'}]}\n"
                               "  E2E: {layer: 4, steps: [{command: 'true'}]}\n";
    char *dir = test_tmpdir();
    const char *only[] = {"TEST", NULL}, *bad_only[] = {"NOPE", NULL};
    struct rein_verify_opts o = {.mode = REIN_VERIFY_MODE_MINIMAL};
    rein_verify_config *cfg = cfg_parse(yaml);
    rein_verify_report *r;
    rein_error err;

    (void)state;
    r = run_cfg(dir, yaml, &o);
    expect_status(r, "BUILD", REIN_VERIFY_STATUS_PASSED);
    expect_status(r, "LINT", REIN_VERIFY_STATUS_PASSED);
    expect_status(r, "TEST", REIN_VERIFY_STATUS_SKIPPED);
    assert_string_equal(proto(r, "TEST").reason, "layer 2 is not part of minimal mode");
    rein_verify_report_free(r);
    o.mode = REIN_VERIFY_MODE_STANDARD;
    r = run_cfg(dir, yaml, &o);
    expect_status(r, "TEST", REIN_VERIFY_STATUS_PASSED);
    expect_status(r, "INTEGRATION", REIN_VERIFY_STATUS_SKIPPED);
    rein_verify_report_free(r);
    o.mode = REIN_VERIFY_MODE_THOROUGH;
    r = run_cfg(dir, yaml, &o);
    expect_status(r, "INTEGRATION", REIN_VERIFY_STATUS_PASSED);
    expect_status(r, "E2E", REIN_VERIFY_STATUS_SKIPPED);
    rein_verify_report_free(r);
    o.mode = REIN_VERIFY_MODE_FULL;
    r = run_cfg(dir, yaml, &o);
    expect_status(r, "E2E", REIN_VERIFY_STATUS_PASSED);
    rein_verify_report_free(r);
    o.only = only;
    r = run_cfg(dir, yaml, &o);
    expect_status(r, "TEST", REIN_VERIFY_STATUS_PASSED);
    expect_status(r, "BUILD", REIN_VERIFY_STATUS_SKIPPED);
    rein_verify_report_free(r);
    o.only = bad_only;
    o.cwd = dir;
    assert_int_equal(rein_verify_run(cfg, &o, &r, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "NOPE"));
    rein_verify_config_free(cfg);
    test_rmtree(dir);
    free(dir);
}

static void test_run_architect_only_on_changes(void **state)
{
    static const char yaml[] = "protocols:\n  BUILD: {steps: [{command: 'true'}]}\n"
                               "  ARCHITECT: {steps: [{command: 'true'}]}\n";
    const char *files[] = {"src/a.c", "int a(void) { return 1; }\n", "include/a.h",
                           "int a(void);\n", NULL};
    char *repo = git_repo(files), *plain = test_tmpdir();
    rein_verify_report *r;

    (void)state;
    r = run_cfg(repo, yaml, NULL);
    expect_status(r, "ARCHITECT", REIN_VERIFY_STATUS_SKIPPED);
    assert_non_null(strstr(proto(r, "ARCHITECT").reason, "no files added"));
    rein_verify_report_free(r);
    /* A body change is not an architecture change. */
    free(test_write_file(repo, "src/a.c", "int a(void) { return 2; }\n"));
    r = run_cfg(repo, yaml, NULL);
    expect_status(r, "ARCHITECT", REIN_VERIFY_STATUS_SKIPPED);
    rein_verify_report_free(r);
    /* A public signature change is. */
    free(test_write_file(repo, "include/a.h", "int a(int x);\n"));
    r = run_cfg(repo, yaml, NULL);
    expect_status(r, "ARCHITECT", REIN_VERIFY_STATUS_PASSED);
    rein_verify_report_free(r);
    assert_int_equal(sh(repo, "git checkout -q include/a.h && touch src/new.c"), 0);
    r = run_cfg(repo, yaml, NULL);
    expect_status(r, "ARCHITECT", REIN_VERIFY_STATUS_PASSED);
    rein_verify_report_free(r);
    /* Outside git the changes are unknown, so it runs, and the report says why. */
    r = run_cfg(plain, yaml, NULL);
    expect_status(r, "ARCHITECT", REIN_VERIFY_STATUS_PASSED);
    {
        json_t *j = rein_verify_report_json(r);
        assert_non_null(strstr(json_string_value(json_array_get(json_object_get(j, "notes"), 0)),
                               "changes are unknown"));
        json_decref(j);
    }
    rein_verify_report_free(r);
    test_rmtree(repo);
    test_rmtree(plain);
    free(repo);
    free(plain);
}

static void test_run_signatures(void **state)
{
    char *dir = test_tmpdir();
    char s1[17], s2[17], s3[17];
    rein_verify_report *r;
    const char *fail_a = "protocols:\n  TEST: {steps: [{command: [sh, -c, 'echo \"x.c:3:1: "
                         "error: boom at 0x1234\"; exit 1']}]}\n";
    const char *fail_a_moved = "protocols:\n  TEST: {steps: [{command: [sh, -c, 'echo \"x.c:9:5: "
                               "error: boom at 0xffee\"; exit 1']}]}\n";
    const char *fail_b = "protocols:\n  TEST: {steps: [{command: [sh, -c, 'echo \"x.c:3:1: "
                         "error: other\"; exit 1']}]}\n";

    (void)state;
    r = run_cfg(dir, fail_a, NULL);
    snprintf(s1, sizeof(s1), "%s", proto(r, "TEST").signature);
    rein_verify_report_free(r);
    r = run_cfg(dir, fail_a_moved, NULL);
    snprintf(s2, sizeof(s2), "%s", proto(r, "TEST").signature);
    rein_verify_report_free(r);
    r = run_cfg(dir, fail_b, NULL);
    snprintf(s3, sizeof(s3), "%s", proto(r, "TEST").signature);
    rein_verify_report_free(r);
    /* The same error at another line is the same failure; another error is not. */
    assert_string_equal(s1, s2);
    assert_string_not_equal(s1, s3);
    test_rmtree(dir);
    free(dir);
}

struct events {
    int starts, ends;
};

static void count_event(enum rein_verify_event ev, const struct rein_verify_protocol_info *info,
                        void *userdata)
{
    struct events *e = userdata;
    if (ev == REIN_VERIFY_EVENT_START)
        e->starts++;
    else if (info->status == REIN_VERIFY_STATUS_PASSED)
        e->ends++;
}

static void test_run_events_and_json_shape(void **state)
{
    char *dir = test_tmpdir();
    struct events ev = {0};
    struct rein_verify_opts o = {.on_event = count_event, .userdata = &ev, .tail_bytes = 8};
    rein_verify_report *r = run_cfg(dir,
                                    "protocols:\n  BUILD: {steps: [{command: [echo, "
                                    "line-one, line-two]}]}\n  TEST: {steps: [{command: "
                                    "'true'}]}\n",
                                    &o);
    json_t *j = rein_verify_report_json(r), *p0;

    (void)state;
    assert_int_equal(ev.starts, 2);
    assert_int_equal(ev.ends, 2);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "SUCCESS");
    assert_true(json_is_number(json_object_get(j, "confidence")));
    assert_true(json_is_array(json_object_get(j, "claims")));
    p0 = json_array_get(json_object_get(j, "protocols"), 0);
    assert_string_equal(json_string_value(json_object_get(p0, "name")), "BUILD");
    assert_string_equal(json_string_value(json_object_get(p0, "priority")), "P0");
    assert_string_equal(json_string_value(json_object_get(p0, "status")), "passed");
    assert_true(json_is_integer(json_object_get(p0, "duration_ms")));
    assert_true(json_is_object(json_object_get(p0, "counts")));
    assert_true(json_is_null(json_object_get(json_object_get(p0, "counts"), "passed")));
    /* The tail is cut at a boundary within the last 8 bytes. */
    assert_string_equal(json_string_value(json_object_get(p0, "output_tail")), "ine-two\n");
    json_decref(j);
    rein_verify_report_free(r);
    test_rmtree(dir);
    free(dir);
}

static void test_run_cancel(void **state)
{
    char *dir = test_tmpdir();
    rein_cancel *c = rein_cancel_new();
    struct rein_verify_opts o = {.cancel = c};
    rein_verify_report *r;

    (void)state;
    rein_cancel_trigger(c, "user");
    r = run_cfg(dir, "protocols:\n  TEST: {steps: [{command: 'touch ran'}]}\n", &o);
    expect_status(r, "TEST", REIN_VERIFY_STATUS_NOT_RUN);
    assert_string_equal(proto(r, "TEST").reason, "not run: cancelled");
    assert_false(exists(dir, "ran"));
    rein_verify_report_free(r);
    rein_cancel_unref(c);
    test_rmtree(dir);
    free(dir);
}

/* ---- claims in a run (the claims module has its own tests, test_claims.c) ---- */

static void test_claims_in_run(void **state)
{
    const char *files[] = {"a.c", "int a;\n", NULL};
    char *repo = git_repo(files);
    const char *text = "I added function foo to a.c. Tests pass. The build passes.";
    struct rein_verify_opts o = {
        .claims_text = text, .claims_len = strlen(text), .mode = REIN_VERIFY_MODE_MINIMAL};
    rein_verify_report *r = run_cfg(repo,
                                    "protocols:\n  BUILD: {steps: [{command: 'true'}]}\n"
                                    "  TEST: {steps: [{command: 'false'}]}\n",
                                    &o);
    const rein_claims *c = rein_verify_report_claims(r);
    const struct rein_claim *cl;

    (void)state;
    assert_int_equal(rein_claims_count(c), 3);
    cl = rein_claims_get(c, 0);
    assert_int_equal(cl->kind, REIN_CLAIM_FUNCTION);
    assert_int_equal(cl->status, REIN_CLAIM_REFUTED);
    /* TEST is not part of minimal mode, so it was run just for the claim, and failed. */
    cl = rein_claims_get(c, 1);
    assert_int_equal(cl->kind, REIN_CLAIM_TESTS_PASS);
    assert_int_equal(cl->status, REIN_CLAIM_REFUTED);
    cl = rein_claims_get(c, 2);
    assert_int_equal(cl->kind, REIN_CLAIM_BUILD_PASSES);
    assert_int_equal(cl->status, REIN_CLAIM_CONFIRMED);
    assert_true(proto(r, "TEST").for_claim);
    expect_status(r, "TEST", REIN_VERIFY_STATUS_FAILED);
    assert_int_equal(rein_verify_report_verdict(r), REIN_VERIFY_FAILED);
    rein_verify_report_free(r);
    test_rmtree(repo);
    free(repo);
}

/* A tool claim in a run is checked against the ledger the caller gives. */
static void test_claims_in_run_with_ledger(void **state)
{
    char *dir = test_tmpdir();
    const char *text = "I used the calculator and it returned 2. file_search found nothing.";
    json_t *ledger = json_loads("[{\"call_id\":\"c1\",\"tool\":\"calculator\",\"status\":"
                                "\"success\",\"args\":{},\"result\":2}]",
                                0, NULL);
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    struct rein_verify_opts o = {.claims_text = text,
                                 .claims_len = strlen(text),
                                 .ledger = ledger,
                                 .registry = reg,
                                 .mode = REIN_VERIFY_MODE_MINIMAL};
    rein_verify_report *r;
    const rein_claims *c;

    (void)state;
    assert_non_null(reg);
    /* the registry names file_search, which the ledger does not have */
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    r = run_cfg(dir, "protocols:\n  BUILD: {steps: [{command: 'true'}]}\n", &o);
    c = rein_verify_report_claims(r);
    assert_int_equal(rein_claims_count(c), 2);
    assert_int_equal(rein_claims_get(c, 0)->status, REIN_CLAIM_CONFIRMED);
    assert_string_equal(rein_claims_get(c, 1)->tool, "file_search");
    assert_int_equal(rein_claims_get(c, 1)->status, REIN_CLAIM_REFUTED);
    assert_int_equal(rein_verify_report_verdict(r), REIN_VERIFY_FAILED);
    rein_verify_report_free(r);
    rein_registry_free(reg);
    json_decref(ledger);
    test_rmtree(dir);
    free(dir);
}

/* ---- termination ---- */

struct iter_spec {
    enum rein_verify_verdict verdict;
    const char *tree;
    const char *check;
    const char *sig;
    enum rein_verify_priority prio;
    double progress;
};

/* Feeds iterations until the tracker stops; returns the final decision and how many ran. */
static struct rein_verify_decision feed(rein_verify_term *t, const struct iter_spec *its, size_t n,
                                        size_t *used)
{
    struct rein_verify_decision d = {0};

    for (size_t i = 0; i < n; i++) {
        struct rein_verify_failing f = {its[i].check, its[i].sig, its[i].prio};
        struct rein_verify_iteration it = {.verdict = its[i].verdict,
                                           .failing = &f,
                                           .n_failing = its[i].check ? 1 : 0,
                                           .tree_hash = its[i].tree,
                                           .progress = its[i].progress,
                                           .confidence = NAN,
                                           .summary = "edited src/x.c"};
        assert_rein_ok(rein_verify_term_add(t, &it, &d, NULL), NULL);
        *used = i + 1;
        if (d.action == REIN_VERIFY_STOP)
            break;
    }
    return d;
}

#define F  REIN_VERIFY_FAILED
#define P1 REIN_VERIFY_P1

static void expect_stop(const struct iter_spec *its, size_t n,
                        const struct rein_verify_term_opts *o, enum rein_verify_stop_reason reason,
                        size_t at)
{
    rein_verify_term *t = rein_verify_term_new(o);
    size_t used = 0;
    struct rein_verify_decision d = feed(t, its, n, &used);

    if (d.action != REIN_VERIFY_STOP || d.reason != reason || used != at)
        fail_msg("expected %s at iteration %zu, got %s/%s at %zu",
                 rein_verify_stop_reason_name(reason), at,
                 d.action == REIN_VERIFY_STOP ? "stop" : "continue",
                 rein_verify_stop_reason_name(d.reason), used);
    assert_non_null(strstr(d.message, "Stopped after"));
    rein_verify_term_free(t);
}

static void test_term_success_and_blocking(void **state)
{
    const struct iter_spec ok[] = {{F, "t1", "TEST", "a", P1, 0.5},
                                   {REIN_VERIFY_SUCCESS, "t2", NULL, NULL, P1, 1}};
    const struct iter_spec warn[] = {
        {REIN_VERIFY_SUCCESS_WITH_WARNINGS, "t1", "DOCS", "a", REIN_VERIFY_P2, 0.9}};
    const struct iter_spec p0[] = {{F, "t1", "BUILD", "a", REIN_VERIFY_P0, 0},
                                   {F, "t2", "BUILD", "b", REIN_VERIFY_P0, 0}};
    struct rein_verify_term_opts keep = {.continue_on_blocking = true};
    rein_verify_term *t = rein_verify_term_new(&keep);
    size_t used;

    (void)state;
    expect_stop(ok, 2, NULL, REIN_VERIFY_STOP_SUCCESS, 2);
    expect_stop(warn, 1, NULL, REIN_VERIFY_STOP_SUCCESS_WITH_WARNINGS, 1);
    expect_stop(p0, 2, NULL, REIN_VERIFY_STOP_BLOCKING_FAILURE, 1);
    assert_int_equal(feed(t, p0, 2, &used).action, REIN_VERIFY_CONTINUE);
    rein_verify_term_free(t);
}

static void test_term_same_error_three_times(void **state)
{
    /* The tree changes every time, the failure does not. */
    const struct iter_spec its[] = {{F, "t1", "TEST", "sig", P1, 0.5},
                                    {F, "t2", "TEST", "sig", P1, 0.5},
                                    {F, "t3", "TEST", "sig", P1, 0.5},
                                    {F, "t4", "TEST", "sig", P1, 0.5}};

    (void)state;
    expect_stop(its, 4, NULL, REIN_VERIFY_STOP_SAME_ERROR, 3);
}

static void test_term_no_progress_five(void **state)
{
    /* Errors cycle among three known ones, trees differ, nothing improves. */
    const struct iter_spec its[] = {
        {F, "t1", "TEST", "a", P1, NAN}, {F, "t2", "TEST", "b", P1, NAN},
        {F, "t3", "TEST", "c", P1, NAN}, {F, "t4", "TEST", "a", P1, NAN},
        {F, "t5", "TEST", "b", P1, NAN}, {F, "t6", "TEST", "c", P1, NAN},
        {F, "t7", "TEST", "a", P1, NAN}, {F, "t8", "TEST", "b", P1, NAN},
        {F, "t9", "TEST", "c", P1, NAN}};

    (void)state;
    /* iterations 2 and 3 are progress (new errors); 4..8 are not: five in a row at 8 */
    expect_stop(its, 9, NULL, REIN_VERIFY_STOP_NO_PROGRESS, 8);
}

/* The seed's oscillation: failures alternating between two signatures at a constant pass
 * rate, and the metric's last five values varying a little up and down. */
static void test_term_oscillation_seed_rules(void **state)
{
    const struct iter_spec alternate[] = {{F, "t1", "TEST", "a", P1, 0.75},
                                          {F, "t2", "TEST", "b", P1, 0.75},
                                          {F, "t3", "TEST", "a", P1, 0.75},
                                          {F, "t4", "TEST", "b", P1, 0.75},
                                          {F, "t5", "TEST", "a", P1, 0.75}};
    const struct iter_spec climbing[] = {{F, "t1", "TEST", "a", P1, 0.2},
                                         {F, "t2", "TEST", "b", P1, 0.4},
                                         {F, "t3", "TEST", "a", P1, 0.6},
                                         {F, "t4", "TEST", "b", P1, 0.8},
                                         {F, "t5", "TEST", "c", P1, 0.9}};
    const struct iter_spec wobble[] = {
        {F, "t1", "TEST", "a", P1, 0.60}, {F, "t2", "TEST", "b", P1, 0.62},
        {F, "t3", "TEST", "c", P1, 0.59}, {F, "t4", "TEST", "d", P1, 0.61},
        {F, "t5", "TEST", "e", P1, 0.60}, {F, "t6", "TEST", "f", P1, 0.60}};
    const struct iter_spec flat[] = {
        {F, "t1", "TEST", "a", P1, 0.5}, {F, "t2", "TEST", "b", P1, 0.5},
        {F, "t3", "TEST", "c", P1, 0.5}, {F, "t4", "TEST", "d", P1, 0.5},
        {F, "t5", "TEST", "e", P1, 0.5}, {F, "t6", "TEST", "f", P1, 0.5}};
    rein_verify_term *t;
    struct rein_verify_decision d;
    size_t used;

    (void)state;
    t = rein_verify_term_new(NULL);
    d = feed(t, alternate, 5, &used);
    assert_int_equal(d.reason, REIN_VERIFY_STOP_OSCILLATION);
    assert_int_equal(used, 4);
    assert_non_null(strstr(d.message, "the failures alternate between the same two"));
    rein_verify_term_free(t);
    /* The same two failures while the pass rate climbs: progress, not a swing. */
    t = rein_verify_term_new(NULL);
    d = feed(t, climbing, 5, &used);
    assert_int_equal(d.action, REIN_VERIFY_CONTINUE);
    rein_verify_term_free(t);
    /* New failures each time (progress), but the metric wobbles around 0.6. */
    t = rein_verify_term_new(NULL);
    d = feed(t, wobble, 6, &used);
    assert_int_equal(d.reason, REIN_VERIFY_STOP_OSCILLATION);
    assert_int_equal(used, 5);
    assert_non_null(strstr(d.message, "went back and forth over the last five iterations"));
    rein_verify_term_free(t);
    /* A flat metric with new failures is not a swing (the errors keep changing). */
    t = rein_verify_term_new(NULL);
    d = feed(t, flat, 6, &used);
    assert_int_equal(d.action, REIN_VERIFY_CONTINUE);
    rein_verify_term_free(t);
    /* The threshold is an option. */
    {
        struct rein_verify_term_opts o = {.oscillation_variance = 0.00001};
        t = rein_verify_term_new(&o);
        d = feed(t, wobble, 6, &used);
        assert_int_equal(d.action, REIN_VERIFY_CONTINUE);
        rein_verify_term_free(t);
    }
}

static void test_term_repeated_state(void **state)
{
    const struct iter_spec same[] = {{F, "t1", "TEST", "a", P1, 0.5},
                                     {F, "t1", "TEST", "a", P1, 0.5}};
    const struct iter_spec cycle[] = {{F, "t1", "TEST", "a", P1, 0.2},
                                      {F, "t2", "TEST", "b", P1, 0.3},
                                      {F, "t3", "TEST", "c", P1, 0.4},
                                      {F, "t1", "TEST", "a", P1, 0.2}};

    (void)state;
    expect_stop(same, 2, NULL, REIN_VERIFY_STOP_REPEATED_STATE, 2);
    expect_stop(cycle, 4, NULL, REIN_VERIFY_STOP_REPEATED_STATE, 4);
}

static void test_term_oscillation(void **state)
{
    const struct iter_spec states[] = {{F, "tA", "TEST", "a", P1, 0.5},
                                       {F, "tB", "TEST", "b", P1, 0.6},
                                       {F, "tA", "TEST", "a", P1, 0.5}};
    const struct iter_spec metric[] = {{F, "t1", "TEST", "a", P1, 0.5},
                                       {F, "t2", "TEST", "b", P1, 0.75},
                                       {F, "t3", "TEST", "c", P1, 0.5},
                                       {F, "t4", "TEST", "d", P1, 0.75}};

    (void)state;
    expect_stop(states, 3, NULL, REIN_VERIFY_STOP_OSCILLATION, 3);
    expect_stop(metric, 4, NULL, REIN_VERIFY_STOP_OSCILLATION, 4);
}

static void test_term_extends_once(void **state)
{
    struct iter_spec its[20];
    struct rein_verify_term_opts o = {.max_iterations = 4};
    rein_verify_term *t;
    struct rein_verify_decision d;
    size_t used = 0;
    bool extended = false;

    (void)state;
    /* Steady real progress: 0.1, 0.2, … never tiny, never the same state. */
    for (size_t i = 0; i < 20; i++) {
        static char trees[20][8], sigs[20][8];
        snprintf(trees[i], sizeof(trees[i]), "t%zu", i);
        snprintf(sigs[i], sizeof(sigs[i]), "s%zu", i);
        its[i] = (struct iter_spec){F, trees[i], "TEST", sigs[i], P1, 0.05 * (double)(i + 1)};
    }
    t = rein_verify_term_new(&o);
    for (size_t i = 0; i < 20; i++) {
        d = feed(t, &its[i], 1, &used);
        extended |= d.extended;
        if (i == 3) {
            assert_true(d.extended);
            assert_int_equal(d.max_iterations, 6);
            assert_int_equal(d.action, REIN_VERIFY_CONTINUE);
        }
        if (d.action == REIN_VERIFY_STOP) {
            assert_int_equal(d.reason, REIN_VERIFY_STOP_MAX_ITERATIONS);
            assert_int_equal(d.iteration, 6);
            assert_non_null(strstr(d.message, "already extended"));
            assert_non_null(strstr(d.message, "Tried:"));
            assert_non_null(strstr(d.suggestion, "Raise the limit"));
            break;
        }
    }
    assert_true(extended);
    assert_int_equal(d.action, REIN_VERIFY_STOP);
    rein_verify_term_free(t);
}

static void test_term_limit_without_progress(void **state)
{
    /* New errors every time is progress; stuck metric and known errors at the limit is not. */
    const struct iter_spec its[] = {{F, "t1", "TEST", "a", P1, 0.5},
                                    {F, "t2", "TEST", "b", P1, 0.5},
                                    {F, "t3", "TEST", "c", P1, 0.5},
                                    {F, "t4", "TEST", "a", P1, 0.5},
                                    {F, "t5", "TEST", "b", P1, 0.5}};
    struct rein_verify_term_opts o = {.max_iterations = 5, .progress_window = 2};

    (void)state;
    expect_stop(its, 5, &o, REIN_VERIFY_STOP_MAX_ITERATIONS, 5);
}

static void test_term_convergence_and_confidence(void **state)
{
    const struct iter_spec creep[] = {{F, "t1", "TEST", "a", P1, 0.900},
                                      {F, "t2", "TEST", "b", P1, 0.902},
                                      {F, "t3", "TEST", "c", P1, 0.904},
                                      {F, "t4", "TEST", "d", P1, 0.906}};
    rein_verify_term *t = rein_verify_term_new(NULL);
    struct rein_verify_failing f = {"TEST", "x", P1};
    struct rein_verify_iteration it = {
        .verdict = F, .failing = &f, .n_failing = 1, .progress = NAN, .confidence = 0.2};
    struct rein_verify_decision d;
    rein_error err;

    (void)state;
    expect_stop(creep, 4, NULL, REIN_VERIFY_STOP_CONVERGENCE_STALL, 4);
    assert_rein_ok(rein_verify_term_add(t, &it, &d, NULL), NULL);
    assert_int_equal(d.reason, REIN_VERIFY_STOP_LOW_CONFIDENCE);
    /* After a stop the tracker refuses more. */
    assert_int_equal(rein_verify_term_add(t, &it, &d, &err), REIN_ESTATE);
    rein_verify_term_free(t);
    t = rein_verify_term_new(NULL);
    it.confidence = NAN;
    it.external_blocker = true;
    assert_rein_ok(rein_verify_term_add(t, &it, &d, NULL), NULL);
    assert_int_equal(d.reason, REIN_VERIFY_STOP_EXTERNAL_BLOCKER);
    assert_string_equal(rein_verify_stop_reason_name(d.reason), "external_blocker");
    rein_verify_term_free(t);
}

static void test_term_from_reports(void **state)
{
    char *dir = test_tmpdir();
    rein_verify_term *t = rein_verify_term_new(NULL);
    struct rein_verify_decision d;
    char hash[REIN_VERIFY_HASH_LEN + 1];
    static const char yaml[] = "protocols:\n  TEST: {steps: [{command: [sh, -c, 'echo "
                               "\"t.c:1:1: error: nope\"; exit 1']}]}\n";

    (void)state;
    for (int i = 0; i < 3; i++) {
        rein_verify_report *r = run_cfg(dir, yaml, NULL);
        char name[32];
        snprintf(name, sizeof(name), "attempt%d.txt", i);
        free(test_write_file(dir, name, "changed"));
        assert_rein_ok(rein_verify_tree_hash(dir, hash, NULL), NULL);
        assert_rein_ok(rein_verify_term_add_report(t, r, hash, "tried again", &d, NULL), NULL);
        rein_verify_report_free(r);
        if (d.action == REIN_VERIFY_STOP)
            break;
    }
    assert_int_equal(d.reason, REIN_VERIFY_STOP_SAME_ERROR);
    assert_int_equal(d.iteration, 3);
    assert_non_null(strstr(d.message, "Still failing: TEST."));
    assert_string_equal(rein_verify_stop_reason_text(d.reason),
                        "the same failure kept coming back");
    rein_verify_term_free(t);
    test_rmtree(dir);
    free(dir);
}

/* ---- hashes ---- */

static void test_sha256_vectors(void **state)
{
    struct rein__sha256 h;
    char hex[65];
    char million[1000];

    (void)state;
    rein__sha256_init(&h);
    rein__sha256_add(&h, "abc", 3);
    rein__sha256_hex(&h, hex, 64);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    rein__sha256_init(&h);
    rein__sha256_hex(&h, hex, 64);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    rein__sha256_init(&h);
    rein__sha256_add(&h, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56);
    rein__sha256_hex(&h, hex, 64);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    memset(million, 'a', sizeof(million));
    rein__sha256_init(&h);
    for (int i = 0; i < 1000; i++)
        rein__sha256_add(&h, million, sizeof(million));
    rein__sha256_hex(&h, hex, 64);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_tree_hash(void **state)
{
    const char *files[] = {"a.c", "int a;\n", "dir/b.c", "int b;\n", NULL};
    char *repo = git_repo(files), *plain = test_tmpdir();
    char h0[65], h1[65], h2[65], h3[65];

    (void)state;
    assert_rein_ok(rein_verify_tree_hash(repo, h0, NULL), NULL);
    assert_int_equal(strlen(h0), 64);
    /* Touching changes times, not contents. */
    assert_int_equal(sh(repo, "sleep 0.01; touch a.c"), 0);
    assert_rein_ok(rein_verify_tree_hash(repo, h1, NULL), NULL);
    assert_string_equal(h0, h1);
    free(test_write_file(repo, "a.c", "int a2;\n"));
    assert_rein_ok(rein_verify_tree_hash(repo, h1, NULL), NULL);
    assert_string_not_equal(h0, h1);
    free(test_write_file(repo, "a.c", "int a;\n"));
    assert_rein_ok(rein_verify_tree_hash(repo, h2, NULL), NULL);
    assert_string_equal(h0, h2);
    free(test_write_file(repo, "new.c", "x\n"));
    assert_rein_ok(rein_verify_tree_hash(repo, h3, NULL), NULL);
    assert_string_not_equal(h0, h3);
    /* Ignored files do not count. */
    free(test_write_file(repo, ".gitignore", "*.o\n"));
    assert_rein_ok(rein_verify_tree_hash(repo, h1, NULL), NULL);
    free(test_write_file(repo, "x.o", "obj\n"));
    assert_rein_ok(rein_verify_tree_hash(repo, h2, NULL), NULL);
    assert_string_equal(h1, h2);

    free(test_write_file(plain, "a/b.txt", "1\n"));
    assert_rein_ok(rein_verify_tree_hash(plain, h0, NULL), NULL);
    free(test_write_file(plain, "a/b.txt", "2\n"));
    assert_rein_ok(rein_verify_tree_hash(plain, h1, NULL), NULL);
    free(test_write_file(plain, "a/b.txt", "1\n"));
    assert_rein_ok(rein_verify_tree_hash(plain, h2, NULL), NULL);
    assert_string_not_equal(h0, h1);
    assert_string_equal(h0, h2);
    test_rmtree(repo);
    test_rmtree(plain);
    free(repo);
    free(plain);
}

static void test_state_hash(void **state)
{
    struct rein_verify_failing ab[] = {{"LINT", "1", P1}, {"TEST", "2", P1}};
    struct rein_verify_failing ba[] = {{"TEST", "2", P1}, {"LINT", "1", P1}};
    char x[65], y[65], z[65];

    (void)state;
    rein_verify_state_hash("tree", ab, 2, x);
    rein_verify_state_hash("tree", ba, 2, y);
    rein_verify_state_hash("tree2", ab, 2, z);
    assert_string_equal(x, y);
    assert_string_not_equal(x, z);
    rein_verify_state_hash("tree", ab, 1, z);
    assert_string_not_equal(x, z);
}

/* ---- changes, confidence, judge ---- */

static void test_changes(void **state)
{
    const char *files[] = {"include/api.h",
                           "int f(void);\n",
                           "CMakeLists.txt",
                           "project(x)\n",
                           "src/a.c",
                           "int a;\n",
                           NULL};
    char *repo = git_repo(files), *plain = test_tmpdir();
    struct rein_verify_changes c;

    (void)state;
    assert_rein_ok(rein_verify_changes_read(repo, NULL, &c, NULL), NULL);
    assert_true(c.known);
    assert_int_equal(c.changed_count, 0);
    free(test_write_file(repo, "CMakeLists.txt", "project(x)\nfind_package(ZLIB)\n"));
    free(test_write_file(repo, "src/auth/login.c", "int l;\n"));
    assert_rein_ok(rein_verify_changes_read(repo, NULL, &c, NULL), NULL);
    assert_true(c.dependencies_changed);
    assert_true(c.files_added);
    assert_true(c.security_sensitive);
    assert_false(c.api_changed);
    free(test_write_file(repo, "include/api.h", "int f(int);\n"));
    assert_rein_ok(rein_verify_changes_read(repo, NULL, &c, NULL), NULL);
    assert_true(c.api_changed);
    assert_rein_ok(rein_verify_changes_read(plain, NULL, &c, NULL), NULL);
    assert_false(c.known);
    assert_int_equal(rein_verify_changes_read(repo, "nope^^", &c, NULL), REIN_EINVAL);
    test_rmtree(repo);
    test_rmtree(plain);
    free(repo);
    free(plain);
}

static void test_confidence(void **state)
{
    double in[] = {0.9, 0.6, NAN};

    (void)state;
    assert_true(rein_verify_confidence_propagate(0.8, in, 2) == 0.6);
    assert_true(rein_verify_confidence_propagate(0.5, in, 1) == 0.5);
    assert_true(rein_verify_confidence_propagate(0.8, in, 3) == 0.0);
    assert_true(rein_verify_confidence_propagate(7, NULL, 0) == 1.0);
    assert_string_equal(rein_verify_confidence_label(0.7), "verified");
    assert_string_equal(rein_verify_confidence_label(0.69), "UNVERIFIED");
    assert_string_equal(rein_verify_confidence_label(0.4), "UNVERIFIED");
    assert_string_equal(rein_verify_confidence_label(0.39), "withheld");
}

static void test_judge_schema_and_check(void **state)
{
    json_t *schema = json_loads(rein_verify_judge_schema(), 0, NULL), *errors = NULL, *reply;
    const char *good = "{\"functionality_score\": 8, \"quality_score\": 7.5, \"risks\": [], "
                       "\"verdict\": \"PASS\", \"reasoning\": \"ok\"}";
    rein_error err;

    (void)state;
    assert_non_null(schema);
    assert_int_equal(json_array_size(json_object_get(schema, "required")), 5);
    assert_true(json_is_false(json_object_get(schema, "additionalProperties")));
    json_decref(schema);
    reply = json_loads(good, 0, NULL);
    assert_rein_ok(rein_verify_judge_check(reply, &errors, &err), &err);
    assert_null(errors);
    assert_int_equal(rein_verify_judge_verdict(reply), REIN_VERIFY_JUDGE_PASS);
    assert_true(fabs(rein_verify_judge_confidence(reply) - 0.75) < 1e-9);
    json_decref(reply);
    reply = json_loads("{\"functionality_score\": 11, \"quality_score\": \"7\", \"risks\": "
                       "[1], \"verdict\": \"OK\", \"reasoning\": \"\", \"extra\": true}",
                       0, NULL);
    assert_int_equal(rein_verify_judge_check(reply, &errors, &err), REIN_EINVALID);
    assert_int_equal(json_array_size(errors), 6);
    assert_true(has_diag(errors, "message",
                         "must be one of \"PASS\", \"FAIL\", \"NEEDS_REVIEW\", "
                         "got \"OK\""));
    assert_true(has_diag(errors, "path", "/risks/0"));
    assert_true(has_diag(errors, "message", "must be at most 10, got 11"));
    assert_true(has_diag(errors, "message", "additional property \"extra\" is not allowed"));
    assert_true(has_diag(errors, "path", "/quality_score"));
    assert_true(has_diag(errors, "message", "must be at least 1 character long, got 0"));
    json_decref(errors);
    json_decref(reply);
}

static void test_judge_parse(void **state)
{
    const char *fenced = "Here is my verdict:\n```json\n{\"functionality_score\": 4, "
                         "\"quality_score\": 9, \"risks\": [\"race in {cache}\"], \"verdict\": "
                         "\"NEEDS_REVIEW\", \"reasoning\": \"unsure\", \"confidence\": 0.9}\n```\n";
    json_t *reply = NULL, *errors = NULL;
    rein_error err;
    char *prompt;

    (void)state;
    assert_rein_ok(rein_verify_judge_parse(fenced, strlen(fenced), &reply, &errors, &err), &err);
    assert_int_equal(rein_verify_judge_verdict(reply), REIN_VERIFY_JUDGE_NEEDS_REVIEW);
    assert_true(rein_verify_judge_confidence(reply) < REIN_VERIFY_CONFIDENCE_HIGH);
    json_decref(reply);
    assert_int_equal(rein_verify_judge_parse("no json here", 12, &reply, &errors, &err),
                     REIN_EPARSE);
    assert_null(reply);
    assert_int_equal(json_array_size(errors), 1);
    json_decref(errors);
    assert_int_equal(rein_verify_judge_parse("{\"a\": }", 7, &reply, &errors, &err), REIN_EPARSE);
    json_decref(errors);
    assert_int_equal(rein_verify_judge_parse("{\"verdict\": \"PASS\"}", 19, &reply, &errors, &err),
                     REIN_EINVALID);
    assert_non_null(reply);
    assert_true(has_diag(errors, "message", "required property \"reasoning\" is missing"));
    json_decref(reply);
    json_decref(errors);
    prompt = rein_verify_judge_prompt("add isPrime", "+int is_prime(int n);");
    assert_non_null(strstr(prompt, "add isPrime"));
    assert_non_null(strstr(prompt, "\"verdict\": \"PASS\" | \"FAIL\" | \"NEEDS_REVIEW\""));
    rein_free(prompt);
}

/* JUnit XML read from output: what counts and what is refused. */
static void junit_counts(const char *text, bool found, int64_t total, int64_t failed)
{
    struct rein_verify_counts c;

    assert_rein_ok(
        rein_verify_output_parse(text, strlen(text), REIN_VERIFY_FORMAT_AUTO, &c, NULL, NULL),
        NULL);
    if (c.has_tests != found || (found && (c.total != total || c.failed != failed)))
        fail_msg("%s\n  gave %s%lld of %lld failed", text, c.has_tests ? "" : "no tests, ",
                 (long long)c.failed, (long long)c.total);
}

static void test_junit_edges(void **state)
{
    (void)state;
    /* An entity declaration is refused: nothing is read (XML bombs are built of them). */
    junit_counts("<?xml version=\"1.0\"?>\n<!DOCTYPE t [<!ENTITY a \"aa\">]>\n"
                 "<testsuite><testcase name=\"x\">&a;</testcase></testsuite>\n",
                 false, 0, 0);
    /* Two reports one after another (cat of several files) are summed; text around them and a
     * stray '<' in it do not matter. */
    junit_counts("running a < b\n<?xml version=\"1.0\"?>\n<testsuite><testcase name=\"a\"/>"
                 "<testcase name=\"b\"><failure message=\"m\"/></testcase></testsuite>\n"
                 "between\n<testsuite><testcase name=\"c\"><error/></testcase></testsuite>\n",
                 true, 3, 2);
    /* A report cut short counts what it showed. */
    junit_counts("<testsuites><testsuite><testcase name=\"a\"/><testcase name=\"b\">"
                 "<failure/></testcase><testcase name=\"c\"",
                 true, 2, 1);
    /* Only the summary attributes: they count. Surefire's flaky reruns passed. */
    junit_counts("<testsuite tests=\"5\" failures=\"1\" errors=\"1\" skipped=\"1\"/>\n", true, 5,
                 2);
    junit_counts("<testsuite><testcase name=\"f\"><flakyFailure message=\"x\"/></testcase>"
                 "</testsuite>\n",
                 true, 1, 0);
    /* Another XML document is no test report. */
    junit_counts("<?xml version=\"1.0\"?>\n<project><testcase/></project>\n", false, 0, 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_output_samples),
    cmocka_unit_test(test_output_diagnostics),
    cmocka_unit_test(test_output_failure_names),
    cmocka_unit_test(test_output_explicit_format_and_garbage),
    cmocka_unit_test(test_config_yaml),
    cmocka_unit_test(test_config_json),
    cmocka_unit_test(test_config_errors_have_positions),
    cmocka_unit_test(test_config_alias_bomb_is_cheap),
    cmocka_unit_test(test_config_alloc_torture),
    cmocka_unit_test(test_config_find_and_load),
    cmocka_unit_test(test_expr),
    cmocka_unit_test(test_expr_errors),
    cmocka_unit_test(test_split_command),
    cmocka_unit_test(test_run_verdicts),
    cmocka_unit_test(test_run_fast_fail),
    cmocka_unit_test(test_run_parallel_groups_overlap),
    cmocka_unit_test(test_run_timeout_kills),
    cmocka_unit_test(test_run_retry_flaky),
    cmocka_unit_test(test_run_skip_missing_env_cwd),
    cmocka_unit_test(test_run_conditions_and_counts),
    cmocka_unit_test(test_run_modes_and_only),
    cmocka_unit_test(test_run_architect_only_on_changes),
    cmocka_unit_test(test_run_signatures),
    cmocka_unit_test(test_run_events_and_json_shape),
    cmocka_unit_test(test_run_cancel),
    cmocka_unit_test(test_claims_in_run),
    cmocka_unit_test(test_claims_in_run_with_ledger),
    cmocka_unit_test(test_term_success_and_blocking),
    cmocka_unit_test(test_term_same_error_three_times),
    cmocka_unit_test(test_term_no_progress_five),
    cmocka_unit_test(test_term_oscillation_seed_rules),
    cmocka_unit_test(test_junit_edges),
    cmocka_unit_test(test_term_repeated_state),
    cmocka_unit_test(test_term_oscillation),
    cmocka_unit_test(test_term_extends_once),
    cmocka_unit_test(test_term_limit_without_progress),
    cmocka_unit_test(test_term_convergence_and_confidence),
    cmocka_unit_test(test_term_from_reports),
    cmocka_unit_test(test_sha256_vectors),
    cmocka_unit_test(test_tree_hash),
    cmocka_unit_test(test_state_hash),
    cmocka_unit_test(test_changes),
    cmocka_unit_test(test_confidence),
    cmocka_unit_test(test_judge_schema_and_check),
    cmocka_unit_test(test_judge_parse),
};

REIN_TEST_MAIN(tests)
