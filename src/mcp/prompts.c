/*
 * The prompts rein serves over MCP (prompts/list, prompts/get, completion of their
 * arguments): rein's own and the prompt templates found in prompt folders.
 *
 * rein's own are its words for a tool-calling model:
 *   tool_use_rules     the rules rein gives every model it runs (read a failed call's error,
 *                      fix exactly that, never repeat a call unchanged), as one message;
 *   review_tool_call   the self-verification question rein asks before a call runs
 *                      (001_f66c1098d8de8c01.txt), for request, tool (a tool of this server;
 *                      completed from the registry) and arguments.
 *
 * A prompt template is a JSON file in a folder's prompts/ subfolder:
 *   {"name", "title"?, "description"?, "arguments"?: [{"name", "description"?, "required"?,
 *    "values"?: [completions]}], "messages": [{"role": "user"|"assistant", "content": block}]}
 * where a block is MCP content (text, image, audio, resource, resource_link) and every
 * "{{name}}" in its strings is replaced by that argument's value. A missing required argument
 * is -32602, as MCP asks.
 */
#include "mcp/mcp_int.h"

#include <rein/agent.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COMPLETIONS 100

struct rein__mcp_prompts {
    json_t *templates; /* [prompt template as loaded] */
};

static const char *const builtin_names[] = {"tool_use_rules", "review_tool_call"};

struct rein__mcp_prompts *rein__mcp_prompts_new(void)
{
    struct rein__mcp_prompts *p = rein_calloc(1, sizeof(*p));

    if (p && !(p->templates = json_array())) {
        rein_free(p);
        p = NULL;
    }
    return p;
}

void rein__mcp_prompts_free(struct rein__mcp_prompts *p)
{
    if (!p)
        return;
    json_decref(p->templates);
    rein_free(p);
}

/* ---- loading ---------------------------------------------------------------------------- */

static bool is_role(const json_t *v)
{
    const char *r = json_string_value(v);

    return r && (strcmp(r, "user") == 0 || strcmp(r, "assistant") == 0);
}

/* Checks a template; NULL when it is fine, else what is wrong. */
static const char *template_problem(const json_t *t)
{
    const json_t *args = json_object_get(t, "arguments"), *msgs = json_object_get(t, "messages");
    const json_t *v;
    size_t i;

    if (!json_is_string(json_object_get(t, "name")) ||
        !json_string_length(json_object_get(t, "name")))
        return "needs a \"name\"";
    if (args && !json_is_array(args))
        return "\"arguments\" must be an array";
    json_array_foreach(args, i, v)
    {
        if (!json_is_string(json_object_get(v, "name")))
            return "every argument needs a \"name\"";
        if (json_object_get(v, "values") && !json_is_array(json_object_get(v, "values")))
            return "an argument's \"values\" must be an array of strings";
    }
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return "needs \"messages\": [{\"role\", \"content\"}]";
    json_array_foreach(msgs, i, v)
    {
        if (!is_role(json_object_get(v, "role")) ||
            !json_is_string(json_object_get(json_object_get(v, "content"), "type")))
            return "every message needs a \"role\" (user or assistant) and a \"content\" block";
    }
    return NULL;
}

static bool known(const struct rein__mcp_prompts *p, const char *name)
{
    const json_t *t;
    size_t i;

    for (size_t k = 0; k < sizeof(builtin_names) / sizeof(builtin_names[0]); k++) {
        if (strcmp(builtin_names[k], name) == 0)
            return true;
    }
    json_array_foreach(p->templates, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
            return true;
    }
    return false;
}

rein_err rein__mcp_prompts_load_file(struct rein__mcp_prompts *p, const char *path, rein_error *err)
{
    json_t *t = rein_json_load_file(path, err);
    const char *problem;

    if (!t)
        return err ? err->code : REIN_EPARSE;
    problem = json_is_object(t) ? template_problem(t) : "must be a JSON object";
    if (!problem && known(p, json_string_value(json_object_get(t, "name"))))
        problem = "a prompt of that name is already loaded";
    if (problem) {
        json_decref(t);
        return rein_error_set(err, REIN_EINVAL, "%s: %s", path, problem);
    }
    if (json_array_append_new(p->templates, t))
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    return REIN_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

rein_err rein__mcp_prompts_load_dir(struct rein__mcp_prompts *p, const char *dir, rein_error *err)
{
    DIR *d = opendir(dir);
    struct dirent *ent;
    char **names = NULL;
    size_t n = 0, cap = 0;
    rein_err rc = REIN_OK;

    if (!d)
        return REIN_OK; /* no prompts/ folder: nothing to load */
    while ((ent = readdir(d))) {
        size_t len = strlen(ent->d_name);
        if (ent->d_name[0] == '.' || len < 6 || strcmp(ent->d_name + len - 5, ".json") != 0)
            continue;
        if (n == cap) {
            char **grown = rein_realloc(names, (cap ? 2 * cap : 8) * sizeof(char *));
            if (!grown) {
                rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
                break;
            }
            names = grown;
            cap = cap ? 2 * cap : 8;
        }
        if (!(names[n] = rein_asprintf("%s/%s", dir, ent->d_name))) {
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
            break;
        }
        n++;
    }
    closedir(d);
    /* In name order, so which of two same-named prompts wins does not depend on the disk. */
    if (n)
        qsort(names, n, sizeof(char *), by_name);
    for (size_t i = 0; i < n; i++) {
        if (!rc)
            rc = rein__mcp_prompts_load_file(p, names[i], err);
        rein_free(names[i]);
    }
    rein_free(names);
    return rc;
}

/* ---- listing ---------------------------------------------------------------------------- */

static json_t *builtin_def(size_t k)
{
    if (k == 0)
        return json_pack("{s:s, s:s, s:s, s:[]}", "name", builtin_names[0], "title",
                         "How to use tools (rein)", "description",
                         "rein's rules for a model that calls tools: read a failed call's "
                         "error, fix exactly what it names, call again, never repeat a call "
                         "unchanged",
                         "arguments");
    return json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:b}, {s:s, s:s, s:b}, {s:s, s:s, s:b}]}",
                     "name", builtin_names[1], "title", "Review a tool call (rein)", "description",
                     "The question rein asks before a call runs: is this call correct and what "
                     "the user asked for? Answer YES or NO, then why",
                     "arguments", "name", "request", "description", "what the user asked for",
                     "required", 1, "name", "tool", "description",
                     "the tool about to be called (a tool this server lists)", "required", 1,
                     "name", "arguments", "description",
                     "the call's arguments as JSON text (default {})", "required", 0);
}

/* A template's definition as prompts/list shows it: without its messages and values. */
static json_t *template_def(const json_t *t)
{
    json_t *def = json_deep_copy(t), *arg;
    size_t i;

    if (!def)
        return NULL;
    json_object_del(def, "messages");
    json_array_foreach(json_object_get(def, "arguments"), i, arg)
    {
        json_object_del(arg, "values");
    }
    return def;
}

json_t *rein__mcp_prompts_list(const struct rein__mcp_prompts *p)
{
    json_t *out = json_array(), *t;
    size_t i;

    for (size_t k = 0; out && k < sizeof(builtin_names) / sizeof(builtin_names[0]); k++) {
        if (json_array_append_new(out, builtin_def(k))) {
            json_decref(out);
            return NULL;
        }
    }
    json_array_foreach(p->templates, i, t)
    {
        if (out && json_array_append_new(out, template_def(t))) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* ---- getting ---------------------------------------------------------------------------- */

/* text with every "{{name}}" replaced by args' value (new), or NULL. */
static char *substitute(const char *text, const json_t *args)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    for (const char *p = text; *p;) {
        const char *close = strncmp(p, "{{", 2) == 0 ? strstr(p + 2, "}}") : NULL;
        if (close) {
            char key[128];
            snprintf(key, sizeof(key), "%.*s", (int)(close - p - 2 < 127 ? close - p - 2 : 127),
                     p + 2);
            const json_t *v = json_object_get(args, key);
            if (rein_buf_adds(&b, json_is_string(v) ? json_string_value(v) : ""))
                goto fail;
            p = close + 2;
        } else if (rein_buf_addch(&b, *p++)) {
            goto fail;
        }
    }
    return rein_buf_detach(&b, NULL);
fail:
    rein_buf_release(&b);
    return NULL;
}

/* A deep copy of v with its strings substituted; new or NULL. */
static json_t *fill_all(const json_t *v, const json_t *args)
{
    const char *key;
    json_t *item, *out;
    size_t i;

    if (json_is_string(v)) {
        char *s = substitute(json_string_value(v), args);
        out = s ? json_string(s) : NULL;
        rein_free(s);
        return out;
    }
    if (json_is_object(v)) {
        out = json_object();
        json_object_foreach((json_t *)v, key, item)
        {
            if (out && json_object_set_new(out, key, fill_all(item, args))) {
                json_decref(out);
                out = NULL;
            }
        }
        return out;
    }
    if (json_is_array(v)) {
        out = json_array();
        json_array_foreach(v, i, item)
        {
            if (out && json_array_append_new(out, fill_all(item, args))) {
                json_decref(out);
                out = NULL;
            }
        }
        return out;
    }
    return json_deep_copy(v);
}

static json_t *text_message(const char *text)
{
    return json_pack("{s:s, s:{s:s, s:s}}", "role", "user", "content", "type", "text", "text",
                     text);
}

/* rein's own prompts; *code gets -32602 for a bad argument. */
static json_t *builtin_get(size_t k, const rein_registry *reg, const json_t *args, int *code,
                           rein_error *err)
{
    const char *request = json_string_value(json_object_get(args, "request"));
    const char *tool_name = json_string_value(json_object_get(args, "tool"));
    const char *args_text = json_string_value(json_object_get(args, "arguments"));
    const rein_tool *tool;
    json_t *call_args = NULL, *out = NULL;
    char *question = NULL, *text = NULL;
    rein_error perr;

    if (k == 0)
        return json_pack("{s:s, s:[o]}", "description", "rein's rules for calling tools",
                         "messages", text_message(rein_agent_tool_rules()));
    *code = REIN__MCP_INVALID_PARAMS;
    if (!request || !tool_name) {
        rein_error_set(err, REIN_EINVAL, "review_tool_call needs the arguments %s",
                       !request && !tool_name ? "request and tool"
                       : !request             ? "request"
                                              : "tool");
        return NULL;
    }
    tool = rein_registry_get(reg, tool_name);
    if (!tool) {
        rein_error_set(err, REIN_EINVAL, "review_tool_call: no tool is named \"%.100s\"",
                       tool_name);
        return NULL;
    }
    rein_error_clear(&perr);
    call_args = args_text ? rein_json_parse(args_text, strlen(args_text), 0, &perr) : json_object();
    if (!json_is_object(call_args)) {
        json_decref(call_args);
        rein_error_set(err, REIN_EINVAL,
                       "review_tool_call: arguments must be a JSON object's text");
        return NULL;
    }
    *code = 0;
    question = rein_agent_review_question(request, tool, call_args);
    text = question ? rein_asprintf("%s\n\n%s", rein_agent_review_system(), question) : NULL;
    if (text)
        out = json_pack("{s:s, s:[o]}", "description", "Review a tool call before it runs",
                        "messages", text_message(text));
    if (!out)
        rein_error_set(err, REIN_ENOMEM, "out of memory");
    rein_free(text);
    rein_free(question);
    json_decref(call_args);
    return out;
}

json_t *rein__mcp_prompts_get(const struct rein__mcp_prompts *p, const rein_registry *reg,
                              const char *name, const json_t *args, int *code, rein_error *err)
{
    const json_t *t = NULL, *arg;
    json_t *out;
    size_t i;

    *code = 0;
    for (size_t k = 0; k < sizeof(builtin_names) / sizeof(builtin_names[0]); k++) {
        if (strcmp(builtin_names[k], name) == 0)
            return builtin_get(k, reg, args, code, err);
    }
    json_array_foreach(p->templates, i, arg)
    {
        if (strcmp(json_string_value(json_object_get(arg, "name")), name) == 0)
            t = arg;
    }
    *code = REIN__MCP_INVALID_PARAMS;
    if (!t) {
        rein_error_set(err, REIN_ENOTFOUND, "Unknown prompt: %.100s", name);
        return NULL;
    }
    json_array_foreach(json_object_get(t, "arguments"), i, arg)
    {
        const char *an = json_string_value(json_object_get(arg, "name"));
        if (json_is_true(json_object_get(arg, "required")) &&
            !json_is_string(json_object_get(args, an))) {
            rein_error_set(err, REIN_EINVAL, "Missing required argument: %.100s", an);
            return NULL;
        }
    }
    *code = 0;
    out = json_object();
    if (out && json_object_get(t, "description") &&
        json_object_set_new(out, "description", json_deep_copy(json_object_get(t, "description"))))
        goto nomem;
    if (out && json_object_set_new(out, "messages", fill_all(json_object_get(t, "messages"), args)))
        goto nomem;
    if (out)
        return out;
nomem:
    json_decref(out);
    *code = REIN__MCP_INTERNAL_ERROR;
    rein_error_set(err, REIN_ENOMEM, "out of memory");
    return NULL;
}

json_t *rein__mcp_prompts_ask(const struct rein__mcp_prompts *p, const char *name,
                              const json_t *args)
{
    const json_t *t = NULL, *arg;
    json_t *props = json_object(), *required = json_array(), *out = NULL;
    size_t i;
    bool failed = !props || !required;

    json_array_foreach(p->templates, i, arg)
    {
        if (strcmp(json_string_value(json_object_get(arg, "name")), name) == 0)
            t = arg;
    }
    json_array_foreach(t ? json_object_get(t, "arguments") : NULL, i, arg)
    {
        const char *an = json_string_value(json_object_get(arg, "name"));
        const json_t *desc = json_object_get(arg, "description");
        const json_t *values = json_object_get(arg, "values");
        json_t *prop;
        if (failed || !json_is_true(json_object_get(arg, "required")) ||
            json_is_string(json_object_get(args, an)))
            continue;
        /* A plain string field; the argument's description says what it is, and its values
         * (what completion offers) are the choices when it lists them. */
        prop = json_pack("{s:s}", "type", "string");
        failed = !prop || (desc && json_object_set(prop, "description", (json_t *)desc)) ||
                 (json_array_size(values) && json_object_set(prop, "enum", (json_t *)values)) ||
                 json_object_set_new(props, an, prop) ||
                 json_array_append_new(required, json_string(an));
    }
    if (!failed && json_array_size(required))
        out = json_pack("{s:s++, s:{s:s, s:O, s:O}}", "message", "The prompt ", name,
                        " needs these arguments", "requestedSchema", "type", "object", "properties",
                        props, "required", required);
    json_decref(props);
    json_decref(required);
    return out;
}

/* ---- completion ------------------------------------------------------------------------- */

json_t *rein__mcp_prompts_complete(const struct rein__mcp_prompts *p, const rein_registry *reg,
                                   const char *name, const char *arg, const char *prefix,
                                   bool *found)
{
    json_t *values = json_array();
    const json_t *t, *a, *v;
    size_t plen = strlen(prefix), i, j;

    *found = known(p, name);
    if (!values || !*found)
        return values;
    if (strcmp(name, builtin_names[1]) == 0 && strcmp(arg, "tool") == 0) {
        for (size_t k = 0;
             k < rein_registry_count(reg) && json_array_size(values) < MAX_COMPLETIONS; k++) {
            const rein_tool *tool = rein_registry_at(reg, k);
            if (tool && strncmp(rein_tool_id(tool), prefix, plen) == 0)
                json_array_append_new(values, json_string(rein_tool_id(tool)));
        }
        return values;
    }
    json_array_foreach(p->templates, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "name")), name) != 0)
            continue;
        json_array_foreach(json_object_get(t, "arguments"), j, a)
        {
            if (strcmp(json_string_value(json_object_get(a, "name")), arg) != 0)
                continue;
            size_t k;
            json_array_foreach(json_object_get(a, "values"), k, v)
            {
                if (json_is_string(v) && strncmp(json_string_value(v), prefix, plen) == 0 &&
                    json_array_size(values) < MAX_COMPLETIONS)
                    json_array_append_new(values, json_string(json_string_value(v)));
            }
        }
    }
    return values;
}
