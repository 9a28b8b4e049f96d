/*
 * Claude on Vertex AI, the scripted model server's side (model_server_int.h): POST
 * /v1/projects/P/locations/L/publishers/anthropic/models/MODEL:rawPredict and
 * :streamRawPredict, and .../models/count-tokens:rawPredict.
 *
 * What Vertex refuses itself comes back in Google's shape, {"error": {code, message, status}}:
 * a request without a bearer token (401 UNAUTHENTICATED), or with another token than the
 * scenario's. The body is then Anthropic's Messages body with Vertex's two differences (the
 * Claude on Vertex AI pages of Anthropic and Google): the model is the URL's, so a body that
 * names one is refused, and "anthropic_version" must be "vertex-2023-10-16"; the rest is checked
 * as the Messages API checks it, with the URL's model standing for the body's. Those refusals
 * are Anthropic's own (invalid_request_error), as Vertex passes them on. The count takes the
 * Messages count's members, the model among them (it has no model in its URL).
 */
#include "model_server_int.h"

#include <stdio.h>
#include <string.h>

#define VX_VERSION "vertex-2023-10-16"
#define VX_MODELS  "/publishers/anthropic/models/"

static bool vx_ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);

    return n >= m && strcmp(s + n - m, tail) == 0;
}

bool ms__vx_path(const char *path)
{
    return strncmp(path, "/v1/projects/", 13) == 0 && strstr(path, VX_MODELS) &&
           (vx_ends_with(path, ":rawPredict") || vx_ends_with(path, ":streamRawPredict"));
}

bool ms__vx_path_counts(const char *path)
{
    return vx_ends_with(path, VX_MODELS "count-tokens:rawPredict");
}

bool ms__vx_path_streams(const char *path)
{
    return vx_ends_with(path, ":streamRawPredict");
}

/* Google's 401 for a missing or wrong token. Returns false. */
static bool vx_unauthenticated(struct ms_verdict *v, bool *google)
{
    *google = true;
    return ms__verdict_set(v, 401, "UNAUTHENTICATED",
                           "Request had invalid authentication credentials. Expected OAuth 2 "
                           "access token, login cookie or other valid authentication credential. "
                           "See https://developers.google.com/identity/sign-in/web/"
                           "devconsole-project.");
}

static bool vx_bad(struct ms_verdict *v, const char *message)
{
    return ms__verdict_set(v, 400, "invalid_request_error", message);
}

/* The count's body: the Messages count's members (and anthropic_version, which the SDKs add
 * to every body), the model among them. */
static bool vx_check_count(json_t *body, struct ms_verdict *v)
{
    static const char *const known[] = {"model",       "messages",         "system",
                                        "tools",       "tool_choice",      "thinking",
                                        "mcp_servers", "anthropic_version"};
    const char *k;
    json_t *val;
    char msg[160];

    json_object_foreach(body, k, val)
    {
        bool ok = false;
        for (size_t i = 0; i < REIN_ARRAY_SIZE(known) && !ok; i++)
            ok = strcmp(k, known[i]) == 0;
        if (!ok) {
            snprintf(msg, sizeof(msg), "%.60s: Extra inputs are not permitted", k);
            return vx_bad(v, msg);
        }
    }
    if (!json_is_string(json_object_get(body, "model")))
        return vx_bad(v, "model: Field required");
    if (!json_is_array(json_object_get(body, "messages")))
        return vx_bad(v, "messages: Field required");
    return true;
}

/* A Messages body: Vertex's differences, then the Messages API's own checks on a copy that has
 * the URL's model and no anthropic_version. */
static bool vx_check_messages(const char *path, json_t *body, struct ms_verdict *v)
{
    const char *ver = json_string_value(json_object_get(body, "anthropic_version"));
    char model[256];
    json_t *as_messages;
    bool ok;

    if (json_object_get(body, "model"))
        return vx_bad(v, "model: Extra inputs are not permitted");
    if (!json_object_get(body, "anthropic_version"))
        return vx_bad(v, "anthropic_version: Field required");
    if (!ver || strcmp(ver, VX_VERSION) != 0)
        return vx_bad(v, "anthropic_version: Input should be '" VX_VERSION "'");
    if (!ms__gm_model_of_path(path, model, sizeof(model)))
        return vx_bad(v, "the URL names no model");
    as_messages = json_deep_copy(body);
    if (!as_messages || json_object_set_new(as_messages, "model", json_string(model)) ||
        json_object_del(as_messages, "anthropic_version")) {
        json_decref(as_messages);
        return ms__verdict_set(v, 500, "api_error", "out of memory");
    }
    ok = ms__an_check_body(as_messages, v);
    json_decref(as_messages);
    return ok;
}

bool ms__vx_check(json_t *headers, const char *key, const char *path, bool validate, json_t *body,
                  const char *parse_error, struct ms_verdict *v, bool *google)
{
    const char *auth = json_string_value(json_object_get(headers, "authorization"));
    char msg[300];

    memset(v, 0, sizeof(*v));
    *google = false;
    /* Vertex wants a token whatever the scenario: it has no keyless access. */
    if (!auth || strncmp(auth, "Bearer ", 7) != 0 || !auth[7])
        return vx_unauthenticated(v, google);
    if (key && strcmp(auth + 7, key) != 0)
        return vx_unauthenticated(v, google);
    if (!validate)
        return true;
    if (!json_is_object(body)) {
        snprintf(msg, sizeof(msg), "The request body is not valid JSON: %.200s",
                 body ? "not an object" : parse_error);
        return vx_bad(v, msg);
    }
    return ms__vx_path_counts(path) ? vx_check_count(body, v) : vx_check_messages(path, body, v);
}

rein_err ms__vx_count(struct ms_body *b, const struct content *k)
{
    b->content_type = "application/json";
    b->chunked = false;
    return rein_buf_addf(&b->buf, "{\"input_tokens\":%lld}", (long long)k->in_tokens) ||
                   ms__body_mark(b)
               ? REIN_ENOMEM
               : REIN_OK;
}
