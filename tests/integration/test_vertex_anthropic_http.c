/*
 * Claude on Vertex AI (the vertex-anthropic preset, decision 0104) over real HTTP: rein's
 * provider against the scripted model server's Vertex routes
 * (tests/support/model_server_vertex.c), which refuse a body with a model, a missing or wrong
 * anthropic_version and a request without a bearer token, and check the rest as the Messages
 * API does. The address (:rawPredict, :streamRawPredict, the count's), the body, a streamed
 * tool call and its result, thinking for a 4.6 id and for a dated one, Vertex's own errors in
 * Google's shape (and as an array), Anthropic's passed on, Application Default Credentials,
 * the project and region from the environment, and the token count.
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include "cred_server.h"
#include "provider_fixture.h"

#include <stdlib.h>

#define TOKEN "ya29.vertex-token"
#define PLACE "/v1/projects/p1/locations/us-east5/publishers/anthropic"

/* The provider at the model server's Vertex address for model, with the token as its key. */
static void fx_start(struct pfx *f, const char *model)
{
    char base[160];

    pfx_start(f, TOKEN, "5");
    snprintf(base, sizeof(base), "%s" PLACE, ms_url(f->ms));
    assert_rein_ok(rein_provider_config_set(f->cfg, "provider", "vertex-anthropic", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_model(f->cfg, model), NULL);
    assert_rein_ok(rein_provider_config_set_api_key(f->cfg, TOKEN), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f->cfg, base), NULL);
}

static const char *str_at(const json_t *v, const char *path)
{
    const char *s = json_string_value(test_json_at(v, path));

    return s ? s : "";
}

static void add_weather_tool(struct pfx *f)
{
    static const char schema[] = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
                                 "\"string\"}},\"required\":[\"city\"]}";
    json_t *s = rein_json_parse(schema, strlen(schema), 0, NULL);

    assert_non_null(s);
    assert_rein_ok(rein_model_request_add_tool(f->req, "get_weather", "Weather for a city", s),
                   NULL);
    json_decref(s);
}

/* A plain request: the model in the URL, anthropic_version in the body, the token a bearer. */
static void test_plain_request(void **state)
{
    const struct ms_request *q;
    struct pfx f;

    (void)state;
    fx_start(&f, "claude-sonnet-4-5@20250929");
    pfx_provider(&f);
    assert_string_equal(rein_provider_wire(f.p), "anthropic");
    rein_model_request_set_stream(f.req, false);
    pfx_script(&f, "[{\"text\":\"Hello from Vertex.\",\"usage\":{\"input_tokens\":9,"
                   "\"output_tokens\":4}}]");
    assert_rein_ok(rein_history_add_system(f.h, "Be brief."), NULL);
    assert_rein_ok(rein_history_add_user(f.h, "Hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "Hello from Vertex.");
    assert_int_equal(rein_model_response_input_tokens(f.resp), 9);
    assert_int_equal(rein_model_response_output_tokens(f.resp), 4);
    q = ms_last_request(f.ms);
    assert_int_equal(q->status, 200);
    assert_string_equal(q->path, PLACE "/models/claude-sonnet-4-5@20250929:rawPredict");
    assert_string_equal(ms_request_header(q, "authorization"), "Bearer " TOKEN);
    assert_null(ms_request_header(q, "x-api-key"));
    assert_null(ms_request_header(q, "anthropic-version"));
    assert_string_equal(str_at(q->json, "anthropic_version"), "vertex-2023-10-16");
    assert_null(json_object_get(q->json, "model"));
    assert_string_equal(str_at(q->json, "system.0.text"), "Be brief.");
    assert_string_equal(str_at(q->json, "messages.0.content.0.text"), "Hi");
    assert_true(json_is_integer(json_object_get(q->json, "max_tokens")));
    pfx_stop(&f);
}

/* Streamed: a tool call, then its result and the answer, both through :streamRawPredict. */
static void test_streamed_tool_round_trip(void **state)
{
    const struct ms_request *q;
    json_t *msg;
    struct pfx f;

    (void)state;
    fx_start(&f, "claude-haiku-4-5@20251001");
    pfx_provider(&f);
    add_weather_tool(&f);
    rein_model_request_set_stream(f.req, true);
    pfx_script(&f, "[{\"tool_calls\":[{\"id\":\"toolu_1\",\"name\":\"get_weather\",\"arguments\":"
                   "[\"{\\\"ci\",\"ty\\\":\\\"Oslo\\\"}\"]}]},"
                   "{\"match\":{\"tool_result_contains\":\"degrees\"},\"text\":[\"It is 3 \","
                   "\"degrees.\"]}]");
    assert_rein_ok(rein_history_add_user(f.h, "Weather in Oslo?"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_int_equal(rein_model_response_call_count(f.resp), 1);
    assert_string_equal(rein_model_call_name(rein_model_response_call(f.resp, 0)), "get_weather");
    assert_string_equal(rein_model_call_raw_arguments(rein_model_response_call(f.resp, 0)),
                        "{\"city\":\"Oslo\"}");
    q = ms_last_request(f.ms);
    assert_string_equal(q->path, PLACE "/models/claude-haiku-4-5@20251001:streamRawPredict");
    assert_true(json_is_true(json_object_get(q->json, "stream")));
    assert_string_equal(str_at(q->json, "tools.0.name"), "get_weather");

    msg = rein_model_response_message(f.resp);
    assert_rein_ok(rein_history_append(f.h, msg, NULL), NULL);
    json_decref(msg);
    assert_rein_ok(
        rein_history_add_tool_result(f.h, "toolu_1", NULL, "{\"t\":\"3 degrees\"}", false), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "It is 3 degrees.");
    q = ms_last_request(f.ms);
    assert_int_equal(q->status, 200);
    assert_string_equal(str_at(q->json, "messages.1.content.0.type"), "tool_use");
    assert_string_equal(str_at(q->json, "messages.2.content.0.type"), "tool_result");
    assert_string_equal(str_at(q->json, "messages.2.content.0.tool_use_id"), "toolu_1");
    pfx_stop(&f);
}

/* Thinking is read from the model id: adaptive at an effort for claude-opus-4-6, a budget for
 * claude-sonnet-4-5@20250929 (the date after @ is no version). */
static void test_thinking_by_model_id(void **state)
{
    const struct ms_request *q;
    struct pfx f;

    (void)state;
    fx_start(&f, "claude-opus-4-6");
    pfx_provider(&f);
    rein_model_request_set_stream(f.req, false);
    rein_model_request_set_reasoning(f.req, REIN_REASONING_HIGH, 0);
    pfx_script(&f, "[{\"reasoning\":\"Think.\",\"signature\":\"c2ln\",\"text\":\"Done.\","
                   "\"times\":2}]");
    assert_rein_ok(rein_history_add_user(f.h, "Plan it."), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_reasoning(f.resp), "Think.");
    q = ms_last_request(f.ms);
    assert_int_equal(q->status, 200);
    assert_string_equal(q->path, PLACE "/models/claude-opus-4-6:rawPredict");
    assert_string_equal(str_at(q->json, "thinking.type"), "adaptive");
    assert_string_equal(str_at(q->json, "output_config.effort"), "high");
    rein_provider_free(f.p);

    assert_rein_ok(rein_provider_config_set_model(f.cfg, "claude-sonnet-4-5@20250929"), NULL);
    pfx_provider(&f);
    assert_rein_ok(pfx_send(&f), &f.err);
    q = ms_last_request(f.ms);
    assert_int_equal(q->status, 200);
    assert_string_equal(str_at(q->json, "thinking.type"), "enabled");
    assert_true(json_integer_value(test_json_at(q->json, "thinking.budget_tokens")) >= 1024);
    assert_null(test_json_at(q->json, "output_config"));
    pfx_stop(&f);
}

/* Vertex's own errors come as google.rpc.Status (or an array of one): rein reports the status,
 * the message, Retry-After, and gives the error Anthropic's type for its status; Anthropic's
 * own errors pass as they came. */
static void test_errors(void **state)
{
    const json_t *e;
    struct pfx f;

    (void)state;
    fx_start(&f, "claude-sonnet-4-6");
    pfx_provider(&f);
    rein_model_request_set_stream(f.req, false);
    rein_model_request_set_retries(f.req, 0);
    assert_rein_ok(rein_history_add_user(f.h, "Hi"), NULL);
    pfx_script(
        &f,
        "[{\"status\":429,\"headers\":{\"Retry-After\":\"7\"},\"times\":1,\"body\":"
        "\"{\\\"error\\\":{\\\"code\\\":429,\\\"message\\\":\\\"Quota exceeded for "
        "aiplatform.googleapis.com/online_prediction_requests_per_base_model with base "
        "model: anthropic-claude-sonnet-4-6.\\\",\\\"status\\\":\\\"RESOURCE_EXHAUSTED\\\"}}\"},"
        "{\"status\":400,\"times\":1,\"body\":\"[{\\\"error\\\":{\\\"code\\\":400,"
        "\\\"message\\\":\\\"Project `p1` is not allowed to use Publisher Model "
        "`claude-sonnet-4-6`\\\",\\\"status\\\":\\\"FAILED_PRECONDITION\\\"}}]\"},"
        "{\"status\":529,\"times\":1}]");
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(f.err.detail, 429);
    assert_non_null(strstr(f.err.msg, "Quota exceeded"));
    assert_int_equal(rein_model_response_retry_after_ms(f.resp), 7000);
    e = rein_model_response_error(f.resp);
    assert_string_equal(str_at(e, "type"), "rate_limit_error");
    assert_string_equal(str_at(e, "status"), "RESOURCE_EXHAUSTED");

    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(f.err.detail, 400);
    assert_non_null(strstr(f.err.msg, "is not allowed to use Publisher Model"));
    e = rein_model_response_error(f.resp);
    assert_string_equal(str_at(e, "type"), "invalid_request_error");

    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(f.err.detail, 529);
    assert_string_equal(str_at(rein_model_response_error(f.resp), "type"), "overloaded_error");
    rein_provider_free(f.p);

    /* No token at a configured address: Vertex refuses it in its own shape. */
    assert_rein_ok(rein_provider_config_set_api_key(f.cfg, NULL), NULL);
    setenv("CLOUDSDK_CONFIG", "/nonexistent/gcloud", 1);
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    unsetenv("GOOGLE_ACCESS_TOKEN");
    pfx_provider(&f);
    pfx_script(&f, "[{\"text\":\"never\"}]");
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(f.err.detail, 401);
    assert_non_null(strstr(f.err.msg, "invalid authentication credentials"));
    assert_string_equal(str_at(rein_model_response_error(f.resp), "type"), "authentication_error");
    unsetenv("CLOUDSDK_CONFIG");
    pfx_stop(&f);
}

/* Without a token, Application Default Credentials: gcloud's file, its refresh token
 * exchanged at the scripted token endpoint, the access token the bearer of the send and of
 * the count. */
static void test_adc_token(void **state)
{
    char *dir = test_tmpdir();
    cs_server *cs = cs_start();
    char file[512];
    int64_t tokens;
    rein_model_response *resp = NULL;
    const struct ms_request *q;
    struct pfx f;

    (void)state;
    assert_non_null(cs);
    fx_start(&f, "claude-sonnet-4-6");
    assert_rein_ok(rein_provider_config_set_api_key(f.cfg, NULL), NULL);
    unsetenv("GOOGLE_ACCESS_TOKEN");
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    setenv("CLOUDSDK_CONFIG", dir, 1);
    snprintf(file, sizeof(file),
             "{\"type\":\"authorized_user\",\"client_id\":\"cid\",\"client_secret\":\"cs\","
             "\"refresh_token\":\"rt\",\"quota_project_id\":\"p1\",\"token_uri\":\"%s/token\"}",
             cs_url(cs));
    free(test_write_file(dir, "application_default_credentials.json", file));
    cs_route(cs, "POST", "/token", 200,
             "{\"access_token\":\"ya29.adc\",\"expires_in\":3599,\"token_type\":\"Bearer\"}", NULL);
    ms_set_api_key(f.ms, "ya29.adc");
    pfx_provider(&f);
    rein_model_request_set_stream(f.req, false);
    pfx_script(&f, "[{\"text\":\"ok\"},{\"usage\":{\"input_tokens\":21}}]");
    assert_rein_ok(rein_history_add_user(f.h, "Hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "ok");
    q = ms_last_request(f.ms);
    assert_string_equal(ms_request_header(q, "authorization"), "Bearer ya29.adc");
    assert_rein_ok(rein_provider_count_request(f.p, f.req, f.h, &tokens, NULL, &resp, &f.err),
                   &f.err);
    assert_int_equal(tokens, 21);
    q = ms_last_request(f.ms);
    assert_string_equal(ms_request_header(q, "authorization"), "Bearer ya29.adc");
    assert_int_equal(cs_count(cs, "POST", "/token"), 1);
    unsetenv("CLOUDSDK_CONFIG");
    pfx_stop(&f);
    cs_stop(cs);
    test_rmtree(dir);
    free(dir);
}

/* The token count: Vertex's one count address, the model in the body, the count's members. */
static void test_count(void **state)
{
    rein_model_response *resp = NULL;
    const struct ms_request *q;
    int64_t tokens;
    struct pfx f;

    (void)state;
    fx_start(&f, "claude-sonnet-4-5@20250929");
    pfx_provider(&f);
    add_weather_tool(&f);
    rein_model_request_set_max_tokens(f.req, 100);
    rein_model_request_set_temperature(f.req, 0.5);
    assert_true(rein_provider_can_count(f.p));
    assert_rein_ok(rein_history_add_system(f.h, "Be brief."), NULL);
    assert_rein_ok(rein_history_add_user(f.h, "Weather in Bergen?"), NULL);
    pfx_script(&f, "[{\"usage\":{\"input_tokens\":31}},{\"status\":429,\"headers\":"
                   "{\"Retry-After\":\"3\"},\"body\":\"{\\\"error\\\":{\\\"code\\\":429,"
                   "\\\"message\\\":\\\"Quota exceeded\\\",\\\"status\\\":"
                   "\\\"RESOURCE_EXHAUSTED\\\"}}\"}]");
    assert_rein_ok(rein_provider_count_request(f.p, f.req, f.h, &tokens, NULL, &resp, &f.err),
                   &f.err);
    assert_int_equal(tokens, 31);
    q = ms_last_request(f.ms);
    assert_int_equal(q->status, 200);
    assert_string_equal(q->path, PLACE "/models/count-tokens:rawPredict");
    assert_string_equal(ms_request_header(q, "authorization"), "Bearer " TOKEN);
    assert_string_equal(str_at(q->json, "model"), "claude-sonnet-4-5@20250929");
    assert_string_equal(str_at(q->json, "system.0.text"), "Be brief.");
    assert_string_equal(str_at(q->json, "tools.0.name"), "get_weather");
    assert_null(json_object_get(q->json, "max_tokens"));
    assert_null(json_object_get(q->json, "temperature"));
    /* An error status is a failed response with its Retry-After, as a send's. */
    assert_int_equal(rein_provider_count_request(f.p, f.req, f.h, &tokens, NULL, &resp, &f.err),
                     REIN_EHTTP);
    assert_int_equal(f.err.detail, 429);
    assert_non_null(resp);
    assert_int_equal(rein_model_response_retry_after_ms(resp), 3000);
    assert_string_equal(str_at(rein_model_response_error(resp), "type"), "rate_limit_error");
    rein_model_response_free(resp);
    pfx_stop(&f);
}

static const char *endpoint_of(rein_provider_config *cfg, rein_error *err, rein_provider **out)
{
    *out = rein_provider_new(cfg, err);
    return *out ? rein_provider_endpoint(*out) : NULL;
}

/* Without a base URL: the project and region as Claude Code finds them, the global region's
 * host without a prefix, and a missing project named. */
static void test_project_and_region(void **state)
{
    static const char *const vars[] = {
        "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT",        "ANTHROPIC_VERTEX_PROJECT_ID",
        "CLOUD_ML_REGION",      "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS"};
    rein_provider_config *cfg = rein_provider_config_new();
    rein_provider *p;
    rein_error err;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(vars); i++)
        unsetenv(vars[i]);
    setenv("CLOUDSDK_CONFIG", "/nonexistent/gcloud", 1);
    setenv("GOOGLE_ACCESS_TOKEN", "tok", 1);
    assert_rein_ok(rein_provider_config_set(cfg, "provider", "vertex-anthropic", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_model(cfg, "claude-sonnet-4-6"), NULL);
    assert_null(endpoint_of(cfg, &err, &p));
    assert_non_null(strstr(err.msg, "ANTHROPIC_VERTEX_PROJECT_ID"));

    setenv("ANTHROPIC_VERTEX_PROJECT_ID", "proj-a", 1);
    assert_string_equal(endpoint_of(cfg, &err, &p),
                        "https://us-east5-aiplatform.googleapis.com/v1/projects/proj-a/locations/"
                        "us-east5/publishers/anthropic");
    rein_provider_free(p);
    setenv("CLOUD_ML_REGION", "global", 1);
    setenv("GOOGLE_CLOUD_LOCATION", "europe-west4", 1);
    assert_string_equal(endpoint_of(cfg, &err, &p),
                        "https://aiplatform.googleapis.com/v1/projects/proj-a/locations/global/"
                        "publishers/anthropic");
    rein_provider_free(p);
    unsetenv("CLOUD_ML_REGION");
    setenv("GOOGLE_CLOUD_PROJECT", "proj-b", 1);
    assert_string_equal(endpoint_of(cfg, &err, &p),
                        "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj-b/"
                        "locations/europe-west4/publishers/anthropic");
    rein_provider_free(p);
    for (size_t i = 0; i < REIN_ARRAY_SIZE(vars); i++)
        unsetenv(vars[i]);
    unsetenv("GOOGLE_ACCESS_TOKEN");
    unsetenv("CLOUDSDK_CONFIG");
    rein_provider_config_free(cfg);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_plain_request),
    cmocka_unit_test(test_streamed_tool_round_trip),
    cmocka_unit_test(test_thinking_by_model_id),
    cmocka_unit_test(test_errors),
    cmocka_unit_test(test_adc_token),
    cmocka_unit_test(test_count),
    cmocka_unit_test(test_project_and_region),
};

REIN_TEST_MAIN(tests)
