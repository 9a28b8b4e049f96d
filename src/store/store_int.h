/*
 * store_int.h: the private interface between the store dispatcher (store.c) and its backends
 * (store_sqlite.c, store_redis.c), in the manner of curl's vtls: one vtable per backend, one
 * file per backend, and the dispatcher doing everything the backends would otherwise repeat
 * (argument checks, ids, clocks, JSON validation, cursors, leases, waiting loops).
 *
 * Backends receive validated arguments: ids pass rein_store_id_is_valid(), JSON texts parse,
 * times are filled. They report failures with REIN_ESTORE (err naming the backend and the
 * cause) or the specific codes documented in store.h.
 */
#ifndef REIN_STORE_INT_H
#define REIN_STORE_INT_H

#include <rein/store.h>

#include "core/internal.h"

#include <pthread.h>
#include <stdatomic.h>

/* One conversation as a backend read it; every pointer is borrowed for the callback only.
 * title and metadata may be NULL (unset), state NULL means "idle". */
struct rein__conv_row {
    const char *id, *title, *state, *metadata;
    int64_t created_ms, updated_ms, message_count;
};
/* Returns 0 to go on; anything else (a REIN_E* code) stops the walk and is returned by it. */
typedef int (*rein__conv_row_fn)(const struct rein__conv_row *row, void *userdata);

struct rein__store_ops {
    const char *kind;
    void (*close)(rein_store *s);
    rein_err (*ping)(rein_store *s, rein_error *err);
    /* rein_store_read_now; NULL: the backend cannot read without waiting (REIN_EBUSY). */
    rein_err (*read_now)(rein_store *s, rein_store_read_fn fn, void *userdata, rein_error *err);
    /* rein_store_read; NULL: fn runs as it is (its calls each read on their own). */
    rein_err (*read)(rein_store *s, rein_store_read_fn fn, void *userdata, rein_error *err);
    /* rein_store_group; NULL: the backend commits every call on its own (fn runs as it is). */
    rein_err (*group)(rein_store *s, rein_store_read_fn fn, void *userdata, rein_error *err);
    /* rein_store_group_ahead and _kept; NULL: the group waits (ticket 0). */
    rein_err (*group_ahead)(rein_store *s, rein_store_read_fn fn, void *userdata, uint64_t *ticket,
                            rein_error *err);
    rein_err (*group_kept)(rein_store *s, uint64_t ticket, rein_error *err);

    rein_err (*conv_create)(rein_store *s, const char *id, const char *title, const char *metadata,
                            int64_t now_ms, rein_error *err);
    rein_err (*conv_update)(rein_store *s, const char *id, const char *title, const char *state,
                            const char *metadata, int64_t now_ms, rein_error *err);
    /* Hands the conversation's row to fn once (REIN_ENOTFOUND when there is none); returns
     * what fn returned when it was not 0. */
    rein_err (*conv_get)(rein_store *s, const char *id, rein__conv_row_fn fn, void *userdata,
                         rein_error *err);
    /* Hands up to limit conversations after (cur_ms, cur_id) (cur_id NULL: from the top) to fn,
     * newest first, ties by id descending; with query, only those whose title contains it
     * (ASCII letters compared without case). Stops at and returns fn's first non-zero value. */
    rein_err (*conv_list)(rein_store *s, int64_t cur_ms, const char *cur_id, const char *query,
                          unsigned limit, rein__conv_row_fn fn, void *userdata, rein_error *err);
    rein_err (*conv_delete)(rein_store *s, const char *id, int64_t now_ms, rein_error *err);

    /* msgs are checked (n >= 1); all or none; *first: the first one's position. */
    rein_err (*messages_append)(rein_store *s, const char *conv_id,
                                const struct rein_store_text *msgs, size_t n, const char *trace_id,
                                int64_t now_ms, int64_t *first, rein_error *err);
    rein_err (*messages_each)(rein_store *s, const char *conv_id, int64_t from,
                              rein_store_message_fn fn, void *userdata, rein_error *err);
    /* Drops the messages at position >= from (the conversation exists) and sets the count. */
    rein_err (*messages_truncate)(rein_store *s, const char *conv_id, int64_t from, int64_t now_ms,
                                  rein_error *err);

    /* e has its times filled and its texts checked. */
    rein_err (*ledger_put)(rein_store *s, const char *conv_id, const struct rein_ledger_entry *e,
                           rein_error *err);
    /* Sets e's status, result, response_ms and latency_ms on the entry of e->call_id. */
    rein_err (*ledger_update)(rein_store *s, const char *conv_id, const struct rein_ledger_entry *e,
                              rein_error *err);
    rein_err (*ledger_each)(rein_store *s, const char *conv_id, rein_store_ledger_fn fn,
                            void *userdata, rein_error *err);

    /* n (1..REIN_STORE_EVENTS_BATCH) events of one conversation and trace, in one commit;
     * seqs[i]: the next sequence ids of the conversation, 0 without one. The backend drops the
     * conversation's events older than the newest opts.events_max. */
    rein_err (*events_add)(rein_store *s, const struct rein_store_event *evs, size_t n,
                           int64_t *seqs, rein_error *err);
    rein_err (*events_each)(rein_store *s, const char *conv_id, const char *trace_id,
                            rein_store_event_fn fn, void *userdata, rein_error *err);
    /* Events of conv_id with seq > after, in order, at most max (0: all). */
    rein_err (*events_after)(rein_store *s, const char *conv_id, int64_t after, unsigned max,
                             rein_store_event_fn fn, void *userdata, rein_error *err);
    /* The conversation's last sequence id, 0 when it has none. */
    rein_err (*events_last)(rein_store *s, const char *conv_id, int64_t *last, rein_error *err);

    rein_err (*lock_acquire)(rein_store *s, const char *conv_id, const char *token,
                             const char *state, int64_t lease_ms, struct rein_store_lock_info *held,
                             rein_error *err);
    rein_err (*lock_renew)(rein_store *s, const char *conv_id, const char *token, int64_t lease_ms,
                           rein_error *err);
    rein_err (*lock_release)(rein_store *s, const char *conv_id, const char *token,
                             rein_error *err);
    rein_err (*lock_set_state)(rein_store *s, const char *conv_id, const char *token,
                               const char *state, const char *tool, rein_error *err);
    rein_err (*lock_get)(rein_store *s, const char *conv_id, struct rein_store_lock_info *out,
                         rein_error *err);

    rein_err (*cancel_request)(rein_store *s, const char *conv_id, const char *reason,
                               rein_error *err);
    rein_err (*cancel_check)(rein_store *s, const char *conv_id, const char *token, bool *requested,
                             char reason[160], rein_error *err);
    rein_err (*approval_request)(rein_store *s, const char *conv_id, const char *call_id,
                                 int64_t now_ms, rein_error *err);
    rein_err (*approval_post)(rein_store *s, const char *conv_id, const char *call_id, bool approve,
                              int64_t now_ms, rein_error *err);
    /* *answered false while nobody has answered; the entry stays until approval_drop. */
    rein_err (*approval_take)(rein_store *s, const char *conv_id, const char *call_id,
                              bool *answered, bool *approve, rein_error *err);
    rein_err (*approval_drop)(rein_store *s, const char *conv_id, const char *call_id,
                              rein_error *err);

    rein_err (*recover)(rein_store *s, int *flagged, rein_error *err);
};

/* rein_store_counts, bumped by the backends (relaxed: they are statistics). */
struct rein__store_tally {
    _Atomic uint64_t calls, waits, commits;
    _Atomic uint64_t savepoints;  /* calls that took a savepoint of their own (SQLite groups) */
    _Atomic uint64_t checkpoints; /* WAL checkpoints the SQLite writer thread ran */
};

/*
 * Invariants: ops and impl are set by a backend's open function before the store is handed
 * out; url is the address without any password. events_gen grows (under events_mu) after
 * every event recorded through this handle, and events_cv is broadcast then, so waiters in
 * this process wake at once instead of at their next poll.
 */
struct rein_store {
    const struct rein__store_ops *ops;
    void *impl;
    char *url;
    struct rein_store_opts opts; /* defaults filled in; key_prefix points at prefix */
    char *prefix;
    pthread_mutex_t events_mu;
    pthread_cond_t events_cv;
    uint64_t events_gen;
    struct rein__store_tally tally;
    struct rein__lease_keeper *keeper; /* lease.c; NULL until the first lease */
};

/* Adds one to a counter of the tally. */
#define REIN__STORE_COUNT(tally, field)                                                            \
    atomic_fetch_add_explicit(&(tally)->field, 1, memory_order_relaxed)

/* Backend entry points: fill s->ops and s->impl, or fail with err set. target is the part of
 * the URL after "sqlite:" (a path) or the whole "redis://…" URL. */
rein_err rein__store_sqlite_open(rein_store *s, const char *path, rein_error *err);
rein_err rein__store_redis_open(rein_store *s, const char *url, rein_error *err);

/* Registers (once; the caller serialises the first call) the VFS that gathers a WAL file's
 * writes until SQLite next syncs, reads or sizes it (sqlite_wal.c, decision 0072), and returns
 * its name; NULL when it could not be registered. Only for a database one connection of this
 * process uses alone (locking_mode=EXCLUSIVE). */
const char *rein__store_sqlite_wal_vfs(void);

/* Stops the thread keeping s's leases (lease.c), when it runs: every lease is released by
 * then. */
void rein__store_keeper_stop(rein_store *s);

/* The WAL frames at which an exclusive-mode SQLite store's writer copies the WAL into the
 * database (decision 0078); frames <= 0 restores the default. Process-wide, for tests. */
void rein__store_sqlite_checkpoint_at(int frames);

/* How many checkpoints the writer thread of s ran (SQLite exclusive mode; for tests). */
uint64_t rein__store_checkpoints(const rein_store *s);

/* How many calls on s took a savepoint of their own inside a group (SQLite exclusive mode;
 * for tests: not part of rein_store_counts). */
uint64_t rein__store_savepoints(const rein_store *s);

/* True when text is a usable call id (1..128 printable ASCII, no spaces). */
bool rein__store_call_id_is_valid(const char *text);

#endif /* REIN_STORE_INT_H */
