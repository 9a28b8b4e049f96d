/*
 * The protocol core of rein as an MCP server, shared by the stdio and Streamable HTTP
 * transports: sessions (protocol version, client info, log level), the methods (initialize,
 * ping, tools/list and tools/call through rein_call_run(), logging/setLevel; methods.c has
 * resources, prompts and completion), cancellation of running calls, the notifications a call
 * sends while it runs, and the stateless revision (2026-07-28: server/discover, and any
 * request that names its version in _meta served in a session of its own).
 *
 * A transport decodes a message and calls rein__mcp_handle() with a sink, the place the
 * answer and the request's notifications go. Long requests (tools/call) are run by the
 * transport on this server's worker pool. Every running call is listed here (srv->calls) so
 * notifications/cancelled can find it by (session, request id), and so the heartbeat thread
 * can send progress for calls that report none of their own.
 *
 * Ordering: notifications of one call and its response go out in order, because they are
 * all sent under the call's mutex or after the call has been marked done under it.
 */
#include "mcp/mcp_int.h"

#include <rein/agent.h>
#include <rein/pool.h>
#include <rein/trace.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define WHERE         "mcp/server"
#define PAGE_SIZE     100
#define TICK_MS       100
#define CALL_KEY_SIZE 320
#define SUBS_EVERY    10  /* ticks: subscribed resources are looked at every second */
#define SUBS_MAX      256 /* subscriptions one session may hold */

struct rein__mcp_session {
    atomic_int refs;
    rein_mcp_server *srv;
    struct rein__mcp_session *snext, *sprev; /* srv->sessions, under srv->mu */
    struct rein__mcp_sink *notify;           /* messages outside requests; under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char version[16];
    bool initialized; /* initialize was answered */
    bool ready;       /* notifications/initialized arrived */
    atomic_int level; /* least severe level sent (index) */
    json_t *client_info;
    json_t *client_caps;
    json_t *subs;        /* resources/subscribe: {uri: fingerprint}; under mu */
    rein_cancel *cancel; /* parent of every call's handle; child of the server's */
    int jobs;            /* calls this session has running (guarded by mu) */
    /* A stateless request's own session: the connection it came on (stdio's session, whose
     * notifications/cancelled reach its calls; borrowed, outlives the request), or NULL. */
    struct rein__mcp_session *owner;
    /* Requests rein sent the client (elicitation/create), waiting for its answer; under mu. */
    struct out_req *out;
    int64_t next_out;
};

/* A request to the client, on the asking thread's stack. */
struct out_req {
    struct out_req *next;
    int64_t id;
    json_t *result; /* the answer's result (a reference), once done */
    char error[300];
    bool done;
};

/* A running tools/call. Listed in srv->calls while it runs; refcounted for the heartbeat. */
struct mcp_call {
    atomic_int refs;
    struct mcp_call *next, *prev;
    rein_mcp_server *srv;
    struct rein__mcp_session *sess;
    char key[CALL_KEY_SIZE];
    rein_cancel *cancel;
    json_t *token; /* the progressToken, or NULL */
    struct rein__mcp_sink *sink;
    pthread_mutex_t mu;
    bool done;           /* the response is on its way: nothing more may be sent */
    bool any_progress;   /* a progress notification was sent */
    bool runner_reports; /* the runner reports progress itself: no heartbeats */
    double last;
    int64_t start_ms, last_sent_ms;
    atomic_bool client_cancelled;
    /* A stateless request (2026-07-28) asks through an input-required result (SEP-2322): the
     * answers it came with (inputResponses and those its requestState carried), and the
     * questions still without one, {key: {method, params}}; both NULL for a session's call. */
    json_t *answers;
    json_t *pending; /* under mu */
};

struct rein_mcp_server {
    const rein_registry *reg;
    struct rein_mcp_server_opts opts;
    char *name, *instructions, *allowed_hosts, *state_secret;
    rein_pool *pool;
    json_t *tools;             /* the tools/list array; replaced (under mu) when tools change */
    atomic_bool tools_dirty;   /* the registry changed: rebuild tools on the next tools/list */
    atomic_bool tell_sessions; /* ... and send list_changed on the next tick */
    int watch;                 /* the registry watcher's handle */
    pthread_mutex_t mu;
    struct mcp_call *calls;
    struct rein__mcp_session *sessions; /* every live session (to tell about changes) */
    pthread_t ticker;
    bool ticker_running;
    rein_cancel *stop; /* the heartbeat thread's */
    rein_cancel *root; /* parent of every session's handle: triggered when the server ends */
    struct rein__mcp_http *http;
    struct rein__mcp_resources *resources;
    struct rein__mcp_prompts *prompts;
    int ticks; /* subscriptions are looked at every SUBS_EVERY ticks */
    /* Signs requestState (input-required results): found at first use (state_key()). */
    uint8_t state_key[32];
    bool state_key_ready; /* (mu) */
    atomic_int listeners; /* open subscriptions/listen streams (each holds a worker) */
};

/* ---- sessions --------------------------------------------------------------------------- */

struct rein__mcp_session *rein__mcp_session_new_under(rein_mcp_server *srv, rein_cancel *parent)
{
    struct rein__mcp_session *s = rein_calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    atomic_init(&s->refs, 1);
    atomic_init(&s->level, 1); /* info until the client says otherwise */
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->srv = srv;
    s->cancel = rein_cancel_new_child(parent ? parent : srv->root);
    if (!s->cancel) {
        rein__mcp_session_unref(s);
        return NULL;
    }
    pthread_mutex_lock(&srv->mu);
    s->snext = srv->sessions;
    if (srv->sessions)
        srv->sessions->sprev = s;
    srv->sessions = s;
    pthread_mutex_unlock(&srv->mu);
    return s;
}

struct rein__mcp_session *rein__mcp_session_new(rein_mcp_server *srv)
{
    return rein__mcp_session_new_under(srv, NULL);
}

void rein__mcp_session_set_notify(struct rein__mcp_session *s, struct rein__mcp_sink *sink)
{
    pthread_mutex_lock(&s->mu);
    s->notify = sink;
    pthread_mutex_unlock(&s->mu);
}

bool rein__mcp_session_notify(struct rein__mcp_session *s, const char *json, size_t len)
{
    bool sent = false;

    pthread_mutex_lock(&s->mu);
    if (s->notify && s->ready) {
        s->notify->send(s->notify, json, len, false);
        sent = true;
    }
    pthread_mutex_unlock(&s->mu);
    return sent;
}

struct rein__mcp_session *rein__mcp_session_ref(struct rein__mcp_session *s)
{
    atomic_fetch_add(&s->refs, 1);
    return s;
}

void rein__mcp_session_unref(struct rein__mcp_session *s)
{
    rein_mcp_server *srv;

    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    /* Unlisted under the server's mutex: a broadcast that still sees it holds that mutex, so
     * it is done with the session before this goes on to free it. */
    srv = s->srv;
    if (s->cancel) {
        pthread_mutex_lock(&srv->mu);
        if (s->sprev)
            s->sprev->snext = s->snext;
        else if (srv->sessions == s)
            srv->sessions = s->snext;
        if (s->snext)
            s->snext->sprev = s->sprev;
        pthread_mutex_unlock(&srv->mu);
    }
    json_decref(s->client_info);
    json_decref(s->client_caps);
    json_decref(s->subs);
    rein_cancel_unref(s->cancel);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    rein_free(s);
}

rein_err rein__mcp_session_subscribe(struct rein__mcp_session *s, const char *uri,
                                     const char *fingerprint)
{
    rein_err rc = REIN_OK;

    pthread_mutex_lock(&s->mu);
    if (!s->subs)
        s->subs = json_object();
    if (!s->subs)
        rc = REIN_ENOMEM;
    else if (!json_object_get(s->subs, uri) && json_object_size(s->subs) >= SUBS_MAX)
        rc = REIN_ETOOBIG;
    else if (json_object_set_new(s->subs, uri, json_string(fingerprint)))
        rc = REIN_ENOMEM;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void rein__mcp_session_unsubscribe(struct rein__mcp_session *s, const char *uri)
{
    pthread_mutex_lock(&s->mu);
    json_object_del(s->subs, uri);
    pthread_mutex_unlock(&s->mu);
}

const char *rein__mcp_session_version(const struct rein__mcp_session *s)
{
    return s->version;
}

bool rein__mcp_session_initialized(const struct rein__mcp_session *s)
{
    return s->initialized;
}

void rein__mcp_session_cancel_calls(struct rein__mcp_session *s, const char *reason)
{
    /* Calls that start later get a child of a triggered handle, so they stop at once too. */
    rein_cancel_trigger(s->cancel, reason);
}

void rein__mcp_session_job_begin(struct rein__mcp_session *s)
{
    pthread_mutex_lock(&s->mu);
    s->jobs++;
    pthread_mutex_unlock(&s->mu);
}

void rein__mcp_session_job_end(struct rein__mcp_session *s)
{
    pthread_mutex_lock(&s->mu);
    s->jobs--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

bool rein__mcp_session_wait_jobs(struct rein__mcp_session *s, int64_t timeout_ms)
{
    int64_t deadline = timeout_ms >= 0 ? rein_now_ms() + timeout_ms : 0;
    bool done;

    pthread_mutex_lock(&s->mu);
    while (s->jobs > 0) {
        int64_t left = deadline ? deadline - rein_now_ms() : 1000;
        if (left <= 0)
            break;
        rein__mcp_cond_wait_ms(&s->cv, &s->mu, left);
    }
    done = s->jobs == 0;
    pthread_mutex_unlock(&s->mu);
    return done;
}

/* ---- sending ---------------------------------------------------------------------------- */

static void send_buf(struct rein__mcp_sink *sink, struct rein_buf *b, bool final)
{
    sink->send(sink, b->ptr, b->len, final);
}

static json_t *modern_result(struct rein__mcp_sink *sink, json_t *result);

static void send_result(struct rein__mcp_sink *sink, const json_t *id, json_t *result)
{
    struct rein_buf b;

    result = modern_result(sink, result);
    rein_buf_init(&b, 0);
    if (result && rein__mcp_write_result(&b, id, result) == REIN_OK)
        send_buf(sink, &b, true);
    else if (rein__mcp_write_error(&b, id, REIN__MCP_INTERNAL_ERROR,
                                   "out of memory encoding the result", NULL) == REIN_OK)
        send_buf(sink, &b, true);
    rein_buf_release(&b);
    json_decref(result);
}

static void send_error_data(struct rein__mcp_sink *sink, const json_t *id, int code,
                            const char *message, const json_t *data)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    atomic_store(&sink->error_code, code);
    if (rein__mcp_write_error(&b, id, code, message, data) == REIN_OK)
        send_buf(sink, &b, true);
    rein_buf_release(&b);
}

void rein__mcp_send_error(struct rein__mcp_sink *sink, const json_t *id, int code,
                          const char *message)
{
    send_error_data(sink, id, code, message, NULL);
}

void rein__mcp_send_result(struct rein__mcp_sink *sink, const json_t *id, json_t *result)
{
    send_result(sink, id, result);
}

void rein__mcp_send_error_data(struct rein__mcp_sink *sink, const json_t *id, int code,
                               const char *message, const json_t *data)
{
    send_error_data(sink, id, code, message, data);
}

static void send_errorf(struct rein__mcp_sink *sink, const json_t *id, int code, const char *fmt,
                        ...) REIN_PRINTF(4, 5);

static void send_errorf(struct rein__mcp_sink *sink, const json_t *id, int code, const char *fmt,
                        ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    send_error_data(sink, id, code, msg, NULL);
}

/* Sends a notification (not final); params is taken. */
static void send_notification(struct rein__mcp_sink *sink, const char *method, json_t *params)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    if (params && rein__mcp_write_notification(&b, method, params) == REIN_OK)
        send_buf(sink, &b, false);
    rein_buf_release(&b);
    json_decref(params);
}

/* ---- calls: listing, cancellation, notifications ---------------------------------------- */

static void call_unref(struct mcp_call *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    rein_cancel_unref(c->cancel);
    json_decref(c->token);
    json_decref(c->answers);
    json_decref(c->pending);
    pthread_mutex_destroy(&c->mu);
    rein_free(c);
}

static void call_list(rein_mcp_server *srv, struct mcp_call *c)
{
    pthread_mutex_lock(&srv->mu);
    c->next = srv->calls;
    if (srv->calls)
        srv->calls->prev = c;
    srv->calls = c;
    pthread_mutex_unlock(&srv->mu);
}

static void call_unlist(rein_mcp_server *srv, struct mcp_call *c)
{
    pthread_mutex_lock(&srv->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = c->prev = NULL;
    pthread_mutex_unlock(&srv->mu);
}

static void progress_send(struct mcp_call *c, double progress, double total, const char *message)
{
    json_t *p = json_pack("{s:O, s:f}", "progressToken", c->token, "progress", progress);

    if (p && total >= 0 && json_object_set_new(p, "total", json_real(total)))
        goto fail;
    if (p && message && json_object_set_new(p, "message", json_string(message)))
        goto fail;
    c->any_progress = true;
    c->last = progress;
    c->last_sent_ms = rein_now_ms();
    send_notification(c->sink, "notifications/progress", p);
    return;
fail:
    json_decref(p);
}

/* The pipeline's event callback: runner events become notifications (call thread). */
static void on_call_event(void *ud, const struct rein_call_event *ev)
{
    struct mcp_call *c = ud;

    pthread_mutex_lock(&c->mu);
    if (c->done)
        goto out;
    if (ev->kind == REIN_CALL_EVENT_PROGRESS) {
        c->runner_reports = true;
        /* MCP requires progress to increase; a value that does not is dropped. */
        if (c->token && isfinite(ev->progress) && (!c->any_progress || ev->progress > c->last))
            progress_send(c, ev->progress, ev->total, ev->message);
    } else if (rein__mcp_level_index(ev->level) >= atomic_load(&c->sess->level)) {
        json_t *p = json_pack("{s:s, s:O}", "level", ev->level, "data", ev->data);
        if (p && ev->logger && json_object_set_new(p, "logger", json_string(ev->logger))) {
            json_decref(p);
            p = NULL;
        }
        send_notification(c->sink, "notifications/message", p);
    }
out:
    pthread_mutex_unlock(&c->mu);
}

/* Heartbeat progress for calls that report none, so a client knows they are alive. */
static void heartbeat(rein_mcp_server *srv)
{
    struct mcp_call *due[64];
    int n = 0;
    int64_t now = rein_now_ms(), every = srv->opts.progress_interval_ms;

    /* The list (srv->mu) gives the calls with a token (set before listing, never changed);
     * their progress state is read under each call's own mutex. */
    pthread_mutex_lock(&srv->mu);
    for (struct mcp_call *c = srv->calls; c && n < 64; c = c->next) {
        if (c->token) {
            atomic_fetch_add(&c->refs, 1);
            due[n++] = c;
        }
    }
    pthread_mutex_unlock(&srv->mu);
    for (int i = 0; i < n; i++) {
        struct mcp_call *c = due[i];
        pthread_mutex_lock(&c->mu);
        int64_t since = c->last_sent_ms > c->start_ms ? c->last_sent_ms : c->start_ms;
        if (!c->done && !c->runner_reports && now - since >= every) {
            char msg[64];
            double secs = (double)(now - c->start_ms) / 1000.0;
            snprintf(msg, sizeof(msg), "still running after %.0f s", secs);
            if (!c->any_progress || secs > c->last)
                progress_send(c, secs, -1, msg);
        }
        pthread_mutex_unlock(&c->mu);
        call_unref(c);
    }
}

/* Sends notifications/tools/list_changed to every session that finished its handshake. */
static void broadcast_list_changed(rein_mcp_server *srv)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    if (rein__mcp_write_notification(&b, "notifications/tools/list_changed", NULL) != REIN_OK) {
        rein_buf_release(&b);
        return;
    }
    pthread_mutex_lock(&srv->mu);
    for (struct rein__mcp_session *s = srv->sessions; s; s = s->snext) {
        rein__mcp_session_notify(s, b.ptr, b.len);
    }
    pthread_mutex_unlock(&srv->mu);
    rein_buf_release(&b);
}

/* A reference to a listed session that is not already on its way out (srv->mu held). */
static bool session_try_ref(struct rein__mcp_session *s)
{
    int n = atomic_load(&s->refs);

    while (n > 0) {
        if (atomic_compare_exchange_weak(&s->refs, &n, n + 1))
            return true;
    }
    return false;
}

/* Looks at every subscribed resource; one that changed gets notifications/resources/updated.
 * The fingerprints are read (files, the store) with no lock held. */
static void watch_subscriptions(rein_mcp_server *srv)
{
    struct rein__mcp_session *due[64];
    json_t *subs[64];
    int n = 0;

    pthread_mutex_lock(&srv->mu);
    for (struct rein__mcp_session *s = srv->sessions; s && n < 64; s = s->snext) {
        pthread_mutex_lock(&s->mu);
        bool any = json_object_size(s->subs) > 0;
        json_t *copy = any ? json_deep_copy(s->subs) : NULL;
        pthread_mutex_unlock(&s->mu);
        if (copy && session_try_ref(s)) {
            due[n] = s;
            subs[n++] = copy;
        } else {
            json_decref(copy);
        }
    }
    pthread_mutex_unlock(&srv->mu);
    for (int i = 0; i < n; i++) {
        const char *uri;
        json_t *was;
        json_object_foreach(subs[i], uri, was)
        {
            char *now = rein__mcp_resources_fingerprint(srv->resources, uri);
            if (!now || strcmp(now, json_string_value(was)) == 0) {
                rein_free(now);
                continue;
            }
            pthread_mutex_lock(&due[i]->mu);
            bool still = json_object_get(due[i]->subs, uri) != NULL;
            if (still)
                json_object_set_new(due[i]->subs, uri, json_string(now));
            pthread_mutex_unlock(&due[i]->mu);
            rein_free(now);
            if (still) {
                struct rein_buf b;
                json_t *params = json_pack("{s:s}", "uri", uri);
                rein_buf_init(&b, 0);
                if (params && rein__mcp_write_notification(&b, "notifications/resources/updated",
                                                           params) == REIN_OK)
                    rein__mcp_session_notify(due[i], b.ptr, b.len);
                rein_buf_release(&b);
                json_decref(params);
            }
        }
        json_decref(subs[i]);
        rein__mcp_session_unref(due[i]);
    }
}

static void on_registry_change(void *ud, const rein_registry *reg)
{
    rein_mcp_server *srv = ud;

    (void)reg;
    atomic_store(&srv->tools_dirty, true);
    atomic_store(&srv->tell_sessions, true);
}

static void *ticker_main(void *arg)
{
    rein_mcp_server *srv = arg;

    while (!rein_cancel_wait(srv->stop, TICK_MS)) {
        heartbeat(srv);
        /* Changes are told once per tick, however many tools came and went in it. */
        if (atomic_exchange(&srv->tell_sessions, false))
            broadcast_list_changed(srv);
        if (++srv->ticks % SUBS_EVERY == 0)
            watch_subscriptions(srv);
        /* The HTTP state is made once, before serving, and freed after this thread ends. */
        pthread_mutex_lock(&srv->mu);
        struct rein__mcp_http *h = srv->http;
        pthread_mutex_unlock(&srv->mu);
        if (h)
            rein__mcp_http_tick(h);
    }
    return NULL;
}

/* ---- methods ---------------------------------------------------------------------------- */

static const char *param_str(const struct rein__mcp_msg *msg, const char *key)
{
    return json_string_value(json_object_get(msg->params, key));
}

static void handle_initialize(rein_mcp_server *srv, struct rein__mcp_session *sess,
                              const struct rein__mcp_msg *msg, struct rein__mcp_sink *sink)
{
    const char *asked = param_str(msg, "protocolVersion");
    const char *version;
    json_t *caps, *info, *result;

    if (!asked) {
        send_errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS,
                    "initialize needs params.protocolVersion (a string such as \"%s\")",
                    REIN__MCP_LATEST);
        return;
    }
    pthread_mutex_lock(&sess->mu);
    if (sess->initialized) {
        pthread_mutex_unlock(&sess->mu);
        send_errorf(sink, msg->id, REIN__MCP_INVALID_REQUEST,
                    "this session is already initialized");
        return;
    }
    /* Negotiation: the client's revision when rein speaks it, else rein's newest. */
    version = rein__mcp_version_supported(asked) ? asked : REIN__MCP_LATEST;
    snprintf(sess->version, sizeof(sess->version), "%s", version);
    sess->client_info = json_incref(json_object_get(msg->params, "clientInfo"));
    sess->client_caps = json_incref(json_object_get(msg->params, "capabilities"));
    sess->initialized = true;
    pthread_mutex_unlock(&sess->mu);

    /* The tool list changes when an MCP server rein uses connects later or changes its own. */
    caps = json_pack("{s:{s:b}, s:{}, s:{s:b, s:b}, s:{s:b}, s:{}}", "tools", "listChanged", 1,
                     "logging", "resources", "subscribe", 1, "listChanged", 0, "prompts",
                     "listChanged", 0, "completions");
    info = json_pack("{s:s, s:s}", "name", srv->opts.name, "version", rein_version());
    result = json_pack("{s:s, s:o, s:o}", "protocolVersion", version, "capabilities", caps,
                       "serverInfo", info);
    if (result && srv->opts.instructions &&
        json_object_set_new(result, "instructions", json_string(srv->opts.instructions))) {
        json_decref(result);
        result = NULL;
    }
    send_result(sink, msg->id, result);
}

/* A page of a list: the cursor is the decimal offset of the first item. */
static bool page_bounds(const struct rein__mcp_msg *msg, size_t total, size_t *start, size_t *end)
{
    const json_t *cursor = json_object_get(msg->params, "cursor");
    const char *text = json_string_value(cursor);
    char *stop = NULL;
    unsigned long long v = 0;

    *start = 0;
    if (cursor && !json_is_null(cursor)) {
        if (!text || !*text || text[0] < '0' || text[0] > '9')
            return false;
        v = strtoull(text, &stop, 10);
        if (*stop || v > total)
            return false;
        *start = (size_t)v;
    }
    *end = *start + PAGE_SIZE < total ? *start + PAGE_SIZE : total;
    return true;
}

/* The current tools/list array (a new reference), rebuilt first when the registry changed. */
static json_t *current_tools(rein_mcp_server *srv)
{
    json_t *tools;

    pthread_mutex_lock(&srv->mu);
    if (atomic_exchange(&srv->tools_dirty, false)) {
        json_t *fresh = rein_registry_tools_json(srv->reg, REIN_TOOLS_MCP);
        if (fresh) {
            json_decref(srv->tools);
            srv->tools = fresh;
        } else {
            atomic_store(&srv->tools_dirty, true); /* out of memory: the old list, next time */
        }
    }
    tools = json_incref(srv->tools);
    pthread_mutex_unlock(&srv->mu);
    return tools;
}

static void handle_tools_list(rein_mcp_server *srv, const struct rein__mcp_msg *msg,
                              struct rein__mcp_sink *sink)
{
    json_t *tools = current_tools(srv);
    size_t start, end, total = json_array_size(tools);
    json_t *page, *result;
    char next[32];

    if (!page_bounds(msg, total, &start, &end)) {
        json_decref(tools);
        send_errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS,
                    "params.cursor is not a cursor this server gave");
        return;
    }
    page = json_array();
    for (size_t i = start; page && i < end; i++) {
        if (json_array_append(page, json_array_get(tools, i))) {
            json_decref(page);
            page = NULL;
        }
    }
    json_decref(tools);
    result = page ? json_pack("{s:o}", "tools", page) : NULL;
    if (result && end < total) {
        snprintf(next, sizeof(next), "%zu", end);
        if (json_object_set_new(result, "nextCursor", json_string(next))) {
            json_decref(result);
            result = NULL;
        }
    }
    send_result(sink, msg->id, result);
}

static void handle_set_level(struct rein__mcp_session *sess, const struct rein__mcp_msg *msg,
                             struct rein__mcp_sink *sink)
{
    const char *level = param_str(msg, "level");
    int idx = rein__mcp_level_index(level);

    if (idx < 0) {
        send_errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS,
                    "params.level must be one of debug, info, notice, warning, error, critical, "
                    "alert, emergency");
        return;
    }
    atomic_store(&sess->level, idx);
    send_result(sink, msg->id, json_object());
}

/* A new call record for a tools/call request, or NULL when memory is exhausted. */
static struct mcp_call *call_new(rein_mcp_server *srv, struct rein__mcp_session *sess,
                                 const struct rein__mcp_msg *msg, struct rein__mcp_sink *sink)
{
    struct mcp_call *c = rein_calloc(1, sizeof(*c));
    const json_t *token = json_object_get(json_object_get(msg->params, "_meta"), "progressToken");

    if (!c)
        return NULL;
    atomic_init(&c->refs, 1);
    atomic_init(&c->client_cancelled, false);
    pthread_mutex_init(&c->mu, NULL);
    c->srv = srv;
    c->sess = sess;
    c->sink = sink;
    c->start_ms = rein_now_ms();
    if (!rein__mcp_id_key(msg->id, c->key, sizeof(c->key)))
        c->key[0] = '\0'; /* an id too long to track: it cannot be cancelled by id */
    if (json_is_string(token) || json_is_integer(token))
        c->token = json_incref((json_t *)token);
    c->cancel = rein_cancel_new_child(sess->cancel);
    if (!c->cancel) {
        call_unref(c);
        return NULL;
    }
    return c;
}

/* The JSON-RPC error for a call whose name did not lead to a tool; NULL when it did. */
static bool name_error(rein_call_result *res, struct rein__mcp_sink *sink, const json_t *id)
{
    enum rein_call_code code = rein_call_result_code(res);

    size_t len;
    const char *sent = rein_call_result_sent_name(res, &len);
    char msg[600];

    if (code != REIN_CALL_UNKNOWN_TOOL && code != REIN_CALL_INVALID_NAME)
        return false;
    /* MCP's wording first ("Unknown tool: <name>"), rein's explanation after it; the data is
     * the invalid payload (the available tools, the hint). */
    snprintf(msg, sizeof(msg), "%s: %.*s (%s)",
             code == REIN_CALL_UNKNOWN_TOOL ? "Unknown tool" : "Invalid tool name",
             (int)(len > 100 ? 100 : len), sent, rein_call_result_message(res));
    send_error_data(sink, id, REIN__MCP_INVALID_PARAMS, msg, rein_call_result_invalid_json(res));
    return true;
}

/* ---- asking the client (elicitation) ---------------------------------------------------- */

/* A response from the client: the answer to a request rein sent, if one waits for it (an
 * answer to nothing is ignored, as MCP says). */
static void answer_out(struct rein__mcp_session *sess, const struct rein__mcp_msg *msg)
{
    if (!json_is_integer(msg->id))
        return;
    pthread_mutex_lock(&sess->mu);
    for (struct out_req *r = sess->out; r; r = r->next) {
        if (r->id != json_integer_value(msg->id) || r->done)
            continue;
        /* A copy, not a shared reference: the waiter reads it on its own thread while this
         * thread frees the message, and jansson's reference counts are not a hand-off that
         * ThreadSanitizer (or a reader without the lock) can see. */
        if (msg->kind == REIN__MCP_RESPONSE)
            r->result = json_deep_copy(msg->result);
        else
            snprintf(r->error, sizeof(r->error), "%d %s", msg->error_code,
                     msg->error_message ? msg->error_message : "");
        r->done = true;
        pthread_cond_broadcast(&sess->cv);
        break;
    }
    pthread_mutex_unlock(&sess->mu);
}

/* The longest rein waits for a person to answer an approval request. */
#define ASK_TIMEOUT_MS (10 * 60 * 1000)

/*
 * Sends the client a request on the call's stream (stdio: the connection; HTTP: the
 * tools/call's event stream) and waits for its answer, the call's cancellation or
 * ASK_TIMEOUT_MS. *result receives a new reference.
 */
static rein_err ask_client_within(struct mcp_call *c, const char *method, const json_t *params,
                                  int64_t timeout_ms, json_t **result, rein_error *err)
{
    struct rein__mcp_session *sess = c->sess->owner ? c->sess->owner : c->sess;
    struct out_req r = {0}, **pp;
    int64_t until = rein_now_ms() + timeout_ms;
    struct rein_buf b;
    rein_err rc = REIN_OK;

    *result = NULL;
    pthread_mutex_lock(&sess->mu);
    r.id = ++sess->next_out;
    r.next = sess->out;
    sess->out = &r;
    pthread_mutex_unlock(&sess->mu);
    rein_buf_init(&b, 0);
    if (rein__mcp_write_request(&b, r.id, method, params) != REIN_OK) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory asking the client");
    } else {
        pthread_mutex_lock(&c->mu);
        if (!c->done)
            send_buf(c->sink, &b, false);
        pthread_mutex_unlock(&c->mu);
    }
    rein_buf_release(&b);
    pthread_mutex_lock(&sess->mu);
    while (!rc && !r.done) {
        int64_t left = until - rein_now_ms();
        if (rein_cancel_is_set(c->cancel))
            rc = rein_error_set(err, REIN_ECANCELED, "cancelled while the client was asked: %s",
                                rein_cancel_reason(c->cancel));
        else if (left <= 0)
            rc = rein_error_set(err, REIN_ETIMEDOUT, "the client did not answer %s within %lld ms",
                                method, (long long)timeout_ms);
        else
            rein__mcp_cond_wait_ms(&sess->cv, &sess->mu, left < 200 ? left : 200);
    }
    for (pp = &sess->out; *pp; pp = &(*pp)->next) {
        if (*pp == &r) {
            *pp = r.next;
            break;
        }
    }
    pthread_mutex_unlock(&sess->mu);
    if (!rc && r.error[0])
        rc = rein_error_set(err, REIN_EIO, "the client answered %s with the error %s", method,
                            r.error);
    if (rc)
        json_decref(r.result);
    else
        *result = r.result;
    return rc;
}

static rein_err ask_client(struct mcp_call *c, const char *method, const json_t *params,
                           json_t **result, rein_error *err)
{
    return ask_client_within(c, method, params, ASK_TIMEOUT_MS, result, err);
}

/* True when the session's client declared capability cap (elicitation, sampling) and speaks
 * a revision with sessions (2026-07-28 asks through input-required results, not served). */
static bool client_offers(struct rein__mcp_session *sess, const char *cap)
{
    bool yes;

    pthread_mutex_lock(&sess->mu);
    yes = json_is_object(json_object_get(sess->client_caps, cap)) &&
          !rein__mcp_version_modern(sess->version) && !sess->owner;
    pthread_mutex_unlock(&sess->mu);
    return yes;
}

bool rein__mcp_session_stateless_offers(struct rein__mcp_session *sess, const char *cap)
{
    bool yes;

    pthread_mutex_lock(&sess->mu);
    yes = rein__mcp_version_modern(sess->version) &&
          json_is_object(json_object_get(sess->client_caps, cap));
    pthread_mutex_unlock(&sess->mu);
    return yes;
}

/* True when the stateless request's client declared cap in its _meta. */
static bool request_offers(struct rein__mcp_session *sess, const char *cap)
{
    bool yes;

    pthread_mutex_lock(&sess->mu);
    yes = json_is_object(json_object_get(sess->client_caps, cap));
    pthread_mutex_unlock(&sess->mu);
    return yes;
}

/*
 * A stateless request's tool asks: the answer the request brought under key, else the question
 * joins the input-required result this round ends with (the call is cancelled; the client
 * retries with the answers, and the tool runs again from the start, answered at once).
 */
static rein_err ask_in_rounds(struct mcp_call *c, const char *key, const char *cap,
                              const char *method, const json_t *params, json_t **result,
                              rein_error *err)
{
    json_t *answer = json_object_get(c->answers, key ? key : "");
    json_t *q;

    if (answer) {
        *result = json_incref(answer);
        return REIN_OK;
    }
    if (!request_offers(c->sess, cap))
        return rein_error_set(err, REIN_ENOTSUP,
                              "the MCP client did not declare the \"%s\" capability, so %s "
                              "cannot be asked",
                              cap, method);
    if (!key || !*key)
        return rein_error_set(err, REIN_ENOTSUP, "%s has no key to be answered by", method);
    q = json_pack("{s:s, s:O}", "method", method, "params", (json_t *)params);
    pthread_mutex_lock(&c->mu);
    if (!q || json_object_set_new(c->pending, key, q)) {
        pthread_mutex_unlock(&c->mu);
        return rein_error_set(err, REIN_ENOMEM, "out of memory asking the client");
    }
    pthread_mutex_unlock(&c->mu);
    rein_cancel_trigger(c->cancel, "input required from the MCP client");
    return rein_error_set(err, REIN_ECANCELED,
                          "%s is asked through an input-required result; the call runs again "
                          "with the answer",
                          method);
}

/*
 * A running tool asks the client (rein_call_ask_fn; a process skill's request, decision 0031):
 * passed on when the client declared the capability the method needs, within the tool's
 * remaining time (at most ASK_TIMEOUT_MS).
 */
static rein_err ask_for_tool(void *ud, const char *key, const char *method, const json_t *params,
                             int64_t timeout_ms, json_t **result, rein_error *err)
{
    struct mcp_call *c = ud;
    const char *cap = strcmp(method, "sampling/createMessage") == 0 ? "sampling"
                      : strcmp(method, "elicitation/create") == 0   ? "elicitation"
                      : strcmp(method, "roots/list") == 0           ? "roots"
                                                                    : NULL;

    *result = NULL;
    if (!cap)
        return rein_error_set(err, REIN_ENOTSUP, "%s is not a request rein sends an MCP client",
                              method);
    if (c->answers)
        return ask_in_rounds(c, key, cap, method, params, result, err);
    if (!client_offers(c->sess, cap)) {
        return rein_error_set(err, REIN_ENOTSUP,
                              "the MCP client did not declare the \"%s\" capability, so %s "
                              "cannot be sent",
                              cap, method);
    }
    if (timeout_ms < 0 || timeout_ms > ASK_TIMEOUT_MS)
        timeout_ms = ASK_TIMEOUT_MS;
    return ask_client_within(c, method, params, timeout_ms, result, err);
}

/*
 * The self-verification and approval stages on the call's execute_tool span, as the agent
 * records its own (decision 0047): here the judge is the client's model, reached through
 * sampling, and the approver the client's user, through elicitation.
 */
static void review_span_event(const struct rein_policy_check *chk, const char *verdict,
                              const char *code, int64_t since_ns)
{
    if (!rein_span_is_recording(chk->span))
        return;
    rein_span_event(chk->span, "rein.self_check");
    rein_span_event_str(chk->span, "rein.self_check.verdict", verdict);
    rein_span_event_str(chk->span, "rein.self_check.code", code);
    rein_span_event_str(chk->span, "rein.self_check.judge", "client_model");
    rein_span_event_double(chk->span, "rein.self_check.wait_ms",
                           (double)(rein_now_ns() - since_ns) / 1e6);
}

static void approval_span_event(const struct rein_policy_check *chk, const char *decision,
                                int64_t since_ns)
{
    if (!rein_span_is_recording(chk->span))
        return;
    rein_span_event(chk->span, "rein.approval");
    rein_span_event_str(chk->span, "rein.approval.decision", decision);
    rein_span_event_str(chk->span, "rein.approval.by", "client_user");
    rein_span_event_double(chk->span, "rein.approval.wait_ms",
                           (double)(rein_now_ns() - since_ns) / 1e6);
}

/*
 * Self-verification with the client's model (sampling/createMessage): the question rein's
 * agent asks its verifier (rein_agent_review_question), about a call whose request rein does
 * not see. REIN_OK when the model answers YES; REIN_EDENIED with its reason otherwise.
 */
static rein_err review_by_client(struct mcp_call *c, const struct rein_policy_check *chk,
                                 rein_error *why)
{
    char *question = rein_agent_review_question(
        "(a call from an MCP client: the user's request is not visible to rein)", chk->tool,
        chk->args);
    json_t *params =
        question ? json_pack("{s:[{s:s, s:{s:s, s:s}}], s:s, s:i, s:s}", "messages", "role", "user",
                             "content", "type", "text", "text", question, "systemPrompt",
                             rein_agent_review_system(), "maxTokens", 300, "includeContext", "none")
                 : NULL;
    json_t *result = NULL;
    const char *answer;
    char reason[300];
    rein_err rc;
    int64_t t0 = rein_now_ns();

    rein_free(question);
    if (!params)
        return rein_error_set(why, REIN_ENOMEM, "out of memory asking for a review");
    rc = ask_client(c, "sampling/createMessage", params, &result, why);
    json_decref(params);
    if (rc == REIN_ECANCELED || rc == REIN_ENOMEM)
        return rc;
    if (rc) {
        review_span_event(chk, "rejected", "failed", t0);
        rein_error_prefix(why, "not verified: ");
        return REIN_EDENIED;
    }
    answer = json_string_value(json_object_get(json_object_get(result, "content"), "text"));
    if (answer && rein_agent_review_verdict(answer, reason, sizeof(reason)))
        rc = REIN_OK;
    else
        rc = rein_error_set(why, REIN_EDENIED,
                            "self-verification by the client's model rejected this call: %s",
                            answer ? reason : "its answer had no text");
    review_span_event(chk, rc ? "rejected" : "passed", answer ? "said" : "unclear", t0);
    json_decref(result);
    return rc;
}

/*
 * The policy of a call from a client that can be asked (seed 001 over MCP): the server's own
 * policy first; then, for a destructive tool, self-verification by the client's model
 * (sampling) when it offers one, and the approval of the client's user through
 * elicitation/create (form mode: one boolean, "approve") when it offers that. Only a YES and
 * an accepted form with approve true run the call.
 */
static rein_err elicit_policy(void *ud, const struct rein_policy_check *chk, rein_error *why)
{
    struct mcp_call *c = ud;
    const struct rein_mcp_server_opts *o = &c->srv->opts;
    char *args = NULL, message[1400];
    json_t *params, *result = NULL;
    const char *action;
    rein_err rc = o->policy ? o->policy(o->policy_data, chk, why) : REIN_OK;

    if (rc || !rein_tool_is_destructive(chk->tool))
        return rc;
    if (client_offers(c->sess, "sampling") && (rc = review_by_client(c, chk, why)) != REIN_OK)
        return rc;
    if (!client_offers(c->sess, "elicitation"))
        return REIN_OK;
    args = rein_json_dumps(chk->args);
    snprintf(message, sizeof(message),
             "rein is about to run the destructive tool \"%s\" with the arguments %.1000s. "
             "Allow it?",
             rein_tool_id(chk->tool), args ? args : "{}");
    rein_free(args);
    params = json_pack("{s:s, s:{s:s, s:{s:{s:s, s:s, s:s}}, s:[s]}}", "message", message,
                       "requestedSchema", "type", "object", "properties", "approve", "type",
                       "boolean", "title", "Run it", "description",
                       "Allow rein to run this destructive tool once", "required", "approve");
    if (!params)
        return rein_error_set(why, REIN_ENOMEM, "out of memory asking for approval");
    int64_t t0 = rein_now_ns();
    rc = ask_client(c, "elicitation/create", params, &result, why);
    json_decref(params);
    if (rc == REIN_ECANCELED || rc == REIN_ENOMEM)
        return rc;
    if (rc) {
        approval_span_event(chk, "failed", t0);
        rein_error_prefix(why, "not approved: ");
        return REIN_EDENIED;
    }
    action = json_string_value(json_object_get(result, "action"));
    if (action && strcmp(action, "accept") == 0 &&
        json_is_true(json_object_get(json_object_get(result, "content"), "approve"))) {
        approval_span_event(chk, "approved", t0);
        json_decref(result);
        return REIN_OK;
    }
    approval_span_event(chk,
                        !action || strcmp(action, "accept") == 0 ? "denied"
                        : strcmp(action, "cancel") == 0          ? "cancelled"
                                                                 : "declined",
                        t0);
    rc = rein_error_set(why, REIN_EDENIED, "the client's user did not approve this call (%s)",
                        !action                         ? "no action"
                        : strcmp(action, "accept") == 0 ? "approve was not true"
                                                        : action);
    json_decref(result);
    return rc;
}

/*
 * The requestState key, found when a stateless call first needs it (so a server that never
 * serves one writes no key file): the configured secret's, else the state folder's, else a
 * random one, with a warning, since states then end with this process.
 */
static const uint8_t *state_key(rein_mcp_server *srv)
{
    char where[400];

    pthread_mutex_lock(&srv->mu);
    if (!srv->state_key_ready) {
        if (rein__mcp_state_key(srv->opts.state_secret, srv->state_key, where, sizeof(where)) ==
            REIN_OK) {
            rein_log(REIN_LOG_DEBUG, WHERE, "requestState key: %s", where);
        } else {
            rein_random_bytes(srv->state_key, sizeof(srv->state_key));
            rein_log(REIN_LOG_WARN, WHERE,
                     "requestState key: %s; using a random one, so states end with this "
                     "process (set REIN_MCP_STATE_SECRET to share one)",
                     where);
        }
        srv->state_key_ready = true;
    }
    pthread_mutex_unlock(&srv->mu);
    return srv->state_key;
}

/*
 * The answers a stateless tools/call brings (SEP-2322): inputResponses, over those its
 * requestState carried from earlier rounds. False, with the error sent, when the requestState
 * is not one this server sealed for this tool and these arguments (-32602).
 */
static bool round_answers(rein_mcp_server *srv, const struct rein__mcp_msg *msg, const char *tool,
                          const json_t *args, struct mcp_call *c, struct rein__mcp_sink *sink)
{
    const json_t *state = json_object_get(msg->params, "requestState");
    const json_t *given = json_object_get(msg->params, "inputResponses");
    json_t *answers = NULL;
    char why[300];

    if ((state && !json_is_string(state)) || (given && !json_is_object(given))) {
        send_errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS,
                    "params.requestState must be a string and params.inputResponses an object");
        return false;
    }
    if (state && rein__mcp_state_open(state_key(srv), json_string_value(state), tool, args,
                                      &answers, why, sizeof(why)) != REIN_OK) {
        send_errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS, "params.requestState: %s", why);
        return false;
    }
    if (!answers)
        answers = json_object();
    c->pending = json_object();
    if (!answers || !c->pending || (given && json_object_update(answers, (json_t *)given))) {
        json_decref(answers);
        send_errorf(sink, msg->id, REIN__MCP_INTERNAL_ERROR, "out of memory starting the call");
        return false;
    }
    c->answers = answers;
    return true;
}

/* Ends a stateless call's round with the questions its tool asked: an input-required result,
 * whose requestState carries the answers so far. */
static void send_input_required(rein_mcp_server *srv, struct mcp_call *c, const char *tool,
                                const json_t *args, const json_t *id, struct rein__mcp_sink *sink)
{
    char *state = rein__mcp_state_seal(state_key(srv), tool, args, c->answers);
    json_t *result = state ? json_pack("{s:s, s:O, s:s}", "resultType", "input_required",
                                       "inputRequests", c->pending, "requestState", state)
                           : NULL;

    rein_free(state);
    if (!result) {
        send_errorf(sink, id, REIN__MCP_INTERNAL_ERROR, "out of memory answering the call");
        return;
    }
    send_result(sink, id, result);
}

static void handle_tools_call(rein_mcp_server *srv, struct rein__mcp_session *sess,
                              const struct rein__mcp_msg *msg, const char *trace_id,
                              struct rein__mcp_sink *sink)
{
    const json_t *name = json_object_get(msg->params, "name");
    const json_t *args = json_object_get(msg->params, "arguments");
    json_t *empty = NULL;
    struct rein_call_input in = {0};
    struct rein_call_opts opts = {0};
    rein_call_result *res = NULL;
    struct mcp_call *c;
    rein_error err;
    json_t *result;

    if (!json_is_string(name)) {
        send_errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS,
                    "tools/call needs params.name, the name of a tool from tools/list");
        return;
    }
    if (args && !json_is_object(args) && !json_is_null(args)) {
        /* MCP's CallToolRequest has an object here; the pipeline would read a string as
         * argument text, which is a model's habit, not a client's. */
        send_errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS,
                    "tools/call needs params.arguments to be an object, not %s",
                    rein_json_type_name(args));
        return;
    }
    if (!args || json_is_null(args))
        args = empty = json_object();
    c = call_new(srv, sess, msg, sink);
    if (!c || !args) {
        json_decref(empty);
        call_unref(c);
        send_errorf(sink, msg->id, REIN__MCP_INTERNAL_ERROR, "out of memory starting the call");
        return;
    }
    if (rein__mcp_version_modern(sess->version) &&
        !round_answers(srv, msg, json_string_value(name), args, c, sink)) {
        json_decref(empty);
        call_unref(c);
        return;
    }
    in.name = json_string_value(name);
    in.name_len = json_string_length(name);
    in.args = args;
    in.trace_id = trace_id;
    /* A client's W3C trace context in params._meta continues its trace (the OpenTelemetry MCP
     * conventions); one that cannot be read is ignored, as an HTTP traceparent would be. */
    const json_t *meta = json_object_get(msg->params, "_meta");
    struct rein_trace_context tc;
    struct rein_trace_scope scope;
    bool has_tc = rein_trace_context_parse(json_string_value(json_object_get(meta, "traceparent")),
                                           json_string_value(json_object_get(meta, "tracestate")),
                                           &tc, NULL) == REIN_OK;
    if (has_tc)
        in.trace_id = tc.trace_id;
    opts.ledger = srv->opts.ledger;
    opts.cancel = c->cancel;
    opts.policy = srv->opts.policy;
    opts.policy_data = srv->opts.policy_data;
    if (client_offers(sess, "elicitation") || client_offers(sess, "sampling")) {
        opts.policy = elicit_policy;
        opts.policy_data = c;
    }
    opts.on_event = on_call_event;
    opts.event_data = c;
    opts.ask = ask_for_tool;
    opts.ask_data = c;
    /* Calls of one session are asked of one client; a stateless request's questions go back
     * in its own input-required result, so it is an asker of its own. */
    opts.asker = c->answers ? (const void *)c : (const void *)sess;
    /* A client calls the names tools/list gave it; a near miss is an unknown tool (MCP's
     * -32602), never the nearest tool. */
    opts.exact_name = true;
    call_list(srv, c);
    rein_error_clear(&err);
    if (has_tc)
        rein_trace_scope_enter(&scope, &tc);
    if (rein_call_run(srv->reg, &in, &opts, &res, &err) != REIN_OK)
        res = NULL;
    if (has_tc)
        rein_trace_scope_leave(&scope);
    /* From here on nothing but the response is sent for this call. */
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_mutex_unlock(&c->mu);
    call_unlist(srv, c);
    json_decref(empty);
    if (atomic_load(&c->client_cancelled)) {
        /* The client cancelled: MCP says no response is sent. */
        rein_log(REIN_LOG_INFO, WHERE, "call %s cancelled by the client", c->key);
    } else if (!res) {
        send_errorf(sink, msg->id, REIN__MCP_INTERNAL_ERROR, "the call could not run: %s",
                    err.msg[0] ? err.msg : rein_strerror(err.code));
    } else if (json_object_size(c->pending) > 0) {
        send_input_required(srv, c, json_string_value(name), args, msg->id, sink);
    } else if (!name_error(res, sink, msg->id)) {
        result = rein__mcp_call_result_json(res);
        send_result(sink, msg->id, result);
    }
    rein_call_result_free(res);
    call_unref(c);
}

static void handle_cancelled(rein_mcp_server *srv, struct rein__mcp_session *sess,
                             const struct rein__mcp_msg *msg)
{
    const json_t *id = json_object_get(msg->params, "requestId");
    const char *reason = param_str(msg, "reason");
    char key[CALL_KEY_SIZE], why[300];

    if (!rein__mcp_id_key(id, key, sizeof(key)))
        return; /* nothing a call could be found by; MCP says ignore */
    snprintf(why, sizeof(why), "cancelled by the MCP client%s%s", reason ? ": " : "",
             reason ? reason : "");
    pthread_mutex_lock(&srv->mu);
    for (struct mcp_call *c = srv->calls; c; c = c->next) {
        if ((c->sess == sess || c->sess->owner == sess) && strcmp(c->key, key) == 0) {
            atomic_store(&c->client_cancelled, true);
            rein_cancel_trigger(c->cancel, why);
        }
    }
    pthread_mutex_unlock(&srv->mu);
}

static void handle_notification(rein_mcp_server *srv, struct rein__mcp_session *sess,
                                const struct rein__mcp_msg *msg)
{
    if (strcmp(msg->method, "notifications/cancelled") == 0) {
        handle_cancelled(srv, sess, msg);
    } else if (strcmp(msg->method, "notifications/initialized") == 0) {
        pthread_mutex_lock(&sess->mu);
        sess->ready = true;
        pthread_mutex_unlock(&sess->mu);
    }
    /* Anything else (roots/list_changed, progress of requests rein never sent) is ignored. */
}

bool rein__mcp_is_long(const struct rein__mcp_msg *msg)
{
    return msg->kind == REIN__MCP_REQUEST && (strcmp(msg->method, "tools/call") == 0 ||
                                              strcmp(msg->method, "subscriptions/listen") == 0);
}

bool rein__mcp_asks_first(rein_mcp_server *srv, struct rein__mcp_session *sess,
                          const struct rein__mcp_msg *msg)
{
    const char *name = json_string_value(json_object_get(msg->params, "name"));
    const json_t *args = json_object_get(msg->params, "arguments");
    json_t *ask;

    if (msg->kind != REIN__MCP_REQUEST || strcmp(msg->method, "prompts/get") != 0 || !name ||
        (args && !json_is_object(args)) || !sess || !client_offers(sess, "elicitation"))
        return false;
    ask = rein__mcp_prompts_ask(srv->prompts, name, args);
    json_decref(ask);
    return ask != NULL;
}

rein_err rein__mcp_ask_during(rein_mcp_server *srv, struct rein__mcp_session *sess,
                              const struct rein__mcp_msg *msg, struct rein__mcp_sink *sink,
                              const char *method, const json_t *params, json_t **result,
                              rein_error *err)
{
    struct mcp_call *c = call_new(srv, sess, msg, sink);
    rein_err rc;

    *result = NULL;
    if (!c)
        return rein_error_set(err, REIN_ENOMEM, "out of memory asking the client");
    /* Listed like a running call, so that the client's notifications/cancelled for msg ends
     * the wait. */
    call_list(srv, c);
    rc = ask_client(c, method, params, result, err);
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_mutex_unlock(&c->mu);
    call_unlist(srv, c);
    call_unref(c);
    return rc;
}

/* ---- subscriptions/listen (2026-07-28) ---------------------------------------------------- */

/* The listen request's stream as the session's notification sink: only the notifications the
 * client opted in to pass, each with the subscription's id in params._meta. */
struct listen_sink {
    struct rein__mcp_sink sink;
    struct rein__mcp_sink *inner;
    const json_t *id;
    bool tools; /* toolsListChanged */
};

static void listen_send(struct rein__mcp_sink *sink, const char *json, size_t len, bool final)
{
    struct listen_sink *ls = (struct listen_sink *)sink;
    json_t *msg = rein_json_parse(json, len, 0, NULL), *params, *meta;
    const char *m = json_string_value(json_object_get(msg, "method"));
    struct rein_buf b;

    /* Nothing the client did not ask for (the spec's MUST NOT): resource updates come only for
     * its resourceSubscriptions, which are the session's only subscriptions. */
    if (!m || json_object_get(msg, "id") ||
        !(strcmp(m, "notifications/subscriptions/acknowledged") == 0 ||
          strcmp(m, "notifications/resources/updated") == 0 ||
          (ls->tools && strcmp(m, "notifications/tools/list_changed") == 0))) {
        json_decref(msg);
        return;
    }
    params = json_object_get(msg, "params");
    if (!json_is_object(params) && json_object_set_new(msg, "params", params = json_object()))
        params = NULL;
    meta = json_object_get(params, "_meta");
    if (params && !json_is_object(meta) &&
        json_object_set_new(params, "_meta", meta = json_object()))
        meta = NULL;
    rein_buf_init(&b, 0);
    if (meta && json_object_set(meta, REIN__MCP_META_SUB, (json_t *)ls->id) == 0 &&
        rein_json_dump(&b, msg) == REIN_OK)
        ls->inner->send(ls->inner, b.ptr, b.len, final);
    rein_buf_release(&b);
    json_decref(msg);
}

/* The filter's parts rein honours: toolsListChanged and resourceSubscriptions (its prompts
 * and resource lists do not change while it runs). NULL, with why, when it is malformed. */
static json_t *listen_filter(const json_t *filter, char *why, size_t size)
{
    const json_t *uris = json_object_get(filter, "resourceSubscriptions"), *v;
    json_t *honored;
    size_t i;

    if (!json_is_object(filter)) {
        snprintf(why, size, "subscriptions/listen needs params.notifications, an object");
        return NULL;
    }
    if (uris && (!json_is_array(uris) || json_array_size(uris) > SUBS_MAX)) {
        snprintf(why, size,
                 "params.notifications.resourceSubscriptions must be an array of at "
                 "most %d URIs",
                 SUBS_MAX);
        return NULL;
    }
    json_array_foreach(uris, i, v)
    {
        if (!json_is_string(v)) {
            snprintf(why, size, "params.notifications.resourceSubscriptions/%zu is not a string",
                     i);
            return NULL;
        }
    }
    honored = json_object();
    if (!honored ||
        (json_is_true(json_object_get(filter, "toolsListChanged")) &&
         json_object_set_new(honored, "toolsListChanged", json_true())) ||
        (json_array_size(uris) > 0 &&
         json_object_set(honored, "resourceSubscriptions", (json_t *)uris))) {
        json_decref(honored);
        snprintf(why, size, "out of memory");
        return NULL;
    }
    return honored;
}

/*
 * A stateless client's long-lived channel for notifications: acknowledged first (what rein
 * will send), then tools/list_changed and resources/updated as they happen, until the client
 * cancels it (stdio) or closes the stream (HTTP), which ends it with no response; when the
 * server stops, the response (an empty result naming the subscription) ends it. Each stream
 * holds a worker, so at most half the pool listens at once.
 */
static void handle_listen(rein_mcp_server *srv, struct rein__mcp_session *sess,
                          const struct rein__mcp_msg *msg, struct rein__mcp_sink *sink)
{
    struct listen_sink ls = {{listen_send, 0}, sink, msg->id, false};
    int max = srv->opts.threads / 2 > 0 ? srv->opts.threads / 2 : 1;
    json_t *honored, *ack, *v;
    struct mcp_call *c = NULL;
    struct rein_buf b;
    char why[200];
    size_t i;

    honored = listen_filter(json_object_get(msg->params, "notifications"), why, sizeof(why));
    if (!honored) {
        send_errorf(sink, msg->id, REIN__MCP_INVALID_PARAMS, "%s", why);
        return;
    }
    if (atomic_fetch_add(&srv->listeners, 1) >= max) {
        atomic_fetch_sub(&srv->listeners, 1);
        json_decref(honored);
        send_errorf(sink, msg->id, REIN__MCP_INTERNAL_ERROR,
                    "this server already has %d subscriptions/listen streams open; close one", max);
        return;
    }
    json_array_foreach(json_object_get(honored, "resourceSubscriptions"), i, v)
    {
        /* A URI that does not exist yet may be subscribed to: its appearing is a change. */
        char *fp = rein__mcp_resources_fingerprint(srv->resources, json_string_value(v));
        if (!fp || rein__mcp_session_subscribe(sess, json_string_value(v), fp) != REIN_OK) {
            rein_free(fp);
            goto nomem;
        }
        rein_free(fp);
    }
    c = call_new(srv, sess, msg, sink);
    ack = json_pack("{s:O}", "notifications", honored);
    rein_buf_init(&b, 0);
    if (!c || !ack ||
        rein__mcp_write_notification(&b, "notifications/subscriptions/acknowledged", ack)) {
        json_decref(ack);
        rein_buf_release(&b);
        goto nomem;
    }
    json_decref(ack);
    pthread_mutex_lock(&sess->mu);
    ls.tools = json_is_true(json_object_get(honored, "toolsListChanged"));
    sess->notify = &ls.sink;
    ls.sink.send(&ls.sink, b.ptr, b.len, false); /* first, before any other (under mu) */
    pthread_mutex_unlock(&sess->mu);
    rein_buf_release(&b);
    call_list(srv, c);
    while (!rein_cancel_wait(c->cancel, 1000))
        ;
    pthread_mutex_lock(&sess->mu);
    sess->notify = NULL;
    pthread_mutex_unlock(&sess->mu);
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_mutex_unlock(&c->mu);
    call_unlist(srv, c);
    if (!atomic_load(&c->client_cancelled) && rein_cancel_is_set(srv->root))
        send_result(sink, msg->id, json_pack("{s:{s:O}}", "_meta", REIN__MCP_META_SUB, msg->id));
    call_unref(c);
    json_decref(honored);
    atomic_fetch_sub(&srv->listeners, 1);
    return;

nomem:
    call_unref(c);
    json_decref(honored);
    atomic_fetch_sub(&srv->listeners, 1);
    send_errorf(sink, msg->id, REIN__MCP_INTERNAL_ERROR, "out of memory");
}

/* The longest a call may take to be run where it arrives (HTTP: on the network thread). */
#define QUICK_MAX_TIMEOUT_MS 1000

bool rein__mcp_is_quick_call(rein_mcp_server *srv, const struct rein__mcp_msg *msg)
{
    const char *name = param_str(msg, "name");
    const rein_tool *tool = name ? rein_registry_get(srv->reg, name) : NULL;

    /* A built-in tool with a short limit (echo, calculator) runs at once, as POST
     * /skills/{id}/invoke runs it; anything that may wait (a process, a URL, another MCP
     * server, a person asked to approve) gets a stream and the pool. */
    return tool && strcmp(rein_tool_runner_kind(tool), "builtin") == 0 &&
           rein_tool_timeout_ms(tool) > 0 && rein_tool_timeout_ms(tool) <= QUICK_MAX_TIMEOUT_MS &&
           !rein_tool_is_destructive(tool) && !srv->opts.policy;
}

/* The methods of an initialized session (of either revision). */
static void dispatch(rein_mcp_server *srv, struct rein__mcp_session *sess,
                     const struct rein__mcp_msg *msg, const char *trace_id,
                     struct rein__mcp_sink *sink)
{
    const char *m = msg->method;

    if (strcmp(m, "tools/list") == 0) {
        handle_tools_list(srv, msg, sink);
    } else if (strcmp(m, "tools/call") == 0) {
        handle_tools_call(srv, sess, msg, trace_id, sink);
    } else if (strcmp(m, "logging/setLevel") == 0) {
        handle_set_level(sess, msg, sink);
    } else if (rein__mcp_handle_context(srv, sess, msg, sink)) {
        /* resources, prompts and completion: methods.c */
    } else {
        send_errorf(sink, msg->id, REIN__MCP_METHOD_NOT_FOUND, "Method not found: %.200s", m);
    }
}

/* ---- the stateless revision (2026-07-28) ------------------------------------------------ */

/*
 * A request that names its version in _meta is served on its own: a session made for it
 * alone carries the version, the client's capabilities and the log level it asked for (none:
 * no notifications/message), and dies with the request. Its results go through a sink that
 * adds what the revision asks of every result (resultType, the server's identity) and the
 * cache hints of the listing methods.
 */
struct modern_sink {
    struct rein__mcp_sink sink; /* first */
    struct rein__mcp_sink *inner;
    rein_mcp_server *srv;
    const char *method;
};

static void modern_send(struct rein__mcp_sink *sink, const char *json, size_t len, bool final)
{
    struct modern_sink *ms = (struct modern_sink *)sink;

    atomic_store(&ms->inner->error_code, atomic_load(&sink->error_code));
    ms->inner->send(ms->inner, json, len, final);
}

/* ttlMs and cacheScope of a method's results (caching.mdx), or false for the methods whose
 * results are not cacheable. Lists are fresh for no time: rein's tools change when the MCP
 * servers it uses come and go, and this revision's change notifications (subscriptions/listen)
 * are not served. Resources hold stored conversations: private. */
static bool cache_hints(const char *method, int64_t *ttl_ms, const char **scope)
{
    static const struct {
        const char *method;
        int64_t ttl_ms;
        const char *scope;
    } hints[] = {
        {"server/discover", 60000, "public"}, {"tools/list", 0, "public"},
        {"prompts/list", 0, "public"},        {"resources/templates/list", 0, "public"},
        {"resources/list", 0, "private"},     {"resources/read", 0, "private"},
    };

    for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
        if (strcmp(method, hints[i].method) == 0) {
            *ttl_ms = hints[i].ttl_ms;
            *scope = hints[i].scope;
            return true;
        }
    }
    return false;
}

/* result (taken) with the stateless revision's additions when sink is a modern one; NULL when
 * memory ran out. */
static json_t *modern_result(struct rein__mcp_sink *sink, json_t *result)
{
    const struct modern_sink *ms = (const struct modern_sink *)sink;
    json_t *meta;
    int64_t ttl_ms;
    const char *scope;
    bool failed;

    if (!result || sink->send != modern_send)
        return result;
    meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        if (json_object_set_new(result, "_meta", meta))
            meta = NULL;
    }
    /* An input-required result names its own type. */
    failed = !meta ||
             (!json_object_get(result, "resultType") &&
              json_object_set_new(result, "resultType", json_string("complete"))) ||
             json_object_set_new(
                 meta, REIN__MCP_META_SERVER,
                 json_pack("{s:s, s:s}", "name", ms->srv->opts.name, "version", rein_version()));
    if (!failed && cache_hints(ms->method, &ttl_ms, &scope))
        failed = json_object_set_new(result, "ttlMs", json_integer(ttl_ms)) ||
                 json_object_set_new(result, "cacheScope", json_string(scope));
    if (failed) {
        json_decref(result);
        return NULL;
    }
    return result;
}

static void handle_discover(rein_mcp_server *srv, const struct rein__mcp_msg *msg,
                            struct rein__mcp_sink *sink)
{
    /* This revision's change notifications come through subscriptions/listen: tools change
     * (MCP servers rein uses come and go) and resources can be subscribed to there. */
    json_t *result = json_pack("{s:o, s:{s:{s:b}, s:{}, s:{s:b}, s:{}, s:{}}}", "supportedVersions",
                               rein__mcp_versions_json(), "capabilities", "tools", "listChanged", 1,
                               "logging", "resources", "subscribe", 1, "prompts", "completions");

    if (result && srv->opts.instructions &&
        json_object_set_new(result, "instructions", json_string(srv->opts.instructions))) {
        json_decref(result);
        result = NULL;
    }
    send_result(sink, msg->id, result);
}

/* The methods 2026-07-28 removed (or rein does not serve in it); -32601 like any unknown. */
static bool modern_unserved(const char *method)
{
    static const char *const gone[] = {"initialize", "ping", "logging/setLevel",
                                       "resources/subscribe", "resources/unsubscribe"};

    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
        if (strcmp(method, gone[i]) == 0)
            return true;
    }
    return false;
}

static void handle_modern(rein_mcp_server *srv, struct rein__mcp_session *conn,
                          const struct rein__mcp_msg *msg, const char *version,
                          const char *trace_id, struct rein__mcp_sink *sink)
{
    const json_t *meta = json_object_get(msg->params, "_meta");
    const json_t *caps = json_object_get(meta, REIN__MCP_META_CAPS);
    const json_t *level = json_object_get(meta, REIN__MCP_META_LEVEL);
    struct modern_sink ms = {{modern_send, 0}, sink, srv, msg->method};
    struct rein__mcp_session *s;
    json_t *data;
    char why[300];

    if (!rein__mcp_check_meta(msg, why, sizeof(why))) {
        send_error_data(sink, msg->id, REIN__MCP_INVALID_PARAMS, why, NULL);
        return;
    }
    if (!rein__mcp_version_modern(version)) {
        data =
            json_pack("{s:o, s:s}", "supported", rein__mcp_versions_json(), "requested", version);
        send_error_data(sink, msg->id, REIN__MCP_UNSUPPORTED_VERSION,
                        "Unsupported protocol version (requests without initialize speak "
                        "2026-07-28; the older revisions start with initialize)",
                        data);
        json_decref(data);
        return;
    }
    if (modern_unserved(msg->method)) {
        send_errorf(sink, msg->id, REIN__MCP_METHOD_NOT_FOUND,
                    "Method not found: %.200s (not part of 2026-07-28 as rein serves it)",
                    msg->method);
        return;
    }
    if (strcmp(msg->method, "server/discover") == 0) {
        handle_discover(srv, msg, &ms.sink);
        return;
    }
    s = rein__mcp_session_new_under(srv, conn ? conn->cancel : NULL);
    if (!s) {
        send_errorf(sink, msg->id, REIN__MCP_INTERNAL_ERROR, "out of memory");
        return;
    }
    snprintf(s->version, sizeof(s->version), "%s", version);
    s->initialized = s->ready = true;
    /* Past emergency: no log notification qualifies unless the request asked for a level. */
    atomic_store(&s->level, level ? rein__mcp_level_index(json_string_value(level)) : 8);
    s->client_info = json_incref(json_object_get(meta, REIN__MCP_META_INFO));
    s->client_caps = json_incref((json_t *)caps);
    s->owner = conn;
    if (strcmp(msg->method, "subscriptions/listen") == 0)
        handle_listen(srv, s, msg, &ms.sink);
    else
        dispatch(srv, s, msg, trace_id, &ms.sink);
    rein__mcp_session_unref(s);
}

void rein__mcp_handle(rein_mcp_server *srv, struct rein__mcp_session *sess,
                      const struct rein__mcp_msg *msg, const char *trace_id,
                      struct rein__mcp_sink *sink)
{
    const char *m = msg->method;
    const char *version;

    if (msg->kind == REIN__MCP_NOTIFICATION) {
        if (sess)
            handle_notification(srv, sess, msg);
        return;
    }
    if (msg->kind != REIN__MCP_REQUEST) {
        if (sess)
            answer_out(sess->owner ? sess->owner : sess, msg);
        return;
    }
    version = rein__mcp_is_legacy_initialize(msg) ? NULL : rein__mcp_request_version(msg);
    if (version) {
        handle_modern(srv, sess, msg, version, trace_id, sink);
    } else if (!sess) {
        send_errorf(sink, msg->id, REIN__MCP_INVALID_REQUEST,
                    "no session: send initialize first, or name the protocol version in "
                    "params._meta[\"%s\"] (2026-07-28)",
                    REIN__MCP_META_VERSION);
    } else if (strcmp(m, "initialize") == 0 && srv->opts.stateless_only) {
        send_errorf(sink, msg->id, REIN__MCP_METHOD_NOT_FOUND,
                    "Method not found: initialize (this server speaks only %s: name the version "
                    "in each request's params._meta; server/discover tells the rest)",
                    REIN__MCP_MODERN);
    } else if (strcmp(m, "initialize") == 0) {
        handle_initialize(srv, sess, msg, sink);
    } else if (strcmp(m, "ping") == 0) {
        send_result(sink, msg->id, json_object());
    } else if (!sess->initialized) {
        send_errorf(sink, msg->id, REIN__MCP_INVALID_REQUEST,
                    "the session is not initialized: send initialize first");
    } else {
        dispatch(srv, sess, msg, trace_id, sink);
    }
}

/* ---- the server object ------------------------------------------------------------------ */

const struct rein_mcp_server_opts *rein__mcp_opts(const rein_mcp_server *srv)
{
    return &srv->opts;
}

rein_err rein__mcp_submit(rein_mcp_server *srv, void (*fn)(void *arg), void *arg)
{
    return rein_pool_submit(srv->pool, fn, arg);
}

struct rein__mcp_resources *rein__mcp_srv_resources(rein_mcp_server *srv)
{
    return srv->resources;
}

struct rein__mcp_prompts *rein__mcp_srv_prompts(rein_mcp_server *srv)
{
    return srv->prompts;
}

const rein_registry *rein__mcp_srv_registry(rein_mcp_server *srv)
{
    return srv->reg;
}

rein_err rein_mcp_server_load_dir(rein_mcp_server *srv, const char *dir, rein_error *err)
{
    char *path;
    struct stat st;
    rein_err rc;

    if (!srv || !dir)
        return rein_error_set(err, REIN_EINVAL, "no MCP server or no folder");
    path = rein_asprintf("%s/resources.json", dir);
    if (!path)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = stat(path, &st) == 0 ? rein__mcp_resources_load_file(srv->resources, path, err) : REIN_OK;
    rein_free(path);
    if (rc)
        return rc;
    path = rein_asprintf("%s/prompts", dir);
    if (!path)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = rein__mcp_prompts_load_dir(srv->prompts, path, err);
    rein_free(path);
    return rc;
}

struct rein__mcp_http *rein__mcp_http_get(rein_mcp_server *srv)
{
    struct rein__mcp_http *h;

    pthread_mutex_lock(&srv->mu);
    h = srv->http;
    pthread_mutex_unlock(&srv->mu);
    return h;
}

void rein__mcp_http_set(rein_mcp_server *srv, struct rein__mcp_http *h)
{
    pthread_mutex_lock(&srv->mu);
    srv->http = h;
    pthread_mutex_unlock(&srv->mu);
}

static char *dup_or_null(const char *s, bool *failed)
{
    char *d;

    if (!s)
        return NULL;
    d = rein_strdup(s);
    if (!d)
        *failed = true;
    return d;
}

rein_mcp_server *rein_mcp_server_new(const rein_registry *reg,
                                     const struct rein_mcp_server_opts *opts, rein_error *err)
{
    rein_mcp_server *srv;
    bool failed = false;

    if (!reg) {
        rein_error_set(err, REIN_EINVAL, "an MCP server needs a registry");
        return NULL;
    }
    srv = rein_calloc(1, sizeof(*srv));
    if (!srv)
        goto nomem;
    pthread_mutex_init(&srv->mu, NULL);
    srv->reg = reg;
    if (opts)
        srv->opts = *opts;
    srv->name = dup_or_null(srv->opts.name ? srv->opts.name : "rein", &failed);
    srv->instructions = dup_or_null(srv->opts.instructions, &failed);
    srv->allowed_hosts = dup_or_null(srv->opts.allowed_hosts, &failed);
    srv->state_secret = dup_or_null(srv->opts.state_secret, &failed);
    srv->opts.state_secret = srv->state_secret;
    srv->opts.name = srv->name;
    srv->opts.instructions = srv->instructions;
    srv->opts.allowed_hosts = srv->allowed_hosts;
    if (!srv->opts.threads)
        srv->opts.threads = 8;
    if (!srv->opts.progress_interval_ms)
        srv->opts.progress_interval_ms = 1000;
    if (srv->opts.progress_interval_ms < 0)
        srv->opts.progress_interval_ms = INT64_MAX / 2;
    if (srv->opts.sse_retry_ms <= 0)
        srv->opts.sse_retry_ms = 1000;
    if (!srv->opts.max_sessions)
        srv->opts.max_sessions = 1024;
    if (srv->opts.session_idle_ms <= 0)
        srv->opts.session_idle_ms = 3600 * 1000;
    if (!srv->opts.max_message_bytes)
        srv->opts.max_message_bytes = (size_t)4 << 20;
    atomic_init(&srv->tools_dirty, false);
    atomic_init(&srv->tell_sessions, false);
    srv->tools = rein_registry_tools_json(reg, REIN_TOOLS_MCP);
    srv->watch = rein_registry_watch(reg, on_registry_change, srv);
    srv->resources = rein__mcp_resources_new();
    srv->prompts = rein__mcp_prompts_new();
    if (!srv->resources || !srv->prompts)
        goto nomem_free;
    rein__mcp_resources_set_store(srv->resources, srv->opts.store);
    if (srv->opts.roots && rein__mcp_resources_set_roots(srv->resources, srv->opts.roots, err))
        goto fail;
    srv->opts.roots = NULL; /* borrowed from the caller: the resources keep their own copy */
    srv->stop = rein_cancel_new();
    srv->root = rein_cancel_new();
    if (failed || !srv->tools || !srv->stop || !srv->root || !srv->watch)
        goto nomem_free;
    srv->pool = rein_pool_new(srv->opts.threads, err);
    if (!srv->pool)
        goto fail;
    if (pthread_create(&srv->ticker, NULL, ticker_main, srv) != 0) {
        rein_error_set(err, REIN_ENOMEM, "mcp: cannot start the heartbeat thread");
        goto fail;
    }
    srv->ticker_running = true;
    return srv;

nomem_free:
    rein_error_set(err, REIN_ENOMEM, "out of memory creating the MCP server");
fail:
    rein_mcp_server_free(srv);
    return NULL;
nomem:
    rein_error_set(err, REIN_ENOMEM, "out of memory creating the MCP server");
    return NULL;
}

void rein_mcp_server_free(rein_mcp_server *srv)
{
    if (!srv)
        return;
    rein_registry_unwatch(srv->reg, srv->watch);
    /* The ticker goes first: it reads the HTTP state freed below. */
    if (srv->ticker_running) {
        rein_cancel_trigger(srv->stop, "stop");
        pthread_join(srv->ticker, NULL);
    }
    rein_cancel_trigger(srv->root, "the MCP server is shutting down");
    /* The pool finishes the jobs it has (cancelled calls end quickly) before it stops. */
    rein_pool_free(srv->pool);
    rein__mcp_http_free(srv->http);
    rein_cancel_unref(srv->stop);
    rein_cancel_unref(srv->root);
    json_decref(srv->tools);
    rein__mcp_resources_free(srv->resources);
    rein__mcp_prompts_free(srv->prompts);
    rein_free(srv->name);
    rein_free(srv->instructions);
    rein_free(srv->allowed_hosts);
    rein_free(srv->state_secret);
    pthread_mutex_destroy(&srv->mu);
    rein_free(srv);
}
