/*
 * rein/session.h: a turn of a stored conversation (docs/decisions/0012-session-module.md).
 *
 * The agent (include/rein/agent.h) runs a turn on a history in memory; the store
 * (include/rein/store.h) keeps conversations. A session is what joins them, once, for every
 * front end: `rein serve`'s routes (HTTP and Server-Sent Events) and `rein chat` (the
 * terminal) are adapters over it. Opening a session:
 *
 *   1. takes the conversation's lock as a lease (renewed by a thread; input locking,
 *      docs/DESIGN.md [react]): a second opener gets REIN_EBUSY with what the running turn is
 *      doing, whichever instance it runs on;
 *   2. creates the conversation when it does not exist yet;
 *   3. loads the stored messages into a history, with the calls a dead turn left without a
 *      result, and closes those (recovery, below).
 *
 * A turn run in it (rein_session_run) then writes every message and every ledger change to
 * the store, keeps the lock's state in step with the turn's status, waits for approvals
 * through the store (any instance may answer them), and records the turn's events with the
 * conversation's sequence ids, so a reader on any instance can replay them and follow the turn
 * while it runs (rein_store_events_after / _wait).
 *
 * Commits (docs/decisions/0045, 0063): a turn's messages, ledger changes and lock states wait
 * in memory for the turn's next commit point, and each commit point writes everything waiting
 * in one store group (rein_store_group: one wait for the disk). The commit points are those
 * where something is acknowledged or becomes irreversible: a call about to run (after its
 * checks and any approval, with its pending entry and the lock state "executing": the call
 * runs only once they are on disk), the lock state "waiting_approval" (someone may be waiting
 * to see it), an approval announced, an event written (its sequence id may be
 * handed out), and the end of the turn (rein_session_run returns, or with defer_events,
 * rein_session_end). A commit that fails refuses every later write of the session, so no
 * message is stored after one that was lost, and the turn ends with the failure instead of a
 * result. A process killed between commit points loses only writes nobody was told about.
 * The opening's writes (lock, conversation, recovery's answers, state) do not wait for the
 * disk (rein_store_group_ahead): the first commit point checks they were kept, and fails
 * (refusing every later write) when they were not. Opening sets the conversation's state to
 * "running";
 * closing writes "idle" (or "interrupted" when rein_session_interrupt was called) and releases
 * the lock. A process that dies in between leaves "running", which rein_store_recover() turns
 * into "interrupted" once the lease has run out.
 *
 * What is recorded, in order, for each turn (rein_store_event types; payloads are JSON):
 *   start       {"type":"start","seq":0,"conversation_id","trace_id","position" (of the
 *               turn's first message in the conversation),"mode","verification"}
 *   the agent's events (agent.h), each as rein_agent_event_write() writes it, except that
 *               text deltas are joined: the text that arrives between two other events is
 *               recorded as one text_delta (written with the next event, or once it is
 *               REIN_SESSION_TEXT_MAX bytes or REIN_SESSION_TEXT_MS old)
 *   result      the result object of POST /agent/chat (rein_agent_result_json)
 * Status and text_delta events are written together with the next event of another kind (one
 * commit), so a turn costs one commit per tool call event, not per token. The adapter sees
 * every event as it happens (struct rein_session_event): with its sequence id when it was
 * written at once, with seq 0 when it waits for the next one (a resuming reader replays those
 * from the store, joined).
 *
 * Recovery (src/session/recover.c is the one place): a process that dies mid-turn leaves its
 * ledger entries pending. rein_store_recover() (at store open, and every so often through
 * rein_session_recovery_new) flags them interrupted once the dead turn's lease has run out;
 * the next session on the conversation answers every call the history left without a result
 * ("cancelled", saying the turn ended before it ran), writes those results, and closes the
 * calls' ledger entries (status error) keeping their first record. The model is then never
 * asked with an unanswered call.
 *
 * Without a store (rein_session_open with store NULL) a session is a plain turn in memory:
 * no lock, nothing written, events handed to the adapter with seq 0. `rein chat` without
 * --conversation uses that, so the terminal adapter has one path.
 *
 * Threading: a session belongs to one thread (the one running its turns), except
 * rein_session_interrupt() and rein_session_cancel(), which any thread may call. The event
 * callback runs on the turn's thread and on pool workers, never twice at once; the approval
 * callback may run on several workers at once (parallel calls). A recovery handle runs its
 * own thread.
 */
#ifndef REIN_SESSION_H
#define REIN_SESSION_H

#include <rein/agent.h>
#include <rein/store.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_session rein_session;
typedef struct rein_session_recovery rein_session_recovery;

/* Text deltas are held back until another event, or this many bytes, or this old. */
#define REIN_SESSION_TEXT_MAX 4096
#define REIN_SESSION_TEXT_MS  250
/* A conversation's title (set when the session creates it) is at most this many bytes. */
#define REIN_SESSION_TITLE_MAX 80

/* An event as the adapter sees it. Everything is borrowed for the callback. */
struct rein_session_event {
    const char *type; /* "start", "result", or an agent event type (agent.h) */
    const char *json; /* the event's JSON object, one line, NUL-terminated, len bytes */
    size_t len;
    int64_t seq; /* its sequence id in the conversation, 0 when not (yet) written */
    const struct rein_agent_event *agent; /* the agent's event; NULL for start and result */
};
typedef void (*rein_session_event_fn)(const struct rein_session_event *ev, void *userdata);

/* Options for rein_session_open(). A zeroed struct (or NULL) means every default. */
struct rein_session_opts {
    int64_t lease_ms; /* the lock's lease, renewed every third of it; 0: 30000 */
    /* The title of a conversation this session creates: its first line, cut to
     * REIN_SESSION_TITLE_MAX bytes on a character boundary (borrowed). NULL: none. */
    const char *title;
    const char *trace_id; /* what the session writes is recorded under it (copied); NULL: new */
    rein_session_event_fn on_event; /* NULL: nobody listens */
    void *event_data;
    /* Asks a person about a destructive call. NULL: the session announces the call in the
     * store and waits for an answer there (rein_store_approval_post, from any instance); in a
     * session without a store, destructive calls then need nobody. */
    rein_agent_approval_fn approve;
    void *approval_data;
    bool existing; /* the conversation must exist already (REIN_ENOTFOUND): not created */
    /* With replace: the turn replaces the conversation's last message from the person, at
     * position replace_from, and everything after it (edit and resend, regenerate): those
     * messages are dropped (rein_store_messages_truncate; the ledger and events keep what ran)
     * before the history is loaded. REIN_ESTATE when that position holds no message from the
     * person, or a later one does: the conversation moved on. Needs a store. */
    bool replace;
    int64_t replace_from;
    /* The tools (borrowed), so a destructive call a dead turn left running is named as such
     * when it is answered "may have run"; NULL: no tool is known to be destructive. */
    const rein_registry *reg;
    /* The adapter's client holds the conversation and sends all of it with every request (the
     * gateway, include/rein/gateway.h): the stored messages are neither loaded nor repaired
     * (calls without results are the client's to answer), rein_session_message_count() says
     * how many there are, and the adapter appends what is new with rein_session_append(). */
    bool client_history;
    /* Every event of the session's turns waits for the turn's next commit (below) instead of
     * only status and text deltas: the adapter sees them with seq 0, and readers of the
     * conversation's events get them at those commits. For an adapter that hands no sequence
     * id to its client (a JSON answer); it then ends the session with rein_session_end. */
    bool defer_events;
};

/*
 * Opens conv_id (borrowed; NULL: a new "conv_…" id) in store (borrowed; must outlive the
 * session; NULL: a session in memory, see above) and recovers what a dead turn left (see
 * above). *out receives the session. REIN_EBUSY when another turn holds the conversation:
 * *held (may be NULL) then says what it is doing. REIN_EINVAL for a bad id, REIN_ENOTFOUND
 * for a conversation that does not exist when opts->existing; a stored message that cannot be
 * read fails with err naming the conversation. Nothing is held on failure.
 */
REIN_EXTERN rein_err rein_session_open(rein_store *store, const char *conv_id,
                                       const struct rein_session_opts *opts, rein_session **out,
                                       struct rein_store_lock_info *held, rein_error *err) REIN_WUR;
/*
 * Writes what the session's turns left waiting (see "Commits" above), the conversation's state
 * ("interrupted" after rein_session_interrupt, else "idle"), releases the lock and frees s, in
 * one commit. REIN_OK when every write of the session's turns is on disk; otherwise the first
 * failure (err says which): a turn whose writes were lost must not be reported as kept. The
 * lock is released and s freed either way. NULL is REIN_OK.
 */
REIN_EXTERN rein_err rein_session_end(rein_session *s, rein_error *err) REIN_WUR;
/* rein_session_end, a failure logged. NULL is a no-op. */
REIN_EXTERN void rein_session_close(rein_session *s);

/* The conversation id (NULL in a session without a store); borrowed, valid while s is. */
REIN_EXTERN const char *rein_session_conversation_id(const rein_session *s);
/* The trace id; borrowed, valid while s is. */
REIN_EXTERN const char *rein_session_trace_id(const rein_session *s);
/* The conversation so far (borrowed; the session's turns append to it). */
REIN_EXTERN const rein_history *rein_session_history(const rein_session *s);
/*
 * The handle that stops the session's turn (borrowed; valid while s is): triggered by a
 * cancel request through the store (any instance), a lost lock, rein_session_interrupt(), or
 * whoever triggers it (a Ctrl-C watcher). Turns see it as their cancel.
 */
REIN_EXTERN rein_cancel *rein_session_cancel(rein_session *s);
/*
 * Stops the session's turn because its front end went away (the client of an event stream
 * left, the server is stopping): the turn ends "cancelled" with reason (borrowed, copied; NULL:
 * "interrupted"), and closing leaves the conversation in state "interrupted". Any thread.
 */
REIN_EXTERN void rein_session_interrupt(rein_session *s, const char *reason);
/* The sequence id of the last event the session wrote (0: none). */
REIN_EXTERN int64_t rein_session_last_seq(const rein_session *s);

/*
 * Runs one agent turn on the session's conversation (rein_agent_run): message (borrowed)
 * becomes the next user message. turn (may be NULL) gives the mode, the limits and the
 * approval timeout; its cancel, callbacks, persistence, ledger, conversation and trace
 * members are the session's and are ignored. Records start, the turn's events and the result
 * (see above); the result event is handed to nobody, so the adapter can answer after closing
 * (the lock goes first) and take its id from rein_session_last_seq().
 * Returns what rein_agent_run() returns: REIN_OK and a new result in *out whenever the turn
 * ran, whatever its stop reason.
 */
REIN_EXTERN rein_err rein_session_run(rein_session *s, rein_agent *agent, const char *message,
                                      const struct rein_agent_turn_opts *turn,
                                      rein_agent_result **out, rein_error *err) REIN_WUR;
/*
 * The last turn's result object as the "result" event recorded it: the JSON text that
 * rein_json_dump writes of rein_agent_result_json(), *len (may be NULL) bytes. Borrowed, valid
 * until the next turn or the end of s; NULL when no turn ran or it could not be written.
 */
REIN_EXTERN const char *rein_session_result_text(const rein_session *s, size_t *len);

/*
 * Acts on a call the model proposed in propose mode (its tool message says "proposed"): run
 * executes it through the pipeline of reg (borrowed) with the session's cancel, recorded in
 * the ledger; !run records it in the ledger as invalid (denied: a person discarded it). Either
 * way a user message tells the model what became of it. *out receives a new object
 *   {"conversation_id", "call_id", "tool", "action": "run"|"discard",
 *    "status": the ledger status, "result": the normalized result, or null when discarded}.
 * REIN_ENOTFOUND when the conversation has no such proposal, REIN_EEXIST when it was already
 * acted on (its ledger entry exists), REIN_EINVAL in a session without a store.
 */
REIN_EXTERN rein_err rein_session_proposal(rein_session *s, const rein_registry *reg,
                                           const char *call_id, bool run, json_t **out,
                                           rein_error *err) REIN_WUR;

/*
 * Records an event of the adapter's own (a gateway's upstream call, a check) in the
 * conversation: type (1-64 bytes) and payload (a JSON text), both borrowed, with the next
 * sequence id (*seq_out, may be NULL). Text held back from the turn is written first.
 * REIN_EINVAL in a session without a store.
 */
REIN_EXTERN rein_err rein_session_record(rein_session *s, const char *type, const char *payload,
                                         int64_t *seq_out, rein_error *err) REIN_WUR;

/*
 * Appends msg (borrowed; a neutral message, decision 0001) to the stored conversation: for an
 * adapter whose client holds the conversation (client_history), which records what the client
 * sent and what it got. REIN_EINVAL in a session without a store or for a message the store
 * refuses (err says why).
 */
REIN_EXTERN rein_err rein_session_append(rein_session *s, const json_t *msg,
                                         rein_error *err) REIN_WUR;
/* Messages the conversation holds in the store (those loaded and appended by this session). */
REIN_EXTERN int64_t rein_session_message_count(const rein_session *s);
/*
 * Writes a ledger entry (borrowed) to the conversation as the session's turns do: a pending one
 * is put, a decided one updates the call's first record (or is put when there is none). session
 * is a rein_session; the signature is rein_ledger_hook_fn's, so a ledger of calls the adapter
 * runs through the pipeline can have it as its hook. Failures are logged and returned.
 */
REIN_EXTERN rein_err rein_session_ledger_write(void *session, const struct rein_ledger_entry *e);

/*
 * Flags calls left pending by dead processes (rein_store_recover) every every_ms on a thread
 * of its own, so a conversation whose process died is repaired even if no instance restarts.
 * store is borrowed and must outlive the handle. NULL on failure (err says why).
 */
REIN_EXTERN rein_session_recovery *rein_session_recovery_new(rein_store *store, int64_t every_ms,
                                                             rein_error *err);
/* Stops the thread and frees r. NULL is a no-op. */
REIN_EXTERN void rein_session_recovery_free(rein_session_recovery *r);

#ifdef __cplusplus
}
#endif
#endif /* REIN_SESSION_H */
