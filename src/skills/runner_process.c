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
 * they arrive.
 *
 * A skill whose runner lists "client_requests" (some of "sampling", "elicitation", "roots")
 * may also ask the MCP client that called it (the asking protocol, version 1, of decision
 * 0031): it writes a JSON-RPC request line on stderr (sampling/createMessage,
 * elicitation/create or roots/list, with MCP's params; or a batch, an array of them) and reads
 * the JSON-RPC response line (an array for a batch) rein writes on its stdin, which for such a skill stays open after the call document (one
 * line, with "client_requests": 1 added) until the program ends. A method the runner does not
 * list, a client that did not declare the capability, and a call that does not come from an
 * MCP client (rein chat, an agent's turn, POST /skills/{id}/invoke) are answered with the error
 * -32601; the client's own error, or no answer within the call's time, with -32603; a
 * cancelled call's skill gets no answer (it is being stopped). A timeout or a cancel
 * kills the whole group;
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
    unsigned asks; /* the client capabilities the skill may ask for (ASK_* bits); 0: none */
};

/* What a skill may ask the client, by the MCP client capability each method needs. */
enum { ASK_SAMPLING = 1, ASK_ELICITATION = 2, ASK_ROOTS = 4 };
static const struct {
    const char *capability, *method;
    unsigned bit;
} ask_methods[] = {
    {"sampling", "sampling/createMessage", ASK_SAMPLING},
    {"elicitation", "elicitation/create", ASK_ELICITATION},
    {"roots", "roots/list", ASK_ROOTS},
};

/* The version of the asking protocol, sent in the call document as "client_requests". */
#define ASK_PROTOCOL_VERSION 1

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
           *allow = json_object_get(runner, "env_allow"),
           *asks = json_object_get(runner, "client_requests");
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
    json_array_foreach(asks, i, v)
    {
        for (size_t k = 0; k < REIN_ARRAY_SIZE(ask_methods); k++) {
            if (strcmp(json_string_value(v) ?: "", ask_methods[k].capability) == 0)
                p->asks |= ask_methods[k].bit;
        }
    }
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

/* One request of a request line, checked: JSON-RPC 2.0 with a method, a string or integer id
 * (rein answers with it verbatim) and object params (or none). */
static bool read_request(const json_t *v, struct rein__skills_request *req)
{
    const json_t *id = json_object_get(v, "id"), *params = json_object_get(v, "params");
    const char *method = json_string_value(json_object_get(v, "method"));

    if (!json_is_object(v) || !method || !(json_is_string(id) || json_is_integer(id)) ||
        (params && !json_is_object(params)) ||
        strcmp(json_string_value(json_object_get(v, "jsonrpc")) ?: "", "2.0") != 0)
        return false;
    *req = (struct rein__skills_request){.id = id, .method = method, .params = params};
    return true;
}

size_t rein__skills_request_line(const char *line, size_t len, json_t **doc)
{
    size_t n, i;
    struct rein__skills_request req;

    *doc = NULL;
    while (len > 0 && (*line == ' ' || *line == '\t')) {
        line++;
        len--;
    }
    if (len < 2 || (line[0] != '{' && line[0] != '[') || !memmem(line, len, "\"id\"", 4) ||
        !memmem(line, len, "\"method\"", 8))
        return 0;
    *doc = rein_json_parse(line, len, 0, NULL);
    n = json_is_array(*doc) ? json_array_size(*doc) : json_is_object(*doc) ? 1 : 0;
    if (n > REIN__SKILLS_BATCH_MAX)
        n = 0;
    for (i = 0; i < n; i++) {
        if (!rein__skills_request_at(*doc, i, &req))
            n = 0;
    }
    if (n == 0) {
        json_decref(*doc);
        *doc = NULL;
    }
    return n;
}

bool rein__skills_request_at(const json_t *doc, size_t i, struct rein__skills_request *req)
{
    memset(req, 0, sizeof(*req));
    if (json_is_object(doc))
        return i == 0 && read_request(doc, req);
    return read_request(json_array_get(doc, i), req);
}

/* Splits a running skill's stderr into lines; reports the event lines, and answers the
 * requests to the client of a skill that may ask. */
struct event_reader {
    const struct rein_invocation *inv;
    const struct proc_runner *p;
    struct rein_buf line;
    bool overflow;            /* the current line passed the limit: skip to its end */
    struct rein_buf *answers; /* what goes to the skill's stdin next (a skill that may ask) */
};

/* The response to a skill's request: result (taken) or the error code and message. */
static json_t *response(const json_t *id, json_t *result, int code, const char *message)
{
    return result ? json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result)
                  : json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                              "code", code, "message", message);
}

/* The key a client answers a request by in later rounds: its id as text. */
static void request_key(const json_t *id, char *out, size_t size)
{
    if (json_is_string(id))
        snprintf(out, size, "%s", json_string_value(id));
    else
        snprintf(out, size, "%" JSON_INTEGER_FORMAT, json_integer_value(id));
}

/* A skill's request to the client, allowed by its runner, asked through the caller; its
 * response (new; NULL when memory is exhausted). */
static json_t *ask_for_skill(struct event_reader *r, const struct rein__skills_request *req)
{
    unsigned bit = 0;
    char message[sizeof(((rein_error *)0)->msg) + 100], key[256];
    json_t *result = NULL, *empty = NULL;
    rein_error err;
    rein_err rc;

    for (size_t k = 0; k < REIN_ARRAY_SIZE(ask_methods); k++) {
        if (strcmp(req->method, ask_methods[k].method) == 0)
            bit = ask_methods[k].bit;
    }
    if (!bit) {
        snprintf(message, sizeof(message),
                 "a skill may ask the client only sampling/createMessage, elicitation/create "
                 "or roots/list, not %.100s",
                 req->method);
        return response(req->id, NULL, -32601, message);
    }
    if (!(r->p->asks & bit)) {
        for (size_t k = 0; k < REIN_ARRAY_SIZE(ask_methods); k++) {
            if (ask_methods[k].bit == bit)
                snprintf(message, sizeof(message),
                         "the skill's runner.client_requests does not list \"%s\"",
                         ask_methods[k].capability);
        }
        return response(req->id, NULL, -32601, message);
    }
    rein_error_clear(&err);
    if (!req->params)
        empty = json_object();
    request_key(req->id, key, sizeof(key));
    rc = rein_invocation_ask(r->inv, key, req->method, req->params ? req->params : empty, &result,
                             &err);
    json_decref(empty);
    if (rc == REIN_OK)
        return response(req->id, result, 0, NULL);
    return response(req->id, NULL, rc == REIN_ENOTSUP ? -32601 : -32603,
                    err.msg[0] ? err.msg : rein_strerror(rc));
}

/* Answers a request line: each request in order, then one response line (an array for a
 * batch, as JSON-RPC 2.0 answers batches). */
static void ask_line(struct event_reader *r, const json_t *doc, size_t n)
{
    struct rein__skills_request req;
    json_t *out = json_is_array(doc) ? json_array() : NULL, *one = NULL;
    size_t before = r->answers->len;
    bool ok = !json_is_array(doc) || out;

    /* A cancelled call's skill gets no more answers (it is being stopped): it must not act on
     * an error and go on, and a stateless round collects only the questions of one line. */
    if (rein_cancel_is_set(r->inv->cancel)) {
        json_decref(out);
        return;
    }
    for (size_t i = 0; i < n && ok; i++) {
        ok = rein__skills_request_at(doc, i, &req) && (one = ask_for_skill(r, &req)) != NULL;
        if (ok && out) {
            ok = json_array_append_new(out, one) == 0;
            one = NULL;
        }
    }
    if (ok && rein_cancel_is_set(r->inv->cancel)) {
        json_decref(out);
        json_decref(one);
        return;
    }
    if (!ok || rein_json_dump(r->answers, out ? out : one) != REIN_OK ||
        rein_buf_add(r->answers, "\n", 1) != REIN_OK) {
        /* Out of memory: nothing half-written; the skill waits until the call's limit. */
        rein_buf_truncate(r->answers, before);
        rein_log(REIN_LOG_ERROR, "skills/process", "out of memory answering %s",
                 rein_tool_id(r->inv->tool));
    }
    json_decref(out);
    json_decref(one);
}

static void event_line(struct event_reader *r, const char *line, size_t len)
{
    struct rein_call_event ev;
    json_t *doc = NULL;
    size_t n;

    if (r->answers && (n = rein__skills_request_line(line, len, &doc)) > 0)
        ask_line(r, doc, n);
    else if (rein__skills_event_line(line, len, &ev, &doc))
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

/*
 * The call document of a skill that may ask: "client_requests" (the asking protocol's version)
 * added, and a newline after it, since stdin stays open for the answers. b holds the document
 * rein_invocation_write made (one compact object). False when memory is exhausted.
 */
static bool ask_document(struct rein_buf *b)
{
    char tail[48];
    int n = snprintf(tail, sizeof(tail), ",\"client_requests\":%d}\n", ASK_PROTOCOL_VERSION);

    if (b->len == 0 || b->ptr[b->len - 1] != '}')
        return false;
    rein_buf_truncate(b, b->len - 1);
    return rein_buf_add(b, tail, (size_t)n) == REIN_OK;
}

static rein_err proc_invoke(void *state, const struct rein_invocation *inv,
                            struct rein_tool_reply *reply, rein_error *err)
{
    const struct proc_runner *p = state;
    struct event_reader events = {.inv = inv, .p = p};
    struct rein_proc_result res;
    struct rein_buf input, answers;
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
    rein_buf_init(&answers, 0);
    rein_buf_init(&events.line, 64 << 10);
    if (!env || rein_invocation_write(inv, &input) || (p->asks && !ask_document(&input))) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory starting %s", p->argv[0]);
        goto out;
    }
    if (p->asks)
        events.answers = &answers;
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
        .on_stderr = inv->on_event || p->asks ? on_stderr : NULL,
        .stderr_data = &events,
        .more_input = p->asks ? &answers : NULL,
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
    rein_buf_release(&answers);
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
              "\"maximum\":1073741824},"
              "\"client_requests\":{\"type\":\"array\",\"uniqueItems\":true,"
              "\"items\":{\"enum\":[\"sampling\",\"elicitation\",\"roots\"]}}},"
              "\"additionalProperties\":false}",
    .open = proc_open,
    .invoke = proc_invoke,
    .text_args = true,
    .close = proc_close,
};

const struct rein_runner_kind *rein__skills_process_kind(void)
{
    return &process_kind;
}
