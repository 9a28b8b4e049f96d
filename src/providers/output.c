/*
 * The form of the model's answer (decision 0100): the request's output format, free text, a
 * JSON object or JSON that follows a schema, and each wire's words for it. The wires call the
 * writers from their body writers (openai.c, responses.c, anthropic.c, gemini.c, bedrock.c,
 * ollama.c); a wire without a form for it (struct rein__wire's output_format) is refused the
 * request in provider.c, before anything is sent.
 *
 * The schema is kept as its compact text, written into each body as it is (Bedrock's as a
 * string, which its API wants), so that a body is never made from a tree the caller may be
 * changing.
 */
#include "provider_int.h"

#include <string.h>

#define DEFAULT_NAME "output"

void rein__output_release(rein_model_request *req)
{
    rein_free(req->output_name);
    rein_free(req->output_schema);
    req->output_name = req->output_schema = NULL;
    req->output = REIN_OUTPUT_TEXT;
    req->output_strict = false;
}

rein_err rein_model_request_set_output_format(rein_model_request *req, enum rein_output_kind kind,
                                              const char *name, const json_t *schema, bool strict)
{
    char *n = NULL, *text = NULL;

    if (kind != REIN_OUTPUT_TEXT && kind != REIN_OUTPUT_JSON_OBJECT &&
        kind != REIN_OUTPUT_JSON_SCHEMA)
        return REIN_EINVAL;
    if (kind == REIN_OUTPUT_JSON_SCHEMA && !json_is_object(schema))
        return REIN_EINVAL;
    if (kind != REIN_OUTPUT_TEXT && name && !(n = rein_strdup(name)))
        return REIN_ENOMEM;
    if (kind == REIN_OUTPUT_JSON_SCHEMA && !(text = rein_json_dumps(schema))) {
        rein_free(n);
        return REIN_ENOMEM;
    }
    rein__output_release(req);
    req->output = kind;
    req->output_name = n;
    req->output_schema = text;
    req->output_strict = kind == REIN_OUTPUT_JSON_SCHEMA && strict;
    return REIN_OK;
}

static bool extra_has(const rein_model_request *req, const char *member)
{
    return req->extra && json_object_get(req->extra, member) != NULL;
}

static const char *name_of(const rein_model_request *req)
{
    return req->output_name && req->output_name[0] ? req->output_name : DEFAULT_NAME;
}

static void jw_schema(struct rein_jw *jw, const rein_model_request *req)
{
    rein_jw_raw(jw, req->output_schema, strlen(req->output_schema));
}

/* OpenAI's shape without its envelope: {"type": "json_schema", <inner>} where the chat API
 * nests name, schema and strict under "json_schema" and the Responses API does not. */
static void jw_openai_format(struct rein_jw *jw, const rein_model_request *req, bool nested)
{
    rein_jw_obj_begin(jw);
    rein_jw_key(jw, "type");
    if (req->output == REIN_OUTPUT_JSON_OBJECT) {
        rein_jw_str(jw, "json_object");
        rein_jw_obj_end(jw);
        return;
    }
    rein_jw_str(jw, "json_schema");
    if (nested) {
        rein_jw_key(jw, "json_schema");
        rein_jw_obj_begin(jw);
    }
    rein_jw_key(jw, "name");
    rein_jw_str(jw, name_of(req));
    rein_jw_key(jw, "schema");
    jw_schema(jw, req);
    if (req->output_strict) {
        rein_jw_key(jw, "strict");
        rein_jw_bool(jw, true);
    }
    if (nested)
        rein_jw_obj_end(jw);
    rein_jw_obj_end(jw);
}

void rein__jw_output_openai(struct rein_jw *jw, const rein_model_request *req)
{
    if (req->output == REIN_OUTPUT_TEXT || extra_has(req, "response_format"))
        return;
    rein_jw_key(jw, "response_format");
    jw_openai_format(jw, req, true);
}

void rein__jw_output_responses(struct rein_jw *jw, const rein_model_request *req)
{
    if (req->output == REIN_OUTPUT_TEXT || extra_has(req, "text"))
        return;
    rein_jw_key(jw, "text");
    rein_jw_obj_begin(jw);
    rein_jw_key(jw, "format");
    jw_openai_format(jw, req, false);
    rein_jw_obj_end(jw);
}

void rein__jw_output_ollama(struct rein_jw *jw, const rein_model_request *req)
{
    if (req->output == REIN_OUTPUT_TEXT || extra_has(req, "format"))
        return;
    rein_jw_key(jw, "format");
    if (req->output == REIN_OUTPUT_JSON_OBJECT)
        rein_jw_str(jw, "json");
    else
        jw_schema(jw, req);
}

/* Anthropic's and Bedrock's structured output is a schema only. */
static bool schema_only(const rein_model_request *req, const char *member)
{
    return req->output == REIN_OUTPUT_JSON_SCHEMA && !extra_has(req, member);
}

void rein__jw_output_bedrock(struct rein_jw *jw, const rein_model_request *req)
{
    if (!schema_only(req, "outputConfig"))
        return;
    rein_jw_key(jw, "outputConfig");
    rein_jw_obj_begin(jw);
    rein_jw_key(jw, "textFormat");
    rein_jw_obj_begin(jw);
    rein_jw_key(jw, "type");
    rein_jw_str(jw, "json_schema");
    rein_jw_key(jw, "structure");
    rein_jw_obj_begin(jw);
    rein_jw_key(jw, "jsonSchema");
    rein_jw_obj_begin(jw);
    /* Bedrock takes the schema as a JSON string (JsonSchemaDefinition.schema) */
    rein_jw_key(jw, "schema");
    rein_jw_str(jw, req->output_schema);
    rein_jw_key(jw, "name");
    rein_jw_str(jw, name_of(req));
    rein_jw_obj_end(jw);
    rein_jw_obj_end(jw);
    rein_jw_obj_end(jw);
    rein_jw_obj_end(jw);
}

void rein__jw_anthropic_output_config(struct rein_jw *jw, const char *effort,
                                      const rein_model_request *req)
{
    bool format = schema_only(req, "output_config");

    if (!effort && !format)
        return;
    rein_jw_key(jw, "output_config");
    rein_jw_obj_begin(jw);
    if (effort) {
        rein_jw_key(jw, "effort");
        rein_jw_str(jw, effort);
    }
    if (format) {
        rein_jw_key(jw, "format");
        rein_jw_obj_begin(jw);
        rein_jw_key(jw, "type");
        rein_jw_str(jw, "json_schema");
        rein_jw_key(jw, "schema");
        jw_schema(jw, req);
        rein_jw_obj_end(jw);
    }
    rein_jw_obj_end(jw);
}

bool rein__output_gemini_has(const rein_model_request *req)
{
    static const char *const own[] = {
        "responseMimeType",   "response_mime_type",   "responseSchema",      "response_schema",
        "responseJsonSchema", "response_json_schema", "_responseJsonSchema",
    };
    const json_t *gc = req->extra ? json_object_get(req->extra, "generationConfig") : NULL;

    if (req->output == REIN_OUTPUT_TEXT)
        return false;
    for (size_t i = 0; gc && i < REIN_ARRAY_SIZE(own); i++) {
        if (json_object_get(gc, own[i]))
            return false;
    }
    return true;
}

void rein__jw_output_gemini(struct rein_jw *jw, const rein_model_request *req)
{
    if (!rein__output_gemini_has(req))
        return;
    rein_jw_key(jw, "responseMimeType");
    rein_jw_str(jw, "application/json");
    if (req->output == REIN_OUTPUT_JSON_SCHEMA) {
        rein_jw_key(jw, "responseJsonSchema");
        jw_schema(jw, req);
    }
}
