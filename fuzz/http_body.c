/*
 * Fuzz target for the server's own parsers of request bytes (src/server/http_parse.c): the
 * input is split on the first two newlines into a path, a header value and a body. The path
 * goes through route matching (with percent-decoding per segment) and query decoding, the
 * header through content-type, Accept and Authorization parsing, and the body
 * through the JSON parse the JSON routes do. Nothing may crash, leak or read out of bounds,
 * and every decoded id that the matcher hands out must pass or fail the id check cleanly.
 */
#include "server/server_int.h"

/* The parsers are compiled into the target itself so that libFuzzer's coverage instrumentation
 * (applied to this file only by fuzz/CMakeLists.txt) reaches them. */
#include "server/http_parse.c"

#include <rein/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const patterns[] = {"/agent/conversations/{id}", "/agent/conversations",
                                       "/skills/{id}/invoke",
                                       "/agent/conversations/{id}/approvals/{call_id}"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    char *path, *header, *body, *nl;
    size_t body_len;
    rein_arena *arena;
    char *keys[2] = {"k1", "secret"};

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    path = text;
    nl = strchr(path, '\n');
    header = nl ? nl + 1 : text + size;
    if (nl)
        *nl = '\0';
    nl = strchr(header, '\n');
    body = nl ? nl + 1 : text + size;
    if (nl)
        *nl = '\0';
    body_len = size - (size_t)(body - text);

    arena = rein_arena_new(0);
    if (arena) {
        char names[REIN_HTTP_MAX_PARAMS][32];
        char *values[REIN_HTTP_MAX_PARAMS];
        int n = 0;
        for (size_t i = 0; i < REIN_ARRAY_SIZE(patterns); i++) {
            if (rein__http_match(patterns[i], path, arena, names, values, &n)) {
                for (int j = 0; j < n; j++)
                    (void)rein_store_id_is_valid(values[j]);
            }
        }
        rein_arena_free(arena);
    }
    {
        size_t len = strlen(path), out_len;
        char *out = malloc(len + 1);
        if (out) {
            (void)rein__http_pct_decode(path, len, true, out, &out_len);
            free(out);
        }
    }
    (void)rein__http_is_json_type(header);
    (void)rein__http_accepts_sse(header);
    (void)rein__http_bearer_ok(header, keys, 2);
    {
        long v;
        (void)rein__http_parse_uint(header, 1, 100, &v);
    }
    {
        rein_error err;
        json_t *v = rein_json_parse(body, body_len, 0, &err);
        json_decref(v);
    }
    free(text);
    return 0;
}
