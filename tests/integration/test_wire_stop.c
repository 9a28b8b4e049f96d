/*
 * Generation settings each wire names its own way, over real HTTP against the scripted model
 * server: the neutral stop sequences of a request (rein_model_request_set_stop) arrive under
 * each wire's own member (OpenAI chat "stop", Anthropic "stop_sequences", Ollama
 * "options.stop", Gemini "generationConfig.stopSequences", Bedrock
 * "inferenceConfig.stopSequences", DashScope native "parameters.stop") and nowhere else; the
 * Responses API, which has no such field, and counts past a wire's limit are refused before
 * anything is sent, naming the wire. And the schema keywords Gemini's Schema cannot carry come
 * back to the caller (rein_model_request_dropped), not only to the log. top_p goes the same way
 * as the stop sequences, and so does the reasoning setting (rein_model_request_set_reasoning,
 * decision 0095): an effort word on OpenAI's wires, a thinking budget on Anthropic's and
 * Gemini's.
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include "provider_fixture.h"

static void fx_start(struct pfx *f)
{
    unsetenv("AWS_BEARER_TOKEN_BEDROCK");
    pfx_start(f, "sk-test", "5");
    assert_rein_ok(rein_history_add_user(f->h, "Count to ten."), NULL);
}

/* The provider of preset pointed at the model server, at the base URL its SDKs take. */
static void fx_provider(struct pfx *f, const char *preset)
{
    char base[160];
    const char *url = ms_url(f->ms);

    if (!strcmp(preset, "openai") || !strcmp(preset, "openai-responses"))
        url = ms_openai_url(f->ms);
    else if (!strcmp(preset, "gemini"))
        url = (snprintf(base, sizeof(base), "%s/v1beta", ms_url(f->ms)), base);
    else if (!strcmp(preset, "dashscope-native"))
        url = (snprintf(base, sizeof(base), "%s/api/v1", ms_url(f->ms)), base);
    assert_rein_ok(rein_provider_config_set(f->cfg, "provider", preset, NULL), NULL);
    assert_rein_ok(rein_provider_config_set_model(f->cfg, "test-model"), NULL);
    assert_rein_ok(rein_provider_config_set_api_key(f->cfg, "sk-test"), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f->cfg, url), NULL);
    f->p = rein_provider_new(f->cfg, &f->err);
    if (!f->p)
        fail_msg("provider %s: %s", preset, f->err.msg);
}

static const char *const STOPS[] = {"\n\nUser:", "END", "\"quoted\""};

/* top_p under each wire's own name, and nowhere else. */
static void test_each_wire_sends_top_p_under_its_own_name(void **state)
{
    static const struct {
        const char *preset, *at;
    } cases[] = {
        {"openai", "top_p"},
        {"openai-responses", "top_p"},
        {"anthropic", "top_p"},
        {"ollama", "options.top_p"},
        {"gemini", "generationConfig.topP"},
        {"bedrock", "inferenceConfig.topP"},
        {"dashscope-native", "parameters.top_p"},
    };

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(cases); i++) {
        struct pfx f;
        const struct ms_request *q;
        fx_start(&f);
        fx_provider(&f, cases[i].preset);
        rein_model_request_set_top_p(f.req, 0.25);
        rein_model_request_set_stream(f.req, false);
        assert_rein_ok(ms_script(f.ms, "[{\"text\": \"ok\"}]", false, &f.err), &f.err);
        if (pfx_send(&f) != REIN_OK)
            fail_msg("%s: %s", cases[i].preset, f.err.msg);
        q = ms_request(f.ms, 0);
        if (json_real_value(test_json_at(q->json, cases[i].at)) != 0.25)
            fail_msg("%s: no %s of 0.25: %s", cases[i].preset, cases[i].at, q->body);
        if (strchr(cases[i].at, '.') && json_object_get(q->json, "top_p"))
            fail_msg("%s: a top-level top_p: %s", cases[i].preset, q->body);
        pfx_stop(&f);
    }
}

/* ---------------------------------------------------------------------------------------
 * Each wire's own member, exactly, and no other
 */

static void test_each_wire_sends_stop_sequences_under_its_own_name(void **state)
{
    static const struct {
        const char *preset, *at, *absent[3];
    } cases[] = {
        {"openai", "stop", {"stop_sequences", "options", "parameters"}},
        {"anthropic", "stop_sequences", {"stop", "options", NULL}},
        {"ollama", "options.stop", {"stop", "stop_sequences", NULL}},
        {"gemini", "generationConfig.stopSequences", {"stop", "stop_sequences", NULL}},
        {"bedrock", "inferenceConfig.stopSequences", {"stop", "stop_sequences", NULL}},
        {"dashscope-native", "parameters.stop", {"stop", "stop_sequences", NULL}},
    };
    json_t *want = json_pack("[sss]", STOPS[0], STOPS[1], STOPS[2]);

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(cases); i++) {
        struct pfx f;
        const struct ms_request *q;
        fx_start(&f);
        fx_provider(&f, cases[i].preset);
        assert_rein_ok(rein_model_request_set_stop(f.req, STOPS, 3), NULL);
        rein_model_request_set_max_tokens(f.req, 64);
        rein_model_request_set_stream(f.req, false);
        assert_rein_ok(ms_script(f.ms, "[{\"text\": \"1 2 3\"}]", false, &f.err), &f.err);
        if (pfx_send(&f) != REIN_OK)
            fail_msg("%s: %s", cases[i].preset, f.err.msg);
        assert_string_equal(rein_model_response_text(f.resp), "1 2 3");
        q = ms_request(f.ms, 0);
        assert_non_null(q);
        assert_non_null(q->json);
        if (!json_equal(test_json_at(q->json, cases[i].at), want))
            fail_msg("%s: %s is not the three stop sequences in order: %s", cases[i].preset,
                     cases[i].at, q->body);
        for (size_t j = 0; j < 3 && cases[i].absent[j]; j++) {
            /* Ollama's options and DashScope's parameters hold the stop; their wire's other
             * names must not appear at the top level. */
            if (strchr(cases[i].at, '.') &&
                !strncmp(cases[i].at, cases[i].absent[j], strlen(cases[i].absent[j])))
                continue;
            if (json_object_get(q->json, cases[i].absent[j]))
                fail_msg("%s: a top-level \"%s\" was sent: %s", cases[i].preset, cases[i].absent[j],
                         q->body);
        }
        pfx_stop(&f);
    }
    json_decref(want);
}

/* Without stop sequences no wire writes an empty member for them. */
static void test_no_stop_sequences_no_member(void **state)
{
    static const char *const presets[] = {"openai", "ollama", "gemini", "bedrock"};

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(presets); i++) {
        struct pfx f;
        const struct ms_request *q;
        fx_start(&f);
        fx_provider(&f, presets[i]);
        rein_model_request_set_stream(f.req, false);
        assert_rein_ok(rein_model_request_set_stop(f.req, STOPS, 2), NULL);
        assert_rein_ok(rein_model_request_set_stop(f.req, NULL, 0), NULL);
        assert_rein_ok(ms_script(f.ms, "[{\"text\": \"ok\"}]", false, &f.err), &f.err);
        assert_rein_ok(pfx_send(&f), &f.err);
        q = ms_request(f.ms, 0);
        assert_non_null(q);
        if (strstr(q->body, "\"stop"))
            fail_msg("%s: a stop member without stop sequences: %s", presets[i], q->body);
        pfx_stop(&f);
    }
}

/* ---------------------------------------------------------------------------------------
 * Refusals before anything is sent
 */

static void test_responses_wire_refuses_stop_sequences_naming_the_wire(void **state)
{
    struct pfx f;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "openai-responses");
    assert_rein_ok(rein_model_request_set_stop(f.req, STOPS, 1), NULL);
    assert_int_equal(rein_provider_prepare(f.p, f.req, &f.err), REIN_EINVAL);
    assert_non_null(strstr(f.err.msg, "openai-responses"));
    assert_non_null(strstr(f.err.msg, "no stop sequences"));
    assert_int_equal(pfx_send(&f), REIN_EINVAL);
    assert_non_null(strstr(f.err.msg, "openai-responses"));
    assert_null(f.resp);
    assert_int_equal(ms_request_count(f.ms), 0);
    /* Without them the same request goes. */
    assert_rein_ok(rein_model_request_set_stop(f.req, NULL, 0), NULL);
    rein_model_request_set_stream(f.req, false);
    assert_rein_ok(ms_script(f.ms, "[{\"text\": \"fine\"}]", false, &f.err), &f.err);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_string_equal(rein_model_response_text(f.resp), "fine");
    pfx_stop(&f);
}

static void test_counts_past_a_wires_limit_are_refused(void **state)
{
    static const char *const many[] = {"a", "b", "c", "d", "e", "f"};
    static const struct {
        const char *preset;
        size_t max;
    } cases[] = {{"openai", 4}, {"gemini", 5}};

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(cases); i++) {
        struct pfx f;
        char want[64];
        fx_start(&f);
        fx_provider(&f, cases[i].preset);
        rein_model_request_set_stream(f.req, false);
        assert_rein_ok(rein_model_request_set_stop(f.req, many, cases[i].max + 1), NULL);
        assert_int_equal(pfx_send(&f), REIN_EINVAL);
        snprintf(want, sizeof(want), "at most %zu stop sequences", cases[i].max);
        if (!strstr(f.err.msg, want) || !strstr(f.err.msg, rein_provider_wire(f.p)))
            fail_msg("%s: %s", cases[i].preset, f.err.msg);
        assert_int_equal(ms_request_count(f.ms), 0);
        /* At the limit the request goes, and the server (checking as the service does)
         * takes it. */
        assert_rein_ok(rein_model_request_set_stop(f.req, many, cases[i].max), NULL);
        assert_rein_ok(ms_script(f.ms, "[{\"text\": \"ok\"}]", false, &f.err), &f.err);
        assert_rein_ok(pfx_send(&f), &f.err);
        pfx_stop(&f);
    }
}

static void test_set_stop_refuses_empty_and_too_many(void **state)
{
    rein_model_request *req = rein_model_request_new();
    const char *empty[] = {"ok", ""};
    const char *null_one[] = {"ok", NULL};
    const char *one[] = {"x"};

    (void)state;
    assert_int_equal(rein_model_request_set_stop(req, empty, 2), REIN_EINVAL);
    assert_int_equal(rein_model_request_set_stop(req, null_one, 2), REIN_EINVAL);
    assert_int_equal(rein_model_request_set_stop(req, NULL, 1), REIN_EINVAL);
    assert_int_equal(rein_model_request_set_stop(req, one, REIN_STOP_MAX + 1), REIN_EINVAL);
    assert_rein_ok(rein_model_request_set_stop(req, one, 1), NULL);
    rein_model_request_free(req);
}

/* ---------------------------------------------------------------------------------------
 * What Gemini's Schema cannot carry comes back to the caller
 */

static json_t *weather_schema(void)
{
    static const char schema[] =
        "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"city\":{\"type\":"
        "\"string\",\"minLength\":1},\"days\":{\"type\":[\"integer\",\"null\"],"
        "\"exclusiveMinimum\":0},\"when\":{\"type\":\"string\",\"format\":\"uri\"}},\"required\":"
        "[\"city\"]}";

    return rein_json_parse(schema, strlen(schema), 0, NULL);
}

static bool has_drop(const json_t *list, const char *tool, const char *keyword, const char *at)
{
    size_t i;
    const json_t *e;

    json_array_foreach(list, i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "tool")), tool) &&
            !strcmp(json_string_value(json_object_get(e, "keyword")), keyword) &&
            !strcmp(json_string_value(json_object_get(e, "at")), at) &&
            json_string_length(json_object_get(e, "reason")) > 0)
            return true;
    }
    return false;
}

static void test_gemini_dropped_keywords_are_returned(void **state)
{
    struct pfx f;
    json_t *s = weather_schema();
    const json_t *dropped;
    const struct ms_request *q;

    (void)state;
    fx_start(&f);
    fx_provider(&f, "gemini");
    assert_rein_ok(rein_model_request_add_tool(f.req, "get_weather", "Weather", s), NULL);
    assert_null(rein_model_request_dropped(f.req));
    assert_rein_ok(rein_provider_prepare(f.p, f.req, &f.err), &f.err);
    dropped = rein_model_request_dropped(f.req);
    assert_non_null(dropped);
    assert_true(has_drop(dropped, "get_weather", "additionalProperties", "/"));
    assert_true(has_drop(dropped, "get_weather", "exclusiveMinimum", "/properties/days"));
    assert_true(has_drop(dropped, "get_weather", "format", "/properties/when"));
    assert_int_equal(json_array_size(dropped), 3);
    /* The send that follows uses the same encoding and keeps the list. */
    rein_model_request_set_stream(f.req, false);
    assert_rein_ok(ms_script(f.ms, "[{\"text\": \"ok\"}]", false, &f.err), &f.err);
    assert_rein_ok(pfx_send(&f), &f.err);
    assert_int_equal(json_array_size(rein_model_request_dropped(f.req)), 3);
    q = ms_request(f.ms, 0);
    assert_non_null(q);
    assert_null(strstr(q->body, "exclusiveMinimum"));
    /* A tool list that Gemini takes whole drops nothing; the old list is gone. */
    rein_model_request_clear_tools(f.req);
    assert_rein_ok(rein_model_request_add_tool(f.req, "noop", "No arguments", NULL), NULL);
    assert_rein_ok(rein_provider_prepare(f.p, f.req, &f.err), &f.err);
    assert_null(rein_model_request_dropped(f.req));
    json_decref(s);
    pfx_stop(&f);
}

/* The same schema on a wire that takes JSON Schema whole: nothing is reported dropped. */
static void test_other_wires_drop_nothing(void **state)
{
    static const char *const presets[] = {"openai", "anthropic", "bedrock"};

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(presets); i++) {
        struct pfx f;
        json_t *s = weather_schema();
        fx_start(&f);
        fx_provider(&f, presets[i]);
        assert_rein_ok(rein_model_request_add_tool(f.req, "get_weather", "Weather", s), NULL);
        assert_rein_ok(rein_provider_prepare(f.p, f.req, &f.err), &f.err);
        assert_null(rein_model_request_dropped(f.req));
        json_decref(s);
        pfx_stop(&f);
    }
}

/* The body a provider of preset sends for a request the caller shaped with set (may be NULL):
 * the model server's copy of it, parsed (new reference), after checking that no member came
 * twice. */
static json_t *sent_body(const char *preset, const char *setting, const char *value,
                         void (*set)(rein_model_request *req))
{
    struct pfx f;
    const struct ms_request *q;
    json_t *body;

    fx_start(&f);
    if (setting)
        assert_rein_ok(rein_provider_config_set(f.cfg, setting, value, &f.err), &f.err);
    fx_provider(&f, preset);
    if (set)
        set(f.req);
    rein_model_request_set_stream(f.req, false);
    assert_rein_ok(ms_script(f.ms, "[{\"text\": \"ok\"}]", false, &f.err), &f.err);
    if (pfx_send(&f) != REIN_OK)
        fail_msg("%s: %s", preset, f.err.msg);
    q = ms_request(f.ms, 0);
    body = rein_json_parse(q->body, strlen(q->body), JSON_REJECT_DUPLICATES, &f.err);
    if (!body)
        fail_msg("%s: %s: %s", preset, f.err.msg, q->body);
    pfx_stop(&f);
    return body;
}

/* A request's reasoning, model and output limit (model NULL, max_tokens 0: the provider's). */
struct ask {
    const char *model;
    enum rein_reasoning effort;
    int64_t budget, max_tokens;
};
static const struct ask *asking;

static void ask_set(rein_model_request *req)
{
    if (asking->model)
        assert_rein_ok(rein_model_request_set_model(req, asking->model), NULL);
    rein_model_request_set_reasoning(req, asking->effort, asking->budget);
    if (asking->max_tokens)
        rein_model_request_set_max_tokens(req, asking->max_tokens);
}

static const struct ask effort_high = {NULL, REIN_REASONING_HIGH, 0, 0};
static const struct ask budget_3000 = {NULL, REIN_REASONING_UNSET, 3000, 0};
static const struct ask none_asked = {NULL, REIN_REASONING_NONE, 0, 0};
static const struct ask high_in_2000 = {NULL, REIN_REASONING_HIGH, 0, 2000};
static const struct ask claude_on_bedrock_high = {"us.anthropic.claude-sonnet-4-5-v1:0",
                                                  REIN_REASONING_HIGH, 0, 0};
static const struct ask llama_on_bedrock_high = {"meta.llama3-70b-instruct-v1:0",
                                                 REIN_REASONING_HIGH, 0, 0};
static const struct ask gpt_oss_low = {"gpt-oss:20b", REIN_REASONING_MINIMAL, 0, 0};
static const struct ask gemini3_medium = {"gemini-3-pro-preview", REIN_REASONING_MEDIUM, 0, 0};
static const struct ask gemini3_budget = {"gemini-3-pro-preview", REIN_REASONING_UNSET, 3000, 0};

/* The body preset sends for the ask a. */
static json_t *asked_body(const char *preset, const char *setting, const char *value,
                          const struct ask *a)
{
    asking = a;
    return sent_body(preset, setting, value, ask_set);
}

/* The caller's own member of the wire's name (extra_text) goes as written, once. */
static const char *extra_text;

static void extra_own(rein_model_request *req)
{
    json_t *x = json_loads(extra_text, 0, NULL);

    rein_model_request_set_reasoning(req, REIN_REASONING_HIGH, 0);
    rein_model_request_set_extra(req, x);
    json_decref(x);
}

/* The ask being made, with the caller's extra_text. */
static void extra_claude(rein_model_request *req)
{
    json_t *x = json_loads(extra_text, 0, NULL);

    ask_set(req);
    rein_model_request_set_extra(req, x);
    json_decref(x);
}

static void assert_at(const json_t *body, const char *at, const char *want_json)
{
    json_t *want = json_loads(want_json, JSON_DECODE_ANY, NULL);
    char *got = json_dumps(test_json_at(body, at), JSON_ENCODE_ANY | JSON_COMPACT);

    if (!json_equal(test_json_at(body, at), want))
        fail_msg("%s is %s, not %s", at, got ? got : "(absent)", want_json);
    free(got);
    json_decref(want);
}

/* Each wire's own words for one effort, and for one budget. */
static void test_each_wire_sends_reasoning_in_its_own_words(void **state)
{
    json_t *b;

    (void)state;
    b = asked_body("openai", NULL, NULL, &effort_high);
    assert_at(b, "reasoning_effort", "\"high\"");
    json_decref(b);
    b = asked_body("openai-responses", NULL, NULL, &effort_high);
    assert_at(b, "reasoning", "{\"effort\": \"high\"}");
    json_decref(b);
    /* Anthropic counts the thinking in max_tokens: the budget and the answer's usual room */
    b = asked_body("anthropic", NULL, NULL, &effort_high);
    assert_at(b, "thinking", "{\"type\": \"enabled\", \"budget_tokens\": 24576}");
    assert_at(b, "max_tokens", "28672");
    json_decref(b);
    b = asked_body("gemini", NULL, NULL, &effort_high);
    assert_at(b, "generationConfig.thinkingConfig",
              "{\"thinkingBudget\": 24576, \"includeThoughts\": true}");
    json_decref(b);
    /* a budget: as it is where budgets are the words, its effort where they are not */
    b = asked_body("openai", NULL, NULL, &budget_3000);
    assert_at(b, "reasoning_effort", "\"medium\"");
    json_decref(b);
    b = asked_body("anthropic", NULL, NULL, &budget_3000);
    assert_at(b, "thinking.budget_tokens", "3000");
    json_decref(b);
    b = asked_body("gemini", NULL, NULL, &budget_3000);
    assert_at(b, "generationConfig.thinkingConfig.thinkingBudget", "3000");
    json_decref(b);
}

/* Anthropic's limits: none is thinking disabled; a budget above the request's own max_tokens
 * is cut under it, which stays. */
static void test_anthropic_thinking_fits_under_max_tokens(void **state)
{
    json_t *b;

    (void)state;
    b = asked_body("anthropic", NULL, NULL, &none_asked);
    assert_at(b, "thinking", "{\"type\": \"disabled\"}");
    assert_at(b, "max_tokens", "4096");
    json_decref(b);
    b = asked_body("anthropic", NULL, NULL, &high_in_2000);
    assert_at(b, "thinking.budget_tokens", "1999");
    assert_at(b, "max_tokens", "2000");
    json_decref(b);
    b = asked_body("gemini", NULL, NULL, &none_asked);
    assert_at(b, "generationConfig.thinkingConfig", "{\"thinkingBudget\": 0}");
    json_decref(b);
}

/* Without a setting nothing is written; a member the caller wrote itself wins, once. */
static void test_reasoning_unset_or_written_by_the_caller(void **state)
{
    static const char *const presets[] = {"openai", "openai-responses", "anthropic", "gemini"};
    json_t *b;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(presets); i++) {
        b = sent_body(presets[i], NULL, NULL, NULL);
        if (json_object_get(b, "reasoning_effort") || json_object_get(b, "reasoning") ||
            json_object_get(b, "thinking") || test_json_at(b, "generationConfig.thinkingConfig"))
            fail_msg("%s: a reasoning member nobody asked for", presets[i]);
        if (strcmp(presets[i], "anthropic") == 0)
            assert_at(b, "max_tokens", "4096");
        json_decref(b);
    }
    extra_text = "{\"reasoning_effort\": \"low\"}";
    b = sent_body("openai", NULL, NULL, extra_own);
    assert_at(b, "reasoning_effort", "\"low\"");
    json_decref(b);
    extra_text = "{\"reasoning\": {\"effort\": \"low\"}}";
    b = sent_body("openai-responses", NULL, NULL, extra_own);
    assert_at(b, "reasoning", "{\"effort\": \"low\"}");
    json_decref(b);
    extra_text = "{\"thinking\": {\"type\": \"enabled\", \"budget_tokens\": 1500}}";
    b = sent_body("anthropic", NULL, NULL, extra_own);
    assert_at(b, "thinking.budget_tokens", "1500");
    json_decref(b);
    extra_text = "{\"generationConfig\": {\"thinkingConfig\": {\"thinkingBudget\": 1500}}}";
    b = sent_body("gemini", NULL, NULL, extra_own);
    assert_at(b, "generationConfig.thinkingConfig", "{\"thinkingBudget\": 1500}");
    json_decref(b);
}

/* Gemini 3 gets a thinking level for an effort word, a budget as a budget. */
static void test_gemini3_thinking_level(void **state)
{
    json_t *b;

    (void)state;
    b = asked_body("gemini", NULL, NULL, &gemini3_medium);
    assert_at(b, "generationConfig.thinkingConfig",
              "{\"thinkingLevel\": \"high\", \"includeThoughts\": true}");
    json_decref(b);
    b = asked_body("gemini", NULL, NULL, &gemini3_budget);
    assert_at(b, "generationConfig.thinkingConfig",
              "{\"thinkingBudget\": 3000, \"includeThoughts\": true}");
    json_decref(b);
}

/* Bedrock writes Claude's thinking into the model's own fields, with an output limit that
 * counts it, and nothing for a model without it; Ollama's API switches think, or names
 * gpt-oss's level. */
static void test_bedrock_and_ollama_reasoning(void **state)
{
    json_t *b;

    (void)state;
    b = asked_body("bedrock", NULL, NULL, &claude_on_bedrock_high);
    assert_at(b, "additionalModelRequestFields.thinking",
              "{\"type\": \"enabled\", \"budget_tokens\": 24576}");
    assert_at(b, "inferenceConfig.maxTokens", "32000");
    json_decref(b);
    b = asked_body("bedrock", NULL, NULL, &llama_on_bedrock_high);
    assert_null(json_object_get(b, "additionalModelRequestFields"));
    assert_null(json_object_get(b, "inferenceConfig"));
    json_decref(b);
    b = asked_body("ollama", NULL, NULL, &effort_high);
    assert_at(b, "think", "true");
    json_decref(b);
    b = asked_body("ollama", NULL, NULL, &none_asked);
    assert_at(b, "think", "false");
    json_decref(b);
    b = asked_body("ollama", NULL, NULL, &gpt_oss_low);
    assert_at(b, "think", "\"low\"");
    json_decref(b);
    b = sent_body("ollama", NULL, NULL, NULL);
    assert_null(json_object_get(b, "think"));
    json_decref(b);
}

/* reasoning_effort in the configuration: every request's unless it sets its own; refused by
 * name for a wire that cannot write it and for a word no wire has. */
static void test_configured_reasoning_effort(void **state)
{
    struct pfx f;
    json_t *b;

    (void)state;
    b = sent_body("openai", "reasoning_effort", "low", NULL);
    assert_at(b, "reasoning_effort", "\"low\"");
    json_decref(b);
    b = sent_body("anthropic", "reasoning_effort", "medium", NULL);
    assert_at(b, "thinking.budget_tokens", "8192");
    json_decref(b);
    b = asked_body("openai", "reasoning_effort", "low", &effort_high);
    assert_at(b, "reasoning_effort", "\"high\"");
    json_decref(b);
    fx_start(&f);
    assert_int_equal(rein_provider_config_set(f.cfg, "reasoning_effort", "extreme", &f.err),
                     REIN_EINVAL);
    assert_non_null(strstr(f.err.msg, "xhigh"));
    assert_rein_ok(rein_provider_config_set(f.cfg, "reasoning_effort", "high", &f.err), &f.err);
    assert_rein_ok(rein_provider_config_set(f.cfg, "provider", "bedrock", &f.err), &f.err);
    assert_rein_ok(rein_provider_config_set_base_url(f.cfg, ms_url(f.ms)), NULL);
    assert_rein_ok(rein_provider_config_set_api_key(f.cfg, "sk-test"), NULL);
    assert_rein_ok(rein_provider_config_set_model(f.cfg, "meta.llama3-70b-instruct-v1:0"), NULL);
    f.p = rein_provider_new(f.cfg, &f.err);
    assert_null(f.p);
    assert_int_equal(f.err.code, REIN_EINVAL);
    assert_non_null(strstr(f.err.msg, "reasoning_effort"));
    assert_non_null(strstr(f.err.msg, "meta.llama3"));
    /* the same wire writes it for Claude */
    assert_rein_ok(rein_provider_config_set_model(f.cfg, "us.anthropic.claude-sonnet-4-5-v1:0"),
                   NULL);
    f.p = rein_provider_new(f.cfg, &f.err);
    assert_non_null(f.p);
    pfx_stop(&f);
}

/* Which models take a reasoning setting, and the configuration's word over the table's. */
static void test_reasoning_capability(void **state)
{
    static const struct {
        const char *model;
        bool reasoning;
    } cases[] = {
        {"o3-mini", true},
        {"gpt-5-mini", true},
        {"gpt-5-chat-latest", false},
        {"gpt-4o", false},
        {"gpt-4.1", false},
        {"claude-3-5-haiku", false},
        {"claude-3-7-sonnet", true},
        {"claude-sonnet-4-5", true},
        {"claude-opus-4-1", true},
        {"gemini-2.0-flash", false},
        {"gemini-2.5-pro", true},
        {"gemini-3-pro-preview", true},
        {"openai/gpt-oss-20b", true},
        {"us.anthropic.claude-sonnet-4-5-20250929-v1:0", true},
        {"anthropic.claude-3-7-sonnet-20250219-v1:0", true},
        {"anthropic.claude-3-5-sonnet-20240620-v1:0", false},
        {"arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-opus-4-1-v1:0", true},
        {"deepseek-chat", false},
        {"llama3.1", false},
    };
    struct rein_model_caps caps;
    struct pfx f;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(cases); i++) {
        rein_model_caps_lookup(cases[i].model, &caps);
        if (caps.reasoning != cases[i].reasoning)
            fail_msg("%s: reasoning %d", cases[i].model, caps.reasoning);
    }
    fx_start(&f);
    {
        static const char text[] = "{\"capabilities\": {\"my-reasoner\": {\"reasoning\": true}}}";
        assert_rein_ok(rein_provider_config_load_text(f.cfg, text, strlen(text), "t", &f.err),
                       &f.err);
    }
    fx_provider(&f, "openai");
    rein_provider_model_caps(f.p, "my-reasoner-7b", &caps);
    assert_true(caps.reasoning);
    rein_provider_model_caps(f.p, NULL, &caps);
    assert_false(caps.reasoning); /* test-model */
    assert_true(rein_provider_writes_reasoning(f.p, NULL));
    pfx_stop(&f);
}

/* Claude's context and output limits by version, from Anthropic's model pages, whatever names
 * the model (Anthropic's ids, Bedrock's, Vertex's, a router's). */
static void test_claude_limits_by_version(void **state)
{
    static const struct {
        const char *model;
        int64_t context, most;
    } cases[] = {
        {"claude-opus-4-6", 1000000, 128000},
        {"claude-sonnet-4-6", 1000000, 128000},
        {"claude-opus-4-7", 1000000, 128000},
        {"claude-haiku-5-5", 1000000, 128000},
        {"claude-fable-5-1@20261001", 1000000, 128000},
        {"us.anthropic.claude-opus-4-6-v1", 1000000, 128000},
        {"claude-sonnet-4-5-20250929", 200000, 64000},
        {"claude-sonnet-4-5@20250929", 200000, 64000},
        {"anthropic/claude-sonnet-4.5", 200000, 64000},
        {"claude-haiku-4-5-20251001", 200000, 64000},
        {"claude-opus-4-5", 200000, 64000},
        {"claude-sonnet-4-20250514", 200000, 64000},
        {"claude-opus-4-20250514", 200000, 32000},
        {"anthropic.claude-opus-4-1-20250805-v1:0", 200000, 32000},
        {"claude-3-7-sonnet-20250219", 200000, 64000},
        {"claude-3-5-haiku-20241022", 200000, 8192},
        {"claude-3-haiku-20240307", 200000, 4096},
        {"claude-mythos-preview", 200000, 0},
        {"claude-test", 200000, 0},
    };
    struct rein_model_caps caps;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(cases); i++) {
        rein_model_caps_lookup(cases[i].model, &caps);
        if (caps.context_window != cases[i].context || caps.max_output != cases[i].most)
            fail_msg("%s: context %lld, output %lld", cases[i].model,
                     (long long)caps.context_window, (long long)caps.max_output);
    }
}

/* The body the anthropic preset sends for model at effort (budget when effort is UNSET). */
static json_t *claude_body(const char *preset, const char *model, enum rein_reasoning effort,
                           int64_t budget)
{
    struct ask a = {model, effort, budget, 0};

    return asked_body(preset, NULL, NULL, &a);
}

/*
 * Claude 4.6 on thinks adaptively at an effort (decision 0099): the model server refuses a
 * budget for 4.7 on, adaptive thinking before 4.6 and an effort word a model lacks, as
 * Anthropic's API does, so each body here was also accepted by it.
 */
static void test_claude_adaptive_thinking_and_effort(void **state)
{
    static const struct {
        const char *model;
        enum rein_reasoning effort;
        const char *thinking, *effort_sent;
        int64_t max_tokens;
    } cases[] = {
        {"claude-opus-4-7", REIN_REASONING_HIGH, "{\"type\": \"adaptive\"}", "high", 32000},
        {"claude-opus-4-7", REIN_REASONING_XHIGH, "{\"type\": \"adaptive\"}", "xhigh", 36864},
        {"claude-opus-4-7", REIN_REASONING_MINIMAL, "{\"type\": \"adaptive\"}", "low", 32000},
        {"claude-sonnet-4-6", REIN_REASONING_XHIGH, "{\"type\": \"adaptive\"}", "high", 36864},
        {"claude-sonnet-4-6", REIN_REASONING_MAX, "{\"type\": \"adaptive\"}", "max", 36864},
        {"claude-opus-4-6", REIN_REASONING_NONE, "{\"type\": \"disabled\"}", NULL, 32000},
        {"claude-opus-5", REIN_REASONING_NONE, NULL, NULL, 32000},
        {"claude-opus-5-5", REIN_REASONING_MEDIUM, "{\"type\": \"adaptive\"}", "medium", 32000},
        {"claude-mythos-preview", REIN_REASONING_XHIGH, "{\"type\": \"adaptive\"}", "high", 36864},
        {"claude-mythos-preview", REIN_REASONING_MAX, "{\"type\": \"adaptive\"}", "max", 36864},
        {"claude-fable-5-1@20261001", REIN_REASONING_LOW, "{\"type\": \"adaptive\"}", "low", 32000},
        {"claude-opus-4-5-20251101", REIN_REASONING_HIGH,
         "{\"type\": \"enabled\", \"budget_tokens\": 24576}", NULL, 32000},
        {"claude-opus-4-20250514", REIN_REASONING_MAX,
         "{\"type\": \"enabled\", \"budget_tokens\": 27904}", NULL, 32000},
        {"claude-3-7-sonnet-20250219", REIN_REASONING_LOW,
         "{\"type\": \"enabled\", \"budget_tokens\": 1024}", NULL, 32000},
    };
    json_t *b;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(cases); i++) {
        char at[64];
        b = claude_body("anthropic", cases[i].model, cases[i].effort, 0);
        snprintf(at, sizeof(at), "%lld", (long long)cases[i].max_tokens);
        if (cases[i].thinking)
            assert_at(b, "thinking", cases[i].thinking);
        else if (json_object_get(b, "thinking"))
            fail_msg("%s: thinking sent", cases[i].model);
        if (cases[i].effort_sent) {
            char want[32];
            snprintf(want, sizeof(want), "\"%s\"", cases[i].effort_sent);
            assert_at(b, "output_config.effort", want);
        } else if (json_object_get(b, "output_config")) {
            fail_msg("%s: output_config sent", cases[i].model);
        }
        assert_at(b, "max_tokens", at);
        json_decref(b);
    }
    /* a budget asks the effort the table gives it */
    b = claude_body("anthropic", "claude-sonnet-4-6", REIN_REASONING_UNSET, 3000);
    assert_at(b, "thinking", "{\"type\": \"adaptive\"}");
    assert_at(b, "output_config", "{\"effort\": \"medium\"}");
    json_decref(b);
    /* Bedrock's Claude: both in the model's own fields */
    b = claude_body("bedrock", "us.anthropic.claude-opus-4-6-v1", REIN_REASONING_LOW, 0);
    assert_at(b, "additionalModelRequestFields",
              "{\"thinking\": {\"type\": \"adaptive\"}, \"output_config\": {\"effort\": "
              "\"low\"}}");
    assert_at(b, "inferenceConfig.maxTokens", "32000");
    json_decref(b);
    /* max is xhigh on OpenAI's wires, the highest they have */
    b = claude_body("openai", NULL, REIN_REASONING_MAX, 0);
    assert_at(b, "reasoning_effort", "\"xhigh\"");
    json_decref(b);
    b = claude_body("openai-responses", NULL, REIN_REASONING_MAX, 0);
    assert_at(b, "reasoning", "{\"effort\": \"xhigh\"}");
    json_decref(b);
    /* OpenAI's reasoning models get the nearest word they have */
    {
        static const struct {
            const char *model;
            enum rein_reasoning effort;
            const char *word;
        } words[] = {
            {"gpt-5.1", REIN_REASONING_MINIMAL, "\"low\""},
            {"gpt-5-mini", REIN_REASONING_NONE, "\"minimal\""},
            {"o3-mini", REIN_REASONING_NONE, "\"low\""},
            {"o4-mini", REIN_REASONING_XHIGH, "\"high\""},
            {"gpt-5-mini", REIN_REASONING_MAX, "\"high\""},
            {"gpt-5.1-codex-max", REIN_REASONING_XHIGH, "\"xhigh\""},
            {"gpt-5.2", REIN_REASONING_MAX, "\"xhigh\""},
            {"gpt-5.2", REIN_REASONING_NONE, "\"none\""},
            {"openai/gpt-5", REIN_REASONING_MINIMAL, "\"minimal\""},
            {"qwen3-32b", REIN_REASONING_MINIMAL, "\"minimal\""},
        };
        for (size_t i = 0; i < REIN_ARRAY_SIZE(words); i++) {
            b = claude_body("openai", words[i].model, words[i].effort, 0);
            assert_at(b, "reasoning_effort", words[i].word);
            json_decref(b);
        }
        b = claude_body("openai-responses", "gpt-5.1", REIN_REASONING_MINIMAL, 0);
        assert_at(b, "reasoning.effort", "\"low\"");
        json_decref(b);
    }
    /* Gemini 3 Flash has four levels, Pro two */
    b = claude_body("gemini", "gemini-3-flash-preview", REIN_REASONING_MEDIUM, 0);
    assert_at(b, "generationConfig.thinkingConfig.thinkingLevel", "\"medium\"");
    json_decref(b);
    b = claude_body("gemini", "gemini-3.5-flash", REIN_REASONING_MINIMAL, 0);
    assert_at(b, "generationConfig.thinkingConfig.thinkingLevel", "\"minimal\"");
    json_decref(b);
    b = claude_body("gemini", "gemini-3.1-pro-preview", REIN_REASONING_MEDIUM, 0);
    assert_at(b, "generationConfig.thinkingConfig.thinkingLevel", "\"high\"");
    json_decref(b);
    /* Gemini 2.5 Flash thinks at most 24,576 tokens */
    b = claude_body("gemini", "gemini-2.5-flash", REIN_REASONING_MAX, 0);
    assert_at(b, "generationConfig.thinkingConfig.thinkingBudget", "24576");
    json_decref(b);
}

/* The caller's own output_config (a format, say) goes once, and the effort is then left to it;
 * a configured max is taken. */
static void test_claude_effort_and_the_callers_output_config(void **state)
{
    json_t *b;

    (void)state;
    /* (an object schema says additionalProperties false, as Anthropic requires) */
    extra_text = "{\"output_config\": {\"format\": {\"type\": \"json_schema\", \"schema\": "
                 "{\"type\": \"object\", \"additionalProperties\": false}}}}";
    {
        struct ask a = {"claude-opus-4-7", REIN_REASONING_HIGH, 0, 0};
        asking = &a;
        b = sent_body("anthropic", NULL, NULL, extra_claude);
    }
    assert_at(b, "thinking", "{\"type\": \"adaptive\"}");
    assert_at(b, "output_config",
              "{\"format\": {\"type\": \"json_schema\", \"schema\": {\"type\": \"object\", "
              "\"additionalProperties\": false}}}");
    json_decref(b);
    b = sent_body("openai", "reasoning_effort", "max", NULL);
    assert_at(b, "reasoning_effort", "\"xhigh\"");
    json_decref(b);
}

/* Which sampling settings a request may carry, by provider, model and reasoning (decision
 * 0101). */
static void test_sampling_settings_by_model(void **state)
{
    enum { ONE = REIN_SAMPLING_TEMPERATURE | REIN_SAMPLING_TOP_P, ALL = REIN_SAMPLING_ALL };
    static const struct {
        const char *preset, *model;
        enum rein_reasoning effort;
        unsigned takes;
    } cases[] = {
        {"anthropic", "claude-3-7-sonnet-20250219", REIN_REASONING_UNSET, ALL},
        {"anthropic", "claude-sonnet-4-20250514", REIN_REASONING_UNSET, ALL},
        {"anthropic", "claude-sonnet-4-20250514", REIN_REASONING_LOW, 0},
        {"anthropic", "claude-opus-4-1", REIN_REASONING_UNSET, ONE},
        {"anthropic", "claude-sonnet-4-6", REIN_REASONING_NONE, ONE},
        {"anthropic", "claude-opus-4-7", REIN_REASONING_UNSET, 0},
        {"anthropic", "claude-mythos-preview", REIN_REASONING_UNSET, 0},
        {"anthropic", "test-model", REIN_REASONING_UNSET, ALL},
        {"bedrock", "us.anthropic.claude-haiku-4-5-20251001-v1:0", REIN_REASONING_UNSET, ONE},
        {"bedrock", "anthropic.claude-opus-5", REIN_REASONING_UNSET, 0},
        {"bedrock", "meta.llama3-70b-instruct-v1:0", REIN_REASONING_HIGH, ALL},
        {"openai", "gpt-4o", REIN_REASONING_UNSET, ALL},
        {"openai", "gpt-5-chat-latest", REIN_REASONING_UNSET, ALL},
        {"openai", "o3-mini", REIN_REASONING_UNSET, 0},
        {"openai", "gpt-5-mini", REIN_REASONING_MINIMAL, 0},
        {"openai", "gpt-5.1", REIN_REASONING_UNSET, ALL},
        {"openai", "gpt-5.2", REIN_REASONING_NONE, ALL},
        {"openai", "gpt-5.1", REIN_REASONING_LOW, 0},
        {"openai", "openai/o4-mini", REIN_REASONING_UNSET, 0},
        {"openai-responses", "gpt-5-codex", REIN_REASONING_UNSET, 0},
        {"openai", "claude-opus-4-7", REIN_REASONING_UNSET, ALL}, /* a compatible server's name */
        {"gemini", "gemini-2.5-pro", REIN_REASONING_HIGH, ALL},
    };

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(cases); i++) {
        struct pfx f;
        fx_start(&f);
        fx_provider(&f, cases[i].preset);
        assert_rein_ok(rein_model_request_set_model(f.req, cases[i].model), NULL);
        rein_model_request_set_reasoning(f.req, cases[i].effort, 0);
        if (rein_provider_sampling(f.p, f.req) != cases[i].takes)
            fail_msg("%s %s: %u", cases[i].preset, cases[i].model,
                     rein_provider_sampling(f.p, f.req));
        pfx_stop(&f);
    }
}

/* ---------------------------------------------------------------------------------------
 * The answer's form (rein_model_request_set_output_format, decision 0100)
 */

static const char PERSON[] = "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": "
                             "\"string\"}, \"age\": {\"type\": \"integer\"}}, \"required\": "
                             "[\"name\", \"age\"], \"additionalProperties\": false}";
static enum rein_output_kind out_kind;

static void out_set(rein_model_request *req)
{
    json_t *schema = json_loads(PERSON, 0, NULL);

    assert_non_null(schema);
    assert_rein_ok(rein_model_request_set_output_format(req, out_kind, "person", schema, true),
                   NULL);
    json_decref(schema); /* the request keeps its own copy */
}

static json_t *out_body(const char *preset, enum rein_output_kind kind)
{
    out_kind = kind;
    return sent_body(preset, NULL, NULL, out_set);
}

/* Each wire's own words for a schema; the model server refuses each wire's wrong shape (a
 * missing name, a schema Bedrock wants as a string, a mime type Gemini needs beside it). */
static void test_each_wire_writes_the_output_schema_in_its_own_words(void **state)
{
    json_t *b;
    char *text;

    (void)state;
    b = out_body("openai", REIN_OUTPUT_JSON_SCHEMA);
    assert_at(b, "response_format.type", "\"json_schema\"");
    assert_at(b, "response_format.json_schema.name", "\"person\"");
    assert_at(b, "response_format.json_schema.strict", "true");
    assert_at(b, "response_format.json_schema.schema", PERSON);
    json_decref(b);
    b = out_body("openai-responses", REIN_OUTPUT_JSON_SCHEMA);
    assert_at(b, "text.format.type", "\"json_schema\"");
    assert_at(b, "text.format.name", "\"person\"");
    assert_at(b, "text.format.strict", "true");
    assert_at(b, "text.format.schema", PERSON);
    assert_null(json_object_get(b, "response_format"));
    json_decref(b);
    b = out_body("anthropic", REIN_OUTPUT_JSON_SCHEMA);
    assert_at(b, "output_config.format.type", "\"json_schema\"");
    assert_at(b, "output_config.format.schema", PERSON);
    assert_null(json_object_get(b, "response_format"));
    json_decref(b);
    b = out_body("gemini", REIN_OUTPUT_JSON_SCHEMA);
    assert_at(b, "generationConfig.responseMimeType", "\"application/json\"");
    assert_at(b, "generationConfig.responseJsonSchema", PERSON);
    json_decref(b);
    b = out_body("bedrock", REIN_OUTPUT_JSON_SCHEMA);
    assert_at(b, "outputConfig.textFormat.type", "\"json_schema\"");
    assert_at(b, "outputConfig.textFormat.structure.jsonSchema.name", "\"person\"");
    text = json_dumps(test_json_at(b, "outputConfig.textFormat.structure.jsonSchema.schema"),
                      JSON_ENCODE_ANY);
    assert_non_null(text);
    {
        /* a string holding the schema's text */
        json_t *inner = json_loads(json_string_value(test_json_at(
                                       b, "outputConfig.textFormat.structure.jsonSchema.schema")),
                                   0, NULL);
        json_t *want = json_loads(PERSON, 0, NULL);
        assert_true(json_equal(inner, want));
        json_decref(inner);
        json_decref(want);
    }
    free(text);
    json_decref(b);
    b = out_body("ollama", REIN_OUTPUT_JSON_SCHEMA);
    assert_at(b, "format", PERSON);
    json_decref(b);
}

/* A JSON object without a schema: OpenAI's JSON mode, Gemini's mime type, Ollama's "json";
 * Anthropic and Bedrock have no JSON mode and write nothing. */
static void test_each_wire_writes_json_object_or_nothing(void **state)
{
    json_t *b;

    (void)state;
    b = out_body("openai", REIN_OUTPUT_JSON_OBJECT);
    assert_at(b, "response_format", "{\"type\": \"json_object\"}");
    json_decref(b);
    b = out_body("openai-responses", REIN_OUTPUT_JSON_OBJECT);
    assert_at(b, "text", "{\"format\": {\"type\": \"json_object\"}}");
    json_decref(b);
    b = out_body("gemini", REIN_OUTPUT_JSON_OBJECT);
    assert_at(b, "generationConfig", "{\"responseMimeType\": \"application/json\"}");
    json_decref(b);
    b = out_body("ollama", REIN_OUTPUT_JSON_OBJECT);
    assert_at(b, "format", "\"json\"");
    json_decref(b);
    b = out_body("anthropic", REIN_OUTPUT_JSON_OBJECT);
    assert_null(json_object_get(b, "output_config"));
    json_decref(b);
    b = out_body("bedrock", REIN_OUTPUT_JSON_OBJECT);
    assert_null(json_object_get(b, "outputConfig"));
    json_decref(b);
    /* and text, the default, writes nothing anywhere */
    b = out_body("openai", REIN_OUTPUT_TEXT);
    assert_null(json_object_get(b, "response_format"));
    json_decref(b);
    b = out_body("gemini", REIN_OUTPUT_TEXT);
    assert_null(json_object_get(b, "generationConfig"));
    json_decref(b);
}

/* The caller's own member of the wire's name wins, written once. */
static void out_extra(rein_model_request *req)
{
    json_t *x = json_loads(extra_text, 0, NULL);

    out_set(req);
    rein_model_request_set_extra(req, x);
    json_decref(x);
}

static void test_output_format_written_by_the_caller_wins(void **state)
{
    json_t *b;

    (void)state;
    out_kind = REIN_OUTPUT_JSON_SCHEMA;
    extra_text = "{\"response_format\": {\"type\": \"json_object\"}}";
    b = sent_body("openai", NULL, NULL, out_extra);
    assert_at(b, "response_format", "{\"type\": \"json_object\"}");
    json_decref(b);
    extra_text = "{\"output_config\": {\"format\": {\"type\": \"json_schema\", \"schema\": "
                 "{\"type\": \"string\"}}}}";
    b = sent_body("anthropic", NULL, NULL, out_extra);
    assert_at(b, "output_config.format.schema", "{\"type\": \"string\"}");
    json_decref(b);
    extra_text = "{\"generationConfig\": {\"responseMimeType\": \"text/x.enum\", "
                 "\"responseSchema\": {\"type\": \"STRING\", \"enum\": [\"a\", \"b\"]}}}";
    b = sent_body("gemini", NULL, NULL, out_extra);
    assert_at(b, "generationConfig.responseMimeType", "\"text/x.enum\"");
    assert_null(test_json_at(b, "generationConfig.responseJsonSchema"));
    json_decref(b);
}

/* Claude 4.6 on: the thinking's effort and the answer's form share one output_config. */
static void out_and_effort(rein_model_request *req)
{
    assert_rein_ok(rein_model_request_set_model(req, "claude-sonnet-4-6"), NULL);
    rein_model_request_set_reasoning(req, REIN_REASONING_LOW, 0);
    out_set(req);
}

static void test_claude_effort_and_format_share_output_config(void **state)
{
    json_t *b;

    (void)state;
    out_kind = REIN_OUTPUT_JSON_SCHEMA;
    b = sent_body("anthropic", NULL, NULL, out_and_effort); /* duplicates refused */
    assert_at(b, "thinking", "{\"type\": \"adaptive\"}");
    {
        char want[512];
        snprintf(want, sizeof(want),
                 "{\"effort\": \"low\", \"format\": {\"type\": \"json_schema\", \"schema\": %s}}",
                 PERSON);
        assert_at(b, "output_config", want);
    }
    json_decref(b);
    /* on Bedrock the effort stays in Claude's own fields, the form in Converse's */
    b = sent_body("bedrock", NULL, NULL, out_and_effort);
    assert_at(b, "outputConfig.textFormat.type", "\"json_schema\"");
    json_decref(b);
}

/* A wire with no output format refuses the request before anything is sent, naming itself;
 * the setter refuses a schema that is no object. */
static void test_output_format_refused_where_the_wire_has_none(void **state)
{
    struct pfx f;
    json_t *arr = json_array();

    (void)state;
    fx_start(&f);
    fx_provider(&f, "dashscope-native");
    assert_int_equal(
        rein_model_request_set_output_format(f.req, REIN_OUTPUT_JSON_SCHEMA, "x", arr, false),
        REIN_EINVAL);
    assert_int_equal(
        rein_model_request_set_output_format(f.req, REIN_OUTPUT_JSON_SCHEMA, "x", NULL, false),
        REIN_EINVAL);
    out_kind = REIN_OUTPUT_JSON_OBJECT;
    out_set(f.req);
    assert_int_equal(rein_provider_prepare(f.p, f.req, &f.err), REIN_EINVAL);
    assert_non_null(strstr(f.err.msg, "dashscope"));
    assert_non_null(strstr(f.err.msg, "no output format"));
    assert_int_equal(pfx_send(&f), REIN_EINVAL);
    assert_int_equal(ms_request_count(f.ms), 0);
    /* unset, the same request goes */
    assert_rein_ok(rein_model_request_set_output_format(f.req, REIN_OUTPUT_TEXT, NULL, NULL, false),
                   NULL);
    rein_model_request_set_stream(f.req, false);
    assert_rein_ok(ms_script(f.ms, "[{\"text\": \"fine\"}]", false, &f.err), &f.err);
    assert_rein_ok(pfx_send(&f), &f.err);
    json_decref(arr);
    pfx_stop(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_each_wire_sends_stop_sequences_under_its_own_name),
    cmocka_unit_test(test_no_stop_sequences_no_member),
    cmocka_unit_test(test_each_wire_sends_top_p_under_its_own_name),
    cmocka_unit_test(test_responses_wire_refuses_stop_sequences_naming_the_wire),
    cmocka_unit_test(test_counts_past_a_wires_limit_are_refused),
    cmocka_unit_test(test_set_stop_refuses_empty_and_too_many),
    cmocka_unit_test(test_gemini_dropped_keywords_are_returned),
    cmocka_unit_test(test_other_wires_drop_nothing),
    cmocka_unit_test(test_each_wire_sends_reasoning_in_its_own_words),
    cmocka_unit_test(test_anthropic_thinking_fits_under_max_tokens),
    cmocka_unit_test(test_claude_limits_by_version),
    cmocka_unit_test(test_reasoning_unset_or_written_by_the_caller),
    cmocka_unit_test(test_configured_reasoning_effort),
    cmocka_unit_test(test_bedrock_and_ollama_reasoning),
    cmocka_unit_test(test_gemini3_thinking_level),
    cmocka_unit_test(test_reasoning_capability),
    cmocka_unit_test(test_claude_adaptive_thinking_and_effort),
    cmocka_unit_test(test_claude_effort_and_the_callers_output_config),
    cmocka_unit_test(test_sampling_settings_by_model),
    cmocka_unit_test(test_each_wire_writes_the_output_schema_in_its_own_words),
    cmocka_unit_test(test_each_wire_writes_json_object_or_nothing),
    cmocka_unit_test(test_output_format_written_by_the_caller_wins),
    cmocka_unit_test(test_output_format_refused_where_the_wire_has_none),
    cmocka_unit_test(test_claude_effort_and_format_share_output_config),
};

REIN_TEST_MAIN(tests)
