/*
 * rein/agent.h: the agent loop. A turn takes a conversation's history and a user message,
 * asks the model, runs the tool calls it makes through the one call pipeline
 * (rein_call_run()), feeds the results back, and repeats until the model answers or a limit
 * stops it (ReAct, docs/DESIGN.md [react]). Every turn ends with a named stop reason.
 *
 * What a turn guarantees:
 *
 * - Every tool call the model made gets exactly one tool result in the history, in the model's
 *   call order, however the turn ends: answered, capped, timed out, cancelled, provider error,
 *   or found unanswered at the start of a later turn (a crash). A call that never ran gets a
 *   normalized result with error code "cancelled" whose message says why ("not run: …"). A
 *   history that every later request to OpenAI, Anthropic or DashScope would reject cannot
 *   come out of a turn.
 * - Names that real services refuse in an assistant message (outside ^[a-zA-Z0-9_-]{1,64}$,
 *   e.g. "⚙", "" or "functions.echo") are sent back in the history under the tool the
 *   pipeline resolved them to, or, when they resolve to nothing, under the fixed placeholder
 *   REIN_AGENT_INVALID_NAME; the tool result's payload quotes the name the model really used
 *   (its "tool" member) and says what was wrong with it. A call id that repeats one of the
 *   conversation gets a "_2", "_3", … suffix, and characters outside [A-Za-z0-9_-] in an id
 *   become "_", in the history and in the ledger alike.
 * - The ledger of the turn records every call (pending before it runs), and a turn that ends
 *   with a pending entry is reported as failed (success false).
 *
 * Limits (struct rein_agent_turn_opts): a hard cap on model responses with tool calls
 * (max_iterations, default 10); a success cap counted per model response whose calls all
 * succeeded (single mode 1, auto mode 5); max_tool_calls (calls the model may make in the
 * turn; calls past it are answered "not run"); a token budget over the providers' reported
 * usage (the next request is not sent when its estimate would pass the budget, and the
 * request's max_tokens is lowered to what is left); a wall-clock timeout; a cancellation
 * handle that reaches a running provider request and running tools. Reaching a cap
 * (iterations, success cap, max_tool_calls, stalled, and the token budget when one more
 * request still fits) ends with one more model call with tool_choice "none" so the user gets
 * an answer; when that call cannot be made the answer is composed from what happened.
 *
 * Modes: auto, single (success cap 1) and propose, which runs calls through name check,
 * repair, parsing and preflight only (check_only) and returns the repaired, checked calls for
 * a person or a program to approve; each proposed call gets the tool result
 * {"tool", "status": "proposed", "message"} in the history. Invalid proposals get the usual
 * invalid payload and the model may fix them.
 *
 * Tool calls of one reply run concurrently on a bounded pool, except tools whose manifest says
 * "sequential", which run alone, in order; results go back in the model's order.
 *
 * Verification (docs/DESIGN.md [react], its should_verify), decided in the pipeline's
 * policy step after the arguments passed preflight: strategy "auto" verifies destructive
 * tools always, and every other call unless its reply stated "confidence: N" with N >= 0.8.
 * Whether a model can state a confidence comes from the capability table
 * (rein_model_caps_lookup; overridable per model prefix in the provider configuration's
 * "capabilities"): the system prompt asks such models for the line, and a reply of theirs
 * without it is verified; a model that cannot state one has every call verified, as the seed
 * says (the cost is one more model call per tool call; "off" or a "confidence": true
 * capability avoid it). "force" verifies every call; "off" verifies none. Self-verification
 * is a separate model call without tools that must answer YES or NO with a reason to "the
 * user asked X; the assistant is about to call Y". Anything but a clear YES, and a verifier
 * that cannot be reached, deny the call: it is not executed and the model gets the "denied"
 * invalid payload with the reason. Destructive calls additionally wait for a person when the
 * turn has an approval callback; no answer before the approval timeout means denied. A
 * denied call records verification {"passed": false, "reason"} whichever step denied it.
 *
 * Claims: unless verification is "off", the final answer is read for claims of work done
 * (include/rein/claims.h: a tool ran, a file written or deleted, a function added) and each is
 * checked against the turn's own ledger; a claim no successful call of the turn backs is
 * refuted, reported in a "claims" event and in the result's meta.claims. With "force", the
 * first answer with refuted claims is sent back once ("your answer says X, but no call shows
 * it; correct the answer") and the model answers again (with tools, so it may still do the
 * work) before the turn ends. Tests, build and lint claims are not checked here (no protocol
 * runs in a turn); `rein verify` and `rein loop` check those.
 *
 * Loop detection: answered first by a "warning" member added to the tool message the model
 * reads, then by stopping with "stalled": the same error from the same tool in consecutive
 * calls (warning at 2, stop at 3, the seed's rule); the same call (tool and canonical
 * arguments) with the same result (volatile members such as ids and latencies left out)
 * (warning at 2, stop at 3); A↔B ping-pong between two replies with unchanged results (warning
 * at the first return, stop at the second); unknown or invalid tool names (warning at 2, stop
 * at 3 in a turn); and a run of invalid calls of any kind (warning at 4, stop at 6).
 *
 * Context: messages go into the history once (the provider caches each one's encoding), so a
 * turn costs what is new. When the estimated size passes the model's context window (the
 * capability table's, or rein_agent_set_context_window()), old tool results are shortened
 * first, oldest first (their head and tail kept in a JSON object that says how much was cut);
 * then the oldest whole exchanges are dropped. The system prompt and the last user message
 * are never dropped. This changes the caller's history in memory only: the persistence hook
 * is not called for it (a store keeps the full conversation).
 *
 * Threading: a rein_agent is configured by one thread and then used by any number of threads
 * at once, each running its own turns on its own history. The event callback is called from
 * the turn's thread and from pool workers running tool calls, but never twice at the same
 * time. The approval callback and the ledger hook run on the thread running a call and may run
 * concurrently for parallel calls; the message hook runs on the turn's thread.
 */
#ifndef REIN_AGENT_H
#define REIN_AGENT_H

#include <rein/cancel.h>
#include <rein/history.h>
#include <rein/json.h>
#include <rein/pool.h>
#include <rein/provider.h>
#include <rein/tools.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_agent rein_agent;
typedef struct rein_agent_result rein_agent_result;

/* The name a call is sent back under when the model's name is unusable on the wire. */
#define REIN_AGENT_INVALID_NAME "invalid_tool_name"

/* ---------------------------------------------------------------------------------------
 * Names
 */

/*
 * Each enum of this section and its name functions come from one list (an X-macro), so the
 * names cannot drift from the values. Values only grow.
 *
 * Modes: auto (success cap 5), single (success cap 1), propose (check calls, do not run them).
 */
#define REIN_AGENT_MODE_MAP(X)          X(AUTO, "auto") X(SINGLE, "single") X(PROPOSE, "propose")
#define REIN__AGENT_MODE_ENUM(id, name) REIN_AGENT_MODE_##id,
enum rein_agent_mode { REIN_AGENT_MODE_MAP(REIN__AGENT_MODE_ENUM) };
#undef REIN__AGENT_MODE_ENUM
/* "auto", "single", "propose". */
REIN_EXTERN const char *rein_agent_mode_name(enum rein_agent_mode mode);
/* false (and *out unchanged) for anything else. */
REIN_EXTERN bool rein_agent_mode_parse(const char *text, enum rein_agent_mode *out);

#define REIN_AGENT_VERIFY_MAP(X)          X(AUTO, "auto") X(FORCE, "force") X(OFF, "off")
#define REIN__AGENT_VERIFY_ENUM(id, name) REIN_AGENT_VERIFY_##id,
enum rein_agent_verification { REIN_AGENT_VERIFY_MAP(REIN__AGENT_VERIFY_ENUM) };
#undef REIN__AGENT_VERIFY_ENUM
/* "auto", "force", "off". */
REIN_EXTERN const char *rein_agent_verification_name(enum rein_agent_verification v);
REIN_EXTERN bool rein_agent_verification_parse(const char *text, enum rein_agent_verification *out);

/*
 * Why a turn stopped (docs/DESIGN.md's list plus three, docs/decisions/0006). Values only grow.
 *   final_answer    the model answered without tool calls
 *   max_iterations  the hard cap on model responses
 *   success_cap     the mode's success cap (a summary follows)
 *   token_budget    the next request would pass max_tokens
 *   timeout         timeout_ms passed
 *   cancelled       the cancel handle was triggered
 *   provider_error  the model could not be asked
 *   stalled         loop detection
 *   max_tool_calls  max_tool_calls reached
 *   proposed        propose mode: calls are waiting for approval
 *   error           rein could not go on: the message hook failed, memory
 */
#define REIN_AGENT_STOP_MAP(X)                                                                     \
    X(FINAL_ANSWER, "final_answer")                                                                \
    X(MAX_ITERATIONS, "max_iterations")                                                            \
    X(SUCCESS_CAP, "success_cap")                                                                  \
    X(TOKEN_BUDGET, "token_budget")                                                                \
    X(TIMEOUT, "timeout")                                                                          \
    X(CANCELLED, "cancelled")                                                                      \
    X(PROVIDER_ERROR, "provider_error")                                                            \
    X(STALLED, "stalled")                                                                          \
    X(MAX_TOOL_CALLS, "max_tool_calls")                                                            \
    X(PROPOSED, "proposed")                                                                        \
    X(ERROR, "error")
#define REIN__AGENT_STOP_ENUM(id, name) REIN_AGENT_STOP_##id,
enum rein_agent_stop { REIN_AGENT_STOP_MAP(REIN__AGENT_STOP_ENUM) };
#undef REIN__AGENT_STOP_ENUM
/* "final_answer", "max_iterations", "success_cap", "token_budget", "timeout", "cancelled",
 * "provider_error", "stalled", "max_tool_calls", "proposed", "error". */
REIN_EXTERN const char *rein_agent_stop_name(enum rein_agent_stop stop);

/* What the turn is doing (the status event, and a lock's state on the server). */
#define REIN_AGENT_STATE_MAP(X)                                                                    \
    X(IDLE, "idle")                                                                                \
    X(THINKING, "thinking")                                                                        \
    X(EXECUTING, "executing")                                                                      \
    X(VERIFYING, "verifying")                                                                      \
    X(WAITING_APPROVAL, "waiting_approval")
#define REIN__AGENT_STATE_ENUM(id, name) REIN_AGENT_STATE_##id,
enum rein_agent_state { REIN_AGENT_STATE_MAP(REIN__AGENT_STATE_ENUM) };
#undef REIN__AGENT_STATE_ENUM
/* "idle", "thinking", "executing", "verifying", "waiting_approval". */
REIN_EXTERN const char *rein_agent_state_name(enum rein_agent_state state);

/* ---------------------------------------------------------------------------------------
 * Events
 *
 * The JSON of each event (rein_agent_event_write / _json), one object with "type" and "seq":
 *   {"type":"status","seq":1,"state":"executing","tool":"echo","call_id":"call_1"}
 *       (tool and call_id only while executing, verifying or waiting_approval)
 *   {"type":"text_delta","seq":2,"text":"Hel"}
 *   {"type":"tool_call","seq":3,"call_id":"call_1","tool":"echo","arguments":{…}|"raw text",
 *    "iteration":1}                     (tool: the name as the model sent it)
 *   {"type":"tool_result","seq":4,"call_id":"call_1","tool":"echo","status":"success",
 *    "ok":true,"latency_ms":0,"result":{…what the model reads…}}
 *       (status: success | error | invalid | proposed; result: the normalized result, the
 *        invalid payload, or the proposal)
 *   {"type":"approval_required","seq":5,"call_id":"call_2","tool":"delete_file",
 *    "arguments":{…},"timeout_ms":60000}
 *   {"type":"verification","seq":6,"call_id":"call_2","tool":"delete_file",
 *    "kind":"self_check"|"approval","passed":false,"reason":"…"}
 *   {"type":"final","seq":7,"text":"…","stop_reason":"final_answer","success":true}
 *   {"type":"error","seq":8,"kind":"retry"|"provider"|"warning"|"persistence"|"internal",
 *    "message":"…"}   (kind "retry": the reply is being asked for again; forget the text
 *                       deltas since the last status event)
 *   {"type":"claims","seq":9,"action":"reask"|"report","claims":[{kind, text, subject,
 *    status: "refuted", evidence, …}]}   (claims of the answer that the turn's own calls do
 *                       not back, include/rein/claims.h; "reask": verification force sends
 *                       them back to the model, which answers again; "report": the final
 *                       answer's, also in the result's meta.claims; before the final event)
 * ---------------------------------------------------------------------------------------*/

/* The event types (from 1) and their names, one list. */
#define REIN_AGENT_EV_MAP(X)                                                                       \
    X(STATUS, "status")                                                                            \
    X(TEXT_DELTA, "text_delta")                                                                    \
    X(TOOL_CALL, "tool_call")                                                                      \
    X(TOOL_RESULT, "tool_result")                                                                  \
    X(APPROVAL_REQUIRED, "approval_required")                                                      \
    X(VERIFICATION, "verification")                                                                \
    X(FINAL, "final")                                                                              \
    X(ERROR, "error")                                                                              \
    X(CLAIMS, "claims")
/* Types count from 1: no event has type 0. */
#define REIN__AGENT_EV_INDEX(id, name) REIN__AGENT_EV_INDEX_##id,
enum { REIN_AGENT_EV_MAP(REIN__AGENT_EV_INDEX) };
#define REIN__AGENT_EV_ENUM(id, name) REIN_AGENT_EV_##id = REIN__AGENT_EV_INDEX_##id + 1,
enum rein_agent_event_type { REIN_AGENT_EV_MAP(REIN__AGENT_EV_ENUM) };
#undef REIN__AGENT_EV_INDEX
#undef REIN__AGENT_EV_ENUM
/* "status", "text_delta", "tool_call", "tool_result", "approval_required", "verification",
 * "final", "error", "claims" (also the SSE event names). */
REIN_EXTERN const char *rein_agent_event_type_name(enum rein_agent_event_type type);

/* One event. Every pointer is borrowed for the duration of the callback. */
struct rein_agent_event {
    enum rein_agent_event_type type;
    uint64_t seq;                /* 1, 2, … within the turn */
    enum rein_agent_state state; /* STATUS */
    const char *text;            /* TEXT_DELTA, FINAL: answer text; ERROR: message;
                                    VERIFICATION: reason (NUL-terminated, len bytes) */
    size_t len;
    const char *call_id; /* TOOL_CALL, TOOL_RESULT, APPROVAL_REQUIRED, VERIFICATION, STATUS */
    const char *tool;    /* same */
    const char *json;    /* TOOL_CALL, APPROVAL_REQUIRED: the arguments; TOOL_RESULT: what the
                            model reads; CLAIMS: the refuted claims; always valid JSON text of
                            json_len bytes */
    size_t json_len;
    const char *kind;          /* TOOL_RESULT: ledger status or "proposed"; VERIFICATION:
                                  "self_check" | "approval"; ERROR: the kind; CLAIMS: the
                                  action */
    bool ok;                   /* TOOL_RESULT: ran and succeeded; VERIFICATION: passed;
                                  FINAL: the turn succeeded */
    enum rein_agent_stop stop; /* FINAL */
    int iteration;             /* TOOL_CALL */
    int64_t latency_ms;        /* TOOL_RESULT */
    int64_t timeout_ms;        /* APPROVAL_REQUIRED */
    /* A code a front end translates, NULL otherwise. VERIFICATION of kind "approval": what
     * became of the question (approved, denied, timeout, cancelled, unavailable); of kind
     * "self_check": what the reason is (approved, rejected: a bare YES / NO; said: the
     * verifier's own words; unclear: neither YES nor NO; failed: it could not be asked).
     * FINAL: "composed" when rein wrote the answer because the model gave none (a cancelled
     * or failed turn), so a front end may say it in its own language. */
    const char *code;
};
typedef void (*rein_agent_event_fn)(const struct rein_agent_event *ev, void *userdata);

/* Appends the event's JSON (one line, no newline) to out. REIN_ENOMEM / REIN_ETOOBIG. */
REIN_EXTERN rein_err rein_agent_event_write(const struct rein_agent_event *ev,
                                            struct rein_buf *out) REIN_WUR;
/* The event as a new JSON object, NULL when memory is exhausted. */
REIN_EXTERN json_t *rein_agent_event_json(const struct rein_agent_event *ev);

/* ---------------------------------------------------------------------------------------
 * Callbacks a caller plugs in
 */

/* A destructive call waiting for a person. Everything is borrowed for the callback. */
struct rein_agent_approval {
    const char *call_id;
    const char *tool;
    const json_t *args; /* validated, defaults filled */
    const char *trace_id;
    const char *conversation_id; /* NULL when the turn has none */
    int64_t timeout_ms;          /* how long to wait */
    rein_cancel *cancel;         /* the turn's: stop waiting when it is triggered */
};
/*
 * Asks for approval: REIN_OK with *approved set to the answer; REIN_ETIMEDOUT when nobody
 * answered in time (denied); REIN_ECANCELED when cancel was triggered while waiting. Any
 * other code denies the call with err's message as the reason.
 */
typedef rein_err (*rein_agent_approval_fn)(void *userdata, const struct rein_agent_approval *req,
                                           bool *approved, rein_error *err);

/*
 * Persistence hooks (a store writes what it gets durably before returning).
 *   message: called after each message the turn appends to the history (system prompt, user
 *            message, assistant replies, tool results), with its position in the history,
 *            on the turn's thread, before the next model call. An error stops the turn
 *            (stop reason "error"): a conversation that cannot be saved is not continued.
 *   ledger:  the ledger's hook (rein_ledger_hook_fn): every change of every entry, pending
 *            before a call runs. An error on a pending entry makes the call fail as internal
 *            without running.
 *   before_call: called on the call's thread once a call has passed its checks (its pending
 *            entry went to ledger, any person approved it), right before it runs. A store
 *            that only queued what the other hooks gave it makes it durable here: the call
 *            runs only when this returns REIN_OK; an error makes it fail as internal without
 *            running. With before_call set, ledger may return before a pending entry is on
 *            disk (it must be by the time before_call returns).
 * Any may be NULL.
 */
struct rein_agent_persist {
    rein_err (*message)(void *userdata, size_t position, const json_t *msg, rein_error *err);
    rein_ledger_hook_fn ledger;
    void *userdata;
    rein_err (*before_call)(void *userdata, const char *call_id, rein_error *err);
};

/* Per-turn options. A zeroed struct means every default. Members are only ever appended. */
struct rein_agent_turn_opts {
    enum rein_agent_mode mode;
    enum rein_agent_verification verification;
    int max_iterations;          /* 0: 10 */
    int success_cap;             /* 0: by mode (single 1, auto 5) */
    int max_tool_calls;          /* 0: no limit beyond max_iterations */
    int64_t max_tokens;          /* token budget of the turn (input + output, all calls); 0: none */
    int64_t timeout_ms;          /* 0: none */
    int64_t approval_timeout_ms; /* 0: 60000 */
    rein_cancel *cancel;         /* borrowed; NULL: not cancellable from outside */
    rein_agent_event_fn on_event;
    void *event_data;
    rein_agent_approval_fn approve; /* NULL: destructive calls need no person */
    void *approval_data;
    const struct rein_agent_persist *persist; /* borrowed; NULL: nothing persisted */
    rein_ledger *ledger; /* borrowed; NULL: the turn keeps its own (see the result) */
    bool has_step;       /* the turn is a plan step: ledger entries carry step */
    int step;
    const char *const *tools; /* borrowed: the tools offered (ids); NULL: every tool */
    size_t tool_count;
    const char *conversation_id; /* borrowed, copied into the result; may be NULL */
    const char *trace_id;        /* borrowed; NULL: a new trace id */
};

/* ---------------------------------------------------------------------------------------
 * The agent
 */

/*
 * New agent over provider and reg (both borrowed; they must outlive the agent). The tools
 * offered are the registry's (restricted per turn by opts.tools); the system prompt is the
 * default one. REIN_EINVAL without a provider or registry; REIN_ENOMEM.
 */
REIN_EXTERN rein_agent *rein_agent_new(rein_provider *provider, const rein_registry *reg,
                                       rein_error *err);
/* Frees the agent (and its own pool). NULL is a no-op. */
REIN_EXTERN void rein_agent_free(rein_agent *a);

/*
 * Replaces the first part of the system prompt, the assistant's role (text copied; NULL
 * restores the default). rein's tool-use section (how to read tool errors, fix the arguments
 * and call again; the confidence line when it applies) always follows it.
 */
REIN_EXTERN rein_err rein_agent_set_system_prompt(rein_agent *a, const char *text) REIN_WUR;
/* The whole system prompt a new conversation starts with. Borrowed, valid until the next
 * setter call. */
REIN_EXTERN const char *rein_agent_system_prompt(const rein_agent *a);
/* The part of every system prompt that tells a model how to read tool results and recover
 * from failed calls (003_1ff4919009b415e8.txt), for others who instruct a model (the MCP
 * server's tool_use_rules prompt). Static text. */
REIN_EXTERN const char *rein_agent_tool_rules(void);
/*
 * Self-verification (001_f66c1098d8de8c01.txt): the reviewer's instructions (static) and the
 * question about one call: request (what the user asked), tool and args (borrowed). The
 * question is new (rein_free it), or NULL when memory is exhausted. The agent asks its
 * verifier exactly this; the MCP server can ask a client's model the same.
 */
REIN_EXTERN const char *rein_agent_review_system(void);
REIN_EXTERN char *rein_agent_review_question(const char *request, const rein_tool *tool,
                                             const json_t *args);
/* Reads a reviewer's answer: true for YES (是), false for NO or anything else; reason (size
 * bytes) gets the reason given, or says the answer was not YES or NO. */
REIN_EXTERN bool rein_agent_review_verdict(const char *answer, char *reason, size_t size);
/* The pool parallel calls run on (borrowed; must outlive the agent). NULL: the agent's own
 * pool of 4 workers, made on first use. */
REIN_EXTERN void rein_agent_set_pool(rein_agent *a, rein_pool *pool);
/* At most n calls of one reply at once (0: 8). */
REIN_EXTERN void rein_agent_set_max_parallel(rein_agent *a, unsigned n);
/*
 * The rules provider (borrowed; provider "rules") tried first as a fast path: when it routes
 * the message, the turn continues with it without asking the model; when it cannot, or when
 * a routed call fails, the model takes over. NULL turns the fast path off (the default).
 */
REIN_EXTERN void rein_agent_set_rules(rein_agent *a, rein_provider *rules);
/* The provider that answers self-verification questions (borrowed). NULL: the agent's. */
REIN_EXTERN void rein_agent_set_verifier(rein_agent *a, rein_provider *verifier);
/*
 * An observer of what the agent's turns do, for counters and gauges (the server's metrics
 * implement one: rein_metrics_observe_agent() in <rein/metrics.h>). Each member may be NULL.
 * Every pointer is borrowed for the duration of the call.
 */
/* One model request as the observer sees it (every pointer borrowed for the call). */
struct rein_agent_model_call {
    const char *provider; /* rein_provider_name */
    const char *model;    /* the model asked for */
    /* The model that answered as the reply named it (rein_model_response_model), or NULL
     * when it did not (Bedrock) or no reply came. */
    const char *response_model;
    double seconds;        /* from sending to the end of the reply */
    int64_t input_tokens;  /* -1 when the reply did not say */
    int64_t output_tokens; /* -1 when the reply did not say */
    const char *error;     /* NULL, "timeout" or the rein_err_name of the failure */
};
struct rein_agent_observer {
    /* A turn started (+1) or ended (-1); on the turn's thread. */
    void (*turn_running)(void *userdata, int delta);
    /* A tool call was answered (not in propose mode): the tool's real name (NULL for a name
     * no tool has, so a model cannot invent label values) and its ledger status
     * (rein_call_status_name); on the thread that ran the call, concurrently for parallel
     * calls. */
    void (*tool_call)(void *userdata, const char *tool, const char *status);
    /* A model request failed: the provider's name and "timeout" or the rein_err_name of the
     * failure; on the turn's thread. */
    void (*provider_error)(void *userdata, const char *provider, const char *kind);
    void *userdata;
    /* A model request ended, answered or not (the GenAI client metrics: token usage and
     * operation duration); on the turn's thread. */
    void (*model_call)(void *userdata, const struct rein_agent_model_call *call);
};
/* Sets the observer (copied; its userdata borrowed and must outlive the agent). NULL (the
 * default): nothing observed. Call before turns run. */
REIN_EXTERN void rein_agent_set_observer(rein_agent *a, const struct rein_agent_observer *obs);
/* The context window in tokens (0: the provider's capability table). */
REIN_EXTERN void rein_agent_set_context_window(rein_agent *a, int64_t tokens);
/*
 * The lowest confidence a model's reply states ("confidence: 0.7", "Confidence: 70%",
 * "置信度：0.7"), in [0, 1]; -1 when it states none. text: borrowed, NUL-terminated. The turn
 * uses it for verification "auto"; rein loop for its stop decision.
 */
REIN_EXTERN double rein_agent_stated_confidence(const char *text);
/* The registry the agent was made with (borrowed). */
REIN_EXTERN const rein_registry *rein_agent_registry(const rein_agent *a);

/*
 * Runs one turn: appends message (borrowed; copied) to h (borrowed; the conversation so far,
 * which the turn appends to; when it is empty the system prompt goes first), then the loop
 * described above. Unanswered tool calls already in h (a turn that died) are answered first
 * with "cancelled" results. opts may be NULL (defaults).
 *
 * Returns REIN_OK and a new result in *out whenever the turn ran, whatever its stop reason
 * (look at rein_agent_result_stop()); fails only with REIN_EINVAL (a NULL argument, an empty
 * message, an unknown tool in opts.tools: err says which) or REIN_ENOMEM before anything was
 * appended.
 */
REIN_EXTERN rein_err rein_agent_run(rein_agent *a, rein_history *h, const char *message,
                                    const struct rein_agent_turn_opts *opts,
                                    rein_agent_result **out, rein_error *err) REIN_WUR;

/*
 * Gives every tool call in h that has no tool result one, with a "cancelled" normalized result
 * saying why (reason: borrowed, e.g. "the server restarted"; NULL: "the turn that made it
 * ended before it ran"). Results for calls of the last assistant message are appended (and
 * *added counts them); a call left unanswered earlier in the history (before a later user or
 * assistant message) gets its result inserted right after its siblings' results, which
 * rebuilds the rest of the history. rein_agent_run() does this itself; a caller that restores
 * a conversation may call it to persist the results. REIN_ENOMEM leaves h unchanged.
 */
REIN_EXTERN rein_err rein_agent_history_repair(rein_history *h, const char *reason, size_t *added,
                                               rein_error *err) REIN_WUR;
/*
 * The calls a dead turn had started: their ledger entries were written (pending) before they
 * ran, so their process may have done its work. ids borrowed (count of them); reg (borrowed,
 * may be NULL) tells which tools are destructive.
 */
struct rein_agent_started {
    const char *const *ids;
    size_t count;
    const rein_registry *reg;
};
/*
 * rein_agent_history_repair(), except that a call listed in started (may be NULL) is answered
 * "interrupted": it may have run, never "not run"; a destructive tool's result tells the person
 * to check what it changed before calling it again.
 */
REIN_EXTERN rein_err rein_agent_history_repair_started(rein_history *h, const char *reason,
                                                       const struct rein_agent_started *started,
                                                       size_t *added, rein_error *err) REIN_WUR;

/* ---------------------------------------------------------------------------------------
 * Results
 */

REIN_EXTERN void rein_agent_result_free(rein_agent_result *r);
REIN_EXTERN enum rein_agent_stop rein_agent_result_stop(const rein_agent_result *r);
/*
 * Success means success: true for final_answer, success_cap and proposed, when no ledger
 * entry of the turn is pending, unless the turn made tool calls and none of them succeeded,
 * every call was denied, or the rules provider could not route the request (its reply's
 * finish reason "unroutable"); then false, and the detail says which. A proposed call
 * (checked, not run) counts as one that succeeded. The same rule for every front end (rein chat's exit status, POST /agent/chat).
 */
REIN_EXTERN bool rein_agent_result_success(const rein_agent_result *r);
/* The answer (the model's, or composed by rein when the model could not give one). Borrowed,
 * never NULL. */
REIN_EXTERN const char *rein_agent_result_text(const rein_agent_result *r);
/* Why the turn stopped, in words ("file_search failed three times in a row with …"), and
 * why it did not succeed ("none of the 1 tool call succeeded; the last: calculator: …");
 * "" for a successful final answer. Borrowed, never NULL. */
REIN_EXTERN const char *rein_agent_result_detail(const rein_agent_result *r);
REIN_EXTERN const char *rein_agent_result_trace_id(const rein_agent_result *r);
/* Tool calls the model made in the turn. */
REIN_EXTERN size_t rein_agent_result_tool_call_count(const rein_agent_result *r);
/* Tokens reported by the providers for the turn's model calls (verification included). */
REIN_EXTERN int64_t rein_agent_result_input_tokens(const rein_agent_result *r);
REIN_EXTERN int64_t rein_agent_result_output_tokens(const rein_agent_result *r);
REIN_EXTERN int64_t rein_agent_result_latency_ms(const rein_agent_result *r);
/* Model calls made (verification excluded) and responses that carried tool calls. */
REIN_EXTERN int rein_agent_result_model_calls(const rein_agent_result *r);
REIN_EXTERN int rein_agent_result_iterations(const rein_agent_result *r);
/* The ledger the turn wrote (its own, or opts.ledger). Borrowed, valid while r is (and, for
 * opts.ledger, while that ledger is). */
REIN_EXTERN rein_ledger *rein_agent_result_ledger(const rein_agent_result *r);
/*
 * The result object of POST /agent/chat (new reference, NULL when memory is exhausted):
 *   {"success", "response", "conversation_id" (null when none), "trace_id",
 *    "tool_calls": [{"call_id", "tool", "sent_name", "arguments", "status", "result",
 *                    "latency_ms", "iteration", "verification"?: {"passed", "reason"},
 *                    "approval"?: {"approved", "reason"}}],
 *    "meta": {"total_tokens", "input_tokens", "output_tokens", "tool_calls_count",
 *             "latency_ms", "stop_reason", "iterations", "model_calls", "mode",
 *             "provider", "model" (null when none), "detail"?,
 *             "claims": [refuted claims of the answer, as in the claims event]}}
 * status is the ledger's (success | error | invalid) or "proposed"; result is the normalized
 * result (rein_call_result_json: {ok, tool, call_id, trace_id, output | error, meta,
 * invalid_payload?}, the shape every path shows), null for a proposal;
 * arguments are the parsed value (defaults filled) or the raw text when it did not parse.
 */
REIN_EXTERN json_t *rein_agent_result_json(const rein_agent_result *r);
/* Appends to out (borrowed) the compact text of rein_agent_result_json(r), byte for byte what
 * rein_json_dump() writes of it, without building the tree in the common case. On failure
 * (REIN_ENOMEM, or REIN_EPARSE where the tree could not be built either) out is left as it
 * was. */
REIN_EXTERN rein_err rein_agent_result_json_text(const rein_agent_result *r,
                                                 struct rein_buf *out) REIN_WUR;
/* The refuted claims of the answer (borrowed JSON array, valid while r is; empty when none
 * or when verification was off). */
REIN_EXTERN const json_t *rein_agent_result_claims(const rein_agent_result *r);
/* Just the tool_calls array above (new reference). */
REIN_EXTERN json_t *rein_agent_result_tool_calls_json(const rein_agent_result *r);

#ifdef __cplusplus
}
#endif
#endif /* REIN_AGENT_H */
