/*
 * Dependency checks for plans: reading a dependencies object ({"<step>": [steps it needs]})
 * with every index checked against the number of steps, and finding a cycle. The planner's
 * create_plan, the replanner's split and a loaded plan file all go through these, so a plan
 * that could never finish (a step waiting on itself, directly or around a loop) is refused
 * wherever it comes from, with the loop spelled out for whoever has to fix it.
 */
#include "plan_int.h"

#include <stdio.h>
#include <string.h>

/* The longest JSON pointer to a dependency list kept in a problem ("/dependencies/<key>"). */
#define POINTER_MAX 300

rein_err rein__plan_problem(json_t *details, rein_error *err, const char *path, const char *fmt,
                            ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (details)
        (void)json_array_append_new(details, json_pack("{s:s, s:s}", "path", path, "message", msg));
    if (err && err->code == REIN_OK)
        rein_error_set(err, REIN_EINVALID, "%s%s%s", path, path[0] ? ": " : "", msg);
    return REIN_EINVALID;
}

rein_err rein__plan_args_members(const json_t *args, const char *const *names, const char *takes,
                                 json_t *details, rein_error *err)
{
    rein_err rc = REIN_OK;
    const char *key;
    json_t *v;

    if (!json_is_object(args))
        return rein__plan_problem(details, err, "", "the arguments must be an object, not %s",
                                  rein_json_type_name(args));
    json_object_foreach((json_t *)args, key, v)
    {
        bool known = false;
        for (size_t k = 0; names[k] && !known; k++)
            known = strcmp(key, names[k]) == 0;
        if (!known) {
            char path[80];
            snprintf(path, sizeof(path), "/%.60s", key);
            rc = rein__plan_problem(details, err, path, "unknown member: %s", takes);
        }
    }
    return rc;
}

bool rein__plan_index_parse(const char *text, size_t limit, size_t *out)
{
    size_t v = 0;

    if (!text || !text[0] || (text[0] == '0' && text[1]))
        return false;
    for (const char *c = text; *c; c++) {
        if (*c < '0' || *c > '9' || v > 100000)
            return false;
        v = v * 10 + (size_t)(*c - '0');
    }
    if (v >= limit)
        return false;
    *out = v;
    return true;
}

/* A JSON Pointer token for key (escaping ~ and /), truncated to fit. */
static void pointer_token(const char *key, char *out, size_t size)
{
    size_t n = 0;

    for (const char *c = key; *c && n + 3 < size; c++) {
        if (*c == '~' || *c == '/') {
            out[n++] = '~';
            out[n++] = *c == '~' ? '0' : '1';
        } else {
            out[n++] = *c;
        }
    }
    out[n] = '\0';
}

void rein__plan_deps_free(int **deps, size_t n)
{
    for (size_t i = 0; deps && i < n; i++) {
        rein_free(deps[i]);
        deps[i] = NULL;
    }
}

/* Reads one step's list (value of key k) into deps[k]. */
static rein_err read_list(const json_t *list, size_t k, size_t n, const char *path, int **deps,
                          size_t *ndeps, json_t *details, rein_error *err)
{
    rein_err rc = REIN_OK;
    size_t j, m = 0;
    json_t *v;
    char at[POINTER_MAX + 24]; /* path, '/', an index */

    if (!json_is_array(list))
        return rein__plan_problem(details, err, path, "must be an array of step indices, not %s",
                                  rein_json_type_name(list));
    deps[k] = rein_calloc(json_array_size(list) ? json_array_size(list) : 1, sizeof(int));
    if (!deps[k])
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    json_array_foreach(list, j, v)
    {
        json_int_t d = json_integer_value(v);
        bool seen = false;
        snprintf(at, sizeof(at), "%s/%zu", path, j);
        if (!json_is_integer(v) || d < 0 || (size_t)d >= n) {
            rc = json_is_integer(v) ? rein__plan_problem(details, err, at,
                                                         "%lld is not a step: the steps are 0 "
                                                         "to %zu",
                                                         (long long)d, n - 1)
                                    : rein__plan_problem(details, err, at,
                                                         "must be a step index (an integer), "
                                                         "not %s",
                                                         rein_json_type_name(v));
            continue;
        }
        if ((size_t)d == k) {
            rc = rein__plan_problem(details, err, at, "step %zu cannot depend on itself", k);
            continue;
        }
        for (size_t q = 0; q < m && !seen; q++)
            seen = deps[k][q] == (int)d;
        if (!seen)
            deps[k][m++] = (int)d;
    }
    ndeps[k] = m;
    return rc;
}

rein_err rein__plan_deps_read(const json_t *obj, size_t n, const char *prefix, int **deps,
                              size_t *ndeps, json_t *details, rein_error *err)
{
    rein_err rc = REIN_OK, one;
    const char *key;
    json_t *list;

    if (!obj || json_is_null(obj))
        return REIN_OK;
    if (!json_is_object(obj))
        return rein__plan_problem(details, err, prefix,
                                  "must be an object mapping a step index to the steps it "
                                  "needs, not %s",
                                  rein_json_type_name(obj));
    json_object_foreach((json_t *)obj, key, list)
    {
        char token[200], path[POINTER_MAX];
        size_t k;
        pointer_token(key, token, sizeof(token));
        snprintf(path, sizeof(path), "%s/%s", prefix, token);
        if (!rein__plan_index_parse(key, n, &k)) {
            rc = rein__plan_problem(details, err, path,
                                    "\"%.40s\" is not a step index: the steps are 0 to %zu", key,
                                    n - 1);
            continue;
        }
        one = read_list(list, k, n, path, deps, ndeps, details, err);
        if (one == REIN_ENOMEM)
            return one;
        if (one)
            rc = one;
    }
    return rc;
}

bool rein__plan_find_cycle(size_t n, int *const *deps, const size_t *ndeps, char *msg, size_t size)
{
    unsigned char color[REIN_PLAN_MAX_STEPS] = {0}; /* 0 unseen, 1 on the path, 2 done */
    int stack[REIN_PLAN_MAX_STEPS];
    size_t next[REIN_PLAN_MAX_STEPS];

    if (n > REIN_PLAN_MAX_STEPS)
        return false;
    for (size_t root = 0; root < n; root++) {
        size_t sp = 0;
        if (color[root])
            continue;
        stack[sp] = (int)root;
        next[sp++] = 0;
        color[root] = 1;
        while (sp > 0) {
            int u = stack[sp - 1];
            if (next[sp - 1] < ndeps[u]) {
                int v = deps[u][next[sp - 1]++];
                if (color[v] == 0) {
                    color[v] = 1;
                    stack[sp] = v;
                    next[sp++] = 0;
                } else if (color[v] == 1) {
                    /* v is on the path: the loop is v … u, then back to v. */
                    size_t pos = 0, len = 0;
                    while (pos + 1 < sp && stack[pos] != v)
                        pos++;
                    msg[0] = '\0';
                    for (size_t q = pos; q < sp && len < size; q++)
                        len += (size_t)snprintf(msg + len, size - len, "%d → ", stack[q]);
                    if (len < size)
                        snprintf(msg + len, size - len, "%d", v);
                    return true;
                }
            } else {
                color[u] = 2;
                sp--;
            }
        }
    }
    return false;
}
