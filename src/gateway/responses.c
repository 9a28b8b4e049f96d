/*
 * The gateway's OpenAI Responses wire (POST /v1/responses), which Codex CLI and the OpenAI
 * Agents SDK speak by default (decision 0088).
 *
 * A request is read as the chat completions request it means (rs_convert): the input's
 * messages, function and custom tool calls and their outputs become messages, instructions a
 * system message, the flat function and custom tools the chat wire's nested ones,
 * max_output_tokens max_completion_tokens. The OpenAI parser then reads that body, so a
 * Responses request is checked, cached and forwarded exactly as a chat completions one. What
 * the Responses body holds beyond it depends on the upstream's wire: an upstream of this wire
 * gets it as it is (reasoning items and hosted tools' calls back with the assistant message
 * they came before, hosted tools after the function tools: decision 0091), one of the chat wire
 * in that wire's words (reasoning.effort as reasoning_effort, text.format as response_format);
 * what an upstream has no place for is dropped when the answer stays the same (include, …)
 * and refused by name otherwise. A body may continue a kept answer by previous_response_id
 * and name its items by item_reference (kept.c, decision 0090); conversation and prompt are
 * refused.
 *
 * The answer is a response object: its output items (reasoning and hosted tools' calls, the
 * message with its annotations, one function_call or custom_tool_call per checked call) and
 * usage. A stream is the typed events of the Responses API, each with its sequence_number:
 * response.created, each item's added / delta / done events as the text and the checked calls
 * come, response.completed (or .incomplete) with the whole response.
 */
#include "gateway_int.h"

#include "core/internal.h"

#include <string.h>

/* ---- the request ---------------------------------------------------------------------------- */

/* Members read into the chat completions body. */
static const char *const taken[] = {
    "model",       "input", "instructions",      "tools",  "tool_choice", "parallel_tool_calls",
    "temperature", "top_p", "max_output_tokens", "stream", NULL,
};
/* Members another wire may go without: the answer is the same. */
static const char *const droppable[] = {
    "store",
    "metadata",
    "user",
    "include",
    "reasoning",
    "service_tier",
    "prompt_cache_key",
    "safety_identifier",
    "stream_options",
    "truncation",
    "background",
    NULL,
};
/* Members that ask rein to keep what it does not keep. */
static const char *const stateful[] = {"conversation", "prompt", NULL};

struct conv {
    json_t *msgs;      /* the chat messages */
    json_t *assistant; /* the last message when it is an assistant's, for its calls */
    bool reasoning;    /* input held reasoning items that were dropped */
    /* A Responses upstream takes reasoning items back: those waiting for the assistant
     * message they came before (its reasoning_items). */
    bool keep_reasoning;
    json_t *pending;
    struct rein__gw_bad *bad;
};

static bool is(const json_t *v, const char *s)
{
    return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

/* The members of src named in keys (NULL-terminated) that it has and are not null (new). */
static json_t *picked(const json_t *src, const char *const *keys)
{
    json_t *o = json_object();

    for (; o && *keys; keys++) {
        json_t *v = json_object_get(src, *keys);
        if (v && !json_is_null(v) && json_object_set(o, *keys, v)) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}
#define PICKED(src, ...) picked((src), (const char *const[]){__VA_ARGS__, NULL})

static rein_err add(struct conv *cv, json_t *msg, bool assistant)
{
    if (msg && assistant && cv->pending) {
        if (json_object_set_new(msg, "reasoning_items", cv->pending)) {
            cv->pending = NULL;
            json_decref(msg);
            return REIN_ENOMEM;
        }
        cv->pending = NULL;
    }
    if (!msg || json_array_append_new(cv->msgs, msg))
        return REIN_ENOMEM;
    cv->assistant = assistant ? msg : NULL;
    return REIN_OK;
}

/* One content part of a user, system or developer message, as the chat wire writes it. */
static rein_err user_part(const json_t *p, const char *param, json_t *parts,
                          struct rein__gw_bad *bad)
{
    const json_t *type = json_object_get(p, "type");
    json_t *out;

    if ((is(type, "input_text") || is(type, "output_text")) &&
        json_is_string(json_object_get(p, "text")))
        out = json_pack("{s:s, s:O}", "type", "text", "text", json_object_get(p, "text"));
    else if (is(type, "input_image") && json_is_string(json_object_get(p, "image_url")))
        out = json_pack("{s:s, s:o}", "type", "image_url", "image_url", PICKED(p, "detail"));
    else if (is(type, "input_file"))
        out = json_pack("{s:s, s:o}", "type", "file", "file",
                        PICKED(p, "file_data", "file_id", "filename", "file_url"));
    else if (is(type, "input_image"))
        return rein__gw_bad(bad, param,
                            "'%s': rein's gateway takes an image by its image_url (a URL or a data "
                            "URL), not by file_id.",
                            param);
    else
        return rein__gw_bad(bad, param,
                            "Invalid '%s': expected input_text with its text, input_image or "
                            "input_file.",
                            param);
    if (out && is(type, "input_image") &&
        json_object_set(json_object_get(out, "image_url"), "url",
                        json_object_get(p, "image_url"))) {
        json_decref(out);
        out = NULL;
    }
    if (!out)
        return REIN_ENOMEM;
    return json_array_append_new(parts, out) ? REIN_ENOMEM : REIN_OK;
}

/* The text of an assistant message's parts (output_text; a refusal says nothing to send). */
static rein_err assistant_text(const json_t *content, const char *param, char **out,
                               struct rein__gw_bad *bad)
{
    struct rein_buf b;
    size_t i;
    json_t *p;

    if (json_is_string(content)) {
        *out = rein_strdup(json_string_value(content));
        return *out ? REIN_OK : REIN_ENOMEM;
    }
    if (!json_is_array(content))
        return rein__gw_bad(bad, param, "Invalid '%s': expected a string or an array.", param);
    rein_buf_init(&b, 0);
    json_array_foreach(content, i, p)
    {
        const char *t = json_string_value(json_object_get(p, "text"));
        if (is(json_object_get(p, "type"), "refusal"))
            continue;
        if (!t) {
            rein_buf_release(&b);
            return rein__gw_bad(bad, param, "Invalid '%s[%zu]': expected output_text with text.",
                                param, i);
        }
        if (rein_buf_adds(&b, t)) {
            rein_buf_release(&b);
            return REIN_ENOMEM;
        }
    }
    *out = rein_buf_detach(&b, NULL);
    return *out ? REIN_OK : REIN_ENOMEM;
}

static rein_err message_item(struct conv *cv, const json_t *item, const char *param)
{
    const json_t *role = json_object_get(item, "role"), *content = json_object_get(item, "content");
    char cparam[160];
    json_t *parts;
    size_t i;
    json_t *p;

    snprintf(cparam, sizeof(cparam), "%s.content", param);
    if (is(role, "assistant")) {
        char *text = NULL;
        rein_err rc = assistant_text(content, cparam, &text, cv->bad);
        if (rc)
            return rc;
        rc = add(cv, json_pack("{s:s, s:s}", "role", "assistant", "content", text), true);
        rein_free(text);
        return rc;
    }
    if (!is(role, "user") && !is(role, "system") && !is(role, "developer"))
        return rein__gw_bad(cv->bad, param,
                            "Invalid '%s.role': expected one of user, system, developer or "
                            "assistant.",
                            param);
    if (json_is_string(content))
        return add(cv, json_pack("{s:O, s:O}", "role", role, "content", content), false);
    if (!json_is_array(content))
        return rein__gw_bad(cv->bad, cparam, "Invalid '%s': expected a string or an array.",
                            cparam);
    if (!(parts = json_array()))
        return REIN_ENOMEM;
    json_array_foreach(content, i, p)
    {
        char pparam[200];
        rein_err rc;
        snprintf(pparam, sizeof(pparam), "%s[%zu]", cparam, i);
        rc = user_part(p, pparam, parts, cv->bad);
        if (rc) {
            json_decref(parts);
            return rc;
        }
    }
    return add(cv, json_pack("{s:O, s:o}", "role", role, "content", parts), false);
}

/* A function call (or a custom tool's: custom) joins the assistant message before it (the chat
 * wire's calls are members of one), or starts one. */
static rein_err function_call(struct conv *cv, const json_t *item, const char *param, bool custom)
{
    const json_t *id = json_object_get(item, "call_id"), *name = json_object_get(item, "name");
    const json_t *args = json_object_get(item, custom ? "input" : "arguments");
    json_t *calls;

    if (!json_is_string(id) || !json_is_string(name) || !json_is_string(args))
        return rein__gw_bad(
            cv->bad, param, "Invalid '%s': a %s needs call_id, name and %s as strings.", param,
            custom ? "custom_tool_call" : "function_call", custom ? "input" : "arguments");
    if (!cv->assistant) {
        rein_err rc = add(cv, json_pack("{s:s, s:n}", "role", "assistant", "content"), true);
        if (rc)
            return rc;
    }
    calls = json_object_get(cv->assistant, "tool_calls");
    if (!calls &&
        (!(calls = json_array()) || json_object_set_new(cv->assistant, "tool_calls", calls)))
        return REIN_ENOMEM;
    return json_array_append_new(calls, json_pack("{s:O, s:s, s:{s:O, s:O}}", "id", id, "type",
                                                  custom ? "custom" : "function",
                                                  custom ? "custom" : "function", "name", name,
                                                  custom ? "input" : "arguments", args))
               ? REIN_ENOMEM
               : REIN_OK;
}

/* Whether a function_call_output's output list holds media (input_image, input_file). */
static bool output_media(const json_t *out)
{
    size_t i;
    json_t *p;

    json_array_foreach(out, i, p)
    {
        if (is(json_object_get(p, "type"), "input_image") ||
            is(json_object_get(p, "type"), "input_file"))
            return true;
    }
    return false;
}

static rein_err function_output(struct conv *cv, const json_t *item, const char *param)
{
    const json_t *id = json_object_get(item, "call_id"), *out = json_object_get(item, "output");
    char *text = NULL;
    rein_err rc;

    if (!json_is_string(id))
        return rein__gw_bad(cv->bad, param, "Invalid '%s.call_id': expected a string.", param);
    if (json_is_array(out) && output_media(out)) {
        /* An output of text and media (input_text, input_image, input_file) goes as a tool
         * message of the chat wire's content parts, which the chat parser reads into the tool
         * message's text and attachments (rein__gw_req's tool_media, decision 0098). */
        json_t *parts = json_array(), *p;
        char pparam[200];
        size_t i;
        if (!parts)
            return REIN_ENOMEM;
        json_array_foreach(out, i, p)
        {
            snprintf(pparam, sizeof(pparam), "%s.output[%zu]", param, i);
            if ((rc = user_part(p, pparam, parts, cv->bad)) != REIN_OK) {
                json_decref(parts);
                return rc;
            }
        }
        return add(
            cv, json_pack("{s:s, s:O, s:o}", "role", "tool", "tool_call_id", id, "content", parts),
            false);
    }
    rc = json_is_string(out)
             ? ((text = rein_strdup(json_string_value(out))) ? REIN_OK : REIN_ENOMEM)
             : assistant_text(out, param, &text, cv->bad);
    if (!rc)
        rc = add(cv,
                 json_pack("{s:s, s:O, s:s}", "role", "tool", "tool_call_id", id, "content", text),
                 false);
    rein_free(text);
    return rc;
}

/* What a hosted tool wrote (it ran at OpenAI), as the Responses decoder keeps it. */
static bool hosted_call(const json_t *type)
{
    static const char *const types[] = {"web_search_call",
                                        "file_search_call",
                                        "code_interpreter_call",
                                        "image_generation_call",
                                        "mcp_call",
                                        "mcp_list_tools",
                                        NULL};

    for (const char *const *t = types; *t; t++) {
        if (is(type, *t))
            return true;
    }
    return false;
}

/* An item that goes back with the assistant message after it (its reasoning_items). */
static rein_err keep_before_message(struct conv *cv, const json_t *item)
{
    if (!cv->pending && !(cv->pending = json_array()))
        return REIN_ENOMEM;
    return json_array_append(cv->pending, (json_t *)item) ? REIN_ENOMEM : REIN_OK;
}

static rein_err input_item(struct conv *cv, const json_t *item, size_t i)
{
    const json_t *type = json_object_get(item, "type");
    char param[64];

    snprintf(param, sizeof(param), "input[%zu]", i);
    if (!json_is_object(item))
        return rein__gw_bad(cv->bad, param, "Invalid type for '%s': expected an object.", param);
    if (is(type, "message") || (!type && json_object_get(item, "role")))
        return message_item(cv, item, param);
    if (is(type, "function_call") || is(type, "custom_tool_call"))
        return function_call(cv, item, param, is(type, "custom_tool_call"));
    if (is(type, "function_call_output") || is(type, "custom_tool_call_output"))
        return function_output(cv, item, param);
    if (is(type, "reasoning")) {
        /* a reasoning model's own items: a Responses upstream takes them back with the
         * assistant's message they came before; no other upstream has a place for them */
        cv->reasoning |= !cv->keep_reasoning;
        if (!cv->keep_reasoning)
            return REIN_OK;
        return keep_before_message(cv, item);
    }
    if (cv->keep_reasoning && hosted_call(type)) /* a hosted tool's call goes the same way */
        return keep_before_message(cv, item);
    if (is(type, "item_reference")) /* left by rein__gw_kept_resolve: nothing is kept */
        return rein__gw_bad(cv->bad, param,
                            "'%s': this gateway keeps no items (--gateway-keep-bytes 0); send "
                            "the item itself.",
                            param);
    return rein__gw_bad(cv->bad, param,
                        "'%s': items of type %s are not forwarded by rein's gateway: it takes "
                        "messages, function and custom tool calls and their outputs.",
                        param, json_is_string(type) ? json_string_value(type) : "(none)");
}

static rein_err take_input(struct conv *cv, const json_t *body)
{
    const json_t *input = json_object_get(body, "input"),
                 *ins = json_object_get(body, "instructions");
    size_t i;
    json_t *item;

    if (json_is_string(ins) && json_string_length(ins) &&
        add(cv, json_pack("{s:s, s:O}", "role", "system", "content", ins), false))
        return REIN_ENOMEM;
    if (ins && !json_is_string(ins) && !json_is_null(ins))
        return rein__gw_bad(cv->bad, "instructions", "Invalid 'instructions': expected a string.");
    /* a string input is a user message item by now (rein__gw_kept_resolve) */
    if (!json_is_array(input))
        return rein__gw_bad(cv->bad, "input",
                            "Invalid 'input': expected a string or an array of "
                            "items.");
    json_array_foreach(input, i, item)
    {
        rein_err rc = input_item(cv, item, i);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

/* A custom tool as the chat wire writes one: nested, and its grammar in a member of its own
 * (the chat parser then offers it as a function, decision 0089). New reference, or NULL. */
static json_t *custom_tool(const json_t *t)
{
    const json_t *format = json_object_get(t, "format");
    json_t *custom = PICKED(t, "name", "description");
    json_t *f = NULL;

    if (is(json_object_get(format, "type"), "grammar"))
        f = json_pack("{s:s, s:o}", "type", "grammar", "grammar",
                      PICKED(format, "syntax", "definition"));
    else if (format && !json_is_null(format))
        f = json_incref((json_t *)format);
    if (custom && f && json_object_set_new(custom, "format", f)) {
        json_decref(custom);
        return NULL;
    }
    return json_pack("{s:s, s:o}", "type", "custom", "custom", custom);
}

/* A hosted tool (it runs at OpenAI): only an upstream of this wire can take one, and its mcp
 * tool only when it asks no approval (the approval would wait for a client rein cannot be). */
static bool hosted_tool(const json_t *t)
{
    const char *type = json_string_value(json_object_get(t, "type"));

    if (!type)
        return false;
    if (strcmp(type, "mcp") == 0)
        return is(json_object_get(t, "require_approval"), "never");
    return strncmp(type, "web_search", 10) == 0 || strcmp(type, "file_search") == 0 ||
           strcmp(type, "code_interpreter") == 0 || strcmp(type, "image_generation") == 0;
}

/*
 * Function tools, flat on this wire, nested on the chat one; custom tools in the chat wire's
 * shape. hosted (NULL unless the upstream speaks this wire, which runs them): the hosted
 * tools, as written.
 */
static rein_err take_tools(const json_t *tools, json_t *chat, json_t *hosted,
                           struct rein__gw_bad *bad)
{
    json_t *out;
    size_t i;
    json_t *t;

    if (!tools || json_is_null(tools))
        return REIN_OK;
    if (!json_is_array(tools))
        return rein__gw_bad(bad, "tools", "Invalid 'tools': expected an array.");
    if (!(out = json_array()) || json_object_set_new(chat, "tools", out))
        return REIN_ENOMEM;
    json_array_foreach(tools, i, t)
    {
        const json_t *type = json_object_get(t, "type");
        char param[64];
        json_t *fn;
        snprintf(param, sizeof(param), "tools[%zu].type", i);
        if (hosted && hosted_tool(t)) {
            if (json_array_append(hosted, t))
                return REIN_ENOMEM;
            continue;
        }
        if (is(type, "custom")) {
            if (json_array_append_new(out, custom_tool(t)))
                return REIN_ENOMEM;
            continue;
        }
        if (!is(type, "function"))
            return rein__gw_bad(bad, param,
                                "'%s' tools are not forwarded by rein's gateway: it forwards "
                                "function tools, whose calls it checks against their "
                                "parameters, custom tools, and to an upstream of the "
                                "Responses API web search, file search, code interpreter, "
                                "image generation and MCP tools that ask no approval.",
                                json_is_string(type) ? json_string_value(type) : "untyped");
        fn = PICKED(t, "name", "description", "parameters", "strict");
        if (!fn ||
            json_array_append_new(out, json_pack("{s:s, s:o}", "type", "function", "function", fn)))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

/*
 * The tool choice: a word, a function or a custom tool goes into the chat body. Another kind
 * (a hosted tool's type, allowed_tools, an MCP server) only the Responses API reads: for an
 * upstream of it (own) it goes up as written (*hosted, borrowed, joins the passthrough).
 */
static rein_err take_choice(const json_t *choice, json_t *chat, bool own, const json_t **hosted,
                            struct rein__gw_bad *bad)
{
    if (!choice || json_is_null(choice))
        return REIN_OK;
    if (json_is_string(choice))
        return json_object_set(chat, "tool_choice", (json_t *)choice) ? REIN_ENOMEM : REIN_OK;
    if (is(json_object_get(choice, "type"), "function") ||
        is(json_object_get(choice, "type"), "custom")) {
        const char *type = json_string_value(json_object_get(choice, "type"));
        return json_object_set_new(
                   chat, "tool_choice",
                   json_pack("{s:s, s:o}", "type", type, type, PICKED(choice, "name")))
                   ? REIN_ENOMEM
                   : REIN_OK;
    }
    if (own && json_is_object(choice) && json_is_string(json_object_get(choice, "type"))) {
        *hosted = choice;
        return REIN_OK;
    }
    return rein__gw_bad(bad, "tool_choice",
                        "Invalid 'tool_choice': rein's gateway takes auto, none, required, a "
                        "function or a custom tool; a hosted tool's choice, allowed_tools and an "
                        "MCP server's only with an upstream of the Responses API.");
}

/* Members of the same meaning on the chat wire, under the same name. */
static const char *const shared[] = {
    "store", "metadata", "user", "service_tier", "prompt_cache_key", "safety_identifier", NULL,
};

/*
 * What the body's text and reasoning members ask, in the chat wire's words: text.format as
 * response_format, text.verbosity as verbosity, reasoning.effort as reasoning_effort. Returns
 * whether the member was taken.
 */
static bool chat_form(const char *key, const json_t *v, json_t *chat, bool *nomem)
{
    const json_t *format = json_object_get(v, "format"), *x;

    if (strcmp(key, "reasoning") == 0) {
        x = json_object_get(v, "effort");
        *nomem = json_is_string(x) && json_object_set(chat, "reasoning_effort", (json_t *)x);
        return true; /* a summary of the reasoning is not a thing the chat wire has */
    }
    if (strcmp(key, "text") != 0)
        return false;
    if ((x = json_object_get(v, "verbosity")) && json_is_string(x))
        *nomem |= json_object_set(chat, "verbosity", (json_t *)x) != 0;
    if (is(json_object_get(format, "type"), "json_object"))
        *nomem |= json_object_set_new(chat, "response_format",
                                      json_pack("{s:s}", "type", "json_object")) != 0;
    else if (is(json_object_get(format, "type"), "json_schema"))
        *nomem |= json_object_set_new(
                      chat, "response_format",
                      json_pack("{s:s, s:o}", "type", "json_schema", "json_schema",
                                PICKED(format, "name", "schema", "strict", "description"))) != 0;
    return !format || is(json_object_get(format, "type"), "text") ||
           json_object_get(chat, "response_format");
}

/* A chat response_format in this wire's text.format shape (new), or NULL: a type this wire
 * has no form for (the member stays refused); REIN_EINVAL with bad for a json_schema format
 * without its schema object, as the API refuses it. */
static rein_err rs_format(const json_t *rf, json_t **out, struct rein__gw_bad *bad)
{
    const json_t *type = json_object_get(rf, "type"), *js = json_object_get(rf, "json_schema");

    *out = NULL;
    if (is(type, "text") || is(type, "json_object"))
        *out = json_pack("{s:O}", "type", type);
    else if (!is(type, "json_schema"))
        return REIN_OK;
    else if (!json_is_object(js))
        return rein__gw_bad(bad, "response_format.json_schema",
                            "Missing required parameter: 'response_format.json_schema'.");
    else
        *out = json_pack("{s:s}", "type", "json_schema");
    if (*out && js &&
        json_object_update_new(*out, PICKED(js, "name", "schema", "strict", "description"))) {
        json_decref(*out);
        *out = NULL;
    }
    return *out ? REIN_OK : REIN_ENOMEM;
}

rein_err rein__gw_rs_chat_members(struct rein__gw_req *r, json_t **out, struct rein__gw_bad *bad)
{
    const json_t *pt = r->passthrough, *x;
    json_t *o = json_object(), *text = json_object(), *format = NULL;
    rein_err rc = o && text ? REIN_OK : REIN_ENOMEM;

    for (size_t i = 0; !rc && shared[i]; i++) {
        /* store means something else here: whether the upstream keeps the answer */
        if (strcmp(shared[i], "store") != 0 && (x = json_object_get(pt, shared[i])) &&
            json_object_set(o, shared[i], (json_t *)x))
            rc = REIN_ENOMEM;
    }
    if (!rc && json_is_string(x = json_object_get(pt, "reasoning_effort")) &&
        json_object_set_new(o, "reasoning", json_pack("{s:O}", "effort", x)))
        rc = REIN_ENOMEM;
    if (!rc && json_is_string(x = json_object_get(pt, "verbosity")) &&
        json_object_set(text, "verbosity", (json_t *)x))
        rc = REIN_ENOMEM;
    if (!rc && json_is_object(x = json_object_get(pt, "response_format")) &&
        (rc = rs_format(x, &format, bad)) == REIN_OK && format &&
        json_object_set_new(text, "format", format))
        rc = REIN_ENOMEM;
    if (!rc && json_object_size(text) && json_object_set(o, "text", text))
        rc = REIN_ENOMEM;
    if (!rc) {
        const char *key;
        json_t *v;
        /* what goes up is neither dropped nor refused */
        json_object_foreach(o, key, v)
        {
            rein__gw_unlist(r->dropped, key);
            rein__gw_unlist(r->unsupported, key);
        }
        if (json_object_get(o, "reasoning"))
            rein__gw_unlist(r->dropped, "reasoning_effort");
        if (json_object_get(text, "verbosity"))
            rein__gw_unlist(r->dropped, "verbosity");
        if (json_object_get(text, "format"))
            rein__gw_unlist(r->unsupported, "response_format");
    }
    json_decref(text);
    if (rc || !json_object_size(o)) {
        json_decref(o);
        o = NULL;
    }
    *out = o;
    return rc;
}

/*
 * The members besides those read. For an upstream of the chat wire, what has a chat form goes
 * into the chat body (the parser passes it on); for an upstream of this wire, everything goes
 * as it is; for another, what changes no answer is dropped and the rest refused by name
 * (struct rein__gw_req's passthrough, dropped and unsupported).
 */
static rein_err take_rest(const json_t *body, json_t *chat, json_t *extra, bool chat_up,
                          bool reasoning, bool background, struct rein__gw_bad *bad)
{
    json_t *pass = json_object(), *dropped = json_array(), *unsupported = json_array();
    const char *key;
    json_t *v;

    /* each is extra's from here, made or not */
    int bad_set = json_object_set_new(extra, "passthrough", pass);
    bad_set |= json_object_set_new(extra, "dropped", dropped);
    bad_set |= json_object_set_new(extra, "unsupported", unsupported);
    if (bad_set)
        return REIN_ENOMEM;
    if (reasoning && json_array_append_new(dropped, json_string("input[].reasoning")))
        return REIN_ENOMEM;
    json_object_foreach((json_t *)body, key, v)
    {
        size_t n = strlen(key);
        const json_t *format = json_object_get(json_object_get(body, "text"), "format");
        bool harmless =
            rein__gw_listed(droppable, key, n) ||
            (strcmp(key, "text") == 0 && (!format || is(json_object_get(format, "type"), "text")));
        bool nomem = false;
        if (rein__gw_listed(taken, key, n))
            continue;
        if (rein__gw_listed(stateful, key, n) && !json_is_null(v))
            return rein__gw_bad(bad, key,
                                "'%s': rein's gateway keeps no conversations or stored prompts; "
                                "send the conversation in 'input', or continue a response with "
                                "'previous_response_id'.",
                                key);
        if (strcmp(key, "background") == 0 && json_is_true(v)) {
            /* the job runs it in the background (decision 0093): an upstream must not */
            if (background) {
                if (json_object_set_new(extra, "background", json_true()))
                    return REIN_ENOMEM;
                continue;
            }
            return rein__gw_bad(bad, key,
                                "'background' is spelt with escapes: write the member's name "
                                "plainly for rein's gateway to run the response in the "
                                "background.");
        }
        if (chat_up && rein__gw_listed(shared, key, n)) {
            if (json_object_set(chat, key, v))
                return REIN_ENOMEM;
            continue;
        }
        if (chat_up && chat_form(key, v, chat, &nomem)) {
            if (nomem)
                return REIN_ENOMEM;
            continue;
        }
        /* passthrough is for an upstream of this wire, which is no chat one */
        if ((!chat_up && json_object_set(pass, key, v)) ||
            json_array_append_new(harmless ? dropped : unsupported, json_string(key)))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

/* The tools; for an upstream of this wire (own) the hosted ones go into extra's
 * "hosted_tools" (written after the others: rein__gw_rs_hosted_tools). */
static rein_err take_upstream_tools(const json_t *body, json_t *chat, json_t *extra, bool own,
                                    struct rein__gw_bad *bad)
{
    json_t *hosted = own ? json_array() : NULL;
    rein_err rc = own && !hosted ? REIN_ENOMEM
                                 : take_tools(json_object_get(body, "tools"), chat, hosted, bad);

    if (!rc && json_array_size(hosted) && json_object_set(extra, "hosted_tools", hosted))
        rc = REIN_ENOMEM;
    json_decref(hosted);
    return rc;
}

static rein_err convert_tree(const json_t *body, json_t *chat, json_t *extra, const char *upstream,
                             bool background, struct rein__gw_bad *bad)
{
    bool chat_up = strcmp(upstream, "openai") == 0;
    const json_t *hosted = NULL;
    struct conv cv = {.msgs = json_array(),
                      .keep_reasoning = strcmp(upstream, rein__gw_responses.name) == 0,
                      .bad = bad};
    json_t *v;
    rein_err rc;

    if (!cv.msgs || json_object_set_new(chat, "messages", cv.msgs))
        return REIN_ENOMEM;
    if (json_object_get(body, "model") &&
        json_object_set(chat, "model", json_object_get(body, "model")))
        return REIN_ENOMEM;
    rc = take_input(&cv, body);
    /* reasoning after the last assistant message has no message to go with */
    cv.reasoning |= cv.pending != NULL;
    json_decref(cv.pending);
    if (!rc)
        rc = take_upstream_tools(body, chat, extra, cv.keep_reasoning, bad);
    if (!rc)
        rc = take_choice(json_object_get(body, "tool_choice"), chat, cv.keep_reasoning, &hosted,
                         bad);
    /* the same meaning under the same name, or another one */
    if (!rc && (v = json_object_get(body, "max_output_tokens")) && !json_is_null(v))
        rc = json_object_set(chat, "max_completion_tokens", v) ? REIN_ENOMEM : REIN_OK;
    for (const char *const *k =
             (const char *const[]){"temperature", "top_p", "parallel_tool_calls", "stream", NULL};
         !rc && *k; k++) {
        if ((v = json_object_get(body, *k)) && !json_is_null(v))
            rc = json_object_set(chat, *k, v) ? REIN_ENOMEM : REIN_OK;
    }
    if (!rc)
        rc = take_rest(body, chat, extra, chat_up, cv.reasoning, background, bad);
    if (!rc && hosted &&
        json_object_set(json_object_get(extra, "passthrough"), "tool_choice", (json_t *)hosted))
        rc = REIN_ENOMEM;
    return rc;
}

/*
 * What the body refers to by id is made whole (rein__gw_kept_resolve), and what its answer is
 * kept with goes into extra: "store" (the API's default is true), the "previous_response_id"
 * it continued, its "own_input".
 */
static rein_err resolve(const struct rein__gw_refs *refs, json_t *tree, json_t *extra,
                        struct rein__gw_bad *bad)
{
    json_t *own = NULL, *prev = json_object_get(tree, "previous_response_id");
    rein_err rc =
        rein__gw_kept_resolve(refs ? refs->kept : NULL, refs ? refs->owner : "", tree, &own, bad);

    if (!rc && (json_object_set_new(extra, "store",
                                    json_boolean(!json_is_false(json_object_get(tree, "store")))) ||
                (own && json_object_set_new(extra, "own_input", own)) ||
                (json_is_string(prev) && json_object_set(extra, "previous_response_id", prev))))
        rc = REIN_ENOMEM;
    else if (rc)
        json_decref(own);
    /* the conversation it names is in input now */
    if (!rc && json_is_string(prev))
        (void)json_object_del(tree, "previous_response_id");
    return rc;
}

static rein_err rs_convert(const char *upstream, const struct rein__gw_refs *refs, const char *body,
                           size_t len, struct rein_buf *out, json_t **extra,
                           struct rein__gw_bad *bad)
{
    rein_error perr;
    json_t *tree = rein_json_parse(body, len, JSON_REJECT_DUPLICATES, &perr);
    json_t *chat = json_object();
    rein_err rc;

    *extra = json_object();
    if (!chat || !*extra || (!tree && perr.code == REIN_ENOMEM))
        rc = REIN_ENOMEM;
    else if (!tree)
        rc = rein__gw_bad(bad, "",
                          "We could not parse the JSON body of your request: line %d, column %d: "
                          "%s",
                          perr.line, perr.column, perr.msg);
    else if (!json_is_object(tree))
        rc = rein__gw_bad(bad, "", "Invalid type for request body: expected an object.");
    else if (!json_object_get(tree, "input"))
        rc = rein__gw_bad(bad, "input", "Missing required parameter: 'input'.");
    else if ((rc = resolve(refs, tree, *extra, bad)) == REIN_OK)
        rc = convert_tree(tree, chat, *extra, upstream, refs && refs->background, bad);
    if (!rc)
        rc = rein_json_dump(out, chat);
    json_decref(tree);
    json_decref(chat);
    return rc;
}

/* The chat parser's words for a member are this wire's. */
static void rename_param(struct rein__gw_bad *bad)
{
    char was[sizeof(bad->param)];

    memcpy(was, bad->param, sizeof(was));
    if (strncmp(was, "messages", 8) == 0)
        snprintf(bad->param, sizeof(bad->param), "input%s", was + 8);
    else if (strcmp(was, "max_completion_tokens") == 0)
        snprintf(bad->param, sizeof(bad->param), "max_output_tokens");
}

static rein_err rs_parse(struct rein__gw_req *r, const char *body, size_t len,
                         struct rein__gw_bad *bad)
{
    rein_err rc = rein__gw_openai_parse(r, body, len, bad);

    if (rc == REIN_EINVAL)
        rename_param(bad);
    return rc;
}

rein_err rein__gw_rs_native_tools(struct rein__gw_ctx *c)
{
    const json_t *hosted =
        c->wire == &rein__gw_responses ? json_object_get(c->conv_extra, "hosted_tools") : NULL;
    json_t *all = json_array();
    rein_err rc = all ? REIN_OK : REIN_ENOMEM;

    for (size_t i = 0; !rc && c->tools && i < c->tools->nclient; i++) {
        if (c->tools->client[i].native && json_array_append(all, c->tools->client[i].native))
            rc = REIN_ENOMEM;
    }
    if (!rc && json_array_size(hosted) && json_array_extend(all, (json_t *)hosted))
        rc = REIN_ENOMEM;
    if (!rc && json_array_size(all)) {
        rein_buf_reset(&c->up_tools);
        rc = rein_json_dump(&c->up_tools, all);
        if (!rc)
            rc = rein_model_request_set_more_tools(c->mreq, rein__gw_responses.name,
                                                   c->up_tools.ptr, c->up_tools.len);
    }
    json_decref(all);
    return rc;
}

/* ---- the answer ----------------------------------------------------------------------------- */

/* A count and the details object beside it, with its one part (0 when the upstream did not
 * say: the SDKs' types want a number). */
static void count(struct rein_jw *w, const char *key, int64_t n, const char *details,
                  const char *part, int64_t v)
{
    rein_jw_key(w, key);
    rein_jw_int(w, n);
    rein_jw_key(w, details);
    rein_jw_obj_begin(w);
    rein_jw_key(w, part);
    rein_jw_int(w, v > 0 ? v : 0);
    rein_jw_obj_end(w);
}

static void usage(const struct rein__gw_ctx *c, struct rein_jw *w)
{
    rein_jw_obj_begin(w);
    count(w, "input_tokens", c->in_tokens, "input_tokens_details", "cached_tokens",
          c->cached_tokens);
    count(w, "output_tokens", c->out_tokens, "output_tokens_details", "reasoning_tokens",
          c->reasoning_tokens);
    REIN_JW_KEY(w, "total_tokens");
    rein_jw_int(w, c->in_tokens + c->out_tokens);
    rein_jw_obj_end(w);
}

/* Why the answer is incomplete (the Responses API's words), or NULL: it is complete. */
static const char *incomplete(const struct rein__gw_ctx *c)
{
    enum rein_finish f = c->last ? rein_model_response_finish(c->last) : REIN_FINISH_STOP;

    if (c->nout)
        return NULL;
    return f == REIN_FINISH_LENGTH           ? "max_output_tokens"
           : f == REIN_FINISH_CONTENT_FILTER ? "content_filter"
                                             : NULL;
}

/* Whether the answer is kept: the client asked it (store) and the gateway keeps responses. */
static bool kept(const struct rein__gw_ctx *c)
{
    return c->g->kept.on && json_is_true(json_object_get(c->conv_extra, "store"));
}

/* The response object; output: its items (borrowed); done false: in progress. */
static void response(const struct rein__gw_ctx *c, struct rein_jw *w, const json_t *output,
                     bool done)
{
    const char *why = done ? incomplete(c) : NULL;
    const char *prev = json_string_value(json_object_get(c->conv_extra, "previous_response_id"));
    json_t *ext = done ? rein__gw_rein_ext(c) : NULL;

    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "id");
    rein_jw_str(w, c->id);
    REIN_JW_KEY(w, "object");
    rein_jw_str(w, "response");
    REIN_JW_KEY(w, "created_at");
    rein_jw_int(w, c->created);
    REIN_JW_KEY(w, "background");
    rein_jw_bool(w, c->job != NULL);
    REIN_JW_KEY(w, "status");
    rein_jw_str(w, !done ? "in_progress" : why ? "incomplete" : "completed");
    REIN_JW_KEY(w, "error");
    rein_jw_null(w);
    REIN_JW_KEY(w, "incomplete_details");
    if (why) {
        rein_jw_obj_begin(w);
        REIN_JW_KEY(w, "reason");
        rein_jw_str(w, why);
        rein_jw_obj_end(w);
    } else {
        rein_jw_null(w);
    }
    REIN_JW_KEY(w, "model");
    rein_jw_str(w, c->model);
    REIN_JW_KEY(w, "output");
    if (output)
        rein_jw_json(w, output);
    else
        rein_jw_raw(w, "[]", 2);
    REIN_JW_KEY(w, "parallel_tool_calls");
    rein_jw_bool(w, c->req.parallel != 0);
    REIN_JW_KEY(w, "previous_response_id");
    if (prev)
        rein_jw_str(w, prev);
    else
        rein_jw_null(w);
    REIN_JW_KEY(w, "store");
    rein_jw_bool(w, kept(c));
    REIN_JW_KEY(w, "usage");
    if (done)
        usage(c, w);
    else
        rein_jw_null(w);
    if (ext) {
        REIN_JW_KEY(w, "rein");
        rein_jw_json(w, ext);
        json_decref(ext);
    }
    rein_jw_obj_end(w);
}

/* Keeps resp (the response object, borrowed) as c's response, with the request's own input. */
static rein_err put_response(const struct rein__gw_ctx *c, const json_t *resp)
{
    const json_t *x = c->conv_extra;
    size_t bytes, n;
    rein_err rc = rein__gw_kept_put(&c->g->kept, c->owner, c->id,
                                    json_string_value(json_object_get(x, "previous_response_id")),
                                    json_object_get(x, "own_input"), resp);

    rein__gw_kept_stats(&c->g->kept, &bytes, &n);
    rein_metric_set(c->g->m.kept_bytes, NULL, (double)bytes);
    rein_metric_set(c->g->m.kept_responses, NULL, (double)n);
    return rc;
}

/*
 * Keeps the answer when it is to be kept: the n bytes of JSON text the client got, read back
 * (the response object, or, with member, the event holding it under that name), so that what
 * GET /v1/responses/{id} returns is what the client got.
 */
static void keep(const struct rein__gw_ctx *c, const char *text, size_t n, const char *member)
{
    json_t *doc;
    const json_t *resp;

    if (!kept(c))
        return;
    doc = rein_json_parse(text, n, 0, NULL);
    resp = member ? json_object_get(doc, member) : doc;
    if (resp)
        (void)put_response(c, resp);
    json_decref(doc);
}

/* An annotation of the neutral response (OpenAI's chat shape, whose url_citation nests its
 * members) in this wire's shape, where they are the annotation's own. New reference. */
static json_t *flat_annotation(const json_t *a)
{
    const json_t *nested = json_object_get(a, "url_citation");
    json_t *flat;

    if (!is(json_object_get(a, "type"), "url_citation") || !json_is_object(nested))
        return json_incref((json_t *)a);
    flat = json_pack("{s:s}", "type", "url_citation");
    if (flat && json_object_update(flat, (json_t *)nested)) {
        json_decref(flat);
        return NULL;
    }
    return flat;
}

/* A text part; an output_text one with annotations (this wire's shape, borrowed; NULL: none). */
static json_t *text_part(const char *type, const char *key, const char *text, size_t n,
                         const json_t *annotations)
{
    json_t *p = json_pack("{s:s, s:s%}", "type", type, key, text, n);

    if (p && strcmp(type, "output_text") == 0 &&
        (json_object_set_new(p, "annotations",
                             annotations ? json_copy((json_t *)annotations) : json_array()) ||
         json_object_set_new(p, "logprobs", json_array()))) {
        json_decref(p);
        return NULL;
    }
    return p;
}

/* A whole item: a message of one part (output_text, with annotations, or refusal), or a
 * reasoning's text. */
static json_t *text_item(const char *type, const char *id, const char *text, size_t n,
                         const json_t *annotations)
{
    if (strcmp(type, "reasoning") == 0)
        return json_pack("{s:s, s:s, s:[], s:[o]}", "id", id, "type", "reasoning", "summary",
                         "content", text_part("reasoning_text", "text", text, n, NULL));
    return json_pack("{s:s, s:s, s:s, s:s, s:[o]}", "id", id, "type", "message", "status",
                     "completed", "role", "assistant", "content",
                     strcmp(type, "refusal") == 0
                         ? text_part("refusal", "refusal", text, n, NULL)
                         : text_part("output_text", "text", text, n, annotations));
}

/* The neutral response's annotations in this wire's shape (new), or NULL when it has none. */
static json_t *flat_annotations(const rein_model_response *r)
{
    const json_t *all = r ? rein_model_response_annotations(r) : NULL;
    json_t *out = json_array_size(all) ? json_array() : NULL;
    size_t i;
    json_t *a;

    json_array_foreach(all, i, a)
    {
        if (out && json_array_append_new(out, flat_annotation(a))) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

static json_t *call_item(const struct rein__gw_call *call, const char *status)
{
    char id[REIN_ID_MAX];

    if (call->input) { /* a custom tool's call (decision 0089): the item has no status */
        rein_id_new("ctc_", id);
        return json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "type", "custom_tool_call",
                         "call_id", call->id, "name", call->name, "input",
                         strcmp(status, "completed") == 0 ? call->input : "");
    }
    rein_id_new("fc_", id);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "id", id, "type", "function_call", "status",
                     status, "call_id", call->id, "name", call->name, "arguments",
                     strcmp(status, "completed") == 0 ? call->args : "");
}

/* The final round's output: its reasoning (a Responses upstream's items as they came), its
 * message, its checked calls. */
static json_t *output_items(const struct rein__gw_ctx *c)
{
    const rein_model_response *r = c->last;
    const char *reasoning = r ? rein_model_response_reasoning(r) : "";
    const char *text = r ? rein_model_response_text(r) : "";
    const char *refusal = r ? rein_model_response_refusal(r) : NULL;
    /* a Responses upstream's reasoning items are in the message, with or without a summary */
    json_t *msg = r ? rein_model_response_message(r) : NULL;
    json_t *items = json_object_get(msg, "reasoning_items");
    json_t *annots = flat_annotations(r);
    json_t *out = json_array();
    char id[REIN_ID_MAX];
    bool bad = !out;

    if (!bad && json_array_size(items)) {
        bad = json_array_extend(out, items) != 0;
    } else if (!bad && reasoning[0]) {
        rein_id_new("rs_", id);
        bad = json_array_append_new(out,
                                    text_item("reasoning", id, reasoning, strlen(reasoning), NULL));
    }
    rein_id_new("msg_", id);
    if (!bad && (text[0] || (!c->nout && !(refusal && refusal[0]))))
        bad = json_array_append_new(out, text_item("message", id, text, strlen(text), annots));
    else if (!bad && refusal && refusal[0])
        bad = json_array_append_new(out, text_item("refusal", id, refusal, strlen(refusal), NULL));
    for (size_t i = 0; !bad && i < c->nout; i++)
        bad = json_array_append_new(out, call_item(&c->out[i], "completed")) != 0;
    json_decref(msg);
    json_decref(annots);
    if (bad) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static rein_err rs_reply(const struct rein__gw_ctx *c, struct rein_buf *out)
{
    json_t *items = output_items(c);
    size_t at = out->len;
    struct rein_jw w;
    rein_err rc;

    if (!items)
        return REIN_ENOMEM;
    rein_jw_init(&w, out);
    response(c, &w, items, true);
    json_decref(items);
    rc = rein_jw_finish(&w);
    if (!rc)
        keep(c, out->ptr + at, out->len - at, NULL);
    return rc;
}

rein_err rein__gw_rs_in_progress(struct rein__gw_ctx *c, struct rein_buf *out)
{
    struct rein_jw w;
    json_t *resp;
    rein_err rc;

    rein_jw_init(&w, out);
    response(c, &w, NULL, false);
    if ((rc = rein_jw_finish(&w)) != REIN_OK)
        return rc;
    if (!(resp = rein_json_parse(out->ptr, out->len, 0, NULL)))
        return REIN_ENOMEM;
    rc = put_response(c, resp);
    json_decref(resp);
    return rc;
}

/* Errors are in the chat wire's shape: the SDKs read the same {"error": {...}}. */
static rein_err rs_error(const struct rein__gw_err *e, const json_t *rein_ext, struct rein_buf *out)
{
    return rein__gw_openai.error(e, rein_ext, out);
}

static rein_err rs_models(const rein_gateway *g, struct rein_buf *out)
{
    return rein__gw_openai.models(g, out);
}

/* ---- streaming ------------------------------------------------------------------------------ */

static void ev_begin(struct rein__gw_ctx *c, struct rein_jw *w, const char *type)
{
    rein_buf_reset(&c->ev);
    rein_jw_init(w, &c->ev);
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, type);
    REIN_JW_KEY(w, "sequence_number");
    rein_jw_int(w, c->rs_seq++);
}

static rein_err ev_end(struct rein__gw_ctx *c, struct rein_jw *w, const char *type)
{
    rein_err rc;

    rein_jw_obj_end(w);
    rc = rein_jw_finish(w);
    return rc ? rc : rein__gw_emit(c, type, c->ev.ptr, c->ev.len);
}

/* The members an item's events share: its id, its place in the output (and in its content). */
static void item_where(const struct rein__gw_ctx *c, struct rein_jw *w, bool content)
{
    REIN_JW_KEY(w, "item_id");
    rein_jw_str(w, c->rs_item);
    REIN_JW_KEY(w, "output_index");
    rein_jw_int(w, c->block);
    if (content) {
        REIN_JW_KEY(w, "content_index");
        rein_jw_int(w, 0);
    }
}

/* response.created and response.in_progress, before anything else. */
static rein_err started(struct rein__gw_ctx *c)
{
    static const char *const types[] = {"response.created", "response.in_progress"};
    struct rein_jw w;
    rein_err rc = REIN_OK;

    if (c->role_sent)
        return REIN_OK;
    c->role_sent = true;
    if (!c->rs_items && !(c->rs_items = json_array()))
        return REIN_ENOMEM;
    for (size_t i = 0; i < 2 && !rc; i++) {
        ev_begin(c, &w, types[i]);
        REIN_JW_KEY(&w, "response");
        response(c, &w, NULL, false);
        rc = ev_end(c, &w, types[i]);
    }
    return rc;
}

/* An item's event with the item whole (output_item.added, .done). */
static rein_err item_event(struct rein__gw_ctx *c, const char *type, json_t *item)
{
    struct rein_jw w;

    if (!item)
        return REIN_ENOMEM;
    ev_begin(c, &w, type);
    REIN_JW_KEY(&w, "output_index");
    rein_jw_int(&w, c->block);
    REIN_JW_KEY(&w, "item");
    rein_jw_json(&w, item);
    return ev_end(c, &w, type);
}

/* An item ends (item taken, NULL: out of memory): its done event, and it joins the output
 * that response.completed gives. rc: how the events before it went. */
static rein_err item_done(struct rein__gw_ctx *c, json_t *item, rein_err rc)
{
    if (!rc)
        rc = item_event(c, "response.output_item.done", item);
    if (!rc && json_array_append(c->rs_items, item))
        rc = REIN_ENOMEM;
    json_decref(item);
    c->block = -1;
    return rc;
}

/* A content part's event (content_part.added, .done). */
static rein_err part_event(struct rein__gw_ctx *c, const char *type, json_t *part)
{
    struct rein_jw w;

    if (!part)
        return REIN_ENOMEM;
    ev_begin(c, &w, type);
    item_where(c, &w, true);
    REIN_JW_KEY(&w, "part");
    rein_jw_json(&w, part);
    json_decref(part);
    return ev_end(c, &w, type);
}

/* The kind of text an item holds: its part's type and key, its delta and done events. */
struct text_kind {
    const char *item, *part, *key, *delta, *done;
};
static const struct text_kind kinds[] = {
    {"message", "output_text", "text", "response.output_text.delta", "response.output_text.done"},
    {"reasoning", "reasoning_text", "text", "response.reasoning_text.delta",
     "response.reasoning_text.done"},
    {"refusal", "refusal", "refusal", "response.refusal.delta", "response.refusal.done"},
};

static const struct text_kind *kind_of(enum rein_model_event_type type)
{
    return type == REIN_MEV_REASONING_DELTA ? &kinds[1]
           : type == REIN_MEV_REFUSAL_DELTA ? &kinds[2]
                                            : &kinds[0];
}

static const struct text_kind *open_kind(const struct rein__gw_ctx *c)
{
    for (size_t i = 0; c->block >= 0 && i < REIN_ARRAY_SIZE(kinds); i++) {
        if (strcmp(c->block_type, kinds[i].item) == 0)
            return &kinds[i];
    }
    return NULL;
}

/* Ends the open text item: its text's done event, its part's, its own. */
static rein_err close_item_as(struct rein__gw_ctx *c, json_t *as);

static rein_err close_item(struct rein__gw_ctx *c)
{
    return close_item_as(c, NULL);
}

/* Ends the open text item; as (taken, may be NULL): the item it ends as, when the upstream
 * wrote it whole (a reasoning item with its encrypted_content). */
static rein_err close_item_as(struct rein__gw_ctx *c, json_t *as)
{
    const struct text_kind *k = open_kind(c);
    const char *t = c->rs_text.len ? c->rs_text.ptr : "";
    struct rein_jw w;
    json_t *item;
    rein_err rc;

    if (!k) {
        json_decref(as);
        return REIN_OK;
    }
    ev_begin(c, &w, k->done);
    item_where(c, &w, true);
    rein_jw_key(&w, k->key);
    rein_jw_strn(&w, t, c->rs_text.len);
    if (k == &kinds[0]) {
        REIN_JW_KEY(&w, "logprobs");
        rein_jw_raw(&w, "[]", 2);
    }
    rc = ev_end(c, &w, k->done);
    if (!rc)
        rc = part_event(c, "response.content_part.done",
                        text_part(k->part, k->key, t, c->rs_text.len, c->rs_annots));
    item = as ? as : text_item(k->item, c->rs_item, t, c->rs_text.len, c->rs_annots);
    rc = item_done(c, item, rc);
    json_decref(c->rs_annots); /* they were the message's */
    c->rs_annots = NULL;
    c->block_type[0] = '\0';
    rein_buf_reset(&c->rs_text);
    return rc;
}

/* Opens an item of kind k: its added event (the item empty), then its part's. id: the item's
 * (the upstream's), or NULL: a new one. */
static rein_err open_item(struct rein__gw_ctx *c, const struct text_kind *k, const char *id)
{
    json_t *item;
    rein_err rc = close_item(c);

    if (rc)
        return rc;
    c->block = c->next_block++;
    snprintf(c->block_type, sizeof(c->block_type), "%s", k->item);
    if (id && strlen(id) < sizeof(c->rs_item))
        snprintf(c->rs_item, sizeof(c->rs_item), "%s", id);
    else
        rein_id_new(k == &kinds[1] ? "rs_" : "msg_", c->rs_item);
    item = strcmp(k->item, "reasoning") == 0
               ? json_pack("{s:s, s:s, s:[], s:[]}", "id", c->rs_item, "type", "reasoning",
                           "summary", "content")
               : json_pack("{s:s, s:s, s:s, s:s, s:[]}", "id", c->rs_item, "type", "message",
                           "status", "in_progress", "role", "assistant", "content");
    rc = item_event(c, "response.output_item.added", item);
    json_decref(item);
    return rc ? rc
              : part_event(c, "response.content_part.added",
                           text_part(k->part, k->key, "", 0, NULL));
}

static rein_err rs_s_text(struct rein__gw_ctx *c, enum rein_model_event_type kind, const char *p,
                          size_t n)
{
    const struct text_kind *k = kind_of(kind);
    struct rein_jw w;
    rein_err rc = started(c);

    if (rc || n == 0)
        return rc;
    if (open_kind(c) != k && (rc = open_item(c, k, NULL)) != REIN_OK)
        return rc;
    if (rein_buf_add(&c->rs_text, p, n))
        return REIN_ENOMEM;
    ev_begin(c, &w, k->delta);
    item_where(c, &w, true);
    REIN_JW_KEY(&w, "delta");
    rein_jw_strn(&w, p, n);
    if (k == &kinds[0]) {
        REIN_JW_KEY(&w, "logprobs");
        rein_jw_raw(&w, "[]", 2);
    }
    return ev_end(c, &w, k->delta);
}

/* A piece of the message's annotations (the neutral shape's JSON array): each is the open
 * message text's, told in an output_text.annotation.added event and kept for its part. */
static rein_err annotations(struct rein__gw_ctx *c, const char *p, size_t n)
{
    json_t *piece = rein_json_parse(p, n, 0, NULL);
    size_t i;
    json_t *a;
    rein_err rc = piece ? REIN_OK : REIN_ENOMEM;

    if (!rc && !c->rs_annots && !(c->rs_annots = json_array()))
        rc = REIN_ENOMEM;
    json_array_foreach(piece, i, a)
    {
        json_t *flat = rc ? NULL : flat_annotation(a);
        struct rein_jw w;
        if (!rc && (!flat || json_array_append_new(c->rs_annots, flat)))
            rc = REIN_ENOMEM;
        if (rc || open_kind(c) != &kinds[0])
            continue; /* no text to point into: the message's part has it */
        ev_begin(c, &w, "response.output_text.annotation.added");
        item_where(c, &w, true);
        REIN_JW_KEY(&w, "annotation_index");
        rein_jw_int(&w, (int64_t)json_array_size(c->rs_annots) - 1);
        REIN_JW_KEY(&w, "annotation");
        rein_jw_json(&w, flat);
        rc = ev_end(c, &w, "response.output_text.annotation.added");
    }
    json_decref(piece);
    return rc;
}

/*
 * A Responses upstream's reasoning item: as it begins, an item of its id opens (its summary's
 * deltas go into it); whole, the open item ends as the upstream wrote it (its encrypted_content,
 * which a reasoning model wants back on the next turn). A whole item with none open (an upstream
 * body), and a hosted tool's item (REIN_MEV_OUTPUT_ITEM), is added and done at once. The
 * message's annotations go to annotations().
 */
/* Whether the item open is the hosted tool's item id (added, not yet done). */
static bool hosted_open(const struct rein__gw_ctx *c, const char *id)
{
    return c->block >= 0 && strcmp(c->block_type, "hosted") == 0 && id &&
           strcmp(c->rs_item, id) == 0;
}

/*
 * A hosted tool's item as it runs (REIN_MEV_OUTPUT_ITEM_EVENT, the upstream's event as it
 * came): its output_item.added opens it at this answer's next place, and its progress events
 * (searching, …) go on in it, renumbered; its output_item.done comes as REIN_MEV_OUTPUT_ITEM.
 */
static rein_err hosted_event(struct rein__gw_ctx *c, const char *p, size_t n)
{
    json_t *ev = rein_json_parse(p, n, 0, NULL);
    const char *type = json_string_value(json_object_get(ev, "type"));
    const json_t *item = json_object_get(ev, "item");
    const char *id = json_string_value(json_object_get(item, "id"));
    rein_err rc = REIN_OK;

    if (!type) { /* not an event the decoder would tell */
        json_decref(ev);
        return REIN_OK;
    }
    rc = started(c);
    if (!rc && strcmp(type, "response.output_item.added") == 0 && id &&
        strlen(id) < sizeof(c->rs_item)) {
        rc = close_item(c);
        c->block = c->next_block++;
        snprintf(c->block_type, sizeof(c->block_type), "hosted");
        snprintf(c->rs_item, sizeof(c->rs_item), "%s", id);
        if (!rc)
            rc = item_event(c, type, (json_t *)item);
    } else if (!rc && hosted_open(c, json_string_value(json_object_get(ev, "item_id")))) {
        rein_buf_reset(&c->ev);
        if (json_object_set_new(ev, "sequence_number", json_integer(c->rs_seq++)) ||
            json_object_set_new(ev, "output_index", json_integer(c->block)) ||
            rein_json_dump(&c->ev, ev))
            rc = REIN_ENOMEM;
        else
            rc = rein__gw_emit(c, type, c->ev.ptr, c->ev.len);
    }
    json_decref(ev);
    return rc;
}

static rein_err rs_s_block(struct rein__gw_ctx *c, enum rein_model_event_type kind, const char *p,
                           size_t n)
{
    json_t *item;
    rein_err rc;

    if (kind == REIN_MEV_ANNOTATIONS && n) {
        rc = started(c);
        return rc ? rc : annotations(c, p, n);
    }
    if (kind == REIN_MEV_OUTPUT_ITEM_EVENT && n)
        return hosted_event(c, p, n);
    if ((kind != REIN_MEV_REASONING_ITEM && kind != REIN_MEV_OUTPUT_ITEM) || n == 0)
        return REIN_OK;
    rc = started(c);
    if (rc)
        return rc;
    if (!(item = rein_json_parse(p, n, 0, NULL)))
        return REIN_ENOMEM;
    if (kind == REIN_MEV_REASONING_ITEM && is(json_object_get(item, "status"), "in_progress")) {
        /* it begins: its summary's deltas go into an item of the upstream's id */
        rc = open_item(c, &kinds[1], json_string_value(json_object_get(item, "id")));
        json_decref(item);
        return rc;
    }
    if (kind == REIN_MEV_REASONING_ITEM && open_kind(c) == &kinds[1])
        return close_item_as(c, item);
    if (hosted_open(c, json_string_value(json_object_get(item, "id"))))
        return item_done(c, item, REIN_OK); /* added, and told of as it ran */
    rc = close_item(c);
    c->block = c->next_block++;
    if (!rc)
        rc = item_event(c, "response.output_item.added", item);
    return item_done(c, item, rc);
}

/* A custom tool's call after its item was added (item taken; rc: how that went): the input in
 * one delta, its done event, the item done. */
static rein_err custom_input(struct rein__gw_ctx *c, const struct rein__gw_call *call, json_t *item,
                             rein_err rc)
{
    static const char *const types[] = {"response.custom_tool_call_input.delta",
                                        "response.custom_tool_call_input.done"};
    struct rein_jw w;

    for (size_t i = 0; i < 2 && !rc; i++) {
        ev_begin(c, &w, types[i]);
        item_where(c, &w, false);
        rein_jw_key(&w, i ? "input" : "delta");
        rein_jw_str(&w, call->input);
        rc = ev_end(c, &w, types[i]);
    }
    if (!rc && json_object_set_new(item, "input", json_string(call->input)))
        rc = REIN_ENOMEM;
    return item_done(c, item, rc);
}

/* A checked call: its item added with empty arguments, the arguments in one delta, done. */
static rein_err rs_s_call(struct rein__gw_ctx *c, const struct rein__gw_call *call, size_t index)
{
    json_t *item;
    struct rein_jw w;
    rein_err rc = started(c);

    (void)index;
    if (!rc)
        rc = close_item(c);
    if (rc)
        return rc;
    c->block = c->next_block++;
    item = call_item(call, "in_progress");
    if (!item)
        return REIN_ENOMEM;
    snprintf(c->rs_item, sizeof(c->rs_item), "%s", json_string_value(json_object_get(item, "id")));
    rc = item_event(c, "response.output_item.added", item);
    if (call->input)
        return custom_input(c, call, item, rc);
    if (!rc) {
        ev_begin(c, &w, "response.function_call_arguments.delta");
        item_where(c, &w, false);
        REIN_JW_KEY(&w, "delta");
        rein_jw_str(&w, call->args);
        rc = ev_end(c, &w, "response.function_call_arguments.delta");
    }
    if (!rc) {
        ev_begin(c, &w, "response.function_call_arguments.done");
        item_where(c, &w, false);
        REIN_JW_KEY(&w, "name");
        rein_jw_str(&w, call->name);
        REIN_JW_KEY(&w, "arguments");
        rein_jw_str(&w, call->args);
        rc = ev_end(c, &w, "response.function_call_arguments.done");
    }
    if (!rc && (json_object_set_new(item, "status", json_string("completed")) ||
                json_object_set_new(item, "arguments", json_string(call->args))))
        rc = REIN_ENOMEM;
    return item_done(c, item, rc);
}

/* The end: the open item closes, and the whole response follows with its usage. */
static rein_err rs_s_end(struct rein__gw_ctx *c)
{
    const char *type;
    struct rein_jw w;
    rein_err rc = started(c);

    if (!rc)
        rc = close_item(c);
    if (rc)
        return rc;
    type = incomplete(c) ? "response.incomplete" : "response.completed";
    ev_begin(c, &w, type);
    REIN_JW_KEY(&w, "response");
    response(c, &w, c->rs_items, true);
    rc = ev_end(c, &w, type);
    /* kept even when the client has gone: the event's text is whole once written */
    keep(c, c->ev.ptr, c->ev.len, "response");
    return rc;
}

/* An error after the stream began: the API's error event (the SDKs raise it). */
static rein_err rs_s_error(struct rein__gw_ctx *c, const struct rein__gw_err *e)
{
    const json_t *up = e->upstream_same ? e->upstream : NULL;
    const char *msg = json_string_value(json_object_get(e->upstream, "message"));
    struct rein_jw w;
    const char *code = json_string_value(json_object_get(up, "code"));

    ev_begin(c, &w, "error");
    REIN_JW_KEY(&w, "code");
    rein_jw_str(&w, code ? code : e->code ? e->code : e->type);
    REIN_JW_KEY(&w, "message");
    rein_jw_str(&w, msg ? msg : e->message);
    REIN_JW_KEY(&w, "param");
    rein_jw_str(&w, e->param && e->param[0] ? e->param : NULL);
    return ev_end(c, &w, "error");
}

/* ---- a kept response read again or deleted (GET and DELETE /v1/responses/{id}) ----------- */

/* An error answer in the chat wire's shape (the SDKs read the same). */
static rein_err kept_refusal(int code, const char *param, const char *message, int *status,
                             struct rein_buf *out)
{
    struct rein__gw_err e = {.status = code, .type = "invalid_request_error", .param = param};

    *status = code;
    snprintf(e.message, sizeof(e.message), "%s", message);
    rein_buf_reset(out);
    return rein__gw_openai.error(&e, NULL, out);
}

/*
 * An input item as the list shows it: the input as the client sent it may be a message without
 * a type, its content a string, and without an id (OpenAI gives every item one). The id made
 * up here is the same on every read (a hash of the response's id and the item's place), so
 * that after can name it.
 */
static json_t *listed_item(const json_t *item, const char *resp_id, size_t i)
{
    json_t *out = json_copy((json_t *)item);
    const json_t *role = json_object_get(item, "role");
    const json_t *content = json_object_get(item, "content");
    struct rein__sha256 h;
    char hex[33], num[24];

    if (!out)
        return NULL;
    if (!json_object_get(item, "type") && json_is_string(role) &&
        json_object_set_new(out, "type", json_string("message")))
        goto fail;
    if (json_is_string(content) && json_is_string(role) &&
        json_object_set_new(out, "content",
                            json_pack("[{s:s, s:O}]", "type",
                                      is(role, "assistant") ? "output_text" : "input_text", "text",
                                      content)))
        goto fail;
    if (!json_is_string(json_object_get(item, "id"))) {
        rein__sha256_init(&h);
        rein__sha256_add(&h, resp_id, strlen(resp_id));
        snprintf(num, sizeof(num), ":%zu", i);
        rein__sha256_add(&h, num, strlen(num));
        rein__sha256_hex(&h, hex, 32);
        if (json_object_set_new(
                out, "id",
                json_sprintf("%s_%s", is(json_object_get(out, "type"), "message") ? "msg" : "item",
                             hex)))
            goto fail;
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* The list's query: limit (1 to 100, 20) and order (desc first: the API's default). */
static rein_err list_query(const struct rein_gateway_call *call,
                           const char *(*query)(void *, const char *), long *limit, bool *desc,
                           const char **after, const char **param, char *why, size_t cap)
{
    const char *l = query ? query(call->header_data, "limit") : NULL;
    const char *o = query ? query(call->header_data, "order") : NULL;
    char *end = NULL;

    *after = query ? query(call->header_data, "after") : NULL;
    *limit = 20;
    *desc = !o || strcmp(o, "asc") != 0;
    if (l) {
        *limit = strtol(l, &end, 10);
        if (!l[0] || *end || *limit < 1 || *limit > 100) {
            *param = "limit";
            snprintf(why, cap, "Invalid 'limit': expected an integer from 1 to 100, got '%.40s'.",
                     l);
            return REIN_EINVAL;
        }
    }
    if (o && strcmp(o, "asc") != 0 && strcmp(o, "desc") != 0) {
        *param = "order";
        snprintf(why, cap, "Invalid 'order': expected 'asc' or 'desc', got '%.40s'.", o);
        return REIN_EINVAL;
    }
    return REIN_OK;
}

/* GET /v1/responses/{id}/input_items: the response's own input (not the conversation before
 * it), as OpenAI lists it. */
static rein_err input_list(const struct rein_gateway_call *call,
                           const char *(*query)(void *, const char *), const char *id,
                           const json_t *input, int *status, struct rein_buf *out)
{
    size_t n = json_array_size(input), start = 0, shown = 0;
    json_t *data = json_array(), *item = NULL, *list;
    const char *after, *param = NULL;
    char why[200];
    long limit;
    bool desc, more = false;
    rein_err rc;

    if (!data)
        return REIN_ENOMEM;
    rc = list_query(call, query, &limit, &desc, &after, &param, why, sizeof(why));
    for (size_t k = 0; !rc && k < n; k++) { /* k: the place in the list's order */
        json_decref(item);
        if (!(item = listed_item(json_array_get(input, desc ? n - 1 - k : k), id,
                                 desc ? n - 1 - k : k))) {
            rc = REIN_ENOMEM;
        } else if (after && !start) {
            if (is(json_object_get(item, "id"), after))
                start = k + 1;
        } else if ((long)shown == limit) {
            more = true;
            break;
        } else if (json_array_append(data, item)) {
            rc = REIN_ENOMEM;
        } else {
            shown++;
        }
    }
    json_decref(item);
    if (!rc && after && !start) {
        snprintf(why, sizeof(why), "Invalid 'after': response '%.64s' has no input item '%.64s'.",
                 id, after);
        param = "after";
        rc = REIN_EINVAL;
    }
    if (rc) {
        json_decref(data);
        return rc == REIN_EINVAL ? kept_refusal(400, param, why, status, out) : rc;
    }
    /* an empty page has null ids */
    list = json_pack("{s:s, s:o, s:O?, s:O?, s:b}", "object", "list", "data", data, "first_id",
                     json_object_get(json_array_get(data, 0), "id"), "last_id",
                     json_object_get(json_array_get(data, shown ? shown - 1 : 0), "id"), "has_more",
                     more);
    *status = 200;
    rc = list ? rein_json_dump(out, list) : REIN_ENOMEM;
    json_decref(list);
    return rc;
}

rein_err rein__gw_rs_kept_answer(struct rein__gw_kept *k, const char *owner,
                                 const struct rein_gateway_call *call, enum rein_gateway_kept_op op,
                                 const char *id, const char *(*query)(void *, const char *),
                                 int *status, struct rein_buf *out)
{
    const char *stream = query ? query(call->header_data, "stream") : NULL;
    json_t *resp = NULL, *input = NULL, *gone;
    char why[200];
    rein_err rc;

    if (op != REIN_GATEWAY_KEPT_INPUT_ITEMS && op != REIN_GATEWAY_KEPT_DELETE && stream &&
        strcmp(stream, "false") != 0)
        return kept_refusal(400, "stream",
                            "Invalid 'stream': this answer is JSON; a background response's "
                            "stream is read with rein_gateway_kept_stream().",
                            status, out);
    rc = op == REIN_GATEWAY_KEPT_DELETE
             ? rein__gw_kept_delete(k, owner, id)
             : rein__gw_kept_get(k, owner, id, &resp,
                                 op == REIN_GATEWAY_KEPT_INPUT_ITEMS ? &input : NULL);
    if (rc == REIN_ENOTFOUND) {
        snprintf(why, sizeof(why), "Response with id '%.64s' not found.", id);
        return kept_refusal(404, NULL, why, status, out);
    }
    if (!rc && op == REIN_GATEWAY_KEPT_CANCEL &&
        !json_is_true(json_object_get(resp, "background"))) {
        json_decref(resp);
        return kept_refusal(400, NULL,
                            "Only responses created with background=true can be cancelled.", status,
                            out);
    }
    if (!rc && op == REIN_GATEWAY_KEPT_INPUT_ITEMS)
        rc = input_list(call, query, id, input, status, out);
    else if (!rc && op != REIN_GATEWAY_KEPT_DELETE)
        rc = rein_json_dump(out, resp);
    else if (!rc) {
        gone = json_pack("{s:s, s:s, s:b}", "id", id, "object", "response", "deleted", 1);
        rc = gone ? rein_json_dump(out, gone) : REIN_ENOMEM;
        json_decref(gone);
    }
    if (!rc && op != REIN_GATEWAY_KEPT_INPUT_ITEMS)
        *status = 200;
    json_decref(resp);
    json_decref(input);
    return rc;
}

const struct rein__gw_wire rein__gw_responses = {
    .name = "openai-responses",
    .id_prefix = "call_",
    .convert = rs_convert,
    .parse_as = "openai",
    .parse = rs_parse,
    .reply = rs_reply,
    .error = rs_error,
    .s_text = rs_s_text,
    .s_block = rs_s_block,
    .s_call = rs_s_call,
    .s_end = rs_s_end,
    .s_error = rs_s_error,
    .models = rs_models,
};
