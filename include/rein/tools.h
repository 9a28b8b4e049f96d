/*
 * rein/tools.h: the tool registry, manifests, runners, the one call pipeline and the ledger.
 *
 * Every tool call in rein, whether a model proposed it in the ReAct loop, a plan step made it,
 * `POST /skills/{id}/invoke` or an MCP `tools/call` asked for it, or a replay repeats it, goes
 * through rein_call_run(), which runs these steps in this order and records each:
 *
 *   name check  empty, whitespace-only, symbol-only ("⚙"), control characters, invalid UTF-8
 *               or more than 64 bytes → invalid_name
 *   repair      exact; else case-insensitive; else separators normalised ("fileSearch",
 *               "file-search", "File Search" → "file_search"); else a "functions." or "tools."
 *               prefix stripped; else the one registered name within edit distance 2 →
 *               the real tool, or unknown_tool listing the available tools. A repaired name
 *               never runs a destructive tool (unknown_tool naming the exact one), and with
 *               rein_call_opts.exact_name nothing is repaired. Every repair is logged (info)
 *               and the ledger entry keeps the name as sent next to the tool.
 *   parse       arguments as an object, a JSON string, "" (means {}), or broken text →
 *               invalid_arguments with the parse error and its position (no guessing)
 *   preflight   the compiled parameter schema; every failure reported; defaults filled in
 *   policy      the caller's hook approves or denies (destructive tools, approvals) → denied
 *   execute     the tool's runner, with the manifest's timeout and a cancellation handle
 *   normalize   {ok, tool, call_id, trace_id, output | error, meta: {latency_ms}}
 *
 * A call that cannot run (invalid_name, unknown_tool, invalid_arguments, denied) also gets the
 * invalid payload that is handed back to the model:
 *   {tool, error: "Invalid arguments: …", errors: [{path, message}], receivedArgs, expected,
 *    hint: "Fix the arguments and call <tool> again."}
 *
 * Threading: a registry is read by any number of threads at once: rein_call_run() may run
 * concurrently on one registry (parallel tool calls), with all per-call state in the call.
 * Tools may also be added (rein_registry_add_*) and removed (rein_registry_remove) while it is
 * in use, from any thread (the tools of an MCP server that connects later or changes its list):
 * lookups and exports see a consistent set, and a tool pointer handed out earlier stays valid
 * until the registry is freed (a removed tool is kept, unlisted, so calls in flight finish).
 * Loading skill folders (rein_registry_load_*) is for one thread before the registry is shared.
 * A ledger is safe for concurrent use. A rein_call_result belongs to one thread at a time.
 */
#ifndef REIN_TOOLS_H
#define REIN_TOOLS_H

#include <rein/cancel.h>
#include <rein/json.h>
#include <rein/schema.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_registry rein_registry;
typedef struct rein_tool rein_tool;
typedef struct rein_ledger rein_ledger;
typedef struct rein_call_result rein_call_result;

/* Tool names (manifest ids and names a model sends) are at most this many bytes. */
#define REIN_TOOL_NAME_MAX 64
/* Timeout for a manifest that names none. */
#define REIN_TOOL_DEFAULT_TIMEOUT_MS 30000

/*
 * Error codes of the normalized result (docs/DESIGN.md). REIN_CALL_OK (0) is a successful
 * call; the other codes, and rein_call_code_name()/_parse(), come from this one list. Codes
 * are only ever appended.
 */
#define REIN_CALL_CODE_MAP(X)                                                                      \
    X(UNKNOWN_TOOL, "unknown_tool")                                                                \
    X(INVALID_NAME, "invalid_name")                                                                \
    X(INVALID_ARGUMENTS, "invalid_arguments")                                                      \
    X(DENIED, "denied")                                                                            \
    X(TIMEOUT, "timeout")                                                                          \
    X(EXECUTION_FAILED, "execution_failed")                                                        \
    X(CANCELLED, "cancelled")                                                                      \
    X(INTERNAL, "internal")                                                                        \
    X(INTERRUPTED, "interrupted") /* had started when rein stopped: it may have run */
#define REIN__CALL_CODE_ENUM(id, name) REIN_CALL_##id,
enum rein_call_code { REIN_CALL_OK = 0, REIN_CALL_CODE_MAP(REIN__CALL_CODE_ENUM) };
#undef REIN__CALL_CODE_ENUM
/* "unknown_tool", …; NULL for REIN_CALL_OK. Static text. */
REIN_EXTERN const char *rein_call_code_name(enum rein_call_code code);
/* The code named text; false for anything else ("ok" is not a code). */
REIN_EXTERN bool rein_call_code_parse(const char *text, enum rein_call_code *out);
/*
 * The code a runner's failure maps to: REIN_EINVALID/REIN_EINVAL → invalid_arguments,
 * REIN_EDENIED → denied, REIN_ETIMEDOUT → timeout, REIN_ECANCELED → cancelled,
 * REIN_ENOMEM/REIN_EINTERNAL → internal, anything else → execution_failed.
 */
REIN_EXTERN enum rein_call_code rein_call_code_from_err(rein_err rc);
/* The reverse, for runners that read a remote normalized error (invalid_arguments → EINVALID). */
REIN_EXTERN rein_err rein_call_code_to_err(enum rein_call_code code);

/*
 * The status of a call (docs/DESIGN.md [cortex]): the one enum of the pipeline's result, the
 * ledger, the store and every shape that names it; the enum and its names come from this one
 * list. Values only grow.
 *   pending  written before the call runs
 *   success  ran and succeeded
 *   error    ran (or started to) and failed: timeout, execution_failed, …
 *   invalid  could not run: name, arguments or policy
 */
#define REIN_CALL_STATUS_MAP(X)                                                                    \
    X(PENDING, "pending") X(SUCCESS, "success") X(ERROR, "error") X(INVALID, "invalid")
#define REIN__CALL_STATUS_ENUM(id, name) REIN_CALL_##id,
enum rein_call_status { REIN_CALL_STATUS_MAP(REIN__CALL_STATUS_ENUM) };
#undef REIN__CALL_STATUS_ENUM
/* "pending", "success", "error", "invalid"; "unknown" for a value out of range. Static. */
REIN_EXTERN const char *rein_call_status_name(enum rein_call_status status);
/* The status named text; false (and *out unchanged) for anything else. */
REIN_EXTERN bool rein_call_status_parse(const char *text, enum rein_call_status *out);

/*
 * How rein_registry_resolve() found the tool; the enum and rein_repair_name() come from this
 * one list:
 *   EXACT          the name as registered
 *   CASE           "Echo" → "echo"
 *   SEPARATORS     "fileSearch", "file-search", "File Search" → "file_search"
 *   PREFIX         "functions.echo", "tools.echo" → "echo"
 *   EDIT_DISTANCE  "calculater" → "calculator"
 */
#define REIN_REPAIR_MAP(X)                                                                         \
    X(EXACT, "exact")                                                                              \
    X(CASE, "case")                                                                                \
    X(SEPARATORS, "separators")                                                                    \
    X(PREFIX, "prefix")                                                                            \
    X(EDIT_DISTANCE, "edit_distance")
#define REIN__REPAIR_ENUM(id, name) REIN_REPAIR_##id,
enum rein_repair { REIN_REPAIR_MAP(REIN__REPAIR_ENUM) };
#undef REIN__REPAIR_ENUM
/* "exact", "case", "separators", "prefix", "edit_distance"; "exact" for anything else. */
REIN_EXTERN const char *rein_repair_name(enum rein_repair how);

/* ---------------------------------------------------------------------------------------------
 * Runners: what executes a tool. A runner kind is a small vtable; a new kind is one file that
 * defines a struct rein_runner_kind and registers it (rein_registry_add_runner_kind) or adds
 * tools with it directly (rein_registry_add_tool). This module knows only "builtin" (a C
 * function); the modules above it register theirs: "process" (a program, JSON on stdin and
 * stdout) and "http" (POST to a URL) with rein_skills_register_runners() (<rein/skills.h>),
 * "mcp" (a tool of an MCP server) with rein_mcp_register_runner() (<rein/mcp.h>).
 * -------------------------------------------------------------------------------------------*/

/*
 * Something a runner reports while a call runs: how far it has got, or a log message. These
 * are what an MCP server sends as notifications/progress and notifications/message; a process
 * skill reports them as MCP notification lines on stderr, an MCP server's tool as the remote
 * server's own notifications. They are advisory: a call's result never depends on them.
 */
enum rein_call_event_kind {
    REIN_CALL_EVENT_PROGRESS = 0,
    REIN_CALL_EVENT_LOG = 1,
};

/* Everything is borrowed for the duration of the callback. */
struct rein_call_event {
    enum rein_call_event_kind kind;
    const rein_tool *tool;
    const char *call_id;
    /* REIN_CALL_EVENT_PROGRESS */
    double progress;     /* should grow from one event to the next */
    double total;        /* < 0: unknown */
    const char *message; /* may be NULL */
    /* REIN_CALL_EVENT_LOG */
    const char *level;  /* an MCP (syslog) level: debug, info, notice, warning, error,
                         * critical, alert, emergency */
    const char *logger; /* may be NULL */
    const json_t *data; /* the message: any JSON value */
};
/*
 * Receives the events of one call, on whichever thread the runner reports from (the calling
 * thread of rein_call_run() for the runners rein ships). Must not block for long.
 */
typedef void (*rein_call_event_fn)(void *userdata, const struct rein_call_event *ev);
/*
 * Asks the caller's client, on behalf of a running tool, something only it can answer: an MCP
 * client's sampling/createMessage, elicitation/create or roots/list (method and params
 * borrowed), waiting at most timeout_ms (< 0: the caller's own limit). key (borrowed) is the
 * tool's own name for the question, the same each time the tool runs (a process skill's request
 * id): a client that answers in later rounds (MCP 2026-07-28's input-required results) answers
 * by it. On success *result is a new reference to the client's result. REIN_ENOTSUP when the
 * client did not declare the capability the method needs (err says so); REIN_ETIMEDOUT;
 * REIN_ECANCELED, also when the answer will come with the call's next round (the call is
 * cancelled to end this one); REIN_EIO when the client answered with an error (err carries its
 * code and message). Blocks the calling thread.
 */
typedef rein_err (*rein_call_ask_fn)(void *userdata, const char *key, const char *method,
                                     const json_t *params, int64_t timeout_ms, json_t **result,
                                     rein_error *err);

/* One execution of a tool, as its runner sees it. Everything is borrowed for the call. */
struct rein_invocation {
    const rein_tool *tool;
    /* validated arguments with defaults filled; an object. NULL only for a runner kind with
     * text_args set, when args_text holds them */
    json_t *args;
    /* the validated arguments as the model's own JSON text (no defaults were filled, and it has
     * no line break), or NULL; rein_invocation_write sends it as it is */
    const char *args_text;
    size_t args_len;
    const char *call_id;  /* never NULL */
    const char *trace_id; /* never NULL */
    bool has_step;
    int step;
    int64_t deadline_ms; /* rein_now_ms() time after which the call has timed out; 0: none */
    int64_t timeout_ms;  /* the limit the deadline came from (for messages); 0: none */
    rein_cancel *cancel; /* may be NULL */
    rein_call_event_fn on_event; /* from rein_call_opts; NULL: nobody listens */
    void *event_data;
    rein_call_ask_fn ask; /* from rein_call_opts; NULL: no client can be asked */
    void *ask_data;
    const void *asker; /* from rein_call_opts: who ask reaches; NULL: unknown */
};

/* Milliseconds left before the deadline (0 when passed), or -1 when there is none. */
REIN_EXTERN int64_t rein_invocation_remaining_ms(const struct rein_invocation *inv);
/*
 * REIN_ETIMEDOUT when the deadline has passed, REIN_ECANCELED when the cancel handle is
 * triggered (err says which), else REIN_OK. Long-running built-in tools call this between
 * units of work; that is how a timeout or a cancel stops them.
 */
REIN_EXTERN rein_err rein_invocation_check(const struct rein_invocation *inv,
                                           rein_error *err) REIN_WUR;
/*
 * Reports ev (its tool and call_id are filled in here) to the caller's on_event, when there
 * is one. Safe from any thread while the invocation runs.
 */
REIN_EXTERN void rein_invocation_event(const struct rein_invocation *inv,
                                       struct rein_call_event *ev);
/*
 * Asks the caller's client (rein_call_ask_fn) within the call's remaining time. REIN_ENOTSUP,
 * with err saying so, when the call does not come from a client that can be asked (rein chat,
 * POST /skills/{id}/invoke, an agent's turn). method and params borrowed; *result new.
 */
REIN_EXTERN rein_err rein_invocation_ask(const struct rein_invocation *inv, const char *key,
                                         const char *method, const json_t *params, json_t **result,
                                         rein_error *err) REIN_WUR;
/*
 * The call as JSON for a runner that sends it elsewhere (process stdin, HTTP body):
 *   {"tool", "call_id", "trace_id", "arguments", "step"?, "timeout_ms"?}
 * Appended to b. REIN_ENOMEM or REIN_ETOOBIG on failure.
 */
REIN_EXTERN rein_err rein_invocation_write(const struct rein_invocation *inv,
                                           struct rein_buf *b) REIN_WUR;

/* What a runner hands back. The pipeline releases it. */
struct rein_tool_reply {
    json_t *output;  /* on success: new reference (NULL is written as null) */
    json_t *details; /* on failure, optional: new array of {path, message} */
    char *log;       /* optional diagnostics (a process's stderr); rein_malloc'd, taken */
};

struct rein_runner_kind {
    const char *name; /* "process"; the manifest's runner.kind */
    /*
     * JSON Schema (text) of the manifest's runner object for this kind, or NULL. The registry
     * compiles it once and checks every manifest's runner against it before open is called,
     * so problems are reported with their JSON Pointer ("/runner/command: …").
     */
    const char *schema;
    /*
     * Reads the manifest's runner object (borrowed; already checked against the manifest
     * meta-schema) and prepares *state for invoke. base_dir (may be NULL) is the manifest's
     * folder, for relative paths. On failure err names the problem; a JSON Pointer inside the
     * runner object may lead the message ("/command/0: …"). May be NULL (state is NULL).
     */
    rein_err (*open)(const json_t *runner, const char *base_dir, void **state, rein_error *err);
    /*
     * Runs one call. Called from many threads at once. On success sets reply->output and
     * returns REIN_OK; on failure returns a REIN_E* code (mapped by rein_call_code_from_err)
     * with err->msg as the message, and may set reply->details and reply->log.
     */
    rein_err (*invoke)(void *state, const struct rein_invocation *inv,
                       struct rein_tool_reply *reply, rein_error *err);
    void (*close)(void *state); /* may be NULL */
    /*
     * true: invoke reads the arguments only through rein_invocation_write, so a call whose
     * arguments are still the model's text (rein_invocation.args_text) gets args NULL and no
     * jansson tree is made for it (a 10 MB argument goes to the process or the HTTP body as
     * it came; decision 0056).
     */
    bool text_args;
};

/* A built-in tool's function: the invoke of the "builtin" runner. */
typedef rein_err (*rein_tool_fn)(void *userdata, const struct rein_invocation *inv,
                                 struct rein_tool_reply *reply, rein_error *err);

/* ---------------------------------------------------------------------------------------------
 * Registry and manifests.
 *
 * A manifest (docs/DESIGN.md) is checked against rein's manifest meta-schema before anything is
 * kept: id (^[A-Za-z0-9_-]{1,64}$), description, parameters (a JSON Schema of type object,
 * compiled once here), destructive, read_only, idempotent, open_world, sequential (must not
 * run in parallel with other calls), timeout_ms, title, output_schema (a JSON Schema of the
 * structured output, compiled here and checked after every successful call: an output that
 * does not match is execution_failed), runner {kind, …}, routes (PCRE2
 * patterns with named captures, compiled here), and "x-" extension keys. A bad manifest is
 * refused whole, with the JSON Pointer of the problem.
 * -------------------------------------------------------------------------------------------*/

/* New empty registry that knows the runner kind builtin (see Runners above for the others). */
REIN_EXTERN rein_registry *rein_registry_new(rein_error *err);
/* Frees the tools (closing their runners). NULL is a no-op. */
REIN_EXTERN void rein_registry_free(rein_registry *reg);

/* kind: borrowed, must outlive the registry (a static). REIN_EEXIST when the name is taken. */
REIN_EXTERN rein_err rein_registry_add_runner_kind(rein_registry *reg,
                                                   const struct rein_runner_kind *kind,
                                                   rein_error *err) REIN_WUR;
/*
 * Adds the tool manifest describes (borrowed; the registry keeps a normalized copy), run by
 * the runner its runner.kind names. base_dir (may be NULL) resolves relative paths in the
 * runner; source (may be NULL) names where the manifest came from, for messages.
 * REIN_ESCHEMA with "<pointer>: <problem>" in err when the manifest is bad, REIN_EEXIST when
 * the id is taken, REIN_ENOTFOUND for an unknown runner kind. Nothing is kept on failure.
 */
REIN_EXTERN rein_err rein_registry_add_manifest(rein_registry *reg, json_t *manifest,
                                                const char *base_dir, const char *source,
                                                rein_error *err) REIN_WUR;
/*
 * Adds a built-in tool: manifest as above (its runner, if present, must be {"kind":"builtin"}),
 * run by fn(userdata, …). free_userdata (may be NULL) is called on userdata when the registry
 * is freed, or at once when adding fails.
 */
REIN_EXTERN rein_err rein_registry_add_builtin(rein_registry *reg, json_t *manifest,
                                               rein_tool_fn fn, void *userdata,
                                               void (*free_userdata)(void *userdata),
                                               rein_error *err) REIN_WUR;
/*
 * Adds a tool whose runner the caller opened (an MCP server's tool): kind is borrowed (static),
 * state is taken: kind->close(state) runs when the registry is freed, or at once on failure.
 * The manifest's runner member, when present, is kept for display only.
 */
REIN_EXTERN rein_err rein_registry_add_tool(rein_registry *reg, json_t *manifest,
                                            const struct rein_runner_kind *kind, void *state,
                                            rein_error *err) REIN_WUR;

/*
 * Loads external skills: dir itself when it holds a manifest.json, and every immediate
 * subfolder that holds one (in name order). A bad manifest is recorded as a problem (file,
 * JSON Pointer, message; show them to the user: rein_registry_problems), logged at info level,
 * and skipped; the others load. *loaded (may be NULL) gets the
 * number of tools added. Errors only when dir cannot be read (REIN_ENOTFOUND, REIN_EIO).
 */
REIN_EXTERN rein_err rein_registry_load_dir(rein_registry *reg, const char *dir, size_t *loaded,
                                            rein_error *err) REIN_WUR;
/* Same for each folder of a colon-separated list (REIN_SKILLS_PATH's format); empty entries
 * and folders that do not exist are skipped (recorded as problems). */
REIN_EXTERN rein_err rein_registry_load_path(rein_registry *reg, const char *path_list,
                                             size_t *loaded, rein_error *err) REIN_WUR;
/* Array of {file, pointer, message} for every manifest that was refused; borrowed. */
REIN_EXTERN const json_t *rein_registry_problems(const rein_registry *reg);

/*
 * Removes the tool named id from the lists and lookups; calls already running it finish (its
 * runner is closed when the registry is freed). REIN_ENOTFOUND when there is none.
 */
REIN_EXTERN rein_err rein_registry_remove(rein_registry *reg, const char *id,
                                          rein_error *err) REIN_WUR;
/*
 * Called after every tool added or removed, with the registry (borrowed), from the thread that
 * made the change, outside the registry's lock. Must be short and must not add or remove
 * tools itself (a watcher typically marks a cached tool list stale).
 */
typedef void (*rein_registry_change_fn)(void *userdata, const rein_registry *reg);
/* Adds a watcher (userdata borrowed); returns its handle (> 0), or 0 when out of memory.
 * Watching does not change the tools, so it takes a registry its caller may only read. */
REIN_EXTERN int rein_registry_watch(const rein_registry *reg, rein_registry_change_fn fn,
                                    void *userdata);
/* Removes a watcher; when this returns, it is not running and will not run again. */
REIN_EXTERN void rein_registry_unwatch(const rein_registry *reg, int handle);
/* Grows by one with every change: a cheap way to tell whether a cached list is stale. */
REIN_EXTERN uint64_t rein_registry_generation(const rein_registry *reg);

REIN_EXTERN size_t rein_registry_count(const rein_registry *reg);
/* Tools in registration order (i < count), or NULL for i past the end (the count can shrink
 * between two calls while tools are removed); borrowed, valid while the registry is. */
REIN_EXTERN const rein_tool *rein_registry_at(const rein_registry *reg, size_t i);
/* The tool with exactly this id, or NULL. */
REIN_EXTERN const rein_tool *rein_registry_get(const rein_registry *reg, const char *id);

/*
 * The name check alone: REIN_OK for a name that may be resolved, else REIN_EINVALID with what
 * is wrong in why->msg ("the name is empty", "the name \"⚙\" has no letters or digits", …).
 * len is the name's length in bytes (names may hold NUL bytes, which are control characters).
 */
REIN_EXTERN rein_err rein_tool_name_check(const char *name, size_t len, rein_error *why) REIN_WUR;
/*
 * The name check and the repair steps. Returns the tool and sets *how (may be NULL), or NULL
 * with why set: REIN_EINVALID for a bad name, REIN_ENOTFOUND when no unique tool matches
 * (the message lists the available tools). name is NUL-terminated.
 */
REIN_EXTERN const rein_tool *rein_registry_resolve(const rein_registry *reg, const char *name,
                                                   enum rein_repair *how, rein_error *why);

/* Tool list shapes for each wire format. */
enum rein_tool_format {
    REIN_TOOLS_OPENAI,    /* [{"type":"function","function":{name, description, parameters}}] */
    REIN_TOOLS_ANTHROPIC, /* [{name, description, input_schema}] */
    REIN_TOOLS_MCP,       /* [{name, title?, description, inputSchema, annotations}] */
};
/* New array of every tool in the shape fmt expects; NULL when memory is exhausted. */
REIN_EXTERN json_t *rein_registry_tools_json(const rein_registry *reg, enum rein_tool_format fmt);
/* The same for one tool; new reference. */
REIN_EXTERN json_t *rein_tool_json(const rein_tool *tool, enum rein_tool_format fmt);
/* New array of the manifests (GET /skills). */
REIN_EXTERN json_t *rein_registry_manifests_json(const rein_registry *reg);
/* New array of the tool names. */
REIN_EXTERN json_t *rein_registry_names_json(const rein_registry *reg);

/* Tool accessors. Strings and JSON are borrowed from the tool, valid while the registry is. */
REIN_EXTERN const char *rein_tool_id(const rein_tool *tool);
REIN_EXTERN const char *rein_tool_description(const rein_tool *tool);
/* The normalized manifest: defaults filled (destructive false, timeout_ms, runner kind). */
REIN_EXTERN const json_t *rein_tool_manifest(const rein_tool *tool);
REIN_EXTERN const json_t *rein_tool_parameters(const rein_tool *tool);
REIN_EXTERN const rein_schema *rein_tool_schema(const rein_tool *tool);
/* The manifest's output_schema: what a successful call's structured output looks like (the
 * output itself, or the structuredContent of an output that is MCP content); NULL when the
 * tool declares none. The pipeline checks every successful output against it. */
REIN_EXTERN const json_t *rein_tool_output_schema(const rein_tool *tool);
REIN_EXTERN const char *rein_tool_runner_kind(const rein_tool *tool);
/* Where the manifest came from: its file, or "builtin". */
REIN_EXTERN const char *rein_tool_source(const rein_tool *tool);
REIN_EXTERN bool rein_tool_is_destructive(const rein_tool *tool);
REIN_EXTERN bool rein_tool_is_read_only(const rein_tool *tool);
REIN_EXTERN bool rein_tool_is_sequential(const rein_tool *tool);
REIN_EXTERN int64_t rein_tool_timeout_ms(const rein_tool *tool);
/* Routes (manifest "routes"), compiled at registration with PCRE2 (UTF, UCP). */
REIN_EXTERN size_t rein_tool_route_count(const rein_tool *tool);
REIN_EXTERN const char *rein_tool_route_pattern(const rein_tool *tool, size_t i);
/*
 * Matches route i against len bytes of text. On a match returns REIN_OK and, when captures is
 * not NULL, a new object of the named groups that took part ({"query": "calculator"}).
 * REIN_ENOTFOUND when it does not match; REIN_EINVAL for i out of range; REIN_ETOOBIG when
 * the match limit was hit. Safe from many threads.
 */
REIN_EXTERN rein_err rein_tool_route_match(const rein_tool *tool, size_t i, const char *text,
                                           size_t len, json_t **captures, rein_error *err) REIN_WUR;

/* ---------------------------------------------------------------------------------------------
 * The ledger (docs/DESIGN.md [cortex], decision 0004): one entry per call, written pending
 * before the call runs and updated to success, error or invalid with its result (the output on
 * success, the error object otherwise) and times. Safe for concurrent use.
 * -------------------------------------------------------------------------------------------*/

/*
 * A ledger entry: the one record of a call, handed as this struct from the pipeline through
 * the ledger's hook and the session to the store and back (include/rein/store.h), and written
 * as JSON by one writer (rein_ledger_entry_write) wherever it appears (the ledger, the store's
 * export, GET /agent/conversations/{id}, plan files):
 *   {"call_id", "tool", "args", "status", "result", "call_time", "response_time", "step",
 *    "sent_name", "trace_id", "latency_ms", "interrupted"}
 * Times are ISO 8601 UTC with milliseconds (null while pending), step and latency_ms null when
 * not known. Every pointer is borrowed (from the hook's caller for the hook's call, from the
 * store for a callback); texts are NUL-terminated.
 */
struct rein_ledger_entry {
    const char *call_id;
    const char *tool;      /* the tool that ran (the repaired name), or the name as sent */
    const char *sent_name; /* the name the model sent; NULL: the same as tool */
    const char *args;      /* JSON text of the arguments (a JSON string when they did not parse) */
    enum rein_call_status status;
    const char *result;  /* JSON text: the output on success, the error object otherwise; NULL
                           while pending */
    int64_t call_ms;     /* wall clock when the call was issued */
    int64_t response_ms; /* when its result arrived; 0 while pending */
    int64_t latency_ms;  /* how long it ran, without the policy step's waits (self-check,
                            a person's approval); < 0 when not measured */
    bool has_step;       /* the call belongs to plan step step */
    int step;
    const char *trace_id; /* may be NULL */
    bool interrupted;     /* the store's recovery found it pending after its process died */
};

/* Appends e's JSON (the shape above) to w. args and result must be JSON texts. */
REIN_EXTERN void rein_ledger_entry_write(const struct rein_ledger_entry *e, struct rein_jw *w);
/* e as a new JSON object; NULL when memory is exhausted or a text is not JSON. */
REIN_EXTERN json_t *rein_ledger_entry_to_json(const struct rein_ledger_entry *e);

/*
 * Called after every change with the whole entry (borrowed, valid during the call), from the
 * thread that made the change, outside the ledger's lock. A persistence hook (the store)
 * writes it durably before returning. An error from the hook on a new pending entry makes the
 * pipeline refuse to run the call (internal); on a later update it is logged.
 */
typedef rein_err (*rein_ledger_hook_fn)(void *userdata, const struct rein_ledger_entry *entry);

/* New empty ledger (an in-memory log; the hook makes it durable); NULL when out of memory. */
REIN_EXTERN rein_ledger *rein_ledger_new(void);
/* Frees the ledger and its entries. NULL is a no-op. */
REIN_EXTERN void rein_ledger_free(rein_ledger *ledger);
/* fn may be NULL (no hook); userdata is borrowed. Set before calls start. */
REIN_EXTERN void rein_ledger_set_hook(rein_ledger *ledger, rein_ledger_hook_fn fn, void *userdata);

/* A call as the plan engine or a replay records it outside rein_call_run(). */
struct rein_ledger_call {
    const char *call_id;   /* borrowed; NULL: none (results are then paired FIFO per tool) */
    const char *tool;      /* borrowed; required */
    const char *sent_name; /* borrowed; NULL: same as tool */
    const json_t *args;    /* borrowed; NULL: null */
    const char *trace_id;  /* borrowed; may be NULL */
    bool has_step;
    int step;
};
/*
 * add_tool_call: appends a pending entry. *index (may be NULL) receives its position.
 * An error from the hook is returned (the entry stays, pending).
 */
REIN_EXTERN rein_err rein_ledger_add_call(rein_ledger *ledger, const struct rein_ledger_call *call,
                                          size_t *index, rein_error *err) REIN_WUR;
/*
 * update_tool_result: finds the pending entry this result belongs to and sets status
 * (success, error or invalid) and result (borrowed; the ledger keeps a reference). Pairing:
 * by call_id when given; else the oldest pending entry of that tool (its id or the name the
 * model sent) in that step, first in, first out. REIN_ENOTFOUND when no pending entry matches.
 */
REIN_EXTERN rein_err rein_ledger_update_result(rein_ledger *ledger, bool has_step, int step,
                                               const char *call_id, const char *tool,
                                               enum rein_call_status status, const json_t *result,
                                               rein_error *err) REIN_WUR;
/* Entries so far (all steps). */
REIN_EXTERN size_t rein_ledger_count(const rein_ledger *ledger);
/* New JSON of entry i (the shape of rein_ledger_entry_write), or NULL when i is out of range
 * or memory is exhausted. */
REIN_EXTERN json_t *rein_ledger_entry_json(const rein_ledger *ledger, size_t i);
/* New array of all entries (all_steps) or those of one step (step null when !has_step). */
REIN_EXTERN json_t *rein_ledger_json(const rein_ledger *ledger, bool all_steps, bool has_step,
                                     int step);
/* finalize_step: new array of the entries of the step that are still pending. */
REIN_EXTERN json_t *rein_ledger_finalize(const rein_ledger *ledger, bool has_step, int step);
/* verify_step: true when the step made no calls or none of them is pending. */
REIN_EXTERN bool rein_ledger_verify(const rein_ledger *ledger, bool has_step, int step);
/* Counts for a step (or all steps). */
REIN_EXTERN size_t rein_ledger_pending_count(const rein_ledger *ledger, bool all_steps,
                                             bool has_step, int step);

/* ---------------------------------------------------------------------------------------------
 * The call pipeline.
 * -------------------------------------------------------------------------------------------*/

struct rein_doc; /* rein/doc.h */

/* One tool call as it arrived. Everything is borrowed for the duration of rein_call_run(). */
struct rein_call_input {
    const char *call_id;   /* the provider's id; NULL or "": a new "call_…" id is made */
    const char *name;      /* the name as the model sent it; NULL is the empty name */
    size_t name_len;       /* bytes of name; 0: strlen(name) */
    const json_t *args;    /* the arguments as a value (an object when well-formed); a JSON
                            * string value is read as argument text; NULL: use args_text */
    const char *args_text; /* the raw argument text as sent, kept next to args; may be NULL */
    size_t args_len;       /* bytes of args_text */
    const char *trace_id;  /* NULL: a new trace id */
    bool has_step;         /* the call belongs to a plan step */
    int step;
    /* true: args (an object) stays alive and unchanged until the result is freed, so the
     * pipeline reads it in place instead of copying it, unless the tool fills in defaults
     * (rein_call_result_args() then returns args itself) */
    bool args_lent;
    /*
     * args_text already parsed: rein_doc_parse() of exactly those args_len bytes, as
     * rein_model_call_document() gives a decoded call's (rein/doc.h), or NULL. Read only with
     * check_only, and borrowed only while rein_call_run() runs: the check validates it
     * instead of parsing the text a second time (a 10 MB argument through the gateway). The
     * result keeps no reference to it: for a valid call read from it, rein_call_result_args()
     * is NULL (a caller that wants the value passes none); an invalid one parses its own copy
     * of the text for its payload, as without a document.
     */
    const struct rein_doc *args_doc;
};

struct rein_span;

/* What the policy hook is asked about. Everything is borrowed for the hook's call. */
struct rein_policy_check {
    const rein_tool *tool;
    const json_t *args; /* validated, defaults filled */
    const char *call_id;
    const char *trace_id;
    const char *sent_name;
    enum rein_repair repair;
    bool has_step;
    int step;
    rein_cancel *cancel; /* may be NULL; a hook that waits for a person should watch it */
    /* The call's execute_tool span (include/rein/trace.h; borrowed for the hook's call; NULL
     * from a caller other than rein_call_run). The hook adds its stages to it as rein.* events
     * (the agent's rein.self_check and rein.approval); a span that is not recorded takes
     * nothing, so the hook need not check. */
    struct rein_span *span;
};
/*
 * Policy hook: return REIN_OK to allow the call, REIN_EDENIED with the reason in why->msg to
 * deny it (the call returns denied), REIN_ECANCELED when cancelled while waiting; any other
 * code makes the call fail as internal. Called on the calling thread of rein_call_run().
 */
typedef rein_err (*rein_call_policy_fn)(void *userdata, const struct rein_policy_check *check,
                                        rein_error *why);

struct rein_call_opts {
    rein_ledger *ledger;        /* borrowed; NULL: not recorded (the result still has the entry) */
    rein_cancel *cancel;        /* borrowed; NULL: cannot be cancelled */
    rein_call_policy_fn policy; /* NULL: allow */
    void *policy_data;
    int64_t timeout_ms;    /* > 0: at most this long (the manifest's timeout still applies) */
    size_t max_args_bytes; /* argument text beyond this is invalid; 0: 4 MiB */
    bool check_only;       /* stop after preflight: no policy, no execution, no ledger
                                 * entry (propose mode); the result is ok with a null output */
    /* The name must be a tool's exact id: no repair (unknown_tool otherwise). For callers at a
     * protocol boundary (MCP tools/call), where a client names a tool it was listed, and a
     * host's allow or deny list by name must not be sidestepped by a near miss. */
    bool exact_name;

    /* Progress and log events while the runner runs (may be NULL), with its userdata. */
    rein_call_event_fn on_event;
    void *event_data;
    /* The client a running tool may ask (an MCP server's session; may be NULL), with its
     * userdata. */
    rein_call_ask_fn ask;
    void *ask_data;
    /* Who ask reaches, as an identity only (never dereferenced; may be NULL: unknown): calls
     * whose asker is the same non-NULL value are answered by the same client, so a question a
     * remote MCP server asks during several of them (over stdio nothing says which) may go to
     * any of them. An MCP server passes its client's session. */
    const void *asker;
};

/*
 * Runs one call through the pipeline. in is borrowed; opts may be NULL. Returns REIN_OK and a
 * new result in *out whenever a result could be made, whatever the call's outcome (look at
 * rein_call_result_ok()); fails only with REIN_EINVAL (reg or in NULL) or REIN_ENOMEM.
 */
REIN_EXTERN rein_err rein_call_run(const rein_registry *reg, const struct rein_call_input *in,
                                   const struct rein_call_opts *opts, rein_call_result **out,
                                   rein_error *err) REIN_WUR;
/* NULL is a no-op. */
REIN_EXTERN void rein_call_result_free(rein_call_result *res);

/* Accessors. Strings and JSON are borrowed from the result, valid until it is freed. */
REIN_EXTERN bool rein_call_result_ok(const rein_call_result *res);
REIN_EXTERN enum rein_call_code rein_call_result_code(const rein_call_result *res);
REIN_EXTERN enum rein_call_status rein_call_result_status(const rein_call_result *res);
/* The error message ("missing required field(s): filePath"); "" when ok. Borrowed. */
REIN_EXTERN const char *rein_call_result_message(const rein_call_result *res);
/* The tool that ran (repaired name), or NULL when the name could not be resolved. */
REIN_EXTERN const rein_tool *rein_call_result_tool(const rein_call_result *res);
/* The tool's name, or the name as sent when it could not be resolved. Borrowed. */
REIN_EXTERN const char *rein_call_result_tool_name(const rein_call_result *res);
/* The name exactly as the model sent it (bytes and length). Borrowed. */
REIN_EXTERN const char *rein_call_result_sent_name(const rein_call_result *res, size_t *len);
REIN_EXTERN enum rein_repair rein_call_result_repair(const rein_call_result *res);
REIN_EXTERN const char *rein_call_result_call_id(const rein_call_result *res);
REIN_EXTERN const char *rein_call_result_trace_id(const rein_call_result *res);
REIN_EXTERN int64_t rein_call_result_latency_ms(const rein_call_result *res);
/* The arguments as parsed (defaults filled when valid), or NULL when they did not parse. */
REIN_EXTERN const json_t *rein_call_result_args(const rein_call_result *res);
/* The raw argument text when one was given (borrowed from the input: copied), else NULL. */
REIN_EXTERN const char *rein_call_result_args_text(const rein_call_result *res, size_t *len);
/* The output (borrowed; NULL unless ok). */
REIN_EXTERN const json_t *rein_call_result_output(const rein_call_result *res);
/* The runner's diagnostics (a process's stderr), or NULL. */
REIN_EXTERN const char *rein_call_result_log(const rein_call_result *res);

/*
 * Shapes. Each is built on first use and kept by the result (borrowed; valid until the result
 * is freed); NULL only when memory is exhausted.
 *  result_json:   the normalized result: {ok, tool, call_id, trace_id, output | error: {code,
 *                 message, details}, meta: {latency_ms}}, and, when the call could not run
 *                 (status invalid), the invalid payload under "invalid_payload". This one
 *                 shape is what `rein skills invoke`, POST /skills/{id}/invoke, MCP
 *                 structuredContent and the agent's tool_calls[].result show.
 *  invalid_json:  the invalid payload, or NULL when the call ran
 *  model_json:    what goes back to the model as the tool message: the invalid payload when
 *                 the call could not run, else the normalized result
 *  ledger_json:   the ledger entry
 *  steps_json:    [{step, ok, …}] one per pipeline step that ran, in order
 */
REIN_EXTERN const json_t *rein_call_result_json(rein_call_result *res);
REIN_EXTERN const json_t *rein_call_result_invalid_json(rein_call_result *res);
REIN_EXTERN const json_t *rein_call_result_model_json(rein_call_result *res);
REIN_EXTERN const json_t *rein_call_result_ledger_json(rein_call_result *res);
REIN_EXTERN const json_t *rein_call_result_steps_json(rein_call_result *res);
/*
 * The normalized result (or the model's message) written straight into a JSON writer, with
 * no tree built: the fast path for encoding tool messages (docs/DESIGN.md, "JSON on the hot
 * paths").
 */
REIN_EXTERN void rein_call_result_write(const rein_call_result *res, struct rein_jw *w);
REIN_EXTERN void rein_call_result_write_for_model(const rein_call_result *res, struct rein_jw *w);
/*
 * The normalized result of a call that never reached the pipeline's runner and has no
 * rein_call_result: a call found unanswered in a restored history ("cancelled", "not run: …"),
 * or one the caller could not hand to the pipeline ("internal"). The same shape as above with
 * details [] and latency 0. code must be one whose status is error (timeout, cancelled,
 * execution_failed, internal). tool, call_id, message: borrowed; trace_id may be NULL (null).
 * Writes as few bytes as it can, so it also serves when memory is short.
 */
REIN_EXTERN void rein_call_result_write_error(struct rein_jw *w, const char *tool,
                                              const char *call_id, const char *trace_id,
                                              enum rein_call_code code, const char *message);

#ifdef __cplusplus
}
#endif
#endif /* REIN_TOOLS_H */
