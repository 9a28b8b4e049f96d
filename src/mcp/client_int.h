/*
 * Internals shared by the files of rein's MCP client (client*.c): the connection object, the
 * requests waiting for answers, and what each transport offers the protocol code. Only the
 * client files include this; the rest of src/mcp/ uses what mcp_int.h declares.
 */
#ifndef REIN_MCP_CLIENT_INT_H
#define REIN_MCP_CLIENT_INT_H

#include "mcp/mcp_int.h"

#include <rein/proc.h>

#define REIN__MCP_STDERR_TAIL       1024
#define REIN__MCP_CLOSE_GRACE_MS    2000
#define REIN__MCP_NOTIFY_TIMEOUT_MS 5000
#define REIN__MCP_MAX_RESUMES       5
#define REIN__MCP_DEFAULT_RETRY_MS  1000

enum rein__mcp_conn_state {
    REIN__MCP_ST_IDLE = 0,
    REIN__MCP_ST_READY,
    REIN__MCP_ST_FAILED,
    REIN__MCP_ST_CLOSED,
};

/* A request waiting for its response. Lives on the requesting thread's stack. */
struct rein__mcp_pending {
    struct rein__mcp_pending *next;
    int64_t id;
    json_t *doc; /* the response message, once done */
    bool done;
    rein_err fail_rc; /* a transport failure instead of a response */
    char fail_msg[512];
    const struct rein_invocation *inv; /* where the request's events go; may be NULL */
    int busy;                          /* dispatches reporting an event to inv right now */
    int asking; /* the server's questions passed to inv's asker, not yet answered */
    /* The request times out when the server has said nothing about it for idle_ms (0: no
     * such limit): its progress notifications move activity_ms on (under c->mu). */
    int64_t idle_ms, activity_ms;
    /* What the stateless revision's Mcp-Method and Mcp-Name headers carry (borrowed; name
     * NULL for methods without one). */
    const char *method, *name;
};

/* The idle deadline of p (c->mu held), or 0 when it has none. */
static inline int64_t rein__mcp_pending_idle_deadline(const struct rein__mcp_pending *p)
{
    /* While the server waits for an answer rein is getting for it, its silence is ours. */
    return p->idle_ms > 0 && p->asking == 0 ? p->activity_ms + p->idle_ms : 0;
}

struct rein__mcp_conn {
    atomic_int refs;
    struct rein__mcp_conn_config *cfg;
    pthread_mutex_t mu; /* everything below but the stdio write side */
    pthread_cond_t cv;
    pthread_mutex_t connect_mu; /* one connect at a time */
    enum rein__mcp_conn_state state;
    char error[512];
    int64_t next_id;
    struct rein__mcp_pending *pending;
    json_t *tools;
    json_t *server_info;
    json_t *server_caps; /* the capabilities initialize (or server/discover) answered with */
    char version[16];
    /* The server speaks only the stateless revision (2026-07-28): no initialize, no session;
     * every request carries its version in _meta (and, over HTTP, in headers). */
    bool modern;
    int64_t unknown_ids, garbage;
    char last_garbage[160];
    /* stdio */
    rein_proc *proc;
    pthread_t reader;
    bool reader_running, reader_done, closing;
    bool in_connect; /* a connect is running: a 404 then is not answered by reconnecting */
    pthread_mutex_t write_mu;
    char stderr_tail[REIN__MCP_STDERR_TAIL + 1];
    size_t stderr_len;
    /* http */
    char *session_id;
    bool transport_down; /* the last exchange could not reach the server at all */
    /* What the owner of the connection (runner.c) wants to hear about: the connection was lost
     * or the server's tool list changed. Called with change_mu held (so clearing it waits for
     * a call in progress) and c->mu not held. */
    pthread_mutex_t change_mu;
    void (*on_change)(void *ud);
    void *change_ud;
    bool tools_stale;    /* notifications/tools/list_changed arrived (under mu) */
    int64_t next_try_ms; /* a supervised connection that failed is tried again then (mu) */
    bool supervised;     /* someone reconnects it in the background (mu) */
    /* HTTP: the thread reading the standalone GET stream (started and stopped by whoever
     * holds connect_mu). */
    pthread_t listener;
    bool listening;
    rein_cancel *listen_stop;
    bool listen_up; /* the stream's first answer came: its headers, or its end (mu) */
    /* HTTP: OAuth (oauth.c; made on first use, under mu), and whether a 401 may start the
     * browser flow (mu; set by the owner, rein_mcp_clients_allow_login). */
    struct rein__mcp_oauth *oauth;
    bool oauth_login;
    /* What rein declares to the server and passes to a call's asker (REIN_MCP_OFFER_*; mu). */
    unsigned offers;
    /* Legacy HTTP+SSE (client_legacy.c): the stream's reader and the endpoint it named
     * (legacy_endpoint and legacy_done under mu). */
    pthread_t legacy_reader;
    bool legacy_running, legacy_done;
    rein_cancel *legacy_stop;
    char *legacy_endpoint;
};

/* Tells the owner about a change (no lock held). */
void rein__mcp_client_changed(struct rein__mcp_conn *c);

/* ---- client.c: what the transports hand messages to ---- */

/* Decodes one message's text and routes it (current: the request whose HTTP answer carried
 * it, or NULL); text that is not a message is counted as garbage. */
void rein__mcp_client_dispatch_text(struct rein__mcp_conn *c, const char *text, size_t len,
                                    const struct rein__mcp_pending *current);
/* Fails every pending request with rc and msg (c->mu held). */
void rein__mcp_client_fail_all(struct rein__mcp_conn *c, rein_err rc, const char *msg);
/* A notification or a response to the server, not waiting for anything. */
rein_err rein__mcp_client_send_raw(struct rein__mcp_conn *c, const char *json, size_t len,
                                   rein_error *err);

/* ---- client_stdio.c ---- */
rein_err rein__mcp_stdio_send(struct rein__mcp_conn *c, const char *json, size_t len,
                              rein_error *err);
/* Starts the server program and its reader thread. */
rein_err rein__mcp_stdio_open(struct rein__mcp_conn *c, rein_error *err);
/* Stops the server: end of input, a grace period, then signals; joins the reader. */
void rein__mcp_stdio_close(struct rein__mcp_conn *c);

/* ---- client_legacy.c: HTTP+SSE (2024-11-05) ---- */
/* Opens the event stream and waits (until deadline) for the endpoint event. */
rein_err rein__mcp_legacy_open(struct rein__mcp_conn *c, int64_t deadline, rein_error *err);
/* POSTs one message to the endpoint; the answer comes on the stream. */
rein_err rein__mcp_legacy_send(struct rein__mcp_conn *c, const char *json, size_t len,
                               rein_error *err);
/* Ends the stream and joins its reader. */
void rein__mcp_legacy_close(struct rein__mcp_conn *c);

/* ---- client_http.c ---- */
#define REIN__MCP_NEED_RESUME     1 /* the stream ended before the response: resume it */
#define REIN__MCP_SESSION_EXPIRED 2 /* the server forgot the session: initialize again */
#define REIN__MCP_NO_STREAM       3 /* a GET for the standalone stream got 405 */
#define REIN__MCP_AUTH_NEEDED     4 /* 401, or 403 insufficient_scope: see auth */
/* What a request that needs authorization was told. */
struct rein__mcp_auth {
    long status;
    char www[2048]; /* the WWW-Authenticate value ("" when none) */
    uint64_t gen;   /* the token generation the request was sent with */
};
/*
 * One HTTP exchange: POST body (a message), or (body NULL) a GET for an event stream: resuming
 * from last_id, or the standalone stream. Answers for p arrive through dispatch. Returns
 * REIN_OK, REIN__MCP_NEED_RESUME (last_out, retry_out set), REIN__MCP_SESSION_EXPIRED,
 * REIN__MCP_NO_STREAM, REIN__MCP_AUTH_NEEDED (only when auth is not NULL: what the server
 * said is in *auth) or an error. A request whose idle limit passes fails with ETIMEDOUT.
 */
int rein__mcp_http_exchange(struct rein__mcp_conn *c, struct rein__mcp_pending *p, const char *body,
                            size_t len, const char *last_id, int64_t deadline, rein_cancel *cancel,
                            char *last_out, int64_t *retry_out, struct rein__mcp_auth *auth,
                            rein_error *err);
/* A notification or response POSTed, authorized as requests are. */
int rein__mcp_http_send(struct rein__mcp_conn *c, const char *json, size_t len, int64_t deadline,
                        rein_error *err);
/* A request over HTTP: POST, then resume as often as the server asks (within limits). */
int rein__mcp_http_roundtrip(struct rein__mcp_conn *c, struct rein__mcp_pending *p,
                             const char *json, size_t len, int64_t deadline, rein_cancel *cancel,
                             rein_error *err);
/* Ends the HTTP session (DELETE), as a courtesy. */
void rein__mcp_http_close(struct rein__mcp_conn *c);
/* Opens the standalone GET stream on a thread of its own (notifications and requests the
 * server sends outside any request), reopened after a drop; stop joins it. */
void rein__mcp_http_listen_start(struct rein__mcp_conn *c);
void rein__mcp_http_listen_stop(struct rein__mcp_conn *c);

#endif /* REIN_MCP_CLIENT_INT_H */
