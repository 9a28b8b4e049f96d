/*
 * The Gemini side of the scripted model server (model_server_int.h): POST
 * .../models/MODEL:generateContent and :streamGenerateContent, validated as the Gemini API does
 * it, the conversation helpers the match predicates use, and replies and errors rendered in
 * its shapes from the gathered content.
 *
 * What is checked is what the service refuses (ai.google.dev/api/generate-content and its
 * error texts): a key in x-goog-api-key (or a bearer token, as Vertex AI takes it); a
 * non-empty contents array of {role: user|model, parts}; each part one of the data members;
 * functionCall.args and functionResponse.response objects; the answers to a model turn's
 * function calls in one user content, as many as there were calls; function declarations
 * with valid names and parameters in the Schema subset (an unknown keyword such as
 * additionalProperties is refused with "Unknown name", as the service's JSON parser does);
 * toolConfig modes; no unknown top-level members.
 */
#include "model_server_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *gm_str_of(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* 400 INVALID_ARGUMENT with a formatted message. Returns false. */
static bool gm_bad(struct ms_verdict *v, const char *fmt, ...) REIN_PRINTF(2, 3);

static bool gm_bad(struct ms_verdict *v, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ms__verdict_set(v, 400, "INVALID_ARGUMENT", msg);
}

bool ms__gm_check_auth(json_t *headers, const char *key, struct ms_verdict *v)
{
    const char *given = gm_str_of(headers, "x-goog-api-key");
    const char *auth = gm_str_of(headers, "authorization");

    if (!given && auth && strncmp(auth, "Bearer ", 7) == 0)
        given = auth + 7;
    if (!given)
        return ms__verdict_set(v, 403, "PERMISSION_DENIED",
                               "Method doesn't allow unregistered callers (callers without "
                               "established identity). Please use API Key or other form of API "
                               "consumer identity to call this API.");
    if (strcmp(given, key) != 0)
        return ms__verdict_set(v, 400, "INVALID_ARGUMENT",
                               "API key not valid. Please pass a valid API key.");
    return true;
}

/* ---- schema -------------------------------------------------------------------------- */

static bool gm_schema_ok(const json_t *s, const char *at, struct ms_verdict *v);

static bool gm_type_ok(const char *t)
{
    static const char *const types[] = {"STRING", "NUMBER", "INTEGER", "BOOLEAN",
                                        "ARRAY",  "OBJECT", "NULL",    "TYPE_UNSPECIFIED"};

    for (size_t i = 0; t && i < REIN_ARRAY_SIZE(types); i++) {
        if (strcasecmp(t, types[i]) == 0)
            return true;
    }
    return false;
}

static bool gm_schema_ok(const json_t *s, const char *at, struct ms_verdict *v)
{
    static const char *const known[] = {
        "type",      "format",    "title",      "description", "nullable",      "enum",
        "maxItems",  "minItems",  "properties", "required",    "minProperties", "maxProperties",
        "minLength", "maxLength", "pattern",    "example",     "anyOf",         "propertyOrdering",
        "default",   "items",     "minimum",    "maximum"};
    const char *k;
    json_t *val;

    if (!json_is_object(s))
        return gm_bad(v, "Invalid value at '%s': a Schema must be an object", at);
    json_object_foreach((json_t *)s, k, val)
    {
        bool ok = false;
        char sub[400];
        for (size_t i = 0; i < REIN_ARRAY_SIZE(known) && !ok; i++)
            ok = strcmp(k, known[i]) == 0;
        if (!ok)
            return gm_bad(v,
                          "Invalid JSON payload received. Unknown name \"%s\" at '%s': Cannot "
                          "find field.",
                          k, at);
        if (!strcmp(k, "type") && !gm_type_ok(json_string_value(val)))
            return gm_bad(v, "Invalid value at '%s.type': %s", at,
                          json_is_string(val) ? json_string_value(val) : "(not a string)");
        if (!strcmp(k, "enum") && !json_is_array(val))
            return gm_bad(v, "Invalid value at '%s.enum': %s", at, "not a list");
        if (!strcmp(k, "items")) {
            snprintf(sub, sizeof(sub), "%s.items", at);
            if (!gm_schema_ok(val, sub, v))
                return false;
        }
        if (!strcmp(k, "properties")) {
            const char *pk;
            json_t *pv;
            json_object_foreach(val, pk, pv)
            {
                snprintf(sub, sizeof(sub), "%s.properties[%s]", at, pk);
                if (!gm_schema_ok(pv, sub, v))
                    return false;
            }
        }
        if (!strcmp(k, "anyOf")) {
            size_t i;
            json_t *item;
            json_array_foreach(val, i, item)
            {
                snprintf(sub, sizeof(sub), "%s.any_of[%zu]", at, i);
                if (!gm_schema_ok(item, sub, v))
                    return false;
            }
        }
    }
    return true;
}

static bool gm_name_ok(const char *n)
{
    size_t len = n ? strlen(n) : 0;

    if (len == 0 || len > 64 || !(isalpha((unsigned char)n[0]) || n[0] == '_'))
        return false;
    for (size_t i = 1; i < len; i++) {
        if (!isalnum((unsigned char)n[i]) && !strchr("_.-:", n[i]))
            return false;
    }
    return true;
}

static bool gm_tools_ok(const json_t *tools, struct ms_verdict *v)
{
    size_t i, j;
    json_t *t, *fd;

    if (tools && !json_is_array(tools))
        return gm_bad(v, "Invalid value at 'tools': not a list");
    json_array_foreach(tools, i, t)
    {
        json_array_foreach(json_object_get(t, "functionDeclarations"), j, fd)
        {
            const json_t *params = json_object_get(fd, "parameters");
            char at[128];
            if (!gm_name_ok(gm_str_of(fd, "name")))
                return gm_bad(v,
                              "* GenerateContentRequest.tools[0].function_declarations[0].name: "
                              "Invalid function name. Must start with a letter or an underscore. "
                              "Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), "
                              "colons (:) or dashes (-), with a maximum length of 64. (%s)",
                              gm_str_of(fd, "name"));
            snprintf(at, sizeof(at), "tools[%zu].function_declarations[%zu].parameters", i, j);
            if (params && !gm_schema_ok(params, at, v))
                return false;
            if (json_is_object(params) && json_object_get(params, "properties") &&
                !json_object_size(json_object_get(params, "properties")))
                return gm_bad(v,
                              "* GenerateContentRequest.%s.properties: should be non-empty for "
                              "OBJECT type",
                              at);
        }
    }
    return true;
}

/* ---- contents ------------------------------------------------------------------------ */

static size_t gm_count_parts(const json_t *content, const char *member)
{
    size_t i, n = 0;
    json_t *p;

    json_array_foreach(json_object_get(content, "parts"), i, p)
    {
        n += json_object_get(p, member) != NULL;
    }
    return n;
}

static bool gm_part_ok(const json_t *p, struct ms_verdict *v)
{
    static const char *const data[] = {
        "text",     "inlineData",     "functionCall",       "functionResponse",
        "fileData", "executableCode", "codeExecutionResult"};
    int n = 0;
    const json_t *fc = json_object_get(p, "functionCall");
    const json_t *fr = json_object_get(p, "functionResponse");

    for (size_t i = 0; i < REIN_ARRAY_SIZE(data); i++)
        n += json_object_get(p, data[i]) != NULL;
    if (n != 1)
        return gm_bad(v, "* GenerateContentRequest.contents.parts: a part must hold exactly one of "
                         "text, inlineData, functionCall, functionResponse, …");
    if (fc && (!gm_name_ok(gm_str_of(fc, "name")) ||
               (json_object_get(fc, "args") && !json_is_object(json_object_get(fc, "args")))))
        return gm_bad(v,
                      "* GenerateContentRequest.contents.parts.function_call: name and args (an "
                      "object) are required (%s)",
                      gm_str_of(fc, "name"));
    if (json_object_get(p, "inlineData") &&
        (!gm_str_of(json_object_get(p, "inlineData"), "mimeType") ||
         !gm_str_of(json_object_get(p, "inlineData"), "data")))
        return gm_bad(v, "* GenerateContentRequest.contents.parts.inline_data: mime_type and data "
                         "are required");
    if (fr && (!gm_str_of(fr, "name") || !json_is_object(json_object_get(fr, "response"))))
        return gm_bad(v,
                      "* GenerateContentRequest.contents.parts.function_response: name and "
                      "response (an object) are required (%s)",
                      gm_str_of(fr, "name"));
    return true;
}

static bool gm_contents_ok(const json_t *contents, struct ms_verdict *v)
{
    size_t i, j, calls = 0;
    json_t *c, *p;

    if (!json_array_size(contents))
        return gm_bad(v, "* GenerateContentRequest.contents: contents is not specified");
    json_array_foreach(contents, i, c)
    {
        const char *role = gm_str_of(c, "role");
        size_t answers = gm_count_parts(c, "functionResponse");
        if (role && strcmp(role, "user") != 0 && strcmp(role, "model") != 0)
            return gm_bad(v, "Please use a valid role: user, model. (got %s)", role);
        if (!json_array_size(json_object_get(c, "parts")))
            return gm_bad(v,
                          "* GenerateContentRequest.contents[%s].parts: contents.parts must not "
                          "be empty.",
                          role ? role : "?");
        json_array_foreach(json_object_get(c, "parts"), j, p)
        {
            if (!gm_part_ok(p, v))
                return false;
        }
        if (answers && answers != calls)
            return gm_bad(v, "Please ensure that the number of function response parts is equal "
                             "to the number of function call parts of the function call turn.");
        calls = role && !strcmp(role, "model") ? gm_count_parts(c, "functionCall") : 0;
    }
    return true;
}

/* GenerationConfig's answer form: a response schema (responseSchema, the OpenAPI subset, or
 * responseJsonSchema, JSON Schema; not both) needs a JSON or enum responseMimeType. */
static bool gm_output_ok(const json_t *gc, struct ms_verdict *v)
{
    static const char *const mimes[] = {"text/plain", "application/json", "application/xml",
                                        "application/yaml", "text/x.enum"};
    const char *mime = gm_str_of(gc, "responseMimeType");
    bool schema = json_object_get(gc, "responseSchema") != NULL;
    bool js = json_object_get(gc, "responseJsonSchema") != NULL;
    bool known = !mime;

    for (size_t i = 0; mime && i < REIN_ARRAY_SIZE(mimes); i++)
        known = known || strcmp(mime, mimes[i]) == 0;
    if (!known)
        return gm_bad(v, "* GenerateContentRequest.generation_config.response_mime_type: "
                         "allowed mimetypes are `text/plain`, `application/json`, "
                         "`application/xml`, `application/yaml` and `text/x.enum`.");
    if (schema && js)
        return gm_bad(v, "responseSchema and responseJsonSchema cannot both be set");
    if ((schema || js) &&
        (!mime || (strcmp(mime, "application/json") != 0 && strcmp(mime, "text/x.enum") != 0)))
        return gm_bad(v, "* GenerateContentRequest.generation_config.response_mime_type: "
                         "response_mime_type must be one of the following: [application/json, "
                         "text/x.enum] when response_schema is set.");
    if (js && !json_is_object(json_object_get(gc, "responseJsonSchema")) &&
        !json_is_boolean(json_object_get(gc, "responseJsonSchema")))
        return gm_bad(v, "Invalid value at 'generation_config.response_json_schema'");
    return !schema || gm_schema_ok(json_object_get(gc, "responseSchema"),
                                   "generation_config.response_schema", v);
}

/* Whether content c holds a part of member. */
static bool gm_has_part(const json_t *c, const char *member)
{
    return gm_count_parts(c, member) > 0;
}

/*
 * Gemini 3's rule (ai.google.dev, Thought signatures): the current turn starts at the last
 * user content with standard content (not only function responses); in it the first
 * functionCall part of each model content must carry its thoughtSignature, or the request is a
 * 400 with Google's message. Earlier turns are not checked.
 */
static bool gm_signatures_ok(const json_t *contents, const char *path, struct ms_verdict *v)
{
    char model[128];
    size_t i, j, from = 0;
    json_t *c, *p;

    if (!ms__gm_model_of_path(path ? path : "", model, sizeof(model)) ||
        strncmp(model, "gemini-3", 8) != 0)
        return true;
    json_array_foreach(contents, i, c)
    {
        const char *role = gm_str_of(c, "role");
        if ((!role || !strcmp(role, "user")) && !gm_has_part(c, "functionResponse"))
            from = i;
    }
    for (i = from; i < json_array_size(contents); i++) {
        c = json_array_get(contents, i);
        if (!gm_str_of(c, "role") || strcmp(gm_str_of(c, "role"), "model") != 0)
            continue;
        json_array_foreach(json_object_get(c, "parts"), j, p)
        {
            const json_t *fc = json_object_get(p, "functionCall");
            if (!fc)
                continue;
            if (!json_string_length(json_object_get(p, "thoughtSignature")))
                return gm_bad(v,
                              "Function call is missing a thought_signature in functionCall "
                              "parts. This is required for tools to work correctly, and missing "
                              "thought_signature may lead to degraded model performance. "
                              "Additional data, function call `default_api:%s` , position %zu. "
                              "Please refer to "
                              "https://ai.google.dev/gemini-api/docs/thought-signatures for more "
                              "details.",
                              gm_str_of(fc, "name") ? gm_str_of(fc, "name") : "", i + 1);
            break; /* only the first call of a step carries one */
        }
    }
    return true;
}

bool ms__gm_check_body(json_t *body, const char *path, struct ms_verdict *v)
{
    static const char *const top[] = {
        "contents",         "tools",         "toolConfig", "safetySettings", "systemInstruction",
        "generationConfig", "cachedContent", "labels"};
    const json_t *stop =
        json_object_get(json_object_get(body, "generationConfig"), "stopSequences");
    const char *k, *mode;
    json_t *val;

    json_object_foreach(body, k, val)
    {
        bool ok = false;
        for (size_t i = 0; i < REIN_ARRAY_SIZE(top) && !ok; i++)
            ok = strcmp(k, top[i]) == 0;
        if (!ok)
            return gm_bad(v,
                          "Invalid JSON payload received. Unknown name \"%s\": Cannot find "
                          "field.",
                          k);
    }
    if (!gm_contents_ok(json_object_get(body, "contents"), v) ||
        !gm_signatures_ok(json_object_get(body, "contents"), path, v) ||
        !gm_tools_ok(json_object_get(body, "tools"), v) ||
        !gm_output_ok(json_object_get(body, "generationConfig"), v))
        return false;
    /* GenerationConfig.stopSequences: "The set of character sequences (up to 5)". */
    if (json_array_size(stop) > 5)
        return gm_bad(v,
                      "Invalid value at 'generation_config.stop_sequences': at most 5 stop "
                      "sequences are allowed, got %zu",
                      json_array_size(stop));
    mode = gm_str_of(json_object_get(json_object_get(body, "toolConfig"), "functionCallingConfig"),
                     "mode");
    if (mode && strcmp(mode, "AUTO") && strcmp(mode, "ANY") && strcmp(mode, "NONE") &&
        strcmp(mode, "VALIDATED"))
        return gm_bad(v, "Invalid value at 'tool_config.function_calling_config.mode' (%s)", mode);
    return true;
}

/* ---- conversation helpers ------------------------------------------------------------ */

static const json_t *gm_last_content(json_t *req)
{
    const json_t *c = json_object_get(req, "contents");
    size_t n = json_array_size(c);

    return n ? json_array_get(c, n - 1) : NULL;
}

const char *ms__gm_last_role(json_t *req)
{
    const json_t *c = gm_last_content(req);
    const char *role = gm_str_of(c, "role");

    if (!c)
        return "";
    if (role && !strcmp(role, "model"))
        return "assistant";
    return gm_count_parts(c, "functionResponse") ? "tool" : "user";
}

/* The text of a content's parts: text parts, and each function response as JSON. */
static rein_err gm_content_text(const json_t *c, struct rein_buf *out)
{
    size_t i;
    json_t *p;
    rein_err rc = REIN_OK;

    json_array_foreach(json_object_get(c, "parts"), i, p)
    {
        const json_t *fr = json_object_get(p, "functionResponse");
        if (!rc && out->len)
            rc = rein_buf_addch(out, '\n');
        if (!rc && gm_str_of(p, "text"))
            rc = rein_buf_adds(out, gm_str_of(p, "text"));
        if (!rc && fr) {
            char *s = rein_json_dumps(json_object_get(fr, "response"));
            rc = s ? rein_buf_adds(out, s) : REIN_ENOMEM;
            rein_free(s);
        }
    }
    return rc;
}

char *ms__gm_last_text(json_t *req)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    if (gm_content_text(gm_last_content(req), &b) != REIN_OK)
        rein_buf_reset(&b);
    return rein_buf_detach(&b, NULL);
}

bool ms__gm_tool_result_contains(json_t *req, const char *needle)
{
    const json_t *c = gm_last_content(req);
    struct rein_buf b;
    bool found;

    if (!gm_count_parts(c, "functionResponse"))
        return false;
    rein_buf_init(&b, 0);
    found = gm_content_text(c, &b) == REIN_OK && b.ptr && strstr(b.ptr, needle) != NULL;
    rein_buf_release(&b);
    return found;
}

bool ms__gm_tools_include(json_t *req, const char *name)
{
    size_t i, j;
    json_t *t, *fd;

    json_array_foreach(json_object_get(req, "tools"), i, t)
    {
        json_array_foreach(json_object_get(t, "functionDeclarations"), j, fd)
        {
            const char *n = gm_str_of(fd, "name");
            if (n && !strcmp(n, name))
                return true;
        }
    }
    return false;
}

/* "/v1beta/models/gemini-2.5-flash:streamGenerateContent" -> "gemini-2.5-flash". */
bool ms__gm_model_of_path(const char *path, char *out, size_t size)
{
    const char *m = strstr(path, "/models/");
    const char *colon = m ? strrchr(m, ':') : NULL;

    if (!colon || size == 0)
        return false;
    m += 8;
    snprintf(out, size, "%.*s", (int)(colon - m), m);
    return true;
}

/* ---- rendering ----------------------------------------------------------------------- */

/* The finish reason in Gemini's words (function calls end with STOP). */
static const char *gm_finish(const char *given)
{
    static const char *const map[][2] = {{"stop", "STOP"},
                                         {"tool_calls", "STOP"},
                                         {"end_turn", "STOP"},
                                         {"tool_use", "STOP"},
                                         {"length", "MAX_TOKENS"},
                                         {"max_tokens", "MAX_TOKENS"},
                                         {"content_filter", "SAFETY"},
                                         {"refusal", "SAFETY"}};

    for (size_t i = 0; i < REIN_ARRAY_SIZE(map); i++) {
        if (!strcmp(given, map[i][0]))
            return map[i][1];
    }
    return given;
}

/* Opens one GenerateContentResponse: {"candidates":[{"content":{"role":"model","parts":[ */
static void gm_begin(struct rein_jw *w)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "candidates");
    rein_jw_arr_begin(w);
    rein_jw_obj_begin(w);
    rein_jw_key(w, "content");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "role");
    rein_jw_str(w, "model");
    rein_jw_key(w, "parts");
    rein_jw_arr_begin(w);
}

static void gm_usage(struct rein_jw *w, const struct content *k)
{
    rein_jw_key(w, "usageMetadata");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "promptTokenCount");
    rein_jw_int(w, k->in_tokens);
    rein_jw_key(w, "candidatesTokenCount");
    rein_jw_int(w, k->out_tokens);
    if (k->cached_tokens > 0) {
        rein_jw_key(w, "cachedContentTokenCount");
        rein_jw_int(w, k->cached_tokens);
    }
    if (k->reasoning_tokens > 0) {
        rein_jw_key(w, "thoughtsTokenCount");
        rein_jw_int(w, k->reasoning_tokens);
    }
    rein_jw_key(w, "totalTokenCount");
    rein_jw_int(w, k->in_tokens + k->out_tokens + k->reasoning_tokens);
    rein_jw_obj_end(w);
}

/* Closes the parts, the content and the candidate (with finishReason when finish), then adds
 * the usage (when finish) and the model version. */
static void gm_end(struct rein_jw *w, const struct content *k, bool finish)
{
    rein_jw_arr_end(w);
    rein_jw_obj_end(w);
    if (finish) {
        rein_jw_key(w, "finishReason");
        rein_jw_str(w, gm_finish(k->finish));
    }
    rein_jw_key(w, "index");
    rein_jw_int(w, 0);
    rein_jw_obj_end(w);
    rein_jw_arr_end(w);
    if (finish)
        gm_usage(w, k);
    rein_jw_key(w, "modelVersion");
    rein_jw_str(w, k->model);
    rein_jw_key(w, "responseId");
    rein_jw_str(w, k->id);
    rein_jw_obj_end(w);
}

static void gm_text_part(struct rein_jw *w, const char *p, size_t n, bool thought)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "text");
    rein_jw_strn(w, p, n);
    if (thought) {
        rein_jw_key(w, "thought");
        rein_jw_bool(w, true);
    }
    rein_jw_obj_end(w);
}

/* Every call as a functionCall part: args the scripted text when it is a JSON object (an
 * empty one when none was given), anything else as it came so a client sees the bad value;
 * the first call carries the signature, as Gemini 3 sends it. */
static void gm_calls(struct rein_jw *w, const struct content *k)
{
    for (size_t i = 0; i < k->ncalls; i++) {
        const struct call *c = &k->calls[i];
        json_t *args = c->args.total ? rein_json_parse(c->joined, c->args.total, 0, NULL) : NULL;
        rein_jw_obj_begin(w);
        rein_jw_key(w, "functionCall");
        rein_jw_obj_begin(w);
        if (json_object_get(json_array_get(json_object_get(k->r->spec, "tool_calls"), i), "id")) {
            rein_jw_key(w, "id");
            rein_jw_str(w, c->id);
        }
        rein_jw_key(w, "name");
        rein_jw_str(w, c->name);
        rein_jw_key(w, "args");
        if (args)
            rein_jw_raw(w, c->joined, c->args.total);
        else if (c->args.total)
            rein_jw_strn(w, c->joined, c->args.total);
        else
            rein_jw_raw(w, "{}", 2);
        json_decref(args);
        rein_jw_obj_end(w);
        if (i == 0) {
            rein_jw_key(w, "thoughtSignature");
            rein_jw_str(w, k->signature);
        }
        rein_jw_obj_end(w);
    }
}

/* One SSE event per reasoning and text delta, one with the calls, one that finishes (as
 * :streamGenerateContent?alt=sse sends them, CRLF-separated). */
rein_err ms__gm_stream(struct ms_body *b, const struct content *k)
{
    struct rein_jw w;
    rein_err rc = REIN_OK;
    size_t i;

    b->content_type = "text/event-stream";
    b->chunked = true;
    for (i = 0; !rc && i < k->reasoning.n; i++) {
        ms__ev_begin(b, &w, "data: ");
        gm_begin(&w);
        gm_text_part(&w, k->reasoning.v[i].p, k->reasoning.v[i].n, true);
        gm_end(&w, k, false);
        rc = ms__ev_end(b, &w, "\r\n\r\n");
    }
    for (i = 0; !rc && i < k->text.n; i++) {
        ms__ev_begin(b, &w, "data: ");
        gm_begin(&w);
        gm_text_part(&w, k->text.v[i].p, k->text.v[i].n, false);
        gm_end(&w, k, false);
        rc = ms__ev_end(b, &w, "\r\n\r\n");
    }
    if (!rc && k->ncalls) {
        ms__ev_begin(b, &w, "data: ");
        gm_begin(&w);
        gm_calls(&w, k);
        gm_end(&w, k, false);
        rc = ms__ev_end(b, &w, "\r\n\r\n");
    }
    if (rc)
        return rc;
    /* The last event: an empty text part with the finish reason and the usage. */
    ms__ev_begin(b, &w, "data: ");
    gm_begin(&w);
    gm_text_part(&w, "", 0, false);
    gm_end(&w, k, true);
    return ms__ev_end(b, &w, "\r\n\r\n");
}

rein_err ms__gm_json(struct ms_body *b, const struct content *k)
{
    struct rein_jw w;
    char *text = ms__parts_join(&k->text);

    if (!text)
        return REIN_ENOMEM;
    ms__ev_begin(b, &w, NULL);
    gm_begin(&w);
    if (k->has_reasoning) {
        char *r = ms__parts_join(&k->reasoning);
        if (r)
            gm_text_part(&w, r, k->reasoning.total, true);
        rein_free(r);
    }
    if (k->has_text || !k->ncalls)
        gm_text_part(&w, text, k->text.total, false);
    gm_calls(&w, k);
    gm_end(&w, k, true);
    rein_free(text);
    return ms__ev_end(b, &w, "");
}

/* google.rpc.Status words per HTTP status, and the reverse for a scripted word. */
static const struct {
    int code;
    const char *status, *message;
} gm_statuses[] = {
    {400, "INVALID_ARGUMENT", "Request contains an invalid argument."},
    {401, "UNAUTHENTICATED", "Request had invalid authentication credentials."},
    {403, "PERMISSION_DENIED", "The caller does not have permission"},
    {404, "NOT_FOUND", "Requested entity was not found."},
    {429, "RESOURCE_EXHAUSTED",
     "Resource has been exhausted (e.g. check quota). (scripted by rein-model-server)"},
    {500, "INTERNAL",
     "An internal error has occurred. Please retry or report in "
     "https://developers.generativeai.google/guide/troubleshooting"},
    {503, "UNAVAILABLE", "The model is overloaded. Please try again later."},
    {504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."},
};

/* An error body {"error": {code, message, status}}; event: as one in-stream SSE event (the
 * status word from e->type, or UNAVAILABLE). */
rein_err ms__gm_error(const struct ms_error_info *e, struct ms_body *out, bool event)
{
    size_t n = REIN_ARRAY_SIZE(gm_statuses), pick = 5; /* INTERNAL */
    int code = event ? 503 : e->status;
    struct rein_jw w;

    for (size_t i = 0; i < n; i++) {
        if ((e->type && !strcmp(e->type, gm_statuses[i].status)) ||
            (!e->type && gm_statuses[i].code == code)) {
            pick = i;
            break;
        }
    }
    if (!event) {
        out->content_type = "application/json";
        out->chunked = false;
    }
    ms__ev_begin(out, &w, event ? "data: " : NULL);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "error");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "code");
    rein_jw_int(&w, event || e->type ? gm_statuses[pick].code : code);
    rein_jw_key(&w, "message");
    rein_jw_str(&w, e->message ? e->message : gm_statuses[pick].message);
    rein_jw_key(&w, "status");
    rein_jw_str(&w, gm_statuses[pick].status);
    rein_jw_obj_end(&w);
    rein_jw_obj_end(&w);
    return ms__ev_end(out, &w, event ? "\r\n\r\n" : "");
}
