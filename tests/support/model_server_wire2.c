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
