/*
 * The rules of the OpenAI-compatible providers (decision 0105) in the scripted model server: a
 * chat completions request whose model or path names one of them is checked, after OpenAI's
 * own checks, against what that provider's API refuses, in its own words:
 *
 *   Mistral (a mistral-, magistral-, codestral-, devstral-, ministral- or pixtral- model): call
 *   ids must be [a-zA-Z0-9]{9}, no user message right after a tool message, no tool message
 *   right after a user message, no assistant message last without "prefix": true; a member its
 *   API does not define (in the body or a message) is a 422 with pydantic's detail list as
 *   the message; its errors are flat {"object": "error", "message", "type", "param", "code"}.
 *   Its replies (model_server_wire.c) carry usage without being asked, and a reasoning reply
 *   is a content array of "thinking" and "text" chunks.
 *   DeepSeek (deepseek-reasoner, deepseek-v4-*, or "thinking": {"type": "enabled"}): in thinking
 *   mode an assistant message with tool calls must carry its reasoning_content.
 *   Moonshot (kimi-k2.5 on and kimi-k2-thinking*, thinking unless "thinking": {"type":
 *   "disabled"}): an assistant message with tool calls must carry its reasoning_content, which
 *   K2.5 on count as missing when empty.
 *   xAI (grok-3-mini, grok-4*, grok-code* but -non-reasoning ones): presence_penalty,
 *   frequency_penalty and stop are refused, and reasoning_effort but by grok-3-mini and 4.3 on.
 *   Groq (the path under /openai/v1, Groq's base URL): logprobs, logit_bias, top_logprobs,
 *   messages[].name and n other than 1 are refused.
 */
#include "model_server_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A refusal with the provider's status, type and code; flat for Mistral's shape. */
static bool refuse(struct ms_verdict *v, bool flat, const char *type, const char *code,
                   const char *fmt, ...) REIN_PRINTF(5, 6);

static bool refuse(struct ms_verdict *v, bool flat, const char *type, const char *code,
                   const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    (void)ms__vfail(v, 400, type, code, NULL, fmt, ap);
    va_end(ap);
    v->flat = flat;
    return false;
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool is_mistral(const char *m)
{
    static const char *const families[] = {"mistral-",   "magistral-", "codestral-",  "devstral-",
                                           "ministral-", "pixtral-",   "open-mistral"};

    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
        if (starts(m, families[i]))
            return true;
    return false;
}

static const char *role_of(const json_t *m)
{
    const char *r = json_string_value(json_object_get(m, "role"));
    return r ? r : "";
}

bool ms__is_mistral(const char *model)
{
    return model && !strchr(model, '/') && is_mistral(model);
}

/*
 * Mistral's request is closed (pydantic's extra="forbid", ChatCompletionRequest and the
 * message types of its OpenAPI document): a member it does not define is a 422 whose message
 * is pydantic's list, {"detail": [{"type": "extra_forbidden", "loc": [...], "msg": "Extra
 * inputs are not permitted", "input": ...}]}, and type invalid_request_error.
 */
static const char *const mistral_request[] = {"model",
                                              "messages",
                                              "tools",
                                              "tool_choice",
                                              "parallel_tool_calls",
                                              "stream",
                                              "max_tokens",
                                              "temperature",
                                              "top_p",
                                              "stop",
                                              "n",
                                              "random_seed",
                                              "response_format",
                                              "presence_penalty",
                                              "frequency_penalty",
                                              "metadata",
                                              "prediction",
                                              "prompt_mode",
                                              "safe_prompt",
                                              "guardrails",
                                              "reasoning_effort",
                                              "prompt_cache_key",
                                              "service_tier",
                                              NULL};
static const char *const mistral_system_user[] = {"role", "content", NULL};
static const char *const mistral_assistant[] = {"role", "content", "tool_calls", "prefix", NULL};
static const char *const mistral_tool[] = {"role", "content", "tool_call_id", "name", NULL};

static bool member_of(const char *const *list, const char *key)
{
    for (size_t i = 0; list[i]; i++)
        if (!strcmp(list[i], key))
            return true;
    return false;
}

/* The 422 for the member at loc (a JSON array's text, without its brackets). */
static bool extra_forbidden(struct ms_verdict *v, const char *loc, const json_t *input)
{
    char *in = json_dumps(input, JSON_ENCODE_ANY | JSON_COMPACT);

    (void)refuse(v, true, "invalid_request_error", NULL,
                 "{\"detail\":[{\"type\":\"extra_forbidden\",\"loc\":[%s],\"msg\":\"Extra "
                 "inputs are not permitted\",\"input\":%s}]}",
                 loc, in ? in : "null");
    free(in);
    v->status = 422;
    v->code[0] = '\0';
    v->message_json = true;
    return false;
}

static bool mistral_members(const json_t *body, struct ms_verdict *v)
{
    const char *key, *role;
    const json_t *val, *m;
    char loc[300];
    size_t i;

    json_object_foreach((json_t *)body, key, val)
    {
        if (member_of(mistral_request, key))
            continue;
        snprintf(loc, sizeof(loc), "\"body\",\"%.200s\"", key);
        return extra_forbidden(v, loc, val);
    }
    json_array_foreach(json_object_get(body, "messages"), i, m)
    {
        const char *const *allowed;
        role = role_of(m);
        allowed = !strcmp(role, "assistant") ? mistral_assistant
                  : !strcmp(role, "tool")    ? mistral_tool
                                             : mistral_system_user;
        json_object_foreach((json_t *)m, key, val)
        {
            if (member_of(allowed, key))
                continue;
            snprintf(loc, sizeof(loc), "\"body\",\"messages\",%zu,\"%.20s\",\"%.200s\"", i, role,
                     key);
            return extra_forbidden(v, loc, val);
        }
    }
    return true;
}

static bool id_ok(const char *id)
{
    size_t n = 0;

    while (id[n] && isalnum((unsigned char)id[n]))
        n++;
    return n == 9 && id[n] == '\0';
}

#define MISTRAL_ID_FAIL(v, id)                                                                     \
    refuse((v), true, "invalid_function_call", "3280",                                             \
           "Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", (id))

static bool mistral_check(const json_t *msgs, struct ms_verdict *v)
{
    const char *prev = "";
    size_t i, j, n = json_array_size(msgs);
    json_t *m, *c;

    json_array_foreach(msgs, i, m)
    {
        const char *role = role_of(m);
        if (!strcmp(role, "tool")) {
            const char *id = json_string_value(json_object_get(m, "tool_call_id"));
            if (id && !id_ok(id))
                return MISTRAL_ID_FAIL(v, id);
        }
        json_array_foreach(json_object_get(m, "tool_calls"), j, c)
        {
            const char *id = json_string_value(json_object_get(c, "id"));
            if (id && !id_ok(id))
                return MISTRAL_ID_FAIL(v, id);
        }
        if ((!strcmp(prev, "tool") && !strcmp(role, "user")) ||
            (!strcmp(prev, "user") && !strcmp(role, "tool")))
            return refuse(v, true, "invalid_request_message_order", "3230",
                          "Unexpected role '%s' after role '%s'", role, prev);
        prev = role;
    }
    m = json_array_get(msgs, n ? n - 1 : 0);
    if (n && !strcmp(role_of(m), "assistant") && !json_is_true(json_object_get(m, "prefix")))
        return refuse(v, true, "invalid_request_message_order", "3230",
                      "Expected last role User or Tool (or Assistant with prefix True) for "
                      "serving but got assistant");
    return true;
}

/* DeepSeek's thinking mode: the reasoner, V4 (thinking unless disabled), or asked for. */
static bool deepseek_thinks(const char *m, const json_t *body)
{
    const char *type =
        json_string_value(json_object_get(json_object_get(body, "thinking"), "type"));

    if (type)
        return strcmp(type, "enabled") == 0;
    return starts(m, "deepseek-reasoner") || starts(m, "deepseek-v4");
}

/* The index of the first assistant message with tool calls whose reasoning_content is missing
 * (or empty, when empty counts as missing), or -1: what DeepSeek and Kimi refuse while they
 * think. */
static long tool_turn_without_reasoning(const json_t *body, bool empty_is_missing)
{
    size_t i;
    json_t *msg;

    json_array_foreach(json_object_get(body, "messages"), i, msg)
    {
        const json_t *rc = json_object_get(msg, "reasoning_content");
        if (!strcmp(role_of(msg), "assistant") &&
            json_array_size(json_object_get(msg, "tool_calls")) &&
            (!json_is_string(rc) || (empty_is_missing && !json_string_length(rc))))
            return (long)i;
    }
    return -1;
}

static bool deepseek_check(const char *m, const json_t *body, struct ms_verdict *v)
{
    if (!deepseek_thinks(m, body))
        return true;
    if (tool_turn_without_reasoning(body, false) >= 0)
        return refuse(v, false, "invalid_request_error", "invalid_request_error",
                      "The `reasoning_content` in the thinking mode must be passed back to "
                      "the API.");
    if (starts(m, "deepseek-reasoner") &&
        (json_object_get(body, "logprobs") || json_object_get(body, "top_logprobs")))
        return refuse(v, false, "invalid_request_error", "invalid_request_error",
                      "deepseek-reasoner does not support the parameter `%s`",
                      json_object_get(body, "logprobs") ? "logprobs" : "top_logprobs");
    return true;
}

static bool kimi_check(const char *m, const json_t *body, struct ms_verdict *v)
{
    const char *type =
        json_string_value(json_object_get(json_object_get(body, "thinking"), "type"));
    bool k2x = starts(m, "kimi-k2."), named = strstr(m, "thinking") != NULL;
    long i;

    if ((!k2x && !named) || (type && !strcmp(type, "disabled")))
        return true;
    if ((i = tool_turn_without_reasoning(body, k2x)) >= 0)
        return refuse(v, false, "invalid_request_error", NULL,
                      "thinking is enabled but reasoning_content is missing in assistant tool "
                      "call message at index %ld",
                      i);
    return true;
}

static bool grok_check(const char *m, const json_t *body, struct ms_verdict *v)
{
    static const char *const refused[] = {"presence_penalty", "frequency_penalty", "stop"};
    bool reasons = (starts(m, "grok-3-mini") || starts(m, "grok-4") || starts(m, "grok-code")) &&
                   !strstr(m, "non-reasoning");
    bool effort = starts(m, "grok-3-mini") ||
                  (starts(m, "grok-4.") && m[7] >= '3' && m[7] <= '9' && m[8] != '0');

    if (!reasons)
        return true;
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        if (json_object_get(body, refused[i]))
            return refuse(v, false, "invalid_request_error", NULL,
                          "Argument not supported on this model: %s", refused[i]);
    if (!effort && json_object_get(body, "reasoning_effort"))
        return refuse(v, false, "invalid_request_error", NULL,
                      "Model %s does not support parameter reasoningEffort.", m);
    return true;
}

static bool groq_check(const json_t *body, struct ms_verdict *v)
{
    static const char *const refused[] = {"logprobs", "logit_bias", "top_logprobs"};
    const json_t *n = json_object_get(body, "n");
    size_t i;
    json_t *m;

    for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        if (json_object_get(body, refused[i]))
            return refuse(v, false, "invalid_request_error", NULL, "property '%s' is unsupported",
                          refused[i]);
    if (n && json_integer_value(n) != 1)
        return refuse(v, false, "invalid_request_error", NULL, "'n' : number must be at most 1");
    json_array_foreach(json_object_get(body, "messages"), i, m)
    {
        if (json_object_get(m, "name"))
            return refuse(v, false, "invalid_request_error", NULL,
                          "'messages.%zu' : for 'role:%s' the following must be satisfied"
                          "[('messages.%zu.name' : property 'name' is unsupported)]",
                          i, role_of(m), i);
    }
    return true;
}

bool ms__compat_check(const char *path, const json_t *body, struct ms_verdict *v)
{
    const char *model = json_string_value(json_object_get(body, "model"));
    const char *m;

    if (path && starts(path, "/openai/v1/") && !groq_check(body, v))
        return false;
    if (!model)
        return true;
    m = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    /* Mistral's own model ids have no "org/": through OpenRouter only the ids and the order
     * of messages reach Mistral as they were sent */
    if (is_mistral(m))
        return (!ms__is_mistral(model) || mistral_members(body, v)) &&
               mistral_check(json_object_get(body, "messages"), v);
    if (starts(m, "deepseek-"))
        return deepseek_check(m, body, v);
    if (starts(m, "grok-"))
        return grok_check(m, body, v);
    if (starts(m, "kimi-"))
        return kimi_check(m, body, v);
    return true;
}
