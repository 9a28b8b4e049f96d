/*
 * rein as an MCP server over Streamable HTTP: POST, GET and DELETE /mcp on rein's HTTP server
 * (include/rein/server.h).
 *
 * Every request is first checked against DNS rebinding: an Origin header, and the Host
 * header, must name a loopback host (localhost, 127.0.0.1, [::1], any port) or one the
 * operator allowed; otherwise 403. A POST carries one JSON-RPC message. initialize makes a
 * session (Mcp-Session-Id, 24 random characters after "mcp_"); every other message needs that
 * header (400 without it, 404 once the session is gone). Notifications and responses are
 * answered 202. A POST must accept both application/json and text/event-stream (406 else, as
 * MCP requires). Requests are answered with one JSON body, except tools/call, which gets a
 * stream: a priming event (an id, the retry advice, empty data) for 2025-11-25 sessions, then
 * the call's notifications, then its response.
 *
 * Streams are resumable. The call runs on the MCP server's workers and writes into a stream
 * object kept with the session (the events with their sequence numbers); the HTTP handler only
 * forwards what the stream holds. When the connection ends early, or when the server ends it
 * on purpose after sse_close_ms (SSE polling, SEP-1699), the call goes on, and a GET with
 * Last-Event-ID "<stream>-<n>" replays the events after n and follows the stream to its end.
 * A stream is dropped once its response was forwarded, or with its session; a session ends
 * with DELETE, after session_idle_ms unused, or when max_sessions is reached and it is the
 * least recently used idle one.
 */
#include "mcp/mcp_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WHERE            "mcp/http"
#define MAX_STREAMS      32                /* finished streams kept per session for resumption */
#define STREAM_MAX_BYTES ((size_t)8 << 20) /* notifications kept per stream before dropping */
#define WAIT_SLICE_MS    200

struct mcp_event {
    struct mcp_event *next;
    uint64_t seq;
    size_t len;
    char data[];
};

/* One request's stream of messages: what the call sent, in order, for whoever forwards it. */
struct mcp_stream {
    struct rein__mcp_sink sink; /* first: the call's sink is the stream */
    atomic_int refs;
    struct mcp_stream *next; /* in the session's list, guarded by the transport's mu */
    char id[REIN_ID_MAX];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct mcp_event *head, *tail;
    uint64_t last_seq; /* sequence number of the newest event (events start at 1) */
    size_t bytes;
    bool done;      /* the call ended: no more events */
    bool delivered; /* a forwarder sent every event up to the end */
    unsigned gen;   /* the forwarder that attached last; earlier ones stop */
};

struct http_session {
    struct http_session *next;
    char id[REIN_ID_MAX];
    struct rein__mcp_session *s; /* a reference */
    struct mcp_stream *streams;
    int64_t last_used_ms;
    int refs;     /* the table's (while listed) and each request's using it; under mu */
    bool removed; /* unlinked from the table */
};

struct rein__mcp_http {
    rein_mcp_server *srv;
    pthread_mutex_t mu;
    struct http_session *sessions;
    size_t nsessions;
    char **allowed;
    size_t nallowed;
    bool allow_any;
};

/* ---- streams ---------------------------------------------------------------------------- */

static void stream_unref(struct mcp_stream *st)
{
    if (!st || atomic_fetch_sub(&st->refs, 1) != 1)
        return;
    while (st->head) {
        struct mcp_event *e = st->head;
        st->head = e->next;
        rein_free(e);
    }
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    rein_free(st);
}

static void stream_send(struct rein__mcp_sink *sink, const char *json, size_t len, bool final)
{
    struct mcp_stream *st = (struct mcp_stream *)sink;
    struct mcp_event *e;

    pthread_mutex_lock(&st->mu);
    if (st->done)
        goto out;
    if (!final && st->bytes + len > STREAM_MAX_BYTES) {
        rein_log(REIN_LOG_WARN, WHERE, "stream %s: notifications past %zu bytes dropped", st->id,
                 STREAM_MAX_BYTES);
        goto out;
    }
    e = rein_malloc(sizeof(*e) + len + 1);
    if (!e) {
        /* Out of memory: the stream ends so the client is not left waiting forever. */
        st->done = st->done || final;
        goto wake;
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
    if (final)
        st->done = true;
wake:
    pthread_cond_broadcast(&st->cv);
out:
    pthread_mutex_unlock(&st->mu);
}

/* Marks the stream ended (a cancelled call sends no response). */
static void stream_end(struct mcp_stream *st)
{
    pthread_mutex_lock(&st->mu);
    st->done = true;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

static struct mcp_stream *stream_new(void)
{
    struct mcp_stream *st = rein_calloc(1, sizeof(*st));

    if (!st)
        return NULL;
    st->sink.send = stream_send;
    atomic_init(&st->refs, 1);
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    rein_id_new("", st->id);
    return st;
}

/* ---- sessions --------------------------------------------------------------------------- */

static void session_free(struct http_session *hs)
{
    rein__mcp_session_cancel_calls(hs->s, "the MCP session ended");
    while (hs->streams) {
        struct mcp_stream *st = hs->streams;
        hs->streams = st->next;
        stream_unref(st);
    }
    rein__mcp_session_unref(hs->s);
    rein_free(hs);
}

/* Unlinks sessions that were idle too long (h->mu held); returns them in a list to free. */
static struct http_session *sweep(struct rein__mcp_http *h, int64_t now)
{
    int64_t idle = rein__mcp_opts(h->srv)->session_idle_ms;
    struct http_session *gone = NULL, **pp = &h->sessions;

    while (*pp) {
        struct http_session *hs = *pp;
        if (hs->refs == 1 && now - hs->last_used_ms > idle) {
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

/* A new session in the table, with a reference for the caller; NULL when memory is out or
 * every slot is in use. */
static struct http_session *session_create(struct rein__mcp_http *h)
{
    size_t max = rein__mcp_opts(h->srv)->max_sessions;
    struct http_session *hs = rein_calloc(1, sizeof(*hs)), *gone, *evict = NULL;

    if (!hs)
        return NULL;
    hs->s = rein__mcp_session_new(h->srv);
    if (!hs->s) {
        rein_free(hs);
        return NULL;
    }
    rein_id_new("mcp_", hs->id);
    hs->refs = 2;
    hs->last_used_ms = rein_now_ms();
    pthread_mutex_lock(&h->mu);
    gone = sweep(h, hs->last_used_ms);
    if (h->nsessions >= max) {
        /* Make room by ending the least recently used idle session. */
        struct http_session **pp, **oldest = NULL;
        for (pp = &h->sessions; *pp; pp = &(*pp)->next) {
            if ((*pp)->refs == 1 && (!oldest || (*pp)->last_used_ms < (*oldest)->last_used_ms))
                oldest = pp;
        }
        if (oldest) {
            evict = *oldest;
            *oldest = evict->next;
            evict->next = gone;
            gone = evict;
            evict->removed = true;
            evict->refs--;
            h->nsessions--;
        }
    }
    if (h->nsessions >= max) {
        pthread_mutex_unlock(&h->mu);
        free_list(gone);
        rein__mcp_session_unref(hs->s);
        rein_free(hs);
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

/* Adds st to the session (taking a reference), dropping the oldest finished streams. */
static void session_add_stream(struct rein__mcp_http *h, struct http_session *hs,
                               struct mcp_stream *st)
{
    struct mcp_stream *drop = NULL;
    size_t n = 0;

    pthread_mutex_lock(&h->mu);
    atomic_fetch_add(&st->refs, 1);
    st->next = hs->streams;
    hs->streams = st;
    for (struct mcp_stream **pp = &hs->streams; *pp;) {
        struct mcp_stream *s = *pp;
        bool done;
        pthread_mutex_lock(&s->mu);
        done = s->done;
        pthread_mutex_unlock(&s->mu);
        if (++n > MAX_STREAMS && done) {
            *pp = s->next;
            s->next = drop;
            drop = s;
        } else {
            pp = &s->next;
        }
    }
    pthread_mutex_unlock(&h->mu);
    while (drop) {
        struct mcp_stream *next = drop->next;
        stream_unref(drop);
        drop = next;
    }
}

static void session_drop_stream(struct rein__mcp_http *h, struct http_session *hs,
                                struct mcp_stream *st)
{
    bool found = false;

    pthread_mutex_lock(&h->mu);
    for (struct mcp_stream **pp = &hs->streams; *pp; pp = &(*pp)->next) {
        if (*pp == st) {
            *pp = st->next;
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&h->mu);
    if (found)
        stream_unref(st);
}

/* The stream named id with a reference, or NULL. */
static struct mcp_stream *session_find_stream(struct rein__mcp_http *h, struct http_session *hs,
                                              const char *id, size_t id_len)
{
    struct mcp_stream *found = NULL;

    pthread_mutex_lock(&h->mu);
    for (struct mcp_stream *st = hs->streams; st; st = st->next) {
        if (strlen(st->id) == id_len && memcmp(st->id, id, id_len) == 0) {
            found = st;
            atomic_fetch_add(&st->refs, 1);
            break;
        }
    }
    pthread_mutex_unlock(&h->mu);
    return found;
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
    pthread_mutex_init(&c->mu, NULL);
    rein_buf_init(&c->out, 0);
    c->got = false;
}

static void capture_release(struct capture *c)
{
    rein_buf_release(&c->out);
    pthread_mutex_destroy(&c->mu);
}

/* ---- DNS rebinding: Host and Origin ----------------------------------------------------- */

/* Copies the host[:port] of an Origin ("http://localhost:3000") into out; false if none. */
static bool origin_hostport(const char *origin, char *out, size_t size)
{
    const char *p = strstr(origin, "://");
    size_t n;

    if (!p)
        return false;
    p += 3;
    n = strcspn(p, "/?#");
    if (n == 0 || n >= size)
        return false;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

/* Splits "host:port" / "[v6]:port" / "host": writes the lower-case host into out. */
static bool split_host(const char *hostport, char *out, size_t size)
{
    size_t n;

    if (hostport[0] == '[') {
        const char *close = strchr(hostport, ']');
        if (!close)
            return false;
        n = (size_t)(close - hostport) + 1;
        if (close[1] && close[1] != ':')
            return false;
    } else {
        n = strcspn(hostport, ":");
    }
    if (n == 0 || n >= size)
        return false;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)hostport[i]);
    out[n] = '\0';
    return true;
}

static bool has_port(const char *hostport)
{
    const char *close = hostport[0] == '[' ? strchr(hostport, ']') : NULL;

    return strchr(close ? close : hostport, ':') != NULL;
}

static bool hostport_allowed(const struct rein__mcp_http *h, const char *hostport)
{
    char host[256];

    if (h->allow_any)
        return true;
    if (!split_host(hostport, host, sizeof(host)))
        return false;
    if (strcmp(host, "localhost") == 0 || strcmp(host, "127.0.0.1") == 0 ||
        strcmp(host, "[::1]") == 0)
        return true;
    for (size_t i = 0; i < h->nallowed; i++) {
        const char *a = h->allowed[i];
        /* An entry with a port must match exactly; one without matches any port. */
        if (has_port(a) ? strcasecmp(a, hostport) == 0 : strcasecmp(a, host) == 0)
            return true;
    }
    return false;
}

/* Answers 403 and returns false when Origin or Host is not one this server accepts. */
static bool rebinding_check(struct rein__mcp_http *h, rein_request *req)
{
    const char *origin = rein_request_header(req, "Origin");
    const char *host = rein_request_header(req, "Host");
    char hp[256];

    if (h->allow_any)
        return true;
    if (origin && (!origin_hostport(origin, hp, sizeof(hp)) || !hostport_allowed(h, hp))) {
        reply_rpc_error(req, 403, NULL, REIN__MCP_INVALID_REQUEST,
                        "Forbidden: Origin %.100s is not allowed (DNS rebinding protection)",
                        origin);
        return false;
    }
    if (host && !hostport_allowed(h, host)) {
        reply_rpc_error(req, 403, NULL, REIN__MCP_INVALID_REQUEST,
                        "Forbidden: Host %.100s is not allowed (DNS rebinding protection)", host);
        return false;
    }
    return true;
}

/* ---- negotiation helpers ---------------------------------------------------------------- */

/* The q value of one media range's parameters (";q=0.5"); 1 when absent or unreadable. */
static double range_q(const char *params, size_t len)
{
    for (size_t i = 0; i + 2 < len; i++) {
        if (params[i] == ';') {
            size_t j = i + 1;
            while (j < len && (params[j] == ' ' || params[j] == '\t'))
                j++;
            if (j + 1 < len && (params[j] == 'q' || params[j] == 'Q') && params[j + 1] == '=') {
                char num[16];
                size_t n = 0;
                for (j += 2; j < len && n + 1 < sizeof(num) && params[j] != ';'; j++)
                    num[n++] = params[j];
                num[n] = '\0';
                return strtod(num, NULL);
            }
        }
    }
    return 1;
}

/*
 * True when an Accept header value admits type ("application/json"), as RFC 9110 reads it:
 * the most specific media range that matches (the type itself, then its major type with a
 * star, then star/star) decides, and q=0 refuses. No header admits nothing: MCP requires
 * clients to send one.
 */
static bool accepts(const char *accept, const char *type)
{
    size_t major = strcspn(type, "/");
    int best = 0; /* 3 the type, 2 its major type, 1 any */
    double q = 0;

    for (const char *p = accept; p && *p;) {
        size_t item = strcspn(p, ",");
        size_t start = 0, end;
        while (start < item && (p[start] == ' ' || p[start] == '\t'))
            start++;
        end = start + strcspn(p + start, ";,");
        if (end > item)
            end = item;
        while (end > start && (p[end - 1] == ' ' || p[end - 1] == '\t'))
            end--;
        const char *r = p + start;
        size_t rlen = end - start;
        int rank = 0;
        if (rlen == strlen(type) && strncasecmp(r, type, rlen) == 0)
            rank = 3;
        else if (rlen == major + 2 && strncasecmp(r, type, major + 1) == 0 && r[major + 1] == '*')
            rank = 2;
        else if (rlen == 3 && memcmp(r, "*/*", 3) == 0)
            rank = 1;
        if (rank > best) {
            best = rank;
            q = range_q(p + end, item - end);
        }
        p += item;
        if (*p == ',')
            p++;
    }
    return best > 0 && q > 0;
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

/* ---- forwarding a stream ---------------------------------------------------------------- */

static void event_id(const struct mcp_stream *st, uint64_t seq, char *out, size_t size)
{
    snprintf(out, size, "%s-%llu", st->id, (unsigned long long)seq);
}

/*
 * Forwards st's events after seq `after` into sse until the stream is done, the client goes,
 * or a newer forwarder attaches; a POST's stream (polling) also ends after sse_close_ms once
 * the client has an event id to resume from (resumable). A resumed stream is followed to its
 * end. Returns true when everything up to the end was sent.
 */
static bool forward(struct rein__mcp_http *h, rein_request *req, rein_sse *sse,
                    struct mcp_stream *st, uint64_t after, bool resumable, bool polling)
{
    int64_t close_ms = polling ? rein__mcp_opts(h->srv)->sse_close_ms : 0;
    int64_t deadline = close_ms > 0 ? rein_now_ms() + close_ms : 0;
    rein_cancel *gone = rein_request_cancel(req);
    uint64_t cursor = after;
    bool delivered = false;
    unsigned gen;
    char id[REIN_ID_MAX + 24];

    pthread_mutex_lock(&st->mu);
    gen = ++st->gen;
    for (;;) {
        struct mcp_event *e = st->head;
        while (e && e->seq <= cursor)
            e = e->next;
        if (st->gen != gen)
            break;
        if (e) {
            event_id(st, e->seq, id, sizeof(id));
            if (rein_sse_send_event(sse, id, "message", e->data, e->len, 0) != REIN_OK)
                break;
            cursor = e->seq;
            resumable = true;
            continue;
        }
        if (st->done) {
            delivered = true;
            st->delivered = true;
            break;
        }
        if (rein_cancel_is_set(gone))
            break;
        int64_t now = rein_now_ms(), wait = WAIT_SLICE_MS;
        if (deadline && resumable && now >= deadline)
            break; /* SSE polling: the client comes back with Last-Event-ID */
        if (deadline && deadline - now < wait)
            wait = deadline - now > 0 ? deadline - now : 1;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)(wait % 1000) * 1000000L;
        ts.tv_sec += wait / 1000 + ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&st->cv, &st->mu, &ts);
    }
    pthread_mutex_unlock(&st->mu);
    return delivered;
}

/* ---- the call job ----------------------------------------------------------------------- */

struct http_job {
    rein_mcp_server *srv;
    struct rein__mcp_session *sess; /* a reference */
    struct mcp_stream *st;          /* a reference */
    struct rein__mcp_msg msg;
    char trace_id[REIN_TRACE_ID_LEN + 1];
};

static void job_run(void *arg)
{
    struct http_job *j = arg;

    rein__mcp_handle(j->srv, j->sess, &j->msg, j->trace_id, &j->st->sink);
    stream_end(j->st);
    rein__mcp_msg_release(&j->msg);
    rein__mcp_session_job_end(j->sess);
    rein__mcp_session_unref(j->sess);
    stream_unref(j->st);
    rein_free(j);
}

/* Runs a tools/call as a resumable SSE stream. Takes msg. */
static void post_stream(struct rein__mcp_http *h, rein_request *req, struct http_session *hs,
                        struct rein__mcp_msg *msg)
{
    struct mcp_stream *st = stream_new();
    struct http_job *job = rein_calloc(1, sizeof(*job));
    bool primes = rein__mcp_version_primes(rein__mcp_session_version(hs->s));
    rein_sse *sse;
    rein_error err;
    char id[REIN_ID_MAX + 24];

    if (!st || !job || rein_request_set_header(req, "Mcp-Session-Id", hs->id) != REIN_OK) {
        reply_rpc_error(req, 500, msg->id, REIN__MCP_INTERNAL_ERROR, "out of memory");
        rein__mcp_msg_release(msg);
        stream_unref(st);
        rein_free(job);
        return;
    }
    session_add_stream(h, hs, st);
    *job = (struct http_job){h->srv, rein__mcp_session_ref(hs->s), st, *msg, ""};
    atomic_fetch_add(&st->refs, 1);
    snprintf(job->trace_id, sizeof(job->trace_id), "%s", rein_request_trace_id(req));
    memset(msg, 0, sizeof(*msg)); /* the job has it now */
    rein__mcp_session_job_begin(hs->s);
    if (rein__mcp_submit(h->srv, job_run, job) != REIN_OK)
        job_run(job); /* no worker could take it: run it here, then forward what it wrote */
    sse = rein_request_sse_start(req, &err);
    if (!sse)
        goto out;
    if (primes) {
        /* Priming (SEP-1699): an id to resume from, before anything else. */
        event_id(st, 0, id, sizeof(id));
        if (rein_sse_send_event(sse, id, NULL, "", 0, rein__mcp_opts(h->srv)->sse_retry_ms) !=
            REIN_OK)
            goto out;
    }
    if (forward(h, req, sse, st, 0, primes, true))
        session_drop_stream(h, hs, st);
out:
    stream_unref(st);
}

/* ---- handlers --------------------------------------------------------------------------- */

static void post_initialize(struct rein__mcp_http *h, rein_request *req,
                            const struct rein__mcp_msg *msg)
{
    struct http_session *hs = session_create(h);
    struct capture cap;

    if (!hs) {
        reply_rpc_error(req, 503, msg->id, REIN__MCP_INTERNAL_ERROR,
                        "Service Unavailable: too many MCP sessions are in use");
        return;
    }
    capture_init(&cap);
    rein__mcp_handle(h->srv, hs->s, msg, rein_request_trace_id(req), &cap.sink);
    if (rein__mcp_session_initialized(hs->s) &&
        rein_request_set_header(req, "Mcp-Session-Id", hs->id) == REIN_OK) {
    } else {
        /* initialize failed: no session is made. */
        session_remove(h, hs->id);
    }
    session_put(h, hs);
    if (cap.got)
        rein_request_reply(req, 200, "application/json", cap.out.ptr, cap.out.len);
    else
        reply_rpc_error(req, 500, msg->id, REIN__MCP_INTERNAL_ERROR, "no answer was made");
    capture_release(&cap);
}

static void handle_post(rein_request *req, void *userdata)
{
    struct rein__mcp_http *h = userdata;
    const char *accept = rein_request_header(req, "Accept");
    const char *ctype = rein_request_header(req, "Content-Type");
    struct rein__mcp_msg msg;
    struct http_session *hs;
    struct capture cap;
    json_t *bad_id = NULL;
    const char *body;
    size_t len;
    rein_error err;
    rein_err rc;

    if (!rebinding_check(h, req))
        return;
    if (!ctype || strncasecmp(ctype, "application/json", 16) != 0 ||
        (ctype[16] && ctype[16] != ';' && ctype[16] != ' ')) {
        reply_rpc_error(req, 415, NULL, REIN__MCP_INVALID_REQUEST,
                        "Unsupported Media Type: send the message as application/json");
        return;
    }
    if (!accepts(accept, "application/json") || !accepts(accept, "text/event-stream")) {
        /* MCP: a client lists both, and the server picks one per request. */
        reply_rpc_error(req, 406, NULL, REIN__MCP_INVALID_REQUEST,
                        "Not Acceptable: the Accept header must list both application/json and "
                        "text/event-stream");
        return;
    }
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
    if (msg.kind == REIN__MCP_REQUEST && strcmp(msg.method, "initialize") == 0) {
        post_initialize(h, req, &msg);
        rein__mcp_msg_release(&msg);
        return;
    }
    hs = request_session(h, req, msg.id);
    if (!hs) {
        rein__mcp_msg_release(&msg);
        return;
    }
    if (msg.kind != REIN__MCP_REQUEST) {
        capture_init(&cap);
        rein__mcp_handle(h->srv, hs->s, &msg, rein_request_trace_id(req), &cap.sink);
        capture_release(&cap);
        rein_request_reply(req, 202, NULL, "", 0);
    } else if (rein__mcp_is_long(&msg)) {
        post_stream(h, req, hs, &msg);
    } else {
        capture_init(&cap);
        rein__mcp_handle(h->srv, hs->s, &msg, rein_request_trace_id(req), &cap.sink);
        if (rein_request_set_header(req, "Mcp-Session-Id", hs->id) != REIN_OK)
            reply_rpc_error(req, 500, msg.id, REIN__MCP_INTERNAL_ERROR, "out of memory");
        else if (cap.got)
            rein_request_reply(req, 200, "application/json", cap.out.ptr, cap.out.len);
        else
            reply_rpc_error(req, 200, msg.id, REIN__MCP_REQUEST_CANCELLED,
                            "the request was cancelled");
        capture_release(&cap);
    }
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

static void handle_get(rein_request *req, void *userdata)
{
    struct rein__mcp_http *h = userdata;
    const char *last = rein_request_header(req, "Last-Event-ID");
    struct http_session *hs;
    struct mcp_stream *st;
    const char *sid;
    size_t sid_len;
    uint64_t seq;
    rein_sse *sse;
    rein_error err;
    char id[REIN_ID_MAX + 24];

    if (!rebinding_check(h, req))
        return;
    if (!accepts(rein_request_header(req, "Accept"), "text/event-stream")) {
        reply_rpc_error(req, 406, NULL, REIN__MCP_INVALID_REQUEST,
                        "Not Acceptable: a GET on /mcp must accept text/event-stream");
        return;
    }
    hs = request_session(h, req, NULL);
    if (!hs)
        return;
    if (!last) {
        /* rein sends nothing outside a request, so it offers no standalone stream. */
        if (rein_request_set_header(req, "Allow", "POST, DELETE") == REIN_OK)
            reply_rpc_error(req, 405, NULL, REIN__MCP_INVALID_REQUEST,
                            "Method Not Allowed: this server has no standalone stream; GET is "
                            "for resuming a stream with Last-Event-ID");
        session_put(h, hs);
        return;
    }
    st = parse_event_id(last, &sid, &sid_len, &seq) ? session_find_stream(h, hs, sid, sid_len)
                                                    : NULL;
    if (!st) {
        reply_rpc_error(req, 400, NULL, REIN__MCP_INVALID_REQUEST,
                        "Bad Request: Last-Event-ID %.80s names no stream of this session", last);
        session_put(h, hs);
        return;
    }
    if (rein_request_set_header(req, "Mcp-Session-Id", hs->id) != REIN_OK)
        goto out;
    sse = rein_request_sse_start(req, &err);
    if (!sse)
        goto out;
    event_id(st, seq, id, sizeof(id));
    if (rein_sse_send_event(sse, id, NULL, "", 0, rein__mcp_opts(h->srv)->sse_retry_ms) ==
            REIN_OK &&
        forward(h, req, sse, st, seq, true, false))
        session_drop_stream(h, hs, st);
out:
    stream_unref(st);
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
    for (size_t i = 0; i < h->nallowed; i++)
        rein_free(h->allowed[i]);
    rein_free(h->allowed);
    pthread_mutex_destroy(&h->mu);
    rein_free(h);
}

/* Splits the comma-separated allowed hosts into h->allowed. */
static rein_err parse_allowed(struct rein__mcp_http *h, const char *list)
{
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (end - p == 1 && *p == '*') {
            h->allow_any = true;
        } else if (end > p) {
            char **grown = rein_realloc(h->allowed, (h->nallowed + 1) * sizeof(*grown));
            if (!grown)
                return REIN_ENOMEM;
            h->allowed = grown;
            h->allowed[h->nallowed] = rein_strndup(p, (size_t)(end - p));
            if (!h->allowed[h->nallowed])
                return REIN_ENOMEM;
            h->nallowed++;
        }
        p = comma ? comma + 1 : NULL;
    }
    return REIN_OK;
}

rein_err rein_mcp_server_add_routes(rein_mcp_server *srv, rein_server *http, rein_error *err)
{
    struct rein__mcp_http **slot;
    struct rein__mcp_http *h;

    if (!srv || !http)
        return rein_error_set(err, REIN_EINVAL, "no MCP server or no HTTP server");
    slot = rein__mcp_http_slot(srv);
    if (*slot)
        return rein_error_set(err, REIN_EEXIST, "the MCP routes are already added");
    h = rein_calloc(1, sizeof(*h));
    if (!h)
        return rein_error_set(err, REIN_ENOMEM, "out of memory adding the MCP routes");
    h->srv = srv;
    pthread_mutex_init(&h->mu, NULL);
    if (parse_allowed(h, rein__mcp_opts(srv)->allowed_hosts) != REIN_OK) {
        rein__mcp_http_free(h);
        return rein_error_set(err, REIN_ENOMEM, "out of memory adding the MCP routes");
    }
    *slot = h;
    if (rein_server_route(http, "POST", "/mcp", 0, handle_post, h, err) ||
        rein_server_route(http, "GET", "/mcp", 0, handle_get, h, err) ||
        rein_server_route(http, "DELETE", "/mcp", 0, handle_delete, h, err))
        return err ? err->code : REIN_EINVAL;
    return REIN_OK;
}
