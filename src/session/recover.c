/*
 * What a dead turn leaves behind, and its repair (include/rein/session.h, "Recovery"). This is
 * the one place that knows about it:
 *
 * - A process that dies mid-turn leaves the calls it was running pending in the ledger, and
 *   the assistant message that made them without tool results. rein_store_recover() flags the
 *   pending entries interrupted once the dead turn's lease has run out: at store open, and
 *   every so often on the thread of rein_session_recovery_new(), so a conversation is repaired
 *   even when no instance restarts.
 * - Opening a session loads the stored messages and answers every call they leave without a
 *   result (rein_agent_history_repair_started), writes those results to the store, and closes
 *   the calls' ledger entries (status error, with the result's error object), keeping their
 *   first record. A call whose ledger entry is still pending had started (the entry is
 *   written before a call runs), so its process may have done its work: its result is
 *   "interrupted: ... may have run" (for a destructive tool: check what it changed), never
 *   "not run"; a call without an entry never ran and gets "cancelled: not run". Every later
 *   request to the model then carries a history the providers accept.
 */
#include "session/session_int.h"

#include <rein/json.h>

#include <string.h>

#define WHERE REIN__SESSION_WHERE

/* ---- loading a conversation ------------------------------------------------------------- */

/*
 * open: the tool calls without a result so far, as {id: the call {id, name, arguments}}.
 * tail_ok: every open call belongs to the last assistant message with calls, and only its tool
 * results follow it, so answering them appends to the history (the case of a turn that died).
 */
struct loader {
    rein_history *h;
    json_t *open;
    bool tail_ok;
};

static int load_message(const struct rein_store_message *m, void *userdata)
{
    struct loader *l = userdata;
    /* The history reads the text once and keeps its tree for the turn's first request (and the
     * stored bytes as its text, and an agent's stored system prompt as the shared message it
     * is: issue 25); the tree is read here from the history. */
    int rc = rein_history_append_text(l->h, m->json, m->len, NULL);
    const json_t *msg = rc == REIN_OK ? rein_history_get(l->h, rein_history_len(l->h) - 1) : NULL;
    const char *role = json_string_value(json_object_get(msg, "role"));
    const json_t *calls = json_object_get(msg, "tool_calls"), *call;
    size_t i;

    if (rc != REIN_OK)
        return rc;
    if (!msg)
        return REIN_ENOMEM;
    if (role && strcmp(role, "tool") == 0) {
        const char *id = json_string_value(json_object_get(msg, "tool_call_id"));
        if (id)
            json_object_del(l->open, id);
    } else {
        /* A new message other than a tool result: what is still open stays open behind it. */
        l->tail_ok = json_object_size(l->open) == 0;
        json_array_foreach(calls, i, call)
        {
            const char *id = json_string_value(json_object_get(call, "id"));
            if (id && json_object_set(l->open, id, (json_t *)call))
                rc = REIN_ENOMEM;
        }
    }
    return rc;
}

/* The error object of a result written by rein_agent_history_repair (new), or NULL. */
static char *error_of(const json_t *tool_msg)
{
    const char *content = json_string_value(json_object_get(tool_msg, "content"));
    json_t *res = content ? rein_json_parse(content, strlen(content), 0, NULL) : NULL;
    char *text = res ? rein_json_dumps(json_object_get(res, "error")) : NULL;

    json_decref(res);
    return text;
}

/*
 * Closes the ledger entry of a call the repair answered: its first record is kept and gets the
 * outcome; a call the dead turn never recorded is written once, already closed.
 */
static void close_entry(rein_session *s, const json_t *call, const json_t *tool_msg)
{
    const char *id = json_string_value(json_object_get(call, "id"));
    const char *raw = json_string_value(json_object_get(call, "arguments"));
    char *result = error_of(tool_msg);
    json_t *parsed = raw && raw[0] ? rein_json_parse(raw, strlen(raw), 0, NULL) : NULL;
    /* Arguments that do not parse are kept as the text the model sent (a JSON string). */
    char *args = parsed || (raw && raw[0])
                     ? rein_json_dumps(parsed ? parsed : json_object_get(call, "arguments"))
                     : NULL;
    struct rein_ledger_entry e = {
        .call_id = id,
        .tool = json_string_value(json_object_get(call, "name")),
        .args = args ? args : "{}",
        .status = REIN_CALL_ERROR,
        .result = result,
        .latency_ms = -1,
        .trace_id = s->trace_id,
    };
    rein_error err;
    rein_err rc;

    rc = rein_store_ledger_update(s->store, s->conv_id, &e, &err);
    if (rc == REIN_ENOTFOUND)
        rc = rein_store_ledger_put(s->store, s->conv_id, &e, &err);
    if (rc != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "%s: the ledger entry of %s was not closed: %s", s->conv_id,
                 id, err.msg);
    json_decref(parsed);
    rein_free(args);
    rein_free(result);
}

/* Collects the open calls whose ledger entry is still pending: they had started. */
struct started {
    const json_t *open;
    json_t *ids; /* array of strings */
};

static int find_started(const char *conv_id, const struct rein_ledger_entry *e, void *ud)
{
    struct started *st = ud;

    (void)conv_id;
    if (e->status != REIN_CALL_PENDING || !json_object_get(st->open, e->call_id))
        return 0;
    return json_array_append_new(st->ids, json_string(e->call_id)) ? REIN_ENOMEM : 0;
}

/* Answers the open calls (those that had started "interrupted", the others "cancelled");
 * when that appended to the history, writes the results and closes the calls' ledger
 * entries. */
static rein_err close_open_calls(rein_session *s, const json_t *open, bool tail_ok, rein_error *err)
{
    size_t before = rein_history_len(s->h), added = 0, n;
    struct started found = {open, json_array()};
    struct rein_agent_started started = {NULL, 0, s->opts.reg};
    const char **ids = NULL;
    rein_err rc;

    if (!found.ids)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = rein_store_ledger_each(s->store, s->conv_id, find_started, &found, err);
    n = json_array_size(found.ids);
    if (rc == REIN_OK && n && !(ids = rein_calloc(n, sizeof(*ids))))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    for (size_t i = 0; rc == REIN_OK && i < n; i++)
        ids[i] = json_string_value(json_array_get(found.ids, i));
    started.ids = ids;
    started.count = n;
    if (rc == REIN_OK)
        rc = rein_agent_history_repair_started(s->h, NULL, &started, &added, err);
    rein_free(ids);
    json_decref(found.ids);
    if (rc != REIN_OK)
        return rc;
    if (!tail_ok || rein_history_len(s->h) != before + added) {
        /* The history was rebuilt in the middle: the store keeps it as it is (appending
         * cannot express that), and each turn's request repairs it again in memory. */
        rein_log(REIN_LOG_WARN, WHERE,
                 "%s: calls left open before later messages were answered "
                 "in memory only",
                 s->conv_id);
        return REIN_OK;
    }
    for (size_t i = before; i < before + added; i++) {
        const json_t *msg = rein_history_get(s->h, i);
        const char *id = json_string_value(json_object_get(msg, "tool_call_id"));
        const json_t *call = id ? json_object_get(open, id) : NULL;
        rc = rein__session_save_message(s, msg, NULL, err);
        if (rc != REIN_OK)
            return rc;
        if (call)
            close_entry(s, call, msg);
    }
    if (added)
        rein_log(REIN_LOG_INFO, WHERE, "%s: %zu call(s) a stopped turn left open were answered",
                 s->conv_id, added);
    return REIN_OK;
}

rein_err rein__session_load(rein_session *s, rein_error *err)
{
    struct loader l = {s->h, json_object(), true};
    rein_err rc;

    if (!l.open)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rein_error_clear(err);
    rc = rein_store_messages_each(s->store, s->conv_id, 0, load_message, &l, err);
    s->stored = (int64_t)rein_history_len(s->h);
    if (rc != REIN_OK) {
        if (!err || !err->msg[0])
            rein_error_set(err, rc == REIN_ENOMEM ? REIN_ENOMEM : REIN_EINTERNAL,
                           "conversation %s: a stored message cannot be read", s->conv_id);
    } else if (json_object_size(l.open) > 0) {
        rc = close_open_calls(s, l.open, l.tail_ok, err);
    }
    json_decref(l.open);
    return rc;
}

/* ---- the recovery thread ---------------------------------------------------------------- */

/* Invariants: the thread runs from a successful _new until _free triggers stop and joins it. */
struct rein_session_recovery {
    rein_store *store; /* borrowed */
    int64_t every_ms;
    rein_cancel *stop;
    pthread_t thread;
};

static void *recover_main(void *arg)
{
    rein_session_recovery *r = arg;

    while (!rein_cancel_wait(r->stop, r->every_ms)) {
        rein_error err;
        int flagged = 0;
        if (rein_store_recover(r->store, &flagged, &err) != REIN_OK)
            rein_log(REIN_LOG_WARN, WHERE, "recovery: %s", err.msg);
        else if (flagged > 0)
            rein_log(REIN_LOG_INFO, WHERE,
                     "recovery: %d call(s) left pending by a stopped process flagged interrupted",
                     flagged);
    }
    return NULL;
}

rein_session_recovery *rein_session_recovery_new(rein_store *store, int64_t every_ms,
                                                 rein_error *err)
{
    rein_session_recovery *r;

    if (!store || every_ms <= 0) {
        rein_error_set(err, REIN_EINVAL, "recovery needs a store and a positive interval");
        return NULL;
    }
    r = rein_calloc(1, sizeof(*r));
    if (!r || !(r->stop = rein_cancel_new())) {
        rein_free(r);
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    r->store = store;
    r->every_ms = every_ms;
    if (pthread_create(&r->thread, NULL, recover_main, r) != 0) {
        rein_cancel_unref(r->stop);
        rein_free(r);
        rein_error_set(err, REIN_ENOMEM, "cannot start the recovery thread");
        return NULL;
    }
    return r;
}

void rein_session_recovery_free(rein_session_recovery *r)
{
    if (!r)
        return;
    rein_cancel_trigger(r->stop, "stopping");
    pthread_join(r->thread, NULL);
    rein_cancel_unref(r->stop);
    rein_free(r);
}
