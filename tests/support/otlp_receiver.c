/*
 * The OTLP/HTTP collector of the tracing tests (otlp_receiver.h): real sockets on loopback,
 * each request body decoded with jansson as the OTLP/JSON mapping of opentelemetry-proto's
 * ExportTraceServiceRequest (resourceSpans[].scopeSpans[].spans[]).
 */
#include "otlp_receiver.h"
#include "core/internal.h"

#include "mhd_upload.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct otlp_receiver {
    struct mhd_upload_daemon http;
    char url[64];
    pthread_mutex_t lock;
    pthread_cond_t cond; /* spans arrived */
    json_t *spans;
    int requests;
    int fail_left;
    unsigned fail_status;
    char header_value[512];
    json_t *last_headers;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc;

    MHD_add_response_header(r, "Content-Type", "application/json");
    if (status == 429 || status == 503)
        MHD_add_response_header(r, "Retry-After", "0");
    rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

/* [{key, value: {stringValue|intValue|...}}] as {key: value}. */
static json_t *plain(json_t *attrs)
{
    json_t *o = json_object(), *a;
    size_t i;

    json_array_foreach(attrs, i, a)
    {
        json_t *v = json_object_get(a, "value");
        const char *k = json_string_value(json_object_get(a, "key"));
        const char *vk;
        json_t *vv;
        if (!k)
            continue;
        json_object_foreach(v, vk, vv)
        {
            json_object_set(o, k, vv);
            break;
        }
    }
    return o;
}

static int collect_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    json_object_set_new(cls, key, json_string(value));
    return MHD_YES;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *method,
                              const char *url, struct mhd_upload *u)
{
    struct otlp_receiver *r = cls;
    json_t *doc, *rs, *ss, *sp, *headers;
    size_t i, j, k;
    bool fail;
    unsigned status;

    if (strcmp(method, "POST") != 0)
        return reply(c, 405, "{}");
    headers = json_object();
    MHD_get_connection_values(c, MHD_HEADER_KIND, (MHD_KeyValueIterator)collect_header, headers);
    pthread_mutex_lock(&r->lock);
    r->requests++;
    json_decref(r->last_headers);
    r->last_headers = headers;
    fail = r->fail_left > 0;
    if (fail)
        r->fail_left--;
    status = r->fail_status;
    pthread_mutex_unlock(&r->lock);
    if (strcmp(url, "/v1/traces") != 0)
        return reply(c, 404, "{}");
    if (fail)
        return reply(c, status, "{}");
    doc = json_loadb(u->data ? u->data : "", u->len, 0, NULL);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return reply(c, 400, "{}");
    }
    pthread_mutex_lock(&r->lock);
    json_array_foreach(json_object_get(doc, "resourceSpans"), i, rs)
    {
        json_t *res = plain(json_object_get(json_object_get(rs, "resource"), "attributes"));
        json_array_foreach(json_object_get(rs, "scopeSpans"), j, ss)
        {
            json_array_foreach(json_object_get(ss, "spans"), k, sp)
            {
                json_t *copy = json_deep_copy(sp);
                json_object_set(copy, "resource", res);
                json_object_set_new(copy, "attrs", plain(json_object_get(sp, "attributes")));
                json_array_append_new(r->spans, copy);
            }
        }
        json_decref(res);
    }
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    json_decref(doc);
    return reply(c, 200, "{}");
}

struct otlp_receiver *otlp_start(void)
{
    struct otlp_receiver *r = calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    r->spans = json_array();
    r->fail_status = 503;
    if (!mhd_upload_start(&r->http, answer, r)) {
        json_decref(r->spans);
        free(r);
        return NULL;
    }
    snprintf(r->url, sizeof(r->url), "http://127.0.0.1:%d", r->http.port);
    return r;
}

int otlp_port(const struct otlp_receiver *r)
{
    return r->http.port;
}

const char *otlp_url(const struct otlp_receiver *r)
{
    return r->url;
}

void otlp_fail_next(struct otlp_receiver *r, int n, unsigned status)
{
    pthread_mutex_lock(&r->lock);
    r->fail_left = n;
    r->fail_status = status;
    pthread_mutex_unlock(&r->lock);
}

int otlp_requests(struct otlp_receiver *r)
{
    int n;

    pthread_mutex_lock(&r->lock);
    n = r->requests;
    pthread_mutex_unlock(&r->lock);
    return n;
}

bool otlp_wait_spans(struct otlp_receiver *r, size_t n, int timeout_ms)
{
    struct timespec until = rein__deadline_ts(CLOCK_REALTIME, timeout_ms);
    bool ok;

    pthread_mutex_lock(&r->lock);
    while (json_array_size(r->spans) < n && pthread_cond_timedwait(&r->cond, &r->lock, &until) == 0)
        ;
    ok = json_array_size(r->spans) >= n;
    pthread_mutex_unlock(&r->lock);
    return ok;
}

json_t *otlp_spans(struct otlp_receiver *r)
{
    json_t *copy;

    pthread_mutex_lock(&r->lock);
    copy = json_deep_copy(r->spans);
    pthread_mutex_unlock(&r->lock);
    return copy;
}

const char *otlp_last_header(struct otlp_receiver *r, const char *name)
{
    const char *k, *found = NULL;
    json_t *v;

    pthread_mutex_lock(&r->lock);
    json_object_foreach(r->last_headers, k, v)
    {
        if (strcasecmp(k, name) == 0) {
            snprintf(r->header_value, sizeof(r->header_value), "%s", json_string_value(v));
            found = r->header_value;
            break;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return found;
}

void otlp_stop(struct otlp_receiver *r)
{
    if (!r)
        return;
    mhd_upload_stop(&r->http);
    json_decref(r->spans);
    json_decref(r->last_headers);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cond);
    free(r);
}

json_t *otlp_span_named(json_t *spans, const char *name)
{
    json_t *s;
    size_t i;

    json_array_foreach(spans, i, s)
    {
        const char *n = json_string_value(json_object_get(s, "name"));
        if (n && strcmp(n, name) == 0)
            return s;
    }
    return NULL;
}

const char *otlp_attr_str(json_t *span, const char *key)
{
    return json_string_value(json_object_get(json_object_get(span, "attrs"), key));
}

long long otlp_attr_int(json_t *span, const char *key)
{
    json_t *v = json_object_get(json_object_get(span, "attrs"), key);

    if (json_is_integer(v))
        return json_integer_value(v);
    return v && json_string_value(v) ? strtoll(json_string_value(v), NULL, 10) : -1;
}

json_t *otlp_event_named(json_t *span, const char *name)
{
    json_t *ev;
    size_t i;

    json_array_foreach(json_object_get(span, "events"), i, ev)
    {
        const char *n = json_string_value(json_object_get(ev, "name"));
        if (n && strcmp(n, name) == 0)
            return ev;
    }
    return NULL;
}

json_t *otlp_event_attr(json_t *ev, const char *key)
{
    json_t *a;
    size_t i;

    json_array_foreach(json_object_get(ev, "attributes"), i, a)
    {
        const char *k = json_string_value(json_object_get(a, "key"));
        if (k && strcmp(k, key) == 0)
            return json_object_get(a, "value");
    }
    return NULL;
}
