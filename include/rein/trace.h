/*
 * rein/trace.h: W3C trace context, spans, and their export over OTLP/HTTP.
 *
 * rein's trace id is the W3C trace id (32 lowercase hex digits). A request that arrives with a
 * valid `traceparent` continues the caller's trace; every request rein sends on (provider
 * calls, HTTP skills, MCP calls in params._meta) carries a `traceparent` naming the span that
 * sent it, and process skills find it in TRACEPARENT. That much works whether or not spans
 * are exported: a span that is not recorded still has its ids (docs/decisions/0029).
 *
 * Spans follow the OpenTelemetry GenAI semantic conventions. A span lives in storage the
 * caller provides (usually its stack) between rein_span_start() and rein_span_end(); while it
 * is open it is the thread's current context, so whatever runs below it on the same thread
 * (a provider request, a process skill) finds its parent in rein_trace_current() without
 * being handed it. Spans therefore nest strictly: end them in the reverse order of starting.
 * Work handed to another thread takes the context along with rein_trace_scope_enter().
 *
 * Export is off until rein_trace_setup() finds it configured by the standard OpenTelemetry
 * variables (OTEL_EXPORTER_OTLP_ENDPOINT and the others the README lists). Finished spans go
 * to a bounded queue that a background thread sends in batches; a full queue drops the span
 * and counts it (rein_trace_stats), so a turn never waits for a collector.
 *
 * Threading: every function may be called from any thread; a span is used by one thread.
 */
#ifndef REIN_TRACE_H
#define REIN_TRACE_H

#include <rein/arena.h>
#include <rein/core.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REIN_TRACEPARENT_LEN 55  /* "00-" trace-id "-" parent-id "-" flags */
#define REIN_TRACESTATE_MAX  512 /* longer tracestate values are dropped, as W3C allows */
#define REIN_TRACE_SAMPLED   0x01

/* One position in a trace: what a traceparent (and tracestate) header carries. */
struct rein_trace_context {
    char trace_id[REIN_TRACE_ID_LEN + 1]; /* 32 lowercase hex, not all zero */
    char span_id[REIN_SPAN_ID_LEN + 1];   /* 16 lowercase hex, not all zero */
    uint8_t flags;                        /* REIN_TRACE_SAMPLED and bits rein passes on */
    char state[REIN_TRACESTATE_MAX + 1];  /* a valid tracestate, or "" */
};

/*
 * Parses a traceparent header value (W3C Trace Context level 1): version 2 lowercase hex other
 * than ff; version 00 exactly 55 characters, a later version at least that with a '-' after
 * them; trace id and parent id lowercase hex and not all zero; flags 2 lowercase hex. Spaces
 * and tabs around the value are ignored. tracestate (may be NULL) is kept when it is a valid
 * list of at most 32 key=value members that fits REIN_TRACESTATE_MAX, and dropped otherwise
 * without failing (as the specification says). REIN_EPARSE (err says what is wrong) when
 * traceparent is NULL or malformed; out is then untouched. Strings borrowed.
 */
REIN_EXTERN rein_err rein_trace_context_parse(const char *traceparent, const char *tracestate,
                                              struct rein_trace_context *out,
                                              rein_error *err) REIN_WUR;
/* True when text is a valid tracestate value (see above). */
REIN_EXTERN bool rein_tracestate_is_valid(const char *text);
/* Writes c as a version-00 traceparent and a NUL into out. */
REIN_EXTERN void rein_trace_context_format(const struct rein_trace_context *c,
                                           char out[REIN_TRACEPARENT_LEN + 1]);

/*
 * The thread's current context (borrowed; valid while the span or scope that set it is open),
 * or NULL when no span or scope is open on this thread.
 */
REIN_EXTERN const struct rein_trace_context *rein_trace_current(void);
/* Writes the current context as a traceparent into out; false (out "") when there is none. */
REIN_EXTERN bool rein_trace_current_traceparent(char out[REIN_TRACEPARENT_LEN + 1]);

/* Makes a context current for a stretch of code on this thread (work another thread handed
 * over, or a request's incoming context). Caller storage; leave in reverse order. */
struct rein_trace_scope {
    const struct rein_trace_context *prev;
    const struct rein_trace_context *ctx;
};
/* ctx borrowed until the matching leave; NULL makes "no context" current. */
REIN_EXTERN void rein_trace_scope_enter(struct rein_trace_scope *s,
                                        const struct rein_trace_context *ctx);
REIN_EXTERN void rein_trace_scope_leave(struct rein_trace_scope *s);

/* ---- spans ------------------------------------------------------------------------------ */

enum rein_span_kind {
    REIN_SPAN_INTERNAL = 1, /* OTLP's SPAN_KIND_* numbers */
    REIN_SPAN_SERVER = 2,
    REIN_SPAN_CLIENT = 3,
};

struct rein__span_rec; /* what a recorded span holds; private */

/* A span in caller storage. ctx is its own position (current while it is open). */
struct rein_span {
    struct rein_trace_context ctx;
    const struct rein_trace_context *prev; /* the current context before it started */
    struct rein__span_rec *rec;            /* NULL: not recorded (export off, not sampled) */
};

/*
 * Starts a span named name (copied) as a child of the current context. With no current
 * context it starts a trace: under trace_id when that is a valid trace id (rein's own, such as
 * a turn's), else a new one; a current context of another trace than a valid trace_id is not
 * taken as the parent either. The span is recorded when export is on and the sampler keeps
 * it; either way it has ids and becomes the current context until rein_span_end(). Never
 * fails: out of memory only leaves it unrecorded.
 */
REIN_EXTERN void rein_span_start(struct rein_span *s, const char *name, enum rein_span_kind kind,
                                 const char *trace_id);
/* Renames s (copied), for a span whose name is known only once its work is under way. */
REIN_EXTERN void rein_span_set_name(struct rein_span *s, const char *name);
/* True when attributes set on s are kept (cheap; guards building costly values). */
REIN_EXTERN bool rein_span_is_recording(const struct rein_span *s);
/* Attributes (key borrowed and must be a string literal or outlive the span; value copied).
 * Setting a key twice keeps both; no-ops when s is not recorded or value is NULL. */
REIN_EXTERN void rein_span_set_str(struct rein_span *s, const char *key, const char *value);
REIN_EXTERN void rein_span_set_strn(struct rein_span *s, const char *key, const char *value,
                                    size_t len);
REIN_EXTERN void rein_span_set_int(struct rein_span *s, const char *key, int64_t value);
REIN_EXTERN void rein_span_set_double(struct rein_span *s, const char *key, double value);
REIN_EXTERN void rein_span_set_bool(struct rein_span *s, const char *key, bool value);
/* A string array attribute (gen_ai.response.finish_reasons); values copied. */
REIN_EXTERN void rein_span_set_strs(struct rein_span *s, const char *key, const char *const *values,
                                    size_t n);
/* Adds an event named name (copied) at the present time; later rein_span_event_* calls add
 * attributes to it. */
REIN_EXTERN void rein_span_event(struct rein_span *s, const char *name);
REIN_EXTERN void rein_span_event_str(struct rein_span *s, const char *key, const char *value);
REIN_EXTERN void rein_span_event_int(struct rein_span *s, const char *key, int64_t value);
REIN_EXTERN void rein_span_event_double(struct rein_span *s, const char *key, double value);
REIN_EXTERN void rein_span_event_bool(struct rein_span *s, const char *key, bool value);
/* Marks the span failed: status ERROR with message (may be NULL) and error.type = type. */
REIN_EXTERN void rein_span_fail(struct rein_span *s, const char *type, const char *message);
/* Ends s: restores the context that was current when it started and queues a recorded span
 * for export (dropping and counting it when the queue is full). */
REIN_EXTERN void rein_span_end(struct rein_span *s);

/* ---- setup and export -------------------------------------------------------------------- */

/*
 * Reads the OpenTelemetry variables and, when an OTLP endpoint is configured and
 * OTEL_SDK_DISABLED is not true, starts the exporter thread. Nothing configured: REIN_OK and
 * export stays off. REIN_EINVAL (err names the variable) for a value rein cannot use, such as
 * an unknown protocol or sampler; export stays off. Call once, before threads trace; a second
 * call is a no-op.
 */
REIN_EXTERN rein_err rein_trace_setup(rein_error *err) REIN_WUR;
/* Sends what is queued and a last collection of metrics (waiting at most timeout_ms for each)
 * and stops the exporter threads. */
REIN_EXTERN void rein_trace_shutdown(int64_t timeout_ms);
/* True when spans are exported. */
REIN_EXTERN bool rein_trace_enabled(void);
/* OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: spans may carry message text. */
REIN_EXTERN bool rein_trace_capture_content(void);

struct rein_trace_stats {
    uint64_t ended;    /* recorded spans ended */
    uint64_t exported; /* spans a collector accepted */
    uint64_t dropped;  /* spans lost: queue full, or a batch given up after its retries */
    uint64_t batches_failed;
    uint64_t queued;                /* spans waiting now */
    uint64_t metric_exports;        /* metric collections a collector accepted */
    uint64_t metric_exports_failed; /* collections given up after their retries */
};
REIN_EXTERN void rein_trace_stats(struct rein_trace_stats *out);

/* ---- metrics export ----------------------------------------------------------------------- */

/*
 * Metrics are kept by whoever records them (rein's registry, <rein/metrics.h>); the exporter
 * only asks for them: every OTEL_METRIC_EXPORT_INTERVAL a background thread calls the collect
 * function the caller registered, which describes every metric's current (cumulative) state
 * in the structures below, and sends that as an OTLP ExportMetricsServiceRequest. Nothing is
 * added to the path that records a value.
 */
enum rein_otel_metric_kind {
    REIN_OTEL_GAUGE = 1,
    REIN_OTEL_SUM = 2,
    REIN_OTEL_HISTOGRAM = 3,
};

#define REIN_OTEL_MAX_ATTRS 5

/* One series' state at collection time. */
struct rein_otel_point {
    const char *keys[REIN_OTEL_MAX_ATTRS]; /* attribute keys and string values, nattrs each */
    const char *values[REIN_OTEL_MAX_ATTRS];
    size_t nattrs;
    int64_t start_ns;              /* Unix ns since which the series counts (cumulative start) */
    double value;                  /* a gauge's or sum's value; a histogram's sum of observations */
    uint64_t count;                /* histograms: observations */
    const uint64_t *bucket_counts; /* histograms: nbounds + 1 counts, each bucket's own */
    double min, max;               /* histograms with count > 0 */
};

struct rein_otel_metric {
    const char *name, *description, *unit;
    enum rein_otel_metric_kind kind;
    bool monotonic;       /* sums: a counter */
    const double *bounds; /* histograms: the buckets' upper bounds, increasing */
    size_t nbounds;
    struct rein_otel_point *points;
    size_t npoints;
};

/*
 * Describes every metric into *out (*n of them). Everything it points to is allocated in ar
 * (or static) and is read only until ar is freed. Called on the exporter's thread.
 */
typedef rein_err (*rein_otel_collect_fn)(void *userdata, rein_arena *ar,
                                         struct rein_otel_metric **out, size_t *n);

/*
 * Starts exporting metrics when an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_METRICS_*
 * or the common OTEL_EXPORTER_OTLP_* variables, "/v1/metrics" appended to the common
 * endpoint), OTEL_SDK_DISABLED is not true and OTEL_METRICS_EXPORTER is not "none":
 * collect(userdata) every OTEL_METRIC_EXPORT_INTERVAL ms (60000), each send bounded by
 * OTEL_METRIC_EXPORT_TIMEOUT ms (30000), with cumulative temporality. userdata borrowed until
 * rein_trace_shutdown(), which exports once more before it stops. Nothing configured: REIN_OK
 * and export stays off. REIN_EINVAL (err names the variable) for a value rein cannot use;
 * export stays off. A second call while exporting is a no-op.
 */
REIN_EXTERN rein_err rein_trace_metrics_setup(rein_otel_collect_fn collect, void *userdata,
                                              rein_error *err) REIN_WUR;
/* True when metrics are exported. */
REIN_EXTERN bool rein_trace_metrics_enabled(void);

#ifdef __cplusplus
}
#endif
#endif /* REIN_TRACE_H */
