/*
 * Integration tests: what the model receives of a tool's MCP content (images, audio,
 * structuredContent), checked in the exact request bodies the scripted model server received
 * over real HTTP, on every wire. Anthropic gets a PNG as an image block inside the tool_result
 * and a PDF as a document block; audio, which it does not take there, is named as not sent;
 * OpenAI's tool messages carry text, so a turn's media follow its tool messages in one user
 * message (decision 0098); the Responses
 * API gets input_image and input_file items in the function_call_output, Gemini inlineData
 * parts after the functionResponse, Bedrock image and document blocks in the toolResult; base64
 * never sits in the JSON text; structuredContent is sent once.
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include "model_server.h"

#define PNG                                                                                        \
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
#define WAV "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
#define PDF "JVBERi0xLjQKJcOkw7zDtsOfCjEgMCBvYmoKPDw+PgplbmRvYmoKdHJhaWxlcgo8PD4+CiUlRU9GCg=="

static rein_err tool_snap(void *ud, const struct rein_invocation *inv,
                          struct rein_tool_reply *reply, rein_error *err)
{
    (void)ud;
    (void)inv;
    (void)err;
    reply->output = json_pack(
        "{s:[{s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:{s:s, s:s, s:s}}]}", "content",
        "type", "text", "text", "the page after the click", "type", "image", "data", PNG,
        "mimeType", "image/png", "type", "audio", "data", WAV, "mimeType", "audio/wav", "type",
        "resource", "resource", "uri", "file:///r.pdf", "mimeType", "application/pdf", "blob", PDF);
    return REIN_OK;
}

static rein_err tool_stats(void *ud, const struct rein_invocation *inv,
                           struct rein_tool_reply *reply, rein_error *err)
{
    (void)ud;
    (void)inv;
    (void)err;
    reply->output = json_pack("{s:[{s:s, s:s}], s:{s:i, s:s}}", "content", "type", "text", "text",
                              "{\"rows\": 3, \"table\": \"sales-2026\"}", "structuredContent",
                              "rows", 3, "table", "sales-2026");
    return REIN_OK;
}

struct fx {
    ms_server *ms;
    rein_provider_config *cfg;
    rein_provider *p;
    rein_registry *reg;
    rein_agent *a;
    rein_history *h;
    rein_agent_result *r;
};

static void add_tool(rein_registry *reg, const char *manifest, rein_tool_fn fn)
{
    rein_error err;
    json_t *m = rein_json_parse(manifest, strlen(manifest), 0, &err);

    assert_non_null(m);
    assert_rein_ok(rein_registry_add_builtin(reg, m, fn, NULL, NULL, &err), &err);
    json_decref(m);
}

static void fx_start(struct fx *f, const char *preset, const char *script)
{
    bool openai = !strcmp(preset, "openai") || !strcmp(preset, "openai-responses");
    char base[160];
    rein_error err;

    memset(f, 0, sizeof(*f));
    unsetenv("AWS_BEARER_TOKEN_BEDROCK");
    f->ms = ms_start(0, &err);
    if (!f->ms)
        fail_msg("model server: %s", err.msg);
    f->cfg = rein_provider_config_new();
    assert_rein_ok(rein_provider_config_set(f->cfg, "provider", preset, &err), &err);
    snprintf(base, sizeof(base), "%s%s", openai ? ms_openai_url(f->ms) : ms_url(f->ms),
             !strcmp(preset, "gemini")             ? "/v1beta"
             : !strcmp(preset, "dashscope-native") ? "/api/v1"
                                                   : "");
    assert_rein_ok(rein_provider_config_set_base_url(f->cfg, base), NULL);
    assert_rein_ok(rein_provider_config_set_model(f->cfg, "test-model"), NULL);
    assert_rein_ok(rein_provider_config_set_api_key(f->cfg, "sk-test"), NULL);
    f->p = rein_provider_new(f->cfg, &err);
    assert_non_null(f->p);
    f->reg = rein_registry_new(&err);
    assert_non_null(f->reg);
    add_tool(f->reg,
             "{\"id\":\"snap\",\"description\":\"Screenshot\",\"read_only\":true,"
             "\"parameters\":{\"type\":\"object\"}}",
             tool_snap);
    add_tool(f->reg,
             "{\"id\":\"stats\",\"description\":\"Table stats\",\"read_only\":true,"
             "\"parameters\":{\"type\":\"object\"}}",
             tool_stats);
    f->a = rein_agent_new(f->p, f->reg, &err);
    assert_non_null(f->a);
    f->h = rein_history_new();
    if (ms_script(f->ms, script, false, &err) != REIN_OK)
        fail_msg("script: %s", err.msg);
}

static void fx_run(struct fx *f)
{
    struct rein_agent_turn_opts o = {.verification = REIN_AGENT_VERIFY_OFF};
    rein_error err;

    assert_rein_ok(rein_agent_run(f->a, f->h, "look", &o, &f->r, &err), &err);
    assert_int_equal(rein_agent_result_stop(f->r), REIN_AGENT_STOP_FINAL_ANSWER);
}

static void fx_stop(struct fx *f)
{
    rein_agent_result_free(f->r);
    rein_agent_free(f->a);
    rein_history_free(f->h);
    rein_registry_free(f->reg);
    rein_provider_free(f->p);
    rein_provider_config_free(f->cfg);
    ms_stop(f->ms);
}

/* The second request's body (the one carrying the tool result), which the server took. */
static const json_t *second_body(struct fx *f)
{
    const struct ms_request *r;

    assert_true(ms_wait(f->ms, 2, 5000));
    r = ms_request(f->ms, 1);
    assert_non_null(r);
    if (r->status != 200 || r->error)
        fail_msg("request: status %d: %s\n%s", r->status, r->error ? r->error : "", r->body);
    return r->json;
}

static const json_t *second_messages(struct fx *f)
{
    return json_object_get(second_body(f), "messages");
}

static size_t occurrences(const char *hay, const char *needle)
{
    size_t n = 0;

    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

#define SNAP_THEN(id, answer)                                                                      \
    "[{\"tool_calls\":[{\"id\":\"" id "\",\"name\":\"snap\",\"arguments\":\"{}\"}]},"              \
    "{\"text\":\"" answer "\"}]"

/* Responses: the function_call_output's output as content items: the text, the PNG as an
 * input_image data URL, the PDF as an input_file; audio named as not sent. */
static void media_responses(void **state)
{
    struct fx f;
    const json_t *in, *out;

    (void)state;
    fx_start(&f, "openai-responses", SNAP_THEN("call_1", "a red pixel"));
    fx_run(&f);
    in = json_object_get(second_body(&f), "input");
    out = json_array_get(in, json_array_size(in) - 1);
    assert_string_equal(str(out, "type"), "function_call_output");
    out = json_object_get(out, "output");
    assert_int_equal(json_array_size(out), 4);
    assert_string_equal(str(json_array_get(out, 0), "type"), "input_text");
    assert_non_null(strstr(str(json_array_get(out, 0), "text"), "the page after the click"));
    assert_null(strstr(str(json_array_get(out, 0), "text"), PNG));
    assert_int_equal(occurrences(ms_request(f.ms, 1)->body, PNG), 1);
    assert_string_equal(str(json_array_get(out, 1), "type"), "input_image");
    assert_string_equal(str(json_array_get(out, 1), "image_url"), "data:image/png;base64," PNG);
    assert_string_equal(str(json_array_get(out, 2), "type"), "input_file");
    assert_string_equal(str(json_array_get(out, 2), "file_data"),
                        "data:application/pdf;base64," PDF);
    assert_string_equal(str(json_array_get(out, 2), "filename"), "attachment-3.pdf");
    assert_string_equal(str(json_array_get(out, 3), "type"), "input_text");
    assert_non_null(strstr(str(json_array_get(out, 3), "text"),
                           "attachment 2, audio/wav, was not sent: the Responses API takes no "
                           "audio in a tool result"));
    fx_stop(&f);
}

/* Gemini: inlineData parts after the functionResponse, in the same user content; WAV and PDF
 * are media Gemini reads, so nothing is left out. */
static void media_gemini(void **state)
{
    struct fx f;
    const json_t *contents, *parts;

    (void)state;
    fx_start(&f, "gemini", SNAP_THEN("call_1", "a red pixel"));
    fx_run(&f);
    contents = json_object_get(second_body(&f), "contents");
    parts = json_object_get(json_array_get(contents, json_array_size(contents) - 1), "parts");
    assert_int_equal(json_array_size(parts), 4);
    assert_non_null(json_object_get(json_array_get(parts, 0), "functionResponse"));
    assert_int_equal(occurrences(ms_request(f.ms, 1)->body, PNG), 1); /* the part, not the text */
    assert_string_equal(str(test_json_at(parts, "1.inlineData"), "mimeType"), "image/png");
    assert_string_equal(str(test_json_at(parts, "1.inlineData"), "data"), PNG);
    assert_string_equal(str(test_json_at(parts, "2.inlineData"), "mimeType"), "audio/wav");
    assert_string_equal(str(test_json_at(parts, "2.inlineData"), "data"), WAV);
    assert_string_equal(str(test_json_at(parts, "3.inlineData"), "mimeType"), "application/pdf");
    fx_stop(&f);
}

/* Bedrock: image and document blocks in the toolResult's content; audio named as not sent. */
static void media_bedrock(void **state)
{
    struct fx f;
    const json_t *msgs, *content;

    (void)state;
    fx_start(&f, "bedrock", SNAP_THEN("tooluse_1", "a red pixel"));
    fx_run(&f);
    msgs = second_messages(&f);
    content = test_json_at(json_array_get(msgs, json_array_size(msgs) - 1),
                           "content.0.toolResult.content");
    assert_int_equal(json_array_size(content), 4);
    /* The tool's output (JSON, so a json block), then the media. */
    assert_non_null(
        strstr(str(test_json_at(content, "0.json"), "output"), "the page after the click"));
    assert_int_equal(occurrences(ms_request(f.ms, 1)->body, PNG), 1);
    assert_string_equal(str(test_json_at(content, "1.image"), "format"), "png");
    assert_string_equal(str(test_json_at(content, "1.image.source"), "bytes"), PNG);
    assert_string_equal(str(test_json_at(content, "2.document"), "format"), "pdf");
    assert_string_equal(str(test_json_at(content, "2.document"), "name"), "attachment 3");
    assert_string_equal(str(test_json_at(content, "2.document.source"), "bytes"), PDF);
    assert_non_null(strstr(str(json_array_get(content, 3), "text"),
                           "attachment 2, audio/wav, was not sent: Bedrock's Converse API takes "
                           "no audio in a tool result"));
    fx_stop(&f);
}

static void media_anthropic(void **state)
{
    struct fx f;
    const json_t *msgs, *result, *content, *b;
    const char *text;

    (void)state;
    fx_start(&f, "anthropic",
             "[{\"tool_calls\":[{\"id\":\"toolu_1\",\"name\":\"snap\",\"arguments\":\"{}\"}]},"
             "{\"text\":\"I see a red pixel\"}]");
    fx_run(&f);
    msgs = second_messages(&f);
    result = json_array_get(
        json_object_get(json_array_get(msgs, json_array_size(msgs) - 1), "content"), 0);
    assert_string_equal(json_string_value(json_object_get(result, "type")), "tool_result");
    content = json_object_get(result, "content");
    assert_int_equal(json_array_size(content), 4);
    /* The text names each attachment; no base64 in it. */
    text = json_string_value(json_object_get(json_array_get(content, 0), "text"));
    assert_non_null(strstr(text, "the page after the click"));
    assert_non_null(strstr(text, "[attachment 1 (image): image/png, 69 bytes]"));
    assert_non_null(strstr(text, "[attachment 2 (audio): audio/wav"));
    assert_non_null(strstr(text, "[attachment 3 (document): application/pdf"));
    assert_null(strstr(text, PNG));
    assert_null(strstr(text, WAV));
    b = json_array_get(content, 1);
    assert_string_equal(json_string_value(json_object_get(b, "type")), "image");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(b, "source"), "media_type")),
        "image/png");
    assert_string_equal(json_string_value(json_object_get(json_object_get(b, "source"), "data")),
                        PNG);
    b = json_array_get(content, 2);
    assert_string_equal(json_string_value(json_object_get(b, "type")), "document");
    assert_string_equal(json_string_value(json_object_get(json_object_get(b, "source"), "data")),
                        PDF);
    /* Audio is not taken in a tool result: said so. */
    text = json_string_value(json_object_get(json_array_get(content, 3), "text"));
    assert_non_null(strstr(text, "attachment 2, audio/wav, was not sent"));
    fx_stop(&f);
}

/* The parts of the user message that carries one tool result's media on the OpenAI chat wire,
 * from part k of content: the text naming the call, the image, the audio, the PDF. */
static void assert_openai_tool_media(const json_t *content, size_t k, const char *call)
{
    const json_t *part = json_array_get(content, k);

    assert_string_equal(str(part, "type"), "text");
    assert_non_null(strstr(str(part, "text"), call));
    part = json_array_get(content, k + 1);
    assert_string_equal(str(part, "type"), "image_url");
    assert_string_equal(str(json_object_get(part, "image_url"), "url"),
                        "data:image/png;base64," PNG);
    part = json_array_get(content, k + 2);
    assert_string_equal(str(part, "type"), "input_audio");
    assert_string_equal(str(json_object_get(part, "input_audio"), "data"), WAV);
    assert_string_equal(str(json_object_get(part, "input_audio"), "format"), "wav");
    part = json_array_get(content, k + 3);
    assert_string_equal(str(part, "type"), "file");
    assert_string_equal(str(json_object_get(part, "file"), "file_data"),
                        "data:application/pdf;base64," PDF);
}

/* The chat completions API takes media in user messages only, and a turn's tool messages must
 * follow their assistant message with nothing between them (decision 0098): each tool message
 * says where its media went, and one user message after the last of them carries the media of
 * both results, each result's after a text part naming its call. The next request has it in
 * the same place, after the tool results and before the next assistant message; the model
 * server refuses any other order, as the API does. */
static void media_openai(void **state)
{
    struct fx f;
    const json_t *msgs, *m, *content;
    const struct ms_request *r;
    const char *text;
    size_t n;

    (void)state;
    fx_start(&f, "openai",
             "[{\"tool_calls\":[{\"id\":\"call_1\",\"name\":\"snap\",\"arguments\":\"{}\"},"
             "{\"id\":\"call_2\",\"name\":\"snap\",\"arguments\":\"{}\"}]},"
             "{\"tool_calls\":[{\"id\":\"call_3\",\"name\":\"stats\",\"arguments\":\"{}\"}]},"
             "{\"text\":\"done\"}]");
    fx_run(&f);
    msgs = second_messages(&f);
    n = json_array_size(msgs);
    for (size_t k = 0; k < 2; k++) {
        m = json_array_get(msgs, n - 3 + k);
        assert_string_equal(str(m, "role"), "tool");
        text = str(m, "content");
        assert_non_null(text);
        assert_non_null(strstr(text, "the page after the click"));
        assert_non_null(strstr(text, "[attachment 1 (image): image/png, 69 bytes]"));
        assert_non_null(strstr(text, "(attachment 1, image/png, is in the user message after the "
                                     "tool results"));
        assert_non_null(strstr(text, "(attachment 2, audio/wav, is in the user message"));
        assert_non_null(strstr(text, "(attachment 3, application/pdf, is in the user message"));
        assert_null(strstr(text, "was not sent"));
        assert_null(strstr(text, PNG));
    }
    m = json_array_get(msgs, n - 1);
    assert_string_equal(str(m, "role"), "user");
    content = json_object_get(m, "content");
    assert_int_equal(json_array_size(content), 8);
    assert_openai_tool_media(content, 0, "call_1");
    assert_openai_tool_media(content, 4, "call_2");
    /* the third request: the media message where it was, then the next call and its result */
    assert_true(ms_wait(f.ms, 3, 5000));
    r = ms_request(f.ms, 2);
    assert_non_null(r);
    if (r->status != 200 || r->error)
        fail_msg("request: status %d: %s\n%s", r->status, r->error ? r->error : "", r->body);
    msgs = json_object_get(r->json, "messages");
    assert_int_equal(json_array_size(msgs), n + 2);
    assert_true(json_equal(json_array_get(msgs, n - 1), m));
    assert_string_equal(str(json_array_get(msgs, n), "role"), "assistant");
    assert_string_equal(str(json_array_get(msgs, n + 1), "role"), "tool");
    fx_stop(&f);
}

static void structured_once(void **state)
{
    struct fx f;
    const json_t *msgs, *tool;
    const char *text;

    (void)state;
    fx_start(&f, "openai",
             "[{\"tool_calls\":[{\"id\":\"call_1\",\"name\":\"stats\",\"arguments\":\"{}\"}]},"
             "{\"text\":\"3 rows\"}]");
    fx_run(&f);
    msgs = second_messages(&f);
    tool = json_array_get(msgs, json_array_size(msgs) - 1);
    text = json_string_value(json_object_get(tool, "content"));
    assert_non_null(text);
    /* The value once, as JSON; not the escaped text copy beside it. */
    assert_non_null(strstr(text, "\"output\":{\"rows\":3,\"table\":\"sales-2026\"}"));
    assert_null(strstr(text, "\\\"rows\\\""));
    assert_null(strstr(text, "structuredContent"));
    fx_stop(&f);
}

/* ---- a user's media (decision 0097) ---------------------------------------------------- */

#define USER_MEDIA                                                                                 \
    "{\"role\":\"user\",\"content\":\"%s\",\"attachments\":["                                      \
    "{\"type\":\"image\",\"mime_type\":\"image/png\",\"data\":\"" PNG "\",\"index\":1},"           \
    "{\"type\":\"document\",\"mime_type\":\"application/pdf\",\"data\":\"" PDF "\",\"index\":2},"  \
    "{\"type\":\"audio\",\"mime_type\":\"audio/wav\",\"data\":\"" WAV "\",\"index\":3}]}"

/* The body the upstream of preset got for one user message of text and an image, a PDF and a
 * WAV file (rein_provider_send over HTTP; the scripted server checks the wire's shapes). */
static const json_t *user_media_body(struct fx *f, const char *preset, const char *text)
{
    char json[1024];
    rein_model_request *req = rein_model_request_new();
    rein_model_response *resp = NULL;
    const struct ms_request *r;
    rein_error err;
    json_t *m;

    fx_start(f, preset, "[{\"text\":\"a red pixel\"}]");
    snprintf(json, sizeof(json), USER_MEDIA, text);
    m = rein_json_parse(json, strlen(json), 0, &err);
    assert_non_null(m);
    assert_rein_ok(rein_history_append(f->h, m, &err), &err);
    json_decref(m);
    assert_non_null(req);
    assert_rein_ok(rein_provider_send(f->p, req, f->h, &resp, &err), &err);
    assert_string_equal(rein_model_response_text(resp), "a red pixel");
    rein_model_response_free(resp);
    rein_model_request_free(req);
    r = ms_request(f->ms, 0);
    assert_non_null(r);
    if (r->status != 200 || r->error)
        fail_msg("request: status %d: %s\n%s", r->status, r->error ? r->error : "", r->body);
    /* the image's bytes once (in its block), or not at all where the wire takes no media */
    assert_int_equal(occurrences(r->body, PNG), strcmp(preset, "dashscope-native") ? 1 : 0);
    return r->json;
}

/* A user message's attachments are not a tool result's: history.c refuses them elsewhere. */
static void user_media_only_user_and_tool(void **state)
{
    rein_history *h = rein_history_new();
    const char *bad = "{\"role\":\"assistant\",\"content\":\"x\",\"attachments\":[]}";
    rein_error err;
    json_t *m = rein_json_parse(bad, strlen(bad), 0, NULL);

    (void)state;
    assert_int_equal(rein_history_append(h, m, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "attachments"));
    json_decref(m);
    rein_history_free(h);
}

/* OpenAI chat completions: content parts: text, image_url data URL, file, input_audio. */
static void user_media_openai(void **state)
{
    struct fx f;
    const json_t *c;

    (void)state;
    c = json_object_get(
        json_array_get(json_object_get(user_media_body(&f, "openai", "what is it?"), "messages"),
                       0),
        "content");
    assert_int_equal(json_array_size(c), 4);
    assert_string_equal(str(json_array_get(c, 0), "type"), "text");
    assert_string_equal(str(json_array_get(c, 0), "text"), "what is it?");
    assert_string_equal(str(json_array_get(c, 1), "type"), "image_url");
    assert_string_equal(str(test_json_at(c, "1.image_url"), "url"), "data:image/png;base64," PNG);
    assert_string_equal(str(json_array_get(c, 2), "type"), "file");
    assert_string_equal(str(test_json_at(c, "2.file"), "file_data"),
                        "data:application/pdf;base64," PDF);
    assert_string_equal(str(test_json_at(c, "2.file"), "filename"), "attachment-2.pdf");
    assert_string_equal(str(test_json_at(c, "3.input_audio"), "data"), WAV);
    assert_string_equal(str(test_json_at(c, "3.input_audio"), "format"), "wav");
    assert_true(rein_provider_takes_media(f.p, "image/png"));
    assert_false(rein_provider_takes_media(f.p, "video/mp4"));
    fx_stop(&f);
}

/* Anthropic: the text block, an image and a document block with base64 sources; audio named
 * as not sent in a last text block. A message of media alone has no (empty) text block. */
static void user_media_anthropic(void **state)
{
    struct fx f;
    const json_t *c;

    (void)state;
    c = json_object_get(
        json_array_get(json_object_get(user_media_body(&f, "anthropic", "look"), "messages"), 0),
        "content");
    assert_int_equal(json_array_size(c), 4);
    assert_string_equal(str(json_array_get(c, 0), "text"), "look");
    assert_string_equal(str(json_array_get(c, 1), "type"), "image");
    assert_string_equal(str(test_json_at(c, "1.source"), "type"), "base64");
    assert_string_equal(str(test_json_at(c, "1.source"), "media_type"), "image/png");
    assert_string_equal(str(test_json_at(c, "1.source"), "data"), PNG);
    assert_string_equal(str(json_array_get(c, 2), "type"), "document");
    assert_string_equal(str(test_json_at(c, "2.source"), "media_type"), "application/pdf");
    assert_non_null(strstr(str(json_array_get(c, 3), "text"),
                           "attachment 3, audio/wav, was not sent: Anthropic's Messages API takes "
                           "no audio in a user message"));
    assert_false(rein_provider_takes_media(f.p, "audio/wav"));
    fx_stop(&f);
    c = json_object_get(
        json_array_get(json_object_get(user_media_body(&f, "anthropic", ""), "messages"), 0),
        "content");
    assert_string_equal(str(json_array_get(c, 0), "type"), "image");
    fx_stop(&f);
}

/* Responses: input_text, input_image, input_file; audio named in a last input_text. */
static void user_media_responses(void **state)
{
    struct fx f;
    const json_t *c;

    (void)state;
    c = json_object_get(
        json_array_get(json_object_get(user_media_body(&f, "openai-responses", "look"), "input"),
                       0),
        "content");
    assert_int_equal(json_array_size(c), 4);
    assert_string_equal(str(json_array_get(c, 0), "type"), "input_text");
    assert_string_equal(str(json_array_get(c, 1), "type"), "input_image");
    assert_string_equal(str(json_array_get(c, 1), "image_url"), "data:image/png;base64," PNG);
    assert_string_equal(str(json_array_get(c, 2), "type"), "input_file");
    assert_string_equal(str(json_array_get(c, 2), "file_data"), "data:application/pdf;base64," PDF);
    assert_string_equal(str(json_array_get(c, 3), "type"), "input_text");
    assert_non_null(strstr(str(json_array_get(c, 3), "text"), "audio/wav, was not sent"));
    fx_stop(&f);
}

/* Gemini: a text part and an inlineData part each (Gemini reads all three media). */
static void user_media_gemini(void **state)
{
    struct fx f;
    const json_t *parts;

    (void)state;
    parts = json_object_get(
        json_array_get(json_object_get(user_media_body(&f, "gemini", "look"), "contents"), 0),
        "parts");
    assert_int_equal(json_array_size(parts), 4);
    assert_string_equal(str(json_array_get(parts, 0), "text"), "look");
    assert_string_equal(str(test_json_at(parts, "1.inlineData"), "mimeType"), "image/png");
    assert_string_equal(str(test_json_at(parts, "1.inlineData"), "data"), PNG);
    assert_string_equal(str(test_json_at(parts, "2.inlineData"), "mimeType"), "application/pdf");
    assert_string_equal(str(test_json_at(parts, "3.inlineData"), "mimeType"), "audio/wav");
    fx_stop(&f);
}

/* Bedrock: text, image and document blocks; audio named as not sent. */
static void user_media_bedrock(void **state)
{
    struct fx f;
    const json_t *c;

    (void)state;
    c = json_object_get(
        json_array_get(json_object_get(user_media_body(&f, "bedrock", "look"), "messages"), 0),
        "content");
    assert_int_equal(json_array_size(c), 4);
    assert_string_equal(str(json_array_get(c, 0), "text"), "look");
    assert_string_equal(str(test_json_at(c, "1.image"), "format"), "png");
    assert_string_equal(str(test_json_at(c, "1.image.source"), "bytes"), PNG);
    assert_string_equal(str(test_json_at(c, "2.document"), "format"), "pdf");
    assert_string_equal(str(test_json_at(c, "2.document"), "name"), "attachment 2");
    assert_non_null(strstr(str(json_array_get(c, 3), "text"), "audio/wav, was not sent"));
    fx_stop(&f);
}

/* Ollama: the image in images; the PDF and the WAV named as not sent in the content. */
static void user_media_ollama(void **state)
{
    struct fx f;
    const json_t *m;

    (void)state;
    m = json_array_get(json_object_get(user_media_body(&f, "ollama", "look"), "messages"), 0);
    assert_int_equal(json_array_size(json_object_get(m, "images")), 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(m, "images"), 0)), PNG);
    assert_non_null(strstr(str(m, "content"), "look\n(attachment 2, application/pdf, was not sent: "
                                              "Ollama's chat API takes no document in a user "
                                              "message)"));
    assert_non_null(strstr(str(m, "content"), "attachment 3, audio/wav"));
    fx_stop(&f);
}

/* DashScope's native API takes no media: the text with each named as not sent, no parts (its
 * messages are the OpenAI wire's pieces, in a variant of their own). */
static void user_media_dashscope_native(void **state)
{
    struct fx f;
    const json_t *m;

    (void)state;
    m = json_array_get(
        test_json_at(user_media_body(&f, "dashscope-native", "look"), "input.messages"), 0);
    assert_true(json_is_string(json_object_get(m, "content")));
    assert_non_null(strstr(str(m, "content"), "look\n(attachment 1, image/png, was not sent: "
                                              "DashScope's native API takes no image in a user "
                                              "message)"));
    assert_false(rein_provider_takes_media(f.p, "image/png"));
    fx_stop(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(user_media_only_user_and_tool),
    cmocka_unit_test(user_media_openai),
    cmocka_unit_test(user_media_anthropic),
    cmocka_unit_test(user_media_responses),
    cmocka_unit_test(user_media_gemini),
    cmocka_unit_test(user_media_bedrock),
    cmocka_unit_test(user_media_ollama),
    cmocka_unit_test(user_media_dashscope_native),
    cmocka_unit_test(media_anthropic),
    cmocka_unit_test(media_openai),
    cmocka_unit_test(media_responses),
    cmocka_unit_test(media_gemini),
    cmocka_unit_test(media_bedrock),
    cmocka_unit_test(structured_once),
};

REIN_TEST_MAIN(tests)
