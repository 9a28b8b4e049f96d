/*
 * DashScope's native text-generation API (Alibaba Cloud Model Studio, the wire the dashscope
 * SDKs speak; the OpenAI-compatible mode is the openai wire with the dashscope preset).
 *
 * POST {base}/services/aigc/text-generation/generation with
 *   {"model", "input": {"messages": [...]}, "parameters": {"result_format": "message",
 *    "incremental_output": true (streams), "tools", "tool_choice", "parallel_tool_calls",
 *    "max_tokens", "temperature", "enable_thinking"}}
 * and, for a stream, the header "X-DashScope-SSE: enable". Messages and tools have the chat
 * completions shapes, so their encodings are the openai wire's (cached under it in the
 * history). A reply is output.choices[].message with the finish_reason "null" until the last
 * event, cumulative usage, and {code, message, request_id} errors (an "event:error" in a
 * stream): the openai wire's decoder reads all of it, so this file only encodes.
 */
#include "provider_int.h"

#include <curl/curl.h>

static rein_err dashscope_build_body(rein_provider *p, const rein_model_request *req,
                                     rein_history *h, struct rein_buf *body, rein_error *err)
{
    struct rein_jw w;
    rein_err rc = REIN_OK;

    rein_jw_init(&w, body);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "model");
    rein_jw_str(&w, rein__request_model(p, req));
    rein_jw_key(&w, "input");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "messages");
    rein_jw_arr_begin(&w);
    for (size_t i = 0; !rc && i < rein_history_len(h); i++) {
        const char *piece;
        size_t len;
        rc = rein__history_piece(h, i, p, &rein__wire_openai, &piece, &len);
        if (!rc)
            rein_jw_raw(&w, piece, len);
    }
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    if (rc)
        return rein_error_set(err, rc, "encoding the history: %s", rein_strerror(rc));
    rein_jw_key(&w, "parameters");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "result_format");
    rein_jw_str(&w, "message");
    if (req->stream) {
        /* Each event carries what is new, not everything so far. */
        rein_jw_key(&w, "incremental_output");
        rein_jw_bool(&w, true);
    }
    if (req->ntools) {
        rein_jw_key(&w, "tools");
        rein_jw_raw(&w, req->tools_enc.ptr, req->tools_enc.len);
        if (req->tool_choice)
            rein__openai_tool_choice(&w, req->tool_choice);
        if (req->parallel >= 0) {
            rein_jw_key(&w, "parallel_tool_calls");
            rein_jw_bool(&w, req->parallel > 0);
        }
    }
    if (req->max_tokens > 0) {
        rein_jw_key(&w, "max_tokens");
        rein_jw_int(&w, req->max_tokens);
    }
    if (req->temperature >= 0) {
        rein_jw_key(&w, "temperature");
        rein_jw_double(&w, req->temperature);
    }
    /* Qwen3 refuses a call that is not streamed unless thinking is off. */
    if (!req->stream && (p->cfg.quirks & Q_ENABLE_THINKING_OFF_NONSTREAM)) {
        rein_jw_key(&w, "enable_thinking");
        rein_jw_bool(&w, false);
    } else if (p->cfg.enable_thinking >= 0) {
        rein_jw_key(&w, "enable_thinking");
        rein_jw_bool(&w, p->cfg.enable_thinking > 0);
    }
    rein_jw_obj_end(&w);
    rein__jw_extra(&w, req);
    rein_jw_obj_end(&w);
    rc = rein_jw_finish(&w);
    return rc ? rein_error_set(err, rc, "encoding the request: %s", rein_strerror(rc)) : REIN_OK;
}

static rein_err dashscope_headers(const rein_provider *p, const rein_model_request *req,
                                  struct curl_slist **list)
{
    (void)p;
    return req->stream ? rein__header_add(list, "X-DashScope-SSE: enable") : REIN_OK;
}

const struct rein__wire rein__wire_dashscope = {
    .name = "dashscope",
    .path = "/services/aigc/text-generation/generation",
    .auth = "Authorization: Bearer ",
    .formats = {"dashscope-native-sse", "dashscope-native-json"},
    .framing = REIN__FRAMING_SSE,
    .decode_payload = rein__openai_payload,
    .decode_body = rein__openai_body,
    .encode_message = NULL, /* the openai wire's pieces (build_body asks for them) */
    .encode_tools = rein__openai_encode_tools,
    .build_body = dashscope_build_body,
    .headers = dashscope_headers,
};
