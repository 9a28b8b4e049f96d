/*
 * The OpenAI chat completions wire as a server (include/rein/gateway.h): what an OpenAI client
 * sends to POST /v1/chat/completions becomes the neutral request, and rein's answer goes back
 * as a chat.completion body, as chat.completion.chunk events ending with data: [DONE] (with
 * the usage chunk when stream_options.include_usage asks for it), or as OpenAI's error body
 * {"error": {message, type, param, code}}.
 *
 * An upstream that speaks this wire gets each message and the tool list as the client wrote
 * them (decision 0085: image, audio and file parts, a developer role, strict tools), beside the
 * neutral messages rein reads; for another wire a user's inline media (an image_url data URL, a
 * file's file_data, input_audio) become the message's attachments (decision 0097), and media
 * by URL or file id, or of a type the upstream does not take, are refused with a 400 that says
 * so. A custom
 * (free-form) tool is offered to every upstream as a function of one string, input, and its
 * calls go back in the custom shape (decision 0089). The deprecated functions/function_call
 * and n > 1 (rein checks one reply) are refused for every upstream. Members rein does not read go to an upstream that speaks this wire as they
 * are; another wire gets what it has too (top_p, stop), loses the harmless ones (user, seed,
 * ...), and refuses the rest by name.
 */
#include "gateway/gateway_int.h"

#include "core/internal.h"

#include <rein/doc.h>

#include <string.h>

/* Members the parser reads itself; everything else is passthrough. */
static const char *const handled[] = {
    "model",
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "stop",
    "stream",
    "stream_options",
    "n",
    NULL,
};
/* Members another wire may drop without changing what the model is asked: bookkeeping,
 * sampling hints, and how hard or how long a reasoning model thinks and writes (reasoning
 * effort, verbosity: every wire's model still answers the same request). */
static const char *const droppable[] = {
    "user",
    "metadata",
    "store",
    "service_tier",
    "prompt_cache_key",
    "seed",
    "frequency_penalty",
    "logprobs",
    "safety_identifier",
    "presence_penalty",
    "reasoning_effort",
    "verbosity",
    NULL,
};

static bool listed(const char *const *list, const char *key)
{
    return rein__gw_listed(list, key, strlen(key));
}

static const char *type_word(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a decimal";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

/* ---- messages ---------------------------------------------------------------------------- */

static rein_err want_string(const json_t *v, const char *param, struct rein__gw_bad *bad)
{
    if (json_is_string(v))
        return REIN_OK;
    if (!v)
        return rein__gw_bad(bad, param, "Missing required parameter: '%s'.", param);
    return rein__gw_bad(bad, param, "Invalid type for '%s': expected a string, but got %s instead.",
                        param, type_word(v));
}

/*
 * Appends msg (taken) to the history; a message the neutral shape refuses is a 400. A message
 * made only of values of its own (own) is handed over as it is; one that holds values of the
 * request's document is copied, so that nothing the history keeps is shared with that tree.
 */
static rein_err append_msg(struct rein__gw_req *r, json_t *msg, bool own, size_t i,
                           struct rein__gw_bad *bad)
{
    rein_error e;
    rein_err rc;
    char param[32];

    if (!msg)
        return REIN_ENOMEM;
    rein_error_clear(&e);
    rc = own ? rein_history_append_shared(r->h, msg, &e) : rein_history_append(r->h, msg, &e);
    json_decref(msg);
    if (rc == REIN_EINVAL) {
        snprintf(param, sizeof(param), "messages[%zu]", i);
        return rein__gw_bad(bad, param, "Invalid '%s': %s", param, e.msg);
    }
    return rc;
}

/* A custom tool's call as the function call every upstream was offered (decision 0089): its
 * input becomes the argument text {"input": ...}. New reference, or NULL. */
static json_t *custom_as_function(const json_t *call, const json_t *custom)
{
    json_t *args = json_pack("{s:O}", "input", json_object_get(custom, "input"));
    struct rein_buf b;
    json_t *out = NULL;

    rein_buf_init(&b, 0);
    if (args && rein_json_dump(&b, args) == REIN_OK)
        out = json_pack("{s:O, s:s, s:{s:O, s:s%}}", "id", json_object_get(call, "id"), "type",
                        "function", "function", "name", json_object_get(custom, "name"),
                        "arguments", b.ptr, b.len);
    json_decref(args);
    rein_buf_release(&b);
    return out;
}

/* A call's id, and its member (function or custom) with a string name and a string text
 * (arguments or input); a refusal names the path below p. */
static rein_err want_call(const json_t *call, const char *p, const char *member, const char *text,
                          struct rein__gw_bad *bad)
{
    const json_t *m = json_object_get(call, member);
    char q[128];
    rein_err rc;

    if (!json_is_object(m))
        return rein__gw_bad(bad, p, "Missing required parameter: '%s.%s'.", p, member);
    snprintf(q, sizeof(q), "%s.id", p);
    rc = want_string(json_object_get(call, "id"), q, bad);
    snprintf(q, sizeof(q), "%s.%s.name", p, member);
    if (!rc)
        rc = want_string(json_object_get(m, "name"), q, bad);
    snprintf(q, sizeof(q), "%s.%s.%s", p, member, text);
    if (!rc)
        rc = want_string(json_object_get(m, text), q, bad);
    return rc;
}

/*
 * The message's calls as neutral calls into msg. A custom tool's call is taken as the function
 * call it was offered as; *wire (new) is then the list in that form for an upstream of this
 * wire, and stays NULL when every call is a function call.
 */
static rein_err take_calls(json_t *msg, const json_t *calls, size_t i, json_t **wire,
                           struct rein__gw_bad *bad)
{
    json_t *out = json_array();
    size_t j;
    json_t *call;
    char p[96];

    if (!out)
        return REIN_ENOMEM;
    if (!json_is_array(calls) || json_array_size(calls) == 0) {
        json_decref(out);
        snprintf(p, sizeof(p), "messages[%zu].tool_calls", i);
        return rein__gw_bad(bad, p, "Invalid '%s': expected a non-empty array of tool calls.", p);
    }
    json_array_foreach(calls, j, call)
    {
        const json_t *fn = json_object_get(call, "function");
        const char *type = json_string_value(json_object_get(call, "type"));
        json_t *c, *as_fn = NULL;
        rein_err rc = REIN_OK;

        snprintf(p, sizeof(p), "messages[%zu].tool_calls[%zu]", i, j);
        if (!json_is_object(call)) {
            rc = rein__gw_bad(bad, p, "Invalid type for '%s': expected an object.", p);
        } else if (type && strcmp(type, "custom") == 0) {
            rc = want_call(call, p, "custom", "input", bad);
            if (!rc && !(as_fn = custom_as_function(call, json_object_get(call, "custom"))))
                rc = REIN_ENOMEM;
            fn = json_object_get(as_fn, "function");
            if (!rc && !*wire && !(*wire = json_array()))
                rc = REIN_ENOMEM;
            for (size_t k = json_array_size(*wire); !rc && k < j; k++)
                rc = json_array_append(*wire, json_array_get(calls, k)) ? REIN_ENOMEM : REIN_OK;
        } else if (type && strcmp(type, "function") != 0) {
            rc = rein__gw_bad(bad, p,
                              "Invalid '%s.type': '%s' calls are not supported by rein's gateway "
                              "(function and custom calls only).",
                              p, type);
        } else {
            rc = want_call(call, p, "function", "arguments", bad);
        }
        if (!rc && *wire)
            rc = json_array_append(*wire, as_fn ? as_fn : call) ? REIN_ENOMEM : REIN_OK;
        c = rc ? NULL
               : json_pack("{s:O, s:O, s:O}", "id", json_object_get(call, "id"), "name",
                           json_object_get(fn, "name"), "arguments",
                           json_object_get(fn, "arguments"));
        /* the flag a Responses upstream reads to send it back as a custom_tool_call, the way
         * the tool was offered there (decision 0096) */
        if (c && as_fn && json_object_set_new(c, "custom", json_true())) {
            json_decref(c);
            c = NULL;
        }
        json_decref(as_fn);
        if (!c || json_array_append_new(out, c)) {
            json_decref(out);
            return rc ? rc : REIN_ENOMEM;
        }
    }
    return json_object_set_new(msg, "tool_calls", out) ? REIN_ENOMEM : REIN_OK;
}

/* An assistant message: text (string, null or text/refusal parts), calls, refusal, reasoning. */
static rein_err take_assistant(struct rein__gw_req *r, const json_t *m, size_t i,
                               struct rein__gw_bad *bad)
{
    const json_t *content = json_object_get(m, "content");
    const json_t *calls = json_object_get(m, "tool_calls");
    const json_t *refusal = json_object_get(m, "refusal");
    const json_t *reasoning = json_object_get(m, "reasoning_content");
    const json_t *items = json_object_get(m, "reasoning_items");
    json_t *msg = json_pack("{s:s}", "role", "assistant"), *wire = NULL;
    char *text = NULL;
    char p[64];
    rein_err rc = REIN_OK;

    if (!msg)
        return REIN_ENOMEM;
    snprintf(p, sizeof(p), "messages[%zu]", i);
    if (json_object_get(m, "function_call") || json_object_get(m, "audio"))
        rc = rein__gw_bad(bad, p,
                          "Invalid '%s': function_call and audio are not supported by rein's "
                          "gateway; use tool_calls and text.",
                          p);
    if (!rc && content && !json_is_null(content)) {
        snprintf(p, sizeof(p), "messages[%zu].content", i);
        rc = rein__gw_content_text(content, p, false, r->verbatim, &text, bad);
        if (!rc && json_object_set_new(msg, "content", json_string(text)))
            rc = REIN_ENOMEM;
    }
    if (!rc && calls && !json_is_null(calls))
        rc = take_calls(msg, calls, i, &wire, bad);
    if (!rc && json_is_string(refusal) && json_object_set(msg, "refusal", (json_t *)refusal))
        rc = REIN_ENOMEM;
    if (!rc && json_is_string(reasoning) && json_object_set(msg, "reasoning", (json_t *)reasoning))
        rc = REIN_ENOMEM;
    /* A Responses client's reasoning items (responses.c), for a Responses upstream */
    if (!rc && json_is_array(items) && json_object_set(msg, "reasoning_items", (json_t *)items))
        rc = REIN_ENOMEM;
    rein_free(text);
    if (!rc && r->verbatim) {
        json_t *copy = json_deep_copy(m);
        /* custom calls go up as the function calls the tools were offered as */
        if (copy && wire && json_object_set(copy, "tool_calls", wire)) {
            json_decref(copy);
            copy = NULL;
        }
        if (!copy || json_object_set_new(msg, "openai_message", copy))
            rc = REIN_ENOMEM;
    }
    json_decref(wire);
    if (rc) {
        json_decref(msg);
        return rc;
    }
    return append_msg(r, msg, false, i, bad);
}

/* An input_audio part's medium: its base64 data and its format (wav or mp3). */
static rein_err take_audio(const struct rein__gw_req *r, const json_t *a, json_t **atts,
                           const char *p, struct rein__gw_bad *bad)
{
    const char *fmt = json_string_value(json_object_get(a, "format"));
    const json_t *data = json_object_get(a, "data");
    const char *mime = !fmt                  ? NULL
                       : !strcmp(fmt, "wav") ? "audio/wav"
                       : !strcmp(fmt, "mp3") ? "audio/mpeg"
                                             : NULL;

    if (!mime || !json_is_string(data))
        return rein__gw_bad(bad, p,
                            "Invalid '%s': input_audio needs its data (base64) and a format, wav "
                            "or mp3.",
                            p);
    return rein__gw_media(r, atts, mime, strlen(mime), json_string_value(data),
                          json_string_length(data), p, bad);
}

/* A file part's medium: file_data as a data: URL, or bare base64 (chat completions' file parts
 * are PDFs); a file_id names a file only OpenAI has. */
static rein_err take_file(const struct rein__gw_req *r, const json_t *f, json_t **atts,
                          const char *p, struct rein__gw_bad *bad)
{
    const json_t *data = json_object_get(f, "file_data");

    if (!json_is_string(data) && json_is_string(json_object_get(f, "file_url")))
        return rein__gw_media_ref(r, p, "a URL", bad); /* the Responses API's file_url */
    if (!json_is_string(data))
        return json_is_string(json_object_get(f, "file_id"))
                   ? rein__gw_media_ref(r, p, "a file_id", bad)
                   : rein__gw_bad(bad, p, "Invalid '%s': a file part needs its file_data.", p);
    if (strncmp(json_string_value(data), "data:", 5) == 0)
        return rein__gw_media_url(r, atts, json_string_value(data), p, bad);
    return rein__gw_media(r, atts, "application/pdf", 15, json_string_value(data),
                          json_string_length(data), p, bad);
}

/*
 * A user message's content parts for an upstream of another wire (decision 0097): the text
 * parts joined into *text, the media (an image_url data URL, a file's file_data, input_audio)
 * into *atts (new, NULL when there are none); interleaving is not kept: the text comes first.
 */
static rein_err user_parts(const struct rein__gw_req *r, const json_t *content, size_t i,
                           struct rein_buf *text, json_t **atts, struct rein__gw_bad *bad)
{
    size_t j;
    json_t *part;
    char p[96];
    rein_err rc = REIN_OK;

    json_array_foreach(content, j, part)
    {
        const char *type = json_string_value(json_object_get(part, "type"));
        const json_t *o = type ? json_object_get(part, type) : NULL;
        const char *t = json_string_value(json_object_get(part, "text"));
        snprintf(p, sizeof(p), "messages[%zu].content[%zu]", i, j);
        if (type && !strcmp(type, "refusal"))
            continue; /* as rein__gw_content_text: not text for the model */
        if (type && !strcmp(type, "text") && t)
            rc = (text->len && rein_buf_addch(text, '\n')) || rein_buf_adds(text, t) ? REIN_ENOMEM
                                                                                     : REIN_OK;
        else if (type && !strcmp(type, "image_url") && json_is_string(json_object_get(o, "url")))
            rc = rein__gw_media_url(r, atts, json_string_value(json_object_get(o, "url")), p, bad);
        else if (type && !strcmp(type, "input_audio") && json_is_object(o))
            rc = take_audio(r, o, atts, p, bad);
        else if (type && !strcmp(type, "file") && json_is_object(o))
            rc = take_file(r, o, atts, p, bad);
        else
            rc = rein__gw_bad(bad, p,
                              "Invalid '%s': expected a text, image_url, input_audio or file part "
                              "(part %zu is %s%.40s%s).",
                              p, j, type ? "'" : "", type ? type : "not a content part",
                              type ? "'" : "");
        if (rc)
            break;
    }
    return rc;
}

/* A Responses client's function_call_output of content items, as its conversion writes it
 * (r->tool_media): a tool message of its text and media for an upstream of any wire, the chat
 * wire's included, whose tool messages take text only (decision 0098). */
static rein_err take_tool_parts(struct rein__gw_req *r, const json_t *m, size_t i,
                                struct rein__gw_bad *bad)
{
    const json_t *id = json_object_get(m, "tool_call_id");
    struct rein_buf text;
    json_t *atts = NULL, *msg;
    char p[64];
    rein_err rc;

    snprintf(p, sizeof(p), "messages[%zu].tool_call_id", i);
    if ((rc = want_string(id, p, bad)) != REIN_OK)
        return rc;
    rein_buf_init(&text, 0);
    rc = user_parts(r, json_object_get(m, "content"), i, &text, &atts, bad);
    if (!rc) {
        msg = json_pack("{s:s, s:s%, s:s%, s:O*}", "role", "tool", "content",
                        text.ptr ? text.ptr : "", text.len, "tool_call_id", json_string_value(id),
                        json_string_length(id), "attachments", atts);
        rc = append_msg(r, msg, true, i, bad);
    }
    json_decref(atts);
    rein_buf_release(&text);
    return rc;
}

/* A user message of content parts for an upstream of another wire: its text and media. */
static rein_err take_user_parts(struct rein__gw_req *r, const json_t *content, size_t i,
                                struct rein__gw_bad *bad)
{
    struct rein_buf text;
    json_t *atts = NULL;
    rein_err rc;

    rein_buf_init(&text, 0);
    rc = user_parts(r, content, i, &text, &atts, bad);
    if (!rc)
        rc = append_msg(r, rein__gw_user_msg(text.ptr, text.len, atts), true, i, bad);
    json_decref(atts);
    rein_buf_release(&text);
    return rc;
}

static rein_err take_message(struct rein__gw_req *r, const json_t *m, size_t i,
                             struct rein__gw_bad *bad)
{
    const char *role = json_string_value(json_object_get(m, "role"));
    const json_t *content = json_object_get(m, "content");
    char p[64], *text = NULL;
    json_t *msg;
    rein_err rc;

    /* The parameter's path is written only when it is needed: on the way to a refusal (or
     * for the content parts, which name it in theirs). */
    if (!json_is_object(m)) {
        snprintf(p, sizeof(p), "messages[%zu]", i);
        return rein__gw_bad(bad, p,
                            "Invalid type for '%s': expected an object, but got %s instead.", p,
                            type_word(m));
    }
    if (role && strcmp(role, "assistant") == 0)
        return take_assistant(r, m, i, bad);
    if (!role || (strcmp(role, "system") != 0 && strcmp(role, "developer") != 0 &&
                  strcmp(role, "user") != 0 && strcmp(role, "tool") != 0)) {
        snprintf(p, sizeof(p), "messages[%zu].role", i);
        if (!role)
            return rein__gw_bad(bad, p, "Missing required parameter: '%s'.", p);
        return rein__gw_bad(bad, p,
                            "Invalid value: '%.40s'. Supported values are: 'system', 'developer', "
                            "'user', 'assistant' and 'tool'.",
                            role);
    }
    /* Content parts of a user's message for another wire: its media become attachments. */
    if (!r->verbatim && json_is_array(content) && strcmp(role, "user") == 0)
        return take_user_parts(r, content, i, bad);
    if (r->tool_media && json_is_array(content) && strcmp(role, "tool") == 0)
        return take_tool_parts(r, m, i, bad);
    /* Text as a string (most messages) needs no path and no copy of its own. */
    if (!json_is_string(content)) {
        snprintf(p, sizeof(p), "messages[%zu].content", i);
        if (!content)
            return rein__gw_bad(bad, p, "Missing required parameter: '%s'.", p);
        rc = rein__gw_content_text(content, p, false, r->verbatim, &text, bad);
        if (rc)
            return rc;
    }
    /* A developer message is the system prompt of newer models: the neutral shape has one.
     * Built of new values only (no json_pack: its format is read again for every message),
     * so the history can keep it without a copy. */
    msg = json_object();
    if (msg && (json_object_set_new(
                    msg, "role", json_string(strcmp(role, "developer") == 0 ? "system" : role)) ||
                json_object_set_new(msg, "content",
                                    json_string(text ? text : json_string_value(content))))) {
        json_decref(msg);
        msg = NULL;
    }
    rein_free(text);
    /* The message as sent when rein would write it otherwise: a developer role, content parts
     * (images, audio, files, cache_control), members besides these (as fast_text_message). */
    if (msg && r->verbatim &&
        (strcmp(role, "developer") == 0 || !json_is_string(content) ||
         json_object_size(m) != (json_object_get(m, "tool_call_id") ? 3U : 2U)) &&
        json_object_set_new(msg, "openai_message", json_deep_copy(m))) {
        json_decref(msg);
        msg = NULL;
    }
    if (!msg)
        return REIN_ENOMEM;
    if (strcmp(role, "tool") == 0) {
        const json_t *id = json_object_get(m, "tool_call_id");
        snprintf(p, sizeof(p), "messages[%zu].tool_call_id", i);
        rc = want_string(id, p, bad);
        if (!rc && json_object_set_new(msg, "tool_call_id",
                                       json_stringn(json_string_value(id), json_string_length(id))))
            rc = REIN_ENOMEM;
        if (rc) {
            json_decref(msg);
            return rc;
        }
    }
    return append_msg(r, msg, true, i, bad);
}

/* ---- tools and the other members ------------------------------------------------------------ */

/* A custom tool's format in the Responses API's words (new reference): the chat wire nests a
 * grammar's syntax and definition under "grammar", the Responses API does not. */
static json_t *responses_format(const json_t *format)
{
    const json_t *g = json_object_get(format, "grammar");

    if (!json_is_object(g))
        return json_incref((json_t *)format);
    return json_pack("{s:s, s:O*, s:O*}", "type", "grammar", "syntax", json_object_get(g, "syntax"),
                     "definition", json_object_get(g, "definition"));
}

/*
 * Custom tool i of tools: the function of one string it is checked as and offered upstream as
 * takes its place in the list (decision 0089), so an upstream of this wire gets that function
 * too, and r's entry reads the function.
 */
static rein_err take_custom_tool(struct rein__gw_req *r, json_t *tools, size_t i,
                                 struct rein__gw_bad *bad)
{
    const json_t *custom = json_object_get(json_array_get(tools, i), "custom");
    const json_t *desc = json_object_get(custom, "description");
    json_t *schema, *fn, *native;
    char p[64];
    rein_err rc;

    snprintf(p, sizeof(p), "tools[%zu].custom", i);
    if (!json_is_object(custom))
        return rein__gw_bad(bad, p, "Missing required parameter: '%s'.", p);
    snprintf(p, sizeof(p), "tools[%zu].custom.name", i);
    rc = want_string(json_object_get(custom, "name"), p, bad);
    if (!rc && desc && !json_is_string(desc)) {
        snprintf(p, sizeof(p), "tools[%zu].custom.description", i);
        rc = want_string(desc, p, bad);
    }
    if (rc)
        return rc;
    snprintf(p, sizeof(p), "tools[%zu].custom.format", i);
    schema = rein__gw_custom_schema(json_object_get(custom, "format"), p, bad);
    if (!schema)
        return bad->msg[0] ? REIN_EINVAL : REIN_ENOMEM;
    /* the Responses API's declaration, kept by the request: the tree's goes just below */
    native = json_pack("{s:s, s:O}", "type", "custom", "name", json_object_get(custom, "name"));
    rc = !native || (desc && json_object_set(native, "description", (json_t *)desc)) ||
                 (json_object_get(custom, "format") &&
                  json_object_set_new(native, "format",
                                      responses_format(json_object_get(custom, "format")))) ||
                 (!r->made && !(r->made = json_array())) || json_array_append(r->made, native)
             ? REIN_ENOMEM
             : REIN_OK;
    json_decref(native);
    if (rc) {
        json_decref(schema);
        return rc;
    }
    r->tools[r->ntools].native = native;
    fn = json_pack("{s:O, s:o}", "name", json_object_get(custom, "name"), "parameters", schema);
    if (!fn || (desc && json_object_set(fn, "description", (json_t *)desc)) ||
        json_array_set_new(tools, i, json_pack("{s:s, s:o}", "type", "function", "function", fn)))
        return REIN_ENOMEM;
    fn = json_object_get(json_array_get(tools, i), "function");
    r->tools[r->ntools].name = json_string_value(json_object_get(fn, "name"));
    r->tools[r->ntools].description = json_string_value(json_object_get(fn, "description"));
    r->tools[r->ntools].parameters = json_object_get(fn, "parameters");
    r->tools[r->ntools].custom = true;
    r->ntools++;
    return REIN_OK;
}

static rein_err take_tools(struct rein__gw_req *r, const json_t *tools, struct rein__gw_bad *bad)
{
    size_t i;
    json_t *t;
    char p[64];

    if (!tools || json_is_null(tools))
        return REIN_OK;
    if (!json_is_array(tools))
        return rein__gw_bad(bad, "tools",
                            "Invalid type for 'tools': expected an array of objects, but got %s "
                            "instead.",
                            type_word(tools));
    r->tools_json = (json_t *)tools;
    r->tools = rein_calloc(json_array_size(tools) + 1, sizeof(*r->tools));
    if (!r->tools)
        return REIN_ENOMEM;
    json_array_foreach(tools, i, t)
    {
        const char *type = json_string_value(json_object_get(t, "type"));
        const json_t *fn = json_object_get(t, "function");
        const json_t *params = json_object_get(fn, "parameters");
        const json_t *desc = json_object_get(fn, "description");
        rein_err rc;

        if (type && strcmp(type, "custom") == 0 && json_is_object(t)) {
            rc = take_custom_tool(r, (json_t *)tools, i, bad);
            if (rc)
                return rc;
            continue;
        }
        /* Each path is written only on the way to a refusal. */
        if (!json_is_object(t) || !type || strcmp(type, "function") != 0 || !json_is_object(fn)) {
            snprintf(p, sizeof(p), "tools[%zu]", i);
            if (!json_is_object(t))
                return rein__gw_bad(bad, p, "Invalid type for '%s': expected an object.", p);
            if (!type || strcmp(type, "function") != 0)
                return rein__gw_bad(bad, p,
                                    "Invalid '%s.type': %s%.40s%s tools are not supported by "
                                    "rein's gateway (function and custom tools only).",
                                    p, type ? "'" : "", type ? type : "missing", type ? "'" : "");
            return rein__gw_bad(bad, p, "Missing required parameter: '%s.function'.", p);
        }
        if (!json_is_string(json_object_get(fn, "name"))) {
            snprintf(p, sizeof(p), "tools[%zu].function.name", i);
            rc = want_string(json_object_get(fn, "name"), p, bad);
            if (rc)
                return rc;
        }
        if (params && !json_is_null(params) && !json_is_object(params)) {
            snprintf(p, sizeof(p), "tools[%zu].function.parameters", i);
            return rein__gw_bad(bad, p,
                                "Invalid type for '%s': expected an object, but got %s instead.", p,
                                type_word(params));
        }
        r->tools[r->ntools].name = json_string_value(json_object_get(fn, "name"));
        r->tools[r->ntools].description = json_string_value(desc);
        r->tools[r->ntools].parameters = json_is_object(params) ? (json_t *)params : NULL;
        r->ntools++;
    }
    return REIN_OK;
}

static rein_err take_tool_choice(struct rein__gw_req *r, const json_t *v, struct rein__gw_bad *bad)
{
    const char *s = json_string_value(v);

    if (!v || json_is_null(v))
        return REIN_OK;
    if (s && (!strcmp(s, "auto") || !strcmp(s, "none") || !strcmp(s, "required"))) {
        r->tool_choice = rein_strdup(s);
        return r->tool_choice ? REIN_OK : REIN_ENOMEM;
    }
    s = json_string_value(json_object_get(json_object_get(v, "function"), "name"));
    if (json_is_object(v) && s && json_string_value(json_object_get(v, "type")) &&
        !strcmp(json_string_value(json_object_get(v, "type")), "function")) {
        r->tool_choice = rein_strdup(s);
        return r->tool_choice ? REIN_OK : REIN_ENOMEM;
    }
    s = json_string_value(json_object_get(json_object_get(v, "custom"), "name"));
    if (json_is_object(v) && s && json_string_value(json_object_get(v, "type")) &&
        !strcmp(json_string_value(json_object_get(v, "type")), "custom")) {
        r->tool_choice = rein_strdup(s); /* the function it is offered as */
        return r->tool_choice ? REIN_OK : REIN_ENOMEM;
    }
    return rein__gw_bad(bad, "tool_choice",
                        "Invalid 'tool_choice': expected 'auto', 'none', 'required', "
                        "{\"type\": \"function\", \"function\": {\"name\": ...}} or "
                        "{\"type\": \"custom\", \"custom\": {\"name\": ...}}.");
}

static rein_err take_number(const json_t *v, const char *param, double lo, double hi, double *out,
                            struct rein__gw_bad *bad)
{
    if (!v || json_is_null(v))
        return REIN_OK;
    if (!json_is_number(v) || json_number_value(v) < lo || json_number_value(v) > hi)
        return rein__gw_bad(bad, param, "Invalid '%s': expected a number from %g to %g.", param, lo,
                            hi);
    *out = json_number_value(v);
    return REIN_OK;
}

static rein_err take_options(struct rein__gw_req *r, const json_t *body, struct rein__gw_bad *bad)
{
    const json_t *v;
    rein_err rc;

    v = json_object_get(body, "parallel_tool_calls");
    if (json_is_boolean(v))
        r->parallel = json_is_true(v);
    else if (v && !json_is_null(v))
        return rein__gw_bad(bad, "parallel_tool_calls",
                            "Invalid type for 'parallel_tool_calls': expected a boolean.");
    for (int k = 0; k < 2; k++) {
        const char *name = k ? "max_tokens" : "max_completion_tokens";
        v = json_object_get(body, name);
        if (!v || json_is_null(v) || r->max_tokens)
            continue;
        if (!json_is_integer(v) || json_integer_value(v) < 1)
            return rein__gw_bad(bad, name, "Invalid '%s': expected an integer of at least 1.",
                                name);
        r->max_tokens = json_integer_value(v);
    }
    rc = take_number(json_object_get(body, "temperature"), "temperature", 0, 2, &r->temperature,
                     bad);
    if (!rc)
        rc = take_number(json_object_get(body, "top_p"), "top_p", 0, 1, &r->top_p, bad);
    if (rc)
        return rc;
    v = json_object_get(body, "stop");
    if (json_is_string(v)) {
        r->stop = json_pack("[O]", v);
        if (!r->stop)
            return REIN_ENOMEM;
    } else if (json_is_array(v)) {
        size_t i;
        json_t *s;
        json_array_foreach(v, i, s)
        {
            if (!json_is_string(s))
                return rein__gw_bad(bad, "stop", "Invalid 'stop': expected strings.");
        }
        if (json_array_size(v))
            r->stop = json_incref((json_t *)v);
    } else if (v && !json_is_null(v)) {
        return rein__gw_bad(bad, "stop", "Invalid 'stop': expected a string or an array.");
    }
    v = json_object_get(body, "stream");
    if (v && !json_is_boolean(v) && !json_is_null(v))
        return rein__gw_bad(bad, "stream",
                            "Invalid type for 'stream': expected a boolean, but got %s instead.",
                            type_word(v));
    r->stream = json_is_true(v);
    v = json_object_get(body, "stream_options");
    if (v && !json_is_null(v)) {
        if (!r->stream)
            return rein__gw_bad(bad, "stream_options",
                                "The 'stream_options' parameter is only allowed when 'stream' is "
                                "enabled.");
        if (!json_is_object(v))
            return rein__gw_bad(bad, "stream_options",
                                "Invalid type for 'stream_options': expected an object.");
        r->include_usage = json_is_true(json_object_get(v, "include_usage"));
    }
    v = json_object_get(body, "n");
    if (v && !json_is_null(v) && (!json_is_integer(v) || json_integer_value(v) != 1))
        return rein__gw_bad(bad, "n",
                            "Invalid 'n': rein's gateway checks one reply, so n must be 1.");
    return REIN_OK;
}

/* Sorts the members the parser did not read: passthrough for the same wire, and whether
 * another wire may drop them or must refuse them. */
static rein_err take_rest(struct rein__gw_req *r, const json_t *body, struct rein__gw_bad *bad)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)body, key, v)
    {
        if (listed(handled, key))
            continue;
        if (!strcmp(key, "functions") || !strcmp(key, "function_call"))
            return rein__gw_bad(bad, key,
                                "'%s' is deprecated and not supported by rein's gateway: use "
                                "'tools' and 'tool_choice'.",
                                key);
        /* logprobs: false asks for nothing; anything else changes the answer's shape. */
        if (rein__gw_rest(r, key, v, key,
                          listed(droppable, key) && !(strcmp(key, "logprobs") == 0 &&
                                                      !json_is_false(v) && !json_is_null(v))))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

rein_err rein__gw_openai_parse_tree(struct rein__gw_req *r, const char *body, size_t len,
                                    struct rein__gw_bad *bad)
{
    const json_t *msgs, *model;
    rein_error perr;
    size_t i;
    json_t *m;
    rein_err rc = REIN_OK;

    r->doc = rein__gw_parse_doc(r, body, len, &perr);
    if (!r->doc)
        return perr.code == REIN_ENOMEM
                   ? REIN_ENOMEM
                   : rein__gw_bad(bad, "",
                                  "We could not parse the JSON body of your request: line "
                                  "%d, column %d: %s",
                                  perr.line, perr.column, perr.msg);
    if (!json_is_object(r->doc))
        return rein__gw_bad(bad, "",
                            "Invalid type for request body: expected an object, but got %s "
                            "instead.",
                            type_word(r->doc));
    model = json_object_get(r->doc, "model");
    if (!model)
        return rein__gw_bad(bad, "model", "you must provide a model parameter");
    if (!json_is_string(model))
        return rein__gw_bad(bad, "model", "Invalid type for 'model': expected a string.");
    r->model = json_string_value(model);
    msgs = json_object_get(r->doc, "messages");
    if (!msgs)
        return rein__gw_bad(bad, "messages", "Missing required parameter: 'messages'.");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return rein__gw_bad(bad, "messages",
                            "Invalid 'messages': expected a non-empty array of objects.");
    json_array_foreach(msgs, i, m)
    {
        rc = take_message(r, m, i, bad);
        if (rc)
            return rc;
    }
    if (!r->tools_known)
        rc = take_tools(r, json_object_get(r->doc, "tools"), bad);
    if (!rc && r->tools_json)
        (void)rein__gw_raw_member(body, len, "tools", &r->tools_raw, &r->tools_raw_len);
    if (!rc)
        rc = take_tool_choice(r, json_object_get(r->doc, "tool_choice"), bad);
    if (!rc)
        rc = take_options(r, r->doc, bad);
    if (!rc)
        rc = take_rest(r, r->doc, bad);
    return rc;
}

/* ---- the common shape without a tree ------------------------------------------------------ */

/*
 * Most bodies are a model, messages of text and the tools an agent sends every time (known to
 * the tools cache). Parsing those into a jansson tree, only to copy each message out of it and
 * free it, was about 15,000 instructions and 25 allocations per request (decision 0060). The
 * body is read as a rein_doc instead: text messages are made from its strings directly, and
 * the members that need values (other messages, tools, options, passthrough) get a tree of
 * just that member, read by the same functions as on the general path. Anything the read
 * refuses, a text the document form hands to jansson, or a key with a NUL, declines: the
 * general path then reads the whole body, so every refusal keeps its text and its place.
 */
#define DECLINED     REIN__GW_DECLINED
#define NODE_IS      REIN__GW_NODE_IS
#define node_has_nul rein__gw_node_has_nul

/* A message of text (system, developer, user, tool with its id) made from the document's
 * strings, as take_message makes it; DECLINED for any other message. */
static int fast_text_message(struct rein__gw_req *r, const struct rein_doc_node *m, size_t i,
                             struct rein__gw_bad *bad)
{
    const struct rein_doc_node *k = m + 1, *role = NULL, *content = NULL, *id = NULL;
    const char *word;
    json_t *msg;

    for (uint32_t j = 0; j < m->n; j++, k = rein_doc_next(k + 1)) {
        if (NODE_IS(k, "role"))
            role = k + 1;
        else if (NODE_IS(k, "content"))
            content = k + 1;
        else if (NODE_IS(k, "tool_call_id"))
            id = k + 1;
    }
    if (!role || role->type != JSON_STRING || !content || content->type != JSON_STRING ||
        node_has_nul(role))
        return DECLINED;
    /* For an upstream of this wire, a message rein would not write back the same (a developer
     * role, a member besides these) goes as sent: take_message. */
    if (r->verbatim && (NODE_IS(role, "developer") || m->n != (id ? 3U : 2U)))
        return DECLINED;
    if (NODE_IS(role, "system") || NODE_IS(role, "developer"))
        word = "system";
    else if (NODE_IS(role, "user"))
        word = "user";
    else if (NODE_IS(role, "tool") && id && id->type == JSON_STRING)
        word = "tool";
    else
        return DECLINED;
    /* The general path copies the content as a C string: it ends at a NUL. */
    msg = json_object();
    if (msg &&
        (json_object_set_new(msg, "role", json_string(word)) ||
         json_object_set_new(msg, "content",
                             json_stringn(content->u.str, strnlen(content->u.str, content->n))) ||
         (id && word[0] == 't' &&
          json_object_set_new(msg, "tool_call_id", json_stringn(id->u.str, id->n))))) {
        json_decref(msg);
        msg = NULL;
    }
    return append_msg(r, msg, true, i, bad);
}

static int fast_messages(struct rein__gw_req *r, const struct rein_doc_node *msgs,
                         struct rein__gw_bad *bad)
{
    const struct rein_doc_node *m = msgs + 1;

    if (msgs->type != JSON_ARRAY || msgs->n == 0)
        return DECLINED;
    for (uint32_t i = 0; i < msgs->n; i++, m = rein_doc_next(m)) {
        int rc;
        if (m->type != JSON_OBJECT)
            return DECLINED;
        rc = fast_text_message(r, m, i, bad);
        if (rc == DECLINED) {
            /* Another shape (an assistant's message, content parts): that message's tree. */
            json_t *t = rein_doc_node_tree(m);
            rc = t ? take_message(r, t, i, bad) : REIN_ENOMEM;
            json_decref(t);
        }
        if (rc)
            return rc;
    }
    return REIN_OK;
}

/* The members of the root in order: model and messages here, the others collected for the
 * general path's readers (options, the rest) or read from their own trees. */
static int fast_members(struct rein__gw_req *r, const struct rein_doc_node *root, const char *body,
                        size_t len, struct rein__gw_bad *bad)
{
    static const char *const keys[] = {"model", "messages", "tools", "tool_choice", NULL};
    const struct rein_doc_node *found[4] = {NULL};
    const struct rein_doc_node *model, *msgs, *tools, *choice;
    json_t *opts = NULL, *rest = NULL;
    int rc = rein__gw_members(root, keys, found, handled, &opts, &rest);

    model = found[0];
    msgs = found[1];
    tools = found[2];
    choice = found[3];
    if (!rc && (!model || model->type != JSON_STRING || !msgs))
        rc = DECLINED;
    if (!rc) {
        r->model_own = rein_strndup(model->u.str, model->n);
        r->model = r->model_own;
        rc = r->model ? fast_messages(r, msgs, bad) : REIN_ENOMEM;
    }
    if (!rc && tools && !r->tools_known) {
        r->doc = rein_doc_node_tree(tools);
        rc = r->doc ? take_tools(r, r->doc, bad) : REIN_ENOMEM;
    }
    if (!rc && r->tools_json)
        (void)rein__gw_raw_member(body, len, "tools", &r->tools_raw, &r->tools_raw_len);
    if (!rc && choice) {
        json_t *t = rein_doc_node_tree(choice);
        rc = t ? take_tool_choice(r, t, bad) : REIN_ENOMEM;
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

rein_err rein__gw_openai_parse(struct rein__gw_req *r, const char *body, size_t len,
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
    /* Declined or refused: the general path reads the body again from the start. */
    rein__gw_req_restart(r, bad);
    return rein__gw_openai_parse_tree(r, body, len, bad);
}

/* ---- answers ------------------------------------------------------------------------------ */

static void usage(const struct rein__gw_ctx *c, struct rein_jw *w)
{
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "prompt_tokens");
    rein_jw_int(w, c->in_tokens);
    REIN_JW_KEY(w, "completion_tokens");
    rein_jw_int(w, c->out_tokens);
    REIN_JW_KEY(w, "total_tokens");
    rein_jw_int(w, c->in_tokens + c->out_tokens);
    /* what a client prices by: cached prompt tokens (cache writes count as prompt tokens
     * here) and reasoning tokens, when the upstream said */
    if (c->cached_tokens >= 0) {
        REIN_JW_KEY(w, "prompt_tokens_details");
        rein_jw_obj_begin(w);
        REIN_JW_KEY(w, "cached_tokens");
        rein_jw_int(w, c->cached_tokens);
        rein_jw_obj_end(w);
    }
    if (c->reasoning_tokens >= 0) {
        REIN_JW_KEY(w, "completion_tokens_details");
        rein_jw_obj_begin(w);
        REIN_JW_KEY(w, "reasoning_tokens");
        rein_jw_int(w, c->reasoning_tokens);
        rein_jw_obj_end(w);
    }
    rein_jw_obj_end(w);
}

static void head(const struct rein__gw_ctx *c, struct rein_jw *w, const char *object)
{
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "id");
    rein_jw_str(w, c->id);
    REIN_JW_KEY(w, "object");
    rein_jw_str(w, object);
    REIN_JW_KEY(w, "created");
    rein_jw_int(w, c->created);
    REIN_JW_KEY(w, "model");
    rein_jw_str(w, c->model);
}

/* The answer (object) up to the key of its one choice's message or delta. */
static void choice_open(const struct rein__gw_ctx *c, struct rein_jw *w, const char *object,
                        const char *key)
{
    head(c, w, object);
    REIN_JW_KEY(w, "choices");
    rein_jw_arr_begin(w);
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "index");
    rein_jw_int(w, 0);
    rein_jw_key(w, key);
}

static void call_json(struct rein_jw *w, const struct rein__gw_call *call, int64_t index)
{
    rein_jw_obj_begin(w);
    if (index >= 0) {
        REIN_JW_KEY(w, "index");
        rein_jw_int(w, index);
    }
    REIN_JW_KEY(w, "id");
    rein_jw_str(w, call->id);
    REIN_JW_KEY(w, "type");
    /* a custom tool's call in its own shape (decision 0089): its input where arguments are */
    rein_jw_str(w, call->input ? "custom" : "function");
    rein_jw_key(w, call->input ? "custom" : "function");
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "name");
    rein_jw_str(w, call->name);
    rein_jw_key(w, call->input ? "input" : "arguments");
    rein_jw_str(w, call->input ? call->input : call->args);
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
}

static rein_err oa_reply(const struct rein__gw_ctx *c, struct rein_buf *out)
{
    const char *text = c->last ? rein_model_response_text(c->last) : "";
    const char *refusal = c->last ? rein_model_response_refusal(c->last) : NULL;
    const char *reasoning = c->last ? rein_model_response_reasoning(c->last) : "";
    /* the final round's, as the upstream sent them: the client asked for them */
    const json_t *logprobs = c->last ? rein_model_response_logprobs(c->last) : NULL;
    const json_t *annotations = c->last ? rein_model_response_annotations(c->last) : NULL;
    struct rein_jw w;

    rein_jw_init(&w, out);
    choice_open(c, &w, "chat.completion", "message");
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "role");
    rein_jw_str(&w, "assistant");
    REIN_JW_KEY(&w, "content");
    if (text[0] || (!c->nout && !refusal))
        rein_jw_str(&w, text);
    else
        rein_jw_null(&w);
    REIN_JW_KEY(&w, "refusal");
    rein_jw_str(&w, refusal); /* NULL is written null */
    if (reasoning[0]) {
        REIN_JW_KEY(&w, "reasoning_content");
        rein_jw_str(&w, reasoning);
    }
    if (c->nout) {
        REIN_JW_KEY(&w, "tool_calls");
        rein_jw_arr_begin(&w);
        for (size_t i = 0; i < c->nout; i++)
            call_json(&w, &c->out[i], -1);
        rein_jw_arr_end(&w);
    }
    if (annotations) {
        REIN_JW_KEY(&w, "annotations");
        rein_jw_json(&w, annotations);
    }
    rein_jw_obj_end(&w);
    REIN_JW_KEY(&w, "logprobs");
    if (logprobs)
        rein_jw_json(&w, logprobs);
    else
        rein_jw_null(&w);
    REIN_JW_KEY(&w, "finish_reason");
    rein_jw_str(&w, rein__gw_finish(c, false));
    rein_jw_obj_end(&w);
    rein_jw_arr_end(&w);
    REIN_JW_KEY(&w, "usage");
    usage(c, &w);
    rein__gw_rein_member(c, &w);
    rein_jw_obj_end(&w);
    return rein_jw_finish(&w);
}

/* The OpenAI error type for a status, where none is given. */
static const char *error_type(int status)
{
    if (status == 401)
        return "authentication_error";
    if (status == 403)
        return "permission_error";
    if (status == 404)
        return "not_found_error";
    if (status == 409)
        return "conflict_error";
    if (status == 422)
        return "invalid_tool_calls";
    if (status == 429)
        return "rate_limit_error";
    if (status >= 500)
        return "server_error";
    return "invalid_request_error";
}

static void error_object(const struct rein__gw_err *e, struct rein_jw *w)
{
    const char *msg = json_string_value(json_object_get(e->upstream, "message"));

    if (e->upstream_same && json_is_object(e->upstream)) {
        rein_jw_json(w, e->upstream); /* the upstream's own error, as it sent it */
        return;
    }
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "message");
    rein_jw_str(w, msg ? msg : e->message);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, e->type ? e->type : error_type(e->status));
    REIN_JW_KEY(w, "param");
    rein_jw_str(w, e->param && e->param[0] ? e->param : NULL);
    REIN_JW_KEY(w, "code");
    rein_jw_str(w, e->code);
    rein_jw_obj_end(w);
}

static rein_err oa_error(const struct rein__gw_err *e, const json_t *rein_ext, struct rein_buf *out)
{
    struct rein_jw w;

    rein_jw_init(&w, out);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "error");
    error_object(e, &w);
    if (rein_ext) {
        REIN_JW_KEY(&w, "rein");
        rein_jw_json(&w, rein_ext);
    }
    rein_jw_obj_end(&w);
    return rein_jw_finish(&w);
}

/* ---- streaming ---------------------------------------------------------------------------- */

/*
 * The bytes every chunk of this answer starts with, up to its delta (made once): a long
 * stream is thousands of small text chunks that differ only in their text, and encoding the
 * id, the model and the time again for each was a large part of what a chunk cost.
 */
static rein_err chunk_head(struct rein__gw_ctx *c)
{
    if (c->chunk_head.len)
        return REIN_OK;
    rein_jw_init(&c->chunk_w, &c->chunk_head);
    choice_open(c, &c->chunk_w, "chat.completion.chunk", "delta");
    /* The writer is left mid-object on purpose: its bytes and its state are kept, and each
     * chunk goes on from a copy of them (chunk_begin). */
    if (c->chunk_w.err)
        rein_buf_reset(&c->chunk_head);
    return c->chunk_w.err;
}

/* A chunk up to its delta: the bytes every chunk starts with, and the writer as it stands
 * after them, both made once (chunk_head). */
static void chunk_begin(struct rein__gw_ctx *c, struct rein_jw *w)
{
    rein_err rc = chunk_head(c);

    rein_buf_reset(&c->ev);
    *w = c->chunk_w;
    w->buf = &c->ev;
    if (!rc)
        rc = rein_buf_add(&c->ev, c->chunk_head.ptr, c->chunk_head.len);
    if (rc && !w->err)
        w->err = rc;
}

static rein_err chunk_end(struct rein__gw_ctx *c, struct rein_jw *w, const char *finish,
                          bool with_rein)
{
    rein_err rc;

    REIN_JW_KEY(w, "logprobs");
    if (c->logprobs.len)
        rein_jw_raw(w, c->logprobs.ptr, c->logprobs.len);
    else
        rein_jw_null(w);
    rein_buf_reset(&c->logprobs);
    REIN_JW_KEY(w, "finish_reason");
    rein_jw_str(w, finish);
    rein_jw_obj_end(w);
    rein_jw_arr_end(w);
    if (c->req.include_usage) {
        REIN_JW_KEY(w, "usage");
        rein_jw_null(w);
    }
    if (with_rein)
        rein__gw_rein_member(c, w);
    rein_jw_obj_end(w);
    rc = rein_jw_finish(w);
    return rc ? rc : rein__gw_emit(c, NULL, c->ev.ptr, c->ev.len);
}

/* The first chunk of a stream names the role, as OpenAI's do. */
static rein_err role_chunk(struct rein__gw_ctx *c)
{
    struct rein_jw w;

    if (c->role_sent)
        return REIN_OK;
    c->role_sent = true;
    chunk_begin(c, &w);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "role");
    rein_jw_str(&w, "assistant");
    REIN_JW_KEY(&w, "content");
    rein_jw_str(&w, "");
    REIN_JW_KEY(&w, "refusal");
    rein_jw_null(&w);
    rein_jw_obj_end(&w);
    return chunk_end(c, &w, NULL, false);
}

/*
 * A text chunk written where it goes, framed as rein__gw_emit() frames it: "data: ", the head
 * every chunk has and key (made once per kind of text, a stream has one or two), then the text
 * and the tail (rein__gw_frame_text): a long stream is thousands of these, and writing one
 * apart and then framing it was a copy and three calls more.
 */
static rein_err framed_text(struct rein__gw_ctx *c, enum rein_model_event_type kind,
                            const char *key, size_t klen, const char *p, size_t n, const char *tail,
                            size_t tlen)
{
    struct rein_buf *h = &c->frame_head;
    rein_err rc = REIN_OK;

    if (!h->len || c->frame_head_kind != kind) {
        rein_buf_reset(h);
        rc = rein_buf_add(h, "data: ", 6);
        if (!rc)
            rc = rein_buf_add(h, c->chunk_head.ptr, c->chunk_head.len);
        if (!rc)
            rc = rein_buf_add(h, key, klen);
        if (rc) {
            rein_buf_reset(h);
            return rc;
        }
        c->frame_head_kind = kind;
    }
    return rein__gw_frame_text(c, p, n, tail, tlen + 2); /* the tail and the blank line */
}

/* A text chunk written the general way: the one that carries the logprobs the upstream sent
 * before this text. */
static rein_err text_chunk(struct rein__gw_ctx *c, enum rein_model_event_type kind, const char *p,
                           size_t n)
{
    struct rein_jw w;

    chunk_begin(c, &w);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, kind == REIN_MEV_REASONING_DELTA ? "reasoning_content"
                    : kind == REIN_MEV_REFUSAL_DELTA ? "refusal"
                                                     : "content");
    rein_jw_strn(&w, p, n);
    rein_jw_obj_end(&w);
    return chunk_end(c, &w, NULL, false);
}

/* A text chunk: the same bytes chunk_begin() ... chunk_end(NULL, false) would write. */
static rein_err oa_s_text(struct rein__gw_ctx *c, enum rein_model_event_type kind, const char *p,
                          size_t n)
{
    const char *key = kind == REIN_MEV_REASONING_DELTA ? "{\"reasoning_content\":\""
                      : kind == REIN_MEV_REFUSAL_DELTA ? "{\"refusal\":\""
                                                       : "{\"content\":\"";
    /* each followed by a frame's blank line, which only framed_text() takes */
    static const char tail[] = "\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
    static const char tail_usage[] =
        "\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n";
    const char *t = c->req.include_usage ? tail_usage : tail;
    size_t klen = strlen(key),
           tlen = c->req.include_usage ? sizeof(tail_usage) - 3 : sizeof(tail) - 3;
    rein_err rc = role_chunk(c);

    if (rc || n == 0)
        return rc;
    if (c->logprobs.len)
        return text_chunk(c, kind, p, n);
    rc = chunk_head(c);
    if (!rc && c->sink->stream_frames)
        return framed_text(c, kind, key, klen, p, n, t, tlen);
    rein_buf_reset(&c->ev);
    /* room for the plain case at once, the head and key copied into it: thousands of these
     * per stream, where each append was a call of its own */
    if (!rc)
        rc = rein_buf_grow(&c->ev, c->chunk_head.len + klen + n + tlen);
    if (!rc) {
        memcpy(c->ev.ptr, c->chunk_head.ptr, c->chunk_head.len);
        memcpy(c->ev.ptr + c->chunk_head.len, key, klen);
        c->ev.len = c->chunk_head.len + klen;
        c->ev.ptr[c->ev.len] = '\0';
        rc = rein_json_escape(&c->ev, p, n);
    }
    if (!rc && tlen < c->ev.alloc - c->ev.len) {
        /* the room reserved above, unless the text needed escapes */
        memcpy(c->ev.ptr + c->ev.len, t, tlen);
        c->ev.len += tlen;
        c->ev.ptr[c->ev.len] = '\0';
    } else if (!rc) {
        rc = rein_buf_add(&c->ev, t, tlen);
    }
    return rc ? rc : rein__gw_emit(c, NULL, c->ev.ptr, c->ev.len);
}

static rein_err oa_s_call(struct rein__gw_ctx *c, const struct rein__gw_call *call, size_t index)
{
    struct rein_jw w;
    rein_err rc = role_chunk(c);

    if (rc)
        return rc;
    chunk_begin(c, &w);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "tool_calls");
    rein_jw_arr_begin(&w);
    call_json(&w, call, (int64_t)index);
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    return chunk_end(c, &w, NULL, false);
}

static rein_err oa_s_end(struct rein__gw_ctx *c)
{
    struct rein_jw w;
    rein_err rc = role_chunk(c);

    if (rc)
        return rc;
    chunk_begin(c, &w);
    rein_jw_obj_begin(&w);
    rein_jw_obj_end(&w);
    rc = chunk_end(c, &w, rein__gw_finish(c, false), true);
    if (!rc && c->req.include_usage) {
        rein_buf_reset(&c->ev);
        rein_jw_init(&w, &c->ev);
        head(c, &w, "chat.completion.chunk");
        REIN_JW_KEY(&w, "choices");
        rein_jw_arr_begin(&w);
        rein_jw_arr_end(&w);
        REIN_JW_KEY(&w, "usage");
        usage(c, &w);
        rein_jw_obj_end(&w);
        rc = rein_jw_finish(&w);
        if (!rc)
            rc = rein__gw_emit(c, NULL, c->ev.ptr, c->ev.len);
    }
    return rc ? rc : rein__gw_emit(c, NULL, "[DONE]", 6);
}

/*
 * What a search model or a client's logprobs add to the stream, as the upstream sent them:
 * logprobs go with the next chunk, the one that carries the text they score (a piece before
 * them still waiting goes first in a chunk of its own); annotations go at once, in a delta of
 * their own, as OpenAI sends them.
 */
static rein_err oa_s_block(struct rein__gw_ctx *c, enum rein_model_event_type kind, const char *p,
                           size_t n)
{
    struct rein_jw w;
    rein_err rc;

    if ((kind != REIN_MEV_LOGPROBS && kind != REIN_MEV_ANNOTATIONS) || n == 0)
        return REIN_OK;
    rc = role_chunk(c);
    if (!rc && c->logprobs.len && kind == REIN_MEV_LOGPROBS) {
        chunk_begin(c, &w);
        rein_jw_obj_begin(&w);
        rein_jw_obj_end(&w);
        rc = chunk_end(c, &w, NULL, false);
    }
    if (rc || kind == REIN_MEV_LOGPROBS)
        return rc ? rc : rein_buf_add(&c->logprobs, p, n);
    chunk_begin(c, &w);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "annotations");
    rein_jw_raw(&w, p, n);
    rein_jw_obj_end(&w);
    return chunk_end(c, &w, NULL, false);
}

/* ---- GET /v1/models ---------------------------------------------------------------------- */

static rein_err oa_models(const rein_gateway *g, struct rein_buf *out)
{
    struct rein_jw w;

    rein_jw_init(&w, out);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "object");
    rein_jw_str(&w, "list");
    REIN_JW_KEY(&w, "data");
    rein_jw_arr_begin(&w);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "id");
    rein_jw_str(&w, rein_provider_model(g->provider));
    REIN_JW_KEY(&w, "object");
    rein_jw_str(&w, "model");
    REIN_JW_KEY(&w, "created");
    rein_jw_int(&w, 0);
    REIN_JW_KEY(&w, "owned_by");
    rein_jw_str(&w, rein_provider_name(g->provider));
    rein_jw_obj_end(&w);
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    return rein_jw_finish(&w);
}

const struct rein__gw_wire rein__gw_openai = {
    .name = "openai",
    .id_prefix = "call_",
    .parse = rein__gw_openai_parse,
    .reply = oa_reply,
    .error = oa_error,
    .s_text = oa_s_text,
    .s_block = oa_s_block,
    .s_call = oa_s_call,
    .s_end = oa_s_end,
    .s_error = rein__gw_s_error_body, /* a chunk holding only "error": the SDKs raise it */
    .models = oa_models,
};
