/*
 * Fuzz target for the first request head check of the server's acceptor
 * (rein__http_head_verdict in src/server/http_parse.c): any bytes, as a client may send them.
 * Nothing may crash or read out of bounds; the verdict is 0, 400 or 413, is 0 while the head
 * is incomplete, and does not change when more bytes follow a complete head (a body, the next
 * request).
 */
#include "server/server_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool complete = false, again = false;
    int v = rein__http_head_verdict((const char *)data, size, &complete);
    char *more;

    if (v != 0 && v != 400 && v != 413)
        abort();
    if (!complete && v != 0)
        abort();
    if (!complete)
        return 0;
    more = malloc(size + 8);
    if (!more)
        return 0;
    memcpy(more, data, size);
    memcpy(more + size, "x: y\r\n\r\n", 8);
    if (rein__http_head_verdict(more, size + 8, &again) != v || !again)
        abort();
    free(more);
    return 0;
}
