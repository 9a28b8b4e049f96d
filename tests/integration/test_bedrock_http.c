/*
 * Bedrock over real HTTP: rein's provider against the scripted model server speaking Converse
 * and ConverseStream (tests/support/model_server_bedrock.c), which recomputes every request's
 * SigV4 signature with OpenSSL from what arrived and refuses what Bedrock refuses. Credentials
 * from the environment (with a session token) and the API key; the path with the model id's
 * ':' signed as AWS signs it; a wrong secret; the body (messages alternating, toolUse and
 * toolResult, toolConfig); the binary event stream split into 1-byte writes, cut, corrupted;
 * ThrottlingException (429) and in-stream exceptions retried, a validationException not;
 * record then replay of the binary stream; the agent loop end to end.
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include "provider_fixture.h"

#include <rein/agent.h>
#include <rein/tools.h>

#define MODEL "anthropic.claude-3-5-sonnet-20240620-v1:0"

static void fx_start(struct pfx *f, const char *secret, const char *token)
{
    unsetenv("AWS_BEARER_TOKEN_BEDROCK");
    unsetenv("AWS_PROFILE");
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1); /* no instance metadata to ask */
    setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
    if (token)
        setenv("AWS_SESSION_TOKEN", token, 1);
    else
        unsetenv("AWS_SESSION_TOKEN");
    setenv("AWS_REGION", "us-east-1", 1);
    pfx_start(f, "AKIDTEST:secret/With+Chars=", "5");
    assert_rein_ok(rein_provider_config_set(f->cfg, "provider", "bedrock", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_model(f->cfg, MODEL), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f->cfg, ms_url(f->ms)), NULL);
}

static void add_weather_tool(struct pfx *f)
{
    json_t *s = json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", "city",
                          "type", "string", "required", "city");

    assert_rein_ok(rein_model_request_add_tool(f->req, "get_weather", "Weather for a city", s),
                   NULL);
    json_decref(s);
}

static const char *str_at(const json_t *v, const char *path)
{
    return json_string_value(test_json_at(v, path));
}

static void assert_served(const struct ms_request *q)
{
    if (q->status != 200 || q->error)
        fail_msg("request %zu: status %d: %s", q->index, q->status, q->error ? q->error : "");
}

/* A signed stream with a tool call, then its result, as Bedrock takes them. */
static void test_signed_stream_call_then_result(void **state)
{
    const struct ms_request *q;
    json_t *msg;
    struct pfx f;

    (void)state;
    fx_start(&f, "secret/With+Chars=", "session-token-1");
    pfx_provider(&f);
    add_weather_tool(&f);
    rein_model_request_set_stream(f.req, true);
    pfx_script(&f, "[{\"reasoning\":\"Needs the tool.\",\"signature\":\"c2ln\",\"text\":\"Let me "
                   "check.\",\"tool_calls\":[{\"id\":\"tooluse_1\",\"name\":\"get_weather\","
                   "\"arguments\":[\"{\\\"city\\\":\",\"\\\"Oslo\\\"}\"]}],\"usage\":"
                   "{\"input_tokens\":30,\"output_tokens\":12,\"cached_tokens\":100}},"
                   "{\"match\":{\"tool_result_contains\":\"degrees\"},\"text\":\"3 degrees.\"}]");
    assert_rein_ok(rein_history_add_system(f.h, "Be brief."), NULL);
    assert_rein_ok(rein_history_add_user(f.h, "Weather in Oslo?"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "Let me check.");
    assert_string_equal(rein_model_response_reasoning(f.resp), "Needs the tool.");
    assert_int_equal(rein_model_response_call_count(f.resp), 1);
    assert_string_equal(rein_model_call_id(rein_model_response_call(f.resp, 0)), "tooluse_1");
    assert_string_equal(rein_model_call_raw_arguments(rein_model_response_call(f.resp, 0)),
                        "{\"city\":\"Oslo\"}");
    assert_string_equal(rein_model_response_finish_reason(f.resp), "tool_use");
    assert_int_equal(rein_model_response_input_tokens(f.resp), 130);
    q = ms_last_request(f.ms);
    assert_served(q);
    assert_string_equal(q->path, "/model/" MODEL "/converse-stream");
    assert_string_equal(ms_request_header(q, "x-amz-security-token"), "session-token-1");
    assert_non_null(
        strstr(ms_request_header(q, "authorization"), "AWS4-HMAC-SHA256 Credential=AKIDTEST/"));
    assert_string_equal(str_at(q->json, "system.0.text"), "Be brief.");
    assert_string_equal(str_at(q->json, "toolConfig.tools.0.toolSpec.name"), "get_weather");
    assert_string_equal(str_at(q->json, "toolConfig.tools.0.toolSpec.inputSchema.json.type"),
                        "object");

    msg = rein_model_response_message(f.resp);
    assert_rein_ok(rein_history_append(f.h, msg, NULL), NULL);
    json_decref(msg);
    assert_rein_ok(rein_history_add_tool_result(f.h, "tooluse_1", "get_weather",
                                                "{\"temp\":\"3 degrees\"}", false),
                   NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "3 degrees.");
    q = ms_last_request(f.ms);
    assert_served(q);
    assert_string_equal(str_at(q->json, "messages.1.role"), "assistant");
    assert_string_equal(
        str_at(q->json, "messages.1.content.0.reasoningContent.reasoningText.signature"), "c2ln");
    assert_string_equal(str_at(q->json, "messages.1.content.2.toolUse.input.city"), "Oslo");
    assert_string_equal(str_at(q->json, "messages.2.content.0.toolResult.toolUseId"), "tooluse_1");
    assert_string_equal(str_at(q->json, "messages.2.content.0.toolResult.content.0.json.temp"),
                        "3 degrees");
    pfx_stop(&f);
}

/* tool_choice none: Converse has no such value, so the tools are not offered; a conversation
 * that holds tool blocks (which Converse takes only with a toolConfig) declares one placeholder
 * tool instead, and the server (checking as Bedrock does) takes both. */
static void test_tool_choice_none(void **state)
{
    const struct ms_request *q;
    json_t *call;
    struct pfx f;

    (void)state;
    fx_start(&f, "secret/With+Chars=", NULL);
    pfx_provider(&f);
    add_weather_tool(&f);
    assert_rein_ok(rein_model_request_set_tool_choice(f.req, "none"), NULL);
    rein_model_request_set_stream(f.req, false);
    pfx_script(&f, "[{\"text\":\"No tools needed.\"},{\"text\":\"It is 3 degrees.\"}]");
    assert_rein_ok(rein_history_add_user(f.h, "Hello"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    q = ms_last_request(f.ms);
    assert_served(q);
    assert_null(json_object_get(q->json, "toolConfig"));
    assert_null(strstr(q->body, "get_weather"));

    /* A history with a call and its result. */
    call = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "role", "assistant", "content", "",
                     "tool_calls", "id", "tooluse_9", "name", "get_weather", "arguments",
                     "{\"city\":\"Oslo\"}");
    assert_rein_ok(rein_history_append(f.h, call, NULL), NULL);
    json_decref(call);
    assert_rein_ok(
        rein_history_add_tool_result(f.h, "tooluse_9", "get_weather", "3 degrees", false), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "It is 3 degrees.");
    q = ms_last_request(f.ms);
    assert_served(q);
    assert_int_equal(json_array_size(test_json_at(q->json, "toolConfig.tools")), 1);
    assert_string_equal(str_at(q->json, "toolConfig.tools.0.toolSpec.name"), "rein_no_tools");
    assert_null(test_json_at(q->json, "toolConfig.toolChoice"));
    assert_string_equal(str_at(q->json, "messages.1.content.0.toolUse.name"), "get_weather");
    /* "auto" offers the tools again. */
    assert_rein_ok(rein_model_request_set_tool_choice(f.req, "auto"), NULL);
    pfx_script(&f, "[{\"text\":\"again\"}]");
    assert_rein_ok(pfx_send(&f), &f.err);
    q = ms_last_request(f.ms);
    assert_string_equal(str_at(q->json, "toolConfig.tools.0.toolSpec.name"), "get_weather");
    assert_non_null(test_json_at(q->json, "toolConfig.toolChoice.auto"));
    pfx_stop(&f);
}

/* A wrong secret is refused as Bedrock refuses it; an API key goes as a bearer. */
/* A long conversation is signed and sent from where the history keeps it (the SHA-256 of
 * the body taken over its pieces, not over a copy): the server checks the signature against
 * the bytes it got, which are those of a recording provider's flat body. */
static void test_long_history_signed_in_place(void **state)
{
    char *dir = test_tmpdir(), path[1024], text[96], id[24];
    const struct ms_request *q[2];
    rein_provider *rec;
    struct pfx f;

    (void)state;
    fx_start(&f, "secret/With+Chars=", "session-token-1");
    pfx_provider(&f);
    snprintf(path, sizeof(path), "%s/long.jsonl", dir);
    assert_rein_ok(rein_provider_config_set_record(f.cfg, path), NULL);
    rec = rein_provider_new(f.cfg, &f.err);
    assert_non_null(rec);
    add_weather_tool(&f);
    pfx_script(&f, "{\"times\": 0, \"text\": \"Done.\"}");
    assert_rein_ok(rein_history_add_system(f.h, "Be brief."), NULL);
    for (int i = 0; i < 750; i++) {
        json_t *asst;
        snprintf(text, sizeof(text), "Weather in \"Oslo\", day %d? \u00e5\u2603\n", i);
        assert_rein_ok(rein_history_add_user(f.h, text), NULL);
        snprintf(id, sizeof(id), "tooluse_%d", i);
        asst = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "role", "assistant", "content", "",
                         "tool_calls", "id", id, "name", "get_weather", "arguments",
                         "{\"city\":\"Oslo\"}");
        assert_rein_ok(rein_history_append(f.h, asst, NULL), NULL);
        json_decref(asst);
        assert_rein_ok(rein_history_add_tool_result(f.h, id, "get_weather", "3 degrees", false),
                       NULL);
    }
    /* Twice in place (the second hashes only what was appended), then flat. */
    for (int k = 0; k < 3; k++) {
        rein_model_response_free(f.resp);
        f.resp = NULL;
        if (k == 1)
            assert_rein_ok(rein_history_add_user(f.h, "And tomorrow?"), NULL);
        assert_rein_ok(rein_provider_send(k == 2 ? rec : f.p, f.req, f.h, &f.resp, &f.err), &f.err);
        q[k ? k - 1 : 0] = ms_request(f.ms, (size_t)k);
        assert_non_null(q[k ? k - 1 : 0]);
        assert_served(q[k ? k - 1 : 0]);
        assert_int_equal(json_array_size(json_object_get(q[k ? k - 1 : 0]->json, "messages")),
                         1501);
    }
    assert_true(q[0]->body_len > 2 * 65536);
    assert_int_equal(q[0]->body_len, q[1]->body_len);
    assert_memory_equal(q[0]->body, q[1]->body, q[0]->body_len);
    rein_provider_free(rec);
    pfx_stop(&f);
    test_rmtree(dir);
    free(dir);
}

static void test_wrong_secret_and_api_key(void **state)
{
    const struct ms_request *q;
    struct pfx f;

    (void)state;
    fx_start(&f, "not-the-secret", NULL);
    pfx_provider(&f);
    rein_model_request_set_stream(f.req, false);
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    pfx_script(&f, "[{\"text\":\"hello\",\"times\":0}]");
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(f.err.detail, 403);
    assert_non_null(strstr(f.err.msg, "signature we calculated does not match"));
    assert_null(strstr(f.err.msg, "not-the-secret"));
    assert_string_equal(
        json_string_value(json_object_get(rein_model_response_error(f.resp), "type")),
        "InvalidSignatureException");
    rein_provider_free(f.p);

    /* No credentials at all: the provider says what to set. */
    unsetenv("AWS_ACCESS_KEY_ID");
    setenv("HOME", "/nonexistent", 1);
    assert_null(rein_provider_new(f.cfg, &f.err));
    assert_non_null(strstr(f.err.msg, "AWS_ACCESS_KEY_ID"));

    setenv("AWS_BEARER_TOKEN_BEDROCK", "AKIDTEST:secret/With+Chars=", 1);
    pfx_provider(&f);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "hello");
    q = ms_last_request(f.ms);
    assert_string_equal(q->path, "/model/" MODEL "/converse");
    assert_string_equal(ms_request_header(q, "authorization"),
                        "Bearer AKIDTEST:secret/With+Chars=");
    unsetenv("AWS_BEARER_TOKEN_BEDROCK");
    pfx_stop(&f);
}

static void test_throttling_exceptions_and_faults(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f, "secret/With+Chars=", NULL);
    assert_rein_ok(rein_provider_config_set(f.cfg, "max_retries", "3", NULL), NULL);
    pfx_provider(&f);
    rein_model_request_set_stream(f.req, true);
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);

    /* 429 ThrottlingException and 503: retried, each attempt signed anew. */
    pfx_script(&f, "[{\"status\":429,\"times\":1},{\"status\":503,\"times\":1},"
                   "{\"text\":\"after the wait\"}]");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "after the wait");
    assert_int_equal(ms_request_count(f.ms), 3);

    /* The stream in 1-byte writes. */
    pfx_script(&f, "[{\"text\":\"héllo wörld\",\"delta_bytes\":3,\"fault\":{\"chunk_bytes\":1}}]");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "héllo wörld");

    /* A throttlingException inside the stream is asked again; a validationException is not. */
    pfx_script(&f, "[{\"text\":\"partial\",\"delta_bytes\":3,\"times\":1,\"fault\":"
                   "{\"error_after_events\":2,\"error_event\":{\"type\":\"throttlingException\","
                   "\"message\":\"Too many tokens, please wait before trying again.\"}}},"
                   "{\"text\":\"second\"}]");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "second");
    pfx_script(&f, "[{\"text\":\"partial\",\"delta_bytes\":3,\"fault\":{\"error_after_events\":2,"
                   "\"error_event\":{\"type\":\"validationException\",\"message\":\"Input is too "
                   "long for requested model.\"}}}]");
    assert_int_equal(pfx_send(&f), REIN_EPROVIDER);
    assert_non_null(strstr(f.err.msg, "Input is too long"));

    /* Cut before the end: asked once more. */
    pfx_script(&f, "[{\"text\":\"cut short\",\"delta_bytes\":2,\"times\":1,\"fault\":"
                   "{\"cut_after_events\":3}},{\"text\":\"whole\"}]");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "whole");

    /* Bytes that are not event stream framing: an error naming the CRC, after one retry. */
    pfx_script(&f, "[{\"text\":\"x\",\"times\":0,\"fault\":{\"malformed_after_events\":1}}]");
    assert_int_equal(pfx_send(&f), REIN_EPROVIDER);
    assert_non_null(strstr(f.err.msg, "CRC"));
    pfx_stop(&f);
}

static void test_record_then_replay_the_binary_stream(void **state)
{
    char *dir = test_tmpdir(), path[1024];
    rein_provider_config *cfg;
    rein_provider *p;
    rein_model_response *r = NULL;
    rein_error err;
    struct pfx f;

    (void)state;
    snprintf(path, sizeof(path), "%s/bedrock.jsonl", dir);
    fx_start(&f, "secret/With+Chars=", NULL);
    assert_rein_ok(rein_provider_config_set_record(f.cfg, path), NULL);
    pfx_provider(&f);
    rein_model_request_set_stream(f.req, true);
    pfx_script(&f, "[{\"text\":\"recorded\",\"tool_calls\":[{\"id\":\"tu_9\",\"name\":\"x\","
                   "\"arguments\":\"{}\"}]}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    char *text = test_read_file(path, NULL);
    assert_non_null(strstr(text, "\"response_base64\""));
    assert_null(strstr(text, "secret/With"));
    free(text);

    cfg = rein_provider_config_new();
    assert_rein_ok(rein_provider_config_set(cfg, "provider", "replay", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(cfg, "replay", path, NULL), NULL);
    p = rein_provider_new(cfg, &err);
    if (!p)
        fail_msg("%s", err.msg);
    assert_rein_ok(rein_provider_send(p, f.req, f.h, &r, &err), &err);
    assert_string_equal(rein_model_response_text(r), "recorded");
    assert_string_equal(rein_model_call_id(rein_model_response_call(r, 0)), "tu_9");
    rein_model_response_free(r);
    rein_provider_free(p);
    rein_provider_config_free(cfg);
    pfx_stop(&f);
    test_rmtree(dir);
    free(dir);
}

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
        "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"
        "\"required\":[\"city\"]}}";
    struct rein_agent_turn_opts o = {0};
    rein_agent_result *res = NULL;
    rein_registry *reg;
    rein_agent *a;
    json_t *m;
    struct pfx f;

    (void)state;
    fx_start(&f, "secret/With+Chars=", NULL);
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
        assert_served(ms_request(f.ms, i));
    rein_agent_result_free(res);
    rein_agent_free(a);
    rein_registry_free(reg);
    pfx_stop(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_signed_stream_call_then_result),
    cmocka_unit_test(test_tool_choice_none),
    cmocka_unit_test(test_wrong_secret_and_api_key),
    cmocka_unit_test(test_long_history_signed_in_place),
    cmocka_unit_test(test_throttling_exceptions_and_faults),
    cmocka_unit_test(test_record_then_replay_the_binary_stream),
    cmocka_unit_test(test_agent_loop_end_to_end),
};

REIN_TEST_MAIN(tests)
