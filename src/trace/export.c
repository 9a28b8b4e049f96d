/*
 * The span exporter (include/rein/trace.h): configuration from the OpenTelemetry environment
 * variables, the sampler, and a background thread that sends finished spans to an OTLP/HTTP
 * collector in batches.
 *
 * Batches are encoded as OTLP/HTTP protobuf (otlp_proto.c) or JSON (otlp_json.c).
 *
 * The hot path only appends a pointer to a bounded ring under a mutex (rein__trace_enqueue);
 * a full ring drops the span and counts it, so a turn never waits for a collector that is
 * slow or gone. The thread sends a batch when OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans wait or
 * OTEL_BSP_SCHEDULE_DELAY has passed, retries a batch the collector answered 429, 502, 503 or
 * 504 (or could not be reached) with exponential backoff that honours Retry-After, and gives
 * it up, counted as dropped, after its retries (OTLP/HTTP specification, "Failures").
 */
#include "trace_int.h"

#include <rein/version.h>

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/internal.h"

#define WHERE "trace/export"

#define MAX_RETRIES    4
#define BACKOFF_MS     500
#define BACKOFF_MAX_MS 8000
#define HEADERS_MAX    32

enum sampler {
    S_ALWAYS_ON,
    S_ALWAYS_OFF,
    S_RATIO,
    S_PB_ALWAYS_ON,
    S_PB_ALWAYS_OFF,
    S_PB_RATIO,
};

struct exporter {
    char *url;
    bool json;
    long timeout_ms;
    char *headers[HEADERS_MAX];
    size_t nheaders;
    enum sampler sampler;
    double ratio;
    struct rein__resource resource;

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* spans arrived, a batch is full, or stop */
    struct rein__span_rec **ring;
    size_t cap, head, len;
    size_t batch_max;
    int64_t delay_ms;
    bool stop;
    int64_t stop_deadline_ms; /* after stop: give up sending past this */
};

static atomic_bool enabled;
static atomic_bool capture;
static atomic_uint_fast64_t n_ended, n_exported, n_dropped, n_batches_failed;
static struct exporter *ex;
static pthread_mutex_t setup_mu = PTHREAD_MUTEX_INITIALIZER;
static bool set_up;

bool rein_trace_enabled(void)
{
    return atomic_load_explicit(&enabled, memory_order_relaxed);
}

bool rein_trace_capture_content(void)
{
    return atomic_load_explicit(&capture, memory_order_relaxed);
}

void rein_trace_stats(struct rein_trace_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->ended = atomic_load(&n_ended);
    out->exported = atomic_load(&n_exported);
    out->dropped = atomic_load(&n_dropped);
    out->batches_failed = atomic_load(&n_batches_failed);
    if (ex) {
        pthread_mutex_lock(&ex->mu);
        out->queued = ex->len;
        pthread_mutex_unlock(&ex->mu);
    }
}

/* ---- sampler ---------------------------------------------------------------------------- */

/* TraceIdRatioBased: the trace id's last 14 hex digits (56 bits, random in W3C level 2) as a
 * fraction of 2^56, so every process decides the same for one trace. */
static bool ratio_keeps(const char *trace_id, double ratio)
{
    uint64_t v = 0;

    if (ratio >= 1.0)
        return true;
    if (ratio <= 0.0)
        return false;
    for (size_t i = REIN_TRACE_ID_LEN - 14; i < REIN_TRACE_ID_LEN; i++)
        v = v << 4 | (uint64_t)rein__hex_digit(trace_id[i]);
    return (double)v < ratio * (double)(UINT64_C(1) << 56);
}

bool rein__trace_sample(const struct rein_trace_context *parent, const char *trace_id)
{
    if (!ex)
        return false;
    switch (ex->sampler) {
    case S_ALWAYS_ON:
        return true;
    case S_ALWAYS_OFF:
        return false;
    case S_RATIO:
        return ratio_keeps(trace_id, ex->ratio);
    case S_PB_ALWAYS_ON:
        return parent ? (parent->flags & REIN_TRACE_SAMPLED) != 0 : true;
    case S_PB_ALWAYS_OFF:
        return parent ? (parent->flags & REIN_TRACE_SAMPLED) != 0 : false;
    case S_PB_RATIO:
        return parent ? (parent->flags & REIN_TRACE_SAMPLED) != 0
                      : ratio_keeps(trace_id, ex->ratio);
    }
    return false;
}

/* ---- queue ------------------------------------------------------------------------------ */

bool rein__trace_enqueue(struct rein__span_rec *r)
{
    bool kept = false;

    atomic_fetch_add(&n_ended, 1);
    if (ex) {
        pthread_mutex_lock(&ex->mu);
        if (ex->len < ex->cap && !ex->stop) {
            ex->ring[(ex->head + ex->len) % ex->cap] = r;
            ex->len++;
            kept = true;
            /* Once per batch: the exporter is woken when a batch fills, not by every span
             * after that (while it sends or backs off, that was a wake-up per span). */
            if (ex->len == ex->batch_max)
                pthread_cond_signal(&ex->cv);
        }
        pthread_mutex_unlock(&ex->mu);
    }
    if (!kept) {
        atomic_fetch_add(&n_dropped, 1);
        rein__span_rec_free(r);
    }
    return kept;
}

/* Takes up to ex->batch_max spans off the ring into out; called with ex->mu held. */
static size_t take_batch(struct rein__span_rec **out)
{
    size_t n = ex->len < ex->batch_max ? ex->len : ex->batch_max;

    for (size_t i = 0; i < n; i++)
        out[i] = ex->ring[(ex->head + i) % ex->cap];
    ex->head = (ex->head + n) % ex->cap;
    ex->len -= n;
    return n;
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

static enum send_outcome post(CURL *easy, struct curl_slist *headers, const struct rein_buf *body,
                              int64_t *retry_ms)
{
    long status = 0;
    CURLcode cc;

    *retry_ms = -1;
    curl_easy_setopt(easy, CURLOPT_URL, ex->url);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body->ptr);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, ex->timeout_ms);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, ex->timeout_ms);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, retry_ms);
    cc = curl_easy_perform(easy);
    if (cc != CURLE_OK) {
        rein_log(REIN_LOG_DEBUG, WHERE, "%s: %s", ex->url, curl_easy_strerror(cc));
        return RETRY; /* unreachable or timed out: transient as far as rein can tell */
    }
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300)
        return SENT;
    rein_log(REIN_LOG_DEBUG, WHERE, "%s answered %ld", ex->url, status);
    if (status == 429 || status == 502 || status == 503 || status == 504)
        return RETRY;
    return GIVE_UP;
}

/* Waits up to ms or until stop; false when stopping cut the wait short. Holds no lock. */
static bool pause_ms(int64_t ms)
{
    struct timespec ts;
    bool stopping;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&ex->mu);
    while (!ex->stop && pthread_cond_timedwait(&ex->cv, &ex->mu, &ts) != ETIMEDOUT)
        ;
    stopping = ex->stop;
    pthread_mutex_unlock(&ex->mu);
    return !stopping;
}

static void export_batch(CURL *easy, struct curl_slist *headers, struct rein__span_rec **spans,
                         size_t n)
{
    struct rein_buf body;
    int64_t retry_ms, backoff = BACKOFF_MS;
    enum send_outcome out = GIVE_UP;

    rein_buf_init(&body, 0);
    rein_err rc = ex->json ? rein__otlp_json_traces(&body, &ex->resource, spans, n)
                           : rein__otlp_proto_traces(&body, &ex->resource, spans, n);
    if (rc == REIN_OK) {
        for (int attempt = 0;; attempt++) {
            out = post(easy, headers, &body, &retry_ms);
            if (out != RETRY || attempt == MAX_RETRIES)
                break;
            int64_t wait = retry_ms >= 0 ? retry_ms : backoff;
            backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
            pthread_mutex_lock(&ex->mu);
            bool late = ex->stop && rein_now_ms() + wait > ex->stop_deadline_ms;
            pthread_mutex_unlock(&ex->mu);
            if (late || (!pause_ms(wait) && rein_now_ms() >= ex->stop_deadline_ms))
                break;
        }
    }
    if (out == SENT) {
        atomic_fetch_add(&n_exported, n);
    } else {
        atomic_fetch_add(&n_dropped, n);
        atomic_fetch_add(&n_batches_failed, 1);
        rein_log(REIN_LOG_WARN, WHERE, "%zu span(s) dropped: %s did not take them", n, ex->url);
    }
    rein_buf_release(&body);
    for (size_t i = 0; i < n; i++)
        rein__span_rec_free(spans[i]);
}

static void *exporter_main(void *arg)
{
    struct rein__span_rec **batch = rein_calloc(ex->batch_max, sizeof(struct rein__span_rec *));
    CURL *easy = curl_easy_init();
    struct curl_slist *headers = NULL;
    bool ok = batch && easy;

    (void)arg;
    for (size_t i = 0; ok && i < ex->nheaders; i++) {
        struct curl_slist *next = curl_slist_append(headers, ex->headers[i]);
        ok = next != NULL;
        headers = next ? next : headers;
    }
    for (;;) {
        struct timespec ts;
        size_t n;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += ex->delay_ms / 1000;
        ts.tv_nsec += (ex->delay_ms % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&ex->mu);
        while (!ex->stop && ex->len < ex->batch_max &&
               pthread_cond_timedwait(&ex->cv, &ex->mu, &ts) != ETIMEDOUT)
            ;
        bool stopping = ex->stop;
        n = ok ? take_batch(batch) : 0;
        pthread_mutex_unlock(&ex->mu);
        if (n > 0)
            export_batch(easy, headers, batch, n);
        if (stopping) {
            pthread_mutex_lock(&ex->mu);
            bool empty = ex->len == 0 || !ok || rein_now_ms() >= ex->stop_deadline_ms;
            pthread_mutex_unlock(&ex->mu);
            if (empty)
                break;
        }
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(easy);
    rein_free(batch);
    return NULL;
}

/* ---- configuration ---------------------------------------------------------------------- */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

static bool env_true(const char *name)
{
    const char *v = env(name);
    return v && strcasecmp(v, "true") == 0;
}

/* A positive integer variable, or def when unset; false when set to anything else. */
static bool env_long(const char *name, long def, long max, long *out, rein_error *err)
{
    const char *v = env(name);
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
    struct exporter *e = ud;

    if (e->nheaders == HEADERS_MAX)
        return true; /* more than any collector needs; the rest are ignored */
    e->headers[e->nheaders] = rein_asprintf("%s: %s", k, v);
    return e->headers[e->nheaders++] != NULL;
}

/* Resource attribute keys are owned by the exporter (attribute keys are otherwise borrowed). */
static bool add_resource(void *ud, const char *k, const char *v)
{
    struct exporter *e = ud;
    char *key = rein_strdup(k);

    if (key && rein__attrs_add_str(&e->resource.attrs, key, v, strlen(v)))
        return true;
    rein_free(key);
    return false;
}

/* OTEL_RESOURCE_ATTRIBUTES' members; its service.name yields to OTEL_SERVICE_NAME (SDK
 * environment variables specification). */
static bool add_listed_resource(void *ud, const char *k, const char *v)
{
    if (strcmp(k, "service.name") == 0 && env("OTEL_SERVICE_NAME"))
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

static rein_err read_sampler(struct exporter *e, rein_error *err)
{
    static const struct {
        const char *name;
        enum sampler s;
    } names[] = {{"always_on", S_ALWAYS_ON},
                 {"always_off", S_ALWAYS_OFF},
                 {"traceidratio", S_RATIO},
                 {"parentbased_always_on", S_PB_ALWAYS_ON},
                 {"parentbased_always_off", S_PB_ALWAYS_OFF},
                 {"parentbased_traceidratio", S_PB_RATIO}};
    const char *v = env("OTEL_TRACES_SAMPLER"), *arg = env("OTEL_TRACES_SAMPLER_ARG");
    size_t i;

    e->sampler = S_PB_ALWAYS_ON;
    e->ratio = 1.0;
    if (!v)
        return REIN_OK;
    for (i = 0; i < REIN_ARRAY_SIZE(names); i++)
        if (strcmp(v, names[i].name) == 0)
            break;
    if (i == REIN_ARRAY_SIZE(names))
        return rein_error_set(err, REIN_EINVAL,
                              "OTEL_TRACES_SAMPLER=\"%s\" is not one rein knows (always_on, "
                              "always_off, traceidratio, parentbased_always_on, "
                              "parentbased_always_off, parentbased_traceidratio)",
                              v);
    e->sampler = names[i].s;
    if (arg && (e->sampler == S_RATIO || e->sampler == S_PB_RATIO)) {
        char *end;
        errno = 0;
        double r = strtod(arg, &end);
        if (errno || *end || end == arg || !(r >= 0.0 && r <= 1.0))
            return rein_error_set(err, REIN_EINVAL,
                                  "OTEL_TRACES_SAMPLER_ARG=\"%s\" is not a ratio from 0 to 1", arg);
        e->ratio = r;
    }
    return REIN_OK;
}

static void exporter_free(struct exporter *e)
{
    if (!e)
        return;
    rein_free(e->url);
    for (size_t i = 0; i < e->nheaders; i++)
        rein_free(e->headers[i]);
    for (size_t i = 0; i < e->resource.attrs.n; i++)
        rein_free((char *)e->resource.attrs.v[i].key);
    rein__attrs_release(&e->resource.attrs);
    rein_free(e->ring);
    rein_free(e);
}

/* The endpoint: the traces variable as it is, else the base one with /v1/traces appended. */
static char *traces_url(void)
{
    const char *t = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
               *base = env("OTEL_EXPORTER_OTLP_ENDPOINT");
    size_t n;

    if (t)
        return rein_strdup(t);
    if (!base)
        return NULL;
    n = strlen(base);
    return rein_asprintf("%.*s/v1/traces", (int)(n > 0 && base[n - 1] == '/' ? n - 1 : n), base);
}

static rein_err configure(struct exporter *e, rein_error *err)
{
    const char *proto = env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
    long timeout, qsize, batch, delay;
    rein_err rc;

    if (!proto)
        proto = env("OTEL_EXPORTER_OTLP_PROTOCOL");
    /* http/protobuf is the specification's default; a build without protobuf (see
     * cmake/ReinOtlpProto.cmake) defaults to http/json instead. */
    if (!proto)
        proto = rein__otlp_proto_available() ? "http/protobuf" : "http/json";
    if (strcmp(proto, "http/json") == 0)
        e->json = true;
    else if (strcmp(proto, "http/protobuf") != 0 || !rein__otlp_proto_available())
        return rein_error_set(err, REIN_EINVAL,
                              "OTEL_EXPORTER_OTLP_PROTOCOL=\"%s\": rein exports %s (grpc is not "
                              "supported)",
                              proto,
                              rein__otlp_proto_available()
                                  ? "http/protobuf and http/json"
                                  : "http/json only: it was built without protobuf "
                                    "(REIN_OTLP_PROTOBUF=OFF)");
    if (!env_long("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", 0, 600000, &timeout, err) ||
        (!timeout && !env_long("OTEL_EXPORTER_OTLP_TIMEOUT", 10000, 600000, &timeout, err)) ||
        !env_long("OTEL_BSP_MAX_QUEUE_SIZE", 2048, 1 << 20, &qsize, err) ||
        !env_long("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, 1 << 20, &batch, err) ||
        !env_long("OTEL_BSP_SCHEDULE_DELAY", 5000, 3600000, &delay, err))
        return err ? err->code : REIN_EINVAL;
    e->timeout_ms = timeout;
    e->cap = (size_t)qsize;
    e->batch_max = (size_t)(batch < qsize ? batch : qsize);
    e->delay_ms = delay;
    if ((rc = read_sampler(e, err)))
        return rc;
    if (!(e->url = traces_url()) ||
        !(e->ring = rein_calloc(e->cap, sizeof(struct rein__span_rec *))))
        return rein_error_set(err, REIN_ENOMEM, "out of memory setting up tracing");
    if (!add_header(e, "Content-Type", e->json ? "application/json" : "application/x-protobuf"))
        return rein_error_set(err, REIN_ENOMEM, "out of memory setting up tracing");
    rc = each_pair("OTEL_EXPORTER_OTLP_HEADERS", env("OTEL_EXPORTER_OTLP_HEADERS"), add_header, e,
                   err);
    if (!rc)
        rc = each_pair("OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                       env("OTEL_EXPORTER_OTLP_TRACES_HEADERS"), add_header, e, err);
    if (!rc && env("OTEL_SERVICE_NAME"))
        rc = add_resource(e, "service.name", env("OTEL_SERVICE_NAME")) ? REIN_OK : REIN_ENOMEM;
    if (!rc)
        rc = each_pair("OTEL_RESOURCE_ATTRIBUTES", env("OTEL_RESOURCE_ATTRIBUTES"),
                       add_listed_resource, e, err);
    if (!rc && !resource_has(&e->resource, "service.name"))
        rc = add_resource(e, "service.name", "rein") ? REIN_OK : REIN_ENOMEM;
    if (!rc)
        rc = add_resource(e, "telemetry.sdk.name", "rein") &&
                     add_resource(e, "telemetry.sdk.language", "c") &&
                     add_resource(e, "telemetry.sdk.version", REIN_VERSION_STRING)
                 ? REIN_OK
                 : REIN_ENOMEM;
    if (rc == REIN_ENOMEM && err && err->code != REIN_ENOMEM)
        rein_error_set(err, REIN_ENOMEM, "out of memory setting up tracing");
    return rc;
}

rein_err rein_trace_setup(rein_error *err)
{
    struct exporter *e;
    rein_err rc = REIN_OK;

    pthread_mutex_lock(&setup_mu);
    if (set_up)
        goto out;
    set_up = true;
    atomic_store(&capture, env_true("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"));
    if (env_true("OTEL_SDK_DISABLED") ||
        (env("OTEL_TRACES_EXPORTER") && strcmp(env("OTEL_TRACES_EXPORTER"), "none") == 0) ||
        (!env("OTEL_EXPORTER_OTLP_ENDPOINT") && !env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")))
        goto out;
    if (!(e = rein_calloc(1, sizeof(*e)))) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory setting up tracing");
        goto out;
    }
    if ((rc = configure(e, err)) || (rc = rein__curl_global_init(err))) {
        exporter_free(e);
        goto out;
    }
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    ex = e;
    if (pthread_create(&e->thread, NULL, exporter_main, NULL) != 0) {
        ex = NULL;
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        exporter_free(e);
        rc = rein_error_set(err, REIN_EINTERNAL, "cannot start the span exporter thread");
        goto out;
    }
    atomic_store(&enabled, true);
    rein_log(REIN_LOG_INFO, WHERE, "exporting spans to %s (OTLP/HTTP %s)", e->url,
             e->json ? "JSON" : "protobuf");
out:
    pthread_mutex_unlock(&setup_mu);
    return rc;
}

void rein_trace_shutdown(int64_t timeout_ms)
{
    struct exporter *e;

    pthread_mutex_lock(&setup_mu);
    e = ex;
    if (e) {
        atomic_store(&enabled, false);
        pthread_mutex_lock(&e->mu);
        e->stop = true;
        e->stop_deadline_ms = rein_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
        /* Spans still queued (the deadline passed) are dropped and counted. */
        while (e->len > 0) {
            rein__span_rec_free(e->ring[e->head]);
            e->head = (e->head + 1) % e->cap;
            e->len--;
            atomic_fetch_add(&n_dropped, 1);
        }
        ex = NULL;
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        exporter_free(e);
    }
    set_up = false;
    pthread_mutex_unlock(&setup_mu);
}
