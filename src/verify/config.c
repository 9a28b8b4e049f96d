/*
 * Protocol files (rein-verify.yaml / .yml / .json): from the position-tracking tree of
 * doc.c to the immutable struct rein_verify_config that runs use.
 *
 * Every rule of the file format in include/rein/verify.h is checked here, before anything
 * runs, and every complaint names the file, line, column and the dotted path of the value
 * ("protocols.TEST.steps[0].timeout"). Unknown keys are errors: a misspelt `on_failur` must
 * not quietly turn a failing test into a passing protocol. Defaults that come from the seed
 * (priorities, groups, layers, ARCHITECT's conditions) are filled in here too, and the
 * protocols are sorted into run order once.
 */
#include "doc.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONFIG_MAX_BYTES     (1 << 20)
#define CONFIG_MAX_PROTOCOLS 64
#define CONFIG_MAX_STEPS     64
#define DEFAULT_TIMEOUT_MS   ((int64_t)600 * 1000)
#define MAX_TIMEOUT_MS       ((int64_t)24 * 3600 * 1000)

/* The built-in protocols and their seed defaults. */
static const struct builtin {
    const char *name;
    int rank;
    enum rein_verify_priority priority;
    int group;
    int layer;
    unsigned when;
} builtins[] = {
    {"BUILD", 1, REIN_VERIFY_P0, 1, 1, 0},
    {"LINT", 2, REIN_VERIFY_P1, 2, 1, 0},
    {"TEST", 3, REIN_VERIFY_P1, 2, 2, 0},
    {"FUNCTIONALITY", 4, REIN_VERIFY_P1, 3, 2, 0},
    {"ARCHITECT", 5, REIN_VERIFY_P2, 3, 5,
     REIN__COND_FILES_ADDED | REIN__COND_DEPENDENCIES | REIN__COND_API},
};
static const struct builtin custom_defaults = {NULL, 6, REIN_VERIFY_P1, 4, 2, 0};

struct vctx {
    const struct rein__doc *doc;
    const char *name;
    rein_error *err;
    int64_t default_timeout;
    char **top_env; /* "K=V", NULL-terminated, or NULL */
};

/* Reports what is wrong with the value at path; the position is the value's, else its key's. */
static int verr(struct vctx *c, int code, const json_t *parent, const char *key, const json_t *node,
                const char *path, const char *fmt, ...) REIN_PRINTF(7, 8);

static int verr(struct vctx *c, int code, const json_t *parent, const char *key, const json_t *node,
                const char *path, const char *fmt, ...)
{
    char msg[200];
    int line = 0, col = 0;
    bool found = false;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* true, false and null are shared singletons in jansson: only their key is exact. */
    if (node && !json_is_boolean(node) && !json_is_null(node))
        found = rein__doc_where(c->doc, node, NULL, &line, &col);
    if (!found && parent && key)
        found = rein__doc_where(c->doc, parent, key, &line, &col);
    if (found)
        rein_error_set(c->err, code, "%s:%d:%d: %s%s%s", c->name, line, col, path,
                       path[0] ? ": " : "", msg);
    else
        rein_error_set(c->err, code, "%s: %s%s%s", c->name, path, path[0] ? ": " : "", msg);
    if (c->err) {
        c->err->line = line;
        c->err->column = col;
    }
    return code;
}

/* "protocols.TEST.steps[0]" + "timeout" → "protocols.TEST.steps[0].timeout" in buf. */
static const char *kpath(char buf[200], const char *path, const char *key)
{
    snprintf(buf, 200, "%s%s%s", path, path[0] ? "." : "", key);
    return buf;
}

static int oom(struct vctx *c)
{
    return rein_error_set(c->err, REIN_ENOMEM, "%s: out of memory", c->name);
}

/* A short readable rendering of a value for messages: `string "abc"`, `integer 5`. */
static void describe(const json_t *v, char *out, size_t n)
{
    if (json_is_string(v))
        snprintf(out, n, "string \"%.40s\"", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, n, "integer %lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(out, n, "number %g", json_real_value(v));
    else
        snprintf(out, n, "%s", rein_json_type_name(v));
}

/* Checks that every key of obj is in allowed (NULL-terminated). */
static rein_err check_keys(struct vctx *c, const json_t *obj, const char *path,
                           const char *const *allowed, const char *list)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)obj, key, v)
    {
        bool ok = false;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = strcmp(allowed[i], key) == 0;
        if (!ok)
            return verr(c, REIN_EINVAL, obj, key, NULL, path, "unknown key \"%s\" (known: %s)", key,
                        list);
    }
    return REIN_OK;
}

static rein_err get_string(struct vctx *c, const json_t *parent, const char *key, const char *path,
                           const char **out)
{
    const json_t *v = json_object_get(parent, key);
    char what[64], kp[200];

    *out = NULL;
    if (!v)
        return REIN_OK;
    if (!json_is_string(v)) {
        describe(v, what, sizeof(what));
        return verr(c, REIN_EINVAL, parent, key, v, kpath(kp, path, key), "must be text, got %s",
                    what);
    }
    if (strlen(json_string_value(v)) != json_string_length(v))
        return verr(c, REIN_EINVAL, parent, key, v, kpath(kp, path, key),
                    "contains a NUL character");
    *out = json_string_value(v);
    return REIN_OK;
}

static rein_err get_bool(struct vctx *c, const json_t *parent, const char *key, const char *path,
                         bool *out)
{
    const json_t *v = json_object_get(parent, key);
    char what[64], kp[200];

    if (!v)
        return REIN_OK;
    if (!json_is_boolean(v)) {
        describe(v, what, sizeof(what));
        return verr(c, REIN_EINVAL, parent, key, v, kpath(kp, path, key),
                    "must be true or false, got %s", what);
    }
    *out = json_is_true(v);
    return REIN_OK;
}

static rein_err get_int(struct vctx *c, const json_t *parent, const char *key, const char *path,
                        int lo, int hi, int *out)
{
    const json_t *v = json_object_get(parent, key);
    char what[64], kp[200];

    if (!v)
        return REIN_OK;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        describe(v, what, sizeof(what));
        return verr(c, REIN_EINVAL, parent, key, v, kpath(kp, path, key),
                    "must be a whole number from %d to %d, got %s", lo, hi, what);
    }
    *out = (int)json_integer_value(v);
    return REIN_OK;
}

/* "30", 30, 0.5, "30s", "500ms", "5m", "1h" → milliseconds; -1 when not a duration. */
static int64_t parse_duration(const json_t *v)
{
    double secs = -1, mult = 1000;
    const char *s;
    char *end;

    if (json_is_number(v))
        secs = json_number_value(v);
    else if (json_is_string(v)) {
        s = json_string_value(v);
        secs = strtod(s, &end);
        if (end == s)
            return -1;
        while (*end == ' ')
            end++;
        if (strcmp(end, "ms") == 0)
            mult = 1;
        else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
            mult = 60 * 1000;
        else if (strcmp(end, "h") == 0)
            mult = 3600 * 1000;
        else if (strcmp(end, "s") != 0 && *end != '\0')
            return -1;
    }
    if (!(secs > 0) || isinf(secs) || secs * mult > (double)MAX_TIMEOUT_MS)
        return -1;
    return secs * mult < 1 ? 1 : (int64_t)(secs * mult);
}

static rein_err get_timeout(struct vctx *c, const json_t *parent, const char *path, int64_t *out)
{
    const json_t *v = json_object_get(parent, "timeout");
    int64_t ms;
    char what[64], kp[200];

    if (!v)
        return REIN_OK;
    ms = parse_duration(v);
    if (ms < 0) {
        describe(v, what, sizeof(what));
        return verr(c, REIN_EINVAL, parent, "timeout", v, kpath(kp, path, "timeout"),
                    "must be a positive number of seconds (or \"30s\", \"5m\", \"1h\", "
                    "\"500ms\"), at most 24 hours, got %s",
                    what);
    }
    *out = ms;
    return REIN_OK;
}

static rein_err get_expr(struct vctx *c, const json_t *parent, const char *key, const char *path,
                         struct rein__expr **out, char **text_out)
{
    const char *text;
    char why[200], kp[200];
    size_t off;
    rein_err rc = get_string(c, parent, key, path, &text);

    if (rc || !text)
        return rc;
    *out = rein__verify_expr_compile(text, &off, why, sizeof(why));
    if (!*out) {
        if (strcmp(why, "out of memory") == 0)
            return oom(c);
        return verr(c, REIN_EINVAL, parent, key, json_object_get(parent, key), kpath(kp, path, key),
                    "%s (at offset %zu of \"%.60s\")", why, off, text);
    }
    *text_out = rein_strdup(text);
    return *text_out ? REIN_OK : oom(c);
}

static void env_free(char **env)
{
    rein__verify_argv_free(env);
}

static bool valid_env_name(const char *k)
{
    if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') || *k == '_'))
        return false;
    for (; *k; k++) {
        if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') || *k == '_' ||
              (*k >= '0' && *k <= '9')))
            return false;
    }
    return true;
}

/* Builds "K=V" entries: base (borrowed, copied) first, then the mapping at key. */
static rein_err get_env(struct vctx *c, const json_t *parent, const char *path, char **base,
                        char ***out)
{
    const json_t *m = json_object_get(parent, "env");
    size_t nbase = 0, n = 0;
    const char *key;
    json_t *v;
    char **env;

    *out = NULL;
    while (base && base[nbase])
        nbase++;
    char kp[200];

    if (m && !json_is_object(m))
        return verr(c, REIN_EINVAL, parent, "env", m, kpath(kp, path, "env"),
                    "must be a mapping of variable names to values");
    if (!m && !nbase)
        return REIN_OK;
    env = rein_calloc(nbase + (m ? json_object_size(m) : 0) + 1, sizeof(*env));
    if (!env)
        return oom(c);
    for (size_t i = 0; i < nbase; i++) {
        env[n] = rein_strdup(base[i]);
        if (!env[n])
            goto out_oom;
        n++;
    }
    json_object_foreach((json_t *)m, key, v)
    {
        char num[64];
        const char *val = num;
        if (!valid_env_name(key)) {
            env_free(env);
            return verr(c, REIN_EINVAL, m, key, NULL, kpath(kp, path, "env"),
                        "\"%s\" is not a valid environment variable name", key);
        }
        if (json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v))
            val = json_string_value(v);
        else if (json_is_integer(v))
            snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v))
            snprintf(num, sizeof(num), "%g", json_real_value(v));
        else if (json_is_boolean(v))
            val = json_is_true(v) ? "true" : "false";
        else {
            env_free(env);
            return verr(c, REIN_EINVAL, m, key, v, kpath(kp, path, "env"),
                        "%s: must be text, a number or a truth value", key);
        }
        env[n] = rein_asprintf("%s=%s", key, val);
        if (!env[n])
            goto out_oom;
        n++;
    }
    *out = env;
    return REIN_OK;

out_oom:
    env_free(env);
    return oom(c);
}

/* A string or a list of strings at key, as a new NULL-terminated list (NULL when absent). */
static rein_err get_string_list(struct vctx *c, const json_t *parent, const char *key,
                                const char *path, char ***out)
{
    const json_t *v = json_object_get(parent, key);
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    char kp[200], **list;

    *out = NULL;
    if (!v)
        return REIN_OK;
    if ((!json_is_array(v) && !json_is_string(v)) || n == 0 || n > 64)
        return verr(c, REIN_EINVAL, parent, key, v, kpath(kp, path, key),
                    "must be a path (glob patterns allowed) or a list of 1 to 64 paths");
    list = rein_calloc(n + 1, sizeof(*list));
    if (!list)
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_string(item) || !json_string_length(item) ||
            strlen(json_string_value(item)) != json_string_length(item)) {
            rein__verify_argv_free(list);
            return verr(c, REIN_EINVAL, parent, key, item, kpath(kp, path, key),
                        "every entry must be a non-empty path");
        }
        list[i] = rein_strdup(json_string_value(item));
        if (!list[i]) {
            rein__verify_argv_free(list);
            return oom(c);
        }
    }
    *out = list;
    return REIN_OK;
}

/* ---- steps ---- */

static void step_release(struct rein__step *s)
{
    rein_free(s->name);
    rein_free(s->command);
    rein__verify_argv_free(s->argv);
    rein__verify_expr_free(s->success);
    rein_free(s->success_text);
    rein_free(s->cwd);
    env_free(s->env);
    rein__verify_argv_free(s->reports);
    rein__verify_argv_free(s->coverage);
}

static rein_err step_command_list(struct vctx *c, const json_t *obj, const json_t *cmd,
                                  const char *path, struct rein__step *s)
{
    size_t n = json_array_size(cmd);
    struct rein_buf joined;
    size_t i;
    json_t *item;

    if (n == 0 || n > 256)
        return verr(c, REIN_EINVAL, obj, "command", cmd, path,
                    "a command list needs 1 to 256 words");
    if (s->shell)
        return verr(c, REIN_EINVAL, obj, "command", cmd, path,
                    "with `shell: true` the command must be one string");
    s->argv = rein_calloc(n + 1, sizeof(*s->argv));
    if (!s->argv)
        return oom(c);
    rein_buf_init(&joined, 1 << 20);
    json_array_foreach(cmd, i, item)
    {
        if (!json_is_string(item) || strlen(json_string_value(item)) != json_string_length(item)) {
            rein_buf_release(&joined);
            return verr(c, REIN_EINVAL, obj, "command", item, path,
                        "command[%zu]: every word of a command list must be text", i);
        }
        s->argv[i] = rein_strdup(json_string_value(item));
        if (!s->argv[i] || (i && rein_buf_addch(&joined, ' ')) ||
            rein_buf_adds(&joined, json_string_value(item))) {
            rein_buf_release(&joined);
            return oom(c);
        }
    }
    s->command = rein_buf_detach(&joined, NULL);
    rein_buf_release(&joined);
    return s->command ? REIN_OK : oom(c);
}

static rein_err step_command(struct vctx *c, const json_t *obj, const char *path,
                             struct rein__step *s)
{
    const json_t *cmd = json_object_get(obj, "command");
    char why[200], kp[200];

    if (!cmd)
        return verr(c, REIN_EINVAL, obj, NULL, obj, path, "a step needs a \"command\"");
    if (json_is_array(cmd))
        return step_command_list(c, obj, cmd, path, s);
    if (!json_is_string(cmd) || strlen(json_string_value(cmd)) != json_string_length(cmd))
        return verr(c, REIN_EINVAL, obj, "command", cmd, kpath(kp, path, "command"),
                    "must be text or a list of words");
    s->command = rein_strdup(json_string_value(cmd));
    if (!s->command)
        return oom(c);
    if (s->shell) {
        const char *sh[] = {"/bin/sh", "-c", s->command, NULL};
        if (!s->command[strspn(s->command, " \t\r\n")])
            return verr(c, REIN_EINVAL, obj, "command", cmd, kpath(kp, path, "command"),
                        "is empty");
        s->argv = rein_calloc(4, sizeof(*s->argv));
        if (!s->argv)
            return oom(c);
        for (int i = 0; i < 3; i++) {
            s->argv[i] = rein_strdup(sh[i]);
            if (!s->argv[i])
                return oom(c);
        }
        return REIN_OK;
    }
    s->argv = rein__verify_split_command(s->command, why, sizeof(why));
    if (!s->argv)
        return strcmp(why, "out of memory") == 0 ? oom(c)
                                                 : verr(c, REIN_EINVAL, obj, "command", cmd,
                                                        kpath(kp, path, "command"), "%s", why);
    return REIN_OK;
}

static rein_err step_policy(struct vctx *c, const json_t *obj, const char *path,
                            struct rein__step *s)
{
    const char *text;
    char kp[200];
    rein_err rc = get_string(c, obj, "on_failure", path, &text);

    if (rc)
        return rc;
    s->retries = 2;
    if (text) {
        if (strcmp(text, "retry") == 0)
            s->on_failure = REIN__ON_FAILURE_RETRY;
        else if (strcmp(text, "skip") == 0)
            s->on_failure = REIN__ON_FAILURE_SKIP;
        else if (strcmp(text, "fail") == 0)
            s->on_failure = REIN__ON_FAILURE_FAIL;
        else
            return verr(c, REIN_EINVAL, obj, "on_failure", json_object_get(obj, "on_failure"),
                        kpath(kp, path, "on_failure"), "must be retry, skip or fail, got \"%.40s\"",
                        text);
    }
    if (json_object_get(obj, "retries")) {
        rc = get_int(c, obj, "retries", path, 1, 10, &s->retries);
        if (!rc && !text)
            s->on_failure = REIN__ON_FAILURE_RETRY; /* asking for retries means retry */
    }
    return rc;
}

static rein_err step_format(struct vctx *c, const json_t *obj, const char *path,
                            struct rein__step *s)
{
    const char *key = json_object_get(obj, "format") ? "format" : "parser";
    const char *text;
    char kp[200];
    rein_err rc;

    if (json_object_get(obj, "format") && json_object_get(obj, "parser"))
        return verr(c, REIN_EINVAL, obj, "parser", NULL, path,
                    "give either format or parser (they are the same), not both");
    rc = get_string(c, obj, key, path, &text);
    if (rc || !text)
        return rc;
    if (!rein_verify_format_parse(text, &s->format))
        return verr(c, REIN_EINVAL, obj, key, json_object_get(obj, key), kpath(kp, path, key),
                    "unknown output format \"%.40s\" (known: auto, none, ctest, cmocka, "
                    "pytest, jest, vitest, tap, junit, gcc, eslint)",
                    text);
    return REIN_OK;
}

static rein_err parse_step(struct vctx *c, const json_t *obj, const char *path, int64_t timeout,
                           struct rein__step *s)
{
    static const char *const keys[] = {
        "name",       "command",  "shell",  "timeout", "success", "success_condition",
        "on_failure", "retries",  "format", "parser",  "cwd",     "env",
        "reports",    "coverage", NULL};
    const char *name = NULL, *cwd = NULL;
    const char *succ_key =
        json_object_get(obj, "success_condition") ? "success_condition" : "success";
    rein_err rc;

    if (!json_is_object(obj))
        return verr(c, REIN_EINVAL, NULL, NULL, obj, path,
                    "a step must be a mapping with at least a \"command\"");
    rc = check_keys(c, obj, path, keys,
                    "name, command, shell, timeout, success, on_failure, retries, format, cwd, "
                    "env, reports, coverage");
    if (!rc && json_object_get(obj, "success") && json_object_get(obj, "success_condition"))
        rc = verr(c, REIN_EINVAL, obj, "success_condition", NULL, path,
                  "give either success or success_condition, not both");
    s->timeout_ms = timeout;
    if (!rc)
        rc = get_bool(c, obj, "shell", path, &s->shell);
    if (!rc)
        rc = step_command(c, obj, path, s);
    if (!rc)
        rc = get_string(c, obj, "name", path, &name);
    if (!rc)
        rc = get_timeout(c, obj, path, &s->timeout_ms);
    if (!rc)
        rc = get_expr(c, obj, succ_key, path, &s->success, &s->success_text);
    if (!rc)
        rc = step_policy(c, obj, path, s);
    if (!rc)
        rc = step_format(c, obj, path, s);
    if (!rc)
        rc = get_string(c, obj, "cwd", path, &cwd);
    if (!rc)
        rc = get_env(c, obj, path, c->top_env, &s->env);
    if (!rc)
        rc = get_string_list(c, obj, "reports", path, &s->reports);
    if (!rc)
        rc = get_string_list(c, obj, "coverage", path, &s->coverage);
    if (rc)
        return rc;
    s->name = rein_strdup(name ? name : s->command);
    if (!s->name)
        return oom(c);
    if (cwd) {
        s->cwd = rein_strdup(cwd);
        if (!s->cwd)
            return oom(c);
    }
    return REIN_OK;
}

/* ---- protocols ---- */

static void protocol_release(struct rein__protocol *p)
{
    for (size_t i = 0; i < p->nsteps; i++)
        step_release(&p->steps[i]);
    rein_free(p->steps);
    rein_free(p->name);
    rein_free(p->description);
    rein__verify_expr_free(p->success);
    rein_free(p->success_text);
    rein_schema_free(p->output_schema);
    rein__verify_argv_free(p->case_argv);
    rein_free(p->case_command);
}

static const struct {
    const char *name;
    unsigned bit; /* 0: always */
} conditions[] = {
    {"always", 0},
    {"files_added", REIN__COND_FILES_ADDED},
    {"new_files_created", REIN__COND_FILES_ADDED},
    {"files_changed", REIN__COND_FILES_CHANGED},
    {"files_deleted", REIN__COND_FILES_DELETED},
    {"dependencies_changed", REIN__COND_DEPENDENCIES},
    {"api_changed", REIN__COND_API},
    {"api_signature_changed", REIN__COND_API},
    {"security_sensitive", REIN__COND_SECURITY},
};

static rein_err parse_when(struct vctx *c, const json_t *obj, const char *path,
                           struct rein__protocol *p)
{
    const char *key = json_object_get(obj, "when") ? "when" : "trigger_conditions";
    const json_t *v = json_object_get(obj, key);
    bool always = false;
    size_t i;
    json_t *item;

    if (json_object_get(obj, "when") && json_object_get(obj, "trigger_conditions"))
        return verr(c, REIN_EINVAL, obj, "trigger_conditions", NULL, path,
                    "give either when or trigger_conditions, not both");
    if (!v)
        return REIN_OK;
    if (!json_is_array(v) && !json_is_string(v))
        return verr(c, REIN_EINVAL, obj, key, v, path,
                    "%s: must be a condition or a list of "
                    "conditions",
                    key);
    p->when = 0;
    for (i = 0; i < (json_is_array(v) ? json_array_size(v) : 1); i++) {
        bool known = false;
        item = json_is_array(v) ? json_array_get(v, i) : (json_t *)v;
        for (size_t k = 0; json_is_string(item) && k < REIN_ARRAY_SIZE(conditions); k++) {
            if (strcmp(conditions[k].name, json_string_value(item)) == 0) {
                known = true;
                p->when |= conditions[k].bit;
                always |= conditions[k].bit == 0;
            }
        }
        if (!known)
            return verr(c, REIN_EINVAL, obj, key, item, path,
                        "%s: unknown condition (known: always, files_added, files_changed, "
                        "files_deleted, dependencies_changed, api_changed, security_sensitive)",
                        key);
    }
    if (always)
        p->when = 0;
    return REIN_OK;
}

static rein_err parse_priority(struct vctx *c, const json_t *obj, const char *path,
                               struct rein__protocol *p)
{
    const json_t *v = json_object_get(obj, "priority");
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    char what[64];

    if (!v)
        return REIN_OK;
    if ((s[0] == 'P' || s[0] == 'p') && s[1] >= '0' && s[1] <= '2' && s[2] == '\0') {
        p->priority = (enum rein_verify_priority)(s[1] - '0');
        return REIN_OK;
    }
    describe(v, what, sizeof(what));
    return verr(c, REIN_EINVAL, obj, "priority", v, path,
                "priority: must be P0 (blocking), P1 (required) or P2 (desired), got %s", what);
}

static bool valid_protocol_name(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')) || strlen(s) > 40)
        return false;
    for (; *s; s++) {
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '-'))
            return false;
    }
    return true;
}

static rein_err parse_steps(struct vctx *c, const json_t *obj, const char *path, int64_t timeout,
                            struct rein__protocol *p)
{
    const json_t *steps = json_object_get(obj, "steps");
    char spath[160];
    size_t i;
    json_t *item;

    /* FUNCTIONALITY and ARCHITECT without steps are the judge's (002: "如果無法執行 →
     * LLM-as-Judge"; ARCHITECT's last step is the judge's review). */
    if ((!steps || (json_is_array(steps) && json_array_size(steps) == 0)) &&
        (strcmp(p->name, "FUNCTIONALITY") == 0 || strcmp(p->name, "ARCHITECT") == 0)) {
        p->judged = true;
        return REIN_OK;
    }
    if (!steps)
        return verr(c, REIN_EINVAL, obj, NULL, obj, path,
                    "a protocol needs \"steps\" (only FUNCTIONALITY and ARCHITECT may have "
                    "none: the judge checks them)");
    if (!json_is_array(steps) || json_array_size(steps) == 0 ||
        json_array_size(steps) > CONFIG_MAX_STEPS)
        return verr(c, REIN_EINVAL, obj, "steps", steps, path,
                    "steps: must be a list of 1 to %d steps", CONFIG_MAX_STEPS);
    p->steps = rein_calloc(json_array_size(steps), sizeof(*p->steps));
    if (!p->steps)
        return oom(c);
    json_array_foreach(steps, i, item)
    {
        rein_err rc;
        snprintf(spath, sizeof(spath), "%s.steps[%zu]", path, i);
        p->nsteps = i + 1;
        rc = parse_step(c, item, spath, timeout, &p->steps[i]);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

/* coverage_threshold: 80, 80.5 or "80%". */
static rein_err parse_threshold(struct vctx *c, const json_t *obj, const char *path,
                                struct rein__protocol *p)
{
    const json_t *v = json_object_get(obj, "coverage_threshold");
    double t = NAN;
    char what[64], kp[200];

    if (!v)
        return REIN_OK;
    if (json_is_number(v)) {
        t = json_number_value(v);
    } else if (json_is_string(v)) {
        char *end;
        t = strtod(json_string_value(v), &end);
        if (end == json_string_value(v) || (*end && strcmp(end, "%") != 0))
            t = NAN;
    }
    if (!(t >= 0 && t <= 100)) {
        describe(v, what, sizeof(what));
        return verr(c, REIN_EINVAL, obj, "coverage_threshold", v,
                    kpath(kp, path, "coverage_threshold"),
                    "must be a percentage from 0 to 100 (80 or \"80%%\"), got %s", what);
    }
    p->coverage_threshold = t;
    return REIN_OK;
}

/* output_schema: a JSON Schema the last step's JSON output must match (002's custom
 * protocol template), compiled now so a broken schema is reported before anything runs. */
static rein_err parse_output_schema(struct vctx *c, const json_t *obj, const char *path,
                                    struct rein__protocol *p)
{
    json_t *v = json_object_get(obj, "output_schema");
    rein_error serr;
    char kp[200];

    if (!v)
        return REIN_OK;
    if (!json_is_object(v) && !json_is_boolean(v))
        return verr(c, REIN_EINVAL, obj, "output_schema", v, kpath(kp, path, "output_schema"),
                    "must be a JSON Schema (a mapping)");
    if (p->judged)
        return verr(c, REIN_EINVAL, obj, "output_schema", v, kpath(kp, path, "output_schema"),
                    "applies to what steps print, and this protocol has none");
    rein_error_clear(&serr);
    p->output_schema = rein_schema_compile(v, NULL, &serr);
    if (!p->output_schema)
        return serr.code == REIN_ENOMEM
                   ? oom(c)
                   : verr(c, REIN_EINVAL, obj, "output_schema", v, kpath(kp, path, "output_schema"),
                          "not a usable JSON Schema: %s", serr.msg);
    return REIN_OK;
}

/* FUNCTIONALITY's run: the command each proposed case runs ({input} in a word is replaced
 * by the case's input, which is also its standard input). */
static rein_err parse_case_command(struct vctx *c, const json_t *obj, const char *path,
                                   struct rein__protocol *p)
{
    struct rein__step tmp;
    const json_t *v = json_object_get(obj, "run");
    char kp[200];
    json_t *wrap;
    rein_err rc;

    if (!v)
        return REIN_OK;
    if (!p->judged || strcmp(p->name, "FUNCTIONALITY") != 0)
        return verr(c, REIN_EINVAL, obj, "run", v, kpath(kp, path, "run"),
                    "only FUNCTIONALITY without steps has `run` (the command its cases run)");
    wrap = json_pack("{s:O}", "command", v);
    if (!wrap)
        return oom(c);
    memset(&tmp, 0, sizeof(tmp));
    rc = step_command(c, wrap, kpath(kp, path, "run"), &tmp);
    json_decref(wrap);
    if (rc) {
        step_release(&tmp);
        return rc;
    }
    p->case_argv = tmp.argv;
    p->case_command = tmp.command;
    tmp.argv = NULL;
    tmp.command = NULL;
    step_release(&tmp);
    return REIN_OK;
}

static rein_err parse_protocol(struct vctx *c, const json_t *protocols, const char *name,
                               size_t index, struct rein__protocol *p)
{
    static const char *const keys[] = {
        "name",    "description",        "priority",      "group",   "layer",
        "when",    "trigger_conditions", "steps",         "success", "success_criteria",
        "timeout", "coverage_threshold", "output_schema", "run",     NULL};
    const json_t *obj = json_object_get(protocols, name);
    const struct builtin *b = &custom_defaults;
    const char *desc = NULL, *display = NULL;
    const char *succ_key =
        json_object_get(obj, "success_criteria") ? "success_criteria" : "success";
    int64_t timeout = c->default_timeout;
    char path[96];
    rein_err rc;

    snprintf(path, sizeof(path), "protocols.%s", name);
    if (!valid_protocol_name(name))
        return verr(c, REIN_EINVAL, protocols, name, NULL, "protocols",
                    "\"%.40s\" is not a protocol name (letters, digits, '_' and '-', starting "
                    "with a letter, at most 40)",
                    name);
    if (!json_is_object(obj))
        return verr(c, REIN_EINVAL, protocols, name, obj, path,
                    "a protocol must be a mapping with \"steps\"");
    for (size_t i = 0; i < REIN_ARRAY_SIZE(builtins); i++) {
        if (strcmp(builtins[i].name, name) == 0)
            b = &builtins[i];
    }
    p->name = rein_strdup(name);
    if (!p->name)
        return oom(c);
    p->priority = b->priority;
    p->group = b->group;
    p->layer = b->layer;
    p->when = b->when;
    p->rank = b->rank * 1000 + (b == &custom_defaults ? (int)index : 0);
    p->coverage_threshold = NAN;
    rc = check_keys(c, obj, path, keys,
                    "description, priority, group, layer, when, steps, success, timeout, "
                    "coverage_threshold, output_schema, run");
    if (!rc && json_object_get(obj, "success") && json_object_get(obj, "success_criteria"))
        rc = verr(c, REIN_EINVAL, obj, "success_criteria", NULL, path,
                  "give either success or success_criteria, not both");
    if (!rc)
        rc = get_string(c, obj, "name", path, &display);
    if (!rc)
        rc = get_string(c, obj, "description", path, &desc);
    if (!rc)
        rc = parse_priority(c, obj, path, p);
    if (!rc)
        rc = get_int(c, obj, "group", path, 1, 100, &p->group);
    if (!rc)
        rc = get_int(c, obj, "layer", path, 1, 6, &p->layer);
    if (!rc)
        rc = parse_when(c, obj, path, p);
    if (!rc)
        rc = get_timeout(c, obj, path, &timeout);
    if (!rc)
        rc = get_expr(c, obj, succ_key, path, &p->success, &p->success_text);
    if (!rc)
        rc = parse_steps(c, obj, path, timeout, p);
    if (!rc)
        rc = parse_threshold(c, obj, path, p);
    if (!rc)
        rc = parse_output_schema(c, obj, path, p);
    if (!rc)
        rc = parse_case_command(c, obj, path, p);
    if (rc)
        return rc;
    p->description = rein_strdup(desc ? desc : display ? display : "");
    return p->description ? REIN_OK : oom(c);
}

static int protocol_order(const void *a, const void *b)
{
    const struct rein__protocol *x = a, *y = b;

    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* ---- the file ---- */

void rein_verify_config_free(rein_verify_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->nprotocols; i++)
        protocol_release(&cfg->protocols[i]);
    rein_free(cfg->protocols);
    rein_free(cfg);
}

rein_verify_config *rein_verify_config_new_empty(void)
{
    rein_verify_config *cfg = rein_calloc(1, sizeof(*cfg));

    if (!cfg)
        return NULL;
    cfg->mode = REIN_VERIFY_MODE_STANDARD;
    cfg->fast_fail = true;
    cfg->parallel = true;
    return cfg;
}

static rein_err parse_top(struct vctx *c, const json_t *root, rein_verify_config *cfg)
{
    static const char *const keys[] = {"mode",    "protocols", "fast_fail", "parallel",
                                       "timeout", "env",       NULL};
    const char *mode = NULL;
    rein_err rc;

    if (!json_is_object(root))
        return verr(c, REIN_EINVAL, NULL, NULL, root, "",
                    "the file must be a mapping with \"protocols\", got %s",
                    rein_json_type_name(root));
    rc = check_keys(c, root, "", keys, "mode, protocols, fast_fail, parallel, timeout, env");
    if (!rc)
        rc = get_string(c, root, "mode", "", &mode);
    if (!rc && mode && !rein_verify_mode_parse(mode, &cfg->mode))
        rc = verr(c, REIN_EINVAL, root, "mode", json_object_get(root, "mode"), "mode",
                  "must be minimal, standard, thorough or full, got \"%.40s\"", mode);
    if (!rc)
        rc = get_bool(c, root, "fast_fail", "", &cfg->fast_fail);
    if (!rc)
        rc = get_bool(c, root, "parallel", "", &cfg->parallel);
    if (!rc)
        rc = get_timeout(c, root, "", &c->default_timeout);
    if (!rc)
        rc = get_env(c, root, "", NULL, &c->top_env);
    return rc;
}

static rein_err parse_protocols(struct vctx *c, const json_t *root, rein_verify_config *cfg)
{
    const json_t *protocols = json_object_get(root, "protocols");
    const char *name;
    json_t *v;
    size_t i = 0;

    if (!protocols)
        return verr(c, REIN_EINVAL, NULL, NULL, root, "", "the file declares no \"protocols\"");
    if (!json_is_object(protocols) || json_object_size(protocols) == 0 ||
        json_object_size(protocols) > CONFIG_MAX_PROTOCOLS)
        return verr(c, REIN_EINVAL, root, "protocols", protocols, "protocols",
                    "must be a mapping of 1 to %d protocols (BUILD, TEST, …)",
                    CONFIG_MAX_PROTOCOLS);
    cfg->protocols = rein_calloc(json_object_size(protocols), sizeof(*cfg->protocols));
    if (!cfg->protocols)
        return oom(c);
    json_object_foreach((json_t *)protocols, name, v)
    {
        rein_err rc;
        cfg->nprotocols = i + 1;
        rc = parse_protocol(c, protocols, name, i, &cfg->protocols[i]);
        if (rc)
            return rc;
        i++;
    }
    qsort(cfg->protocols, cfg->nprotocols, sizeof(*cfg->protocols), protocol_order);
    return REIN_OK;
}

rein_verify_config *rein_verify_config_parse(const char *text, size_t len, const char *name,
                                             rein_error *err)
{
    struct rein__doc doc;
    struct vctx c = {.doc = &doc, .err = err, .default_timeout = DEFAULT_TIMEOUT_MS};
    rein_verify_config *cfg = NULL;
    rein_err rc;

    c.name = name ? name : "(protocol file)";
    rein_error_clear(err);
    rc = rein__doc_load(&doc, text, len, c.name, err);
    if (rc)
        goto out_doc;
    cfg = rein_verify_config_new_empty();
    if (!cfg) {
        oom(&c);
        goto out_doc;
    }
    rc = parse_top(&c, doc.root, cfg);
    if (!rc)
        rc = parse_protocols(&c, doc.root, cfg);
    if (rc) {
        rein_verify_config_free(cfg);
        cfg = NULL;
    }
out_doc:
    env_free(c.top_env);
    rein__doc_release(&doc);
    if (!cfg && err)
        rein_error_where(err, "verify");
    return cfg;
}

rein_verify_config *rein_verify_config_load(const char *path, rein_error *err)
{
    FILE *f = fopen(path, "rb");
    rein_verify_config *cfg;
    char *text;
    size_t n;

    if (!f) {
        rein_error_set(err, errno == ENOENT ? REIN_ENOTFOUND : REIN_EIO, "%s: %s", path,
                       strerror(errno));
        return NULL;
    }
    text = rein_malloc(CONFIG_MAX_BYTES + 1);
    if (!text) {
        fclose(f);
        rein_error_set(err, REIN_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    n = fread(text, 1, CONFIG_MAX_BYTES + 1, f);
    if (ferror(f) || n > CONFIG_MAX_BYTES) {
        rein_error_set(err, ferror(f) ? REIN_EIO : REIN_ETOOBIG,
                       ferror(f) ? "%s: cannot read the file" : "%s: larger than 1 MiB", path);
        fclose(f);
        rein_free(text);
        return NULL;
    }
    fclose(f);
    cfg = rein_verify_config_parse(text, n, path, err);
    rein_free(text);
    return cfg;
}

rein_verify_config *rein_verify_config_find(const char *dir, rein_error *err)
{
    static const char *const names[] = {"rein-verify.yaml", "rein-verify.yml", "rein-verify.json"};

    for (size_t i = 0; i < REIN_ARRAY_SIZE(names); i++) {
        char *path = dir ? rein_asprintf("%s/%s", dir, names[i]) : rein_strdup(names[i]);
        rein_verify_config *cfg;
        if (!path) {
            rein_error_set(err, REIN_ENOMEM, "out of memory");
            return NULL;
        }
        if (access(path, F_OK) != 0) {
            rein_free(path);
            continue;
        }
        cfg = rein_verify_config_load(path, err);
        rein_free(path);
        return cfg;
    }
    rein_error_set(err, REIN_ENOTFOUND,
                   "no rein-verify.yaml, rein-verify.yml or rein-verify.json in %s; write one "
                   "(see `rein verify --help`) or pass --config FILE",
                   dir ? dir : "the current directory");
    return NULL;
}

enum rein_verify_mode rein_verify_config_mode(const rein_verify_config *cfg)
{
    return cfg->mode;
}

size_t rein_verify_config_protocol_count(const rein_verify_config *cfg)
{
    return cfg->nprotocols;
}

const char *rein_verify_config_protocol_name(const rein_verify_config *cfg, size_t i)
{
    return i < cfg->nprotocols ? cfg->protocols[i].name : NULL;
}

bool rein_verify_config_has_protocol(const rein_verify_config *cfg, const char *name)
{
    for (size_t i = 0; name && i < cfg->nprotocols; i++) {
        if (strcmp(cfg->protocols[i].name, name) == 0)
            return true;
    }
    return false;
}
