/*
 * The agent API (rein_server_add_agent_routes in include/rein/server.h; shapes in decision
 * 0008): POST /agent/chat runs one agent turn for a conversation kept in the store, and three
 * routes reach a conversation from any instance: cancel, approvals, and running or discarding
 * a proposed call.
 *
 * This file is the HTTP adapter over the session module (include/rein/session.h), which owns
 * the turn of a stored conversation: the lease, the history, persisting messages and ledger
 * changes, approvals through the store, recording events, recovery. Here a request becomes
 * session options, a busy conversation becomes 409 with what its turn is doing, the session's
 * events become Server-Sent Events (with the conversation's sequence id as the event id when
 * the event is already written, so a client can resume from the store), and the result becomes
 * the answer, sent after the session is closed so a client that sends the next message at once
 * never finds the conversation busy.
 *
 * The request's own cancellation handle (the client went away, seen at once on JSON and event
 * stream requests alike; or the server is stopping past its grace period) interrupts the
 * session: the turn stops and the conversation is left in state "interrupted". Whether a
 * client that went away stops its turn is the disconnect policy, decided in on_request_cancel
 * and nowhere else (rein_agent_api_opts.disconnect_cancels_turn, or the request's
 * ?cancel_on_disconnect): by default a turn outlives its client, and whoever comes back reads
 * it from the store (GET /agent/conversations/{id}/events).
 */
#include "server/server_int.h"

#include <rein/session.h>

#include <inttypes.h>
#include <string.h>

#define DEFAULT_LEASE_MS    30000
#define DEFAULT_APPROVAL_MS 60000

struct rein_agent_api {
    rein_agent *agent;        /* borrowed */
    const rein_registry *reg; /* borrowed */
    rein_store *store;        /* borrowed */
    int64_t lease_ms;
    int64_t approval_timeout_ms;
    rein_metrics *metrics; /* borrowed; NULL: global */
    char provider[64];
    rein_metric *turns_total;
    rein_session_recovery *recovery; /* NULL: recovery only at store open */
    bool disconnect_cancels_turn;    /* the disconnect policy: see rein_agent_api_opts */
};

/* One running POST /agent/chat. sse is NULL for a JSON answer. */
struct chat {
    rein_agent_api *api;
    rein_request *req;
    rein_session *session;
    rein_sse *sse;
    bool sse_gone;
    bool cancel_on_disconnect; /* the policy for this request */
};

/* ---- POST /agent/chat ------------------------------------------------------------------ */

/* Sends one event; a written one carries its sequence id, so the client can resume after it. */
static void send_event(struct chat *c, const char *type, const char *json, size_t len, int64_t seq)
{
    char id[24];
    rein_err rc;

    if (!c->sse || c->sse_gone)
        return;
    snprintf(id, sizeof(id), "%" PRId64, seq);
    rc = seq > 0 ? rein_sse_send_event(c->sse, id, type, json, len, 0)
                 : rein_sse_send(c->sse, type, json, len);
    if (rc == REIN_ECANCELED)
        c->sse_gone = true;
}

static void on_event(const struct rein_session_event *ev, void *userdata)
{
    struct chat *c = userdata;
    const struct rein_agent_event *a = ev->agent;

    if (a && a->type == REIN_AGENT_EV_ERROR && a->kind && strcmp(a->kind, "retry") == 0)
        rein_metrics_provider_retry(c->api->metrics, c->api->provider);
    send_event(c, ev->type, ev->json, ev->len, ev->seq);
}

/* The request's handle fired: the client left, or the server is stopping. The disconnect
 * policy: a client that left interrupts its turn only when this request asked for that. */
static void on_request_cancel(void *userdata)
{
    struct chat *c = userdata;

    if (!c->cancel_on_disconnect && rein_request_client_gone(c->req))
        return;
    rein_session_interrupt(c->session, rein_cancel_reason(rein_request_cancel(c->req)));
}

/* The disconnect policy of this request: ?cancel_on_disconnect=1|0 (true|false), else the
 * API's switch. False (and answered) when the value is neither. */
static bool read_policy(rein_request *req, const rein_agent_api *api, bool *cancel)
{
    const char *v = rein_request_query(req, "cancel_on_disconnect");

    *cancel = api->disconnect_cancels_turn;
    if (!v)
        return true;
    if (strcmp(v, "1") == 0 || strcmp(v, "true") == 0)
        *cancel = true;
    else if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0)
        *cancel = false;
    else {
        rein_request_reply_error(req, 400, "bad_request",
                                 "cancel_on_disconnect must be 1 or 0 (true or false)");
        return false;
    }
    return true;
}

/*
 * Runs the turn in the open session; its result object's JSON text goes into out (the text
 * the session recorded, so it is written once). false with err set when there is none.
 */
static bool run_turn(struct chat *c, const struct rein__chat_body *cb, struct rein_buf *out,
                     rein_error *err)
{
    struct rein_agent_turn_opts turn = cb->turn;
    rein_agent_result *r = NULL;
    bool ok = false;
    int hook;

    turn.approval_timeout_ms = c->api->approval_timeout_ms;
    hook = rein_cancel_on(rein_request_cancel(c->req), on_request_cancel, c);
    if (hook < 0) {
        rein_error_set(err, hook, "cannot watch the request");
        return false;
    }
    if (rein_session_run(c->session, c->api->agent, cb->message, &turn, &r, err) == REIN_OK) {
        const char *labels[] = {rein_agent_mode_name(turn.mode),
                                rein_agent_stop_name(rein_agent_result_stop(r))};
        size_t len = 0;
        const char *text = rein_session_result_text(c->session, &len);
        json_t *j = text ? NULL : rein_agent_result_json(r);
        rein_metric_add(c->api->turns_total, labels, 1);
        if (text)
            ok = rein_buf_add(out, text, len) == REIN_OK;
        else
            ok = j && rein_json_dump(out, j) == REIN_OK;
        json_decref(j);
        if (!ok)
            rein_error_set(err, REIN_ENOMEM, "out of memory writing the result");
    }
    rein_cancel_off(rein_request_cancel(c->req), hook);
    rein_agent_result_free(r);
    return ok;
}

/* Answers with the result (its JSON text, NULL: the error), after the session is closed. */
static void answer(struct chat *c, struct rein_buf *result, int64_t seq, const rein_error *err)
{
    if (!c->sse) {
        if (result && rein_buf_addch(result, '\n') == REIN_OK)
            rein_request_reply(c->req, 200, "application/json", result->ptr, result->len);
        else if (result)
            rein_request_reply_error(c->req, 500, "internal", "could not encode the answer");
        else
            rein_request_reply_rein_error(c->req, err);
        return;
    }
    if (result) {
        send_event(c, "result", result->ptr, result->len, seq);
    } else {
        json_t *e = json_pack("{s:s, s:s, s:s}", "type", "error", "kind", "internal", "message",
                              err->msg[0] ? err->msg : rein_strerror(err->code));
        char *text = e ? rein_json_dumps(e) : NULL;
        if (text)
            send_event(c, "error", text, strlen(text), 0);
        rein_free(text);
        json_decref(e);
    }
}

static void handle_chat(rein_request *req, void *userdata)
{
    rein_agent_api *api = userdata;
    struct rein__chat_body cb;
    struct rein_store_lock_info held;
    struct chat c = {.api = api, .req = req};
    struct rein_session_opts so = {.lease_ms = api->lease_ms,
                                   .trace_id = rein_request_trace_id(req),
                                   .on_event = on_event,
                                   .reg = api->reg};
    struct rein_buf text;
    json_t *details = json_array();
    bool kept;
    int64_t seq;
    rein_error err, ignored;
    rein_err rc;

    memset(&cb, 0, sizeof(cb));
    if (!details) {
        rein_request_reply_error(req, 500, "internal", "out of memory");
        return;
    }
    if (!read_policy(req, api, &c.cancel_on_disconnect)) {
        json_decref(details);
        return;
    }
    if (!rein__chat_body_read(rein_request_json(req), &cb, details)) {
        rein__reply_problems(req, details);
        return;
    }
    json_decref(details);
    so.title = cb.message;
    so.event_data = &c;
    so.replace = cb.replace_from >= 0;
    so.replace_from = cb.replace_from;
    /* A JSON answer hands out no event ids: the turn's events go with its commits. */
    so.defer_events = !rein_request_wants_sse(req);
    rc = rein_session_open(api->store, cb.conv_id, &so, &c.session, &held, &err);
    if (rc == REIN_EBUSY) {
        rein_request_reply_busy(req, cb.conv_id, &held);
        return;
    }
    if (rc != REIN_OK) {
        rein_request_reply_rein_error(req, &err);
        return;
    }
    if (rein_request_set_header(req, "X-Conversation-Id",
                                rein_session_conversation_id(c.session)) != REIN_OK ||
        (rein_request_wants_sse(req) && !(c.sse = rein_request_sse_start(req, &err)))) {
        rein_session_close(c.session);
        rein_request_reply_error(req, 500, "internal", "the answer could not be started");
        return;
    }
    rein_error_clear(&err);
    rein_buf_init(&text, 0);
    kept = run_turn(&c, &cb, &text, &err);
    seq = rein_session_last_seq(c.session);
    /* The turn's last writes are committed here: only a turn that was kept is answered so. */
    if (rein_session_end(c.session, kept ? &err : &ignored) != REIN_OK)
        kept = false;
    answer(&c, kept ? &text : NULL, seq, &err);
    rein_buf_release(&text);
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

/* The request's handle fired (the server is stopping): the proposal's call stops too. */
static void interrupt_session(void *userdata)
{
    rein_session_interrupt(userdata, "the request ended (the server is stopping)");
}

static void handle_proposal(rein_request *req, void *userdata)
{
    rein_agent_api *api = userdata;
    const char *id = rein_request_param(req, "id");
    const char *call_id = rein_request_param(req, "call_id");
    struct rein_session_opts so = {.lease_ms = api->lease_ms,
                                   .trace_id = rein_request_trace_id(req),
                                   .existing = true,
                                   .reg = api->reg};
    struct rein_store_lock_info held;
    rein_session *session = NULL;
    json_t *out = NULL;
    bool run = false;
    rein_error err;
    rein_err rc;
    int hook;

    if (!read_action(req, &run))
        return;
    rc = rein_session_open(api->store, id, &so, &session, &held, &err);
    if (rc == REIN_EBUSY) {
        rein_request_reply_busy(req, id, &held);
        return;
    }
    if (rc == REIN_OK) {
        hook = rein_cancel_on(rein_request_cancel(req), interrupt_session, session);
        rc = hook > 0 ? rein_session_proposal(session, api->reg, call_id, run, &out, &err)
                      : rein_error_set(&err, REIN_ENOMEM, "cannot watch the request");
        if (hook > 0)
            rein_cancel_off(rein_request_cancel(req), hook);
        if (rc == REIN_OK && run)
            rein_metrics_tool_call(api->metrics, json_string_value(json_object_get(out, "tool")),
                                   json_string_value(json_object_get(out, "status")));
    }
    /* The lock goes before the answer, so a client acting on it at once finds it free. */
    rein_session_close(session);
    if (rc == REIN_OK)
        rein_request_reply_json(req, 200, out);
    else if (rc == REIN_EEXIST)
        rein_request_reply_error(req, 409, "already_resolved", "%s", err.msg);
    else
        rein_request_reply_rein_error(req, &err);
}

/* ---- the API object -------------------------------------------------------------------- */

rein_agent_api *rein_agent_api_new(rein_agent *agent, const rein_registry *reg, rein_store *store,
                                   const struct rein_agent_api_opts *opts, rein_error *err)
{
    static const char *const labels[] = {"mode", "stop_reason", NULL};
    rein_agent_api *api;
    int64_t recover_ms;

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
    recover_ms = opts && opts->recover_ms ? opts->recover_ms : api->lease_ms / 2;
    api->metrics = opts ? opts->metrics : NULL;
    api->disconnect_cancels_turn = opts && opts->disconnect_cancels_turn;
    snprintf(api->provider, sizeof(api->provider), "%s",
             opts && opts->provider_name ? opts->provider_name : "unknown");
    api->turns_total = rein_metrics_family(api->metrics, REIN_METRIC_COUNTER, "rein_turns_total",
                                           "Agent turns served over HTTP, by mode and stop reason",
                                           labels, NULL, 0, err);
    if (!api->turns_total)
        goto fail;
    if (recover_ms > 0 && !(api->recovery = rein_session_recovery_new(store, recover_ms, err)))
        goto fail;
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
    rein_session_recovery_free(api->recovery);
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
