/*
 * Fuzz target for the one-pass OpenAI chunk reader and its template (src/providers/oachunk.c):
 * each line of the input becomes one SSE event's data, and the stream is decoded with the
 * fast path and with every payload through the general path; the two must show the same
 * events, response, notes and errors (fuzz/oachunk_same.h). Streams of near-identical
 * chunks, as the seeds have, are what the template reads, and their text-only chunks what
 * the text path reads straight from the stream. The framing varies with the lines: one that
 * ends with CR is framed with CRLF, and one that starts with ':' or "event:" is a line of the
 * stream as it is (a comment, an event name for the next data).
 */
#include "providers/provider_int.h"

#include "oachunk_same.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rein_buf sse;
    const char *p = (const char *)data, *end = p + size;

    if (size > 1 << 16)
        return 0;
    rein_buf_init(&sse, 0);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p), skip = n + (nl ? 1 : 0);
        bool crlf = n && p[n - 1] == '\r';
        bool raw = (n && p[0] == ':') || (n >= 6 && memcmp(p, "event:", 6) == 0);
        if (crlf)
            n--;
        if ((!raw && rein_buf_adds(&sse, "data: ")) || rein_buf_add(&sse, p, n) ||
            rein_buf_adds(&sse, raw    ? "\n"
                                : crlf ? "\r\n\r\n"
                                       : "\n\n"))
            abort();
        p += skip;
    }
    if (oa_compare(sse.ptr ? sse.ptr : "", sse.len, NULL) == OA_DIFFERENT)
        abort();
    rein_buf_release(&sse);
    return 0;
}
