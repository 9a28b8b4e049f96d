/*
 * Fuzz target for rein_json_is_written_form (src/core/json_canon.c): a text it accepts parses
 * (rein_json_parse, flags 0), and writing the parsed value (rein_json_dump) gives the text back
 * byte for byte, so copying it is the same as parsing and writing it. And a text that parses
 * and writes back as itself with no number past 18 digits, no real and no NUL is accepted, so
 * the copy serves every text rein's own writer made.
 */
#include <rein/rein.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* True when the written text holds something the check leaves to the parse path although the
 * writer made it: a real or a long integer (digits after a value start), or an escaped NUL. */
static bool left_to_parse(const char *text, size_t len)
{
    size_t digits = 0;
    bool in_string = false;

    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\' && i + 1 < len) {
                if (len - i >= 6 && memcmp(text + i, "\\u0000", 6) == 0)
                    return true;
                i++;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"')
            in_string = true;
        if (c == '.' || c == 'e' || c == 'E')
            return true;
        digits = (c >= '0' && c <= '9') ? digits + 1 : 0;
        if (digits > 18)
            return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    bool written = rein_json_is_written_form(text, size);
    json_t *tree = rein_json_parse(text, size, 0, NULL);
    struct rein_buf b;
    bool same;

    if (written && !tree)
        abort();
    if (!tree)
        return 0;
    rein_buf_init(&b, 0);
    if (rein_json_dump(&b, tree) != REIN_OK)
        abort();
    same = b.len == size && memcmp(b.ptr, text, size) == 0;
    if (written && !same)
        abort();
    /* Depth and the count of open keys are limits of the check, not of the writer. */
    if (same && !written && !left_to_parse(text, size) && size < 64)
        abort();
    rein_buf_release(&b);
    json_decref(tree);
    return 0;
}
