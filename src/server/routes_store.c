/*
 * The routes that need only the store (rein_server_add_store_routes in include/rein/server.h):
 * the conversation list, one conversation with its messages, ledger and lock state, deletion,
 * and the replay of a conversation's recorded events (docs/decisions/0012). Agent routes
 * (chat, cancel, approvals) are added beside these; they use the same request and store APIs.
 */
#include "server/server_int.h"

#include <inttypes.h>
#include <limits.h>
#include <string.h>

#define EVENTS_BATCH   64   /* events read from the store at once */
#define EVENTS_WAIT_MS 1000 /* how long a follower sleeps before it looks at the lock again */

static void list_conversations(rein_request *req, void *userdata)
{
    rein_store *store = userdata;
    const char *limit_text = rein_request_query(req, "limit");
    const char *cursor = rein_request_query(req, "cursor");
    const char *q = rein_request_query(req, "q");
    long limit = 20;
    json_t *page = NULL;
    rein_error err;
    rein_err rc;

    if (limit_text && !rein__http_parse_uint(limit_text, 1, 100, &limit)) {
        rein_request_reply_error(req, 400, "bad_request", "limit must be a number from 1 to 100");
        return;
    }
    rc = q ? rein_store_conv_find(store, q, cursor, (unsigned)limit, &page, &err)
           : rein_store_conv_list(store, cursor, (unsigned)limit, &page, &err);
    if (rc != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    rein_request_reply_json(req, 200, page);
}

static void get_conversation(rein_request *req, void *userdata)
{
    rein_store *store = userdata;
    const char *id = rein_request_param(req, "id");
    struct rein_store_lock_info info;
    json_t *conv = NULL, *lock = NULL;
    rein_error err;
    rein_err rc;

    if (rein_store_conv_export(store, id, &conv, &err) != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    rc = rein_store_lock_get(store, id, &info, &err);
    if (rc == REIN_OK)
        lock = rein_lock_info_json(&info);
    else if (rc != REIN_ENOTFOUND) {
        json_decref(conv);
        rein_request_reply_rein_error(req, &err);
        return;
    }
    if (json_object_set_new(conv, "lock", lock ? lock : json_null())) {
        json_decref(conv);
        rein_request_reply_error(req, 500, "internal", "out of memory");
        return;
    }
    rein_request_reply_json(req, 200, conv);
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

struct follow {
    rein_sse *sse;
    int64_t last; /* the last sequence id sent */
    size_t sent;  /* in this batch */
    bool gone;    /* the client left */
};

static int send_stored(const struct rein_store_event *ev, void *userdata)
{
    struct follow *f = userdata;
    char id[24];

    snprintf(id, sizeof(id), "%" PRId64, ev->seq);
    if (rein_sse_send_event(f->sse, id, ev->type, ev->payload, strlen(ev->payload), 0) != REIN_OK) {
        f->gone = true;
        return 1;
    }
    f->last = ev->seq;
    f->sent++;
    return 0;
}

/* Where the client resumes: Last-Event-ID, else ?after=N, else 0 (everything kept). */
static bool resume_point(rein_request *req, int64_t *after)
{
    const char *text = rein_request_header(req, "Last-Event-ID");
    long v = 0;

    if (!text)
        text = rein_request_query(req, "after");
    if (text && !rein__http_parse_uint(text, 0, LONG_MAX, &v)) {
        rein_request_reply_error(req, 400, "bad_request",
                                 "Last-Event-ID (or after) must be an event id: a number >= 0");
        return false;
    }
    *after = v;
    return true;
}

/* True while a turn holds the conversation's lock (errors count as held: keep following). */
static bool turn_running(rein_store *store, const char *id)
{
    struct rein_store_lock_info info;
    rein_error err;

    return rein_store_lock_get(store, id, &info, &err) != REIN_ENOTFOUND;
}

/*
 * The conversation's recorded events after the resume point, each with its sequence id as the
 * SSE id; while a turn runs the stream follows it, and it ends once no turn runs and every
 * event is sent. The lock is looked at before reading: a turn records its last event (the
 * result) before it releases the lock, so nothing of a finished turn is missed.
 */
static void stream_events(rein_request *req, void *userdata)
{
    rein_store *store = userdata;
    const char *id = rein_request_param(req, "id");
    struct follow f = {0};
    rein_error err;
    rein_err rc;

    if (!resume_point(req, &f.last))
        return;
    rein_error_clear(&err);
    if (!rein_store_conv_exists(store, id, &err)) {
        if (err.code)
            rein_request_reply_rein_error(req, &err);
        else
            rein_request_reply_error(req, 404, "not_found", "there is no conversation %s", id);
        return;
    }
    f.sse = rein_request_sse_start(req, &err);
    if (!f.sse) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    for (;;) {
        bool running = turn_running(store, id);
        do {
            f.sent = 0;
            rc = rein_store_events_after(store, id, f.last, EVENTS_BATCH, send_stored, &f, &err);
        } while (rc == REIN_OK && f.sent == EVENTS_BATCH);
        if (f.gone || (rc != REIN_OK && rc != 1) || !running)
            break;
        rc = rein_store_events_wait(store, id, f.last, EVENTS_WAIT_MS, rein_request_cancel(req),
                                    NULL, &err);
        if (rc != REIN_OK && rc != REIN_ETIMEDOUT)
            break;
    }
    if (rc != REIN_OK && rc != 1 && rc != REIN_ETIMEDOUT && rc != REIN_ECANCELED && !f.gone)
        rein_log(REIN_LOG_WARN, "server/events", "%s: events not sent: %s", id, err.msg);
}

rein_err rein_server_add_store_routes(rein_server *srv, rein_store *store, rein_error *err)
{
    rein_err rc =
        rein_server_route(srv, "GET", "/agent/conversations", 0, list_conversations, store, err);

    if (rc == REIN_OK)
        rc = rein_server_route(srv, "GET", "/agent/conversations/{id}", 0, get_conversation, store,
                               err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "PATCH", "/agent/conversations/{id}", REIN_ROUTE_JSON_BODY,
                               patch_conversation, store, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "DELETE", "/agent/conversations/{id}", 0, delete_conversation,
                               store, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "GET", "/agent/conversations/{id}/events", 0, stream_events,
                               store, err);
    return rc;
}
