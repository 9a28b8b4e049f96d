/*
 * The rules router (src/providers/router*.c) against its corpus in tests/data/router/: every
 * line a request (English, Simplified and Traditional Chinese) with the calls it should make,
 * or none when no skill serves it. corpus.jsonl was written with the router; heldout.jsonl,
 * heldout2.jsonl and heldout3.jsonl were each written before the router was run on them, and
 * are reported on their own (each showed misses; the general bugs behind them were fixed
 * before the next set was written, and the sentences were left as they were). The test prints the
 * accuracy (whole, held-out, per skill and language), fails below 95% on the whole, and below
 * 100% on the examples the README and `rein chat --help` print (readme.jsonl, which must hold
 * every one of them).
 *
 * A request is right when it makes exactly the expected calls in order: same tools, same
 * argument names; strings compared without case, expressions by their value (the calculator's
 * own parser evaluates both), everything else exactly.
 */
#include "test.h"

#include "providers/router_int.h"
#include "skills/skills_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static rein_registry *registry(void)
{
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);

    assert_non_null(reg);
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    return reg;
}

static const char *const builtins[] = {"echo", "file_search", "calculator", "log_transform"};

static bool same_value(const char *key, const json_t *want, const json_t *got)
{
    if (strcmp(key, "expression") == 0 && json_is_string(want) && json_is_string(got)) {
        struct rein__skills_calc_error e;
        double a, b;
        return rein__skills_calc_eval(json_string_value(want), json_string_length(want), &a, &e) ==
                   REIN_OK &&
               rein__skills_calc_eval(json_string_value(got), json_string_length(got), &b, &e) ==
                   REIN_OK &&
               fabs(a - b) <= 1e-9 * (fabs(a) > 1 ? fabs(a) : 1);
    }
    if (json_is_string(want) && json_is_string(got))
        return strcasecmp(json_string_value(want), json_string_value(got)) == 0;
    return json_equal(want, got);
}

static bool same_calls(const json_t *want, const struct rein__route_plan *plan)
{
    const json_t *c;
    size_t i;

    if (json_array_size(want) != plan->n)
        return false;
    json_array_foreach(want, i, c)
    {
        const json_t *args = json_object_get(c, "arguments"), *v;
        const char *key;
        if (strcmp(json_string_value(json_object_get(c, "tool")),
                   rein_tool_id(plan->calls[i].tool)) != 0 ||
            json_object_size(args) != json_object_size(plan->calls[i].args))
            return false;
        json_object_foreach((json_t *)args, key, v)
        {
            const json_t *got = json_object_get(plan->calls[i].args, key);
            if (!got || !same_value(key, v, got))
                return false;
        }
    }
    return true;
}

static char *plan_text(const struct rein__route_plan *plan)
{
    json_t *a = json_array();
    char *s;

    for (size_t i = 0; i < plan->n; i++)
        json_array_append_new(a, json_pack("{s:s, s:O}", "tool", rein_tool_id(plan->calls[i].tool),
                                           "arguments", plan->calls[i].args));
    s = json_dumps(a, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(a);
    return s;
}

struct tally {
    size_t right, total;
};

/* Routes every line of file; returns the tally and adds to the per-class tallies. */
static struct tally run_file(rein_registry *reg, const char *name, struct tally *by_class,
                             bool show)
{
    char *path = NULL, *text, *line, *save = NULL;
    struct tally t = {0, 0};

    assert_true(asprintf(&path, "%s/tests/data/router/%s", REIN_SOURCE_DIR, name) > 0);
    assert_non_null(text = test_read_file(path, NULL));
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *doc = json_loads(line, 0, NULL), *want;
        struct rein__route_plan plan;
        const char *req;
        bool ok;
        size_t cls;
        assert_non_null(doc);
        req = json_string_value(json_object_get(doc, "text"));
        want = json_object_get(doc, "calls");
        assert_rein_ok(rein__router_route(reg, builtins, 4, req, &plan), NULL);
        ok = same_calls(want, &plan);
        /* classes: the first expected tool, or "none"; then the language */
        const char *tool = json_string_value(json_object_get(json_array_get(want, 0), "tool"));
        cls = 4;
        for (size_t k = 0; tool && k < 4; k++)
            cls = strcmp(tool, builtins[k]) == 0 ? k : cls;
        by_class[cls].total++;
        by_class[cls].right += ok;
        by_class[5 + rein__router_language(req)].total++;
        by_class[5 + rein__router_language(req)].right += ok;
        t.total++;
        t.right += ok;
        if (!ok && show) {
            char *got = plan_text(&plan), *exp = json_dumps(want, JSON_COMPACT | JSON_ENSURE_ASCII);
            print_message("  miss %s: %s\n    want %s\n    got  %s\n", name, req, exp, got);
            free(got);
            free(exp);
        }
        rein__route_plan_release(&plan);
        json_decref(doc);
    }
    free(text);
    free(path);
    return t;
}

static double pct(struct tally t)
{
    return t.total ? 100.0 * (double)t.right / (double)t.total : 100.0;
}

static void test_corpus_accuracy(void **state)
{
    static const char *const classes[] = {"echo", "file_search", "calculator", "log_transform",
                                          "none", "en",          "zh-Hans",    "zh-Hant"};
    struct tally by[8] = {{0, 0}};
    rein_registry *reg = registry();
    struct tally corpus, held, held2, held3, whole;

    (void)state;
    corpus = run_file(reg, "corpus.jsonl", by, true);
    held = run_file(reg, "heldout.jsonl", by, true);
    held2 = run_file(reg, "heldout2.jsonl", by, true);
    held3 = run_file(reg, "heldout3.jsonl", by, true);
    whole = (struct tally){corpus.right + held.right + held2.right + held3.right,
                           corpus.total + held.total + held2.total + held3.total};
    print_message("router accuracy: whole %zu/%zu (%.1f%%); written with the router %zu/%zu "
                  "(%.1f%%), held out 1 %zu/%zu (%.1f%%), 2 %zu/%zu (%.1f%%), 3 %zu/%zu "
                  "(%.1f%%)\n",
                  whole.right, whole.total, pct(whole), corpus.right, corpus.total, pct(corpus),
                  held.right, held.total, pct(held), held2.right, held2.total, pct(held2),
                  held3.right, held3.total, pct(held3));
    for (size_t i = 0; i < 8; i++)
        print_message("  %-13s %zu/%zu (%.1f%%)\n", classes[i], by[i].right, by[i].total,
                      pct(by[i]));
    /* the corpus covers what the issue asks: 200 requests, 20 per skill and 20 unserved */
    assert_true(whole.total >= 200);
    for (size_t i = 0; i < 5; i++)
        assert_true(by[i].total >= 20);
    assert_true(by[6].total >= 20 && by[7].total >= 20);
    assert_true(pct(whole) >= 95.0);
    rein_registry_free(reg);
}

/* Every `rein chat "…"` without a provider, every curl "message" of the README, and the
 * examples of `rein chat --help` are in readme.jsonl, and all of them route as written there. */
static void test_readme_and_help_examples(void **state)
{
    struct tally by[8] = {{0, 0}};
    rein_registry *reg = registry();
    char *path = NULL, *readme, *listed;
    struct tally t;

    (void)state;
    assert_true(asprintf(&path, "%s/README.md", REIN_SOURCE_DIR) > 0);
    assert_non_null(readme = test_read_file(path, NULL));
    free(path);
    assert_true(asprintf(&path, "%s/tests/data/router/readme.jsonl", REIN_SOURCE_DIR) > 0);
    assert_non_null(listed = test_read_file(path, NULL));
    free(path);
    for (char *p = readme; (p = strstr(p, "rein chat \"")) != NULL;) {
        char *end = strchr(p + 11, '"'), *eol = strchr(p, '\n');
        p += 11;
        if (!end || (eol && strstr(p, "--provider") && strstr(p, "--provider") < eol) ||
            strncmp(p, "…", 3) == 0)
            continue;
        json_t *s = json_stringn(p, (size_t)(end - p));
        char *quoted = json_dumps(s, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
        char *raw = json_dumps(s, JSON_ENCODE_ANY);
        if (!strstr(listed, quoted) && !strstr(listed, raw)) {
            print_error("README example %s is not in tests/data/router/readme.jsonl\n", raw);
            fail();
        }
        free(quoted);
        free(raw);
        json_decref(s);
    }
    /* the examples `rein chat --help` gives: the quoted requests of its usage text */
    const char *bin = getenv("REIN_BIN");
    char cmd[4200], help[8192];
    size_t got = 0;
    FILE *f;
    if (bin && strlen(bin) < 4000) {
        snprintf(cmd, sizeof(cmd), "'%s' chat --help", bin);
        assert_non_null(f = popen(cmd, "r"));
        got = fread(help, 1, sizeof(help) - 1, f);
        pclose(f);
        help[got] = '\0';
        const char *p = strstr(help, "simple requests");
        const char *end = p ? strstr(p, ").") : NULL;
        while (p && end && (p = strchr(p, '"')) != NULL && p < end) {
            const char *q = strchr(p + 1, '"');
            if (!q || q > end)
                break;
            json_t *s = json_stringn(p + 1, (size_t)(q - p - 1));
            char *raw = json_dumps(s, JSON_ENCODE_ANY);
            if (!strstr(listed, raw)) {
                print_error("--help example %s is not in tests/data/router/readme.jsonl\n", raw);
                fail();
            }
            free(raw);
            json_decref(s);
            p = q + 1;
        }
    }
    t = run_file(reg, "readme.jsonl", by, true);
    print_message("README and --help examples: %zu/%zu\n", t.right, t.total);
    assert_int_equal(t.right, t.total);
    free(readme);
    free(listed);
    rein_registry_free(reg);
}

/* The language of a request picks the answer's. */
static void test_language(void **state)
{
    (void)state;
    assert_int_equal(rein__router_language("echo hello"), REIN__LANG_EN);
    assert_int_equal(rein__router_language("计算 3 的平均值"), REIN__LANG_HANS);
    assert_int_equal(rein__router_language("計算 3 的平均數"), REIN__LANG_HANT);
    assert_int_equal(rein__router_language("搜尋 x"), REIN__LANG_HANT);
    assert_int_equal(rein__router_language("帮我分析一下 app.log"), REIN__LANG_HANS);
}

/* Arithmetic in words, and what is not arithmetic. */
static void test_expressions(void **state)
{
    static const struct {
        const char *text, *expr;
    } cases[] = {
        {"2 乘以 21", "2*21"},
        {"15% of 200", "(15/100)*200"},
        {"square root of 16", "sqrt(16)"},
        {"2 to the power of 10", "2^10"},
        {"5 squared", "(5)^2"},
        {"three times four", "3*4"},
        {"十二乘以三", "12*3"},
        {"200 的 15%", "200*(15/100)"},
        {"3.5kg + 2kg", "3.5+2"},
        {"2的10次方", "2^10"},
    };
    static const char *const refused[] = {"the weather",           "love", "42", "my taxes",
                                          "the capital of France", ""};
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = rein__args_expression(cases[i].text);
        if (!got || strcmp(got, cases[i].expr) != 0) {
            print_error("%s: got %s, want %s\n", cases[i].text, got ? got : "NULL", cases[i].expr);
            fail();
        }
        rein_free(got);
    }
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        char *got = rein__args_expression(refused[i]);
        if (got) {
            print_error("%s: got %s, want nothing\n", refused[i], got);
            fail();
        }
    }
}

/* A user's own skill is routable from its manifest's examples, without code. */
static void test_manifest_examples(void **state)
{
    static const char manifest[] =
        "{\"id\": \"convert_units\", \"description\": \"Convert a quantity between units\","
        " \"parameters\": {\"type\": \"object\", \"properties\": {\"value\": {\"type\": "
        "\"number\"}, \"from\": {\"type\": \"string\"}, \"to\": {\"type\": \"string\"},"
        " \"precision\": {\"type\": \"integer\"}}, \"required\": [\"value\", \"from\", \"to\"]},"
        " \"runner\": {\"kind\": \"process\", \"command\": [\"true\"]},"
        " \"examples\": [{\"text\": \"convert 5 km to miles\", \"arguments\": {\"value\": 5,"
        " \"from\": \"km\", \"to\": \"miles\", \"precision\": 2}},"
        " {\"text\": \"把 5 公里换算成 英里\", \"arguments\": {\"value\": 5, \"from\": \"公里\","
        " \"to\": \"英里\"}}]}";
    rein_registry *reg = registry();
    const char *names[] = {"echo", "convert_units"};
    struct rein__route_plan plan;
    rein_error err;
    json_t *m = json_loads(manifest, 0, NULL);

    (void)state;
    assert_non_null(m);
    assert_rein_ok(rein_skills_register_runners(reg, &err), &err);
    assert_rein_ok(rein_registry_add_manifest(reg, m, "/tmp", "test", &err), &err);
    json_decref(m);
    assert_rein_ok(rein__router_route(reg, names, 2, "Please convert 12.5 kg to pounds.", &plan),
                   NULL);
    assert_int_equal(plan.n, 1);
    assert_string_equal(rein_tool_id(plan.calls[0].tool), "convert_units");
    assert_true(json_number_value(json_object_get(plan.calls[0].args, "value")) == 12.5);
    assert_string_equal(json_string_value(json_object_get(plan.calls[0].args, "from")), "kg");
    assert_string_equal(json_string_value(json_object_get(plan.calls[0].args, "to")), "pounds");
    /* an argument the example's text does not show is a constant */
    assert_int_equal(json_integer_value(json_object_get(plan.calls[0].args, "precision")), 2);
    rein__route_plan_release(&plan);
    assert_rein_ok(rein__router_route(reg, names, 2, "请把 3 公里换算成 米", &plan), NULL);
    assert_int_equal(plan.n, 1);
    assert_string_equal(json_string_value(json_object_get(plan.calls[0].args, "to")), "米");
    rein__route_plan_release(&plan);
    /* and in a sequence with a built-in */
    assert_rein_ok(rein__router_route(reg, names, 2, "convert 1 mile to km, then echo done", &plan),
                   NULL);
    assert_int_equal(plan.n, 2);
    assert_string_equal(rein_tool_id(plan.calls[1].tool), "echo");
    rein__route_plan_release(&plan);
    /* a tool that is not offered is not routed to */
    assert_rein_ok(rein__router_route(reg, names, 1, "convert 5 km to miles", &plan), NULL);
    assert_int_equal(plan.n, 0);
    rein_registry_free(reg);
}

/* Steps in sequence that route only in part: the calls of those that do, the others as typed;
 * a request routed whole that carries the rest in an argument stays whole. */
static void test_steps_routed_in_part(void **state)
{
    rein_registry *reg = registry();
    struct rein__route_plan plan;

    (void)state;
    assert_rein_ok(rein__router_route(reg, builtins, 4,
                                      "搜索包含 'calculator' 的文件，然后计算文件中数字的平均值",
                                      &plan),
                   NULL);
    assert_int_equal(plan.n, 1);
    assert_string_equal(rein_tool_id(plan.calls[0].tool), "file_search");
    assert_int_equal(plan.nskipped, 1);
    assert_string_equal(plan.skipped[0], "计算文件中数字的平均值");
    rein__route_plan_release(&plan);
    assert_rein_ok(rein__router_route(reg, builtins, 4, "Echo hi; then tell me a joke", &plan),
                   NULL);
    assert_int_equal(plan.n, 1);
    assert_int_equal(plan.nskipped, 0);
    assert_string_equal(json_string_value(json_object_get(plan.calls[0].args, "text")),
                        "hi; then tell me a joke");
    rein__route_plan_release(&plan);
    /* nothing routes: nothing skipped either (the request is unroutable as a whole) */
    assert_rein_ok(rein__router_route(reg, builtins, 4, "tell a joke, then sing", &plan), NULL);
    assert_int_equal(plan.n, 0);
    assert_int_equal(plan.nskipped, 0);
    rein__route_plan_release(&plan);
    /* "不存在的文件" is a term, not "in the files" */
    assert_rein_ok(rein__router_route(reg, builtins, 4, "搜索不存在的文件", &plan), NULL);
    assert_int_equal(plan.n, 1);
    assert_string_equal(json_string_value(json_object_get(plan.calls[0].args, "query")), "不存在");
    rein__route_plan_release(&plan);
    assert_rein_ok(rein__router_route(reg, builtins, 4, "在所有的文件里搜索 calculator", &plan),
                   NULL);
    assert_int_equal(plan.n, 1);
    assert_string_equal(json_string_value(json_object_get(plan.calls[0].args, "query")),
                        "calculator");
    assert_null(json_object_get(plan.calls[0].args, "root_dir"));
    rein__route_plan_release(&plan);
    rein_registry_free(reg);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_corpus_accuracy),   cmocka_unit_test(test_readme_and_help_examples),
    cmocka_unit_test(test_language),          cmocka_unit_test(test_expressions),
    cmocka_unit_test(test_manifest_examples), cmocka_unit_test(test_steps_routed_in_part),
};

REIN_TEST_MAIN(tests)
