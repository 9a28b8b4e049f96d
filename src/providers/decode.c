/*
 * The decoder: bytes of one reply in one wire format in, events and the assembled response
 * out. It owns the framing (SSE, one payload per line, or a whole JSON body) and hands each
 * payload to the wire's handler (its decode_payload / decode_body in struct rein__wire), which
 * reports to the assembler. The HTTP transport, the replay provider, `rein provider parse` and the
 * benchmark all decode through this one path.
 */
#include "provider_int.h"

#include <string.h>

static rein_err on_payload(void *ud, const char *event, const char *data, size_t len,
                           rein_error *err)
{
    struct rein_provider_decoder *d = ud;

    return d->wire->decode_payload(d, event, data, len, err);
}

/* One event stream message: an event goes to the wire under its :event-type; an exception
 * (or an error message) under its type, with d->exception set while it is decoded. */
static rein_err on_message(void *ud, const struct rein__evs_msg *m, rein_error *err)
{
    struct rein_provider_decoder *d = ud;
    rein_err rc;

    d->exception = strcmp(m->message_type, "event") != 0;
    if (strcmp(m->message_type, "error") == 0 && m->len == 0) {
        /* An error message carries its text in headers: as a payload, for the wire. */
        struct rein_buf b;
        struct rein_jw w;
        rein_buf_init(&b, 0);
        rein_jw_init(&w, &b);
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "message");
        rein_jw_str(&w, m->error_message);
        rein_jw_obj_end(&w);
        rc = rein_jw_finish(&w);
        if (!rc)
            rc = d->wire->decode_payload(d, m->event_type, b.ptr, b.len, err);
        rein_buf_release(&b);
    } else {
        rc = d->wire->decode_payload(d, m->event_type, m->payload, m->len, err);
    }
    d->exception = false;
    return rc;
}

/* The name of the format being decoded, for messages. */
static const char *format_name(const struct rein_provider_decoder *d)
{
    return d->wire->formats[d->body];
}

rein_provider_decoder *rein__decoder_new(const struct rein__wire *w, bool body,
                                         const struct rein_decoder_options *opts,
                                         rein_model_event_fn on_event, void *userdata)
{
    rein_provider_decoder *d;
    size_t max;

    if (!w || !w->decode_payload || !w->decode_body)
        return NULL;
    d = rein_calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->wire = w;
    d->body = body;
    if (opts)
        d->opt = *opts;
    max = d->opt.max_event_bytes ? d->opt.max_event_bytes : ((size_t)64 << 20);
    d->opt.max_event_bytes = max;
    d->r = rein__response_new(max);
    if (!d->r) {
        rein_free(d);
        return NULL;
    }
    rein__asm_init(&d->a, d->r, &d->opt, on_event, userdata);
    rein__sse_init(&d->sse, max, d->opt.payload_lines || w->framing == REIN__FRAMING_LINES,
                   on_payload, d);
    /* A recording with one payload per line is read as lines, whatever the wire's framing. */
    d->evs_framing = !body && w->framing == REIN__FRAMING_EVENTSTREAM && !d->opt.payload_lines;
    rein__evs_init(&d->evs, max, on_message, d);
    rein_buf_init(&d->whole, max + 1);
    rein_buf_init(&d->notes, 4096);
    return d;
}

rein_provider_decoder *rein_provider_decoder_new(enum rein_wire_format fmt,
                                                 const struct rein_decoder_options *opts,
                                                 rein_model_event_fn on_event, void *userdata)
{
    bool body;
    const struct rein__wire *w = rein__wire_of_format(fmt, &body);

    return w ? rein__decoder_new(w, body, opts, on_event, userdata) : NULL;
}

void rein_provider_decoder_free(rein_provider_decoder *d)
{
    if (!d)
        return;
    rein__sse_release(&d->sse);
    rein__evs_release(&d->evs);
    rein_buf_release(&d->whole);
    rein_buf_release(&d->notes);
    rein__asm_release(&d->a);
    rein_model_response_free(d->r);
    if (d->wire_state && d->wire->decode_free)
        d->wire->decode_free(d->wire_state);
    rein__openai_chunk_free(d->oa_tmpl);
    rein_free(d->text_tmpl);
    rein_free(d->tok);
    rein_free(d);
}

void rein__decoder_set_id_seed(struct rein_provider_decoder *d, uint64_t seed)
{
    d->a.id_seed = seed;
}

void rein__decoder_set_id_seed_fn(struct rein_provider_decoder *d, uint64_t (*fn)(void *ud),
                                  void *ud)
{
    d->a.id_seed_fn = fn;
    d->a.id_seed_ud = ud;
}

size_t rein__decoder_saw(struct rein_provider_decoder *d, const char *p, size_t len)
{
    if (d->events == 0) {
        size_t n = len < sizeof(d->first) - 1 ? len : sizeof(d->first) - 1;
        for (size_t i = 0; i < n; i++)
            d->first[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
        d->first[n] = '\0';
    }
    return ++d->events;
}

rein_err rein__decoder_bad(struct rein_provider_decoder *d, size_t n, const char *p, size_t len,
                           const char *what, rein_error *err)
{
    char excerpt[48];
    size_t k = len < sizeof(excerpt) - 1 ? len : sizeof(excerpt) - 1;

    for (size_t i = 0; i < k; i++)
        excerpt[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
    excerpt[k] = '\0';
    if (d->body)
        return rein_error_set(err, REIN_EPARSE, "the body is not %s: %s (it begins '%s')",
                              format_name(d), what, excerpt);
    return rein_error_set(err, REIN_EPARSE, "%s %zu (line %zu): %s (it begins '%s')",
                          d->sse.payload_lines ? "line" : "event", n, d->sse.lineno, what, excerpt);
}

bool rein__decoder_cut_at_eof(struct rein_provider_decoder *d, bool cut_short)
{
    if (!cut_short || !d->at_eof)
        return false;
    /* A payload that was never whole is not one the reply had: it is not counted. */
    if (d->events > 0)
        d->events--;
    d->cut = true;
    d->a.r->complete = false;
    rein__decoder_note(d, "the input ends inside its last event (the stream was cut): that "
                          "event was dropped and the reply is incomplete");
    return true;
}

bool rein__decoder_error_text(struct rein_provider_decoder *d, const char *event, const char *p,
                              size_t len)
{
    struct rein_buf b;
    struct rein_jw w;
    json_t *msg = NULL;

    if (!event || strcmp(event, "error") != 0)
        return false;
    while (len &&
           (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r' || p[len - 1] == '\n'))
        len--;
    /* The writer cleans bytes that are not UTF-8; jansson would refuse them. */
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "message");
    rein_jw_strn(&w, p, len);
    rein_jw_obj_end(&w);
    if (rein_jw_finish(&w) == REIN_OK)
        msg = rein_json_parse(b.ptr, b.len, 0, NULL);
    rein_buf_release(&b);
    rein__asm_error(&d->a, msg);
    d->recognized++;
    return true;
}

void rein__decoder_note(struct rein_provider_decoder *d, const char *note)
{
    size_t n = strlen(note);
    const char *p = d->notes.ptr;

    /* Notes are few and short: a linear search keeps them unique. */
    while ((p = strstr(p, note))) {
        if ((p == d->notes.ptr || p[-1] == '\n') && p[n] == '\n')
            return;
        p += n;
    }
    if (rein_buf_add(&d->notes, note, n) == REIN_OK && rein_buf_addch(&d->notes, '\n') != REIN_OK)
        rein_buf_truncate(&d->notes, d->notes.len - n);
}

const char *rein_provider_decoder_notes(const rein_provider_decoder *d)
{
    return d->notes.ptr;
}

size_t rein_provider_decoder_event_count(const rein_provider_decoder *d)
{
    return d->events;
}

rein_err rein_provider_decoder_feed(rein_provider_decoder *d, const void *data, size_t len,
                                    rein_error *err)
{
    rein_err rc;

    if (d->state != 0)
        return rein_error_set(err, REIN_ESTATE, "the decoder has finished or failed");
    if (d->body) {
        rc = rein_buf_add(&d->whole, data, len);
        if (rc == REIN_ETOOBIG)
            rc = rein_error_set(err, REIN_ETOOBIG, "the body is larger than %zu bytes",
                                d->opt.max_event_bytes);
    } else if (d->evs_framing) {
        rc = rein__evs_feed(&d->evs, data, len, err);
    } else {
        /* Text-only events read straight from the bytes (an OpenAI stream's chunks, oachunk.c;
         * a text template's events, sse.c); the reader takes whatever else there is from
         * where they stop. */
        size_t n = 0;
        rc = REIN_OK;
        if (d->oa_tmpl)
            n = rein__openai_text_events(d, data, len, &rc);
        else if (d->text_tmpl)
            n = rein__text_events(d, data, len, &rc);
        if (!rc && n < len)
            rc = rein__sse_feed(&d->sse, (const char *)data + n, len - n, err);
    }
    if (rc) {
        if (rc == REIN_ENOMEM)
            rein_error_set(err, REIN_ENOMEM, "out of memory while decoding");
        d->state = -1;
    }
    return rc;
}

static rein_err decode_body(rein_provider_decoder *d, rein_error *err)
{
    const char *p = d->whole.ptr;
    size_t len = d->whole.len;

    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) {
        p += 3;
        len -= 3;
    }
    return d->wire->decode_body(d, p, len, err);
}

rein_model_response *rein__decoder_salvage(struct rein_provider_decoder *d)
{
    rein_model_response *r;

    if (d->state == 1 || !d->r)
        return NULL;
    d->a.r->complete = false;
    if (rein__asm_end(&d->a) != REIN_OK)
        return NULL;
    d->state = 1;
    r = d->r;
    d->r = NULL;
    return r;
}

rein_err rein_provider_decoder_finish(rein_provider_decoder *d, rein_model_response **out,
                                      rein_error *err)
{
    rein_err rc;

    *out = NULL;
    if (d->state != 0)
        return rein_error_set(err, REIN_ESTATE, "the decoder has finished or failed");
    if (d->body) {
        rc = decode_body(d, err);
    } else if (d->evs_framing) {
        d->at_eof = true;
        if (rein__evs_pending(&d->evs) > 0) {
            d->cut = true;
            rein__decoder_note(d, "the input ends inside its last event stream message (the "
                                  "stream was cut): that message was dropped and the reply is "
                                  "incomplete");
        }
        rc = REIN_OK;
        if (d->cut)
            d->a.r->complete = false;
    } else {
        d->at_eof = true;
        rc = rein__sse_finish(&d->sse, err);
        if (d->cut)
            d->a.r->complete = false; /* whatever came before, the stream was cut */
    }
    if (!rc && !d->body && !d->evs_framing && d->events == 0 && d->sse.lineno > 0 && !d->cut) {
        rc = rein_error_set(err, REIN_EPARSE, "no %s found in %zu lines: this is not %s",
                            d->sse.payload_lines ? "JSON lines" : "SSE data events", d->sse.lineno,
                            format_name(d));
    }
    if (!rc && d->events > 0 && d->recognized == 0 && !d->cut)
        rc = rein_error_set(err, REIN_EPARSE,
                            "none of the %zu payloads has the shape of %s (the first begins "
                            "'%s')",
                            d->events, format_name(d), d->first);
    if (!rc && d->a.other_choices)
        rein__decoder_note(d, "the reply has several choices (n > 1): choice 0 was assembled");
    if (!rc && d->a.messages > 1)
        rein__decoder_note(d, "the recording holds several messages: they were assembled in "
                              "order (text joined, tool calls kept, usage summed)");
    if (!rc && !d->body && !d->cut && !d->a.r->complete && !d->a.r->error && d->events > 0)
        rein__decoder_note(d, "the stream ends without its end marker ([DONE], a finish "
                              "reason, message_stop or done:true): the reply is incomplete");
    if (!rc && d->wire->decode_end)
        rc = d->wire->decode_end(d);
    if (!rc)
        rc = rein__asm_end(&d->a);
    if (rc) {
        if (rc == REIN_ENOMEM)
            rein_error_set(err, REIN_ENOMEM, "out of memory while decoding");
        d->state = -1;
        return rc;
    }
    d->state = 1;
    *out = d->r;
    d->r = NULL;
    return REIN_OK;
}
