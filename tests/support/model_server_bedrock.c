/*
 * The Bedrock side of the scripted model server (model_server_int.h): POST
 * /model/MODEL/converse, /model/MODEL/converse-stream and /model/MODEL/count-tokens.
 *
 * Authentication as Bedrock checks it. The scenario's key is "ACCESS_KEY_ID:SECRET": a request
 * must carry an AWS Signature Version 4 made with them, which is recomputed here from what
 * arrived (the canonical request from the method, the path encoded once more, the signed
 * headers' values, the SHA-256 of the body; the HMAC chain over the credential scope), with
 * OpenSSL's SHA-256 and HMAC, independently of rein's signer. A bearer token equal to the whole
 * key is taken too (Bedrock API keys). Failures answer 403 with Bedrock's exception names and
 * texts (MissingAuthenticationTokenException, UnrecognizedClientException,
 * InvalidSignatureException, a date too far off).
 *
 * CountTokens (POST /model/MODEL/count-tokens) is checked the same way: the signature, and the
 * body strictly as its API reference has it ({"input": {"converse": {messages, system,
 * toolConfig, additionalModelRequestFields}}}, the messages and tools as Converse checks them,
 * or {"input": {"invokeModel": {"body": BASE64}}}); it answers {"inputTokens": N} with the
 * reply's usage.input_tokens, or a scripted error as Converse's are.
 *
 * Requests are validated as Converse does (ValidationException): alternating roles starting
 * with user, non-empty content of known blocks, text that is not blank, toolUse input objects,
 * every toolUse of an assistant turn answered by a toolResult in the next user turn, a
 * toolConfig whenever tool blocks appear, tool names and inputSchema.json objects, no unknown
 * members. Replies are Converse bodies or the binary event stream (eventstream messages with
 * :message-type, :event-type and :content-type headers, both CRCs from zlib), errors bodies
 * {"message"} with the type in x-amzn-ErrorType, in-stream errors exception messages.
 */
#include "model_server_int.h"

#include <ctype.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

static const char *bd_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Test support builds strings in memory it does not run out of: a failed append only shortens
 * what is compared, and the comparison then fails. */
static void bd_ok(rein_err rc)
{
    (void)rc;
}

static bool bd_fail(struct ms_verdict *v, int status, const char *type, const char *fmt, ...)
    REIN_PRINTF(4, 5);

static bool bd_fail(struct ms_verdict *v, int status, const char *type, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ms__verdict_set(v, status, type, msg);
}

/* ---- SigV4, recomputed ------------------------------------------------------------------ */

static void bd_hex(const unsigned char *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void bd_uri_encode(struct rein_buf *b, const char *s, bool slash)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[4];
        if (isalnum(c) || strchr("-_.~", c) || (slash && c == '/')) {
            bd_ok(rein_buf_addch(b, (char)c));
        } else {
            snprintf(esc, sizeof(esc), "%%%02X", c);
            bd_ok(rein_buf_add(b, esc, 3));
        }
    }
}

/* Finds "name=" in the Authorization value and copies its value (up to ',' or end). */
static bool auth_part(const char *auth, const char *name, char *out, size_t size)
{
    const char *p = strstr(auth, name);
    size_t n;

    if (!p)
        return false;
    p += strlen(name);
    n = strcspn(p, ", ");
    if (n >= size)
        return false;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

/* The value of a received header, its runs of blanks made one space, trimmed. */
static void canon_value(const char *v, struct rein_buf *b)
{
    bool space = false;

    while (*v == ' ' || *v == '\t')
        v++;
    for (; *v; v++) {
        if (*v == ' ' || *v == '\t') {
            space = true;
            continue;
        }
        if (space)
            bd_ok(rein_buf_addch(b, ' '));
        space = false;
        bd_ok(rein_buf_addch(b, *v));
    }
}

bool ms__bd_check_auth(json_t *headers, const char *path, const char *body, size_t body_len,
                       const char *key, struct ms_verdict *v)
{
    const char *auth = bd_str(headers, "authorization"), *date = bd_str(headers, "x-amz-date");
    char id[128], secret[256], cred[256], signed_h[512], sig[80], want[65], scope_date[16];
    char region[64], service[64], hash[65], *colon = strchr(key, ':'), *tok, *save = NULL;
    unsigned char d[32], k1[32], k2[32];
    unsigned int dl;
    struct rein_buf canon, sts;
    struct tm tm;
    bool ok;

    if (auth && !strncmp(auth, "Bearer ", 7) && !strcmp(auth + 7, key))
        return true; /* a Bedrock API key */
    if (!colon || (size_t)(colon - key) >= sizeof(id))
        return bd_fail(v, 500, "InternalServerException", "scenario key must be ID:SECRET");
    snprintf(id, sizeof(id), "%.*s", (int)(colon - key), key);
    snprintf(secret, sizeof(secret), "AWS4%s", colon + 1);
    if (!auth || strncmp(auth, "AWS4-HMAC-SHA256 ", 17) != 0)
        return bd_fail(v, 403, "MissingAuthenticationTokenException",
                       "Missing Authentication Token");
    if (!auth_part(auth, "Credential=", cred, sizeof(cred)) ||
        !auth_part(auth, "SignedHeaders=", signed_h, sizeof(signed_h)) ||
        !auth_part(auth, "Signature=", sig, sizeof(sig)))
        return bd_fail(v, 400, "IncompleteSignatureException",
                       "Authorization header requires 'Credential', 'Signature' and "
                       "'SignedHeaders' parameters. Authorization=%s",
                       auth);
    if (sscanf(cred, "%127[^/]/%15[^/]/%63[^/]/%63[^/]/aws4_request", id + 0, scope_date, region,
               service) != 4 ||
        strncmp(key, id, strlen(id)) != 0 || key[strlen(id)] != ':')
        return bd_fail(v, 403, "UnrecognizedClientException",
                       "The security token included in the request is invalid.");
    if (strcmp(service, "bedrock") != 0)
        return bd_fail(v, 403, "InvalidSignatureException",
                       "Credential should be scoped to correct service: 'bedrock'.");
    if (!date || strlen(date) != 16 || strncmp(date, scope_date, 8) != 0)
        return bd_fail(v, 403, "InvalidSignatureException",
                       "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of "
                       "date from HTTP: '%s' != '%.8s', from '%s'.",
                       scope_date, date ? date : "", date ? date : "");
    memset(&tm, 0, sizeof(tm));
    if (sscanf(date, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) != 6)
        return bd_fail(v, 403, "InvalidSignatureException", "X-Amz-Date is malformed");
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    if (llabs((long long)(timegm(&tm) - time(NULL))) > 15 * 60)
        return bd_fail(v, 403, "InvalidSignatureException",
                       "Signature expired: %s is now earlier or later than the 15 min window",
                       date);
    if (bd_str(headers, "x-amz-security-token") && !strstr(signed_h, "x-amz-security-token"))
        return bd_fail(v, 403, "InvalidSignatureException",
                       "x-amz-security-token is present but not signed");
    if (!strstr(signed_h, "host") || !strstr(signed_h, "x-amz-date"))
        return bd_fail(v, 403, "InvalidSignatureException",
                       "host and x-amz-date must be signed (SignedHeaders=%s)", signed_h);
    /* The canonical request of what arrived: the path decoded by the HTTP server, encoded as
     * the client must have sent it, then once more as SigV4 signs it. */
    rein_buf_init(&canon, 0);
    rein_buf_init(&sts, 0);
    bd_ok(rein_buf_adds(&canon, "POST\n"));
    {
        struct rein_buf once;
        rein_buf_init(&once, 0);
        bd_uri_encode(&once, path, true);
        bd_uri_encode(&canon, once.ptr ? once.ptr : "", true);
        rein_buf_release(&once);
    }
    bd_ok(rein_buf_adds(&canon, "\n\n"));
    {
        char names[512];
        snprintf(names, sizeof(names), "%s", signed_h);
        for (tok = strtok_r(names, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
            const char *val = bd_str(headers, tok);
            bd_ok(rein_buf_adds(&canon, tok));
            bd_ok(rein_buf_addch(&canon, ':'));
            canon_value(val ? val : "", &canon);
            bd_ok(rein_buf_addch(&canon, '\n'));
        }
    }
    bd_ok(rein_buf_addch(&canon, '\n'));
    bd_ok(rein_buf_adds(&canon, signed_h));
    bd_ok(rein_buf_addch(&canon, '\n'));
    SHA256((const unsigned char *)body, body_len, d);
    bd_hex(d, 32, hash);
    bd_ok(rein_buf_adds(&canon, hash));
    SHA256((const unsigned char *)canon.ptr, canon.len, d);
    bd_hex(d, 32, hash);
    bd_ok(rein_buf_addf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", date, scope_date,
                        region, service, hash));
    HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)scope_date,
         strlen(scope_date), k1, &dl);
    HMAC(EVP_sha256(), k1, 32, (const unsigned char *)region, strlen(region), k2, &dl);
    HMAC(EVP_sha256(), k2, 32, (const unsigned char *)service, strlen(service), k1, &dl);
    HMAC(EVP_sha256(), k1, 32, (const unsigned char *)"aws4_request", 12, k2, &dl);
    HMAC(EVP_sha256(), k2, 32, (const unsigned char *)sts.ptr, sts.len, d, &dl);
    bd_hex(d, 32, want);
    ok = strcmp(want, sig) == 0;
    rein_buf_release(&canon);
    rein_buf_release(&sts);
    if (!ok)
        return bd_fail(v, 403, "InvalidSignatureException",
                       "The request signature we calculated does not match the signature you "
                       "provided. Check your AWS Secret Access Key and signing method. Consult "
                       "the service documentation for details.");
    return true;
}

/* ---- the Converse request ----------------------------------------------------------------- */

static bool bd_name_ok(const char *n)
{
    size_t len = n ? strlen(n) : 0;

    if (len == 0 || len > 64)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!isalnum((unsigned char)n[i]) && n[i] != '_' && n[i] != '-')
            return false;
    }
    return true;
}

/* An image or document block of a tool result, as ImageBlock and DocumentBlock take them
 * (true for any other block). */
static bool bd_media_ok(const json_t *item)
{
    static const char *const images[] = {"png", "jpeg", "gif", "webp"};
    static const char *const docs[] = {"pdf",  "csv",  "doc", "docx", "xls",
                                       "xlsx", "html", "txt", "md"};
    const json_t *img = json_object_get(item, "image"), *doc = json_object_get(item, "document");
    const json_t *b = img ? img : doc;
    const char *format = bd_str(b, "format");
    bool known = false;

    if (!b)
        return true;
    for (size_t i = 0; format && img && i < REIN_ARRAY_SIZE(images); i++)
        known = known || !strcmp(format, images[i]);
    for (size_t i = 0; format && doc && i < REIN_ARRAY_SIZE(docs); i++)
        known = known || !strcmp(format, docs[i]);
    return known && bd_str(json_object_get(b, "source"), "bytes") && (img || bd_str(doc, "name"));
}

static bool bd_block_ok(const json_t *b, size_t m, size_t i, const char *role, json_t *uses,
                        json_t *results, bool *tools_used, struct ms_verdict *v)
{
    static const char *const kinds[] = {"text",         "image",      "document",
                                        "video",        "toolUse",    "toolResult",
                                        "guardContent", "cachePoint", "reasoningContent"};
    const json_t *t = json_object_get(b, "text"), *tu = json_object_get(b, "toolUse");
    const json_t *tr = json_object_get(b, "toolResult");
    int n = 0;

    for (size_t k = 0; k < REIN_ARRAY_SIZE(kinds); k++)
        n += json_object_get(b, kinds[k]) != NULL;
    if (n != 1 || json_object_size(b) != 1)
        return bd_fail(v, 400, "ValidationException",
                       "The content block at messages.%zu.content.%zu must hold exactly one "
                       "member of ContentBlock",
                       m, i);
    if (t && (!json_is_string(t) || !json_string_value(t)[strspn(json_string_value(t), " \n\t")]))
        return bd_fail(v, 400, "ValidationException",
                       "The text field in the ContentBlock object at messages.%zu.content.%zu is "
                       "blank. Add text to the text field, and try again.",
                       m, i);
    if ((json_object_get(b, "image") || json_object_get(b, "document")) &&
        (strcmp(role, "user") != 0 || !bd_media_ok(b)))
        return bd_fail(v, 400, "ValidationException",
                       "messages.%zu.content.%zu: an image needs format png, jpeg, gif or webp "
                       "and source.bytes, a document a format, a name and source.bytes, in a "
                       "user message",
                       m, i);
    if (tu) {
        if (strcmp(role, "assistant") != 0 || !bd_str(tu, "toolUseId") ||
            !bd_name_ok(bd_str(tu, "name")) || !json_is_object(json_object_get(tu, "input")))
            return bd_fail(v, 400, "ValidationException",
                           "messages.%zu.content.%zu.toolUse: toolUseId, a valid name and an "
                           "input object are required in an assistant message",
                           m, i);
        json_array_append_new(uses, json_string(bd_str(tu, "toolUseId")));
        *tools_used = true;
    }
    if (tr) {
        const json_t *c = json_object_get(tr, "content"), *st = json_object_get(tr, "status");
        size_t k;
        json_t *item;
        if (strcmp(role, "user") != 0 || !bd_str(tr, "toolUseId") || !json_is_array(c) ||
            (st && (!json_is_string(st) || (strcmp(json_string_value(st), "success") &&
                                            strcmp(json_string_value(st), "error")))))
            return bd_fail(v, 400, "ValidationException",
                           "messages.%zu.content.%zu.toolResult: a user message's toolResult "
                           "needs toolUseId, a content list and status success or error",
                           m, i);
        json_array_foreach(c, k, item)
        {
            const json_t *txt = json_object_get(item, "text");
            if (!bd_media_ok(item))
                return bd_fail(v, 400, "ValidationException",
                               "messages.%zu.content.%zu.toolResult.content.%zu: an image needs "
                               "format png, jpeg, gif or webp and source.bytes; a document a "
                               "format, a name and source.bytes",
                               m, i, k);
            if (json_object_size(item) != 1 ||
                (!json_is_string(txt) && !json_object_get(item, "json") &&
                 !json_object_get(item, "image") && !json_object_get(item, "document")) ||
                (txt && !json_string_value(txt)[0]))
                return bd_fail(v, 400, "ValidationException",
                               "messages.%zu.content.%zu.toolResult.content.%zu: one of text "
                               "(not blank), json, image or document",
                               m, i, k);
        }
        json_array_append_new(results, json_string(bd_str(tr, "toolUseId")));
        *tools_used = true;
    }
    return true;
}

static bool bd_same_ids(const json_t *a, const json_t *b)
{
    size_t i, j;
    json_t *x, *y;

    if (json_array_size(a) != json_array_size(b))
        return false;
    json_array_foreach(a, i, x)
    {
        bool found = false;
        json_array_foreach(b, j, y)
        {
            found |= json_equal(x, y);
        }
        if (!found)
            return false;
    }
    return true;
}

static bool bd_messages_ok(const json_t *msgs, bool *tools_used, struct ms_verdict *v)
{
    json_t *prev_uses = json_array(), *uses = json_array(), *results = json_array(), *m, *b;
    size_t i, k;
    bool ok = true;

    if (!json_array_size(msgs))
        ok = bd_fail(v, 400, "ValidationException",
                     "A conversation must start with a user message. Try again with a "
                     "conversation that starts with a user message.");
    json_array_foreach(msgs, i, m)
    {
        const char *role = bd_str(m, "role");
        const json_t *content = json_object_get(m, "content");
        if (!ok)
            break;
        if (!role || (strcmp(role, "user") && strcmp(role, "assistant")) ||
            (i == 0 && strcmp(role, "user")) ||
            (i > 0 && !strcmp(role, bd_str(json_array_get(msgs, i - 1), "role")))) {
            ok = bd_fail(v, 400, "ValidationException",
                         "A conversation must alternate between user and assistant roles, "
                         "starting with user (messages.%zu.role)",
                         i);
            break;
        }
        if (!json_array_size(content)) {
            ok = bd_fail(v, 400, "ValidationException",
                         "The content field in the Message object at messages.%zu is empty. Add "
                         "a ContentBlock object to the content field and try again.",
                         i);
            break;
        }
        json_array_clear(uses);
        json_array_clear(results);
        json_array_foreach(content, k, b)
        {
            if (ok)
                ok = bd_block_ok(b, i, k, role, uses, results, tools_used, v);
        }
        if (ok && !strcmp(role, "user") && json_array_size(prev_uses) &&
            !bd_same_ids(prev_uses, results))
            ok = bd_fail(v, 400, "ValidationException",
                         "Expected toolResult blocks at messages.%zu.content for the toolUse ids "
                         "of the previous message",
                         i);
        json_array_clear(prev_uses);
        json_array_extend(prev_uses, uses);
    }
    json_decref(prev_uses);
    json_decref(uses);
    json_decref(results);
    return ok;
}

/* outputConfig.textFormat (OutputFormat): type json_schema and a structure whose jsonSchema
 * holds the schema as a string (JsonSchemaDefinition), which must be a JSON object's text. */
static bool bd_output_ok(const json_t *oc, struct ms_verdict *v)
{
    const json_t *tf = json_object_get(oc, "textFormat");
    const json_t *js = json_object_get(json_object_get(tf, "structure"), "jsonSchema");
    const char *schema = bd_str(js, "schema");
    json_t *parsed;
    bool ok;

    if (!oc)
        return true;
    if (!tf || !bd_str(tf, "type") || strcmp(bd_str(tf, "type"), "json_schema") != 0)
        return bd_fail(v, 400, "ValidationException",
                       "1 validation error detected: Value at 'outputConfig.textFormat.type' "
                       "failed to satisfy constraint: Member must satisfy enum value set: "
                       "[json_schema]");
    if (!schema)
        return bd_fail(v, 400, "ValidationException",
                       "Malformed input request: outputConfig.textFormat.structure.jsonSchema."
                       "schema: a string is required");
    parsed = json_loads(schema, 0, NULL);
    ok = json_is_object(parsed);
    json_decref(parsed);
    if (!ok)
        return bd_fail(v, 400, "ValidationException",
                       "The JSON schema in outputConfig is not valid JSON");
    return true;
}

/* Every member of o is one of the n names of top. */
static bool bd_members_ok(const json_t *o, const char *const *top, size_t n, struct ms_verdict *v)
{
    const char *k;
    json_t *val;

    json_object_foreach((json_t *)o, k, val)
    {
        bool ok = false;
        for (size_t j = 0; j < n && !ok; j++)
            ok = strcmp(k, top[j]) == 0;
        if (!ok)
            return bd_fail(v, 400, "ValidationException",
                           "Malformed input request: extraneous key [%s] is not permitted", k);
    }
    return true;
}

/* A Converse request's members (whichever of them body has) as Converse checks them. */
/*
 * Claude's rule through Bedrock: with thinking on (additionalModelRequestFields.thinking of type
 * enabled or adaptive), the assistant message whose toolUse blocks the last user message's
 * toolResult blocks answer must start with its reasoningContent block; Bedrock passes
 * Anthropic's refusal on inside its own.
 */
static bool bd_final_thinking_ok(const json_t *body, struct ms_verdict *v)
{
    const json_t *extra = json_object_get(body, "additionalModelRequestFields");
    const char *type = bd_str(json_object_get(extra, "thinking"), "type");
    const json_t *msgs = json_object_get(body, "messages");
    size_t n = json_array_size(msgs), i;
    const json_t *last, *prev, *blk;
    bool results = false;

    if (!type || (strcmp(type, "enabled") != 0 && strcmp(type, "adaptive") != 0) || n < 2)
        return true;
    last = json_array_get(msgs, n - 1);
    prev = json_array_get(msgs, n - 2);
    json_array_foreach(json_object_get(last, "content"), i, blk)
    {
        results = results || json_object_get(blk, "toolResult") != NULL;
    }
    if (!results || !bd_str(prev, "role") || strcmp(bd_str(prev, "role"), "assistant") != 0 ||
        json_object_get(json_array_get(json_object_get(prev, "content"), 0), "reasoningContent"))
        return true;
    return bd_fail(v, 400, "ValidationException",
                   "The model returned the following errors: messages.%zu.content.0.type: "
                   "Expected `thinking` or `redacted_thinking`, but found `tool_use`. When "
                   "`thinking` is enabled, a final `assistant` message must start with a thinking "
                   "block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). "
                   "We recommend you include thinking blocks from previous turns. To avoid this "
                   "requirement, disable `thinking`.",
                   n - 2);
}

static bool bd_converse_ok(json_t *body, struct ms_verdict *v)
{
    const json_t *tc = json_object_get(body, "toolConfig"), *t;
    const json_t *extra = json_object_get(body, "additionalModelRequestFields");
    bool tools_used = false;
    size_t i;

    if (extra && !json_is_object(extra))
        return bd_fail(v, 400, "ValidationException",
                       "additionalModelRequestFields must be a JSON object");
    json_array_foreach(json_object_get(body, "system"), i, t)
    {
        if (!bd_str(t, "text") || !bd_str(t, "text")[0])
            return bd_fail(v, 400, "ValidationException", "system.%zu: text must not be blank", i);
    }
    if (!bd_messages_ok(json_object_get(body, "messages"), &tools_used, v) ||
        !bd_final_thinking_ok(body, v))
        return false;
    if (tools_used && !tc)
        return bd_fail(v, 400, "ValidationException",
                       "The toolConfig field must be defined when using toolUse and toolResult "
                       "content blocks.");
    json_array_foreach(json_object_get(tc, "tools"), i, t)
    {
        const json_t *spec = json_object_get(t, "toolSpec");
        if (!bd_name_ok(bd_str(spec, "name")) ||
            !json_is_object(json_object_get(json_object_get(spec, "inputSchema"), "json")))
            return bd_fail(v, 400, "ValidationException",
                           "toolConfig.tools.%zu.toolSpec: a name matching [a-zA-Z0-9_-]{1,64} "
                           "and inputSchema.json (an object) are required",
                           i);
    }
    if (tc && !json_array_size(json_object_get(tc, "tools")))
        return bd_fail(v, 400, "ValidationException", "toolConfig.tools must not be empty");
    return bd_output_ok(json_object_get(body, "outputConfig"), v);
}

bool ms__bd_check_body(json_t *body, struct ms_verdict *v)
{
    static const char *const top[] = {"messages",        "system",
                                      "inferenceConfig", "toolConfig",
                                      "guardrailConfig", "additionalModelRequestFields",
                                      "promptVariables", "additionalModelResponseFieldPaths",
                                      "requestMetadata", "performanceConfig",
                                      "outputConfig"};

    return bd_members_ok(body, top, REIN_ARRAY_SIZE(top), v) && bd_converse_ok(body, v);
}

/* Base64 as a blob member carries it: the alphabet, '=' only at the end, a multiple of 4. */
static bool bd_base64_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0, pad = 0;

    if (!s || n % 4)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '=')
            pad++;
        else if (pad || (!isalnum((unsigned char)s[i]) && s[i] != '+' && s[i] != '/'))
            return false;
    }
    return pad <= 2;
}

/*
 * CountTokens' body (the API reference's CountTokensRequest): {"input": CountTokensInput},
 * a union of exactly one of "converse" (ConverseTokensRequest: messages, system, toolConfig,
 * additionalModelRequestFields; no inferenceConfig or the other Converse members) and
 * "invokeModel" (InvokeModelTokensRequest: a base64 "body").
 */
bool ms__bd_check_count(json_t *body, struct ms_verdict *v)
{
    static const char *const top[] = {"input"};
    static const char *const unions[] = {"converse", "invokeModel"};
    static const char *const converse[] = {"messages", "system", "toolConfig",
                                           "additionalModelRequestFields"};
    static const char *const invoke[] = {"body"};
    const json_t *input = json_object_get(body, "input");
    json_t *c = json_object_get(input, "converse"), *im = json_object_get(input, "invokeModel");

    if (!bd_members_ok(body, top, REIN_ARRAY_SIZE(top), v))
        return false;
    if (!json_is_object(input))
        return bd_fail(v, 400, "ValidationException",
                       "1 validation error detected: Value null at 'input' failed to satisfy "
                       "constraint: Member must not be null");
    if (!bd_members_ok(input, unions, REIN_ARRAY_SIZE(unions), v))
        return false;
    if (json_object_size(input) != 1)
        return bd_fail(v, 400, "ValidationException",
                       "input is a union: exactly one of converse or invokeModel must be set");
    if (im)
        return json_is_object(im) && bd_members_ok(im, invoke, REIN_ARRAY_SIZE(invoke), v) &&
               (bd_base64_ok(bd_str(im, "body")) ||
                bd_fail(v, 400, "ValidationException",
                        "input.invokeModel.body must be base64-encoded bytes"));
    if (!json_is_object(c))
        return bd_fail(v, 400, "ValidationException", "input.converse must be an object");
    return bd_members_ok(c, converse, REIN_ARRAY_SIZE(converse), v) && bd_converse_ok(c, v);
}

/* ---- conversation helpers ----------------------------------------------------------------- */

static const json_t *bd_last(json_t *req)
{
    const json_t *m = json_object_get(req, "messages");
    size_t n = json_array_size(m);

    return n ? json_array_get(m, n - 1) : NULL;
}

static bool bd_has_results(const json_t *m)
{
    size_t i;
    json_t *b;

    json_array_foreach(json_object_get(m, "content"), i, b)
    {
        if (json_object_get(b, "toolResult"))
            return true;
    }
    return false;
}

const char *ms__bd_last_role(json_t *req)
{
    const json_t *m = bd_last(req);
    const char *role = bd_str(m, "role");

    if (!role)
        return "";
    return !strcmp(role, "user") && bd_has_results(m) ? "tool" : role;
}

/* The text of a message: text blocks and each tool result's text or JSON. */
static void bd_text(const json_t *m, struct rein_buf *out)
{
    size_t i, k;
    json_t *b, *c;

    json_array_foreach(json_object_get(m, "content"), i, b)
    {
        const json_t *tr = json_object_get(b, "toolResult");
        if (out->len)
            bd_ok(rein_buf_addch(out, '\n'));
        if (bd_str(b, "text"))
            bd_ok(rein_buf_adds(out, bd_str(b, "text")));
        json_array_foreach(json_object_get(tr, "content"), k, c)
        {
            char *s =
                json_object_get(c, "json") ? rein_json_dumps(json_object_get(c, "json")) : NULL;
            bd_ok(rein_buf_adds(out, s ? s : bd_str(c, "text") ? bd_str(c, "text") : ""));
            rein_free(s);
        }
    }
}

char *ms__bd_last_text(json_t *req)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    bd_text(bd_last(req), &b);
    return rein_buf_detach(&b, NULL);
}

bool ms__bd_tool_result_contains(json_t *req, const char *needle)
{
    const json_t *m = bd_last(req);
    struct rein_buf b;
    bool found;

    if (!bd_has_results(m))
        return false;
    rein_buf_init(&b, 0);
    bd_text(m, &b);
    found = b.ptr && strstr(b.ptr, needle);
    rein_buf_release(&b);
    return found;
}

bool ms__bd_tools_include(json_t *req, const char *name)
{
    size_t i;
    json_t *t;

    json_array_foreach(json_object_get(json_object_get(req, "toolConfig"), "tools"), i, t)
    {
        const char *n = bd_str(json_object_get(t, "toolSpec"), "name");
        if (n && !strcmp(n, name))
            return true;
    }
    return false;
}

/* ---- rendering ------------------------------------------------------------------------------ */

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static rein_err add_string_header(struct rein_buf *h, const char *name, const char *value)
{
    unsigned char head[4];
    size_t n = strlen(name), vl = strlen(value);
    rein_err rc;

    head[0] = (unsigned char)n;
    rc = rein_buf_add(h, head, 1);
    if (!rc)
        rc = rein_buf_add(h, name, n);
    head[0] = 7;
    head[1] = (unsigned char)(vl >> 8);
    head[2] = (unsigned char)vl;
    if (!rc)
        rc = rein_buf_add(h, head, 3);
    return rc ? rc : rein_buf_add(h, value, vl);
}

rein_err ms_eventstream_frame(struct rein_buf *out, const char *kind, const char *type,
                              const char *payload, size_t len)
{
    struct rein_buf h;
    unsigned char prelude[12], crc[4];
    size_t start = out->len;
    rein_err rc;

    rein_buf_init(&h, 0);
    rc =
        add_string_header(&h, !strcmp(kind, "exception") ? ":exception-type" : ":event-type", type);
    if (!rc)
        rc = add_string_header(&h, ":content-type", "application/json");
    if (!rc)
        rc = add_string_header(&h, ":message-type", kind);
    put32(prelude, (uint32_t)(12 + h.len + len + 4));
    put32(prelude + 4, (uint32_t)h.len);
    put32(prelude + 8, (uint32_t)crc32(0, prelude, 8));
    if (!rc)
        rc = rein_buf_add(out, prelude, 12);
    if (!rc)
        rc = rein_buf_add(out, h.ptr, h.len);
    if (!rc)
        rc = rein_buf_add(out, payload, len);
    if (!rc) {
        put32(crc, (uint32_t)crc32(0, (const unsigned char *)out->ptr + start, out->len - start));
        rc = rein_buf_add(out, crc, 4);
    }
    rein_buf_release(&h);
    return rc;
}

/* One event stream message as one event of the body. */
static rein_err bd_message(struct ms_body *b, const char *kind, const char *type,
                           const char *payload, size_t len)
{
    rein_err rc = ms_eventstream_frame(&b->buf, kind, type, payload, len);

    return rc ? rc : ms__body_mark(b);
}

/* An event whose JSON the writer w holds (w's buffer is taken here). */
static rein_err bd_event(struct ms_body *b, const char *type, struct rein_buf *json)
{
    rein_err rc = bd_message(b, "event", type, json->ptr, json->len);

    rein_buf_reset(json);
    return rc;
}

static const char *bd_finish(const char *given)
{
    if (!strcmp(given, "stop"))
        return "end_turn";
    if (!strcmp(given, "tool_calls"))
        return "tool_use";
    if (!strcmp(given, "length"))
        return "max_tokens";
    if (!strcmp(given, "content_filter"))
        return "content_filtered";
    return given;
}

static void bd_usage(struct rein_jw *w, const struct content *k)
{
    rein_jw_key(w, "usage");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "inputTokens");
    rein_jw_int(w, k->in_tokens);
    rein_jw_key(w, "outputTokens");
    rein_jw_int(w, k->out_tokens);
    rein_jw_key(w, "totalTokens");
    rein_jw_int(w, k->in_tokens + k->out_tokens + k->cached_tokens + k->cache_write_tokens);
    rein_jw_key(w, "cacheReadInputTokens");
    rein_jw_int(w, k->cached_tokens);
    rein_jw_key(w, "cacheWriteInputTokens");
    rein_jw_int(w, k->cache_write_tokens);
    rein_jw_obj_end(w);
    rein_jw_key(w, "metrics");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "latencyMs");
    rein_jw_int(w, 42);
    rein_jw_obj_end(w);
}

/* A delta event: {"contentBlockIndex": i, "delta": {kind: {key: text}}} (key NULL: {kind:
 * text}). */
static rein_err bd_delta(struct ms_body *b, struct rein_buf *j, size_t i, const char *kind,
                         const char *key, const char *p, size_t n)
{
    struct rein_jw w;
    rein_err rc;

    rein_jw_init(&w, j);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "contentBlockIndex");
    rein_jw_int(&w, (int64_t)i);
    rein_jw_key(&w, "delta");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, kind);
    if (key) {
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, key);
    }
    rein_jw_strn(&w, p, n);
    if (key)
        rein_jw_obj_end(&w);
    rein_jw_obj_end(&w);
    rein_jw_key(&w, "p");
    rein_jw_str(&w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"); /* AWS pads events */
    rein_jw_obj_end(&w);
    rc = rein_jw_finish(&w);
    return rc ? rc : bd_event(b, "contentBlockDelta", j);
}

static rein_err bd_index_event(struct ms_body *b, struct rein_buf *j, const char *type, size_t i)
{
    rein_err rc = rein_buf_addf(j, "{\"contentBlockIndex\":%zu}", i);
    return rc ? rc : bd_event(b, type, j);
}

rein_err ms__bd_stream(struct ms_body *b, const struct content *k)
{
    struct rein_buf j;
    struct rein_jw w;
    size_t idx = 0, i, p;
    rein_err rc;

    b->content_type = "application/vnd.amazon.eventstream";
    b->chunked = true;
    rein_buf_init(&j, 0);
    rc = rein_buf_adds(&j, "{\"role\":\"assistant\",\"p\":\"abcdefgh\"}");
    if (!rc)
        rc = bd_event(b, "messageStart", &j);
    if (!rc && k->has_reasoning) {
        for (p = 0; !rc && p < k->reasoning.n; p++)
            rc = bd_delta(b, &j, idx, "reasoningContent", "text", k->reasoning.v[p].p,
                          k->reasoning.v[p].n);
        if (!rc)
            rc = bd_delta(b, &j, idx, "reasoningContent", "signature", k->signature,
                          strlen(k->signature));
        if (!rc)
            rc = bd_index_event(b, &j, "contentBlockStop", idx++);
    }
    if (!rc && (k->has_text || !k->ncalls)) {
        for (p = 0; !rc && p < k->text.n; p++)
            rc = bd_delta(b, &j, idx, "text", NULL, k->text.v[p].p, k->text.v[p].n);
        if (!rc)
            rc = bd_index_event(b, &j, "contentBlockStop", idx++);
    }
    for (i = 0; !rc && i < k->ncalls; i++, idx++) {
        rein_jw_init(&w, &j);
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "contentBlockIndex");
        rein_jw_int(&w, (int64_t)idx);
        rein_jw_key(&w, "start");
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "toolUse");
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "toolUseId");
        rein_jw_str(&w, k->calls[i].id);
        rein_jw_key(&w, "name");
        rein_jw_str(&w, k->calls[i].name);
        rein_jw_obj_end(&w);
        rein_jw_obj_end(&w);
        rein_jw_obj_end(&w);
        rc = rein_jw_finish(&w);
        if (!rc)
            rc = bd_event(b, "contentBlockStart", &j);
        for (p = 0; !rc && p < k->calls[i].args.n; p++)
            rc = bd_delta(b, &j, idx, "toolUse", "input", k->calls[i].args.v[p].p,
                          k->calls[i].args.v[p].n);
        if (!rc)
            rc = bd_index_event(b, &j, "contentBlockStop", idx);
    }
    if (!rc)
        rc = rein_buf_addf(&j, "{\"stopReason\":\"%s\"}", bd_finish(k->finish));
    if (!rc)
        rc = bd_event(b, "messageStop", &j);
    if (!rc) {
        rein_jw_init(&w, &j);
        rein_jw_obj_begin(&w);
        bd_usage(&w, k);
        rein_jw_obj_end(&w);
        rc = rein_jw_finish(&w);
        if (!rc)
            rc = bd_event(b, "metadata", &j);
    }
    rein_buf_release(&j);
    return rc;
}

rein_err ms__bd_json(struct ms_body *b, const struct content *k)
{
    struct rein_jw w;
    char *text = ms__parts_join(&k->text), *reason = ms__parts_join(&k->reasoning);

    if (!text || !reason) {
        rein_free(text);
        rein_free(reason);
        return REIN_ENOMEM;
    }
    ms__ev_begin(b, &w, NULL);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "output");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "message");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "role");
    rein_jw_str(&w, "assistant");
    rein_jw_key(&w, "content");
    rein_jw_arr_begin(&w);
    if (k->has_reasoning) {
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "reasoningContent");
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "reasoningText");
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "text");
        rein_jw_str(&w, reason);
        rein_jw_key(&w, "signature");
        rein_jw_str(&w, k->signature);
        rein_jw_obj_end(&w);
        rein_jw_obj_end(&w);
        rein_jw_obj_end(&w);
    }
    if (k->has_text || !k->ncalls) {
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "text");
        rein_jw_str(&w, text);
        rein_jw_obj_end(&w);
    }
    for (size_t i = 0; i < k->ncalls; i++) {
        json_t *args = rein_json_parse(k->calls[i].joined, k->calls[i].args.total, 0, NULL);
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "toolUse");
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "toolUseId");
        rein_jw_str(&w, k->calls[i].id);
        rein_jw_key(&w, "name");
        rein_jw_str(&w, k->calls[i].name);
        rein_jw_key(&w, "input");
        if (args)
            rein_jw_raw(&w, k->calls[i].joined, k->calls[i].args.total);
        else
            rein_jw_raw(&w, "{}", 2);
        json_decref(args);
        rein_jw_obj_end(&w);
        rein_jw_obj_end(&w);
    }
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    rein_jw_obj_end(&w);
    rein_jw_key(&w, "stopReason");
    rein_jw_str(&w, bd_finish(k->finish));
    bd_usage(&w, k);
    rein_jw_obj_end(&w);
    rein_free(text);
    rein_free(reason);
    return ms__ev_end(b, &w, "");
}

/* Bedrock's exception per HTTP status, and its default text. */
static const struct {
    int status;
    const char *type, *message;
} bd_errors[] = {
    {400, "ValidationException", "Malformed input request (scripted by rein-model-server)"},
    {403, "AccessDeniedException",
     "You don't have access to the model with the specified model "
     "ID."},
    {404, "ResourceNotFoundException", "The requested resource could not be found."},
    {408, "ModelTimeoutException", "The request took too long to process."},
    {424, "ModelErrorException", "The model produced an error."},
    {429, "ThrottlingException",
     "Too many requests, please wait before trying again. (scripted by rein-model-server)"},
    {500, "InternalServerException", "The server encountered an internal error."},
    {503, "ServiceUnavailableException", "The service is temporarily unavailable."},
};

rein_err ms__bd_error(const struct ms_error_info *e, struct ms_body *out, bool event)
{
    size_t pick = 6; /* InternalServerException */
    struct rein_buf j;
    struct rein_jw w;
    rein_err rc;

    for (size_t i = 0; i < REIN_ARRAY_SIZE(bd_errors); i++) {
        if (bd_errors[i].status == e->status)
            pick = i;
    }
    rein_buf_init(&j, 0);
    rein_jw_init(&w, &j);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "message");
    rein_jw_str(&w, e->message ? e->message : bd_errors[pick].message);
    rein_jw_obj_end(&w);
    rc = rein_jw_finish(&w);
    if (!rc && event) {
        /* In the stream, the exception's name is in camel case (throttlingException). */
        char type[64];
        snprintf(type, sizeof(type), "%s", e->type ? e->type : "throttlingException");
        rc = bd_message(out, "exception", type, j.ptr, j.len);
    } else if (!rc) {
        out->content_type = "application/json";
        out->chunked = false;
        snprintf(out->error_type, sizeof(out->error_type), "%s:http://internal.amazon.com/coral/",
                 e->type ? e->type : bd_errors[pick].type);
        rc = rein_buf_add(&out->buf, j.ptr, j.len);
        if (!rc)
            rc = ms__body_mark(out);
    }
    rein_buf_release(&j);
    return rc;
}

rein_err ms__bd_count(struct ms_body *b, const struct content *k)
{
    b->content_type = "application/json";
    b->chunked = false;
    return rein_buf_addf(&b->buf, "{\"inputTokens\":%lld}", (long long)k->in_tokens) ||
                   ms__body_mark(b)
               ? REIN_ENOMEM
               : REIN_OK;
}

bool ms__bd_path_counts(const char *path)
{
    size_t n = strlen(path);
    return n > 13 && strcmp(path + n - 13, "/count-tokens") == 0;
}

/* "/model/ID/converse-stream" -> true. */
bool ms__bd_path_streams(const char *path)
{
    size_t n = strlen(path);
    return n > 16 && strcmp(path + n - 16, "/converse-stream") == 0;
}
