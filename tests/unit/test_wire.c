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

static const rein_model_call *only_call_of(const rein_model_response *r)
{
    assert_int_equal(rein_model_response_call_count(r), 1);
    return rein_model_response_call(r, 0);
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
    r = decode(REIN_WIRE_ANTHROPIC_SSE,
               ANT("message_start", ",\"message\":{\"usage\":{\"input_tokens\":4}}")
                   ANT("content_block_start",
                       ",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}")
                       ANT("content_block_delta",
                           ",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"
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

    /* The event type may follow the data within one event (the spec's field order is free). */
    r = decode(REIN_WIRE_OPENAI_SSE, OAI("{\"content\":\"Hi\"}") "data: {\"message\":\"later\"}\n"
                                                                 "event: error\n\n");
    assert_string_equal(error_member(r, "message"), "later");
    rein_model_response_free(r);
    r = decode(REIN_WIRE_ANTHROPIC_SSE, "data: overloaded, try again\nevent: error\n\n");
    assert_string_equal(error_member(r, "message"), "overloaded, try again");
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
    r = decode(REIN_WIRE_OPENAI_SSE,
               OAI("{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":"
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

/* ---------------------------------------------------------------------------------------
 * What was already right: each checklist item pinned by a test
 */

static void test_sse_framing_by_the_whatwg_rules(void **state)
{
    rein_model_response *r;

    (void)state;
    /* BOM, CRLF, comments (OpenRouter's keep-alive), "data:" with and without the space,
     * retry:/id:/unknown fields, a two-line data field joined with \n (JSON allows it). */
    r = decode(REIN_WIRE_OPENAI_SSE,
               "\xEF\xBB\xBF: OPENROUTER PROCESSING\r\n\r\n"
               "retry: 3000\r\nid: 1\r\ndata:{\"choices\":[{\"index\":0,\"delta\":{\"content\":"
               "\"a\"}}]}\r\n\r\n"
               ": ping\r\n\r\n"
               "data: {\"choices\":[{\"index\":0,\r\ndata: \"delta\":{\"content\":\"b\"}}]}\r\n\r\n"
               "x-unknown: 1\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"c\"},"
               "\"finish_reason\":\"stop\"}]}\r\n\r\ndata: [DONE]\r\n\r\n");
    assert_string_equal(rein_model_response_text(r), "abc");
    assert_true(rein_model_response_is_complete(r));
    rein_model_response_free(r);

    /* Lone CR line ends; the last event without its blank line is still dispatched. */
    r = decode(REIN_WIRE_OPENAI_SSE,
               "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\r\r"
               "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}");
    assert_string_equal(rein_model_response_text(r), "x");
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_LENGTH);
    assert_true(rein_model_response_is_complete(r));
    rein_model_response_free(r);
}

static void test_sse_very_long_line(void **state)
{
    static const char head[] = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
    static const char tail[] = "\"},\"finish_reason\":\"stop\"}]}\n\n";
    size_t n = (size_t)3 << 20, len = sizeof(head) - 1 + n + sizeof(tail) - 1;
    char *text = malloc(len + 1);
    rein_model_response *r;
    rein_error err;

    (void)state;
    assert_non_null(text);
    memcpy(text, head, sizeof(head) - 1);
    memset(text + sizeof(head) - 1, 'y', n);
    memcpy(text + sizeof(head) - 1 + n, tail, sizeof(tail));
    r = decode_in(REIN_WIRE_OPENAI_SSE, text, 4096, NULL, 0, &err);
    assert_non_null(r);
    assert_int_equal(strlen(rein_model_response_text(r)), n);
    assert_true(rein_model_response_is_complete(r));
    rein_model_response_free(r);
    free(text);
}

static void test_openai_chunks_real_servers_send(void **state)
{
    const rein_model_call *c;
    rein_model_response *r;

    (void)state;
    /* Azure's first chunk (choices: [], prompt_filter_results), usage: null on every chunk,
     * content: null, refusal: null, obfuscation / service_tier / system_fingerprint, a first
     * tool delta with arguments "", later deltas repeating id and type or leaving type out,
     * the usage chunk with choices: []. */
    r = decode(
        REIN_WIRE_OPENAI_SSE,
        "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\","
        "\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":{}}]}\n\n"
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"service_tier\":\"default\","
        "\"system_fingerprint\":\"fp_1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
        "\"assistant\",\"content\":null,\"refusal\":null,\"tool_calls\":[{\"index\":0,\"id\":"
        "\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":"
        "\"\"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null,\"obfuscation\":"
        "\"x1\"}\n\n"
        "data: "
        "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\","
        "\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"ci\"}}]}"
        ","
        "\"finish_reason\":null}],\"usage\":null}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
        "\"arguments\":\"ty\\\":\\\"Oslo\\\"}\"}}]}}],\"usage\":null}\n\n"
        "data: "
        "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\","
        "\"function\":{\"name\":\"now\",\"arguments\":\"\"}}]}}],\"usage\":null}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],"
        "\"usage\":null}\n\n"
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":9,"
        "\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n"
        "data: [DONE]\n\n");
    assert_int_equal(rein_model_response_call_count(r), 2);
    c = rein_model_response_call(r, 0);
    assert_string_equal(rein_model_call_id(c), "call_a");
    assert_string_equal(rein_model_call_name(c), "get_weather");
    assert_string_equal(rein_model_call_raw_arguments(c), "{\"city\":\"Oslo\"}");
    c = rein_model_response_call(r, 1);
    assert_string_equal(rein_model_call_id(c), "call_b");
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_OK); /* "" means {} */
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_TOOL_CALLS);
    assert_int_equal(rein_model_response_input_tokens(r), 20);
    assert_int_equal(rein_model_response_output_tokens(r), 9);
    assert_true(rein_model_response_is_complete(r));
    rein_model_response_free(r);

    /* A streamed refusal. */
    r = decode(REIN_WIRE_OPENAI_SSE,
               OAI("{\"role\":\"assistant\",\"refusal\":\"\"}") OAI("{\"refusal\":\"I can't\"}")
                   OAI("{\"refusal\":\" help.\"}") OAI_FINISH("stop") "data: [DONE]\n\n");
    assert_string_equal(rein_model_response_refusal(r), "I can't help.");
    assert_string_equal(rein_model_response_text(r), "");
    rein_model_response_free(r);

    /* reasoning_content (DashScope, DeepSeek, vLLM) and reasoning (OpenRouter, Ollama /v1). */
    r = decode(REIN_WIRE_OPENAI_SSE,
               OAI("{\"reasoning_content\":\"think \"}") OAI("{\"reasoning\":\"more\"}")
                   OAI("{\"content\":\"ok\"}") OAI_FINISH("stop"));
    assert_string_equal(rein_model_response_reasoning(r), "think more");
    assert_string_equal(rein_model_response_text(r), "ok");
    rein_model_response_free(r);
}

static void test_openai_legacy_function_call(void **state)
{
    const rein_model_call *c;
    rein_model_response *r;

    (void)state;
    r = decode(REIN_WIRE_OPENAI_SSE,
               OAI("{\"role\":\"assistant\",\"content\":null,\"function_call\":{\"name\":"
                   "\"get_weather\",\"arguments\":\"\"}}") OAI("{\"function_call\":{\"arguments\":"
                                                               "\"{\\\"city\\\":\"}}")
                   OAI("{\"function_call\":{\"arguments\":\"\\\"Rome\\\"}\"}}")
                       OAI_FINISH("function_call") "data: [DONE]\n\n");
    c = only_call_of(r);
    assert_string_equal(rein_model_call_name(c), "get_weather");
    assert_string_equal(rein_model_call_raw_arguments(c), "{\"city\":\"Rome\"}");
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_OK);
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_TOOL_CALLS);
    rein_model_response_free(r);

    r = decode(REIN_WIRE_OPENAI_JSON,
               "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,"
               "\"function_call\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":2}\"}},"
               "\"finish_reason\":\"function_call\"}]}");
    c = only_call_of(r);
    assert_string_equal(rein_model_call_raw_arguments(c), "{\"x\":2}");
    rein_model_response_free(r);
}

static void test_openai_finish_reasons_and_choices(void **state)
{
    static const struct {
        const char *word;
        enum rein_finish f;
    } cases[] = {
        {"stop", REIN_FINISH_STOP},
        {"length", REIN_FINISH_LENGTH},
        {"tool_calls", REIN_FINISH_TOOL_CALLS},
        {"content_filter", REIN_FINISH_CONTENT_FILTER},
        {"function_call", REIN_FINISH_TOOL_CALLS},
        {"something_new", REIN_FINISH_OTHER},
    };
    char text[512], notes[256];
    rein_model_response *r;
    rein_error err;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(text, sizeof(text), OAI("{\"content\":\"x\"}") "%s",
                 "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"");
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s\"}]}\n\n", cases[i].word);
        r = decode(REIN_WIRE_OPENAI_SSE, text);
        assert_string_equal(rein_model_response_finish_reason(r), cases[i].word);
        assert_int_equal(rein_model_response_finish(r), cases[i].f);
        assert_true(rein_model_response_is_complete(r));
        rein_model_response_free(r);
    }

    /* n > 1: choice 0 is assembled, the others are left out and a note says so. */
    r = decode_in(REIN_WIRE_OPENAI_SSE,
                  "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"one\"}},{\"index\":0,"
                  "\"delta\":{\"content\":\"zero\"}}]}\n\n"
                  "data: {\"choices\":[{\"index\":1,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":"
                  "\"c9\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},\"finish_reason\":"
                  "\"tool_calls\"}]}\n\n" OAI_FINISH("stop"),
                  0, notes, sizeof(notes), &err);
    assert_non_null(r);
    assert_string_equal(rein_model_response_text(r), "zero");
    assert_int_equal(rein_model_response_call_count(r), 0);
    assert_string_equal(rein_model_response_finish_reason(r), "stop");
    assert_non_null(strstr(notes, "choice 0 was assembled"));
    rein_model_response_free(r);
}

static void test_openai_errors_in_the_stream_and_bodies(void **state)
{
    rein_model_response *r;

    (void)state;
    /* An error object as a data payload (vLLM, Groq, OpenRouter), and vLLM's older flat form. */
    r = decode(REIN_WIRE_OPENAI_SSE,
               OAI("{\"content\":\"Hi\"}") "data: {\"error\":{\"message\":\"out of memory\","
                                           "\"type\":\"InternalServerError\",\"code\":500}}\n\n");
    assert_string_equal(error_member(r, "message"), "out of memory");
    assert_false(rein_model_response_is_complete(r));
    rein_model_response_free(r);
    r = decode(REIN_WIRE_OPENAI_SSE,
               "data: {\"object\":\"error\",\"message\":\"bad request\",\"type\":"
               "\"BadRequestError\",\"param\":null,\"code\":400}\n\n");
    assert_string_equal(error_member(r, "message"), "bad request");
    rein_model_response_free(r);
    /* event: error with a JSON payload. */
    r = decode(REIN_WIRE_OPENAI_SSE, "event: error\ndata: {\"message\":\"quota\"}\n\n");
    assert_string_equal(error_member(r, "message"), "quota");
    rein_model_response_free(r);

    /* Bodies: message.tool_calls and message.refusal, an error body. */
    r = decode(REIN_WIRE_OPENAI_JSON,
               "{\"id\":\"c\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":"
               "{\"role\":\"assistant\",\"content\":null,\"refusal\":null,\"tool_calls\":[{\"id\":"
               "\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get\",\"arguments\":"
               "\"{\\\"k\\\":1}\"}}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{"
               "\"prompt_tokens\":5,\"completion_tokens\":6}}");
    assert_string_equal(rein_model_call_raw_arguments(only_call_of(r)), "{\"k\":1}");
    assert_true(rein_model_response_is_complete(r));
    assert_null(rein_model_response_refusal(r));
    rein_model_response_free(r);
    r = decode(REIN_WIRE_OPENAI_JSON, "{\"choices\":[{\"index\":0,\"message\":{\"role\":"
                                      "\"assistant\",\"content\":null,\"refusal\":\"No.\"},"
                                      "\"finish_reason\":\"stop\"}]}");
    assert_string_equal(rein_model_response_refusal(r), "No.");
    rein_model_response_free(r);
    r = decode(REIN_WIRE_OPENAI_JSON, "{\"error\":{\"message\":\"Rate limit\",\"type\":"
                                      "\"requests\",\"code\":\"rate_limit_exceeded\"}}");
    assert_string_equal(error_member(r, "code"), "rate_limit_exceeded");
    assert_false(rein_model_response_is_complete(r));
    rein_model_response_free(r);
}

static void test_anthropic_events_real_servers_send(void **state)
{
    static const struct {
        const char *word;
        enum rein_finish f;
    } reasons[] = {
        {"end_turn", REIN_FINISH_STOP},       {"max_tokens", REIN_FINISH_LENGTH},
        {"stop_sequence", REIN_FINISH_STOP},  {"tool_use", REIN_FINISH_TOOL_CALLS},
        {"pause_turn", REIN_FINISH_OTHER},    {"refusal", REIN_FINISH_CONTENT_FILTER},
        {"model_decides", REIN_FINISH_OTHER},
    };
    char text[512];
    rein_model_response *r;
    json_t *m;

    (void)state;
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
        snprintf(text, sizeof(text),
                 ANT("message_start", ",\"message\":{\"usage\":{\"input_tokens\":1}}")
                     ANT("ping", "") "event: message_delta\ndata: {\"type\":\"message_delta\","
                                     "\"delta\":{\"stop_reason\":\"%s\"},\"usage\":{"
                                     "\"output_tokens\":2}}\n\n" ANT("message_stop", ""),
                 reasons[i].word);
        r = decode(REIN_WIRE_ANTHROPIC_SSE, text);
        assert_string_equal(rein_model_response_finish_reason(r), reasons[i].word);
        assert_int_equal(rein_model_response_finish(r), reasons[i].f);
        assert_true(rein_model_response_is_complete(r));
        rein_model_response_free(r);
    }

    /* Server tools (kept for replay, never a client call), citations, thinking with its
     * signature, redacted thinking, an unknown block and an unknown delta (skipped), a tool
     * use with no input deltas and one with an empty partial_json first, cache usage. */
    static const char *const parts[] = {
        ANT("message_start", ",\"message\":{\"usage\":{\"input_tokens\":5,"
                             "\"cache_read_input_tokens\":1}}"),
        ANT("content_block_start", ",\"index\":0,\"content_block\":{\"type\":\"thinking\","
                                   "\"thinking\":\"\",\"signature\":\"\"}"),
        ANT("content_block_delta",
            ",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}"),
        ANT("content_block_delta",
            ",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"sig\"}"),
        ANT("content_block_stop", ",\"index\":0"),
        ANT("content_block_start", ",\"index\":1,\"content_block\":{\"type\":"
                                   "\"redacted_thinking\",\"data\":\"opaque\"}"),
        ANT("content_block_stop", ",\"index\":1"),
        ANT("content_block_start", ",\"index\":2,\"content_block\":{\"type\":\"server_tool_use\","
                                   "\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}"),
        ANT("content_block_delta", ",\"index\":2,\"delta\":{\"type\":\"input_json_delta\","
                                   "\"partial_json\":\"{\\\"query\\\":\\\"x\\\"}\"}"),
        ANT("content_block_stop", ",\"index\":2"),
        ANT("content_block_start", ",\"index\":3,\"content_block\":{\"type\":"
                                   "\"web_search_tool_result\",\"tool_use_id\":\"srvtoolu_1\","
                                   "\"content\":[]}"),
        ANT("content_block_stop", ",\"index\":3"),
        ANT("ping", ""),
        ANT("content_block_start",
            ",\"index\":4,\"content_block\":{\"type\":\"text\",\"text\":\"\"}"),
        ANT("content_block_delta", ",\"index\":4,\"delta\":{\"type\":\"citations_delta\","
                                   "\"citation\":{\"type\":\"char_location\"}}"),
        ANT("content_block_delta",
            ",\"index\":4,\"delta\":{\"type\":\"text_delta\",\"text\":\"Found.\"}"),
        ANT("content_block_delta", ",\"index\":4,\"delta\":{\"type\":\"future_delta\",\"x\":1}"),
        ANT("content_block_stop", ",\"index\":4"),
        ANT("content_block_start", ",\"index\":5,\"content_block\":{\"type\":\"future_block\"}"),
        ANT("content_block_stop", ",\"index\":5"),
        ANT("content_block_start", ",\"index\":6,\"content_block\":{\"type\":\"tool_use\","
                                   "\"id\":\"toolu_a\",\"name\":\"now\",\"input\":{}}"),
        ANT("content_block_stop", ",\"index\":6"),
        ANT("content_block_start", ",\"index\":7,\"content_block\":{\"type\":\"tool_use\","
                                   "\"id\":\"toolu_b\",\"name\":\"get\",\"input\":{}}"),
        ANT("content_block_delta",
            ",\"index\":7,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}"),
        ANT("content_block_delta", ",\"index\":7,\"delta\":{\"type\":\"input_json_delta\","
                                   "\"partial_json\":\"{\\\"k\\\"\"}"),
        ANT("content_block_delta",
            ",\"index\":7,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\": 1}\"}"),
        ANT("content_block_stop", ",\"index\":7"),
        ANT("future_event", ""),
        ANT("message_delta", ",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{"
                             "\"input_tokens\":5,\"cache_read_input_tokens\":1,"
                             "\"output_tokens\":40}"),
        ANT("message_stop", ""),
    };
    struct rein_buf all;

    rein_buf_init(&all, 0);
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        assert_rein_ok(rein_buf_add(&all, parts[i], strlen(parts[i])), NULL);
    r = decode(REIN_WIRE_ANTHROPIC_SSE, all.ptr);
    rein_buf_release(&all);
    assert_string_equal(rein_model_response_text(r), "Found.");
    assert_string_equal(rein_model_response_reasoning(r), "hmm");
    assert_int_equal(rein_model_response_call_count(r), 2);
    assert_string_equal(rein_model_call_id(rein_model_response_call(r, 0)), "toolu_a");
    assert_string_equal(rein_model_call_raw_arguments(rein_model_response_call(r, 0)), "");
    assert_int_equal(rein_model_call_status(rein_model_response_call(r, 0)), REIN_MODEL_CALL_OK);
    assert_int_equal(json_object_size(rein_model_call_arguments(rein_model_response_call(r, 0))),
                     0);
    assert_string_equal(rein_model_call_raw_arguments(rein_model_response_call(r, 1)),
                        "{\"k\": 1}");
    assert_int_equal(rein_model_response_input_tokens(r), 6);
    assert_int_equal(rein_model_response_output_tokens(r), 40);
    assert_true(rein_model_response_is_complete(r));
    m = rein_model_response_message(r);
    assert_non_null(m);
    /* The server tool use and its result go back as they came; the unknown block too. */
    json_t *blocks = json_object_get(m, "server_blocks");
    assert_int_equal(json_array_size(blocks), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(blocks, 0), "type")),
                        "server_tool_use");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(blocks, 0), "input"), "query")),
                        "x");
    assert_string_equal(json_string_value(json_object_get(json_array_get(blocks, 1), "type")),
                        "web_search_tool_result");
    assert_string_equal(json_string_value(json_object_get(m, "reasoning_signature")), "sig");
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(m, "redacted_reasoning"), 0)), "opaque");
    json_decref(m);
    rein_model_response_free(r);

    /* Overloaded mid-stream: the error, no message_stop, not complete. */
    r = decode(REIN_WIRE_ANTHROPIC_SSE,
               ANT("message_start", ",\"message\":{\"usage\":{\"input_tokens\":1}}")
                   ANT("error", ",\"error\":{\"details\":null,\"type\":\"overloaded_error\","
                                "\"message\":\"Overloaded\"} "));
    assert_string_equal(error_member(r, "type"), "overloaded_error");
    assert_false(rein_model_response_is_complete(r));
    rein_model_response_free(r);
}

static void test_ollama_lines_real_servers_send(void **state)
{
    const rein_model_call *c;
    rein_model_response *r;

    (void)state;
    r = decode(REIN_WIRE_OLLAMA_NDJSON,
               "{\"model\":\"qwen3\",\"created_at\":\"t\",\"message\":{\"role\":\"assistant\","
               "\"content\":\"\",\"thinking\":\"let me see\"},\"done\":false}\n"
               "{\"model\":\"qwen3\",\"message\":{\"role\":\"assistant\",\"content\":\"\","
               "\"tool_calls\":[{\"function\":{\"name\":\"get_weather\",\"arguments\":{\"city\":"
               "\"Paris\",\"days\":2}}}]},\"done\":false}\n"
               "{\"model\":\"qwen3\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},"
               "\"done\":true,\"done_reason\":\"stop\",\"total_duration\":1,"
               "\"prompt_eval_count\":12,\"eval_count\":7}\n");
    c = only_call_of(r);
    assert_string_equal(rein_model_call_name(c), "get_weather");
    assert_string_equal(rein_model_call_raw_arguments(c), "{\"city\":\"Paris\",\"days\":2}");
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_OK);
    assert_string_equal(rein_model_response_reasoning(r), "let me see");
    assert_string_equal(rein_model_response_finish_reason(r), "stop");
    assert_int_equal(rein_model_response_input_tokens(r), 12);
    assert_int_equal(rein_model_response_output_tokens(r), 7);
    assert_true(rein_model_response_is_complete(r));
    rein_model_response_free(r);

    r = decode(REIN_WIRE_OLLAMA_NDJSON,
               "{\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\r\n"
               "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,"
               "\"done_reason\":\"length\",\"prompt_eval_count\":1,\"eval_count\":2}");
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_LENGTH);
    assert_true(rein_model_response_is_complete(r));
    rein_model_response_free(r);

    r = decode(REIN_WIRE_OLLAMA_NDJSON,
               "{\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\n"
               "{\"error\":\"model runner has unexpectedly stopped\"}\n");
    assert_string_equal(error_member(r, "message"), "model runner has unexpectedly stopped");
    assert_false(rein_model_response_is_complete(r));
    rein_model_response_free(r);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_stream_cut_inside_an_event_is_incomplete),
    cmocka_unit_test(test_stream_without_end_marker_is_noted),
    cmocka_unit_test(test_plain_text_error_events_are_the_providers_error),
    cmocka_unit_test(test_openrouter_finish_reason_error_is_not_a_normal_end),
    cmocka_unit_test(test_anthropic_input_tokens_include_the_prompt_cache),
    cmocka_unit_test(test_sse_framing_by_the_whatwg_rules),
    cmocka_unit_test(test_sse_very_long_line),
    cmocka_unit_test(test_openai_chunks_real_servers_send),
    cmocka_unit_test(test_openai_legacy_function_call),
    cmocka_unit_test(test_openai_finish_reasons_and_choices),
    cmocka_unit_test(test_openai_errors_in_the_stream_and_bodies),
    cmocka_unit_test(test_anthropic_events_real_servers_send),
    cmocka_unit_test(test_ollama_lines_real_servers_send),
};

REIN_TEST_MAIN(tests)
