/*
 * What the span and metric exporters share (trace_int.h): reading an OTLP/HTTP destination
 * from the OpenTelemetry environment variables (endpoint, protocol, headers, timeout, the
 * resource), and sending one request body to it with the OTLP/HTTP specification's retries:
 * 429, 502, 503 and 504 (or a collector that cannot be reached) are tried again with
 * exponential backoff that honours Retry-After, anything else is given up.
 */
#include "trace_int.h"

#include <rein/version.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../core/internal.h"

#define WHERE "trace/export"

#define MAX_RETRIES    4
#define BACKOFF_MS     500
#define BACKOFF_MAX_MS 8000

/* ---- the environment -------------------------------------------------------------------- */

const char *rein__env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

bool rein__env_true(const char *name)
{
    const char *v = rein__env(name);
    return v && strcasecmp(v, "true") == 0;
}

bool rein__env_long(const char *name, long def, long max, long *out, rein_error *err)
{
    const char *v = rein__env(name);
    char *end;
    long n;

    *out = def;
    if (!v)
        return true;
    errno = 0;
    n = strtol(v, &end, 10);
    if (errno || *end || end == v || n <= 0 || n > max) {
        rein_error_set(err, REIN_EINVAL, "%s=\"%s\" is not a whole number from 1 to %ld", name, v,
                       max);
        return false;
    }
    *out = n;
    return true;
}

/* Percent-decodes [s, s+n) (W3C Baggage octets, as the OTLP exporter variables use); new
 * string, NULL when memory is exhausted. */
static char *pct_decode(const char *s, size_t n)
{
    char *out = rein_malloc(n + 1), *o = out;

    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && rein__hex_digit(s[i + 1]) >= 0 &&
            rein__hex_digit(s[i + 2]) >= 0) {
            *o++ = (char)(rein__hex_digit(s[i + 1]) << 4 | rein__hex_digit(s[i + 2]));
            i += 2;
        } else {
            *o++ = s[i];
        }
    }
    *o = '\0';
    return out;
}

static void trim(const char **s, size_t *n)
{
    while (*n > 0 && isspace((unsigned char)**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && isspace((unsigned char)(*s)[*n - 1]))
        (*n)--;
}

/*
 * Walks a "key=value,key=value" list (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES),
 * calling fn with each decoded pair. REIN_EINVAL names the variable for a member without '=';
 * fn returns false when memory is exhausted.
 */
static rein_err each_pair(const char *var, const char *list,
                          bool (*fn)(void *ud, const char *k, const char *v), void *ud,
                          rein_error *err)
{
    const char *p = list;

    while (p && *p) {
        const char *end = strchr(p, ','), *eq;
        size_t n = end ? (size_t)(end - p) : strlen(p), kn, vn;
        trim(&p, &n);
        if (n > 0) {
            eq = memchr(p, '=', n);
            if (!eq || eq == p)
                return rein_error_set(err, REIN_EINVAL, "%s: \"%.*s\" is not key=value", var,
                                      (int)n, p);
            const char *k = p, *v = eq + 1;
            kn = (size_t)(eq - p);
            vn = n - kn - 1;
            trim(&k, &kn);
            trim(&v, &vn);
            char *dk = pct_decode(k, kn), *dv = pct_decode(v, vn);
            bool ok = dk && dv && fn(ud, dk, dv);
            rein_free(dk);
            rein_free(dv);
            if (!ok)
                return rein_error_set(err, REIN_ENOMEM, "out of memory reading %s", var);
        }
        p = end ? end + 1 : NULL;
    }
    return REIN_OK;
}

static bool add_header(void *ud, const char *k, const char *v)
{
    struct rein__otlp_target *t = ud;
    char *line;
    struct curl_slist *next;

    if (t->nheaders == REIN__OTLP_HEADERS_MAX)
        return true; /* more than any collector needs; the rest are ignored */
    if (!(line = rein_asprintf("%s: %s", k, v)))
        return false;
    next = curl_slist_append(t->headers, line);
    rein_free(line);
    if (!next)
        return false;
    t->headers = next;
    t->nheaders++;
    return true;
}

/* Resource attribute keys are owned by the target (attribute keys are otherwise borrowed). */
static bool add_resource(void *ud, const char *k, const char *v)
{
    struct rein__otlp_target *t = ud;
    char *key = rein_strdup(k);

    if (key && rein__attrs_add_str(&t->resource.attrs, key, v, strlen(v)))
        return true;
    rein_free(key);
    return false;
}

/* OTEL_RESOURCE_ATTRIBUTES' members; its service.name yields to OTEL_SERVICE_NAME (SDK
 * environment variables specification). */
static bool add_listed_resource(void *ud, const char *k, const char *v)
{
    if (strcmp(k, "service.name") == 0 && rein__env("OTEL_SERVICE_NAME"))
        return true;
    return add_resource(ud, k, v);
}

static bool resource_has(const struct rein__resource *r, const char *key)
{
    for (size_t i = 0; i < r->attrs.n; i++)
        if (strcmp(r->attrs.v[i].key, key) == 0)
            return true;
    return false;
}

/* OTEL_EXPORTER_OTLP_<SIGNAL>_<what>, or the variable for every signal when that is unset. */
static const char *signal_env(const char *signal, const char *what)
{
    char name[96];
    const char *v;

    snprintf(name, sizeof(name), "OTEL_EXPORTER_OTLP_%s_%s", signal, what);
    if ((v = rein__env(name)))
        return v;
    snprintf(name, sizeof(name), "OTEL_EXPORTER_OTLP_%s", what);
    return rein__env(name);
}

bool rein__otlp_configured(const char *signal)
{
    char name[96];

    snprintf(name, sizeof(name), "OTEL_EXPORTER_OTLP_%s_ENDPOINT", signal);
    return rein__env(name) || rein__env("OTEL_EXPORTER_OTLP_ENDPOINT");
}

/* The endpoint: the signal's variable as it is, else the base one with path appended. */
static char *signal_url(const char *signal, const char *path)
{
    char name[96];
    const char *own, *base = rein__env("OTEL_EXPORTER_OTLP_ENDPOINT");
    size_t n;

    snprintf(name, sizeof(name), "OTEL_EXPORTER_OTLP_%s_ENDPOINT", signal);
    if ((own = rein__env(name)))
        return rein_strdup(own);
    if (!base)
        return NULL;
    n = strlen(base);
    return rein_asprintf("%.*s%s", (int)(n > 0 && base[n - 1] == '/' ? n - 1 : n), base, path);
}

static rein_err read_protocol(struct rein__otlp_target *t, const char *signal, rein_error *err)
{
    char name[96];
    const char *proto = signal_env(signal, "PROTOCOL");

    snprintf(name, sizeof(name), "OTEL_EXPORTER_OTLP_%s_PROTOCOL", signal);
    /* http/protobuf is the specification's default; a build without protobuf (see
     * cmake/ReinOtlpProto.cmake) defaults to http/json instead. */
    if (!proto)
        proto = rein__otlp_proto_available() ? "http/protobuf" : "http/json";
    if (strcmp(proto, "http/json") == 0)
        t->json = true;
    else if (strcmp(proto, "http/protobuf") != 0 || !rein__otlp_proto_available())
        return rein_error_set(
            err, REIN_EINVAL, "%s=\"%s\": rein exports %s (grpc is not supported)",
            rein__env(name) ? name : "OTEL_EXPORTER_OTLP_PROTOCOL", proto,
            rein__otlp_proto_available() ? "http/protobuf and http/json"
                                         : "http/json only: it was built without protobuf "
                                           "(REIN_OTLP_PROTOBUF=OFF)");
    return REIN_OK;
}

static rein_err read_resource(struct rein__otlp_target *t, rein_error *err)
{
    rein_err rc = REIN_OK;

    if (rein__env("OTEL_SERVICE_NAME"))
        rc =
            add_resource(t, "service.name", rein__env("OTEL_SERVICE_NAME")) ? REIN_OK : REIN_ENOMEM;
    if (!rc)
        rc = each_pair("OTEL_RESOURCE_ATTRIBUTES", rein__env("OTEL_RESOURCE_ATTRIBUTES"),
                       add_listed_resource, t, err);
    if (!rc && !resource_has(&t->resource, "service.name"))
        rc = add_resource(t, "service.name", "rein") ? REIN_OK : REIN_ENOMEM;
    if (!rc)
        rc = add_resource(t, "telemetry.sdk.name", "rein") &&
                     add_resource(t, "telemetry.sdk.language", "c") &&
                     add_resource(t, "telemetry.sdk.version", REIN_VERSION_STRING)
                 ? REIN_OK
                 : REIN_ENOMEM;
    return rc;
}

rein_err rein__otlp_target_configure(struct rein__otlp_target *t, const char *signal,
                                     const char *path, rein_error *err)
{
    char tname[96], hname[96];
    long timeout;
    rein_err rc;

    snprintf(tname, sizeof(tname), "OTEL_EXPORTER_OTLP_%s_TIMEOUT", signal);
    snprintf(hname, sizeof(hname), "OTEL_EXPORTER_OTLP_%s_HEADERS", signal);
    if ((rc = read_protocol(t, signal, err)))
        return rc;
    if (!rein__env_long(tname, 0, 600000, &timeout, err) ||
        (!timeout && !rein__env_long("OTEL_EXPORTER_OTLP_TIMEOUT", 10000, 600000, &timeout, err)))
        return err ? err->code : REIN_EINVAL;
    t->timeout_ms = timeout;
    if (!(t->url = signal_url(signal, path)) ||
        !add_header(t, "Content-Type", t->json ? "application/json" : "application/x-protobuf"))
        return rein_error_set(err, REIN_ENOMEM, "out of memory setting up OTLP export");
    rc = each_pair("OTEL_EXPORTER_OTLP_HEADERS", rein__env("OTEL_EXPORTER_OTLP_HEADERS"),
                   add_header, t, err);
    if (!rc)
        rc = each_pair(hname, rein__env(hname), add_header, t, err);
    if (!rc)
        rc = read_resource(t, err);
    if (rc == REIN_ENOMEM && err && err->code != REIN_ENOMEM)
        rein_error_set(err, REIN_ENOMEM, "out of memory setting up OTLP export");
    if (!rc && !(t->easy = curl_easy_init()))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory setting up OTLP export");
    if (!rc) {
        pthread_mutex_init(&t->mu, NULL);
        pthread_cond_init(&t->cv, NULL);
        t->sync_ready = true;
    }
    return rc;
}

void rein__otlp_target_release(struct rein__otlp_target *t)
{
    rein_free(t->url);
    curl_slist_free_all(t->headers);
    if (t->easy)
        curl_easy_cleanup(t->easy);
    for (size_t i = 0; i < t->resource.attrs.n; i++)
        rein_free((char *)t->resource.attrs.v[i].key);
    rein__attrs_release(&t->resource.attrs);
    if (t->sync_ready) {
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
    }
    memset(t, 0, sizeof(*t));
}

void rein__otlp_stop(struct rein__otlp_target *t, int64_t timeout_ms)
{
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    t->stop_deadline_ms = rein_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* ---- sending ---------------------------------------------------------------------------- */

static size_t discard(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    (void)ptr;
    (void)userdata;
    return size * nmemb;
}

/* Retry-After in seconds (RFC 9110 10.2.3; an HTTP date is read as "no advice"). */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    int64_t *retry_ms = userdata;
    size_t n = size * nmemb;

    if (n > 12 && strncasecmp(ptr, "Retry-After:", 12) == 0) {
        char *end;
        long v = strtol(ptr + 12, &end, 10);
        if (end != ptr + 12 && v >= 0 && v < 3600)
            *retry_ms = (int64_t)v * 1000;
    }
    return n;
}

enum send_outcome { SENT, RETRY, GIVE_UP };

static enum send_outcome post(struct rein__otlp_target *t, const struct rein_buf *body,
                              int64_t *retry_ms)
{
    CURL *easy = t->easy;
    long status = 0, timeout = t->timeout_ms;
    CURLcode cc;

    /* Once stopping, no request outlives the deadline rein_trace_shutdown() was given. */
    pthread_mutex_lock(&t->mu);
    if (t->stop) {
        int64_t left = t->stop_deadline_ms - rein_now_ms();
        timeout = left < 1 ? 1 : left < timeout ? (long)left : timeout;
    }
    pthread_mutex_unlock(&t->mu);
    *retry_ms = -1;
    curl_easy_setopt(easy, CURLOPT_URL, t->url);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body->ptr);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, timeout);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, retry_ms);
    cc = curl_easy_perform(easy);
    if (cc != CURLE_OK) {
        rein_log(REIN_LOG_DEBUG, WHERE, "%s: %s", t->url, curl_easy_strerror(cc));
        return RETRY; /* unreachable or timed out: transient as far as rein can tell */
    }
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300)
        return SENT;
    rein_log(REIN_LOG_DEBUG, WHERE, "%s answered %ld", t->url, status);
    if (status == 429 || status == 502 || status == 503 || status == 504)
        return RETRY;
    return GIVE_UP;
}

bool rein__otlp_pause(struct rein__otlp_target *t, int64_t ms)
{
    struct timespec ts = rein__deadline_ts(CLOCK_REALTIME, ms);
    bool stopping;

    pthread_mutex_lock(&t->mu);
    while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &ts) != ETIMEDOUT)
        ;
    stopping = t->stop;
    pthread_mutex_unlock(&t->mu);
    return !stopping;
}

bool rein__otlp_send(struct rein__otlp_target *t, const struct rein_buf *body)
{
    int64_t retry_ms, backoff = BACKOFF_MS;

    for (int attempt = 0;; attempt++) {
        enum send_outcome out = post(t, body, &retry_ms);
        if (out != RETRY || attempt == MAX_RETRIES)
            return out == SENT;
        int64_t wait = retry_ms >= 0 ? retry_ms : backoff;
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
        pthread_mutex_lock(&t->mu);
        bool late = t->stop && rein_now_ms() + wait > t->stop_deadline_ms;
        pthread_mutex_unlock(&t->mu);
        if (late || (!rein__otlp_pause(t, wait) && rein_now_ms() >= t->stop_deadline_ms))
            return false;
    }
}
