/*
 * The gateway (include/rein/gateway.h, src/gateway/routes.c) over real sockets: a server
 * started in the test with the gateway routes, its upstream the scripted model server (OpenAI's
 * wire, or Anthropic's for the cross-wire cases), libcurl and raw sockets as clients. Covers
 * the edges the SDK tests (tests/node/gateway.test.mjs) do not: malformed bodies, an oversized
 * one, unknown members on the same and on another wire, bad tools arrays and headers, text
 * passing through while the upstream still streams, a stream broken by the upstream after it
 * began, a busy conversation, the results a client reports landing in the ledger, the metrics,
 * the upstream key never reaching the client, and the server-side tool loop's limit.
 */
/* rein-test-timeout: 60 */
#include "agent_fixture.h"
#include "http_client.h"
#include "model_server.h"
#include "raw_http.h"
#include "test.h"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

struct fx {
    char *dir;
    ms_server *ms;
    rein_provider *p;
    rein_registry *reg;
    rein_store *store;
    rein_metrics *metrics;
    rein_gateway *gw;
    rein_server *srv;
    char base[64];
};

static struct fx *F;
/* The model server's Vertex AI address of Claude (tests/support/model_server_vertex.c). */
#define VX_PLACE "/v1/projects/p1/locations/us-east5/publishers/anthropic"
static unsigned next_wait_threads;   /* the next server's --wait-threads (0: the default) */
static bool next_forward_key;        /* the next gateway forwards the client's key */
static int next_background;          /* the next gateway's background_max (0: its default) */
static const char *next_server_keys; /* the next server's API keys (NULL: none) */
static bool next_model_from_client;  /* the next gateway asks the model the client names */
static int64_t next_keep_bytes;      /* the next gateway's keep_bytes (0: its default) */
static const char *next_reasoning;   /* the next upstream's configured reasoning_effort */
/* the next upstream's preset, model and path under the model server's URL (a provider of
 * decision 0105's; NULL: the wire's usual) */
static const char *next_preset, *next_model, *next_path;

static rein_provider *provider(const char *wire, const char *key)
{
    rein_provider_config *cfg = rein_provider_config_new();
    rein_provider *p;
    rein_error err;
    bool anthropic = strcmp(wire, "anthropic") == 0, gemini = strcmp(wire, "gemini") == 0;
    bool bedrock = strcmp(wire, "bedrock") == 0;
    bool vertex = strcmp(wire, "vertex-anthropic") == 0; /* Claude on Vertex AI */
    char base[160];

    assert_non_null(cfg);
    assert_rein_ok(rein_provider_config_set(cfg, "provider",
                                            anthropic || gemini || bedrock || vertex ||
                                                    strcmp(wire, "openai-responses") == 0
                                                ? wire
                                                : "openai-compatible",
                                            &err),
                   &err);
    snprintf(base, sizeof(base), "%s%s",
             anthropic || gemini || bedrock || vertex ? ms_url(F->ms) : ms_openai_url(F->ms),
             gemini   ? "/v1beta"
             : vertex ? VX_PLACE
                      : "");
    if (next_preset) {
        assert_rein_ok(rein_provider_config_set(cfg, "provider", next_preset, &err), &err);
        snprintf(base, sizeof(base), "%s%s", ms_url(F->ms), next_path ? next_path : "/v1");
    }
    assert_rein_ok(rein_provider_config_set_base_url(cfg, base), NULL);
    assert_rein_ok(rein_provider_config_set_model(cfg, next_model ? next_model : "gw-model"), NULL);
    next_preset = next_model = next_path = NULL;
    if (key)
        assert_rein_ok(rein_provider_config_set_api_key(cfg, key), NULL);
    if (next_reasoning)
        assert_rein_ok(rein_provider_config_set(cfg, "reasoning_effort", next_reasoning, &err),
                       &err);
    next_reasoning = NULL;
    p = rein_provider_new(cfg, &err);
    rein_provider_config_free(cfg);
    if (!p)
        fail_msg("provider: %s", err.msg);
    return p;
}

static void start_with(const char *wire, const char *key, int max_tool_rounds)
{
    struct rein_gateway_opts go = {0};
    rein_error err;
    char url[600];

    F = calloc(1, sizeof(*F));
    F->dir = test_tmpdir();
    F->ms = ms_start(0, &err);
    if (!F->ms)
        fail_msg("model server: %s", err.msg);
    if (key)
        ms_set_api_key(F->ms, key);
    F->p = provider(wire, key);
    F->reg = test_agent_registry(F->dir);
    F->metrics = rein_metrics_new();
    snprintf(url, sizeof(url), "sqlite:%s/rein.db", F->dir);
    assert_rein_ok(rein_store_open(url, NULL, &F->store, &err), &err);
    go.provider = F->p;
    go.reg = F->reg;
    go.store = F->store;
    go.metrics = F->metrics;
    go.max_tool_rounds = max_tool_rounds;
    go.forward_client_key = next_forward_key;
    next_forward_key = false;
    go.background_max = next_background;
    next_background = 0;
    go.model_from_client = next_model_from_client;
    next_model_from_client = false;
    go.keep_bytes = next_keep_bytes;
    next_keep_bytes = 0;
    F->gw = rein_gateway_new(&go, &err);
    if (!F->gw)
        fail_msg("gateway: %s", err.msg);
    F->srv = rein_server_new(&err);
    assert_non_null(F->srv);
    rein_server_set_port(F->srv, 0);
    rein_server_set_threads(F->srv, 4);
    rein_server_set_wait_threads(F->srv, next_wait_threads);
    next_wait_threads = 0;
    rein_server_set_body_limit(F->srv, 64 * 1024);
    rein_server_set_metrics(F->srv, F->metrics);
    if (next_server_keys)
        assert_rein_ok(rein_server_set_api_keys(F->srv, next_server_keys), NULL);
    next_server_keys = NULL;
    assert_rein_ok(rein_server_add_store_routes(F->srv, F->store, &err), &err);
    assert_rein_ok(rein_gateway_add_routes(F->srv, F->gw, &err), &err);
    assert_rein_ok(rein_server_start(F->srv, &err), &err);
    snprintf(F->base, sizeof(F->base), "http://127.0.0.1:%d", rein_server_port(F->srv));
}

static void start(void)
{
    start_with("openai", NULL, 0);
}

static int teardown(void **state)
{
    (void)state;
    if (!F)
        return 0;
    rein_server_free(F->srv);
    rein_gateway_free(F->gw);
    rein_store_free(F->store);
    rein_registry_free(F->reg);
    rein_provider_free(F->p);
    rein_metrics_free(F->metrics);
    ms_stop(F->ms);
    test_rmtree(F->dir);
    free(F->dir);
    free(F);
    F = NULL;
    return 0;
}

static const char *u(const char *path)
{
    static char url[1024];

    snprintf(url, sizeof(url), "%s%s", F->base, path);
    return url;
}

static void script(const char *text)
{
    rein_error err;

    ms_reset(F->ms);
    assert_rein_ok(ms_script(F->ms, text, false, &err), &err);
}

#define TOOLS                                                                                      \
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","                    \
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"         \
    "\"required\":[\"city\"]}}}]"
#define USER "\"messages\":[{\"role\":\"user\",\"content\":\"weather in Paris?\"}]"

/* POST /v1/chat/completions with extra headers (NULL-terminated, may be NULL). */
static void chat(const char *body, const char *const *headers, struct th_resp *r)
{
    const char *h[8] = {"Content-Type: application/json"};
    size_t n = 1;

    for (size_t i = 0; headers && headers[i] && n < 7; i++)
        h[n++] = headers[i];
    h[n] = NULL;
    th_http("POST", u("/v1/chat/completions"), body, h, r);
}

/* Asserts OpenAI's error shape: status, type, and that the message holds want. */
static void assert_oa_error(const struct th_resp *r, long status, const char *want)
{
    const json_t *e = json_object_get(r->json, "error");

    if (r->status != status || !json_is_object(e) ||
        !strstr(th_jstr(e, "message") ? th_jstr(e, "message") : "", want))
        fail_msg("want %ld with \"%s\", got %ld: %s", status, want, r->status, r->body);
    assert_non_null(json_object_get(e, "type"));
    assert_true(json_object_get(e, "param") != NULL && json_object_get(e, "code") != NULL);
}

/* ---- bad input -------------------------------------------------------------------------- */

static void test_malformed_bodies(void **state)
{
    static const struct {
        const char *body, *want, *param;
    } cases[] = {
        {"{\"model\":", "could not parse the JSON body", NULL},
        {"[1,2]", "expected an object", NULL},
        {"{\"model\":\"m\"}", "Missing required parameter: 'messages'", "messages"},
        {"{\"messages\":[]}", "model parameter", "model"},
        {"{\"model\":\"m\",\"messages\":[]}", "non-empty array", "messages"},
        {"{\"model\":\"m\",\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}",
         "Supported values", "messages[0].role"},
        {"{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", "tool_call_id",
         "messages[0].tool_call_id"},
        {"{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"a\","
         "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":{}}}]}]}",
         "expected a string", "messages[0].tool_calls[0].function.arguments"},
        {"{\"model\":\"m\"," USER ",\"stream\":\"yes\"}", "'stream'", "stream"},
        {"{\"model\":\"m\"," USER ",\"stream_options\":{\"include_usage\":true}}",
         "only allowed when 'stream'", "stream_options"},
        {"{\"model\":\"m\"," USER ",\"n\":2}", "n must be 1", "n"},
        {"{\"model\":\"m\"," USER ",\"functions\":[]}", "deprecated", "functions"},
        {"{\"model\":\"m\"," USER ",\"model\":\"again\"}", "could not parse", NULL},
    };
    struct th_resp r;

    (void)state;
    start();
    script("[]");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        chat(cases[i].body, NULL, &r);
        assert_oa_error(&r, 400, cases[i].want);
        if (cases[i].param)
            assert_string_equal(th_jstr(json_object_get(r.json, "error"), "param"), cases[i].param);
        th_resp_free(&r);
    }
    /* Anthropic's shape for its own clients. */
    th_http("POST", u("/v1/messages"), "{\"model\":\"m\"," USER "}", NULL, &r);
    assert_int_equal(r.status, 400);
    assert_string_equal(th_jstr(r.json, "type"), "error");
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "type"), "invalid_request_error");
    assert_non_null(strstr(th_jstr(json_object_get(r.json, "error"), "message"), "max_tokens"));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0); /* nothing bad went upstream */
}

static void test_oversized_body(void **state)
{
    size_t n = 80 * 1024;
    char *big = malloc(n + 200);
    struct th_resp r;

    (void)state;
    start();
    snprintf(big, n + 200, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"");
    memset(big + strlen(big), 'a', n);
    snprintf(big + strlen(big), 200, "\"}]}");
    chat(big, NULL, &r);
    th_assert_error(&r, 413, "payload_too_large");
    th_resp_free(&r);
    free(big);
    assert_int_equal(ms_request_count(F->ms), 0);
}

static void test_unknown_members(void **state)
{
    struct th_resp r;
    const struct ms_request *q;

    (void)state;
    start();
    /* The same wire: members rein does not read go upstream as they are. */
    script("[{\"text\":\"{}\"}]");
    chat("{\"model\":\"m\"," USER ",\"seed\":7,\"x_vendor_knob\":{\"a\":[1,2]},\"top_p\":0.5,"
         "\"stop\":\"END\",\"response_format\":{\"type\":\"json_object\"}}",
         NULL, &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_non_null(q);
    assert_int_equal(json_integer_value(json_object_get(q->json, "seed")), 7);
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(q->json, "x_vendor_knob"), "a")), 2);
    assert_true(json_real_value(json_object_get(q->json, "top_p")) == 0.5);
    assert_string_equal(json_string_value(json_array_get(json_object_get(q->json, "stop"), 0)),
                        "END");
    assert_string_equal(th_jstr(json_object_get(q->json, "response_format"), "type"),
                        "json_object");
    /* An Anthropic client's extended thinking (Claude Code's) has no place on this wire: it is
     * dropped and said so, not refused. */
    script("[{\"text\":\"ok\"}]");
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"m\",\"max_tokens\":4096,\"thinking\":{\"type\":\"enabled\","
            "\"budget_tokens\":2048},\"top_k\":40," USER "}",
            (const char *[]){"anthropic-version: 2023-06-01", NULL}, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "thinking"));
    /* top_k, a sampling hint other wires have no word for, likewise */
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "top_k"));
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_null(json_object_get(q->json, "thinking"));
    assert_null(json_object_get(q->json, "reasoning_effort"));
    teardown(NULL);

    /* Another wire: what it has too is translated, harmless ones dropped (and said so), the
     * rest refused by name. */
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"ok\"}]");
    chat("{\"model\":\"m\"," USER ",\"top_p\":0.5,\"stop\":[\"END\"],\"user\":\"u1\",\"seed\":3,"
         "\"reasoning_effort\":\"high\",\"verbosity\":\"low\"}",
         NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(th_header(&r, "x-rein-dropped"));
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "seed"));
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "reasoning_effort"));
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "verbosity"));
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(q->format, "anthropic");
    assert_null(json_object_get(q->json, "reasoning_effort"));
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(q->json, "stop_sequences"), 0)), "END");
    assert_null(json_object_get(q->json, "user"));
    /* a structured-output ask crosses (decision 0100); logit_bias has no form there */
    chat("{\"model\":\"m\"," USER ",\"logit_bias\":{\"50256\":-100}}", NULL, &r);
    assert_oa_error(&r, 400, "logit_bias");
    assert_non_null(strstr(r.body, "anthropic wire"));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 1);
}

/*
 * A chat completions client and an upstream of the Responses API, OpenAI's other wire: what
 * that API has too goes up in its shape (reasoning_effort as reasoning.effort, verbosity and
 * response_format under text, the same-named members as they are), and only what it lacks is
 * dropped or refused.
 */
static void test_chat_members_reach_a_responses_upstream(void **state)
{
    const struct ms_request *q;
    const json_t *text, *format;
    struct th_resp r;

    (void)state;
    start_with("openai-responses", NULL, 0);
    script("[{\"text\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]");
    chat("{\"model\":\"m\"," USER ",\"reasoning_effort\":\"high\",\"verbosity\":\"low\","
         "\"service_tier\":\"flex\",\"prompt_cache_key\":\"pk\",\"safety_identifier\":\"s1\","
         "\"metadata\":{\"run\":\"7\"},\"seed\":3,\"store\":true,\"response_format\":{\"type\":"
         "\"json_schema\",\"json_schema\":{\"name\":\"place\",\"strict\":true,\"schema\":{"
         "\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":["
         "\"city\"],\"additionalProperties\":false}}}}",
         NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(th_header(&r, "x-rein-dropped"), "[\"seed\",\"store\"]");
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(q->format, "responses");
    assert_string_equal(th_jstr(json_object_get(q->json, "reasoning"), "effort"), "high");
    text = json_object_get(q->json, "text");
    assert_string_equal(th_jstr(text, "verbosity"), "low");
    format = json_object_get(text, "format");
    assert_string_equal(th_jstr(format, "type"), "json_schema");
    assert_string_equal(th_jstr(format, "name"), "place");
    assert_true(json_is_true(json_object_get(format, "strict")));
    assert_string_equal(th_jstr(json_object_get(format, "schema"), "type"), "object");
    assert_string_equal(th_jstr(q->json, "service_tier"), "flex");
    assert_string_equal(th_jstr(q->json, "prompt_cache_key"), "pk");
    assert_string_equal(th_jstr(q->json, "safety_identifier"), "s1");
    assert_string_equal(th_jstr(json_object_get(q->json, "metadata"), "run"), "7");
    assert_null(json_object_get(q->json, "seed"));
    assert_true(json_is_false(json_object_get(q->json, "store"))); /* rein keeps the history */

    /* json_object goes as it is; a json_schema format without its schema is the API's 400;
     * what the Responses API has no form for stays refused by name */
    script("[{\"text\":\"{}\"}]");
    chat("{\"model\":\"m\"," USER ",\"response_format\":{\"type\":\"json_object\"}}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_null(th_header(&r, "x-rein-dropped"));
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(
        th_jstr(json_object_get(json_object_get(q->json, "text"), "format"), "type"),
        "json_object");
    chat("{\"model\":\"m\"," USER ",\"response_format\":{\"type\":\"json_schema\"}}", NULL, &r);
    assert_oa_error(&r, 400, "response_format.json_schema");
    th_resp_free(&r);
    chat("{\"model\":\"m\"," USER ",\"modalities\":[\"text\",\"audio\"]}", NULL, &r);
    assert_oa_error(&r, 400, "modalities");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 1);

    /* the two APIs write their errors alike: the upstream's goes to the client as it came */
    script("[{\"status\":400,\"error\":{\"type\":\"invalid_request_error\",\"code\":"
           "\"context_length_exceeded\",\"param\":\"input\",\"message\":\"Too long.\"}}]");
    chat("{\"model\":\"m\"," USER "}", NULL, &r);
    assert_int_equal(r.status, 400);
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "code"),
                        "context_length_exceeded");
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "message"), "Too long.");
    th_resp_free(&r);
}

static void test_bad_tools(void **state)
{
    static const struct {
        const char *tools, *want;
    } cases[] = {
        {"\"tools\":{}", "expected an array"},
        {"\"tools\":[{\"type\":\"code_interpreter\"}]", "function and custom tools only"},
        {"\"tools\":[{\"type\":\"custom\",\"custom\":{\"name\":\"x\",\"format\":{\"type\":"
         "\"json\"}}}]",
         "tools[0].custom.format"},
        {"\"tools\":[{\"type\":\"custom\",\"custom\":{\"name\":\"x\",\"format\":{\"type\":"
         "\"grammar\",\"grammar\":{\"syntax\":\"ebnf\",\"definition\":\"x\"}}}}]",
         "'lark' or 'regex'"},
        {"\"tools\":[{\"type\":\"function\"}]", "'tools[0].function'"},
        {"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get.weather\"}}]",
         "1-64 characters"},
        {"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"\"}}]", "1-64 characters"},
        {"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
         "{\"type\":\"string\"}}}]",
         "type \"object\""},
        {"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
         "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"bogus\"}}}}}]",
         "cannot check calls"},
        {"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}},{\"type\":\"function\","
         "\"function\":{\"name\":\"f\"}}]",
         "two tools are named"},
        {"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":[]}}]",
         "expected an object"},
        {"\"tool_choice\":{\"type\":\"allowed_tools\"}", "tool_choice"},
    };
    char body[1024];
    struct th_resp r;

    (void)state;
    start();
    script("[]");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(body, sizeof(body), "{\"model\":\"m\"," USER ",%s}", cases[i].tools);
        chat(body, NULL, &r);
        assert_oa_error(&r, 400, cases[i].want);
        th_resp_free(&r);
    }
    /* A declared tool named like a server-side one the request asks for. */
    chat("{\"model\":\"m\"," USER ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
         "\"echo\"}}]}",
         (const char *[]){"x-rein-tools: echo", NULL}, &r);
    assert_oa_error(&r, 400, "both one of the request's tools and a server-side tool");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0);
}

/*
 * The tools' registry is cached by the tools' bytes as sent: the same bytes check against the
 * same schema again, and other tools (a city that must be an integer) against their own
 * schema: written with other spacing, after a message whose text quotes a tools member, or
 * under a member name spelt with an escape (which only the parser reads).
 */
static void test_tools_cache_follows_the_tools_as_sent(void **state)
{
#define WEATHER(type)                                                                              \
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":"     \
    "\"object\",\"properties\":{\"city\":{\"type\":\"" type "\"}},\"required\":[\"city\"]}}}]"
    static const struct {
        const char *body;
        long status;
    } cases[] = {
        {"{\"model\":\"m\"," USER ",\"tools\":" WEATHER("string") "}", 200},
        {"{\"model\":\"m\"," USER ",\"tools\":" WEATHER("string") "}", 200},
        {"{\"model\":\"m\"," USER ",\"tools\": " WEATHER("integer") "}", 422},
        {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\\\"tools\\\":"
         "[{\\\"type\\\":\\\"function\\\"}]\"}],\"tools\":" WEATHER("integer") "}",
         422},
        {"{\"model\":\"m\"," USER ",\"\\u0074ools\":" WEATHER("integer") "}", 422},
        {"{\"model\":\"m\"," USER ",\"tools\":" WEATHER("string") "}", 200},
    };
#undef WEATHER
    struct th_resp r;

    (void)state;
    start();
    script("[{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"get_weather\",\"arguments\":"
           "\"{\\\"city\\\":\\\"Paris\\\"}\"}],\"times\":0}]");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        chat(cases[i].body, (const char *[]){"x-rein-on-invalid: error", NULL}, &r);
        if (r.status != cases[i].status)
            fail_msg("case %zu: want %ld, got %ld: %s", i, cases[i].status, r.status, r.body);
        th_resp_free(&r);
    }
}

/*
 * A body whose tools the cache already holds is parsed without them (the entry has what the
 * request needs) and the upstream is offered the entry's encoding: the upstream gets the same
 * bytes on every request, for both client wires and with a server-side tool, and a body
 * broken after or before its known tools is refused with the same words (line and column, the
 * tools holding characters outside ASCII) as when they were new.
 */
static void test_known_tools_change_nothing_on_the_wire(void **state)
{
#define PRETTY_TOOLS                                                                               \
    "\"tools\": [\n  {\"type\": \"function\", \"function\": {\"name\": \"get_weather\",\n"         \
    "   \"description\": \"Weather \\u00e9 by city\", \"parameters\": {\"type\": \"object\",\n"    \
    "   \"properties\": {\"city\": {\"type\": \"string\", \"description\": \"ville, "              \
    "\u00e9t\u00e9\"}},\n"                                                                         \
    "   \"required\": [\"city\"]}}}\n]"
#define LINE_TOOLS                                                                                 \
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":"    \
    "\"m\u00e9t\u00e9o \u2600\",\"parameters\":{\"type\":\"object\"}}}]"
    static const char *const bodies[] = {
        "{\"model\":\"m\"," USER ",\n" PRETTY_TOOLS ",\n\"temperature\": 0.5}",
        "{\"model\":\"m\",\"stream\":true," USER ",\n" PRETTY_TOOLS "}",
        "{\"model\":\"m\"," USER "," LINE_TOOLS "}",
    };
    /* Broken after the tools, before them, and after them on their line. */
    static const char *const broken[] = {
        "{\"model\":\"m\"," USER ",\n" PRETTY_TOOLS ",\n\"top_p\": }",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}],\n" PRETTY_TOOLS "}",
        "{\"model\":\"m\"," USER "," LINE_TOOLS ",\"top_p\": }",
    };
    static const char anthropic[] =
        "{\"model\":\"m\",\"max_tokens\":64," USER ",\"tools\":[{\"name\":\"get_weather\","
        "\"input_schema\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}]}";
#undef PRETTY_TOOLS
#undef LINE_TOOLS
    const char *const echo[] = {"x-rein-tools: echo", NULL};
    char *first_error[3] = {NULL, NULL, NULL};
    struct th_resp r;
    size_t n = 0;

    (void)state;
    start();
    script("[{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"get_weather\",\"arguments\":"
           "\"{\\\"city\\\":\\\"Paris\\\"}\"}],\"times\":0}]");
    /* Refused while the tools are new, then again once they are known. */
    for (int round = 0; round < 2; round++) {
        for (size_t k = 0; k < 3; k++) {
            chat(broken[k], NULL, &r);
            assert_int_equal(r.status, 400);
            if (!round)
                first_error[k] = strdup(r.body);
            else
                assert_string_equal(r.body, first_error[k]);
            th_resp_free(&r);
        }
        for (size_t b = 0; b < 3; b++) {
            for (int with_echo = 0; with_echo < 2; with_echo++) {
                chat(bodies[b], with_echo ? echo : NULL, &r);
                if (r.status != 200 || !strstr(r.body, "get_weather"))
                    fail_msg("body %zu: %ld %s", b, r.status, r.body);
                th_resp_free(&r);
            }
        }
        th_http("POST", u("/v1/messages"), anthropic, NULL, &r);
        assert_int_equal(r.status, 200);
        th_resp_free(&r);
        n += 7;
    }
    for (size_t k = 0; k < 3; k++)
        free(first_error[k]);
    /* Each request of the second round sent what the same request of the first sent. */
    assert_int_equal(ms_request_count(F->ms), n);
    for (size_t i = 0; i < n / 2; i++) {
        const struct ms_request *a = ms_request(F->ms, i), *b = ms_request(F->ms, i + n / 2);
        if (a->body_len != b->body_len || memcmp(a->body, b->body, a->body_len) != 0)
            fail_msg("request %zu: the upstream got\n%s\nthen\n%s", i, a->body, b->body);
    }
    /* The tools as the client declared them, the server-side one after them. */
    assert_non_null(strstr(ms_request(F->ms, 1)->body, "\"Weather \u00e9 by city\""));
    assert_non_null(strstr(ms_request(F->ms, 1)->body, "\"name\":\"echo\""));
}

static void test_bad_headers(void **state)
{
    static const char *const cases[][2] = {
        {"x-rein-on-invalid: retry", "reask, pass or error"},
        {"x-rein-max-reasks: 11", "0-10"},
        {"x-rein-max-reasks: two", "0-10"},
        {"x-rein-tools: no_such_tool", "rein has no tool"},
        {"x-rein-tools: wipe", "destructive"},
        {"x-rein-conversation: ../etc", "x-rein-conversation"},
        {"x-rein-fill-defaults: maybe", "true or false"},
    };
    struct th_resp r;

    (void)state;
    start();
    script("[]");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        chat("{\"model\":\"m\"," USER "}", (const char *[]){cases[i][0], NULL}, &r);
        assert_oa_error(&r, 400, cases[i][1]);
        th_resp_free(&r);
    }
    assert_int_equal(ms_request_count(F->ms), 0);
}

/* ---- streams ------------------------------------------------------------------------------ */

/* Reads from fd until want appears in what arrived (or timeout_ms); true when it did. */
static bool read_until(int fd, char *buf, size_t size, size_t *len, const char *want,
                       int timeout_ms)
{
    int64_t end = rein_now_ms() + timeout_ms;

    while (rein_now_ms() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t n;
        if (poll(&p, 1, 50) <= 0)
            continue;
        n = recv(fd, buf + *len, size - *len - 1, 0);
        if (n <= 0)
            return false;
        *len += (size_t)n;
        buf[*len] = '\0';
        if (strstr(buf, want))
            return true;
    }
    return false;
}

/* A text chunk's bytes, without stream_options.include_usage and with it ("usage":null in
 * every chunk but the last, as OpenAI sends them). */
static void test_text_chunk_bytes(void **state)
{
    static const char plain[] = "\"delta\":{\"content\":\" there\"},\"logprobs\":null,"
                                "\"finish_reason\":null}]}\n\n";
    static const char usage[] = "\"delta\":{\"content\":\" there\"},\"logprobs\":null,"
                                "\"finish_reason\":null}],\"usage\":null}\n\n";
    struct th_resp r;

    (void)state;
    start();
    script("[{\"text\":[\"Hi\",\" there\"]},{\"text\":[\"Hi\",\" there\"]}]");
    chat("{\"model\":\"m\",\"stream\":true," USER "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, plain));
    assert_null(strstr(r.body, "\"usage\":null"));
    th_resp_free(&r);
    chat("{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true}," USER "}",
         NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, usage));
    th_resp_free(&r);
}

static void test_text_streams_before_the_upstream_ends(void **state)
{
    char req[2048], buf[16384];
    size_t len = 0;
    int fd, n;
    rein_metric *f;
    const char *labels[] = {"gw-model", "cancelled", NULL};

    (void)state;
    start();
    /* The upstream sends its first text, then stalls: the client has the text meanwhile. */
    script(
        "[{\"text\":[\"Checking \",\"the sky\",\" now.\"],\"fault\":{\"hang_after_events\":3}}]");
    n = snprintf(req, sizeof(req),
                 "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 "application/json\r\nContent-Length: %zu\r\n\r\n%s",
                 strlen("{\"model\":\"m\",\"stream\":true," USER "}"),
                 "{\"model\":\"m\",\"stream\":true," USER "}");
    fd = rh_connect(rein_server_port(F->srv));
    assert_true(rh_send(fd, req, (size_t)n));
    assert_true(read_until(fd, buf, sizeof(buf), &len, "the sky", 10000));
    assert_non_null(strstr(buf, "text/event-stream"));
    assert_null(strstr(buf, "[DONE]"));
    /* Leaving cancels the upstream request. */
    close(fd);
    f = rein_metrics_family(F->metrics, REIN_METRIC_COUNTER, "rein_gateway_upstream_calls_total",
                            NULL, (const char *[]){"model", "outcome", NULL}, NULL, 0, NULL);
    for (int i = 0; i < 500 && rein_metric_value(f, labels) < 1; i++)
        rein_sleep_ms(10);
    assert_true(rein_metric_value(f, labels) == 1);
}

/* A sink that keeps the stream's events and what each flush found. */
struct held_sink {
    struct rein_buf events;  /* every event's data, one per line */
    struct rein_buf flushed; /* the events as they were at the last flush */
    struct rein_buf queued;  /* the events as they were at the first queue */
    int flushes, queues;
    size_t most_alloc; /* the largest frames buffer handed over (sink.stream_frames) */
    bool done;         /* the stream ended ([DONE] was given) */
    rein_cancel *cancel;
};

static rein_err held_header(void *data, const char *name, const char *value)
{
    (void)data;
    (void)name;
    (void)value;
    return REIN_OK;
}

static rein_err held_reply(void *data, int status, const char *content_type, const char *body,
                           size_t len)
{
    (void)data;
    (void)content_type;
    fail_msg("the stream was answered as a whole: %d %.*s", status, (int)len, body);
    return REIN_EINVAL;
}

static rein_err held_start(void *data)
{
    (void)data;
    return REIN_OK;
}

static rein_err held_event(void *data, const char *event, const char *text, size_t len)
{
    struct held_sink *s = data;

    if (len == 6 && memcmp(text, "[DONE]", 6) == 0)
        s->done = true;
    /* a named event (Anthropic's) with its name before its data */
    if (event && (rein_buf_adds(&s->events, event) || rein_buf_addch(&s->events, '\t')))
        return REIN_ENOMEM;
    return rein_buf_add(&s->events, text, len) || rein_buf_addch(&s->events, '\n') ? REIN_ENOMEM
                                                                                   : REIN_OK;
}

/* The gateway's own frames (sink.stream_frames): each frame's data as held_event takes it. */
static rein_err held_frames(void *data, struct rein_buf *frames)
{
    struct held_sink *s = data;
    const char *p = frames->ptr, *end = frames->ptr + frames->len;
    rein_err rc = REIN_OK;

    if (frames->alloc > s->most_alloc)
        s->most_alloc = frames->alloc;
    while (!rc && p < end) {
        const char *nl = strstr(p, "\n\n");
        char event[64] = "";
        assert_non_null(nl);
        if (strncmp(p, "event: ", 7) == 0) {
            size_t n = strcspn(p + 7, "\n");
            assert_in_range(n, 1, sizeof(event) - 1);
            memcpy(event, p + 7, n);
            event[n] = '\0';
            p += 7 + n + 1;
        }
        assert_memory_equal(p, "data: ", 6);
        rc = held_event(data, event[0] ? event : NULL, p + 6, (size_t)(nl - p - 6));
        p = nl + 2;
    }
    rein_buf_reset(frames);
    return rc;
}

/* The client has seen the text it was waiting for: it goes away, as test_text_streams... */
static rein_err held_flush(void *data)
{
    struct held_sink *s = data;

    s->flushes++;
    rein_buf_reset(&s->flushed);
    if (rein_buf_add(&s->flushed, s->events.ptr, s->events.len))
        return REIN_ENOMEM;
    if (s->events.len && strstr(s->events.ptr, "the sky"))
        rein_cancel_trigger(s->cancel, "the client has what it wanted");
    return REIN_OK;
}

/* The events as they are when the gateway hands them on before its records (sink.queue). */
static rein_err held_queue(void *data)
{
    struct held_sink *s = data;

    if (s->queues++ == 0 && rein_buf_add(&s->queued, s->events.ptr, s->events.len))
        return REIN_ENOMEM;
    return REIN_OK;
}

struct watchdog {
    rein_cancel *done, *call;
};

/* Ends a hung test: cancels the call after 20 s unless done first. */
static void *watchdog_main(void *arg)
{
    struct watchdog *w = arg;

    if (!rein_cancel_wait(w->done, 20000))
        rein_cancel_trigger(w->call, "watchdog");
    return NULL;
}

/* Serves body of the client's wire api through a held_sink (its buffers made here;
 * held_release frees them), with sink.queue when queue is set, and sink.stream_frames when
 * frames is. */
static rein_err held_serve_api(struct held_sink *s, enum rein_gateway_api api, const char *body,
                               bool queue, bool frames)
{
    struct rein_gateway_call call = {
        .api = api, .body = body, .len = strlen(body), .cancel = s->cancel};
    struct rein_gateway_sink sink = {
        .header = held_header,
        .reply = held_reply,
        .stream_start = held_start,
        .stream_event = held_event,
        .flush = held_flush,
        .queue = queue ? held_queue : NULL,
        .data = s,
        .stream_frames = frames ? held_frames : NULL,
    };

    rein_buf_init(&s->events, 0);
    rein_buf_init(&s->flushed, 0);
    rein_buf_init(&s->queued, 0);
    return rein_gateway_serve(F->gw, &call, &sink);
}

/* held_serve_api() for an OpenAI client. */
static rein_err held_serve(struct held_sink *s, const char *body, bool queue, bool frames)
{
    return held_serve_api(s, REIN_GATEWAY_OPENAI, body, queue, frames);
}

static void held_release(struct held_sink *s)
{
    rein_buf_release(&s->events);
    rein_buf_release(&s->flushed);
    rein_buf_release(&s->queued);
    rein_cancel_unref(s->cancel);
}

/*
 * A sink that holds events (sink.flush set) is flushed before the gateway waits for the
 * upstream's next bytes: the events of what arrived so far reach the client while the upstream
 * stalls, never later (without the flush they would wait for the stream's end, which never
 * comes here).
 */
static void held_flushed_before_each_wait(bool frames)
{
    struct held_sink s = {.cancel = rein_cancel_new()};
    struct watchdog w = {.done = rein_cancel_new(), .call = s.cancel};
    pthread_t th;

    start();
    script(
        "[{\"text\":[\"Checking \",\"the sky\",\" now.\"],\"fault\":{\"hang_after_events\":3}}]");
    assert_int_equal(pthread_create(&th, NULL, watchdog_main, &w), 0);
    assert_rein_ok(held_serve(&s, "{\"model\":\"m\",\"stream\":true," USER "}", false, frames),
                   NULL);
    rein_cancel_trigger(w.done, "served");
    pthread_join(th, NULL);
    assert_string_equal(rein_cancel_reason(s.cancel), "the client has what it wanted");
    assert_true(s.flushes >= 1);
    assert_non_null(strstr(s.flushed.ptr, "\"content\":\"Checking"));
    assert_non_null(strstr(s.flushed.ptr, "the sky\""));
    assert_false(s.done);
    held_release(&s);
    rein_cancel_unref(w.done);
}

static void test_held_events_are_flushed_before_each_wait(void **state)
{
    (void)state;
    held_flushed_before_each_wait(false);
}

/* The same with the gateway framing the events itself (sink.stream_frames): what it framed is
 * handed over before each flush. */
static void test_held_frames_are_handed_before_each_wait(void **state)
{
    (void)state;
    held_flushed_before_each_wait(true);
}

/*
 * A sink that holds events is handed them (sink.queue) when the upstream's reply is complete,
 * before the gateway records it (a store write may wait): the text and the call, checked as it
 * completed; [DONE] comes with the end.
 */
static void held_queued_before_the_records(bool frames)
{
    struct held_sink s = {.cancel = rein_cancel_new()};

    start();
    script("[{\"text\":[\"Checking \",\"the weather\"],\"tool_calls\":[{\"name\":\"get_weather\","
           "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]}]");
    assert_rein_ok(
        held_serve(&s, "{\"model\":\"m\",\"stream\":true," USER "," TOOLS "}", true, frames), NULL);
    assert_true(s.done);
    assert_int_equal(s.queues, 2); /* after the reply, and before the answer's record */
    assert_non_null(strstr(s.queued.ptr, "the weather\""));
    assert_non_null(strstr(s.queued.ptr, "get_weather")); /* checked as it completed */
    assert_null(strstr(s.queued.ptr, "[DONE]"));
    held_release(&s);
}

static void test_held_events_are_queued_before_the_records(void **state)
{
    (void)state;
    held_queued_before_the_records(false);
}

/* The same with the gateway's own frames: handed over before each queue, the rest at the end. */
static void test_held_frames_are_handed_before_the_records(void **state)
{
    (void)state;
    held_queued_before_the_records(true);
}

/*
 * The frames buffer is as large as a stream needs (decision 0075): a short stream's frames fit
 * in 4 KiB, and a long one's batches in 64 KiB (before, every stream's took 128 KiB), the
 * text whole and in order across the growth.
 */
static void test_held_frames_buffer_grows_with_the_stream(void **state)
{
    struct held_sink s = {.cancel = rein_cancel_new()};
    char long_text[40 * 1024 + 1], *script_text;
    struct rein_buf got;
    const char *p;

    (void)state;
    start();
    script("[{\"text\":[\"Checking \",\"the weather\"],\"tool_calls\":[{\"name\":\"get_weather\","
           "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]}]");
    assert_rein_ok(
        held_serve(&s, "{\"model\":\"m\",\"stream\":true," USER "," TOOLS "}", true, true), NULL);
    assert_true(s.done);
    assert_in_range(s.most_alloc, 1, 4096);
    held_release(&s);

    for (size_t i = 0; i < sizeof(long_text) - 1; i++)
        long_text[i] = (char)('a' + i % 26);
    long_text[sizeof(long_text) - 1] = '\0';
    script_text = rein_asprintf("[{\"text\":\"%s\",\"delta_bytes\":16}]", long_text);
    assert_non_null(script_text);
    script(script_text);
    rein_free(script_text);
    s = (struct held_sink){.cancel = rein_cancel_new()};
    assert_rein_ok(held_serve(&s, "{\"model\":\"m\",\"stream\":true," USER "}", false, true), NULL);
    assert_true(s.done);
    assert_in_range(s.most_alloc, 1, 64 * 1024);
    /* the deltas, joined, are the text */
    rein_buf_init(&got, 0);
    for (p = strstr(s.events.ptr, "\"content\":\""); p; p = strstr(p, "\"content\":\"")) {
        p += 11;
        assert_rein_ok(rein_buf_add(&got, p, strcspn(p, "\"")), NULL);
    }
    assert_string_equal(got.ptr, long_text);
    rein_buf_release(&got);
    held_release(&s);
}

/* text (new, the caller frees it) with the string of each member whose name ends in "id"
 * and each "created" number masked: what differs between two answers to the same request. */
static char *mask_ids(const char *text)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    while (*text) {
        size_t name = *text == '"' ? strcspn(text + 1, "\"") : 0;
        if (name >= 2 && memcmp(text + 1 + name - 2, "id", 2) == 0 &&
            strncmp(text + 1 + name, "\":\"", 3) == 0) {
            assert_rein_ok(rein_buf_add(&b, text, name + 4), NULL);
            assert_rein_ok(rein_buf_adds(&b, "ID"), NULL);
            text += name + 4;
            text += strcspn(text, "\"");
        } else if (strncmp(text, "\"created\":", 10) == 0) {
            assert_rein_ok(rein_buf_adds(&b, "\"created\":T"), NULL);
            text += 10 + strspn(text + 10, "0123456789");
        } else {
            assert_rein_ok(rein_buf_addch(&b, *text++), NULL);
        }
    }
    return rein_buf_detach(&b, NULL);
}

/*
 * Text events the gateway frames itself (sink.stream_frames) are the events it hands a sink
 * without frames, byte for byte, for either client's wire: text to escape and not, plain
 * deltas long and short, reasoning (a block of its own for an Anthropic client) and the text
 * after it, a call.
 */
static void test_held_text_frames_are_the_events(void **state)
{
    static const char openai[] = "{\"model\":\"m\",\"stream\":true," USER "," TOOLS "}";
    static const char anthropic[] = "{\"model\":\"m\",\"max_tokens\":64,\"stream\":true," USER
                                    ",\"tools\":[{\"name\":\"get_weather\",\"input_schema\":{"
                                    "\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
                                    "\"string\"}},\"required\":[\"city\"]}}]}";
    static const char *const scripts[] = {
        "[{\"reasoning\":[\"Think \",\"it over.\"],\"text\":[\"Plain text, sixteen+\","
        "\" \\\"quoted\\\" \\\\ \",\"M\u00e9t\u00e9o \u2603 \u00e0 Paris\",\"\\ttab\\n\","
        "\"x\"],\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":"
        "\\\"Paris\\\"}\"}]}]",
        /* a call handed out, another re-asked: the next round's text is a block of its own */
        "[{\"text\":[\"First \",\"try.\"],\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":"
        "\"{\\\"city\\\":\\\"Paris\\\"}\"},{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":"
        "3}\"}]},{\"text\":[\"Second \",\"try.\"],\"tool_calls\":[{\"name\":\"get_weather\","
        "\"arguments\":\"{\\\"city\\\":\\\"Lyon\\\"}\"}]}]",
    };

    (void)state;
    start();
    for (size_t k = 0; k < 2 * REIN_ARRAY_SIZE(scripts); k++) {
        struct held_sink ev = {.cancel = rein_cancel_new()}, fr = {.cancel = rein_cancel_new()};
        bool an = k % 2;
        enum rein_gateway_api api = an ? REIN_GATEWAY_ANTHROPIC : REIN_GATEWAY_OPENAI;
        char *got, *want;
        size_t at = 0;

        script(scripts[k / 2]);
        assert_rein_ok(held_serve_api(&ev, api, an ? anthropic : openai, true, false), NULL);
        script(scripts[k / 2]);
        assert_rein_ok(held_serve_api(&fr, api, an ? anthropic : openai, true, true), NULL);
        assert_non_null(strstr(ev.events.ptr, k / 2 ? "Second" : "\\\"quoted\\\""));
        assert_non_null(strstr(ev.events.ptr, "Paris"));
        got = mask_ids(fr.events.ptr);
        want = mask_ids(ev.events.ptr);
        while (got[at] && got[at] == want[at])
            at++;
        if (got[at] || want[at])
            fail_msg("script %zu, %s client: the frames differ from the events at byte %zu:\n"
                     "%.200s\nevents:\n%.200s",
                     k / 2, an ? "anthropic" : "openai", at, got + (at > 80 ? at - 80 : 0),
                     want + (at > 80 ? at - 80 : 0));
        rein_free(got);
        rein_free(want);
        held_release(&ev);
        held_release(&fr);
    }
}

static void test_upstream_error_after_the_stream_began(void **state)
{
    struct th_resp r;
    json_t *ev;

    (void)state;
    start();
    script("[{\"text\":[\"a\",\"b\",\"c\"],\"fault\":{\"error_after_events\":3}}]");
    chat("{\"model\":\"m\",\"stream\":true," USER "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"content\":\"a\""));
    ev = th_sse_events(r.body, NULL);
    assert_non_null(json_object_get(
        json_object_get(json_array_get(ev, json_array_size(ev) - 1), "data"), "error"));
    assert_null(strstr(r.body, "[DONE]"));
    json_decref(ev);
    th_resp_free(&r);
}

/* ---- recording ------------------------------------------------------------------------------ */

static void test_busy_conversation(void **state)
{
    struct th_resp r;
    const char *body = "{\"model\":\"m\"," USER "}";

    (void)state;
    start();
    script("[{\"fault\":{\"hang\":true}},{\"text\":\"ok\"}]");
    /* A raw request holds the conversation while its upstream hangs. */
    {
        char req[1024];
        int n = snprintf(req, sizeof(req),
                         "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                         "application/json\r\nx-rein-conversation: busy1\r\nContent-Length: "
                         "%zu\r\n\r\n%s",
                         strlen(body), body);
        int fd = rh_connect(rein_server_port(F->srv));
        assert_true(rh_send(fd, req, (size_t)n));
        assert_true(ms_wait(F->ms, 1, 10000));
        chat(body, (const char *[]){"x-rein-conversation: busy1", NULL}, &r);
        assert_oa_error(&r, 409, "busy");
        assert_string_equal(th_jstr(json_object_get(r.json, "error"), "code"), "conversation_busy");
        th_resp_free(&r);
        close(fd);
    }
    /* Once the first request is gone, the conversation is free again. */
    for (int i = 0; i < 200; i++) {
        chat(body, (const char *[]){"x-rein-conversation: busy1", NULL}, &r);
        if (r.status != 409)
            break;
        th_resp_free(&r);
        rein_sleep_ms(20);
    }
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
}

/* Sends a chat request on a connection of its own, without reading the answer. */
static int chat_raw(void)
{
    static const char body[] = "{\"model\":\"m\"," USER "}";
    char req[1024];
    int n = snprintf(req, sizeof(req),
                     "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     "application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     strlen(body), body);
    int fd = rh_connect(rein_server_port(F->srv));

    assert_true(rh_send(fd, req, (size_t)n));
    return fd;
}

static void test_waiting_requests_hold_no_worker(void **state)
{
    int fds[10];
    struct th_resp r;

    (void)state;
    start(); /* 4 workers */
    script("[{\"times\":0,\"fault\":{\"hang\":true}}]");
    /* Ten requests whose upstream does not answer all reach it at once... */
    for (int i = 0; i < 10; i++)
        fds[i] = chat_raw();
    assert_true(ms_wait(F->ms, 10, 10000));
    /* ...and a request for a worker still gets one. */
    th_http("GET", u("/agent/conversations/none/events"), NULL, NULL, &r);
    assert_int_equal(r.status, 404);
    th_resp_free(&r);
    for (int i = 0; i < 10; i++)
        close(fds[i]);
}

static void test_waiting_requests_queue_past_their_bound(void **state)
{
    int fds[5];

    (void)state;
    next_wait_threads = 3;
    start();
    script("[{\"times\":0,\"fault\":{\"hang\":true}}]");
    for (int i = 0; i < 3; i++)
        fds[i] = chat_raw();
    assert_true(ms_wait(F->ms, 3, 10000));
    for (int i = 3; i < 5; i++)
        fds[i] = chat_raw();
    rein_sleep_ms(200); /* a fourth would have gone upstream by now; none may */
    assert_int_equal(ms_request_count(F->ms), 3);
    /* A client that leaves cancels its upstream request and frees its thread for the next. */
    close(fds[0]);
    assert_true(ms_wait(F->ms, 4, 10000));
    close(fds[1]);
    assert_true(ms_wait(F->ms, 5, 10000));
    for (int i = 2; i < 5; i++)
        close(fds[i]);
}

static void test_client_results_join_the_ledger(void **state)
{
    const char *const accept[] = {"Accept: application/json", NULL};
    struct th_resp r;
    json_t *conv;
    const json_t *e;
    char rid[128];
    size_t i;

    (void)state;
    start();
    script("[{\"tool_calls\":[{\"id\":\"call_r\",\"name\":\"GetWeather\","
           "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]},{\"text\":\"sunny\"}]");
    chat("{\"model\":\"m\"," USER "," TOOLS "}",
         (const char *[]){"x-rein-conversation: led1", NULL}, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(th_jstr(r.json, "object"), "chat.completion");
    assert_non_null(th_header(&r, "x-upstream-request-id"));
    snprintf(rid, sizeof(rid), "%s", th_header(&r, "x-upstream-request-id"));
    th_resp_free(&r);
    /* the upstream call's event keeps the provider's id for it */
    th_http("GET", u("/agent/conversations/led1/events"), NULL, accept, &r);
    assert_int_equal(r.status, 200);
    e = NULL;
    json_array_foreach(json_object_get(r.json, "events"), i, conv)
    {
        if (!e && strcmp(th_jstr(conv, "type") ? th_jstr(conv, "type") : "", "upstream_call") == 0)
            e = conv;
    }
    if (!e)
        fail_msg("no upstream_call event in %s", r.body);
    assert_non_null(th_jstr(json_object_get(e, "data"), "request_id"));
    assert_string_equal(th_jstr(json_object_get(e, "data"), "request_id"), rid);
    th_resp_free(&r);
    chat("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"weather in Paris?\"},"
         "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_r\",\"type\":"
         "\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":"
         "\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"call_r\","
         "\"content\":\"{\\\"temp\\\":21}\"}]," TOOLS "}",
         (const char *[]){"x-rein-conversation: led1", NULL}, &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    th_get(u("/agent/conversations/led1"), &r);
    conv = json_incref(r.json);
    th_resp_free(&r);
    assert_int_equal(json_array_size(json_object_get(conv, "messages")), 4);
    e = th_ledger_entry(conv, "call_r");
    assert_string_equal(th_jstr(e, "status"), "success");
    assert_string_equal(th_jstr(e, "tool"), "get_weather");
    assert_string_equal(th_jstr(e, "sent_name"), "GetWeather");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "result"), "temp")), 21);
    json_decref(conv);
}

/* The text deltas of an OpenAI stream's body, joined. */
static char *streamed_content(const char *body)
{
    struct rein_buf out;

    rein_buf_init(&out, 0);
    for (const char *p = strstr(body, "data: {"); p; p = strstr(p + 1, "data: {")) {
        const char *end = strstr(p, "\n\n");
        json_t *chunk = json_loadb(p + 6, (size_t)(end - p - 6), 0, NULL);
        const json_t *delta =
            json_object_get(json_array_get(json_object_get(chunk, "choices"), 0), "delta");
        const char *text = json_string_value(json_object_get(delta, "content"));
        assert_non_null(chunk);
        if (text)
            assert_rein_ok(rein_buf_adds(&out, text), NULL);
        json_decref(chunk);
    }
    return rein_buf_detach(&out, NULL);
}

/* A recorded stream stores the text the client got, across a re-ask that continued the stream
 * (the gateway keeps what it streamed only for a recorded request). */
static void test_recorded_stream_keeps_the_streamed_text(void **state)
{
    struct th_resp r;
    json_t *conv;
    const json_t *msg;
    char *got;

    (void)state;
    start();
    script(
        "[{\"times\":1,\"text\":\"First part of it. \",\"delta_bytes\":5,\"tool_calls\":"
        "[{\"id\":\"call_b\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":3}\"}]},"
        "{\"text\":\"And the second part.\",\"delta_bytes\":4,\"tool_calls\":[{\"id\":"
        "\"call_g\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]}]");
    chat("{\"model\":\"m\",\"stream\":true," USER "," TOOLS "}",
         (const char *[]){"x-rein-conversation: str1", NULL}, &r);
    assert_int_equal(r.status, 200);
    got = streamed_content(r.body);
    assert_non_null(strstr(got, "First part"));
    assert_non_null(strstr(got, "second part."));
    th_resp_free(&r);
    th_get(u("/agent/conversations/str1"), &r);
    conv = json_incref(r.json);
    th_resp_free(&r);
    msg = json_object_get(json_array_get(json_object_get(conv, "messages"), 1), "message");
    assert_string_equal(th_jstr(msg, "role"), "assistant");
    assert_string_equal(th_jstr(msg, "content"), got);
    rein_free(got);
    json_decref(conv);
}

/* The upstream may be any provider: here the OpenAI Responses API (issue 24). A chat
 * completions client gets its tool call and then the answer, streamed, while the upstream
 * sees input items with the call's output. */
static void test_responses_upstream(void **state)
{
    struct th_resp r;
    const struct ms_request *q;
    const json_t *in;

    (void)state;
    start_with("openai-responses", NULL, 0);
    script("[{\"tool_calls\":[{\"id\":\"call_r\",\"name\":\"get_weather\","
           "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]},"
           "{\"text\":[\"sun\",\"ny\"]}]");
    chat("{\"model\":\"m\"," USER "," TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(
        th_jstr(json_object_get(json_array_get(json_object_get(r.json, "choices"), 0), "message"),
                "role"),
        "assistant");
    assert_non_null(strstr(r.body, "call_r"));
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(q->format, "responses");
    chat("{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":"
         "\"weather in Paris?\"},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{"
         "\"id\":\"call_r\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
         "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},{\"role\":\"tool\","
         "\"tool_call_id\":\"call_r\",\"content\":\"{\\\"temp\\\":21}\"}]," TOOLS "}",
         NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"content\":\"sun\""));
    assert_non_null(strstr(r.body, "[DONE]"));
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    in = json_object_get(q->json, "input");
    assert_string_equal(th_jstr(json_array_get(in, 1), "type"), "function_call");
    assert_string_equal(th_jstr(json_array_get(in, 2), "type"), "function_call_output");
    assert_string_equal(th_jstr(json_array_get(in, 2), "call_id"), "call_r");
    assert_int_equal(ms_request_count(F->ms), 2);
}

static void test_metrics_by_model_and_tool(void **state)
{
    struct th_resp r;
    rein_metric *f;

    (void)state;
    start();
    script("[{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"get-weather\",\"arguments\":\"{}\"}]},"
           "{\"text\":\"<tool_call>{\\\"name\\\": \\\"get_weather\\\", \\\"arguments\\\": "
           "{\\\"city\\\": \\\"Oslo\\\"}}</tool_call>\"}]");
    chat("{\"model\":\"m\"," USER "," TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    f = rein_metrics_family(F->metrics, REIN_METRIC_COUNTER, "rein_gateway_invalid_calls_total",
                            NULL, (const char *[]){"model", "tool", "code", NULL}, NULL, 0, NULL);
    assert_true(rein_metric_value(f, (const char *[]){"gw-model", "get_weather",
                                                      "invalid_arguments", NULL}) == 1);
    f = rein_metrics_family(F->metrics, REIN_METRIC_COUNTER, "rein_gateway_reasks_total", NULL,
                            (const char *[]){"model", "tool", NULL}, NULL, 0, NULL);
    assert_true(rein_metric_value(f, (const char *[]){"gw-model", "get_weather", NULL}) == 1);
    f = rein_metrics_family(F->metrics, REIN_METRIC_COUNTER, "rein_gateway_text_calls_total", NULL,
                            (const char *[]){"model", "tool", NULL}, NULL, 0, NULL);
    assert_true(rein_metric_value(f, (const char *[]){"gw-model", "get_weather", NULL}) == 1);
    /* A repaired name that was then valid. */
    script("[{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"Get_Weather\","
           "\"arguments\":\"{\\\"city\\\":\\\"x\\\"}\"}]}]");
    chat("{\"model\":\"m\"," USER "," TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    f = rein_metrics_family(F->metrics, REIN_METRIC_COUNTER, "rein_gateway_repairs_total", NULL,
                            (const char *[]){"model", "tool", NULL}, NULL, 0, NULL);
    assert_true(rein_metric_value(f, (const char *[]){"gw-model", "get_weather", NULL}) == 1);
    /* A name nobody declared is counted as "unknown", never as the name the model made up. */
    script("[{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"launch_rockets\",\"arguments\":\"{}\"}]}]");
    chat("{\"model\":\"m\"," USER "," TOOLS "}", (const char *[]){"x-rein-on-invalid: pass", NULL},
         &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    f = rein_metrics_family(F->metrics, REIN_METRIC_COUNTER, "rein_gateway_invalid_calls_total",
                            NULL, (const char *[]){"model", "tool", "code", NULL}, NULL, 0, NULL);
    assert_true(
        rein_metric_value(f, (const char *[]){"gw-model", "unknown", "unknown_tool", NULL}) == 1);
}

static void test_upstream_key_never_reaches_the_client(void **state)
{
    struct th_resp r;

    (void)state;
    start_with("openai", "sk-secret-upstream-1234", 0);
    script("[{\"status\":400,\"error\":{\"message\":\"bad request for key "
           "sk-secret-upstream-1234\",\"type\":\"invalid_request_error\"}}]");
    chat("{\"model\":\"m\"," USER "}", NULL, &r);
    assert_int_equal(r.status, 400);
    assert_null(strstr(r.body, "sk-secret-upstream-1234"));
    assert_non_null(strstr(r.body, "bad request for key"));
    th_resp_free(&r);
    /* The upstream got the configured key; the client's never went along. */
    assert_string_equal(ms_request_header(ms_last_request(F->ms), "authorization"),
                        "Bearer sk-secret-upstream-1234");
}

static void test_server_tool_loop_is_bounded(void **state)
{
    struct th_resp r;

    (void)state;
    start_with("openai", NULL, 2);
    script("[{\"tool_calls\":[{\"id\":\"e\",\"name\":\"echo\",\"arguments\":"
           "\"{\\\"text\\\":\\\"again\\\"}\"}],\"times\":0}]");
    chat("{\"model\":\"m\"," USER "}", (const char *[]){"x-rein-tools: echo", NULL}, &r);
    assert_oa_error(&r, 422, "server-side tools 2 times");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 3);
}

/* A Gemini upstream behind the OpenAI-wire gateway: a server-side tool loop, streamed back. */
static void test_gemini_upstream_with_a_server_tool(void **state)
{
    struct th_resp r;

    (void)state;
    start_with("gemini", NULL, 0);
    script("[{\"tool_calls\":[{\"name\":\"echo\",\"arguments\":\"{\\\"text\\\":\\\"hi\\\"}\"}]},"
           "{\"match\":{\"last_role\":\"tool\"},\"text\":[\"The echo \",\"said hi.\"]}]");
    chat("{\"model\":\"m\",\"stream\":true," USER "}", (const char *[]){"x-rein-tools: echo", NULL},
         &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "said hi."));
    assert_non_null(strstr(r.body, "[DONE]"));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 2);
    for (size_t i = 0; i < 2; i++) {
        const struct ms_request *q = ms_request(F->ms, i);
        assert_int_equal(q->status, 200);
        assert_string_equal(q->format, "gemini");
    }
    assert_non_null(strstr(ms_request(F->ms, 1)->body, "\"functionResponse\""));
}

/* A Bedrock upstream (an API key as bearer): the same loop over the binary event stream. */
static void test_bedrock_upstream_with_a_server_tool(void **state)
{
    struct th_resp r;

    (void)state;
    start_with("bedrock", "bedrock-api-key", 0);
    script("[{\"tool_calls\":[{\"name\":\"echo\",\"arguments\":\"{\\\"text\\\":\\\"hi\\\"}\"}]},"
           "{\"match\":{\"last_role\":\"tool\"},\"text\":[\"The echo \",\"said hi.\"]}]");
    chat("{\"model\":\"m\",\"stream\":true," USER "}", (const char *[]){"x-rein-tools: echo", NULL},
         &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "said hi."));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 2);
    for (size_t i = 0; i < 2; i++) {
        const struct ms_request *q = ms_request(F->ms, i);
        assert_int_equal(q->status, 200);
        assert_string_equal(q->format, "bedrock");
    }
    assert_non_null(strstr(ms_request(F->ms, 1)->body, "\"toolResult\""));
}

/* The client's stop reaches each upstream wire under that wire's own name; a wire without one
 * is refused with a 400 naming it, before anything goes upstream. */
static void test_stop_crosses_wires(void **state)
{
    static const char *const wires[] = {"gemini", "bedrock", "anthropic"};
    static const char *const at[] = {"generationConfig.stopSequences",
                                     "inferenceConfig.stopSequences", "stop_sequences"};
    static const char *const top_p_at[] = {"generationConfig.topP", "inferenceConfig.topP",
                                           "top_p"};
    struct th_resp r;
    const struct ms_request *q;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(wires); i++) {
        json_t *want = json_pack("[ss]", "END", "\n\nUser:");
        start_with(wires[i], strcmp(wires[i], "bedrock") == 0 ? "bedrock-api-key" : NULL, 0);
        script("[{\"text\":\"one\"},{\"text\":\"two\"}]");
        chat("{\"model\":\"m\"," USER ",\"top_p\":0.5,\"stop\":[\"END\",\"\\n\\nUser:\"]}", NULL,
             &r);
        if (r.status != 200)
            fail_msg("%s: %ld %s", wires[i], r.status, r.body);
        th_resp_free(&r);
        q = ms_last_request(F->ms);
        if (!json_equal(test_json_at(q->json, at[i]), want))
            fail_msg("%s: %s", wires[i], q->body);
        if (strcmp(wires[i], "anthropic") != 0) {
            assert_null(json_object_get(q->json, "stop"));
            assert_null(json_object_get(q->json, "top_p"));
        }
        /* top_p too, under the upstream's own name. */
        if (json_real_value(test_json_at(q->json, top_p_at[i])) != 0.5)
            fail_msg("%s: no %s: %s", wires[i], top_p_at[i], q->body);
        /* The Anthropic client's stop_sequences (one string) the same way. */
        th_http("POST", u("/v1/messages"),
                "{\"model\":\"m\",\"max_tokens\":50," USER ",\"stop_sequences\":[\"END\"]}",
                (const char *[]){"anthropic-version: 2023-06-01", NULL}, &r);
        if (r.status != 200)
            fail_msg("%s (anthropic client): %ld %s", wires[i], r.status, r.body);
        th_resp_free(&r);
        q = ms_last_request(F->ms);
        assert_int_equal(json_array_size(test_json_at(q->json, at[i])), 1);
        json_decref(want);
        teardown(NULL);
    }

    /* The Responses API has no stop field. */
    start_with("openai-responses", NULL, 0);
    script("[{\"text\":\"ok\"}]");
    chat("{\"model\":\"m\"," USER ",\"stop\":\"END\"}", NULL, &r);
    assert_oa_error(&r, 400, "openai-responses");
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "param"), "stop");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0);
    teardown(NULL);

    /* Gemini takes five at most. */
    start_with("gemini", NULL, 0);
    script("[{\"text\":\"ok\"}]");
    chat("{\"model\":\"m\"," USER ",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]}", NULL, &r);
    assert_oa_error(&r, 400, "at most 5 stop sequences");
    th_resp_free(&r);
    chat("{\"model\":\"m\"," USER ",\"stop\":[\"a\",\"\"]}", NULL, &r);
    assert_oa_error(&r, 400, "must not be empty");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0);
}

/* What Gemini's Schema could not take of the client's tools is in the answer's "rein". */
static void test_gemini_upstream_reports_dropped_schema_keywords(void **state)
{
    struct th_resp r;
    const json_t *d;

    (void)state;
    start_with("gemini", NULL, 0);
    script("[{\"text\":\"ok\"},{\"text\":[\"o\",\"k\"]}]");
    chat("{\"model\":\"m\"," USER ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
         "\"get_weather\",\"parameters\":{\"type\":\"object\",\"additionalProperties\":false,"
         "\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}]}",
         NULL, &r);
    assert_int_equal(r.status, 200);
    d = test_json_at(r.json, "rein.schema_dropped");
    if (json_array_size(d) != 1)
        fail_msg("no schema_dropped in the answer: %s", r.body);
    assert_string_equal(th_jstr(json_array_get(d, 0), "tool"), "get_weather");
    assert_string_equal(th_jstr(json_array_get(d, 0), "keyword"), "additionalProperties");
    assert_string_equal(th_jstr(json_array_get(d, 0), "at"), "/");
    th_resp_free(&r);
    /* Streamed: in the last chunk's "rein". */
    chat("{\"model\":\"m\",\"stream\":true," USER ",\"tools\":[{\"type\":\"function\","
         "\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\","
         "\"additionalProperties\":false,\"properties\":{\"city\":{\"type\":\"string\"}}}}}]}",
         NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"schema_dropped\":[{"));
    th_resp_free(&r);
}

/* The Anthropic reply's thinking blocks: from an Anthropic upstream with their signature,
 * from an OpenAI-compatible one's reasoning without; a reply without reasoning has none (the
 * reply skips building the round's message then, so both kinds are checked). */
static void test_anthropic_reply_thinking(void **state)
{
    static const char body[] = "{\"model\":\"m\",\"max_tokens\":64," USER "}";
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    static const char *const wires[] = {"anthropic", "openai"};
    struct th_resp r;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(wires); i++) {
        bool anthropic = strcmp(wires[i], "anthropic") == 0;
        json_t *content, *b;
        start_with(wires[i], NULL, 0);
        script("[{\"reasoning\":\"Paris is mild.\",\"signature\":\"sig-1\",\"text\":\"Mild.\"},"
               "{\"text\":\"Plain.\"}]");
        th_http("POST", u("/v1/messages"), body, h, &r);
        if (r.status != 200)
            fail_msg("%s: %ld %s", wires[i], r.status, r.body);
        content = json_object_get(r.json, "content");
        assert_int_equal(json_array_size(content), 2);
        b = json_array_get(content, 0);
        assert_string_equal(th_jstr(b, "type"), "thinking");
        assert_string_equal(th_jstr(b, "thinking"), "Paris is mild.");
        assert_string_equal(th_jstr(b, "signature"), anthropic ? "sig-1" : "");
        assert_string_equal(th_jstr(json_array_get(content, 1), "text"), "Mild.");
        th_resp_free(&r);
        th_http("POST", u("/v1/messages"), body, h, &r);
        assert_int_equal(r.status, 200);
        content = json_object_get(r.json, "content");
        assert_int_equal(json_array_size(content), 1);
        assert_string_equal(th_jstr(json_array_get(content, 0), "type"), "text");
        assert_string_equal(th_jstr(json_array_get(content, 0), "text"), "Plain.");
        th_resp_free(&r);
        teardown(NULL);
    }
}

/* A call's input in the Anthropic reply is its argument text when that is an object (spaces
 * kept), else {}: arrays, broken JSON and numbers alike, in a JSON reply and a stream. */
static void test_anthropic_reply_input(void **state)
{
    static const char json_body[] =
        "{\"model\":\"m\",\"max_tokens\":64," USER ",\"tools\":[{\"name\":\"get_weather\","
        "\"input_schema\":{\"type\":\"object\"}}]}";
    static const char stream_body[] =
        "{\"model\":\"m\",\"max_tokens\":64,\"stream\":true," USER
        ",\"tools\":[{\"name\":\"get_weather\",\"input_schema\":{\"type\":\"object\"}}]}";
    const char *const h[] = {"anthropic-version: 2023-06-01", "x-rein-on-invalid: pass", NULL};
    static const char *const args[] = {" \\n{\\\"city\\\": \\\"Paris\\\"}", "[1]",
                                       "{\\\"city\\\":", "3", "{}"};
    static const char *const want[] = {" \n{\"city\": \"Paris\"}", "{}", "{}", "{}", "{}"};
    char reply[256];
    struct th_resp r;

    (void)state;
    start();
    for (size_t i = 0; i < REIN_ARRAY_SIZE(args); i++) {
        json_t *block;
        snprintf(reply, sizeof(reply),
                 "[{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"get_weather\",\"arguments\":"
                 "\"%s\"}],\"times\":2}]",
                 args[i]);
        script(reply);
        th_http("POST", u("/v1/messages"), json_body, h, &r);
        if (r.status != 200)
            fail_msg("%zu: %ld %s", i, r.status, r.body);
        block = json_array_get(json_object_get(r.json, "content"), 0);
        assert_string_equal(th_jstr(block, "type"), "tool_use");
        char *got = rein_json_dumps(json_object_get(block, "input"));
        json_t *expect = json_loads(want[i], 0, NULL);
        char *exp = rein_json_dumps(expect);
        assert_string_equal(got, exp);
        rein_free(got);
        rein_free(exp);
        json_decref(expect);
        th_resp_free(&r);
        th_http("POST", u("/v1/messages"), stream_body, h, &r);
        assert_int_equal(r.status, 200);
        /* the argument text is one partial_json piece, written as a JSON string */
        json_t *piece = json_string(want[i]);
        char *quoted = rein_json_dumps(piece);
        if (!strstr(r.body, quoted))
            fail_msg("%zu: %s not in the stream:\n%s", i, quoted, r.body);
        rein_free(quoted);
        json_decref(piece);
        th_resp_free(&r);
    }
}

/* The upstream's reply is these bytes, as an Anthropic stream or message body. */
static void script_body(const char *body, bool stream)
{
    json_t *j = json_pack("[{s:s, s:b, s:i}]", "body", body, "stream", stream, "times", 0);
    char *text = rein_json_dumps(j);

    script(text);
    rein_free(text);
    json_decref(j);
}

/* The types of the content blocks a messages stream starts, in order, joined by spaces. */
static void streamed_blocks(const char *sse, char *out, size_t cap)
{
    static const char key[] = "\"content_block\":{\"type\":\"";
    size_t n = 0;

    out[0] = '\0';
    for (const char *p = strstr(sse, key); p; p = strstr(p, key)) {
        const char *t = p + sizeof(key) - 1, *e = strchr(t, '"');
        n += (size_t)snprintf(out + n, cap - n, "%s%.*s", n ? " " : "", (int)(e - t), t);
        assert_true(n < cap);
        p = e;
    }
}

#define AN_EV(type, json) "event: " type "\ndata: " json "\n\n"
#define AN_START(i, block)                                                                         \
    AN_EV("content_block_start",                                                                   \
          "{\"type\":\"content_block_start\",\"index\":" #i ",\"content_block\":" block "}")
#define AN_DELTA(i, delta)                                                                         \
    AN_EV("content_block_delta",                                                                   \
          "{\"type\":\"content_block_delta\",\"index\":" #i ",\"delta\":" delta "}")
#define AN_STOP(i) AN_EV("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":" #i "}")
#define AN_MESSAGE_START                                                                           \
    AN_EV("message_start",                                                                         \
          "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","        \
          "\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,"            \
          "\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}")
#define AN_MESSAGE_END(reason)                                                                     \
    AN_EV("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"" reason      \
                           "\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":9}}")          \
    AN_EV("message_stop", "{\"type\":\"message_stop\"}")

/*
 * Claude's thinking and its server tools' blocks reach an Anthropic client that streams as
 * Claude sent them, for the client to send back on the next turn: each thinking block closed
 * by its signature, a redacted block with its data, a server_tool_use with its input (given
 * by one input_json_delta, as Anthropic streams it) and its result block whole, in order.
 */
static void test_anthropic_stream_keeps_thinking_and_server_blocks(void **state)
{
    static const char sse[] =
        AN_MESSAGE_START AN_START(0, "{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}")
            AN_DELTA(0, "{\"type\":\"thinking_delta\",\"thinking\":\"Look it up.\"}") AN_DELTA(
                0, "{\"type\":\"signature_delta\",\"signature\":\"sig-A\"}") AN_STOP(0)
                AN_START(1, "{\"type\":\"redacted_thinking\",\"data\":\"opaque-1\"}") AN_STOP(1)
                    AN_START(2, "{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\","
                                "\"name\":\"web_search\",\"input\":{}}")
                        AN_DELTA(2, "{\"type\":\"input_json_delta\",\"partial_json\":"
                                    "\"{\\\"query\\\": \\\"Paris\\\"}\"}") AN_STOP(2)
                            AN_START(3, "{\"type\":\"web_search_tool_result\","
                                        "\"tool_use_id\":\"srvtoolu_1\",\"content\":[]}") AN_STOP(3)
                                AN_START(4, "{\"type\":\"mcp_tool_use\",\"id\":\"mcptoolu_1\","
                                            "\"name\":\"lookup\",\"server_name\":\"kb\","
                                            "\"input\":{}}")
                                    AN_DELTA(4, "{\"type\":\"input_json_delta\","
                                                "\"partial_json\":\"{\\\"q\\\":1}\"}") AN_STOP(4)
                                        AN_START(5, "{\"type\":\"mcp_tool_result\","
                                                    "\"tool_use_id\":\"mcptoolu_1\","
                                                    "\"is_error\":false,\"content\":[]}") AN_STOP(5)
                                            AN_START(6, "{\"type\":\"thinking\",\"thinking\":\"\","
                                                        "\"signature\":\"\"}")
                                                AN_DELTA(6, "{\"type\":\"signature_delta\","
                                                            "\"signature\":\"sig-B\"}") AN_STOP(6)
                                                    AN_START(7, "{\"type\":\"text\",\"text\":\"\"}")
                                                        AN_DELTA(7, "{\"type\":\"text_delta\","
                                                                    "\"text\":\"Mild.\"}")
                                                            AN_STOP(7) AN_MESSAGE_END("end_turn");
    static const char body[] = "{\"model\":\"m\",\"max_tokens\":64,\"stream\":true," USER "}";
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    char types[256];
    struct th_resp r;

    (void)state;
    start_with("anthropic", NULL, 0);
    script_body(sse, true);
    th_http("POST", u("/v1/messages"), body, h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    streamed_blocks(r.body, types, sizeof(types));
    assert_string_equal(types, "thinking redacted_thinking server_tool_use web_search_tool_result "
                               "mcp_tool_use mcp_tool_result thinking text");
    assert_non_null(strstr(r.body, "\"name\":\"lookup\",\"server_name\":\"kb\",\"input\":{}}"));
    assert_non_null(strstr(r.body, "\"index\":4,\"delta\":{\"type\":\"input_json_delta\","
                                   "\"partial_json\":\"{\\\"q\\\":1}\"}"));
    assert_non_null(strstr(r.body, "\"index\":0,\"delta\":{\"type\":\"signature_delta\","
                                   "\"signature\":\"sig-A\"}"));
    assert_non_null(strstr(r.body, "\"index\":6,\"delta\":{\"type\":\"signature_delta\","
                                   "\"signature\":\"sig-B\"}"));
    assert_non_null(strstr(r.body, "{\"type\":\"redacted_thinking\",\"data\":\"opaque-1\"}"));
    assert_non_null(strstr(r.body, "\"name\":\"web_search\",\"input\":{}}"));
    assert_non_null(strstr(r.body, "\"index\":2,\"delta\":{\"type\":\"input_json_delta\","
                                   "\"partial_json\":\"{\\\"query\\\":\\\"Paris\\\"}\"}"));
    assert_non_null(strstr(r.body, "\"tool_use_id\":\"srvtoolu_1\",\"content\":[]}"));
    th_resp_free(&r);
}

/* Appends the string member key of delta to the same member of block. */
static void add_piece(json_t *block, const json_t *delta, const char *key)
{
    const char *was = th_jstr(block, key) ? th_jstr(block, key) : "";
    const char *piece = th_jstr(delta, key);
    char *both;

    assert_non_null(piece);
    assert_true(asprintf(&both, "%s%s", was, piece) > 0);
    assert_int_equal(json_object_set_new(block, key, json_string(both)), 0);
    free(both);
}

/* The content a messages stream gives, put together as the Anthropic SDKs do. */
static json_t *streamed_message_content(const char *sse)
{
    json_t *content = json_array();

    for (const char *p = strstr(sse, "data: {"); p; p = strstr(p + 1, "data: {")) {
        const char *end = strstr(p, "\n\n");
        json_t *ev = json_loadb(p + 6, (size_t)(end - p - 6), 0, NULL);
        const char *type = th_jstr(ev, "type");
        json_t *block = json_array_get(content, json_array_size(content) - 1);
        const json_t *delta = json_object_get(ev, "delta");
        const char *dtype = th_jstr(delta, "type") ? th_jstr(delta, "type") : "";

        assert_non_null(ev);
        if (strcmp(type, "content_block_start") == 0)
            json_array_append(content, json_object_get(ev, "content_block"));
        else if (strcmp(dtype, "text_delta") == 0)
            add_piece(block, delta, "text");
        else if (strcmp(dtype, "citations_delta") == 0)
            json_array_append(json_object_get(block, "citations"),
                              json_object_get(delta, "citation"));
        else if (strcmp(dtype, "input_json_delta") == 0)
            json_object_set_new(block, "input",
                                json_loads(th_jstr(delta, "partial_json"), 0, NULL));
        json_decref(ev);
    }
    return content;
}

#define AN_CITE(n)                                                                                 \
    "{\"type\":\"web_search_result_location\",\"cited_text\":\"cited " #n "\",\"url\":"            \
    "\"https://example.org/" #n "\",\"title\":\"T" #n "\",\"encrypted_index\":\"e" #n "\"}"

/*
 * A web search answer reaches an Anthropic client as Claude wrote it: its text blocks in their
 * places between the search's blocks, each with its own citations, in a body and in a stream.
 * Before, the text was joined into one block after the server blocks and the citations were
 * dropped.
 */
static void test_anthropic_citations_reach_the_client(void **state)
{
    static const char content[] =
        "[{\"type\":\"text\",\"text\":\"I will search. \"},{\"type\":\"server_tool_use\","
        "\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{\"query\":\"capital\"}},"
        "{\"type\":\"web_search_tool_result\",\"tool_use_id\":\"srvtoolu_1\",\"content\":[]},"
        "{\"type\":\"text\",\"text\":\"Paris is the capital\",\"citations\":[" AN_CITE(
            1) "," AN_CITE(2) "]},{\"type\":\"text\",\"text\":\" and "
                              "\"},{\"type\":\"text\",\"text\":"
                              "\"Berlin is too\",\"citations\":[" AN_CITE(
                                  3) "]},{\"type\":\"text\",\"text\":\".\"}]";
    static const char sse[] = AN_MESSAGE_START AN_START(0, "{\"type\":\"text\",\"text\":\"\"}")
        AN_DELTA(0, "{\"type\":\"text_delta\",\"text\":\"I will search. \"}") AN_STOP(0) AN_START(
            1, "{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":"
               "\"web_search\",\"input\":{}}")
            AN_DELTA(1, "{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"query\\\": "
                        "\\\"capital\\\"}\"}") AN_STOP(1)
                AN_START(2, "{\"type\":\"web_search_tool_result\",\"tool_use_id\":"
                            "\"srvtoolu_1\",\"content\":[]}") AN_STOP(2)
                    AN_START(3, "{\"type\":\"text\",\"text\":\"\",\"citations\":[]}") AN_DELTA(
                        3, "{\"type\":\"citations_delta\",\"citation\":" AN_CITE(1) "}")
                        AN_DELTA(3, "{\"type\":\"citations_delta\",\"citation\":" AN_CITE(2) "}")
                            AN_DELTA(3, "{\"type\":\"text_delta\",\"text\":\"Paris is "
                                        "the capital\"}") AN_STOP(3)
                                AN_START(4, "{\"type\":\"text\",\"text\":\"\"}")
                                    AN_DELTA(4, "{\"type\":\"text_delta\",\"text\":\" and \"}")
                                        AN_STOP(4) AN_START(5, "{\"type\":\"text\",\"text\":\"\","
                                                               "\"citations\":[]}")
                                            AN_DELTA(5, "{\"type\":\"citations_delta\","
                                                        "\"citation\":" AN_CITE(3) "}")
                                                AN_DELTA(5,
                                                         "{\"type\":\"text_delta\","
                                                         "\"text\":\"Berlin is too\"}") AN_STOP(5)
                                                    AN_START(6, "{\"type\":\"text\",\"text\":\"\"}")
                                                        AN_DELTA(6, "{\"type\":\"text_delta\","
                                                                    "\"text\":\".\"}") AN_STOP(6)
                                                            AN_MESSAGE_END("end_turn");
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    json_t *want = json_loads(content, 0, NULL), *got;
    char *reply;
    struct th_resp r;

    (void)state;
    assert_non_null(want);
    assert_true(asprintf(&reply,
                         "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":"
                         "\"m\",\"content\":%s,\"stop_reason\":\"end_turn\",\"stop_sequence\":null,"
                         "\"usage\":{\"input_tokens\":5,\"output_tokens\":9}}",
                         content) > 0);
    start_with("anthropic", NULL, 0);
    script_body(reply, false);
    th_http("POST", u("/v1/messages"), "{\"model\":\"m\",\"max_tokens\":64," USER "}", h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    if (!json_equal(json_object_get(r.json, "content"), want))
        fail_msg("the client got %s", r.body);
    th_resp_free(&r);

    script_body(sse, true);
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"m\",\"max_tokens\":64,\"stream\":true," USER "}", h, &r);
    assert_int_equal(r.status, 200);
    got = streamed_message_content(r.body);
    if (!json_equal(got, want)) {
        char *text = rein_json_dumps(got);
        fail_msg("the stream put together %s\nfrom %s", text, r.body);
    }
    json_decref(got);
    th_resp_free(&r);
    json_decref(want);
    free(reply);
}

/* ---- the Responses API ------------------------------------------------------------------- */

#define RS_TOOLS                                                                                   \
    "\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\",\"parameters\":{\"type\":"         \
    "\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}]"
#define RS_CALL_REPLY                                                                              \
    "{\"text\":[\"Checking \",\"now.\"],\"tool_calls\":[{\"id\":\"c1\",\"name\":\"get_weather\","  \
    "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}],\"usage\":{\"input_tokens\":11,"             \
    "\"output_tokens\":7}}"

static void responses(const char *body, struct th_resp *r)
{
    const char *const h[] = {"Content-Type: application/json", NULL};

    th_http("POST", u("/v1/responses"), body, h, r);
}

/* The events of a Responses stream, their types joined by spaces; each event's
 * sequence_number must be the one after the last, its type the event line's. */
static json_t *rs_events(const char *sse, char *types, size_t cap)
{
    json_t *all = json_array();
    size_t n = 0;

    types[0] = '\0';
    for (const char *p = strstr(sse, "event: "); p; p = strstr(p + 1, "\nevent: ")) {
        const char *name = p[0] == '\n' ? p + 8 : p + 7, *data = strstr(name, "\ndata: ");
        const char *end = strstr(data, "\n\n");
        json_t *ev = json_loadb(data + 7, (size_t)(end - data - 7), 0, NULL);
        size_t len = strcspn(name, "\n");
        assert_non_null(ev);
        assert_int_equal(json_integer_value(json_object_get(ev, "sequence_number")),
                         json_array_size(all));
        assert_int_equal(strlen(th_jstr(ev, "type")), len);
        assert_memory_equal(th_jstr(ev, "type"), name, len);
        n += (size_t)snprintf(types + n, cap - n, "%s%.*s", n ? " " : "", (int)len, name);
        assert_true(n < cap);
        json_array_append_new(all, ev);
    }
    return all;
}

/*
 * A Responses client (Codex, the OpenAI Agents SDK) gets a response object: the message and
 * each checked call as output items, the usage in its terms; the upstream is asked the chat
 * completions request it means (instructions a system message, the flat function tool
 * nested). A stream is the API's typed events, numbered, ending with the whole response.
 */
static void test_responses_json_and_stream(void **state)
{
    static const char body[] =
        "{\"model\":\"m\",\"instructions\":\"Be brief.\",\"input\":[{\"role\":"
        "\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"weather "
        "in Paris?\"}]}]," RS_TOOLS "}";
    const struct ms_request *q;
    const json_t *out, *last;
    json_t *evs;
    char types[2048];
    struct th_resp r;

    (void)state;
    start();
    script("[" RS_CALL_REPLY "," RS_CALL_REPLY "]");
    responses(body, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(th_jstr(r.json, "object"), "response");
    assert_string_equal(th_jstr(r.json, "status"), "completed");
    assert_int_equal(strncmp(th_jstr(r.json, "id"), "resp_", 5), 0);
    out = json_object_get(r.json, "output");
    assert_int_equal(json_array_size(out), 2);
    assert_string_equal(th_jstr(json_array_get(out, 0), "type"), "message");
    assert_string_equal(
        th_jstr(json_array_get(json_object_get(json_array_get(out, 0), "content"), 0), "text"),
        "Checking now.");
    assert_string_equal(th_jstr(json_array_get(out, 1), "type"), "function_call");
    assert_string_equal(th_jstr(json_array_get(out, 1), "call_id"), "c1");
    assert_string_equal(th_jstr(json_array_get(out, 1), "name"), "get_weather");
    assert_string_equal(th_jstr(json_array_get(out, 1), "arguments"), "{\"city\":\"Paris\"}");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r.json, "usage"), "input_tokens")), 11);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r.json, "usage"), "total_tokens")), 18);
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(th_jstr(json_array_get(json_object_get(q->json, "messages"), 0), "role"),
                        "system");
    assert_string_equal(
        th_jstr(json_object_get(json_array_get(json_object_get(q->json, "tools"), 0), "function"),
                "name"),
        "get_weather");

    responses("{\"stream\":true,\"model\":\"m\",\"input\":\"weather in Paris?\"," RS_TOOLS "}", &r);
    assert_int_equal(r.status, 200);
    evs = rs_events(r.body, types, sizeof(types));
    assert_string_equal(types, "response.created response.in_progress response.output_item.added "
                               "response.content_part.added response.output_text.delta "
                               "response.output_text.delta response.output_text.done "
                               "response.content_part.done response.output_item.done "
                               "response.output_item.added response.function_call_arguments.delta "
                               "response.function_call_arguments.done response.output_item.done "
                               "response.completed");
    last = json_object_get(json_array_get(evs, json_array_size(evs) - 1), "response");
    assert_int_equal(json_array_size(json_object_get(last, "output")), 2);
    assert_string_equal(th_jstr(json_array_get(json_object_get(last, "output"), 1), "arguments"),
                        "{\"city\":\"Paris\"}");
    assert_string_equal(th_jstr(last, "status"), "completed");
    json_decref(evs);
    th_resp_free(&r);
}

/* The next turn: the call and its output are the assistant's call and a tool message. */
static void test_responses_next_turn(void **state)
{
    static const char body[] =
        "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":\"weather in Paris?\"},"
        "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[]},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
        "\"text\":\"Checking.\"}]},{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"c1\","
        "\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"sunny\"}],"
        "\"store\":false,\"include\":[\"reasoning.encrypted_content\"]," RS_TOOLS "}";
    const json_t *msgs;
    struct th_resp r;

    (void)state;
    start();
    script("[{\"text\":\"Sunny.\"}]");
    responses(body, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(
        th_jstr(json_array_get(json_object_get(json_array_get(json_object_get(r.json, "output"), 0),
                                               "content"),
                               0),
                "text"),
        "Sunny.");
    th_resp_free(&r);
    msgs = json_object_get(ms_last_request(F->ms)->json, "messages");
    assert_int_equal(json_array_size(msgs), 3);
    assert_string_equal(th_jstr(json_array_get(msgs, 1), "content"), "Checking.");
    assert_string_equal(
        th_jstr(json_array_get(json_object_get(json_array_get(msgs, 1), "tool_calls"), 0), "id"),
        "c1");
    assert_string_equal(th_jstr(json_array_get(msgs, 2), "role"), "tool");
    assert_string_equal(th_jstr(json_array_get(msgs, 2), "tool_call_id"), "c1");
    assert_string_equal(th_jstr(json_array_get(msgs, 2), "content"), "sunny");
}

/* ---- custom (free-form) tools (decision 0089) ------------------------------------------------ */

#define CUSTOM_TOOLS                                                                               \
    "\"tools\":[{\"type\":\"custom\",\"custom\":{\"name\":\"apply_patch\",\"description\":"        \
    "\"Edit files.\",\"format\":{\"type\":\"grammar\",\"grammar\":{\"syntax\":\"lark\","           \
    "\"definition\":\"start: begin_patch\"}}}},{\"type\":\"custom\",\"custom\":{\"name\":"         \
    "\"pick\",\"format\":{\"type\":\"grammar\",\"grammar\":{\"syntax\":\"regex\","                 \
    "\"definition\":\"[a-c]+\"}}}}]"
#define PATCH        "*** Begin Patch\n+hi \"x\"\n*** End Patch"
#define PATCH_JSON   "*** Begin Patch\\n+hi \\\"x\\\"\\n*** End Patch"
#define PATCH_SCRIPT "*** Begin Patch\\\\n+hi \\\\\\\"x\\\\\\\"\\\\n*** End Patch"

/*
 * A chat client's custom tools (Codex's apply_patch on GPT-5) are offered upstream as
 * functions of one string, input; the model's call goes back to the client in the custom
 * shape, its input as the model wrote it. A regular expression is checked: an input it does
 * not match is asked again. A custom call in the history goes up as the function call.
 */
static void test_custom_tools_chat(void **state)
{
    static const char body[] =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"add a.txt\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c0\",\"type\":"
        "\"custom\",\"custom\":{\"name\":\"pick\",\"input\":\"ab\"}}]},{\"role\":\"tool\","
        "\"tool_call_id\":\"c0\",\"content\":\"picked\"}],\"tool_choice\":{\"type\":\"custom\","
        "\"custom\":{\"name\":\"apply_patch\"}}," CUSTOM_TOOLS "}";
    const json_t *call, *tools, *input, *msgs;
    const struct ms_request *q;
    struct th_resp r;

    (void)state;
    start();
    script("[{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"apply_patch\",\"arguments\":"
           "\"{\\\"input\\\":\\\"" PATCH_SCRIPT "\\\"}\"}]}]");
    chat(body, NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    call = json_array_get(
        json_object_get(
            json_object_get(json_array_get(json_object_get(r.json, "choices"), 0), "message"),
            "tool_calls"),
        0);
    assert_string_equal(th_jstr(call, "type"), "custom");
    assert_string_equal(th_jstr(call, "id"), "c1");
    assert_null(json_object_get(call, "function"));
    assert_string_equal(th_jstr(json_object_get(call, "custom"), "name"), "apply_patch");
    assert_string_equal(th_jstr(json_object_get(call, "custom"), "input"), PATCH);
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    tools = json_object_get(q->json, "tools");
    assert_string_equal(th_jstr(json_array_get(tools, 0), "type"), "function");
    assert_string_equal(
        th_jstr(json_object_get(json_array_get(tools, 0), "function"), "description"),
        "Edit files.");
    input = json_object_get(
        json_object_get(
            json_object_get(json_object_get(json_array_get(tools, 0), "function"), "parameters"),
            "properties"),
        "input");
    assert_string_equal(th_jstr(input, "type"), "string");
    assert_non_null(strstr(th_jstr(input, "description"), "Lark grammar:\nstart: begin_patch"));
    input = json_object_get(
        json_object_get(
            json_object_get(json_object_get(json_array_get(tools, 1), "function"), "parameters"),
            "properties"),
        "input");
    assert_string_equal(th_jstr(input, "pattern"), "^(?:[a-c]+)$");
    assert_string_equal(
        th_jstr(json_object_get(json_object_get(q->json, "tool_choice"), "function"), "name"),
        "apply_patch");
    msgs = json_object_get(q->json, "messages");
    call = json_array_get(json_object_get(json_array_get(msgs, 1), "tool_calls"), 0);
    assert_string_equal(th_jstr(call, "type"), "function");
    assert_string_equal(th_jstr(json_object_get(call, "function"), "name"), "pick");
    assert_string_equal(th_jstr(json_object_get(call, "function"), "arguments"),
                        "{\"input\":\"ab\"}");

    /* An input the expression does not match is asked again; the stream gets the valid one. */
    script("[{\"tool_calls\":[{\"id\":\"c2\",\"name\":\"pick\",\"arguments\":"
           "\"{\\\"input\\\":\\\"abz\\\"}\"}]},{\"tool_calls\":[{\"id\":\"c3\",\"name\":\"pick\","
           "\"arguments\":\"{\\\"input\\\":\\\"cab\\\"}\"}]}]");
    chat("{\"model\":\"m\",\"stream\":true," USER "," CUSTOM_TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(ms_request_count(F->ms), 2);
    assert_non_null(strstr(r.body, "\"type\":\"custom\",\"custom\":{\"name\":\"pick\","
                                   "\"input\":\"cab\"}"));
    assert_null(strstr(r.body, "\"input\":\"abz\""));
    assert_non_null(strstr(r.body, "must match pattern"));
    assert_null(strstr(r.body, "\"function\""));
    th_resp_free(&r);
}

/* The Responses wire: a custom tool's call is a custom_tool_call item, in a body and in a
 * stream (its input in custom_tool_call_input events); the next turn's custom_tool_call and
 * its output go up as a function call and a tool message. */
static void test_responses_custom_tools(void **state)
{
    static const char tools[] =
        "\"tools\":[{\"type\":\"custom\",\"name\":\"apply_patch\",\"description\":\"Edit "
        "files.\",\"format\":{\"type\":\"grammar\",\"syntax\":\"lark\",\"definition\":\"start: "
        "begin_patch\"}}]";
    static const char reply[] = "[{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"apply_patch\","
                                "\"arguments\":\"{\\\"input\\\":\\\"" PATCH_SCRIPT "\\\"}\"}]}]";
    char body[2048], types[1024];
    const json_t *item, *msgs, *fn;
    json_t *evs;
    struct th_resp r;

    (void)state;
    start();
    script(reply);
    snprintf(body, sizeof(body), "{\"model\":\"m\",\"input\":\"add a.txt\",%s}", tools);
    responses(body, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    item = json_array_get(json_object_get(r.json, "output"), 0);
    assert_string_equal(th_jstr(item, "type"), "custom_tool_call");
    assert_string_equal(th_jstr(item, "call_id"), "c1");
    assert_string_equal(th_jstr(item, "name"), "apply_patch");
    assert_string_equal(th_jstr(item, "input"), PATCH);
    assert_int_equal(strncmp(th_jstr(item, "id"), "ctc_", 4), 0);
    th_resp_free(&r);
    fn = json_object_get(json_array_get(json_object_get(ms_last_request(F->ms)->json, "tools"), 0),
                         "function");
    assert_string_equal(th_jstr(fn, "name"), "apply_patch");

    script(reply);
    snprintf(body, sizeof(body), "{\"model\":\"m\",\"stream\":true,\"input\":\"add a.txt\",%s}",
             tools);
    responses(body, &r);
    assert_int_equal(r.status, 200);
    evs = rs_events(r.body, types, sizeof(types));
    assert_string_equal(types, "response.created response.in_progress response.output_item.added "
                               "response.custom_tool_call_input.delta "
                               "response.custom_tool_call_input.done response.output_item.done "
                               "response.completed");
    assert_string_equal(th_jstr(json_array_get(evs, 3), "delta"), PATCH);
    assert_string_equal(th_jstr(json_array_get(evs, 4), "input"), PATCH);
    assert_string_equal(th_jstr(json_object_get(json_array_get(evs, 5), "item"), "input"), PATCH);
    item = json_array_get(
        json_object_get(json_object_get(json_array_get(evs, 6), "response"), "output"), 0);
    assert_string_equal(th_jstr(item, "type"), "custom_tool_call");
    assert_string_equal(th_jstr(item, "input"), PATCH);
    json_decref(evs);
    th_resp_free(&r);

    script("[{\"text\":\"Done.\"}]");
    snprintf(body, sizeof(body),
             "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":\"add a.txt\"},"
             "{\"type\":\"custom_tool_call\",\"call_id\":\"c1\",\"name\":\"apply_patch\","
             "\"input\":\"" PATCH_JSON "\"},{\"type\":\"custom_tool_call_output\",\"call_id\":"
             "\"c1\",\"output\":\"applied\"}],%s}",
             tools);
    responses(body, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    msgs = json_object_get(ms_last_request(F->ms)->json, "messages");
    assert_int_equal(json_array_size(msgs), 3);
    fn = json_object_get(json_array_get(json_object_get(json_array_get(msgs, 1), "tool_calls"), 0),
                         "function");
    assert_string_equal(th_jstr(fn, "name"), "apply_patch");
    assert_string_equal(th_jstr(fn, "arguments"), "{\"input\":\"" PATCH_JSON "\"}");
    assert_string_equal(th_jstr(json_array_get(msgs, 2), "content"), "applied");
}

/*
 * An upstream of the Responses API takes custom tools as custom tools (decision 0096): the
 * model samples under its grammar, and its custom_tool_call comes back to a Responses or a
 * chat client in the custom shape, checked as before (a regular expression's miss is asked
 * again, the miss going up as a custom_tool_call with its custom_tool_call_output); a custom
 * call in the client's history goes up as one, and a tool_choice of one names its type.
 */
static void test_custom_tools_native_on_responses(void **state)
{
    static const char tools[] =
        "\"tools\":[{\"type\":\"custom\",\"name\":\"apply_patch\",\"description\":\"Edit "
        "files.\",\"format\":{\"type\":\"grammar\",\"syntax\":\"lark\",\"definition\":\"start: "
        "begin_patch\"}},{\"type\":\"custom\",\"name\":\"pick\",\"format\":{\"type\":"
        "\"grammar\",\"syntax\":\"regex\",\"definition\":\"[a-c]+\"}}]";
    char body[2048], types[1024];
    const json_t *item, *up, *in;
    const struct ms_request *q;
    json_t *evs;
    struct th_resp r;

    (void)state;
    start_with("openai-responses", NULL, 0);
    script("[{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"apply_patch\",\"input\":\"" PATCH_JSON
           "\"}]}]");
    snprintf(body, sizeof(body), "{\"model\":\"m\",\"input\":\"add a.txt\",%s}", tools);
    responses(body, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    item = json_array_get(json_object_get(r.json, "output"), 0);
    assert_string_equal(th_jstr(item, "type"), "custom_tool_call");
    assert_string_equal(th_jstr(item, "call_id"), "c1");
    assert_string_equal(th_jstr(item, "input"), PATCH);
    th_resp_free(&r);
    up = json_object_get(ms_last_request(F->ms)->json, "tools");
    assert_int_equal(json_array_size(up), 2);
    assert_string_equal(th_jstr(json_array_get(up, 0), "type"), "custom");
    assert_string_equal(th_jstr(json_array_get(up, 0), "name"), "apply_patch");
    assert_string_equal(th_jstr(json_array_get(up, 0), "description"), "Edit files.");
    assert_string_equal(th_jstr(json_object_get(json_array_get(up, 0), "format"), "definition"),
                        "start: begin_patch");
    assert_string_equal(th_jstr(json_array_get(up, 1), "name"), "pick");

    /* streamed: the input's pieces arrive whole, once the call was checked */
    script("[{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"apply_patch\",\"input\":[\"*** Begin "
           "Patch\\n\",\"+hi \\\"x\\\"\\n*** End Patch\"]}]}]");
    snprintf(body, sizeof(body), "{\"model\":\"m\",\"stream\":true,\"input\":\"add a.txt\",%s}",
             tools);
    responses(body, &r);
    assert_int_equal(r.status, 200);
    evs = rs_events(r.body, types, sizeof(types));
    assert_string_equal(types, "response.created response.in_progress response.output_item.added "
                               "response.custom_tool_call_input.delta "
                               "response.custom_tool_call_input.done response.output_item.done "
                               "response.completed");
    assert_string_equal(th_jstr(json_array_get(evs, 4), "input"), PATCH);
    json_decref(evs);
    th_resp_free(&r);

    /* a miss of the expression is asked again as the custom call it was */
    script("[{\"tool_calls\":[{\"id\":\"c2\",\"name\":\"pick\",\"input\":\"abz\"}]},"
           "{\"tool_calls\":[{\"id\":\"c3\",\"name\":\"pick\",\"input\":\"cab\"}]}]");
    snprintf(body, sizeof(body), "{\"model\":\"m\",\"input\":\"pick\",%s}", tools);
    responses(body, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    item = json_array_get(json_object_get(r.json, "output"), 0);
    assert_string_equal(th_jstr(item, "call_id"), "c3");
    assert_string_equal(th_jstr(item, "input"), "cab");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 2);
    in = json_object_get(ms_last_request(F->ms)->json, "input");
    assert_string_equal(th_jstr(json_array_get(in, 1), "type"), "custom_tool_call");
    assert_string_equal(th_jstr(json_array_get(in, 1), "input"), "abz");
    assert_string_equal(th_jstr(json_array_get(in, 2), "type"), "custom_tool_call_output");
    assert_non_null(strstr(th_jstr(json_array_get(in, 2), "output"), "must match pattern"));

    /* the client's own custom call and its output go up as they were */
    script("[{\"text\":\"Done.\"}]");
    snprintf(body, sizeof(body),
             "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":\"add a.txt\"},"
             "{\"type\":\"custom_tool_call\",\"call_id\":\"c1\",\"name\":\"apply_patch\","
             "\"input\":\"" PATCH_JSON "\"},{\"type\":\"custom_tool_call_output\",\"call_id\":"
             "\"c1\",\"output\":\"applied\"}],%s}",
             tools);
    responses(body, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    in = json_object_get(ms_last_request(F->ms)->json, "input");
    assert_int_equal(json_array_size(in), 3);
    assert_string_equal(th_jstr(json_array_get(in, 1), "type"), "custom_tool_call");
    assert_string_equal(th_jstr(json_array_get(in, 1), "input"), PATCH);
    assert_string_equal(th_jstr(json_array_get(in, 2), "type"), "custom_tool_call_output");
    assert_string_equal(th_jstr(json_array_get(in, 2), "output"), "applied");

    /* a chat client's custom tools, history and forced choice */
    script("[{\"tool_calls\":[{\"id\":\"c4\",\"name\":\"apply_patch\",\"input\":\"" PATCH_JSON
           "\"}]}]");
    chat("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"add a.txt\"},"
         "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c0\",\"type\":"
         "\"custom\",\"custom\":{\"name\":\"pick\",\"input\":\"ab\"}}]},{\"role\":\"tool\","
         "\"tool_call_id\":\"c0\",\"content\":\"picked\"}],\"tool_choice\":{\"type\":\"custom\","
         "\"custom\":{\"name\":\"apply_patch\"}}," CUSTOM_TOOLS "}",
         NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    item = json_array_get(
        json_object_get(
            json_object_get(json_array_get(json_object_get(r.json, "choices"), 0), "message"),
            "tool_calls"),
        0);
    assert_string_equal(th_jstr(item, "type"), "custom");
    assert_string_equal(th_jstr(json_object_get(item, "custom"), "input"), PATCH);
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(th_jstr(json_object_get(q->json, "tool_choice"), "type"), "custom");
    assert_string_equal(th_jstr(json_object_get(q->json, "tool_choice"), "name"), "apply_patch");
    assert_string_equal(th_jstr(json_array_get(json_object_get(q->json, "tools"), 0), "type"),
                        "custom");
    in = json_object_get(q->json, "input");
    assert_string_equal(th_jstr(json_array_get(in, 1), "type"), "custom_tool_call");
    assert_string_equal(th_jstr(json_array_get(in, 1), "input"), "ab");
    assert_string_equal(th_jstr(json_array_get(in, 2), "type"), "custom_tool_call_output");
}

/*
 * A tool choice only the Responses API has (a hosted tool's type, allowed_tools) goes up as
 * written to an upstream of that API; another upstream cannot carry it: a 400 that says where
 * it can go.
 */
static void test_responses_choice_only_that_api_has(void **state)
{
    static const char *const choices[] = {
        "{\"type\":\"web_search\"}",
        "{\"type\":\"allowed_tools\",\"mode\":\"required\",\"tools\":[{\"type\":\"function\","
        "\"name\":\"get_weather\"}]}",
    };
    char body[1024];
    struct th_resp r;
    json_t *want;

    (void)state;
    start_with("openai-responses", NULL, 0);
    for (size_t i = 0; i < sizeof(choices) / sizeof(choices[0]); i++) {
        script("[{\"text\":\"ok\"}]");
        snprintf(body, sizeof(body),
                 "{\"model\":\"m\",\"input\":\"weather?\",\"tool_choice\":%s,\"tools\":[{\"type\":"
                 "\"web_search\"},{\"type\":\"function\",\"name\":\"get_weather\",\"parameters\":"
                 "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}]}",
                 choices[i]);
        responses(body, &r);
        if (r.status != 200)
            fail_msg("%ld %s", r.status, r.body);
        th_resp_free(&r);
        want = json_loads(choices[i], 0, NULL);
        assert_true(json_equal(json_object_get(ms_last_request(F->ms)->json, "tool_choice"), want));
        json_decref(want);
    }
    teardown(NULL);
    start();
    responses("{\"model\":\"m\",\"input\":\"weather?\",\"tool_choice\":{\"type\":\"web_search\"},"
              "\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\"}]}",
              &r);
    assert_oa_error(&r, 400, "upstream of the Responses API");
    th_resp_free(&r);
}

/* POST /v1/responses with an Authorization header (key NULL: none). */
static void responses_as(const char *key, const char *body, struct th_resp *r)
{
    char auth[128];
    const char *h[] = {"Content-Type: application/json", auth, NULL};

    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key ? key : "");
    if (!key)
        h[1] = NULL;
    th_http("POST", u("/v1/responses"), body, h, r);
}

/* The roles of the messages the upstream was asked last, joined by spaces. */
static const char *upstream_roles(char *out, size_t cap)
{
    const json_t *msgs = json_object_get(ms_last_request(F->ms)->json, "messages");
    size_t i, n = 0;
    json_t *m;

    out[0] = '\0';
    json_array_foreach(msgs, i, m)
    {
        n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? " " : "", th_jstr(m, "role"));
    }
    return out;
}

/*
 * A response asked with store true (the API's default) is kept: the next request continues it
 * by previous_response_id, or names its items by item_reference (the Vercel AI SDK's OpenAI
 * provider does, from its second step on), streamed or not. Another client's key finds
 * nothing, and a response asked with store false is not kept.
 */
static void test_responses_kept_for_the_next_turn(void **state)
{
    char body[2048], roles[256], id[128], msg_id[128], fc_id[128];
    const json_t *out, *msgs;
    json_t *evs;
    struct th_resp r;

    (void)state;
    start();
    script("[" RS_CALL_REPLY ",{\"text\":\"Sunny.\",\"times\":3}]");
    responses_as("k1", "{\"model\":\"m\",\"input\":\"weather in Paris?\"," RS_TOOLS "}", &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_true(json_is_true(json_object_get(r.json, "store")));
    out = json_object_get(r.json, "output");
    snprintf(id, sizeof(id), "%s", th_jstr(r.json, "id"));
    snprintf(msg_id, sizeof(msg_id), "%s", th_jstr(json_array_get(out, 0), "id"));
    snprintf(fc_id, sizeof(fc_id), "%s", th_jstr(json_array_get(out, 1), "id"));
    th_resp_free(&r);

    /* previous_response_id: the conversation before is the kept input and output */
    snprintf(body, sizeof(body),
             "{\"model\":\"m\",\"previous_response_id\":\"%s\",\"input\":[{\"type\":"
             "\"function_call_output\",\"call_id\":\"c1\",\"output\":\"sunny\"}]," RS_TOOLS "}",
             id);
    responses_as("k1", body, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(th_jstr(r.json, "previous_response_id"), id);
    th_resp_free(&r);
    assert_string_equal(upstream_roles(roles, sizeof(roles)), "user assistant tool");
    msgs = json_object_get(ms_last_request(F->ms)->json, "messages");
    assert_string_equal(
        th_jstr(json_array_get(json_object_get(json_array_get(msgs, 1), "tool_calls"), 0), "id"),
        "c1");

    /* item_reference, in a stream */
    snprintf(body, sizeof(body),
             "{\"model\":\"m\",\"stream\":true,\"input\":[{\"role\":\"user\",\"content\":"
             "\"weather in Paris?\"},{\"type\":\"item_reference\",\"id\":\"%s\"},{\"type\":"
             "\"item_reference\",\"id\":\"%s\"},{\"type\":\"function_call_output\",\"call_id\":"
             "\"c1\",\"output\":\"sunny\"}]," RS_TOOLS "}",
             msg_id, fc_id);
    responses_as("k1", body, &r);
    assert_int_equal(r.status, 200);
    evs = rs_events(r.body, roles, sizeof(roles));
    assert_true(json_is_true(json_object_get(
        json_object_get(json_array_get(evs, json_array_size(evs) - 1), "response"), "store")));
    json_decref(evs);
    th_resp_free(&r);
    assert_string_equal(upstream_roles(roles, sizeof(roles)), "user assistant tool");

    /* another client's key finds nothing; nor does a key-less client */
    responses_as("k2", body, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "not found"));
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "param"), "input");
    th_resp_free(&r);
    snprintf(body, sizeof(body),
             "{\"model\":\"m\",\"previous_response_id\":\"%s\",\"input\":\"x\"}", id);
    responses_as(NULL, body, &r);
    assert_int_equal(r.status, 400);
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "param"), "previous_response_id");
    th_resp_free(&r);

    assert_int_equal(ms_request_count(F->ms), 3); /* the refused two asked nothing */

    /* store false: not kept */
    script("[{\"text\":\"ok\"}]");
    responses_as("k1", "{\"model\":\"m\",\"store\":false,\"input\":\"hi\"}", &r);
    assert_int_equal(r.status, 200);
    assert_true(json_is_false(json_object_get(r.json, "store")));
    snprintf(body, sizeof(body),
             "{\"model\":\"m\",\"previous_response_id\":\"%s\",\"input\":\"x\"}",
             th_jstr(r.json, "id"));
    th_resp_free(&r);
    responses_as("k1", body, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "not found"));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 1);
    /* the three kept answers, in the gauges */
    assert_true(rein_metric_value(rein_metrics_family(F->metrics, REIN_METRIC_GAUGE,
                                                      "rein_gateway_kept_responses", NULL, NULL,
                                                      NULL, 0, NULL),
                                  NULL) == 3);
    assert_true(
        rein_metric_value(rein_metrics_family(F->metrics, REIN_METRIC_GAUGE,
                                              "rein_gateway_kept_bytes", NULL, NULL, NULL, 0, NULL),
                          NULL) > 100);
}

/* A GET or DELETE of path with key as the client's Bearer token. */
static void kept_as(const char *method, const char *key, const char *path, struct th_resp *r)
{
    char auth[128];
    const char *h[] = {auth, NULL};

    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
    th_http(method, u(path), NULL, h, r);
}

/* The error's param of an OpenAI error answer r, with its status checked. */
static const char *err_param(const struct th_resp *r, long status)
{
    if (r->status != status)
        fail_msg("%ld, not %ld: %s", r->status, status, r->body);
    return th_jstr(json_object_get(r->json, "error"), "param");
}

/*
 * A kept response can be read again as it was answered (JSON or stream), its own input listed
 * a page at a time, and deleted, by the client that made it only (GET and DELETE
 * /v1/responses/{id}, GET /v1/responses/{id}/input_items).
 */
static void test_responses_kept_read_and_deleted(void **state)
{
    static const struct {
        const char *query, *param;
    } refused[] = {
        {"/input_items?limit=0", "limit"},
        {"/input_items?order=up", "order"},
        {"/input_items?after=msg_none", "after"},
        {"?stream=true", "stream"},
    };
    char path[512], id[128], sid[128], first[128], types[512];
    json_t *answered, *evs, *completed;
    const json_t *data;
    struct th_resp r;

    (void)state;
    start();
    script("[{\"text\":\"Sunny.\",\"times\":2}]");
    responses_as("k1", "{\"model\":\"m\",\"input\":\"weather in Paris?\"}", &r);
    assert_int_equal(r.status, 200);
    snprintf(id, sizeof(id), "%s", th_jstr(r.json, "id"));
    answered = json_incref(r.json);
    th_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/responses/%s", id);
    kept_as("GET", "k1", path, &r);
    assert_int_equal(r.status, 200);
    assert_true(json_equal(r.json, answered));
    th_resp_free(&r);
    json_decref(answered);

    /* streamed: the response of response.completed; three input items, listed by page */
    responses_as("k1",
                 "{\"model\":\"m\",\"stream\":true,\"input\":[{\"role\":\"developer\",\"content\":"
                 "\"be brief\"},{\"role\":\"user\",\"content\":\"hi\"},{\"type\":\"message\","
                 "\"role\":\"user\",\"id\":\"msg_mine\",\"content\":[{\"type\":\"input_text\","
                 "\"text\":\"weather?\"}]}]}",
                 &r);
    assert_int_equal(r.status, 200);
    evs = rs_events(r.body, types, sizeof(types));
    completed =
        json_incref(json_object_get(json_array_get(evs, json_array_size(evs) - 1), "response"));
    json_decref(evs);
    th_resp_free(&r);
    snprintf(sid, sizeof(sid), "%s", th_jstr(completed, "id"));
    snprintf(path, sizeof(path), "/v1/responses/%s", sid);
    kept_as("GET", "k1", path, &r);
    assert_int_equal(r.status, 200);
    assert_true(json_equal(r.json, completed));
    th_resp_free(&r);
    json_decref(completed);

    snprintf(path, sizeof(path), "/v1/responses/%s/input_items?limit=2", sid);
    kept_as("GET", "k1", path, &r);
    assert_int_equal(r.status, 200);
    data = json_object_get(r.json, "data");
    assert_int_equal(json_array_size(data), 2);
    assert_true(json_is_true(json_object_get(r.json, "has_more")));
    assert_string_equal(th_jstr(json_array_get(data, 0), "id"), "msg_mine"); /* newest first */
    assert_string_equal(th_jstr(json_array_get(data, 1), "type"), "message");
    assert_string_equal(
        th_jstr(json_array_get(json_object_get(json_array_get(data, 1), "content"), 0), "type"),
        "input_text");
    assert_string_equal(th_jstr(r.json, "last_id"), th_jstr(json_array_get(data, 1), "id"));
    snprintf(first, sizeof(first), "%s", th_jstr(json_array_get(data, 1), "id"));
    th_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/responses/%s/input_items?after=%s", sid, first);
    kept_as("GET", "k1", path, &r); /* the id made up for an item is the same on every read */
    assert_int_equal(r.status, 200);
    assert_int_equal(json_array_size(json_object_get(r.json, "data")), 1);
    assert_string_equal(th_jstr(json_array_get(json_object_get(r.json, "data"), 0), "role"),
                        "developer");
    assert_true(json_is_false(json_object_get(r.json, "has_more")));
    th_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/responses/%s/input_items?order=asc&limit=1", sid);
    kept_as("GET", "k1", path, &r);
    assert_string_equal(th_jstr(json_array_get(json_object_get(r.json, "data"), 0), "role"),
                        "developer");
    th_resp_free(&r);

    /* what is refused, and what another client cannot see */
    for (size_t i = 0; i < REIN_ARRAY_SIZE(refused); i++) {
        snprintf(path, sizeof(path), "/v1/responses/%s%s", sid, refused[i].query);
        kept_as("GET", "k1", path, &r);
        assert_string_equal(err_param(&r, 400), refused[i].param);
        th_resp_free(&r);
    }
    snprintf(path, sizeof(path), "/v1/responses/%s", sid);
    kept_as("GET", "k2", path, &r);
    assert_null(err_param(&r, 404));
    assert_non_null(strstr(r.body, "not found"));
    th_resp_free(&r);
    kept_as("DELETE", "k2", path, &r);
    assert_null(err_param(&r, 404));
    th_resp_free(&r);

    /* deleted: gone for reads and for the next turn */
    kept_as("DELETE", "k1", path, &r);
    assert_int_equal(r.status, 200);
    assert_true(json_is_true(json_object_get(r.json, "deleted")));
    assert_string_equal(th_jstr(r.json, "id"), sid);
    th_resp_free(&r);
    kept_as("GET", "k1", path, &r);
    assert_null(err_param(&r, 404));
    th_resp_free(&r);
    kept_as("DELETE", "k1", path, &r);
    assert_null(err_param(&r, 404));
    th_resp_free(&r);
    snprintf(path, sizeof(path),
             "{\"model\":\"m\",\"previous_response_id\":\"%s\",\"input\":\"x\"}", sid);
    responses_as("k1", path, &r);
    assert_string_equal(err_param(&r, 400), "previous_response_id");
    th_resp_free(&r);
    assert_true(rein_metric_value(rein_metrics_family(F->metrics, REIN_METRIC_GAUGE,
                                                      "rein_gateway_kept_responses", NULL, NULL,
                                                      NULL, 0, NULL),
                                  NULL) == 1);
}

/* The kept response id of key once it is no longer in progress (10 s at most); its status. */
static const char *settled(const char *key, const char *id, struct th_resp *r)
{
    char path[256];

    snprintf(path, sizeof(path), "/v1/responses/%s", id);
    for (int i = 0; i < 1000; i++) {
        kept_as("GET", key, path, r);
        if (r->status != 200)
            fail_msg("%ld %s", r->status, r->body);
        if (strcmp(th_jstr(r->json, "status"), "in_progress") != 0)
            return th_jstr(r->json, "status");
        th_resp_free(r);
        rein_sleep_ms(10);
    }
    fail_msg("response %s still in progress after 10 s", id);
    return NULL;
}

static double background_running(void)
{
    return rein_metric_value(rein_metrics_family(F->metrics, REIN_METRIC_GAUGE,
                                                 "rein_gateway_background_responses", NULL, NULL,
                                                 NULL, 0, NULL),
                             NULL);
}

/* Waits (10 s at most) for the gauge of background responses running to be n. */
static void running_becomes(double n)
{
    for (int i = 0; i < 1000 && background_running() != n; i++)
        rein_sleep_ms(10);
    assert_true(background_running() == n);
}

/* Waits (up to 10 s) until the model server has seen n requests: a background job sends its
 * upstream request on its own thread, later than its client's answer on a loaded machine. */
static void upstream_requests_become(size_t n)
{
    for (int i = 0; i < 1000 && ms_request_count(F->ms) < n; i++)
        rein_sleep_ms(10);
    assert_int_equal(ms_request_count(F->ms), n);
}

/*
 * A Responses request with background true is answered in progress at once; the rounds go on
 * (a re-ask among them), GET reads the answer when it is there, and it can be continued. One
 * still running cannot be continued, and one whose upstream fails is kept failed with the
 * upstream's error.
 */
static void test_responses_in_the_background(void **state)
{
    char id[128], body[512];
    struct th_resp r;

    (void)state;
    start();
    script("[{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"get_weather\",\"arguments\":"
           "\"{\\\"town\\\":\\\"Paris\\\"}\"}]},{\"tool_calls\":[{\"id\":\"c2\",\"name\":"
           "\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]}]");
    responses_as(
        "k1", "{\"model\":\"m\",\"background\":true,\"input\":\"weather in Paris?\"," RS_TOOLS "}",
        &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    /* the answer of the request is the response in progress, whatever the upstream does */
    assert_string_equal(th_jstr(r.json, "status"), "in_progress");
    assert_true(json_is_true(json_object_get(r.json, "background")));
    assert_true(json_is_null(json_object_get(r.json, "usage")));
    assert_int_equal(json_array_size(json_object_get(r.json, "output")), 0);
    snprintf(id, sizeof(id), "%s", th_jstr(r.json, "id"));
    th_resp_free(&r);
    snprintf(body, sizeof(body),
             "{\"model\":\"m\",\"previous_response_id\":\"%s\",\"input\":[{\"type\":"
             "\"function_call_output\",\"call_id\":\"c2\",\"output\":\"sunny\"}]}",
             id);

    assert_string_equal(settled("k1", id, &r), "completed");
    assert_string_equal(th_jstr(json_array_get(json_object_get(r.json, "output"), 0), "call_id"),
                        "c2");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r.json, "rein"), "reasks")),
                     1);
    assert_true(json_is_true(json_object_get(r.json, "background")));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 2);
    script("[{\"text\":\"Sunny.\"}]");
    responses_as("k1", body, &r);
    assert_int_equal(r.status, 200);
    assert_true(json_is_false(json_object_get(r.json, "background")));
    th_resp_free(&r);
    running_becomes(0); /* the job leaves the count after it kept its answer */

    /* the upstream fails: kept failed, with the upstream's words */
    script("[{\"status\":400,\"error\":{\"type\":\"invalid_request_error\",\"code\":"
           "\"context_length_exceeded\",\"message\":\"Too long.\"}}]");
    responses_as("k1", "{\"model\":\"m\",\"background\":true,\"input\":\"hi\"}", &r);
    assert_int_equal(r.status, 200);
    snprintf(id, sizeof(id), "%s", th_jstr(r.json, "id"));
    th_resp_free(&r);
    assert_string_equal(settled("k1", id, &r), "failed");
    /* the error the client would have got in the foreground (OpenAI's two APIs write their
     * errors alike: the upstream's code reaches the client) */
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "code"),
                        "context_length_exceeded");
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "message"), "Too long.");
    th_resp_free(&r);
}

/*
 * A background response is stopped by its client (POST /v1/responses/{id}/cancel: its
 * upstream call ends and it is kept cancelled; cancelling again changes nothing), not by
 * another; a response in the foreground cannot be cancelled. At most background_max run at
 * once, a client at most half of them: more is a 429, and the gateway's end stops the rest.
 */
static void test_responses_background_cancel_and_bounds(void **state)
{
    static const char hang[] = "{\"model\":\"m\",\"background\":true,\"input\":\"hi\"}";
    char id[128], id2[128], path[256];
    struct th_resp r;

    (void)state;
    next_background = 2;
    start();
    script("[{\"fault\":{\"hang\":true},\"times\":3},{\"text\":\"ok\"}]");
    responses_as("k1", hang, &r);
    assert_int_equal(r.status, 200);
    snprintf(id, sizeof(id), "%s", th_jstr(r.json, "id"));
    th_resp_free(&r);
    /* still running: it cannot be continued */
    snprintf(path, sizeof(path),
             "{\"model\":\"m\",\"previous_response_id\":\"%s\",\"input\":\"more\"}", id);
    responses_as("k1", path, &r);
    assert_string_equal(err_param(&r, 400), "previous_response_id");
    assert_non_null(strstr(r.body, "did not complete"));
    th_resp_free(&r);
    responses_as("k1", hang, &r); /* half of 2 per client */
    assert_int_equal(r.status, 429);
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "code"), "rate_limit_exceeded");
    th_resp_free(&r);
    responses_as("k2", hang, &r);
    assert_int_equal(r.status, 200);
    snprintf(id2, sizeof(id2), "%s", th_jstr(r.json, "id"));
    th_resp_free(&r);
    responses_as("k3", hang, &r); /* 2 in all */
    assert_int_equal(r.status, 429);
    th_resp_free(&r);
    assert_true(background_running() == 2);
    /* both hang upstream before the script changes: a request of k2's job sent after that
     * would take the next script's reply */
    upstream_requests_become(2);

    snprintf(path, sizeof(path), "/v1/responses/%s/cancel", id);
    kept_as("POST", "k2", path, &r); /* not k2's */
    assert_null(err_param(&r, 404));
    th_resp_free(&r);
    kept_as("POST", "k1", path, &r); /* answered once it stopped (it waits up to 10 s) */
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    assert_string_equal(settled("k1", id, &r), "cancelled");
    th_resp_free(&r);
    kept_as("POST", "k1", path, &r); /* again: nothing changes */
    assert_int_equal(r.status, 200);
    assert_string_equal(th_jstr(r.json, "status"), "cancelled");
    th_resp_free(&r);
    running_becomes(1);

    /* a response of the foreground */
    script("[{\"text\":\"ok\"}]");
    responses_as("k1", "{\"model\":\"m\",\"input\":\"hi\"}", &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    snprintf(path, sizeof(path), "/v1/responses/%s/cancel", th_jstr(r.json, "id"));
    th_resp_free(&r);
    kept_as("POST", "k1", path, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "background=true"));
    th_resp_free(&r);
    (void)id2; /* k2's still hangs: the teardown's rein_gateway_free stops it */
    teardown(NULL);

    /* a gateway that runs none says so */
    next_background = -1;
    start();
    responses_as("k1", hang, &r);
    assert_string_equal(err_param(&r, 400), "background");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0);
}

/* GET path (no key) into r. */
static void get_path(const char *path, struct th_resp *r)
{
    th_http("GET", u(path), NULL, NULL, r);
}

/* The stream of the response id from after sequence number after (-1: all), as GET
 * /v1/responses/{id}?stream=true gives it (no key). */
static void stream_of(const char *id, long after, struct th_resp *r)
{
    char path[256];

    if (after < 0)
        snprintf(path, sizeof(path), "/v1/responses/%s?stream=true", id);
    else
        snprintf(path, sizeof(path), "/v1/responses/%s?stream=true&starting_after=%ld", id, after);
    get_path(path, r);
}

/* Where the event of index i starts in an SSE text (its "event: " line); NULL: none. */
static const char *event_at(const char *sse, size_t i)
{
    const char *p = strstr(sse, "event: ");

    for (; p && i > 0; i--)
        p = strstr(p + 1, "\nevent: ") ? strstr(p + 1, "\nevent: ") + 1 : NULL;
    return p;
}

/* The response id in a Responses stream's first event. */
static void stream_id(const char *sse, char *id, size_t cap)
{
    const char *p = strstr(sse, "\"id\":\"resp_");

    if (!p)
        fail_msg("no response id in %s", sse);
    snprintf(id, cap, "%.*s", (int)strcspn(p + 6, "\""), p + 6);
}

/*
 * A background response asked with stream is answered with its stream, the same events a
 * stream in the foreground gives, while it runs on; GET ?stream=true replays them whole or
 * after starting_after, to the client that made it only; a response without kept events, a
 * bad starting_after and one past the end are refused by name.
 */
static void test_responses_background_stream(void **state)
{
    static const char fg[] = "{\"model\":\"m\",\"stream\":true,\"input\":\"hi\"}";
    static const char bg[] =
        "{\"model\":\"m\",\"stream\":true,\"background\":true,\"input\":\"hi\"}";
    char id[128], fid[128], types[2048], want[2048], path[256];
    struct th_resp r, all;
    json_t *evs;
    size_t n;

    (void)state;
    start();
    script("[{\"text\":[\"Hel\",\"lo \",\"wor\",\"ld\"],\"times\":2},{\"text\":\"ok\"}]");
    responses_as(NULL, fg, &r);
    assert_int_equal(r.status, 200);
    json_decref(rs_events(r.body, want, sizeof(want)));
    stream_id(r.body, fid, sizeof(fid));
    th_resp_free(&r);

    responses_as(NULL, bg, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(th_header(&r, "Content-Type"), "text/event-stream"));
    evs = rs_events(r.body, types, sizeof(types)); /* numbered from 0, in order */
    assert_string_equal(types, want);
    n = json_array_size(evs);
    assert_string_equal(th_jstr(json_array_get(evs, n - 1), "type"), "response.completed");
    assert_true(json_is_true(
        json_object_get(json_object_get(json_array_get(evs, n - 1), "response"), "background")));
    json_decref(evs);
    stream_id(r.body, id, sizeof(id));

    /* replayed whole after the end, the same bytes; and after starting_after */
    stream_of(id, -1, &all);
    assert_int_equal(all.status, 200);
    assert_string_equal(all.body, r.body);
    th_resp_free(&r);
    stream_of(id, 3, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, event_at(all.body, 4));
    th_resp_free(&r);
    stream_of(id, (long)n - 1, &r); /* at the end: nothing more */
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, 0);
    th_resp_free(&r);
    stream_of(id, (long)n, &r); /* past the end */
    assert_string_equal(err_param(&r, 400), "starting_after");
    th_resp_free(&r);
    th_resp_free(&all);
    for (int i = 0; i < 3; i++) {
        static const char *const bad[] = {"x", "-1", "1.5"};
        snprintf(path, sizeof(path), "/v1/responses/%s?stream=true&starting_after=%s", id, bad[i]);
        get_path(path, &r);
        assert_string_equal(err_param(&r, 400), "starting_after");
        th_resp_free(&r);
    }
    /* another key's, an unknown one */
    snprintf(path, sizeof(path), "/v1/responses/%s?stream=true", id);
    kept_as("GET", "k2", path, &r);
    assert_null(err_param(&r, 404));
    th_resp_free(&r);
    stream_of("resp_unknown", -1, &r);
    assert_null(err_param(&r, 404));
    th_resp_free(&r);
    /* kept, but without events: a foreground stream, a background response without stream */
    stream_of(fid, -1, &r);
    assert_string_equal(err_param(&r, 400), "stream");
    assert_non_null(strstr(r.body, "background=true and stream=true"));
    th_resp_free(&r);
    responses_as(NULL, "{\"model\":\"m\",\"background\":true,\"input\":\"hi\"}", &r);
    snprintf(fid, sizeof(fid), "%s", th_jstr(r.json, "id"));
    th_resp_free(&r);
    stream_of(fid, -1, &r);
    assert_string_equal(err_param(&r, 400), "stream");
    th_resp_free(&r);
    /* GET without stream reads the response as before */
    snprintf(path, sizeof(path), "/v1/responses/%s", id);
    get_path(path, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(th_jstr(r.json, "status"), "completed");
    th_resp_free(&r);
}

/*
 * A client that hangs up in the middle of a background stream leaves the response running;
 * resumed with starting_after, it gets exactly the events it had not got, to the end.
 */
static void test_responses_background_stream_resumed(void **state)
{
    static const char bg[] =
        "{\"model\":\"m\",\"stream\":true,\"background\":true,\"input\":\"hi\"}";
    char id[128], types[2048];
    struct th_resp r, rest, all;

    (void)state;
    start();
    script("[{\"text\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\"],\"delay_chunk_ms\":30}]");
    /* events 0 to 4 are whole once 5 has begun */
    th_post_sse_until(u("/v1/responses"), bg, "\"sequence_number\":5,", &r);
    stream_id(r.body, id, sizeof(id));
    th_resp_free(&r);
    stream_of(id, 4, &rest); /* follows the rest as it comes, whether it ended or not */
    assert_int_equal(rest.status, 200);
    assert_string_equal(settled("", id, &r), "completed");
    th_resp_free(&r);
    stream_of(id, -1, &all);
    json_decref(rs_events(all.body, types, sizeof(types)));
    assert_non_null(strstr(types, "response.output_text.delta"));
    assert_string_equal(rest.body, event_at(all.body, 5));
    assert_non_null(strstr(rest.body, "event: response.completed\n"));
    th_resp_free(&rest);
    th_resp_free(&all);
}

/*
 * The response's own cancel ends its followers with response.failed holding it cancelled;
 * the gateway's end ends one still waiting; a stream larger than the gateway keeps ends with
 * an error event, and a resume is refused, while the response itself is kept.
 */
static void test_responses_background_stream_ends(void **state)
{
    static const char bg[] =
        "{\"model\":\"m\",\"stream\":true,\"background\":true,\"input\":\"hi\"}";
    char id[128], path[256], big[4096];
    struct th_bg *f;
    struct th_resp r;
    size_t n = 0;

    (void)state;
    start();
    script("[{\"text\":[\"a\",\"b\",\"c\"],\"fault\":{\"hang_after_events\":2},\"times\":2}]");
    th_post_sse_until(u("/v1/responses"), bg, "\"sequence_number\":2,", &r);
    stream_id(r.body, id, sizeof(id));
    th_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/responses/%s?stream=true&starting_after=1", id);
    f = th_bg_get(u(path));
    assert_true(th_bg_wait_body(f, "\"sequence_number\":2,", 10000)); /* it follows */
    snprintf(path, sizeof(path), "/v1/responses/%s/cancel", id);
    th_http("POST", u(path), NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(th_jstr(r.json, "status"), "cancelled");
    th_resp_free(&r);
    th_bg_join(f);
    assert_int_equal(f->r.status, 200);
    assert_null(strstr(f->r.body, "\"sequence_number\":1,"));
    assert_non_null(strstr(f->r.body, "event: response.failed\n"));
    assert_non_null(strstr(event_at(f->r.body, 0), "\"status\":\"cancelled\""));
    th_bg_free(f);

    /* the gateway ends while a follower waits */
    th_post_sse_until(u("/v1/responses"), bg, "\"sequence_number\":2,", &r);
    stream_id(r.body, id, sizeof(id));
    th_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/responses/%s?stream=true", id);
    f = th_bg_get(u(path));
    assert_true(th_bg_wait_body(f, "\"sequence_number\":2,", 10000));
    teardown(NULL);
    th_bg_join(f);
    th_bg_free(f);

    /* larger than kept: the stream ends with an error event, never a gap */
    next_keep_bytes = 16 * 1024;
    start();
    n += (size_t)snprintf(big + n, sizeof(big) - n, "[{\"text\":[");
    for (int i = 0; i < 80; i++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "%s\"%s\"", i ? "," : "",
                              "0123456789012345678901234567890123456789");
    snprintf(big + n, sizeof(big) - n, "]}]");
    script(big);
    responses_as(NULL, bg, &r);
    assert_int_equal(r.status, 200);
    assert_null(strstr(r.body, "response.completed"));
    assert_non_null(strstr(r.body, "event: error\n"));
    assert_non_null(strstr(r.body, "\"code\":\"events_not_kept\""));
    stream_id(r.body, id, sizeof(id));
    th_resp_free(&r);
    assert_string_equal(settled("", id, &r), "completed");
    th_resp_free(&r);
    stream_of(id, -1, &r);
    assert_string_equal(err_param(&r, 400), "stream");
    assert_non_null(strstr(r.body, "no longer kept"));
    th_resp_free(&r);
}

/* What rein cannot do on this wire is refused by name, before the upstream is asked. */
static void test_responses_refusals(void **state)
{
    static const struct {
        const char *body, *param;
    } cases[] = {
        {"{\"model\":\"m\",\"input\":\"hi\",\"previous_response_id\":\"resp_1\"}",
         "previous_response_id"},
        {"{\"model\":\"m\",\"input\":\"hi\",\"tools\":[{\"type\":\"web_search\"}]}",
         "tools[0].type"},
        {"{\"model\":\"m\",\"input\":[{\"type\":\"item_reference\",\"id\":\"msg_1\"}]}", "input"},
        {"{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\","
         "\"file_id\":\"f\"}]}]}",
         "input[0].content[0]"},
        {"{\"model\":\"m\",\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\"}]}",
         "input[0]"},
        {"{\"model\":\"m\"}", "input"},
        {"{\"model\":\"m\",\"input\":7}", "input"},
        {"{\"model\":\"m\",\"input\":\"hi\",\"backgr\\u006fund\":true}", "background"},
        {"{\"model\":\"m\",\"input\":\"hi\",\"background\":true,\"store\":false}", "store"},
        {"{\"model\":\"m\",\"input\":7,\"background\":true}", "input"},
        {"{\"model\":\"m\",\"input\":\"hi\",\"max_output_tokens\":\"x\"}", "max_output_tokens"},
        {"{\"model\":\"m\",\"input\":\"hi\",", ""},
    };
    struct th_resp r;

    (void)state;
    start();
    script("[{\"text\":\"ok\",\"times\":0}]");
    for (size_t i = 0; i < REIN_ARRAY_SIZE(cases); i++) {
        const json_t *e;
        responses(cases[i].body, &r);
        e = json_object_get(r.json, "error");
        if (r.status != 400 || !e ||
            strcmp(th_jstr(e, "param") ? th_jstr(e, "param") : "", cases[i].param) != 0)
            fail_msg("case %zu: want 400 on %s, got %ld: %s", i, cases[i].param, r.status, r.body);
        th_resp_free(&r);
    }
    assert_int_equal(ms_request_count(F->ms), 0);
}

/* An upstream that fails after the stream began ends it with the API's error event, after
 * the text the client already has, and no response.completed. */
static void test_responses_error_after_the_stream_began(void **state)
{
    char types[1024];
    json_t *evs;
    const json_t *last;
    struct th_resp r;

    (void)state;
    start();
    script("[{\"text\":[\"a\",\"b\",\"c\"],\"fault\":{\"error_after_events\":3}}]");
    responses("{\"model\":\"m\",\"stream\":true,\"input\":\"hi\"}", &r);
    assert_int_equal(r.status, 200);
    evs = rs_events(r.body, types, sizeof(types));
    assert_non_null(strstr(types, "response.output_text.delta"));
    assert_null(strstr(types, "response.completed"));
    last = json_array_get(evs, json_array_size(evs) - 1);
    assert_string_equal(th_jstr(last, "type"), "error");
    assert_non_null(th_jstr(last, "message"));
    json_decref(evs);
    th_resp_free(&r);
}

/*
 * What a Responses body asks beyond messages and tools reaches an upstream of the chat wire in
 * that wire's words (store, prompt_cache_key and metadata as they are, reasoning.effort as
 * reasoning_effort, text.format as response_format, text.verbosity as verbosity); what the
 * chat wire has no place for is named in x-rein-dropped. Another wire's upstream gets none
 * of it: the harmless ones are named dropped, a JSON format is refused by name.
 */
static void test_responses_members_in_the_chat_wire(void **state)
{
    static const char body[] =
        "{\"model\":\"m\",\"input\":\"hi\",\"store\":false,\"prompt_cache_key\":\"k1\","
        "\"metadata\":{\"a\":\"b\"},\"reasoning\":{\"effort\":\"low\",\"summary\":\"auto\"},"
        "\"include\":[\"reasoning.encrypted_content\"],\"text\":{\"verbosity\":\"low\","
        "\"format\":{\"type\":\"json_schema\",\"name\":\"w\",\"schema\":{\"type\":\"object\","
        "\"additionalProperties\":false},\"strict\":true}}}";
    static const char plain[] = "{\"model\":\"m\",\"input\":\"hi\",\"store\":false,\"reasoning\":{"
                                "\"effort\":\"low\"},\"include\":[\"x\"]}";
    const json_t *q;
    json_t *want = json_loads("{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"w\","
                              "\"schema\":{\"type\":\"object\",\"additionalProperties\":false},"
                              "\"strict\":true}}",
                              0, NULL);
    struct th_resp r;

    (void)state;
    start();
    script("[{\"text\":\"{}\",\"times\":0}]");
    responses(body, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(th_header(&r, "x-rein-dropped"), "[\"include\"]");
    th_resp_free(&r);
    q = ms_last_request(F->ms)->json;
    assert_true(json_is_false(json_object_get(q, "store")));
    assert_string_equal(th_jstr(q, "prompt_cache_key"), "k1");
    assert_string_equal(th_jstr(json_object_get(q, "metadata"), "a"), "b");
    assert_string_equal(th_jstr(q, "reasoning_effort"), "low");
    assert_string_equal(th_jstr(q, "verbosity"), "low");
    assert_true(json_equal(json_object_get(q, "response_format"), want));
    assert_null(json_object_get(q, "include"));
    json_decref(want);

    (void)teardown(state); /* the same, in front of an Anthropic upstream */
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"{}\",\"times\":0}]");
    responses(body, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    /* text.format crosses as output_config.format (decision 0100), its verbosity is dropped */
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "\"text.verbosity\""));
    th_resp_free(&r);
    assert_string_equal(
        th_jstr(test_json_at(ms_last_request(F->ms)->json, "output_config.format"), "type"),
        "json_schema");
    responses(plain, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "\"reasoning\""));
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "\"store\""));
    th_resp_free(&r);
    assert_null(json_object_get(ms_last_request(F->ms)->json, "store"));
}

#define RS_EV(type, rest) "event: " type "\ndata: {\"type\":\"" type "\"," rest "}\n\n"
#define RS_REASONING                                                                               \
    "{\"id\":\"rs_up1\",\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\","           \
    "\"text\":\"Look it up.\"}],\"encrypted_content\":\"ENC1\"}"
#define RS_FC(status, args)                                                                        \
    "{\"id\":\"fc_up1\",\"type\":\"function_call\",\"status\":\"" status "\",\"call_id\":"         \
    "\"call_1\",\"name\":\"get_weather\",\"arguments\":\"" args "\"}"

/*
 * A reasoning model behind a Responses upstream wants its reasoning items back on the next
 * turn (with store false they are all it has): the client gets each as the upstream wrote it,
 * encrypted_content and all, and the items it sends back go upstream before the call they
 * led to.
 */
static void test_responses_reasoning_items_go_back(void **state)
{
    static const char sse[] = RS_EV("response.created",
                                    "\"sequence_number\":0,\"response\":{\"id\":\"resp_u\","
                                    "\"object\":\"response\",\"status\":\"in_progress\","
                                    "\"model\":\"m\",\"output\":[]}")
        RS_EV("response.output_item.added",
              "\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"rs_up1\","
              "\"type\":\"reasoning\",\"summary\":[]}")
            RS_EV("response.reasoning_summary_text.delta",
                  "\"sequence_number\":2,\"item_id\":\"rs_up1\",\"output_index\":0,"
                  "\"summary_index\":0,\"delta\":\"Look it up.\"")
                RS_EV("response.output_item.done",
                      "\"sequence_number\":3,\"output_index\":0,\"item\":" RS_REASONING)
                    RS_EV("response.output_item.added",
                          "\"sequence_number\":4,\"output_index\":1,\"item\":" RS_FC("in_progress",
                                                                                     ""))
                        RS_EV("response.function_call_arguments.delta",
                              "\"sequence_number\":5,\"item_id\":\"fc_up1\","
                              "\"output_index\":1,\"delta\":\"{\\\"city\\\":\\\"Paris\\\"}\"")
                            RS_EV("response.output_item.done",
                                  "\"sequence_number\":6,\"output_index\":1,\"item\":" RS_FC(
                                      "completed", "{\\\"city\\\":\\\"Paris\\\"}"))
                                RS_EV("response.completed",
                                      "\"sequence_number\":7,\"response\":{\"id\":\"resp_u\","
                                      "\"object\":\"response\",\"status\":\"completed\","
                                      "\"model\":\"m\",\"output\":[" RS_REASONING "," RS_FC(
                                          "completed",
                                          "{\\\"city\\\":\\\"Paris\\\"}") "],\"usage\":{\"input_"
                                                                          "tokens\":5,"
                                                                          "\"output_tokens\":3,"
                                                                          "\"total_tokens\":8}}");
    static const char next[] =
        "{\"model\":\"m\",\"store\":false,\"input\":[{\"role\":\"user\",\"content\":\"weather?\"}"
        "," RS_REASONING
        "," RS_FC("completed",
                  "{\\\"city\\\":\\\"Paris\\\"}") ",{\"type\":"
                                                  "\"function_call_output\",\"call_id\":\"call_1\","
                                                  "\"output\":\"sunny\"}]," RS_TOOLS "}";
    json_t *want = json_loads(RS_REASONING, 0, NULL), *evs;
    const json_t *in, *done = NULL;
    char types[2048];
    struct th_resp r;

    (void)state;
    assert_non_null(want);
    start_with("openai-responses", NULL, 0);
    script_body(sse, true);
    responses("{\"model\":\"m\",\"stream\":true,\"store\":false,\"input\":\"weather?\"," RS_TOOLS
              "}",
              &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    evs = rs_events(r.body, types, sizeof(types));
    for (size_t i = 0; i < json_array_size(evs); i++) {
        const json_t *ev = json_array_get(evs, i);
        const char *id = th_jstr(ev, "item_id") ? th_jstr(ev, "item_id")
                                                : th_jstr(json_object_get(ev, "item"), "id");
        if (strcmp(th_jstr(ev, "type"), "response.output_item.done") == 0 && !done)
            done = json_object_get(ev, "item");
        /* every event of the reasoning item names it by the upstream's id */
        if (json_integer_value(json_object_get(ev, "output_index")) == 0 && id)
            assert_string_equal(id, "rs_up1");
    }
    assert_non_null(strstr(types, "response.output_item.added response.content_part.added "
                                  "response.reasoning_text.delta"));
    if (!json_equal(done, want))
        fail_msg("the reasoning item ended as %s", r.body);
    assert_true(json_equal(
        json_array_get(
            json_object_get(
                json_object_get(json_array_get(evs, json_array_size(evs) - 1), "response"),
                "output"),
            0),
        want));
    json_decref(evs);
    th_resp_free(&r);

    script("[{\"text\":\"Sunny.\"}]");
    responses(next, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    in = json_object_get(ms_last_request(F->ms)->json, "input");
    assert_string_equal(th_jstr(json_array_get(in, 1), "type"), "reasoning");
    assert_string_equal(th_jstr(json_array_get(in, 1), "encrypted_content"), "ENC1");
    assert_string_equal(th_jstr(json_array_get(in, 2), "type"), "function_call");
    json_decref(want);
}

#define RS_WS                                                                                      \
    "{\"id\":\"ws_up1\",\"type\":\"web_search_call\",\"status\":\"completed\",\"action\":"         \
    "{\"type\":\"search\",\"query\":\"paris weather\"}}"
#define RS_CITE                                                                                    \
    "{\"type\":\"url_citation\",\"start_index\":0,\"end_index\":6,\"url\":\"https://w.example/"    \
    "paris\",\"title\":\"Paris weather\"}"
#define RS_WS_MSG                                                                                  \
    "{\"id\":\"msg_up1\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\","    \
    "\"content\":[{\"type\":\"output_text\",\"text\":\"Sunny.\",\"annotations\":[" RS_CITE "]}]}"

/* The first annotation of a message item's first part. Borrowed. */
static const json_t *first_annotation(const json_t *msg)
{
    return json_array_get(
        json_object_get(json_array_get(json_object_get(msg, "content"), 0), "annotations"), 0);
}

/*
 * A Responses client's hosted tools (web search, …) reach an upstream of the same wire, which
 * runs them: the client gets the hosted tool's item in its place, in a body and in a stream,
 * and its next turn sends it back before the message it led to; the answer's citations keep
 * their place in its text. The hosted tools go up after the function tools rein checks.
 */
static void test_responses_hosted_tools_to_a_responses_upstream(void **state)
{
    static const char tools[] =
        "\"tools\":[{\"type\":\"web_search\"},{\"type\":\"function\",\"name\":\"get_weather\","
        "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}]";
    static const char sse[] = RS_EV("response.created",
                                    "\"sequence_number\":0,\"response\":{\"id\":\"resp_u\","
                                    "\"object\":\"response\",\"status\":\"in_progress\","
                                    "\"model\":\"m\",\"output\":[]}")
        RS_EV("response.output_item.added",
              "\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"ws_up1\",\"type\":"
              "\"web_search_call\",\"status\":\"in_progress\"}")
            RS_EV("response.web_search_call.searching",
                  "\"sequence_number\":2,\"output_index\":0,\"item_id\":\"ws_up1\"")
                RS_EV("response.output_item.done",
                      "\"sequence_number\":3,\"output_index\":0,\"item\":" RS_WS)
                    RS_EV("response.output_text.delta",
                          "\"sequence_number\":4,\"output_index\":1,\"item_id\":\"msg_up1\","
                          "\"content_index\":0,\"delta\":\"Sunny.\"")
                        RS_EV("response.output_text.annotation.added",
                              "\"sequence_number\":5,\"output_index\":1,\"item_id\":"
                              "\"msg_up1\",\"content_index\":0,\"annotation_index\":0,"
                              "\"annotation\":" RS_CITE)
                            RS_EV("response.output_item.done",
                                  "\"sequence_number\":5,\"output_index\":1,\"item\":" RS_WS_MSG)
                                RS_EV("response.completed",
                                      "\"sequence_number\":6,\"response\":{\"id\":\"resp_u\","
                                      "\"object\":\"response\",\"status\":\"completed\","
                                      "\"model\":\"m\",\"output\":[" RS_WS "," RS_WS_MSG "],"
                                      "\"usage\":{\"input_tokens\":5,\"output_tokens\":3,"
                                      "\"total_tokens\":8}}");
    static const char body_reply[] =
        "{\"id\":\"resp_u\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"m\","
        "\"output\":[" RS_WS "," RS_WS_MSG "],\"usage\":{\"input_tokens\":5,\"output_tokens\":3,"
        "\"total_tokens\":8}}";
    json_t *ws = json_loads(RS_WS, 0, NULL), *cite = json_loads(RS_CITE, 0, NULL), *evs;
    const json_t *out, *up, *in;
    char body[2048], types[2048];
    struct th_resp r;

    (void)state;
    assert_non_null(ws);
    start_with("openai-responses", NULL, 0);
    script_body(body_reply, false);
    snprintf(body, sizeof(body), "{\"model\":\"m\",\"store\":false,\"input\":\"weather?\",%s}",
             tools);
    responses(body, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    out = json_object_get(r.json, "output");
    assert_int_equal(json_array_size(out), 2);
    assert_true(json_equal(json_array_get(out, 0), ws));
    assert_string_equal(th_jstr(json_array_get(out, 1), "type"), "message");
    /* the web search's citation, in this wire's shape */
    assert_true(json_equal(first_annotation(json_array_get(out, 1)), cite));
    th_resp_free(&r);
    up = json_object_get(ms_last_request(F->ms)->json, "tools");
    assert_int_equal(json_array_size(up), 2);
    assert_string_equal(th_jstr(json_array_get(up, 0), "name"), "get_weather");
    assert_string_equal(th_jstr(json_array_get(up, 1), "type"), "web_search");
    assert_int_equal(json_object_size(json_array_get(up, 1)), 1);

    script_body(sse, true);
    snprintf(body, sizeof(body),
             "{\"model\":\"m\",\"stream\":true,\"store\":false,\"input\":\"weather?\",%s}", tools);
    responses(body, &r);
    assert_int_equal(r.status, 200);
    evs = rs_events(r.body, types, sizeof(types));
    /* the hosted item as it runs: added, its progress renumbered into this stream, done */
    assert_non_null(strstr(types, "response.in_progress response.output_item.added "
                                  "response.web_search_call.searching response.output_item.done "
                                  "response.output_item.added"));
    assert_string_equal(th_jstr(json_object_get(json_array_get(evs, 2), "item"), "status"),
                        "in_progress");
    assert_string_equal(th_jstr(json_array_get(evs, 3), "item_id"), "ws_up1");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, 3), "output_index")),
                     0);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, 3), "sequence_number")),
                     3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, 4), "output_index")),
                     0);
    assert_true(json_equal(json_object_get(json_array_get(evs, 4), "item"), ws));
    assert_non_null(strstr(types, "response.output_text.delta "
                                  "response.output_text.annotation.added "
                                  "response.output_text.done"));
    out = json_object_get(
        json_object_get(json_array_get(evs, json_array_size(evs) - 1), "response"), "output");
    assert_true(json_equal(json_array_get(out, 0), ws));
    assert_true(json_equal(first_annotation(json_array_get(out, 1)), cite));
    json_decref(evs);
    th_resp_free(&r);

    /* the next turn: the hosted call goes back before the message it led to */
    script_body(body_reply, false);
    snprintf(body, sizeof(body),
             "{\"model\":\"m\",\"store\":false,\"input\":[{\"role\":\"user\",\"content\":"
             "\"weather?\"}," RS_WS "," RS_WS_MSG ",{\"role\":\"user\",\"content\":\"and "
             "tomorrow?\"}],%s}",
             tools);
    responses(body, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    in = json_object_get(ms_last_request(F->ms)->json, "input");
    assert_true(json_equal(json_array_get(in, 1), ws));
    assert_string_equal(th_jstr(json_array_get(in, 2), "role"), "assistant");
    json_decref(ws);
    json_decref(cite);

    /* tools that wait for the client (an approval, a computer, a shell) are refused by name */
    for (size_t i = 0; i < 2; i++) {
        responses(i ? "{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"computer_use_"
                      "preview\"}]}"
                    : "{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"mcp\","
                      "\"server_label\":\"s\",\"server_url\":\"https://x\"}]}",
                  &r);
        assert_int_equal(r.status, 400);
        assert_string_equal(th_jstr(json_object_get(r.json, "error"), "param"), "tools[0].type");
        th_resp_free(&r);
    }
}

/* A Responses client reaches an Anthropic upstream too, JSON and stream. */
static void test_responses_to_anthropic(void **state)
{
    char types[2048];
    json_t *evs;
    struct th_resp r;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[" RS_CALL_REPLY "," RS_CALL_REPLY "]");
    responses("{\"model\":\"m\",\"input\":\"weather in Paris?\"," RS_TOOLS "}", &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(th_jstr(json_array_get(json_object_get(r.json, "output"), 1), "call_id"),
                        "c1");
    th_resp_free(&r);
    assert_string_equal(ms_last_request(F->ms)->format, "anthropic");
    responses("{\"model\":\"m\",\"stream\":true,\"input\":\"weather in Paris?\"," RS_TOOLS "}", &r);
    evs = rs_events(r.body, types, sizeof(types));
    assert_non_null(strstr(types, "response.function_call_arguments.done response.output_item.done "
                                  "response.completed"));
    json_decref(evs);
    th_resp_free(&r);
}

/* Member `key` of the upstream's last request equals the same member of the client's body. */
static void assert_went_up_as_sent(const char *body, const char *key)
{
    json_t *sent = json_loads(body, 0, NULL);
    const struct ms_request *q = ms_last_request(F->ms);

    assert_non_null(sent);
    assert_non_null(q);
    if (!json_equal(json_object_get(sent, key), json_object_get(q->json, key))) {
        char *a = rein_json_dumps(json_object_get(sent, key));
        char *b = rein_json_dumps(json_object_get(q->json, key));
        fail_msg("%s: the client sent\n%s\nthe upstream got\n%s", key, a, b);
    }
    json_decref(sent);
}

#define IMG       "{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"iVBORw0KGgo=\"}"
#define EPHEMERAL "\"cache_control\":{\"type\":\"ephemeral\"}"

/*
 * An upstream of the client's own wire gets what the client wrote, whatever the neutral shape
 * holds: Anthropic's cache_control on system, tools and blocks, images and documents in user
 * messages and tool results, its server tools (web search), and the assistant's blocks as
 * they came. rein still reads the text and the calls (the reply's call is checked).
 */
static void test_anthropic_same_wire_goes_up_as_sent(void **state)
{
    static const char body[] =
        "{\"model\":\"m\",\"max_tokens\":64,"
        "\"system\":[{\"type\":\"text\",\"text\":\"Be brief.\"," EPHEMERAL "}],"
        "\"tools\":[{\"name\":\"get_weather\",\"description\":\"weather\",\"input_schema\":"
        "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":"
        "[\"city\"]}," EPHEMERAL "},{\"type\":\"web_search_20250305\",\"name\":\"web_search\","
        "\"max_uses\":2}],"
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is "
        "this?\"},{\"type\":\"image\",\"source\":" IMG "},{\"type\":\"document\",\"source\":"
        "{\"type\":\"text\",\"media_type\":\"text/plain\",\"data\":\"notes\"},\"title\":\"n\"}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Looking.\"},"
        "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":"
        "{\"city\":\"Paris\"}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\","
        "\"content\":[{\"type\":\"text\",\"text\":\"sunny\"},{\"type\":\"image\",\"source\":" IMG
        "}]," EPHEMERAL "},{\"type\":\"text\",\"text\":\"And in Oslo?\"," EPHEMERAL "}]}]}";
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    struct th_resp r;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("{\"validate\":false,\"replies\":[{\"tool_calls\":[{\"id\":\"toolu_2\",\"name\":"
           "\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}]}]}");
    th_http("POST", u("/v1/messages"), body, h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(th_jstr(json_array_get(json_object_get(r.json, "content"), 0), "id"),
                        "toolu_2");
    th_resp_free(&r);
    assert_went_up_as_sent(body, "system");
    assert_went_up_as_sent(body, "tools");
    assert_went_up_as_sent(body, "messages");
}

/* The prompt cache's tokens reach each client in its wire's terms: Anthropic counts reads and
 * writes apart from input_tokens, OpenAI counts them in prompt_tokens and names the reads. */
static void test_usage_keeps_the_prompt_cache(void **state)
{
    static const char an_body[] = "{\"model\":\"m\",\"max_tokens\":64," USER "}";
    static const char oa_body[] = "{\"model\":\"m\"," USER "}";
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    json_t *use;
    struct th_resp r;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"Mild.\",\"times\":2,\"usage\":{\"input_tokens\":10,\"output_tokens\":5,"
           "\"cached_tokens\":100,\"cache_write_tokens\":20}}]");
    th_http("POST", u("/v1/messages"), an_body, h, &r);
    assert_int_equal(r.status, 200);
    use = json_object_get(r.json, "usage");
    assert_int_equal(json_integer_value(json_object_get(use, "input_tokens")), 10);
    assert_int_equal(json_integer_value(json_object_get(use, "cache_read_input_tokens")), 100);
    assert_int_equal(json_integer_value(json_object_get(use, "cache_creation_input_tokens")), 20);
    assert_int_equal(json_integer_value(json_object_get(use, "output_tokens")), 5);
    th_resp_free(&r);
    chat(oa_body, NULL, &r);
    assert_int_equal(r.status, 200);
    use = json_object_get(r.json, "usage");
    assert_int_equal(json_integer_value(json_object_get(use, "prompt_tokens")), 130);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(use, "prompt_tokens_details"), "cached_tokens")),
                     100);
    assert_int_equal(json_integer_value(json_object_get(use, "total_tokens")), 135);
    th_resp_free(&r);
}

/* With forward_client_key the upstream gets the client's own key (an OpenAI client's Bearer
 * token, an Anthropic client's x-api-key), not the one rein is configured with. */
static void test_client_key_is_forwarded(void **state)
{
    static const char *const wires[] = {"openai", "anthropic"};
    const char *const an_h[] = {"anthropic-version: 2023-06-01", "x-api-key: sk-client-2", NULL};
    const char *const oa_h[] = {"Authorization: Bearer sk-client-2", NULL};
    struct th_resp r;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(wires); i++) {
        next_forward_key = true;
        start_with(wires[i], "sk-rein-own", 0);
        ms_set_api_key(F->ms, "sk-client-2");
        script("[{\"text\":\"Mild.\",\"times\":2}]");
        chat("{\"model\":\"m\"," USER "}", oa_h, &r);
        if (r.status != 200)
            fail_msg("%s upstream, OpenAI client: %ld %s", wires[i], r.status, r.body);
        th_resp_free(&r);
        th_http("POST", u("/v1/messages"), "{\"model\":\"m\",\"max_tokens\":64," USER "}", an_h,
                &r);
        if (r.status != 200)
            fail_msg("%s upstream, Anthropic client: %ld %s", wires[i], r.status, r.body);
        th_resp_free(&r);
        teardown(NULL);
    }
}

/*
 * POST /v1/messages/count_tokens (Claude Code asks for it often): the client's body goes to the
 * upstream's own count with the model rein sends to and the client's betas, and the answer
 * comes back as it came, errors included; a body that is not JSON is a 400, and an upstream
 * of another wire, which has no count, a 404 in Anthropic's shape.
 */
static void test_count_tokens(void **state)
{
    static const char body[] =
        "{\"model\":\"claude-any\",\"system\":[{\"type\":\"text\",\"text\":\"Be brief.\","
        "\"cache_control\":{\"type\":\"ephemeral\"}}]," USER "}";
    const char *const h[] = {"anthropic-version: 2023-06-01", "anthropic-beta: context-1m", NULL};
    const struct ms_request *q;
    json_t *sent = json_loads(body, 0, NULL);
    struct th_resp r;

    (void)state;
    start_with("anthropic", "sk-rein-own", 0);
    script("{\"validate\":false,\"replies\":[{\"match\":{\"path\":\"/v1/messages/count_tokens\"},"
           "\"status\":200,\"body\":\"{\\\"input_tokens\\\":42}\",\"times\":1},"
           "{\"match\":{\"path\":\"/v1/messages/count_tokens\"},\"status\":429,\"headers\":"
           "{\"Retry-After\":\"3\"},\"error\":{\"type\":\"rate_limit_error\",\"message\":"
           "\"slow down\"}}]}");
    th_http("POST", u("/v1/messages/count_tokens?beta=true"), body, h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_int_equal(json_integer_value(json_object_get(r.json, "input_tokens")), 42);
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(q->path, "/v1/messages/count_tokens");
    assert_string_equal(ms_request_header(q, "anthropic-beta"), "context-1m");
    assert_string_equal(ms_request_header(q, "x-api-key"), "sk-rein-own");
    assert_string_equal(th_jstr(q->json, "model"), rein_provider_model(F->p));
    assert_true(json_equal(json_object_get(q->json, "system"), json_object_get(sent, "system")));
    assert_true(
        json_equal(json_object_get(q->json, "messages"), json_object_get(sent, "messages")));
    th_http("POST", u("/v1/messages/count_tokens"), body, h, &r);
    assert_int_equal(r.status, 429);
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "type"), "rate_limit_error");
    th_resp_free(&r);
    th_http("POST", u("/v1/messages/count_tokens"), "{\"model\":", h, &r);
    assert_int_equal(r.status, 400);
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "type"), "invalid_request_error");
    th_resp_free(&r);
    teardown(NULL);
    start();
    script("[]");
    th_http("POST", u("/v1/messages/count_tokens"), body, h, &r);
    assert_int_equal(r.status, 404);
    assert_string_equal(th_jstr(r.json, "type"), "error");
    assert_non_null(strstr(th_jstr(json_object_get(r.json, "error"), "message"), "openai wire"));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0);
    json_decref(sent);
}

/*
 * Claude on Vertex AI upstream (decision 0104): an Anthropic client (Claude Code) gets the
 * same-wire treatment, its system, tools and messages going up as written, its betas as a
 * header, the model in the URL and anthropic_version in the body, streamed too; its count goes
 * to Vertex's count address; an OpenAI client's request is written for Vertex alike; Vertex's
 * own 429 reaches each client in its shape with its Retry-After. The model server refuses a
 * body Vertex would refuse, so every 200 here is a body Vertex takes.
 */
static void assert_header(const struct th_resp *r, const char *name, const char *want);

static void test_vertex_claude_upstream(void **state)
{
    static const char body[] =
        "{\"model\":\"claude-sonnet-4-6\",\"max_tokens\":64,"
        "\"system\":[{\"type\":\"text\",\"text\":\"Be brief.\"," EPHEMERAL "}],"
        "\"tools\":[{\"name\":\"get_weather\",\"description\":\"weather\",\"input_schema\":"
        "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":"
        "[\"city\"]}," EPHEMERAL "}],"
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is "
        "this?\"},{\"type\":\"image\",\"source\":" IMG "}]}]}";
    const char *const h[] = {"anthropic-version: 2023-06-01",
                             "anthropic-beta: context-1m-2025-08-07", NULL};
    const struct ms_request *q;
    struct th_resp r;

    (void)state;
    start_with("vertex-anthropic", "ya29.gw", 0);
    script("[{\"tool_calls\":[{\"id\":\"toolu_2\",\"name\":\"get_weather\",\"arguments\":"
           "\"{\\\"city\\\":\\\"Oslo\\\"}\"}],\"times\":2},{\"text\":\"Mild.\"},"
           "{\"usage\":{\"input_tokens\":42}}]");
    th_http("POST", u("/v1/messages"), body, h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(th_jstr(json_array_get(json_object_get(r.json, "content"), 0), "id"),
                        "toolu_2");
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(q->path, VX_PLACE "/models/gw-model:rawPredict");
    assert_string_equal(ms_request_header(q, "authorization"), "Bearer ya29.gw");
    assert_string_equal(ms_request_header(q, "anthropic-beta"), "context-1m-2025-08-07");
    assert_null(json_object_get(q->json, "model"));
    assert_string_equal(th_jstr(q->json, "anthropic_version"), "vertex-2023-10-16");
    assert_went_up_as_sent(body, "system");
    assert_went_up_as_sent(body, "tools");
    assert_went_up_as_sent(body, "messages");

    /* streamed: :streamRawPredict, and the client gets Anthropic's events */
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"m\",\"max_tokens\":64,\"stream\":true,\"tools\":[{\"name\":"
            "\"get_weather\",\"input_schema\":{\"type\":\"object\"}}]," USER "}",
            h, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "event: message_stop"));
    assert_non_null(strstr(r.body, "toolu_2"));
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(q->path, VX_PLACE "/models/gw-model:streamRawPredict");

    /* an OpenAI client: its request written for Vertex */
    chat("{\"model\":\"m\"," USER "}", NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(
        th_jstr(json_object_get(json_array_get(json_object_get(r.json, "choices"), 0), "message"),
                "content"),
        "Mild.");
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(q->path, VX_PLACE "/models/gw-model:rawPredict");
    assert_null(json_object_get(q->json, "model"));
    assert_string_equal(th_jstr(q->json, "anthropic_version"), "vertex-2023-10-16");

    /* the count: Vertex's count address, the model rein sends to in the body */
    th_http("POST", u("/v1/messages/count_tokens"),
            "{\"model\":\"claude-sonnet-4-6\",\"system\":\"Be brief.\"," USER "}", h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_int_equal(json_integer_value(json_object_get(r.json, "input_tokens")), 42);
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(q->path, VX_PLACE "/models/count-tokens:rawPredict");
    assert_string_equal(th_jstr(q->json, "model"), "gw-model");
    assert_string_equal(ms_request_header(q, "authorization"), "Bearer ya29.gw");

    /* Vertex's own 429 (google.rpc.Status) in each client's shape, with its Retry-After */
    script("[{\"status\":429,\"times\":2,\"headers\":{\"Retry-After\":\"9\"},\"body\":"
           "\"{\\\"error\\\":{\\\"code\\\":429,\\\"message\\\":\\\"Quota exceeded for "
           "aiplatform.googleapis.com/online_prediction_requests_per_base_model\\\","
           "\\\"status\\\":\\\"RESOURCE_EXHAUSTED\\\"}}\"}]");
    th_http("POST", u("/v1/messages"), "{\"model\":\"m\",\"max_tokens\":64," USER "}", h, &r);
    assert_int_equal(r.status, 429);
    assert_string_equal(th_jstr(r.json, "type"), "error");
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "type"), "rate_limit_error");
    assert_non_null(strstr(th_jstr(json_object_get(r.json, "error"), "message"), "Quota"));
    assert_header(&r, "Retry-After", "9");
    th_resp_free(&r);
    chat("{\"model\":\"m\"," USER "}", NULL, &r);
    assert_int_equal(r.status, 429);
    assert_non_null(strstr(th_jstr(json_object_get(r.json, "error"), "message"), "Quota"));
    assert_header(&r, "Retry-After", "9");
    th_resp_free(&r);
}

/* A reply that a stop sequence ended says which one, in a body and in a stream. */
static void test_anthropic_stop_sequence(void **state)
{
    static const char reply[] =
        "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\","
        "\"content\":[{\"type\":\"text\",\"text\":\"Paris\"}],\"stop_reason\":\"stop_sequence\","
        "\"stop_sequence\":\"END\",\"usage\":{\"input_tokens\":5,\"output_tokens\":2}}";
    static const char sse[] = AN_MESSAGE_START AN_START(0, "{\"type\":\"text\",\"text\":\"\"}")
        AN_DELTA(0, "{\"type\":\"text_delta\",\"text\":\"Paris\"}") AN_STOP(0)
            AN_EV("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
                                   "\"stop_sequence\",\"stop_sequence\":\"END\"},\"usage\":"
                                   "{\"output_tokens\":2}}")
                AN_EV("message_stop", "{\"type\":\"message_stop\"}");
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    struct th_resp r;

    (void)state;
    start_with("anthropic", NULL, 0);
    script_body(reply, false);
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"m\",\"max_tokens\":64,\"stop_sequences\":[\"END\"]," USER "}", h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(th_jstr(r.json, "stop_reason"), "stop_sequence");
    assert_string_equal(th_jstr(r.json, "stop_sequence"), "END");
    th_resp_free(&r);
    script_body(sse, true);
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"m\",\"max_tokens\":64,\"stream\":true,\"stop_sequences\":[\"END\"]," USER
            "}",
            h, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"stop_reason\":\"stop_sequence\",\"stop_sequence\":\"END\"}"));
    th_resp_free(&r);
}

/* The client's anthropic-beta goes with the request to Claude, and only to Claude. */
static void test_anthropic_beta_reaches_claude(void **state)
{
    static const char body[] = "{\"model\":\"m\",\"max_tokens\":64," USER "}";
    const char *const h[] = {
        "anthropic-version: 2023-06-01",
        "anthropic-beta: interleaved-thinking-2025-05-14,context-1m-2025-08-07", NULL};
    static const char *const wires[] = {"anthropic", "openai"};
    struct th_resp r;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(wires); i++) {
        const char *got;
        start_with(wires[i], NULL, 0);
        script("[{\"text\":\"Mild.\"}]");
        th_http("POST", u("/v1/messages"), body, h, &r);
        if (r.status != 200)
            fail_msg("%s: %ld %s", wires[i], r.status, r.body);
        th_resp_free(&r);
        got = ms_request_header(ms_last_request(F->ms), "anthropic-beta");
        if (i == 0)
            assert_string_equal(got ? got : "(none)",
                                "interleaved-thinking-2025-05-14,context-1m-2025-08-07");
        else
            assert_null(got);
        teardown(NULL);
    }
}

/* The same for OpenAI's wire: a developer message, image parts, a user's name, strict tools. */
static void test_openai_same_wire_goes_up_as_sent(void **state)
{
    static const char body[] =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":\"Be brief.\"},"
        "{\"role\":\"user\",\"name\":\"ann\",\"content\":[{\"type\":\"text\",\"text\":\"What is "
        "this?\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,"
        "iVBORw0KGgo=\",\"detail\":\"low\"}}]},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":"
        "\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\": "
        "\\\"Paris\\\"}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":"
        "\"sunny\"},{\"role\":\"user\",\"content\":\"And in Oslo?\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"strict\":true,"
        "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"
        "\"required\":[\"city\"],\"additionalProperties\":false}}}]}";
    struct th_resp r;

    (void)state;
    start();
    script("{\"validate\":false,\"replies\":[{\"text\":\"Cold.\"}]}");
    chat(body, NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    assert_went_up_as_sent(body, "messages");
    assert_went_up_as_sent(body, "tools");
}

#define OA_LP(tok, lp)                                                                             \
    "{\"token\":\"" tok "\",\"logprob\":" lp ",\"bytes\":null,\"top_logprobs\":[]}"
#define OA_CITES                                                                                   \
    "[{\"type\":\"url_citation\",\"url_citation\":{\"start_index\":0,\"end_index\":5,\"url\":"     \
    "\"https://example.org/\",\"title\":\"E\"}}]"
#define OA_CHUNK(rest)                                                                             \
    "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0," rest "}]}\n\n"

/* The logprobs of each chunk of a client's stream that has them, joined; and the annotations. */
static void streamed_extras(const char *sse, json_t *tokens, json_t **annotations)
{
    for (const char *p = strstr(sse, "data: {"); p; p = strstr(p + 1, "data: {")) {
        const char *end = strstr(p, "\n\n");
        json_t *chunk = json_loadb(p + 6, (size_t)(end - p - 6), 0, NULL);
        const json_t *choice = json_array_get(json_object_get(chunk, "choices"), 0);
        const json_t *lp = json_object_get(json_object_get(choice, "logprobs"), "content");
        const json_t *delta = json_object_get(choice, "delta");
        const char *text = json_string_value(json_object_get(delta, "content"));
        size_t i;
        json_t *t;

        assert_non_null(chunk);
        json_array_foreach(lp, i, t)
        {
            /* each piece goes with the chunk that carries the text it scores */
            assert_string_equal(text, json_string_value(json_object_get(t, "token")));
            assert_int_equal(json_array_append(tokens, t), 0);
        }
        if (json_object_get(delta, "annotations"))
            *annotations = json_incref(json_object_get(delta, "annotations"));
        json_decref(chunk);
    }
}

/*
 * A client that asks for logprobs gets the upstream's, in a body and in a stream (each piece
 * in the chunk of the text it scores), and a search model's url citations reach it too: before,
 * the answer said "logprobs": null and had no annotations.
 */
static void test_openai_logprobs_and_annotations_reach_the_client(void **state)
{
    static const char reply[] =
        "{\"id\":\"c\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[{\"index\":0,"
        "\"message\":{\"role\":\"assistant\",\"content\":\"Paris.\",\"annotations\":" OA_CITES
        "},\"logprobs\":{\"content\":[" OA_LP("Paris", "-0.5") "," OA_LP(
            ".", "-0.25") "],"
                          "\"refusal\":null},\"finish_reason\":\"stop\"}]}";
    static const char sse[] = OA_CHUNK(
        "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":"
        "null")
        OA_CHUNK("\"delta\":{\"content\":\"Paris\"},\"logprobs\":{\"content\":[" OA_LP(
            "Paris", "-0.5") "],\"refusal\":null},\"finish_reason\":null")
            OA_CHUNK("\"delta\":{\"content\":\".\"},\"logprobs\":{\"content\":[" OA_LP(
                ".", "-0.25") "],"
                              "\"refusal\":null},\"finish_reason\":null")
                OA_CHUNK("\"delta\":{\"annotations\":" OA_CITES "},\"finish_reason\":null")
                    OA_CHUNK(
                        "\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"") "data: "
                                                                                     "[DONE]\n\n";
    const json_t *choice;
    json_t *want = json_loads(reply, 0, NULL), *tokens = json_array(), *annotations = NULL;
    const json_t *want_choice = json_array_get(json_object_get(want, "choices"), 0);
    struct th_resp r;

    (void)state;
    start();
    script_body(reply, false);
    chat("{\"model\":\"m\",\"logprobs\":true,\"top_logprobs\":0," USER "}", NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    choice = json_array_get(json_object_get(r.json, "choices"), 0);
    assert_true(
        json_equal(json_object_get(choice, "logprobs"), json_object_get(want_choice, "logprobs")));
    assert_true(
        json_equal(json_object_get(json_object_get(choice, "message"), "annotations"),
                   json_object_get(json_object_get(want_choice, "message"), "annotations")));
    th_resp_free(&r);

    script_body(sse, true);
    chat("{\"model\":\"m\",\"stream\":true,\"logprobs\":true," USER "}", NULL, &r);
    assert_int_equal(r.status, 200);
    streamed_extras(r.body, tokens, &annotations);
    assert_true(
        json_equal(tokens, json_object_get(json_object_get(want_choice, "logprobs"), "content")));
    assert_true(json_equal(
        annotations, json_object_get(json_object_get(want_choice, "message"), "annotations")));
    th_resp_free(&r);
    json_decref(annotations);
    json_decref(tokens);
    json_decref(want);
}

/* A re-ask keeps the client's messages as sent and adds rein's own after them. */
static void test_same_wire_reask_adds_after_the_messages_as_sent(void **state)
{
    static const char body[] =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":\"Be brief.\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Weather?\"},"
        "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,iVBORw0KGgo=\"}}]}"
        "]," TOOLS "}";
    json_t *sent = json_loads(body, 0, NULL), *msgs;
    struct th_resp r;

    (void)state;
    start();
    script("{\"validate\":false,\"replies\":[{\"tool_calls\":[{\"id\":\"call_1\",\"name\":"
           "\"get_weather\",\"arguments\":\"{}\"}]},{\"tool_calls\":[{\"id\":\"call_2\",\"name\":"
           "\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}]}]}");
    chat(body, NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 2);
    msgs = json_object_get(ms_request(F->ms, 1)->json, "messages");
    assert_int_equal(json_array_size(msgs), 4);
    for (size_t i = 0; i < 2; i++)
        assert_true(json_equal(json_array_get(msgs, i),
                               json_array_get(json_object_get(sent, "messages"), i)));
    assert_string_equal(th_jstr(json_array_get(msgs, 2), "role"), "assistant");
    assert_string_equal(th_jstr(json_array_get(msgs, 3), "role"), "tool");
    json_decref(sent);
}

/* Another wire cannot take what the neutral shape does not hold: it is refused by name (an
 * image by URL, a block of Anthropic's own). */
static void test_other_wire_refuses_what_it_cannot_carry(void **state)
{
    static const char oa[] = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                             "[{\"type\":\"image_url\",\"image_url\":{\"url\":\"http://x\"}}]}]}";
    static const char an[] = "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\","
                             "\"content\":[{\"type\":\"search_result\",\"source\":\"x\"}]}]}";
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    struct th_resp r;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[]");
    chat(oa, NULL, &r);
    assert_oa_error(&r, 400, "send it inline");
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "param"),
                        "messages[0].content[0]");
    th_resp_free(&r);
    teardown(NULL);
    start();
    script("[]");
    th_http("POST", u("/v1/messages"), an, h, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(
        strstr(th_jstr(json_object_get(r.json, "error"), "message"), "'search_result'"));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0);
}

/* ---- a user's media across wires (decision 0097) ------------------------------------------ */

#define PNG1                                                                                       \
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
#define PDF1 "JVBERi0xLjQKJcOkw7zDtsOfCjEgMCBvYmoKPDw+PgplbmRvYmoKdHJhaWxlcgo8PD4+CiUlRU9GCg=="
#define WAV1 "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
/* A chat completions body with one user message of a text part and the part given. */
#define CHAT_MEDIA(part)                                                                           \
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","           \
    "\"text\":\"What is this?\"}," part "]}]}"
#define IMAGE_URL(url) "{\"type\":\"image_url\",\"image_url\":{\"url\":\"" url "\"}}"

static void gem(const char *method, const char *body, const char *const *headers,
                struct th_resp *r);

/* body posted to the chat route, answered 200; the upstream's body. */
static const json_t *media_through(const char *body)
{
    struct th_resp r;

    script("[{\"text\":\"a red pixel\"}]");
    chat(body, NULL, &r);
    if (r.status != 200 || ms_request_count(F->ms) != 1)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    return ms_request(F->ms, 0)->json;
}

/* An OpenAI client's data-URL image reaches Claude as an image block of base64, after the text. */
static void test_media_chat_image_to_anthropic(void **state)
{
    const json_t *c;

    (void)state;
    start_with("anthropic", NULL, 0);
    c = json_object_get(
        json_array_get(
            json_object_get(media_through(CHAT_MEDIA(IMAGE_URL("data:image/png;base64," PNG1))),
                            "messages"),
            0),
        "content");
    assert_int_equal(json_array_size(c), 2);
    assert_string_equal(th_jstr(json_array_get(c, 0), "text"), "What is this?");
    assert_string_equal(th_jstr(json_array_get(c, 1), "type"), "image");
    assert_string_equal(th_jstr(test_json_at(c, "1.source"), "type"), "base64");
    assert_string_equal(th_jstr(test_json_at(c, "1.source"), "media_type"), "image/png");
    assert_string_equal(th_jstr(test_json_at(c, "1.source"), "data"), PNG1);
}

/* ... and Gemini as an inlineData part. */
static void test_media_chat_image_to_gemini(void **state)
{
    const json_t *parts;

    (void)state;
    start_with("gemini", NULL, 0);
    parts = json_object_get(
        json_array_get(
            json_object_get(media_through(CHAT_MEDIA(IMAGE_URL("data:image/png;base64," PNG1))),
                            "contents"),
            0),
        "parts");
    assert_int_equal(json_array_size(parts), 2);
    assert_string_equal(th_jstr(json_array_get(parts, 0), "text"), "What is this?");
    assert_string_equal(th_jstr(test_json_at(parts, "1.inlineData"), "mimeType"), "image/png");
    assert_string_equal(th_jstr(test_json_at(parts, "1.inlineData"), "data"), PNG1);
}

/* ... and the Responses API as an input_image. */
static void test_media_chat_image_to_responses(void **state)
{
    const json_t *c;

    (void)state;
    start_with("openai-responses", NULL, 0);
    c = json_object_get(
        json_array_get(
            json_object_get(media_through(CHAT_MEDIA(IMAGE_URL("data:image/png;base64," PNG1))),
                            "input"),
            0),
        "content");
    assert_int_equal(json_array_size(c), 2);
    assert_string_equal(th_jstr(json_array_get(c, 0), "type"), "input_text");
    assert_string_equal(th_jstr(json_array_get(c, 1), "type"), "input_image");
    assert_string_equal(th_jstr(json_array_get(c, 1), "image_url"), "data:image/png;base64," PNG1);
}

/* A PDF in an OpenAI file part reaches Claude as a document block; WAV audio reaches Gemini. */
static void test_media_chat_pdf_to_anthropic_audio_to_gemini(void **state)
{
    const json_t *c;

    (void)state;
    start_with("anthropic", NULL, 0);
    c = json_object_get(
        json_array_get(
            json_object_get(media_through(CHAT_MEDIA(
                                "{\"type\":\"file\",\"file\":{\"filename\":\"a.pdf\","
                                "\"file_data\":\"data:application/pdf;base64," PDF1 "\"}}")),
                            "messages"),
            0),
        "content");
    assert_string_equal(th_jstr(json_array_get(c, 1), "type"), "document");
    assert_string_equal(th_jstr(test_json_at(c, "1.source"), "media_type"), "application/pdf");
    assert_string_equal(th_jstr(test_json_at(c, "1.source"), "data"), PDF1);
    teardown(NULL);
    start_with("gemini", NULL, 0);
    c = json_object_get(
        json_array_get(json_object_get(media_through(CHAT_MEDIA(
                                           "{\"type\":\"input_audio\",\"input_audio\":{\"data\":"
                                           "\"" WAV1 "\",\"format\":\"wav\"}}")),
                                       "contents"),
                       0),
        "parts");
    assert_string_equal(th_jstr(test_json_at(c, "1.inlineData"), "mimeType"), "audio/wav");
}

/* A Responses client's input_image (through its conversion to chat parts) reaches Claude. */
static void test_media_responses_image_to_anthropic(void **state)
{
    struct th_resp r;
    const json_t *c;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"a red pixel\"}]");
    responses("{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":"
              "\"input_text\",\"text\":\"What is this?\"},{\"type\":\"input_image\","
              "\"image_url\":\"data:image/png;base64," PNG1 "\"}]}]}",
              &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    c = json_object_get(json_array_get(json_object_get(ms_request(F->ms, 0)->json, "messages"), 0),
                        "content");
    assert_string_equal(th_jstr(json_array_get(c, 1), "type"), "image");
    assert_string_equal(th_jstr(test_json_at(c, "1.source"), "data"), PNG1);
}

/* An Anthropic client's image block reaches OpenAI as an image_url data URL after the text. */
static void test_media_anthropic_image_to_openai(void **state)
{
    static const char body[] =
        "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":["
        "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\","
        "\"data\":\"" PNG1 "\"}},{\"type\":\"text\",\"text\":\"What is this?\"}]}]}";
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    struct th_resp r;
    const json_t *c;

    (void)state;
    start();
    script("[{\"text\":\"a red pixel\"}]");
    th_http("POST", u("/v1/messages"), body, h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    c = json_object_get(json_array_get(json_object_get(ms_request(F->ms, 0)->json, "messages"), 0),
                        "content");
    /* the text first: interleaving within a message is not kept */
    assert_int_equal(json_array_size(c), 2);
    assert_string_equal(th_jstr(json_array_get(c, 0), "text"), "What is this?");
    assert_string_equal(th_jstr(json_array_get(c, 1), "type"), "image_url");
    assert_string_equal(th_jstr(test_json_at(c, "1.image_url"), "url"),
                        "data:image/png;base64," PNG1);
}

/* A Gemini client's inlineData reaches Claude as an image block. */
static void test_media_gemini_inline_to_anthropic(void **state)
{
    struct th_resp r;
    const json_t *c;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"a red pixel\"}]");
    gem("generateContent",
        "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"What is this?\"},"
        "{\"inline_data\":{\"mime_type\":\"image/png\",\"data\":\"" PNG1 "\"}}]}]}",
        NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    c = json_object_get(json_array_get(json_object_get(ms_request(F->ms, 0)->json, "messages"), 0),
                        "content");
    assert_string_equal(th_jstr(json_array_get(c, 0), "text"), "What is this?");
    assert_string_equal(th_jstr(json_array_get(c, 1), "type"), "image");
    assert_string_equal(th_jstr(test_json_at(c, "1.source"), "data"), PNG1);
}

/* What cannot cross is a 400 naming the part, in the client's wire's shape, before the
 * upstream is asked: an image by URL, audio to Claude, base64 that is not, a file by id, an
 * Anthropic url source, a Gemini fileData. */
static void test_media_refusals(void **state)
{
    static const struct {
        const char *body, *param, *want;
    } chat_cases[] = {
        {CHAT_MEDIA(IMAGE_URL("https://example.com/cat.png")), "messages[0].content[1]",
         "send it inline (base64 / a data: URL)"},
        {CHAT_MEDIA("{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"" WAV1
                    "\",\"format\":\"wav\"}}"),
         "messages[0].content[1]", "takes no audio/wav, and rein's gateway"},
        {CHAT_MEDIA(IMAGE_URL("data:image/png;base64,not*base64!")), "messages[0].content[1]",
         "not base64"},
        {CHAT_MEDIA(IMAGE_URL("data:image/png," PNG1)), "messages[0].content[1]",
         "data:<media type>;base64,"},
        {CHAT_MEDIA("{\"type\":\"file\",\"file\":{\"file_id\":\"file-1\"}}"),
         "messages[0].content[1]", "a file_id"},
        {CHAT_MEDIA(IMAGE_URL("data:video/mp4;base64," PNG1)), "messages[0].content[1]",
         "takes no video/mp4"},
        /* a comma before where a data URL's media type would start (the fuzzer's find) */
        {CHAT_MEDIA(IMAGE_URL("da," PNG1)), "messages[0].content[1]", "a URL"},
        {CHAT_MEDIA(IMAGE_URL("data:,")), "messages[0].content[1]", "data:<media type>;base64,"},
    };
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    struct th_resp r;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"ok\",\"times\":0}]");
    for (size_t i = 0; i < REIN_ARRAY_SIZE(chat_cases); i++) {
        chat(chat_cases[i].body, NULL, &r);
        assert_oa_error(&r, 400, chat_cases[i].want);
        assert_string_equal(th_jstr(json_object_get(r.json, "error"), "param"),
                            chat_cases[i].param);
        th_resp_free(&r);
    }
    teardown(NULL);
    start();
    script("[{\"text\":\"ok\",\"times\":0}]");
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":"
            "[{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"https://x/a.png\"}}]}]}",
            h, &r);
    assert_int_equal(r.status, 400);
    assert_string_equal(th_jstr(r.json, "type"), "error");
    assert_non_null(strstr(th_jstr(json_object_get(r.json, "error"), "message"),
                           "messages.0.content.0: rein's gateway cannot carry media given by a "
                           "URL"));
    th_resp_free(&r);
    gem("generateContent",
        "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"fileData\":{\"mimeType\":"
        "\"image/png\",\"fileUri\":\"gs://b/a.png\"}}]}]}",
        NULL, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "contents[0].parts[0]: rein's gateway cannot carry media"));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0);
}

/* Bedrock's Claude streams its thinking's signature in an event of its own: an Anthropic client
 * gets it as Claude's own stream has it, closing the thinking block. (The scripted Bedrock
 * sends no redacted thinking.) */
static void test_bedrock_stream_keeps_thinking_blocks(void **state)
{
    static const char body[] = "{\"model\":\"m\",\"max_tokens\":64,\"stream\":true," USER "}";
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    char types[256];
    struct th_resp r;

    (void)state;
    start_with("bedrock", "bedrock-api-key", 0);
    script("[{\"reasoning\":\"Mild, surely.\",\"signature\":\"c2ln\",\"text\":\"Mild.\"}]");
    th_http("POST", u("/v1/messages"), body, h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    streamed_blocks(r.body, types, sizeof(types));
    if (!strstr(r.body, "\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":"
                        "\"c2ln\"}") ||
        strcmp(types, "thinking text") != 0)
        fail_msg("blocks %s in:\n%s", types, r.body);
    th_resp_free(&r);
}

/* Interleaved thinking in a message body: each thinking block goes to the client before the
 * call it led to, as Claude wrote them, so that the next turn sends them back in place. */
static void test_anthropic_reply_interleaved_thinking(void **state)
{
    static const char reply[] =
        "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\","
        "\"content\":[{\"type\":\"thinking\",\"thinking\":\"first\",\"signature\":\"S1\"},"
        "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}},"
        "{\"type\":\"thinking\",\"thinking\":\"second\",\"signature\":\"S2\"},"
        "{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"get_weather\",\"input\":{}}],"
        "\"stop_reason\":\"tool_use\",\"stop_sequence\":null,"
        "\"usage\":{\"input_tokens\":5,\"output_tokens\":9}}";
    static const char body[] = "{\"model\":\"m\",\"max_tokens\":64," USER
                               ",\"tools\":[{\"name\":\"get_weather\",\"input_schema\":"
                               "{\"type\":\"object\"}}]}";
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    static const char *const want[][2] = {
        {"thinking", "S1"}, {"tool_use", "toolu_1"}, {"thinking", "S2"}, {"tool_use", "toolu_2"}};
    json_t *content;
    struct th_resp r;

    (void)state;
    start_with("anthropic", NULL, 0);
    script_body(reply, false);
    th_http("POST", u("/v1/messages"), body, h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    content = json_object_get(r.json, "content");
    assert_int_equal(json_array_size(content), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *b = json_array_get(content, i);
        assert_string_equal(th_jstr(b, "type"), want[i][0]);
        assert_string_equal(th_jstr(b, i % 2 ? "id" : "signature"), want[i][1]);
    }
    th_resp_free(&r);
}

/* ---- the upstream's headers (decision 0086) ------------------------------------------------- */

/* OpenAI's headers as a scripted reply sends them, with two that must not pass and one that
 * echoes the key. */
#define OA_HEADERS(id)                                                                             \
    "\"headers\":{\"x-request-id\":\"" id "\",\"X-RateLimit-Limit-Requests\":\"500\","             \
    "\"x-ratelimit-remaining-requests\":\"499\",\"x-ratelimit-reset-requests\":\"120ms\","         \
    "\"x-ratelimit-limit-tokens\":\"30000\",\"x-ratelimit-remaining-tokens\":\"29000\","           \
    "\"x-ratelimit-reset-tokens\":\"2s\",\"openai-processing-ms\":\"123\","                        \
    "\"set-cookie\":\"__cf_bm=abc; path=/\",\"x-envoy-upstream-service-time\":\"5\","              \
    "\"x-ratelimit-echo\":\"key sk-rein-own\"}"

/* Asserts the header name of r is want (NULL: it is not there). */
static void assert_header(const struct th_resp *r, const char *name, const char *want)
{
    const char *got = th_header(r, name);

    if (want && (!got || strcmp(got, want) != 0))
        fail_msg("%s: want \"%s\", got %s%s%s\n%s", name, want, got ? "\"" : "", got ? got : "none",
                 got ? "\"" : "", r->headers);
    if (!want && got)
        fail_msg("%s should not pass, got \"%s\"", name, got);
}

/* What an answer from an upstream scripted with OA_HEADERS(id) carries. */
static void assert_oa_headers(const struct th_resp *r, const char *id)
{
    const char *own = th_header(r, "X-Request-Id");

    /* rein's own id stays where the server's contract puts it */
    assert_non_null(own);
    assert_string_not_equal(own, id);
    assert_header(r, "x-upstream-request-id", id);
    assert_header(r, "x-ratelimit-limit-requests", "500");
    assert_header(r, "x-ratelimit-remaining-requests", "499");
    assert_header(r, "x-ratelimit-reset-requests", "120ms");
    assert_header(r, "x-ratelimit-limit-tokens", "30000");
    assert_header(r, "x-ratelimit-remaining-tokens", "29000");
    assert_header(r, "x-ratelimit-reset-tokens", "2s");
    assert_header(r, "openai-processing-ms", "123");
    assert_header(r, "set-cookie", NULL);
    assert_header(r, "x-envoy-upstream-service-time", NULL);
    assert_header(r, "x-ratelimit-echo", NULL);
}

/*
 * An OpenAI upstream's request id and rate limits reach the client, in a JSON answer and in a
 * stream; its x-request-id as x-upstream-request-id beside rein's own X-Request-Id. After a
 * re-ask, a JSON answer carries the final round's and a stream the first round's, whose
 * headers went out before its first byte.
 */
static void test_upstream_headers_reach_the_client(void **state)
{
    static const char reask[] =
        "[{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":\"{}\"}],"
        "\"headers\":{\"x-request-id\":\"req_r1\"}},"
        "{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":"
        "\"{\\\"city\\\":\\\"Paris\\\"}\"}],"
        "\"headers\":{\"x-request-id\":\"req_r2\"}}]";
    struct th_resp r;

    (void)state;
    start_with("openai", "sk-rein-own", 0);
    script("[{\"text\":\"Mild.\"," OA_HEADERS("req_up_json") "}]");
    chat("{\"model\":\"m\"," USER "}", NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_oa_headers(&r, "req_up_json");
    th_resp_free(&r);
    script("[{\"text\":[\"Mi\",\"ld.\"]," OA_HEADERS("req_up_stream") "}]");
    chat("{\"model\":\"m\",\"stream\":true," USER "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "[DONE]"));
    assert_oa_headers(&r, "req_up_stream");
    th_resp_free(&r);
    script(reask);
    chat("{\"model\":\"m\"," TOOLS "," USER "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_header(&r, "x-upstream-request-id", "req_r2");
    th_resp_free(&r);
    script(reask);
    chat("{\"model\":\"m\",\"stream\":true," TOOLS "," USER "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "Paris"));
    assert_header(&r, "x-upstream-request-id", "req_r1");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 2); /* the re-ask went up */
}

/* An upstream 429 passes with its Retry-After, its rate limits and its request id, whether
 * the client asked for a stream or not. */
static void test_upstream_429_passes_its_headers(void **state)
{
    static const char limited[] =
        "[{\"status\":429,\"times\":2,\"headers\":{\"Retry-After\":\"7\",\"x-request-id\":"
        "\"req_429\",\"x-ratelimit-remaining-requests\":\"0\",\"x-ratelimit-reset-requests\":"
        "\"7s\",\"set-cookie\":\"a=b\"},\"error\":{\"type\":\"requests\",\"code\":"
        "\"rate_limit_exceeded\",\"message\":\"Rate limit reached\"}}]";
    static const char *const bodies[] = {"{\"model\":\"m\"," USER "}",
                                         "{\"model\":\"m\",\"stream\":true," USER "}"};
    struct th_resp r;

    (void)state;
    start();
    script(limited);
    for (size_t i = 0; i < REIN_ARRAY_SIZE(bodies); i++) {
        chat(bodies[i], NULL, &r);
        assert_int_equal(r.status, 429);
        assert_string_equal(th_jstr(json_object_get(r.json, "error"), "code"),
                            "rate_limit_exceeded");
        assert_header(&r, "Retry-After", "7");
        assert_header(&r, "x-upstream-request-id", "req_429");
        assert_header(&r, "x-ratelimit-remaining-requests", "0");
        assert_header(&r, "x-ratelimit-reset-requests", "7s");
        assert_header(&r, "set-cookie", NULL);
        th_resp_free(&r);
    }
}

#define AN_HEADERS(id)                                                                             \
    "\"headers\":{\"request-id\":\"" id "\",\"anthropic-ratelimit-requests-limit\":\"50\","        \
    "\"anthropic-ratelimit-requests-remaining\":\"49\",\"anthropic-ratelimit-requests-reset\":"    \
    "\"2025-01-01T00:00:01Z\",\"anthropic-ratelimit-input-tokens-remaining\":\"39000\","           \
    "\"anthropic-ratelimit-output-tokens-remaining\":\"7900\","                                    \
    "\"anthropic-ratelimit-unified-status\":\"allowed\","                                          \
    "\"anthropic-ratelimit-unified-5h-utilization\":\"0.25\",\"set-cookie\":\"a=b\","              \
    "\"anthropic-organization-id\":\"org-1\",\"cf-ray\":\"8f1\"}"

static void assert_an_headers(const struct th_resp *r, const char *id)
{
    const char *own = th_header(r, "X-Request-Id");

    assert_non_null(own);
    assert_string_not_equal(own, id);
    assert_header(r, "request-id", id);
    assert_header(r, "anthropic-ratelimit-requests-limit", "50");
    assert_header(r, "anthropic-ratelimit-requests-remaining", "49");
    assert_header(r, "anthropic-ratelimit-requests-reset", "2025-01-01T00:00:01Z");
    assert_header(r, "anthropic-ratelimit-input-tokens-remaining", "39000");
    assert_header(r, "anthropic-ratelimit-output-tokens-remaining", "7900");
    assert_header(r, "anthropic-ratelimit-unified-status", "allowed");
    assert_header(r, "anthropic-ratelimit-unified-5h-utilization", "0.25");
    assert_header(r, "set-cookie", NULL);
    assert_header(r, "anthropic-organization-id", NULL);
    assert_header(r, "cf-ray", NULL);
}

/*
 * An Anthropic upstream's request-id and rate limits (the unified-* family Claude Code reads
 * included) reach an Anthropic client as they came, in a JSON answer and a stream; an error
 * keeps the request_id of its body, with the same headers, and an OpenAI client gets the
 * headers too.
 */
static void test_anthropic_upstream_headers_and_request_id(void **state)
{
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    struct th_resp r;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"Mild.\"," AN_HEADERS("req_an_json") "}]");
    th_http("POST", u("/v1/messages"), "{\"model\":\"m\",\"max_tokens\":64," USER "}", h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_an_headers(&r, "req_an_json");
    th_resp_free(&r);
    script("[{\"text\":[\"Mi\",\"ld.\"]," AN_HEADERS("req_an_stream") "}]");
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"m\",\"max_tokens\":64,\"stream\":true," USER "}", h, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "message_stop"));
    assert_an_headers(&r, "req_an_stream");
    th_resp_free(&r);
    script("[{\"status\":429,\"times\":2,\"headers\":{\"request-id\":\"req_an_429\","
           "\"retry-after\":\"3\",\"anthropic-ratelimit-requests-remaining\":\"0\"},"
           "\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}]");
    th_http("POST", u("/v1/messages"), "{\"model\":\"m\",\"max_tokens\":64," USER "}", h, &r);
    assert_int_equal(r.status, 429);
    assert_string_equal(th_jstr(r.json, "type"), "error");
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "type"), "rate_limit_error");
    assert_string_equal(th_jstr(r.json, "request_id"), "req_an_429");
    assert_header(&r, "request-id", "req_an_429");
    assert_header(&r, "retry-after", "3");
    assert_header(&r, "anthropic-ratelimit-requests-remaining", "0");
    th_resp_free(&r);
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"m\",\"max_tokens\":64,\"stream\":true," USER "}", h, &r);
    assert_int_equal(r.status, 429);
    assert_string_equal(th_jstr(r.json, "request_id"), "req_an_429");
    assert_header(&r, "request-id", "req_an_429");
    th_resp_free(&r);
    script("[{\"text\":\"Mild.\"," AN_HEADERS("req_an_oa") "}]");
    chat("{\"model\":\"m\"," USER "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_an_headers(&r, "req_an_oa");
    th_resp_free(&r);
}

static void test_models(void **state)
{
    struct th_resp r;

    (void)state;
    start();
    th_get(u("/v1/models"), &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(th_jstr(r.json, "object"), "list");
    assert_string_equal(th_jstr(json_array_get(json_object_get(r.json, "data"), 0), "id"),
                        "gw-model");
    th_resp_free(&r);
    th_http("GET", u("/v1/models"), NULL, (const char *[]){"anthropic-version: 2023-06-01", NULL},
            &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(th_jstr(json_array_get(json_object_get(r.json, "data"), 0), "type"),
                        "model");
    assert_true(json_is_false(json_object_get(r.json, "has_more")));
    th_resp_free(&r);
}

/* ---- Gemini's API as the client wire (decision 0092) ------------------------------------- */

#define G_TOOLS                                                                                    \
    "\"tools\":[{\"functionDeclarations\":[{\"name\":\"get_weather\",\"description\":"             \
    "\"Weather by city\",\"parameters\":{\"type\":\"OBJECT\",\"properties\":{\"city\":"            \
    "{\"type\":\"STRING\"}},\"required\":[\"city\"]}}]}]"
#define G_USER       "\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"weather in Paris?\"}]}]"
#define G_CALL(args) "{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":\"" args "\"}]}"
#define G_PARIS      "{\\\"city\\\":\\\"Paris\\\"}"

/* POST /v1beta/models/gemini-test:METHOD (method with its query) with extra headers. */
static void gem(const char *method, const char *body, const char *const *headers, struct th_resp *r)
{
    const char *h[8] = {"Content-Type: application/json", "x-goog-api-client: rein-test"};
    char path[160];
    size_t n = 2;

    for (size_t i = 0; headers && headers[i] && n < 7; i++)
        h[n++] = headers[i];
    h[n] = NULL;
    snprintf(path, sizeof(path), "/v1beta/models/gemini-test:%s", method);
    th_http("POST", u(path), body, h, r);
}

#define GEN    "generateContent"
#define STREAM "streamGenerateContent?alt=sse"

/* Asserts Gemini's error shape: {"error": {code, message, status}}, the message holding want. */
static void assert_gm_error(const struct th_resp *r, long status, const char *word,
                            const char *want)
{
    const json_t *e = json_object_get(r->json, "error");
    const char *msg = th_jstr(e, "message"), *got = th_jstr(e, "status");

    if (r->status != status || !json_is_object(e) ||
        json_integer_value(json_object_get(e, "code")) != status || !got ||
        strcmp(got, word) != 0 || !msg || !strstr(msg, want))
        fail_msg("want %ld %s with \"%s\", got %ld: %s", status, word, want, r->status, r->body);
}

/* The parts of the answer's candidate 0. */
static const json_t *gm_parts(const json_t *resp)
{
    return test_json_at(resp, "candidates.0.content.parts");
}

/* The functionCall parts of a stream's events, in order, as a new array; *finish receives the
 * last finishReason (borrowed from events, which the caller frees). */
static json_t *gm_stream_calls(const json_t *events, const char **finish, struct rein_buf *text)
{
    json_t *calls = json_array();
    size_t i, j;
    json_t *ev, *part;

    *finish = NULL;
    json_array_foreach(events, i, ev)
    {
        const json_t *data = json_object_get(ev, "data");
        const char *f = th_jstr(test_json_at(data, "candidates.0"), "finishReason");
        assert_string_equal(th_jstr(ev, "event"), ""); /* Gemini's events have no name */
        if (f)
            *finish = f;
        json_array_foreach(gm_parts(data), j, part)
        {
            if (json_object_get(part, "functionCall"))
                json_array_append(calls, part);
            else if (text && th_jstr(part, "text") &&
                     !json_is_true(json_object_get(part, "thought")))
                assert_int_equal(rein_buf_adds(text, th_jstr(part, "text")), REIN_OK);
        }
    }
    return calls;
}

static void assert_paris_call(const json_t *part)
{
    const json_t *fc = json_object_get(part, "functionCall");

    if (!fc || strcmp(th_jstr(fc, "name") ? th_jstr(fc, "name") : "", "get_weather") != 0 ||
        strcmp(th_jstr(json_object_get(fc, "args"), "city")
                   ? th_jstr(json_object_get(fc, "args"), "city")
                   : "",
               "Paris") != 0) {
        char *s = json_dumps(part, 0);
        fail_msg("not get_weather(Paris): %s", s);
    }
}

/*
 * A Gemini client's valid call passes, as a JSON answer and as a stream of
 * GenerateContentResponses; the upstream (OpenAI's wire) is offered the declaration with its
 * Gemini Schema as JSON Schema, and the client's generationConfig under its own names.
 */
static void test_gemini_client_valid_call(void **state)
{
    struct th_resp r;
    const struct ms_request *q;
    const json_t *parts;
    const char *finish;
    json_t *ev, *calls;

    (void)state;
    start();
    script("[" G_CALL(G_PARIS) "]");
    gem(GEN,
        "{" G_USER "," G_TOOLS ",\"systemInstruction\":{\"parts\":[{\"text\":\"Be brief.\"}]},"
        "\"generationConfig\":{\"temperature\":0.2,\"maxOutputTokens\":300,\"topP\":0.9}}",
        NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    parts = gm_parts(r.json);
    assert_int_equal(json_array_size(parts), 1);
    assert_paris_call(json_array_get(parts, 0));
    assert_string_equal(th_jstr(test_json_at(r.json, "candidates.0"), "finishReason"), "STOP");
    assert_string_equal(th_jstr(test_json_at(r.json, "candidates.0.content"), "role"), "model");
    assert_non_null(test_json_at(r.json, "usageMetadata.promptTokenCount"));
    assert_non_null(test_json_at(r.json, "usageMetadata.totalTokenCount"));
    assert_non_null(th_jstr(r.json, "responseId"));
    assert_string_equal(th_jstr(r.json, "modelVersion"), "gw-model");
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(q->format, "openai");
    assert_string_equal(th_jstr(test_json_at(q->json, "tools.0.function.parameters"), "type"),
                        "object");
    assert_string_equal(
        th_jstr(test_json_at(q->json, "tools.0.function.parameters.properties.city"), "type"),
        "string");
    assert_string_equal(th_jstr(test_json_at(q->json, "messages.0"), "role"), "system");
    assert_int_equal(json_integer_value(json_object_get(q->json, "max_tokens")), 300);
    assert_true(json_real_value(json_object_get(q->json, "temperature")) == 0.2);

    script("[{\"text\":[\"Let me \",\"check.\"],\"tool_calls\":[{\"name\":\"get_weather\","
           "\"arguments\":\"" G_PARIS "\"}]}]");
    gem(STREAM, "{" G_USER "," G_TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(th_header(&r, "Content-Type"), "text/event-stream"));
    {
        struct rein_buf text;
        rein_buf_init(&text, 0);
        ev = th_sse_events(r.body, NULL);
        calls = gm_stream_calls(ev, &finish, &text);
        assert_int_equal(json_array_size(calls), 1);
        assert_paris_call(json_array_get(calls, 0));
        assert_string_equal(text.ptr, "Let me check.");
        assert_string_equal(finish, "STOP");
        assert_non_null(
            test_json_at(json_object_get(json_array_get(ev, json_array_size(ev) - 1), "data"),
                         "usageMetadata.candidatesTokenCount"));
        rein_buf_release(&text);
        json_decref(calls);
        json_decref(ev);
    }
    th_resp_free(&r);
    /* The v1 path (the SDKs' apiVersion "v1") is the same route. */
    script("[{\"text\":\"Hi.\"}]");
    th_http("POST", u("/v1/models/gemini-test:generateContent"), "{" G_USER "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(th_jstr(json_array_get(gm_parts(r.json), 0), "text"), "Hi.");
    th_resp_free(&r);
}

/* A misspelled name is repaired; invalid arguments are asked again and the client sees only the
 * valid call, in a JSON answer and in the middle of a stream. */
static void test_gemini_client_repair_and_reask(void **state)
{
    struct th_resp r;
    const char *finish;
    json_t *ev, *calls;
    struct rein_buf text;

    (void)state;
    start();
    script("[{\"tool_calls\":[{\"name\":\"get_wether\",\"arguments\":\"" G_PARIS "\"}]}]");
    gem(GEN, "{" G_USER "," G_TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_paris_call(json_array_get(gm_parts(r.json), 0));
    assert_non_null(test_json_at(r.json, "rein.repairs"));
    th_resp_free(&r);

    script("[{\"times\":1,\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":"
           "\"{\\\"city\\\":3}\"}]}," G_CALL(G_PARIS) "]");
    gem(GEN, "{" G_USER "," G_TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(json_array_size(gm_parts(r.json)), 1);
    assert_paris_call(json_array_get(gm_parts(r.json), 0));
    assert_int_equal(json_integer_value(test_json_at(r.json, "rein.reasks")), 1);
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 2);
    /* the re-ask told the model what was wrong, as a tool result */
    assert_string_equal(th_jstr(test_json_at(ms_last_request(F->ms)->json, "messages.2"), "role"),
                        "tool");

    script("[{\"times\":1,\"text\":\"First. \",\"tool_calls\":[{\"name\":\"get_weather\","
           "\"arguments\":\"{\\\"city\\\":3}\"}]},{\"text\":\"Second.\",\"tool_calls\":"
           "[{\"name\":\"get_weather\",\"arguments\":\"" G_PARIS "\"}]}]");
    gem(STREAM, "{" G_USER "," G_TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    rein_buf_init(&text, 0);
    ev = th_sse_events(r.body, NULL);
    calls = gm_stream_calls(ev, &finish, &text);
    assert_int_equal(json_array_size(calls), 1);
    assert_paris_call(json_array_get(calls, 0));
    assert_string_equal(text.ptr, "First. Second.");
    assert_null(strstr(r.body, "\"city\":3"));
    rein_buf_release(&text);
    json_decref(calls);
    json_decref(ev);
    th_resp_free(&r);
}

/* The pass policy hands the invalid call out with the "rein" member; the error policy answers
 * 422 in Gemini's shape with the problems. */
static void test_gemini_client_pass_and_error(void **state)
{
    static const char bad[] = "[{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":"
                              "\"{\\\"city\\\":3}\"}],\"times\":0}]";
    struct th_resp r;

    (void)state;
    start();
    script(bad);
    gem(GEN, "{" G_USER "," G_TOOLS "}", (const char *[]){"x-rein-on-invalid: pass", NULL}, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(json_integer_value(test_json_at(json_array_get(gm_parts(r.json), 0),
                                                     "functionCall.args.city")),
                     3);
    assert_int_equal(json_array_size(test_json_at(r.json, "rein.problems")), 1);
    th_resp_free(&r);
    gem(STREAM, "{" G_USER "," G_TOOLS "}", (const char *[]){"x-rein-on-invalid: pass", NULL}, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"problems\":["));
    th_resp_free(&r);
    gem(GEN, "{" G_USER "," G_TOOLS "}", (const char *[]){"x-rein-on-invalid: error", NULL}, &r);
    assert_gm_error(&r, 422, "INVALID_ARGUMENT", "invalid tool call");
    assert_int_equal(json_array_size(test_json_at(r.json, "rein.problems")), 1);
    th_resp_free(&r);
}

/* A call the model wrote as text becomes a functionCall part; parallel calls are parts of one
 * content, in order. */
static void test_gemini_client_text_call_and_parallel_calls(void **state)
{
    struct th_resp r;
    const json_t *parts;

    (void)state;
    start();
    script("[{\"text\":\"<tool_call>{\\\"name\\\": \\\"get_weather\\\", \\\"arguments\\\": "
           "{\\\"city\\\": \\\"Paris\\\"}}</tool_call>\"}]");
    gem(GEN, "{" G_USER "," G_TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    parts = gm_parts(r.json);
    assert_paris_call(json_array_get(parts, json_array_size(parts) - 1));
    assert_null(strstr(r.body, "<tool_call>"));
    assert_non_null(test_json_at(r.json, "rein.converted"));
    th_resp_free(&r);

    script("[{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":\"" G_PARIS "\"},"
           "{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}]}]");
    gem(GEN, "{" G_USER "," G_TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    parts = gm_parts(r.json);
    assert_int_equal(json_array_size(parts), 2);
    assert_paris_call(json_array_get(parts, 0));
    assert_string_equal(
        th_jstr(test_json_at(json_array_get(parts, 1), "functionCall.args"), "city"), "Oslo");
    th_resp_free(&r);
}

/* An upstream's 429 keeps its status and Retry-After, in Gemini's error shape (JSON and a
 * stream that had not begun). */
static void test_gemini_client_upstream_429(void **state)
{
    struct th_resp r;

    (void)state;
    start();
    script("[{\"status\":429,\"times\":2,\"headers\":{\"Retry-After\":\"7\"},\"error\":"
           "{\"type\":\"requests\",\"code\":\"rate_limit_exceeded\",\"message\":"
           "\"Rate limit reached\"}}]");
    gem(GEN, "{" G_USER "}", NULL, &r);
    assert_gm_error(&r, 429, "RESOURCE_EXHAUSTED", "Rate limit reached");
    assert_header(&r, "Retry-After", "7");
    th_resp_free(&r);
    gem(STREAM, "{" G_USER "}", NULL, &r);
    assert_gm_error(&r, 429, "RESOURCE_EXHAUSTED", "Rate limit reached");
    assert_header(&r, "Retry-After", "7");
    th_resp_free(&r);
    /* After the stream began: one more data line with the error body, as Gemini ends it. */
    script("[{\"text\":[\"a\",\"b\",\"c\"],\"fault\":{\"error_after_events\":3}}]");
    gem(STREAM, "{" G_USER "}", NULL, &r);
    assert_int_equal(r.status, 200);
    {
        json_t *ev = th_sse_events(r.body, NULL);
        const json_t *last = json_object_get(json_array_get(ev, json_array_size(ev) - 1), "data");
        assert_string_equal(
            th_jstr(json_array_get(gm_parts(json_object_get(json_array_get(ev, 0), "data")), 0),
                    "text"),
            "a");
        if (!json_is_integer(test_json_at(last, "error.code")) ||
            !th_jstr(json_object_get(last, "error"), "status"))
            fail_msg("no error event at the end: %s", r.body);
        json_decref(ev);
    }
    th_resp_free(&r);
}

/* With --gateway-forward-key, a Gemini client's x-goog-api-key goes upstream instead of
 * rein's own key, to a Gemini upstream (as x-goog-api-key) and to another wire. */
static void test_gemini_client_key_is_forwarded(void **state)
{
    static const char *const wires[] = {"gemini", "openai"};
    struct th_resp r;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(wires); i++) {
        next_forward_key = true;
        start_with(wires[i], "sk-rein-own", 0);
        ms_set_api_key(F->ms, "sk-client-3");
        script("[{\"text\":\"Mild.\"}]");
        gem(GEN, "{" G_USER "}", (const char *[]){"x-goog-api-key: sk-client-3", NULL}, &r);
        if (r.status != 200)
            fail_msg("%s upstream: %ld %s", wires[i], r.status, r.body);
        th_resp_free(&r);
        teardown(NULL);
    }
}

/* The next turn of a Gemini client: its model content (calls without ids, as Gemini 2.x sends
 * them) and the functionResponse parts answering them by name reach an Anthropic upstream as
 * tool_use and tool_result blocks with matching ids. */
static void test_gemini_client_to_anthropic(void **state)
{
    static const char body[] =
        "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"weather in Paris?\"}]},"
        "{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":"
        "{\"city\":\"Paris\"}}}]},"
        "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"get_weather\","
        "\"response\":{\"output\":\"Sunny, 21 C\"}}}]}]," G_TOOLS "}";
    struct th_resp r;
    const struct ms_request *q;
    const json_t *use, *res;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[" G_CALL(G_PARIS) "]");
    gem(GEN, "{" G_USER "," G_TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_paris_call(json_array_get(gm_parts(r.json), 0));
    /* Claude's ids go to the client (a Gemini 3 client sends them back) */
    assert_non_null(test_json_at(json_array_get(gm_parts(r.json), 0), "functionCall.id"));
    th_resp_free(&r);
    assert_string_equal(ms_last_request(F->ms)->format, "anthropic");

    script("[{\"text\":\"Sunny in Paris.\"}]");
    gem(GEN, body, NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(th_jstr(json_array_get(gm_parts(r.json), 0), "text"), "Sunny in Paris.");
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    use = test_json_at(q->json, "messages.1.content.0");
    res = test_json_at(q->json, "messages.2.content.0");
    assert_string_equal(th_jstr(use, "type"), "tool_use");
    assert_string_equal(th_jstr(res, "type"), "tool_result");
    assert_string_equal(th_jstr(use, "id"), th_jstr(res, "tool_use_id"));
    assert_non_null(strstr(q->body, "Sunny, 21 C"));
    /* A response numbered by the client (no call has its id) answers the call of its name. */
    {
        char numbered[sizeof(body) + 64];
        const char *at = strstr(body, "{\"functionResponse\":{");
        snprintf(numbered, sizeof(numbered), "%.*s{\"functionResponse\":{\"id\":\"adk-7\",%s",
                 (int)(at - body), body, at + strlen("{\"functionResponse\":{"));
        script("[{\"text\":\"Sunny in Paris.\"}]");
        gem(GEN, numbered, NULL, &r);
        if (r.status != 200)
            fail_msg("%ld %s", r.status, r.body);
        th_resp_free(&r);
        q = ms_last_request(F->ms);
        assert_string_equal(th_jstr(test_json_at(q->json, "messages.1.content.0"), "id"),
                            th_jstr(test_json_at(q->json, "messages.2.content.0"), "tool_use_id"));
    }
}

/*
 * Gemini behind a Gemini client: the upstream's thoughtSignature reaches the client on its
 * functionCall part (JSON and stream), and the signature the client sends back with the call
 * in its history reaches the upstream on the same part. What only Gemini has
 * (generationConfig.thinkingConfig, safetySettings) goes up as written.
 */
static void test_gemini_client_to_gemini_keeps_signatures(void **state)
{
    static const char next[] =
        "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"weather in Paris?\"}]},"
        "{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":"
        "{\"city\":\"Paris\"}},\"thoughtSignature\":\"sig-from-gemini\"}]},"
        "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"get_weather\","
        "\"response\":{\"output\":\"Sunny\"}}}]}]," G_TOOLS ","
        "\"safetySettings\":[{\"category\":\"HARM_CATEGORY_HARASSMENT\",\"threshold\":"
        "\"BLOCK_NONE\"}],\"generationConfig\":{\"maxOutputTokens\":100,\"thinkingConfig\":"
        "{\"thinkingBudget\":0}}}";
    struct th_resp r;
    const struct ms_request *q;
    const char *finish;
    json_t *ev, *calls;

    (void)state;
    start_with("gemini", NULL, 0);
    script("[{\"signature\":\"sig-up-1\",\"tool_calls\":[{\"name\":\"get_weather\","
           "\"arguments\":\"" G_PARIS "\"}],\"times\":2}]");
    gem(GEN, "{" G_USER "," G_TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_paris_call(json_array_get(gm_parts(r.json), 0));
    assert_string_equal(th_jstr(json_array_get(gm_parts(r.json), 0), "thoughtSignature"),
                        "sig-up-1");
    /* Gemini gave the call no id: the client gets none either */
    assert_null(test_json_at(json_array_get(gm_parts(r.json), 0), "functionCall.id"));
    th_resp_free(&r);
    assert_string_equal(ms_last_request(F->ms)->format, "gemini");
    gem(STREAM, "{" G_USER "," G_TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    ev = th_sse_events(r.body, NULL);
    calls = gm_stream_calls(ev, &finish, NULL);
    assert_int_equal(json_array_size(calls), 1);
    assert_string_equal(th_jstr(json_array_get(calls, 0), "thoughtSignature"), "sig-up-1");
    json_decref(calls);
    json_decref(ev);
    th_resp_free(&r);

    script("[{\"text\":\"Sunny.\"}]");
    gem(GEN, next, NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_null(th_header(&r, "x-rein-dropped"));
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_string_equal(th_jstr(test_json_at(q->json, "contents.1.parts.0"), "thoughtSignature"),
                        "sig-from-gemini");
    assert_null(test_json_at(q->json, "contents.1.parts.0.functionCall.id"));
    assert_string_equal(
        th_jstr(test_json_at(q->json, "contents.2.parts.0.functionResponse"), "name"),
        "get_weather");
    assert_int_equal(
        json_integer_value(test_json_at(q->json, "generationConfig.thinkingConfig.thinkingBudget")),
        0);
    assert_int_equal(json_integer_value(test_json_at(q->json, "generationConfig.maxOutputTokens")),
                     100);
    assert_string_equal(th_jstr(test_json_at(q->json, "safetySettings.0"), "threshold"),
                        "BLOCK_NONE");
}

/* What another wire cannot carry: thinkingConfig and safetySettings are dropped and named,
 * a response schema or a built-in tool refused with a 400 naming it. */
static void test_gemini_client_dropped_and_refused(void **state)
{
    struct th_resp r;
    const char *d;

    (void)state;
    start();
    script("[{\"text\":\"ok\",\"times\":0}]");
    gem(GEN,
        "{" G_USER ",\"safetySettings\":[],\"generationConfig\":{\"thinkingConfig\":"
        "{\"thinkingBudget\":1024},\"responseMimeType\":\"text/plain\"}}",
        NULL, &r);
    assert_int_equal(r.status, 200);
    d = th_header(&r, "x-rein-dropped");
    if (!d || !strstr(d, "generationConfig.thinkingConfig") || !strstr(d, "safetySettings"))
        fail_msg("x-rein-dropped: %s", d ? d : "none");
    th_resp_free(&r);
    assert_null(json_object_get(ms_last_request(F->ms)->json, "thinkingConfig"));
    gem(GEN, "{" G_USER ",\"generationConfig\":{\"responseMimeType\":\"application/xml\"}}", NULL,
        &r);
    assert_gm_error(&r, 400, "INVALID_ARGUMENT", "generationConfig.responseMimeType");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 1);
}

/* Bodies Gemini would refuse, and what rein's gateway cannot carry, get a 400 in Gemini's
 * shape that names the field; an unknown method a 404. Nothing goes upstream. */
static void test_gemini_client_bad_bodies(void **state)
{
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"{\"contents\":", "Invalid JSON payload"},
        {"[1]", "must be an object"},
        {"{}", "contents: Field required"},
        {"{\"contents\":[]}", "non-empty list"},
        {"{\"contents\":[{\"role\":\"robot\",\"parts\":[{\"text\":\"x\"}]}]}", "valid role"},
        {"{" G_USER "," G_TOOLS ",\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"ANY\","
         "\"allowedFunctionNames\":[\"get_time\"]}}}",
         "\"get_time\" is not one of the request's functionDeclarations"},
        {"{" G_USER ",\"generationConfig\":{\"candidateCount\":2}}",
         "generationConfig.candidateCount"},
        {"{\"contents\":[{\"role\":\"user\",\"parts\":[{\"executableCode\":{\"code\":"
         "\"1\"}}]}]}",
         "contents[0].parts[0]: executableCode parts are not supported"},
        {"{\"contents\":[{\"role\":\"user\",\"parts\":[{\"inlineData\":{\"mimeType\":"
         "\"image/png\",\"data\":\"AAA\"}}]}]}",
         "contents[0].parts[0]: the image/png data is not base64"},
        {"{" G_USER ",\"tools\":[{\"googleSearch\":{}}]}", "tools[0].googleSearch"},
        {"{\"contents\":[{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":"
         "\"get_weather\",\"response\":{}}}]}]}",
         "no functionCall named \"get_weather\""},
        {"{" G_USER ",\"generationConfig\":{\"temperature\":3}}", "generationConfig.temperature"},
    };
    struct th_resp r;

    (void)state;
    start();
    script("[{\"text\":\"ok\",\"times\":0}]");
    for (size_t i = 0; i < REIN_ARRAY_SIZE(cases); i++) {
        gem(GEN, cases[i].body, NULL, &r);
        if (r.status != 400)
            fail_msg("case %zu: want 400, got %ld: %s", i, r.status, r.body);
        assert_gm_error(&r, 400, "INVALID_ARGUMENT", cases[i].want);
        th_resp_free(&r);
    }
    gem("countTokens", "{" G_USER "}", NULL, &r);
    assert_gm_error(&r, 404, "NOT_FOUND", "countTokens");
    th_resp_free(&r);
    gem("streamGenerateContent", "{" G_USER "}", NULL, &r);
    assert_gm_error(&r, 400, "INVALID_ARGUMENT", "alt=sse");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0);
    /* snake_case names, as Google's endpoint takes them, and a functionDeclaration's JSON
     * Schema as parametersJsonSchema */
    gem(GEN,
        "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}],"
        "\"system_instruction\":{\"parts\":[{\"text\":\"Be brief.\"}]},\"tools\":[{"
        "\"function_declarations\":[{\"name\":\"f\",\"parametersJsonSchema\":{\"type\":"
        "\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}},{\"name\":\"g\","
        "\"parameters\":{\"type\":\"OBJECT\",\"properties\":{\"n\":{\"type\":\"INTEGER\","
        "\"nullable\":true},\"t\":{\"type\":\"TYPE_UNSPECIFIED\"}},\"propertyOrdering\":"
        "[\"n\",\"t\"]}}]}],\"generation_config\":"
        "{\"max_output_tokens\":64}}",
        NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    assert_int_equal(
        json_integer_value(json_object_get(ms_last_request(F->ms)->json, "max_tokens")), 64);
    {
        const json_t *g = test_json_at(ms_last_request(F->ms)->json, "tools.1.function.parameters");
        json_t *want = json_pack("[ss]", "integer", "null");
        if (!json_equal(test_json_at(g, "properties.n.type"), want) ||
            test_json_at(g, "properties.t.type") || json_object_get(g, "propertyOrdering"))
            fail_msg("Gemini's Schema as JSON Schema: %s", ms_last_request(F->ms)->body);
        json_decref(want);
    }
}

/* GET /v1beta/models and one model in Gemini's shape; /v1/models in it for a Google client;
 * the server's key in x-goog-api-key or ?key=. */
static void test_gemini_client_models_and_keys(void **state)
{
    struct th_resp r;
    char url[256];

    (void)state;
    start();
    th_get(u("/v1beta/models"), &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(th_jstr(test_json_at(r.json, "models.0"), "name"), "models/gw-model");
    th_resp_free(&r);
    th_get(u("/v1beta/models/gemini-2.5-flash"), &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(th_jstr(r.json, "name"), "models/gemini-2.5-flash");
    th_resp_free(&r);
    th_http("GET", u("/v1/models"), NULL, (const char *[]){"x-goog-api-client: t", NULL}, &r);
    assert_string_equal(th_jstr(test_json_at(r.json, "models.0"), "name"), "models/gw-model");
    th_resp_free(&r);
    teardown(NULL);

    next_server_keys = "rein-key-1";
    start();
    script("[{\"text\":\"ok\",\"times\":0}]");
    gem(GEN, "{" G_USER "}", NULL, &r);
    assert_int_equal(r.status, 401);
    th_resp_free(&r);
    gem(GEN, "{" G_USER "}", (const char *[]){"x-goog-api-key: rein-key-1", NULL}, &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    snprintf(url, sizeof(url), "%s/v1beta/models/g:generateContent?key=rein-key-1", F->base);
    th_http("POST", url, "{" G_USER "}", NULL, &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    gem(GEN, "{" G_USER "}",
        (const char *[]){"x-goog-api-key: rein-key-1", "x-goog-api-key: other", NULL}, &r);
    assert_int_equal(r.status, 400);
    th_resp_free(&r);
}

/* One request through the gateway whose upstream speaks wire, asking the model the client
 * names: the body the upstream got (borrowed until the next request), and the dropped header
 * in *dropped (copied into a static buffer; "" when none). */
static const json_t *reasoning_sent(const char *path, const char *body, const char **dropped)
{
    static char names[256];
    const char *const h[] = {"Content-Type: application/json", "anthropic-version: 2023-06-01",
                             NULL};
    struct th_resp r;

    th_http("POST", u(path), body, h, &r);
    if (r.status != 200)
        fail_msg("%s: %ld %s", path, r.status, r.body);
    snprintf(names, sizeof(names), "%s",
             th_header(&r, "x-rein-dropped") ? th_header(&r, "x-rein-dropped") : "");
    *dropped = names;
    th_resp_free(&r);
    return ms_last_request(F->ms)->json;
}

static void reasoning_start(const char *wire)
{
    teardown(NULL);
    next_model_from_client = true;
    start_with(wire, NULL, 0);
}

#define A_THINK(model, budget)                                                                     \
    "{\"model\":\"" model "\",\"max_tokens\":40000," USER                                          \
    ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":" #budget "}}"

/*
 * A reasoning ask crosses wires (decision 0095): OpenAI's effort words and Anthropic's and
 * Gemini's thinking budgets reach an upstream of another wire in its own words, for a model
 * that takes them; for one that does not the member is dropped and named, as before.
 */
static void test_reasoning_crosses_wires(void **state)
{
    const json_t *b;
    const char *dropped;

    (void)state;
    reasoning_start("anthropic");
    script("[{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"}]");
    b = reasoning_sent("/v1/chat/completions",
                       "{\"model\":\"claude-sonnet-4-5\"," USER ",\"reasoning_effort\":\"high\"}",
                       &dropped);
    assert_string_equal(th_jstr(json_object_get(b, "thinking"), "type"), "enabled");
    assert_int_equal(json_integer_value(test_json_at(b, "thinking.budget_tokens")), 24576);
    /* thinking counts in max_tokens: no less than an answer alone is given (decision 0106) */
    assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 32000);
    assert_string_equal(dropped, "");
    b = reasoning_sent("/v1/responses",
                       "{\"model\":\"claude-opus-4-1\",\"input\":\"hi\",\"reasoning\":{\"effort\":"
                       "\"low\",\"summary\":\"auto\"}}",
                       &dropped);
    assert_int_equal(json_integer_value(test_json_at(b, "thinking.budget_tokens")), 1024);
    assert_string_equal(dropped, "");
    /* a model without extended thinking answers without the ask */
    b = reasoning_sent(
        "/v1/chat/completions",
        "{\"model\":\"claude-3-5-haiku-latest\"," USER ",\"reasoning_effort\":\"high\"}", &dropped);
    assert_null(json_object_get(b, "thinking"));
    assert_string_equal(dropped, "[\"reasoning_effort\"]");

    reasoning_start("openai");
    script("[{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"}]");
    b = reasoning_sent("/v1/messages", A_THINK("o3", 10000), &dropped);
    assert_string_equal(th_jstr(b, "reasoning_effort"), "high");
    assert_null(json_object_get(b, "thinking"));
    assert_string_equal(dropped, "");
    b = reasoning_sent("/v1beta/models/gpt-5-mini:generateContent",
                       "{" G_USER ",\"generationConfig\":{\"thinkingConfig\":{\"thinkingBudget\":"
                       "2048,\"includeThoughts\":true}}}",
                       &dropped);
    assert_string_equal(th_jstr(b, "reasoning_effort"), "medium");
    assert_null(json_object_get(b, "generationConfig"));
    assert_string_equal(dropped, "");
    b = reasoning_sent("/v1beta/models/gpt-5-mini:generateContent",
                       "{" G_USER ",\"generation_config\":{\"thinking_config\":{\"thinking_level\":"
                       "\"LOW\"}}}",
                       &dropped);
    assert_string_equal(th_jstr(b, "reasoning_effort"), "low");
    /* -1 lets the model choose: nothing to ask, and the member is named */
    b = reasoning_sent("/v1beta/models/gpt-5-mini:generateContent",
                       "{" G_USER ",\"generationConfig\":{\"thinkingConfig\":{\"thinkingBudget\":"
                       "-1}}}",
                       &dropped);
    assert_null(json_object_get(b, "reasoning_effort"));
    assert_string_equal(dropped, "[\"generationConfig.thinkingConfig\"]");

    reasoning_start("gemini");
    script("[{\"text\":\"ok\"},{\"text\":\"ok\"}]");
    b = reasoning_sent("/v1/messages", A_THINK("gemini-2.5-flash", 5000), &dropped);
    assert_int_equal(
        json_integer_value(test_json_at(b, "generationConfig.thinkingConfig.thinkingBudget")),
        5000);
    assert_true(json_is_true(test_json_at(b, "generationConfig.thinkingConfig.includeThoughts")));
    assert_string_equal(dropped, "");
    b = reasoning_sent("/v1/chat/completions",
                       "{\"model\":\"gemini-2.0-flash\"," USER ",\"reasoning_effort\":\"low\"}",
                       &dropped);
    assert_null(test_json_at(b, "generationConfig.thinkingConfig"));
    assert_string_equal(dropped, "[\"reasoning_effort\"]");

    reasoning_start("openai-responses");
    script("[{\"text\":\"ok\"}]");
    b = reasoning_sent("/v1/messages", A_THINK("gpt-5", 30000), &dropped);
    assert_string_equal(th_jstr(json_object_get(b, "reasoning"), "effort"), "high");
    assert_string_equal(dropped, "");
}

#define A_ADAPTIVE(model, config)                                                                  \
    "{\"model\":\"" model "\",\"max_tokens\":40000," USER                                          \
    ",\"thinking\":{\"type\":\"adaptive\"}" config "}"

/*
 * Claude 4.6 on thinks adaptively at an effort (decision 0099): an effort word reaches Claude
 * 4.7 as adaptive thinking at that effort (the budget the last decision sent is a 400 there, as
 * the model server's Claude answers), and Claude Code's adaptive thinking and output_config
 * effort reach other wires as an effort; an output_config of an effort alone is dropped and
 * named for a model without reasoning, where it was refused whole, and a word Claude does not
 * have is a 400 naming it.
 */
static void test_claude_adaptive_thinking_crosses_wires(void **state)
{
    const json_t *b;
    const char *dropped;
    struct th_resp r;
    const char *const h[] = {"Content-Type: application/json", "anthropic-version: 2023-06-01",
                             NULL};

    (void)state;
    reasoning_start("anthropic");
    script("[{\"text\":\"ok\"},{\"text\":\"ok\"}]");
    b = reasoning_sent("/v1/chat/completions",
                       "{\"model\":\"claude-opus-4-7\"," USER ",\"reasoning_effort\":\"high\"}",
                       &dropped);
    assert_string_equal(th_jstr(json_object_get(b, "thinking"), "type"), "adaptive");
    assert_string_equal(th_jstr(json_object_get(b, "output_config"), "effort"), "high");
    assert_string_equal(dropped, "");
    b = reasoning_sent("/v1/responses",
                       "{\"model\":\"claude-sonnet-4-6\",\"input\":\"hi\",\"reasoning\":{"
                       "\"effort\":\"xhigh\"}}",
                       &dropped);
    assert_string_equal(th_jstr(json_object_get(b, "output_config"), "effort"),
                        "high"); /* 4.6 has no xhigh */

    reasoning_start("openai");
    script("[{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"}]");
    b = reasoning_sent("/v1/messages",
                       A_ADAPTIVE("gpt-5", ",\"output_config\":{\"effort\":\"low\"}"), &dropped);
    assert_string_equal(th_jstr(b, "reasoning_effort"), "low");
    assert_null(json_object_get(b, "output_config"));
    assert_string_equal(dropped, "");
    b = reasoning_sent("/v1/messages", A_ADAPTIVE("gpt-5", ""), &dropped);
    assert_string_equal(th_jstr(b, "reasoning_effort"), "high"); /* Claude's default */
    assert_string_equal(dropped, "");
    b = reasoning_sent("/v1/messages",
                       "{\"model\":\"o3\",\"max_tokens\":100," USER
                       ",\"output_config\":{\"effort\":\"max\"}}",
                       &dropped);
    assert_string_equal(th_jstr(b, "reasoning_effort"), "high"); /* o3 has no xhigh */
    assert_string_equal(dropped, "");
    b = reasoning_sent("/v1/messages",
                       "{\"model\":\"gpt-4o\",\"max_tokens\":100," USER
                       ",\"output_config\":{\"effort\":\"medium\"}}",
                       &dropped);
    assert_null(json_object_get(b, "reasoning_effort"));
    assert_string_equal(dropped, "[\"output_config\"]");

    th_http("POST", u("/v1/messages"),
            "{\"model\":\"gpt-5\",\"max_tokens\":100," USER
            ",\"output_config\":{\"effort\":\"extreme\"}}",
            h, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "output_config.effort"));
    th_resp_free(&r);
}

/*
 * Sampling settings Claude refuses (decision 0101): from 4.7 on temperature and top_p are a
 * 400, from Opus 4.1 to 4.6 the two together; a client of another wire gets the request sent
 * without what the model refuses, named in x-rein-dropped (the temperature kept of the two),
 * where the model server's Claude answered 400 as Anthropic does. A client of Claude's own wire
 * gets its body as written, and Anthropic's answer.
 */
static void test_claude_sampling_settings(void **state)
{
    const json_t *b;
    const char *dropped;
    struct th_resp r;
    const char *const h[] = {"Content-Type: application/json", "anthropic-version: 2023-06-01",
                             NULL};

    (void)state;
    reasoning_start("anthropic");
    script("[{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"},"
           "{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"}]");
    b = reasoning_sent("/v1/chat/completions",
                       "{\"model\":\"claude-opus-4-7\"," USER ",\"temperature\":0.2,\"top_p\":0.9}",
                       &dropped);
    assert_null(json_object_get(b, "temperature"));
    assert_null(json_object_get(b, "top_p"));
    assert_string_equal(dropped, "[\"temperature\",\"top_p\"]");
    b = reasoning_sent(
        "/v1/chat/completions",
        "{\"model\":\"claude-sonnet-4-5\"," USER ",\"temperature\":0.2,\"top_p\":0.9}", &dropped);
    assert_true(json_real_value(json_object_get(b, "temperature")) == 0.2);
    assert_null(json_object_get(b, "top_p"));
    assert_string_equal(dropped, "[\"top_p\"]");
    b = reasoning_sent("/v1/chat/completions",
                       "{\"model\":\"claude-sonnet-4-5\"," USER ",\"top_p\":0.9}", &dropped);
    assert_true(json_real_value(json_object_get(b, "top_p")) == 0.9);
    assert_string_equal(dropped, "");
    b = reasoning_sent("/v1/chat/completions",
                       "{\"model\":\"claude-sonnet-4-20250514\"," USER
                       ",\"temperature\":0.2,\"top_p\":0.9}",
                       &dropped);
    assert_non_null(json_object_get(b, "top_p"));
    assert_string_equal(dropped, "");
    /* Gemini CLI's defaults, temperature 0 and topP 1, to Claude Sonnet 4.6 */
    b = reasoning_sent("/v1beta/models/claude-sonnet-4-6:generateContent",
                       "{" G_USER ",\"generationConfig\":{\"temperature\":0,\"topP\":1}}",
                       &dropped);
    assert_true(json_is_number(json_object_get(b, "temperature")));
    assert_null(json_object_get(b, "top_p"));
    assert_string_equal(dropped, "[\"generationConfig.topP\"]");
    /* thinking takes neither: an OpenAI client's effort with a temperature */
    b = reasoning_sent("/v1/chat/completions",
                       "{\"model\":\"claude-sonnet-4-5\"," USER
                       ",\"reasoning_effort\":\"low\",\"temperature\":0.2}",
                       &dropped);
    assert_string_equal(th_jstr(json_object_get(b, "thinking"), "type"), "enabled");
    assert_null(json_object_get(b, "temperature"));
    assert_string_equal(dropped, "[\"temperature\"]");
    /* Claude's own wire: as written, and Anthropic's 400 */
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"claude-opus-4-7\",\"max_tokens\":100," USER ",\"temperature\":0.5}", h,
            &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "deprecated for this model"));
    th_resp_free(&r);

    /* OpenAI's reasoning models take only the default; GPT-5.1 on while they do not reason */
    reasoning_start("openai");
    script("[{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"},"
           "{\"text\":\"ok\"}]");
    /* an output limit above the model's is the model's (decision 0103): Claude Code's 32,000 */
    b = reasoning_sent("/v1/messages", "{\"model\":\"gpt-4o\",\"max_tokens\":32000," USER "}",
                       &dropped);
    assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 16384);
    assert_string_equal(dropped, "");
    b = reasoning_sent("/v1/messages", "{\"model\":\"gpt-4o\",\"max_tokens\":1000," USER "}",
                       &dropped);
    assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 1000);
    b = reasoning_sent("/v1beta/models/gpt-5-mini:generateContent",
                       "{" G_USER ",\"generationConfig\":{\"temperature\":0,\"topP\":1}}",
                       &dropped);
    assert_null(json_object_get(b, "temperature"));
    assert_null(json_object_get(b, "top_p"));
    assert_string_equal(dropped, "[\"generationConfig.temperature\",\"generationConfig.topP\"]");
    b = reasoning_sent("/v1beta/models/gpt-5.1:generateContent",
                       "{" G_USER ",\"generationConfig\":{\"temperature\":0}}", &dropped);
    assert_non_null(json_object_get(b, "temperature"));
    assert_string_equal(dropped, "");
    b = reasoning_sent("/v1/messages",
                       "{\"model\":\"o3\",\"max_tokens\":100," USER ",\"temperature\":0.5}",
                       &dropped);
    assert_null(json_object_get(b, "temperature"));
    assert_string_equal(dropped, "[\"temperature\"]");
}

static json_int_t sent_max_tokens(const char *path, const char *body)
{
    const char *dropped;

    return json_integer_value(json_object_get(reasoning_sent(path, body, &dropped), "max_tokens"));
}

/*
 * Claude's output limits (decision 0106): a client of another wire that sets no limit gets its
 * model's own up to 32,000 (4,096 cut answers short), and a larger limit is lowered to the
 * model's, which Anthropic refuses above it ("max_tokens: 100000 > 64000, ...").
 */
static void test_claude_output_limits(void **state)
{
    (void)state;
    reasoning_start("anthropic");
    script("[{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"},"
           "{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"}]");
    assert_int_equal(sent_max_tokens("/v1/chat/completions",
                                     "{\"model\":\"claude-sonnet-4-5-20250929\"," USER "}"),
                     32000);
    assert_int_equal(sent_max_tokens("/v1/chat/completions",
                                     "{\"model\":\"claude-3-5-haiku-20241022\"," USER "}"),
                     8192);
    assert_int_equal(
        sent_max_tokens("/v1/chat/completions", "{\"model\":\"claude-3-haiku-20240307\"," USER "}"),
        4096);
    assert_int_equal(sent_max_tokens("/v1/chat/completions",
                                     "{\"model\":\"claude-sonnet-4-5\"," USER
                                     ",\"max_completion_tokens\":100000}"),
                     64000);
    assert_int_equal(sent_max_tokens("/v1/chat/completions", "{\"model\":\"claude-opus-4-1\"," USER
                                                             ",\"max_tokens\":50000}"),
                     32000);
    assert_int_equal(sent_max_tokens("/v1beta/models/claude-opus-4-6:generateContent",
                                     "{" G_USER
                                     ",\"generationConfig\":{\"maxOutputTokens\":200000}}"),
                     128000);
    /* thinking counts in the limit: Opus 4.1's 32,000 holds an xhigh budget and an answer */
    {
        const char *dropped;
        const json_t *b = reasoning_sent(
            "/v1/chat/completions",
            "{\"model\":\"claude-opus-4-1\"," USER ",\"reasoning_effort\":\"xhigh\"}", &dropped);

        assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 32000);
        assert_int_equal(json_integer_value(test_json_at(b, "thinking.budget_tokens")),
                         32000 - 4096);
    }
    /* within the model's limit, the client's own */
    assert_int_equal(sent_max_tokens("/v1/chat/completions",
                                     "{\"model\":\"claude-sonnet-4-5\"," USER
                                     ",\"max_tokens\":50000}"),
                     50000);
}

/*
 * A chat client's reasoning_effort to a Responses upstream (decision 0101): read as the model's
 * reasoning, so its nearest word goes up (GPT-5.1 has no minimal) and the sampling settings it
 * refuses while it reasons are left out and named; the model server refuses both as OpenAI does.
 */
static void test_chat_effort_to_a_responses_upstream(void **state)
{
    const json_t *b;
    const char *dropped;

    (void)state;
    reasoning_start("openai-responses");
    script("[{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"},{\"text\":\"ok\"}]");
    b = reasoning_sent("/v1/chat/completions",
                       "{\"model\":\"gpt-5.1\"," USER
                       ",\"reasoning_effort\":\"minimal\",\"temperature\":0.2}",
                       &dropped);
    assert_string_equal(th_jstr(json_object_get(b, "reasoning"), "effort"), "low");
    assert_null(json_object_get(b, "temperature"));
    assert_string_equal(dropped, "[\"temperature\"]");
    /* GPT-5.1 takes sampling while it does not reason */
    b = reasoning_sent("/v1/chat/completions",
                       "{\"model\":\"gpt-5.1\"," USER
                       ",\"reasoning_effort\":\"none\",\"temperature\":0.2}",
                       &dropped);
    assert_string_equal(th_jstr(json_object_get(b, "reasoning"), "effort"), "none");
    assert_non_null(json_object_get(b, "temperature"));
    assert_string_equal(dropped, "");
    b = reasoning_sent("/v1/chat/completions",
                       "{\"model\":\"o3\"," USER ",\"reasoning_effort\":\"xhigh\",\"top_p\":0.5}",
                       &dropped);
    assert_string_equal(th_jstr(json_object_get(b, "reasoning"), "effort"), "high");
    assert_null(json_object_get(b, "top_p"));
    assert_string_equal(dropped, "[\"top_p\"]");
    /* a model without reasoning: as written, as before */
    b = reasoning_sent("/v1/chat/completions",
                       "{\"model\":\"gpt-4o\"," USER ",\"temperature\":0.2}", &dropped);
    assert_non_null(json_object_get(b, "temperature"));
    assert_null(json_object_get(b, "reasoning"));
}

/* The upstream's own model (not the client's) decides: gw-model takes no reasoning setting. */
static void test_reasoning_follows_the_upstreams_model(void **state)
{
    const json_t *b;
    const char *dropped;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"ok\"}]");
    b = reasoning_sent("/v1/chat/completions",
                       "{\"model\":\"claude-sonnet-4-5\"," USER ",\"reasoning_effort\":\"high\"}",
                       &dropped);
    assert_null(json_object_get(b, "thinking"));
    assert_string_equal(dropped, "[\"reasoning_effort\"]");
}

/* ---- reasoning kept for a client of another wire (decision 0102) ------------------------- */

#define CLAUDE_CALL_REPLY(id, reasoning, sig)                                                      \
    "{\"reasoning\":\"" reasoning "\",\"signature\":\"" sig "\",\"tool_calls\":[{\"id\":\"" id     \
    "\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]}"

/* A chat client's second step: its own call back with the tool's result, as the openai SDK
 * sends it (no reasoning: the chat wire has no place for Claude's). */
#define CHAT_STEP2(model, id, extra)                                                               \
    "{\"model\":\"" model "\"," TOOLS ",\"messages\":[{\"role\":\"user\",\"content\":\"weather "   \
    "in Paris?\"},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"" id          \
    "\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":"               \
    "\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"" id               \
    "\",\"content\":\"18C\"}],\"reasoning_effort\":\"high\"" extra "}"

/* POST path with body as the client of key (NULL: none); status 200 or the test fails;
 * x-rein-dropped into dropped (may be NULL). The body the upstream got last, borrowed. */
static const json_t *step_as(const char *key, const char *path, const char *body, char *dropped,
                             size_t cap, struct th_resp *r)
{
    char auth[128];
    const char *h[] = {"Content-Type: application/json", auth, NULL};

    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key ? key : "");
    if (!key)
        h[1] = NULL;
    th_http("POST", u(path), body, h, r);
    if (r->status != 200)
        fail_msg("%s: %ld %s", path, r->status, r->body);
    if (dropped)
        snprintf(dropped, cap, "%s",
                 th_header(r, "x-rein-dropped") ? th_header(r, "x-rein-dropped") : "");
    return ms_last_request(F->ms)->json;
}

/* Asserts that message i of Anthropic body b starts with the thinking block (text, sig) and
 * then holds the tool_use block of id. */
static void assert_thinking_first(const json_t *b, size_t i, const char *text, const char *sig,
                                  const char *id)
{
    char at[64];

    snprintf(at, sizeof(at), "messages.%zu.content.0", i);
    assert_string_equal(th_jstr(test_json_at(b, at), "type"), "thinking");
    assert_string_equal(th_jstr(test_json_at(b, at), "thinking"), text);
    assert_string_equal(th_jstr(test_json_at(b, at), "signature"), sig);
    snprintf(at, sizeof(at), "messages.%zu.content.1", i);
    assert_string_equal(th_jstr(test_json_at(b, at), "type"), "tool_use");
    assert_string_equal(th_jstr(test_json_at(b, at), "id"), id);
}

/* One chat client's two-step tool loop with reasoning_effort to Claude model, streamed or not:
 * the second step reaches Claude with the first reply's thinking block before its tool_use
 * (where the model server's Claude, as Anthropic's, refused the step without it). */
static void chat_loop_to_claude(const char *model, const char *id, bool stream)
{
    char body[2048], dropped[128];
    const char *st = stream ? ",\"stream\":true" : "";
    struct th_resp r;
    const json_t *b;

    snprintf(body, sizeof(body),
             "[" CLAUDE_CALL_REPLY("%s", "I should look it up.", "sig-%s") ",{\"text\":\"18C "
                                                                           "and sunny\"}]",
             id, id);
    script(body);
    snprintf(body, sizeof(body),
             "{\"model\":\"%s\"," TOOLS "," USER ",\"reasoning_effort\":\"high\"%s}", model, st);
    (void)step_as(NULL, "/v1/chat/completions", body, NULL, 0, &r);
    assert_non_null(strstr(r.body, id));
    th_resp_free(&r);
    snprintf(body, sizeof(body), CHAT_STEP2("%s", "%s", "%s"), model, id, id, st);
    b = step_as(NULL, "/v1/chat/completions", body, dropped, sizeof(dropped), &r);
    assert_non_null(strstr(r.body, "sunny"));
    th_resp_free(&r);
    assert_string_equal(dropped, "");
    assert_non_null(json_object_get(b, "thinking"));
    snprintf(body, sizeof(body), "sig-%s", id);
    assert_thinking_first(b, 1, "I should look it up.", body, id);
}

/*
 * An OpenAI chat client's tool loop with reasoning_effort through rein to Claude with thinking:
 * Claude's reply carried a signed thinking block the chat wire cannot hand the client, so the
 * gateway kept it and puts it back before the tool_use on the next step, for the budget form
 * (Sonnet 4.5) and the adaptive one (Opus 4.7), streamed and not.
 */
static void test_reasoning_kept_for_a_chat_client_of_claude(void **state)
{
    (void)state;
    reasoning_start("anthropic");
    chat_loop_to_claude("claude-sonnet-4-5", "toolu_a1", false);
    chat_loop_to_claude("claude-sonnet-4-5", "toolu_a2", true);
    chat_loop_to_claude("claude-opus-4-7", "toolu_a3", false);
    chat_loop_to_claude("claude-opus-4-7", "toolu_a4", true);
}

static const char *jstr_at(const json_t *v, const char *path);

/* Bedrock's Claude alike: the kept thinking goes back as the assistant message's first
 * reasoningContent block; nothing kept, the step is asked without thinking (the model server
 * refuses otherwise, as Bedrock passes Anthropic's refusal on). */
static void test_reasoning_kept_for_a_chat_client_of_bedrock_claude(void **state)
{
    struct th_resp r;
    const json_t *b;
    char dropped[128];

    (void)state;
    teardown(NULL);
    next_model_from_client = true;
    start_with("bedrock", "bedrock-api-key", 0);
    script("[" CLAUDE_CALL_REPLY("toolu_b1", "Paris, then.", "sig-b1") ",{\"text\":\"18C\"},"
                                                                       "{\"text\":\"18C\"}]");
    (void)step_as(NULL, "/v1/chat/completions",
                  "{\"model\":\"us.anthropic.claude-sonnet-4-5-v1:0\"," TOOLS "," USER
                  ",\"reasoning_effort\":\"high\"}",
                  NULL, 0, &r);
    assert_non_null(strstr(r.body, "toolu_b1"));
    th_resp_free(&r);
    b = step_as(NULL, "/v1/chat/completions",
                CHAT_STEP2("us.anthropic.claude-sonnet-4-5-v1:0", "toolu_b1", ""), dropped,
                sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(dropped, "");
    assert_string_equal(jstr_at(b, "additionalModelRequestFields.thinking.type"), "enabled");
    assert_string_equal(jstr_at(b, "messages.1.content.0.reasoningContent.reasoningText.signature"),
                        "sig-b1");
    b = step_as(NULL, "/v1/chat/completions",
                CHAT_STEP2("us.anthropic.claude-sonnet-4-5-v1:0", "toolu_b9", ""), dropped,
                sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(dropped, "[\"reasoning_effort\"]");
    assert_string_equal(jstr_at(b, "additionalModelRequestFields.thinking.type"), "disabled");
}

/* A Responses client's tool loop (store false: the whole input sent again) with
 * reasoning.effort to Claude: the same, through the Responses conversion. */
static void test_reasoning_kept_for_a_responses_client_of_claude(void **state)
{
    struct th_resp r;
    const json_t *b;
    char dropped[128];

    (void)state;
    reasoning_start("anthropic");
    script("[" CLAUDE_CALL_REPLY("toolu_r1", "Paris, then.", "sig-r1") ",{\"text\":\"18C\"}]");
    (void)step_as(NULL, "/v1/responses",
                  "{\"model\":\"claude-sonnet-4-5\",\"store\":false,\"input\":\"weather in "
                  "Paris?\",\"reasoning\":{\"effort\":\"medium\"},\"tools\":[{\"type\":"
                  "\"function\",\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\","
                  "\"properties\":{\"city\":{\"type\":\"string\"}}}}]}",
                  NULL, 0, &r);
    assert_non_null(strstr(r.body, "toolu_r1"));
    th_resp_free(&r);
    b = step_as(NULL, "/v1/responses",
                "{\"model\":\"claude-sonnet-4-5\",\"store\":false,\"reasoning\":{\"effort\":"
                "\"medium\"},\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\","
                "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
                "\"string\"}}}}],\"input\":[{\"role\":\"user\",\"content\":\"weather in Paris?\"},"
                "{\"type\":\"function_call\",\"call_id\":\"toolu_r1\",\"name\":\"get_weather\","
                "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"},{\"type\":"
                "\"function_call_output\",\"call_id\":\"toolu_r1\",\"output\":\"18C\"}]}",
                dropped, sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(dropped, "[\"store\"]"); /* reasoning is not among them */
    assert_string_equal(th_jstr(json_object_get(b, "thinking"), "type"), "enabled");
    assert_thinking_first(b, 1, "Paris, then.", "sig-r1", "toolu_r1");
}

/*
 * Nothing kept for the calls (a history made elsewhere, another rein, forgotten), or kept for
 * another client: Claude is asked without thinking, which takes such a final turn, and
 * reasoning_effort is named as dropped; the budget form sends thinking disabled, Opus 4.7 (which
 * refuses "disabled") no thinking member.
 */
static void test_claude_asked_without_thinking_when_nothing_is_kept(void **state)
{
    struct th_resp r;
    const json_t *b;
    char dropped[128];

    (void)state;
    reasoning_start("anthropic");
    script("[{\"text\":\"ok\"},{\"text\":\"ok\"}]");
    b = step_as(NULL, "/v1/chat/completions", CHAT_STEP2("claude-sonnet-4-5", "toolu_x", ""),
                dropped, sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(dropped, "[\"reasoning_effort\"]");
    assert_string_equal(th_jstr(json_object_get(b, "thinking"), "type"), "disabled");
    assert_string_equal(th_jstr(test_json_at(b, "messages.1.content.0"), "type"), "tool_use");
    b = step_as(NULL, "/v1/chat/completions", CHAT_STEP2("claude-opus-4-7", "toolu_x", ""), dropped,
                sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(dropped, "[\"reasoning_effort\"]");
    assert_null(json_object_get(b, "thinking"));
    assert_null(json_object_get(b, "output_config"));

    /* thinking rein's configuration asks (reasoning_effort) falls back alike, naming nothing
     * of the client's */
    teardown(NULL);
    next_model_from_client = true;
    next_reasoning = "low";
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"ok\"}]");
    b = step_as(NULL, "/v1/chat/completions",
                "{\"model\":\"claude-sonnet-4-5\"," TOOLS ",\"messages\":[{\"role\":\"user\","
                "\"content\":\"weather in Paris?\"},{\"role\":\"assistant\",\"content\":null,"
                "\"tool_calls\":[{\"id\":\"toolu_c\",\"type\":\"function\",\"function\":{"
                "\"name\":\"get_weather\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\","
                "\"tool_call_id\":\"toolu_c\",\"content\":\"18C\"}]}",
                dropped, sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(dropped, "");
    assert_string_equal(th_jstr(json_object_get(b, "thinking"), "type"), "disabled");
    reasoning_start("anthropic");

    /* a first step (no final turn of calls) keeps its thinking */
    script("[{\"text\":\"ok\"}]");
    b = step_as(NULL, "/v1/chat/completions",
                "{\"model\":\"claude-sonnet-4-5\"," USER ",\"reasoning_effort\":\"low\"}", dropped,
                sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(dropped, "");
    assert_string_equal(th_jstr(json_object_get(b, "thinking"), "type"), "enabled");

    /* what client A's answer kept is not client B's */
    script("[" CLAUDE_CALL_REPLY("toolu_k1", "Mine.", "sig-k1") ",{\"text\":\"ok\"},{\"text\":"
                                                                "\"ok\"}]");
    (void)step_as("key-a", "/v1/chat/completions",
                  "{\"model\":\"claude-sonnet-4-5\"," TOOLS "," USER ",\"reasoning_effort\":"
                  "\"high\"}",
                  NULL, 0, &r);
    th_resp_free(&r);
    b = step_as("key-b", "/v1/chat/completions", CHAT_STEP2("claude-sonnet-4-5", "toolu_k1", ""),
                dropped, sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(dropped, "[\"reasoning_effort\"]");
    assert_string_equal(th_jstr(test_json_at(b, "messages.1.content.0"), "type"), "tool_use");
    b = step_as("key-a", "/v1/chat/completions", CHAT_STEP2("claude-sonnet-4-5", "toolu_k1", ""),
                dropped, sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(dropped, "");
    assert_thinking_first(b, 1, "Mine.", "sig-k1", "toolu_k1");
}

/*
 * The kept reasoning is bounded by --gateway-keep-bytes (here 2,000 bytes): reasoning kept
 * past it pushes out the least recently used, whose calls then get the fallback, while the
 * latest is still put back.
 */
static void test_reasoning_kept_within_the_bound(void **state)
{
    struct th_resp r;
    const json_t *b;
    char dropped[128], body[4096], thought[520];

    (void)state;
    teardown(NULL);
    next_model_from_client = true;
    next_keep_bytes = 2000;
    start_with("anthropic", NULL, 0);
    memset(thought, 'x', sizeof(thought) - 1);
    thought[sizeof(thought) - 1] = '\0';
    for (int i = 1; i <= 4; i++) {
        snprintf(body, sizeof(body),
                 "[{\"reasoning\":\"%s\",\"signature\":\"sig-b%d\",\"tool_calls\":[{\"id\":"
                 "\"toolu_b%d\",\"name\":\"get_weather\",\"arguments\":"
                 "\"{\\\"city\\\":\\\"Paris\\\"}\"}]}]",
                 thought, i, i);
        script(body);
        (void)step_as(NULL, "/v1/chat/completions",
                      "{\"model\":\"claude-sonnet-4-5\"," TOOLS "," USER
                      ",\"reasoning_effort\":\"high\"}",
                      NULL, 0, &r);
        th_resp_free(&r);
    }
    script("[{\"text\":\"ok\"},{\"text\":\"ok\"}]");
    b = step_as(NULL, "/v1/chat/completions", CHAT_STEP2("claude-sonnet-4-5", "toolu_b1", ""),
                dropped, sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(dropped, "[\"reasoning_effort\"]");
    b = step_as(NULL, "/v1/chat/completions", CHAT_STEP2("claude-sonnet-4-5", "toolu_b4", ""),
                dropped, sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(dropped, "");
    assert_thinking_first(b, 1, thought, "sig-b4", "toolu_b4");
}

/*
 * An OpenAI chat client's tool loop to a Gemini 3 upstream: the reply's thoughtSignature came
 * on its functionCall part, which the chat wire cannot hand the client; rein kept it and puts
 * it back on the call's part, where the model server's Gemini 3, as Google's, refused the step
 * without one. A history whose calls nothing kept gets Google's stand-in signature instead,
 * and a Gemini 2.5 model, which checks none, gets none.
 */
static void test_signatures_kept_for_a_chat_client_of_gemini_3(void **state)
{
    struct th_resp r;
    const json_t *b;
    char dropped[128];

    (void)state;
    reasoning_start("gemini");
    script("[{\"signature\":\"gsig-1\",\"tool_calls\":[{\"id\":\"fc_1\",\"name\":\"get_weather\","
           "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]},{\"text\":\"18C\"},{\"text\":\"ok\"},"
           "{\"text\":\"ok\"}]");
    (void)step_as(NULL, "/v1/chat/completions",
                  "{\"model\":\"gemini-3-pro-preview\"," TOOLS "," USER "}", NULL, 0, &r);
    assert_non_null(strstr(r.body, "fc_1"));
    th_resp_free(&r);
    b = step_as(NULL, "/v1/chat/completions", CHAT_STEP2("gemini-3-pro-preview", "fc_1", ""),
                dropped, sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(th_jstr(test_json_at(b, "contents.1.parts.0"), "thoughtSignature"),
                        "gsig-1");
    assert_string_equal(th_jstr(test_json_at(b, "contents.1.parts.0.functionCall"), "id"), "fc_1");

    b = step_as(NULL, "/v1/chat/completions", CHAT_STEP2("gemini-3-flash", "fc_elsewhere", ""),
                dropped, sizeof(dropped), &r);
    th_resp_free(&r);
    assert_string_equal(th_jstr(test_json_at(b, "contents.1.parts.0"), "thoughtSignature"),
                        "skip_thought_signature_validator");
    b = step_as(NULL, "/v1/chat/completions", CHAT_STEP2("gemini-2.5-flash", "fc_elsewhere", ""),
                dropped, sizeof(dropped), &r);
    th_resp_free(&r);
    assert_null(test_json_at(b, "contents.1.parts.0.thoughtSignature"));
}

/* ---- token counts across wires (decision 0094) ------------------------------------------- */

/* The string at path ("a.0.b") of v, or "" so that a missing one fails the compare. */
static const char *jstr_at(const json_t *v, const char *path)
{
    const char *s = json_string_value(test_json_at(v, path));

    return s ? s : "";
}

/* Whether v, written out, holds want. */
static bool holds_text(const json_t *v, const char *want)
{
    char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    bool yes = text && strstr(text, want);

    free(text);
    return yes;
}

/* A count's answer scripted at path: status 200 and body (a JSON text). */
static void script_count(const char *path, const char *body)
{
    json_t *s = json_pack("{sbs[{s{ss}siss}]}", "validate", 0, "replies", "match", "path", path,
                          "status", 200, "body", body);
    char *text = json_dumps(s, JSON_COMPACT);

    script(text);
    free(text);
    json_decref(s);
}

/* The count path of each upstream wire, as the test's providers reach it. */
static const char *count_path(const char *wire)
{
    return !strcmp(wire, "anthropic") ? "/v1/messages/count_tokens"
           : !strcmp(wire, "gemini")  ? "/v1beta/models/gw-model:countTokens"
           : !strcmp(wire, "bedrock") ? "/model/gw-model/count-tokens"
                                      : "/v1/responses/input_tokens";
}

/* The answer of each upstream wire's count. */
static const char *count_reply(const char *wire)
{
    return !strcmp(wire, "anthropic") ? "{\"input_tokens\":31}"
           : !strcmp(wire, "gemini")
               ? "{\"totalTokens\":31,\"promptTokensDetails\":[{\"modality\":\"TEXT\","
                 "\"tokenCount\":31}]}"
               : "{\"object\":\"response.input_tokens\",\"input_tokens\":31}";
}

/* Only the members wire's count takes, none of a send's own (max_tokens, stream, store). */
static void assert_count_members(const char *wire, const json_t *sent)
{
    static const char *const anthropic[] = {"model",       "messages", "system",      "tools",
                                            "tool_choice", "thinking", "mcp_servers", NULL};
    static const char *const responses[] = {"model",        "input",       "instructions",
                                            "tools",        "tool_choice", "parallel_tool_calls",
                                            "reasoning",    "text",        "previous_response_id",
                                            "conversation", "truncation",  NULL};
    static const char *const gemini[] = {"generateContentRequest", NULL};
    static const char *const bedrock[] = {"input", NULL};
    const char *const *ok = !strcmp(wire, "anthropic") ? anthropic
                            : !strcmp(wire, "gemini")  ? gemini
                            : !strcmp(wire, "bedrock") ? bedrock
                                                       : responses;
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)sent, key, v)
    {
        bool found = false;
        for (size_t i = 0; ok[i]; i++)
            found = found || !strcmp(ok[i], key);
        if (!found)
            fail_msg("the %s count got \"%s\", which it refuses", wire, key);
    }
}

/* The upstream's count body carries the system text and the get_weather tool, in its wire. */
static void assert_count_body(const char *wire, const json_t *sent)
{
    const json_t *g = json_object_get(sent, "generateContentRequest");

    assert_count_members(wire, sent);
    if (!strcmp(wire, "anthropic")) {
        assert_string_equal(th_jstr(sent, "model"), "gw-model");
        assert_true(holds_text(json_object_get(sent, "system"), "Be brief."));
        assert_string_equal(jstr_at(sent, "tools.0.name"), "get_weather");
        assert_true(json_array_size(json_object_get(sent, "messages")) >= 1);
    } else if (!strcmp(wire, "bedrock")) {
        /* ConverseTokensRequest's members only: no inferenceConfig */
        const json_t *c = test_json_at(sent, "input.converse");
        const char *key;
        json_t *v;
        assert_int_equal(json_object_size(json_object_get(sent, "input")), 1);
        json_object_foreach((json_t *)c, key, v)
        {
            if (strcmp(key, "messages") && strcmp(key, "system") && strcmp(key, "toolConfig") &&
                strcmp(key, "additionalModelRequestFields"))
                fail_msg("the bedrock count got input.converse.%s", key);
        }
        assert_string_equal(jstr_at(c, "system.0.text"), "Be brief.");
        assert_string_equal(jstr_at(c, "toolConfig.tools.0.toolSpec.name"), "get_weather");
        assert_string_equal(jstr_at(c, "messages.0.role"), "user");
    } else if (!strcmp(wire, "gemini")) {
        assert_string_equal(th_jstr(g, "model"), "models/gw-model");
        assert_string_equal(jstr_at(g, "systemInstruction.parts.0.text"), "Be brief.");
        assert_string_equal(jstr_at(g, "tools.0.functionDeclarations.0.name"), "get_weather");
        assert_true(json_array_size(json_object_get(g, "contents")) >= 1);
    } else {
        assert_string_equal(th_jstr(sent, "model"), "gw-model");
        assert_true(holds_text(sent, "Be brief."));
        assert_string_equal(jstr_at(sent, "tools.0.name"), "get_weather");
        assert_non_null(json_object_get(sent, "input"));
    }
}

#define RS_COUNT_BODY                                                                              \
    "{\"model\":\"m\",\"instructions\":\"Be brief.\",\"input\":[{\"role\":\"user\",\"content\":"   \
    "\"weather in Paris?\"}]," RS_TOOLS "}"
#define G_SYSTEM "\"systemInstruction\":{\"parts\":[{\"text\":\"Be brief.\"}]}"
#define G_COUNT_BODY                                                                               \
    "{\"generateContentRequest\":{\"model\":\"models/gemini-test\"," G_USER "," G_SYSTEM           \
    "," G_TOOLS "}}"
#define AN_COUNT_BODY                                                                              \
    "{\"model\":\"claude-any\",\"system\":\"Be brief.\"," USER ",\"tools\":[{\"name\":"            \
    "\"get_weather\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"    \
    "\"string\"}}}}]}"

static void count_post(const char *api, const char *body, const char *const *extra,
                       struct th_resp *r)
{
    const char *h[6] = {"Content-Type: application/json", NULL};
    size_t n = 1;

    for (size_t i = 0; extra && extra[i] && n < 5; i++)
        h[n++] = extra[i];
    h[n] = NULL;
    if (!strcmp(api, "gemini"))
        th_http("POST", u("/v1beta/models/gemini-test:countTokens"), body, h, r);
    else if (!strcmp(api, "anthropic"))
        th_http("POST", u("/v1/messages/count_tokens"), body, h, r);
    else
        th_http("POST", u("/v1/responses/input_tokens"), body, h, r);
}

/* Each client wire against each upstream wire that counts: the upstream's own count, asked at
 * its own path with a body of only the members it takes (system and tools among them), comes
 * back in the client's shape; an upstream of the client's wire gets the body as written. */
static void test_count_across_wires(void **state)
{
    static const char *const wires[] = {"anthropic", "openai-responses", "gemini"};
    static const struct {
        const char *api, *body;
    } clients[] = {{"openai-responses", RS_COUNT_BODY},
                   {"gemini", G_COUNT_BODY},
                   {"anthropic", AN_COUNT_BODY}};
    struct th_resp r;

    (void)state;
    for (size_t c = 0; c < REIN_ARRAY_SIZE(clients); c++) {
        for (size_t w = 0; w < REIN_ARRAY_SIZE(wires); w++) {
            const struct ms_request *q;
            start_with(wires[w], NULL, 0);
            script_count(count_path(wires[w]), count_reply(wires[w]));
            count_post(clients[c].api, clients[c].body, NULL, &r);
            if (r.status != 200)
                fail_msg("%s client, %s upstream: %ld %s", clients[c].api, wires[w], r.status,
                         r.body);
            if (!strcmp(clients[c].api, "gemini")) {
                assert_int_equal(json_integer_value(json_object_get(r.json, "totalTokens")), 31);
            } else {
                assert_int_equal(json_integer_value(json_object_get(r.json, "input_tokens")), 31);
                if (!strcmp(clients[c].api, "openai-responses"))
                    assert_string_equal(th_jstr(r.json, "object"), "response.input_tokens");
            }
            /* Gemini's own answer passes whole to a Gemini client. */
            assert_int_equal(json_object_get(r.json, "promptTokensDetails") != NULL,
                             !strcmp(clients[c].api, "gemini") && !strcmp(wires[w], "gemini"));
            th_resp_free(&r);
            assert_int_equal(ms_request_count(F->ms), 1);
            q = ms_last_request(F->ms);
            assert_string_equal(q->path, count_path(wires[w]));
            assert_non_null(q->json);
            assert_count_body(wires[w], q->json);
            if (!strcmp(clients[c].api, wires[w]) && strcmp(wires[w], "gemini")) {
                /* the client's own wire: its body as written, but for the model */
                json_t *sent = json_loads(clients[c].body, 0, NULL);
                json_t *got = json_deep_copy(q->json);
                json_object_del(sent, "model");
                json_object_del(got, "model");
                assert_true(json_equal(sent, got));
                json_decref(sent);
                json_decref(got);
            }
            teardown(NULL);
        }
    }
}

/* A Gemini client's {"contents"} form (what @google/genai sends for the Gemini API) counts the
 * contents alone; an Anthropic body with max_tokens and stream goes to another wire without
 * them. */
static void test_count_bodies_of_each_form(void **state)
{
    const struct ms_request *q;
    struct th_resp r;

    (void)state;
    start_with("anthropic", NULL, 0);
    script_count(count_path("anthropic"), count_reply("anthropic"));
    count_post("gemini", "{" G_USER "}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(json_integer_value(json_object_get(r.json, "totalTokens")), 31);
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_count_members("anthropic", q->json);
    assert_string_equal(jstr_at(q->json, "messages.0.content.0.text"), "weather in Paris?");
    assert_null(json_object_get(q->json, "system"));
    teardown(NULL);

    start_with("openai-responses", NULL, 0);
    script_count(count_path("openai-responses"), count_reply("openai-responses"));
    count_post("anthropic",
               "{\"model\":\"c\",\"max_tokens\":100,\"stream\":true,\"temperature\":0.5," USER "}",
               NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(json_integer_value(json_object_get(r.json, "input_tokens")), 31);
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_count_members("openai-responses", q->json);
}

/* An upstream wire without a count: a 404 in each client's shape naming that wire, and nothing
 * sent upstream; the chat completions client has no count route at all. */
static void test_count_no_count_per_client(void **state)
{
    struct th_resp r;

    (void)state;
    start(); /* openai chat completions */
    script("[]");
    count_post("openai-responses", RS_COUNT_BODY, NULL, &r);
    assert_oa_error(&r, 404, "openai wire");
    th_resp_free(&r);
    count_post("gemini", G_COUNT_BODY, NULL, &r);
    assert_gm_error(&r, 404, "NOT_FOUND", "openai wire");
    th_resp_free(&r);
    count_post("anthropic", AN_COUNT_BODY, NULL, &r);
    assert_int_equal(r.status, 404);
    assert_non_null(strstr(jstr_at(r.json, "error.message"), "openai wire"));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0);
}

/* An upstream's 429 comes back in the client's shape with its status and Retry-After, across
 * wires and on the client's own; an answer without a number is a 502 that says so. */
static void test_count_upstream_errors(void **state)
{
    struct th_resp r;

    (void)state;
    start_with("gemini", NULL, 0);
    script("{\"validate\":false,\"replies\":[{\"match\":{\"path\":\"/v1beta/models/gw-model:"
           "countTokens\"},\"status\":429,\"headers\":{\"Retry-After\":\"9\"},\"body\":"
           "\"{\\\"error\\\":{\\\"code\\\":429,\\\"message\\\":\\\"quota\\\",\\\"status\\\":"
           "\\\"RESOURCE_EXHAUSTED\\\"}}\",\"times\":2},"
           "{\"match\":{\"path\":\"/v1beta/models/gw-model:countTokens\"},\"status\":200,"
           "\"body\":\"{\\\"totalTokens\\\":\\\"many\\\"}\"}]}");
    count_post("openai-responses", RS_COUNT_BODY, NULL, &r);
    assert_oa_error(&r, 429, "quota");
    assert_header(&r, "Retry-After", "9");
    th_resp_free(&r);
    count_post("gemini", G_COUNT_BODY, NULL, &r);
    assert_gm_error(&r, 429, "RESOURCE_EXHAUSTED", "quota");
    assert_header(&r, "Retry-After", "9");
    th_resp_free(&r);
    count_post("anthropic", AN_COUNT_BODY, NULL, &r);
    assert_int_equal(r.status, 502);
    assert_non_null(strstr(jstr_at(r.json, "error.message"), "totalTokens"));
    th_resp_free(&r);
    teardown(NULL);

    start_with("openai-responses", NULL, 0);
    script("{\"validate\":false,\"replies\":[{\"match\":{\"path\":\"/v1/responses/input_tokens\"},"
           "\"status\":429,\"headers\":{\"Retry-After\":\"4\"},\"body\":\"{\\\"error\\\":{"
           "\\\"type\\\":\\\"requests\\\",\\\"message\\\":\\\"slow down\\\"}}\"}]}");
    count_post("anthropic", AN_COUNT_BODY, NULL, &r);
    assert_int_equal(r.status, 429);
    assert_string_equal(th_jstr(r.json, "type"), "error");
    assert_non_null(strstr(jstr_at(r.json, "error.message"), "slow down"));
    assert_header(&r, "Retry-After", "4");
    th_resp_free(&r);
}

/* AWS credentials for a Bedrock upstream that signs (the model server checks the signature
 * when its key is "AKIDTEST:count-secret"). */
static void bedrock_signing_env(void)
{
    unsetenv("AWS_BEARER_TOKEN_BEDROCK");
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_SESSION_TOKEN");
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "count-secret", 1);
    setenv("AWS_REGION", "us-east-1", 1);
}

static void bedrock_signing_env_clear(void)
{
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("AWS_REGION");
}

/*
 * A Bedrock upstream (SigV4): each client's count route reaches its CountTokens through the
 * client's own parser and the Converse writer, the request signed (the model server recomputes
 * the signature and checks the body against CountTokens' shape), and the number comes back in
 * the client's shape.
 */
static void test_count_bedrock_upstream(void **state)
{
    static const struct {
        const char *api, *body, *member;
    } clients[] = {{"anthropic", AN_COUNT_BODY, "input_tokens"},
                   {"openai-responses", RS_COUNT_BODY, "input_tokens"},
                   {"gemini", G_COUNT_BODY, "totalTokens"}};
    struct th_resp r;

    (void)state;
    bedrock_signing_env();
    start_with("bedrock", NULL, 0);
    bedrock_signing_env_clear();
    ms_set_api_key(F->ms, "AKIDTEST:count-secret");
    script("[{\"match\":{\"path\":\"/model/gw-model/count-tokens\"},\"usage\":{"
           "\"input_tokens\":31},\"times\":0}]");
    for (size_t c = 0; c < REIN_ARRAY_SIZE(clients); c++) {
        const struct ms_request *q;
        count_post(clients[c].api, clients[c].body, NULL, &r);
        if (r.status != 200)
            fail_msg("%s client: %ld %s", clients[c].api, r.status, r.body);
        assert_int_equal(json_integer_value(json_object_get(r.json, clients[c].member)), 31);
        if (!strcmp(clients[c].api, "openai-responses"))
            assert_string_equal(th_jstr(r.json, "object"), "response.input_tokens");
        assert_null(json_object_get(r.json, "inputTokens"));
        th_resp_free(&r);
        assert_int_equal(ms_request_count(F->ms), c + 1);
        q = ms_last_request(F->ms);
        if (q->status != 200 || q->error)
            fail_msg("%s client: the upstream refused the count: %s: %s", clients[c].api,
                     q->error ? q->error : "", q->body);
        assert_string_equal(q->path, count_path("bedrock"));
        assert_non_null(strstr(ms_request_header(q, "authorization"), "AWS4-HMAC-SHA256 "));
        assert_count_body("bedrock", q->json);
    }
}

/* A Bedrock upstream's errors: a ThrottlingException (429) with its Retry-After and a
 * ValidationException (a model CountTokens does not serve) come back in each client's shape
 * with the upstream's status; an answer without inputTokens is a 502 that names it. */
static void test_count_bedrock_upstream_errors(void **state)
{
    struct th_resp r;

    (void)state;
    start_with("bedrock", "bedrock-api-key", 0);
    script("[{\"match\":{\"path\":\"/model/gw-model/count-tokens\"},\"status\":429,"
           "\"headers\":{\"Retry-After\":\"7\"},\"error\":{\"message\":\"Too many tokens, "
           "please wait\"},\"times\":2},"
           "{\"match\":{\"path\":\"/model/gw-model/count-tokens\"},\"status\":400,"
           "\"error\":{\"message\":\"The provided model doesn't support counting tokens.\"},"
           "\"times\":1},"
           "{\"match\":{\"path\":\"/model/gw-model/count-tokens\"},\"body\":"
           "\"{\\\"tokens\\\":3}\"}]");
    count_post("anthropic", AN_COUNT_BODY, NULL, &r);
    assert_int_equal(r.status, 429);
    assert_string_equal(th_jstr(r.json, "type"), "error");
    assert_non_null(strstr(jstr_at(r.json, "error.message"), "Too many tokens"));
    assert_header(&r, "Retry-After", "7");
    th_resp_free(&r);
    count_post("gemini", G_COUNT_BODY, NULL, &r);
    assert_gm_error(&r, 429, "RESOURCE_EXHAUSTED", "Too many tokens");
    assert_header(&r, "Retry-After", "7");
    th_resp_free(&r);
    count_post("openai-responses", RS_COUNT_BODY, NULL, &r);
    assert_oa_error(&r, 400, "doesn't support counting tokens");
    th_resp_free(&r);
    count_post("anthropic", AN_COUNT_BODY, NULL, &r);
    assert_int_equal(r.status, 502);
    assert_non_null(strstr(jstr_at(r.json, "error.message"), "inputTokens"));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 4);
    assert_string_equal(ms_request_header(ms_last_request(F->ms), "authorization"),
                        "Bearer bedrock-api-key");
}

/* A bad body is a 400 in the route's own shape, before anything goes upstream. */
static void test_count_bad_bodies(void **state)
{
    static const struct {
        const char *api, *body, *want;
    } cases[] = {
        {"openai-responses", "{\"input\":", "not valid JSON"},
        {"openai-responses", "[1]", "JSON object"},
        {"openai-responses", "{\"input\":[{\"type\":\"bogus_item\"}]}", "bogus_item"},
        {"gemini", "{\"contents\":", "not valid JSON"},
        {"gemini", "\"text\"", "JSON object"},
        {"gemini", "{}", "contents"},
        {"gemini", "{" G_USER ",\"generateContentRequest\":{" G_USER "}}", "both"},
        {"gemini", "{\"contentz\":[]}", "contentz"},
        {"gemini", "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"inlineData\":{}}]}]}",
         "inlineData"},
        {"anthropic", "{\"model\":", "JSON"},
        {"anthropic",
         "{\"model\":\"c\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
         "\"bogus\"}]}]}",
         "bogus"},
    };
    struct th_resp r;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(cases); i++) {
        /* an upstream of another wire, so that the route's parser reads the body */
        start_with(strcmp(cases[i].api, "gemini") ? "gemini" : "anthropic", NULL, 0);
        script("[]");
        count_post(cases[i].api, cases[i].body, NULL, &r);
        if (!strcmp(cases[i].api, "gemini"))
            assert_gm_error(&r, 400, "INVALID_ARGUMENT", cases[i].want);
        else if (!strcmp(cases[i].api, "anthropic")) {
            if (r.status != 400 || !strstr(r.body, cases[i].want))
                fail_msg("%s: want 400 with \"%s\", got %ld %s", cases[i].body, cases[i].want,
                         r.status, r.body);
            assert_string_equal(jstr_at(r.json, "error.type"), "invalid_request_error");
        } else
            assert_oa_error(&r, 400, cases[i].want);
        th_resp_free(&r);
        assert_int_equal(ms_request_count(F->ms), 0);
        teardown(NULL);
    }
}

/* ---- media in a client's tool results across wires (decision 0098) ----------------------- */

/* An Anthropic client's turn after its screenshot tool ran: the tool_result holds the text
 * and the block given. */
#define AN_SHOT(block)                                                                             \
    "{\"model\":\"m\",\"max_tokens\":64,\"tools\":[{\"name\":\"screenshot\",\"input_schema\":"     \
    "{\"type\":\"object\",\"properties\":{}}}],\"messages\":[{\"role\":\"user\",\"content\":"      \
    "\"Take a screenshot\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\","          \
    "\"id\":\"toolu_1\",\"name\":\"screenshot\",\"input\":{}}]},{\"role\":\"user\",\"content\":"   \
    "[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":[{\"type\":\"text\","      \
    "\"text\":\"the page\"}," block "]}]}]}"
#define AN_IMAGE(src)      "{\"type\":\"image\",\"source\":" src "}"
#define AN_B64(mime, data) "{\"type\":\"base64\",\"media_type\":\"" mime "\",\"data\":\"" data "\"}"
/* A Responses client's turn after the same tool: its output items given. */
#define RS_SHOT(items)                                                                             \
    "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":\"Take a screenshot\"},"           \
    "{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"screenshot\","                  \
    "\"arguments\":\"{}\"},{\"type\":\"function_call_output\",\"call_id\":\"call_1\","             \
    "\"output\":[{\"type\":\"input_text\",\"text\":\"the page\"}," items "]}],\"tools\":[{"        \
    "\"type\":\"function\",\"name\":\"screenshot\",\"parameters\":{\"type\":\"object\","           \
    "\"properties\":{}}}]}"
/* A Gemini client's: the functionResponse's parts given. */
#define GM_SHOT(parts)                                                                             \
    "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"Take a screenshot\"}]},"             \
    "{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"screenshot\",\"args\":{}}}]},"   \
    "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"screenshot\",\"response\":"   \
    "{\"output\":\"the page\"},\"parts\":[" parts "]}}]}],\"tools\":[{\"functionDeclarations\":"   \
    "[{\"name\":\"screenshot\",\"description\":\"A screenshot\"}]}]}"

static const char *const an_headers[] = {"anthropic-version: 2023-06-01", NULL};

/* The upstream's body of the one request a client's body made, answered 200. */
static const json_t *shot_through(const char *route, const char *body)
{
    struct th_resp r;

    script("[{\"text\":\"a red pixel\"}]");
    if (!strcmp(route, "gemini"))
        gem("generateContent", body, NULL, &r);
    else if (!strcmp(route, "responses"))
        responses(body, &r);
    else
        th_http("POST", u("/v1/messages"), body, an_headers, &r);
    if (r.status != 200 || ms_request_count(F->ms) != 1)
        fail_msg("%ld %s", r.status, r.body);
    th_resp_free(&r);
    return ms_request(F->ms, 0)->json;
}

/* An OpenAI chat upstream's messages after a screenshot's result: the tool message says where
 * its image went, and a user message after it carries the image after a text naming the call
 * (the model server refuses an image in a tool message and a message between tool messages,
 * as the API does). */
static void assert_openai_shot(const json_t *up, const char *call)
{
    const json_t *msgs = json_object_get(up, "messages"), *m;

    assert_int_equal(json_array_size(msgs), 4);
    m = json_array_get(msgs, 2);
    assert_string_equal(th_jstr(m, "role"), "tool");
    assert_string_equal(th_jstr(m, "tool_call_id"), call);
    assert_non_null(strstr(th_jstr(m, "content"), "the page"));
    assert_non_null(strstr(th_jstr(m, "content"),
                           "(attachment 1, image/png, is in the user message after the tool "
                           "results"));
    m = json_array_get(msgs, 3);
    assert_string_equal(th_jstr(m, "role"), "user");
    assert_non_null(strstr(jstr_at(m, "content.0.text"), call));
    assert_string_equal(jstr_at(m, "content.1.type"), "image_url");
    assert_string_equal(jstr_at(m, "content.1.image_url.url"), "data:image/png;base64," PNG1);
}

/* An Anthropic tool_result's image (Claude Code's Read of a PNG, a computer-use screenshot)
 * reaches an OpenAI chat upstream in a user message after the tool message, and a Gemini
 * upstream as an inlineData part after the functionResponse. */
static void test_tool_media_anthropic_to_openai_and_gemini(void **state)
{
    static const char body[] = AN_SHOT(AN_IMAGE(AN_B64("image/png", PNG1)));
    const json_t *parts;

    (void)state;
    start();
    assert_openai_shot(shot_through("anthropic", body), "toolu_1");
    teardown(NULL);
    start_with("gemini", NULL, 0);
    parts = test_json_at(shot_through("anthropic", body), "contents.2.parts");
    assert_int_equal(json_array_size(parts), 2);
    assert_string_equal(jstr_at(json_array_get(parts, 0), "functionResponse.name"), "screenshot");
    assert_string_equal(jstr_at(json_array_get(parts, 1), "inlineData.mimeType"), "image/png");
    assert_string_equal(jstr_at(json_array_get(parts, 1), "inlineData.data"), PNG1);
}

/* A Responses client's function_call_output of input_text and input_image reaches Claude as a
 * tool_result of a text and an image block, a Responses upstream as the same output list, and
 * a chat upstream as a tool message and a user message of the image. */
static void test_tool_media_responses_output_crosses(void **state)
{
    static const char body[] =
        RS_SHOT("{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64," PNG1 "\"}");
    const json_t *res, *out;

    (void)state;
    start_with("anthropic", NULL, 0);
    res = test_json_at(shot_through("responses", body), "messages.2.content.0");
    assert_string_equal(th_jstr(res, "type"), "tool_result");
    assert_string_equal(th_jstr(res, "tool_use_id"), "call_1");
    assert_string_equal(jstr_at(res, "content.0.text"), "the page");
    assert_string_equal(jstr_at(res, "content.1.type"), "image");
    assert_string_equal(jstr_at(res, "content.1.source.media_type"), "image/png");
    assert_string_equal(jstr_at(res, "content.1.source.data"), PNG1);
    teardown(NULL);
    start_with("openai-responses", NULL, 0);
    out = test_json_at(shot_through("responses", body), "input.2");
    assert_string_equal(th_jstr(out, "type"), "function_call_output");
    assert_string_equal(jstr_at(out, "output.0.text"), "the page");
    assert_string_equal(jstr_at(out, "output.1.type"), "input_image");
    assert_string_equal(jstr_at(out, "output.1.image_url"), "data:image/png;base64," PNG1);
    teardown(NULL);
    start();
    assert_openai_shot(shot_through("responses", body), "call_1");
}

/* A Gemini client's functionResponse with an inlineData part (Gemini 3's multimodal function
 * responses) reaches Claude as a tool_result with an image block, and an OpenAI chat upstream
 * as the image after the tool message. */
static void test_tool_media_gemini_response_crosses(void **state)
{
    static const char body[] =
        GM_SHOT("{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"" PNG1 "\"}}");
    const json_t *res, *msgs;

    (void)state;
    start_with("anthropic", NULL, 0);
    res = test_json_at(shot_through("gemini", body), "messages.2.content.0");
    assert_string_equal(th_jstr(res, "type"), "tool_result");
    assert_string_equal(jstr_at(res, "content.0.text"), "the page");
    assert_string_equal(jstr_at(res, "content.1.type"), "image");
    assert_string_equal(jstr_at(res, "content.1.source.data"), PNG1);
    teardown(NULL);
    start();
    msgs = json_object_get(shot_through("gemini", body), "messages");
    assert_int_equal(json_array_size(msgs), 4);
    assert_string_equal(jstr_at(json_array_get(msgs, 3), "content.1.image_url.url"),
                        "data:image/png;base64," PNG1);
}

/* What cannot cross is a 400 naming the part, in the client's wire's shape, before the
 * upstream is asked: an image by URL in a tool_result, a block other wires have no place for,
 * audio to Claude in a functionResponse, a Responses output's image by URL, bad base64; and a
 * chat client's tool message takes text only, as the chat completions API says (an upstream of
 * its own wire gets it as sent, and refuses it itself). */
static void test_tool_media_refusals(void **state)
{
    struct th_resp r;

    (void)state;
    start();
    script("[{\"text\":\"ok\",\"times\":0}]");
    th_http("POST", u("/v1/messages"),
            AN_SHOT(AN_IMAGE("{\"type\":\"url\",\"url\":\"https://example.com/a.png\"}")),
            an_headers, &r);
    assert_int_equal(r.status, 400);
    assert_string_equal(th_jstr(r.json, "type"), "error");
    assert_non_null(strstr(jstr_at(r.json, "error.message"),
                           "messages.2.content.0.content.1: rein's gateway cannot carry media "
                           "given by a URL"));
    th_resp_free(&r);
    th_http("POST", u("/v1/messages"),
            AN_SHOT("{\"type\":\"search_result\",\"source\":\"s\",\"title\":\"t\",\"content\":[]}"),
            an_headers, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(jstr_at(r.json, "error.message"), "'search_result' blocks in a "
                                                             "tool_result"));
    th_resp_free(&r);
    th_http("POST", u("/v1/messages"), AN_SHOT(AN_IMAGE(AN_B64("image/png", "not*base64"))),
            an_headers, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(jstr_at(r.json, "error.message"), "not base64"));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0);
    teardown(NULL);
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"ok\",\"times\":0}]");
    gem("generateContent",
        GM_SHOT("{\"inlineData\":{\"mimeType\":\"audio/wav\",\"data\":\"" WAV1 "\"}}"), NULL, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "contents[2].parts[0].functionResponse.parts[0]: the "
                                   "upstream (provider anthropic, the anthropic wire) takes no "
                                   "audio/wav"));
    th_resp_free(&r);
    gem("generateContent",
        GM_SHOT("{\"fileData\":{\"mimeType\":\"image/png\",\"fileUri\":\"gs://b/a.png\"}}"), NULL,
        &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "cannot carry media given by a URI (fileData)"));
    th_resp_free(&r);
    chat("{\"model\":\"m\"," TOOLS ",\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
         "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":"
         "\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{}\"}}]},"
         "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":[{\"type\":\"text\","
         "\"text\":\"shot\"}," IMAGE_URL("data:image/png;base64," PNG1) "]}]}",
         NULL, &r);
    assert_oa_error(&r, 400, "only text content");
    assert_string_equal(jstr_at(r.json, "error.param"), "messages[2].content");
    th_resp_free(&r);
    responses(RS_SHOT("{\"type\":\"input_image\",\"image_url\":\"https://example.com/a.png\"}"),
              &r);
    assert_oa_error(&r, 400, "send it inline");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0);
}

/* ---- structured output (decision 0100) ------------------------------------------------------ */

#define PERSON_SCHEMA                                                                              \
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":"       \
    "\"integer\"}},\"required\":[\"name\",\"age\"],\"additionalProperties\":false}"
#define CHAT_PERSON(extra)                                                                         \
    "{\"model\":\"m\"," USER extra                                                                 \
    ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"                              \
    "{\"name\":\"person\",\"strict\":true,\"schema\":" PERSON_SCHEMA "}}}"
#define ANN "{\\\"name\\\":\\\"Ann\\\",\\\"age\\\":30}"

/* The upstream's body of a request that was answered 200 (path, body, its dropped names). */
static const json_t *format_sent(const char *path, const char *body, const char **dropped)
{
    return reasoning_sent(path, body, dropped);
}

static void assert_json_at(const json_t *b, const char *at, const char *want_json)
{
    json_t *want = json_loads(want_json, JSON_DECODE_ANY, NULL);
    char *got = json_dumps(test_json_at(b, at), JSON_ENCODE_ANY | JSON_COMPACT);

    assert_non_null(want);
    if (!json_equal(test_json_at(b, at), want))
        fail_msg("%s is %s, not %s", at, got ? got : "(absent)", want_json);
    free(got);
    json_decref(want);
}

/*
 * Each client's structured-output ask reaches an upstream of another wire in that wire's words
 * (decision 0100): chat's response_format, the Responses API's text.format, Anthropic's
 * output_config.format, Gemini's responseMimeType with responseSchema or responseJsonSchema.
 */
static void test_structured_output_crosses_wires(void **state)
{
    const json_t *b;
    const char *dropped;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"" ANN "\"},{\"text\":\"" ANN "\"},{\"text\":\"" ANN "\"},{\"text\":\"" ANN
           "\"},{\"text\":\"" ANN "\"}]");
    b = format_sent("/v1/chat/completions", CHAT_PERSON(""), &dropped);
    assert_json_at(b, "output_config.format",
                   "{\"type\":\"json_schema\",\"schema\":" PERSON_SCHEMA "}");
    assert_null(json_object_get(b, "response_format"));
    assert_string_equal(dropped, "");
    /* JSON mode has no form on Anthropic: nothing goes, and the answer is checked */
    b = format_sent("/v1/chat/completions",
                    "{\"model\":\"m\"," USER ",\"response_format\":{\"type\":\"json_object\"}}",
                    &dropped);
    assert_null(json_object_get(b, "output_config"));
    assert_string_equal(dropped, "");
    b = format_sent("/v1/responses",
                    "{\"model\":\"m\",\"input\":\"hi\",\"text\":{\"verbosity\":\"low\",\"format\":"
                    "{\"type\":\"json_schema\",\"name\":\"person\",\"schema\":" PERSON_SCHEMA "}}}",
                    &dropped);
    assert_json_at(b, "output_config.format.schema", PERSON_SCHEMA);
    assert_string_equal(dropped, "[\"text.verbosity\"]");
    /* text, the default, asks nothing: text is dropped whole, as before */
    b = format_sent("/v1/responses",
                    "{\"model\":\"m\",\"input\":\"hi\",\"text\":{\"verbosity\":\"low\",\"format\":"
                    "{\"type\":\"text\"}}}",
                    &dropped);
    assert_null(json_object_get(b, "output_config"));
    assert_string_equal(dropped, "[\"text\"]");
    b = format_sent("/v1beta/models/m:generateContent",
                    "{" G_USER ",\"generationConfig\":{\"responseMimeType\":\"application/json\","
                    "\"responseJsonSchema\":" PERSON_SCHEMA "}}",
                    &dropped);
    assert_json_at(b, "output_config.format.schema", PERSON_SCHEMA);
    assert_string_equal(dropped, "");
    teardown(NULL);

    start_with("openai", NULL, 0);
    script("[{\"text\":\"" ANN "\"},{\"text\":\"" ANN "\"},{\"text\":\"" ANN "\"}]");
    b = format_sent("/v1/messages",
                    "{\"model\":\"m\",\"max_tokens\":64," USER ",\"output_config\":{\"format\":{"
                    "\"type\":\"json_schema\",\"schema\":" PERSON_SCHEMA "}}}",
                    &dropped);
    assert_json_at(
        b, "response_format",
        "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"output\",\"schema\":" PERSON_SCHEMA
        "}}");
    assert_null(json_object_get(b, "output_config"));
    assert_string_equal(dropped, "");
    /* Gemini's OpenAPI Schema is read as the JSON Schema it means */
    b = format_sent("/v1beta/models/m:generateContent",
                    "{" G_USER ",\"generationConfig\":{\"responseMimeType\":\"application/json\","
                    "\"responseSchema\":{\"type\":\"OBJECT\",\"properties\":{\"name\":{\"type\":"
                    "\"STRING\"},\"age\":{\"type\":\"INTEGER\",\"nullable\":true}},"
                    "\"required\":[\"name\"],\"propertyOrdering\":[\"name\",\"age\"]}}}",
                    &dropped);
    assert_json_at(b, "response_format.json_schema.schema",
                   "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{"
                   "\"type\":[\"integer\",\"null\"]}},\"required\":[\"name\"]}");
    b = format_sent("/v1beta/models/m:generateContent",
                    "{" G_USER ",\"generation_config\":{\"response_mime_type\":"
                    "\"application/json\"}}",
                    &dropped);
    assert_json_at(b, "response_format", "{\"type\":\"json_object\"}");
    assert_string_equal(dropped, "");
    teardown(NULL);

    start_with("gemini", NULL, 0);
    script("[{\"text\":\"" ANN "\"}]");
    b = format_sent("/v1/chat/completions", CHAT_PERSON(""), &dropped);
    assert_json_at(b, "generationConfig.responseMimeType", "\"application/json\"");
    assert_json_at(b, "generationConfig.responseJsonSchema", PERSON_SCHEMA);
    teardown(NULL);

    start_with("bedrock", "bedrock-api-key", 0);
    script("[{\"text\":\"" ANN "\"}]");
    b = format_sent("/v1/chat/completions", CHAT_PERSON(""), &dropped);
    assert_json_at(b, "outputConfig.textFormat.type", "\"json_schema\"");
    assert_json_at(b, "outputConfig.textFormat.structure.jsonSchema.name", "\"person\"");
    assert_true(json_is_string(test_json_at(b, "outputConfig.textFormat.structure.jsonSchema."
                                               "schema")));
}

/* Claude's output_config holds the effort (decision 0099) beside the format: each crosses in
 * its own member, the effort for a model that reasons and dropped and named for one that does
 * not; and a Claude upstream gets both in one output_config. */
static void test_structured_output_beside_an_effort(void **state)
{
    const json_t *b;
    const char *dropped;

    (void)state;
    reasoning_start("openai");
    script("[{\"text\":\"" ANN "\"},{\"text\":\"" ANN "\"}]");
    b = format_sent("/v1/messages",
                    "{\"model\":\"gpt-5\",\"max_tokens\":100," USER
                    ",\"output_config\":{\"effort\":\"low\",\"format\":{\"type\":\"json_schema\","
                    "\"schema\":" PERSON_SCHEMA "}}}",
                    &dropped);
    assert_string_equal(th_jstr(b, "reasoning_effort"), "low");
    assert_json_at(b, "response_format.json_schema.schema", PERSON_SCHEMA);
    assert_string_equal(dropped, "");
    b = format_sent("/v1/messages",
                    "{\"model\":\"gpt-4o\",\"max_tokens\":100," USER
                    ",\"output_config\":{\"effort\":\"low\",\"format\":{\"type\":\"json_schema\","
                    "\"schema\":" PERSON_SCHEMA "}}}",
                    &dropped);
    assert_null(json_object_get(b, "reasoning_effort"));
    assert_json_at(b, "response_format.json_schema.schema", PERSON_SCHEMA);
    assert_string_equal(dropped, "[\"output_config\"]");

    reasoning_start("anthropic");
    script("[{\"text\":\"" ANN "\"}]");
    b = format_sent("/v1/chat/completions",
                    "{\"model\":\"claude-opus-4-7\"," USER ",\"reasoning_effort\":\"high\","
                    "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":"
                    "\"person\",\"schema\":" PERSON_SCHEMA "}}}",
                    &dropped);
    assert_json_at(
        b, "output_config",
        "{\"effort\":\"high\",\"format\":{\"type\":\"json_schema\",\"schema\":" PERSON_SCHEMA "}}");
    assert_string_equal(th_jstr(json_object_get(b, "thinking"), "type"), "adaptive");
}

/* A malformed ask, or one with no form on another wire, is a 400 in the client's shape naming
 * the member; nothing goes upstream. */
static void test_structured_output_refused(void **state)
{
    const char *const ah[] = {"anthropic-version: 2023-06-01", NULL};
    struct th_resp r;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"{}\",\"times\":0}]");
    chat("{\"model\":\"m\"," USER ",\"response_format\":{\"type\":\"xml\"}}", NULL, &r);
    assert_oa_error(&r, 400, "response_format.type");
    th_resp_free(&r);
    chat("{\"model\":\"m\"," USER ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
         "{\"name\":\"p\"}}}",
         NULL, &r);
    assert_oa_error(&r, 400, "response_format.json_schema.schema");
    assert_string_equal(th_jstr(json_object_get(r.json, "error"), "param"),
                        "response_format.json_schema.schema");
    th_resp_free(&r);
    /* a schema rein's validator cannot compile cannot be checked either */
    chat("{\"model\":\"m\"," USER ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
         "{\"name\":\"p\",\"schema\":{\"type\":\"object\",\"minimum\":\"ten\"}}}}",
         NULL, &r);
    assert_oa_error(&r, 400, "response_format.json_schema.schema");
    th_resp_free(&r);
    teardown(NULL);

    start_with("openai", NULL, 0);
    script("[{\"text\":\"{}\",\"times\":0}]");
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"m\",\"max_tokens\":64," USER ",\"output_config\":{\"format\":{\"type\":"
            "\"json_object\"}}}",
            ah, &r);
    assert_int_equal(r.status, 400);
    assert_string_equal(jstr_at(r.json, "error.type"), "invalid_request_error");
    assert_non_null(strstr(jstr_at(r.json, "error.message"), "output_config.format.type"));
    th_resp_free(&r);
    gem(GEN,
        "{" G_USER ",\"generationConfig\":{\"responseMimeType\":\"application/json\","
        "\"responseSchema\":{\"type\":\"OBJECT\"},\"responseJsonSchema\":{\"type\":\"object\"}}}",
        NULL, &r);
    assert_gm_error(&r, 400, "INVALID_ARGUMENT", "responseJsonSchema");
    th_resp_free(&r);
    /* an enum's bare value has no form elsewhere */
    gem(GEN,
        "{" G_USER ",\"generationConfig\":{\"responseMimeType\":\"text/x.enum\","
        "\"responseSchema\":{\"type\":\"STRING\",\"enum\":[\"a\",\"b\"]}}}",
        NULL, &r);
    assert_gm_error(&r, 400, "INVALID_ARGUMENT", "generationConfig.responseMimeType");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 0);
}

/* The text of an upstream request's last message (the re-ask's), or "". */
static const char *last_user_text(const json_t *body)
{
    const json_t *msgs = json_object_get(body, "messages");
    const json_t *m = json_array_get(msgs, json_array_size(msgs) - 1);
    const json_t *content = json_object_get(m, "content");

    if (json_is_string(content))
        return json_string_value(content);
    return th_jstr(json_array_get(content, json_array_size(content) - 1), "text")
               ? th_jstr(json_array_get(content, json_array_size(content) - 1), "text")
               : "";
}

/*
 * rein checks the answer against the ask as it checks calls (decision 0100): an answer that is
 * not JSON, or does not follow the schema, is re-asked with what to fix, answered 422 under
 * the error policy, and handed out with its problem under pass; on the client's own wire too.
 */
static void test_structured_answer_is_checked(void **state)
{
    const json_t *up, *problem;
    struct th_resp r;

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[{\"text\":\"Sure! Here it is: " ANN "\"},{\"text\":\"{\\\"name\\\":\\\"Ann\\\","
           "\\\"age\\\":\\\"thirty\\\"}\"},{\"text\":\"" ANN "\"}]");
    chat(CHAT_PERSON(""), NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(jstr_at(r.json, "choices.0.message.content"),
                        "{\"name\":\"Ann\",\"age\":30}");
    assert_int_equal(json_integer_value(test_json_at(r.json, "rein.reasks")), 2);
    problem = test_json_at(r.json, "rein.problems.1");
    assert_string_equal(th_jstr(problem, "code"), "invalid_output");
    assert_string_equal(th_jstr(problem, "output"), "response_format");
    assert_string_equal(jstr_at(problem, "errors.0.path"), "/age");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 3);
    up = ms_request(F->ms, 1)->json;
    assert_non_null(strstr(last_user_text(up), "not JSON"));
    assert_string_equal(th_jstr(json_array_get(json_object_get(up, "messages"), 1), "role"),
                        "assistant");
    up = ms_request(F->ms, 2)->json;
    assert_non_null(strstr(last_user_text(up), "/age: must be integer"));
    assert_non_null(strstr(last_user_text(up), "\"person\""));
    /* both invalid answers and their re-asks are counted */
    {
        rein_metric *f = rein_metrics_family(F->metrics, REIN_METRIC_COUNTER,
                                             "rein_gateway_invalid_answers_total", NULL,
                                             (const char *[]){"model", NULL}, NULL, 0, NULL);
        assert_true(rein_metric_value(f, (const char *[]){"gw-model", NULL}) == 2);
        f = rein_metrics_family(F->metrics, REIN_METRIC_COUNTER, "rein_gateway_reasks_total", NULL,
                                (const char *[]){"model", "tool", NULL}, NULL, 0, NULL);
        assert_true(rein_metric_value(f, (const char *[]){"gw-model", "(answer)", NULL}) == 2);
    }

    /* the error policy: a 422 naming the member, with the problem */
    script("[{\"text\":\"[1,2]\"}]");
    chat(CHAT_PERSON(""), (const char *[]){"x-rein-on-invalid: error", NULL}, &r);
    assert_oa_error(&r, 422, "response_format");
    assert_string_equal(jstr_at(r.json, "rein.problems.0.code"), "invalid_output");
    th_resp_free(&r);
    /* pass: the answer as it came, its problem named */
    script("[{\"text\":\"nope\"}]");
    chat("{\"model\":\"m\"," USER ",\"response_format\":{\"type\":\"json_object\"}}",
         (const char *[]){"x-rein-on-invalid: pass", NULL}, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr_at(r.json, "choices.0.message.content"), "nope");
    assert_non_null(strstr(jstr_at(r.json, "rein.problems.0.message"), "not JSON"));
    th_resp_free(&r);
    /* a valid answer goes without a "rein" member */
    script("[{\"text\":\"" ANN "\"}]");
    chat(CHAT_PERSON(""), NULL, &r);
    assert_int_equal(r.status, 200);
    assert_null(json_object_get(r.json, "rein"));
    th_resp_free(&r);
    teardown(NULL);

    /* the client's own wire: the body goes as written, the answer is still checked */
    start_with("openai", NULL, 0);
    script("[{\"text\":\"```json\\n" ANN "\\n```\"},{\"text\":\"" ANN "\"}]");
    chat(CHAT_PERSON(""), NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr_at(r.json, "choices.0.message.content"),
                        "{\"name\":\"Ann\",\"age\":30}");
    th_resp_free(&r);
    up = ms_request(F->ms, 0)->json;
    assert_json_at(up, "response_format.json_schema.schema", PERSON_SCHEMA);
    assert_json_at(up, "response_format.json_schema.strict", "true");
    assert_int_equal(ms_request_count(F->ms), 2);
}

/* Streamed, a structured answer is held until it is checked: the client sees only the answer
 * that follows the schema, never the one re-asked. */
static void test_structured_answer_streams_once_checked(void **state)
{
    struct th_resp r;
    char text[256] = "";

    (void)state;
    start_with("anthropic", NULL, 0);
    script("[{\"text\":[\"{\\\"name\\\":\",\"\\\"Ann\\\"}\"]},{\"text\":[\"{\\\"name\\\":"
           "\\\"Ann\\\",\","
           "\"\\\"age\\\":30}\"]}]");
    chat(CHAT_PERSON(",\"stream\":true"), NULL, &r);
    assert_int_equal(r.status, 200);
    for (const char *line = strstr(r.body, "data: {"); line; line = strstr(line + 1, "data: {")) {
        const char *end = strchr(line, '\n');
        json_t *e =
            json_loadb(line + 6, end ? (size_t)(end - line - 6) : strlen(line + 6), 0, NULL);
        const char *piece = e ? jstr_at(e, "choices.0.delta.content") : NULL;
        assert_non_null(e);
        if (piece)
            strncat(text, piece, sizeof(text) - strlen(text) - 1);
        json_decref(e);
    }
    assert_string_equal(text, "{\"name\":\"Ann\",\"age\":30}");
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 2);
    /* the error policy answers a stream that never began with a plain 422 */
    script("[{\"text\":[\"no\",\"pe\"]}]");
    chat(CHAT_PERSON(",\"stream\":true"), (const char *[]){"x-rein-on-invalid: error", NULL}, &r);
    assert_oa_error(&r, 422, "response_format");
    th_resp_free(&r);
}

/* ---- the OpenAI-compatible providers of decision 0105 ------------------------------------ */

/* Starts the gateway on preset's upstream (model, path under the model server). */
static void start_preset(const char *preset, const char *model, const char *path)
{
    next_preset = preset;
    next_model = model;
    next_path = path;
    start_with("openai", NULL, 0);
}

#define MISTRAL_EARLIER                                                                            \
    "{\"role\":\"user\",\"content\":\"weather in Oslo?\"},"                                        \
    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_Xq2hv3ZtN8pWm1\","    \
    "\"type\":\"function\",\"function\":{\"name\":\"get_weather\","                                \
    "\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}]},"                                           \
    "{\"role\":\"tool\",\"tool_call_id\":\"call_Xq2hv3ZtN8pWm1\",\"content\":\"rain\"},"           \
    "{\"role\":\"user\",\"content\":\"and in Rome?\"}"
#define MISTRAL_STEP                                                                               \
    "[{\"match\":{\"nth\":1},\"tool_calls\":[{\"id\":\"D681PevKs\",\"name\":\"get_weather\","      \
    "\"arguments\":\"{\\\"city\\\":\\\"Rome\\\"}\"}]},"                                            \
    "{\"match\":{\"tool_result_contains\":\"sunny\"},\"text\":\"Sunny in Rome.\"}]"

/*
 * `rein serve --provider mistral` with an OpenAI client whose conversation holds its own call
 * ids (call_…) and asks its next question right after a tool result: a tool loop of two steps.
 * Mistral sees its nine-character ids and a message between the result and the question; the
 * client sees Mistral's call id and gives it back.
 */
static void test_mistral_through_the_gateway_openai_client(void **state)
{
    const struct ms_request *q;
    struct th_resp r;

    (void)state;
    start_preset("mistral", "mistral-large-latest", NULL);
    script(MISTRAL_STEP);
    chat("{\"model\":\"m\",\"messages\":[" MISTRAL_EARLIER "]," TOOLS "}", NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_non_null(strstr(r.body, "\"id\":\"D681PevKs\""));
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_null(strstr(q->body, "call_Xq2hv3ZtN8pWm1"));
    chat("{\"model\":\"m\",\"messages\":[" MISTRAL_EARLIER ","
         "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"D681PevKs\","
         "\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
         "\"arguments\":\"{\\\"city\\\":\\\"Rome\\\"}\"}}]},"
         "{\"role\":\"tool\",\"tool_call_id\":\"D681PevKs\",\"content\":\"sunny\"}]," TOOLS "}",
         NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_non_null(strstr(r.body, "Sunny in Rome."));
    th_resp_free(&r);
    assert_int_equal(ms_request_count(F->ms), 2);
}

#define TOOLS_AN                                                                                   \
    "\"tools\":[{\"name\":\"get_weather\",\"input_schema\":{\"type\":\"object\","                  \
    "\"properties\":{\"city\":{\"type\":\"string\"}}}}]"

/* The same loop from an Anthropic client (Claude Code's shape: toolu_ ids, the next question in
 * the user message beside the tool result). */
static void test_mistral_through_the_gateway_anthropic_client(void **state)
{
#define AN_EARLIER                                                                                 \
    "{\"role\":\"user\",\"content\":\"weather in Oslo?\"},"                                        \
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\","                                 \
    "\"id\":\"toolu_01A09q90qw90lq917835lq9\",\"name\":\"get_weather\","                           \
    "\"input\":{\"city\":\"Oslo\"}}]},"                                                            \
    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","                                   \
    "\"tool_use_id\":\"toolu_01A09q90qw90lq917835lq9\",\"content\":\"rain\"},"                     \
    "{\"type\":\"text\",\"text\":\"and in Rome?\"}]}"
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    struct th_resp r;

    (void)state;
    start_preset("mistral", "mistral-large-latest", NULL);
    script(MISTRAL_STEP);
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"m\",\"max_tokens\":256,\"messages\":[" AN_EARLIER "]," TOOLS_AN "}", h,
            &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_non_null(strstr(r.body, "\"id\":\"D681PevKs\""));
    th_resp_free(&r);
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"m\",\"max_tokens\":256,\"messages\":[" AN_EARLIER ","
            "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"D681PevKs\","
            "\"name\":\"get_weather\",\"input\":{\"city\":\"Rome\"}}]},"
            "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
            "\"D681PevKs\",\"content\":\"sunny\"}]}]," TOOLS_AN "}",
            h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_non_null(strstr(r.body, "Sunny in Rome."));
    th_resp_free(&r);
    assert_null(strstr(ms_last_request(F->ms)->body, "toolu_"));
#undef AN_EARLIER
}

/* DeepSeek's thinking mode from an Anthropic client: the thinking block the client gives back
 * goes up as the tool turn's reasoning_content. */
static void test_deepseek_through_the_gateway_anthropic_client(void **state)
{
    const char *const h[] = {"anthropic-version: 2023-06-01", NULL};
    struct th_resp r;

    (void)state;
    start_preset("deepseek", "deepseek-reasoner", NULL);
    script(
        "[{\"match\":{\"nth\":1},\"reasoning\":\"Call the tool.\",\"tool_calls\":[{\"id\":"
        "\"call_00_a\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Rome\\\"}\"}]},"
        "{\"match\":{\"tool_result_contains\":\"sunny\"},\"text\":\"Sunny.\"}]");
    th_http("POST", u("/v1/messages"), "{\"model\":\"m\",\"max_tokens\":256," USER "," TOOLS_AN "}",
            h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_non_null(strstr(r.body, "Call the tool."));
    th_resp_free(&r);
    th_http("POST", u("/v1/messages"),
            "{\"model\":\"m\",\"max_tokens\":256,\"messages\":[{\"role\":\"user\",\"content\":"
            "\"weather in Paris?\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\","
            "\"thinking\":\"Call the tool.\",\"signature\":\"\"},{\"type\":\"tool_use\",\"id\":"
            "\"call_00_a\",\"name\":\"get_weather\",\"input\":{\"city\":\"Rome\"}}]},"
            "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
            "\"call_00_a\",\"content\":\"sunny\"}]}]," TOOLS_AN "}",
            h, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_non_null(strstr(r.body, "Sunny."));
    th_resp_free(&r);
    assert_non_null(
        strstr(ms_last_request(F->ms)->body, "\"reasoning_content\":\"Call the tool.\""));
}

/*
 * A thinking DeepSeek or Kimi from an OpenAI client: the SDK's message types have no
 * reasoning_content, so the tool turn it gives back has none, which both refuse while they
 * think. It goes up empty for DeepSeek and as a single space for Kimi, which counts an empty one
 * as missing; a client that kept the reasoning gets it sent as it wrote it.
 */
static void tool_turn_from_openai_client(const char *preset, const char *model, const char *none)
{
#define THINKING_CALL                                                                              \
    "{\"role\":\"user\",\"content\":\"weather in Rome?\"},"                                        \
    "{\"role\":\"assistant\",\"content\":null,%s\"tool_calls\":[{\"id\":\"call_0\","               \
    "\"type\":\"function\",\"function\":{\"name\":\"get_weather\","                                \
    "\"arguments\":\"{\\\"city\\\":\\\"Rome\\\"}\"}}]},"                                           \
    "{\"role\":\"tool\",\"tool_call_id\":\"call_0\",\"content\":\"sunny\"}"
    const char *const kept[] = {"", "\"reasoning_content\":\"Call the tool.\","};
    char body[1024], sent[64];
    struct th_resp r;

    start_preset(preset, model, NULL);
    for (size_t i = 0; i < 2; i++) {
        script("[{\"text\":\"Sunny in Rome.\"}]");
        snprintf(body, sizeof(body), "{\"model\":\"m\",\"messages\":[" THINKING_CALL "]," TOOLS "}",
                 kept[i]);
        chat(body, NULL, &r);
        if (r.status != 200)
            fail_msg("%ld %s", r.status, r.body);
        assert_non_null(strstr(r.body, "Sunny in Rome."));
        th_resp_free(&r);
        snprintf(sent, sizeof(sent), "\"reasoning_content\":\"%s\"", i ? "Call the tool." : none);
        assert_non_null(strstr(ms_last_request(F->ms)->body, sent));
    }
#undef THINKING_CALL
}

static void test_deepseek_through_the_gateway_openai_client(void **state)
{
    (void)state;
    tool_turn_from_openai_client("deepseek", "deepseek-reasoner", "");
}

static void test_kimi_through_the_gateway_openai_client(void **state)
{
    (void)state;
    tool_turn_from_openai_client("moonshot", "kimi-k2.6", " ");
}

/* What xAI's reasoning models and Groq refuse is left out and named; the rest goes up. */
static void test_refused_members_are_dropped_and_named(void **state)
{
    const struct ms_request *q;
    struct th_resp r;

    (void)state;
    start_preset("xai", "grok-4", NULL);
    script("[{\"text\":\"ok\"}]");
    chat("{\"model\":\"m\"," USER ",\"presence_penalty\":0.5,\"stop\":[\"END\"],\"seed\":3}", NULL,
         &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "presence_penalty"));
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "stop"));
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_null(json_object_get(q->json, "presence_penalty"));
    assert_null(json_object_get(q->json, "stop"));
    assert_int_equal(json_integer_value(json_object_get(q->json, "seed")), 3);
    teardown(NULL);

    start_preset("groq", "llama-3.3-70b-versatile", "/openai/v1");
    script("[{\"text\":\"ok\"}]");
    chat("{\"model\":\"m\"," USER ",\"logprobs\":true,\"top_logprobs\":2}", NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "logprobs"));
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "top_logprobs"));
    th_resp_free(&r);
    assert_null(json_object_get(ms_last_request(F->ms)->json, "logprobs"));
    teardown(NULL);

    /* Mistral's request is closed: what it does not define is left out and named, a seed goes
     * as its random_seed, and a stream's usage (which Mistral sends unasked) reaches a client
     * that asked for it, though no stream_options went up */
    start_preset("mistral", "mistral-large-latest", NULL);
    script("[{\"text\":\"ok\",\"usage\":{\"input_tokens\":12,\"output_tokens\":3}}]");
    chat("{\"model\":\"m\"," USER ",\"seed\":3,\"user\":\"u-1\",\"logprobs\":true,"
         "\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
         NULL, &r);
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "user"));
    assert_non_null(strstr(th_header(&r, "x-rein-dropped"), "logprobs"));
    assert_non_null(strstr(r.body, "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3"));
    th_resp_free(&r);
    q = ms_last_request(F->ms);
    assert_int_equal(json_integer_value(json_object_get(q->json, "random_seed")), 3);
    assert_null(json_object_get(q->json, "seed"));
    assert_null(json_object_get(q->json, "user"));
    assert_null(json_object_get(q->json, "stream_options"));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_malformed_bodies, teardown),
        cmocka_unit_test_teardown(test_oversized_body, teardown),
        cmocka_unit_test_teardown(test_unknown_members, teardown),
        cmocka_unit_test_teardown(test_chat_members_reach_a_responses_upstream, teardown),
        cmocka_unit_test_teardown(test_reasoning_crosses_wires, teardown),
        cmocka_unit_test_teardown(test_claude_output_limits, teardown),
        cmocka_unit_test_teardown(test_chat_effort_to_a_responses_upstream, teardown),
        cmocka_unit_test_teardown(test_reasoning_follows_the_upstreams_model, teardown),
        cmocka_unit_test_teardown(test_claude_adaptive_thinking_crosses_wires, teardown),
        cmocka_unit_test_teardown(test_claude_sampling_settings, teardown),
        cmocka_unit_test_teardown(test_structured_output_crosses_wires, teardown),
        cmocka_unit_test_teardown(test_structured_output_beside_an_effort, teardown),
        cmocka_unit_test_teardown(test_structured_output_refused, teardown),
        cmocka_unit_test_teardown(test_structured_answer_is_checked, teardown),
        cmocka_unit_test_teardown(test_structured_answer_streams_once_checked, teardown),
        cmocka_unit_test_teardown(test_reasoning_kept_for_a_chat_client_of_claude, teardown),
        cmocka_unit_test_teardown(test_reasoning_kept_for_a_responses_client_of_claude, teardown),
        cmocka_unit_test_teardown(test_reasoning_kept_for_a_chat_client_of_bedrock_claude,
                                  teardown),
        cmocka_unit_test_teardown(test_claude_asked_without_thinking_when_nothing_is_kept,
                                  teardown),
        cmocka_unit_test_teardown(test_reasoning_kept_within_the_bound, teardown),
        cmocka_unit_test_teardown(test_signatures_kept_for_a_chat_client_of_gemini_3, teardown),
        cmocka_unit_test_teardown(test_bad_tools, teardown),
        cmocka_unit_test_teardown(test_tools_cache_follows_the_tools_as_sent, teardown),
        cmocka_unit_test_teardown(test_known_tools_change_nothing_on_the_wire, teardown),
        cmocka_unit_test_teardown(test_waiting_requests_hold_no_worker, teardown),
        cmocka_unit_test_teardown(test_waiting_requests_queue_past_their_bound, teardown),
        cmocka_unit_test_teardown(test_bad_headers, teardown),
        cmocka_unit_test_teardown(test_text_chunk_bytes, teardown),
        cmocka_unit_test_teardown(test_text_streams_before_the_upstream_ends, teardown),
        cmocka_unit_test_teardown(test_upstream_error_after_the_stream_began, teardown),
        cmocka_unit_test_teardown(test_busy_conversation, teardown),
        cmocka_unit_test_teardown(test_client_results_join_the_ledger, teardown),
        cmocka_unit_test_teardown(test_recorded_stream_keeps_the_streamed_text, teardown),
        cmocka_unit_test_teardown(test_responses_upstream, teardown),
        cmocka_unit_test_teardown(test_metrics_by_model_and_tool, teardown),
        cmocka_unit_test_teardown(test_upstream_key_never_reaches_the_client, teardown),
        cmocka_unit_test_teardown(test_server_tool_loop_is_bounded, teardown),
        cmocka_unit_test_teardown(test_gemini_upstream_with_a_server_tool, teardown),
        cmocka_unit_test_teardown(test_bedrock_upstream_with_a_server_tool, teardown),
        cmocka_unit_test_teardown(test_stop_crosses_wires, teardown),
        cmocka_unit_test_teardown(test_gemini_upstream_reports_dropped_schema_keywords, teardown),
        cmocka_unit_test_teardown(test_models, teardown),
        cmocka_unit_test_teardown(test_anthropic_reply_thinking, teardown),
        cmocka_unit_test_teardown(test_anthropic_reply_input, teardown),
        cmocka_unit_test_teardown(test_held_events_are_flushed_before_each_wait, teardown),
        cmocka_unit_test_teardown(test_held_events_are_queued_before_the_records, teardown),
        cmocka_unit_test_teardown(test_held_frames_are_handed_before_the_records, teardown),
        cmocka_unit_test_teardown(test_held_frames_buffer_grows_with_the_stream, teardown),
        cmocka_unit_test_teardown(test_held_text_frames_are_the_events, teardown),
        cmocka_unit_test_teardown(test_anthropic_stream_keeps_thinking_and_server_blocks, teardown),
        cmocka_unit_test_teardown(test_anthropic_reply_interleaved_thinking, teardown),
        cmocka_unit_test_teardown(test_bedrock_stream_keeps_thinking_blocks, teardown),
        cmocka_unit_test_teardown(test_anthropic_same_wire_goes_up_as_sent, teardown),
        cmocka_unit_test_teardown(test_usage_keeps_the_prompt_cache, teardown),
        cmocka_unit_test_teardown(test_anthropic_beta_reaches_claude, teardown),
        cmocka_unit_test_teardown(test_client_key_is_forwarded, teardown),
        cmocka_unit_test_teardown(test_count_tokens, teardown),
        cmocka_unit_test_teardown(test_vertex_claude_upstream, teardown),
        cmocka_unit_test_teardown(test_count_across_wires, teardown),
        cmocka_unit_test_teardown(test_count_bodies_of_each_form, teardown),
        cmocka_unit_test_teardown(test_count_no_count_per_client, teardown),
        cmocka_unit_test_teardown(test_count_upstream_errors, teardown),
        cmocka_unit_test_teardown(test_count_bedrock_upstream, teardown),
        cmocka_unit_test_teardown(test_count_bedrock_upstream_errors, teardown),
        cmocka_unit_test_teardown(test_count_bad_bodies, teardown),
        cmocka_unit_test_teardown(test_anthropic_stop_sequence, teardown),
        cmocka_unit_test_teardown(test_openai_same_wire_goes_up_as_sent, teardown),
        cmocka_unit_test_teardown(test_openai_logprobs_and_annotations_reach_the_client, teardown),
        cmocka_unit_test_teardown(test_anthropic_citations_reach_the_client, teardown),
        cmocka_unit_test_teardown(test_responses_json_and_stream, teardown),
        cmocka_unit_test_teardown(test_responses_next_turn, teardown),
        cmocka_unit_test_teardown(test_responses_refusals, teardown),
        cmocka_unit_test_teardown(test_responses_to_anthropic, teardown),
        cmocka_unit_test_teardown(test_responses_members_in_the_chat_wire, teardown),
        cmocka_unit_test_teardown(test_responses_reasoning_items_go_back, teardown),
        cmocka_unit_test_teardown(test_responses_error_after_the_stream_began, teardown),
        cmocka_unit_test_teardown(test_same_wire_reask_adds_after_the_messages_as_sent, teardown),
        cmocka_unit_test_teardown(test_custom_tools_chat, teardown),
        cmocka_unit_test_teardown(test_responses_custom_tools, teardown),
        cmocka_unit_test_teardown(test_custom_tools_native_on_responses, teardown),
        cmocka_unit_test_teardown(test_responses_choice_only_that_api_has, teardown),
        cmocka_unit_test_teardown(test_responses_kept_for_the_next_turn, teardown),
        cmocka_unit_test_teardown(test_responses_kept_read_and_deleted, teardown),
        cmocka_unit_test_teardown(test_responses_in_the_background, teardown),
        cmocka_unit_test_teardown(test_responses_background_cancel_and_bounds, teardown),
        cmocka_unit_test_teardown(test_responses_background_stream, teardown),
        cmocka_unit_test_teardown(test_responses_background_stream_resumed, teardown),
        cmocka_unit_test_teardown(test_responses_background_stream_ends, teardown),
        cmocka_unit_test_teardown(test_responses_hosted_tools_to_a_responses_upstream, teardown),
        cmocka_unit_test_teardown(test_other_wire_refuses_what_it_cannot_carry, teardown),
        cmocka_unit_test_teardown(test_media_chat_image_to_anthropic, teardown),
        cmocka_unit_test_teardown(test_media_chat_image_to_gemini, teardown),
        cmocka_unit_test_teardown(test_media_chat_image_to_responses, teardown),
        cmocka_unit_test_teardown(test_media_chat_pdf_to_anthropic_audio_to_gemini, teardown),
        cmocka_unit_test_teardown(test_media_responses_image_to_anthropic, teardown),
        cmocka_unit_test_teardown(test_media_anthropic_image_to_openai, teardown),
        cmocka_unit_test_teardown(test_media_gemini_inline_to_anthropic, teardown),
        cmocka_unit_test_teardown(test_media_refusals, teardown),
        cmocka_unit_test_teardown(test_tool_media_anthropic_to_openai_and_gemini, teardown),
        cmocka_unit_test_teardown(test_tool_media_responses_output_crosses, teardown),
        cmocka_unit_test_teardown(test_tool_media_gemini_response_crosses, teardown),
        cmocka_unit_test_teardown(test_tool_media_refusals, teardown),
        cmocka_unit_test_teardown(test_held_frames_are_handed_before_each_wait, teardown),
        cmocka_unit_test_teardown(test_upstream_headers_reach_the_client, teardown),
        cmocka_unit_test_teardown(test_upstream_429_passes_its_headers, teardown),
        cmocka_unit_test_teardown(test_anthropic_upstream_headers_and_request_id, teardown),
        cmocka_unit_test_teardown(test_gemini_client_valid_call, teardown),
        cmocka_unit_test_teardown(test_gemini_client_repair_and_reask, teardown),
        cmocka_unit_test_teardown(test_gemini_client_pass_and_error, teardown),
        cmocka_unit_test_teardown(test_gemini_client_text_call_and_parallel_calls, teardown),
        cmocka_unit_test_teardown(test_gemini_client_upstream_429, teardown),
        cmocka_unit_test_teardown(test_gemini_client_key_is_forwarded, teardown),
        cmocka_unit_test_teardown(test_gemini_client_to_anthropic, teardown),
        cmocka_unit_test_teardown(test_gemini_client_to_gemini_keeps_signatures, teardown),
        cmocka_unit_test_teardown(test_gemini_client_dropped_and_refused, teardown),
        cmocka_unit_test_teardown(test_gemini_client_bad_bodies, teardown),
        cmocka_unit_test_teardown(test_gemini_client_models_and_keys, teardown),
        cmocka_unit_test_teardown(test_mistral_through_the_gateway_openai_client, teardown),
        cmocka_unit_test_teardown(test_mistral_through_the_gateway_anthropic_client, teardown),
        cmocka_unit_test_teardown(test_deepseek_through_the_gateway_anthropic_client, teardown),
        cmocka_unit_test_teardown(test_deepseek_through_the_gateway_openai_client, teardown),
        cmocka_unit_test_teardown(test_kimi_through_the_gateway_openai_client, teardown),
        cmocka_unit_test_teardown(test_refused_members_are_dropped_and_named, teardown),
    };

    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
