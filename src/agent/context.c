/*
 * The context window (issue 5 item 8): how big the next request is, and what gives way when
 * the conversation outgrows the model's window.
 *
 * Sizes are estimates: the provider's reported usage for everything up to its last reply, plus
 * about one token per four bytes of what was appended since. When the estimate passes the
 * window (less a reserve for the answer), old tool results (those the model has already
 * answered after) are shortened first, oldest first, to a JSON object with their head, their
 * tail and how much was cut; when that is not enough the oldest whole exchanges (a user message
 * and everything up to the next one) are dropped, and last the results the model has not read
 * yet are shortened too.
 * The system prompt and the last user message, with everything after it, are never dropped.
 * Shortening rebuilds the history from the first changed message, which is encoded again once;
 * the exchanges that must go are found first and removed at once, in place.
 */
#include "agent_int.h"

#include <stdio.h>
#include <string.h>

#define KEEP_HEAD     600 /* bytes of a shortened tool result kept from its start */
#define KEEP_TAIL     300 /* and from its end */
#define SHORTEN_ABOVE 1500
#define MSG_OVERHEAD  16
#define CALL_OVERHEAD 24
#define TOOL_OVERHEAD 48 /* a tool's wrapping in the request, in bytes */

static int64_t str_len(const json_t *obj, const char *key)
{
    return (int64_t)json_string_length(json_object_get(obj, key));
}

int64_t rein__message_bytes(const json_t *msg)
{
    int64_t n = MSG_OVERHEAD + str_len(msg, "content") + str_len(msg, "reasoning");
    const json_t *calls = json_object_get(msg, "tool_calls"), *c;
    size_t i;

    json_array_foreach(calls, i, c)
    {
        n += CALL_OVERHEAD + str_len(c, "name") + str_len(c, "arguments") + str_len(c, "id");
    }
    return n;
}

/* The sum of rein__message_bytes over the history, from the history's running sums (the
 * same figure without a pass over the conversation). */
static int64_t history_bytes(const rein_history *h)
{
    int64_t text;
    size_t calls;

    rein_history_size(h, &text, &calls);
    return MSG_OVERHEAD * (int64_t)rein_history_len(h) + text + CALL_OVERHEAD * (int64_t)calls;
}

static int64_t tool_bytes(const rein_tool *tool)
{
    char *params = rein_json_dumps(rein_tool_parameters(tool));
    int64_t n = TOOL_OVERHEAD + (int64_t)strlen(rein_tool_id(tool)) +
                (int64_t)strlen(rein_tool_description(tool)) +
                (params ? (int64_t)strlen(params) : 0);

    rein_free(params);
    return n;
}

/* Bytes the offered tools take in a request: measured once per agent for the whole registry,
 * per turn for a subset. */
static int64_t offered_tools_bytes(struct turn *t)
{
    const rein_registry *reg = t->a->reg;
    int64_t n = 0;

    if (t->o->tools) {
        for (size_t i = 0; i < t->o->tool_count; i++) {
            const rein_tool *tool = rein_registry_get(reg, t->o->tools[i]);
            n += tool ? tool_bytes(tool) : 0;
        }
        return n;
    }
    /* Tools join and leave while an agent lives (MCP servers): measured again after a change. */
    uint64_t gen = rein_registry_generation(reg);
    n = atomic_load(&t->a->tools_bytes);
    if (n >= 0 && atomic_load(&t->a->tools_gen) == gen)
        return n;
    n = 0;
    for (size_t i = 0; i < rein_registry_count(reg); i++) {
        const rein_tool *tool = rein_registry_at(reg, i);
        n += tool ? tool_bytes(tool) : 0;
    }
    atomic_store(&t->a->tools_gen, gen);
    atomic_store(&t->a->tools_bytes, n);
    return n;
}

int64_t rein__context_estimate(struct turn *t)
{
    if (!t->est_valid) {
        t->est_tokens = (history_bytes(t->h) + offered_tools_bytes(t)) / 4;
        t->pending_bytes = 0;
        t->est_valid = true;
    }
    return t->est_tokens + t->pending_bytes / 4;
}

static int64_t window_of(const struct turn *t)
{
    return t->a->context_window > 0 ? t->a->context_window : t->a->caps.context_window;
}

/* Index of the last user message, or 0. */
static size_t last_user(const rein_history *h)
{
    for (size_t i = rein_history_len(h); i-- > 0;) {
        const char *role = rein_history_role(h, i);
        if (role && strcmp(role, "user") == 0)
            return i;
    }
    return 0;
}

/* Bytes of s that end on a UTF-8 character boundary, at most n. */
static size_t utf8_cut(const char *s, size_t n)
{
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* A shortened copy of tool message m (new), or NULL when it is short enough or memory ran
 * out. */
static json_t *shortened(const json_t *m)
{
    const char *content = json_string_value(json_object_get(m, "content"));
    size_t len = json_string_length(json_object_get(m, "content")), head, tail;
    json_t *copy, *note;
    char text[160];

    if (!content || len <= SHORTEN_ABOVE || strncmp(content, "{\"shortened\"", 12) == 0)
        return NULL;
    head = utf8_cut(content, KEEP_HEAD);
    tail = len - utf8_cut(content, len - KEEP_TAIL);
    snprintf(text, sizeof(text),
             "this old tool result was shortened to fit the context window: %zu of %zu "
             "characters cut",
             len - head - tail, len);
    note = json_pack("{s:s, s:s%, s:s%}", "shortened", text, "head", content, head, "tail",
                     content + len - tail, tail);
    if (!note)
        return NULL;
    copy = json_deep_copy(m);
    char *text_json = rein_json_dumps(note);
    json_decref(note);
    if (!copy || !text_json || json_object_set_new(copy, "content", json_string(text_json))) {
        json_decref(copy);
        rein_free(text_json);
        return NULL;
    }
    rein_free(text_json);
    return copy;
}

/* Index of the last assistant message (the model has read every result before it), or 0. */
static size_t last_assistant(const rein_history *h)
{
    for (size_t i = rein_history_len(h); i-- > 0;) {
        const char *role = rein_history_role(h, i);
        if (role && strcmp(role, "assistant") == 0)
            return i;
    }
    return 0;
}

/* Shortens tool results before index `before`, oldest first, until the estimate fits: each in
 * place (rein_history_replace), the other messages kept as they are, encodings included. */
static rein_err shorten_results(struct turn *t, int64_t limit, size_t before, bool *fits)
{
    int64_t est = rein__context_estimate(t);
    rein_err rc = REIN_OK;

    for (size_t i = 1; !rc && i < rein_history_len(t->h) && i < before && est > limit; i++) {
        const char *role = rein_history_role(t->h, i);
        const json_t *m;
        json_t *s;
        /* Only a tool result's tree is made (a long history keeps its messages as text). */
        if (!role || strcmp(role, "tool") != 0 || !(m = rein_history_get(t->h, i)) ||
            !(s = shortened(m)))
            continue;
        est -= (rein__message_bytes(m) - rein__message_bytes(s)) / 4;
        rc = rein_history_replace(t->h, i, s, NULL);
        json_decref(s);
        t->est_valid = false;
    }
    *fits = rc == REIN_OK && rein__context_estimate(t) <= limit;
    return rc;
}

/* True when message i of h is the user's (an exchange starts there). */
static bool is_user(const rein_history *h, size_t i)
{
    const char *r = rein_history_role(h, i);

    return r && strcmp(r, "user") == 0;
}

/*
 * Phase 2: drops the oldest exchanges after the system prompt (an exchange: a user message and
 * everything up to the next one), oldest first, as many as the estimate says must go, in one
 * removal from the history (rein_history_remove: the kept messages are neither copied nor
 * encoded again). The cut is the one dropping them one at a time would make, since after the
 * first drop the estimate is the byte count, which falls by each dropped message's
 * rein__message_bytes.
 * *dropped is false when no exchange was left to drop.
 */
static rein_err drop_exchanges(struct turn *t, int64_t limit, bool *dropped)
{
    size_t keep_from = last_user(t->h), start, cut;
    const json_t *first = rein_history_get(t->h, 0);
    const char *role = json_string_value(json_object_get(first, "role"));
    int64_t bytes = history_bytes(t->h) + offered_tools_bytes(t);

    *dropped = false;
    start = role && strcmp(role, "system") == 0 ? 1 : 0;
    if (start >= keep_from)
        return REIN_OK;
    cut = start;
    do {
        bytes -= rein__message_bytes(rein_history_get(t->h, cut));
        for (cut++; cut < keep_from && !is_user(t->h, cut); cut++)
            bytes -= rein__message_bytes(rein_history_get(t->h, cut));
    } while (cut < keep_from && bytes / 4 > limit);
    /* Removed in place: the kept messages' encodings move down, none is made again. */
    rein_history_remove(t->h, start, cut);
    t->est_valid = false;
    *dropped = true;
    t->dropped += cut - start;
    return REIN_OK;
}

void rein__context_fit(struct turn *t)
{
    int64_t window = window_of(t), reserve, limit;
    bool fits = false, dropped = true;
    rein_err rc;

    if (window <= 0)
        return;
    reserve = window / 4 < 4096 ? window / 4 : 4096;
    limit = window - reserve;
    if (rein__context_estimate(t) <= limit)
        return;
    /* First the results the model has already read, then whole old exchanges, and only then
     * the results it has not read yet. */
    rc = shorten_results(t, limit, last_assistant(t->h), &fits);
    while (!rc && !fits && dropped) {
        rc = drop_exchanges(t, limit, &dropped);
        fits = rein__context_estimate(t) <= limit;
    }
    if (!rc && !fits)
        rc = shorten_results(t, limit, SIZE_MAX, &fits);
    if (rc) {
        t->fatal = rc;
        return;
    }
    if (!fits)
        rein_log(REIN_LOG_INFO, REIN__AGENT_WHERE,
                 "the conversation is still larger than the context window (%lld tokens) after "
                 "shortening; sending it anyway",
                 (long long)window);
}
