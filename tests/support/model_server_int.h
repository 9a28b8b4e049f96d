/*
 * model_server_int.h: what the files of the scripted model server share (not for tests).
 *
 *   model_server.c         HTTP (libmicrohttpd), the request log, reply selection, faults
 *   model_server_script.c  scenarios: checking and compiling replies, match predicates
 *   model_server_check.c   request validation as the real services do it
 *   model_server_wire.c    rendering replies and errors in each wire format
 *   model_server_gemini.c  Gemini: request validation, conversation helpers, rendering
 *   model_server_bedrock.c Bedrock: SigV4 checked, Converse validated, event streams framed
 */
#ifndef REIN_TEST_MODEL_SERVER_INT_H
#define REIN_TEST_MODEL_SERVER_INT_H

#include "model_server.h"

#include <rein/buf.h>
#include <rein/json.h>

#include <stdarg.h>

enum ms_format {
    MS_FMT_AUTO = 0,
    MS_FMT_OPENAI,
    MS_FMT_ANTHROPIC,
    MS_FMT_OLLAMA,
    MS_FMT_DASHSCOPE, /* DashScope's native text-generation API */
    MS_FMT_GEMINI,    /* the Gemini API's generateContent (model_server_gemini.c) */
    MS_FMT_BEDROCK,   /* Bedrock Converse / ConverseStream (model_server_bedrock.c) */
    MS_FMT_RESPONSES, /* OpenAI's Responses API */
    MS_FMT_UNKNOWN,
};

const char *ms__format_name(enum ms_format f);
/* MS_FMT_AUTO when name is "auto", MS_FMT_UNKNOWN when it names no format. */
enum ms_format ms__format_parse(const char *name);
/* The format a request path implies, or MS_FMT_UNKNOWN. */
enum ms_format ms__format_of_path(const char *path);

/* Fault injection of one reply; -1 means "not set" for the counts. */
struct ms_fault {
    long chunk_bytes;
    long cut_after_bytes;
    long cut_after_events;
    long malformed_after_events;
    char *malformed;
    long error_after_events;
    json_t *error_event; /* {type, message} or NULL */
    bool hang;
    long hang_after_events;
};

/*
 * A compiled reply. spec is the reply object as scripted (owned) and the renderers read
 * content members (text, tool_calls, usage, …) from it directly; everything that decides how
 * the reply is served is pulled out here once.
 */
struct ms_reply {
    json_t *spec;
    int index; /* position in the script, for the log */
    char *name;
    enum ms_format format;
    int stream; /* -1: follow the request */
    int status;
    json_t *headers; /* borrowed from spec, or NULL */
    long delay_headers_ms, delay_first_byte_ms, delay_chunk_ms;
    long delta_bytes;
    char *body; /* raw body (body or body_file), or NULL */
    size_t body_len;
    char *content_type;
    bool wrap_sse; /* "wrap_lines": "sse": each body line is one SSE data payload */
    json_t *match; /* borrowed from spec, or NULL */
    long times;    /* 0: unlimited */
    long used;     /* requests served; guarded by the server's lock */
    int refs;      /* the script holds one, each request being answered one; server's lock */
    struct ms_fault fault;
};

/*
 * Compiles one reply object (borrowed; a reference is kept). where names it in errors
 * ("replies[2]"); base_dir resolves relative body_file paths (NULL: the working folder).
 */
rein_err ms__reply_compile(json_t *spec, const char *where, const char *base_dir,
                           struct ms_reply **out, rein_error *err);
void ms__reply_free(struct ms_reply *r);

/* What a match predicate may look at in a request. */
struct ms_req_view {
    const char *path;
    enum ms_format format;
    const char *body;
    size_t body_len;
    json_t *json; /* NULL when not JSON */
    bool stream;
    size_t nth; /* 1-based request number */
};
bool ms__reply_matches(const struct ms_reply *r, const struct ms_req_view *v);

/* A rendered body: bytes split into events (SSE events, NDJSON lines, a whole JSON body). */
struct ms_body {
    struct rein_buf buf;
    size_t *ends; /* end offset of each event */
    size_t n, cap;
    const char *content_type; /* static text */
    bool chunked;             /* length unknown up front (streams) */
    char error_type[96];      /* Bedrock: the x-amzn-ErrorType header of an error, or "" */
    /* The response's request id: the request-id (Anthropic) or x-request-id (OpenAI) header
     * and an Anthropic error body's request_id, one id as the services send it; a reply's
     * scripted header of that name gives it. */
    char request_id[REIN_ID_MAX];
};
void ms__body_init(struct ms_body *b);
void ms__body_release(struct ms_body *b);
/* Closes the event that ends at the buffer's current length. */
rein_err ms__body_mark(struct ms_body *b);
/* Inserts text as a new event after event k (k >= n: at the end). */
rein_err ms__body_insert(struct ms_body *b, size_t k, const char *text, size_t len);
/* Keeps the first k events. */
void ms__body_keep(struct ms_body *b, size_t k);
/* Splits a raw body into events: at blank lines for SSE, at newlines for NDJSON. */
rein_err ms__body_split_raw(struct ms_body *b, const char *text, size_t len, bool sse);
/*
 * Makes one SSE event of each non-empty line of text (a .stream.jsonl recording): an
 * Anthropic payload gets its "event: <type>" line back, an OpenAI stream its data: [DONE].
 */
rein_err ms__body_wrap_lines(struct ms_body *b, const char *text, size_t len, enum ms_format f);

/* What the renderers need to know about the request being answered. */
struct ms_ctx {
    enum ms_format format;
    json_t *req; /* parsed request body or NULL (borrowed) */
    size_t req_len;
    bool stream;
    bool include_usage; /* OpenAI stream_options.include_usage */
    const char *path;   /* the request's path (Gemini names the model there) */
};

/* ---- a reply's content, gathered once (model_server_wire.c) and rendered per format ---- */

/* A text member split into the deltas a stream sends: borrowed slices of the spec's strings. */
struct parts {
    struct slice {
        const char *p;
        size_t n;
    } * v;
    size_t n;
    size_t total;
};

struct call {
    char id[REIN_ID_MAX];
    const char *name;
    struct parts args; /* a custom call's input */
    char *joined;      /* the whole argument string */
    bool custom;       /* scripted with "input": a custom tool's call */
};

struct content {
    const struct ms_reply *r;
    const struct ms_ctx *c;
    enum ms_format f;
    char id[REIN_ID_MAX];
    const char *model;
    int64_t created;
    struct parts text, reasoning, refusal;
    bool has_text, has_reasoning, has_refusal;
    const char *signature;
    char sigbuf[REIN_ID_MAX];
    json_t *redacted; /* borrowed array or NULL */
    struct call *calls;
    size_t ncalls;
    const char *finish;
    int64_t in_tokens, out_tokens, reasoning_tokens, cached_tokens;
    int64_t cache_write_tokens; /* Anthropic's and Bedrock's prompt-cache writes */
    char modelbuf[128];
};

/* Gathers the reply's content for the request in c; release with ms__content_release. */
rein_err ms__gather(struct content *k, const struct ms_reply *r, const struct ms_ctx *c);
void ms__content_release(struct content *k);
/* The concatenated text of a parts list, as a new string. */
char *ms__parts_join(const struct parts *p);
/* Writes the parts joined, as one JSON string. */
void ms__jw_parts(struct rein_jw *w, const struct parts *p);
const char *ms__str_member(const json_t *o, const char *key);
/* The finish reason given (any format's word for it) in format f's words. */
const char *ms__finish_for(enum ms_format f, const char *given);
/* One event of a body: starts the writer on b after prefix; ends it with suffix and marks the
 * event's end. */
void ms__ev_begin(struct ms_body *b, struct rein_jw *w, const char *prefix);
rein_err ms__ev_end(struct ms_body *b, struct rein_jw *w, const char *suffix);

/* Renders a successful reply (status < 400) into out (initialised by the caller). */
rein_err ms__render_reply(const struct ms_reply *r, const struct ms_ctx *c, struct ms_body *out);

/* An error as the service would word it. Strings are borrowed; NULL means default/null. */
struct ms_error_info {
    int status;
    const char *type;
    const char *message;
    const char *code;
    const char *param;
    bool flat;         /* OpenAI's fields at the top with "object": "error" (Mistral) */
    bool message_json; /* message is JSON text written as it is (Mistral's 422 detail) */
};
/* Renders the JSON error body of format f. */
rein_err ms__render_error(enum ms_format f, const struct ms_error_info *e, struct ms_body *out);
/* Appends one in-stream error event of format f (error_event may be NULL: defaults). */
rein_err ms__render_stream_error(enum ms_format f, const json_t *error_event, struct ms_body *out);

/* The formats added later (model_server_wire2.c), called by the entry points above. */
rein_err ms__ds_stream(struct ms_body *b, const struct content *k);
rein_err ms__ds_json(struct ms_body *b, const struct content *k);
rein_err ms__ds_error(const struct ms_error_info *e, struct ms_body *out, bool event);
/* Gemini (model_server_gemini.c): replies, and errors (event: one in-stream SSE event). */
rein_err ms__gm_stream(struct ms_body *b, const struct content *k);
rein_err ms__gm_json(struct ms_body *b, const struct content *k);
rein_err ms__gm_error(const struct ms_error_info *e, struct ms_body *out, bool event);
/* Bedrock (model_server_bedrock.c): Converse bodies, the binary event stream, errors (event:
 * an exception message whose :exception-type is e->type). */
rein_err ms__bd_stream(struct ms_body *b, const struct content *k);
rein_err ms__bd_json(struct ms_body *b, const struct content *k);
rein_err ms__bd_error(const struct ms_error_info *e, struct ms_body *out, bool event);
rein_err ms__rs_stream(struct ms_body *b, const struct content *k);
rein_err ms__rs_json(struct ms_body *b, const struct content *k);
rein_err ms__rs_stream_error(const json_t *error_event, struct ms_body *out);
/* Fills the default type (and for some statuses, code and message) for a status. */
void ms__error_defaults(enum ms_format f, struct ms_error_info *e);

/*
 * Request validation. Fills v and returns false when the real service would refuse the
 * request (auth, headers, body). headers is the lower-cased header object; api_key NULL
 * skips the key check. The verdict's strings are owned by v (ms__verdict_release).
 */
struct ms_verdict {
    int status;
    char type[48];
    char code[48];
    char *param;
    char *message;
    bool flat;         /* Mistral's {"object": "error", ...}, not wrapped in "error" */
    bool message_json; /* message is JSON text (Mistral's {"detail": [...]}) */
};
/* path: the request's (Bedrock's CountTokens is told from Converse by it). */
bool ms__check_request(enum ms_format f, const char *path, json_t *headers, const char *api_key,
                       bool validate, json_t *body, const char *parse_error, struct ms_verdict *v);
void ms__verdict_release(struct ms_verdict *v);
/* The OpenAI-compatible providers' own refusals of a chat completions body (path: the
 * request's), model_server_compat.c; true when none applies. */
bool ms__compat_check(const char *path, const json_t *body, struct ms_verdict *v);
/* Whether model is one of Mistral's own ids (no "org/", as through OpenRouter): its replies
 * and refusals are Mistral's. */
bool ms__is_mistral(const char *model);
/* Records a refusal: its status, type, code (may be NULL), param (taken, may be NULL) and the
 * message fmt and ap make. Always returns false. */
bool ms__vfail(struct ms_verdict *v, int status, const char *type, const char *code, char *param,
               const char *fmt, va_list ap) REIN_PRINTF(6, 0);
/* Records a refusal with this status, type (the error's status word for Gemini) and message
 * (copied). Always returns false. */
bool ms__verdict_set(struct ms_verdict *v, int status, const char *type, const char *message);

/* The Messages API's body checks alone (no version header, no key): Vertex's body once its
 * own members are checked (model_server_check.c). */
bool ms__an_check_body(const json_t *body, struct ms_verdict *v);

/* Claude on Vertex AI (model_server_vertex.c). */
/* ".../publishers/anthropic/models/M:rawPredict" or ":streamRawPredict" (the count too). */
bool ms__vx_path(const char *path);
/* ".../publishers/anthropic/models/count-tokens:rawPredict". */
bool ms__vx_path_counts(const char *path);
bool ms__vx_path_streams(const char *path);
/* The bearer token (key: the one it must be, NULL any), then (validate) the body; a refusal
 * Vertex makes itself sets *google (its error shape), one of the Messages API's does not. */
bool ms__vx_check(json_t *headers, const char *key, const char *path, bool validate, json_t *body,
                  const char *parse_error, struct ms_verdict *v, bool *google);
/* The count's answer {"input_tokens": N}, N the reply's usage.input_tokens. */
rein_err ms__vx_count(struct ms_body *b, const struct content *k);

/* Gemini (model_server_gemini.c). */
bool ms__gm_check_auth(json_t *headers, const char *key, struct ms_verdict *v);
/* The body of a request to path (which names the model: a gemini-3 one checks the current
 * turn's thought signatures, as Gemini 3 does). */
bool ms__gm_check_body(json_t *body, const char *path, struct ms_verdict *v);
const char *ms__gm_last_role(json_t *req);
char *ms__gm_last_text(json_t *req);
bool ms__gm_tool_result_contains(json_t *req, const char *needle);
bool ms__gm_tools_include(json_t *req, const char *name);
/* The model a Gemini path names (…/models/MODEL:method) into out; false when none. */
bool ms__gm_model_of_path(const char *path, char *out, size_t size);

/* Bedrock (model_server_bedrock.c). key: "ACCESS_KEY_ID:SECRET" (SigV4 recomputed from the
 * request as received), or the whole key as a bearer token. */
bool ms__bd_check_auth(json_t *headers, const char *path, const char *body, size_t body_len,
                       const char *key, struct ms_verdict *v);
bool ms__bd_check_body(json_t *body, struct ms_verdict *v);
/* A CountTokens body: {"input": {"converse": {messages, system, toolConfig,
 * additionalModelRequestFields}}} (checked as Converse checks them) or {"input":
 * {"invokeModel": {"body": BASE64}}}, nothing else. */
bool ms__bd_check_count(json_t *body, struct ms_verdict *v);
/* CountTokens: its answer {"inputTokens": N}, N the reply's usage.input_tokens. */
rein_err ms__bd_count(struct ms_body *b, const struct content *k);
/* "/model/ID/count-tokens" -> true. */
bool ms__bd_path_counts(const char *path);
const char *ms__bd_last_role(json_t *req);
char *ms__bd_last_text(json_t *req);
bool ms__bd_tool_result_contains(json_t *req, const char *needle);
bool ms__bd_tools_include(json_t *req, const char *name);
bool ms__bd_path_streams(const char *path);

/* Helpers shared by the files. */
const char *ms__last_role(enum ms_format f, json_t *req);
/* New string: the last message's text (tool results included); "" when none. */
char *ms__last_text(enum ms_format f, json_t *req);
/* True when a tool result answering the latest assistant turn contains needle. */
bool ms__tool_result_contains(enum ms_format f, json_t *req, const char *needle);
bool ms__tools_include(enum ms_format f, json_t *req, const char *name);
/* The request's chat messages and tools, wherever its format keeps them (DashScope's native
 * API: input.messages and parameters.tools; the Responses API: the input items). Borrowed;
 * NULL when absent. */
const json_t *ms__messages_of(const json_t *req);
const json_t *ms__tools_of(const json_t *req);
/* Appends the text of a content value (string, or array of text/tool_result blocks). */
rein_err ms__content_text(json_t *content, struct rein_buf *out);

#endif /* REIN_TEST_MODEL_SERVER_INT_H */
