/*
 * rein/plan.h: the plan engine (docs/DESIGN.md [cortex], "Cortex"): a planner turns a request
 * into a plan of steps with dependencies, an executor runs every ready step as an agent turn
 * (several at once), a verifier checks each finished step against its ledger, and a replanner
 * rewrites or splits a step that failed, at most twice, before the step is blocked. One last
 * model call turns the steps' outputs into the answer.
 *
 *   planner (create_plan) → [executor → verifier → (replanner: rewrite | split | give_up)] …
 *                         → aggregation
 *
 * The plan (rein_plan) is plain data and can be used on its own: the seed's fields and
 * methods, saved and loaded as JSON with the seed's field names:
 *   {"title", "query", "steps": ["…"], "dependencies": {"<i>": [j, …]},
 *    "step_statuses": {"<i>": "not_started|in_progress|completed|blocked|skipped"},
 *    "step_notes": {"<i>": "…"}, "step_tool_history": {"<i>": [ledger entry + "attempt"
 *    (+ "interrupted": true)]}, "step_files": {"<i>": ["path"]},
 *    "step_outputs": {"<i>": "…"}, "replan_attempts": {"<i>": n}, "answer"?}
 * Indices are 0-based positions in "steps". A history entry is the ledger's entry
 * (include/rein/tools.h) plus the replan count it was made under ("attempt"); the verifier
 * looks only at the entries of the step's current attempt.
 *
 * Nothing here bypasses the call pipeline: create_plan and replan are tools (JSON Schema,
 * preflight, and a check of their meaning: indices in range, no cycles) run by
 * rein_call_run() inside agent turns, so an invalid plan goes back to the model as the usual
 * invalid payload and the model tries again; every step is an agent turn (rein_agent_run)
 * whose calls land in that step's history through a ledger hook.
 *
 * Threading: a rein_plan belongs to one thread at a time. A rein_planner is configured by one
 * thread and then runs any number of plans at once on any threads; during a run the engine
 * owns the plan it was given. Event callbacks are never called twice at the same time.
 */
#ifndef REIN_PLAN_H
#define REIN_PLAN_H

#include <rein/agent.h>
#include <rein/buf.h>
#include <rein/cancel.h>
#include <rein/json.h>
#include <rein/pool.h>
#include <rein/provider.h>
#include <rein/tools.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_plan rein_plan;
typedef struct rein_planner rein_planner;
typedef struct rein_plan_result rein_plan_result;

/* Most steps a plan may have (planner, replanner and files alike). */
#define REIN_PLAN_MAX_STEPS 256
/* Replans per step before it is blocked (3 chances in all). */
#define REIN_PLAN_MAX_REPLANS 2

/* ---------------------------------------------------------------------------------------
 * The plan
 */

/* A step's (and a plan's) status; the enum and its names come from this one list. */
#define REIN_PLAN_STATUS_MAP(X)                                                                    \
    X(NOT_STARTED, "not_started")                                                                  \
    X(IN_PROGRESS, "in_progress")                                                                  \
    X(COMPLETED, "completed")                                                                      \
    X(BLOCKED, "blocked")                                                                          \
    X(SKIPPED, "skipped")
#define REIN__PLAN_STATUS_ENUM(id, name) REIN_PLAN_##id,
enum rein_plan_status { REIN_PLAN_STATUS_MAP(REIN__PLAN_STATUS_ENUM) };
#undef REIN__PLAN_STATUS_ENUM
/* "not_started", "in_progress", "completed", "blocked", "skipped". */
REIN_EXTERN const char *rein_plan_status_name(enum rein_plan_status s);
/* false (and *out unchanged) for anything else. */
REIN_EXTERN bool rein_plan_status_parse(const char *text, enum rein_plan_status *out);

/* A new plan with no steps. title and query (may be NULL: "") are copied. NULL when memory is
 * exhausted. */
REIN_EXTERN rein_plan *rein_plan_new(const char *title, const char *query);
/* NULL is a no-op. */
REIN_EXTERN void rein_plan_free(rein_plan *p);

/*
 * Checks create_plan's arguments, {title, steps: [string], dependencies?: {"<i>": [j]}}
 * (borrowed): at least one step and at most REIN_PLAN_MAX_STEPS, every index in range, no step
 * depending on itself, no cycle. REIN_EINVALID with the first problem in err; when details is
 * not NULL it gets a new array of every problem as {path, message} (JSON Pointers into args).
 */
REIN_EXTERN rein_err rein_plan_spec_check(const json_t *args, json_t **details,
                                          rein_error *err) REIN_WUR;
/* A new plan from create_plan's arguments (checked as above) and the query (copied). */
REIN_EXTERN rein_plan *rein_plan_from_spec(const json_t *args, const char *query, rein_error *err);

/*
 * A plan from its saved JSON (borrowed; untrusted: every member is checked, indices, statuses
 * and types, cycles refused, unknown members refused except "x-…"). REIN_EPARSE with the
 * JSON Pointer of the problem in err. Statuses are taken as saved (see rein_plan_resume_reset).
 */
REIN_EXTERN rein_plan *rein_plan_from_json(const json_t *doc, rein_error *err);
/* The same from len bytes of text (borrowed), with line and column for syntax errors. */
REIN_EXTERN rein_plan *rein_plan_parse(const char *text, size_t len, rein_error *err);
/* Reads a plan file; err names the file. */
REIN_EXTERN rein_plan *rein_plan_load_file(const char *path, rein_error *err);
/* The saved shape above (new reference), NULL when memory is exhausted. */
REIN_EXTERN json_t *rein_plan_to_json(const rein_plan *p);
/* Writes the plan to path atomically (a temporary file in the same folder, flushed to disk,
 * renamed over path), so a reader or a crash sees the old file or the new one, whole.
 * REIN_EIO with errno in err->detail. */
REIN_EXTERN rein_err rein_plan_save_file(const rein_plan *p, const char *path,
                                         rein_error *err) REIN_WUR;

/*
 * Prepares a loaded plan to run again: every in_progress step goes back to not_started and the
 * entries of its current attempt are kept and marked "interrupted": true (a pending one was a
 * call lost with the process); steps that depend on a blocked or skipped step are skipped.
 * Returns how many steps were reset.
 */
REIN_EXTERN size_t rein_plan_resume_reset(rein_plan *p);

/* Accessors. Strings are borrowed from the plan, valid until the next change of that step
 * (or of the plan, for title, query and answer). Out-of-range indices give NULL, 0, false. */
REIN_EXTERN const char *rein_plan_title(const rein_plan *p);
REIN_EXTERN const char *rein_plan_query(const rein_plan *p);
/* The aggregated answer, or NULL before there is one. */
REIN_EXTERN const char *rein_plan_answer(const rein_plan *p);
REIN_EXTERN rein_err rein_plan_set_answer(rein_plan *p, const char *answer) REIN_WUR;
REIN_EXTERN size_t rein_plan_step_count(const rein_plan *p);
REIN_EXTERN const char *rein_plan_step_description(const rein_plan *p, size_t i);
REIN_EXTERN enum rein_plan_status rein_plan_step_status(const rein_plan *p, size_t i);
/* The step's note, or NULL. */
REIN_EXTERN const char *rein_plan_step_note(const rein_plan *p, size_t i);
/* The steps step i depends on (*n of them); borrowed. */
REIN_EXTERN const int *rein_plan_step_deps(const rein_plan *p, size_t i, size_t *n);
/* replan_attempts[i]. */
REIN_EXTERN int rein_plan_step_replans(const rein_plan *p, size_t i);
REIN_EXTERN void rein_plan_set_step_replans(rein_plan *p, size_t i, int n);
/* step_tool_history[i] (borrowed array; every attempt). */
REIN_EXTERN const json_t *rein_plan_step_history(const rein_plan *p, size_t i);
/* step_files[i] (borrowed array of strings). */
REIN_EXTERN const json_t *rein_plan_step_files(const rein_plan *p, size_t i);

/*
 * Adds a step that depends on deps (n indices of existing steps; borrowed). *index (may be
 * NULL) gets its position. REIN_EINVAL for an index out of range, REIN_ETOOBIG past
 * REIN_PLAN_MAX_STEPS.
 */
REIN_EXTERN rein_err rein_plan_add_step(rein_plan *p, const char *description, const int *deps,
                                        size_t n, size_t *index, rein_error *err) REIN_WUR;

/* mark_step: sets the status and, when note is not NULL, the note ("" clears it). */
REIN_EXTERN rein_err rein_plan_mark_step(rein_plan *p, size_t i, enum rein_plan_status status,
                                         const char *note) REIN_WUR;
/* Steps that may start: not_started with every dependency completed. Writes at most max
 * indices to out (may be NULL with max 0) and returns how many there are. */
REIN_EXTERN size_t rein_plan_ready_steps(const rein_plan *p, size_t *out, size_t max);
/* True when no step is not_started or in_progress. */
REIN_EXTERN bool rein_plan_is_finished(const rein_plan *p);
/*
 * After step i was blocked: every step that depends on it, directly or not, and has not run
 * becomes skipped with the note "skipped: step <i> (…) is blocked". Returns how many.
 */
REIN_EXTERN size_t rein_plan_skip_dependents(rein_plan *p, size_t i);

/*
 * add_tool_call: appends a pending entry {call_id, tool, args, status, result, call_time,
 * response_time, step, attempt} to step i's history. call_id (may be NULL: a new one) and tool
 * are copied, args (may be NULL) is borrowed and copied.
 */
REIN_EXTERN rein_err rein_plan_add_tool_call(rein_plan *p, size_t i, const char *call_id,
                                             const char *tool, const json_t *args,
                                             rein_error *err) REIN_WUR;
/*
 * update_tool_result: the pending entry of step i's current attempt this result belongs to
 * (by call_id when given, else the oldest pending call of tool: first in, first out) gets
 * status and result (borrowed, copied). REIN_ENOTFOUND when none matches.
 */
REIN_EXTERN rein_err rein_plan_update_tool_result(rein_plan *p, size_t i, const char *call_id,
                                                  const char *tool, enum rein_call_status status,
                                                  const json_t *result, rein_error *err) REIN_WUR;
/*
 * Records a ledger entry (borrowed; the shape of rein_ledger_entry_json, as a ledger hook gets
 * it) in step i's history: it replaces the entry of the current attempt with the same call_id,
 * or is appended. Its "step" becomes i and "attempt" the step's replan count.
 */
REIN_EXTERN rein_err rein_plan_record_entry(rein_plan *p, size_t i, const json_t *entry,
                                            rein_error *err) REIN_WUR;
/* finalize_step: a new array of the entries of step i's current attempt (entries whose
 * "attempt" is the step's replan count and that are not marked "interrupted") that are still
 * pending. NULL when memory is exhausted. */
REIN_EXTERN json_t *rein_plan_finalize_step(const rein_plan *p, size_t i);
/* rewrite_step: a new description (copied); the step's status and history stay. */
REIN_EXTERN rein_err rein_plan_rewrite_step(rein_plan *p, size_t i, const char *description,
                                            rein_error *err) REIN_WUR;
/*
 * split_step: step i is replaced, in place, by the n steps of descs (borrowed, copied); the
 * steps after it move up by n - 1, and every index in the plan (dependencies, statuses,
 * notes, histories, files, outputs, replan counts) follows, so completed steps keep their
 * status and output. deps (may be NULL) maps the new steps' local indices to local indices,
 * {"1": [0]}. Each new step depends on what step i depended on, plus its local dependencies;
 * each step that depended on step i depends instead on the new steps no other new step depends
 * on. The first new step keeps step i's history and note; every new step starts not_started
 * with step i's replan count. REIN_EINVALID (err says why) for an empty list, a bad local
 * index or a cycle; the plan is then unchanged.
 */
REIN_EXTERN rein_err rein_plan_split_step(rein_plan *p, size_t i, const char *const *descs,
                                          size_t n, const json_t *deps, rein_error *err) REIN_WUR;
/* get_step_output: the output of a completed step, or NULL. */
REIN_EXTERN const char *rein_plan_get_step_output(const rein_plan *p, size_t i);
/* Sets step i's output (copied; NULL removes it). */
REIN_EXTERN rein_err rein_plan_set_step_output(rein_plan *p, size_t i, const char *output) REIN_WUR;

/* ---------------------------------------------------------------------------------------
 * The verifier: pure C, no model.
 */

/*
 * verify_step: passes when step i's current attempt made no calls or none of them is pending
 * (the seed's rule), and, when text (the step's final answer; may be NULL) is given, when no
 * claim of the text is refuted by the attempt's ledger (include/rein/claims.h): a tool the text
 * says ran must have a successful call in this attempt, and a file or function the text says
 * the step wrote or deleted must be named by a successful call of a tool that may write
 * (read_only tools, when reg tells, do not count). Future, conditional, modal, imperative,
 * negated and failure sentences and questions claim nothing. reg (borrowed; may be NULL) and
 * tools (n names, borrowed; may be NULL) name the tools the text may mention, besides those in
 * the ledger.
 *
 * When report is not NULL it gets a new object:
 *   {"passed", "reason", "pending": [entry], "failed_calls": [entry (error | invalid)],
 *    "claims": [{"kind", "text", "subject", "status": "refuted", "evidence", "reason", …}]}
 * which is what the replanner is shown; "reason" names the first refuted claim.
 */
REIN_EXTERN bool rein_plan_verify_step(const rein_plan *p, size_t i, const char *text,
                                       const rein_registry *reg, const char *const *tools, size_t n,
                                       json_t **report);

/* ---------------------------------------------------------------------------------------
 * Showing a plan
 */

/* The plan as text, one line per step with status, dependencies, replans and note. */
REIN_EXTERN rein_err rein_plan_write_text(const rein_plan *p, struct rein_buf *out) REIN_WUR;
/* The plan as a Graphviz DOT digraph: a node per step (coloured by status), an edge from each
 * dependency to its dependent. */
REIN_EXTERN rein_err rein_plan_write_dot(const rein_plan *p, struct rein_buf *out) REIN_WUR;

/* ---------------------------------------------------------------------------------------
 * The tools the planner and the replanner call (their manifests, for display and tests)
 */

/*
 * The replanner's decision, the seed's ReplanResult, checked:
 *   {"action": "rewrite", "new_description": "…"}
 *   {"action": "split", "new_steps": ["…", …], "new_dependencies"?: {"1": [0]}}
 *   {"action": "give_up", "reason"?: "…"}
 * REIN_EINVALID with the first problem in err and every problem in *details (may be NULL).
 */
REIN_EXTERN rein_err rein_plan_replan_check(const json_t *args, json_t **details,
                                            rein_error *err) REIN_WUR;
/* New manifests of create_plan and replan (new references). */
REIN_EXTERN json_t *rein_plan_create_plan_manifest(void);
REIN_EXTERN json_t *rein_plan_replan_manifest(void);

/* ---------------------------------------------------------------------------------------
 * Events of a run
 *
 * The JSON of each event (rein_plan_event_write), one object with "type" and "seq":
 *   {"type":"plan","seq":1,"plan":{…the saved shape…},"reason":"new|resumed|split",
 *    "resumed":false}       (again after a split, with the new steps)
 *   {"type":"step","seq":2,"step":0,"status":"in_progress","attempt":1,"description":"…",
 *    "note"?:"…"}
 *   {"type":"verification","seq":3,"step":0,"passed":false,"reason":"…","report":{…}}
 *   {"type":"replan","seq":4,"step":0,"action":"rewrite","decision":{…ReplanResult…}}
 *   {"type":"agent","seq":5,"phase":"plan|step|replan|answer","step"?:0,"event":{…the
 *    agent event (include/rein/agent.h)…}}
 *   {"type":"final","seq":9,"success":true,"stop_reason":"completed","answer":"…"}
 *   {"type":"error","seq":10,"message":"…"}
 * ---------------------------------------------------------------------------------------*/

/* The event types (from 1) and their names, one list. */
#define REIN_PLAN_EV_MAP(X)                                                                        \
    X(PLAN, "plan")                                                                                \
    X(STEP, "step")                                                                                \
    X(VERIFICATION, "verification")                                                                \
    X(REPLAN, "replan")                                                                            \
    X(AGENT, "agent")                                                                              \
    X(FINAL, "final")                                                                              \
    X(ERROR, "error")
#define REIN__PLAN_EV_INDEX(id, name) REIN__PLAN_EV_INDEX_##id,
enum { REIN_PLAN_EV_MAP(REIN__PLAN_EV_INDEX) };
#define REIN__PLAN_EV_ENUM(id, name) REIN_PLAN_EV_##id = REIN__PLAN_EV_INDEX_##id + 1,
enum rein_plan_event_type { REIN_PLAN_EV_MAP(REIN__PLAN_EV_ENUM) };
#undef REIN__PLAN_EV_INDEX
#undef REIN__PLAN_EV_ENUM
/* "plan", "step", "verification", "replan", "agent", "final", "error". */
REIN_EXTERN const char *rein_plan_event_type_name(enum rein_plan_event_type t);

/* One event. Every pointer is borrowed for the duration of the callback. */
struct rein_plan_event {
    enum rein_plan_event_type type;
    uint64_t seq;
    int step;                     /* STEP, VERIFICATION, REPLAN, AGENT (-1: none) */
    enum rein_plan_status status; /* STEP */
    int attempt;                  /* STEP: 1, 2, 3 */
    const char *phase;            /* AGENT: "plan", "step", "replan", "answer" */
    const char *text;             /* STEP: description; VERIFICATION: reason; FINAL: answer;
                                     ERROR: message; REPLAN: action; PLAN: "new", "resumed",
                                     "split" */
    const char *note;             /* STEP: the note, or NULL */
    bool ok;                      /* VERIFICATION: passed; FINAL: success; PLAN: resumed */
    const char *stop_reason;      /* FINAL */
    const json_t *data;           /* PLAN: the plan; VERIFICATION: report; REPLAN: the decision */
    const struct rein_agent_event *agent; /* AGENT */
};
typedef void (*rein_plan_event_fn)(const struct rein_plan_event *ev, void *userdata);

/* Appends the event's JSON (one line, no newline) to out. REIN_ENOMEM / REIN_ETOOBIG. */
REIN_EXTERN rein_err rein_plan_event_write(const struct rein_plan_event *ev,
                                           struct rein_buf *out) REIN_WUR;

/* ---------------------------------------------------------------------------------------
 * The engine
 */

/* Options of a run. A zeroed struct means every default. Members are only ever appended. */
struct rein_plan_opts {
    unsigned max_parallel; /* steps running at once; 0: 4 */
    int max_replans;       /* per step; 0: REIN_PLAN_MAX_REPLANS; < 0: none */
    int planner_attempts;  /* model replies the planner gets for a valid plan; 0: 3 */
    const char *save_path; /* borrowed; saved after every change (atomically); NULL: not */
    rein_cancel *cancel;   /* borrowed; NULL: not cancellable from outside */
    rein_plan_event_fn on_event;
    void *event_data;
    /* The template of every step's turn (mode, verification, limits, approvals). Its ledger,
     * step, cancel, events, persist and trace id are the engine's. tools (the allowlist) is
     * kept: NULL offers every tool of the registry. */
    struct rein_agent_turn_opts step;
};

/*
 * New engine over provider and reg (both borrowed; they must outlive it): the planner,
 * replanner and aggregation talk to provider; steps run with reg's tools. REIN_EINVAL without
 * them; REIN_ENOMEM.
 */
REIN_EXTERN rein_planner *rein_planner_new(rein_provider *provider, const rein_registry *reg,
                                           rein_error *err);
REIN_EXTERN void rein_planner_free(rein_planner *pl);
/* The agent that runs the steps (borrowed): set its pool, metrics, rules fast path, verifier
 * or context window there. Its system prompt is the engine's step prompt. */
REIN_EXTERN rein_agent *rein_planner_step_agent(rein_planner *pl);
/* The pool steps run on (borrowed; must outlive the engine). NULL: a pool of max_parallel
 * workers made for each run. */
REIN_EXTERN void rein_planner_set_pool(rein_planner *pl, rein_pool *pool);

/*
 * Asks the planner for a plan for query (borrowed): the model calls create_plan; an invalid
 * plan is answered with the invalid payload and the model tries again, planner_attempts
 * replies in all. REIN_EINVALID (err says what was wrong with the last try) when no valid plan
 * came; REIN_EPROVIDER when the model could not be asked; REIN_ECANCELED.
 */
REIN_EXTERN rein_err rein_planner_plan(rein_planner *pl, const char *query,
                                       const struct rein_plan_opts *opts, rein_plan **out,
                                       rein_error *err) REIN_WUR;

/*
 * Runs plan (taken, even on failure; the result owns it) to its end: ready steps, at most
 * max_parallel at once, each an agent turn that sees the query, its description and the
 * outputs of the steps it depends on; each verified; a failed one replanned (rewrite, split
 * or give_up) up to max_replans times, then blocked, its dependents skipped; then the
 * aggregation call. A loaded plan resumes: completed steps do not run again (call
 * rein_plan_resume_reset first, or let this do it: it does). A plan that already has an
 * answer and no step left to run is returned as is.
 *
 * Returns REIN_OK and a new result whenever the run took place, whatever happened to the
 * steps (see rein_plan_result_success); fails only with REIN_EINVAL or REIN_ENOMEM before
 * starting.
 */
REIN_EXTERN rein_err rein_planner_execute(rein_planner *pl, rein_plan *plan,
                                          const struct rein_plan_opts *opts, rein_plan_result **out,
                                          rein_error *err) REIN_WUR;

/* rein_planner_plan, then rein_planner_execute. A planner failure is returned as an error. */
REIN_EXTERN rein_err rein_planner_run(rein_planner *pl, const char *query,
                                      const struct rein_plan_opts *opts, rein_plan_result **out,
                                      rein_error *err) REIN_WUR;

/* ---------------------------------------------------------------------------------------
 * Results
 */
REIN_EXTERN void rein_plan_result_free(rein_plan_result *r);
/* The plan as it ended (borrowed, valid while r is). */
REIN_EXTERN rein_plan *rein_plan_result_plan(const rein_plan_result *r);
/* True when every step completed and the answer was made. */
REIN_EXTERN bool rein_plan_result_success(const rein_plan_result *r);
/* "completed", "blocked" (some steps blocked or skipped), "cancelled", "error". */
REIN_EXTERN const char *rein_plan_result_stop_reason(const rein_plan_result *r);
/* The answer (borrowed, never NULL). */
REIN_EXTERN const char *rein_plan_result_answer(const rein_plan_result *r);
/* Why the run stopped early, "" otherwise. */
REIN_EXTERN const char *rein_plan_result_detail(const rein_plan_result *r);
/*
 * The result object (new reference, NULL when memory is exhausted):
 *   {"success", "stop_reason", "detail"?, "title", "query", "answer",
 *    "steps": [{"index", "description", "status", "dependencies", "attempts", "replans",
 *               "note"?, "output"?, "files", "calls": [entry…]}],
 *    "meta": {"model_calls", "input_tokens", "output_tokens", "total_tokens", "tool_calls",
 *             "replans", "latency_ms"}}
 * attempts: how many times the step ran (replans + 1 once it has run, else 0).
 */
REIN_EXTERN json_t *rein_plan_result_json(const rein_plan_result *r);

#ifdef __cplusplus
}
#endif
#endif /* REIN_PLAN_H */
