/*
 * Fuzz target for rein_json_check (src/core/json_check.c): whatever it accepts,
 * rein_json_parse() (jansson with JSON_DECODE_ANY and JSON_ALLOW_NUL) accepts, so a text the
 * store keeps unparsed always reads back; and it accepts whatever jansson accepts, except a
 * text holding a raw NUL byte: jansson drops one NUL that follows a number or true/false/null
 * (it ungets the byte into a buffer where NUL means "empty"), the check refuses it.
 */
#include <rein/rein.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    json_t *tree = rein_json_parse(text, size, 0, NULL);
    rein_error err;
    rein_err rc = rein_json_check(text, size, &err);

    if (rc == REIN_OK && !tree)
        abort();
    if (rc != REIN_OK && tree && !memchr(text, '\0', size))
        abort();
    if (rc != REIN_OK && (rc != REIN_EPARSE || err.line < 1 || err.column < 1 || !err.msg[0]))
        abort();
    json_decref(tree);
    return 0;
}
