/*
 * rein/store.h: durable conversations, messages, ledger, events, locks and control messages.
 *
 * One interface, two backends chosen by URL:
 *   sqlite:PATH                 (the default, "sqlite:./rein.db")
 *   redis://[:PASSWORD@]HOST:PORT[/DB]
 * Any other URL, a bare path included, is refused with REIN_EINVAL and these forms named.
 * SQLite is for one process (or several on one machine); Redis lets several `rein serve`
 * processes share conversations, ledger and locks, so any instance can take any request.
 *
 * What is kept:
 * - conversations: id, title, state, metadata (a JSON object), created/updated times;
 * - messages in order: the neutral message JSON of decision 0001, stored as the exact text
 *   given, with its position (0, 1, ...), created time and trace id;
 * - ledger entries: struct rein_ledger_entry (include/rein/tools.h), the one record of a call
 *   from the pipeline to here, written as JSON by rein_ledger_entry_write;
 * - events (traces): type, JSON payload, time, trace id, optionally a conversation, and then
 *   a sequence id within it for readers that resume (rein_store_events_after/_wait);
 * - a lock per conversation (owner token, lease, lock state: what the turn is doing), and
 *   control messages (a cancel request, approval answers) that any instance can write and the
 *   lock owner reads.
 *
 * Durability: a message append or ledger change is committed before the call returns (SQLite:
 * WAL with synchronous=FULL; Redis: as durable as the server's appendfsync setting).
 *
 * Ids: conversation ids are 1..64 characters of [A-Za-z0-9_.-], not starting with '.' and
 * without "..": the store embeds them in keys, so it checks them (REIN_EINVAL).
 * Call ids are 1..128 printable ASCII characters without spaces.
 *
 * Times are wall-clock milliseconds since the epoch; JSON output writes them as ISO 8601.
 *
 * Threading: a rein_store handle may be used from many threads at once (each backend keeps a
 * small pool of connections; SQLite in exclusive mode one connection and a writer thread).
 * Callbacks run on the calling thread, or inside rein_store_group on the thread running fn.
 */
#ifndef REIN_STORE_H
#define REIN_STORE_H

#include <jansson.h>
#include <rein/cancel.h>
#include <rein/core.h>
#include <rein/tools.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_store rein_store;

/* Options for rein_store_open(); a zeroed struct (or NULL) means every default. */
struct rein_store_opts {
    const char *key_prefix; /* Redis key prefix (borrowed, copied); NULL: "rein:" */
    unsigned pool_size;     /* connections kept; 0: 4 */
    int busy_timeout_ms;    /* SQLite busy_timeout; 0: 5000 */
    int io_timeout_ms;      /* Redis connect/command timeout; 0: 5000 */
    int poll_ms;            /* how often waiting calls poll control messages; 0: 100 */
    unsigned events_max;    /* events kept per conversation; 0: 10000 */
    bool no_recover;        /* skip rein_store_recover() at open */
    /* SQLite: this process alone uses the file (one connection, locking_mode=EXCLUSIVE; a
     * second process gets REIN_ESTORE). No -shm file is mapped, so an outside change to it
     * cannot crash the process (SIGBUS), and the WAL is truncated every 30 s. For servers. */
    bool exclusive;
};

#define REIN_STORE_DEFAULT_URL "sqlite:./rein.db"

/*
 * Opens (and for SQLite creates and migrates) the store at url (borrowed). *out receives a
 * new handle. Unless opts->no_recover, pending ledger entries left by a dead process are
 * flagged interrupted (rein_store_recover()). Errors: REIN_EINVAL (bad URL), REIN_ENOTSUP
 * (a Redis URL in a build without hiredis), REIN_ESTORE (cannot open, not a database,
 * unwritable, schema newer than this rein knows, Redis unreachable: err names the path or
 * address and the reason).
 */
REIN_EXTERN rein_err rein_store_open(const char *url, const struct rein_store_opts *opts,
                                     rein_store **out, rein_error *err) REIN_WUR;
/* Closes every connection and frees s. NULL is a no-op. */
REIN_EXTERN void rein_store_free(rein_store *s);
/* "sqlite" or "redis"; static. */
REIN_EXTERN const char *rein_store_kind(const rein_store *s);
/* The URL the store was opened with, without any password; borrowed, valid while s is. */
REIN_EXTERN const char *rein_store_url(const rein_store *s);
/* Checks the store answers (Redis PING, SQLite a trivial query). */
REIN_EXTERN rein_err rein_store_ping(rein_store *s, rein_error *err) REIN_WUR;
/* True when id is an acceptable conversation id (see above). */
REIN_EXTERN bool rein_store_id_is_valid(const char *id);

/* Reads made by rein_store_read_now(); returns REIN_OK or a REIN_E* code, passed back. */
typedef rein_err (*rein_store_read_fn)(rein_store *s, void *userdata, rein_error *err);
/*
 * Runs fn(s, userdata, err) at once when the store can serve reads without waiting, for a
 * caller that must not block (a server's network thread): fn's calls on s from this thread
 * then read one consistent snapshot, and none waits for a lock or another thread's commit.
 * REIN_EBUSY, fn not run, when that cannot start at once: SQLite with every connection busy
 * (in exclusive mode: the one connection held, or a batch of writes waiting for its commit,
 * or a thread waiting for it), and Redis always (every read is a round trip). The caller then
 * makes the same calls where waiting is fine. fn must only read: a write inside it fails with
 * REIN_ESTORE. Returns what fn returned.
 */
REIN_EXTERN rein_err rein_store_read_now(rein_store *s, rein_store_read_fn fn, void *userdata,
                                         rein_error *err) REIN_WUR;
/*
 * rein_store_read_now() for a caller that may wait (a worker): fn's calls read one consistent
 * snapshot on one connection, taken when it comes free. SQLite in exclusive mode lets a batch
 * of writes already queued for its one connection go first, once, then reads between batches
 * (a plain read call there borrows the connection inside the writer's batch and waits for its
 * commit, several hand-overs between threads per call). Redis: fn runs as it is. fn must only
 * read, as for rein_store_read_now(). Returns what fn returned.
 */
REIN_EXTERN rein_err rein_store_read(rein_store *s, rein_store_read_fn fn, void *userdata,
                                     rein_error *err) REIN_WUR;

/*
 * Runs fn(s, userdata, err), its store calls joined into one commit: SQLite in exclusive mode
 * hands fn to the store's writer thread, which runs it inside its next batch on the one
 * connection (each call in its own savepoint as usual: a call that fails is undone alone, the
 * ones before it stay) while this thread waits once for that batch to be on disk, instead of
 * once per call; fn must therefore not rely on the calling thread (its thread-local state, a
 * lock it holds that fn takes). Elsewhere (SQLite shared by several processes, Redis) fn runs
 * on this thread and every call commits on its own as usual. Either way,
 * when this returns, what fn's calls wrote is durable, or the failure is returned: a commit
 * that fails after fn succeeded is REIN_ESTORE (and none of fn's writes were kept). Inside
 * fn, a call reads what the earlier ones wrote. fn holds the store's connection: it must not
 * wait for anything (rein_store_approval_wait, rein_store_events_wait, a thread that uses
 * the store). A group inside a group or inside rein_store_read_now joins the outer one.
 * Returns fn's failure, else the commit's.
 */
REIN_EXTERN rein_err rein_store_group(rein_store *s, rein_store_read_fn fn, void *userdata,
                                      rein_error *err) REIN_WUR;
/*
 * rein_store_group without the wait for the disk: returns fn's result once fn has run, while
 * its writes still wait for their batch's commit. Later calls and groups see them. *ticket
 * receives what rein_store_group_kept needs to tell whether that commit was made (0: the
 * writes were committed before this returned, as on stores without a writer thread). For work
 * nobody is told about yet: the caller must call rein_store_group_kept before it acknowledges
 * anything that depends on these writes, or does anything that cannot be undone.
 */
REIN_EXTERN rein_err rein_store_group_ahead(rein_store *s, rein_store_read_fn fn, void *userdata,
                                            uint64_t *ticket, rein_error *err) REIN_WUR;
/*
 * Whether the writes of rein_store_group_ahead's ticket were committed: REIN_OK, or
 * REIN_ESTORE with the commit's failure. Only after a later rein_store_group or store call of
 * the same thread returned (the writer commits in order, so that batch has ended by then);
 * else REIN_ESTATE. A ticket of 0 is REIN_OK.
 */
REIN_EXTERN rein_err rein_store_group_kept(rein_store *s, uint64_t ticket,
                                           rein_error *err) REIN_WUR;

/* Counts of what a handle did since it was opened, for tests and benchmarks. */
struct rein_store_counts {
    uint64_t calls;   /* round trips: SQLite, each backend call and each group; Redis, each
                         command */
    uint64_t waits;   /* calls or groups that waited for a commit of their own (SQLite
                         exclusive mode; elsewhere every call commits as it goes: 0) */
    uint64_t commits; /* batches committed (SQLite exclusive mode) */
};
/* Fills *out with s's counts (read without a lock: exact once the store is quiet). */
REIN_EXTERN void rein_store_counts(const rein_store *s, struct rein_store_counts *out);

/* ---- conversations ---------------------------------------------------------------------- */

/*
 * Creates a conversation. id (borrowed) may be NULL: a new "conv_…" id is made. title and
 * metadata_json (a JSON object's text) are borrowed and may be NULL. The new id is written to
 * id_out (may be NULL). REIN_EEXIST when the id is taken, REIN_EINVAL for a bad id or
 * metadata that is not a JSON object.
 */
REIN_EXTERN rein_err rein_store_conv_create(rein_store *s, const char *id, const char *title,
                                            const char *metadata_json, char id_out[REIN_ID_MAX],
                                            rein_error *err) REIN_WUR;
/*
 * Changes title, state ("idle", "running", ... free text up to 23 bytes) or metadata; NULL
 * leaves a field unchanged. Bumps updated time. REIN_ENOTFOUND when there is no such id.
 */
REIN_EXTERN rein_err rein_store_conv_update(rein_store *s, const char *id, const char *title,
                                            const char *state, const char *metadata_json,
                                            rein_error *err) REIN_WUR;
/*
 * *out receives a new JSON object {id, title, state, metadata, created_at, updated_at,
 * message_count} (times in ISO 8601; title and metadata null when unset).
 * REIN_ENOTFOUND when there is no such conversation.
 */
REIN_EXTERN rein_err rein_store_conv_get(rein_store *s, const char *id, json_t **out,
                                         rein_error *err) REIN_WUR;
/* True when the conversation exists; errors count as false and are reported in err. */
REIN_EXTERN bool rein_store_conv_exists(rein_store *s, const char *id, rein_error *err);
/*
 * A page of conversations, newest update first (ties: id descending). cursor (borrowed; NULL
 * for the first page) is the next_cursor of the previous page; limit 0 means 20, at most 100.
 * *out receives a new object {conversations: [conv_get objects], next_cursor: text|null}.
 * REIN_EINVAL for a malformed cursor.
 */
REIN_EXTERN rein_err rein_store_conv_list(rein_store *s, const char *cursor, unsigned limit,
                                          json_t **out, rein_error *err) REIN_WUR;
#define REIN_STORE_QUERY_MAX 200
/*
 * rein_store_conv_list() restricted to the conversations whose title contains text (borrowed;
 * at most REIN_STORE_QUERY_MAX bytes; "" matches every one): ASCII letters are compared
 * without case, anything else byte for byte. The title is the first line of the first
 * message unless someone renamed it (rein_store_conv_update). Pages and cursors as in
 * rein_store_conv_list; a cursor belongs to the text it was made with. Both backends look at
 * every conversation newer than the cursor until the page is full: a search costs a walk
 * over the list, not an index.
 */
REIN_EXTERN rein_err rein_store_conv_find(rein_store *s, const char *text, const char *cursor,
                                          unsigned limit, json_t **out, rein_error *err) REIN_WUR;
/*
 * The page of rein_store_conv_find (text, borrowed, not NULL) or rein_store_conv_list (text
 * NULL) written through w (borrowed) as one JSON value, the same text the tree would dump to,
 * without building the tree: for answers that only send it on. On failure w may hold part of
 * the value: discard its buffer.
 */
REIN_EXTERN rein_err rein_store_conv_page_write(rein_store *s, const char *text, const char *cursor,
                                                unsigned limit, struct rein_jw *w,
                                                rein_error *err) REIN_WUR;
/*
 * Deletes a conversation with its messages, ledger, events and control messages.
 * REIN_ENOTFOUND when absent; REIN_EBUSY when its lock is held by a live turn.
 */
REIN_EXTERN rein_err rein_store_conv_delete(rein_store *s, const char *id,
                                            rein_error *err) REIN_WUR;
/*
 * *out receives a new object: conv_get's fields plus messages (each {position, created_at,
 * trace_id, message: the stored JSON}) and ledger (entries as rein_ledger_entry_write writes
 * them), for `GET /agent/conversations/{id}`.
 */
REIN_EXTERN rein_err rein_store_conv_export(rein_store *s, const char *id, json_t **out,
                                            rein_error *err) REIN_WUR;
/*
 * rein_store_conv_export's members (in its order) written through w (borrowed) into the
 * object w has open, so the caller can add members of its own and close it. Nothing is
 * written when the conversation is absent (REIN_ENOTFOUND) or its id is bad; after any other
 * failure w may hold part of the object: discard its buffer.
 */
REIN_EXTERN rein_err rein_store_conv_export_write(rein_store *s, const char *id, struct rein_jw *w,
                                                  rein_error *err) REIN_WUR;

/* ---- messages --------------------------------------------------------------------------- */

/* One stored message, handed to a callback; every pointer is borrowed for the call only. */
struct rein_store_message {
    int64_t position;     /* 0-based order within the conversation */
    int64_t created_ms;   /* wall clock */
    const char *trace_id; /* may be empty */
    const char *json;     /* the neutral message text exactly as appended, NUL-terminated */
    size_t len;
};
/* Returns 0 to go on; any other value stops the walk and is returned by the walker. */
typedef int (*rein_store_message_fn)(const struct rein_store_message *m, void *userdata);

/*
 * Appends one message (json: len bytes of a JSON object with a "role" of system, user,
 * assistant or tool; borrowed; stored verbatim) and commits before returning. trace_id may
 * be NULL. *position_out (may be NULL) receives its position. Bumps the conversation's
 * updated time. REIN_ENOTFOUND for an unknown conversation, REIN_EINVAL for a message that is
 * not such an object (err says why).
 */
REIN_EXTERN rein_err rein_store_message_append(rein_store *s, const char *conv_id, const char *json,
                                               size_t len, const char *trace_id,
                                               int64_t *position_out, rein_error *err) REIN_WUR;
/* One message of rein_store_messages_append: len bytes of json (borrowed). */
struct rein_store_text {
    const char *json;
    size_t len;
};
/* The most messages rein_store_messages_append takes at once. */
#define REIN_STORE_MESSAGES_BATCH 32
/*
 * Appends n messages (msgs, each as rein_store_message_append takes one) in order, as one store
 * call and all or none: the SQLite store changes the conversation's row once for all of them,
 * Redis takes one round trip. *first_out (may be NULL) receives the first one's position; the
 * others follow it. A message that is not valid refuses the call before anything is written
 * (err names its index); so do more than REIN_STORE_MESSAGES_BATCH. n == 0 does nothing.
 */
REIN_EXTERN rein_err rein_store_messages_append(rein_store *s, const char *conv_id,
                                                const struct rein_store_text *msgs, size_t n,
                                                const char *trace_id, int64_t *first_out,
                                                rein_error *err) REIN_WUR;
/*
 * Calls fn for each message at position >= from, in order. REIN_ENOTFOUND for an unknown
 * conversation; a non-zero value from fn is returned as is.
 */
REIN_EXTERN rein_err rein_store_messages_each(rein_store *s, const char *conv_id, int64_t from,
                                              rein_store_message_fn fn, void *userdata,
                                              rein_error *err) REIN_WUR;

/*
 * Drops the messages at position >= from (a person edits their last message or asks for the
 * answer again: the turn from there is replaced). The ledger and the events stay: what ran, ran.
 * Commits before returning; the message count follows, the updated time is bumped.
 * REIN_ENOTFOUND for an unknown conversation, REIN_EINVAL for a negative position.
 */
REIN_EXTERN rein_err rein_store_messages_truncate(rein_store *s, const char *conv_id, int64_t from,
                                                  rein_error *err) REIN_WUR;

/* ---- ledger ----------------------------------------------------------------------------- */

/*
 * The ledger of a conversation holds struct rein_ledger_entry records (include/rein/tools.h),
 * one per call id, in the order they were first written. Written entries are borrowed; read
 * ones are borrowed for the duration of the callback.
 */
typedef int (*rein_store_ledger_fn)(const char *conv_id, const struct rein_ledger_entry *e,
                                    void *userdata);

/*
 * Writes an entry (normally pending, before the call runs) and commits. An entry with the
 * same call id in the conversation is replaced. call_ms 0 means now; a decided entry without
 * response_ms gets now. REIN_ENOTFOUND for an unknown conversation, REIN_EINVAL for a bad call
 * id, a status out of range, or args/result that are not JSON.
 */
REIN_EXTERN rein_err rein_store_ledger_put(rein_store *s, const char *conv_id,
                                           const struct rein_ledger_entry *e,
                                           rein_error *err) REIN_WUR;
/*
 * Records the outcome of the call e->call_id: e's status, result (may be NULL), response_ms
 * (0: now) and latency_ms; its first record (tool, arguments, call time, step, trace) stays.
 * Clears the interrupted flag. REIN_ENOTFOUND for an unknown entry.
 */
REIN_EXTERN rein_err rein_store_ledger_update(rein_store *s, const char *conv_id,
                                              const struct rein_ledger_entry *e,
                                              rein_error *err) REIN_WUR;
/* Calls fn for each entry of the conversation in the order they were first written. */
REIN_EXTERN rein_err rein_store_ledger_each(rein_store *s, const char *conv_id,
                                            rein_store_ledger_fn fn, void *userdata,
                                            rein_error *err) REIN_WUR;

/* ---- events ----------------------------------------------------------------------------- */

/*
 * Events are what a turn reports (include/rein/session.h records them) and what a later
 * reader replays: each event of a conversation gets the next sequence id of that
 * conversation (1, 2, 3, …; never reused while the conversation exists), so a reader that
 * remembers the last id it saw asks for what came after it, from any instance sharing the
 * store. Each backend keeps the newest events_max events per conversation (older ones are
 * dropped: a reader then sees the ids jump) and events of a trace without a conversation
 * (Redis: for 7 days).
 */
struct rein_store_event {
    const char *conv_id;  /* may be NULL */
    const char *trace_id; /* may be NULL */
    const char *type;     /* "tool_call", "final", ... */
    const char *payload;  /* JSON text */
    int64_t time_ms;      /* 0 on write: now */
    int64_t seq;          /* on read: its sequence id in the conversation, 0 without one;
                             ignored on write */
};
typedef int (*rein_store_event_fn)(const struct rein_store_event *ev, void *userdata);

#define REIN_STORE_EVENTS_BATCH 32

/*
 * Records an event (all borrowed) and commits. *seq_out (may be NULL) receives its sequence id
 * in its conversation (0 for an event without one). REIN_EINVAL when payload is not JSON or
 * type is empty.
 */
REIN_EXTERN rein_err rein_store_event_record(rein_store *s, const struct rein_store_event *ev,
                                             int64_t *seq_out, rein_error *err) REIN_WUR;
/*
 * Records n events (all borrowed) of one conversation and trace (every conv_id and trace_id
 * the same) in one commit; seqs (may be NULL) receives their n sequence ids, in order. At most
 * REIN_STORE_EVENTS_BATCH at once. REIN_EINVAL as above, or for a mixed or too large batch.
 */
REIN_EXTERN rein_err rein_store_events_record(rein_store *s, const struct rein_store_event *evs,
                                              size_t n, int64_t *seqs, rein_error *err) REIN_WUR;
/* rein_store_event_record() without the sequence id. */
REIN_EXTERN rein_err rein_store_event_add(rein_store *s, const struct rein_store_event *ev,
                                          rein_error *err) REIN_WUR;
/*
 * Calls fn for events in time order: those of conv_id (when not NULL), restricted to trace_id
 * when that is not NULL too; with conv_id NULL, those of trace_id.
 */
REIN_EXTERN rein_err rein_store_events_each(rein_store *s, const char *conv_id,
                                            const char *trace_id, rein_store_event_fn fn,
                                            void *userdata, rein_error *err) REIN_WUR;
/*
 * Calls fn for the events of conv_id whose sequence id is greater than after_seq, in order,
 * at most max of them (0: all that are kept). A non-zero value from fn stops the walk and is
 * returned. An unknown conversation has no events (REIN_OK, fn not called).
 */
REIN_EXTERN rein_err rein_store_events_after(rein_store *s, const char *conv_id, int64_t after_seq,
                                             unsigned max, rein_store_event_fn fn, void *userdata,
                                             rein_error *err) REIN_WUR;
/*
 * Waits until conv_id has an event with a sequence id greater than after_seq, for up to
 * timeout_ms (0: just look; negative: no limit). *last_seq (may be NULL) receives the
 * conversation's last sequence id (0 when it has none). Events recorded through this handle
 * wake the waiter at once; those of other processes are seen within poll_ms.
 * REIN_OK when there is a newer event, REIN_ETIMEDOUT when none came in time, REIN_ECANCELED
 * when cancel (borrowed, may be NULL) was triggered first.
 */
REIN_EXTERN rein_err rein_store_events_wait(rein_store *s, const char *conv_id, int64_t after_seq,
                                            int64_t timeout_ms, rein_cancel *cancel,
                                            int64_t *last_seq, rein_error *err) REIN_WUR;

/* ---- locks ------------------------------------------------------------------------------ */

#define REIN_LOCK_STATE_MAX 24
#define REIN_LOCK_TOOL_MAX  128

/* The state of a held lock: what the turn holding it is doing. Plain value; no pointers. */
struct rein_store_lock_info {
    char token[REIN_ID_MAX];         /* owner token ("lock_…") */
    char state[REIN_LOCK_STATE_MAX]; /* thinking, executing, verifying, waiting_approval, … */
    char tool[REIN_LOCK_TOOL_MAX];   /* the tool running, or "" */
    int64_t started_ms;              /* when the lock was taken */
    int64_t expires_ms;              /* when the lease runs out unless renewed */
};

/*
 * Takes the lock of conv_id (the conversation need not exist yet) for lease_ms (> 0) with
 * the initial state (NULL: "thinking"). On success token_out receives the owner token.
 * REIN_EBUSY when a live owner holds it: *held (may be NULL) is filled with its state. An
 * expired lease is taken over. Exactly one of many concurrent callers wins.
 */
REIN_EXTERN rein_err rein_store_lock_acquire(rein_store *s, const char *conv_id, int64_t lease_ms,
                                             const char *state, char token_out[REIN_ID_MAX],
                                             struct rein_store_lock_info *held,
                                             rein_error *err) REIN_WUR;
/* Extends the lease to now + lease_ms. REIN_ESTATE when token no longer holds the lock. */
REIN_EXTERN rein_err rein_store_lock_renew(rein_store *s, const char *conv_id, const char *token,
                                           int64_t lease_ms, rein_error *err) REIN_WUR;
/*
 * Releases the lock if token holds it and clears its control messages. REIN_ESTATE when it
 * does not (already expired and taken, or released): nothing is changed then.
 */
REIN_EXTERN rein_err rein_store_lock_release(rein_store *s, const char *conv_id, const char *token,
                                             rein_error *err) REIN_WUR;
/* Updates the lock state (state and tool borrowed; tool may be NULL). REIN_ESTATE if not held. */
REIN_EXTERN rein_err rein_store_lock_set_state(rein_store *s, const char *conv_id,
                                               const char *token, const char *state,
                                               const char *tool, rein_error *err) REIN_WUR;
/* Fills *out with the current holder's state; REIN_ENOTFOUND when the lock is free. */
REIN_EXTERN rein_err rein_store_lock_get(rein_store *s, const char *conv_id,
                                         struct rein_store_lock_info *out,
                                         rein_error *err) REIN_WUR;

/* ---- control messages: cancel and approvals, across instances ---------------------------- */

/*
 * Asks the turn running on conv_id (on whichever instance holds the lock) to stop. reason
 * (borrowed, may be NULL) is passed on. REIN_ESTATE when no turn holds the lock.
 */
REIN_EXTERN rein_err rein_store_cancel_request(rein_store *s, const char *conv_id,
                                               const char *reason, rein_error *err) REIN_WUR;
/*
 * For the lock owner: *requested becomes true when a cancel was requested for the turn that
 * token identifies; reason (may be NULL, 160 bytes) receives its reason.
 */
REIN_EXTERN rein_err rein_store_cancel_check(rein_store *s, const char *conv_id, const char *token,
                                             bool *requested, char reason[160],
                                             rein_error *err) REIN_WUR;
/*
 * For the lock owner: announces that call_id waits for a person's approval, so that
 * rein_store_approval_post() accepts an answer for it.
 */
REIN_EXTERN rein_err rein_store_approval_request(rein_store *s, const char *conv_id,
                                                 const char *call_id, rein_error *err) REIN_WUR;
/*
 * Any instance: answers a waiting approval. REIN_ENOTFOUND when no approval is waiting for
 * that call, REIN_EEXIST when it was already answered.
 */
REIN_EXTERN rein_err rein_store_approval_post(rein_store *s, const char *conv_id,
                                              const char *call_id, bool approve,
                                              rein_error *err) REIN_WUR;
/*
 * For the lock owner: waits up to timeout_ms (negative: forever) for an answer to call_id,
 * polling every poll_ms. REIN_ETIMEDOUT without an answer, REIN_ECANCELED when cancel
 * (borrowed, may be NULL) is triggered first. The request is removed when this returns.
 */
REIN_EXTERN rein_err rein_store_approval_wait(rein_store *s, const char *conv_id,
                                              const char *call_id, int64_t timeout_ms,
                                              rein_cancel *cancel, bool *approved,
                                              rein_error *err) REIN_WUR;

/* ---- leases: a held lock kept alive by a background thread ------------------------------- */

typedef struct rein_store_lease rein_store_lease;

/*
 * Takes the lock of conv_id (as rein_store_lock_acquire); the handle's lease thread (one for
 * all its leases, started with the first) then renews it every lease_ms / 3 and polls for a
 * cancel request every poll_ms. *out receives the new
 * lease. REIN_EBUSY with *held filled when another turn holds the lock. s is borrowed and
 * must outlive the lease.
 */
REIN_EXTERN rein_err rein_store_lease_acquire(rein_store *s, const char *conv_id, int64_t lease_ms,
                                              const char *state, rein_store_lease **out,
                                              struct rein_store_lock_info *held,
                                              rein_error *err) REIN_WUR;
/*
 * A cancellation handle (borrowed; valid while the lease is) that is triggered when a cancel
 * is requested through the store (reason: the request's) or the lock is lost ("lock lost").
 * Give it (or a child of it) to the turn.
 */
REIN_EXTERN rein_cancel *rein_store_lease_cancel(rein_store_lease *l);
/* The owner token; borrowed. */
REIN_EXTERN const char *rein_store_lease_token(const rein_store_lease *l);
/* Updates the lock state others see (see rein_store_lock_set_state). */
REIN_EXTERN rein_err rein_store_lease_set_state(rein_store_lease *l, const char *state,
                                                const char *tool, rein_error *err) REIN_WUR;
/* Stops renewing l (waiting while the lease thread is renewing it); the lock stays held until
 * rein_store_lease_release. For a release inside rein_store_group, whose connection the lease
 * thread could be waiting for. NULL is a no-op. */
REIN_EXTERN void rein_store_lease_stop(rein_store_lease *l);
/* Stops renewing l (unless stopped), releases the lock and frees l. NULL is a no-op. */
REIN_EXTERN void rein_store_lease_release(rein_store_lease *l);

/* ---- recovery --------------------------------------------------------------------------- */

/*
 * Flags pending ledger entries as interrupted when their conversation's lock is free or its
 * lease has expired (the process that ran them died; a live instance's running turn is left
 * alone), and sets such a conversation's state from "running" (what a session writes when its
 * turn starts) to "interrupted". *flagged (may be NULL) receives how many entries were
 * flagged. Runs at open.
 */
REIN_EXTERN rein_err rein_store_recover(rein_store *s, int *flagged, rein_error *err) REIN_WUR;

#ifdef __cplusplus
}
#endif
#endif /* REIN_STORE_H */
