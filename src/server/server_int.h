/*
 * server_int.h: the request-line and header parsers of the server (http_parse.c), kept apart
 * from libmicrohttpd so they can be fuzzed on their own (fuzz/http_body.c) and unit-tested.
 * Every input here comes from the network.
 */
#ifndef REIN_SERVER_INT_H
#define REIN_SERVER_INT_H

#include <rein/arena.h>
#include <rein/server.h>

#include "core/internal.h"

#include <sys/socket.h>

#define REIN_HTTP_MAX_PARAMS 8

/* How many quiet spells (no request for a second after some) have ended with the freed heap
 * handed back to the system (server.c's ticker); for tests. */
unsigned rein__server_heap_trims(rein_server *srv);
/* How many times the ticker's hang-up set has reported a connection, and how many
 * connections are in it now (server.c); for tests. */
unsigned rein__server_hangup_events(rein_server *srv);
unsigned rein__server_hangup_watched(rein_server *srv);
/* How long a waiting-pool thread stays without a request before it stops (default 30 s);
 * before rein_server_start(), for tests. */
void rein__server_set_wait_idle_ms(rein_server *srv, unsigned ms);

/*
 * Decodes %XX escapes (and '+' as a space when plus_space) of len bytes of in into out (room
 * for len + 1 bytes), NUL-terminated; *out_len gets the length. False on a malformed escape
 * or an encoded NUL.
 */
bool rein__http_pct_decode(const char *in, size_t len, bool plus_space, char *out, size_t *out_len);

/*
 * Matches a raw path ("/agent/conversations/abc%2Fx") against a pattern
 * ("/agent/conversations/{id}"), segment by segment, each segment decoded once. Returns true
 * on a match and fills names/values (at most REIN_HTTP_MAX_PARAMS; names borrowed from the
 * pattern, values new in arena, NULL when the segment's encoding is malformed).
 */
bool rein__http_match(const char *pattern, const char *path, rein_arena *arena, char names[][32],
                      char **values, int *nparams);

/* True for "application/json" with any parameters, case-insensitive. */
bool rein__http_is_json_type(const char *content_type);

/* True when the Accept header lists text/event-stream. */
bool rein__http_accepts_sse(const char *accept);

/*
 * True when authorization is "Bearer <key>" (scheme case-insensitive) and key equals one of
 * keys (each compared in constant time, all of them always compared).
 */
bool rein__http_bearer_ok(const char *authorization, char *const *keys, int nkeys);
/* The same for a bare key (an x-api-key header, as Anthropic's clients send it). */
bool rein__http_key_ok(const char *key, char *const *keys, int nkeys);

/* Parses a decimal in [lo, hi]; false on anything else. */
bool rein__http_parse_uint(const char *text, long lo, long hi, long *out);

/* ---- request bodies of the skill host and agent API routes (routes_bodies.c) ------------ */

/* Appends {path, message} to details (a JSON array). */
void rein__body_problem(json_t *details, const char *path, const char *fmt, ...) REIN_PRINTF(3, 4);
/* False (with a problem) when body is not an object; a problem for each member not listed in
 * allowed (NULL-terminated). */
bool rein__body_object(const json_t *body, const char *const *allowed, json_t *details);
/* The string member key (borrowed from body), or NULL when absent, null (a problem when
 * required), not a string or holding a NUL character (a problem). */
const char *rein__body_string(const json_t *body, const char *key, bool required, json_t *details);
/* Sets *out to the integer member key when present; false (with a problem) when it is not an
 * integer in [lo, hi]. Absent or null leaves *out unchanged. */
bool rein__body_int(const json_t *body, const char *key, int64_t lo, int64_t hi, int64_t *out,
                    json_t *details);
/* Answers 400 bad_request naming the first problem, with "details": the list. Takes details. */
rein_err rein__reply_problems(rein_request *req, json_t *details);
/* Frees ptr with free_fn when the server is freed (route sets' userdata). On failure nothing
 * is kept and the caller still owns ptr. */
rein_err rein__server_keep(rein_server *srv, void *ptr, void (*free_fn)(void *ptr),
                           rein_error *err);
/* POST /agent/chat's body. Strings are borrowed from the body. */
struct rein__chat_body {
    const char *message;
    const char *conv_id;              /* NULL: a new conversation */
    struct rein_agent_turn_opts turn; /* mode, verification, max_tool_calls, max_tokens,
                                         timeout_ms */
    int64_t replace_from;             /* -1: none; else the position of the message replaced */
};
/* {"title"}: the new title (borrowed from body), 1..200 bytes once trimmed of spaces. */
bool rein__patch_body_read(const json_t *body, const char **title, json_t *details);
#define REIN__REASON_MAX 160
/* Each reader fills its output and adds a problem to details for everything wrong; true when
 * there is none. */
bool rein__chat_body_read(const json_t *body, struct rein__chat_body *cb, json_t *details);
/* {"arguments", "call_id"?, "timeout_ms"?, "tool"? (must equal id)}: sets in->args and
 * in->call_id (borrowed from body) and *timeout_ms (when given). */
bool rein__invoke_body_read(const json_t *body, const char *id, struct rein_call_input *in,
                            int64_t *timeout_ms, json_t *details);
bool rein__approval_body_read(const json_t *body, bool *approve, json_t *details);
/* {"action": "run" | "discard"} */
bool rein__proposal_body_read(const json_t *body, bool *run, json_t *details);
/* body may be NULL (no body): the default reason. */
bool rein__cancel_body_read(const json_t *body, char reason[REIN__REASON_MAX], json_t *details);

/* rein_request_reply() with the body taken from b (its memory goes to the answer and b is left
 * empty, to be released as usual): no copy of the body. */
rein_err rein__request_reply_buf(rein_request *req, int status, const char *content_type,
                                 struct rein_buf *b);
/* Answers {"error": {"code", "message", ...extra's members}} (server.c); extra borrowed. */
rein_err rein__request_reply_error_extra(rein_request *req, int status, const char *code,
                                         const char *message, const json_t *extra);

/* ---- the first request head and the acceptor (http_parse.c, accept.c; decision 0035) ---- */

/*
 * What the server answers itself to a connection's first request head before libmicrohttpd
 * reads it, from len bytes of buf (borrowed) as they arrived: 400 for a Content-Length that
 * is not a decimal number (empty, a sign, blanks after the digits, ...) and 413 for one past
 * 2^64 - 1, when no Transfer-Encoding is sent (the requests libmicrohttpd 0.9.75 answers with
 * two stacked header blocks); 0 for everything else. *complete is false while the head has
 * not ended within len bytes (the verdict is then 0: not known yet).
 */
int rein__http_head_verdict(const char *buf, size_t len, bool *complete);

/* True when two socket addresses are of one client (the same IP address, any port). */
bool rein__same_client(const struct sockaddr *a, const struct sockaddr *b);

struct rein__acceptor;

struct rein__acceptor_opts {
    const struct sockaddr *addr; /* where to listen (copied by listen()) */
    socklen_t addrlen;
    int64_t header_timeout_ms; /* a socket's first head must arrive within this */
    int64_t idle_timeout_ms;   /* ... and it may not send nothing for this long (0: no limit) */
    unsigned max_pending;      /* sockets waiting for their first head at once */
    unsigned max_per_client;   /* connections of one address: waiting here and held */
    /* The connections the server holds for the client at addr (called on the acceptor's
     * thread). */
    unsigned (*held)(void *ctx, const struct sockaddr *addr);
    /* Takes a socket whose first head is complete and acceptable (or longer than the peek
     * buffer); fd belongs to the callee from then on. */
    void (*hand)(void *ctx, int fd, const struct sockaddr *addr, socklen_t addrlen);
    void *ctx;
};

/* Listens on o->addr; *out (new, free with rein__acceptor_free) accepts nothing until
 * rein__acceptor_start(). REIN_EIO when the address cannot be bound. */
rein_err rein__acceptor_listen(const struct rein__acceptor_opts *o, struct rein__acceptor **out,
                               rein_error *err);
/* The port the acceptor listens on. */
int rein__acceptor_port(const struct rein__acceptor *a);
/* Starts accepting on a thread of its own. */
rein_err rein__acceptor_start(struct rein__acceptor *a, rein_error *err);
/* Stops accepting, closes the listening socket and the sockets still waiting, frees a. */
void rein__acceptor_free(struct rein__acceptor *a);

/*
 * A malformed Content-Length on a later request of a kept-alive connection, which
 * libmicrohttpd reads itself (accept.c). Called on libmicrohttpd's network threads with the
 * connection (borrowed): rein__mhd_request_line() from the URI callback of every request,
 * rein__mhd_request_left() when the request reaches the handler or completes. Its error log
 * passes each format string (borrowed) to rein__mhd_logged(), which answers the connection
 * whose head is being parsed once (400 or 413, rein's JSON error) and shuts the socket's
 * sending side when fmt is 0.9.75's refusal of a Content-Length; true when it did.
 */
struct MHD_Connection;
void rein__mhd_request_line(struct MHD_Connection *c);
void rein__mhd_request_left(struct MHD_Connection *c);
bool rein__mhd_logged(const char *fmt);

#endif /* REIN_SERVER_INT_H */
