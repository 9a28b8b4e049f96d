/*
 * The rules provider (issue 4 item 8, docs/DESIGN.md [skill-host] option B) driven by the agent
 * loop: the seed's scenarios in English and Chinese ("echo hello", "搜索包含 'calculator' 的文件",
 * "计算 [1,2,3,4,5] 的平均值"), sequences ("A, then B", "…然后…"), an unroutable request, and
 * the fast path in front of a model on the scripted model server (routed requests never reach
 * the model; others, and routed calls that fail, do).
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include "model_server.h"

struct fx {
    rein_provider_config *cfg;
    rein_provider *rules;
    rein_registry *reg;
    rein_agent *a;
    rein_history *h;
    rein_agent_result *r;
    char *root;
    struct rein_buf events;
};

static void on_event(const struct rein_agent_event *ev, void *ud)
{
    struct fx *f = ud;

    assert_rein_ok(rein_agent_event_write(ev, &f->events), NULL);
    assert_rein_ok(rein_buf_addch(&f->events, '\n'), NULL);
}

static void fx_start(struct fx *f)
{
    const char *roots[2];
    struct rein_skills_config sc = {.roots = roots};
    rein_error err;

    memset(f, 0, sizeof(*f));
    f->root = test_tmpdir();
    free(test_write_file(f->root, "notes/calc.md", "the calculator skill adds numbers\n"));
    free(test_write_file(f->root, "notes/other.md", "nothing to see\n"));
    roots[0] = f->root;
    roots[1] = NULL;
    f->reg = rein_registry_new(&err);
    assert_non_null(f->reg);
    assert_rein_ok(rein_skills_register_builtins(f->reg, &sc, &err), &err);
    f->cfg = rein_provider_config_new();
    assert_rein_ok(rein_provider_config_set_provider(f->cfg, "rules", &err), &err);
    f->rules = rein_provider_new(f->cfg, &err);
    assert_non_null(f->rules);
    f->a = rein_agent_new(f->rules, f->reg, &err);
    assert_non_null(f->a);
    f->h = rein_history_new();
    rein_buf_init(&f->events, 0);
}

static void fx_stop(struct fx *f)
{
    rein_agent_result_free(f->r);
    rein_agent_free(f->a);
    rein_history_free(f->h);
    rein_provider_free(f->rules);
    rein_provider_config_free(f->cfg);
    rein_registry_free(f->reg);
    rein_buf_release(&f->events);
    test_rmtree(f->root);
    free(f->root);
}

static const char *fx_run(struct fx *f, const char *message)
{
    struct rein_agent_turn_opts o = {.on_event = on_event, .event_data = f};
    rein_error err;

    rein_agent_result_free(f->r);
    f->r = NULL;
    rein_history_free(f->h);
    f->h = rein_history_new();
    rein_buf_reset(&f->events);
    assert_rein_ok(rein_agent_run(f->a, f->h, message, &o, &f->r, &err), &err);
    return rein_agent_result_text(f->r);
}

/* The tools called in the turn, comma-separated, with their status. */
static char *calls_of(const struct fx *f)
{
    json_t *calls = rein_agent_result_tool_calls_json(f->r), *c;
    static char out[256];
    size_t i, n = 0;

    out[0] = '\0';
    json_array_foreach(calls, i, c)
    {
        n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s:%s", i ? "," : "",
                              json_string_value(json_object_get(c, "tool")),
                              json_string_value(json_object_get(c, "status")));
    }
    json_decref(calls);
    return out;
}

static void test_echo_english_and_chinese(void **state)
{
    struct fx f;

    (void)state;
    fx_start(&f);
    assert_string_equal(fx_run(&f, "echo hello"), "hello");
    assert_int_equal(rein_agent_result_stop(f.r), REIN_AGENT_STOP_FINAL_ANSWER);
    assert_true(rein_agent_result_success(f.r));
    assert_string_equal(calls_of(&f), "echo:success");
    assert_int_equal(rein_ledger_count(rein_agent_result_ledger(f.r)), 1);
    /* The answer streams as text like a model's. */
    assert_non_null(strstr(f.events.ptr, "{\"type\":\"text_delta\",\"seq\""));
    assert_string_equal(fx_run(&f, "回显 你好，世界"), "你好，世界");
    /* a long text comes back whole: the rules read results unshortened (it was "echo failed:") */
    char *big = malloc(7006);
    memcpy(big, "echo ", 5);
    memset(big + 5, 'a', 7000);
    big[7005] = '\0';
    assert_string_equal(fx_run(&f, big), big + 5);
    assert_true(rein_agent_result_success(f.r));
    free(big);
    fx_stop(&f);
}

static void test_search_chinese(void **state)
{
    struct fx f;
    const char *text;

    (void)state;
    fx_start(&f);
    text = fx_run(&f, "搜索包含 'calculator' 的文件");
    assert_string_equal(calls_of(&f), "file_search:success");
    assert_non_null(strstr(text, "找到 1 处包含“calculator”的内容（1 个文件）"));
    assert_non_null(strstr(text, "notes/calc.md:1: the calculator skill adds numbers"));
    /* The arguments the route captured. */
    json_t *calls = rein_agent_result_tool_calls_json(f.r);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(calls, 0), "arguments"), "query")),
                        "calculator");
    json_decref(calls);
    fx_stop(&f);
}

static void test_search_english(void **state)
{
    struct fx f;
    const char *text;

    (void)state;
    fx_start(&f);
    text = fx_run(&f, "search 'calculator'");
    assert_non_null(strstr(text, "1 match for \"calculator\" in 1 file:"));
    text = fx_run(&f, "find unicorns");
    assert_string_equal(text, "No matches for \"unicorns\" (2 files searched).");
    /* the search term without "the docs for", the folder from "in the notes folder" */
    fx_run(&f, "Search the docs for calculator");
    json_t *calls = rein_agent_result_tool_calls_json(f.r);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(calls, 0), "arguments"), "query")),
                        "calculator");
    json_decref(calls);
    text = fx_run(&f, "search for calculator in the notes folder, at most 5 results");
    assert_non_null(strstr(text, "\n  calc.md:1: the calculator skill adds numbers"));
    calls = rein_agent_result_tool_calls_json(f.r);
    json_t *args = json_object_get(json_array_get(calls, 0), "arguments");
    assert_string_equal(json_string_value(json_object_get(args, "root_dir")), "notes");
    assert_int_equal(json_integer_value(json_object_get(args, "limit")), 5);
    json_decref(calls);
    fx_stop(&f);
}

static void test_calculator_chinese_and_english(void **state)
{
    struct fx f;
    json_t *calls;

    (void)state;
    fx_start(&f);
    assert_string_equal(fx_run(&f, "计算 [1,2,3,4,5] 的平均值"), "1, 2, 3, 4, 5 的平均值是 3。");
    /* The captured word became the enum member, the list an array of numbers. */
    calls = rein_agent_result_tool_calls_json(f.r);
    json_t *args = json_object_get(json_array_get(calls, 0), "arguments");
    assert_string_equal(json_string_value(json_object_get(args, "op")), "mean");
    assert_int_equal(json_array_size(json_object_get(args, "values")), 5);
    json_decref(calls);
    assert_string_equal(fx_run(&f, "計算 [10,20,30] 的最大值"), "10, 20, 30 的最大值是 30。");
    assert_string_equal(fx_run(&f, "calculate the average of [2, 4]"), "The mean of 2, 4 is 3.");
    assert_string_equal(fx_run(&f, "the sum of 1, 2, 3"), "The sum of 1, 2, 3 is 6.");
    assert_string_equal(fx_run(&f, "What is the mean of 3, 4 and 8?"), "The mean of 3, 4, 8 is 5.");
    assert_string_equal(fx_run(&f, "the product of 2 and 5"), "The product of 2, 5 is 10.");
    assert_string_equal(fx_run(&f, "calculate 2*(3+4)"), "2*(3+4) = 14");
    assert_string_equal(fx_run(&f, "Calculate 2*(3+4)/5"), "2*(3+4)/5 = 2.8");
    assert_string_equal(fx_run(&f, "2 乘以 21"), "2*21 = 42");
    assert_string_equal(fx_run(&f, "what is 15% of 200"), "(15/100)*200 = 30");
    /* several statistics of one list: one call each, in order */
    assert_string_equal(fx_run(&f, "计算 [10,20,30] 的平均值、最大值和最小值"),
                        "1. 10, 20, 30 的平均值是 20。\n2. 10, 20, 30 的最大值是 30。\n"
                        "3. 10, 20, 30 的最小值是 10。");
    assert_string_equal(calls_of(&f), "calculator:success,calculator:success,calculator:success");
    fx_stop(&f);
}

static void test_sequence_chinese(void **state)
{
    struct fx f;
    const char *text;

    (void)state;
    fx_start(&f);
    text = fx_run(&f, "搜索包含 'calculator' 的文件，然后计算 [1,2,3,4,5] 的平均值");
    assert_string_equal(calls_of(&f), "file_search:success,calculator:success");
    assert_int_equal(rein_agent_result_stop(f.r), REIN_AGENT_STOP_FINAL_ANSWER);
    assert_non_null(strstr(text, "1. 找到 1 处"));
    assert_non_null(strstr(text, "\n2. 1, 2, 3, 4, 5 的平均值是 3。"));
    /* One call per reply, in order, each answered before the next. */
    assert_int_equal(rein_agent_result_iterations(f.r), 2);
    assert_int_equal(rein_history_len(f.h), 7);
    fx_stop(&f);
}

/* Seed 004's combined example as it is written there: the second step needs the file's
 * contents, which no rule reads. The step that routes runs; the other is named, never dropped,
 * and the reply's finish reason says the request was not done in full. */
static void test_sequence_step_it_cannot_read(void **state)
{
    struct fx f;
    const char *text;

    (void)state;
    fx_start(&f);
    text = fx_run(&f, "搜索包含 'calculator' 的文件，然后计算文件中数字的平均值");
    assert_string_equal(calls_of(&f), "file_search:success");
    assert_non_null(strstr(text, "找到 1 处"));
    assert_non_null(strstr(text, "未完成：“计算文件中数字的平均值”。"));
    assert_non_null(strstr(text, "REIN_PROVIDER"));
    const json_t *last = rein_history_get(f.h, rein_history_len(f.h) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "role")), "assistant");
    text = fx_run(&f, "search the docs for calculator, then compute the mean of the numbers in it");
    assert_string_equal(calls_of(&f), "file_search:success");
    assert_non_null(strstr(text, "Not done: \"compute the mean of the numbers in it\"."));
    /* A step an argument carries is not a step of its own: echo repeats all of it. */
    text = fx_run(&f, "echo hello, then world");
    assert_string_equal(calls_of(&f), "echo:success");
    assert_string_equal(text, "hello, then world");
    fx_stop(&f);
}

static void test_sequence_english(void **state)
{
    struct fx f;

    (void)state;
    fx_start(&f);
    assert_string_equal(fx_run(&f, "echo hi, then calculate 1+2"), "1. hi\n2. 1+2 = 3");
    assert_string_equal(calls_of(&f), "echo:success,calculator:success");
    assert_string_equal(fx_run(&f, "first echo a; then say b"), "1. a\n2. b");
    /* A message that reads as one request is not split: echo takes all of it. */
    assert_string_equal(fx_run(&f, "echo then what"), "then what");
    fx_stop(&f);
}

static void test_sequence_stops_at_a_failure(void **state)
{
    struct fx f;
    const char *text;

    (void)state;
    fx_start(&f);
    text = fx_run(&f, "analyze missing.log, then echo done");
    assert_string_equal(calls_of(&f), "log_transform:invalid");
    assert_non_null(strstr(text, "log_transform failed"));
    fx_stop(&f);
}

static void test_unroutable(void **state)
{
    struct fx f;
    const char *text;

    (void)state;
    fx_start(&f);
    text = fx_run(&f, "what's the weather in Paris?");
    assert_int_equal(rein_agent_result_stop(f.r), REIN_AGENT_STOP_FINAL_ANSWER);
    assert_string_equal(calls_of(&f), "");
    assert_non_null(strstr(text, "\"what's the weather in Paris?\""));
    assert_non_null(strstr(text, "REIN_PROVIDER"));
    assert_non_null(strstr(text, "--provider"));
    /* what it can do, one line per offered skill */
    assert_non_null(strstr(text, "Offline I can:"));
    assert_non_null(strstr(text, "(echo)"));
    assert_non_null(strstr(text, "search the docs for calculator (file_search)"));
    assert_non_null(strstr(text, "(log_transform)"));
    /* the finish reason says it did not route (the agent's fast path and success rule read it) */
    text = fx_run(&f, "今天天气怎么样？");
    assert_non_null(strstr(text, "请配置模型提供方"));
    text = fx_run(&f, "今天天氣如何？");
    assert_non_null(strstr(text, "請設定模型提供者"));
    fx_stop(&f);
}

/* The answer about a log: counts by level and the first error lines, in the request's
 * language, and the records cut at the limit said so. */
static void test_log_answers(void **state)
{
    struct fx f;
    const char *text;
    struct rein_buf log;

    (void)state;
    fx_start(&f);
    rein_buf_init(&log, 0);
    assert_rein_ok(rein_buf_adds(&log, "2026-11-25T10:00:01Z INFO started\n"
                                       "ERROR:app.db:connection refused\n"
                                       "2026-11-25 10:00:03.120 [main] WARN  c.e.App - slow\n"
                                       "2026-11-25T10:00:02Z ERROR disk full\n"),
                   NULL);
    for (int i = 0; i < 150; i++)
        assert_rein_ok(rein_buf_addf(&log, "level=info msg=\"tick %d\"\n", i), NULL);
    free(test_write_file(f.root, "logs/app.log", log.ptr));
    rein_buf_release(&log);
    text = fx_run(&f, "show error lines in logs/app.log");
    assert_string_equal(calls_of(&f), "log_transform:success");
    assert_non_null(strstr(text, "logs/app.log: 154 lines, 154 parsed. 2 match what you asked "
                                 "for. By level: error 2."));
    assert_non_null(strstr(text, "\n  line 2 [error]: connection refused\n"
                                 "  line 4 [error]: disk full"));
    text = fx_run(&f, "帮我分析一下 logs/app.log");
    assert_non_null(strstr(text, "按级别：error 2，warn 1，info 151。"));
    assert_non_null(strstr(text, "前几条错误："));
    assert_non_null(strstr(text, "只返回了前 100 条（共 154 条，达到上限）。"));
    text = fx_run(&f, "分析 logs/app.log");
    assert_non_null(strstr(text, "依等級") == NULL ? text : NULL);
    text = fx_run(&f, "幫我分析一下 logs/app.log 的錯誤");
    assert_non_null(strstr(text, "依等級：error 2。"));
    /* never a JSON dump */
    assert_null(strstr(text, "{\""));
    fx_stop(&f);
}

/* ---- the fast path in front of a model ---- */

static void test_fast_path_skips_the_model(void **state)
{
    struct fx f;
    rein_provider_config *cfg = rein_provider_config_new();
    rein_provider *model;
    rein_agent *a;
    rein_error err;
    ms_server *ms = ms_start(0, &err);
    struct rein_agent_turn_opts o = {0};

    (void)state;
    fx_start(&f);
    assert_non_null(ms);
    assert_rein_ok(rein_provider_config_set_provider(cfg, "openai-compatible", &err), &err);
    assert_rein_ok(rein_provider_config_set_base_url(cfg, ms_openai_url(ms)), NULL);
    assert_rein_ok(rein_provider_config_set_model(cfg, "test-model"), NULL);
    model = rein_provider_new(cfg, &err);
    assert_non_null(model);
    a = rein_agent_new(model, f.reg, &err);
    rein_agent_set_rules(a, f.rules);

    /* Routed: the model is never asked. */
    rein_agent_result_free(f.r);
    assert_rein_ok(rein_agent_run(a, f.h, "echo fast", &o, &f.r, &err), &err);
    assert_string_equal(rein_agent_result_text(f.r), "fast");
    assert_int_equal(ms_request_count(ms), 0);

    /* Not routed: the model answers, and does not see the router's attempt. */
    assert_rein_ok(ms_script(ms, "[{\"text\":\"Why did the chicken…\"}]", false, &err), &err);
    rein_agent_result_free(f.r);
    assert_rein_ok(rein_agent_run(a, f.h, "tell me a joke", &o, &f.r, &err), &err);
    assert_string_equal(rein_agent_result_text(f.r), "Why did the chicken…");
    assert_int_equal(ms_request_count(ms), 1);
    assert_int_equal(ms_request(ms, 0)->status, 200);

    /* Routed, but the call fails: the model takes over with the error in the history. */
    assert_rein_ok(ms_script(ms, "[{\"text\":\"That log file does not exist.\"}]", false, &err),
                   &err);
    rein_agent_result_free(f.r);
    assert_rein_ok(rein_agent_run(a, f.h, "analyze missing.log", &o, &f.r, &err), &err);
    assert_string_equal(rein_agent_result_text(f.r), "That log file does not exist.");
    assert_int_equal(ms_request_count(ms), 2);
    const struct ms_request *r = ms_request(ms, 1);
    assert_int_equal(r->status, 200);
    assert_non_null(strstr(r->body, "log_transform"));
    assert_non_null(strstr(r->body, "missing.log"));

    /* Routed in part: the rules run the step they read, then the model takes the turn over
     * with that result in the history, instead of the rules answering "not done". */
    assert_rein_ok(ms_script(ms, "[{\"text\":\"The mean is 42.\"}]", false, &err), &err);
    rein_agent_result_free(f.r);
    assert_rein_ok(rein_agent_run(a, f.h,
                                  "search the docs for calculator, then compute the mean of the "
                                  "numbers in it",
                                  &o, &f.r, &err),
                   &err);
    assert_string_equal(rein_agent_result_text(f.r), "The mean is 42.");
    assert_int_equal(ms_request_count(ms), 3);
    r = ms_request(ms, 2);
    assert_non_null(strstr(r->body, "file_search"));
    assert_non_null(strstr(r->body, "calc.md"));
    assert_null(strstr(r->body, "Not done"));

    rein_agent_free(a);
    rein_provider_free(model);
    rein_provider_config_free(cfg);
    ms_stop(ms);
    fx_stop(&f);
}

/* The provider on its own (rein provider chat --provider rules): no registry, no routes. */
static void test_without_registry(void **state)
{
    struct fx f;
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new();
    rein_model_response *resp = NULL;
    rein_error err;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_history_add_user(h, "echo hi"), NULL);
    assert_rein_ok(rein_provider_send(f.rules, req, h, &resp, &err), &err);
    assert_string_equal(rein_model_response_finish_reason(resp), "unroutable");
    assert_int_equal(rein_model_response_call_count(resp), 0);
    rein_model_response_free(resp);
    /* With the registry it routes, and makes a call like a model would. */
    json_t *params = json_pack("{s:s}", "type", "object");
    assert_rein_ok(rein_model_request_add_tool(req, "echo", "Echo", params), NULL);
    json_decref(params);
    rein_model_request_set_registry(req, f.reg);
    assert_rein_ok(rein_provider_send(f.rules, req, h, &resp, &err), &err);
    assert_int_equal(rein_model_response_call_count(resp), 1);
    const rein_model_call *c = rein_model_response_call(resp, 0);
    assert_string_equal(rein_model_call_name(c), "echo");
    assert_string_equal(rein_model_call_raw_arguments(c), "{\"text\":\"hi\"}");
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_OK);
    assert_int_equal(strncmp(rein_model_call_id(c), "call_", 5), 0);
    rein_model_response_free(resp);
    rein_model_request_free(req);
    rein_history_free(h);
    fx_stop(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_echo_english_and_chinese),
    cmocka_unit_test(test_search_chinese),
    cmocka_unit_test(test_search_english),
    cmocka_unit_test(test_calculator_chinese_and_english),
    cmocka_unit_test(test_sequence_chinese),
    cmocka_unit_test(test_sequence_step_it_cannot_read),
    cmocka_unit_test(test_sequence_english),
    cmocka_unit_test(test_sequence_stops_at_a_failure),
    cmocka_unit_test(test_unroutable),
    cmocka_unit_test(test_log_answers),
    cmocka_unit_test(test_fast_path_skips_the_model),
    cmocka_unit_test(test_without_registry),
};

REIN_TEST_MAIN(tests)
