/*
 * The HTTP server core (include/rein/server.h) on libmicrohttpd.
 *
 * MHD runs its network threads (MHD_USE_INTERNAL_POLLING_THREAD with a small thread pool) and
 * calls on_request() for each request. The first call runs the guards (route, method, API
 * key, ids, content type, declared length) and answers a failing request at once, before any
 * body is read. Body bytes are collected up to the limit. When the request is complete, the
 * connection is suspended and the handler runs on a rein_pool worker, so a long agent turn
 * never blocks a network thread (a REIN_ROUTE_WAITS handler, the gateway's, on the waiting
 * pool, which grows with them); the handler's answer resumes the connection and the next
 * on_request() call queues it. A Server-Sent Events answer is a callback response whose reader
 * drains a per-request buffer and suspends the connection while the buffer is empty; each
 * write resumes it. A ticker thread writes heartbeat comments into idle streams, which is
 * also how a vanished client is noticed (the write fails, MHD ends the request, and the
 * request's cancellation handle is triggered).
 *
 * Every suspend and resume happens under the request's mutex together with the flag that
 * records it, so a resume never reaches a connection that is not suspended, and none reaches
 * a connection MHD has finished with (the `closed` flag, set in the completion callback).
 *
 * A request is shared by MHD (until the completion callback), its handler job and its SSE
 * response; the last of the three to let go frees it.
 *
 * Every unit of work has a deadline and a bound. Each connection is tracked from accept to
 * close (on_connection): its request's headers must arrive within the header timeout (counted
 * from accept or from the previous answer) and its body within the body timeout, or the
 * ticker shuts the socket down; MHD's idle timeout alone let a client that sends a byte every
 * few seconds hold a connection forever. A client (an IP address) holds at most
 * max_client_conns connections, and bodies being received hold at most body_memory bytes
 * together (a request past that is answered 503 and its body discarded). While a handler runs
 * or a stream waits, MHD does not look at the connection; the ticker watches those sockets for
 * a hang-up (an epoll set a connection joins once, decision 0076), so a client that goes away
 * is seen at once, not at the next write.
 *
 * The listening socket is the server's own (accept.c, decision 0035): its acceptor peeks at
 * each connection's first request head, answers a malformed Content-Length itself (once:
 * libmicrohttpd 0.9.75 stacks two header blocks there) and hands the rest to MHD
 * (MHD_add_connection), within the header deadline and the per-client cap. A later request
 * on a kept-alive connection is answered from MHD's error log (on_request_line, mhd_log;
 * decision 0040). A stopping server
 * answers new requests 503 until the acceptor stops, just before MHD_stop_daemon(); so
 * MHD_quiesce_daemon() is not needed (with epoll and a thread pool, libmicrohttpd 0.9.75 raced
 * its own threads removing the listening socket from their epoll sets and aborted).
 */
#include "server/server_int.h"

#include <rein/pool.h>
#include <rein/trace.h>

#include <arpa/inet.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define WHERE        "server"
#define SSE_MAX_BUF  ((size_t)8 << 20)
#define TICK_MS      100
#define WAIT_IDLE_MS 30000 /* a waiting-pool thread with no request this long stops */
/* Past --threads requests at once, one that has waited this long for a thread gets a new one:
 * requests that keep the cores busy queue for the workers that run (as on the fixed pool),
 * requests that wait on their upstreams do not wait for each other (decision 0082). */
#define WAIT_STALL_MS 5
/* A request's arena holds its method, path, headers and parameters: usually a few hundred
 * bytes. Blocks this size come from glibc's per-thread cache (at most 1,032 bytes with the
 * arena's block header); the default 16 KB block cost a request a trip through the heap's
 * large-chunk path both ways. A longer head takes more blocks. */
#define REQ_ARENA_BLOCK 960

/* What a connection waits for when its deadline passes (names in phase_names). */
enum phase { PH_NONE, PH_HEADERS, PH_BODY };
static const char *const phase_names[] = {"request", "request headers", "body"};

/*
 * One accepted connection, from on_connection(STARTED) to on_connection(CLOSED). due is
 * deadline_ms * 4 + phase: when (monotonic ms) the ticker shuts the socket down and what the
 * connection waits for, 0 for no deadline. It changes three times per request on the network
 * thread and is read by the ticker, so it is one atomic word (read together, never torn)
 * instead of two fields under the server's mu, which every network thread took four times
 * per request. The list links, cut, req, pending and retired are guarded by the server's mu;
 * watched and was_watched belong to the connection's network thread, and to the worker that
 * answers while the connection is suspended (MHD does not run it then). A track that was ever
 * watched is freed by the ticker (watch_hangups), which may hold an event naming it until then.
 */
struct conn_track {
    struct conn_track *next, *prev;
    int fd;
    struct sockaddr_storage addr; /* the client's (family 0: unknown) */
    _Atomic int64_t due;
    bool cut;
    bool watched;                    /* in the ticker's hang-up set (srv->hup_ep) */
    bool was_watched;                /* it has been in that set: the ticker frees it */
    bool stays_watched;              /* kept alive past one answer: watched until it closes */
    bool pending;                    /* in srv->hup_pending: hung up, not yet while suspended */
    bool retired;                    /* closed: in srv->retired until the ticker frees it */
    struct conn_track *pending_next; /* in srv->hup_pending */
    struct conn_track *retired_next; /* in srv->retired */
    struct rein_request *req;        /* the request on it between request_new and on_completed */
};

struct route {
    struct route *next;
    char *method;
    char *pattern;
    /* The pattern's first segment when it is a literal ("skills" of /skills/{id}); first_len
     * SIZE_MAX when it is a parameter or the pattern does not start with '/'. */
    size_t first_len;
    size_t slashes; /* '/' in the pattern: a path with another count cannot match */
    unsigned flags;
    rein_handler_fn fn;
    void *userdata;
};

/*
 * What every request compares first, for every route, side by side in one array: walking the
 * routes' own records (one allocation each) missed the cache on each of them, and that load
 * was two thirds of the time of a request's checks before its handler.
 */
struct route_key {
    uint32_t slashes;   /* the route's slashes */
    uint32_t first_len; /* its first_len, UINT32_MAX for none (a parameter, or past 4 GB) */
    uint64_t head;      /* the first segment's first 8 bytes, zero-padded */
    struct route *r;
};

struct kv {
    struct kv *next;
    const char *key;
    const char *value;
    size_t klen; /* bytes of key: most lookups are told apart by length alone */
};

/* True when h's key is name (len bytes), ignoring case as HTTP field names are compared. */
static bool key_is(const struct kv *h, const char *name, size_t len)
{
    return h->klen == len && strncasecmp(h->key, name, len) == 0;
}

#define KEY_IS(h, lit) key_is((h), (lit), sizeof(lit) - 1)

struct rein_sse {
    rein_request *req;
};

enum stage { ST_NEW, ST_BODY, ST_DISPATCHED, ST_QUEUED };

struct rein_request {
    atomic_int refs;
    rein_server *srv;
    struct MHD_Connection *conn;
    rein_arena *arena;
    char id[REIN_ID_MAX];
    char trace_id[REIN_TRACE_ID_LEN + 1];
    struct rein_trace_context *tctx; /* the caller's (in the arena), or NULL */
    const char *method;
    const char *path;
    const struct route *route;
    char names[REIN_HTTP_MAX_PARAMS][32];
    char *values[REIN_HTTP_MAX_PARAMS];
    int nparams;
    struct kv *headers_in;
    struct kv *query;
    struct rein_buf body;
    size_t discarded;
    bool too_big;
    bool bad_framing;         /* the body's length is ambiguous: answer and close */
    bool http11;              /* HTTP/1.1 (needs exactly one Host) */
    bool shed;                /* the body was dropped: bodies in flight hold too much memory */
    size_t counted;           /* body bytes counted in the server's body_bytes */
    struct conn_track *track; /* borrowed from MHD's socket context */
    json_t *json;
    rein_cancel *cancel;
    int64_t start_ns;
    enum stage stage;
    int final_status;
    bool in_inline;           /* an inline handler is running on the network thread */
    rein_handler_fn defer_fn; /* set by rein_request_defer(): runs on a worker */
    void *defer_data;

    /* Guarded by mu. */
    pthread_mutex_t mu;
    bool suspended; /* the connection is suspended and waits for us */
    bool replied;   /* an answer was handed over */
    bool closed;    /* MHD finished with the connection */
    bool gone;      /* the client hung up while the connection was suspended */
    struct MHD_Response *response;
    int status;
    struct kv *headers_out;
    bool is_sse, sse_ended;
    bool sse_held;  /* rein_request_sse_start_held(): writes wait for a flush or the end */
    bool sse_given; /* the stream's answer was handed over (at once unless held) */
    int64_t sse_unflushed_ms; /* a held stream: when it was first written since a flush, or 0 */
    bool sse_failed;          /* a held stream ended without memory for any answer */
    bool sse_detached;        /* rein_sse_detach(): the stream outlives the handler */
    bool sse_idle;            /* ... and only waits for news: stopping ends it at once */
    struct rein_buf sse_buf;
    size_t sse_off;
    int64_t sse_last_ms;
    struct rein_sse sse;

    /* Guarded by the server's mu. */
    rein_request *live_next, *live_prev;
};

/* Something a route set allocated, freed with the server. */
struct kept {
    struct kept *next;
    void *ptr;
    void (*free_fn)(void *ptr);
};

struct rein_server {
    struct kept *kept;
    char host[64];
    int port;
    unsigned threads, io_threads, wait_threads, wait_idle_ms;
    size_t body_limit;
    unsigned idle_s;
    int64_t heartbeat_ms;
    int64_t header_timeout_ms;
    int64_t body_timeout_ms;
    unsigned max_client_conns;
    unsigned max_conns;
    size_t body_memory;
    atomic_size_t body_bytes;  /* bytes held by bodies of live requests */
    atomic_uint requests_seen; /* grows with every request (the ticker trims when it stops) */
    atomic_uint heap_trims;    /* quiet spells whose freed heap went back to the system */
    atomic_uint hup_events;    /* connections the hang-up set reported */
    atomic_uint hup_watched;   /* connections in the hang-up set */
    atomic_bool stopping;
    atomic_bool held_waiting; /* a held stream may hold unflushed writes (flush_held) */
    char **keys;
    int nkeys;
    rein_metrics *metrics; /* borrowed; NULL: global */
    struct route *routes, *routes_tail;
    struct route_key *rkeys; /* one per route, in the routes' order */
    size_t nroutes;
    struct MHD_Daemon *daemon;
    struct rein__acceptor *acceptor;
    rein_pool *pool;
    rein_pool *wait_pool; /* REIN_ROUTE_WAITS handlers (decision 0082) */
    union {
        struct sockaddr_in v4;
        struct sockaddr_in6 v6;
    } addr;
    int bound_port;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    rein_request *live;
    int nlive;
    int jobs;
    struct conn_track *conns;
    struct conn_track *hup_pending; /* hung up while MHD handled them (watch_hangups) */
    struct conn_track *retired;     /* watched connections closed since the ticker's last look */
    int hup_ep;                     /* epoll set of the watched connections, or -1 */
    bool started, stopped;
    pthread_t ticker;
    rein_cancel *ticker_stop;
    rein_health_fn health; /* adds members to GET /healthz's answer */
    void *health_data;
};

/* ---- request lifetime ------------------------------------------------------------------- */

static void request_unref(rein_request *req)
{
    if (!req || atomic_fetch_sub(&req->refs, 1) != 1)
        return;
    if (req->counted)
        atomic_fetch_sub(&req->srv->body_bytes, req->counted);
    if (req->response)
        MHD_destroy_response(req->response);
    json_decref(req->json);
    rein_buf_release(&req->body);
    rein_buf_release(&req->sse_buf);
    rein_cancel_unref(req->cancel);
    pthread_mutex_destroy(&req->mu);
    rein_arena_free(req->arena);
    rein_free(req);
}

static enum MHD_Result collect_kv(void *cls, enum MHD_ValueKind kind, const char *key,
                                  size_t key_size, const char *value, size_t value_size)
{
    rein_request *req = cls;
    struct kv *e = rein_arena_alloc(req->arena, sizeof(*e));

    if (!e)
        return MHD_NO;
    /* Copied by the sizes MHD knows; a NUL inside still ends the text, as before. */
    e->key = rein_arena_strndup(req->arena, key, key_size);
    e->value = rein_arena_strndup(req->arena, value ? value : "", value ? value_size : 0);
    if (!e->key || !e->value)
        return MHD_NO;
    e->klen = strlen(e->key);
    if (kind == MHD_HEADER_KIND) {
        e->next = req->headers_in;
        req->headers_in = e;
    } else {
        e->next = req->query;
        req->query = e;
    }
    return MHD_YES;
}

/* Sets when the connection's current phase must end: ms after now_ns (a monotonic time the
 * caller has just read, so a request reads the clock once where it can); ms 0: no deadline. */
static void track_deadline_at(struct conn_track *t, int64_t now_ns, int64_t ms, enum phase phase)
{
    if (t)
        atomic_store_explicit(&t->due, ms > 0 ? (now_ns / 1000000 + ms) * 4 + phase : 0,
                              memory_order_relaxed);
}

/* The same, ms from now. */
static void track_deadline(struct conn_track *t, int64_t ms, enum phase phase)
{
    track_deadline_at(t, ms > 0 ? rein_now_ns() : 0, ms, phase);
}

static rein_request *request_new(rein_server *srv, struct MHD_Connection *conn, const char *url,
                                 const char *method)
{
    const union MHD_ConnectionInfo *info;
    rein_request *req = rein_calloc(1, sizeof(*req));

    if (!req)
        return NULL;
    atomic_init(&req->refs, 1);
    atomic_fetch_add_explicit(&srv->requests_seen, 1, memory_order_relaxed);
    pthread_mutex_init(&req->mu, NULL);
    rein_buf_init(&req->body, srv->body_limit + 1);
    rein_buf_init(&req->sse_buf, SSE_MAX_BUF);
    req->srv = srv;
    req->conn = conn;
    info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    req->track = info ? info->socket_context : NULL;
    req->start_ns = rein_now_ns();
    req->arena = rein_arena_new(REQ_ARENA_BLOCK);
    req->cancel = rein_cancel_new();
    if (!req->arena || !req->cancel)
        goto fail;
    req->method = rein_arena_strdup(req->arena, method);
    req->path = rein_arena_strdup(req->arena, url);
    if (!req->method || !req->path)
        goto fail;
    rein_id_new("req_", req->id);
    /* Copies, so handler threads never read MHD's connection memory. */
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, collect_kv, req);
    MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, collect_kv, req);
    pthread_mutex_lock(&srv->mu);
    req->live_next = srv->live;
    if (srv->live)
        srv->live->live_prev = req;
    srv->live = req;
    srv->nlive++;
    if (req->track)
        req->track->req = req;
    pthread_mutex_unlock(&srv->mu);
    return req;
fail:
    request_unref(req);
    return NULL;
}

/* ---- building answers ------------------------------------------------------------------- */

/* The headers every answer carries, added to resp (NULL passes through). */
static struct MHD_Response *with_headers(rein_request *req, struct MHD_Response *resp,
                                         const char *content_type)
{
    if (!resp)
        return NULL;
    if (content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(resp, "X-Request-Id", req->id);
    MHD_add_response_header(resp, "X-Trace-Id", req->trace_id);
    return resp;
}

static struct MHD_Response *make_response(rein_request *req, const char *content_type,
                                          const void *body, size_t len)
{
    return with_headers(req,
                        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY),
                        content_type);
}

/* An answer whose body (from rein_malloc) the response takes and frees: no copy. On failure
 * body is freed here. */
static struct MHD_Response *make_response_taking(rein_request *req, const char *content_type,
                                                 char *body, size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback(len, body, rein_free);

    if (!resp)
        rein_free(body);
    return with_headers(req, resp, content_type);
}

/* Encodes {"error": {"code", "message"[, extra members]}}; extra (borrowed) may be NULL. */
static char *error_body(const char *code, const char *message, const json_t *extra, size_t *len)
{
    struct rein_buf b;
    struct rein_jw w;
    const char *key;
    json_t *v;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "error");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "code");
    rein_jw_str(&w, code);
    rein_jw_key(&w, "message");
    rein_jw_str(&w, message);
    if (extra) {
        json_object_foreach((json_t *)extra, key, v)
        {
            rein_jw_key(&w, key);
            rein_jw_json(&w, v);
        }
    }
    rein_jw_obj_end(&w);
    rein_jw_obj_end(&w);
    if (rein_jw_finish(&w) != REIN_OK) {
        rein_buf_release(&b);
        return NULL;
    }
    return rein_buf_detach(&b, len);
}

/* {"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message"}}: a guard's answer on a
 * JSON-RPC route (the request was refused before its id could be read). */
static char *jsonrpc_error_body(const char *message, size_t *len)
{
    struct rein_buf b;
    struct rein_jw w;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "jsonrpc");
    rein_jw_str(&w, "2.0");
    rein_jw_key(&w, "id");
    rein_jw_null(&w);
    rein_jw_key(&w, "error");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "code");
    rein_jw_int(&w, -32600);
    rein_jw_key(&w, "message");
    rein_jw_str(&w, message);
    rein_jw_obj_end(&w);
    rein_jw_obj_end(&w);
    if (rein_jw_finish(&w) != REIN_OK) {
        rein_buf_release(&b);
        return NULL;
    }
    return rein_buf_detach(&b, len);
}

static void add_out_headers(rein_request *req, struct MHD_Response *resp)
{
    for (struct kv *h = req->headers_out; h; h = h->next)
        MHD_add_response_header(resp, h->key, h->value);
}

/* Queues resp on the network thread; takes resp. */
static enum MHD_Result queue(rein_request *req, int status, struct MHD_Response *resp)
{
    enum MHD_Result r;

    if (!resp)
        return MHD_NO;
    req->final_status = status;
    req->stage = ST_QUEUED;
    /* Sending is bounded by MHD's idle timeout: a reader that stops reading is closed. */
    track_deadline(req->track, 0, PH_NONE);
    r = MHD_queue_response(req->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* A guard's answer, queued at once from the network thread. */
/*
 * The WWW-Authenticate value of a 401 (in req's arena): a protected resource's names its
 * metadata (RFC 9728 §5.1), at the origin the client used, which is given only when the Host
 * header is a plain host[:port].
 */
static const char *challenge(rein_request *req)
{
    const char *host = rein_request_header(req, "Host");
    const char *proto = rein_request_header(req, "X-Forwarded-Proto");
    char *out;
    size_t n;

    if (!req->route || !(req->route->flags & REIN_ROUTE_PROTECTED) || !host || !host[0] ||
        strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") !=
            strlen(host) ||
        strlen(host) > 255)
        return "Bearer";
    n = strlen(host) + strlen(req->path) + 100;
    out = rein_arena_alloc(req->arena, n);
    if (!out)
        return "Bearer";
    snprintf(out, n, "Bearer resource_metadata=\"%s://%s/.well-known/oauth-protected-resource%s\"",
             proto && strcmp(proto, "https") == 0 ? "https" : "http", host, req->path);
    return out;
}

static enum MHD_Result guard(rein_request *req, int status, const char *code, const char *fmt, ...)
    REIN_PRINTF(4, 5);

static enum MHD_Result guard(rein_request *req, int status, const char *code, const char *fmt, ...)
{
    char msg[512];
    char *body;
    size_t len = 0;
    struct MHD_Response *resp;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* A JSON-RPC endpoint's clients read every answer as a JSON-RPC message. */
    if (req->route && (req->route->flags & REIN_ROUTE_JSONRPC))
        body = jsonrpc_error_body(msg, &len);
    else
        body = error_body(code, msg, NULL, &len);
    if (!body)
        return MHD_NO;
    resp = make_response_taking(req, "application/json", body, len);
    if (resp) {
        add_out_headers(req, resp);
        if (status == 401)
            MHD_add_response_header(resp, "WWW-Authenticate", challenge(req));
        if (status == 503 || status == 413 || req->bad_framing)
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    return queue(req, status, resp);
}

static rein_err give_locked(rein_request *req, int status, struct MHD_Response *resp);
static void unwatch_connection(rein_server *srv, struct conn_track *t);

/*
 * Hands an answer over from a handler (any thread). Resumes the connection if it waits.
 * Takes resp.
 */
static rein_err hand_over(rein_request *req, int status, struct MHD_Response *resp)
{
    if (!resp)
        return REIN_ENOMEM;
    pthread_mutex_lock(&req->mu);
    if (req->replied || req->is_sse) {
        pthread_mutex_unlock(&req->mu);
        MHD_destroy_response(resp);
        return REIN_ESTATE;
    }
    return give_locked(req, status, resp);
}

/*
 * hand_over() once it is known that this answer is the request's (req->mu held; released
 * here). Takes resp.
 */
static rein_err give_locked(rein_request *req, int status, struct MHD_Response *resp)
{
    add_out_headers(req, resp);
    req->replied = true;
    if (req->closed) {
        /* The client is gone and MHD is done with the connection: nothing will send this.
         * Letting go of it here also lets go of an SSE response's hold on the request, which
         * would otherwise keep both alive for good. */
        pthread_mutex_unlock(&req->mu);
        MHD_destroy_response(resp);
        return REIN_ECANCELED;
    }
    req->response = resp;
    req->status = status;
    if (req->suspended && !req->closed) {
        req->suspended = false;
        /* a stream is suspended again while it waits for more: it stays watched */
        if (!req->is_sse)
            unwatch_connection(req->srv, req->track);
        MHD_resume_connection(req->conn);
    }
    pthread_mutex_unlock(&req->mu);
    return REIN_OK;
}

/* Takes the handed-over answer and queues it (network thread). */
static enum MHD_Result queue_handed(rein_request *req)
{
    struct MHD_Response *resp;
    int status;
    bool failed;

    pthread_mutex_lock(&req->mu);
    resp = req->response;
    status = req->status;
    failed = req->sse_failed;
    req->response = NULL;
    pthread_mutex_unlock(&req->mu);
    if (!resp)
        return failed ? MHD_NO : MHD_YES; /* else not answered yet: a spurious call */
    return queue(req, status, resp);
}

/* ---- public answer functions ------------------------------------------------------------ */

rein_err rein_request_set_header(rein_request *req, const char *name, const char *value)
{
    struct kv *h;

    pthread_mutex_lock(&req->mu);
    h = rein_arena_calloc(req->arena, 1, sizeof(*h));
    if (h) {
        h->key = rein_arena_strdup(req->arena, name);
        h->value = rein_arena_strdup(req->arena, value);
        h->next = req->headers_out;
        req->headers_out = h;
    }
    pthread_mutex_unlock(&req->mu);
    return h && h->key && h->value ? REIN_OK : REIN_ENOMEM;
}

rein_err rein_request_reply(rein_request *req, int status, const char *content_type,
                            const void *body, size_t len)
{
    return hand_over(req, status, make_response(req, content_type, body ? body : "", len));
}

rein_err rein__request_reply_buf(rein_request *req, int status, const char *content_type,
                                 struct rein_buf *b)
{
    size_t len;
    char *body = rein_buf_detach(b, &len);

    if (!body)
        return REIN_ENOMEM;
    return hand_over(req, status, make_response_taking(req, content_type, body, len));
}

rein_err rein_request_reply_json(rein_request *req, int status, json_t *body)
{
    struct rein_buf b;
    rein_err rc;

    rein_buf_init(&b, 0);
    rc = body ? rein_json_dump(&b, body) : REIN_ENOMEM;
    json_decref(body);
    if (rc == REIN_OK)
        rc = rein_buf_addch(&b, '\n');
    if (rc == REIN_OK)
        rc = rein__request_reply_buf(req, status, "application/json", &b);
    else
        rc = rein_request_reply_error(req, 500, "internal", "could not encode the answer");
    rein_buf_release(&b);
    return rc;
}

static rein_err reply_error_extra(rein_request *req, int status, const char *code,
                                  const char *message, const json_t *extra)
{
    size_t len = 0;
    char *body = error_body(code, message, extra, &len);

    if (!body)
        return REIN_ENOMEM;
    return hand_over(req, status, make_response_taking(req, "application/json", body, len));
}

rein_err rein__request_reply_error_extra(rein_request *req, int status, const char *code,
                                         const char *message, const json_t *extra)
{
    return reply_error_extra(req, status, code, message, extra);
}

rein_err rein_request_reply_error(rein_request *req, int status, const char *code, const char *fmt,
                                  ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return reply_error_extra(req, status, code, msg, NULL);
}

int rein_http_status_for(int code)
{
    switch (code) {
    case REIN_OK:
        return 200;
    case REIN_EINVAL:
    case REIN_EPARSE:
    case REIN_EINVALID:
    case REIN_EDEPTH:
        return 400;
    case REIN_EDENIED:
        return 403;
    case REIN_ENOTFOUND:
        return 404;
    case REIN_EEXIST:
    case REIN_EBUSY:
    case REIN_ESTATE:
        return 409;
    case REIN_ETOOBIG:
        return 413;
    case REIN_ENOTSUP:
        return 501;
    case REIN_EPROVIDER:
    case REIN_EHTTP:
        return 502;
    case REIN_ESTORE:
        return 503;
    case REIN_ETIMEDOUT:
        return 504;
    default:
        return 500;
    }
}

const char *rein_http_error_code_for(int code)
{
    switch (code) {
    case REIN_EINVAL:
    case REIN_EPARSE:
    case REIN_EINVALID:
    case REIN_EDEPTH:
        return "bad_request";
    case REIN_EDENIED:
        return "forbidden";
    case REIN_ENOTFOUND:
        return "not_found";
    case REIN_EEXIST:
        return "already_exists";
    case REIN_EBUSY:
        return "busy";
    case REIN_ESTATE:
        return "conflict";
    case REIN_ETOOBIG:
        return "payload_too_large";
    case REIN_ENOTSUP:
        return "not_implemented";
    case REIN_EPROVIDER:
    case REIN_EHTTP:
        return "upstream_error";
    case REIN_ESTORE:
        return "store_unavailable";
    case REIN_ETIMEDOUT:
        return "timeout";
    case REIN_ECANCELED:
        return "cancelled";
    default:
        return "internal";
    }
}

rein_err rein_request_reply_rein_error(rein_request *req, const rein_error *err)
{
    int code = err ? err->code : REIN_EINTERNAL;

    return rein_request_reply_error(req, rein_http_status_for(code), rein_http_error_code_for(code),
                                    "%s", err && err->msg[0] ? err->msg : rein_strerror(code));
}

json_t *rein_lock_info_json(const struct rein_store_lock_info *info)
{
    char started[REIN_TIME_ISO_LEN], expires[REIN_TIME_ISO_LEN];
    json_t *o = json_object();

    if (o &&
        (json_object_set_new(o, "state", json_string(info->state)) ||
         json_object_set_new(o, "tool", info->tool[0] ? json_string(info->tool) : json_null()) ||
         json_object_set_new(o, "started_at",
                             json_string(rein_time_iso(info->started_ms, started))) ||
         json_object_set_new(o, "expires_at",
                             json_string(rein_time_iso(info->expires_ms, expires))))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

rein_err rein_request_reply_busy(rein_request *req, const char *conv_id,
                                 const struct rein_store_lock_info *held)
{
    json_t *extra = json_object();
    json_t *lock = rein_lock_info_json(held);
    char msg[256];
    rein_err rc;

    if (!extra || !lock || json_object_set_new(extra, "lock", lock)) {
        json_decref(extra);
        return rein_request_reply_error(req, 409, "conversation_busy",
                                        "conversation %s has a turn running", conv_id);
    }
    snprintf(msg, sizeof(msg),
             "conversation %s has a turn running (%s%s%s); try again when it "
             "ends",
             conv_id, held->state, held->tool[0] ? ": " : "", held->tool);
    rc = reply_error_extra(req, 409, "conversation_busy", msg, extra);
    json_decref(extra);
    return rc;
}

/* ---- request accessors ------------------------------------------------------------------ */

const char *rein_request_method(const rein_request *req)
{
    return req->method;
}

const char *rein_request_path(const rein_request *req)
{
    return req->path;
}

const char *rein_request_route(const rein_request *req)
{
    return req->route ? req->route->pattern : "";
}

const char *rein_request_param(const rein_request *req, const char *name)
{
    for (int i = 0; i < req->nparams; i++) {
        if (strcmp(req->names[i], name) == 0)
            return req->values[i];
    }
    return NULL;
}

const char *rein_request_query(rein_request *req, const char *name)
{
    for (struct kv *q = req->query; q; q = q->next) {
        size_t klen = strlen(q->key), vlen = strlen(q->value), n;
        char *key = rein_arena_alloc(req->arena, klen + 1);
        char *value;
        if (!key || !rein__http_pct_decode(q->key, klen, true, key, &n) || strcmp(key, name) != 0)
            continue;
        value = rein_arena_alloc(req->arena, vlen + 1);
        if (!value || !rein__http_pct_decode(q->value, vlen, true, value, &n))
            return NULL;
        return value;
    }
    return NULL;
}

const char *rein_request_header(const rein_request *req, const char *name)
{
    size_t len = strlen(name);

    for (struct kv *h = req->headers_in; h; h = h->next) {
        if (key_is(h, name, len))
            return h->value;
    }
    return NULL;
}

const char *rein_request_body(const rein_request *req, size_t *len)
{
    if (len)
        *len = req->body.len;
    return req->body.ptr;
}

json_t *rein_request_json(const rein_request *req)
{
    return req->json;
}

rein_arena *rein_request_arena(rein_request *req)
{
    return req->arena;
}

const char *rein_request_id(const rein_request *req)
{
    return req->id;
}

const char *rein_request_trace_id(const rein_request *req)
{
    return req->trace_id;
}

rein_cancel *rein_request_cancel(rein_request *req)
{
    return req->cancel;
}

bool rein_request_client_gone(rein_request *req)
{
    bool gone;

    pthread_mutex_lock(&req->mu);
    gone = req->gone || (req->closed && !req->replied);
    pthread_mutex_unlock(&req->mu);
    return gone;
}

bool rein_request_wants_sse(const rein_request *req)
{
    return rein__http_accepts_sse(rein_request_header(req, "Accept"));
}

rein_err rein_request_defer(rein_request *req, rein_handler_fn fn, void *userdata)
{
    if (!fn || !req->in_inline || req->defer_fn || req->replied)
        return REIN_ESTATE;
    req->defer_fn = fn;
    req->defer_data = userdata;
    return REIN_OK;
}

/* ---- SSE -------------------------------------------------------------------------------- */

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    rein_request *req = cls;
    ssize_t n = 0;

    (void)pos;
    pthread_mutex_lock(&req->mu);
    if (req->sse_off < req->sse_buf.len) {
        size_t avail = req->sse_buf.len - req->sse_off;
        size_t take = avail < max ? avail : max;
        memcpy(buf, req->sse_buf.ptr + req->sse_off, take);
        req->sse_off += take;
        if (req->sse_off == req->sse_buf.len) {
            rein_buf_reset(&req->sse_buf);
            req->sse_off = 0;
        }
        n = (ssize_t)take;
    } else if (req->sse_ended) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        /* Nothing to send: park the connection until the next write resumes it. */
        req->suspended = true;
        MHD_suspend_connection(req->conn);
    }
    pthread_mutex_unlock(&req->mu);
    return n;
}

static void sse_free(void *cls)
{
    request_unref(cls);
}

static void sse_headers(rein_request *req, struct MHD_Response *resp)
{
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    MHD_add_response_header(resp, "X-Request-Id", req->id);
    MHD_add_response_header(resp, "X-Trace-Id", req->trace_id);
}

/* The streaming answer: MHD reads the request's buffer through sse_reader. */
static struct MHD_Response *sse_response(rein_request *req)
{
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, sse_reader, req, sse_free);

    if (!resp)
        return NULL;
    /* The response holds the request until MHD frees it. */
    atomic_fetch_add(&req->refs, 1);
    sse_headers(req, resp);
    return resp;
}

/*
 * Hands a held stream's answer over (req->mu held; released here). A stream that has ended
 * by then is one body with its length: MHD sends the head and the body in one write, where a
 * streaming answer costs a write for the head, one per flush and one for the last chunk.
 */
static rein_err sse_give_locked(rein_request *req)
{
    struct MHD_Response *resp = NULL;

    req->sse_given = true;
    req->sse_unflushed_ms = 0;
    if (req->sse_ended && req->sse_off == 0) {
        /* The response takes the buffer's memory; without memory for the response the
         * buffer stays, and is streamed after all. */
        resp = MHD_create_response_from_buffer_with_free_callback(
            req->sse_buf.len, req->sse_buf.alloc ? req->sse_buf.ptr : NULL, rein_free);
        if (resp) {
            if (req->sse_buf.alloc)
                (void)rein_buf_detach(&req->sse_buf, NULL);
            sse_headers(req, resp);
        }
    }
    if (!resp)
        resp = sse_response(req);
    if (!resp) {
        pthread_mutex_unlock(&req->mu);
        return REIN_ENOMEM;
    }
    return give_locked(req, 200, resp);
}

static rein_sse *sse_start(rein_request *req, bool held, rein_error *err)
{
    struct MHD_Response *resp = NULL;

    if (req->in_inline) {
        rein_error_set(err, REIN_ESTATE, "inline handlers cannot stream (defer to a worker)");
        return NULL;
    }
    if (!held && !(resp = sse_response(req))) {
        rein_error_set(err, REIN_ENOMEM, "server: out of memory");
        return NULL;
    }
    pthread_mutex_lock(&req->mu);
    if (req->replied || req->is_sse) {
        pthread_mutex_unlock(&req->mu);
        if (resp)
            MHD_destroy_response(resp); /* runs sse_free, dropping the reference again */
        rein_error_set(err, REIN_ESTATE, "the request was already answered");
        return NULL;
    }
    req->is_sse = true;
    req->sse_held = held;
    req->sse.req = req;
    req->sse_last_ms = rein_now_ms();
    if (held) {
        pthread_mutex_unlock(&req->mu);
        return &req->sse;
    }
    req->sse_given = true;
    rein_err rc = give_locked(req, 200, resp);
    if (rc != REIN_OK) {
        rein_error_set(err, rc, "the client is gone");
        return NULL;
    }
    return &req->sse;
}

rein_sse *rein_request_sse_start(rein_request *req, rein_error *err)
{
    return sse_start(req, false, err);
}

rein_sse *rein_request_sse_start_held(rein_request *req, rein_error *err)
{
    return sse_start(req, true, err);
}

rein_err rein_sse_flush(rein_sse *sse)
{
    rein_request *req = sse->req;

    pthread_mutex_lock(&req->mu);
    if (!req->sse_held || req->sse_buf.len == req->sse_off || req->closed) {
        pthread_mutex_unlock(&req->mu);
        return REIN_OK;
    }
    if (!req->sse_given)
        return sse_give_locked(req);
    req->sse_unflushed_ms = 0;
    if (req->suspended) {
        req->suspended = false;
        MHD_resume_connection(req->conn);
    }
    pthread_mutex_unlock(&req->mu);
    return REIN_OK;
}

/* After bytes were added to the stream (req->mu held): sent at once, or, held, by the next
 * flush, the end, or the ticker (flush_held). */
static void pushed_locked(rein_request *req)
{
    req->sse_last_ms = rein_now_ms();
    if (req->sse_held) {
        if (!req->sse_unflushed_ms) {
            req->sse_unflushed_ms = req->sse_last_ms;
            /* read first: the word is shared by every stream, written only when it changes */
            if (!atomic_load_explicit(&req->srv->held_waiting, memory_order_relaxed))
                atomic_store_explicit(&req->srv->held_waiting, true, memory_order_relaxed);
        }
    } else if (req->suspended) {
        req->suspended = false;
        MHD_resume_connection(req->conn);
    }
}

/* Appends text to the stream and wakes the connection; REIN_ECANCELED once closed. */
static rein_err sse_push(rein_request *req, const char *a, size_t alen, const char *b, size_t blen,
                         const char *c, size_t clen)
{
    rein_err rc = REIN_OK;
    size_t before;

    pthread_mutex_lock(&req->mu);
    if (req->closed || req->gone || req->sse_ended) {
        pthread_mutex_unlock(&req->mu);
        return REIN_ECANCELED;
    }
    before = req->sse_buf.len;
    if (rein_buf_add(&req->sse_buf, a, alen) || rein_buf_add(&req->sse_buf, b, blen) ||
        rein_buf_add(&req->sse_buf, c, clen)) {
        rein_buf_truncate(&req->sse_buf, before);
        rc = REIN_ETOOBIG;
    } else {
        pushed_locked(req);
    }
    pthread_mutex_unlock(&req->mu);
    return rc;
}

rein_err rein_sse_frame(struct rein_buf *out, const char *event, const char *data, size_t len)
{
    /* the checks and the bytes of rein_sse_send_event(sse, NULL, event, data, len, 0) */
    if ((event && strpbrk(event, "\r\n")) ||
        (len && (memchr(data, '\n', len) || memchr(data, '\r', len))))
        return REIN_EINVAL;
    return rein_sse_frame_line(out, event, data, len);
}

rein_err rein_sse_frame_line(struct rein_buf *out, const char *event, const char *data, size_t len)
{
    size_t elen = event ? strlen(event) : 0, head = event ? 14 + elen : 6;
    char *p;
    rein_err rc;

    if (event && head >= 512)
        return REIN_EINVAL;
    if (len > SIZE_MAX - head - 2)
        return REIN_ETOOBIG;
    /* one reservation and plain copies: an event is a few hundred bytes, and three appends
     * cost more than the bytes they copy */
    if (head + len + 2 >= out->alloc - out->len &&
        (rc = rein_buf_grow(out, head + len + 2)) != REIN_OK)
        return rc;
    p = out->ptr + out->len;
    if (event) {
        memcpy(p, "event: ", 7);
        memcpy(p + 7, event, elen);
        memcpy(p + 7 + elen, "\ndata: ", 7);
    } else {
        memcpy(p, "data: ", 6);
    }
    if (len)
        memcpy(p + head, data, len);
    memcpy(p + head + len, "\n\n", 2);
    out->len += head + len + 2;
    out->ptr[out->len] = '\0';
    return REIN_OK;
}

rein_err rein_sse_send_framed(rein_sse *sse, struct rein_buf *events)
{
    rein_request *req = sse->req;
    rein_err rc = REIN_OK;

    if (!events->len)
        return REIN_OK;
    pthread_mutex_lock(&req->mu);
    if (req->closed || req->gone || req->sse_ended) {
        pthread_mutex_unlock(&req->mu);
        return REIN_ECANCELED;
    }
    if (req->sse_buf.len == 0 && events->len < SSE_MAX_BUF) {
        /* The stream holds nothing (the usual case: its network thread sent the last
         * batch): the batch's memory becomes the stream's, and the stream's goes back. */
        struct rein_buf was = req->sse_buf;
        size_t max = events->max;

        req->sse_buf = *events;
        req->sse_buf.max = was.max;
        *events = was;
        events->max = max;
    } else {
        rc = rein_buf_add(&req->sse_buf, events->ptr, events->len);
    }
    if (!rc)
        pushed_locked(req);
    pthread_mutex_unlock(&req->mu);
    rein_buf_reset(events);
    return rc;
}

rein_err rein_sse_send(rein_sse *sse, const char *event, const char *data, size_t len)
{
    char head[128];
    int n;

    if (!event || strpbrk(event, "\r\n") || memchr(data, '\n', len) || memchr(data, '\r', len))
        return REIN_EINVAL;
    n = snprintf(head, sizeof(head), "event: %s\ndata: ", event);
    if (n < 0 || (size_t)n >= sizeof(head))
        return REIN_EINVAL;
    return sse_push(sse->req, head, (size_t)n, data, len, "\n\n", 2);
}

rein_err rein_sse_send_event(rein_sse *sse, const char *id, const char *event, const char *data,
                             size_t len, int64_t retry_ms)
{
    char head[512];
    int n = 0, k;

    if ((id && strpbrk(id, "\r\n")) || (event && strpbrk(event, "\r\n")) ||
        (len && (memchr(data, '\n', len) || memchr(data, '\r', len))))
        return REIN_EINVAL;
    /* The events of a gateway stream (data, and an event name on the Anthropic wire) are
     * put together without snprintf, which was 3% of a streamed chunk's instructions. */
    if (!id && retry_ms <= 0) {
        size_t elen = event ? strlen(event) : 0;
        if (!event)
            return sse_push(sse->req, "data: ", 6, len ? data : "", len, "\n\n", 2);
        if (14 + elen >= sizeof(head)) /* as the formatted head below */
            return REIN_EINVAL;
        memcpy(head, "event: ", 7);
        memcpy(head + 7, event, elen);
        memcpy(head + 7 + elen, "\ndata: ", 7);
        return sse_push(sse->req, head, 14 + elen, len ? data : "", len, "\n\n", 2);
    }
    if (id) {
        k = snprintf(head + n, sizeof(head) - (size_t)n, "id: %s\n", id);
        if (k < 0 || (size_t)k >= sizeof(head) - (size_t)n)
            return REIN_EINVAL;
        n += k;
    }
    if (retry_ms > 0) {
        k = snprintf(head + n, sizeof(head) - (size_t)n, "retry: %lld\n", (long long)retry_ms);
        if (k < 0 || (size_t)k >= sizeof(head) - (size_t)n)
            return REIN_EINVAL;
        n += k;
    }
    if (event) {
        k = snprintf(head + n, sizeof(head) - (size_t)n, "event: %s\n", event);
        if (k < 0 || (size_t)k >= sizeof(head) - (size_t)n)
            return REIN_EINVAL;
        n += k;
    }
    k = snprintf(head + n, sizeof(head) - (size_t)n, "data: ");
    if (k < 0 || (size_t)k >= sizeof(head) - (size_t)n)
        return REIN_EINVAL;
    n += k;
    return sse_push(sse->req, head, (size_t)n, len ? data : "", len, "\n\n", 2);
}

rein_err rein_sse_send_json(rein_sse *sse, const char *event, const json_t *data)
{
    char *text = rein_json_dumps(data);
    rein_err rc;

    if (!text)
        return REIN_ENOMEM;
    rc = rein_sse_send(sse, event, text, strlen(text));
    rein_free(text);
    return rc;
}

rein_err rein_sse_comment(rein_sse *sse, const char *text)
{
    if (strpbrk(text, "\r\n"))
        return REIN_EINVAL;
    return sse_push(sse->req, ": ", 2, text, strlen(text), "\n\n", 2);
}

static void sse_end(rein_request *req);

rein_err rein_sse_detach(rein_sse *sse, bool idle)
{
    rein_request *req = sse->req;

    pthread_mutex_lock(&req->mu);
    if (req->sse_detached || req->sse_ended) {
        pthread_mutex_unlock(&req->mu);
        return REIN_ESTATE;
    }
    req->sse_detached = true;
    req->sse_idle = idle;
    pthread_mutex_unlock(&req->mu);
    /* The detached stream holds the request until rein_sse_end(). */
    atomic_fetch_add(&req->refs, 1);
    return REIN_OK;
}

void rein_sse_end(rein_sse *sse)
{
    rein_request *req;

    if (!sse)
        return;
    req = sse->req;
    sse_end(req);
    request_unref(req);
}

rein_cancel *rein_sse_cancel(rein_sse *sse)
{
    return sse->req->cancel;
}

static void sse_end(rein_request *req)
{
    pthread_mutex_lock(&req->mu);
    req->sse_ended = true;
    req->sse_unflushed_ms = 0; /* the end sends it */
    if (!req->sse_given && !req->closed) {
        if (sse_give_locked(req) == REIN_OK)
            return;
        /* No memory for any answer: the connection ends (queue_handed). */
        pthread_mutex_lock(&req->mu);
        req->sse_failed = true;
    }
    if (req->suspended && !req->closed) {
        req->suspended = false;
        MHD_resume_connection(req->conn);
    }
    pthread_mutex_unlock(&req->mu);
}

#define DUE_MAX 64

/* Up to DUE_MAX live requests for which is_due(srv, r, now) holds (called with r->mu held),
 * each with a reference for the caller; returns how many. */
static int live_due(rein_server *srv, bool (*is_due)(rein_server *, const rein_request *, int64_t),
                    rein_request **due)
{
    int n = 0;
    int64_t now = rein_now_ms();

    pthread_mutex_lock(&srv->mu);
    for (rein_request *r = srv->live; r && n < DUE_MAX; r = r->live_next) {
        pthread_mutex_lock(&r->mu);
        if (is_due(srv, r, now)) {
            atomic_fetch_add(&r->refs, 1);
            due[n++] = r;
        }
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_unlock(&srv->mu);
    return n;
}

static bool heartbeat_due(rein_server *srv, const rein_request *r, int64_t now)
{
    return r->is_sse && !r->sse_ended && !r->closed && now - r->sse_last_ms >= srv->heartbeat_ms;
}

/* Writes heartbeat comments into streams idle for heartbeat_ms (at most 64 per pass). */
static void send_heartbeats(rein_server *srv)
{
    rein_request *due[DUE_MAX];
    int n = live_due(srv, heartbeat_due, due);

    for (int i = 0; i < n; i++) {
        if (rein_sse_comment(&due[i]->sse, "ping") != REIN_OK ||
            rein_sse_flush(&due[i]->sse) != REIN_OK)
            rein_log(REIN_LOG_DEBUG, WHERE, "%s: heartbeat not sent", due[i]->id);
        request_unref(due[i]);
    }
}

static bool flush_due(rein_server *srv, const rein_request *r, int64_t now)
{
    if (!r->sse_held || !r->sse_unflushed_ms)
        return false;
    /* the next pass looks again: this one is not due yet, or its flush may not send it */
    atomic_store_explicit(&srv->held_waiting, true, memory_order_relaxed);
    return now - r->sse_unflushed_ms >= TICK_MS / 2;
}

/*
 * Sends what held streams were given half a tick or more ago and still hold (at most 64 per
 * pass): a handler that holds its writes and then waits somewhere without flushing delays its
 * client by a tick and a half at most.
 */
static void flush_held(rein_server *srv)
{
    rein_request *due[DUE_MAX];
    int n;

    /* No held stream was written unflushed since the last pass left none waiting: nothing to
     * look for among the live requests (a walk of all of them each tick, under each one's
     * lock). A stream written meanwhile sets the flag after its data, under its lock, so the
     * walk below sees the data or the next pass sees the flag. */
    if (!atomic_exchange_explicit(&srv->held_waiting, false, memory_order_acq_rel))
        return;
    n = live_due(srv, flush_due, due);

    for (int i = 0; i < n; i++) {
        if (rein_sse_flush(&due[i]->sse) != REIN_OK)
            rein_log(REIN_LOG_DEBUG, WHERE, "%s: a held stream could not be sent", due[i]->id);
        request_unref(due[i]);
    }
}

/* Shuts down the sockets of connections past their deadline (headers or body too slow);
 * MHD then sees the connection end and closes it. */
static void cut_late_connections(rein_server *srv)
{
    int64_t now = rein_now_ms();

    pthread_mutex_lock(&srv->mu);
    for (struct conn_track *t = srv->conns; t; t = t->next) {
        int64_t due = atomic_load_explicit(&t->due, memory_order_relaxed);
        if (t->cut || !due || now < due / 4)
            continue;
        t->cut = true;
        rein_log(REIN_LOG_INFO, WHERE, "closing a connection: its %s did not arrive in time",
                 phase_names[due % 4]);
        (void)shutdown(t->fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&srv->mu);
}

/*
 * Hang-ups of suspended connections (a handler is running or a stream is waiting, so MHD is
 * not reading them). A connection joins the ticker's epoll set when a request of it first goes
 * to a worker (watch_connection) and leaves it with that request's answer (unwatch_connection);
 * if it comes back with another, it joins again and stays until it closes. The ticker waits on
 * the set, so its work follows the hang-ups, not the suspended sockets (a poll of every one of
 * them each tick was about 7% of rein's CPU at 1,000 conversations at once). Leaving with the
 * first answer keeps the close of a client of one request from waking the ticker: that was one
 * wake for every second turn (decision 0081). The set reports a connection once
 * (EPOLLONESHOT): a hang-up that comes while MHD itself handles the connection waits in
 * hup_pending until a request of that connection is suspended (then the client has left it)
 * or the connection closes; one that came while the connection was out of the set is reported
 * when it joins again (the half-closed state is there at the add).
 */
#define HUP_BATCH 64

/* The connection's network thread, before a request of it is first suspended. */
static void watch_connection(rein_server *srv, struct conn_track *t)
{
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLONESHOT};

    if (!t || t->watched || srv->hup_ep < 0)
        return;
    ev.data.ptr = t;
    t->stays_watched = t->was_watched;
    /* unwatched (no memory), the connection's hang-up is seen at the next write instead */
    t->watched = epoll_ctl(srv->hup_ep, EPOLL_CTL_ADD, t->fd, &ev) == 0;
    t->was_watched |= t->watched;
    if (t->watched)
        atomic_fetch_add_explicit(&srv->hup_watched, 1, memory_order_relaxed);
}

/* The worker answering a suspended request, before it resumes the connection: the answer is
 * written by MHD, which sees a hang-up itself from here on. A connection that came back for
 * another request stays in the set: a kept-alive client pays no system call per request. */
static void unwatch_connection(rein_server *srv, struct conn_track *t)
{
    if (!t || !t->watched || t->stays_watched)
        return;
    (void)epoll_ctl(srv->hup_ep, EPOLL_CTL_DEL, t->fd, NULL);
    t->watched = false;
    atomic_fetch_sub_explicit(&srv->hup_watched, 1, memory_order_relaxed);
}

static void free_tracks(struct conn_track *t)
{
    while (t) {
        struct conn_track *next = t->retired_next;
        rein_free(t);
        t = next;
    }
}

/* The ticker's hang-up set, holding the stop signal's descriptor (data NULL); -1 on failure. */
static int watch_set_new(rein_cancel *stop)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    int ep = epoll_create1(EPOLL_CLOEXEC);

    if (ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, rein_cancel_fd(stop), &ev) != 0) {
        close(ep);
        ep = -1;
    }
    return ep;
}

/*
 * Waits up to wait_ms for hang-ups and triggers the cancellation handle of each suspended
 * request whose client left (HUP_BATCH per pass; the rest wait for the next). Returns false
 * when the server stops.
 */
static bool watch_hangups(rein_server *srv, int wait_ms)
{
    struct epoll_event ev[HUP_BATCH];
    rein_request *left[HUP_BATCH];
    struct conn_track *retired;
    int n = epoll_wait(srv->hup_ep, ev, HUP_BATCH, wait_ms), nleft = 0;

    pthread_mutex_lock(&srv->mu);
    for (int i = 0; i < n; i++) {
        struct conn_track *t = ev[i].data.ptr; /* NULL: the stop signal */
        if (t)
            atomic_fetch_add_explicit(&srv->hup_events, 1, memory_order_relaxed);
        /* a track closed since the wait is still here (retired, freed below) */
        if (t && !t->pending && !t->retired) {
            t->pending = true;
            t->pending_next = srv->hup_pending;
            srv->hup_pending = t;
        }
    }
    for (struct conn_track **p = &srv->hup_pending; *p;) {
        struct conn_track *t = *p;
        rein_request *r = t->req;
        bool done = t->retired;

        if (!done && r && nleft < HUP_BATCH) {
            /* Still suspended, so the socket is still this request's (MHD closes a
             * connection only after it is resumed). */
            pthread_mutex_lock(&r->mu);
            if (r->suspended && !r->closed && !r->gone) {
                r->gone = true;
                atomic_fetch_add(&r->refs, 1);
                left[nleft++] = r;
                done = true;
            }
            pthread_mutex_unlock(&r->mu);
        }
        if (done) {
            *p = t->pending_next;
            t->pending = false;
        } else {
            p = &t->pending_next;
        }
    }
    /* none of these is pending any more, and the set has no event left for them */
    retired = srv->retired;
    srv->retired = NULL;
    pthread_mutex_unlock(&srv->mu);
    free_tracks(retired);
    for (int i = 0; i < nleft; i++) {
        rein_cancel_trigger(left[i]->cancel, "client disconnected");
        request_unref(left[i]);
    }
    return !rein_cancel_is_set(srv->ticker_stop);
}

/*
 * Once no request has arrived or run for IDLE_TRIM_MS after some did: the heap memory they
 * freed is handed back to the system. glibc keeps what a burst frees in its arenas (connection pools,
 * request bodies, turns' documents), so after 1,000 conversations at once the server held
 * 2.8x its idle resident memory, nearly all of it free (issue 25, goal 5). One malloc_trim
 * per quiet spell costs a few milliseconds on this thread, none on a request. The waiting
 * pool's threads stop 30 s into the quiet (decision 0082) and hand back their caches then, so
 * a quiet spell in which the pool shrank is trimmed once more.
 */
#define IDLE_TRIM_MS 1000

struct idle_trim {
    unsigned seen;    /* requests_seen at the last look */
    int64_t quiet_ms; /* since when it has not changed */
    bool trimmed;     /* this quiet spell is done */
    unsigned waiting; /* the waiting pool's threads at the last look */
};

static void trim_when_idle(rein_server *srv, struct idle_trim *t)
{
    unsigned seen = atomic_load_explicit(&srv->requests_seen, memory_order_relaxed);
    int64_t now = rein_now_ms();
    unsigned waiting = rein_pool_size(srv->wait_pool);
    int live;

    /* A burst's requests may all arrive at once and run for seconds: quiet is none running
     * (none that libmicrohttpd has not finished with). */
    pthread_mutex_lock(&srv->mu);
    live = srv->nlive;
    pthread_mutex_unlock(&srv->mu);
    if (seen != t->seen || live > 0) {
        t->seen = seen;
        t->quiet_ms = now;
        t->trimmed = false;
        t->waiting = waiting;
        return;
    }
    if (waiting < t->waiting)
        t->trimmed = false;
    t->waiting = waiting;
    if (t->trimmed || now - t->quiet_ms < IDLE_TRIM_MS)
        return;
    t->trimmed = true;
#ifdef __GLIBC__
    (void)malloc_trim(0);
#endif
    atomic_fetch_add_explicit(&srv->heap_trims, 1, memory_order_relaxed);
}

unsigned rein__server_heap_trims(rein_server *srv)
{
    return atomic_load_explicit(&srv->heap_trims, memory_order_relaxed);
}

unsigned rein__server_hangup_events(rein_server *srv)
{
    return atomic_load_explicit(&srv->hup_events, memory_order_relaxed);
}

unsigned rein__server_hangup_watched(rein_server *srv)
{
    return atomic_load_explicit(&srv->hup_watched, memory_order_relaxed);
}

/* The ticker: hang-ups at once, deadlines every tick, heartbeats when due, waiting requests
 * that stalled given threads, the heap trimmed when requests stop. */
static void *ticker_main(void *arg)
{
    rein_server *srv = arg;
    int64_t every = srv->heartbeat_ms / 2, next_beat = rein_now_ms();
    struct idle_trim trim = {.seen = 0, .quiet_ms = rein_now_ms(), .trimmed = true};

    if (every < 10)
        every = 10;
    if (every > 1000)
        every = 1000;
    while (watch_hangups(srv, (int)(every < TICK_MS ? every : TICK_MS))) {
        cut_late_connections(srv);
        flush_held(srv);
        (void)rein_pool_unstall(srv->wait_pool); /* requests queued while no new one came */
        trim_when_idle(srv, &trim);
        if (rein_now_ms() >= next_beat) {
            send_heartbeats(srv);
            next_beat = rein_now_ms() + every;
        }
    }
    return NULL;
}

/* ---- the request flow ------------------------------------------------------------------- */

/* True once an answer was handed over. */
static bool answered(rein_request *req)
{
    bool replied;

    pthread_mutex_lock(&req->mu);
    replied = req->replied;
    pthread_mutex_unlock(&req->mu);
    return replied;
}

static void job_main(void *arg)
{
    rein_request *req = arg;
    rein_server *srv = req->srv;
    struct rein_trace_scope scope;

    /* What the handler starts (a turn's spans, provider requests) continues the caller's
     * trace; a worker thread carries no context over from its previous request. */
    rein_trace_scope_enter(&scope, req->tctx);
    if (req->defer_fn)
        req->defer_fn(req, req->defer_data);
    else
        req->route->fn(req, req->route->userdata);
    /* The 500 is written only for a handler that gave no answer: writing it for every
     * request and dropping it as already answered cost a gateway request 2% of its
     * instructions (bench/gateway.sh). */
    if (req->is_sse && !req->sse_detached)
        sse_end(req);
    else if (!answered(req) && rein_request_reply_error(req, 500, "internal",
                                                        "the handler gave no answer") == REIN_OK)
        rein_log(REIN_LOG_ERROR, WHERE, "%s %s: handler gave no answer", req->method,
                 req->route->pattern);
    rein_trace_scope_leave(&scope);
    pthread_mutex_lock(&srv->mu);
    srv->jobs--;
    pthread_cond_broadcast(&srv->cv);
    pthread_mutex_unlock(&srv->mu);
    request_unref(req);
}

/* HEAD is GET without the body (RFC 9110 9.3.2): a GET route answers it and MHD sends only
 * the headers. */
static bool method_matches(const char *route_method, const char *method)
{
    return strcmp(route_method, method) == 0 ||
           (strcmp(method, "HEAD") == 0 && strcmp(route_method, "GET") == 0);
}

/* Answers OPTIONS on a known path: 204 with Allow (no CORS: rein's page is same-origin). */
static enum MHD_Result answer_options(rein_request *req, const char *allow)
{
    struct MHD_Response *resp = make_response(req, NULL, "", 0);

    if (resp)
        MHD_add_response_header(resp, "Allow", allow);
    return queue(req, 204, resp);
}

/* Appends ", " (unless allow is empty) and method to allow (size bytes), as far as it fits. */
static void allow_add(char *allow, size_t size, const char *method)
{
    size_t len = strlen(allow), n = strlen(method);

    if (len && len + 2 < size) {
        memcpy(allow + len, ", ", 2);
        len += 2;
    }
    if (len + n < size) {
        memcpy(allow + len, method, n);
        len += n;
    }
    allow[len] = '\0';
}

/* How many '/' s holds: a pattern matches only paths with as many segments. */
static size_t slash_count(const char *s)
{
    size_t n = 0;

    for (s = strchr(s, '/'); s; s = strchr(s + 1, '/'))
        n++;
    return n;
}

/* True when the route's first segment is a literal that the path's first segment (seg, len
 * bytes, without '%': decoding leaves it as it is) is not: the route cannot match. */
static bool first_segment_differs(const struct route *r, const char *seg, size_t len)
{
    if (r->first_len == SIZE_MAX)
        return false;
    return r->first_len != len || memcmp(r->pattern + 1, seg, len) != 0;
}

/* A segment's first 8 bytes as one word (zero-padded), compared before its bytes. */
static uint64_t segment_head(const char *seg, size_t len)
{
    uint64_t v = 0;

    memcpy(&v, seg, len < sizeof(v) ? len : sizeof(v));
    return v;
}

/* Matches the path; fills req->route or *allow with the methods the path supports. */
static bool route_lookup(rein_request *req, char *allow, size_t allow_size, bool *path_public)
{
    rein_server *srv = req->srv;
    bool path_known = false;
    /* Every request tries every route: most are told apart by their first segment alone. */
    const char *seg = req->path[0] == '/' ? req->path + 1 : NULL;
    size_t seg_len = seg ? strcspn(seg, "/") : 0;
    size_t slashes = slash_count(req->path);

    if (seg && memchr(seg, '%', seg_len))
        seg = NULL;
    allow[0] = '\0';
    *path_public = false;
    uint64_t head = seg ? segment_head(seg, seg_len) : 0;
    for (size_t i = 0; i < srv->nroutes; i++) {
        const struct route_key *k = &srv->rkeys[i];
        const struct route *r = k->r;
        char names[REIN_HTTP_MAX_PARAMS][32];
        char *values[REIN_HTTP_MAX_PARAMS];
        int n = 0;
        if (k->slashes != slashes || (seg && k->first_len != UINT32_MAX &&
                                      (k->first_len != seg_len || k->head != head ||
                                       first_segment_differs(r, seg, seg_len))))
            continue;
        if (!rein__http_match(r->pattern, req->path, req->arena, names, values, &n))
            continue;
        path_known = true;
        if (r->flags & REIN_ROUTE_PUBLIC)
            *path_public = true;
        if (method_matches(r->method, req->method) && !req->route) {
            req->route = r;
            req->nparams = n;
            memcpy(req->names, names, sizeof(names));
            memcpy(req->values, values, sizeof(values));
        } else if (!strstr(allow, r->method)) {
            allow_add(allow, allow_size, r->method);
        }
    }
    /* The Allow list is read only when no route took the method (405 and OPTIONS). */
    if (path_known && !req->route && strstr(allow, "GET") && !strstr(allow, "HEAD"))
        allow_add(allow, allow_size, "HEAD");
    if (path_known && !req->route && !strstr(allow, "OPTIONS"))
        allow_add(allow, allow_size, "OPTIONS");
    return path_known;
}

/*
 * The request's one Content-Length (NULL when none). Two that differ, or one next to
 * Transfer-Encoding, make the body's end ambiguous (RFC 9112 6.3): MHD reads one framing and a
 * proxy in front may read the other, so such a request is refused, not guessed at.
 */
static bool framing_ok(const rein_request *req, const char **cl)
{
    bool te = false;

    *cl = NULL;
    for (const struct kv *h = req->headers_in; h; h = h->next) {
        if (KEY_IS(h, "Transfer-Encoding"))
            te = true;
        if (!KEY_IS(h, "Content-Length"))
            continue;
        if (*cl && strcmp(*cl, h->value) != 0)
            return false;
        *cl = h->value;
    }
    return !(te && *cl);
}

/* Two Authorization headers would let a proxy check one while this server read the other
 * (MHD's lookup returns the first, the header list the last). */
static bool one_authorization(const rein_request *req)
{
    int n = 0, k = 0, g = 0;

    for (const struct kv *h = req->headers_in; h; h = h->next) {
        n += KEY_IS(h, "Authorization");
        k += KEY_IS(h, "x-api-key");
        g += KEY_IS(h, "x-goog-api-key");
    }
    return n <= 1 && k <= 1 && g <= 1;
}

/* Host headers: an HTTP/1.1 request has exactly one (RFC 9112 3.2). Two would let the Host
 * checks (/mcp's DNS-rebinding guard) read one while a proxy routed on the other. */
static bool host_ok(const rein_request *req)
{
    int n = 0;

    for (const struct kv *h = req->headers_in; h; h = h->next)
        n += KEY_IS(h, "Host");
    return n == 1 || (n == 0 && !req->http11);
}

/* True when Transfer-Encoding is absent or exactly "chunked", the one coding libmicrohttpd
 * decodes: with any other (gzip, identity, "gzip, chunked") it cannot find the body's end and
 * the connection hung until the idle timeout. */
static bool coding_ok(const rein_request *req)
{
    const char *te = NULL;
    size_t len;

    for (const struct kv *h = req->headers_in; h; h = h->next) {
        if (!KEY_IS(h, "Transfer-Encoding"))
            continue;
        if (te)
            return false; /* two headers: a list, and chunked would not be alone */
        te = h->value;
    }
    if (!te)
        return true;
    /* As libmicrohttpd compares it: case-insensitive, trailing spaces not trimmed. */
    te += strspn(te, " \t");
    len = strlen(te);
    return len == 7 && strncasecmp(te, "chunked", 7) == 0;
}

static enum MHD_Result first_call(rein_request *req)
{
    rein_server *srv = req->srv;
    char allow[128];
    bool known, path_public;
    const char *cl;
    long declared;
    const char *traceparent = rein_request_header(req, "traceparent");

    /* W3C Trace Context: a caller's valid traceparent is continued (its trace id is the
     * request's, its span the parent of what the handler starts); anything else starts a
     * trace of the request's own. The context is kept only for a request that brings one:
     * it was 40% of the request record, which now fits the allocator's per-thread cache. */
    if (traceparent) {
        struct rein_trace_context *t = rein_arena_alloc(req->arena, sizeof(*t));
        if (!t)
            return MHD_NO;
        if (rein_trace_context_parse(traceparent, rein_request_header(req, "tracestate"), t,
                                     NULL) == REIN_OK)
            req->tctx = t;
    }
    if (req->tctx)
        memcpy(req->trace_id, req->tctx->trace_id, sizeof(req->trace_id));
    else
        rein_trace_id_new(req->trace_id);
    if (atomic_load(&srv->stopping)) {
        req->bad_framing = true; /* close: the next request would get the same answer */
        return guard(req, 503, "shutting_down", "the server is shutting down");
    }
    if (!host_ok(req)) {
        req->bad_framing = true;
        return guard(req, 400, "bad_request", "an HTTP/1.1 request needs exactly one Host header");
    }
    if (!one_authorization(req))
        return guard(req, 400, "bad_request",
                     "send at most one each of the Authorization, x-api-key and x-goog-api-key "
                     "headers (two could be read differently by a proxy and by this server)");
    known = route_lookup(req, allow, sizeof(allow), &path_public);
    /* x-api-key is how Anthropic's clients send their key (the gateway's /v1/messages),
     * x-goog-api-key or ?key= how Gemini's do (its /v1beta/models/…); the query is never
     * logged (the access log has the path without it). */
    if (srv->nkeys > 0 && !path_public &&
        !rein__http_bearer_ok(rein_request_header(req, "Authorization"), srv->keys, srv->nkeys) &&
        !rein__http_key_ok(rein_request_header(req, "x-api-key"), srv->keys, srv->nkeys) &&
        !rein__http_key_ok(rein_request_header(req, "x-goog-api-key"), srv->keys, srv->nkeys) &&
        !rein__http_key_ok(rein_request_query(req, "key"), srv->keys, srv->nkeys))
        return guard(req, 401, "unauthorized",
                     "this server needs an API key: send Authorization: Bearer <key> (or "
                     "x-api-key: <key>, or x-goog-api-key: <key>)");
    if (!known)
        return guard(req, 404, "not_found", "no route for %.200s", req->path);
    if (!req->route && strcmp(req->method, "OPTIONS") == 0)
        return answer_options(req, allow);
    if (!req->route) {
        rein_err rc = rein_request_set_header(req, "Allow", allow);
        if (rc != REIN_OK)
            return MHD_NO;
        return guard(req, 405, "method_not_allowed", "%s is not allowed here; allowed: %s",
                     req->method, allow);
    }
    for (int i = 0; i < req->nparams; i++) {
        const char *v = req->values[i];
        if (!v || (!(req->route->flags & REIN_ROUTE_RAW_PARAMS) && !rein_store_id_is_valid(v)))
            return guard(req, 400, "invalid_id",
                         "%s is not a valid id: use 1-64 characters of A-Z a-z 0-9 _ . - "
                         "(not starting with '.', no \"..\")",
                         req->names[i]);
    }
    if ((req->route->flags & REIN_ROUTE_JSON_BODY) &&
        !rein__http_is_json_type(rein_request_header(req, "Content-Type")))
        return guard(req, 415, "unsupported_media_type",
                     "send the body as Content-Type: application/json");
    if (!coding_ok(req)) {
        req->bad_framing = true;
        return guard(req, 501, "not_implemented",
                     "Transfer-Encoding %.60s is not supported: send the body with "
                     "Content-Length or Transfer-Encoding: chunked",
                     rein_request_header(req, "Transfer-Encoding"));
    }
    if (!framing_ok(req, &cl)) {
        req->bad_framing = true;
        return guard(req, 400, "bad_request",
                     "conflicting Content-Length (or Content-Length with Transfer-Encoding): "
                     "send one way of framing the body");
    }
    /* A length that does not parse (or past 999,999,999) is as refused as one past the limit. */
    if (cl &&
        (!rein__http_parse_uint(cl, 0, 999999999, &declared) || (size_t)declared > srv->body_limit))
        return guard(req, 413, "payload_too_large", "the body is larger than %zu bytes",
                     srv->body_limit);
    if (cl && declared > 0 && atomic_load(&srv->body_bytes) + (size_t)declared > srv->body_memory) {
        req->bad_framing = true;
        return guard(req, 503, "overloaded",
                     "the server holds too many unfinished request bodies; try again shortly");
    }
    req->stage = ST_BODY;
    /* From the request's start, read when its head had arrived, as now. */
    track_deadline_at(req->track, req->start_ns, srv->body_timeout_ms, PH_BODY);
    return MHD_YES;
}

/* Drops what the request's body holds and uncounts it. */
static void drop_body(rein_request *req)
{
    if (req->counted)
        atomic_fetch_sub(&req->srv->body_bytes, req->counted);
    req->counted = 0;
    rein_buf_release(&req->body);
}

static enum MHD_Result take_body(rein_request *req, const char *data, size_t len)
{
    rein_server *srv = req->srv;

    if (!req->too_big && !req->shed) {
        /* All bodies being received share one memory budget: past it, this one is shed. */
        if (atomic_fetch_add(&srv->body_bytes, len) + len > srv->body_memory) {
            atomic_fetch_sub(&srv->body_bytes, len);
            req->shed = true;
            drop_body(req);
        } else {
            req->counted += len;
            if (rein_buf_add(&req->body, data, len) != REIN_OK) {
                /* Past the limit (or out of memory): keep nothing more, 413 at the end. */
                req->too_big = true;
                drop_body(req);
            }
        }
    }
    if (req->too_big || req->shed) {
        req->discarded += len;
        /* A client that keeps streaming long after the limit is cut off. */
        if (req->discarded > 4 * req->srv->body_limit)
            return MHD_NO;
    }
    return MHD_YES;
}

static enum MHD_Result dispatch(rein_request *req)
{
    rein_server *srv = req->srv;
    rein_err rc;

    track_deadline(req->track, 0, PH_NONE); /* the handler's time is not the client's */
    if (req->route->flags & REIN_ROUTE_INLINE) {
        req->in_inline = true;
        req->route->fn(req, req->route->userdata);
        req->in_inline = false;
    }
    if ((req->route->flags & REIN_ROUTE_INLINE) && !req->defer_fn) {
        if (!req->replied &&
            rein_request_reply_error(req, 500, "internal", "the handler gave no answer") != REIN_OK)
            return MHD_NO;
        return queue_handed(req);
    }
    pthread_mutex_lock(&srv->mu);
    srv->jobs++;
    pthread_mutex_unlock(&srv->mu);
    watch_connection(srv, req->track);
    atomic_fetch_add(&req->refs, 1);
    pthread_mutex_lock(&req->mu);
    req->stage = ST_DISPATCHED;
    rc = rein_pool_submit((req->route->flags & REIN_ROUTE_WAITS) ? srv->wait_pool : srv->pool,
                          job_main, req);
    if (rc == REIN_OK) {
        req->suspended = true;
        MHD_suspend_connection(req->conn);
    }
    pthread_mutex_unlock(&req->mu);
    if (rc != REIN_OK) {
        pthread_mutex_lock(&srv->mu);
        srv->jobs--;
        pthread_mutex_unlock(&srv->mu);
        request_unref(req);
        return guard(req, 503, "overloaded", "no worker can take the request");
    }
    return MHD_YES;
}

static enum MHD_Result body_done(rein_request *req)
{
    if (req->shed) {
        req->bad_framing = true;
        return guard(req, 503, "overloaded",
                     "the server holds too many unfinished request bodies; try again shortly");
    }
    if (req->too_big)
        return guard(req, 413, "payload_too_large", "the body is larger than %zu bytes",
                     req->srv->body_limit);
    if (req->route->flags & REIN_ROUTE_JSON_BODY) {
        rein_error perr;
        if (req->body.len == 0)
            return guard(req, 400, "invalid_json", "the body is empty; send a JSON object");
        /* A key sent twice would mean one thing to this server and another to the next
         * parser that reads the same bytes (a proxy, a log, a tool): refuse it. */
        req->json = rein_json_parse(req->body.ptr, req->body.len, JSON_REJECT_DUPLICATES, &perr);
        if (!req->json)
            return guard(req, 400, "invalid_json",
                         "the body is not valid JSON: line %d, column %d: %s", perr.line,
                         perr.column, perr.msg);
    }
    return dispatch(req);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    rein_request *req = *con_cls;

    if (!req) {
        rein__mhd_request_left(conn);
        req = request_new(cls, conn, url, method);
        if (!req)
            return MHD_NO;
        *con_cls = req;
        req->http11 = version && strcmp(version, MHD_HTTP_VERSION_1_1) == 0;
        return first_call(req);
    }
    switch (req->stage) {
    case ST_BODY:
        if (*upload_size) {
            enum MHD_Result r = take_body(req, upload, *upload_size);
            *upload_size = 0;
            return r;
        }
        return body_done(req);
    case ST_DISPATCHED:
        return queue_handed(req);
    default:
        *upload_size = 0;
        return MHD_YES;
    }
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    rein_server *srv = cls;
    rein_request *req = *con_cls;
    struct MHD_Response *unsent;
    double secs;
    bool orphan;
    int64_t now_ns;

    rein__mhd_request_left(conn);
    if (!req)
        return;
    *con_cls = NULL;
    pthread_mutex_lock(&srv->mu);
    if (req->live_prev)
        req->live_prev->live_next = req->live_next;
    else
        srv->live = req->live_next;
    if (req->live_next)
        req->live_next->live_prev = req->live_prev;
    /* MHD reports a request's end before its connection's (on_connection CLOSED) */
    if (req->track && req->track->req == req)
        req->track->req = NULL;
    srv->nlive--;
    pthread_cond_broadcast(&srv->cv);
    pthread_mutex_unlock(&srv->mu);

    pthread_mutex_lock(&req->mu);
    req->closed = true;
    /* A stream MHD has finished while its handler still writes (a HEAD on a streaming GET:
     * the headers are the whole answer) has no reader any more either. */
    orphan = req->is_sse && !req->sse_ended;
    /* An answer handed over but never queued (the client left before the connection was
     * resumed) will never be sent: an SSE answer holds the request, so it must go now. */
    unsent = req->response;
    req->response = NULL;
    pthread_mutex_unlock(&req->mu);
    /* The body is no longer a live request's: a detached stream may hold the request past the
     * server's own life, when its last reference must not reach for the server. */
    if (req->counted) {
        atomic_fetch_sub(&srv->body_bytes, req->counted);
        req->counted = 0;
    }
    if (unsent)
        MHD_destroy_response(unsent);
    /* The next request on this connection has the header timeout from now. */
    now_ns = rein_now_ns();
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        track_deadline_at(req->track, now_ns, srv->header_timeout_ms, PH_HEADERS);
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK || orphan)
        rein_cancel_trigger(req->cancel, toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN
                                             ? "server shutting down"
                                             : "client disconnected");
    secs = (double)(now_ns - req->start_ns) / 1e9;
    rein_log(REIN_LOG_INFO, WHERE, "%s %s %s %d %.1fms%s", req->id, req->method,
             req->route ? req->route->pattern : req->path, req->final_status, secs * 1000,
             toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection ended early)");
    rein_metrics_http_request(srv->metrics, req->method,
                              req->route ? req->route->pattern : "unmatched", req->final_status,
                              secs);
    request_unref(req);
}

/* Tracks each connection from accept to close, for the deadlines and the hang-up watch. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    rein_server *srv = cls;
    struct conn_track *t = *socket_context;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        t = rein_calloc(1, sizeof(*t));
        if (!t || !info) {
            rein_free(t); /* untracked: MHD's idle timeout still applies */
            return;
        }
        t->fd = info->connect_fd;
        info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (info && info->client_addr) {
            socklen_t len = info->client_addr->sa_family == AF_INET6
                                ? (socklen_t)sizeof(struct sockaddr_in6)
                                : (socklen_t)sizeof(struct sockaddr_in);
            memcpy(&t->addr, info->client_addr, len);
        }
        atomic_init(&t->due, (rein_now_ms() + srv->header_timeout_ms) * 4 + PH_HEADERS);
        pthread_mutex_lock(&srv->mu);
        t->next = srv->conns;
        if (srv->conns)
            srv->conns->prev = t;
        srv->conns = t;
        pthread_mutex_unlock(&srv->mu);
        *socket_context = t;
        return;
    }
    if (!t)
        return;
    pthread_mutex_lock(&srv->mu);
    if (t->prev)
        t->prev->next = t->next;
    else
        srv->conns = t->next;
    if (t->next)
        t->next->prev = t->prev;
    if (t->was_watched) {
        /* MHD closes the socket after this call: the set forgets it here, and the ticker,
         * which may hold an event naming it, frees it (watch_hangups) */
        if (t->watched) {
            (void)epoll_ctl(srv->hup_ep, EPOLL_CTL_DEL, t->fd, NULL);
            atomic_fetch_sub_explicit(&srv->hup_watched, 1, memory_order_relaxed);
        }
        t->retired = true;
        t->retired_next = srv->retired;
        srv->retired = t;
        t = NULL;
    }
    pthread_mutex_unlock(&srv->mu);
    *socket_context = NULL;
    rein_free(t);
}

/* The acceptor's view of the connections MHD holds for one client address. */
static unsigned held_by(void *ctx, const struct sockaddr *addr)
{
    rein_server *srv = ctx;
    unsigned n = 0;

    pthread_mutex_lock(&srv->mu);
    for (const struct conn_track *t = srv->conns; t; t = t->next)
        n += rein__same_client((const struct sockaddr *)&t->addr, addr);
    pthread_mutex_unlock(&srv->mu);
    return n;
}

/* A socket with a good first head goes to MHD, which applies its own connection limits (and
 * closes the socket when one is reached). */
static void hand_to_mhd(void *ctx, int fd, const struct sockaddr *addr, socklen_t addrlen)
{
    rein_server *srv = ctx;

    if (MHD_add_connection(srv->daemon, fd, addr, addrlen) != MHD_YES)
        rein_log(REIN_LOG_DEBUG, WHERE, "libmicrohttpd refused a connection (a limit?)");
}

/* Every request's line, before its headers are parsed: see rein__mhd_logged(). */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)uri;
    rein__mhd_request_line(c);
    return NULL; /* the request's context: on_request() makes it */
}

/* libmicrohttpd must not decode the path: route matching decodes each segment once. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}

/* MHD hands over its own format strings; the attribute lets the compiler check the call. */
static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];

    (void)cls;
    if (rein__mhd_logged(fmt))
        return;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    rein_log(REIN_LOG_DEBUG, "server/mhd", "%s", msg);
}

/* ---- built-in routes -------------------------------------------------------------------- */

static void handle_healthz(rein_request *req, void *userdata)
{
    rein_server *srv = userdata;
    json_t *o = json_pack("{s:s, s:s}", "status", "ok", "version", rein_version());

    if (o && srv->health)
        srv->health(srv->health_data, o);
    rein_request_reply_json(req, 200, o);
}

void rein_server_set_health(rein_server *srv, rein_health_fn fn, void *userdata)
{
    srv->health = fn;
    srv->health_data = userdata;
}

static void handle_metrics(rein_request *req, void *userdata)
{
    rein_server *srv = userdata;
    struct rein_buf b;

    rein_buf_init(&b, 0);
    if (rein_metrics_render(srv->metrics, &b) != REIN_OK)
        rein_request_reply_error(req, 500, "internal", "could not render the metrics");
    else
        rein_request_reply(req, 200, "text/plain; version=0.0.4; charset=utf-8", b.ptr, b.len);
    rein_buf_release(&b);
}

/* ---- server lifetime -------------------------------------------------------------------- */

rein_server *rein_server_new(rein_error *err)
{
    rein_server *srv = rein_calloc(1, sizeof(*srv));

    if (!srv) {
        rein_error_set(err, REIN_ENOMEM, "server: out of memory");
        return NULL;
    }
    snprintf(srv->host, sizeof(srv->host), "127.0.0.1");
    srv->port = REIN_SERVER_DEFAULT_PORT;
    srv->threads = 8;
    srv->io_threads = 2;
    srv->wait_threads = REIN_SERVER_DEFAULT_WAIT_THREADS;
    srv->wait_idle_ms = WAIT_IDLE_MS;
    srv->body_limit = REIN_SERVER_DEFAULT_BODY_LIMIT;
    srv->idle_s = 30;
    srv->heartbeat_ms = 15000;
    srv->header_timeout_ms = REIN_SERVER_DEFAULT_HEADER_TIMEOUT_MS;
    srv->body_timeout_ms = REIN_SERVER_DEFAULT_BODY_TIMEOUT_MS;
    srv->max_client_conns = REIN_SERVER_DEFAULT_CLIENT_CONNECTIONS;
    srv->max_conns = REIN_SERVER_DEFAULT_CONNECTIONS;
    srv->body_memory = REIN_SERVER_DEFAULT_BODY_MEMORY;
    atomic_init(&srv->body_bytes, 0);
    atomic_init(&srv->requests_seen, 0);
    atomic_init(&srv->heap_trims, 0);
    atomic_init(&srv->hup_events, 0);
    atomic_init(&srv->hup_watched, 0);
    atomic_init(&srv->stopping, false);
    pthread_mutex_init(&srv->mu, NULL);
    srv->hup_ep = -1;
    pthread_cond_init(&srv->cv, NULL);
    if (rein_server_route(srv, "GET", "/healthz", REIN_ROUTE_PUBLIC | REIN_ROUTE_INLINE,
                          handle_healthz, srv, err) != REIN_OK ||
        rein_server_route(srv, "GET", "/metrics", REIN_ROUTE_INLINE, handle_metrics, srv, err) !=
            REIN_OK) {
        rein_server_free(srv);
        return NULL;
    }
    return srv;
}

static void free_keys(rein_server *srv)
{
    for (int i = 0; i < srv->nkeys; i++)
        rein_free(srv->keys[i]);
    rein_free(srv->keys);
    srv->keys = NULL;
    srv->nkeys = 0;
}

void rein_server_free(rein_server *srv)
{
    if (!srv)
        return;
    rein_server_stop(srv, 0);
    while (srv->routes) {
        struct route *r = srv->routes;
        srv->routes = r->next;
        rein_free(r->method);
        rein_free(r->pattern);
        rein_free(r);
    }
    rein_free(srv->rkeys);
    free_keys(srv);
    while (srv->kept) {
        struct kept *k = srv->kept;
        srv->kept = k->next;
        k->free_fn(k->ptr);
        rein_free(k);
    }
    pthread_mutex_destroy(&srv->mu);
    pthread_cond_destroy(&srv->cv);
    rein_free(srv);
}

rein_err rein_server_set_host(rein_server *srv, const char *host)
{
    if (!host || !*host || strlen(host) >= sizeof(srv->host))
        return REIN_EINVAL;
    snprintf(srv->host, sizeof(srv->host), "%s", host);
    return REIN_OK;
}

void rein_server_set_port(rein_server *srv, int port)
{
    srv->port = port;
}

void rein_server_set_threads(rein_server *srv, unsigned n)
{
    if (n)
        srv->threads = n;
}

void rein_server_set_wait_threads(rein_server *srv, unsigned n)
{
    if (n)
        srv->wait_threads = n;
}

void rein__server_set_wait_idle_ms(rein_server *srv, unsigned ms)
{
    if (ms)
        srv->wait_idle_ms = ms;
}

void rein_server_set_io_threads(rein_server *srv, unsigned n)
{
    if (n)
        srv->io_threads = n;
}

void rein_server_set_body_limit(rein_server *srv, size_t bytes)
{
    if (bytes)
        srv->body_limit = bytes;
}

rein_err rein_server_set_api_keys(rein_server *srv, const char *keys)
{
    const char *p = keys;

    free_keys(srv);
    while (p && *p) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        const char *s = p;
        char **grown;
        while (s < end && (*s == ' ' || *s == '\t'))
            s++;
        while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (end > s) {
            grown = rein_realloc(srv->keys, (size_t)(srv->nkeys + 1) * sizeof(*grown));
            if (!grown)
                goto oom;
            srv->keys = grown;
            srv->keys[srv->nkeys] = rein_strndup(s, (size_t)(end - s));
            if (!srv->keys[srv->nkeys])
                goto oom;
            srv->nkeys++;
        }
        p = comma ? comma + 1 : NULL;
    }
    /* "," or " , " would turn auth off while the operator believes keys are set. */
    if (srv->nkeys == 0 && keys && keys[strspn(keys, " \t")] != '\0')
        return REIN_EINVAL;
    return REIN_OK;
oom:
    free_keys(srv);
    return REIN_ENOMEM;
}

void rein_server_set_idle_timeout(rein_server *srv, unsigned seconds)
{
    if (seconds)
        srv->idle_s = seconds;
}

void rein_server_set_heartbeat_ms(rein_server *srv, int64_t ms)
{
    if (ms > 0)
        srv->heartbeat_ms = ms;
}

void rein_server_set_metrics(rein_server *srv, rein_metrics *m)
{
    srv->metrics = m;
}

void rein_server_set_metrics_public(rein_server *srv, bool public_)
{
    for (struct route *r = srv->routes; r; r = r->next) {
        if (r->fn == handle_metrics)
            r->flags = public_ ? r->flags | REIN_ROUTE_PUBLIC : r->flags & ~REIN_ROUTE_PUBLIC;
    }
}

void rein_server_set_header_timeout_ms(rein_server *srv, int64_t ms)
{
    if (ms > 0)
        srv->header_timeout_ms = ms;
}

void rein_server_set_body_timeout_ms(rein_server *srv, int64_t ms)
{
    if (ms > 0)
        srv->body_timeout_ms = ms;
}

void rein_server_set_client_connections(rein_server *srv, unsigned n)
{
    if (n)
        srv->max_client_conns = n;
}

void rein_server_set_connections(rein_server *srv, unsigned n)
{
    if (n)
        srv->max_conns = n;
}

void rein_server_set_body_memory(rein_server *srv, size_t bytes)
{
    if (bytes)
        srv->body_memory = bytes;
}

rein_err rein__server_keep(rein_server *srv, void *ptr, void (*free_fn)(void *ptr), rein_error *err)
{
    struct kept *k = rein_calloc(1, sizeof(*k));

    if (!k)
        return rein_error_set(err, REIN_ENOMEM, "server: out of memory");
    k->ptr = ptr;
    k->free_fn = free_fn;
    k->next = srv->kept;
    srv->kept = k;
    return REIN_OK;
}

rein_err rein_server_route(rein_server *srv, const char *method, const char *pattern,
                           unsigned flags, rein_handler_fn fn, void *userdata, rein_error *err)
{
    struct route *r;
    struct route_key *keys;

    if (!method || !pattern || pattern[0] != '/' || !fn)
        return rein_error_set(err, REIN_EINVAL, "a route needs a method, a /pattern and a handler");
    for (r = srv->routes; r; r = r->next) {
        if (strcmp(r->method, method) == 0 && strcmp(r->pattern, pattern) == 0)
            return rein_error_set(err, REIN_EEXIST, "route %s %s is already defined", method,
                                  pattern);
    }
    r = rein_calloc(1, sizeof(*r));
    if (!r)
        return rein_error_set(err, REIN_ENOMEM, "server: out of memory");
    r->method = rein_strdup(method);
    r->pattern = rein_strdup(pattern);
    r->first_len = pattern[0] == '/' && pattern[1] != '{' ? strcspn(pattern + 1, "/") : SIZE_MAX;
    r->slashes = slash_count(pattern);
    if (!r->method || !r->pattern) {
        rein_free(r->method);
        rein_free(r->pattern);
        rein_free(r);
        return rein_error_set(err, REIN_ENOMEM, "server: out of memory");
    }
    keys = rein_realloc(srv->rkeys, (srv->nroutes + 1) * sizeof(*keys));
    if (!keys) {
        rein_free(r->method);
        rein_free(r->pattern);
        rein_free(r);
        return rein_error_set(err, REIN_ENOMEM, "server: out of memory");
    }
    srv->rkeys = keys;
    r->flags = flags;
    r->fn = fn;
    r->userdata = userdata;
    keys[srv->nroutes++] = (struct route_key){
        .slashes = r->slashes > UINT32_MAX ? UINT32_MAX : (uint32_t)r->slashes,
        .first_len = r->first_len >= UINT32_MAX ? UINT32_MAX : (uint32_t)r->first_len,
        .head = r->first_len == SIZE_MAX ? 0 : segment_head(pattern + 1, r->first_len),
        .r = r};
    if (srv->routes_tail)
        srv->routes_tail->next = r;
    else
        srv->routes = r;
    srv->routes_tail = r;
    return REIN_OK;
}

/* Stops and frees what start made, in the order that lets each part finish: no new
 * connection reaches MHD once the acceptor is gone. */
static void stop_parts(rein_server *srv)
{
    rein__acceptor_free(srv->acceptor);
    srv->acceptor = NULL;
    if (srv->daemon)
        MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
    rein_pool_free(srv->pool);
    srv->pool = NULL;
    rein_pool_free(srv->wait_pool);
    srv->wait_pool = NULL;
    rein_cancel_unref(srv->ticker_stop);
    srv->ticker_stop = NULL;
    /* the ticker has stopped: what closed since its last look is freed here */
    free_tracks(srv->retired);
    srv->retired = NULL;
    srv->hup_pending = NULL;
    if (srv->hup_ep >= 0)
        close(srv->hup_ep);
    srv->hup_ep = -1;
}

rein_err rein_server_start(rein_server *srv, rein_error *err)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    struct rein__acceptor_opts ao = {
        .header_timeout_ms = srv->header_timeout_ms,
        .idle_timeout_ms = (int64_t)srv->idle_s * 1000,
        .max_pending = srv->max_conns,
        .max_per_client = srv->max_client_conns,
        .held = held_by,
        .hand = hand_to_mhd,
        .ctx = srv,
    };

    /* A failure here is the server's, whatever err held before (a provider's "where"). */
    rein_error_clear(err);
    rein_error_where(err, WHERE);
    if (srv->started)
        return rein_error_set(err, REIN_ESTATE, "server already started");
    memset(&srv->addr, 0, sizeof(srv->addr));
    if (inet_pton(AF_INET, srv->host, &srv->addr.v4.sin_addr) == 1) {
        srv->addr.v4.sin_family = AF_INET;
        srv->addr.v4.sin_port = htons((uint16_t)srv->port);
    } else if (inet_pton(AF_INET6, srv->host, &srv->addr.v6.sin6_addr) == 1) {
        srv->addr.v6.sin6_family = AF_INET6;
        srv->addr.v6.sin6_port = htons((uint16_t)srv->port);
        flags |= MHD_USE_IPv6;
    } else {
        return rein_error_set(err, REIN_EINVAL, "host %s is not an IP address", srv->host);
    }
    if (srv->port < 0 || srv->port > 65535)
        return rein_error_set(err, REIN_EINVAL, "port %d is out of range", srv->port);
    ao.addr = (struct sockaddr *)&srv->addr;
    ao.addrlen = srv->addr.v4.sin_family == AF_INET ? (socklen_t)sizeof(srv->addr.v4)
                                                    : (socklen_t)sizeof(srv->addr.v6);
    if (rein__acceptor_listen(&ao, &srv->acceptor, NULL) != REIN_OK)
        return rein_error_set(err, REIN_EIO,
                              "cannot listen on %s:%d (is the port taken or the address not "
                              "local?)",
                              srv->host, srv->port);
    srv->bound_port = rein__acceptor_port(srv->acceptor);
    srv->pool = rein_pool_new(srv->threads, err);
    if (srv->pool)
        srv->wait_pool = rein_pool_new_growing(
            &(struct rein_pool_growth){.core = srv->threads < srv->wait_threads ? srv->threads
                                                                                : srv->wait_threads,
                                       .max = srv->wait_threads,
                                       .stall_ms = WAIT_STALL_MS,
                                       .idle_ms = srv->wait_idle_ms},
            err);
    srv->ticker_stop = srv->wait_pool ? rein_cancel_new() : NULL;
    if (srv->ticker_stop)
        srv->hup_ep = watch_set_new(srv->ticker_stop);
    if (srv->hup_ep >= 0)
        srv->daemon = MHD_start_daemon(
            flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
            MHD_OPTION_THREAD_POOL_SIZE, srv->io_threads, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
            srv, MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_URI_LOG_CALLBACK,
            on_request_line, NULL, MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
            MHD_OPTION_CONNECTION_TIMEOUT, srv->idle_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
            (size_t)16384, MHD_OPTION_PER_IP_CONNECTION_LIMIT, srv->max_client_conns,
            MHD_OPTION_CONNECTION_LIMIT, srv->max_conns, MHD_OPTION_END);
    if (!srv->daemon) {
        rein_err rc = !srv->wait_pool ? (err && err->code ? err->code : REIN_ENOMEM)
                      : !srv->ticker_stop || srv->hup_ep < 0
                          ? rein_error_set(err, REIN_ENOMEM, "server: out of memory")
                          : rein_error_set(err, REIN_EIO, "server: libmicrohttpd did not start");
        stop_parts(srv);
        return rc;
    }
    if (pthread_create(&srv->ticker, NULL, ticker_main, srv) != 0) {
        stop_parts(srv);
        return rein_error_set(err, REIN_ENOMEM, "server: cannot start the heartbeat thread");
    }
    if (rein__acceptor_start(srv->acceptor, err) != REIN_OK) {
        rein_err rc = err ? err->code : REIN_EIO;
        rein_cancel_trigger(srv->ticker_stop, "stop");
        pthread_join(srv->ticker, NULL);
        stop_parts(srv);
        return rc;
    }
    srv->started = true;
    return REIN_OK;
}

int rein_server_port(const rein_server *srv)
{
    return srv->started ? srv->bound_port : srv->port;
}

/* Waits on the server's condition until pred holds or deadline (monotonic ms) passes. */
static void wait_until(rein_server *srv, int64_t deadline, bool (*pred)(rein_server *))
{
    while (!pred(srv)) {
        struct timespec ts;
        int64_t left = deadline - rein_now_ms();
        if (left <= 0)
            break;
        ts = rein__deadline_ts(CLOCK_REALTIME, left > 100 ? 100 : left);
        pthread_cond_timedwait(&srv->cv, &srv->mu, &ts);
    }
}

static bool all_done(rein_server *srv)
{
    return srv->nlive == 0 && srv->jobs == 0;
}

static bool jobs_done(rein_server *srv)
{
    return srv->jobs == 0;
}

static bool none_live(rein_server *srv)
{
    return srv->nlive == 0;
}

/*
 * Ends the detached streams of live requests (only the idle ones when idle_only; srv->mu
 * held): they have no handler to return, and their owners' later writes fail (each owner's
 * rein_sse_end() still drops its reference).
 */
static void end_detached(rein_server *srv, bool idle_only)
{
    for (rein_request *r = srv->live; r; r = r->live_next) {
        pthread_mutex_lock(&r->mu);
        bool end = r->sse_detached && !r->sse_ended && (r->sse_idle || !idle_only);
        pthread_mutex_unlock(&r->mu);
        if (end) {
            rein_cancel_trigger(r->cancel, "server shutting down");
            sse_end(r);
        }
    }
}

void rein_server_stop(rein_server *srv, int64_t grace_ms)
{
    if (!srv->started || srv->stopped)
        return;
    /* New requests get 503 from here on, until the acceptor stops (just before MHD does). */
    atomic_store(&srv->stopping, true);

    pthread_mutex_lock(&srv->mu);
    /* Streams that only wait for news have nothing to finish. */
    end_detached(srv, true);
    wait_until(srv, rein_now_ms() + (grace_ms > 0 ? grace_ms : 0), all_done);
    if (!all_done(srv)) {
        rein_log(REIN_LOG_WARN, WHERE, "%d request(s) still running after %lldms: cancelling",
                 srv->nlive, (long long)grace_ms);
        for (rein_request *r = srv->live; r; r = r->live_next)
            rein_cancel_trigger(r->cancel, "server shutting down");
        end_detached(srv, false);
    }
    /* Handlers must return before their connections can be closed. */
    wait_until(srv, INT64_MAX, jobs_done);
    /* A handler that returned meanwhile may have left a detached stream behind: a connection
     * must not be waiting on one when the daemon stops. */
    end_detached(srv, false);
    /* Let finished answers and ended streams flush briefly. */
    wait_until(srv, rein_now_ms() + 2000, none_live);
    pthread_mutex_unlock(&srv->mu);

    rein_cancel_trigger(srv->ticker_stop, "stop");
    pthread_join(srv->ticker, NULL);
    stop_parts(srv);
    srv->stopped = true;
}
