/*
 * An OTLP/HTTP collector for the tracing tests (libmicrohttpd on 127.0.0.1, a port the kernel
 * picks). POST /v1/traces with an OTLP/JSON ExportTraceServiceRequest is decoded and kept;
 * the next n requests can be answered with an error status (503 with "Retry-After: 0", or any
 * other) to exercise the exporter's retries. Anything else is 404, a body that is not JSON
 * 400.
 */
#ifndef REIN_TEST_OTLP_RECEIVER_H
#define REIN_TEST_OTLP_RECEIVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct otlp_receiver;

/* Starts the receiver; NULL when it cannot. */
struct otlp_receiver *otlp_start(void);
int otlp_port(const struct otlp_receiver *r);
/* "http://127.0.0.1:PORT" (the receiver's storage). */
const char *otlp_url(const struct otlp_receiver *r);
/* The next n export requests are answered with status (the spans are not kept). */
void otlp_fail_next(struct otlp_receiver *r, int n, unsigned status);
/* Export requests received (kept or refused). */
int otlp_requests(struct otlp_receiver *r);
/* Waits until at least n spans were kept or timeout_ms passed; true when they were. */
bool otlp_wait_spans(struct otlp_receiver *r, size_t n, int timeout_ms);
/* Every kept span so far (a new array of copies); each has an added "resource" member holding
 * its resource's attributes as a plain object {key: value}, and its own "attributes" turned
 * into such an object too ("attrs"), for easy assertions. */
json_t *otlp_spans(struct otlp_receiver *r);
/* The value of header name in the last export request (a copy in r's storage), or NULL. */
const char *otlp_last_header(struct otlp_receiver *r, const char *name);
/* Stops the receiver and frees it. NULL is a no-op. */
void otlp_stop(struct otlp_receiver *r);

/* The first span of spans named name (borrowed), or NULL. */
json_t *otlp_span_named(json_t *spans, const char *name);
/* The string form of attribute key of span (borrowed from span), or NULL. */
const char *otlp_attr_str(json_t *span, const char *key);
/* An int attribute (OTLP/JSON writes them as strings); -1 when absent. */
long long otlp_attr_int(json_t *span, const char *key);
/* The first event of span named name (borrowed), or NULL. */
json_t *otlp_event_named(json_t *span, const char *name);
/* The OTLP/JSON value of an event's attribute ({"stringValue": ...}; borrowed), or NULL. */
json_t *otlp_event_attr(json_t *ev, const char *key);

#endif /* REIN_TEST_OTLP_RECEIVER_H */
