/*
 * The Anthropic messages wire protocol.
 *
 * Decoding follows the event stream: message_start (input usage), content_block_start /
 * _delta / _stop for text (text_delta), thinking (thinking_delta, signature_delta),
 * redacted_thinking (opaque data), tool_use (input_json_delta; a call is finished at its
 * content_block_stop, so its END event goes out before the message ends), message_delta
 * (stop_reason, output usage), message_stop, ping, and error events (overloaded_error …),
 * after which Anthropic closes the stream. Server tool blocks (server_tool_use and the
 * result blocks that follow them) are run by Anthropic, not by rein: they are kept, input
 * assembled, as server_blocks for replay, and are not tool calls. A recording holding
 * several messages (a multi-step capture) is assembled in order with usage summed.
 *
 * Encoding: the system messages go to the top-level "system"; an assistant message becomes
 * thinking blocks (with their signatures), redacted_thinking, server blocks, text and
 * tool_use blocks, in that order; consecutive tool results (and a user message right after
 * them) merge into one user message, tool_result blocks first.
 */
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include "jpull.h"

#include <curl/curl.h>
#include <stdio.h>

/* The anthropic_version Vertex AI's Claude takes in the body (its only one so far). */
#define VERTEX_VERSION "vertex-2023-10-16"

/* ---------------------------------------------------------------------------------------
 * Decoding
 */

enum block_kind { B_NONE, B_TEXT, B_THINKING, B_TOOL, B_SERVER, B_OTHER };

struct block {
    enum block_kind kind;
    int call;                 /* B_TOOL: the call index */
    json_t *server;           /* B_SERVER: the block being assembled */
    struct rein_buf input;    /* B_SERVER: its input text */
    size_t reason_at, sig_at; /* B_THINKING: where its text and signature start */
};

struct rein__anthropic_state {
    struct block *b;
    size_t nb;
    int text_tok;              /* the text string of the text_delta just read (-1: none) */
    int64_t base_in, base_out; /* usage of the messages before this one */
    int64_t cur_in, cur_out;
};

static void block_release(struct block *b)
{
    json_decref(b->server);
    rein_buf_release(&b->input);
    memset(b, 0, sizeof(*b));
}

static void anthropic_state_free(void *wire_state)
{
    struct rein__anthropic_state *s = wire_state;

    if (!s)
        return;
    for (size_t i = 0; i < s->nb; i++)
        block_release(&s->b[i]);
    rein_free(s->b);
    rein_free(s);
}

static struct rein__anthropic_state *state(struct rein_provider_decoder *d)
{
    struct rein__anthropic_state *s = d->wire_state;

    if (!s) {
        s = rein_calloc(1, sizeof(*s));
        if (s)
            s->cur_in = s->cur_out = s->text_tok = -1;
        d->wire_state = s;
    }
    return s;
}

static struct block *block_at(struct rein__anthropic_state *s, int64_t index)
{
    if (index < 0 || index > 4096)
        return NULL;
    if ((size_t)index >= s->nb) {
        size_t n = (size_t)index + 1;
        struct block *v = rein_realloc(s->b, n * sizeof(*v));
        if (!v)
            return NULL;
        memset(v + s->nb, 0, (n - s->nb) * sizeof(*v));
        s->b = v;
        s->nb = n;
    }
    return &s->b[index];
}

static int64_t usage_int(const struct jdoc *doc, int u, const char *key, size_t klen)
{
    int64_t v;

    return jint(doc, jget(doc, u, key, klen), &v) ? v : -1;
}

static void take_usage(struct rein_provider_decoder *d, const struct jdoc *doc, int u)
{
    struct rein__anthropic_state *s = d->wire_state;
    int64_t in, out;

    if (!jis(doc, u, JSMN_OBJECT))
        return;
    in = usage_int(doc, u, "input_tokens", 12);
    out = usage_int(doc, u, "output_tokens", 13);
    if (in >= 0) {
        /* Anthropic counts prompt-cache writes and reads apart from input_tokens; the whole
         * prompt (what OpenAI's prompt_tokens counts) is the sum of the three. */
        int64_t cw = usage_int(doc, u, "cache_creation_input_tokens", 27);
        int64_t cr = usage_int(doc, u, "cache_read_input_tokens", 23);
        in += (cw > 0 ? cw : 0) + (cr > 0 ? cr : 0);
        rein__asm_usage_detail(&d->a, cr, -1);
    }
    rein__asm_cache_write(&d->a, usage_int(doc, u, "cache_creation_input_tokens", 27));
    if (in >= 0)
        s->cur_in = in;
    if (out >= 0)
        s->cur_out = out;
    rein__asm_usage(&d->a, s->cur_in >= 0 ? s->base_in + s->cur_in : -1,
                    s->cur_out >= 0 ? s->base_out + s->cur_out : -1);
}

/* Appends one thinking block (kind "thinking" or "redacted") to the ordered list. */
static rein_err add_thinking_block(rein_model_response *r, json_t *block)
{
    if (!block)
        return REIN_ENOMEM;
    if (json_object_set_new(block, "at", json_integer((json_int_t)r->ncalls))) {
        json_decref(block);
        return REIN_ENOMEM;
    }
    if (!r->thinking_blocks && !(r->thinking_blocks = json_array())) {
        json_decref(block);
        return REIN_ENOMEM;
    }
    return json_array_append_new(r->thinking_blocks, block) ? REIN_ENOMEM : REIN_OK;
}

static rein_err add_redacted(struct rein_provider_decoder *d, const struct jdoc *doc, int data)
{
    json_t *v;

    if (!jis(doc, data, JSMN_STRING))
        return REIN_OK;
    v = jtree(doc, data);
    if (!v || add_thinking_block(d->r, json_pack("{s:O}", "redacted", v))) {
        json_decref(v);
        return REIN_ENOMEM;
    }
    return rein__asm_redacted(&d->a, v);
}

static int64_t call_key(const struct rein_provider_decoder *d, int64_t index)
{
    return ((int64_t)d->a.messages << 20) | index;
}

/* One content block, from a content_block_start (stream) or a body's content array. */
static rein_err block_start(struct rein_provider_decoder *d, int64_t index, const struct jdoc *doc,
                            int cb, bool whole)
{
    struct rein__anthropic_state *s = state(d);
    struct block *b;
    int type = JGET(doc, cb, "type");
    rein_err rc = REIN_OK;

    if (!s || !(b = block_at(s, index)))
        return REIN_ENOMEM;
    block_release(b);
    if (JEQ(doc, type, "text")) {
        int cites = JGET(doc, cb, "citations");
        json_t *v = jis(doc, cites, JSMN_ARRAY) ? jtree(doc, cites) : NULL;
        b->kind = B_TEXT;
        if (jis(doc, cites, JSMN_ARRAY) && !v)
            return REIN_ENOMEM;
        rc = rein__asm_text_block(&d->a, v);
        return rc ? rc : rein__asm_text(&d->a, jstr(doc, JGET(doc, cb, "text")));
    }
    if (JEQ(doc, type, "thinking")) {
        b->kind = B_THINKING;
        b->reason_at = d->r->reasoning.len;
        b->sig_at = d->r->signature.len;
        rc = rein__asm_reasoning(&d->a, jstr(doc, JGET(doc, cb, "thinking")));
        if (!rc)
            rc = rein__asm_block_signature(&d->a, jstr(doc, JGET(doc, cb, "signature")));
        return rc;
    }
    if (JEQ(doc, type, "redacted_thinking")) {
        b->kind = B_OTHER;
        return add_redacted(d, doc, JGET(doc, cb, "data"));
    }
    if (JEQ(doc, type, "tool_use")) {
        int input = JGET(doc, cb, "input");
        b->kind = B_TOOL;
        b->call = rein__asm_call(&d->a, call_key(d, index), jstr(doc, JGET(doc, cb, "id")),
                                 jstr(doc, JGET(doc, cb, "name")));
        if (b->call < 0)
            return b->call;
        if (jis(doc, input, JSMN_OBJECT) && (whole || doc->t[input].size > 0)) {
            /* A body carries the input whole; its exact text is the raw argument string. */
            size_t len;
            const char *raw = jraw(doc, input, &len);
            rc = rein__asm_call_args_raw(&d->a, (size_t)b->call, raw, len);
        }
        return rc;
    }
    /* Anything else (server_tool_use, mcp_tool_use and their result blocks) is replayed as
     * is; a use's input comes in input_json_delta pieces as a call's does. */
    struct rein__jstr t = jstr(doc, type);
    bool use = t.len > 9 && memcmp(t.p + t.len - 9, "_tool_use", 9) == 0;
    b->kind = use && !whole ? B_SERVER : B_OTHER;
    json_t *block = jtree(doc, cb);
    if (!block)
        return REIN_ENOMEM;
    if (b->kind == B_SERVER) {
        b->server = block;
        rein_buf_init(&b->input, 0);
        return REIN_OK;
    }
    return rein__asm_server_block(&d->a, block);
}

static rein_err block_delta(struct rein_provider_decoder *d, int64_t index, const struct jdoc *doc,
                            int delta)
{
    struct rein__anthropic_state *s = state(d);
    struct block *b = s && index >= 0 && (size_t)index < s->nb ? &s->b[index] : NULL;
    int type = JGET(doc, delta, "type");

    if (JEQ(doc, type, "text_delta")) {
        int text = JGET(doc, delta, "text");
        if (s && jis(doc, text, JSMN_STRING))
            s->text_tok = text;
        return rein__asm_text(&d->a, jstr(doc, text));
    }
    if (JEQ(doc, type, "thinking_delta"))
        return rein__asm_reasoning(&d->a, jstr(doc, JGET(doc, delta, "thinking")));
    if (JEQ(doc, type, "signature_delta"))
        return rein__asm_block_signature(&d->a, jstr(doc, JGET(doc, delta, "signature")));
    if (JEQ(doc, type, "input_json_delta") && b) {
        struct rein__jstr part = jstr(doc, JGET(doc, delta, "partial_json"));
        if (b->kind == B_TOOL)
            return rein__asm_call_args(&d->a, (size_t)b->call, part);
        if (b->kind == B_SERVER) {
            uint32_t hi = 0;
            rein_err rc = rein__json_unescape(&b->input, part.p, part.len, &hi);
            return rc ? rc : rein__json_unescape_flush(&b->input, &hi);
        }
    }
    if (JEQ(doc, type, "citations_delta") && jis(doc, JGET(doc, delta, "citation"), JSMN_OBJECT)) {
        json_t *v = jtree(doc, JGET(doc, delta, "citation"));
        return v ? rein__asm_citation(&d->a, v) : REIN_ENOMEM;
    }
    return REIN_OK; /* unknown deltas carry nothing rein keeps */
}

/* A thinking block ended: its own text and signature are the tails of the joined buffers. */
static rein_err thinking_stop(struct rein_provider_decoder *d, const struct block *b)
{
    rein_model_response *r = d->r;
    rein_err rc = rein__json_unescape_flush(&r->reasoning, &d->a.hi_reason);

    if (!rc)
        rc = rein__json_unescape_flush(&r->signature, &d->a.hi_sig);
    if (rc)
        return rc;
    if (b->reason_at > r->reasoning.len || b->sig_at > r->signature.len)
        return REIN_OK; /* a buffer was cut at its limit: nothing whole to keep */
    return add_thinking_block(
        r, json_pack("{s:s%,s:s%}", "thinking", r->reasoning.ptr + b->reason_at,
                     r->reasoning.len - b->reason_at, "signature", r->signature.ptr + b->sig_at,
                     r->signature.len - b->sig_at));
}

static rein_err block_stop(struct rein_provider_decoder *d, int64_t index)
{
    struct rein__anthropic_state *s = state(d);
    struct block *b = s && index >= 0 && (size_t)index < s->nb ? &s->b[index] : NULL;
    rein_err rc = REIN_OK;

    if (!b)
        return REIN_OK;
    if (b->kind == B_TOOL)
        rc = rein__asm_call_close(&d->a, (size_t)b->call);
    if (b->kind == B_THINKING)
        rc = thinking_stop(d, b);
    if (b->kind == B_SERVER && b->server) {
        json_t *input =
            b->input.len ? rein_json_parse(b->input.ptr, b->input.len, 0, NULL) : json_object();
        if (input && json_object_set_new(b->server, "input", input) != 0)
            rc = REIN_ENOMEM;
        if (!rc) {
            rc = rein__asm_server_block(&d->a, b->server);
            b->server = NULL;
        }
    }
    block_release(b);
    return rc;
}

/* Closes thinking blocks a stream left open (no content_block_stop), so they are kept. */
static rein_err anthropic_end(struct rein_provider_decoder *d)
{
    struct rein__anthropic_state *s = d->wire_state;
    rein_err rc = REIN_OK;

    for (size_t i = 0; s && !rc && i < s->nb; i++) {
        if (s->b[i].kind == B_THINKING) {
            rc = thinking_stop(d, &s->b[i]);
            block_release(&s->b[i]);
        }
    }
    return rc;
}

static rein_err message_start(struct rein_provider_decoder *d, const struct jdoc *doc, int msg)
{
    struct rein__anthropic_state *s = state(d);

    if (!s)
        return REIN_ENOMEM;
    if (d->a.messages > 0) {
        /* A second message in one recording: carry the first one's usage forward. */
        s->base_in += s->cur_in > 0 ? s->cur_in : 0;
        s->base_out += s->cur_out > 0 ? s->cur_out : 0;
        for (size_t i = 0; i < s->nb; i++)
            block_release(&s->b[i]);
    }
    s->cur_in = s->cur_out = -1;
    d->a.messages++;
    d->r->complete = false;
    if (rein__asm_identity(&d->a, jstr(doc, JGET(doc, msg, "id")),
                           jstr(doc, JGET(doc, msg, "model"))))
        return REIN_ENOMEM;
    take_usage(d, doc, JGET(doc, msg, "usage"));
    return REIN_OK;
}

static json_t *error_object(const struct jdoc *doc, int obj)
{
    int e = JGET(doc, obj, "error");

    return jtree(doc, e >= 0 ? e : obj);
}

/*
 * Vertex AI answers what it refuses itself (a token, a quota, a model the project may not
 * use) as google.rpc.Status, {"code": 429, "message", "status": "RESOURCE_EXHAUSTED"}, where
 * Anthropic's errors have a type: such an error gets the type Anthropic gives its status, so
 * that what reads Anthropic's errors (the retry rule, a gateway's Anthropic client) reads it
 * too. Its code and status word stay. (decision 0104)
 */
static void google_status_typed(json_t *e)
{
    const json_t *code = json_object_get(e, "code");
    json_int_t c = json_integer_value(code);
    const char *type = c == 401   ? "authentication_error"
                       : c == 403 ? "permission_error"
                       : c == 404 ? "not_found_error"
                       : c == 413 ? "request_too_large"
                       : c == 429 ? "rate_limit_error"
                       : c == 529 ? "overloaded_error"
                       : c >= 500 ? "api_error"
                                  : "invalid_request_error";

    if (!json_is_object(e) || json_object_get(e, "type") || !json_is_integer(code) ||
        !json_is_string(json_object_get(e, "status")))
        return;
    /* memory exhausted here leaves the error as it came, which is still an error */
    (void)json_object_set_new(e, "type", json_string(type));
}

/* An error (a body, or a stream's error event) and the request_id beside it, which a gateway
 * hands its Anthropic client with the error (decision 0086). */
static rein_err take_error(struct rein_provider_decoder *d, const struct jdoc *doc, int obj,
                           json_t *error)
{
    int id = JGET(doc, obj, "request_id");

    google_status_typed(error);
    rein__asm_error(&d->a, error);
    d->recognized++;
    return jis(doc, id, JSMN_STRING) ? rein__asm_request_id(&d->a, jstr(doc, id)) : REIN_OK;
}

enum { E_TYPE, E_INDEX, E_DELTA, E_BLOCK, E_MESSAGE, E_USAGE, E_ERROR };

static rein_err take_event(struct rein_provider_decoder *d, const struct jdoc *doc, int obj,
                           const char *event)
{
    static const struct jkey keys[] = {JK("type"),    JK("index"), JK("delta"), JK("content_block"),
                                       JK("message"), JK("usage"), JK("error")};
    int f[7], type;
    int64_t index = -1;
    rein_err rc = REIN_OK;

    JFIELDS(doc, obj, keys, f);
    type = f[E_TYPE];
    if (!jis(doc, type, JSMN_STRING)) {
        if (!(event && strcmp(event, "error") == 0 && f[E_ERROR] >= 0))
            return REIN_OK;
        return take_error(d, doc, obj, jtree(doc, f[E_ERROR]));
    }
    (void)jint(doc, f[E_INDEX], &index);
    if (!state(d))
        return REIN_ENOMEM;
    if (JEQ(doc, type, "content_block_delta"))
        rc = block_delta(d, index, doc, f[E_DELTA]);
    else if (JEQ(doc, type, "content_block_start"))
        rc = block_start(d, index, doc, f[E_BLOCK], false);
    else if (JEQ(doc, type, "content_block_stop"))
        rc = block_stop(d, index);
    else if (JEQ(doc, type, "message_start"))
        rc = message_start(d, doc, f[E_MESSAGE]);
    else if (JEQ(doc, type, "message_delta")) {
        int sr = JGET(doc, f[E_DELTA], "stop_reason");
        int ss = JGET(doc, f[E_DELTA], "stop_sequence");
        if (jis(doc, sr, JSMN_STRING))
            rc = rein__asm_finish_reason(&d->a, jstr(doc, sr));
        if (!rc && jis(doc, ss, JSMN_STRING))
            rc = rein__asm_stop_sequence(&d->a, jstr(doc, ss));
        take_usage(d, doc, f[E_USAGE]);
    } else if (JEQ(doc, type, "message_stop")) {
        rein__asm_complete(&d->a);
    } else if (JEQ(doc, type, "error")) {
        return take_error(d, doc, obj, jtree(doc, f[E_ERROR] >= 0 ? f[E_ERROR] : obj));
    } else if (!JEQ(doc, type, "ping")) {
        return REIN_OK; /* an event type rein does not know: skipped, not counted */
    }
    d->recognized++;
    return rc;
}

static rein_err anthropic_payload(struct rein_provider_decoder *d, const char *event, const char *p,
                                  size_t len, rein_error *err)
{
    struct jdoc doc;
    size_t n;
    int r;

    if (jblank(p, len))
        return REIN_OK;
    n = rein__decoder_saw(d, p, len);
    r = jdoc_payload(d, event, p, len, n, &doc, err);
    if (r <= 0)
        return r;
    if (d->wire_state)
        ((struct rein__anthropic_state *)d->wire_state)->text_tok = -1;
    for (int i = 0; i < doc.n; i = jnext(&doc, i)) {
        if (doc.t[i].type != JSMN_OBJECT)
            return rein__decoder_bad(d, n, p, len, "an event must be a JSON object", err);
        rein_err rc = take_event(d, &doc, i, event);
        if (rc)
            return rc;
    }
    /* A text delta that is the payload's one value: the next ones are most often the same
     * bytes but for their text, which the text template reads (sse.c). */
    if (d->wire_state && jnext(&doc, 0) >= doc.n) {
        int t = ((struct rein__anthropic_state *)d->wire_state)->text_tok;
        if (t >= 0)
            rein__text_tmpl_keep(d, event, p, len, (size_t)doc.t[t].start, (size_t)doc.t[t].end);
    }
    return REIN_OK;
}

/* Vertex AI answers some of its own errors as an array of one google.rpc.Status body,
 * [{"error": {...}}]: true when the body is one, its error taken. */
static bool status_array(struct rein_provider_decoder *d, const char *p, size_t len)
{
    size_t i = 0;
    json_t *a, *e;

    while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    if (i == len || p[i] != '[')
        return false;
    a = rein_json_parse(p, len, 0, NULL);
    e = json_object_get(json_array_get(a, 0), "error");
    if (!json_is_object(e)) {
        json_decref(a);
        return false;
    }
    json_incref(e);
    json_decref(a);
    rein__decoder_saw(d, p, len);
    google_status_typed(e);
    rein__asm_error(&d->a, e);
    d->recognized++;
    return true;
}

static rein_err anthropic_body(struct rein_provider_decoder *d, const char *p, size_t len,
                               rein_error *err)
{
    struct jdoc doc;
    int type, content, sr;
    rein_err rc;
    struct rein__anthropic_state *s;

    if (status_array(d, p, len))
        return REIN_OK;
    rc = jdoc_body(d, p, len, &doc, err);
    if (rc)
        return rc;
    s = state(d);
    if (!s)
        return REIN_ENOMEM;
    type = JGET(&doc, 0, "type");
    if (JEQ(&doc, type, "error") || JGET(&doc, 0, "error") >= 0)
        return take_error(d, &doc, 0, error_object(&doc, 0));
    content = JGET(&doc, 0, "content");
    if (!jis(&doc, content, JSMN_ARRAY))
        return rein__decoder_bad(d, 0, p, len, "no content array and no error", err);
    d->recognized++;
    d->a.messages = 1;
    s->cur_in = s->cur_out = -1;
    rc = rein__asm_identity(&d->a, jstr(&doc, JGET(&doc, 0, "id")),
                            jstr(&doc, JGET(&doc, 0, "model")));
    for (int k = 0, i = content + 1; k < doc.t[content].size && !rc; k++, i = jnext(&doc, i)) {
        if (!jis(&doc, i, JSMN_OBJECT))
            continue;
        rc = block_start(d, k, &doc, i, true);
        if (!rc)
            rc = block_stop(d, k);
    }
    if (rc)
        return rc;
    sr = JGET(&doc, 0, "stop_reason");
    if (jis(&doc, sr, JSMN_STRING))
        rc = rein__asm_finish_reason(&d->a, jstr(&doc, sr));
    sr = JGET(&doc, 0, "stop_sequence");
    if (!rc && jis(&doc, sr, JSMN_STRING))
        rc = rein__asm_stop_sequence(&d->a, jstr(&doc, sr));
    take_usage(d, &doc, JGET(&doc, 0, "usage"));
    rein__asm_complete(&d->a);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * Encoding. A message's cached piece is its content blocks, comma-separated, without the
 * brackets: the body merges the pieces of consecutive user-side messages into one message.
 */

static void text_block(struct rein_jw *w, const char *text)
{
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, "text");
    REIN_JW_KEY(w, "text");
    rein_jw_str(w, text);
    rein_jw_obj_end(w);
}

static void thinking_block(struct rein_jw *w, const char *text, const char *sig)
{
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, "thinking");
    REIN_JW_KEY(w, "thinking");
    rein_jw_str(w, text);
    REIN_JW_KEY(w, "signature");
    rein_jw_str(w, sig);
    rein_jw_obj_end(w);
}

static void redacted_block(struct rein_jw *w, const char *data)
{
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, "redacted_thinking");
    REIN_JW_KEY(w, "data");
    rein_jw_str(w, data);
    rein_jw_obj_end(w);
}

/*
 * The ordered thinking blocks that came before tool call `at` (thinking_blocks, decision
 * 0005's addition for interleaved thinking). Each goes back unchanged, with its own signature.
 */
static size_t thinking_blocks_at(struct rein_jw *w, const json_t *blocks, json_int_t at)
{
    const json_t *v;
    size_t i, n = 0;

    json_array_foreach(blocks, i, v)
    {
        const json_t *redacted = json_object_get(v, "redacted");
        if (json_integer_value(json_object_get(v, "at")) != at)
            continue;
        if (json_is_string(redacted))
            redacted_block(w, json_string_value(redacted));
        else
            thinking_block(w, rein__json_str(v, "thinking"), rein__json_str(v, "signature"));
        n++;
    }
    return n;
}

static size_t tool_use_block(struct rein_jw *w, const json_t *call)
{
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, "tool_use");
    REIN_JW_KEY(w, "id");
    rein_jw_str(w, rein__json_str(call, "id"));
    REIN_JW_KEY(w, "name");
    rein_jw_str(w, rein__json_str(call, "name"));
    REIN_JW_KEY(w, "input");
    rein__jw_tool_args_raw(w, rein__json_str(call, "arguments"));
    rein_jw_obj_end(w);
    return 1;
}

static void assistant_blocks(struct rein_jw *w, const json_t *msg)
{
    const char *reasoning = rein__json_str(msg, "reasoning");
    const char *sig = rein__json_str(msg, "reasoning_signature");
    const char *content = rein__json_str(msg, "content");
    const json_t *calls = json_object_get(msg, "tool_calls");
    const json_t *ordered = json_object_get(msg, "thinking_blocks");
    const json_t *arr;
    json_t *v;
    size_t i, blocks = 0;

    /* Thinking goes back first, with its signature: Anthropic checks it before tool_use. */
    if (json_is_array(ordered)) {
        blocks += thinking_blocks_at(w, ordered, 0);
    } else {
        if (reasoning[0] && sig[0]) {
            thinking_block(w, reasoning, sig);
            blocks++;
        }
        arr = json_object_get(msg, "redacted_reasoning");
        json_array_foreach(arr, i, v)
        {
            redacted_block(w, json_string_value(v));
            blocks++;
        }
    }
    arr = json_object_get(msg, "server_blocks");
    json_array_foreach(arr, i, v)
    {
        rein_jw_json(w, v);
        blocks++;
    }
    if (content[0]) {
        text_block(w, content);
        blocks++;
    }
    json_array_foreach(calls, i, v)
    {
        if (i > 0 && json_is_array(ordered))
            blocks += thinking_blocks_at(w, ordered, (json_int_t)i);
        blocks += tool_use_block(w, v);
    }
    if (json_is_array(ordered) && json_array_size(calls) > 0)
        blocks += thinking_blocks_at(w, ordered, (json_int_t)json_array_size(calls));
    if (!blocks) /* Anthropic refuses an assistant turn with no content */
        text_block(w, "(no content)");
}

/* True for the media Anthropic takes inside a tool_result: images in its four formats (an
 * image block) and PDF (a document block). */
static const char *block_type(const char *mime)
{
    static const char *const images[] = {"image/jpeg", "image/png", "image/gif", "image/webp"};

    for (size_t i = 0; i < 4; i++)
        if (strcmp(mime, images[i]) == 0)
            return "image";
    return strcmp(mime, "application/pdf") == 0 ? "document" : NULL;
}

/* An attachment as an image or document block with a base64 source, when Anthropic takes
 * its medium (in a tool_result and in a user message alike). */
static bool media_block(struct rein_jw *w, const json_t *att)
{
    const char *mime = rein__json_str(att, "mime_type"), *type = block_type(mime);

    if (!type)
        return false;
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, type);
    REIN_JW_KEY(w, "source");
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, "base64");
    REIN_JW_KEY(w, "media_type");
    rein_jw_str(w, mime);
    REIN_JW_KEY(w, "data");
    rein_jw_str(w, rein__json_str(att, "data"));
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
    return true;
}

static bool anthropic_takes_media(const char *mime)
{
    return block_type(mime) != NULL;
}

/* A tool result's content: its text, then each attachment Anthropic takes as a block of its
 * own; the others are named as not sent in a last text block. */
static void tool_result_content(struct rein_jw *w, const json_t *msg)
{
    if (!json_array_size(json_object_get(msg, "attachments"))) {
        rein_jw_str(w, rein__json_str(msg, "content"));
        return;
    }
    rein_jw_arr_begin(w);
    text_block(w, rein__json_str(msg, "content"));
    rein__jw_attachments(w, msg, "Anthropic's Messages API", "text", media_block);
    rein_jw_arr_end(w);
}

/* A user message's blocks: its text (none when it is media alone: Anthropic refuses an empty
 * text block), then its attachments as image and document blocks. */
static void user_blocks(struct rein_jw *w, const json_t *msg)
{
    const char *content = rein__json_str(msg, "content");

    if (!json_array_size(json_object_get(msg, "attachments"))) {
        text_block(w, content[0] ? content : "(no content)");
        return;
    }
    if (content[0])
        text_block(w, content);
    rein__jw_attachments(w, msg, "Anthropic's Messages API", "text", media_block);
}

static rein_err anthropic_encode_message(const rein_provider *p, const json_t *msg,
                                         struct rein_buf *out)
{
    const char *role = rein__json_str(msg, "role");
    const json_t *as_sent = json_object_get(msg, "anthropic_blocks");
    struct rein_jw w;

    (void)p;
    /* The pieces are written as the items of an array whose brackets are dropped. */
    rein_jw_init(&w, out);
    rein_jw_arr_begin(&w);
    if (json_is_array(as_sent)) {
        /* the blocks a client wrote on this wire stand for the message (history.h) */
        const json_t *b;
        size_t i;
        json_array_foreach(as_sent, i, b)
        {
            rein_jw_json(&w, b);
        }
    } else if (strcmp(role, "tool") == 0) {
        rein_jw_obj_begin(&w);
        REIN_JW_KEY(&w, "type");
        rein_jw_str(&w, "tool_result");
        REIN_JW_KEY(&w, "tool_use_id");
        rein_jw_str(&w, rein__json_str(msg, "tool_call_id"));
        REIN_JW_KEY(&w, "content");
        tool_result_content(&w, msg);
        if (json_is_true(json_object_get(msg, "is_error"))) {
            REIN_JW_KEY(&w, "is_error");
            rein_jw_bool(&w, true);
        }
        rein_jw_obj_end(&w);
    } else if (strcmp(role, "assistant") == 0) {
        assistant_blocks(&w, msg);
    } else {
        user_blocks(&w, msg);
    }
    rein_jw_arr_end(&w);
    rein_err rc = rein_jw_finish(&w);
    if (rc)
        return rc;
    /* Drop the brackets: "[a,b]" -> "a,b". */
    memmove(out->ptr, out->ptr + 1, out->len - 2);
    rein_buf_truncate(out, out->len - 2);
    return REIN_OK;
}

static rein_err anthropic_encode_tools(const rein_provider *p, const rein_model_request *req,
                                       struct rein_buf *out)
{
    struct rein_jw w;

    (void)p;
    rein_jw_init(&w, out);
    rein_jw_arr_begin(&w);
    for (size_t i = 0; i < req->ntools; i++) {
        const struct rein__tool *t = &req->tools[i];
        rein_jw_obj_begin(&w);
        REIN_JW_KEY(&w, "name");
        rein_jw_str(&w, t->name);
        if (t->description) {
            REIN_JW_KEY(&w, "description");
            rein_jw_str(&w, t->description);
        }
        REIN_JW_KEY(&w, "input_schema");
        if (t->parameters)
            rein_jw_json(&w, t->parameters);
        else
            rein_jw_raw(&w, "{\"type\":\"object\",\"properties\":{}}", 33);
        rein_jw_obj_end(&w);
    }
    rein_jw_arr_end(&w);
    return rein_jw_finish(&w);
}

/* choice NULL: auto (written only to turn parallel calls off). */
static void anthropic_tool_choice(struct rein_jw *w, const char *choice, int parallel)
{
    if (!choice)
        choice = "auto";
    REIN_JW_KEY(w, "tool_choice");
    rein_jw_obj_begin(w);
    if (parallel == 0 && strcmp(choice, "none") != 0) {
        REIN_JW_KEY(w, "disable_parallel_tool_use");
        rein_jw_bool(w, true);
    }
    REIN_JW_KEY(w, "type");
    if (!strcmp(choice, "auto") || !strcmp(choice, "none")) {
        rein_jw_str(w, choice);
    } else if (!strcmp(choice, "required")) {
        rein_jw_str(w, "any");
    } else {
        rein_jw_str(w, "tool");
        REIN_JW_KEY(w, "name");
        rein_jw_str(w, choice);
    }
    rein_jw_obj_end(w);
}

static rein_err anthropic_build_body(rein_provider *p, const rein_model_request *req,
                                     rein_history *h, struct rein__body *body, rein_error *err)
{
    struct rein_jw w;
    struct rein__groups g;
    struct rein__claude_think think;
    bool thinking = rein__claude_thinking(p, req, "thinking", &think);
    rein_err rc;

    /* Every piece made first, so the body is allocated once; the messages, when large, are
     * sent from where the history keeps them (rein__body_block). */
    rc = rein__body_groups_start(p, req, h, &rein__wire_anthropic, body, &g, &w, err);
    if (rc)
        return rc;
    if (p->wire == &rein__wire_vertex_anthropic) {
        /* Vertex names the model in the URL and refuses it in the body (decision 0104) */
        REIN_JW_KEY(&w, "anthropic_version");
        rein_jw_str(&w, p->cfg.anthropic_version ? p->cfg.anthropic_version : VERTEX_VERSION);
    } else {
        REIN_JW_KEY(&w, "model");
        rein_jw_str(&w, rein__request_model(p, req));
    }
    /* Anthropic requires max_tokens; with thinking it counts the thinking too (decision 0095) */
    if (thinking) {
        /* its effort goes in the one output_config, beside the answer's form (decision 0100) */
        struct rein__claude_think t = think;
        t.effort = NULL;
        rein__jw_claude_thinking(&w, &t);
    }
    REIN_JW_KEY(&w, "max_tokens");
    rein_jw_int(&w,
                think.max_tokens > 0 ? think.max_tokens : rein__claude_default_max_tokens(p, req));
    if (g.has_system) {
        REIN_JW_KEY(&w, "system");
        rein__jw_system_list(&w, &g);
    }
    REIN_JW_KEY(&w, "messages");
    rc = rein__body_groups(body, &w, &g);
    if (rc)
        return rein_error_set(err, rc, "encoding the history: %s", rein_strerror(rc));
    if (req->ntools || rein__wire_tools(req, &rein__wire_anthropic)) {
        REIN_JW_KEY(&w, "tools");
        rein__jw_tool_list(&w, req, &rein__wire_anthropic);
        if (req->tool_choice || req->parallel == 0)
            anthropic_tool_choice(&w, req->tool_choice, req->parallel);
    }
    if (req->temperature >= 0) {
        REIN_JW_KEY(&w, "temperature");
        rein_jw_double(&w, req->temperature);
    }
    rein__jw_top_p(&w, req, "top_p");
    rein__jw_stop(&w, req, "stop_sequences");
    rein__jw_anthropic_output_config(&w, thinking ? think.effort : NULL, req);
    REIN_JW_KEY(&w, "stream");
    rein_jw_bool(&w, req->stream);
    rein__jw_extra(&w, req);
    rein_jw_obj_end(&w);
    rc = rein_jw_finish(&w);
    return rc ? rein_error_set(err, rc, "encoding the request: %s", rein_strerror(rc)) : REIN_OK;
}

static rein_err anthropic_headers(const rein_provider *p, const rein_model_request *req,
                                  struct curl_slist **list)
{
    const char *version = p->cfg.anthropic_version ? p->cfg.anthropic_version : "2023-06-01";
    char line[128];

    (void)req;
    snprintf(line, sizeof(line), "anthropic-version: %s", version);
    return rein__header_add(list, line);
}

/* What every wire of Anthropic's messages shares: the blocks, events and limits (the Messages API
 * at Anthropic's address, and at Vertex AI's below); stop_sequences have no limit in the Messages
 * API reference. */
#define MESSAGES_WIRE                                                                              \
    .name = "anthropic", .formats = {"anthropic-sse", "anthropic-json"},                           \
    .framing = REIN__FRAMING_SSE, .stop_max = REIN_STOP_MAX, .reasoning = true,                    \
    .sampling = rein__claude_sampling, .output_format = true, .decode_payload = anthropic_payload, \
    .decode_body = anthropic_body, .decode_end = anthropic_end,                                    \
    .decode_free = anthropic_state_free, .encode_message = anthropic_encode_message,               \
    .group_user = "{\"role\":\"user\",\"content\":[",                                              \
    .group_model = "{\"role\":\"assistant\",\"content\":[",                                        \
    .encode_tools = anthropic_encode_tools, .takes_media = anthropic_takes_media,                  \
    .build_body = anthropic_build_body

const struct rein__wire rein__wire_anthropic = {
    MESSAGES_WIRE,
    .path = "/v1/messages",
    .auth = "x-api-key: ",
    .headers = anthropic_headers,
};

/* ---------------------------------------------------------------------------------------
 * Claude on Vertex AI (decision 0104): the same messages, blocks and events at Google's
 * address. BASE (…/publishers/anthropic) + /models/MODEL:rawPredict, or :streamRawPredict
 * when streaming (the events are Anthropic's SSE as they are); the body has anthropic_version
 * instead of the model; no anthropic-version header (a client's anthropic-beta still goes as
 * a header, which Vertex reads as Anthropic does); the token as a bearer, from Application
 * Default Credentials when none is configured.
 */
static char *vertex_url(const rein_provider *p, const rein_model_request *req)
{
    return rein_asprintf("%s/models/%s:%s", p->endpoint, rein__request_model(p, req),
                         req->stream ? "streamRawPredict" : "rawPredict");
}

static rein_err vertex_headers(const rein_provider *p, const rein_model_request *req,
                               struct curl_slist **list)
{
    (void)req;
    return p->gcp ? rein__gcp_header(p->gcp, list) : REIN_OK;
}

const struct rein__wire rein__wire_vertex_anthropic = {
    MESSAGES_WIRE,     .path = "", .auth = "Authorization: Bearer ", .headers = vertex_headers,
    .url = vertex_url,
};
