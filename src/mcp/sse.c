/*
 * The MCP client's reader of text/event-stream bodies, following the WHATWG rules closely:
 * lines end with CRLF, LF or CR; "data" lines join with "\n"; "id" sets the last event id
 * (remembered across events, ignored when it holds a NUL); "retry" with only digits sets the
 * reconnection delay; "event" names the type; comments and unknown fields are ignored; a blank
 * line dispatches an event when data was seen, including empty data (a priming event only
 * carries an id, and the id must be recorded). A leading UTF-8 BOM is skipped. Lines and
 * events are bounded, so a server cannot make the client buffer without limit. Fed by the
 * HTTP transport in whatever pieces libcurl delivers; fuzzed by fuzz/mcp_sse.c.
 */
#include "mcp/mcp_int.h"

#include <string.h>

void rein__mcp_sse_init(struct rein__mcp_sse *s, size_t max, rein__mcp_sse_fn fn, void *ud)
{
    memset(s, 0, sizeof(*s));
    if (!max)
        max = (size_t)16 << 20;
    rein_buf_init(&s->line, max + 1);
    rein_buf_init(&s->data, max + 1);
    s->retry_ms = -1;
    s->fn = fn;
    s->ud = ud;
}

void rein__mcp_sse_release(struct rein__mcp_sse *s)
{
    rein_buf_release(&s->line);
    rein_buf_release(&s->data);
}

static rein_err dispatch(struct rein__mcp_sse *s)
{
    rein_err rc = REIN_OK;

    if (s->has_data) {
        rc = s->fn(s->ud, s->event[0] ? s->event : NULL, s->last_id[0] ? s->last_id : NULL,
                   s->data.ptr, s->data.len);
    }
    rein_buf_reset(&s->data);
    s->event[0] = '\0';
    s->has_data = false;
    return rc;
}

/* One complete line (no terminator). */
static rein_err line(struct rein__mcp_sse *s, const char *p, size_t len)
{
    const char *colon, *value;
    size_t flen, vlen;

    if (!s->bom_checked) {
        /* A UTF-8 BOM may open the stream; it belongs to no field. */
        s->bom_checked = true;
        if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) {
            p += 3;
            len -= 3;
        }
    }
    if (len == 0)
        return dispatch(s);
    if (p[0] == ':')
        return REIN_OK; /* a comment (heartbeats) */
    colon = memchr(p, ':', len);
    flen = colon ? (size_t)(colon - p) : len;
    value = colon ? colon + 1 : p + len;
    vlen = colon ? len - flen - 1 : 0;
    if (vlen > 0 && value[0] == ' ') {
        value++;
        vlen--;
    }
    if (flen == 4 && memcmp(p, "data", 4) == 0) {
        if ((s->has_data && rein_buf_addch(&s->data, '\n')) || rein_buf_add(&s->data, value, vlen))
            return REIN_ETOOBIG;
        s->has_data = true;
    } else if (flen == 2 && memcmp(p, "id", 2) == 0) {
        if (!memchr(value, '\0', vlen) && vlen < sizeof(s->last_id)) {
            memcpy(s->last_id, value, vlen);
            s->last_id[vlen] = '\0';
        }
    } else if (flen == 5 && memcmp(p, "event", 5) == 0) {
        size_t n = vlen < sizeof(s->event) - 1 ? vlen : sizeof(s->event) - 1;
        memcpy(s->event, value, n);
        s->event[n] = '\0';
    } else if (flen == 5 && memcmp(p, "retry", 5) == 0) {
        int64_t v = 0;
        size_t i;
        for (i = 0; i < vlen && value[i] >= '0' && value[i] <= '9' && v < 100000000; i++)
            v = v * 10 + (value[i] - '0');
        if (vlen > 0 && i == vlen)
            s->retry_ms = v;
    }
    return REIN_OK;
}

rein_err rein__mcp_sse_feed(struct rein__mcp_sse *s, const char *p, size_t len)
{
    rein_err rc;
    for (size_t i = 0; i < len; i++) {
        char ch = p[i];
        if (s->cr) {
            s->cr = false;
            if (ch == '\n')
                continue; /* the LF of a CRLF */
        }
        if (ch == '\r' || ch == '\n') {
            s->cr = ch == '\r';
            rc = line(s, s->line.ptr, s->line.len);
            rein_buf_reset(&s->line);
            if (rc)
                return rc;
            continue;
        }
        /* Copy the run of ordinary bytes at once. */
        size_t j = i;
        while (j < len && p[j] != '\r' && p[j] != '\n')
            j++;
        if (rein_buf_add(&s->line, p + i, j - i))
            return REIN_ETOOBIG;
        i = j - 1;
    }
    return REIN_OK;
}
