/*
 * Fuzz target for the SSE reader (src/providers/sse.c): any bytes, fed in two pieces split
 * where the first input byte says, in event-stream mode and in one-payload-per-line mode.
 * Every dispatched event must be inside the size bound; nothing may crash or leak.
 */
#include "providers/provider_int.h"

#include <string.h>

#include <assert.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static rein_err on_event(void *ud, const char *event, const char *p, size_t len, rein_error *err)
{
    size_t *count = ud;

    (void)err;
    assert(len <= 4096);
    assert(!event || strlen(event) < 64);
    if (len)
        assert(p != NULL);
    (*count)++;
    return REIN_OK;
}

static void run(const uint8_t *data, size_t size, size_t split, bool lines)
{
    struct rein__sse s;
    size_t count = 0;

    rein__sse_init(&s, 4096, lines, on_event, &count);
    if (rein__sse_feed(&s, (const char *)data, split, NULL) == REIN_OK &&
        rein__sse_feed(&s, (const char *)data + split, size - split, NULL) == REIN_OK)
        (void)(rein__sse_finish(&s, NULL) == REIN_OK);
    rein__sse_release(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t split;

    if (size < 1)
        return 0;
    split = size > 1 ? data[0] % size : 0;
    run(data + 1, size - 1, split ? split - 1 : 0, false);
    run(data + 1, size - 1, split ? split - 1 : 0, true);
    return 0;
}
