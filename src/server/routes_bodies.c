/*
 * The request bodies of the skill host and agent API routes (routes_skills.c, routes_agent.c),
 * read and checked here, apart from the handlers, so they can be fuzzed on their own
 * (fuzz/serve_body.c): every byte comes from the network.
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

/* The JSON Pointer of a top-level member, for a problem's "path". */
static const char *member_path(const char *key, char path[64])
{
    snprintf(path, 64, "/%s", key);
    return path;
}

const char *rein__body_string(const json_t *body, const char *key, bool required, json_t *details)
{
    const json_t *v = json_object_get(body, key);
    char path[64];

    if (json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v))
        return json_string_value(v);
    if (!v || json_is_null(v)) {
        if (required)
            rein__body_problem(details, member_path(key, path), "\"%s\" is required", key);
        return NULL;
    }
    member_path(key, path);
    if (!json_is_string(v)) {
        rein__body_problem(details, path, "\"%s\" must be a string, not %s", key,
                           rein_json_type_name(v));
        return NULL;
    }
    /* A \u0000 would cut the C string short: "conv_1\u0000x" must not become "conv_1". */
    if (strlen(json_string_value(v)) != json_string_length(v)) {
        rein__body_problem(details, path, "\"%s\" must not contain a NUL character (\\u0000)", key);
        return NULL;
    }
    return json_string_value(v);
}

bool rein__body_int(const json_t *body, const char *key, int64_t lo, int64_t hi, int64_t *out,
                    json_t *details)
{
    const json_t *v = json_object_get(body, key);
    char path[64];

    if (!v || json_is_null(v))
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        rein__body_problem(details, member_path(key, path),
                           "\"%s\" must be an integer from %lld to %lld", key, (long long)lo,
                           (long long)hi);
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

/* ---- the routes' bodies ------------------------------------------------------------------ */

#define MAX_TIMEOUT_MS       (24LL * 3600 * 1000)
#define MAX_TOOL_CALLS_LIMIT 100000
#define MAX_TOKENS_LIMIT     (1LL << 40)

bool rein__chat_body_read(const json_t *body, struct rein__chat_body *cb, json_t *details)
{
    static const char *const allowed[] = {"message",      "conversation_id", "mode",
                                          "verification", "max_tool_calls",  "max_tokens",
                                          "timeout_ms",   "replace_from",    NULL};
    const char *mode, *verification;
    int64_t n;

    memset(cb, 0, sizeof(*cb));
    cb->replace_from = -1;
    if (!rein__body_object(body, allowed, details))
        return false;
    cb->message = rein__body_string(body, "message", true, details);
    if (cb->message && !cb->message[strspn(cb->message, " \t\r\n")]) {
        rein__body_problem(details, "/message", "\"message\" is empty");
        cb->message = NULL;
    }
    cb->conv_id = rein__body_string(body, "conversation_id", false, details);
    if (cb->conv_id && !rein_store_id_is_valid(cb->conv_id))
        rein__body_problem(details, "/conversation_id",
                           "\"conversation_id\" must be 1-64 characters of A-Z a-z 0-9 _ . - "
                           "(not starting with '.', no \"..\")");
    mode = rein__body_string(body, "mode", false, details);
    if (mode && !rein_agent_mode_parse(mode, &cb->turn.mode))
        rein__body_problem(details, "/mode",
                           "\"mode\" must be \"single\", \"auto\" or \"propose\", not \"%.40s\"",
                           mode);
    verification = rein__body_string(body, "verification", false, details);
    if (verification && !rein_agent_verification_parse(verification, &cb->turn.verification))
        rein__body_problem(details, "/verification",
                           "\"verification\" must be \"auto\", \"force\" or \"off\", not "
                           "\"%.40s\"",
                           verification);
    n = 0;
    if (rein__body_int(body, "max_tool_calls", 1, MAX_TOOL_CALLS_LIMIT, &n, details))
        cb->turn.max_tool_calls = (int)n;
    n = 0;
    if (rein__body_int(body, "max_tokens", 1, MAX_TOKENS_LIMIT, &n, details))
        cb->turn.max_tokens = n;
    n = 0;
    if (rein__body_int(body, "timeout_ms", 1, MAX_TIMEOUT_MS, &n, details))
        cb->turn.timeout_ms = n;
    n = -1;
    if (rein__body_int(body, "replace_from", 0, INT32_MAX, &n, details) && n >= 0) {
        cb->replace_from = n;
        if (!cb->conv_id)
            rein__body_problem(details, "/replace_from",
                               "\"replace_from\" needs the \"conversation_id\" whose message it "
                               "replaces");
    }
    return json_array_size(details) == 0;
}

bool rein__patch_body_read(const json_t *body, const char **title, json_t *details)
{
    static const char *const allowed[] = {"title", NULL};
    const char *t;
    size_t n;

    *title = NULL;
    if (!rein__body_object(body, allowed, details))
        return false;
    t = rein__body_string(body, "title", true, details);
    if (t) {
        t += strspn(t, " \t\r\n");
        n = strlen(t);
        while (n > 0 && strchr(" \t\r\n", t[n - 1]))
            n--;
        if (n == 0 || n > 200 || n != strlen(t))
            rein__body_problem(details, "/title",
                               "\"title\" must be 1-200 bytes without spaces around it");
        else
            *title = t;
    }
    return json_array_size(details) == 0;
}

bool rein__invoke_body_read(const json_t *body, const char *id, struct rein_call_input *in,
                            int64_t *timeout_ms, json_t *details)
{
    static const char *const allowed[] = {"arguments", "call_id", "timeout_ms", "tool", NULL};
    const char *tool, *call_id;

    if (!rein__body_object(body, allowed, details))
        return false;
    in->args = json_object_get(body, "arguments");
    if (!in->args)
        rein__body_problem(details, "/arguments",
                           "\"arguments\" is required: the call's arguments as an object");
    tool = rein__body_string(body, "tool", false, details);
    if (tool && strcmp(tool, id) != 0)
        rein__body_problem(details, "/tool", "\"tool\" is \"%.64s\" but the path names \"%.64s\"",
                           tool, id);
    call_id = rein__body_string(body, "call_id", false, details);
    if (call_id) {
        size_t n = strlen(call_id);
        bool ok = n > 0 && n <= 128;
        for (size_t i = 0; ok && i < n; i++)
            ok = call_id[i] > ' ' && call_id[i] < 0x7f;
        if (!ok)
            rein__body_problem(details, "/call_id",
                               "\"call_id\" must be 1 to 128 printable ASCII characters "
                               "without spaces");
        in->call_id = call_id;
    }
    rein__body_int(body, "timeout_ms", 1, MAX_TIMEOUT_MS, timeout_ms, details);
    return json_array_size(details) == 0;
}

bool rein__approval_body_read(const json_t *body, bool *approve, json_t *details)
{
    static const char *const allowed[] = {"approve", NULL};
    const json_t *yes;

    if (!rein__body_object(body, allowed, details))
        return false;
    yes = json_object_get(body, "approve");
    if (!json_is_boolean(yes))
        rein__body_problem(details, "/approve", "\"approve\" is required: true or false");
    *approve = json_is_true(yes);
    return json_array_size(details) == 0;
}

bool rein__proposal_body_read(const json_t *body, bool *run, json_t *details)
{
    static const char *const allowed[] = {"action", NULL};
    const char *action = NULL;

    if (rein__body_object(body, allowed, details))
        action = rein__body_string(body, "action", true, details);
    if (action && strcmp(action, "run") != 0 && strcmp(action, "discard") != 0)
        rein__body_problem(details, "/action", "\"action\" must be \"run\" or \"discard\"");
    *run = action && strcmp(action, "run") == 0;
    return json_array_size(details) == 0;
}

bool rein__cancel_body_read(const json_t *body, char reason[REIN__REASON_MAX], json_t *details)
{
    static const char *const allowed[] = {"reason", NULL};
    const char *r;

    snprintf(reason, REIN__REASON_MAX, "cancelled by a client");
    if (!body)
        return true;
    if (!rein__body_object(body, allowed, details))
        return false;
    r = rein__body_string(body, "reason", false, details);
    if (r)
        snprintf(reason, REIN__REASON_MAX, "cancelled by a client: %s", r);
    return json_array_size(details) == 0;
}
