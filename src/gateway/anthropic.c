/*
 * The Anthropic messages wire as a server (include/rein/gateway.h): what an Anthropic client
 * sends to POST /v1/messages becomes the neutral request, and rein's answer goes back as a
 * message body, as the messages stream (message_start, content_block_start / _delta / _stop,
 * message_delta, message_stop), or as Anthropic's error body {"type": "error", "error":
 * {type, message}}.
 *
 * User content is text, image, document and tool_result blocks (tool results become neutral
 * tool messages, in order, before the user's text and media; for another wire the images and
 * documents in a tool_result become its attachments, decision 0098); assistant content is
 * text, tool_use, thinking and
 * redacted_thinking blocks (kept with their signatures and their place among the calls,
 * decision 0005) and Anthropic's server tool blocks (kept verbatim). An Anthropic upstream
 * gets every block and the tool list as the client wrote them (decision 0085: images,
 * documents, cache_control, server tools such as web search); for another wire a user's base64
 * image and document blocks become the message's attachments (decision 0097), and a url or
 * file source, a medium the upstream does not take and tools of other types than custom are
 * refused with a 400 that says so.
 */
#include "gateway/gateway_int.h"

#include <string.h>

static const char *const handled[] = {
    "model",       "messages", "system", "tools",          "tool_choice", "max_tokens",
    "temperature", "top_p",    "stream", "stop_sequences", NULL,
};
/* Members another wire may drop: bookkeeping, extended thinking (the upstream's model answers
 * the same request without it, as the Responses wire's reasoning is dropped) and top_k, a
 * sampling hint as Gemini's topK is; an output_config of an effort alone is one too (decision
 * 0099). */
static const char *const droppable[] = {"metadata", "service_tier", "thinking", "top_k", NULL};

/* output_config holding its effort and nothing else: how hard Claude works, as thinking. */
static bool effort_only(const json_t *v)
{
    return json_is_object(v) && json_object_size(v) == 1 && json_object_get(v, "effort");
}

static bool listed(const char *const *list, const char *key)
{
    return rein__gw_listed(list, key, strlen(key));
}

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* The same with the text of a string value (of the request's tree), copied. */
static json_t *string_msg(const char *role, const json_t *text)
{
    return rein__gw_text_msg(role, json_string_value(text), json_string_length(text));
}

/* msg (taken; returned, or NULL) with the blocks that stand for it on this wire: a copy, so
 * that the history shares nothing with the request's tree (history.h). */
static json_t *as_sent(json_t *msg, const json_t *blocks)
{
    if (msg && json_object_set_new(msg, "anthropic_blocks", json_deep_copy(blocks))) {
        json_decref(msg);
        return NULL;
    }
    return msg;
}

/* A block as the one item of an array, for as_sent. */
static json_t *as_sent_one(json_t *msg, const json_t *block)
{
    json_t *one = json_array();

    if (!one || json_array_append(one, (json_t *)block)) {
        json_decref(one);
        json_decref(msg);
        return NULL;
    }
    msg = as_sent(msg, one);
    json_decref(one);
    return msg;
}

/* ---- system ---------------------------------------------------------------------------- */

static rein_err take_system(struct rein__gw_req *r, const json_t *sys, struct rein__gw_bad *bad)
{
    size_t i;
    json_t *blk;
    char p[48];

    if (!sys || json_is_null(sys))
        return REIN_OK;
    if (json_is_string(sys))
        return rein__gw_append(r, true, string_msg("system", sys), "system", bad);
    if (!json_is_array(sys))
        return rein__gw_bad(bad, "system", "system: Input should be a valid string or list");
    /* One neutral system message per block keeps the blocks apart on the way back. */
    json_array_foreach(sys, i, blk)
    {
        const char *type = str(blk, "type");
        snprintf(p, sizeof(p), "system.%zu", i);
        json_t *msg;
        if (!type || strcmp(type, "text") != 0 || !str(blk, "text"))
            return rein__gw_bad(bad, p, "%s: system blocks must be text blocks", p);
        msg = string_msg("system", json_object_get(blk, "text"));
        if (r->verbatim) /* cache_control and whatever else the block carries */
            msg = as_sent_one(msg, blk);
        rein_err rc = rein__gw_append(r, true, msg, p, bad);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

/* ---- messages -------------------------------------------------------------------------- */

static rein_err take_media(const struct rein__gw_req *r, const json_t *blk, json_t **atts,
                           const char *p, struct rein__gw_bad *bad);

/*
 * A tool_result's content of blocks for an upstream of another wire (decision 0098): its text
 * blocks joined into *text (new), its image and document blocks into *atts (new, NULL when
 * there are none), as a user message's are; other blocks are refused by name.
 */
static rein_err result_blocks(const struct rein__gw_req *r, const json_t *content, const char *q,
                              char **text, json_t **atts, struct rein__gw_bad *bad)
{
    struct rein_buf b;
    size_t j;
    json_t *blk;
    char p[128];
    rein_err rc = REIN_OK;

    rein_buf_init(&b, 0);
    json_array_foreach(content, j, blk)
    {
        const char *type = str(blk, "type");
        snprintf(p, sizeof(p), "%s.%zu", q, j);
        if (type && strcmp(type, "text") == 0 && str(blk, "text"))
            rc = (b.len && rein_buf_addch(&b, '\n')) || rein_buf_adds(&b, str(blk, "text"))
                     ? REIN_ENOMEM
                     : REIN_OK;
        else if (type && (strcmp(type, "image") == 0 || strcmp(type, "document") == 0))
            rc = take_media(r, blk, atts, p, bad);
        else
            rc = rein__gw_bad(bad, p,
                              "%s: '%.40s' blocks in a tool_result are not supported by rein's "
                              "gateway for an upstream of another wire (text, image and document "
                              "only)",
                              p, type ? type : "(untyped)");
        if (rc)
            break;
    }
    if (!rc && !(*text = b.len ? rein_buf_detach(&b, NULL) : rein_strdup("")))
        rc = REIN_ENOMEM;
    rein_buf_release(&b);
    return rc;
}

/* A tool_result block as a neutral tool message: for an upstream of another wire its images
 * and documents become the message's attachments (decision 0098). */
static rein_err take_result(struct rein__gw_req *r, const json_t *blk, const char *p,
                            struct rein__gw_bad *bad)
{
    const json_t *content = json_object_get(blk, "content");
    const char *id = str(blk, "tool_use_id");
    char q[96], *text = NULL;
    json_t *msg, *atts = NULL;
    rein_err rc;

    if (!id)
        return rein__gw_bad(bad, p, "%s.tool_use_id: Field required", p);
    snprintf(q, sizeof(q), "%s.content", p);
    if (json_is_array(content) && !r->verbatim)
        rc = result_blocks(r, content, q, &text, &atts, bad);
    else if (content && !json_is_null(content))
        rc = rein__gw_content_text(content, q, true, r->verbatim, &text, bad);
    else
        rc = REIN_OK;
    if (rc) {
        rein_free(text);
        json_decref(atts);
        return rc;
    }
    msg = json_object();
    if (msg && (json_object_set_new(msg, "role", json_string("tool")) ||
                json_object_set_new(msg, "tool_call_id", json_string(id)) ||
                json_object_set_new(msg, "content", json_string(text ? text : "")) ||
                json_object_set_new(msg, "is_error",
                                    json_boolean(json_is_true(json_object_get(blk, "is_error")))) ||
                (atts && json_object_set(msg, "attachments", atts)))) {
        json_decref(msg);
        msg = NULL;
    }
    json_decref(atts);
    rein_free(text);
    if (r->verbatim) /* images and documents in the result, cache_control */
        msg = as_sent_one(msg, blk);
    return rein__gw_append(r, true, msg, p, bad);
}

/* Joins text into *acc with "\n" between pieces. */
static rein_err join(struct rein_buf *acc, const char *text)
{
    rein_err rc = REIN_OK;

    if (acc->len)
        rc = rein_buf_addch(acc, '\n');
    return rc ? rc : rein_buf_adds(acc, text);
}

/* An image or document block's medium for an upstream of another wire (decision 0097): a
 * base64 source becomes an attachment; a url or file source names what only Anthropic reads. */
static rein_err take_media(const struct rein__gw_req *r, const json_t *blk, json_t **atts,
                           const char *p, struct rein__gw_bad *bad)
{
    const json_t *src = json_object_get(blk, "source");
    const char *type = str(src, "type");
    const json_t *mime = json_object_get(src, "media_type"), *data = json_object_get(src, "data");

    if (type && !strcmp(type, "url"))
        return rein__gw_media_ref(r, p, "a URL", bad);
    if (type && !strcmp(type, "file"))
        return rein__gw_media_ref(r, p, "a file_id", bad);
    if (!type || strcmp(type, "base64") != 0 || !json_is_string(mime) || !json_is_string(data))
        return rein__gw_bad(bad, p,
                            "%s.source: rein's gateway carries a base64 source (type, media_type "
                            "and data) to an upstream of another wire",
                            p);
    return rein__gw_media(r, atts, json_string_value(mime), json_string_length(mime),
                          json_string_value(data), json_string_length(data), p, bad);
}

static rein_err take_user(struct rein__gw_req *r, const json_t *content, size_t i,
                          struct rein__gw_bad *bad)
{
    struct rein_buf text;
    size_t j;
    json_t *blk;
    char p[64];
    rein_err rc = REIN_OK;
    json_t *kept = NULL, *atts = NULL;

    if (json_is_string(content))
        return rein__gw_append(r, true, string_msg("user", content), "messages", bad);
    if (r->verbatim && !(kept = json_array()))
        return REIN_ENOMEM;
    rein_buf_init(&text, 0);
    json_array_foreach(content, j, blk)
    {
        const char *type = str(blk, "type");
        snprintf(p, sizeof(p), "messages.%zu.content.%zu", i, j);
        if (!type)
            rc = rein__gw_bad(bad, p, "%s.type: Field required", p);
        else if (strcmp(type, "tool_result") == 0)
            rc = take_result(r, blk, p, bad);
        else if (kept) /* as sent: images, documents, cache_control; the text read too */
            rc = json_array_append(kept, blk) || (strcmp(type, "text") == 0 && str(blk, "text") &&
                                                  join(&text, str(blk, "text")))
                     ? REIN_ENOMEM
                     : REIN_OK;
        else if (strcmp(type, "text") == 0 && str(blk, "text"))
            rc = join(&text, str(blk, "text"));
        else if (strcmp(type, "image") == 0 || strcmp(type, "document") == 0)
            rc = take_media(r, blk, &atts, p, bad);
        else
            rc = rein__gw_bad(bad, p,
                              "%s: '%.40s' blocks are not supported by rein's gateway (text, "
                              "image, document and tool_result only)",
                              p, type);
        if (rc)
            break;
    }
    if (!rc && json_array_size(kept))
        rc = rein__gw_append(
            r, true, as_sent(rein__gw_text_msg("user", text.ptr ? text.ptr : "", text.len), kept),
            "messages", bad);
    else if (!rc && (text.len || atts))
        rc = rein__gw_append(r, true, rein__gw_user_msg(text.ptr, text.len, atts), "messages", bad);
    json_decref(atts);
    json_decref(kept);
    rein_buf_release(&text);
    return rc;
}

/* The blocks of an assistant message: text, tool_use, thinking, server blocks. */
struct asst {
    struct rein_buf text, reasoning;
    json_t *calls, *blocks, *redacted, *server;
    const char *signature;
    size_t thinking;
};

static rein_err take_block(struct asst *a, const json_t *blk, const char *p, bool verbatim,
                           struct rein__gw_bad *bad)
{
    const char *type = str(blk, "type");
    json_int_t at = (json_int_t)json_array_size(a->calls);

    if (!type)
        return rein__gw_bad(bad, p, "%s.type: Field required", p);
    if (strcmp(type, "text") == 0 && str(blk, "text"))
        return join(&a->text, str(blk, "text"));
    if (strcmp(type, "tool_use") == 0) {
        const json_t *input = json_object_get(blk, "input");
        char *args;
        json_t *call;
        if (!str(blk, "id") || !str(blk, "name") || !json_is_object(input))
            return rein__gw_bad(bad, p, "%s: tool_use needs an id, a name and an input object", p);
        args = rein_json_dumps(input);
        call = args ? json_pack("{s:s, s:s, s:s}", "id", str(blk, "id"), "name", str(blk, "name"),
                                "arguments", args)
                    : NULL;
        rein_free(args);
        return !call || json_array_append_new(a->calls, call) ? REIN_ENOMEM : REIN_OK;
    }
    if (strcmp(type, "thinking") == 0 && str(blk, "thinking")) {
        const char *sig = str(blk, "signature");
        a->thinking++;
        a->signature = sig;
        if (json_array_append_new(a->blocks,
                                  json_pack("{s:s, s:s, s:I}", "thinking", str(blk, "thinking"),
                                            "signature", sig ? sig : "", "at", at)))
            return REIN_ENOMEM;
        return rein_buf_adds(&a->reasoning, str(blk, "thinking"));
    }
    if (strcmp(type, "redacted_thinking") == 0 && str(blk, "data")) {
        a->thinking++;
        if (json_array_append_new(a->blocks,
                                  json_pack("{s:s, s:I}", "redacted", str(blk, "data"), "at", at)))
            return REIN_ENOMEM;
        return json_array_append_new(a->redacted, json_string(str(blk, "data"))) ? REIN_ENOMEM
                                                                                 : REIN_OK;
    }
    if (strstr(type, "_tool_use") || strstr(type, "_tool_result"))
        return json_array_append(a->server, (json_t *)blk) ? REIN_ENOMEM : REIN_OK;
    if (verbatim) /* the message goes up as it was sent (as_sent) */
        return REIN_OK;
    return rein__gw_bad(bad, p, "%s: '%.40s' blocks are not supported by rein's gateway", p, type);
}

static rein_err take_assistant(struct rein__gw_req *r, const json_t *content, size_t i,
                               struct rein__gw_bad *bad)
{
    struct asst a = {.calls = json_array(),
                     .blocks = json_array(),
                     .redacted = json_array(),
                     .server = json_array()};
    json_t *msg = json_pack("{s:s}", "role", "assistant"), *blk;
    char p[64];
    size_t j;
    rein_err rc = msg && a.calls && a.blocks && a.redacted && a.server ? REIN_OK : REIN_ENOMEM;

    rein_buf_init(&a.text, 0);
    rein_buf_init(&a.reasoning, 0);
    if (!rc && json_is_string(content))
        rc = join(&a.text, json_string_value(content));
    json_array_foreach(json_is_array(content) ? content : NULL, j, blk)
    {
        snprintf(p, sizeof(p), "messages.%zu.content.%zu", i, j);
        if (!rc)
            rc = take_block(&a, blk, p, r->verbatim, bad);
    }
    if (!rc && json_object_set_new(msg, "content", json_string(a.text.ptr)))
        rc = REIN_ENOMEM;
    if (!rc && json_array_size(a.calls) && json_object_set(msg, "tool_calls", a.calls))
        rc = REIN_ENOMEM;
    if (!rc && a.thinking) {
        /* The ordered blocks are what the Anthropic encoder replays; the joined text is for
         * other wires and for display. */
        if (json_object_set(msg, "thinking_blocks", a.blocks) ||
            json_object_set_new(msg, "reasoning", json_string(a.reasoning.ptr)) ||
            (a.signature &&
             json_object_set_new(msg, "reasoning_signature", json_string(a.signature))) ||
            (json_array_size(a.redacted) && json_object_set(msg, "redacted_reasoning", a.redacted)))
            rc = REIN_ENOMEM;
    }
    if (!rc && json_array_size(a.server) && json_object_set(msg, "server_blocks", a.server))
        rc = REIN_ENOMEM;
    if (!rc && r->verbatim && json_is_array(content) && !(msg = as_sent(msg, content)))
        rc = REIN_ENOMEM;
    json_decref(a.calls);
    json_decref(a.blocks);
    json_decref(a.redacted);
    json_decref(a.server);
    rein_buf_release(&a.text);
    rein_buf_release(&a.reasoning);
    if (rc) {
        json_decref(msg);
        return rc;
    }
    snprintf(p, sizeof(p), "messages.%zu", i);
    return rein__gw_append(r, false, msg, p, bad);
}

/* Message i of the messages array. */
static rein_err take_message(struct rein__gw_req *r, const json_t *m, size_t i,
                             struct rein__gw_bad *bad)
{
    const char *role = str(m, "role");
    const json_t *content = json_object_get(m, "content");
    char p[48];

    snprintf(p, sizeof(p), "messages.%zu", i);
    if (!json_is_object(m))
        return rein__gw_bad(bad, p, "%s: Input should be a valid dictionary", p);
    if (!role || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0))
        return rein__gw_bad(bad, p, "%s.role: Input should be 'user' or 'assistant'", p);
    if (!json_is_string(content) && !json_is_array(content))
        return rein__gw_bad(bad, p, "%s.content: Input should be a valid string or list", p);
    return strcmp(role, "user") == 0 ? take_user(r, content, i, bad)
                                     : take_assistant(r, content, i, bad);
}

static rein_err take_messages(struct rein__gw_req *r, const json_t *msgs, struct rein__gw_bad *bad)
{
    size_t i;
    json_t *m;

    if (!msgs)
        return rein__gw_bad(bad, "messages", "messages: Field required");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return rein__gw_bad(bad, "messages", "messages: Input should be a non-empty list");
    json_array_foreach(msgs, i, m)
    {
        rein_err rc = take_message(r, m, i, bad);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

/* ---- tools and options ------------------------------------------------------------------- */

static rein_err take_tools(struct rein__gw_req *r, const json_t *tools, struct rein__gw_bad *bad)
{
    size_t i;
    json_t *t;
    char p[48];

    if (!tools || json_is_null(tools))
        return REIN_OK;
    if (!json_is_array(tools))
        return rein__gw_bad(bad, "tools", "tools: Input should be a valid list");
    r->tools_json = (json_t *)tools;
    r->tools = rein_calloc(json_array_size(tools) + 1, sizeof(*r->tools));
    if (!r->tools)
        return REIN_ENOMEM;
    json_array_foreach(tools, i, t)
    {
        const char *type = str(t, "type");
        const json_t *schema = json_object_get(t, "input_schema");
        snprintf(p, sizeof(p), "tools.%zu", i);
        if (!json_is_object(t))
            return rein__gw_bad(bad, p, "%s: Input should be a valid dictionary", p);
        if (type && strcmp(type, "custom") != 0 && r->verbatim)
            continue; /* Anthropic's own tool (web search, code execution): it runs there */
        if (type && strcmp(type, "custom") != 0)
            return rein__gw_bad(bad, p,
                                "%s: '%.40s' tools are not supported by rein's gateway (custom "
                                "tools with an input_schema only)",
                                p, type);
        if (!str(t, "name"))
            return rein__gw_bad(bad, p, "%s.name: Field required", p);
        if (!json_is_object(schema))
            return rein__gw_bad(bad, p, "%s.input_schema: Field required (an object)", p);
        r->tools[r->ntools].name = str(t, "name");
        r->tools[r->ntools].description = str(t, "description");
        r->tools[r->ntools].parameters = (json_t *)schema;
        r->ntools++;
    }
    return REIN_OK;
}

static rein_err take_choice(struct rein__gw_req *r, const json_t *v, struct rein__gw_bad *bad)
{
    const char *type = str(v, "type");
    const char *choice = NULL;

    if (!v || json_is_null(v))
        return REIN_OK;
    if (!type)
        return rein__gw_bad(bad, "tool_choice", "tool_choice.type: Field required");
    if (!strcmp(type, "auto") || !strcmp(type, "none"))
        choice = type;
    else if (!strcmp(type, "any"))
        choice = "required";
    else if (!strcmp(type, "tool") && str(v, "name"))
        choice = str(v, "name");
    else
        return rein__gw_bad(bad, "tool_choice",
                            "tool_choice: expected type 'auto', 'any', 'none' or 'tool' with a "
                            "name");
    if (json_is_true(json_object_get(v, "disable_parallel_tool_use")))
        r->parallel = 0;
    r->tool_choice = rein_strdup(choice);
    return r->tool_choice ? REIN_OK : REIN_ENOMEM;
}

static rein_err take_options(struct rein__gw_req *r, const json_t *body, struct rein__gw_bad *bad)
{
    const json_t *v = json_object_get(body, "max_tokens");

    if (!v && !r->count) /* a count's body has none */
        return rein__gw_bad(bad, "max_tokens", "max_tokens: Field required");
    if (v && (!json_is_integer(v) || json_integer_value(v) < 1))
        return rein__gw_bad(bad, "max_tokens", "max_tokens: Input should be an integer >= 1");
    r->max_tokens = v ? json_integer_value(v) : 0;
    v = json_object_get(body, "temperature");
    if (v && !json_is_null(v)) {
        if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1)
            return rein__gw_bad(bad, "temperature", "temperature: Input should be from 0 to 1");
        r->temperature = json_number_value(v);
    }
    v = json_object_get(body, "top_p");
    if (v && !json_is_null(v)) {
        if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1)
            return rein__gw_bad(bad, "top_p", "top_p: Input should be from 0 to 1");
        r->top_p = json_number_value(v);
    }
    v = json_object_get(body, "stop_sequences");
    if (json_is_array(v) && json_array_size(v)) {
        size_t i;
        json_t *s;
        json_array_foreach(v, i, s)
        {
            if (!json_is_string(s))
                return rein__gw_bad(bad, "stop_sequences",
                                    "stop_sequences: Input should be a list of strings");
        }
        r->stop = json_incref((json_t *)v);
    } else if (v && !json_is_null(v) && !json_is_array(v)) {
        return rein__gw_bad(bad, "stop_sequences", "stop_sequences: Input should be a valid list");
    }
    v = json_object_get(body, "stream");
    if (v && !json_is_boolean(v) && !json_is_null(v))
        return rein__gw_bad(bad, "stream", "stream: Input should be a valid boolean");
    r->stream = json_is_true(v);
    return REIN_OK;
}

/* Claude's effort words (output_config.effort), checked here as the upstream of another wire
 * cannot. */
static const char *const claude_efforts[] = {"low", "medium", "high", "xhigh", "max", NULL};

static rein_err take_rest(struct rein__gw_req *r, const json_t *body, struct rein__gw_bad *bad)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)body, key, v)
    {
        const json_t *effort = json_object_get(v, "effort");
        if (listed(handled, key))
            continue;
        if (!r->verbatim && !strcmp(key, "output_config") && effort &&
            (!json_is_string(effort) || !listed(claude_efforts, json_string_value(effort))))
            return rein__gw_bad(bad, "output_config.effort",
                                "output_config.effort: Input should be 'low', 'medium', 'high', "
                                "'xhigh' or 'max'");
        bool drop = listed(droppable, key) || (!strcmp(key, "output_config") && effort_only(v));
        if (rein__gw_rest(r, key, v, key, drop))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

rein_err rein__gw_anthropic_parse_tree(struct rein__gw_req *r, const char *body, size_t len,
                                       struct rein__gw_bad *bad)
{
    const json_t *model;
    rein_error perr;
    rein_err rc;

    r->doc = rein__gw_parse_doc(r, body, len, &perr);
    if (!r->doc)
        return perr.code == REIN_ENOMEM ? REIN_ENOMEM
                                        : rein__gw_bad(bad, "",
                                                       "invalid JSON body: line %d, "
                                                       "column %d: %s",
                                                       perr.line, perr.column, perr.msg);
    if (!json_is_object(r->doc))
        return rein__gw_bad(bad, "", "the request body must be a JSON object");
    model = json_object_get(r->doc, "model");
    if (!json_is_string(model))
        return rein__gw_bad(bad, "model", "model: Field required (a string)");
    r->model = json_string_value(model);
    rc = take_system(r, json_object_get(r->doc, "system"), bad);
    if (!rc)
        rc = take_messages(r, json_object_get(r->doc, "messages"), bad);
    if (!rc && !r->tools_known)
        rc = take_tools(r, json_object_get(r->doc, "tools"), bad);
    if (!rc && r->tools_json)
        (void)rein__gw_raw_member(body, len, "tools", &r->tools_raw, &r->tools_raw_len);
    if (!rc)
        rc = take_choice(r, json_object_get(r->doc, "tool_choice"), bad);
    if (!rc)
        rc = take_options(r, r->doc, bad);
    if (!rc)
        rc = take_rest(r, r->doc, bad);
    return rc;
}

/* ---- the common shape without a tree ------------------------------------------------------ */

/*
 * As the OpenAI parser does (decision 0060, here decision 0067): a body of the common shape (a
 * model, a system text, user messages of text, known tools, options) is read as a rein_doc,
 * and its text messages are made from the document's strings; the members that need values
 * (other messages, a system of blocks, tools, tool_choice, options, the rest) get a tree of
 * just that member and go through the general path's readers. A text the document form hands
 * to jansson, a key with a NUL and every refusal decline: the general path then reads the
 * whole body again, so a refusal keeps its text and its place.
 */
#define DECLINED REIN__GW_DECLINED
#define NODE_IS  REIN__GW_NODE_IS

/* The member name of the object at o, or NULL. */
static const struct rein_doc_node *node_get(const struct rein_doc_node *o, const char *name,
                                            size_t n)
{
    const struct rein_doc_node *k = o + 1;

    for (uint32_t j = 0; j < o->n; j++, k = rein_doc_next(k + 1)) {
        if (rein__gw_node_is(k, name, n))
            return k + 1;
    }
    return NULL;
}
#define NODE_GET(o, lit) node_get((o), (lit), sizeof(lit) - 1)

/*
 * A user message's text blocks joined as take_user joins them (each text up to a NUL, "\n"
 * between) into *text; DECLINED when a block is anything but {"type": "text", "text": a
 * string} (other members are read over, as there).
 */
static int fast_text_blocks(const struct rein_doc_node *content, struct rein_buf *text)
{
    const struct rein_doc_node *b = content + 1;

    for (uint32_t j = 0; j < content->n; j++, b = rein_doc_next(b)) {
        const struct rein_doc_node *type, *t;
        if (b->type != JSON_OBJECT || !(type = NODE_GET(b, "type")) || type->type != JSON_STRING ||
            !NODE_IS(type, "text") || !(t = NODE_GET(b, "text")) || t->type != JSON_STRING)
            return DECLINED;
        if ((text->len && rein_buf_addch(text, '\n')) ||
            rein_buf_add(text, t->u.str, strnlen(t->u.str, t->n)))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

/* A user message of text made from the document, as take_message makes it; DECLINED for any
 * other message. */
static int fast_user(struct rein__gw_req *r, const struct rein_doc_node *m,
                     struct rein__gw_bad *bad)
{
    const struct rein_doc_node *role = NODE_GET(m, "role"), *content = NODE_GET(m, "content");
    struct rein_buf text;
    int rc;

    if (!role || role->type != JSON_STRING || !NODE_IS(role, "user") || !content)
        return DECLINED;
    if (content->type == JSON_STRING)
        return rein__gw_append(r, true, rein__gw_text_msg("user", content->u.str, content->n),
                               "messages", bad);
    if (content->type != JSON_ARRAY || r->verbatim) /* blocks go up as sent: take_user */
        return DECLINED;
    rein_buf_init(&text, 0);
    rc = fast_text_blocks(content, &text);
    if (!rc && text.len)
        rc = rein__gw_append(r, true, rein__gw_text_msg("user", text.ptr, text.len), "messages",
                             bad);
    rein_buf_release(&text);
    return rc;
}

static int fast_messages(struct rein__gw_req *r, const struct rein_doc_node *msgs,
                         struct rein__gw_bad *bad)
{
    const struct rein_doc_node *m = msgs + 1;

    if (msgs->type != JSON_ARRAY || msgs->n == 0)
        return DECLINED;
    for (uint32_t i = 0; i < msgs->n; i++, m = rein_doc_next(m)) {
        int rc = m->type == JSON_OBJECT ? fast_user(r, m, bad) : DECLINED;
        if (rc == DECLINED) {
            /* Another shape (an assistant's message, tool results): that message's tree. */
            json_t *t = rein_doc_node_tree(m);
            rc = t ? take_message(r, t, i, bad) : REIN_ENOMEM;
            json_decref(t);
        }
        if (rc)
            return rc;
    }
    return REIN_OK;
}

/* The system member: a text here, anything else through take_system on its tree. */
static int fast_system(struct rein__gw_req *r, const struct rein_doc_node *sys,
                       struct rein__gw_bad *bad)
{
    json_t *t;
    int rc;

    if (!sys || sys->type == JSON_NULL)
        return REIN_OK;
    if (sys->type == JSON_STRING)
        return rein__gw_append(r, true, rein__gw_text_msg("system", sys->u.str, sys->n), "system",
                               bad);
    t = rein_doc_node_tree(sys);
    rc = t ? take_system(r, t, bad) : REIN_ENOMEM;
    json_decref(t);
    return rc;
}

/* The members of the root, read in the general path's order. */
static int fast_members(struct rein__gw_req *r, const struct rein_doc_node *root, const char *body,
                        size_t len, struct rein__gw_bad *bad)
{
    static const char *const keys[] = {"model", "messages", "system", "tools", "tool_choice", NULL};
    const struct rein_doc_node *found[5] = {NULL};
    const struct rein_doc_node *model, *msgs, *sys, *tools, *choice;
    json_t *opts = NULL, *rest = NULL;
    int rc = rein__gw_members(root, keys, found, handled, &opts, &rest);

    model = found[0];
    msgs = found[1];
    sys = found[2];
    tools = found[3];
    choice = found[4];
    if (!rc && (!model || model->type != JSON_STRING || !msgs))
        rc = DECLINED;
    if (!rc) {
        r->model_own = rein_strndup(model->u.str, model->n);
        r->model = r->model_own;
        rc = r->model ? fast_system(r, sys, bad) : REIN_ENOMEM;
    }
    if (!rc)
        rc = fast_messages(r, msgs, bad);
    if (!rc && tools && !r->tools_known) {
        r->doc = rein_doc_node_tree(tools);
        rc = r->doc ? take_tools(r, r->doc, bad) : REIN_ENOMEM;
    }
    if (!rc && r->tools_json)
        (void)rein__gw_raw_member(body, len, "tools", &r->tools_raw, &r->tools_raw_len);
    if (!rc && choice) {
        json_t *t = rein_doc_node_tree(choice);
        rc = t ? take_choice(r, t, bad) : REIN_ENOMEM;
        json_decref(t);
    }
    if (!rc)
        rc = take_options(r, opts, bad);
    if (!rc && rest)
        rc = take_rest(r, rest, bad);
    json_decref(opts);
    json_decref(rest);
    return rc;
}

rein_err rein__gw_anthropic_parse(struct rein__gw_req *r, const char *body, size_t len,
                                  struct rein__gw_bad *bad)
{
    char stack[2048], *heap;
    size_t n = len;
    const char *text = rein__gw_doc_text(r, body, &n, stack, sizeof(stack), &heap);
    rein_doc *doc = text ? rein_doc_parse(text, n, NULL) : NULL;
    const struct rein_doc_node *root = doc ? rein_doc_root(doc) : NULL;
    int rc = text ? DECLINED : REIN_ENOMEM;

    if (root && root->type == JSON_OBJECT)
        rc = fast_members(r, root, body, len, bad);
    rein_doc_free(doc);
    rein_free(heap);
    if (rc == REIN_OK || rc == REIN_ENOMEM)
        return rc;
    rein__gw_req_restart(r, bad);
    return rein__gw_anthropic_parse_tree(r, body, len, bad);
}

/* ---- answers ------------------------------------------------------------------------------ */

/* A call's input: its argument text when that is an object, else {} (the wire needs one). */
static void input(struct rein_jw *w, const char *args)
{
    size_t n = strlen(args);

    if (rein__gw_args_object(args, n))
        rein_jw_raw(w, args, n);
    else
        rein_jw_raw(w, "{}", 2);
}

static void tool_use(struct rein_jw *w, const struct rein__gw_call *call)
{
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, "tool_use");
    REIN_JW_KEY(w, "id");
    rein_jw_str(w, call->id);
    REIN_JW_KEY(w, "name");
    rein_jw_str(w, call->name);
    REIN_JW_KEY(w, "input");
    input(w, call->args);
    rein_jw_obj_end(w);
}

/* Anthropic's usage: its input_tokens leave out the prompt cache's reads and writes, which it
 * counts apart (rein's input tokens hold them, provider.h). */
static void usage(const struct rein__gw_ctx *c, struct rein_jw *w, bool start)
{
    int64_t read = c->cached_tokens > 0 ? c->cached_tokens : 0;
    int64_t written = c->cache_write_tokens > 0 ? c->cache_write_tokens : 0;
    int64_t in = c->in_tokens - read - written;

    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "input_tokens");
    rein_jw_int(w, in > 0 ? in : 0);
    if (c->cache_write_tokens >= 0) {
        REIN_JW_KEY(w, "cache_creation_input_tokens");
        rein_jw_int(w, c->cache_write_tokens);
    }
    if (c->cached_tokens >= 0) {
        REIN_JW_KEY(w, "cache_read_input_tokens");
        rein_jw_int(w, c->cached_tokens);
    }
    REIN_JW_KEY(w, "output_tokens");
    rein_jw_int(w, start ? 0 : c->out_tokens);
    rein_jw_obj_end(w);
}

/* stop_sequence: the one that ended the final round's reply, when its stop reason says so. */
static void stop_sequence(const struct rein__gw_ctx *c, struct rein_jw *w, const char *reason)
{
    const char *seq = c->last ? rein_model_response_stop_sequence(c->last) : NULL;

    REIN_JW_KEY(w, "stop_sequence");
    if (seq && strcmp(reason, "stop_sequence") == 0)
        rein_jw_str(w, seq);
    else
        rein_jw_null(w);
}

/*
 * The thinking blocks of the final round's reply that came before its call number `at`, as
 * Anthropic sends them: with interleaved thinking each goes back in its place, before the call
 * it led to. `rest` takes those at `at` and after it, for after the last call.
 */
static void thinking(struct rein_jw *w, const json_t *msg, size_t at, bool rest)
{
    const json_t *blocks = json_object_get(msg, "thinking_blocks");
    const char *reasoning = str(msg, "reasoning");
    size_t i;
    json_t *b;

    json_array_foreach(blocks, i, b)
    {
        json_int_t place = json_integer_value(json_object_get(b, "at"));
        if (rest ? place < (json_int_t)at : place != (json_int_t)at)
            continue;
        rein_jw_obj_begin(w);
        if (str(b, "redacted")) {
            REIN_JW_KEY(w, "type");
            rein_jw_str(w, "redacted_thinking");
            REIN_JW_KEY(w, "data");
            rein_jw_str(w, str(b, "redacted"));
        } else {
            REIN_JW_KEY(w, "type");
            rein_jw_str(w, "thinking");
            REIN_JW_KEY(w, "thinking");
            rein_jw_str(w, str(b, "thinking") ? str(b, "thinking") : "");
            REIN_JW_KEY(w, "signature");
            rein_jw_str(w, str(b, "signature") ? str(b, "signature") : "");
        }
        rein_jw_obj_end(w);
    }
    if (at == 0 && !json_array_size(blocks) && reasoning && reasoning[0]) {
        rein_jw_obj_begin(w);
        REIN_JW_KEY(w, "type");
        rein_jw_str(w, "thinking");
        REIN_JW_KEY(w, "thinking");
        rein_jw_str(w, reasoning);
        REIN_JW_KEY(w, "signature");
        rein_jw_str(w, str(msg, "reasoning_signature") ? str(msg, "reasoning_signature") : "");
        rein_jw_obj_end(w);
    }
}

/*
 * The final round's message, for what only it holds (thinking and server blocks, the
 * reasoning's signature); NULL when the reply has none of them. Building it was a third of
 * the reply's instructions for a reply of text and calls (bench/gateway.sh).
 */
static json_t *blocks_message(const rein_model_response *r)
{
    if (!r || (!rein_model_response_reasoning(r)[0] && !rein_model_response_thinking_blocks(r) &&
               !rein_model_response_server_blocks(r)))
        return NULL;
    return rein_model_response_message(r);
}

/* The place of text block i of list (the byte of text it starts at, how many server blocks
 * come before it). */
static void text_block_at(const json_t *list, size_t i, size_t len, size_t *at, size_t *server)
{
    const json_t *b = json_array_get(list, i);

    *at = b ? (size_t)json_integer_value(json_object_get(b, "at")) : len;
    *server = b ? (size_t)json_integer_value(json_object_get(b, "server")) : SIZE_MAX;
}

/* The reply's text blocks (Anthropic's) can be written in their places: the text is there,
 * and each block starts where or after the one before did, within the text. */
static bool text_blocks_hold(const rein_model_response *r, const char *text)
{
    const json_t *list = r ? rein_model_response_text_blocks(r) : NULL;
    size_t len = strlen(text), nserver = json_array_size(rein_model_response_server_blocks(r));
    size_t at = 0, server = 0;

    if (!json_array_size(list) || !text[0])
        return false;
    for (size_t i = 0; i < json_array_size(list); i++) {
        size_t a, s;
        text_block_at(list, i, len, &a, &s);
        if (a < at || a > len || s < server || s > nserver)
            return false;
        at = a;
        server = s;
    }
    return true;
}

/*
 * Claude's text as it came, block by block, each with its citations, and the server blocks
 * in their places between them: a web search answer is a text, the search and its results,
 * then text blocks that each cite what they say.
 */
static void text_blocks(struct rein_jw *w, const rein_model_response *r, const char *text)
{
    const json_t *list = rein_model_response_text_blocks(r);
    const json_t *server = rein_model_response_server_blocks(r);
    size_t len = strlen(text), sent = 0, n = json_array_size(list);

    for (size_t i = 0; i <= n; i++) {
        const json_t *cites = json_object_get(json_array_get(list, i), "citations");
        size_t at, before, end, next_server;
        text_block_at(list, i, len, &at, &before);
        text_block_at(list, i + 1, len, &end, &next_server);
        for (; sent < json_array_size(server) && sent < before; sent++)
            rein_jw_json(w, json_array_get(server, sent));
        if (i == n || (end == at && !cites))
            continue;
        rein_jw_obj_begin(w);
        REIN_JW_KEY(w, "type");
        rein_jw_str(w, "text");
        REIN_JW_KEY(w, "text");
        rein_jw_strn(w, text + at, end - at);
        if (cites) {
            REIN_JW_KEY(w, "citations");
            rein_jw_json(w, cites);
        }
        rein_jw_obj_end(w);
    }
}

static rein_err an_reply(const struct rein__gw_ctx *c, struct rein_buf *out)
{
    json_t *msg = blocks_message(c->last);
    const char *text = c->last ? rein_model_response_text(c->last) : "";
    const char *refusal = c->last ? rein_model_response_refusal(c->last) : NULL;
    /* Claude's text blocks in their places, or the text as one block after the server's */
    bool in_blocks = text_blocks_hold(c->last, text);
    struct rein_jw w;
    size_t k;
    json_t *b;

    rein_jw_init(&w, out);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "id");
    rein_jw_str(&w, c->id);
    REIN_JW_KEY(&w, "type");
    rein_jw_str(&w, "message");
    REIN_JW_KEY(&w, "role");
    rein_jw_str(&w, "assistant");
    REIN_JW_KEY(&w, "model");
    rein_jw_str(&w, c->model);
    REIN_JW_KEY(&w, "content");
    rein_jw_arr_begin(&w);
    thinking(&w, msg, 0, false);
    if (in_blocks) {
        text_blocks(&w, c->last, text);
    } else {
        json_array_foreach(json_object_get(msg, "server_blocks"), k, b)
        {
            rein_jw_json(&w, b);
        }
    }
    if (!in_blocks && (text[0] || (refusal && refusal[0]))) {
        rein_jw_obj_begin(&w);
        REIN_JW_KEY(&w, "type");
        rein_jw_str(&w, "text");
        REIN_JW_KEY(&w, "text");
        rein_jw_str(&w, text[0] ? text : refusal);
        rein_jw_obj_end(&w);
    }
    for (size_t i = 0; i < c->nout; i++) {
        if (i > 0)
            thinking(&w, msg, i, false);
        tool_use(&w, &c->out[i]);
    }
    thinking(&w, msg, c->nout ? c->nout : 1, true);
    rein_jw_arr_end(&w);
    REIN_JW_KEY(&w, "stop_reason");
    rein_jw_str(&w, rein__gw_finish(c, true));
    stop_sequence(c, &w, rein__gw_finish(c, true));
    REIN_JW_KEY(&w, "usage");
    usage(c, &w, false);
    rein__gw_rein_member(c, &w);
    rein_jw_obj_end(&w);
    json_decref(msg);
    return rein_jw_finish(&w);
}

static const char *error_type(int status)
{
    return status == 401   ? "authentication_error"
           : status == 403 ? "permission_error"
           : status == 404 ? "not_found_error"
           : status == 413 ? "request_too_large"
           : status == 429 ? "rate_limit_error"
           : status == 529 ? "overloaded_error"
           : status >= 500 ? "api_error"
                           : "invalid_request_error";
}

static void error_object(const struct rein__gw_err *e, struct rein_jw *w)
{
    const char *msg = str(e->upstream, "message");

    if (e->upstream_same && json_is_object(e->upstream)) {
        rein_jw_json(w, e->upstream);
        return;
    }
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, e->type && e->status != 422 ? e->type : error_type(e->status));
    REIN_JW_KEY(w, "message");
    rein_jw_str(w, msg ? msg : e->message);
    rein_jw_obj_end(w);
}

static rein_err an_error(const struct rein__gw_err *e, const json_t *rein_ext, struct rein_buf *out)
{
    struct rein_jw w;

    rein_jw_init(&w, out);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "type");
    rein_jw_str(&w, "error");
    REIN_JW_KEY(&w, "error");
    error_object(e, &w);
    /* The upstream's own error keeps the request_id it came with (its support asks for it). */
    if (e->upstream_same && json_is_object(e->upstream) && e->request_id) {
        REIN_JW_KEY(&w, "request_id");
        rein_jw_str(&w, e->request_id);
    }
    if (rein_ext) {
        REIN_JW_KEY(&w, "rein");
        rein_jw_json(&w, rein_ext);
    }
    rein_jw_obj_end(&w);
    return rein_jw_finish(&w);
}

/* ---- streaming ---------------------------------------------------------------------------- */

static void event_begin(struct rein__gw_ctx *c, struct rein_jw *w, const char *type)
{
    rein_buf_reset(&c->ev);
    rein_jw_init(w, &c->ev);
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, type);
}

static rein_err event_end(struct rein__gw_ctx *c, struct rein_jw *w, const char *type)
{
    rein_err rc;

    rein_jw_obj_end(w);
    rc = rein_jw_finish(w);
    return rc ? rc : rein__gw_emit(c, type, c->ev.ptr, c->ev.len);
}

/* message_start goes first, once. */
static rein_err message_start(struct rein__gw_ctx *c)
{
    struct rein_jw w;

    if (c->role_sent)
        return REIN_OK;
    c->role_sent = true;
    event_begin(c, &w, "message_start");
    REIN_JW_KEY(&w, "message");
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "id");
    rein_jw_str(&w, c->id);
    REIN_JW_KEY(&w, "type");
    rein_jw_str(&w, "message");
    REIN_JW_KEY(&w, "role");
    rein_jw_str(&w, "assistant");
    REIN_JW_KEY(&w, "model");
    rein_jw_str(&w, c->model);
    REIN_JW_KEY(&w, "content");
    rein_jw_arr_begin(&w);
    rein_jw_arr_end(&w);
    REIN_JW_KEY(&w, "stop_reason");
    rein_jw_null(&w);
    REIN_JW_KEY(&w, "stop_sequence");
    rein_jw_null(&w);
    REIN_JW_KEY(&w, "usage");
    usage(c, &w, true);
    rein_jw_obj_end(&w);
    return event_end(c, &w, "message_start");
}

static rein_err block_stop(struct rein__gw_ctx *c)
{
    struct rein_jw w;

    if (c->block < 0)
        return REIN_OK;
    event_begin(c, &w, "content_block_stop");
    REIN_JW_KEY(&w, "index");
    rein_jw_int(&w, c->block);
    c->block = -1;
    c->block_type[0] = '\0';
    return event_end(c, &w, "content_block_stop");
}

/* Opens the next block of type (closing the open one first): its content_block_start up to the
 * value of content_block, which the caller writes before event_end(). */
static rein_err block_open(struct rein__gw_ctx *c, const char *type, struct rein_jw *w)
{
    rein_err rc = block_stop(c);

    if (rc)
        return rc;
    c->block = c->next_block++;
    snprintf(c->block_type, sizeof(c->block_type), "%s", type);
    event_begin(c, w, "content_block_start");
    REIN_JW_KEY(w, "index");
    rein_jw_int(w, c->block);
    REIN_JW_KEY(w, "content_block");
    return REIN_OK;
}

/* The block open is one of text (cited or not), which text deltas go on. */
static bool text_open(const struct rein__gw_ctx *c)
{
    return c->block >= 0 && strncmp(c->block_type, "text", 4) == 0;
}

/* Opens a block of type: a call's with its id and name, the others empty. */
static rein_err block_start(struct rein__gw_ctx *c, const char *type,
                            const struct rein__gw_call *call)
{
    struct rein_jw w;
    rein_err rc = block_open(c, type, &w);

    if (rc)
        return rc;
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "type");
    rein_jw_str(&w, strcmp(type, "text_cited") == 0 ? "text" : type);
    if (call) {
        REIN_JW_KEY(&w, "id");
        rein_jw_str(&w, call->id);
        REIN_JW_KEY(&w, "name");
        rein_jw_str(&w, call->name);
        REIN_JW_KEY(&w, "input");
        rein_jw_raw(&w, "{}", 2);
    } else if (strcmp(type, "thinking") == 0) {
        REIN_JW_KEY(&w, "thinking");
        rein_jw_str(&w, "");
        REIN_JW_KEY(&w, "signature");
        rein_jw_str(&w, "");
    } else {
        REIN_JW_KEY(&w, "text");
        rein_jw_str(&w, "");
        if (strcmp(type, "text_cited") == 0) {
            REIN_JW_KEY(&w, "citations");
            rein_jw_arr_begin(&w);
            rein_jw_arr_end(&w);
        }
    }
    rein_jw_obj_end(&w);
    return event_end(c, &w, "content_block_start");
}

/* A content_block_delta's members after its type, up to the delta's text key. */
static void delta_open(struct rein__gw_ctx *c, struct rein_jw *w, const char *type, const char *key)
{
    REIN_JW_KEY(w, "index");
    rein_jw_int(w, c->block);
    REIN_JW_KEY(w, "delta");
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, type);
    rein_jw_key(w, key);
}

static rein_err delta(struct rein__gw_ctx *c, const char *type, const char *key, const char *p,
                      size_t n)
{
    struct rein_jw w;

    event_begin(c, &w, "content_block_delta");
    delta_open(c, &w, type, key);
    rein_jw_strn(&w, p, n);
    rein_jw_obj_end(&w);
    return event_end(c, &w, "content_block_delta");
}

/*
 * A text delta written where it goes (sink->stream_frames): the bytes delta() writes and
 * rein__gw_emit() frames, from a head made once per block and kind ("event:", "data:" and the
 * event up to its text) and a fixed tail, with the text escaped between them
 * (rein__gw_frame_text): a long stream is thousands of these, and the JSON writer's calls for
 * each cost several times its bytes.
 */
static rein_err framed_delta(struct rein__gw_ctx *c, enum rein_model_event_type kind,
                             const char *type, const char *key, const char *p, size_t n)
{
    static const char tail[] = "\"}}\n\n";
    struct rein_buf *h = &c->frame_head;
    struct rein_jw w;
    rein_err rc;

    if (!h->len || c->frame_head_kind != kind || c->frame_head_block != c->block) {
        rein_buf_reset(h);
        rc = rein_buf_adds(h, "event: content_block_delta\ndata: ");
        rein_jw_init(&w, h);
        rein_jw_obj_begin(&w);
        REIN_JW_KEY(&w, "type");
        rein_jw_str(&w, "content_block_delta");
        delta_open(c, &w, type, key);
        /* the writer is left inside the object: only its bytes are kept */
        if (!rc)
            rc = w.err;
        if (!rc)
            rc = rein_buf_addch(h, '"');
        if (rc) {
            rein_buf_reset(h);
            return rc;
        }
        c->frame_head_kind = kind;
        c->frame_head_block = c->block;
    }
    return rein__gw_frame_text(c, p, n, tail, sizeof(tail) - 1);
}

static rein_err an_s_text(struct rein__gw_ctx *c, enum rein_model_event_type kind, const char *p,
                          size_t n)
{
    const char *type = kind == REIN_MEV_REASONING_DELTA ? "thinking" : "text";
    bool thinking = kind == REIN_MEV_REASONING_DELTA;
    rein_err rc = message_start(c);

    if (rc || n == 0)
        return rc;
    if (thinking ? c->block < 0 || strcmp(c->block_type, type) != 0 : !text_open(c))
        rc = block_start(c, type, NULL);
    if (rc)
        return rc;
    if (c->sink->stream_frames)
        return framed_delta(c, kind, thinking ? "thinking_delta" : "text_delta",
                            thinking ? "thinking" : "text", p, n);
    return thinking ? delta(c, "thinking_delta", "thinking", p, n)
                    : delta(c, "text_delta", "text", p, n);
}

static rein_err redacted_block(struct rein__gw_ctx *c, const char *data, size_t n)
{
    struct rein_jw w;
    rein_err rc = block_open(c, "redacted_thinking", &w);

    if (rc)
        return rc;
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "type");
    rein_jw_str(&w, "redacted_thinking");
    REIN_JW_KEY(&w, "data");
    rein_jw_strn(&w, data, n);
    rein_jw_obj_end(&w);
    rc = event_end(c, &w, "content_block_start");
    return rc ? rc : block_stop(c);
}

/* A server tool's block as Anthropic streams it: a use (server_tool_use, mcp_tool_use) starts
 * with an empty input that one input_json_delta then gives, a result block starts whole. */
static rein_err server_block(struct rein__gw_ctx *c, const char *json, size_t n)
{
    json_t *b = rein_json_parse(json, n, 0, NULL);
    const char *type = str(b, "type") ? str(b, "type") : "";
    size_t tl = strlen(type);
    json_t *input = NULL;
    char *text = NULL;
    struct rein_jw w;
    rein_err rc = b ? REIN_OK : REIN_ENOMEM;

    if (!rc && tl > 9 && strcmp(type + tl - 9, "_tool_use") == 0 &&
        (input = json_object_get(b, "input"))) {
        text = rein_json_dumps(input);
        rc = text && !json_object_set_new(b, "input", json_object()) ? REIN_OK : REIN_ENOMEM;
    }
    if (!rc)
        rc = block_open(c, tl ? type : "server", &w);
    if (!rc) {
        rein_jw_json(&w, b);
        rc = event_end(c, &w, "content_block_start");
    }
    if (!rc && text)
        rc = delta(c, "input_json_delta", "partial_json", text, strlen(text));
    if (!rc)
        rc = block_stop(c);
    rein_free(text);
    json_decref(b);
    return rc;
}

/*
 * Claude wants its thinking and its server tools' blocks back on the next turn as they came:
 * each thinking block with the signature that closes it, each redacted block with its data,
 * each server block whole, in their places. The signature goes into the thinking block still
 * open (one is opened when the thinking was empty), and thinking after it starts a block of
 * its own.
 */
/* One citations_delta: the citation's JSON as the upstream wrote it. */
static rein_err citation_delta(struct rein__gw_ctx *c, const char *json, size_t n)
{
    struct rein_jw w;

    event_begin(c, &w, "content_block_delta");
    delta_open(c, &w, "citations_delta", "citation");
    rein_jw_raw(&w, json, n);
    rein_jw_obj_end(&w);
    return event_end(c, &w, "content_block_delta");
}

/*
 * Claude's text comes in blocks, each with the citations of its own text (web search, cited
 * documents): a new block closes the text block open, so that its text goes in a block of its
 * own, which starts cited when the upstream's did; each citation goes into the text block
 * open (one is opened when none is).
 */
static rein_err cited_text(struct rein__gw_ctx *c, enum rein_model_event_type kind, const char *p,
                           size_t n)
{
    rein_err rc = message_start(c);
    json_t *list;
    size_t i;
    json_t *v;

    if (!rc && kind == REIN_MEV_TEXT_BLOCK && text_open(c))
        rc = block_stop(c);
    if (rc || (kind == REIN_MEV_TEXT_BLOCK && n == 0))
        return rc;
    if (!text_open(c) && (rc = block_start(c, "text_cited", NULL)) != REIN_OK)
        return rc;
    if (kind == REIN_MEV_CITATION)
        return citation_delta(c, p, n);
    /* a block that starts with citations (a whole reply's) gets them as deltas */
    list = rein_json_parse(p, n, 0, NULL);
    json_array_foreach(list, i, v)
    {
        char *one = rein_json_dumps(v);
        rc = one ? citation_delta(c, one, strlen(one)) : REIN_ENOMEM;
        rein_free(one);
        if (rc)
            break;
    }
    json_decref(list);
    return rc;
}

/*
 * Claude wants its thinking and its server tools' blocks back on the next turn as they came:
 * each thinking block with the signature that closes it, each redacted block with its data,
 * each server block whole, in their places. The signature goes into the thinking block still
 * open (one is opened when the thinking was empty), and thinking after it starts a block of
 * its own.
 */
static rein_err an_s_block(struct rein__gw_ctx *c, enum rein_model_event_type kind, const char *p,
                           size_t n)
{
    rein_err rc;

    if (kind == REIN_MEV_TEXT_BLOCK || kind == REIN_MEV_CITATION)
        return cited_text(c, kind, p, n);
    if (kind != REIN_MEV_REASONING_SIGNATURE && kind != REIN_MEV_REDACTED_REASONING &&
        kind != REIN_MEV_SERVER_BLOCK)
        return REIN_OK; /* OpenAI's logprobs and annotations have no place here */
    rc = message_start(c);
    if (rc || n == 0)
        return rc;
    if (kind == REIN_MEV_REDACTED_REASONING)
        return redacted_block(c, p, n);
    if (kind == REIN_MEV_SERVER_BLOCK)
        return server_block(c, p, n);
    if (c->block < 0 || strncmp(c->block_type, "thinking", 8) != 0)
        rc = block_start(c, "thinking", NULL);
    if (!rc)
        snprintf(c->block_type, sizeof(c->block_type), "thinking_signed");
    return rc ? rc : delta(c, "signature_delta", "signature", p, n);
}

static rein_err an_s_call(struct rein__gw_ctx *c, const struct rein__gw_call *call, size_t index)
{
    size_t n = strlen(call->args);
    rein_err rc = message_start(c);

    (void)index;
    if (!rc)
        rc = block_start(c, "tool_use", call);
    if (!rc)
        rc = rein__gw_args_object(call->args, n)
                 ? delta(c, "input_json_delta", "partial_json", call->args, n)
                 : delta(c, "input_json_delta", "partial_json", "{}", 2);
    return rc ? rc : block_stop(c);
}

static rein_err an_s_end(struct rein__gw_ctx *c)
{
    struct rein_jw w;
    rein_err rc = message_start(c);

    if (!rc)
        rc = block_stop(c);
    if (rc)
        return rc;
    event_begin(c, &w, "message_delta");
    REIN_JW_KEY(&w, "delta");
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "stop_reason");
    rein_jw_str(&w, rein__gw_finish(c, true));
    stop_sequence(c, &w, rein__gw_finish(c, true));
    rein_jw_obj_end(&w);
    REIN_JW_KEY(&w, "usage");
    usage(c, &w, false);
    rein__gw_rein_member(c, &w);
    rc = event_end(c, &w, "message_delta");
    if (rc)
        return rc;
    event_begin(c, &w, "message_stop");
    return event_end(c, &w, "message_stop");
}

static rein_err an_s_error(struct rein__gw_ctx *c, const struct rein__gw_err *e)
{
    json_t *ext = rein__gw_rein_ext(c);
    rein_err rc;

    rein_buf_reset(&c->ev);
    rc = an_error(e, ext, &c->ev);
    json_decref(ext);
    return rc ? rc : rein__gw_emit(c, "error", c->ev.ptr, c->ev.len);
}

/* ---- GET /v1/models ---------------------------------------------------------------------- */

static rein_err an_models(const rein_gateway *g, struct rein_buf *out)
{
    const char *model = rein_provider_model(g->provider);
    struct rein_jw w;

    rein_jw_init(&w, out);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "data");
    rein_jw_arr_begin(&w);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "type");
    rein_jw_str(&w, "model");
    REIN_JW_KEY(&w, "id");
    rein_jw_str(&w, model);
    REIN_JW_KEY(&w, "display_name");
    rein_jw_str(&w, model);
    REIN_JW_KEY(&w, "created_at");
    rein_jw_str(&w, "1970-01-01T00:00:00Z");
    rein_jw_obj_end(&w);
    rein_jw_arr_end(&w);
    REIN_JW_KEY(&w, "has_more");
    rein_jw_bool(&w, false);
    REIN_JW_KEY(&w, "first_id");
    rein_jw_str(&w, model);
    REIN_JW_KEY(&w, "last_id");
    rein_jw_str(&w, model);
    rein_jw_obj_end(&w);
    return rein_jw_finish(&w);
}

const struct rein__gw_wire rein__gw_anthropic = {
    .name = "anthropic",
    .id_prefix = "toolu_",
    .parse = rein__gw_anthropic_parse,
    .reply = an_reply,
    .error = an_error,
    .s_text = an_s_text,
    .s_block = an_s_block,
    .s_call = an_s_call,
    .s_end = an_s_end,
    .s_error = an_s_error,
    .models = an_models,
};
