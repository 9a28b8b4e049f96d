/*
 * Internals of the MCP module (src/mcp/): the JSON-RPC message codec shared by both sides,
 * the SSE event reader of the client, the protocol core of the server (sessions, calls, sinks)
 * that the stdio and Streamable HTTP transports drive, and the client's connection object.
 * Only src/mcp/, the fuzz targets and the tests include this; everyone else uses <rein/mcp.h>.
 */
#ifndef REIN_MCP_INT_H
#define REIN_MCP_INT_H

#include <rein/mcp.h>
#include <rein/store.h>

#include "core/internal.h"

#include <pthread.h>
#include <stdatomic.h>

/* JSON-RPC 2.0 error codes, and the ones MCP adds. */
#define REIN__MCP_PARSE_ERROR        (-32700)
#define REIN__MCP_INVALID_REQUEST    (-32600)
#define REIN__MCP_METHOD_NOT_FOUND   (-32601)
#define REIN__MCP_INVALID_PARAMS     (-32602)
#define REIN__MCP_INTERNAL_ERROR     (-32603)
#define REIN__MCP_SESSION_NOT_FOUND  (-32001)
#define REIN__MCP_RESOURCE_NOT_FOUND (-32002)
#define REIN__MCP_REQUEST_CANCELLED  (-32800)
/* The codes 2026-07-28 defines (answered with HTTP 400 over Streamable HTTP). */
#define REIN__MCP_HEADER_MISMATCH     (-32020)
#define REIN__MCP_MISSING_CLIENT_CAP  (-32021)
#define REIN__MCP_UNSUPPORTED_VERSION (-32022)

/* The protocol revisions rein speaks, newest first. */
#define REIN__MCP_LATEST "2025-11-25"
bool rein__mcp_version_supported(const char *version);
/* True when version is at least 2025-11-25 (clients that read SSE priming events). */
bool rein__mcp_version_primes(const char *version);
/* pthread_cond_timedwait for ms milliseconds from now (mu held), for the module's waits. */
void rein__mcp_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t ms);
/* Every revision rein speaks, the stateless one first, as a new JSON array of strings. */
json_t *rein__mcp_versions_json(void);

/* ---- modern.c: the stateless revision (2026-07-28) --------------------------------------- */

/* The stateless revision: no initialize; every request names its version in params._meta. */
#define REIN__MCP_MODERN       "2026-07-28"
#define REIN__MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define REIN__MCP_META_CAPS    "io.modelcontextprotocol/clientCapabilities"
#define REIN__MCP_META_INFO    "io.modelcontextprotocol/clientInfo"
#define REIN__MCP_META_LEVEL   "io.modelcontextprotocol/logLevel"
#define REIN__MCP_META_SERVER  "io.modelcontextprotocol/serverInfo"
#define REIN__MCP_META_SUB     "io.modelcontextprotocol/subscriptionId"
bool rein__mcp_version_modern(const char *version);

/* ---- request_state.c: the requestState of input-required results (SEP-2322) ---- */
/*
 * Seals answers (borrowed: the client's answers so far, {key: result}) for the next round of a
 * call of tool with args (borrowed) under key: a new string (rein_free), NULL when memory is
 * exhausted. The state is readable (base64 JSON) but signed (HMAC-SHA256), and expires.
 */
char *rein__mcp_state_seal(const uint8_t key[32], const char *tool, const json_t *args,
                           const json_t *answers);
/*
 * Opens a state a client sent back: REIN_OK with *answers new when key signed it for this tool
 * and these arguments and it has not expired; else REIN_EINVALID with why (size bytes) saying
 * what failed. The text is untrusted.
 */
rein_err rein__mcp_state_open(const uint8_t key[32], const char *state, const char *tool,
                              const json_t *args, json_t **answers, char *why, size_t size);
/*
 * The key states are signed with: HMAC-SHA256(secret, a fixed label) when secret (borrowed) is
 * not empty; else the one kept in the state folder's mcp-request-state.key (made at first use,
 * mode 0600; one that others can read is refused), so that states outlive a restart. REIN_OK
 * with where (size bytes) naming the source; else where says why (the caller then draws a
 * random key).
 */
rein_err rein__mcp_state_key(const char *secret, uint8_t key[32], char *where, size_t size);
/* The state folder: $REIN_STATE_DIR, else $XDG_STATE_HOME/rein, else ~/.local/state/rein. */
bool rein__mcp_state_dir(char *out, size_t size);
/* Creates dir (the state folder) and its missing parents; the last one with mode 0700. */
rein_err rein__mcp_make_state_dir(const char *dir, rein_error *err);
struct rein__mcp_msg;
/* The version a request of the stateless revisions names in params._meta (borrowed from
 * msg; "" when the value is not a string), or NULL for a request without one. */
const char *rein__mcp_request_version(const struct rein__mcp_msg *msg);
/* True for an initialize that opens a session (it has params.protocolVersion, or no _meta
 * version); one of 2026-07-28 is a request for a method that revision does not have. */
bool rein__mcp_is_legacy_initialize(const struct rein__mcp_msg *msg);
/* A stateless request's _meta: the version a string, the capabilities an object, the log
 * level (if any) a level name. False with why (the -32602 message) when it is not so. */
bool rein__mcp_check_meta(const struct rein__mcp_msg *msg, char *why, size_t why_size);
/* A header value as sent (visible ASCII, spaces, tabs; the whitespace around it dropped) or in
 * the base64 sentinel form "=?base64?...?=", decoded into a new string; NULL when it is
 * neither (or out of memory). */
char *rein__mcp_header_decode(const char *value);
/*
 * Streamable HTTP's checks of a stateless request: the MCP-Protocol-Version and Mcp-Method
 * headers (each may be NULL: missing) equal version and msg->method, and Mcp-Name equals
 * params.name (tools/call, prompts/get) or params.uri (resources/read). False with why (the
 * -32020 message) when they do not.
 */
/*
 * SEP-2243's custom headers: each argument of a tools/call whose property in schema (the tool's
 * parameters, borrowed) declares "x-mcp-header": NAME is mirrored in Mcp-Param-NAME (plain or
 * in the base64 form), which header(ud, name) looks up. False with why (the -32020 message)
 * when one is missing, given without its argument, malformed, or different from the body.
 */
bool rein__mcp_check_param_headers(const json_t *schema, const json_t *args,
                                   const char *(*header)(void *ud, const char *name), void *ud,
                                   char *why, size_t why_size);
bool rein__mcp_check_headers(const struct rein__mcp_msg *msg, const char *version,
                             const char *version_header, const char *method_header,
                             const char *name_header, char *why, size_t why_size);

/* ---- jsonrpc.c: one JSON-RPC message ---------------------------------------------------- */

enum rein__mcp_kind {
    REIN__MCP_REQUEST = 0,      /* id and method */
    REIN__MCP_NOTIFICATION = 1, /* method, no id */
    REIN__MCP_RESPONSE = 2,     /* id and result */
    REIN__MCP_ERROR = 3,        /* id (maybe null) and error */
};

/*
 * A decoded message. doc owns everything; the other members are borrowed from it. id is a
 * string or an integer (NULL for notifications; JSON null for an error response to a message
 * whose id could not be read).
 */
struct rein__mcp_msg {
    json_t *doc;
    enum rein__mcp_kind kind;
    const json_t *id;
    const char *method;
    const json_t *params; /* an object, or NULL when absent */
    const json_t *result;
    int error_code;
    const char *error_message;
    const json_t *error_data;
};

/*
 * Decodes len bytes of text as one JSON-RPC 2.0 message as MCP restricts it (no batches; ids
 * are strings or integers, never null in requests; params an object). Returns REIN_OK and
 * fills msg; else:
 *   REIN_ETOOBIG   len > max_len (0: no limit)
 *   REIN_EPARSE    not JSON (answer -32700)
 *   REIN_EINVALID  JSON but not a valid message (answer -32600)
 * with err set and *bad_id (may be NULL) a new reference to the message's id when it could be
 * read, so the error response can carry it (else NULL). On REIN_EINVALID msg->kind is
 * REIN__MCP_RESPONSE when the message was meant as a response (an object with "result" or
 * "error" and no "method"): such a message is logged and dropped, never answered.
 */
rein_err rein__mcp_decode(const char *text, size_t len, size_t max_len, struct rein__mcp_msg *msg,
                          json_t **bad_id, rein_error *err);
/* Releases msg->doc and clears msg. */
void rein__mcp_msg_release(struct rein__mcp_msg *msg);
/* The JSON-RPC error code for a decoding failure (REIN_EPARSE → -32700, else -32600). */
int rein__mcp_decode_error_code(rein_err rc);

/*
 * Encoders: each appends one compact message (no newline) to b. id and values are borrowed;
 * id NULL writes null. Errors are the buffer's (REIN_ENOMEM, REIN_ETOOBIG).
 */
rein_err rein__mcp_write_result(struct rein_buf *b, const json_t *id, const json_t *result);
rein_err rein__mcp_write_error(struct rein_buf *b, const json_t *id, int code, const char *message,
                               const json_t *data);
rein_err rein__mcp_write_notification(struct rein_buf *b, const char *method, const json_t *params);
rein_err rein__mcp_write_request(struct rein_buf *b, int64_t id, const char *method,
                                 const json_t *params);
/* The id as a key ("\"abc\"" or "42") into out; false when it is not a string or integer. */
bool rein__mcp_id_key(const json_t *id, char *out, size_t size);

/* MCP logging levels in order of severity: debug 0 … emergency 7; -1 for anything else. */
int rein__mcp_level_index(const char *level);
const char *rein__mcp_level_name(int index);

/* ---- sse.c: the client's reader of text/event-stream bodies ----------------------------- */

/*
 * One event as the WHATWG rules dispatch it: data lines joined with "\n", the last id seen on
 * the stream (the reader remembers it across events), the event type (NULL: "message").
 * Called for every event that has data, including empty data (priming events).
 */
typedef rein_err (*rein__mcp_sse_fn)(void *ud, const char *event, const char *id, const char *data,
                                     size_t len);

struct rein__mcp_sse {
    struct rein_buf line;
    struct rein_buf data;
    char event[64];
    char last_id[256];
    bool has_data;    /* a data field was seen since the last dispatch */
    bool bom_checked; /* the stream's first bytes were checked for a BOM */
    bool cr;          /* the last byte was a CR (a following LF ends the same line) */
    int64_t retry_ms; /* the last retry field; -1 when none was sent */
    rein__mcp_sse_fn fn;
    void *ud;
};

/* max bounds one line and one event's data (0: 16 MiB). */
void rein__mcp_sse_init(struct rein__mcp_sse *s, size_t max, rein__mcp_sse_fn fn, void *ud);
void rein__mcp_sse_release(struct rein__mcp_sse *s);
/* Feeds bytes; REIN_ETOOBIG past the limit, or the callback's error. */
rein_err rein__mcp_sse_feed(struct rein__mcp_sse *s, const char *p, size_t len) REIN_WUR;

/* ---- result.c: the server side's MCP shapes of a call -------------------------------------- */

/* New CallToolResult for a finished call (ok or not): structuredContent is the normalized
 * result (result.c says when not). NULL when memory is exhausted. */
json_t *rein__mcp_call_result_json(rein_call_result *res);
/*
 * The MCP tool result for a runner output: an output that already is MCP content
 * ({"content": [...], "structuredContent"?, "_meta"?}) passes through; anything else becomes
 * one text block (a string as is, other values as JSON text) plus structuredContent when it
 * is an object. New reference or NULL.
 */
json_t *rein__mcp_output_to_result(const json_t *output);
/* True when v has the shape rein__mcp_output_to_result() passes through. */
bool rein__mcp_is_content_result(const json_t *v);

/* ---- resources.c: what the server offers as resources ----------------------------------- */

struct rein__mcp_resources;
struct rein__mcp_resources *rein__mcp_resources_new(void);
void rein__mcp_resources_free(struct rein__mcp_resources *r);
/* Files under roots (NULL-terminated; NULL: none) become file:// resources. */
rein_err rein__mcp_resources_set_roots(struct rein__mcp_resources *r, const char *const *roots,
                                       rein_error *err);
/* Conversations of store (borrowed) become rein:// resources; NULL: none. */
void rein__mcp_resources_set_store(struct rein__mcp_resources *r, rein_store *store);
/* Loads a resources.json: {"resources": [...], "templates": [...]} (see resources.c). */
rein_err rein__mcp_resources_load_file(struct rein__mcp_resources *r, const char *path,
                                       rein_error *err);
bool rein__mcp_resources_any(const struct rein__mcp_resources *r);
/* One page of resources/list (new array); *next gets the next cursor (new) or NULL.
 * REIN_EINVAL in err for a cursor this server did not give. */
json_t *rein__mcp_resources_list(struct rein__mcp_resources *r, const char *cursor, char **next,
                                 rein_error *err);
/* resources/templates/list's array (new). */
json_t *rein__mcp_resources_templates(struct rein__mcp_resources *r);
/* resources/read's result {contents: [...]} (new); NULL with err: REIN_ENOTFOUND when there is
 * no such resource (also outside the roots), REIN_ETOOBIG, REIN_EIO, REIN_ENOMEM. */
json_t *rein__mcp_resources_read(struct rein__mcp_resources *r, const char *uri, rein_error *err);
/* What changes when the resource changes (new text; "" when it does not exist). */
char *rein__mcp_resources_fingerprint(struct rein__mcp_resources *r, const char *uri);
/* Completion values (new array) for variable var of the template tmpl. */
json_t *rein__mcp_resources_complete(struct rein__mcp_resources *r, const char *tmpl,
                                     const char *var, const char *prefix);
/* RFC 6570 matching of the forms the server uses ({name}, {+name}); vars (may be NULL) gets
 * the values. */
bool rein__mcp_uri_template_match(const char *tmpl, const char *uri, json_t *vars);

/* ---- prompts.c: what the server offers as prompts --------------------------------------- */

struct rein__mcp_prompts;
struct rein__mcp_prompts *rein__mcp_prompts_new(void);
void rein__mcp_prompts_free(struct rein__mcp_prompts *p);
/* Loads every *.json of dir (a prompts/ folder; absent: nothing) as a prompt template. */
rein_err rein__mcp_prompts_load_dir(struct rein__mcp_prompts *p, const char *dir, rein_error *err);
rein_err rein__mcp_prompts_load_file(struct rein__mcp_prompts *p, const char *path,
                                     rein_error *err);
/* prompts/list's array (new). */
json_t *rein__mcp_prompts_list(const struct rein__mcp_prompts *p);
/* prompts/get's result (new); NULL with err and *code (-32602 for an unknown prompt or a
 * missing argument). */
/*
 * What to ask the client for the required arguments of the prompt template name that args
 * (borrowed) lacks: elicitation/create params (new) with one string field each (its
 * description, its values as the choices), or NULL when none lacks (or no such template).
 */
json_t *rein__mcp_prompts_ask(const struct rein__mcp_prompts *p, const char *name,
                              const json_t *args);
json_t *rein__mcp_prompts_get(const struct rein__mcp_prompts *p, const rein_registry *reg,
                              const char *name, const json_t *args, int *code, rein_error *err);
/* Completion values (new array) for argument arg of prompt name; *found: the prompt exists. */
json_t *rein__mcp_prompts_complete(const struct rein__mcp_prompts *p, const rein_registry *reg,
                                   const char *name, const char *arg, const char *prefix,
                                   bool *found);

/* ---- server.c: the protocol core of rein as an MCP server ------------------------------- */

/*
 * Where the messages answering one client message go: the response, and the notifications
 * sent while a request runs. send is called from any thread (a call's worker, the heartbeat
 * thread) and must be safe for that; final marks the response that ends the request.
 */
struct rein__mcp_sink {
    void (*send)(struct rein__mcp_sink *sink, const char *json, size_t len, bool final);
    /* The code of the error response last sent through the sink (set just before send;
     * 0: none), so the HTTP transport can pick the status the stateless revision asks for. */
    atomic_int error_code;
};

/* One client's session (an HTTP Mcp-Session-Id, or the one stdio connection). */
struct rein__mcp_session;

struct rein__mcp_session *rein__mcp_session_new(rein_mcp_server *srv);
/* The same, cancelled also when parent (borrowed; NULL: the server's root) is triggered. */
struct rein__mcp_session *rein__mcp_session_new_under(rein_mcp_server *srv, rein_cancel *parent);
/*
 * Where the session's messages outside any request go (list_changed, resource updates): the
 * stdio connection, or the HTTP session's standalone stream. sink (borrowed) must stay valid
 * until it is replaced (NULL clears it).
 */
void rein__mcp_session_set_notify(struct rein__mcp_session *s, struct rein__mcp_sink *sink);
/* Sends json through the notify sink once the client is ready; false when it was not sent. */
bool rein__mcp_session_notify(struct rein__mcp_session *s, const char *json, size_t len);
struct rein__mcp_session *rein__mcp_session_ref(struct rein__mcp_session *s);
void rein__mcp_session_unref(struct rein__mcp_session *s);
/* Triggers the cancellation of every call the session has running. */
void rein__mcp_session_cancel_calls(struct rein__mcp_session *s, const char *reason);
/* The protocol version the session agreed on ("" before initialize). */
const char *rein__mcp_session_version(const struct rein__mcp_session *s);
bool rein__mcp_session_initialized(const struct rein__mcp_session *s);

/* Counts the session's jobs on the pool, so a transport can wait for them at its end. */
void rein__mcp_session_job_begin(struct rein__mcp_session *s);
void rein__mcp_session_job_end(struct rein__mcp_session *s);
/* Waits up to timeout_ms (negative: without limit); true when none is left. */
bool rein__mcp_session_wait_jobs(struct rein__mcp_session *s, int64_t timeout_ms);

/*
 * Handles one message of the session's client. Requests are answered through sink (exactly
 * once, unless the client cancelled the request); tools/call runs the call here, on the
 * calling thread. trace_id (may be NULL) becomes the call's trace id. A request that names its
 * version in params._meta (2026-07-28) is served statelessly, in a session of its own whose
 * calls are cancelled with sess; sess may be NULL for such requests (HTTP without a session).
 */
void rein__mcp_handle(rein_mcp_server *srv, struct rein__mcp_session *sess,
                      const struct rein__mcp_msg *msg, const char *trace_id,
                      struct rein__mcp_sink *sink);
/* True for the requests that may run long (tools/call): transports run them on the pool. */
bool rein__mcp_is_long(const struct rein__mcp_msg *msg);
/* True for a request that will ask sess's client something before it is answered (a
 * prompts/get lacking a required argument, from a client with a session that declared
 * elicitation): transports run it on the pool too, since the answer comes on the connection. */
bool rein__mcp_asks_first(rein_mcp_server *srv, struct rein__mcp_session *sess,
                          const struct rein__mcp_msg *msg);
/*
 * Asks sess's client (method and params borrowed) on behalf of the request msg, through its
 * sink, and waits for the answer (at most ten minutes). *result receives a new reference.
 * REIN_ECANCELED when the client cancelled msg or the session ended (msg is then not answered),
 * REIN_ETIMEDOUT, REIN_EIO when the client answered with an error (err says it).
 */
rein_err rein__mcp_ask_during(rein_mcp_server *srv, struct rein__mcp_session *sess,
                              const struct rein__mcp_msg *msg, struct rein__mcp_sink *sink,
                              const char *method, const json_t *params, json_t **result,
                              rein_error *err);
/* True for a tools/call that will not wait: a built-in, non-destructive tool whose limit is at
 * most a second, with no policy hook that could ask a person. */
bool rein__mcp_is_quick_call(rein_mcp_server *srv, const struct rein__mcp_msg *msg);
/* Runs fn(arg) on the server's call workers. */
rein_err rein__mcp_submit(rein_mcp_server *srv, void (*fn)(void *arg), void *arg) REIN_WUR;
/* The server's options (filled with defaults). */
const struct rein_mcp_server_opts *rein__mcp_opts(const rein_mcp_server *srv);
/* Sends an error response for a message that could not be decoded through sink. */
void rein__mcp_send_error(struct rein__mcp_sink *sink, const json_t *id, int code,
                          const char *message);
/* Sends a result (taken; NULL: out of memory, answered as an internal error) or an error with
 * data (borrowed, may be NULL) as the response to id. */
void rein__mcp_send_result(struct rein__mcp_sink *sink, const json_t *id, json_t *result);
void rein__mcp_send_error_data(struct rein__mcp_sink *sink, const json_t *id, int code,
                               const char *message, const json_t *data);
/* The server's parts the method files use. */
struct rein__mcp_resources *rein__mcp_srv_resources(rein_mcp_server *srv);
struct rein__mcp_prompts *rein__mcp_srv_prompts(rein_mcp_server *srv);
const rein_registry *rein__mcp_srv_registry(rein_mcp_server *srv);
/* resources/subscribe: remembers uri with its fingerprint now (REIN_ETOOBIG past 256). */
rein_err rein__mcp_session_subscribe(struct rein__mcp_session *s, const char *uri,
                                     const char *fingerprint);
void rein__mcp_session_unsubscribe(struct rein__mcp_session *s, const char *uri);
/* True when sess is a stateless request's (2026-07-28) whose _meta declares capability cap:
 * what it lacks can be asked through an input-required result. */
bool rein__mcp_session_stateless_offers(struct rein__mcp_session *sess, const char *cap);
/* methods.c: the resources and prompts methods and completion/complete; false when msg is
 * none of them. */
bool rein__mcp_handle_context(rein_mcp_server *srv, struct rein__mcp_session *sess,
                              const struct rein__mcp_msg *msg, struct rein__mcp_sink *sink);

/* ---- client.c: one connection to an MCP server ------------------------------------------ */

/* One mcpServers entry, parsed. Strings are owned. */
struct rein__mcp_conn_config {
    char *name;
    bool http;
    char **argv; /* stdio: command and args, NULL-terminated */
    char **env;  /* stdio: "KEY=VALUE" given in the configuration, NULL-terminated */
    char *cwd;
    char *url;                  /* http */
    char **headers;             /* http: "Name: value", NULL-terminated */
    int64_t timeout_ms;         /* a call fails after this long without a word of progress */
    int64_t max_timeout_ms;     /* ... and after this long in any case (the manifest's limit) */
    int64_t connect_timeout_ms; /* starting and initializing (0: 30 s) */
    size_t max_message_bytes;   /* a longer message from the server is refused (0: 16 MiB) */
    bool sse;                   /* url is a legacy HTTP+SSE stream (http is then false) */
    json_t *oauth;              /* http: the "oauth" object (client_id, ...), or NULL */
    bool oauth_off;             /* http: credentials are configured, or "oauth": false */
};

/*
 * Reads one mcpServers entry (borrowed) named name: {"command", "args"?, "env"?, "cwd"?} or
 * {"url", "headers"?, "bearer_token"?, "oauth"?}, with "timeout_ms"?, "max_timeout_ms"?,
 * "connect_timeout_ms"? and "max_message_bytes"? for both. "${VAR}" in env values, headers and the bearer token is replaced from rein's
 * environment. base_dir (may be NULL) resolves a relative cwd. REIN_EINVAL names the problem.
 */
rein_err rein__mcp_conn_config_parse(const char *name, const json_t *entry, const char *base_dir,
                                     struct rein__mcp_conn_config **out, rein_error *err);
void rein__mcp_conn_config_free(struct rein__mcp_conn_config *cfg);

struct rein__mcp_conn;

/* A new, unconnected connection; takes cfg (freed on failure too). NULL when out of memory. */
struct rein__mcp_conn *rein__mcp_conn_new(struct rein__mcp_conn_config *cfg);
struct rein__mcp_conn *rein__mcp_conn_ref(struct rein__mcp_conn *c);
/* The last reference closes the connection (the server process is stopped, the HTTP
 * session deleted). */
void rein__mcp_conn_unref(struct rein__mcp_conn *c);
const struct rein__mcp_conn_config *rein__mcp_conn_config(const struct rein__mcp_conn *c);
/*
 * Starts the server (stdio) and runs the handshake (initialize, notifications/initialized)
 * and, the first time or after list_changed, tools/list (every page); over HTTP it then opens
 * the standalone stream. Does nothing when already connected. timeout_ms <= 0 uses the
 * configured connect timeout; cancel (may be NULL) stops it early.
 */
rein_err rein__mcp_conn_connect(struct rein__mcp_conn *c, int64_t timeout_ms, rein_cancel *cancel,
                                rein_error *err) REIN_WUR;
/* The tools of the last tools/list (a new reference; NULL before the first). */
json_t *rein__mcp_conn_tools(struct rein__mcp_conn *c);
/*
 * Lists the tools again when notifications/tools/list_changed said they changed (and the
 * connection is ready); *changed tells whether it did. timeout_ms <= 0: the connect timeout.
 */
rein_err rein__mcp_conn_refresh_tools(struct rein__mcp_conn *c, int64_t timeout_ms, bool *changed,
                                      rein_error *err) REIN_WUR;
/* True when the connection is ready for calls. */
bool rein__mcp_conn_is_ready(struct rein__mcp_conn *c);
/* Whether a 401 may start the browser flow on this connection (rein_mcp_clients_allow_login). */
void rein__mcp_conn_allow_login(struct rein__mcp_conn *c, bool allow);
/* What the connection declares and passes on to a call's asker (REIN_MCP_OFFER_*;
 * rein_mcp_clients_offer). Takes effect at the next initialize. */
void rein__mcp_conn_offer(struct rein__mcp_conn *c, unsigned offers);
/* The fingerprint of a JSON value: SHA-256 of its compact text with sorted keys, in hex. */
bool rein__mcp_json_hash(const json_t *v, char out[65]);
/* True when the connection holds an OAuth access token. */
bool rein__mcp_conn_has_token(struct rein__mcp_conn *c);
/* Forgets c's OAuth state, in this process and in the token file. */
rein_err rein__mcp_conn_forget_token(struct rein__mcp_conn *c, rein_error *err);
/*
 * fn(ud) is told (from any thread, with no connection lock held) when the connection is lost
 * or the server's tool list changed; NULL stops it, waiting for a call in progress. Marks the
 * connection supervised: while it is down a call fails at once instead of connecting itself,
 * unless the supervisor's next attempt is due (rein__mcp_conn_retry_at).
 */
void rein__mcp_conn_watch(struct rein__mcp_conn *c, void (*fn)(void *ud), void *ud);
/* When the supervisor tries next (0: now), for calls and the status. */
void rein__mcp_conn_retry_at(struct rein__mcp_conn *c, int64_t when_ms);
/* {name, transport, target, state, error?, protocolVersion?, serverInfo?} (new). */
json_t *rein__mcp_conn_status_json(struct rein__mcp_conn *c);
/*
 * Calls the server's tool named tool (its MCP name) with inv's arguments, deadline and
 * cancellation; progress and log notifications for the call become inv's events. On success
 * reply->output is {"content", "structuredContent"?}. Connects (again) first when needed.
 */
rein_err rein__mcp_conn_call(struct rein__mcp_conn *c, const char *tool,
                             const struct rein_invocation *inv, struct rein_tool_reply *reply,
                             rein_error *err);
/* Counters for tests: responses whose id no request had, lines that were not messages. */
void rein__mcp_conn_counters(struct rein__mcp_conn *c, int64_t *unknown_ids, int64_t *garbage);

/* The runner kind "mcp" (runner.c): tools of MCP servers (rein_mcp_register_runner). */
extern const struct rein_runner_kind rein__mcp_runner;

/* ---- http_guard.c: what every request to /mcp is checked for ------------------------------ */

/* Hosts and origins accepted besides loopback ones (rein_mcp_server_opts.allowed_hosts). */
struct rein__mcp_hosts {
    char **allowed; /* "host" (any port) or "host:port" */
    size_t n;
    bool any; /* "*" */
};
rein_err rein__mcp_hosts_parse(struct rein__mcp_hosts *h, const char *list);
void rein__mcp_hosts_release(struct rein__mcp_hosts *h);
/* NULL when the Origin and Host headers (either may be NULL) are acceptable; else the name of
 * the header that is not ("Origin", "Host"): DNS rebinding protection. */
const char *rein__mcp_hosts_check(const struct rein__mcp_hosts *h, const char *origin,
                                  const char *host);
/* True when an Accept header value admits type, as RFC 9110 reads it (the most specific range
 * decides; q=0 refuses; no header admits nothing, since MCP requires one). */
bool rein__mcp_http_accepts(const char *accept, const char *type);

/* ---- http.c: the HTTP transport's state, freed with the server ---------------------------- */
struct rein__mcp_http;
void rein__mcp_http_free(struct rein__mcp_http *h);
/* Called by the server's ticker every 100 ms: ends polled streams, drops delivered ones. */
void rein__mcp_http_tick(struct rein__mcp_http *h);
/* The server's HTTP transport state (made by rein_mcp_server_add_routes), or NULL. */
struct rein__mcp_http *rein__mcp_http_get(rein_mcp_server *srv);
void rein__mcp_http_set(rein_mcp_server *srv, struct rein__mcp_http *h);

#endif /* REIN_MCP_INT_H */
