/*
 * Tracing end to end (docs/decisions/0029): a server in the test with the agent routes, the
 * scripted model server as the model, a process skill that reports its environment, and an
 * OTLP/HTTP receiver (tests/support/otlp_receiver.c) that decodes what rein exports. A turn
 * that arrives with a traceparent continues the caller's trace through the model requests and
 * the process skill, and its spans form the GenAI conventions' tree: invoke_agent, a chat span
 * per model call, an execute_tool span per call (a repaired name, an invalid call and an
 * unknown tool among them, then the re-ask). Message contents appear only with the capture
 * switch on.
 */
/* rein-test-timeout: 120 */
#include "agent_fixture.h"
#include "http_client.h"
#include "model_server.h"
#include "otlp_receiver.h"
#include "skill_http.h"
#include "test.h"

#include <rein/mcp.h>

#define CALLER_TRACE "4bf92f3577b34da6a3ce929d0e0e4736"
#define CALLER_SPAN  "00f067aa0ba902b7"

struct fx {
    char *dir;
    ms_server *ms;
    struct otlp_receiver *otlp;
    rein_provider *p;
    rein_registry *reg;
    rein_agent *a;
    rein_store *store;
    rein_agent_api *api;
    rein_server *srv;
    char base[64];
};

static struct fx *F;

/* endpoint NULL: the receiver's. */
static void start_to(bool capture, const char *endpoint)
{
    rein_error err;
    char url[1200], manifest[1024];

    F = calloc(1, sizeof(*F));
    F->dir = test_tmpdir();
    F->ms = ms_start(0, &err);
    if (!F->ms)
        fail_msg("model server: %s", err.msg);
    F->otlp = otlp_start();
    assert_non_null(F->otlp);
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint ? endpoint : otlp_url(F->otlp), 1);
    setenv("OTEL_BSP_SCHEDULE_DELAY", "20", 1);
    /* The receiver here decodes JSON; protobuf is decoded by tests/scripts/otlp_export.sh. */
    setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", 1);
    setenv("OTEL_SERVICE_NAME", "rein-test", 1);
    if (capture)
        setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true", 1);
    assert_rein_ok(rein_trace_setup(&err), &err);
    assert_true(rein_trace_enabled());
    snprintf(manifest, sizeof(manifest),
             "{\"id\": \"envecho\", \"description\": \"Shows its environment\","
             " \"parameters\": {\"type\": \"object\"},"
             " \"runner\": {\"kind\": \"process\", \"command\": [\"%s/skill_proc\", \"echo\"]}}",
             test_bin_dir());
    free(test_write_file(F->dir, "skills/envecho/manifest.json", manifest));
    F->p = test_ms_provider(ms_openai_url(F->ms));
    F->reg = test_agent_registry(F->dir);
    assert_non_null(rein_registry_get(F->reg, "envecho"));
    F->a = rein_agent_new(F->p, F->reg, &err);
    assert_non_null(F->a);
    rein_metrics_observe_agent(F->a, NULL); /* the registry GET /metrics renders */
    snprintf(url, sizeof(url), "sqlite:%s/rein.db", F->dir);
    assert_rein_ok(rein_store_open(url, NULL, &F->store, &err), &err);
    F->api = rein_agent_api_new(F->a, F->reg, F->store, NULL, &err);
    assert_non_null(F->api);
    F->srv = rein_server_new(&err);
    assert_non_null(F->srv);
    rein_server_set_port(F->srv, 0);
    rein_server_set_threads(F->srv, 2);
    assert_rein_ok(rein_server_add_agent_routes(F->srv, F->api, &err), &err);
    assert_rein_ok(rein_server_start(F->srv, &err), &err);
    snprintf(F->base, sizeof(F->base), "http://127.0.0.1:%d", rein_server_port(F->srv));
}

static void start(bool capture)
{
    start_to(capture, NULL);
}

static int teardown(void **state)
{
    (void)state;
    if (!F)
        return 0;
    rein_server_free(F->srv);
    rein_agent_api_free(F->api);
    rein_agent_free(F->a);
    rein_store_free(F->store);
    rein_registry_free(F->reg);
    rein_provider_free(F->p);
    rein_trace_shutdown(2000);
    otlp_stop(F->otlp);
    ms_stop(F->ms);
    test_rmtree(F->dir);
    free(F->dir);
    free(F);
    F = NULL;
    return 0;
}

static void chat(const char *body, const char *traceparent, struct th_resp *r)
{
    char url[128], header[128];
    const char *headers[] = {header, "tracestate: caller=t1", NULL};

    snprintf(url, sizeof(url), "%s/agent/chat", F->base);
    snprintf(header, sizeof(header), "traceparent: %s", traceparent ? traceparent : "");
    th_http("POST", url, body, traceparent ? headers : NULL, r);
    if (r->status != 200)
        fail_msg("POST /agent/chat: %ld %s", r->status, r->body);
}

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* The execute_tool span whose gen_ai.tool.call.id is id. */
static json_t *tool_span(json_t *spans, const char *id)
{
    json_t *s;
    size_t i;

    json_array_foreach(spans, i, s)
    {
        const char *cid = otlp_attr_str(s, "gen_ai.tool.call.id");
        if (cid && strcmp(cid, id) == 0)
            return s;
    }
    fail_msg("no execute_tool span for call %s", id);
    return NULL;
}

/* The first span named name whose parent is parent (a span), or NULL. */
static json_t *child_named(json_t *spans, json_t *parent, const char *name)
{
    json_t *s;
    size_t i;

    json_array_foreach(spans, i, s)
    {
        const char *p = str(s, "parentSpanId");
        if (strcmp(str(s, "name"), name) == 0 && p && strcmp(p, str(parent, "spanId")) == 0)
            return s;
    }
    return NULL;
}

static size_t count_named(json_t *spans, const char *name)
{
    json_t *s;
    size_t i, n = 0;

    json_array_foreach(spans, i, s) n += strcmp(str(s, "name"), name) == 0;
    return n;
}

static const char *event_str(json_t *ev, const char *key)
{
    return str(otlp_event_attr(ev, key), "stringValue");
}

/* A double attribute of an event; -1 when absent or of another type. */
static double event_double(json_t *ev, const char *key)
{
    json_t *v = json_object_get(otlp_event_attr(ev, key), "doubleValue");

    return json_is_number(v) ? json_number_value(v) : -1;
}

static const char turn_script[] =
    "[{\"tool_calls\": ["
    "  {\"id\": \"c1\", \"name\": \"Echo\", \"arguments\": \"{\\\"text\\\": \\\"hi\\\"}\"},"
    "  {\"id\": \"c2\", \"name\": \"envecho\", \"arguments\": \"{}\"}]},"
    " {\"tool_calls\": ["
    "  {\"id\": \"c3\", \"name\": \"echo\", \"arguments\": \"{\\\"txt\\\": \\\"hi\\\"}\"},"
    "  {\"id\": \"c4\", \"name\": \"no_such_tool\", \"arguments\": \"{}\"}]},"
    " {\"text\": \"Done: hi.\"}]";

/* The turn of the header comment: propagation, then the span tree. */
static void turn_spans_and_propagation(void **state)
{
    struct th_resp r;
    rein_error err;
    json_t *spans, *turn, *s, *env = NULL, *call;
    const char *turn_id;
    size_t i;

    (void)state;
    start(false);
    assert_rein_ok(ms_script(F->ms, turn_script, false, &err), &err);
    chat("{\"message\": \"echo hi\", \"mode\": \"auto\", \"verification\": \"off\"}",
         "00-" CALLER_TRACE "-" CALLER_SPAN "-01", &r);
    assert_string_equal(str(r.json, "trace_id"), CALLER_TRACE);
    json_array_foreach(json_object_get(r.json, "tool_calls"), i, call)
    {
        if (strcmp(str(call, "call_id"), "c2") == 0)
            env =
                json_object_get(json_object_get(json_object_get(call, "result"), "output"), "env");
    }
    assert_non_null(env);
    env = json_incref(env);
    th_resp_free(&r);

    /* 1 turn, 3 model calls, 4 tool calls. */
    assert_true(otlp_wait_spans(F->otlp, 8, 20000));
    spans = otlp_spans(F->otlp);
    assert_int_equal(json_array_size(spans), 8);
    turn = otlp_span_named(spans, "invoke_agent");
    assert_non_null(turn);
    turn_id = str(turn, "spanId");
    assert_string_equal(str(turn, "traceId"), CALLER_TRACE);
    assert_string_equal(str(turn, "parentSpanId"), CALLER_SPAN);
    assert_string_equal(otlp_attr_str(turn, "gen_ai.operation.name"), "invoke_agent");
    assert_string_equal(otlp_attr_str(turn, "rein.stop_reason"), "final_answer");
    assert_int_equal(otlp_attr_int(turn, "rein.model_calls"), 3);
    assert_int_equal(otlp_attr_int(turn, "rein.tool_calls"), 4); /* was 0: counted too late */
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(turn, "resource"), "service.name")),
        "rein-test");
    json_array_foreach(spans, i, s)
    {
        assert_string_equal(str(s, "traceId"), CALLER_TRACE);
        assert_string_equal(str(s, "traceState"), "caller=t1");
        if (s != turn)
            assert_string_equal(str(s, "parentSpanId"), turn_id);
        assert_null(otlp_attr_str(s, "gen_ai.input.messages")); /* capture is off */
        assert_null(otlp_attr_str(s, "gen_ai.tool.call.arguments"));
    }
    assert_int_equal(count_named(spans, "chat test-model"), 3);
    s = otlp_span_named(spans, "chat test-model");
    assert_string_equal(otlp_attr_str(s, "gen_ai.operation.name"), "chat");
    assert_string_equal(otlp_attr_str(s, "gen_ai.request.model"), "test-model");
    assert_non_null(otlp_attr_str(s, "gen_ai.provider.name"));
    assert_int_equal(json_integer_value(json_object_get(s, "kind")), 3); /* CLIENT */
    assert_true(otlp_attr_int(s, "gen_ai.usage.input_tokens") > 0);
    assert_true(otlp_attr_int(s, "gen_ai.usage.output_tokens") > 0);
    assert_true(json_array_size(json_object_get(
                    json_object_get(json_object_get(s, "attrs"), "gen_ai.response.finish_reasons"),
                    "values")) >= 1);
    assert_true(otlp_attr_int(turn, "gen_ai.usage.input_tokens") > 0);
    assert_true(otlp_attr_int(turn, "gen_ai.usage.output_tokens") > 0);

    /* A repaired name: the span names the tool that ran, the event what was sent. */
    s = tool_span(spans, "c1");
    assert_string_equal(str(s, "name"), "execute_tool echo");
    assert_string_equal(otlp_attr_str(s, "gen_ai.tool.name"), "echo");
    assert_string_equal(otlp_attr_str(s, "gen_ai.tool.type"), "function");
    assert_string_equal(otlp_attr_str(s, "rein.tool.sent_name"), "Echo");
    assert_string_equal(otlp_attr_str(s, "rein.call.status"), "success");
    json_t *ev = json_array_get(json_object_get(s, "events"), 0);
    assert_string_equal(str(ev, "name"), "rein.repair");
    assert_string_equal(event_str(ev, "rein.repair.from"), "Echo"); /* the name before... */
    assert_string_equal(event_str(ev, "rein.repair.to"), "echo");   /* ...and after */
    assert_non_null(event_str(ev, "rein.repair.kind"));
    /* The process skill ran under its execute_tool span: TRACEPARENT names it. */
    s = tool_span(spans, "c2");
    char want[64];
    snprintf(want, sizeof(want), "00-%s-%s-01", CALLER_TRACE, str(s, "spanId"));
    assert_string_equal(str(env, "TRACEPARENT"), want);
    /* The invalid call: preflight's errors counted, error.type the pipeline's code. */
    s = tool_span(spans, "c3");
    assert_string_equal(otlp_attr_str(s, "error.type"), "invalid_arguments");
    assert_true(otlp_attr_int(s, "rein.preflight.errors") >= 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "status"), "code")), 2);
    s = tool_span(spans, "c4");
    assert_string_equal(str(s, "name"), "execute_tool");
    assert_string_equal(otlp_attr_str(s, "error.type"), "unknown_tool");
    assert_string_equal(otlp_attr_str(s, "rein.tool.sent_name"), "no_such_tool");

    /* Every model request carried a traceparent of the caller's trace naming its chat span. */
    assert_int_equal(ms_request_count(F->ms), 3);
    for (i = 0; i < 3; i++) {
        const struct ms_request *q = ms_request(F->ms, i);
        const char *tp = json_string_value(json_object_get(q->headers, "traceparent"));
        bool named = false;
        size_t j;
        assert_non_null(tp);
        assert_memory_equal(tp, "00-" CALLER_TRACE "-", 36);
        json_array_foreach(spans, j, s)
        {
            if (strncmp(str(s, "name"), "chat", 4) == 0 &&
                strncmp(tp + 36, str(s, "spanId"), 16) == 0)
                named = true;
        }
        assert_true(named);
        assert_string_equal(tp + 52, "-01");
        /* The caller's tracestate goes along. */
        assert_string_equal(json_string_value(json_object_get(q->headers, "tracestate")),
                            "caller=t1");
    }
    json_decref(env);
    json_decref(spans);
}

/* A model call the provider refuses: its chat span is failed with the HTTP status as
 * error.type, and the turn's span with the stop reason. */
static void failed_model_call_spans(void **state)
{
    struct rein_agent_turn_opts o = {.verification = REIN_AGENT_VERIFY_OFF};
    rein_agent_result *res = NULL;
    rein_history *h = rein_history_new();
    rein_error err;
    json_t *spans, *s, *turn;

    (void)state;
    start(false);
    assert_rein_ok(ms_script(F->ms,
                             "[{\"status\": 400, \"error\": {\"type\": \"invalid_request_error\", "
                             "\"message\": \"bad request\"}}]",
                             false, &err),
                   &err);
    assert_rein_ok(rein_agent_run(F->a, h, "hello", &o, &res, &err), &err);
    assert_false(rein_agent_result_success(res));
    rein_agent_result_free(res);
    rein_history_free(h);
    rein_trace_shutdown(2000);
    spans = otlp_spans(F->otlp);
    s = otlp_span_named(spans, "chat test-model");
    assert_non_null(s);
    assert_string_equal(otlp_attr_str(s, "error.type"), "400");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "status"), "code")), 2);
    turn = otlp_span_named(spans, "invoke_agent");
    assert_non_null(turn);
    assert_string_equal(otlp_attr_str(turn, "error.type"), otlp_attr_str(turn, "rein.stop_reason"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(turn, "status"), "code")),
                     2);
    json_decref(spans);
}

/* Without a caller's trace the turn's own trace id is the W3C one everywhere. */
static void own_trace_without_traceparent(void **state)
{
    struct th_resp r;
    rein_error err;
    json_t *spans, *call;
    const char *tp;
    char trace[REIN_TRACE_ID_LEN + 1];

    (void)state;
    start(false);
    assert_rein_ok(ms_script(F->ms,
                             "[{\"tool_calls\": [{\"id\": \"e1\", \"name\": \"envecho\", "
                             "\"arguments\": \"{}\"}]}, {\"text\": \"ok\"}]",
                             false, &err),
                   &err);
    chat("{\"message\": \"env\", \"verification\": \"off\"}", NULL, &r);
    snprintf(trace, sizeof(trace), "%s", str(r.json, "trace_id"));
    call = json_array_get(json_object_get(r.json, "tool_calls"), 0);
    tp = str(json_object_get(json_object_get(json_object_get(call, "result"), "output"), "env"),
             "TRACEPARENT");
    assert_non_null(tp);
    assert_memory_equal(tp + 3, trace, 32);
    th_resp_free(&r);
    assert_true(otlp_wait_spans(F->otlp, 4, 20000));
    spans = otlp_spans(F->otlp);
    assert_null(json_object_get(otlp_span_named(spans, "invoke_agent"), "parentSpanId"));
    assert_string_equal(str(otlp_span_named(spans, "invoke_agent"), "traceId"), trace);
    json_decref(spans);
}

/* The claims stage on the turn's span: an answer claiming a call nobody made is counted in
 * rein.claims.refuted; with verification force it goes back once (rein.claims.reasked) and the
 * corrected answer has none. */
static void claims_on_the_turn_span(void **state)
{
    struct th_resp r;
    rein_error err;
    json_t *spans, *turn;
    size_t i;

    (void)state;
    start(false);
    assert_rein_ok(ms_script(F->ms,
                             "[{\"text\": \"2 + 2 is 4. I saved the result to result.txt.\"}]",
                             false, &err),
                   &err);
    chat("{\"message\": \"2+2?\", \"verification\": \"auto\"}", NULL, &r);
    th_resp_free(&r);
    assert_rein_ok(ms_script(F->ms,
                             "[{\"text\": \"2 + 2 is 4. I saved the result to result.txt.\"},"
                             " {\"match\": {\"body_contains\": \"no call shows it\"}, \"text\": "
                             "\"2 + 2 is 4; I did not save it anywhere.\"}]",
                             false, &err),
                   &err);
    chat("{\"message\": \"2+2?\", \"verification\": \"force\"}", NULL, &r);
    th_resp_free(&r);
    rein_trace_shutdown(2000);
    spans = otlp_spans(F->otlp);
    assert_int_equal(count_named(spans, "invoke_agent"), 2);
    json_array_foreach(spans, i, turn)
    {
        if (strcmp(str(turn, "name"), "invoke_agent") != 0)
            continue;
        if (otlp_attr_int(turn, "rein.model_calls") == 1) { /* auto: reported only */
            assert_int_equal(otlp_attr_int(turn, "rein.claims.refuted"), 1);
            assert_null(json_object_get(json_object_get(turn, "attrs"), "rein.claims.reasked"));
        } else { /* force: sent back, corrected */
            assert_int_equal(otlp_attr_int(turn, "rein.model_calls"), 2);
            assert_int_equal(otlp_attr_int(turn, "rein.claims.refuted"), 0);
            assert_true(json_is_true(
                json_object_get(json_object_get(turn, "attrs"), "rein.claims.reasked")));
        }
    }
    json_decref(spans);
}

/* OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: messages and tool arguments and
 * results appear on the spans. */
static void content_capture(void **state)
{
    struct th_resp r;
    rein_error err;
    json_t *spans, *s;

    (void)state;
    start(true);
    assert_true(rein_trace_capture_content());
    assert_rein_ok(ms_script(F->ms,
                             "[{\"tool_calls\": [{\"id\": \"k1\", \"name\": \"echo\", "
                             "\"arguments\": \"{\\\"text\\\": \\\"secret-word\\\"}\"}]},"
                             " {\"text\": \"It said secret-word.\"}]",
                             false, &err),
                   &err);
    chat("{\"message\": \"echo the secret-word\", \"verification\": \"off\"}", NULL, &r);
    th_resp_free(&r);
    assert_true(otlp_wait_spans(F->otlp, 4, 20000));
    spans = otlp_spans(F->otlp);
    s = otlp_span_named(spans, "chat test-model");
    assert_non_null(strstr(otlp_attr_str(s, "gen_ai.input.messages"), "echo the secret-word"));
    assert_non_null(otlp_attr_str(s, "gen_ai.output.messages"));
    s = tool_span(spans, "k1");
    assert_non_null(strstr(otlp_attr_str(s, "gen_ai.tool.call.arguments"), "secret-word"));
    assert_non_null(strstr(otlp_attr_str(s, "gen_ai.tool.call.result"), "secret-word"));
    json_decref(spans);
}

/* The collector is down: turns answer as before, the queue stays within its size, and the
 * lost spans are counted in /metrics. */
static void receiver_down(void **state)
{
    char dead[64], url[128];
    struct th_resp r;
    rein_error err;
    struct rein_trace_stats st;

    (void)state;
    snprintf(dead, sizeof(dead), "http://127.0.0.1:%d", test_free_port());
    setenv("OTEL_BSP_MAX_QUEUE_SIZE", "4", 1);
    start_to(false, dead);
    for (int i = 0; i < 5; i++) {
        assert_rein_ok(
            ms_script(F->ms,
                      "[{\"tool_calls\": [{\"id\": \"d1\", \"name\": \"echo\", "
                      "\"arguments\": \"{\\\"text\\\": \\\"x\\\"}\"}]}, {\"text\": \"ok\"}]",
                      false, &err),
            &err);
        chat("{\"message\": \"echo x\", \"verification\": \"off\"}", NULL, &r);
        assert_true(json_is_true(json_object_get(r.json, "success")));
        th_resp_free(&r);
        rein_trace_stats(&st);
        assert_true(st.queued <= 4);
    }
    rein_trace_stats(&st);
    assert_int_equal(st.ended, 5 * 4); /* a turn, two model calls, one tool call each */
    assert_true(st.dropped >= 5 * 4 - 8);
    snprintf(url, sizeof(url), "%s/metrics", F->base);
    th_get(url, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "rein_trace_spans_dropped_total "));
    /* The GenAI client metrics: two model requests per turn, input and output tokens each. */
    assert_non_null(strstr(r.body, "gen_ai_client_operation_duration_seconds_count{"
                                   "gen_ai_operation_name=\"chat\",gen_ai_provider_name="));
    assert_non_null(strstr(r.body, "gen_ai_token_type=\"input\"} 10\n"));
    assert_non_null(strstr(r.body, "gen_ai_token_type=\"output\"} 10\n"));
    /* With the model that answered, as the reply named it (the scripted server echoes it). */
    assert_non_null(strstr(r.body, "gen_ai_request_model=\"test-model\",gen_ai_response_model="
                                   "\"test-model\",gen_ai_token_type=\"input\"} 10\n"));
    assert_null(strstr(r.body, "rein_trace_spans_dropped_total 0\n"));
    th_resp_free(&r);
    assert_int_equal(otlp_requests(F->otlp), 0);
}

/* Runs a plan for goal (the model's script already set; steps unverified), which must
 * succeed. */
static void run_plan(const char *goal)
{
    struct rein_plan_opts o = {0};
    rein_plan_result *res = NULL;
    rein_planner *pl;
    rein_error err;

    pl = rein_planner_new(F->p, F->reg, &err);
    assert_non_null(pl);
    o.step.verification = REIN_AGENT_VERIFY_OFF;
    assert_rein_ok(rein_planner_run(pl, goal, &o, &res, &err), &err);
    if (!rein_plan_result_success(res))
        fail_msg("plan: %s %s", rein_plan_result_stop_reason(res), rein_plan_result_detail(res));
    rein_plan_result_free(res);
    rein_planner_free(pl);
}

/* A plan: one rein.plan span, a rein.plan.step span per step, the step's turn inside it, the
 * planner's and the aggregation's model calls in the plan too. */
static void plan_spans(void **state)
{
    rein_error err;
    json_t *spans, *plan, *step, *turn, *tool, *s;
    size_t i;

    (void)state;
    start(false);
    assert_rein_ok(
        ms_script(F->ms,
                  "[{\"match\": {\"tools_include\": \"create_plan\"}, \"tool_calls\": [{\"id\": "
                  "\"p1\", \"name\": \"create_plan\", \"arguments\": \"{\\\"title\\\": "
                  "\\\"Greet\\\", \\\"steps\\\": [\\\"Echo hi with the echo tool\\\"]}\"}]},"
                  " {\"match\": {\"body_contains\": \"Write the answer to the request\"}, "
                  "\"text\": \"It said hi.\"},"
                  " {\"match\": {\"body_contains\": \"Echo hi with the echo tool\", "
                  "\"last_role\": \"user\"}, \"tool_calls\": [{\"id\": \"s1\", \"name\": "
                  "\"echo\", \"arguments\": \"{\\\"text\\\": \\\"hi\\\"}\"}]},"
                  " {\"match\": {\"body_contains\": \"Echo hi with the echo tool\", "
                  "\"last_role\": \"tool\"}, \"text\": \"I called echo; it returned hi.\"}]",
                  false, &err),
        &err);
    run_plan("Say hi through echo");
    /* plan, step, turn, tool, and at least the planner's, the step's two and the answer's
     * model calls */
    assert_true(otlp_wait_spans(F->otlp, 8, 20000));
    rein_trace_shutdown(2000); /* everything is sent */
    spans = otlp_spans(F->otlp);
    plan = otlp_span_named(spans, "rein.plan");
    assert_non_null(plan);
    step = child_named(spans, plan, "rein.plan.step");
    assert_non_null(step);
    turn = child_named(spans, step, "invoke_agent"); /* the step's turn, not the planner's */
    assert_non_null(turn);
    tool = child_named(spans, turn, "execute_tool echo");
    assert_non_null(tool);
    assert_non_null(child_named(spans, plan, "invoke_agent")); /* the planner's */
    assert_null(json_object_get(plan, "parentSpanId"));
    assert_string_equal(otlp_attr_str(plan, "rein.plan.stop_reason"), "completed");
    assert_int_equal(otlp_attr_int(plan, "rein.plan.steps"), 1);
    assert_string_equal(str(step, "parentSpanId"), str(plan, "spanId"));
    assert_int_equal(otlp_attr_int(step, "rein.plan.step.index"), 0);
    assert_string_equal(otlp_attr_str(step, "rein.plan.step.status"), "completed");
    json_array_foreach(spans, i, s)
    {
        assert_string_equal(str(s, "traceId"), str(plan, "traceId"));
        if (s != plan)
            assert_non_null(str(s, "parentSpanId"));
    }
    json_decref(spans);
}

/* A step whose answer claims a call it never made fails its check; the replanner rewrites it:
 * a rein.plan.replan span (the reason, the action) under the plan, and a second attempt's
 * rein.plan.step span. */
static void replan_spans(void **state)
{
    rein_error err;
    json_t *spans, *plan, *replan, *s;
    size_t i, steps = 0;

    (void)state;
    start(false);
    assert_rein_ok(
        ms_script(F->ms,
                  "[{\"match\": {\"tools_include\": \"create_plan\"}, \"tool_calls\": [{\"id\": "
                  "\"p1\", \"name\": \"create_plan\", \"arguments\": \"{\\\"title\\\": "
                  "\\\"Greet\\\", \\\"steps\\\": [\\\"Say hi through the echo tool\\\"]}\"}]},"
                  " {\"match\": {\"tools_include\": \"replan\"}, \"tool_calls\": [{\"id\": \"r1\", "
                  "\"name\": \"replan\", \"arguments\": \"{\\\"action\\\": \\\"rewrite\\\", "
                  "\\\"new_description\\\": \\\"Call echo with text hi\\\"}\"}]},"
                  " {\"match\": {\"body_contains\": \"Write the answer to the request\"}, "
                  "\"text\": \"It said hi.\"},"
                  " {\"match\": {\"body_contains\": \"Call echo with text hi\", "
                  "\"last_role\": \"user\"}, \"tool_calls\": [{\"id\": \"s1\", \"name\": "
                  "\"echo\", \"arguments\": \"{\\\"text\\\": \\\"hi\\\"}\"}]},"
                  " {\"match\": {\"body_contains\": \"Call echo with text hi\", "
                  "\"last_role\": \"tool\"}, \"text\": \"I called echo; it returned hi.\"},"
                  " {\"match\": {\"body_contains\": \"Say hi through the echo tool\", "
                  "\"last_role\": \"user\"}, \"text\": \"I called echo with write_file.\"}]",
                  false, &err),
        &err);
    run_plan("Say hi");
    rein_trace_shutdown(2000); /* everything is sent */
    spans = otlp_spans(F->otlp);
    plan = otlp_span_named(spans, "rein.plan");
    assert_non_null(plan);
    replan = otlp_span_named(spans, "rein.plan.replan");
    assert_non_null(replan);
    assert_string_equal(str(replan, "traceId"), str(plan, "traceId"));
    assert_non_null(otlp_attr_str(replan, "rein.plan.replan.reason"));
    assert_string_equal(otlp_attr_str(replan, "rein.plan.replan.action"), "rewrite");
    json_array_foreach(spans, i, s)
    {
        if (strcmp(str(s, "name"), "rein.plan.step") == 0) {
            steps++;
            assert_string_equal(str(s, "parentSpanId"), str(plan, "spanId"));
        }
    }
    assert_int_equal(steps, 2); /* the failed attempt and the rewritten one */
    json_decref(spans);
}

/* rein loop: an iteration is a span holding the agent's turn and the protocols' run. */
static void loop_iteration_spans(void **state)
{
    const char *until[] = {"TEST", NULL};
    struct rein_agent_turn_opts turn_opts = {.verification = REIN_AGENT_VERIFY_OFF};
    struct rein_loop_opts o = {0};
    rein_verify_config *protocols;
    rein_loop_result *res = NULL;
    rein_error err;
    char *proj;
    json_t *spans, *it, *turn, *verify;

    (void)state;
    start(false);
    proj = test_tmpdir();
    free(test_write_file(
        proj, "rein-verify.yaml",
        "protocols:\n  TEST:\n    priority: P0\n    steps: [{command: \"true\"}]\n"));
    test_sh(proj, "git init -q . && git add -A && "
                  "git -c user.name=t -c user.email=t@example.com commit -qm init");
    protocols = rein_verify_config_find(proj, &err);
    if (!protocols)
        fail_msg("protocols: %s", err.msg);
    assert_rein_ok(ms_add_text(F->ms, "Nothing needed changing; the tests pass."), NULL);
    o.cwd = proj;
    o.protocols = protocols;
    o.until = until;
    o.turn = &turn_opts;
    assert_rein_ok(rein_loop_run(F->a, "Make the tests pass.", &o, &res, &err), &err);
    rein_loop_result_free(res);
    rein_verify_config_free(protocols);
    rein_trace_shutdown(2000);
    spans = otlp_spans(F->otlp);
    it = otlp_span_named(spans, "rein.loop.iteration");
    turn = otlp_span_named(spans, "invoke_agent");
    verify = otlp_span_named(spans, "rein.verify");
    assert_non_null(it);
    assert_non_null(turn);
    assert_non_null(verify);
    assert_int_equal(otlp_attr_int(it, "rein.loop.iteration"), 1);
    assert_string_equal(otlp_attr_str(it, "rein.verify.verdict"), "SUCCESS");
    assert_string_equal(str(turn, "parentSpanId"), str(it, "spanId"));
    assert_string_equal(str(verify, "parentSpanId"), str(it, "spanId"));
    assert_string_equal(str(turn, "traceId"), str(it, "traceId"));
    json_decref(spans);
    test_rmtree(proj);
    free(proj);
}

/* A span per verification protocol, children of rein.verify also when a group runs in
 * parallel on the pool's threads; a failed protocol's span is failed with its status. */
static void verify_protocol_spans(void **state)
{
    struct rein_verify_opts o = {0};
    rein_verify_config *cfg;
    rein_verify_report *rep = NULL;
    rein_error err;
    struct rein_span outer;
    char *proj;
    json_t *spans, *verify, *s;
    size_t i, n = 0;
    bool seen[3] = {false, false, false};

    (void)state;
    start(false);
    proj = test_tmpdir();
    free(test_write_file(proj, "rein-verify.yaml",
                         "parallel: true\nfast_fail: false\nprotocols:\n"
                         "  BUILD: {priority: P0, group: 1, steps: [{command: \"true\"}]}\n"
                         "  TEST: {priority: P1, group: 2, steps: [{command: \"true\"}]}\n"
                         "  STYLE: {priority: P2, group: 2, steps: [{command: \"false\"}]}\n"));
    cfg = rein_verify_config_find(proj, &err);
    if (!cfg)
        fail_msg("protocols: %s", err.msg);
    o.cwd = proj;
    o.mode = REIN_VERIFY_MODE_FULL;
    rein_span_start(&outer, "outer", REIN_SPAN_INTERNAL, NULL);
    assert_rein_ok(rein_verify_run(cfg, &o, &rep, &err), &err);
    rein_span_end(&outer);
    rein_verify_report_free(rep);
    rein_verify_config_free(cfg);
    rein_trace_shutdown(2000);
    spans = otlp_spans(F->otlp);
    verify = otlp_span_named(spans, "rein.verify");
    assert_non_null(verify);
    assert_string_equal(str(verify, "parentSpanId"), outer.ctx.span_id);
    json_array_foreach(spans, i, s)
    {
        const char *name = str(s, "name"), *proto;
        if (strcmp(name, "rein.verify.protocol") != 0)
            continue;
        n++;
        proto = otlp_attr_str(s, "rein.verify.protocol");
        assert_string_equal(str(s, "parentSpanId"), str(verify, "spanId"));
        assert_string_equal(str(s, "traceId"), outer.ctx.trace_id);
        long long code = json_integer_value(json_object_get(json_object_get(s, "status"), "code"));
        if (strcmp(proto, "STYLE") == 0) {
            seen[2] = true;
            assert_string_equal(otlp_attr_str(s, "rein.verify.status"), "failed");
            assert_string_equal(otlp_attr_str(s, "error.type"), "failed");
            assert_int_equal(code, 2);
        } else {
            seen[strcmp(proto, "BUILD") == 0 ? 0 : 1] = true;
            assert_string_equal(otlp_attr_str(s, "rein.verify.status"), "passed");
            assert_int_not_equal(code, 2);
        }
    }
    assert_int_equal(n, 3);
    assert_true(seen[0] && seen[1] && seen[2]);
    json_decref(spans);
    test_rmtree(proj);
    free(proj);
}

/* One call through rein_call_run in the caller's trace; its output (borrowed from *res). */
static const json_t *run_call(const char *tool, const char *args, rein_call_result **res)
{
    struct rein_call_input in = {
        .name = tool, .args_text = args, .args_len = strlen(args), .trace_id = CALLER_TRACE};

    assert_rein_ok(rein_call_run(F->reg, &in, NULL, res, NULL), NULL);
    if (!rein_call_result_ok(*res))
        fail_msg("%s: %s", tool, rein_call_result_message(*res));
    return rein_call_result_output(*res);
}

/* The execute_tool span of tool (the first), or fails. */
static json_t *tool_span_named(json_t *spans, const char *tool, const char *service)
{
    json_t *s;
    size_t i;

    json_array_foreach(spans, i, s)
    {
        const char *svc = str(json_object_get(s, "resource"), "service.name");
        const char *name = otlp_attr_str(s, "gen_ai.tool.name");
        if (name && strcmp(name, tool) == 0 && svc && strcmp(svc, service) == 0)
            return s;
    }
    fail_msg("no execute_tool span for %s from %s", tool, service);
    return NULL;
}

/*
 * The caller's context goes out with every kind of call and comes in over MCP: an HTTP skill
 * gets traceparent and tracestate naming its execute_tool span, an MCP server (the scripted
 * one) gets them in params._meta, and rein serving MCP (a real `rein mcp serve` child that
 * exports to the same receiver) continues the trace: its execute_tool span is a child of the
 * calling one, and the process skill it runs gets TRACEPARENT naming that span.
 */
static void propagation_to_skills_and_mcp(void **state)
{
    struct skill_http *web = skill_http_start();
    struct rein_trace_context caller;
    struct rein_trace_scope scope;
    rein_mcp_clients *set = rein_mcp_clients_new();
    rein_call_result *res[3];
    rein_error err;
    char manifest[512], *config = NULL, want[64];
    json_t *m, *spans, *s, *child;
    const json_t *out[3];

    (void)state;
    assert_non_null(web);
    assert_non_null(set);
    start(false);
    snprintf(manifest, sizeof(manifest),
             "{\"id\": \"webhdr\", \"description\": \"Shows its headers\","
             " \"parameters\": {\"type\": \"object\"},"
             " \"runner\": {\"kind\": \"http\", \"url\": \"http://127.0.0.1:%d/headers\"}}",
             skill_http_port(web));
    m = json_loads(manifest, 0, NULL);
    assert_rein_ok(rein_registry_add_manifest(F->reg, m, NULL, NULL, &err), &err);
    json_decref(m);
    assert_true(
        asprintf(&config,
                 "{\"mcpServers\": {\"fake\": {\"command\": \"%s/mcp_fake_server\", \"args\": "
                 "[\"ok\", \"meta\"]}, \"self\": {\"command\": \"%s\", \"args\": [\"mcp\", "
                 "\"serve\", \"--skills\", \"%s/skills\"], \"env\": {\"REIN_LOG\": \"error\", "
                 "\"OTEL_EXPORTER_OTLP_ENDPOINT\": \"%s\", \"OTEL_EXPORTER_OTLP_PROTOCOL\": "
                 "\"http/json\", \"OTEL_BSP_SCHEDULE_DELAY\": \"20\", \"OTEL_SERVICE_NAME\": "
                 "\"rein-child\"}}}}",
                 test_bin_dir(), test_rein_bin(), F->dir, otlp_url(F->otlp)) > 0);
    m = json_loads(config, 0, NULL);
    free(config);
    assert_non_null(m);
    assert_rein_ok(rein_mcp_clients_add_config(set, m, NULL, &err), &err);
    json_decref(m);
    assert_int_equal(rein_mcp_clients_connect(set, 0), 2);
    assert_rein_ok(rein_mcp_clients_register(set, F->reg, &err), &err);

    assert_rein_ok(rein_trace_context_parse("00-" CALLER_TRACE "-" CALLER_SPAN "-01", "vendor=v1",
                                            &caller, &err),
                   &err);
    rein_trace_scope_enter(&scope, &caller);
    out[0] = run_call("webhdr", "{}", &res[0]);
    out[1] =
        json_object_get(run_call("fake__meta", "{\"x\": \"a\"}", &res[1]), "structuredContent");
    out[2] = json_object_get(run_call("self__envecho", "{}", &res[2]), "structuredContent");
    rein_trace_scope_leave(&scope);
    rein_mcp_clients_free(set); /* the child exits, having sent its span */
    skill_http_stop(web);

    /* Ours: three execute_tool spans; the child's: one. */
    assert_true(otlp_wait_spans(F->otlp, 4, 20000));
    rein_trace_shutdown(2000);
    spans = otlp_spans(F->otlp);
    assert_int_equal(json_array_size(spans), 4);

    s = tool_span_named(spans, "webhdr", "rein-test");
    assert_string_equal(str(s, "parentSpanId"), CALLER_SPAN);
    snprintf(want, sizeof(want), "00-%s-%s-01", CALLER_TRACE, str(s, "spanId"));
    assert_string_equal(str(out[0], "traceparent"), want);
    assert_string_equal(str(out[0], "tracestate"), "vendor=v1");

    s = tool_span_named(spans, "fake__meta", "rein-test");
    assert_string_equal(otlp_attr_str(s, "gen_ai.tool.type"), "extension");
    snprintf(want, sizeof(want), "00-%s-%s-01", CALLER_TRACE, str(s, "spanId"));
    assert_string_equal(str(json_object_get(out[1], "_meta"), "traceparent"), want);
    assert_string_equal(str(json_object_get(out[1], "_meta"), "tracestate"), "vendor=v1");

    /* rein serving MCP continued the trace under the calling span... */
    s = tool_span_named(spans, "self__envecho", "rein-test");
    child = tool_span_named(spans, "envecho", "rein-child");
    assert_string_equal(str(child, "traceId"), CALLER_TRACE);
    assert_string_equal(str(child, "parentSpanId"), str(s, "spanId"));
    assert_string_equal(str(child, "traceState"), "vendor=v1");
    /* ...and its process skill ran under the child's span. */
    snprintf(want, sizeof(want), "00-%s-%s-01", CALLER_TRACE, str(child, "spanId"));
    assert_string_equal(
        str(json_object_get(json_object_get(out[2], "output"), "env"), "TRACEPARENT"), want);
    for (int i = 0; i < 3; i++)
        rein_call_result_free(res[i]);
    json_decref(spans);
}

/* Self-verification on the execute_tool span (verification "force"): the verifier's YES lets
 * one call run, its NO denies the other; each span has a rein.self_check event with the
 * verdict, the verdict's code, who judged and the wait, and the verifier's model call is a
 * chat span under it. The verifier's words stay off the span unless content is captured. */
static void self_check_events(void **state)
{
    struct th_resp r;
    rein_error err;
    json_t *spans, *s, *ev, *judged;

    (void)state;
    start(false);
    assert_rein_ok(
        ms_script(F->ms,
                  "[{\"match\": {\"body_contains\": \"You review one tool call\","
                  "  \"last_contains\": \"fine-word\"}, \"text\": \"YES\\nIt is what was asked.\"},"
                  " {\"match\": {\"body_contains\": \"You review one tool call\","
                  "  \"last_contains\": \"bad-word\"}, \"text\": \"NO\\nNobody asked for that.\"},"
                  " {\"tool_calls\": ["
                  "  {\"id\": \"v1\", \"name\": \"echo\", \"arguments\": \"{\\\"text\\\": "
                  "\\\"fine-word\\\"}\"},"
                  "  {\"id\": \"v2\", \"name\": \"echo\", \"arguments\": \"{\\\"text\\\": "
                  "\\\"bad-word\\\"}\"}]},"
                  " {\"text\": \"Echoed fine-word.\"}]",
                  false, &err),
        &err);
    chat("{\"message\": \"echo the word\", \"verification\": \"force\"}", NULL, &r);
    th_resp_free(&r);
    /* 1 turn, 2 model calls, 2 verifier calls, 2 tool calls. */
    assert_true(otlp_wait_spans(F->otlp, 7, 20000));
    rein_trace_shutdown(2000);
    spans = otlp_spans(F->otlp);
    assert_int_equal(json_array_size(spans), 7);

    s = tool_span(spans, "v1");
    assert_string_equal(otlp_attr_str(s, "rein.call.status"), "success");
    ev = otlp_event_named(s, "rein.self_check");
    assert_non_null(ev);
    assert_string_equal(event_str(ev, "rein.self_check.verdict"), "passed");
    assert_string_equal(event_str(ev, "rein.self_check.code"), "said");
    assert_string_equal(event_str(ev, "rein.self_check.judge"), "model");
    assert_true(event_double(ev, "rein.self_check.wait_ms") >= 0);
    assert_null(otlp_event_attr(ev, "rein.self_check.reason")); /* capture is off */
    assert_null(otlp_event_named(s, "rein.approval"));          /* echo is not destructive */
    /* The whole policy step's wait, the self-check in it. */
    assert_true(
        json_is_number(json_object_get(json_object_get(s, "attrs"), "rein.policy.wait_ms")));
    judged = child_named(spans, s, "chat test-model"); /* the verifier's call */
    assert_non_null(judged);

    s = tool_span(spans, "v2");
    assert_string_equal(otlp_attr_str(s, "error.type"), "denied");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "status"), "code")), 2);
    ev = otlp_event_named(s, "rein.self_check");
    assert_non_null(ev);
    assert_string_equal(event_str(ev, "rein.self_check.verdict"), "rejected");
    assert_string_equal(event_str(ev, "rein.self_check.code"), "said");
    assert_string_equal(event_str(ev, "rein.self_check.judge"), "model");
    assert_true(event_double(ev, "rein.self_check.wait_ms") >= 0);
    assert_non_null(child_named(spans, s, "chat test-model"));
    json_decref(spans);
}

static rein_err approve_all(void *ud, const struct rein_agent_approval *req, bool *approved,
                            rein_error *err)
{
    (void)ud;
    (void)req;
    (void)err;
    *approved = true;
    return REIN_OK;
}

/* Verification "auto" with a model that states its confidence: a confident call runs
 * unchecked (a "skipped" self-check, judged by rein's rule), a destructive one is checked by
 * the verifier and then approved by a person (rein.approval with the wait); with content
 * capture on the verifier's words are on the event. */
static void skipped_self_check_and_approval(void **state)
{
    struct rein_agent_turn_opts o = {
        .verification = REIN_AGENT_VERIFY_AUTO,
        .approve = approve_all,
    };
    rein_provider_config *cfg = rein_provider_config_new();
    rein_agent_result *res = NULL;
    rein_history *h = rein_history_new();
    rein_provider *p;
    rein_agent *a;
    rein_error err;
    json_t *spans, *s, *ev;

    (void)state;
    start(true);
    assert_non_null(cfg);
    assert_rein_ok(rein_provider_config_set(cfg, "provider", "openai-compatible", &err), &err);
    assert_rein_ok(rein_provider_config_set_base_url(cfg, ms_openai_url(F->ms)), NULL);
    assert_rein_ok(rein_provider_config_set_model(cfg, "gpt-4o"), NULL); /* states confidence */
    p = rein_provider_new(cfg, &err);
    rein_provider_config_free(cfg);
    assert_non_null(p);
    a = rein_agent_new(p, F->reg, &err);
    assert_non_null(a);
    assert_rein_ok(
        ms_script(F->ms,
                  "[{\"match\": {\"body_contains\": \"Answer YES or NO\"}, \"times\": 0,"
                  "  \"text\": \"YES\\nThe user asked to wipe it.\"},"
                  " {\"text\": \"confidence: 0.95\", \"tool_calls\": [{\"id\": \"k1\", \"name\": "
                  "\"echo\", \"arguments\": \"{\\\"text\\\": \\\"hi\\\"}\"}]},"
                  " {\"text\": \"confidence: 0.95\", \"tool_calls\": [{\"id\": \"w1\", \"name\": "
                  "\"wipe\", \"arguments\": \"{\\\"path\\\": \\\"a.txt\\\"}\"}]},"
                  " {\"text\": \"Echoed hi and wiped a.txt.\"}]",
                  false, &err),
        &err);
    assert_rein_ok(rein_agent_run(a, h, "echo hi, then wipe a.txt", &o, &res, &err), &err);
    assert_int_equal(rein_agent_result_stop(res), REIN_AGENT_STOP_FINAL_ANSWER);
    rein_agent_result_free(res);
    rein_history_free(h);
    rein_agent_free(a);
    rein_provider_free(p);
    /* 1 turn, 3 model calls, 1 verifier call, 2 tool calls. */
    assert_true(otlp_wait_spans(F->otlp, 7, 20000));
    rein_trace_shutdown(2000);
    spans = otlp_spans(F->otlp);

    s = tool_span(spans, "k1");
    ev = otlp_event_named(s, "rein.self_check");
    assert_non_null(ev);
    assert_string_equal(event_str(ev, "rein.self_check.verdict"), "skipped");
    assert_string_equal(event_str(ev, "rein.self_check.code"), "confident");
    assert_string_equal(event_str(ev, "rein.self_check.judge"), "rules");
    assert_true(event_double(ev, "rein.self_check.confidence") >= 0.8);
    assert_null(child_named(spans, s, "chat gpt-4o")); /* no verifier was asked */

    s = tool_span(spans, "w1");
    assert_string_equal(otlp_attr_str(s, "rein.call.status"), "success");
    ev = otlp_event_named(s, "rein.self_check");
    assert_non_null(ev);
    assert_string_equal(event_str(ev, "rein.self_check.verdict"), "passed");
    assert_string_equal(event_str(ev, "rein.self_check.judge"), "model");
    assert_string_equal(event_str(ev, "rein.self_check.reason"), "The user asked to wipe it.");
    assert_non_null(child_named(spans, s, "chat gpt-4o"));
    ev = otlp_event_named(s, "rein.approval");
    assert_non_null(ev);
    assert_string_equal(event_str(ev, "rein.approval.decision"), "approved");
    assert_true(event_double(ev, "rein.approval.wait_ms") >= 0);
    json_decref(spans);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(turn_spans_and_propagation, teardown),
        cmocka_unit_test_teardown(own_trace_without_traceparent, teardown),
        cmocka_unit_test_teardown(failed_model_call_spans, teardown),
        cmocka_unit_test_teardown(content_capture, teardown),
        cmocka_unit_test_teardown(claims_on_the_turn_span, teardown),
        cmocka_unit_test_teardown(receiver_down, teardown),
        cmocka_unit_test_teardown(plan_spans, teardown),
        cmocka_unit_test_teardown(replan_spans, teardown),
        cmocka_unit_test_teardown(verify_protocol_spans, teardown),
        cmocka_unit_test_teardown(loop_iteration_spans, teardown),
        cmocka_unit_test_teardown(self_check_events, teardown),
        cmocka_unit_test_teardown(skipped_self_check_and_approval, teardown),
        cmocka_unit_test_teardown(propagation_to_skills_and_mcp, teardown),
    };

    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
