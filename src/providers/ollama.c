/*
 * Ollama's native chat API (/api/chat): NDJSON while streaming, one object otherwise.
 *
 * Each line carries message.content (text), message.thinking (reasoning) and, for tool
 * calls, whole calls in message.tool_calls: arguments as a JSON object (its exact text is
 * the raw argument string) and no call id, so made-up ids (stable per request) are given
 * and the ledger pairs results with calls in order. Calls may arrive in any line, the final
 * done:true line included; done_reason, prompt_eval_count and eval_count end the reply. An
 * {"error": "…"} line is the provider's error.
 *
 * Encoding: messages as /api/chat wants them: tool calls with arguments as an object (the
 * raw string inserted as is when it is an object), tool results as role "tool" with
 * "tool_name", reasoning as "thinking".
 */
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include "jpull.h"

#include <curl/curl.h>
#include <stdio.h>

/* ---------------------------------------------------------------------------------------
 * Decoding
 */

static rein_err take_calls(struct rein_provider_decoder *d, const struct jdoc *doc, int arr)
{
    struct rein_buf name, raw;
    rein_err rc = REIN_OK;
    int i = arr + 1;

    rein_buf_init(&name, 4096);
    rein_buf_init(&raw, 0);
    for (int k = 0; k < doc->t[arr].size && !rc; k++, i = jnext(doc, i)) {
        int fn = JGET(doc, i, "function");
        int args = JGET(doc, fn, "arguments");
        struct rein__jstr nm = jstr(doc, JGET(doc, fn, "name"));
        uint32_t hi = 0;
        size_t len = 0;
        const char *p = "";
        int idx;

        rein_buf_reset(&name);
        rein_buf_reset(&raw);
        rc = rein__json_unescape(&name, nm.p, nm.len, &hi);
        if (!rc)
            rc = rein__json_unescape_flush(&name, &hi);
        if (!rc && jis(doc, args, JSMN_STRING)) {
            struct rein__jstr a = jstr(doc, args);
            rc = rein__json_unescape(&raw, a.p, a.len, &hi);
            if (!rc)
                rc = rein__json_unescape_flush(&raw, &hi);
            p = raw.ptr;
            len = raw.len;
        } else if (!rc && args >= 0 && !jnull(doc, args)) {
            p = jraw(doc, args, &len);
        }
        if (rc)
            break;
        idx = rein__asm_call_whole(&d->a, name.ptr, name.len, p, len, false, true);
        if (idx < 0)
            rc = idx;
        else
            rc = rein__asm_call_close(&d->a, (size_t)idx);
    }
    rein_buf_release(&name);
    rein_buf_release(&raw);
    return rc;
}

static rein_err take_object(struct rein_provider_decoder *d, const struct jdoc *doc, int obj)
{
    int msg = JGET(doc, obj, "message"), e = JGET(doc, obj, "error"), i;
    bool known = false;
    rein_err rc = REIN_OK;

    if (e >= 0 && !jnull(doc, e)) {
        json_t *v = jtree(doc, e);
        if (v && !json_is_object(v)) {
            json_t *o = json_pack("{s:o}", "message", v);
            v = o;
        }
        rein__asm_error(&d->a, v);
        known = true;
    }
    if (jis(doc, msg, JSMN_OBJECT)) {
        static const struct rein__jstr none = {"", 0, false};
        known = true;
        if ((rc = rein__asm_identity(&d->a, none, jstr(doc, JGET(doc, obj, "model")))))
            return rc;
        i = JGET(doc, msg, "thinking");
        if (jis(doc, i, JSMN_STRING))
            rc = rein__asm_reasoning(&d->a, jstr(doc, i));
        i = JGET(doc, msg, "content");
        if (!rc && jis(doc, i, JSMN_STRING))
            rc = rein__asm_text(&d->a, jstr(doc, i));
        i = JGET(doc, msg, "tool_calls");
        if (!rc && jis(doc, i, JSMN_ARRAY))
            rc = take_calls(d, doc, i);
        if (rc)
            return rc;
    }
    i = JGET(doc, obj, "done");
    if (i >= 0) {
        known = true;
        if (jtrue(doc, i)) {
            int64_t in = -1, out = -1;
            int dr = JGET(doc, obj, "done_reason");
            if (jis(doc, dr, JSMN_STRING))
                rc = rein__asm_finish_reason(&d->a, jstr(doc, dr));
            (void)jint(doc, JGET(doc, obj, "prompt_eval_count"), &in);
            (void)jint(doc, JGET(doc, obj, "eval_count"), &out);
            rein__asm_usage(&d->a, in, out);
            rein__asm_complete(&d->a);
        }
    }
    if (known)
        d->recognized++;
    return rc;
}

static rein_err ollama_payload(struct rein_provider_decoder *d, const char *event, const char *p,
                               size_t len, rein_error *err)
{
    struct jdoc doc;
    size_t n = rein__decoder_saw(d, p, len);
    int r = jdoc_parse(&doc, p, len, &d->tok, &d->tokcap);

    (void)event;
    if (r == JSMN_ERROR_NOMEM)
        return REIN_ENOMEM;
    if (r <= 0 && rein__decoder_cut_at_eof(d, r == JSMN_ERROR_PART))
        return REIN_OK;
    if (r <= 0 || doc.t[0].type != JSMN_OBJECT || jnext(&doc, 0) != doc.n)
        return rein__decoder_bad(
            d, n, p, len,
            r == JSMN_ERROR_PART ? "the JSON is cut short" : "a line must be one JSON object", err);
    return take_object(d, &doc, 0);
}

static rein_err ollama_body(struct rein_provider_decoder *d, const char *p, size_t len,
                            rein_error *err)
{
    struct jdoc doc;
    int r;
    rein_err rc;

    rein__decoder_saw(d, p, len);
    r = jdoc_parse(&doc, p, len, &d->tok, &d->tokcap);
    if (r == JSMN_ERROR_NOMEM)
        return REIN_ENOMEM;
    if (r <= 0 || doc.t[0].type != JSMN_OBJECT || jnext(&doc, 0) != doc.n) {
        rein_error jerr;
        rein_error_clear(&jerr);
        json_t *v = rein_json_parse(p, len, 0, &jerr);
        json_decref(v);
        return rein__decoder_bad(d, 0, p, len, v ? "the body must be one JSON object" : jerr.msg,
                                 err);
    }
    rc = take_object(d, &doc, 0);
    if (!rc && !d->recognized)
        return rein__decoder_bad(d, 0, p, len, "no message, done or error member", err);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * Encoding
 */

/* The images Ollama's chat API takes (images: base64, decoded by the server as PNG or JPEG). */
static bool ollama_takes_media(const char *mime)
{
    return strcmp(mime, "image/png") == 0 || strcmp(mime, "image/jpeg") == 0;
}

/* A user message's attachments: its images in images, base64 as they are; the others are
 * named as not sent in its content (rein__jw_text_notes). */
static void user_images(struct rein_jw *w, const json_t *msg)
{
    const json_t *atts = json_object_get(msg, "attachments");
    size_t i, n = 0;
    json_t *a;

    json_array_foreach(atts, i, a)
    {
        if (!ollama_takes_media(rein__json_str(a, "mime_type")))
            continue;
        if (!n++) {
            rein_jw_key(w, "images");
            rein_jw_arr_begin(w);
        }
        rein_jw_str(w, rein__json_str(a, "data"));
    }
    if (n)
        rein_jw_arr_end(w);
}

static rein_err ollama_encode_message(const rein_provider *p, const json_t *msg,
                                      struct rein_buf *out)
{
    const char *role = rein__json_str(msg, "role");
    const json_t *calls = json_object_get(msg, "tool_calls");
    struct rein_jw w;
    size_t i;
    json_t *c;

    (void)p;
    rein_jw_init(&w, out);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "role");
    rein_jw_str(&w, role);
    rein_jw_key(&w, "content");
    if (strcmp(role, "tool") == 0)
        rein__jw_tool_text(&w, msg, "Ollama's chat API");
    else if (strcmp(role, "user") == 0)
        rein__jw_text_notes(&w, msg, "Ollama's chat API", ollama_takes_media, NULL);
    else
        rein_jw_str(&w, rein__json_str(msg, "content"));
    if (strcmp(role, "user") == 0)
        user_images(&w, msg);
    if (strcmp(role, "tool") == 0 && rein__json_str(msg, "name")[0]) {
        rein_jw_key(&w, "tool_name");
        rein_jw_str(&w, rein__json_str(msg, "name"));
    }
    if (strcmp(role, "assistant") == 0 && rein__json_str(msg, "reasoning")[0]) {
        rein_jw_key(&w, "thinking");
        rein_jw_str(&w, rein__json_str(msg, "reasoning"));
    }
    if (strcmp(role, "assistant") == 0 && json_array_size(calls)) {
        rein_jw_key(&w, "tool_calls");
        rein_jw_arr_begin(&w);
        json_array_foreach(calls, i, c)
        {
            rein_jw_obj_begin(&w);
            rein_jw_key(&w, "function");
            rein_jw_obj_begin(&w);
            rein_jw_key(&w, "name");
            rein_jw_str(&w, rein__json_str(c, "name"));
            rein_jw_key(&w, "arguments");
            rein__jw_tool_args_raw(&w, rein__json_str(c, "arguments"));
            rein_jw_obj_end(&w);
            rein_jw_obj_end(&w);
        }
        rein_jw_arr_end(&w);
    }
    rein_jw_obj_end(&w);
    return rein_jw_finish(&w);
}

/*
 * think, Ollama's switch for a thinking model (decision 0095): true or false, but a level for
 * gpt-oss, which cannot stop thinking and ignores the booleans.
 */
static void ollama_think(struct rein_jw *w, const rein_provider *p, const rein_model_request *req)
{
    enum rein_reasoning e = rein__reasoning_effort(p, req, "think");
    const char *model = rein__request_model(p, req);

    if (e == REIN_REASONING_UNSET)
        return;
    rein_jw_key(w, "think");
    if (e == REIN_REASONING_NONE || !strstr(model, "gpt-oss"))
        rein_jw_bool(w, e != REIN_REASONING_NONE);
    else
        rein_jw_str(w, e <= REIN_REASONING_LOW      ? "low"
                       : e == REIN_REASONING_MEDIUM ? "medium"
                                                    : "high");
}

static rein_err ollama_build_body(rein_provider *p, const rein_model_request *req, rein_history *h,
                                  struct rein__body *body, rein_error *err)
{
    struct rein_jw w;
    rein_err rc;
    const char *msgs;
    size_t len;

    /* The messages first: with their size known the body is allocated once, and a large
     * block of them is not copied at all (rein__body_block). */
    rc = rein__history_joined(h, p, &rein__wire_ollama, &msgs, &len);
    if (!rc)
        rc = rein_buf_grow(&body->buf,
                           (len < REIN__SPLICE_MIN ? len : 0) + req->tools_len + BODY_SLACK);
    if (rc)
        return rein_error_set(err, rc, "encoding the history: %s", rein_strerror(rc));
    rein_jw_init(&w, &body->buf);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "model");
    rein_jw_str(&w, rein__request_model(p, req));
    rein_jw_key(&w, "messages");
    rein_jw_arr_begin(&w);
    rein__body_block(body, &w, msgs, len); /* the items, commas included */
    rein_jw_arr_end(&w);
    if (req->ntools) {
        /* Ollama takes OpenAI's tool list; it has no tool_choice. */
        rein_jw_key(&w, "tools");
        rein_jw_raw(&w, req->tools_json, req->tools_len);
    }
    rein_jw_key(&w, "stream");
    rein_jw_bool(&w, req->stream);
    ollama_think(&w, p, req);
    rein__jw_output_ollama(&w, req);
    if (rein__request_has_settings(req)) {
        rein_jw_key(&w, "options");
        rein_jw_obj_begin(&w);
        rein__jw_limits(&w, req, "num_predict");
        rein__jw_top_p(&w, req, "top_p");
        rein__jw_stop(&w, req, "stop");
        rein_jw_obj_end(&w);
    }
    rein__jw_extra(&w, req);
    rein_jw_obj_end(&w);
    rc = rein_jw_finish(&w);
    return rc ? rein_error_set(err, rc, "encoding the request: %s", rein_strerror(rc)) : REIN_OK;
}

const struct rein__wire rein__wire_ollama = {
    .name = "ollama",
    .path = "/api/chat",
    .auth = "Authorization: Bearer ",
    .formats = {"ollama-ndjson", "ollama-json"},
    .framing = REIN__FRAMING_LINES,
    .stop_max = REIN_STOP_MAX, /* options.stop: no limit in Ollama's API */
    .reasoning = true,
    .output_format = true,
    .decode_payload = ollama_payload,
    .decode_body = ollama_body,
    .encode_message = ollama_encode_message,
    .encode_tools = rein__openai_encode_tools, /* Ollama takes the OpenAI tool list */
    .takes_media = ollama_takes_media,
    .build_body = ollama_build_body,
};
