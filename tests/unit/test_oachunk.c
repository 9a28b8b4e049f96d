/*
 * Unit tests for the one-pass OpenAI chunk reader and its template (src/providers/oachunk.c):
 * it takes the chunk shapes of a stream and declines the rest, and a stream decoded with it
 * gives exactly what the general path (jtok/jsmn and take_object) gives: on hand-written
 * streams (key order, whitespace, escapes, unknown members, nulls, duplicates, several
 * choices, a template whose strings change or break, the SSE framings) and on every stream
 * in the real recordings under ../shared/fixtures, fed whole and in pieces of 7 and 300 bytes;
 * a stream's text-only chunks read straight from its bytes (rein__openai_text_events). The same
 * reader on a whole chat completion body (rein__openai_body_fast): the usual bodies are read,
 * the rest declined, and every body decodes as the general path decodes it.
 */
#include "test.h"

#include "providers/provider_int.h"

#include "../../fuzz/oachunk_same.h"

#define TEXT(lit) (lit), sizeof(lit) - 1

static void expect_same(const char *text, size_t len)
{
    struct rein_buf where;
    enum oa_verdict v = oa_compare(text, len, &where);

    if (v == OA_DIFFERENT) {
        fail_msg("the fast path and the general path differ on:\n%.*s\nfast path:\n%.*s", (int)len,
                 text, (int)where.len, where.ptr);
    }
    assert_int_equal(v, OA_SAME);
}

/* What the fast path answers for one payload on a new decoder: 1 read, 0 declined. */
static int fast_answer(const char *p, size_t len)
{
    rein_provider_decoder *d = rein_provider_decoder_new(REIN_WIRE_OPENAI_SSE, NULL, NULL, NULL);
    int r;

    assert_non_null(d);
    r = rein__openai_chunk_fast(d, p, len);
    rein_provider_decoder_free(d);
    return r;
}

/* One payload as a stream of one event, both paths. */
static void expect_same_payload(const char *p, size_t len)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    assert_rein_ok(rein_buf_adds(&b, "data: "), NULL);
    assert_rein_ok(rein_buf_add(&b, p, len), NULL);
    assert_rein_ok(rein_buf_adds(&b, "\n\ndata: [DONE]\n\n"), NULL);
    expect_same(b.ptr, b.len);
    rein_buf_release(&b);
}

static void test_stream_chunk_shapes_are_read(void **state)
{
    static const char *const texts[] = {
        /* OpenAI's own, with the first chunk's role and refusal, and obfuscation */
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"g\","
        "\"service_tier\":\"default\",\"system_fingerprint\":\"fp\",\"choices\":[{\"index\":0,"
        "\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"logprobs\":null,"
        "\"finish_reason\":null}],\"usage\":null,\"obfuscation\":\"abc\"}",
        /* members in another order, whitespace everywhere, no index, nulls */
        " { \"choices\" : [ { \"delta\" : { \"content\" : \"a\\\"b\\\\c\\u00e9\\n\" } , "
        "\"finish_reason\" : null } ] ,\n\"id\" : \"x\" , \"model\" : \"m\"\t}\r\n",
        "{\"choices\":[{\"finish_reason\":null,\"logprobs\":null,\"delta\":{\"content\":null,"
        "\"reasoning_content\":\"We\"},\"index\":0}],\"object\":\"chat.completion.chunk\","
        "\"usage\":null,\"created\":1770764942,\"system_fingerprint\":null,\"model\":\"qwen\","
        "\"id\":\"chatcmpl-3\"}",
        "{\"id\":\"r\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"\","
        "\"reasoning\":\"r\"}}]}",
        "{\"id\":\"t\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":"
        "\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get\",\"arguments\":\"\"}},"
        "{\"index\":1,\"id\":null,\"function\":{\"name\":\"put\",\"arguments\":\"{}\"}}]}}]}",
        "{\"id\":\"t\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
        "\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]}}],\"x\":{\"deep\":[1,-2.5e3,true,"
        "false,{}]}}",
        "{\"id\":\"azure\",\"choices\":[],\"prompt_filter_results\":[]}",
        "{\"choices\":[{\"index\":0,\"delta\":{\"cont\\u0065nt\":\"an escaped name is another "
        "member\"}}]}",
        /* the last chunks: a finish reason (with the calls open), usage in its spellings */
        "{\"id\":\"f\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}",
        "{\"id\":\"f\",\"choices\":[{\"finish_reason\":\"tool_calls\",\"delta\":{\"tool_calls\""
        ":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}",
        "{\"id\":\"u\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}",
        "{\"id\":\"u\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],"
        "\"usage\":{\"completion_tokens\":5,\"prompt_tokens\":7,\"total_tokens\":12,"
        "\"prompt_tokens_details\":{\"cached_tokens\":3,\"audio_tokens\":0,"
        "\"cache_write_tokens\":2},\"completion_tokens_details\":{\"reasoning_tokens\":4}}}",
        "{\"choices\":[],\"usage\":{\"input_tokens\":9,\"output_tokens\":8,\"prompt_tokens\":"
        "null,\"completion_tokens\":12.5,\"prompt_tokens_details\":null,"
        "\"completion_tokens_details\":[1]}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":-1,\"completion_tokens\":"
        "99999999999999999999,\"prompt_tokens_details\":{\"cached_tokens\":\"3\"},"
        "\"completion_tokens_details\":{\"reasoning_tokens\":1e3}}}",
        "{\"choices\":[],\"usage\":{\"output_tokens\":true,\"x\":{\"prompt_tokens\":5}}}",
        "{\"choices\":[],\"usage\":{}}",
    };
    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(texts); i++) {
        size_t len = strlen(texts[i]);
        if (fast_answer(texts[i], len) != 1)
            fail_msg("declined: %s", texts[i]);
        expect_same_payload(texts[i], len);
    }
}

/* Shapes left to the general path: the fast path declines them before doing anything. */
static void test_other_payloads_are_declined(void **state)
{
    static const struct {
        const char *s;
        size_t len;
    } texts[] = {
        /* finish reasons the general path reads otherwise, or that are no string */
        {TEXT("{\"choices\":[{\"delta\":{},\"finish_reason\":\"error\"}],\"error\":null}")},
        {TEXT("{\"choices\":[{\"delta\":{},\"finish_reason\":\"null\"}]}")},
        {TEXT("{\"choices\":[{\"delta\":{},\"finish_reason\":\"\"}]}")},
        {TEXT("{\"choices\":[{\"delta\":{},\"finish_reason\":\"st\\u006fp\"}]}")},
        {TEXT("{\"choices\":[{\"delta\":{},\"finish_reason\":1}]}")},
        /* usage read twice, or not an object; a usage-only chunk without choices */
        {TEXT("{\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"prompt_tokens\":2}}")},
        {TEXT("{\"choices\":[],\"usage\":7}")},
        {TEXT("{\"usage\":{\"prompt_tokens\":1}}")},
        {TEXT("{\"error\":{\"message\":\"rate limited\"}}")},
        {TEXT("{\"id\":\"n\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}},{\"index\":1,"
              "\"delta\":{\"content\":\"b\"}}]}")},
        {TEXT("{\"id\":\"i\",\"choices\":[{\"index\":1,\"delta\":{\"content\":\"b\"}}]}")},
        {TEXT("{\"id\":\"i\",\"choices\":[{\"index\":0.0,\"delta\":{\"content\":\"b\"}}]}")},
        {TEXT("{\"id\":\"d\",\"id\":\"e\",\"choices\":[]}")},
        {TEXT("{\"choices\":[{\"delta\":{\"content\":\"a\",\"content\":\"b\"}}]}")},
        {TEXT("{\"choices\":[{\"delta\":{\"content\":7}}]}")},
        {TEXT("{\"choices\":[{\"delta\":{\"refusal\":\"no\"}}]}")},
        {TEXT("{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}")},
        {TEXT("{\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":{}}}]}}]}")},
        {TEXT("{\"choices\":[{\"message\":{\"content\":\"whole\"}}]}")},
        {TEXT("{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}{\"choices\":[]}")},
        {TEXT("{\"choices\":[{\"delta\":{\"content\":\"a\"}}],}")},
        {TEXT("{\"choices\":[{\"delta\":{\"content\":\"tab\there\"}}]}")},
        {TEXT("{\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"x\":01}")},
        {TEXT("{\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"x\":nul}")},
        {TEXT("{\"choices\":[{\"delta\":{\"content\":\"cut")},
        {TEXT("{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\0")},
        {TEXT("{\"output\":{\"choices\":[]}}")},
        {TEXT("[{\"choices\":[]}]")},
        /* logprobs a client asked for, a search model's annotations */
        {TEXT("{\"choices\":[{\"delta\":{\"content\":\"a\"},\"logprobs\":{\"content\":[]}}]}")},
        {TEXT("{\"choices\":[{\"delta\":{\"content\":\"a\"},\"logprobs\":null,"
              "\"logprobs\":null}]}")},
        {TEXT("{\"choices\":[{\"delta\":{\"annotations\":[{\"type\":\"url_citation\"}]}}]}")},
        {TEXT("{\"choices\":[{\"delta\":{\"annotations\":{}}}]}")},
    };
    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(texts); i++) {
        if (fast_answer(texts[i].s, texts[i].len) != 0)
            fail_msg("read, not declined: #%zu %s", i, texts[i].s);
        expect_same_payload(texts[i].s, texts[i].len);
    }
}

/* The template: later chunks that differ only in their strings are read from it; any other
 * difference, or a string that is not one, goes back to a full reading (or the general path). */
static void test_template_follows_the_stream(void **state)
{
    static const char stream[] =
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
        "\"one\"},\"finish_reason\":null}],\"obfuscation\":\"ab\"}\n\n"
        /* the text and the padding change length; an escape in the text */
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
        "\" two \\\"2\\\"\"},\"finish_reason\":null}],\"obfuscation\":\"abcdef\"}\n\n"
        /* the id changes: read from the template too */
        "data: {\"id\":\"d\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
        "\"\"},\"finish_reason\":null}],\"obfuscation\":\"\"}\n\n"
        /* a null where the text was: a full reading */
        "data: {\"id\":\"d\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
        "null},\"finish_reason\":null}],\"obfuscation\":\"\"}\n\n"
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
        "\"three\"},\"finish_reason\":null}],\"obfuscation\":\"x\"}\n\n"
        /* the same bytes around a string that is not one (a raw tab): the general path's
         * error */
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
        "\"fo\tur\"},\"finish_reason\":null}],\"obfuscation\":\"x\"}\n\n";
    static const char calls[] =
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
        "\"id\":\"call_1\",\"function\":{\"name\":\"get\",\"arguments\":\"\"}}]}}]}\n\n"
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
        "\"function\":{\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\n"
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
        "\"function\":{\"arguments\":\":1}\"}}]}}]}\n\n"
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,"
        "\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n"
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
        "\"tool_calls\"}]}\n\n"
        "data: [DONE]\n\n";
    /* reasoning_content empty then not: which of the two members is taken follows */
    static const char reasoning[] =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"\",\"reasoning\":"
        "\"a\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"b\",\"reasoning\":"
        "\"b\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"\",\"reasoning\":"
        "\"c\"}}]}\n\n";
    size_t first = (size_t)(strstr(stream, "\n\n") + 2 - stream);
    size_t good = (size_t)(strstr(stream, "fo\tur") - stream);
    rein_provider_decoder *d;
    rein_error err;

    (void)state;
    expect_same(stream, sizeof(stream) - 1);
    while (good && memcmp(stream + good, "data:", 5) != 0)
        good--;
    expect_same(stream, good); /* without the broken one */
    expect_same(calls, sizeof(calls) - 1);
    expect_same(reasoning, sizeof(reasoning) - 1);

    /* the first chunk leaves a template, which the second uses */
    d = rein_provider_decoder_new(REIN_WIRE_OPENAI_SSE, NULL, NULL, NULL);
    assert_non_null(d);
    assert_null(d->oa_tmpl);
    assert_rein_ok(rein_provider_decoder_feed(d, stream, first, &err), &err);
    assert_non_null(d->oa_tmpl);
    rein_provider_decoder_free(d);
}

/* The framings SSE allows, around the chunks both paths read. */
static void test_sse_framings(void **state)
{
    static const char *const streams[] = {
        /* CRLF, a comment, an id line, data without the space */
        ": keep-alive\r\n\r\ndata:{\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
        "\"x\"}}]}\r\n\r\nid: 7\r\ndata: {\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{"
        "\"content\":\"y\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n",
        /* one chunk over two data lines (joined with a newline, which JSON allows) */
        "data: {\"id\":\"a\",\"choices\":[{\"index\":0,\n"
        "data: \"delta\":{\"content\":\"x\"}}]}\n\n",
        /* two chunks in one event (no blank line between the data lines) */
        "data: {\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n"
        "data: {\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"y\"}}]}\n\n",
        /* a dropped stream: the last chunk is cut short */
        "data: {\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"
        "data: {\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"cont",
        /* an error event after a chunk */
        "data: {\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"
        "event: error\ndata: {\"error\":{\"message\":\"overloaded\"}}\n\n",
    };
    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(streams); i++)
        expect_same(streams[i], strlen(streams[i]));
}

/* A text chunk of one shape (id "c", model "m"), as an SSE event with the line ends eol. */
#define TEXT_CHUNK(text, eol)                                                                      \
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{"      \
    "\"index\":0,\"delta\":{\"content\":\"" text "\"},\"finish_reason\":null}]}" eol eol

/* A stream's text-only chunks are read straight from its bytes (rein__openai_text_events)
 * once the template has their shape: whatever frames them, the stream decodes as the general
 * path decodes it (events, lines counted for the messages, errors), and an event the text
 * path cannot take is left to the reader where it stands. */
static void test_text_events_are_read_from_the_stream(void **state)
{
    static const char lead[] =
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{"
        "\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}"
        "]}\n\n" TEXT_CHUNK("one ", "\n");
    static const char *const tails[] = {
        /* plain text chunks, one with escapes, one empty */
        TEXT_CHUNK("two ", "\n") TEXT_CHUNK("th\\\"r\\u00e9e\\n", "\n") TEXT_CHUNK("", "\n")
            TEXT_CHUNK(" four", "\n") "data: [DONE]\n\n",
        /* CRLF, data without the space, a lone CR ending a line (left to the reader) */
        TEXT_CHUNK(
            "two",
            "\r\n") "data:{\"id\":\"c\",\"object\":\"chat.completion.chunk\","
                    "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},"
                    "\"finish_reason\":null}]}\n\n" TEXT_CHUNK("cr", "\r")
                        TEXT_CHUNK("after", "\n"),
        /* a comment, an id line, an event name, a second data line */
        ": ping\n\n" TEXT_CHUNK("a", "\n") "id: 4\n" TEXT_CHUNK(
            "b", "\n") "event: message\n" TEXT_CHUNK("c", "\n")
            TEXT_CHUNK("d", "\n") "data: {}\n\n",
        /* another shape between text chunks, then the text again */
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{"
        "\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{"
        "\"name\":\"f\",\"arguments\":\"{}\"}}]},\"finish_reason\":null}]}\n\n" TEXT_CHUNK("e",
                                                                                           "\n"),
        /* a string that is not one, where the text was (a raw tab): the general path's error,
         * at the same line */
        TEXT_CHUNK("two", "\n") TEXT_CHUNK("t\tab", "\n") TEXT_CHUNK("x", "\n"),
        /* a payload that is not JSON after text: the error names the same event and line */
        TEXT_CHUNK("two", "\n") TEXT_CHUNK("three", "\n") "data: {\"id\":\"c\",\"obj\n\n",
        /* a different model, a text with a marker, the stream cut inside a chunk */
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"n\",\"choices\":[{"
        "\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":null}]}\n\n" TEXT_CHUNK(
            "<tool_call>", "\n") TEXT_CHUNK("two", "\n") "data: {\"id\":\"c\",\"object\":\"ch",
    };
    static const char text[] = TEXT_CHUNK("more", "\n");
    rein_provider_decoder *d;
    rein_error err;
    rein_err rc;
    struct rein_buf b;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(tails); i++) {
        rein_buf_init(&b, 0);
        assert_rein_ok(rein_buf_add(&b, lead, sizeof(lead) - 1), NULL);
        assert_rein_ok(rein_buf_adds(&b, tails[i]), NULL);
        expect_same(b.ptr, b.len);
        rein_buf_release(&b);
    }

    /* after the lead, a text chunk is read by the text path, whole and only whole */
    d = rein_provider_decoder_new(REIN_WIRE_OPENAI_SSE, NULL, NULL, NULL);
    assert_non_null(d);
    assert_rein_ok(rein_provider_decoder_feed(d, lead, sizeof(lead) - 1, &err), &err);
    assert_int_equal(rein__openai_text_events(d, text, sizeof(text) - 2, &rc), 0);
    assert_int_equal(rein__openai_text_events(d, text, sizeof(text) - 1, &rc), sizeof(text) - 1);
    assert_rein_ok(rc, NULL);
    assert_int_equal(d->events, 3);
    assert_int_equal(d->sse.lineno, 6);
    assert_string_equal(d->r->text.ptr, "one more");
    /* not between two events: the reader holds the start of a line */
    assert_rein_ok(rein_provider_decoder_feed(d, "data: {", 7, &err), &err);
    assert_int_equal(rein__openai_text_events(d, text, sizeof(text) - 1, &rc), 0);
    rein_provider_decoder_free(d);
}

/* An Anthropic text delta (index 0) as an SSE event with its event line and line ends eol. */
#define AN_TEXT(text, eol)                                                                         \
    "event: content_block_delta" eol "data: {\"type\":\"content_block_delta\",\"index\":0,"        \
    "\"delta\":{\"type\":\"text_delta\",\"text\":\"" text "\"}}" eol eol

static void expect_same_anthropic(const char *text, size_t len)
{
    struct rein_buf where;
    enum oa_verdict v = oa_compare_wire(REIN_WIRE_ANTHROPIC_SSE, text, len, &where);

    if (v == OA_DIFFERENT) {
        fail_msg("the text path and the general path differ on:\n%.*s\ntext path:\n%.*s", (int)len,
                 text, (int)where.len, where.ptr);
    }
    assert_int_equal(v, OA_SAME);
}

/* An Anthropic stream's text deltas are read straight from its bytes once one was read in full
 * (the text template, rein__text_events): whatever frames them, the stream decodes as the
 * general path decodes it, and an event the template does not fit is left to the reader. */
static void test_anthropic_text_events_are_read_from_the_stream(void **state)
{
    static const char lead[] =
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
        "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],"
        "\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n"
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
        "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" AN_TEXT("one ", "\n");
    static const char end[] =
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
        "\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n"
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    static const char *const tails[] = {
        /* text deltas, one with escapes, one empty, a ping between them */
        AN_TEXT("two ", "\n") AN_TEXT("th\\\"r\\u00e9e\\n", "\n")
            AN_TEXT("", "\n") "event: ping\ndata: {\"type\": \"ping\"}\n\n" AN_TEXT(" four", "\n"),
        /* CRLF, no space after the colons, no event line, another event name, a lone CR */
        AN_TEXT("two", "\r\n") "event:content_block_delta\ndata:{\"type\":\"content_block_delta\","
                               "\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"
                               "data: "
                               "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                               "\"text_delta\","
                               "\"text\":\"y\"}}\n\n"
                               "event: other\ndata: "
                               "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                               "\"text_delta\",\"text\":\"z\"}}\n\n" AN_TEXT("cr", "\r")
                                   AN_TEXT("after", "\n"),
        /* a comment, an id line, two data lines, another index, a thinking delta */
        ": c\n\n" AN_TEXT("a", "\n") "id: 4\n" AN_TEXT(
            "b",
            "\n") "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\n"
                  "data: \"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"c\"}}\n\n"
                  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,"
                  "\"delta\":{\"type\":\"text_delta\",\"text\":\"d\"}}\n\n"
                  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                  "\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"e\"}}\n\n" AN_TEXT("f",
                                                                                            "\n"),
        /* a string that is not one (a raw tab), then a payload that is not JSON */
        AN_TEXT("two", "\n") AN_TEXT("t\tab", "\n") AN_TEXT("x", "\n"),
        AN_TEXT("two", "\n") "event: content_block_delta\ndata: {\"type\":\"cont\n\n",
        /* an error event after text, and a stream cut inside a delta */
        AN_TEXT("two", "\n") "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
                             "\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        AN_TEXT("two", "\n") "event: content_block_delta\ndata: {\"type\":\"content_block_de",
    };
    static const char text[] = AN_TEXT("more", "\n");
    rein_provider_decoder *d;
    rein_error err;
    rein_err rc;
    struct rein_buf b;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(tails); i++) {
        rein_buf_init(&b, 0);
        assert_rein_ok(rein_buf_add(&b, lead, sizeof(lead) - 1), NULL);
        assert_rein_ok(rein_buf_adds(&b, tails[i]), NULL);
        expect_same_anthropic(b.ptr, b.len);
        assert_rein_ok(rein_buf_add(&b, end, sizeof(end) - 1), NULL);
        expect_same_anthropic(b.ptr, b.len);
        rein_buf_release(&b);
    }

    /* after the lead, a text delta is read by the text path, whole and only whole */
    d = rein_provider_decoder_new(REIN_WIRE_ANTHROPIC_SSE, NULL, NULL, NULL);
    assert_non_null(d);
    assert_rein_ok(rein_provider_decoder_feed(d, lead, sizeof(lead) - 1, &err), &err);
    assert_non_null(d->text_tmpl);
    assert_int_equal(rein__text_events(d, text, sizeof(text) - 2, &rc), 0);
    assert_int_equal(rein__text_events(d, text, sizeof(text) - 1, &rc), sizeof(text) - 1);
    assert_rein_ok(rc, NULL);
    assert_int_equal(d->events, 4);
    assert_int_equal(d->sse.lineno, 12);
    assert_string_equal(d->r->text.ptr, "one more");
    rein_provider_decoder_free(d);
}

struct walked {
    size_t files, payloads, fast;
};

/* Each data payload of text (an SSE recording, or one payload a line) on a new decoder. */
static void count_fast(struct walked *w, const char *text, size_t len, bool lines)
{
    for (const char *line = text; line < text + len;) {
        const char *nl = memchr(line, '\n', (size_t)(text + len - line));
        size_t n = nl ? (size_t)(nl - line) : (size_t)(text + len - line);
        size_t skip = lines ? 0 : n > 5 && memcmp(line, "data:", 5) == 0 ? 5 : SIZE_MAX;
        if (skip != SIZE_MAX) {
            if (skip && line[skip] == ' ')
                skip++;
            w->payloads++;
            w->fast += fast_answer(line + skip, n - skip) == 1;
        }
        line += n + 1;
    }
}

static void check_file(const char *path, void *ud)
{
    struct walked *w = ud;
    bool lines = strstr(path, ".jsonl") != NULL;
    size_t len;
    char *text;
    struct rein_buf sse;

    if (!strstr(path, ".sse") && !lines)
        return;
    text = test_read_file(path, &len);
    assert_non_null(text);
    rein_buf_init(&sse, 0);
    if (lines) { /* each line one event */
        for (const char *line = text; line < text + len;) {
            const char *nl = memchr(line, '\n', (size_t)(text + len - line));
            size_t n = nl ? (size_t)(nl - line) : (size_t)(text + len - line);
            assert_rein_ok(rein_buf_adds(&sse, "data: "), NULL);
            assert_rein_ok(rein_buf_add(&sse, line, n), NULL);
            assert_rein_ok(rein_buf_adds(&sse, "\n\n"), NULL);
            line += n + 1;
        }
    } else {
        assert_rein_ok(rein_buf_add(&sse, text, len), NULL);
    }
    expect_same(sse.ptr, sse.len);
    expect_same_anthropic(sse.ptr, sse.len); /* the text template of Anthropic's deltas */
    count_fast(w, text, len, lines);
    w->files++;
    rein_buf_release(&sse);
    rein_free(text);
}

/* Every stream recording (whatever its wire: the others decline or fail the same way). */
static void test_recordings_decode_the_same(void **state)
{
    struct walked w = {0, 0, 0};

    (void)state;
    test_walk_files(test_require_shared("fixtures"), check_file, &w);
    print_message("%zu stream recordings decode the same; %zu of their %zu payloads read in one "
                  "pass\n",
                  w.files, w.fast, w.payloads);
    assert_true(w.files >= 20);
    assert_true(w.fast >= 100);
}

/* What the body reader answers for one body on a new decoder: 1 read, 0 declined. */
static int body_answer(const char *p, size_t len)
{
    rein_provider_decoder *d = rein_provider_decoder_new(REIN_WIRE_OPENAI_JSON, NULL, NULL, NULL);
    int r;

    assert_non_null(d);
    r = rein__openai_body_fast(d, p, len);
    rein_provider_decoder_free(d);
    return r;
}

static void expect_same_body(const char *text, size_t len)
{
    struct rein_buf where;
    enum oa_verdict v = oa_compare_body(text, len, &where);

    if (v == OA_DIFFERENT) {
        fail_msg("the fast path and the general path differ on the body:\n%.*s\nfast path:\n%.*s",
                 (int)len, text, (int)where.len, where.ptr);
    }
    assert_int_equal(v, OA_SAME);
}

static void test_body_shapes_are_read(void **state)
{
    static const char *const bodies[] = {
        /* OpenAI's own: text and a call, usage with details */
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"g\","
        "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Let me "
        "look.\",\"refusal\":null,\"annotations\":[],\"tool_calls\":[{\"id\":\"call_1\",\"type\":"
        "\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":"
        "\\\"Paris\\\"}\"}}]},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}],\"usage\":{"
        "\"prompt_tokens\":60,\"completion_tokens\":40,\"total_tokens\":100,"
        "\"prompt_tokens_details\":{\"cached_tokens\":8},\"completion_tokens_details\":{"
        "\"reasoning_tokens\":3}},\"service_tier\":\"default\",\"system_fingerprint\":\"fp\"}",
        /* text only, escapes, whitespace around and between */
        " {\n \"id\" : \"c\", \"model\":\"m\", \"choices\" : [ { \"message\" : { \"content\" : "
        "\"caf\\u00e9 \\\"q\\\"\" } , \"finish_reason\" : \"stop\" } ] }\n",
        /* reasoning, two calls, no finish reason: the calls still close */
        "{\"id\":\"x\",\"model\":\"m\",\"choices\":[{\"message\":{\"content\":null,"
        "\"reasoning_content\":\"think\",\"tool_calls\":[{\"id\":\"a\",\"type\":\"function\","
        "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}},{\"id\":\"b\",\"type\":"
        "\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{\\\"x\\\":1}\"}}]},"
        "\"finish_reason\":null}]}",
        /* no choice at all */
        "{\"id\":\"c\",\"model\":\"m\",\"choices\":[],\"usage\":null,\"error\":null}",
    };

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(bodies); i++) {
        assert_int_equal(body_answer(bodies[i], strlen(bodies[i])), 1);
        expect_same_body(bodies[i], strlen(bodies[i]));
    }
}

static void test_other_bodies_are_declined(void **state)
{
    static const char *const bodies[] = {
        /* a chunk's delta (the general path reads it before the message) */
        "{\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"d\"},"
        "\"message\":{\"content\":\"m\"},\"finish_reason\":\"stop\"}]}",
        /* several choices */
        "{\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":{\"content\":"
        "\"a\"},\"finish_reason\":\"length\"},{\"index\":1,\"message\":{\"content\":\"b\"},"
        "\"finish_reason\":\"stop\"}]}",
        /* an error body, and one next to choices */
        "{\"error\":{\"message\":\"rate limited\",\"type\":\"rate_limit_error\"}}",
        "{\"choices\":[],\"error\":{\"message\":\"m\"}}",
        /* a refusal, an escaped or "error" finish reason, a message that is not an object */
        "{\"choices\":[{\"message\":{\"content\":null,\"refusal\":\"no\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"},\"finish_reason\":\"st\\u006fp\"}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"},\"finish_reason\":\"error\"}]}",
        "{\"choices\":[{\"message\":\"a\"}]}",
        /* not one well-formed object */
        "",
        "   ",
        "{\"choices\":[]} {}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}]",
        "[{\"choices\":[]}]",
        "{\"choices\":[],\"choices\":[]}",
        /* logprobs a client asked for, a search model's annotations */
        "{\"choices\":[{\"message\":{\"content\":\"a\"},\"logprobs\":{\"content\":[]}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\",\"annotations\":[{}]}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\",\"annotations\":[],"
        "\"annotations\":[]}}]}",
    };

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(bodies); i++) {
        assert_int_equal(body_answer(bodies[i], strlen(bodies[i])), 0);
        expect_same_body(bodies[i], strlen(bodies[i]));
    }
}

static void check_body_file(const char *path, void *ud)
{
    struct walked *w = ud;
    size_t len, n = strlen(path);
    char *text;

    if (n < 5 || strcmp(path + n - 5, ".json") != 0)
        return;
    text = test_read_file(path, &len);
    assert_non_null(text);
    expect_same_body(text, len);
    w->files++;
    w->fast += body_answer(text, len) == 1;
    rein_free(text);
}

/* Every body recording (whatever its wire: the others decline or fail the same way). */
static void test_body_recordings_decode_the_same(void **state)
{
    struct walked w = {0, 0, 0};

    (void)state;
    test_walk_files(test_require_shared("fixtures"), check_body_file, &w);
    print_message("%zu body recordings decode the same; %zu read in one pass\n", w.files, w.fast);
    assert_true(w.files >= 5);
    assert_true(w.fast >= 2);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_body_shapes_are_read),
    cmocka_unit_test(test_other_bodies_are_declined),
    cmocka_unit_test(test_body_recordings_decode_the_same),
    cmocka_unit_test(test_stream_chunk_shapes_are_read),
    cmocka_unit_test(test_other_payloads_are_declined),
    cmocka_unit_test(test_template_follows_the_stream),
    cmocka_unit_test(test_sse_framings),
    cmocka_unit_test(test_text_events_are_read_from_the_stream),
    cmocka_unit_test(test_anthropic_text_events_are_read_from_the_stream),
    cmocka_unit_test(test_recordings_decode_the_same),
};

REIN_TEST_MAIN(tests)
