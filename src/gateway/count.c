/*
 * count.c: the bodies of the token count routes (rein_gateway_count_tokens, gateway.c). A
 * count's body is read as the body its wire's generate route parses, so that the conversion of
 * the history and the tools is the one a real request has (docs/decisions/0094), and the
 * count is answered in the client's shape. The bodies come from the network:
 * fuzz/gateway_request.c drives rein__gw_count_body.
 *
 *   Anthropic  POST /v1/messages/count_tokens          a messages body without max_tokens
 *              -> {"input_tokens": N}
 *   Responses  POST /v1/responses/input_tokens         the create body's members
 *              -> {"object": "response.input_tokens", "input_tokens": N}
 *   Gemini     POST /v1beta/models/MODEL:countTokens   {"contents"} or {"generateContentRequest"}
 *              -> {"totalTokens": N}
 */
#include "gateway/gateway_int.h"

#include <rein/json.h>

#include <string.h>

/* Gemini's CountTokensRequest: the contents alone, or a whole GenerateContentRequest (whose
 * system instruction and tools count too). The model is the URL's; one in the body is taken
 * as Google's endpoint takes it, and not read. */
static rein_err gemini_body(const json_t *body, struct rein_buf *out, struct rein__gw_bad *bad)
{
    const json_t *contents = json_object_get(body, "contents");
    const json_t *inner = json_object_get(body, "generateContentRequest");
    const char *key;
    json_t *v, *made;
    char *text;
    rein_err rc;

    json_object_foreach((json_t *)body, key, v)
    {
        if (strcmp(key, "contents") != 0 && strcmp(key, "generateContentRequest") != 0 &&
            strcmp(key, "model") != 0)
            return rein__gw_bad(bad, key,
                                "Invalid JSON payload received. Unknown name \"%.60s\": Cannot "
                                "find field.",
                                key);
    }
    if (contents && inner)
        return rein__gw_bad(bad, "generateContentRequest",
                            "contents and generateContentRequest cannot both be set");
    if (inner && !json_is_object(inner))
        return rein__gw_bad(bad, "generateContentRequest",
                            "generateContentRequest must be an object");
    if (!contents && !inner)
        return rein__gw_bad(bad, "contents",
                            "countTokens needs contents or a "
                            "generateContentRequest");
    made = inner ? json_incref((json_t *)inner) : json_pack("{sO}", "contents", contents);
    text = made ? rein_json_dumps(made) : NULL;
    json_decref(made);
    rc = text ? rein_buf_add(out, text, strlen(text)) : REIN_ENOMEM;
    rein_free(text);
    return rc;
}

rein_err rein__gw_count_body(enum rein_gateway_api api, const char *body, size_t len,
                             struct rein_buf *out, struct rein__gw_bad *bad)
{
    rein_error err = {0};
    json_t *doc = rein_json_parse(body, len, 0, &err);
    rein_err rc;

    if (!doc && err.code == REIN_ENOMEM)
        return REIN_ENOMEM;
    if (!doc)
        return rein__gw_bad(bad, "", "the request body is not valid JSON: %s", err.msg);
    if (!json_is_object(doc))
        rc = rein__gw_bad(bad, "", "the request body must be a JSON object");
    else if (api == REIN_GATEWAY_GEMINI)
        rc = gemini_body(doc, out, bad);
    else if (api == REIN_GATEWAY_OPENAI)
        rc = rein__gw_bad(bad, "", "the chat completions API has no token count");
    else
        rc = rein_buf_add(out, body, len); /* read by the parser as it came */
    json_decref(doc);
    return rc;
}

rein_err rein__gw_count_answer(enum rein_gateway_api api, int64_t tokens, struct rein_buf *out)
{
    switch (api) {
    case REIN_GATEWAY_RESPONSES:
        return rein_buf_addf(out, "{\"object\":\"response.input_tokens\",\"input_tokens\":%lld}",
                             (long long)tokens);
    case REIN_GATEWAY_GEMINI:
        return rein_buf_addf(out, "{\"totalTokens\":%lld}", (long long)tokens);
    default:
        return rein_buf_addf(out, "{\"input_tokens\":%lld}", (long long)tokens);
    }
}
