/*
 * Responses run in the background (decision 0093): POST /v1/responses with "background": true
 * is answered as soon as its body has been read and accepted, with the response object in
 * progress; the rounds with the upstream go on on a worker of the gateway's own pool, and the
 * client reads the answer later with GET /v1/responses/{id} (kept.c keeps the response in
 * progress, then the answer), or cancels it with POST /v1/responses/{id}/cancel. This is how
 * clients of slow reasoning models avoid holding a connection for minutes.
 *
 * A job reads the request on its worker exactly as a request in the foreground is read
 * (rein_gateway_serve's steps, with the job as the sink), while the client's thread waits: a
 * body the gateway refuses is refused on the client's connection, as in the foreground. Until
 * then the job reads the client's headers through the client's call; what it read is kept, so
 * the options it took from them stay valid after the client's request is gone.
 *
 * Bounded: at most max jobs at once (a client at most half of them, at least one), each ended
 * by its cancellation or by the gateway's end, which cancels them all and waits for them.
 */
#include "gateway/gateway_int.h"

#include <rein/pool.h>

#include <string.h>

enum phase {
    READING,  /* the job reads the request; the client's call is valid */
    ACCEPTED, /* answered in progress; the rounds go on */
    ANSWERED, /* answered (refused) before it was accepted */
};

struct rein__gw_job {
    struct rein__gw_job *next; /* in the gateway's list, under bg_mu */
    rein_gateway *g;
    char owner[REIN__GW_OWNER_LEN + 1];
    char id[REIN_ID_MAX]; /* the response's, once accepted */
    char trace_id[REIN_TRACE_ID_LEN + 1];
    char *body;
    const struct rein_gateway_call *orig; /* the client's: valid while phase is READING */
    struct rein_gateway_call call;        /* the job's: its body, headers and cancellation */
    json_t *headers; /* the client's headers the job read: name -> value or null */
    rein_cancel *cancel;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    enum phase phase;
    int refs; /* the client's thread and the worker; the last one frees */
    /* The answer the sink got (status 0: none): the refusal before acceptance, the final
     * answer after it. */
    int status;
    char ctype[64];
    struct rein_buf answer;
    struct rein_buf accepted; /* the response object in progress the client got */
};

rein_err rein__gw_bg_init(rein_gateway *g, int max)
{
    struct rein_pool_growth growth = {
        .core = (unsigned)max, .max = (unsigned)max, .stall_ms = 1000, .idle_ms = 60000};
    rein_error err;

    g->bg_max = max;
    pthread_mutex_init(&g->bg_mu, NULL);
    g->bg_on = true;
    if (max <= 0)
        return REIN_OK;
    /* a worker for every job at once: jobs are counted before they are submitted */
    g->bg_pool = rein_pool_new_growing(&growth, &err);
    return g->bg_pool ? REIN_OK : err.code;
}

void rein__gw_bg_release(rein_gateway *g)
{
    if (!g->bg_on)
        return;
    pthread_mutex_lock(&g->bg_mu);
    for (struct rein__gw_job *j = g->jobs; j; j = j->next)
        rein_cancel_trigger(j->cancel, "the gateway is shutting down");
    pthread_mutex_unlock(&g->bg_mu);
    rein_pool_free(g->bg_pool); /* waits for every job */
    g->bg_pool = NULL;
    pthread_mutex_destroy(&g->bg_mu);
    g->bg_on = false;
}

static void job_put(struct rein__gw_job *j)
{
    bool last;

    pthread_mutex_lock(&j->mu);
    last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last)
        return;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    rein_cancel_unref(j->cancel);
    json_decref(j->headers);
    rein_buf_release(&j->answer);
    rein_buf_release(&j->accepted);
    rein_free(j->body);
    rein_free(j);
}

/* The client's header name as the job reads it: from the client's call while it is valid
 * (and kept), from what was kept after. */
static const char *job_header(void *data, const char *name)
{
    struct rein__gw_job *j = data;
    json_t *v;

    pthread_mutex_lock(&j->mu);
    v = json_object_get(j->headers, name);
    if (!v && j->phase == READING && j->orig->header) {
        const char *s = j->orig->header(j->orig->header_data, name);
        v = s ? json_string(s) : json_null();
        if (json_object_set_new(j->headers, name, v))
            v = NULL;
    }
    pthread_mutex_unlock(&j->mu);
    return json_string_value(v);
}

/* Sets the phase (from READING) and wakes the client's thread. */
static void job_phase(struct rein__gw_job *j, enum phase p)
{
    pthread_mutex_lock(&j->mu);
    if (j->phase == READING)
        j->phase = p;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static rein_err sink_header(void *data, const char *name, const char *value)
{
    (void)data;
    (void)name;
    (void)value;
    return REIN_OK; /* the client has its answer's headers already, or gets a refusal's own */
}

static rein_err sink_reply(void *data, int status, const char *content_type, const char *body,
                           size_t len)
{
    struct rein__gw_job *j = data;
    rein_err rc;

    rein_buf_reset(&j->answer);
    rc = rein_buf_add(&j->answer, body, len);
    j->status = rc ? 500 : status;
    snprintf(j->ctype, sizeof(j->ctype), "%s", content_type ? content_type : "application/json");
    job_phase(j, ANSWERED);
    return rc;
}

/* A background response has no stream (rein__gw_bg_accept refuses one). */
static rein_err sink_no_stream(void *data)
{
    (void)data;
    return REIN_ESTATE;
}

static rein_err sink_no_event(void *data, const char *event, const char *text, size_t len)
{
    (void)data;
    (void)event;
    (void)text;
    (void)len;
    return REIN_ESTATE;
}

static rein_err sink_flush(void *data)
{
    (void)data;
    return REIN_OK;
}

bool rein__gw_bg_accept(struct rein__gw_ctx *c, struct rein__gw_bad *bad)
{
    struct rein__gw_job *j = c->job;

    if (c->req.stream) {
        rein__gw_bad(bad, "stream",
                     "rein's gateway runs a background response without a stream: ask with "
                     "'stream': false and read the answer with GET /v1/responses/{id}.");
        return false;
    }
    if (!c->g->kept.on || !json_is_true(json_object_get(c->conv_extra, "store"))) {
        rein__gw_bad(bad, "store",
                     c->g->kept.on ? "A background response must be stored: 'store' must be "
                                     "true."
                                   : "This gateway keeps no responses (--gateway-keep-bytes 0), "
                                     "so it runs none in the background.");
        return false;
    }
    rein_buf_reset(&j->accepted);
    if (rein__gw_rs_in_progress(c, &j->accepted) != REIN_OK) {
        rein__gw_bad(bad, "", "out of memory keeping the response in progress");
        return false;
    }
    pthread_mutex_lock(&j->mu);
    snprintf(j->id, sizeof(j->id), "%s", c->id);
    pthread_mutex_unlock(&j->mu);
    job_phase(j, ACCEPTED);
    return true;
}

/*
 * The response as the job ended, when the answer did not keep it: failed (the upstream's
 * error, or an answer too large to keep) or cancelled, written over the response in progress.
 */
static void job_settle(struct rein__gw_job *j)
{
    struct rein__gw_kept *k = &j->g->kept;
    json_t *resp = NULL, *input = NULL, *answer, *err;
    const char *status, *msg, *code;
    rein_err rc = rein__gw_kept_get(k, j->owner, j->id, &resp, &input);

    status = json_string_value(json_object_get(resp, "status"));
    if (rc || !status || strcmp(status, "in_progress") != 0) { /* kept as it ended, or forgotten */
        json_decref(resp);
        json_decref(input);
        return;
    }
    answer = j->status ? rein_json_parse(j->answer.ptr, j->answer.len, 0, NULL) : NULL;
    err = json_object_get(answer, "error");
    msg = json_string_value(json_object_get(err, "message"));
    code = json_string_value(json_object_get(err, "code"));
    if (!code)
        code = json_string_value(json_object_get(err, "type"));
    if (!j->status && rein_cancel_is_set(j->cancel)) {
        (void)json_object_set_new(resp, "status", json_string("cancelled"));
    } else {
        (void)json_object_set_new(resp, "status", json_string("failed"));
        (void)json_object_set_new(
            resp, "error",
            json_pack("{s:s, s:s}", "code", code ? code : "server_error", "message",
                      msg                ? msg
                      : j->status == 200 ? "The answer is larger than the gateway keeps "
                                           "(--gateway-keep-bytes)."
                                         : "The response ended without an answer."));
    }
    (void)rein__gw_kept_put(k, j->owner, j->id,
                            json_string_value(json_object_get(resp, "previous_response_id")), input,
                            resp);
    json_decref(answer);
    json_decref(resp);
    json_decref(input);
}

static void job_run(void *arg)
{
    struct rein__gw_job *j = arg;
    struct rein_gateway_sink sink = {
        .header = sink_header,
        .reply = sink_reply,
        .stream_start = sink_no_stream,
        .stream_event = sink_no_event,
        .flush = sink_flush,
        .data = j,
    };
    rein_gateway *g = j->g;

    (void)rein__gw_serve(g, &j->call, &sink, j);
    if (j->phase == ACCEPTED)
        job_settle(j);
    else
        job_phase(j, ANSWERED); /* a refusal, or nothing: the client's thread says so */
    pthread_mutex_lock(&g->bg_mu);
    for (struct rein__gw_job **p = &g->jobs; *p; p = &(*p)->next) {
        if (*p == j) {
            *p = j->next;
            break;
        }
    }
    g->bg_n--;
    rein_metric_set(g->m.background, NULL, (double)g->bg_n);
    pthread_mutex_unlock(&g->bg_mu);
    job_put(j);
}

/* The client's count of jobs, and room for one more of owner. Under bg_mu. */
static bool room_for(const rein_gateway *g, const char *owner)
{
    int mine = 0;

    for (const struct rein__gw_job *j = g->jobs; j; j = j->next)
        mine += strcmp(j->owner, owner) == 0;
    return g->bg_n < g->bg_max && mine < (g->bg_max / 2 > 0 ? g->bg_max / 2 : 1);
}

static struct rein__gw_job *job_new(rein_gateway *g, const struct rein_gateway_call *call,
                                    const char *owner)
{
    struct rein__gw_job *j = rein_calloc(1, sizeof(*j));

    if (!j)
        return NULL;
    j->g = g;
    j->refs = 2;
    j->orig = call;
    snprintf(j->owner, sizeof(j->owner), "%s", owner);
    if (call->trace_id && rein_trace_id_is_valid(call->trace_id))
        snprintf(j->trace_id, sizeof(j->trace_id), "%s", call->trace_id);
    else
        rein_trace_id_new(j->trace_id);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    rein_buf_init(&j->answer, 0);
    rein_buf_init(&j->accepted, 0);
    j->body = rein_malloc(call->len + 1);
    j->headers = json_object();
    j->cancel = rein_cancel_new();
    if (!j->body || !j->headers || !j->cancel) {
        j->refs = 1;
        job_put(j);
        return NULL;
    }
    memcpy(j->body, call->body, call->len);
    j->body[call->len] = '\0';
    j->call = (struct rein_gateway_call){
        .api = call->api,
        .body = j->body,
        .len = call->len,
        .header = job_header,
        .header_data = j,
        .trace_id = j->trace_id,
        .cancel = j->cancel, /* not the client's: its going away ends nothing */
    };
    return j;
}

/* An error answer in the chat wire's shape, on the client's connection. */
static rein_err refuse_with(const struct rein_gateway_sink *sink, const struct rein__gw_err *e)
{
    struct rein_buf b;
    rein_err rc;

    rein_buf_init(&b, 0);
    rc = rein__gw_openai.error(e, NULL, &b);
    if (!rc)
        rc = sink->reply(sink->data, e->status, "application/json", b.ptr, b.len);
    rein_buf_release(&b);
    return rc;
}

static rein_err refuse(const struct rein_gateway_sink *sink, int status, const char *code,
                       const char *message)
{
    struct rein__gw_err e = {.status = status, .code = code};

    snprintf(e.message, sizeof(e.message), "%s", message);
    return refuse_with(sink, &e);
}

rein_err rein__gw_bg_serve(rein_gateway *g, const struct rein_gateway_call *call,
                           const struct rein_gateway_sink *sink, const char *owner)
{
    struct rein__gw_job *j;
    char why[200];
    rein_err rc;

    if (g->bg_max <= 0) {
        struct rein__gw_err e = {.status = 400, .param = "background"};
        snprintf(e.message, sizeof(e.message),
                 "This gateway runs no responses in the background (--gateway-background 0): "
                 "send 'background': false.");
        return refuse_with(sink, &e);
    }
    pthread_mutex_lock(&g->bg_mu);
    if (!room_for(g, owner)) {
        pthread_mutex_unlock(&g->bg_mu);
        snprintf(why, sizeof(why),
                 "Too many background responses in progress (at most %d, a client half of "
                 "them: --gateway-background): wait for one to end, or cancel one.",
                 g->bg_max);
        return refuse(sink, 429, "rate_limit_exceeded", why);
    }
    j = job_new(g, call, owner);
    if (j) {
        j->next = g->jobs;
        g->jobs = j;
        g->bg_n++;
        rein_metric_set(g->m.background, NULL, (double)g->bg_n);
    }
    pthread_mutex_unlock(&g->bg_mu);
    if (!j)
        return refuse(sink, 500, NULL, "out of memory");
    if (rein_pool_submit(g->bg_pool, job_run, j) != REIN_OK)
        job_run(j); /* on this thread, then: the client waits for all of it */
    pthread_mutex_lock(&j->mu);
    while (j->phase == READING)
        pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    /* the worker no longer writes what is read here: answer before acceptance, or accepted */
    if (j->phase == ACCEPTED)
        rc = sink->reply(sink->data, 200, "application/json", j->accepted.ptr, j->accepted.len);
    else if (j->status)
        rc = sink->reply(sink->data, j->status, j->ctype, j->answer.ptr, j->answer.len);
    else
        rc = refuse(sink, 500, NULL, "the background response ended without an answer");
    job_put(j);
    return rc;
}

rein_err rein__gw_bg_cancel(rein_gateway *g, const char *owner, const char *id)
{
    bool found = false;
    int64_t until = rein_now_ms() + 10000;

    pthread_mutex_lock(&g->bg_mu);
    for (struct rein__gw_job *j = g->jobs; j; j = j->next) {
        pthread_mutex_lock(&j->mu); /* phase and id are the worker's */
        if (j->phase == ACCEPTED && strcmp(j->owner, owner) == 0 && strcmp(j->id, id) == 0) {
            rein_cancel_trigger(j->cancel, "cancelled by the client");
            found = true;
        }
        pthread_mutex_unlock(&j->mu);
    }
    pthread_mutex_unlock(&g->bg_mu);
    /* the upstream call ends at once on its cancellation; the job then keeps it cancelled */
    while (found && rein_now_ms() < until) {
        found = false;
        pthread_mutex_lock(&g->bg_mu);
        for (struct rein__gw_job *j = g->jobs; j && !found; j = j->next) {
            pthread_mutex_lock(&j->mu);
            found = strcmp(j->owner, owner) == 0 && strcmp(j->id, id) == 0;
            pthread_mutex_unlock(&j->mu);
        }
        pthread_mutex_unlock(&g->bg_mu);
        if (found)
            rein_sleep_ms(10);
    }
    return found ? REIN_ETIMEDOUT : REIN_OK;
}
