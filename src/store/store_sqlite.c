/*
 * The SQLite store backend (src/store/store_int.h): one database file in WAL mode with
 * synchronous=FULL, so every message and ledger change is on disk when its call returns.
 *
 * Connections: a small pool (opts.pool_size) opened lazily; a thread takes one for the length
 * of a call, so the handle is safe from many threads while each sqlite3 connection is used by
 * one thread at a time (SQLITE_OPEN_NOMUTEX). Each connection caches its prepared statements.
 * Writers take the write lock up front (BEGIN IMMEDIATE) and wait on busy_timeout, so two
 * processes on one file never deadlock on a lock upgrade.
 *
 * Exclusive mode (opts.exclusive, what `rein serve` uses): one connection in
 * locking_mode=EXCLUSIVE, so this process alone uses the file and SQLite keeps the WAL index in
 * its heap instead of mapping the -shm file. A mapped -shm that someone truncates or makes
 * unwritable while rein runs kills the process with SIGBUS inside SQLite; heap memory cannot be
 * taken away, and every other I/O failure is an ordinary SQLite error (REIN_ESTORE, a 503).
 * The WAL is kept small: journal_size_limit truncates it after each checkpoint, and in
 * exclusive mode a TRUNCATE checkpoint runs every CHECKPOINT_MS while the connection is handed
 * back (no reader can pin the WAL then). In exclusive mode the writer thread copies the WAL
 * into the database itself, after it has told a batch's submitters, and only once the WAL
 * holds CHECKPOINT_FRAMES frames (writer_checkpoint, docs/decisions/0078).
 *
 * Group commit (exclusive mode, docs/decisions/0026 and 0057): one writer thread owns the
 * connection's writes. rein_store_group hands it fn, and a plain call made on another thread
 * borrows the connection from it; either way the work joins the writer's open transaction (a
 * batch), each call inside its own savepoint (a failed call rolls back to it and leaves the
 * others' work alone). The writer runs every job queued, commits once with
 * synchronous=FULL, and only then tells their submitters, so what a caller was told is written
 * is on disk, and nothing a call read can vanish after it returned. While one commit waits
 * for the disk, the jobs that arrive queue and share the next one; a submitter sleeps once,
 * and no thread hands the connection to another. A batch that fails to commit fails every
 * job in it.
 *
 * Schema: a schema_version table and ordered migration steps; a database newer than the code
 * is refused with a clear error. Locks are rows with an owner token and a lease expiry, taken
 * inside BEGIN IMMEDIATE so exactly one of many racing acquirers wins. A cancel request is a
 * column on the lock row, so it dies with the turn it was meant for; approvals are rows keyed
 * by conversation and call id.
 */
#include "store/store_int.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <sqlite3.h>
#include <string.h>
#include <time.h>

#define WHERE         "store/sqlite"
#define CHECKPOINT_MS 30000
/* Exclusive mode: the WAL is copied into the database once it holds this many frames (about
 * 40 MB of 4 KB pages); SQLite's own automatic checkpoint copies at 1,000. */
#define CHECKPOINT_FRAMES 10000
/* A batch commits when no other call waits, or at this many calls, or this old. */
#define BATCH_MAX_CALLS 256
#define WAL_KEEP_BYTES  "4194304"
/* Exclusive mode: a WAL of CHECKPOINT_FRAMES frames (4 KB pages, 24-byte headers) and the
 * frames of the batch that passed it, kept at that size after a checkpoint, so the file is
 * written over from its start instead of cut and grown again. */
#define WAL_KEEP_BYTES_EXCLUSIVE "50331648"
/* Every connection's settings, ending with the WAL size kept (one of the two above). */
#define CONN_PRAGMAS                                                                               \
    "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA mmap_size=0; "                        \
    "PRAGMA journal_size_limit="
/* A savepoint's journal stays in memory up to this size (about 250 pages; sqlite_setup). */
#define SUBJ_SPILL (1024 * 1024)
/* Failed batches remembered for rein_store_group_kept; an older ticket counts as failed. */
#define FAILED_KEEP 64

/* Ordered migrations: step i brings the schema from version i to i + 1. Never edit a step
 * that has shipped; append a new one. */
static const char *const migrations[] = {
    /* 1: conversations, messages, ledger, events. */
    "CREATE TABLE conversations ("
    "  id TEXT PRIMARY KEY, title TEXT, state TEXT NOT NULL DEFAULT 'idle', metadata TEXT,"
    "  created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,"
    "  message_count INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX conversations_updated ON conversations(updated_ms, id);"
    "CREATE TABLE messages ("
    "  conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
    "  position INTEGER NOT NULL, created_ms INTEGER NOT NULL,"
    "  trace_id TEXT NOT NULL DEFAULT '', body TEXT NOT NULL,"
    "  PRIMARY KEY (conversation_id, position)) WITHOUT ROWID;"
    "CREATE TABLE ledger ("
    "  conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL, args TEXT NOT NULL,"
    "  status TEXT NOT NULL, result TEXT, call_ms INTEGER NOT NULL, response_ms INTEGER,"
    "  step INTEGER, trace_id TEXT NOT NULL DEFAULT '',"
    "  PRIMARY KEY (conversation_id, call_id));"
    "CREATE TABLE events ("
    "  id INTEGER PRIMARY KEY, conversation_id TEXT, trace_id TEXT, type TEXT NOT NULL,"
    "  payload TEXT NOT NULL, time_ms INTEGER NOT NULL);"
    "CREATE INDEX events_conversation ON events(conversation_id, id);"
    "CREATE INDEX events_trace ON events(trace_id, id);",
    /* 2: the name the model sent, recovery's flag, locks and control messages. */
    "ALTER TABLE ledger ADD COLUMN name_sent TEXT;"
    "ALTER TABLE ledger ADD COLUMN interrupted INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX ledger_pending ON ledger(conversation_id) WHERE status = 'pending';"
    "CREATE TABLE locks ("
    "  conversation_id TEXT PRIMARY KEY, token TEXT NOT NULL, state TEXT NOT NULL,"
    "  tool TEXT NOT NULL DEFAULT '', started_ms INTEGER NOT NULL,"
    "  expires_ms INTEGER NOT NULL, cancel_reason TEXT);"
    "CREATE TABLE approvals ("
    "  conversation_id TEXT NOT NULL, call_id TEXT NOT NULL, requested_ms INTEGER NOT NULL,"
    "  answer INTEGER, answered_ms INTEGER, PRIMARY KEY (conversation_id, call_id));",
    /* 3: a sequence id per conversation for events, so a reader resumes after the last one it
     * saw; existing events are numbered in the order they were written. */
    "ALTER TABLE events ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;"
    "UPDATE events SET seq = n.rn FROM (SELECT id, row_number() OVER "
    "  (PARTITION BY conversation_id ORDER BY id) AS rn FROM events "
    "  WHERE conversation_id IS NOT NULL) AS n WHERE events.id = n.id;"
    "DROP INDEX IF EXISTS events_conversation;"
    "CREATE UNIQUE INDEX events_conversation_seq ON events(conversation_id, seq);",
    /* 4: the ledger names its fields as every other shape does (sent_name), and keeps how long
     * each call ran (unknown for the calls recorded before). */
    ("ALTER TABLE ledger RENAME COLUMN name_sent TO sent_name;"
     "ALTER TABLE ledger ADD COLUMN latency_ms INTEGER;"),
    /* 5: recovery finds the conversations whose turn died ("running" without a live lock)
     * without reading every conversation. */
    "CREATE INDEX conversations_running ON conversations(id) WHERE state = 'running';",
    /* 6: the list reads a page from one index that holds every column it answers with (a
     * covering index), instead of looking each row up in the table (about a fifth of a
     * page's cost at 100,000 conversations). It replaces the (updated_ms, id) index it
     * extends, which changes whenever updated_ms does; state, title and metadata rarely
     * change without it. */
    "DROP INDEX IF EXISTS conversations_updated;"
    "CREATE INDEX conversations_listed ON conversations"
    "  (updated_ms, id, title, state, metadata, created_ms, message_count);",
    /* 7: a trace's events are found through the last event of each batch recorded (tail = 1;
     * every event without a conversation) and the conversation's own index, instead of an
     * index entry for every event: a turn wrote about a dozen entries into a random page of
     * events_trace, the largest part of its WAL frames (decision 0079). Trimming drops a
     * conversation's oldest events first, so any event of a batch that is kept keeps its
     * batch's tail; for the events recorded before, the last of each conversation and trace
     * stands for them. */
    "ALTER TABLE events ADD COLUMN tail INTEGER;"
    "UPDATE events SET tail = 1 WHERE conversation_id IS NULL OR id IN (SELECT max(id) FROM "
    "  events WHERE conversation_id IS NOT NULL GROUP BY conversation_id, trace_id);"
    "CREATE INDEX events_trace_tail ON events(trace_id, id) WHERE tail = 1;"
    "DROP INDEX IF EXISTS events_trace;",
};
#define SCHEMA_VERSION ((int)REIN_ARRAY_SIZE(migrations))

#define CONV_COLS "id, title, state, metadata, created_ms, updated_ms, message_count"
#define LEDGER_COLS                                                                                \
    "call_id, tool, sent_name, args, status, result, call_ms, response_ms, step, trace_id, "       \
    "interrupted, latency_ms"
#define LOCK_COLS  "token, state, tool, started_ms, expires_ms"
#define EVENT_COLS "conversation_id, trace_id, type, payload, time_ms, seq"
/* Old events are dropped in batches: every TRIM_EVERY-th event of a conversation. */
#define TRIM_EVERY 64

enum stmt_id {
    ST_BEGIN,
    ST_BEGIN_READ,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_SAVEPOINT,
    ST_RELEASE,
    ST_ROLLBACK_TO,
    ST_PING,
    ST_CONV_INSERT,
    ST_CONV_UPDATE,
    ST_CONV_GET,
    ST_CONV_LIST_FIRST,
    ST_CONV_LIST_AFTER,
    ST_CONV_DELETE,
    ST_CONV_BUMP,
    ST_CONV_COUNT,
    ST_CONV_COUNT_AT,
    ST_MSG_INSERT,
    ST_MSG_TRUNCATE,
    ST_MSG_EACH,
    ST_LEDGER_PUT,
    ST_LEDGER_UPDATE,
    ST_LEDGER_EACH,
    ST_EVENT_INSERT,
    ST_EVENTS_CONV,
    ST_EVENTS_CONV_TRACE,
    ST_EVENTS_TRACE,
    ST_EVENTS_DELETE,
    ST_EVENTS_AFTER,
    ST_EVENTS_LAST,
    ST_EVENTS_TRIM,
    ST_LOCK_GET_LIVE,
    ST_LOCK_PUT,
    ST_LOCK_RENEW,
    ST_LOCK_RELEASE,
    ST_LOCK_STATE,
    ST_LOCK_DELETE_ANY,
    ST_CANCEL_SET,
    ST_CANCEL_GET,
    ST_APPROVAL_PUT,
    ST_APPROVAL_ANSWER,
    ST_APPROVAL_GET,
    ST_APPROVAL_DROP,
    ST_APPROVALS_DELETE,
    ST_RECOVER,
    ST_RECOVER_CONVS,
    ST_COUNT
};

static const char *const sql_text[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_BEGIN_READ] = "BEGIN",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_SAVEPOINT] = "SAVEPOINT call",
    [ST_RELEASE] = "RELEASE call",
    [ST_ROLLBACK_TO] = "ROLLBACK TO call",
    [ST_PING] = "SELECT count(*) FROM schema_version",
    [ST_CONV_INSERT] = "INSERT INTO conversations (id, title, metadata, created_ms, updated_ms) "
                       "VALUES (?1, ?2, ?3, ?4, ?4)",
    [ST_CONV_UPDATE] = "UPDATE conversations SET title = COALESCE(?2, title), "
                       "state = COALESCE(?3, state), metadata = COALESCE(?4, metadata), "
                       "updated_ms = ?5 WHERE id = ?1",
    [ST_CONV_GET] = "SELECT " CONV_COLS " FROM conversations WHERE id = ?1",
    /* ?4: text the title must contain (ASCII letters without case), NULL for every one. */
    [ST_CONV_LIST_FIRST] = "SELECT " CONV_COLS " FROM conversations "
                           "WHERE (?4 IS NULL OR instr(lower(COALESCE(title, '')), lower(?4)) > 0) "
                           "ORDER BY updated_ms DESC, id DESC LIMIT ?3",
    [ST_CONV_LIST_AFTER] = "SELECT " CONV_COLS " FROM conversations "
                           "WHERE (updated_ms < ?1 OR (updated_ms = ?1 AND id < ?2)) "
                           "AND (?4 IS NULL OR instr(lower(COALESCE(title, '')), lower(?4)) > 0) "
                           "ORDER BY updated_ms DESC, id DESC LIMIT ?3",
    [ST_CONV_DELETE] = "DELETE FROM conversations WHERE id = ?1",
    /* Read first (ST_CONV_COUNT), not RETURNING: see ST_EVENT_INSERT. */
    [ST_CONV_BUMP] = "UPDATE conversations SET message_count = message_count + ?3, "
                     "updated_ms = max(updated_ms, ?2) WHERE id = ?1",
    [ST_CONV_COUNT] = "SELECT message_count FROM conversations WHERE id = ?1",
    [ST_CONV_COUNT_AT] = "UPDATE conversations SET message_count = min(message_count, ?2), "
                         "updated_ms = max(updated_ms, ?3) WHERE id = ?1",
    [ST_MSG_TRUNCATE] = "DELETE FROM messages WHERE conversation_id = ?1 AND position >= ?2",
    [ST_MSG_INSERT] = "INSERT INTO messages (conversation_id, position, created_ms, trace_id, "
                      "body) VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_MSG_EACH] = "SELECT position, created_ms, trace_id, body FROM messages "
                    "WHERE conversation_id = ?1 AND position >= ?2 ORDER BY position",
    [ST_LEDGER_PUT] =
        "INSERT INTO ledger (conversation_id, seq, call_id, tool, sent_name, args, status, "
        "result, call_ms, response_ms, step, trace_id, interrupted, latency_ms) VALUES (?1, "
        "(SELECT COALESCE(MAX(seq), 0) + 1 FROM ledger WHERE conversation_id = ?1), "
        "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) "
        "ON CONFLICT (conversation_id, call_id) DO UPDATE SET tool = excluded.tool, "
        "sent_name = excluded.sent_name, args = excluded.args, status = excluded.status, "
        "result = excluded.result, call_ms = excluded.call_ms, "
        "response_ms = excluded.response_ms, step = excluded.step, "
        "trace_id = excluded.trace_id, interrupted = excluded.interrupted, "
        "latency_ms = excluded.latency_ms",
    [ST_LEDGER_UPDATE] = "UPDATE ledger SET status = ?3, result = ?4, response_ms = ?5, "
                         "latency_ms = ?6, interrupted = 0 "
                         "WHERE conversation_id = ?1 AND call_id = ?2",
    [ST_LEDGER_EACH] = "SELECT " LEDGER_COLS " FROM ledger WHERE conversation_id = ?1 "
                       "ORDER BY seq",
    /* The sequence id is given (the conversation's last, read first, plus one): a RETURNING
     * clause made SQLite keep a statement journal of every page the insert touched. */
    [ST_EVENT_INSERT] = "INSERT INTO events (conversation_id, trace_id, type, payload, time_ms, "
                        "seq, tail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_EVENTS_CONV] = "SELECT " EVENT_COLS " FROM events WHERE conversation_id = ?1 ORDER BY seq",
    [ST_EVENTS_CONV_TRACE] = "SELECT " EVENT_COLS " FROM events WHERE conversation_id = ?1 "
                             "AND trace_id = ?2 ORDER BY seq",
    /* The conversations that hold a tail of the trace, each read through its own index, and
     * the events without a conversation (each a tail); id (last) orders them as recorded. */
    [ST_EVENTS_TRACE] = "SELECT " EVENT_COLS ", id FROM events WHERE trace_id = ?1 AND "
                        "conversation_id IN (SELECT conversation_id FROM events "
                        "WHERE trace_id = ?1 AND tail = 1) "
                        "UNION ALL SELECT " EVENT_COLS ", id FROM events WHERE trace_id = ?1 "
                        "AND tail = 1 AND conversation_id IS NULL ORDER BY 7",
    [ST_EVENTS_DELETE] = "DELETE FROM events WHERE conversation_id = ?1",
    [ST_EVENTS_AFTER] = "SELECT " EVENT_COLS " FROM events WHERE conversation_id = ?1 "
                        "AND seq > ?2 ORDER BY seq LIMIT ?3",
    [ST_EVENTS_LAST] = "SELECT COALESCE(MAX(seq), 0) FROM events WHERE conversation_id = ?1",
    [ST_EVENTS_TRIM] = "DELETE FROM events WHERE conversation_id = ?1 AND seq <= ?2",
    [ST_LOCK_GET_LIVE] = "SELECT " LOCK_COLS " FROM locks WHERE conversation_id = ?1 "
                         "AND expires_ms > ?2",
    [ST_LOCK_PUT] = "INSERT OR REPLACE INTO locks (conversation_id, token, state, tool, "
                    "started_ms, expires_ms, cancel_reason) VALUES (?1, ?2, ?3, '', ?4, ?5, NULL)",
    [ST_LOCK_RENEW] = "UPDATE locks SET expires_ms = ?4 WHERE conversation_id = ?1 "
                      "AND token = ?2 AND expires_ms > ?3",
    [ST_LOCK_RELEASE] = "DELETE FROM locks WHERE conversation_id = ?1 AND token = ?2",
    [ST_LOCK_STATE] = "UPDATE locks SET state = ?4, tool = ?5 WHERE conversation_id = ?1 "
                      "AND token = ?2 AND expires_ms > ?3",
    [ST_LOCK_DELETE_ANY] = "DELETE FROM locks WHERE conversation_id = ?1",
    [ST_CANCEL_SET] = "UPDATE locks SET cancel_reason = ?3 WHERE conversation_id = ?1 "
                      "AND expires_ms > ?2",
    [ST_CANCEL_GET] = "SELECT cancel_reason FROM locks WHERE conversation_id = ?1 AND token = ?2",
    [ST_APPROVAL_PUT] = "INSERT OR REPLACE INTO approvals (conversation_id, call_id, "
                        "requested_ms, answer, answered_ms) VALUES (?1, ?2, ?3, NULL, NULL)",
    [ST_APPROVAL_ANSWER] = "UPDATE approvals SET answer = ?3, answered_ms = ?4 "
                           "WHERE conversation_id = ?1 AND call_id = ?2 AND answer IS NULL",
    [ST_APPROVAL_GET] = "SELECT answer FROM approvals WHERE conversation_id = ?1 "
                        "AND call_id = ?2",
    [ST_APPROVAL_DROP] = "DELETE FROM approvals WHERE conversation_id = ?1 AND call_id = ?2",
    [ST_APPROVALS_DELETE] = "DELETE FROM approvals WHERE conversation_id = ?1",
    [ST_RECOVER] = "UPDATE ledger SET interrupted = 1 WHERE status = 'pending' "
                   "AND interrupted = 0 AND conversation_id NOT IN "
                   "(SELECT conversation_id FROM locks WHERE expires_ms > ?1)",
    [ST_RECOVER_CONVS] = "UPDATE conversations SET state = 'interrupted' WHERE state = 'running' "
                         "AND id NOT IN (SELECT conversation_id FROM locks WHERE expires_ms > ?1)",
};

/* One connection and its statement cache; used by one thread at a time. */
struct conn {
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    struct conn *next_free;
    /* Group mode: the call that holds the connection took no savepoint (conn_get_one); calls
     * do not nest on a connection, so one flag per connection is enough. */
    bool no_savepoint;
};

/*
 * Work for the writer thread (group mode), on the submitting thread's stack until the writer
 * posts ended for the last time. A group runs fn there; a borrow (fn NULL) is a single call
 * made on its own thread: the writer lends it the connection inside the batch (posts ended),
 * waits on the handle's back until the call is done, then goes on.
 */
struct job {
    struct job *next;
    rein_store *s;
    rein_store_read_fn fn;
    void *userdata;
    rein_error *err; /* the submitter's; may be NULL */
    rein_err rc;     /* fn's or the call's result, then the commit's */
    struct conn *c;  /* a borrow: the connection lent */
    bool ahead;      /* rein_store_group_ahead: posted once fn ran, and out of the list */
    uint64_t batch;  /* ahead: the batch that holds it (its ticket) */
    sem_t ended;     /* posted once the batch holding the job has ended (a borrow: also when
                        the connection is lent) */
};

/*
 * Invariants: count <= max; every opened connection is either on the free list or held by
 * exactly one thread; all[0..count) lists them all for closing. Group mode: the writer thread
 * takes the connection for each batch and hands it back after the batch's commit, so no
 * transaction is open while the connection is free; jobs..jobs_tail is the queue of submitted
 * jobs, writer_idle says the writer waits on work for one. jobs, writer_idle, stopping and
 * waiting belong to mu.
 */
struct sq {
    char *path;
    int busy_timeout_ms;
    bool exclusive;
    bool group;            /* group commit: exclusive mode, once the schema is in place */
    int64_t checkpoint_ms; /* monotonic time of the last TRUNCATE checkpoint */
    int wal_frames;        /* exclusive: frames in the WAL after the last commit (wal_hook) */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a connection came free */
    struct conn **all;
    unsigned count, max;
    unsigned waiting; /* threads waiting in conn_take */
    struct conn *free_list;
    struct job *jobs, **jobs_tail;
    pthread_cond_t work; /* a job was queued, or stopping */
    bool writer_idle, stopping, has_writer;
    pthread_t writer;
    sem_t back;                      /* a borrower handed the connection back to the writer */
    struct rein__store_tally *tally; /* the handle's */
    /* Batches by number, for rein_store_group_kept (mu): the last begun and ended, and the
     * last FAILED_KEEP that failed (nfailed in all; failed_err the last one's failure). */
    uint64_t batch_no, ended_no, failed[FAILED_KEEP];
    uint64_t nfailed;
    rein_error failed_err;
};

static struct sq *impl(rein_store *s)
{
    return s->impl;
}

/* Records a SQLite failure with the file, the operation and SQLite's own words. */
static rein_err fail(struct sq *q, sqlite3 *db, int rc, const char *what, rein_error *err)
{
    const char *hint = "";
    int prim = rc & 0xff;

    if (prim == SQLITE_NOTADB || prim == SQLITE_CORRUPT)
        hint = " (the file is not a rein database or is damaged)";
    else if (prim == SQLITE_READONLY || prim == SQLITE_PERM)
        hint = " (the file or its folder is not writable)";
    else if (prim == SQLITE_CANTOPEN)
        hint = " (check that the folder exists and is writable)";
    else if (prim == SQLITE_BUSY)
        hint = " (another process holds the database; busy_timeout passed)";
    rein_error_set(err, REIN_ESTORE, "sqlite %s: %s: %s%s", q->path, what,
                   db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), hint);
    if (err) {
        err->detail = rc;
        rein_error_where(err, WHERE);
    }
    return REIN_ESTORE;
}

static void conn_close(struct conn *c)
{
    if (!c)
        return;
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(c->st[i]);
    sqlite3_close_v2(c->db);
    rein_free(c);
}

static rein_err exec_sql(struct sq *q, struct conn *c, const char *sql, const char *what,
                         rein_error *err)
{
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);

    return rc == SQLITE_OK ? REIN_OK : fail(q, c->db, rc, what, err);
}

/*
 * Waits for the write lock another connection holds. SQLite's own busy handler sleeps 1, 2,
 * 5, ... up to 100 ms between tries, which under a server's concurrent turns (each writing a
 * few small commits) turns a lock held for a millisecond into waits of tens of milliseconds;
 * this one looks again every 100 microseconds, up to busy_timeout.
 */
static int busy_wait(void *userdata, int tries)
{
    static _Thread_local int64_t since_ms;
    const struct sq *q = userdata;
    struct timespec ts = {0, 100000};

    if (tries == 0)
        since_ms = rein_now_ms();
    else if (rein_now_ms() - since_ms >= q->busy_timeout_ms)
        return 0;
    nanosleep(&ts, NULL);
    return 1;
}

/* The VFS of exclusive-mode connections (sqlite_setup): NULL is SQLite's default. */
static const char *exclusive_vfs;

/* Frames that start a checkpoint in exclusive mode (rein__store_sqlite_checkpoint_at). */
static _Atomic int checkpoint_frames = CHECKPOINT_FRAMES;

void rein__store_sqlite_checkpoint_at(int frames)
{
    atomic_store(&checkpoint_frames, frames > 0 ? frames : CHECKPOINT_FRAMES);
}

/*
 * Exclusive mode: SQLite calls this after each commit with the WAL's frame count. Setting it
 * replaces SQLite's automatic checkpoint, which ran inside the COMMIT (its submitters waited
 * for the copy and the database's sync) every 1,000 frames; writer_checkpoint does it instead.
 * The thread that commits holds the connection, so wal_frames needs no lock.
 */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
    struct sq *q = arg;

    (void)db;
    (void)name;
    q->wal_frames = frames;
    return SQLITE_OK;
}

static rein_err conn_open(struct sq *q, struct conn **out, rein_error *err)
{
    struct conn *c = rein_calloc(1, sizeof(*c));
    rein_err rc;
    int src;

    *out = NULL;
    if (!c)
        return rein_error_set(err, REIN_ENOMEM, "sqlite: out of memory");
    src = sqlite3_open_v2(q->path, &c->db,
                          SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                          q->exclusive ? exclusive_vfs : NULL);
    if (src != SQLITE_OK) {
        rc = fail(q, c->db, src, "open", err);
        goto out_close;
    }
    sqlite3_extended_result_codes(c->db, 1);
    /* SQLite quietly falls back to read-only when it cannot write; a store must write. */
    if (sqlite3_db_readonly(c->db, "main") == 1) {
        rc = fail(q, NULL, SQLITE_READONLY, "open", err);
        goto out_close;
    }
    sqlite3_busy_handler(c->db, busy_wait, q);
    /* Before WAL is first used, so the WAL index lives in the heap (see the top). */
    rc = q->exclusive ? exec_sql(q, c, "PRAGMA locking_mode=EXCLUSIVE", "lock the file", err)
                      : REIN_OK;
    /* WAL lets readers run beside the writer; FULL makes each commit durable. Each call's
     * savepoint journals the pages it changes so that it can be undone alone: in a temporary
     * file that was two writes per page, most of a turn's system calls (issue 25); in memory
     * it is a copy, in one piece up to SUBJ_SPILL bytes (sqlite_setup), a file only past
     * that. That journal only undoes a savepoint; the WAL is what survives a crash. */
    if (rc == REIN_OK)
        rc = exec_sql(q, c, "PRAGMA journal_mode=WAL", "enable WAL", err);
    if (rc == REIN_OK)
        rc = exec_sql(q, c,
                      q->exclusive ? CONN_PRAGMAS WAL_KEEP_BYTES_EXCLUSIVE
                                   : CONN_PRAGMAS WAL_KEEP_BYTES,
                      "configure", err);
    if (rc != REIN_OK)
        goto out_close;
    if (q->exclusive)
        sqlite3_wal_hook(c->db, wal_hook, q);
    *out = c;
    return REIN_OK;
out_close:
    conn_close(c);
    return rc;
}

static rein_err conn_take(struct sq *q, struct conn **out, rein_error *err)
{
    struct conn *c = NULL;
    rein_err rc = REIN_OK;

    pthread_mutex_lock(&q->mu);
    while (!q->free_list && q->count >= q->max) {
        q->waiting++;
        pthread_cond_wait(&q->cv, &q->mu);
        q->waiting--;
    }
    if (q->free_list) {
        c = q->free_list;
        q->free_list = c->next_free;
    } else {
        rc = conn_open(q, &c, err);
        if (rc == REIN_OK && c)
            q->all[q->count++] = c;
        else if (rc == REIN_OK)
            rc = REIN_ESTORE;
    }
    assert(q->count <= q->max); /* struct sq's invariant */
    pthread_mutex_unlock(&q->mu);
    *out = c;
    return rc;
}

/* Puts c back on the free list and wakes one thread waiting for a connection. */
static void conn_release(struct sq *q, struct conn *c)
{
    pthread_mutex_lock(&q->mu);
    c->next_free = q->free_list;
    q->free_list = c;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void conn_put(struct sq *q, struct conn *c)
{
    /* In group mode the writer checkpoints once its submitters are told (writer_checkpoint). */
    if (q->exclusive && !q->group && rein_now_ms() - q->checkpoint_ms >= CHECKPOINT_MS &&
        sqlite3_get_autocommit(c->db)) {
        /* The one connection is ours alone here: nothing can hold the WAL open. */
        int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        if (rc != SQLITE_OK)
            rein_log(REIN_LOG_WARN, WHERE, "%s: checkpoint: %s", q->path, sqlite3_errmsg(c->db));
        q->checkpoint_ms = rein_now_ms();
    }
    conn_release(q, c);
}

/*
 * The connection this thread holds inside sq_read_now (with its store), else zeros. The calls
 * fn makes there find it in conn_get and read inside its one read transaction.
 */
struct held {
    const struct sq *q;
    struct conn *c;
};
static _Thread_local struct held held_read;

static bool holds(const struct held *h, const struct sq *q, const struct conn *c)
{
    return h->q == q && h->c == c;
}

static bool is_held(const struct sq *q, const struct conn *c)
{
    return holds(&held_read, q, c);
}

/*
 * The connection the writer thread holds while it runs a batch's groups, or a borrowing thread
 * for its one call (with its store), else zeros. The calls made there take it in conn_get
 * with a savepoint of their own inside the batch, and leave it in conn_done without waiting
 * for the commit: the group's (or the borrow's) submitter waits once for the batch.
 */
static _Thread_local struct held held_write;

/* The cached statement id, prepared on first use, reset and unbound. */
static sqlite3_stmt *stmt(struct sq *q, struct conn *c, enum stmt_id id, rein_error *err)
{
    if (!c->st[id]) {
        int rc = sqlite3_prepare_v3(c->db, sql_text[id], -1, SQLITE_PREPARE_PERSISTENT, &c->st[id],
                                    NULL);
        if (rc != SQLITE_OK) {
            fail(q, c->db, rc, "prepare", err);
            return NULL;
        }
    }
    if (is_held(q, c) && !sqlite3_stmt_readonly(c->st[id])) {
        rein_error_set(err, REIN_ESTORE, "sqlite %s: a write inside rein_store_read_now", q->path);
        return NULL;
    }
    return c->st[id];
}

static void done(sqlite3_stmt *st)
{
    if (st) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
}

static void bind_text(sqlite3_stmt *st, int i, const char *text)
{
    if (text)
        sqlite3_bind_text(st, i, text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

/* Runs a statement that returns no rows; *changes (may be NULL) gets the rows touched. */
static rein_err run(struct sq *q, struct conn *c, sqlite3_stmt *st, const char *what, int *changes,
                    rein_error *err)
{
    int rc = sqlite3_step(st);

    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return fail(q, c->db, rc, what, err);
    }
    if (changes)
        *changes = sqlite3_changes(c->db);
    done(st);
    return REIN_OK;
}

static rein_err run_id(struct sq *q, struct conn *c, enum stmt_id id, rein_error *err)
{
    sqlite3_stmt *st = stmt(q, c, id, err);

    if (!st)
        return REIN_ESTORE;
    return run(q, c, st, sql_text[id], NULL, err);
}

/* A call's own transaction: in group mode the call's savepoint inside the batch stands for
 * it, so BEGIN and COMMIT do nothing there. */
static rein_err tx(struct sq *q, struct conn *c, enum stmt_id id, rein_error *err)
{
    if (is_held(q, c))
        return REIN_OK; /* inside sq_read_now's transaction */
    if (q->group && (id == ST_BEGIN || id == ST_BEGIN_READ || id == ST_COMMIT))
        return REIN_OK;
    return run_id(q, c, id, err);
}

/* Undoes the call's changes: its transaction, or in group mode its savepoint (a call without
 * one has nothing to undo: SQLite undid its one statement if that failed). */
static void rollback(struct sq *q, struct conn *c)
{
    rein_error ignored;

    if (sqlite3_get_autocommit(c->db) || is_held(q, c) || (q->group && c->no_savepoint))
        return;
    (void)run_id(q, c, q->group ? ST_ROLLBACK_TO : ST_ROLLBACK, &ignored);
}

static rein_err conn_try(struct sq *q, bool free_ok, struct conn **c, rein_error *err);

/* ---- group commit: the writer thread ------------------------------------------------- */

static void job_end(struct job *j, rein_err commit_rc, const rein_error *commit_err)
{
    if (j->rc == REIN_OK && commit_rc != REIN_OK) {
        j->rc = commit_rc;
        if (j->err)
            *j->err = *commit_err;
    }
    sem_post(&j->ended);
}

/* Ends the open batch (the writer holding the connection): commits it, or finds that SQLite
 * already rolled it back; returns the outcome for its jobs (*e: the failure). */
static rein_err batch_commit(struct sq *q, struct conn *c, rein_error *e)
{
    rein_err rc;

    rein_error_clear(e);
    if (sqlite3_get_autocommit(c->db))
        return rein_error_set(e, REIN_ESTORE,
                              "sqlite %s: the transaction was rolled back by an earlier error",
                              q->path);
    rc = run_id(q, c, ST_COMMIT, e);
    if (rc != REIN_OK && !sqlite3_get_autocommit(c->db)) {
        rein_error ignored;
        (void)run_id(q, c, ST_ROLLBACK, &ignored);
    }
    if (rc == REIN_OK)
        REIN__STORE_COUNT(q->tally, commits);
    return rc;
}

/* Tells the jobs of list, up to stop (not included), how their batch ended. A job's submitter
 * returns, and j leaves its stack, once posted: next is read first. */
static void jobs_end(struct job *list, const struct job *stop, rein_err rc, const rein_error *e)
{
    for (struct job *j = list, *next; j != stop; j = next) {
        next = j->next;
        job_end(j, rc, e);
    }
}

/* Fails the jobs of list that never ran (the batch could not start). */
static void jobs_fail(struct job *list, rein_err rc, const rein_error *e)
{
    for (struct job *j = list, *next; j; j = next) {
        next = j->next;
        j->rc = rc;
        if (j->err)
            *j->err = *e;
        sem_post(&j->ended);
    }
}

/* Runs one job inside the open batch: a group's fn on this thread, or a borrow's call on its
 * own thread while this one waits for the connection to come back. */
static void job_run(struct sq *q, struct job *j)
{
    if (j->fn) {
        j->rc = j->fn(j->s, j->userdata, j->err);
        return;
    }
    j->c = held_write.c;
    sem_post(&j->ended); /* the connection is lent */
    while (sem_wait(&q->back) != 0 && errno == EINTR)
        ;
}

/* A batch begins (BEGIN done): its number. */
static uint64_t batch_begun(struct sq *q)
{
    uint64_t b;

    pthread_mutex_lock(&q->mu);
    b = ++q->batch_no;
    pthread_mutex_unlock(&q->mu);
    return b;
}

/* Batch b ended with rc (before its jobs are told, so a job that returns finds it ended). */
static void batch_ended(struct sq *q, uint64_t b, rein_err rc, const rein_error *e)
{
    pthread_mutex_lock(&q->mu);
    if (rc != REIN_OK) {
        q->failed[q->nfailed % FAILED_KEEP] = b;
        q->nfailed++;
        q->failed_err = *e;
    }
    q->ended_no = b;
    pthread_mutex_unlock(&q->mu);
}

/*
 * One batch: the connection, BEGIN, every job in order, one COMMIT for all of them, then each
 * submitter is told. A job that finds the batch rolled back by SQLite (some I/O errors do
 * that) first ends the batch for the jobs before it and starts another. An ahead job is told
 * as soon as its fn ran, and leaves the list (its submitter's stack goes): its ticket is the
 * batch's number, whose outcome batch_ended records.
 */
static void writer_batch(struct sq *q, struct job *list)
{
    struct job *first = list, *prev = NULL, *next;
    struct conn *c = NULL;
    bool ran = false; /* a job ran in the open batch */
    uint64_t b = 0;
    rein_error e;
    rein_err rc;

    rein_error_clear(&e);
    rc = conn_take(q, &c, &e);
    if (rc == REIN_OK) {
        rc = run_id(q, c, ST_BEGIN, &e);
        if (rc != REIN_OK)
            conn_put(q, c);
    }
    if (rc != REIN_OK) {
        jobs_fail(list, rc, &e);
        return;
    }
    b = batch_begun(q);
    held_write.q = q;
    held_write.c = c;
    for (struct job *j = list; j; j = next) {
        if (ran && sqlite3_get_autocommit(c->db)) {
            rc = batch_commit(q, c, &e);
            batch_ended(q, b, rc, &e);
            jobs_end(first, j, rc, &e);
            first = j;
            prev = NULL;
            ran = false;
            if (run_id(q, c, ST_BEGIN, &e) != REIN_OK) {
                jobs_fail(j, REIN_ESTORE, &e);
                first = NULL;
                break;
            }
            b = batch_begun(q);
        }
        job_run(q, j);
        ran = true;
        next = j->next;
        if (!j->ahead) {
            prev = j;
            continue;
        }
        if (prev)
            prev->next = next;
        else
            first = next;
        j->batch = b;
        sem_post(&j->ended);
    }
    held_write.q = NULL;
    held_write.c = NULL;
    if (ran)
        rc = batch_commit(q, c, &e);
    /* Free before anyone is told: a caller that reads at once (rein_store_read_now) finds the
     * connection idle. */
    conn_put(q, c);
    if (ran) {
        batch_ended(q, b, rc, &e);
        jobs_end(first, NULL, rc, &e);
    }
}

/*
 * After a batch, once its submitters are told: the WAL copied into the database when it holds
 * checkpoint_frames frames (PASSIVE: this connection is the file's only one, so it copies
 * every frame, and the next commit writes the WAL over from its start), and every
 * CHECKPOINT_MS copied and cut to nothing (TRUNCATE). Copying waited inside the COMMIT before
 * (SQLite's automatic checkpoint, every 1,000 frames): a page a turn changes again and again
 * is now copied once per 10,000 frames, and nobody who was told waits for it (decision 0078).
 * When a reader holds the connection, the next batch tries again.
 */
static void writer_checkpoint(struct sq *q)
{
    bool timed = rein_now_ms() - q->checkpoint_ms >= CHECKPOINT_MS;
    struct conn *c = NULL;
    rein_error ignored;
    int rc;

    if (!timed && q->wal_frames < atomic_load(&checkpoint_frames))
        return;
    pthread_mutex_lock(&q->mu);
    (void)conn_try(q, true, &c, &ignored);
    pthread_mutex_unlock(&q->mu);
    if (!c)
        return;
    rc = sqlite3_wal_checkpoint_v2(
        c->db, NULL, timed ? SQLITE_CHECKPOINT_TRUNCATE : SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    if (rc == SQLITE_OK) {
        q->wal_frames = 0;
        REIN__STORE_COUNT(q->tally, checkpoints);
    } else {
        rein_log(REIN_LOG_WARN, WHERE, "%s: checkpoint: %s", q->path, sqlite3_errmsg(c->db));
    }
    if (timed)
        q->checkpoint_ms = rein_now_ms();
    conn_release(q, c);
}

/*
 * The writer: takes every job queued (up to BATCH_MAX_CALLS) and runs them as one batch. While
 * one batch waits for the disk, the jobs that arrive queue and share the next commit; no
 * thread hands the connection to another, and a submitter sleeps once, until its batch ends.
 */
static void *writer_main(void *arg)
{
    struct sq *q = arg;

    pthread_mutex_lock(&q->mu);
    for (;;) {
        struct job *list = q->jobs, **tail = &q->jobs;
        unsigned n = 0;

        if (!list) {
            if (q->stopping)
                break;
            q->writer_idle = true;
            pthread_cond_wait(&q->work, &q->mu);
            q->writer_idle = false;
            continue;
        }
        while (*tail && n < BATCH_MAX_CALLS) {
            tail = &(*tail)->next;
            n++;
        }
        q->jobs = *tail;
        if (!q->jobs)
            q->jobs_tail = &q->jobs;
        *tail = NULL;
        pthread_mutex_unlock(&q->mu);
        writer_batch(q, list);
        writer_checkpoint(q);
        pthread_mutex_lock(&q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* Queues j for the writer and waits until its batch has ended (a borrow: until the connection
 * is lent to it). */
static void job_submit(struct sq *q, struct job *j)
{
    if (!j->ahead)
        REIN__STORE_COUNT(q->tally, waits);
    sem_init(&j->ended, 0, 0);
    j->next = NULL;
    pthread_mutex_lock(&q->mu);
    /* j lives on this stack until the writer has posted it for the last time: we wait. */
    /* cppcheck-suppress autoVariables */
    *q->jobs_tail = j;
    q->jobs_tail = &j->next;
    if (q->writer_idle)
        pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
    while (sem_wait(&j->ended) != 0 && errno == EINTR)
        ;
}

static rein_err writer_start(struct sq *q, rein_error *err)
{
    int prc;

    q->jobs_tail = &q->jobs;
    sem_init(&q->back, 0, 0);
    pthread_cond_init(&q->work, NULL);
    prc = pthread_create(&q->writer, NULL, writer_main, q);
    if (prc != 0) {
        sem_destroy(&q->back);
        pthread_cond_destroy(&q->work);
        return rein_error_set(err, REIN_ESTORE, "sqlite %s: cannot start the writer thread: %s",
                              q->path, strerror(prc));
    }
    q->has_writer = true;
    return REIN_OK;
}

/* Lets the writer finish what is queued, then joins it. */
static void writer_stop(struct sq *q)
{
    if (!q->has_writer)
        return;
    pthread_mutex_lock(&q->mu);
    q->stopping = true;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->writer, NULL);
    sem_destroy(&q->back);
    pthread_cond_destroy(&q->work);
    q->has_writer = false;
}

/* The borrow this thread is making (group mode, one call from conn_get to conn_done), and its
 * job: a call runs on one thread, so one slot per thread. */
static _Thread_local struct job borrow_slot;
static _Thread_local struct job *borrowing;

/* Hands the lent connection back to the writer and waits for the end of the batch that holds
 * the call; returns the call's result rc, or the commit's failure. */
static rein_err borrow_end(struct sq *q, rein_err rc, rein_error *err)
{
    struct job *j = borrowing;

    borrowing = NULL;
    held_write.q = NULL;
    held_write.c = NULL;
    j->rc = rc;
    j->err = err;
    sem_post(&q->back);
    while (sem_wait(&j->ended) != 0 && errno == EINTR)
        ;
    sem_destroy(&j->ended);
    return j->rc;
}

/*
 * Takes the connection for one call. Group mode: inside the writer's batch the call gets a
 * savepoint of its own when it asks for one (conn_get, conn_get_one); any other thread
 * borrows the connection from the writer for the call (the call then sits in the batch, and
 * conn_done waits for the batch's commit).
 */
static rein_err conn_get_as(struct sq *q, bool savepoint, struct conn **out, rein_error *err)
{
    rein_err rc;

    *out = NULL;
    REIN__STORE_COUNT(q->tally, calls);
    if (held_read.q == q) {
        *out = held_read.c;
        return REIN_OK;
    }
    if (!q->group)
        return conn_take(q, out, err);
    if (held_write.q != q) {
        struct job *j = &borrow_slot;
        memset(j, 0, sizeof(*j));
        j->err = err;
        job_submit(q, j);
        rc = j->rc;
        if (rc != REIN_OK) { /* the batch could not start; err is filled */
            sem_destroy(&j->ended);
            return rc;
        }
        borrowing = j;
        held_write.q = q;
        held_write.c = j->c;
    }
    /* SQLite rolls the whole transaction back on some I/O errors: the batch is gone, and a
     * savepoint now would start a transaction outside it. */
    rc = REIN_OK;
    if (sqlite3_get_autocommit(held_write.c->db)) {
        rc = rein_error_set(err, REIN_ESTORE,
                            "sqlite %s: the transaction was rolled back by an earlier error",
                            q->path);
    } else if (savepoint) {
        rc = run_id(q, held_write.c, ST_SAVEPOINT, err);
        if (rc == REIN_OK)
            REIN__STORE_COUNT(q->tally, savepoints);
    }
    if (rc == REIN_OK) {
        *out = held_write.c;
        held_write.c->no_savepoint = !savepoint;
    } else if (borrowing)
        (void)borrow_end(q, rc, err);
    return rc;
}

/* A call of several statements: in group mode its own savepoint, so that it fails whole. */
static rein_err conn_get(struct sq *q, struct conn **out, rein_error *err)
{
    return conn_get_as(q, true, out, err);
}

/*
 * A call that only reads, or writes with one statement: no savepoint in group mode. SQLite
 * makes each statement atomic on its own (a statement that fails leaves nothing of itself
 * in the transaction, or, after some I/O errors, rolls the whole transaction back, which the
 * writer finds as before); a savepoint around it only cost two statements more and a copy of
 * each page it changed (issue 25: about a twentieth of a turn's instructions through
 * `rein serve`, decision 0073).
 */
static rein_err conn_get_one(struct sq *q, struct conn **out, rein_error *err)
{
    return conn_get_as(q, false, out, err);
}

/* Ends a call's savepoint: rolled back when the call failed (rc), released into the batch;
 * returns rc, or the release's failure. */
static rein_err savepoint_end(struct sq *q, struct conn *c, rein_err rc, rein_error *err)
{
    if (rc != REIN_OK)
        rollback(q, c);
    if (!sqlite3_get_autocommit(c->db)) {
        rein_error e;
        rein_err rel = run_id(q, c, ST_RELEASE, &e);
        if (rel != REIN_OK && rc == REIN_OK) {
            rc = rel;
            if (err)
                *err = e;
        }
    }
    return rc;
}

/*
 * Hands the connection back after a call that ended with rc; returns the call's result. Group
 * mode: the call's savepoint is released into the batch (rolled back first when the call
 * failed); inside a group the group's submitter waits for the commit, and a borrowed call
 * waits here for the batch that holds it to end (what it read is then committed too) and
 * returns its own failure, or the commit's.
 */
static rein_err conn_done(struct sq *q, struct conn *c, rein_err rc, rein_error *err)
{
    if (is_held(q, c))
        return rc; /* sq_read_now hands it back */
    if (!q->group) {
        conn_put(q, c);
        return rc;
    }
    if (c->no_savepoint)
        c->no_savepoint = false;
    else
        rc = savepoint_end(q, c, rc, err);
    return borrowing ? borrow_end(q, rc, err) : rc;
}

/*
 * rein_store_read_now: a connection that is free at once (group mode: the writer has no batch
 * running and none queued, no thread waits for it), or a new one while the pool may grow; else
 * REIN_EBUSY. fn's calls then share one read transaction on it, and stmt() refuses any
 * statement that would write (it would ride along uncommitted). No checkpoint on the way out:
 * that is the writers' path. (Not PRAGMA query_only: setting a flag pragma expires every
 * prepared statement.)
 */
static rein_err read_on(struct sq *q, struct conn *c, rein_store *s, rein_store_read_fn fn,
                        void *userdata, rein_error *err);

/* With mu held: the free connection when free_ok, else a new one while the pool may grow;
 * *c stays NULL when neither can be had now. */
static rein_err conn_try(struct sq *q, bool free_ok, struct conn **c, rein_error *err)
{
    rein_err rc = REIN_OK;

    if (q->free_list && free_ok) {
        *c = q->free_list;
        q->free_list = (*c)->next_free;
    } else if (!q->free_list && q->count < q->max) {
        rc = conn_open(q, c, err);
        if (rc == REIN_OK)
            q->all[q->count++] = *c;
    }
    return rc;
}

static rein_err sq_read_now(rein_store *s, rein_store_read_fn fn, void *userdata, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c = NULL;
    rein_err rc;

    if (held_read.q == q || held_write.q == q)
        return fn(s, userdata, err);
    pthread_mutex_lock(&q->mu);
    rc = conn_try(q, !q->jobs && q->waiting == 0, &c, err);
    pthread_mutex_unlock(&q->mu);
    if (rc != REIN_OK)
        return rc;
    if (!c)
        return rein_error_set(err, REIN_EBUSY, "sqlite %s: no connection is free at once", q->path);
    return read_on(q, c, s, fn, userdata, err);
}

/*
 * rein_store_read: as sq_read_now, waiting for a connection. Jobs queued for the writer when
 * one comes free go first, once (the reader waits for the next release), so a stream of reads
 * never holds a batch of writes back by more than the reads already waiting, and a stream of
 * writes holds a read back by at most one batch.
 */
static rein_err sq_read(rein_store *s, rein_store_read_fn fn, void *userdata, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c = NULL;
    rein_err rc = REIN_OK;
    bool waited = false;

    if (held_read.q == q || held_write.q == q)
        return fn(s, userdata, err);
    pthread_mutex_lock(&q->mu);
    for (;;) {
        rc = conn_try(q, !q->jobs || waited, &c, err);
        if (c || rc != REIN_OK)
            break;
        q->waiting++;
        pthread_cond_wait(&q->cv, &q->mu);
        q->waiting--;
        waited = true;
    }
    pthread_mutex_unlock(&q->mu);
    if (rc != REIN_OK)
        return rc;
    return read_on(q, c, s, fn, userdata, err);
}

/* fn inside one read transaction on c (taken by this thread), then c handed back. */
static rein_err read_on(struct sq *q, struct conn *c, rein_store *s, rein_store_read_fn fn,
                        void *userdata, rein_error *err)
{
    rein_err rc = run_id(q, c, ST_BEGIN_READ, err);

    if (rc == REIN_OK) {
        held_read.q = q;
        held_read.c = c;
        rc = fn(s, userdata, err);
        held_read.q = NULL;
        held_read.c = NULL;
    }
    if (!sqlite3_get_autocommit(c->db)) {
        rein_error ignored;
        (void)run_id(q, c, ST_ROLLBACK, &ignored); /* nothing was written */
    }
    conn_release(q, c);
    return rc;
}

/*
 * rein_store_group in group mode: fn runs on the writer thread, inside its next batch, while
 * this thread waits once for that batch's commit; fn's calls take the connection there with a
 * savepoint each (conn_get, conn_done). What fn's calls wrote before a failure stays, as it
 * would have after separate calls.
 */
static rein_err sq_group(rein_store *s, rein_store_read_fn fn, void *userdata, rein_error *err)
{
    struct sq *q = impl(s);
    struct job j = {.s = s, .fn = fn, .userdata = userdata, .err = err};

    if (!q->group || held_read.q == q || held_write.q == q)
        return fn(s, userdata, err);
    REIN__STORE_COUNT(q->tally, calls);
    job_submit(q, &j);
    sem_destroy(&j.ended);
    return j.rc;
}

/* rein_store_group_ahead in group mode: as sq_group, but the writer posts the job once fn ran,
 * and the ticket is its batch's number. */
static rein_err sq_group_ahead(rein_store *s, rein_store_read_fn fn, void *userdata,
                               uint64_t *ticket, rein_error *err)
{
    struct sq *q = impl(s);
    struct job j = {.s = s, .fn = fn, .userdata = userdata, .err = err, .ahead = true};

    *ticket = 0;
    if (!q->group || held_read.q == q || held_write.q == q)
        return sq_group(s, fn, userdata, err);
    REIN__STORE_COUNT(q->tally, calls);
    job_submit(q, &j);
    sem_destroy(&j.ended);
    if (j.rc == REIN_OK)
        *ticket = j.batch;
    return j.rc;
}

static rein_err sq_group_kept(rein_store *s, uint64_t ticket, rein_error *err)
{
    struct sq *q = impl(s);
    rein_err rc = REIN_OK;

    pthread_mutex_lock(&q->mu);
    if (ticket > q->ended_no) {
        rc = rein_error_set(err, REIN_ESTATE,
                            "sqlite %s: asked whether batch %llu was kept before it ended", q->path,
                            (unsigned long long)ticket);
    } else if (q->nfailed > 0) {
        uint64_t n = q->nfailed < FAILED_KEEP ? q->nfailed : FAILED_KEEP;
        /* Failures are recorded in order: the oldest one remembered is the next to go. */
        bool lost = q->nfailed > FAILED_KEEP && ticket < q->failed[q->nfailed % FAILED_KEEP];
        for (uint64_t i = 0; i < n && !lost; i++)
            lost = q->failed[i] == ticket;
        if (lost)
            rc = rein_error_set(err, REIN_ESTORE, "an earlier write was not kept: %s",
                                q->failed_err.msg);
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

/* ---- schema ----------------------------------------------------------------------------- */

static rein_err read_version(struct sq *q, struct conn *c, int *version, rein_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(c->db, "SELECT max(version) FROM schema_version", -1, &st, NULL);

    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        *version = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
        rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? REIN_OK : fail(q, c->db, rc, "read schema version", err);
}

static rein_err migrate(struct sq *q, struct conn *c, rein_error *err)
{
    int version = 0;
    rein_err rc = tx(q, c, ST_BEGIN, err);

    if (rc != REIN_OK)
        return rc;
    rc = exec_sql(q, c, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
                  "create schema_version", err);
    if (rc == REIN_OK)
        rc = read_version(q, c, &version, err);
    if (rc != REIN_OK)
        goto out_rollback;
    if (version > SCHEMA_VERSION) {
        rc = rein_error_set(err, REIN_ESTORE,
                            "sqlite %s: the database has schema version %d, newer than this "
                            "rein knows (%d): use a newer rein or another file",
                            q->path, version, SCHEMA_VERSION);
        rein_error_where(err, WHERE);
        goto out_rollback;
    }
    for (int v = version; v < SCHEMA_VERSION; v++) {
        char *bump;
        rc = exec_sql(q, c, migrations[v], "migrate schema", err);
        if (rc != REIN_OK)
            goto out_rollback;
        bump = rein_asprintf("DELETE FROM schema_version; INSERT INTO schema_version VALUES (%d)",
                             v + 1);
        if (!bump) {
            rc = rein_error_set(err, REIN_ENOMEM, "sqlite: out of memory");
            goto out_rollback;
        }
        rc = exec_sql(q, c, bump, "record schema version", err);
        rein_free(bump);
        if (rc != REIN_OK)
            goto out_rollback;
        if (v > 0 || version > 0)
            rein_log(REIN_LOG_INFO, WHERE, "%s: migrated schema to version %d", q->path, v + 1);
    }
    return tx(q, c, ST_COMMIT, err);
out_rollback:
    rollback(q, c);
    return rc;
}

/* ---- open / close ----------------------------------------------------------------------- */

static void sq_close(rein_store *s)
{
    struct sq *q = impl(s);

    if (!q)
        return;
    writer_stop(q);
    for (unsigned i = 0; i < q->count; i++)
        conn_close(q->all[i]);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    rein_free(q->all);
    rein_free(q->path);
    rein_free(q);
    s->impl = NULL;
}

static rein_err sq_ping(rein_store *s, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    rein_err rc = conn_get(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, ST_PING, err);
    rc = st ? run(q, c, st, "ping", NULL, err) : REIN_ESTORE;
    return conn_done(q, c, rc, err);
}

/* ---- conversations ---------------------------------------------------------------------- */

/* The conversation row at st (CONV_COLS) to fn. */
static int row_conv(sqlite3_stmt *st, rein__conv_row_fn fn, void *userdata)
{
    struct rein__conv_row row = {
        .id = col_text(st, 0),
        .title = col_text(st, 1),
        .state = col_text(st, 2),
        .metadata = col_text(st, 3),
        .created_ms = sqlite3_column_int64(st, 4),
        .updated_ms = sqlite3_column_int64(st, 5),
        .message_count = sqlite3_column_int64(st, 6),
    };

    return row.id ? fn(&row, userdata) : REIN_ENOMEM;
}

static rein_err sq_conv_create(rein_store *s, const char *id, const char *title,
                               const char *metadata, int64_t now_ms, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int rc2;
    rein_err rc = conn_get_one(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, ST_CONV_INSERT, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, id);
    bind_text(st, 2, title);
    bind_text(st, 3, metadata);
    sqlite3_bind_int64(st, 4, now_ms);
    rc2 = sqlite3_step(st);
    if (rc2 == SQLITE_CONSTRAINT_PRIMARYKEY)
        rc = rein_error_set(err, REIN_EEXIST, "conversation %s already exists", id);
    else if (rc2 != SQLITE_DONE)
        rc = fail(q, c->db, rc2, "create conversation", err);
    done(st);
out:
    return conn_done(q, c, rc, err);
}

static rein_err sq_conv_update(rein_store *s, const char *id, const char *title, const char *state,
                               const char *metadata, int64_t now_ms, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int changes = 0;
    rein_err rc = conn_get_one(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, ST_CONV_UPDATE, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, id);
    bind_text(st, 2, title);
    bind_text(st, 3, state);
    bind_text(st, 4, metadata);
    sqlite3_bind_int64(st, 5, now_ms);
    rc = run(q, c, st, "update conversation", &changes, err);
    if (rc == REIN_OK && changes == 0)
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", id);
out:
    return conn_done(q, c, rc, err);
}

static rein_err sq_conv_get(rein_store *s, const char *id, rein__conv_row_fn fn, void *userdata,
                            rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int rc2;
    rein_err rc = conn_get_one(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, ST_CONV_GET, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, id);
    rc2 = sqlite3_step(st);
    if (rc2 == SQLITE_ROW) {
        rc = row_conv(st, fn, userdata);
        if (rc == REIN_ENOMEM)
            rein_error_set(err, REIN_ENOMEM, "sqlite: out of memory");
    } else if (rc2 == SQLITE_DONE) {
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", id);
    } else {
        rc = fail(q, c->db, rc2, "read conversation", err);
    }
    done(st);
out:
    return conn_done(q, c, rc, err);
}

static rein_err sq_conv_list(rein_store *s, int64_t cur_ms, const char *cur_id, const char *query,
                             unsigned limit, rein__conv_row_fn fn, void *userdata, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int rc2;
    rein_err rc = conn_get(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, cur_id ? ST_CONV_LIST_AFTER : ST_CONV_LIST_FIRST, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    if (cur_id) {
        sqlite3_bind_int64(st, 1, cur_ms);
        bind_text(st, 2, cur_id);
    }
    sqlite3_bind_int(st, 3, (int)limit);
    if (query)
        bind_text(st, 4, query);
    else
        sqlite3_bind_null(st, 4);
    while ((rc2 = sqlite3_step(st)) == SQLITE_ROW) {
        rc = row_conv(st, fn, userdata);
        if (rc != REIN_OK) {
            if (rc == REIN_ENOMEM)
                rein_error_set(err, REIN_ENOMEM, "sqlite: out of memory");
            break;
        }
    }
    if (rc == REIN_OK && rc2 != SQLITE_DONE)
        rc = fail(q, c->db, rc2, "list conversations", err);
    done(st);
out:
    return conn_done(q, c, rc, err);
}

/* Fills *info from a live lock row, if there is one. */
static rein_err lock_live(struct sq *q, struct conn *c, const char *conv_id, int64_t now_ms,
                          bool *found, struct rein_store_lock_info *info, rein_error *err)
{
    sqlite3_stmt *st = stmt(q, c, ST_LOCK_GET_LIVE, err);
    int rc2;

    *found = false;
    if (!st)
        return REIN_ESTORE;
    bind_text(st, 1, conv_id);
    sqlite3_bind_int64(st, 2, now_ms);
    rc2 = sqlite3_step(st);
    if (rc2 == SQLITE_ROW) {
        *found = true;
        if (info) {
            memset(info, 0, sizeof(*info));
            snprintf(info->token, sizeof(info->token), "%s", col_text(st, 0));
            snprintf(info->state, sizeof(info->state), "%s", col_text(st, 1));
            snprintf(info->tool, sizeof(info->tool), "%s", col_text(st, 2));
            info->started_ms = sqlite3_column_int64(st, 3);
            info->expires_ms = sqlite3_column_int64(st, 4);
        }
    }
    done(st);
    if (rc2 != SQLITE_ROW && rc2 != SQLITE_DONE)
        return fail(q, c->db, rc2, "read lock", err);
    return REIN_OK;
}

static rein_err delete_by_conv(struct sq *q, struct conn *c, enum stmt_id id, const char *conv_id,
                               int *changes, rein_error *err)
{
    sqlite3_stmt *st = stmt(q, c, id, err);

    if (!st)
        return REIN_ESTORE;
    bind_text(st, 1, conv_id);
    return run(q, c, st, "delete", changes, err);
}

static rein_err sq_conv_delete(rein_store *s, const char *id, int64_t now_ms, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    bool locked = false;
    int changes = 0;
    rein_err rc = conn_get(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    rc = tx(q, c, ST_BEGIN, err);
    if (rc != REIN_OK)
        goto out;
    rc = lock_live(q, c, id, now_ms, &locked, NULL, err);
    if (rc == REIN_OK && locked)
        rc = rein_error_set(err, REIN_EBUSY, "conversation %s has a turn running", id);
    if (rc == REIN_OK)
        rc = delete_by_conv(q, c, ST_CONV_DELETE, id, &changes, err);
    if (rc == REIN_OK && changes == 0)
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", id);
    if (rc == REIN_OK)
        rc = delete_by_conv(q, c, ST_EVENTS_DELETE, id, NULL, err);
    if (rc == REIN_OK)
        rc = delete_by_conv(q, c, ST_APPROVALS_DELETE, id, NULL, err);
    if (rc == REIN_OK)
        rc = delete_by_conv(q, c, ST_LOCK_DELETE_ANY, id, NULL, err);
    if (rc == REIN_OK)
        rc = tx(q, c, ST_COMMIT, err);
    if (rc != REIN_OK)
        rollback(q, c);
out:
    return conn_done(q, c, rc, err);
}

/* ---- messages --------------------------------------------------------------------------- */

static rein_err sq_messages_append(rein_store *s, const char *conv_id,
                                   const struct rein_store_text *msgs, size_t n,
                                   const char *trace_id, int64_t now_ms, int64_t *first,
                                   rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int rc2;
    rein_err rc = conn_get(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    rc = tx(q, c, ST_BEGIN, err);
    if (rc != REIN_OK)
        goto out;
    st = stmt(q, c, ST_CONV_COUNT, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out_rollback;
    }
    bind_text(st, 1, conv_id);
    rc2 = sqlite3_step(st);
    if (rc2 == SQLITE_ROW)
        *first = sqlite3_column_int64(st, 0);
    done(st);
    if (rc2 == SQLITE_DONE) {
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", conv_id);
        goto out_rollback;
    }
    if (rc2 != SQLITE_ROW) {
        rc = fail(q, c->db, rc2, "append message", err);
        goto out_rollback;
    }
    /* The count and the time once for all of them: one conversation row change. */
    st = stmt(q, c, ST_CONV_BUMP, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out_rollback;
    }
    bind_text(st, 1, conv_id);
    sqlite3_bind_int64(st, 2, now_ms);
    sqlite3_bind_int64(st, 3, (int64_t)n);
    rc = run(q, c, st, "append message", NULL, err);
    for (size_t i = 0; rc == REIN_OK && i < n; i++) {
        st = stmt(q, c, ST_MSG_INSERT, err);
        if (!st) {
            rc = REIN_ESTORE;
            break;
        }
        bind_text(st, 1, conv_id);
        sqlite3_bind_int64(st, 2, *first + (int64_t)i);
        sqlite3_bind_int64(st, 3, now_ms);
        bind_text(st, 4, trace_id);
        sqlite3_bind_text(st, 5, msgs[i].json, (int)msgs[i].len, SQLITE_STATIC);
        rc = run(q, c, st, "append message", NULL, err);
    }
    if (rc == REIN_OK)
        rc = tx(q, c, ST_COMMIT, err);
    if (rc == REIN_OK)
        goto out;
out_rollback:
    rollback(q, c);
out:
    return conn_done(q, c, rc, err);
}

/* Drops the messages at position >= from, and counts the conversation's messages again. */
static rein_err sq_messages_truncate(rein_store *s, const char *conv_id, int64_t from,
                                     int64_t now_ms, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int changes = 0;
    rein_err rc = conn_get(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    rc = tx(q, c, ST_BEGIN, err);
    if (rc != REIN_OK)
        goto out;
    st = stmt(q, c, ST_MSG_TRUNCATE, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out_rollback;
    }
    bind_text(st, 1, conv_id);
    sqlite3_bind_int64(st, 2, from);
    rc = run(q, c, st, "drop messages", NULL, err);
    if (rc != REIN_OK)
        goto out_rollback;
    st = stmt(q, c, ST_CONV_COUNT_AT, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out_rollback;
    }
    bind_text(st, 1, conv_id);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, now_ms);
    rc = run(q, c, st, "drop messages", &changes, err);
    if (rc == REIN_OK && changes == 0)
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", conv_id);
    if (rc == REIN_OK)
        rc = tx(q, c, ST_COMMIT, err);
    if (rc == REIN_OK)
        goto out;
out_rollback:
    rollback(q, c);
out:
    return conn_done(q, c, rc, err);
}

static rein_err conv_must_exist(struct sq *q, struct conn *c, const char *conv_id, rein_error *err)
{
    sqlite3_stmt *st = stmt(q, c, ST_CONV_GET, err);
    int rc2;

    if (!st)
        return REIN_ESTORE;
    bind_text(st, 1, conv_id);
    rc2 = sqlite3_step(st);
    done(st);
    if (rc2 == SQLITE_ROW)
        return REIN_OK;
    if (rc2 == SQLITE_DONE)
        return rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", conv_id);
    return fail(q, c->db, rc2, "read conversation", err);
}

static rein_err sq_messages_each(rein_store *s, const char *conv_id, int64_t from,
                                 rein_store_message_fn fn, void *userdata, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int rc2;
    rein_err rc = conn_get_one(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    /* A read transaction gives the walk one consistent snapshot. */
    rc = tx(q, c, ST_BEGIN_READ, err);
    if (rc != REIN_OK)
        goto out;
    rc = conv_must_exist(q, c, conv_id, err);
    st = rc == REIN_OK ? stmt(q, c, ST_MSG_EACH, err) : NULL;
    if (!st) {
        rc = rc == REIN_OK ? REIN_ESTORE : rc;
        goto out_end;
    }
    bind_text(st, 1, conv_id);
    sqlite3_bind_int64(st, 2, from);
    while ((rc2 = sqlite3_step(st)) == SQLITE_ROW) {
        struct rein_store_message m = {
            .position = sqlite3_column_int64(st, 0),
            .created_ms = sqlite3_column_int64(st, 1),
            .trace_id = col_text(st, 2),
            .json = col_text(st, 3),
            .len = (size_t)sqlite3_column_bytes(st, 3),
        };
        int stop = fn(&m, userdata);
        if (stop) {
            rc = stop;
            break;
        }
    }
    if (rc == REIN_OK && rc2 != SQLITE_DONE)
        rc = fail(q, c->db, rc2, "read messages", err);
    done(st);
out_end:
    rollback(q, c);
out:
    return conn_done(q, c, rc, err);
}

/* ---- ledger ----------------------------------------------------------------------------- */

static rein_err sq_ledger_put(rein_store *s, const char *conv_id, const struct rein_ledger_entry *e,
                              rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int rc2;
    rein_err rc = conn_get_one(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, ST_LEDGER_PUT, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, conv_id);
    bind_text(st, 2, e->call_id);
    bind_text(st, 3, e->tool);
    bind_text(st, 4, e->sent_name);
    bind_text(st, 5, e->args);
    bind_text(st, 6, rein_call_status_name(e->status));
    bind_text(st, 7, e->result);
    sqlite3_bind_int64(st, 8, e->call_ms);
    if (e->response_ms)
        sqlite3_bind_int64(st, 9, e->response_ms);
    if (e->has_step)
        sqlite3_bind_int(st, 10, e->step);
    bind_text(st, 11, e->trace_id);
    sqlite3_bind_int(st, 12, e->interrupted ? 1 : 0);
    if (e->latency_ms >= 0)
        sqlite3_bind_int64(st, 13, e->latency_ms);
    rc2 = sqlite3_step(st);
    if (rc2 == SQLITE_CONSTRAINT_FOREIGNKEY)
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", conv_id);
    else if (rc2 != SQLITE_DONE)
        rc = fail(q, c->db, rc2, "write ledger entry", err);
    done(st);
out:
    return conn_done(q, c, rc, err);
}

static rein_err sq_ledger_update(rein_store *s, const char *conv_id,
                                 const struct rein_ledger_entry *e, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int changes = 0;
    rein_err rc = conn_get_one(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, ST_LEDGER_UPDATE, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, conv_id);
    bind_text(st, 2, e->call_id);
    bind_text(st, 3, rein_call_status_name(e->status));
    bind_text(st, 4, e->result);
    if (e->response_ms)
        sqlite3_bind_int64(st, 5, e->response_ms);
    if (e->latency_ms >= 0)
        sqlite3_bind_int64(st, 6, e->latency_ms);
    rc = run(q, c, st, "update ledger entry", &changes, err);
    if (rc == REIN_OK && changes == 0)
        rc = rein_error_set(err, REIN_ENOTFOUND, "no ledger entry %s in conversation %s",
                            e->call_id, conv_id);
out:
    return conn_done(q, c, rc, err);
}

static rein_err sq_ledger_each(rein_store *s, const char *conv_id, rein_store_ledger_fn fn,
                               void *userdata, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int rc2;
    rein_err rc = conn_get_one(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, ST_LEDGER_EACH, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, conv_id);
    while ((rc2 = sqlite3_step(st)) == SQLITE_ROW) {
        struct rein_ledger_entry e = {
            .call_id = col_text(st, 0),
            .tool = col_text(st, 1),
            .sent_name = col_text(st, 2),
            .args = col_text(st, 3),
            .result = col_text(st, 5),
            .call_ms = sqlite3_column_int64(st, 6),
            .response_ms = sqlite3_column_int64(st, 7),
            .has_step = sqlite3_column_type(st, 8) != SQLITE_NULL,
            .step = sqlite3_column_int(st, 8),
            .trace_id = col_text(st, 9),
            .interrupted = sqlite3_column_int(st, 10) != 0,
            .latency_ms =
                sqlite3_column_type(st, 11) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 11),
        };
        int stop;
        /* A status this rein does not know reads as an error, so the call is not taken as
         * done or pending by mistake. */
        if (!rein_call_status_parse(col_text(st, 4), &e.status))
            e.status = REIN_CALL_ERROR;
        stop = fn(conv_id, &e, userdata);
        if (stop) {
            rc = stop;
            break;
        }
    }
    if (rc == REIN_OK && rc2 != SQLITE_DONE)
        rc = fail(q, c->db, rc2, "read ledger", err);
    done(st);
out:
    return conn_done(q, c, rc, err);
}

/* ---- events ----------------------------------------------------------------------------- */

/* Drops the events of conv_id older than the newest events_max, in batches: when seq is a
 * multiple of TRIM_EVERY. */
static rein_err trim_events(rein_store *s, struct conn *c, const char *conv_id, int64_t seq,
                            rein_error *err)
{
    struct sq *q = impl(s);
    sqlite3_stmt *st;

    if (seq % TRIM_EVERY != 0 || seq <= (int64_t)s->opts.events_max)
        return REIN_OK;
    st = stmt(q, c, ST_EVENTS_TRIM, err);
    if (!st)
        return REIN_ESTORE;
    bind_text(st, 1, conv_id);
    sqlite3_bind_int64(st, 2, seq - (int64_t)s->opts.events_max);
    return run(q, c, st, "drop old events", NULL, err);
}

/* Inserts ev with the sequence id seq (0 for an event without a conversation); tail: the
 * last of its batch, or without a conversation (ST_EVENTS_TRACE finds the trace by those). */
static rein_err insert_event(rein_store *s, struct conn *c, const struct rein_store_event *ev,
                             int64_t seq, bool tail, rein_error *err)
{
    struct sq *q = impl(s);
    sqlite3_stmt *st = stmt(q, c, ST_EVENT_INSERT, err);
    rein_err rc;

    if (!st)
        return REIN_ESTORE;
    bind_text(st, 1, ev->conv_id);
    bind_text(st, 2, ev->trace_id);
    bind_text(st, 3, ev->type);
    bind_text(st, 4, ev->payload);
    sqlite3_bind_int64(st, 5, ev->time_ms);
    sqlite3_bind_int64(st, 6, seq);
    if (tail)
        sqlite3_bind_int(st, 7, 1);
    rc = run(q, c, st, "record event", NULL, err);
    if (rc == REIN_OK && ev->conv_id)
        rc = trim_events(s, c, ev->conv_id, seq, err);
    return rc;
}

/* The conversation's last sequence id (0: none) on c. */
static rein_err last_seq(struct sq *q, struct conn *c, const char *conv_id, int64_t *last,
                         rein_error *err)
{
    sqlite3_stmt *st = stmt(q, c, ST_EVENTS_LAST, err);
    int rc2;

    *last = 0;
    if (!st)
        return REIN_ESTORE;
    bind_text(st, 1, conv_id);
    rc2 = sqlite3_step(st);
    if (rc2 == SQLITE_ROW)
        *last = sqlite3_column_int64(st, 0);
    done(st);
    return rc2 == SQLITE_ROW || rc2 == SQLITE_DONE ? REIN_OK
                                                   : fail(q, c->db, rc2, "read events", err);
}

static rein_err sq_events_add(rein_store *s, const struct rein_store_event *evs, size_t n,
                              int64_t *seqs, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    int64_t last = 0;
    rein_err rc = conn_get(q, &c, err);

    if (rc != REIN_OK)
        return rc;

    /* One transaction: the batch costs one commit, and its ids are consecutive (the events of
     * a batch share their conversation). */
    rc = tx(q, c, ST_BEGIN, err);
    if (rc == REIN_OK && evs[0].conv_id)
        rc = last_seq(q, c, evs[0].conv_id, &last, err);
    for (size_t i = 0; rc == REIN_OK && i < n; i++) {
        seqs[i] = evs[i].conv_id ? ++last : 0;
        rc = insert_event(s, c, &evs[i], seqs[i], i == n - 1 || !evs[i].conv_id, err);
    }
    if (rc == REIN_OK)
        rc = tx(q, c, ST_COMMIT, err);
    if (rc != REIN_OK)
        rollback(q, c);
    return conn_done(q, c, rc, err);
}

/* Hands each row of st (EVENT_COLS) to fn; a non-zero value from fn stops and is returned. */
static rein_err each_event_row(struct sq *q, struct conn *c, sqlite3_stmt *st,
                               rein_store_event_fn fn, void *userdata, rein_error *err)
{
    rein_err rc = REIN_OK;
    int rc2;

    while ((rc2 = sqlite3_step(st)) == SQLITE_ROW) {
        struct rein_store_event ev = {
            .conv_id = col_text(st, 0),
            .trace_id = col_text(st, 1),
            .type = col_text(st, 2),
            .payload = col_text(st, 3),
            .time_ms = sqlite3_column_int64(st, 4),
            .seq = sqlite3_column_int64(st, 5),
        };
        int stop = fn(&ev, userdata);
        if (stop) {
            rc = stop;
            break;
        }
    }
    if (rc == REIN_OK && rc2 != SQLITE_DONE)
        rc = fail(q, c->db, rc2, "read events", err);
    done(st);
    return rc;
}

static rein_err sq_events_each(rein_store *s, const char *conv_id, const char *trace_id,
                               rein_store_event_fn fn, void *userdata, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    enum stmt_id id =
        conv_id ? (trace_id ? ST_EVENTS_CONV_TRACE : ST_EVENTS_CONV) : ST_EVENTS_TRACE;
    rein_err rc = conn_get_one(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, id, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    if (conv_id) {
        bind_text(st, 1, conv_id);
        if (trace_id)
            bind_text(st, 2, trace_id);
    } else {
        bind_text(st, 1, trace_id);
    }
    rc = each_event_row(q, c, st, fn, userdata, err);
out:
    return conn_done(q, c, rc, err);
}

static rein_err sq_events_after(rein_store *s, const char *conv_id, int64_t after, unsigned max,
                                rein_store_event_fn fn, void *userdata, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    rein_err rc = conn_get_one(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, ST_EVENTS_AFTER, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, conv_id);
    sqlite3_bind_int64(st, 2, after);
    sqlite3_bind_int64(st, 3, max ? (int64_t)max : -1);
    rc = each_event_row(q, c, st, fn, userdata, err);
out:
    return conn_done(q, c, rc, err);
}

static rein_err sq_events_last(rein_store *s, const char *conv_id, int64_t *last, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int rc2;
    rein_err rc = conn_get_one(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, ST_EVENTS_LAST, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, conv_id);
    rc2 = sqlite3_step(st);
    *last = rc2 == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    while (rc2 == SQLITE_ROW)
        rc2 = sqlite3_step(st);
    done(st);
    if (rc2 != SQLITE_DONE)
        rc = fail(q, c->db, rc2, "read events", err);
out:
    return conn_done(q, c, rc, err);
}

/* ---- locks ------------------------------------------------------------------------------ */

static rein_err sq_lock_acquire(rein_store *s, const char *conv_id, const char *token,
                                const char *state, int64_t lease_ms,
                                struct rein_store_lock_info *held, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    bool locked = false;
    int64_t now;
    rein_err rc = conn_get(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    rc = tx(q, c, ST_BEGIN, err);
    if (rc != REIN_OK)
        goto out;
    /* The clock is read under the write lock, so leases compare in commit order. */
    now = rein_wall_ms();
    rc = lock_live(q, c, conv_id, now, &locked, held, err);
    if (rc == REIN_OK && locked) {
        rc = rein_error_set(err, REIN_EBUSY, "conversation %s is locked by a running turn (%s)",
                            conv_id, held ? held->state : "busy");
        goto out_rollback;
    }
    if (rc != REIN_OK)
        goto out_rollback;
    st = stmt(q, c, ST_LOCK_PUT, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out_rollback;
    }
    bind_text(st, 1, conv_id);
    bind_text(st, 2, token);
    bind_text(st, 3, state);
    sqlite3_bind_int64(st, 4, now);
    sqlite3_bind_int64(st, 5, now + lease_ms);
    rc = run(q, c, st, "take lock", NULL, err);
    /* Approvals left by a dead owner must not be answered into the new turn. */
    if (rc == REIN_OK)
        rc = delete_by_conv(q, c, ST_APPROVALS_DELETE, conv_id, NULL, err);
    if (rc == REIN_OK)
        rc = tx(q, c, ST_COMMIT, err);
    if (rc == REIN_OK)
        goto out;
out_rollback:
    rollback(q, c);
out:
    return conn_done(q, c, rc, err);
}

/* Runs a lock statement bound as (conv_id, token, now, extra...) and expects one change. */
static rein_err lock_change(rein_store *s, enum stmt_id id, const char *conv_id, const char *token,
                            int64_t a4, const char *t4, const char *t5, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int changes = 0;
    rein_err rc = conn_get_one(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, id, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, conv_id);
    bind_text(st, 2, token);
    if (id != ST_LOCK_RELEASE)
        sqlite3_bind_int64(st, 3, rein_wall_ms());
    if (t4) {
        bind_text(st, 4, t4);
        bind_text(st, 5, t5);
    } else if (id == ST_LOCK_RENEW) {
        sqlite3_bind_int64(st, 4, a4);
    }
    rc = run(q, c, st, "update lock", &changes, err);
    if (rc == REIN_OK && changes == 0)
        rc = rein_error_set(err, REIN_ESTATE, "the lock of %s is not held by this owner", conv_id);
out:
    return conn_done(q, c, rc, err);
}

static rein_err sq_lock_renew(rein_store *s, const char *conv_id, const char *token,
                              int64_t lease_ms, rein_error *err)
{
    return lock_change(s, ST_LOCK_RENEW, conv_id, token, rein_wall_ms() + lease_ms, NULL, NULL,
                       err);
}

static rein_err sq_lock_release(rein_store *s, const char *conv_id, const char *token,
                                rein_error *err)
{
    return lock_change(s, ST_LOCK_RELEASE, conv_id, token, 0, NULL, NULL, err);
}

static rein_err sq_lock_set_state(rein_store *s, const char *conv_id, const char *token,
                                  const char *state, const char *tool, rein_error *err)
{
    return lock_change(s, ST_LOCK_STATE, conv_id, token, 0, state, tool, err);
}

static rein_err sq_lock_get(rein_store *s, const char *conv_id, struct rein_store_lock_info *out,
                            rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    bool found = false;
    rein_err rc = conn_get_one(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    rc = lock_live(q, c, conv_id, rein_wall_ms(), &found, out, err);
    if (rc == REIN_OK && !found)
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s is not locked", conv_id);
    return conn_done(q, c, rc, err);
}

/* ---- control messages ------------------------------------------------------------------- */

static rein_err sq_cancel_request(rein_store *s, const char *conv_id, const char *reason,
                                  rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int changes = 0;
    rein_err rc = conn_get(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, ST_CANCEL_SET, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, conv_id);
    sqlite3_bind_int64(st, 2, rein_wall_ms());
    bind_text(st, 3, reason);
    rc = run(q, c, st, "request cancel", &changes, err);
    if (rc == REIN_OK && changes == 0)
        rc = rein_error_set(err, REIN_ESTATE, "conversation %s has no running turn", conv_id);
out:
    return conn_done(q, c, rc, err);
}

static rein_err sq_cancel_check(rein_store *s, const char *conv_id, const char *token,
                                bool *requested, char reason[160], rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int rc2;
    rein_err rc = conn_get(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, ST_CANCEL_GET, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, conv_id);
    bind_text(st, 2, token);
    rc2 = sqlite3_step(st);
    if (rc2 == SQLITE_ROW && col_text(st, 0)) {
        *requested = true;
        snprintf(reason, 160, "%s", col_text(st, 0));
    } else if (rc2 != SQLITE_ROW && rc2 != SQLITE_DONE) {
        rc = fail(q, c->db, rc2, "read cancel request", err);
    }
    done(st);
out:
    return conn_done(q, c, rc, err);
}

static rein_err approval_stmt(rein_store *s, enum stmt_id id, const char *conv_id,
                              const char *call_id, int64_t a3, int64_t a4, int *changes,
                              rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    rein_err rc = conn_get(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, id, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, conv_id);
    bind_text(st, 2, call_id);
    if (id == ST_APPROVAL_PUT)
        sqlite3_bind_int64(st, 3, a3);
    if (id == ST_APPROVAL_ANSWER) {
        sqlite3_bind_int64(st, 3, a3);
        sqlite3_bind_int64(st, 4, a4);
    }
    rc = run(q, c, st, "approval", changes, err);
out:
    return conn_done(q, c, rc, err);
}

static rein_err sq_approval_request(rein_store *s, const char *conv_id, const char *call_id,
                                    int64_t now_ms, rein_error *err)
{
    return approval_stmt(s, ST_APPROVAL_PUT, conv_id, call_id, now_ms, 0, NULL, err);
}

static rein_err sq_approval_take(rein_store *s, const char *conv_id, const char *call_id,
                                 bool *answered, bool *approve, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int rc2;
    rein_err rc = conn_get(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    *answered = false;
    st = stmt(q, c, ST_APPROVAL_GET, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    bind_text(st, 1, conv_id);
    bind_text(st, 2, call_id);
    rc2 = sqlite3_step(st);
    if (rc2 == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *answered = true;
        *approve = sqlite3_column_int(st, 0) != 0;
    } else if (rc2 != SQLITE_ROW && rc2 != SQLITE_DONE) {
        rc = fail(q, c->db, rc2, "read approval", err);
    }
    done(st);
out:
    return conn_done(q, c, rc, err);
}

static rein_err sq_approval_post(rein_store *s, const char *conv_id, const char *call_id,
                                 bool approve, int64_t now_ms, rein_error *err)
{
    int changes = 0;
    bool answered = false, ignored;
    rein_err rc = approval_stmt(s, ST_APPROVAL_ANSWER, conv_id, call_id, approve ? 1 : 0, now_ms,
                                &changes, err);

    if (rc != REIN_OK || changes == 1)
        return rc;
    rc = sq_approval_take(s, conv_id, call_id, &answered, &ignored, err);
    if (rc != REIN_OK)
        return rc;
    if (answered)
        return rein_error_set(err, REIN_EEXIST, "call %s was already answered", call_id);
    return rein_error_set(err, REIN_ENOTFOUND, "no approval is waiting for call %s in %s", call_id,
                          conv_id);
}

static rein_err sq_approval_drop(rein_store *s, const char *conv_id, const char *call_id,
                                 rein_error *err)
{
    return approval_stmt(s, ST_APPROVAL_DROP, conv_id, call_id, 0, 0, NULL, err);
}

static rein_err sq_recover(rein_store *s, int *flagged, rein_error *err)
{
    struct sq *q = impl(s);
    struct conn *c;
    sqlite3_stmt *st;
    int64_t now;
    rein_err rc = conn_get(q, &c, err);

    if (rc != REIN_OK)
        return rc;
    st = stmt(q, c, ST_RECOVER, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    now = rein_wall_ms();
    sqlite3_bind_int64(st, 1, now);
    rc = run(q, c, st, "recover interrupted calls", flagged, err);
    if (rc != REIN_OK)
        goto out;
    st = stmt(q, c, ST_RECOVER_CONVS, err);
    if (!st) {
        rc = REIN_ESTORE;
        goto out;
    }
    sqlite3_bind_int64(st, 1, now);
    rc = run(q, c, st, "recover interrupted conversations", NULL, err);
out:
    return conn_done(q, c, rc, err);
}

static const struct rein__store_ops sqlite_ops = {
    .kind = "sqlite",
    .close = sq_close,
    .ping = sq_ping,
    .conv_create = sq_conv_create,
    .conv_update = sq_conv_update,
    .read_now = sq_read_now,
    .read = sq_read,
    .group = sq_group,
    .group_ahead = sq_group_ahead,
    .group_kept = sq_group_kept,
    .conv_get = sq_conv_get,
    .conv_list = sq_conv_list,
    .conv_delete = sq_conv_delete,
    .messages_append = sq_messages_append,
    .messages_each = sq_messages_each,
    .messages_truncate = sq_messages_truncate,
    .ledger_put = sq_ledger_put,
    .ledger_update = sq_ledger_update,
    .ledger_each = sq_ledger_each,
    .events_add = sq_events_add,
    .events_each = sq_events_each,
    .events_after = sq_events_after,
    .events_last = sq_events_last,
    .lock_acquire = sq_lock_acquire,
    .lock_renew = sq_lock_renew,
    .lock_release = sq_lock_release,
    .lock_set_state = sq_lock_set_state,
    .lock_get = sq_lock_get,
    .cancel_request = sq_cancel_request,
    .cancel_check = sq_cancel_check,
    .approval_request = sq_approval_request,
    .approval_post = sq_approval_post,
    .approval_take = sq_approval_take,
    .approval_drop = sq_approval_drop,
    .recover = sq_recover,
};

/*
 * Process-wide settings, only possible before SQLite is first initialised (later they are
 * refused, harmlessly, and SQLite's defaults stay):
 * - memory statistics cost a global mutex and counters on every allocation SQLite makes (a
 *   turn makes thousands); nothing in rein reads them;
 * - a savepoint's journal (each call's, see conn_open) is kept in memory up to SUBJ_SPILL
 *   bytes, in one allocation: with temp_store=MEMORY it grew in 1 KB pieces, four or five
 *   allocations per page journaled (issue 25).
 * And the VFS that writes a commit's WAL frames in one piece (sqlite_wal.c, decision 0072),
 * registered under its own name for exclusive-mode connections only; without it they use the
 * default VFS, as every other connection does.
 */
static void sqlite_setup(void)
{
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    (void)sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, SUBJ_SPILL);
    exclusive_vfs = rein__store_sqlite_wal_vfs();
}

rein_err rein__store_sqlite_open(rein_store *s, const char *path, rein_error *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    struct sq *q;
    struct conn *c = NULL;
    rein_err rc;

    if (!*path)
        return rein_error_set(err, REIN_EINVAL, "sqlite store needs a path (sqlite:PATH)");
    (void)pthread_once(&once, sqlite_setup);
    q = rein_calloc(1, sizeof(*q));
    if (!q)
        return rein_error_set(err, REIN_ENOMEM, "sqlite: out of memory");
    q->path = rein_strdup(path);
    s->url = rein_asprintf("sqlite:%s", path);
    /* Each connection to ":memory:" would be a separate database: keep exactly one. */
    q->exclusive = s->opts.exclusive;
    q->checkpoint_ms = rein_now_ms();
    q->max = strcmp(path, ":memory:") == 0 || q->exclusive ? 1 : s->opts.pool_size;
    q->all = rein_calloc(q->max, sizeof(struct conn *));
    q->busy_timeout_ms = s->opts.busy_timeout_ms;
    if (!q->path || !s->url || !q->all) {
        rein_free(q->path);
        rein_free(q->all);
        rein_free(q);
        return rein_error_set(err, REIN_ENOMEM, "sqlite: out of memory");
    }
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->tally = &s->tally;
    s->impl = q;
    s->ops = &sqlite_ops;
    rc = conn_open(q, &c, err);
    if (rc == REIN_OK && !c)
        rc = REIN_ESTORE; /* as in conn_take: conn_open sets c whenever it succeeds */
    if (rc == REIN_OK) {
        q->all[q->count++] = c;
        rc = migrate(q, c, err);
    }
    if (rc != REIN_OK) {
        sq_close(s);
        s->ops = NULL;
        return rc;
    }
    conn_put(q, c);
    if (q->exclusive) {
        rc = writer_start(q, err);
        if (rc != REIN_OK) {
            sq_close(s);
            s->ops = NULL;
            return rc;
        }
        q->group = true;
    }
    return REIN_OK;
}
