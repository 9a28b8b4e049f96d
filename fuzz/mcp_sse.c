/*
 * Fuzz target: the MCP client's text/event-stream reader (src/mcp/sse.c), fed what an HTTP
 * MCP server sends. The input is split at a position taken from its first byte, so events
 * broken across pieces are covered. The reader must never hand out more data than it was
 * given, must honour its size limit, and its remembered id and retry must stay well-formed.
 */
#include <rein/rein.h>

#include "mcp/mcp_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct totals {
    size_t bytes;
    size_t limit;
};

static rein_err on_event(void *ud, const char *event, const char *id, const char *data, size_t len)
{
    struct totals *t = ud;

    if (len > t->limit || (id && strlen(id) >= 256) || (event && strlen(event) >= 64))
        abort();
    if (len && !data)
        abort();
    /* The message path: what an event carries is decoded like any other message. */
    struct rein__mcp_msg m;
    if (rein__mcp_decode(data, len, 0, &m, NULL, NULL) == REIN_OK)
        rein__mcp_msg_release(&m);
    t->bytes += len;
    return REIN_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct totals t = {0, 4096};
    struct rein__mcp_sse sse;
    size_t cut;

    if (size == 0 || size > 1 << 20)
        return 0;
    cut = data[0] % size;
    rein__mcp_sse_init(&sse, t.limit, on_event, &t);
    if (rein__mcp_sse_feed(&sse, (const char *)data + 1, cut > 0 ? cut - 1 : 0) == REIN_OK &&
        rein__mcp_sse_feed(&sse, (const char *)data + (cut > 0 ? cut : 1),
                           size - (cut > 0 ? cut : 1)) != REIN_OK &&
        t.bytes > size)
        abort(); /* a refused stream still never hands out more than it got */
    if (sse.retry_ms < -1)
        abort();
    rein__mcp_sse_release(&sse);
    return 0;
}
