/*
 * Fuzz target: an MCP server's elicitation/create params, answered without a person
 * (rein_mcp_elicit_defaults in src/mcp/elicit.c). Whatever the server sends, the answer is an
 * accept or a decline; an accepted form carries only properties the schema has, each with the
 * default that property gave.
 */
#include <rein/rein.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *params = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    const json_t *props, *content, *v;
    const char *why = NULL, *action, *key;
    json_t *out;

    if (!params)
        return 0;
    out = rein_mcp_elicit_defaults(params, &why);
    if (!out)
        abort(); /* only when out of memory */
    action = json_string_value(json_object_get(out, "action"));
    props = json_object_get(json_object_get(params, "requestedSchema"), "properties");
    content = json_object_get(out, "content");
    if (!action || (strcmp(action, "accept") != 0 && strcmp(action, "decline") != 0))
        abort();
    if (strcmp(action, "decline") == 0 && (!why || content))
        abort();
    if (strcmp(action, "accept") == 0) {
        if (why || !json_is_object(content))
            abort();
        json_object_foreach((json_t *)content, key, v)
        {
            if (!json_equal(v, json_object_get(json_object_get(props, key), "default")))
                abort();
        }
    }
    json_decref(out);
    json_decref(params);
    return 0;
}
