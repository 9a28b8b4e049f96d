/*
 * What the wire decoders' fuzz targets share: one input decoded through a reply format by
 * name, fed in three pieces; a run that decodes must give a response whose JSON form and
 * neutral message can be built, and one that fails must still hand out what it salvaged.
 */
#ifndef REIN_FUZZ_WIRE_DECODE_H
#define REIN_FUZZ_WIRE_DECODE_H

#include "providers/provider_int.h"

#include <string.h>

static void fuzz_on_event(const struct rein_model_event *ev, void *ud)
{
    (void)ev;
    (void)ud;
}

/* lines: one payload per line (a recorded .stream.jsonl). */
static void fuzz_decode(const char *format, bool lines, const uint8_t *data, size_t size)
{
    struct rein_decoder_options opt;
    enum rein_wire_format fmt;
    rein_provider_decoder *d;
    rein_model_response *r = NULL;
    size_t piece = size / 3 + 1;

    if (rein_wire_format_parse(format, &fmt) != REIN_OK)
        return;
    memset(&opt, 0, sizeof(opt));
    opt.payload_lines = lines;
    opt.max_event_bytes = 1 << 16;
    d = rein_provider_decoder_new(fmt, &opt, fuzz_on_event, NULL);
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

#endif /* REIN_FUZZ_WIRE_DECODE_H */
