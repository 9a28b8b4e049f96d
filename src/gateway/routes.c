/*
 * The gateway's routes (rein_gateway_add_routes in include/rein/gateway.h): the HTTP adapter
 * over the rest of the module, on the server's public route API (include/rein/server.h), so
 * they live inside the server's bounds like every route (decision 0014). The two that call
 * the upstream wait on it for as long as the model takes, so they run on the server's waiting
 * pool (REIN_ROUTE_WAITS, decision 0082), not on the workers agent turns share.
 *
 *   POST /v1/chat/completions   an OpenAI chat completions request
 *   POST /v1/messages           an Anthropic messages request
 *   POST /v1/messages/count_tokens, /v1/responses/input_tokens, and Gemini's
 *        /v1beta/models/{model}:countTokens   a token count, by the upstream's own count
 *                               (Claude Code asks for it often; rein_gateway_count_tokens);
 *                               a 404 in the client's shape for a wire that has none
 *   GET, DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items
 *                               a response the gateway keeps (decision 0090), read again,
 *                               its input listed, or forgotten; GET with ?stream=true the
 *                               events of a background stream, followed until its end (so
 *                               that route waits too, decision 0093)
 *   POST /v1/responses/{id}/cancel   a response running in the background stopped (decision
 *                               0093); it waits for the upstream call to end
 *   GET  /v1/models             the upstream model, in the shape the client's SDK reads
 *                               (Anthropic's when the request carries anthropic-version,
 *                               Gemini's when it carries a Google API client's headers)
 *   POST /v1beta/models/{model} Gemini's generateContent, streamGenerateContent and
 *                               countTokens: the route has whole segments only, so the
 *                               segment ("gemini-x:method")
 *                               is split here; another method is a 404 in Gemini's shape.
 *                               The same under /v1 (the SDKs' apiVersion "v1").
 *   GET  /v1beta/models, /v1beta/models/{model}   the upstream model in Gemini's shape
 *
 * The bodies are not parsed here (no REIN_ROUTE_JSON_BODY): the gateway answers a malformed
 * one in the client's own error shape. The request's cancellation handle (the client went
 * away) is the upstream request's. Answers carry X-Trace-Id like every answer of the server.
 */
#include "gateway/gateway_int.h"

#include <rein/server.h>

#include <stdio.h>
#include <string.h>

/* One gateway request: the sink's state. */
struct gw_http {
    rein_request *req;
    rein_sse *sse;
};

static const char *header_of(void *data, const char *name)
{
    return rein_request_header(data, name);
}

static rein_err sink_header(void *data, const char *name, const char *value)
{
    struct gw_http *h = data;

    return rein_request_set_header(h->req, name, value);
}

static rein_err sink_reply(void *data, int status, const char *content_type, const char *body,
                           size_t len)
{
    struct gw_http *h = data;

    return rein_request_reply(h->req, status, content_type, body, len);
}

static rein_err sink_stream_start(void *data)
{
    struct gw_http *h = data;
    rein_error err;

    /* Held: the events of one upstream read go out in one write (sink_flush), and a stream
     * whole before the first flush as one body. */
    h->sse = rein_request_sse_start_held(h->req, &err);
    return h->sse ? REIN_OK : err.code;
}

/* Every event is sent by a flush: the gateway hands its frames over (sink_frames) and flushes
 * before each wait (the upstream's next bytes, a server-side tool); frames handed over without
 * a flush (before the records, at the answer's end) are sent by the server's ticker within 50 ms
 * or by the stream's end. */
static rein_err sink_flush(void *data)
{
    struct gw_http *h = data;

    return h->sse ? rein_sse_flush(h->sse) : REIN_OK;
}

/* The gateway's frames, queued on the held stream in one step (one lock, one copy or none). */
static rein_err sink_frames(void *data, struct rein_buf *frames)
{
    struct gw_http *h = data;

    return rein_sse_send_framed(h->sse, frames);
}

/* The sink that answers the HTTP request of h, JSON or SSE. */
static struct rein_gateway_sink http_sink(struct gw_http *h)
{
    return (struct rein_gateway_sink){
        .header = sink_header,
        .reply = sink_reply,
        .stream_start = sink_stream_start,
        .flush = sink_flush,
        .data = h,
        .stream_frames = sink_frames,
    };
}

/* One request to the gateway: served, or (count) its tokens counted. */
static void serve_call(rein_request *req, rein_gateway *gw, enum rein_gateway_api api,
                       const char *model, bool stream, bool count)
{
    struct gw_http h = {.req = req};
    size_t len = 0;
    const char *body = rein_request_body(req, &len);
    struct rein_gateway_call call = {
        .api = api,
        .body = body,
        .len = len,
        .header = header_of,
        .header_data = req,
        .trace_id = rein_request_trace_id(req),
        .cancel = rein_request_cancel(req),
        .model = model,
        .stream = stream,
    };
    struct rein_gateway_sink sink = http_sink(&h);
    rein_err rc;

    rc = count ? rein_gateway_count_tokens(gw, &call, &sink) : rein_gateway_serve(gw, &call, &sink);
    if (rc == REIN_ECANCELED)
        rc = REIN_OK; /* the client left: nobody to answer */
    if (rc && rc != REIN_ESTATE)
        rein_log(REIN_LOG_WARN, REIN__GW_WHERE, "%s: the answer could not be sent: %s",
                 rein_request_id(req), rein_strerror(rc));
}

static void serve(rein_request *req, rein_gateway *gw, enum rein_gateway_api api)
{
    serve_call(req, gw, api, NULL, false, false);
}

static void handle_chat_completions(rein_request *req, void *userdata)
{
    serve(req, userdata, REIN_GATEWAY_OPENAI);
}

static void handle_messages(rein_request *req, void *userdata)
{
    serve(req, userdata, REIN_GATEWAY_ANTHROPIC);
}

static void handle_responses(rein_request *req, void *userdata)
{
    serve(req, userdata, REIN_GATEWAY_RESPONSES);
}

static void handle_count_tokens(rein_request *req, void *userdata)
{
    serve_call(req, userdata, REIN_GATEWAY_ANTHROPIC, NULL, false, true);
}

static void handle_input_tokens(rein_request *req, void *userdata)
{
    serve_call(req, userdata, REIN_GATEWAY_RESPONSES, NULL, false, true);
}

static const char *query_of(void *data, const char *name)
{
    return rein_request_query(data, name);
}

/* A route that could not write its answer: the reason by its code (memory, nesting too deep),
 * never a guess. */
static void internal_error(rein_request *req, const char *what, rein_err rc)
{
    rein_request_reply_error(req, 500, "internal", "%s could not be written: %s", what,
                             rein_strerror(rc));
}

/* The reads and the deletion of a kept response: no upstream, a lookup in memory. */
static void kept_response(rein_request *req, rein_gateway *gw, enum rein_gateway_kept_op op)
{
    struct rein_gateway_call call = {
        .api = REIN_GATEWAY_RESPONSES,
        .body = "",
        .header = header_of,
        .header_data = req,
        .trace_id = rein_request_trace_id(req),
    };
    const char *id = rein_request_param(req, "id");
    struct rein_buf b;
    int status = 0;
    rein_err rc;

    rein_buf_init(&b, 0);
    rc = rein_gateway_kept_response(gw, &call, op, id ? id : "", query_of, &status, &b);
    if (rc == REIN_OK)
        rein_request_reply(req, status, "application/json", b.ptr, b.len);
    else
        internal_error(req, "the stored response", rc);
    rein_buf_release(&b);
}

/* GET /v1/responses/{id}?stream=true: the response's events, followed on this thread (the
 * route waits) until its end or the client's. */
static void stream_response(rein_request *req, rein_gateway *gw)
{
    struct gw_http h = {.req = req};
    struct rein_gateway_call call = {
        .api = REIN_GATEWAY_RESPONSES,
        .body = "",
        .header = header_of,
        .header_data = req,
        .trace_id = rein_request_trace_id(req),
        .cancel = rein_request_cancel(req),
    };
    struct rein_gateway_sink sink = http_sink(&h);
    const char *id = rein_request_param(req, "id");
    rein_err rc = rein_gateway_kept_stream(gw, &call, id ? id : "", query_of, &sink);

    if (rc && rc != REIN_ECANCELED && rc != REIN_ESTATE)
        rein_log(REIN_LOG_WARN, REIN__GW_WHERE, "%s: the stream could not be sent: %s",
                 rein_request_id(req), rein_strerror(rc));
}

static void handle_get_response(rein_request *req, void *userdata)
{
    const char *stream = rein_request_query(req, "stream");

    if (stream && strcmp(stream, "false") != 0)
        stream_response(req, userdata);
    else
        kept_response(req, userdata, REIN_GATEWAY_KEPT_GET);
}

static void handle_input_items(rein_request *req, void *userdata)
{
    kept_response(req, userdata, REIN_GATEWAY_KEPT_INPUT_ITEMS);
}

static void handle_delete_response(rein_request *req, void *userdata)
{
    kept_response(req, userdata, REIN_GATEWAY_KEPT_DELETE);
}

static void handle_cancel_response(rein_request *req, void *userdata)
{
    kept_response(req, userdata, REIN_GATEWAY_KEPT_CANCEL);
}

/* An error answer in Gemini's shape. */
static void gemini_error(rein_request *req, int status, const char *message)
{
    struct rein__gw_err e = {.status = status};
    struct rein_buf b;
    rein_err rc;

    snprintf(e.message, sizeof(e.message), "%s", message);
    rein_buf_init(&b, 0);
    rc = rein__gw_gemini.error(&e, NULL, &b);
    if (rc == REIN_OK)
        rein_request_reply(req, status, "application/json", b.ptr, b.len);
    else
        internal_error(req, "the error answer", rc);
    rein_buf_release(&b);
}

/* POST .../models/MODEL:METHOD: the model and the method split at the last ':' (a model's
 * name has none; a tuned model's "models/x" is a path of its own). */
static void handle_gemini(rein_request *req, void *userdata)
{
    const char *seg = rein_request_param(req, "model");
    const char *colon = seg ? strrchr(seg, ':') : NULL;
    const char *alt = rein_request_query(req, "alt");
    char model[256], msg[400];

    if (!colon || colon == seg || (size_t)(colon - seg) >= sizeof(model)) {
        snprintf(msg, sizeof(msg),
                 "no method in \"%.200s\": rein's gateway serves "
                 "models/MODEL:generateContent, :streamGenerateContent and :countTokens",
                 seg ? seg : "");
        gemini_error(req, 404, msg);
        return;
    }
    memcpy(model, seg, (size_t)(colon - seg));
    model[colon - seg] = '\0';
    if (strcmp(colon + 1, "generateContent") == 0) {
        serve_call(req, userdata, REIN_GATEWAY_GEMINI, model, false, false);
    } else if (strcmp(colon + 1, "countTokens") == 0) {
        serve_call(req, userdata, REIN_GATEWAY_GEMINI, model, false, true);
    } else if (strcmp(colon + 1, "streamGenerateContent") == 0) {
        /* Without alt=sse Gemini streams one JSON array, which rein's gateway does not write:
         * every SDK asks for SSE. */
        if (!alt || strcmp(alt, "sse") != 0)
            gemini_error(req, 400,
                         "streamGenerateContent: rein's gateway streams as Server-Sent Events "
                         "only; add ?alt=sse");
        else
            serve_call(req, userdata, REIN_GATEWAY_GEMINI, model, true, false);
    } else {
        snprintf(msg, sizeof(msg),
                 "method %.60s is not served by rein's gateway (generateContent, "
                 "streamGenerateContent and countTokens are)",
                 colon + 1);
        gemini_error(req, 404, msg);
    }
}

/* A Google API client: @google/genai and Google's other SDKs send x-goog-api-client; a key
 * in x-goog-api-key is Gemini's too. */
static bool google_client(rein_request *req)
{
    return rein_request_header(req, "x-goog-api-client") ||
           rein_request_header(req, "x-goog-api-key");
}

static void reply_models(rein_request *req, rein_gateway *gw, enum rein_gateway_api api,
                         const char *one)
{
    struct rein_buf b;
    rein_err rc;

    rein_buf_init(&b, 0);
    rc = one ? rein__gw_gm_model(gw, one, &b) : rein_gateway_models(gw, api, &b);
    if (rc == REIN_OK)
        rein_request_reply(req, 200, "application/json", b.ptr, b.len);
    else
        internal_error(req, "the models list", rc);
    rein_buf_release(&b);
}

static void handle_gemini_models(rein_request *req, void *userdata)
{
    reply_models(req, userdata, REIN_GATEWAY_GEMINI, NULL);
}

static void handle_gemini_model(rein_request *req, void *userdata)
{
    const char *name = rein_request_param(req, "model");

    reply_models(req, userdata, REIN_GATEWAY_GEMINI, name ? name : "");
}

static void handle_models(rein_request *req, void *userdata)
{
    enum rein_gateway_api api = rein_request_header(req, "anthropic-version")
                                    ? REIN_GATEWAY_ANTHROPIC
                                : google_client(req) ? REIN_GATEWAY_GEMINI
                                                     : REIN_GATEWAY_OPENAI;
    struct rein_buf b;
    rein_err rc;

    rein_buf_init(&b, 0);
    rc = rein_gateway_models(userdata, api, &b);
    if (rc == REIN_OK)
        rein_request_reply(req, 200, "application/json", b.ptr, b.len);
    else
        internal_error(req, "the models list", rc);
    rein_buf_release(&b);
}

rein_err rein_gateway_add_routes(rein_server *srv, rein_gateway *gw, rein_error *err)
{
    rein_err rc;

    if (!srv || !gw)
        return rein_error_set(err, REIN_EINVAL, "the gateway routes need a server and a gateway");
    rc = rein_server_route(srv, "POST", "/v1/chat/completions", REIN_ROUTE_WAITS,
                           handle_chat_completions, gw, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "POST", "/v1/messages", REIN_ROUTE_WAITS, handle_messages, gw,
                               err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "POST", "/v1/responses", REIN_ROUTE_WAITS, handle_responses, gw,
                               err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "GET", "/v1/responses/{id}", REIN_ROUTE_WAITS,
                               handle_get_response, gw, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "GET", "/v1/responses/{id}/input_items", 0, handle_input_items,
                               gw, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "DELETE", "/v1/responses/{id}", 0, handle_delete_response, gw,
                               err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "POST", "/v1/responses/{id}/cancel", REIN_ROUTE_WAITS,
                               handle_cancel_response, gw, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "POST", "/v1/messages/count_tokens", REIN_ROUTE_WAITS,
                               handle_count_tokens, gw, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "POST", "/v1/responses/input_tokens", REIN_ROUTE_WAITS,
                               handle_input_tokens, gw, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "GET", "/v1/models", REIN_ROUTE_INLINE, handle_models, gw, err);
    /* Gemini: the model's name holds '.' and ':', which an id may not (raw params). */
    for (int v = 0; rc == REIN_OK && v < 2; v++) {
        char path[40];
        snprintf(path, sizeof(path), "/%s/models/{model}", v ? "v1" : "v1beta");
        rc = rein_server_route(srv, "POST", path, REIN_ROUTE_WAITS | REIN_ROUTE_RAW_PARAMS,
                               handle_gemini, gw, err);
    }
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "GET", "/v1beta/models", REIN_ROUTE_INLINE,
                               handle_gemini_models, gw, err);
    if (rc == REIN_OK)
        rc = rein_server_route(srv, "GET", "/v1beta/models/{model}",
                               REIN_ROUTE_INLINE | REIN_ROUTE_RAW_PARAMS, handle_gemini_model, gw,
                               err);
    return rc;
}
