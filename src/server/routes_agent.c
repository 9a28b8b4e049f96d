/*
 * The agent API (rein_server_add_agent_routes in include/rein/server.h; shapes in decision
 * 0008): POST /agent/chat runs one agent turn (include/rein/agent.h) for a conversation kept
 * in the store, and three routes reach a conversation from any instance: cancel, approvals,
 * and running or discarding a proposed call.
 *
 * A turn is a handler around rein_agent_run():
 *   1. take the conversation's lock as a lease (seed 001's input locking): a second message
 *      gets 409 with what the running turn is doing, whichever instance it reaches;
 *   2. load the stored messages into a history;
 *   3. run the turn with hooks that write every message and every ledger change to the store
 *      before the hook returns (so before the next model call), update the lock's state on
 *      each status event, record the events (text deltas excepted) as the trace, stream them
 *      as Server-Sent Events when asked, and wait for approvals through the store;
 *   4. release the lock, then answer with the result object (or send it as the last event).
 * The turn's cancellation handle is a child of the lease's (triggered by a cancel request
 * written to the store by any instance, or by a lost lock) and is also triggered by the
 * request's own handle (the client of an event stream went away, or the server is stopping
 * past its grace period); a turn stopped that way leaves its conversation in state
 * "interrupted".
 *
 * A process that dies mid-turn leaves its ledger entries pending. A recovery thread flags
 * them interrupted once the dead turn's lease has run out (rein_store_recover), and the next
 * turn on the conversation answers the calls that never got a result before asking the model
 * (the agent does that; the hooks below keep the flagged entries' first record).
 */
#include "server/server_int.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>

#define WHERE               "server/agent"
#define DEFAULT_LEASE_MS    30000
#define DEFAULT_APPROVAL_MS 60000
#define MAX_ANNOUNCED       32
#define STATE_IDLE          "idle"
#define STATE_INTERRUPTED   "interrupted"

struct rein_agent_api {
    rein_agent *agent;        /* borrowed */
    const rein_registry *reg; /* borrowed */
    rein_store *store;        /* borrowed */
    int64_t lease_ms;
    int64_t approval_timeout_ms;
    int64_t recover_ms;
    rein_metrics *metrics; /* borrowed; NULL: global */
    char provider[64];
    rein_metric *turns_total;
    rein_cancel *stop; /* ends the recovery thread */
    pthread_t recover_thread;
    bool has_thread;
};

/* What the store hooks need, shared by a turn and a proposal's call. */
struct persist {
    rein_store *store;
    const char *conv_id;
    const char *trace_id;
    /* Ids of calls the stored history left without a result (a turn that died): their ledger
     * entries are already in the store, flagged, and keep that first record. Object used as a
     * set; may be NULL. Read-only while a turn runs. */
    const json_t *open_calls;
};

/*
 * One running POST /agent/chat. Invariants: lease is held from before the history is loaded
 * until just before the answer; cancel is a child of the lease's cancel; announced lists the
 * approvals registered in the store by the event callback (guarded by mu, because the approval
 * callback runs on the threads of parallel calls).
 */
struct chat {
    rein_agent_api *api;
    rein_request *req;
    rein_sse *sse; /* NULL: a JSON answer */
    bool sse_gone;
    rein_store_lease *lease;
    rein_cancel *cancel;
    atomic_bool interrupted;
    char conv_id[REIN_ID_MAX];
    struct persist persist;
    pthread_mutex_t mu;
    char announced[MAX_ANNOUNCED][REIN_ID_MAX + 64];
    size_t nannounced;
};

/* ---- the store hooks ------------------------------------------------------------------- */

static rein_err save_message(void *userdata, size_t position, const json_t *msg, rein_error *err)
{
    const struct persist *p = userdata;
    char *text = rein_json_dumps(msg);
    int64_t pos = -1;
    rein_err rc;

    if (!text)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc =
        rein_store_message_append(p->store, p->conv_id, text, strlen(text), p->trace_id, &pos, err);
    rein_free(text);
    if (rc == REIN_OK && pos != (int64_t)position)
        rein_log(REIN_LOG_WARN, WHERE, "%s: message stored at %lld, the history has it at %zu",
                 p->conv_id, (long long)pos, position);
    return rc;
}

/* The ledger hook: a pending entry is put (written before the call runs), later changes
 * update it. */
static rein_err save_ledger(void *userdata, const json_t *entry)
{
    const struct persist *p = userdata;
    const char *status = json_string_value(json_object_get(entry, "status"));
    const json_t *step = json_object_get(entry, "step");
    const json_t *result = json_object_get(entry, "result");
    char *args = rein_json_dumps(json_object_get(entry, "args"));
    char *res = result && !json_is_null(result) ? rein_json_dumps(result) : NULL;
    struct rein_store_ledger_entry e = {
        .call_id = json_string_value(json_object_get(entry, "call_id")),
        .tool = json_string_value(json_object_get(entry, "tool")),
        .name_sent = json_string_value(json_object_get(entry, "sent_name")),
        .args = args ? args : "null",
        .result = res,
        .call_ms = rein_wall_ms(),
        .step = json_is_integer(step) ? (int)json_integer_value(step) : -1,
        .trace_id = p->trace_id,
    };
    rein_error err;
    rein_err rc;

    rein_error_clear(&err);
    if (!e.call_id || !e.tool || !rein_ledger_status_parse(status, &e.status)) {
        rc = REIN_EINVAL;
    } else if (e.status == REIN_LEDGER_PENDING) {
        /* A call a dead turn left open is already recorded (and flagged): keep that record;
         * the update that closes it follows. */
        rc = p->open_calls && json_object_get(p->open_calls, e.call_id)
                 ? REIN_OK
                 : rein_store_ledger_put(p->store, p->conv_id, &e, &err);
    } else {
        rc = rein_store_ledger_update(p->store, p->conv_id, e.call_id, e.status, res, 0, &err);
        /* A call refused before it could run is written once, already decided. */
        if (rc == REIN_ENOTFOUND)
            rc = rein_store_ledger_put(p->store, p->conv_id, &e, &err);
    }
    if (rc != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "%s: ledger entry %s not stored: %s", p->conv_id,
                 e.call_id ? e.call_id : "?", err.msg[0] ? err.msg : rein_strerror(rc));
    rein_free(args);
    rein_free(res);
    return rc;
}

/* ---- loading a conversation ------------------------------------------------------------ */

struct loader {
    rein_history *h;
    json_t *open; /* call ids without a result so far */
};

static int load_message(const struct rein_store_message *m, void *userdata)
{
    struct loader *l = userdata;
    json_t *msg = rein_json_parse(m->json, m->len, 0, NULL);
    const char *role = json_string_value(json_object_get(msg, "role"));
    const json_t *call;
    size_t i;
    int rc;

    if (!msg)
        return REIN_EPARSE;
    rc = rein_history_append(l->h, msg, NULL);
    if (rc == REIN_OK && role && strcmp(role, "assistant") == 0) {
        json_array_foreach(json_object_get(msg, "tool_calls"), i, call)
        {
            const char *id = json_string_value(json_object_get(call, "id"));
            if (id && json_object_set_new(l->open, id, json_true()))
                rc = REIN_ENOMEM;
        }
    } else if (rc == REIN_OK && role && strcmp(role, "tool") == 0) {
        const char *id = json_string_value(json_object_get(msg, "tool_call_id"));
        if (id)
            json_object_del(l->open, id);
    }
    json_decref(msg);
    return rc;
}

/*
 * Loads the stored messages of conv_id into a new history; *open receives the ids of calls
 * without a result. Returns NULL (err set) when a stored message cannot be read.
 */
static rein_history *load_history(rein_store *store, const char *conv_id, json_t **open,
                                  rein_error *err)
{
    struct loader l = {rein_history_new(), json_object()};
    rein_err rc;

    *open = NULL;
    if (!l.h || !l.open) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto fail;
    }
    rein_error_clear(err);
    rc = rein_store_messages_each(store, conv_id, 0, load_message, &l, err);
    if (rc != REIN_OK) {
        if (!err || !err->msg[0])
            rein_error_set(err, rc == REIN_ENOMEM ? REIN_ENOMEM : REIN_EINTERNAL,
                           "conversation %s: a stored message cannot be read", conv_id);
        goto fail;
    }
    *open = l.open;
    return l.h;
fail:
    rein_history_free(l.h);
    json_decref(l.open);
    return NULL;
}

/* ---- events, approvals, cancellation ---------------------------------------------------- */

static bool was_announced(struct chat *c, const char *call_id)
{
    bool found = false;

    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->nannounced && !found; i++)
        found = strcmp(c->announced[i], call_id) == 0;
    pthread_mutex_unlock(&c->mu);
    return found;
}

/*
 * Registers the approval in the store before the event reaches the client, so an answer
 * posted the moment the client sees approval_required finds it waiting.
 */
static void announce_approval(struct chat *c, const char *call_id)
{
    rein_error err;

    if (rein_store_approval_request(c->api->store, c->conv_id, call_id, &err) != REIN_OK) {
        rein_log(REIN_LOG_WARN, WHERE, "%s: approval of %s not announced: %s", c->conv_id, call_id,
                 err.msg);
        return;
    }
    pthread_mutex_lock(&c->mu);
    if (c->nannounced < MAX_ANNOUNCED && strlen(call_id) < sizeof(c->announced[0]))
        snprintf(c->announced[c->nannounced++], sizeof(c->announced[0]), "%s", call_id);
    pthread_mutex_unlock(&c->mu);
}

static void on_event(const struct rein_agent_event *ev, void *userdata)
{
    struct chat *c = userdata;
    const char *type = rein_agent_event_type_name(ev->type);
    struct rein_buf b;
    rein_error err;

    if (ev->type == REIN_AGENT_EV_APPROVAL_REQUIRED)
        announce_approval(c, ev->call_id);
    if (ev->type == REIN_AGENT_EV_STATUS &&
        rein_store_lease_set_state(c->lease, rein_agent_state_name(ev->state), ev->tool, &err) !=
            REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "%s: lock state not updated: %s", c->conv_id, err.msg);
    if (ev->type == REIN_AGENT_EV_ERROR && ev->kind && strcmp(ev->kind, "retry") == 0)
        rein_metrics_provider_retry(c->api->metrics, c->api->provider);
    rein_buf_init(&b, 0);
    if (rein_agent_event_write(ev, &b) != REIN_OK) {
        rein_buf_release(&b);
        return;
    }
    if (c->sse && !c->sse_gone && rein_sse_send(c->sse, type, b.ptr, b.len) == REIN_ECANCELED)
        c->sse_gone = true;
    /* The trace keeps what happened; text deltas are in the answer, and status changes are
     * the lock's state while the turn runs (each stored event is a commit). */
    if (ev->type != REIN_AGENT_EV_TEXT_DELTA && ev->type != REIN_AGENT_EV_STATUS) {
        struct rein_store_event se = {
            .conv_id = c->conv_id, .trace_id = c->persist.trace_id, .type = type, .payload = b.ptr};
        if (rein_store_event_add(c->api->store, &se, &err) != REIN_OK)
            rein_log(REIN_LOG_WARN, WHERE, "%s: event not stored: %s", c->conv_id, err.msg);
    }
    rein_buf_release(&b);
}

static rein_err approve(void *userdata, const struct rein_agent_approval *a, bool *approved,
                        rein_error *err)
{
    struct chat *c = userdata;
    rein_err rc;

    if (!was_announced(c, a->call_id)) {
        rc = rein_store_approval_request(c->api->store, c->conv_id, a->call_id, err);
        if (rc != REIN_OK)
            return rc;
    }
    return rein_store_approval_wait(c->api->store, c->conv_id, a->call_id, a->timeout_ms, a->cancel,
                                    approved, err);
}

/* The request's handle fired: the event stream's client left, or the server is stopping. */
static void on_request_cancel(void *userdata)
{
    struct chat *c = userdata;

    atomic_store(&c->interrupted, true);
    rein_cancel_trigger(c->cancel, rein_cancel_reason(rein_request_cancel(c->req)));
}

/* ---- POST /agent/chat ------------------------------------------------------------------ */

/* Takes the lock and makes sure the conversation exists; answers the request on failure. */
static bool open_conversation(struct chat *c, const char *message)
{
    rein_store *store = c->api->store;
    struct rein_store_lock_info held;
    rein_error err;
    rein_err rc;

    rc = rein_store_lease_acquire(store, c->conv_id, c->api->lease_ms, "thinking", &c->lease, &held,
                                  &err);
    if (rc == REIN_EBUSY) {
        rein_request_reply_busy(c->req, c->conv_id, &held);
        return false;
    }
    if (rc == REIN_OK)
        rein_error_clear(&err);
    if (rc == REIN_OK && !rein_store_conv_exists(store, c->conv_id, &err)) {
        char title[REIN__TITLE_MAX + 1];
        rein__chat_title(message, title);
        rc = err.code ? err.code
                      : rein_store_conv_create(store, c->conv_id, title[0] ? title : NULL, NULL,
                                               NULL, &err);
        if (rc == REIN_EEXIST)
            rc = REIN_OK;
    }
    if (rc != REIN_OK) {
        rein_store_lease_release(c->lease);
        c->lease = NULL;
        rein_request_reply_rein_error(c->req, &err);
        return false;
    }
    return true;
}

/* Sends the first event of a stream: which conversation and trace this turn belongs to. */
static void send_start(struct chat *c, const struct rein_agent_turn_opts *turn)
{
    struct rein_buf b;
    struct rein_jw w;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "type");
    rein_jw_str(&w, "start");
    rein_jw_key(&w, "seq");
    rein_jw_int(&w, 0);
    rein_jw_key(&w, "conversation_id");
    rein_jw_str(&w, c->conv_id);
    rein_jw_key(&w, "trace_id");
    rein_jw_str(&w, c->persist.trace_id);
    rein_jw_key(&w, "mode");
    rein_jw_str(&w, rein_agent_mode_name(turn->mode));
    rein_jw_key(&w, "verification");
    rein_jw_str(&w, rein_agent_verification_name(turn->verification));
    rein_jw_obj_end(&w);
    if (rein_jw_finish(&w) == REIN_OK &&
        rein_sse_send(c->sse, "start", b.ptr, b.len) == REIN_ECANCELED)
        c->sse_gone = true;
    rein_buf_release(&b);
}

/* Runs the turn (lock held, history loaded) and returns its result object (new), or NULL
 * with err set. */
static json_t *run_turn(struct chat *c, rein_history *h, const struct rein_agent_turn_opts *asked,
                        const char *message, rein_error *err)
{
    struct rein_agent_persist persist = {save_message, save_ledger, &c->persist};
    struct rein_agent_turn_opts turn = *asked;
    rein_agent_result *r = NULL;
    json_t *out = NULL;
    int hook;

    turn.cancel = c->cancel;
    turn.on_event = on_event;
    turn.event_data = c;
    turn.approve = approve;
    turn.approval_data = c;
    turn.approval_timeout_ms = c->api->approval_timeout_ms;
    turn.persist = &persist;
    turn.conversation_id = c->conv_id;
    turn.trace_id = c->persist.trace_id;
    hook = rein_cancel_on(rein_request_cancel(c->req), on_request_cancel, c);
    if (hook < 0) {
        rein_error_set(err, hook, "cannot watch the request");
        return NULL;
    }
    if (c->sse)
        send_start(c, &turn);
    if (rein_agent_run(c->api->agent, h, message, &turn, &r, err) == REIN_OK) {
        const char *labels[] = {rein_agent_mode_name(turn.mode),
                                rein_agent_stop_name(rein_agent_result_stop(r))};
        rein_metric_add(c->api->turns_total, labels, 1);
        out = rein_agent_result_json(r);
        if (!out)
            rein_error_set(err, REIN_ENOMEM, "out of memory writing the result");
    }
    rein_cancel_off(rein_request_cancel(c->req), hook);
    rein_agent_result_free(r);
    return out;
}

/* After the turn: the conversation's state for listings, then the lock. */
static void close_conversation(struct chat *c)
{
    rein_error err;

    if (rein_store_conv_update(c->api->store, c->conv_id, NULL,
                               atomic_load(&c->interrupted) ? STATE_INTERRUPTED : STATE_IDLE, NULL,
                               &err) != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "%s: state not updated: %s", c->conv_id, err.msg);
    rein_store_lease_release(c->lease);
    c->lease = NULL;
}

static void answer(struct chat *c, json_t *result, const rein_error *err)
{
    if (!c->sse) {
        if (result)
            rein_request_reply_json(c->req, 200, result);
        else
            rein_request_reply_rein_error(c->req, err);
        return;
    }
    if (!c->sse_gone) {
        rein_err rc;
        if (result) {
            rc = rein_sse_send_json(c->sse, "result", result);
        } else {
            json_t *e = json_pack("{s:s, s:s, s:s}", "type", "error", "kind", "internal", "message",
                                  err->msg[0] ? err->msg : rein_strerror(err->code));
            rc = e ? rein_sse_send_json(c->sse, "error", e) : REIN_ENOMEM;
            json_decref(e);
        }
        if (rc != REIN_OK)
            rein_log(REIN_LOG_DEBUG, WHERE, "%s: the result was not sent: %s", c->conv_id,
                     rein_strerror(rc));
    }
    json_decref(result);
}

static void handle_chat(rein_request *req, void *userdata)
{
    rein_agent_api *api = userdata;
    struct rein__chat_body cb;
    struct chat c;
    rein_history *h = NULL;
    json_t *open = NULL, *result = NULL, *details = json_array();
    rein_error err;

    memset(&cb, 0, sizeof(cb));
    if (!details) {
        rein_request_reply_error(req, 500, "internal", "out of memory");
        return;
    }
    if (!rein__chat_body_read(rein_request_json(req), &cb, details)) {
        rein__reply_problems(req, details);
        return;
    }
    json_decref(details);
    memset(&c, 0, sizeof(c));
    c.api = api;
    c.req = req;
    atomic_init(&c.interrupted, false);
    pthread_mutex_init(&c.mu, NULL);
    if (cb.conv_id)
        snprintf(c.conv_id, sizeof(c.conv_id), "%s", cb.conv_id);
    else
        rein_id_new("conv_", c.conv_id);
    c.persist.store = api->store;
    c.persist.conv_id = c.conv_id;
    c.persist.trace_id = rein_request_trace_id(req);
    if (!open_conversation(&c, cb.message))
        goto out;
    rein_error_clear(&err);
    h = load_history(api->store, c.conv_id, &open, &err);
    c.persist.open_calls = open;
    c.cancel = h ? rein_cancel_new_child(rein_store_lease_cancel(c.lease)) : NULL;
    if (h && !c.cancel)
        rein_error_set(&err, REIN_ENOMEM, "out of memory");
    if (!c.cancel) {
        close_conversation(&c);
        rein_request_reply_rein_error(req, &err);
        goto out;
    }
    if (rein_request_set_header(req, "X-Conversation-Id", c.conv_id) != REIN_OK ||
        (rein_request_wants_sse(req) && !(c.sse = rein_request_sse_start(req, &err)))) {
        close_conversation(&c);
        rein_request_reply_error(req, 500, "internal", "the answer could not be started");
        goto out;
    }
    result = run_turn(&c, h, &cb.turn, cb.message, &err);
    /* The lock goes first, so a client that sends the next message as soon as it has this
     * answer does not find the conversation busy. */
    close_conversation(&c);
    answer(&c, result, &err);
out:
    rein_cancel_unref(c.cancel);
    rein_history_free(h);
    json_decref(open);
    pthread_mutex_destroy(&c.mu);
}

/* ---- POST /agent/conversations/{id}/cancel ----------------------------------------------- */

/* Reads the optional body {"reason": "..."}; false (and answered) when it is malformed. */
static bool read_cancel(rein_request *req, char reason[REIN__REASON_MAX])
{
    size_t len = 0;
    const char *text = rein_request_body(req, &len);
    json_t *body = NULL, *details;
    rein_error perr;
    bool ok;

    if (len > 0 && !rein__http_is_json_type(rein_request_header(req, "Content-Type"))) {
        rein_request_reply_error(req, 415, "unsupported_media_type",
                                 "send the body as Content-Type: application/json (or no body)");
        return false;
    }
    if (len > 0 && !(body = rein_json_parse(text, len, JSON_REJECT_DUPLICATES, &perr))) {
        rein_request_reply_error(req, 400, "invalid_json",
                                 "the body is not valid JSON: line %d, column %d: %s", perr.line,
                                 perr.column, perr.msg);
        return false;
    }
    details = json_array();
    if (!details) {
        json_decref(body);
        rein_request_reply_error(req, 500, "internal", "out of memory");
        return false;
    }
    ok = rein__cancel_body_read(body, reason, details);
    json_decref(body);
    if (!ok)
        rein__reply_problems(req, details);
    else
        json_decref(details);
    return ok;
}

static void handle_cancel(rein_request *req, void *userdata)
{
    rein_agent_api *api = userdata;
    const char *id = rein_request_param(req, "id");
    char reason[REIN__REASON_MAX];
    struct rein_store_lock_info info;
    json_t *lock = NULL;
    rein_error err;
    rein_err rc;

    if (!read_cancel(req, reason))
        return;
    rc = rein_store_cancel_request(api->store, id, reason, &err);
    if (rc == REIN_ESTATE) {
        rein_error e2;
        rein_error_clear(&e2);
        if (rein_store_conv_exists(api->store, id, &e2))
            rein_request_reply_error(req, 409, "not_running",
                                     "no turn is running in conversation %s", id);
        else if (e2.code)
            rein_request_reply_rein_error(req, &e2);
        else
            rein_request_reply_error(req, 404, "not_found", "there is no conversation %s", id);
        return;
    }
    if (rc != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    if (rein_store_lock_get(api->store, id, &info, &err) == REIN_OK)
        lock = rein_lock_info_json(&info);
    rein_request_reply_json(req, 202,
                            json_pack("{s:s, s:b, s:o}", "conversation_id", id, "cancel_requested",
                                      1, "lock", lock ? lock : json_null()));
}

/* ---- POST /agent/conversations/{id}/approvals/{call_id} ---------------------------------- */

static void handle_approval(rein_request *req, void *userdata)
{
    rein_agent_api *api = userdata;
    const char *id = rein_request_param(req, "id");
    const char *call_id = rein_request_param(req, "call_id");
    json_t *details = json_array();
    bool yes = false;
    rein_error err;
    rein_err rc;

    if (!details) {
        rein_request_reply_error(req, 500, "internal", "out of memory");
        return;
    }
    if (!rein__approval_body_read(rein_request_json(req), &yes, details)) {
        rein__reply_problems(req, details);
        return;
    }
    json_decref(details);
    rc = rein_store_approval_post(api->store, id, call_id, yes, &err);
    if (rc == REIN_EEXIST) {
        rein_request_reply_error(req, 409, "already_answered", "%s", err.msg);
        return;
    }
    if (rc != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    rein_request_reply_json(
        req, 200,
        json_pack("{s:s, s:s, s:b}", "conversation_id", id, "call_id", call_id, "approved", yes));
}

/* ---- POST /agent/conversations/{id}/proposals/{call_id} ---------------------------------- */

/* A proposed call found in the stored history. */
struct proposal {
    const char *call_id;
    json_t *call;  /* the assistant's tool call {id, name, arguments} (new), or NULL */
    bool proposed; /* its tool message says "proposed" */
};

static int find_proposal(const struct rein_store_message *m, void *userdata)
{
    struct proposal *p = userdata;
    json_t *msg = rein_json_parse(m->json, m->len, 0, NULL);
    const char *role = json_string_value(json_object_get(msg, "role"));
    const json_t *call;
    size_t i;

    if (role && strcmp(role, "assistant") == 0) {
        json_array_foreach(json_object_get(msg, "tool_calls"), i, call)
        {
            if (strcmp(json_string_value(json_object_get(call, "id")) ?: "", p->call_id) == 0) {
                json_decref(p->call);
                p->call = json_incref((json_t *)call);
                p->proposed = false;
            }
        }
    } else if (role && strcmp(role, "tool") == 0 &&
               strcmp(json_string_value(json_object_get(msg, "tool_call_id")) ?: "", p->call_id) ==
                   0) {
        const char *content = json_string_value(json_object_get(msg, "content"));
        json_t *c = content ? rein_json_parse(content, strlen(content), 0, NULL) : NULL;
        const char *status = json_string_value(json_object_get(c, "status"));
        p->proposed = p->call && status && strcmp(status, "proposed") == 0;
        json_decref(c);
    }
    json_decref(msg);
    return 0;
}

struct ledger_find {
    const char *call_id;
    char status[16];
};

static int find_entry(const char *conv_id, const struct rein_store_ledger_entry *e, void *userdata)
{
    struct ledger_find *f = userdata;

    (void)conv_id;
    if (strcmp(e->call_id, f->call_id) != 0)
        return 0;
    snprintf(f->status, sizeof(f->status), "%s", rein_ledger_status_name(e->status));
    return 1;
}

/* Runs the proposed call through the pipeline, recorded in the ledger. New result or NULL. */
static rein_call_result *run_proposal(rein_agent_api *api, rein_request *req, struct persist *p,
                                      const json_t *call, rein_cancel *cancel, rein_error *err)
{
    const char *args = json_string_value(json_object_get(call, "arguments"));
    struct rein_call_input in = {
        .call_id = json_string_value(json_object_get(call, "id")),
        .name = json_string_value(json_object_get(call, "name")),
        .args_text = args ? args : "",
        .args_len = args ? strlen(args) : 0,
        .trace_id = rein_request_trace_id(req),
    };
    rein_ledger *ledger = rein_ledger_new();
    struct rein_call_opts opts = {.ledger = ledger, .cancel = cancel};
    rein_call_result *res = NULL;

    if (!ledger) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    rein_ledger_set_hook(ledger, save_ledger, p);
    if (rein_call_run(api->reg, &in, &opts, &res, err) == REIN_OK)
        rein_metrics_tool_call(api->metrics, rein_call_result_tool_name(res),
                               rein_call_status_name(rein_call_result_status(res)));
    rein_ledger_free(ledger);
    return res;
}

/* Records a discarded proposal in the ledger as a call that was denied. */
static rein_err discard_proposal(struct persist *p, const json_t *call, rein_error *err)
{
    const char *args = json_string_value(json_object_get(call, "arguments"));
    json_t *parsed = args && args[0] ? rein_json_parse(args, strlen(args), 0, NULL) : NULL;
    char *args_text = rein_json_dumps(parsed ? parsed : json_object_get(call, "arguments"));
    int64_t now = rein_wall_ms();
    struct rein_store_ledger_entry e = {
        .call_id = json_string_value(json_object_get(call, "id")),
        .tool = json_string_value(json_object_get(call, "name")),
        .args = args_text ? args_text : "{}",
        .status = REIN_LEDGER_INVALID,
        .result = "{\"code\":\"denied\",\"message\":\"a person discarded the proposed call, so "
                  "it was not run\",\"details\":[]}",
        .call_ms = now,
        .response_ms = now,
        .step = -1,
        .trace_id = p->trace_id,
    };
    rein_err rc = rein_store_ledger_put(p->store, p->conv_id, &e, err);

    json_decref(parsed);
    rein_free(args_text);
    return rc;
}

/* Tells the model, in the conversation, what became of its proposal. */
static rein_err note_proposal(struct persist *p, const json_t *call, bool run,
                              rein_call_result *res, rein_error *err)
{
    const char *id = json_string_value(json_object_get(call, "id"));
    const char *tool = json_string_value(json_object_get(call, "name"));
    char *result = run && res ? rein_json_dumps(rein_call_result_json(res)) : NULL;
    char *text = run ? rein_asprintf("[rein] A person ran the proposed call %s (%s). Its result: "
                                     "%s",
                                     id, tool, result ? result : "null")
                     : rein_asprintf("[rein] A person discarded the proposed call %s (%s); it "
                                     "was not run.",
                                     id, tool);
    json_t *msg = text ? json_pack("{s:s, s:s}", "role", "user", "content", text) : NULL;
    char *json = msg ? rein_json_dumps(msg) : NULL;
    rein_err rc = json ? rein_store_message_append(p->store, p->conv_id, json, strlen(json),
                                                   p->trace_id, NULL, err)
                       : rein_error_set(err, REIN_ENOMEM, "out of memory");

    rein_free(json);
    json_decref(msg);
    rein_free(text);
    rein_free(result);
    return rc;
}

static bool read_action(rein_request *req, bool *run)
{
    json_t *details = json_array();

    if (!details) {
        rein_request_reply_error(req, 500, "internal", "out of memory");
        return false;
    }
    if (!rein__proposal_body_read(rein_request_json(req), run, details)) {
        rein__reply_problems(req, details);
        return false;
    }
    json_decref(details);
    return true;
}

/*
 * An answer decided while the conversation's lock is held and sent after it is released, so
 * a client that acts on the answer at once never finds the conversation still busy.
 */
struct answer {
    int status;
    const char *code;
    char msg[320];
    json_t *body; /* a 2xx body (new), or NULL */
};

static void answer_error(struct answer *a, int status, const char *code, const char *fmt, ...)
    REIN_PRINTF(4, 5);

static void answer_error(struct answer *a, int status, const char *code, const char *fmt, ...)
{
    va_list ap;

    a->status = status;
    a->code = code;
    va_start(ap, fmt);
    vsnprintf(a->msg, sizeof(a->msg), fmt, ap);
    va_end(ap);
}

static void answer_rein_error(struct answer *a, const rein_error *err)
{
    int code = err->code ? err->code : REIN_EINTERNAL;

    answer_error(a, rein_http_status_for(code), rein_http_error_code_for(code), "%s",
                 err->msg[0] ? err->msg : rein_strerror(code));
}

static void answer_send(rein_request *req, struct answer *a)
{
    if (a->body)
        rein_request_reply_json(req, a->status, a->body);
    else
        rein_request_reply_error(req, a->status, a->code, "%s", a->msg);
    a->body = NULL;
}

/* Finds the proposal and checks it can be acted on; false with the answer set otherwise. */
static bool check_proposal(rein_agent_api *api, const char *id, struct proposal *p,
                           struct answer *a)
{
    struct ledger_find f = {.call_id = p->call_id};
    rein_error err;
    rein_err rc;

    rein_error_clear(&err);
    if (!rein_store_conv_exists(api->store, id, &err)) {
        if (err.code)
            answer_rein_error(a, &err);
        else
            answer_error(a, 404, "not_found", "there is no conversation %s", id);
        return false;
    }
    rc = rein_store_messages_each(api->store, id, 0, find_proposal, p, &err);
    if (rc == REIN_OK)
        rc = rein_store_ledger_each(api->store, id, find_entry, &f, &err);
    if (rc != REIN_OK && rc != 1) {
        answer_rein_error(a, &err);
        return false;
    }
    if (!p->call || !p->proposed) {
        answer_error(a, 404, "not_found", "conversation %s has no proposed call %s", id,
                     p->call_id);
        return false;
    }
    if (f.status[0]) {
        answer_error(a, 409, "already_resolved",
                     "the proposed call %s was already acted on (ledger status %s)", p->call_id,
                     f.status);
        return false;
    }
    return true;
}

/* The request's handle fired (the server is stopping): the proposal's call stops too. */
static void trigger_cancel(void *userdata)
{
    rein_cancel_trigger(userdata, "the request ended (the server is stopping)");
}

/* Runs (or discards) the checked proposal and records the outcome; the answer says how. */
static void act_on_proposal(rein_agent_api *api, rein_request *req, rein_store_lease *lease,
                            const struct proposal *p, bool run, struct answer *a)
{
    const char *id = rein_request_param(req, "id");
    const char *tool = json_string_value(json_object_get(p->call, "name"));
    struct persist per = {api->store, id, rein_request_trace_id(req), NULL};
    rein_call_result *res = NULL;
    rein_cancel *cancel = NULL;
    rein_error err;
    rein_err rc;

    rein_error_clear(&err);
    if (rein_store_lease_set_state(lease, "executing", tool, &err) != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "%s: lock state not updated: %s", id, err.msg);
    rein_error_clear(&err);
    if (run) {
        int hook = -1;
        cancel = rein_cancel_new_child(rein_store_lease_cancel(lease));
        if (cancel)
            hook = rein_cancel_on(rein_request_cancel(req), trigger_cancel, cancel);
        res = hook > 0 ? run_proposal(api, req, &per, p->call, cancel, &err) : NULL;
        if (hook > 0)
            rein_cancel_off(rein_request_cancel(req), hook);
        rc = res ? REIN_OK : (err.code ? err.code : REIN_ENOMEM);
    } else {
        rc = discard_proposal(&per, p->call, &err);
    }
    if (rc == REIN_OK)
        rc = note_proposal(&per, p->call, run, res, &err);
    if (rc != REIN_OK) {
        answer_rein_error(a, &err);
    } else {
        a->status = 200;
        a->body = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O}", "conversation_id", id, "call_id",
                            p->call_id, "tool", tool, "action", run ? "run" : "discard", "status",
                            run ? rein_call_status_name(rein_call_result_status(res)) : "invalid",
                            "result", run ? rein_call_result_json(res) : json_null());
        if (!a->body)
            answer_error(a, 500, "internal", "out of memory");
    }
    rein_call_result_free(res);
    rein_cancel_unref(cancel);
}

static void handle_proposal(rein_request *req, void *userdata)
{
    rein_agent_api *api = userdata;
    const char *id = rein_request_param(req, "id");
    struct proposal p = {.call_id = rein_request_param(req, "call_id")};
    struct rein_store_lock_info held;
    struct answer a = {0};
    rein_store_lease *lease = NULL;
    bool run = false;
    rein_error err;
    rein_err rc;

    if (!read_action(req, &run))
        return;
    rc = rein_store_lease_acquire(api->store, id, api->lease_ms, "executing", &lease, &held, &err);
    if (rc == REIN_EBUSY) {
        rein_request_reply_busy(req, id, &held);
        return;
    }
    if (rc != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    if (check_proposal(api, id, &p, &a))
        act_on_proposal(api, req, lease, &p, run, &a);
    rein_store_lease_release(lease);
    answer_send(req, &a);
    json_decref(p.call);
}

/* ---- the API object -------------------------------------------------------------------- */

static void *recover_main(void *arg)
{
    rein_agent_api *api = arg;

    while (!rein_cancel_wait(api->stop, api->recover_ms)) {
        rein_error err;
        int flagged = 0;
        if (rein_store_recover(api->store, &flagged, &err) != REIN_OK)
            rein_log(REIN_LOG_WARN, WHERE, "recovery: %s", err.msg);
        else if (flagged > 0)
            rein_log(REIN_LOG_INFO, WHERE,
                     "recovery: %d call(s) left pending by a stopped process flagged interrupted",
                     flagged);
    }
    return NULL;
}

rein_agent_api *rein_agent_api_new(rein_agent *agent, const rein_registry *reg, rein_store *store,
                                   const struct rein_agent_api_opts *opts, rein_error *err)
{
    static const char *const labels[] = {"mode", "stop_reason", NULL};
    rein_agent_api *api;

    if (!agent || !reg || !store) {
        rein_error_set(err, REIN_EINVAL, "the agent API needs an agent, a registry and a store");
        return NULL;
    }
    api = rein_calloc(1, sizeof(*api));
    if (!api) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    api->agent = agent;
    api->reg = reg;
    api->store = store;
    api->lease_ms = opts && opts->lease_ms > 0 ? opts->lease_ms : DEFAULT_LEASE_MS;
    api->approval_timeout_ms =
        opts && opts->approval_timeout_ms > 0 ? opts->approval_timeout_ms : DEFAULT_APPROVAL_MS;
    api->recover_ms = opts && opts->recover_ms ? opts->recover_ms : api->lease_ms / 2;
    api->metrics = opts ? opts->metrics : NULL;
    snprintf(api->provider, sizeof(api->provider), "%s",
             opts && opts->provider_name ? opts->provider_name : "unknown");
    api->turns_total = rein_metrics_family(api->metrics, REIN_METRIC_COUNTER, "rein_turns_total",
                                           "Agent turns served over HTTP, by mode and stop reason",
                                           labels, NULL, 0, err);
    api->stop = rein_cancel_new();
    if (!api->turns_total || !api->stop)
        goto fail;
    if (api->recover_ms > 0) {
        if (pthread_create(&api->recover_thread, NULL, recover_main, api) != 0) {
            rein_error_set(err, REIN_ENOMEM, "cannot start the recovery thread");
            goto fail;
        }
        api->has_thread = true;
    }
    return api;
fail:
    if (err && !err->code)
        rein_error_set(err, REIN_ENOMEM, "out of memory");
    rein_agent_api_free(api);
    return NULL;
}

void rein_agent_api_free(rein_agent_api *api)
{
    if (!api)
        return;
    if (api->has_thread) {
        rein_cancel_trigger(api->stop, "stopping");
        pthread_join(api->recover_thread, NULL);
    }
    rein_cancel_unref(api->stop);
    rein_free(api);
}

rein_err rein_server_add_agent_routes(rein_server *srv, rein_agent_api *api, rein_error *err)
{
    rein_err rc;

    if (!srv || !api)
        return rein_error_set(err, REIN_EINVAL, "the agent routes need a server and an API");
    rc = rein_server_route(srv, "POST", "/agent/chat", REIN_ROUTE_JSON_BODY, handle_chat, api, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "POST", "/agent/conversations/{id}/cancel", 0, handle_cancel,
                               api, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "POST", "/agent/conversations/{id}/approvals/{call_id}",
                               REIN_ROUTE_JSON_BODY, handle_approval, api, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "POST", "/agent/conversations/{id}/proposals/{call_id}",
                               REIN_ROUTE_JSON_BODY, handle_proposal, api, err);
    return rc;
}
