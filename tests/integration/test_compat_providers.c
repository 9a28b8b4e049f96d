/*
 * The OpenAI-compatible providers of decisions 0105 and 0108 (mistral, deepseek, moonshot, zai,
 * xai, openrouter, groq) over real HTTP: each preset runs a tool loop of two steps against the
 * scripted model server, which refuses what each of those APIs refuses in its own words
 * (model_server_compat.c): a Mistral history holding another provider's call ids or a user
 * message right after tool results, a DeepSeek or Kimi thinking-mode tool turn without its
 * reasoning_content, a grok reasoning model's penalties, Groq's logprobs. Also the presets' base URLs and key variables, and Groq's
 * in-stream tool_use_failed error as recorded.
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include "provider_fixture.h"

#include <unistd.h>

static json_t *weather_schema(void)
{
    return json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", "city", "type",
                     "string", "required", "city");
}

/* The fixture with preset and model, pointed at the model server (under path, "/v1" when NULL),
 * with the weather tool offered. */
static void start(struct pfx *f, const char *preset, const char *model, const char *path)
{
    char base[128];
    json_t *s = weather_schema();

    pfx_start(f, "sk-test", "5");
    assert_rein_ok(rein_provider_config_set(f->cfg, "provider", preset, NULL), NULL);
    assert_rein_ok(rein_provider_config_set(f->cfg, "model", model, NULL), NULL);
    assert_rein_ok(rein_provider_config_set_api_key(f->cfg, "sk-test"), NULL);
    snprintf(base, sizeof(base), "%s%s", ms_url(f->ms), path ? path : "/v1");
    assert_rein_ok(rein_provider_config_set_base_url(f->cfg, base), NULL);
    pfx_provider(f);
    assert_rein_ok(rein_model_request_add_tool(f->req, "get_weather", "Weather for a city", s),
                   NULL);
    json_decref(s);
}

/* Appends a message given as JSON text to the history. */
static void add(struct pfx *f, const char *json)
{
    json_t *m = json_loads(json, 0, NULL);
    rein_error err;

    assert_non_null(m);
    assert_rein_ok(rein_history_append(f->h, m, &err), &err);
    json_decref(m);
}

/* Sends, failing the test with the upstream's answer when it is not a 200. */
static void send_ok(struct pfx *f)
{
    if (pfx_send(f) != REIN_OK)
        fail_msg("send: %s", f->err.msg);
}

/* Runs the tool loop's two steps: the scripted call (its id) is answered with a result, then
 * the scripted text ends the loop. */
static void two_steps(struct pfx *f, const char *id, const char *reasoning)
{
    char reply[512];

    snprintf(reply, sizeof(reply),
             "[{\"match\": {\"nth\": 1}, %s%s%s \"tool_calls\": [{\"id\": \"%s\", \"name\": "
             "\"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Rome\\\"}\"}]}, "
             "{\"match\": {\"tool_result_contains\": \"sunny\"}, \"text\": \"Sunny in Rome.\"}]",
             reasoning ? "\"reasoning\": \"" : "", reasoning ? reasoning : "",
             reasoning ? "\"," : "", id);
    pfx_script(f, reply);
    send_ok(f);
    assert_int_equal(rein_model_response_finish(f->resp), REIN_FINISH_TOOL_CALLS);
    assert_string_equal(rein_model_call_id(rein_model_response_call(f->resp, 0)), id);
    assert_rein_ok(rein_history_add_response(f->h, f->resp), NULL);
    assert_rein_ok(rein_history_add_tool_result(f->h, id, "get_weather", "sunny, 24C", false),
                   NULL);
    send_ok(f);
    assert_string_equal(rein_model_response_text(f->resp), "Sunny in Rome.");
}

/* An earlier turn of the conversation made on another provider: its call ids are theirs. */
#define EARLIER_TURN(f, id)                                                                        \
    do {                                                                                           \
        add((f), "{\"role\": \"user\", \"content\": \"Weather in Oslo?\"}");                       \
        add((f),                                                                                   \
            "{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": \"" id         \
            "\", \"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}]}");  \
        add((f), "{\"role\": \"tool\", \"tool_call_id\": \"" id                                    \
                 "\", \"name\": \"get_weather\", \"content\": \"rain, 8C\"}");                     \
    } while (0)

/*
 * Mistral: a conversation whose earlier turn holds OpenAI's and Anthropic's call ids, with the
 * user's next question right after the tool results, goes on through a tool loop of two steps.
 * Every id Mistral sees is nine letters and digits, the same on the call and on its result, and
 * an assistant message stands between the tool results and the user's question.
 */
static void test_mistral_tool_loop(void **state)
{
    const struct ms_request *r;
    const json_t *msgs;
    struct pfx f;
    const char *a, *b;

    (void)state;
    start(&f, "mistral", "mistral-large-latest", NULL);
    EARLIER_TURN(&f, "call_Xq2hv3ZtN8pWm1");
    add(&f, "{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": "
            "\"toolu_01A09q90qw90lq917835lq9\", \"name\": \"get_weather\", \"arguments\": "
            "\"{\\\"city\\\": \\\"Bergen\\\"}\"}]}");
    add(&f, "{\"role\": \"tool\", \"tool_call_id\": \"toolu_01A09q90qw90lq917835lq9\", "
            "\"content\": \"fog\"}");
    add(&f, "{\"role\": \"user\", \"content\": \"And in Rome?\"}");
    assert_rein_ok(rein_model_request_set_tool_choice(f.req, "required"), NULL);
    two_steps(&f, "D681PevKs", NULL);

    r = ms_request(f.ms, 0);
    msgs = json_object_get(r->json, "messages");
    /* the OpenAI id and its result agree, in Mistral's form */
    a = json_string_value(json_object_get(
        json_array_get(json_object_get(json_array_get(msgs, 1), "tool_calls"), 0), "id"));
    b = json_string_value(json_object_get(json_array_get(msgs, 2), "tool_call_id"));
    assert_non_null(a);
    assert_int_equal(strlen(a), 9);
    assert_string_equal(a, b);
    /* the bridge between the last tool result and the user's question */
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 5), "role")),
                        "assistant");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 6), "role")),
                        "user");
    assert_string_equal(json_string_value(json_object_get(r->json, "tool_choice")), "any");
    /* Mistral's own id goes back as it came */
    r = ms_request(f.ms, 1);
    assert_non_null(strstr(r->body, "\"tool_call_id\":\"D681PevKs\""));
    /* the same mapping in the second request as in the first: no state was needed */
    assert_non_null(strstr(r->body, a));
    pfx_stop(&f);
}

/* A tool's image goes to Mistral in a user message after the results (decision 0098), with
 * an assistant message before it, whether the history ends there or goes on. */
static void test_mistral_tool_media(void **state)
{
    const struct ms_request *r;
    const json_t *msgs;
    struct pfx f;
    json_t *att;

    (void)state;
    start(&f, "mistral", "mistral-medium-latest", NULL);
    EARLIER_TURN(&f, "call_Xq2hv3ZtN8pWm1");
    add(&f, "{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": \"call_map\", "
            "\"name\": \"get_weather\", \"arguments\": \"{}\"}]}");
    att = json_pack("[{s:s, s:s, s:s, s:i}]", "type", "image", "mime_type", "image/png", "data",
                    "iVBORw0KGgo=", "index", 0);
    assert_rein_ok(
        rein_history_add_tool_result_media(f.h, "call_map", "get_weather", "a map", false, att),
        NULL); /* att taken */
    pfx_script(&f, "[{\"text\": \"A map of rain.\"}]");
    send_ok(&f);
    r = ms_request(f.ms, 0);
    msgs = json_object_get(r->json, "messages");
    assert_int_equal(json_array_size(msgs), 7);
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 5), "role")),
                        "assistant");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 6), "role")),
                        "user");
    pfx_stop(&f);
}

/*
 * Mistral's reasoning models (Magistral; others asked for a reasoning_effort) write their
 * answer as content chunks: the thinking in a "thinking" chunk, the answer in "text" chunks.
 * Streamed and whole, rein reads both, and the usage Mistral's last chunk carries unasked
 * (the preset sends no stream_options, which Mistral answers 422 to). A seed given as an
 * extra member goes as Mistral's random_seed.
 */
static void test_magistral_thinks_in_content_chunks(void **state)
{
    static const char reply[] =
        "[{\"reasoning\": [\"The user \", \"asks for Rome.\"], \"text\": [\"Sunny \", "
        "\"in Rome.\"], \"usage\": {\"input_tokens\": 31, \"output_tokens\": 9}, \"times\": 2}]";
    const struct ms_request *r;
    json_t *extra = json_pack("{s:i}", "seed", 7);
    struct pfx f;

    (void)state;
    start(&f, "mistral", "magistral-medium-latest", NULL);
    add(&f, "{\"role\": \"user\", \"content\": \"Weather in Rome?\"}");
    rein_model_request_set_extra(f.req, extra);
    json_decref(extra);
    pfx_script(&f, reply);
    for (int whole = 0; whole < 2; whole++) {
        rein_model_request_set_stream(f.req, whole == 0);
        send_ok(&f);
        assert_string_equal(rein_model_response_text(f.resp), "Sunny in Rome.");
        assert_string_equal(rein_model_response_reasoning(f.resp), "The user asks for Rome.");
        assert_int_equal(rein_model_response_input_tokens(f.resp), 31);
        assert_int_equal(rein_model_response_output_tokens(f.resp), 9);
        r = ms_request(f.ms, (size_t)whole);
        assert_null(json_object_get(r->json, "stream_options"));
        assert_null(json_object_get(r->json, "seed"));
        assert_int_equal(json_integer_value(json_object_get(r->json, "random_seed")), 7);
    }
    pfx_stop(&f);
}

/* What the generic preset sends Mistral is refused, as Mistral refuses it (the test above
 * fails this way without the preset): a stream's stream_options, Mistral's 422 read into words
 * a person can act on, then the foreign call ids. */
static void test_mistral_refuses_foreign_ids(void **state)
{
    struct pfx f;

    (void)state;
    start(&f, "openai-compatible", "mistral-large-latest", NULL);
    EARLIER_TURN(&f, "call_Xq2hv3ZtN8pWm1");
    add(&f, "{\"role\": \"assistant\", \"content\": \"It rains.\"}");
    add(&f, "{\"role\": \"user\", \"content\": \"And in Rome?\"}");
    pfx_script(&f, "[{\"text\": \"never\"}]");
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_non_null(strstr(f.err.msg, "HTTP 422"));
    assert_non_null(strstr(f.err.msg, "body.stream_options: Extra inputs are not permitted"));
    rein_model_request_set_stream(f.req, false);
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_non_null(strstr(f.err.msg, "Tool call id was call_Xq2hv3ZtN8pWm1 but must be a-z, "
                                      "A-Z, 0-9, with a length of 9."));
    pfx_stop(&f);
}

/*
 * A thinking model that refuses a tool turn without its reasoning_content: each one kept goes
 * back in every later request, and a tool turn without any kept (an earlier provider's) carries
 * none_sent.
 */
static void reasoning_goes_back(const char *preset, const char *model, const char *id,
                                const char *none_sent)
{
    const struct ms_request *r;
    const json_t *msgs;
    struct pfx f;

    start(&f, preset, model, NULL);
    EARLIER_TURN(&f, "call_00_9V0vrf86Pc9aelHCJMZqnJBo");
    add(&f, "{\"role\": \"assistant\", \"content\": \"It rains in Oslo.\"}");
    add(&f, "{\"role\": \"user\", \"content\": \"And in Rome?\"}");
    two_steps(&f, id, "The user wants Rome's weather: call the tool.");
    r = ms_request(f.ms, 1);
    msgs = json_object_get(r->json, "messages");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(msgs, 1), "reasoning_content")),
        none_sent);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(msgs, 5), "reasoning_content")),
        "The user wants Rome's weather: call the tool.");
    assert_null(json_object_get(r->json, "thinking"));
    pfx_stop(&f);
}

/* DeepSeek's thinking mode: an empty reasoning_content where none was kept. */
static void test_deepseek_reasoning_in_tool_loop(void **state)
{
    (void)state;
    reasoning_goes_back("deepseek", "deepseek-reasoner", "call_00_Rome", "");
}

/* Without its preset, a thinking model's second step is refused in its provider's words. */
static void refused_without_preset(const char *model, const char *reasoning, const char *words)
{
    char reply[256];
    struct pfx f;

    start(&f, "openai-compatible", model, NULL);
    snprintf(reply, sizeof(reply),
             "[{%s\"tool_calls\": [{\"id\": \"call_00_a\", \"name\": \"get_weather\", "
             "\"arguments\": \"{}\"}]}, {\"text\": \"no\"}]",
             reasoning);
    pfx_script(&f, reply);
    assert_rein_ok(rein_history_add_user(f.h, "Weather in Rome?"), NULL);
    send_ok(&f);
    assert_rein_ok(rein_history_add_response(f.h, f.resp), NULL);
    assert_rein_ok(rein_history_add_tool_result(f.h, "call_00_a", "get_weather", "sunny", false),
                   NULL);
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_non_null(strstr(f.err.msg, words));
    pfx_stop(&f);
}

static void test_deepseek_refuses_a_tool_turn_without_reasoning(void **state)
{
    (void)state;
    refused_without_preset("deepseek-reasoner", "\"reasoning\": \"think\", ",
                           "must be passed back");
}

/* The reasoning "none" to a Kimi model: thinking {"type": "disabled"} when it can turn it off. */
static void kimi_asked_none(const char *model, bool turns_off)
{
    const struct ms_request *r;
    const char *type;
    struct pfx f;

    start(&f, "moonshot", model, NULL);
    rein_model_request_set_reasoning(f.req, REIN_REASONING_NONE, 0);
    assert_rein_ok(rein_history_add_user(f.h, "Weather in Rome?"), NULL);
    two_steps(&f, "get_weather:0", NULL);
    r = ms_request(f.ms, 1);
    type = json_string_value(json_object_get(json_object_get(r->json, "thinking"), "type"));
    if (turns_off)
        assert_string_equal(type ? type : "(none)", "disabled");
    else
        assert_null(type);
    assert_null(json_object_get(r->json, "reasoning_effort"));
    pfx_stop(&f);
}

/*
 * Moonshot's Kimi from K2.5 on thinks unless told not to, and then refuses a tool turn whose
 * reasoning_content is missing or empty: each one kept goes back, and a turn without one (an
 * earlier provider's) carries a single space. The reasoning "none" turns thinking off in
 * Kimi's words, but not for a model named for thinking.
 */
static void test_kimi_reasoning_in_tool_loop(void **state)
{
    (void)state;
    reasoning_goes_back("moonshot", "kimi-k2.6", "get_weather:0", " ");
    kimi_asked_none("kimi-k2.5", true);
    kimi_asked_none("kimi-k2-thinking", false);
}

static void test_kimi_refuses_a_tool_turn_without_reasoning(void **state)
{
    (void)state;
    refused_without_preset("kimi-k2.6", "",
                           "reasoning_content is missing in assistant tool call message at "
                           "index 1");
}

/* Z.ai's GLM thinks between tool calls and asks for the thinking back with the results. */
static void test_glm_reasoning_goes_back(void **state)
{
    const struct ms_request *r;
    const char *back;
    struct pfx f;

    (void)state;
    start(&f, "zai", "glm-4.7", "/api/paas/v4");
    assert_rein_ok(rein_history_add_user(f.h, "Weather in Rome?"), NULL);
    two_steps(&f, "call_-8063385936612946784", "Rome: call the weather tool.");
    r = ms_request(f.ms, 1);
    assert_string_equal(r->path, "/api/paas/v4/chat/completions");
    back = json_string_value(json_object_get(
        json_array_get(json_object_get(r->json, "messages"), 1), "reasoning_content"));
    assert_non_null(back);
    assert_string_equal(back, "Rome: call the weather tool.");
    pfx_stop(&f);
}

/* xAI, OpenRouter and Groq: the loop at each preset's base URL, with its key. */
static void test_xai_openrouter_groq_tool_loops(void **state)
{
    static const struct {
        const char *preset, *model, *path, *id;
    } cases[] = {
        {"xai", "grok-4", NULL, "call_61432818"},
        {"openrouter", "mistralai/mistral-medium-3", "/api/v1", "Xk2J9pL0q"},
        {"groq", "openai/gpt-oss-120b", "/openai/v1", "fc_7d1a0e9b"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pfx f;
        const struct ms_request *r;
        char want[64];
        start(&f, cases[i].preset, cases[i].model, cases[i].path);
        assert_rein_ok(rein_history_add_user(f.h, "Weather in Rome?"), NULL);
        two_steps(&f, cases[i].id, NULL);
        r = ms_request(f.ms, 1);
        snprintf(want, sizeof(want), "%s/chat/completions", cases[i].path ? cases[i].path : "/v1");
        assert_string_equal(r->path, want);
        pfx_stop(&f);
    }
}

/* A grok reasoning model refuses presence_penalty; Groq logprobs (each a 400 rein reports). */
static void test_xai_and_groq_refusals(void **state)
{
    struct pfx f;
    json_t *extra;

    (void)state;
    start(&f, "xai", "grok-4", NULL);
    pfx_script(&f, "[{\"text\": \"never\"}]");
    extra = json_pack("{s:f}", "presence_penalty", 0.5);
    rein_model_request_set_extra(f.req, extra);
    json_decref(extra);
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_non_null(strstr(f.err.msg, "presence_penalty"));
    assert_true(rein_provider_refuses(f.p, f.req, "presence_penalty"));
    assert_true(rein_provider_refuses(f.p, f.req, "reasoning_effort"));
    pfx_stop(&f);

    start(&f, "groq", "llama-3.3-70b-versatile", "/openai/v1");
    assert_true(rein_provider_refuses(f.p, f.req, "logprobs"));
    assert_false(rein_provider_refuses(f.p, f.req, "temperature"));
    pfx_stop(&f);
}

/* Groq's in-stream tool_use_failed error (a recording): the reply is an error, not a call. */
static void test_groq_tool_use_failed_stream(void **state)
{
    static const char path[] =
        "/work/shared/fixtures/groq/pydantic-groq-tool-use-failed-stream-error.sse";
    struct pfx f;
    char reply[512];

    (void)state;
    if (access(path, R_OK) != 0)
        skip();
    start(&f, "groq", "llama-3.3-70b-versatile", "/openai/v1");
    snprintf(reply, sizeof(reply),
             "[{\"body_file\": \"%s\", \"content_type\": \"text/event-stream\"}]", path);
    pfx_script(&f, reply);
    assert_rein_ok(rein_history_add_user(f.h, "Weather in Rome?"), NULL);
    rein_model_request_set_stream(f.req, true);
    assert_int_equal(pfx_send(&f), REIN_EPROVIDER);
    assert_non_null(f.resp);
    assert_string_equal(
        json_string_value(json_object_get(rein_model_response_error(f.resp), "code")),
        "tool_use_failed");
    assert_int_equal(rein_model_response_call_count(f.resp), 0);
    pfx_stop(&f);
}

/* OpenRouter's error says what the upstream said in metadata.raw: rein's message carries it. */
static void test_openrouter_error_names_the_upstreams_words(void **state)
{
    static const char path[] = "/work/shared/fixtures/openrouter/pydantic-openrouter-429.json";
    struct pfx f;
    char reply[512];

    (void)state;
    if (access(path, R_OK) != 0)
        skip();
    start(&f, "openrouter", "google/gemini-2.0-flash-exp:free", "/api/v1");
    snprintf(reply, sizeof(reply),
             "[{\"status\": 429, \"body_file\": \"%s\", \"content_type\": "
             "\"application/json\"}]",
             path);
    pfx_script(&f, reply);
    rein_model_request_set_retries(f.req, 0);
    assert_rein_ok(rein_history_add_user(f.h, "hi"), NULL);
    assert_int_equal(pfx_send(&f), REIN_EHTTP);
    assert_non_null(strstr(f.err.msg, "Provider returned error: google/gemini-2.0-flash-exp:free "
                                      "is temporarily rate-limited upstream"));
    pfx_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mistral_tool_loop),
        cmocka_unit_test(test_mistral_tool_media),
        cmocka_unit_test(test_mistral_refuses_foreign_ids),
        cmocka_unit_test(test_magistral_thinks_in_content_chunks),
        cmocka_unit_test(test_deepseek_reasoning_in_tool_loop),
        cmocka_unit_test(test_deepseek_refuses_a_tool_turn_without_reasoning),
        cmocka_unit_test(test_kimi_reasoning_in_tool_loop),
        cmocka_unit_test(test_kimi_refuses_a_tool_turn_without_reasoning),
        cmocka_unit_test(test_glm_reasoning_goes_back),
        cmocka_unit_test(test_xai_openrouter_groq_tool_loops),
        cmocka_unit_test(test_xai_and_groq_refusals),
        cmocka_unit_test(test_groq_tool_use_failed_stream),
        cmocka_unit_test(test_openrouter_error_names_the_upstreams_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
