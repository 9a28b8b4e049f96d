/*
 * Fuzz target for the gateway's client-facing request parsers (src/gateway/openai.c and
 * src/gateway/anthropic.c): the first byte picks the wire (even: OpenAI chat completions,
 * odd: Anthropic messages), the rest is the request body as a client sent it. Nothing may
 * crash, leak or read out of bounds. A refused body names what is wrong, and the error body
 * the client would get for it (with the parameter it names, which comes from the input) is
 * valid JSON in the wire's shape. A parsed body has a conversation, tools with string names
 * and object or absent schemas, include_usage only on a stream, and tools whose bytes, when found
 * in the body, parse to the parsed tools.
 */
#include "gateway/gateway_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The error body must parse and carry the message (OpenAI: error.message; Anthropic:
 * {"type":"error","error":{"type","message"}}). */
static void check_error(const struct rein__gw_wire *wire, const struct rein__gw_bad *bad)
{
    struct rein__gw_err e;
    struct rein_buf out;
    json_t *doc, *err;

    memset(&e, 0, sizeof(e));
    e.status = 400;
    e.param = bad->param[0] ? bad->param : NULL;
    snprintf(e.message, sizeof(e.message), "%s", bad->msg);
    rein_buf_init(&out, REIN_BUF_DEFAULT_MAX);
    if (wire->error(&e, NULL, &out) != REIN_OK)
        abort();
    doc = rein_json_parse(out.ptr, out.len, 0, NULL);
    err = json_object_get(doc, "error");
    if (!json_is_object(err) || !json_is_string(json_object_get(err, "message")) ||
        !json_is_string(json_object_get(err, "type")))
        abort();
    json_decref(doc);
    rein_buf_release(&out);
}

static void check_parsed(const struct rein__gw_req *r)
{
    if (!r->doc || !r->h || !json_is_object(r->passthrough))
        abort();
    /* A name is a string; whether it is a valid tool name (1-64 of A-Z a-z 0-9 _ -, so not
     * empty) is checked when the request's registry is made (check.c), which answers 400. */
    for (size_t i = 0; i < r->ntools; i++) {
        const struct rein__gw_tool *t = &r->tools[i];
        if (!t->name || (t->parameters && !json_is_object(t->parameters)))
            abort();
    }
    if (r->include_usage && !r->stream)
        abort();
    /* The tools' bytes found in the body (the tools cache's key) hold the parsed tools. */
    if (r->tools_raw) {
        json_t *t = rein_json_parse(r->tools_raw, r->tools_raw_len, 0, NULL);
        if (!r->tools_json || !json_equal(t, r->tools_json))
            abort();
        json_decref(t);
    }
    if (r->stop && !json_is_array(r->stop))
        abort();
    for (size_t i = 0; i < rein_history_len(r->h); i++)
        if (!json_is_object(rein_history_get(r->h, i)))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct rein__gw_wire *wire;
    struct rein__gw_req r;
    struct rein__gw_bad bad;
    rein_err rc;

    if (size < 1)
        return 0;
    wire = (data[0] & 1) ? &rein__gw_anthropic : &rein__gw_openai;
    memset(&bad, 0, sizeof(bad));
    rein__gw_req_init(&r, (data[0] & 1) ? REIN_GATEWAY_ANTHROPIC : REIN_GATEWAY_OPENAI);
    rc = wire->parse(&r, (const char *)data + 1, size - 1, &bad);
    if (rc == REIN_OK)
        check_parsed(&r);
    else if (rc == REIN_EINVAL) {
        if (!bad.msg[0])
            abort();
        check_error(wire, &bad);
    } else if (rc != REIN_ENOMEM)
        abort();
    rein__gw_req_release(&r);
    return 0;
}
