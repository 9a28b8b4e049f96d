/*
 * Tool manifests: the meta-schema every manifest is checked against, the normalized copy the
 * registry keeps, and loading external skills from folders (REIN_SKILLS_PATH, --skills).
 *
 * A manifest is refused whole or kept whole: the meta-schema, the parameter schema, every
 * route pattern and the runner's own configuration are all checked before a tool is added, and
 * a refusal names the file and the JSON Pointer of the problem, so a half-loaded skill that
 * fails only when a model calls it cannot happen.
 */
#include "tools_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * The manifest meta-schema (docs/DESIGN.md's manifest plus read_only, idempotent, open_world and
 * title for MCP annotations, and sequential for tools that must not run in parallel). Keys
 * starting with "x-" are free for extensions; any other unknown key is refused, because a
 * misspelt "destuctive" silently ignored is exactly the kind of error rein exists to stop.
 */
static const char meta_schema_text[] =
    "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
    "\"type\":\"object\","
    "\"required\":[\"id\",\"description\",\"parameters\"],"
    "\"properties\":{"
    "\"id\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9_-]{1,64}$\"},"
    "\"title\":{\"type\":\"string\"},"
    "\"description\":{\"type\":\"string\",\"minLength\":1},"
    "\"version\":{\"type\":\"string\"},"
    "\"parameters\":{\"type\":\"object\",\"required\":[\"type\"],"
    "\"properties\":{\"type\":{\"const\":\"object\"}}},"
    "\"output_schema\":{\"type\":\"object\"},"
    "\"destructive\":{\"type\":\"boolean\"},"
    "\"read_only\":{\"type\":\"boolean\"},"
    "\"idempotent\":{\"type\":\"boolean\"},"
    "\"open_world\":{\"type\":\"boolean\"},"
    "\"sequential\":{\"type\":\"boolean\"},"
    "\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":86400000},"
    "\"runner\":{\"type\":\"object\",\"required\":[\"kind\"],"
    "\"properties\":{\"kind\":{\"type\":\"string\",\"minLength\":1}}},"
    "\"routes\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1}},"
    "\"examples\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"text\"],"
    "\"properties\":{\"text\":{\"type\":\"string\",\"minLength\":1},"
    "\"arguments\":{\"type\":\"object\"}},\"additionalProperties\":false}}"
    "},"
    "\"patternProperties\":{\"^x-\":true},"
    "\"additionalProperties\":false}";

bool rein__tools_schema_is_object(const json_t *schema)
{
    const json_t *type = json_object_get(schema, "type");

    return json_is_string(type) && strcmp(json_string_value(type), "object") == 0;
}

bool rein__tools_has_defaults(const json_t *schema)
{
    const char *key;
    json_t *v;
    size_t i;

    if (json_is_object(schema)) {
        if (json_object_get(schema, "default"))
            return true;
        json_object_foreach((json_t *)schema, key, v)
        {
            if (rein__tools_has_defaults(v))
                return true;
        }
    } else if (json_is_array(schema)) {
        json_array_foreach(schema, i, v)
        {
            if (rein__tools_has_defaults(v))
                return true;
        }
    }
    return false;
}

/* Appends "/" + the escaped segment (RFC 6901) to b. */
static rein_err pointer_append(struct rein_buf *b, const char *seg)
{
    rein_err rc = rein_buf_addch(b, '/');

    for (; !rc && *seg; seg++) {
        if (*seg == '~')
            rc = rein_buf_adds(b, "~0");
        else if (*seg == '/')
            rc = rein_buf_adds(b, "~1");
        else
            rc = rein_buf_addch(b, *seg);
    }
    return rc;
}

rein_err rein__tools_schema_errors(const rein_schema_result *res, const char *prefix, char *pointer,
                                   size_t pointer_size, rein_error *err)
{
    char msg[sizeof(((rein_error *)0)->msg)];
    size_t n = rein_schema_result_count(res), used = 0;
    struct rein_buf ptr;

    msg[0] = '\0';
    rein_buf_init(&ptr, 0);
    for (size_t i = 0; i < n && used + 1 < sizeof(msg); i++) {
        const char *prop = rein_schema_result_property(res, i);
        rein_buf_reset(&ptr);
        if (rein_buf_adds(&ptr, prefix) ||
            rein_buf_adds(&ptr, rein_schema_result_instance_path(res, i)) ||
            (prop && pointer_append(&ptr, prop))) {
            rein_buf_release(&ptr);
            return rein_error_set(err, REIN_ENOMEM, "out of memory describing a schema error");
        }
        if (i == 0 && pointer)
            snprintf(pointer, pointer_size, "%s", ptr.ptr);
        /* As many errors as fit; the first always leads, cut if it must be. */
        int w = snprintf(
            msg + used, sizeof(msg) - used, "%s%s: %s", i ? "; " : "", ptr.len ? ptr.ptr : "/",
            prop ? "required property is missing" : rein_schema_result_message(res, i));
        used += w > 0 ? (size_t)w : 0;
    }
    rein_buf_release(&ptr);
    return rein_error_set(err, REIN_ESCHEMA, "%s", msg[0] ? msg : "/: invalid");
}

/* Validates instance against schema; REIN_ESCHEMA with pointers under prefix when invalid. */
static rein_err check_against(const rein_schema *schema, json_t *instance, const char *prefix,
                              char *pointer, size_t pointer_size, rein_error *err)
{
    rein_schema_result *res = rein_schema_result_new();
    rein_err rc;

    if (!res)
        return rein_error_set(err, REIN_ENOMEM, "out of memory checking a manifest");
    rc = rein_schema_validate(schema, instance, 0, res, err);
    if (rc == REIN_EINVALID)
        rc = rein__tools_schema_errors(res, prefix, pointer, pointer_size, err);
    else if (rc)
        rein_error_prefix(err, "%s: ", prefix[0] ? prefix : "/"); /* rc stays the code */
    rein_schema_result_free(res);
    return rc;
}

/* Compiles schema text rein itself defines; a failure is a bug in rein or out of memory. */
static rein_err compile_text(const char *text, const char *what, rein_schema **out, rein_error *err)
{
    rein_error e;
    json_t *doc;

    rein_error_clear(&e);
    doc = rein_json_parse(text, strlen(text), 0, &e);
    *out = doc ? rein_schema_compile(doc, NULL, &e) : NULL;
    json_decref(doc);
    if (*out)
        return REIN_OK;
    return rein_error_set(err, e.code == REIN_ENOMEM ? REIN_ENOMEM : REIN_EINTERNAL,
                          "%s does not compile: %s", what, e.msg);
}

rein_err rein__tools_runner_check(rein_registry *reg, struct rein__tools_kind_entry *k,
                                  json_t *runner, char *pointer, size_t pointer_size,
                                  rein_error *err)
{
    (void)reg;
    if (!k->kind->schema)
        return REIN_OK;
    if (!k->schema) {
        rein_err rc = compile_text(k->kind->schema, "the runner schema", &k->schema, err);
        if (rc)
            return rc;
    }
    return check_against(k->schema, runner, "/runner", pointer, pointer_size, err);
}

static rein_err set_default(json_t *obj, const char *key, json_t *value)
{
    if (!value)
        return REIN_ENOMEM;
    if (json_object_get(obj, key)) {
        json_decref(value);
        return REIN_OK;
    }
    return json_object_set_new(obj, key, value) ? REIN_ENOMEM : REIN_OK;
}

rein_err rein__tools_manifest_check(rein_registry *reg, json_t *manifest, const char *default_kind,
                                    json_t **out, char *pointer, size_t pointer_size,
                                    rein_error *err)
{
    json_t *copy, *runner;
    rein_err rc;

    *out = NULL;
    if (pointer && pointer_size)
        pointer[0] = '\0';
    if (!reg->meta) {
        rc = compile_text(meta_schema_text, "the manifest meta-schema", &reg->meta, err);
        if (rc)
            return rc;
    }
    if (!manifest)
        return rein_error_set(err, REIN_ESCHEMA, "/: no manifest");
    rc = check_against(reg->meta, manifest, "", pointer, pointer_size, err);
    if (rc)
        return rc;
    if (json_is_true(json_object_get(manifest, "destructive")) &&
        json_is_true(json_object_get(manifest, "read_only"))) {
        if (pointer)
            snprintf(pointer, pointer_size, "/read_only");
        return rein_error_set(err, REIN_ESCHEMA,
                              "/read_only: a tool cannot be both read_only and destructive");
    }
    copy = json_deep_copy(manifest);
    if (!copy)
        return rein_error_set(err, REIN_ENOMEM, "out of memory copying a manifest");
    rc = set_default(copy, "destructive", json_false());
    if (!rc)
        rc = set_default(copy, "read_only", json_false());
    if (!rc)
        rc = set_default(copy, "sequential", json_false());
    if (!rc)
        rc = set_default(copy, "timeout_ms", json_integer(REIN_TOOL_DEFAULT_TIMEOUT_MS));
    if (!rc && !json_object_get(copy, "runner")) {
        runner = json_pack("{s:s}", "kind", default_kind);
        rc = runner ? (json_object_set_new(copy, "runner", runner) ? REIN_ENOMEM : REIN_OK)
                    : REIN_ENOMEM;
    }
    if (!rc)
        rc = set_default(copy, "routes", json_array());
    if (rc) {
        json_decref(copy);
        return rein_error_set(err, REIN_ENOMEM, "out of memory normalizing a manifest");
    }
    *out = copy;
    return REIN_OK;
}

/*
 * Records a refused manifest for rein_registry_problems(), which the command and the server
 * show; the log line (info) is for a caller that shows nothing.
 */
static void add_problem(rein_registry *reg, const char *file, const char *pointer,
                        const char *message)
{
    /* A file name need not be UTF-8; the record stays valid JSON either way. */
    json_t *p = json_pack("{s:o, s:s, s:o}", "file", rein__json_string_lossy(file, strlen(file)),
                          "pointer", pointer ? pointer : "", "message",
                          rein__json_string_lossy(message, strlen(message)));

    rein_log(REIN_LOG_INFO, "tools/manifest", "%s: %s%s%s (skipped)", file,
             pointer && pointer[0] ? pointer : "", pointer && pointer[0] ? ": " : "", message);
    if (p && json_array_append_new(reg->problems, p))
        rein_log(REIN_LOG_ERROR, "tools/manifest", "out of memory recording a problem");
}

/* The message without its leading "<pointer>: ", when it has one. */
static const char *after_pointer(const char *msg, const char *pointer)
{
    size_t n = pointer ? strlen(pointer) : 0;

    if (n && strncmp(msg, pointer, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
        return msg + n + 2;
    return msg;
}

/* Loads dir/manifest.json when it exists; returns 1 when a tool was added, else 0. */
static int load_one(rein_registry *reg, const char *dir)
{
    char path[4096], pointer[256] = "";
    struct stat st;
    rein_error err;
    json_t *doc;

    if ((size_t)snprintf(path, sizeof(path), "%s/manifest.json", dir) >= sizeof(path)) {
        add_problem(reg, dir, "", "the path is too long");
        return 0;
    }
    if (stat(path, &st) != 0)
        return 0;
    rein_error_clear(&err);
    doc = rein_json_load_file(path, &err);
    if (!doc) {
        add_problem(reg, path, "", err.msg);
        return 0;
    }
    if (rein__tools_add(reg, doc, NULL, NULL, dir, path, pointer, sizeof(pointer), &err)) {
        add_problem(reg, path, pointer, after_pointer(err.msg, pointer));
        json_decref(doc);
        return 0;
    }
    json_decref(doc);
    return 1;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

rein_err rein_registry_load_dir(rein_registry *reg, const char *dir, size_t *loaded,
                                rein_error *err)
{
    DIR *d;
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0, count = 0;
    rein_err rc = REIN_OK;

    if (loaded)
        *loaded = 0;
    if (!reg || !dir)
        return rein_error_set(err, REIN_EINVAL, "no registry or folder");
    d = opendir(dir);
    if (!d)
        return rein_error_set(err, errno == ENOENT ? REIN_ENOTFOUND : REIN_EIO,
                              "skills folder %s: %s", dir, strerror(errno));
    count += (size_t)load_one(reg, dir);
    /* Subfolders in name order, so the registry's order does not depend on the file system. */
    while ((e = readdir(d))) {
        char **nn;
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            nn = rein_realloc(names, cap * sizeof(*names));
            if (!nn) {
                rc = rein_error_set(err, REIN_ENOMEM, "out of memory listing %s", dir);
                break;
            }
            names = nn;
        }
        names[n] = rein_strdup(e->d_name);
        if (!names[n]) {
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory listing %s", dir);
            break;
        }
        n++;
    }
    closedir(d);
    if (!rc && n > 1)
        qsort(names, n, sizeof(*names), cmp_names);
    for (size_t i = 0; i < n; i++) {
        char sub[4096];
        struct stat st;
        if (!rc && (size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, names[i]) < sizeof(sub) &&
            stat(sub, &st) == 0 && S_ISDIR(st.st_mode))
            count += (size_t)load_one(reg, sub);
        rein_free(names[i]);
    }
    rein_free(names);
    if (loaded)
        *loaded = count;
    return rc;
}

rein_err rein_registry_load_path(rein_registry *reg, const char *path_list, size_t *loaded,
                                 rein_error *err)
{
    size_t total = 0;
    const char *p = path_list;

    if (loaded)
        *loaded = 0;
    if (!reg)
        return rein_error_set(err, REIN_EINVAL, "no registry");
    while (p && *p) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0 && len < 4096) {
            char dir[4096];
            size_t n = 0;
            rein_error sub;
            memcpy(dir, p, len);
            dir[len] = '\0';
            rein_error_clear(&sub);
            rein_err rc = rein_registry_load_dir(reg, dir, &n, &sub);
            if (rc == REIN_ENOMEM)
                return rein_error_set(err, rc, "%s", sub.msg);
            if (rc)
                add_problem(reg, dir, "", sub.msg);
            total += n;
        }
        p = end ? end + 1 : NULL;
    }
    if (loaded)
        *loaded = total;
    return REIN_OK;
}
