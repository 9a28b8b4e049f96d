/*
 * Amazon Bedrock's Converse API (POST BASE/model/MODEL/converse) and ConverseStream
 * (/converse-stream, an application/vnd.amazon.eventstream reply; eventstream.c frames it),
 * signed with SigV4 (sigv4.c) or, when an API key is configured (AWS_BEARER_TOKEN_BEDROCK),
 * sent with it as a bearer token. CountTokens (/count-tokens) goes to the same model URL and
 * is signed alike; provider.c asks it with this writer's body under input.converse.
 *
 * Decoding follows the stream's events, each a JSON payload under its :event-type:
 * messageStart, contentBlockStart (a toolUse block: toolUseId and name; text blocks have no
 * start), contentBlockDelta (text, toolUse.input as a piece of the argument string,
 * reasoningContent text, signature or redactedContent), contentBlockStop (a tool call is
 * finished there), messageStop (stopReason: the reply is complete) and metadata (usage:
 * inputTokens plus the cache reads and writes make the prompt, as with Anthropic; the reads
 * are the cached part). An exception message (throttlingException, modelStreamErrorException,
 * …) is the provider's error {"type", "message"}. The same events as JSON lines, each wrapped
 * in an object named by its type ({"contentBlockDelta": {…}}, as the Vercel AI SDK records
 * them) decode alike. A Converse body is output.message.content with the same blocks whole;
 * an error body is {"message": …} (its type comes from the x-amzn-ErrorType header).
 *
 * Encoding: system messages go to "system"; user text and tool results merge into one user
 * message (toolResult blocks first, the output as a json block when it is JSON, then image and
 * document blocks for its attachments), an assistant
 * message is its reasoning (with its signature), text and toolUse blocks; Bedrock refuses
 * blank text, so empty texts are left out and a message left empty says so. Tools are
 * toolSpec entries with the schema as inputSchema.json.
 */
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include "jpull.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* ---------------------------------------------------------------------------------------
 * Decoding
 */

struct bedrock_state {
    int calls[64]; /* contentBlockIndex -> call index + 1 (0: not a tool block) */
};

static void bedrock_state_free(void *wire_state)
{
    rein_free(wire_state);
}

static struct bedrock_state *state(struct rein_provider_decoder *d)
{
    if (!d->wire_state)
        d->wire_state = rein_calloc(1, sizeof(struct bedrock_state));
    return d->wire_state;
}

static void take_usage(struct rein_provider_decoder *d, const struct jdoc *doc, int u)
{
    int64_t in, out, cr, cw;

    if (!jis(doc, u, JSMN_OBJECT))
        return;
    in = JGET_INT(doc, u, "inputTokens");
    out = JGET_INT(doc, u, "outputTokens");
    cr = JGET_INT(doc, u, "cacheReadInputTokens");
    cw = JGET_INT(doc, u, "cacheWriteInputTokens");
    if (in >= 0)
        in += (cr > 0 ? cr : 0) + (cw > 0 ? cw : 0);
    rein__asm_usage(&d->a, in, out);
    rein__asm_usage_detail(&d->a, cr, -1);
    rein__asm_cache_write(&d->a, cw);
}

static rein_err take_reasoning(struct rein_provider_decoder *d, const struct jdoc *doc, int rc_obj)
{
    int t = JGET(doc, rc_obj, "text"), s = JGET(doc, rc_obj, "signature");
    int red = JGET(doc, rc_obj, "redactedContent"), rt = JGET(doc, rc_obj, "reasoningText");
    rein_err rc = REIN_OK;

    if (jis(doc, rt, JSMN_OBJECT)) { /* a Converse body: {reasoningText: {text, signature}} */
        t = JGET(doc, rt, "text");
        s = JGET(doc, rt, "signature");
    }
    if (jis(doc, t, JSMN_STRING))
        rc = rein__asm_reasoning(&d->a, jstr(doc, t));
    if (!rc && jis(doc, s, JSMN_STRING))
        rc = rein__asm_block_signature(&d->a, jstr(doc, s));
    if (!rc && jis(doc, red, JSMN_STRING)) {
        json_t *v = jtree(doc, red);
        rc = v ? rein__asm_redacted(&d->a, v) : REIN_ENOMEM;
    }
    return rc;
}

/* A tool call at block index: its call index (made when new), or a negative code. */
static int block_call(struct rein_provider_decoder *d, int64_t index, const struct jdoc *doc,
                      int tool)
{
    struct bedrock_state *s = state(d);
    int call;

    if (!s)
        return REIN_ENOMEM;
    call = rein__asm_call(&d->a, index, jstr(doc, JGET(doc, tool, "toolUseId")),
                          jstr(doc, JGET(doc, tool, "name")));
    if (call >= 0 && index >= 0 && index < 64)
        s->calls[index] = call + 1;
    return call;
}

static int call_at(struct rein_provider_decoder *d, int64_t index)
{
    struct bedrock_state *s = state(d);

    return s && index >= 0 && index < 64 ? s->calls[index] - 1 : -1;
}

static rein_err take_delta(struct rein_provider_decoder *d, int64_t index, const struct jdoc *doc,
                           int delta)
{
    int t = JGET(doc, delta, "text"), tool = JGET(doc, delta, "toolUse");
    int reason = JGET(doc, delta, "reasoningContent");

    if (jis(doc, t, JSMN_STRING))
        return rein__asm_text(&d->a, jstr(doc, t));
    if (jis(doc, reason, JSMN_OBJECT))
        return take_reasoning(d, doc, reason);
    if (jis(doc, tool, JSMN_OBJECT)) {
        int call = call_at(d, index);
        if (call < 0) /* a delta without its start: the call is made with what is known */
            call = block_call(d, index, doc, tool);
        if (call < 0)
            return call;
        return rein__asm_call_args(&d->a, (size_t)call, jstr(doc, JGET(doc, tool, "input")));
    }
    return REIN_OK; /* citations and other deltas carry nothing rein keeps */
}

static rein_err take_exception(struct rein_provider_decoder *d, const char *type,
                               const struct jdoc *doc, int obj)
{
    json_t *e = obj >= 0 ? jtree(doc, obj) : NULL;

    if (!json_is_object(e)) {
        json_decref(e);
        e = json_object();
    }
    if (!e || json_object_set_new(e, "type", json_string(type))) {
        json_decref(e);
        return REIN_ENOMEM;
    }
    if (!json_object_get(e, "message") && json_object_get(e, "Message"))
        json_object_set(e, "message", json_object_get(e, "Message"));
    rein__asm_error(&d->a, e);
    d->recognized++;
    return REIN_OK;
}

static bool is_exception(const char *name)
{
    size_t n = strlen(name);
    return n > 9 && strcmp(name + n - 9, "Exception") == 0;
}

/* One event: its type and its JSON object. */
static rein_err take_event(struct rein_provider_decoder *d, const char *type,
                           const struct jdoc *doc, int obj)
{
    int64_t index = -1;
    rein_err rc = REIN_OK;

    if (d->exception || is_exception(type))
        return take_exception(d, type, doc, obj);
    (void)jint(doc, JGET(doc, obj, "contentBlockIndex"), &index);
    if (!strcmp(type, "contentBlockDelta")) {
        rc = take_delta(d, index, doc, JGET(doc, obj, "delta"));
    } else if (!strcmp(type, "contentBlockStart")) {
        int tool = JGET(doc, JGET(doc, obj, "start"), "toolUse");
        if (jis(doc, tool, JSMN_OBJECT)) {
            int call = block_call(d, index, doc, tool);
            rc = call < 0 ? call : REIN_OK;
        }
    } else if (!strcmp(type, "contentBlockStop")) {
        int call = call_at(d, index);
        if (call >= 0)
            rc = rein__asm_call_close(&d->a, (size_t)call);
    } else if (!strcmp(type, "messageStop")) {
        int sr = JGET(doc, obj, "stopReason");
        if (jis(doc, sr, JSMN_STRING))
            rc = rein__asm_finish_reason(&d->a, jstr(doc, sr));
        rein__asm_complete(&d->a);
    } else if (!strcmp(type, "metadata")) {
        take_usage(d, doc, JGET(doc, obj, "usage"));
    } else if (strcmp(type, "messageStart") != 0) {
        return REIN_OK; /* an event type rein does not know: skipped, not counted */
    }
    d->recognized++;
    return rc;
}

static rein_err bedrock_payload(struct rein_provider_decoder *d, const char *event, const char *p,
                                size_t len, rein_error *err)
{
    struct jdoc doc;
    size_t n = rein__decoder_saw(d, p, len);
    int r = jdoc_parse(&doc, p, len, &d->tok, &d->tokcap);
    char type[64];

    if (r == JSMN_ERROR_NOMEM)
        return REIN_ENOMEM;
    if (r <= 0 && rein__decoder_cut_at_eof(d, r == JSMN_ERROR_PART))
        return REIN_OK;
    if (r <= 0 || doc.t[0].type != JSMN_OBJECT || jnext(&doc, 0) != doc.n)
        return rein__decoder_bad(d, n, p, len,
                                 r == JSMN_ERROR_PART ? "the JSON is cut short"
                                                      : "an event must be one JSON object",
                                 err);
    if (event && event[0])
        return take_event(d, event, &doc, 0);
    /* A recorded line: {"eventType": {...}}. */
    if (doc.t[0].size == 1 && jis(&doc, 1, JSMN_STRING) && jis(&doc, 2, JSMN_OBJECT)) {
        size_t klen = (size_t)(doc.t[1].end - doc.t[1].start);
        if (klen < sizeof(type)) {
            memcpy(type, p + doc.t[1].start, klen);
            type[klen] = '\0';
            return take_event(d, type, &doc, 2);
        }
    }
    return REIN_OK;
}

static rein_err take_block(struct rein_provider_decoder *d, int64_t index, const struct jdoc *doc,
                           int blk)
{
    int t = JGET(doc, blk, "text"), tool = JGET(doc, blk, "toolUse");
    int reason = JGET(doc, blk, "reasoningContent");
    rein_err rc = REIN_OK;

    if (jis(doc, t, JSMN_STRING))
        return rein__asm_text(&d->a, jstr(doc, t));
    if (jis(doc, reason, JSMN_OBJECT))
        return take_reasoning(d, doc, reason);
    if (jis(doc, tool, JSMN_OBJECT)) {
        int input = JGET(doc, tool, "input"), call = block_call(d, index, doc, tool);
        if (call < 0)
            return call;
        if (input >= 0) { /* the input whole: its exact text is the raw argument string */
            size_t ilen;
            const char *raw = jraw(doc, input, &ilen);
            if (doc->t[input].type == JSMN_STRING) {
                raw--;
                ilen += 2;
            }
            rc = rein__asm_call_args_raw(&d->a, (size_t)call, raw, ilen);
        }
        return rc ? rc : rein__asm_call_close(&d->a, (size_t)call);
    }
    return REIN_OK;
}

static rein_err bedrock_body(struct rein_provider_decoder *d, const char *p, size_t len,
                             rein_error *err)
{
    struct jdoc doc;
    int r, content, sr, m;
    rein_err rc = REIN_OK;

    rein__decoder_saw(d, p, len);
    r = jdoc_parse(&doc, p, len, &d->tok, &d->tokcap);
    if (r == JSMN_ERROR_NOMEM)
        return REIN_ENOMEM;
    if (r <= 0 || doc.t[0].type != JSMN_OBJECT || jnext(&doc, 0) != doc.n) {
        rein_error jerr;
        rein_error_clear(&jerr);
        json_t *v = rein_json_parse(p, len, 0, &jerr);
        json_decref(v);
        return rein__decoder_bad(d, 0, p, len, v ? "the body must be one JSON object" : jerr.msg,
                                 err);
    }
    content = JGET(&doc, JGET(&doc, JGET(&doc, 0, "output"), "message"), "content");
    if (!jis(&doc, content, JSMN_ARRAY)) {
        m = JGET(&doc, 0, "message") >= 0 ? JGET(&doc, 0, "message") : JGET(&doc, 0, "Message");
        if (!jis(&doc, m, JSMN_STRING))
            return rein__decoder_bad(d, 0, p, len, "no output.message.content and no message", err);
        rein__asm_error(&d->a, jtree(&doc, 0)); /* an error body */
        d->recognized++;
        return REIN_OK;
    }
    d->recognized++;
    for (int k = 0, i = content + 1; k < doc.t[content].size && !rc; k++, i = jnext(&doc, i))
        rc = jis(&doc, i, JSMN_OBJECT) ? take_block(d, k, &doc, i) : REIN_OK;
    if (rc)
        return rc;
    sr = JGET(&doc, 0, "stopReason");
    if (jis(&doc, sr, JSMN_STRING))
        rc = rein__asm_finish_reason(&d->a, jstr(&doc, sr));
    take_usage(d, &doc, JGET(&doc, 0, "usage"));
    rein__asm_complete(&d->a);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * Encoding. A message's piece is its content blocks without the brackets; the body merges
 * consecutive pieces of one role into one message, as Bedrock wants them alternating.
 */

static void text_block(struct rein_jw *w, const char *text)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "text");
    rein_jw_str(w, text);
    rein_jw_obj_end(w);
}

static size_t assistant_blocks(struct rein_jw *w, const json_t *msg)
{
    const char *reasoning = rein__json_str(msg, "reasoning");
    const char *sig = rein__json_str(msg, "reasoning_signature");
    const char *content = rein__json_str(msg, "content");
    const json_t *v;
    size_t i, n = 0;

    /* Reasoning goes back first, with its signature, as Claude on Bedrock checks it. */
    if (reasoning[0] && sig[0]) {
        rein_jw_obj_begin(w);
        rein_jw_key(w, "reasoningContent");
        rein_jw_obj_begin(w);
        rein_jw_key(w, "reasoningText");
        rein_jw_obj_begin(w);
        rein_jw_key(w, "text");
        rein_jw_str(w, reasoning);
        rein_jw_key(w, "signature");
        rein_jw_str(w, sig);
        rein_jw_obj_end(w);
        rein_jw_obj_end(w);
        rein_jw_obj_end(w);
        n++;
    }
    json_array_foreach(json_object_get(msg, "redacted_reasoning"), i, v)
    {
        rein_jw_obj_begin(w);
        rein_jw_key(w, "reasoningContent");
        rein_jw_obj_begin(w);
        rein_jw_key(w, "redactedContent");
        rein_jw_str(w, json_string_value(v) ? json_string_value(v) : "");
        rein_jw_obj_end(w);
        rein_jw_obj_end(w);
        n++;
    }
    if (content[0]) {
        text_block(w, content);
        n++;
    }
    json_array_foreach(json_object_get(msg, "tool_calls"), i, v)
    {
        rein_jw_obj_begin(w);
        rein_jw_key(w, "toolUse");
        rein_jw_obj_begin(w);
        rein_jw_key(w, "toolUseId");
        rein_jw_str(w, rein__json_str(v, "id"));
        rein_jw_key(w, "name");
        rein_jw_str(w, rein__json_str(v, "name"));
        rein_jw_key(w, "input");
        rein__jw_tool_args_raw(w, rein__json_str(v, "arguments"));
        rein_jw_obj_end(w);
        rein_jw_obj_end(w);
        n++;
    }
    return n;
}

/* The block Converse takes for a medium in a tool result, and its format word: ImageBlock
 * (png, jpeg, gif, webp) or DocumentBlock (pdf, csv, doc, docx, xls, xlsx, html, txt, md);
 * NULL for anything else (audio). */
static const char *media_block(const char *mime, const char **format)
{
    static const char *const map[][3] = {
        {"image/png", "image", "png"},
        {"image/jpeg", "image", "jpeg"},
        {"image/gif", "image", "gif"},
        {"image/webp", "image", "webp"},
        {"application/pdf", "document", "pdf"},
        {"text/csv", "document", "csv"},
        {"application/msword", "document", "doc"},
        {"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "document",
         "docx"},
        {"application/vnd.ms-excel", "document", "xls"},
        {"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "document", "xlsx"},
        {"text/html", "document", "html"},
        {"text/plain", "document", "txt"},
        {"text/markdown", "document", "md"},
    };

    for (size_t i = 0; i < REIN_ARRAY_SIZE(map); i++) {
        if (strcmp(mime, map[i][0]) == 0) {
            *format = map[i][2];
            return map[i][1];
        }
    }
    return NULL;
}

/* An attachment as an image or document block of a tool result's content (the bytes base64,
 * as Converse's JSON carries a blob), when Converse takes its medium. */
static bool media_item(struct rein_jw *w, const json_t *att)
{
    const char *format = NULL, *block = media_block(rein__json_str(att, "mime_type"), &format);

    if (!block)
        return false;
    rein_jw_obj_begin(w);
    rein_jw_key(w, block);
    rein_jw_obj_begin(w);
    rein_jw_key(w, "format");
    rein_jw_str(w, format);
    if (block[0] == 'd') {
        /* A document needs a name: letters, digits, spaces, hyphens, parentheses and square
         * brackets only. */
        char name[48];
        snprintf(name, sizeof(name), "attachment %lld",
                 (long long)json_integer_value(json_object_get(att, "index")));
        rein_jw_key(w, "name");
        rein_jw_str(w, name);
    }
    rein_jw_key(w, "source");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "bytes");
    rein_jw_str(w, rein__json_str(att, "data"));
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
    return true;
}

static void tool_result(struct rein_jw *w, const json_t *msg)
{
    const char *content = rein__json_str(msg, "content");
    json_t *parsed = content[0] == '{' || content[0] == '['
                         ? rein_json_parse(content, strlen(content), 0, NULL)
                         : NULL;

    rein_jw_obj_begin(w);
    rein_jw_key(w, "toolResult");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "toolUseId");
    rein_jw_str(w, rein__json_str(msg, "tool_call_id"));
    rein_jw_key(w, "content");
    rein_jw_arr_begin(w);
    rein_jw_obj_begin(w);
    /* JSON output as a json block (the model reads structure); Bedrock refuses blank text. */
    rein_jw_key(w, json_is_object(parsed) ? "json" : "text");
    if (json_is_object(parsed))
        rein_jw_json(w, parsed);
    else
        rein_jw_str(w, content[0] ? content : "(no output)");
    rein_jw_obj_end(w);
    rein__jw_attachments(w, msg, "Bedrock's Converse API", NULL, media_item);
    rein_jw_arr_end(w);
    if (json_is_true(json_object_get(msg, "is_error"))) {
        rein_jw_key(w, "status");
        rein_jw_str(w, "error");
    }
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
    json_decref(parsed);
}

/* A user message with attachments: its text, then an image or document block per attachment
 * Converse takes (the others named as not sent in a last text block). */
static void user_media(struct rein_jw *w, const json_t *msg)
{
    const char *content = rein__json_str(msg, "content");

    if (content[0])
        text_block(w, content);
    rein__jw_attachments(w, msg, "Bedrock's Converse API", NULL, media_item);
}

static bool bedrock_takes_media(const char *mime)
{
    const char *format;

    return media_block(mime, &format) != NULL;
}

static rein_err bedrock_encode_message(const rein_provider *p, const json_t *msg,
                                       struct rein_buf *out)
{
    const char *role = rein__json_str(msg, "role");
    const char *content = rein__json_str(msg, "content");
    struct rein_jw w;
    rein_err rc;

    (void)p;
    rein_jw_init(&w, out);
    rein_jw_arr_begin(&w);
    if (!strcmp(role, "tool"))
        tool_result(&w, msg);
    else if (!strcmp(role, "assistant")) {
        if (!assistant_blocks(&w, msg))
            text_block(&w, "(no content)");
    } else if (json_array_size(json_object_get(msg, "attachments"))) {
        user_media(&w, msg);
    } else if (content[0] || strcmp(role, "system") != 0) {
        text_block(&w, content[0] ? content : "(no content)");
    }
    rein_jw_arr_end(&w);
    rc = rein_jw_finish(&w);
    if (rc)
        return rc;
    memmove(out->ptr, out->ptr + 1, out->len - 2);
    rein_buf_truncate(out, out->len - 2);
    return REIN_OK;
}

static rein_err bedrock_encode_tools(const rein_provider *p, const rein_model_request *req,
                                     struct rein_buf *out)
{
    struct rein_jw w;

    (void)p;
    rein_jw_init(&w, out);
    rein_jw_arr_begin(&w);
    for (size_t i = 0; i < req->ntools; i++) {
        const struct rein__tool *t = &req->tools[i];
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "toolSpec");
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "name");
        rein_jw_str(&w, t->name);
        if (t->description && t->description[0]) {
            rein_jw_key(&w, "description");
            rein_jw_str(&w, t->description);
        }
        rein_jw_key(&w, "inputSchema");
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "json");
        if (t->parameters)
            rein_jw_json(&w, t->parameters);
        else
            rein_jw_raw(&w, "{\"type\":\"object\",\"properties\":{}}", 33);
        rein_jw_obj_end(&w);
        rein_jw_obj_end(&w);
        rein_jw_obj_end(&w);
    }
    rein_jw_arr_end(&w);
    return rein_jw_finish(&w);
}

/* True when h holds a tool call or a tool result: Converse then refuses a request without a
 * toolConfig. */
static bool has_tool_blocks(const rein_history *h)
{
    for (size_t i = 0; i < rein_history_len(h); i++) {
        char role = rein__history_role(h, i);
        if (role == 't' ||
            (role == 'a' && json_array_size(json_object_get(rein_history_get(h, i), "tool_calls"))))
            return true;
    }
    return false;
}

/* The one tool declared when none may be called but the conversation holds tool blocks: a name
 * no registry routes to, so a call to it is refused as unknown. */
#define NO_TOOLS_TOOL                                                                              \
    "[{\"toolSpec\":{\"name\":\"rein_no_tools\",\"description\":\"Tools are off for this reply: "  \
    "do not call this.\",\"inputSchema\":{\"json\":{\"type\":\"object\",\"properties\":{}}}}}]"

/*
 * toolConfig. Converse has no tool choice "none" (auto, any or one tool): as the Vercel AI
 * SDK does, the tools are then not offered at all, and a conversation that already holds tool
 * blocks, which Converse accepts only with a toolConfig, declares the one placeholder tool
 * above instead of the real ones. The same goes for a request that offers no tools.
 */
static void tool_config(struct rein_jw *w, const rein_model_request *req, const rein_history *h)
{
    const char *choice = req->tool_choice;

    if (!req->ntools || (choice && strcmp(choice, "none") == 0)) {
        if (has_tool_blocks(h)) {
            rein_jw_key(w, "toolConfig");
            rein_jw_obj_begin(w);
            rein_jw_key(w, "tools");
            rein_jw_raw(w, NO_TOOLS_TOOL, sizeof(NO_TOOLS_TOOL) - 1);
            rein_jw_obj_end(w);
        }
        return;
    }
    rein_jw_key(w, "toolConfig");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "tools");
    rein_jw_raw(w, req->tools_json, req->tools_len);
    if (choice) {
        rein_jw_key(w, "toolChoice");
        rein_jw_obj_begin(w);
        if (!strcmp(choice, "auto") || !strcmp(choice, "required")) {
            rein_jw_key(w, !strcmp(choice, "auto") ? "auto" : "any");
            rein_jw_obj_begin(w);
            rein_jw_obj_end(w);
        } else {
            rein_jw_key(w, "tool");
            rein_jw_obj_begin(w);
            rein_jw_key(w, "name");
            rein_jw_str(w, choice);
            rein_jw_obj_end(w);
        }
        rein_jw_obj_end(w);
    }
    rein_jw_obj_end(w);
}

/* A Claude model id, an inference profile's included ("us.anthropic.claude-…", an ARN). */
static bool bedrock_claude(const char *model)
{
    return model && strstr(model, "anthropic.claude") != NULL;
}

/* Claude's sampling settings as Anthropic's API has them; every other family's all of them. */
static unsigned bedrock_sampling(const char *model, bool thinks)
{
    return bedrock_claude(model) ? rein__claude_sampling(model, thinks) : REIN_SAMPLING_ALL;
}

static rein_err bedrock_build_body(rein_provider *p, const rein_model_request *req, rein_history *h,
                                   struct rein__body *body, rein_error *err)
{
    struct rein_jw w;
    struct rein__groups g;
    struct rein__claude_think think = {.max_tokens = req->max_tokens};
    /* Claude's thinking goes in the model's own fields, its output limit counting it */
    bool thinking = bedrock_claude(rein__request_model(p, req)) &&
                    rein__claude_thinking(p, req, "additionalModelRequestFields", &think);
    int64_t max_tokens = think.max_tokens;
    rein_err rc;

    /* The messages, when large, are sent (and signed) from where the history keeps them. */
    rc = rein__body_groups_start(p, req, h, &rein__wire_bedrock, body, &g, &w, err);
    if (rc)
        return rc;
    rein_jw_key(&w, "messages");
    rc = rein__body_groups(body, &w, &g);
    if (!rc && g.has_system) {
        rein_jw_key(&w, "system");
        rein__jw_system_list(&w, &g);
        rc = w.err;
    }
    if (rc)
        return rein_error_set(err, rc, "encoding the history: %s", rein_strerror(rc));
    tool_config(&w, req, h);
    if (rein__request_has_settings(req) || max_tokens > 0) {
        rein_jw_key(&w, "inferenceConfig");
        rein_jw_obj_begin(&w);
        if (max_tokens > 0) {
            rein_jw_key(&w, "maxTokens");
            rein_jw_int(&w, max_tokens);
        }
        if (req->temperature >= 0) {
            rein_jw_key(&w, "temperature");
            rein_jw_double(&w, req->temperature);
        }
        rein__jw_top_p(&w, req, "topP");
        rein__jw_stop(&w, req, "stopSequences");
        rein_jw_obj_end(&w);
    }
    if (thinking) {
        rein_jw_key(&w, "additionalModelRequestFields");
        rein_jw_obj_begin(&w);
        rein__jw_claude_thinking(&w, &think);
        rein_jw_obj_end(&w);
    }
    rein__jw_output_bedrock(&w, req);
    rein__jw_extra(&w, req);
    rein_jw_obj_end(&w);
    rc = rein_jw_finish(&w);
    return rc ? rein_error_set(err, rc, "encoding the request: %s", rein_strerror(rc)) : REIN_OK;
}

/* BASE/model/MODEL/OPERATION, the model id encoded (':' in every version, '/' in an inference
 * profile's ARN). New; NULL when memory is exhausted. */
static char *model_url(const rein_provider *p, const rein_model_request *req, const char *op)
{
    const char *model = rein__request_model(p, req);
    struct rein_buf b;

    rein_buf_init(&b, 0);
    if (rein_buf_adds(&b, p->endpoint) || rein_buf_adds(&b, "/model/") ||
        rein__aws_uri_encode(&b, model, strlen(model), false) || rein_buf_adds(&b, op)) {
        rein_buf_release(&b);
        return NULL;
    }
    return rein_buf_detach(&b, NULL);
}

/* BASE/model/MODEL/converse(-stream). */
static char *bedrock_url(const rein_provider *p, const rein_model_request *req)
{
    return model_url(p, req, req->stream ? "/converse-stream" : "/converse");
}

char *rein__bedrock_count_url(const rein_provider *p, const rein_model_request *req)
{
    return model_url(p, req, "/count-tokens");
}

/* SigV4 (an API key, when configured, goes as a bearer instead: header_auth adds it). */
static rein_err bedrock_sign(const rein_provider *p, const char *url, const struct rein__body *body,
                             struct curl_slist **headers)
{
    char hash[65];

    if (p->cfg.api_key || !p->aws)
        return REIN_OK;
    rein__body_sha256_hex(body, hash);
    return rein__aws_sign_hashed(p->aws, "bedrock", url, hash, time(NULL), headers);
}

/*
 * The bedrock preset: an API key (AWS_BEARER_TOKEN_BEDROCK or a configured key) is sent as a
 * bearer; otherwise the AWS credentials and region are loaded for SigV4. The base URL is
 * https://bedrock-runtime.REGION.amazonaws.com unless one is configured.
 */
rein_err rein__bedrock_open(rein_provider *p, rein_error *err)
{
    const char *key = getenv("AWS_BEARER_TOKEN_BEDROCK");
    rein_err rc;

    if (!p->cfg.api_key && key && key[0] && !(p->cfg.api_key = rein_strdup(key)))
        return REIN_ENOMEM;
    if (!p->cfg.api_key) {
        rc = rein__aws_load(&p->aws, err);
        if (rc)
            return rc;
    }
    if (!p->cfg.base_url) {
        const char *region = p->aws ? rein__aws_region(p->aws) : getenv("AWS_REGION");
        if (!region || !region[0])
            region = getenv("AWS_DEFAULT_REGION");
        if (!region || !region[0])
            return rein_error_set(err, REIN_EINVAL,
                                  "the bedrock provider needs a region: set AWS_REGION or a "
                                  "base URL");
        p->cfg.base_url = rein_asprintf("https://bedrock-runtime.%s.amazonaws.com", region);
        if (!p->cfg.base_url)
            return REIN_ENOMEM;
    }
    return rein__http_setup(p, err);
}

const struct rein__wire rein__wire_bedrock = {
    .name = "bedrock",
    .path = "",
    .auth = "Authorization: Bearer ",
    .formats = {"bedrock-eventstream", "bedrock-json"},
    .framing = REIN__FRAMING_EVENTSTREAM,
    .stop_max = 2500, /* InferenceConfiguration: "Maximum number of 2500 items" */
    .reasoning_for = bedrock_claude,
    .sampling = bedrock_sampling,
    .output_format = true,
    .decode_payload = bedrock_payload,
    .decode_body = bedrock_body,
    .decode_free = bedrock_state_free,
    .encode_message = bedrock_encode_message,
    .group_user = "{\"role\":\"user\",\"content\":[",
    .group_model = "{\"role\":\"assistant\",\"content\":[",
    .encode_tools = bedrock_encode_tools,
    .takes_media = bedrock_takes_media,
    .build_body = bedrock_build_body,
    .url = bedrock_url,
    .sign = bedrock_sign,
};
