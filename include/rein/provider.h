/*
 * rein/provider.h: model providers. One interface over the OpenAI chat completions, Anthropic
 * messages and Ollama wire formats (and the presets built on them: DashScope's compatible
 * mode, vLLM, llama.cpp server, LM Studio), plus record and replay.
 *
 * A request (a history of neutral messages, see <rein/history.h>, a tool list, tool_choice,
 * max_tokens, temperature, stream) goes in; while the reply streams, events come out (text,
 * reasoning, tool call started / argument delta / finished, usage, finish); the assembled
 * response comes last: text, tool calls with id, name, the raw argument string and (where it
 * parses) the JSON value, usage, finish reason, refusal and any in-stream error.
 *
 * Nothing the model sends is dropped. A tool call whose name is empty, symbol-only or
 * otherwise unusable is kept with status REIN_MODEL_CALL_INVALID_NAME; one whose arguments do not
 * parse is kept with REIN_MODEL_CALL_INVALID_JSON, or REIN_MODEL_CALL_INCOMPLETE when the stream was cut
 * before the call was finished. The pipeline answers those with an invalid payload, so every
 * call id gets a tool result. Tool calls that a model wrote as text (Hermes/Qwen
 * <tool_call>, Mistral [TOOL_CALLS], Llama <|python_tag|>, a fenced or bare JSON object with
 * "name" and "arguments") become calls marked from_text, or are reported; they never pass as
 * a final answer.
 *
 * Threading: a rein_provider is immutable once made and may serve many requests on many
 * threads at once. A rein_model_request, a rein_model_response and a rein_provider_decoder
 * belong to one thread at a time. Event callbacks run on the thread that called
 * rein_provider_send() (or fed the decoder), before that call returns.
 */
#ifndef REIN_PROVIDER_H
#define REIN_PROVIDER_H

#include <rein/doc.h>
#include <rein/cancel.h>
#include <rein/history.h>
#include <rein/json.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_provider rein_provider;
typedef struct rein_provider_config rein_provider_config;
typedef struct rein_model_request rein_model_request;
typedef struct rein_model_response rein_model_response;
typedef struct rein_model_call rein_model_call;
typedef struct rein_provider_decoder rein_provider_decoder;
typedef struct rein_registry rein_registry; /* <rein/tools.h> */

/* ---------------------------------------------------------------------------------------
 * Tool calls and responses
 */

/*
 * A tool call's status; the enum and rein_model_call_status_name() come from this list:
 *   ok            a usable name and arguments that parse to an object
 *   invalid_json  the arguments do not parse, or are not an object
 *   invalid_name  empty, symbol-only, too long or not UTF-8
 *   incomplete    the stream ended before the call was finished
 */
#define REIN_MODEL_CALL_STATUS_MAP(X)                                                              \
    X(OK, "ok")                                                                                    \
    X(INVALID_JSON, "invalid_json") X(INVALID_NAME, "invalid_name") X(INCOMPLETE, "incomplete")
#define REIN__MODEL_CALL_ENUM(id, name) REIN_MODEL_CALL_##id,
enum rein_model_call_status { REIN_MODEL_CALL_STATUS_MAP(REIN__MODEL_CALL_ENUM) };
#undef REIN__MODEL_CALL_ENUM
/* "ok", "invalid_json", "invalid_name", "incomplete"; never NULL. */
REIN_EXTERN const char *rein_model_call_status_name(enum rein_model_call_status status);

/* The call's id as the provider sent it, or a stable made-up one ("call_…") when it sent
 * none (Ollama). Borrowed, valid while the response is. Never NULL. */
REIN_EXTERN const char *rein_model_call_id(const rein_model_call *c);
/* The name as sent (may be empty). Borrowed. Never NULL. */
REIN_EXTERN const char *rein_model_call_name(const rein_model_call *c);
/* The exact argument string the model sent, byte for byte (may be empty: a zero-argument
 * call, whose arguments are {}). Borrowed. Never NULL. */
REIN_EXTERN const char *rein_model_call_raw_arguments(const rein_model_call *c);
/* The parsed arguments (always an object) as a jansson tree, made from the call's document at
 * the first call (safe from several threads) and kept with the call; NULL when they did not
 * parse (or memory ran out making the tree). Borrowed. */
REIN_EXTERN const json_t *rein_model_call_arguments(const rein_model_call *c);
/* The parsed arguments (an object) in rein's compact form (rein/doc.h), which
 * rein_schema_validate_doc reads without making a tree; NULL when they did not parse.
 * Borrowed, valid while the response is. */
REIN_EXTERN const rein_doc *rein_model_call_document(const rein_model_call *c);
REIN_EXTERN enum rein_model_call_status rein_model_call_status(const rein_model_call *c);
/* Why the status is not OK, in words a model can act on; "" when it is OK. Borrowed. */
REIN_EXTERN const char *rein_model_call_error(const rein_model_call *c);
/* True when the call was found in the text rather than in the tool-call field. */
REIN_EXTERN bool rein_model_call_from_text(const rein_model_call *c);
/* The opaque signature the wire wants back with the call (Gemini's thoughtSignature on a
 * functionCall part), or NULL. Borrowed, valid while the response is. */
REIN_EXTERN const char *rein_model_call_signature(const rein_model_call *c);
/* True for a custom (free-form) tool's call, as the Responses API sends one (a
 * custom_tool_call): its arguments are {"input": "<the text>"} (decision 0096). */
REIN_EXTERN bool rein_model_call_custom(const rein_model_call *c);
/* True when id is one rein made up for a call its model gave none ("call_" and 16 hex
 * digits): not the model's, so not sent back to it nor shown as the model's. */
REIN_EXTERN bool rein_model_call_id_made_up(const char *id);

/* Finish reasons normalised across providers; the provider's own word is kept as well. */
enum rein_finish {
    REIN_FINISH_NONE = 0,       /* the reply ended without one (cut stream, error) */
    REIN_FINISH_STOP,           /* stop, end_turn, stop_sequence */
    REIN_FINISH_TOOL_CALLS,     /* tool_calls, tool_use, function_call */
    REIN_FINISH_LENGTH,         /* length, max_tokens */
    REIN_FINISH_CONTENT_FILTER, /* content_filter, refusal */
    REIN_FINISH_OTHER,          /* anything else (pause_turn, …) */
};

/* Frees the response. NULL is a no-op. */
REIN_EXTERN void rein_model_response_free(rein_model_response *r);
/* Assembled text with tool-call markup and <think> sections taken out. Borrowed, never NULL. */
REIN_EXTERN const char *rein_model_response_text(const rein_model_response *r);
/* Reasoning (thinking) text, "" when none. Borrowed, never NULL. */
REIN_EXTERN const char *rein_model_response_reasoning(const rein_model_response *r);
/* The refusal, or NULL when the model did not refuse. Borrowed. */
REIN_EXTERN const char *rein_model_response_refusal(const rein_model_response *r);
/* The reply's signature: Gemini's thoughtSignature of a text or thought part (the first), an
 * Anthropic thinking block's; NULL when none. Borrowed, valid while the response is. */
REIN_EXTERN const char *rein_model_response_signature(const rein_model_response *r);
/* The provider's own finish reason ("tool_calls", "end_turn", …), or NULL. Borrowed. */
REIN_EXTERN const char *rein_model_response_finish_reason(const rein_model_response *r);
/* Which of the request's stop sequences ended the reply, as the wire reported it (Anthropic's
 * stop_sequence), or NULL. Borrowed. */
REIN_EXTERN const char *rein_model_response_stop_sequence(const rein_model_response *r);
REIN_EXTERN enum rein_finish rein_model_response_finish(const rein_model_response *r);
/* Token counts, -1 when the provider did not report them. Input tokens are the whole prompt:
 * Anthropic's prompt-cache writes and reads are added to its input_tokens. */
REIN_EXTERN int64_t rein_model_response_input_tokens(const rein_model_response *r);
REIN_EXTERN int64_t rein_model_response_output_tokens(const rein_model_response *r);
/* Of the input tokens, those read from the provider's prompt cache; of the output tokens,
 * those spent on reasoning. -1 when the provider did not report them (OpenAI's chat
 * completions and Responses APIs do). */
REIN_EXTERN int64_t rein_model_response_cached_tokens(const rein_model_response *r);
REIN_EXTERN int64_t rein_model_response_reasoning_tokens(const rein_model_response *r);
/* Of the input tokens, those written to the provider's prompt cache (Anthropic's
 * cache_creation_input_tokens, Bedrock's cacheWriteInputTokens, OpenRouter's
 * cache_write_tokens); -1 when the provider did not report them. */
REIN_EXTERN int64_t rein_model_response_cache_write_tokens(const rein_model_response *r);
/* The model that answered ("gpt-4o-2024-08-06", Gemini's modelVersion) and the reply's id
 * (chatcmpl-…, msg_…, resp_…, Gemini's responseId), as the wire reported them; NULL when it
 * did not (Bedrock reports neither, Ollama no id). Borrowed, valid while the response is. */
REIN_EXTERN const char *rein_model_response_model(const rein_model_response *r);
REIN_EXTERN const char *rein_model_response_id(const rein_model_response *r);
REIN_EXTERN size_t rein_model_response_call_count(const rein_model_response *r);
/* The i-th tool call in the order the model made them; NULL when i is out of range.
 * Borrowed, valid while the response is. */
REIN_EXTERN const rein_model_call *rein_model_response_call(const rein_model_response *r, size_t i);
/* The provider's error object (an in-stream error event, or the body of a failed HTTP
 * request), or NULL. Borrowed. */
REIN_EXTERN const json_t *rein_model_response_error(const rein_model_response *r);
/* Anthropic's thinking blocks and server tool blocks of the reply, the arrays
 * rein_model_response_message() copies under "thinking_blocks" and "server_blocks"; NULL when
 * the reply has none (every other wire). Borrowed, valid while the response is: a caller that
 * needs neither can skip building the message. */
REIN_EXTERN const json_t *rein_model_response_thinking_blocks(const rein_model_response *r);
REIN_EXTERN const json_t *rein_model_response_server_blocks(const rein_model_response *r);
/*
 * What an OpenAI-wire reply carries that rein does not read, as the wire wrote it: the
 * choice's "logprobs" (a stream's pieces joined, their "content" and "refusal" arrays
 * concatenated) and the message's "annotations" (url citations of a search model, a stream's
 * pieces concatenated). NULL when the reply has none. Borrowed, valid while the response is.
 */
REIN_EXTERN const json_t *rein_model_response_logprobs(const rein_model_response *r);
REIN_EXTERN const json_t *rein_model_response_annotations(const rein_model_response *r);
/*
 * Anthropic's text blocks, in order: [{"at": the byte of the text where the block's text
 * starts, "server": how many of the server blocks came before it, "citations": [...] as the
 * wire wrote them, when the block has any}]. NULL for other wires. When the text changed at
 * the end (text-written calls taken out of it) the places no longer hold: the list is then
 * one block at 0 with every citation. Borrowed, valid while the response is.
 */
REIN_EXTERN const json_t *rein_model_response_text_blocks(const rein_model_response *r);
/* For the response of a failed HTTP request: how long the provider asked to wait before
 * another (Retry-After or retry-after-ms), in milliseconds; -1 when it did not say. */
REIN_EXTERN int64_t rein_model_response_retry_after_ms(const rein_model_response *r);
/*
 * The upstream's id for this request, the one its support asks for: the request_id member of
 * an error body (Anthropic's), else the response's request-id header (Anthropic), else its
 * x-request-id (OpenAI and most servers of its wire); NULL when there was none (a replayed
 * exchange, a wire or server that sends none). Borrowed, valid while the response is.
 */
REIN_EXTERN const char *rein_model_response_request_id(const rein_model_response *r);

/* ---------------------------------------------------------------------------------------
 * The upstream's response headers
 */
/*
 * What rein keeps of an HTTP response's headers for its caller, in the order they came, names
 * in lower case: the upstream's request id (request-id, x-request-id), its rate limits
 * (x-ratelimit-*, anthropic-ratelimit-*, the unified-* family included) and
 * openai-processing-ms. Nothing else is kept, so no hop-by-hop header, content-length or
 * content-encoding, set-cookie or credential is ever among them, nor a value that holds the
 * request's API key. Bounded: at most REIN_MODEL_HEADERS_MAX headers and 4 KiB in all, a value
 * at most 256 bytes and without control characters; what does not fit is left out. A replayed
 * exchange has none (a recording keeps no headers).
 */
#define REIN_MODEL_HEADERS_MAX 48
typedef struct rein_model_headers rein_model_headers;
/* How many headers h holds; 0 for NULL. */
REIN_EXTERN size_t rein_model_headers_count(const rein_model_headers *h);
/* The i-th header's name and value (borrowed from h); false when i is out of range. */
REIN_EXTERN bool rein_model_headers_at(const rein_model_headers *h, size_t i, const char **name,
                                       const char **value);
/* The value of the first header named name (any case), or NULL. Borrowed from h. */
REIN_EXTERN const char *rein_model_headers_get(const rein_model_headers *h, const char *name);
/*
 * The kept headers of the HTTP response r was made from (the last attempt's, a failed one's
 * for an error), never NULL (a response that was not received over HTTP has none). Borrowed,
 * valid while the response is.
 */
REIN_EXTERN const rein_model_headers *rein_model_response_headers(const rein_model_response *r);
/* True when the reply ended normally ([DONE], a finish reason, message_stop, done:true);
 * false for a stream cut anywhere (even inside an event) and for a reply that carries the
 * provider's error. */
REIN_EXTERN bool rein_model_response_is_complete(const rein_model_response *r);
/* Tool calls written as text that were reported and not turned into calls (text_calls
 * "report" mode); the text still holds them. The agent must not take such a reply as a
 * final answer. */
REIN_EXTERN size_t rein_model_response_text_call_count(const rein_model_response *r);
/*
 * The response as one JSON object (new reference, NULL when memory is exhausted):
 *   {"text", "tool_calls": [{"id", "name", "arguments" (object or null), "raw_arguments",
 *    "status", "from_text"}], "finish_reason", "usage": {"input_tokens", "output_tokens",
 *    "cached_tokens", "reasoning_tokens" (these two only when the wire reports them)},
 *    "reasoning", "refusal", "error"}
 * Unknown token counts are null; "reasoning" is null when empty.
 */
REIN_EXTERN json_t *rein_model_response_to_json(const rein_model_response *r);
/* The assistant message of the neutral shape (docs/decisions/0001) for this response: new
 * reference, NULL when memory is exhausted. The arguments are the raw strings. */
REIN_EXTERN json_t *rein_model_response_message(const rein_model_response *r);

/* ---------------------------------------------------------------------------------------
 * Events while a reply streams
 */
/*
 * The event types (from 1) and their names (rein_model_event_type_name), one list:
 *   text_delta       text, len: visible answer text
 *   reasoning_delta  text, len: thinking
 *   refusal_delta    text, len
 *   tool_call_start  index, id, name
 *   tool_call_delta  index, text, len: a piece of the raw argument string
 *   tool_call_end    index, call: finished, with its status
 *   usage            input_tokens, output_tokens (-1 unknown)
 *   finish           finish_reason (the provider's word)
 *   retry            attempt: the reply is being asked for again; forget every delta
 *                    received so far
 *   reasoning_signature  text, len: a piece of the signature that closes the thinking block
 *                    streamed last (Anthropic, Bedrock); the model wants it back with the block
 *   redacted_reasoning   text, len: a redacted thinking block's opaque data, whole (Anthropic,
 *                    Bedrock), in its place among the other blocks
 *   server_block     text, len: the JSON of a block a server tool wrote (Anthropic's
 *                    server_tool_use with its input, its result blocks), whole, in its place
 *   logprobs         text, len: the JSON of one piece of OpenAI's choice logprobs (an
 *                    object), told before the text it scores
 *   annotations      text, len: the JSON of one piece of OpenAI's message annotations (an
 *                    array), after the text they point into
 *   text_block       text, len: an Anthropic text block starts (after the text of the one
 *                    before); the JSON of the citations it starts with, len 0 when it has none
 *   citation         text, len: the JSON of one citation of the text block streaming
 *   headers          headers: the kept headers (above) of a 2xx HTTP response, before its
 *                    first byte is decoded, so before any other event of it; once per
 *                    attempt, and only when it has any. A caller that must send its own
 *                    headers before it forwards the reply (a gateway's stream) reads them here
 *   reasoning_item   text, len: the JSON of a Responses API reasoning item, whole (id,
 *                    summary, encrypted_content), as it ends: a reasoning model wants it back.
 *                    A stream tells it first as it begins, {"type", "id", "status":
 *                    "in_progress"}, before its reasoning_delta events
 *   output_item      text, len: the JSON of a Responses API item a hosted tool wrote
 *                    (web_search_call, file_search_call, code_interpreter_call,
 *                    image_generation_call, mcp_call, mcp_list_tools), whole, as it ends; it
 *                    goes back with the assistant message as the reasoning items do
 *   output_item_event  text, len: an event of a Responses API stream about a hosted tool's item
 *                    before it ends, the event's JSON as it came: its response.output_item.added
 *                    and its progress (response.web_search_call.searching, …); the item
 *                    itself follows as output_item
 */
#define REIN_MEV_MAP(X)                                                                            \
    X(TEXT_DELTA, "text_delta")                                                                    \
    X(REASONING_DELTA, "reasoning_delta")                                                          \
    X(REFUSAL_DELTA, "refusal_delta")                                                              \
    X(TOOL_CALL_START, "tool_call_start")                                                          \
    X(TOOL_CALL_DELTA, "tool_call_delta")                                                          \
    X(TOOL_CALL_END, "tool_call_end")                                                              \
    X(USAGE, "usage")                                                                              \
    X(FINISH, "finish")                                                                            \
    X(RETRY, "retry")                                                                              \
    X(REASONING_SIGNATURE, "reasoning_signature")                                                  \
    X(REDACTED_REASONING, "redacted_reasoning")                                                    \
    X(SERVER_BLOCK, "server_block")                                                                \
    X(LOGPROBS, "logprobs")                                                                        \
    X(ANNOTATIONS, "annotations")                                                                  \
    X(TEXT_BLOCK, "text_block")                                                                    \
    X(CITATION, "citation")                                                                        \
    X(HEADERS, "headers")                                                                          \
    X(REASONING_ITEM, "reasoning_item")                                                            \
    X(OUTPUT_ITEM, "output_item")                                                                  \
    X(OUTPUT_ITEM_EVENT, "output_item_event")
#define REIN__MEV_INDEX(id, name) REIN__MEV_INDEX_##id,
enum { REIN_MEV_MAP(REIN__MEV_INDEX) };
#define REIN__MEV_ENUM(id, name) REIN_MEV_##id = REIN__MEV_INDEX_##id + 1,
enum rein_model_event_type { REIN_MEV_MAP(REIN__MEV_ENUM) };
#undef REIN__MEV_INDEX
#undef REIN__MEV_ENUM
/* "text_delta", …; "?" for anything else. Static text. */
REIN_EXTERN const char *rein_model_event_type_name(enum rein_model_event_type type);

struct rein_model_event {
    enum rein_model_event_type type;
    size_t index;     /* tool call index in the response */
    const char *text; /* borrowed for the duration of the callback */
    size_t len;
    const char *id, *name;       /* TOOL_CALL_START; borrowed */
    const rein_model_call *call; /* TOOL_CALL_END; borrowed until the response is freed */
    int64_t input_tokens, output_tokens;
    const char *finish_reason;
    int attempt;                       /* RETRY: the attempt about to start (2, 3, …) */
    const rein_model_headers *headers; /* HEADERS; borrowed for the duration of the callback */
};
/* Runs on the thread that sends (or feeds the decoder). ev and its pointers are borrowed. */
typedef void (*rein_model_event_fn)(const struct rein_model_event *ev, void *userdata);

/* ---------------------------------------------------------------------------------------
 * Decoding recorded or received bytes (what the adapters use, exposed for `rein provider
 * parse`, benchmarks and tests)
 */
enum rein_wire_format {
    REIN_WIRE_OPENAI_SSE = 1, /* chat completion chunks as text/event-stream (also
                                   DashScope's native incremental stream) */
    REIN_WIRE_OPENAI_JSON,    /* one chat completion body, or an error body */
    REIN_WIRE_ANTHROPIC_SSE,  /* messages stream events */
    REIN_WIRE_ANTHROPIC_JSON, /* one message body, or an error body */
    REIN_WIRE_OLLAMA_NDJSON,  /* Ollama /api/chat stream */
    REIN_WIRE_OLLAMA_JSON,    /* one Ollama /api/chat body */
};
/*
 * Parses a format name: "<wire>-<stream>" or "<wire>-json" for each wire rein speaks:
 * "openai-sse", "openai-json", "anthropic-sse", "anthropic-json", "ollama-ndjson",
 * "ollama-json" (and "dashscope-sse"/"dashscope-json" as aliases of the OpenAI ones). The
 * constants above name the formats of the first three wires; a wire added later has formats
 * without a constant, found by their names here (values only grow).
 */
REIN_EXTERN rein_err rein_wire_format_parse(const char *name, enum rein_wire_format *out) REIN_WUR;
REIN_EXTERN const char *rein_wire_format_name(enum rein_wire_format fmt);

/* How tool calls written as text are handled. */
enum rein_text_calls {
    REIN_TEXT_CALLS_FROM_TEXT = 0, /* default: turn them into calls marked from_text */
    REIN_TEXT_CALLS_REPORT = 1,    /* keep them in the text and count them */
};

struct rein_decoder_options {
    /* SSE formats only: the input has one SSE data payload per line, without "data: "
     * (vercel's recorded chunk files, *.stream.jsonl). */
    bool payload_lines;
    enum rein_text_calls text_calls;
    /* Move <think>…</think> (and text before a leaked </think>) into the reasoning;
     * default true (set false to keep the text exactly as sent). */
    bool keep_think_tags;
    /* Tool names the request offered (borrowed for the decoder's life; may be NULL). When
     * given, fenced and bare JSON objects in the text count as calls only when they name one
     * of these tools. */
    const char *const *tool_names;
    size_t tool_name_count;
    /* Largest single event, line or body accepted; 0: 64 MiB. */
    size_t max_event_bytes;
};

/*
 * New decoder for one reply in fmt. opts is borrowed and copied (NULL: defaults). Events go
 * to on_event (may be NULL). NULL when memory is exhausted.
 */
REIN_EXTERN rein_provider_decoder *
rein_provider_decoder_new(enum rein_wire_format fmt, const struct rein_decoder_options *opts,
                          rein_model_event_fn on_event, void *userdata);
REIN_EXTERN void rein_provider_decoder_free(rein_provider_decoder *d);
/*
 * Feeds len bytes (borrowed) in any chunking: bytes split anywhere, even inside a UTF-8
 * sequence, decode the same. Fails with REIN_EPARSE (err says where: event number, line,
 * what was wrong) on bytes that cannot be read as the format, REIN_ETOOBIG past
 * max_event_bytes, REIN_ENOMEM. After a failure the decoder only accepts _free.
 */
REIN_EXTERN rein_err rein_provider_decoder_feed(rein_provider_decoder *d, const void *data,
                                                size_t len, rein_error *err) REIN_WUR;
/*
 * Ends the input and hands over the assembled response (*out: new, free with
 * rein_model_response_free). A reply that ended early is not a failure here: its calls are
 * marked incomplete and rein_model_response_is_complete() says false. Fails as _feed does.
 */
REIN_EXTERN rein_err rein_provider_decoder_finish(rein_provider_decoder *d,
                                                  rein_model_response **out,
                                                  rein_error *err) REIN_WUR;
/* Payloads (SSE events, NDJSON lines or bodies) decoded so far. */
REIN_EXTERN size_t rein_provider_decoder_event_count(const rein_provider_decoder *d);
/* Notes about the input worth telling a person ("n=3 choices: assembled choice 0", "2
 * messages in one recording: assembled in order"), one per line; "" when none. Borrowed. */
REIN_EXTERN const char *rein_provider_decoder_notes(const rein_provider_decoder *d);

/* ---------------------------------------------------------------------------------------
 * Model capabilities (docs/DESIGN.md [react]: capability detection)
 */
struct rein_model_caps {
    bool tools;          /* function calling */
    bool parallel_tools; /* several calls in one reply */
    bool streaming;
    bool confidence;        /* can state a usable confidence for a call */
    int64_t context_window; /* tokens */
    /* takes a reasoning setting (rein_model_request_set_reasoning): OpenAI's reasoning models,
     * Claude from 3.7 on, Gemini 2.5 and 3 */
    bool reasoning;
    /* the most tokens one reply may ask for (its output limit; 0: not known; Claude's by its
     * version, decision 0106). The gateway lowers a client's larger limit of another wire to it
     * (decision 0103): a limit above the model's own is the model's own, and some upstreams
     * refuse it. */
    int64_t max_output;
};
/* Fills caps for a model name from the built-in table of model families (longest matching
 * prefix; a conservative default when none matches). model is borrowed. */
REIN_EXTERN void rein_model_caps_lookup(const char *model, struct rein_model_caps *caps);

/* ---------------------------------------------------------------------------------------
 * Configuration
 */

/* Timeouts in milliseconds; 0 disables one. */
enum rein_provider_timeout {
    REIN_TIMEOUT_CONNECT = 0,    /* TCP + TLS connect (default 10 s) */
    REIN_TIMEOUT_FIRST_BYTE = 1, /* request sent → first response byte (default 60 s) */
    REIN_TIMEOUT_IDLE = 2,       /* between received bytes while streaming (default 60 s) */
    REIN_TIMEOUT_TOTAL = 3,      /* the whole send, retries and waits included (default 600 s) */
};

/* New configuration with the defaults (provider "openai"). NULL when memory is exhausted. */
REIN_EXTERN rein_provider_config *rein_provider_config_new(void);
REIN_EXTERN void rein_provider_config_free(rein_provider_config *cfg);
/*
 * Sets one setting by name, as the command line, the environment and the config file do.
 * Keys: provider (openai | anthropic | dashscope | ollama | ollama-openai | vllm | llamacpp |
 * lmstudio | openai-compatible | replay | rules), model, base_url, api_key, api_key_env,
 * record (a file), replay (a file), max_retries, retry_base_ms, retry_max_wait_ms,
 * connect_timeout_ms, first_byte_timeout_ms, idle_timeout_ms, total_timeout_ms, text_calls
 * (from_text | report), think_tags (true | false: move <think> sections to the reasoning),
 * enable_thinking (true | false | default), reasoning_effort (none | minimal | low | medium |
 * high | xhigh: every request's, unless it sets its own; refused by rein_provider_new() for a
 * wire that cannot write it), max_tokens_field (max_tokens |
 * max_completion_tokens), send_reasoning (true | false: send reasoning_content back, as
 * DeepSeek's thinking mode wants), anthropic_version, user_agent. Choosing a provider applies its preset (base URL, key variable, quirks);
 * settings made after it override the preset. REIN_EINVAL names the bad key or value.
 * key and value are borrowed and copied.
 */
REIN_EXTERN rein_err rein_provider_config_set(rein_provider_config *cfg, const char *key,
                                              const char *value, rein_error *err) REIN_WUR;
/* The typed forms of the common settings (copies the text). */
REIN_EXTERN rein_err rein_provider_config_set_provider(rein_provider_config *cfg, const char *name,
                                                       rein_error *err) REIN_WUR;
REIN_EXTERN rein_err rein_provider_config_set_model(rein_provider_config *cfg,
                                                    const char *model) REIN_WUR;
REIN_EXTERN rein_err rein_provider_config_set_base_url(rein_provider_config *cfg,
                                                       const char *url) REIN_WUR;
/* The key is kept in memory only: never logged, recorded or put in an error message. */
REIN_EXTERN rein_err rein_provider_config_set_api_key(rein_provider_config *cfg,
                                                      const char *key) REIN_WUR;
REIN_EXTERN void rein_provider_config_set_timeout(rein_provider_config *cfg,
                                                  enum rein_provider_timeout which, int64_t ms);
/* Retries after the first attempt on 429, 500, 502, 503, 529, overloaded_error and
 * connection failures (default 2). */
REIN_EXTERN void rein_provider_config_set_max_retries(rein_provider_config *cfg, int n);
/* Writes every request and response to path as JSON lines, keys stripped (NULL: off). */
REIN_EXTERN rein_err rein_provider_config_set_record(rein_provider_config *cfg,
                                                     const char *path) REIN_WUR;
/* Overrides the capabilities of models whose name starts with prefix (copied). */
REIN_EXTERN rein_err rein_provider_config_set_caps(rein_provider_config *cfg, const char *prefix,
                                                   const struct rein_model_caps *caps) REIN_WUR;
/*
 * Reads REIN_PROVIDER, REIN_MODEL, REIN_BASE_URL, REIN_API_KEY, REIN_RECORD, REIN_REPLAY,
 * REIN_TEXT_CALLS and REIN_REASONING_EFFORT. The provider's own key variable (OPENAI_API_KEY, ANTHROPIC_API_KEY,
 * DASHSCOPE_API_KEY, or api_key_env) is read by rein_provider_new() when no key was set, so
 * the order of file, environment and flags does not matter for it.
 */
REIN_EXTERN rein_err rein_provider_config_from_env(rein_provider_config *cfg,
                                                   rein_error *err) REIN_WUR;
/*
 * Applies a configuration document (borrowed), rein's config file: provider settings either
 * under a "provider" object or, the older flat form, at the top level ("provider" then names
 * the preset). Members are the keys of rein_provider_config_set() (strings, numbers or
 * booleans) plus "capabilities": {"<model prefix>": {"tools", "parallel_tools", "streaming",
 * "confidence", "context_window"}}; "provider" is applied first. Beside them the top level may
 * hold "mcpServers" (read by rein_mcp_clients_add_config()), "$schema" and "$comment".
 * Anything else is refused with REIN_EINVAL: "unknown key "modle" (did you mean "model"?)",
 * so a misspelt setting never passes silently.
 */
REIN_EXTERN rein_err rein_provider_config_apply_json(rein_provider_config *cfg, const json_t *obj,
                                                     rein_error *err) REIN_WUR;
/*
 * Parses len bytes of text (borrowed) as a configuration document and applies it. Every
 * failure names the place: err's message starts with "NAME:LINE:COLUMN: " (name borrowed,
 * e.g. the file's path) and err->line and err->column are set: REIN_EPARSE for text that is
 * not UTF-8 ("not valid UTF-8 at byte N") or not JSON, REIN_EINVAL for a member that is
 * unknown or has a bad value (the position of its key).
 */
REIN_EXTERN rein_err rein_provider_config_load_text(rein_provider_config *cfg, const char *text,
                                                    size_t len, const char *name,
                                                    rein_error *err) REIN_WUR;
/* Reads a configuration file (path borrowed) and applies it as rein_provider_config_load_text()
 * does; a file that is missing (REIN_ENOTFOUND), a directory (REIN_EINVAL) or unreadable
 * (REIN_EIO) is named with the reason. */
REIN_EXTERN rein_err rein_provider_config_load_file(rein_provider_config *cfg, const char *path,
                                                    rein_error *err) REIN_WUR;
/* The provider preset names, NULL-terminated, for help texts. Static. */
REIN_EXTERN const char *const *rein_provider_names(void);

/* ---------------------------------------------------------------------------------------
 * Providers and requests
 */

/* New provider from cfg (borrowed, copied). REIN_EINVAL when the configuration cannot work
 * (no model, no base URL for openai-compatible, no recording for replay, …). */
REIN_EXTERN rein_provider *rein_provider_new(const rein_provider_config *cfg, rein_error *err);
REIN_EXTERN void rein_provider_free(rein_provider *p);
/* The preset name ("dashscope"), the wire protocol ("openai", "anthropic", "ollama",
 * "replay"), the model and the endpoint URL. Borrowed, valid while p is. */
REIN_EXTERN const char *rein_provider_name(const rein_provider *p);
REIN_EXTERN const char *rein_provider_wire(const rein_provider *p);
REIN_EXTERN const char *rein_provider_model(const rein_provider *p);
REIN_EXTERN const char *rein_provider_endpoint(const rein_provider *p);
/* The capabilities of the provider's model, config overrides applied. */
REIN_EXTERN void rein_provider_caps(const rein_provider *p, struct rein_model_caps *caps);
/* The capabilities of another model (borrowed; NULL: the provider's own) as p's configuration
 * overrides them: for a caller that names the model per request. */
REIN_EXTERN void rein_provider_model_caps(const rein_provider *p, const char *model,
                                          struct rein_model_caps *caps);
/* Whether p's wire writes rein_model_request_set_reasoning's setting for model (borrowed;
 * NULL: the provider's own): OpenAI chat, Responses, Anthropic, Gemini and Ollama's own API do
 * for every model, Bedrock for Claude; DashScope's native API, rules and replay send nothing
 * for it. */
REIN_EXTERN bool rein_provider_writes_reasoning(const rein_provider *p, const char *model);
/*
 * Whether p's wire carries an attachment of MIME type mime (borrowed) in a user message: the
 * media its encoder writes in the wire's own block (history.h's "attachments"). OpenAI chat
 * completions: PNG, JPEG, WebP and GIF images (image_url), PDF (file), WAV and MP3 audio
 * (input_audio); the Responses API: those images and PDF; Anthropic: those images (image) and
 * PDF (document); Gemini: PNG, JPEG, WebP, HEIC, HEIF, WAV, MP3, AIFF, AAC, OGG, FLAC, PDF and
 * plain text (inlineData); Bedrock Converse: those images and the documents Converse names
 * (PDF, CSV, DOC, DOCX, XLS, XLSX, HTML, TXT, MD); Ollama: PNG and JPEG images (images);
 * DashScope's native API, rules and replay: none. What a wire does not take is named as not sent
 * in the message's text when rein's own callers send it; the gateway refuses it instead.
 */
REIN_EXTERN bool rein_provider_takes_media(const rein_provider *p, const char *mime);
/*
 * Token counts. Four wires have a count of their own, which rein asks: Anthropic's POST
 * {endpoint}/count_tokens ({"input_tokens"}), the Responses API's POST
 * {endpoint}/input_tokens ({"input_tokens"}), Gemini's POST
 * {base}/models/MODEL:countTokens ({"totalTokens"}) and Bedrock's CountTokens, POST
 * {base}/model/MODEL/count-tokens ({"inputTokens"}; the model id encoded as in the Converse
 * URL, the request signed with SigV4 as a send is, or sent with the API key as a bearer token
 * when one is configured or the request has its own). No other wire has one (OpenAI chat
 * completions, Ollama, DashScope, rules, replay): rein never makes a count up. Bedrock counts
 * only for the models and Regions its documentation lists; for another model it answers an
 * error status (a ValidationException), handed over as below.
 */
/*
 * The sampling settings req (borrowed) may carry to p's upstream (decision 0101), for its model
 * (or the configured one) and whether it thinks (its reasoning setting, or the configured
 * reasoning_effort): REIN_SAMPLING_TEMPERATURE, REIN_SAMPLING_TOP_P, and REIN_SAMPLING_BOTH when
 * both may go in one request. Claude, on Anthropic's API and Bedrock, takes both up to 4.0, one
 * of them from Opus 4.1 to 4.6 ("cannot both be specified"), neither from 4.7 on ("deprecated
 * for this model") nor while it thinks (where only their defaults are taken). OpenAI's
 * reasoning models (the o-series, GPT-5 but gpt-5-chat, codex) take neither ("only the default
 * (1) value is supported"), but GPT-5.1 and later do while they do not reason. Every other
 * model takes all. rein writes what it is asked either way (the upstream's 400 names the
 * conflict); the gateway drops, and names, what the upstream would refuse from a client of
 * another wire.
 */
#define REIN_SAMPLING_TEMPERATURE 1u
#define REIN_SAMPLING_TOP_P       2u
#define REIN_SAMPLING_BOTH        4u
#define REIN_SAMPLING_ALL         (REIN_SAMPLING_TEMPERATURE | REIN_SAMPLING_TOP_P | REIN_SAMPLING_BOTH)
REIN_EXTERN unsigned rein_provider_sampling(const rein_provider *p, const rein_model_request *req);
/*
 * Whether p's upstream answers 400 to the request member named member (a chat completions
 * name) for req's model (or the configured one) (decision 0105): Groq logprobs, top_logprobs and
 * logit_bias; xAI's reasoning models presence_penalty, frequency_penalty and stop, and
 * reasoning_effort but on grok-3-mini and grok-4.3 on; deepseek-reasoner logprobs and
 * top_logprobs. rein writes what it is asked either way; the gateway drops, and names, what the
 * upstream would refuse. p and req are borrowed.
 */
REIN_EXTERN bool rein_provider_refuses(const rein_provider *p, const rein_model_request *req,
                                       const char *member);
/* Whether req (borrowed) asks p's model to think: its reasoning setting (a budget, or an effort
 * other than none), else p's configured reasoning_effort. */
REIN_EXTERN bool rein_provider_request_thinks(const rein_provider *p,
                                              const rein_model_request *req);
/* True when p's wire has a token count. */
REIN_EXTERN bool rein_provider_can_count(const rein_provider *p);
/*
 * The input tokens of a request as p's upstream counts them. body (len bytes, borrowed) is the
 * count's body as written for p's wire (what the endpoints above take: Anthropic's model,
 * messages, system, tools, tool_choice, thinking, mcp_servers; the Responses API's create
 * members; Gemini's {"contents"} or {"generateContentRequest"}; Bedrock's {"input":
 * {"converse": {...}}} or {"input": {"invokeModel": {"body": BASE64}}}). req (borrowed, may be
 * NULL) gives the key, the header lines, the model of Gemini's and Bedrock's URL and the
 * cancellation, as for a send. answer (may be NULL) gets the upstream's body appended as it
 * came, for an answer of its own wire's client. One attempt, no retry, at most the provider's
 * first-byte timeout (default 60 s), on the calling thread.
 *
 * REIN_OK: *tokens is the count. REIN_EHTTP: the upstream answered an error status
 * (err->detail); *out (new, NULL when memory ran out) is the failed response as
 * rein_provider_send() gives one (its error object, Retry-After, kept headers and request id).
 * REIN_EPROVIDER: a 2xx answer without a count (the member missing or not a number; answer
 * holds it). REIN_ENOTSUP: the wire has no count. REIN_EIO, REIN_ETIMEDOUT, REIN_ECANCELED: no
 * answer. err names what failed, never with the key in it. *tokens is -1 and *out NULL unless
 * said otherwise.
 */
REIN_EXTERN rein_err rein_provider_count_tokens(rein_provider *p, const rein_model_request *req,
                                                const char *body, size_t len, int64_t *tokens,
                                                struct rein_buf *answer, rein_model_response **out,
                                                rein_error *err) REIN_WUR;
/*
 * The same for the request a send of req with history h (both borrowed; req's tool list is
 * encoded and cached in it, as rein_provider_prepare() does) would make: the wire's own writer
 * writes its body, of which the count gets only the members it takes (no max_tokens, stream or
 * sampling, which Anthropic's count refuses), in its shape (Gemini's inside a
 * generateContentRequest, so the system instruction and the tools are counted; Vertex AI's at
 * the top level, as its count takes them; Bedrock's Converse messages, system, toolConfig and
 * additionalModelRequestFields under input.converse, without inferenceConfig). REIN_EINVAL as
 * rein_provider_prepare() says; otherwise as rein_provider_count_tokens().
 */
REIN_EXTERN rein_err rein_provider_count_request(rein_provider *p, rein_model_request *req,
                                                 rein_history *h, int64_t *tokens,
                                                 struct rein_buf *answer, rein_model_response **out,
                                                 rein_error *err) REIN_WUR;

/* A request: everything but the history. Reusable across turns: the encoded tool list is
 * cached. NULL when memory is exhausted. Defaults: stream on, no tools, tool_choice unset,
 * max_tokens and temperature unset. */
REIN_EXTERN rein_model_request *rein_model_request_new(void);
REIN_EXTERN void rein_model_request_free(rein_model_request *req);
/*
 * Adds a tool offered to the model. name and description are copied; parameters (a JSON
 * Schema object; NULL means no parameters) is borrowed and referenced.
 */
REIN_EXTERN rein_err rein_model_request_add_tool(rein_model_request *req, const char *name,
                                                 const char *description,
                                                 json_t *parameters) REIN_WUR;
/*
 * The same for a tool whose parameters never change afterwards (a registry's tool; borrowed
 * and referenced). When every tool of a request was added this way, the provider encodes the
 * list once per wire and shares that encoding, immutable, with its later requests offering
 * the same tools (same names and descriptions, the same parameter objects), on any thread.
 */
REIN_EXTERN rein_err rein_model_request_add_tool_shared(rein_model_request *req, const char *name,
                                                        const char *description,
                                                        const json_t *parameters) REIN_WUR;
/* Removes every tool. */
REIN_EXTERN void rein_model_request_clear_tools(rein_model_request *req);
/* "auto", "none", "required" or a tool name (copied); NULL unsets. */
REIN_EXTERN rein_err rein_model_request_set_tool_choice(rein_model_request *req,
                                                        const char *choice) REIN_WUR;
/* 0 unsets. Anthropic requires a value and gets 4096 when unset. */
REIN_EXTERN void rein_model_request_set_max_tokens(rein_model_request *req, int64_t max_tokens);
/* A negative value unsets. */
REIN_EXTERN void rein_model_request_set_temperature(rein_model_request *req, double temperature);
/* Nucleus sampling, 0 to 1 (a negative value unsets), written by each wire under its own name:
 * "top_p" (OpenAI chat, Responses, Anthropic), Ollama "options.top_p", Gemini
 * "generationConfig.topP", Bedrock "inferenceConfig.topP", DashScope "parameters.top_p". */
REIN_EXTERN void rein_model_request_set_top_p(rein_model_request *req, double top_p);
/*
 * Stop sequences: the reply ends where the model would write one of them (the sequence itself
 * is not part of the text). stop holds n strings (borrowed and copied); n 0 unsets. Each wire
 * sends them under its own name and within its own limit: OpenAI chat "stop" (at most 4),
 * Anthropic "stop_sequences", Ollama "options.stop", Gemini "generationConfig.stopSequences"
 * (at most 5), Bedrock "inferenceConfig.stopSequences" (at most 2500), DashScope
 * "parameters.stop". The Responses API has no such field: a send there with stop sequences
 * fails, as rein_provider_prepare() says. REIN_EINVAL for an empty string or more than
 * REIN_STOP_MAX of them (nothing is changed then).
 */
#define REIN_STOP_MAX 2500
REIN_EXTERN rein_err rein_model_request_set_stop(rein_model_request *req, const char *const *stop,
                                                 size_t n) REIN_WUR;
REIN_EXTERN void rein_model_request_set_stream(rein_model_request *req, bool stream);
/*
 * How much a reasoning model thinks before it answers (decision 0095). Two kinds of wire ask
 * for it: OpenAI's by an effort word (chat "reasoning_effort", Responses "reasoning.effort"),
 * Anthropic and Gemini by a budget of thinking tokens (Anthropic "thinking", Gemini
 * "generationConfig.thinkingConfig.thinkingBudget", with includeThoughts; Gemini 3 an effort
 * as its thinkingLevel, low or high). One table joins
 * them: minimal and low 1,024 tokens (Anthropic's least), medium 8,192, high 24,576, xhigh and
 * max 32,768, none 0 (Anthropic: thinking disabled); a budget asks an effort word of low up to
 * 1,024 tokens, medium up to 8,192, high above (never minimal or xhigh, which only some OpenAI
 * models take). Claude 4.6 and later take an effort instead (decision 0099): adaptive thinking
 * at "output_config.effort", the nearest level the model has.
 */
enum rein_reasoning {
    REIN_REASONING_UNSET = 0, /* the model's default: nothing is sent */
    REIN_REASONING_NONE,
    REIN_REASONING_MINIMAL,
    REIN_REASONING_LOW,
    REIN_REASONING_MEDIUM,
    REIN_REASONING_HIGH,
    REIN_REASONING_XHIGH,
    REIN_REASONING_MAX, /* Claude's highest; xhigh on OpenAI's wires */
};
/* The effort's word ("none" ... "max"); NULL for REIN_REASONING_UNSET. Static. */
REIN_EXTERN const char *rein_reasoning_word(enum rein_reasoning effort);
/* The effort a word names (word borrowed); REIN_EINVAL for any other word (*out unchanged). */
REIN_EXTERN rein_err rein_reasoning_from_word(const char *word, enum rein_reasoning *out) REIN_WUR;
/*
 * The request's reasoning: an effort, or a budget of thinking tokens (budget_tokens > 0, with
 * effort REIN_REASONING_UNSET: the effort comes from it), or both (each wire takes the one it
 * has). Both unset (UNSET, 0) unsets: the provider's configured reasoning_effort, if any,
 * applies. A wire of budgets gets at least 1,024 tokens; Anthropic's max_tokens, which counts
 * the thinking, becomes the budget and 4,096 when the request sets none, and a budget that
 * does not fit under a max_tokens set is cut to one less than it. Members of the same name
 * in rein_model_request_set_extra()'s object win over it.
 */
REIN_EXTERN void rein_model_request_set_reasoning(rein_model_request *req,
                                                  enum rein_reasoning effort,
                                                  int64_t budget_tokens);
/*
 * The form of the model's answer (decision 0100): free text (the default), any JSON object, or
 * JSON that follows a JSON Schema. Each wire writes it in its own words: OpenAI chat
 * "response_format" ({"type": "json_object"} or {"type": "json_schema", "json_schema": {name,
 * schema, strict}}), Responses "text.format" ({type, name, schema, strict}), Anthropic
 * "output_config.format" ({"type": "json_schema", schema}), Gemini
 * "generationConfig.responseMimeType" "application/json" with "responseJsonSchema", Bedrock
 * "outputConfig.textFormat" ({"type": "json_schema", "structure": {"jsonSchema": {schema as a
 * string, name}}}), Ollama "format" (the schema, or "json"). Anthropic and Bedrock have no JSON
 * mode: a JSON object asked of them writes nothing (their structured output wants a schema whose
 * objects allow no other properties), and the caller's prompt, which OpenAI's JSON mode wants
 * to say "JSON" anyway, and a check of the answer (the gateway's) make it so. DashScope's native
 * API and the rules provider take no output format: rein_provider_prepare() and a send refuse
 * a request that has one with REIN_EINVAL, so that a structured ask never comes back as plain
 * text in silence. Whether a model takes it is the upstream's to say (an older Claude or
 * GPT-3.5 refuses the member with a 400).
 */
enum rein_output_kind {
    REIN_OUTPUT_TEXT = 0,    /* unset: nothing is sent */
    REIN_OUTPUT_JSON_OBJECT, /* a JSON object, no schema */
    REIN_OUTPUT_JSON_SCHEMA, /* JSON that follows schema */
};
/*
 * Sets the request's output form. name (copied; NULL: "output") names the schema where the wire
 * has a name for it (OpenAI's two APIs, Bedrock); schema (borrowed, copied as its compact text,
 * so the caller may change or free it afterwards) is required for REIN_OUTPUT_JSON_SCHEMA and
 * ignored otherwise; strict asks OpenAI's APIs to keep to the schema exactly (the other wires
 * always do). REIN_OUTPUT_TEXT unsets. Members in rein_model_request_set_extra()'s object under
 * the wire's own name (response_format, text, output_config, outputConfig, format, Gemini's
 * generationConfig.responseMimeType and response schemas) win over it. REIN_EINVAL for a
 * json_schema without an object schema, or an unknown kind; REIN_ENOMEM. Nothing is changed on
 * failure.
 */
REIN_EXTERN rein_err rein_model_request_set_output_format(rein_model_request *req,
                                                          enum rein_output_kind kind,
                                                          const char *name, const json_t *schema,
                                                          bool strict) REIN_WUR;
/* true/false sends parallel_tool_calls; unset by default. */
REIN_EXTERN void rein_model_request_set_parallel_tools(rein_model_request *req, bool on);
/* The model to ask instead of the provider's configured one (copied); NULL unsets. */
REIN_EXTERN rein_err rein_model_request_set_model(rein_model_request *req,
                                                  const char *model) REIN_WUR;
/* The API key to send instead of the configured one (copied; kept in memory only, never
 * logged, recorded or put in a message, like the configured key); NULL unsets. */
REIN_EXTERN rein_err rein_model_request_set_api_key(rein_model_request *req,
                                                    const char *key) REIN_WUR;
/*
 * Members written into the request body as they are, after the wire's own (members, an object,
 * borrowed and referenced; NULL unsets): what a caller passes through for a wire it knows
 * (top_p, stop, response_format, ...). Members the wire writes itself (model, messages, tools,
 * stream, ...) must not be among them.
 */
REIN_EXTERN void rein_model_request_set_extra(rein_model_request *req, json_t *members);
/*
 * The tool list as written for `wire` ("openai", "anthropic": rein_provider_wire()'s names):
 * json, len bytes, is the text of a JSON array, borrowed until req is freed or this is set
 * again (NULL unsets); REIN_EINVAL for an unknown wire's name. A provider of that wire sends
 * it as it is (strict, cache_control, Anthropic's server tools: whatever the wire has)
 * instead of its own encoding of the tools added with rein_model_request_add_tool*, which
 * still name the request's tools for everything else; a provider of another wire ignores
 * it. For a gateway forwarding what its client wrote to the client's own wire.
 */
/*
 * One more header line for the request's HTTP calls (name and value copied), sent after the
 * wire's own and before the signature of a signing wire: what a caller passes through for a
 * wire it knows (anthropic-beta). REIN_EINVAL for a name that is not an HTTP token, a value
 * with a line break or a NUL, or a header the provider owns (authorization, the API key's,
 * host, content-type, content-length, accept, the version the wire asks for).
 */
REIN_EXTERN rein_err rein_model_request_add_header(rein_model_request *req, const char *name,
                                                   const char *value) REIN_WUR;
REIN_EXTERN rein_err rein_model_request_set_wire_tools(rein_model_request *req, const char *wire,
                                                       const char *json, size_t len) REIN_WUR;
/*
 * Tools a provider of `wire` writes after the request's own (its encoding of the tools added,
 * or the wire tools above): json, len bytes, is the text of a JSON array of tools in that
 * wire's words, borrowed until req is freed or this is set again (NULL unsets); REIN_EINVAL
 * for a wire's name too long or a text that is no array's. For tools only the upstream runs
 * (the Responses API's web search), which no call of the reply names for the caller to check,
 * or tools only that wire declares so (its custom tools, whose calls rein reads as any other).
 */
REIN_EXTERN rein_err rein_model_request_set_more_tools(rein_model_request *req, const char *wire,
                                                       const char *json, size_t len) REIN_WUR;
/*
 * Retries of the following sends: -1 (the default) the provider's max_retries and the one
 * repeat of a stream that dropped before any tool call; 0 none at all (for a caller that
 * forwards what it receives and cannot take it back); n > 0 at most n, the repeat included.
 */
REIN_EXTERN void rein_model_request_set_retries(rein_model_request *req, int retries);
/* Cancellation: triggering c (borrowed, referenced until the request is freed or another
 * is set) aborts a send at once with REIN_ECANCELED. NULL unsets. */
REIN_EXTERN void rein_model_request_set_cancel(rein_model_request *req, rein_cancel *c);
/* Events of the following sends go to fn (may be NULL). userdata is borrowed. */
REIN_EXTERN void rein_model_request_set_events(rein_model_request *req, rein_model_event_fn fn,
                                               void *userdata);
/*
 * fn(userdata) runs on the sending thread whenever a send is about to wait (for the upstream's
 * next bytes, or before a retry), after the events of everything received so far: a caller
 * that holds back what the events produced (a gateway's stream to its client) sends it then,
 * one write per upstream read instead of one per event. NULL unsets. userdata is borrowed.
 */
REIN_EXTERN void rein_model_request_set_on_wait(rein_model_request *req, void (*fn)(void *userdata),
                                                void *userdata);
/*
 * The registry the offered tools come from (borrowed; must outlive the sends; NULL unsets).
 * HTTP providers ignore it; the rules provider routes messages among the offered tools: the
 * built-in skills by its own table of rows, other tools by their manifests' "examples"
 * (utterances with their arguments) and "routes" (patterns with named captures).
 */
REIN_EXTERN void rein_model_request_set_registry(rein_model_request *req, const rein_registry *reg);

/*
 * The finish reason of a rules provider reply that could not route the request: its text says
 * what rein can do without a model, in the request's language. The agent's fast path then asks
 * the model instead; a turn whose answer is such a reply did not do what was asked.
 */
#define REIN_FINISH_UNROUTABLE "unroutable"

/*
 * Checks req against p's wire before anything is sent and encodes its tool list (cached in
 * req; rein_provider_send() does both itself). REIN_EINVAL, with err naming the wire and what it
 * cannot carry, for stop sequences the wire has no field for (the Responses API) or more of
 * them than it takes. Afterwards rein_model_request_dropped() says what the wire left out of
 * the tools' parameter schemas. Both pointers are borrowed.
 */
REIN_EXTERN rein_err rein_provider_prepare(rein_provider *p, rein_model_request *req,
                                           rein_error *err) REIN_WUR;
/*
 * What the wire of the last rein_provider_prepare() or rein_provider_send() of req had to leave
 * out of the offered tools' parameter schemas because its schema subset has no such keyword
 * (Gemini's Schema object): an array of {"tool", "keyword", "at" (a JSON pointer into the
 * tool's parameters)}, in tool order; NULL when nothing was dropped. Borrowed, valid until req
 * changes or is freed. The model sees a looser schema than the tool's: rein still checks every
 * call against the full one.
 */
REIN_EXTERN const json_t *rein_model_request_dropped(const rein_model_request *req);

/*
 * Sends history h (borrowed; its per-message encodings are cached in it) with req and waits
 * for the reply, emitting events while it streams. Retries 429/500/502/503/529 and
 * overloaded_error with exponential backoff and jitter, honouring Retry-After and
 * retry-after-ms; a stream that drops before any tool call arrived is asked for once more
 * (a REIN_MEV_RETRY event says so).
 *
 * On success *out is the new response. On failure the code says what happened:
 * REIN_ECANCELED, REIN_ETIMEDOUT, REIN_EHTTP (a non-retryable status; err->detail is the
 * status), REIN_EPROVIDER (an in-stream error, or a stream that dropped after a tool call
 * had begun), REIN_EIO (no connection), REIN_EINVAL (replay mismatch: err names the
 * difference). Whenever part of a reply was received, *out is set even on failure (the
 * partial text kept, unfinished calls marked incomplete, the provider's error object
 * attached); otherwise *out is NULL. Free it with rein_model_response_free().
 */
REIN_EXTERN rein_err rein_provider_send(rein_provider *p, rein_model_request *req, rein_history *h,
                                        rein_model_response **out, rein_error *err) REIN_WUR;

#ifdef __cplusplus
}
#endif
#endif /* REIN_PROVIDER_H */
