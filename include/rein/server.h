/*
 * rein/server.h: the HTTP server core of `rein serve` (libmicrohttpd).
 *
 * A server has a route table (method + path pattern with {name} segments) and runs each
 * request's handler on a worker pool, so a long agent turn never blocks the network threads.
 * Before a handler runs, the server has already answered every guard with a JSON error
 * {"error": {"code", "message"}}:
 *   401 unauthorized        API keys are set and neither Authorization: Bearer <key> nor
 *                           x-api-key: <key> names one
 *   404 not_found           no route has this path
 *   405 method_not_allowed  a route has the path but not the method (with an Allow header)
 *                           (HEAD is answered by the GET route, headers only; OPTIONS on a
 *                           known path is 204 with Allow)
 *   400 bad_request         an HTTP/1.1 request without exactly one Host header; two
 *                           different Content-Length headers, or one beside
 *                           Transfer-Encoding (answered with Connection: close)
 *   501 not_implemented     a Transfer-Encoding other than chunked (with Connection: close)
 *   400 invalid_id          a {param} is not an id: 1-64 of [A-Za-z0-9_.-], no "..", no '/',
 *                           no percent-encoded tricks (segments are decoded once, then checked)
 *   415 unsupported_media_type  a JSON route got a body that is not application/json
 *   413 payload_too_large   the body passes the limit (default 1 MiB; refused from
 *                           Content-Length before reading, never buffered past the limit)
 *   400 invalid_json        the body of a JSON route does not parse (message names line/column)
 *   400 bad_request         two Authorization headers, or two x-api-key headers
 *   503 shutting_down       the server is stopping (with Connection: close)
 *   503 overloaded          bodies being received already hold the body memory budget
 *                           (the declared length would pass it, or the body did)
 * Bounds (setters below): a connection's request headers must arrive within the header
 * timeout (default 10 s, counted from accept or from the previous answer on a kept-alive
 * connection) and its body within the body timeout (default 30 s from the end of the headers),
 * or the connection is closed; one client address holds at most 256 connections, the server
 * 4096; bodies being received hold at most 64 MiB together. None of these counts while a
 * handler runs.
 * Every answer carries X-Request-Id and X-Trace-Id (from a valid `traceparent` header, else
 * new). One access-log line per request at info level: request id, method, route pattern,
 * status, latency. Requests are counted in the metrics registry by route and status.
 *
 * Handlers answer exactly once: with rein_request_reply*() (from any thread), or by starting a
 * Server-Sent Events stream that lasts until the handler returns (or, detached, until its
 * owner ends it). A handler that returns
 * without answering gets a 500. The request's cancellation handle is triggered when the
 * client disconnects (seen at once, within about 100 ms, while a handler runs or a stream
 * waits, on JSON and SSE requests alike) or when the server stops past its grace period.
 *
 * Threading: configure and start from one thread; rein_server_stop() from any thread (not
 * from a handler). Handlers run on worker threads; request functions may be called from the
 * handler's thread (and reply/SSE functions from any thread) until the handler returns.
 */
#ifndef REIN_SERVER_H
#define REIN_SERVER_H

#include <rein/agent.h>
#include <rein/arena.h>
#include <rein/buf.h>
#include <rein/cancel.h>
#include <rein/json.h>
#include <rein/metrics.h>
#include <rein/store.h>
#include <rein/tools.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_server rein_server;
typedef struct rein_request rein_request;
typedef struct rein_sse rein_sse;

/* Runs once per request on a worker thread (or the network thread for REIN_ROUTE_INLINE). */
typedef void (*rein_handler_fn)(rein_request *req, void *userdata);

enum rein_route_flags {
    REIN_ROUTE_JSON_BODY = 1 << 0,  /* needs a JSON body: 415 / 400 guards, rein_request_json() */
    REIN_ROUTE_PUBLIC = 1 << 1,     /* no API key needed (/healthz) */
    REIN_ROUTE_INLINE = 1 << 2,     /* short, non-blocking: run on the network thread */
    REIN_ROUTE_RAW_PARAMS = 1 << 3, /* {params} are not checked as ids (decoded still) */
    /* A JSON-RPC endpoint (/mcp): the guards answer with a JSON-RPC error ({"jsonrpc": "2.0",
     * "id": null, "error": {"code": -32600, "message"}}) and the same HTTP status. */
    REIN_ROUTE_JSONRPC = 1 << 4,
    /* An OAuth protected resource (RFC 9728): a 401 here says where its metadata is,
     * WWW-Authenticate: Bearer resource_metadata="<origin>/.well-known/oauth-protected-resource
     * <path>" (the origin as the client named it: Host, X-Forwarded-Proto). */
    REIN_ROUTE_PROTECTED = 1 << 5,
    /* The handler mostly waits on a remote service (the gateway's upstream model): it runs on
     * the waiting pool, which starts a thread for each such request up to its own bound
     * (rein_server_set_wait_threads), so these requests neither hold nor wait for the
     * workers that --threads counts. */
    REIN_ROUTE_WAITS = 1 << 6,
};

#define REIN_SERVER_DEFAULT_PORT               8080
#define REIN_SERVER_DEFAULT_BODY_LIMIT         ((size_t)1 << 20)
#define REIN_SERVER_DEFAULT_HEADER_TIMEOUT_MS  10000
#define REIN_SERVER_DEFAULT_BODY_TIMEOUT_MS    30000
#define REIN_SERVER_DEFAULT_CLIENT_CONNECTIONS 256
#define REIN_SERVER_DEFAULT_CONNECTIONS        4096
#define REIN_SERVER_DEFAULT_BODY_MEMORY        ((size_t)64 << 20)
#define REIN_SERVER_DEFAULT_WAIT_THREADS       1024

/* New server with the defaults (127.0.0.1:8080, 8 workers, 2 network threads, 1 MiB body
 * limit, 15 s SSE heartbeat, no API keys) and the built-in routes GET /healthz and
 * GET /metrics. NULL when memory is exhausted. */
REIN_EXTERN rein_server *rein_server_new(rein_error *err);
/* Stops the server if running (grace 0) and frees it. NULL is a no-op. */
REIN_EXTERN void rein_server_free(rein_server *srv);

/* Setters: call before rein_server_start(). host: an IPv4 or IPv6 literal (copied). */
REIN_EXTERN rein_err rein_server_set_host(rein_server *srv, const char *host) REIN_WUR;
/* 0 asks the kernel for a free port; read it with rein_server_port() after start. */
REIN_EXTERN void rein_server_set_port(rein_server *srv, int port);
/* Handler workers (long turns each hold one while they run); 0 keeps the default. */
REIN_EXTERN void rein_server_set_threads(rein_server *srv, unsigned n);
/*
 * Requests of REIN_ROUTE_WAITS routes handled at once (default 1024); past that they queue.
 * Their threads start as requests come (past the worker count, for a request that waited 5 ms)
 * and stop after 30 s without one. 0 keeps the default.
 */
REIN_EXTERN void rein_server_set_wait_threads(rein_server *srv, unsigned n);
/* libmicrohttpd's network threads; 0 keeps the default. */
REIN_EXTERN void rein_server_set_io_threads(rein_server *srv, unsigned n);
REIN_EXTERN void rein_server_set_body_limit(rein_server *srv, size_t bytes);
/* Seconds a connection may stay silent (headers or a body half sent, or idle between
 * keep-alive requests) before it is closed; 0 keeps the default (30). Connections waiting for
 * a handler or an SSE write are not counted as silent. */
REIN_EXTERN void rein_server_set_idle_timeout(rein_server *srv, unsigned seconds);
/* Comma-separated API keys (copied; spaces around keys ignored; NULL, "" or only spaces turn
 * auth off). REIN_EINVAL when keys holds commas but no key (",", " , "): auth stays off, and
 * the caller must not start believing it is on. */
REIN_EXTERN rein_err rein_server_set_api_keys(rein_server *srv, const char *keys) REIN_WUR;
REIN_EXTERN void rein_server_set_heartbeat_ms(rein_server *srv, int64_t ms);
/* Registry for request metrics and GET /metrics (borrowed; NULL: the global registry). */
REIN_EXTERN void rein_server_set_metrics(rein_server *srv, rein_metrics *m);
/* GET /metrics needs an API key like every route (when keys are set) unless made public. */
REIN_EXTERN void rein_server_set_metrics_public(rein_server *srv, bool public_);
/* How long a request's headers may take to arrive (from accept, or from the previous answer
 * on a kept-alive connection) and its body (from the end of the headers), in ms; past it the
 * connection is closed. <= 0 keeps the default. */
REIN_EXTERN void rein_server_set_header_timeout_ms(rein_server *srv, int64_t ms);
REIN_EXTERN void rein_server_set_body_timeout_ms(rein_server *srv, int64_t ms);
/* Connections one client address may hold at once (more are closed at accept), and all
 * clients together; 0 keeps the default. */
REIN_EXTERN void rein_server_set_client_connections(rein_server *srv, unsigned n);
REIN_EXTERN void rein_server_set_connections(rein_server *srv, unsigned n);
/* Bytes all bodies being received may hold together (503 overloaded past it); 0: default. */
REIN_EXTERN void rein_server_set_body_memory(rein_server *srv, size_t bytes);
/*
 * Adds members to GET /healthz's answer ({"status": "ok", "version"}): fn(userdata, health)
 * sets them in health (borrowed). Called on a network thread for each /healthz request, so it
 * must be quick and must not block (the state of MCP servers, say). userdata is borrowed and
 * must outlive the server. Set before rein_server_start().
 */
typedef void (*rein_health_fn)(void *userdata, json_t *health);
REIN_EXTERN void rein_server_set_health(rein_server *srv, rein_health_fn fn, void *userdata);

/*
 * Adds a route. method: "GET", "POST", "DELETE", ...; pattern: "/agent/conversations/{id}"
 * (literal segments and whole-segment {name} parameters). Strings are copied; userdata is
 * borrowed and must outlive the server. REIN_EEXIST for a duplicate method + pattern.
 */
REIN_EXTERN rein_err rein_server_route(rein_server *srv, const char *method, const char *pattern,
                                       unsigned flags, rein_handler_fn fn, void *userdata,
                                       rein_error *err) REIN_WUR;
/*
 * Adds the routes that need only the store (borrowed; must outlive the server):
 *   GET    /agent/conversations?limit=N&cursor=C&q=T   newest first, paged; q: only those
 *                                                  whose title contains T (rein_store_conv_find)
 *   PATCH  /agent/conversations/{id}               {"title": "..."}: renames it
 *   GET    /agent/conversations/{id}               conversation, messages, ledger, lock state
 *   DELETE /agent/conversations/{id}               409 with the lock state while a turn runs
 *   GET    /agent/conversations/{id}/events        the recorded events after Last-Event-ID
 *          (or ?after=N; default: all kept) as Server-Sent Events, each with its sequence id
 *          as the SSE id; while a turn runs the stream follows it, and it ends when no turn
 *          runs and every event is sent. Any instance sharing the store can serve it.
 *          ?from=turn starts at the last turn's start, ?type=a,b filters; with
 *          Accept: application/json one page (?limit=N) instead (src/server/routes_store.c)
 */
REIN_EXTERN rein_err rein_server_add_store_routes(rein_server *srv, rein_store *store,
                                                  rein_error *err) REIN_WUR;
/*
 * Adds the chat page, built into the library from web/ (no files needed at run time):
 *   GET /             the page (index.html)
 *   GET /web/{file}   its scripts and styles; 404 for a name the page does not have
 * Both are public (no API key: the files hold no data; the page sends the key the person
 * enters to the API routes) and answer with a Content-Security-Policy that allows only this
 * origin, a strong ETag (If-None-Match gets 304) and Cache-Control: no-cache.
 */
REIN_EXTERN rein_err rein_server_add_web_routes(rein_server *srv, rein_error *err) REIN_WUR;

/* ---- the skill host and the agent API (routes_skills.c, routes_agent.c) ------------------ */

/*
 * Adds the skill host over reg (borrowed; must outlive the server). m (borrowed, may be NULL:
 * the global registry) counts the calls as rein_tool_calls_total{tool,status}.
 *   GET  /skills                 {"skills": [manifest, ...], "problems": [{file, pointer,
 *                                 message}, ...]} (problems: manifests that were refused)
 *   GET  /skills/{id}            the manifest; 404 not_found for an unknown id
 *   POST /skills/{id}/invoke     body {"arguments": {...}, "call_id"?, "timeout_ms"?,
 *                                 "tool"? (must equal id)}: one call through the pipeline.
 *                                 200 with the normalized result whatever the call's outcome
 *                                 ({"ok": false, ...} for an invalid or failed call; a call
 *                                 that could not run also carries "invalid_payload", what a
 *                                 model would read). The call's trace id is the request's
 *                                 (traceparent or new), also in the X-Trace-Id header.
 *                                 404 not_found (with "available_tools") for an unknown id,
 *                                 400 bad_request for a malformed body.
 */
REIN_EXTERN rein_err rein_server_add_skill_routes(rein_server *srv, const rein_registry *reg,
                                                  rein_metrics *m, rein_error *err) REIN_WUR;

/*
 * The agent API: POST /agent/chat and the routes that reach a running turn (cancel,
 * approvals) and act on proposed calls, on whichever `rein serve` instance the turn runs
 * (everything goes through the store). docs/decisions/0008 describes the shapes.
 */
typedef struct rein_agent_api rein_agent_api;

struct rein_agent_api_opts {
    int64_t lease_ms;            /* a turn's lock lease, renewed while it runs; 0: 30000 */
    int64_t approval_timeout_ms; /* how long a destructive call waits for a person; 0: 60000 */
    /* How often calls left pending by a dead process are flagged interrupted in the store
     * (rein_store_recover); 0: lease_ms / 2; negative: never (only at store open). */
    int64_t recover_ms;
    rein_metrics *metrics;     /* borrowed; NULL: the global registry */
    const char *provider_name; /* label of rein_provider_retries_total (copied); NULL: unknown */
    /* The one switch of the disconnect policy. false (the default): a client that goes away
     * (JSON or event stream) leaves its turn running; only the cancel route (Stop) ends it, and
     * its events and outcome are in the store for whoever reads them
     * (GET /agent/conversations/{id}/events). true: a client that goes away cancels its turn,
     * as Stop does, and the conversation is left "interrupted". A request may ask for that
     * with ?cancel_on_disconnect=1 (or keep its turn with =0) whatever the switch says. */
    bool disconnect_cancels_turn;
};

/*
 * New agent API over agent, reg (the agent's registry, for proposed calls) and store (all
 * borrowed; they must outlive the API). opts may be NULL. Starts the recovery thread.
 * NULL on failure (err says why).
 */
REIN_EXTERN rein_agent_api *rein_agent_api_new(rein_agent *agent, const rein_registry *reg,
                                               rein_store *store,
                                               const struct rein_agent_api_opts *opts,
                                               rein_error *err);
/* Stops the recovery thread and frees api. Call after rein_server_stop(). NULL is a no-op. */
REIN_EXTERN void rein_agent_api_free(rein_agent_api *api);
/*
 * Adds (api borrowed; must outlive the server):
 *   POST /agent/chat[?cancel_on_disconnect=1]          one turn (JSON, or SSE events)
 *   POST /agent/conversations/{id}/cancel              cancel the running turn
 *   POST /agent/conversations/{id}/approvals/{call_id} {"approve": true|false}
 *   POST /agent/conversations/{id}/proposals/{call_id} {"action": "run"|"discard"}
 * Add rein_server_add_store_routes() too for listing, reading and deleting conversations.
 */
REIN_EXTERN rein_err rein_server_add_agent_routes(rein_server *srv, rein_agent_api *api,
                                                  rein_error *err) REIN_WUR;

/* Binds and starts serving. REIN_EIO (err names the address) when the port cannot be bound. */
REIN_EXTERN rein_err rein_server_start(rein_server *srv, rein_error *err) REIN_WUR;
/* The bound port (after start), else the configured one. */
REIN_EXTERN int rein_server_port(const rein_server *srv);
/*
 * Stops accepting connections, lets running requests finish for up to grace_ms, then
 * triggers their cancellation handles and waits for their handlers to return, then closes
 * every connection. Safe to call more than once.
 */
REIN_EXTERN void rein_server_stop(rein_server *srv, int64_t grace_ms);

/* ---- requests: everything returned is borrowed, valid until the handler returns ---------- */

REIN_EXTERN const char *rein_request_method(const rein_request *req);
/* The path as sent (still percent-encoded), without the query. */
REIN_EXTERN const char *rein_request_path(const rein_request *req);
/* The matched route's pattern ("/agent/conversations/{id}"). */
REIN_EXTERN const char *rein_request_route(const rein_request *req);
/* A {name} parameter, decoded (and checked as an id unless REIN_ROUTE_RAW_PARAMS); or NULL. */
REIN_EXTERN const char *rein_request_param(const rein_request *req, const char *name);
/* A query parameter, decoded (%XX and '+'); NULL when absent or badly encoded. */
REIN_EXTERN const char *rein_request_query(rein_request *req, const char *name);
/* A request header (case-insensitive name), or NULL. */
REIN_EXTERN const char *rein_request_header(const rein_request *req, const char *name);
/* The body bytes (NUL-terminated; "" when none); *len (may be NULL) receives the length. */
REIN_EXTERN const char *rein_request_body(const rein_request *req, size_t *len);
/* The parsed body of a REIN_ROUTE_JSON_BODY route (borrowed), else NULL. */
REIN_EXTERN json_t *rein_request_json(const rein_request *req);
/* Memory freed when the request ends. */
REIN_EXTERN rein_arena *rein_request_arena(rein_request *req);
REIN_EXTERN const char *rein_request_id(const rein_request *req);
/* 32 hex digits: from traceparent when valid, else new. */
REIN_EXTERN const char *rein_request_trace_id(const rein_request *req);
/* Triggered on client disconnect or forced shutdown; borrowed. */
REIN_EXTERN rein_cancel *rein_request_cancel(rein_request *req);
/* True once the client has gone away (hung up, or MHD ended the connection unanswered). */
REIN_EXTERN bool rein_request_client_gone(rein_request *req);
/* True when the Accept header asks for text/event-stream. */
REIN_EXTERN bool rein_request_wants_sse(const rein_request *req);
/*
 * For a REIN_ROUTE_INLINE handler that finds the request will take long: instead of answering,
 * it hands the request to a worker, where fn(req, userdata) runs once the inline handler has
 * returned and answers as any handler does. So a route can serve quick requests on the network
 * thread (no hand-over between threads) and slow ones on the pool. REIN_ESTATE when called
 * from anything but a running inline handler, twice, or after an answer.
 */
REIN_EXTERN rein_err rein_request_defer(rein_request *req, rein_handler_fn fn,
                                        void *userdata) REIN_WUR;

/* ---- answers: exactly one per request ---------------------------------------------------- */

/* Adds a response header (copied) to the answer still to be sent. */
REIN_EXTERN rein_err rein_request_set_header(rein_request *req, const char *name,
                                             const char *value) REIN_WUR;
/* Answers with body bytes (copied). REIN_ESTATE when already answered. */
REIN_EXTERN rein_err rein_request_reply(rein_request *req, int status, const char *content_type,
                                        const void *body, size_t len);
/* Answers with a JSON document; takes body (a reference) even on failure. */
REIN_EXTERN rein_err rein_request_reply_json(rein_request *req, int status, json_t *body);
/* Answers {"error": {"code": code, "message": formatted}}. */
REIN_EXTERN rein_err rein_request_reply_error(rein_request *req, int status, const char *code,
                                              const char *fmt, ...) REIN_PRINTF(4, 5);
/* Answers a rein_error with the status and code its REIN_E* maps to. */
REIN_EXTERN rein_err rein_request_reply_rein_error(rein_request *req, const rein_error *err);
/* 409 {"error": {"code": "conversation_busy", "message", "lock": {state, tool, started_at,
 * expires_at}}}: what a second message gets while a turn runs. */
REIN_EXTERN rein_err rein_request_reply_busy(rein_request *req, const char *conv_id,
                                             const struct rein_store_lock_info *held);

/* HTTP status for a REIN_E* code (EINVAL 400, ENOTFOUND 404, EBUSY 409, ...). */
REIN_EXTERN int rein_http_status_for(int rein_code);
/* Error code text for a REIN_E* code ("bad_request", "not_found", ...); static. */
REIN_EXTERN const char *rein_http_error_code_for(int rein_code);
/* New JSON object for a lock state: {state, tool, started_at, expires_at}. */
REIN_EXTERN json_t *rein_lock_info_json(const struct rein_store_lock_info *info);
/* Compares two secrets in time that depends only on their lengths, not on their contents. */
REIN_EXTERN bool rein_secret_equal(const char *a, size_t alen, const char *b, size_t blen);

/* ---- Server-Sent Events ------------------------------------------------------------------- */

/*
 * Answers 200 text/event-stream and returns the stream (owned by the request; it ends when
 * the handler returns). Heartbeat comments are sent while it is idle. NULL with err set when
 * the request was already answered.
 */
REIN_EXTERN rein_sse *rein_request_sse_start(rein_request *req, rein_error *err);
/*
 * rein_request_sse_start() for a handler that writes events in bursts (a gateway relaying an
 * upstream's reads): what is written is held, neither the answer's head nor the events are
 * sent, until rein_sse_flush() or the end of the stream, so a burst goes out in one write. A
 * stream that ends before its first flush is answered as one body with a Content-Length
 * (head and events in one write) instead of chunks. The server sends what a handler held for
 * 50 ms without flushing itself (and with the heartbeats), so a forgotten flush costs
 * latency, never the events.
 */
REIN_EXTERN rein_sse *rein_request_sse_start_held(rein_request *req, rein_error *err);
/*
 * Sends what a held stream holds (the answer's head too, the first time); a no-op for a stream
 * that is not held, or holds nothing. REIN_ENOMEM when the answer could not be made (the
 * events stay held; the end tries again).
 */
REIN_EXTERN rein_err rein_sse_flush(rein_sse *sse) REIN_WUR;
/*
 * Queues "event: <event>\ndata: <data>\n\n" (data: len bytes of one-line JSON, borrowed) and
 * returns at once. REIN_ECANCELED once the client is gone; REIN_ETOOBIG when the client reads
 * so slowly that 8 MiB are waiting.
 */
REIN_EXTERN rein_err rein_sse_send(rein_sse *sse, const char *event, const char *data,
                                   size_t len) REIN_WUR;
/* rein_sse_send() with the compact encoding of data (borrowed). */
REIN_EXTERN rein_err rein_sse_send_json(rein_sse *sse, const char *event,
                                        const json_t *data) REIN_WUR;
/*
 * The general form of rein_sse_send(), for protocols that resume streams (MCP): queues
 * "id: <id>\n" when id is not NULL, "retry: <retry_ms>\n" when retry_ms > 0, "event: <event>\n"
 * when event is not NULL, then "data: <data>\n\n" (len may be 0: an event with empty data).
 * REIN_EINVAL when id, event or data holds a line break; otherwise as rein_sse_send().
 */
REIN_EXTERN rein_err rein_sse_send_event(rein_sse *sse, const char *id, const char *event,
                                         const char *data, size_t len, int64_t retry_ms) REIN_WUR;
/*
 * Appends to out the bytes rein_sse_send_event(sse, NULL, event, data, len, 0) would queue,
 * with its checks (REIN_EINVAL for a line break in event or data; out unchanged on any
 * error), so a handler can gather the events of a burst and queue them at once with
 * rein_sse_send_framed(). data (len bytes) and event (NULL: none) are borrowed.
 */
REIN_EXTERN rein_err rein_sse_frame(struct rein_buf *out, const char *event, const char *data,
                                    size_t len) REIN_WUR;
/*
 * rein_sse_frame() without looking for line breaks in event and data: for a caller that made
 * them itself as one line each (JSON from rein's writer, which escapes every line break), where
 * the scans cost more than the framing. A line break in either breaks the stream's framing
 * (the client reads the rest as other fields); the other errors as rein_sse_frame().
 */
REIN_EXTERN rein_err rein_sse_frame_line(struct rein_buf *out, const char *event, const char *data,
                                         size_t len) REIN_WUR;
/*
 * Queues the events in *events, bytes rein_sse_frame() appended, as one write of each of
 * them would (a held stream still holds them until a flush), and empties *events: its memory
 * may be traded for the stream's, so it must be a buffer the caller owns and releases. Errors
 * as rein_sse_send(); *events is emptied either way.
 */
REIN_EXTERN rein_err rein_sse_send_framed(rein_sse *sse, struct rein_buf *events) REIN_WUR;
/* Queues a comment line ": text". */
REIN_EXTERN rein_err rein_sse_comment(rein_sse *sse, const char *text) REIN_WUR;
/*
 * Keeps the stream open after the handler returns, so answers produced elsewhere (an MCP call
 * on its own pool) do not hold a worker while they run. The stream then ends only with
 * rein_sse_end(), which the owner must call exactly once, from any thread; until then sse and
 * rein_sse_cancel(sse) stay valid, and writes after the client left (or after the server
 * stopped, which ends detached streams once its grace period is over) fail with
 * REIN_ECANCELED. Heartbeats go on as for any stream. idle: the stream only waits for news
 * (a subscription), so stopping the server ends it at once instead of granting it the grace
 * period running requests get. REIN_ESTATE when already detached.
 */
REIN_EXTERN rein_err rein_sse_detach(rein_sse *sse, bool idle) REIN_WUR;
/* Ends a detached stream and lets go of it (sse is invalid afterwards). NULL is a no-op. */
REIN_EXTERN void rein_sse_end(rein_sse *sse);
/* The request's cancellation handle (client gone, server stopping); borrowed. */
REIN_EXTERN rein_cancel *rein_sse_cancel(rein_sse *sse);

#ifdef __cplusplus
}
#endif
#endif /* REIN_SERVER_H */
