/*
 * The metric exporter (include/rein/trace.h): a background thread that, every
 * OTEL_METRIC_EXPORT_INTERVAL, asks the registered collect function for the metrics' current
 * cumulative state and sends it to an OTLP/HTTP collector (OTLP specification, "Metrics SDK:
 * periodic exporting MetricReader").
 *
 * Nothing here touches the path that records a value: the registry keeps its own totals, and
 * a collection only copies them (under the registry's lock, for as long as a copy of a few
 * hundred series takes) into an arena that lives for one export. With cumulative temporality
 * a collection that a collector does not take loses nothing: the next carries the same
 * totals, so a failed export is retried within its interval and then counted, not kept.
 */
#include "trace_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../core/internal.h"

#define WHERE "trace/metrics"

struct mexporter {
    struct rein__otlp_target t; /* t.cv wakes the thread to stop */
    rein_otel_collect_fn collect;
    void *userdata;
    int64_t interval_ms;
    pthread_t thread;
};

static struct mexporter *mx;
static pthread_mutex_t msetup_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool menabled;
static atomic_uint_fast64_t n_sent, n_failed;

bool rein_trace_metrics_enabled(void)
{
    return atomic_load_explicit(&menabled, memory_order_relaxed);
}

void rein__metrics_stats(struct rein_trace_stats *out)
{
    out->metric_exports = atomic_load(&n_sent);
    out->metric_exports_failed = atomic_load(&n_failed);
}

static void export_once(struct mexporter *m)
{
    rein_arena *ar = rein_arena_new(0);
    struct rein_otel_metric *list = NULL;
    size_t n = 0;
    struct rein_buf body;
    bool sent = false;
    rein_err rc = ar ? m->collect(m->userdata, ar, &list, &n) : REIN_ENOMEM;

    rein_buf_init(&body, 0);
    if (rc == REIN_OK)
        rc = m->t.json
                 ? rein__otlp_json_metrics(&body, &m->t.resource, list, n, rein__trace_now_ns())
                 : rein__otlp_proto_metrics(&body, &m->t.resource, list, n, rein__trace_now_ns());
    if (rc == REIN_OK)
        sent = rein__otlp_send(&m->t, &body);
    if (sent) {
        atomic_fetch_add(&n_sent, 1);
    } else {
        atomic_fetch_add(&n_failed, 1);
        rein_log(REIN_LOG_WARN, WHERE, "metrics not exported: %s",
                 rc == REIN_OK ? "the collector did not take them" : rein_strerror(rc));
    }
    rein_buf_release(&body);
    rein_arena_free(ar);
}

static void *mexporter_main(void *arg)
{
    struct mexporter *m = arg;

    /* One export per interval, and one more when stopping (rein_trace_shutdown). */
    for (;;) {
        bool running = rein__otlp_pause(&m->t, m->interval_ms);
        export_once(m);
        if (!running)
            break;
    }
    return NULL;
}

/* OTEL_METRICS_EXPORTER: a comma-separated list; rein sends OTLP when it names otlp (the
 * default) and not none. prometheus is rein serve's GET /metrics, which is always there. */
static bool wants_otlp(void)
{
    const char *v = rein__env("OTEL_METRICS_EXPORTER");
    bool otlp = false;

    if (!v)
        return true;
    while (*v) {
        size_t n = strcspn(v, ",");
        const char *p = v;
        while (n > 0 && *p == ' ') {
            p++;
            n--;
        }
        while (n > 0 && p[n - 1] == ' ')
            n--;
        if (n == 4 && strncmp(p, "none", 4) == 0)
            return false;
        if (n == 4 && strncmp(p, "otlp", 4) == 0)
            otlp = true;
        v += strcspn(v, ",");
        if (*v == ',')
            v++;
    }
    return otlp;
}

static rein_err configure(struct mexporter *m, rein_error *err)
{
    const char *pref = rein__env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE");
    long interval, timeout;
    rein_err rc;

    if (pref && strcasecmp(pref, "cumulative") != 0)
        return rein_error_set(err, REIN_EINVAL,
                              "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=\"%s\": rein "
                              "exports cumulative metrics only",
                              pref);
    if (!rein__env_long("OTEL_METRIC_EXPORT_INTERVAL", 60000, 86400000, &interval, err) ||
        !rein__env_long("OTEL_METRIC_EXPORT_TIMEOUT", 30000, 600000, &timeout, err))
        return err ? err->code : REIN_EINVAL;
    if ((rc = rein__otlp_target_configure(&m->t, "METRICS", "/v1/metrics", err)))
        return rc;
    m->interval_ms = interval;
    if (m->t.timeout_ms > timeout)
        m->t.timeout_ms = timeout;
    return REIN_OK;
}

rein_err rein_trace_metrics_setup(rein_otel_collect_fn collect, void *userdata, rein_error *err)
{
    struct mexporter *m;
    rein_err rc = REIN_OK;

    if (!collect)
        return rein_error_set(err, REIN_EINVAL, "rein_trace_metrics_setup: no collect function");
    pthread_mutex_lock(&msetup_mu);
    if (mx || rein__env_true("OTEL_SDK_DISABLED") || !wants_otlp() ||
        !rein__otlp_configured("METRICS"))
        goto out;
    if (!(m = rein_calloc(1, sizeof(*m)))) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory setting up metrics export");
        goto out;
    }
    m->collect = collect;
    m->userdata = userdata;
    if ((rc = rein__curl_global_init(err)) || (rc = configure(m, err))) {
        rein__otlp_target_release(&m->t);
        rein_free(m);
        goto out;
    }
    if (pthread_create(&m->thread, NULL, mexporter_main, m) != 0) {
        rein__otlp_target_release(&m->t);
        rein_free(m);
        rc = rein_error_set(err, REIN_EINTERNAL, "cannot start the metric exporter thread");
        goto out;
    }
    mx = m;
    atomic_store(&menabled, true);
    rein_log(REIN_LOG_INFO, WHERE, "exporting metrics to %s every %lld ms (OTLP/HTTP %s)", m->t.url,
             (long long)m->interval_ms, m->t.json ? "JSON" : "protobuf");
out:
    pthread_mutex_unlock(&msetup_mu);
    return rc;
}

void rein__metrics_shutdown(int64_t timeout_ms)
{
    struct mexporter *m;

    pthread_mutex_lock(&msetup_mu);
    m = mx;
    if (m) {
        atomic_store(&menabled, false);
        rein__otlp_stop(&m->t, timeout_ms);
        pthread_join(m->thread, NULL);
        mx = NULL;
        rein__otlp_target_release(&m->t);
        rein_free(m);
    }
    pthread_mutex_unlock(&msetup_mu);
}
