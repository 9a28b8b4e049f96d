/*
 * Integration tests for the providers over real HTTP: rein's libcurl transport against the
 * scripted model server (tests/support/model_server.h) on 127.0.0.1. Streams and bodies in
 * the OpenAI, Anthropic and Ollama formats, histories the server validates the way the real
 * services do, retries with Retry-After and retry-after-ms, the four timeouts, streams cut
 * mid tool call or before one, cancellation from another thread, UTF-8 split across TCP
 * writes, malformed SSE lines, keys kept out of recordings and logs, record then replay, a
 * replay mismatch, and the `rein provider` command with the environment and flags.
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include "core/internal.h"
#include "provider_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------
 * Helpers
 */

struct events {
    struct rein_buf text, args;
    int starts, ends, retries, finishes;
    int headers;        /* HEADERS events */
    bool headers_first; /* ... the first came before any text */
    size_t nheaders;    /* ... how many headers the last one had */
    sem_t *text_seen;   /* posted at each text delta when set */
};

static void on_event(const struct rein_model_event *ev, void *ud)
{
    struct events *e = ud;

    switch (ev->type) {
    case REIN_MEV_TEXT_DELTA:
        assert_rein_ok(rein_buf_add(&e->text, ev->text, ev->len), NULL);
        if (e->text_seen)
            sem_post(e->text_seen);
        break;
    case REIN_MEV_TOOL_CALL_DELTA:
        assert_rein_ok(rein_buf_add(&e->args, ev->text, ev->len), NULL);
        break;
    case REIN_MEV_TOOL_CALL_START:
        e->starts++;
        break;
    case REIN_MEV_TOOL_CALL_END:
        e->ends++;
        break;
    case REIN_MEV_RETRY:
        /* The deltas of the failed attempt are forgotten, as the caller must. */
        rein_buf_reset(&e->text);
        rein_buf_reset(&e->args);
        e->retries++;
        break;
    case REIN_MEV_FINISH:
        e->finishes++;
        break;
    case REIN_MEV_HEADERS:
        e->headers_first = e->headers_first || (!e->headers && !e->text.len);
        e->headers++;
        e->nheaders = rein_model_headers_count(ev->headers);
        break;
    default:
        break;
    }
}

/* The events of the test's requests (each test has one fixture; fx_start resets them). */
static struct events fx_ev;

static void fx_start(struct pfx *f)
{
    /* Quick retries, so a test of three attempts takes milliseconds. */
    pfx_start(f, "sk-test", "10");
    memset(&fx_ev, 0, sizeof(fx_ev));
    rein_buf_init(&fx_ev.text, 0);
    rein_buf_init(&fx_ev.args, 0);
    rein_model_request_set_events(f->req, on_event, &fx_ev);
    assert_rein_ok(rein_provider_config_set(f->cfg, "model", "test-model", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_api_key(f->cfg, "sk-test"), NULL);
}

/* Makes the provider (preset name) pointed at the model server. */
static void fx_provider(struct pfx *f, const char *preset)
{
    bool openai_style = strcmp(preset, "anthropic") != 0 && strcmp(preset, "ollama") != 0;

    assert_rein_ok(rein_provider_config_set(f->cfg, "provider", preset, NULL), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f->cfg, openai_style ? ms_openai_url(f->ms)
                                                                          : ms_url(f->ms)),
                   NULL);
    pfx_provider(f);
}

/* Makes the provider for DashScope's native API, whose base URL ends in /api/v1. */
static void fx_dashscope_native(struct pfx *f)
{
    char base[128];

    snprintf(base, sizeof(base), "%s/api/v1", ms_url(f->ms));
    assert_rein_ok(rein_provider_config_set(f->cfg, "provider", "dashscope-native", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f->cfg, base), NULL);
    pfx_provider(f);
}

static void fx_stop(struct pfx *f)
{
    pfx_stop(f);
    rein_buf_release(&fx_ev.text);
    rein_buf_release(&fx_ev.args);
}

static json_t *schema(void)
{
    return json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", "city", "type",
                     "string", "required", "city");
}

static void add_weather_tool(struct pfx *f)
{
    json_t *s = schema();
    assert_rein_ok(rein_model_request_add_tool(f->req, "get_weather", "Weather for a city", s),
                   NULL);
    json_decref(s);
}

/* ---------------------------------------------------------------------------------------
 * The three wire formats over HTTP
 */

static void test_openai_stream_over_http(void **state)
{
    struct pfx f;
    const struct ms_request *r;
    const rein_model_call *c;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "openai-compatible");
    add_weather_tool(&f);
    pfx_script(
        &f, "{\"text\": [\"Let me \", \"check.\"], \"tool_calls\": [{\"id\": \"call_7\", "
            "\"name\": \"get_weather\", \"arguments\": [\"{\\\"ci\", \"ty\\\": \\\"Oslo\\\"}\"]}],"
            " \"usage\": {\"input_tokens\": 12, \"output_tokens\": 9}}");
    assert_rein_ok(rein_history_add_user(f.h, "Weather in Oslo?"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "Let me check.");
    c = rein_model_response_call(f.resp, 0);
    assert_string_equal(rein_model_call_id(c), "call_7");
    assert_string_equal(rein_model_call_raw_arguments(c), "{\"city\": \"Oslo\"}");
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_OK);
    assert_int_equal(rein_model_response_input_tokens(f.resp), 12);
    assert_int_equal(rein_model_response_output_tokens(f.resp), 9);
    assert_int_equal(rein_model_response_finish(f.resp), REIN_FINISH_TOOL_CALLS);
    /* The events carried the same text and arguments while the reply streamed. */
    assert_string_equal(fx_ev.text.ptr, "Let me check.");
    assert_string_equal(fx_ev.args.ptr, "{\"city\": \"Oslo\"}");
    assert_int_equal(fx_ev.starts, 1);
    assert_int_equal(fx_ev.ends, 1);
    r = ms_request(f.ms, 0);
    assert_string_equal(r->path, "/v1/chat/completions");
    assert_string_equal(ms_request_header(r, "authorization"), "Bearer sk-test");
    assert_true(
        json_is_true(json_object_get(json_object_get(r->json, "stream_options"), "include_usage")));

    /* The second turn: the server checks that every call id has its result. */
    assert_rein_ok(rein_history_add_response(f.h, f.resp), NULL);
    assert_rein_ok(
        rein_history_add_tool_result(f.h, "call_7", "get_weather", "{\"temp\": 3}", false), NULL);
    pfx_script(&f,
               "{\"match\": {\"tool_result_contains\": \"temp\"}, \"text\": \"It is 3 degrees.\"}");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "It is 3 degrees.");
    r = ms_request(f.ms, 1);
    /* The raw argument string went back byte for byte. */
    assert_non_null(strstr(r->body, "\"arguments\":\"{\\\"city\\\": \\\"Oslo\\\"}\""));
    fx_stop(&f);
}

/*
 * Issue 24: DashScope's native API (not its compatible mode) parsed from a live stream: the
 * request in its shape (input.messages, parameters, X-DashScope-SSE), parallel calls whose
 * arguments arrive in pieces with Chinese text, cumulative usage, then the tool results
 * answered in a second turn, a body that is not streamed, and its errors.
 */
static void test_dashscope_native_over_http(void **state)
{
    struct pfx f;
    const struct ms_request *r;
    const json_t *params;

    (void)state;
    fx_start(&f);
    fx_dashscope_native(&f);
    add_weather_tool(&f);
    pfx_script(&f, "{\"tool_calls\": [{\"id\": \"call_a\", \"name\": \"get_weather\", "
                   "\"arguments\": [\"{\\\"city\\\": \\\"\", \"浙江省杭州市\\\"}\"]}, "
                   "{\"id\": \"call_b\", \"name\": \"get_weather\", \"arguments\": "
                   "[\"{\\\"city\\\":\", \" \\\"上海市\\\"}\"]}], \"usage\": "
                   "{\"input_tokens\": 250, \"output_tokens\": 37}}");
    assert_rein_ok(rein_history_add_user(f.h, "杭州和上海现在的天气如何？"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_int_equal(rein_model_response_call_count(f.resp), 2);
    assert_string_equal(rein_model_call_id(rein_model_response_call(f.resp, 0)), "call_a");
    assert_string_equal(rein_model_call_raw_arguments(rein_model_response_call(f.resp, 0)),
                        "{\"city\": \"浙江省杭州市\"}");
    assert_string_equal(rein_model_call_raw_arguments(rein_model_response_call(f.resp, 1)),
                        "{\"city\": \"上海市\"}");
    assert_int_equal(rein_model_call_status(rein_model_response_call(f.resp, 1)),
                     REIN_MODEL_CALL_OK);
    assert_int_equal(rein_model_response_input_tokens(f.resp), 250);
    assert_int_equal(rein_model_response_output_tokens(f.resp), 37);
    assert_int_equal(rein_model_response_finish(f.resp), REIN_FINISH_TOOL_CALLS);
    assert_int_equal(fx_ev.starts, 2);
    r = ms_request(f.ms, 0);
    assert_string_equal(r->path, "/api/v1/services/aigc/text-generation/generation");
    assert_string_equal(ms_request_header(r, "x-dashscope-sse"), "enable");
    assert_true(r->stream);
    params = json_object_get(r->json, "parameters");
    assert_string_equal(json_string_value(json_object_get(params, "result_format")), "message");
    assert_true(json_is_true(json_object_get(params, "incremental_output")));
    assert_int_equal(json_array_size(json_object_get(params, "tools")), 1);
    assert_null(json_object_get(r->json, "messages"));

    /* The second turn carries both results; the server checks each call has its answer. */
    assert_rein_ok(rein_history_add_response(f.h, f.resp), NULL);
    assert_rein_ok(rein_history_add_tool_result(f.h, "call_a", "get_weather", "晴", false), NULL);
    assert_rein_ok(rein_history_add_tool_result(f.h, "call_b", "get_weather", "雨", false), NULL);
    pfx_script(&f, "{\"match\": {\"tool_result_contains\": \"雨\"}, \"text\": "
                   "[\"杭州晴，\", \"上海雨。\"]}");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "杭州晴，上海雨。");
    assert_string_equal(fx_ev.text.ptr, "杭州晴，上海雨。");

    /* Not streamed: one body, no SSE header, thinking off for Qwen3 as DashScope wants. */
    rein_model_request_set_stream(f.req, false);
    pfx_script(&f, "{\"text\": \"plain\"}");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "plain");
    r = ms_request(f.ms, 2);
    assert_false(r->stream);
    assert_null(ms_request_header(r, "x-dashscope-sse"));
    params = json_object_get(r->json, "parameters");
    assert_true(json_is_false(json_object_get(params, "enable_thinking")));

    /* A wrong key: DashScope's 401 body, its code and message kept. */
    ms_set_api_key(f.ms, "sk-other");
    pfx_script(&f, "{\"text\": \"never\"}");
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(f.err.detail, 401);
    assert_string_equal(
        json_string_value(json_object_get(rein_model_response_error(f.resp), "code")),
        "InvalidApiKey");
    fx_stop(&f);
}

/* DashScope's faults: a stream split into small pieces, an in-stream error event, a cut
 * stream retried, and 429 with Retry-After. */
static void test_dashscope_native_faults(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    fx_dashscope_native(&f);
    pfx_script(&f, "[{\"text\": [\"通义\", \"千问\"], \"times\": 1, \"fault\": "
                   "{\"chunk_bytes\": 3}}, {\"times\": 1, \"status\": 429, \"headers\": "
                   "{\"Retry-After\": \"0\"}}, {\"text\": \"after 429\", \"times\": 1}, "
                   "{\"text\": [\"a\", \"b\", \"c\"], \"times\": 1, \"fault\": "
                   "{\"error_after_events\": 1, \"error_event\": {\"code\": "
                   "\"InvalidParameter\", \"message\": \"bad input\"}}}, "
                   "{\"text\": [\"a\", \"b\"], \"times\": 1, \"fault\": "
                   "{\"cut_after_events\": 1}}, {\"text\": \"whole\", \"times\": 1}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "通义千问");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "after 429");
    assert_int_equal(fx_ev.retries, 1);
    assert_int_equal(pfx_send(&f), REIN_EPROVIDER);
    assert_string_equal(rein_model_response_text(f.resp), "a");
    assert_string_equal(
        json_string_value(json_object_get(rein_model_response_error(f.resp), "code")),
        "InvalidParameter");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "whole");
    assert_int_equal(ms_request_count(f.ms), 6);
    fx_stop(&f);
}

static void test_openai_json_body_over_http(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "openai-compatible");
    rein_model_request_set_stream(f.req, false);
    pfx_script(&f, "{\"text\": \"plain answer\"}");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "plain answer");
    assert_string_equal(fx_ev.text.ptr, "plain answer");
    assert_false(ms_request(f.ms, 0)->stream);
    assert_null(json_object_get(ms_request(f.ms, 0)->json, "stream_options"));
    fx_stop(&f);
}

static void test_anthropic_stream_over_http(void **state)
{
    struct pfx f;
    const struct ms_request *r;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "anthropic");
    add_weather_tool(&f);
    pfx_script(&f, "{\"reasoning\": [\"need \", \"weather\"], \"signature\": \"sig-1\", "
                   "\"text\": \"Checking.\", \"tool_calls\": [{\"id\": \"toolu_1\", \"name\": "
                   "\"get_weather\", \"arguments\": [\"{\\\"city\\\":\", \" \\\"Bergen\\\"}\"]}]}");
    assert_rein_ok(rein_history_add_system(f.h, "Be brief."), NULL);
    assert_rein_ok(rein_history_add_user(f.h, "Weather in Bergen?"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_reasoning(f.resp), "need weather");
    assert_string_equal(rein_model_call_raw_arguments(rein_model_response_call(f.resp, 0)),
                        "{\"city\": \"Bergen\"}");
    r = ms_request(f.ms, 0);
    assert_string_equal(r->path, "/v1/messages");
    assert_string_equal(ms_request_header(r, "x-api-key"), "sk-test");
    assert_string_equal(ms_request_header(r, "anthropic-version"), "2023-06-01");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r->json, "system"), 0), "text")),
                        "Be brief.");

    /* Two results in one user message, thinking with its signature before the tool_use. */
    assert_rein_ok(rein_history_add_response(f.h, f.resp), NULL);
    assert_rein_ok(rein_history_add_tool_result(f.h, "toolu_1", "get_weather", "rain", false),
                   NULL);
    pfx_script(&f, "{\"text\": \"Rain.\"}");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "Rain.");
    r = ms_request(f.ms, 1);
    assert_int_equal(r->status, 200);
    json_t *blocks =
        json_object_get(json_array_get(json_object_get(r->json, "messages"), 1), "content");
    assert_string_equal(json_string_value(json_object_get(json_array_get(blocks, 0), "type")),
                        "thinking");
    assert_string_equal(json_string_value(json_object_get(json_array_get(blocks, 0), "signature")),
                        "sig-1");
    fx_stop(&f);
}

static void test_ollama_native_over_http(void **state)
{
    struct pfx f;
    const rein_model_call *c;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "ollama");
    add_weather_tool(&f);
    pfx_script(&f, "{\"text\": \"ok\", \"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": "
                   "\"{\\\"city\\\": \\\"Oslo\\\"}\"}]}");
    assert_rein_ok(rein_history_add_user(f.h, "Weather?"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    c = rein_model_response_call(f.resp, 0);
    assert_non_null(c);
    assert_string_equal(rein_model_call_name(c), "get_weather");
    assert_memory_equal(rein_model_call_id(c), "call_", 5);
    assert_string_equal(json_string_value(json_object_get(rein_model_call_arguments(c), "city")),
                        "Oslo");
    assert_string_equal(ms_request(f.ms, 0)->path, "/api/chat");
    /* A made-up id is stable for the same request: asked again, the same id. */
    char first[64];
    snprintf(first, sizeof(first), "%s", rein_model_call_id(c));
    pfx_script(&f, "{\"text\": \"ok\", \"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": "
                   "\"{\\\"city\\\": \\\"Oslo\\\"}\"}]}");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_call_id(rein_model_response_call(f.resp, 0)), first);
    /* And the history goes back with arguments as an object. */
    assert_rein_ok(rein_history_add_response(f.h, f.resp), NULL);
    assert_rein_ok(rein_history_add_tool_result(f.h, first, "get_weather", "sunny", false), NULL);
    pfx_script(&f, "{\"text\": \"Sunny.\"}");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_non_null(strstr(ms_request(f.ms, 2)->body, "\"arguments\":{\"city\": \"Oslo\"}"));
    fx_stop(&f);
}

/* ---- the proxy of the environment ---------------------------------------------------- */

static const char *const proxy_vars[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                                         "all_proxy",  "ALL_PROXY",  "no_proxy",    "NO_PROXY"};

static void proxy_env_clear(void)
{
    for (size_t i = 0; i < sizeof(proxy_vars) / sizeof(proxy_vars[0]); i++)
        unsetenv(proxy_vars[i]);
}

/* Sends "hi" twice through a new provider made under the environment as it is now (the
 * provider reads it once; the second send reuses the pooled handle) and returns how many
 * requests the proxy received. */
static size_t sent_through(struct pfx *f, ms_server *proxy)
{
    rein_provider_free(f->p);
    f->p = NULL;
    pfx_provider(f);
    for (int i = 0; i < 2; i++) {
        pfx_script(f, "{\"text\": \"direct\"}");
        assert_rein_ok(ms_script(proxy, "{\"text\": \"proxied\"}", false, NULL), NULL);
        assert_rein_ok(pfx_send(f), &f->err);
    }
    return ms_request_count(proxy);
}

/*
 * libcurl's proxy rules hold although rein reads the variables once per provider: http_proxy
 * (not HTTP_PROXY) for an http:// upstream, else all_proxy or ALL_PROXY; no_proxy or NO_PROXY
 * sends matching hosts directly. The proxy is a real HTTP server on a socket (the model server
 * answers the absolute-form request a proxy gets).
 */
static void test_proxy_from_the_environment(void **state)
{
    struct pfx f;
    ms_server *proxy;
    rein_error err;
    char url[96], want[160];
    const struct ms_request *r;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "provider", "openai-compatible", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f.cfg, ms_openai_url(f.ms)), NULL);
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    proxy = ms_start(0, &err);
    assert_non_null(proxy);
    snprintf(url, sizeof(url), "%s", ms_url(proxy));
    proxy_env_clear();

    /* http_proxy: every request goes through the proxy, as an absolute-form request. */
    setenv("http_proxy", url, 1);
    assert_int_equal(sent_through(&f, proxy), 2);
    assert_string_equal(rein_model_response_text(f.resp), "proxied");
    r = ms_last_request(proxy);
    snprintf(want, sizeof(want), "%s/chat/completions", ms_openai_url(f.ms));
    assert_string_equal(r->path, want);
    assert_int_equal(ms_request_count(f.ms), 0);

    /* no_proxy naming the upstream's host (any case, with a port-less entry among others). */
    setenv("NO_PROXY", "example.com, 127.0.0.1", 1);
    assert_int_equal(sent_through(&f, proxy), 2);
    assert_string_equal(rein_model_response_text(f.resp), "direct");
    assert_int_equal(ms_request_count(f.ms), 2);
    setenv("no_proxy", "example.com", 1); /* the lower-case one is read first */
    assert_int_equal(sent_through(&f, proxy), 4);
    proxy_env_clear();

    /* HTTP_PROXY is not read for http:// (libcurl's rule); ALL_PROXY is. */
    setenv("HTTP_PROXY", "http://127.0.0.1:1", 1);
    assert_int_equal(sent_through(&f, proxy), 4);
    assert_string_equal(rein_model_response_text(f.resp), "direct");
    setenv("ALL_PROXY", url, 1);
    assert_int_equal(sent_through(&f, proxy), 6);
    assert_string_equal(rein_model_response_text(f.resp), "proxied");
    /* An empty variable counts as unset. */
    setenv("http_proxy", "", 1);
    unsetenv("ALL_PROXY");
    assert_int_equal(sent_through(&f, proxy), 6);
    proxy_env_clear();

    /* None set: direct. */
    assert_int_equal(sent_through(&f, proxy), 6);
    assert_string_equal(rein_model_response_text(f.resp), "direct");
    ms_stop(proxy);
    fx_stop(&f);
}

static void test_dashscope_turns_thinking_off_when_not_streaming(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "dashscope");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    pfx_script(&f, "[{\"text\": \"a\"}, {\"text\": \"b\"}]");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_null(json_object_get(ms_request(f.ms, 0)->json, "enable_thinking"));
    rein_model_request_set_stream(f.req, false);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_true(json_is_false(json_object_get(ms_request(f.ms, 1)->json, "enable_thinking")));
    fx_stop(&f);
}

static void test_text_calls_from_a_local_model_become_calls(void **state)
{
    struct pfx f;
    const rein_model_call *c;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "vllm");
    add_weather_tool(&f);
    pfx_script(&f, "{\"text\": [\"<tool_call>\\n{\\\"name\\\": \\\"get_weather\\\", \", "
                   "\"\\\"arguments\\\": {\\\"city\\\": \\\"Rome\\\"}}\\n</tool_call>\"], "
                   "\"finish_reason\": \"stop\"}");
    assert_rein_ok(rein_history_add_user(f.h, "Rome?"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    c = rein_model_response_call(f.resp, 0);
    assert_non_null(c);
    assert_true(rein_model_call_from_text(c));
    assert_string_equal(rein_model_call_raw_arguments(c), "{\"city\": \"Rome\"}");
    assert_string_equal(rein_model_response_text(f.resp), "");
    assert_string_equal(fx_ev.text.ptr, "");
    fx_stop(&f);
}

/* A long conversation's messages go out from where the history keeps them (libcurl reads
 * them in place instead of from one copied body): the server gets the same bytes as from a
 * recording provider, which sends one flat body, and the ids rein makes for calls written as
 * text, seeded from the body, are the same. */
static void test_long_history_sent_in_place_as_one_body(void **state)
{
    char *dir = test_tmpdir(), path[1024], text[96], ids[2][REIN_ID_MAX];
    rein_provider *rec;
    const struct ms_request *r[2];
    struct pfx f;

    (void)state;
    snprintf(path, sizeof(path), "%s/long.jsonl", dir);
    fx_start(&f);
    fx_provider(&f, "vllm");
    assert_rein_ok(rein_provider_config_set_record(f.cfg, path), NULL);
    rec = rein_provider_new(f.cfg, &f.err);
    assert_non_null(rec);
    add_weather_tool(&f);
    pfx_script(&f, "{\"times\": 0, \"text\": [\"<tool_call>\\n{\\\"name\\\": \\\"get_weather\\\", "
                   "\\\"arguments\\\": {\\\"city\\\": \\\"Rome\\\"}}\\n</tool_call>\"], "
                   "\"finish_reason\": \"stop\"}");
    for (int i = 0; i < 3000; i++) {
        snprintf(text, sizeof(text), "Weather in \"Rome\", day %d? \u00e5\u2603\n", i);
        assert_rein_ok(rein_history_add_user(f.h, text), NULL);
    }
    for (int k = 0; k < 2; k++) {
        rein_model_response_free(f.resp);
        f.resp = NULL;
        assert_rein_ok(rein_provider_send(k ? rec : f.p, f.req, f.h, &f.resp, &f.err), &f.err);
        assert_non_null(rein_model_response_call(f.resp, 0));
        snprintf(ids[k], sizeof(ids[k]), "%s",
                 rein_model_call_id(rein_model_response_call(f.resp, 0)));
        r[k] = ms_request(f.ms, (size_t)k);
        assert_non_null(r[k]);
        assert_non_null(r[k]->json); /* the server parsed and validated it */
        assert_int_equal(json_array_size(json_object_get(r[k]->json, "messages")), 3000);
    }
    assert_true(r[0]->body_len > 2 * 65536);
    assert_int_equal(r[0]->body_len, r[1]->body_len);
    assert_memory_equal(r[0]->body, r[1]->body, r[0]->body_len);
    assert_string_equal(ids[0], ids[1]);
    rein_provider_free(rec);
    fx_stop(&f);
    test_rmtree(dir);
    free(dir);
}

/* Appends `turns` exchanges to h: a question, a call, its result, an answer. */
static void add_exchanges(rein_history *h, int turns)
{
    char text[96], id[24];

    for (int i = 0; i < turns; i++) {
        json_t *asst;
        snprintf(text, sizeof(text), "Weather in \"Rome\", day %d? \u00e5\u2603\n", i);
        assert_rein_ok(rein_history_add_user(h, text), NULL);
        snprintf(id, sizeof(id), "call_%d", i);
        asst = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "role", "assistant", "content",
                         i % 2 ? "Looking." : "", "tool_calls", "id", id, "name", "get_weather",
                         "arguments", "{\"city\":\"Rome\"}");
        assert_rein_ok(rein_history_append(h, asst, NULL), NULL);
        json_decref(asst);
        assert_rein_ok(rein_history_add_tool_result(h, id, "get_weather", "{\"t\":21}", false),
                       NULL);
        asst = json_pack("{s:s, s:s}", "role", "assistant", "content", "Sunny, 21.");
        assert_rein_ok(rein_history_append(h, asst, NULL), NULL);
        json_decref(asst);
    }
}

/* The wires that group messages by role (Anthropic, Gemini) send a long conversation from
 * where the history keeps it too: the server gets the same bytes as from a recording
 * provider's flat body, and parses them. */
static void test_grouped_long_history_sent_in_place(void **state)
{
    static const char *const wires[][3] = {{"anthropic", "", "messages"},
                                           {"gemini", "/v1beta", "contents"}};
    char *dir = test_tmpdir(), path[1024], base[256];

    (void)state;
    for (size_t w = 0; w < REIN_ARRAY_SIZE(wires); w++) {
        const struct ms_request *r[2];
        rein_provider *rec;
        struct pfx f;
        fx_start(&f);
        snprintf(base, sizeof(base), "%s%s", ms_url(f.ms), wires[w][1]);
        snprintf(path, sizeof(path), "%s/long-%s.jsonl", dir, wires[w][0]);
        assert_rein_ok(rein_provider_config_set(f.cfg, "provider", wires[w][0], NULL), NULL);
        assert_rein_ok(rein_provider_config_set_base_url(f.cfg, base), NULL);
        f.p = rein_provider_new(f.cfg, &f.err);
        assert_non_null(f.p);
        assert_rein_ok(rein_provider_config_set_record(f.cfg, path), NULL);
        rec = rein_provider_new(f.cfg, &f.err);
        assert_non_null(rec);
        add_weather_tool(&f);
        pfx_script(&f, "{\"times\": 0, \"text\": \"Done.\"}");
        assert_rein_ok(rein_history_add_system(f.h, "Be brief."), NULL);
        add_exchanges(f.h, 750);
        assert_rein_ok(rein_history_add_user(f.h, "And tomorrow?"), NULL);
        for (int k = 0; k < 2; k++) {
            rein_model_response_free(f.resp);
            f.resp = NULL;
            assert_rein_ok(rein_provider_send(k ? rec : f.p, f.req, f.h, &f.resp, &f.err), &f.err);
            r[k] = ms_request(f.ms, (size_t)k);
            assert_non_null(r[k]);
            assert_non_null(r[k]->json);
            /* 750 exchanges: user, assistant, user (the result), assistant; then the last
             * question. */
            assert_int_equal(json_array_size(json_object_get(r[k]->json, wires[w][2])), 3001);
        }
        assert_true(r[0]->body_len > 2 * 65536);
        assert_int_equal(r[0]->body_len, r[1]->body_len);
        assert_memory_equal(r[0]->body, r[1]->body, r[0]->body_len);
        rein_provider_free(rec);
        fx_stop(&f);
    }
    test_rmtree(dir);
    free(dir);
}

/* A wire whose URL changes from request to request (Gemini names the method in the path)
 * sends each request to its own URL, also when one kept curl handle pair sends them all in
 * turn: the pair keeps its last URL parsed (CURLOPT_CURLU) and must parse a new one. */
static void test_each_request_goes_to_its_own_url(void **state)
{
    struct pfx f;
    char base[256];

    (void)state;
    fx_start(&f);
    snprintf(base, sizeof(base), "%s/v1beta", ms_url(f.ms));
    assert_rein_ok(rein_provider_config_set(f.cfg, "provider", "gemini", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f.cfg, base), NULL);
    pfx_provider(&f);
    pfx_script(&f, "{\"times\": 0, \"text\": \"Done.\"}");
    assert_rein_ok(rein_history_add_user(f.h, "Hello?"), NULL);
    for (int k = 0; k < 5; k++) {
        bool stream = k != 1 && k != 2;
        const struct ms_request *r;

        rein_model_request_set_stream(f.req, stream);
        assert_rein_ok(pfx_send(&f), &f.err);
        assert_string_equal(rein_model_response_text(f.resp), "Done.");
        r = ms_request(f.ms, (size_t)k);
        assert_non_null(r);
        assert_string_equal(r->path, stream ? "/v1beta/models/test-model:streamGenerateContent"
                                            : "/v1beta/models/test-model:generateContent");
        assert_string_equal(r->query, stream ? "alt=sse" : "");
    }
    fx_stop(&f);
}

/* A server that answers the first request, reads the second on the same kept-alive
 * connection and closes it without a word (as a server does that closed an idle connection
 * while the request was on its way), then answers on the next connection. */
struct stale_server {
    int lfd, port;
    struct rein_buf body[3]; /* the requests' bodies, in order */
    int n;
};

/* Reads one request's body into b; false when the connection ended first. */
static bool stale_read(int fd, struct rein_buf *b)
{
    char head[4096], *end = NULL, *cl;
    size_t got = 0, want;
    ssize_t r;

    while (!end && got < sizeof(head) - 1) {
        if ((r = recv(fd, head + got, sizeof(head) - 1 - got, 0)) <= 0)
            return false;
        got += (size_t)r;
        head[got] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    cl = end ? strcasestr(head, "\r\nContent-Length:") : NULL;
    if (!cl)
        return false;
    want = strtoul(cl + 17, NULL, 10);
    end += 4;
    if (rein_buf_add(b, end, got - (size_t)(end - head)))
        return false;
    while (b->len < want) {
        char chunk[65536];
        if ((r = recv(fd, chunk, sizeof(chunk), 0)) <= 0 || rein_buf_add(b, chunk, (size_t)r))
            return false;
    }
    return b->len == want;
}

static void *stale_run(void *arg)
{
    static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 "Content-Length: 94\r\n\r\n"
                                 "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
                                 "\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}";
    struct stale_server *s = arg;
    struct timeval tv = {.tv_sec = 5};

    setsockopt(s->lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)); /* bounds accept() too */
    for (int conn = 0; conn < 2 && s->n < 3; conn++) {
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            break;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        while (s->n < 3 && stale_read(fd, &s->body[s->n])) {
            if (++s->n == 2)
                break; /* the second request: closed unanswered */
            if (send(fd, answer, sizeof(answer) - 1, MSG_NOSIGNAL) < 0)
                break;
        }
        close(fd);
    }
    return NULL;
}

/* libcurl sends a request again on a new connection when a kept-alive one closes before any
 * answer; it rewinds a body read in place through rein's seek callback, so the request goes
 * out whole without rein retrying. */
static void test_long_history_sent_again_after_a_stale_connection(void **state)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    struct stale_server s;
    char base[64], text[64];
    pthread_t th;
    struct pfx f;

    (void)state;
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < 3; i++)
        rein_buf_init(&s.body[i], 0);
    s.lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s.lfd >= 0);
    assert_int_equal(bind(s.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(s.lfd, 4), 0);
    assert_int_equal(getsockname(s.lfd, (struct sockaddr *)&a, &alen), 0);
    s.port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&th, NULL, stale_run, &s), 0);

    fx_start(&f);
    snprintf(base, sizeof(base), "http://127.0.0.1:%d/v1", s.port);
    assert_rein_ok(rein_provider_config_set(f.cfg, "provider", "openai-compatible", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f.cfg, base), NULL);
    /* A body that cannot be sent again hangs libcurl's second try: fail instead. */
    assert_rein_ok(rein_provider_config_set(f.cfg, "total_timeout_ms", "4000", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(f.cfg, "max_retries", "0", NULL), NULL);
    f.p = rein_provider_new(f.cfg, &f.err);
    assert_non_null(f.p);
    rein_model_request_set_stream(f.req, false);
    for (int i = 0; i < 3000; i++) {
        snprintf(text, sizeof(text), "Message %d of a long conversation.", i);
        assert_rein_ok(rein_history_add_user(f.h, text), NULL);
    }
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "ok");
    assert_int_equal(fx_ev.retries, 0); /* libcurl's own second try, not rein's */
    pthread_join(th, NULL);
    assert_int_equal(s.n, 3);
    assert_true(s.body[0].len > 2 * 65536);
    for (int i = 1; i < 3; i++) {
        assert_int_equal(s.body[i].len, s.body[0].len);
        assert_memory_equal(s.body[i].ptr, s.body[0].ptr, s.body[0].len);
    }
    fx_stop(&f);
    for (int i = 0; i < 3; i++)
        rein_buf_release(&s.body[i]);
    close(s.lfd);
}

/* ---------------------------------------------------------------------------------------
 * Retries
 */

static void test_retry_429_honours_retry_after(void **state)
{
    struct pfx f;
    int64_t t0, waited;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "openai-compatible");
    pfx_script(&f, "[{\"status\": 429, \"headers\": {\"Retry-After\": \"1\"}, \"times\": 1},"
                   " {\"text\": \"after the wait\"}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "after the wait");
    assert_int_equal(ms_request_count(f.ms), 2);
    t0 = ms_request(f.ms, 0)->mono_ms;
    waited = ms_request(f.ms, 1)->mono_ms - t0;
    assert_true(waited >= 1000); /* Retry-After: 1 second */
    assert_int_equal(fx_ev.retries, 1);
    fx_stop(&f);
}

static void test_retry_503_and_529_with_retry_after_ms(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "anthropic");
    pfx_script(&f, "[{\"status\": 503, \"times\": 1},"
                   " {\"status\": 529, \"headers\": {\"retry-after-ms\": \"300\"}, \"times\": 1},"
                   " {\"text\": \"third time\"}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "third time");
    assert_int_equal(ms_request_count(f.ms), 3);
    assert_true(ms_request(f.ms, 2)->mono_ms - ms_request(f.ms, 1)->mono_ms >= 300);
    assert_int_equal(fx_ev.retries, 2);
    fx_stop(&f);
}

static void test_retries_stop_at_max_and_keep_the_error(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "max_retries", "1", NULL), NULL);
    fx_provider(&f, "openai-compatible");
    pfx_script(&f, "{\"status\": 500, \"error\": {\"message\": \"the model fell over\"}, "
                   "\"times\": 0}");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(f.err.detail, 500);
    assert_non_null(strstr(f.err.msg, "the model fell over"));
    assert_int_equal(ms_request_count(f.ms), 2);
    assert_non_null(f.resp);
    assert_string_equal(
        json_string_value(json_object_get(rein_model_response_error(f.resp), "message")),
        "the model fell over");
    fx_stop(&f);
}

static void test_client_errors_are_not_retried(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    ms_set_api_key(f.ms, "sk-other");
    fx_provider(&f, "openai-compatible");
    pfx_script(&f, "{\"text\": \"never\"}");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(f.err.detail, 401);
    assert_int_equal(ms_request_count(f.ms), 1);
    assert_non_null(rein_model_response_error(f.resp));
    fx_stop(&f);
}

static void test_overloaded_error_in_stream_is_retried(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "anthropic");
    pfx_script(&f, "[{\"text\": [\"par\", \"tial\"], \"times\": 1, \"fault\": "
                   "{\"error_after_events\": 3, \"error_event\": {\"type\": \"overloaded_error\","
                   " \"message\": \"Overloaded\"}}}, {\"text\": \"whole answer\"}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "whole answer");
    assert_string_equal(fx_ev.text.ptr, "whole answer");
    assert_int_equal(fx_ev.retries, 1);
    assert_null(rein_model_response_error(f.resp));
    fx_stop(&f);
}

/*
 * Issue 24: the transient errors each provider documents inside a stream are retried, not
 * only Anthropic's overloaded_error; errors that would fail again are not.
 */
static void test_transient_in_stream_errors_are_retried(void **state)
{
    static const struct {
        const char *preset, *first;
        bool retried;
    } cases[] = {
        {"anthropic", "{\"error_after_events\": 3, \"error_event\": {\"type\": \"api_error\"}}",
         true},
        {"anthropic",
         "{\"error_after_events\": 3, \"error_event\": {\"type\": \"rate_limit_error\"}}", true},
        {"openai-compatible", "{\"error_after_events\": 2}", true}, /* type server_error */
        {"openai-compatible",
         "{\"error_after_events\": 2, \"error_event\": {\"type\": \"tokens\", "
         "\"code\": \"rate_limit_exceeded\"}}",
         true},
        {"openai-compatible",
         "{\"error_after_events\": 2, \"error_event\": {\"type\": \"invalid_request_error\", "
         "\"code\": \"tool_use_failed\"}}",
         false},
        {"anthropic",
         "{\"error_after_events\": 3, \"error_event\": {\"type\": \"invalid_request_error\"}}",
         false},
        {"dashscope-native",
         "{\"error_after_events\": 1, \"error_event\": {\"code\": \"InternalError.Algo\"}}", true},
        {"dashscope-native",
         "{\"error_after_events\": 1, \"error_event\": {\"code\": \"Throttling.RateQuota\"}}",
         true},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pfx f;
        char script[512];
        fx_start(&f);
        if (strcmp(cases[i].preset, "dashscope-native") == 0)
            fx_dashscope_native(&f);
        else
            fx_provider(&f, cases[i].preset);
        snprintf(script, sizeof(script),
                 "[{\"text\": [\"par\", \"tial\"], \"times\": 1, \"fault\": %s}, "
                 "{\"text\": \"whole answer\"}]",
                 cases[i].first);
        pfx_script(&f, script);
        assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
        if (cases[i].retried) {
            assert_rein_ok(pfx_send(&f), &f.err);
            assert_string_equal(rein_model_response_text(f.resp), "whole answer");
            assert_int_equal(fx_ev.retries, 1);
            assert_int_equal(ms_request_count(f.ms), 2);
        } else {
            assert_int_equal(pfx_send(&f), REIN_EPROVIDER);
            assert_non_null(rein_model_response_error(f.resp));
            assert_int_equal(fx_ev.retries, 0);
            assert_int_equal(ms_request_count(f.ms), 1);
        }
        fx_stop(&f);
    }
}

/* OpenRouter reports an upstream failure inside the stream with the HTTP status as a number
 * in error.code and finish_reason "error": 502/503/408/429 are retried, others not. */
static void test_openrouter_in_stream_errors_by_numeric_code(void **state)
{
    static const struct {
        int code;
        bool retried;
    } cases[] = {{502, true}, {503, true}, {408, true}, {429, true}, {400, false}, {403, false}};

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pfx f;
        char script[1024];
        fx_start(&f);
        fx_provider(&f, "openai-compatible");
        snprintf(script, sizeof(script),
                 "[{\"times\": 1, \"stream\": true, \"body\": \"data: {\\\"id\\\":\\\"gen-1\\\","
                 "\\\"choices\\\":[{\\\"index\\\":0,\\\"delta\\\":{\\\"content\\\":\\\"par\\\"}}]}"
                 "\\n\\ndata: {\\\"id\\\":\\\"gen-1\\\",\\\"error\\\":{\\\"code\\\":%d,"
                 "\\\"message\\\":\\\"upstream failed\\\"},\\\"choices\\\":[{\\\"index\\\":0,"
                 "\\\"delta\\\":{\\\"content\\\":\\\"\\\"},\\\"finish_reason\\\":\\\"error\\\"}]}"
                 "\\n\\ndata: [DONE]\\n\\n\"}, {\"text\": \"whole answer\"}]",
                 cases[i].code);
        pfx_script(&f, script);
        assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
        if (cases[i].retried) {
            assert_rein_ok(pfx_send(&f), &f.err);
            assert_string_equal(rein_model_response_text(f.resp), "whole answer");
            assert_int_equal(ms_request_count(f.ms), 2);
        } else {
            assert_int_equal(pfx_send(&f), REIN_EPROVIDER);
            assert_int_equal(ms_request_count(f.ms), 1);
        }
        fx_stop(&f);
    }
}

/* ---------------------------------------------------------------------------------------
 * Connections
 */

#define SENDERS 12

struct sender {
    rein_provider *p;
    pthread_barrier_t *go;
    int failed;
};

/* Three sends one after the other, each starting with the other senders. */
static void *send_three(void *arg)
{
    struct sender *s = arg;

    for (int i = 0; i < 3; i++) {
        rein_model_request *req = rein_model_request_new();
        rein_history *h = rein_history_new();
        rein_model_response *resp = NULL;
        rein_error err;
        pthread_barrier_wait(s->go);
        if (!req || !h || rein_history_add_user(h, "hi") != REIN_OK ||
            rein_provider_send(s->p, req, h, &resp, &err) != REIN_OK)
            s->failed++;
        rein_model_response_free(resp);
        rein_history_free(h);
        rein_model_request_free(req);
    }
    return NULL;
}

/*
 * Sends that overlap keep their upstream connections for the next ones. libcurl's connection
 * cache was bounded at four per multi handle, so of 12 overlapping sends 8 closed their
 * connection and the next 8 opened a new one: 28 connections for 36 sends, where 12 do.
 */
static void test_overlapping_sends_reuse_their_connections(void **state)
{
    struct pfx f;
    struct sender s[SENDERS];
    pthread_t t[SENDERS];
    pthread_barrier_t go;
    json_t *ports = json_object();

    (void)state;
    fx_start(&f);
    fx_provider(&f, "openai-compatible");
    /* Long enough for the senders of one round to hold their connections at once. */
    pfx_script(&f, "{\"text\": \"ok\", \"times\": 0, \"delay_first_byte_ms\": 100}");
    assert_int_equal(pthread_barrier_init(&go, NULL, SENDERS), 0);
    for (int i = 0; i < SENDERS; i++) {
        s[i] = (struct sender){.p = f.p, .go = &go};
        assert_int_equal(pthread_create(&t[i], NULL, send_three, &s[i]), 0);
    }
    for (int i = 0; i < SENDERS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(s[i].failed, 0);
    }
    pthread_barrier_destroy(&go);
    assert_true(ms_wait(f.ms, 3 * SENDERS, 5000));
    for (size_t i = 0; i < 3 * SENDERS; i++) {
        char port[16];
        snprintf(port, sizeof(port), "%d", ms_request(f.ms, i)->client_port);
        assert_int_equal(json_object_set_new(ports, port, json_true()), 0);
    }
    /* At most one connection per sender: none was closed while another sender waited. */
    assert_in_range(json_object_size(ports), 1, SENDERS);
    /* One thread sending after them takes the handle pair given back last each time, and
     * its connection with it (connections stay with their pair): three sends, one of the
     * connections already open. */
    {
        struct sender one = {.p = f.p, .go = &go};
        char port[16];
        assert_int_equal(pthread_barrier_init(&go, NULL, 1), 0);
        send_three(&one);
        pthread_barrier_destroy(&go);
        assert_int_equal(one.failed, 0);
        assert_true(ms_wait(f.ms, 3 * SENDERS + 3, 5000));
        snprintf(port, sizeof(port), "%d", ms_request(f.ms, 3 * SENDERS)->client_port);
        assert_non_null(json_object_get(ports, port));
        for (size_t i = 3 * SENDERS + 1; i < 3 * SENDERS + 3; i++)
            assert_int_equal(ms_request(f.ms, i)->client_port,
                             ms_request(f.ms, 3 * SENDERS)->client_port);
    }
    json_decref(ports);
    fx_stop(&f);
}

/* ---------------------------------------------------------------------------------------
 * Timeouts
 */

static void test_connect_to_a_closed_port_fails_clearly(void **state)
{
    rein_provider_config *cfg = rein_provider_config_new();
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new();
    rein_model_response *resp = NULL;
    rein_provider *p;
    rein_error err;
    char url[64];

    (void)state;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", test_free_port());
    assert_rein_ok(rein_provider_config_set(cfg, "provider", "openai-compatible", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(cfg, "model", "m", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(cfg, "base_url", url, NULL), NULL);
    assert_rein_ok(rein_provider_config_set(cfg, "retry_base_ms", "5", NULL), NULL);
    p = rein_provider_new(cfg, &err);
    assert_rein_ok(rein_history_add_user(h, "hi"), NULL);
    assert_int_equal(rein_provider_send(p, req, h, &resp, &err), REIN_EIO);
    assert_null(resp);
    assert_non_null(strstr(err.msg, "could not connect"));
    assert_non_null(strstr(err.msg, url));
    rein_provider_free(p);
    rein_history_free(h);
    rein_model_request_free(req);
    rein_provider_config_free(cfg);
}

static void test_first_byte_timeout(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "first_byte_timeout_ms", "200", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(f.cfg, "max_retries", "1", NULL), NULL);
    fx_provider(&f, "openai-compatible");
    pfx_script(&f, "{\"text\": \"late\", \"delay_headers_ms\": 3000, \"times\": 0}");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_int_equal(pfx_send(&f), REIN_ETIMEDOUT);
    assert_non_null(strstr(f.err.msg, "first-byte"));
    assert_true(ms_wait(f.ms, 2, 5000)); /* one retry after the first timeout */
    fx_stop(&f);
}

static void test_idle_stream_is_dropped_and_asked_again(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "idle_timeout_ms", "200", NULL), NULL);
    fx_provider(&f, "openai-compatible");
    pfx_script(&f, "[{\"text\": [\"a\", \"b\", \"c\"], \"times\": 1, \"fault\": "
                   "{\"hang_after_events\": 2}}, {\"text\": \"abc\"}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "abc");
    assert_int_equal(fx_ev.retries, 1);
    assert_int_equal(ms_request_count(f.ms), 2);
    fx_stop(&f);
}

/* The idle timeout runs from the last bytes received, not from the start: a stream whose
 * pieces come well within it goes on for longer than it in all. */
static void test_steady_stream_is_not_idle(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "idle_timeout_ms", "1500", NULL), NULL);
    fx_provider(&f, "openai-compatible");
    pfx_script(&f, "{\"text\": [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\"], "
                   "\"delay_chunk_ms\": 400}");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "abcdefgh");
    assert_int_equal(fx_ev.retries, 0);
    assert_int_equal(ms_request_count(f.ms), 1);
    fx_stop(&f);
}

static void test_total_timeout_keeps_the_partial_reply(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "total_timeout_ms", "400", NULL), NULL);
    fx_provider(&f, "openai-compatible");
    pfx_script(&f, "{\"text\": [\"one \", \"two \", \"three \", \"four \", \"five \", \"six \", "
                   "\"seven \", \"eight \", \"nine \", \"ten \"], \"delay_chunk_ms\": 100}");
    assert_rein_ok(rein_history_add_user(f.h, "count"), NULL);
    assert_int_equal(pfx_send(&f), REIN_ETIMEDOUT);
    assert_non_null(strstr(f.err.msg, "total timeout"));
    assert_non_null(f.resp);
    assert_true(strncmp(rein_model_response_text(f.resp), "one", 3) == 0);
    assert_false(rein_model_response_is_complete(f.resp));
    fx_stop(&f);
}

/* ---------------------------------------------------------------------------------------
 * Dropped streams, malformed lines, unicode
 */

static void test_stream_cut_mid_tool_call_keeps_the_call(void **state)
{
    struct pfx f;
    const rein_model_call *c;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "openai-compatible");
    add_weather_tool(&f);
    pfx_script(&f,
               "{\"text\": \"Looking.\", \"tool_calls\": [{\"id\": \"call_9\", \"name\": "
               "\"get_weather\", \"arguments\": [\"{\\\"city\\\"\", \": \\\"Ka\", \"unas\\\"}\"]}],"
               " \"fault\": {\"cut_after_events\": 4}, \"times\": 0}");
    assert_rein_ok(rein_history_add_user(f.h, "Kaunas?"), NULL);
    assert_int_equal(pfx_send(&f), REIN_EPROVIDER);
    assert_non_null(strstr(f.err.msg, "after a tool call had begun"));
    assert_non_null(f.resp);
    assert_string_equal(rein_model_response_text(f.resp), "Looking.");
    c = rein_model_response_call(f.resp, 0);
    assert_string_equal(rein_model_call_id(c), "call_9");
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_INCOMPLETE);
    assert_null(rein_model_call_arguments(c));
    /* Not retried: a call had been delivered. */
    assert_int_equal(ms_request_count(f.ms), 1);
    /* The partial reply still goes into the history, and the call gets its result. */
    assert_rein_ok(rein_history_add_response(f.h, f.resp), NULL);
    assert_rein_ok(rein_history_add_tool_result(f.h, "call_9", "get_weather",
                                                "{\"error\": \"incomplete arguments\"}", true),
                   NULL);
    pfx_script(&f, "{\"text\": \"Sorry.\"}");
    assert_rein_ok(pfx_send(&f), &f.err);
    fx_stop(&f);
}

static void test_stream_dropped_before_a_call_is_retried_once(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "anthropic");
    pfx_script(&f, "[{\"text\": [\"Hel\", \"lo \", \"there\"], \"times\": 1, \"fault\": "
                   "{\"cut_after_events\": 3}}, {\"text\": \"Hello there\"}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "Hello there");
    assert_string_equal(fx_ev.text.ptr, "Hello there");
    assert_int_equal(fx_ev.retries, 1);
    assert_int_equal(ms_request_count(f.ms), 2);

    /* Twice: the turn ends with the partial text and provider_error. */
    pfx_script(&f, "{\"text\": [\"Hel\", \"lo \", \"there\"], \"times\": 0, \"fault\": "
                   "{\"cut_after_events\": 2}}");
    assert_int_equal(pfx_send(&f), REIN_EPROVIDER);
    assert_non_null(strstr(f.err.msg, "dropped twice"));
    assert_int_equal(ms_request_count(f.ms), 4);
    assert_non_null(f.resp);
    fx_stop(&f);
}

static void test_unicode_split_across_writes(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "openai-compatible");
    add_weather_tool(&f);
    pfx_script(&f,
               "{\"text\": [\"天气\", \"很好 😊\", \"é\"], \"tool_calls\": [{\"id\": \"c1\","
               " \"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"北京市\\\"}\"}],"
               " \"fault\": {\"chunk_bytes\": 1}}");
    assert_rein_ok(rein_history_add_user(f.h, "北京?"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "天气很好 😊é");
    assert_string_equal(
        json_string_value(json_object_get(
            rein_model_call_arguments(rein_model_response_call(f.resp, 0)), "city")),
        "北京市");
    fx_stop(&f);
}

static void test_malformed_sse_line(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "openai-compatible");
    add_weather_tool(&f);
    /* Before any call: the reply is asked for again. */
    pfx_script(&f, "[{\"text\": [\"a\", \"b\"], \"times\": 1, \"fault\": "
                   "{\"malformed_after_events\": 1}}, {\"text\": \"ab\"}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "ab");
    assert_int_equal(fx_ev.retries, 1);

    /* After a call began: the turn ends, naming the bad event. */
    pfx_script(&f, "{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"get_weather\", \"arguments\": "
                   "[\"{\\\"city\\\"\", \": \\\"Oslo\\\"}\"]}], \"fault\": "
                   "{\"malformed_after_events\": 2}}");
    if (pfx_send(&f) != REIN_EPROVIDER)
        fail_msg("%s", f.err.msg);
    assert_non_null(strstr(f.err.msg, "could not be decoded"));
    assert_non_null(strstr(f.err.msg, "event 3"));
    assert_int_equal(rein_model_call_status(rein_model_response_call(f.resp, 0)),
                     REIN_MODEL_CALL_INCOMPLETE);
    fx_stop(&f);
}

/*
 * core.h promises that err may be NULL. rein_provider_send's failure paths wrote into it
 * unchecked (an HTTP error's status, a decode failure, a cut stream): each of them with err
 * NULL still fails with its code and keeps what arrived.
 */
static void test_failures_without_an_error_record(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "max_retries", "0", NULL), NULL);
    fx_provider(&f, "openai-compatible");
    add_weather_tool(&f);
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    pfx_script(&f, "{\"status\": 500, \"error\": {\"message\": \"the model fell over\"}}");
    assert_int_equal(rein_provider_send(f.p, f.req, f.h, &f.resp, NULL), REIN_EHTTP);
    assert_string_equal(
        json_string_value(json_object_get(rein_model_response_error(f.resp), "message")),
        "the model fell over");
    rein_model_response_free(f.resp);
    f.resp = NULL;
    pfx_script(&f, "{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"get_weather\", \"arguments\": "
                   "[\"{\\\"city\\\"\", \": \\\"Oslo\\\"}\"]}], \"fault\": "
                   "{\"malformed_after_events\": 2}}");
    assert_int_equal(rein_provider_send(f.p, f.req, f.h, &f.resp, NULL), REIN_EPROVIDER);
    assert_int_equal(rein_model_call_status(rein_model_response_call(f.resp, 0)),
                     REIN_MODEL_CALL_INCOMPLETE);
    rein_model_response_free(f.resp);
    f.resp = NULL;
    pfx_script(&f, "{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"get_weather\", \"arguments\": "
                   "[\"{\\\"city\\\"\", \": \\\"Oslo\\\"}\"]}], \"fault\": "
                   "{\"cut_after_events\": 2}}");
    assert_true(rein_provider_send(f.p, f.req, f.h, &f.resp, NULL) < 0);
    fx_stop(&f);
}

/*
 * The upstream's request id and rate limits are kept with the response, and with a stream
 * they reach the caller's events before the reply's first event; what is not on the list
 * (set-cookie) and a value holding the key are not kept. After a retry the response has the
 * headers of the attempt that made it. An Anthropic error's request_id is the body's.
 */
static void test_response_keeps_the_upstreams_headers(void **state)
{
    const rein_model_headers *hd;
    struct pfx f;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "openai-compatible");
    pfx_script(&f, "[{\"status\": 429, \"times\": 1, \"headers\": {\"x-request-id\": \"req_429\","
                   " \"x-ratelimit-remaining-requests\": \"0\"}},"
                   " {\"text\": [\"a\", \"b\"], \"headers\": {\"x-request-id\": \"req_s1\","
                   " \"X-RateLimit-Remaining-Tokens\": \"99\", \"set-cookie\": \"a=b\","
                   " \"x-ratelimit-echo\": \"Bearer sk-test\"}}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_int_equal(fx_ev.retries, 1);
    assert_int_equal(fx_ev.headers, 1); /* the 2xx attempt's, not the 429's */
    assert_true(fx_ev.headers_first);
    assert_string_equal(rein_model_response_request_id(f.resp), "req_s1");
    hd = rein_model_response_headers(f.resp);
    assert_int_equal(rein_model_headers_count(hd), 2);
    assert_int_equal(fx_ev.nheaders, 2);
    assert_string_equal(rein_model_headers_get(hd, "x-ratelimit-remaining-tokens"), "99");
    assert_null(rein_model_headers_get(hd, "x-ratelimit-remaining-requests"));
    assert_null(rein_model_headers_get(hd, "set-cookie"));
    assert_null(rein_model_headers_get(hd, "x-ratelimit-echo"));
    fx_stop(&f);

    fx_start(&f);
    fx_provider(&f, "anthropic");
    rein_model_request_set_retries(f.req, 0);
    pfx_script(&f, "{\"status\": 429, \"headers\": {\"request-id\": \"req_hdr\","
                   " \"anthropic-ratelimit-tokens-remaining\": \"0\"}, \"body\":"
                   " \"{\\\"type\\\":\\\"error\\\",\\\"error\\\":{\\\"type\\\":"
                   "\\\"rate_limit_error\\\",\\\"message\\\":\\\"slow\\\"},"
                   "\\\"request_id\\\":\\\"req_body\\\"}\"}");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(fx_ev.headers, 0); /* an error's headers are the response's only */
    assert_string_equal(rein_model_response_request_id(f.resp), "req_body");
    hd = rein_model_response_headers(f.resp);
    assert_string_equal(rein_model_headers_get(hd, "request-id"), "req_hdr");
    assert_string_equal(rein_model_headers_get(hd, "anthropic-ratelimit-tokens-remaining"), "0");
    fx_stop(&f);
}

/* Error bodies that are not JSON: a proxy's HTML page, an empty body, plain text. */
static void test_error_bodies_that_are_not_json(void **state)
{
    static const char page[] =
        "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 "
        "Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
    const json_t *e;
    json_t *script;
    struct pfx f;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "max_retries", "0", NULL), NULL);
    fx_provider(&f, "openai-compatible");
    script = json_pack("[{s:i, s:s, s:s}, {s:i, s:s, s:s}, {s:i, s:s, s:s}]", "status", 502,
                       "content_type", "text/html", "body", page, "status", 503, "content_type",
                       "text/plain", "body", "", "status", 400, "content_type", "text/plain",
                       "body", "  upstream   request\n timeout \n");
    assert_non_null(script);
    char *text = json_dumps(script, 0);
    pfx_script(&f, text);
    free(text);
    json_decref(script);
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);

    /* The page's title is the message, on one line; the page itself is kept. */
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(f.err.detail, 502);
    assert_non_null(strstr(f.err.msg, ": 502 Bad Gateway"));
    assert_null(strchr(f.err.msg, '\n'));
    assert_null(strchr(f.err.msg, '<'));
    e = rein_model_response_error(f.resp);
    assert_string_equal(json_string_value(json_object_get(e, "message")), "502 Bad Gateway");
    assert_string_equal(json_string_value(json_object_get(e, "body")), page);

    /* An empty body says so. */
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(f.err.detail, 503);
    assert_non_null(strstr(f.err.msg, "the error body is empty"));

    /* Plain text: one line, spaces folded. */
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_int_equal(f.err.detail, 400);
    assert_non_null(strstr(f.err.msg, ": upstream request timeout"));
    e = rein_model_response_error(f.resp);
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "upstream request timeout");
    fx_stop(&f);
}

/* An "event: error" with a plain-text message after HTTP 200 is the provider's error, not an
 * undecodable stream. */
static void test_plain_text_error_event_over_http(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "openai-compatible");
    pfx_script(&f, "{\"content_type\": \"text/event-stream\", \"times\": 0, \"body\": "
                   "\"data: {\\\"choices\\\":[{\\\"index\\\":0,\\\"delta\\\":{"
                   "\\\"content\\\":\\\"Hi\\\"}}]}\\n\\nevent: error\\ndata: "
                   "upstream connect error\\n\\n\"}");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_int_equal(pfx_send(&f), REIN_EPROVIDER);
    assert_non_null(strstr(f.err.msg, "the provider reported an error: upstream connect error"));
    assert_string_equal(
        json_string_value(json_object_get(rein_model_response_error(f.resp), "message")),
        "upstream connect error");
    assert_int_equal(ms_request_count(f.ms), 1);
    fx_stop(&f);
}

/* ---------------------------------------------------------------------------------------
 * Cancellation
 */

struct canceller {
    rein_cancel *c;
    int64_t delay_ms;
    sem_t *after; /* when set: wait for it first (the first text arrived), then the delay */
};

static void *cancel_later(void *arg)
{
    struct canceller *k = arg;

    if (k->after) {
        /* never hang the test: the send's own checks then fail */
        struct timespec until = rein__deadline_ts(CLOCK_REALTIME, 10000);
        (void)sem_timedwait(k->after, &until);
    }
    rein_sleep_ms(k->delay_ms);
    rein_cancel_trigger(k->c, "user pressed stop");
    return NULL;
}

static void test_cancel_from_another_thread_returns_at_once(void **state)
{
    struct pfx f;
    struct canceller k = {0};
    sem_t seen;
    pthread_t t;
    int64_t t0, took;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "openai-compatible");
    k.c = rein_cancel_new();
    /* The cancel comes once the first text arrived (a fixed delay alone lost that race on a
     * loaded machine), and a little after, while the stream hangs. */
    k.delay_ms = 50;
    k.after = &seen;
    assert_int_equal(sem_init(&seen, 0, 0), 0);
    fx_ev.text_seen = &seen;
    rein_model_request_set_cancel(f.req, k.c);
    pfx_script(&f, "{\"text\": [\"a\", \"b\"], \"fault\": {\"hang_after_events\": 2}}");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    t0 = rein_now_ms();
    assert_int_equal(pthread_create(&t, NULL, cancel_later, &k), 0);
    assert_int_equal(pfx_send(&f), REIN_ECANCELED);
    took = rein_now_ms() - t0;
    pthread_join(t, NULL);
    /* The idle timeout is 60 s: returning within seconds means the cancel cut the wait. */
    assert_true(took < 10000);
    assert_non_null(strstr(f.err.msg, "user pressed stop"));
    assert_non_null(f.resp); /* what arrived before the cancel */
    assert_string_equal(rein_model_response_text(f.resp), "a");

    /* A cancelled handle stops the next send before it starts. */
    assert_int_equal(pfx_send(&f), REIN_ECANCELED);
    rein_cancel_unref(k.c);
    fx_stop(&f);
    sem_destroy(&seen);
}

/*
 * One provider keeps its curl handles between attempts: after a first-byte timeout, a cancel
 * mid-stream and a cut stream, each later attempt on the same provider still starts clean
 * (its own headers, a fresh decoder, no timeout or cancel left over) and succeeds.
 */
static void test_handles_reused_after_timeout_cancel_and_cut(void **state)
{
    struct pfx f;
    struct canceller k = {0};
    pthread_t t;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "first_byte_timeout_ms", "200", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(f.cfg, "max_retries", "0", NULL), NULL);
    fx_provider(&f, "openai-compatible");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);

    pfx_script(&f, "{\"text\": \"late\", \"delay_headers_ms\": 3000, \"times\": 1}");
    assert_int_equal(pfx_send(&f), REIN_ETIMEDOUT);
    pfx_script(&f, "{\"text\": [\"after \", \"timeout\"]}");
    rein_model_request_set_stream(f.req, true);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "after timeout");
    assert_string_equal(ms_request_header(ms_last_request(f.ms), "accept"),
                        "text/event-stream, application/x-ndjson, application/json");

    k.c = rein_cancel_new();
    k.delay_ms = 100;
    rein_model_request_set_cancel(f.req, k.c);
    pfx_script(&f, "{\"text\": [\"a\", \"b\"], \"fault\": {\"hang_after_events\": 2}}");
    assert_int_equal(pthread_create(&t, NULL, cancel_later, &k), 0);
    assert_int_equal(pfx_send(&f), REIN_ECANCELED);
    pthread_join(t, NULL);
    rein_model_request_set_cancel(f.req, NULL);
    rein_cancel_unref(k.c);

    pfx_script(&f, "{\"text\": \"after cancel\"}");
    rein_model_request_set_stream(f.req, false);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "after cancel");
    assert_string_equal(ms_request_header(ms_last_request(f.ms), "accept"), "application/json");

    /* A stream cut before any call is asked for once more, on the same provider. */
    rein_model_request_set_stream(f.req, true);
    pfx_script(&f, "[{\"text\": [\"x\", \"y\"], \"times\": 1, \"fault\": "
                   "{\"cut_after_events\": 1}}, {\"text\": \"after cut\"}]");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "after cut");
    assert_string_equal(ms_request_header(ms_last_request(f.ms), "authorization"),
                        "Bearer sk-test");
    fx_stop(&f);
}

/* ---------------------------------------------------------------------------------------
 * The OpenAI Responses API (issue 24)
 */

/*
 * A reasoning model over /v1/responses: reasoning summary, text and calls stream as typed
 * events; the request is input items with store false and the encrypted reasoning asked for;
 * the second turn carries the reasoning item back (encrypted) with the calls and their
 * outputs, which the server checks the way the API does (every output answers a call, every
 * call is answered, strict tools closed); then a body that is not streamed.
 */
static void test_responses_over_http(void **state)
{
    struct pfx f;
    const struct ms_request *r;
    const json_t *in, *tools;
    json_t *closed;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "model", "gpt-5-mini", NULL), NULL);
    fx_provider(&f, "openai-responses");
    add_weather_tool(&f);
    closed = json_pack("{s:s, s:{s:{s:s}}, s:[s], s:b}", "type", "object", "properties", "tz",
                       "type", "string", "required", "tz", "additionalProperties", 0);
    assert_rein_ok(rein_model_request_add_tool(f.req, "now", "The time", closed), NULL);
    json_decref(closed);
    pfx_script(&f, "{\"reasoning\": [\"Two \", \"cities.\"], \"signature\": \"gAAAenc\", "
                   "\"text\": [\"Let me \", \"check.\"], \"tool_calls\": [{\"id\": \"call_1\", "
                   "\"name\": \"get_weather\", \"arguments\": [\"{\\\"city\\\": \", "
                   "\"\\\"Oslo\\\"}\"]}, {\"id\": \"call_2\", \"name\": \"now\", \"arguments\": "
                   "\"{\\\"tz\\\": \\\"CET\\\"}\"}], \"usage\": {\"input_tokens\": 40, "
                   "\"output_tokens\": 12, \"reasoning_tokens\": 5, \"cached_tokens\": 16}}");
    assert_rein_ok(rein_history_add_user(f.h, "Weather and time in Oslo?"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "Let me check.");
    assert_string_equal(rein_model_response_reasoning(f.resp), "Two cities.");
    assert_int_equal(rein_model_response_call_count(f.resp), 2);
    assert_string_equal(rein_model_call_raw_arguments(rein_model_response_call(f.resp, 0)),
                        "{\"city\": \"Oslo\"}");
    assert_string_equal(rein_model_call_id(rein_model_response_call(f.resp, 1)), "call_2");
    assert_int_equal(rein_model_response_finish(f.resp), REIN_FINISH_TOOL_CALLS);
    assert_int_equal(rein_model_response_input_tokens(f.resp), 40);
    assert_int_equal(rein_model_response_output_tokens(f.resp), 12);
    assert_int_equal(rein_model_response_reasoning_tokens(f.resp), 5);
    assert_int_equal(rein_model_response_cached_tokens(f.resp), 16);
    assert_string_equal(fx_ev.text.ptr, "Let me check.");
    assert_int_equal(fx_ev.starts, 2);
    assert_int_equal(fx_ev.ends, 2);
    r = ms_request(f.ms, 0);
    assert_string_equal(r->path, "/v1/responses");
    assert_string_equal(r->format, "responses");
    assert_true(json_is_false(json_object_get(r->json, "store")));
    assert_string_equal(json_string_value(json_array_get(json_object_get(r->json, "include"), 0)),
                        "reasoning.encrypted_content");
    tools = json_object_get(r->json, "tools");
    assert_true(json_is_false(json_object_get(json_array_get(tools, 0), "strict")));
    assert_true(json_is_true(json_object_get(json_array_get(tools, 1), "strict")));

    /* The second turn: the server checks both calls are answered. */
    assert_rein_ok(rein_history_add_response(f.h, f.resp), NULL);
    assert_rein_ok(
        rein_history_add_tool_result(f.h, "call_1", "get_weather", "{\"temp\": 3}", false), NULL);
    assert_rein_ok(rein_history_add_tool_result(f.h, "call_2", "now", "12:00", false), NULL);
    pfx_script(&f, "{\"match\": {\"tool_result_contains\": \"12:00\", \"last_role\": "
                   "\"tool\"}, \"text\": \"3 degrees at noon.\"}");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "3 degrees at noon.");
    in = json_object_get(ms_request(f.ms, 1)->json, "input");
    assert_int_equal(json_array_size(in), 7); /* user, reasoning, text, 2 calls, 2 outputs */
    assert_string_equal(json_string_value(json_object_get(json_array_get(in, 1), "type")),
                        "reasoning");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(in, 1), "encrypted_content")), "gAAAenc");

    /* A history whose call has no output is refused, as the API does. */
    {
        rein_history *h = rein_history_new();
        json_t *asst =
            json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "role", "assistant", "content", "",
                      "tool_calls", "id", "call_x", "name", "now", "arguments", "{}");
        assert_rein_ok(rein_history_add_user(h, "x"), NULL);
        assert_rein_ok(rein_history_append(h, asst, NULL), NULL);
        json_decref(asst);
        assert_rein_ok(rein_history_add_user(h, "y"), NULL);
        rein_model_response_free(f.resp);
        f.resp = NULL;
        assert_int_equal(rein_provider_send(f.p, f.req, h, &f.resp, &f.err), REIN_EHTTP);
        assert_int_equal(f.err.detail, 400);
        assert_non_null(strstr(f.err.msg, "No tool output found for function call call_x"));
        rein_history_free(h);
    }

    /* Not streamed: one response object. */
    rein_model_request_set_stream(f.req, false);
    pfx_script(&f, "{\"text\": \"plain\", \"finish_reason\": \"length\"}");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "plain");
    assert_int_equal(rein_model_response_finish(f.resp), REIN_FINISH_LENGTH);
    assert_false(ms_last_request(f.ms)->stream);
    fx_stop(&f);
}

/*
 * A custom tool's call over /v1/responses (decision 0096): streamed as custom_tool_call_input
 * deltas or whole in a body, it is a call whose arguments are {"input": the text}, quotes,
 * newlines and escapes kept; the next turn sends it back as a custom_tool_call with its
 * custom_tool_call_output, which the server checks as the API does.
 */
static void test_responses_custom_calls(void **state)
{
    static const char input[] = "*** Begin Patch\n*** Add File: a.txt\n+say \"hi\" \\ \u00e9\n"
                                "*** End Patch";
    struct pfx f;
    const rein_model_call *c;
    const json_t *in, *item;
    json_t *args;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "model", "gpt-5", NULL), NULL);
    fx_provider(&f, "openai-responses");
    for (int streamed = 1; streamed >= 0; streamed--) {
        rein_history_truncate(f.h, 0);
        rein_model_request_set_stream(f.req, streamed);
        pfx_script(&f, "{\"tool_calls\": [{\"id\": \"call_p\", \"name\": \"apply_patch\", "
                       "\"input\": [\"*** Begin Patch\\n*** Add File: a.txt\\n\", \"+say "
                       "\\\"hi\\\" \\\\ \\u00e9\\n\", \"*** End Patch\"]}]}");
        assert_rein_ok(rein_history_add_user(f.h, "Add a.txt"), NULL);
        assert_rein_ok(pfx_send(&f), &f.err);
        assert_int_equal(rein_model_response_call_count(f.resp), 1);
        c = rein_model_response_call(f.resp, 0);
        assert_true(rein_model_call_custom(c));
        assert_string_equal(rein_model_call_name(c), "apply_patch");
        assert_string_equal(rein_model_call_id(c), "call_p");
        args = rein_json_parse(rein_model_call_raw_arguments(c),
                               strlen(rein_model_call_raw_arguments(c)), 0, &f.err);
        if (!args)
            fail_msg("%s: %s", f.err.msg, rein_model_call_raw_arguments(c));
        assert_string_equal(json_string_value(json_object_get(args, "input")), input);
        json_decref(args);
        assert_int_equal(rein_model_response_finish(f.resp), REIN_FINISH_TOOL_CALLS);

        assert_rein_ok(rein_history_add_response(f.h, f.resp), NULL);
        assert_rein_ok(rein_history_add_tool_result(f.h, "call_p", "apply_patch", "Done!", false),
                       NULL);
        pfx_script(&f, "{\"match\": {\"last_role\": \"tool\"}, \"text\": \"Added.\"}");
        assert_rein_ok(pfx_send(&f), &f.err);
        assert_string_equal(rein_model_response_text(f.resp), "Added.");
        in = json_object_get(ms_last_request(f.ms)->json, "input");
        assert_int_equal(json_array_size(in), 3);
        item = json_array_get(in, 1);
        assert_string_equal(json_string_value(json_object_get(item, "type")), "custom_tool_call");
        assert_string_equal(json_string_value(json_object_get(item, "call_id")), "call_p");
        assert_string_equal(json_string_value(json_object_get(item, "input")), input);
        item = json_array_get(in, 2);
        assert_string_equal(json_string_value(json_object_get(item, "type")),
                            "custom_tool_call_output");
        assert_string_equal(json_string_value(json_object_get(item, "output")), "Done!");
    }
    fx_stop(&f);
}

/* The Responses wire's faults: split, cut, malformed, in-stream errors (transient or not),
 * 429 and 503 with Retry-After. */
static void test_responses_faults(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "openai-responses");
    pfx_script(&f,
               "[{\"text\": [\"sp\", \"lit\"], \"times\": 1, \"fault\": {\"chunk_bytes\": 5}},"
               " {\"times\": 1, \"status\": 429, \"headers\": {\"Retry-After\": \"0\"}},"
               " {\"times\": 1, \"status\": 503, \"headers\": {\"retry-after-ms\": \"5\"}},"
               " {\"text\": \"after\", \"times\": 1},"
               " {\"text\": [\"a\", \"b\"], \"times\": 1, \"fault\": {\"cut_after_events\": 4}},"
               " {\"text\": \"whole\", \"times\": 1},"
               " {\"text\": [\"a\", \"b\"], \"times\": 1, \"fault\": "
               "{\"malformed_after_events\": 3}},"
               " {\"text\": \"mended\", \"times\": 1},"
               " {\"text\": [\"a\", \"b\"], \"times\": 1, \"fault\": {\"error_after_events\": 4}},"
               " {\"text\": \"retried\", \"times\": 1},"
               " {\"text\": [\"a\", \"b\"], \"times\": 1, \"fault\": {\"error_after_events\": 4, "
               "\"error_event\": {\"code\": \"invalid_prompt\", \"message\": \"no\"}}}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "split");
    assert_rein_ok(pfx_send(&f), &f.err); /* 429, 503, then the answer */
    assert_string_equal(rein_model_response_text(f.resp), "after");
    assert_int_equal(fx_ev.retries, 2);
    assert_rein_ok(pfx_send(&f), &f.err); /* cut before the end: asked once more */
    assert_string_equal(rein_model_response_text(f.resp), "whole");
    assert_rein_ok(pfx_send(&f), &f.err); /* a malformed event: asked once more */
    assert_string_equal(rein_model_response_text(f.resp), "mended");
    assert_rein_ok(pfx_send(&f), &f.err); /* server_error in the stream: retried */
    assert_string_equal(rein_model_response_text(f.resp), "retried");
    assert_int_equal(pfx_send(&f), REIN_EPROVIDER); /* invalid_prompt: not */
    assert_string_equal(
        json_string_value(json_object_get(rein_model_response_error(f.resp), "code")),
        "invalid_prompt");
    assert_int_equal(ms_request_count(f.ms), 11);
    fx_stop(&f);
}

/* Azure OpenAI against the scripted server: the deployment URL with api-version, the
 * api-key header, and an Entra ID token as a bearer. */
static void test_azure_over_http(void **state)
{
    struct pfx f;
    const struct ms_request *r;

    (void)state;
    fx_start(&f);
    assert_rein_ok(rein_provider_config_set(f.cfg, "provider", "azure", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(f.cfg, "deployment", "gpt4o-prod", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f.cfg, ms_url(f.ms)), NULL);
    ms_set_api_key(f.ms, NULL); /* the server checks Bearer keys; Azure's goes in api-key */
    f.p = rein_provider_new(f.cfg, &f.err);
    assert_non_null(f.p);
    pfx_script(&f, "{\"match\": {\"path\": \"/openai/deployments/gpt4o-prod/chat/completions\"},"
                   " \"format\": \"openai\", \"text\": \"from azure\"}");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "from azure");
    r = ms_request(f.ms, 0);
    assert_string_equal(r->path, "/openai/deployments/gpt4o-prod/chat/completions");
    assert_string_equal(ms_request_header(r, "api-key"), "sk-test");
    assert_null(ms_request_header(r, "authorization"));
    assert_string_equal(r->query, "api-version=2024-10-21");
    rein_provider_free(f.p);

    /* The Responses API on Azure with an Entra ID token. */
    assert_rein_ok(rein_provider_config_set(f.cfg, "provider", "azure-responses", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f.cfg, ms_url(f.ms)), NULL);
    assert_rein_ok(rein_provider_config_set(f.cfg, "auth", "bearer", NULL), NULL);
    ms_set_api_key(f.ms, "sk-test");
    f.p = rein_provider_new(f.cfg, &f.err);
    assert_non_null(f.p);
    pfx_script(&f, "{\"text\": \"responses on azure\"}");
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "responses on azure");
    r = ms_request(f.ms, 1);
    assert_string_equal(r->path, "/openai/v1/responses");
    assert_string_equal(ms_request_header(r, "authorization"), "Bearer sk-test");
    assert_null(ms_request_header(r, "api-key"));
    fx_stop(&f);
}

/* ---------------------------------------------------------------------------------------
 * Keys, recording and replay
 */

struct logbuf {
    struct rein_buf b;
};

static void log_sink(enum rein_log_level level, const char *where, const char *msg, void *ud)
{
    struct logbuf *l = ud;

    (void)level;
    if (rein_buf_addf(&l->b, "%s: %s\n", where ? where : "", msg) != REIN_OK)
        return;
}

static void test_keys_stay_out_of_recordings_logs_and_errors(void **state)
{
    static const char key[] = "sk-live-Q7vx9SECRET2k";
    char *dir = test_tmpdir();
    char path[1024];
    struct logbuf lb;
    struct pfx f;
    char *rec;

    (void)state;
    snprintf(path, sizeof(path), "%s/rec.jsonl", dir);
    rein_buf_init(&lb.b, 0);
    rein_log_set_sink(log_sink, &lb);
    rein_log_set_level(REIN_LOG_DEBUG);
    fx_start(&f);
    ms_set_api_key(f.ms, key);
    assert_rein_ok(rein_provider_config_set_api_key(f.cfg, key), NULL);
    assert_rein_ok(rein_provider_config_set_record(f.cfg, path), NULL);
    fx_provider(&f, "openai-compatible");
    pfx_script(&f, "[{\"status\": 429, \"times\": 1}, {\"text\": \"the key is safe\"}]");
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(ms_request_header(ms_request(f.ms, 1), "authorization"),
                        "Bearer sk-live-Q7vx9SECRET2k");
    /* A refused key: the error message does not repeat it. */
    ms_set_api_key(f.ms, "sk-something-else");
    pfx_script(&f, "{\"text\": \"no\"}");
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_null(strstr(f.err.msg, key));
    fx_stop(&f);
    rein_log_set_sink(NULL, NULL);
    rein_log_set_level(REIN_LOG_ERROR);

    rec = test_read_file(path, NULL);
    assert_non_null(rec);
    assert_non_null(strstr(rec, "the key is safe"));
    assert_null(strstr(rec, key));
    assert_null(strstr(rec, "SECRET"));
    assert_null(strstr(lb.b.ptr, "SECRET"));
    assert_non_null(strstr(lb.b.ptr, "retrying")); /* the log did say something */
    free(rec);
    rein_buf_release(&lb.b);
    test_rmtree(dir);
    free(dir);
}

/* A two-turn conversation: a tool call, then the answer. */
static rein_err converse(rein_provider *p, rein_model_request *req, rein_history *h, char *answer,
                         size_t size, rein_error *err)
{
    rein_model_response *r = NULL;
    rein_err rc;

    rc = rein_history_add_user(h, "Weather in Oslo?");
    if (!rc)
        rc = rein_provider_send(p, req, h, &r, err);
    if (rc)
        goto out;
    assert_int_equal(rein_model_response_call_count(r), 1);
    assert_rein_ok(rein_history_add_response(h, r), NULL);
    assert_rein_ok(rein_history_add_tool_result(h,
                                                rein_model_call_id(rein_model_response_call(r, 0)),
                                                "get_weather", "{\"temp\": 3}", false),
                   NULL);
    rein_model_response_free(r);
    r = NULL;
    rc = rein_provider_send(p, req, h, &r, err);
    if (!rc)
        snprintf(answer, size, "%s", rein_model_response_text(r));
out:
    rein_model_response_free(r);
    return rc;
}

/*
 * Records a two-turn session with the preset at path (the model server answers with a call,
 * then the text), then replays it without the server, which is gone by then. Returns the
 * replay's configuration, and in *req_out a request like the recorded one: both to free.
 */
static rein_provider_config *record_and_replay(const char *preset, const char *path,
                                               rein_model_request **req_out)
{
    char answer[128];
    rein_provider_config *cfg;
    rein_model_request *req;
    rein_history *h;
    rein_provider *p;
    rein_error err;
    struct pfx f;

    fx_start(&f);
    assert_rein_ok(rein_provider_config_set_record(f.cfg, path), NULL);
    if (strcmp(preset, "dashscope-native") == 0) {
        fx_dashscope_native(&f);
    } else if (strcmp(preset, "azure") == 0) {
        /* A deployment's URL; the key goes in api-key, which the server does not check. */
        assert_rein_ok(rein_provider_config_set(f.cfg, "provider", "azure", NULL), NULL);
        assert_rein_ok(rein_provider_config_set(f.cfg, "deployment", "gpt4o-prod", NULL), NULL);
        assert_rein_ok(rein_provider_config_set_base_url(f.cfg, ms_url(f.ms)), NULL);
        ms_set_api_key(f.ms, NULL);
        f.p = rein_provider_new(f.cfg, &f.err);
        assert_non_null(f.p);
    } else {
        fx_provider(&f, preset);
    }
    add_weather_tool(&f);
    pfx_script(&f,
               "[{\"tool_calls\": [{\"id\": \"call_5\", \"name\": \"get_weather\", "
               "\"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}]}, {\"text\": \"3 degrees.\"}]");
    assert_rein_ok(converse(f.p, f.req, f.h, answer, sizeof(answer), &err), &err);
    assert_string_equal(answer, "3 degrees.");
    fx_stop(&f);
    /* The key is nowhere in the recording, whatever header the preset sent it in. */
    char *text = test_read_file(path, NULL);
    assert_non_null(text);
    assert_null(strstr(text, "sk-test"));
    free(text);

    cfg = rein_provider_config_new();
    assert_rein_ok(rein_provider_config_set(cfg, "provider", "replay", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(cfg, "replay", path, NULL), NULL);
    p = rein_provider_new(cfg, &err);
    if (!p)
        fail_msg("%s", err.msg);
    assert_string_equal(rein_provider_wire(p), "replay");
    assert_string_equal(rein_provider_model(p), "test-model");
    req = rein_model_request_new();
    h = rein_history_new();
    json_t *s = schema();
    assert_rein_ok(rein_model_request_add_tool(req, "get_weather", "Weather for a city", s), NULL);
    json_decref(s);
    answer[0] = '\0';
    assert_rein_ok(converse(p, req, h, answer, sizeof(answer), &err), &err);
    assert_string_equal(answer, "3 degrees.");
    rein_history_free(h);
    rein_provider_free(p);
    *req_out = req;
    return cfg;
}

static void test_record_then_replay(void **state)
{
    char *dir = test_tmpdir();
    char path[1024], answer[128];
    rein_provider_config *cfg;
    rein_model_request *req;
    rein_history *h;
    rein_provider *p;
    rein_error err;

    (void)state;
    snprintf(path, sizeof(path), "%s/session.jsonl", dir);
    cfg = record_and_replay("anthropic", path, &req);

    /* The same agent with a changed question: the replay names the difference. */
    p = rein_provider_new(cfg, &err);
    h = rein_history_new();
    assert_rein_ok(rein_history_add_user(h, "Weather in Bergen?"), NULL);
    rein_model_response *r = NULL;
    assert_int_equal(rein_provider_send(p, req, h, &r, &err), REIN_EINVAL);
    assert_null(r);
    assert_non_null(strstr(err.msg, "request 1 differs"));
    assert_non_null(strstr(err.msg, "/messages/0/content/0/text"));
    assert_non_null(strstr(err.msg, "Oslo"));
    assert_non_null(strstr(err.msg, "Bergen"));
    rein_history_free(h);
    rein_provider_free(p);

    /* A recording runs out loudly. */
    p = rein_provider_new(cfg, &err);
    h = rein_history_new();
    answer[0] = '\0';
    assert_rein_ok(converse(p, req, h, answer, sizeof(answer), &err), &err);
    assert_int_equal(rein_provider_send(p, req, h, &r, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "request 3 has no recorded exchange"));
    rein_history_free(h);
    rein_provider_free(p);
    rein_model_request_free(req);
    rein_provider_config_free(cfg);
    test_rmtree(dir);
    free(dir);
}

/* The Responses wire recorded, then replayed without the server: the same answer. */
static void test_responses_record_then_replay(void **state)
{
    char *dir = test_tmpdir();
    char path[1024];
    rein_model_request *req;

    (void)state;
    snprintf(path, sizeof(path), "%s/responses.jsonl", dir);
    rein_provider_config_free(record_and_replay("openai-responses", path, &req));
    rein_model_request_free(req);
    test_rmtree(dir);
    free(dir);
}

/* DashScope's native API recorded, then replayed: its own body and wire name in the file. */
static void test_dashscope_native_record_then_replay(void **state)
{
    char *dir = test_tmpdir();
    char path[1024];
    rein_model_request *req;
    char *text;

    (void)state;
    snprintf(path, sizeof(path), "%s/dashscope.jsonl", dir);
    rein_provider_config_free(record_and_replay("dashscope-native", path, &req));
    text = test_read_file(path, NULL);
    assert_non_null(strstr(text, "\"dashscope\""));
    assert_non_null(strstr(text, "\"parameters\""));
    free(text);
    rein_model_request_free(req);
    test_rmtree(dir);
    free(dir);
}

/* Azure OpenAI (a deployment URL, the key in api-key) recorded, then replayed. */
static void test_azure_record_then_replay(void **state)
{
    char *dir = test_tmpdir();
    char path[1024];
    rein_model_request *req;
    char *text;

    (void)state;
    snprintf(path, sizeof(path), "%s/azure.jsonl", dir);
    rein_provider_config_free(record_and_replay("azure", path, &req));
    text = test_read_file(path, NULL);
    assert_non_null(strstr(text, "\"openai\""));
    free(text);
    rein_model_request_free(req);
    test_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------------------------------
 * The command
 */

static void test_cli_chat_takes_environment_and_flags(void **state)
{
    struct rein_proc_run_opts o;
    struct rein_proc_result res;
    char base[128], env_url[160];
    const char *argv[] = {test_rein_bin(), "provider",   "chat",   "--events",
                          "--model",       "flag-model", "Say hi", NULL};
    const char *env[] = {"REIN_PROVIDER=openai-compatible",
                         env_url,
                         "REIN_MODEL=env-model",
                         "REIN_API_KEY=sk-test",
                         "REIN_LOG=error",
                         NULL};
    struct pfx f;

    (void)state;
    fx_start(&f);
    snprintf(base, sizeof(base), "%s", ms_openai_url(f.ms));
    snprintf(env_url, sizeof(env_url), "REIN_BASE_URL=%s", base);
    pfx_script(&f, "{\"text\": [\"Hi \", \"there\"]}");
    memset(&o, 0, sizeof(o));
    o.proc.argv = argv;
    o.proc.env = env;
    o.timeout_ms = 30000;
    assert_rein_ok(rein_proc_run(&o, &res, NULL), NULL);
    if (res.exit_code != 0)
        fail_msg("rein provider chat exited %d: %s", res.exit_code, res.err.ptr);
    assert_non_null(strstr(res.out.ptr, "{\"event\":\"text_delta\",\"text\":\"Hi\"}"));
    assert_non_null(strstr(res.out.ptr, "\"text\": \"Hi there\""));
    /* The flag won over the environment. */
    assert_string_equal(json_string_value(json_object_get(ms_request(f.ms, 0)->json, "model")),
                        "flag-model");
    rein_proc_result_release(&res);

    /* A bad provider name is a usage error that says what is allowed. */
    const char *argv2[] = {test_rein_bin(), "provider", "chat", "--provider", "gpt5", "x", NULL};
    o.proc.argv = argv2;
    assert_rein_ok(rein_proc_run(&o, &res, NULL), NULL);
    assert_int_equal(res.exit_code, 2);
    assert_non_null(strstr(res.err.ptr, "unknown provider 'gpt5'"));
    rein_proc_result_release(&res);
    fx_stop(&f);
}

/* ---------------------------------------------------------------------------------------
 * Token counts (decision 0094)
 */

/* The provider (preset) at the model server, with a system prompt, a user turn, the weather
 * tool, max_tokens, a temperature and streaming set, as a gateway request would have them. */
static void count_fixture(struct pfx *f, const char *preset)
{
    char base[160];

    fx_start(f);
    if (!strcmp(preset, "gemini"))
        snprintf(base, sizeof(base), "%s/v1beta", ms_url(f->ms));
    else
        snprintf(base, sizeof(base), "%s",
                 strcmp(preset, "anthropic") ? ms_openai_url(f->ms) : ms_url(f->ms));
    assert_rein_ok(rein_provider_config_set(f->cfg, "provider", preset, NULL), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f->cfg, base), NULL);
    pfx_provider(f);
    add_weather_tool(f);
    rein_model_request_set_max_tokens(f->req, 100);
    rein_model_request_set_temperature(f->req, 0.5);
    rein_model_request_set_stream(f->req, true);
    assert_rein_ok(rein_history_add_system(f->h, "Be brief."), NULL);
    assert_rein_ok(rein_history_add_user(f->h, "Weather in Bergen?"), NULL);
}

/* Scripts path to answer 200 with body once, then a 429 with Retry-After 5, then a 200
 * without a count. */
static void count_script(struct pfx *f, const char *path, const char *body)
{
    json_t *s =
        json_pack("{sbs[{s{ss}sisssi}{s{ss}sis{ss}sssi}{s{ss}siss}]}", "validate", 0, "replies",
                  "match", "path", path, "status", 200, "body", body, "times", 1, "match", "path",
                  path, "status", 429, "headers", "Retry-After", "5", "body", "{}", "times", 1,
                  "match", "path", path, "status", 200, "body", "{\"ok\":true}");
    char *text = s ? json_dumps(s, JSON_COMPACT) : NULL;

    assert_non_null(text);
    pfx_script(f, text);
    free(text);
    json_decref(s);
}

/* The string at path of v, or "" (a compare then fails). */
static const char *str_at(const json_t *v, const char *path)
{
    const char *s = json_string_value(test_json_at(v, path));

    return s ? s : "";
}

/*
 * rein_provider_count_request() asks each counting wire's own count with the body its writer
 * makes, cut to what the count takes (system and tools kept; max_tokens, stream and the
 * temperature gone), and reads the number; an error status is a failed response with its
 * Retry-After; an answer without a number is REIN_EPROVIDER; a wire without a count asks
 * nothing.
 */
static void test_count_request_per_wire(void **state)
{
    static const struct {
        const char *preset, *path, *answer, *system, *tool;
    } wires[] = {
        {"anthropic", "/v1/messages/count_tokens", "{\"input_tokens\":12}", "system.0.text",
         "tools.0.name"},
        {"openai-responses", "/v1/responses/input_tokens",
         "{\"object\":\"response.input_tokens\",\"input_tokens\":12}", "input.0.content",
         "tools.0.name"},
        {"gemini", "/v1beta/models/test-model:countTokens", "{\"totalTokens\":12}",
         "generateContentRequest.systemInstruction.parts.0.text",
         "generateContentRequest.tools.0.functionDeclarations.0.name"},
    };
    rein_model_response *resp = NULL;
    struct rein_buf answer;
    int64_t tokens;
    struct pfx f;

    (void)state;
    for (size_t i = 0; i < sizeof(wires) / sizeof(wires[0]); i++) {
        const struct ms_request *q;
        count_fixture(&f, wires[i].preset);
        count_script(&f, wires[i].path, wires[i].answer);
        rein_buf_init(&answer, 0);
        assert_true(rein_provider_can_count(f.p));
        assert_rein_ok(
            rein_provider_count_request(f.p, f.req, f.h, &tokens, &answer, &resp, &f.err), &f.err);
        assert_int_equal(tokens, 12);
        assert_null(resp);
        assert_string_equal(answer.ptr, wires[i].answer);
        q = ms_last_request(f.ms);
        assert_string_equal(q->path, wires[i].path);
        for (const char *const *k = (const char *const[]){"max_tokens", "max_output_tokens",
                                                          "stream", "temperature", "store", NULL};
             *k; k++)
            if (json_object_get(q->json, *k))
                fail_msg("%s: the count got %s", wires[i].preset, *k);
        if (strcmp(str_at(q->json, wires[i].system), "Be brief."))
            fail_msg("%s: no system text at %s: %s", wires[i].preset, wires[i].system, q->body);
        assert_string_equal(str_at(q->json, wires[i].tool), "get_weather");
        assert_int_equal(rein_provider_count_request(f.p, f.req, f.h, &tokens, NULL, &resp, &f.err),
                         REIN_EHTTP);
        assert_int_equal(f.err.detail, 429);
        assert_non_null(resp);
        assert_int_equal(rein_model_response_retry_after_ms(resp), 5000);
        rein_model_response_free(resp);
        assert_int_equal(rein_provider_count_request(f.p, f.req, f.h, &tokens, NULL, &resp, &f.err),
                         REIN_EPROVIDER);
        assert_null(resp);
        assert_int_equal(tokens, -1);
        rein_buf_release(&answer);
        fx_stop(&f);
    }
    fx_start(&f);
    fx_provider(&f, "openai-compatible");
    assert_false(rein_provider_can_count(f.p));
    assert_int_equal(rein_provider_count_request(f.p, f.req, f.h, &tokens, NULL, &resp, &f.err),
                     REIN_ENOTSUP);
    assert_non_null(strstr(f.err.msg, "openai wire"));
    assert_int_equal(ms_request_count(f.ms), 0);
    fx_stop(&f);
}

/* The Bedrock provider at the model server, signing with AKIDTEST and secret (the server
 * checks against "AKIDTEST:right-secret"), or with key as a Bedrock API key when not NULL. */
#define BD_MODEL "anthropic.claude-3-5-sonnet-20240620-v1:0"
static void count_bedrock_fixture(struct pfx *f, const char *secret, const char *key)
{
    unsetenv("AWS_BEARER_TOKEN_BEDROCK");
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_SESSION_TOKEN");
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
    setenv("AWS_REGION", "us-east-1", 1);
    pfx_start(f, "AKIDTEST:right-secret", "5");
    assert_rein_ok(rein_provider_config_set(f->cfg, "provider", "bedrock", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_model(f->cfg, BD_MODEL), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f->cfg, ms_url(f->ms)), NULL);
    if (key)
        assert_rein_ok(rein_provider_config_set_api_key(f->cfg, key), NULL);
    pfx_provider(f);
    add_weather_tool(f);
    rein_model_request_set_max_tokens(f->req, 100);
    rein_model_request_set_temperature(f->req, 0.5);
    rein_model_request_set_stream(f->req, true);
    assert_rein_ok(rein_history_add_system(f->h, "Be brief."), NULL);
    assert_rein_ok(rein_history_add_user(f->h, "Weather in Bergen?"), NULL);
}

/*
 * Bedrock's CountTokens: rein_provider_count_request() posts the Converse writer's body under
 * input.converse (messages, system and toolConfig; no inferenceConfig) to
 * /model/MODEL/count-tokens, signed with SigV4 as Converse is (the model server recomputes the
 * signature and checks the body against CountTokens' documented shape), and reads inputTokens;
 * a ThrottlingException (429) comes back as a failed response with its Retry-After and its
 * type from x-amzn-ErrorType; a wrong secret is refused by the signature check; a Bedrock API
 * key goes as a bearer token instead of a signature.
 */
static void test_count_request_bedrock(void **state)
{
    static const char path[] = "/model/" BD_MODEL "/count-tokens";
    rein_model_response *resp = NULL;
    const struct ms_request *q;
    const json_t *conv;
    struct rein_buf answer;
    int64_t tokens;
    struct pfx f;
    char script[512];

    (void)state;
    count_bedrock_fixture(&f, "right-secret", NULL);
    snprintf(script, sizeof(script),
             "[{\"match\":{\"path\":\"%s\"},\"usage\":{\"input_tokens\":37},\"times\":1},"
             "{\"match\":{\"path\":\"%s\"},\"status\":429,\"headers\":{\"Retry-After\":"
             "\"5\"},\"times\":1},{\"match\":{\"path\":\"%s\"},\"body\":\"{}\"}]",
             path, path, path);
    pfx_script(&f, script);
    assert_true(rein_provider_can_count(f.p));
    rein_buf_init(&answer, 0);
    assert_rein_ok(rein_provider_count_request(f.p, f.req, f.h, &tokens, &answer, &resp, &f.err),
                   &f.err);
    assert_int_equal(tokens, 37);
    assert_null(resp);
    assert_string_equal(answer.ptr, "{\"inputTokens\":37}");
    q = ms_last_request(f.ms);
    if (q->status != 200 || q->error)
        fail_msg("the count was refused: %d %s: %s", q->status, q->error ? q->error : "", q->body);
    assert_string_equal(q->path, path);
    assert_non_null(
        strstr(ms_request_header(q, "authorization"), "AWS4-HMAC-SHA256 Credential=AKIDTEST/"));
    assert_non_null(strstr(ms_request_header(q, "authorization"), "/bedrock/aws4_request"));
    assert_int_equal(json_object_size(q->json), 1);
    assert_int_equal(json_object_size(json_object_get(q->json, "input")), 1);
    conv = test_json_at(q->json, "input.converse");
    assert_non_null(conv);
    assert_null(json_object_get(conv, "inferenceConfig"));
    assert_string_equal(str_at(conv, "system.0.text"), "Be brief.");
    assert_string_equal(str_at(conv, "messages.0.content.0.text"), "Weather in Bergen?");
    assert_string_equal(str_at(conv, "toolConfig.tools.0.toolSpec.name"), "get_weather");
    rein_buf_release(&answer);

    assert_int_equal(rein_provider_count_request(f.p, f.req, f.h, &tokens, NULL, &resp, &f.err),
                     REIN_EHTTP);
    assert_int_equal(f.err.detail, 429);
    assert_non_null(resp);
    assert_int_equal(rein_model_response_retry_after_ms(resp), 5000);
    assert_string_equal(json_string_value(json_object_get(rein_model_response_error(resp), "type")),
                        "ThrottlingException");
    rein_model_response_free(resp);
    assert_int_equal(rein_provider_count_request(f.p, f.req, f.h, &tokens, NULL, &resp, &f.err),
                     REIN_EPROVIDER);
    assert_non_null(strstr(f.err.msg, "inputTokens"));
    assert_int_equal(ms_request_count(f.ms), 3);
    fx_stop(&f);

    /* A wrong secret: the server's signature check refuses the count. */
    count_bedrock_fixture(&f, "wrong-secret", NULL);
    pfx_script(&f, "[{\"usage\":{\"input_tokens\":37}}]");
    assert_int_equal(rein_provider_count_request(f.p, f.req, f.h, &tokens, NULL, &resp, &f.err),
                     REIN_EHTTP);
    assert_int_equal(f.err.detail, 403);
    assert_string_equal(json_string_value(json_object_get(rein_model_response_error(resp), "type")),
                        "InvalidSignatureException");
    rein_model_response_free(resp);
    fx_stop(&f);

    /* A Bedrock API key: a bearer token, no signature, and the key not in the error. */
    count_bedrock_fixture(&f, "wrong-secret", "AKIDTEST:right-secret");
    pfx_script(&f, "[{\"usage\":{\"input_tokens\":9}}]");
    assert_rein_ok(rein_provider_count_request(f.p, f.req, f.h, &tokens, NULL, &resp, &f.err),
                   &f.err);
    assert_int_equal(tokens, 9);
    q = ms_last_request(f.ms);
    assert_string_equal(ms_request_header(q, "authorization"), "Bearer AKIDTEST:right-secret");
    assert_null(ms_request_header(q, "x-amz-date"));
    fx_stop(&f);
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("AWS_REGION");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_openai_stream_over_http),
    cmocka_unit_test(test_openai_json_body_over_http),
    cmocka_unit_test(test_response_keeps_the_upstreams_headers),
    cmocka_unit_test(test_anthropic_stream_over_http),
    cmocka_unit_test(test_count_request_per_wire),
    cmocka_unit_test(test_count_request_bedrock),
    cmocka_unit_test(test_ollama_native_over_http),
    cmocka_unit_test(test_proxy_from_the_environment),
    cmocka_unit_test(test_dashscope_turns_thinking_off_when_not_streaming),
    cmocka_unit_test(test_text_calls_from_a_local_model_become_calls),
    cmocka_unit_test(test_long_history_sent_in_place_as_one_body),
    cmocka_unit_test(test_long_history_sent_again_after_a_stale_connection),
    cmocka_unit_test(test_grouped_long_history_sent_in_place),
    cmocka_unit_test(test_each_request_goes_to_its_own_url),
    cmocka_unit_test(test_retry_429_honours_retry_after),
    cmocka_unit_test(test_retry_503_and_529_with_retry_after_ms),
    cmocka_unit_test(test_retries_stop_at_max_and_keep_the_error),
    cmocka_unit_test(test_client_errors_are_not_retried),
    cmocka_unit_test(test_overloaded_error_in_stream_is_retried),
    cmocka_unit_test(test_transient_in_stream_errors_are_retried),
    cmocka_unit_test(test_dashscope_native_over_http),
    cmocka_unit_test(test_dashscope_native_faults),
    cmocka_unit_test(test_responses_over_http),
    cmocka_unit_test(test_responses_custom_calls),
    cmocka_unit_test(test_responses_faults),
    cmocka_unit_test(test_azure_over_http),
    cmocka_unit_test(test_dashscope_native_record_then_replay),
    cmocka_unit_test(test_azure_record_then_replay),
    cmocka_unit_test(test_openrouter_in_stream_errors_by_numeric_code),
    cmocka_unit_test(test_connect_to_a_closed_port_fails_clearly),
    cmocka_unit_test(test_first_byte_timeout),
    cmocka_unit_test(test_idle_stream_is_dropped_and_asked_again),
    cmocka_unit_test(test_steady_stream_is_not_idle),
    cmocka_unit_test(test_total_timeout_keeps_the_partial_reply),
    cmocka_unit_test(test_stream_cut_mid_tool_call_keeps_the_call),
    cmocka_unit_test(test_stream_dropped_before_a_call_is_retried_once),
    cmocka_unit_test(test_unicode_split_across_writes),
    cmocka_unit_test(test_malformed_sse_line),
    cmocka_unit_test(test_overlapping_sends_reuse_their_connections),
    cmocka_unit_test(test_failures_without_an_error_record),
    cmocka_unit_test(test_error_bodies_that_are_not_json),
    cmocka_unit_test(test_plain_text_error_event_over_http),
    cmocka_unit_test(test_cancel_from_another_thread_returns_at_once),
    cmocka_unit_test(test_handles_reused_after_timeout_cancel_and_cut),
    cmocka_unit_test(test_keys_stay_out_of_recordings_logs_and_errors),
    cmocka_unit_test(test_record_then_replay),
    cmocka_unit_test(test_responses_record_then_replay),
    cmocka_unit_test(test_cli_chat_takes_environment_and_flags),
};

REIN_TEST_MAIN(tests)
