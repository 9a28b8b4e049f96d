/*
 * Responses run in the background (decision 0093): POST /v1/responses with "background": true
 * is answered as soon as its body has been read and accepted, with the response object in
 * progress; the rounds with the upstream go on on a worker of the gateway's own pool, and the
 * client reads the answer later with GET /v1/responses/{id} (kept.c keeps the response in
 * progress, then the answer), or cancels it with POST /v1/responses/{id}/cancel. This is how
 * clients of slow reasoning models avoid holding a connection for minutes.
 *
 * A job reads the request on its worker exactly as a request in the foreground is read
 * (rein_gateway_serve's steps, with the job as the sink), while the client's thread waits: a
 * body the gateway refuses is refused on the client's connection, as in the foreground. Until
 * then the job reads the client's headers through the client's call; what it read is kept, so
 * the options it took from them stay valid after the client's request is gone.
 *
 * Bounded: at most max jobs at once (a client at most half of them, at least one), each ended
 * by its cancellation or by the gateway's end, which cancels them all and waits for them.
 *
 * A job whose request asked for a stream keeps every event its stream makes (a log: the SSE
 * frames exactly as the foreground would send them, with their sequence numbers), so that
 * the client's POST follows the events as they come and a client that lost its connection
 * resumes with GET /v1/responses/{id}?stream=true&starting_after=N. The job's worker is the
 * only writer of its log; the streams that follow it (followers) read it under the log's
 * mutex and wait on its condition variable. The logs together hold at most the kept
 * responses' bound in bytes: past it, ended logs are forgotten oldest first, and a running
 * one that still does not fit stops keeping (its followers end with an error event, never
 * with a gap).
 */
#include "gateway/gateway_int.h"

#include <rein/pool.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Streams that follow one response's events at most (its POST's own among them), and the
 * streams of GET ?stream=true in all: each holds a thread of the server's waiting pool. */
#define FOLLOWERS_PER_RESPONSE 8
#define FOLLOWERS_MAX          256
/* What a log costs before its first event (counted in its bytes), and one event beyond its
 * frame. */
#define LOG_BASE   ((size_t)256)
#define EVENT_COST sizeof(struct ev_at)
/* A follower copies at most this much of the log at once before writing it. */
#define BATCH_BYTES  ((size_t)64 << 10)
#define BATCH_EVENTS 256

enum phase {
    READING,  /* the job reads the request; the client's call is valid */
    ACCEPTED, /* answered in progress; the rounds go on */
    ANSWERED, /* answered (refused) before it was accepted */
};

/* One event of a log: its frame (text[off], len bytes: "event: NAME\ndata: DATA\n\n"), its
 * event name's length and its sequence_number. */
struct ev_at {
    size_t off, len, name_len;
    int64_t seq;
};

/*
 * The events of a background response asked with stream. Invariants: only the job's worker
 * appends (to text and ev, under mu); followers read under mu; the sequence numbers in ev
 * increase. lost: the log stopped keeping (past the bound, or its response was deleted):
 * what it kept stays, nothing more joins it. ended: no event comes any more. closing: the gateway is
 * ending. refs (under mu): the gateway's list, the job, each follower.
 * Under the gateway's bg_mu: next, listed (in g->logs), bytes (what g->log_bytes counts for
 * it while listed), followers, ended_at (0: running).
 */
struct rein__gw_log {
    struct rein__gw_log *next;
    char owner[REIN__GW_OWNER_LEN + 1];
    char id[REIN_ID_MAX];
    size_t bytes;
    int followers;
    int64_t ended_at;
    bool listed;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct rein_buf text;
    struct ev_at *ev;
    size_t n, cap;
    int64_t next_seq; /* the sequence number after the last event made (kept or not) */
    int refs;
    bool lost, ended, closing;
};

struct rein__gw_job {
    struct rein__gw_job *next; /* in the gateway's list, under bg_mu */
    rein_gateway *g;
    char owner[REIN__GW_OWNER_LEN + 1];
    char id[REIN_ID_MAX]; /* the response's, once accepted */
    char trace_id[REIN_TRACE_ID_LEN + 1];
    char *body;
    const struct rein_gateway_call *orig; /* the client's: valid while phase is READING */
    struct rein_gateway_call call;        /* the job's: its body, headers and cancellation */
    json_t *headers; /* the client's headers the job read: name -> value or null */
    rein_cancel *cancel;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    enum phase phase;
    int refs; /* the client's thread and the worker; the last one frees */
    /* The answer the sink got (status 0: none): the refusal before acceptance, the final
     * answer after it. */
    int status;
    char ctype[64];
    struct rein_buf answer;
    struct rein_buf accepted; /* the response object in progress the client got */
    /* With stream: the job's events (its own reference, set before ACCEPTED), one event's
     * frame (the worker's), and whether the log holds the stream's last event. */
    struct rein__gw_log *log;
    struct rein_buf frame;
    bool final;
};

/* ---- the events of a streamed job ------------------------------------------------------ */

static void log_put(struct rein__gw_log *l)
{
    bool last;

    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    last = --l->refs == 0;
    pthread_mutex_unlock(&l->mu);
    if (!last)
        return;
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    rein_buf_release(&l->text);
    rein_free(l->ev);
    rein_free(l);
}

static struct rein__gw_log *log_ref(struct rein__gw_log *l)
{
    pthread_mutex_lock(&l->mu);
    l->refs++;
    pthread_mutex_unlock(&l->mu);
    return l;
}

/* l keeps no more events (under its mu): its followers give what it kept, then end with an
 * error event where the gap would begin. */
static void log_lose(struct rein__gw_log *l)
{
    l->lost = true;
    pthread_cond_broadcast(&l->cv);
}

/* Takes l out of the gateway's list (*at points to it there). Under bg_mu. */
static void log_unlist(rein_gateway *g, struct rein__gw_log **at)
{
    struct rein__gw_log *l = *at;

    *at = l->next;
    l->next = NULL;
    l->listed = false;
    g->log_bytes -= l->bytes;
    l->bytes = 0;
    log_put(l);
}

/*
 * Room for need more bytes of events: logs that ended longer ago than the kept responses
 * last are forgotten, then ended ones oldest first while the bound is short. A running log
 * is never taken from its followers. Under bg_mu.
 */
static bool logs_room(rein_gateway *g, size_t need)
{
    size_t max = (size_t)g->kept.max_bytes;
    int64_t now = rein_now_ms();

    if (g->log_bytes + need <= max)
        return true;
    for (struct rein__gw_log **p = &g->logs; *p;) {
        struct rein__gw_log *l = *p;
        if (l->ended_at && (now - l->ended_at > g->kept.keep_ms || g->log_bytes + need > max))
            log_unlist(g, p);
        else
            p = &l->next;
    }
    return g->log_bytes + need <= max;
}

/* The listed log of owner's response id, or NULL; the old ones forgotten first. Under bg_mu. */
static struct rein__gw_log **log_find(rein_gateway *g, const char *owner, const char *id)
{
    int64_t now = rein_now_ms();

    for (struct rein__gw_log **p = &g->logs; *p;) {
        struct rein__gw_log *l = *p;
        if (l->ended_at && now - l->ended_at > g->kept.keep_ms) {
            log_unlist(g, p);
            continue;
        }
        if (strcmp(l->owner, owner) == 0 && strcmp(l->id, id) == 0)
            return p;
        p = &l->next;
    }
    return NULL;
}

/* A new log for the job's response, listed (its reference and the job's), or NULL. */
static struct rein__gw_log *log_new(struct rein__gw_job *j)
{
    rein_gateway *g = j->g;
    struct rein__gw_log *l = rein_calloc(1, sizeof(*l)), **p;

    if (!l)
        return NULL;
    snprintf(l->owner, sizeof(l->owner), "%s", j->owner);
    snprintf(l->id, sizeof(l->id), "%s", j->id);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    rein_buf_init(&l->text, 0);
    l->refs = 2;
    pthread_mutex_lock(&g->bg_mu);
    /* even a log that does not fit is listed: a resume then hears that its events are lost */
    if (logs_room(g, LOG_BASE))
        l->bytes = LOG_BASE;
    else
        log_lose(l);
    g->log_bytes += l->bytes;
    l->listed = true;
    for (p = &g->logs; *p; p = &(*p)->next)
        ;
    *p = l;
    pthread_mutex_unlock(&g->bg_mu);
    return l;
}

/* The sequence_number an event's data (len bytes of the wire's JSON) gives, or dflt. */
static int64_t seq_of(const char *data, size_t len, int64_t dflt)
{
    static const char key[] = "\"sequence_number\":";
    const char *p = memmem(data, len, key, sizeof(key) - 1);
    char *end;
    long long v;

    if (!p)
        return dflt;
    errno = 0;
    v = strtoll(p + sizeof(key) - 1, &end, 10);
    return errno || end == p + sizeof(key) - 1 || v < 0 ? dflt : (int64_t)v;
}

/* Room for one more entry in l->ev. Under l->mu. */
static rein_err ev_room(struct rein__gw_log *l)
{
    size_t cap = l->cap ? l->cap * 2 : 64;
    struct ev_at *ev;

    if (l->n < l->cap)
        return REIN_OK;
    ev = rein_realloc(l->ev, cap * sizeof(*ev));
    if (!ev)
        return REIN_ENOMEM;
    l->ev = ev;
    l->cap = cap;
    return REIN_OK;
}

/* Counts need more bytes for l when they fit (ok: they were made). */
static bool log_count(rein_gateway *g, struct rein__gw_log *l, size_t need, bool ok)
{
    pthread_mutex_lock(&g->bg_mu);
    ok = ok && l->listed && logs_room(g, need);
    if (ok) {
        g->log_bytes += need;
        l->bytes += need;
    }
    pthread_mutex_unlock(&g->bg_mu);
    return ok;
}

/* Takes back the count of need bytes that l did not keep after all. */
static void log_uncount(rein_gateway *g, struct rein__gw_log *l, size_t need)
{
    pthread_mutex_lock(&g->bg_mu);
    if (l->listed) {
        g->log_bytes -= need;
        l->bytes -= need;
    }
    pthread_mutex_unlock(&g->bg_mu);
}

/*
 * One event of the job's stream into its log, framed as the foreground frames it
 * (rein_sse_frame_line), and its followers woken. Past the bound, or out of memory, the log
 * stops keeping: the job goes on (its answer is kept as a response), its followers end.
 */
static void log_append(struct rein__gw_job *j, const char *event, const char *data, size_t len)
{
    struct rein__gw_log *l = j->log;
    int64_t seq;
    bool made, counted, ok, lost;

    pthread_mutex_lock(&l->mu);
    lost = l->lost;
    seq = seq_of(data, len, l->next_seq);
    l->next_seq = seq + 1;
    pthread_mutex_unlock(&l->mu);
    if (lost)
        return;
    rein_buf_reset(&j->frame);
    made = rein_sse_frame_line(&j->frame, event, data, len) == REIN_OK;
    counted = log_count(j->g, l, j->frame.len + EVENT_COST, made);
    pthread_mutex_lock(&l->mu);
    ok = counted && !l->lost && ev_room(l) == REIN_OK &&
         rein_buf_add(&l->text, j->frame.ptr, j->frame.len) == REIN_OK;
    if (ok) {
        l->ev[l->n++] = (struct ev_at){.off = l->text.len - j->frame.len,
                                       .len = j->frame.len,
                                       .name_len = event ? strlen(event) : 0,
                                       .seq = seq};
        pthread_cond_broadcast(&l->cv);
    } else if (!l->lost) {
        log_lose(l);
    }
    pthread_mutex_unlock(&l->mu);
    if (counted && !ok)
        log_uncount(j->g, l, j->frame.len + EVENT_COST);
}

/* The log stops keeping (its last event could not be made): the followers end with an error
 * event rather than without the end. */
static void log_lose_all(struct rein__gw_job *j)
{
    pthread_mutex_lock(&j->log->mu);
    log_lose(j->log);
    pthread_mutex_unlock(&j->log->mu);
}

/* No event comes any more: the followers give what is left and end. */
static void log_end(rein_gateway *g, struct rein__gw_log *l)
{
    pthread_mutex_lock(&g->bg_mu);
    l->ended_at = rein_now_ms() > 0 ? rein_now_ms() : 1;
    pthread_mutex_unlock(&g->bg_mu);
    pthread_mutex_lock(&l->mu);
    l->ended = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

void rein__gw_bg_forget(rein_gateway *g, const char *owner, const char *id)
{
    struct rein__gw_log **p, *l;

    if (!g->bg_on)
        return;
    pthread_mutex_lock(&g->bg_mu);
    p = log_find(g, owner, id);
    l = p ? *p : NULL;
    if (l) {
        pthread_mutex_lock(&l->mu);
        log_lose(l);
        pthread_mutex_unlock(&l->mu);
        log_unlist(g, p);
    }
    pthread_mutex_unlock(&g->bg_mu);
}

/* ---- the streams that follow a log ------------------------------------------------------ */

/* One stream reading a log: where it is, and the batch it copied out to write. */
struct follower {
    rein_gateway *g;
    struct rein__gw_log *l;
    rein_cancel *cancel; /* the client's (borrowed; may be NULL) */
    const struct rein_gateway_sink *sink;
    size_t next; /* the index in l->ev of the next event to send */
    int64_t seq; /* the sequence_number after the last event sent */
    struct rein_buf out;
    struct ev_at batch[BATCH_EVENTS]; /* the events in out, their offsets there */
    size_t nbatch;
};

/* The client went away: its follower, waiting for the next event, looks. */
static void follower_wake(void *data)
{
    struct rein__gw_log *l = data;

    pthread_mutex_lock(&l->mu);
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

/* Whether one more stream may follow l (capped: a GET's; the POST's own always may), counted
 * then. Under bg_mu. */
static bool follower_add(rein_gateway *g, struct rein__gw_log *l, bool capped)
{
    if (g->bg_closing ||
        (capped && (l->followers >= FOLLOWERS_PER_RESPONSE || g->following >= FOLLOWERS_MAX)))
        return false;
    l->followers++;
    g->following++;
    return true;
}

/* Last of the follower's touches of g: rein_gateway_free() may go on once it is done. */
static void follower_leave(rein_gateway *g, struct rein__gw_log *l)
{
    pthread_mutex_lock(&g->bg_mu);
    l->followers--;
    g->following--;
    pthread_cond_broadcast(&g->bg_cv);
    pthread_mutex_unlock(&g->bg_mu);
}

/* Copies the events from f->next on out of the log, a batch at most. Under l->mu. */
static rein_err copy_batch(struct follower *f)
{
    const struct rein__gw_log *l = f->l;

    rein_buf_reset(&f->out);
    f->nbatch = 0;
    while (f->next < l->n && f->nbatch < BATCH_EVENTS &&
           (f->nbatch == 0 || f->out.len + l->ev[f->next].len <= BATCH_BYTES)) {
        const struct ev_at *e = &l->ev[f->next];
        if (rein_buf_add(&f->out, l->text.ptr + e->off, e->len) != REIN_OK)
            return REIN_ENOMEM;
        f->batch[f->nbatch] = *e;
        f->batch[f->nbatch++].off = f->out.len - e->len;
        f->seq = e->seq + 1;
        f->next++;
    }
    return REIN_OK;
}

/* Writes the batch through the sink, as frames or event by event, and flushes it. */
static rein_err send_batch(struct follower *f)
{
    const struct rein_gateway_sink *sk = f->sink;
    rein_err rc = REIN_OK;

    if (sk->stream_frames) {
        rc = sk->stream_frames(sk->data, &f->out);
    } else {
        for (size_t i = 0; i < f->nbatch && !rc; i++) {
            const struct ev_at *e = &f->batch[i];
            const char *p = f->out.ptr + e->off;
            size_t head = e->name_len ? 14 + e->name_len : 6;
            char name[512]; /* rein_sse_frame_line() frames no longer name */
            snprintf(name, sizeof(name), "%.*s", (int)e->name_len, p + 7);
            rc = sk->stream_event(sk->data, e->name_len ? name : NULL, p + head, e->len - head - 2);
        }
    }
    if (!rc && sk->flush)
        rc = sk->flush(sk->data);
    return rc;
}

/* The stream's end when the events it needs are not there: the API's error event. */
static rein_err send_error(struct follower *f, const char *code, const char *message)
{
    json_t *ev = json_pack("{s:s, s:I, s:s, s:s, s:n}", "type", "error", "sequence_number",
                           (json_int_t)f->seq, "code", code, "message", message, "param");
    struct rein_buf data;
    rein_err rc;

    rein_buf_init(&data, 0);
    rein_buf_reset(&f->out);
    rc = ev ? rein_json_dump(&data, ev) : REIN_ENOMEM;
    if (!rc)
        rc = rein_sse_frame_line(&f->out, "error", data.ptr, data.len);
    if (!rc) {
        f->batch[0] = (struct ev_at){.off = 0, .len = f->out.len, .name_len = 5, .seq = f->seq};
        f->nbatch = 1;
        rc = send_batch(f);
    }
    rein_buf_release(&data);
    json_decref(ev);
    return rc;
}

/*
 * Follows f->l from f->next: what is there, then each event as it comes, until the last one,
 * the client's going away (a write fails, or its cancellation wakes the wait), the log's
 * loss or the gateway's end (both told by an error event). Events are copied out under the
 * log's mutex and written without it.
 */
static rein_err follow(struct follower *f)
{
    struct rein__gw_log *l = f->l;
    bool lost = false, closing = false;
    int id = 0;
    rein_err rc;

    if (f->cancel && (id = rein_cancel_on(f->cancel, follower_wake, l)) < 0)
        return id;
    rc = f->sink->stream_start(f->sink->data);
    pthread_mutex_lock(&l->mu);
    while (!rc) {
        if (f->next < l->n) {
            rc = copy_batch(f);
            pthread_mutex_unlock(&l->mu);
            if (!rc)
                rc = send_batch(f);
            pthread_mutex_lock(&l->mu);
        } else if ((lost = l->lost) || l->ended || (closing = l->closing)) {
            break;
        } else if (rein_cancel_is_set(f->cancel)) {
            rc = REIN_ECANCELED;
        } else {
            pthread_cond_wait(&l->cv, &l->mu);
        }
    }
    pthread_mutex_unlock(&l->mu);
    if (id > 0)
        rein_cancel_off(f->cancel, id);
    if (!rc && lost)
        rc = send_error(f, "events_not_kept",
                        "The events of this response are no longer kept (they passed what the "
                        "gateway keeps, --gateway-keep-bytes, or the response was deleted); "
                        "read the response with GET /v1/responses/{id}.");
    else if (!rc && closing)
        rc = send_error(f, "server_shutting_down",
                        "The gateway is shutting down; the response is not kept past it.");
    return rc;
}

/* An error answer in OpenAI's shape; param may be NULL. */
static rein_err refuse_param(const struct rein_gateway_sink *sink, int status, const char *param,
                             const char *fmt, ...) REIN_PRINTF(4, 5);

/* The POST's own stream: the job's events from the first. */
static rein_err follow_job(struct rein__gw_job *j, const struct rein_gateway_call *call,
                           const struct rein_gateway_sink *sink)
{
    struct follower f = {.g = j->g, .l = j->log, .cancel = call->cancel, .sink = sink};
    bool ok;
    rein_err rc;

    pthread_mutex_lock(&j->g->bg_mu);
    ok = follower_add(j->g, j->log, false);
    pthread_mutex_unlock(&j->g->bg_mu);
    if (!ok)
        return refuse_param(sink, 503, NULL, "The gateway is shutting down.");
    rein_buf_init(&f.out, 0);
    rc = follow(&f);
    rein_buf_release(&f.out);
    follower_leave(j->g, j->log); /* the job's reference keeps the log */
    return rc;
}

/* A non-negative integer written in decimal digits only. */
static bool parse_after(const char *s, int64_t *out)
{
    char *end;
    long long v;

    if (s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = (int64_t)v;
    return true;
}

/* Where f starts in its log: after sequence number after (-1: at the first event). A refusal
 * answered on the sink (*answered) for a lost log or an event the log never had. */
static rein_err start_after(struct follower *f, const char *id, int64_t after, bool *answered)
{
    struct rein__gw_log *l = f->l;
    size_t lo = 0, hi;
    int64_t last;
    bool lost;

    pthread_mutex_lock(&l->mu);
    lost = l->lost;
    last = l->n ? l->ev[l->n - 1].seq : -1;
    for (hi = l->n; lo < hi;) { /* the first event past after: their numbers increase */
        size_t mid = lo + (hi - lo) / 2;
        if (l->ev[mid].seq <= after)
            lo = mid + 1;
        else
            hi = mid;
    }
    f->next = lo;
    f->seq = after + 1;
    pthread_mutex_unlock(&l->mu);
    *answered = lost || after > last;
    if (lost)
        return refuse_param(f->sink, 400, "stream",
                            "The events of response '%.64s' are no longer kept (they passed what "
                            "the gateway keeps, --gateway-keep-bytes); read it without stream.",
                            id);
    if (after > last)
        return refuse_param(f->sink, 400, "starting_after",
                            "Invalid 'starting_after': response '%.64s' has no event %lld (its "
                            "last so far is %lld).",
                            id, (long long)after, (long long)last);
    return REIN_OK;
}

/* Takes a follower's place on owner's log of id (a reference), or answers on sink why not
 * (NULL, *rc the answer's). */
static struct rein__gw_log *log_follow(rein_gateway *g, const char *owner, const char *id,
                                       const struct rein_gateway_sink *sink, rein_err *rc)
{
    struct rein__gw_log **p, *l = NULL;
    bool closing, busy;

    pthread_mutex_lock(&g->bg_mu);
    closing = g->bg_closing;
    p = closing ? NULL : log_find(g, owner, id);
    if (p && follower_add(g, *p, true))
        l = log_ref(*p);
    busy = p && !l;
    pthread_mutex_unlock(&g->bg_mu);
    if (l)
        *rc = REIN_OK;
    else if (closing)
        *rc = refuse_param(sink, 503, NULL, "The gateway is shutting down.");
    else if (busy)
        *rc = refuse_param(sink, 429, NULL,
                           "Too many streams follow response '%.64s' (at most %d) or responses "
                           "in all (at most %d): close one.",
                           id, FOLLOWERS_PER_RESPONSE, FOLLOWERS_MAX);
    else
        *rc = refuse_param(sink, 400, "stream",
                           "Response '%.64s' has no events to stream: only a response created "
                           "with background=true and stream=true keeps them. Read it without "
                           "stream.",
                           id);
    return l;
}

rein_err rein__gw_bg_stream(rein_gateway *g, const struct rein_gateway_call *call,
                            const char *owner, const char *id,
                            const char *(*query)(void *header_data, const char *name),
                            const struct rein_gateway_sink *sink)
{
    const char *sa = query ? query(call->header_data, "starting_after") : NULL;
    struct follower f = {.g = g, .cancel = call->cancel, .sink = sink};
    int64_t after = -1;
    json_t *resp = NULL;
    bool answered = false;
    rein_err rc;

    if (sa && !parse_after(sa, &after))
        return refuse_param(sink, 400, "starting_after",
                            "Invalid 'starting_after': expected a non-negative integer, got "
                            "'%.40s'.",
                            sa);
    rc = rein__gw_kept_get(&g->kept, owner, id, &resp, NULL);
    json_decref(resp);
    if (rc == REIN_ENOTFOUND)
        return refuse_param(sink, 404, NULL, "Response with id '%.64s' not found.", id);
    if (rc)
        return refuse_param(sink, 500, NULL, "out of memory");
    if (!(f.l = log_follow(g, owner, id, sink, &rc)))
        return rc;
    rc = start_after(&f, id, after, &answered);
    rein_buf_init(&f.out, 0);
    if (!answered)
        rc = follow(&f);
    rein_buf_release(&f.out);
    follower_leave(g, f.l);
    log_put(f.l);
    return rc == REIN_ECANCELED ? REIN_OK : rc;
}

rein_err rein__gw_bg_init(rein_gateway *g, int max)
{
    struct rein_pool_growth growth = {
        .core = (unsigned)max, .max = (unsigned)max, .stall_ms = 1000, .idle_ms = 60000};
    rein_error err;

    g->bg_max = max;
    pthread_mutex_init(&g->bg_mu, NULL);
    pthread_cond_init(&g->bg_cv, NULL);
    g->bg_on = true;
    if (max <= 0)
        return REIN_OK;
    /* a worker for every job at once: jobs are counted before they are submitted */
    g->bg_pool = rein_pool_new_growing(&growth, &err);
    return g->bg_pool ? REIN_OK : err.code;
}

void rein__gw_bg_release(rein_gateway *g)
{
    if (!g->bg_on)
        return;
    pthread_mutex_lock(&g->bg_mu);
    g->bg_closing = true; /* no stream starts following any more */
    for (struct rein__gw_job *j = g->jobs; j; j = j->next)
        rein_cancel_trigger(j->cancel, "the gateway is shutting down");
    for (struct rein__gw_log *l = g->logs; l; l = l->next) {
        pthread_mutex_lock(&l->mu);
        l->closing = true;
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mu);
    }
    pthread_mutex_unlock(&g->bg_mu);
    rein_pool_free(g->bg_pool); /* waits for every job */
    g->bg_pool = NULL;
    pthread_mutex_lock(&g->bg_mu);
    while (g->following > 0)
        pthread_cond_wait(&g->bg_cv, &g->bg_mu);
    while (g->logs)
        log_unlist(g, &g->logs);
    pthread_mutex_unlock(&g->bg_mu);
    pthread_cond_destroy(&g->bg_cv);
    pthread_mutex_destroy(&g->bg_mu);
    g->bg_on = false;
}

static void job_put(struct rein__gw_job *j)
{
    bool last;

    pthread_mutex_lock(&j->mu);
    last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last)
        return;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    rein_cancel_unref(j->cancel);
    json_decref(j->headers);
    rein_buf_release(&j->answer);
    rein_buf_release(&j->accepted);
    rein_buf_release(&j->frame);
    log_put(j->log);
    rein_free(j->body);
    rein_free(j);
}

/* The client's header name as the job reads it: from the client's call while it is valid
 * (and kept), from what was kept after. */
static const char *job_header(void *data, const char *name)
{
    struct rein__gw_job *j = data;
    json_t *v;

    pthread_mutex_lock(&j->mu);
    v = json_object_get(j->headers, name);
    if (!v && j->phase == READING && j->orig->header) {
        const char *s = j->orig->header(j->orig->header_data, name);
        v = s ? json_string(s) : json_null();
        if (json_object_set_new(j->headers, name, v))
            v = NULL;
    }
    pthread_mutex_unlock(&j->mu);
    return json_string_value(v);
}

/* Sets the phase (from READING) and wakes the client's thread. */
static void job_phase(struct rein__gw_job *j, enum phase p)
{
    pthread_mutex_lock(&j->mu);
    if (j->phase == READING)
        j->phase = p;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static rein_err sink_header(void *data, const char *name, const char *value)
{
    (void)data;
    (void)name;
    (void)value;
    return REIN_OK; /* the client has its answer's headers already, or gets a refusal's own */
}

static rein_err sink_reply(void *data, int status, const char *content_type, const char *body,
                           size_t len)
{
    struct rein__gw_job *j = data;
    rein_err rc;

    rein_buf_reset(&j->answer);
    rc = rein_buf_add(&j->answer, body, len);
    j->status = rc ? 500 : status;
    snprintf(j->ctype, sizeof(j->ctype), "%s", content_type ? content_type : "application/json");
    job_phase(j, ANSWERED);
    return rc;
}

/* A job streams only when its request asked to, into its log (rein__gw_bg_accept made it). */
static rein_err sink_stream_start(void *data)
{
    struct rein__gw_job *j = data;

    return j->log ? REIN_OK : REIN_ESTATE;
}

/* An error event ends a stream as an error answer ends a reply: the job is kept failed with
 * its words (job_settle). */
static void stream_failed(struct rein__gw_job *j, const char *text, size_t len)
{
    json_t *ev = rein_json_parse(text, len, 0, NULL);
    json_t *e = json_pack("{s:{s:O?, s:O?}}", "error", "code", json_object_get(ev, "code"),
                          "message", json_object_get(ev, "message"));

    rein_buf_reset(&j->answer);
    j->status = 500;
    if (!e || rein_json_dump(&j->answer, e) != REIN_OK)
        rein_buf_reset(&j->answer);
    json_decref(e);
    json_decref(ev);
}

/* Whether event ends a Responses stream. */
static bool final_event(const char *event)
{
    static const char *const last[] = {"response.completed", "response.incomplete",
                                       "response.failed", "error"};

    for (size_t i = 0; event && i < REIN_ARRAY_SIZE(last); i++) {
        if (strcmp(event, last[i]) == 0)
            return true;
    }
    return false;
}

/* Every event goes to the log; the job goes on whatever the log could keep. */
static rein_err sink_event(void *data, const char *event, const char *text, size_t len)
{
    struct rein__gw_job *j = data;

    if (!j->log)
        return REIN_ESTATE;
    if (event && strcmp(event, "error") == 0 && !rein_cancel_is_set(j->cancel))
        stream_failed(j, text, len);
    j->final = j->final || final_event(event);
    log_append(j, event, text, len);
    return REIN_OK;
}

static rein_err sink_flush(void *data)
{
    (void)data;
    return REIN_OK;
}

bool rein__gw_bg_accept(struct rein__gw_ctx *c, struct rein__gw_bad *bad)
{
    struct rein__gw_job *j = c->job;

    if (!c->g->kept.on || !json_is_true(json_object_get(c->conv_extra, "store"))) {
        rein__gw_bad(bad, "store",
                     c->g->kept.on ? "A background response must be stored: 'store' must be "
                                     "true."
                                   : "This gateway keeps no responses (--gateway-keep-bytes 0), "
                                     "so it runs none in the background.");
        return false;
    }
    pthread_mutex_lock(&j->mu);
    snprintf(j->id, sizeof(j->id), "%s", c->id);
    pthread_mutex_unlock(&j->mu);
    /* the log exists before the client's thread follows it, and before the first event */
    if (c->req.stream && !(j->log = log_new(j))) {
        rein__gw_bad(bad, "", "out of memory keeping the response's events");
        return false;
    }
    rein_buf_reset(&j->accepted);
    if (rein__gw_rs_in_progress(c, &j->accepted) != REIN_OK) {
        if (j->log)
            log_end(j->g, j->log);
        rein__gw_bad(bad, "", "out of memory keeping the response in progress");
        return false;
    }
    job_phase(j, ACCEPTED);
    return true;
}

/*
 * The response as the job ended, when the answer did not keep it: failed (the upstream's
 * error, or an answer too large to keep) or cancelled, written over the response in progress.
 */
static void job_settle(struct rein__gw_job *j)
{
    struct rein__gw_kept *k = &j->g->kept;
    json_t *resp = NULL, *input = NULL, *answer, *err;
    const char *status, *msg, *code;
    rein_err rc = rein__gw_kept_get(k, j->owner, j->id, &resp, &input);

    status = json_string_value(json_object_get(resp, "status"));
    if (rc || !status || strcmp(status, "in_progress") != 0) { /* kept as it ended, or forgotten */
        json_decref(resp);
        json_decref(input);
        return;
    }
    answer = j->status ? rein_json_parse(j->answer.ptr, j->answer.len, 0, NULL) : NULL;
    err = json_object_get(answer, "error");
    msg = json_string_value(json_object_get(err, "message"));
    code = json_string_value(json_object_get(err, "code"));
    if (!code)
        code = json_string_value(json_object_get(err, "type"));
    if (!j->status && rein_cancel_is_set(j->cancel)) {
        (void)json_object_set_new(resp, "status", json_string("cancelled"));
    } else {
        (void)json_object_set_new(resp, "status", json_string("failed"));
        (void)json_object_set_new(
            resp, "error",
            json_pack("{s:s, s:s}", "code", code ? code : "server_error", "message",
                      msg                ? msg
                      : j->status == 200 ? "The answer is larger than the gateway keeps "
                                           "(--gateway-keep-bytes)."
                                         : "The response ended without an answer."));
    }
    (void)rein__gw_kept_put(k, j->owner, j->id,
                            json_string_value(json_object_get(resp, "previous_response_id")), input,
                            resp);
    json_decref(answer);
    json_decref(resp);
    json_decref(input);
}

/*
 * A stream that ended without its last event (the job was cancelled, or its upstream failed
 * before the first event) ends with response.failed holding the response as it was kept
 * (cancelled or failed, with its error), so that its followers end with what GET gives.
 */
static void log_settled(struct rein__gw_job *j)
{
    json_t *resp = NULL, *ev;
    struct rein_buf b;
    int64_t seq;

    if (rein__gw_kept_get(&j->g->kept, j->owner, j->id, &resp, NULL) != REIN_OK)
        resp = json_pack("{s:s, s:s, s:s}", "id", j->id, "object", "response", "status",
                         rein_cancel_is_set(j->cancel) ? "cancelled" : "failed");
    pthread_mutex_lock(&j->log->mu);
    seq = j->log->next_seq;
    pthread_mutex_unlock(&j->log->mu);
    ev = json_pack("{s:s, s:I, s:o?}", "type", "response.failed", "sequence_number",
                   (json_int_t)seq, "response", resp);
    rein_buf_init(&b, 0);
    if (ev && rein_json_dump(&b, ev) == REIN_OK)
        log_append(j, "response.failed", b.ptr, b.len);
    else
        log_lose_all(j);
    rein_buf_release(&b);
    json_decref(ev);
}

static void job_run(void *arg)
{
    struct rein__gw_job *j = arg;
    struct rein_gateway_sink sink = {
        .header = sink_header,
        .reply = sink_reply,
        .stream_start = sink_stream_start,
        .stream_event = sink_event,
        .flush = sink_flush,
        .data = j,
    };
    rein_gateway *g = j->g;

    (void)rein__gw_serve(g, &j->call, &sink, j);
    if (j->phase == ACCEPTED) {
        job_settle(j);
        if (j->log && !j->final)
            log_settled(j);
        if (j->log)
            log_end(g, j->log);
    } else {
        job_phase(j, ANSWERED); /* a refusal, or nothing: the client's thread says so */
    }
    pthread_mutex_lock(&g->bg_mu);
    for (struct rein__gw_job **p = &g->jobs; *p; p = &(*p)->next) {
        if (*p == j) {
            *p = j->next;
            break;
        }
    }
    g->bg_n--;
    rein_metric_set(g->m.background, NULL, (double)g->bg_n);
    pthread_mutex_unlock(&g->bg_mu);
    job_put(j);
}

/* The client's count of jobs, and room for one more of owner. Under bg_mu. */
static bool room_for(const rein_gateway *g, const char *owner)
{
    int mine = 0;

    for (const struct rein__gw_job *j = g->jobs; j; j = j->next)
        mine += strcmp(j->owner, owner) == 0;
    return g->bg_n < g->bg_max && mine < (g->bg_max / 2 > 0 ? g->bg_max / 2 : 1);
}

static struct rein__gw_job *job_new(rein_gateway *g, const struct rein_gateway_call *call,
                                    const char *owner)
{
    struct rein__gw_job *j = rein_calloc(1, sizeof(*j));

    if (!j)
        return NULL;
    j->g = g;
    j->refs = 2;
    j->orig = call;
    snprintf(j->owner, sizeof(j->owner), "%s", owner);
    if (call->trace_id && rein_trace_id_is_valid(call->trace_id))
        snprintf(j->trace_id, sizeof(j->trace_id), "%s", call->trace_id);
    else
        rein_trace_id_new(j->trace_id);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    rein_buf_init(&j->answer, 0);
    rein_buf_init(&j->accepted, 0);
    rein_buf_init(&j->frame, 0);
    j->body = rein_malloc(call->len + 1);
    j->headers = json_object();
    j->cancel = rein_cancel_new();
    if (!j->body || !j->headers || !j->cancel) {
        j->refs = 1;
        job_put(j);
        return NULL;
    }
    memcpy(j->body, call->body, call->len);
    j->body[call->len] = '\0';
    j->call = (struct rein_gateway_call){
        .api = call->api,
        .body = j->body,
        .len = call->len,
        .header = job_header,
        .header_data = j,
        .trace_id = j->trace_id,
        .cancel = j->cancel, /* not the client's: its going away ends nothing */
    };
    return j;
}

/* An error answer in the chat wire's shape, on the client's connection. */
static rein_err refuse_with(const struct rein_gateway_sink *sink, const struct rein__gw_err *e)
{
    struct rein_buf b;
    rein_err rc;

    rein_buf_init(&b, 0);
    rc = rein__gw_openai.error(e, NULL, &b);
    if (!rc)
        rc = sink->reply(sink->data, e->status, "application/json", b.ptr, b.len);
    rein_buf_release(&b);
    return rc;
}

static rein_err refuse(const struct rein_gateway_sink *sink, int status, const char *code,
                       const char *message)
{
    struct rein__gw_err e = {.status = status, .code = code};

    snprintf(e.message, sizeof(e.message), "%s", message);
    return refuse_with(sink, &e);
}

static rein_err refuse_param(const struct rein_gateway_sink *sink, int status, const char *param,
                             const char *fmt, ...)
{
    struct rein__gw_err e = {.status = status, .param = param};
    va_list ap;

    if (status == 400 || status == 404)
        e.type = "invalid_request_error";
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof(e.message), fmt, ap);
    va_end(ap);
    return refuse_with(sink, &e);
}

rein_err rein__gw_bg_serve(rein_gateway *g, const struct rein_gateway_call *call,
                           const struct rein_gateway_sink *sink, const char *owner)
{
    struct rein__gw_job *j;
    char why[200];
    rein_err rc;

    if (g->bg_max <= 0) {
        struct rein__gw_err e = {.status = 400, .param = "background"};
        snprintf(e.message, sizeof(e.message),
                 "This gateway runs no responses in the background (--gateway-background 0): "
                 "send 'background': false.");
        return refuse_with(sink, &e);
    }
    pthread_mutex_lock(&g->bg_mu);
    if (!room_for(g, owner)) {
        pthread_mutex_unlock(&g->bg_mu);
        snprintf(why, sizeof(why),
                 "Too many background responses in progress (at most %d, a client half of "
                 "them: --gateway-background): wait for one to end, or cancel one.",
                 g->bg_max);
        return refuse(sink, 429, "rate_limit_exceeded", why);
    }
    j = job_new(g, call, owner);
    if (j) {
        j->next = g->jobs;
        g->jobs = j;
        g->bg_n++;
        rein_metric_set(g->m.background, NULL, (double)g->bg_n);
    }
    pthread_mutex_unlock(&g->bg_mu);
    if (!j)
        return refuse(sink, 500, NULL, "out of memory");
    if (rein_pool_submit(g->bg_pool, job_run, j) != REIN_OK)
        job_run(j); /* on this thread, then: the client waits for all of it */
    pthread_mutex_lock(&j->mu);
    while (j->phase == READING)
        pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    /* the worker no longer writes what is read here: answer before acceptance, or accepted
     * (the job's log, made before, is read under its own mutex) */
    if (j->phase == ACCEPTED && j->log)
        rc = follow_job(j, call, sink);
    else if (j->phase == ACCEPTED)
        rc = sink->reply(sink->data, 200, "application/json", j->accepted.ptr, j->accepted.len);
    else if (j->status)
        rc = sink->reply(sink->data, j->status, j->ctype, j->answer.ptr, j->answer.len);
    else
        rc = refuse(sink, 500, NULL, "the background response ended without an answer");
    job_put(j);
    return rc == REIN_ECANCELED ? REIN_OK : rc;
}

rein_err rein__gw_bg_cancel(rein_gateway *g, const char *owner, const char *id)
{
    bool found = false;
    int64_t until = rein_now_ms() + 10000;

    pthread_mutex_lock(&g->bg_mu);
    for (struct rein__gw_job *j = g->jobs; j; j = j->next) {
        pthread_mutex_lock(&j->mu); /* phase and id are the worker's */
        if (j->phase == ACCEPTED && strcmp(j->owner, owner) == 0 && strcmp(j->id, id) == 0) {
            rein_cancel_trigger(j->cancel, "cancelled by the client");
            found = true;
        }
        pthread_mutex_unlock(&j->mu);
    }
    pthread_mutex_unlock(&g->bg_mu);
    /* the upstream call ends at once on its cancellation; the job then keeps it cancelled */
    while (found && rein_now_ms() < until) {
        found = false;
        pthread_mutex_lock(&g->bg_mu);
        for (struct rein__gw_job *j = g->jobs; j && !found; j = j->next) {
            pthread_mutex_lock(&j->mu);
            found = strcmp(j->owner, owner) == 0 && strcmp(j->id, id) == 0;
            pthread_mutex_unlock(&j->mu);
        }
        pthread_mutex_unlock(&g->bg_mu);
        if (found)
            rein_sleep_ms(10);
    }
    return found ? REIN_ETIMEDOUT : REIN_OK;
}
