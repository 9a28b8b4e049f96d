/*
 * The promise of the one-pass OpenAI chunk reader (src/providers/oachunk.c), checked on one
 * input: an OpenAI SSE stream decoded with the fast path and with every payload through the
 * general path (jtok/jsmn and take_object) gives the same events, the same response, the
 * same notes and the same result or error message, fed whole or in pieces; the same for a
 * whole chat completion body (REIN_WIRE_OPENAI_JSON, oa_compare_body). Shared by
 * fuzz/fuzz_oachunk.c, fuzz/fuzz_openai_body.c and tests/unit/test_oachunk.c. Include after
 * "providers/provider_int.h".
 */
#ifndef REIN_FUZZ_OACHUNK_SAME_H
#define REIN_FUZZ_OACHUNK_SAME_H

#include <rein/core.h>
#include <rein/json.h>
#include <rein/provider.h>

#include <stdio.h>
#include <string.h>

/* Everything a decoder run shows its user, written down. */
struct oa_run {
    struct rein_buf log;
    bool nomem;
};

static void oa_note(struct oa_run *run, const char *p, size_t len)
{
    if (rein_buf_add(&run->log, p, len) || rein_buf_addch(&run->log, '\n'))
        run->nomem = true;
}

static void oa_on_event(const struct rein_model_event *ev, void *ud)
{
    struct oa_run *run = ud;
    char head[160];
    int n =
        snprintf(head, sizeof(head), "ev %d %zu %lld %lld %s|%s|%s|", (int)ev->type, ev->index,
                 (long long)ev->input_tokens, (long long)ev->output_tokens, ev->id ? ev->id : "-",
                 ev->name ? ev->name : "-", ev->finish_reason ? ev->finish_reason : "-");

    oa_note(run, head, n < 0 ? 0 : (size_t)n < sizeof(head) ? (size_t)n : sizeof(head) - 1);
    oa_note(run, ev->text ? ev->text : "", ev->text ? ev->len : 0);
}

/* Decodes len bytes of text as wire (openai-sse or openai-json) in pieces of at most piece
 * bytes; general: every payload through the general path. The log is the caller's to
 * release. */
static void oa_decode(struct oa_run *run, enum rein_wire_format wire, const char *text, size_t len,
                      size_t piece, bool general)
{
    rein_provider_decoder *d;
    rein_model_response *r = NULL;
    rein_error err;
    rein_err rc = REIN_OK;
    char line[64];

    rein_buf_init(&run->log, 0);
    run->nomem = false;
    d = rein_provider_decoder_new(wire, NULL, oa_on_event, run);
    if (!d) {
        run->nomem = true;
        return;
    }
    d->general_only = general;
    rein_error_clear(&err);
    for (size_t at = 0; at < len && !rc; at += piece) {
        size_t k = len - at < piece ? len - at : piece;
        rc = rein_provider_decoder_feed(d, text + at, k, &err);
    }
    if (!rc)
        rc = rein_provider_decoder_finish(d, &r, &err);
    snprintf(line, sizeof(line), "rc %d events %zu", (int)rc, rein_provider_decoder_event_count(d));
    oa_note(run, line, strlen(line));
    oa_note(run, rc ? err.msg : "", rc ? strlen(err.msg) : 0);
    oa_note(run, rein_provider_decoder_notes(d), strlen(rein_provider_decoder_notes(d)));
    if (r) {
        json_t *j = rein_model_response_to_json(r);
        if (!j || rein_json_dump(&run->log, j))
            run->nomem = true;
        json_decref(j);
        rein_model_response_free(r);
    }
    rein_provider_decoder_free(d);
}

enum oa_verdict { OA_SAME, OA_DIFFERENT, OA_NOMEM };

/* Both paths on text as wire, whole and in pieces of 7 and 300 bytes (the text path reads
 * only events whole in a piece: pieces of 300 end in the middle of some); *where (may be NULL)
 * gets the fast path's log of the first difference found, for a message (the caller releases
 * it). */
static enum oa_verdict oa_compare_wire(enum rein_wire_format wire, const char *text, size_t len,
                                       struct rein_buf *where)
{
    static const size_t pieces[] = {SIZE_MAX, 7, 300};
    enum oa_verdict v = OA_SAME;

    for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]) && v == OA_SAME; k++) {
        struct oa_run fast, general;
        oa_decode(&fast, wire, text, len, pieces[k], false);
        oa_decode(&general, wire, text, len, pieces[k], true);
        if (fast.nomem || general.nomem)
            v = OA_NOMEM;
        else if (fast.log.len != general.log.len ||
                 memcmp(fast.log.ptr, general.log.ptr, fast.log.len) != 0)
            v = OA_DIFFERENT;
        if (v == OA_DIFFERENT && where) {
            rein_buf_init(where, 0);
            if (rein_buf_add(where, fast.log.ptr, fast.log.len) ||
                rein_buf_adds(where, "\n--- general path ---\n") ||
                rein_buf_add(where, general.log.ptr, general.log.len))
                v = OA_NOMEM;
        }
        rein_buf_release(&fast.log);
        rein_buf_release(&general.log);
    }
    return v;
}

/* An OpenAI SSE stream, both paths. */
static inline enum oa_verdict oa_compare(const char *text, size_t len, struct rein_buf *where)
{
    return oa_compare_wire(REIN_WIRE_OPENAI_SSE, text, len, where);
}

/* A whole chat completion body (or an error body), both paths. */
static inline enum oa_verdict oa_compare_body(const char *text, size_t len, struct rein_buf *where)
{
    return oa_compare_wire(REIN_WIRE_OPENAI_JSON, text, len, where);
}

#endif /* REIN_FUZZ_OACHUNK_SAME_H */
