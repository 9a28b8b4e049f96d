/*
 * The "process" runner: an external skill that is a program.
 *
 *   "runner": {"kind": "process", "command": ["./search.py", "--fast"], "cwd": "data",
 *              "env": {"LANG": "C", "TOKEN": "${GITHUB_TOKEN}"}, "env_allow": ["GITHUB_TOKEN"],
 *              "max_output_bytes": 1048576}
 *
 * The program's environment is explicit (envvars.c): a documented base, the variables
 * env_allow names, the manifest's env (where ${NAME} reads only what env_allow names), and the
 * call's REIN_TOOL, REIN_CALL_ID and REIN_TRACE_ID, and TRACEPARENT (TRACESTATE) naming the
 * call's span (W3C Trace Context, so the program's own spans join the trace); nothing else of
 * rein's, and never rein's own REIN_* variables.
 *
 * The program is started without a shell (posix_spawn, rein/proc.h) in a process group of its
 * own, gets the call as one JSON document on stdin ({tool, call_id, trace_id, arguments,
 * step?, timeout_ms}) and the variables REIN_TOOL, REIN_CALL_ID and REIN_TRACE_ID, and must
 * print one JSON document on stdout: its output, or a normalized result of its own. stderr is
 * kept (the last 64 KiB) and shown with failures. While it runs, a skill may report progress
 * and log messages by writing MCP notification lines on stderr (notifications/progress,
 * notifications/message; see rein__skills_event_line), which reach the caller's on_event as
 * they arrive. A timeout or a cancel kills the whole group;
 * output beyond the limit stops the program. A relative command[0] containing a slash, and a
 * relative cwd, are taken relative to the manifest's folder.
 */
#include "skills_int.h"

#include <rein/proc.h>
#include <rein/trace.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_MAX_OUTPUT ((size_t)1 << 20)
#define STDERR_KEPT        ((size_t)64 << 10)

struct proc_runner {
    char **argv;
    size_t argc;
    char *cwd;
    char **env; /* "KEY=VALUE" from the manifest */
    size_t nenv;
    json_t *allow; /* env_allow, or NULL */
    size_t max_output;
};

static void proc_close(void *state)
{
    struct proc_runner *p = state;

    if (!p)
        return;
    for (size_t i = 0; p->argv && i < p->argc; i++)
        rein_free(p->argv[i]);
    for (size_t i = 0; p->env && i < p->nenv; i++)
        rein_free(p->env[i]);
    rein_free(p->argv);
    rein_free(p->env);
    rein_free(p->cwd);
    json_decref(p->allow);
    rein_free(p);
}

/* path relative to base (when it is relative and base is known), as a new string. */
static char *relative_to(const char *base, const char *path)
{
    if (path[0] == '/' || !base)
        return rein_strdup(path);
    return rein_asprintf("%s/%s", base, path);
}

static rein_err proc_open(const json_t *runner, const char *base_dir, void **state, rein_error *err)
{
    json_t *cmd = json_object_get(runner, "command"), *env = json_object_get(runner, "env");
    json_t *cwd = json_object_get(runner, "cwd"),
           *max = json_object_get(runner, "max_output_bytes"),
           *allow = json_object_get(runner, "env_allow");
    struct proc_runner *p = rein_calloc(1, sizeof(*p));
    const char *key;
    json_t *v;
    size_t i;

    *state = NULL;
    if (!p)
        goto out_nomem;
    p->argv = rein_calloc(json_array_size(cmd) + 1, sizeof(*p->argv));
    p->env = rein_calloc(json_object_size(env) + 1, sizeof(*p->env));
    if (!p->argv || !p->env)
        goto out_nomem;
    if (rein__skills_env_allow_check(allow, err) != REIN_OK) {
        proc_close(p);
        return REIN_ESCHEMA;
    }
    p->allow = json_incref(allow);
    json_array_foreach(cmd, i, v)
    {
        const char *arg = json_string_value(v);
        /* "./run.sh" is the skill's own program; "python3" is looked up in PATH. */
        p->argv[i] = i == 0 && strchr(arg, '/') ? relative_to(base_dir, arg) : rein_strdup(arg);
        if (!p->argv[i])
            goto out_nomem;
        p->argc++;
    }
    json_object_foreach(env, key, v)
    {
        if (strchr(key, '=') || !key[0]) {
            proc_close(p);
            return rein_error_set(err, REIN_ESCHEMA, "/env: \"%s\" is not a variable name", key);
        }
        char *prefix = rein_asprintf("%s=", key);
        rein_err rc = prefix ? rein__skills_expand_env_allowed(prefix, json_string_value(v), allow,
                                                               &p->env[p->nenv], err)
                             : REIN_ENOMEM;
        rein_free(prefix);
        if (rc == REIN_EDENIED) {
            rein_error_prefix(err, "/env/%s: ", key);
            proc_close(p);
            return REIN_ESCHEMA;
        }
        if (rc)
            goto out_nomem;
        p->nenv++;
    }
    if (cwd) {
        p->cwd = relative_to(base_dir, json_string_value(cwd));
        if (!p->cwd)
            goto out_nomem;
    }
    p->max_output = max ? (size_t)json_integer_value(max) : DEFAULT_MAX_OUTPUT;
    *state = p;
    return REIN_OK;

out_nomem:
    proc_close(p);
    return rein_error_set(err, REIN_ENOMEM, "out of memory preparing a process runner");
}

static const char *const log_levels[] = {"debug", "info",     "notice", "warning",
                                         "error", "critical", "alert",  "emergency"};

static bool is_log_level(const char *s)
{
    for (size_t i = 0; s && i < REIN_ARRAY_SIZE(log_levels); i++) {
        if (strcmp(s, log_levels[i]) == 0)
            return true;
    }
    return false;
}

bool rein__skills_event_line(const char *line, size_t len, struct rein_call_event *ev, json_t **doc)
{
    const char *method;
    json_t *params, *v;

    *doc = NULL;
    while (len > 0 && (*line == ' ' || *line == '\t')) {
        line++;
        len--;
    }
    /* Cheap test first: most stderr lines are plain text. */
    if (len < 2 || line[0] != '{' || !memmem(line, len, "\"jsonrpc\"", 9))
        return false;
    *doc = rein_json_parse(line, len, 0, NULL);
    if (!json_is_object(*doc))
        goto not_event;
    method = json_string_value(json_object_get(*doc, "method"));
    params = json_object_get(*doc, "params");
    if (!method || !json_is_object(params) ||
        strcmp(json_string_value(json_object_get(*doc, "jsonrpc")) ?: "", "2.0") != 0)
        goto not_event;
    memset(ev, 0, sizeof(*ev));
    if (strcmp(method, "notifications/progress") == 0) {
        v = json_object_get(params, "progress");
        if (!json_is_number(v))
            goto not_event;
        ev->kind = REIN_CALL_EVENT_PROGRESS;
        ev->progress = json_number_value(v);
        v = json_object_get(params, "total");
        ev->total = json_is_number(v) ? json_number_value(v) : -1;
        ev->message = json_string_value(json_object_get(params, "message"));
        return true;
    }
    if (strcmp(method, "notifications/message") == 0) {
        ev->kind = REIN_CALL_EVENT_LOG;
        ev->level = json_string_value(json_object_get(params, "level"));
        ev->logger = json_string_value(json_object_get(params, "logger"));
        ev->data = json_object_get(params, "data");
        if (!is_log_level(ev->level) || !ev->data)
            goto not_event;
        return true;
    }
not_event:
    json_decref(*doc);
    *doc = NULL;
    return false;
}

/* Splits a running skill's stderr into lines and reports the event lines. */
struct event_reader {
    const struct rein_invocation *inv;
    struct rein_buf line;
    bool overflow; /* the current line passed the limit: skip to its end */
};

static void event_line(struct event_reader *r, const char *line, size_t len)
{
    struct rein_call_event ev;
    json_t *doc = NULL;

    if (rein__skills_event_line(line, len, &ev, &doc))
        rein_invocation_event(r->inv, &ev);
    json_decref(doc);
}

static void on_stderr(void *ud, const char *data, size_t len)
{
    struct event_reader *r = ud;

    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t n = nl ? (size_t)(nl - data) : len;
        if (!r->overflow && rein_buf_add(&r->line, data, n) != REIN_OK) {
            r->overflow = true;
            rein_buf_reset(&r->line);
        }
        if (!nl)
            return;
        if (!r->overflow)
            event_line(r, r->line.ptr, r->line.len);
        rein_buf_reset(&r->line);
        r->overflow = false;
        data = nl + 1;
        len -= n + 1;
    }
}

/* The end of stderr, as a one-line tail for messages. */
static void stderr_tail(const struct rein_buf *b, char *out, size_t size)
{
    size_t len = b->len;

    while (len > 0 && (b->ptr[len - 1] == '\n' || b->ptr[len - 1] == ' '))
        len--;
    size_t start = len > size - 1 ? len - (size - 1) : 0;
    while (start > 0 && start < len && ((unsigned char)b->ptr[start] & 0xc0) == 0x80)
        start++;
    rein__skills_snippet(b->ptr + start, len - start, out, size);
}

/* Turns a finished run into the reply. */
static rein_err read_run(const struct proc_runner *p, const struct rein_invocation *inv,
                         struct rein_proc_result *res, struct rein_tool_reply *reply,
                         rein_error *err)
{
    const char *prog = p->argv[0];
    char tail[400], head[200];
    rein_error perr;
    json_t *doc;
    rein_err rc;

    stderr_tail(&res->err, tail, sizeof(tail));
    if (res->err.len)
        reply->log = rein_strndup(res->err.ptr, res->err.len);
    if (res->cancelled)
        return rein_error_set(err, REIN_ECANCELED, "cancelled (%s); %s was stopped",
                              rein_cancel_reason(inv->cancel), prog);
    if (res->timed_out)
        return rein_error_set(err, REIN_ETIMEDOUT,
                              "timed out after %lld ms; %s and its process group were killed",
                              (long long)res->duration_ms, prog);
    if (res->stdout_truncated)
        return rein_error_set(err, REIN_ETOOBIG,
                              "%s printed more than %zu bytes on stdout and was stopped", prog,
                              p->max_output);
    if (res->term_signal)
        return rein_error_set(err, REIN_EIO, "%s was killed by signal %d (SIG%s)%s%s", prog,
                              res->term_signal, sigabbrev_np(res->term_signal) ?: "?",
                              tail[0] ? ": " : "", tail);
    rein_error_clear(&perr);
    doc = res->out.len ? rein_json_parse(res->out.ptr, res->out.len, 0, &perr) : NULL;
    if (!doc) {
        if (res->exit_code != 0)
            return rein_error_set(err, REIN_EIO, "%s exited with status %d%s%s", prog,
                                  res->exit_code, tail[0] ? ": " : "", tail);
        if (res->out.len == 0)
            return rein_error_set(err, REIN_EIO,
                                  "%s printed nothing on stdout; a skill prints one JSON result",
                                  prog);
        rein__skills_snippet(res->out.ptr, res->out.len, head, sizeof(head));
        return rein_error_set(err, REIN_EIO,
                              "%s printed output that is not one JSON document (%s): %s", prog,
                              perr.msg, head);
    }
    rc = rein__skills_read_reply(doc, reply, err);
    json_decref(doc);
    if (rc == REIN_OK && res->exit_code != 0) {
        json_decref(reply->output);
        reply->output = NULL;
        return rein_error_set(err, REIN_EIO, "%s exited with status %d after printing a result%s%s",
                              prog, res->exit_code, tail[0] ? ": " : "", tail);
    }
    return rc;
}

static rein_err proc_invoke(void *state, const struct rein_invocation *inv,
                            struct rein_tool_reply *reply, rein_error *err)
{
    const struct proc_runner *p = state;
    struct event_reader events = {.inv = inv};
    struct rein_proc_result res;
    struct rein_buf input;
    char **all = rein_calloc(p->nenv + 5, sizeof(*all)), **extra = NULL;
    const struct rein_trace_context *tc = rein_trace_current();
    size_t nextra = !tc ? 3 : tc->state[0] ? 5 : 4;
    const char **env = NULL;
    rein_err rc;

    /* The manifest's variables, then the call's (which win over a manifest's REIN_*). */
    if (all)
        memcpy(all, p->env, p->nenv * sizeof(*all));
    extra = all ? all + p->nenv : NULL;
    if (extra) {
        extra[0] = rein_asprintf("REIN_TOOL=%s", rein_tool_id(inv->tool));
        extra[1] = rein_asprintf("REIN_CALL_ID=%s", inv->call_id);
        extra[2] = rein_asprintf("REIN_TRACE_ID=%s", inv->trace_id);
        /* W3C Trace Context for processes (the OpenTelemetry environment-carrier convention):
         * set deliberately, like the call's ids, whatever env_allow says. */
        if (tc) {
            char tp[REIN_TRACEPARENT_LEN + 1];
            rein_trace_context_format(tc, tp);
            extra[3] = rein_asprintf("TRACEPARENT=%s", tp);
            if (tc->state[0])
                extra[4] = rein_asprintf("TRACESTATE=%s", tc->state);
        }
        if (extra[0] && extra[1] && extra[2] && (nextra < 4 || extra[3]) &&
            (nextra < 5 || extra[4]))
            env = rein__skills_child_env(p->allow, all, p->nenv + nextra);
    }
    rein_buf_init(&input, 0);
    rein_buf_init(&events.line, 64 << 10);
    if (!env || rein_invocation_write(inv, &input)) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory starting %s", p->argv[0]);
        goto out;
    }
    struct rein_proc_run_opts opts = {
        .proc = {.argv = (const char *const *)p->argv, .cwd = p->cwd, .env = env},
        .input = input.ptr,
        .input_len = input.len,
        .stdout_max = p->max_output,
        .stderr_max = STDERR_KEPT,
        .kill_on_flood = true,
        .keep_tail = false,
        .timeout_ms = rein_invocation_remaining_ms(inv),
        .cancel = inv->cancel,
        .on_stderr = inv->on_event ? on_stderr : NULL,
        .stderr_data = &events,
    };
    if (opts.timeout_ms == 0) {
        rc = rein_error_set(err, REIN_ETIMEDOUT, "timed out before %s could start", p->argv[0]);
        goto out;
    }
    rc = rein_proc_run(&opts, &res, err);
    if (rc) {
        /* A program that cannot be started is the skill's fault, not the arguments'. */
        rc = rc == REIN_ENOMEM ? rc : REIN_EIO;
        goto out;
    }
    rc = read_run(p, inv, &res, reply, err);
    rein_proc_result_release(&res);
out:
    for (size_t i = 0; extra && i < nextra; i++)
        rein_free(extra[i]);
    rein_free(all);
    rein_free(env);
    rein_buf_release(&input);
    rein_buf_release(&events.line);
    return rc;
}

static const struct rein_runner_kind process_kind = {
    .name = "process",
    .schema = "{\"type\":\"object\",\"required\":[\"kind\",\"command\"],\"properties\":{"
              "\"kind\":{\"const\":\"process\"},"
              "\"command\":{\"type\":\"array\",\"minItems\":1,"
              "\"items\":{\"type\":\"string\",\"minLength\":1}},"
              "\"cwd\":{\"type\":\"string\",\"minLength\":1},"
              "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
              "\"env_allow\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
              "\"pattern\":\"^[A-Za-z_][A-Za-z0-9_]*$\"}},"
              "\"max_output_bytes\":{\"type\":\"integer\",\"minimum\":1,"
              "\"maximum\":1073741824}},"
              "\"additionalProperties\":false}",
    .open = proc_open,
    .invoke = proc_invoke,
    .close = proc_close,
};

const struct rein_runner_kind *rein__skills_process_kind(void)
{
    return &process_kind;
}
