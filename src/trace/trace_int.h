/*
 * Private to src/trace: the recorded span, the sampler's configuration and the exporter's
 * queue, shared by context.c, span.c, export.c and the encoders (otlp_json.c).
 */
#ifndef REIN_TRACE_INT_H
#define REIN_TRACE_INT_H

#include <rein/arena.h>
#include <rein/buf.h>
#include <rein/trace.h>

#include <curl/curl.h>
#include <pthread.h>

enum attr_type { ATTR_STR, ATTR_INT, ATTR_DOUBLE, ATTR_BOOL, ATTR_STRS };

struct rein__attr {
    const char *key; /* borrowed: a literal */
    enum attr_type type;
    /* Kept by the protobuf encoder (otlp_spans.c) between its size pass and its write pass,
     * so neither a length nor a nested size is computed twice: the key's length and the
     * AnyValue's encoded size. */
    uint32_t klen;
    size_t any;
    union {
        struct {
            char *s;     /* owned */
            size_t slen; /* its length */
        };
        int64_t i;
        double d;
        bool b;
        struct {
            char **v; /* owned, each owned */
            size_t n;
        } strs;
    } u;
};

struct rein__attrs {
    struct rein__attr *v;
    size_t n, cap;
};

/*
 * A bump allocator: what a recorded span holds (its strings, attribute and event arrays), and
 * the message tree of a metrics export, are carved from blocks that are freed all at once,
 * instead of one malloc and free per string. The first block may be storage the owner
 * provides (a span record's own tail).
 */
struct rein__bump_block {
    struct rein__bump_block *next;
    size_t cap;
    max_align_t data[];
};
struct rein__bump {
    char *p;     /* the free part of the current block */
    size_t left; /* its bytes */
    char *first; /* the owner's storage, or NULL */
    size_t first_cap;
    struct rein__bump_block *blocks; /* allocated ones, newest first */
    size_t total;                    /* their bytes */
};
/* b over the owner's storage first (may be NULL with cap 0). */
void rein__bump_init(struct rein__bump *b, void *first, size_t cap);
/* n bytes aligned for any type, zeroed; NULL when memory is exhausted. */
void *rein__bump_alloc(struct rein__bump *b, size_t n);
char *rein__bump_strndup(struct rein__bump *b, const char *s, size_t n);
/* Frees the allocated blocks (not the owner's storage). */
void rein__bump_release(struct rein__bump *b);

struct rein__span_event {
    char *name;
    int64_t time_ns;
    struct rein__attrs attrs;
    size_t enc; /* its encoded size (otlp_spans.c's size pass) */
};

/* A span being recorded or waiting for export. Invariant: ids are valid W3C ids;
 * parent_id is "" for a root span; end_ns is 0 until the span ended. */
struct rein__span_rec {
    char trace_id[REIN_TRACE_ID_LEN + 1];
    char span_id[REIN_SPAN_ID_LEN + 1];
    char parent_id[REIN_SPAN_ID_LEN + 1];
    uint8_t flags;
    char *state; /* tracestate, or NULL */
    char *name;
    enum rein_span_kind kind;
    int64_t start_ns, end_ns;
    struct rein__attrs attrs;
    struct rein__span_event *events;
    size_t nevents, ecap;
    bool failed;
    char *status_msg;                 /* may be NULL */
    size_t enc;                       /* its encoded size (otlp_spans.c's size pass) */
    struct rein__span_rec *pool_next; /* in the pool of records to reuse (span.c) */
    /* Every string and array above lives here: the record's own tail first
     * (REIN__SPAN_INLINE bytes, allocated with it), then blocks as needed. */
    struct rein__bump store;
    max_align_t tail[];
};

#define REIN__SPAN_INLINE 1024

void rein__trace_set_current(const struct rein_trace_context *c);
/* Releases what r holds and keeps r for a later span (up to a bound), else frees it. */
void rein__span_rec_free(struct rein__span_rec *r);
/* The same for n records at once (the exporter after a batch). */
void rein__span_recs_free(struct rein__span_rec *const *r, size_t n);
/* Frees the records kept for reuse (rein_trace_shutdown). */
void rein__span_pool_drain(void);
int64_t rein__trace_now_ns(void);

/* The sampler's verdict for a new span: parent NULL for a root. */
bool rein__trace_sample(const struct rein_trace_context *parent, const char *trace_id);
/* Hands a finished span to the exporter (taken); false when dropped (and freed). */
bool rein__trace_enqueue(struct rein__span_rec *r);

/* The resource every batch names (service.name and OTEL_RESOURCE_ATTRIBUTES). */
struct rein__resource {
    struct rein__attrs attrs;
};

/* Appends an ExportTraceServiceRequest in OTLP/JSON for n spans to b. */
rein_err rein__otlp_json_traces(struct rein_buf *b, const struct rein__resource *res,
                                struct rein__span_rec *const *spans, size_t n);

/* The same as OTLP protobuf (otlp_spans.c), which keeps sizes in the spans' and the resource's
 * attributes while it encodes (so neither is const). */
rein_err rein__otlp_proto_traces(struct rein_buf *b, struct rein__resource *res,
                                 struct rein__span_rec *const *spans, size_t n);
/* True when this build encodes protobuf. */
bool rein__otlp_proto_available(void);

/* Appends an ExportMetricsServiceRequest in OTLP/JSON (otlp_json.c) or protobuf
 * (otlp_proto.c; REIN_ENOTSUP without protobuf) for n metrics collected at now_ns,
 * cumulative, to b. */
rein_err rein__otlp_json_metrics(struct rein_buf *b, const struct rein__resource *res,
                                 const struct rein_otel_metric *m, size_t n, int64_t now_ns);
rein_err rein__otlp_proto_metrics(struct rein_buf *b, const struct rein__resource *res,
                                  const struct rein_otel_metric *m, size_t n, int64_t now_ns);

/* Stops the metric exporter after a last export (metrics.c); no-op when it is not running. */
void rein__metrics_shutdown(int64_t timeout_ms);
/* Adds the metric exporter's counts to out (metrics.c). */
void rein__metrics_stats(struct rein_trace_stats *out);

/* ---- otlp_http.c: one OTLP/HTTP destination and sending to it ----------------------------- */

#define REIN__OTLP_HEADERS_MAX 32

/* Where a signal (traces, metrics) goes and how; mu and cv also guard what the signal's
 * exporter thread shares with other threads (the span queue) and wake it. */
struct rein__otlp_target {
    char *url;
    bool json;
    long timeout_ms;
    struct curl_slist *headers; /* Content-Type and the configured ones */
    size_t nheaders;
    struct rein__resource resource;
    CURL *easy; /* used by the exporter thread only */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool sync_ready; /* mu and cv initialised */
    bool stop;
    int64_t stop_deadline_ms; /* after stop: give up sending past this */
};

/* A variable's value, NULL when unset or empty. */
const char *rein__env(const char *name);
bool rein__env_true(const char *name);
/* A positive integer variable up to max, or def when unset; false (err names it) otherwise. */
bool rein__env_long(const char *name, long def, long max, long *out, rein_error *err);
/* True when an endpoint for signal ("TRACES", "METRICS") is configured. */
bool rein__otlp_configured(const char *signal);
/* Reads OTEL_EXPORTER_OTLP_[signal_]{ENDPOINT,PROTOCOL,HEADERS,TIMEOUT} (path appended to the
 * base endpoint), OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES into t (zeroed by the
 * caller). REIN_EINVAL names a variable rein cannot use. Release t either way. */
rein_err rein__otlp_target_configure(struct rein__otlp_target *t, const char *signal,
                                     const char *path, rein_error *err);
void rein__otlp_target_release(struct rein__otlp_target *t);
/* Asks t's exporter thread to stop, sending for at most timeout_ms more. */
void rein__otlp_stop(struct rein__otlp_target *t, int64_t timeout_ms);
/* Waits ms or until stop; false when stopping cut the wait short. Called without t->mu. */
bool rein__otlp_pause(struct rein__otlp_target *t, int64_t ms);
/* POSTs body to t, retrying 429/502/503/504 and unreachable collectors with backoff (within
 * the stop deadline once stopping); true when the collector took it. Exporter thread only. */
bool rein__otlp_send(struct rein__otlp_target *t, const struct rein_buf *body);

/* Attribute list helpers (span.c) for lists on the heap (the resource; a span's attributes
 * live in its store): copies value; false when memory is exhausted. */
bool rein__attrs_add_str(struct rein__attrs *a, const char *key, const char *v, size_t len);
void rein__attrs_release(struct rein__attrs *a);

#endif /* REIN_TRACE_INT_H */
