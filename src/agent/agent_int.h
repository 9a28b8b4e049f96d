/*
 * Private header of src/agent: the agent handle, the state of one turn and of each tool call
 * in a reply, and the pieces the files of the module share.
 *
 * Layout: agent.c (the handle, the system prompt), turn.c (the loop: model calls, limits,
 * stop reasons, the closing call), calls.c (running one reply's calls on the pool, the policy
 * hook with self-verification and approval), detect.c (loop and stall detection), context.c
 * (size estimates and shortening to the context window), repair.c (unanswered calls, names
 * the wire refuses), events.c (event JSON), result.c (the result object).
 */
#ifndef REIN_AGENT_INT_H
#define REIN_AGENT_INT_H

#include <rein/agent.h>

#include "core/internal.h"

#include <pthread.h>
#include <stdatomic.h>

#define REIN__AGENT_WHERE "agent"

struct rein_agent {
    rein_provider *provider;
    rein_provider *rules;    /* fast path, or NULL */
    rein_provider *verifier; /* or NULL: provider */
    const rein_registry *reg;
    rein_pool *pool; /* borrowed or own_pool */
    rein_pool *own_pool;
    pthread_mutex_t pool_mu;
    unsigned max_parallel;
    struct rein_agent_observer obs; /* zeroed: none */
    int64_t context_window;         /* 0: caps */
    struct rein_model_caps caps;
    _Atomic int64_t tools_bytes; /* size of the whole tool list in a request; -1 unknown */
    _Atomic uint64_t tools_gen;  /* the registry generation tools_bytes was measured at */
    char *role;                  /* custom first part of the prompt, or NULL */
    char *prompt;                /* the whole system prompt */
    json_t *system_msg;          /* the prompt as a system message, shared by the histories */
    json_t *verifier_msg;        /* the self-check's system message, shared by its histories */
    /* The claims check's tool vocabulary of reg (claims.c), shared by the turns until the
     * registry changes; vocab_mu guards the pointer, each turn holds a reference. */
    pthread_mutex_t vocab_mu;
    struct rein__vocab_share *vocab; /* or NULL: none made yet */
};

/* Drops the agent's shared claims vocabulary (rein_agent_free). */
void rein__agent_vocab_drop(rein_agent *a);

/* The pool for a batch of calls: the caller's, or the agent's own made on first use. NULL when
 * one cannot be made (the batch then runs on the calling thread, one call after another). */
rein_pool *rein__agent_pool(rein_agent *a);

/* ---- loop detection (detect.c) ---- */

enum rein__detect_action { DETECT_NONE = 0, DETECT_WARN, DETECT_STALL };

struct rein__seen {
    uint64_t call, result;
    int count;
};

/*
 * What the detector remembers of a turn. Invariants: same_err counts the consecutive calls of
 * err_tool that failed with err_sig; invalid_run counts consecutive invalid results; resp[]
 * holds the signatures of the last four replies, newest last, nresp of them valid.
 */
struct rein__detector {
    uint64_t err_sig;
    char err_tool[REIN_TOOL_NAME_MAX + 1];
    int same_err;
    struct rein__seen *seen;
    size_t nseen, seen_cap;
    uint64_t resp[4];
    int nresp;
    int bad_names;
    int invalid_run;
    uint64_t resp_acc; /* the reply being fed */
};

/* One call's outcome as the detector sees it. */
struct rein__detect_call {
    const char *tool;    /* the resolved name, or the name as sent */
    const char *message; /* the error message ("" when ok) */
    enum rein_call_code code;
    enum rein_call_status status;
    uint64_t call_sig;   /* tool + canonical arguments */
    uint64_t result_sig; /* output, or code + message, volatile members left out */
};

void rein__detect_init(struct rein__detector *d);
void rein__detect_release(struct rein__detector *d);
/* Feeds one call (in model order). Fills msg (a warning for the model, or why the turn stalls)
 * when it returns DETECT_WARN or DETECT_STALL. */
enum rein__detect_action rein__detect_call(struct rein__detector *d,
                                           const struct rein__detect_call *c, char *msg,
                                           size_t size);
/* Ends a reply (after its calls were fed): the ping-pong check. */
enum rein__detect_action rein__detect_reply(struct rein__detector *d, char *msg, size_t size);
/* Hash of a JSON value with object members in any order giving the same hash, members named
 * in the volatile list (call_id, trace_id, id, latency_ms, …) skipped when skip_volatile. */
uint64_t rein__json_hash(const json_t *v, bool skip_volatile);
uint64_t rein__hash_bytes(uint64_t h, const void *p, size_t n);

/* ---- one turn ---- */

struct turn;

/*
 * A call of the reply being handled. id and name are what the history carries (after the
 * wire's rules); res is the pipeline's result (every call gets one); content is the tool
 * message the model reads.
 */
struct call_slot {
    struct turn *t;
    const rein_model_call *mc;
    const char *id;   /* history id */
    const char *name; /* history name */
    char id_buf[REIN_ID_MAX + 16];
    char name_buf[REIN_TOOL_NAME_MAX + 1];
    const rein_tool *tool; /* resolved (for sequential), or NULL */
    rein_cancel *skip;     /* triggered with why the call must not run, or NULL */
    rein_call_result *res; /* the outcome */
    struct rein_buf content;
    json_t *attachments; /* media the content names as "[attachment N: ...]" (media.c) */
    bool proposed;
    bool verified, verify_passed;
    bool asked, approved;
    char note[320]; /* verification or approval reason */
};

/* What the result keeps of each call the model made in the turn. */
struct call_rec {
    rein_call_result *res;
    int iteration;
    bool proposed;
    bool verified, verify_passed;
    bool asked, approved;
    char *note;
};

struct turn {
    rein_agent *a;
    rein_history *h;
    const struct rein_agent_turn_opts *o;
    const char *message;
    char trace_id[REIN_TRACE_ID_LEN + 1];
    rein_cancel *cancel; /* the turn's: a child of o->cancel */
    rein_ledger *ledger;
    rein_ledger *own_ledger;
    rein_model_request *req;
    /* Limits and counters. */
    int max_iterations, success_cap, iterations, successes, model_calls;
    int tool_calls; /* calls the model made */
    int64_t start_ms, deadline_ms;
    _Atomic int64_t in_tokens, out_tokens;
    int64_t last_in, last_out; /* the last reply's usage (-1: unknown) */
    int64_t pending_bytes;     /* bytes appended since the last model call */
    int64_t est_tokens;        /* estimated size of the history in tokens */
    bool est_valid;
    size_t dropped;          /* messages dropped from the history by context shortening */
    bool on_rules;           /* the rules fast path has this turn */
    bool rules_tried;        /* the fast path was asked once */
    size_t nproposed;        /* calls proposed (propose mode) */
    struct rein_buf partial; /* text of a reply that failed part-way */
    bool nudged;             /* a reply with tool calls written as text was sent back once */
    bool unroutable;         /* the answer is the rules provider's "could not route" */
    double confidence;       /* stated in the reply being handled, or -1 */
    /* The timeout watchdog. */
    pthread_t watchdog;
    bool has_watchdog;
    rein_cancel *done;
    atomic_bool timed_out;
    /* Events. */
    pthread_mutex_t ev_mu;
    uint64_t seq;
    /* Calls of the turn (for the result). */
    struct call_rec *recs;
    size_t nrecs, recs_cap;
    json_t *proposed;
    struct rein__detector det;
    /* How it ended. */
    enum rein_agent_stop stop;
    bool stopped;
    bool composed; /* rein wrote the answer (the model gave none): the final event says so */
    struct rein_buf text;
    struct rein_buf detail;
    rein_err fatal; /* an error that ends the turn as "error" */
    /* Claims of the answer (claims.c). */
    size_t ledger_mark; /* ledger entries there were before the turn */
    json_t *refuted;    /* the final answer's refuted claims, or NULL */
    /* The tools of the entries this turn added to its own ledger, seen through the ledger's
     * hook (claims.c), so the answer's claims are read without the ledger as JSON; guarded by
     * tools_mu (parallel calls record from their threads). tools_known is false when the turn
     * borrows a ledger or a name could not be kept: then claims.c reads the ledger. */
    pthread_mutex_t tools_mu;
    char **tools_seen;
    size_t ntools_seen;
    bool tools_known;
    bool claims_sent; /* force: refuted claims were sent back once */
    bool claims_read; /* the final answer's claims were checked (refuted may be empty) */
};

/* claims.c: the turn's own ledger's hook: notes the entry's tool, then calls the persistence
 * hook of the turn's options (when there is one) and returns what it returns. */
rein_err rein__turn_ledger_hook(void *userdata, const struct rein_ledger_entry *entry);
/* claims.c: frees what rein__turn_ledger_hook noted. */
void rein__turn_tools_release(struct turn *t);

/* claims.c: unless verification is off, checks the final answer's claims against the turn's
 * own calls, keeps the refuted ones in t->refuted and reports them in a claims event. */
void rein__turn_claims_report(struct turn *t);
/* claims.c: with verification force, once per turn: when the answer just taken has refuted
 * claims, sends them back to the model as a user message and returns true (the turn goes
 * on); false otherwise. */
bool rein__turn_claims_reask(struct turn *t);

/* events.c */
void rein__turn_emit(struct turn *t, struct rein_agent_event *ev);
void rein__turn_status(struct turn *t, enum rein_agent_state st, const char *tool,
                       const char *call_id);
void rein__turn_error_event(struct turn *t, const char *kind, const char *fmt, ...)
    REIN_PRINTF(3, 4);
static inline bool rein__turn_wants_events(const struct turn *t)
{
    return t->o->on_event != NULL;
}

/* turn.c: persists the message just appended; REIN_OK or the hook's error (also kept in
 * t->fatal, so a caller may ignore the return value). */
rein_err rein__turn_persist_last(struct turn *t);
void rein__turn_add_tokens(struct turn *t, const rein_model_response *r);

/* calls.c: runs every call of resp (slots already prepared), filling each slot's result and
 * content. Never fails: a slot that cannot get a result from the pipeline gets one made by
 * hand. */
void rein__calls_run(struct turn *t, struct call_slot *slots, size_t n, bool check_only);
/* The tool message for a proposal. */
rein_err rein__calls_proposal_content(struct call_slot *s) REIN_WUR;
/*
 * media.c: when s's output is MCP content, rewrites s->content so the model reads the
 * structuredContent once (not beside its text copy) and text for each image, audio or binary
 * resource, which goes to *attachments (a new array, NULL when there is none) for the
 * provider to send as its own content blocks where its wire takes them.
 */
rein_err rein__calls_media(struct call_slot *s, json_t **attachments) REIN_WUR;
/* A cancel handle triggered with reason (new). NULL when memory is exhausted. */
rein_cancel *rein__skip_cancel(const char *reason);

/* Model output the loop reads (fuzzed in fuzz/fuzz_agent_reply.c, with
 * rein_agent_stated_confidence): the verifier's reply: YES or NO first (markup and quotes
 * skipped, 是/否 too), then the reason, written to reason (size bytes); anything else is a
 * rejection that says so. */
/* Reads a verifier's reply: passed, the reason shown, and returns a code for what the reason is
 * (a front end translates it): "approved" / "rejected" (a bare YES / NO), "said" (the
 * verifier's own words follow), "unclear" (neither YES nor NO). */
const char *rein__agent_parse_verdict(const char *text, bool *passed, char *reason, size_t size);

/* repair.c */
/* True when name is acceptable to every wire in an assistant message. */
bool rein__wire_name_ok(const char *name, size_t len);
/* Fills each slot's history id and name and appends resp as the assistant message. */
rein_err rein__history_add_reply(struct turn *t, const rein_model_response *resp,
                                 struct call_slot *slots, size_t n) REIN_WUR;
/* Closes unanswered calls of h through the pipeline (t may be NULL: no ledger, no hooks). */
rein_err rein__history_close_calls(struct turn *t, rein_history *h, const char *reason,
                                   const struct rein_agent_started *st, size_t *added,
                                   rein_error *err) REIN_WUR;

/* context.c */
/* Bytes a message adds to a request, roughly (its text members plus some overhead). */
int64_t rein__message_bytes(const json_t *msg);
/* Shortens old tool results, then drops old exchanges, until the history fits the window. */
void rein__context_fit(struct turn *t);
/* Estimated input tokens of the next request. */
int64_t rein__context_estimate(struct turn *t);

/* result.c */
rein_agent_result *rein__result_from_turn(struct turn *t);

#endif /* REIN_AGENT_INT_H */
