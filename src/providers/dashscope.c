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
                                     rein_history *h, struct rein__body *body, rein_error *err)
{
    struct rein_jw w;
    rein_err rc = REIN_OK;

    rein_jw_init(&w, &body->buf);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "model");
    rein_jw_str(&w, rein__request_model(p, req));
    rein_jw_key(&w, "input");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "messages");
    rein_jw_arr_begin(&w);
    rc = rein__jw_history(&w, h, 0, p, &rein__wire_openai, err);
    if (rc)
        return rc;
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    rein_jw_key(&w, "parameters");
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "result_format");
    rein_jw_str(&w, "message");
    if (req->stream) {
        /* Each event carries what is new, not everything so far. */
        rein_jw_key(&w, "incremental_output");
        rein_jw_bool(&w, true);
    }
    rein__jw_tools(&w, req, &rein__wire_dashscope, rein__openai_tool_choice);
    rein__jw_limits(&w, req, "max_tokens");
    rein__jw_top_p(&w, req, "top_p");
    rein__jw_stop(&w, req, "stop");
    rein__jw_thinking(&w, p, req);
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
    .stop_max = REIN_STOP_MAX, /* parameters.stop: no limit in the API reference */
    .decode_payload = rein__openai_payload,
    .decode_body = rein__openai_body,
    .encode_message = NULL, /* the openai wire's pieces (build_body asks for them) */
    .encode_tools = rein__openai_encode_tools,
    .build_body = dashscope_build_body,
    .headers = dashscope_headers,
};
