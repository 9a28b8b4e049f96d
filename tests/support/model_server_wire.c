/*
 * The scripted model server's wire formats (model_server_int.h): a reply becomes the exact
 * bytes api.openai.com, api.anthropic.com or Ollama would send, as a list of events.
 *
 * OpenAI chat completions: a chat.completion object, or SSE `data: {chunk}` events (role
 * first, then content/reasoning_content/refusal deltas, tool calls by index with id, type and
 * name in the first delta and argument pieces after, a finish chunk with an empty delta, the
 * usage chunk with `choices: []` when stream_options.include_usage is set, `data: [DONE]`).
 * Anthropic messages: a message object, or the event sequence message_start,
 * content_block_start/ping/content_block_delta/content_block_stop per block, message_delta
 * with stop_reason and usage, message_stop. Ollama /api/chat: one object, or NDJSON lines
 * ending with a `done: true` line; tool arguments are objects and calls have no id.
 * Field sets and order follow the recordings in shared/fixtures (SOURCES.md). Formats added
 * later are rendered in model_server_wire2.c from the same gathered content.
 *
 * Every piece of JSON is written with rein's JSON writer, so strings are escaped exactly
 * once and the raw argument strings a test scripts reach the client byte for byte.
 */
#include "model_server_int.h"

#include <string.h>
#include <time.h>

/* ---- bodies ------------------------------------------------------------------------- */

void ms__body_init(struct ms_body *b)
{
    memset(b, 0, sizeof(*b));
    rein_buf_init(&b->buf, 0);
    b->content_type = "application/json";
    rein_id_new("req_", b->request_id);
}

void ms__body_release(struct ms_body *b)
{
    rein_buf_release(&b->buf);
    rein_free(b->ends);
    b->ends = NULL;
    b->n = b->cap = 0;
}

static rein_err body_reserve(struct ms_body *b)
{
    size_t cap;
    size_t *ends;

    if (b->n < b->cap)
        return REIN_OK;
    cap = b->cap ? b->cap * 2 : 16;
    ends = rein_realloc(b->ends, cap * sizeof(*ends));
    if (!ends)
        return REIN_ENOMEM;
    b->ends = ends;
    b->cap = cap;
    return REIN_OK;
}

rein_err ms__body_mark(struct ms_body *b)
{
    rein_err rc = body_reserve(b);

    if (rc)
        return rc;
    b->ends[b->n++] = b->buf.len;
    return REIN_OK;
}

rein_err ms__body_insert(struct ms_body *b, size_t k, const char *text, size_t len)
{
    size_t off, i;
    rein_err rc;

    if (k > b->n)
        k = b->n;
    off = k ? b->ends[k - 1] : 0;
    rc = body_reserve(b);
    if (rc)
        return rc;
    rc = rein_buf_grow(&b->buf, len);
    if (rc)
        return rc;
    memmove(b->buf.ptr + off + len, b->buf.ptr + off, b->buf.len - off);
    memcpy(b->buf.ptr + off, text, len);
    b->buf.len += len;
    b->buf.ptr[b->buf.len] = '\0';
    for (i = b->n; i > k; i--)
        b->ends[i] = b->ends[i - 1] + len;
    b->ends[k] = off + len;
    b->n++;
    return REIN_OK;
}

void ms__body_keep(struct ms_body *b, size_t k)
{
    if (k >= b->n)
        return;
    b->n = k;
    rein_buf_truncate(&b->buf, k ? b->ends[k - 1] : 0);
}

rein_err ms__body_split_raw(struct ms_body *b, const char *text, size_t len, bool sse)
{
    size_t i, base = b->buf.len, start = 0;
    rein_err rc = rein_buf_add(&b->buf, text, len);

    for (i = 0; !rc && i < len; i++) {
        size_t end = 0; /* one past the event's last byte, 0 while inside an event */
        if (text[i] != '\n')
            continue;
        if (!sse)
            end = i + 1;
        else if (i + 1 < len && text[i + 1] == '\n')
            end = i + 2;
        else if (i + 2 < len && text[i + 1] == '\r' && text[i + 2] == '\n')
            end = i + 3;
        if (!end)
            continue;
        rc = body_reserve(b);
        if (!rc)
            b->ends[b->n++] = base + end;
        start = end;
        i = end - 1;
    }
    if (!rc && start < len)
        rc = ms__body_mark(b);
    return rc;
}

static rein_err wrap_line(struct ms_body *b, const char *line, size_t n, enum ms_format f)
{
    json_t *v = f == MS_FMT_ANTHROPIC ? rein_json_parse(line, n, 0, NULL) : NULL;
    const char *type = json_string_value(json_object_get(v, "type"));
    rein_err rc = REIN_OK;

    if (type)
        rc = rein_buf_addf(&b->buf, "event: %s\n", type);
    json_decref(v);
    if (!rc)
        rc = rein_buf_adds(&b->buf, "data: ");
    if (!rc)
        rc = rein_buf_add(&b->buf, line, n);
    if (!rc)
        rc = rein_buf_adds(&b->buf, "\n\n");
    return rc ? rc : ms__body_mark(b);
}

rein_err ms__body_wrap_lines(struct ms_body *b, const char *text, size_t len, enum ms_format f)
{
    size_t at = 0;
    rein_err rc = REIN_OK;

    while (!rc && at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - at;
        if (n && text[at + n - 1] == '\r')
            n--;
        if (n)
            rc = wrap_line(b, text + at, n, f);
        at = end + 1;
    }
    if (!rc && f == MS_FMT_OPENAI)
        rc = rein_buf_adds(&b->buf, "data: [DONE]\n\n");
    if (!rc && f == MS_FMT_OPENAI)
        rc = ms__body_mark(b);
    return rc;
}

/* ---- pieces of text ------------------------------------------------------------------ */

static void parts_release(struct parts *p)
{
    rein_free(p->v);
    memset(p, 0, sizeof(*p));
}

static rein_err parts_push(struct parts *p, const char *s, size_t n)
{
    struct slice *v;

    if ((p->n & 15) == 0) {
        v = rein_realloc(p->v, (p->n + 16) * sizeof(*v));
        if (!v)
            return REIN_ENOMEM;
        p->v = v;
    }
    p->v[p->n].p = s;
    p->v[p->n].n = n;
    p->n++;
    p->total += n;
    return REIN_OK;
}

/* Splits s into pieces of about size bytes without cutting a UTF-8 character. */
static rein_err split_utf8(struct parts *p, const char *s, size_t len, long size)
{
    size_t at = 0;
    rein_err rc = REIN_OK;

    if (size <= 0)
        return parts_push(p, s, len);
    while (!rc && at < len) {
        size_t n = (size_t)size < len - at ? (size_t)size : len - at;
        while (at + n < len && ((unsigned char)s[at + n] & 0xC0) == 0x80)
            n++;
        rc = parts_push(p, s + at, n);
        at += n;
    }
    return rc;
}

/* v: a string (split into deltas) or an array of strings (the deltas), or NULL. */
static rein_err parts_of(const json_t *v, long size, struct parts *out)
{
    size_t i;
    json_t *item;
    rein_err rc = REIN_OK;

    memset(out, 0, sizeof(*out));
    if (json_is_string(v))
        return split_utf8(out, json_string_value(v), json_string_length(v), size);
    json_array_foreach(v, i, item)
    {
        if (!rc && json_is_string(item))
            rc = parts_push(out, json_string_value(item), json_string_length(item));
    }
    return rc;
}

/* The concatenated text of a parts list, as a new string. */
char *ms__parts_join(const struct parts *p)
{
    char *s = rein_malloc(p->total + 1);
    size_t i, at = 0;

    if (!s)
        return NULL;
    for (i = 0; i < p->n; i++) {
        memcpy(s + at, p->v[i].p, p->v[i].n);
        at += p->v[i].n;
    }
    s[at] = '\0';
    return s;
}

/* ---- the reply's content, gathered once --------------------------------------------- */

const char *ms__str_member(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Finish reasons: one row per meaning, a column per format. */
static const char *const finish_map[][3] = {
    {"stop", "end_turn", "stop"},
    {"tool_calls", "tool_use", "stop"},
    {"length", "max_tokens", "length"},
    {"content_filter", "refusal", "stop"},
};

const char *ms__finish_for(enum ms_format f, const char *given)
{
    int col = f == MS_FMT_ANTHROPIC ? 1 : f == MS_FMT_OLLAMA ? 2 : 0;

    for (size_t i = 0; i < REIN_ARRAY_SIZE(finish_map); i++) {
        for (int j = 0; j < 3; j++) {
            if (strcmp(given, finish_map[i][j]) == 0)
                return finish_map[i][col];
        }
    }
    return given;
}

static int64_t estimate_tokens(size_t bytes)
{
    return bytes / 4 > 0 ? (int64_t)(bytes / 4) : 1;
}

static int64_t usage_member(const json_t *usage, const char *key, int64_t dflt)
{
    json_t *v = json_object_get(usage, key);

    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static const char *prefix_for_call(enum ms_format f)
{
    return f == MS_FMT_ANTHROPIC ? "toolu_" : "call_";
}

static rein_err gather_calls(struct content *k)
{
    json_t *calls = json_object_get(k->r->spec, "tool_calls");
    size_t i;
    json_t *call;

    k->ncalls = json_array_size(calls);
    if (!k->ncalls)
        return REIN_OK;
    k->calls = rein_calloc(k->ncalls, sizeof(*k->calls));
    if (!k->calls)
        return REIN_ENOMEM;
    json_array_foreach(calls, i, call)
    {
        struct call *c = &k->calls[i];
        const char *id = ms__str_member(call, "id");
        rein_err rc;

        if (id)
            snprintf(c->id, sizeof(c->id), "%s", id);
        else
            rein_id_new(prefix_for_call(k->f), c->id);
        c->name = ms__str_member(call, "name");
        if (!c->name)
            c->name = "";
        c->custom = json_object_get(call, "input") != NULL;
        rc = parts_of(json_object_get(call, c->custom ? "input" : "arguments"), k->r->delta_bytes,
                      &c->args);
        if (rc)
            return rc;
        c->joined = ms__parts_join(&c->args);
        if (!c->joined)
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

void ms__content_release(struct content *k)
{
    parts_release(&k->text);
    parts_release(&k->reasoning);
    parts_release(&k->refusal);
    for (size_t i = 0; i < k->ncalls && k->calls; i++) {
        parts_release(&k->calls[i].args);
        rein_free(k->calls[i].joined);
    }
    rein_free(k->calls);
}

static void gather_usage(struct content *k)
{
    const json_t *usage = json_object_get(k->r->spec, "usage");
    size_t out = k->text.total + k->reasoning.total + k->refusal.total;

    for (size_t i = 0; i < k->ncalls; i++)
        out += k->calls[i].args.total + strlen(k->calls[i].name);
    k->in_tokens = usage_member(usage, "input_tokens", estimate_tokens(k->c->req_len));
    k->out_tokens = usage_member(usage, "output_tokens", estimate_tokens(out));
    k->reasoning_tokens = usage_member(usage, "reasoning_tokens",
                                       k->has_reasoning ? estimate_tokens(k->reasoning.total) : 0);
    k->cached_tokens = usage_member(usage, "cached_tokens", 0);
    k->cache_write_tokens = usage_member(usage, "cache_write_tokens", 0);
}

rein_err ms__gather(struct content *k, const struct ms_reply *r, const struct ms_ctx *c)
{
    const json_t *spec = r->spec;
    const char *finish = ms__str_member(spec, "finish_reason");
    const char *id = ms__str_member(spec, "id");
    rein_err rc;

    memset(k, 0, sizeof(*k));
    k->r = r;
    k->c = c;
    k->f = c->format;
    k->created = (int64_t)time(NULL);
    k->model = ms__str_member(spec, "model");
    if (!k->model)
        k->model = ms__str_member(c->req, "model");
    /* Gemini and Claude on Vertex name the model in the path */
    if (!k->model && (c->format == MS_FMT_GEMINI || c->format == MS_FMT_ANTHROPIC) && c->path &&
        ms__gm_model_of_path(c->path, k->modelbuf, sizeof(k->modelbuf)))
        k->model = k->modelbuf;
    if (!k->model)
        k->model = "rein-test-model";
    if (id)
        snprintf(k->id, sizeof(k->id), "%s", id);
    else
        rein_id_new(k->f == MS_FMT_ANTHROPIC ? "msg_" : "chatcmpl-", k->id);
    k->has_text = json_object_get(spec, "text") != NULL;
    k->has_reasoning = json_object_get(spec, "reasoning") != NULL;
    k->has_refusal = json_object_get(spec, "refusal") != NULL;
    rc = parts_of(json_object_get(spec, "text"), r->delta_bytes, &k->text);
    if (!rc)
        rc = parts_of(json_object_get(spec, "reasoning"), r->delta_bytes, &k->reasoning);
    if (!rc)
        rc = parts_of(json_object_get(spec, "refusal"), r->delta_bytes, &k->refusal);
    if (!rc)
        rc = gather_calls(k);
    if (rc)
        return rc;
    k->signature = ms__str_member(spec, "signature");
    if (!k->signature) {
        rein_id_new("Eq", k->sigbuf);
        k->signature = k->sigbuf;
    }
    k->redacted = json_object_get(spec, "redacted_thinking");
    if (!finish)
        finish = k->ncalls                                      ? "tool_calls"
                 : (k->has_refusal && k->f == MS_FMT_ANTHROPIC) ? "content_filter"
                                                                : "stop";
    k->finish = ms__finish_for(k->f, finish);
    gather_usage(k);
    return REIN_OK;
}

/* ---- event helpers ------------------------------------------------------------------- */

void ms__ev_begin(struct ms_body *b, struct rein_jw *w, const char *prefix)
{
    rein_jw_init(w, &b->buf);
    if (prefix && !w->err)
        w->err = rein_buf_adds(&b->buf, prefix);
}

rein_err ms__ev_end(struct ms_body *b, struct rein_jw *w, const char *suffix)
{
    rein_err rc = rein_jw_finish(w);

    if (!rc)
        rc = rein_buf_adds(&b->buf, suffix);
    if (!rc)
        rc = ms__body_mark(b);
    return rc;
}

/* Writes text that parses as JSON verbatim; anything else as a JSON string. */
static void jw_json_or_string(struct rein_jw *w, const char *text, size_t len)
{
    json_t *v = len ? rein_json_parse(text, len, 0, NULL) : NULL;

    if (v)
        rein_jw_raw(w, text, len);
    else if (len)
        rein_jw_strn(w, text, len);
    else
        rein_jw_raw(w, "{}", 2);
    json_decref(v);
}

/* ---- OpenAI -------------------------------------------------------------------------- */

static void oa_usage(struct rein_jw *w, const struct content *k)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "prompt_tokens");
    rein_jw_int(w, k->in_tokens);
    rein_jw_key(w, "completion_tokens");
    rein_jw_int(w, k->out_tokens);
    rein_jw_key(w, "total_tokens");
    rein_jw_int(w, k->in_tokens + k->out_tokens);
    rein_jw_key(w, "prompt_tokens_details");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "cached_tokens");
    rein_jw_int(w, k->cached_tokens);
    rein_jw_key(w, "audio_tokens");
    rein_jw_int(w, 0);
    rein_jw_obj_end(w);
    rein_jw_key(w, "completion_tokens_details");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "reasoning_tokens");
    rein_jw_int(w, k->reasoning_tokens);
    rein_jw_key(w, "audio_tokens");
    rein_jw_int(w, 0);
    rein_jw_key(w, "accepted_prediction_tokens");
    rein_jw_int(w, 0);
    rein_jw_key(w, "rejected_prediction_tokens");
    rein_jw_int(w, 0);
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
}

/* Mistral's usage: the three counts its UsageInfo has. */
static void mistral_usage(struct rein_jw *w, const struct content *k)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "prompt_tokens");
    rein_jw_int(w, k->in_tokens);
    rein_jw_key(w, "total_tokens");
    rein_jw_int(w, k->in_tokens + k->out_tokens);
    rein_jw_key(w, "completion_tokens");
    rein_jw_int(w, k->out_tokens);
    rein_jw_obj_end(w);
}

static bool mistral_reply(const struct content *k)
{
    return k->f == MS_FMT_OPENAI && ms__is_mistral(k->model); /* OpenRouter's are OpenAI's */
}

static void oa_head(struct rein_jw *w, const struct content *k, const char *object)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "id");
    rein_jw_str(w, k->id);
    rein_jw_key(w, "object");
    rein_jw_str(w, object);
    rein_jw_key(w, "created");
    rein_jw_int(w, k->created);
    rein_jw_key(w, "model");
    rein_jw_str(w, k->model);
    rein_jw_key(w, "system_fingerprint");
    rein_jw_str(w, "fp_rein_ms");
}

/* Opens a chunk up to the delta's value: the caller writes the delta object next. */
static void oa_chunk_begin(struct ms_body *b, struct rein_jw *w, const struct content *k)
{
    ms__ev_begin(b, w, "data: ");
    oa_head(w, k, "chat.completion.chunk");
    rein_jw_key(w, "choices");
    rein_jw_arr_begin(w);
    rein_jw_obj_begin(w);
    rein_jw_key(w, "index");
    rein_jw_int(w, 0);
    rein_jw_key(w, "delta");
}

static rein_err oa_chunk_end(struct ms_body *b, struct rein_jw *w, const struct content *k,
                             const char *finish)
{
    rein_jw_key(w, "logprobs");
    rein_jw_null(w);
    rein_jw_key(w, "finish_reason");
    rein_jw_str(w, finish);
    rein_jw_obj_end(w);
    rein_jw_arr_end(w);
    if (mistral_reply(k) && finish) { /* Mistral's last chunk counts, unasked */
        rein_jw_key(w, "usage");
        mistral_usage(w, k);
    } else if (k->c->include_usage) {
        rein_jw_key(w, "usage");
        rein_jw_null(w);
    }
    rein_jw_obj_end(w);
    return ms__ev_end(b, w, "\n\n");
}

/* Mistral's text chunk, {"type": "text", "text": piece}; in a thinking chunk's list when
 * thinking. */
static void mistral_chunk(struct rein_jw *w, const char *p, size_t n, bool thinking)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "type");
    rein_jw_str(w, thinking ? "thinking" : "text");
    rein_jw_key(w, thinking ? "thinking" : "text");
    if (thinking) {
        rein_jw_arr_begin(w);
        mistral_chunk(w, p, n, false);
        rein_jw_arr_end(w);
    } else {
        rein_jw_strn(w, p, n);
    }
    rein_jw_obj_end(w);
}

/* A Mistral reasoning reply's delta: {"content": [one chunk]}. */
static rein_err mistral_piece(struct ms_body *b, const struct content *k, const struct slice *s,
                              bool thinking)
{
    struct rein_jw w;

    oa_chunk_begin(b, &w, k);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "content");
    rein_jw_arr_begin(&w);
    mistral_chunk(&w, s->p, s->n, thinking);
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    return oa_chunk_end(b, &w, k, NULL);
}

/* One chunk whose delta is {key: piece}. */
static rein_err oa_piece(struct ms_body *b, const struct content *k, const char *key,
                         const struct slice *s)
{
    struct rein_jw w;

    oa_chunk_begin(b, &w, k);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, key);
    rein_jw_strn(&w, s->p, s->n);
    rein_jw_obj_end(&w);
    return oa_chunk_end(b, &w, k, NULL);
}

static rein_err oa_role_chunk(struct ms_body *b, const struct content *k)
{
    struct rein_jw w;

    oa_chunk_begin(b, &w, k);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "role");
    rein_jw_str(&w, "assistant");
    rein_jw_key(&w, "content");
    if (k->has_text || (!k->ncalls && !k->has_refusal))
        rein_jw_str(&w, "");
    else
        rein_jw_null(&w);
    rein_jw_key(&w, "refusal");
    if (k->has_refusal)
        rein_jw_str(&w, "");
    else
        rein_jw_null(&w);
    rein_jw_obj_end(&w);
    return oa_chunk_end(b, &w, k, NULL);
}

static rein_err oa_call_chunks(struct ms_body *b, const struct content *k, size_t i)
{
    const struct call *c = &k->calls[i];
    struct rein_jw w;
    rein_err rc;

    /* The first delta of a call carries index, id, type and name with empty arguments. */
    oa_chunk_begin(b, &w, k);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "tool_calls");
    rein_jw_arr_begin(&w);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "index");
    rein_jw_int(&w, (int64_t)i);
    rein_jw_key(&w, "id");
    rein_jw_str(&w, c->id);
    rein_jw_key(&w, "type");
    rein_jw_str(&w, "function");
    rein_jw_key(&w, "function");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "name");
    rein_jw_str(&w, c->name);
    rein_jw_key(&w, "arguments");
    rein_jw_str(&w, "");
    rein_jw_obj_end(&w);
    rein_jw_obj_end(&w);
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    rc = oa_chunk_end(b, &w, k, NULL);
    for (size_t j = 0; !rc && j < c->args.n; j++) {
        oa_chunk_begin(b, &w, k);
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "tool_calls");
        rein_jw_arr_begin(&w);
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "index");
        rein_jw_int(&w, (int64_t)i);
        rein_jw_key(&w, "function");
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "arguments");
        rein_jw_strn(&w, c->args.v[j].p, c->args.v[j].n);
        rein_jw_obj_end(&w);
        rein_jw_obj_end(&w);
        rein_jw_arr_end(&w);
        rein_jw_obj_end(&w);
        rc = oa_chunk_end(b, &w, k, NULL);
    }
    return rc;
}

static rein_err oa_stream(struct ms_body *b, const struct content *k)
{
    struct rein_jw w;
    rein_err rc;
    size_t i;

    b->content_type = "text/event-stream; charset=utf-8";
    b->chunked = true;
    rc = oa_role_chunk(b, k);
    /* Mistral's reasoning models write every piece as a content chunk */
    for (i = 0; !rc && i < k->reasoning.n; i++)
        rc = mistral_reply(k) ? mistral_piece(b, k, &k->reasoning.v[i], true)
                              : oa_piece(b, k, "reasoning_content", &k->reasoning.v[i]);
    for (i = 0; !rc && i < k->text.n; i++)
        rc = mistral_reply(k) && k->has_reasoning ? mistral_piece(b, k, &k->text.v[i], false)
                                                  : oa_piece(b, k, "content", &k->text.v[i]);
    for (i = 0; !rc && i < k->refusal.n; i++)
        rc = oa_piece(b, k, "refusal", &k->refusal.v[i]);
    for (i = 0; !rc && i < k->ncalls; i++)
        rc = oa_call_chunks(b, k, i);
    if (rc)
        return rc;
    oa_chunk_begin(b, &w, k);
    rein_jw_obj_begin(&w);
    rein_jw_obj_end(&w);
    rc = oa_chunk_end(b, &w, k, k->finish);
    if (!rc && k->c->include_usage) {
        ms__ev_begin(b, &w, "data: ");
        oa_head(&w, k, "chat.completion.chunk");
        rein_jw_key(&w, "choices");
        rein_jw_arr_begin(&w);
        rein_jw_arr_end(&w);
        rein_jw_key(&w, "usage");
        oa_usage(&w, k);
        rein_jw_obj_end(&w);
        rc = ms__ev_end(b, &w, "\n\n");
    }
    if (!rc)
        rc = rein_buf_adds(&b->buf, "data: [DONE]\n\n");
    if (!rc)
        rc = ms__body_mark(b);
    return rc;
}

void ms__jw_parts(struct rein_jw *w, const struct parts *p)
{
    char *s = ms__parts_join(p);

    if (!s) {
        w->err = REIN_ENOMEM;
        return;
    }
    rein_jw_strn(w, s, p->total);
    rein_free(s);
}

/* A Mistral reasoning reply's content: its thinking chunk, then its text chunk. */
static void mistral_content(struct rein_jw *w, const struct content *k)
{
    char *thought = ms__parts_join(&k->reasoning), *text = ms__parts_join(&k->text);

    rein_jw_arr_begin(w);
    if (thought)
        mistral_chunk(w, thought, k->reasoning.total, true);
    if (text && k->has_text)
        mistral_chunk(w, text, k->text.total, false);
    rein_jw_arr_end(w);
    if (!thought || !text)
        w->err = REIN_ENOMEM;
    rein_free(thought);
    rein_free(text);
}

static rein_err oa_json(struct ms_body *b, const struct content *k)
{
    struct rein_jw w;

    ms__ev_begin(b, &w, NULL);
    oa_head(&w, k, "chat.completion");
    rein_jw_key(&w, "choices");
    rein_jw_arr_begin(&w);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "index");
    rein_jw_int(&w, 0);
    rein_jw_key(&w, "message");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "role");
    rein_jw_str(&w, "assistant");
    rein_jw_key(&w, "content");
    if (mistral_reply(k) && k->has_reasoning)
        mistral_content(&w, k);
    else if (k->has_text)
        ms__jw_parts(&w, &k->text);
    else if (k->ncalls || k->has_refusal)
        rein_jw_null(&w);
    else
        rein_jw_str(&w, "");
    rein_jw_key(&w, "refusal");
    if (k->has_refusal)
        ms__jw_parts(&w, &k->refusal);
    else
        rein_jw_null(&w);
    if (k->has_reasoning && !mistral_reply(k)) {
        rein_jw_key(&w, "reasoning_content");
        ms__jw_parts(&w, &k->reasoning);
    }
    if (k->ncalls) {
        rein_jw_key(&w, "tool_calls");
        rein_jw_arr_begin(&w);
        for (size_t i = 0; i < k->ncalls; i++) {
            rein_jw_obj_begin(&w);
            rein_jw_key(&w, "id");
            rein_jw_str(&w, k->calls[i].id);
            rein_jw_key(&w, "type");
            rein_jw_str(&w, "function");
            rein_jw_key(&w, "function");
            rein_jw_obj_begin(&w);
            rein_jw_key(&w, "name");
            rein_jw_str(&w, k->calls[i].name);
            rein_jw_key(&w, "arguments");
            rein_jw_strn(&w, k->calls[i].joined, k->calls[i].args.total);
            rein_jw_obj_end(&w);
            rein_jw_obj_end(&w);
        }
        rein_jw_arr_end(&w);
    }
    rein_jw_key(&w, "annotations");
    rein_jw_arr_begin(&w);
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    rein_jw_key(&w, "logprobs");
    rein_jw_null(&w);
    rein_jw_key(&w, "finish_reason");
    rein_jw_str(&w, k->finish);
    rein_jw_obj_end(&w);
    rein_jw_arr_end(&w);
    rein_jw_key(&w, "usage");
    if (mistral_reply(k))
        mistral_usage(&w, k);
    else
        oa_usage(&w, k);
    rein_jw_key(&w, "service_tier");
    rein_jw_str(&w, "default");
    rein_jw_obj_end(&w);
    return ms__ev_end(b, &w, "");
}

/* ---- Anthropic ----------------------------------------------------------------------- */

static void an_event_begin(struct ms_body *b, struct rein_jw *w, const char *event)
{
    ms__ev_begin(b, w, "event: ");
    if (!w->err)
        w->err = rein_buf_addf(&b->buf, "%s\ndata: ", event);
    rein_jw_obj_begin(w);
    rein_jw_key(w, "type");
    rein_jw_str(w, event);
}

static rein_err an_event_end(struct ms_body *b, struct rein_jw *w)
{
    rein_jw_obj_end(w);
    return ms__ev_end(b, w, "\n\n");
}

static void an_usage(struct rein_jw *w, const struct content *k, int64_t out_tokens)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "input_tokens");
    rein_jw_int(w, k->in_tokens);
    rein_jw_key(w, "cache_creation_input_tokens");
    rein_jw_int(w, k->cache_write_tokens);
    rein_jw_key(w, "cache_read_input_tokens");
    rein_jw_int(w, k->cached_tokens);
    rein_jw_key(w, "output_tokens");
    rein_jw_int(w, out_tokens);
    rein_jw_key(w, "service_tier");
    rein_jw_str(w, "standard");
    rein_jw_obj_end(w);
}

static void an_message_head(struct rein_jw *w, const struct content *k)
{
    rein_jw_key(w, "id");
    rein_jw_str(w, k->id);
    rein_jw_key(w, "type");
    rein_jw_str(w, "message");
    rein_jw_key(w, "role");
    rein_jw_str(w, "assistant");
    rein_jw_key(w, "model");
    rein_jw_str(w, k->model);
}

static rein_err an_block_start(struct ms_body *b, size_t index, const char *type,
                               const struct content *k, const struct call *c, const char *data)
{
    struct rein_jw w;

    an_event_begin(b, &w, "content_block_start");
    rein_jw_key(&w, "index");
    rein_jw_int(&w, (int64_t)index);
    rein_jw_key(&w, "content_block");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "type");
    rein_jw_str(&w, type);
    if (strcmp(type, "thinking") == 0) {
        rein_jw_key(&w, "thinking");
        rein_jw_str(&w, "");
        rein_jw_key(&w, "signature");
        rein_jw_str(&w, "");
    } else if (strcmp(type, "redacted_thinking") == 0) {
        rein_jw_key(&w, "data");
        rein_jw_str(&w, data);
    } else if (strcmp(type, "text") == 0) {
        rein_jw_key(&w, "text");
        rein_jw_str(&w, "");
    } else {
        rein_jw_key(&w, "id");
        rein_jw_str(&w, c->id);
        rein_jw_key(&w, "name");
        rein_jw_str(&w, c->name);
        rein_jw_key(&w, "input");
        rein_jw_obj_begin(&w);
        rein_jw_obj_end(&w);
    }
    rein_jw_obj_end(&w);
    (void)k;
    return an_event_end(b, &w);
}

static rein_err an_delta(struct ms_body *b, size_t index, const char *type, const char *key,
                         const char *s, size_t n)
{
    struct rein_jw w;

    an_event_begin(b, &w, "content_block_delta");
    rein_jw_key(&w, "index");
    rein_jw_int(&w, (int64_t)index);
    rein_jw_key(&w, "delta");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "type");
    rein_jw_str(&w, type);
    rein_jw_key(&w, key);
    rein_jw_strn(&w, s, n);
    rein_jw_obj_end(&w);
    return an_event_end(b, &w);
}

static rein_err an_block_stop(struct ms_body *b, size_t index)
{
    struct rein_jw w;

    an_event_begin(b, &w, "content_block_stop");
    rein_jw_key(&w, "index");
    rein_jw_int(&w, (int64_t)index);
    return an_event_end(b, &w);
}

static rein_err an_ping(struct ms_body *b)
{
    rein_err rc = rein_buf_adds(&b->buf, "event: ping\ndata: {\"type\": \"ping\"}\n\n");

    return rc ? rc : ms__body_mark(b);
}

/* Streams the deltas of one parts list as one block. */
static rein_err an_parts_block(struct ms_body *b, size_t index, const char *dtype, const char *key,
                               const struct parts *p)
{
    rein_err rc = REIN_OK;

    for (size_t i = 0; !rc && i < p->n; i++)
        rc = an_delta(b, index, dtype, key, p->v[i].p, p->v[i].n);
    return rc;
}

static rein_err an_blocks(struct ms_body *b, const struct content *k)
{
    size_t index = 0, i;
    json_t *item;
    rein_err rc = REIN_OK;

    json_array_foreach(k->redacted, i, item)
    {
        rc = an_block_start(b, index, "redacted_thinking", k, NULL, json_string_value(item));
        if (!rc && index == 0)
            rc = an_ping(b);
        if (!rc)
            rc = an_block_stop(b, index++);
        if (rc)
            return rc;
    }
    if (k->has_reasoning) {
        rc = an_block_start(b, index, "thinking", k, NULL, NULL);
        if (!rc && index == 0)
            rc = an_ping(b);
        if (!rc)
            rc = an_parts_block(b, index, "thinking_delta", "thinking", &k->reasoning);
        if (!rc)
            rc = an_delta(b, index, "signature_delta", "signature", k->signature,
                          strlen(k->signature));
        if (!rc)
            rc = an_block_stop(b, index++);
    }
    if (!rc && (k->has_text || k->has_refusal)) {
        rc = an_block_start(b, index, "text", k, NULL, NULL);
        if (!rc && index == 0)
            rc = an_ping(b);
        if (!rc)
            rc = an_parts_block(b, index, "text_delta", "text", &k->text);
        if (!rc)
            rc = an_parts_block(b, index, "text_delta", "text", &k->refusal);
        if (!rc)
            rc = an_block_stop(b, index++);
    }
    for (i = 0; !rc && i < k->ncalls; i++) {
        const struct call *c = &k->calls[i];
        rc = an_block_start(b, index, "tool_use", k, c, NULL);
        if (!rc && index == 0)
            rc = an_ping(b);
        if (!rc && c->args.n == 0)
            rc = an_delta(b, index, "input_json_delta", "partial_json", "", 0);
        if (!rc)
            rc = an_parts_block(b, index, "input_json_delta", "partial_json", &c->args);
        if (!rc)
            rc = an_block_stop(b, index++);
    }
    if (!rc && index == 0)
        rc = an_ping(b);
    return rc;
}

static rein_err an_stream(struct ms_body *b, const struct content *k)
{
    struct rein_jw w;
    rein_err rc;

    b->content_type = "text/event-stream; charset=utf-8";
    b->chunked = true;
    an_event_begin(b, &w, "message_start");
    rein_jw_key(&w, "message");
    rein_jw_obj_begin(&w);
    an_message_head(&w, k);
    rein_jw_key(&w, "content");
    rein_jw_arr_begin(&w);
    rein_jw_arr_end(&w);
    rein_jw_key(&w, "stop_reason");
    rein_jw_null(&w);
    rein_jw_key(&w, "stop_sequence");
    rein_jw_null(&w);
    rein_jw_key(&w, "usage");
    an_usage(&w, k, 1);
    rein_jw_obj_end(&w);
    rc = an_event_end(b, &w);
    if (!rc)
        rc = an_blocks(b, k);
    if (rc)
        return rc;
    an_event_begin(b, &w, "message_delta");
    rein_jw_key(&w, "delta");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "stop_reason");
    rein_jw_str(&w, k->finish);
    rein_jw_key(&w, "stop_sequence");
    rein_jw_null(&w);
    rein_jw_obj_end(&w);
    rein_jw_key(&w, "usage");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "output_tokens");
    rein_jw_int(&w, k->out_tokens);
    rein_jw_obj_end(&w);
    rc = an_event_end(b, &w);
    if (rc)
        return rc;
    an_event_begin(b, &w, "message_stop");
    return an_event_end(b, &w);
}

static void an_text_block(struct rein_jw *w, const struct content *k)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "type");
    rein_jw_str(w, "text");
    rein_jw_key(w, "text");
    if (k->has_text) {
        ms__jw_parts(w, &k->text);
    } else {
        ms__jw_parts(w, &k->refusal);
    }
    rein_jw_obj_end(w);
}

static rein_err an_json(struct ms_body *b, const struct content *k)
{
    struct rein_jw w;
    size_t i;
    json_t *item;

    ms__ev_begin(b, &w, NULL);
    rein_jw_obj_begin(&w);
    an_message_head(&w, k);
    rein_jw_key(&w, "content");
    rein_jw_arr_begin(&w);
    json_array_foreach(k->redacted, i, item)
    {
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "type");
        rein_jw_str(&w, "redacted_thinking");
        rein_jw_key(&w, "data");
        rein_jw_str(&w, json_string_value(item));
        rein_jw_obj_end(&w);
    }
    if (k->has_reasoning) {
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "type");
        rein_jw_str(&w, "thinking");
        rein_jw_key(&w, "thinking");
        ms__jw_parts(&w, &k->reasoning);
        rein_jw_key(&w, "signature");
        rein_jw_str(&w, k->signature);
        rein_jw_obj_end(&w);
    }
    if (k->has_text || k->has_refusal)
        an_text_block(&w, k);
    for (i = 0; i < k->ncalls; i++) {
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "type");
        rein_jw_str(&w, "tool_use");
        rein_jw_key(&w, "id");
        rein_jw_str(&w, k->calls[i].id);
        rein_jw_key(&w, "name");
        rein_jw_str(&w, k->calls[i].name);
        rein_jw_key(&w, "input");
        jw_json_or_string(&w, k->calls[i].joined, k->calls[i].args.total);
        rein_jw_obj_end(&w);
    }
    rein_jw_arr_end(&w);
    rein_jw_key(&w, "stop_reason");
    rein_jw_str(&w, k->finish);
    rein_jw_key(&w, "stop_sequence");
    rein_jw_null(&w);
    rein_jw_key(&w, "usage");
    an_usage(&w, k, k->out_tokens);
    rein_jw_obj_end(&w);
    return ms__ev_end(b, &w, "");
}

/* ---- Ollama -------------------------------------------------------------------------- */

static void ol_head(struct rein_jw *w, const struct content *k)
{
    char iso[REIN_TIME_ISO_LEN];

    rein_jw_obj_begin(w);
    rein_jw_key(w, "model");
    rein_jw_str(w, k->model);
    rein_jw_key(w, "created_at");
    rein_jw_str(w, rein_time_iso(rein_wall_ms(), iso));
}

static void ol_calls(struct rein_jw *w, const struct content *k)
{
    rein_jw_key(w, "tool_calls");
    rein_jw_arr_begin(w);
    for (size_t i = 0; i < k->ncalls; i++) {
        rein_jw_obj_begin(w);
        rein_jw_key(w, "function");
        rein_jw_obj_begin(w);
        rein_jw_key(w, "name");
        rein_jw_str(w, k->calls[i].name);
        rein_jw_key(w, "arguments");
        jw_json_or_string(w, k->calls[i].joined, k->calls[i].args.total);
        rein_jw_obj_end(w);
        rein_jw_obj_end(w);
    }
    rein_jw_arr_end(w);
}

static void ol_tail(struct rein_jw *w, const struct content *k)
{
    rein_jw_key(w, "done_reason");
    rein_jw_str(w, k->finish);
    rein_jw_key(w, "done");
    rein_jw_bool(w, true);
    rein_jw_key(w, "total_duration");
    rein_jw_int(w, 885095291);
    rein_jw_key(w, "load_duration");
    rein_jw_int(w, 3753500);
    rein_jw_key(w, "prompt_eval_count");
    rein_jw_int(w, k->in_tokens);
    rein_jw_key(w, "prompt_eval_duration");
    rein_jw_int(w, 328493000);
    rein_jw_key(w, "eval_count");
    rein_jw_int(w, k->out_tokens);
    rein_jw_key(w, "eval_duration");
    rein_jw_int(w, 552222000);
    rein_jw_obj_end(w);
}

/* One streamed line: message {role, content, thinking?}, done false. */
static rein_err ol_line(struct ms_body *b, const struct content *k, const char *key,
                        const struct slice *s)
{
    struct rein_jw w;

    ms__ev_begin(b, &w, NULL);
    ol_head(&w, k);
    rein_jw_key(&w, "message");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "role");
    rein_jw_str(&w, "assistant");
    rein_jw_key(&w, "content");
    if (strcmp(key, "content") == 0)
        rein_jw_strn(&w, s->p, s->n);
    else
        rein_jw_str(&w, "");
    if (strcmp(key, "thinking") == 0) {
        rein_jw_key(&w, "thinking");
        rein_jw_strn(&w, s->p, s->n);
    }
    if (strcmp(key, "tool_calls") == 0)
        ol_calls(&w, k);
    rein_jw_obj_end(&w);
    rein_jw_key(&w, "done");
    rein_jw_bool(&w, false);
    rein_jw_obj_end(&w);
    return ms__ev_end(b, &w, "\n");
}

static rein_err ol_stream(struct ms_body *b, const struct content *k)
{
    static const struct slice none = {"", 0};
    struct rein_jw w;
    rein_err rc = REIN_OK;
    size_t i;

    b->content_type = "application/x-ndjson";
    b->chunked = true;
    for (i = 0; !rc && i < k->reasoning.n; i++)
        rc = ol_line(b, k, "thinking", &k->reasoning.v[i]);
    for (i = 0; !rc && i < k->text.n; i++)
        rc = ol_line(b, k, "content", &k->text.v[i]);
    for (i = 0; !rc && i < k->refusal.n; i++)
        rc = ol_line(b, k, "content", &k->refusal.v[i]);
    if (!rc && k->ncalls)
        rc = ol_line(b, k, "tool_calls", &none);
    if (rc)
        return rc;
    ms__ev_begin(b, &w, NULL);
    ol_head(&w, k);
    rein_jw_key(&w, "message");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "role");
    rein_jw_str(&w, "assistant");
    rein_jw_key(&w, "content");
    rein_jw_str(&w, "");
    rein_jw_obj_end(&w);
    ol_tail(&w, k);
    return ms__ev_end(b, &w, "\n");
}

static rein_err ol_json(struct ms_body *b, const struct content *k)
{
    struct rein_jw w;

    ms__ev_begin(b, &w, NULL);
    ol_head(&w, k);
    rein_jw_key(&w, "message");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "role");
    rein_jw_str(&w, "assistant");
    rein_jw_key(&w, "content");
    if (k->has_text)
        ms__jw_parts(&w, &k->text);
    else if (k->has_refusal)
        ms__jw_parts(&w, &k->refusal);
    else
        rein_jw_str(&w, "");
    if (k->has_reasoning) {
        rein_jw_key(&w, "thinking");
        ms__jw_parts(&w, &k->reasoning);
    }
    if (k->ncalls)
        ol_calls(&w, k);
    rein_jw_obj_end(&w);
    ol_tail(&w, k);
    return ms__ev_end(b, &w, "");
}

/* ---- entry points -------------------------------------------------------------------- */

rein_err ms__render_reply(const struct ms_reply *r, const struct ms_ctx *c, struct ms_body *out)
{
    struct content k;
    rein_err rc = ms__gather(&k, r, c);

    if (!rc) {
        switch (c->format) {
        case MS_FMT_ANTHROPIC:
            rc = c->path && ms__vx_path_counts(c->path) ? ms__vx_count(out, &k)
                 : c->stream                            ? an_stream(out, &k)
                                                        : an_json(out, &k);
            break;
        case MS_FMT_OLLAMA:
            rc = c->stream ? ol_stream(out, &k) : ol_json(out, &k);
            break;
        case MS_FMT_DASHSCOPE:
            rc = c->stream ? ms__ds_stream(out, &k) : ms__ds_json(out, &k);
            break;
        case MS_FMT_GEMINI:
            rc = c->stream ? ms__gm_stream(out, &k) : ms__gm_json(out, &k);
            break;
        case MS_FMT_BEDROCK:
            rc = c->path && ms__bd_path_counts(c->path) ? ms__bd_count(out, &k)
                 : c->stream                            ? ms__bd_stream(out, &k)
                                                        : ms__bd_json(out, &k);
            break;
        case MS_FMT_RESPONSES:
            rc = c->stream ? ms__rs_stream(out, &k) : ms__rs_json(out, &k);
            break;
        default:
            rc = c->stream ? oa_stream(out, &k) : oa_json(out, &k);
            break;
        }
    }
    ms__content_release(&k);
    return rc;
}

void ms__error_defaults(enum ms_format f, struct ms_error_info *e)
{
    int s = e->status;

    if (f == MS_FMT_ANTHROPIC) {
        const char *type = s == 401   ? "authentication_error"
                           : s == 403 ? "permission_error"
                           : s == 404 ? "not_found_error"
                           : s == 413 ? "request_too_large"
                           : s == 429 ? "rate_limit_error"
                           : s == 529 ? "overloaded_error"
                           : s >= 500 ? "api_error"
                                      : "invalid_request_error";
        const char *msg = s == 401   ? "invalid x-api-key"
                          : s == 429 ? "Number of request tokens has exceeded your per-minute "
                                       "rate limit (scripted by rein-model-server)"
                          : s == 529 ? "Overloaded"
                          : s >= 500 ? "Internal server error"
                                     : "Invalid request (scripted by rein-model-server)";
        if (!e->type)
            e->type = type;
        if (!e->message)
            e->message = msg;
        return;
    }
    if (!e->type)
        e->type = s == 429 ? "requests" : s >= 500 ? "server_error" : "invalid_request_error";
    if (!e->code && !e->message)
        e->code = s == 401 ? "invalid_api_key" : s == 429 ? "rate_limit_exceeded" : NULL;
    if (!e->message)
        e->message =
            s == 401   ? "Incorrect API key provided."
            : s == 429 ? "Rate limit reached for requests (scripted by rein-model-server)"
            : s == 503 ? "The engine is currently overloaded, please try again later."
            : s >= 500 ? "The server had an error while processing your request. Sorry about that!"
                       : "Invalid request (scripted by rein-model-server)";
}

static void jw_str_or_null(struct rein_jw *w, const char *s)
{
    if (s)
        rein_jw_str(w, s);
    else
        rein_jw_null(w);
}

/* The members of an OpenAI-shaped error: its message, type, param and code. */
static void jw_oa_error(struct rein_jw *w, const struct ms_error_info *e)
{
    rein_jw_key(w, "message");
    if (e->message_json && e->message)
        rein_jw_raw(w, e->message, strlen(e->message));
    else
        rein_jw_str(w, e->message);
    rein_jw_key(w, "type");
    rein_jw_str(w, e->type);
    rein_jw_key(w, "param");
    jw_str_or_null(w, e->param);
    rein_jw_key(w, "code");
    jw_str_or_null(w, e->code);
}

rein_err ms__render_error(enum ms_format f, const struct ms_error_info *given, struct ms_body *out)
{
    struct ms_error_info e = *given;
    struct rein_jw w;

    if (f == MS_FMT_DASHSCOPE)
        return ms__ds_error(&e, out, false);
    if (f == MS_FMT_GEMINI)
        return ms__gm_error(&e, out, false);
    if (f == MS_FMT_BEDROCK)
        return ms__bd_error(&e, out, false);
    ms__error_defaults(f, &e);
    out->content_type = "application/json";
    out->chunked = false;
    ms__ev_begin(out, &w, NULL);
    rein_jw_obj_begin(&w);
    if (f == MS_FMT_ANTHROPIC) {
        rein_jw_key(&w, "type");
        rein_jw_str(&w, "error");
        rein_jw_key(&w, "error");
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "type");
        rein_jw_str(&w, e.type);
        rein_jw_key(&w, "message");
        rein_jw_str(&w, e.message);
        rein_jw_obj_end(&w);
        rein_jw_key(&w, "request_id");
        rein_jw_str(&w, out->request_id);
    } else if (f == MS_FMT_OLLAMA) {
        rein_jw_key(&w, "error");
        rein_jw_str(&w, e.message);
    } else if (e.flat) {
        rein_jw_key(&w, "object");
        rein_jw_str(&w, "error");
        jw_oa_error(&w, &e);
    } else {
        rein_jw_key(&w, "error");
        rein_jw_obj_begin(&w);
        jw_oa_error(&w, &e);
        rein_jw_obj_end(&w);
    }
    rein_jw_obj_end(&w);
    return ms__ev_end(out, &w, "");
}

rein_err ms__render_stream_error(enum ms_format f, const json_t *ev, struct ms_body *out)
{
    const char *type = ms__str_member(ev, "type");
    const char *msg = ms__str_member(ev, "message");
    struct rein_jw w;

    if (f == MS_FMT_DASHSCOPE) {
        struct ms_error_info e = {
            .status = 500, .message = msg, .code = ms__str_member(ev, "code")};
        return ms__ds_error(&e, out, true);
    }
    if (f == MS_FMT_GEMINI) {
        struct ms_error_info e = {.status = 0, .type = type, .message = msg};
        return ms__gm_error(&e, out, true);
    }
    if (f == MS_FMT_BEDROCK) {
        struct ms_error_info e = {.status = 0, .type = type, .message = msg};
        return ms__bd_error(&e, out, true);
    }
    if (f == MS_FMT_RESPONSES)
        return ms__rs_stream_error(ev, out);
    if (f == MS_FMT_ANTHROPIC) {
        /* As Anthropic sends it mid-stream (anthropic-sdk-go#200): details null first. */
        ms__ev_begin(out, &w, "event: error\ndata: ");
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "type");
        rein_jw_str(&w, "error");
        rein_jw_key(&w, "error");
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "details");
        rein_jw_null(&w);
        rein_jw_key(&w, "type");
        rein_jw_str(&w, type ? type : "overloaded_error");
        rein_jw_key(&w, "message");
        rein_jw_str(&w, msg ? msg : "Overloaded");
        rein_jw_obj_end(&w);
        rein_jw_obj_end(&w);
        return ms__ev_end(out, &w, "\n\n");
    }
    if (f == MS_FMT_OLLAMA) {
        ms__ev_begin(out, &w, NULL);
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "error");
        rein_jw_str(&w, msg ? msg : "an error was encountered while running the model");
        rein_jw_obj_end(&w);
        return ms__ev_end(out, &w, "\n");
    }
    ms__ev_begin(out, &w, "data: ");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "error");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "message");
    rein_jw_str(&w, msg ? msg
                        : "The server had an error while processing your request. Sorry about "
                          "that!");
    rein_jw_key(&w, "type");
    rein_jw_str(&w, type ? type : "server_error");
    rein_jw_key(&w, "param");
    rein_jw_null(&w);
    rein_jw_key(&w, "code");
    jw_str_or_null(&w, ms__str_member(ev, "code"));
    rein_jw_obj_end(&w);
    rein_jw_obj_end(&w);
    return ms__ev_end(out, &w, "\n\n");
}
