/*
 * Unit tests for the provider adapters against the wire formats as the providers document
 * them (not only as the recordings in /work/shared/fixtures show them): SSE framing by the
 * WHATWG rules, OpenAI chat completion chunks and bodies, Anthropic message events and
 * Ollama's /api/chat lines, each with the inputs real servers send (streams cut mid-event,
 * plain-text error events, OpenRouter's finish_reason "error", prompt-cache usage, …).
 * Every input is decoded whole and in small pieces, which must give the same response.
 */
#include "test.h"

#include <rein/provider.h>

/* ---------------------------------------------------------------------------------------
 * Helpers
 */

/* Decodes text in pieces of chunk bytes (0: whole). NULL on failure, err filled. */
static rein_model_response *decode_in(enum rein_wire_format fmt, const char *text, size_t chunk,
                                      char *notes, size_t notes_size, rein_error *err)
{
    rein_provider_decoder *d = rein_provider_decoder_new(fmt, NULL, NULL, NULL);
    size_t len = strlen(text);
    rein_model_response *r = NULL;
    rein_err rc = REIN_OK;

    assert_non_null(d);
    rein_error_clear(err);
    if (!chunk)
        chunk = len ? len : 1;
    for (size_t off = 0; off < len && !rc; off += chunk)
        rc = rein_provider_decoder_feed(d, text + off, len - off < chunk ? len - off : chunk, err);
    if (!rc)
        rc = rein_provider_decoder_finish(d, &r, err);
    if (notes)
        snprintf(notes, notes_size, "%s", rein_provider_decoder_notes(d));
    rein_provider_decoder_free(d);
    return rc ? NULL : r;
}

/* Decodes text whole and in pieces of 1..7 bytes; checks that every way gives the same JSON
 * and the same completeness, and returns the whole decode. Fails the test on an error. */
static rein_model_response *decode(enum rein_wire_format fmt, const char *text)
{
    rein_error err;
    rein_model_response *whole = decode_in(fmt, text, 0, NULL, 0, &err);
    json_t *want;

    if (!whole)
        fail_msg("decode failed: %s", err.msg);
    want = rein_model_response_to_json(whole);
    assert_non_null(want);
    for (size_t chunk = 1; chunk <= 7; chunk++) {
        rein_model_response *r = decode_in(fmt, text, chunk, NULL, 0, &err);
        json_t *got;
        if (!r)
            fail_msg("decode in pieces of %zu failed: %s", chunk, err.msg);
        got = rein_model_response_to_json(r);
        assert_non_null(got);
        if (!json_equal(want, got)) {
            char *w = json_dumps(want, JSON_COMPACT), *g = json_dumps(got, JSON_COMPACT);
            fail_msg("pieces of %zu decode differently:\n%s\n%s", chunk, g, w);
        }
        assert_int_equal(rein_model_response_is_complete(r),
                         rein_model_response_is_complete(whole));
        json_decref(got);
        rein_model_response_free(r);
    }
    json_decref(want);
    return whole;
}

static const char *error_member(const rein_model_response *r, const char *key)
{
    return json_string_value(json_object_get(rein_model_response_error(r), key));
}

#define OAI(delta) "data: {\"choices\":[{\"index\":0,\"delta\":" delta "}]}\n\n"
#define OAI_FINISH(reason)                                                                         \
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"" reason "\"}]}\n\n"
#define ANT(type, json) "event: " type "\ndata: {\"type\":\"" type "\"" json "}\n\n"

/* ---------------------------------------------------------------------------------------
 * A stream cut inside an event is a dropped stream, never a parse failure or an answer
 */

static void test_stream_cut_inside_an_event_is_incomplete(void **state)
{
    static const char *const openai_cut[] = {
        /* inside the JSON of an unterminated data line */
        OAI("{\"content\":\"Hel\"}") "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo",
        /* the line is whole but the event's blank line never came, JSON cut */
        OAI("{\"content\":\"Hel\"}") "data: {\"choices\":[{\"index\":0,\"delta\":{\"con\n",
        /* the finish chunk itself is cut: the reply must not count as finished */
        OAI("{\"content\":\"Hel\"}") "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_re",
    };
    char notes[512];
    rein_model_response *r;
    rein_error err;

    (void)state;
    for (size_t i = 0; i < sizeof(openai_cut) / sizeof(openai_cut[0]); i++) {
        r = decode(REIN_WIRE_OPENAI_SSE, openai_cut[i]);
        assert_false(rein_model_response_is_complete(r));
        assert_string_equal(rein_model_response_text(r), "Hel");
        assert_null(rein_model_response_finish_reason(r));
        rein_model_response_free(r);
        r = decode_in(REIN_WIRE_OPENAI_SSE, openai_cut[i], 0, notes, sizeof(notes), &err);
        assert_non_null(r);
        assert_non_null(strstr(notes, "the stream was cut"));
        rein_model_response_free(r);
    }

    /* A call whose arguments were in the cut event is incomplete, not invalid. */
    r = decode(REIN_WIRE_OPENAI_SSE,
               OAI("{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":"
                   "\"read\",\"arguments\":\"{\\\"path\\\":\"}}]}") "data: {\"choices\":[{"
                                                                    "\"index\":0,\"delta\":{"
                                                                    "\"tool_calls\":[{\"index\":"
                                                                    "0,\"function\":{\"argu");
    assert_int_equal(rein_model_response_call_count(r), 1);
    assert_int_equal(rein_model_call_status(rein_model_response_call(r, 0)),
                     REIN_MODEL_CALL_INCOMPLETE);
    assert_string_equal(rein_model_call_raw_arguments(rein_model_response_call(r, 0)),
                        "{\"path\":");
    rein_model_response_free(r);

    /* Anthropic, cut inside message_delta. */
    r = decode(
        REIN_WIRE_ANTHROPIC_SSE,
        ANT("message_start", ",\"message\":{\"usage\":{\"input_tokens\":4}}") ANT(
            "content_block_start",
            ",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}")
            ANT("content_block_delta", ",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"
                                       "\"Hi\"}") "event: message_delta\ndata: "
                                                  "{\"type\":\"message_delta\",\"delta\":{"
                                                  "\"stop_reason\":\"end_");
    assert_false(rein_model_response_is_complete(r));
    assert_string_equal(rein_model_response_text(r), "Hi");
    assert_null(rein_model_response_finish_reason(r));
    rein_model_response_free(r);

    /* Ollama, cut inside the final line. */
    r = decode(REIN_WIRE_OLLAMA_NDJSON,
               "{\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\n"
               "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":tr");
    assert_false(rein_model_response_is_complete(r));
    assert_string_equal(rein_model_response_text(r), "Hi");
    rein_model_response_free(r);

    /* A stream cut inside its very first event is an empty, incomplete reply. */
    r = decode(REIN_WIRE_OPENAI_SSE, "data: {\"choices\":[{\"ind");
    assert_false(rein_model_response_is_complete(r));
    assert_string_equal(rein_model_response_text(r), "");
    rein_model_response_free(r);

    /* Bad JSON in a terminated event, or in the middle of the stream, is still an error. */
    assert_null(decode_in(REIN_WIRE_OPENAI_SSE,
                          "data: {\"choices\":[{\"ind\n\n" OAI("{\"content\":\"x\"}"), 0, NULL, 0,
                          &err));
    assert_int_equal(err.code, REIN_EPARSE);
    assert_null(decode_in(REIN_WIRE_OPENAI_SSE, OAI("{\"content\":\"x\"}") "data: {nope}", 0, NULL,
                          0, &err));
    assert_int_equal(err.code, REIN_EPARSE);
}

static void test_stream_without_end_marker_is_noted(void **state)
{
    char notes[512];
    rein_model_response *r;
    rein_error err;

    (void)state;
    /* Whole events, but neither a finish reason nor [DONE]: incomplete, and said so. */
    r = decode_in(REIN_WIRE_OPENAI_SSE, OAI("{\"content\":\"Hel\"}") OAI("{\"content\":\"lo\"}"), 0,
                  notes, sizeof(notes), &err);
    assert_non_null(r);
    assert_false(rein_model_response_is_complete(r));
    assert_string_equal(rein_model_response_text(r), "Hello");
    assert_non_null(strstr(notes, "without its end marker"));
    rein_model_response_free(r);

    r = decode_in(REIN_WIRE_OPENAI_SSE, OAI("{\"content\":\"Hi\"}") OAI_FINISH("stop"), 0, notes,
                  sizeof(notes), &err);
    assert_non_null(r);
    assert_true(rein_model_response_is_complete(r));
    assert_string_equal(notes, "");
    rein_model_response_free(r);
}

/* ---------------------------------------------------------------------------------------
 * Errors sent inside a stream
 */

static void test_plain_text_error_events_are_the_providers_error(void **state)
{
    rein_model_response *r;

    (void)state;
    r = decode(REIN_WIRE_OPENAI_SSE,
               OAI("{\"content\":\"Hi\"}") "event: error\ndata: Internal Server Error\r\n\r\n");
    assert_string_equal(error_member(r, "message"), "Internal Server Error");
    assert_false(rein_model_response_is_complete(r));
    assert_string_equal(rein_model_response_text(r), "Hi");
    rein_model_response_free(r);

    r = decode(
        REIN_WIRE_ANTHROPIC_SSE,
        ANT("message_start",
            ",\"message\":{\"usage\":{\"input_tokens\":4}}") "event: error\ndata: upstream connect "
                                                             "error or disconnect\n\n");
    assert_string_equal(error_member(r, "message"), "upstream connect error or disconnect");
    assert_false(rein_model_response_is_complete(r));
    rein_model_response_free(r);

    /* Not UTF-8: kept, cleaned, never a failure. */
    r = decode(REIN_WIRE_OPENAI_SSE, "event: error\ndata: bad \xff byte\n\n");
    assert_non_null(error_member(r, "message"));
    assert_non_null(strstr(error_member(r, "message"), "bad "));
    rein_model_response_free(r);
}

static void test_openrouter_finish_reason_error_is_not_a_normal_end(void **state)
{
    rein_model_response *r;

    (void)state;
    /* OpenRouter: an upstream failure mid-stream comes as a chunk with an "error" object and
     * finish_reason "error", then [DONE]. */
    r =
        decode(
            REIN_WIRE_OPENAI_SSE, OAI("{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":"
                                      "\"function\","
                                      "\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"pa\"}}]"
                                      "}") "data: "
                                           "{\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\","
                                           "\"error\":{"
                                           "\"code\":502,\"message\":\"Provider "
                                           "disconnected\"},\"choices\":[{\"index\":0,"
                                           "\"delta\":{\"content\":\"\"},\"finish_reason\":"
                                           "\"error\"}]}\n\n"
                                           "data: [DONE]\n\n");
    assert_false(rein_model_response_is_complete(r));
    assert_string_equal(error_member(r, "message"), "Provider disconnected");
    assert_string_equal(rein_model_response_finish_reason(r), "error");
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_OTHER);
    /* The call was cut by the failure: incomplete, not invalid JSON. */
    assert_int_equal(rein_model_call_status(rein_model_response_call(r, 0)),
                     REIN_MODEL_CALL_INCOMPLETE);
    rein_model_response_free(r);

    /* An error object after a finish reason still marks the reply as failed. */
    r = decode(REIN_WIRE_OPENAI_SSE, OAI("{\"content\":\"Hi\"}") OAI_FINISH(
                                         "stop") "data: {\"error\":{\"message\":\"late\"}}\n\n");
    assert_false(rein_model_response_is_complete(r));
    assert_string_equal(error_member(r, "message"), "late");
    rein_model_response_free(r);
}

/* ---------------------------------------------------------------------------------------
 * Usage
 */

static void test_anthropic_input_tokens_include_the_prompt_cache(void **state)
{
    rein_model_response *r;

    (void)state;
    r = decode(
        REIN_WIRE_ANTHROPIC_SSE,
        ANT("message_start", ",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":10,"
                             "\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":"
                             "2000,\"output_tokens\":1}}")
            ANT("content_block_start",
                ",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}")
                ANT("content_block_delta",
                    ",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}")
                    ANT("content_block_stop", ",\"index\":0")
                        ANT("message_delta", ",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":"
                                             "{\"output_tokens\":7}") ANT("message_stop", ""));
    assert_int_equal(rein_model_response_input_tokens(r), 2110);
    assert_int_equal(rein_model_response_output_tokens(r), 7);
    rein_model_response_free(r);

    /* message_delta may repeat the input counts (cumulative): they are not added twice. */
    r = decode(REIN_WIRE_ANTHROPIC_SSE,
               ANT("message_start", ",\"message\":{\"usage\":{\"input_tokens\":10,"
                                    "\"cache_read_input_tokens\":5,\"output_tokens\":1}}")
                   ANT("message_delta",
                       ",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"input_tokens\":10,"
                       "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":5,"
                       "\"output_tokens\":30}") ANT("message_stop", ""));
    assert_int_equal(rein_model_response_input_tokens(r), 15);
    assert_int_equal(rein_model_response_output_tokens(r), 30);
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_LENGTH);
    rein_model_response_free(r);

    /* A body: the same sum; null cache fields count as none. */
    r = decode(REIN_WIRE_ANTHROPIC_JSON,
               "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\","
               "\"text\":\"hi\"}],\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":3,"
               "\"cache_creation_input_tokens\":null,\"cache_read_input_tokens\":40,"
               "\"output_tokens\":2}}");
    assert_int_equal(rein_model_response_input_tokens(r), 43);
    rein_model_response_free(r);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_stream_cut_inside_an_event_is_incomplete),
    cmocka_unit_test(test_stream_without_end_marker_is_noted),
    cmocka_unit_test(test_plain_text_error_events_are_the_providers_error),
    cmocka_unit_test(test_openrouter_finish_reason_error_is_not_a_normal_end),
    cmocka_unit_test(test_anthropic_input_tokens_include_the_prompt_cache),
};

REIN_TEST_MAIN(tests)
