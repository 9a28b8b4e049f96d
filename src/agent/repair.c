/*
 * Keeping a history every wire accepts (issue 5 item 3).
 *
 * Two things real services refuse, and this file prevents:
 * - an assistant tool call without a tool result right after it ("tool_call_ids did not have
 *   response messages", "tool_use ids were found without tool_result blocks"): a turn that
 *   died, or a history restored after a crash, gets a "cancelled" result for each such call;
 * - a tool call whose name is outside ^[a-zA-Z0-9_-]{1,64}$, or whose id has other characters
 *   or repeats an id of the conversation: the assistant message keeps the call under the name
 *   the pipeline resolved it to, or REIN_AGENT_INVALID_NAME, and a clean unique id, while the
 *   tool result (written by the pipeline) quotes the name the model really sent.
 */
#include "agent_int.h"

#include <stdio.h>
#include <string.h>

bool rein__wire_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > 64)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* The name the history carries for a call the model named `name`. */
static const char *history_name(const rein_registry *reg, const char *name, char *buf, size_t size)
{
    const rein_tool *tool;

    if (rein__wire_name_ok(name, strlen(name)))
        return name;
    tool = rein_registry_resolve(reg, name, NULL, NULL);
    snprintf(buf, size, "%s", tool ? rein_tool_id(tool) : REIN_AGENT_INVALID_NAME);
    return buf;
}

/* True when id is used by an earlier call of this reply or of the history: services reject a
 * history where two tool calls share an id. The history keeps its ids in a set, so this costs
 * the same at any length. */
static bool id_taken(const rein_history *h, const struct call_slot *slots, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(slots[i].id, id) == 0)
            return true;
    }
    return rein_history_has_call_id(h, id);
}

static bool suffix_taken(const rein_history *h, struct call_slot *slots, size_t i, const char *base,
                         unsigned k)
{
    struct call_slot *s = &slots[i];

    snprintf(s->id_buf, sizeof(s->id_buf), "%s_%u", base, k);
    return id_taken(h, slots, i, s->id_buf);
}

/*
 * Writes base_k into the slot for the smallest k >= 2 such that base_k is free and base_(k-1)
 * (when k > 2) is taken. A provider that numbers its calls call_0, call_1 in every reply
 * leaves base_2..base_m taken in a row, so this is the first free suffix, found with a
 * logarithmic number of probes (doubling, then halving) instead of one probe per earlier
 * reply.
 */
static void fresh_suffix(const rein_history *h, struct call_slot *slots, size_t i, const char *base)
{
    unsigned lo = 1, hi = 2; /* lo: taken (or below the range), hi: the candidate */

    while (suffix_taken(h, slots, i, base, hi) && hi < (1u << 30)) {
        lo = hi;
        hi = hi * 2;
    }
    while (hi - lo > 1) {
        unsigned mid = lo + (hi - lo) / 2;
        if (suffix_taken(h, slots, i, base, mid))
            lo = mid;
        else
            hi = mid;
    }
    snprintf(slots[i].id_buf, sizeof(slots[i].id_buf), "%s_%u", base, hi);
}

/* The id the history carries: the provider's, with characters Anthropic refuses in a
 * tool_use id (outside [A-Za-z0-9_-]) replaced, and made unique. */
static void history_id(const rein_history *h, struct call_slot *slots, size_t i, const char *id)
{
    struct call_slot *s = &slots[i];
    char base[REIN_ID_MAX];
    size_t n = 0;

    s->id = id;
    if (id[0] && rein__wire_name_ok(id, strlen(id)) && !id_taken(h, slots, i, id))
        return;
    for (const char *p = id; *p && n + 1 < sizeof(base); p++)
        base[n++] = rein__wire_name_ok(p, 1) ? *p : '_';
    base[n] = '\0';
    if (n == 0)
        snprintf(base, sizeof(base), "call");
    snprintf(s->id_buf, sizeof(s->id_buf), "%s", base);
    if (id_taken(h, slots, i, s->id_buf))
        fresh_suffix(h, slots, i, base);
    s->id = s->id_buf;
}

/* Appends the assistant message with each call's id and name replaced by the slot's. */
static rein_err append_rewritten(struct turn *t, const rein_model_response *resp,
                                 const struct call_slot *slots, size_t n)
{
    json_t *msg = rein_model_response_message(resp), *calls;
    rein_err rc = REIN_ENOMEM;

    if (!msg)
        return REIN_ENOMEM;
    calls = json_object_get(msg, "tool_calls");
    for (size_t i = 0; i < n && i < json_array_size(calls); i++) {
        json_t *c = json_array_get(calls, i);
        if (json_object_set_new(c, "id", json_string(slots[i].id)) != 0 ||
            json_object_set_new(c, "name", json_string(slots[i].name)) != 0)
            goto out;
    }
    rc = rein_history_append(t->h, msg, NULL);
out:
    json_decref(msg);
    return rc;
}

rein_err rein__history_add_reply(struct turn *t, const rein_model_response *resp,
                                 struct call_slot *slots, size_t n)
{
    bool rewrite = false;
    rein_err rc;

    for (size_t i = 0; i < n; i++) {
        const rein_model_call *mc = rein_model_response_call(resp, i);
        const char *id = rein_model_call_id(mc), *name = rein_model_call_name(mc);
        struct call_slot *s = &slots[i];

        s->t = t;
        s->mc = mc;
        history_id(t->h, slots, i, id);
        if (s->id != id)
            rewrite = true;
        s->name = history_name(t->a->reg, name, s->name_buf, sizeof(s->name_buf));
        if (s->name != name)
            rewrite = true;
        rein_buf_init(&s->content, 0);
    }
    rc = rewrite ? append_rewritten(t, resp, slots, n) : rein_history_add_response(t->h, resp);
    if (rc)
        return rc;
    return rein__turn_persist_last(t);
}

/* ---- unanswered calls ---- */

/* The normalized result of a call that never got one (docs/DESIGN.md's shape, from tools'
 * writer): code "cancelled" for a call that never ran; code "interrupted" when msg says it may
 * have run. */
static char *closed_content(const char *tool, const char *id, const char *trace_id,
                            enum rein_call_code code, const char *msg)
{
    struct rein_buf b;
    struct rein_jw w;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_call_result_write_error(&w, tool, id, trace_id, code, msg);
    if (rein_jw_finish(&w) != REIN_OK) {
        rein_buf_release(&b);
        return NULL;
    }
    return rein_buf_detach(&b, NULL);
}

/* Records the closed call in the turn's ledger, so a store's pending entry is closed too. */
static void ledger_close(struct turn *t, const char *tool, const char *id, const char *raw,
                         const char *content)
{
    struct rein_ledger_call call = {
        .call_id = id,
        .tool = tool,
        .trace_id = t->trace_id,
        .has_step = t->o->has_step,
        .step = t->o->step,
    };
    json_t *args = raw && raw[0] ? rein_json_parse(raw, strlen(raw), 0, NULL) : json_object();
    json_t *res = rein_json_parse(content, strlen(content), 0, NULL);

    call.args = args;
    if (rein_ledger_add_call(t->ledger, &call, NULL, NULL) != REIN_OK ||
        rein_ledger_update_result(t->ledger, t->o->has_step, t->o->step, id, tool, REIN_CALL_ERROR,
                                  json_object_get(res, "error"), NULL) != REIN_OK)
        rein_log(REIN_LOG_WARN, REIN__AGENT_WHERE, "the ledger could not record closing %s", id);
    json_decref(args);
    json_decref(res);
}

/* The ids answered by the tool messages from index j on (consecutive ones). */
static bool answered(const rein_history *h, size_t j, const char *id)
{
    for (const json_t *m; (m = rein_history_get(h, j)) != NULL; j++) {
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role || strcmp(role, "tool") != 0)
            return false;
        if (strcmp(json_string_value(json_object_get(m, "tool_call_id")), id) == 0)
            return true;
    }
    return false;
}

/* Index just past the tool messages that follow index i. */
static size_t after_results(const rein_history *h, size_t i)
{
    size_t j = i + 1;

    for (const json_t *m; (m = rein_history_get(h, j)) != NULL; j++) {
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role || strcmp(role, "tool") != 0)
            break;
    }
    return j;
}

/* Replaces h's messages from index `from` with those of list (borrowed). */
static rein_err replace_tail(rein_history *h, size_t from, const json_t *list, rein_error *err)
{
    rein_history *check = rein_history_from_json(list, err);
    size_t i;
    json_t *m;

    /* Every message is checked before h is touched, so a bad one cannot leave h cut short. */
    if (!check)
        return err ? err->code : REIN_ENOMEM;
    rein_history_free(check);
    rein_history_truncate(h, from);
    json_array_foreach(list, i, m)
    {
        rein_err rc = rein_history_append(h, m, err);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

/* True when id is among the calls st lists as started (st may be NULL). */
static bool started_before(const struct rein_agent_started *st, const char *id)
{
    for (size_t k = 0; st && k < st->count; k++) {
        if (strcmp(st->ids[k], id) == 0)
            return true;
    }
    return false;
}

/*
 * What an unanswered call's result says, written into msg; returns the error code. A call
 * whose ledger entry shows it started (a process may have run it before rein stopped) is
 * "interrupted" and says it may have run; saying "not run" would invite running a destructive
 * call twice, so a destructive tool's result says so outright (and the log warns).
 */
static enum rein_call_code close_message(const struct rein_agent_started *st, const char *name,
                                         const char *id, const char *reason, char *msg, size_t size)
{
    const rein_tool *tool;

    if (!started_before(st, id)) {
        snprintf(msg, size, "not run: %s", reason);
        return REIN_CALL_CANCELLED;
    }
    tool = st->reg ? rein_registry_get(st->reg, name) : NULL;
    if (tool && rein_tool_is_destructive(tool)) {
        snprintf(msg, size,
                 "interrupted: rein stopped while this call was running, so it may have run; "
                 "%s is destructive: check what it changed before calling it again",
                 name);
        rein_log(REIN_LOG_WARN, REIN__AGENT_WHERE,
                 "%s (%s) may have run before rein stopped; it is destructive: check what it "
                 "changed before running it again",
                 name, id);
    } else {
        snprintf(msg, size,
                 "interrupted: rein stopped while this call was running, so it may have run; "
                 "check its effect before calling it again");
    }
    return REIN_CALL_INTERRUPTED;
}

/* Fixes one assistant message at index i: names the wire refuses, and missing results.
 * *changed tells the caller to look at the history again from the start. */
static rein_err close_one(struct turn *t, rein_history *h, size_t i, const char *reason,
                          const struct rein_agent_started *st, size_t *added, bool *changed,
                          rein_error *err)
{
    const json_t *msg = rein_history_get(h, i);
    const json_t *calls = json_object_get(msg, "tool_calls");
    size_t j = after_results(h, i), k;
    json_t *fresh = json_array(), *fixed = NULL, *c;
    rein_err rc = REIN_ENOMEM;

    *changed = false;
    if (!fresh)
        return REIN_ENOMEM;
    json_array_foreach(calls, k, c)
    {
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *name = json_string_value(json_object_get(c, "name"));
        if (!rein__wire_name_ok(name, strlen(name))) {
            if (!fixed && !(fixed = json_deep_copy(msg)))
                goto out;
            json_object_set_new(json_array_get(json_object_get(fixed, "tool_calls"), k), "name",
                                json_string(REIN_AGENT_INVALID_NAME));
            name = REIN_AGENT_INVALID_NAME;
        }
        if (answered(h, i + 1, id))
            continue;
        char text[600];
        enum rein_call_code code = close_message(st, name, id, reason, text, sizeof(text));
        char *content = closed_content(name, id, t ? t->trace_id : NULL, code, text);
        json_t *tm = content
                         ? json_pack("{s:s, s:s, s:s, s:s, s:b}", "role", "tool", "tool_call_id",
                                     id, "name", name, "content", content, "is_error", 1)
                         : NULL;
        if (tm && t)
            ledger_close(t, name, id, json_string_value(json_object_get(c, "arguments")), content);
        rein_free(content);
        if (!tm || json_array_append_new(fresh, tm) != 0)
            goto out;
    }
    if (!fixed && json_array_size(fresh) == 0) {
        rc = REIN_OK;
        goto out;
    }
    if (!fixed && j == rein_history_len(h)) {
        /* The usual case (a turn that died): the results go at the end, and are persisted. */
        json_array_foreach(fresh, k, c)
        {
            rc = rein_history_append(h, c, err);
            if (!rc && t)
                rc = rein__turn_persist_last(t);
            if (rc)
                goto out;
            (*added)++;
        }
        rc = REIN_OK;
        goto out;
    }
    /* Rebuild from message i: the (fixed) assistant message, its results, the new ones, then
     * the rest. This changes the history in memory only. */
    {
        json_t *all = rein_history_to_json(h), *list = json_array();
        if (!all || !list) {
            json_decref(all);
            json_decref(list);
            goto out;
        }
        json_array_append(list, fixed ? fixed : json_array_get(all, i));
        for (size_t x = i + 1; x < j; x++)
            json_array_append(list, json_array_get(all, x));
        json_array_extend(list, fresh);
        for (size_t x = j; x < json_array_size(all); x++)
            json_array_append(list, json_array_get(all, x));
        rc = replace_tail(h, i, list, err);
        json_decref(all);
        json_decref(list);
        if (!rc) {
            *added += json_array_size(fresh);
            *changed = true;
        }
    }
out:
    json_decref(fresh);
    json_decref(fixed);
    return rc;
}

rein_err rein__history_close_calls(struct turn *t, rein_history *h, const char *reason,
                                   const struct rein_agent_started *st, size_t *added,
                                   rein_error *err)
{
    size_t n = 0;
    bool changed = true;

    if (!reason)
        reason = "the turn that made it ended before it ran";
    while (changed) {
        changed = false;
        /* Every exchange before the first open one is answered with wire names: the history
         * keeps track, so a turn does not walk the whole conversation. */
        for (size_t i = rein_history_first_open(h); i < rein_history_len(h) && !changed; i++) {
            const json_t *m = rein_history_get(h, i);
            const char *role = json_string_value(json_object_get(m, "role"));
            rein_err rc;

            if (!role || strcmp(role, "assistant") != 0 ||
                json_array_size(json_object_get(m, "tool_calls")) == 0)
                continue;
            rc = close_one(t, h, i, reason, st, &n, &changed, err);
            if (rc) {
                if (added)
                    *added = n;
                return rc;
            }
        }
    }
    if (added)
        *added = n;
    return REIN_OK;
}

rein_err rein_agent_history_repair(rein_history *h, const char *reason, size_t *added,
                                   rein_error *err)
{
    return rein_agent_history_repair_started(h, reason, NULL, added, err);
}

rein_err rein_agent_history_repair_started(rein_history *h, const char *reason,
                                           const struct rein_agent_started *started, size_t *added,
                                           rein_error *err)
{
    if (added)
        *added = 0;
    if (!h)
        return rein_error_set(err, REIN_EINVAL, "no history");
    return rein__history_close_calls(NULL, h, reason, started, added, err);
}
