/*
 * Fuzz target: rein's configuration file as the provider module reads it
 * (rein_provider_config_load_text: UTF-8 check, JSON, every member) and the scanner that
 * finds the line and column of a member in the text (rein_json_locate), which runs over the
 * raw bytes again after a problem is found. The first line of the input is a JSON Pointer to
 * look up; the rest is the file.
 */
#include <rein/rein.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nl = memchr(text, '\n', size);
    size_t plen = nl ? (size_t)(nl - text) : 0;
    char pointer[256];
    rein_provider_config *cfg;
    rein_error err;
    int line = 0, column = 0;

    if (plen >= sizeof(pointer))
        plen = sizeof(pointer) - 1;
    memcpy(pointer, text, plen);
    pointer[plen] = '\0';
    if (nl) {
        size_t skip = (size_t)(nl - text) + 1;
        text += skip;
        size -= skip;
    }
    if (rein_json_locate(text, size, pointer, &line, &column) && (line < 1 || column < 1))
        abort();
    cfg = rein_provider_config_new();
    if (!cfg)
        return 0;
    rein_error_clear(&err);
    if (rein_provider_config_load_text(cfg, text, size, "fuzz.json", &err) != REIN_OK &&
        (err.line < 1 || err.column < 1 || strncmp(err.msg, "fuzz.json:", 10) != 0))
        abort();
    rein_provider_config_free(cfg);
    return 0;
}
