/*
 * The decoding run every provider decoder's fuzz target makes (included by each target, which
 * is one file): the input fed in three pieces to a decoder of one format (one payload per
 * line, or the format's own framing), with the tool names offered and report mode picked by
 * the first byte; a run that decodes must give a response whose JSON form and neutral
 * message can be built, one that fails hands out what it salvaged.
 */
#ifndef REIN_FUZZ_DECODE_H
#define REIN_FUZZ_DECODE_H

#include "providers/provider_int.h"

#include <string.h>

static void on_event(const struct rein_model_event *ev, void *ud)
{
    (void)ev;
    (void)ud;
}

static void fuzz_decode(enum rein_wire_format fmt, bool lines, const uint8_t *data, size_t size)
{
    struct rein_decoder_options opt;
    rein_provider_decoder *d;
    rein_model_response *r = NULL;
    const char *names[] = {"get_weather", "search"};
    size_t piece = size / 3 + 1;

    memset(&opt, 0, sizeof(opt));
    opt.payload_lines = lines;
    opt.max_event_bytes = 1 << 16;
    if (size && (data[0] & 1)) {
        opt.tool_names = names;
        opt.tool_name_count = 2;
    }
    if (size && (data[0] & 2))
        opt.text_calls = REIN_TEXT_CALLS_REPORT;
    d = rein_provider_decoder_new(fmt, &opt, on_event, NULL);
    if (!d)
        return;
    for (size_t off = 0; off < size; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        if (rein_provider_decoder_feed(d, data + off, n, NULL) != REIN_OK)
            break;
    }
    if (rein_provider_decoder_finish(d, &r, NULL) == REIN_OK) {
        json_t *j = rein_model_response_to_json(r);
        json_t *m = rein_model_response_message(r);
        json_decref(j);
        json_decref(m);
        rein_model_response_free(r);
    } else {
        rein_model_response_free(rein__decoder_salvage(d));
    }
    rein_provider_decoder_free(d);
}

/* The same run for a format found by name (wires added later have no enum constant). */
static inline void fuzz_decode_named(const char *format, bool lines, const uint8_t *data,
                                     size_t size)
{
    enum rein_wire_format fmt;

    if (rein_wire_format_parse(format, &fmt) == REIN_OK)
        fuzz_decode(fmt, lines, data, size);
}

#endif /* REIN_FUZZ_DECODE_H */
