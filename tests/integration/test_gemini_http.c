/*
 * The Gemini wire over real HTTP: rein's provider against the scripted model server speaking
 * generateContent / streamGenerateContent?alt=sse (tests/support/model_server_gemini.c
 * validates requests as the Gemini API does). The URL and key header, the request body rein
 * builds from its history (systemInstruction, merged user contents, functionCall parts with
 * their signatures, functionResponse parts, the converted tool schemas), 429/503 with
 * Retry-After and with a RetryInfo body, in-stream errors, cut, split and malformed streams,
 * the Vertex preset with a bearer token, record then replay, and the agent loop end to end.
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include "provider_fixture.h"

#include <rein/agent.h>
#include <rein/tools.h>

static void fx_start(struct pfx *f)
{
    char base[128];

    pfx_start(f, "gm-key", "5");
    snprintf(base, sizeof(base), "%s/v1beta", ms_url(f->ms));
    assert_rein_ok(rein_provider_config_set(f->cfg, "provider", "gemini", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_model(f->cfg, "gemini-2.5-flash"), NULL);
    assert_rein_ok(rein_provider_config_set_api_key(f->cfg, "gm-key"), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f->cfg, base), NULL);
}

/* A tool whose schema holds what Gemini's Schema does not take. */
static void add_weather_tool(struct pfx *f)
{
    static const char schema[] =
        "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
        "\"additionalProperties\":false,\"properties\":{\"city\":{\"type\":\"string\","
        "\"minLength\":1},\"unit\":{\"$ref\":\"#/$defs/unit\"},\"days\":{\"type\":[\"integer\","
        "\"null\"],\"exclusiveMinimum\":0},\"when\":{\"type\":\"string\",\"format\":\"uri\"}},"
        "\"required\":[\"city\"],\"$defs\":{\"unit\":{\"enum\":[\"C\",\"F\"],\"type\":\"string\"}}"
        "}";
    json_t *s = rein_json_parse(schema, strlen(schema), 0, NULL);

    assert_non_null(s);
    assert_rein_ok(rein_model_request_add_tool(f->req, "get_weather", "Weather for a city", s),
                   NULL);
    json_decref(s);
}

static const char *str_at(const json_t *v, const char *path)
{
    return json_string_value(test_json_at(v, path));
}

/* ---------------------------------------------------------------------------------------
 * A conversation with a tool call, streamed, then its answer
 */

static void test_stream_a_call_then_answer_with_its_result(void **state)
{
    const struct ms_request *q;
    json_t *msg;

    (void)state;
    struct pfx f;
    fx_start(&f);
    pfx_provider(&f);
    add_weather_tool(&f);
    rein_model_request_set_stream(f.req, true);
    pfx_script(&f, "[{\"reasoning\":\"Weather needs the tool.\",\"signature\":\"c2lnLTE=\","
                   "\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":"
                   "\"{\\\"city\\\":\\\"Oslo\\\"}\"}],\"usage\":{\"input_tokens\":40,"
                   "\"output_tokens\":9,\"reasoning_tokens\":5,\"cached_tokens\":32}},"
                   "{\"match\":{\"tool_result_contains\":\"degrees\"},\"text\":[\"It is 3 \","
                   "\"degrees in Oslo.\"]}]");
    assert_rein_ok(rein_history_add_system(f.h, "You are terse."), NULL);
    assert_rein_ok(rein_history_add_user(f.h, "Weather in Oslo?"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_int_equal(rein_model_response_call_count(f.resp), 1);
    assert_string_equal(rein_model_call_name(rein_model_response_call(f.resp, 0)), "get_weather");
    assert_string_equal(rein_model_call_raw_arguments(rein_model_response_call(f.resp, 0)),
                        "{\"city\":\"Oslo\"}");
    assert_string_equal(rein_model_response_reasoning(f.resp), "Weather needs the tool.");
    assert_int_equal(rein_model_response_input_tokens(f.resp), 40);
    assert_int_equal(rein_model_response_output_tokens(f.resp), 14);

    /* The request: the URL names the model and the streaming method, the key its header. */
    q = ms_last_request(f.ms);
    assert_int_equal(q->status, 200);
    assert_string_equal(q->path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent");
    assert_string_equal(q->query, "alt=sse");
    assert_string_equal(ms_request_header(q, "x-goog-api-key"), "gm-key");
    assert_null(ms_request_header(q, "authorization"));
    assert_string_equal(str_at(q->json, "systemInstruction.parts.0.text"), "You are terse.");
    assert_string_equal(str_at(q->json, "contents.0.role"), "user");
    assert_string_equal(str_at(q->json, "contents.0.parts.0.text"), "Weather in Oslo?");
    assert_null(json_object_get(q->json, "model"));
    assert_null(json_object_get(q->json, "stream"));
    /* The schema as Gemini takes it: $ref inlined, ["integer","null"] as nullable, the rest
     * of what it does not know left out. */
    const json_t *params = test_json_at(q->json, "tools.0.functionDeclarations.0.parameters");
    assert_string_equal(str_at(params, "type"), "OBJECT");
    assert_null(json_object_get(params, "additionalProperties"));
    assert_null(json_object_get(params, "$schema"));
    assert_string_equal(str_at(params, "properties.unit.type"), "STRING");
    assert_string_equal(str_at(params, "properties.unit.enum.1"), "F");
    assert_string_equal(str_at(params, "properties.days.type"), "INTEGER");
    assert_true(json_is_true(test_json_at(params, "properties.days.nullable")));
    assert_null(test_json_at(params, "properties.days.exclusiveMinimum"));
    assert_null(test_json_at(params, "properties.when.format"));
    assert_int_equal(json_integer_value(test_json_at(params, "properties.city.minLength")), 1);

    /* The call and its result go back as Gemini wants them. */
    msg = rein_model_response_message(f.resp);
    assert_rein_ok(rein_history_append(f.h, msg, NULL), NULL);
    json_decref(msg);
    assert_rein_ok(
        rein_history_add_tool_result(f.h, rein_model_call_id(rein_model_response_call(f.resp, 0)),
                                     NULL, "{\"temperature\":\"3 degrees\"}", false),
        NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "It is 3 degrees in Oslo.");
    q = ms_last_request(f.ms);
    assert_int_equal(q->status, 200);
    assert_string_equal(str_at(q->json, "contents.1.role"), "model");
    assert_string_equal(str_at(q->json, "contents.1.parts.0.functionCall.name"), "get_weather");
    assert_string_equal(str_at(q->json, "contents.1.parts.0.functionCall.args.city"), "Oslo");
    assert_string_equal(str_at(q->json, "contents.1.parts.0.thoughtSignature"), "c2lnLTE=");
    /* rein's made-up call id is not Gemini's: it is not sent. */
    assert_null(test_json_at(q->json, "contents.1.parts.0.functionCall.id"));
    assert_string_equal(str_at(q->json, "contents.2.role"), "user");
    assert_string_equal(str_at(q->json, "contents.2.parts.0.functionResponse.name"), "get_weather");
    assert_string_equal(
        str_at(q->json, "contents.2.parts.0.functionResponse.response.output.temperature"),
        "3 degrees");
    pfx_stop(&f);
}

/* Parallel calls with the model's own ids: both answered in one user content, ids kept. */
static void test_parallel_calls_with_ids_are_answered_in_one_content(void **state)
{
    const struct ms_request *q;
    json_t *msg;
    struct pfx f;

    (void)state;
    fx_start(&f);
    pfx_provider(&f);
    add_weather_tool(&f);
    rein_model_request_set_stream(f.req, false);
    pfx_script(&f, "[{\"tool_calls\":[{\"id\":\"fc_a\",\"name\":\"get_weather\",\"arguments\":"
                   "\"{\\\"city\\\":\\\"Oslo\\\"}\"},{\"id\":\"fc_b\",\"name\":\"get_weather\","
                   "\"arguments\":\"{\\\"city\\\":\\\"Rome\\\"}\"}]},{\"text\":\"Done.\"}]");
    assert_rein_ok(rein_history_add_user(f.h, "Oslo and Rome?"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_int_equal(rein_model_response_call_count(f.resp), 2);
    assert_string_equal(rein_model_call_id(rein_model_response_call(f.resp, 1)), "fc_b");
    assert_string_equal(ms_last_request(f.ms)->path,
                        "/v1beta/models/gemini-2.5-flash:generateContent");
    msg = rein_model_response_message(f.resp);
    assert_rein_ok(rein_history_append(f.h, msg, NULL), NULL);
    json_decref(msg);
    assert_rein_ok(rein_history_add_tool_result(f.h, "fc_a", "get_weather", "3 C", false), NULL);
    assert_rein_ok(rein_history_add_tool_result(f.h, "fc_b", NULL, "no such city", true), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    q = ms_last_request(f.ms);
    assert_int_equal(q->status, 200);
    assert_int_equal(json_array_size(test_json_at(q->json, "contents")), 3);
    assert_string_equal(str_at(q->json, "contents.1.parts.1.functionCall.id"), "fc_b");
    assert_string_equal(str_at(q->json, "contents.2.parts.0.functionResponse.id"), "fc_a");
    assert_string_equal(str_at(q->json, "contents.2.parts.0.functionResponse.response.output"),
                        "3 C");
    /* A result without a name gets the name of the call it answers. */
    assert_string_equal(str_at(q->json, "contents.2.parts.1.functionResponse.name"), "get_weather");
    assert_string_equal(str_at(q->json, "contents.2.parts.1.functionResponse.response.error"),
                        "no such city");
    pfx_stop(&f);
}

/* ---------------------------------------------------------------------------------------
 * Errors, retries and faults
 */

static void test_retries_on_429_and_503_with_retry_after_and_retry_info(void **state)
{
    struct pfx f;
    int64_t t0;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "max_retries", "3", NULL), NULL);
    pfx_provider(&f);
    rein_model_request_set_stream(f.req, true);
    pfx_script(&f, "[{\"status\":429,\"headers\":{\"Retry-After\":\"0\"},\"times\":1},"
                   "{\"status\":503,\"times\":1},"
                   "{\"status\":429,\"times\":1,\"body\":\"{\\\"error\\\":{\\\"code\\\":429,"
                   "\\\"message\\\":\\\"quota\\\",\\\"status\\\":\\\"RESOURCE_EXHAUSTED\\\","
                   "\\\"details\\\":[{\\\"@type\\\":\\\"type.googleapis.com/google.rpc.RetryInfo"
                   "\\\",\\\"retryDelay\\\":\\\"0.2s\\\"}]}}\",\"content_type\":"
                   "\"application/json\"},"
                   "{\"text\":\"finally\"}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    t0 = rein_now_ms();
    assert_rein_ok(pfx_send(&f), &f.err);
    /* The RetryInfo delay was waited (200 ms), not the 5 ms backoff. */
    assert_true(rein_now_ms() - t0 >= 190);
    assert_string_equal(rein_model_response_text(f.resp), "finally");
    assert_int_equal(ms_request_count(f.ms), 4);

    /* Out of retries: the provider's own error, with its status word. */
    pfx_script(&f, "[{\"status\":503,\"times\":0}]");
    assert_rein_ok(rein_provider_config_set(f.cfg, "max_retries", "1", NULL), NULL);
    rein_provider_free(f.p);
    pfx_provider(&f);
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(f.err.detail, 503);
    assert_non_null(strstr(f.err.msg, "overloaded"));
    assert_string_equal(
        json_string_value(json_object_get(rein_model_response_error(f.resp), "status")),
        "UNAVAILABLE");
    pfx_stop(&f);
}

static void test_in_stream_error_cut_split_and_malformed_streams(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    pfx_provider(&f);
    rein_model_request_set_stream(f.req, true);
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);

    /* Split into 1-byte writes: the same reply. */
    pfx_script(&f, "[{\"text\":\"héllo wörld\",\"delta_bytes\":3,\"fault\":{\"chunk_bytes\":1}}]");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "héllo wörld");

    /* An error event in the stream: a transient one (INTERNAL, code 500) is asked again; one
     * that would fail the same way (INVALID_ARGUMENT) ends the send with its message. */
    pfx_script(&f, "[{\"text\":\"partial answer\",\"delta_bytes\":4,\"times\":1,\"fault\":"
                   "{\"error_after_events\":1,\"error_event\":{\"type\":\"INTERNAL\","
                   "\"message\":\"An internal error has occurred\"}}},{\"text\":\"again\"}]");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "again");
    assert_int_equal(ms_request_count(f.ms), 3);
    pfx_script(&f, "[{\"text\":\"partial answer\",\"delta_bytes\":4,\"fault\":"
                   "{\"error_after_events\":1,\"error_event\":{\"type\":\"INVALID_ARGUMENT\","
                   "\"message\":\"Unable to submit request because it has an empty text\"}}}]");
    assert_int_equal(pfx_send(&f), REIN_EPROVIDER);
    assert_non_null(strstr(f.err.msg, "Unable to submit request"));

    /* A stream cut before its finish reason is asked for once more. */
    pfx_script(&f, "[{\"text\":\"first try\",\"delta_bytes\":3,\"times\":1,\"fault\":"
                   "{\"cut_after_events\":2}},{\"text\":\"second try\"}]");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "second try");

    /* A malformed event: an error naming it, after the one retry. */
    pfx_script(&f, "[{\"text\":\"x\",\"times\":0,\"fault\":{\"malformed_after_events\":0}}]");
    assert_int_equal(pfx_send(&f), REIN_EPROVIDER);
    assert_non_null(strstr(f.err.msg, "could not be decoded"));
    pfx_stop(&f);
}

/* The service refuses a wrong key (400) and a missing one (403); rein reports either. */
static void test_wrong_key_and_vertex_bearer_token(void **state)
{
    const struct ms_request *q;
    struct pfx f;
    char base[256];

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set_api_key(f.cfg, "wrong"), NULL);
    pfx_provider(&f);
    rein_model_request_set_stream(f.req, false);
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    pfx_script(&f, "[{\"text\":\"never\"}]");
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_non_null(strstr(f.err.msg, "API key not valid"));
    assert_null(strstr(f.err.msg, "wrong"));
    rein_provider_free(f.p);

    /* Vertex AI: the project's publisher path, the token as a bearer. */
    snprintf(base, sizeof(base), "%s/v1/projects/p1/locations/us-central1/publishers/google",
             ms_url(f.ms));
    assert_rein_ok(rein_provider_config_set(f.cfg, "provider", "vertex", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f.cfg, base), NULL);
    assert_rein_ok(rein_provider_config_set_api_key(f.cfg, "gm-key"), NULL);
    pfx_provider(&f);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "never");
    q = ms_last_request(f.ms);
    assert_string_equal(
        q->path, "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-flash:"
                 "generateContent");
    assert_string_equal(ms_request_header(q, "authorization"), "Bearer gm-key");
    assert_null(ms_request_header(q, "x-goog-api-key"));
    pfx_stop(&f);
}

static void test_record_then_replay(void **state)
{
    char *dir = test_tmpdir();
    char path[1024];
    rein_provider_config *cfg;
    rein_provider *p;
    rein_model_response *r = NULL;
    rein_error err;
    struct pfx f;

    (void)state;
    snprintf(path, sizeof(path), "%s/gemini.jsonl", dir);
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set_record(f.cfg, path), NULL);
    pfx_provider(&f);
    rein_model_request_set_stream(f.req, true);
    pfx_script(&f, "[{\"text\":\"recorded answer\"}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    rein_provider_free(f.p);
    f.p = NULL;
    ms_stop(f.ms);
    f.ms = NULL;
    /* The key stays out of the recording. */
    char *text = test_read_file(path, NULL);
    assert_non_null(text);
    assert_null(strstr(text, "gm-key"));
    assert_non_null(strstr(text, "\"gemini\""));
    free(text);

    cfg = rein_provider_config_new();
    assert_rein_ok(rein_provider_config_set(cfg, "provider", "replay", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(cfg, "replay", path, NULL), NULL);
    p = rein_provider_new(cfg, &err);
    if (!p)
        fail_msg("%s", err.msg);
    assert_rein_ok(rein_provider_send(p, f.req, f.h, &r, &err), &err);
    assert_string_equal(rein_model_response_text(r), "recorded answer");
    rein_model_response_free(r);
    rein_provider_free(p);
    rein_provider_config_free(cfg);
    pfx_stop(&f);
    test_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------------------------------
 * The agent loop over Gemini: a bad call is answered with the error, the model fixes it
 */

static rein_err tool_weather(void *ud, const struct rein_invocation *inv,
                             struct rein_tool_reply *reply, rein_error *err)
{
    (void)ud;
    (void)err;
    reply->output = json_pack("{s:s, s:s}", "city",
                              json_string_value(json_object_get(inv->args, "city")), "temp", "3");
    return REIN_OK;
}

static void test_agent_loop_end_to_end(void **state)
{
    static const char manifest[] =
        "{\"id\":\"get_weather\",\"description\":\"Weather for a city\",\"parameters\":"
        "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"city\":"
        "{\"type\":\"string\"}},\"required\":[\"city\"]}}";
    struct rein_agent_turn_opts o = {0};
    rein_agent_result *res = NULL;
    rein_registry *reg;
    rein_agent *a;
    json_t *m;
    struct pfx f;

    (void)state;
    fx_start(&f);
    pfx_provider(&f);
    reg = rein_registry_new(&f.err);
    m = rein_json_parse(manifest, strlen(manifest), 0, NULL);
    assert_rein_ok(rein_registry_add_builtin(reg, m, tool_weather, NULL, NULL, &f.err), &f.err);
    json_decref(m);
    a = rein_agent_new(f.p, reg, &f.err);
    assert_non_null(a);
    o.verification = REIN_AGENT_VERIFY_OFF;
    pfx_script(&f, "[{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":\"{}\"}]},"
                   "{\"match\":{\"tool_result_contains\":\"missing required field\"},"
                   "\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":"
                   "\"{\\\"city\\\":\\\"Oslo\\\"}\"}]},"
                   "{\"match\":{\"last_role\":\"tool\"},\"text\":\"3 degrees in Oslo.\"}]");
    assert_rein_ok(rein_agent_run(a, f.h, "Weather in Oslo?", &o, &res, &f.err), &f.err);
    assert_int_equal(rein_agent_result_stop(res), REIN_AGENT_STOP_FINAL_ANSWER);
    assert_string_equal(rein_agent_result_text(res), "3 degrees in Oslo.");
    assert_int_equal(ms_request_count(f.ms), 3);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(ms_request(f.ms, i)->status, 200);
    assert_non_null(strstr(ms_request(f.ms, 2)->body, "\"temp\":\"3\""));
    rein_agent_result_free(res);
    rein_agent_free(a);
    rein_registry_free(reg);
    pfx_stop(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_stream_a_call_then_answer_with_its_result),
    cmocka_unit_test(test_parallel_calls_with_ids_are_answered_in_one_content),
    cmocka_unit_test(test_retries_on_429_and_503_with_retry_after_and_retry_info),
    cmocka_unit_test(test_in_stream_error_cut_split_and_malformed_streams),
    cmocka_unit_test(test_wrong_key_and_vertex_bearer_token),
    cmocka_unit_test(test_record_then_replay),
    cmocka_unit_test(test_agent_loop_end_to_end),
};

REIN_TEST_MAIN(tests)
