/*
 * Raw HTTP/1.1 over TCP for the server audit tests (raw_http.h): a blocking socket read with
 * poll() deadlines, one answer at a time, Content-Length and chunked bodies decoded by hand so
 * nothing in the client hides what the server sent.
 */
#include "raw_http.h"

#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int rh_connect(int port)
{
    struct sockaddr_in sa = {0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        fail_msg("connect to 127.0.0.1:%d: %s", port, strerror(errno));
    return fd;
}

bool rh_send(int fd, const void *data, size_t len)
{
    const char *p = data;

    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* Reads more bytes into *buf within the deadline; 0 on EOF/error, -1 on timeout. */
static ssize_t fill(int fd, long long deadline, char **buf, size_t *len, size_t *cap)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    long long left = deadline - now_ms();
    ssize_t n;

    if (left <= 0 || poll(&p, 1, (int)left) <= 0)
        return -1;
    if (*cap - *len < 65536) {
        *cap = *cap * 2 + 65536;
        *buf = realloc(*buf, *cap);
        assert_non_null(*buf);
    }
    n = recv(fd, *buf + *len, *cap - *len - 1, 0);
    if (n <= 0)
        return 0;
    *len += (size_t)n;
    (*buf)[*len] = '\0';
    return n;
}

/* Decodes a chunked body at in (n bytes); false while it is incomplete. */
static bool dechunk(const char *in, size_t n, struct rh_resp *out)
{
    size_t pos = 0;

    out->len = 0;
    for (;;) {
        const char *eol = memmem(in + pos, n - pos, "\r\n", 2);
        unsigned long size;
        if (!eol)
            return false;
        size = strtoul(in + pos, NULL, 16);
        pos = (size_t)(eol - in) + 2;
        if (size == 0)
            return memmem(in + pos, n - pos, "\r\n", 2) != NULL;
        if (n - pos < size + 2)
            return false;
        memcpy(out->body + out->len, in + pos, size);
        out->len += size;
        out->body[out->len] = '\0';
        pos += size + 2;
    }
}

void rh_read(int fd, int timeout_ms, bool head_only, struct rh_resp *out)
{
    long long deadline = now_ms() + timeout_ms;
    size_t len = 0, cap = 0, hlen;
    char *buf = NULL, *end;
    const char *cl, *te;
    bool complete = false;

    memset(out, 0, sizeof(*out));
    for (;;) {
        ssize_t n = fill(fd, deadline, &buf, &len, &cap);
        if (len > 0 && (end = strstr(buf, "\r\n\r\n")) != NULL)
            break;
        if (n <= 0) {
            out->timed_out = n < 0;
            out->body = calloc(1, 1);
            free(buf);
            return;
        }
    }
    hlen = (size_t)(end - buf) + 4;
    snprintf(out->head, sizeof(out->head), "%.*s", (int)hlen, buf);
    out->status = (int)strtol(buf + 9, NULL, 10);
    cl = rh_header(out, "Content-Length");
    {
        long clen = cl ? strtol(cl, NULL, 10) : -1;
        te = rh_header(out, "Transfer-Encoding");
        bool chunked = te && strcasecmp(te, "chunked") == 0;
        out->body = calloc(1, len + (size_t)(clen > 0 ? clen : 0) + 1);
        for (;;) {
            size_t have = len - hlen;
            if (head_only || out->status < 200 || out->status == 204 || out->status == 304) {
                complete = true;
            } else if (chunked) {
                out->body = realloc(out->body, have + 1);
                complete = dechunk(buf + hlen, have, out);
            } else if (clen >= 0 && have >= (size_t)clen) {
                memcpy(out->body, buf + hlen, (size_t)clen);
                out->len = (size_t)clen;
                out->body[out->len] = '\0';
                complete = true;
            }
            if (complete)
                break;
            ssize_t n = fill(fd, deadline, &buf, &len, &cap);
            if (n <= 0) {
                out->timed_out = n < 0;
                if (!chunked && clen < 0) { /* the body ends with the connection */
                    out->body = realloc(out->body, len - hlen + 1);
                    memcpy(out->body, buf + hlen, len - hlen);
                    out->len = len - hlen;
                    out->body[out->len] = '\0';
                    out->timed_out = false;
                }
                break;
            }
        }
    }
    out->json = json_loadb(out->body, out->len, 0, NULL);
    free(buf);
}

void rh_exchange(int port, const char *req, size_t len, int timeout_ms, struct rh_resp *out)
{
    int fd = rh_connect(port);

    rh_send(fd, req, len); /* a refused send still lets an early answer be read */
    rh_read(fd, timeout_ms, strncmp(req, "HEAD ", 5) == 0, out);
    close(fd);
}

bool rh_wait_closed(int fd, int timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    char sink[65536];

    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        long long left = deadline - now_ms();
        ssize_t n;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return false;
        n = recv(fd, sink, sizeof(sink), 0);
        if (n <= 0)
            return true;
    }
}

const char *rh_header(const struct rh_resp *r, const char *name)
{
    static char value[1024];
    size_t nlen = strlen(name);
    const char *line = strstr(r->head, "\r\n");

    while (line && line[2] != '\r' && line[2] != '\0') {
        const char *start = line + 2;
        const char *eol = strstr(start, "\r\n");
        if (!eol)
            break;
        if (strncasecmp(start, name, nlen) == 0 && start[nlen] == ':') {
            const char *v = start + nlen + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            snprintf(value, sizeof(value), "%.*s", (int)(eol - v), v);
            return value;
        }
        line = eol;
    }
    return NULL;
}

void rh_assert_error(const struct rh_resp *r, int status, const char *code)
{
    const json_t *e = json_object_get(r->json, "error");
    const char *ct = rh_header(r, "Content-Type");

    if (r->status != status)
        fail_msg("expected status %d, got %d: %s%s", status, r->status, r->head, r->body);
    if (!ct || strncmp(ct, "application/json", 16) != 0)
        fail_msg("status %d: not a JSON answer: %s%s", status, r->head, r->body);
    if (!json_is_object(e) || !json_is_string(json_object_get(e, "message")) ||
        !json_is_string(json_object_get(e, "code")))
        fail_msg("status %d: not the error shape: %s", status, r->body);
    if (code && strcmp(json_string_value(json_object_get(e, "code")), code) != 0)
        fail_msg("expected error code %s, got %s", code,
                 json_string_value(json_object_get(e, "code")));
}

void rh_resp_free(struct rh_resp *r)
{
    free(r->body);
    json_decref(r->json);
    r->body = NULL;
    r->json = NULL;
}
