/*
 * The HTTP skill host the runner tests call (skill_http.h): real sockets on loopback, one
 * thread per connection so /hang can block its own request without stalling the others.
 */
#include "skill_http.h"

#include "core/internal.h"
#include "mhd_upload.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct skill_http {
    struct mhd_upload_daemon http;
    pthread_mutex_t lock;
    pthread_cond_t stop_cond;
    bool stopping;
    int requests;
    int mcp_good, mcp_bad; /* /mcp-asks: the client's answers to its requests, right or not */
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             const char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc;

    MHD_add_response_header(r, "Content-Type", type);
    rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static void hang(struct skill_http *s)
{
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        struct timespec until = rein__deadline_ts(CLOCK_REALTIME, 1000);
        pthread_cond_timedwait(&s->stop_cond, &s->lock, &until);
    }
    pthread_mutex_unlock(&s->lock);
}

/* Counts one answer of the client to a request /mcp-asks sent: ping wants an empty result,
 * the rest (rein declares no client capabilities) error -32601. */
static void mcp_record(struct skill_http *s, json_t *msg)
{
    const char *id = json_string_value(json_object_get(msg, "id"));
    json_t *res = json_object_get(msg, "result"), *err = json_object_get(msg, "error");
    bool good = id && strcmp(id, "srv-0") == 0
                    ? json_is_object(res) && json_object_size(res) == 0
                    : id && json_integer_value(json_object_get(err, "code")) == -32601;

    pthread_mutex_lock(&s->lock);
    if (good)
        s->mcp_good++;
    else
        s->mcp_bad++;
    pthread_mutex_unlock(&s->lock);
}

/* A scripted MCP server whose one tool asks the client four things mid-call (see the header). */
static enum MHD_Result mcp_asks(struct skill_http *s, struct MHD_Connection *c,
                                struct mhd_upload *u)
{
    json_t *msg = json_loadb(u->data ? u->data : "", u->len, 0, NULL);
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *id = json_object_get(msg, "id"), *out = NULL;
    enum MHD_Result rc = MHD_NO;
    char *text;

    if (!msg) {
        rc = reply(c, 400, "text/plain", "not json", 8);
    } else if (!method) {
        mcp_record(s, msg);
        rc = reply(c, 202, "text/plain", "", 0);
    } else if (!id) {
        rc = reply(c, 202, "text/plain", "", 0);
    } else if (strcmp(method, "initialize") == 0) {
        out = json_pack("{s:s, s:O, s:{s:s, s:{s:{}}, s:{s:s, s:s}}}", "jsonrpc", "2.0", "id", id,
                        "result", "protocolVersion", "2025-06-18", "capabilities", "tools",
                        "serverInfo", "name", "asks", "version", "1");
    } else if (strcmp(method, "tools/list") == 0) {
        out = json_pack("{s:s, s:O, s:{s:[{s:s, s:s, s:{s:s}}]}}", "jsonrpc", "2.0", "id", id,
                        "result", "tools", "name", "ask", "description", "asks the client",
                        "inputSchema", "type", "object");
    } else if (strcmp(method, "tools/call") == 0) {
        static const char *const asks[] = {"ping", "roots/list", "sampling/createMessage",
                                           "elicitation/create"};
        size_t n = 0, cap = 4096;
        char *body = malloc(cap);
        for (int i = 0; i < 4; i++) {
            char rid[16];
            snprintf(rid, sizeof(rid), "srv-%d", i);
            json_t *ask = json_pack("{s:s, s:s, s:s, s:{}}", "jsonrpc", "2.0", "id", rid, "method",
                                    asks[i], "params");
            text = json_dumps(ask, JSON_COMPACT);
            n += (size_t)snprintf(body + n, cap - n, "event: message\ndata: %s\n\n", text);
            free(text);
            json_decref(ask);
        }
        json_t *res = json_pack("{s:s, s:O, s:{s:[{s:s, s:s}]}}", "jsonrpc", "2.0", "id", id,
                                "result", "content", "type", "text", "text", "asked");
        text = json_dumps(res, JSON_COMPACT);
        n += (size_t)snprintf(body + n, cap - n, "id: 1\ndata: %s\n\n", text);
        free(text);
        json_decref(res);
        rc = reply(c, 200, "text/event-stream", body, n);
        free(body);
    } else {
        out = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                        -32601, "message", "no such method");
    }
    if (out) {
        text = json_dumps(out, JSON_COMPACT);
        rc = reply(c, 200, "application/json", text, strlen(text));
        free(text);
        json_decref(out);
    }
    json_decref(msg);
    return rc;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *method,
                              const char *url, struct mhd_upload *u)
{
    struct skill_http *s = cls;
    static const char html[] = "<!doctype html><html><head><title>Sign in</title></head>"
                               "<body><form>Login</form></body></html>";
    static const char error[] = "{\"ok\": false, \"error\": {\"code\": \"denied\", \"message\": "
                                "\"quota exceeded\", \"details\": []}}";
    const char *trace = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Trace-Id");
    enum MHD_Result rc;

    (void)method;
    pthread_mutex_lock(&s->lock);
    s->requests++;
    pthread_mutex_unlock(&s->lock);
    if (strcmp(url, "/ok") == 0) {
        size_t n = u->len + 256;
        char *body = malloc(n);
        int len = snprintf(body, n,
                           "{\"ok\": true, \"output\": {\"received\": %.*s, "
                           "\"trace\": \"%s\"}}",
                           (int)u->len, u->data ? u->data : "null", trace ? trace : "");
        rc = reply(c, 200, "application/json", body, (size_t)len);
        free(body);
        return rc;
    }
    if (strcmp(url, "/headers") == 0) {
        const char *tp = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "traceparent");
        const char *ts = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "tracestate");
        json_t *out = json_pack("{s:b, s:{s:s?, s:s?}}", "ok", 1, "output", "traceparent", tp,
                                "tracestate", ts);
        char *text = json_dumps(out, JSON_COMPACT);
        rc = reply(c, 200, "application/json", text, strlen(text));
        free(text);
        json_decref(out);
        return rc;
    }
    if (strcmp(url, "/mcp-asks") == 0)
        return mcp_asks(s, c, u);
    if (strcmp(url, "/raw") == 0)
        return reply(c, 200, "application/json; charset=utf-8", "{\"answer\": 42}", 14);
    if (strcmp(url, "/hang") == 0) {
        hang(s);
        return reply(c, 503, "text/plain", "stopping", 8);
    }
    if (strcmp(url, "/html") == 0)
        return reply(c, 200, "text/html; charset=utf-8", html, sizeof(html) - 1);
    if (strcmp(url, "/error") == 0)
        return reply(c, 500, "application/json", error, sizeof(error) - 1);
    if (strcmp(url, "/gateway") == 0)
        return reply(c, 502, "text/plain", "Bad Gateway", 11);
    if (strcmp(url, "/broken") == 0)
        return reply(c, 200, "application/json", "{\"ok\": tru", 10);
    if (strcmp(url, "/big") == 0) {
        size_t n = (size_t)2 << 20;
        char *body = malloc(n + 16);
        memcpy(body, "{\"blob\": \"", 10);
        memset(body + 10, 'a', n);
        memcpy(body + 10 + n, "\"}", 2);
        rc = reply(c, 200, "application/json", body, n + 12);
        free(body);
        return rc;
    }
    return reply(c, 404, "text/plain", "not found", 9);
}

struct skill_http *skill_http_start(void)
{
    struct skill_http *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->stop_cond, NULL);
    if (!mhd_upload_start(&s->http, answer, s)) {
        free(s);
        return NULL;
    }
    return s;
}

int skill_http_port(const struct skill_http *s)
{
    return s->http.port;
}

int skill_http_requests(struct skill_http *s)
{
    int n;

    pthread_mutex_lock(&s->lock);
    n = s->requests;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void skill_http_mcp_answers(struct skill_http *s, int *good, int *bad)
{
    pthread_mutex_lock(&s->lock);
    *good = s->mcp_good;
    *bad = s->mcp_bad;
    pthread_mutex_unlock(&s->lock);
}

void skill_http_stop(struct skill_http *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->stop_cond);
    pthread_mutex_unlock(&s->lock);
    mhd_upload_stop(&s->http);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->stop_cond);
    free(s);
}
