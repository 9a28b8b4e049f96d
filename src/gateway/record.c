/*
 * What the gateway records (include/rein/gateway.h, "Recording") and counts.
 *
 * A request with a conversation (x-rein-conversation, or record_all) holds that conversation
 * through a session (include/rein/session.h) from its start to its answer, so two requests of
 * one conversation do not interleave, and records through it alone:
 *   - messages: the client sends the whole conversation with every request, so the session
 *     is opened with client_history (nothing is loaded or repaired) and only the messages
 *     beyond those stored are appended, then the reply as the client got it (a repaired
 *     call's tool_calls entry keeps the name the model sent as "sent_name");
 *   - events, in the conversation's sequence: gateway_request, upstream_call (one per round),
 *     check (one per call), reask, gateway_result;
 *   - ledger entries: a call refused by the check (invalid, with its error, written once),
 *     the calls of server-side tools (the pipeline's own entries through the session), and a
 *     client's call once the client reports its result in a later request (success, or error
 *     when the client marked it so), with the name the model sent when it was repaired.
 * A client call is not written pending when it is handed out: rein does not run it, and a
 * pending entry of a request that ended would be flagged interrupted by the store's recovery.
 *
 * The metrics (closed label sets, decision 0014): model is the upstream model, tool a tool of
 * the request or "unknown".
 */
#include "gateway/gateway_int.h"

#include <string.h>

#define WHERE REIN__GW_WHERE

/* ---- metrics -------------------------------------------------------------------------------- */

rein_err rein__gw_metrics_init(rein_gateway *g, rein_error *err)
{
    static const char *const mt[] = {"model", "tool", NULL};
    static const char *const mtc[] = {"model", "tool", "code", NULL};
    static const char *const ms[] = {"model", "outcome", NULL};
    static const char *const m1[] = {"model", NULL};

    g->m.invalid =
        rein_metrics_family(g->metrics, REIN_METRIC_COUNTER, "rein_gateway_invalid_calls_total",
                            "Tool calls in upstream replies that failed the check, by "
                            "model, tool and error code",
                            mtc, NULL, 0, err);
    g->m.repairs = rein_metrics_family(
        g->metrics, REIN_METRIC_COUNTER, "rein_gateway_repairs_total",
        "Tool names repaired to a declared tool, by model and tool", mt, NULL, 0, err);
    g->m.text_calls =
        rein_metrics_family(g->metrics, REIN_METRIC_COUNTER, "rein_gateway_text_calls_total",
                            "Tool calls written as text and converted into native calls, by model "
                            "and tool",
                            mt, NULL, 0, err);
    g->m.reasks = rein_metrics_family(g->metrics, REIN_METRIC_COUNTER, "rein_gateway_reasks_total",
                                      "Invalid tool calls the model was asked to fix, by model "
                                      "and tool",
                                      mt, NULL, 0, err);
    g->m.invalid_answers = rein_metrics_family(
        g->metrics, REIN_METRIC_COUNTER, "rein_gateway_invalid_answers_total",
        "Answers that did not follow the structured output the client asked for, by model", m1,
        NULL, 0, err);
    g->m.upstream =
        rein_metrics_family(g->metrics, REIN_METRIC_COUNTER, "rein_gateway_upstream_calls_total",
                            "Calls to the upstream model, by model and outcome", ms, NULL, 0, err);
    g->m.kept_bytes = rein_metrics_family(
        g->metrics, REIN_METRIC_GAUGE, "rein_gateway_kept_bytes",
        "Bytes of Responses API answers kept for previous_response_id and item_reference", NULL,
        NULL, 0, err);
    g->m.kept_responses =
        rein_metrics_family(g->metrics, REIN_METRIC_GAUGE, "rein_gateway_kept_responses",
                            "Responses API answers kept for previous_response_id and "
                            "item_reference",
                            NULL, NULL, 0, err);
    g->m.background =
        rein_metrics_family(g->metrics, REIN_METRIC_GAUGE, "rein_gateway_background_responses",
                            "Responses API requests running in the background", NULL, NULL, 0, err);
    if (!g->m.invalid || !g->m.repairs || !g->m.text_calls || !g->m.reasks ||
        !g->m.invalid_answers || !g->m.upstream || !g->m.kept_bytes || !g->m.kept_responses ||
        !g->m.background)
        return err && err->code ? err->code : REIN_ENOMEM;
    return REIN_OK;
}

/* The tool label: a tool of the request (checked names only), else "unknown". */
static const char *tool_label(const struct rein__gw_round_call *rc)
{
    return rein_call_result_tool(rc->res) ? rein_call_result_tool_name(rc->res) : "unknown";
}

/* ---- the conversation -------------------------------------------------------------------- */

rein_err rein__gw_record_open(struct rein__gw_ctx *c, struct rein_store_lock_info *held,
                              rein_error *err)
{
    const rein_history *h = c->req.h;
    const char *title = NULL;
    struct rein_session_opts so = {
        .lease_ms = c->g->lease_ms,
        .trace_id = c->trace_id,
        .client_history = true,
    };

    /* A new conversation's title is the client's last user message. */
    for (size_t i = rein_history_len(h); i-- > 0 && !title;) {
        const json_t *m = rein_history_get(h, i);
        if (strcmp(json_string_value(json_object_get(m, "role")), "user") == 0)
            title = json_string_value(json_object_get(m, "content"));
    }
    so.title = title;
    return rein_session_open(c->g->store, c->o.conversation, &so, &c->session, held, err);
}

void rein__gw_record(struct rein__gw_ctx *c, const char *type, const char *json, size_t len)
{
    rein_error err;

    (void)len;
    if (!c->session)
        return;
    if (rein_session_record(c->session, type, json, NULL, &err) != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "%s: %s not recorded: %s", c->o.conversation, type, err.msg);
}

/* Starts the event object of type in b (new) through w: {"type": type, ... */
static void event_begin(struct rein_buf *b, struct rein_jw *w, const char *type)
{
    rein_buf_init(b, 0);
    rein_jw_init(w, b);
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, type);
}

/* Records a JSON object written by the caller into b. */
static void record_obj(struct rein__gw_ctx *c, const char *type, struct rein_jw *w,
                       struct rein_buf *b)
{
    if (rein_jw_finish(w) == REIN_OK)
        rein__gw_record(c, type, b->ptr, b->len);
    rein_buf_release(b);
}

/* A JSON text for the ledger: text itself when it is JSON, else a JSON string of it (new). */
static char *json_text(const char *text)
{
    struct rein_buf b;
    struct rein_jw w;

    if (rein_json_check(text, strlen(text), NULL) == REIN_OK)
        return rein_strdup(text);
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_str(&w, text);
    if (rein_jw_finish(&w) != REIN_OK) {
        rein_buf_release(&b);
        return NULL;
    }
    return rein_buf_detach(&b, NULL);
}

/* The names the model sent for the calls of the last stored message (the reply this gateway
 * handed out before), as {call id: sent name}. */
static int read_sent_names(const struct rein_store_message *m, void *userdata)
{
    json_t *names = userdata;
    json_t *msg = rein_json_parse(m->json, m->len, 0, NULL);
    size_t i;
    json_t *call;

    json_array_foreach(json_object_get(msg, "tool_calls"), i, call)
    {
        const char *id = json_string_value(json_object_get(call, "id"));
        json_t *sent = json_object_get(call, "sent_name");
        if (id && json_is_string(sent))
            json_object_set(names, id, sent);
    }
    json_decref(msg);
    return 0;
}

/* The call a tool message answers: the assistant message before it that made it. */
static const json_t *call_of(const rein_history *h, size_t at, const char *id)
{
    for (size_t i = at; i-- > 0;) {
        size_t k;
        json_t *call;
        json_array_foreach(json_object_get(rein_history_get(h, i), "tool_calls"), k, call)
        {
            const char *cid = json_string_value(json_object_get(call, "id"));
            if (cid && strcmp(cid, id) == 0)
                return call;
        }
    }
    return NULL;
}

/* The result the client reports for one of its calls: the call's ledger entry. */
static void ledger_result(struct rein__gw_ctx *c, size_t at, const json_t *sent_names)
{
    const json_t *msg = rein_history_get(c->req.h, at);
    const char *id = json_string_value(json_object_get(msg, "tool_call_id"));
    const json_t *call = id ? call_of(c->req.h, at, id) : NULL;
    const char *name = json_string_value(json_object_get(call, "name"));
    char *args, *result;
    struct rein_ledger_entry e;

    if (!call || !name)
        return; /* a result for a call this history does not hold: nothing to pair it with */
    args = json_text(json_string_value(json_object_get(call, "arguments")));
    result = json_text(json_string_value(json_object_get(msg, "content")));
    if (args && result) {
        memset(&e, 0, sizeof(e));
        e.call_id = id;
        e.tool = name;
        e.sent_name = json_string_value(json_object_get(sent_names, id));
        e.args = args;
        e.status =
            json_is_true(json_object_get(msg, "is_error")) ? REIN_CALL_ERROR : REIN_CALL_SUCCESS;
        e.result = result;
        e.latency_ms = -1;
        e.trace_id = c->trace_id;
        (void)rein_session_ledger_write(c->session, &e);
    }
    rein_free(args);
    rein_free(result);
}

/* The client's messages beyond those stored join the conversation; the results it reports for
 * its calls go into the ledger. */
static void record_messages(struct rein__gw_ctx *c)
{
    int64_t stored = rein_session_message_count(c->session);
    size_t n = rein_history_len(c->req.h);
    json_t *sent_names = NULL;
    rein_error err;

    for (size_t i = stored > 0 ? (size_t)stored : 0; i < n; i++) {
        const json_t *m = rein_history_get(c->req.h, i);
        if (rein_session_append(c->session, m, &err) != REIN_OK) {
            rein_log(REIN_LOG_WARN, WHERE, "%s: message not stored: %s", c->o.conversation,
                     err.msg);
            return;
        }
        if (strcmp(json_string_value(json_object_get(m, "role")), "tool") != 0)
            continue;
        if (!sent_names) {
            sent_names = json_object();
            if (stored > 0 && sent_names &&
                rein_store_messages_each(c->g->store, c->o.conversation, stored - 1,
                                         read_sent_names, sent_names, &err) != REIN_OK)
                rein_log(REIN_LOG_INFO, WHERE, "%s: %s", c->o.conversation, err.msg);
        }
        ledger_result(c, i, sent_names);
    }
    json_decref(sent_names);
}

void rein__gw_record_request(struct rein__gw_ctx *c)
{
    struct rein_buf b;
    struct rein_jw w;

    if (!c->session)
        return;
    event_begin(&b, &w, "gateway_request");
    REIN_JW_KEY(&w, "api");
    rein_jw_str(&w, c->wire->name);
    REIN_JW_KEY(&w, "trace_id");
    rein_jw_str(&w, c->trace_id);
    REIN_JW_KEY(&w, "stream");
    rein_jw_bool(&w, c->streaming);
    REIN_JW_KEY(&w, "model");
    rein_jw_str(&w, c->req.model);
    REIN_JW_KEY(&w, "upstream");
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "provider");
    rein_jw_str(&w, rein_provider_name(c->g->provider));
    REIN_JW_KEY(&w, "model");
    rein_jw_str(&w, c->model);
    rein_jw_obj_end(&w);
    REIN_JW_KEY(&w, "messages");
    rein_jw_uint(&w, rein_history_len(c->req.h));
    REIN_JW_KEY(&w, "tools");
    rein_jw_arr_begin(&w);
    for (size_t i = 0; c->tools && i < c->tools->nclient; i++)
        rein_jw_str(&w, c->tools->client[i].name);
    rein_jw_arr_end(&w);
    REIN_JW_KEY(&w, "server_tools");
    rein_jw_arr_begin(&w);
    for (size_t i = 0; i < c->o.nserver; i++)
        rein_jw_str(&w, rein_tool_id(c->o.server[i]));
    rein_jw_arr_end(&w);
    REIN_JW_KEY(&w, "on_invalid");
    rein_jw_str(&w, rein_gateway_policy_name(c->o.policy));
    REIN_JW_KEY(&w, "max_reasks");
    rein_jw_int(&w, c->o.max_reasks);
    rein_jw_obj_end(&w);
    record_obj(c, "gateway_request", &w, &b);
    record_messages(c);
}

/* The outcome label of an upstream call: a closed set. */
static const char *outcome(rein_err rc, const rein_error *err, char *buf, size_t size)
{
    switch (rc) {
    case REIN_OK:
        return "ok";
    case REIN_EHTTP:
        if (err->detail >= 100 && err->detail <= 599) {
            snprintf(buf, size, "http_%d", err->detail);
            return buf;
        }
        return "http";
    case REIN_ETIMEDOUT:
        return "timeout";
    case REIN_EIO:
        return "connect";
    case REIN_ECANCELED:
        return "cancelled";
    default:
        return "provider_error";
    }
}

void rein__gw_record_upstream(struct rein__gw_ctx *c, rein_err rc, const rein_error *err,
                              const rein_model_response *resp, int64_t ms)
{
    const char *labels[] = {c->model ? c->model : "unknown", NULL, NULL};
    char word[16];
    struct rein_buf b;
    struct rein_jw w;

    labels[1] = outcome(rc, err, word, sizeof(word));
    rein_metric_add(c->g->m.upstream, labels, 1);
    if (rc && rc != REIN_ECANCELED)
        rein_metrics_provider_error(c->g->metrics, rein_provider_name(c->g->provider), labels[1]);
    if (!c->session)
        return;
    event_begin(&b, &w, "upstream_call");
    REIN_JW_KEY(&w, "round");
    rein_jw_int(&w, c->round);
    REIN_JW_KEY(&w, "provider");
    rein_jw_str(&w, rein_provider_name(c->g->provider));
    REIN_JW_KEY(&w, "model");
    rein_jw_str(&w, c->model);
    REIN_JW_KEY(&w, "outcome");
    rein_jw_str(&w, labels[1]);
    REIN_JW_KEY(&w, "latency_ms");
    rein_jw_int(&w, ms);
    if (rc) {
        REIN_JW_KEY(&w, "error");
        rein_jw_str(&w, err->msg[0] ? err->msg : rein_strerror(rc));
    }
    if (resp) {
        REIN_JW_KEY(&w, "input_tokens");
        rein_jw_int(&w, rein_model_response_input_tokens(resp));
        REIN_JW_KEY(&w, "output_tokens");
        rein_jw_int(&w, rein_model_response_output_tokens(resp));
        REIN_JW_KEY(&w, "finish_reason");
        rein_jw_str(&w, rein_model_response_finish_reason(resp));
        REIN_JW_KEY(&w, "calls");
        rein_jw_uint(&w, rein_model_response_call_count(resp));
        /* the provider's own id for the call: what its support asks for */
        if (rein_model_response_request_id(resp)) {
            REIN_JW_KEY(&w, "request_id");
            rein_jw_str(&w, rein_model_response_request_id(resp));
        }
    }
    rein_jw_obj_end(&w);
    record_obj(c, "upstream_call", &w, &b);
}

static const char *verdict_name(enum rein__gw_verdict v)
{
    return v == REIN__GW_VALID ? "valid" : v == REIN__GW_SERVER ? "server" : "invalid";
}

/* An invalid call's ledger entry: refused before it could run, written once (decision 0004). */
static void ledger_invalid(struct rein__gw_ctx *c, const struct rein__gw_round_call *rc)
{
    const json_t *res = rein_call_result_json(rc->res);
    char *error = res ? rein_json_dumps(json_object_get(res, "error")) : NULL;
    char *args = json_text(rc->args);
    size_t sent_len;
    const char *sent = rein_call_result_sent_name(rc->res, &sent_len);
    struct rein_ledger_entry e;

    if (error && args) {
        memset(&e, 0, sizeof(e));
        e.call_id = rc->id;
        e.tool = rein_call_result_tool_name(rc->res);
        e.sent_name = sent;
        e.args = args;
        e.status = REIN_CALL_INVALID;
        e.result = error;
        e.latency_ms = -1;
        e.trace_id = c->trace_id;
        (void)rein_session_ledger_write(c->session, &e);
    }
    rein_free(error);
    rein_free(args);
}

/* Adds {call_id, …} to one of the answer's lists (made on first use). */
static void note(json_t **list, json_t *item)
{
    if (!item)
        return;
    if (!*list)
        *list = json_array();
    if (!*list || json_array_append_new(*list, item))
        json_decref(item);
}

void rein__gw_record_check(struct rein__gw_ctx *c, size_t i)
{
    const struct rein__gw_round_call *rc = &c->rc[i];
    const rein_call_result *r = rc->res;
    const char *labels[] = {c->model ? c->model : "unknown", tool_label(rc), NULL, NULL};
    bool repaired = rein_call_result_ok(r) && rein_call_result_repair(r) != REIN_REPAIR_EXACT;
    size_t sent_len;
    const char *sent = rein_call_result_sent_name(r, &sent_len);
    struct rein_buf b;
    struct rein_jw w;

    if (rc->verdict == REIN__GW_INVALID) {
        const json_t *res = rein_call_result_json((rein_call_result *)r);
        labels[2] = rein_call_code_name(rein_call_result_code(r));
        rein_metric_add(c->g->m.invalid, labels, 1);
        note(&c->problems,
             json_pack("{s:s, s:s%, s:s, s:s, s:O, s:i}", "call_id", rc->id, "name", sent, sent_len,
                       "code", labels[2], "message", rein_call_result_message(r), "errors",
                       json_object_get(json_object_get(res, "error"), "details"), "round",
                       c->round));
    }
    if (repaired) {
        rein_metric_add(c->g->m.repairs, labels, 1);
        note(&c->repairs,
             json_pack("{s:s, s:s%, s:s, s:s}", "call_id", rc->id, "from", sent, sent_len, "to",
                       rc->name, "how", rein_repair_name(rein_call_result_repair(r))));
    }
    if (rc->from_text) {
        rein_metric_add(c->g->m.text_calls, labels, 1);
        note(&c->converted, json_pack("{s:s, s:s}", "call_id", rc->id, "name", rc->name));
    }
    if (!c->session)
        return;
    if (rc->verdict == REIN__GW_INVALID)
        ledger_invalid(c, rc);
    event_begin(&b, &w, "check");
    REIN_JW_KEY(&w, "round");
    rein_jw_int(&w, c->round);
    REIN_JW_KEY(&w, "call_id");
    rein_jw_str(&w, rc->id);
    REIN_JW_KEY(&w, "tool");
    rein_jw_str(&w, rein_call_result_tool(r) ? rein_call_result_tool_name(r) : NULL);
    REIN_JW_KEY(&w, "sent_name");
    rein_jw_strn(&w, sent, sent_len);
    REIN_JW_KEY(&w, "verdict");
    rein_jw_str(&w, verdict_name(rc->verdict));
    REIN_JW_KEY(&w, "from_text");
    rein_jw_bool(&w, rc->from_text);
    if (repaired) {
        REIN_JW_KEY(&w, "repair");
        rein_jw_str(&w, rein_repair_name(rein_call_result_repair(r)));
    }
    if (rc->verdict == REIN__GW_INVALID) {
        REIN_JW_KEY(&w, "code");
        rein_jw_str(&w, labels[2]);
        REIN_JW_KEY(&w, "message");
        rein_jw_str(&w, rein_call_result_message(r));
    }
    rein_jw_obj_end(&w);
    record_obj(c, "check", &w, &b);
}

void rein__gw_record_invalid_answer(struct rein__gw_ctx *c)
{
    const char *labels[] = {c->model ? c->model : "unknown", NULL};

    rein_metric_add(c->g->m.invalid_answers, labels, 1);
}

void rein__gw_record_reask(struct rein__gw_ctx *c)
{
    struct rein_buf b;
    struct rein_jw w;

    for (size_t i = 0; i < c->nrc; i++) {
        const char *labels[] = {c->model ? c->model : "unknown", tool_label(&c->rc[i]), NULL};
        if (c->rc[i].verdict == REIN__GW_INVALID)
            rein_metric_add(c->g->m.reasks, labels, 1);
    }
    if (c->nrc == 0) /* the answer's form (decision 0100) */
        rein_metric_add(c->g->m.reasks,
                        (const char *const[]){c->model ? c->model : "unknown", "(answer)", NULL},
                        1);
    if (!c->session)
        return;
    event_begin(&b, &w, "reask");
    REIN_JW_KEY(&w, "round");
    rein_jw_int(&w, c->round);
    REIN_JW_KEY(&w, "reasks");
    rein_jw_int(&w, c->reasks);
    REIN_JW_KEY(&w, "calls");
    rein_jw_arr_begin(&w);
    for (size_t i = 0; i < c->nrc; i++) {
        if (c->rc[i].verdict == REIN__GW_INVALID)
            rein_call_result_write_for_model(c->rc[i].res, &w);
    }
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    record_obj(c, "reask", &w, &b);
}

/* The reply as the client got it, as a neutral assistant message (new). */
static json_t *reply_message(const struct rein__gw_ctx *c)
{
    const char *text = c->streaming ? c->streamed.ptr
                       : c->last    ? rein_model_response_text(c->last)
                                    : "";
    json_t *msg = json_pack("{s:s, s:s}", "role", "assistant", "content", text);
    json_t *calls = c->nout ? json_array() : NULL;

    if (!msg || (c->nout && !calls)) {
        json_decref(msg);
        json_decref(calls);
        return NULL;
    }
    for (size_t i = 0; i < c->nout; i++) {
        const struct rein__gw_call *o = &c->out[i];
        json_t *call =
            json_pack("{s:s, s:s, s:s}", "id", o->id, "name", o->name, "arguments", o->args);
        if (call && o->sent_name)
            json_object_set_new(call, "sent_name", json_string(o->sent_name));
        if (!call || json_array_append_new(calls, call)) {
            json_decref(msg);
            json_decref(calls);
            return NULL;
        }
    }
    if (calls && json_object_set_new(msg, "tool_calls", calls)) {
        json_decref(msg);
        return NULL;
    }
    return msg;
}

void rein__gw_record_close(struct rein__gw_ctx *c, int status)
{
    struct rein_buf b;
    struct rein_jw w;
    json_t *msg;
    rein_error err;

    if (!c->session)
        return;
    if (status == 200 && (msg = reply_message(c))) {
        if (rein_session_append(c->session, msg, &err) != REIN_OK)
            rein_log(REIN_LOG_WARN, WHERE, "%s: the reply was not stored: %s", c->o.conversation,
                     err.msg);
        json_decref(msg);
    }
    event_begin(&b, &w, "gateway_result");
    REIN_JW_KEY(&w, "status");
    rein_jw_int(&w, status);
    REIN_JW_KEY(&w, "client_gone");
    rein_jw_bool(&w, c->gone);
    REIN_JW_KEY(&w, "rounds");
    rein_jw_int(&w, c->round);
    REIN_JW_KEY(&w, "reasks");
    rein_jw_int(&w, c->reasks);
    REIN_JW_KEY(&w, "calls");
    rein_jw_arr_begin(&w);
    for (size_t i = 0; i < c->nout; i++)
        rein_jw_str(&w, c->out[i].id);
    rein_jw_arr_end(&w);
    REIN_JW_KEY(&w, "input_tokens");
    rein_jw_int(&w, c->in_tokens);
    REIN_JW_KEY(&w, "output_tokens");
    rein_jw_int(&w, c->out_tokens);
    rein_jw_obj_end(&w);
    record_obj(c, "gateway_result", &w, &b);
    if (c->gone)
        rein_session_interrupt(c->session, "the client went away");
    rein_session_close(c->session);
    c->session = NULL;
}

rein_err rein__gw_ledger_hook(void *ctx, const struct rein_ledger_entry *e)
{
    struct rein__gw_ctx *c = ctx;

    return c->session ? rein_session_ledger_write(c->session, e) : REIN_OK;
}
