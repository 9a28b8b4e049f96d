/*
 * How a call that ran through the pipeline is told to an MCP client (CallToolResult), and how
 * a runner's output maps to MCP content.
 *
 * rein's normalized result has one output value; MCP has a list of typed content blocks and
 * an optional structured value. The mapping (docs/decisions/0007-mcp-module.md):
 *   - an output that already is MCP content, {"content": [blocks], "structuredContent"?,
 *     "_meta"?}, passes through unchanged: that is how a skill returns images, audio or
 *     embedded resources, and how a tool of another MCP server keeps its content when rein
 *     serves it on;
 *   - a string output is one text block;
 *   - any other output is one text block of its JSON text, plus structuredContent when it is
 *     an object (MCP asks for the serialized JSON next to structured content).
 * Whatever the output, structuredContent is rein's normalized result, the one shape `rein
 * skills invoke`, POST /skills/{id}/invoke and the agent's tool_calls show (with the invalid
 * payload in it when the call could not run), except for MCP content that passes through: a
 * relayed MCP result keeps its own structuredContent, which its tool's outputSchema governs.
 * The text is what a model should read: the output (as above) when the call succeeded, and
 * when it could not run or failed (isError true) the JSON of what rein feeds its own model
 * (the invalid payload, or the normalized result).
 */
#include "mcp/mcp_int.h"

#include <string.h>

static bool is_block(const json_t *b)
{
    const char *type = json_string_value(json_object_get(b, "type"));

    if (!json_is_object(b) || !type)
        return false;
    return strcmp(type, "text") == 0 || strcmp(type, "image") == 0 || strcmp(type, "audio") == 0 ||
           strcmp(type, "resource") == 0 || strcmp(type, "resource_link") == 0;
}

bool rein__mcp_is_content_result(const json_t *v)
{
    const json_t *content = json_object_get(v, "content");
    const char *key;
    json_t *item;
    size_t i;

    if (!json_is_object(v) || !json_is_array(content))
        return false;
    json_object_foreach((json_t *)v, key, item)
    {
        if (strcmp(key, "content") != 0 && strcmp(key, "structuredContent") != 0 &&
            strcmp(key, "_meta") != 0)
            return false;
    }
    if (json_object_get(v, "structuredContent") &&
        !json_is_object(json_object_get(v, "structuredContent")))
        return false;
    json_array_foreach(content, i, item)
    {
        if (!is_block(item))
            return false;
    }
    return true;
}

/* {"content": [{"type": "text", "text": text}]} plus extra members; new or NULL. */
static json_t *text_result(const char *text, size_t len)
{
    json_t *block = json_object();
    json_t *content = json_array();
    json_t *r = json_object();

    if (!block || !content || !r || json_object_set_new(block, "type", json_string("text")) ||
        json_object_set_new(block, "text", json_stringn(text, len)) ||
        json_array_append(content, block) || json_object_set(r, "content", content)) {
        json_decref(r);
        r = NULL;
    }
    json_decref(block);
    json_decref(content);
    return r;
}

json_t *rein__mcp_output_to_result(const json_t *output)
{
    json_t *r;
    char *text;

    if (rein__mcp_is_content_result(output))
        return json_deep_copy(output);
    if (json_is_string(output))
        return text_result(json_string_value(output), json_string_length(output));
    text = rein_json_dumps(output ? output : json_null());
    if (!text)
        return NULL;
    r = text_result(text, strlen(text));
    rein_free(text);
    if (r && json_is_object(output) && json_object_set(r, "structuredContent", (json_t *)output)) {
        json_decref(r);
        return NULL;
    }
    return r;
}

json_t *rein__mcp_call_result_json(rein_call_result *res)
{
    const json_t *output = rein_call_result_output(res);
    const json_t *normalized, *shown;
    json_t *r;
    char *text;

    if (rein_call_result_ok(res) && rein__mcp_is_content_result(output))
        return json_deep_copy(output);
    normalized = rein_call_result_json(res);
    if (!normalized)
        return NULL;
    if (rein_call_result_ok(res)) {
        r = rein__mcp_output_to_result(output);
    } else {
        shown = rein_call_result_model_json(res);
        text = shown ? rein_json_dumps(shown) : NULL;
        r = text ? text_result(text, strlen(text)) : NULL;
        rein_free(text);
        if (r && json_object_set_new(r, "isError", json_true())) {
            json_decref(r);
            return NULL;
        }
    }
    if (r && json_object_set(r, "structuredContent", (json_t *)normalized)) {
        json_decref(r);
        return NULL;
    }
    return r;
}
