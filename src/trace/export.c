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

enum sampler {
    S_ALWAYS_ON,
    S_ALWAYS_OFF,
    S_RATIO,
    S_PB_ALWAYS_ON,
    S_PB_ALWAYS_OFF,
    S_PB_RATIO,
};

struct exporter {
    struct rein__otlp_target t; /* t.mu guards the ring; t.cv: a batch is full, or stop */
    enum sampler sampler;
    double ratio;

    pthread_t thread;
    struct rein_buf body; /* the request body, kept between batches (exporter thread) */
    struct rein__span_rec **ring;
    size_t cap, head, len;
    size_t batch_max;
    int64_t delay_ms;
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
        pthread_mutex_lock(&ex->t.mu);
        out->queued = ex->len;
        pthread_mutex_unlock(&ex->t.mu);
    }
    rein__metrics_stats(out);
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
        pthread_mutex_lock(&ex->t.mu);
        if (ex->len < ex->cap && !ex->t.stop) {
            ex->ring[(ex->head + ex->len) % ex->cap] = r;
            ex->len++;
            kept = true;
            /* Once per batch: the exporter is woken when a batch fills, not by every span
             * after that (while it sends or backs off, that was a wake-up per span). */
            if (ex->len == ex->batch_max)
                pthread_cond_signal(&ex->t.cv);
        }
        pthread_mutex_unlock(&ex->t.mu);
    }
    if (!kept) {
        atomic_fetch_add(&n_dropped, 1);
        rein__span_rec_free(r);
    }
    return kept;
}

/* Takes up to ex->batch_max spans off the ring into out; called with ex->t.mu held. */
static size_t take_batch(struct rein__span_rec **out)
{
    size_t n = ex->len < ex->batch_max ? ex->len : ex->batch_max;

    for (size_t i = 0; i < n; i++)
        out[i] = ex->ring[(ex->head + i) % ex->cap];
    ex->head = (ex->head + n) % ex->cap;
    ex->len -= n;
    return n;
}

static void export_batch(struct rein__span_rec **spans, size_t n)
{
    struct rein_buf *body = &ex->body;
    bool sent = false;

    rein_buf_reset(body);
    rein_err rc = ex->t.json ? rein__otlp_json_traces(body, &ex->t.resource, spans, n)
                             : rein__otlp_proto_traces(body, &ex->t.resource, spans, n);
    if (rc == REIN_OK)
        sent = rein__otlp_send(&ex->t, body);
    if (sent) {
        atomic_fetch_add(&n_exported, n);
    } else {
        atomic_fetch_add(&n_dropped, n);
        atomic_fetch_add(&n_batches_failed, 1);
        rein_log(REIN_LOG_WARN, WHERE, "%zu span(s) dropped: %s did not take them", n, ex->t.url);
    }
    /* A body far larger than usual is not kept (a batch of captured message contents). */
    if (body->len > ((size_t)4 << 20))
        rein_buf_release(body);
    rein__span_recs_free(spans, n);
}

static void *exporter_main(void *arg)
{
    struct rein__span_rec **batch = rein_calloc(ex->batch_max, sizeof(struct rein__span_rec *));
    bool ok = batch != NULL;

    (void)arg;
    for (;;) {
        struct timespec ts = rein__deadline_ts(CLOCK_REALTIME, ex->delay_ms);
        size_t n;

        pthread_mutex_lock(&ex->t.mu);
        while (!ex->t.stop && ex->len < ex->batch_max &&
               pthread_cond_timedwait(&ex->t.cv, &ex->t.mu, &ts) != ETIMEDOUT)
            ;
        bool stopping = ex->t.stop;
        n = ok ? take_batch(batch) : 0;
        pthread_mutex_unlock(&ex->t.mu);
        if (n > 0)
            export_batch(batch, n);
        if (stopping) {
            pthread_mutex_lock(&ex->t.mu);
            bool empty = ex->len == 0 || !ok || rein_now_ms() >= ex->t.stop_deadline_ms;
            pthread_mutex_unlock(&ex->t.mu);
            if (empty)
                break;
        }
    }
    rein_free(batch);
    rein_buf_release(&ex->body);
    return NULL;
}

/* ---- configuration ---------------------------------------------------------------------- */

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
    const char *v = rein__env("OTEL_TRACES_SAMPLER"), *arg = rein__env("OTEL_TRACES_SAMPLER_ARG");
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
    rein__otlp_target_release(&e->t);
    rein_free(e->ring);
    rein_free(e);
}

static rein_err configure(struct exporter *e, rein_error *err)
{
    long qsize, batch, delay;
    rein_err rc;

    if ((rc = rein__otlp_target_configure(&e->t, "TRACES", "/v1/traces", err)))
        return rc;
    if (!rein__env_long("OTEL_BSP_MAX_QUEUE_SIZE", 2048, 1 << 20, &qsize, err) ||
        !rein__env_long("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, 1 << 20, &batch, err) ||
        !rein__env_long("OTEL_BSP_SCHEDULE_DELAY", 5000, 3600000, &delay, err))
        return err ? err->code : REIN_EINVAL;
    rein_buf_init(&e->body, 0);
    e->cap = (size_t)qsize;
    e->batch_max = (size_t)(batch < qsize ? batch : qsize);
    e->delay_ms = delay;
    if ((rc = read_sampler(e, err)))
        return rc;
    if (!(e->ring = rein_calloc(e->cap, sizeof(struct rein__span_rec *))))
        return rein_error_set(err, REIN_ENOMEM, "out of memory setting up tracing");
    return REIN_OK;
}

rein_err rein_trace_setup(rein_error *err)
{
    struct exporter *e;
    const char *which = rein__env("OTEL_TRACES_EXPORTER");
    rein_err rc = REIN_OK;

    pthread_mutex_lock(&setup_mu);
    if (set_up)
        goto out;
    set_up = true;
    atomic_store(&capture, rein__env_true("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"));
    if (rein__env_true("OTEL_SDK_DISABLED") || (which && strcmp(which, "none") == 0) ||
        !rein__otlp_configured("TRACES"))
        goto out;
    if (!(e = rein_calloc(1, sizeof(*e)))) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory setting up tracing");
        goto out;
    }
    if ((rc = rein__curl_global_init(err)) || (rc = configure(e, err))) {
        exporter_free(e);
        goto out;
    }
    ex = e;
    if (pthread_create(&e->thread, NULL, exporter_main, NULL) != 0) {
        ex = NULL;
        exporter_free(e);
        rc = rein_error_set(err, REIN_EINTERNAL, "cannot start the span exporter thread");
        goto out;
    }
    atomic_store(&enabled, true);
    rein_log(REIN_LOG_INFO, WHERE, "exporting spans to %s (OTLP/HTTP %s)", e->t.url,
             e->t.json ? "JSON" : "protobuf");
out:
    pthread_mutex_unlock(&setup_mu);
    return rc;
}

void rein_trace_shutdown(int64_t timeout_ms)
{
    struct exporter *e;

    rein__metrics_shutdown(timeout_ms);
    pthread_mutex_lock(&setup_mu);
    e = ex;
    if (e) {
        atomic_store(&enabled, false);
        rein__otlp_stop(&e->t, timeout_ms);
        pthread_join(e->thread, NULL);
        /* Spans still queued (the deadline passed) are dropped and counted. */
        while (e->len > 0) {
            rein__span_rec_free(e->ring[e->head]);
            e->head = (e->head + 1) % e->cap;
            e->len--;
            atomic_fetch_add(&n_dropped, 1);
        }
        ex = NULL;
        exporter_free(e);
    }
    rein__span_pool_drain();
    set_up = false;
    pthread_mutex_unlock(&setup_mu);
}
