/*
 * Fuzz target for the Anthropic event decoder (src/providers/anthropic.c) and the assembler and
 * text-call scanner behind it: each input line is one messages-stream event payload (as in
 * a recorded .stream.jsonl file), fed in pieces. A run that decodes must give a response
 * whose JSON form and neutral message can be built. The same bytes also go through the
 * decoder as SSE framing (event:, comments, error events, a cut last event) and, as a whole
 * JSON body, through the non-streamed decoder. The lines framed as SSE events (a line naming
 * content_block_delta after an event line of that name, one that ends with CR with CRLF) are
 * decoded with the text template (src/providers/sse.c) and through the general path alone,
 * which must show the same events, response, notes and errors (fuzz/oachunk_same.h).
 */
#include "decode.h"
#include "oachunk_same.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void compare_framed(const uint8_t *data, size_t size)
{
    struct rein_buf sse;
    const char *p = (const char *)data, *end = p + size;

    rein_buf_init(&sse, 0);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p), skip = n + (nl ? 1 : 0);
        bool crlf = n && p[n - 1] == '\r';
        const char *eol = crlf ? "\r\n" : "\n";
        if (crlf)
            n--;
        if ((memmem(p, n, "content_block_delta", 19) &&
             (rein_buf_adds(&sse, "event: content_block_delta") || rein_buf_adds(&sse, eol))) ||
            rein_buf_adds(&sse, "data: ") || rein_buf_add(&sse, p, n) || rein_buf_adds(&sse, eol) ||
            rein_buf_adds(&sse, eol))
            abort();
        p += skip;
    }
    if (oa_compare_wire(REIN_WIRE_ANTHROPIC_SSE, sse.ptr ? sse.ptr : "", sse.len, NULL) ==
        OA_DIFFERENT)
        abort();
    rein_buf_release(&sse);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_decode(REIN_WIRE_ANTHROPIC_SSE, true, data, size);
    fuzz_decode(REIN_WIRE_ANTHROPIC_SSE, false, data, size); /* the same bytes as SSE framing */
    fuzz_decode(REIN_WIRE_ANTHROPIC_JSON, false, data, size);
    if (size <= 1 << 16)
        compare_framed(data, size);
    return 0;
}
