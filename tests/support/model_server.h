/*
 * model_server.h: the scripted model server, a test peer that stands in for api.openai.com,
 * api.anthropic.com and a local Ollama over real HTTP on 127.0.0.1.
 *
 * It speaks the wire formats exactly (OpenAI chat completions, Anthropic messages, Ollama
 * /api/chat; JSON bodies and streams), validates every request the way the real services do
 * (answering 400/401 with their error shapes), serves replies from a script, injects faults
 * (slow headers, slow or split bodies, cut connections, malformed events, in-stream errors,
 * hangs) and records every request. It shares no code with rein's providers, so it catches
 * their bugs instead of repeating them.
 *
 * ENDPOINTS (the format of a reply is chosen from the path unless the reply names one)
 *   POST /v1/chat/completions  (any path ending in /chat/completions)     "openai"
 *   POST /v1/messages                                                     "anthropic"
 *   POST /api/chat                                                        "ollama"
 *   POST /v1/responses  (any path ending in /responses)                   "responses"
 *        (OpenAI's Responses API: input items, function tools strict by default as the API
 *        checks them, typed SSE events; an in-stream error is an error event, then
 *        response.failed)
 *   POST /api/v1/services/aigc/text-generation/generation (any path ending so)  "dashscope"
 *        (DashScope's native API: input.messages, parameters; streams when the request has
 *        X-DashScope-SSE: enable; errors {code, message, request_id})
 *   POST …/models/MODEL:generateContent, …/models/MODEL:streamGenerateContent  "gemini"
 *        (the Gemini API's /v1beta and Vertex AI's …/publishers/google paths alike; the method
 *        decides streaming; the key in x-goog-api-key or Authorization: Bearer; a stream is
 *        SSE as with ?alt=sse; errors are google.rpc.Status bodies {"error": {code, message,
 *        status}}, the status word taken from "error.type" when scripted)
 *   POST /model/MODEL/converse, /model/MODEL/converse-stream                  "bedrock"
 *        (SigV4 checked when the scenario's key is "ID:SECRET"; model_server_bedrock.c)
 *   POST /v1/projects/P/locations/L/publishers/anthropic/models/MODEL:rawPredict and
 *        :streamRawPredict                                                     "anthropic"
 *        (Claude on Vertex AI, model_server_vertex.c: a bearer token required, Google's 401
 *        otherwise; no "model" in the body, "anthropic_version": "vertex-2023-10-16"; the rest
 *        checked as /v1/messages; the method decides streaming), and
 *        …/publishers/anthropic/models/count-tokens:rawPredict  its count: the model in the body,
 *        the answer {"input_tokens": N} with the reply's usage.input_tokens
 *   POST /model/MODEL/count-tokens  Bedrock's CountTokens: the body checked strictly, the
 *        answer {"inputTokens": N} with the reply's usage.input_tokens (default: an estimate)
 *   any other path: 404 (OpenAI's "Invalid URL" error) unless a reply's match.path names it
 *   GET  /__requests    the request log as a JSON array (see ms_requests_json)
 *   POST /__script      a scenario (below); replaces the script, or appends with ?append=1
 *   POST /__reset       drops the script and the log
 *   GET  /__health      {"ok":true}
 * Base URLs for clients: OpenAI SDKs take ms_openai_url() ("http://127.0.0.1:PORT/v1");
 * Anthropic SDKs and Ollama take ms_url() ("http://127.0.0.1:PORT").
 *
 * SCENARIO (a JSON file, the body of POST /__script, or text given to ms_script)
 *   { "name": "retry-after-invalid",  shown in errors; default: the file name or "inline"
 *     "api_key": "sk-test",           when set, requests must carry this key: OpenAI
 *                                     "Authorization: Bearer KEY", Anthropic "x-api-key: KEY"
 *                                     or "Authorization: Bearer KEY" (as Anthropic SDKs 1.x
 *                                     send it); 401 with the service's error otherwise
 *     "validate": true,               false serves requests the real services would refuse
 *     "description": "...",           ignored
 *     "replies": [ REPLY, ... ] }
 *   A bare array of replies, or a single reply object, is accepted as well.
 *
 * REPLY (every member is optional; unknown members are an error, so typos do not pass)
 *   "name": "label"                   copied into the request log
 *   "format": "auto"                  or "openai" | "anthropic" | "ollama" | "dashscope" |
 *                                     "gemini" | "responses": the wire format
 *   "stream": true|false              default: the request's "stream" (Ollama: true unless false)
 *   "status": 200                     HTTP status; >= 400 sends the format's error body
 *   "headers": {"Retry-After": "2"}   extra response headers. Every reply carries a request id
 *                                     as the service does (Anthropic request-id, also as an
 *                                     error body's request_id; OpenAI x-request-id); a
 *                                     scripted header of that name is the id instead
 *   "delay_headers_ms": 0             before the status line and headers
 *   "delay_first_byte_ms": 0          after the headers, before the first body byte
 *   "delay_chunk_ms": 0               between two writes of the body
 *   "model": "gpt-4o"                 default: the request's model
 *   "id": "chatcmpl-1"                message id; default: generated
 *   "text": "Hello" | ["Hel","lo"]    the answer; an array gives the exact stream deltas
 *   "reasoning": "..." | [...]        thinking: an Anthropic thinking block, OpenAI-compatible
 *                                     "reasoning_content", Ollama "thinking"
 *   "signature": "..."                the thinking block's signature (Anthropic)
 *   "redacted_thinking": ["data"]     Anthropic redacted_thinking blocks
 *   "refusal": "..." | [...]          OpenAI refusal; Anthropic: text with stop_reason "refusal"
 *   "tool_calls": [ {"id": "call_1", "name": "read",
 *                    "arguments": "{\"path\":\"a\"}" | ["{\"pa", "th\":\"a\"}"]} ]
 *                                     arguments are the raw string the model sends (any bytes,
 *                                     even invalid JSON); an array gives the exact deltas. The
 *                                     id defaults to a generated call_…/toolu_… id. Where the
 *                                     format needs an object (Anthropic non-stream "input",
 *                                     Ollama "arguments") text that parses is embedded as is,
 *                                     anything else is sent as a JSON string.
 *   "usage": {"input_tokens": 10, "output_tokens": 5, "reasoning_tokens": 0,
 *             "cached_tokens": 0,     default: about one token per 4 bytes of request/answer
 *             "cache_write_tokens": 0} (prompt-cache writes: Anthropic and Bedrock only)
 *   "finish_reason": "stop"           "stop" | "tool_calls" | "length" | "content_filter", mapped
 *                                     per format (Anthropic end_turn/tool_use/max_tokens/
 *                                     refusal; Ollama stop/length); any other text is sent as
 *                                     is. Default: "tool_calls" when there are calls, else "stop"
 *   "delta_bytes": 16                 size of generated deltas for string text/arguments
 *                                     (split on UTF-8 character boundaries)
 *   "error": {"type": "...", "message": "...", "code": "...", "param": "..."}
 *                                     the error body for status >= 400 (defaults per status)
 *   "body": "raw text"                served verbatim instead of a generated body (e.g. a
 *   "body_file": "x.sse"              recorded fixture; a relative path is resolved against
 *                                     the scenario file's folder); SSE/NDJSON bodies are split
 *                                     into events at blank lines/newlines for the faults below
 *   "content_type": "text/event-stream"  with body/body_file (default: SSE for a stream,
 *                                     NDJSON for an Ollama stream, else application/json)
 *   "wrap_lines": "sse"               with body/body_file: each non-empty line is one SSE
 *                                     data payload (a .stream.jsonl recording); Anthropic
 *                                     payloads get their "event: <type>" line back and an
 *                                     OpenAI stream ends with data: [DONE]
 *   "times": 1                        how many requests this reply serves; 0: every request
 *   "match": MATCH                    serve this reply only to requests that match
 *   "fault": {
 *     "chunk_bytes": N                write the body in pieces of N bytes (split UTF-8 and
 *                                     JSON anywhere)
 *     "cut_after_bytes": N            close the connection after N body bytes
 *     "cut_after_events": K           close the connection after K events (mid tool call)
 *     "malformed_after_events": K     insert a malformed line after K events
 *     "malformed": "data: {\"broken\n\n"   the inserted text (this is the default)
 *     "error_after_events": K         after K events send an in-stream error event, then end
 *                                     the stream cleanly (Anthropic: event: error with
 *                                     overloaded_error, no message_stop; OpenAI: data:
 *                                     {"error":{...}}; Ollama: {"error": "..."})
 *     "error_event": {"type": "overloaded_error", "message": "Overloaded", "code": "..."}
 *     "hang": true                    never answer (no headers) until the client goes away or
 *                                     the server stops
 *     "hang_after_events": K          send K events, then stall the same way }
 *   Events are SSE events (OpenAI, Anthropic) or NDJSON lines (Ollama); a JSON body is one
 *   event. K larger than the number of events means "at the end".
 *
 * MATCH (every given member must hold)
 *   "path": "/v1/messages"  "format": "anthropic"  "model": "m"  "stream": true
 *   "nth": 3                          the request's position in the log, 1-based
 *   "last_role": "user" | "assistant" | "tool"   (an Anthropic user message made of
 *                                     tool_result blocks counts as "tool")
 *   "last_contains": "text"           the last message's text, tool results included
 *   "tool_result_contains": "text"    a tool result answering the latest assistant turn
 *                                     (OpenAI/Ollama: the trailing tool messages; Anthropic:
 *                                     the tool_result blocks of the last user message)
 *   "tools_include": "read"           the request offers a tool with this name
 *   "body_contains": "text"           the raw request body
 *
 * SELECTION: for each model request that passes validation, replies with a "match" are tried
 * first, in script order, and the first that matches serves; otherwise the first remaining
 * reply without "match" serves. A reply is used up after "times" requests. When nothing is
 * left the server answers 500 in the request's format with a message naming the scenario and
 * the request number. Requests that fail validation are answered 400/401 and use no reply.
 *
 * EXAMPLE
 *   { "name": "read-then-answer", "api_key": "sk-test",
 *     "replies": [
 *       { "tool_calls": [ {"id": "call_1", "name": "read", "arguments": "{}"} ] },
 *       { "match": {"tool_result_contains": "Invalid arguments"},
 *         "tool_calls": [ {"id": "call_2", "name": "read",
 *                          "arguments": "{\"filePath\":\"a.txt\"}"} ] },
 *       { "text": "The file says hello.", "usage": {"input_tokens": 50, "output_tokens": 7} },
 *       { "status": 429, "headers": {"Retry-After": "1"}, "times": 1 },
 *       { "text": "partial", "fault": {"cut_after_events": 2} } ] }
 *
 * C API: start a server, script it, point the client at it, then read the log.
 *   ms_server *s = ms_start(0, &err);
 *   ms_add_tool_call(s, "call_1", "read", "{\"filePath\":\"a\"}");
 *   ms_add_text(s, "done");
 *   ... rein talks to ms_openai_url(s) ...
 *   assert_true(ms_wait(s, 2, 5000));
 *   const struct ms_request *r = ms_request(s, 1);   r->json is the parsed body
 *   ms_stop(s);
 *
 * Threading: every function may be called from any thread while the server runs; the
 * server answers each connection on its own thread. A struct ms_request, once returned,
 * never changes and stays valid until ms_reset() or ms_stop().
 */
#ifndef REIN_TEST_MODEL_SERVER_H
#define REIN_TEST_MODEL_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <rein/buf.h>
#include <rein/core.h>

typedef struct ms_server ms_server;

/* One recorded request. Every pointer is owned by the server. */
struct ms_request {
    size_t index;       /* 0-based, in arrival order */
    const char *method; /* "POST" */
    const char *path;   /* "/v1/chat/completions", without the query */
    const char *query;  /* "a=1&b=2", or "" */
    json_t *headers;    /* object: lower-case name -> value (repeats joined with ", ") */
    const char *body;   /* NUL-terminated; body_len bytes (may hold NULs) */
    size_t body_len;
    json_t *json;           /* the parsed body, or NULL when it is not JSON */
    int64_t time_ms;        /* wall clock at arrival (ms since the epoch) */
    int64_t mono_ms;        /* monotonic clock at arrival (rein_now_ms) */
    int client_port;        /* the client's TCP port: requests on one connection share it */
    const char *format;     /* "openai" | "anthropic" | "ollama" | "unknown" */
    bool stream;            /* the request asked for a stream */
    int reply;              /* index of the scripted reply served (script order), -1 for none */
    const char *reply_name; /* that reply's "name", or NULL */
    int status;             /* HTTP status answered */
    const char *error;      /* why no scripted reply was served (validation, auth, script ran
                            out, unknown path), or NULL */
};

/*
 * Starts a server on 127.0.0.1:port (0: a free port chosen by the kernel). Returns a new
 * handle, or NULL with err set.
 */
ms_server *ms_start(int port, rein_error *err);
/*
 * Stops the server: hung and delayed replies end at once, open connections are closed and
 * every thread is joined. Frees s and every request record. s may be NULL.
 */
void ms_stop(ms_server *s);

int ms_port(const ms_server *s);
/* "http://127.0.0.1:PORT" (Anthropic, Ollama base URL). Borrowed, valid until ms_stop. */
const char *ms_url(const ms_server *s);
/* "http://127.0.0.1:PORT/v1" (OpenAI base URL). Borrowed, valid until ms_stop. */
const char *ms_openai_url(const ms_server *s);

/*
 * Scripting. Each call checks the replies it is given and changes nothing when one is wrong
 * (err names the reply and the member). append false replaces the script; the request log
 * is kept either way.
 */
/* text (borrowed): a scenario object, an array of replies, or one reply object. */
rein_err ms_script(ms_server *s, const char *text, bool append, rein_error *err);
/* path (borrowed): a scenario file. Relative body_file paths resolve against its folder. */
rein_err ms_load(ms_server *s, const char *path, bool append, rein_error *err);
/* Appends one reply object; reply is taken (even on failure). */
rein_err ms_add(ms_server *s, json_t *reply, rein_error *err);
/* Appends a reply with this text (borrowed). */
rein_err ms_add_text(ms_server *s, const char *text);
/* Appends a reply with one tool call; id may be NULL (generated). Strings are borrowed. */
rein_err ms_add_tool_call(ms_server *s, const char *id, const char *name, const char *arguments);
/* Appends an error reply with this status and message (borrowed; NULL: the default). */
rein_err ms_add_error(ms_server *s, int status, const char *message);
/* key (borrowed, copied): the API key requests must carry; NULL accepts any or none. */
void ms_set_api_key(ms_server *s, const char *key);
/* false serves requests that the real services would refuse. Default true. */
void ms_set_validate(ms_server *s, bool on);
/* name (borrowed, copied): the scenario name used in "script ran out" errors. */
void ms_set_name(ms_server *s, const char *name);
/* Replies that can still serve a request (a reply with "times": 0 counts once). */
size_t ms_replies_left(ms_server *s);
/* Drops the script and the request log (earlier ms_request pointers become invalid). */
void ms_reset(ms_server *s);

/*
 * The request log. Every model request is counted and, up to the log limit, kept (control
 * requests to /__… are neither).
 */
/* Keeps at most max records (0: all, the default); later requests are only counted. For
 * long benchmark runs. */
void ms_set_log_limit(ms_server *s, size_t max);
/* Requests seen since the start or the last ms_reset (kept or not). */
size_t ms_request_count(ms_server *s);
/* Waits until at least n requests have been seen; false after timeout_ms. */
bool ms_wait(ms_server *s, size_t n, int timeout_ms);
/* Request i (0-based), borrowed; NULL when there is none (or it was past the log limit). */
const struct ms_request *ms_request(ms_server *s, size_t i);
/* The newest kept request, borrowed; NULL when there is none. */
const struct ms_request *ms_last_request(ms_server *s);
/*
 * New reference: the log as GET /__requests returns it, an array of
 * {index, method, path, query, headers, body, json, time, time_ms, format, stream, reply,
 *  reply_name, status, error}.
 */
json_t *ms_requests_json(ms_server *s);
/* Convenience: header name (case-insensitive) of a request, or NULL. Borrowed. */
const char *ms_request_header(const struct ms_request *r, const char *name);

/*
 * Appends one AWS event stream message (application/vnd.amazon.eventstream) to out: the
 * headers :event-type (or :exception-type when kind is "exception"), :content-type
 * application/json and :message-type kind, then payload (len bytes), both CRCs from zlib. For
 * tests that frame recorded Bedrock events the way the service sends them.
 */
rein_err ms_eventstream_frame(struct rein_buf *out, const char *kind, const char *type,
                              const char *payload, size_t len);

#endif /* REIN_TEST_MODEL_SERVER_H */
