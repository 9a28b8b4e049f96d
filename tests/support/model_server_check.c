/*
 * Request validation of the scripted model server (model_server_int.h), worded the way the
 * real services answer: OpenAI's {"error":{message,type,param,code}} with its
 * "Missing required parameter: 'messages'." family of messages, Anthropic's
 * "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: …",
 * Ollama's {"error": "..."}.
 *
 * The point is the history checks: an assistant turn with tool calls must be answered by a
 * tool result for every call id before the conversation goes on, and a tool result must
 * answer a call of the turn just before it. A client that breaks this gets the same 400 it
 * would get in production, so a test can assert that every request rein sent was valid.
 *
 * Also the conversation helpers the match predicates use (last role, last text, tool
 * results, offered tools).
 */
#include "model_server_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- verdicts ------------------------------------------------------------------------ */

void ms__verdict_release(struct ms_verdict *v)
{
    rein_free(v->param);
    rein_free(v->message);
    v->param = NULL;
    v->message = NULL;
}

bool ms__vfail(struct ms_verdict *v, int status, const char *type, const char *code, char *param,
               const char *fmt, va_list ap)
{
    struct rein_buf b;

    v->status = status;
    snprintf(v->type, sizeof(v->type), "%s", type);
    snprintf(v->code, sizeof(v->code), "%s", code ? code : "");
    rein_free(v->param);
    v->param = param;
    rein_free(v->message);
    rein_buf_init(&b, 0);
    if (rein_buf_addvf(&b, fmt, ap) != REIN_OK)
        rein_buf_reset(&b);
    v->message = rein_buf_detach(&b, NULL);
    return false;
}

/* Records a refusal; param is taken (may be NULL). Always returns false. */
static bool fail(struct ms_verdict *v, int status, const char *type, const char *code, char *param,
                 const char *fmt, ...) REIN_PRINTF(6, 7);

static bool fail(struct ms_verdict *v, int status, const char *type, const char *code, char *param,
                 const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    (void)ms__vfail(v, status, type, code, param, fmt, ap);
    va_end(ap);
    return false;
}

bool ms__verdict_set(struct ms_verdict *v, int status, const char *type, const char *message)
{
    return fail(v, status, type, NULL, NULL, "%s", message);
}

/* OpenAI-worded errors are all 400 invalid_request_error unless said otherwise. */
#define OA_FAIL(v, code, param, ...)                                                               \
    fail((v), 400, "invalid_request_error", (code), (param), __VA_ARGS__)
#define AN_FAIL(v, ...) fail((v), 400, "invalid_request_error", NULL, NULL, __VA_ARGS__)
#define OL_FAIL(v, ...) fail((v), 400, "", NULL, NULL, __VA_ARGS__)
#define DS_FAIL(v, ...) fail((v), 400, "", "InvalidParameter", NULL, __VA_ARGS__)

/* Each wire's answer form (decision 0100), below. */
static bool oa_check_format(const json_t *f, bool nested, const char *param, struct ms_verdict *v);
static bool an_check_output(const json_t *body, struct ms_verdict *v);
static bool ol_check_format(const json_t *f, struct ms_verdict *v);

static const char *oa_type(const json_t *v)
{
    if (!v) /* a member that is not there: json_typeof reads through its pointer */
        return "nothing";
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

static const char *str_of(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static bool name_ok(const char *name, size_t max)
{
    size_t n = strlen(name);

    if (n < 1 || n > max)
        return false;
    return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

/* ---- OpenAI -------------------------------------------------------------------------- */

static bool oa_check_call(const json_t *call, size_t i, size_t j, struct ms_verdict *v)
{
    const json_t *fn = json_object_get(call, "function");
    const json_t *args = json_object_get(fn, "arguments");
    const char *type = str_of(call, "type");

    if (!json_is_object(call))
        return OA_FAIL(v, "invalid_type", rein_asprintf("messages[%zu].tool_calls[%zu]", i, j),
                       "Invalid type for 'messages[%zu].tool_calls[%zu]': expected an object, but "
                       "got %s instead.",
                       i, j, oa_type(call));
    if (!json_is_string(json_object_get(call, "id")))
        return OA_FAIL(v, "missing_required_parameter",
                       rein_asprintf("messages[%zu].tool_calls[%zu].id", i, j),
                       "Missing required parameter: 'messages[%zu].tool_calls[%zu].id'.", i, j);
    if (!type)
        return OA_FAIL(v, "missing_required_parameter",
                       rein_asprintf("messages[%zu].tool_calls[%zu].type", i, j),
                       "Missing required parameter: 'messages[%zu].tool_calls[%zu].type'.", i, j);
    if (strcmp(type, "function") != 0)
        return OA_FAIL(v, "invalid_value",
                       rein_asprintf("messages[%zu].tool_calls[%zu].type", i, j),
                       "Invalid value: '%s'. Supported values are: 'function'.", type);
    if (!json_is_object(fn))
        return OA_FAIL(v, "missing_required_parameter",
                       rein_asprintf("messages[%zu].tool_calls[%zu].function", i, j),
                       "Missing required parameter: 'messages[%zu].tool_calls[%zu].function'.", i,
                       j);
    if (!json_is_string(json_object_get(fn, "name")))
        return OA_FAIL(v, "missing_required_parameter",
                       rein_asprintf("messages[%zu].tool_calls[%zu].function.name", i, j),
                       "Missing required parameter: 'messages[%zu].tool_calls[%zu].function.name'.",
                       i, j);
    if (!args)
        return OA_FAIL(v, "missing_required_parameter",
                       rein_asprintf("messages[%zu].tool_calls[%zu].function.arguments", i, j),
                       "Missing required parameter: "
                       "'messages[%zu].tool_calls[%zu].function.arguments'.",
                       i, j);
    if (!json_is_string(args))
        return OA_FAIL(v, "invalid_type",
                       rein_asprintf("messages[%zu].tool_calls[%zu].function.arguments", i, j),
                       "Invalid type for 'messages[%zu].tool_calls[%zu].function.arguments': "
                       "expected a string, but got %s instead.",
                       i, j, oa_type(args));
    return true;
}

static bool oa_check_assistant(const json_t *m, size_t i, struct ms_verdict *v)
{
    const json_t *calls = json_object_get(m, "tool_calls");
    const json_t *content = json_object_get(m, "content");
    size_t j;
    json_t *call;

    if (calls && !json_is_null(calls)) {
        if (!json_is_array(calls))
            return OA_FAIL(v, "invalid_type", rein_asprintf("messages[%zu].tool_calls", i),
                           "Invalid type for 'messages[%zu].tool_calls': expected an array of "
                           "objects, but got %s instead.",
                           i, oa_type(calls));
        if (json_array_size(calls) == 0)
            return OA_FAIL(v, "empty_array", rein_asprintf("messages[%zu].tool_calls", i),
                           "Invalid 'messages[%zu].tool_calls': empty array. Expected an array "
                           "with minimum length 1, but got an empty array instead.",
                           i);
        json_array_foreach(calls, j, call)
        {
            if (!oa_check_call(call, i, j, v))
                return false;
        }
        return true;
    }
    if ((!content || json_is_null(content)) && !json_object_get(m, "function_call") &&
        !json_is_string(json_object_get(m, "refusal")))
        return OA_FAIL(v, NULL, rein_asprintf("messages.[%zu].content", i),
                       "Invalid value for 'content': expected a string, got null.");
    return true;
}

/* A data: URL of base64 bytes whose media type starts with prefix ("" for any). */
static bool data_url_ok(const char *url, const char *prefix)
{
    const char *b;

    if (!url || strncmp(url, "data:", 5) != 0 || strncmp(url + 5, prefix, strlen(prefix)) != 0)
        return false;
    b = strstr(url, ";base64,");
    return b && b > url + 5 && b[8] != '\0' &&
           strspn(b + 8, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                         "qrstuvwxyz0123456789+/=") == strlen(b + 8);
}

/* A content part of a user message (platform.openai.com, chat completions, "Array of content
 * parts"): text with its text; image_url with an object holding its url (http(s) or a data: URL
 * of an image) and an optional detail; input_audio with base64 data and format wav or mp3; file
 * with an object holding file_data (a data: URL) and a filename, or a file_id. System,
 * developer and tool messages take text parts only. */
static bool oa_check_part(const json_t *part, const char *role, size_t i, size_t j,
                          struct ms_verdict *v)
{
    const char *type = str_of(part, "type");
    const json_t *o = type ? json_object_get(part, type) : NULL;
    const char *url = str_of(o, "url"), *fmt = str_of(o, "format"), *fd = str_of(o, "file_data");
    bool ok;

    if (type && !strcmp(type, "text"))
        ok = str_of(part, "text") != NULL;
    else if (strcmp(role, "user") != 0)
        ok = false;
    else if (type && !strcmp(type, "image_url"))
        ok = url && (data_url_ok(url, "image/") || !strncmp(url, "https://", 8) ||
                     !strncmp(url, "http://", 7));
    else if (type && !strcmp(type, "input_audio"))
        ok = str_of(o, "data") && fmt && (!strcmp(fmt, "wav") || !strcmp(fmt, "mp3"));
    else if (type && !strcmp(type, "file"))
        ok = (fd && data_url_ok(fd, "") && str_of(o, "filename")) || str_of(o, "file_id");
    else
        ok = false;
    if (!ok)
        return OA_FAIL(v, "invalid_value", rein_asprintf("messages[%zu].content[%zu]", i, j),
                       "Invalid 'messages[%zu].content[%zu]': a %s message's part must be text%s "
                       "with its data (type %s).",
                       i, j, role, strcmp(role, "user") ? "" : ", image_url, input_audio or file",
                       type ? type : "missing");
    return true;
}

static bool oa_check_message(const json_t *m, size_t i, struct ms_verdict *v)
{
    static const char *const roles[] = {"system",   "assistant", "user",
                                        "function", "tool",      "developer"};
    const json_t *content = json_object_get(m, "content");
    const char *role;
    size_t r;

    if (!json_is_object(m))
        return OA_FAIL(v, "invalid_type", rein_asprintf("messages[%zu]", i),
                       "Invalid type for 'messages[%zu]': expected an object, but got %s instead.",
                       i, oa_type(m));
    role = str_of(m, "role");
    if (!json_object_get(m, "role"))
        return OA_FAIL(v, "missing_required_parameter", rein_asprintf("messages[%zu].role", i),
                       "Missing required parameter: 'messages[%zu].role'.", i);
    for (r = 0; role && r < REIN_ARRAY_SIZE(roles) && strcmp(role, roles[r]) != 0; r++)
        ;
    if (!role || r == REIN_ARRAY_SIZE(roles))
        return OA_FAIL(v, "invalid_value", rein_asprintf("messages[%zu].role", i),
                       "Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', "
                       "'function', 'tool', and 'developer'.",
                       role ? role : "(not a string)");
    if (strcmp(role, "assistant") == 0)
        return oa_check_assistant(m, i, v);
    if (!content)
        return OA_FAIL(v, "missing_required_parameter", rein_asprintf("messages[%zu].content", i),
                       "Missing required parameter: 'messages[%zu].content'.", i);
    if (!json_is_string(content) && !json_is_array(content))
        return OA_FAIL(v, "invalid_type", rein_asprintf("messages[%zu].content", i),
                       "Invalid type for 'messages[%zu].content': expected one of a string or "
                       "array of objects, but got %s instead.",
                       i, oa_type(content));
    if (strcmp(role, "tool") == 0 && !json_is_string(json_object_get(m, "tool_call_id")))
        return OA_FAIL(v, "missing_required_parameter",
                       rein_asprintf("messages[%zu].tool_call_id", i),
                       "Missing required parameter: 'messages[%zu].tool_call_id'.", i);
    for (size_t j = 0; j < json_array_size(content); j++)
        if (!oa_check_part(json_array_get(content, j), role, i, j, v))
            return false;
    return true;
}

static bool role_is(const json_t *m, const char *role)
{
    const char *r = str_of(m, "role");

    return r && strcmp(r, role) == 0;
}

/* Removes id from the pending array of call ids; false when it is not there. */
static bool take_id(json_t *pending, const char *id)
{
    size_t i;
    json_t *x;

    json_array_foreach(pending, i, x)
    {
        if (id && strcmp(json_string_value(x), id) == 0) {
            json_array_remove(pending, i);
            return true;
        }
    }
    return false;
}

/* Joins the strings of an array with ", " into a new string. */
static char *join_ids(const json_t *ids)
{
    struct rein_buf b;
    size_t i;
    json_t *x;
    rein_err rc = REIN_OK;

    rein_buf_init(&b, 0);
    json_array_foreach(ids, i, x)
    {
        if (!rc && i)
            rc = rein_buf_adds(&b, ", ");
        if (!rc)
            rc = rein_buf_adds(&b, json_string_value(x));
    }
    return rein_buf_detach(&b, NULL);
}

/* Checks one assistant turn with tool calls at i and the tool messages after it; *next is
 * the index of the first message after them. */
static bool oa_check_answers(const json_t *msgs, size_t i, size_t *next, struct ms_verdict *v)
{
    json_t *pending = json_array();
    size_t j, n = json_array_size(msgs), k;
    json_t *call;
    bool ok = true;

    json_array_foreach(json_object_get(json_array_get(msgs, i), "tool_calls"), k, call)
    {
        json_array_append_new(pending, json_string(str_of(call, "id")));
    }
    for (j = i + 1; ok && j < n && role_is(json_array_get(msgs, j), "tool"); j++) {
        const char *id = str_of(json_array_get(msgs, j), "tool_call_id");
        if (!take_id(pending, id))
            ok = OA_FAIL(v, NULL, rein_asprintf("messages.[%zu].tool_call_id", j),
                         "Invalid parameter: 'tool_call_id' of '%s' not found in 'tool_calls' of "
                         "previous message.",
                         id);
    }
    if (ok && json_array_size(pending)) {
        char *ids = join_ids(pending);
        ok = OA_FAIL(v, NULL, rein_asprintf("messages.[%zu].role", j < n ? j : i),
                     "An assistant message with 'tool_calls' must be followed by tool messages "
                     "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                     "response messages: %s",
                     ids ? ids : "");
        rein_free(ids);
    }
    json_decref(pending);
    *next = j;
    return ok;
}

static bool oa_check_history(const json_t *msgs, struct ms_verdict *v)
{
    size_t i = 0, n = json_array_size(msgs);

    while (i < n) {
        const json_t *m = json_array_get(msgs, i);
        const json_t *calls = json_object_get(m, "tool_calls");
        if (role_is(m, "assistant") && json_array_size(calls)) {
            if (!oa_check_answers(msgs, i, &i, v))
                return false;
            continue;
        }
        if (role_is(m, "tool"))
            return OA_FAIL(v, NULL, rein_asprintf("messages.[%zu].role", i),
                           "Invalid parameter: messages with role 'tool' must be a response to a "
                           "preceeding message with 'tool_calls'.");
        i++;
    }
    return true;
}

static bool oa_check_tool(const json_t *t, size_t i, struct ms_verdict *v)
{
    const json_t *fn = json_object_get(t, "function");
    const char *type = str_of(t, "type");
    const char *name = str_of(fn, "name");
    const json_t *params = json_object_get(fn, "parameters");

    if (!json_is_object(t))
        return OA_FAIL(v, "invalid_type", rein_asprintf("tools[%zu]", i),
                       "Invalid type for 'tools[%zu]': expected an object, but got %s instead.", i,
                       oa_type(t));
    if (!type)
        return OA_FAIL(v, "missing_required_parameter", rein_asprintf("tools[%zu].type", i),
                       "Missing required parameter: 'tools[%zu].type'.", i);
    if (strcmp(type, "function") != 0 && strcmp(type, "custom") != 0)
        return OA_FAIL(v, "invalid_value", rein_asprintf("tools[%zu].type", i),
                       "Invalid value: '%s'. Supported values are: 'function' and 'custom'.", type);
    if (strcmp(type, "custom") == 0)
        return true;
    if (!json_is_object(fn))
        return OA_FAIL(v, "missing_required_parameter", rein_asprintf("tools[%zu].function", i),
                       "Missing required parameter: 'tools[%zu].function'.", i);
    if (!name)
        return OA_FAIL(v, "missing_required_parameter",
                       rein_asprintf("tools[%zu].function.name", i),
                       "Missing required parameter: 'tools[%zu].function.name'.", i);
    if (strlen(name) > 64)
        return OA_FAIL(v, "string_above_max_length", rein_asprintf("tools[%zu].function.name", i),
                       "Invalid 'tools[%zu].function.name': string too long. Expected a string "
                       "with maximum length 64, but got a string with length %zu instead.",
                       i, strlen(name));
    if (!name_ok(name, 64))
        return OA_FAIL(v, "invalid_value", rein_asprintf("tools[%zu].function.name", i),
                       "Invalid 'tools[%zu].function.name': string does not match pattern. "
                       "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                       i);
    if (params && !json_is_object(params))
        return OA_FAIL(v, "invalid_type", rein_asprintf("tools[%zu].function.parameters", i),
                       "Invalid type for 'tools[%zu].function.parameters': expected an object, "
                       "but got %s instead.",
                       i, oa_type(params));
    return true;
}

static bool oa_check_tools(const json_t *tools, struct ms_verdict *v)
{
    size_t i;
    json_t *t;

    if (!tools || json_is_null(tools))
        return true;
    if (!json_is_array(tools))
        return OA_FAIL(v, "invalid_type", rein_strdup("tools"),
                       "Invalid type for 'tools': expected an array of objects, but got %s "
                       "instead.",
                       oa_type(tools));
    if (json_array_size(tools) == 0)
        return OA_FAIL(v, "empty_array", rein_strdup("tools"),
                       "Invalid 'tools': empty array. Expected an array with minimum length 1, "
                       "but got an empty array instead.");
    json_array_foreach(tools, i, t)
    {
        if (!oa_check_tool(t, i, v))
            return false;
    }
    return true;
}

/* stop: a string or up to 4 strings ("Up to 4 sequences", the chat completions reference). */
static bool oa_check_stop(const json_t *stop, struct ms_verdict *v)
{
    size_t i;
    const json_t *s;

    if (!stop || json_is_null(stop) || json_is_string(stop))
        return true;
    if (!json_is_array(stop))
        return OA_FAIL(v, "invalid_type", rein_strdup("stop"),
                       "Invalid type for 'stop': expected one of a string or array of strings, "
                       "but got %s instead.",
                       oa_type(stop));
    if (json_array_size(stop) > 4)
        return OA_FAIL(v, "array_above_max_length", rein_strdup("stop"),
                       "Invalid 'stop': array too long. Expected an array with maximum length 4, "
                       "but got an array with length %zu instead.",
                       json_array_size(stop));
    json_array_foreach(stop, i, s)
    {
        if (!json_is_string(s))
            return OA_FAIL(v, "invalid_type", rein_asprintf("stop[%zu]", i),
                           "Invalid type for 'stop[%zu]': expected a string, but got %s instead.",
                           i, oa_type(s));
    }
    return true;
}

/* The output limits OpenAI documents for the models the tests name, as its API refuses a larger
 * one. */
static bool oa_check_max_tokens(const json_t *body, const char *model, struct ms_verdict *v)
{
    const json_t *max = json_object_get(body, "max_completion_tokens");
    const char *m = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    json_int_t most = !strncmp(m, "gpt-4o", 6) ? 16384 : !strncmp(m, "gpt-4.1", 7) ? 32768 : 0;

    if (!max)
        max = json_object_get(body, "max_tokens");
    if (most && json_integer_value(max) > most)
        return OA_FAIL(v, "invalid_value", rein_strdup("max_tokens"),
                       "max_tokens is too large: %lld. This model supports at most %lld "
                       "completion tokens, whereas you provided %lld.",
                       (long long)json_integer_value(max), (long long)most,
                       (long long)json_integer_value(max));
    return true;
}

/* The effort words an OpenAI reasoning model takes (NULL: not one this server knows): GPT-5
 * minimal to high, GPT-5.1 none to high (its codex-max xhigh too), GPT-5.2 on none to xhigh, the
 * o-series low to high. */
static const char *oa_efforts(const char *m)
{
    if (m[0] == 'o' && m[1] >= '1' && m[1] <= '9')
        return "'low', 'medium', and 'high'";
    if (strncmp(m, "gpt-5", 5) != 0 || !strncmp(m, "gpt-5-chat", 10))
        return NULL;
    if (m[5] != '.' || m[6] < '1' || m[6] > '9')
        return "'minimal', 'low', 'medium', and 'high'";
    if (m[6] == '1' && !strstr(m, "codex-max"))
        return "'none', 'low', 'medium', and 'high'";
    return "'none', 'low', 'medium', 'high', and 'xhigh'";
}

/* OpenAI's reasoning models take only the default temperature and no top_p; GPT-5.1 and later
 * take both while their effort is none, their default; each takes its own effort words. This
 * server's own reading of the names OpenAI documents. param names the effort's member (chat
 * completions' reasoning_effort, the Responses API's reasoning.effort). */
static bool oa_check_sampling(const json_t *body, const char *effort, const char *param,
                              struct ms_verdict *v)
{
    const char *model = json_string_value(json_object_get(body, "model"));
    const json_t *t = json_object_get(body, "temperature");
    const char *m, *words;
    bool reasoning;

    if (!model)
        return true;
    m = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    words = oa_efforts(m);
    if (effort && words) {
        char quoted[32];
        snprintf(quoted, sizeof(quoted), "'%s'", effort);
        if (!strstr(words, quoted))
            return OA_FAIL(v, "unsupported_value", rein_strdup(param),
                           "Unsupported value: '%s' does not support '%s' with this model. "
                           "Supported values are: %s.",
                           param, effort, words);
    }
    reasoning = words != NULL || !strncmp(m, "codex", 5);
    if (!strncmp(m, "gpt-5.", 6) && m[6] >= '1' && m[6] <= '9' &&
        (!effort || !strcmp(effort, "none")))
        reasoning = false;
    if (!reasoning)
        return true;
    if (t && json_number_value(t) != 1.0)
        return OA_FAIL(v, "unsupported_value", rein_strdup("temperature"),
                       "Unsupported value: 'temperature' does not support %g with this model. "
                       "Only the default (1) value is supported.",
                       json_number_value(t));
    if (json_object_get(body, "top_p"))
        return OA_FAIL(v, "unsupported_parameter", rein_strdup("top_p"),
                       "Unsupported parameter: 'top_p' is not supported with this model.");
    return true;
}

static bool oa_check_body(const json_t *body, struct ms_verdict *v)
{
    const json_t *model = json_object_get(body, "model");
    const json_t *msgs = json_object_get(body, "messages");
    const json_t *stream = json_object_get(body, "stream");
    size_t i;
    json_t *m;

    if (!json_is_object(body))
        return OA_FAIL(v, "invalid_type", NULL,
                       "Invalid type for request body: expected an object, but got %s instead.",
                       oa_type(body));
    if (!model)
        return OA_FAIL(v, NULL, NULL, "you must provide a model parameter");
    if (!json_is_string(model))
        return OA_FAIL(v, "invalid_type", rein_strdup("model"),
                       "Invalid type for 'model': expected a string, but got %s instead.",
                       oa_type(model));
    if (!msgs)
        return OA_FAIL(v, "missing_required_parameter", rein_strdup("messages"),
                       "Missing required parameter: 'messages'.");
    if (!json_is_array(msgs))
        return OA_FAIL(v, "invalid_type", rein_strdup("messages"),
                       "Invalid type for 'messages': expected an array of objects, but got %s "
                       "instead.",
                       oa_type(msgs));
    if (json_array_size(msgs) == 0)
        return OA_FAIL(v, "empty_array", rein_strdup("messages"),
                       "Invalid 'messages': empty array. Expected an array with minimum length 1, "
                       "but got an empty array instead.");
    json_array_foreach(msgs, i, m)
    {
        if (!oa_check_message(m, i, v))
            return false;
    }
    if (!oa_check_history(msgs, v) || !oa_check_tools(json_object_get(body, "tools"), v) ||
        !oa_check_max_tokens(body, json_string_value(model), v) ||
        !oa_check_sampling(body, json_string_value(json_object_get(body, "reasoning_effort")),
                           "reasoning_effort", v))
        return false;
    if (stream && !json_is_boolean(stream) && !json_is_null(stream))
        return OA_FAIL(v, "invalid_type", rein_strdup("stream"),
                       "Invalid type for 'stream': expected a boolean, but got %s instead.",
                       oa_type(stream));
    if (json_object_get(body, "stream_options") &&
        !json_is_null(json_object_get(body, "stream_options")) && !json_is_true(stream))
        return OA_FAIL(v, NULL, rein_strdup("stream_options"),
                       "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
    if (json_object_get(body, "response_format") &&
        !oa_check_format(json_object_get(body, "response_format"), true, "response_format", v))
        return false;
    return oa_check_stop(json_object_get(body, "stop"), v);
}

/* ---- Anthropic ----------------------------------------------------------------------- */

/* An image or document block's source (docs.claude.com, vision and PDF support): base64 with
 * a media type the block takes and base64 data, or a url. */
static bool an_media_ok(const json_t *blk)
{
    static const char *const images[] = {"image/jpeg", "image/png", "image/gif", "image/webp"};
    const json_t *src = json_object_get(blk, "source");
    const char *st = str_of(src, "type"), *mt = str_of(src, "media_type");
    const char *data = str_of(src, "data");
    bool image = !strcmp(str_of(blk, "type"), "image"), known = false;

    if (st && !strcmp(st, "url"))
        return str_of(src, "url") != NULL;
    if (!st || strcmp(st, "base64") != 0 || !mt || !data || !data[0] ||
        strspn(data, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") !=
            strlen(data))
        return false;
    for (size_t k = 0; image && k < REIN_ARRAY_SIZE(images); k++)
        known = known || !strcmp(mt, images[k]);
    return image ? known : !strcmp(mt, "application/pdf");
}

static bool an_check_block(const json_t *blk, const char *role, size_t i, size_t j,
                           struct ms_verdict *v)
{
    const char *type = str_of(blk, "type");

    if (!json_is_object(blk))
        return AN_FAIL(v, "messages.%zu.content.%zu: Input should be a valid dictionary", i, j);
    if (!type)
        return AN_FAIL(v, "messages.%zu.content.%zu.type: Field required", i, j);
    if (strcmp(type, "text") == 0) {
        const char *text = str_of(blk, "text");
        if (!text)
            return AN_FAIL(v, "messages.%zu.content.%zu.text.text: Field required", i, j);
        if (!*text)
            return AN_FAIL(v, "messages: text content blocks must be non-empty");
    } else if (strcmp(type, "tool_use") == 0) {
        if (strcmp(role, "assistant") != 0)
            return AN_FAIL(v,
                           "messages.%zu.content.%zu: `tool_use` blocks can only be in "
                           "`assistant` messages",
                           i, j);
        if (!json_is_string(json_object_get(blk, "id")))
            return AN_FAIL(v, "messages.%zu.content.%zu.tool_use.id: Field required", i, j);
        if (!json_is_string(json_object_get(blk, "name")))
            return AN_FAIL(v, "messages.%zu.content.%zu.tool_use.name: Field required", i, j);
        if (!json_is_object(json_object_get(blk, "input")))
            return AN_FAIL(v,
                           "messages.%zu.content.%zu.tool_use.input: Input should be a valid "
                           "dictionary",
                           i, j);
    } else if (strcmp(type, "image") == 0 || strcmp(type, "document") == 0) {
        if (strcmp(role, "user") != 0)
            return AN_FAIL(v,
                           "messages.%zu.content.%zu: `%s` blocks can only be in `user` messages",
                           i, j, type);
        if (!an_media_ok(blk))
            return AN_FAIL(v,
                           "messages.%zu.content.%zu.%s.source: a base64 source needs media_type "
                           "(image/jpeg, image/png, image/gif or image/webp; application/pdf for "
                           "a document) and data; a url source its url",
                           i, j, type);
    } else if (strcmp(type, "tool_result") == 0) {
        if (strcmp(role, "user") != 0)
            return AN_FAIL(v,
                           "messages.%zu.content.%zu: `tool_result` blocks can only be in "
                           "`user` messages",
                           i, j);
        if (!json_is_string(json_object_get(blk, "tool_use_id")))
            return AN_FAIL(v, "messages.%zu.content.%zu.tool_result.tool_use_id: Field required", i,
                           j);
    }
    return true;
}

static bool an_check_message(const json_t *m, size_t i, size_t n, struct ms_verdict *v)
{
    const json_t *content = json_object_get(m, "content");
    const char *role = str_of(m, "role");
    size_t j;
    json_t *blk;

    if (!json_is_object(m))
        return AN_FAIL(v, "messages.%zu: Input should be a valid dictionary", i);
    if (!json_object_get(m, "role"))
        return AN_FAIL(v, "messages.%zu.role: Field required", i);
    if (!role || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0))
        return AN_FAIL(v, "messages.%zu.role: Input should be 'user' or 'assistant'", i);
    if (!content)
        return AN_FAIL(v, "messages.%zu.content: Field required", i);
    if (!json_is_string(content) && !json_is_array(content))
        return AN_FAIL(v, "messages.%zu.content: Input should be a valid list", i);
    if ((json_is_string(content) && json_string_length(content) == 0) ||
        (json_is_array(content) && json_array_size(content) == 0)) {
        if (!(i + 1 == n && strcmp(role, "assistant") == 0))
            return AN_FAIL(v,
                           "messages.%zu: all messages must have non-empty content except for "
                           "the optional final assistant message",
                           i);
    }
    json_array_foreach(content, j, blk)
    {
        if (!an_check_block(blk, role, i, j, v))
            return false;
    }
    return true;
}

/* The ids of the blocks of one type in a message ("tool_use" id, "tool_result" tool_use_id). */
static json_t *an_ids(const json_t *m, const char *type, const char *key)
{
    json_t *ids = json_array();
    size_t j;
    json_t *blk;

    json_array_foreach(json_object_get(m, "content"), j, blk)
    {
        const char *t = str_of(blk, "type");
        if (t && strcmp(t, type) == 0 && str_of(blk, key))
            json_array_append_new(ids, json_string(str_of(blk, key)));
    }
    return ids;
}

static bool an_check_results(const json_t *msgs, size_t i, struct ms_verdict *v)
{
    const json_t *prev = i ? json_array_get(msgs, i - 1) : NULL;
    json_t *uses =
        prev && role_is(prev, "assistant") ? an_ids(prev, "tool_use", "id") : json_array();
    size_t j;
    json_t *blk;
    bool ok = true;

    json_array_foreach(json_object_get(json_array_get(msgs, i), "content"), j, blk)
    {
        const char *t = str_of(blk, "type");
        const char *id = str_of(blk, "tool_use_id");
        size_t k;
        json_t *x;
        bool found = false;
        if (!ok || !t || strcmp(t, "tool_result") != 0)
            continue;
        json_array_foreach(uses, k, x)
        {
            found = found || strcmp(json_string_value(x), id) == 0;
        }
        if (!found)
            ok = AN_FAIL(v,
                         "messages.%zu.content.%zu: unexpected `tool_use_id` found in "
                         "`tool_result` blocks: %s. Each `tool_result` block must have a "
                         "corresponding `tool_use` block in the previous message.",
                         i, j, id);
    }
    json_decref(uses);
    return ok;
}

static bool an_check_uses(const json_t *msgs, size_t i, struct ms_verdict *v)
{
    const json_t *next = json_array_get(msgs, i + 1);
    json_t *uses = an_ids(json_array_get(msgs, i), "tool_use", "id");
    json_t *results =
        next && role_is(next, "user") ? an_ids(next, "tool_result", "tool_use_id") : json_array();
    json_t *missing = json_array();
    size_t k;
    json_t *x;
    bool ok = true;

    json_array_foreach(uses, k, x)
    {
        if (!take_id(results, json_string_value(x)))
            json_array_append(missing, x);
    }
    if (json_array_size(missing)) {
        char *ids = join_ids(missing);
        ok = AN_FAIL(v,
                     "messages.%zu: `tool_use` ids were found without `tool_result` blocks "
                     "immediately after: %s. Each `tool_use` block must have a corresponding "
                     "`tool_result` block in the next message.",
                     i, ids ? ids : "");
        rein_free(ids);
    }
    json_decref(uses);
    json_decref(results);
    json_decref(missing);
    return ok;
}

static bool an_check_tools(const json_t *tools, struct ms_verdict *v)
{
    size_t i;
    json_t *t;

    if (!tools)
        return true;
    if (!json_is_array(tools))
        return AN_FAIL(v, "tools: Input should be a valid list");
    json_array_foreach(tools, i, t)
    {
        const char *type = str_of(t, "type");
        const char *name = str_of(t, "name");
        if (!json_is_object(t))
            return AN_FAIL(v, "tools.%zu: Input should be a valid dictionary", i);
        if (type && strcmp(type, "custom") != 0)
            continue; /* server tools (web_search_…, bash_…) have their own shapes */
        if (!name)
            return AN_FAIL(v, "tools.%zu.custom.name: Field required", i);
        if (!name_ok(name, 64))
            return AN_FAIL(v,
                           "tools.%zu.custom.name: String should match pattern "
                           "'^[a-zA-Z0-9_-]{1,64}$'",
                           i);
        if (!json_is_object(json_object_get(t, "input_schema")))
            return AN_FAIL(v, "tools.%zu.custom.input_schema: Field required", i);
    }
    return true;
}

/* Claude's thinking forms by model, as Anthropic documents them (its effort and adaptive
 * thinking pages): this server's own lists, independent of rein's reading of model ids. */
static bool an_model_in(const char *model, const char *const *list)
{
    for (size_t i = 0; model && list[i]; i++) {
        if (strstr(model, list[i]))
            return true;
    }
    return false;
}

static const char *const AN_ADAPTIVE_ONLY[] = {
    "claude-opus-4-7", "claude-opus-4-8", "claude-opus-5", "claude-sonnet-5",
    "claude-haiku-5",  "claude-mythos",   "claude-fable",  NULL,
};
static const char *const AN_ADAPTIVE[] = {"claude-opus-4-6", "claude-sonnet-4-6", NULL};
static const char *const AN_XHIGH[] = {"claude-opus-4-7",
                                       "claude-opus-4-8",
                                       "claude-opus-5",
                                       "claude-sonnet-5",
                                       "claude-mythos-5",
                                       "claude-fable-5",
                                       NULL};
static const char *const AN_EFFORT_ALSO[] = {"claude-opus-4-5", NULL};
static const char *const AN_ONE_SAMPLER[] = {"claude-opus-4-1",
                                             "claude-sonnet-4-5",
                                             "claude-haiku-4-5",
                                             "claude-opus-4-5",
                                             "claude-opus-4-6",
                                             "claude-sonnet-4-6",
                                             NULL};

/* Sampling settings as Claude's models take them: none from 4.7 on, one of two from 4.1. */
static bool an_check_sampling(const char *model, const json_t *body, struct ms_verdict *v)
{
    bool t = json_object_get(body, "temperature") != NULL;
    bool p = json_object_get(body, "top_p") != NULL;
    const char *type =
        json_string_value(json_object_get(json_object_get(body, "thinking"), "type"));
    bool thinks = type && (!strcmp(type, "enabled") || !strcmp(type, "adaptive"));

    if (an_model_in(model, AN_ADAPTIVE_ONLY) && (t || p || json_object_get(body, "top_k")))
        return AN_FAIL(v, "`%s` is deprecated for this model.",
                       t   ? "temperature"
                       : p ? "top_p"
                           : "top_k");
    if (thinks && t && json_number_value(json_object_get(body, "temperature")) != 1.0)
        return AN_FAIL(v, "`temperature` may only be set to 1 when thinking is enabled or in "
                          "adaptive mode.");
    if (thinks && p && json_number_value(json_object_get(body, "top_p")) < 0.95)
        return AN_FAIL(v, "`top_p` must be greater than or equal to 0.95 or unset when thinking "
                          "is enabled or in adaptive mode.");
    if (thinks && json_object_get(body, "top_k"))
        return AN_FAIL(v, "`top_k` must be unset when thinking is enabled or in adaptive mode.");
    if (an_model_in(model, AN_ONE_SAMPLER) && t && p)
        return AN_FAIL(v, "`temperature` and `top_p` cannot both be specified for this model. "
                          "Please use only one.");
    return true;
}

static bool an_check_thinking(const char *model, const json_t *body, struct ms_verdict *v)
{
    const json_t *thinking = json_object_get(body, "thinking");
    const char *type = json_string_value(json_object_get(thinking, "type"));
    const json_t *effort = json_object_get(json_object_get(body, "output_config"), "effort");
    const char *word = json_string_value(effort);
    bool only = an_model_in(model, AN_ADAPTIVE_ONLY);
    bool adaptive = only || an_model_in(model, AN_ADAPTIVE);

    if (thinking && (!type || (strcmp(type, "enabled") && strcmp(type, "disabled") &&
                               strcmp(type, "adaptive"))))
        return AN_FAIL(v,
                       "thinking: Input tag '%s' found using 'type' does not match any of the "
                       "expected tags: 'enabled', 'disabled', 'adaptive'",
                       type ? type : "");
    if (type && only && strcmp(type, "adaptive"))
        return AN_FAIL(v,
                       "\"thinking.type.%s\" is not supported for this model. Use "
                       "\"thinking.type.adaptive\" and \"output_config.effort\" to control "
                       "thinking behavior.",
                       type);
    if (type && !strcmp(type, "adaptive") && !adaptive)
        return AN_FAIL(v, "adaptive thinking is not supported on this model");
    if (type && !strcmp(type, "adaptive") && json_object_size(thinking) != 1)
        return AN_FAIL(v, "thinking.adaptive: Extra inputs are not permitted");
    if (!effort)
        return true;
    if (!word || (strcmp(word, "low") && strcmp(word, "medium") && strcmp(word, "high") &&
                  strcmp(word, "xhigh") && strcmp(word, "max")))
        return AN_FAIL(v, "output_config.effort: Input should be 'low', 'medium', 'high', "
                          "'xhigh' or 'max'");
    if (!adaptive && !an_model_in(model, AN_EFFORT_ALSO))
        return AN_FAIL(v, "This model does not support the effort parameter.");
    if ((!strcmp(word, "xhigh") && !an_model_in(model, AN_XHIGH)) ||
        (!strcmp(word, "max") && !adaptive))
        return AN_FAIL(v, "output_config.effort: '%s' is not supported for this model", word);
    return true;
}

/* Claude's output limits as Anthropic's model pages give them, first match (0: not known). */
static const struct {
    const char *prefix;
    json_int_t most;
} AN_OUTPUT[] = {
    {"claude-opus-4-6", 128000},  {"claude-sonnet-4-6", 128000}, {"claude-opus-4-7", 128000},
    {"claude-opus-4-8", 128000},  {"claude-opus-5", 128000},     {"claude-sonnet-5", 128000},
    {"claude-haiku-5", 128000},   {"claude-fable-5", 128000},    {"claude-mythos-5", 128000},
    {"claude-opus-4-5", 64000},   {"claude-sonnet-4-5", 64000},  {"claude-haiku-4-5", 64000},
    {"claude-sonnet-4-2", 64000}, {"claude-3-7-sonnet", 64000},  {"claude-opus-4-1", 32000},
    {"claude-opus-4-2", 32000},   {"claude-3-5-", 8192},         {"claude-3-", 4096},
};

static bool an_check_output_limit(const char *model, json_int_t max, struct ms_verdict *v)
{
    for (size_t i = 0; model && i < sizeof(AN_OUTPUT) / sizeof(AN_OUTPUT[0]); i++) {
        if (strncmp(model, AN_OUTPUT[i].prefix, strlen(AN_OUTPUT[i].prefix)) != 0)
            continue;
        if (max > AN_OUTPUT[i].most)
            return AN_FAIL(v,
                           "max_tokens: %lld > %lld, which is the maximum allowed number of "
                           "output tokens for %s",
                           (long long)max, (long long)AN_OUTPUT[i].most, model);
        return true;
    }
    return true;
}

static bool an_check_params(const json_t *body, struct ms_verdict *v)
{
    const json_t *model = json_object_get(body, "model");
    const json_t *max = json_object_get(body, "max_tokens");
    const json_t *system = json_object_get(body, "system");
    const json_t *stream = json_object_get(body, "stream");
    const json_t *thinking = json_object_get(body, "thinking");
    const json_t *budget = json_object_get(thinking, "budget_tokens");

    if (!model)
        return AN_FAIL(v, "model: Field required");
    if (!json_is_string(model))
        return AN_FAIL(v, "model: Input should be a valid string");
    if (!max)
        return AN_FAIL(v, "max_tokens: Field required");
    if (!json_is_integer(max))
        return AN_FAIL(v, "max_tokens: Input should be a valid integer");
    if (json_integer_value(max) < 1)
        return AN_FAIL(v, "max_tokens: Input should be greater than or equal to 1");
    if (!an_check_output_limit(json_string_value(model), json_integer_value(max), v))
        return false;
    if (system && !json_is_string(system) && !json_is_array(system))
        return AN_FAIL(v, "system: Input should be a valid list");
    if (stream && !json_is_boolean(stream))
        return AN_FAIL(v, "stream: Input should be a valid boolean");
    if (json_object_get(body, "stop"))
        return AN_FAIL(v, "stop: Extra inputs are not permitted");
    if (!an_check_thinking(json_string_value(model), body, v) ||
        !an_check_sampling(json_string_value(model), body, v) || !an_check_output(body, v))
        return false;
    if (json_is_integer(budget) && json_integer_value(budget) < 1024)
        return AN_FAIL(v, "thinking.enabled.budget_tokens: Input should be greater than or equal "
                          "to 1024");
    if (json_is_integer(budget) && json_integer_value(budget) >= json_integer_value(max))
        return AN_FAIL(v, "`max_tokens` must be greater than `thinking.budget_tokens`. Please "
                          "consult our documentation at https://docs.claude.com/en/docs/"
                          "build-with-claude/extended-thinking#max-tokens-and-context-window-size");
    return true;
}

/*
 * With thinking on (enabled or adaptive), the assistant message whose tool_use blocks the last
 * user message's tool_result blocks answer must start with a thinking or redacted_thinking
 * block, as Anthropic's API refuses it otherwise (its message, word for word, with its
 * spelling).
 */
static bool an_check_final_thinking(const json_t *body, const json_t *msgs, struct ms_verdict *v)
{
    const char *type = str_of(json_object_get(body, "thinking"), "type");
    size_t n = json_array_size(msgs), at;
    const json_t *m, *first;
    json_t *uses;
    bool calls;

    if (!type || (strcmp(type, "enabled") != 0 && strcmp(type, "adaptive") != 0) || n < 2)
        return true;
    m = json_array_get(msgs, n - 1);
    uses = an_ids(m, "tool_result", "tool_use_id");
    calls = role_is(m, "user") && json_array_size(uses) > 0;
    json_decref(uses);
    at = n - 2;
    m = json_array_get(msgs, at);
    if (!calls || !role_is(m, "assistant") || !json_is_array(json_object_get(m, "content")))
        return true;
    first = json_array_get(json_object_get(m, "content"), 0);
    type = str_of(first, "type");
    if (type && (strcmp(type, "thinking") == 0 || strcmp(type, "redacted_thinking") == 0))
        return true;
    return AN_FAIL(v,
                   "messages.%zu.content.0.type: Expected `thinking` or `redacted_thinking`, "
                   "but found `%s`. When `thinking` is enabled, a final `assistant` message must "
                   "start with a thinking block (preceeding the lastmost set of `tool_use` and "
                   "`tool_result` blocks). We recommend you include thinking blocks from "
                   "previous turns. To avoid this requirement, disable `thinking`. Please "
                   "consult our documentation at "
                   "https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
                   at, type ? type : "");
}

static bool an_check_body(const json_t *body, struct ms_verdict *v)
{
    const json_t *msgs = json_object_get(body, "messages");
    size_t i, n;
    json_t *m;

    if (!json_is_object(body))
        return AN_FAIL(v, "Input should be a valid dictionary");
    if (!an_check_params(body, v))
        return false;
    if (!msgs)
        return AN_FAIL(v, "messages: Field required");
    if (!json_is_array(msgs))
        return AN_FAIL(v, "messages: Input should be a valid list");
    n = json_array_size(msgs);
    if (n == 0)
        return AN_FAIL(v, "messages: at least one message is required");
    json_array_foreach(msgs, i, m)
    {
        if (!an_check_message(m, i, n, v))
            return false;
    }
    for (i = 0; i < n; i++) {
        m = json_array_get(msgs, i);
        if (role_is(m, "user") && !an_check_results(msgs, i, v))
            return false;
        if (role_is(m, "assistant") && !an_check_uses(msgs, i, v))
            return false;
    }
    if (!an_check_final_thinking(body, msgs, v))
        return false;
    return an_check_tools(json_object_get(body, "tools"), v);
}

bool ms__an_check_body(const json_t *body, struct ms_verdict *v)
{
    memset(v, 0, sizeof(*v));
    return an_check_body(body, v);
}

/* ---- Ollama -------------------------------------------------------------------------- */

static bool ol_check_body(const json_t *body, struct ms_verdict *v)
{
    const json_t *msgs = json_object_get(body, "messages");
    size_t i, j;
    json_t *m, *call;

    if (!json_is_object(body))
        return OL_FAIL(v, "json: cannot unmarshal %s into Go value of type api.ChatRequest",
                       rein_json_type_name(body));
    if (!json_is_string(json_object_get(body, "model")) || !*str_of(body, "model"))
        return OL_FAIL(v, "model is required");
    if (!ol_check_format(json_object_get(body, "format"), v))
        return false;
    if (msgs && !json_is_array(msgs) && !json_is_null(msgs))
        return OL_FAIL(v,
                       "json: cannot unmarshal %s into Go struct field ChatRequest.messages "
                       "of type []api.Message",
                       rein_json_type_name(msgs));
    json_array_foreach(msgs, i, m)
    {
        const json_t *images = json_object_get(m, "images"), *img;
        json_array_foreach(images, j, img)
        {
            if (!json_is_string(img))
                return OL_FAIL(v,
                               "json: cannot unmarshal %s into Go struct field "
                               "Message.messages.images of type api.ImageData",
                               rein_json_type_name(img));
        }
        if (images && !json_is_array(images))
            return OL_FAIL(v,
                           "json: cannot unmarshal %s into Go struct field Message.messages.images "
                           "of type []api.ImageData",
                           rein_json_type_name(images));
        json_array_foreach(json_object_get(m, "tool_calls"), j, call)
        {
            const json_t *args = json_object_get(json_object_get(call, "function"), "arguments");
            if (args && !json_is_object(args))
                return OL_FAIL(v,
                               "json: cannot unmarshal %s into Go struct field "
                               "ToolCallFunction.messages.tool_calls.function.arguments of "
                               "type api.ToolCallFunctionArguments",
                               rein_json_type_name(args));
        }
    }
    return true;
}

/* ---- DashScope's native API ---------------------------------------------------------- */

const json_t *ms__messages_of(const json_t *req)
{
    const json_t *m = json_object_get(req, "messages"), *in = json_object_get(req, "input");

    if (m)
        return m;
    return json_is_array(in) ? in : json_object_get(in, "messages");
}

const json_t *ms__tools_of(const json_t *req)
{
    const json_t *t = json_object_get(req, "tools");

    return t ? t : json_object_get(json_object_get(req, "parameters"), "tools");
}

/* A chat completions refusal in DashScope's words: its message, code InvalidParameter. */
static bool ds_reword(struct ms_verdict *v)
{
    v->status = 400;
    v->type[0] = '\0';
    snprintf(v->code, sizeof(v->code), "%s", "InvalidParameter");
    return false;
}

/* {model, input: {messages}, parameters: {result_format, incremental_output, tools, ...}}:
 * the messages and tools have the chat completions shapes, checked as such. */
static bool ds_check_body(const json_t *body, struct ms_verdict *v)
{
    const json_t *msgs = json_object_get(json_object_get(body, "input"), "messages");
    const json_t *params = json_object_get(body, "parameters");
    const char *format = str_of(params, "result_format");
    size_t i;
    json_t *m;

    if (!json_is_string(json_object_get(body, "model")))
        return DS_FAIL(v, "Model not exist.");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return DS_FAIL(v, "Role must be user or assistant and Content length must be greater "
                          "than 0");
    if (params && !json_is_object(params))
        return DS_FAIL(v, "parameters must be an object");
    json_array_foreach(msgs, i, m)
    {
        if (!oa_check_message(m, i, v))
            return ds_reword(v);
    }
    if (!oa_check_history(msgs, v) || !oa_check_tools(json_object_get(params, "tools"), v))
        return ds_reword(v);
    if (json_object_get(params, "tools") && (!format || strcmp(format, "message") != 0))
        return DS_FAIL(v, "tools require parameters.result_format \"message\"");
    return true;
}

/* ---- output formats (decision 0100) ------------------------------------------------- */

static bool rs_strict_schema(const json_t *s, const char *fn, struct ms_verdict *v);

/* OpenAI's format object, checked as both APIs word it: chat's response_format nests name,
 * schema and strict under json_schema; the Responses API's text.format has them beside the
 * type. A name matches ^[a-zA-Z0-9_-]+$, at most 64; strict holds the schema to strict mode. */
static bool oa_check_format(const json_t *f, bool nested, const char *param, struct ms_verdict *v)
{
    const char *type = str_of(f, "type");
    const json_t *js = nested ? json_object_get(f, "json_schema") : f;
    const char *name = str_of(js, "name");

    if (!json_is_object(f))
        return OA_FAIL(v, "invalid_type", rein_strdup(param),
                       "Invalid type for '%s': expected an object, but got %s instead.", param,
                       oa_type(f));
    if (!type)
        return OA_FAIL(v, "missing_required_parameter", rein_asprintf("%s.type", param),
                       "Missing required parameter: '%s.type'.", param);
    if (strcmp(type, "text") == 0 || strcmp(type, "json_object") == 0)
        return true;
    if (strcmp(type, "json_schema") != 0)
        return OA_FAIL(v, "invalid_value", rein_asprintf("%s.type", param),
                       "Invalid value: '%s'. Supported values are: 'text', 'json_object', and "
                       "'json_schema'.",
                       type);
    if (!json_is_object(js))
        return OA_FAIL(v, "missing_required_parameter", rein_asprintf("%s.json_schema", param),
                       "Missing required parameter: '%s.json_schema'.", param);
    if (!name)
        return OA_FAIL(v, "missing_required_parameter",
                       rein_asprintf("%s%s.name", param, nested ? ".json_schema" : ""),
                       "Missing required parameter: '%s%s.name'.", param,
                       nested ? ".json_schema" : "");
    if (!name_ok(name, 64))
        return OA_FAIL(v, "invalid_value",
                       rein_asprintf("%s%s.name", param, nested ? ".json_schema" : ""),
                       "Invalid '%s%s.name': string does not match pattern. Expected a string "
                       "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                       param, nested ? ".json_schema" : "");
    if (json_object_get(js, "schema") && !json_is_object(json_object_get(js, "schema")))
        return OA_FAIL(v, "invalid_type",
                       rein_asprintf("%s%s.schema", param, nested ? ".json_schema" : ""),
                       "Invalid type for '%s%s.schema': expected an object, but got %s instead.",
                       param, nested ? ".json_schema" : "", oa_type(json_object_get(js, "schema")));
    if (json_is_true(json_object_get(js, "strict")))
        return rs_strict_schema(json_object_get(js, "schema"), name, v);
    return true;
}

/* Anthropic's structured outputs: every object schema says additionalProperties false. */
static bool an_closed_objects(const json_t *s)
{
    static const char *const subs[] = {"items", "anyOf",       "allOf",
                                       "$defs", "definitions", "properties"};
    const char *type = str_of(s, "type"), *k;
    json_t *x;
    size_t i;

    if (!json_is_object(s))
        return true;
    if ((json_object_get(s, "properties") || (type && strcmp(type, "object") == 0)) &&
        !json_is_false(json_object_get(s, "additionalProperties")))
        return false;
    for (size_t j = 0; j < REIN_ARRAY_SIZE(subs); j++) {
        const json_t *sub = json_object_get(s, subs[j]);
        if (json_is_array(sub)) {
            json_array_foreach(sub, i, x)
            {
                if (!an_closed_objects(x))
                    return false;
            }
        } else if (j >= 3) {
            json_object_foreach((json_t *)sub, k, x)
            {
                if (!an_closed_objects(x))
                    return false;
            }
        } else if (!an_closed_objects(sub)) {
            return false;
        }
    }
    return true;
}

/* Anthropic's output_config: format {"type": "json_schema", "schema": {...}} (and effort);
 * OpenAI's response_format is an extra input. */
static bool an_check_output(const json_t *body, struct ms_verdict *v)
{
    const json_t *oc = json_object_get(body, "output_config");
    const json_t *f = json_object_get(oc, "format");
    const char *k;
    json_t *x;

    if (json_object_get(body, "response_format"))
        return AN_FAIL(v, "response_format: Extra inputs are not permitted");
    if (!oc)
        return true;
    if (!json_is_object(oc))
        return AN_FAIL(v, "output_config: Input should be a valid dictionary");
    json_object_foreach((json_t *)oc, k, x)
    {
        if (strcmp(k, "format") != 0 && strcmp(k, "effort") != 0)
            return AN_FAIL(v, "output_config.%s: Extra inputs are not permitted", k);
    }
    if (!f || json_is_null(f))
        return true;
    if (!json_is_object(f))
        return AN_FAIL(v, "output_config.format: Input should be a valid dictionary");
    if (!str_of(f, "type") || strcmp(str_of(f, "type"), "json_schema") != 0)
        return AN_FAIL(v, "output_config.format.type: Input should be 'json_schema'");
    if (!json_is_object(json_object_get(f, "schema")))
        return AN_FAIL(v, "output_config.format.schema: Field required");
    if (!an_closed_objects(json_object_get(f, "schema")))
        return AN_FAIL(v, "output_config.format.schema: For 'object' type, "
                          "'additionalProperties' must be explicitly set to false");
    return true;
}

/* Ollama's format: "json" or a JSON schema. */
static bool ol_check_format(const json_t *f, struct ms_verdict *v)
{
    if (!f || json_is_null(f) || json_is_object(f) ||
        (json_is_string(f) &&
         (strcmp(json_string_value(f), "json") == 0 || json_string_length(f) == 0)))
        return true;
    return OL_FAIL(v, "invalid format: %s; expected \"json\" or a valid JSON schema",
                   rein_json_type_name(f));
}

/* ---- OpenAI Responses ---------------------------------------------------------------- */

/* Strict mode's demand on a function's parameters, checked the way the API words it: every
 * object schema has additionalProperties false and lists all its properties in required. */
static bool rs_strict_schema(const json_t *s, const char *fn, struct ms_verdict *v)
{
    const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    const char *k;
    json_t *p;
    size_t i;

    if (!json_is_object(s))
        return true;
    if (props || (str_of(s, "type") && strcmp(str_of(s, "type"), "object") == 0)) {
        if (!json_is_false(json_object_get(s, "additionalProperties")))
            return OA_FAIL(v, "invalid_function_parameters", rein_strdup("tools"),
                           "Invalid schema for function '%s': In context=(), "
                           "'additionalProperties' is required to be supplied and to be false.",
                           fn);
        json_object_foreach((json_t *)props, k, p)
        {
            bool listed = false;
            json_t *r;
            json_array_foreach(req, i, r)
            {
                if (json_is_string(r) && strcmp(json_string_value(r), k) == 0)
                    listed = true;
            }
            if (!listed)
                return OA_FAIL(v, "invalid_function_parameters", rein_strdup("tools"),
                               "Invalid schema for function '%s': In context=(), 'required' is "
                               "required to be supplied and to be an array including every key "
                               "in properties. Missing '%s'.",
                               fn, k);
            if (!rs_strict_schema(p, fn, v))
                return false;
        }
    }
    return rs_strict_schema(json_object_get(s, "items"), fn, v);
}

static bool rs_check_tools(const json_t *tools, struct ms_verdict *v)
{
    size_t i;
    json_t *t;

    if (tools && !json_is_array(tools))
        return OA_FAIL(v, "invalid_type", rein_strdup("tools"),
                       "Invalid type for 'tools': expected an array, but got %s instead.",
                       oa_type(tools));
    json_array_foreach(tools, i, t)
    {
        const char *type = str_of(t, "type"), *name = str_of(t, "name");
        const json_t *strict = json_object_get(t, "strict");
        if (!type || strcmp(type, "function") != 0)
            continue; /* hosted tools (web_search, file_search, …) */
        if (!name || !name_ok(name, 64))
            return OA_FAIL(v, "invalid_value", rein_asprintf("tools[%zu].name", i),
                           "Invalid 'tools[%zu].name': string does not match pattern. Expected a "
                           "string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                           i);
        if (json_object_get(t, "function"))
            return OA_FAIL(v, "unknown_parameter", rein_asprintf("tools[%zu].function", i),
                           "Unknown parameter: 'tools[%zu].function'.", i);
        /* The API's default is strict. */
        if ((!strict || json_is_true(strict)) &&
            !rs_strict_schema(json_object_get(t, "parameters"), name, v))
            return false;
    }
    return true;
}

/* A function_call_output's output given as content items: input_text with its text,
 * input_image with an image_url (a data: or https URL) or file_id, input_file with file_data
 * (a data: URL) and a filename, or file_id or file_url. */
static bool rs_check_output(const json_t *out, size_t i, struct ms_verdict *v)
{
    size_t j;
    const json_t *it;

    json_array_foreach(out, j, it)
    {
        const char *type = str_of(it, "type"), *url = str_of(it, "image_url");
        const char *data = str_of(it, "file_data");
        bool ok = false;
        if (type && !strcmp(type, "input_text"))
            ok = str_of(it, "text") != NULL;
        else if (type && !strcmp(type, "input_image"))
            ok = (url && (!strncmp(url, "data:image/", 11) || !strncmp(url, "https://", 8))) ||
                 str_of(it, "file_id");
        else if (type && !strcmp(type, "input_file"))
            ok = (data && !strncmp(data, "data:", 5) && str_of(it, "filename")) ||
                 str_of(it, "file_id") || str_of(it, "file_url");
        if (!ok)
            return OA_FAIL(v, "invalid_value", rein_asprintf("input[%zu].output[%zu]", i, j),
                           "Invalid 'input[%zu].output[%zu]': expected input_text, input_image "
                           "or input_file with its data (type %s).",
                           i, j, type ? type : "missing");
    }
    return true;
}

/* A user, system or developer message's content items: input_text, input_image and
 * input_file, as a function_call_output's output takes them. */
static bool rs_check_content(const json_t *content, size_t i, struct ms_verdict *v)
{
    struct ms_verdict inner = {0};

    if (rs_check_output(content, i, &inner))
        return true;
    ms__verdict_release(&inner);
    return OA_FAIL(v, "invalid_value", rein_asprintf("input[%zu].content", i),
                   "Invalid 'input[%zu].content': expected input_text, input_image or input_file "
                   "items with their data.",
                   i);
}

/* The input items: messages, function calls, their outputs, reasoning items. Every output
 * answers a call earlier in the input, and (without previous_response_id) every call is
 * answered, as the API checks. */
static bool rs_check_input(const json_t *body, struct ms_verdict *v)
{
    const json_t *input = json_object_get(body, "input");
    bool chained = json_is_string(json_object_get(body, "previous_response_id"));
    json_t *calls = json_object(), *item;
    const char *k;
    size_t i;
    bool ok = true;

    if (!calls)
        return OA_FAIL(v, NULL, NULL, "out of memory");
    json_array_foreach(input, i, item)
    {
        const char *type = str_of(item, "type"), *role = str_of(item, "role");
        const char *id = str_of(item, "call_id");
        if (!json_is_object(item)) {
            ok = OA_FAIL(v, "invalid_type", rein_asprintf("input[%zu]", i),
                         "Invalid type for 'input[%zu]': expected an object, but got %s "
                         "instead.",
                         i, oa_type(item));
        } else if (!type || strcmp(type, "message") == 0) {
            const json_t *c = json_object_get(item, "content");
            if (!role || (strcmp(role, "user") && strcmp(role, "assistant") &&
                          strcmp(role, "system") && strcmp(role, "developer")))
                ok = OA_FAIL(v, "invalid_value", rein_asprintf("input[%zu].role", i),
                             "Invalid value: '%s'. Supported values are: 'assistant', 'system', "
                             "'developer', and 'user'.",
                             role ? role : "");
            else if (!json_is_string(c) && !json_is_array(c))
                ok =
                    OA_FAIL(v, "missing_required_parameter", rein_asprintf("input[%zu].content", i),
                            "Missing required parameter: 'input[%zu].content'.", i);
            else if (json_is_array(c) && strcmp(role, "assistant") != 0)
                ok = rs_check_content(c, i, v);
        } else if (strcmp(type, "function_call") == 0) {
            if (!id || !str_of(item, "name") || !json_is_string(json_object_get(item, "arguments")))
                ok = OA_FAIL(v, "missing_required_parameter", rein_asprintf("input[%zu]", i),
                             "Missing required parameter: 'input[%zu].call_id', 'name' or "
                             "'arguments'.",
                             i);
            else
                json_object_set_new(calls, id, json_false());
        } else if (strcmp(type, "custom_tool_call") == 0) {
            if (!id || !str_of(item, "name") || !json_is_string(json_object_get(item, "input")))
                ok = OA_FAIL(v, "missing_required_parameter", rein_asprintf("input[%zu]", i),
                             "Missing required parameter: 'input[%zu].call_id', 'name' or "
                             "'input'.",
                             i);
            else
                json_object_set_new(calls, id, json_string("pending"));
        } else if (strcmp(type, "custom_tool_call_output") == 0) {
            /* a custom call's output answers a custom call, a function's a function call */
            if (!id || !json_is_string(json_object_get(calls, id)))
                ok = chained || OA_FAIL(v, NULL, rein_strdup("input"),
                                        "No custom tool call found for custom tool call output "
                                        "with call_id %s.",
                                        id ? id : "");
            else
                json_object_set_new(calls, id, json_string("answered"));
            if (ok && !json_is_string(json_object_get(item, "output")) &&
                !json_is_array(json_object_get(item, "output")))
                ok = OA_FAIL(v, "missing_required_parameter", rein_asprintf("input[%zu].output", i),
                             "Missing required parameter: 'input[%zu].output'.", i);
        } else if (strcmp(type, "function_call_output") == 0) {
            if (!id || !json_is_boolean(json_object_get(calls, id)))
                ok = chained || OA_FAIL(v, NULL, rein_strdup("input"),
                                        "No tool call found for function call output with call_id "
                                        "%s.",
                                        id ? id : "");
            else
                json_object_set_new(calls, id, json_true());
            if (ok && !json_is_string(json_object_get(item, "output")) &&
                !json_is_array(json_object_get(item, "output")))
                ok = OA_FAIL(v, "missing_required_parameter", rein_asprintf("input[%zu].output", i),
                             "Missing required parameter: 'input[%zu].output'.", i);
            if (ok && json_is_array(json_object_get(item, "output")))
                ok = rs_check_output(json_object_get(item, "output"), i, v);
        } else if (strcmp(type, "reasoning") == 0) {
            if (!json_is_array(json_object_get(item, "summary")))
                ok =
                    OA_FAIL(v, "missing_required_parameter", rein_asprintf("input[%zu].summary", i),
                            "Missing required parameter: 'input[%zu].summary'.", i);
        }
        if (!ok)
            break;
    }
    json_object_foreach(calls, k, item)
    {
        if (ok && json_is_false(item))
            ok = OA_FAIL(v, NULL, rein_strdup("input"),
                         "No tool output found for function call %s.", k);
        else if (ok && json_is_string(item) && !strcmp(json_string_value(item), "pending"))
            ok = OA_FAIL(v, NULL, rein_strdup("input"),
                         "No tool output found for custom tool call %s.", k);
    }
    json_decref(calls);
    return ok;
}

static bool rs_check_body(const json_t *body, struct ms_verdict *v)
{
    const json_t *input = json_object_get(body, "input");

    if (!json_is_object(body))
        return OA_FAIL(v, "invalid_type", NULL,
                       "Invalid type for request body: expected an object, but got %s instead.",
                       oa_type(body));
    if (!json_is_string(json_object_get(body, "model")))
        return OA_FAIL(v, "missing_required_parameter", rein_strdup("model"),
                       "Missing required parameter: 'model'.");
    if (!json_is_string(input) && !json_is_array(input))
        return OA_FAIL(v, "invalid_type", rein_strdup("input"),
                       "Invalid type for 'input': expected one of a string or array of input "
                       "items, but got %s instead.",
                       oa_type(input));
    if (json_object_get(body, "messages"))
        return OA_FAIL(v, "unknown_parameter", rein_strdup("messages"),
                       "Unknown parameter: 'messages'.");
    if (json_object_get(body, "stop"))
        return OA_FAIL(v, "unknown_parameter", rein_strdup("stop"), "Unknown parameter: 'stop'.");
    if (json_object_get(body, "response_format"))
        return OA_FAIL(v, "unknown_parameter", rein_strdup("response_format"),
                       "Unsupported parameter: 'response_format'. In the Responses API, this "
                       "parameter has moved to 'text.format'. Try again with the new parameter.");
    if (json_object_get(json_object_get(body, "text"), "format") &&
        !oa_check_format(json_object_get(json_object_get(body, "text"), "format"), false,
                         "text.format", v))
        return false;
    if (json_object_get(body, "max_tokens"))
        return OA_FAIL(v, "unknown_parameter", rein_strdup("max_tokens"),
                       "Unsupported parameter: 'max_tokens'. In the Responses API, this parameter "
                       "has moved to 'max_output_tokens'.");
    if (!oa_check_sampling(
            body, json_string_value(json_object_get(json_object_get(body, "reasoning"), "effort")),
            "reasoning.effort", v))
        return false;
    return rs_check_input(body, v) && rs_check_tools(json_object_get(body, "tools"), v);
}

/* ---- entry --------------------------------------------------------------------------- */

static const char *header(json_t *headers, const char *name)
{
    return json_string_value(json_object_get(headers, name));
}

static bool check_auth(enum ms_format f, json_t *headers, const char *key, struct ms_verdict *v)
{
    const char *auth = header(headers, "authorization");
    const char *xkey = header(headers, "x-api-key");

    if (f == MS_FMT_DASHSCOPE) {
        if (!auth || strncmp(auth, "Bearer ", 7) != 0 || strcmp(auth + 7, key) != 0)
            return fail(v, 401, "", "InvalidApiKey", NULL, "Invalid API-key provided.");
    } else if (f == MS_FMT_OPENAI || f == MS_FMT_RESPONSES) {
        if (!auth || strncmp(auth, "Bearer ", 7) != 0)
            return fail(v, 401, "invalid_request_error", NULL, NULL,
                        "You didn't provide an API key. You need to provide your API key in an "
                        "Authorization header using Bearer auth (i.e. Authorization: Bearer "
                        "YOUR_KEY), or as the password field (with blank username) if you're "
                        "accessing the API from your browser and are prompted for a username. You "
                        "can obtain an API key from https://platform.openai.com/account/api-keys.");
        if (strcmp(auth + 7, key) != 0)
            return fail(v, 401, "invalid_request_error", "invalid_api_key", NULL,
                        "Incorrect API key provided: %.3s****. You can find your API key at "
                        "https://platform.openai.com/account/api-keys.",
                        auth + 7);
    } else if (f == MS_FMT_ANTHROPIC) {
        /* x-api-key, or (as the SDKs from 1.x send a key) Authorization: Bearer. */
        const char *given = xkey;
        if (!given && auth && strncmp(auth, "Bearer ", 7) == 0)
            given = auth + 7;
        if (!given)
            return fail(v, 401, "authentication_error", NULL, NULL, "x-api-key header is required");
        if (strcmp(given, key) != 0)
            return fail(v, 401, "authentication_error", NULL, NULL, "invalid x-api-key");
    }
    return true;
}

/* A version is a date, YYYY-MM-DD; the service refuses anything else (even a repeated one). */
static bool version_ok(const char *ver)
{
    static const char shape[] = "dddd-dd-dd";

    if (strlen(ver) != sizeof(shape) - 1)
        return false;
    for (size_t i = 0; shape[i]; i++) {
        if (shape[i] == 'd' ? (ver[i] < '0' || ver[i] > '9') : ver[i] != shape[i])
            return false;
    }
    return true;
}

static bool an_check_version(json_t *headers, struct ms_verdict *v)
{
    const char *ver = header(headers, "anthropic-version");

    if (!ver)
        return AN_FAIL(v, "anthropic-version: header is required");
    if (!version_ok(ver))
        return AN_FAIL(v, "anthropic-version: \"%s\" is not a valid version", ver);
    return true;
}

bool ms__check_request(enum ms_format f, const char *path, json_t *headers, const char *api_key,
                       bool validate, json_t *body, const char *parse_error, struct ms_verdict *v)
{
    memset(v, 0, sizeof(*v));
    if (f == MS_FMT_GEMINI)
        return (!api_key || ms__gm_check_auth(headers, api_key, v)) &&
               (!validate || (body ? ms__gm_check_body(body, path, v)
                                   : ms__verdict_set(v, 400, "INVALID_ARGUMENT",
                                                     "Invalid JSON payload received.")));
    if (api_key && !check_auth(f, headers, api_key, v))
        return false;
    if (!validate)
        return true;
    if (f == MS_FMT_ANTHROPIC && !an_check_version(headers, v))
        return false;
    if (!body) {
        if (f == MS_FMT_ANTHROPIC)
            return AN_FAIL(v, "The request body is not valid JSON: %s", parse_error);
        if (f == MS_FMT_OLLAMA)
            return OL_FAIL(v, "invalid character in request body: %s", parse_error);
        return OA_FAIL(v, NULL, NULL,
                       "We could not parse the JSON body of your request. (HINT: This likely means "
                       "you aren't using your HTTP library correctly. The OpenAI API expects a "
                       "JSON payload, but what was sent was not valid JSON. If you have trouble "
                       "figuring out how to fix this, please contact us through our help center "
                       "at help.openai.com.)");
    }
    if (f == MS_FMT_ANTHROPIC)
        return an_check_body(body, v);
    if (f == MS_FMT_OLLAMA)
        return ol_check_body(body, v);
    if (f == MS_FMT_DASHSCOPE)
        return ds_check_body(body, v);
    if (f == MS_FMT_GEMINI)
        return ms__gm_check_body(body, path, v);
    if (f == MS_FMT_BEDROCK)
        return ms__bd_path_counts(path) ? ms__bd_check_count(body, v) : ms__bd_check_body(body, v);
    if (f == MS_FMT_RESPONSES)
        return rs_check_body(body, v);
    return oa_check_body(body, v) && ms__compat_check(path, body, v);
}

/* ---- conversation helpers ------------------------------------------------------------ */

rein_err ms__content_text(json_t *content, struct rein_buf *out)
{
    size_t i;
    json_t *blk;
    rein_err rc = REIN_OK;

    if (json_is_string(content))
        return rein_buf_add(out, json_string_value(content), json_string_length(content));
    json_array_foreach(content, i, blk)
    {
        const char *type = str_of(blk, "type");
        if (!rc && out->len)
            rc = rein_buf_addch(out, '\n');
        if (rc)
            break;
        if (json_is_string(blk))
            rc = ms__content_text(blk, out);
        else if (type && strcmp(type, "tool_result") == 0)
            rc = ms__content_text(json_object_get(blk, "content"), out);
        else if (json_is_string(json_object_get(blk, "text")))
            rc = ms__content_text(json_object_get(blk, "text"), out);
    }
    return rc;
}

static bool an_has_results(const json_t *m)
{
    size_t i;
    json_t *blk;

    json_array_foreach(json_object_get(m, "content"), i, blk)
    {
        const char *t = str_of(blk, "type");
        if (t && strcmp(t, "tool_result") == 0)
            return true;
    }
    return false;
}

static const json_t *last_message(json_t *req)
{
    const json_t *msgs = ms__messages_of(req);
    size_t n = json_array_size(msgs);

    return n ? json_array_get(msgs, n - 1) : NULL;
}

const char *ms__last_role(enum ms_format f, json_t *req)
{
    if (f == MS_FMT_GEMINI)
        return ms__gm_last_role(req);
    if (f == MS_FMT_BEDROCK)
        return ms__bd_last_role(req);
    const json_t *m = last_message(req);
    const char *role = str_of(m, "role"), *type = str_of(m, "type");

    if (!role && type) /* a Responses input item */
        return strcmp(type, "function_call_output") == 0 ||
                       strcmp(type, "custom_tool_call_output") == 0
                   ? "tool"
               : strcmp(type, "message") == 0 ? ""
                                              : "assistant";
    if (!role)
        return "";
    if (f == MS_FMT_ANTHROPIC && strcmp(role, "user") == 0 && an_has_results(m))
        return "tool";
    return role;
}

char *ms__last_text(enum ms_format f, json_t *req)
{
    struct rein_buf b;

    if (f == MS_FMT_GEMINI)
        return ms__gm_last_text(req);
    if (f == MS_FMT_BEDROCK)
        return ms__bd_last_text(req);
    rein_buf_init(&b, 0);
    if (ms__content_text(json_object_get(last_message(req), "content"), &b) != REIN_OK)
        rein_buf_reset(&b);
    return rein_buf_detach(&b, NULL);
}

static bool text_contains(json_t *content, const char *needle)
{
    struct rein_buf b;
    bool found;

    rein_buf_init(&b, 0);
    found = ms__content_text(content, &b) == REIN_OK && strstr(b.ptr, needle) != NULL;
    rein_buf_release(&b);
    return found;
}

bool ms__tool_result_contains(enum ms_format f, json_t *req, const char *needle)
{
    const json_t *msgs = ms__messages_of(req);
    size_t n = json_array_size(msgs), i;
    json_t *blk;

    if (f == MS_FMT_GEMINI)
        return ms__gm_tool_result_contains(req, needle);
    if (f == MS_FMT_BEDROCK)
        return ms__bd_tool_result_contains(req, needle);
    if (f == MS_FMT_ANTHROPIC) {
        const json_t *m = last_message(req);
        if (!role_is(m, "user"))
            return false;
        json_array_foreach(json_object_get(m, "content"), i, blk)
        {
            const char *t = str_of(blk, "type");
            if (t && strcmp(t, "tool_result") == 0 &&
                text_contains(json_object_get(blk, "content"), needle))
                return true;
        }
        return false;
    }
    for (i = n; i > 0; i--) {
        const json_t *m = json_array_get(msgs, i - 1);
        const char *type = str_of(m, "type");
        if (role_is(m, "tool")) {
            if (text_contains(json_object_get(m, "content"), needle))
                return true;
        } else if (type && (strcmp(type, "function_call_output") == 0 ||
                            strcmp(type, "custom_tool_call_output") == 0)) { /* Responses */
            if (text_contains(json_object_get(m, "output"), needle))
                return true;
        } else {
            break;
        }
    }
    return false;
}

bool ms__tools_include(enum ms_format f, json_t *req, const char *name)
{
    size_t i;
    json_t *t;

    if (f == MS_FMT_GEMINI)
        return ms__gm_tools_include(req, name);
    if (f == MS_FMT_BEDROCK)
        return ms__bd_tools_include(req, name);
    json_array_foreach(ms__tools_of(req), i, t)
    {
        const char *n = f == MS_FMT_ANTHROPIC || f == MS_FMT_RESPONSES
                            ? str_of(t, "name")
                            : str_of(json_object_get(t, "function"), "name");
        if (n && strcmp(n, name) == 0)
            return true;
    }
    return false;
}
