/*
 * The log line parsers of log_transform (src/skills/logparse*.c) against the samples in
 * tests/data/logparse/: one folder per case, `input` lines and the expected record of each in
 * `output` (null for a line that is not a record). Most samples were written by the real
 * logging library or server (tests/data/logparse/gen/README.md says which). Every line is read
 * with auto detection and, when it is a record, again in the format that record names: both
 * must give the expected record. REIN_UPDATE_EXPECTED=1 writes the output files instead.
 */
#include "test.h"

#include "skills/skills_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool updating(void)
{
    const char *v = getenv("REIN_UPDATE_EXPECTED");
    return v && strcmp(v, "1") == 0;
}

static char *case_path(const char *name, const char *file)
{
    char *p = NULL;

    assert_true(asprintf(&p, "%s/tests/data/logparse/%s/%s", REIN_SOURCE_DIR, name, file) > 0);
    return p;
}

static json_t *parse(enum rein__skills_log_format f, const char *line, size_t len)
{
    bool oom = false;
    json_t *rec = rein__skills_log_parse_line(f, line, len, &oom);

    assert_false(oom);
    return rec ? rec : json_null();
}

/* Checks one case; returns the number of records with a level. */
static size_t check_case(const char *name)
{
    char *in_path = case_path(name, "input"), *out_path = case_path(name, "output");
    char *input = test_read_file(in_path, NULL), *expected = NULL;
    const char *line = input, *exp_line;
    FILE *out = NULL;
    size_t lineno = 0, levels = 0, failures = 0;

    assert_non_null(input);
    if (updating())
        assert_non_null(out = fopen(out_path, "w"));
    else
        assert_non_null(expected = test_read_file(out_path, NULL));
    exp_line = expected;
    while (*line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        json_t *got = parse(REIN__SKILLS_LOG_AUTO, line, len), *want;
        lineno++;
        if (json_object_get(got, "level"))
            levels++;
        if (out) {
            char *s = json_dumps(got, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY);
            fprintf(out, "%s\n", s);
            free(s);
        } else {
            const char *enl = strchr(exp_line, '\n');
            size_t elen = enl ? (size_t)(enl - exp_line) : strlen(exp_line);
            want = json_loadb(exp_line, elen, JSON_DECODE_ANY, NULL);
            if (!want || !json_equal(got, want)) {
                char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
                print_error("%s line %zu: %.*s\n  got:  %s\n  want: %.*s\n", name, lineno, (int)len,
                            line, g, (int)elen, exp_line);
                free(g);
                failures++;
            }
            json_decref(want);
            exp_line = enl ? enl + 1 : exp_line + elen;
        }
        /* The format the record names reads the line the same way. */
        enum rein__skills_log_format f;
        if (!json_is_null(got) &&
            rein__skills_log_format_parse(json_string_value(json_object_get(got, "format")), &f)) {
            json_t *again = parse(f, line, len);
            if (!json_equal(again, got)) {
                print_error("%s line %zu: format %s reads it differently\n", name, lineno,
                            json_string_value(json_object_get(got, "format")));
                failures++;
            }
            json_decref(again);
        }
        json_decref(got);
        line = nl ? nl + 1 : line + len;
    }
    if (out)
        fclose(out);
    assert_int_equal(failures, 0);
    free(input);
    free(expected);
    free(in_path);
    free(out_path);
    return levels;
}

/* Every line of every case is a record with a level. */
static void check_all_levelled(const char *const *names)
{
    for (; *names; names++) {
        char *in_path = case_path(*names, "input");
        char *input = test_read_file(in_path, NULL);
        size_t lines = 0;
        for (const char *p = input; *p; p++)
            lines += *p == '\n';
        assert_int_equal(check_case(*names), lines);
        free(input);
        free(in_path);
    }
}

static void test_python_logging(void **state)
{
    static const char *const cases[] = {"python_default", "python_asctime", "python_flask",
                                        "python_plain", NULL};
    (void)state;
    check_all_levelled(cases);
}

static void test_java_logback_log4j(void **state)
{
    static const char *const cases[] = {"java_logback_default", "java_logback_date",
                                        "java_spring_boot",     "java_log4j2_default",
                                        "java_log4j2_manual",   NULL};
    (void)state;
    check_all_levelled(cases);
}

static void test_go_log_and_slog(void **state)
{
    static const char *const cases[] = {"go_slog_text", "go_slog_json", "go_slog_default",
                                        "logrus_text",  "logrus_json",  "zap_json",
                                        "zap_console",  "zerolog_json", NULL};
    (void)state;
    check_all_levelled(cases);
    /* The standard log package has no levels: two of its five lines name one. */
    assert_int_equal(check_case("go_log"), 2);
}

static void test_klog(void **state)
{
    static const char *const cases[] = {"klog", NULL};
    (void)state;
    check_all_levelled(cases);
}

static void test_nginx_and_apache(void **state)
{
    static const char *const cases[] = {"nginx_access", "nginx_error", "apache_access",
                                        "apache_error", NULL};
    (void)state;
    check_all_levelled(cases);
}

static void test_syslog(void **state)
{
    static const char *const cases[] = {"syslog_5424", "syslog_3164", NULL};
    (void)state;
    check_all_levelled(cases);
    /* rsyslog's file templates drop the priority: only a level word in the message tells */
    assert_int_equal(check_case("rsyslog_file"), 1);
}

static void test_journald(void **state)
{
    static const char *const cases[] = {"journald_json", NULL};
    (void)state;
    check_all_levelled(cases);
    assert_int_equal(check_case("journald_short_iso"), 2);
}

static void test_json_lines(void **state)
{
    static const char *const cases[] = {"json_pino", "json_bunyan", "json_winston",
                                        "json_ecs_gcp_clef_otel", NULL};
    (void)state;
    check_all_levelled(cases);
}

static void test_container_wrappers(void **state)
{
    (void)state;
    /* a wrapped line without a level keeps the wrapper's record, without a level */
    assert_int_equal(check_case("docker_json"), 3);
    assert_int_equal(check_case("cri"), 2);
}

static void test_logfmt(void **state)
{
    static const char *const cases[] = {"logfmt_heroku", NULL};
    (void)state;
    check_all_levelled(cases);
}

static void test_timestamp_and_level(void **state)
{
    static const char *const cases[] = {"plain_iso", "rust_env_logger", "mysql_error", "postgres",
                                        NULL};
    (void)state;
    check_all_levelled(cases);
}

static json_int_t count_of(const json_t *counts, const char *key)
{
    return json_integer_value(json_object_get(counts, key));
}

/* The mixed file line by line, and through log_transform: every line is counted once. */
static void test_mixed_file(void **state)
{
    const char *roots[2] = {REIN_SOURCE_DIR "/tests/data/logparse", NULL};
    struct rein_skills_config cfg = {.roots = roots};
    static const char args[] = "{\"path\": \"mixed/input\", \"level\": \"error\"}";
    struct rein_call_input in = {
        .name = "log_transform", .args_text = args, .args_len = sizeof(args) - 1};
    rein_call_result *res = NULL;
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    const json_t *out, *counts, *by_format;

    (void)state;
    check_case("mixed");
    assert_non_null(reg);
    assert_rein_ok(rein_skills_register_builtins(reg, &cfg, &err), &err);
    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, &err), &err);
    assert_true(rein_call_result_ok(res));
    out = rein_call_result_output(res);
    counts = json_object_get(out, "counts");
    assert_int_equal(count_of(counts, "lines"), 20);
    assert_int_equal(count_of(counts, "blank"), 2);
    assert_int_equal(count_of(counts, "unparsable"), 4);
    assert_int_equal(count_of(counts, "parsed"), 14);
    /* the error lines of seven formats; warn, info and levelless lines are filtered out */
    assert_int_equal(count_of(counts, "matched"), 9);
    assert_int_equal(count_of(json_object_get(counts, "by_level"), "error"), 9);
    by_format = json_object_get(counts, "by_format");
    assert_int_equal(json_object_size(by_format), 7);
    assert_int_equal(count_of(by_format, "plain"), 2);
    assert_int_equal(count_of(by_format, "docker"), 1);
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(out, "unparsable_lines"), 0), "line")),
                     6);
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* The level words of the libraries, and the numbers of syslog, bunyan/pino and OpenTelemetry. */
static void test_level_names(void **state)
{
    static const struct {
        const char *word, *level;
    } words[] = {
        {"WARN", "warn"},    {"Warning", "warn"},     {"ERR", "error"},     {"error", "error"},
        {"CRIT", "fatal"},   {"FATAL", "fatal"},      {"panic", "fatal"},   {"EMERG", "fatal"},
        {"notice", "info"},  {"Information", "info"}, {"SEVERE", "error"},  {"FINE", "debug"},
        {"FINEST", "trace"}, {"trace3", "trace"},     {"ERROR+2", "error"}, {"INFO-4", "info"},
        {"DPANIC", "fatal"}, {"Verbose", "debug"},    {"wrn", "warn"},      {"Note", "info"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        const char *got = rein__skills_log_level_normalize(words[i].word, strlen(words[i].word));
        if (!got || strcmp(got, words[i].level) != 0) {
            print_error("%s: got %s, want %s\n", words[i].word, got ? got : "NULL", words[i].level);
            fail();
        }
    }
    assert_null(rein__skills_log_level_normalize("ERROR+", 6));
    assert_null(rein__skills_log_level_normalize("disk", 4));
    /* JSON numbers: syslog severities, bunyan/pino levels, and nothing else */
    static const struct {
        const char *line, *level;
    } nums[] = {
        {"{\"level\":3,\"msg\":\"x\"}", "error"},
        {"{\"level\":0,\"msg\":\"x\"}", "fatal"},
        {"{\"level\":7,\"msg\":\"x\"}", "debug"},
        {"{\"level\":10,\"msg\":\"x\"}", "trace"},
        {"{\"level\":35,\"msg\":\"x\"}", "info"},
        {"{\"level\":60,\"msg\":\"x\"}", "fatal"},
        {"{\"PRIORITY\":\"4\",\"MESSAGE\":\"x\"}", "warn"},
        {"{\"SeverityNumber\":21,\"Body\":\"x\"}", "fatal"},
        {"{\"level\":100,\"msg\":\"x\"}", NULL},
        {"{\"level\":8,\"msg\":\"x\"}", NULL},
    };
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        json_t *rec = parse(REIN__SKILLS_LOG_JSON, nums[i].line, strlen(nums[i].line));
        const char *got = json_string_value(json_object_get(rec, "level"));
        if (nums[i].level ? !got || strcmp(got, nums[i].level) != 0 : got != NULL) {
            print_error("%s: got %s, want %s\n", nums[i].line, got ? got : "none",
                        nums[i].level ? nums[i].level : "none");
            fail();
        }
        json_decref(rec);
    }
}

/* The line the issue names: an ISO timestamp and a level word is not syslog's host. */
static void test_iso_timestamp_and_level_is_not_a_host(void **state)
{
    static const char line[] = "2026-11-25T10:00:02Z ERROR disk full";
    json_t *rec;

    (void)state;
    rec = parse(REIN__SKILLS_LOG_AUTO, line, strlen(line));
    assert_string_equal(json_string_value(json_object_get(rec, "format")), "plain");
    assert_string_equal(json_string_value(json_object_get(rec, "level")), "error");
    assert_string_equal(json_string_value(json_object_get(rec, "message")), "disk full");
    json_decref(rec);
    /* asked for as syslog, it still is one (host ERROR), without a level */
    rec = parse(REIN__SKILLS_LOG_SYSLOG, line, strlen(line));
    assert_null(json_object_get(rec, "level"));
    json_decref(rec);
    /* a level word inside the message of a line with no other level is not a level */
    static const char free_text[] = "the ERROR budget is fine";
    rec = parse(REIN__SKILLS_LOG_AUTO, free_text, strlen(free_text));
    assert_true(json_is_null(rec));
    json_decref(rec);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_python_logging),
    cmocka_unit_test(test_java_logback_log4j),
    cmocka_unit_test(test_go_log_and_slog),
    cmocka_unit_test(test_klog),
    cmocka_unit_test(test_nginx_and_apache),
    cmocka_unit_test(test_syslog),
    cmocka_unit_test(test_journald),
    cmocka_unit_test(test_json_lines),
    cmocka_unit_test(test_container_wrappers),
    cmocka_unit_test(test_logfmt),
    cmocka_unit_test(test_timestamp_and_level),
    cmocka_unit_test(test_mixed_file),
    cmocka_unit_test(test_level_names),
    cmocka_unit_test(test_iso_timestamp_and_level_is_not_a_host),
};

REIN_TEST_MAIN(tests)
