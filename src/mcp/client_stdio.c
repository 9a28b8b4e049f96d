/*
 * The MCP client's stdio transport: the server is a program rein starts without a shell, in a
 * process group of its own, with a minimal environment. Messages go to its stdin one line
 * each; a reader thread reads its stdout line by line (and keeps the end of its stderr for
 * messages) and hands every message to client.c. When stdout ends the server is reaped and
 * every pending request fails with its exit status and the last line of its stderr.
 */
#include "mcp/client_int.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WHERE "mcp/client"

extern char **environ;

rein_err rein__mcp_stdio_send(struct rein__mcp_conn *c, const char *json, size_t len,
                              rein_error *err)
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
    if (n >= REIN__MCP_STDERR_TAIL) {
        p += n - REIN__MCP_STDERR_TAIL;
        n = REIN__MCP_STDERR_TAIL;
    }
    if (c->stderr_len + n > REIN__MCP_STDERR_TAIL) {
        size_t drop = c->stderr_len + n - REIN__MCP_STDERR_TAIL;
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
            rein__mcp_client_dispatch_text(c, line.ptr, line.len, NULL);
            rein_buf_reset(&line);
        }
        if (too_big)
            break;
    }
    rein_buf_release(&line);
    /* stdout ended (or the server flooded): it is over either way. */
    if (too_big || rein_proc_wait(proc, REIN__MCP_CLOSE_GRACE_MS, &exit_code) != REIN_OK) {
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
    bool lost = !c->closing;
    if (lost) {
        snprintf(c->error, sizeof(c->error), "%s", msg);
        c->state = REIN__MCP_ST_CLOSED;
    }
    rein__mcp_client_fail_all(c, REIN_EIO, msg);
    c->reader_done = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (lost)
        rein__mcp_client_changed(c); /* its owner starts it again (with a backoff) */
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

rein_err rein__mcp_stdio_open(struct rein__mcp_conn *c, rein_error *err)
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
void rein__mcp_stdio_close(struct rein__mcp_conn *c)
{
    int64_t deadline;

    if (!c->reader_running)
        return;
    pthread_mutex_lock(&c->write_mu);
    rein_proc_close_stdin(c->proc);
    pthread_mutex_unlock(&c->write_mu);
    for (int round = 0; round < 3; round++) {
        pthread_mutex_lock(&c->mu);
        deadline = rein_now_ms() + REIN__MCP_CLOSE_GRACE_MS;
        while (!c->reader_done && rein_now_ms() < deadline) {
            rein__mcp_cond_wait_ms(&c->cv, &c->mu, 100);
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
