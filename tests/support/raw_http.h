/*
 * raw_http.h: HTTP/1.1 over a plain TCP socket for tests that must send what no well-behaved
 * client sends (lying or duplicate Content-Length, oversized header blocks, chunked bodies past
 * a limit, clients that stop mid-request) and see exactly what the server answers, or that it
 * closes the connection. 127.0.0.1 only.
 */
#ifndef REIN_TEST_RAW_HTTP_H
#define REIN_TEST_RAW_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct rh_resp {
    int status;      /* 0: no answer before the connection closed or the time ran out */
    char head[8192]; /* the status line and the headers, NUL-terminated */
    char *body;      /* NUL-terminated (never NULL after rh_read); chunked bodies decoded */
    size_t len;
    json_t *json;   /* the body parsed, or NULL */
    bool timed_out; /* the time ran out before a complete answer */
};

/* A connected socket to 127.0.0.1:port (fails the test when it cannot connect). */
int rh_connect(int port);
/* Sends all len bytes; false when the peer has closed. */
bool rh_send(int fd, const void *data, size_t len);
/*
 * Reads one answer within timeout_ms: headers, then a Content-Length or chunked body (none for
 * a HEAD request when head_only), else until the peer closes. out is reset first.
 */
void rh_read(int fd, int timeout_ms, bool head_only, struct rh_resp *out);
/* Connects, sends req (len bytes), reads one answer, closes. */
void rh_exchange(int port, const char *req, size_t len, int timeout_ms, struct rh_resp *out);
/* True when the peer closes the connection (EOF or reset) within timeout_ms; bytes that
 * arrive meanwhile are discarded. */
bool rh_wait_closed(int fd, int timeout_ms);
/* The value of a header of out (case-insensitive name) copied into a static buffer, or NULL. */
const char *rh_header(const struct rh_resp *r, const char *name);
/* Asserts status and the JSON error shape {"error": {"code": code, "message": "..."}}. */
void rh_assert_error(const struct rh_resp *r, int status, const char *code);
void rh_resp_free(struct rh_resp *r);

#endif
