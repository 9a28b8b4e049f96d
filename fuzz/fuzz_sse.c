/*
 * Fuzz target for the SSE reader (src/providers/sse.c): any bytes, fed whole, in two pieces
 * split where the first input byte says, and in small pieces, in event-stream mode and in
 * one-payload-per-line mode. Every dispatched event must be inside the size bound; nothing may
 * crash or leak; and where every feeding succeeds, all three dispatch the same events (a line
 * gathered from pieces reads as the same line whole).
 */
#include "providers/provider_int.h"

#include <string.h>

#include <assert.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static rein_err on_event(void *ud, const char *event, const char *p, size_t len, rein_error *err)
{
    struct rein_buf *log = ud;
    char n[32];

    (void)err;
    assert(len <= 4096);
    assert(!event || strlen(event) < 64);
    if (len)
        assert(p != NULL);
    snprintf(n, sizeof(n), "|%zu|", len);
    if (rein_buf_adds(log, event ? event : "-") || rein_buf_adds(log, n) ||
        (len && rein_buf_add(log, p, len)))
        abort();
    return REIN_OK;
}

/* Feeds size bytes in pieces of piece bytes (the first one split bytes); the events go to
 * log. True when every feed and the finish succeeded. */
static bool run(const uint8_t *data, size_t size, size_t split, size_t piece, bool lines,
                struct rein_buf *log)
{
    struct rein__sse s;
    bool ok = true;

    rein_buf_init(log, 0);
    rein__sse_init(&s, 4096, lines, on_event, log);
    for (size_t at = 0; at < size && ok;) {
        size_t k = at == 0 && split ? split : piece;
        if (k > size - at)
            k = size - at;
        ok = rein__sse_feed(&s, (const char *)data + at, k, NULL) == REIN_OK;
        at += k;
    }
    ok = ok && rein__sse_finish(&s, NULL) == REIN_OK;
    rein__sse_release(&s);
    return ok;
}

static void compare(const uint8_t *data, size_t size, size_t split, size_t piece, bool lines)
{
    struct rein_buf a, b, c;
    bool ok = run(data, size, 0, size ? size : 1, lines, &a);

    ok &= run(data, size, split, size ? size : 1, lines, &b);
    ok &= run(data, size, 0, piece, lines, &c);
    if (ok && (a.len != b.len || a.len != c.len || memcmp(a.ptr, b.ptr, a.len) != 0 ||
               memcmp(a.ptr, c.ptr, a.len) != 0))
        abort();
    rein_buf_release(&a);
    rein_buf_release(&b);
    rein_buf_release(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t split;

    if (size < 1)
        return 0;
    split = size > 1 ? data[0] % size : 0;
    compare(data + 1, size - 1, split ? split - 1 : 0, (size_t)data[0] % 7 + 1, false);
    compare(data + 1, size - 1, split ? split - 1 : 0, (size_t)data[0] % 7 + 1, true);
    return 0;
}
