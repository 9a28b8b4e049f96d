/*
 * The reasoning a reply's tool calls need back, for a client of another wire (decision 0102).
 *
 * A reasoning model wants the reasoning that led to its tool calls back with them, in a form
 * only its own wire has: Claude with thinking on refuses a request whose last assistant turn
 * (the one the tool results answer) does not start with its signed thinking block, and
 * Gemini 3 refuses one whose current turn has a functionCall part without its
 * thoughtSignature. A client of another wire (an OpenAI SDK, a Responses or Gemini client in
 * front of Claude, an OpenAI or Anthropic client in front of Gemini) has no place for either
 * and sends its assistant message back with the calls alone.
 *
 * So the gateway keeps them itself: when it hands a client of another wire the calls of a
 * reply that carried signed reasoning (Claude's thinking and redacted thinking blocks, Bedrock's
 * reasoningContent, Gemini's thought signatures), the reasoning is kept in memory under the
 * client's name and the first call's id, in a store of kept.c's kind (bounded in bytes and age,
 * least recently used first). A later request of that client whose assistant message has those
 * calls and no reasoning of its own gets it back in the neutral message, which the upstream's
 * wire then writes where it belongs.
 *
 * When nothing is kept (forgotten, another rein, a history made elsewhere) the request is made
 * one the upstream takes: Claude is asked without thinking, the reasoning member named in
 * x-rein-dropped; Gemini 3's calls of the current turn get the signature Google documents for
 * calls that came from elsewhere.
 */
#include "gateway/gateway_int.h"

#include <rein/provider.h>

#include "core/internal.h"

#include <string.h>

/* Google's documented stand-in for a thought signature a history made elsewhere lacks
 * (ai.google.dev, Thought signatures: "Using signatures with other models"). */
#define GEMINI_SKIP_SIGNATURE "skip_thought_signature_validator"

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* Whether msg carries Claude's thinking as Anthropic's and Bedrock's writers put it first. */
static bool has_thinking(const json_t *msg)
{
    return json_array_size(json_object_get(msg, "thinking_blocks")) ||
           json_array_size(json_object_get(msg, "redacted_reasoning")) ||
           (str(msg, "reasoning")[0] && str(msg, "reasoning_signature")[0]);
}

/* Whether msg carries any signed reasoning a wire writes back (Claude's or Gemini's). */
static bool has_signed(const json_t *msg)
{
    size_t i;
    json_t *call;

    if (has_thinking(msg) || str(msg, "reasoning_signature")[0])
        return true;
    json_array_foreach(json_object_get(msg, "tool_calls"), i, call)
    {
        if (str(call, "signature")[0])
            return true;
    }
    return false;
}

/* Whether the client's wire is the upstream's: its own history then carries what it needs. */
static bool same_wire(const struct rein__gw_ctx *c)
{
    return strcmp(rein_provider_wire(c->g->provider), c->wire->name) == 0;
}

/*
 * The reply's signed reasoning as kept: {"wire", "calls": [the ids handed out], "message":
 * {reasoning, reasoning_signature, redacted_reasoning, thinking_blocks (their "at" counted in
 * the calls handed out), "signatures": [per call handed out, or null]}}. NULL when there is
 * nothing to keep, or the calls handed out are not all this reply's (a re-ask's earlier round).
 */
static json_t *entry_of(const struct rein__gw_ctx *c, const json_t *msg)
{
    static const char *const members[] = {"reasoning", "reasoning_signature", "redacted_reasoning"};
    const json_t *blocks = json_object_get(msg, "thinking_blocks");
    json_t *e, *m, *ids, *sigs, *kept_blocks = NULL;
    size_t emitted = 0, i;
    json_t *b;
    bool bad;

    for (i = 0; i < c->nrc; i++)
        emitted += c->rc[i].emitted;
    if (emitted != c->nout || !has_signed(msg))
        return NULL;
    e = json_object();
    m = json_object();
    ids = json_array();
    sigs = json_array();
    bad = !e || !m || !ids || !sigs;
    for (i = 0; !bad && i < c->nout; i++)
        bad = json_array_append_new(ids, json_string(c->out[i].id)) ||
              json_array_append_new(sigs, c->out[i].signature ? json_string(c->out[i].signature)
                                                              : json_null());
    if (!bad && json_array_size(blocks)) {
        bad = !(kept_blocks = json_array());
        json_array_foreach(blocks, i, b)
        {
            /* a block before the reply's call at goes before the calls handed out before it */
            size_t at = (size_t)json_integer_value(json_object_get(b, "at")), n = 0;
            json_t *copy = bad ? NULL : json_deep_copy(b);
            for (size_t k = 0; k < at && k < c->nrc; k++)
                n += c->rc[k].emitted;
            if (!copy || json_object_set_new(copy, "at", json_integer((json_int_t)n))) {
                json_decref(copy);
                bad = true;
                continue;
            }
            bad = json_array_append_new(kept_blocks, copy) != 0; /* taken even on failure */
        }
        bad = json_object_set_new(m, "thinking_blocks", kept_blocks) || bad;
    }
    for (i = 0; !bad && i < REIN_ARRAY_SIZE(members); i++) {
        const json_t *v = json_object_get(msg, members[i]);
        if ((json_is_string(v) && json_string_length(v)) || json_array_size(v))
            bad = json_object_set(m, members[i], (json_t *)v) != 0;
    }
    /* each _set_new takes its value, even when it fails */
    bad = json_object_set_new(m, "signatures", sigs) || bad;
    bad = json_object_set_new(e, "calls", ids) || bad;
    bad = json_object_set_new(e, "message", m) || bad;
    bad = json_object_set_new(e, "wire", json_string(rein_provider_wire(c->g->provider))) || bad;
    if (bad) {
        json_decref(e);
        return NULL;
    }
    return e;
}

void rein__gw_reasoned_keep(struct rein__gw_ctx *c)
{
    json_t *msg, *e, *none;

    if (!c->g->reasoned.on || !c->last || !c->nout || same_wire(c))
        return;
    if (!(msg = rein_model_response_message(c->last)))
        return;
    e = entry_of(c, msg);
    none = e ? json_array() : NULL;
    /* a reasoning that cannot be kept (memory) costs the client the fallback, not the answer */
    if (e && none)
        (void)rein__gw_kept_put(&c->g->reasoned, rein__gw_owner(c), c->out[0].id, NULL, none, e);
    json_decref(none);
    json_decref(e);
    json_decref(msg);
}

/* Whether the kept entry e is for message msg's calls: the same ids in the same order, from an
 * upstream of the wire asked now. */
static bool entry_fits(const struct rein__gw_ctx *c, const json_t *e, const json_t *calls)
{
    const json_t *ids = json_object_get(e, "calls");
    size_t i;
    json_t *call;

    if (strcmp(str(e, "wire"), rein_provider_wire(c->g->provider)) != 0 ||
        json_array_size(ids) != json_array_size(calls))
        return false;
    json_array_foreach(calls, i, call)
    {
        if (strcmp(str(call, "id"), json_string_value(json_array_get(ids, i))) != 0)
            return false;
    }
    return true;
}

/* Message i (msg) of the history, with the reasoning of e put back. */
static rein_err put_back(struct rein__gw_ctx *c, size_t i, const json_t *msg, const json_t *e)
{
    const json_t *kept = json_object_get(e, "message");
    const json_t *sigs = json_object_get(kept, "signatures");
    json_t *copy = json_deep_copy(msg);
    const char *key;
    json_t *v, *call;
    size_t k;
    rein_err rc = copy ? REIN_OK : REIN_ENOMEM;

    json_object_foreach((json_t *)kept, key, v)
    {
        if (!rc && strcmp(key, "signatures") != 0 && json_object_set(copy, key, v))
            rc = REIN_ENOMEM;
    }
    json_array_foreach(json_object_get(copy, "tool_calls"), k, call)
    {
        const json_t *sig = json_array_get(sigs, k);
        if (!rc && json_is_string(sig) && json_object_set(call, "signature", (json_t *)sig))
            rc = REIN_ENOMEM;
    }
    if (!rc)
        rc = rein_history_replace(c->req.h, i, copy, NULL);
    json_decref(copy);
    return rc;
}

/* Every assistant message with calls and no reasoning of its own gets what its client's earlier
 * answer kept, when it is kept. */
static rein_err restore(struct rein__gw_ctx *c)
{
    size_t n = rein_history_len(c->req.h);
    rein_err rc = REIN_OK;

    for (size_t i = 0; i < n && !rc; i++) {
        const json_t *msg = rein_history_get(c->req.h, i);
        const json_t *calls = json_object_get(msg, "tool_calls");
        json_t *e = NULL;
        if (strcmp(str(msg, "role"), "assistant") != 0 || !json_array_size(calls) ||
            has_signed(msg))
            continue;
        rc = rein__gw_kept_get(&c->g->reasoned, rein__gw_owner(c),
                               str(json_array_get(calls, 0), "id"), &e, NULL);
        if (rc == REIN_ENOTFOUND) {
            rc = REIN_OK;
            continue;
        }
        if (!rc && entry_fits(c, e, calls))
            rc = put_back(c, i, msg, e);
        json_decref(e);
    }
    return rc;
}

/* The index of the assistant message the trailing tool results answer, or n when the history
 * does not end in tool results. */
static size_t final_call_turn(const rein_history *h)
{
    size_t n = rein_history_len(h), i = n;

    while (i > 0 && strcmp(str(rein_history_get(h, i - 1), "role"), "tool") == 0)
        i--;
    if (i == n || i == 0 || strcmp(str(rein_history_get(h, i - 1), "role"), "assistant") != 0)
        return n;
    return i - 1;
}

/*
 * Claude with thinking on refuses a final assistant turn of tool calls that does not start with
 * its thinking; Anthropic's own way around it is to ask without thinking, which such a turn
 * then passes. The reasoning member the client wrote is named as dropped.
 */
static rein_err claude_without_thinking(struct rein__gw_ctx *c)
{
    const char *wire = rein_provider_wire(c->g->provider);
    size_t n = rein_history_len(c->req.h), at;
    const json_t *msg;

    /* the client's ask, or the provider's configured reasoning_effort */
    if (!rein_provider_request_thinks(c->g->provider, c->mreq) ||
        (strcmp(wire, "anthropic") != 0 && strcmp(wire, "bedrock") != 0))
        return REIN_OK;
    if ((at = final_call_turn(c->req.h)) == n)
        return REIN_OK;
    msg = rein_history_get(c->req.h, at);
    if (!json_array_size(json_object_get(msg, "tool_calls")) || has_thinking(msg))
        return REIN_OK;
    rein_model_request_set_reasoning(c->mreq, REIN_REASONING_NONE, 0);
    if (!c->reasoning_name) /* rein's own configured reasoning: no member of the client's */
        return REIN_OK;
    rein__gw_unlist(c->req.dropped, c->reasoning_name);
    return json_array_append_new(c->req.dropped, json_string(c->reasoning_name)) ? REIN_ENOMEM
                                                                                 : REIN_OK;
}

/* Whether the model asked of a Gemini upstream is a Gemini 3 one (which checks signatures). */
static bool gemini_3(const struct rein__gw_ctx *c)
{
    const char *model = c->g->model_from_client && c->req.model
                            ? c->req.model
                            : rein_provider_model(c->g->provider);

    if (!model || strcmp(rein_provider_wire(c->g->provider), "gemini") != 0)
        return false;
    if (strncmp(model, "models/", 7) == 0)
        model += 7;
    return strncmp(model, "gemini-3", 8) == 0;
}

/*
 * Gemini 3 checks the current turn (the model's turns after the last user message that is not
 * a function's answer): the first functionCall part of each must carry its thoughtSignature.
 * One kept nowhere gets Google's stand-in for calls that came from elsewhere.
 */
static rein_err gemini_signatures(struct rein__gw_ctx *c)
{
    size_t n = rein_history_len(c->req.h), from = 0;
    rein_err rc = REIN_OK;

    if (!gemini_3(c))
        return REIN_OK;
    for (size_t i = n; i > 0; i--) {
        if (strcmp(str(rein_history_get(c->req.h, i - 1), "role"), "user") == 0) {
            from = i;
            break;
        }
    }
    for (size_t i = from; i < n && !rc; i++) {
        const json_t *msg = rein_history_get(c->req.h, i);
        json_t *copy;
        if (strcmp(str(msg, "role"), "assistant") != 0 ||
            !json_array_size(json_object_get(msg, "tool_calls")) ||
            str(json_array_get(json_object_get(msg, "tool_calls"), 0), "signature")[0])
            continue;
        copy = json_deep_copy(msg);
        rc = copy && !json_object_set_new(json_array_get(json_object_get(copy, "tool_calls"), 0),
                                          "signature", json_string(GEMINI_SKIP_SIGNATURE))
                 ? rein_history_replace(c->req.h, i, copy, NULL)
                 : REIN_ENOMEM;
        json_decref(copy);
    }
    return rc;
}

rein_err rein__gw_reasoned_restore(struct rein__gw_ctx *c)
{
    rein_err rc = REIN_OK;

    if (same_wire(c))
        return REIN_OK;
    if (c->g->reasoned.on)
        rc = restore(c);
    if (!rc)
        rc = claude_without_thinking(c);
    return rc ? rc : gemini_signatures(c);
}
