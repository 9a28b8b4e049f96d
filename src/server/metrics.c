/*
 * The metrics registry (include/rein/metrics.h) and its Prometheus text rendering.
 *
 * A registry is a list of families under one mutex; a family is a list of series keyed by
 * their label values. Lookups are linear: rein has tens of series, not thousands, and a
 * linear scan under one lock is simpler than a hash and fast enough at that size. Values are
 * doubles, so counters, gauges and histogram sums share one representation.
 *
 * Label values come from closed sets, so no client can grow the registry: the standard series
 * map what a request sends to a fixed list (an HTTP method outside it is "other", a tool no
 * registry has is "unknown"), and as a last line every family holds at most
 * REIN_METRIC_MAX_SERIES series; a new label set past that is counted under a series whose
 * values are all "other" (logged once per family).
 */
#include <rein/metrics.h>
#include <rein/trace.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define WHERE "server/metrics"

static const double default_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                         1,     2.5,  5,     10,   30,  60};

/* Invariant: values has one entry per label name of the family, each an owned copy. */
struct series {
    struct series *next;
    char *values[REIN_METRIC_MAX_LABELS];
    double value;     /* counter/gauge value, or histogram sum */
    double min, max;  /* histogram: the least and greatest observation (when count > 0) */
    int64_t start_ns; /* Unix ns of the series' creation: the start of its cumulative sums */
    uint64_t count;
    uint64_t buckets[REIN_METRIC_MAX_BUCKETS]; /* non-cumulative counts per bucket */
};

struct rein_metric {
    struct rein_metric *next;
    size_t nseries;
    bool overflowed;
    rein_metrics *owner;
    enum rein_metric_kind kind;
    char *name;
    char *help;
    char *labels[REIN_METRIC_MAX_LABELS];
    int nlabels;
    double bounds[REIN_METRIC_MAX_BUCKETS];
    size_t nbounds;
    struct series *series, *series_tail;
};

/* The families rein's own counters use (std_family), found once: every request counts in
 * two of them, and a lookup by name checks the name and walks every family. The list only
 * grows, and an entry is written before nstd counts it, so finding one takes no lock: every
 * network thread would otherwise queue on the registry's mutex three times per request. */
#define STD_FAMILIES 8

struct rein_metrics {
    pthread_mutex_t mu;
    struct rein_metric *families, *tail;
    struct {
        const char *name; /* the caller's literal: compared by address */
        struct rein_metric *f;
    } std[STD_FAMILIES];
    atomic_size_t nstd; /* entries of std written (release; written under mu) */
};

rein_metrics *rein_metrics_new(void)
{
    rein_metrics *m = rein_calloc(1, sizeof(*m));

    if (m)
        pthread_mutex_init(&m->mu, NULL);
    return m;
}

static void free_family(struct rein_metric *f)
{
    while (f->series) {
        struct series *s = f->series;
        f->series = s->next;
        for (int i = 0; i < f->nlabels; i++)
            rein_free(s->values[i]);
        rein_free(s);
    }
    for (int i = 0; i < f->nlabels; i++)
        rein_free(f->labels[i]);
    rein_free(f->name);
    rein_free(f->help);
    rein_free(f);
}

void rein_metrics_free(rein_metrics *m)
{
    if (!m)
        return;
    while (m->families) {
        struct rein_metric *f = m->families;
        m->families = f->next;
        free_family(f);
    }
    pthread_mutex_destroy(&m->mu);
    rein_free(m);
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static rein_metrics *global;

static void make_global(void)
{
    global = rein_metrics_new();
}

rein_metrics *rein_metrics_global(void)
{
    pthread_once(&global_once, make_global);
    return global;
}

static bool valid_name(const char *name, bool label)
{
    if (!name || !name[0] || (name[0] >= '0' && name[0] <= '9'))
        return false;
    for (const char *p = name; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || (c == ':' && !label);
        if (!ok)
            return false;
    }
    return true;
}

static bool same_labels(const struct rein_metric *f, const char *const *names)
{
    int n = 0;

    while (names && names[n])
        n++;
    if (n != f->nlabels)
        return false;
    for (int i = 0; i < n; i++) {
        if (strcmp(f->labels[i], names[i]) != 0)
            return false;
    }
    return true;
}

rein_metric *rein_metrics_family(rein_metrics *m, enum rein_metric_kind kind, const char *name,
                                 const char *help, const char *const *label_names,
                                 const double *buckets, size_t nbuckets, rein_error *err)
{
    struct rein_metric *f;
    int n = 0;

    if (!m)
        m = rein_metrics_global();
    if (!m) {
        rein_error_set(err, REIN_ENOMEM, "metrics: out of memory");
        return NULL;
    }
    if (!valid_name(name, false)) {
        rein_error_set(err, REIN_EINVAL, "metric name \"%.60s\" is not valid", name ? name : "");
        return NULL;
    }
    while (label_names && label_names[n]) {
        if (n >= REIN_METRIC_MAX_LABELS || !valid_name(label_names[n], true) ||
            strcmp(label_names[n], "le") == 0) {
            rein_error_set(err, REIN_EINVAL, "metric %s: bad or too many labels", name);
            return NULL;
        }
        n++;
    }
    if (kind == REIN_METRIC_HISTOGRAM && !buckets) {
        buckets = default_buckets;
        nbuckets = REIN_ARRAY_SIZE(default_buckets);
    }
    if (nbuckets > REIN_METRIC_MAX_BUCKETS) {
        rein_error_set(err, REIN_EINVAL, "metric %s: at most %d buckets", name,
                       REIN_METRIC_MAX_BUCKETS);
        return NULL;
    }
    pthread_mutex_lock(&m->mu);
    for (f = m->families; f; f = f->next) {
        if (strcmp(f->name, name) == 0) {
            pthread_mutex_unlock(&m->mu);
            if (f->kind != kind || !same_labels(f, label_names)) {
                rein_error_set(err, REIN_EEXIST, "metric %s exists with another shape", name);
                return NULL;
            }
            return f;
        }
    }
    f = rein_calloc(1, sizeof(*f));
    if (!f)
        goto oom;
    f->owner = m;
    f->kind = kind;
    f->name = rein_strdup(name);
    f->help = rein_strdup(help ? help : "");
    if (!f->name || !f->help)
        goto oom;
    for (int i = 0; i < n; i++) {
        f->labels[i] = rein_strdup(label_names[i]);
        if (!f->labels[i])
            goto oom;
        f->nlabels = i + 1;
    }
    if (kind == REIN_METRIC_HISTOGRAM) {
        memcpy(f->bounds, buckets, nbuckets * sizeof(double));
        f->nbounds = nbuckets;
    }
    if (m->tail)
        m->tail->next = f;
    else
        m->families = f;
    m->tail = f;
    pthread_mutex_unlock(&m->mu);
    return f;
oom:
    pthread_mutex_unlock(&m->mu);
    if (f)
        free_family(f);
    rein_error_set(err, REIN_ENOMEM, "metrics: out of memory");
    return NULL;
}

static int64_t unix_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The series for these values, created when absent; called with the registry locked. */
static struct series *find_series(struct rein_metric *f, const char *const *given)
{
    const char *values[REIN_METRIC_MAX_LABELS] = {"", "", "", "", ""};
    bool again = false;
    struct series *s;

    for (int i = 0; i < f->nlabels && given; i++) {
        if (given[i])
            values[i] = given[i];
    }
look:
    for (s = f->series; s; s = s->next) {
        bool same = true;
        for (int i = 0; i < f->nlabels && same; i++)
            same = strcmp(s->values[i], values[i]) == 0;
        if (same)
            return s;
    }
    if (f->nseries >= REIN_METRIC_MAX_SERIES && !again) {
        /* Full: this label set joins the overflow series (all values "other"). */
        if (!f->overflowed)
            rein_log(REIN_LOG_WARN, WHERE,
                     "%s has %d series: further label sets are counted as \"other\"", f->name,
                     REIN_METRIC_MAX_SERIES);
        f->overflowed = true;
        for (int i = 0; i < f->nlabels; i++)
            values[i] = "other";
        again = true;
        goto look;
    }
    s = rein_calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->start_ns = unix_ns();
    for (int i = 0; i < f->nlabels; i++) {
        s->values[i] = rein_strdup(values[i]);
        if (!s->values[i]) {
            for (int j = 0; j < i; j++)
                rein_free(s->values[j]);
            rein_free(s);
            return NULL;
        }
    }
    if (f->series_tail)
        f->series_tail->next = s;
    else
        f->series = s;
    f->series_tail = s;
    f->nseries++;
    return s;
}

static void update(rein_metric *f, const char *const *values, double v, int op)
{
    struct series *s;

    if (!f)
        return;
    pthread_mutex_lock(&f->owner->mu);
    s = find_series(f, values);
    if (s) {
        if (op == 0 && (f->kind != REIN_METRIC_COUNTER || v >= 0))
            s->value += v;
        else if (op == 1)
            s->value = v;
        else if (op == 2) {
            size_t i = 0;
            while (i < f->nbounds && v > f->bounds[i])
                i++;
            if (i < f->nbounds)
                s->buckets[i]++;
            s->min = s->count == 0 || v < s->min ? v : s->min;
            s->max = s->count == 0 || v > s->max ? v : s->max;
            s->count++;
            s->value += v;
        }
    }
    pthread_mutex_unlock(&f->owner->mu);
}

void rein_metric_add(rein_metric *f, const char *const *label_values, double v)
{
    if (f && f->kind != REIN_METRIC_HISTOGRAM)
        update(f, label_values, v, 0);
}

void rein_metric_set(rein_metric *f, const char *const *label_values, double v)
{
    if (f && f->kind == REIN_METRIC_GAUGE)
        update(f, label_values, v, 1);
}

void rein_metric_observe(rein_metric *f, const char *const *label_values, double v)
{
    if (f && f->kind == REIN_METRIC_HISTOGRAM)
        update(f, label_values, v, 2);
}

double rein_metric_value(rein_metric *f, const char *const *label_values)
{
    double v = 0;

    if (!f)
        return 0;
    pthread_mutex_lock(&f->owner->mu);
    for (struct series *s = f->series; s; s = s->next) {
        bool same = true;
        for (int i = 0; i < f->nlabels && same; i++)
            same =
                strcmp(s->values[i], label_values && label_values[i] ? label_values[i] : "") == 0;
        if (same) {
            v = f->kind == REIN_METRIC_HISTOGRAM ? (double)s->count : s->value;
            break;
        }
    }
    pthread_mutex_unlock(&f->owner->mu);
    return v;
}

/* ---- rendering -------------------------------------------------------------------------- */

/* Label values escape backslash, double quote and newline; HELP text only the first and last. */
static rein_err add_escaped(struct rein_buf *b, const char *s, bool quote)
{
    for (; *s; s++) {
        rein_err rc;
        if (*s == '\\')
            rc = rein_buf_adds(b, "\\\\");
        else if (*s == '\n')
            rc = rein_buf_adds(b, "\\n");
        else if (*s == '"' && quote)
            rc = rein_buf_adds(b, "\\\"");
        else
            rc = rein_buf_addch(b, *s);
        if (rc != REIN_OK)
            return rc;
    }
    return REIN_OK;
}

static rein_err add_number(struct rein_buf *b, double v)
{
    if (isinf(v))
        return rein_buf_adds(b, v > 0 ? "+Inf" : "-Inf");
    if (isnan(v))
        return rein_buf_adds(b, "NaN");
    if (v == (double)(int64_t)v && fabs(v) < 9e15)
        return rein_buf_addf(b, "%lld", (long long)v);
    return rein_buf_addf(b, "%.15g", v);
}

/* name{labels[,le="x"]} value */
static rein_err add_sample(struct rein_buf *b, const struct rein_metric *f, const struct series *s,
                           const char *suffix, const char *le, double v)
{
    bool any = f->nlabels > 0 || le;
    rein_err rc = rein_buf_addf(b, "%s%s", f->name, suffix);

    if (rc == REIN_OK && any)
        rc = rein_buf_addch(b, '{');
    for (int i = 0; rc == REIN_OK && i < f->nlabels; i++) {
        rc = rein_buf_addf(b, "%s%s=\"", i ? "," : "", f->labels[i]);
        if (rc == REIN_OK)
            rc = add_escaped(b, s->values[i], true);
        if (rc == REIN_OK)
            rc = rein_buf_addch(b, '"');
    }
    if (rc == REIN_OK && le)
        rc = rein_buf_addf(b, "%sle=\"%s\"", f->nlabels ? "," : "", le);
    if (rc == REIN_OK && any)
        rc = rein_buf_addch(b, '}');
    if (rc == REIN_OK)
        rc = rein_buf_addch(b, ' ');
    if (rc == REIN_OK)
        rc = add_number(b, v);
    if (rc == REIN_OK)
        rc = rein_buf_addch(b, '\n');
    return rc;
}

static rein_err render_family(struct rein_buf *b, const struct rein_metric *f)
{
    static const char *const kinds[] = {"counter", "gauge", "histogram"};
    rein_err rc = rein_buf_addf(b, "# HELP %s ", f->name);

    if (rc == REIN_OK)
        rc = add_escaped(b, f->help, false);
    if (rc == REIN_OK)
        rc = rein_buf_addf(b, "\n# TYPE %s %s\n", f->name, kinds[f->kind]);
    for (const struct series *s = f->series; rc == REIN_OK && s; s = s->next) {
        uint64_t cumulative = 0;
        if (f->kind != REIN_METRIC_HISTOGRAM) {
            rc = add_sample(b, f, s, "", NULL, s->value);
            continue;
        }
        for (size_t i = 0; rc == REIN_OK && i < f->nbounds; i++) {
            char le[40];
            struct rein_buf tmp;
            cumulative += s->buckets[i];
            rein_buf_init(&tmp, sizeof(le));
            rc = add_number(&tmp, f->bounds[i]);
            snprintf(le, sizeof(le), "%s", tmp.ptr);
            rein_buf_release(&tmp);
            if (rc == REIN_OK)
                rc = add_sample(b, f, s, "_bucket", le, (double)cumulative);
        }
        if (rc == REIN_OK)
            rc = add_sample(b, f, s, "_bucket", "+Inf", (double)s->count);
        if (rc == REIN_OK)
            rc = add_sample(b, f, s, "_sum", NULL, s->value);
        if (rc == REIN_OK)
            rc = add_sample(b, f, s, "_count", NULL, (double)s->count);
    }
    return rc;
}

/* The span exporter's counters (process-wide, src/trace), shown while export is on: spans a
 * collector took, spans lost (a full queue, a batch given up), spans waiting. */
static rein_err render_trace(struct rein_buf *out)
{
    struct rein_trace_stats st;

    rein_trace_stats(&st);
    return rein_buf_addf(
        out,
        "# HELP rein_trace_spans_exported_total Spans an OTLP collector accepted.\n"
        "# TYPE rein_trace_spans_exported_total counter\n"
        "rein_trace_spans_exported_total %llu\n"
        "# HELP rein_trace_spans_dropped_total Spans lost: the export queue was "
        "full or a batch was given up after its retries.\n"
        "# TYPE rein_trace_spans_dropped_total counter\n"
        "rein_trace_spans_dropped_total %llu\n"
        "# HELP rein_trace_spans_queued Spans waiting for export.\n"
        "# TYPE rein_trace_spans_queued gauge\n"
        "rein_trace_spans_queued %llu\n",
        (unsigned long long)st.exported, (unsigned long long)st.dropped,
        (unsigned long long)st.queued);
}

/* The metric exporter's counters (src/trace/metrics.c), shown while it runs. */
static rein_err render_metric_export(struct rein_buf *out)
{
    struct rein_trace_stats st;

    rein_trace_stats(&st);
    return rein_buf_addf(out,
                         "# HELP rein_otlp_metric_exports_total Metric collections an OTLP "
                         "collector accepted.\n"
                         "# TYPE rein_otlp_metric_exports_total counter\n"
                         "rein_otlp_metric_exports_total %llu\n"
                         "# HELP rein_otlp_metric_exports_failed_total Metric collections given "
                         "up after their retries.\n"
                         "# TYPE rein_otlp_metric_exports_failed_total counter\n"
                         "rein_otlp_metric_exports_failed_total %llu\n",
                         (unsigned long long)st.metric_exports,
                         (unsigned long long)st.metric_exports_failed);
}

rein_err rein_metrics_render(rein_metrics *m, struct rein_buf *out)
{
    rein_err rc = REIN_OK;

    if (!m)
        m = rein_metrics_global();
    if (!m)
        return REIN_ENOMEM;
    pthread_mutex_lock(&m->mu);
    for (const struct rein_metric *f = m->families; rc == REIN_OK && f; f = f->next)
        rc = render_family(out, f);
    pthread_mutex_unlock(&m->mu);
    if (rc == REIN_OK && rein_trace_enabled())
        rc = render_trace(out);
    if (rc == REIN_OK && rein_trace_metrics_enabled())
        rc = render_metric_export(out);
    return rc;
}

/* ---- OTLP ------------------------------------------------------------------------------- */

/*
 * The registry as OpenTelemetry metrics (rein_metrics_otel_collect). The GenAI client metrics
 * take the conventions' names, units and attribute keys; rein's own families keep their
 * Prometheus name without the suffix a collector's Prometheus exporter adds back (_total for
 * counters, _seconds for the unit s), so they read the same in both places. An empty label
 * value is an attribute not set (OpenTelemetry has no empty-string convention for absent).
 */
static const struct otel_name {
    const char *prom, *otel, *unit;
} otel_names[] = {
    {"gen_ai_client_token_usage", "gen_ai.client.token.usage", "{token}"},
    {"gen_ai_client_operation_duration_seconds", "gen_ai.client.operation.duration", "s"},
};

static const struct {
    const char *prom, *otel;
} otel_keys[] = {
    {"gen_ai_operation_name", "gen_ai.operation.name"},
    {"gen_ai_provider_name", "gen_ai.provider.name"},
    {"gen_ai_request_model", "gen_ai.request.model"},
    {"gen_ai_response_model", "gen_ai.response.model"},
    {"gen_ai_token_type", "gen_ai.token.type"},
    {"error_type", "error.type"},
};

/* The attribute key for a label: the conventions' (static) or a copy of the label in ar. */
static const char *otel_key(rein_arena *ar, const char *label)
{
    for (size_t i = 0; i < REIN_ARRAY_SIZE(otel_keys); i++)
        if (strcmp(label, otel_keys[i].prom) == 0)
            return otel_keys[i].otel;
    return rein_arena_strdup(ar, label);
}

static bool ends_with(const char *s, const char *suffix, size_t *stem)
{
    size_t n = strlen(s), k = strlen(suffix);

    *stem = n;
    if (n <= k || strcmp(s + n - k, suffix) != 0)
        return false;
    *stem = n - k;
    return true;
}

/* Name and unit of family f in ar; false when the arena is exhausted. */
static bool otel_naming(rein_arena *ar, const struct rein_metric *f, struct rein_otel_metric *o)
{
    size_t stem;

    for (size_t i = 0; i < REIN_ARRAY_SIZE(otel_names); i++) {
        if (strcmp(f->name, otel_names[i].prom) == 0) {
            o->name = otel_names[i].otel;
            o->unit = otel_names[i].unit;
            return true;
        }
    }
    o->unit = "";
    if (f->kind == REIN_METRIC_COUNTER)
        (void)ends_with(f->name, "_total", &stem);
    else if (ends_with(f->name, "_seconds", &stem))
        o->unit = "s";
    o->name = rein_arena_strndup(ar, f->name, stem);
    return o->name != NULL;
}

/* One series as a point; false when the arena is exhausted. Called with the registry locked. */
static bool otel_point(rein_arena *ar, const struct rein_metric *f, const struct series *s,
                       struct rein_otel_point *p)
{
    uint64_t *counts, below = 0;

    for (int i = 0; i < f->nlabels; i++) {
        if (!s->values[i][0])
            continue;
        if (!(p->keys[p->nattrs] = otel_key(ar, f->labels[i])) ||
            !(p->values[p->nattrs] = rein_arena_strdup(ar, s->values[i])))
            return false;
        p->nattrs++;
    }
    p->start_ns = s->start_ns;
    p->value = s->value;
    if (f->kind != REIN_METRIC_HISTOGRAM)
        return true;
    if (!(counts = rein_arena_calloc(ar, f->nbounds + 1, sizeof(*counts))))
        return false;
    for (size_t i = 0; i < f->nbounds; i++) {
        counts[i] = s->buckets[i];
        below += s->buckets[i];
    }
    counts[f->nbounds] = s->count - below; /* past the last bound */
    p->bucket_counts = counts;
    p->count = s->count;
    p->min = s->min;
    p->max = s->max;
    return true;
}

static bool otel_family(rein_arena *ar, const struct rein_metric *f, struct rein_otel_metric *o)
{
    static const enum rein_otel_metric_kind kinds[] = {REIN_OTEL_SUM, REIN_OTEL_GAUGE,
                                                       REIN_OTEL_HISTOGRAM};
    size_t i = 0;

    double *bounds = rein_arena_calloc(ar, f->nbounds ? f->nbounds : 1, sizeof(double));

    o->kind = kinds[f->kind];
    o->monotonic = f->kind == REIN_METRIC_COUNTER;
    o->description = rein_arena_strdup(ar, f->help);
    o->nbounds = f->nbounds;
    o->bounds = bounds;
    if (!bounds || !o->description || !otel_naming(ar, f, o) ||
        !(o->points = rein_arena_calloc(ar, f->nseries ? f->nseries : 1, sizeof(*o->points))))
        return false;
    memcpy(bounds, f->bounds, f->nbounds * sizeof(double));
    for (const struct series *s = f->series; s; s = s->next)
        if (!otel_point(ar, f, s, &o->points[i++]))
            return false;
    o->npoints = i;
    return true;
}

rein_err rein_metrics_otel_collect(void *registry, rein_arena *ar, struct rein_otel_metric **out,
                                   size_t *n)
{
    rein_metrics *m = registry ? registry : rein_metrics_global();
    struct rein_otel_metric *list;
    size_t count = 0, i = 0;
    rein_err rc = REIN_OK;

    if (!m)
        return REIN_ENOMEM;
    pthread_mutex_lock(&m->mu);
    for (const struct rein_metric *f = m->families; f; f = f->next)
        count++;
    list = rein_arena_calloc(ar, count ? count : 1, sizeof(*list));
    if (!list)
        rc = REIN_ENOMEM;
    /* Everything is copied: the exporter reads it after the lock is released, while new
     * series may be added. */
    for (const struct rein_metric *f = m->families; rc == REIN_OK && f; f = f->next)
        if (!otel_family(ar, f, &list[i++]))
            rc = REIN_ENOMEM;
    pthread_mutex_unlock(&m->mu);
    *out = list;
    *n = rc == REIN_OK ? count : 0;
    return rc;
}

/* ---- standard series -------------------------------------------------------------------- */

static rein_metric *std_family(rein_metrics *m, enum rein_metric_kind kind, const char *name,
                               const char *help, const char *const *labels)
{
    rein_metric *f = NULL;
    rein_error err;
    size_t n;
    bool known = false;

    if (!m)
        m = rein_metrics_global();
    if (!m)
        return NULL;
    n = atomic_load_explicit(&m->nstd, memory_order_acquire);
    for (size_t i = 0; i < n && !f; i++)
        f = m->std[i].name == name ? m->std[i].f : NULL;
    if (f)
        return f;
    f = rein_metrics_family(m, kind, name, help, labels, NULL, 0, &err);
    if (!f) {
        rein_log(REIN_LOG_WARN, WHERE, "%s", err.msg);
        return NULL;
    }
    pthread_mutex_lock(&m->mu);
    n = atomic_load_explicit(&m->nstd, memory_order_relaxed);
    for (size_t i = 0; i < n && !known; i++)
        known = m->std[i].name == name; /* another thread added it first */
    if (!known && n < STD_FAMILIES) {
        m->std[n].name = name;
        m->std[n].f = f;
        atomic_store_explicit(&m->nstd, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&m->mu);
    return f;
}

/* The method as a label: one of the methods HTTP defines (RFC 9110, plus PATCH), else
 * "other", so a client inventing methods adds no series. */
static const char *method_label(const char *method)
{
    static const char *const known[] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                        "OPTIONS", "CONNECT", "TRACE", "PATCH"};

    for (size_t i = 0; method && i < REIN_ARRAY_SIZE(known); i++) {
        if (strcmp(method, known[i]) == 0)
            return known[i];
    }
    return "other";
}

void rein_metrics_http_request(rein_metrics *m, const char *method, const char *route, int status,
                               double seconds)
{
    static const char *const req_labels[] = {"method", "route", "status", NULL};
    static const char *const dur_labels[] = {"route", NULL};
    char code[8];
    const char *values[REIN_METRIC_MAX_LABELS] = {method_label(method), route, code, NULL};
    const char *dvalues[REIN_METRIC_MAX_LABELS] = {route, NULL, NULL, NULL};

    /* Statuses are three digits (100-599); anything else would be a bug, kept bounded. */
    if (status >= 100 && status <= 599) {
        code[0] = (char)('0' + status / 100);
        code[1] = (char)('0' + status / 10 % 10);
        code[2] = (char)('0' + status % 10);
        code[3] = '\0';
    } else {
        memcpy(code, "other", sizeof("other"));
    }
    rein_metric_add(std_family(m, REIN_METRIC_COUNTER, "rein_http_requests_total",
                               "HTTP requests answered, by method, route pattern and status",
                               req_labels),
                    values, 1);
    rein_metric_observe(std_family(m, REIN_METRIC_HISTOGRAM, "rein_http_request_duration_seconds",
                                   "Time from request to the end of the response, by route",
                                   dur_labels),
                        dvalues, seconds);
}

void rein_metrics_turns_running(rein_metrics *m, int delta)
{
    rein_metric_add(std_family(m, REIN_METRIC_GAUGE, "rein_turns_running",
                               "Agent turns running in this process", NULL),
                    NULL, delta);
}

void rein_metrics_tool_call(rein_metrics *m, const char *tool, const char *status)
{
    static const char *const labels[] = {"tool", "status", NULL};
    const char *values[REIN_METRIC_MAX_LABELS] = {tool ? tool : "unknown", status, NULL, NULL};

    rein_metric_add(std_family(m, REIN_METRIC_COUNTER, "rein_tool_calls_total",
                               "Tool calls finished, by tool and ledger status", labels),
                    values, 1);
}

void rein_metrics_provider_error(rein_metrics *m, const char *provider, const char *kind)
{
    static const char *const labels[] = {"provider", "kind", NULL};
    const char *values[REIN_METRIC_MAX_LABELS] = {provider, kind, NULL, NULL};

    rein_metric_add(std_family(m, REIN_METRIC_COUNTER, "rein_provider_errors_total",
                               "Model provider errors, by provider and kind", labels),
                    values, 1);
}

void rein_metrics_provider_retry(rein_metrics *m, const char *provider)
{
    static const char *const labels[] = {"provider", NULL};
    const char *values[REIN_METRIC_MAX_LABELS] = {provider, NULL, NULL, NULL};

    rein_metric_add(std_family(m, REIN_METRIC_COUNTER, "rein_provider_retries_total",
                               "Model provider requests retried, by provider", labels),
                    values, 1);
}

/* ---- the agent's observer ---------------------------------------------------------------- */

static void observe_turn(void *userdata, int delta)
{
    rein_metrics_turns_running(userdata, delta);
}

static void observe_tool_call(void *userdata, const char *tool, const char *status)
{
    rein_metrics_tool_call(userdata, tool, status);
}

static void observe_provider_error(void *userdata, const char *provider, const char *kind)
{
    rein_metrics_provider_error(userdata, provider, kind);
}

/*
 * The OpenTelemetry GenAI client metrics (semantic conventions v1.41.0, docs/decisions/0029)
 * in Prometheus names: gen_ai.client.token.usage (histogram of tokens per request, by
 * gen_ai.token.type) and gen_ai.client.operation.duration (seconds), with the conventions'
 * bucket boundaries. The request model is the configured model, a closed set; the response
 * model is what the provider named (recommended by the conventions on both metrics), usually
 * one dated version of it, and the family's series cap (REIN_METRIC_MAX_SERIES) bounds a
 * provider that names a new one every time.
 */
static void observe_model_call(void *userdata, const struct rein_agent_model_call *c)
{
    static const char *const token_labels[] = {"gen_ai_operation_name", "gen_ai_provider_name",
                                               "gen_ai_request_model",  "gen_ai_response_model",
                                               "gen_ai_token_type",     NULL};
    static const char *const time_labels[] = {
        "gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model",
        "gen_ai_response_model", "error_type",           NULL};
    static const double token_buckets[] = {
        1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};
    static const double time_buckets[] = {0.01, 0.02, 0.04, 0.08,  0.16,  0.32,  0.64,
                                          1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
    rein_metrics *m = userdata;
    const char *model = c->model ? c->model : "";
    const char *answered = c->response_model ? c->response_model : "";
    rein_error err;
    rein_metric *usage =
        rein_metrics_family(m, REIN_METRIC_HISTOGRAM, "gen_ai_client_token_usage",
                            "gen_ai.client.token.usage: tokens per model request, by type",
                            token_labels, token_buckets, REIN_ARRAY_SIZE(token_buckets), &err);
    rein_metric *duration =
        rein_metrics_family(m, REIN_METRIC_HISTOGRAM, "gen_ai_client_operation_duration_seconds",
                            "gen_ai.client.operation.duration: seconds per model request",
                            time_labels, time_buckets, REIN_ARRAY_SIZE(time_buckets), &err);
    const char *in[REIN_METRIC_MAX_LABELS] = {"chat", c->provider, model, answered, "input"};
    const char *out[REIN_METRIC_MAX_LABELS] = {"chat", c->provider, model, answered, "output"};
    const char *t[REIN_METRIC_MAX_LABELS] = {"chat", c->provider, model, answered,
                                             c->error ? c->error : ""};

    if (c->input_tokens >= 0)
        rein_metric_observe(usage, in, (double)c->input_tokens);
    if (c->output_tokens >= 0)
        rein_metric_observe(usage, out, (double)c->output_tokens);
    rein_metric_observe(duration, t, c->seconds);
}

void rein_metrics_observe_agent(rein_agent *a, rein_metrics *m)
{
    struct rein_agent_observer obs = {
        .turn_running = observe_turn,
        .tool_call = observe_tool_call,
        .provider_error = observe_provider_error,
        .userdata = m,
        .model_call = observe_model_call,
    };

    if (a)
        rein_agent_set_observer(a, &obs);
}
