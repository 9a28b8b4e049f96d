/*
 * session_int.h: what the files of the session module share (include/rein/session.h):
 * session.c (opening, the turn, persistence and approvals), events.c (recording events),
 * proposal.c (acting on proposed calls) and recover.c (what a dead turn left).
 */
#ifndef REIN_SESSION_INT_H
#define REIN_SESSION_INT_H

#include <rein/buf.h>
#include <rein/session.h>

#include <pthread.h>
#include <stdatomic.h>

#define REIN__SESSION_WHERE "session"
#define REIN__SESSION_HELD  16 /* events held back at most, before they are written anyway */
#define REIN__SESSION_ASKED 32 /* approvals announced in the store at once */

/*
 * Events waiting to be written together with the next one (events.c). Invariants: items[0..n)
 * are rendered JSON texts in buf (each NUL-terminated, at its offset; offsets because buf may
 * move), except that the last item is the open text delta when text_open: its text is in text,
 * rendered only when the item is closed. since_ms is when items[0] arrived.
 */
struct rein__session_held {
    struct {
        const char *type; /* static */
        size_t off;
    } items[REIN__SESSION_HELD];
    size_t n;
    struct rein_buf buf;
    struct rein_buf text;
    bool text_open;
    uint64_t text_seq; /* the agent's seq of the open delta's first part */
    int64_t since_ms;
};

/* One write of a turn waiting for the session's next commit (session.c). */
struct rein__queued {
    bool ledger;                /* a ledger change; else a message */
    size_t off, len;            /* message: its text at off in the queue's text */
    size_t position;            /* message: where the history has it */
    struct rein_ledger_entry e; /* ledger: its texts point into mem */
    char *mem;
};

/*
 * The turn's writes that need no commit of their own before the turn goes on: messages,
 * ledger outcomes, the lock's state. They are written, in order, by the next commit (a
 * pending ledger entry, an event written, an approval announced, the end), in one store group:
 * one wait for the disk instead of one per write. Invariants: items[0..n) in the order they
 * were made; texts NUL-terminated in text; state is "" when no lock state waits. failed is set
 * by the first commit of queued writes that failed: the turn's later writes are refused with
 * it, so no message is ever stored after one that was lost. All guarded by the session's qmu.
 */
struct rein__session_queue {
    struct rein__queued *items;
    size_t n, cap;
    struct rein_buf text;
    char state[REIN_LOCK_STATE_MAX];
    char tool[REIN_LOCK_TOOL_MAX];
    rein_error failed;
};

/*
 * One open session. Invariants: lease is held from open to close when store is set; cancel
 * is a child of the lease's cancel (or a fresh handle without a store); h holds the stored
 * messages and those of the session's turns; asked lists the approvals announced in the store,
 * guarded by mu (the approval callback runs on the threads of parallel calls).
 */
struct rein_session {
    rein_store *store; /* borrowed; NULL: in memory */
    rein_store_lease *lease;
    rein_cancel *cancel;
    rein_history *h;
    char conv_id[REIN_ID_MAX];
    char trace_id[REIN_TRACE_ID_LEN + 1];
    struct rein_session_opts opts; /* title not kept */
    atomic_bool interrupted;
    int64_t last_seq;
    int64_t stored; /* messages the store holds (client_history: counted, not loaded) */
    struct rein__session_held held;
    pthread_mutex_t mu;
    /* Made at the first approval (NULL before): most sessions ask none, and 4 KB zeroed at
     * every open was most of its cost (issue 25). */
    char (*asked)[REIN_ID_MAX + 64];
    size_t nasked;
    /* Taken by every commit for its whole length, so commits write in the order they were
     * made; a thread queueing a write takes it briefly. Nothing holding the store's connection
     * takes it (the order is qmu, then the store). */
    pthread_mutex_t qmu;
    struct rein__session_queue q;
    /* The opening's writes (rein_store_group_ahead), until the first commit found them kept
     * (qmu; 0: kept, or committed when made). */
    uint64_t open_ticket;
    struct rein_buf result; /* the last turn's result object as recorded (JSON text) */
};

/* ---- session.c ---- */
/* A conversation's title: the first line of text, at most REIN_SESSION_TITLE_MAX bytes, cut on
 * a UTF-8 character boundary. */
void rein__session_title(const char *text, char out[REIN_SESSION_TITLE_MAX + 1]);
/* Writes msg (borrowed) to the store as the conversation's next message, after what is
 * queued, and commits; *position (may be NULL) receives where it went. */
rein_err rein__session_save_message(rein_session *s, const json_t *msg, int64_t *position,
                                    rein_error *err);
/* The ledger hook of proposals (rein_ledger_hook_fn): every change committed at once. */
rein_err rein__session_save_ledger(void *userdata, const struct rein_ledger_entry *e);
/* Updates the lock state others see: when now, at once, with the events held so far
 * (someone may be waiting for them), else with the next commit (a turn's "executing" goes
 * with its call's before_call commit). Called where the event callback runs. Failures are
 * logged. */
void rein__session_set_state(rein_session *s, const char *state, const char *tool, bool now);
/* What a commit writes after the queue, inside the same store group; NULL: nothing. */
typedef rein_err (*rein__session_more_fn)(rein_session *s, void *data, rein_error *err);
/*
 * Writes what is queued, then more(s, data) (may be NULL), in one store group, and waits for
 * its commit. Returns the first failure: the session's earlier one, a queued write's, more's,
 * or the commit's.
 */
rein_err rein__session_commit(rein_session *s, rein__session_more_fn more, void *data,
                              rein_error *err);

/* ---- events.c ---- */
void rein__session_held_init(struct rein__session_held *held);
void rein__session_held_release(struct rein__session_held *held);
/* Records an agent event (or holds it back) and hands it to the adapter. */
void rein__session_on_agent_event(rein_session *s, const struct rein_agent_event *ev);
/* Records an event of the session's own (start, result, an adapter's; type static) after what
 * is held; with may_hold and opts.defer_events it is held too (seq 0). With tell, the adapter
 * is handed it. */
rein_err rein__session_record(rein_session *s, const char *type, const char *json, size_t len,
                              bool tell, bool may_hold, int64_t *seq_out, rein_error *err);
/* Writes what is held, inside a commit (a rein__session_more_fn; data unused). Only on the
 * threads of the event callback: what is held has no lock of its own. */
rein_err rein__session_write_held(rein_session *s, void *data, rein_error *err);
/* Writes what is held. Failures are logged: events are the trace, not the conversation. */
void rein__session_flush(rein_session *s);

/* ---- recover.c ---- */
/*
 * Loads the stored messages into s->h and answers the calls they leave without a result,
 * writing those results and closing the calls' ledger entries.
 */
rein_err rein__session_load(rein_session *s, rein_error *err);

/* ---- proposal.c: nothing shared ---- */

#endif /* REIN_SESSION_INT_H */
