/*
 * Answering an elicitation/create form without a person: accept it with the defaults its
 * requestedSchema gives (SEP-1034: a client fills each field's default in). What a schema may
 * hold there is MCP's restricted subset: an object of primitive properties (string, with enum
 * or oneOf of consts for a choice; number; integer; boolean) and, since SEP-1330, arrays of
 * such choices. A default that does not fit its property is not used, so a required property
 * with no usable default declines the form rather than send the server a value it did not
 * offer.
 */
#include "mcp/mcp_int.h"

#include <string.h>

/* True when v is one of the choices a schema (or an array's items schema) offers, or when it
 * offers none. */
static bool among_choices(const json_t *schema, const json_t *v)
{
    const json_t *list = json_object_get(schema, "enum"), *item;
    size_t i;

    if (!list) {
        list = json_object_get(schema, "oneOf");
        if (!list)
            list = json_object_get(schema, "anyOf");
        if (!json_is_array(list))
            return true;
        json_array_foreach(list, i, item)
        {
            if (json_equal(json_object_get(item, "const"), v))
                return true;
        }
        return false;
    }
    json_array_foreach(list, i, item)
    {
        if (json_equal(item, v))
            return true;
    }
    return false;
}

/* True when def is a value property (a schema) accepts. */
static bool default_fits(const json_t *property, const json_t *def)
{
    const char *type = json_string_value(json_object_get(property, "type"));
    const json_t *item;
    size_t i;

    if (!type)
        return false;
    if (strcmp(type, "string") == 0)
        return json_is_string(def) && among_choices(property, def);
    if (strcmp(type, "integer") == 0)
        return json_is_integer(def);
    if (strcmp(type, "number") == 0)
        return json_is_number(def);
    if (strcmp(type, "boolean") == 0)
        return json_is_boolean(def);
    if (strcmp(type, "array") == 0 && json_is_array(def)) {
        const json_t *items = json_object_get(property, "items");
        json_array_foreach(def, i, item)
        {
            if (!json_is_string(item) || !among_choices(items, item))
                return false;
        }
        return true;
    }
    return false;
}

json_t *rein_mcp_elicit_defaults(const json_t *params, const char **why)
{
    const json_t *schema = json_object_get(params, "requestedSchema");
    const json_t *props = json_object_get(schema, "properties");
    const json_t *required = json_object_get(schema, "required"), *prop, *name;
    const char *mode = json_string_value(json_object_get(params, "mode")), *key;
    json_t *content, *out;
    size_t i;

    if (why)
        *why = NULL;
    if (mode && strcmp(mode, "form") != 0) {
        if (why)
            *why = "the server asks for a URL to be opened, which needs a person";
        return json_pack("{s:s}", "action", "decline");
    }
    content = json_object();
    if (!content)
        return NULL;
    json_object_foreach((json_t *)props, key, prop)
    {
        json_t *def = json_object_get(prop, "default");
        if (def && default_fits(prop, def) && json_object_set(content, key, def) != 0) {
            json_decref(content);
            return NULL;
        }
    }
    json_array_foreach(required, i, name)
    {
        if (json_is_string(name) && !json_object_get(content, json_string_value(name))) {
            json_decref(content);
            if (why)
                *why = "a field the form requires has no default";
            return json_pack("{s:s}", "action", "decline");
        }
    }
    out = json_pack("{s:s, s:o}", "action", "accept", "content", content);
    return out;
}
