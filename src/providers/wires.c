/*
 * The wire table: every wire protocol rein speaks over HTTP, once, in the order their reply
 * formats are numbered (enum rein_wire_format: the streamed format of the wire at index i is
 * 2i + 1, its body format 2i + 2). Wires, and formats by name, are looked up here and
 * nowhere else; a new wire is its file and one row at the end of this table (append only, so
 * the numbers of the formats already known never change).
 */
#include "provider_int.h"

#include "core/internal.h"

#include <string.h>

static const struct rein__wire *const wires[] = {
    &rein__wire_openai, &rein__wire_anthropic, &rein__wire_ollama,    &rein__wire_dashscope,
    &rein__wire_gemini, &rein__wire_bedrock,   &rein__wire_responses,
};

const struct rein__wire *rein__wire_find(const char *name)
{
    for (size_t i = 0; name && i < REIN_ARRAY_SIZE(wires); i++) {
        if (strcmp(wires[i]->name, name) == 0)
            return wires[i];
    }
    return NULL;
}

const struct rein__wire *rein__wire_of_format(enum rein_wire_format fmt, bool *body)
{
    size_t n = (size_t)fmt;

    if (n < 1 || n > 2 * REIN_ARRAY_SIZE(wires))
        return NULL;
    *body = (n - 1) % 2 == 1;
    return wires[(n - 1) / 2];
}

const struct rein__wire *rein__wire_with_framing(enum rein__framing framing)
{
    for (size_t i = 0; i < REIN_ARRAY_SIZE(wires); i++) {
        if (wires[i]->framing == framing)
            return wires[i];
    }
    return NULL;
}

rein_err rein_wire_format_parse(const char *name, enum rein_wire_format *out)
{
    for (size_t i = 0; name && i < REIN_ARRAY_SIZE(wires); i++) {
        for (int k = 0; k < 2; k++) {
            const char *alias = wires[i]->alias_formats[k];
            if (strcmp(name, wires[i]->formats[k]) == 0 || (alias && strcmp(name, alias) == 0)) {
                *out = (enum rein_wire_format)(2 * i + 1 + (size_t)k);
                return REIN_OK;
            }
        }
    }
    return REIN_EINVAL;
}

const char *rein_wire_format_name(enum rein_wire_format fmt)
{
    bool body;
    const struct rein__wire *w = rein__wire_of_format(fmt, &body);

    return w ? w->formats[body] : "?";
}
