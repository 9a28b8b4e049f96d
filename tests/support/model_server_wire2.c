/*
 * The scripted model server's later wire formats (model_server_int.h), rendered from the same
 * gathered content as the first three (model_server_wire.c).
 *
 * DashScope's native text-generation API (/api/v1/services/aigc/text-generation/generation):
 * one {"output": {"choices": [{"finish_reason", "message"}]}, "usage", "request_id"} body, or,
 * when the request says X-DashScope-SSE: enable, SSE events written as DashScope writes them
 * (cnblogs/dashscope-sdk's raw captures): "id:N", "event:result", the comment
 * ":HTTP_STATUS/200", then "data:" without a space; each event's message carries only what is
 * new (incremental_output), finish_reason is the string "null" until the last event, usage is
 * cumulative, and a call's later pieces have "id": "". Errors are {code, message, request_id}
 * (an "event:error" with the HTTP status in the comment inside a stream).
 *
 * OpenAI's Responses API (/v1/responses): the response object, or typed SSE events with
 * "event:" lines and sequence numbers as api.openai.com sends them (the Vercel AI SDK's and
 * openai-python's recordings): response.created, response.in_progress; per output item
 * output_item.added, its parts (reasoning_summary_part/_text, content_part and output_text or
 * refusal, function_call_arguments deltas and done), output_item.done; then
 * response.completed (response.incomplete when cut by length or a filter) with usage incl.
 * cached and reasoning tokens. A reasoning item carries encrypted_content when the request
 * includes reasoning.encrypted_content. An in-stream failure is an "error" event followed by
 * response.failed.
 */
#include "model_server_int.h"

#include <stdio.h>
#include <string.h>

/* ---- DashScope ----------------------------------------------------------------------- */

struct ds_stream {
    struct ms_body *b;
    const struct content *k;
    char request_id[REIN_ID_MAX];
    int64_t n;     /* events written */
    int64_t total; /* events there will be */
};

static void ds_usage(struct rein_jw *w, const struct content *k, int64_t out)
{
    rein_jw_key(w, "usage");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "total_tokens");
    rein_jw_int(w, k->in_tokens + out);
    rein_jw_key(w, "output_tokens");
    rein_jw_int(w, out);
    rein_jw_key(w, "input_tokens");
    rein_jw_int(w, k->in_tokens);
    rein_jw_key(w, "prompt_tokens_details");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "cached_tokens");
    rein_jw_int(w, k->cached_tokens);
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
}

/* Opens an event up to the message object's members: the caller writes them next. */
static void ds_event_begin(struct ds_stream *s, struct rein_jw *w)
{
    char head[96];

    snprintf(head, sizeof(head),
             "id:%lld\nevent:result\n:HTTP_STATUS/200\ndata:", (long long)++s->n);
    ms__ev_begin(s->b, w, head);
    rein_jw_obj_begin(w);
    rein_jw_key(w, "output");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "choices");
    rein_jw_arr_begin(w);
    rein_jw_obj_begin(w);
    rein_jw_key(w, "message");
    rein_jw_obj_begin(w);
}

static rein_err ds_event_end(struct ds_stream *s, struct rein_jw *w, const char *finish)
{
    const struct content *k = s->k;

    rein_jw_key(w, "role");
    rein_jw_str(w, "assistant");
    rein_jw_obj_end(w);
    rein_jw_key(w, "index");
    rein_jw_int(w, 0);
    rein_jw_key(w, "finish_reason");
    rein_jw_str(w, finish ? finish : "null");
    rein_jw_obj_end(w);
    rein_jw_arr_end(w);
    rein_jw_obj_end(w);
    /* Cumulative: what was generated up to this event. */
    ds_usage(w, k, s->total ? k->out_tokens * s->n / s->total : k->out_tokens);
    rein_jw_key(w, "request_id");
    rein_jw_str(w, s->request_id);
    rein_jw_obj_end(w);
    return ms__ev_end(s->b, w, "\n\n");
}

static rein_err ds_piece(struct ds_stream *s, const char *key, const struct slice *p)
{
    struct rein_jw w;

    ds_event_begin(s, &w);
    rein_jw_key(&w, "content");
    if (strcmp(key, "content") == 0) {
        rein_jw_strn(&w, p->p, p->n);
    } else {
        rein_jw_str(&w, "");
        rein_jw_key(&w, key);
        rein_jw_strn(&w, p->p, p->n);
    }
    return ds_event_end(s, &w, NULL);
}

static rein_err ds_call_piece(struct ds_stream *s, size_t i, size_t j)
{
    const struct call *c = &s->k->calls[i];
    struct rein_jw w;

    ds_event_begin(s, &w);
    rein_jw_key(&w, "content");
    rein_jw_str(&w, "");
    rein_jw_key(&w, "tool_calls");
    rein_jw_arr_begin(&w);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "index");
    rein_jw_int(&w, (int64_t)i);
    rein_jw_key(&w, "id");
    rein_jw_str(&w, j == 0 ? c->id : "");
    rein_jw_key(&w, "type");
    rein_jw_str(&w, "function");
    rein_jw_key(&w, "function");
    rein_jw_obj_begin(&w);
    if (j == 0) {
        rein_jw_key(&w, "name");
        rein_jw_str(&w, c->name);
    }
    rein_jw_key(&w, "arguments");
    if (j < c->args.n)
        rein_jw_strn(&w, c->args.v[j].p, c->args.v[j].n);
    else
        rein_jw_str(&w, "");
    rein_jw_obj_end(&w);
    rein_jw_obj_end(&w);
    rein_jw_arr_end(&w);
    return ds_event_end(s, &w, NULL);
}

rein_err ms__ds_stream(struct ms_body *b, const struct content *k)
{
    struct ds_stream s = {.b = b, .k = k};
    struct rein_jw w;
    rein_err rc = REIN_OK;
    size_t i;

    b->content_type = "text/event-stream;charset=UTF-8";
    b->chunked = true;
    rein_id_new("", s.request_id);
    s.total = (int64_t)(k->reasoning.n + k->text.n + k->refusal.n) + 1;
    for (i = 0; i < k->ncalls; i++)
        s.total += (int64_t)(k->calls[i].args.n ? k->calls[i].args.n : 1);
    for (i = 0; !rc && i < k->reasoning.n; i++)
        rc = ds_piece(&s, "reasoning_content", &k->reasoning.v[i]);
    for (i = 0; !rc && i < k->text.n; i++)
        rc = ds_piece(&s, "content", &k->text.v[i]);
    for (i = 0; !rc && i < k->refusal.n; i++)
        rc = ds_piece(&s, "content", &k->refusal.v[i]);
    for (i = 0; !rc && i < k->ncalls; i++) {
        size_t n = k->calls[i].args.n ? k->calls[i].args.n : 1;
        for (size_t j = 0; !rc && j < n; j++)
            rc = ds_call_piece(&s, i, j);
    }
    if (rc)
        return rc;
    ds_event_begin(&s, &w);
    rein_jw_key(&w, "content");
    rein_jw_str(&w, "");
    return ds_event_end(&s, &w, k->finish);
}

rein_err ms__ds_json(struct ms_body *b, const struct content *k)
{
    char request_id[REIN_ID_MAX];
    struct rein_jw w;

    rein_id_new("", request_id);
    ms__ev_begin(b, &w, NULL);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "output");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "choices");
    rein_jw_arr_begin(&w);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "finish_reason");
    rein_jw_str(&w, k->finish);
    rein_jw_key(&w, "message");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "role");
    rein_jw_str(&w, "assistant");
    rein_jw_key(&w, "content");
    if (k->has_refusal)
        ms__jw_parts(&w, &k->refusal);
    else
        ms__jw_parts(&w, &k->text);
    if (k->has_reasoning) {
        rein_jw_key(&w, "reasoning_content");
        ms__jw_parts(&w, &k->reasoning);
    }
    if (k->ncalls) {
        rein_jw_key(&w, "tool_calls");
        rein_jw_arr_begin(&w);
        for (size_t i = 0; i < k->ncalls; i++) {
            rein_jw_obj_begin(&w);
            rein_jw_key(&w, "function");
            rein_jw_obj_begin(&w);
            rein_jw_key(&w, "name");
            rein_jw_str(&w, k->calls[i].name);
            rein_jw_key(&w, "arguments");
            rein_jw_strn(&w, k->calls[i].joined, k->calls[i].args.total);
            rein_jw_obj_end(&w);
            rein_jw_key(&w, "index");
            rein_jw_int(&w, (int64_t)i);
            rein_jw_key(&w, "id");
            rein_jw_str(&w, k->calls[i].id);
            rein_jw_key(&w, "type");
            rein_jw_str(&w, "function");
            rein_jw_obj_end(&w);
        }
        rein_jw_arr_end(&w);
    }
    rein_jw_obj_end(&w);
    rein_jw_obj_end(&w);
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    ds_usage(&w, k, k->out_tokens);
    rein_jw_key(&w, "request_id");
    rein_jw_str(&w, request_id);
    rein_jw_obj_end(&w);
    return ms__ev_end(b, &w, "");
}

/* DashScope's codes by status where the script names none (its documented error codes). */
static const char *ds_code(const struct ms_error_info *e)
{
    int s = e->status;

    if (e->code && e->code[0] >= 'A' && e->code[0] <= 'Z')
        return e->code;
    return s == 401   ? "InvalidApiKey"
           : s == 403 ? "AccessDenied"
           : s == 404 ? "ModelNotFound"
           : s == 429 ? "Throttling.RateQuota"
           : s >= 500 ? "InternalError"
                      : "InvalidParameter";
}

rein_err ms__ds_error(const struct ms_error_info *e, struct ms_body *out, bool event)
{
    char request_id[REIN_ID_MAX], head[64];
    struct rein_jw w;

    rein_id_new("", request_id);
    snprintf(head, sizeof(head),
             "id:1\nevent:error\n:HTTP_STATUS/%d\ndata:", e->status ? e->status : 500);
    if (!event) {
        out->content_type = "application/json";
        out->chunked = false;
    }
    ms__ev_begin(out, &w, event ? head : NULL);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "code");
    rein_jw_str(&w, ds_code(e));
    rein_jw_key(&w, "message");
    rein_jw_str(&w, e->message ? e->message
                               : "An internal error has occured, please try again "
                                 "later or contact service support.");
    rein_jw_key(&w, "request_id");
    rein_jw_str(&w, request_id);
    rein_jw_obj_end(&w);
    return ms__ev_end(out, &w, event ? "\n\n" : "");
}

/* ---- OpenAI Responses ---------------------------------------------------------------- */

/* Ids of the reply's output items, made once so the stream and its final object agree. */
struct rs_ids {
    char resp[REIN_ID_MAX], reasoning[REIN_ID_MAX], msg[REIN_ID_MAX];
    char (*fc)[REIN_ID_MAX];
};

struct rs_stream {
    struct ms_body *b;
    const struct content *k;
    struct rs_ids ids;
    int64_t seq;
    bool encrypted; /* the request asked for reasoning.encrypted_content */
};

static bool rs_wants_encrypted(const json_t *req)
{
    size_t i;
    json_t *v;

    json_array_foreach(json_object_get(req, "include"), i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), "reasoning.encrypted_content") == 0)
            return true;
    }
    return false;
}

static int64_t rs_index_of(const struct content *k, char what, size_t call)
{
    int64_t i = 0;

    if (what == 'r')
        return 0;
    i += k->has_reasoning;
    if (what == 'm')
        return i;
    i += k->has_text || k->has_refusal;
    return i + (int64_t)call;
}

static void rs_usage(struct rein_jw *w, const struct content *k)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "input_tokens");
    rein_jw_int(w, k->in_tokens);
    rein_jw_key(w, "input_tokens_details");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "cached_tokens");
    rein_jw_int(w, k->cached_tokens);
    rein_jw_obj_end(w);
    rein_jw_key(w, "output_tokens");
    rein_jw_int(w, k->out_tokens);
    rein_jw_key(w, "output_tokens_details");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "reasoning_tokens");
    rein_jw_int(w, k->reasoning_tokens);
    rein_jw_obj_end(w);
    rein_jw_key(w, "total_tokens");
    rein_jw_int(w, k->in_tokens + k->out_tokens);
    rein_jw_obj_end(w);
}

/* One output item as it stands when done (or, added, as it starts: no content yet). */
static void rs_item(struct rein_jw *w, const struct rs_stream *s, char what, size_t call, bool done)
{
    const struct content *k = s->k;

    rein_jw_obj_begin(w);
    if (what == 'r') {
        rein_jw_key(w, "id");
        rein_jw_str(w, s->ids.reasoning);
        rein_jw_key(w, "type");
        rein_jw_str(w, "reasoning");
        if (s->encrypted) {
            rein_jw_key(w, "encrypted_content");
            rein_jw_str(w, k->signature);
        }
        rein_jw_key(w, "summary");
        rein_jw_arr_begin(w);
        if (done) {
            rein_jw_obj_begin(w);
            rein_jw_key(w, "type");
            rein_jw_str(w, "summary_text");
            rein_jw_key(w, "text");
            ms__jw_parts(w, &k->reasoning);
            rein_jw_obj_end(w);
        }
        rein_jw_arr_end(w);
    } else if (what == 'm') {
        rein_jw_key(w, "id");
        rein_jw_str(w, s->ids.msg);
        rein_jw_key(w, "type");
        rein_jw_str(w, "message");
        rein_jw_key(w, "status");
        rein_jw_str(w, done ? "completed" : "in_progress");
        rein_jw_key(w, "content");
        rein_jw_arr_begin(w);
        if (done) {
            rein_jw_obj_begin(w);
            rein_jw_key(w, "type");
            rein_jw_str(w, k->has_refusal ? "refusal" : "output_text");
            if (!k->has_refusal) {
                rein_jw_key(w, "annotations");
                rein_jw_arr_begin(w);
                rein_jw_arr_end(w);
            }
            rein_jw_key(w, k->has_refusal ? "refusal" : "text");
            ms__jw_parts(w, k->has_refusal ? &k->refusal : &k->text);
            rein_jw_obj_end(w);
        }
        rein_jw_arr_end(w);
        rein_jw_key(w, "role");
        rein_jw_str(w, "assistant");
    } else {
        const struct call *c = &k->calls[call];
        rein_jw_key(w, "id");
        rein_jw_str(w, s->ids.fc[call]);
        rein_jw_key(w, "type");
        rein_jw_str(w, c->custom ? "custom_tool_call" : "function_call");
        rein_jw_key(w, "status");
        rein_jw_str(w, done ? "completed" : "in_progress");
        rein_jw_key(w, c->custom ? "input" : "arguments");
        if (done)
            rein_jw_strn(w, c->joined, c->args.total);
        else
            rein_jw_str(w, "");
        rein_jw_key(w, "call_id");
        rein_jw_str(w, c->id);
        rein_jw_key(w, "name");
        rein_jw_str(w, c->name);
    }
    rein_jw_obj_end(w);
}

/* The response object: in progress (no output yet) or as it ended. */
static void rs_response(struct rein_jw *w, const struct rs_stream *s, const char *status)
{
    const struct content *k = s->k;
    bool end = strcmp(status, "in_progress") != 0;
    bool cut = strcmp(status, "incomplete") == 0;

    rein_jw_obj_begin(w);
    rein_jw_key(w, "id");
    rein_jw_str(w, s->ids.resp);
    rein_jw_key(w, "object");
    rein_jw_str(w, "response");
    rein_jw_key(w, "created_at");
    rein_jw_int(w, k->created);
    rein_jw_key(w, "status");
    rein_jw_str(w, status);
    rein_jw_key(w, "error");
    rein_jw_null(w);
    rein_jw_key(w, "incomplete_details");
    if (cut) {
        rein_jw_obj_begin(w);
        rein_jw_key(w, "reason");
        rein_jw_str(w, strcmp(k->finish, "content_filter") == 0 ? "content_filter"
                                                                : "max_output_tokens");
        rein_jw_obj_end(w);
    } else {
        rein_jw_null(w);
    }
    rein_jw_key(w, "model");
    rein_jw_str(w, k->model);
    rein_jw_key(w, "output");
    rein_jw_arr_begin(w);
    if (end) {
        if (k->has_reasoning)
            rs_item(w, s, 'r', 0, true);
        if (k->has_text || k->has_refusal)
            rs_item(w, s, 'm', 0, true);
        for (size_t i = 0; i < k->ncalls; i++)
            rs_item(w, s, 'c', i, true);
    }
    rein_jw_arr_end(w);
    rein_jw_key(w, "parallel_tool_calls");
    rein_jw_bool(w, true);
    rein_jw_key(w, "previous_response_id");
    if (ms__str_member(k->c->req, "previous_response_id"))
        rein_jw_str(w, ms__str_member(k->c->req, "previous_response_id"));
    else
        rein_jw_null(w);
    rein_jw_key(w, "store");
    rein_jw_bool(w, !json_is_false(json_object_get(k->c->req, "store")));
    rein_jw_key(w, "usage");
    if (end)
        rs_usage(w, k);
    else
        rein_jw_null(w);
    rein_jw_obj_end(w);
}

/* Starts an event "event: TYPE\ndata: {"type":TYPE,"sequence_number":N" (members follow). */
static void rs_event_begin(struct rs_stream *s, struct rein_jw *w, const char *type)
{
    ms__ev_begin(s->b, w, "event: ");
    if (!w->err)
        w->err = rein_buf_addf(&s->b->buf, "%s\ndata: ", type);
    rein_jw_obj_begin(w);
    rein_jw_key(w, "type");
    rein_jw_str(w, type);
    rein_jw_key(w, "sequence_number");
    rein_jw_int(w, s->seq++);
}

static rein_err rs_event_end(struct rs_stream *s, struct rein_jw *w)
{
    rein_jw_obj_end(w);
    return ms__ev_end(s->b, w, "\n\n");
}

static rein_err rs_response_event(struct rs_stream *s, const char *type, const char *status)
{
    struct rein_jw w;

    rs_event_begin(s, &w, type);
    rein_jw_key(&w, "response");
    rs_response(&w, s, status);
    return rs_event_end(s, &w);
}

static rein_err rs_item_event(struct rs_stream *s, const char *type, char what, size_t call,
                              bool done)
{
    struct rein_jw w;

    rs_event_begin(s, &w, type);
    rein_jw_key(&w, "output_index");
    rein_jw_int(&w, rs_index_of(s->k, what, call));
    rein_jw_key(&w, "item");
    rs_item(&w, s, what, call, done);
    return rs_event_end(s, &w);
}

/* An event about a part of item_id: key and value (a slice, or the joined parts). */
static rein_err rs_piece_event(struct rs_stream *s, const char *type, const char *item_id,
                               int64_t index, const char *key, const struct slice *piece,
                               const struct parts *whole)
{
    struct rein_jw w;

    rs_event_begin(s, &w, type);
    rein_jw_key(&w, "item_id");
    rein_jw_str(&w, item_id);
    rein_jw_key(&w, "output_index");
    rein_jw_int(&w, index);
    if (strstr(type, "summary")) {
        rein_jw_key(&w, "summary_index");
        rein_jw_int(&w, 0);
    } else if (!strstr(type, "function_call") && !strstr(type, "custom_tool_call")) {
        rein_jw_key(&w, "content_index");
        rein_jw_int(&w, 0);
    }
    if (key) {
        rein_jw_key(&w, key);
        if (piece)
            rein_jw_strn(&w, piece->p, piece->n);
        else
            ms__jw_parts(&w, whole);
    }
    return rs_event_end(s, &w);
}

static rein_err rs_reasoning_events(struct rs_stream *s)
{
    const struct content *k = s->k;
    const char *id = s->ids.reasoning;
    rein_err rc = rs_item_event(s, "response.output_item.added", 'r', 0, false);

    if (!rc)
        rc = rs_piece_event(s, "response.reasoning_summary_part.added", id, 0, NULL, NULL, NULL);
    for (size_t i = 0; !rc && i < k->reasoning.n; i++)
        rc = rs_piece_event(s, "response.reasoning_summary_text.delta", id, 0, "delta",
                            &k->reasoning.v[i], NULL);
    if (!rc)
        rc = rs_piece_event(s, "response.reasoning_summary_text.done", id, 0, "text", NULL,
                            &k->reasoning);
    if (!rc)
        rc = rs_piece_event(s, "response.reasoning_summary_part.done", id, 0, NULL, NULL, NULL);
    return rc ? rc : rs_item_event(s, "response.output_item.done", 'r', 0, true);
}

static rein_err rs_message_events(struct rs_stream *s)
{
    const struct content *k = s->k;
    const struct parts *p = k->has_refusal ? &k->refusal : &k->text;
    const char *delta = k->has_refusal ? "response.refusal.delta" : "response.output_text.delta";
    const char *done = k->has_refusal ? "response.refusal.done" : "response.output_text.done";
    int64_t at = rs_index_of(k, 'm', 0);
    rein_err rc = rs_item_event(s, "response.output_item.added", 'm', 0, false);

    if (!rc)
        rc = rs_piece_event(s, "response.content_part.added", s->ids.msg, at, NULL, NULL, NULL);
    for (size_t i = 0; !rc && i < p->n; i++)
        rc = rs_piece_event(s, delta, s->ids.msg, at, "delta", &p->v[i], NULL);
    if (!rc)
        rc = rs_piece_event(s, done, s->ids.msg, at, k->has_refusal ? "refusal" : "text", NULL, p);
    if (!rc)
        rc = rs_piece_event(s, "response.content_part.done", s->ids.msg, at, NULL, NULL, NULL);
    return rc ? rc : rs_item_event(s, "response.output_item.done", 'm', 0, true);
}

static rein_err rs_call_events(struct rs_stream *s, size_t i)
{
    const struct call *c = &s->k->calls[i];
    int64_t at = rs_index_of(s->k, 'c', i);
    rein_err rc = rs_item_event(s, "response.output_item.added", 'c', i, false);

    /* a custom tool's input streams under its own events (openai-python's
     * ResponseCustomToolCallInputDeltaEvent and ...DoneEvent) */
    const char *delta = c->custom ? "response.custom_tool_call_input.delta"
                                  : "response.function_call_arguments.delta";
    const char *whole = c->custom ? "response.custom_tool_call_input.done"
                                  : "response.function_call_arguments.done";

    for (size_t j = 0; !rc && j < c->args.n; j++)
        rc = rs_piece_event(s, delta, s->ids.fc[i], at, "delta", &c->args.v[j], NULL);
    if (!rc)
        rc = rs_piece_event(s, whole, s->ids.fc[i], at, c->custom ? "input" : "arguments", NULL,
                            &c->args);
    return rc ? rc : rs_item_event(s, "response.output_item.done", 'c', i, true);
}

static rein_err rs_init(struct rs_stream *s, struct ms_body *b, const struct content *k)
{
    memset(s, 0, sizeof(*s));
    s->b = b;
    s->k = k;
    s->encrypted = rs_wants_encrypted(k->c->req);
    rein_id_new("resp_", s->ids.resp);
    rein_id_new("rs_", s->ids.reasoning);
    rein_id_new("msg_", s->ids.msg);
    if (k->ncalls) {
        s->ids.fc = rein_calloc(k->ncalls, sizeof(*s->ids.fc));
        if (!s->ids.fc)
            return REIN_ENOMEM;
        for (size_t i = 0; i < k->ncalls; i++)
            rein_id_new("fc_", s->ids.fc[i]);
    }
    return REIN_OK;
}

/* The status a finished reply has: cut by length or a filter is "incomplete". */
static const char *rs_status(const struct content *k)
{
    return strcmp(k->finish, "length") == 0 || strcmp(k->finish, "content_filter") == 0
               ? "incomplete"
               : "completed";
}

rein_err ms__rs_stream(struct ms_body *b, const struct content *k)
{
    struct rs_stream s;
    const char *status = rs_status(k);
    rein_err rc = rs_init(&s, b, k);

    b->content_type = "text/event-stream; charset=utf-8";
    b->chunked = true;
    if (!rc)
        rc = rs_response_event(&s, "response.created", "in_progress");
    if (!rc)
        rc = rs_response_event(&s, "response.in_progress", "in_progress");
    if (!rc && k->has_reasoning)
        rc = rs_reasoning_events(&s);
    if (!rc && (k->has_text || k->has_refusal))
        rc = rs_message_events(&s);
    for (size_t i = 0; !rc && i < k->ncalls; i++)
        rc = rs_call_events(&s, i);
    if (!rc)
        rc = rs_response_event(
            &s, strcmp(status, "completed") == 0 ? "response.completed" : "response.incomplete",
            status);
    rein_free(s.ids.fc);
    return rc;
}

rein_err ms__rs_json(struct ms_body *b, const struct content *k)
{
    struct rs_stream s;
    struct rein_jw w;
    rein_err rc = rs_init(&s, b, k);

    if (!rc) {
        ms__ev_begin(b, &w, NULL);
        rs_response(&w, &s, rs_status(k));
        rc = ms__ev_end(b, &w, "");
    }
    rein_free(s.ids.fc);
    return rc;
}

/* The in-stream failure: an "error" event, then response.failed with the same error. */
rein_err ms__rs_stream_error(const json_t *ev, struct ms_body *out)
{
    const char *code = ms__str_member(ev, "code");
    const char *msg = ms__str_member(ev, "message");
    struct rein_jw w;
    rein_err rc;

    if (!code)
        code = ms__str_member(ev, "type");
    if (!code)
        code = "server_error";
    if (!msg)
        msg = "The server had an error while processing your request. Sorry about that!";
    ms__ev_begin(out, &w, "event: error\ndata: ");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "type");
    rein_jw_str(&w, "error");
    rein_jw_key(&w, "code");
    rein_jw_str(&w, code);
    rein_jw_key(&w, "message");
    rein_jw_str(&w, msg);
    rein_jw_key(&w, "param");
    rein_jw_null(&w);
    rein_jw_key(&w, "sequence_number");
    rein_jw_int(&w, 900);
    rein_jw_obj_end(&w);
    rc = ms__ev_end(out, &w, "\n\n");
    if (rc)
        return rc;
    ms__ev_begin(out, &w, "event: response.failed\ndata: ");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "type");
    rein_jw_str(&w, "response.failed");
    rein_jw_key(&w, "sequence_number");
    rein_jw_int(&w, 901);
    rein_jw_key(&w, "response");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "object");
    rein_jw_str(&w, "response");
    rein_jw_key(&w, "status");
    rein_jw_str(&w, "failed");
    rein_jw_key(&w, "error");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "code");
    rein_jw_str(&w, code);
    rein_jw_key(&w, "message");
    rein_jw_str(&w, msg);
    rein_jw_obj_end(&w);
    rein_jw_key(&w, "output");
    rein_jw_arr_begin(&w);
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    rein_jw_obj_end(&w);
    return ms__ev_end(out, &w, "\n\n");
}
