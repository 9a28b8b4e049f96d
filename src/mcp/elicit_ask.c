/*
 * Answering an elicitation/create form with a person at a terminal (`rein mcp call --elicit
 * ask`, the default when stdin is a terminal): the server's message, then accept, decline or
 * cancel, then each field of the requestedSchema in turn, read as its type (MCP's restricted
 * subset: string, with choices from enum or oneOf/anyOf consts; number; integer; boolean; an
 * array of choices) and checked against the field's own schema (choices, bounds, lengths,
 * formats) before the next one is asked. A bad entry is explained and asked again; an empty
 * one takes the field's default, or leaves an optional field out. The end of input cancels.
 */
#include "mcp/mcp_int.h"

#include "rein/schema.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { ENTRY_MAX = 4096 };
/* What asking for one field came to. */
enum field_outcome { FIELD_NOMEM, FIELD_SET, FIELD_LEFT_OUT, FIELD_END_OF_INPUT };

/* One line from in, without its end and surrounding blanks; false at the end of input. A line
 * longer than the buffer is cut (the rest is dropped). */
static bool read_entry(FILE *in, char *buf, size_t size)
{
    size_t n, start = 0;
    int ch;

    if (!fgets(buf, (int)size, in))
        return false;
    n = strlen(buf);
    if (n > 0 && buf[n - 1] != '\n') {
        while ((ch = fgetc(in)) != EOF && ch != '\n') {
        }
    }
    while (n > 0 && strchr("\r\n \t", buf[n - 1]))
        buf[--n] = '\0';
    while (buf[start] == ' ' || buf[start] == '\t')
        start++;
    memmove(buf, buf + start, n - start + 1);
    return true;
}

/* The choices schema offers, as a new array of [value, label], or NULL when it offers none:
 * enum (with the legacy enumNames as labels) or oneOf/anyOf of consts (titles as labels). */
static json_t *choices_of(const json_t *schema)
{
    const json_t *list = json_object_get(schema, "enum"), *names, *item, *v, *label;
    json_t *out = json_array();
    bool from_enum = json_is_array(list);
    size_t i;

    if (!out)
        return NULL;
    if (!from_enum) {
        list = json_object_get(schema, "oneOf");
        if (!list)
            list = json_object_get(schema, "anyOf");
    }
    names = json_object_get(schema, "enumNames");
    json_array_foreach(list, i, item)
    {
        v = from_enum ? item : json_object_get(item, "const");
        label = from_enum ? json_array_get(names, i) : json_object_get(item, "title");
        if (v &&
            json_array_append_new(out, json_pack("[O, O]", (json_t *)v,
                                                 (json_t *)(json_is_string(label) ? label : v)))) {
            json_decref(out);
            return NULL;
        }
    }
    if (json_array_size(out) == 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* The choice text names: its number (1-based), its value or its label (any case). */
static json_t *pick(const json_t *choices, const char *text)
{
    const json_t *c;
    char *end = NULL;
    long n = strtol(text, &end, 10);
    size_t i;

    if (end != text && !*end && n >= 1 && (size_t)n <= json_array_size(choices))
        return json_incref(json_array_get(json_array_get(choices, (size_t)n - 1), 0));
    json_array_foreach(choices, i, c)
    {
        const char *v = json_string_value(json_array_get(c, 0));
        const char *label = json_string_value(json_array_get(c, 1));
        if ((v && strcmp(v, text) == 0) || (label && strcasecmp(label, text) == 0))
            return json_incref(json_array_get(c, 0));
    }
    return NULL;
}

/* The value an entry means for a field of type type (a new reference), or NULL with *why. */
static json_t *parse_entry(const char *type, const json_t *choices, const json_t *item_choices,
                           char *text, const char **why)
{
    char *end = NULL;

    *why = NULL;
    if (strcmp(type, "boolean") == 0) {
        if (strcasecmp(text, "y") == 0 || strcasecmp(text, "yes") == 0 ||
            strcasecmp(text, "true") == 0)
            return json_true();
        if (strcasecmp(text, "n") == 0 || strcasecmp(text, "no") == 0 ||
            strcasecmp(text, "false") == 0)
            return json_false();
        *why = "answer yes or no";
        return NULL;
    }
    if (strcmp(type, "integer") == 0) {
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (end == text || *end || errno) {
            *why = "not a whole number";
            return NULL;
        }
        return json_integer((json_int_t)v);
    }
    if (strcmp(type, "number") == 0) {
        errno = 0;
        double v = strtod(text, &end);
        if (end == text || *end || errno || !isfinite(v)) {
            *why = "not a number";
            return NULL;
        }
        return json_real(v);
    }
    if (strcmp(type, "array") == 0) {
        json_t *list = json_array();
        char *save = NULL;
        for (char *tok = strtok_r(text, ",", &save); list && tok;
             tok = strtok_r(NULL, ",", &save)) {
            while (*tok == ' ')
                tok++;
            for (size_t n = strlen(tok); n > 0 && tok[n - 1] == ' ';)
                tok[--n] = '\0';
            json_t *v = item_choices ? pick(item_choices, tok) : json_string(tok);
            if (!v || json_array_append_new(list, v)) {
                json_decref(list);
                *why = "not among the choices (give their numbers or values, comma-separated)";
                return NULL;
            }
        }
        return list;
    }
    if (choices) {
        json_t *v = pick(choices, text);
        if (!v)
            *why = "not among the choices (give its number or value)";
        return v;
    }
    return json_string(text);
}

/* Shows the field: its name or title, type, whether it is required, its default, its
 * description and its choices. */
static void show_field(FILE *out, const char *key, const json_t *prop, const char *type,
                       bool required, const json_t *choices)
{
    const char *title = json_string_value(json_object_get(prop, "title"));
    const char *desc = json_string_value(json_object_get(prop, "description"));
    const json_t *def = json_object_get(prop, "default"), *c;
    char *def_text = def ? rein_json_dumps(def) : NULL;
    size_t i;

    fprintf(out, "%s (%s%s%s%s)\n", title ? title : key, type, required ? ", required" : "",
            def_text ? ", default " : "", def_text ? def_text : "");
    rein_free(def_text);
    if (desc)
        fprintf(out, "  %s\n", desc);
    json_array_foreach(choices, i, c)
    {
        const char *label = json_string_value(json_array_get(c, 1));
        fprintf(out, "  %zu) %s\n", i + 1, label ? label : "?");
    }
}

/* Asks for one field until an entry fits (its value then set in content). */
static enum field_outcome ask_field(FILE *in, FILE *out, const char *key, const json_t *prop,
                                    bool required, json_t *content)
{
    const char *type = json_string_value(json_object_get(prop, "type"));
    json_t *choices = NULL, *item_choices = NULL, *schema_doc;
    rein_schema *schema;
    rein_schema_result *res = rein_schema_result_new();
    struct rein_schema_options checks = {.format_assert = true}; /* an email must be one */
    char entry[ENTRY_MAX];
    enum field_outcome rc = FIELD_NOMEM;

    if (!type)
        type = "string";
    if (strcmp(type, "array") == 0)
        item_choices = choices_of(json_object_get(prop, "items"));
    else
        choices = choices_of(prop);
    /* The field's own schema checks what the types above do not (bounds, lengths, formats). */
    schema_doc = json_deep_copy(prop);
    schema = schema_doc ? rein_schema_compile(schema_doc, &checks, NULL) : NULL;
    json_decref(schema_doc);
    if (!res)
        goto out;
    show_field(out, key, prop, type, required, choices ? choices : item_choices);
    for (;;) {
        const json_t *def = json_object_get(prop, "default");
        const char *why = NULL;
        json_t *v;
        fputs("> ", out);
        fflush(out);
        if (!read_entry(in, entry, sizeof(entry))) {
            rc = FIELD_END_OF_INPUT;
            break;
        }
        if (!entry[0] && def) {
            v = json_incref((json_t *)def);
        } else if (!entry[0] && !required) {
            rc = FIELD_LEFT_OUT;
            break;
        } else if (!entry[0]) {
            why = "this field is required";
            v = NULL;
        } else {
            v = parse_entry(type, choices, item_choices, entry, &why);
        }
        if (v && schema && rein_schema_validate(schema, v, 0, res, NULL) != REIN_OK) {
            why = rein_schema_result_count(res) ? rein_schema_result_message(res, 0)
                                                : "does not fit the field";
        } else if (v) {
            rc = json_object_set(content, key, v) ? FIELD_NOMEM : FIELD_SET;
            json_decref(v);
            break;
        }
        fprintf(out, "  %s; try again\n", why ? why : "out of memory");
        json_decref(v);
    }
out:
    rein_schema_result_free(res);
    rein_schema_free(schema);
    json_decref(choices);
    json_decref(item_choices);
    return rc;
}

/* accept, decline or cancel, as the person answers (cancel at the end of input). */
static const char *ask_action(FILE *in, FILE *out)
{
    char entry[64];

    for (;;) {
        fputs("Answer it? [a]ccept, [d]ecline or [c]ancel: ", out);
        fflush(out);
        if (!read_entry(in, entry, sizeof(entry)))
            return "cancel";
        if (strcasecmp(entry, "a") == 0 || strcasecmp(entry, "accept") == 0)
            return "accept";
        if (strcasecmp(entry, "d") == 0 || strcasecmp(entry, "decline") == 0)
            return "decline";
        if (strcasecmp(entry, "c") == 0 || strcasecmp(entry, "cancel") == 0)
            return "cancel";
    }
}

json_t *rein_mcp_elicit_ask(const json_t *params, FILE *in, FILE *out)
{
    const char *message = json_string_value(json_object_get(params, "message"));
    const char *mode = json_string_value(json_object_get(params, "mode"));
    const char *url = json_string_value(json_object_get(params, "url")), *action, *key;
    const json_t *schema = json_object_get(params, "requestedSchema"), *prop;
    const json_t *required = json_object_get(schema, "required"), *name;
    json_t *content;
    size_t i;
    enum field_outcome rc;

    fprintf(out, "The server asks: %s\n", message ? message : "(no message)");
    if (mode && strcmp(mode, "url") == 0)
        fprintf(out, "It asks you to open %s\n", url ? url : "(no URL)");
    action = ask_action(in, out);
    if (strcmp(action, "accept") != 0 || (mode && strcmp(mode, "form") != 0))
        return json_pack("{s:s}", "action", action);
    content = json_object();
    json_object_foreach((json_t *)json_object_get(schema, "properties"), key, prop)
    {
        bool req = false;
        json_array_foreach(required, i, name)
        {
            req = req || (json_is_string(name) && strcmp(json_string_value(name), key) == 0);
        }
        rc = content ? ask_field(in, out, key, prop, req, content) : FIELD_NOMEM;
        if (rc == FIELD_NOMEM) {
            json_decref(content);
            return NULL;
        }
        if (rc == FIELD_END_OF_INPUT) {
            json_decref(content);
            return json_pack("{s:s}", "action", "cancel");
        }
    }
    return json_pack("{s:s, s:o}", "action", "accept", "content", content);
}
