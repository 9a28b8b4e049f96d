/*
 * rein as an MCP client: one connection to one MCP server, over stdio (a program rein starts
 * without a shell) or Streamable HTTP (libcurl).
 *
 * Requests carry integer ids and wait in a pending list until their response arrives. Over
 * stdio a reader thread reads the server's stdout line by line and dispatches every message:
 * responses to their pending request, progress notifications (the request id is the
 * progressToken) and log notifications to the call's invocation events, and the server's own
 * requests (ping is answered, anything else refused with -32601, since rein declares no client
 * capabilities). Over HTTP each request is a POST whose answer (one JSON body, or an event
 * stream carrying notifications and then the response) is read on the calling thread; a stream
 * that ends before the response is resumed with a GET carrying Last-Event-ID after the
 * server's retry delay; an expired session (404) is initialized again and the request sent
 * once more.
 *
 * Everything a server can do wrong ends in a clear error and never a hang: it exits (pending
 * requests fail with its exit status and the end of its stderr; the next call starts it
 * again), writes lines that are not JSON-RPC (counted and skipped; the last is quoted if a
 * request then times out), answers ids that were never sent (counted and ignored), sends a
 * message larger than the limit (the connection is closed), answers HTML or an HTTP error.
 * A timeout or a cancel sends notifications/cancelled for the request.
 */
#include "mcp/mcp_int.h"
#include "core/internal.h"

#include <rein/proc.h>
#include <rein/version.h>

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define WHERE                      "mcp/client"
#define DEFAULT_CALL_TIMEOUT_MS    60000
#define DEFAULT_CONNECT_TIMEOUT_MS 30000
#define DEFAULT_MAX_MESSAGE        ((size_t)16 << 20)
#define MAX_TOOL_PAGES             100
#define MAX_RESUMES                5
#define DEFAULT_RETRY_MS           1000
#define NOTIFY_TIMEOUT_MS          5000
#define STDERR_TAIL                1024
#define CLOSE_GRACE_MS             2000

extern char **environ;

enum conn_state { ST_IDLE = 0, ST_READY, ST_FAILED, ST_CLOSED };
static const char *const state_names[] = {"not connected", "ready", "failed", "exited"};

/* A request waiting for its response. Lives on the requesting thread's stack. */
struct pending {
    struct pending *next;
    int64_t id;
    json_t *doc; /* the response message, once done */
    bool done;
    rein_err fail_rc; /* a transport failure instead of a response */
    char fail_msg[512];
    const struct rein_invocation *inv; /* where the request's events go; may be NULL */
    int busy;                          /* dispatches reporting an event to inv right now */
};

struct rein__mcp_conn {
    atomic_int refs;
    struct rein__mcp_conn_config *cfg;
    pthread_mutex_t mu; /* everything below but the stdio write side */
    pthread_cond_t cv;
    pthread_mutex_t connect_mu; /* one connect at a time */
    enum conn_state state;
    char error[512];
    int64_t next_id;
    struct pending *pending;
    json_t *tools;
    json_t *server_info;
    char version[16];
    int64_t unknown_ids, garbage;
    char last_garbage[160];
    /* stdio */
    rein_proc *proc;
    pthread_t reader;
    bool reader_running, reader_done, closing;
    bool in_connect; /* a connect is running: a 404 then is not answered by reconnecting */
    pthread_mutex_t write_mu;
    char stderr_tail[STDERR_TAIL + 1];
    size_t stderr_len;
    /* http */
    char *session_id;
};

/* ---- configuration ---------------------------------------------------------------------- */

void rein__mcp_conn_config_free(struct rein__mcp_conn_config *cfg)
{
    if (!cfg)
        return;
    for (char **p = cfg->argv; p && *p; p++)
        rein_free(*p);
    for (char **p = cfg->env; p && *p; p++)
        rein_free(*p);
    for (char **p = cfg->headers; p && *p; p++)
        rein_free(*p);
    rein_free(cfg->argv);
    rein_free(cfg->env);
    rein_free(cfg->headers);
    rein_free(cfg->name);
    rein_free(cfg->cwd);
    rein_free(cfg->url);
    rein_free(cfg);
}

static rein_err parse_ms(const char *name, const json_t *entry, const char *key, int64_t *out,
                         rein_error *err)
{
    const json_t *v = json_object_get(entry, key);

    if (!v)
        return REIN_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 86400000)
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.%s: must be milliseconds from 1 to 86400000", name,
                              key);
    *out = (int64_t)json_integer_value(v);
    return REIN_OK;
}

static bool strings_object(const json_t *v)
{
    const char *key;
    json_t *item;

    if (!json_is_object(v))
        return false;
    json_object_foreach((json_t *)v, key, item)
    {
        if (!json_is_string(item))
            return false;
    }
    return true;
}

static rein_err parse_stdio(struct rein__mcp_conn_config *cfg, const json_t *entry,
                            const char *base_dir, rein_error *err)
{
    const json_t *cmd = json_object_get(entry, "command"), *args = json_object_get(entry, "args");
    const json_t *env = json_object_get(entry, "env"), *cwd = json_object_get(entry, "cwd");
    const char *key;
    json_t *v;
    size_t i, n = 1;

    if (!json_is_string(cmd) || !json_string_value(cmd)[0])
        return rein_error_set(err, REIN_EINVAL, "mcpServers.%s.command: must be a program name",
                              cfg->name);
    if (args && !json_is_array(args))
        return rein_error_set(err, REIN_EINVAL, "mcpServers.%s.args: must be an array of strings",
                              cfg->name);
    json_array_foreach(args, i, v)
    {
        if (!json_is_string(v))
            return rein_error_set(err, REIN_EINVAL, "mcpServers.%s.args[%zu]: must be a string",
                                  cfg->name, i);
        n++;
    }
    if (env && !strings_object(env))
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.env: must be an object of string values", cfg->name);
    if (cwd && !json_is_string(cwd))
        return rein_error_set(err, REIN_EINVAL, "mcpServers.%s.cwd: must be a folder", cfg->name);
    cfg->argv = rein_calloc(n + 1, sizeof(char *));
    cfg->env = rein_calloc(json_object_size(env) + 1, sizeof(char *));
    if (!cfg->argv || !cfg->env)
        goto nomem;
    /* The command is looked up in PATH by posix_spawnp; no shell ever sees it. */
    cfg->argv[0] = rein_strdup(json_string_value(cmd));
    if (!cfg->argv[0])
        goto nomem;
    json_array_foreach(args, i, v)
    {
        cfg->argv[i + 1] = rein_strdup(json_string_value(v));
        if (!cfg->argv[i + 1])
            goto nomem;
    }
    i = 0;
    json_object_foreach((json_t *)env, key, v)
    {
        if (!key[0] || strchr(key, '='))
            return rein_error_set(err, REIN_EINVAL,
                                  "mcpServers.%s.env: \"%s\" is not a variable name", cfg->name,
                                  key);
        cfg->env[i] = rein_asprintf("%s=", key);
        if (cfg->env[i]) {
            char *full = rein__expand_env(cfg->env[i], json_string_value(v));
            rein_free(cfg->env[i]);
            cfg->env[i] = full;
        }
        if (!cfg->env[i++])
            goto nomem;
    }
    if (cwd) {
        const char *dir = json_string_value(cwd);
        cfg->cwd =
            dir[0] == '/' || !base_dir ? rein_strdup(dir) : rein_asprintf("%s/%s", base_dir, dir);
        if (!cfg->cwd)
            goto nomem;
    }
    return REIN_OK;
nomem:
    return rein_error_set(err, REIN_ENOMEM, "out of memory reading mcpServers.%s", cfg->name);
}

static rein_err parse_http(struct rein__mcp_conn_config *cfg, const json_t *entry, rein_error *err)
{
    const char *url = json_string_value(json_object_get(entry, "url"));
    const json_t *headers = json_object_get(entry, "headers");
    const json_t *token = json_object_get(entry, "bearer_token");
    const char *key;
    json_t *v;
    size_t i = 0;

    if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
        strpbrk(url, " \r\n"))
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.url: must be an http:// or https:// URL", cfg->name);
    if (headers && !strings_object(headers))
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.headers: must be an object of string values",
                              cfg->name);
    if (token && !json_is_string(token))
        return rein_error_set(err, REIN_EINVAL, "mcpServers.%s.bearer_token: must be a string",
                              cfg->name);
    cfg->http = true;
    cfg->url = rein_strdup(url);
    cfg->headers = rein_calloc(json_object_size(headers) + 2, sizeof(char *));
    if (!cfg->url || !cfg->headers)
        goto nomem;
    json_object_foreach((json_t *)headers, key, v)
    {
        char prefix[300];
        if (!key[0] || strpbrk(key, ": \r\n") || strlen(key) > 200 ||
            strpbrk(json_string_value(v), "\r\n"))
            return rein_error_set(err, REIN_EINVAL,
                                  "mcpServers.%s.headers.%s: header names are single tokens and "
                                  "values have no line breaks",
                                  cfg->name, key);
        snprintf(prefix, sizeof(prefix), "%s: ", key);
        cfg->headers[i] = rein__expand_env(prefix, json_string_value(v));
        if (!cfg->headers[i++])
            goto nomem;
    }
    if (token) {
        if (strpbrk(json_string_value(token), "\r\n"))
            return rein_error_set(err, REIN_EINVAL,
                                  "mcpServers.%s.bearer_token: must not hold line breaks",
                                  cfg->name);
        cfg->headers[i] = rein__expand_env("Authorization: Bearer ", json_string_value(token));
        if (!cfg->headers[i])
            goto nomem;
    }
    return REIN_OK;
nomem:
    return rein_error_set(err, REIN_ENOMEM, "out of memory reading mcpServers.%s", cfg->name);
}

rein_err rein__mcp_conn_config_parse(const char *name, const json_t *entry, const char *base_dir,
                                     struct rein__mcp_conn_config **out, rein_error *err)
{
    const char *type = json_string_value(json_object_get(entry, "type"));
    struct rein__mcp_conn_config *cfg;
    bool has_cmd, has_url;
    rein_err rc;

    *out = NULL;
    if (!name || !name[0])
        return rein_error_set(err, REIN_EINVAL, "mcpServers: a server needs a name");
    if (!json_is_object(entry))
        return rein_error_set(err, REIN_EINVAL, "mcpServers.%s: must be an object", name);
    has_cmd = json_object_get(entry, "command") != NULL;
    has_url = json_object_get(entry, "url") != NULL;
    if (type && strcmp(type, "stdio") != 0 && strcmp(type, "http") != 0 &&
        strcmp(type, "streamable-http") != 0 && strcmp(type, "streamableHttp") != 0)
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s.type: \"%s\" is not supported; rein speaks stdio "
                              "and Streamable HTTP (the old HTTP+SSE transport is not supported)",
                              name, type);
    if (has_cmd == has_url)
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s: give either \"command\" (a program to start) or "
                              "\"url\" (a Streamable HTTP endpoint)",
                              name);
    cfg = rein_calloc(1, sizeof(*cfg));
    if (!cfg || !(cfg->name = rein_strdup(name))) {
        rein_free(cfg);
        return rein_error_set(err, REIN_ENOMEM, "out of memory reading mcpServers.%s", name);
    }
    cfg->timeout_ms = DEFAULT_CALL_TIMEOUT_MS;
    cfg->connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
    cfg->max_message_bytes = DEFAULT_MAX_MESSAGE;
    rc = has_cmd ? parse_stdio(cfg, entry, base_dir, err) : parse_http(cfg, entry, err);
    if (!rc)
        rc = parse_ms(name, entry, "timeout_ms", &cfg->timeout_ms, err);
    if (!rc)
        rc = parse_ms(name, entry, "connect_timeout_ms", &cfg->connect_timeout_ms, err);
    if (!rc && json_object_get(entry, "max_message_bytes")) {
        const json_t *v = json_object_get(entry, "max_message_bytes");
        if (!json_is_integer(v) || json_integer_value(v) < 1024 ||
            json_integer_value(v) > ((json_int_t)1 << 30))
            rc =
                rein_error_set(err, REIN_EINVAL,
                               "mcpServers.%s.max_message_bytes: must be 1024 to 1073741824", name);
        else
            cfg->max_message_bytes = (size_t)json_integer_value(v);
    }
    if (rc) {
        rein__mcp_conn_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return REIN_OK;
}

/* ---- pending requests ------------------------------------------------------------------- */

static void wake(void *ud)
{
    struct rein__mcp_conn *c = ud;

    pthread_mutex_lock(&c->mu);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Fails every pending request (mu held). */
static void fail_all(struct rein__mcp_conn *c, rein_err rc, const char *msg)
{
    for (struct pending *p = c->pending; p; p = p->next) {
        if (!p->done) {
            p->done = true;
            p->fail_rc = rc;
            snprintf(p->fail_msg, sizeof(p->fail_msg), "%s", msg);
        }
    }
    pthread_cond_broadcast(&c->cv);
}

static void pending_add(struct rein__mcp_conn *c, struct pending *p)
{
    pthread_mutex_lock(&c->mu);
    p->id = ++c->next_id;
    p->next = c->pending;
    c->pending = p;
    pthread_mutex_unlock(&c->mu);
}

/* Unlinks p and waits until no dispatch is reporting to it (mu held). */
static void pending_remove(struct rein__mcp_conn *c, struct pending *p)
{
    for (struct pending **pp = &c->pending; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    while (p->busy > 0)
        pthread_cond_wait(&c->cv, &c->mu);
}

static struct pending *pending_find(struct rein__mcp_conn *c, int64_t id)
{
    for (struct pending *p = c->pending; p; p = p->next) {
        if (p->id == id)
            return p;
    }
    return NULL;
}

/* Waits for p until it is done, the deadline (0: none) passes or cancel triggers. */
static rein_err pending_wait(struct rein__mcp_conn *c, struct pending *p, int64_t deadline,
                             rein_cancel *cancel)
{
    int hook = cancel ? rein_cancel_on(cancel, wake, c) : 0;
    rein_err rc = REIN_OK;

    pthread_mutex_lock(&c->mu);
    while (!p->done) {
        int64_t now = rein_now_ms(), wait = 1000;
        struct timespec ts;
        if (rein_cancel_is_set(cancel)) {
            rc = REIN_ECANCELED;
            break;
        }
        if (deadline && now >= deadline) {
            rc = REIN_ETIMEDOUT;
            break;
        }
        if (deadline && deadline - now < wait)
            wait = deadline - now;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)(wait % 1000) * 1000000L;
        ts.tv_sec += wait / 1000 + ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    pthread_mutex_unlock(&c->mu);
    if (hook > 0)
        rein_cancel_off(cancel, hook);
    return rc;
}

/* ---- dispatching what the server sends -------------------------------------------------- */

static rein_err send_raw(struct rein__mcp_conn *c, const char *json, size_t len, rein_error *err);

/* Reports ev to the pending request id's invocation, outside the lock. */
static void report(struct rein__mcp_conn *c, int64_t id, bool by_id, struct rein_call_event *ev)
{
    struct pending *p = NULL;

    pthread_mutex_lock(&c->mu);
    if (by_id) {
        p = pending_find(c, id);
    } else {
        /* A log line is not tied to a request: it goes to the one call running, if one. */
        int n = 0;
        for (struct pending *q = c->pending; q; q = q->next) {
            if (q->inv) {
                p = q;
                n++;
            }
        }
        if (n != 1)
            p = NULL;
    }
    if (p && p->inv && !p->done)
        p->busy++;
    else
        p = NULL;
    pthread_mutex_unlock(&c->mu);
    if (!p) {
        if (ev->kind == REIN_CALL_EVENT_LOG) {
            char *text = rein_json_dumps(ev->data);
            rein_log(REIN_LOG_INFO, WHERE, "%s [%s]: %.300s", c->cfg->name, ev->level,
                     text ? text : "");
            rein_free(text);
        }
        return;
    }
    rein_invocation_event(p->inv, ev);
    pthread_mutex_lock(&c->mu);
    p->busy--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void on_notification(struct rein__mcp_conn *c, const struct rein__mcp_msg *msg,
                            const struct pending *current)
{
    struct rein_call_event ev = {0};
    const json_t *v;

    if (strcmp(msg->method, "notifications/progress") == 0) {
        const json_t *token = json_object_get(msg->params, "progressToken");
        v = json_object_get(msg->params, "progress");
        if (!json_is_integer(token) || !json_is_number(v))
            return;
        ev.kind = REIN_CALL_EVENT_PROGRESS;
        ev.progress = json_number_value(v);
        v = json_object_get(msg->params, "total");
        ev.total = json_is_number(v) ? json_number_value(v) : -1;
        ev.message = json_string_value(json_object_get(msg->params, "message"));
        report(c, (int64_t)json_integer_value(token), true, &ev);
    } else if (strcmp(msg->method, "notifications/message") == 0) {
        ev.kind = REIN_CALL_EVENT_LOG;
        ev.level = json_string_value(json_object_get(msg->params, "level"));
        ev.logger = json_string_value(json_object_get(msg->params, "logger"));
        ev.data = json_object_get(msg->params, "data");
        if (rein__mcp_level_index(ev.level) < 0 || !ev.data)
            return;
        /* Over HTTP a log line on a request's stream belongs to that request. */
        report(c, current ? current->id : 0, current != NULL, &ev);
    }
    /* list_changed and the rest: rein reads the tool list once, at connect. */
}

/* The server asks something: ping is answered, anything else refused. */
static void on_server_request(struct rein__mcp_conn *c, const struct rein__mcp_msg *msg)
{
    struct rein_buf b;
    rein_err rc;

    rein_buf_init(&b, 0);
    if (strcmp(msg->method, "ping") == 0)
        rc = rein__mcp_write_result(&b, msg->id, NULL);
    else
        rc = rein__mcp_write_error(&b, msg->id, REIN__MCP_METHOD_NOT_FOUND,
                                   "rein does not offer this to servers (it declares no client "
                                   "capabilities)",
                                   NULL);
    if (rc == REIN_OK && send_raw(c, b.ptr, b.len, NULL) != REIN_OK)
        rein_log(REIN_LOG_INFO, WHERE, "%s: could not answer its %s request", c->cfg->name,
                 msg->method);
    rein_buf_release(&b);
}

/* Routes one decoded message; current is the request whose HTTP answer carried it. */
static void dispatch(struct rein__mcp_conn *c, struct rein__mcp_msg *msg,
                     const struct pending *current)
{
    struct pending *p;

    switch (msg->kind) {
    case REIN__MCP_RESPONSE:
    case REIN__MCP_ERROR:
        pthread_mutex_lock(&c->mu);
        p = json_is_integer(msg->id) ? pending_find(c, (int64_t)json_integer_value(msg->id)) : NULL;
        if (!p && json_is_null(msg->id) && current)
            p = pending_find(c, current->id); /* "could not read your request" */
        if (p && !p->done) {
            /* The waiting thread takes the document over: no two threads ever hold
             * references to one jansson value (rein/json.h's rule). */
            p->doc = msg->doc;
            msg->doc = NULL;
            p->done = true;
            pthread_cond_broadcast(&c->cv);
        } else {
            c->unknown_ids++;
            rein_log(REIN_LOG_INFO, WHERE,
                     "%s answered a request rein never sent (or one that "
                     "already ended); ignored",
                     c->cfg->name);
        }
        pthread_mutex_unlock(&c->mu);
        break;
    case REIN__MCP_NOTIFICATION:
        on_notification(c, msg, current);
        break;
    case REIN__MCP_REQUEST:
        on_server_request(c, msg);
        break;
    }
}

/* A message's text: decode and dispatch, or count it as garbage. */
static void dispatch_text(struct rein__mcp_conn *c, const char *text, size_t len,
                          const struct pending *current)
{
    struct rein__mcp_msg msg;
    rein_error err;

    while (len > 0 && (text[len - 1] == '\r' || text[len - 1] == ' '))
        len--;
    if (len == 0)
        return;
    rein_error_clear(&err);
    if (rein__mcp_decode(text, len, 0, &msg, NULL, &err) != REIN_OK) {
        pthread_mutex_lock(&c->mu);
        c->garbage++;
        size_t n = len < sizeof(c->last_garbage) - 1 ? len : sizeof(c->last_garbage) - 1;
        for (size_t i = 0; i < n; i++)
            c->last_garbage[i] = (unsigned char)text[i] < 0x20 ? ' ' : text[i];
        c->last_garbage[n] = '\0';
        pthread_mutex_unlock(&c->mu);
        rein_log(REIN_LOG_INFO, WHERE, "%s sent something that is not a JSON-RPC message (%s)",
                 c->cfg->name, err.msg);
        return;
    }
    dispatch(c, &msg, current);
    rein__mcp_msg_release(&msg);
}

/* ---- stdio transport -------------------------------------------------------------------- */

static rein_err stdio_send(struct rein__mcp_conn *c, const char *json, size_t len, rein_error *err)
{
    bool ok;

    pthread_mutex_lock(&c->write_mu);
    ok = c->proc && rein_proc_stdin_fd(c->proc) >= 0 &&
         rein_proc_write_all(rein_proc_stdin_fd(c->proc), json, len) &&
         rein_proc_write_all(rein_proc_stdin_fd(c->proc), "\n", 1);
    pthread_mutex_unlock(&c->write_mu);
    if (!ok)
        return rein_error_set(err, REIN_EIO, "MCP server %s: cannot write to it: %s", c->cfg->name,
                              c->proc ? strerror(errno) : "it is not running");
    return REIN_OK;
}

static void tail_add(struct rein__mcp_conn *c, const char *p, size_t n)
{
    pthread_mutex_lock(&c->mu);
    if (n >= STDERR_TAIL) {
        p += n - STDERR_TAIL;
        n = STDERR_TAIL;
    }
    if (c->stderr_len + n > STDERR_TAIL) {
        size_t drop = c->stderr_len + n - STDERR_TAIL;
        memmove(c->stderr_tail, c->stderr_tail + drop, c->stderr_len - drop);
        c->stderr_len -= drop;
    }
    memcpy(c->stderr_tail + c->stderr_len, p, n);
    c->stderr_len += n;
    c->stderr_tail[c->stderr_len] = '\0';
    pthread_mutex_unlock(&c->mu);
}

/* The last line of the server's stderr, for messages (mu held). */
static void tail_line(const struct rein__mcp_conn *c, char *out, size_t size)
{
    size_t end = c->stderr_len, start;

    while (end > 0 && (c->stderr_tail[end - 1] == '\n' || c->stderr_tail[end - 1] == '\r' ||
                       c->stderr_tail[end - 1] == ' '))
        end--;
    start = end;
    while (start > 0 && c->stderr_tail[start - 1] != '\n')
        start--;
    if (end - start >= size)
        start = end - (size - 1);
    for (size_t i = start; i < end; i++)
        out[i - start] = (unsigned char)c->stderr_tail[i] < 0x20 ? ' ' : c->stderr_tail[i];
    out[end - start] = '\0';
}

/* Reads the server's stdout and stderr until stdout ends; then reaps it. */
static void *reader_main(void *arg)
{
    struct rein__mcp_conn *c = arg;
    rein_proc *proc = c->proc;
    struct rein_buf line;
    bool too_big = false;
    int exit_code = -1;
    char chunk[65536], tail[200], msg[480];
    int err_fd = rein_proc_stderr_fd(proc);

    rein_buf_init(&line, c->cfg->max_message_bytes + 1);
    for (;;) {
        struct pollfd pfd[2] = {{rein_proc_stdout_fd(proc), POLLIN, 0}, {err_fd, POLLIN, 0}};
        ssize_t n;
        if (poll(pfd, 2, -1) < 0 && errno != EINTR)
            break;
        if (pfd[1].revents) {
            n = read(err_fd, chunk, sizeof(chunk));
            if (n > 0)
                tail_add(c, chunk, (size_t)n);
            else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                err_fd = -1; /* stderr closed: keep reading stdout */
        }
        if (!pfd[0].revents)
            continue;
        n = read(pfd[0].fd, chunk, sizeof(chunk));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            break;
        for (const char *p = chunk, *end = chunk + n; p < end;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t take = nl ? (size_t)(nl - p) : (size_t)(end - p);
            if (rein_buf_add(&line, p, take) != REIN_OK) {
                too_big = true;
                break;
            }
            p += take;
            if (!nl)
                break;
            p++;
            dispatch_text(c, line.ptr, line.len, NULL);
            rein_buf_reset(&line);
        }
        if (too_big)
            break;
    }
    rein_buf_release(&line);
    /* stdout ended (or the server flooded): it is over either way. */
    if (too_big || rein_proc_wait(proc, CLOSE_GRACE_MS, &exit_code) != REIN_OK) {
        rein_proc_kill(proc, SIGKILL);
        if (rein_proc_wait(proc, -1, &exit_code) != REIN_OK)
            exit_code = -1;
    }
    pthread_mutex_lock(&c->mu);
    tail_line(c, tail, sizeof(tail));
    if (too_big)
        snprintf(msg, sizeof(msg),
                 "MCP server %s sent a message larger than %zu bytes; the connection was closed",
                 c->cfg->name, c->cfg->max_message_bytes);
    else
        snprintf(msg, sizeof(msg), "MCP server %s exited (status %d)%s%s", c->cfg->name, exit_code,
                 tail[0] ? ": " : "", tail);
    if (!c->closing) {
        snprintf(c->error, sizeof(c->error), "%s", msg);
        c->state = ST_CLOSED;
    }
    fail_all(c, REIN_EIO, msg);
    c->reader_done = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* The environment of a stdio server: a minimal base from rein's, then the configuration's. */
static const char **server_env(const struct rein__mcp_conn_config *cfg)
{
    static const char *const base[] = {"PATH=",   "HOME=", "LANG=",    "LC_ALL=", "LC_CTYPE=",
                                       "TMPDIR=", "USER=", "LOGNAME=", "SHELL=",  "TERM="};
    size_t n = 0, total = sizeof(base) / sizeof(base[0]) + 1;
    const char **env;

    for (char **e = cfg->env; e && *e; e++)
        total++;
    env = rein_calloc(total, sizeof(*env));
    if (!env)
        return NULL;
    for (char **e = environ; e && *e; e++) {
        bool keep = false, overridden = false;
        for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
            keep = keep || strncmp(*e, base[i], strlen(base[i])) == 0;
        size_t klen = strcspn(*e, "=");
        for (char **o = cfg->env; o && *o && keep; o++)
            overridden = overridden || (strncmp(*o, *e, klen + 1) == 0);
        if (keep && !overridden)
            env[n++] = *e;
    }
    for (char **e = cfg->env; e && *e; e++)
        env[n++] = *e;
    env[n] = NULL;
    return env;
}

static rein_err stdio_open(struct rein__mcp_conn *c, rein_error *err)
{
    const char **env = server_env(c->cfg);
    struct rein_proc_opts po = {
        .argv = (const char *const *)c->cfg->argv, .cwd = c->cfg->cwd, .env = env};
    rein_err rc;

    if (!env)
        return rein_error_set(err, REIN_ENOMEM, "out of memory starting %s", c->cfg->name);
    rc = rein_proc_start(&po, &c->proc, err);
    rein_free(env);
    if (rc) {
        rein_error_prefix(err, "MCP server %s: ", c->cfg->name);
        return rc;
    }
    c->reader_done = false;
    c->stderr_len = 0;
    c->stderr_tail[0] = '\0';
    if (pthread_create(&c->reader, NULL, reader_main, c) != 0) {
        rein_proc_free(c->proc);
        c->proc = NULL;
        return rein_error_set(err, REIN_ENOMEM, "cannot start a reader for %s", c->cfg->name);
    }
    c->reader_running = true;
    return REIN_OK;
}

/* Stops the server: end of input, a grace period, then signals; joins the reader. */
static void stdio_close(struct rein__mcp_conn *c)
{
    int64_t deadline;

    if (!c->reader_running)
        return;
    pthread_mutex_lock(&c->write_mu);
    rein_proc_close_stdin(c->proc);
    pthread_mutex_unlock(&c->write_mu);
    for (int round = 0; round < 3; round++) {
        pthread_mutex_lock(&c->mu);
        deadline = rein_now_ms() + CLOSE_GRACE_MS;
        while (!c->reader_done && rein_now_ms() < deadline) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 100 * 1000000L;
            ts.tv_sec += ts.tv_nsec / 1000000000L;
            ts.tv_nsec %= 1000000000L;
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        }
        bool done = c->reader_done;
        pthread_mutex_unlock(&c->mu);
        if (done)
            break;
        rein_proc_kill(c->proc, round == 0 ? SIGTERM : SIGKILL);
    }
    pthread_join(c->reader, NULL);
    c->reader_running = false;
    rein_proc_free(c->proc);
    c->proc = NULL;
}

/* ---- HTTP transport --------------------------------------------------------------------- */

enum body_mode { BODY_UNKNOWN, BODY_JSON, BODY_SSE, BODY_OTHER };

struct xfer {
    struct rein__mcp_conn *c;
    struct pending *p; /* the request this transfer answers; NULL for notifications */
    CURL *easy;
    enum body_mode mode;
    struct rein_buf body; /* a JSON answer, or the start of anything else */
    struct rein__mcp_sse sse;
    char session[256];
    bool too_big;
    bool stop; /* the response arrived: the rest of the stream is not needed */
};

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = size * n;
    static const char name[] = "mcp-session-id:";

    if (len > sizeof(name) && strncasecmp(data, name, sizeof(name) - 1) == 0) {
        const char *v = data + sizeof(name) - 1;
        size_t vlen = len - (sizeof(name) - 1);
        while (vlen > 0 && (*v == ' ' || *v == '\t')) {
            v++;
            vlen--;
        }
        while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
            vlen--;
        if (vlen < sizeof(x->session)) {
            memcpy(x->session, v, vlen);
            x->session[vlen] = '\0';
        }
    }
    return len;
}

static rein_err on_sse_event(void *ud, const char *event, const char *id, const char *data,
                             size_t len)
{
    struct xfer *x = ud;

    (void)id;
    if (len == 0 || (event && strcmp(event, "message") != 0))
        return REIN_OK; /* priming events and other types carry no message */
    dispatch_text(x->c, data, len, x->p);
    pthread_mutex_lock(&x->c->mu);
    x->stop = x->p && x->p->done;
    pthread_mutex_unlock(&x->c->mu);
    return REIN_OK;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = size * n;

    if (x->mode == BODY_UNKNOWN) {
        char *ct = NULL;
        long status = 0;
        curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        if (ct && strncasecmp(ct, "text/event-stream", 17) == 0 && status / 100 == 2)
            x->mode = BODY_SSE;
        else if (ct && strcasestr(ct, "json"))
            x->mode = BODY_JSON;
        else
            x->mode = BODY_OTHER;
    }
    if (x->mode == BODY_SSE) {
        if (rein__mcp_sse_feed(&x->sse, data, len) != REIN_OK) {
            x->too_big = true;
            return 0;
        }
        return x->stop ? 0 : len; /* 0 ends a stream that has given what was asked */
    }
    if (x->mode == BODY_OTHER) {
        /* Only the start is kept, to quote it. */
        size_t room = x->body.len < 4096 ? 4096 - x->body.len : 0;
        if (rein_buf_add(&x->body, data, len < room ? len : room))
            return 0;
        return len;
    }
    if (rein_buf_add(&x->body, data, len)) {
        x->too_big = true;
        return 0;
    }
    return len;
}

static struct curl_slist *http_headers(struct rein__mcp_conn *c, bool sse_only, const char *last_id)
{
    struct curl_slist *list = NULL, *next;
    char line[600];
    const char *fixed[3] = {"Content-Type: application/json",
                            sse_only ? "Accept: text/event-stream"
                                     : "Accept: application/json, text/event-stream",
                            "Expect:"};

    for (size_t i = 0; i < 3; i++) {
        if (!(next = curl_slist_append(list, fixed[i])))
            goto fail;
        list = next;
    }
    pthread_mutex_lock(&c->mu);
    line[0] = '\0';
    if (c->session_id)
        snprintf(line, sizeof(line), "Mcp-Session-Id: %s", c->session_id);
    pthread_mutex_unlock(&c->mu);
    if (line[0]) {
        if (!(next = curl_slist_append(list, line)))
            goto fail;
        list = next;
    }
    if (c->version[0]) {
        snprintf(line, sizeof(line), "MCP-Protocol-Version: %s", c->version);
        if (!(next = curl_slist_append(list, line)))
            goto fail;
        list = next;
    }
    if (last_id) {
        snprintf(line, sizeof(line), "Last-Event-ID: %s", last_id);
        if (!(next = curl_slist_append(list, line)))
            goto fail;
        list = next;
    }
    for (char **h = c->cfg->headers; h && *h; h++) {
        if (!(next = curl_slist_append(list, *h)))
            goto fail;
        list = next;
    }
    return list;
fail:
    curl_slist_free_all(list);
    return NULL;
}

/* What one HTTP exchange ended with, beyond success and plain errors. */
#define NEED_RESUME     1 /* the stream ended before the response; resume from x->sse.last_id */
#define SESSION_EXPIRED 2 /* 404 for the session: initialize again */

/*
 * One HTTP exchange: POST body (a message), or GET to resume from last_id. Answers for p
 * arrive through dispatch. Returns REIN_OK, NEED_RESUME, SESSION_EXPIRED or an error.
 */
static int http_exchange(struct rein__mcp_conn *c, struct pending *p, const char *body, size_t len,
                         const char *last_id, int64_t deadline, rein_cancel *cancel, char *last_out,
                         int64_t *retry_out, rein_error *err)
{
    struct xfer x = {.c = c, .p = p};
    struct curl_slist *headers;
    char detail[CURL_ERROR_SIZE] = "", snippet[240];
    bool cancelled = false, done;
    long status = 0;
    char *ct = NULL;
    CURLcode code;
    int rc;

    rc = rein__curl_global_init(err);
    if (rc)
        return rc;
    rein_buf_init(&x.body, c->cfg->max_message_bytes + 1);
    rein__mcp_sse_init(&x.sse, c->cfg->max_message_bytes, on_sse_event, &x);
    x.easy = curl_easy_init();
    headers = http_headers(c, last_id != NULL, last_id);
    if (!x.easy || !headers) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory calling %s", c->cfg->url);
        goto out;
    }
    curl_easy_setopt(x.easy, CURLOPT_URL, c->cfg->url);
    curl_easy_setopt(x.easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(x.easy, CURLOPT_NOSIGNAL, 1L);
    if (body) {
        curl_easy_setopt(x.easy, CURLOPT_POST, 1L);
        curl_easy_setopt(x.easy, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(x.easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(x.easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(x.easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(x.easy, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(x.easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(x.easy, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(x.easy, CURLOPT_ERRORBUFFER, detail);
    curl_easy_setopt(x.easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(x.easy, CURLOPT_USERAGENT, "rein/" REIN_VERSION_STRING);
    curl_easy_setopt(x.easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    if (deadline) {
        int64_t left = deadline - rein_now_ms();
        curl_easy_setopt(x.easy, CURLOPT_TIMEOUT_MS, (long)(left > 1 ? left : 1));
    }
    code = rein__curl_perform(x.easy, cancel, &cancelled);
    curl_easy_getinfo(x.easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(x.easy, CURLINFO_CONTENT_TYPE, &ct);
    if (x.session[0] && !last_id) {
        pthread_mutex_lock(&c->mu);
        if (!c->session_id || strcmp(c->session_id, x.session) != 0) {
            rein_free(c->session_id);
            c->session_id = rein_strdup(x.session);
        }
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_lock(&c->mu);
    done = p && p->done;
    pthread_mutex_unlock(&c->mu);
    if (done) {
        rc = REIN_OK; /* also when the stream was cut short on purpose */
        goto out;
    }
    if (cancelled) {
        rc = rein_error_set(err, REIN_ECANCELED, "cancelled while waiting for %s", c->cfg->url);
        goto out;
    }
    if (x.too_big) {
        rc = rein_error_set(err, REIN_ETOOBIG, "%s sent a message larger than %zu bytes",
                            c->cfg->url, c->cfg->max_message_bytes);
        goto out;
    }
    if (code == CURLE_OPERATION_TIMEDOUT) {
        rc = rein_error_set(err, REIN_ETIMEDOUT, "timed out waiting for %s", c->cfg->url);
        goto out;
    }
    if (code != CURLE_OK) {
        rc = rein_error_set(err, REIN_EHTTP, "%s: %s", c->cfg->url,
                            detail[0] ? detail : curl_easy_strerror(code));
        goto out;
    }
    if (status == 404 && c->session_id && !last_id) {
        rc = SESSION_EXPIRED;
        goto out;
    }
    if (x.mode == BODY_JSON && x.body.len) {
        /* A JSON answer, or a JSON-RPC error explaining an HTTP error. */
        dispatch_text(c, x.body.ptr, x.body.len, p);
        pthread_mutex_lock(&c->mu);
        done = p && p->done;
        pthread_mutex_unlock(&c->mu);
        if (done || (!p && status / 100 == 2)) {
            rc = REIN_OK;
            goto out;
        }
    }
    if (!p && status / 100 == 2) {
        rc = REIN_OK; /* a notification or response was accepted */
        goto out;
    }
    if (x.mode == BODY_SSE && status / 100 == 2) {
        if (x.sse.last_id[0]) {
            snprintf(last_out, 256, "%s", x.sse.last_id);
            *retry_out = x.sse.retry_ms;
            rc = NEED_RESUME;
        } else {
            rc = rein_error_set(err, REIN_EIO,
                                "%s ended its event stream before answering, without an event "
                                "id to resume from",
                                c->cfg->url);
        }
        goto out;
    }
    {
        size_t n = x.body.len < sizeof(snippet) - 1 ? x.body.len : sizeof(snippet) - 1;
        for (size_t i = 0; i < n; i++)
            snippet[i] = (unsigned char)x.body.ptr[i] < 0x20 ? ' ' : x.body.ptr[i];
        snippet[n] = '\0';
    }
    if (status / 100 != 2)
        rc = rein_error_set(err, REIN_EHTTP, "%s answered HTTP %ld%s%s", c->cfg->url, status,
                            snippet[0] ? ": " : "", snippet);
    else if (x.mode == BODY_OTHER || x.mode == BODY_UNKNOWN)
        rc = rein_error_set(err, REIN_EHTTP, "%s answered %s (HTTP %ld), not JSON-RPC%s%s",
                            c->cfg->url, ct ? ct : "no content type", status,
                            snippet[0] ? ": " : "", snippet);
    else
        rc = rein_error_set(err, REIN_EHTTP, "%s answered HTTP %ld without a JSON-RPC response%s%s",
                            c->cfg->url, status, snippet[0] ? ": " : "", snippet);
out:
    curl_slist_free_all(headers);
    if (x.easy)
        curl_easy_cleanup(x.easy);
    rein__mcp_sse_release(&x.sse);
    rein_buf_release(&x.body);
    return rc;
}

/* A request over HTTP: POST, then resume as often as the server asks (within limits). */
static int http_roundtrip(struct rein__mcp_conn *c, struct pending *p, const char *json, size_t len,
                          int64_t deadline, rein_cancel *cancel, rein_error *err)
{
    char last[256] = "";
    int64_t retry = -1;
    int rc = http_exchange(c, p, json, len, NULL, deadline, cancel, last, &retry, err);

    for (int i = 0; rc == NEED_RESUME && i < MAX_RESUMES; i++) {
        int64_t wait = retry >= 0 ? retry : DEFAULT_RETRY_MS;
        if (deadline && rein_now_ms() + wait >= deadline)
            return rein_error_set(err, REIN_ETIMEDOUT, "timed out waiting for %s", c->cfg->url);
        /* The server's retry field says how long to wait before reconnecting. */
        if (rein_cancel_wait(cancel, wait))
            return rein_error_set(err, REIN_ECANCELED, "cancelled while waiting for %s",
                                  c->cfg->url);
        rc = http_exchange(c, p, NULL, 0, last, deadline, cancel, last, &retry, err);
    }
    if (rc == NEED_RESUME)
        return rein_error_set(err, REIN_EIO, "%s kept ending its stream without answering",
                              c->cfg->url);
    return rc;
}

static void http_close(struct rein__mcp_conn *c)
{
    CURL *easy;
    struct curl_slist *headers;

    if (!c->session_id)
        return;
    easy = rein__curl_global_init(NULL) == REIN_OK ? curl_easy_init() : NULL;
    headers = easy ? http_headers(c, false, NULL) : NULL;
    if (easy && headers) {
        /* Ending the session is a courtesy; its failure changes nothing here. */
        curl_easy_setopt(easy, CURLOPT_URL, c->cfg->url);
        curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, "DELETE");
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 2000L);
        curl_easy_setopt(easy, CURLOPT_NOBODY, 0L);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, NULL);
        if (curl_easy_perform(easy) != CURLE_OK)
            rein_log(REIN_LOG_DEBUG, WHERE, "%s: could not end the session", c->cfg->name);
    }
    curl_slist_free_all(headers);
    if (easy)
        curl_easy_cleanup(easy);
    rein_free(c->session_id);
    c->session_id = NULL;
}

/* ---- sending ---------------------------------------------------------------------------- */

/* A notification or a response to the server, not waiting for anything. */
static rein_err send_raw(struct rein__mcp_conn *c, const char *json, size_t len, rein_error *err)
{
    char last[256];
    int64_t retry;
    int rc;

    if (!c->cfg->http)
        return stdio_send(c, json, len, err);
    rc = http_exchange(c, NULL, json, len, NULL, rein_now_ms() + NOTIFY_TIMEOUT_MS, NULL, last,
                       &retry, err);
    return rc == REIN_OK || rc == NEED_RESUME ? REIN_OK : (rc > 0 ? REIN_EHTTP : rc);
}

static void notify(struct rein__mcp_conn *c, const char *method, json_t *params)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    if (rein__mcp_write_notification(&b, method, params) != REIN_OK ||
        send_raw(c, b.ptr, b.len, NULL) != REIN_OK)
        rein_log(REIN_LOG_INFO, WHERE, "%s: could not send %s", c->cfg->name, method);
    rein_buf_release(&b);
    json_decref(params);
}

struct req_opts {
    int64_t deadline; /* 0: none */
    rein_cancel *cancel;
    const struct rein_invocation *inv; /* events and a progressToken; may be NULL */
};

/* Turns a JSON-RPC error response into a rein error. */
static rein_err rpc_error(struct rein__mcp_conn *c, const char *method, const json_t *doc,
                          rein_error *err)
{
    const json_t *e = json_object_get(doc, "error");
    int code = (int)json_integer_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    rein_err rc = code == REIN__MCP_INVALID_PARAMS     ? REIN_EINVALID
                  : code == REIN__MCP_METHOD_NOT_FOUND ? REIN_ENOTSUP
                                                       : REIN_EIO;

    rc = rein_error_set(err, rc, "MCP server %s answered %s with error %d: %s", c->cfg->name,
                        method, code, msg ? msg : "(no message)");
    if (err)
        err->detail = code;
    return rc;
}

/* Sends method(params, borrowed) and waits; *result is a new reference on success. */
static rein_err request(struct rein__mcp_conn *c, const char *method, const json_t *params,
                        const struct req_opts *o, json_t **result, rein_error *err)
{
    struct pending p = {.inv = o->inv};
    json_t *sent = NULL;
    struct rein_buf b;
    rein_err rc;
    int hrc;
    bool retried = false;

    *result = NULL;
    rein_buf_init(&b, 0);
again:
    pending_add(c, &p);
    if (o->inv && o->inv->on_event) {
        /* The request id doubles as the progress token. */
        sent = json_deep_copy(params ? params : json_object());
        json_t *meta = json_object();
        if (!sent || !meta || json_object_set_new(meta, "progressToken", json_integer(p.id)) ||
            json_object_set_new(sent, "_meta", meta)) {
            json_decref(meta);
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
            goto out_remove;
        }
    }
    rein_buf_reset(&b);
    if (rein__mcp_write_request(&b, p.id, method, sent ? sent : params) != REIN_OK) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory encoding %s", method);
        goto out_remove;
    }
    if (c->cfg->http) {
        hrc = http_roundtrip(c, &p, b.ptr, b.len, o->deadline, o->cancel, err);
        pthread_mutex_lock(&c->mu);
        bool connecting = c->in_connect;
        pthread_mutex_unlock(&c->mu);
        if (hrc == SESSION_EXPIRED && !retried && !connecting) {
            /* The server forgot the session: start a new one and ask again, once. */
            pthread_mutex_lock(&c->mu);
            pending_remove(c, &p);
            rein_free(c->session_id);
            c->session_id = NULL;
            c->state = ST_IDLE;
            pthread_mutex_unlock(&c->mu);
            json_decref(sent);
            sent = NULL;
            retried = true;
            rc = rein__mcp_conn_connect(c, o->deadline ? o->deadline - rein_now_ms() : 0, err);
            if (rc)
                goto out;
            p = (struct pending){.inv = o->inv};
            goto again;
        }
        if (hrc == SESSION_EXPIRED)
            rc = rein_error_set(err, REIN_EHTTP, "%s: the session was not found (HTTP 404)",
                                c->cfg->url);
        else
            rc = hrc;
        if (rc == REIN_OK && !p.done)
            rc = pending_wait(c, &p, o->deadline, o->cancel);
    } else {
        pthread_mutex_lock(&c->mu);
        bool down = c->state == ST_CLOSED;
        pthread_mutex_unlock(&c->mu);
        rc =
            down ? rein_error_set(err, REIN_EIO, "%s", c->error) : stdio_send(c, b.ptr, b.len, err);
        if (rc == REIN_OK)
            rc = pending_wait(c, &p, o->deadline, o->cancel);
    }
    if (rc == REIN_ETIMEDOUT || rc == REIN_ECANCELED) {
        bool timeout = rc == REIN_ETIMEDOUT;
        char garbage[200] = "";
        pthread_mutex_lock(&c->mu);
        if (c->garbage > 0)
            snprintf(garbage, sizeof(garbage),
                     "; it wrote %lld line(s) that are not JSON-RPC, the last: %.120s",
                     (long long)c->garbage, c->last_garbage);
        pthread_mutex_unlock(&c->mu);
        rein_error_set(err, rc, "%s: %s waiting for MCP server %s to answer %s%s",
                       timeout ? "timed out" : "cancelled",
                       timeout ? "gave up" : rein_cancel_reason(o->cancel), c->cfg->name, method,
                       garbage);
        /* Tell the server to stop; the initialize request may not be cancelled. */
        if (strcmp(method, "initialize") != 0)
            notify(c, "notifications/cancelled",
                   json_pack("{s:I, s:s}", "requestId", (json_int_t)p.id, "reason",
                             timeout ? "timed out" : "cancelled"));
        goto out_remove;
    }
    if (rc)
        goto out_remove;
    pthread_mutex_lock(&c->mu);
    pending_remove(c, &p);
    pthread_mutex_unlock(&c->mu);
    if (p.fail_rc) {
        rc = rein_error_set(err, p.fail_rc, "%s", p.fail_msg);
    } else if (json_object_get(p.doc, "error")) {
        rc = rpc_error(c, method, p.doc, err);
    } else {
        *result = json_incref(json_object_get(p.doc, "result"));
        rc = REIN_OK;
    }
    goto out;
out_remove:
    pthread_mutex_lock(&c->mu);
    pending_remove(c, &p);
    pthread_mutex_unlock(&c->mu);
out:
    json_decref(p.doc);
    json_decref(sent);
    rein_buf_release(&b);
    return rc;
}

/* ---- the connection --------------------------------------------------------------------- */

struct rein__mcp_conn *rein__mcp_conn_new(struct rein__mcp_conn_config *cfg)
{
    struct rein__mcp_conn *c = rein_calloc(1, sizeof(*c));

    if (!c) {
        rein__mcp_conn_config_free(cfg);
        return NULL;
    }
    atomic_init(&c->refs, 1);
    c->cfg = cfg;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    pthread_mutex_init(&c->connect_mu, NULL);
    pthread_mutex_init(&c->write_mu, NULL);
    return c;
}

struct rein__mcp_conn *rein__mcp_conn_ref(struct rein__mcp_conn *c)
{
    atomic_fetch_add(&c->refs, 1);
    return c;
}

static void transport_close(struct rein__mcp_conn *c)
{
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    pthread_mutex_unlock(&c->mu);
    if (c->cfg->http)
        http_close(c);
    else
        stdio_close(c);
    pthread_mutex_lock(&c->mu);
    c->closing = false;
    pthread_mutex_unlock(&c->mu);
}

void rein__mcp_conn_unref(struct rein__mcp_conn *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    transport_close(c);
    json_decref(c->tools);
    json_decref(c->server_info);
    rein_free(c->session_id);
    rein__mcp_conn_config_free(c->cfg);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->connect_mu);
    pthread_mutex_destroy(&c->write_mu);
    rein_free(c);
}

const struct rein__mcp_conn_config *rein__mcp_conn_config(const struct rein__mcp_conn *c)
{
    return c->cfg;
}

const json_t *rein__mcp_conn_tools(const struct rein__mcp_conn *c)
{
    return c->tools;
}

void rein__mcp_conn_counters(struct rein__mcp_conn *c, int64_t *unknown_ids, int64_t *garbage)
{
    pthread_mutex_lock(&c->mu);
    if (unknown_ids)
        *unknown_ids = c->unknown_ids;
    if (garbage)
        *garbage = c->garbage;
    pthread_mutex_unlock(&c->mu);
}

/* Every page of tools/list. */
static rein_err list_tools(struct rein__mcp_conn *c, const struct req_opts *o, rein_error *err)
{
    json_t *all = json_array(), *params = NULL, *result = NULL;
    rein_err rc = REIN_OK;
    int page;

    if (!all)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    for (page = 0; page < MAX_TOOL_PAGES; page++) {
        const json_t *tools, *next;
        rc = request(c, "tools/list", params, o, &result, err);
        if (rc) {
            json_decref(params);
            params = NULL;
            break;
        }
        tools = json_object_get(result, "tools");
        if (!json_is_array(tools)) {
            rc = rein_error_set(err, REIN_EIO,
                                "MCP server %s answered tools/list without a tools array",
                                c->cfg->name);
            break;
        }
        if (json_array_extend(all, (json_t *)tools)) {
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
            break;
        }
        next = json_object_get(result, "nextCursor");
        if (!json_is_string(next) || !json_string_value(next)[0]) {
            json_decref(params);
            params = NULL;
            break;
        }
        if (json_equal(json_object_get(params, "cursor"), next)) {
            /* The same page again: following it would list the same tools forever. */
            rc = rein_error_set(err, REIN_EIO,
                                "MCP server %s answered tools/list with the cursor it was given "
                                "as nextCursor",
                                c->cfg->name);
            break;
        }
        json_decref(params);
        params = json_pack("{s:O}", "cursor", next);
        json_decref(result);
        result = NULL;
    }
    if (!rc && page == MAX_TOOL_PAGES)
        /* Tools past the last page would be missing without a word. */
        rc = rein_error_set(err, REIN_ETOOBIG,
                            "MCP server %s has more than %d pages of tools; rein reads at most "
                            "that many",
                            c->cfg->name, MAX_TOOL_PAGES);
    json_decref(result);
    json_decref(params);
    if (rc) {
        json_decref(all);
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    json_decref(c->tools);
    c->tools = all;
    pthread_mutex_unlock(&c->mu);
    return REIN_OK;
}

static rein_err handshake(struct rein__mcp_conn *c, const struct req_opts *o, rein_error *err)
{
    json_t *params =
        json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", REIN__MCP_LATEST, "capabilities",
                  "clientInfo", "name", "rein", "version", rein_version());
    json_t *result = NULL;
    const char *version;
    rein_err rc;

    if (!params)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    c->version[0] = '\0';
    rc = request(c, "initialize", params, o, &result, err);
    json_decref(params);
    if (rc)
        return rc;
    version = json_string_value(json_object_get(result, "protocolVersion"));
    if (!rein__mcp_version_supported(version)) {
        rc = rein_error_set(err, REIN_ENOTSUP,
                            "MCP server %s speaks protocol %s, which rein does not (it speaks "
                            "2025-11-25, 2025-06-18 and 2025-03-26)",
                            c->cfg->name, version ? version : "(none given)");
        json_decref(result);
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    snprintf(c->version, sizeof(c->version), "%s", version);
    json_decref(c->server_info);
    c->server_info = json_incref(json_object_get(result, "serverInfo"));
    pthread_mutex_unlock(&c->mu);
    json_decref(result);
    notify(c, "notifications/initialized", NULL);
    return REIN_OK;
}

rein_err rein__mcp_conn_connect(struct rein__mcp_conn *c, int64_t timeout_ms, rein_error *err)
{
    struct req_opts o = {0};
    rein_err rc = REIN_OK;

    if (timeout_ms <= 0)
        timeout_ms = c->cfg->connect_timeout_ms;
    o.deadline = rein_now_ms() + timeout_ms;
    pthread_mutex_lock(&c->connect_mu);
    pthread_mutex_lock(&c->mu);
    bool ready = c->state == ST_READY;
    pthread_mutex_unlock(&c->mu);
    if (ready)
        goto out;
    pthread_mutex_lock(&c->mu);
    c->in_connect = true;
    pthread_mutex_unlock(&c->mu);
    transport_close(c); /* a server that died is started afresh */
    pthread_mutex_lock(&c->mu);
    c->state = ST_IDLE;
    pthread_mutex_unlock(&c->mu);
    if (!c->cfg->http)
        rc = stdio_open(c, err);
    if (!rc)
        rc = handshake(c, &o, err);
    if (!rc && !c->tools)
        rc = list_tools(c, &o, err);
    pthread_mutex_lock(&c->mu);
    c->in_connect = false;
    c->state = rc ? ST_FAILED : ST_READY;
    if (rc && err)
        snprintf(c->error, sizeof(c->error), "%s", err->msg);
    else
        c->error[0] = '\0';
    pthread_mutex_unlock(&c->mu);
    if (rc)
        transport_close(c);
out:
    pthread_mutex_unlock(&c->connect_mu);
    return rc;
}

json_t *rein__mcp_conn_status_json(struct rein__mcp_conn *c)
{
    json_t *o;

    pthread_mutex_lock(&c->mu);
    o = json_pack("{s:s, s:s, s:s, s:s}", "name", c->cfg->name, "transport",
                  c->cfg->http ? "http" : "stdio", "target",
                  c->cfg->http ? c->cfg->url : c->cfg->argv[0], "state", state_names[c->state]);
    if (o && c->error[0])
        json_object_set_new(o, "error", json_string(c->error));
    if (o && c->version[0])
        json_object_set_new(o, "protocolVersion", json_string(c->version));
    if (o && c->server_info)
        json_object_set(o, "serverInfo", c->server_info);
    pthread_mutex_unlock(&c->mu);
    return o;
}

/* The text of a result's text blocks, joined, for an error message. */
static void result_text(const json_t *result, char *out, size_t size)
{
    const json_t *block;
    size_t i, n = 0;

    out[0] = '\0';
    json_array_foreach(json_object_get(result, "content"), i, block)
    {
        const char *t = json_string_value(json_object_get(block, "text"));
        if (t && n + 1 < size)
            n += (size_t)snprintf(out + n, size - n, "%s%s", n ? " " : "", t);
        if (n >= size)
            n = size - 1;
    }
}

/* Copies well-formed {path, message} items. */
static json_t *details_of(const json_t *items)
{
    json_t *out = json_array(), *item;
    size_t i;

    json_array_foreach((json_t *)items, i, item)
    {
        const char *path = json_string_value(json_object_get(item, "path"));
        const char *msg = json_string_value(json_object_get(item, "message"));
        if (out && msg &&
            json_array_append_new(
                out, json_pack("{s:s, s:s}", "path", path ? path : "", "message", msg))) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

/*
 * A result with isError. When its structuredContent is what rein itself sends for a failed
 * call (another rein serving its tools), the error code, message and details are kept;
 * otherwise the result's text is the message of an execution failure.
 */
static rein_err tool_error(const json_t *result, struct rein_tool_reply *reply, rein_error *err)
{
    const json_t *sc = json_object_get(result, "structuredContent");
    const json_t *e = json_object_get(sc, "error");
    const char *code_text = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    enum rein_call_code code;
    char text[600];

    if (json_is_false(json_object_get(sc, "ok")) && msg && code_text &&
        rein_call_code_parse(code_text, &code)) {
        reply->details = details_of(json_object_get(e, "details"));
        return rein_error_set(err, rein_call_code_to_err(code), "%s", msg);
    }
    if (json_is_string(e) && json_is_array(json_object_get(sc, "errors"))) {
        /* rein's invalid payload: {tool, error, errors, receivedArgs, expected, hint}. */
        reply->details = details_of(json_object_get(sc, "errors"));
        return rein_error_set(err, REIN_EINVALID, "%s", json_string_value(e));
    }
    result_text(result, text, sizeof(text));
    return rein_error_set(err, REIN_EIO, "%s", text[0] ? text : "the tool reported an error");
}

rein_err rein__mcp_conn_call(struct rein__mcp_conn *c, const char *tool,
                             const struct rein_invocation *inv, struct rein_tool_reply *reply,
                             rein_error *err)
{
    int64_t left = rein_invocation_remaining_ms(inv);
    struct req_opts o = {.deadline = inv->deadline_ms, .cancel = inv->cancel, .inv = inv};
    json_t *params, *result = NULL, *out;
    const char *key;
    json_t *v;
    rein_err rc;

    if (left == 0)
        return rein_error_set(err, REIN_ETIMEDOUT, "timed out before MCP server %s was called",
                              c->cfg->name);
    rc = rein__mcp_conn_connect(c, left > 0 ? left : 0, err);
    if (rc)
        return rc == REIN_ENOMEM || rc == REIN_ETIMEDOUT || rc == REIN_ECANCELED ? rc : REIN_EIO;
    params = json_pack("{s:s, s:O}", "name", tool, "arguments", inv->args);
    if (!params)
        return rein_error_set(err, REIN_ENOMEM, "out of memory calling %s", tool);
    rc = request(c, "tools/call", params, &o, &result, err);
    json_decref(params);
    if (rc)
        return rc == REIN_ENOTSUP ? REIN_EIO : rc;
    if (!json_is_object(result) || !json_is_array(json_object_get(result, "content"))) {
        json_decref(result);
        return rein_error_set(err, REIN_EIO,
                              "MCP server %s answered tools/call without a content array",
                              c->cfg->name);
    }
    if (json_is_true(json_object_get(result, "isError"))) {
        rc = tool_error(result, reply, err);
        json_decref(result);
        return rc;
    }
    /* The output keeps the content (and the structured value) as MCP gave them. */
    out = json_object();
    json_object_foreach(result, key, v)
    {
        if (out && (strcmp(key, "content") == 0 || strcmp(key, "structuredContent") == 0) &&
            json_object_set(out, key, v)) {
            json_decref(out);
            out = NULL;
        }
    }
    json_decref(result);
    if (!out)
        return rein_error_set(err, REIN_ENOMEM, "out of memory reading the result");
    reply->output = out;
    return REIN_OK;
}
