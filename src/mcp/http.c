/*
 * rein as an MCP server over Streamable HTTP: POST, GET and DELETE /mcp on rein's HTTP server
 * (include/rein/server.h).
 *
 * Every request is first checked against DNS rebinding (http_guard.c: 403 unless Origin and
 * Host name a loopback host or one the operator allowed). A POST carries one JSON-RPC message.
 * initialize makes a session (Mcp-Session-Id, 24 random characters after "mcp_"; a second
 * initialize on a session is refused); every other message needs that header (400 without
 * it, 404 once the session is gone). Notifications and responses are answered 202. A POST must
 * accept both application/json and text/event-stream (406 else, as MCP requires).
 *
 * Nothing a client sends holds up another client. The POST route runs on the network thread
 * (REIN_ROUTE_INLINE), where quick requests are answered at once with one JSON body:
 * initialize, ping, the lists, and a tools/call of a built-in tool that finishes within a
 * second (as POST /skills/{id}/invoke runs it). Any other tools/call (and a prompts/get that
 * asks the client for its arguments first, rein__mcp_asks_first) is handed to a worker,
 * which only opens a Server-Sent Events stream, detaches it (rein_sse_detach) and hands the
 * call to the MCP server's own pool, so neither the network threads nor the HTTP workers wait
 * for a tool. The stream starts with a priming event (an id, the retry advice, empty data)
 * for 2025-11-25 sessions, then carries the call's notifications and its response.
 *
 * Streams are resumable. A call writes into a stream object kept with its session (its events
 * with sequence numbers); whichever connection is attached gets each event as it is written.
 * When the connection ends early, or the server ends it on purpose after sse_close_ms (SSE
 * polling, SEP-1699), the call goes on, and a GET with Last-Event-ID "<stream>-<n>" replays
 * the events after n and stays attached until the end. A stream whose response was delivered
 * stays resumable for DELIVERED_KEEP_MS (the connection may have died with the answer still in
 * its buffers; a client resuming from the last event just gets the stream's end), and goes
 * then, when MAX_STREAMS newer ones are finished, or with its session. Each session also has a standalone stream, which a GET
 * without Last-Event-ID opens (one reader at a time: a new GET takes it over): it carries what the server
 * says outside any request (notifications/tools/list_changed), and keeps the newest 64 events
 * until a client reads them. A session ends with DELETE, after session_idle_ms unused, or when
 * max_sessions is reached and it is the least recently used idle one.
 *
 * A request of the stateless revision (2026-07-28: its _meta names the version) needs no
 * session: its headers are checked against its body (modern.c), it is answered like the
 * others but without Mcp-Session-Id, with 400 for that revision's errors and 404 for an
 * unknown method; a streamed call's stream is its own (no ids, no resumption), and the call
 * hangs under the stream's cancellation handle, so a client that closes it cancels the call.
 */
#include "mcp/mcp_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WHERE             "mcp/http"
#define MAX_STREAMS       32                /* finished streams kept per session for resumption */
#define DELIVERED_KEEP_MS 30000             /* ... and how long one read to its end is kept */
#define STREAM_MAX_BYTES  ((size_t)8 << 20) /* notifications kept per stream before dropping */
#define STANDALONE_KEEP   64                /* events the standalone stream keeps */

struct mcp_event {
    struct mcp_event *next;
    uint64_t seq;
    size_t len;
    char data[];
};

/*
 * One request's stream of messages (or the session's standalone stream). Invariants, under
 * mu: events are in seq order and seq > 0; sent <= last_seq; sse is the one connection
 * attached (a detached SSE stream this object ends), and every event up to sent was queued on
 * it; done means no more events come; delivered means a connection got every event of a done
 * stream.
 */
struct mcp_stream {
    struct rein__mcp_sink sink; /* first: the call's sink is the stream */
    atomic_int refs;
    struct mcp_stream *next; /* in the session's list, guarded by the transport's mu */
    char id[REIN_ID_MAX];
    pthread_mutex_t mu;
    struct mcp_event *head, *tail;
    uint64_t last_seq; /* sequence number of the newest event (events start at 1) */
    uint64_t high;     /* the highest seq any connection was sent */
    size_t bytes, nevents;
    bool done;
    bool delivered;
    int64_t delivered_ms; /* when it was */
    bool standalone;
    bool stateless; /* a 2026-07-28 request's: events carry no ids (nothing resumes) */
    rein_sse *sse;
    uint64_t sent;
    int64_t close_at; /* SSE polling: end the connection at this time (0: never) */
};

struct http_session {
    struct http_session *next;
    char id[REIN_ID_MAX];
    struct rein__mcp_session *s;   /* a reference */
    struct mcp_stream *streams;    /* the requests' streams */
    struct mcp_stream *standalone; /* a reference */
    int64_t last_used_ms;
    int refs;     /* the table's (while listed) and each request's using it; under mu */
    bool removed; /* unlinked from the table */
};

struct rein__mcp_http {
    rein_mcp_server *srv;
    pthread_mutex_t mu;
    struct http_session *sessions;
    size_t nsessions;
    struct rein__mcp_hosts hosts;
};

/* ---- streams ---------------------------------------------------------------------------- */

static void event_id(const struct mcp_stream *st, uint64_t seq, char *out, size_t size)
{
    snprintf(out, size, "%s-%llu", st->id, (unsigned long long)seq);
}

/* Ends the attached connection (st->mu held). */
static void detach_locked(struct mcp_stream *st)
{
    if (st->sse) {
        rein_sse_end(st->sse);
        st->sse = NULL;
    }
}

/* Writes what the attached connection has not had yet; ends it once a done stream is all
 * out, or when the client has gone (st->mu held). */
static void flush_locked(struct mcp_stream *st)
{
    char id[REIN_ID_MAX + 24];

    if (!st->sse)
        return;
    for (struct mcp_event *e = st->head; e; e = e->next) {
        if (e->seq <= st->sent)
            continue;
        event_id(st, e->seq, id, sizeof(id));
        if (rein_sse_send_event(st->sse, st->stateless ? NULL : id, "message", e->data, e->len,
                                0) != REIN_OK) {
            detach_locked(st); /* gone: a later GET with Last-Event-ID resumes */
            return;
        }
        st->sent = e->seq;
        if (e->seq > st->high)
            st->high = e->seq;
    }
    if (st->done && st->sent == st->last_seq) {
        if (!st->delivered)
            st->delivered_ms = rein_now_ms();
        st->delivered = true;
        detach_locked(st);
    }
}

static void stream_unref(struct mcp_stream *st)
{
    if (!st || atomic_fetch_sub(&st->refs, 1) != 1)
        return;
    detach_locked(st);
    while (st->head) {
        struct mcp_event *e = st->head;
        st->head = e->next;
        rein_free(e);
    }
    pthread_mutex_destroy(&st->mu);
    rein_free(st);
}

/* Drops the oldest event (st->mu held): the standalone stream keeps only the newest. */
static void drop_oldest(struct mcp_stream *st)
{
    struct mcp_event *e = st->head;

    st->head = e->next;
    if (!st->head)
        st->tail = NULL;
    st->bytes -= e->len;
    st->nevents--;
    rein_free(e);
}

static void stream_send(struct rein__mcp_sink *sink, const char *json, size_t len, bool final)
{
    struct mcp_stream *st = (struct mcp_stream *)sink;
    struct mcp_event *e;

    pthread_mutex_lock(&st->mu);
    if (st->done)
        goto out;
    if (!final && !st->standalone && st->bytes + len > STREAM_MAX_BYTES) {
        rein_log(REIN_LOG_WARN, WHERE, "stream %s: notifications past %zu bytes dropped", st->id,
                 STREAM_MAX_BYTES);
        goto out;
    }
    e = rein_malloc(sizeof(*e) + len + 1);
    if (!e) {
        /* Out of memory: the stream ends so the client is not left waiting forever. */
        st->done = st->done || final;
        goto flush;
    }
    e->next = NULL;
    e->seq = ++st->last_seq;
    e->len = len;
    memcpy(e->data, json, len);
    e->data[len] = '\0';
    if (st->tail)
        st->tail->next = e;
    else
        st->head = e;
    st->tail = e;
    st->bytes += len;
    st->nevents++;
    if (st->standalone && st->nevents > STANDALONE_KEEP)
        drop_oldest(st);
    if (final)
        st->done = true;
flush:
    flush_locked(st);
out:
    pthread_mutex_unlock(&st->mu);
}

/* Marks the stream ended (a cancelled call sends no response). */
static void stream_end(struct mcp_stream *st)
{
    pthread_mutex_lock(&st->mu);
    st->done = true;
    flush_locked(st);
    pthread_mutex_unlock(&st->mu);
}

/*
 * Attaches a detached SSE connection (taken: the stream ends it) that has had the events up to
 * after; an older connection is ended (the newest reader wins). close_at: see mcp_stream.
 */
static void stream_attach(struct mcp_stream *st, rein_sse *sse, uint64_t after, int64_t close_at)
{
    pthread_mutex_lock(&st->mu);
    detach_locked(st);
    st->sse = sse;
    st->sent = after < st->last_seq ? after : st->last_seq;
    st->close_at = close_at;
    flush_locked(st);
    pthread_mutex_unlock(&st->mu);
}

static struct mcp_stream *stream_new(bool standalone)
{
    struct mcp_stream *st = rein_calloc(1, sizeof(*st));

    if (!st)
        return NULL;
    st->sink.send = stream_send;
    atomic_init(&st->refs, 1);
    pthread_mutex_init(&st->mu, NULL);
    st->standalone = standalone;
    rein_id_new("", st->id);
    return st;
}

/* The tick's work on one stream (st->mu taken here): polling and vanished clients. */
static void stream_tick(struct mcp_stream *st, int64_t now)
{
    pthread_mutex_lock(&st->mu);
    if (st->sse &&
        (rein_cancel_is_set(rein_sse_cancel(st->sse)) || (st->close_at && now >= st->close_at)))
        detach_locked(st); /* SSE polling: the client comes back with Last-Event-ID */
    pthread_mutex_unlock(&st->mu);
}

/* ---- sessions --------------------------------------------------------------------------- */

static void session_free(struct http_session *hs)
{
    rein__mcp_session_cancel_calls(hs->s, "the MCP session ended");
    rein__mcp_session_set_notify(hs->s, NULL);
    while (hs->streams) {
        struct mcp_stream *st = hs->streams;
        hs->streams = st->next;
        stream_unref(st);
    }
    stream_unref(hs->standalone);
    rein__mcp_session_unref(hs->s);
    rein_free(hs);
}

/* True when a client reads the stream now (a session with an open GET is not idle). */
static bool reading(struct mcp_stream *st)
{
    bool attached;

    pthread_mutex_lock(&st->mu);
    attached = st->sse != NULL;
    pthread_mutex_unlock(&st->mu);
    return attached;
}

/* Unlinks sessions that were idle too long (h->mu held); returns them in a list to free. */
static struct http_session *sweep(struct rein__mcp_http *h, int64_t now)
{
    int64_t idle = rein__mcp_opts(h->srv)->session_idle_ms;
    struct http_session *gone = NULL, **pp = &h->sessions;

    while (*pp) {
        struct http_session *hs = *pp;
        if (hs->refs == 1 && now - hs->last_used_ms > idle && !reading(hs->standalone)) {
            *pp = hs->next;
            hs->next = gone;
            gone = hs;
            hs->removed = true;
            hs->refs--;
            h->nsessions--;
        } else {
            pp = &hs->next;
        }
    }
    return gone;
}

/* Frees the swept sessions nothing else uses (a request that still does frees it later). */
static void free_list(struct http_session *list)
{
    while (list) {
        struct http_session *next = list->next;
        if (list->refs == 0)
            session_free(list);
        list = next;
    }
}

/* The session named id with a reference (release with session_put), or NULL. */
static struct http_session *session_get(struct rein__mcp_http *h, const char *id)
{
    struct http_session *found = NULL, *gone;
    int64_t now = rein_now_ms();

    pthread_mutex_lock(&h->mu);
    gone = sweep(h, now);
    for (struct http_session *hs = h->sessions; hs; hs = hs->next) {
        if (strcmp(hs->id, id) == 0) {
            found = hs;
            hs->refs++;
            hs->last_used_ms = now;
            break;
        }
    }
    pthread_mutex_unlock(&h->mu);
    free_list(gone);
    return found;
}

static struct http_session *session_ref(struct rein__mcp_http *h, struct http_session *hs)
{
    pthread_mutex_lock(&h->mu);
    hs->refs++;
    pthread_mutex_unlock(&h->mu);
    return hs;
}

static void session_put(struct rein__mcp_http *h, struct http_session *hs)
{
    bool last;

    pthread_mutex_lock(&h->mu);
    last = --hs->refs == 0;
    hs->last_used_ms = rein_now_ms();
    pthread_mutex_unlock(&h->mu);
    if (last)
        session_free(hs);
}

/* Makes room for one more session (h->mu held) by ending the least recently used idle one;
 * the ended one joins *gone. */
static void evict_one(struct rein__mcp_http *h, struct http_session **gone)
{
    struct http_session **pp, **oldest = NULL, *evict;

    for (pp = &h->sessions; *pp; pp = &(*pp)->next) {
        if ((*pp)->refs == 1 && (!oldest || (*pp)->last_used_ms < (*oldest)->last_used_ms))
            oldest = pp;
    }
    if (!oldest)
        return;
    evict = *oldest;
    *oldest = evict->next;
    evict->next = *gone;
    *gone = evict;
    evict->removed = true;
    evict->refs--;
    h->nsessions--;
}

/* A new session in the table, with a reference for the caller; NULL when memory is out or
 * every slot is in use. */
static struct http_session *session_create(struct rein__mcp_http *h)
{
    size_t max = rein__mcp_opts(h->srv)->max_sessions;
    struct http_session *hs = rein_calloc(1, sizeof(*hs)), *gone;

    if (!hs)
        return NULL;
    hs->s = rein__mcp_session_new(h->srv);
    hs->standalone = stream_new(true);
    if (!hs->s || !hs->standalone) {
        rein__mcp_session_unref(hs->s);
        stream_unref(hs->standalone);
        rein_free(hs);
        return NULL;
    }
    rein__mcp_session_set_notify(hs->s, &hs->standalone->sink);
    rein_id_new("mcp_", hs->id);
    hs->refs = 2;
    hs->last_used_ms = rein_now_ms();
    pthread_mutex_lock(&h->mu);
    gone = sweep(h, hs->last_used_ms);
    if (h->nsessions >= max)
        evict_one(h, &gone);
    if (h->nsessions >= max) {
        pthread_mutex_unlock(&h->mu);
        free_list(gone);
        hs->refs = 0;
        session_free(hs);
        return NULL;
    }
    hs->next = h->sessions;
    h->sessions = hs;
    h->nsessions++;
    pthread_mutex_unlock(&h->mu);
    free_list(gone);
    return hs;
}

/*
 * Ends the session named id: unlinks it, cancels its calls and drops the table's reference
 * (requests still using it free it when they finish). False when there is none.
 */
static bool session_remove(struct rein__mcp_http *h, const char *id)
{
    struct http_session *found = NULL;
    bool last = false;

    pthread_mutex_lock(&h->mu);
    for (struct http_session **pp = &h->sessions; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->id, id) == 0) {
            found = *pp;
            *pp = found->next;
            found->removed = true;
            last = --found->refs == 0;
            h->nsessions--;
            break;
        }
    }
    pthread_mutex_unlock(&h->mu);
    if (found)
        rein__mcp_session_cancel_calls(found->s, "the MCP session ended");
    if (last)
        session_free(found);
    return found != NULL;
}

/*
 * Unlinks from hs the streams a client read to the end DELIVERED_KEEP_MS ago, and the oldest
 * finished ones past MAX_STREAMS (h->mu held); returns them in a list to unref outside the lock.
 */
static struct mcp_stream *prune_streams(struct http_session *hs)
{
    struct mcp_stream *drop = NULL;
    int64_t now = rein_now_ms();
    size_t n = 0;

    for (struct mcp_stream **pp = &hs->streams; *pp;) {
        struct mcp_stream *s = *pp;
        bool done, delivered;
        pthread_mutex_lock(&s->mu);
        done = s->done && !s->sse;
        delivered = s->delivered && now - s->delivered_ms > DELIVERED_KEEP_MS;
        pthread_mutex_unlock(&s->mu);
        if (delivered || (++n > MAX_STREAMS && done)) {
            *pp = s->next;
            s->next = drop;
            drop = s;
        } else {
            pp = &s->next;
        }
    }
    return drop;
}

static void unref_list(struct mcp_stream *list)
{
    while (list) {
        struct mcp_stream *next = list->next;
        stream_unref(list);
        list = next;
    }
}

/* Adds st to the session (taking a reference), dropping streams that are over. */
static void session_add_stream(struct rein__mcp_http *h, struct http_session *hs,
                               struct mcp_stream *st)
{
    struct mcp_stream *drop;

    pthread_mutex_lock(&h->mu);
    atomic_fetch_add(&st->refs, 1);
    st->next = hs->streams;
    hs->streams = st;
    drop = prune_streams(hs);
    pthread_mutex_unlock(&h->mu);
    unref_list(drop);
}

/* The stream named id with a reference, or NULL. */
static struct mcp_stream *session_find_stream(struct rein__mcp_http *h, struct http_session *hs,
                                              const char *id, size_t id_len)
{
    struct mcp_stream *found = NULL;

    pthread_mutex_lock(&h->mu);
    if (strlen(hs->standalone->id) == id_len && memcmp(hs->standalone->id, id, id_len) == 0)
        found = hs->standalone;
    for (struct mcp_stream *st = hs->streams; !found && st; st = st->next) {
        if (strlen(st->id) == id_len && memcmp(st->id, id, id_len) == 0) {
            found = st;
            break;
        }
    }
    if (found)
        atomic_fetch_add(&found->refs, 1);
    pthread_mutex_unlock(&h->mu);
    return found;
}

void rein__mcp_http_tick(struct rein__mcp_http *h)
{
    int64_t now = rein_now_ms();
    struct mcp_stream *drop = NULL;

    pthread_mutex_lock(&h->mu);
    for (struct http_session *hs = h->sessions; hs; hs = hs->next) {
        struct mcp_stream *gone;
        stream_tick(hs->standalone, now);
        for (struct mcp_stream *st = hs->streams; st; st = st->next)
            stream_tick(st, now);
        gone = prune_streams(hs);
        while (gone) {
            struct mcp_stream *next = gone->next;
            gone->next = drop;
            drop = gone;
            gone = next;
        }
    }
    pthread_mutex_unlock(&h->mu);
    unref_list(drop);
}

/* ---- answers ---------------------------------------------------------------------------- */

static void reply_rpc_error(rein_request *req, int status, const json_t *id, int code,
                            const char *fmt, ...) REIN_PRINTF(5, 6);

static void reply_rpc_error(rein_request *req, int status, const json_t *id, int code,
                            const char *fmt, ...)
{
    char msg[512];
    struct rein_buf b;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rein_buf_init(&b, 0);
    if (rein__mcp_write_error(&b, id, code, msg, NULL) == REIN_OK)
        rein_request_reply(req, status, "application/json", b.ptr, b.len);
    else
        rein_request_reply_error(req, 500, "internal", "out of memory");
    rein_buf_release(&b);
}

/* A sink that keeps the response and drops notifications (a JSON answer has room for one). */
struct capture {
    struct rein__mcp_sink sink;
    pthread_mutex_t mu;
    struct rein_buf out;
    bool got;
};

static void capture_send(struct rein__mcp_sink *sink, const char *json, size_t len, bool final)
{
    struct capture *c = (struct capture *)sink;

    if (!final)
        return;
    pthread_mutex_lock(&c->mu);
    if (!c->got && rein_buf_add(&c->out, json, len) == REIN_OK)
        c->got = true;
    pthread_mutex_unlock(&c->mu);
}

static void capture_init(struct capture *c)
{
    c->sink.send = capture_send;
    atomic_init(&c->sink.error_code, 0);
    pthread_mutex_init(&c->mu, NULL);
    rein_buf_init(&c->out, 0);
    c->got = false;
}

static void capture_release(struct capture *c)
{
    rein_buf_release(&c->out);
    pthread_mutex_destroy(&c->mu);
}

/* Handles msg right here and answers with its response as one JSON body (202 when it was not a
 * request). */
static void answer_now(struct rein__mcp_http *h, rein_request *req, struct http_session *hs,
                       const struct rein__mcp_msg *msg)
{
    struct capture cap;

    capture_init(&cap);
    rein__mcp_handle(h->srv, hs->s, msg, rein_request_trace_id(req), &cap.sink);
    if (msg->kind != REIN__MCP_REQUEST)
        rein_request_reply(req, 202, NULL, "", 0);
    else if (rein_request_set_header(req, "Mcp-Session-Id", hs->id) != REIN_OK)
        reply_rpc_error(req, 500, msg->id, REIN__MCP_INTERNAL_ERROR, "out of memory");
    else if (cap.got)
        rein_request_reply(req, 200, "application/json", cap.out.ptr, cap.out.len);
    else
        reply_rpc_error(req, 200, msg->id, REIN__MCP_REQUEST_CANCELLED,
                        "the request was cancelled");
    capture_release(&cap);
}

/* ---- checks ----------------------------------------------------------------------------- */

/* Answers 403 and returns false when Origin or Host is not one this server accepts. */
static bool rebinding_check(struct rein__mcp_http *h, rein_request *req)
{
    const char *origin = rein_request_header(req, "Origin");
    const char *host = rein_request_header(req, "Host");
    const char *bad = rein__mcp_hosts_check(&h->hosts, origin, host);

    if (!bad)
        return true;
    reply_rpc_error(req, 403, NULL, REIN__MCP_INVALID_REQUEST,
                    "Forbidden: %s %.100s is not allowed (DNS rebinding protection)", bad,
                    bad[0] == 'O' ? origin : host);
    return false;
}

/* The session a request names, with a reference; answers 400/404 and returns NULL else. */
static struct http_session *request_session(struct rein__mcp_http *h, rein_request *req,
                                            const json_t *id)
{
    const char *sid = rein_request_header(req, "Mcp-Session-Id");
    const char *pv = rein_request_header(req, "MCP-Protocol-Version");
    struct http_session *hs;

    if (!sid || !*sid) {
        reply_rpc_error(req, 400, id, REIN__MCP_INVALID_REQUEST,
                        "Bad Request: the Mcp-Session-Id header is missing; send initialize to "
                        "start a session");
        return NULL;
    }
    if (pv && !rein__mcp_version_supported(pv)) {
        reply_rpc_error(req, 400, id, REIN__MCP_INVALID_REQUEST,
                        "Bad Request: unsupported MCP-Protocol-Version %.40s (supported: "
                        "2025-11-25, 2025-06-18, 2025-03-26)",
                        pv);
        return NULL;
    }
    hs = session_get(h, sid);
    if (!hs)
        reply_rpc_error(req, 404, id, REIN__MCP_SESSION_NOT_FOUND,
                        "Session not found: it ended or never existed; initialize a new one");
    return hs;
}

/* ---- streamed calls --------------------------------------------------------------------- */

/* A call that runs on the MCP server's pool and writes into its stream. Its reference to the
 * HTTP session keeps the session from ending as idle while the call runs, and marks it used
 * when the call ends, so the client has session_idle_ms to come back for the answer. */
struct call_job {
    rein_mcp_server *srv;
    struct rein__mcp_http *h;
    struct http_session *hs;        /* a reference */
    struct rein__mcp_session *sess; /* a reference */
    struct mcp_stream *st;          /* a reference */
    struct rein__mcp_msg msg;
    char trace_id[REIN_TRACE_ID_LEN + 1];
};

static void call_job_run(void *arg)
{
    struct call_job *j = arg;

    rein__mcp_handle(j->srv, j->sess, &j->msg, j->trace_id, &j->st->sink);
    stream_end(j->st);
    rein__mcp_msg_release(&j->msg);
    rein__mcp_session_job_end(j->sess);
    rein__mcp_session_unref(j->sess);
    stream_unref(j->st);
    if (j->hs)
        session_put(j->h, j->hs);
    rein_free(j);
}

/*
 * A POST whose answer is a stream, handed from the network thread to a worker. It lives in the
 * request's arena; whatever the worker did not take over is released with the arena (also
 * when the worker never ran).
 */
struct deferred {
    struct rein__mcp_http *h;
    struct http_session *hs; /* a reference */
    struct rein__mcp_msg msg;
};

static void deferred_release(void *data)
{
    struct deferred *d = data;

    rein__mcp_msg_release(&d->msg);
    if (d->hs)
        session_put(d->h, d->hs);
    d->hs = NULL;
}

/* Fills job (taken) with d's message (taken), the references hs (may be NULL) and sess, and a
 * new one to st, and hands it to the MCP server's pool. */
static void call_job_submit(struct call_job *job, rein_request *req, struct deferred *d,
                            struct http_session *hs, struct rein__mcp_session *sess,
                            struct mcp_stream *st)
{
    *job = (struct call_job){d->h->srv, d->h, hs, sess, st, d->msg, ""};
    memset(&d->msg, 0, sizeof(d->msg)); /* the job has it now */
    atomic_fetch_add(&st->refs, 1);
    snprintf(job->trace_id, sizeof(job->trace_id), "%s", rein_request_trace_id(req));
    rein__mcp_session_job_begin(sess);
    if (rein__mcp_submit(d->h->srv, call_job_run, job) != REIN_OK)
        call_job_run(job); /* no worker could take it: run it here rather than lose it */
}

/* Opens the SSE answer and detaches it (idle: see rein_sse_detach); NULL when the request was
 * answered otherwise. */
static rein_sse *open_stream(rein_request *req, const struct http_session *hs, bool idle)
{
    rein_error err;
    rein_sse *sse;

    if (rein_request_set_header(req, "Mcp-Session-Id", hs->id) != REIN_OK)
        return NULL;
    sse = rein_request_sse_start(req, &err);
    if (!sse)
        return NULL;
    if (rein_sse_detach(sse, idle) != REIN_OK)
        return NULL; /* cannot happen on a fresh stream; it then simply ends with the handler */
    return sse;
}

/* The worker's part of a streamed tools/call: open, attach, hand the call to the pool. */
static void post_stream(rein_request *req, void *userdata)
{
    struct deferred *d = userdata;
    struct rein__mcp_http *h = d->h;
    const struct rein_mcp_server_opts *o = rein__mcp_opts(h->srv);
    bool primes = rein__mcp_version_primes(rein__mcp_session_version(d->hs->s));
    struct mcp_stream *st = stream_new(false);
    struct call_job *job = rein_calloc(1, sizeof(*job));
    char id[REIN_ID_MAX + 24];
    rein_sse *sse;

    if (!st || !job) {
        reply_rpc_error(req, 500, d->msg.id, REIN__MCP_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    sse = open_stream(req, d->hs, false);
    if (!sse)
        goto out;
    if (primes) {
        /* Priming (SEP-1699): an id to resume from, before anything else. */
        event_id(st, 0, id, sizeof(id));
        if (rein_sse_send_event(sse, id, NULL, "", 0, o->sse_retry_ms) != REIN_OK) {
            rein_sse_end(sse);
            goto out;
        }
    }
    session_add_stream(h, d->hs, st);
    stream_attach(st, sse, 0, primes && o->sse_close_ms > 0 ? rein_now_ms() + o->sse_close_ms : 0);
    call_job_submit(job, req, d, session_ref(h, d->hs), rein__mcp_session_ref(d->hs->s), st);
    job = NULL;
out:
    rein_free(job);
    stream_unref(st);
    deferred_release(d);
}

/* Hands msg (taken) to a worker that streams the answer; answers 500 when it cannot. */
static void defer_stream(struct rein__mcp_http *h, rein_request *req, struct http_session *hs,
                         struct rein__mcp_msg *msg)
{
    struct deferred *d = rein_arena_calloc(rein_request_arena(req), 1, sizeof(*d));

    if (!d || rein_arena_on_free(rein_request_arena(req), deferred_release, d) != REIN_OK) {
        reply_rpc_error(req, 500, msg->id, REIN__MCP_INTERNAL_ERROR, "out of memory");
        rein__mcp_msg_release(msg);
        return;
    }
    d->h = h;
    d->hs = session_ref(h, hs);
    d->msg = *msg;
    memset(msg, 0, sizeof(*msg));
    if (rein_request_defer(req, post_stream, d) != REIN_OK)
        reply_rpc_error(req, 500, d->msg.id, REIN__MCP_INTERNAL_ERROR,
                        "the call could not be handed to a worker");
}

/* ---- handlers --------------------------------------------------------------------------- */

static void post_initialize(struct rein__mcp_http *h, rein_request *req,
                            const struct rein__mcp_msg *msg)
{
    const char *sid = rein_request_header(req, "Mcp-Session-Id");
    struct http_session *hs = sid && *sid ? session_get(h, sid) : NULL;
    struct capture cap;

    if (hs) {
        /* A session is initialized once; a client that wants a new one starts without the
         * header (or DELETEs this one first). */
        session_put(h, hs);
        reply_rpc_error(req, 400, msg->id, REIN__MCP_INVALID_REQUEST,
                        "Bad Request: session %.64s is already initialized; send initialize "
                        "without Mcp-Session-Id to start another",
                        sid);
        return;
    }
    hs = session_create(h);
    if (!hs) {
        reply_rpc_error(req, 503, msg->id, REIN__MCP_INTERNAL_ERROR,
                        "Service Unavailable: too many MCP sessions are in use");
        return;
    }
    capture_init(&cap);
    rein__mcp_handle(h->srv, hs->s, msg, rein_request_trace_id(req), &cap.sink);
    if (!rein__mcp_session_initialized(hs->s) ||
        rein_request_set_header(req, "Mcp-Session-Id", hs->id) != REIN_OK)
        session_remove(h, hs->id); /* initialize failed: no session is made */
    session_put(h, hs);
    if (cap.got)
        rein_request_reply(
            req, atomic_load(&cap.sink.error_code) == REIN__MCP_METHOD_NOT_FOUND ? 404 : 200,
            "application/json", cap.out.ptr, cap.out.len);
    else
        reply_rpc_error(req, 500, msg->id, REIN__MCP_INTERNAL_ERROR, "no answer was made");
    capture_release(&cap);
}

/* Content-Type and Accept of a POST; answers 415/406 and returns false when they do not do. */
static bool post_types_ok(rein_request *req)
{
    const char *ctype = rein_request_header(req, "Content-Type");
    const char *accept = rein_request_header(req, "Accept");

    if (!ctype || strncasecmp(ctype, "application/json", 16) != 0 ||
        (ctype[16] && ctype[16] != ';' && ctype[16] != ' ')) {
        reply_rpc_error(req, 415, NULL, REIN__MCP_INVALID_REQUEST,
                        "Unsupported Media Type: send the message as application/json");
        return false;
    }
    if (!rein__mcp_http_accepts(accept, "application/json") ||
        !rein__mcp_http_accepts(accept, "text/event-stream")) {
        /* MCP: a client lists both, and the server picks one per request. */
        reply_rpc_error(req, 406, NULL, REIN__MCP_INVALID_REQUEST,
                        "Not Acceptable: the Accept header must list both application/json and "
                        "text/event-stream");
        return false;
    }
    return true;
}

/* ---- the stateless revision (2026-07-28) ------------------------------------------------ */

/* The HTTP status of a stateless answer: the revision's own errors are 400, an unknown
 * method 404 (so a client can tell it from a legacy server's 404), anything else 200. */
static int stateless_status(int error_code)
{
    switch (error_code) {
    case REIN__MCP_METHOD_NOT_FOUND:
        return 404;
    case REIN__MCP_HEADER_MISMATCH:
    case REIN__MCP_MISSING_CLIENT_CAP:
    case REIN__MCP_UNSUPPORTED_VERSION:
        return 400;
    default:
        return 200;
    }
}

static void answer_stateless(struct rein__mcp_http *h, rein_request *req,
                             const struct rein__mcp_msg *msg)
{
    struct capture cap;

    capture_init(&cap);
    rein__mcp_handle(h->srv, NULL, msg, rein_request_trace_id(req), &cap.sink);
    if (cap.got)
        rein_request_reply(req, stateless_status(atomic_load(&cap.sink.error_code)),
                           "application/json", cap.out.ptr, cap.out.len);
    else
        reply_rpc_error(req, 500, msg->id, REIN__MCP_INTERNAL_ERROR, "no answer was made");
    capture_release(&cap);
}

/* The worker's part of a streamed stateless tools/call. The call's session hangs under the
 * stream's cancellation handle: a client that closes the stream cancels the call, as
 * 2026-07-28 says (there is no resuming). */
static void post_stateless_stream(rein_request *req, void *userdata)
{
    struct deferred *d = userdata;
    struct rein__mcp_http *h = d->h;
    struct mcp_stream *st = stream_new(false);
    struct call_job *job = rein_calloc(1, sizeof(*job));
    struct rein__mcp_session *conn = NULL;
    rein_error err;
    rein_sse *sse = NULL;

    if (!st || !job) {
        reply_rpc_error(req, 500, d->msg.id, REIN__MCP_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    st->stateless = true;
    sse = rein_request_sse_start(req, &err);
    if (!sse || rein_sse_detach(sse, false) != REIN_OK)
        goto out; /* answered otherwise, or (fresh stream) cannot happen */
    conn = rein__mcp_session_new_under(h->srv, rein_sse_cancel(sse));
    if (!conn) {
        rein_sse_end(sse);
        goto out;
    }
    stream_attach(st, sse, 0, 0);
    call_job_submit(job, req, d, NULL, conn, st);
    job = NULL;
out:
    rein_free(job);
    stream_unref(st);
    deferred_release(d);
}

static const char *request_header(void *ud, const char *name)
{
    return rein_request_header(ud, name);
}

/* A tools/call's Mcp-Param-* headers against its arguments (2026-07-28, SEP-2243). */
static bool param_headers_ok(struct rein__mcp_http *h, rein_request *req,
                             const struct rein__mcp_msg *msg, char *why, size_t size)
{
    const char *name = json_string_value(json_object_get(msg->params, "name"));
    const rein_tool *tool;

    if (strcmp(msg->method, "tools/call") != 0 || !name)
        return true;
    tool = rein_registry_get(rein__mcp_srv_registry(h->srv), name);
    return !tool || rein__mcp_check_param_headers(rein_tool_parameters(tool),
                                                  json_object_get(msg->params, "arguments"),
                                                  request_header, req, why, size);
}

/* A request that names its version in _meta: the headers are checked against the body, then
 * it is answered like any other, without a session. */
static void post_stateless(struct rein__mcp_http *h, rein_request *req, struct rein__mcp_msg *msg,
                           const char *version)
{
    struct deferred *d;
    char why[400];

    if (!rein__mcp_check_meta(msg, why, sizeof(why))) {
        reply_rpc_error(req, 400, msg->id, REIN__MCP_INVALID_PARAMS, "%s", why);
        return;
    }
    if (!rein__mcp_check_headers(msg, version, rein_request_header(req, "MCP-Protocol-Version"),
                                 rein_request_header(req, "Mcp-Method"),
                                 rein_request_header(req, "Mcp-Name"), why, sizeof(why)) ||
        !param_headers_ok(h, req, msg, why, sizeof(why))) {
        reply_rpc_error(req, 400, msg->id, REIN__MCP_HEADER_MISMATCH, "%s", why);
        return;
    }
    if (!rein__mcp_version_modern(version) || !rein__mcp_is_long(msg) ||
        rein__mcp_is_quick_call(h->srv, msg)) {
        answer_stateless(h, req, msg);
        return;
    }
    d = rein_arena_calloc(rein_request_arena(req), 1, sizeof(*d));
    if (!d || rein_arena_on_free(rein_request_arena(req), deferred_release, d) != REIN_OK) {
        reply_rpc_error(req, 500, msg->id, REIN__MCP_INTERNAL_ERROR, "out of memory");
        return;
    }
    d->h = h;
    d->msg = *msg;
    memset(msg, 0, sizeof(*msg));
    if (rein_request_defer(req, post_stateless_stream, d) != REIN_OK)
        reply_rpc_error(req, 500, d->msg.id, REIN__MCP_INTERNAL_ERROR,
                        "the call could not be handed to a worker");
}

/* POST runs on the network thread: everything quick is answered here (see the top). */
static void handle_post(rein_request *req, void *userdata)
{
    struct rein__mcp_http *h = userdata;
    struct rein__mcp_msg msg;
    struct http_session *hs;
    json_t *bad_id = NULL;
    const char *body, *version;
    size_t len;
    rein_error err;
    rein_err rc;

    if (!rebinding_check(h, req) || !post_types_ok(req))
        return;
    body = rein_request_body(req, &len);
    rein_error_clear(&err);
    rc = rein__mcp_decode(body, len, 0, &msg, &bad_id, &err);
    if (rc) {
        /* A broken response is refused with an error that has no id (MCP): the id is the
         * client's own request's, which this error does not answer. */
        reply_rpc_error(req, 400, msg.kind == REIN__MCP_RESPONSE ? NULL : bad_id,
                        rein__mcp_decode_error_code(rc), "%s", err.msg);
        json_decref(bad_id);
        return;
    }
    if (rein__mcp_is_legacy_initialize(&msg)) {
        post_initialize(h, req, &msg);
        rein__mcp_msg_release(&msg);
        return;
    }
    version = msg.kind == REIN__MCP_REQUEST ? rein__mcp_request_version(&msg) : NULL;
    if (!version && msg.kind == REIN__MCP_REQUEST && !rein_request_header(req, "Mcp-Session-Id") &&
        rein__mcp_version_modern(rein_request_header(req, "MCP-Protocol-Version")))
        version = ""; /* a 2026-07-28 request whose body lacks _meta: post_stateless says so */
    if (version) {
        post_stateless(h, req, &msg, version);
        rein__mcp_msg_release(&msg);
        return;
    }
    if (msg.kind != REIN__MCP_REQUEST && !rein_request_header(req, "Mcp-Session-Id") &&
        rein__mcp_version_modern(rein_request_header(req, "MCP-Protocol-Version"))) {
        /* 2026-07-28 defines no client notifications over HTTP (closing a stream cancels);
         * one is accepted and has no effect. */
        rein__mcp_msg_release(&msg);
        rein_request_reply(req, 202, NULL, "", 0);
        return;
    }
    hs = request_session(h, req, msg.id);
    if (!hs) {
        rein__mcp_msg_release(&msg);
        return;
    }
    if (msg.kind == REIN__MCP_REQUEST &&
        ((rein__mcp_is_long(&msg) && !rein__mcp_is_quick_call(h->srv, &msg)) ||
         rein__mcp_asks_first(h->srv, hs->s, &msg)))
        defer_stream(h, req, hs, &msg);
    else
        answer_now(h, req, hs, &msg);
    rein__mcp_msg_release(&msg);
    session_put(h, hs);
}

/* Reads "<stream>-<seq>"; false when the id is not one rein made. */
static bool parse_event_id(const char *text, const char **sid, size_t *sid_len, uint64_t *seq)
{
    const char *dash = strrchr(text, '-');
    char *end = NULL;

    if (!dash || dash == text || !dash[1] || dash[1] < '0' || dash[1] > '9')
        return false;
    *seq = strtoull(dash + 1, &end, 10);
    if (*end)
        return false;
    *sid = text;
    *sid_len = (size_t)(dash - text);
    return true;
}

static uint64_t stream_high(struct mcp_stream *st)
{
    uint64_t high;

    pthread_mutex_lock(&st->mu);
    high = st->high;
    pthread_mutex_unlock(&st->mu);
    return high;
}

/* GET: resume a stream with Last-Event-ID, or open the session's standalone stream. */
static void handle_get(rein_request *req, void *userdata)
{
    struct rein__mcp_http *h = userdata;
    const char *last = rein_request_header(req, "Last-Event-ID");
    const struct rein_mcp_server_opts *o = rein__mcp_opts(h->srv);
    struct http_session *hs;
    struct mcp_stream *st;
    const char *sid;
    size_t sid_len;
    uint64_t seq;
    rein_sse *sse;
    char id[REIN_ID_MAX + 24];

    if (!rebinding_check(h, req))
        return;
    if (!rein__mcp_http_accepts(rein_request_header(req, "Accept"), "text/event-stream")) {
        reply_rpc_error(req, 406, NULL, REIN__MCP_INVALID_REQUEST,
                        "Not Acceptable: a GET on /mcp must accept text/event-stream");
        return;
    }
    hs = request_session(h, req, NULL);
    if (!hs)
        return;
    if (last) {
        st = parse_event_id(last, &sid, &sid_len, &seq) ? session_find_stream(h, hs, sid, sid_len)
                                                        : NULL;
        if (!st) {
            reply_rpc_error(req, 400, NULL, REIN__MCP_INVALID_REQUEST,
                            "Bad Request: Last-Event-ID %.80s names no stream of this session",
                            last);
            goto out;
        }
    } else {
        /* The newest reader takes the standalone stream over (the older connection ends): a
         * client that reconnects must not be refused because the server has not yet noticed
         * that its first connection died. */
        st = hs->standalone;
        atomic_fetch_add(&st->refs, 1);
        seq = stream_high(st);
    }
    /* A resumed call is work in progress; the standalone stream only waits for news. */
    sse = open_stream(req, hs, !last);
    if (sse) {
        event_id(st, seq, id, sizeof(id));
        if (rein_sse_send_event(sse, id, NULL, "", 0, o->sse_retry_ms) == REIN_OK)
            stream_attach(st, sse, seq, 0);
        else
            rein_sse_end(sse);
    }
    stream_unref(st);
out:
    session_put(h, hs);
}

static void handle_delete(rein_request *req, void *userdata)
{
    struct rein__mcp_http *h = userdata;
    const char *sid = rein_request_header(req, "Mcp-Session-Id");
    const char *pv = rein_request_header(req, "MCP-Protocol-Version");

    if (!rebinding_check(h, req))
        return;
    if (!sid || !*sid) {
        reply_rpc_error(req, 400, NULL, REIN__MCP_INVALID_REQUEST,
                        "Bad Request: the Mcp-Session-Id header is missing");
        return;
    }
    if (pv && !rein__mcp_version_supported(pv)) {
        /* MCP: every request after initialize, DELETE included, is checked. */
        reply_rpc_error(req, 400, NULL, REIN__MCP_INVALID_REQUEST,
                        "Bad Request: unsupported MCP-Protocol-Version %.40s", pv);
        return;
    }
    if (!session_remove(h, sid)) {
        reply_rpc_error(req, 404, NULL, REIN__MCP_SESSION_NOT_FOUND, "Session not found");
        return;
    }
    rein_request_reply(req, 204, NULL, "", 0);
}

/* ---- setup ------------------------------------------------------------------------------ */

/*
 * The protected resource metadata of /mcp (RFC 9728), which a 401 from /mcp points to. rein
 * checks bearer tokens against its API keys (REIN_API_KEYS) and runs no authorization server,
 * so none is named: a client learns the resource and that the key goes in the header, and is
 * configured with the key (docs/decisions/0024).
 */
static void handle_resource_metadata(rein_request *req, void *ud)
{
    const char *host = rein_request_header(req, "Host");
    const char *proto = rein_request_header(req, "X-Forwarded-Proto");
    char resource[400];
    json_t *doc;

    (void)ud;
    if (!host || !host[0] || strlen(host) > 255 || strpbrk(host, " \"/\\\r\n")) {
        rein_request_reply_error(req, 400, "bad_request", "a Host header names the resource");
        return;
    }
    snprintf(resource, sizeof(resource), "%s://%s/mcp",
             proto && strcmp(proto, "https") == 0 ? "https" : "http", host);
    doc = json_pack("{s:s, s:[s], s:s}", "resource", resource, "bearer_methods_supported", "header",
                    "resource_name", "rein");
    if (!doc) {
        rein_request_reply_error(req, 500, "internal", "out of memory");
        return;
    }
    rein_request_reply_json(req, 200, doc);
}

void rein__mcp_http_free(struct rein__mcp_http *h)
{
    if (!h)
        return;
    /* The HTTP server has stopped: only the table's references are left. */
    while (h->sessions) {
        struct http_session *hs = h->sessions;
        h->sessions = hs->next;
        session_free(hs);
    }
    rein__mcp_hosts_release(&h->hosts);
    pthread_mutex_destroy(&h->mu);
    rein_free(h);
}

rein_err rein_mcp_server_add_routes(rein_mcp_server *srv, rein_server *http, rein_error *err)
{
    struct rein__mcp_http *h;

    if (!srv || !http)
        return rein_error_set(err, REIN_EINVAL, "no MCP server or no HTTP server");
    if (rein__mcp_http_get(srv))
        return rein_error_set(err, REIN_EEXIST, "the MCP routes are already added");
    h = rein_calloc(1, sizeof(*h));
    if (!h)
        return rein_error_set(err, REIN_ENOMEM, "out of memory adding the MCP routes");
    h->srv = srv;
    pthread_mutex_init(&h->mu, NULL);
    if (rein__mcp_hosts_parse(&h->hosts, rein__mcp_opts(srv)->allowed_hosts) != REIN_OK) {
        rein__mcp_http_free(h);
        return rein_error_set(err, REIN_ENOMEM, "out of memory adding the MCP routes");
    }
    rein__mcp_http_set(srv, h);
    /* POST answers what is quick on the network thread and streams the rest from workers that
     * return at once; GET only attaches a detached stream. Neither holds a thread for a call. */
    if (rein_server_route(http, "POST", "/mcp",
                          REIN_ROUTE_INLINE | REIN_ROUTE_JSONRPC | REIN_ROUTE_PROTECTED,
                          handle_post, h, err) ||
        rein_server_route(http, "GET", "/mcp", REIN_ROUTE_JSONRPC | REIN_ROUTE_PROTECTED,
                          handle_get, h, err) ||
        rein_server_route(http, "DELETE", "/mcp",
                          REIN_ROUTE_INLINE | REIN_ROUTE_JSONRPC | REIN_ROUTE_PROTECTED,
                          handle_delete, h, err) ||
        rein_server_route(http, "GET", "/.well-known/oauth-protected-resource/mcp",
                          REIN_ROUTE_INLINE | REIN_ROUTE_PUBLIC, handle_resource_metadata, h, err))
        return err ? err->code : REIN_EINVAL;
    return REIN_OK;
}
