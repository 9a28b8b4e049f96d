/*
 * The routes that need only the store (rein_server_add_store_routes in include/rein/server.h):
 * the conversation list, one conversation with its messages, ledger and lock state, deletion,
 * and the replay of a conversation's recorded events (docs/decisions/0012). Agent routes
 * (chat, cancel, approvals) are added beside these; they use the same request and store APIs.
 */
#include "server/server_int.h"

#include <rein/buf.h>

#include <inttypes.h>
#include <limits.h>
#include <string.h>

#define EVENTS_BATCH   64   /* events read from the store at once */
#define EVENTS_WAIT_MS 1000 /* how long a follower sleeps before it looks at the lock again */

/*
 * GET /agent/conversations and GET /agent/conversations/{id} are answered on the network
 * thread when the store can read at once (rein_store_read_now: no hand-over to a worker and
 * back, one read transaction for the whole answer), else on a worker, where the same reads
 * wait for a connection (rein_store_read: one read transaction too; made as plain calls, each
 * read on SQLite's exclusive connection waited for a commit of the writer thread's, which
 * made a get 5x slower). Both write their answer straight from the store's rows, with no
 * tree.
 */
struct read_job {
    rein_request *req;
    struct rein_buf b;
    struct rein_jw w;
    bool ran; /* the reads started: the buffer holds their output */
};

static void job_init(struct read_job *job, rein_request *req)
{
    job->req = req;
    rein_buf_init(&job->b, 0);
    /* Room for a page of 20 conversations at once, instead of doubling up to it. A failure
     * here shows again when the answer is written. */
    if (rein_buf_grow(&job->b, 4095) != REIN_OK)
        rein_buf_release(&job->b);
    rein_jw_init(&job->w, &job->b);
    job->ran = false;
}

static rein_err list_read(rein_store *store, void *userdata, rein_error *err)
{
    struct read_job *job = userdata;
    const char *limit_text = rein_request_query(job->req, "limit");
    long limit = 20;

    job->ran = true;
    if (limit_text)
        (void)rein__http_parse_uint(limit_text, 1, 100, &limit); /* checked before */
    return rein_store_conv_page_write(store, rein_request_query(job->req, "q"),
                                      rein_request_query(job->req, "cursor"), (unsigned)limit,
                                      &job->w, err);
}

/* The conversation's members and its lock, as one object. */
static rein_err get_read(rein_store *store, void *userdata, rein_error *err)
{
    struct read_job *job = userdata;
    const char *id = rein_request_param(job->req, "id");
    struct rein_store_lock_info info;
    rein_err rc;

    job->ran = true;
    rein_jw_obj_begin(&job->w);
    rc = rein_store_conv_export_write(store, id, &job->w, err);
    if (rc != REIN_OK)
        return rc;
    rc = rein_store_lock_get(store, id, &info, err);
    REIN_JW_KEY(&job->w, "lock");
    if (rc == REIN_OK) {
        json_t *lock = rein_lock_info_json(&info);
        if (!lock)
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
        rein_jw_json(&job->w, lock);
        json_decref(lock);
    } else if (rc == REIN_ENOTFOUND) {
        rein_jw_null(&job->w);
    } else {
        return rc;
    }
    rein_jw_obj_end(&job->w);
    if (rein_jw_finish(&job->w) != REIN_OK)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    return REIN_OK;
}

/* Sends what the reads wrote (status 200), or the failure that stopped them. */
static void reply_read(struct read_job *job, rein_err rc, const rein_error *err)
{
    if (rc == REIN_OK && rein_buf_addch(&job->b, '\n') != REIN_OK)
        rc = rein_error_set(NULL, REIN_ENOMEM, "out of memory");
    if (rc == REIN_OK)
        rein__request_reply_buf(job->req, 200, "application/json", &job->b);
    else if (rc == REIN_ENOMEM)
        rein_request_reply_error(job->req, 500, "internal", "could not encode the answer");
    else
        rein_request_reply_rein_error(job->req, err);
    rein_buf_release(&job->b);
}

/* On a worker: the reads, waiting where they must. */
static void read_waiting(rein_request *req, rein_store *store, rein_store_read_fn fn)
{
    struct read_job job;
    rein_error err;
    rein_err rc;

    job_init(&job, req);
    rc = rein_store_read(store, fn, &job, &err);
    reply_read(&job, rc, &err);
}

/* On the network thread: the reads at once, or the request handed to a worker (defer_fn). */
static void read_inline(rein_request *req, rein_store *store, rein_store_read_fn fn,
                        rein_handler_fn defer_fn)
{
    struct read_job job;
    rein_error err;
    rein_err rc;

    job_init(&job, req);
    rc = rein_store_read_now(store, fn, &job, &err);
    if (rc == REIN_EBUSY && !job.ran) {
        rein_buf_release(&job.b);
        if (rein_request_defer(req, defer_fn, store) != REIN_OK)
            rein_request_reply_error(req, 500, "internal",
                                     "the read could not be handed to a worker");
        return;
    }
    reply_read(&job, rc, &err);
}

static void list_waiting(rein_request *req, void *userdata)
{
    read_waiting(req, userdata, list_read);
}

static void list_conversations(rein_request *req, void *userdata)
{
    const char *limit_text = rein_request_query(req, "limit");
    long limit = 20;

    if (limit_text && !rein__http_parse_uint(limit_text, 1, 100, &limit)) {
        rein_request_reply_error(req, 400, "bad_request", "limit must be a number from 1 to 100");
        return;
    }
    read_inline(req, userdata, list_read, list_waiting);
}

static void get_waiting(rein_request *req, void *userdata)
{
    read_waiting(req, userdata, get_read);
}

static void get_conversation(rein_request *req, void *userdata)
{
    read_inline(req, userdata, get_read, get_waiting);
}

/* PATCH {"title"}: renames the conversation (while a turn runs too: the title is not the
 * turn's). Answers the conversation as the list shows it. */
static void patch_conversation(rein_request *req, void *userdata)
{
    rein_store *store = userdata;
    const char *id = rein_request_param(req, "id");
    const char *title = NULL;
    json_t *details = json_array(), *conv = NULL;
    rein_error err;

    if (!details) {
        rein_request_reply_error(req, 500, "internal", "out of memory");
        return;
    }
    if (!rein__patch_body_read(rein_request_json(req), &title, details)) {
        rein__reply_problems(req, details);
        return;
    }
    json_decref(details);
    if (rein_store_conv_update(store, id, title, NULL, NULL, &err) != REIN_OK ||
        rein_store_conv_get(store, id, &conv, &err) != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    rein_request_reply_json(req, 200, conv);
}

static void delete_conversation(rein_request *req, void *userdata)
{
    rein_store *store = userdata;
    const char *id = rein_request_param(req, "id");
    struct rein_store_lock_info info;
    rein_error err;
    rein_err rc = rein_store_conv_delete(store, id, &err);

    if (rc == REIN_EBUSY) {
        rein_error lerr;
        if (rein_store_lock_get(store, id, &info, &lerr) == REIN_OK) {
            rein_request_reply_busy(req, id, &info);
            return;
        }
    }
    if (rc != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    rein_request_reply_json(req, 200, json_pack("{s:s, s:b}", "id", id, "deleted", 1));
}

/* ---- GET /agent/conversations/{id}/events ------------------------------------------------ */

/*
 * The recorded events of a conversation, from the store, so any instance sharing it serves
 * them, whichever instance runs the turn. A turn outlives its client: a page that was
 * reloaded, another tab or another device reads the turn here.
 *
 * Where it starts: the Last-Event-ID header, else ?after=N, else ?from=turn (the last turn's
 * start event: the one running, or the last one that ran), else the first event kept.
 * ?type=a,b keeps only those types. As Server-Sent Events (the default) each event keeps its
 * sequence id as the SSE id and its payload as data, with "recorded_ms" added (when it was
 * written, on the store's clock); while a turn runs the stream follows it, and it ends once no
 * turn runs and every event is sent. With Accept: application/json (and not
 * text/event-stream) the answer is one page, ?limit=N (1..1000, default 100) events:
 *   {"conversation_id", "events": [{"seq", "type", "time", "trace_id", "data"}], "last_seq",
 *    "running", "now_ms", "next_after"} (next_after: where the next page starts, null at the end)
 */

#define EVENTS_TYPES_MAX   8
#define EVENTS_LIMIT_MAX   1000
#define EVENTS_SCAN_WINDOW 256
#define EVENTS_SCAN_MAX    (1 << 20) /* events looked through for a turn's start at most */

struct events_query {
    int64_t after;
    bool from_turn;
    long limit;
    char types[EVENTS_TYPES_MAX][64];
    size_t ntypes;
};

static bool parse_types(const char *text, struct events_query *q)
{
    while (text && *text) {
        size_t n = strcspn(text, ",");
        if (n == 0 || n >= sizeof(q->types[0]) || q->ntypes == EVENTS_TYPES_MAX)
            return false;
        memcpy(q->types[q->ntypes], text, n);
        q->types[q->ntypes++][n] = '\0';
        text += n + (text[n] == ',');
    }
    return true;
}

/* False (and answered) when a parameter is malformed. */
static bool read_events_query(rein_request *req, struct events_query *q)
{
    const char *text = rein_request_header(req, "Last-Event-ID");
    const char *from = rein_request_query(req, "from");
    const char *limit = rein_request_query(req, "limit");
    long v = 0;

    memset(q, 0, sizeof(*q));
    q->limit = 100;
    if (!text)
        text = rein_request_query(req, "after");
    if (text && !rein__http_parse_uint(text, 0, LONG_MAX, &v)) {
        rein_request_reply_error(req, 400, "bad_request",
                                 "Last-Event-ID (or after) must be an event id: a number >= 0");
        return false;
    }
    q->after = v;
    if (!text && from) {
        if (strcmp(from, "turn") != 0) {
            rein_request_reply_error(req, 400, "bad_request", "from must be \"turn\"");
            return false;
        }
        q->from_turn = true;
    }
    if (limit && !rein__http_parse_uint(limit, 1, EVENTS_LIMIT_MAX, &q->limit)) {
        rein_request_reply_error(req, 400, "bad_request", "limit must be a number from 1 to %d",
                                 EVENTS_LIMIT_MAX);
        return false;
    }
    if (!parse_types(rein_request_query(req, "type"), q)) {
        rein_request_reply_error(req, 400, "bad_request",
                                 "type must be up to %d event types separated by commas",
                                 EVENTS_TYPES_MAX);
        return false;
    }
    return true;
}

static bool type_wanted(const struct events_query *q, const char *type)
{
    for (size_t i = 0; i < q->ntypes; i++) {
        if (strcmp(q->types[i], type) == 0)
            return true;
    }
    return q->ntypes == 0;
}

struct scan {
    int64_t hi;    /* only events up to this id count */
    int64_t start; /* the last start event found */
};

static int scan_start(const struct rein_store_event *ev, void *userdata)
{
    struct scan *sc = userdata;

    if (ev->seq > sc->hi)
        return 1;
    if (strcmp(ev->type, "start") == 0)
        sc->start = ev->seq;
    return 0;
}

static int64_t last_seq(rein_store *store, const char *id)
{
    int64_t last = 0;
    rein_error err;
    rein_err rc = rein_store_events_wait(store, id, INT64_MAX, 0, NULL, &last, &err);

    if (rc != REIN_OK && rc != REIN_ETIMEDOUT)
        rein_log(REIN_LOG_WARN, "server/events", "%s: events not read: %s", id, err.msg);
    return last;
}

/* The id just before the last turn's start event (0: from the first event kept), looked for
 * backwards, a window at a time. */
static rein_err turn_start(rein_store *store, const char *id, int64_t *after, rein_error *err)
{
    struct scan sc = {.hi = last_seq(store, id), .start = 0};

    *after = 0;
    for (int64_t looked = 0; sc.hi > 0 && looked < EVENTS_SCAN_MAX; looked += EVENTS_SCAN_WINDOW) {
        int64_t lo = sc.hi > EVENTS_SCAN_WINDOW ? sc.hi - EVENTS_SCAN_WINDOW : 0;
        rein_err rc =
            rein_store_events_after(store, id, lo, EVENTS_SCAN_WINDOW, scan_start, &sc, err);
        if (rc != REIN_OK && rc != 1)
            return rc;
        if (sc.start > 0) {
            *after = sc.start - 1;
            return REIN_OK;
        }
        sc.hi = lo;
    }
    return REIN_OK;
}

struct follow {
    rein_sse *sse;
    const struct events_query *q;
    struct rein_buf b;
    int64_t last;    /* the last sequence id sent (or skipped by the type filter) */
    size_t seen;     /* in this batch */
    bool gone;       /* the client left */
    bool saw_result; /* the last event sent was a turn's result: its lock goes at once */
};

/* The payload with "recorded_ms" first, when it is an object. */
static rein_err with_time(struct rein_buf *b, const struct rein_store_event *ev)
{
    const char *p = ev->payload;
    size_t len = strlen(p);
    char head[48];

    rein_buf_reset(b);
    if (p[0] != '{')
        return rein_buf_add(b, p, len);
    snprintf(head, sizeof(head), "{\"recorded_ms\":%" PRId64 "%s", ev->time_ms,
             p[1] == '}' ? "" : ",");
    if (rein_buf_add(b, head, strlen(head)) != REIN_OK)
        return REIN_ENOMEM;
    return rein_buf_add(b, p + 1, len - 1);
}

static int send_stored(const struct rein_store_event *ev, void *userdata)
{
    struct follow *f = userdata;
    char id[24];

    f->last = ev->seq;
    f->seen++;
    if (!type_wanted(f->q, ev->type))
        return 0;
    snprintf(id, sizeof(id), "%" PRId64, ev->seq);
    if (with_time(&f->b, ev) != REIN_OK ||
        rein_sse_send_event(f->sse, id, ev->type, f->b.ptr, f->b.len, 0) != REIN_OK) {
        f->gone = true;
        return 1;
    }
    f->saw_result = strcmp(ev->type, "result") == 0;
    return 0;
}

/* True while a turn holds the conversation's lock (errors count as held: keep following). */
static bool turn_running(rein_store *store, const char *id)
{
    struct rein_store_lock_info info;
    rein_error err;

    return rein_store_lock_get(store, id, &info, &err) != REIN_ENOTFOUND;
}

/*
 * The events after the starting point as SSE; while a turn runs the stream follows it. The
 * lock is looked at before reading: a turn records its last event (the result) before it
 * releases the lock, so nothing of a finished turn is missed.
 */
static void stream_events(rein_request *req, rein_store *store, const char *id,
                          const struct events_query *q, int64_t after)
{
    struct follow f = {.q = q, .last = after};
    rein_error err;
    rein_err rc = REIN_OK;

    f.sse = rein_request_sse_start(req, &err);
    if (!f.sse) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    rein_buf_init(&f.b, 0);
    for (;;) {
        bool running = turn_running(store, id);
        do {
            f.seen = 0;
            rc = rein_store_events_after(store, id, f.last, EVENTS_BATCH, send_stored, &f, &err);
        } while (rc == REIN_OK && f.seen == EVENTS_BATCH);
        if (f.gone || (rc != REIN_OK && rc != 1) || !running)
            break;
        rc = rein_store_events_wait(store, id, f.last, f.saw_result ? 100 : EVENTS_WAIT_MS,
                                    rein_request_cancel(req), NULL, &err);
        if (rc != REIN_OK && rc != REIN_ETIMEDOUT)
            break;
    }
    if (rc != REIN_OK && rc != 1 && rc != REIN_ETIMEDOUT && rc != REIN_ECANCELED && !f.gone)
        rein_log(REIN_LOG_WARN, "server/events", "%s: events not sent: %s", id, err.msg);
    rein_buf_release(&f.b);
}

struct page {
    const struct events_query *q;
    json_t *events;
    int64_t after;
    bool full;
    bool oom;
};

static int add_to_page(const struct rein_store_event *ev, void *userdata)
{
    struct page *pg = userdata;
    char when[REIN_TIME_ISO_LEN];
    json_t *data, *o;

    if (json_array_size(pg->events) >= (size_t)pg->q->limit) {
        pg->full = true;
        return 1;
    }
    pg->after = ev->seq;
    if (!type_wanted(pg->q, ev->type))
        return 0;
    data = rein_json_parse(ev->payload, strlen(ev->payload), 0, NULL);
    o = json_pack("{s:I, s:s, s:s, s:s?, s:o}", "seq", (json_int_t)ev->seq, "type", ev->type,
                  "time", rein_time_iso(ev->time_ms, when), "trace_id",
                  ev->trace_id && ev->trace_id[0] ? ev->trace_id : NULL, "data",
                  data ? data : json_null());
    if (!o || json_array_append_new(pg->events, o) != 0) {
        pg->oom = true;
        return 1;
    }
    return 0;
}

/* One page of events as JSON. */
static void page_events(rein_request *req, rein_store *store, const char *id,
                        const struct events_query *q, int64_t after)
{
    struct page pg = {.q = q, .events = json_array(), .after = after};
    bool running = turn_running(store, id);
    int64_t last = last_seq(store, id);
    rein_error err;

    if (!pg.events) {
        rein_request_reply_error(req, 500, "internal", "out of memory");
        return;
    }
    while (!pg.full && pg.after < last) {
        int64_t before = pg.after;
        rein_err rc =
            rein_store_events_after(store, id, pg.after, EVENTS_BATCH, add_to_page, &pg, &err);
        if (rc < 0 || pg.oom) {
            json_decref(pg.events);
            if (pg.oom)
                rein_request_reply_error(req, 500, "internal", "out of memory");
            else
                rein_request_reply_rein_error(req, &err);
            return;
        }
        if (pg.after == before)
            break;
    }
    rein_request_reply_json(req, 200,
                            json_pack("{s:s, s:o, s:I, s:b, s:I, s:o}", "conversation_id", id,
                                      "events", pg.events, "last_seq", (json_int_t)last, "running",
                                      running, "now_ms", (json_int_t)rein_wall_ms(), "next_after",
                                      pg.full ? json_integer(pg.after) : json_null()));
}

/* JSON only when the client asks for it and not for an event stream. */
static bool wants_json_page(const rein_request *req)
{
    const char *accept = rein_request_header(req, "Accept");

    return accept && strstr(accept, "application/json") && !rein_request_wants_sse(req);
}

static void get_events(rein_request *req, void *userdata)
{
    rein_store *store = userdata;
    const char *id = rein_request_param(req, "id");
    struct events_query q;
    int64_t after;
    rein_error err;

    if (!read_events_query(req, &q))
        return;
    rein_error_clear(&err);
    if (!rein_store_conv_exists(store, id, &err)) {
        if (err.code)
            rein_request_reply_rein_error(req, &err);
        else
            rein_request_reply_error(req, 404, "not_found", "there is no conversation %s", id);
        return;
    }
    after = q.after;
    if (q.from_turn && turn_start(store, id, &after, &err) != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    if (wants_json_page(req))
        page_events(req, store, id, &q, after);
    else
        stream_events(req, store, id, &q, after);
}

rein_err rein_server_add_store_routes(rein_server *srv, rein_store *store, rein_error *err)
{
    rein_err rc = rein_server_route(srv, "GET", "/agent/conversations", REIN_ROUTE_INLINE,
                                    list_conversations, store, err);

    if (rc == REIN_OK)
        rc = rein_server_route(srv, "GET", "/agent/conversations/{id}", REIN_ROUTE_INLINE,
                               get_conversation, store, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "PATCH", "/agent/conversations/{id}", REIN_ROUTE_JSON_BODY,
                               patch_conversation, store, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "DELETE", "/agent/conversations/{id}", 0, delete_conversation,
                               store, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "GET", "/agent/conversations/{id}/events", 0, get_events, store,
                               err);
    return rc;
}
