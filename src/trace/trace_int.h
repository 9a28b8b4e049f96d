/*
 * Private to src/trace: the recorded span, the sampler's configuration and the exporter's
 * queue, shared by context.c, span.c, export.c and the encoders (otlp_json.c).
 */
#ifndef REIN_TRACE_INT_H
#define REIN_TRACE_INT_H

#include <rein/buf.h>
#include <rein/trace.h>

enum attr_type { ATTR_STR, ATTR_INT, ATTR_DOUBLE, ATTR_BOOL, ATTR_STRS };

struct rein__attr {
    const char *key; /* borrowed: a literal */
    enum attr_type type;
    union {
        char *s; /* owned */
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

struct rein__span_event {
    char *name;
    int64_t time_ns;
    struct rein__attrs attrs;
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
    char *status_msg; /* may be NULL */
};

void rein__trace_set_current(const struct rein_trace_context *c);
void rein__span_rec_free(struct rein__span_rec *r);
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

/* The same as OTLP protobuf (otlp_proto.c); REIN_ENOTSUP when built without protobuf. */
rein_err rein__otlp_proto_traces(struct rein_buf *b, const struct rein__resource *res,
                                 struct rein__span_rec *const *spans, size_t n);
/* True when this build encodes protobuf. */
bool rein__otlp_proto_available(void);

/* Attribute list helpers (span.c): copies value; false when memory is exhausted. */
bool rein__attrs_add_str(struct rein__attrs *a, const char *key, const char *v, size_t len);
void rein__attrs_release(struct rein__attrs *a);

#endif /* REIN_TRACE_INT_H */
