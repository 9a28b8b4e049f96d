/*
 * OTLP/HTTP protobuf encoding of spans: an ExportTraceServiceRequest written directly in the
 * protobuf wire format (varints, fixed64, length-delimited fields) with the field numbers of
 * opentelemetry-proto's trace.proto, common.proto and resource.proto (docs/decisions/0029).
 *
 * Not through protobuf-c (which metrics use, otlp_proto.c): packing a span tree with it, after
 * building the tree of messages, was about 60% of the instructions tracing added per span
 * (callgrind, bench/trace_span.sh), as its pack asks every nested message its size again at
 * each level. Here a size pass computes each length-delimited field's size once and keeps it
 * (in the span, its events and attributes) for the write pass, and nothing is allocated but
 * the body. The tests decode the result with protobufjs reading
 * the official .proto files (tests/node/otlp_receiver.mjs), not with this code.
 */
#include "trace_int.h"

#include <rein/version.h>

#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

static size_t vlen(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* A length-delimited field of n bytes (every field number here is below 16: one tag byte). */
static size_t lenf(size_t n)
{
    return 1 + vlen(n) + n;
}

static size_t strf(const char *s)
{
    return lenf(strlen(s));
}

struct w {
    uint8_t *p;
};

static void put_varint(struct w *w, uint64_t v)
{
    while (v >= 0x80) {
        *w->p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *w->p++ = (uint8_t)v;
}

static void put_tag(struct w *w, unsigned field, unsigned type)
{
    *w->p++ = (uint8_t)(field << 3 | type);
}

static void put_len(struct w *w, unsigned field, size_t n)
{
    put_tag(w, field, WT_LEN);
    put_varint(w, n);
}

static void put_bytes(struct w *w, unsigned field, const void *p, size_t n)
{
    put_len(w, field, n);
    memcpy(w->p, p, n);
    w->p += n;
}

static void put_str(struct w *w, unsigned field, const char *s)
{
    put_bytes(w, field, s, strlen(s));
}

static void put_fixed32(struct w *w, unsigned field, uint32_t v)
{
    put_varint(w, field << 3 | 5); /* wire type I32; two tag bytes from field 16 on */
    for (int i = 0; i < 4; i++)
        *w->p++ = (uint8_t)(v >> (8 * i));
}

static void put_fixed64(struct w *w, unsigned field, uint64_t v)
{
    put_tag(w, field, WT_I64);
    for (int i = 0; i < 8; i++)
        *w->p++ = (uint8_t)(v >> (8 * i));
}

/* AnyValue: 1 string, 2 bool, 3 int, 4 double, 5 array (ArrayValue: 1 repeated AnyValue). */
static size_t strs_size(const struct rein__attr *a)
{
    size_t n = 0;

    for (size_t i = 0; i < a->u.strs.n; i++)
        n += lenf(strf(a->u.strs.v[i]));
    return n;
}

static size_t any_size(const struct rein__attr *a)
{
    switch (a->type) {
    case ATTR_STR:
        return lenf(a->u.slen);
    case ATTR_INT:
        return 1 + vlen((uint64_t)a->u.i);
    case ATTR_DOUBLE:
        return 9;
    case ATTR_BOOL:
        return 2;
    case ATTR_STRS:
        return lenf(strs_size(a));
    }
    return 0;
}

static void any_write(struct w *w, const struct rein__attr *a)
{
    switch (a->type) {
    case ATTR_STR:
        put_bytes(w, 1, a->u.s, a->u.slen);
        break;
    case ATTR_INT:
        put_tag(w, 3, WT_VARINT);
        put_varint(w, (uint64_t)a->u.i);
        break;
    case ATTR_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &a->u.d, sizeof(bits));
        put_fixed64(w, 4, bits);
        break;
    }
    case ATTR_BOOL:
        put_tag(w, 2, WT_VARINT);
        *w->p++ = a->u.b ? 1 : 0;
        break;
    case ATTR_STRS:
        put_len(w, 5, strs_size(a));
        for (size_t i = 0; i < a->u.strs.n; i++) {
            put_len(w, 1, strf(a->u.strs.v[i]));
            put_str(w, 1, a->u.strs.v[i]);
        }
        break;
    }
}

/* KeyValue: 1 key, 2 value. The size pass keeps the key's length and the value's size in
 * the attribute for the write pass. */
static size_t kv_size(const struct rein__attr *a)
{
    return lenf(a->klen) + lenf(a->any);
}

static size_t kvs_measure(struct rein__attrs *a)
{
    size_t n = 0;

    for (size_t i = 0; i < a->n; i++) {
        struct rein__attr *at = &a->v[i];
        at->klen = (uint32_t)strlen(at->key);
        at->any = any_size(at);
        n += lenf(kv_size(at));
    }
    return n;
}

static void kvs_write(struct w *w, const struct rein__attrs *a, unsigned field)
{
    for (size_t i = 0; i < a->n; i++) {
        const struct rein__attr *at = &a->v[i];
        put_len(w, field, kv_size(at));
        put_bytes(w, 1, at->key, at->klen);
        put_len(w, 2, at->any);
        any_write(w, at);
    }
}

static void hex_bytes(const char *hex, uint8_t *out, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        int hi = hex[2 * i] <= '9' ? hex[2 * i] - '0' : hex[2 * i] - 'a' + 10;
        int lo = hex[2 * i + 1] <= '9' ? hex[2 * i + 1] - '0' : hex[2 * i + 1] - 'a' + 10;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
}

/* Status: 2 message, 3 code. */
static size_t status_size(const struct rein__span_rec *r)
{
    return r->failed ? 2 + (r->status_msg ? strf(r->status_msg) : 0) : 0;
}

/* The size pass over a span: its encoded size (kept in r->enc, and each event's in e->enc).
 * Span: 1 trace_id, 2 span_id, 3 trace_state, 4 parent_span_id, 5 name, 6 kind, 7 start,
 * 8 end, 9 attributes, 11 events, 15 status, 16 flags (fixed32: the W3C trace flags; OTLP
 * 1.0, so not in the older trace.proto the tests decode with, which keep it as an unknown
 * field). Span.Event: 1 time fixed64, 2 name, 3 attributes. */
static size_t span_measure(struct rein__span_rec *r)
{
    size_t n = lenf(16) + lenf(8) + strf(r->name) + 2 + 9 + 9 + kvs_measure(&r->attrs) +
               lenf(status_size(r));

    if (r->state)
        n += strf(r->state);
    if (r->parent_id[0])
        n += lenf(8);
    if (r->flags)
        n += 2 + 4;
    for (size_t i = 0; i < r->nevents; i++) {
        struct rein__span_event *e = &r->events[i];
        e->enc = 9 + strf(e->name) + kvs_measure(&e->attrs);
        n += lenf(e->enc);
    }
    r->enc = n;
    return n;
}

static void span_write(struct w *w, const struct rein__span_rec *r)
{
    uint8_t id[16];

    hex_bytes(r->trace_id, id, 16);
    put_bytes(w, 1, id, 16);
    hex_bytes(r->span_id, id, 8);
    put_bytes(w, 2, id, 8);
    if (r->state)
        put_str(w, 3, r->state);
    if (r->parent_id[0]) {
        hex_bytes(r->parent_id, id, 8);
        put_bytes(w, 4, id, 8);
    }
    put_str(w, 5, r->name);
    put_tag(w, 6, WT_VARINT);
    put_varint(w, (uint64_t)r->kind);
    put_fixed64(w, 7, (uint64_t)r->start_ns);
    put_fixed64(w, 8, (uint64_t)r->end_ns);
    kvs_write(w, &r->attrs, 9);
    for (size_t i = 0; i < r->nevents; i++) {
        const struct rein__span_event *e = &r->events[i];
        put_len(w, 11, e->enc);
        put_fixed64(w, 1, (uint64_t)e->time_ns);
        put_str(w, 2, e->name);
        kvs_write(w, &e->attrs, 3);
    }
    put_len(w, 15, status_size(r));
    if (r->failed) {
        if (r->status_msg)
            put_str(w, 2, r->status_msg);
        put_tag(w, 3, WT_VARINT);
        put_varint(w, 2); /* STATUS_CODE_ERROR */
    }
    if (r->flags)
        put_fixed32(w, 16, r->flags);
}

rein_err rein__otlp_proto_traces(struct rein_buf *b, struct rein__resource *res,
                                 struct rein__span_rec *const *spans, size_t n)
{
    size_t scope = strf("rein") + strf(REIN_VERSION_STRING);
    size_t resource = kvs_measure(&res->attrs);
    size_t ss = lenf(scope), rs, total;
    struct w w;

    for (size_t i = 0; i < n; i++)
        ss += lenf(span_measure(spans[i]));
    rs = lenf(resource) + lenf(ss);
    total = lenf(rs);
    if (rein_buf_grow(b, total) != REIN_OK)
        return REIN_ENOMEM;
    w.p = (uint8_t *)b->ptr + b->len;
    put_len(&w, 1, rs);       /* ExportTraceServiceRequest.resource_spans */
    put_len(&w, 1, resource); /* ResourceSpans.resource */
    kvs_write(&w, &res->attrs, 1);
    put_len(&w, 2, ss);    /* ResourceSpans.scope_spans */
    put_len(&w, 1, scope); /* ScopeSpans.scope */
    put_str(&w, 1, "rein");
    put_str(&w, 2, REIN_VERSION_STRING);
    for (size_t i = 0; i < n; i++) {
        put_len(&w, 2, spans[i]->enc); /* ScopeSpans.spans */
        span_write(&w, spans[i]);
    }
    b->len += (size_t)(w.p - (uint8_t *)b->ptr - b->len);
    b->ptr[b->len] = '\0';
    return REIN_OK;
}
