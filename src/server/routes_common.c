/*
 * Checks shared by the skill host and agent API routes (routes_skills.c, routes_agent.c):
 * reading the members of a JSON request body and answering every problem at once.
 *
 * A body is checked whole before anything runs: each problem becomes one {path, message}
 * entry (path a JSON Pointer into the body, as the call pipeline reports argument errors), and
 * the answer is 400 {"error": {"code": "bad_request", "message": <the first problem, and how
 * many more>, "details": [...]}}. Unknown members are problems too, so a misspelt "mdoe" is
 * reported instead of being ignored.
 */
#include "server/server_int.h"

#include <stdarg.h>
#include <string.h>

void rein__body_problem(json_t *details, const char *path, const char *fmt, ...)
{
    char msg[320];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* Out of memory here only loses a detail; the caller still answers 400 or 500. */
    if (json_array_append_new(details, json_pack("{s:s, s:s}", "path", path, "message", msg)))
        rein_log(REIN_LOG_WARN, "server", "a request problem could not be recorded: %s", msg);
}

bool rein__body_object(const json_t *body, const char *const *allowed, json_t *details)
{
    const char *key;
    json_t *v;

    if (!json_is_object(body)) {
        rein__body_problem(details, "", "the body must be a JSON object, not %s",
                           rein_json_type_name(body));
        return false;
    }
    json_object_foreach((json_t *)body, key, v)
    {
        bool known = false;
        char path[96];
        for (size_t i = 0; allowed[i] && !known; i++)
            known = strcmp(allowed[i], key) == 0;
        if (!known) {
            snprintf(path, sizeof(path), "/%.80s", key);
            rein__body_problem(details, path, "unknown member \"%.80s\"", key);
        }
    }
    return true;
}

const char *rein__body_string(const json_t *body, const char *key, bool required, json_t *details)
{
    const json_t *v = json_object_get(body, key);
    char path[64];

    snprintf(path, sizeof(path), "/%s", key);
    if (!v || json_is_null(v)) {
        if (required)
            rein__body_problem(details, path, "\"%s\" is required", key);
        return NULL;
    }
    if (!json_is_string(v)) {
        rein__body_problem(details, path, "\"%s\" must be a string, not %s", key,
                           rein_json_type_name(v));
        return NULL;
    }
    return json_string_value(v);
}

bool rein__body_int(const json_t *body, const char *key, int64_t lo, int64_t hi, int64_t *out,
                    json_t *details)
{
    const json_t *v = json_object_get(body, key);
    char path[64];

    snprintf(path, sizeof(path), "/%s", key);
    if (!v || json_is_null(v))
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        rein__body_problem(details, path, "\"%s\" must be an integer from %lld to %lld", key,
                           (long long)lo, (long long)hi);
        return false;
    }
    *out = json_integer_value(v);
    return true;
}

rein_err rein__reply_problems(rein_request *req, json_t *details)
{
    const char *first = json_string_value(json_object_get(json_array_get(details, 0), "message"));
    size_t n = json_array_size(details);
    json_t *extra = json_object();
    char msg[480];
    rein_err rc;

    if (n > 1)
        snprintf(msg, sizeof(msg), "%s (and %zu more problem%s: see details)",
                 first ? first : "bad request", n - 1, n > 2 ? "s" : "");
    else
        snprintf(msg, sizeof(msg), "%s", first ? first : "bad request");
    if (!extra || json_object_set(extra, "details", details)) {
        json_decref(extra);
        json_decref(details);
        return rein_request_reply_error(req, 400, "bad_request", "%s", msg);
    }
    rc = rein__request_reply_error_extra(req, 400, "bad_request", msg, extra);
    json_decref(extra);
    json_decref(details);
    return rc;
}
