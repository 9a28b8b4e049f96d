/*
 * rein/gateway.h: rein in front of any agent, by changing one base URL (docs/decisions/0019).
 *
 * A client that speaks the OpenAI chat completions or Responses API, the Anthropic messages
 * API or Google's Gemini API (generateContent, decision 0092) (the official SDKs, LangChain,
 * the Vercel AI SDK, a hand-written loop) sends its request to rein instead of to the model. The gateway turns it into rein's neutral request, forwards it to the
 * configured upstream provider (any of rein's providers and presets: an OpenAI-format client
 * can reach Claude or Ollama and the reverse), and answers in the client's own format, JSON or
 * Server-Sent Events.
 *
 * Every tool call in a reply is checked against the request's own tools (the client runs them;
 * rein only checks) through the one call pipeline (rein_call_run with check_only): the exact
 * name, else a repair to a declared name; arguments that are valid JSON and valid against the
 * tool's parameters / input_schema (defaults are not injected unless asked); calls the model
 * wrote as text become native calls; a duplicate call id is made unique. A reply with an
 * invalid call is handled by the request's policy (header x-rein-on-invalid, else the
 * configured one):
 *   reask  the invalid call and its invalid payload go back to the model, which is asked again
 *          (at most x-rein-max-reasks times, default 2); the client gets only the final reply.
 *          Valid calls of the same reply are kept (the model is told they were accepted).
 *   pass   the reply as the model made it, plus a "rein" member listing each problem
 *   error  422 with the problems
 * While streaming, text deltas go to the client at once; each tool call is held until it is
 * complete and checked, then sent; a re-ask continues the same stream.
 *
 * A structured answer is checked the same way (decision 0100): when the request asks for a JSON
 * object or JSON that follows a schema (response_format, text.format, output_config.format,
 * Gemini's responseMimeType with a response schema; for an upstream of another wire the ask is
 * written in that wire's words), a reply without calls whose text is not JSON, not an object,
 * or not valid against the schema goes through the same policy: re-asked with the validator's
 * messages, 422, or passed with its problem ("invalid_output") in the "rein" member. Under
 * reask and error a streamed structured answer is held until it is checked and sent whole.
 *
 * Server-side tools: a request may name tools of rein's registry (skills, MCP servers' tools)
 * in x-rein-tools ("echo,file_search"), or the configuration names them for every request.
 * Rein offers them to the model next to the client's tools, runs the model's calls to them
 * through the pipeline, and asks the model again until it answers or calls a client tool.
 *
 * Recording: with x-rein-conversation (or record_all), the request is recorded in the store
 * under that conversation through a session (include/rein/session.h): the client's new
 * messages and the reply, one event per upstream call, check, repair and re-ask, and ledger
 * entries for invalid calls, server-side calls and the results the client reports for the
 * calls it ran. Prometheus metrics count invalid calls, repairs, converted text calls and
 * re-asks by model and tool.
 *
 * Request headers the gateway reads: x-rein-on-invalid (reask|pass|error), x-rein-max-reasks
 * (0-10), x-rein-tools (comma-separated tool ids, or "none"), x-rein-conversation (an id as the
 * store takes it), x-rein-fill-defaults (true|false), and, when forward_client_key is set, the
 * client's own key (Authorization: Bearer, x-api-key, x-goog-api-key) for the upstream.
 *
 * Response headers from the upstream (docs/decisions/0086): the ones the provider keeps (its
 * request id and rate limits, rein_model_response_headers) go to the client as they came, a
 * stream's from the first round, a JSON answer's from the final one, an error's from the failed
 * response; OpenAI's x-request-id goes as x-upstream-request-id, as the server sets its own
 * X-Request-Id. Upstream errors also keep their status and Retry-After.
 *
 * Threading: a gateway is made once and then serves any number of requests on any threads at
 * once (rein_gateway_serve); each call's state lives in that call.
 */
#ifndef REIN_GATEWAY_H
#define REIN_GATEWAY_H

#include <rein/cancel.h>
#include <rein/metrics.h>
#include <rein/provider.h>
#include <rein/server.h>
#include <rein/store.h>
#include <rein/tools.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_gateway rein_gateway;

/* The client-facing APIs. Values only grow. */
enum rein_gateway_api {
    REIN_GATEWAY_OPENAI = 0,    /* POST /v1/chat/completions */
    REIN_GATEWAY_ANTHROPIC = 1, /* POST /v1/messages */
    REIN_GATEWAY_RESPONSES = 2, /* POST /v1/responses (OpenAI's Responses API) */
    REIN_GATEWAY_GEMINI = 3,    /* POST /v1beta/models/{model}:generateContent (Google's) */
};

/* What happens to a reply with an invalid tool call. Values only grow. */
enum rein_gateway_policy {
    REIN_GATEWAY_REASK = 0,
    REIN_GATEWAY_PASS = 1,
    REIN_GATEWAY_ERROR = 2,
};
/* "reask", "pass", "error"; static. */
REIN_EXTERN const char *rein_gateway_policy_name(enum rein_gateway_policy p);
/* The policy named text; false (and *out unchanged) for anything else. */
REIN_EXTERN bool rein_gateway_policy_parse(const char *text, enum rein_gateway_policy *out);

#define REIN_GATEWAY_DEFAULT_REASKS      2
#define REIN_GATEWAY_MAX_REASKS          10
#define REIN_GATEWAY_DEFAULT_TOOL_ROUNDS 10
#define REIN_GATEWAY_DEFAULT_KEEP_BYTES  (64 * 1024 * 1024)
#define REIN_GATEWAY_DEFAULT_KEEP_MS     (24 * 3600 * 1000LL)
#define REIN_GATEWAY_DEFAULT_BACKGROUND  16

/* Options for rein_gateway_new(). Zeroed members mean the defaults. */
struct rein_gateway_opts {
    rein_provider *provider;  /* the upstream (borrowed; required; must outlive the gateway) */
    const rein_registry *reg; /* the tools rein may run server-side (borrowed; NULL: none) */
    rein_store *store;        /* where requests are recorded (borrowed; NULL: nowhere) */
    rein_metrics *metrics;    /* borrowed; NULL: the global registry */
    enum rein_gateway_policy on_invalid; /* for requests without x-rein-on-invalid */
    /* Re-asks per request for requests without x-rein-max-reasks: 1-10; 0: the default (2);
     * negative: none (a reply with an invalid call is then answered as the error policy). */
    int max_reasks;
    /* Server-side tools for requests without x-rein-tools: comma-separated ids of reg
     * (borrowed, copied); NULL: none. */
    const char *tools;
    int max_tool_rounds; /* model calls that run server-side tools per request; 0: 10 */
    /* The client's own key (Authorization: Bearer or x-api-key) goes upstream instead of the
     * configured one, unless it is one of the server's API keys (api_keys). */
    bool forward_client_key;
    const char *api_keys; /* the server's REIN_API_KEYS (borrowed, copied), never forwarded */
    /* The client's "model" is sent upstream; otherwise the provider's configured model is. */
    bool model_from_client;
    bool fill_defaults; /* valid calls get the schema's defaults filled in (x-rein-fill-defaults) */
    /* Requests without x-rein-conversation are recorded too, each in a new conversation. */
    bool record_all;
    int64_t lease_ms; /* a recorded request's hold on its conversation; 0: 30000 */
    /* Responses API answers kept in memory for previous_response_id and item_reference
     * (requests with store true, the API's default; decision 0090): at most keep_bytes bytes
     * (0: 64 MiB; negative: none kept), each forgotten once unused for keep_ms (0: 24 h). As
     * much again, with the same age, holds the reasoning of answers of calls to clients of
     * another wire than the upstream's (Claude's thinking, Gemini's thought signatures), put
     * back into their next step (decision 0102). */
    int64_t keep_bytes;
    int64_t keep_ms;
    /* Responses API requests with background true run at most this many at once, a client at
     * most half of them (0: 16; negative: none, such a request gets a 429; decision 0093).
     * Their answers are kept responses: with none kept, none run. */
    int background_max;
};

/*
 * New gateway (opts borrowed; the strings in it are copied). REIN_EINVAL in err when the
 * options cannot work (no provider, a tool in opts->tools that reg does not have or that is
 * destructive). NULL on failure.
 */
REIN_EXTERN rein_gateway *rein_gateway_new(const struct rein_gateway_opts *opts, rein_error *err);
/* NULL is a no-op. Call when no request is being served any more. */
REIN_EXTERN void rein_gateway_free(rein_gateway *g);

/* One client request, as the HTTP adapter hands it over. Everything is borrowed for the call. */
struct rein_gateway_call {
    enum rein_gateway_api api;
    const char *body; /* the request body, len bytes */
    size_t len;
    /* A request header by name (case-insensitive), or NULL; header_data is its userdata. */
    const char *(*header)(void *header_data, const char *name);
    void *header_data;
    const char *trace_id; /* the request's trace id; NULL: a new one */
    rein_cancel *cancel;  /* triggered when the client goes away (may be NULL) */
    /* Gemini's API names the model and whether to stream in the URL, not in the body: the
     * model of the path (NULL: none) and true for :streamGenerateContent. Other APIs: unused. */
    const char *model;
    bool stream;
};

/*
 * Where the answer goes: exactly one reply, or a stream started once and then events. Every
 * function returns REIN_OK, or an error (REIN_ECANCELED: the client is gone) after which the
 * gateway stops the request. Called on the thread of rein_gateway_serve().
 */
struct rein_gateway_sink {
    /* A header of the answer still to start (name and value borrowed, copied). */
    rein_err (*header)(void *data, const char *name, const char *value);
    /* The whole answer: status, content type and body (borrowed). */
    rein_err (*reply)(void *data, int status, const char *content_type, const char *body,
                      size_t len);
    /* Starts a 200 text/event-stream answer. */
    rein_err (*stream_start)(void *data);
    /* One Server-Sent Event: event (NULL: none, as OpenAI sends them) and one line of data.
     * May be NULL when stream_frames is set (the gateway then calls that instead). */
    rein_err (*stream_event)(void *data, const char *event, const char *text, size_t len);
    /*
     * May be NULL. Set: the sink may hold events until flush is called, which the gateway does
     * before every wait (the upstream's next bytes, a server-side tool); the stream's end
     * (rein_gateway_serve returning) sends the rest. One write per upstream read.
     */
    rein_err (*flush)(void *data);
    /*
     * May be NULL. Set: hands what the sink holds on to where its own timers see it (a held
     * stream's: rein_request_sse_start_held()), without sending it now. The gateway calls it
     * when it goes on to work that is no wait for the upstream (the records and checks after
     * each reply), so what a sink holds waits for no store.
     */
    rein_err (*queue)(void *data);
    void *data;
    /*
     * May be NULL. Set: the gateway frames its events itself, the bytes rein_sse_frame_line()
     * (server.h) writes for each, and hands them over in order through this instead of
     * stream_event: before each flush and at each point it would call queue (whether queue is
     * set or not), when a batch passes 60 KiB, and before rein_gateway_serve() returns. The
     * sink queues the bytes in *frames (borrowed) as it would the events they frame, and
     * empties *frames; its memory may be traded for the sink's own (rein_sse_send_framed()). A
     * text chunk is then written once, where it goes.
     */
    rein_err (*stream_frames)(void *data, struct rein_buf *frames);
};

/*
 * Serves one request: parses it, forwards it upstream, checks the reply's tool calls, and
 * answers through sink in the client's format, whatever happened (bad request, upstream error,
 * invalid calls). Returns REIN_OK when an answer was given (or the client went away), else the
 * sink's error. A Responses request with "background": true is answered once its body was
 * read, with the response in progress; the rest runs on the gateway's own workers, and the
 * answer is read with rein_gateway_kept_response (decision 0093). With "stream": true too, the
 * answer is the response's stream, followed as the job makes it (the call returns at its end,
 * or when the client goes away, which leaves the job running); rein_gateway_kept_stream
 * resumes it.
 */
REIN_EXTERN rein_err rein_gateway_serve(rein_gateway *g, const struct rein_gateway_call *call,
                                        const struct rein_gateway_sink *sink) REIN_WUR;

/*
 * A token count for call (docs/decisions/0094), answered through sink (its header and reply;
 * nothing is streamed) in the client's shape: Anthropic's POST /v1/messages/count_tokens
 * ({"input_tokens": N}), the Responses API's POST /v1/responses/input_tokens ({"object":
 * "response.input_tokens", "input_tokens": N}) and Gemini's POST models/MODEL:countTokens
 * (call->model; {"totalTokens": N}). The number is always the upstream's own count
 * (rein_provider_count_tokens), never an estimate:
 *   - an upstream of the client's wire counts the client's body as written, with the model
 *     rein sends to (the client's with model_from_client), the client's anthropic-beta, and its
 *     answer comes back as it came (Gemini's promptTokensDetails included);
 *   - an upstream of another wire that has a count (Anthropic's, the Responses API's,
 *     Gemini's, Bedrock's) gets the request the client's body means:
 *     read by the parser of the client's generate route (Gemini's generateContentRequest
 *     unwrapped; an Anthropic body needs no max_tokens) and written by the upstream's provider
 *     (rein_provider_count_request), the server-side tools offered with it as a request would
 *     offer them.
 * With forward_client_key the client's key goes upstream. Errors in the client's shape: 400
 * for a body that is not a JSON object or that the route's parser refuses, 404 when the
 * upstream's wire has no count (it names the wire) and for the chat completions API, the
 * upstream's error status with its error and Retry-After as rein_gateway_serve() gives them,
 * 502 for an answer without a count or an upstream not reached, 504 when it timed out. Returns
 * REIN_OK when answered (or the client went away), REIN_EINVAL for a NULL argument, else the
 * sink's error. Runs on the calling thread, as long as the upstream takes.
 */
REIN_EXTERN rein_err rein_gateway_count_tokens(rein_gateway *g,
                                               const struct rein_gateway_call *call,
                                               const struct rein_gateway_sink *sink) REIN_WUR;

/*
 * The model list of GET /v1/models in the shape api expects (OpenAI's {"object": "list",
 * "data": [...]}, Anthropic's {"data": [...], "has_more", "first_id", "last_id"}, Gemini's
 * {"models": [{"name": "models/…", …}]}), appended to out.
 */
REIN_EXTERN rein_err rein_gateway_models(rein_gateway *g, enum rein_gateway_api api,
                                         struct rein_buf *out) REIN_WUR;

/* What a client may do with a response the gateway keeps for the Responses API (decision
 * 0090). */
enum rein_gateway_kept_op {
    REIN_GATEWAY_KEPT_GET,         /* GET /v1/responses/{id}: the response as it was answered */
    REIN_GATEWAY_KEPT_INPUT_ITEMS, /* GET /v1/responses/{id}/input_items: its input, as a list */
    REIN_GATEWAY_KEPT_DELETE,      /* DELETE /v1/responses/{id}: forgotten, with its items */
    /* POST /v1/responses/{id}/cancel: a background response stopped (decision 0093), then
     * answered as GET does */
    REIN_GATEWAY_KEPT_CANCEL,
};

/*
 * op on the kept response id (borrowed) for the client of call (its key says whose responses
 * are looked in; its body is not read). query: a query parameter by name, called with
 * call->header_data (NULL: the request has none). *status and out (appended) are the answer
 * in OpenAI's shape: 200; 404 for a response this client has not kept here (asked with store
 * false, forgotten, kept for another key, or the gateway keeps none); 400 for a query it
 * refuses (limit outside 1 to 100, order other than asc or desc, an after that names no input
 * item, stream true: rein_gateway_kept_stream() streams) and for cancelling a response that
 * did not run in the background.
 * input_items reads limit (20), order (desc) and after. A cancel waits up to 10 s for the
 * response to stop. Returns REIN_OK, or REIN_ENOMEM.
 */
REIN_EXTERN rein_err rein_gateway_kept_response(
    rein_gateway *g, const struct rein_gateway_call *call, enum rein_gateway_kept_op op,
    const char *id, const char *(*query)(void *header_data, const char *name), int *status,
    struct rein_buf *out) REIN_WUR;

/*
 * GET /v1/responses/{id}?stream=true[&starting_after=N] (decision 0093): the events of the
 * kept response id (borrowed) of the client of call (its key), a response created with
 * background and stream true, through sink as a 200 text/event-stream: those after sequence
 * number N (query's starting_after; without it all), the ones kept first, then each as the
 * response makes it, ending with its last (response.completed, .incomplete, .failed, which a
 * cancelled one ends with too, or error); exactly the bytes the response's own stream sent.
 * Blocks the calling thread until then, or until the client goes away (a sink write fails or
 * call->cancel is triggered), or rein_gateway_free() (an error event). A response whose events
 * are no longer kept (the gateway keeps keep_bytes of events at most, and those of a response
 * deleted) ends with an error event, or is refused when they were lost before. Refusals answer
 * through sink->reply in OpenAI's shape: 400 for starting_after not a non-negative integer or
 * past the last event, for a response without events (not background, or not streamed) and
 * for one whose events are lost; 404 for a response this client has not kept here; 429 when 8
 * streams follow the response or 256 follow responses in all. Returns REIN_OK when answered
 * (or the client went away), REIN_EINVAL for a NULL argument, else the sink's error.
 */
REIN_EXTERN rein_err rein_gateway_kept_stream(rein_gateway *g, const struct rein_gateway_call *call,
                                              const char *id,
                                              const char *(*query)(void *header_data,
                                                                   const char *name),
                                              const struct rein_gateway_sink *sink) REIN_WUR;

/*
 * The gateway's routes on srv (gw borrowed, must outlive the server): rein in front of clients
 * of the OpenAI and Anthropic APIs.
 *   POST /v1/chat/completions   OpenAI chat completions, JSON or SSE
 *   POST /v1/responses          OpenAI's Responses API, JSON or SSE, or run in the background
 *   GET, DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items,
 *   POST /v1/responses/{id}/cancel   a kept response (rein_gateway_kept_response)
 *   GET /v1/responses/{id}?stream=true[&starting_after=N]   its events (rein_gateway_kept_stream)
 *   POST /v1/messages           Anthropic messages, JSON or SSE
 *   POST /v1/messages/count_tokens   Anthropic's token count (rein_gateway_count_tokens)
 *   POST /v1/responses/input_tokens  the Responses API's token count (the same)
 *   GET  /v1/models             the upstream model (Anthropic's shape with anthropic-version)
 *   POST /v1beta/models/{model}:generateContent        Gemini, JSON (also under /v1/models)
 *   POST /v1beta/models/{model}:streamGenerateContent  Gemini, SSE (?alt=sse)
 *   POST /v1beta/models/{model}:countTokens            Gemini's token count (the same)
 *   GET  /v1beta/models, /v1beta/models/{model}         the upstream model in Gemini's shape
 * With API keys set, clients send one as Authorization: Bearer <key>, x-api-key: <key> or
 * x-goog-api-key: <key> (or Gemini's ?key=<key>).
 * REIN_EINVAL without a server or gateway; the route's errors otherwise.
 */
REIN_EXTERN rein_err rein_gateway_add_routes(rein_server *srv, rein_gateway *gw,
                                             rein_error *err) REIN_WUR;

#ifdef __cplusplus
}
#endif
#endif /* REIN_GATEWAY_H */
