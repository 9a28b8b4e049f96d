/*
 * rein/mcp.h: the Model Context Protocol, both ways.
 *
 * As a server, rein offers its registry's tools to MCP clients, over stdio (`rein mcp serve`)
 * and over Streamable HTTP at /mcp (`rein serve`), for protocol revisions 2026-07-28
 * (stateless), 2025-11-25, 2025-06-18 and 2025-03-26. Every tools/call runs through rein_call_run(), so a call from an
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
 * notifications/cancelled triggers the call's cancellation handle. A tools/call names a tool
 * exactly as tools/list gave it: anything else is -32602, never a repaired name. The tool
 * list follows the registry (tools.listChanged: sessions get notifications/tools/
 * list_changed). Tools declare outputSchema when they say what their object output is.
 *
 * Besides tools: resources (files under opts.roots as file:// URIs, stored conversations as
 * rein://conversations/{id}/transcript and .../ledger, what a folder declares in resources.json,
 * URI templates for each, subscriptions with notifications/resources/updated), prompts (rein's
 * own: tool_use_rules and review_tool_call, and prompt templates from folders) and
 * completion/complete for their arguments; see rein_mcp_server_load_dir().
 *
 * Over HTTP: sessions (Mcp-Session-Id, made at initialize; 400 without one, 404 once it is
 * gone, DELETE ends it), MCP-Protocol-Version checked (400 for an unknown one), Origin and
 * Host checked against DNS rebinding (403 unless loopback or allowed), a POST's Accept must
 * list application/json and text/event-stream (406 else), tools/call answered as
 * Server-Sent Events (a priming event with an id and the retry
 * advice first, for 2025-11-25 sessions; every event has an id), and resumption: a GET with
 * Last-Event-ID replays what the client missed of that request's stream and goes on with it.
 * A GET without Last-Event-ID opens the session's standalone stream (what the server says
 * outside requests); a newer GET takes it over. Quick requests are answered on the network
 * thread; other calls run on the server's pool behind detached streams, so no call holds an
 * HTTP thread. A second initialize on a session is refused.
 *
 * 2026-07-28, the stateless revision, is served next to the others (a dual-era server): a
 * request whose params._meta names "io.modelcontextprotocol/protocolVersion" needs no
 * initialize and no session; its _meta must also carry clientCapabilities (-32602 else), and
 * its version must be 2026-07-28 (-32022 with the supported versions else). server/discover
 * answers the supported versions, capabilities and instructions. Results carry resultType and
 * the server's identity in _meta; the listing methods and resources/read carry ttlMs and
 * cacheScope. notifications/message goes only to a request that set a logLevel in its _meta;
 * ping, logging/setLevel, resources/subscribe and initialize itself are unknown methods.
 * Over HTTP such a request gets no Mcp-Session-Id, its MCP-Protocol-Version, Mcp-Method and
 * Mcp-Name headers must match the body (400 with -32020 else; Mcp-Name may be base64 as
 * "=?base64?...?="), and so must the Mcp-Param-NAME header of each tools/call argument whose
 * schema says "x-mcp-header": "NAME" (plain or base64), the revision's errors are 400 and an
 * unknown method 404, a streamed call's events have no ids, and closing the stream cancels the
 * call. A process skill's questions to a stateless client become input-required results
 * (SEP-2322; decision 0031). subscriptions/listen opens a long-lived stream (stdio: until
 * notifications/cancelled; HTTP: an event stream, until it is closed): acknowledged first with
 * what rein honours (toolsListChanged, resourceSubscriptions; its prompt and resource lists do
 * not change), then notifications/tools/list_changed and notifications/resources/updated, each
 * with the subscription's id in _meta; at most half the worker pool listens at once.
 *
 * As a client, rein joins the tools of the MCP servers named in its configuration
 * ({"mcpServers": {"name": {"command", "args", "env", "cwd"} | {"url", "headers",
 * "bearer_token"}}}) to a registry as tools with runner kind "mcp"; see rein_mcp_clients_*.
 * Started with rein_mcp_clients_start(), servers connect in the background, come back after
 * they fail or are lost, and their tools follow notifications/tools/list_changed (the registry
 * changes while in use); rein_mcp_clients_connect() + _register() connect once, in the
 * caller's thread (one-shot commands).
 *
 * The client starts with initialize (2025-11-25 and older); a server that refuses it is asked
 * server/discover, and one that speaks 2026-07-28 is then used statelessly: every request
 * carries the revision's _meta, over HTTP with the MCP-Protocol-Version, Mcp-Method and
 * Mcp-Name headers (Mcp-Name in the base64 form when it is not plain ASCII), no session and
 * no GET stream. A server that speaks both is used in the older revisions, whose sessions
 * carry list_changed (rein as a client does not use subscriptions/listen yet).
 *
 * Threading: a rein_mcp_server serves many sessions and calls at once (its own worker pool
 * runs the calls); configure it from one thread before it serves. rein_mcp_clients are safe
 * to call from many threads once connected.
 */
#ifndef REIN_MCP_H
#define REIN_MCP_H

#include <rein/server.h>
#include <rein/store.h>
#include <rein/tools.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The newest protocol revision rein speaks with initialize (2026-07-28 has none). */
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
    /* Resources: the files under these folders (NULL-terminated; copied) as file:// URIs,
     * NULL: none; the conversations of store (borrowed; must outlive the server) as
     * rein://conversations/{id}/transcript and .../ledger, NULL: none. */
    const char *const *roots;
    rein_store *store;
    /* Serve only the stateless revision (2026-07-28): initialize is an unknown method (-32601;
     * over HTTP with 404), as a server that dropped the older revisions answers it. */
    bool stateless_only;
    /* Signs the requestState of input-required results (2026-07-28): servers given the same
     * secret accept each other's states (replicas; restarts). NULL or "": a key kept in the
     * state folder ($REIN_STATE_DIR, else $XDG_STATE_HOME/rein, else ~/.local/state/rein,
     * file mcp-request-state.key, mode 0600, made at first use), else a random one per
     * server. Copied. */
    const char *state_secret;
};

/*
 * New server for reg's tools (borrowed; must outlive the server). opts may be NULL (the
 * defaults); its strings are copied. NULL with err set on failure.
 */
REIN_EXTERN rein_mcp_server *rein_mcp_server_new(const rein_registry *reg,
                                                 const struct rein_mcp_server_opts *opts,
                                                 rein_error *err);
/*
 * Loads what a folder offers besides tools: dir/resources.json ({"resources": [{uri, name,
 * title?, description?, mimeType?, text | blob | file}], "templates": [{uriTemplate, name,
 * ..., text | blob}]}; a template's {name} in its text takes the URI's value) and the prompt
 * templates of dir/prompts/ (one JSON file each: {name, title?, description?, arguments?:
 * [{name, description?, required?, values?}], messages: [{role, content}]}, "{{name}}" in the
 * messages' strings replaced by the arguments). Either may be absent. REIN_EINVAL names the
 * file and the problem. Call before serving.
 */
REIN_EXTERN rein_err rein_mcp_server_load_dir(rein_mcp_server *srv, const char *dir,
                                              rein_error *err) REIN_WUR;
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
 * and notifications written to out_fd. Returns when in_fd reaches end of file (the calls still
 * running get a second to finish, then are cancelled and waited for), or REIN_EIO when reading
 * fails.
 * Malformed lines are answered with JSON-RPC errors and do not end the session.
 */
REIN_EXTERN rein_err rein_mcp_server_run_stdio(rein_mcp_server *srv, int in_fd, int out_fd,
                                               rein_error *err) REIN_WUR;

/* ---------------------------------------------------------------------------------------------
 * Client: the MCP servers rein uses.
 *
 * A configuration names servers the common way:
 *   {"mcpServers": {
 *      "fs":   {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
 *               "env": {"KEY": "${FROM_REIN_ENV}"}, "cwd": "..."},
 *      "docs": {"url": "https://example.com/mcp", "headers": {"X-Team": "a"},
 *               "bearer_token": "${DOCS_TOKEN}"}}}
 * with "timeout_ms" (a tool call's limit, default 60000), "connect_timeout_ms" (default
 * 30000) and "max_message_bytes" (a longer message from the server closes the connection;
 * default 16 MiB) for either; "type" may say "stdio" or "http" ("sse", the old transport, is refused).
 * Other keys are ignored, so one file can serve several programs. "${VAR}" is taken from
 * rein's environment. A stdio server starts without a shell, in a process group of its own,
 * with only PATH, HOME, LANG, LC_ALL, LC_CTYPE, TMPDIR, USER, LOGNAME, SHELL and TERM from
 * rein's environment plus its "env": never rein's provider keys.
 *
 * rein_mcp_clients_register() adds each server's tools to a registry as "<server>__<tool>"
 * (see src/mcp/runner.c for the whole rule, which settles clashes the same way whatever the
 * order of the configuration), with runner kind "mcp": every call goes through
 * rein_call_run(), so repair, preflight against the server's inputSchema, policy, timeout and
 * ledger apply. A result with isError is a tool error (execution_failed) with the result's
 * text; a JSON-RPC error -32602 is invalid_arguments; a timeout or a cancel sends
 * notifications/cancelled. Progress and log notifications become the call's events. A server
 * that exits fails the calls it had running (exit status and the end of its stderr in the
 * message) and is started again by the next call. Over HTTP, a stream that ends before the
 * answer is resumed with Last-Event-ID after the server's retry delay, and a session the
 * server forgot (404) is initialized again.
 *
 * A skill folder may also hold a manifest whose runner is one server's tool:
 *   "runner": {"kind": "mcp", "tool": "read_file", "command": "...", "args": [...]}
 * (or "url"); that server is started at the first call. Such manifests need the runner kind
 * in the registry first: rein_mcp_register_runner().
 * -------------------------------------------------------------------------------------------*/

typedef struct rein_mcp_clients rein_mcp_clients;

/* New empty set of servers; NULL when memory is exhausted. */
REIN_EXTERN rein_mcp_clients *rein_mcp_clients_new(void);
/*
 * Frees the set. Connections the registry's tools still use stay open until the registry is
 * freed; the others are closed (stdio servers stopped, HTTP sessions deleted). NULL is a no-op.
 */
REIN_EXTERN void rein_mcp_clients_free(rein_mcp_clients *set);
/*
 * Adds the servers of config's "mcpServers" object (config borrowed; other members ignored;
 * no mcpServers is no server). base_dir (may be NULL) resolves a relative "cwd". Nothing is
 * started. REIN_EINVAL names the entry and the problem; REIN_EEXIST for a name given twice.
 */
REIN_EXTERN rein_err rein_mcp_clients_add_config(rein_mcp_clients *set, const json_t *config,
                                                 const char *base_dir, rein_error *err) REIN_WUR;
/* The same from a JSON file (relative paths are relative to its folder). */
REIN_EXTERN rein_err rein_mcp_clients_load_file(rein_mcp_clients *set, const char *path,
                                                rein_error *err) REIN_WUR;
/* Adds one server: entry is the value an mcpServers member would have (borrowed). */
REIN_EXTERN rein_err rein_mcp_clients_add(rein_mcp_clients *set, const char *name,
                                          const json_t *entry, rein_error *err) REIN_WUR;
REIN_EXTERN size_t rein_mcp_clients_count(const rein_mcp_clients *set);
/*
 * Starts and initializes every server at once, and lists its tools; each gets timeout_ms
 * (0: its connect_timeout_ms). A server that fails is recorded with the reason (see
 * rein_mcp_clients_status_json) and has no tools. Returns how many are ready.
 */
REIN_EXTERN size_t rein_mcp_clients_connect(rein_mcp_clients *set, int64_t timeout_ms);
/*
 * Starts every server in the background and returns at once: each connects (tried again with
 * a growing pause, from half a second up to 30 s, while it fails, and again after it is lost:
 * a stdio server that exits, an HTTP server that cannot be reached), its tools join reg (taken
 * as borrowed: it must outlive the set) as soon as it is ready, and follow its
 * notifications/tools/list_changed (tools that left are removed, changed ones replaced). A
 * call to a server that is down fails at once, saying when rein tries again; its status says
 * the same (rein_mcp_clients_status_json's retry_in_ms). No server may be added afterwards.
 * REIN_ESTATE when already started.
 */
REIN_EXTERN rein_err rein_mcp_clients_start(rein_mcp_clients *set, rein_registry *reg,
                                            rein_error *err) REIN_WUR;
/*
 * Adds the ready servers' tools to reg under the naming rule (a tool already there from an
 * earlier call stays; one the server dropped leaves). A tool that cannot join (a schema rein cannot compile, no unique name) is
 * left out and recorded as a problem of its server. Fails only with REIN_ENOMEM/REIN_EINVAL.
 * The tools keep their servers' connections open; free reg before exiting.
 */
REIN_EXTERN rein_err rein_mcp_clients_register(rein_mcp_clients *set, rein_registry *reg,
                                               rein_error *err) REIN_WUR;
/*
 * New array, one object per server: {name, transport ("stdio"|"http"), target (command or
 * URL), state ("not connected"|"ready"|"failed"|"exited"), error?, protocolVersion?,
 * serverInfo?, tools: [{id, name}], problems: [text]}. NULL when memory is exhausted.
 */
REIN_EXTERN json_t *rein_mcp_clients_status_json(const rein_mcp_clients *set);
/*
 * OAuth (docs/decisions/0024): an HTTP server that answers 401 gets the token stored for it
 * (mode 0600 in $REIN_STATE_DIR, else $XDG_STATE_HOME/rein, else ~/.local/state/rein), a
 * refreshed one, or one from the client_credentials grant its "oauth" entry configures. With
 * allow set, a server without any of these starts the browser flow in the calling thread: the
 * address is printed on stderr (and opened with $REIN_MCP_OAUTH_OPEN, else xdg-open when
 * there is a display) and the answer awaited on a 127.0.0.1 port. Off by default, so servers
 * connecting in the background never wait for a person. Call before connecting.
 */
REIN_EXTERN void rein_mcp_clients_allow_login(rein_mcp_clients *set, bool allow);

/* What rein, as a client, may be asked by the servers it calls (rein_mcp_clients_offer).
 * Roots are not among them: a server asks for them about its session (often right after
 * initialize), not about a call, and rein's roots are its own (--root), not its client's. */
enum {
    REIN_MCP_OFFER_SAMPLING = 1u << 0,    /* sampling/createMessage */
    REIN_MCP_OFFER_ELICITATION = 1u << 1, /* elicitation/create (forms) */
    REIN_MCP_OFFER_ALL = 3u,
};
/*
 * Declares the capabilities in offers (REIN_MCP_OFFER_*) when the servers of set initialize,
 * and passes each such request a server sends while one of rein's tools/call requests runs to
 * that call's asker (rein_call_opts.ask, seen by the runner as rein_invocation.ask): the MCP
 * server rein itself runs sets one per call, so a remote server's question reaches rein's own
 * client; an embedding program may set its own. The asker's answer goes back to the server;
 * -32601 when the call has no asker or its client lacks the capability, -32603 when the asker
 * failed (its message said). A request that says nothing of its call (over stdio, or on the
 * HTTP standalone stream) while several calls run goes to one of them when all have the same
 * non-NULL rein_call_opts.asker (one client answers for all), else -32603: rein cannot tell
 * which call asked. Default 0: nothing declared, every such request refused. Call after adding
 * the servers, before connecting.
 */
REIN_EXTERN void rein_mcp_clients_offer(rein_mcp_clients *set, unsigned offers);
/*
 * An answer to elicitation/create (params borrowed) that accepts the form with the defaults
 * its requestedSchema gives (SEP-1034): {"action": "accept", "content": {field: default}} with
 * every property that has a default of its own type (a string default of an enum must be one
 * of its values); or, when a required property has none, {"action": "decline"} and *why (may
 * be NULL) names it (static text). A URL-mode elicitation is declined. NULL only when out of
 * memory. For programs that answer forms without a person (`rein mcp call --elicit defaults`).
 */
REIN_EXTERN json_t *rein_mcp_elicit_defaults(const json_t *params, const char **why);
/*
 * An answer to elicitation/create (params borrowed) from a person: writes the server's message
 * to out and asks there whether to accept, decline or cancel, then, on accept, for each field
 * of the requestedSchema in turn, reading one line per entry from in (both borrowed). An entry
 * is read as the field's type (a choice by its number, value or title; yes/no for a boolean;
 * comma-separated choices for an array), checked against the field's schema (bounds, lengths,
 * formats), and asked again, with the reason, when it does not fit; an empty one takes the
 * default, or leaves an optional field out. The end of input cancels. A URL-mode elicitation
 * shows the URL; accept means the person will open it. Returns {"action", "content"?} (new);
 * NULL only when out of memory. For `rein mcp call` at a terminal.
 */
REIN_EXTERN json_t *rein_mcp_elicit_ask(const json_t *params, FILE *in, FILE *out);
/*
 * `rein mcp login`: forgets what is stored for the HTTP server name and connects it with the
 * browser flow allowed, waiting up to timeout_ms (0: ten minutes). *authorized tells whether
 * a token was obtained (false: the server asked for none). REIN_ENOTFOUND for an unknown name,
 * REIN_EINVAL for a stdio server.
 */
REIN_EXTERN rein_err rein_mcp_clients_login(rein_mcp_clients *set, const char *name,
                                            int64_t timeout_ms, bool *authorized,
                                            rein_error *err) REIN_WUR;
/* The registry id given to server's tool named tool (its MCP name), or NULL. Borrowed. */
REIN_EXTERN const char *rein_mcp_clients_tool_id(const rein_mcp_clients *set, const char *server,
                                                 const char *tool);
/*
 * Registers the runner kind "mcp" in reg (rein_registry_add_runner_kind), so skill folders can
 * hold manifests run by an MCP server's tool. REIN_EEXIST when it is already there.
 * (rein_mcp_clients_register needs no such step.)
 */
REIN_EXTERN rein_err rein_mcp_register_runner(rein_registry *reg, rein_error *err) REIN_WUR;

#ifdef __cplusplus
}
#endif
#endif /* REIN_MCP_H */
