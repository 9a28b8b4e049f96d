/*
 * OTLP/JSON encoding of spans and metrics: an ExportTraceServiceRequest (or
 * ExportMetricsServiceRequest) as the OTLP specification's JSON
 * mapping of opentelemetry-proto writes it (trace and span ids as hex strings, enums as
 * numbers, 64-bit integers and times as decimal strings, lowerCamelCase field names).
 */
#include "trace_int.h"

#include <rein/version.h>

#include <stdio.h>

static void attr_value(struct rein_jw *w, const struct rein__attr *a)
{
    char num[24];

    rein_jw_obj_begin(w);
    switch (a->type) {
    case ATTR_STR:
        rein_jw_key(w, "stringValue");
        rein_jw_str(w, a->u.s);
        break;
    case ATTR_INT:
        rein_jw_key(w, "intValue");
        snprintf(num, sizeof(num), "%lld", (long long)a->u.i);
        rein_jw_str(w, num);
        break;
    case ATTR_DOUBLE:
        rein_jw_key(w, "doubleValue");
        rein_jw_double(w, a->u.d);
        break;
    case ATTR_BOOL:
        rein_jw_key(w, "boolValue");
        rein_jw_bool(w, a->u.b);
        break;
    case ATTR_STRS:
        rein_jw_key(w, "arrayValue");
        rein_jw_obj_begin(w);
        rein_jw_key(w, "values");
        rein_jw_arr_begin(w);
        for (size_t i = 0; i < a->u.strs.n; i++) {
            rein_jw_obj_begin(w);
            rein_jw_key(w, "stringValue");
            rein_jw_str(w, a->u.strs.v[i]);
            rein_jw_obj_end(w);
        }
        rein_jw_arr_end(w);
        rein_jw_obj_end(w);
        break;
    }
    rein_jw_obj_end(w);
}

static void attrs(struct rein_jw *w, const struct rein__attrs *a)
{
    rein_jw_key(w, "attributes");
    rein_jw_arr_begin(w);
    for (size_t i = 0; i < a->n; i++) {
        rein_jw_obj_begin(w);
        rein_jw_key(w, "key");
        rein_jw_str(w, a->v[i].key);
        rein_jw_key(w, "value");
        attr_value(w, &a->v[i]);
        rein_jw_obj_end(w);
    }
    rein_jw_arr_end(w);
}

static void time_ns(struct rein_jw *w, const char *key, int64_t ns)
{
    char num[24];

    snprintf(num, sizeof(num), "%lld", (long long)ns);
    rein_jw_key(w, key);
    rein_jw_str(w, num);
}

static void span(struct rein_jw *w, const struct rein__span_rec *r)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "traceId");
    rein_jw_str(w, r->trace_id);
    rein_jw_key(w, "spanId");
    rein_jw_str(w, r->span_id);
    if (r->parent_id[0]) {
        rein_jw_key(w, "parentSpanId");
        rein_jw_str(w, r->parent_id);
    }
    if (r->state) {
        rein_jw_key(w, "traceState");
        rein_jw_str(w, r->state);
    }
    rein_jw_key(w, "flags");
    rein_jw_int(w, r->flags);
    rein_jw_key(w, "name");
    rein_jw_str(w, r->name);
    rein_jw_key(w, "kind");
    rein_jw_int(w, r->kind);
    time_ns(w, "startTimeUnixNano", r->start_ns);
    time_ns(w, "endTimeUnixNano", r->end_ns);
    attrs(w, &r->attrs);
    rein_jw_key(w, "events");
    rein_jw_arr_begin(w);
    for (size_t i = 0; i < r->nevents; i++) {
        rein_jw_obj_begin(w);
        time_ns(w, "timeUnixNano", r->events[i].time_ns);
        rein_jw_key(w, "name");
        rein_jw_str(w, r->events[i].name);
        attrs(w, &r->events[i].attrs);
        rein_jw_obj_end(w);
    }
    rein_jw_arr_end(w);
    rein_jw_key(w, "status");
    rein_jw_obj_begin(w);
    if (r->failed) {
        rein_jw_key(w, "code");
        rein_jw_int(w, 2); /* STATUS_CODE_ERROR */
        if (r->status_msg) {
            rein_jw_key(w, "message");
            rein_jw_str(w, r->status_msg);
        }
    }
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
}

/* The request around a batch, the same for spans and metrics: one resource, rein's one scope,
 * and the array the caller fills with its items (named items). */
static void envelope_open(struct rein_jw *w, struct rein_buf *b, const struct rein__resource *res,
                          const char *resource_key, const char *scope_key, const char *items)
{
    rein_jw_init(w, b);
    rein_jw_obj_begin(w);
    rein_jw_key(w, resource_key);
    rein_jw_arr_begin(w);
    rein_jw_obj_begin(w);
    rein_jw_key(w, "resource");
    rein_jw_obj_begin(w);
    attrs(w, &res->attrs);
    rein_jw_obj_end(w);
    rein_jw_key(w, scope_key);
    rein_jw_arr_begin(w);
    rein_jw_obj_begin(w);
    rein_jw_key(w, "scope");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "name");
    rein_jw_str(w, "rein");
    rein_jw_key(w, "version");
    rein_jw_str(w, REIN_VERSION_STRING);
    rein_jw_obj_end(w);
    rein_jw_key(w, items);
    rein_jw_arr_begin(w);
}

static rein_err envelope_close(struct rein_jw *w)
{
    rein_jw_arr_end(w);
    rein_jw_obj_end(w);
    rein_jw_arr_end(w);
    rein_jw_obj_end(w);
    rein_jw_arr_end(w);
    rein_jw_obj_end(w);
    return rein_jw_finish(w);
}

rein_err rein__otlp_json_traces(struct rein_buf *b, const struct rein__resource *res,
                                struct rein__span_rec *const *spans, size_t n)
{
    struct rein_jw w;

    envelope_open(&w, b, res, "resourceSpans", "scopeSpans", "spans");
    for (size_t i = 0; i < n; i++)
        span(&w, spans[i]);
    return envelope_close(&w);
}

/* ---- metrics ------------------------------------------------------------------------------ */

static void u64(struct rein_jw *w, uint64_t v)
{
    char num[24];

    snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
    rein_jw_str(w, num);
}

static void point(struct rein_jw *w, const struct rein_otel_metric *m,
                  const struct rein_otel_point *p, int64_t now_ns)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "attributes");
    rein_jw_arr_begin(w);
    for (size_t i = 0; i < p->nattrs; i++) {
        rein_jw_obj_begin(w);
        rein_jw_key(w, "key");
        rein_jw_str(w, p->keys[i]);
        rein_jw_key(w, "value");
        rein_jw_obj_begin(w);
        rein_jw_key(w, "stringValue");
        rein_jw_str(w, p->values[i]);
        rein_jw_obj_end(w);
        rein_jw_obj_end(w);
    }
    rein_jw_arr_end(w);
    time_ns(w, "startTimeUnixNano", p->start_ns);
    time_ns(w, "timeUnixNano", now_ns);
    if (m->kind != REIN_OTEL_HISTOGRAM) {
        rein_jw_key(w, "asDouble");
        rein_jw_double(w, p->value);
        rein_jw_obj_end(w);
        return;
    }
    rein_jw_key(w, "count");
    u64(w, p->count);
    rein_jw_key(w, "sum");
    rein_jw_double(w, p->value);
    rein_jw_key(w, "bucketCounts");
    rein_jw_arr_begin(w);
    for (size_t i = 0; i <= m->nbounds; i++)
        u64(w, p->bucket_counts[i]);
    rein_jw_arr_end(w);
    rein_jw_key(w, "explicitBounds");
    rein_jw_arr_begin(w);
    for (size_t i = 0; i < m->nbounds; i++)
        rein_jw_double(w, m->bounds[i]);
    rein_jw_arr_end(w);
    if (p->count > 0) {
        rein_jw_key(w, "min");
        rein_jw_double(w, p->min);
        rein_jw_key(w, "max");
        rein_jw_double(w, p->max);
    }
    rein_jw_obj_end(w);
}

static void metric(struct rein_jw *w, const struct rein_otel_metric *m, int64_t now_ns)
{
    static const char *const data[] = {"", "gauge", "sum", "histogram"};

    rein_jw_obj_begin(w);
    rein_jw_key(w, "name");
    rein_jw_str(w, m->name);
    rein_jw_key(w, "description");
    rein_jw_str(w, m->description ? m->description : "");
    rein_jw_key(w, "unit");
    rein_jw_str(w, m->unit ? m->unit : "");
    rein_jw_key(w, data[m->kind]);
    rein_jw_obj_begin(w);
    rein_jw_key(w, "dataPoints");
    rein_jw_arr_begin(w);
    for (size_t i = 0; i < m->npoints; i++)
        point(w, m, &m->points[i], now_ns);
    rein_jw_arr_end(w);
    if (m->kind != REIN_OTEL_GAUGE) {
        rein_jw_key(w, "aggregationTemporality");
        rein_jw_int(w, 2); /* AGGREGATION_TEMPORALITY_CUMULATIVE */
    }
    if (m->kind == REIN_OTEL_SUM) {
        rein_jw_key(w, "isMonotonic");
        rein_jw_bool(w, m->monotonic);
    }
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
}

rein_err rein__otlp_json_metrics(struct rein_buf *b, const struct rein__resource *res,
                                 const struct rein_otel_metric *m, size_t n, int64_t now_ns)
{
    struct rein_jw w;

    envelope_open(&w, b, res, "resourceMetrics", "scopeMetrics", "metrics");
    for (size_t i = 0; i < n; i++)
        if (m[i].kind >= REIN_OTEL_GAUGE && m[i].kind <= REIN_OTEL_HISTOGRAM)
            metric(&w, &m[i], now_ns);
    return envelope_close(&w);
}
