/*
 * rein as an MCP client: one connection to one MCP server, over stdio (a program rein starts
 * without a shell) or Streamable HTTP (libcurl).
 *
 * Requests carry integer ids and wait in a pending list until their response arrives. Over
 * stdio a reader thread reads the server's stdout line by line and dispatches every message:
 * responses to their pending request, progress notifications (the request id is the
 * progressToken) and log notifications to the call's invocation events, and the server's own
 * requests (ping is answered; sampling and elicitation, when offered, go to the asker of the call
 * they belong to; anything else is refused with -32601). Over HTTP each request is a POST whose answer (one JSON body, or an event
 * stream carrying notifications and then the response) is read on the calling thread; a stream
 * that ends before the response is resumed with a GET carrying Last-Event-ID after the
 * server's retry delay; an expired session (404) is initialized again and the request sent
 * once more.
 *
 * Everything a server can do wrong ends in a clear error and never a hang: it exits (pending
 * requests fail with its exit status and the end of its stderr; the next call starts it
 * again), writes lines that are not JSON-RPC (counted and skipped; the last is quoted if a
 * request then times out), answers ids that were never sent (counted and ignored), sends a
 * message larger than the limit (the connection is closed), answers HTML or an HTTP error.
 * A timeout or a cancel sends notifications/cancelled for the request.
 */
#include "mcp/mcp_int.h"
#include "mcp/client_int.h"
#include "mcp/oauth_int.h"

#include <rein/trace.h>
#include <rein/version.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#define WHERE          "mcp/client"
#define MAX_TOOL_PAGES 100

static const char *const state_names[] = {"not connected", "ready", "failed", "exited"};

/* ---- pending requests ------------------------------------------------------------------- */

static void wake(void *ud)
{
    struct rein__mcp_conn *c = ud;

    pthread_mutex_lock(&c->mu);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Fails every pending request (mu held). */
void rein__mcp_client_fail_all(struct rein__mcp_conn *c, rein_err rc, const char *msg)
{
    for (struct rein__mcp_pending *p = c->pending; p; p = p->next) {
        if (!p->done) {
            p->done = true;
            p->fail_rc = rc;
            snprintf(p->fail_msg, sizeof(p->fail_msg), "%s", msg);
        }
    }
    pthread_cond_broadcast(&c->cv);
}

static void pending_add(struct rein__mcp_conn *c, struct rein__mcp_pending *p)
{
    pthread_mutex_lock(&c->mu);
    p->id = ++c->next_id;
    p->next = c->pending;
    c->pending = p;
    pthread_mutex_unlock(&c->mu);
}

/* Unlinks p and waits until no dispatch is reporting to it (mu held). */
static void pending_remove(struct rein__mcp_conn *c, struct rein__mcp_pending *p)
{
    for (struct rein__mcp_pending **pp = &c->pending; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    while (p->busy > 0)
        pthread_cond_wait(&c->cv, &c->mu);
}

static struct rein__mcp_pending *pending_find(struct rein__mcp_conn *c, int64_t id)
{
    for (struct rein__mcp_pending *p = c->pending; p; p = p->next) {
        if (p->id == id)
            return p;
    }
    return NULL;
}

/* Waits for p until it is done, the deadline (0: none) passes or cancel triggers. */
static rein_err pending_wait(struct rein__mcp_conn *c, struct rein__mcp_pending *p,
                             int64_t deadline, rein_cancel *cancel)
{
    int hook = cancel ? rein_cancel_on(cancel, wake, c) : 0;
    rein_err rc = REIN_OK;

    pthread_mutex_lock(&c->mu);
    while (!p->done) {
        int64_t now = rein_now_ms(), wait = 1000, idle = rein__mcp_pending_idle_deadline(p);
        int64_t until = deadline && (!idle || deadline < idle) ? deadline : idle;
        if (rein_cancel_is_set(cancel)) {
            rc = REIN_ECANCELED;
            break;
        }
        if (until && now >= until) {
            rc = REIN_ETIMEDOUT;
            break;
        }
        if (until && until - now < wait)
            wait = until - now;
        rein__mcp_cond_wait_ms(&c->cv, &c->mu, wait);
    }
    pthread_mutex_unlock(&c->mu);
    if (hook > 0)
        rein_cancel_off(cancel, hook);
    return rc;
}

/* ---- dispatching what the server sends -------------------------------------------------- */

/* Reports ev to the pending request id's invocation, outside the lock. */
static void report(struct rein__mcp_conn *c, int64_t id, bool by_id, struct rein_call_event *ev)
{
    struct rein__mcp_pending *p = NULL;

    pthread_mutex_lock(&c->mu);
    if (by_id) {
        p = pending_find(c, id);
    } else {
        /* A log line is not tied to a request: it goes to the one call running, if one. */
        int n = 0;
        for (struct rein__mcp_pending *q = c->pending; q; q = q->next) {
            if (q->inv) {
                p = q;
                n++;
            }
        }
        if (n != 1)
            p = NULL;
    }
    if (p && by_id && ev->kind == REIN_CALL_EVENT_PROGRESS)
        p->activity_ms = rein_now_ms(); /* progress: the server is still at it */
    if (p && p->inv && !p->done)
        p->busy++;
    else
        p = NULL;
    pthread_mutex_unlock(&c->mu);
    if (!p) {
        if (ev->kind == REIN_CALL_EVENT_LOG) {
            char *text = rein_json_dumps(ev->data);
            rein_log(REIN_LOG_INFO, WHERE, "%s [%s]: %.300s", c->cfg->name, ev->level,
                     text ? text : "");
            rein_free(text);
        }
        return;
    }
    rein_invocation_event(p->inv, ev);
    pthread_mutex_lock(&c->mu);
    p->busy--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void on_notification(struct rein__mcp_conn *c, const struct rein__mcp_msg *msg,
                            const struct rein__mcp_pending *current)
{
    struct rein_call_event ev = {0};
    const json_t *v;

    if (strcmp(msg->method, "notifications/progress") == 0) {
        const json_t *token = json_object_get(msg->params, "progressToken");
        v = json_object_get(msg->params, "progress");
        if (!json_is_integer(token) || !json_is_number(v))
            return;
        ev.kind = REIN_CALL_EVENT_PROGRESS;
        ev.progress = json_number_value(v);
        v = json_object_get(msg->params, "total");
        ev.total = json_is_number(v) ? json_number_value(v) : -1;
        ev.message = json_string_value(json_object_get(msg->params, "message"));
        report(c, (int64_t)json_integer_value(token), true, &ev);
    } else if (strcmp(msg->method, "notifications/message") == 0) {
        ev.kind = REIN_CALL_EVENT_LOG;
        ev.level = json_string_value(json_object_get(msg->params, "level"));
        ev.logger = json_string_value(json_object_get(msg->params, "logger"));
        ev.data = json_object_get(msg->params, "data");
        if (rein__mcp_level_index(ev.level) < 0 || !ev.data)
            return;
        /* Over HTTP a log line on a request's stream belongs to that request. */
        report(c, current ? current->id : 0, current != NULL, &ev);
    } else if (strcmp(msg->method, "notifications/tools/list_changed") == 0) {
        /* The owner lists the tools again (runner.c's supervisor) and updates the registry. */
        pthread_mutex_lock(&c->mu);
        c->tools_stale = true;
        pthread_mutex_unlock(&c->mu);
        rein__mcp_client_changed(c);
    }
}

void rein__mcp_client_changed(struct rein__mcp_conn *c)
{
    pthread_mutex_lock(&c->change_mu);
    if (c->on_change)
        c->on_change(c->change_ud);
    pthread_mutex_unlock(&c->change_mu);
}

void rein__mcp_conn_watch(struct rein__mcp_conn *c, void (*fn)(void *ud), void *ud)
{
    pthread_mutex_lock(&c->change_mu);
    c->on_change = fn;
    c->change_ud = ud;
    pthread_mutex_unlock(&c->change_mu);
    pthread_mutex_lock(&c->mu);
    c->supervised = fn != NULL;
    pthread_mutex_unlock(&c->mu);
}

/* ---- the server's own requests ---------------------------------------------------------- */

/* Answers the server's request id: result (borrowed), or the error code and message. */
static void answer(struct rein__mcp_conn *c, const json_t *id, const json_t *result, int code,
                   const char *message)
{
    struct rein_buf b;
    rein_err rc;

    rein_buf_init(&b, 0);
    rc = result ? rein__mcp_write_result(&b, id, result)
                : rein__mcp_write_error(&b, id, code, message, NULL);
    if (rc == REIN_OK && rein__mcp_client_send_raw(c, b.ptr, b.len, NULL) != REIN_OK)
        rein_log(REIN_LOG_INFO, WHERE, "%s: could not answer one of its requests", c->cfg->name);
    rein_buf_release(&b);
}

/* The capability (REIN_MCP_OFFER_*) a server's request needs of rein, or 0. */
static unsigned offer_of(const char *method)
{
    if (strcmp(method, "sampling/createMessage") == 0)
        return REIN_MCP_OFFER_SAMPLING;
    if (strcmp(method, "elicitation/create") == 0)
        return REIN_MCP_OFFER_ELICITATION;
    return 0;
}

void rein__mcp_conn_offer(struct rein__mcp_conn *c, unsigned offers)
{
    pthread_mutex_lock(&c->mu);
    c->offers = offers;
    pthread_mutex_unlock(&c->mu);
}

/* A server's question on its way to a call's asker, on a thread of its own. */
struct question {
    struct rein__mcp_conn *c;    /* a reference */
    struct rein__mcp_pending *p; /* its busy and asking count this question */
    json_t *id, *params;         /* copies, owned */
    const char *method;          /* static */
};

static void *question_main(void *arg)
{
    struct question *q = arg;
    struct rein__mcp_conn *c = q->c;
    char hash[65], key[200];
    json_t *result = NULL;
    rein_error err;
    rein_err rc;

    rein_error_clear(&err);
    /* The key is the same whenever the server asks the same thing, so that a stateless
     * client's later round (MCP 2026-07-28's input-required results) answers the question
     * the server asks again when the call is sent again. */
    if (!rein__mcp_json_hash(q->params, hash)) {
        rc = rein_error_set(&err, REIN_ENOMEM, "out of memory");
    } else {
        snprintf(key, sizeof(key), "mcp:%.80s:%s:%.16s", c->cfg->name, q->method, hash);
        rc = rein_invocation_ask(q->p->inv, key, q->method, q->params, &result, &err);
    }
    /* Answered while the call still counts this question, so the call cannot end (and its
     * owner close the connection) before the server has its answer. */
    if (rc == REIN_OK)
        answer(c, q->id, result, 0, NULL);
    else
        answer(c, q->id, NULL,
               rc == REIN_ENOTSUP ? REIN__MCP_METHOD_NOT_FOUND : REIN__MCP_INTERNAL_ERROR, err.msg);
    pthread_mutex_lock(&c->mu);
    q->p->asking--;
    q->p->activity_ms = rein_now_ms();
    q->p->busy--; /* q->p may end from here on */
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    json_decref(result);
    json_decref(q->id);
    json_decref(q->params);
    rein__mcp_conn_unref(c);
    rein_free(q);
    return NULL;
}

static bool start_detached(void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_t t;
    bool ok;

    if (pthread_attr_init(&attr) != 0)
        return false;
    ok = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
         pthread_create(&t, &attr, fn, arg) == 0;
    pthread_attr_destroy(&attr);
    return ok;
}

/*
 * The call a question from outside any call's stream goes to (c->mu held), or NULL; *n is the
 * number of calls running. MCP ties such a question to one of rein's requests but, over stdio,
 * carries nothing that says which (SEP-2260). Any of them will do when they all come from one
 * client (the same non-NULL rein_call_opts.asker: every call of `rein mcp serve`'s client, or
 * of one /mcp session), or when none can ask anyone (the answer is -32601 either way): the one
 * with the most time left, so the question is not cut short by a call about to time out.
 */
static struct rein__mcp_pending *sole_asker(struct rein__mcp_conn *c, int *n)
{
    struct rein__mcp_pending *best = NULL;
    int64_t best_left = 0;
    bool one_client = true;

    *n = 0;
    for (struct rein__mcp_pending *x = c->pending; x; x = x->next) {
        if (!x->inv || x->done)
            continue;
        (*n)++;
        int64_t left = rein_invocation_remaining_ms(x->inv); /* -1: no deadline */
        if (!best) {
            best = x;
            best_left = left;
            continue;
        }
        if (x->inv->asker != best->inv->asker ||
            (!x->inv->asker && (x->inv->ask || best->inv->ask)))
            one_client = false;
        if (best_left >= 0 && (left < 0 || left > best_left)) {
            best = x;
            best_left = left;
        }
    }
    return *n == 1 || one_client ? best : NULL;
}

/*
 * The server asks something: ping is answered; sampling and elicitation go to the asker
 * of the call they belong to when rein offers them (rein_mcp_clients_offer), on a thread of
 * their own, since the answer may take a person minutes and the thread that read the request
 * (stdio's reader, an HTTP stream) carries other calls' answers; anything else is refused.
 */
static void on_server_request(struct rein__mcp_conn *c, const struct rein__mcp_msg *msg,
                              const struct rein__mcp_pending *current)
{
    unsigned offer = offer_of(msg->method);
    struct rein__mcp_pending *p = NULL;
    struct question *q;
    int n = 0;

    if (strcmp(msg->method, "ping") == 0) {
        json_t *empty = json_object();
        if (empty)
            answer(c, msg->id, empty, 0, NULL);
        json_decref(empty);
        return;
    }
    pthread_mutex_lock(&c->mu);
    bool offered = offer && (c->offers & offer);
    if (offered && current) {
        /* Over HTTP a request on a call's stream belongs to that call. */
        p = pending_find(c, current->id);
        if (p && !p->inv)
            p = NULL;
        n = p ? 1 : 0;
    } else if (offered) {
        /* Elsewhere (stdio, the standalone stream) nothing says which call asked. */
        p = sole_asker(c, &n);
    }
    if (p && !p->done) {
        p->busy++;
        p->asking++;
    } else {
        p = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    if (!offered) {
        answer(c, msg->id, NULL, REIN__MCP_METHOD_NOT_FOUND,
               offer ? "rein does not pass this request on (it did not declare the capability)"
                     : "rein does not offer this to servers");
        return;
    }
    if (!p) {
        char why[160];
        if (n == 0)
            snprintf(why, sizeof(why),
                     "no tools/call of rein's is running that this %s could "
                     "belong to",
                     msg->method);
        else
            snprintf(why, sizeof(why),
                     "rein cannot tell which of its %d running calls, made for different "
                     "clients, this %s belongs to",
                     n, msg->method);
        answer(c, msg->id, NULL, REIN__MCP_INTERNAL_ERROR, why);
        return;
    }
    q = rein_calloc(1, sizeof(*q));
    if (q) {
        *q = (struct question){.c = rein__mcp_conn_ref(c),
                               .p = p,
                               .id = json_deep_copy(msg->id),
                               .params = msg->params ? json_deep_copy(msg->params) : json_object(),
                               .method = offer == REIN_MCP_OFFER_SAMPLING ? "sampling/createMessage"
                                                                          : "elicitation/create"};
    }
    if (q && q->id && q->params && start_detached(question_main, q))
        return;
    pthread_mutex_lock(&c->mu);
    p->asking--;
    p->busy--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    answer(c, msg->id, NULL, REIN__MCP_INTERNAL_ERROR, "rein is out of memory or threads");
    if (q) {
        json_decref(q->id);
        json_decref(q->params);
        rein__mcp_conn_unref(q->c);
        rein_free(q);
    }
}

/* Routes one decoded message; current is the request whose HTTP answer carried it. */
static void dispatch(struct rein__mcp_conn *c, struct rein__mcp_msg *msg,
                     const struct rein__mcp_pending *current)
{
    struct rein__mcp_pending *p;

    switch (msg->kind) {
    case REIN__MCP_RESPONSE:
    case REIN__MCP_ERROR:
        pthread_mutex_lock(&c->mu);
        p = json_is_integer(msg->id) ? pending_find(c, (int64_t)json_integer_value(msg->id)) : NULL;
        if (!p && json_is_null(msg->id) && current)
            p = pending_find(c, current->id); /* "could not read your request" */
        if (p && !p->done) {
            /* The waiting thread takes the document over: no two threads ever hold
             * references to one jansson value (rein/json.h's rule). */
            p->doc = msg->doc;
            msg->doc = NULL;
            p->done = true;
            pthread_cond_broadcast(&c->cv);
        } else {
            c->unknown_ids++;
            rein_log(REIN_LOG_INFO, WHERE,
                     "%s answered a request rein never sent (or one that "
                     "already ended); ignored",
                     c->cfg->name);
        }
        pthread_mutex_unlock(&c->mu);
        break;
    case REIN__MCP_NOTIFICATION:
        on_notification(c, msg, current);
        break;
    case REIN__MCP_REQUEST:
        on_server_request(c, msg, current);
        break;
    }
}

/* A message's text: decode and dispatch, or count it as garbage. */
void rein__mcp_client_dispatch_text(struct rein__mcp_conn *c, const char *text, size_t len,
                                    const struct rein__mcp_pending *current)
{
    struct rein__mcp_msg msg;
    rein_error err;

    while (len > 0 && (text[len - 1] == '\r' || text[len - 1] == ' '))
        len--;
    if (len == 0)
        return;
    rein_error_clear(&err);
    if (rein__mcp_decode(text, len, 0, &msg, NULL, &err) != REIN_OK) {
        pthread_mutex_lock(&c->mu);
        c->garbage++;
        size_t n = len < sizeof(c->last_garbage) - 1 ? len : sizeof(c->last_garbage) - 1;
        for (size_t i = 0; i < n; i++)
            c->last_garbage[i] = (unsigned char)text[i] < 0x20 ? ' ' : text[i];
        c->last_garbage[n] = '\0';
        pthread_mutex_unlock(&c->mu);
        rein_log(REIN_LOG_INFO, WHERE, "%s sent something that is not a JSON-RPC message (%s)",
                 c->cfg->name, err.msg);
        return;
    }
    dispatch(c, &msg, current);
    rein__mcp_msg_release(&msg);
}

/* ---- sending ---------------------------------------------------------------------------- */

/* A notification or a response to the server, not waiting for anything. */
rein_err rein__mcp_client_send_raw(struct rein__mcp_conn *c, const char *json, size_t len,
                                   rein_error *err)
{
    int rc;

    if (c->cfg->sse)
        return rein__mcp_legacy_send(c, json, len, err);
    if (!c->cfg->http)
        return rein__mcp_stdio_send(c, json, len, err);
    rc = rein__mcp_http_send(c, json, len, rein_now_ms() + REIN__MCP_NOTIFY_TIMEOUT_MS, err);
    return rc == REIN_OK || rc == REIN__MCP_NEED_RESUME ? REIN_OK : (rc > 0 ? REIN_EHTTP : rc);
}

static void notify(struct rein__mcp_conn *c, const char *method, json_t *params)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    if (rein__mcp_write_notification(&b, method, params) != REIN_OK ||
        rein__mcp_client_send_raw(c, b.ptr, b.len, NULL) != REIN_OK)
        rein_log(REIN_LOG_INFO, WHERE, "%s: could not send %s", c->cfg->name, method);
    rein_buf_release(&b);
    json_decref(params);
}

struct req_opts {
    int64_t deadline; /* 0: none */
    int64_t idle_ms;  /* fail after this long without a word about the request; 0: none */
    rein_cancel *cancel;
    const struct rein_invocation *inv; /* events and a progressToken; may be NULL */
};

/* Turns a JSON-RPC error response into a rein error. */
static rein_err rpc_error(struct rein__mcp_conn *c, const char *method, const json_t *doc,
                          rein_error *err)
{
    const json_t *e = json_object_get(doc, "error");
    int code = (int)json_integer_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    rein_err rc = code == REIN__MCP_INVALID_PARAMS     ? REIN_EINVALID
                  : code == REIN__MCP_METHOD_NOT_FOUND ? REIN_ENOTSUP
                                                       : REIN_EIO;

    rc = rein_error_set(err, rc, "MCP server %s answered %s with error %d: %s", c->cfg->name,
                        method, code, msg ? msg : "(no message)");
    if (err)
        err->detail = code;
    return rc;
}

/* After an HTTP request failed: a server that could not be reached at all is lost (its owner
 * reconnects it in the background), unless a connect is what failed. */
static void connection_lost_if_down(struct rein__mcp_conn *c, bool connecting)
{
    bool lost;

    pthread_mutex_lock(&c->mu);
    lost = c->transport_down && !connecting && c->state == REIN__MCP_ST_READY;
    if (lost) {
        c->state = REIN__MCP_ST_FAILED;
        snprintf(c->error, sizeof(c->error), "%s cannot be reached", c->cfg->url);
    }
    pthread_mutex_unlock(&c->mu);
    if (lost)
        rein__mcp_client_changed(c);
}

/* What the Mcp-Name header mirrors: params.name (tools/call, prompts/get) or params.uri
 * (resources/read); borrowed from params. */
static const char *request_name(const char *method, const json_t *params)
{
    if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
        return json_string_value(json_object_get(params, "name"));
    if (strcmp(method, "resources/read") == 0)
        return json_string_value(json_object_get(params, "uri"));
    return NULL;
}

/* The stateless revision's _meta keys of a request (into meta); nonzero when out of memory. */
static int modern_meta(json_t *meta)
{
    return json_object_set_new(meta, REIN__MCP_META_VERSION, json_string(REIN__MCP_MODERN)) ||
           json_object_set_new(meta, REIN__MCP_META_CAPS, json_object()) ||
           json_object_set_new(meta, REIN__MCP_META_INFO,
                               json_pack("{s:s, s:s}", "name", "rein", "version", rein_version()));
}

/* W3C Trace Context in params._meta (the OpenTelemetry MCP conventions), so a server's spans
 * join the caller's trace; nonzero when out of memory. */
static int trace_meta(json_t *meta, const struct rein_trace_context *tc)
{
    char tp[REIN_TRACEPARENT_LEN + 1];

    rein_trace_context_format(tc, tp);
    return json_object_set_new(meta, "traceparent", json_string(tp)) ||
           (tc->state[0] && json_object_set_new(meta, "tracestate", json_string(tc->state)));
}

/* Sends method(params, borrowed) and waits; *result is a new reference on success. */
static rein_err request(struct rein__mcp_conn *c, const char *method, const json_t *params,
                        const struct req_opts *o, json_t **result, rein_error *err)
{
    struct rein__mcp_pending p;
    json_t *sent = NULL;
    struct rein_buf b;
    rein_err rc;
    int hrc;
    bool retried = false;

    *result = NULL;
    rein_buf_init(&b, 0);
again:
    p = (struct rein__mcp_pending){.inv = o->inv,
                                   .idle_ms = o->idle_ms,
                                   .activity_ms = rein_now_ms(),
                                   .method = method,
                                   .name = request_name(method, params)};
    pending_add(c, &p);
    pthread_mutex_lock(&c->mu);
    bool modern = c->modern;
    pthread_mutex_unlock(&c->mu);
    const struct rein_trace_context *tc = rein_trace_current();
    if ((o->inv && o->inv->on_event) || o->idle_ms > 0 || modern || tc) {
        /* The request id doubles as the progress token: progress is forwarded to whoever
         * listens, and renews the idle limit either way. */
        sent = params ? json_deep_copy(params) : json_object();
        json_t *meta = json_object();
        if (!sent || !meta ||
            (((o->inv && o->inv->on_event) || o->idle_ms > 0) &&
             json_object_set_new(meta, "progressToken", json_integer(p.id))) ||
            (modern && modern_meta(meta)) || (tc && trace_meta(meta, tc)) ||
            json_object_set_new(sent, "_meta", meta)) {
            json_decref(meta);
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
            goto out_remove;
        }
        p.name = request_name(method, sent);
    }
    rein_buf_reset(&b);
    if (rein__mcp_write_request(&b, p.id, method, sent ? sent : params) != REIN_OK) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory encoding %s", method);
        goto out_remove;
    }
    if (c->cfg->http) {
        hrc = rein__mcp_http_roundtrip(c, &p, b.ptr, b.len, o->deadline, o->cancel, err);
        pthread_mutex_lock(&c->mu);
        bool connecting = c->in_connect;
        pthread_mutex_unlock(&c->mu);
        if (hrc == REIN__MCP_SESSION_EXPIRED && !retried && !connecting) {
            /* The server forgot the session: start a new one and ask again, once. */
            pthread_mutex_lock(&c->mu);
            pending_remove(c, &p);
            rein_free(c->session_id);
            c->session_id = NULL;
            c->state = REIN__MCP_ST_IDLE;
            pthread_mutex_unlock(&c->mu);
            json_decref(sent);
            sent = NULL;
            retried = true;
            rein_log(REIN_LOG_INFO, WHERE, "%s forgot the session; initializing again",
                     c->cfg->name);
            rc = rein__mcp_conn_connect(c, o->deadline ? o->deadline - rein_now_ms() : 0, o->cancel,
                                        err);
            if (rc)
                goto out;
            /* A server that forgot its sessions may have restarted with other tools. */
            pthread_mutex_lock(&c->mu);
            c->tools_stale = true;
            pthread_mutex_unlock(&c->mu);
            rein__mcp_client_changed(c);
            goto again;
        }
        if (hrc == REIN__MCP_SESSION_EXPIRED)
            rc =
                rein_error_set(err, REIN_EHTTP, "%s: the session was not found again", c->cfg->url);
        else
            rc = hrc;
        connection_lost_if_down(c, connecting);
        if (rc == REIN_OK && !p.done)
            rc = pending_wait(c, &p, o->deadline, o->cancel);
    } else {
        pthread_mutex_lock(&c->mu);
        bool down = c->state == REIN__MCP_ST_CLOSED;
        pthread_mutex_unlock(&c->mu);
        rc = down          ? rein_error_set(err, REIN_EIO, "%s", c->error)
             : c->cfg->sse ? rein__mcp_legacy_send(c, b.ptr, b.len, err)
                           : rein__mcp_stdio_send(c, b.ptr, b.len, err);
        if (rc == REIN_OK)
            rc = pending_wait(c, &p, o->deadline, o->cancel);
    }
    if (rc == REIN_ETIMEDOUT || rc == REIN_ECANCELED) {
        bool timeout = rc == REIN_ETIMEDOUT;
        char garbage[200] = "";
        pthread_mutex_lock(&c->mu);
        if (c->garbage > 0)
            snprintf(garbage, sizeof(garbage),
                     "; it wrote %lld line(s) that are not JSON-RPC, the last: %.120s",
                     (long long)c->garbage, c->last_garbage);
        pthread_mutex_unlock(&c->mu);
        pthread_mutex_lock(&c->mu);
        bool idle = timeout && rein__mcp_pending_idle_deadline(&p) &&
                    rein_now_ms() >= rein__mcp_pending_idle_deadline(&p) &&
                    (!o->deadline || rein__mcp_pending_idle_deadline(&p) < o->deadline);
        pthread_mutex_unlock(&c->mu);
        if (idle)
            rein_error_set(err, rc,
                           "timed out: MCP server %s said nothing about %s for %lld ms (each "
                           "progress notification gives it that long again)%s",
                           c->cfg->name, method, (long long)o->idle_ms, garbage);
        else
            rein_error_set(err, rc, "%s: %s waiting for MCP server %s to answer %s%s",
                           timeout ? "timed out" : "cancelled",
                           timeout ? "gave up" : rein_cancel_reason(o->cancel), c->cfg->name,
                           method, garbage);
        /* Tell the server to stop; the initialize request may not be cancelled. Over HTTP the
         * stateless revision has no such notification: the closed stream says it. */
        if (strcmp(method, "initialize") != 0 && !(modern && c->cfg->http))
            notify(c, "notifications/cancelled",
                   json_pack("{s:I, s:s}", "requestId", (json_int_t)p.id, "reason",
                             timeout ? "timed out" : "cancelled"));
        goto out_remove;
    }
    if (rc)
        goto out_remove;
    pthread_mutex_lock(&c->mu);
    pending_remove(c, &p);
    pthread_mutex_unlock(&c->mu);
    if (p.fail_rc) {
        rc = rein_error_set(err, p.fail_rc, "%s", p.fail_msg);
    } else if (json_object_get(p.doc, "error")) {
        rc = rpc_error(c, method, p.doc, err);
    } else {
        *result = json_incref(json_object_get(p.doc, "result"));
        rc = REIN_OK;
    }
    goto out;
out_remove:
    pthread_mutex_lock(&c->mu);
    pending_remove(c, &p);
    pthread_mutex_unlock(&c->mu);
out:
    json_decref(p.doc);
    json_decref(sent);
    rein_buf_release(&b);
    return rc;
}

/* ---- the connection --------------------------------------------------------------------- */

struct rein__mcp_conn *rein__mcp_conn_new(struct rein__mcp_conn_config *cfg)
{
    struct rein__mcp_conn *c = rein_calloc(1, sizeof(*c));

    if (!c) {
        rein__mcp_conn_config_free(cfg);
        return NULL;
    }
    atomic_init(&c->refs, 1);
    c->cfg = cfg;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    pthread_mutex_init(&c->connect_mu, NULL);
    pthread_mutex_init(&c->write_mu, NULL);
    pthread_mutex_init(&c->change_mu, NULL);
    return c;
}

struct rein__mcp_conn *rein__mcp_conn_ref(struct rein__mcp_conn *c)
{
    atomic_fetch_add(&c->refs, 1);
    return c;
}

static void transport_close(struct rein__mcp_conn *c)
{
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    pthread_mutex_unlock(&c->mu);
    if (c->cfg->http) {
        rein__mcp_http_listen_stop(c);
        rein__mcp_http_close(c);
    } else if (c->cfg->sse) {
        rein__mcp_legacy_close(c);
    } else {
        rein__mcp_stdio_close(c);
    }
    pthread_mutex_lock(&c->mu);
    c->closing = false;
    pthread_mutex_unlock(&c->mu);
}

void rein__mcp_conn_unref(struct rein__mcp_conn *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    transport_close(c);
    json_decref(c->tools);
    json_decref(c->server_info);
    json_decref(c->server_caps);
    rein_free(c->session_id);
    rein__oauth_conn_release(c);
    rein__mcp_conn_config_free(c->cfg);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->connect_mu);
    pthread_mutex_destroy(&c->write_mu);
    pthread_mutex_destroy(&c->change_mu);
    rein_free(c);
}

const struct rein__mcp_conn_config *rein__mcp_conn_config(const struct rein__mcp_conn *c)
{
    return c->cfg;
}

json_t *rein__mcp_conn_tools(struct rein__mcp_conn *c)
{
    json_t *tools;

    pthread_mutex_lock(&c->mu);
    tools = json_incref(c->tools);
    pthread_mutex_unlock(&c->mu);
    return tools;
}

void rein__mcp_conn_counters(struct rein__mcp_conn *c, int64_t *unknown_ids, int64_t *garbage)
{
    pthread_mutex_lock(&c->mu);
    if (unknown_ids)
        *unknown_ids = c->unknown_ids;
    if (garbage)
        *garbage = c->garbage;
    pthread_mutex_unlock(&c->mu);
}

/* Every page of tools/list. */
static rein_err list_tools(struct rein__mcp_conn *c, const struct req_opts *o, rein_error *err)
{
    json_t *all = json_array(), *params = NULL, *result = NULL;
    rein_err rc = REIN_OK;
    int page;

    if (!all)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    for (page = 0; page < MAX_TOOL_PAGES; page++) {
        const json_t *tools, *next;
        rc = request(c, "tools/list", params, o, &result, err);
        if (rc) {
            json_decref(params);
            params = NULL;
            break;
        }
        tools = json_object_get(result, "tools");
        if (!json_is_array(tools)) {
            rc = rein_error_set(err, REIN_EIO,
                                "MCP server %s answered tools/list without a tools array",
                                c->cfg->name);
            break;
        }
        if (json_array_extend(all, (json_t *)tools)) {
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
            break;
        }
        next = json_object_get(result, "nextCursor");
        if (!json_is_string(next) || !json_string_value(next)[0]) {
            json_decref(params);
            params = NULL;
            break;
        }
        if (json_equal(json_object_get(params, "cursor"), next)) {
            /* The same page again: following it would list the same tools forever. */
            rc = rein_error_set(err, REIN_EIO,
                                "MCP server %s answered tools/list with the cursor it was given "
                                "as nextCursor",
                                c->cfg->name);
            break;
        }
        json_decref(params);
        params = json_pack("{s:O}", "cursor", next);
        json_decref(result);
        result = NULL;
    }
    if (!rc && page == MAX_TOOL_PAGES)
        /* Tools past the last page would be missing without a word. */
        rc = rein_error_set(err, REIN_ETOOBIG,
                            "MCP server %s has more than %d pages of tools; rein reads at most "
                            "that many",
                            c->cfg->name, MAX_TOOL_PAGES);
    json_decref(result);
    json_decref(params);
    if (rc) {
        json_decref(all);
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    json_decref(c->tools);
    c->tools = all;
    c->tools_stale = false;
    pthread_mutex_unlock(&c->mu);
    return REIN_OK;
}

/*
 * server/discover in the stateless revision's form: REIN_OK when the server speaks 2026-07-28
 * (the connection is then modern: no initialize, no session), else an error and the connection
 * as it was.
 */
static rein_err discover(struct rein__mcp_conn *c, const struct req_opts *o, rein_error *err)
{
    json_t *result = NULL;
    const json_t *v;
    bool speaks = false;
    size_t i;
    rein_err rc;

    pthread_mutex_lock(&c->mu);
    c->modern = true;
    snprintf(c->version, sizeof(c->version), "%s", REIN__MCP_MODERN);
    pthread_mutex_unlock(&c->mu);
    rc = request(c, "server/discover", NULL, o, &result, err);
    json_array_foreach(json_object_get(result, "supportedVersions"), i, v) speaks =
        speaks || rein__mcp_version_modern(json_string_value(v));
    if (!rc && !speaks)
        rc = rein_error_set(err, REIN_ENOTSUP,
                            "MCP server %s answered server/discover without 2026-07-28 among its "
                            "supportedVersions",
                            c->cfg->name);
    pthread_mutex_lock(&c->mu);
    if (rc) {
        c->modern = false;
        c->version[0] = '\0';
    } else {
        json_decref(c->server_info);
        c->server_info =
            json_incref(json_object_get(json_object_get(result, "_meta"), REIN__MCP_META_SERVER));
        json_decref(c->server_caps);
        c->server_caps = json_incref(json_object_get(result, "capabilities"));
    }
    pthread_mutex_unlock(&c->mu);
    json_decref(result);
    return rc;
}

/* A failure of the first exchange that another revision may not have (an error answer, an
 * HTTP 4xx), unlike a server that cannot be reached, timed out or was cancelled. */
static bool era_may_differ(struct rein__mcp_conn *c, rein_err rc)
{
    bool down;

    pthread_mutex_lock(&c->mu);
    down = c->transport_down || c->state == REIN__MCP_ST_CLOSED;
    pthread_mutex_unlock(&c->mu);
    return !down &&
           (rc == REIN_EINVALID || rc == REIN_ENOTSUP || rc == REIN_EIO || rc == REIN_EHTTP);
}

/*
 * initialize (the revisions up to 2025-11-25), else, when the server refused it, server/discover
 * (2026-07-28, the stateless one), so a server that speaks only that works too. A connection
 * that was modern before tries server/discover first. rein prefers the older revisions with a
 * server that speaks both: their sessions carry list_changed, which rein follows.
 */
static rein_err handshake_legacy(struct rein__mcp_conn *c, const struct req_opts *o,
                                 rein_error *err);

static rein_err handshake(struct rein__mcp_conn *c, const struct req_opts *o, rein_error *err)
{
    rein_error again;
    rein_err rc;

    pthread_mutex_lock(&c->mu);
    bool was_modern = c->modern;
    pthread_mutex_unlock(&c->mu);
    if (was_modern && discover(c, o, err) == REIN_OK)
        return REIN_OK;
    rc = handshake_legacy(c, o, err);
    if (rc == REIN_OK || was_modern || !era_may_differ(c, rc))
        return rc;
    rein_error_clear(&again);
    if (discover(c, o, &again) == REIN_OK) {
        rein_log(REIN_LOG_INFO, WHERE, "%s refused initialize; it speaks 2026-07-28", c->cfg->name);
        return REIN_OK;
    }
    return rc; /* the initialize error says more than the probe's */
}

static rein_err handshake_legacy(struct rein__mcp_conn *c, const struct req_opts *o,
                                 rein_error *err)
{
    json_t *params =
        json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", REIN__MCP_LATEST, "capabilities",
                  "clientInfo", "name", "rein", "version", rein_version());
    json_t *caps = json_object_get(params, "capabilities"), *result = NULL;
    const char *version;
    rein_err rc;

    pthread_mutex_lock(&c->mu);
    c->version[0] = '\0';
    c->modern = false;
    unsigned offers = c->offers;
    pthread_mutex_unlock(&c->mu);
    /* What rein passes on to the asker of the call a request belongs to (on_server_request);
     * elicitation as forms only ({} is "form" in 2025-11-25). */
    if (caps && (((offers & REIN_MCP_OFFER_SAMPLING) &&
                  json_object_set_new(caps, "sampling", json_object())) ||
                 ((offers & REIN_MCP_OFFER_ELICITATION) &&
                  json_object_set_new(caps, "elicitation", json_object())))) {
        json_decref(params);
        params = NULL;
    }
    if (!params)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = request(c, "initialize", params, o, &result, err);
    json_decref(params);
    if (rc)
        return rc;
    version = json_string_value(json_object_get(result, "protocolVersion"));
    if (!rein__mcp_version_supported(version)) {
        rc = rein_error_set(err, REIN_ENOTSUP,
                            "MCP server %s speaks protocol %s, which rein does not (it speaks "
                            "2025-11-25, 2025-06-18 and 2025-03-26)",
                            c->cfg->name, version ? version : "(none given)");
        json_decref(result);
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    snprintf(c->version, sizeof(c->version), "%s", version);
    json_decref(c->server_info);
    c->server_info = json_incref(json_object_get(result, "serverInfo"));
    json_decref(c->server_caps);
    c->server_caps = json_incref(json_object_get(result, "capabilities"));
    pthread_mutex_unlock(&c->mu);
    json_decref(result);
    notify(c, "notifications/initialized", NULL);
    return REIN_OK;
}

/*
 * Whether to open the standalone GET stream: only for a supervised connection (a one-shot
 * client has nobody to tell), and only when the server says it may speak outside requests
 * (a list that changes, resource subscriptions). Messages about a request come on its own
 * stream anyway.
 */
static bool wants_standalone_stream(struct rein__mcp_conn *c)
{
    static const char *const lists[] = {"tools", "resources", "prompts"};
    bool wants = false;

    pthread_mutex_lock(&c->mu);
    /* A server may ask rein what it offers there, outside any call's stream (a server that
     * does not relate its request to the call, as the TypeScript SDK's Server.request). */
    wants = c->offers != 0 && !c->modern;
    /* 2026-07-28 has no GET stream (subscriptions/listen replaces it; not used yet). */
    for (size_t i = 0; c->supervised && !c->modern && i < sizeof(lists) / sizeof(lists[0]); i++) {
        const json_t *cap = json_object_get(c->server_caps, lists[i]);
        wants = wants || json_is_true(json_object_get(cap, "listChanged")) ||
                json_is_true(json_object_get(cap, "subscribe"));
    }
    pthread_mutex_unlock(&c->mu);
    return wants;
}

rein_err rein__mcp_conn_connect(struct rein__mcp_conn *c, int64_t timeout_ms, rein_cancel *cancel,
                                rein_error *err)
{
    struct req_opts o = {.cancel = cancel};
    rein_err rc = REIN_OK;

    if (timeout_ms <= 0)
        timeout_ms = c->cfg->connect_timeout_ms;
    o.deadline = rein_now_ms() + timeout_ms;
    pthread_mutex_lock(&c->connect_mu);
    pthread_mutex_lock(&c->mu);
    bool ready = c->state == REIN__MCP_ST_READY;
    pthread_mutex_unlock(&c->mu);
    if (ready)
        goto out;
    pthread_mutex_lock(&c->mu);
    c->in_connect = true;
    pthread_mutex_unlock(&c->mu);
    transport_close(c); /* a server that died is started afresh */
    pthread_mutex_lock(&c->mu);
    c->state = REIN__MCP_ST_IDLE;
    pthread_mutex_unlock(&c->mu);
    if (c->cfg->sse)
        rc = rein__mcp_legacy_open(c, o.deadline ? o.deadline : rein_now_ms() + 30000, err);
    else if (!c->cfg->http)
        rc = rein__mcp_stdio_open(c, err);
    if (!rc)
        rc = handshake(c, &o, err);
    pthread_mutex_lock(&c->mu);
    bool list = !c->tools || c->tools_stale;
    pthread_mutex_unlock(&c->mu);
    if (!rc && list)
        rc = list_tools(c, &o, err);
    /* The standalone stream opens before the connection counts as ready, so that no call can
     * start before a question asked outside its stream can reach rein. */
    if (!rc && c->cfg->http && wants_standalone_stream(c))
        rein__mcp_http_listen_start(c);
    pthread_mutex_lock(&c->mu);
    c->in_connect = false;
    c->state = rc ? REIN__MCP_ST_FAILED : REIN__MCP_ST_READY;
    if (rc)
        snprintf(c->error, sizeof(c->error), "%s", err ? err->msg : rein_strerror(rc));
    else
        c->error[0] = '\0';
    pthread_mutex_unlock(&c->mu);
    if (rc)
        transport_close(c);
out:
    pthread_mutex_unlock(&c->connect_mu);
    return rc;
}

bool rein__mcp_conn_is_ready(struct rein__mcp_conn *c)
{
    bool ready;

    pthread_mutex_lock(&c->mu);
    ready = c->state == REIN__MCP_ST_READY;
    pthread_mutex_unlock(&c->mu);
    return ready;
}

void rein__mcp_conn_retry_at(struct rein__mcp_conn *c, int64_t when_ms)
{
    pthread_mutex_lock(&c->mu);
    c->next_try_ms = when_ms;
    pthread_mutex_unlock(&c->mu);
}

rein_err rein__mcp_conn_refresh_tools(struct rein__mcp_conn *c, int64_t timeout_ms, bool *changed,
                                      rein_error *err)
{
    struct req_opts o = {0};
    rein_err rc = REIN_OK;
    json_t *before;

    *changed = false;
    o.deadline = rein_now_ms() + (timeout_ms > 0 ? timeout_ms : c->cfg->connect_timeout_ms);
    /* connect_mu: not while a connect runs (it lists the tools itself). */
    pthread_mutex_lock(&c->connect_mu);
    pthread_mutex_lock(&c->mu);
    bool due = c->state == REIN__MCP_ST_READY && c->tools_stale;
    before = json_incref(c->tools);
    pthread_mutex_unlock(&c->mu);
    if (due)
        rc = list_tools(c, &o, err);
    if (due && !rc) {
        pthread_mutex_lock(&c->mu);
        *changed = !json_equal(before, c->tools);
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&c->connect_mu);
    json_decref(before);
    return rc;
}

json_t *rein__mcp_conn_status_json(struct rein__mcp_conn *c)
{
    json_t *o;

    pthread_mutex_lock(&c->mu);
    o = json_pack("{s:s, s:s, s:s, s:s}", "name", c->cfg->name, "transport",
                  c->cfg->http  ? "http"
                  : c->cfg->sse ? "sse"
                                : "stdio",
                  "target", c->cfg->url ? c->cfg->url : c->cfg->argv[0], "state",
                  state_names[c->state]);
    /* A supervised server that is not ready is always being tried again: now (0) or later. */
    if (o && c->state != REIN__MCP_ST_READY && c->supervised)
        json_object_set_new(o, "retry_in_ms",
                            json_integer(c->next_try_ms > rein_now_ms()
                                             ? (json_int_t)(c->next_try_ms - rein_now_ms())
                                             : 0));
    if (o && c->error[0])
        json_object_set_new(o, "error", json_string(c->error));
    if (o && c->version[0])
        json_object_set_new(o, "protocolVersion", json_string(c->version));
    if (o && c->server_info)
        json_object_set(o, "serverInfo", c->server_info);
    pthread_mutex_unlock(&c->mu);
    return o;
}

/* The text of a result's text blocks, joined, for an error message. */
static void result_text(const json_t *result, char *out, size_t size)
{
    const json_t *block;
    size_t i, n = 0;

    out[0] = '\0';
    json_array_foreach(json_object_get(result, "content"), i, block)
    {
        const char *t = json_string_value(json_object_get(block, "text"));
        if (t && n + 1 < size)
            n += (size_t)snprintf(out + n, size - n, "%s%s", n ? " " : "", t);
        if (n >= size)
            n = size - 1;
    }
}

/* Copies well-formed {path, message} items. */
static json_t *details_of(const json_t *items)
{
    json_t *out = json_array(), *item;
    size_t i;

    json_array_foreach((json_t *)items, i, item)
    {
        const char *path = json_string_value(json_object_get(item, "path"));
        const char *msg = json_string_value(json_object_get(item, "message"));
        if (out && msg &&
            json_array_append_new(
                out, json_pack("{s:s, s:s}", "path", path ? path : "", "message", msg))) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

/*
 * A result with isError. When its structuredContent is what rein itself sends for a failed
 * call (another rein serving its tools), the error code, message and details are kept;
 * otherwise the result's text is the message of an execution failure.
 */
static rein_err tool_error(const json_t *result, struct rein_tool_reply *reply, rein_error *err)
{
    const json_t *sc = json_object_get(result, "structuredContent");
    const json_t *e = json_object_get(sc, "error");
    const char *code_text = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    enum rein_call_code code;
    char text[600];

    if (json_is_false(json_object_get(sc, "ok")) && msg && code_text &&
        rein_call_code_parse(code_text, &code)) {
        reply->details = details_of(json_object_get(e, "details"));
        return rein_error_set(err, rein_call_code_to_err(code), "%s", msg);
    }
    if (json_is_string(e) && json_is_array(json_object_get(sc, "errors"))) {
        /* rein's invalid payload: {tool, error, errors, receivedArgs, expected, hint}. */
        reply->details = details_of(json_object_get(sc, "errors"));
        return rein_error_set(err, REIN_EINVALID, "%s", json_string_value(e));
    }
    result_text(result, text, sizeof(text));
    return rein_error_set(err, REIN_EIO, "%s", text[0] ? text : "the tool reported an error");
}

rein_err rein__mcp_conn_call(struct rein__mcp_conn *c, const char *tool,
                             const struct rein_invocation *inv, struct rein_tool_reply *reply,
                             rein_error *err)
{
    int64_t left = rein_invocation_remaining_ms(inv);
    /* The manifest's limit (max_timeout_ms) is the call's deadline; timeout_ms is how long the
     * server may stay silent about it, renewed by each progress notification. */
    struct req_opts o = {.deadline = inv->deadline_ms,
                         .idle_ms = c->cfg->timeout_ms,
                         .cancel = inv->cancel,
                         .inv = inv};
    json_t *params, *result = NULL, *out;
    const char *key;
    json_t *v;
    rein_err rc;

    if (left == 0)
        return rein_error_set(err, REIN_ETIMEDOUT, "timed out before MCP server %s was called",
                              c->cfg->name);
    pthread_mutex_lock(&c->mu);
    int64_t wait =
        c->supervised && c->state == REIN__MCP_ST_FAILED ? c->next_try_ms - rein_now_ms() : 0;
    char why[sizeof(c->error)];
    snprintf(why, sizeof(why), "%s", c->error);
    pthread_mutex_unlock(&c->mu);
    if (wait > 0)
        /* A server that is down answers nothing: say so at once rather than wait for it. */
        return rein_error_set(err, REIN_EIO,
                              "MCP server %s is not connected (%s); rein tries again in %lld ms",
                              c->cfg->name, why, (long long)wait);
    rc = rein__mcp_conn_connect(c, left > 0 ? left : 0, inv->cancel, err);
    if (rc)
        return rc == REIN_ENOMEM || rc == REIN_ETIMEDOUT || rc == REIN_ECANCELED ? rc : REIN_EIO;
    params = json_pack("{s:s, s:O}", "name", tool, "arguments", inv->args);
    if (!params)
        return rein_error_set(err, REIN_ENOMEM, "out of memory calling %s", tool);
    rc = request(c, "tools/call", params, &o, &result, err);
    json_decref(params);
    if (rc)
        return rc == REIN_ENOTSUP ? REIN_EIO : rc;
    if (!json_is_object(result) || !json_is_array(json_object_get(result, "content"))) {
        json_decref(result);
        return rein_error_set(err, REIN_EIO,
                              "MCP server %s answered tools/call without a content array",
                              c->cfg->name);
    }
    if (json_is_true(json_object_get(result, "isError"))) {
        rc = tool_error(result, reply, err);
        json_decref(result);
        return rc;
    }
    /* The output keeps the content (and the structured value) as MCP gave them. */
    out = json_object();
    json_object_foreach(result, key, v)
    {
        if (out && (strcmp(key, "content") == 0 || strcmp(key, "structuredContent") == 0) &&
            json_object_set(out, key, v)) {
            json_decref(out);
            out = NULL;
        }
    }
    json_decref(result);
    if (!out)
        return rein_error_set(err, REIN_ENOMEM, "out of memory reading the result");
    reply->output = out;
    return REIN_OK;
}
