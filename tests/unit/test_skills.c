/*
 * Unit tests for the built-in skills (src/skills/), run through the call pipeline as a model's
 * calls would be: the scenarios of docs/DESIGN.md [skill-host] for echo, calculator,
 * file_search and log_transform, and their bad inputs (path traversal, symbolic links that
 * lead out, huge and binary files, malformed expressions, empty lists, unparsable log lines).
 */
#include "test.h"

#include <sys/stat.h>
#include <unistd.h>

struct env {
    char *root;    /* the allowed root */
    char *outside; /* a folder next to it, not allowed */
    rein_registry *reg;
};

static const char *str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));

    if (!s) {
        print_error("no string \"%s\"\n", key);
        fail();
    }
    return s;
}

static json_int_t num(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);

    if (!json_is_integer(v)) {
        print_error("no integer \"%s\"\n", key);
        fail();
    }
    return json_integer_value(v);
}

/* The tree the file skills read. max_file_bytes is 4 KiB so "huge" is cheap to make. */
static struct env *setup_env(void)
{
    struct env *e = calloc(1, sizeof(*e));
    char *base = test_tmpdir(), path[4096];
    const char *roots[2];
    struct rein_skills_config cfg = {.roots = roots, .max_file_bytes = 4096};
    rein_error err;

    assert_true(asprintf(&e->root, "%s/root", base) > 0);
    assert_true(asprintf(&e->outside, "%s/outside", base) > 0);
    free(base);
    free(test_write_file(e->root, "notes.txt",
                         "The calculator skill adds numbers.\nnothing here\n"
                         "CALCULATOR in capitals\n"));
    free(test_write_file(e->root, "docs/guide.md", "# Guide\nUse the calculator for sums.\n"));
    free(test_write_file(e->root, "docs/deep/more.md", "calculator again\n"));
    free(test_write_file(e->root, ".git/config", "calculator in git metadata\n"));
    free(test_write_file(e->outside, "secret.txt", "calculator secret outside\n"));
    /* A binary file with the word in it, and a file over the size limit. */
    snprintf(path, sizeof(path), "%s/blob.bin", e->root);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite("calculator\0\1\2\3", 1, 14, f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/huge.log", e->root);
    f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 500; i++)
        fputs("calculator line\n", f);
    fclose(f);
    /* A link that leads out, one that stays in, and one that dangles. */
    snprintf(path, sizeof(path), "%s/escape", e->root);
    assert_int_equal(symlink(e->outside, path), 0);
    snprintf(path, sizeof(path), "%s/docs_again", e->root);
    assert_int_equal(symlink("docs", path), 0);
    snprintf(path, sizeof(path), "%s/dangling", e->root);
    assert_int_equal(symlink("no-such-file", path), 0);
    roots[0] = e->root;
    roots[1] = NULL;
    e->reg = rein_registry_new(&err);
    assert_non_null(e->reg);
    assert_rein_ok(rein_skills_register_builtins(e->reg, &cfg, &err), &err);
    return e;
}

static void teardown_env(struct env *e)
{
    char *base = strdup(e->root);

    *strrchr(base, '/') = '\0';
    rein_registry_free(e->reg);
    test_rmtree(base);
    free(base);
    free(e->root);
    free(e->outside);
    free(e);
}

static rein_call_result *call(const rein_registry *reg, const char *name, const char *args)
{
    struct rein_call_input in = {.name = name, .args_text = args, .args_len = strlen(args)};
    rein_call_result *res = NULL;
    rein_error err;

    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, &err), &err);
    return res;
}

/* Runs a call that must succeed and returns its output (borrowed from *res). */
static const json_t *ok(const rein_registry *reg, const char *name, const char *args,
                        rein_call_result **res)
{
    *res = call(reg, name, args);
    if (!rein_call_result_ok(*res)) {
        print_error("%s %s: %s\n", name, args, rein_call_result_message(*res));
        fail();
    }
    return rein_call_result_output(*res);
}

/* Runs a call that must fail with code and a message containing says. */
static void fails(const rein_registry *reg, const char *name, const char *args,
                  enum rein_call_code code, const char *says)
{
    rein_call_result *res = call(reg, name, args);

    if (rein_call_result_code(res) != code || !strstr(rein_call_result_message(res), says)) {
        print_error("%s %s: got %s \"%s\", want %s \"%s\"\n", name, args,
                    rein_call_code_name(rein_call_result_code(res)) ?: "ok",
                    rein_call_result_message(res), rein_call_code_name(code), says);
        fail();
    }
    rein_call_result_free(res);
}

static double result_of(const json_t *out)
{
    return json_number_value(json_object_get(out, "result"));
}

/* ---- echo ---- */

static void test_echo_hello(void **state)
{
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    rein_call_result *res;

    (void)state;
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    assert_string_equal(json_string_value(ok(reg, "echo", "{\"text\": \"hello\"}", &res)), "hello");
    rein_call_result_free(res);
    assert_string_equal(json_string_value(ok(reg, "echo", "{\"text\": \"\"}", &res)), "");
    rein_call_result_free(res);
    fails(reg, "echo", "{\"text\": 5}", REIN_CALL_INVALID_ARGUMENTS, "/text");
    fails(reg, "echo", "{\"text\": \"a\", \"loud\": true}", REIN_CALL_INVALID_ARGUMENTS, "loud");
    rein_registry_free(reg);
}

/* ---- calculator ---- */

static void test_calculator_statistics(void **state)
{
    static const struct {
        const char *args;
        double want;
    } cases[] = {
        {"{\"op\": \"mean\", \"values\": [1, 2, 3, 4, 5]}", 3},
        {"{\"op\": \"mean\", \"values\": [10, 20, 30]}", 20},
        {"{\"op\": \"max\", \"values\": [10, 20, 30]}", 30},
        {"{\"op\": \"min\", \"values\": [10, 20, 30]}", 10},
        {"{\"op\": \"sum\", \"values\": [0.1, 0.2, 0.3]}", 0.6},
        {"{\"op\": \"median\", \"values\": [5, 1, 3]}", 3},
        {"{\"op\": \"median\", \"values\": [4, 1, 3, 2]}", 2.5},
        {"{\"op\": \"stdev\", \"values\": [2, 4, 4, 4, 5, 5, 7, 9]}", 2.138089935299395},
        {"{\"op\": \"count\", \"values\": [1, 1, 1]}", 3},
        {"{\"op\": \"product\", \"values\": [2, 3, 4]}", 24},
        {"{\"op\": \"count\", \"values\": []}", 0},
        {"{\"op\": \"sum\", \"values\": []}", 0},
        {"{\"op\": \"product\", \"values\": []}", 1},
    };
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    rein_call_result *res;

    (void)state;
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double got = result_of(ok(reg, "calculator", cases[i].args, &res));
        if (got != cases[i].want) {
            print_error("%s: got %.17g, want %.17g\n", cases[i].args, got, cases[i].want);
            fail();
        }
        rein_call_result_free(res);
    }
    /* Integral results are integers in the output. */
    const json_t *out =
        ok(reg, "calculator", "{\"op\": \"mean\", \"values\": [1, 2, 3, 4, 5]}", &res);
    assert_true(json_is_integer(json_object_get(out, "result")));
    rein_call_result_free(res);
    rein_registry_free(reg);
}

static void test_calculator_expressions(void **state)
{
    static const struct {
        const char *expr;
        double want;
    } cases[] = {
        {"2*(3+4)/5", 2.8},
        {"1 + 2 * 3", 7},
        {"(1 + 2) * 3", 9},
        {"-2^2", -4},
        {"2^3^2", 512},
        {"2 ** 10", 1024},
        {"10 % 4", 2},
        {"-(-3)", 3},
        {"sqrt(16) + abs(-2)", 6},
        {"max(1, 7, 3)", 7},
        {"round(2.5)", 3},
        {"1e3 / 4", 250},
        {"2 * pi", 6.283185307179586},
        {"ln(e)", 1},
        {"  42  ", 42},
    };
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    rein_call_result *res;
    char args[256];

    (void)state;
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(args, sizeof(args), "{\"expression\": \"%s\"}", cases[i].expr);
        double got = result_of(ok(reg, "calculator", args, &res));
        if (got != cases[i].want) {
            print_error("%s: got %.17g, want %.17g\n", cases[i].expr, got, cases[i].want);
            fail();
        }
        rein_call_result_free(res);
    }
    rein_registry_free(reg);
}

static void test_calculator_bad_inputs(void **state)
{
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    char deep[2048];

    (void)state;
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    fails(reg, "calculator", "{\"expression\": \"1/0\"}", REIN_CALL_EXECUTION_FAILED,
          "division by zero at position 2");
    fails(reg, "calculator", "{\"expression\": \"5 % (2-2)\"}", REIN_CALL_EXECUTION_FAILED,
          "division by zero");
    fails(reg, "calculator", "{\"expression\": \"sqrt(-1)\"}", REIN_CALL_EXECUTION_FAILED,
          "undefined");
    fails(reg, "calculator", "{\"expression\": \"10^400\"}", REIN_CALL_EXECUTION_FAILED,
          "too large");
    fails(reg, "calculator", "{\"expression\": \"2*(3+\"}", REIN_CALL_INVALID_ARGUMENTS,
          "ends where a number was expected");
    fails(reg, "calculator", "{\"expression\": \"2*(3+4\"}", REIN_CALL_INVALID_ARGUMENTS,
          "expected ')'");
    fails(reg, "calculator", "{\"expression\": \"2 $ 3\"}", REIN_CALL_INVALID_ARGUMENTS,
          "unexpected '$' at position 3");
    fails(reg, "calculator", "{\"expression\": \"__import__('os')\"}", REIN_CALL_INVALID_ARGUMENTS,
          "unknown function");
    fails(reg, "calculator", "{\"expression\": \"x + 1\"}", REIN_CALL_INVALID_ARGUMENTS,
          "unknown name \"x\"");
    fails(reg, "calculator", "{\"expression\": \"1..2\"}", REIN_CALL_INVALID_ARGUMENTS,
          "malformed number");
    fails(reg, "calculator", "{\"expression\": \" \"}", REIN_CALL_INVALID_ARGUMENTS, "empty");
    fails(reg, "calculator", "{\"op\": \"mean\", \"values\": []}", REIN_CALL_INVALID_ARGUMENTS,
          "mean of an empty list is undefined");
    fails(reg, "calculator", "{\"op\": \"stdev\", \"values\": [3]}", REIN_CALL_INVALID_ARGUMENTS,
          "at least 2 values");
    fails(reg, "calculator", "{\"op\": \"mean\"}", REIN_CALL_INVALID_ARGUMENTS, "values");
    fails(reg, "calculator", "{\"op\": \"avg\", \"values\": [1]}", REIN_CALL_INVALID_ARGUMENTS,
          "/op");
    fails(reg, "calculator", "{\"op\": \"sum\", \"values\": [1, \"2\"]}",
          REIN_CALL_INVALID_ARGUMENTS, "/values/1");
    fails(reg, "calculator", "{}", REIN_CALL_INVALID_ARGUMENTS, "give an expression");
    fails(reg, "calculator", "{\"expression\": \"1\", \"op\": \"sum\", \"values\": [1]}",
          REIN_CALL_INVALID_ARGUMENTS, "not both");
    /* Deep nesting is an error, not a crash. */
    memset(deep, '(', 1000);
    snprintf(deep + 1000, sizeof(deep) - 1000, "1");
    char *args = NULL;
    assert_true(asprintf(&args, "{\"expression\": \"%s\"}", deep) > 0);
    fails(reg, "calculator", args, REIN_CALL_INVALID_ARGUMENTS, "nests more than");
    free(args);
    /* The invalid payload points at the expression. */
    rein_call_result *res = call(reg, "calculator", "{\"expression\": \"2 $ 3\"}");
    const json_t *p = rein_call_result_invalid_json(res);
    assert_non_null(p);
    assert_string_equal(str(json_array_get(json_object_get(p, "errors"), 0), "path"),
                        "/expression");
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* ---- file_search ---- */

static bool has_match(const json_t *out, const char *file, json_int_t line)
{
    const json_t *m;
    size_t i;

    json_array_foreach(json_object_get(out, "matches"), i, m)
    {
        if (strcmp(str(m, "file"), file) == 0 && num(m, "line") == line)
            return true;
    }
    return false;
}

static void test_file_search_finds_lines(void **state)
{
    struct env *e = setup_env();
    rein_call_result *res;
    const json_t *out = ok(e->reg, "file_search", "{\"query\": \"calculator\"}", &res);
    const json_t *skipped = json_object_get(out, "skipped");

    (void)state;
    assert_true(has_match(out, "notes.txt", 1));
    assert_true(has_match(out, "notes.txt", 3)); /* case-insensitive by default */
    assert_true(has_match(out, "docs/guide.md", 2));
    assert_true(has_match(out, "docs/deep/more.md", 1));
    /* docs_again leads to docs, already searched: no duplicates. */
    assert_int_equal(num(out, "count"), 4);
    assert_false(json_is_true(json_object_get(out, "truncated")));
    /* Folders are walked in name order: docs/ before notes.txt. */
    const json_t *first = json_array_get(json_object_get(out, "matches"), 0);
    assert_string_equal(str(first, "file"), "docs/deep/more.md");
    assert_string_equal(str(json_array_get(json_object_get(out, "matches"), 3), "text"),
                        "CALCULATOR in capitals");
    assert_int_equal(num(skipped, "binary"), 1);
    assert_int_equal(num(skipped, "too_large"), 1);
    assert_int_equal(num(skipped, "symlinks_outside"), 1);
    assert_int_equal(num(skipped, "unreadable"), 1); /* the dangling link */
    rein_call_result_free(res);
    teardown_env(e);
}

static void test_file_search_options(void **state)
{
    struct env *e = setup_env();
    rein_call_result *res;
    const json_t *out;

    (void)state;
    out = ok(e->reg, "file_search", "{\"query\": \"calculator\", \"limit\": 2}", &res);
    assert_int_equal(num(out, "count"), 2);
    assert_true(json_is_true(json_object_get(out, "truncated")));
    rein_call_result_free(res);
    out = ok(e->reg, "file_search", "{\"query\": \"CALCULATOR\", \"case_sensitive\": true}", &res);
    assert_int_equal(num(out, "count"), 1);
    assert_true(has_match(out, "notes.txt", 3));
    rein_call_result_free(res);
    out = ok(e->reg, "file_search", "{\"query\": \"^calc\\\\w+ again$\", \"regex\": true}", &res);
    assert_int_equal(num(out, "count"), 1);
    assert_true(has_match(out, "docs/deep/more.md", 1));
    rein_call_result_free(res);
    out = ok(e->reg, "file_search", "{\"query\": \"calculator\", \"glob\": \"*.md\"}", &res);
    assert_int_equal(num(out, "count"), 2);
    rein_call_result_free(res);
    out = ok(e->reg, "file_search", "{\"query\": \"calculator\", \"root_dir\": \"docs\"}", &res);
    assert_true(has_match(out, "guide.md", 2));
    assert_true(has_match(out, "deep/more.md", 1));
    rein_call_result_free(res);
    /* Searching for something that is nowhere is a success with no matches. */
    out = ok(e->reg, "file_search", "{\"query\": \"no such words anywhere\"}", &res);
    assert_int_equal(num(out, "count"), 0);
    rein_call_result_free(res);
    /* A dot in a literal query is a dot. */
    out = ok(e->reg, "file_search", "{\"query\": \"numbers.\"}", &res);
    assert_int_equal(num(out, "count"), 1);
    rein_call_result_free(res);
    teardown_env(e);
}

static void test_file_search_refuses_to_leave_the_roots(void **state)
{
    struct env *e = setup_env();
    char args[4200];

    (void)state;
    fails(e->reg, "file_search", "{\"query\": \"calculator\", \"root_dir\": \"..\"}",
          REIN_CALL_DENIED, "outside the allowed roots");
    fails(e->reg, "file_search", "{\"query\": \"x\", \"root_dir\": \"docs/../../outside\"}",
          REIN_CALL_DENIED, "outside the allowed roots");
    fails(e->reg, "file_search", "{\"query\": \"x\", \"root_dir\": \"/etc\"}", REIN_CALL_DENIED,
          "outside the allowed roots");
    snprintf(args, sizeof(args), "{\"query\": \"x\", \"root_dir\": \"%s\"}", e->outside);
    fails(e->reg, "file_search", args, REIN_CALL_DENIED, "outside the allowed roots");
    fails(e->reg, "file_search", "{\"query\": \"x\", \"root_dir\": \"escape\"}", REIN_CALL_DENIED,
          "symbolic link");
    /* Inside the roots, an absolute path is fine. */
    rein_call_result *res;
    snprintf(args, sizeof(args), "{\"query\": \"guide\", \"root_dir\": \"%s/docs\"}", e->root);
    ok(e->reg, "file_search", args, &res);
    rein_call_result_free(res);
    fails(e->reg, "file_search", "{\"query\": \"x\", \"root_dir\": \"missing\"}",
          REIN_CALL_INVALID_ARGUMENTS, "does not exist");
    fails(e->reg, "file_search", "{\"query\": \"(\", \"regex\": true}", REIN_CALL_INVALID_ARGUMENTS,
          "not a valid regular expression");
    fails(e->reg, "file_search", "{\"query\": \"\"}", REIN_CALL_INVALID_ARGUMENTS, "/query");
    /* The denial reaches the model as an invalid payload naming the argument. */
    res = call(e->reg, "file_search", "{\"query\": \"x\", \"root_dir\": \"../outside\"}");
    const json_t *p = rein_call_result_invalid_json(res);
    assert_non_null(p);
    assert_non_null(strstr(str(p, "error"), "Denied: root_dir"));
    assert_string_equal(str(json_array_get(json_object_get(p, "errors"), 0), "path"), "/root_dir");
    rein_call_result_free(res);
    teardown_env(e);
}

/* ---- log_transform ---- */

static void test_log_transform_formats(void **state)
{
    static const struct {
        const char *format, *line, *level, *message;
    } cases[] = {
        {"json", "{\"time\":\"2024-05-01T10:00:00Z\",\"level\":\"ERROR\",\"msg\":\"disk full\"}",
         "error", "disk full"},
        {"json", "{\"level\":50,\"time\":1714557600000,\"msg\":\"pino error\"}", "error",
         "pino error"},
        {"logfmt", "time=2024-05-01T10:00:00Z level=warning msg=\"slow query\" ms=1200", "warn",
         "slow query"},
        {"syslog", "<34>1 2003-10-11T22:14:15.003Z mymachine su - ID47 - 'su root' failed", "fatal",
         "'su root' failed"},
        {"syslog", "<13>Feb  5 17:32:18 10.0.0.99 myproc[42]: hello there", "info", "hello there"},
        {"syslog", "Feb  5 17:32:18 host sshd[99]: ERROR auth failure", "error",
         "ERROR auth failure"},
        {"apache",
         "127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] \"GET /apache_pb.gif HTTP/1.0\" 404 "
         "2326 \"http://www.example.com/start.html\" \"Mozilla/4.08\"",
         "warn", "GET /apache_pb.gif HTTP/1.0"},
        {"apache",
         "[Wed Oct 11 14:32:52 2000] [error] [client 127.0.0.1] client denied by server "
         "configuration",
         "error", "client denied by server configuration"},
        {"plain", "2024-05-01 10:00:00,123 INFO Server started on port 8080", "info",
         "Server started on port 8080"},
    };
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);

    (void)state;
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int pass = 0; pass < 2; pass++) {
            json_t *args = json_pack("{s:s, s:s}", "text", cases[i].line, "format",
                                     pass ? "auto" : cases[i].format);
            char *text = json_dumps(args, 0);
            rein_call_result *res;
            const json_t *out = ok(reg, "log_transform", text, &res);
            const json_t *rec = json_array_get(json_object_get(out, "records"), 0);
            if (!rec || strcmp(str(rec, "level"), cases[i].level) != 0 ||
                strcmp(str(rec, "message"), cases[i].message) != 0 ||
                strcmp(str(rec, "format"), cases[i].format) != 0) {
                char *got = json_dumps(out, 0);
                print_error("case %zu (%s): %s\n", i, pass ? "auto" : cases[i].format, got);
                free(got);
                fail();
            }
            rein_call_result_free(res);
            free(text);
            json_decref(args);
        }
    }
    rein_registry_free(reg);
}

static const char mixed_log[] =
    "2024-05-01 10:00:00 INFO service started\n"
    "2024-05-01 10:00:01 WARN cache miss rate high\n"
    "\n"
    "{\"level\":\"error\",\"msg\":\"upstream timeout\",\"service\":\"api\",\"ms\":5000}\n"
    "this line is free text without a shape\n"
    "level=error msg=\"db down\" service=db\n"
    "2024-05-01 10:00:05 DEBUG tick\n"
    "Traceback (most recent call last):\n";

static void test_log_transform_counts_filters_and_reports(void **state)
{
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    rein_call_result *res;
    json_t *args;
    char *text;
    const json_t *out, *counts;

    (void)state;
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    args = json_pack("{s:s}", "text", mixed_log);
    text = json_dumps(args, 0);
    out = ok(reg, "log_transform", text, &res);
    counts = json_object_get(out, "counts");
    assert_int_equal(num(counts, "lines"), 8);
    assert_int_equal(num(counts, "blank"), 1);
    assert_int_equal(num(counts, "parsed"), 5);
    assert_int_equal(num(counts, "unparsable"), 2);
    assert_int_equal(num(counts, "lines"),
                     num(counts, "blank") + num(counts, "parsed") + num(counts, "unparsable"));
    assert_int_equal(num(json_object_get(counts, "by_level"), "error"), 2);
    assert_int_equal(num(json_object_get(counts, "by_level"), "info"), 1);
    /* Unparsable lines are listed with their numbers, not dropped. */
    const json_t *bad = json_object_get(out, "unparsable_lines");
    assert_int_equal(json_array_size(bad), 2);
    assert_int_equal(num(json_array_get(bad, 0), "line"), 5);
    assert_string_equal(str(json_array_get(bad, 1), "text"), "Traceback (most recent call last):");
    rein_call_result_free(res);
    free(text);
    json_decref(args);

    /* level is a minimum, match a regular expression, fields a projection, limit a cap. */
    args = json_pack("{s:s, s:s, s:[s], s:i}", "text", mixed_log, "level", "warn", "fields",
                     "service", "limit", 2);
    text = json_dumps(args, 0);
    out = ok(reg, "log_transform", text, &res);
    counts = json_object_get(out, "counts");
    assert_int_equal(num(counts, "matched"), 3);
    assert_int_equal(num(counts, "returned"), 2);
    assert_true(json_is_true(json_object_get(out, "truncated")));
    const json_t *rec = json_array_get(json_object_get(out, "records"), 1);
    assert_int_equal(num(rec, "line"), 4);
    assert_int_equal(json_object_size(json_object_get(rec, "fields")), 1);
    assert_string_equal(str(json_object_get(rec, "fields"), "service"), "api");
    rein_call_result_free(res);
    free(text);
    json_decref(args);

    args = json_pack("{s:s, s:s}", "text", mixed_log, "match", "timeout|down");
    text = json_dumps(args, 0);
    out = ok(reg, "log_transform", text, &res);
    assert_int_equal(num(json_object_get(out, "counts"), "matched"), 2);
    rein_call_result_free(res);
    free(text);
    json_decref(args);
    rein_registry_free(reg);
}

static void test_log_transform_reads_files_in_the_roots(void **state)
{
    struct env *e = setup_env();
    rein_call_result *res;
    const json_t *out;

    (void)state;
    free(test_write_file(e->root, "logs/app.log",
                         "2024-05-01 10:00:00 ERROR payment failed\n"
                         "2024-05-01 10:00:01 INFO retry ok\n"));
    out = ok(e->reg, "log_transform", "{\"path\": \"logs/app.log\"}", &res);
    assert_int_equal(num(json_object_get(out, "counts"), "parsed"), 2);
    assert_string_equal(str(out, "source"), "logs/app.log");
    rein_call_result_free(res);
    fails(e->reg, "log_transform", "{\"path\": \"../outside/secret.txt\"}", REIN_CALL_DENIED,
          "outside the allowed roots");
    fails(e->reg, "log_transform", "{\"path\": \"escape/secret.txt\"}", REIN_CALL_DENIED,
          "symbolic link");
    fails(e->reg, "log_transform", "{\"path\": \"huge.log\"}", REIN_CALL_INVALID_ARGUMENTS,
          "the limit is 4096 bytes");
    fails(e->reg, "log_transform", "{\"path\": \"blob.bin\"}", REIN_CALL_INVALID_ARGUMENTS,
          "binary");
    fails(e->reg, "log_transform", "{\"path\": \"nope.log\"}", REIN_CALL_INVALID_ARGUMENTS,
          "does not exist");
    fails(e->reg, "log_transform", "{\"path\": \"docs\"}", REIN_CALL_INVALID_ARGUMENTS,
          "not a regular file");
    fails(e->reg, "log_transform", "{}", REIN_CALL_INVALID_ARGUMENTS, "exactly one");
    fails(e->reg, "log_transform", "{\"path\": \"a.log\", \"text\": \"x\"}",
          REIN_CALL_INVALID_ARGUMENTS, "exactly one");
    fails(e->reg, "log_transform", "{\"text\": \"x\", \"match\": \"[\"}",
          REIN_CALL_INVALID_ARGUMENTS, "not a valid regular expression");
    fails(e->reg, "log_transform", "{\"text\": \"x\", \"format\": \"xml\"}",
          REIN_CALL_INVALID_ARGUMENTS, "/format");
    teardown_env(e);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_echo_hello),
    cmocka_unit_test(test_calculator_statistics),
    cmocka_unit_test(test_calculator_expressions),
    cmocka_unit_test(test_calculator_bad_inputs),
    cmocka_unit_test(test_file_search_finds_lines),
    cmocka_unit_test(test_file_search_options),
    cmocka_unit_test(test_file_search_refuses_to_leave_the_roots),
    cmocka_unit_test(test_log_transform_formats),
    cmocka_unit_test(test_log_transform_counts_filters_and_reports),
    cmocka_unit_test(test_log_transform_reads_files_in_the_roots),
};

REIN_TEST_MAIN(tests)
