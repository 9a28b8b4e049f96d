/*
 * Acting on a proposed call (rein_session_proposal in include/rein/session.h). In propose mode
 * the agent checks the model's calls and runs none: each gets the tool result
 * {"tool", "status": "proposed", "message"}. A person (or a program) later runs or discards
 * one, from any instance, while holding the conversation's lock like a turn does: the call
 * goes through the one pipeline with the session's ledger hook, or is recorded as denied, and
 * a user message tells the model what became of it.
 */
#include "session/session_int.h"

#include <rein/json.h>

#include <string.h>

#define DISCARDED                                                                                  \
    "{\"code\":\"denied\",\"message\":\"a person discarded the proposed call, so it was not "      \
    "run\",\"details\":[]}"

/* The assistant's call {id, name, arguments} with that id whose tool message says
 * "proposed" (borrowed from the history), or NULL. */
static const json_t *find_proposal(const rein_history *h, const char *call_id)
{
    const json_t *found = NULL;
    bool proposed = false;

    for (size_t i = 0; i < rein_history_len(h); i++) {
        const json_t *msg = rein_history_get(h, i), *call;
        const char *role = json_string_value(json_object_get(msg, "role"));
        size_t k;
        if (role && strcmp(role, "assistant") == 0) {
            json_array_foreach(json_object_get(msg, "tool_calls"), k, call)
            {
                if (strcmp(json_string_value(json_object_get(call, "id")), call_id) == 0) {
                    found = call;
                    proposed = false;
                }
            }
        } else if (found && role && strcmp(role, "tool") == 0 &&
                   strcmp(json_string_value(json_object_get(msg, "tool_call_id")), call_id) == 0) {
            const char *content = json_string_value(json_object_get(msg, "content"));
            json_t *c = content ? rein_json_parse(content, strlen(content), 0, NULL) : NULL;
            const char *status = json_string_value(json_object_get(c, "status"));
            proposed = status && strcmp(status, "proposed") == 0;
            json_decref(c);
        }
    }
    return proposed ? found : NULL;
}

struct ledger_find {
    const char *call_id;
    char status[16];
};

static int find_entry(const char *conv_id, const struct rein_ledger_entry *e, void *userdata)
{
    struct ledger_find *f = userdata;

    (void)conv_id;
    if (strcmp(e->call_id, f->call_id) != 0)
        return 0;
    snprintf(f->status, sizeof(f->status), "%s", rein_call_status_name(e->status));
    return 1;
}

/* Runs the call through the pipeline, recorded in the ledger. New result or NULL (err set). */
static rein_call_result *run_call(rein_session *s, const rein_registry *reg, const json_t *call,
                                  rein_error *err)
{
    const char *args = json_string_value(json_object_get(call, "arguments"));
    struct rein_call_input in = {
        .call_id = json_string_value(json_object_get(call, "id")),
        .name = json_string_value(json_object_get(call, "name")),
        .args_text = args ? args : "",
        .args_len = args ? strlen(args) : 0,
        .trace_id = s->trace_id,
    };
    rein_ledger *ledger = rein_ledger_new();
    rein_cancel *cancel = rein_cancel_new_child(s->cancel);
    struct rein_call_opts opts = {.ledger = ledger, .cancel = cancel};
    rein_call_result *res = NULL;

    if (!ledger || !cancel) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
    } else {
        rein_ledger_set_hook(ledger, rein__session_save_ledger, s);
        if (rein_call_run(reg, &in, &opts, &res, err) != REIN_OK)
            res = NULL;
    }
    rein_cancel_unref(cancel);
    rein_ledger_free(ledger);
    return res;
}

/* Records a discarded proposal in the ledger as a call that was denied. */
static rein_err discard_call(rein_session *s, const json_t *call, rein_error *err)
{
    const char *args = json_string_value(json_object_get(call, "arguments"));
    json_t *parsed = args && args[0] ? rein_json_parse(args, strlen(args), 0, NULL) : NULL;
    char *args_text = rein_json_dumps(parsed ? parsed : json_object_get(call, "arguments"));
    int64_t now = rein_wall_ms();
    struct rein_ledger_entry e = {
        .call_id = json_string_value(json_object_get(call, "id")),
        .tool = json_string_value(json_object_get(call, "name")),
        .args = args_text ? args_text : "{}",
        .status = REIN_CALL_INVALID,
        .result = DISCARDED,
        .call_ms = now,
        .response_ms = now,
        .latency_ms = -1,
        .trace_id = s->trace_id,
    };
    rein_err rc = rein_store_ledger_put(s->store, s->conv_id, &e, err);

    json_decref(parsed);
    rein_free(args_text);
    return rc;
}

/* Tells the model, in the conversation, what became of its proposal. */
static rein_err note(rein_session *s, const json_t *call, bool run, rein_call_result *res,
                     rein_error *err)
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
    rein_err rc = msg ? rein__session_save_message(s, msg, NULL, err)
                      : rein_error_set(err, REIN_ENOMEM, "out of memory");

    if (rc == REIN_OK)
        rc = rein_history_append(s->h, msg, err);
    json_decref(msg);
    rein_free(text);
    rein_free(result);
    return rc;
}

/* Records what became of the proposal as a tool_result event of the conversation (out is the
 * answer rein_session_proposal gives), so whoever follows the conversation's events (a page
 * open on it elsewhere) learns it without asking. A record that fails is logged: the call has
 * run or been discarded whatever it says. */
static void record_outcome(rein_session *s, const json_t *out, rein_call_result *res)
{
    json_t *ev =
        json_pack("{s:s, s:O, s:O, s:O, s:O, s:b, s:I, s:O}", "type", "tool_result", "call_id",
                  json_object_get(out, "call_id"), "tool", json_object_get(out, "tool"), "action",
                  json_object_get(out, "action"), "status", json_object_get(out, "status"), "ok",
                  res && rein_call_result_ok(res), "latency_ms",
                  (json_int_t)(res ? rein_call_result_latency_ms(res) : -1), "result",
                  json_object_get(out, "result"));
    char *text = ev ? rein_json_dumps(ev) : NULL;
    rein_error err;

    rein_error_clear(&err);
    if (!text ||
        rein__session_record(s, "tool_result", text, strlen(text), false, false, NULL, &err))
        rein_log(REIN_LOG_WARN, REIN__SESSION_WHERE, "%s: the proposal's event not recorded: %s",
                 s->conv_id, text ? err.msg : "out of memory");
    rein_free(text);
    json_decref(ev);
}

rein_err rein_session_proposal(rein_session *s, const rein_registry *reg, const char *call_id,
                               bool run, json_t **out, rein_error *err)
{
    struct ledger_find f = {.call_id = call_id};
    const json_t *call;
    const char *tool;
    rein_call_result *res = NULL;
    rein_err rc;

    *out = NULL;
    if (!s->store || !reg || !call_id)
        return rein_error_set(err, REIN_EINVAL,
                              "a proposal needs a stored conversation, a "
                              "registry and a call id");
    call = find_proposal(s->h, call_id);
    if (!call)
        return rein_error_set(err, REIN_ENOTFOUND, "conversation %s has no proposed call %s",
                              s->conv_id, call_id);
    rc = rein_store_ledger_each(s->store, s->conv_id, find_entry, &f, err);
    if (rc != REIN_OK && rc != 1)
        return rc;
    if (f.status[0])
        return rein_error_set(err, REIN_EEXIST,
                              "the proposed call %s was already acted on (ledger status %s)",
                              call_id, f.status);
    tool = json_string_value(json_object_get(call, "name"));
    rein__session_set_state(s, "executing", tool, true);
    if (run) {
        res = run_call(s, reg, call, err);
        rc = res ? REIN_OK : (err && err->code ? err->code : REIN_ENOMEM);
    } else {
        rc = discard_call(s, call, err);
    }
    if (rc == REIN_OK)
        rc = note(s, call, run, res, err);
    if (rc == REIN_OK) {
        *out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O}", "conversation_id", s->conv_id, "call_id",
                         call_id, "tool", tool, "action", run ? "run" : "discard", "status",
                         run ? rein_call_status_name(rein_call_result_status(res)) : "invalid",
                         "result", run ? rein_call_result_json(res) : json_null());
        if (!*out)
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        else
            record_outcome(s, *out, res);
    }
    rein_call_result_free(res);
    return rc;
}
