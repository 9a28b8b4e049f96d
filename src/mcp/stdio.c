/*
 * rein as an MCP server over stdio (`rein mcp serve`): newline-delimited JSON-RPC messages on
 * the input descriptor, answers and notifications on the output descriptor, one session.
 *
 * The reading thread decodes each line and handles it at once, except tools/call (and a
 * prompts/get that asks the client first), which runs on the server's worker pool so that the
 * next lines (a notifications/cancelled for that very call, the client's answer, a ping, other
 * calls) are read while it runs. Writes from all threads go through one
 * mutex, one whole line at a time. A line that is not a message is answered with a JSON-RPC
 * error and the session goes on; a line longer than max_message_bytes is skipped to its end
 * and answered with -32600. At end of input the calls still running get a second to finish,
 * then are cancelled and waited for, and the function returns.
 */
#include "mcp/mcp_int.h"

#include <rein/proc.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define WHERE        "mcp/stdio"
#define EOF_GRACE_MS 1000

struct stdio_conn {
    struct rein__mcp_sink sink; /* first: the sink handed out is the connection */
    int out_fd;
    pthread_mutex_t mu;
    bool broken; /* a write failed: the client is gone, later writes are dropped */
};

static void stdio_send(struct rein__mcp_sink *sink, const char *json, size_t len, bool final)
{
    struct stdio_conn *c = (struct stdio_conn *)sink;

    (void) final;
    pthread_mutex_lock(&c->mu);
    if (!c->broken &&
        (!rein_proc_write_all(c->out_fd, json, len) || !rein_proc_write_all(c->out_fd, "\n", 1))) {
        c->broken = true;
        rein_log(REIN_LOG_INFO, WHERE, "the client stopped reading: %s", strerror(errno));
    }
    pthread_mutex_unlock(&c->mu);
}

struct stdio_job {
    rein_mcp_server *srv;
    struct rein__mcp_session *sess;
    struct stdio_conn *conn;
    struct rein__mcp_msg msg;
};

static void job_run(void *arg)
{
    struct stdio_job *j = arg;

    rein__mcp_handle(j->srv, j->sess, &j->msg, NULL, &j->conn->sink);
    rein__mcp_msg_release(&j->msg);
    rein__mcp_session_job_end(j->sess);
    rein_free(j);
}

static void handle_line(rein_mcp_server *srv, struct rein__mcp_session *sess,
                        struct stdio_conn *conn, const char *line, size_t len)
{
    struct rein__mcp_msg msg;
    struct stdio_job *job;
    json_t *bad_id = NULL;
    rein_error err;
    rein_err rc;

    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    if (len == 0)
        return;
    rein_error_clear(&err);
    rc = rein__mcp_decode(line, len, 0, &msg, &bad_id, &err);
    if (rc == REIN_EINVALID && msg.kind == REIN__MCP_RESPONSE) {
        rein_log(REIN_LOG_INFO, WHERE, "a malformed response from the client, ignored: %s",
                 err.msg);
    } else if (rc) {
        rein__mcp_send_error(&conn->sink, bad_id, rein__mcp_decode_error_code(rc), err.msg);
    }
    if (rc) {
        json_decref(bad_id);
        return;
    }
    if (rein__mcp_is_long(&msg) || rein__mcp_asks_first(srv, sess, &msg)) {
        job = rein_calloc(1, sizeof(*job));
        if (job) {
            *job = (struct stdio_job){srv, sess, conn, msg};
            rein__mcp_session_job_begin(sess);
            if (rein__mcp_submit(srv, job_run, job) == REIN_OK)
                return;
            rein__mcp_session_job_end(sess);
            rein_free(job);
        }
        /* No worker could take it: run it here rather than lose it. */
    }
    rein__mcp_handle(srv, sess, &msg, NULL, &conn->sink);
    rein__mcp_msg_release(&msg);
}

rein_err rein_mcp_server_run_stdio(rein_mcp_server *srv, int in_fd, int out_fd, rein_error *err)
{
    size_t max = rein__mcp_opts(srv)->max_message_bytes;
    struct stdio_conn conn = {.sink = {.send = stdio_send}, .out_fd = out_fd};
    struct rein__mcp_session *sess = rein__mcp_session_new(srv);
    struct rein_buf line;
    bool skipping = false; /* inside a line that passed the limit */
    rein_err rc = REIN_OK;
    char chunk[65536];

    if (!sess)
        return rein_error_set(err, REIN_ENOMEM, "out of memory starting the MCP session");
    pthread_mutex_init(&conn.mu, NULL);
    rein__mcp_session_set_notify(sess, &conn.sink);
    rein_buf_init(&line, max + 1);
    for (;;) {
        ssize_t n = read(in_fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = rein_error_set(err, REIN_EIO, "reading the MCP client's messages: %s",
                                strerror(errno));
            break;
        }
        if (n == 0)
            break;
        for (const char *p = chunk, *end = chunk + n; p < end;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t take = nl ? (size_t)(nl - p) : (size_t)(end - p);
            if (!skipping && rein_buf_add(&line, p, take) != REIN_OK) {
                skipping = true;
                rein_buf_reset(&line);
            }
            p += take;
            if (!nl)
                break;
            p++; /* the newline */
            if (skipping) {
                char msg[128];
                snprintf(msg, sizeof(msg), "the message is larger than %zu bytes", max);
                rein__mcp_send_error(&conn.sink, NULL, REIN__MCP_INVALID_REQUEST, msg);
                skipping = false;
            } else {
                handle_line(srv, sess, &conn, line.ptr, line.len);
            }
            rein_buf_reset(&line);
        }
    }
    if (!skipping && line.len > 0)
        handle_line(srv, sess, &conn, line.ptr, line.len); /* a last line without newline */
    /* The client closed its input: calls it already sent get a moment to finish (a client
     * may pipe a whole session in), then the rest are cancelled, so rein exits promptly. */
    if (!rein__mcp_session_wait_jobs(sess, EOF_GRACE_MS)) {
        rein__mcp_session_cancel_calls(sess, "the MCP client closed its input");
        rein__mcp_session_wait_jobs(sess, -1);
    }
    rein_buf_release(&line);
    rein__mcp_session_set_notify(sess, NULL);
    pthread_mutex_destroy(&conn.mu);
    rein__mcp_session_unref(sess);
    return rc;
}
