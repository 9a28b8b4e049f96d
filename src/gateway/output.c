/*
 * A client's structured-output ask (decision 0100): OpenAI chat's response_format, the
 * Responses API's text.format, Anthropic's output_config.format (and the beta's top-level
 * output_format), Gemini's generationConfig responseMimeType with responseJsonSchema or
 * responseSchema (the OpenAPI subset, read as the JSON Schema it means). For an upstream of
 * another wire the ask becomes the neutral request's output format, which that wire writes in
 * its own words; for every upstream it is what the answer's text is checked against
 * (gateway.c), the same-wire body still going as the client wrote it (decision 0085).
 */
#include "gateway_int.h"

#include <rein/schema.h>

#include <string.h>
#include <strings.h>

void rein__gw_output_release(struct rein__gw_output *o)
{
    json_decref(o->schema);
    rein_schema_free(o->compiled);
    memset(o, 0, sizeof(*o));
}

static bool is(const json_t *v, const char *word)
{
    return json_is_string(v) && strcmp(json_string_value(v), word) == 0;
}

/* ---- Gemini's Schema ---------------------------------------------------------------------- */

/*
 * Gemini's responseSchema (an OpenAPI 3.0 Schema subset) as the JSON Schema it means: type
 * names in any case lowered, nullable as a type that also takes null, propertyOrdering and
 * example (annotations of Gemini's own) left out; keywords both have kept. New reference, or
 * NULL (memory).
 */
static json_t *openapi_schema(const json_t *s)
{
    static const char *const subs[] = {"properties", "items", "anyOf"};
    const char *key;
    json_t *out, *v;
    char type[16];

    if (!json_is_object(s))
        return json_deep_copy(s);
    out = json_object();
    if (!out)
        return NULL;
    json_object_foreach((json_t *)s, key, v)
    {
        json_t *copy = NULL;
        if (!strcmp(key, "propertyOrdering") || !strcmp(key, "property_ordering") ||
            !strcmp(key, "example") || !strcmp(key, "nullable"))
            continue;
        if (!strcmp(key, "type") && json_is_string(v) && json_string_length(v) < sizeof(type)) {
            snprintf(type, sizeof(type), "%s", json_string_value(v));
            for (char *c = type; *c; c++)
                *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
            copy = json_is_true(json_object_get(s, "nullable")) ? json_pack("[s, s]", type, "null")
                                                                : json_string(type);
        } else if (!strcmp(key, subs[0]) && json_is_object(v)) {
            const char *p;
            json_t *ps;
            copy = json_object();
            json_object_foreach(v, p, ps)
            {
                if (copy && json_object_set_new(copy, p, openapi_schema(ps))) {
                    json_decref(copy);
                    copy = NULL;
                }
            }
        } else if (!strcmp(key, subs[1])) {
            copy = openapi_schema(v);
        } else if (!strcmp(key, subs[2]) && json_is_array(v)) {
            size_t i;
            json_t *x;
            copy = json_array();
            json_array_foreach(v, i, x)
            {
                if (copy && json_array_append_new(copy, openapi_schema(x))) {
                    json_decref(copy);
                    copy = NULL;
                }
            }
        } else {
            copy = json_deep_copy(v);
        }
        if (!copy || json_object_set_new(out, key, copy)) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* ---- each wire's words ------------------------------------------------------------------- */

static rein_err take_schema(struct rein__gw_output *o, const json_t *schema, const char *param,
                            struct rein__gw_bad *bad)
{
    if (!json_is_object(schema))
        return rein__gw_bad(bad, param, "'%s': a JSON Schema object is required", param);
    o->kind = REIN_OUTPUT_JSON_SCHEMA;
    snprintf(o->schema_at, sizeof(o->schema_at), "%s", param);
    o->schema = json_deep_copy(schema);
    return o->schema ? REIN_OK : REIN_ENOMEM;
}

/* OpenAI's format object: chat's response_format nests name, schema and strict under
 * json_schema; the Responses API's text.format has them beside its type. */
static rein_err openai_ask(struct rein__gw_output *o, const json_t *f, bool nested,
                           const char *param, struct rein__gw_bad *bad)
{
    const json_t *type = json_object_get(f, "type");
    const json_t *js = nested ? json_object_get(f, "json_schema") : f;
    const json_t *name = json_object_get(js, "name");
    char p[64];

    o->member = param;
    if (!json_is_object(f))
        return rein__gw_bad(bad, param, "'%s': an object is required", param);
    if (is(type, "text"))
        return REIN_OK;
    if (is(type, "json_object")) {
        o->kind = REIN_OUTPUT_JSON_OBJECT;
        return REIN_OK;
    }
    snprintf(p, sizeof(p), "%s.type", param);
    if (!is(type, "json_schema"))
        return rein__gw_bad(bad, p,
                            "Invalid value for '%s': supported values are 'text', 'json_object' "
                            "and 'json_schema'.",
                            p);
    snprintf(p, sizeof(p), "%s%s", param, nested ? ".json_schema" : "");
    if (!json_is_object(js))
        return rein__gw_bad(bad, p, "Missing required parameter: '%s'.", p);
    if (name && (!json_is_string(name) || json_string_length(name) >= sizeof(o->name)))
        return rein__gw_bad(bad, p, "'%s.name': a string of at most %zu characters is required", p,
                            sizeof(o->name) - 1);
    snprintf(o->name, sizeof(o->name), "%s", name ? json_string_value(name) : "");
    o->strict = json_is_true(json_object_get(js, "strict"));
    snprintf(p, sizeof(p), "%s%s.schema", param, nested ? ".json_schema" : "");
    return take_schema(o, json_object_get(js, "schema"), p, bad);
}

/* Anthropic's {"type": "json_schema", "schema": {...}}. */
static rein_err anthropic_ask(struct rein__gw_output *o, const json_t *f, const char *param,
                              struct rein__gw_bad *bad)
{
    char p[64];

    if (!f || json_is_null(f))
        return REIN_OK;
    o->member = param;
    snprintf(p, sizeof(p), "%s.type", param);
    if (!json_is_object(f) || !is(json_object_get(f, "type"), "json_schema"))
        return rein__gw_bad(bad, p, "%s: Input should be 'json_schema'", p);
    snprintf(p, sizeof(p), "%s.schema", param);
    return take_schema(o, json_object_get(f, "schema"), p, bad);
}

/* Gemini's mime type and response schemas, in either spelling. text/plain is the default;
 * text/x.enum (an enum's bare value) and the other types have no form elsewhere and stay as
 * the parser left them (named when refused). */
static rein_err gemini_ask(struct rein__gw_output *o, const json_t *gc, struct rein__gw_bad *bad)
{
    const json_t *mime = rein__gw_gm_member(gc, "responseMimeType");
    const json_t *js = rein__gw_gm_member(gc, "responseJsonSchema");
    const json_t *schema = rein__gw_gm_member(gc, "responseSchema");
    json_t *converted;
    rein_err rc;

    if (!is(mime, "application/json"))
        return REIN_OK;
    o->member = "generationConfig.responseMimeType";
    if (js && schema)
        return rein__gw_bad(bad, "generationConfig.responseJsonSchema",
                            "generationConfig: responseSchema and responseJsonSchema cannot both "
                            "be set");
    if (js) {
        o->member = "generationConfig.responseJsonSchema";
        return take_schema(o, js, o->member, bad);
    }
    if (!schema) {
        o->kind = REIN_OUTPUT_JSON_OBJECT;
        return REIN_OK;
    }
    o->member = "generationConfig.responseSchema";
    if (!json_is_object(schema))
        return take_schema(o, schema, o->member, bad);
    converted = openapi_schema(schema);
    if (!converted)
        return REIN_ENOMEM;
    rc = take_schema(o, converted, o->member, bad);
    json_decref(converted);
    return rc;
}

rein_err rein__gw_output_read(const struct rein__gw_wire *wire, const json_t *pt,
                              struct rein__gw_output *o, struct rein__gw_bad *bad)
{
    const json_t *x;
    rein_err rc;

    rein__gw_output_release(o);
    if (wire == &rein__gw_anthropic) {
        if ((x = json_object_get(json_object_get(pt, "output_config"), "format")))
            rc = anthropic_ask(o, x, "output_config.format", bad);
        else
            rc = anthropic_ask(o, json_object_get(pt, "output_format"), "output_format", bad);
    } else if (wire == &rein__gw_gemini) {
        rc = gemini_ask(o, json_object_get(pt, "generationConfig"), bad);
    } else if (wire == &rein__gw_responses &&
               (x = json_object_get(json_object_get(pt, "text"), "format"))) {
        rc = openai_ask(o, x, false, "text.format", bad);
    } else if ((x = json_object_get(pt, "response_format"))) {
        /* a chat client's, or a Responses client's read as one (its text.format) */
        rc = openai_ask(o, x, true, wire == &rein__gw_responses ? "text.format" : "response_format",
                        bad);
    } else {
        rc = REIN_OK;
    }
    if (rc)
        rein__gw_output_release(o);
    return rc;
}

rein_err rein__gw_output_compile(struct rein__gw_output *o, struct rein__gw_bad *bad)
{
    rein_error err;

    if (o->kind != REIN_OUTPUT_JSON_SCHEMA || o->compiled)
        return REIN_OK;
    rein_error_clear(&err);
    o->compiled = rein_schema_compile(o->schema, NULL, &err);
    if (o->compiled)
        return REIN_OK;
    if (err.code == REIN_ENOMEM)
        return REIN_ENOMEM;
    return rein__gw_bad(bad, o->schema_at, "%s: the schema cannot be checked: %s", o->schema_at,
                        err.msg);
}

/* What the client's wire names for it among the members refused (or dropped) for another
 * wire: taken, they are neither. */
static rein_err unlist_taken(struct rein__gw_req *r, const struct rein__gw_wire *wire)
{
    const json_t *pt = r->passthrough, *x;
    const char *key;
    json_t *v;
    char name[96];

    if (wire == &rein__gw_anthropic) {
        x = json_object_get(pt, "output_config");
        /* Its format taken, what output_config holds besides is its effort or more. An effort
         * alone is Claude's thinking, as decision 0099 reads it: dropped and named unless the
         * reasoning takes it (rein__gw_reasoning, after this). More stays refused. */
        if (json_object_get(x, "format") &&
            json_object_size(x) == 1 + (json_object_get(x, "effort") != NULL)) {
            rein__gw_unlist(r->unsupported, "output_config");
            if (json_object_get(x, "effort") &&
                json_array_append_new(r->dropped, json_string("output_config")))
                return REIN_ENOMEM;
        }
        rein__gw_unlist(r->unsupported, "output_format");
    } else if (wire == &rein__gw_gemini) {
        rein__gw_unlist(r->unsupported, "generationConfig.responseMimeType");
        rein__gw_unlist(r->unsupported, "generationConfig.responseSchema");
        rein__gw_unlist(r->unsupported, "generationConfig.responseJsonSchema");
    } else if (wire == &rein__gw_responses && (x = json_object_get(pt, "text")) &&
               rein__gw_unlist(r->unsupported, "text")) {
        /* text's other members (verbosity) change no answer: named as dropped */
        json_object_foreach((json_t *)x, key, v)
        {
            if (strcmp(key, "format") == 0)
                continue;
            snprintf(name, sizeof(name), "text.%s", key);
            if (json_array_append_new(r->dropped, json_string(name)))
                return REIN_ENOMEM;
        }
    } else {
        rein__gw_unlist(r->unsupported, "response_format");
    }
    return REIN_OK;
}

rein_err rein__gw_output(struct rein__gw_ctx *c, bool other_wire, struct rein__gw_bad *bad)
{
    struct rein__gw_bad ignored;
    struct rein__gw_output *o = &c->output;
    const char *name;
    rein_error err;
    rein_err rc;

    if (!other_wire) {
        /* The body goes as written and the upstream judges the ask; rein checks the answer
         * against what it can read of it. */
        rc = rein__gw_output_read(c->wire, c->req.passthrough, o, &ignored);
        if (rc == REIN_OK)
            rc = rein__gw_output_compile(o, &ignored);
        if (rc == REIN_EINVAL)
            rein__gw_output_release(o);
        return rc == REIN_ENOMEM ? rc : REIN_OK;
    }
    rc = rein__gw_output_read(c->wire, c->req.passthrough, o, bad);
    if (!rc)
        rc = rein__gw_output_compile(o, bad);
    if (rc || o->kind == REIN_OUTPUT_TEXT) {
        if (!rc && o->member)
            rc = unlist_taken(&c->req, c->wire); /* text, the default */
        return rc;
    }
    name = o->name[0] ? o->name : NULL;
    rein_error_clear(&err);
    rc = rein_model_request_set_output_format(c->mreq, o->kind, name, o->schema, o->strict);
    if (!rc)
        rc = rein_provider_prepare(c->g->provider, c->mreq, &err);
    if (rc == REIN_EINVAL)
        return rein__gw_bad(bad, o->member, "%s cannot be forwarded: %s", o->member, err.msg);
    return rc ? rc : unlist_taken(&c->req, c->wire);
}

/* ---- the answer's check ------------------------------------------------------------------ */

/* The problem as the "rein" member names it, and the message the model reads on a re-ask. */
static rein_err output_problem(const struct rein__gw_output *o, const char *what, json_t *errors,
                               json_t **problem, char **reask)
{
    struct rein_buf b;
    rein_err rc;
    size_t i;
    json_t *e;

    rein_buf_init(&b, 0);
    if (o->kind == REIN_OUTPUT_JSON_OBJECT)
        rc = rein_buf_addf(&b, "Your answer must be a single JSON object (%s). It is not: %s.",
                           o->member, what);
    else
        rc = rein_buf_addf(&b,
                           "Your answer must be JSON that follows the JSON Schema%s%s%s given "
                           "in %s. It does not: %s.",
                           o->name[0] ? " \"" : "", o->name, o->name[0] ? "\"" : "", o->member,
                           what);
    json_array_foreach(errors, i, e)
    {
        if (!rc)
            rc = rein_buf_addf(&b, "\n- %s: %s",
                               json_string_value(json_object_get(e, "path"))[0]
                                   ? json_string_value(json_object_get(e, "path"))
                                   : "/",
                               json_string_value(json_object_get(e, "message")));
    }
    if (!rc)
        rc = rein_buf_adds(&b, "\nAnswer again with the corrected JSON value alone, with no other "
                               "text and no code fence around it.");
    *problem = rc ? NULL
                  : json_pack("{s:s, s:s, s:s, s:O}", "output", o->member, "code", "invalid_output",
                              "message", what, "errors", errors);
    *reask = rc || !*problem ? NULL : rein_buf_detach(&b, NULL);
    rein_buf_release(&b);
    if (!*problem || !*reask) {
        json_decref(*problem);
        rein_free(*reask);
        *problem = NULL;
        *reask = NULL;
        return REIN_ENOMEM;
    }
    return REIN_OK;
}

rein_err rein__gw_output_check(const struct rein__gw_output *o, const char *text, size_t len,
                               json_t **problem, char **reask)
{
    json_t *errors = json_array(), *v = NULL;
    rein_schema_result *res = NULL;
    char what[320];
    rein_error err;
    rein_err rc = REIN_OK;

    *problem = NULL;
    *reask = NULL;
    if (!errors)
        return REIN_ENOMEM;
    rein_error_clear(&err);
    if (len == 0)
        snprintf(what, sizeof(what), "the answer is empty");
    else if (!(v = rein_json_parse(text, len, JSON_DECODE_ANY, &err)))
        snprintf(what, sizeof(what), "the answer is not JSON (%s, line %d, column %d)", err.msg,
                 err.line, err.column);
    else if (o->kind == REIN_OUTPUT_JSON_OBJECT && !json_is_object(v))
        snprintf(what, sizeof(what), "the answer is JSON but %s, not an object",
                 rein_json_type_name(v));
    else if (o->kind == REIN_OUTPUT_JSON_SCHEMA && o->compiled) {
        res = rein_schema_result_new();
        rc = res ? rein_schema_validate(o->compiled, v, 0, res, &err) : REIN_ENOMEM;
        if (rc == REIN_OK)
            goto out_valid;
        if (rc == REIN_ENOMEM)
            goto out;
        if (rc == REIN_EINVALID)
            snprintf(what, sizeof(what), "%zu error%s against the schema",
                     rein_schema_result_count(res), rein_schema_result_count(res) == 1 ? "" : "s");
        else
            snprintf(what, sizeof(what), "the schema check failed: %s", err.msg);
        for (size_t i = 0; rc == REIN_EINVALID && i < rein_schema_result_count(res) && i < 20;
             i++) {
            if (json_array_append_new(errors,
                                      json_pack("{s:s, s:s}", "path",
                                                rein_schema_result_instance_path(res, i), "message",
                                                rein_schema_result_message(res, i)))) {
                rc = REIN_ENOMEM;
                goto out;
            }
        }
    } else {
        goto out_valid;
    }
    rc = output_problem(o, what, errors, problem, reask);
    goto out;
out_valid:
    rc = REIN_OK;
out:
    rein_schema_result_free(res);
    json_decref(v);
    json_decref(errors);
    return rc;
}
