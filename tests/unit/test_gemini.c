/*
 * Unit tests for the Gemini wire (src/providers/gemini.c): the real recorded responses in
 * tests/data/providers/gemini (see its SOURCES.md) decoded whole and in pieces of 1 to 7
 * bytes to the values written down next to them; and the wire as Google documents it beyond
 * those recordings: SSE framing as :streamGenerateContent?alt=sse sends it, thought parts,
 * every finish reason and what rein makes of it, safety ratings, a blocked prompt, errors in
 * the stream and in bodies (RetryInfo), a stream cut mid-event, the JSON array a stream
 * without alt=sse is, several candidates.
 */
#include "test.h"

#include <rein/provider.h>

#include <dirent.h>

/* rein's made-up call ids are left out of the written-down values (they depend on a seed). */
static json_t *as_json(const rein_model_response *r)
{
    json_t *j = rein_model_response_to_json(r), *c;
    size_t i;

    assert_non_null(j);
    json_array_foreach(json_object_get(j, "tool_calls"), i, c)
    {
        const char *id = json_string_value(json_object_get(c, "id"));
        if (id && strncmp(id, "call_", 5) == 0 && strlen(id) == 21)
            json_object_del(c, "id");
    }
    return j;
}

/* Decodes text whole and in pieces of 1..7 bytes; every way must give the same JSON. */
static rein_model_response *decode(const char *fmt, const char *text, bool lines, char *notes,
                                   size_t notes_size)
{
    rein_error err;
    rein_model_response *whole =
        test_decode(fmt, text, strlen(text), 0, lines, notes, notes_size, &err);
    json_t *want;

    if (!whole)
        fail_msg("decode failed: %s", err.msg);
    want = as_json(whole);
    for (size_t chunk = 1; chunk <= 7; chunk++) {
        rein_model_response *r = test_decode(fmt, text, strlen(text), chunk, lines, NULL, 0, &err);
        json_t *got;
        if (!r)
            fail_msg("decode in pieces of %zu failed: %s", chunk, err.msg);
        got = as_json(r);
        if (!json_equal(want, got))
            fail_msg("pieces of %zu decode differently", chunk);
        assert_int_equal(rein_model_response_is_complete(r),
                         rein_model_response_is_complete(whole));
        json_decref(got);
        rein_model_response_free(r);
    }
    json_decref(want);
    return whole;
}

/* ---------------------------------------------------------------------------------------
 * The recordings
 */

static void test_recordings_decode_to_the_written_down_values(void **state)
{
    char dir[1024];
    struct dirent *e;
    DIR *d;
    int checked = 0;

    (void)state;
    snprintf(dir, sizeof(dir), "%s/tests/data/providers/gemini", REIN_SOURCE_DIR);
    d = opendir(dir);
    assert_non_null(d);
    while ((e = readdir(d))) {
        char path[2048];
        json_t *spec, *want;
        const char *rec, *fmt;
        char *text;
        size_t len;
        if (!strstr(e->d_name, ".expected.json"))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        spec = rein_json_load_file(path, NULL);
        assert_non_null(spec);
        rec = json_string_value(json_object_get(spec, "recording"));
        fmt = json_string_value(json_object_get(spec, "format"));
        want = json_object_get(spec, "expect");
        snprintf(path, sizeof(path), "%s/%s", dir, rec);
        text = test_read_file(path, &len);
        assert_non_null(text);
        for (size_t chunk = 0; chunk <= 7; chunk++) {
            rein_error err;
            rein_model_response *r = test_decode(
                fmt, text, len, chunk, strstr(rec, ".stream.jsonl") != NULL, NULL, 0, &err);
            json_t *got;
            if (!r)
                fail_msg("%s (pieces of %zu): %s", rec, chunk, err.msg);
            got = as_json(r);
            if (!json_equal(want, got)) {
                char *g = json_dumps(got, JSON_COMPACT);
                fail_msg("%s (pieces of %zu) decodes to %.600s", rec, chunk, g);
            }
            json_decref(got);
            rein_model_response_free(r);
        }
        free(text);
        json_decref(spec);
        checked++;
    }
    closedir(d);
    assert_int_equal(checked, 11); /* every Gemini recording */
}

/* The signatures Gemini 3 puts on a function call and on the last text part go back with the
 * assistant message: per call, and as the reply's signature. */
static void test_recorded_signatures_go_into_the_message(void **state)
{
    char path[1024], *text;
    rein_model_response *r;
    rein_error err;
    json_t *m;
    size_t len;

    (void)state;
    snprintf(path, sizeof(path), "%s/tests/data/providers/gemini/%s", REIN_SOURCE_DIR,
             "vercel-google-tool-call.stream.jsonl");
    text = test_read_file(path, &len);
    assert_non_null(text);
    r = test_decode("gemini-sse", text, len, 0, true, NULL, 0, &err);
    assert_non_null(r);
    m = rein_model_response_message(r);
    assert_non_null(m);
    assert_true(strncmp(json_string_value(json_object_get(
                            json_array_get(json_object_get(m, "tool_calls"), 0), "signature")),
                        "EqUCCqICAb4+9vsh8Pd5", 20) == 0);
    json_decref(m);
    rein_model_response_free(r);
    free(text);

    snprintf(path, sizeof(path), "%s/tests/data/providers/gemini/%s", REIN_SOURCE_DIR,
             "vercel-google-reasoning-gemini3.stream.jsonl");
    text = test_read_file(path, &len);
    assert_non_null(text);
    r = test_decode("gemini-sse", text, len, 3, true, NULL, 0, &err);
    assert_non_null(r);
    m = rein_model_response_message(r);
    assert_true(strncmp(json_string_value(json_object_get(m, "reasoning_signature")),
                        "EpAICo0IAb4+9vuku3oD", 20) == 0);
    json_decref(m);
    rein_model_response_free(r);
    free(text);
}

/* ---------------------------------------------------------------------------------------
 * The wire as documented
 */

#define CHUNK(parts, rest)                                                                         \
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[" parts "]}" rest          \
    ",\"index\":0}],\"modelVersion\":\"gemini-2.5-flash\"}\r\n\r\n"

static void test_sse_stream_with_thoughts_text_and_calls(void **state)
{
    static const char stream[] = CHUNK("{\"text\":\"Let me think\",\"thought\":true}", "")
        CHUNK("{\"text\":\"Checking \"},{\"text\":\"the weather.\"}", "")
            CHUNK("{\"functionCall\":{\"id\":\"fc-1\",\"name\":\"get_weather\",\"args\":"
                  "{\"city\":\"Paris\"}},\"thoughtSignature\":\"c2ln\"},{\"functionCall\":"
                  "{\"name\":\"get_time\",\"args\":{}}}",
                  "") "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":"
                      "[{\"text\":\"\"}]},\"finishReason\":\"STOP\",\"index\":0}],"
                      "\"usageMetadata\":{\"promptTokenCount\":120,\"candidatesTokenCount\":"
                      "30,\"thoughtsTokenCount\":12,\"cachedContentTokenCount\":100,"
                      "\"totalTokenCount\":162}}\r\n\r\n";
    rein_model_response *r = decode("gemini-sse", stream, false, NULL, 0);
    const rein_model_call *c;
    json_t *m;

    (void)state;
    assert_string_equal(rein_model_response_text(r), "Checking the weather.");
    assert_string_equal(rein_model_response_reasoning(r), "Let me think");
    assert_int_equal(rein_model_response_call_count(r), 2);
    c = rein_model_response_call(r, 0);
    assert_string_equal(rein_model_call_id(c), "fc-1");
    assert_string_equal(rein_model_call_name(c), "get_weather");
    assert_string_equal(rein_model_call_raw_arguments(c), "{\"city\":\"Paris\"}");
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_OK);
    c = rein_model_response_call(r, 1);
    assert_string_equal(rein_model_call_name(c), "get_time");
    assert_string_equal(rein_model_call_raw_arguments(c), "{}");
    assert_true(rein_model_response_is_complete(r));
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_STOP);
    assert_int_equal(rein_model_response_input_tokens(r), 120);
    assert_int_equal(rein_model_response_output_tokens(r), 42);
    m = rein_model_response_to_json(r);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(m, "usage"), "cached_tokens")), 100);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(m, "usage"), "reasoning_tokens")), 12);
    json_decref(m);
    m = rein_model_response_message(r);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(m, "tool_calls"), 0), "signature")),
                        "c2ln");
    assert_null(json_object_get(json_array_get(json_object_get(m, "tool_calls"), 1), "signature"));
    json_decref(m);
    rein_model_response_free(r);
}

/* Every finish reason Gemini documents is kept as it says it, and maps to rein's. */
static void test_finish_reasons_map_to_reins(void **state)
{
    static const struct {
        const char *reason;
        enum rein_finish want;
    } cases[] = {
        {"STOP", REIN_FINISH_STOP},
        {"MAX_TOKENS", REIN_FINISH_LENGTH},
        {"SAFETY", REIN_FINISH_CONTENT_FILTER},
        {"RECITATION", REIN_FINISH_CONTENT_FILTER},
        {"BLOCKLIST", REIN_FINISH_CONTENT_FILTER},
        {"PROHIBITED_CONTENT", REIN_FINISH_CONTENT_FILTER},
        {"SPII", REIN_FINISH_CONTENT_FILTER},
        {"IMAGE_SAFETY", REIN_FINISH_CONTENT_FILTER},
        {"LANGUAGE", REIN_FINISH_OTHER},
        {"OTHER", REIN_FINISH_OTHER},
        {"MALFORMED_FUNCTION_CALL", REIN_FINISH_OTHER},
        {"UNEXPECTED_TOOL_CALL", REIN_FINISH_OTHER},
        {"FINISH_REASON_UNSPECIFIED", REIN_FINISH_OTHER},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char body[512], notes[512];
        rein_model_response *r;
        snprintf(body, sizeof(body),
                 "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"x\"}]},"
                 "\"finishReason\":\"%s\",\"finishMessage\":\"Malformed function call: "
                 "print(default_api.f(a=1\",\"index\":0}]}",
                 cases[i].reason);
        r = decode("gemini-json", body, false, notes, sizeof(notes));
        assert_string_equal(rein_model_response_finish_reason(r), cases[i].reason);
        assert_int_equal(rein_model_response_finish(r), cases[i].want);
        assert_true(rein_model_response_is_complete(r));
        /* The finish message says why a reply ended early (not for a normal STOP). */
        assert_true((strstr(notes, "Malformed function call") != NULL) ==
                    (strcmp(cases[i].reason, "STOP") != 0));
        rein_model_response_free(r);
    }
}

static void test_safety_block_and_blocked_prompt(void **state)
{
    static const char safety[] = CHUNK(
        "{\"text\":\"Here is\"}",
        "") "data: {\"candidates\":[{\"finishReason\":\"SAFETY\",\"index\":0,\"safetyRatings\":"
            "[{\"category\":\"HARM_CATEGORY_HARASSMENT\",\"probability\":\"NEGLIGIBLE\"},"
            "{\"category\":\"HARM_CATEGORY_DANGEROUS_CONTENT\",\"probability\":\"HIGH\","
            "\"blocked\":true}]}]}\r\n\r\n";
    static const char blocked[] =
        "{\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\",\"safetyRatings\":[]},"
        "\"usageMetadata\":{\"promptTokenCount\":8,\"totalTokenCount\":8}}";
    char notes[512];
    rein_model_response *r;

    (void)state;
    r = decode("gemini-sse", safety, false, notes, sizeof(notes));
    assert_string_equal(rein_model_response_text(r), "Here is");
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_CONTENT_FILTER);
    assert_non_null(strstr(notes, "HARM_CATEGORY_DANGEROUS_CONTENT (HIGH) blocked"));
    assert_null(strstr(notes, "HARASSMENT"));
    rein_model_response_free(r);

    r = decode("gemini-json", blocked, false, notes, sizeof(notes));
    assert_string_equal(rein_model_response_finish_reason(r), "PROHIBITED_CONTENT");
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_CONTENT_FILTER);
    assert_true(rein_model_response_is_complete(r));
    assert_non_null(strstr(notes, "the prompt was blocked"));
    assert_int_equal(rein_model_response_input_tokens(r), 8);
    rein_model_response_free(r);
}

static void test_errors_in_the_stream_and_in_bodies(void **state)
{
    static const char in_stream[] =
        CHUNK("{\"text\":\"Par\"}", "") "data: {\"error\":{\"code\":503,\"message\":\"The model "
                                        "is overloaded. Please try again later.\",\"status\":"
                                        "\"UNAVAILABLE\"}}\r\n\r\n";
    static const char body[] =
        "{\"error\":{\"code\":429,\"message\":\"Resource exhausted\",\"status\":"
        "\"RESOURCE_EXHAUSTED\",\"details\":[{\"@type\":\"type.googleapis.com/"
        "google.rpc.RetryInfo\",\"retryDelay\":\"2.5s\"}]}}";
    rein_model_response *r;

    (void)state;
    r = decode("gemini-sse", in_stream, false, NULL, 0);
    assert_string_equal(rein_model_response_text(r), "Par");
    assert_false(rein_model_response_is_complete(r));
    assert_string_equal(json_string_value(json_object_get(rein_model_response_error(r), "status")),
                        "UNAVAILABLE");
    rein_model_response_free(r);

    r = decode("gemini-json", body, false, NULL, 0);
    assert_int_equal(rein_model_response_retry_after_ms(r), 2500);
    assert_string_equal(json_string_value(json_object_get(rein_model_response_error(r), "message")),
                        "Resource exhausted");
    rein_model_response_free(r);
}

static void test_cut_and_malformed_streams(void **state)
{
    static const char cut[] =
        CHUNK("{\"text\":\"Hello\"}", "") "data: {\"candidates\":[{\"content\":{\"parts\":[{\"te";
    static const char malformed[] = CHUNK("{\"text\":\"Hello\"}", "") "data: {\"broken\n\n" CHUNK(
        "{\"text\":\"!\"}", ",\"finishReason\":\"STOP\"");
    static const char not_object[] = "data: [1,2]\n\n";
    char notes[512];
    rein_model_response *r;
    rein_error err;

    (void)state;
    r = decode("gemini-sse", cut, false, notes, sizeof(notes));
    assert_string_equal(rein_model_response_text(r), "Hello");
    assert_false(rein_model_response_is_complete(r));
    assert_non_null(strstr(notes, "cut"));
    rein_model_response_free(r);

    assert_null(test_decode("gemini-sse", malformed, strlen(malformed), 0, false, NULL, 0, &err));
    assert_int_equal(err.code, REIN_EPARSE);
    assert_non_null(strstr(err.msg, "event 2"));
    assert_null(test_decode("gemini-sse", not_object, strlen(not_object), 0, false, NULL, 0, &err));
    assert_int_equal(err.code, REIN_EPARSE);
    assert_null(test_decode("gemini-json", "{\"hello\":1}", 11, 0, false, NULL, 0, &err));
    assert_non_null(strstr(err.msg, "no candidates"));
    /* A stream with no finish reason is incomplete, and the note says why. */
    r = decode("gemini-sse", CHUNK("{\"text\":\"Hi\"}", ""), false, notes, sizeof(notes));
    assert_false(rein_model_response_is_complete(r));
    assert_non_null(strstr(notes, "without its end marker"));
    rein_model_response_free(r);
}

/* :streamGenerateContent without alt=sse answers one JSON array of responses; a body may be
 * one too. Candidates other than 0 are noted, not mixed in. */
static void test_json_array_body_and_several_candidates(void **state)
{
    static const char arr[] =
        "[{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"A\"}]},"
        "\"index\":0},{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"B\"}]},"
        "\"index\":1}]},\n{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":"
        "[{\"text\":\"C\"}]},\"finishReason\":\"STOP\",\"index\":0}]}]";
    char notes[512];
    rein_model_response *r = decode("gemini-json", arr, false, notes, sizeof(notes));

    (void)state;
    assert_string_equal(rein_model_response_text(r), "AC");
    assert_true(rein_model_response_is_complete(r));
    assert_non_null(strstr(notes, "several choices"));
    rein_model_response_free(r);
}

/* Vertex's streamFunctionCallArguments: a call opened with willContinue, its arguments in
 * partialArgs pieces by JSON path (strings continued across pieces), closed by an empty
 * functionCall; a stream that stops inside one keeps what came. */
static void test_streamed_function_call_arguments(void **state)
{
    static const char stream[] =
        CHUNK("{\"functionCall\":{\"name\":\"plan\",\"willContinue\":true}}", "")
            CHUNK("{\"functionCall\":{\"partialArgs\":[{\"jsonPath\":\"$.title\",\"stringValue\":"
                  "\"Tri\",\"willContinue\":true}],\"willContinue\":true}}",
                  "")
                CHUNK("{\"functionCall\":{\"partialArgs\":[{\"jsonPath\":\"$.title\","
                      "\"stringValue\":\"p\"},{\"jsonPath\":\"$.days\",\"numberValue\":3},"
                      "{\"jsonPath\":\"$.stops[1].city\",\"stringValue\":\"Rome\"},{\"jsonPath\":"
                      "\"$.ok\",\"boolValue\":true}],\"willContinue\":true}}",
                      "") CHUNK("{\"functionCall\":{}}", ",\"finishReason\":\"STOP\"");
    rein_model_response *r = decode("gemini-sse", stream, false, NULL, 0);
    const rein_model_call *c;

    (void)state;
    assert_int_equal(rein_model_response_call_count(r), 1);
    c = rein_model_response_call(r, 0);
    assert_string_equal(rein_model_call_name(c), "plan");
    assert_string_equal(rein_model_call_raw_arguments(c),
                        "{\"title\":\"Trip\",\"days\":3,\"stops\":[null,{\"city\":\"Rome\"}],"
                        "\"ok\":true}");
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_OK);
    rein_model_response_free(r);
}

/* The format names (rein provider parse --format) and the presets. */
static void test_format_names_and_presets(void **state)
{
    enum rein_wire_format f;
    const char *const *names = rein_provider_names();
    bool gemini = false, vertex = false, compat = false;

    (void)state;
    assert_rein_ok(rein_wire_format_parse("gemini-sse", &f), NULL);
    assert_string_equal(rein_wire_format_name(f), "gemini-sse");
    assert_rein_ok(rein_wire_format_parse("gemini-json", &f), NULL);
    assert_string_equal(rein_wire_format_name(f), "gemini-json");
    for (size_t i = 0; names[i]; i++) {
        gemini |= strcmp(names[i], "gemini") == 0;
        vertex |= strcmp(names[i], "vertex") == 0;
        compat |= strcmp(names[i], "gemini-openai") == 0;
    }
    assert_true(gemini && vertex && compat);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_recordings_decode_to_the_written_down_values),
    cmocka_unit_test(test_recorded_signatures_go_into_the_message),
    cmocka_unit_test(test_sse_stream_with_thoughts_text_and_calls),
    cmocka_unit_test(test_finish_reasons_map_to_reins),
    cmocka_unit_test(test_safety_block_and_blocked_prompt),
    cmocka_unit_test(test_errors_in_the_stream_and_in_bodies),
    cmocka_unit_test(test_cut_and_malformed_streams),
    cmocka_unit_test(test_json_array_body_and_several_candidates),
    cmocka_unit_test(test_streamed_function_call_arguments),
    cmocka_unit_test(test_format_names_and_presets),
};

REIN_TEST_MAIN(tests)
