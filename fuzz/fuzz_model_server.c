/*
 * Fuzz target for the scripted model server's parsers of untrusted bytes: the request
 * validator and conversation helpers (any JSON a client sends), and the reply compiler and
 * renderers (any scenario a test or POST /__script sends), including the fault reshaping of
 * the rendered events.
 *
 * The first byte picks the wire format and a few switches; the rest is the JSON document,
 * used both as a request body and as a reply object (and, as a request body, checked as
 * Bedrock's CountTokens and Claude on Vertex AI check one too). The server's files live in
 * tests/support and are compiled in here, without libmicrohttpd.
 */
#include "../tests/support/model_server_check.c"
#include "../tests/support/model_server_compat.c"
#include "../tests/support/model_server_gemini.c"
#include "../tests/support/model_server_bedrock.c"
#include "../tests/support/model_server_vertex.c"
#include "../tests/support/model_server_script.c"
#include "../tests/support/model_server_wire.c"
#include "../tests/support/model_server_wire2.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise_request(enum ms_format f, json_t *doc, const char *text, size_t len)
{
    json_t *headers = json_pack("{s:s, s:s, s:s}", "authorization", "Bearer k", "x-api-key", "k",
                                "anthropic-version", "2023-06-01");
    struct ms_verdict v;
    bool google;
    char *last;

    (void)ms__check_request(f, "/v1/chat/completions", headers, "k", true, doc, "parse error", &v);
    ms__verdict_release(&v);
    /* Bedrock's CountTokens body check (the signature is not checked here) */
    (void)ms__check_request(MS_FMT_BEDROCK, "/model/m/count-tokens", headers, NULL, true, doc,
                            "parse error", &v);
    ms__verdict_release(&v);
    /* Claude on Vertex AI: its own members, then the Messages checks (and its count's) */
    (void)ms__vx_check(headers, "k",
                       "/v1/projects/p/locations/l/publishers/anthropic/models/"
                       "claude-sonnet-4-6:rawPredict",
                       true, doc, "parse error", &v, &google);
    ms__verdict_release(&v);
    (void)ms__vx_check(headers, NULL,
                       "/v1/projects/p/locations/l/publishers/anthropic/models/"
                       "count-tokens:rawPredict",
                       true, doc, "parse error", &v, &google);
    ms__verdict_release(&v);
    last = ms__last_text(f, doc);
    rein_free(last);
    (void)ms__last_role(f, doc);
    (void)ms__tool_result_contains(f, doc, "x");
    (void)ms__tools_include(f, doc, "x");
    (void)text;
    (void)len;
    json_decref(headers);
}

static void exercise_reply(enum ms_format f, bool stream, json_t *doc, const char *text, size_t len)
{
    struct ms_reply *r = NULL;
    struct ms_body b;
    struct ms_ctx c = {
        .format = f, .req = doc, .req_len = len, .stream = stream, .include_usage = true};
    struct ms_req_view view = {.path = "/v1/chat/completions",
                               .format = f,
                               .body = text,
                               .body_len = len,
                               .json = doc,
                               .stream = stream,
                               .nth = 1};

    if (ms__reply_compile(doc, "fuzz", NULL, &r, NULL) != REIN_OK)
        return;
    (void)ms__reply_matches(r, &view);
    ms__body_init(&b);
    if (ms__render_reply(r, &c, &b) == REIN_OK) {
        if (r->fault.malformed_after_events >= 0)
            (void)ms__body_insert(&b, (size_t)r->fault.malformed_after_events, r->fault.malformed,
                                  strlen(r->fault.malformed));
        if (r->fault.error_after_events >= 0) {
            ms__body_keep(&b, (size_t)r->fault.error_after_events);
            (void)ms__render_stream_error(f, r->fault.error_event, &b);
        }
        if (r->fault.cut_after_events >= 0)
            ms__body_keep(&b, (size_t)r->fault.cut_after_events);
    }
    ms__body_release(&b);
    ms__body_init(&b);
    (void)ms__body_split_raw(&b, text, len, stream);
    ms__body_release(&b);
    ms__body_init(&b);
    (void)ms__body_wrap_lines(&b, text, len, f);
    ms__body_release(&b);
    ms__reply_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum ms_format formats[] = {MS_FMT_OPENAI, MS_FMT_ANTHROPIC, MS_FMT_OLLAMA,
                                             MS_FMT_DASHSCOPE, MS_FMT_RESPONSES};
    enum ms_format f;
    bool stream;
    json_t *doc;

    if (size < 1)
        return 0;
    f = formats[data[0] % 5];
    stream = (data[0] >> 2) & 1;
    doc = rein_json_parse((const char *)data + 1, size - 1, 0, NULL);
    exercise_request(f, doc, (const char *)data + 1, size - 1);
    if (doc)
        exercise_reply(f, stream, doc, (const char *)data + 1, size - 1);
    json_decref(doc);
    return 0;
}
