/*
 * The gateway (include/rein/gateway.h): one client request from its bytes to its answer.
 *
 * A request is read by its wire's parser (openai.c, anthropic.c) into the neutral request,
 * its options come from the x-rein-* headers over the configuration, and its tools become a
 * registry (check.c). Then the rounds: each sends the conversation upstream through
 * rein_provider_send(); the reply's events arrive on this thread while it streams. Text goes
 * to a streaming client at once; each tool call, once the decoder has finished it, is checked
 * through the pipeline and, when it may be handed out, goes to the client (streaming) or into
 * the answer (JSON). After the reply:
 *   - an invalid call under reask: the reply, the invalid payloads and "accepted" notes for the
 *     calls already handed out join the conversation, and the model is asked again;
 *   - calls to server-side tools run through the pipeline of the gateway's registry, and the
 *     model is asked again unless it also called a client tool;
 *   - otherwise the answer ends.
 * The client never sees a re-ask or a server-side round except as the text they stream and
 * the calls they produce; the "rein" member of the answer says what happened.
 *
 * An upstream that fails before anything was sent is answered with its status, its error in
 * the client's shape and its Retry-After; after the stream began, with the wire's error event.
 * The upstream is asked with rein's retries off (the client's SDK retries, honouring
 * Retry-After, and a stream already forwarded cannot be asked for twice). The request's cancel
 * (the client went away) is the upstream request's cancel.
 */
#include "gateway/gateway_int.h"

#include "core/internal.h"

#include <rein/server.h>

#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define WHERE            REIN__GW_WHERE
#define DEFAULT_LEASE_MS 30000
#define ANSWER_ROOM      2048

/* ---- policies ------------------------------------------------------------------------------- */

static const char *const policy_names[] = {"reask", "pass", "error"};

const char *rein_gateway_policy_name(enum rein_gateway_policy p)
{
    return (unsigned)p < 3 ? policy_names[p] : "reask";
}

bool rein_gateway_policy_parse(const char *text, enum rein_gateway_policy *out)
{
    for (unsigned i = 0; text && i < 3; i++) {
        if (strcasecmp(text, policy_names[i]) == 0) {
            *out = (enum rein_gateway_policy)i;
            return true;
        }
    }
    return false;
}

/* ---- requests --------------------------------------------------------------------------------- */

void rein__gw_req_init(struct rein__gw_req *r, enum rein_gateway_api api)
{
    memset(r, 0, sizeof(*r));
    r->api = api;
    r->parallel = -1;
    r->temperature = -1;
    r->top_p = -1;
    r->h = rein_history_new();
    r->passthrough = json_object();
    r->dropped = json_array();
    r->unsupported = json_array();
}

void rein__gw_req_release(struct rein__gw_req *r)
{
    rein_history_free(r->h);
    rein_free(r->tools);
    rein_free(r->tool_choice);
    json_decref(r->stop);
    json_decref(r->passthrough);
    json_decref(r->made);
    json_decref(r->dropped);
    json_decref(r->unsupported);
    json_decref(r->doc);
    rein_free(r->model_own);
    memset(r, 0, sizeof(*r));
}

rein_err rein__gw_bad(struct rein__gw_bad *bad, const char *param, const char *fmt, ...)
{
    va_list ap;

    snprintf(bad->param, sizeof(bad->param), "%s", param ? param : "");
    va_start(ap, fmt);
    vsnprintf(bad->msg, sizeof(bad->msg), fmt, ap);
    va_end(ap);
    return REIN_EINVAL;
}

rein_err rein__gw_content_text(const json_t *content, const char *param, bool anthropic,
                               bool others, char **out, struct rein__gw_bad *bad)
{
    struct rein_buf b;
    size_t i;
    json_t *part;
    rein_err rc = REIN_OK;

    *out = NULL;
    if (json_is_string(content)) {
        *out = rein_strdup(json_string_value(content));
        return *out ? REIN_OK : REIN_ENOMEM;
    }
    if (json_is_null(content)) {
        *out = rein_strdup("");
        return *out ? REIN_OK : REIN_ENOMEM;
    }
    if (!json_is_array(content))
        return rein__gw_bad(bad, param, "Invalid type for '%s': expected a string or an array.",
                            param);
    rein_buf_init(&b, 0);
    json_array_foreach(content, i, part)
    {
        const char *type = json_string_value(json_object_get(part, "type"));
        const char *text = json_string_value(json_object_get(part, "text"));
        if (type && strcmp(type, "refusal") == 0 && !anthropic)
            continue; /* the refusal of an earlier answer: not text for the model */
        if (others && (!type || strcmp(type, "text") != 0 || !text))
            continue;
        if (!type || strcmp(type, "text") != 0 || !text) {
            rc = rein__gw_bad(bad, param,
                              "Invalid '%s': only text content is supported by rein's gateway "
                              "(part %zu is %s%.40s%s).",
                              param, i, type ? "'" : "", type ? type : "not a text part",
                              type ? "'" : "");
            break;
        }
        if (b.len)
            rc = rein_buf_addch(&b, '\n');
        if (!rc)
            rc = rein_buf_adds(&b, text);
        if (rc)
            break;
    }
    if (!rc) {
        *out = b.len ? rein_buf_detach(&b, NULL) : rein_strdup("");
        if (!*out)
            rc = REIN_ENOMEM;
    }
    rein_buf_release(&b);
    return rc;
}

/* ---- the gateway --------------------------------------------------------------------------- */

/* Looks up one server-side tool id (len bytes) in reg; *out is the tool or NULL with why. */
static const rein_tool *server_tool(const rein_registry *reg, const char *id, size_t len, char *why,
                                    size_t why_size)
{
    char name[REIN_TOOL_NAME_MAX + 1];
    const rein_tool *t;

    if (len == 0 || len > REIN_TOOL_NAME_MAX) {
        snprintf(why, why_size, "\"%.*s\" is not a tool id", (int)(len > 64 ? 64 : len), id);
        return NULL;
    }
    memcpy(name, id, len);
    name[len] = '\0';
    t = reg ? rein_registry_get(reg, name) : NULL;
    if (!t) {
        snprintf(why, why_size, "rein has no tool \"%s\"", name);
        return NULL;
    }
    /* Nobody is there to approve it: a destructive tool never runs behind the gateway. */
    if (rein_tool_is_destructive(t)) {
        snprintf(why, why_size, "\"%s\" is destructive and cannot run server-side", name);
        return NULL;
    }
    return t;
}

/* Parses "a,b" (spaces allowed; "none" or "" means none) into out; false with why. */
static bool server_tools(const rein_registry *reg, const char *list, const rein_tool **out,
                         size_t max, size_t *n, char *why, size_t why_size)
{
    const char *p = list;

    *n = 0;
    if (!list || strcmp(list, "none") == 0)
        return true;
    while (*p) {
        size_t len;
        const rein_tool *t;
        p += strspn(p, " \t,");
        len = strcspn(p, ",");
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (!len)
            break;
        if (*n == max) {
            snprintf(why, why_size, "at most %zu server-side tools", max);
            return false;
        }
        t = server_tool(reg, p, len, why, why_size);
        if (!t)
            return false;
        out[(*n)++] = t;
        p += len;
        p += strspn(p, " \t");
    }
    return true;
}

static rein_err keep_keys(rein_gateway *g, const char *keys)
{
    const char *p = keys;

    while (p && *p) {
        size_t len;
        char **k;
        p += strspn(p, " ,");
        len = strcspn(p, ",");
        while (len && p[len - 1] == ' ')
            len--;
        if (!len)
            break;
        k = rein_realloc(g->keys, (g->nkeys + 1) * sizeof(*k));
        if (!k)
            return REIN_ENOMEM;
        g->keys = k;
        g->keys[g->nkeys] = rein_strndup(p, len);
        if (!g->keys[g->nkeys])
            return REIN_ENOMEM;
        g->nkeys++;
        p += strcspn(p, ",");
    }
    return REIN_OK;
}

rein_gateway *rein_gateway_new(const struct rein_gateway_opts *o, rein_error *err)
{
    const rein_tool *tools[64];
    char why[160];
    rein_gateway *g;

    if (!o || !o->provider) {
        rein_error_set(err, REIN_EINVAL, "the gateway needs an upstream provider");
        return NULL;
    }
    if ((unsigned)o->on_invalid > REIN_GATEWAY_ERROR || o->max_reasks > REIN_GATEWAY_MAX_REASKS) {
        rein_error_set(err, REIN_EINVAL, "the gateway's policy or max_reasks is out of range");
        return NULL;
    }
    g = rein_calloc(1, sizeof(*g));
    if (!g) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    rein__gw_cache_init(&g->cache);
    if (rein__gw_kept_init(&g->kept,
                           o->keep_bytes == 0 ? REIN_GATEWAY_DEFAULT_KEEP_BYTES : o->keep_bytes,
                           o->keep_ms > 0 ? o->keep_ms : REIN_GATEWAY_DEFAULT_KEEP_MS) != REIN_OK) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto fail;
    }
    if (rein__gw_kept_init(&g->reasoned, g->kept.max_bytes, g->kept.keep_ms) != REIN_OK) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto fail;
    }
    g->provider = o->provider;
    g->reg = o->reg;
    g->store = o->store;
    g->metrics = o->metrics;
    g->on_invalid = o->on_invalid;
    g->max_reasks = o->max_reasks == 0  ? REIN_GATEWAY_DEFAULT_REASKS
                    : o->max_reasks < 0 ? 0
                                        : o->max_reasks;
    g->max_tool_rounds =
        o->max_tool_rounds > 0 ? o->max_tool_rounds : REIN_GATEWAY_DEFAULT_TOOL_ROUNDS;
    g->forward_key = o->forward_client_key;
    g->model_from_client = o->model_from_client;
    g->fill_defaults = o->fill_defaults;
    g->record_all = o->record_all;
    g->lease_ms = o->lease_ms > 0 ? o->lease_ms : DEFAULT_LEASE_MS;
    if (!server_tools(o->reg, o->tools, tools, 64, &g->ntools, why, sizeof(why))) {
        rein_error_set(err, REIN_EINVAL, "gateway tools: %s", why);
        goto fail;
    }
    g->tools = rein_calloc(g->ntools + 1, sizeof(const rein_tool *));
    if (!g->tools || keep_keys(g, o->api_keys) != REIN_OK) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto fail;
    }
    memcpy(g->tools, tools, g->ntools * sizeof(const rein_tool *));
    if (rein__gw_metrics_init(g, err) != REIN_OK)
        goto fail;
    if (rein__gw_bg_init(g, o->background_max == 0  ? REIN_GATEWAY_DEFAULT_BACKGROUND
                            : o->background_max < 0 ? 0
                                                    : o->background_max) != REIN_OK) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto fail;
    }
    return g;
fail:
    rein_gateway_free(g);
    return NULL;
}

void rein_gateway_free(rein_gateway *g)
{
    if (!g)
        return;
    rein__gw_bg_release(g); /* its jobs use everything else */
    rein__gw_cache_release(&g->cache);
    rein__gw_kept_release(&g->kept);
    rein__gw_kept_release(&g->reasoned);
    for (size_t i = 0; i < g->nkeys; i++) {
        memset(g->keys[i], 0, strlen(g->keys[i]));
        rein_free(g->keys[i]);
    }
    rein_free(g->keys);
    rein_free(g->tools);
    rein_free(g);
}

rein_err rein_gateway_models(rein_gateway *g, enum rein_gateway_api api, struct rein_buf *out)
{
    const struct rein__gw_wire *w = api == REIN_GATEWAY_ANTHROPIC ? &rein__gw_anthropic
                                    : api == REIN_GATEWAY_GEMINI  ? &rein__gw_gemini
                                                                  : &rein__gw_openai;

    return w->models(g, out);
}

/* ---- answering ------------------------------------------------------------------------------ */

rein_err rein__gw_s_error_body(struct rein__gw_ctx *c, const struct rein__gw_err *e)
{
    json_t *ext = rein__gw_rein_ext(c);
    rein_err rc;

    rein_buf_reset(&c->ev);
    rc = c->wire->error(e, ext, &c->ev);
    json_decref(ext);
    return rc ? rc : rein__gw_emit(c, NULL, c->ev.ptr, c->ev.len);
}

void rein__gw_rein_member(const struct rein__gw_ctx *c, struct rein_jw *w)
{
    json_t *ext = rein__gw_rein_ext(c);

    if (!ext)
        return;
    REIN_JW_KEY(w, "rein");
    rein_jw_json(w, ext);
    json_decref(ext);
}

static const char *hdr(const struct rein__gw_ctx *c, const char *name)
{
    return c->call->header ? c->call->header(c->call->header_data, name) : NULL;
}

/* A sink answer's code into the context: a client gone, or the sink's error. */
static rein_err sink_said(struct rein__gw_ctx *c, rein_err rc)
{
    if (rc == REIN_ECANCELED)
        c->gone = true;
    else if (rc)
        c->sink_rc = rc;
    return rc;
}

/* Before an event: nothing gone wrong, and the stream started. */
static rein_err stream_ready(struct rein__gw_ctx *c)
{
    rein_err rc;

    if (c->gone)
        return REIN_ECANCELED;
    if (c->sink_rc)
        return c->sink_rc;
    if (!c->started) {
        rc = c->sink->stream_start(c->sink->data);
        if (rc) {
            c->sink_rc = rc;
            return rc;
        }
        c->started = true;
    }
    return REIN_OK;
}

/* Hands the frames gathered so far to the sink (sink->stream_frames). */
static rein_err hand_frames(struct rein__gw_ctx *c)
{
    if (!c->frames.len || c->gone || c->sink_rc)
        return REIN_OK;
    return sink_said(c, c->sink->stream_frames(c->sink->data, &c->frames));
}

/* Frames gathered past this are handed over at once: the bound the sink kept before (decision
 * 0065), on the memory one upstream read can take here. */
#define FRAMES_HAND_AT ((size_t)60 << 10)
/* A stream's frames buffer starts with room for a short stream's whole answer (the bench's
 * text and call: 2.2 KiB on the OpenAI wire, 1.7 KiB on Anthropic's), and a stream that
 * outgrows it gets room for a whole batch at once, so a batch grows by one copy of at most
 * this much, not by a realloc per doubling (decision 0075). */
#define FRAMES_FIRST ((size_t)4 << 10)
#define FRAMES_ROOM  ((size_t)64 << 10)
/* More than the head and blank line rein_sse_frame_line() puts around an event's data. */
#define FRAME_EDGES 530

/* Room for n more bytes, the buffer's size chosen as above: a stream comes here once or twice
 * per buffer, not per frame. The sizes are powers of two, which rein_buf_grow() keeps exact. */
static rein_err frames_grow(struct rein_buf *f, size_t n)
{
    size_t want = f->alloc < FRAMES_FIRST ? FRAMES_FIRST : FRAMES_ROOM;

    if (n >= SIZE_MAX - f->len)
        return REIN_ETOOBIG;
    if (want <= f->len + n)
        want = f->len + n + 1; /* a frame larger than the batch: as rein_buf_grow() grows */
    return rein_buf_grow(f, want - f->len - 1);
}

rein_err rein__gw_frame_room(struct rein__gw_ctx *c, size_t n)
{
    rein_err rc = stream_ready(c);

    if (rc)
        return rc;
    if (n >= c->frames.alloc - c->frames.len)
        rc = frames_grow(&c->frames, n);
    return rc ? sink_said(c, rc) : REIN_OK; /* the frames are the sink's events */
}

rein_err rein__gw_framed(struct rein__gw_ctx *c)
{
    /* a sink without flush sends each event as it comes */
    return c->frames.len >= FRAMES_HAND_AT || !c->sink->flush ? hand_frames(c) : REIN_OK;
}

rein_err rein__gw_frame_text(struct rein__gw_ctx *c, const char *p, size_t n, const char *tail,
                             size_t tlen)
{
    struct rein_buf *f = &c->frames, *h = &c->frame_head;
    size_t start;
    rein_err rc = rein__gw_frame_room(c, h->len + n + tlen);

    if (rc)
        return rc;
    start = f->len;
    memcpy(f->ptr + start, h->ptr, h->len);
    f->len = start + h->len;
    f->ptr[f->len] = '\0';
    /* a delta of plain text (the room for it is reserved) without the escaper's call */
    if (n < 8 || !rein__json_copy_plain(f, p, n))
        rc = rein_json_escape(f, p, n);
    if (!rc && tlen < f->alloc - f->len) {
        memcpy(f->ptr + f->len, tail, tlen);
        f->len += tlen;
        f->ptr[f->len] = '\0';
    } else if (!rc) {
        rc = rein_buf_add(f, tail, tlen);
    }
    if (rc) {
        rein_buf_truncate(f, start);
        return rc;
    }
    return rein__gw_framed(c);
}

rein_err rein__gw_emit(struct rein__gw_ctx *c, const char *event, const char *data, size_t len)
{
    rein_err rc;

    /* one line of data, as the sink's contract has it (its frames are made unchecked) */
    assert(len == 0 || (!memchr(data, '\n', len) && !memchr(data, '\r', len)));
    if (c->sink->stream_frames) {
        rc = rein__gw_frame_room(c, len + FRAME_EDGES);
        if (rc)
            return rc;
        rc = rein_sse_frame_line(&c->frames, event, data, len);
        return rc ? sink_said(c, rc) : rein__gw_framed(c);
    }
    rc = stream_ready(c);
    return rc ? rc : sink_said(c, c->sink->stream_event(c->sink->data, event, data, len));
}

/*
 * Sends the events emitted so far when the sink holds them (sink->flush): called whenever the
 * gateway is about to wait (the upstream's next bytes, a server-side tool), so no event is
 * held across a wait, and each upstream read reaches the client in one write.
 */
static void flush_stream(void *userdata)
{
    struct rein__gw_ctx *c = userdata;

    if (!c->started || c->gone || c->sink_rc || !c->sink->flush)
        return;
    /* a client gone at a flush counts as one gone at an event (rein__gw_emit) */
    if (hand_frames(c) == REIN_OK)
        (void)sink_said(c, c->sink->flush(c->sink->data));
}

/* Hands the events the sink holds to the stream's own timers (sink->queue), without a write:
 * after each upstream reply, before the records and checks that follow it. */
static void queue_stream(struct rein__gw_ctx *c)
{
    if (!c->started || c->gone || c->sink_rc)
        return;
    if (hand_frames(c) == REIN_OK && c->sink->queue)
        (void)sink_said(c, c->sink->queue(c->sink->data));
}

/*
 * The upstream's headers that rein keeps (its request id, its rate limits) go to the client
 * with the answer, once, as they came; but OpenAI's x-request-id, whose name is rein's own id
 * (the server's X-Request-Id, which the OpenAI SDK reads as _request_id), goes as
 * x-upstream-request-id (decision 0086).
 */
static void pass_headers(struct rein__gw_ctx *c, const rein_model_headers *h)
{
    const char *name, *value;

    if (c->headers_passed || c->started || !rein_model_headers_count(h))
        return;
    c->headers_passed = true;
    for (size_t i = 0; rein_model_headers_at(h, i, &name, &value); i++) {
        if (strcmp(name, "x-request-id") == 0)
            name = "x-upstream-request-id";
        if (c->sink->header(c->sink->data, name, value) != REIN_OK)
            return; /* out of memory: the answer goes without the rest */
    }
}

/* Answers with a whole body. */
static void reply(struct rein__gw_ctx *c, int status, const struct rein_buf *body)
{
    rein_err rc;

    if (c->last)
        pass_headers(c, rein_model_response_headers(c->last));
    rc = c->sink->reply(c->sink->data, status, "application/json", body->ptr, body->len);

    if (rc && !c->sink_rc)
        c->sink_rc = rc;
}

/* An error answer: a body when nothing was sent yet, the wire's error event after that. */
static void answer_error(struct rein__gw_ctx *c, struct rein__gw_err *e)
{
    json_t *ext = e->status == 422 || c->reasks ? rein__gw_rein_ext(c) : NULL;
    struct rein_buf b;

    if (c->gone)
        return;
    if (c->started) {
        (void)c->wire->s_error(c, e);
        json_decref(ext);
        return;
    }
    rein_buf_init(&b, 0);
    if (c->wire->error(e, ext, &b) == REIN_OK)
        reply(c, e->status, &b);
    else
        c->sink_rc = c->sink->reply(c->sink->data, 500, "application/json", "{}", 2);
    rein_buf_release(&b);
    json_decref(ext);
}

static void answer_errorf(struct rein__gw_ctx *c, int status, const char *param, const char *fmt,
                          ...) REIN_PRINTF(4, 5);

static void answer_errorf(struct rein__gw_ctx *c, int status, const char *param, const char *fmt,
                          ...)
{
    struct rein__gw_err e = {.status = status, .param = param};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(e.message, sizeof(e.message), fmt, ap);
    va_end(ap);
    if (status == 422) {
        e.type = "invalid_tool_calls";
        e.code = "invalid_tool_calls";
    }
    answer_error(c, &e);
}

int rein__gw_status_for(rein_err rc)
{
    switch (rc) {
    case REIN_ETIMEDOUT:
        return 504;
    case REIN_EIO:
    case REIN_EPROVIDER:
    case REIN_EINVAL:
        return 502;
    case REIN_ENOMEM:
        return 500;
    default:
        return 502;
    }
}

const char *rein__gw_finish(const struct rein__gw_ctx *c, bool anthropic)
{
    enum rein_finish f = c->last ? rein_model_response_finish(c->last) : REIN_FINISH_STOP;
    const char *own = c->last ? rein_model_response_finish_reason(c->last) : NULL;

    if (c->nout)
        return anthropic ? "tool_use" : "tool_calls";
    /* The upstream's own word, when it speaks the client's wire and the word is one of it. */
    if (own && strcmp(rein_provider_wire(c->g->provider), c->wire->name) == 0 &&
        f != REIN_FINISH_TOOL_CALLS && f != REIN_FINISH_NONE)
        return own;
    switch (f) {
    case REIN_FINISH_LENGTH:
        return anthropic ? "max_tokens" : "length";
    case REIN_FINISH_CONTENT_FILTER:
        return anthropic ? "refusal" : "content_filter";
    default:
        return anthropic ? "end_turn" : "stop";
    }
}

json_t *rein__gw_rein_ext(const struct rein__gw_ctx *c)
{
    const json_t *dropped = c->mreq ? rein_model_request_dropped(c->mreq) : NULL;
    json_t *o;

    if (!c->reasks && !json_array_size(c->problems) && !json_array_size(c->repairs) &&
        !json_array_size(c->converted) && !json_array_size(c->renamed) && !dropped)
        return NULL;
    o = json_pack("{s:s, s:i}", "trace_id", c->trace_id, "reasks", c->reasks);
    if (!o)
        return NULL;
    if (c->o.conversation[0])
        json_object_set_new(o, "conversation_id", json_string(c->o.conversation));
    if (json_array_size(c->problems))
        json_object_set(o, "problems", c->problems);
    if (json_array_size(c->repairs))
        json_object_set(o, "repairs", c->repairs);
    if (json_array_size(c->converted))
        json_object_set(o, "converted", c->converted);
    if (json_array_size(c->renamed))
        json_object_set(o, "renamed_ids", c->renamed);
    /* What the upstream's schema subset could not carry: the model saw a looser schema. */
    if (dropped)
        json_object_set(o, "schema_dropped", (json_t *)dropped);
    return o;
}

/* ---- options of one request ------------------------------------------------------------------ */

static bool is_server_key(const rein_gateway *g, const char *key)
{
    for (size_t i = 0; i < g->nkeys; i++) {
        if (strcmp(g->keys[i], key) == 0)
            return true;
    }
    return false;
}

static const char *call_hdr(const struct rein_gateway_call *call, const char *name)
{
    return call->header ? call->header(call->header_data, name) : NULL;
}

/* The key the client presented: its x-api-key (Anthropic's), x-goog-api-key (Gemini's) or
 * Bearer token, or NULL. */
static const char *presented_key(const struct rein_gateway_call *call)
{
    const char *a = call_hdr(call, "x-api-key");

    if (!a || !a[0])
        a = call_hdr(call, "x-goog-api-key");
    if (!a || !a[0]) {
        a = call_hdr(call, "Authorization");
        if (a && strncasecmp(a, "Bearer ", 7) == 0)
            a += 7 + strspn(a + 7, " ");
        else
            a = NULL;
    }
    return a && a[0] ? a : NULL;
}

/* The client's own key (forward_client_key). */
static const char *client_key_of(const rein_gateway *g, const struct rein_gateway_call *call)
{
    const char *a = presented_key(call);

    /* A key of this server authenticates the client to rein; it never goes upstream. */
    return a && !is_server_key(g, a) ? a : NULL;
}

static const char *client_key(const struct rein__gw_ctx *c)
{
    return client_key_of(c->g, c->call);
}

static const char betas_refused[] = "anthropic-beta cannot be forwarded";

/* The client's betas (interleaved thinking, a longer context, a tool's version) go with the
 * request they come with; REIN_EINVAL for a header line the request refuses. */
static rein_err client_betas(rein_model_request *m, const struct rein_gateway_call *call)
{
    const char *beta = call_hdr(call, "anthropic-beta");

    return beta ? rein_model_request_add_header(m, "anthropic-beta", beta) : REIN_OK;
}

static bool read_options(struct rein__gw_ctx *c, struct rein__gw_bad *bad)
{
    rein_gateway *g = c->g;
    const char *v;
    char why[160];
    long n;
    char *end;

    c->o.policy = g->on_invalid;
    c->o.max_reasks = g->max_reasks;
    c->o.fill_defaults = g->fill_defaults;
    memcpy(c->o.server, g->tools, g->ntools * sizeof(const rein_tool *));
    c->o.nserver = g->ntools;
    if ((v = hdr(c, "x-rein-on-invalid")) && !rein_gateway_policy_parse(v, &c->o.policy)) {
        rein__gw_bad(bad, "x-rein-on-invalid",
                     "x-rein-on-invalid must be reask, pass or error (got \"%.40s\")", v);
        return false;
    }
    if ((v = hdr(c, "x-rein-max-reasks"))) {
        n = strtol(v, &end, 10);
        if (end == v || *end || n < 0 || n > REIN_GATEWAY_MAX_REASKS) {
            rein__gw_bad(bad, "x-rein-max-reasks", "x-rein-max-reasks must be 0-%d (got \"%.40s\")",
                         REIN_GATEWAY_MAX_REASKS, v);
            return false;
        }
        c->o.max_reasks = (int)n;
    }
    if ((v = hdr(c, "x-rein-fill-defaults"))) {
        bool yes = strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0;
        if (!yes && strcasecmp(v, "false") != 0 && strcmp(v, "0") != 0) {
            rein__gw_bad(bad, "x-rein-fill-defaults", "x-rein-fill-defaults must be true or false");
            return false;
        }
        c->o.fill_defaults = yes;
    }
    if ((v = hdr(c, "x-rein-tools")) &&
        !server_tools(g->reg, v, c->o.server, 64, &c->o.nserver, why, sizeof(why))) {
        rein__gw_bad(bad, "x-rein-tools", "x-rein-tools: %s", why);
        return false;
    }
    if ((v = hdr(c, "x-rein-conversation"))) {
        if (!rein_store_id_is_valid(v)) {
            rein__gw_bad(bad, "x-rein-conversation",
                         "x-rein-conversation must be 1-64 characters of A-Z a-z 0-9 _ . - (not "
                         "starting with '.', no \"..\")");
            return false;
        }
        if (!g->store) {
            rein__gw_bad(bad, "x-rein-conversation", "this server keeps no store to record in");
            return false;
        }
        snprintf(c->o.conversation, sizeof(c->o.conversation), "%s", v);
    } else if (g->record_all && g->store) {
        rein_id_new("conv_", c->o.conversation);
    }
    if (g->forward_key)
        c->o.client_key = client_key(c);
    return true;
}

/* ---- the upstream request -------------------------------------------------------------------- */

/*
 * What the upstream's model answers 400 to (rein_provider_refuses, decision 0105): the client's
 * members that would go as they are, and its stop sequences, left out and named as the client
 * wrote them, as sampling settings are (decision 0101). xAI's reasoning models refuse stop and
 * the penalties; Groq logprobs.
 */
static rein_err drop_refused(struct rein__gw_ctx *c)
{
    const char *stop = c->wire == &rein__gw_anthropic ? "stop_sequences"
                       : c->wire == &rein__gw_gemini  ? "generationConfig.stopSequences"
                                                      : "stop";
    const char *key;
    json_t *v;
    void *tmp;

    json_object_foreach_safe(c->req.passthrough, tmp, key, v)
    {
        if (!rein_provider_refuses(c->g->provider, c->mreq, key))
            continue;
        /* made when first needed: nearly every request has nothing to leave out */
        if ((!c->refused && !(c->refused = json_array())) ||
            json_array_append_new(c->refused, json_string(key)))
            return REIN_ENOMEM;
        (void)json_object_del(c->req.passthrough, key);
    }
    if (json_array_size(c->req.stop) && rein_provider_refuses(c->g->provider, c->mreq, "stop")) {
        if (rein_model_request_set_stop(c->mreq, NULL, 0) ||
            (!c->refused && !(c->refused = json_array())) ||
            json_array_append_new(c->refused, json_string(stop)))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

/* The members of the request that go upstream besides what rein_model_request carries. */
static rein_err upstream_extra(struct rein__gw_ctx *c, struct rein__gw_bad *bad)
{
    const char *wire = rein_provider_wire(c->g->provider);
    struct rein__gw_req *r = &c->req;
    bool own = strcmp(wire, c->wire->name) == 0, read_as = strcmp(wire, rein__gw_body_wire(c)) == 0;
    /* What the upstream has no place for: on another wire, every member only the client's
     * wire has; on the wire the body was read as, what the conversion found no place for. */
    const json_t *refused = own       ? NULL
                            : read_as ? json_object_get(c->conv_extra, "unsupported")
                                      : r->unsupported;
    /* a chat body (a chat client's) to a Responses upstream: OpenAI's two wires translate
     * each other's members (decision 0088) */
    bool chat_to_responses = strcmp(wire, rein__gw_responses.name) == 0 &&
                             strcmp(rein__gw_body_wire(c), rein__gw_openai.name) == 0;
    rein_err out_rc;

    /* the answer's form: the neutral request's for another wire (a chat client's goes to a
     * Responses upstream in its own shape, below), checked for every one (decision 0100);
     * before the reasoning, which takes what an Anthropic output_config holds beside it */
    out_rc = rein__gw_output(c, !own && !read_as && !chat_to_responses, bad);
    if (out_rc)
        return out_rc;
    /* a chat client's effort to a Responses upstream too: the wire writes the model's own word,
     * and rein__gw_fit leaves out what the model refuses while it reasons */
    if (!own && !read_as)
        rein__gw_reasoning(c);
    if (!own && rein__gw_fit(c))
        return REIN_ENOMEM;
    if (!own && chat_to_responses) {
        /* a chat client's members the Responses API has in its own shape go up in it */
        json_t *members = NULL;
        rein_err rc = rein__gw_rs_chat_members(r, &members, bad);
        if (rc)
            return rc;
        if (c->reasoning_name) /* the wire writes it, in the model's own word */
            json_object_del(members, "reasoning");
        rein_model_request_set_extra(c->mreq, members);
        json_decref(members);
    }
    if (json_array_size(refused)) {
        char *names = rein_json_dumps(refused);
        rein_err rc = rein__gw_bad(bad, json_string_value(json_array_get(refused, 0)),
                                   "%s cannot be forwarded: the upstream speaks the %s wire, not "
                                   "the %s one",
                                   names ? names : "a member", wire, c->wire->name);
        rein_free(names);
        return rc;
    }
    if (own || read_as) {
        /* The client's own wire (or the one its body was read as): every member rein does not
         * read goes as it is, and so do an Anthropic client's betas. */
        rein_err rc = c->wire == &rein__gw_anthropic ? client_betas(c->mreq, c->call) : REIN_OK;
        rein_model_request_set_extra(c->mreq, r->passthrough);
        return rc == REIN_EINVAL ? rein__gw_bad(bad, "anthropic-beta", "%s", betas_refused) : rc;
    }
    /* What the other wire has too (top_p, stop) is in the neutral request, which it writes
     * under its own names. */
    return REIN_OK;
}

static void on_event(const struct rein_model_event *ev, void *userdata);

/* The client's stop sequences go into the neutral field, which each upstream wire writes
 * under its own name; a wire without one, or with fewer than asked, is a 400 naming it. */
static rein_err upstream_stop(struct rein__gw_ctx *c, struct rein__gw_bad *bad)
{
    const char *param = c->wire == &rein__gw_anthropic ? "stop_sequences"
                        : c->wire == &rein__gw_gemini  ? "generationConfig.stopSequences"
                                                       : "stop";
    size_t n = json_array_size(c->req.stop);
    const char **seq;
    rein_error err;
    rein_err rc;

    if (n > REIN_STOP_MAX)
        return rein__gw_bad(bad, param, "%s: at most %d stop sequences", param, REIN_STOP_MAX);
    seq = rein_calloc(n ? n : 1, sizeof(*seq));
    if (!seq)
        return REIN_ENOMEM;
    for (size_t i = 0; i < n; i++)
        seq[i] = json_string_value(json_array_get(c->req.stop, i));
    rc = rein_model_request_set_stop(c->mreq, seq, n);
    rein_free(seq);
    if (rc == REIN_EINVAL)
        return rein__gw_bad(bad, param, "%s: a stop sequence must not be empty", param);
    if (rc)
        return rc;
    rc = rein_provider_prepare(c->g->provider, c->mreq, &err);
    if (rc == REIN_EINVAL)
        return rein__gw_bad(bad, param, "%s cannot be forwarded: %s", param, err.msg);
    return rc;
}

static rein_err upstream_request(struct rein__gw_ctx *c, struct rein__gw_bad *bad)
{
    struct rein__gw_req *r = &c->req;
    const struct rein__gw_tools *t = c->tools;
    rein_model_request *m = rein_model_request_new();
    rein_err rc = m ? REIN_OK : REIN_ENOMEM;
    bool native = strcmp(rein_provider_wire(c->g->provider), rein__gw_responses.name) == 0;

    c->mreq = m;
    /* The client's tools as the cache entry keeps them, and the registry's tools: the same
     * objects on every request with these tools, so the provider encodes the list once. A
     * custom tool a Responses upstream takes as one is not a function there (decision 0096). */
    for (size_t i = 0; !rc && t && i < t->nclient; i++)
        rc = native && t->client[i].native
                 ? REIN_OK
                 : rein_model_request_add_tool_shared(
                       m, t->client[i].name, t->client[i].description, t->client[i].parameters);
    if (!rc && t && t->wire_tools)
        rc = rein_model_request_set_wire_tools(m, rein__gw_body_wire(c), t->wire_tools,
                                               t->wire_tools_len);
    if (!rc && native)
        rc = rein__gw_rs_native_tools(c);
    for (size_t i = 0; !rc && i < c->o.nserver; i++)
        rc = rein_model_request_add_tool_shared(m, rein_tool_id(c->o.server[i]),
                                                rein_tool_description(c->o.server[i]),
                                                rein_tool_parameters(c->o.server[i]));
    if (!rc && r->tool_choice)
        rc = rein_model_request_set_tool_choice(m, r->tool_choice);
    if (!rc && c->g->model_from_client && r->model)
        rc = rein_model_request_set_model(m, r->model);
    if (!rc && c->o.client_key)
        rc = rein_model_request_set_api_key(m, c->o.client_key);
    if (rc)
        return rc;
    if (r->parallel >= 0)
        rein_model_request_set_parallel_tools(m, r->parallel > 0);
    rein_model_request_set_max_tokens(m, r->max_tokens);
    rein_model_request_set_temperature(m, r->temperature);
    rein_model_request_set_top_p(m, r->top_p);
    rein_model_request_set_stream(m, r->stream);
    rein_model_request_set_retries(m, 0);
    rein_model_request_set_cancel(m, c->call->cancel);
    rein_model_request_set_events(m, on_event, c);
    rein_model_request_set_on_wait(m, flush_stream, c);
    rc = upstream_stop(c, bad);
    if (!rc)
        rc = drop_refused(c);
    return rc ? rc : upstream_extra(c, bad);
}

/* ---- one round --------------------------------------------------------------------------------- */

static void round_reset(struct rein__gw_ctx *c)
{
    for (size_t i = 0; i < c->nrc; i++) {
        rein_call_result_free(c->rc[i].res);
        rein_free(c->rc[i].id);
        rein_free(c->rc[i].name);
        rein_free(c->rc[i].args);
    }
    c->nrc = 0;
    c->round_in = c->round_out = -1;
}

static rein_err grow_out(struct rein__gw_ctx *c)
{
    struct rein__gw_call *n;
    size_t cap;

    if (c->nout < c->out_cap)
        return REIN_OK;
    cap = c->out_cap ? c->out_cap * 2 : 8;
    n = rein_realloc(c->out, cap * sizeof(*n));
    if (!n)
        return REIN_ENOMEM;
    c->out = n;
    c->out_cap = cap;
    return REIN_OK;
}

/* Hands call i of the round (call, borrowed) to the client: into the answer, and out now when
 * streaming. */
static rein_err hand_out(struct rein__gw_ctx *c, size_t i, const rein_model_call *call)
{
    const char *sig = rein_model_call_signature(call);
    struct rein__gw_round_call *rc = &c->rc[i];
    struct rein__gw_call *o;
    size_t sent_len;
    const char *sent = rein_call_result_sent_name(rc->res, &sent_len);

    if (grow_out(c))
        return REIN_ENOMEM;
    o = &c->out[c->nout];
    memset(o, 0, sizeof(*o));
    o->id = rein_strdup(rc->id);
    o->name = rein_strdup(rc->name);
    o->args = rein_strdup(rc->args);
    o->signature = sig ? rein_strdup(sig) : NULL;
    o->from_text = rc->from_text;
    o->invalid = rc->verdict == REIN__GW_INVALID;
    if (rein_call_result_ok(rc->res) && rein_call_result_repair(rc->res) != REIN_REPAIR_EXACT)
        o->sent_name = rein_strndup(sent, sent_len);
    c->nout++;
    if (!o->id || !o->name || !o->args || (sig && !o->signature))
        return REIN_ENOMEM;
    if (rein__gw_tools_is_custom(c->tools, o->name) && !(o->input = rein__gw_custom_input(o->args)))
        return REIN_ENOMEM;
    rc->emitted = true;
    if (c->streaming)
        return c->wire->s_call(c, o, c->nout - 1);
    return REIN_OK;
}

/* The round's text held back from the stream goes out (decision 0100): its answer was
 * checked, or it goes with calls (which are checked as calls, not as an answer), and the
 * rest of the round's text follows it as it comes. */
static void release_held(struct rein__gw_ctx *c)
{
    c->hold = false;
    if (!c->held.len)
        return;
    if (c->session && rein_buf_add(&c->streamed, c->held.ptr, c->held.len))
        c->sink_rc = REIN_ENOMEM;
    else
        (void)c->wire->s_text(c, REIN_MEV_TEXT_DELTA, c->held.ptr, c->held.len);
    rein_buf_reset(&c->held);
}

static void on_call(struct rein__gw_ctx *c, const rein_model_call *call)
{
    size_t i;
    rein_err rc;

    if (c->hold)
        release_held(c);
    rc = rein__gw_check(c, call, &i);

    if (rc) {
        c->sink_rc = c->sink_rc ? c->sink_rc : rc;
        return;
    }
    rein__gw_record_check(c, i);
    if (c->rc[i].verdict == REIN__GW_VALID ||
        (c->rc[i].verdict == REIN__GW_INVALID && c->o.policy == REIN_GATEWAY_PASS)) {
        rc = hand_out(c, i, call);
        if (rc && rc != REIN_ECANCELED && !c->sink_rc)
            c->sink_rc = rc;
    }
}

static void on_event(const struct rein_model_event *ev, void *userdata)
{
    struct rein__gw_ctx *c = userdata;

    if (c->gone || c->sink_rc)
        return;
    switch (ev->type) {
    case REIN_MEV_TEXT_DELTA:
    case REIN_MEV_REASONING_DELTA:
    case REIN_MEV_REFUSAL_DELTA:
        if (!c->streaming)
            break;
        if (ev->type == REIN_MEV_TEXT_DELTA && c->hold) {
            if (rein_buf_add(&c->held, ev->text, ev->len))
                c->sink_rc = REIN_ENOMEM;
            break;
        }
        /* what the client got is kept for the record only (reply_message in record.c) */
        if (ev->type == REIN_MEV_TEXT_DELTA && c->session &&
            rein_buf_add(&c->streamed, ev->text, ev->len))
            c->sink_rc = REIN_ENOMEM;
        else
            (void)c->wire->s_text(c, ev->type, ev->text, ev->len);
        break;
    case REIN_MEV_REASONING_SIGNATURE:
    case REIN_MEV_REDACTED_REASONING:
    case REIN_MEV_SERVER_BLOCK:
    case REIN_MEV_LOGPROBS:
    case REIN_MEV_ANNOTATIONS:
    case REIN_MEV_TEXT_BLOCK:
    case REIN_MEV_CITATION:
    case REIN_MEV_REASONING_ITEM:
    case REIN_MEV_OUTPUT_ITEM:
    case REIN_MEV_OUTPUT_ITEM_EVENT:
        if (c->streaming && c->wire->s_block)
            (void)c->wire->s_block(c, ev->type, ev->text, ev->len);
        break;
    case REIN_MEV_TOOL_CALL_END:
        on_call(c, ev->call);
        break;
    case REIN_MEV_USAGE:
        c->round_in = ev->input_tokens;
        c->round_out = ev->output_tokens;
        break;
    case REIN_MEV_HEADERS:
        /* A stream's headers go out before its first byte: the first round's. */
        if (c->streaming)
            pass_headers(c, ev->headers);
        break;
    case REIN_MEV_RETRY:
        /* Retries are off for the gateway's requests; a retry here would repeat what the
         * client already has. */
        rein_log(REIN_LOG_WARN, WHERE, "%s: the upstream reply is asked for again", c->trace_id);
        break;
    default:
        break;
    }
}

/* Whether an upstream of wire up writes its errors as a client of wire client reads them:
 * its own wire, or OpenAI's other API ({message, type, param, code} on both), so that a code
 * such as context_length_exceeded reaches the client as it came. */
static bool same_errors(const char *up, const char *client)
{
    return strcmp(up, client) == 0 ||
           ((strcmp(up, rein__gw_openai.name) == 0 || strcmp(up, rein__gw_responses.name) == 0) &&
            (strcmp(client, rein__gw_openai.name) == 0 ||
             strcmp(client, rein__gw_responses.name) == 0));
}

/* The upstream failed: its status, error and Retry-After, in the client's shape. */
static void upstream_error(struct rein__gw_ctx *c, rein_err rc, const rein_error *err,
                           const rein_model_response *resp)
{
    struct rein__gw_err e = {.status = rein__gw_status_for(rc)};
    const json_t *up = resp ? rein_model_response_error(resp) : NULL;
    const char *type = json_string_value(json_object_get(up, "type"));
    int64_t after = resp ? rein_model_response_retry_after_ms(resp) : -1;
    char v[32];

    if (rc == REIN_EHTTP && err->detail >= 400 && err->detail <= 599)
        e.status = err->detail;
    else if (type && strcmp(type, "overloaded_error") == 0)
        e.status = 529;
    else if (type && strcmp(type, "rate_limit_error") == 0)
        e.status = 429;
    e.upstream = up;
    e.upstream_same = same_errors(rein_provider_wire(c->g->provider), c->wire->name);
    e.request_id = resp ? rein_model_response_request_id(resp) : NULL;
    /* The failed response's headers, or none: an earlier round's limits are not this answer's.
     * A 429's rate limits matter most: they say when to come back. */
    if (resp)
        pass_headers(c, rein_model_response_headers(resp));
    c->headers_passed = true;
    snprintf(e.message, sizeof(e.message), "upstream: %s",
             err->msg[0] ? err->msg : rein_strerror(rc));
    if (after >= 0 && !c->started) {
        snprintf(v, sizeof(v), "%lld", (long long)((after + 999) / 1000));
        (void)c->sink->header(c->sink->data, "Retry-After", v);
        snprintf(v, sizeof(v), "%lld", (long long)after);
        (void)c->sink->header(c->sink->data, "retry-after-ms", v);
    }
    answer_error(c, &e);
}

/* ---- what joins the conversation ------------------------------------------------------------ */

static const char accepted_note[] =
    "{\"status\":\"accepted\",\"message\":\"This call is valid and was passed on to be run; its "
    "result comes in a later message. Do not make this call again.\"}";

/* The tool message content of call i of the round (new), and whether it reports an error. */
static char *result_text(struct rein__gw_ctx *c, size_t i, rein_call_result *ran, bool *is_error)
{
    struct rein__gw_round_call *rc = &c->rc[i];
    struct rein_buf b;
    struct rein_jw w;

    *is_error = false;
    if (rc->verdict == REIN__GW_VALID || (rc->verdict == REIN__GW_INVALID && rc->emitted))
        return rein_strdup(accepted_note);
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_call_result_write_for_model(ran ? ran : rc->res, &w);
    if (rein_jw_finish(&w) != REIN_OK) {
        rein_buf_release(&b);
        return NULL;
    }
    *is_error = !rein_call_result_ok(ran ? ran : rc->res);
    return rein_buf_detach(&b, NULL);
}

/* Runs server-side call i of the round through the gateway's registry; *out is the result. */
static rein_err run_server(struct rein__gw_ctx *c, size_t i, rein_call_result **out)
{
    struct rein__gw_round_call *rc = &c->rc[i];
    rein_ledger *ledger = c->session ? rein_ledger_new() : NULL;
    struct rein_call_input in = {
        .call_id = rc->id,
        .name = rc->name,
        .args_text = rc->args,
        .args_len = strlen(rc->args),
        .trace_id = c->trace_id,
    };
    struct rein_call_opts o = {.ledger = ledger, .cancel = c->call->cancel, .exact_name = true};
    rein_error err;
    rein_err rcode;

    if (ledger)
        rein_ledger_set_hook(ledger, rein__gw_ledger_hook, c);
    flush_stream(c); /* a tool may take a while: the client has what was streamed so far */
    rcode = rein_call_run(c->g->reg, &in, &o, out, &err);
    rein_ledger_free(ledger);
    if (rcode == REIN_OK)
        rein_metrics_tool_call(c->g->metrics, rein_call_result_tool_name(*out),
                               rein_call_status_name(rein_call_result_status(*out)));
    return rcode;
}

/*
 * The round joins the conversation: the reply as the model made it (ids and names as the
 * answer has them), then a tool message for each call: the invalid payload, the server-side
 * tool's result, or the note that a call was accepted and handed out.
 */
static rein_err append_round(struct rein__gw_ctx *c, const rein_model_response *resp)
{
    json_t *msg = rein_model_response_message(resp);
    json_t *calls = json_object_get(msg, "tool_calls");
    rein_err rc = msg ? REIN_OK : REIN_ENOMEM;
    size_t k;
    json_t *call;

    /* The response's calls and the round's checks are in the same order (one per END). */
    json_array_foreach(calls, k, call)
    {
        if (k >= c->nrc)
            break;
        if (json_object_set_new(call, "id", json_string(c->rc[k].id)) ||
            json_object_set_new(call, "name", json_string(c->rc[k].name)))
            rc = REIN_ENOMEM;
    }
    if (!rc)
        rc = rein_history_append(c->req.h, msg, NULL);
    json_decref(msg);
    for (size_t i = 0; !rc && i < c->nrc; i++) {
        rein_call_result *ran = NULL;
        bool is_error;
        char *text;
        if (c->rc[i].verdict == REIN__GW_SERVER && (rc = run_server(c, i, &ran)) != REIN_OK)
            break;
        text = result_text(c, i, ran, &is_error);
        rein_call_result_free(ran);
        rc = text ? rein_history_add_tool_result(c->req.h, c->rc[i].id, c->rc[i].name, text,
                                                 is_error)
                  : REIN_ENOMEM;
        rein_free(text);
    }
    return rc;
}

/* Runs the server-side calls of a round whose other calls go to the client (nothing is asked
 * again: their results are recorded, and the model will not see them). */
static rein_err run_server_calls(struct rein__gw_ctx *c)
{
    for (size_t i = 0; i < c->nrc; i++) {
        rein_call_result *ran = NULL;
        rein_err rc;
        if (c->rc[i].verdict != REIN__GW_SERVER)
            continue;
        rc = run_server(c, i, &ran);
        rein_call_result_free(ran);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

/* ---- the rounds --------------------------------------------------------------------------------- */

/*
 * Whether the round's answer (a reply without calls) follows the form the client asked for
 * (decision 0100); its problem is noted for the "rein" member. A refusal (OpenAI's, with no
 * text) is the model's documented way out and is not checked. *reask (new) is what the model
 * reads when asked again. REIN_ENOMEM.
 */
static rein_err answer_follows(struct rein__gw_ctx *c, const rein_model_response *r, bool *ok,
                               char **reask)
{
    const char *text = rein_model_response_text(r);
    const char *refusal = rein_model_response_refusal(r);
    json_t *problem = NULL;
    rein_err rc;

    *ok = true;
    *reask = NULL;
    if (c->nrc || c->output.kind == REIN_OUTPUT_TEXT || (!text[0] && refusal && refusal[0]))
        return REIN_OK;
    rc = rein__gw_output_check(&c->output, text, strlen(text), &problem, reask);
    if (rc || !problem)
        return rc;
    *ok = false;
    rein__gw_record_invalid_answer(c);
    if (!c->problems)
        c->problems = json_array();
    if (!c->problems || json_object_set_new(problem, "round", json_integer(c->round))) {
        json_decref(problem);
        return REIN_ENOMEM;
    }
    /* taken even when it fails */
    return json_array_append_new(c->problems, problem) ? REIN_ENOMEM : REIN_OK;
}

/* An answer that did not follow the form joins the conversation with what to fix. */
static rein_err append_reask(struct rein__gw_ctx *c, const rein_model_response *resp,
                             const char *reask)
{
    json_t *msg = rein_model_response_message(resp);
    rein_err rc = msg ? rein_history_append(c->req.h, msg, NULL) : REIN_ENOMEM;

    json_decref(msg);
    return rc ? rc : rein_history_add_user(c->req.h, reask);
}

static void count(const struct rein__gw_ctx *c, size_t *valid, size_t *invalid, size_t *server)
{
    *valid = *invalid = *server = 0;
    for (size_t i = 0; i < c->nrc; i++) {
        if (c->rc[i].verdict == REIN__GW_VALID)
            (*valid)++;
        else if (c->rc[i].verdict == REIN__GW_INVALID)
            (*invalid)++;
        else
            (*server)++;
    }
}

static void add_known(int64_t *sum, int64_t n)
{
    if (n >= 0)
        *sum = (*sum > 0 ? *sum : 0) + n;
}

static void add_usage(struct rein__gw_ctx *c, const rein_model_response *r)
{
    int64_t in = rein_model_response_input_tokens(r), out = rein_model_response_output_tokens(r);

    c->in_tokens += in > 0 ? in : 0;
    c->out_tokens += out > 0 ? out : 0;
    add_known(&c->cached_tokens, rein_model_response_cached_tokens(r));
    add_known(&c->cache_write_tokens, rein_model_response_cache_write_tokens(r));
    add_known(&c->reasoning_tokens, rein_model_response_reasoning_tokens(r));
}

/*
 * The rounds with the upstream until the answer is decided. Returns the HTTP status the
 * answer has (0: it was given already, an error or a gone client).
 */
static int rounds(struct rein__gw_ctx *c)
{
    int tool_rounds = 0;

    for (c->round = 1;; c->round++) {
        rein_model_response *resp = NULL;
        size_t valid, invalid, server;
        int64_t t0 = rein_now_ms();
        char *reask = NULL;
        bool follows;
        rein_error err;
        rein_err rc;

        round_reset(c);
        /* a structured answer streams once it is checked; under pass it streams at once and
         * its problem is named afterwards (decision 0100) */
        c->hold =
            c->streaming && c->output.kind != REIN_OUTPUT_TEXT && c->o.policy != REIN_GATEWAY_PASS;
        rein_buf_reset(&c->held);
        rein_error_clear(&err);
        rc = rein_provider_send(c->g->provider, c->mreq, c->req.h, &resp, &err);
        queue_stream(c);
        rein__gw_record_upstream(c, rc, &err, resp, rein_now_ms() - t0);
        if (c->sink_rc || c->gone ||
            (rc == REIN_ECANCELED && rein_cancel_is_set(c->call->cancel))) {
            c->gone = c->gone || rc == REIN_ECANCELED;
            rein_model_response_free(resp);
            if (c->sink_rc == REIN_ENOMEM)
                answer_errorf(c, 500, NULL, "out of memory");
            return 0;
        }
        if (rc) {
            upstream_error(c, rc, &err, resp);
            rein_model_response_free(resp);
            return 0;
        }
        add_usage(c, resp);
        rein_model_response_free(c->last);
        c->last = resp;
        count(c, &valid, &invalid, &server);
        if (answer_follows(c, resp, &follows, &reask) != REIN_OK) {
            answer_errorf(c, 500, NULL, "out of memory");
            return 0;
        }
        if (!follows && c->o.policy != REIN_GATEWAY_PASS) {
            if (c->o.policy == REIN_GATEWAY_ERROR || c->reasks >= c->o.max_reasks) {
                if (c->o.policy == REIN_GATEWAY_ERROR)
                    answer_errorf(c, 422, NULL,
                                  "the model's answer does not follow %s (see rein.problems)",
                                  c->output.member);
                else
                    answer_errorf(c, 422, NULL,
                                  "the model's answer still does not follow %s after %d re-ask%s "
                                  "(see rein.problems)",
                                  c->output.member, c->reasks, c->reasks == 1 ? "" : "s");
                rein_free(reask);
                return 422;
            }
            c->reasks++;
            rein__gw_record_reask(c);
            rc = append_reask(c, resp, reask);
            rein_free(reask);
            if (rc != REIN_OK) {
                answer_errorf(c, 500, NULL, "the conversation could not be continued");
                return 0;
            }
            continue;
        }
        rein_free(reask);
        release_held(c);
        if (invalid && c->o.policy == REIN_GATEWAY_PASS) {
            if (server && run_server_calls(c) != REIN_OK)
                answer_errorf(c, 500, NULL, "a server-side tool call could not run");
            return 200;
        }
        if (invalid && (c->o.policy == REIN_GATEWAY_ERROR || c->reasks >= c->o.max_reasks)) {
            if (c->o.policy == REIN_GATEWAY_ERROR)
                answer_errorf(c, 422, NULL,
                              "the model's reply has %zu invalid tool call%s (see rein.problems)",
                              invalid, invalid == 1 ? "" : "s");
            else
                answer_errorf(c, 422, NULL,
                              "the model's reply still has %zu invalid tool call%s after %d "
                              "re-ask%s (see rein.problems)",
                              invalid, invalid == 1 ? "" : "s", c->reasks,
                              c->reasks == 1 ? "" : "s");
            return 422;
        }
        if (invalid) {
            c->reasks++;
            rein__gw_record_reask(c);
        } else if (server && !valid) {
            if (++tool_rounds > c->g->max_tool_rounds) {
                answer_errorf(c, 422, NULL,
                              "the model called server-side tools %d times without answering",
                              c->g->max_tool_rounds);
                return 422;
            }
        } else {
            if (server && run_server_calls(c) != REIN_OK) {
                answer_errorf(c, 500, NULL, "a server-side tool call could not run");
                return 0;
            }
            return 200;
        }
        if (append_round(c, resp) != REIN_OK) {
            answer_errorf(c, 500, NULL, "the conversation could not be continued");
            return 0;
        }
    }
}

/* ---- serving a request ------------------------------------------------------------------------ */

static rein_err ctx_init(struct rein__gw_ctx *c, rein_gateway *g,
                         const struct rein_gateway_call *call, const struct rein_gateway_sink *sink)
{
    memset(c, 0, sizeof(*c));
    c->g = g;
    c->call = call;
    c->sink = sink;
    c->wire = call->api == REIN_GATEWAY_ANTHROPIC   ? &rein__gw_anthropic
              : call->api == REIN_GATEWAY_RESPONSES ? &rein__gw_responses
              : call->api == REIN_GATEWAY_GEMINI    ? &rein__gw_gemini
                                                    : &rein__gw_openai;
    c->block = -1;
    c->cached_tokens = c->cache_write_tokens = c->reasoning_tokens = -1;
    c->created = rein_wall_ms() / 1000;
    rein_buf_init(&c->ev, 0);
    rein_buf_init(&c->frames, 0);
    rein_buf_init(&c->frame_head, 0);
    rein_buf_init(&c->chunk_head, 0);
    rein_buf_init(&c->streamed, 0);
    rein_buf_init(&c->held, 0);
    rein_buf_init(&c->up_tools, 0);
    rein_buf_init(&c->logprobs, 0);
    rein_buf_init(&c->rs_text, 0);
    rein_buf_init(&c->conv, 0);
    if (call->trace_id && rein_trace_id_is_valid(call->trace_id))
        memcpy(c->trace_id, call->trace_id, sizeof(c->trace_id)); /* valid: 32 digits and NUL */
    else
        rein_trace_id_new(c->trace_id);
    rein_id_new(call->api == REIN_GATEWAY_ANTHROPIC   ? "msg_"
                : call->api == REIN_GATEWAY_RESPONSES ? "resp_"
                : call->api == REIN_GATEWAY_GEMINI    ? ""
                                                      : "chatcmpl-",
                c->id);
    /* the Responses wire's body is read as the chat completions body it means */
    rein__gw_req_init(&c->req,
                      call->api == REIN_GATEWAY_RESPONSES ? REIN_GATEWAY_OPENAI : call->api);
    /* Gemini's messages have no as-sent form in the history: a Gemini upstream gets them from
     * the neutral members, which keep its signatures (decision 0092). */
    c->req.verbatim = c->wire != &rein__gw_gemini &&
                      strcmp(rein_provider_wire(g->provider), rein__gw_body_wire(c)) == 0;
    c->req.upstream = g->provider;
    c->req.tool_media = call->api == REIN_GATEWAY_RESPONSES;
    /* Gemini names the model and the stream in the URL. */
    if (c->wire == &rein__gw_gemini) {
        c->req.model = call->model;
        c->req.stream = call->stream;
    }
    c->seen_ids = json_object();
    /* problems, repairs and converted are made by the first note (record.c): most requests
     * have none. */
    if (!c->req.h || !c->req.passthrough || !c->req.dropped || !c->req.unsupported || !c->seen_ids)
        return REIN_ENOMEM;
    return REIN_OK;
}

static void ctx_release(struct rein__gw_ctx *c)
{
    round_reset(c);
    rein_free(c->rc);
    for (size_t i = 0; i < c->nout; i++) {
        rein_free(c->out[i].id);
        rein_free(c->out[i].name);
        rein_free(c->out[i].args);
        rein_free(c->out[i].sent_name);
        rein_free(c->out[i].input);
        rein_free(c->out[i].signature);
    }
    rein_free(c->out);
    rein_model_response_free(c->last);
    rein_model_request_free(c->mreq);
    rein__gw_tools_put(c->g, c->tools);
    rein__gw_req_release(&c->req);
    json_decref(c->seen_ids);
    json_decref(c->problems);
    json_decref(c->repairs);
    json_decref(c->converted);
    json_decref(c->renamed);
    rein_buf_release(&c->ev);
    rein_buf_release(&c->frames);
    rein_buf_release(&c->frame_head);
    rein_buf_release(&c->chunk_head);
    rein_buf_release(&c->streamed);
    rein_buf_release(&c->held);
    rein__gw_output_release(&c->output);
    rein_buf_release(&c->up_tools);
    rein_buf_release(&c->logprobs);
    json_decref(c->rs_items);
    json_decref(c->rs_annots);
    rein_buf_release(&c->rs_text);
    rein_buf_release(&c->conv);
    json_decref(c->conv_extra);
    json_decref(c->refused);
}

/* The call ids the client's history already uses: a new call must not repeat one. */
static rein_err note_history_ids(struct rein__gw_ctx *c)
{
    for (size_t i = 0; i < rein_history_len(c->req.h); i++) {
        const json_t *calls = json_object_get(rein_history_get(c->req.h, i), "tool_calls");
        size_t k;
        json_t *call;
        json_array_foreach(calls, k, call)
        {
            const char *id = json_string_value(json_object_get(call, "id"));
            if (id && json_object_set_new(c->seen_ids, id, json_true()))
                return REIN_ENOMEM;
        }
    }
    return REIN_OK;
}

/* The members of the client's body that do not reach the upstream though they change no
 * answer (borrowed), or NULL: all of them for an upstream of another wire; for one
 * of the wire the body was read as, those the conversion found no place for. */
static const json_t *dropped_members(const struct rein__gw_ctx *c)
{
    const char *wire = rein_provider_wire(c->g->provider);
    const json_t *d = NULL;

    if (strcmp(wire, c->wire->name) == 0)
        return NULL;
    if (strcmp(wire, rein__gw_body_wire(c)) != 0)
        d = c->req.dropped;
    else if (c->conv_extra)
        d = json_object_get(c->conv_extra, "dropped");
    return json_array_size(d) ? d : NULL;
}

/* What a converted body's client body holds beyond it joins the parsed request's lists. */
static rein_err take_extra(struct rein__gw_req *r, const json_t *extra)
{
    if (json_object_update(r->passthrough, json_object_get(extra, "passthrough")) ||
        json_array_extend(r->dropped, json_object_get(extra, "dropped")) ||
        json_array_extend(r->unsupported, json_object_get(extra, "unsupported")))
        return REIN_ENOMEM;
    return REIN_OK;
}

const char *rein__gw_owner(struct rein__gw_ctx *c)
{
    if (!c->owner[0])
        rein__gw_kept_owner(presented_key(c->call), c->owner);
    return c->owner;
}

/* The client's body (len bytes) read into c->req and the upstream request c->mreq made from
 * it: REIN_EINVAL with bad filled for a request refused, REIN_ENOMEM. */
static rein_err parse_request(struct rein__gw_ctx *c, const char *body, size_t len,
                              struct rein__gw_bad *bad)
{
    rein_err rc = read_options(c, bad) ? REIN_OK : REIN_EINVAL;

    if (!rc && c->wire->convert) {
        struct rein__gw_refs refs = {&c->g->kept, rein__gw_owner(c), c->job != NULL};
        rc = c->wire->convert(rein_provider_wire(c->g->provider), &refs, body, len, &c->conv,
                              &c->conv_extra, bad);
    }
    if (!rc && c->wire->convert) {
        body = c->conv.ptr;
        len = c->conv.len;
    }
    if (!rc)
        rein__gw_tools_find(c->g, &c->req, body, len, c->o.server, c->o.nserver, &c->tools);
    if (!rc)
        rc = c->wire->parse(&c->req, body, len, bad);
    if (!rc && c->conv_extra)
        rc = take_extra(&c->req, c->conv_extra);
    if (!rc)
        rc = note_history_ids(c);
    if (!rc && !c->tools)
        rc = rein__gw_tools_get(c->g, &c->req, c->o.server, c->o.nserver, &c->tools, bad);
    if (!rc && c->wire == &rein__gw_gemini)
        rc = rein__gw_gm_check_choice(c, bad);
    if (!rc)
        rc = upstream_request(c, bad);
    return rc ? rc : rein__gw_reasoned_restore(c);
}

/* Everything before the first upstream call; false when the request was answered (400, 409). */
static bool prepare(struct rein__gw_ctx *c)
{
    const json_t *dropped;
    struct rein__gw_bad bad = {{0}, {0}};
    struct rein_store_lock_info held;
    rein_error err;
    rein_err rc = parse_request(c, c->call->body, c->call->len, &bad);

    if (rc == REIN_EINVAL) {
        answer_errorf(c, 400, bad.param, "%s", bad.msg);
        return false;
    }
    if (rc) {
        answer_errorf(c, 500, NULL, "out of memory");
        return false;
    }
    c->streaming = c->req.stream;
    c->model = c->g->model_from_client && c->req.model ? c->req.model
                                                       : rein_provider_model(c->g->provider);
    dropped = dropped_members(c);
    if (json_array_size(c->refused)) {
        /* what the upstream refuses joins what another wire dropped */
        if (dropped && json_array_extend(c->refused, (json_t *)dropped) != 0) {
            answer_errorf(c, 500, NULL, "out of memory");
            return false;
        }
        dropped = c->refused;
    }
    if (dropped) {
        char *names = rein_json_dumps(dropped);
        if (names)
            (void)c->sink->header(c->sink->data, "x-rein-dropped", names);
        rein_free(names);
    }
    if (c->o.conversation[0]) {
        rc = rein__gw_record_open(c, &held, &err);
        if (rc == REIN_EBUSY) {
            struct rein__gw_err e = {
                .status = 409, .type = "conflict_error", .code = "conversation_busy"};
            snprintf(e.message, sizeof(e.message), "conversation %s is busy: another request is %s",
                     c->o.conversation, held.state);
            answer_error(c, &e);
            return false;
        }
        if (rc) {
            answer_errorf(c,
                          rc == REIN_EINVAL   ? 400
                          : rc == REIN_ESTORE ? 503
                                              : 500,
                          NULL, "the conversation: %s", err.msg);
            return false;
        }
        (void)c->sink->header(c->sink->data, "x-rein-conversation", c->o.conversation);
        rein__gw_record_request(c);
    }
    return true;
}

static void finish(struct rein__gw_ctx *c, int status)
{
    struct rein_buf b;

    queue_stream(c); /* the held calls, before the record's store write */
    rein__gw_record_close(c, status);
    if (status != 200 || c->gone)
        return;
    rein__gw_reasoned_keep(c);
    if (c->streaming) {
        (void)c->wire->s_end(c);
        return;
    }
    rein_buf_init(&b, 0);
    /* Room for a usual answer at once: growing from 64 bytes took five reallocs. */
    if (rein_buf_grow(&b, ANSWER_ROOM) == REIN_OK && c->wire->reply(c, &b) == REIN_OK)
        reply(c, 200, &b);
    else
        answer_errorf(c, 500, NULL, "out of memory writing the answer");
    rein_buf_release(&b);
}

/* ---- counting tokens ----------------------------------------------------------------------- */

/* The count route of the client's wire, for messages. */
static const char *count_route(const struct rein__gw_ctx *c)
{
    return c->wire == &rein__gw_anthropic   ? "count_tokens"
           : c->wire == &rein__gw_responses ? "input_tokens"
           : c->wire == &rein__gw_gemini    ? "countTokens"
                                            : "a token count";
}

/* The model a count is for: the client's with model_from_client, else the upstream's. */
static const char *count_model(const struct rein__gw_ctx *c, const json_t *body)
{
    const char *m = c->wire == &rein__gw_gemini ? c->call->model
                                                : json_string_value(json_object_get(body, "model"));

    return c->g->model_from_client && m ? m : rein_provider_model(c->g->provider);
}

/*
 * An upstream of the client's wire counts the client's body as written (decision 0085), with
 * the model rein sends to: the body's model member (Gemini's in its generateContentRequest, as
 * a "models/" name; its URL names the model through the request). New; NULL with perr set.
 */
static char *count_same_body(struct rein__gw_ctx *c, rein_error *perr)
{
    json_t *body = rein_json_parse(c->call->body, c->call->len, JSON_REJECT_DUPLICATES, perr);
    json_t *at =
        c->wire == &rein__gw_gemini ? json_object_get(body, "generateContentRequest") : body;
    const char *model = body ? count_model(c, body) : NULL;
    char *text = NULL, *name = NULL;
    rein_err rc = REIN_OK;

    if (body && !json_is_object(body)) {
        rein_error_set(perr, REIN_EINVAL, "the request body must be a JSON object");
        json_decref(body);
        return NULL;
    }
    if (body && c->wire == &rein__gw_gemini)
        rc = rein_model_request_set_model(c->mreq, model);
    if (body && !rc && json_is_object(at) && c->wire == &rein__gw_gemini)
        rc = (name = rein_asprintf("models/%s", strncmp(model, "models/", 7) ? model : model + 7))
                 ? json_object_set_new(at, "model", json_string(name))
                 : REIN_ENOMEM;
    else if (body && !rc && c->wire != &rein__gw_gemini)
        rc = json_object_set_new(body, "model", json_string(model)) ? REIN_ENOMEM : REIN_OK;
    if (body && (rc || !(text = rein_json_dumps(body))))
        rein_error_set(perr, REIN_ENOMEM, "out of memory");
    rein_free(name);
    json_decref(body);
    return text;
}

/* The count's outcome in the client's shape: the number (the answer as it came from an
 * upstream of the client's own wire), or the upstream's error as the other routes give it. */
static void count_answer(struct rein__gw_ctx *c, rein_err rc, int64_t tokens,
                         const struct rein_buf *same, const rein_error *err,
                         const rein_model_response *resp)
{
    struct rein_buf b;

    if (rc == REIN_EPROVIDER) {
        answer_errorf(c, 502, NULL, "upstream: %s", err->msg);
        return;
    }
    if (rc) {
        upstream_error(c, rc, err, resp);
        return;
    }
    rein_buf_init(&b, 0);
    if (same && same->len)
        reply(c, 200, same);
    else if (rein__gw_count_answer(c->call->api, tokens, &b) == REIN_OK)
        reply(c, 200, &b);
    else
        answer_errorf(c, 500, NULL, "out of memory");
    rein_buf_release(&b);
}

/* The client's body, as written, to the count of an upstream of its wire. */
static void count_same(struct rein__gw_ctx *c)
{
    rein_model_response *resp = NULL;
    struct rein_buf answer;
    int64_t tokens = -1;
    rein_error err;
    char *body;
    rein_err rc;

    rein_error_clear(&err);
    c->mreq = rein_model_request_new();
    if (!c->mreq) {
        answer_errorf(c, 500, NULL, "out of memory");
        return;
    }
    body = count_same_body(c, &err);
    if (!body) {
        answer_errorf(c, err.code == REIN_ENOMEM ? 500 : 400, NULL, "%s", err.msg);
        return;
    }
    rc = c->g->forward_key && client_key(c) ? rein_model_request_set_api_key(c->mreq, client_key(c))
                                            : REIN_OK;
    if (!rc && c->wire == &rein__gw_anthropic && client_betas(c->mreq, c->call) == REIN_EINVAL) {
        answer_errorf(c, 400, "anthropic-beta", "%s", betas_refused);
        rein_free(body);
        return;
    }
    rein_model_request_set_cancel(c->mreq, c->call->cancel);
    rein_buf_init(&answer, 0);
    if (!rc)
        rc = rein_provider_count_tokens(c->g->provider, c->mreq, body, strlen(body), &tokens,
                                        &answer, &resp, &err);
    if (rc == REIN_ENOMEM)
        answer_errorf(c, 500, NULL, "out of memory");
    else
        count_answer(c, rc, tokens, &answer, &err, resp);
    rein_model_response_free(resp);
    rein_buf_release(&answer);
    rein_free(body);
}

/* Another wire: the body read as its generate route reads it, written by the upstream's
 * provider for its own count. */
static void count_other(struct rein__gw_ctx *c, const struct rein_buf *body)
{
    struct rein__gw_bad bad = {{0}, {0}};
    rein_model_response *resp = NULL;
    int64_t tokens = -1;
    rein_error err;
    rein_err rc;

    rein_error_clear(&err);
    rc = parse_request(c, body->ptr, body->len, &bad);
    if (rc == REIN_EINVAL) {
        answer_errorf(c, 400, bad.param[0] ? bad.param : NULL, "%s", bad.msg);
        return;
    }
    if (!rc)
        rc = rein_provider_count_request(c->g->provider, c->mreq, c->req.h, &tokens, NULL, &resp,
                                         &err);
    if (rc == REIN_ENOMEM)
        answer_errorf(c, 500, NULL, "out of memory");
    else
        count_answer(c, rc, tokens, NULL, &err, resp);
    rein_model_response_free(resp);
}

static void count_run(struct rein__gw_ctx *c)
{
    const char *wire = rein_provider_wire(c->g->provider);
    struct rein__gw_bad bad = {{0}, {0}};
    struct rein_buf body;
    rein_err rc;

    if (c->wire == &rein__gw_openai) {
        answer_errorf(c, 404, NULL, "the chat completions API has no token count");
        return;
    }
    if (!rein_provider_can_count(c->g->provider)) {
        answer_errorf(c, 404, NULL,
                      "%s is not available here: rein's upstream speaks the %s wire, which has no "
                      "token count",
                      count_route(c), wire);
        return;
    }
    rein_buf_init(&body, 0);
    rc = rein__gw_count_body(c->call->api, c->call->body, c->call->len, &body, &bad);
    if (rc == REIN_EINVAL)
        answer_errorf(c, 400, bad.param[0] ? bad.param : NULL, "%s", bad.msg);
    else if (rc)
        answer_errorf(c, 500, NULL, "out of memory");
    else if (strcmp(wire, c->wire->name) == 0)
        count_same(c);
    else
        count_other(c, &body);
    rein_buf_release(&body);
}

rein_err rein_gateway_count_tokens(rein_gateway *g, const struct rein_gateway_call *call,
                                   const struct rein_gateway_sink *sink)
{
    struct rein__gw_ctx c;
    rein_err rc;

    if (!g || !call || !sink)
        return REIN_EINVAL;
    if (ctx_init(&c, g, call, sink) != REIN_OK)
        answer_errorf(&c, 500, NULL, "out of memory");
    else {
        c.req.count = true;
        count_run(&c);
    }
    rc = c.sink_rc;
    ctx_release(&c);
    return rc == REIN_ECANCELED ? REIN_OK : rc;
}

/* ---- a kept response ---------------------------------------------------------------------- */

rein_err rein_gateway_kept_response(rein_gateway *g, const struct rein_gateway_call *call,
                                    enum rein_gateway_kept_op op, const char *id,
                                    const char *(*query)(void *header_data, const char *name),
                                    int *status, struct rein_buf *out)
{
    char owner[REIN__GW_OWNER_LEN + 1];
    size_t bytes, n;
    rein_err rc;

    if (!g || !call || !id || !status || !out)
        return REIN_EINVAL;
    rein__gw_kept_owner(presented_key(call), owner);
    if (op == REIN_GATEWAY_KEPT_CANCEL && rein__gw_bg_cancel(g, owner, id) != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE,
                 "background response %s: still running 10 s after its cancel", id);
    rc = rein__gw_rs_kept_answer(&g->kept, owner, call, op, id, query, status, out);
    if (rc == REIN_OK && op == REIN_GATEWAY_KEPT_DELETE && *status == 200) {
        rein__gw_bg_forget(g, owner, id); /* its events go with it */
        rein__gw_kept_stats(&g->kept, &bytes, &n);
        rein_metric_set(g->m.kept_bytes, NULL, (double)bytes);
        rein_metric_set(g->m.kept_responses, NULL, (double)n);
    }
    return rc;
}

rein_err rein_gateway_kept_stream(rein_gateway *g, const struct rein_gateway_call *call,
                                  const char *id,
                                  const char *(*query)(void *header_data, const char *name),
                                  const struct rein_gateway_sink *sink)
{
    char owner[REIN__GW_OWNER_LEN + 1];

    if (!g || !call || !id || !sink)
        return REIN_EINVAL;
    rein__gw_kept_owner(presented_key(call), owner);
    return rein__gw_bg_stream(g, call, owner, id, query, sink);
}

/* A Responses body that says "background": true (as written: a name spelt with escapes is
 * refused by the converter, which says so). */
static bool background_asked(const struct rein_gateway_call *call)
{
    const char *v;
    size_t n;

    return call->api == REIN_GATEWAY_RESPONSES &&
           rein__gw_raw_member(call->body, call->len, "background", &v, &n) && n == 4 &&
           memcmp(v, "true", 4) == 0;
}

/* Whether a background job may go on (rein__gw_bg_accept); else c is answered. */
static bool accepted(struct rein__gw_ctx *c)
{
    struct rein__gw_bad bad = {{0}, {0}};

    if (!c->job || rein__gw_bg_accept(c, &bad))
        return true;
    answer_errorf(c, 400, bad.param[0] ? bad.param : NULL, "%s", bad.msg);
    return false;
}

rein_err rein__gw_serve(rein_gateway *g, const struct rein_gateway_call *call,
                        const struct rein_gateway_sink *sink, struct rein__gw_job *job)
{
    struct rein__gw_ctx c;
    rein_err rc;

    if (ctx_init(&c, g, call, sink) != REIN_OK) {
        answer_errorf(&c, 500, NULL, "out of memory");
        rc = c.sink_rc;
        ctx_release(&c);
        return rc;
    }
    c.job = job;
    if (prepare(&c) && accepted(&c))
        finish(&c, rounds(&c));
    else
        rein__gw_record_close(&c, 0);
    (void)hand_frames(&c); /* what the answer's end framed */
    rc = c.gone ? REIN_OK : c.sink_rc;
    ctx_release(&c);
    return rc == REIN_ECANCELED ? REIN_OK : rc;
}

rein_err rein_gateway_serve(rein_gateway *g, const struct rein_gateway_call *call,
                            const struct rein_gateway_sink *sink)
{
    char owner[REIN__GW_OWNER_LEN + 1];

    if (!g || !call || !sink)
        return REIN_EINVAL;
    if (!background_asked(call))
        return rein__gw_serve(g, call, sink, NULL);
    rein__gw_kept_owner(presented_key(call), owner);
    return rein__gw_bg_serve(g, call, sink, owner);
}
