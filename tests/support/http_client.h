/*
 * http_client.h: a small libcurl client for tests that talk to `rein serve` (or a server
 * started in the test): one request at a time, the status, headers and body kept, JSON bodies
 * parsed, and Server-Sent Events streams split into events.
 */
#ifndef REIN_TEST_HTTP_CLIENT_H
#define REIN_TEST_HTTP_CLIENT_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct th_resp {
    int curl_rc;
    long status;
    char *body; /* NUL-terminated; never NULL after th_http */
    size_t len;
    char headers[8192];
    size_t hlen;
    json_t *json; /* the body parsed, or NULL */
};

/*
 * One request. body may be NULL (no body); content_type NULL means application/json when there
 * is a body; headers is a NULL-terminated list of "Name: value" (may be NULL).
 */
void th_http(const char *method, const char *url, const char *body, const char *const *headers,
             struct th_resp *out);
/* The same with len bytes of body, sent with exactly the given headers (no Content-Type is
 * added: curl then sends its form encoding). */
void th_http_raw(const char *method, const char *url, const char *body, size_t len,
                 const char *const *headers, struct th_resp *out);
/* A CURLOPT_WRITEFUNCTION that appends to the struct th_resp in CURLOPT_WRITEDATA, for tests
 * that drive curl themselves. */
size_t th_on_body(char *data, size_t size, size_t n, void *ud);
/* POST body as JSON. */
void th_post(const char *url, const char *body, struct th_resp *out);
void th_get(const char *url, struct th_resp *out);
/* POST with Accept: text/event-stream. */
void th_post_sse(const char *url, const char *body, struct th_resp *out);
void th_resp_free(struct th_resp *r);
/* The value of a response header (case-insensitive), copied into a static buffer; NULL. */
const char *th_header(const struct th_resp *r, const char *name);
/* Asserts the JSON error shape {"error": {"code": code, "message": ...}} and the status. */
void th_assert_error(const struct th_resp *r, long status, const char *code);

/* POSTs with Accept: text/event-stream and hangs up (a closed tab) once marker was received;
 * fails the test when the stream ends before. */
void th_post_sse_until(const char *url, const char *body, const char *marker, struct th_resp *out);
/*
 * The events of an SSE body: a new array of {"event": name, "data": parsed JSON, "id"?: the
 * event's id when it has one} in order, and *comments (may be NULL) receives the number of
 * comment lines (heartbeats).
 */
json_t *th_sse_events(const char *body, int *comments);

/*
 * A POST (as th_post, or th_post_sse when sse) run on its own thread, for requests a test acts
 * on while they run (a turn to cancel, two turns racing for a lock). url and body are copied.
 * Join before reading r; free after joining.
 */
struct th_bg {
    pthread_t th;
    char url[256];
    char body[1024];
    bool sse;
    bool get; /* a GET instead (th_bg_get) */
    struct th_resp r;
    /* What th_bg_wait_body reads while the request runs: r's body under mu once got. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool got, done;
};
struct th_bg *th_bg_post(const char *url, const char *body, bool sse);
/* A GET on its own thread (a follower of an event stream). */
struct th_bg *th_bg_get(const char *url);
/*
 * Waits up to timeout_ms, while the request runs, until its body so far holds marker (true),
 * or the request has ended or the time is up without it (false). For a test that must know
 * the client has received something before it acts (kills the server, say).
 */
bool th_bg_wait_body(struct th_bg *b, const char *marker, int timeout_ms);
void th_bg_join(struct th_bg *b);
void th_bg_free(struct th_bg *b);

/* The string member key of o (borrowed), or NULL. */
const char *th_jstr(const json_t *o, const char *key);
/* The ledger entry with this call id in a conversation object as GET
 * /agent/conversations/{id} returns it (borrowed); fails the test when there is none. */
const json_t *th_ledger_entry(const json_t *conv, const char *call_id);

#endif
