/*
 * Google's Gemini API (generateContent) as a server wire of the gateway (decision 0092): what
 * a Gemini client (@google/genai, Google ADK, LangChain's Google package, the Vercel AI SDK's
 * @ai-sdk/google) sends to POST /v1beta/models/MODEL:generateContent or
 * :streamGenerateContent becomes the neutral request, and rein's answer goes back as a
 * GenerateContentResponse, as the stream of them (?alt=sse: one "data:" line each), or as
 * Google's error body {"error": {code, message, status}}.
 *
 * The model and whether to stream come from the URL (struct rein_gateway_call); the body is
 * read by its own parser, not converted into another wire's body, because Gemini's history
 * carries what no other client wire has a member for: the thoughtSignature of each
 * functionCall part, which Gemini 3 wants back on the next turn. The neutral message has a
 * place for it (a call's "signature", the message's "reasoning_signature"), which the Gemini
 * provider writes back, so a Gemini client behind rein in front of Gemini keeps its
 * signatures both ways.
 *
 * User content is text, inlineData (the user message's attachments, decision 0097) and
 * functionResponse parts (each a neutral tool message, in order, before the text; the
 * inlineData of its parts, Gemini 3's multimodal function responses, the tool message's
 * attachments, decision 0098); model content is text, thought text, functionCall parts and their
 * signatures. Calls without an id (Gemini 2.x) get one made from their place, in the form
 * the Gemini provider does not send up ("call_" and 16 hex digits), and a functionResponse
 * without one, or with one no call has, answers the first open call of its name of the model
 * turn before it. Tools are
 * functionDeclarations; parameters in Gemini's Schema (an OpenAPI subset, types possibly in
 * upper case, nullable) become JSON Schema for the pipeline, parametersJsonSchema is JSON
 * Schema already. Proto JSON names are taken in camelCase or snake_case, as Google's
 * endpoint takes them. generationConfig's temperature, topP, maxOutputTokens and
 * stopSequences are the neutral request's; the rest of it goes to a Gemini upstream as
 * written, and is dropped (thinking, sampling knobs, safety) or refused (a response schema,
 * other modalities) on another wire, as the other client wires do.
 */
#include "gateway/gateway_int.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- names ---------------------------------------------------------------------------- */

/* Members of generationConfig rein reads; and those another wire may drop. */
static const char *const gc_read[] = {"temperature",   "topP",           "maxOutputTokens",
                                      "stopSequences", "candidateCount", NULL};
static const char *const gc_droppable[] = {"thinkingConfig",
                                           "topK",
                                           "seed",
                                           "presencePenalty",
                                           "frequencyPenalty",
                                           "mediaResolution",
                                           "enableEnhancedCivicAnswers",
                                           NULL};
/* Top-level members rein reads, and those another wire may drop. */
static const char *const top_read[] = {
    "contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "model", NULL};
static const char *const top_droppable[] = {"safetySettings", "labels", NULL};

static bool listed(const char *const *list, const char *key)
{
    return rein__gw_listed(list, key, strlen(key));
}

/* The camelCase spelling of a proto JSON name written in snake_case (Google's endpoint takes
 * both), into out; names already camel are copied. */
static const char *camel(const char *key, char *out, size_t size)
{
    size_t n = 0;

    for (const char *p = key; *p && n + 1 < size; p++) {
        if (*p == '_' && p[1] && p != key) {
            out[n++] = (char)toupper((unsigned char)*++p);
            continue;
        }
        out[n++] = *p;
    }
    out[n] = '\0';
    return out;
}

json_t *rein__gw_gm_member(const json_t *o, const char *camel_name)
{
    char snake[64];
    size_t n = 0;
    json_t *v = json_object_get(o, camel_name);

    if (v || !json_is_object(o))
        return v;
    for (const char *p = camel_name; *p && n + 2 < sizeof(snake); p++) {
        if (isupper((unsigned char)*p)) {
            snake[n++] = '_';
            snake[n++] = (char)tolower((unsigned char)*p);
        } else {
            snake[n++] = *p;
        }
    }
    snake[n] = '\0';
    return json_object_get(o, snake);
}

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(rein__gw_gm_member(o, key));
}

/* ---- the history ---------------------------------------------------------------------- */

static rein_err join(struct rein_buf *acc, const char *sep, const char *text)
{
    rein_err rc = REIN_OK;

    if (acc->len && sep[0])
        rc = rein_buf_adds(acc, sep);
    return rc ? rc : rein_buf_adds(acc, text);
}

/* The calls of the model turn before the user content being read, not answered yet:
 * [{"id", "name"}] (ids as the history has them). */
struct turn {
    json_t *open;
};

/* A part that rein's gateway does not carry: named, with what it does carry. */
static rein_err part_refused(const json_t *part, const char *p, struct rein__gw_bad *bad)
{
    const char *key = "?";
    void *it = json_object_iter((json_t *)part);

    for (; it; it = json_object_iter_next((json_t *)part, it)) {
        key = json_object_iter_key(it);
        if (strcmp(key, "thoughtSignature") != 0 && strcmp(key, "thought_signature") != 0 &&
            strcmp(key, "thought") != 0)
            break;
    }
    return rein__gw_bad(bad, p,
                        "%s: %.40s parts are not supported by rein's gateway (text, "
                        "inlineData, functionCall and functionResponse parts only)",
                        p, key);
}

/* The text of a functionResponse's response for the model: its output (or error) member
 * when that is all it holds, the Gemini provider's own shape; else the whole object. */
static char *response_text(const json_t *resp, bool *is_error)
{
    const json_t *only = json_object_size(resp) == 1
                             ? json_object_iter_value(json_object_iter((json_t *)resp))
                             : NULL;
    const char *key = only ? json_object_iter_key(json_object_iter((json_t *)resp)) : "";

    *is_error = only && strcmp(key, "error") == 0;
    if (only && (strcmp(key, "output") == 0 || *is_error)) {
        if (json_is_string(only))
            return rein_strdup(json_string_value(only));
        return rein_json_dumps(only);
    }
    return rein_json_dumps(resp);
}

/* Two strings, both there and equal. */
static bool same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* Takes open call i of t: its id into out. */
static const char *take_open(struct turn *t, size_t i, char *out, size_t size)
{
    snprintf(out, size, "%s", json_string_value(json_object_get(json_array_get(t->open, i), "id")));
    json_array_remove(t->open, i);
    return out;
}

/*
 * The id of the open call a functionResponse answers: the call of its id; else (no id, or
 * one no call has: a client that numbered its own calls) the first open call of its name;
 * else its own id as it is. NULL when it has no id and no call of its name is open. The call
 * is no longer open after this.
 */
static const char *answered(struct turn *t, const char *id, const char *name, char *out,
                            size_t size)
{
    size_t i;
    json_t *c;

    json_array_foreach(t->open, i, c)
    {
        if (same(json_string_value(json_object_get(c, "id")), id))
            return take_open(t, i, out, size);
    }
    json_array_foreach(t->open, i, c)
    {
        if (same(json_string_value(json_object_get(c, "name")), name))
            return take_open(t, i, out, size);
    }
    if (!id)
        return NULL;
    snprintf(out, size, "%s", id);
    return out;
}

static rein_err take_inline(const struct rein__gw_req *r, const json_t *part, json_t **atts,
                            const char *p, struct rein__gw_bad *bad);

/* A functionResponse's parts (Gemini 3's multimodal function responses: each an inlineData or a
 * fileData) into *atts (new, NULL when there are none), as a user content's media are
 * (decision 0098). */
static rein_err response_media(const struct rein__gw_req *r, const json_t *parts, const char *p,
                               json_t **atts, struct rein__gw_bad *bad)
{
    size_t k;
    json_t *part;
    char q[128];

    if (!parts || json_is_null(parts))
        return REIN_OK;
    if (!json_is_array(parts))
        return rein__gw_bad(bad, p, "%s.functionResponse.parts: a list is required", p);
    json_array_foreach(parts, k, part)
    {
        rein_err rc;
        snprintf(q, sizeof(q), "%s.functionResponse.parts[%zu]", p, k);
        if (!rein__gw_gm_member(part, "inlineData") && !rein__gw_gm_member(part, "fileData"))
            return rein__gw_bad(bad, q, "%s: a part of a functionResponse holds inlineData", q);
        if ((rc = take_inline(r, part, atts, q, bad)) != REIN_OK)
            return rc;
    }
    return REIN_OK;
}

static rein_err take_response(struct rein__gw_req *r, struct turn *t, const json_t *fr,
                              const char *p, struct rein__gw_bad *bad)
{
    const char *name = str(fr, "name"), *id = str(fr, "id");
    const json_t *resp = rein__gw_gm_member(fr, "response");
    char got[256], *text;
    bool is_error;
    json_t *msg, *atts = NULL;
    rein_err rc;

    if (id && !id[0])
        id = NULL;
    if (!json_is_object(fr) || !name || !name[0])
        return rein__gw_bad(bad, p, "%s.functionResponse.name: Field required", p);
    if (!json_is_object(resp))
        return rein__gw_bad(bad, p, "%s.functionResponse.response: an object is required", p);
    if (!answered(t, id, name, got, sizeof(got)))
        return rein__gw_bad(bad, p,
                            "%s.functionResponse: no functionCall named \"%.64s\" of the model "
                            "turn before it is left to answer",
                            p, name);
    if ((rc = response_media(r, rein__gw_gm_member(fr, "parts"), p, &atts, bad)) != REIN_OK) {
        json_decref(atts);
        return rc;
    }
    text = response_text(resp, &is_error);
    msg = !text
              ? NULL
              : json_pack("{s:s, s:s, s:s, s:s, s:b, s:O*}", "role", "tool", "tool_call_id", got,
                          "name", name, "content", text, "is_error", is_error, "attachments", atts);
    rein_free(text);
    json_decref(atts);
    return rein__gw_append(r, false, msg, p, bad);
}

/* An inlineData part's medium as an attachment (decision 0097); a fileData part names a file
 * by its URI, which only Google reads. */
static rein_err take_inline(const struct rein__gw_req *r, const json_t *part, json_t **atts,
                            const char *p, struct rein__gw_bad *bad)
{
    const json_t *in = rein__gw_gm_member(part, "inlineData");
    const json_t *mime = rein__gw_gm_member(in, "mimeType"), *data = rein__gw_gm_member(in, "data");

    if (!in)
        return rein__gw_media_ref(r, p, "a URI (fileData)", bad);
    if (!json_is_string(mime) || !json_is_string(data))
        return rein__gw_bad(bad, p, "%s.inlineData: mimeType and data are required", p);
    return rein__gw_media(r, atts, json_string_value(mime), json_string_length(mime),
                          json_string_value(data), json_string_length(data), p, bad);
}

/* A user content: its functionResponse parts, then its text and its media. */
static rein_err take_user(struct rein__gw_req *r, struct turn *t, const json_t *parts, size_t i,
                          struct rein__gw_bad *bad)
{
    struct rein_buf text;
    size_t j;
    json_t *part, *atts = NULL;
    char p[80];
    rein_err rc = REIN_OK;

    rein_buf_init(&text, 0);
    json_array_foreach(parts, j, part)
    {
        const json_t *fr = rein__gw_gm_member(part, "functionResponse");
        snprintf(p, sizeof(p), "contents[%zu].parts[%zu]", i, j);
        if (!json_is_object(part))
            rc = rein__gw_bad(bad, p, "%s: a part must be an object", p);
        else if (fr)
            rc = take_response(r, t, fr, p, bad);
        else if (str(part, "text") && !json_is_true(json_object_get(part, "thought")))
            rc = join(&text, "\n", str(part, "text"));
        else if (rein__gw_gm_member(part, "inlineData") || rein__gw_gm_member(part, "fileData"))
            rc = take_inline(r, part, &atts, p, bad);
        else if (!str(part, "text"))
            rc = part_refused(part, p, bad);
        if (rc)
            break;
    }
    if (!rc && (text.len || atts))
        rc =
            rein__gw_append(r, false, rein__gw_user_msg(text.ptr, text.len, atts), "contents", bad);
    json_decref(atts);
    rein_buf_release(&text);
    return rc;
}

/* The pieces of a model content. */
struct model_turn {
    struct rein_buf text, reasoning;
    json_t *calls;
    const char *signature; /* the first of a text or thought part */
};

static rein_err take_call(struct model_turn *m, struct turn *t, const json_t *part, size_t i,
                          size_t j, const char *p, struct rein__gw_bad *bad)
{
    const json_t *fc = rein__gw_gm_member(part, "functionCall"),
                 *args = rein__gw_gm_member(fc, "args");
    const char *name = str(fc, "name"), *id = str(fc, "id"), *sig = str(part, "thoughtSignature");
    char made[32], *text;
    json_t *call;

    if (!json_is_object(fc) || !name || !name[0])
        return rein__gw_bad(bad, p, "%s.functionCall.name: Field required", p);
    if (args && !json_is_object(args) && !json_is_null(args))
        return rein__gw_bad(bad, p, "%s.functionCall.args: an object is required", p);
    if (!id || !id[0]) {
        /* the Gemini provider's form of an id it does not send up */
        snprintf(made, sizeof(made), "call_%08zx%08zx", i & 0xffffffffu, j & 0xffffffffu);
        id = made;
    }
    text = json_is_object(args) ? rein_json_dumps(args) : rein_strdup("{}");
    call = text ? json_pack("{s:s, s:s, s:s}", "id", id, "name", name, "arguments", text) : NULL;
    rein_free(text);
    if (call && sig && json_object_set_new(call, "signature", json_string(sig))) {
        json_decref(call);
        call = NULL;
    }
    if (!call || json_array_append_new(m->calls, call) ||
        json_array_append_new(t->open, json_pack("{s:s, s:s}", "id", id, "name", name)))
        return REIN_ENOMEM;
    return REIN_OK;
}

static rein_err take_model_part(struct model_turn *m, struct turn *t, const json_t *part, size_t i,
                                size_t j, struct rein__gw_bad *bad)
{
    char p[80];
    const char *text = str(part, "text"), *sig = str(part, "thoughtSignature");

    snprintf(p, sizeof(p), "contents[%zu].parts[%zu]", i, j);
    if (!json_is_object(part))
        return rein__gw_bad(bad, p, "%s: a part must be an object", p);
    if (rein__gw_gm_member(part, "functionCall"))
        return take_call(m, t, part, i, j, p, bad);
    if (!text)
        return part_refused(part, p, bad);
    if (sig && !m->signature)
        m->signature = sig;
    /* a reply's text parts are pieces of one text (a stream's chunks): joined as they are */
    return rein_buf_adds(json_is_true(json_object_get(part, "thought")) ? &m->reasoning : &m->text,
                         text);
}

static rein_err take_model(struct rein__gw_req *r, struct turn *t, const json_t *parts, size_t i,
                           struct rein__gw_bad *bad)
{
    struct model_turn m = {.calls = json_array()};
    json_t *msg = json_pack("{s:s}", "role", "assistant"), *part;
    char p[48];
    size_t j;
    rein_err rc = msg && m.calls ? REIN_OK : REIN_ENOMEM;

    rein_buf_init(&m.text, 0);
    rein_buf_init(&m.reasoning, 0);
    /* a new model turn: the calls of the one before that were not answered stay unanswered */
    json_array_clear(t->open);
    json_array_foreach(parts, j, part)
    {
        if (!rc)
            rc = take_model_part(&m, t, part, i, j, bad);
    }
    if (!rc &&
        (json_object_set_new(msg, "content", json_string(m.text.ptr)) ||
         (json_array_size(m.calls) && json_object_set(msg, "tool_calls", m.calls)) ||
         (m.reasoning.len && json_object_set_new(msg, "reasoning", json_string(m.reasoning.ptr))) ||
         (m.signature &&
          json_object_set_new(msg, "reasoning_signature", json_string(m.signature)))))
        rc = REIN_ENOMEM;
    json_decref(m.calls);
    rein_buf_release(&m.text);
    rein_buf_release(&m.reasoning);
    if (rc) {
        json_decref(msg);
        return rc;
    }
    snprintf(p, sizeof(p), "contents[%zu]", i);
    return rein__gw_append(r, false, msg, p, bad);
}

static rein_err take_contents(struct rein__gw_req *r, const json_t *contents,
                              struct rein__gw_bad *bad)
{
    struct turn t = {.open = json_array()};
    size_t i;
    json_t *k;
    rein_err rc = t.open ? REIN_OK : REIN_ENOMEM;

    if (!rc && !contents)
        rc = rein__gw_bad(bad, "contents", "contents: Field required");
    else if (!rc && (!json_is_array(contents) || json_array_size(contents) == 0))
        rc = rein__gw_bad(bad, "contents", "contents: a non-empty list of contents is required");
    json_array_foreach(rc ? NULL : contents, i, k)
    {
        const char *role = str(k, "role");
        const json_t *parts = rein__gw_gm_member(k, "parts");
        char p[48];
        snprintf(p, sizeof(p), "contents[%zu]", i);
        if (!json_is_object(k))
            rc = rein__gw_bad(bad, p, "%s: a content must be an object", p);
        else if (!json_is_array(parts))
            rc = rein__gw_bad(bad, p, "%s.parts: a list of parts is required", p);
        else if (role && strcmp(role, "model") == 0)
            rc = take_model(r, &t, parts, i, bad);
        /* no role is a user's (a single turn); "function" is how early clients sent results */
        else if (!role || !role[0] || !strcmp(role, "user") || !strcmp(role, "function"))
            rc = take_user(r, &t, parts, i, bad);
        else
            rc = rein__gw_bad(bad, p, "%s.role: Please use a valid role: user, model.", p);
        if (rc)
            break;
    }
    json_decref(t.open);
    return rc;
}

/* systemInstruction: a content of text parts (its role ignored), or a plain string. */
static rein_err take_system(struct rein__gw_req *r, const json_t *sys, struct rein__gw_bad *bad)
{
    const json_t *parts = rein__gw_gm_member(sys, "parts");
    struct rein_buf text;
    size_t i;
    json_t *part;
    rein_err rc = REIN_OK;

    if (!sys || json_is_null(sys))
        return REIN_OK;
    if (json_is_string(sys))
        return rein__gw_append(
            r, false, rein__gw_text_msg("system", json_string_value(sys), json_string_length(sys)),
            "systemInstruction", bad);
    if (!json_is_array(parts))
        return rein__gw_bad(bad, "systemInstruction",
                            "systemInstruction.parts: a list of text parts is required");
    rein_buf_init(&text, 0);
    json_array_foreach(parts, i, part)
    {
        char p[64];
        snprintf(p, sizeof(p), "systemInstruction.parts[%zu]", i);
        rc = str(part, "text") ? join(&text, "\n", str(part, "text"))
                               : rein__gw_bad(bad, p, "%s: system instructions are text parts", p);
        if (rc)
            break;
    }
    if (!rc)
        rc = rein__gw_append(r, false, rein__gw_text_msg("system", text.ptr, text.len),
                             "systemInstruction", bad);
    rein_buf_release(&text);
    return rc;
}

/* ---- tools ---------------------------------------------------------------------------- */

/* One type name in lower case; NULL for Gemini's TYPE_UNSPECIFIED (no type). */
static json_t *type_word(const json_t *v)
{
    char low[24];
    size_t n = 0;
    const char *t = json_string_value(v);

    if (!t)
        return json_incref((json_t *)v);
    for (; *t && n + 1 < sizeof(low); t++)
        low[n++] = (char)tolower((unsigned char)*t);
    low[n] = '\0';
    return strcmp(low, "type_unspecified") == 0 ? NULL : json_string(low);
}

/* A type (a name or a list of them) as JSON Schema writes it, with "null" added when the
 * schema is nullable: new; an empty array when no type is left; NULL when memory is
 * exhausted. */
static json_t *type_in(const json_t *v, bool nullable)
{
    json_t *list = json_array(), *e;
    size_t i;
    bool bad = !list;

    json_array_foreach(json_is_array(v) ? v : NULL, i, e)
    {
        json_t *w = type_word(e);
        bad |= w && json_array_append_new(list, w);
    }
    if (json_is_string(v)) {
        json_t *w = type_word(v);
        bad |= w && json_array_append_new(list, w);
    }
    if (nullable && json_array_size(list))
        bad |= json_array_append_new(list, json_string("null")) != 0;
    if (bad) {
        json_decref(list);
        return NULL;
    }
    if (json_array_size(list) == 1) {
        json_t *one = json_incref(json_array_get(list, 0));
        json_decref(list);
        return one;
    }
    return list;
}

/*
 * Gemini's Schema (an OpenAPI 3.0 subset: types in upper case as the SDKs send the Type enum,
 * nullable, propertyOrdering) as the JSON Schema the pipeline checks with: new, or NULL when
 * memory is exhausted. Keywords the two share are kept; a type Gemini leaves unspecified is
 * none.
 */
static json_t *schema_in(const json_t *s, int depth)
{
    json_t *out = json_object(), *v;
    const char *key;
    char name[64];

    if (!out || !json_is_object(s) || depth > 64)
        return out;
    json_object_foreach((json_t *)s, key, v)
    {
        json_t *conv = NULL;
        camel(key, name, sizeof(name));
        if (!strcmp(name, "nullable") || !strcmp(name, "propertyOrdering"))
            continue;
        if (!strcmp(name, "type") && (json_is_string(v) || json_is_array(v))) {
            conv = type_in(v, json_is_true(rein__gw_gm_member(s, "nullable")));
            if (json_is_array(conv) && !json_array_size(conv)) {
                json_decref(conv); /* TYPE_UNSPECIFIED: no type */
                continue;
            }
        } else if ((!strcmp(name, "properties") || !strcmp(name, "$defs")) && json_is_object(v)) {
            const char *pk;
            json_t *pv;
            conv = json_object();
            json_object_foreach(v, pk, pv)
            {
                if (conv && json_object_set_new(conv, pk, schema_in(pv, depth + 1))) {
                    json_decref(conv);
                    conv = NULL;
                }
            }
        } else if (!strcmp(name, "items") && json_is_object(v)) {
            conv = schema_in(v, depth + 1);
        } else if (!strcmp(name, "anyOf") && json_is_array(v)) {
            size_t i;
            json_t *e;
            conv = json_array();
            json_array_foreach(v, i, e)
            {
                if (conv && json_array_append_new(conv, schema_in(e, depth + 1))) {
                    json_decref(conv);
                    conv = NULL;
                }
            }
        } else if (!strcmp(name, "example")) {
            conv = json_pack("[O]", v);
            snprintf(name, sizeof(name), "examples");
        } else {
            conv = json_incref(v);
        }
        if (!conv || json_object_set_new(out, name, conv)) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

static rein_err take_decl(struct rein__gw_req *r, const json_t *d, const char *p,
                          struct rein__gw_bad *bad)
{
    const json_t *params = rein__gw_gm_member(d, "parameters"),
                 *js = rein__gw_gm_member(d, "parametersJsonSchema");
    struct rein__gw_tool *t = &r->tools[r->ntools];

    if (!json_is_object(d) || !str(d, "name"))
        return rein__gw_bad(bad, p, "%s.name: Field required", p);
    if (params && js && !json_is_null(params) && !json_is_null(js))
        return rein__gw_bad(bad, p, "%s: parameters and parametersJsonSchema cannot both be set",
                            p);
    if ((params && !json_is_null(params) && !json_is_object(params)) ||
        (js && !json_is_null(js) && !json_is_object(js)))
        return rein__gw_bad(bad, p, "%s.parameters: a schema object is required", p);
    t->name = str(d, "name");
    t->description = str(d, "description");
    if (json_is_object(js)) {
        t->parameters = (json_t *)js;
    } else if (json_is_object(params)) {
        /* the converted schema is kept by the request (r->made), the tree left as sent */
        json_t *conv = schema_in(params, 0);
        if (!r->made)
            r->made = json_array();
        if (!r->made) {
            json_decref(conv);
            return REIN_ENOMEM;
        }
        if (!conv || json_array_append_new(r->made, conv)) /* taken even when it fails */
            return REIN_ENOMEM;
        t->parameters = conv;
    }
    r->ntools++;
    return REIN_OK;
}

static size_t count_decls(const json_t *tools)
{
    size_t n = 0, i;
    json_t *t;

    json_array_foreach(tools, i, t)
    {
        n += json_array_size(rein__gw_gm_member(t, "functionDeclarations"));
    }
    return n;
}

static rein_err take_tools(struct rein__gw_req *r, const json_t *tools, struct rein__gw_bad *bad)
{
    size_t i, j;
    json_t *t, *d;
    char p[96];

    if (!tools || json_is_null(tools))
        return REIN_OK;
    if (!json_is_array(tools))
        return rein__gw_bad(bad, "tools", "tools: a list of tools is required");
    r->tools_json = (json_t *)tools;
    r->tools = rein_calloc(count_decls(tools) + 1, sizeof(*r->tools));
    if (!r->tools)
        return REIN_ENOMEM;
    json_array_foreach(tools, i, t)
    {
        const char *key;
        json_t *v;
        snprintf(p, sizeof(p), "tools[%zu]", i);
        if (!json_is_object(t))
            return rein__gw_bad(bad, p, "%s: a tool must be an object", p);
        json_object_foreach(t, key, v)
        {
            char name[64];
            if (strcmp(camel(key, name, sizeof(name)), "functionDeclarations") != 0)
                return rein__gw_bad(bad, p,
                                    "%s.%.40s: Gemini's built-in tools are not supported by "
                                    "rein's gateway (functionDeclarations only)",
                                    p, key);
        }
        if (!json_is_array(rein__gw_gm_member(t, "functionDeclarations")))
            return rein__gw_bad(bad, p, "%s.functionDeclarations: a list is required", p);
        json_array_foreach(rein__gw_gm_member(t, "functionDeclarations"), j, d)
        {
            rein_err rc;
            snprintf(p, sizeof(p), "tools[%zu].functionDeclarations[%zu]", i, j);
            rc = take_decl(r, d, p, bad);
            if (rc)
                return rc;
        }
    }
    return REIN_OK;
}

/* toolConfig.functionCallingConfig: AUTO, ANY (one allowed name: that tool), NONE; VALIDATED
 * (the model may call or answer, its calls held to the schemas) is AUTO here, as rein holds
 * every call to its schema anyway. */
static rein_err take_tool_config(struct rein__gw_req *r, const json_t *tc, struct rein__gw_bad *bad)
{
    const json_t *fc = rein__gw_gm_member(tc, "functionCallingConfig");
    const json_t *names = rein__gw_gm_member(fc, "allowedFunctionNames");
    const char *mode = str(fc, "mode"), *choice;
    static const char param[] = "toolConfig.functionCallingConfig";

    if (!tc || json_is_null(tc) || !fc || json_is_null(fc))
        return REIN_OK;
    if (!json_is_object(fc) || (rein__gw_gm_member(fc, "mode") && !mode))
        return rein__gw_bad(bad, param, "%s: an object with a mode is required", param);
    if (names && !json_is_array(names))
        return rein__gw_bad(bad, param, "%s.allowedFunctionNames: a list is required", param);
    if (!mode || !strcasecmp(mode, "AUTO") || !strcasecmp(mode, "MODE_UNSPECIFIED") ||
        !strcasecmp(mode, "VALIDATED"))
        choice = "auto";
    else if (!strcasecmp(mode, "NONE"))
        choice = "none";
    else if (!strcasecmp(mode, "ANY"))
        choice = "required";
    else
        return rein__gw_bad(bad, param, "%s.mode: expected AUTO, ANY, NONE or VALIDATED", param);
    if (json_array_size(names) && strcmp(choice, "required") != 0)
        return rein__gw_bad(bad, param,
                            "%s.allowedFunctionNames: only with mode ANY (the names a call "
                            "must be to)",
                            param);
    if (json_array_size(names) > 1)
        return rein__gw_bad(bad, param,
                            "%s.allowedFunctionNames: rein's gateway can hold the model to one "
                            "function or to any of the tools, not to a list of several",
                            param);
    if (json_array_size(names) == 1) {
        choice = json_string_value(json_array_get(names, 0));
        if (!choice || !choice[0])
            return rein__gw_bad(bad, param, "%s.allowedFunctionNames: a name is required", param);
    }
    r->tool_choice = rein_strdup(choice);
    return r->tool_choice ? REIN_OK : REIN_ENOMEM;
}

/* ---- options -------------------------------------------------------------------------- */

static rein_err take_number(const json_t *gc, const char *key, double lo, double hi, double *out,
                            struct rein__gw_bad *bad)
{
    const json_t *v = rein__gw_gm_member(gc, key);

    if (!v || json_is_null(v))
        return REIN_OK;
    if (!json_is_number(v) || json_number_value(v) < lo || json_number_value(v) > hi)
        return rein__gw_bad(bad, key, "generationConfig.%s: a number from %g to %g is required",
                            key, lo, hi);
    *out = json_number_value(v);
    return REIN_OK;
}

static rein_err take_stop(struct rein__gw_req *r, const json_t *v, struct rein__gw_bad *bad)
{
    size_t i;
    json_t *s;

    if (!v || json_is_null(v))
        return REIN_OK;
    if (!json_is_array(v))
        return rein__gw_bad(bad, "generationConfig.stopSequences",
                            "generationConfig.stopSequences: a list of strings is required");
    json_array_foreach(v, i, s)
    {
        if (!json_is_string(s))
            return rein__gw_bad(bad, "generationConfig.stopSequences",
                                "generationConfig.stopSequences: a list of strings is required");
    }
    if (json_array_size(v))
        r->stop = json_incref((json_t *)v);
    return REIN_OK;
}

/* A member of generationConfig that rein does not read: as written for a Gemini upstream
 * (r->passthrough's generationConfig), named for the others. */
static rein_err gc_rest(struct rein__gw_req *r, const char *key, json_t *v, json_t *keep)
{
    char name[64], full[96];
    json_t *list;

    camel(key, name, sizeof(name));
    if (listed(gc_read, name))
        return REIN_OK;
    /* text, the one modality and mime type every wire answers in */
    if ((!strcmp(name, "responseMimeType") && json_is_string(v) &&
         !strcmp(json_string_value(v), "text/plain")) ||
        (!strcmp(name, "responseModalities") && json_array_size(v) == 1 &&
         json_string_value(json_array_get(v, 0)) &&
         !strcasecmp(json_string_value(json_array_get(v, 0)), "TEXT")))
        list = NULL;
    else
        list = listed(gc_droppable, name) ? r->dropped : r->unsupported;
    snprintf(full, sizeof(full), "generationConfig.%s", name);
    if (json_object_set(keep, key, v) || (list && json_array_append_new(list, json_string(full))))
        return REIN_ENOMEM;
    return REIN_OK;
}

static rein_err take_generation(struct rein__gw_req *r, const json_t *gc, struct rein__gw_bad *bad)
{
    const json_t *v;
    const char *key;
    json_t *keep, *m;
    rein_err rc;

    if (!gc || json_is_null(gc))
        return REIN_OK;
    if (!json_is_object(gc))
        return rein__gw_bad(bad, "generationConfig", "generationConfig: an object is required");
    rc = take_number(gc, "temperature", 0, 2, &r->temperature, bad);
    if (!rc)
        rc = take_number(gc, "topP", 0, 1, &r->top_p, bad);
    if (rc)
        return rc;
    v = rein__gw_gm_member(gc, "maxOutputTokens");
    if (v && !json_is_null(v) && (!json_is_integer(v) || json_integer_value(v) < 1))
        return rein__gw_bad(bad, "generationConfig.maxOutputTokens",
                            "generationConfig.maxOutputTokens: an integer >= 1 is required");
    r->max_tokens = json_is_integer(v) ? json_integer_value(v) : 0;
    v = rein__gw_gm_member(gc, "candidateCount");
    if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 1))
        return rein__gw_bad(bad, "generationConfig.candidateCount",
                            "generationConfig.candidateCount: rein's gateway answers with one "
                            "candidate (its calls are checked one reply at a time); send 1 or "
                            "leave it out");
    rc = take_stop(r, rein__gw_gm_member(gc, "stopSequences"), bad);
    if (rc)
        return rc;
    keep = json_object();
    if (!keep)
        return REIN_ENOMEM;
    json_object_foreach((json_t *)gc, key, m)
    {
        rc = gc_rest(r, key, m, keep);
        if (rc)
            break;
    }
    if (!rc && json_object_size(keep) && json_object_set(r->passthrough, "generationConfig", keep))
        rc = REIN_ENOMEM;
    json_decref(keep);
    return rc;
}

/* The other top-level members: as written for a Gemini upstream, named for the others. */
static rein_err take_rest(struct rein__gw_req *r, const json_t *body)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)body, key, v)
    {
        char name[64];
        camel(key, name, sizeof(name));
        if (listed(top_read, name))
            continue;
        if (rein__gw_rest(r, key, v, name, listed(top_droppable, name)))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

rein_err rein__gw_gemini_parse(struct rein__gw_req *r, const char *body, size_t len,
                               struct rein__gw_bad *bad)
{
    rein_error perr;
    rein_err rc;

    r->doc = rein__gw_parse_doc(r, body, len, &perr);
    if (!r->doc)
        return perr.code == REIN_ENOMEM ? REIN_ENOMEM
                                        : rein__gw_bad(bad, "",
                                                       "Invalid JSON payload received: line %d, "
                                                       "column %d: %s",
                                                       perr.line, perr.column, perr.msg);
    if (!json_is_object(r->doc))
        return rein__gw_bad(bad, "", "Invalid JSON payload received: the body must be an object");
    if (!r->model && str(r->doc, "model"))
        r->model = str(r->doc, "model");
    rc = take_system(r, rein__gw_gm_member(r->doc, "systemInstruction"), bad);
    if (!rc)
        rc = take_contents(r, rein__gw_gm_member(r->doc, "contents"), bad);
    if (!rc && !r->tools_known)
        rc = take_tools(r, rein__gw_gm_member(r->doc, "tools"), bad);
    if (!rc && r->tools_json)
        (void)rein__gw_raw_member(body, len, "tools", &r->tools_raw, &r->tools_raw_len);
    if (!rc)
        rc = take_tool_config(r, rein__gw_gm_member(r->doc, "toolConfig"), bad);
    if (!rc)
        rc = take_generation(r, rein__gw_gm_member(r->doc, "generationConfig"), bad);
    if (!rc)
        rc = take_rest(r, r->doc);
    return rc;
}

rein_err rein__gw_gm_check_choice(const struct rein__gw_ctx *c, struct rein__gw_bad *bad)
{
    const char *choice = c->req.tool_choice;
    const struct rein__gw_tools *t = c->tools;

    if (!choice || !strcmp(choice, "auto") || !strcmp(choice, "none") ||
        !strcmp(choice, "required"))
        return REIN_OK;
    for (size_t i = 0; t && i < t->nclient; i++) {
        if (!strcmp(t->client[i].name, choice))
            return REIN_OK;
    }
    if (rein__gw_tools_is_server(t, choice))
        return REIN_OK;
    return rein__gw_bad(bad, "toolConfig.functionCallingConfig.allowedFunctionNames",
                        "toolConfig.functionCallingConfig.allowedFunctionNames: \"%.64s\" is not "
                        "one of the request's functionDeclarations",
                        choice);
}

/* ---- answers -------------------------------------------------------------------------- */

/* The upstream speaks Gemini: its signatures mean something to this client. */
static bool signed_upstream(const struct rein__gw_ctx *c)
{
    return strcmp(rein_provider_wire(c->g->provider), "gemini") == 0;
}

static void call_part(struct rein_jw *w, const struct rein__gw_call *call)
{
    size_t n = strlen(call->args);

    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "functionCall");
    rein_jw_obj_begin(w);
    if (!rein_model_call_id_made_up(call->id)) {
        REIN_JW_KEY(w, "id");
        rein_jw_str(w, call->id);
    }
    REIN_JW_KEY(w, "name");
    rein_jw_str(w, call->name);
    REIN_JW_KEY(w, "args");
    if (rein__gw_args_object(call->args, n))
        rein_jw_raw(w, call->args, n);
    else
        rein_jw_raw(w, "{}", 2);
    rein_jw_obj_end(w);
    if (call->signature) {
        REIN_JW_KEY(w, "thoughtSignature");
        rein_jw_str(w, call->signature);
    }
    rein_jw_obj_end(w);
}

static void text_part(struct rein_jw *w, const char *text, size_t n, bool thought, const char *sig)
{
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "text");
    rein_jw_strn(w, text, n);
    if (thought) {
        REIN_JW_KEY(w, "thought");
        rein_jw_bool(w, true);
    }
    if (sig) {
        REIN_JW_KEY(w, "thoughtSignature");
        rein_jw_str(w, sig);
    }
    rein_jw_obj_end(w);
}

/* Gemini's finishReason for the answer: the upstream's own word when it speaks Gemini. */
static const char *finish_reason(const struct rein__gw_ctx *c)
{
    enum rein_finish f = c->last ? rein_model_response_finish(c->last) : REIN_FINISH_STOP;
    const char *own = c->last ? rein_model_response_finish_reason(c->last) : NULL;

    if (c->nout)
        return "STOP"; /* Gemini ends a turn of calls with STOP */
    if (own && signed_upstream(c) && f != REIN_FINISH_NONE)
        return own;
    switch (f) {
    case REIN_FINISH_LENGTH:
        return "MAX_TOKENS";
    case REIN_FINISH_CONTENT_FILTER:
        return "SAFETY";
    case REIN_FINISH_OTHER:
        return "OTHER";
    default:
        return "STOP";
    }
}

/* usageMetadata: rein's output tokens hold the thoughts, which Gemini counts apart. */
static void usage(const struct rein__gw_ctx *c, struct rein_jw *w)
{
    int64_t thoughts = c->reasoning_tokens > 0 ? c->reasoning_tokens : 0;
    int64_t cand = c->out_tokens - thoughts;

    REIN_JW_KEY(w, "usageMetadata");
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "promptTokenCount");
    rein_jw_int(w, c->in_tokens);
    REIN_JW_KEY(w, "candidatesTokenCount");
    rein_jw_int(w, cand > 0 ? cand : 0);
    REIN_JW_KEY(w, "totalTokenCount");
    rein_jw_int(w, c->in_tokens + c->out_tokens);
    if (c->cached_tokens >= 0) {
        REIN_JW_KEY(w, "cachedContentTokenCount");
        rein_jw_int(w, c->cached_tokens);
    }
    if (c->reasoning_tokens >= 0) {
        REIN_JW_KEY(w, "thoughtsTokenCount");
        rein_jw_int(w, c->reasoning_tokens);
    }
    rein_jw_obj_end(w);
}

/* What every answer and chunk ends with: the model, the response's id. */
static void tail(const struct rein__gw_ctx *c, struct rein_jw *w)
{
    REIN_JW_KEY(w, "modelVersion");
    rein_jw_str(w, c->model);
    REIN_JW_KEY(w, "responseId");
    rein_jw_str(w, c->id);
}

/* {"candidates": [{"content": {"role": "model", "parts": [ — the parts follow. */
static void candidate_open(struct rein_jw *w)
{
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "candidates");
    rein_jw_arr_begin(w);
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "content");
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "role");
    rein_jw_str(w, "model");
    REIN_JW_KEY(w, "parts");
    rein_jw_arr_begin(w);
}

/* Closes the parts and the content; then the candidate's finishReason (NULL: none yet). */
static void candidate_close(struct rein_jw *w, const char *finish)
{
    rein_jw_arr_end(w);
    rein_jw_obj_end(w);
    if (finish) {
        REIN_JW_KEY(w, "finishReason");
        rein_jw_str(w, finish);
    }
    REIN_JW_KEY(w, "index");
    rein_jw_int(w, 0);
    rein_jw_obj_end(w);
    rein_jw_arr_end(w);
}

/* The reply's own signature, for the client when it means something there. */
static const char *reply_signature(const struct rein__gw_ctx *c)
{
    return c->last && signed_upstream(c) ? rein_model_response_signature(c->last) : NULL;
}

static rein_err gm_reply(const struct rein__gw_ctx *c, struct rein_buf *out)
{
    const char *text = c->last ? rein_model_response_text(c->last) : "";
    const char *reasoning = c->last ? rein_model_response_reasoning(c->last) : "";
    const char *refusal = c->last ? rein_model_response_refusal(c->last) : NULL;
    const char *sig = reply_signature(c);
    struct rein_jw w;

    if (!text[0] && refusal)
        text = refusal;
    rein_jw_init(&w, out);
    candidate_open(&w);
    if (reasoning[0])
        text_part(&w, reasoning, strlen(reasoning), true, NULL);
    /* the text's signature on its part; with calls and no text, on an empty part only when the
     * first call has none of its own (as Gemini sends it) */
    if (text[0] || !c->nout)
        text_part(&w, text, strlen(text), false, sig);
    else if (sig && !c->out[0].signature)
        text_part(&w, "", 0, false, sig);
    for (size_t i = 0; i < c->nout; i++)
        call_part(&w, &c->out[i]);
    candidate_close(&w, finish_reason(c));
    usage(c, &w);
    tail(c, &w);
    rein__gw_rein_member(c, &w);
    rein_jw_obj_end(&w);
    return rein_jw_finish(&w);
}

/* google.rpc.Code names by HTTP status, as Google's APIs map them. */
static const char *status_word(int status)
{
    switch (status) {
    case 400:
    case 413:
    case 422:
        return "INVALID_ARGUMENT";
    case 401:
        return "UNAUTHENTICATED";
    case 403:
        return "PERMISSION_DENIED";
    case 404:
        return "NOT_FOUND";
    case 409:
        return "ABORTED";
    case 429:
        return "RESOURCE_EXHAUSTED";
    case 499:
        return "CANCELLED";
    case 501:
        return "UNIMPLEMENTED";
    case 502:
    case 503:
    case 529:
        return "UNAVAILABLE";
    case 504:
        return "DEADLINE_EXCEEDED";
    default:
        return status >= 500 ? "INTERNAL" : status >= 400 ? "FAILED_PRECONDITION" : "UNKNOWN";
    }
}

static rein_err gm_error(const struct rein__gw_err *e, const json_t *rein_ext, struct rein_buf *out)
{
    const char *msg = json_string_value(json_object_get(e->upstream, "message"));
    struct rein_jw w;

    rein_jw_init(&w, out);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "error");
    if (e->upstream_same && json_is_object(e->upstream)) {
        rein_jw_json(&w, e->upstream); /* Gemini's own: its details (RetryInfo, …) kept */
    } else {
        rein_jw_obj_begin(&w);
        REIN_JW_KEY(&w, "code");
        rein_jw_int(&w, e->status);
        REIN_JW_KEY(&w, "message");
        rein_jw_str(&w, msg ? msg : e->message);
        REIN_JW_KEY(&w, "status");
        rein_jw_str(&w, status_word(e->status));
        rein_jw_obj_end(&w);
    }
    if (rein_ext) {
        REIN_JW_KEY(&w, "rein");
        rein_jw_json(&w, rein_ext);
    }
    rein_jw_obj_end(&w);
    return rein_jw_finish(&w);
}

/* ---- streaming: one GenerateContentResponse per event ---------------------------------- */

static rein_err chunk_send(struct rein__gw_ctx *c, struct rein_jw *w)
{
    rein_err rc;

    rein_jw_obj_end(w);
    rc = rein_jw_finish(w);
    return rc ? rc : rein__gw_emit(c, NULL, c->ev.ptr, c->ev.len);
}

static void chunk_begin(struct rein__gw_ctx *c, struct rein_jw *w)
{
    rein_buf_reset(&c->ev);
    rein_jw_init(w, &c->ev);
    candidate_open(w);
}

static rein_err gm_s_text(struct rein__gw_ctx *c, enum rein_model_event_type kind, const char *p,
                          size_t n)
{
    struct rein_jw w;

    if (n == 0)
        return REIN_OK;
    chunk_begin(c, &w);
    text_part(&w, p, n, kind == REIN_MEV_REASONING_DELTA, NULL);
    candidate_close(&w, NULL);
    tail(c, &w);
    return chunk_send(c, &w);
}

static rein_err gm_s_call(struct rein__gw_ctx *c, const struct rein__gw_call *call, size_t index)
{
    struct rein_jw w;

    (void)index;
    chunk_begin(c, &w);
    call_part(&w, call);
    candidate_close(&w, NULL);
    tail(c, &w);
    return chunk_send(c, &w);
}

/* The last chunk: the finish reason, the usage, the reply's signature when it has one. */
static rein_err gm_s_end(struct rein__gw_ctx *c)
{
    const char *sig = reply_signature(c);
    struct rein_jw w;

    chunk_begin(c, &w);
    if (sig && !(c->nout && c->out[0].signature))
        text_part(&w, "", 0, false, sig);
    candidate_close(&w, finish_reason(c));
    usage(c, &w);
    tail(c, &w);
    rein__gw_rein_member(c, &w);
    return chunk_send(c, &w);
}

/* ---- models --------------------------------------------------------------------------- */

rein_err rein__gw_gm_model(const rein_gateway *g, const char *name, struct rein_buf *out)
{
    const char *model = name ? name : rein_provider_model(g->provider);
    struct rein_buf full;
    struct rein_jw w;
    rein_err rc;

    if (!strncmp(model, "models/", 7))
        model += 7;
    rein_buf_init(&full, 0);
    rc = rein_buf_addf(&full, "models/%s", model);
    rein_jw_init(&w, out);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "name");
    rein_jw_strn(&w, full.ptr, full.len);
    REIN_JW_KEY(&w, "version");
    rein_jw_str(&w, "rein");
    REIN_JW_KEY(&w, "displayName");
    rein_jw_str(&w, model);
    REIN_JW_KEY(&w, "description");
    rein_jw_str(&w, "the model behind rein's gateway, its tool calls checked");
    REIN_JW_KEY(&w, "supportedGenerationMethods");
    rein_jw_arr_begin(&w);
    rein_jw_str(&w, "generateContent");
    rein_jw_str(&w, "streamGenerateContent");
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    rein_buf_release(&full);
    return rc ? rc : rein_jw_finish(&w);
}

static rein_err gm_models(const rein_gateway *g, struct rein_buf *out)
{
    rein_err rc = rein_buf_adds(out, "{\"models\":[");

    if (!rc)
        rc = rein__gw_gm_model(g, NULL, out);
    return rc ? rc : rein_buf_adds(out, "]}");
}

const struct rein__gw_wire rein__gw_gemini = {
    .name = "gemini",
    .id_prefix = "call_",
    .parse = rein__gw_gemini_parse,
    .reply = gm_reply,
    .error = gm_error,
    .s_text = gm_s_text,
    .s_call = gm_s_call,
    .s_end = gm_s_end,
    .s_error = rein__gw_s_error_body, /* as Gemini ends a stream that failed */
    .models = gm_models,
};
