/*
 * W3C Trace Context (include/rein/trace.h): traceparent and tracestate parsed strictly and
 * written back, and the thread's current context that spans and scopes set.
 *
 * The parser follows W3C Trace Context level 1 section 3: a header rein cannot read is
 * treated as absent (the request starts a trace of its own), and an unreadable tracestate is
 * dropped while its traceparent stands. The current context is a thread-local pointer to
 * caller storage (a span's or a scope's), so reading it costs no lock and no allocation.
 */
#include "trace_int.h"

#include <string.h>

static _Thread_local const struct rein_trace_context *current;

/* n lowercase hex digits at s; *nonzero set when any of them is not '0'. */
static bool lower_hex(const char *s, size_t n, bool *nonzero)
{
    *nonzero = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
        *nonzero |= c != '0';
    }
    return true;
}

static int hex_val(char c)
{
    return c <= '9' ? c - '0' : c - 'a' + 10;
}

/* tracestate key: simple-key = lcalpha 0*255(lcalpha / DIGIT / "_" / "-"/ "*" / "/"), or
 * multi-tenant-key = tenant-id "@" system-id (tenant: lcalpha/DIGIT first, up to 241;
 * system: lcalpha first, up to 14). */
static bool key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' ||
           c == '/';
}

static bool state_key_ok(const char *k, size_t n)
{
    const char *at = memchr(k, '@', n);

    if (n == 0)
        return false;
    if (!at) {
        if (n > 256 || !(k[0] >= 'a' && k[0] <= 'z'))
            return false;
        for (size_t i = 1; i < n; i++)
            if (!key_char(k[i]))
                return false;
        return true;
    }
    size_t tn = (size_t)(at - k), sn = n - tn - 1;
    if (tn == 0 || tn > 241 || sn == 0 || sn > 14)
        return false;
    if (!((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= '0' && k[0] <= '9')))
        return false;
    for (size_t i = 1; i < tn; i++)
        if (!key_char(k[i]))
            return false;
    if (!(at[1] >= 'a' && at[1] <= 'z'))
        return false;
    for (size_t i = 2; i <= sn; i++)
        if (!key_char(at[i]))
            return false;
    return true;
}

/* value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E */
static bool state_value_ok(const char *v, size_t n)
{
    if (n == 0 || n > 256 || v[n - 1] == ' ')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c < 0x20 || c > 0x7e || c == ',' || c == '=')
            return false;
    }
    return true;
}

static bool ows(char c)
{
    return c == ' ' || c == '\t';
}

bool rein_tracestate_is_valid(const char *text)
{
    const char *keys[32];
    size_t klen[32], nmembers = 0;
    const char *p = text;

    if (!text || strlen(text) > REIN_TRACESTATE_MAX)
        return false;
    for (;;) {
        const char *end = strchr(p, ','), *eq;
        size_t n = end ? (size_t)(end - p) : strlen(p);

        while (n > 0 && ows(*p)) {
            p++;
            n--;
        }
        while (n > 0 && ows(p[n - 1]))
            n--;
        if (n > 0) { /* empty members (",,") are allowed and skipped */
            eq = memchr(p, '=', n);
            if (!eq || nmembers == REIN_ARRAY_SIZE(keys))
                return false;
            size_t kn = (size_t)(eq - p);
            if (!state_key_ok(p, kn) || !state_value_ok(eq + 1, n - kn - 1))
                return false;
            for (size_t i = 0; i < nmembers; i++)
                if (klen[i] == kn && memcmp(keys[i], p, kn) == 0)
                    return false; /* a key may appear once */
            keys[nmembers] = p;
            klen[nmembers++] = kn;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return true;
}

rein_err rein_trace_context_parse(const char *traceparent, const char *tracestate,
                                  struct rein_trace_context *out, rein_error *err)
{
    const char *v = traceparent;
    bool nz_trace, nz_span, nz;
    size_t len;

    if (!v)
        return rein_error_set(err, REIN_EPARSE, "no traceparent");
    while (ows(*v))
        v++;
    len = strlen(v);
    while (len > 0 && ows(v[len - 1]))
        len--;
    if (len < REIN_TRACEPARENT_LEN || v[2] != '-' || v[35] != '-' || v[52] != '-')
        return rein_error_set(err, REIN_EPARSE,
                              "traceparent is not version-traceid-parentid-flags (%zu bytes)", len);
    if (!lower_hex(v, 2, &nz) || strncmp(v, "ff", 2) == 0)
        return rein_error_set(err, REIN_EPARSE, "traceparent version \"%.2s\" is not valid", v);
    /* Version 00 is exactly 55 bytes; a later version may append fields after a '-'. */
    if (len > REIN_TRACEPARENT_LEN && (strncmp(v, "00", 2) == 0 || v[REIN_TRACEPARENT_LEN] != '-'))
        return rein_error_set(err, REIN_EPARSE, "traceparent has bytes after its flags");
    if (!lower_hex(v + 3, 32, &nz_trace) || !nz_trace)
        return rein_error_set(err, REIN_EPARSE,
                              "traceparent trace-id must be 32 lowercase hex, not all zero");
    if (!lower_hex(v + 36, 16, &nz_span) || !nz_span)
        return rein_error_set(err, REIN_EPARSE,
                              "traceparent parent-id must be 16 lowercase hex, not all zero");
    if (!lower_hex(v + 53, 2, &nz))
        return rein_error_set(err, REIN_EPARSE, "traceparent flags must be 2 lowercase hex");
    memcpy(out->trace_id, v + 3, 32);
    out->trace_id[32] = '\0';
    memcpy(out->span_id, v + 36, 16);
    out->span_id[16] = '\0';
    out->flags = (uint8_t)(hex_val(v[53]) << 4 | hex_val(v[54]));
    out->state[0] = '\0';
    if (tracestate && rein_tracestate_is_valid(tracestate)) {
        size_t n = strlen(tracestate);
        memcpy(out->state, tracestate, n + 1);
    }
    return REIN_OK;
}

void rein_trace_context_format(const struct rein_trace_context *c,
                               char out[REIN_TRACEPARENT_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";

    memcpy(out, "00-", 3);
    memcpy(out + 3, c->trace_id, 32);
    out[35] = '-';
    memcpy(out + 36, c->span_id, 16);
    out[52] = '-';
    out[53] = hex[c->flags >> 4];
    out[54] = hex[c->flags & 15];
    out[55] = '\0';
}

const struct rein_trace_context *rein_trace_current(void)
{
    return current;
}

bool rein_trace_current_traceparent(char out[REIN_TRACEPARENT_LEN + 1])
{
    if (!current) {
        out[0] = '\0';
        return false;
    }
    rein_trace_context_format(current, out);
    return true;
}

void rein_trace_scope_enter(struct rein_trace_scope *s, const struct rein_trace_context *ctx)
{
    s->prev = current;
    s->ctx = ctx;
    current = ctx;
}

void rein_trace_scope_leave(struct rein_trace_scope *s)
{
    current = s->prev;
}

/* span.c starts and ends spans; the pointer itself stays private to this file. */
void rein__trace_set_current(const struct rein_trace_context *c)
{
    current = c;
}
