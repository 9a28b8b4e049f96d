/*
 * rein/mcp.h: the Model Context Protocol, both ways.
 *
 * As a server, rein offers its registry's tools to MCP clients, over stdio (`rein mcp serve`)
 * and over Streamable HTTP at /mcp (`rein serve`), for protocol revisions 2025-11-25,
 * 2025-06-18 and 2025-03-26. Every tools/call runs through rein_call_run(), so a call from an
 * MCP client gets the same name check, repair, preflight, policy, timeout and error shapes as
 * any other call:
 *   - an unknown or unusable tool name is a JSON-RPC error (-32602) whose data is the invalid
 *     payload;
 *   - a call that could not run (invalid_arguments, denied) or that failed is a result with
 *     isError true, whose text and structuredContent are what rein feeds its own model (the
 *     invalid payload, or the normalized error result);
 *   - a successful output that already is MCP content ({"content": [...],
 *     "structuredContent"?}) is passed through, so a skill can return images, audio and
 *     embedded resources; any other output becomes one text block (JSON text unless it is a
 *     string) plus structuredContent when it is an object.
 * Runner events become notifications/progress (for requests with a progressToken, kept
 * strictly increasing; a call that reports nothing gets a heartbeat every
 * progress_interval_ms) and notifications/message (filtered by logging/setLevel).
 * notifications/cancelled triggers the call's cancellation handle. resources/list,
 * resources/templates/list and prompts/list answer with empty lists.
 *
 * Over HTTP: sessions (Mcp-Session-Id, made at initialize; 400 without one, 404 once it is
 * gone, DELETE ends it), MCP-Protocol-Version checked (400 for an unknown one), Origin and
 * Host checked against DNS rebinding (403 unless loopback or allowed), tools/call answered as
 * Server-Sent Events when the client accepts them (a priming event with an id and the retry
 * advice first, for 2025-11-25 sessions; every event has an id), and resumption: a GET with
 * Last-Event-ID replays what the client missed of that request's stream and goes on with it.
 * A GET without Last-Event-ID gets 405 (rein sends nothing outside requests).
 *
 * As a client, rein joins the tools of the MCP servers named in its configuration
 * ({"mcpServers": {"name": {"command", "args", "env", "cwd"} | {"url", "headers",
 * "bearer_token"}}}) to a registry as tools with runner kind "mcp"; see rein_mcp_clients_*.
 *
 * Threading: a rein_mcp_server serves many sessions and calls at once (its own worker pool
 * runs the calls); configure it from one thread before it serves. rein_mcp_clients are safe
 * to call from many threads once connected.
 */
#ifndef REIN_MCP_H
#define REIN_MCP_H

#include <rein/server.h>
#include <rein/tools.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The newest protocol revision rein speaks. */
#define REIN_MCP_PROTOCOL_VERSION "2025-11-25"

typedef struct rein_mcp_server rein_mcp_server;

struct rein_mcp_server_opts {
    const char *name;           /* serverInfo.name; NULL: "rein" */
    const char *instructions;   /* initialize's instructions; NULL: none */
    rein_ledger *ledger;        /* every call is recorded here; borrowed, may be NULL */
    rein_call_policy_fn policy; /* NULL: allow every call (MCP clients ask their users) */
    void *policy_data;
    unsigned threads;             /* workers that run tools/call; 0: 8 */
    int64_t progress_interval_ms; /* heartbeat progress of a silent call; 0: 1000; < 0: none */
    int64_t sse_retry_ms;         /* the retry advice of SSE priming events; 0: 1000 */
    /* HTTP: a tools/call stream is ended after this long while the call goes on, and the
     * client resumes it with Last-Event-ID (SSE polling); 0: streams stay open. */
    int64_t sse_close_ms;
    /* HTTP: hosts and origins accepted besides loopback ones (localhost, 127.0.0.1, [::1]):
     * comma-separated host names or host:port, or "*" to accept any. NULL: loopback only. */
    const char *allowed_hosts;
    size_t max_sessions;      /* HTTP: sessions kept at once; 0: 1024 */
    int64_t session_idle_ms;  /* HTTP: a session unused this long ends; 0: one hour */
    size_t max_message_bytes; /* stdio: a longer line is refused; 0: 4 MiB */
};

/*
 * New server for reg's tools (borrowed; must outlive the server). opts may be NULL (the
 * defaults); its strings are copied. NULL with err set on failure.
 */
REIN_EXTERN rein_mcp_server *rein_mcp_server_new(const rein_registry *reg,
                                                 const struct rein_mcp_server_opts *opts,
                                                 rein_error *err);
/*
 * Cancels the calls still running, waits for them and frees the server. Stop the HTTP server
 * whose routes use it first. NULL is a no-op.
 */
REIN_EXTERN void rein_mcp_server_free(rein_mcp_server *srv);
/*
 * Adds POST, GET and DELETE /mcp to http (borrowed). srv must outlive http's serving (stop
 * http before freeing srv).
 */
REIN_EXTERN rein_err rein_mcp_server_add_routes(rein_mcp_server *srv, rein_server *http,
                                                rein_error *err) REIN_WUR;
/*
 * Serves one client over stdio: newline-delimited JSON-RPC messages read from in_fd, answers
 * and notifications written to out_fd. Returns when in_fd reaches end of file (after
 * cancelling the calls still running and waiting for them), or REIN_EIO when reading fails.
 * Malformed lines are answered with JSON-RPC errors and do not end the session.
 */
REIN_EXTERN rein_err rein_mcp_server_run_stdio(rein_mcp_server *srv, int in_fd, int out_fd,
                                               rein_error *err) REIN_WUR;

#ifdef __cplusplus
}
#endif
#endif /* REIN_MCP_H */
