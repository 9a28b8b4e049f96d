/*
 * Unit tests of the agent module's pieces that need no model: names, the JSON of each event,
 * the loop detector and its canonical hashes, history repair, and whole turns with the rules
 * provider under allocation failure (every allocation of a two-step turn fails in turn; the
 * turn must end normally, with every call answered, and leak nothing).
 */
#include "test.h"

#include "agent/agent_int.h"

static void test_names(void **state)
{
    enum rein_agent_mode m;
    enum rein_agent_verification v;

    (void)state;
    assert_true(rein_agent_mode_parse("SINGLE", &m));
    assert_int_equal(m, REIN_AGENT_MODE_SINGLE);
    assert_false(rein_agent_mode_parse("sometimes", &m));
    assert_string_equal(rein_agent_mode_name(REIN_AGENT_MODE_PROPOSE), "propose");
    assert_true(rein_agent_verification_parse("off", &v));
    assert_int_equal(v, REIN_AGENT_VERIFY_OFF);
    assert_string_equal(rein_agent_stop_name(REIN_AGENT_STOP_FINAL_ANSWER), "final_answer");
    assert_string_equal(rein_agent_stop_name(REIN_AGENT_STOP_PROVIDER_ERROR), "provider_error");
    assert_string_equal(rein_agent_stop_name(REIN_AGENT_STOP_MAX_TOOL_CALLS), "max_tool_calls");
    assert_string_equal(rein_agent_stop_name((enum rein_agent_stop)99), "unknown");
    assert_string_equal(rein_agent_state_name(REIN_AGENT_STATE_WAITING_APPROVAL),
                        "waiting_approval");
    assert_string_equal(rein_agent_event_type_name(REIN_AGENT_EV_APPROVAL_REQUIRED),
                        "approval_required");
}

/* The verifier's question, byte for byte (it goes upstream in every self-check). */
static void test_review_question(void **state)
{
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    json_t *args = json_pack("{s:s}", "text", "h\u00e9 \"x\"");
    char *q;

    (void)state;
    assert_non_null(reg);
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    q = rein_agent_review_question("say \"hi\"", rein_registry_get(reg, "echo"), args);
    assert_string_equal(q, "The user asked:\nsay \"hi\"\n\nThe assistant is about to call the tool "
                           "\"echo\" (Return the given text unchanged.) with these arguments:\n"
                           "{\"text\":\"h\u00e9 \\\"x\\\"\"}\n\nIs this call correct and what the "
                           "user asked for? Answer YES or NO on the first line, then give the "
                           "reason.");
    rein_free(q);
    q = rein_agent_review_question(NULL, rein_registry_get(reg, "echo"), NULL);
    assert_string_equal(q, "The user asked:\n\n\nThe assistant is about to call the tool "
                           "\"echo\" (Return the given text unchanged.) with these arguments:\n"
                           "{}\n\nIs this call correct and what the user asked for? Answer YES or "
                           "NO on the first line, then give the reason.");
    rein_free(q);
    json_decref(args);
    rein_registry_free(reg);
}

static void expect_event(const struct rein_agent_event *ev, const char *want)
{
    struct rein_buf b;
    json_t *j;

    rein_buf_init(&b, 0);
    assert_rein_ok(rein_agent_event_write(ev, &b), NULL);
    assert_string_equal(b.ptr, want);
    rein_buf_release(&b);
    j = rein_agent_event_json(ev);
    assert_non_null(j);
    json_decref(j);
}

static void test_event_json(void **state)
{
    struct rein_agent_event ev;
    static const char args[] = "{\"path\":\"a\"}";
    static const char res[] = "{\"ok\":true,\"output\":\"x\"}";

    (void)state;
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_STATUS;
    ev.seq = 1;
    ev.state = REIN_AGENT_STATE_THINKING;
    expect_event(&ev, "{\"type\":\"status\",\"seq\":1,\"state\":\"thinking\"}");
    ev.state = REIN_AGENT_STATE_EXECUTING;
    ev.tool = "echo";
    ev.call_id = "call_1";
    expect_event(&ev, "{\"type\":\"status\",\"seq\":1,\"state\":\"executing\",\"call_id\":"
                      "\"call_1\",\"tool\":\"echo\"}");

    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_TEXT_DELTA;
    ev.seq = 2;
    ev.text = "H\"i\n";
    ev.len = 4;
    expect_event(&ev, "{\"type\":\"text_delta\",\"seq\":2,\"text\":\"H\\\"i\\n\"}");

    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_TOOL_CALL;
    ev.seq = 3;
    ev.call_id = "call_1";
    ev.tool = "⚙";
    ev.json = args;
    ev.json_len = strlen(args);
    ev.iteration = 1;
    expect_event(&ev, "{\"type\":\"tool_call\",\"seq\":3,\"call_id\":\"call_1\",\"tool\":\"⚙\","
                      "\"arguments\":{\"path\":\"a\"},\"iteration\":1}");

    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_TOOL_RESULT;
    ev.seq = 4;
    ev.call_id = "call_1";
    ev.tool = "echo";
    ev.kind = "success";
    ev.ok = true;
    ev.latency_ms = 3;
    ev.json = res;
    ev.json_len = strlen(res);
    expect_event(&ev, "{\"type\":\"tool_result\",\"seq\":4,\"call_id\":\"call_1\",\"tool\":"
                      "\"echo\",\"status\":\"success\",\"ok\":true,\"latency_ms\":3,\"result\":"
                      "{\"ok\":true,\"output\":\"x\"}}");

    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_APPROVAL_REQUIRED;
    ev.seq = 5;
    ev.call_id = "call_2";
    ev.tool = "delete_file";
    ev.json = args;
    ev.json_len = strlen(args);
    ev.timeout_ms = 60000;
    expect_event(&ev, "{\"type\":\"approval_required\",\"seq\":5,\"call_id\":\"call_2\","
                      "\"tool\":\"delete_file\",\"arguments\":{\"path\":\"a\"},\"timeout_ms\":"
                      "60000}");

    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_VERIFICATION;
    ev.seq = 6;
    ev.call_id = "call_2";
    ev.tool = "delete_file";
    ev.kind = "self_check";
    ev.text = "not asked for";
    ev.len = 13;
    expect_event(&ev, "{\"type\":\"verification\",\"seq\":6,\"call_id\":\"call_2\",\"tool\":"
                      "\"delete_file\",\"kind\":\"self_check\",\"passed\":false,\"reason\":"
                      "\"not asked for\"}");

    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_FINAL;
    ev.seq = 7;
    ev.text = "done";
    ev.len = 4;
    ev.stop = REIN_AGENT_STOP_SUCCESS_CAP;
    ev.ok = true;
    expect_event(&ev, "{\"type\":\"final\",\"seq\":7,\"text\":\"done\",\"stop_reason\":"
                      "\"success_cap\",\"success\":true}");

    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_ERROR;
    ev.seq = 8;
    ev.kind = "retry";
    ev.text = "again";
    ev.len = 5;
    expect_event(&ev, "{\"type\":\"error\",\"seq\":8,\"kind\":\"retry\",\"message\":\"again\"}");
}

static json_t *parse(const char *s)
{
    json_t *j = json_loads(s, 0, NULL);
    assert_non_null(j);
    return j;
}

static void test_canonical_hash(void **state)
{
    json_t *a = parse("{\"a\":1,\"b\":[1,2],\"c\":{\"x\":true}}");
    json_t *b = parse("{\"c\":{\"x\":true},\"b\":[1,2.0],\"a\":1}");
    json_t *c = parse("{\"a\":1,\"b\":[2,1],\"c\":{\"x\":true}}");
    json_t *r1 = parse("{\"output\":\"x\",\"call_id\":\"call_1\",\"meta\":{\"latency_ms\":3}}");
    json_t *r2 = parse("{\"output\":\"x\",\"call_id\":\"call_2\",\"meta\":{\"latency_ms\":9}}");

    (void)state;
    assert_true(rein__json_hash(a, false) == rein__json_hash(b, false));
    assert_true(rein__json_hash(a, false) != rein__json_hash(c, false));
    assert_true(rein__json_hash(r1, true) == rein__json_hash(r2, true));
    assert_true(rein__json_hash(r1, false) != rein__json_hash(r2, false));
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(r1);
    json_decref(r2);
}

static enum rein__detect_action feed(struct rein__detector *d, const char *tool,
                                     enum rein_call_code code, uint64_t call, uint64_t result,
                                     char *msg)
{
    struct rein__detect_call c = {
        .tool = tool,
        .message = code ? "boom" : "",
        .code = code,
        .status = code == REIN_CALL_OK                 ? REIN_CALL_SUCCESS
                  : code == REIN_CALL_EXECUTION_FAILED ? REIN_CALL_ERROR
                                                       : REIN_CALL_INVALID,
        .call_sig = call,
        .result_sig = result,
    };
    return rein__detect_call(d, &c, msg, 700);
}

static void test_detector(void **state)
{
    struct rein__detector d;
    char msg[700];

    (void)state;
    /* Same error from the same tool: warn at 2, stall at 3; another tool in between resets. */
    rein__detect_init(&d);
    assert_int_equal(feed(&d, "read", REIN_CALL_EXECUTION_FAILED, 1, 10, msg), DETECT_NONE);
    assert_int_equal(feed(&d, "read", REIN_CALL_EXECUTION_FAILED, 2, 10, msg), DETECT_WARN);
    assert_non_null(strstr(msg, "second time read failed"));
    assert_int_equal(feed(&d, "other", REIN_CALL_OK, 3, 11, msg), DETECT_NONE);
    assert_int_equal(feed(&d, "read", REIN_CALL_EXECUTION_FAILED, 4, 10, msg), DETECT_NONE);
    assert_int_equal(feed(&d, "read", REIN_CALL_EXECUTION_FAILED, 5, 10, msg), DETECT_WARN);
    assert_int_equal(feed(&d, "read", REIN_CALL_EXECUTION_FAILED, 6, 10, msg), DETECT_STALL);
    assert_non_null(strstr(msg, "read failed 3 times in a row with the same error: boom"));
    rein__detect_release(&d);

    /* A run of different invalid calls: warning at 4, stall at 6. */
    rein__detect_init(&d);
    for (int i = 1; i <= 6; i++) {
        enum rein__detect_action a =
            feed(&d, i % 2 ? "a" : "b", REIN_CALL_INVALID_ARGUMENTS, 100 + i, 200 + i, msg);
        assert_int_equal(a, i == 4 ? DETECT_WARN : i == 6 ? DETECT_STALL : DETECT_NONE);
    }
    rein__detect_release(&d);

    /* Ping-pong between two replies. */
    rein__detect_init(&d);
    for (int i = 0; i < 4; i++) {
        enum rein__detect_action a;
        (void)feed(&d, "echo", REIN_CALL_OK, i % 2 ? 7 : 8, i % 2 ? 70 : 80, msg);
        a = rein__detect_reply(&d, msg, sizeof(msg));
        assert_int_equal(a, i == 2 ? DETECT_WARN : i == 3 ? DETECT_STALL : DETECT_NONE);
    }
    rein__detect_release(&d);

    /* Many distinct successful calls never trip anything. */
    rein__detect_init(&d);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(feed(&d, "echo", REIN_CALL_OK, (uint64_t)i, (uint64_t)i, msg),
                         DETECT_NONE);
        assert_int_equal(rein__detect_reply(&d, msg, sizeof(msg)), DETECT_NONE);
    }
    rein__detect_release(&d);
}

static void test_history_repair_leaves_good_histories_alone(void **state)
{
    rein_error err;
    size_t added = 9;
    json_t *msgs = parse("[{\"role\":\"user\",\"content\":\"hi\"},"
                         "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":["
                         " {\"id\":\"c1\",\"name\":\"echo\",\"arguments\":\"{}\"}]},"
                         "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"x\"},"
                         "{\"role\":\"assistant\",\"content\":\"done\"}]");
    rein_history *h = rein_history_from_json(msgs, &err);

    (void)state;
    assert_rein_ok(rein_agent_history_repair(h, NULL, &added, &err), &err);
    assert_int_equal(added, 0);
    assert_int_equal(rein_history_len(h), 4);
    assert_int_equal(rein_agent_history_repair(NULL, NULL, &added, &err), REIN_EINVAL);
    rein_history_free(h);
    json_decref(msgs);
}

/* Calls a dead turn had started may have run: "interrupted", never "not run"; a destructive
 * tool's answer says to check what it changed. A call that never started stays "not run". */
static void test_history_repair_says_started_calls_may_have_run(void **state)
{
    rein_error err;
    size_t added = 0;
    json_t *msgs = parse("[{\"role\":\"user\",\"content\":\"hi\"},"
                         "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":["
                         " {\"id\":\"c1\",\"name\":\"wipe\",\"arguments\":\"{}\"},"
                         " {\"id\":\"c2\",\"name\":\"echo\",\"arguments\":\"{}\"},"
                         " {\"id\":\"c3\",\"name\":\"echo\",\"arguments\":\"{}\"}]}]");
    rein_history *h = rein_history_from_json(msgs, &err);
    rein_registry *reg = rein_registry_new(&err);
    json_t *m = parse("{\"id\":\"wipe\",\"description\":\"deletes\",\"destructive\":true,"
                      "\"parameters\":{\"type\":\"object\"},\"runner\":{\"kind\":\"process\","
                      "\"command\":[\"true\"]}}");
    const char *ids[] = {"c1", "c2"};
    struct rein_agent_started started = {ids, 2, reg};
    const char *content;

    (void)state;
    assert_rein_ok(rein_skills_register_runners(reg, &err), &err);
    assert_rein_ok(rein_registry_add_manifest(reg, m, NULL, "test", &err), &err);
    assert_rein_ok(rein_agent_history_repair_started(h, NULL, &started, &added, &err), &err);
    assert_int_equal(added, 3);
    content = json_string_value(json_object_get(rein_history_get(h, 2), "content"));
    assert_non_null(strstr(content, "\"interrupted\""));
    assert_non_null(strstr(content, "may have run"));
    assert_non_null(strstr(content, "wipe is destructive"));
    content = json_string_value(json_object_get(rein_history_get(h, 3), "content"));
    assert_non_null(strstr(content, "may have run"));
    assert_null(strstr(content, "destructive"));
    content = json_string_value(json_object_get(rein_history_get(h, 4), "content"));
    assert_non_null(strstr(content, "\"cancelled\""));
    assert_non_null(strstr(content, "not run"));
    rein_history_free(h);
    rein_registry_free(reg);
    json_decref(m);
    json_decref(msgs);
}

/* ---- whole turns with the rules provider ---- */

struct rules_fx {
    rein_registry *reg;
    rein_provider *p;
    rein_agent *a;
    const char *message;
    struct rein_agent_turn_opts opts;
    size_t turns_ok;
};

static void rules_fx_start(struct rules_fx *f)
{
    rein_provider_config *cfg = rein_provider_config_new();
    rein_error err;

    f->reg = rein_registry_new(&err);
    assert_rein_ok(rein_skills_register_builtins(f->reg, NULL, &err), &err);
    assert_rein_ok(rein_provider_config_set_provider(cfg, "rules", &err), &err);
    f->p = rein_provider_new(cfg, &err);
    assert_non_null(f->p);
    rein_provider_config_free(cfg);
    f->a = rein_agent_new(f->p, f->reg, &err);
    assert_non_null(f->a);
}

static void rules_fx_stop(struct rules_fx *f)
{
    rein_agent_free(f->a);
    rein_provider_free(f->p);
    rein_registry_free(f->reg);
}

static long failing; /* the allocation made to fail, for messages */

/* Every tool call in h is followed by its result. */
static void assert_all_answered(const rein_history *h)
{
    for (size_t i = 0; i < rein_history_len(h); i++) {
        const json_t *calls = json_object_get(rein_history_get(h, i), "tool_calls"), *c;
        size_t k;
        json_array_foreach(calls, k, c)
        {
            const char *id = json_string_value(json_object_get(c, "id"));
            bool found = false;
            for (size_t j = i + 1; j < rein_history_len(h) && !found; j++) {
                const json_t *m = rein_history_get(h, j);
                const char *tid = json_string_value(json_object_get(m, "tool_call_id"));
                found = tid && strcmp(tid, id) == 0;
            }
            if (!found)
                fail_msg("call %s has no result (allocation %ld failed)", id, failing);
        }
    }
}

static void one_turn(void *arg)
{
    struct rules_fx *f = arg;
    rein_history *h = rein_history_new();
    rein_agent_result *r = NULL;
    json_t *j;
    rein_error err;

    if (!h)
        return;
    if (rein_agent_run(f->a, h, f->message, &f->opts, &r, &err) == REIN_OK) {
        assert_all_answered(h);
        j = rein_agent_result_json(r);
        if (j && rein_agent_result_success(r))
            f->turns_ok++;
        json_decref(j);
        rein_agent_result_free(r);
    } else {
        assert_true(err.code == REIN_ENOMEM || err.code == REIN_EINVAL);
    }
    rein_history_free(h);
}

static void torture(struct rules_fx *f)
{
    f->turns_ok = 0;
    one_turn(f);
    assert_int_equal(f->turns_ok, 1);
    /* test_alloc_torture(), with the failing allocation's number kept for messages. */
    test_alloc_install();
    test_alloc_fail_at(0);
    one_turn(f);
    long total = test_alloc_count();
    for (failing = 1; failing <= total; failing++) {
        test_alloc_fail_at(failing);
        one_turn(f);
    }
    test_alloc_fail_at(0);
    rein_set_allocator(NULL);
}

static void test_turn_under_allocation_failure(void **state)
{
    struct rules_fx f = {0};

    (void)state;
    rules_fx_start(&f);
    f.message = "echo hi, then calculate 1+2";
    torture(&f);
    /* Single mode: the success cap and the closing call without tools. */
    f.message = "echo once";
    f.opts.mode = REIN_AGENT_MODE_SINGLE;
    torture(&f);
    rules_fx_stop(&f);
}

static void test_run_rejects_bad_arguments(void **state)
{
    struct rules_fx f = {0};
    rein_history *h = rein_history_new();
    rein_agent_result *r = NULL;
    const char *tools[] = {"echo", "teleport"};
    struct rein_agent_turn_opts o = {.tools = tools, .tool_count = 2};
    rein_error err;

    (void)state;
    rules_fx_start(&f);
    assert_int_equal(rein_agent_run(f.a, h, "", NULL, &r, &err), REIN_EINVAL);
    assert_int_equal(rein_agent_run(f.a, NULL, "hi", NULL, &r, &err), REIN_EINVAL);
    assert_int_equal(rein_agent_run(f.a, h, "echo hi", &o, &r, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "teleport"));
    assert_null(r);
    /* Nothing was appended by the failed calls. */
    assert_int_equal(rein_history_len(h), 0);
    /* A restricted tool list: the rules provider only routes to the offered tools. */
    o.tool_count = 1;
    assert_rein_ok(rein_agent_run(f.a, h, "calculate 1+1", &o, &r, &err), &err);
    assert_int_equal(rein_agent_result_tool_call_count(r), 0);
    rein_agent_result_free(r);
    assert_rein_ok(rein_agent_run(f.a, h, "echo hi", &o, &r, &err), &err);
    assert_string_equal(rein_agent_result_text(r), "hi");
    rein_agent_result_free(r);
    rein_history_free(h);
    rules_fx_stop(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_names),
    cmocka_unit_test(test_review_question),
    cmocka_unit_test(test_event_json),
    cmocka_unit_test(test_canonical_hash),
    cmocka_unit_test(test_detector),
    cmocka_unit_test(test_history_repair_leaves_good_histories_alone),
    cmocka_unit_test(test_history_repair_says_started_calls_may_have_run),
    cmocka_unit_test(test_turn_under_allocation_failure),
    cmocka_unit_test(test_run_rejects_bad_arguments),
};

REIN_TEST_MAIN(tests)
