/*
 * Generation settings each wire names its own way, over real HTTP against the scripted model
 * server: the neutral stop sequences of a request (rein_model_request_set_stop) arrive under
 * each wire's own member (OpenAI chat "stop", Anthropic "stop_sequences", Ollama
 * "options.stop", Gemini "generationConfig.stopSequences", Bedrock
 * "inferenceConfig.stopSequences", DashScope native "parameters.stop") and nowhere else; the
 * Responses API, which has no such field, and counts past a wire's limit are refused before
 * anything is sent, naming the wire. And the schema keywords Gemini's Schema cannot carry come
 * back to the caller (rein_model_request_dropped), not only to the log. top_p goes the same way
 * as the stop sequences.
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

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_each_wire_sends_stop_sequences_under_its_own_name),
    cmocka_unit_test(test_no_stop_sequences_no_member),
    cmocka_unit_test(test_each_wire_sends_top_p_under_its_own_name),
    cmocka_unit_test(test_responses_wire_refuses_stop_sequences_naming_the_wire),
    cmocka_unit_test(test_counts_past_a_wires_limit_are_refused),
    cmocka_unit_test(test_set_stop_refuses_empty_and_too_many),
    cmocka_unit_test(test_gemini_dropped_keywords_are_returned),
    cmocka_unit_test(test_other_wires_drop_nothing),
};

REIN_TEST_MAIN(tests)
