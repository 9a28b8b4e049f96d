/*
 * OTLP/HTTP protobuf encoding of metrics: an ExportMetricsServiceRequest built from the code
 * protoc-c generates from the official opentelemetry-proto definitions at build time
 * (cmake/ReinOtlpProto.cmake, docs/decisions/0029 and 0038), packed by libprotobuf-c. The
 * message tree borrows the collection's strings and lives in one bump allocator per export.
 * Spans, many more of them, are written by otlp_spans.c directly.
 *
 * Built without protobuf (-DREIN_OTLP_PROTOBUF=OFF, or a tree whose generated headers are not
 * there, as the linters see it) this file only answers REIN_ENOTSUP.
 */
#include "trace_int.h"

#include <rein/version.h>

#include <string.h>

#if defined(HAVE_OTLP_PROTOBUF) &&                                                                 \
    __has_include("opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h")
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"

typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__ArrayValue ArrayValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Metrics__V1__Metric Metric;
typedef Opentelemetry__Proto__Metrics__V1__NumberDataPoint NumberPoint;
typedef Opentelemetry__Proto__Metrics__V1__HistogramDataPoint HistPoint;

/* n zeroed elements of size bytes from ar; NULL when exhausted. */
static void *bcalloc(struct rein__bump *ar, size_t n, size_t size)
{
    return size && n > SIZE_MAX / size ? NULL : rein__bump_alloc(ar, n * size);
}

/* A new AnyValue for attribute a (strings borrowed), or NULL when the arena is exhausted. */
static AnyValue *any_value(struct rein__bump *ar, const struct rein__attr *a)
{
    AnyValue *v = bcalloc(ar, 1, sizeof(*v));

    if (!v)
        return NULL;
    opentelemetry__proto__common__v1__any_value__init(v);
    switch (a->type) {
    case ATTR_STR:
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        v->string_value = a->u.s;
        break;
    case ATTR_INT:
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
        v->int_value = a->u.i;
        break;
    case ATTR_DOUBLE:
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE;
        v->double_value = a->u.d;
        break;
    case ATTR_BOOL:
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE;
        v->bool_value = a->u.b;
        break;
    case ATTR_STRS: {
        ArrayValue *arr = bcalloc(ar, 1, sizeof(*arr));
        AnyValue **items = bcalloc(ar, a->u.strs.n ? a->u.strs.n : 1, sizeof(AnyValue *));
        AnyValue *each = bcalloc(ar, a->u.strs.n ? a->u.strs.n : 1, sizeof(AnyValue));
        if (!arr || !items || !each)
            return NULL;
        opentelemetry__proto__common__v1__array_value__init(arr);
        for (size_t i = 0; i < a->u.strs.n; i++) {
            opentelemetry__proto__common__v1__any_value__init(&each[i]);
            each[i].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
            each[i].string_value = a->u.strs.v[i];
            items[i] = &each[i];
        }
        arr->n_values = a->u.strs.n;
        arr->values = items;
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE;
        v->array_value = arr;
        break;
    }
    }
    return v;
}

/* The attribute list as KeyValue pointers in *out (*n of them); false when exhausted. */
static bool key_values(struct rein__bump *ar, const struct rein__attrs *a, KeyValue ***out,
                       size_t *n)
{
    KeyValue **list = bcalloc(ar, a->n ? a->n : 1, sizeof(KeyValue *));
    KeyValue *kvs = bcalloc(ar, a->n ? a->n : 1, sizeof(KeyValue));

    if (!list || !kvs)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        opentelemetry__proto__common__v1__key_value__init(&kvs[i]);
        kvs[i].key = (char *)a->v[i].key; /* packing only reads it */
        if (!(kvs[i].value = any_value(ar, &a->v[i])))
            return false;
        list[i] = &kvs[i];
    }
    *out = list;
    *n = a->n;
    return true;
}

/* ---- metrics ------------------------------------------------------------------------------ */

/* A point's string attributes as KeyValue pointers; false when the arena is exhausted. */
static bool point_attrs(struct rein__bump *ar, const struct rein_otel_point *p, KeyValue ***out,
                        size_t *n)
{
    KeyValue **list = bcalloc(ar, p->nattrs ? p->nattrs : 1, sizeof(KeyValue *));
    KeyValue *kvs = bcalloc(ar, p->nattrs ? p->nattrs : 1, sizeof(KeyValue));
    AnyValue *vals = bcalloc(ar, p->nattrs ? p->nattrs : 1, sizeof(AnyValue));

    if (!list || !kvs || !vals)
        return false;
    for (size_t i = 0; i < p->nattrs; i++) {
        opentelemetry__proto__common__v1__key_value__init(&kvs[i]);
        opentelemetry__proto__common__v1__any_value__init(&vals[i]);
        vals[i].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        vals[i].string_value = (char *)p->values[i]; /* packing only reads them */
        kvs[i].key = (char *)p->keys[i];
        kvs[i].value = &vals[i];
        list[i] = &kvs[i];
    }
    *out = list;
    *n = p->nattrs;
    return true;
}

static NumberPoint *number_point(struct rein__bump *ar, const struct rein_otel_point *p,
                                 int64_t now_ns)
{
    NumberPoint *d = bcalloc(ar, 1, sizeof(*d));

    if (!d)
        return NULL;
    opentelemetry__proto__metrics__v1__number_data_point__init(d);
    if (!point_attrs(ar, p, &d->attributes, &d->n_attributes))
        return NULL;
    d->start_time_unix_nano = (uint64_t)p->start_ns;
    d->time_unix_nano = (uint64_t)now_ns;
    d->value_case = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
    d->as_double = p->value;
    return d;
}

/* sum, min and max are proto3 optional (explicit presence, scripts/otlp-proto.sh): setting
 * their case sends them even when they are zero. */
static HistPoint *hist_point(struct rein__bump *ar, const struct rein_otel_metric *m,
                             const struct rein_otel_point *p, int64_t now_ns)
{
    HistPoint *d = bcalloc(ar, 1, sizeof(*d));

    if (!d)
        return NULL;
    opentelemetry__proto__metrics__v1__histogram_data_point__init(d);
    if (!point_attrs(ar, p, &d->attributes, &d->n_attributes))
        return NULL;
    d->start_time_unix_nano = (uint64_t)p->start_ns;
    d->time_unix_nano = (uint64_t)now_ns;
    d->count = p->count;
    d->_sum_case = OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT___SUM_SUM;
    d->sum = p->value;
    d->n_bucket_counts = m->nbounds + 1;
    d->bucket_counts = (uint64_t *)p->bucket_counts;
    d->n_explicit_bounds = m->nbounds;
    d->explicit_bounds = (double *)m->bounds;
    if (p->count > 0) {
        d->_min_case = OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT___MIN_MIN;
        d->min = p->min;
        d->_max_case = OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT___MAX_MAX;
        d->max = p->max;
    }
    return d;
}

/* Fills the points of one metric's data (gauge, sum or histogram); false when exhausted. */
static bool metric_data(struct rein__bump *ar, Metric *out, const struct rein_otel_metric *m,
                        int64_t now_ns)
{
    size_t n = m->npoints ? m->npoints : 1;
    void **pts = bcalloc(ar, n, sizeof(void *));

    if (!pts)
        return false;
    for (size_t i = 0; i < m->npoints; i++)
        if (!(pts[i] = m->kind == REIN_OTEL_HISTOGRAM
                           ? (void *)hist_point(ar, m, &m->points[i], now_ns)
                           : (void *)number_point(ar, &m->points[i], now_ns)))
            return false;
    if (m->kind == REIN_OTEL_GAUGE) {
        Opentelemetry__Proto__Metrics__V1__Gauge *g = bcalloc(ar, 1, sizeof(*g));
        if (!g)
            return false;
        opentelemetry__proto__metrics__v1__gauge__init(g);
        g->n_data_points = m->npoints;
        g->data_points = (NumberPoint **)pts;
        out->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE;
        out->gauge = g;
    } else if (m->kind == REIN_OTEL_SUM) {
        Opentelemetry__Proto__Metrics__V1__Sum *sm = bcalloc(ar, 1, sizeof(*sm));
        if (!sm)
            return false;
        opentelemetry__proto__metrics__v1__sum__init(sm);
        sm->n_data_points = m->npoints;
        sm->data_points = (NumberPoint **)pts;
        sm->aggregation_temporality =
            OPENTELEMETRY__PROTO__METRICS__V1__AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE;
        sm->is_monotonic = m->monotonic;
        out->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM;
        out->sum = sm;
    } else {
        Opentelemetry__Proto__Metrics__V1__Histogram *h = bcalloc(ar, 1, sizeof(*h));
        if (!h)
            return false;
        opentelemetry__proto__metrics__v1__histogram__init(h);
        h->n_data_points = m->npoints;
        h->data_points = (HistPoint **)pts;
        h->aggregation_temporality =
            OPENTELEMETRY__PROTO__METRICS__V1__AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE;
        out->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM;
        out->histogram = h;
    }
    return true;
}

rein_err rein__otlp_proto_metrics(struct rein_buf *b, const struct rein__resource *res,
                                  const struct rein_otel_metric *m, size_t n, int64_t now_ns)
{
    Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceRequest req;
    Opentelemetry__Proto__Metrics__V1__ResourceMetrics rm, *rmp = &rm;
    Opentelemetry__Proto__Metrics__V1__ScopeMetrics sm, *smp = &sm;
    Opentelemetry__Proto__Resource__V1__Resource resource;
    Opentelemetry__Proto__Common__V1__InstrumentationScope scope;
    struct rein__bump own, *ar = &own;
    Metric **list, *ms;
    rein_err rc = REIN_ENOMEM;
    size_t size, used = 0;

    rein__bump_init(&own, NULL, 0);
    list = bcalloc(ar, n ? n : 1, sizeof(Metric *));
    ms = bcalloc(ar, n ? n : 1, sizeof(Metric));
    if (!list || !ms)
        goto out;
    opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__init(&req);
    opentelemetry__proto__metrics__v1__resource_metrics__init(&rm);
    opentelemetry__proto__metrics__v1__scope_metrics__init(&sm);
    opentelemetry__proto__resource__v1__resource__init(&resource);
    opentelemetry__proto__common__v1__instrumentation_scope__init(&scope);
    scope.name = "rein";
    scope.version = REIN_VERSION_STRING;
    if (!key_values(ar, &res->attrs, &resource.attributes, &resource.n_attributes))
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (m[i].kind < REIN_OTEL_GAUGE || m[i].kind > REIN_OTEL_HISTOGRAM)
            continue;
        opentelemetry__proto__metrics__v1__metric__init(&ms[used]);
        ms[used].name = (char *)m[i].name;
        if (m[i].description)
            ms[used].description = (char *)m[i].description;
        if (m[i].unit)
            ms[used].unit = (char *)m[i].unit;
        if (!metric_data(ar, &ms[used], &m[i], now_ns))
            goto out;
        list[used] = &ms[used];
        used++;
    }
    sm.scope = &scope;
    sm.n_metrics = used;
    sm.metrics = list;
    rm.resource = &resource;
    rm.n_scope_metrics = 1;
    rm.scope_metrics = &smp;
    req.n_resource_metrics = 1;
    req.resource_metrics = &rmp;
    size =
        opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__get_packed_size(
            &req);
    if (rein_buf_grow(b, size) != REIN_OK)
        goto out;
    size = opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__pack(
        &req, (uint8_t *)b->ptr + b->len);
    b->len += size;
    b->ptr[b->len] = '\0';
    rc = REIN_OK;
out:
    rein__bump_release(&own);
    return rc;
}

bool rein__otlp_proto_available(void)
{
    return true;
}

#else

rein_err rein__otlp_proto_metrics(struct rein_buf *b, const struct rein__resource *res,
                                  const struct rein_otel_metric *m, size_t n, int64_t now_ns)
{
    (void)b;
    (void)res;
    (void)m;
    (void)n;
    (void)now_ns;
    return REIN_ENOTSUP;
}

bool rein__otlp_proto_available(void)
{
    return false;
}

#endif
