/*
 * rein/loop.h: the verification loop behind `rein loop` (docs/DESIGN.md [verification]: the
 * loop with carried state, and its termination). An agent works on a goal in a working tree;
 * the verification protocols run; what failed goes back to the agent as its next observation;
 * until the criteria hold or the loop stops for a reason it can name, with what was tried and
 * what a person should do.
 *
 * One iteration:
 *   1. act      one agent turn (rein_agent_run) on the loop's conversation. The first turn
 *               gets the goal, the checks that will decide it (with their commands), and how
 *               to report a blocker ("BLOCKED: …") and a confidence ("confidence: N"); later
 *               turns get the observation of the iteration before.
 *   2. check    rein_verify_run over the working tree: the protocols named in `until` (all
 *               that the mode selects when NULL), and the claims of the agent's answer, with
 *               the protocol a claim needs run for it.
 *   3. judge    when a judge provider is set and the checks hold: rein_verify_judge_run on
 *               the goal and rein_verify_diff() of the tree. FAIL counts as a failing check
 *               ("JUDGE") and is fed back; NEEDS_REVIEW, or no valid verdict (UNVERIFIABLE),
 *               stops the loop for a person (needs_review).
 *   4. decide   the termination tracker (rein_verify_term_add) gets the failing checks with
 *               their signatures, refuted claims, a failing judge, the working-tree hash, the
 *               progress metric, the lower of the report's and the agent's stated confidence,
 *               a blocker the agent reported, and the layer-6 review flag (the judge, or in
 *               thorough and full mode the report's review.required): continue, extend the
 *               limit by half once, or stop with a named reason.
 *   5. perceive the next observation: the verdict; each failing check with its command,
 *               counts, reason and output tail; each refuted claim ("You said: X. The tree
 *               shows: Y"); the judge's objections; what passed and what did not run; from
 *               the third iteration on, one line per earlier iteration of what was tried.
 *
 * State between iterations: one conversation carries over, so the model sees what it did and
 * what came of it and does not repeat work; when it outgrows the model's context, the agent
 * shortens old tool results first (include/rein/agent.h), and the observations' "tried so
 * far" lines keep the earlier iterations' gist. A blocking (P0) failure stops the loop with
 * blocking_failure, as the seed's decision tree says (P0 failed → FAILED); keep_going makes
 * the loop iterate on it instead, bounded by the detectors (same error, no progress,
 * repeated state, oscillation).
 *
 * Without a protocol file (protocols NULL) the loop derives its criteria from the goal and
 * the project (rein_verify_criteria_derive): they are sent as a "criteria" event before the
 * first iteration and kept in the result.
 *
 * An agent turn that ends for a limit (max_iterations, stalled, timeout, token budget) is
 * still checked: it may have changed the tree. A turn whose model could not be asked
 * (provider_error) is checked too, and the loop stops with provider_error unless the checks
 * hold. Cancelling stops at once (the running turn and checks stop too): cancelled.
 *
 * Threading: rein_loop_run runs on the calling thread (protocols of one group run on the
 * pool, tool calls on the agent's). The event callback is called on the calling thread; the
 * agent events (opts.turn->on_event) as include/rein/agent.h says.
 */
#ifndef REIN_LOOP_H
#define REIN_LOOP_H

#include <rein/agent.h>
#include <rein/session.h>
#include <rein/verify.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_loop_result rein_loop_result;

/*
 * Loop events, each a JSON object (borrowed for the callback) with "type" and "iteration":
 *   {"type":"criteria","iteration":0,"criteria":{…rein_verify_criteria_json()…}}  derived
 *                                                                    criteria, before the first
 *   {"type":"iteration","iteration":1,"max_iterations":10}          an iteration starts
 *   {"type":"agent","iteration":1,"stop_reason":"final_answer","text":"…","tool_calls":3}
 *   {"type":"report","iteration":1,"report":{…rein_verify_report_json()…}}
 *   {"type":"judge","iteration":1,"judge":{…rein_verify_judge_result_json()…}}
 *   {"type":"decision","iteration":1,"action":"continue"|"stop","reason":"same_error",
 *    "progress":true,"extended":false,"max_iterations":10,"message":"…","suggestion":"…"}
 */
typedef void (*rein_loop_event_fn)(const json_t *event, void *userdata);

/* Options. A zeroed struct means every default; members are only ever appended. */
struct rein_loop_opts {
    const char *cwd;                         /* borrowed; the working tree; NULL: current dir */
    const rein_verify_config *protocols;     /* borrowed; NULL: criteria derived from the goal
                                                and the project (rein_verify_criteria_derive) */
    enum rein_verify_mode mode;              /* DEFAULT: the protocol file's */
    const char *const *until;                /* borrowed NULL-terminated protocol names that must
                                            pass; NULL: every protocol the mode selects */
    const char *base;                        /* borrowed revision for changes, claims and the
                                            judge's diff; NULL: HEAD */
    struct rein_verify_term_opts term;       /* limits and detectors (max_iterations 10, …);
                                            continue_on_blocking is ignored: see keep_going */
    bool stop_on_blocking;                   /* stop at a P0 failure: the default now, kept for
                                            callers that set it */
    const struct rein_agent_turn_opts *turn; /* borrowed; each turn's options (limits, mode,
                                            on_event for the agent's events, approvals); the
                                            loop sets cancel (when NULL) and trace_id */
    rein_provider *judge;                    /* borrowed; NULL: no judge */
    const struct rein_verify_judge_opts *judge_opts; /* borrowed; may be NULL */
    rein_cancel *cancel;                             /* borrowed; may be NULL */
    rein_pool *pool; /* borrowed; for parallel protocols; may be NULL */
    rein_loop_event_fn on_event;
    void *event_data;
    bool keep_going; /* iterate on after a P0 failure instead of stopping (blocking_failure) */
    /*
     * borrowed; NULL: the loop's conversation lives in memory. With a session
     * (include/rein/session.h) every turn runs in it (rein_session_run): the conversation is the
     * session's, kept in its store and locked while the loop runs, each turn recorded; the
     * turn's callbacks are then the session's (set them in its options), and cancel should be
     * rein_session_cancel() or trigger it. The result's trace id is the session's.
     */
    rein_session *session;
};

/*
 * Runs the loop for goal (borrowed) with agent (borrowed; its registry must offer the tools
 * that change the tree, e.g. process skills) as opts (borrowed) say. Returns REIN_OK with a
 * new result whenever the loop ran, whatever its outcome; fails before the first turn with
 * REIN_EINVAL (no goal, a name in `until` the protocol file does not declare, an unusable
 * working tree: err says which) or REIN_ENOMEM.
 */
REIN_EXTERN rein_err rein_loop_run(rein_agent *agent, const char *goal,
                                   const struct rein_loop_opts *opts, rein_loop_result **out,
                                   rein_error *err) REIN_WUR;

REIN_EXTERN void rein_loop_result_free(rein_loop_result *r);
/* Why the loop stopped (include/rein/verify.h's names). */
REIN_EXTERN enum rein_verify_stop_reason rein_loop_result_reason(const rein_loop_result *r);
/* True for success and success_with_warnings: the criteria hold. */
REIN_EXTERN bool rein_loop_result_success(const rein_loop_result *r);
/* True when the loop stopped for a person's review (needs_review). */
REIN_EXTERN bool rein_loop_result_needs_review(const rein_loop_result *r);
/* The verdict of the last check (with a failing judge counted). FAILED when none ran. */
REIN_EXTERN enum rein_verify_verdict rein_loop_result_verdict(const rein_loop_result *r);
REIN_EXTERN int rein_loop_result_iterations(const rein_loop_result *r);
/* The iteration limit in force at the end (after an extension). */
REIN_EXTERN int rein_loop_result_max_iterations(const rein_loop_result *r);
/* What happened and what was tried; what a person should do ("" on success). Borrowed,
 * never NULL. */
REIN_EXTERN const char *rein_loop_result_message(const rein_loop_result *r);
REIN_EXTERN const char *rein_loop_result_suggestion(const rein_loop_result *r);
/* The agent's last answer. Borrowed, never NULL. */
REIN_EXTERN const char *rein_loop_result_answer(const rein_loop_result *r);
/* The criteria derived from the goal (rein_verify_criteria_json, borrowed), or NULL when the
 * loop was given a protocol file. */
REIN_EXTERN const json_t *rein_loop_result_criteria(const rein_loop_result *r);
/* The last verification report and judge result (borrowed), or NULL when none. */
REIN_EXTERN const rein_verify_report *rein_loop_result_report(const rein_loop_result *r);
REIN_EXTERN const rein_verify_judge_result *rein_loop_result_judge(const rein_loop_result *r);
/*
 * The result as a new JSON object (NULL when memory is exhausted):
 *   {"success", "needs_review", "verdict", "reason": "same_error", "stop_reason": DESIGN's
 *    word ("final_answer" | "max_iterations" | "stalled" | "cancelled" | "provider_error" |
 *    "error"), "message", "suggestion", "goal", "answer", "iterations", "max_iterations",
 *    "extended", "trace_id",
 *    "history": [{"iteration", "agent": {"stop_reason", "text", "tool_calls": [{"tool",
 *                 "status", "arguments", "code"?: why it failed or did not run ("denied",
 *                 "invalid_arguments", …), "verification"?: {"passed", "reason"} when the
 *                 call was self-verified or denied}], "input_tokens", "output_tokens"},
 *                 "verdict",
 *                 "progress", "confidence", "tree_hash", "failing": [{"check", "signature",
 *                 "priority"}], "refuted_claims": [{"text", "evidence"}], "judge"?: {…},
 *                 "summary", "decision": {"action", "reason", "progress", "extended"}}],
 *    "report": {…the last report…} | null, "judge": {…the last judge result…} | null,
 *    "criteria": {…rein_verify_criteria_json()…} | null,
 *    "meta": {"input_tokens", "output_tokens", "model_calls", "tool_calls", "latency_ms"}}
 */
REIN_EXTERN json_t *rein_loop_result_json(const rein_loop_result *r);
/* The word docs/DESIGN.md's events use for a stop reason: "final_answer" for the two successes,
 * "max_iterations", "cancelled", "provider_error", "error", else "stalled". Static. */
REIN_EXTERN const char *rein_loop_stop_word(enum rein_verify_stop_reason r);

#ifdef __cplusplus
}
#endif
#endif /* REIN_LOOP_H */
