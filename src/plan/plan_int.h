/*
 * Private header of src/plan: the plan's structs and the pieces the files of the module share.
 *
 * Layout: plan.c (the plan: steps, statuses, histories, rewrite and split), dag.c
 * (dependency checks: ranges and cycles), plan_json.c (create_plan's arguments, the saved
 * file: reading, writing, atomic save), verify.c (the verifier), show.c (text and DOT),
 * tools.c (the create_plan and replan tools), planner.c (the engine handle, the planner,
 * replanner and aggregation turns), execute.c (the executor: scheduling, the ledger mirror,
 * saving), events.c (event JSON), result.c (the result object).
 */
#ifndef REIN_PLAN_INT_H
#define REIN_PLAN_INT_H

#include <rein/plan.h>

#include "core/internal.h"

#include <pthread.h>
#include <stdatomic.h>

#define REIN__PLAN_WHERE "plan"

/*
 * One step. Invariants: desc is never NULL; deps holds ndeps distinct indices of other steps
 * of the plan, none equal to the step's own; history and files are arrays, never NULL;
 * output is NULL unless set; uid is unique in the plan and never reused, so the engine can
 * find a step again after a split moved it.
 */
struct rein__plan_step {
    uint64_t uid;
    char *desc;
    int *deps;
    size_t ndeps;
    enum rein_plan_status status;
    char *note;
    json_t *history;
    json_t *files;
    char *output;
    int replans;
};

struct rein_plan {
    char *title;
    char *query;
    char *answer; /* NULL until aggregated */
    struct rein__plan_step *steps;
    size_t n, cap;
    uint64_t next_uid;
};

/* ---- plan.c ---- */

/* mark_step that cannot fail: without memory for the note, the status still changes. */
void rein__plan_mark(rein_plan *p, size_t i, enum rein_plan_status status, const char *note);

/*
 * Text built in a bounded buffer where the first failure sticks, so prompts and messages are
 * written without checking every append: detach gives what fits (past max: cut there), or
 * NULL when memory ran out.
 */
struct rein__plan_text {
    struct rein_buf b;
    rein_err rc;
};
void rein__plan_text_init(struct rein__plan_text *t, size_t max);
void rein__plan_text_addf(struct rein__plan_text *t, const char *fmt, ...) REIN_PRINTF(2, 3);
void rein__plan_text_add(struct rein__plan_text *t, const char *s, size_t len);
void rein__plan_text_adds(struct rein__plan_text *t, const char *s);
void rein__plan_text_addch(struct rein__plan_text *t, char c);
char *rein__plan_text_detach(struct rein__plan_text *t);

/* Appends a step with no dependencies (desc copied). REIN_ENOMEM, REIN_ETOOBIG. */
rein_err rein__plan_push(rein_plan *p, const char *desc, size_t *index);
/* The index of the step with this uid, or -1. */
long rein__plan_find_uid(const rein_plan *p, uint64_t uid);
/* True when entry (a history entry) belongs to the step's current attempt. */
bool rein__plan_entry_current(const struct rein__plan_step *s, const json_t *entry);
/* Marks the entries of step i's current attempt "interrupted" (they no longer count). */
void rein__plan_step_interrupt(rein_plan *p, size_t i);
/* Sets deps of step i (copied, duplicates dropped). */
rein_err rein__plan_set_deps(rein_plan *p, size_t i, const int *deps, size_t n);

/* ---- dag.c ---- */

/*
 * Looks for a cycle among n nodes whose dependencies are deps[k] (ndeps[k] of them, all in
 * range). Returns true and writes the cycle, as text "0 → 2 → 1 → 0", into msg when there is
 * one.
 */
bool rein__plan_find_cycle(size_t n, int *const *deps, const size_t *ndeps, char *msg, size_t size);
/* Parses a canonical decimal index ("0", "12"; no sign, no leading zero) below limit. */
bool rein__plan_index_parse(const char *text, size_t limit, size_t *out);
/*
 * Reads a dependencies object ({"<i>": [j, …]}, borrowed) over n steps into deps/ndeps
 * (arrays of n, zeroed by the caller; free with rein__plan_deps_free). Problems are appended
 * to details as {path, message} with pointer prefix prefix ("/dependencies"); the first one
 * also goes into err. REIN_EINVALID when any, REIN_ENOMEM.
 */
rein_err rein__plan_deps_read(const json_t *obj, size_t n, const char *prefix, int **deps,
                              size_t *ndeps, json_t *details, rein_error *err);
void rein__plan_deps_free(int **deps, size_t n);
/* Appends {path, message} to details (may be NULL) and sets err (when it has no message yet).
 * Returns REIN_EINVALID. */
rein_err rein__plan_problem(json_t *details, rein_error *err, const char *path, const char *fmt,
                            ...) REIN_PRINTF(4, 5);
/* The arguments of a plan tool: an object whose members are all among names (NULL-terminated);
 * a problem for each other member ("unknown member: " + takes). REIN_EINVALID when not, with
 * every problem in details (may be NULL) and the first in err. */
rein_err rein__plan_args_members(const json_t *args, const char *const *names, const char *takes,
                                 json_t *details, rein_error *err);

/* ---- tools.c ---- */

/* Registers create_plan (into planner_reg) and replan (into replan_reg). */
rein_err rein__plan_register_tools(rein_registry *planner_reg, rein_registry *replan_reg,
                                   rein_error *err);

/* ---- the engine (planner.c, execute.c) ---- */

struct rein_planner {
    rein_provider *provider;
    const rein_registry *reg;
    rein_registry *planner_reg; /* create_plan */
    rein_registry *replan_reg;  /* replan */
    rein_agent *step_agent;
    rein_agent *planner_agent;
    rein_agent *replan_agent;
    rein_agent *answer_agent;
    rein_pool *pool; /* borrowed, or NULL */
};

/* Counters of a run (every turn's model calls, tokens and tool calls). */
struct rein__plan_stats {
    atomic_llong model_calls, in_tokens, out_tokens, tool_calls, replans;
};
void rein__plan_stats_add(struct rein__plan_stats *st, const rein_agent_result *r);

/*
 * Who receives the events of a run. emit() gives the event its seq and calls the callback
 * under mu, so the callback never runs twice at once.
 */
struct rein__plan_events {
    rein_plan_event_fn fn;
    void *data;
    pthread_mutex_t mu;
    uint64_t seq;
};
void rein__plan_emit(struct rein__plan_events *e, struct rein_plan_event *ev);
/* Forwards an agent event of a turn in phase (for step ≥ 0: that step). FINAL events of the
 * planner's and replanner's turns are not forwarded: the plan's own events say how they
 * ended. */
void rein__plan_emit_agent(struct rein__plan_events *e, const char *phase, int step,
                           const struct rein_agent_event *ev);

/*
 * A turn in which the model must call one tool (create_plan, replan): the call goes through
 * the pipeline like any other (an invalid one is answered with the invalid payload and the
 * model tries again); the first successful call ends the turn, with its arguments in
 * accepted. Up to attempts model replies.
 */
struct rein__plan_tool_turn {
    rein_planner *pl;
    rein_agent *agent;
    const char *tool;
    const char *phase;
    int step; /* for events; -1 */
    int attempts;
    rein_cancel *parent; /* the run's, or NULL */
    struct rein__plan_events *events;
    struct rein__plan_stats *stats;
    /* out */
    json_t *accepted;
    char last_error[320];
};
/* REIN_OK with tt->accepted set; REIN_EINVALID (no valid call: err says the last problem),
 * REIN_EPROVIDER, REIN_ECANCELED, REIN_ENOMEM. */
rein_err rein__plan_tool_turn_run(struct rein__plan_tool_turn *tt, const char *message,
                                  rein_error *err);

/* Asks the planner for a plan (rein_planner_plan with the run's events and counters). */
rein_err rein__plan_make(rein_planner *pl, const char *query, const struct rein_plan_opts *o,
                         struct rein__plan_events *ev, struct rein__plan_stats *st, rein_plan **out,
                         rein_error *err);
/* Runs plan (taken) to its end (rein_planner_execute with the run's events and counters). */
rein_err rein__plan_execute(rein_planner *pl, rein_plan *plan, const struct rein_plan_opts *o,
                            struct rein__plan_events *ev, struct rein__plan_stats *st,
                            int64_t start_ms, rein_plan_result **out, rein_error *err);

/* The replanner's prompt for step i of p (new string), report from the verifier. */
char *rein__plan_replan_prompt(const rein_plan *p, size_t i, const json_t *report,
                               const rein_registry *reg, const struct rein_agent_turn_opts *step);
/* The aggregation prompt (new string). */
char *rein__plan_answer_prompt(const rein_plan *p);
/* The answer composed by rein when the model could not write it (new string). */
char *rein__plan_fallback_answer(const rein_plan *p, const char *why);

/* result.c */
struct rein_plan_result {
    rein_plan *plan;
    bool success;
    char *stop_reason;
    char *answer;
    char *detail;
    int64_t latency_ms;
    long long model_calls, in_tokens, out_tokens, tool_calls, replans;
};
/* A new result that takes plan. NULL when memory is exhausted (plan is then freed). */
rein_plan_result *rein__plan_result_new(rein_plan *plan, const char *stop_reason,
                                        const char *answer, const char *detail, bool success,
                                        const struct rein__plan_stats *st, int64_t latency_ms);

#endif /* REIN_PLAN_INT_H */
