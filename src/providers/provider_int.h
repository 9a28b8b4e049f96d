/*
 * Private header of src/providers: the backend vtable, the response assembler every decoder
 * feeds, the SSE reader, and the pieces shared by the wire formats.
 *
 * Layout (curl's lib/vtls pattern): provider.c is the one dispatcher; each wire protocol is
 * one file (openai.c, anthropic.c, ollama.c, dashscope.c, responses.c) exporting one `struct rein__wire` that both
 * encodes requests and decodes replies, listed once in the wire table (wires.c), where wires
 * and their reply formats are looked up by name; each preset (dashscope, vllm, …) is one row
 * of the preset table in config.c naming its wire and defaults. A backend that does not speak
 * HTTP (the rules router) is a preset whose wire fills `send` and leaves the rest NULL.
 * A new wire is one file and one row in wires.c (plus a preset row to reach it by provider
 * name); docs/decisions/0005, addendum.
 */
#ifndef REIN_PROVIDER_INT_H
#define REIN_PROVIDER_INT_H

#include <rein/buf.h>
#include <rein/cancel.h>
#include <rein/history.h>
#include <rein/json.h>
#include <rein/provider.h>

#include "core/internal.h"

#include <time.h>

struct curl_slist;

/* ---------------------------------------------------------------------------------------
 * The response and its tool calls
 */

/*
 * Invariants: name, args are NUL-terminated bounded buffers; id is never NULL once the call
 * exists; doc is set only when status is REIN_MODEL_CALL_OK, and the text it reads (args, or
 * doc_text) does not change while it is set; ended means the END event went out
 * and the status is final.
 */
struct rein_model_call {
    char *id;
    char *signature; /* an opaque signature the wire wants back with the call, or NULL */
    struct rein_buf name;
    struct rein_buf args; /* the raw argument string */
    /* The arguments parsed (rein/doc.h), read from args, or from doc_text when args grew
     * after they were parsed; the jansson tree is made from it only when asked. */
    rein_doc *doc;
    char *doc_text;
    char *error;
    enum rein_model_call_status status;
    int64_t key;      /* the wire's index for this call, -1 when none */
    uint32_t hi_args; /* a high surrogate waiting for its pair across deltas */
    bool from_text;
    /* a custom (free-form) tool's call: args are {"input": the text} (decision 0096) */
    bool custom;
    bool started; /* START went out */
    bool closed;  /* the wire said the call is finished */
    bool ended;
    bool synthetic_id;
};

/*
 * The upstream's response headers a response keeps (provider.h, rein_model_headers).
 * Invariants: buf is NULL until a header is kept, then REIN__HEADERS_BYTES long; it holds n
 * headers as "name\0value\0", name lower-case, header i's name starting at at[i]; len bytes
 * of it are used. A struct is moved by copying it and zeroing the source.
 */
#define REIN__HEADERS_BYTES    4096
#define REIN__HEADER_VALUE_MAX 256
struct rein_model_headers {
    char *buf;
    uint16_t len;
    uint16_t n;
    uint16_t at[REIN_MODEL_HEADERS_MAX];
};

/* Keeps the header line (n bytes, as curl hands it: "Name: value\r\n") when its name is one
 * rein keeps and it fits; a value holding one of the nkeys keys (entries may be NULL) is
 * dropped, so no API key an upstream echoes leaves rein. A line of another name costs a few
 * compares and no allocation. REIN_ENOMEM when the buffer cannot be made. */
rein_err rein__headers_offer(struct rein_model_headers *h, const char *line, size_t n,
                             const char *const *keys, size_t nkeys);
/* Forgets the headers kept (a new response begins), keeping the buffer. */
void rein__headers_clear(struct rein_model_headers *h);
void rein__headers_release(struct rein_model_headers *h);

struct rein_model_response {
    struct rein_buf text, reasoning, signature, refusal;
    rein_model_call **calls;
    size_t ncalls, calls_cap;
    json_t *redacted;      /* array of opaque strings, or NULL */
    json_t *server_blocks; /* array of Anthropic server blocks, or NULL */
    /* OpenAI's choice logprobs (a stream's pieces joined: their arrays concatenated) and the
     * message's annotations, as the wire wrote them, or NULL: rein reads neither, and a client
     * of the same wire that asked for them is owed them (the gateway, decision 0087). */
    json_t *logprobs, *annotations;
    /* Anthropic's text blocks in order, or NULL (other wires): each {"at": where its text
     * starts in the text, "server": how many server blocks came before it, "citations": [...]
     * when the block has them}. A reply of web search answers in many blocks, each with the
     * citations of its own text. */
    json_t *text_blocks;
    /* Anthropic's thinking and redacted_thinking blocks in order, each with "at" (how many
     * tool calls came before it), or NULL: interleaved thinking has several per turn, and
     * each must go back with its own signature in its place. */
    json_t *thinking_blocks;
    /* OpenRouter's reasoning_details (objects merged by "index" across deltas), or NULL: they
     * go back verbatim in the assistant message so the model continues its reasoning. */
    json_t *reasoning_details;
    /* The Responses API's reasoning items (type, id, summary, encrypted_content) in order, or
     * NULL: a reasoning model needs them back after a tool call. */
    json_t *reasoning_items;
    char *response_id; /* the Responses API's response id, or NULL */
    /* The model that answered and the reply's id as the wire reports them (any wire that
     * carries them: gen_ai.response.model and gen_ai.response.id), or NULL. */
    char *answer_model, *answer_id;
    json_t *error;    /* the provider's error object, or NULL */
    char *request_id; /* the request_id member of an error body (Anthropic), or NULL */
    struct rein_model_headers headers; /* the HTTP response's kept headers */
    int64_t retry_after_ms;            /* a failed HTTP request's Retry-After, -1 when none */
    char *finish_reason;
    char *stop_sequence; /* the stop sequence that ended the reply, or NULL */
    int64_t input_tokens, output_tokens;
    /* Parts of the usage some wires report: prompt tokens read from a cache (counted in
     * input_tokens) and reasoning tokens (counted in output_tokens); -1 when not reported. */
    int64_t cached_tokens, reasoning_tokens;
    /* Of the input tokens, those written to the provider's prompt cache (Anthropic's
     * cache_creation_input_tokens, Bedrock's cacheWriteInputTokens); -1 when not reported. */
    int64_t cache_write_tokens;
    size_t text_calls; /* calls left in the text (report mode) */
    bool complete;
};

rein_model_response *rein__response_new(size_t max_bytes);

/* ---------------------------------------------------------------------------------------
 * The assembler: every decoder reports what it reads here, and events go out from here.
 * String inputs are JSON string token contents (between the quotes, escapes intact); the
 * assembler unescapes them, keeping a high surrogate split across deltas until its pair
 * arrives.
 */
struct rein__jstr {
    const char *p;
    size_t len;
    bool esc; /* contains a backslash */
};

enum rein__tmode { TM_START, TM_THINK, TM_NORMAL, TM_FENCE, TM_HOLD };

struct rein__asm {
    rein_model_response *r;
    rein_model_event_fn fn;
    void *ud;
    const struct rein_decoder_options *opt;
    uint64_t id_seed;
    /* When set, id_seed is id_seed_fn(id_seed_ud), asked for when a made-up id first needs
     * it (then cleared). */
    uint64_t (*id_seed_fn)(void *ud);
    void *id_seed_ud;
    uint32_t hi_text, hi_reason, hi_refusal, hi_sig;
    /* The event filter over the text: what was emitted, and where it stands. */
    enum rein__tmode tmode;
    size_t tpos;       /* bytes of r->text looked at by the filter */
    bool think_closed; /* a <think> section ended: whitespace after it is not text */
    size_t fence_at;   /* where the fence starts while in TM_FENCE */
    /* The text emitted so far. While every piece started where the one before ended, it is
     * r->text's first emitted_run bytes and emitted stays empty (a long stream's deltas are
     * not copied a second time); the first piece from elsewhere, or the end, writes those
     * bytes into emitted (emitted_split), which holds it all from then on. */
    size_t emitted_run;
    bool emitted_split;
    struct rein_buf emitted;
    int messages;       /* Anthropic message_start count */
    bool other_choices; /* n > 1: choices other than 0 were seen */
    bool finished;      /* rein__asm_end ran */
    struct rein_buf scratch;
};

void rein__asm_init(struct rein__asm *a, rein_model_response *r,
                    const struct rein_decoder_options *opt, rein_model_event_fn fn, void *ud);
void rein__asm_release(struct rein__asm *a);
rein_err rein__asm_text(struct rein__asm *a, struct rein__jstr s) REIN_WUR;
rein_err rein__asm_reasoning(struct rein__asm *a, struct rein__jstr s) REIN_WUR;
rein_err rein__asm_signature(struct rein__asm *a, struct rein__jstr s) REIN_WUR;
/* A thinking block's signature (Anthropic, Bedrock), told to the listener as it comes; Gemini's
 * signatures (rein__asm_signature) belong to parts and close no thinking block. */
rein_err rein__asm_block_signature(struct rein__asm *a, struct rein__jstr s) REIN_WUR;
/* A redacted thinking block's data (a JSON string; owned from here, even on failure), kept in
 * order and told to the listener. */
rein_err rein__asm_redacted(struct rein__asm *a, json_t *data) REIN_WUR;
/* A server tool's block (owned from here, even on failure), kept for replay and told to the
 * listener as its JSON. */
rein_err rein__asm_server_block(struct rein__asm *a, json_t *block) REIN_WUR;
rein_err rein__asm_refusal(struct rein__asm *a, struct rein__jstr s) REIN_WUR;
/* A piece of OpenAI's choice logprobs (an object; owned from here, even on failure): joined
 * to what the reply has and told to the listener as its JSON. */
rein_err rein__asm_logprobs(struct rein__asm *a, json_t *piece) REIN_WUR;
/* A piece of OpenAI's message annotations (an array; owned from here, even on failure),
 * likewise. */
rein_err rein__asm_annotations(struct rein__asm *a, json_t *piece) REIN_WUR;
/* An Anthropic text block starts (citations: the array it starts with, owned, NULL when it has
 * none): the text held back by the filter goes out first, as the end of the block before. */
rein_err rein__asm_text_block(struct rein__asm *a, json_t *citations) REIN_WUR;
/* Tells the listener of len bytes of JSON text p (borrowed) as an event of type, after the text
 * the filter held back; nothing is kept. */
rein_err rein__asm_tell_text(struct rein__asm *a, enum rein_model_event_type type, const char *p,
                             size_t len) REIN_WUR;
/* Tells the listener of a JSON value the reply keeps (borrowed) as an event of type. */
rein_err rein__asm_tell(struct rein__asm *a, enum rein_model_event_type type,
                        const json_t *v) REIN_WUR;
/* A citation of the text block streaming (owned from here, even on failure). */
rein_err rein__asm_citation(struct rein__asm *a, json_t *citation) REIN_WUR;
/*
 * The open call with wire index key (the most recent one), created when there is none or
 * when id names a different call than the one open at key (Ollama sends every call at index
 * 0). key -1: a call without index (a new one when id differs from the last call's, else the
 * last call). id and name may have len 0. Returns the call index, or a negative code.
 */
int rein__asm_call(struct rein__asm *a, int64_t key, struct rein__jstr id, struct rein__jstr name);
/* A whole new call at once (Ollama, text calls): raw arguments as literal bytes. */
int rein__asm_call_whole(struct rein__asm *a, const char *name, size_t name_len, const char *raw,
                         size_t raw_len, bool from_text, bool closed);
rein_err rein__asm_call_args(struct rein__asm *a, size_t i, struct rein__jstr s) REIN_WUR;
rein_err rein__asm_call_args_raw(struct rein__asm *a, size_t i, const char *p, size_t len) REIN_WUR;
/* The wire says call i is finished: its status is decided and END goes out. */
rein_err rein__asm_call_close(struct rein__asm *a, size_t i) REIN_WUR;
/* Usage as reported (-1: not in this report, keep what is known). */
void rein__asm_usage(struct rein__asm *a, int64_t in, int64_t out);
/* The model that answered and the reply's id (JSON string contents; len 0: not in this
 * report). The first of each a reply reports is kept. */
rein_err rein__asm_identity(struct rein__asm *a, struct rein__jstr id,
                            struct rein__jstr model) REIN_WUR;
/* The cached and reasoning parts of the usage (-1: not in this report). */
void rein__asm_usage_detail(struct rein__asm *a, int64_t cached, int64_t reasoning);
/* The input tokens written to the prompt cache (-1: not in this report). */
void rein__asm_cache_write(struct rein__asm *a, int64_t tokens);
/* Gives call i the signature s (a JSON string token's content), replacing any it had. */
rein_err rein__asm_call_signature(struct rein__asm *a, size_t i, struct rein__jstr s) REIN_WUR;
rein_err rein__asm_finish_reason(struct rein__asm *a, struct rein__jstr s) REIN_WUR;
/* The stop sequence that ended the reply (Anthropic's stop_sequence). */
rein_err rein__asm_stop_sequence(struct rein__asm *a, struct rein__jstr s) REIN_WUR;
/* The request_id member beside an error object (Anthropic's): the upstream's id for the
 * request (rein_model_response_request_id). The first one wins. */
rein_err rein__asm_request_id(struct rein__asm *a, struct rein__jstr id) REIN_WUR;
/* Records the provider's error object (taken). The first one wins. */
void rein__asm_error(struct rein__asm *a, json_t *error);
/* The reply ended normally. */
void rein__asm_complete(struct rein__asm *a);
/* Ends the reply: open calls are decided, text calls and <think> taken out of the text,
 * the held-back text flushed, FINISH emitted. Idempotent. */
rein_err rein__asm_end(struct rein__asm *a) REIN_WUR;

/* Decides a call's status (name, arguments) once it is finished or the reply ended. */
rein_err rein__call_decide(rein_model_call *c, bool reply_complete) REIN_WUR;
/* Frees the call's parsed arguments (doc, doc_text). */
void rein__call_drop_doc(rein_model_call *c);
/* True when name is usable as a tool name: 1-256 bytes of UTF-8 without spaces or control
 * characters, with at least one letter or digit. */
bool rein__tool_name_is_valid(const char *name, size_t len);
/* A stable call id from seed, index and name: "call_" + 16 hex digits. */
void rein__call_id_make(uint64_t seed, size_t index, const char *name, char out[REIN_ID_MAX]);
uint64_t rein__hash64(uint64_t h, const void *data, size_t len);

/* ---------------------------------------------------------------------------------------
 * Text calls (textcalls.c)
 */
/* Markers that may start call markup in text; "```" is the fence. NULL-terminated. */
extern const char *const rein__text_markers[];
/* Takes <think> sections and tool-call markup out of r->text (per a->opt). */
rein_err rein__textcalls_apply(struct rein__asm *a) REIN_WUR;
/* True when a fenced block body (between the fences) holds call JSON (per a->opt tools). */
bool rein__textcalls_fenced_is_call(const struct rein__asm *a, const char *body, size_t len);
/* When s starts with "<" + an offered tool name and a tag boundary: the name's length; else 0,
 * with *partial true when s is too short to tell (s might still become such a tag). */
size_t rein__textcalls_tool_tag(const struct rein_decoder_options *opt, const char *s, size_t n,
                                bool *partial);
/* Offset just past the JSON value starting at s[0] (object, array or string), or 0 when it
 * does not end within len. */
size_t rein__json_value_end(const char *s, size_t len);

/* ---------------------------------------------------------------------------------------
 * JSON string unescaping (jstr.c)
 */
/*
 * Appends the unescaped content of a JSON string token (s, len: between the quotes) to out.
 * *hi carries a high surrogate from the previous piece and receives one left at the end of
 * this piece; invalid escapes and unpaired surrogates become U+FFFD.
 */
rein_err rein__json_unescape(struct rein_buf *out, const char *s, size_t len, uint32_t *hi);
/* Appends U+FFFD for a high surrogate left over at the end of a field; resets *hi. */
rein_err rein__json_unescape_flush(struct rein_buf *out, uint32_t *hi);

/* ---------------------------------------------------------------------------------------
 * SSE reader (sse.c): lenient text/event-stream framing.
 * Handles a BOM, LF/CRLF/CR line ends, "data:" with or without a space, comments, "event:"
 * and "id:" lines, events with no blank line between them (a field line after data
 * dispatches), data without a final blank line at the end, and bytes split anywhere.
 */
typedef rein_err (*rein__sse_fn)(void *ud, const char *event, const char *data, size_t len,
                                 rein_error *err);
struct rein__sse {
    struct rein_buf line; /* a line split across feeds */
    struct rein_buf data; /* the current event's data, from data_off on */
    size_t data_off;      /* where the data starts in it (a gathered line's "data: ") */
    char event[64];
    size_t max;
    size_t lineno;
    rein__sse_fn fn;
    void *ud;
    bool started; /* past the BOM check */
    bool last_cr; /* the previous feed ended with CR */
    bool has_data;
    bool payload_lines; /* every line is a payload (jsonl, ndjson) */
};
void rein__sse_init(struct rein__sse *s, size_t max, bool payload_lines, rein__sse_fn fn, void *ud);
void rein__sse_release(struct rein__sse *s);
rein_err rein__sse_feed(struct rein__sse *s, const char *p, size_t len, rein_error *err) REIN_WUR;
rein_err rein__sse_finish(struct rein__sse *s, rein_error *err) REIN_WUR;

/* ---------------------------------------------------------------------------------------
 * AWS event stream reader (eventstream.c): application/vnd.amazon.eventstream framing, both
 * CRCs checked, bytes split anywhere.
 */
struct rein__evs_msg {
    char message_type[16];   /* ":message-type": "event", "exception" or "error"; "" absent */
    char event_type[64];     /* ":event-type", ":exception-type" or ":error-code" */
    char error_message[256]; /* ":error-message" of an error message */
    char content_type[64];   /* ":content-type" */
    const char *payload;     /* borrowed for the callback */
    size_t len;
    size_t index; /* 1-based */
};
typedef rein_err (*rein__evs_fn)(void *ud, const struct rein__evs_msg *m, rein_error *err);
struct rein__evs {
    struct rein_buf buf; /* a message split across feeds */
    size_t max;          /* largest headers and payload of one message */
    size_t count;        /* messages handed on */
    rein__evs_fn fn;
    void *ud;
};
void rein__evs_init(struct rein__evs *s, size_t max, rein__evs_fn fn, void *ud);
void rein__evs_release(struct rein__evs *s);
/* REIN_EPARSE (err names the message and what is wrong) for bytes that are not sound framing. */
rein_err rein__evs_feed(struct rein__evs *s, const void *data, size_t len,
                        rein_error *err) REIN_WUR;
/* Bytes of a message not yet whole (a stream that ends with some was cut). */
size_t rein__evs_pending(const struct rein__evs *s);
/* CRC-32 (IEEE 802.3, zlib's crc32) of len bytes, continuing crc (0 to start). */
uint32_t rein__crc32(uint32_t crc, const void *data, size_t len);

/* ---------------------------------------------------------------------------------------
 * Decoders (decode.c) and the per-wire payload handlers
 */
struct rein__oa_tmpl;
struct rein_provider_decoder {
    const struct rein__wire *wire; /* whose handlers decode the payloads */
    bool body;                     /* one whole body, not a stream */
    struct rein_decoder_options opt;
    struct rein__sse sse;
    struct rein__evs evs;  /* event stream formats: the binary framing */
    bool evs_framing;      /* this decoder reads the binary framing, not SSE or lines */
    bool exception;        /* the payload being decoded is an event stream exception */
    struct rein_buf whole; /* body formats: the whole body */
    struct rein__asm a;
    rein_model_response *r;
    void *tok; /* jsmntok_t array */
    int tokcap;
    size_t events;     /* payloads seen */
    size_t recognized; /* payloads that had the format's shape */
    char first[72];    /* the start of the first payload, for error messages */
    struct rein_buf notes;
    void *wire_state;  /* the wire's own, freed with wire->decode_free */
    int state;         /* 0 open, 1 finished, -1 failed */
    bool done_seen;    /* [DONE] */
    bool at_eof;       /* _finish is dispatching what the input left unterminated */
    bool cut;          /* the input ended inside its last payload: it was dropped */
    bool general_only; /* tests: every payload through the wire's general path (no fast path) */
    struct rein__oa_tmpl *oa_tmpl;     /* oachunk.c's template of the last chunk (NULL: none) */
    struct rein__text_tmpl *text_tmpl; /* sse.c's text event template (NULL: none) */
};

/*
 * A text event template (sse.c): the payload of the last text-delta event a wire's general
 * path read, with the span of its text string, and the SSE event name it came with. A payload
 * of the same bytes but for another string there is the same text delta of that string, by
 * construction: the string cannot change how the bytes around it parse. Anthropic's
 * content_block_delta of a text_delta keeps one (anthropic.c).
 */
#define REIN__TEXT_TMPL_MAX 1024
struct rein__text_tmpl {
    char event[64];         /* the event name ("": none) */
    size_t len, start, end; /* the payload's bytes; the text string's, without its quotes */
    char text[REIN__TEXT_TMPL_MAX];
};
/* Keeps the payload (len bytes at p, event its name or NULL) whose text string is [start,
 * end) as d's text template, unless it does not fit one or holds a line break; a decoder
 * set to the general path keeps none. */
void rein__text_tmpl_keep(struct rein_provider_decoder *d, const char *event, const char *p,
                          size_t len, size_t start, size_t end);
/*
 * The SSE events at the start of the len bytes at p that are d's text template with another
 * string in its hole (each whole: an event line when the template has one, the data line, the
 * blank line), each counted as the reader and the wire's payload reader count it (its lines,
 * one event, one recognized) and its text handed to the assembler. Only between events (the
 * reader holds nothing). Returns the bytes read (0: none), *rc the assembler's error.
 */
size_t rein__text_events(struct rein_provider_decoder *d, const char *p, size_t len, rein_err *rc);
/* True when d's SSE reader stands between events, holding nothing (no part of a line, no data,
 * no event name, no CR, past its first line), d is not set to the general path, and a template
 * of tmpl_len bytes is within the reader's bound: the one state in which an event may be read
 * straight from the bytes (rein__text_events, rein__openai_text_events). */
bool rein__sse_between_events(const struct rein_provider_decoder *d, size_t tmpl_len);
/* An event read straight from the bytes: counted as the reader (lines lines) and the payload
 * path count one (an event, recognized), its text handed to the assembler. */
static inline rein_err rein__sse_took_text(struct rein_provider_decoder *d, size_t lines,
                                           struct rein__jstr text)
{
    rein_err rc = REIN_OK;

    d->sse.lineno += lines;
    d->events++;
    if (text.len && (rc = rein__asm_text(&d->a, text)) != REIN_OK)
        return rc;
    d->recognized++;
    return REIN_OK;
}

/*
 * True when a payload that did not parse (cut_short: its JSON ended early) is the input's
 * last one, left unterminated: the stream was cut mid-event. The payload is dropped (it was
 * never whole), the reply is marked incomplete and a note says so.
 */
bool rein__decoder_cut_at_eof(struct rein_provider_decoder *d, bool cut_short);

/*
 * An "event: error" whose data is not JSON (a proxy's or server's plain-text message): kept
 * as the provider's error {"message": text}. False (nothing done) for any other event.
 */
bool rein__decoder_error_text(struct rein_provider_decoder *d, const char *event, const char *p,
                              size_t len);

/* New decoder for one reply of wire w: a stream (body false) or one whole body. opts, on_event
 * as for rein_provider_decoder_new(). NULL when memory is exhausted or w cannot decode. */
rein_provider_decoder *rein__decoder_new(const struct rein__wire *w, bool body,
                                         const struct rein_decoder_options *opts,
                                         rein_model_event_fn on_event, void *userdata);
/* After a failed feed (a cut or undecodable stream), ends the reply anyway and hands out
 * what was assembled so far (calls decided as the reply stands). NULL when there is none. */
rein_model_response *rein__decoder_salvage(struct rein_provider_decoder *d);
/* Counts a payload (keeping the start of the first for messages); returns its number. */
size_t rein__decoder_saw(struct rein_provider_decoder *d, const char *p, size_t len);
/* Fails with REIN_EPARSE naming payload n, its line and what was wrong. */
rein_err rein__decoder_bad(struct rein_provider_decoder *d, size_t n, const char *p, size_t len,
                           const char *what, rein_error *err);
/* Adds a note line (deduplicated). */
void rein__decoder_note(struct rein_provider_decoder *d, const char *note);
/* The seed for made-up call ids (from the request body), before the first feed. */
void rein__decoder_set_id_seed(struct rein_provider_decoder *d, uint64_t seed);
/* The same, made by fn(ud) only when a call without an id needs it: the seed hashes the
 * request's conversation, and most replies name their calls. ud is borrowed and must outlive
 * the decoding. */
void rein__decoder_set_id_seed_fn(struct rein_provider_decoder *d, uint64_t (*fn)(void *ud),
                                  void *ud);

/* ---------------------------------------------------------------------------------------
 * Configuration, presets and the backend vtable
 */
enum rein__quirk {
    Q_ENABLE_THINKING_OFF_NONSTREAM = 1
                                      << 0, /* DashScope: enable_thinking=false unless streaming */
    Q_MAX_COMPLETION_TOKENS = 1 << 1,       /* send max_completion_tokens (OpenAI) */
    Q_NO_STREAM_OPTIONS = 1 << 2,           /* server rejects stream_options */
    Q_SEND_REASONING = 1 << 3,              /* send reasoning_content back (DeepSeek) */
    /* Mistral (decision 0105): tool call ids written as [a-zA-Z0-9]{9} (a fixed mapping of
     * each id), tool_choice "required" as "any", and an assistant message between tool
     * results and a user message, which Mistral refuses to follow one another */
    Q_MISTRAL = 1 << 4,
    /* DeepSeek's thinking mode: every assistant message with tool calls carries its
     * reasoning_content back, empty when none was kept (decision 0105) */
    Q_REASONING_ON_CALLS = 1 << 5,
    /* members the upstream refuses with a 400 (decision 0105): xAI's reasoning models the
     * penalties and stop, Groq logprobs, logit_bias, top_logprobs and n above 1 */
    Q_XAI_PARAMS = 1 << 6,
    Q_GROQ_PARAMS = 1 << 7,
    /* Moonshot's Kimi models (decision 0108): an empty reasoning_content counts as missing, so
     * a tool turn without one kept carries a single space; the reasoning "none" is thinking
     * {"type": "disabled"}, the only setting of theirs it has, not reasoning_effort */
    Q_KIMI = 1 << 8,
};

struct rein__caps_override {
    char *prefix;
    struct rein_model_caps caps;
};

struct rein_provider_config {
    char *provider, *model, *base_url, *api_key, *api_key_env;
    char *record, *replay, *anthropic_version, *user_agent;
    const struct rein__preset *preset;
    int64_t timeout[4];
    int max_retries;
    int64_t retry_base_ms, retry_max_wait_ms;
    enum rein_text_calls text_calls;
    bool keep_think_tags;
    int enable_thinking;            /* -1 default, 0 off, 1 on */
    enum rein_reasoning reasoning;  /* reasoning_effort: every request's unless it sets one */
    char *deployment, *api_version; /* Azure OpenAI (azure.c) */
    bool auth_bearer;               /* the key goes as Authorization: Bearer */
    bool previous_response_id;      /* Responses API: chain stored responses */
    unsigned quirks;
    struct rein__caps_override *caps;
    size_t ncaps;
};

struct rein__wire;
struct rein__body;

/*
 * One provider name (the preset table in config.c). open (may be NULL) sets up a provider
 * that is not a plain HTTP wire at a base URL (rules, replay); the HTTP setup is the default.
 */
struct rein__preset {
    const char *name;
    const struct rein__wire *wire; /* NULL: open decides (replay) */
    const char *base_url;          /* NULL: must be configured */
    const char *key_env;           /* NULL: no key needed */
    const char *auth;              /* the key's header up to the key; NULL: the wire's */
    unsigned quirks;
    const char *summary;
    rein_err (*open)(rein_provider *p, rein_error *err);
};
const struct rein__preset *rein__preset_find(const char *name);
/* The setups of the presets that are not an HTTP wire (rules.c, provider.c). */
rein_err rein__rules_open(rein_provider *p, rein_error *err);
rein_err rein__replay_setup(rein_provider *p, rein_error *err);
/* Vertex AI's two presets (vertex.c): Gemini at publishers/google, Claude at
 * publishers/anthropic. */
rein_err rein__vertex_open(rein_provider *p, rein_error *err);
rein_err rein__vertex_anthropic_open(rein_provider *p, rein_error *err);
rein_err rein__bedrock_open(rein_provider *p, rein_error *err);
/* The body rein_provider_count_request() sends for (req, h), both borrowed: the wire's own
 * writer's, cut to what its count takes, in the count's shape (provider.c). *text is new. As
 * rein_provider_prepare() says on REIN_EINVAL; REIN_ENOMEM otherwise. The fuzz target
 * gateway_request writes one for a Bedrock upstream. */
rein_err rein__provider_count_body(rein_provider *p, rein_model_request *req, rein_history *h,
                                   char **text, rein_error *err) REIN_WUR;
/* Bedrock's CountTokens URL for req (borrowed, as a send's): BASE/model/MODEL/count-tokens, the
 * model id encoded as the Converse URL's is. New; NULL when memory is exhausted. */
char *rein__bedrock_count_url(const rein_provider *p, const rein_model_request *req);

/* AWS credentials, region and SigV4 (sigv4.c). */
struct rein__aws;
/* Finds the credentials and region as the AWS SDKs do (environment, then the shared
 * credentials and config files); REIN_EINVAL saying what to set when there are none. */
rein_err rein__aws_load(struct rein__aws **out, rein_error *err) REIN_WUR;
void rein__aws_free(struct rein__aws *a);
const char *rein__aws_region(const struct rein__aws *a);
/* Adds the Authorization, X-Amz-Date (and X-Amz-Security-Token) headers that sign a POST of
 * body to url for service at time now; the request must send Content-Type:
 * application/json, which is signed. */
rein_err rein__aws_sign(struct rein__aws *a, const char *service, const char *url, const char *body,
                        size_t len, time_t now, struct curl_slist **headers) REIN_WUR;
/* The same for a body whose SHA-256 (lower-case hex) the caller took. */
rein_err rein__aws_sign_hashed(struct rein__aws *a, const char *service, const char *url,
                               const char body_hash[65], time_t now,
                               struct curl_slist **headers) REIN_WUR;
/* Temporary AWS credentials and their sources (awscreds.c). */
enum rein__aws_kind {
    REIN__AWS_STATIC = 0,
    REIN__AWS_PROCESS,
    REIN__AWS_CONTAINER,
    REIN__AWS_WEB_IDENTITY,
    REIN__AWS_IMDS
};
struct rein__aws_source {
    enum rein__aws_kind kind;
    char *process;   /* PROCESS: the command */
    char *url;       /* CONTAINER: the endpoint; WEB_IDENTITY: STS's */
    char *auth;      /* CONTAINER: the Authorization value, or NULL */
    char *auth_file; /* CONTAINER: a file holding it (read at each fetch), or NULL */
    char *role_arn;  /* WEB_IDENTITY: the role to assume (auth_file: the token's file) */
    char *session;   /* WEB_IDENTITY: the role session's name */
    char *imds;      /* IMDS: the endpoint, without a trailing '/' */
};
struct rein__aws_creds {
    char *key_id, *secret, *token; /* owned, wiped when released; token may be NULL */
    int64_t expires_ms;            /* ms since the epoch; 0: no Expiration given */
};
/* Parses a credentials answer (credential_process's stdout, the container endpoint's or the
 * instance metadata's body: len bytes, untrusted) into out; REIN_EPARSE saying what is wrong
 * (never quoting a secret). */
rein_err rein__aws_creds_parse(const char *text, size_t len, struct rein__aws_creds *out,
                               rein_error *err) REIN_WUR;
void rein__aws_creds_release(struct rein__aws_creds *c);
/* A profile's web identity settings (web_identity_token_file, role_arn,
 * role_session_name), each NULL when absent. Borrowed. */
struct rein__aws_profile_web {
    const char *token_file, *role_arn, *session;
};
/* The source the chain names after the static keys: web identity (AWS_WEB_IDENTITY_TOKEN_FILE
 * and AWS_ROLE_ARN, else pw's; STS at AWS_ENDPOINT_URL_STS or the region's), else process
 * (the profile's credential_process, may be NULL), else the container endpoint's variables,
 * else the instance metadata unless AWS_EC2_METADATA_DISABLED; kind STATIC when none. */
rein_err rein__aws_source_find(const char *process, const struct rein__aws_profile_web *pw,
                               const char *region, struct rein__aws_source *s,
                               rein_error *err) REIN_WUR;
/* Parses STS's XML answer to AssumeRoleWithWebIdentity (len untrusted bytes) into out, or its
 * ErrorResponse into REIN_EPARSE naming the code; entity declarations are refused. */
rein_err rein__aws_sts_parse(const char *text, size_t len, struct rein__aws_creds *out,
                             rein_error *err) REIN_WUR;
void rein__aws_source_release(struct rein__aws_source *s);
const char *rein__aws_source_name(const struct rein__aws_source *s);
/* Asks the source for credentials (out: new, release with rein__aws_creds_release). */
rein_err rein__aws_fetch(const struct rein__aws_source *s, struct rein__aws_creds *out,
                         rein_error *err) REIN_WUR;
/* Appends n bytes of s URI-encoded as SigV4 does (unreserved kept, '/' kept when slash). */
rein_err rein__aws_uri_encode(struct rein_buf *b, const char *s, size_t n, bool slash) REIN_WUR;
/* One small request to a credentials endpoint (awscreds.c): method (GET, PUT, POST) with the
 * header lines (NULL-terminated, may be NULL) and body (NULL: none), within timeout_ms; the
 * answer appended to out (at most 64 KiB: REIN_ETOOBIG past it), its status in *status.
 * REIN_EIO (err names the URL and curl's reason) when no answer came. */
rein_err rein__cred_http(const char *method, const char *url, const char *const *headers,
                         const char *body, int64_t timeout_ms, long *status, struct rein_buf *out,
                         rein_error *err) REIN_WUR;
/* Google Application Default Credentials (gcpcreds.c). */
struct rein__gcp;
/* Finds the credentials file as Google's libraries do and gets a first access token:
 * REIN_ENOTFOUND (err untouched) when there is no file, REIN_EINVAL (err names the file and
 * what is wrong) when it cannot give a token. */
rein_err rein__gcp_load(struct rein__gcp **out, rein_error *err);
void rein__gcp_free(struct rein__gcp *g);
/* The project the file names (quota_project_id, project_id), or NULL. Borrowed. */
const char *rein__gcp_project(const struct rein__gcp *g);
/* Adds "Authorization: Bearer TOKEN", fetching a new token when the one kept is near its end;
 * REIN_EINVAL when there is no valid one (the log says why). */
rein_err rein__gcp_header(struct rein__gcp *g, struct curl_slist **headers) REIN_WUR;
/* Parses a token endpoint's answer (len untrusted bytes): *token new, *expires_in seconds
 * (3600 when absent); REIN_EPARSE saying what is wrong, OAuth's error word included. */
rein_err rein__gcp_token_parse(const char *text, size_t len, char **token, int64_t *expires_in,
                               rein_error *err) REIN_WUR;
/* The default setup of a preset spoken over HTTP at a base URL (provider.c); a preset's open
 * that only works out its base URL ends with it. */
rein_err rein__http_setup(rein_provider *p, rein_error *err);
rein_err rein__azure_open(rein_provider *p, rein_error *err);

struct rein__send_ctx; /* transport state of one send (provider.c) */

/* How a streamed reply is framed: SSE events, or one JSON payload per line (NDJSON). */
enum rein__framing {
    REIN__FRAMING_SSE = 0,
    REIN__FRAMING_LINES,
    REIN__FRAMING_EVENTSTREAM, /* AWS application/vnd.amazon.eventstream (eventstream.c) */
};

/*
 * One wire protocol: how a request is encoded and how its reply is decoded. Encoding a message
 * is cached per history entry under `variant`, so a wire whose encoding depends on quirks
 * returns different variants for them.
 */
struct rein__wire {
    const char *name; /* in recordings and messages */
    const char *path; /* appended to the base URL */
    const char *auth; /* the API key's header up to the key ("x-api-key: "); NULL: none */
    /* The reply formats' names (rein provider parse --format): streamed, one body; and other
     * names for the same two (NULL: none). */
    const char *formats[2];
    const char *alias_formats[2];
    enum rein__framing framing; /* of the streamed format */
    /* The most stop sequences one request may carry: 0 the wire has no such field (a request
     * with some is refused), REIN_STOP_MAX when its spec names no limit of its own. */
    size_t stop_max;
    /* writes the request's reasoning (reasoning.c) for every model, or for those this says
     * (may be NULL) */
    bool reasoning;
    bool (*reasoning_for)(const char *model);
    /* the sampling settings a model takes (REIN_SAMPLING_*), thinking or not; NULL: every one,
     * as most do */
    unsigned (*sampling)(const char *model, bool thinks);
    /* writes the request's output format (output.c); a request with one is refused by a
     * wire that does not */
    bool output_format;
    /* ---- decoding: every payload of a stream (an SSE data field or a line, with the SSE
     * event name or NULL), the whole body of a reply that is not streamed, what is left to
     * settle before the reply ends (may be NULL), and the wire's own decoder state in
     * d->wire_state (may be NULL). */
    rein_err (*decode_payload)(struct rein_provider_decoder *d, const char *event, const char *p,
                               size_t len, rein_error *err);
    rein_err (*decode_body)(struct rein_provider_decoder *d, const char *p, size_t len,
                            rein_error *err);
    rein_err (*decode_end)(struct rein_provider_decoder *d);
    void (*decode_free)(void *wire_state);
    /* ---- encoding ---- */
    unsigned (*variant)(const rein_provider *p);
    /* Encodes one neutral message (borrowed) into out: its cached piece. */
    rein_err (*encode_message)(const rein_provider *p, const json_t *msg, struct rein_buf *out);
    /* Encodes message i of h when its piece also depends on the messages before it (NULL:
     * encode_message). A tool result's may look back only as far as the last assistant
     * message before i, another message's only over the tool results right before it
     * (rein_history_remove, rein_history_replace and the shared pieces count on it). A piece
     * may hold more than one item of a messages array (the OpenAI wire writes the media of
     * tool results as a user message before the message after them: decision 0098). */
    rein_err (*encode_in)(const rein_provider *p, const rein_history *h, size_t i,
                          struct rein_buf *out);
    /* A wire whose messages array groups consecutive messages by side (user text and tool
     * results one side, assistant the other) into one message of content blocks each: the
     * bytes that open a user-side and an assistant-side group (each is closed with "]}"),
     * and the system messages go to a list of their own (rein__history_groups). NULL: one
     * item per message (rein__history_joined). */
    const char *group_user, *group_model;
    /* Encodes the tool list of req into out (cached in the request); what a schema subset
     * cannot carry is appended to req->dropped (see there). */
    rein_err (*encode_tools)(const rein_provider *p, const rein_model_request *req,
                             struct rein_buf *out);
    /* Assembles the whole body from the history's cached pieces and the request: into
     * body->buf, or, with rein__body_block(), around the history's own bytes. */
    rein_err (*build_body)(rein_provider *p, const rein_model_request *req, rein_history *h,
                           struct rein__body *body, rein_error *err);
    /* Adds the wire's protocol headers for req (the key's header is added from auth); may be
     * NULL. */
    rein_err (*headers)(const rein_provider *p, const rein_model_request *req,
                        struct curl_slist **list);
    /* The URL of one request when it depends on the request (Gemini names the model and the
     * streaming method in the path): a new string, NULL when memory is exhausted. NULL hook:
     * every request goes to the provider's endpoint. */
    char *(*url)(const rein_provider *p, const rein_model_request *req);
    /* Signs one request (url, body: read in its pieces, never flattened for it) by adding its
     * headers (Bedrock's SigV4); may be NULL. */
    rein_err (*sign)(const rein_provider *p, const char *url, const struct rein__body *body,
                     struct curl_slist **headers);
    /* Whether a user message of this wire carries an attachment of this MIME type inline (its
     * encoder writes it in the wire's own block; rein_provider_takes_media). NULL: none. */
    bool (*takes_media)(const char *mime);
    /* A backend that does its own sending (rules); NULL for HTTP wires. */
    rein_err (*send)(rein_provider *p, rein_model_request *req, rein_history *h,
                     rein_model_response **out, rein_error *err);
};

extern const struct rein__wire rein__wire_openai;
extern const struct rein__wire rein__wire_anthropic;
/* The Messages wire as Vertex AI takes it (anthropic.c, decision 0104): the model in the URL
 * (:rawPredict, :streamRawPredict), anthropic_version in the body, a bearer token. Named
 * "anthropic" (everything that asks for the wire by name treats it as Anthropic's) and not in
 * the wire table: a recording of it replays on rein__wire_anthropic. */
extern const struct rein__wire rein__wire_vertex_anthropic;
extern const struct rein__wire rein__wire_ollama;
extern const struct rein__wire rein__wire_gemini;
extern const struct rein__wire rein__wire_bedrock;
extern const struct rein__wire rein__wire_rules;
extern const struct rein__wire rein__wire_dashscope;
extern const struct rein__wire rein__wire_responses;

/* ---- the wire table (wires.c) ---- */
/* The wire named name (or its alias), or NULL. */
const struct rein__wire *rein__wire_find(const char *name);
/* The wire and kind (streamed or body) of a reply format, or NULL for an unknown format. */
const struct rein__wire *rein__wire_of_format(enum rein_wire_format fmt, bool *body);
/* The first wire of the table whose stream has this framing, for a reply that came framed
 * differently from what its wire expects (an SSE proxy in front of Ollama). */
const struct rein__wire *rein__wire_with_framing(enum rein__framing framing);

struct rein__replay;
struct rein__recorder;

struct rein_provider {
    struct rein_provider_config cfg; /* a deep copy */
    struct rein__tools_cache *tools; /* encoded lists of shared tools (tools_enc.c), or NULL */
    const struct rein__wire *wire;
    char *endpoint;
    struct rein_model_caps caps;
    void *share; /* CURLSH: names resolved, shared by every send */
    void *share_lock;
    void *pool; /* struct handle_pool (provider.c): idle curl handles for attempts */
    /* The proxy settings of the environment for the endpoint's scheme, read once (provider.c,
     * resolve_proxy): "" for none. NULL when the endpoint is not HTTP. */
    char *proxy, *noproxy;
    bool proxy_https; /* ... read for https:// (else http://) */
    char ua_line[96]; /* "User-Agent: ..." as every request sends it (cut at 95 bytes) */
    struct rein__recorder *rec;
    struct rein__replay *replay;
    struct rein__aws *aws; /* Bedrock's credentials when it signs with SigV4, or NULL */
    struct rein__gcp *gcp; /* Vertex's Application Default Credentials, or NULL */
};

struct rein__tool {
    char *name, *description;
    json_t *parameters;
    bool shared; /* added by rein_model_request_add_tool_shared: parameters never change */
};

struct rein_model_request {
    char *model;                /* NULL: the provider's */
    char *api_key;              /* NULL: the provider's */
    json_t *extra;              /* members added to the body, or NULL */
    struct curl_slist *headers; /* rein_model_request_add_header's lines, or NULL */
    const char *wire_tools;     /* the tools array's text for wire_tools_for's wire, or NULL */
    size_t wire_tools_len;
    char wire_tools_for[24]; /* rein_model_request_set_wire_tools */
    const char *more_tools;  /* rein_model_request_set_more_tools: the items' text, or NULL */
    size_t more_tools_len;
    char more_tools_for[24];
    int retries; /* -1: the provider's */
    struct rein__tool *tools;
    size_t ntools, tools_cap;
    char *tool_choice;
    int64_t max_tokens;
    double temperature; /* < 0: unset */
    double top_p;       /* < 0: unset */
    char **stop;        /* stop sequences (owned), nstop of them */
    size_t nstop;
    /* What the wire's tool encoder left out of the parameter schemas ({"tool", "keyword",
     * "at", "reason"} objects; the encoders append through the const request, as the array
     * is not part of the request's value), emptied before each encoding; NULL before the
     * first. */
    json_t *dropped;
    int parallel; /* -1 unset */
    enum rein_reasoning reasoning;
    int64_t reasoning_budget; /* thinking tokens; 0: from the effort */
    /* rein_model_request_set_output_format (output.c): the kind, the schema's name (NULL:
     * "output") and compact text (NULL unless REIN_OUTPUT_JSON_SCHEMA), owned */
    enum rein_output_kind output;
    char *output_name;
    char *output_schema;
    bool output_strict;
    bool stream;
    rein_cancel *cancel;
    rein_model_event_fn fn;
    void *ud;
    void (*wait_fn)(void *ud); /* rein_model_request_set_on_wait() */
    void *wait_ud;
    const rein_registry *reg; /* for the rules provider's routes */
    /* The encoded tool list, for the wire and variant it was made for (rein__tools_encode):
     * tools_len bytes at tools_json, which point into tools_enc or into shared, the
     * provider's encoding of the same shared tools (a reference). */
    struct rein_buf tools_enc;
    const char *tools_json;
    size_t tools_len;
    struct rein__tools_enc *shared;
    const struct rein__wire *tools_wire;
    unsigned tools_variant;
    bool tools_valid;
};

/* Config helpers shared by provider.c and config.c. */
rein_err rein__config_copy(struct rein_provider_config *dst,
                           const struct rein_provider_config *src);
void rein__config_release(struct rein_provider_config *cfg);
void rein__caps_resolve(const struct rein_provider_config *cfg, const char *model,
                        struct rein_model_caps *caps);

/*
 * A request body. Without a splice (mid NULL) buf is the whole body. With one, buf holds the
 * body's first `at` bytes and then the rest of it, and the mid_len bytes at mid go between
 * them: a large block of encoded messages is sent from where the history keeps it instead of
 * being copied into every request (issue 25). mid is borrowed from the history, which nobody
 * changes while its request is sent.
 */
struct rein__body {
    struct rein_buf buf;
    const char *mid;
    size_t at, mid_len;
    /* The history whose whole block is mid or, with mid NULL, was copied into buf at `at`
     * (`copied` bytes), or NULL: signing hashes only what changed in it (rein__sha_cache). */
    rein_history *hist;
    size_t copied;
};

/*
 * A SHA-256 running over a body's head and the history's block after it, kept in the
 * history so that signing a request hashes only what changed since the last one: the state
 * after the block's first `done` bytes, and marks every REIN__SHA_STEP bytes to go back to
 * when the block was cut shorter (a retried step, a trimmed history). The history lowers
 * `upto` to the length of the block's bytes that are still the ones hashed.
 */
#define REIN__SHA_STEP ((size_t)4 << 10)
struct rein__sha_cache {
    char head[64];
    size_t head_len; /* 0: nothing hashed yet */
    size_t upto, done;
    struct rein__sha256 state;
    struct rein__sha256 *marks; /* marks[k]: the head and the block's first k steps */
    size_t nmarks, cap;
};
/* h's cache (borrowed: it lives as long as h). */
struct rein__sha_cache *rein__history_sha_cache(rein_history *h);

/* Length of an SSE line end at p (LF or CRLF), or 0: a lone CR is left to the SSE reader,
 * which must see what follows it. For the readers that take whole events straight from a
 * stream's bytes (oachunk.c, sse.c; decision 0077). */
static inline size_t rein__sse_line_end(const char *p, size_t len)
{
    if (len >= 1 && p[0] == '\n')
        return 1;
    if (len >= 2 && p[0] == '\r' && p[1] == '\n')
        return 2;
    return 0;
}

/* After an event's payload that ends at p[at]: its line end and the blank line, as the SSE
 * reader would find them; the event's length from p, or 0 when they are not there whole. */
static inline size_t rein__sse_event_end(const char *p, size_t len, size_t at)
{
    size_t e = rein__sse_line_end(p + at, len - at), blank;

    if (!e)
        return 0;
    at += e;
    blank = rein__sse_line_end(p + at, len - at);
    return blank ? at + blank : 0;
}

/* Blocks smaller than this are copied into buf: libcurl sends a body under 64 KB given as
 * one piece with the request's headers in one write, and a spliced one never does. */
#define REIN__SPLICE_MIN ((size_t)64 << 10)

void rein__body_init(struct rein__body *b);
void rein__body_release(struct rein__body *b);
/* The body's length in bytes. */
size_t rein__body_len(const struct rein__body *b);
/* Writes block (len bytes of JSON items, borrowed: it must stay unchanged until the body is
 * released) as the next value of w, which writes into b->buf: copied when small, spliced in
 * otherwise. At most one block per body. */
void rein__body_block(struct rein__body *b, struct rein_jw *w, const char *block, size_t len);
/* Copies the body's bytes off..off+n-1 (within its length) to dst. */
void rein__body_copy(const struct rein__body *b, size_t off, char *dst, size_t n);
/* rein__hash64 continued over the body's bytes off..off+n-1 (within its length). */
uint64_t rein__body_hash(const struct rein__body *b, uint64_t h, size_t off, size_t n);
/* The SHA-256 of the whole body, in lower-case hex, taken over its pieces in turn. */
void rein__body_sha256_hex(const struct rein__body *b, char out[65]);
/* Makes buf the whole body (for a recording or a replay, which read it as one piece). */
rein_err rein__body_flatten(struct rein__body *b) REIN_WUR;

/* Room reserved in a request body for what is neither the messages nor the tools (model,
 * parameters, extra members): a guess, the buffer still grows when it is short. */
#define BODY_SLACK 1024

/* History internals used by the wires: the cached piece of message i for the wire and its
 * variant, made with the wire's encoder when missing (with those of the messages before it).
 * *out is borrowed until the next call on h. */
rein_err rein__history_piece(rein_history *h, size_t i, const rein_provider *p,
                             const struct rein__wire *w, const char **out, size_t *len) REIN_WUR;
/* The pieces of all of h's messages joined with commas ("" when h is empty): the items of a
 * messages array for wires that send one item per message. *out is borrowed until the next
 * call on h, and stays unchanged while h is (a body may send it in place). */
rein_err rein__history_joined(rein_history *h, const rein_provider *p, const struct rein__wire *w,
                              const char **out, size_t *len) REIN_WUR;
/* The first letter of message i's role (s, u, a or t), read without a lookup in the message:
 * wires that group messages by role walk the whole history for every request. */
char rein__history_role(const rein_history *h, size_t i);
/*
 * For a grouping wire (group_user set): the messages array's items, with the groups opened
 * and all but the last closed (append "]}" when open is set), and the system list's items,
 * each piece once (empty pieces are left out). Borrowed as rein__history_joined's.
 */
struct rein__groups {
    rein_history *h;
    const char *items, *system;
    size_t items_len, system_len;
    bool open;       /* the last group is still open */
    bool has_system; /* h holds a system message (its list may still be empty) */
};
rein_err rein__history_groups(rein_history *h, const rein_provider *p, const struct rein__wire *w,
                              struct rein__groups *g) REIN_WUR;
/* Writes the messages array of a grouping wire as w's next value: '[', the items (in place
 * when large, rein__body_block), the last group's close and ']'. */
rein_err rein__body_groups(struct rein__body *b, struct rein_jw *w, const struct rein__groups *g);
/* A grouping wire's body begun: *g from h (every piece made), body's buffer grown once for
 * what is copied into it, and w opened on it with the body's '{'. Errors are set in err. */
rein_err rein__body_groups_start(rein_provider *p, const rein_model_request *req, rein_history *h,
                                 const struct rein__wire *wire, struct rein__body *body,
                                 struct rein__groups *g, struct rein_jw *w, rein_error *err);
/* Writes g's system list as w's next value: '[', the pieces, ']'. */
void rein__jw_system_list(struct rein_jw *w, const struct rein__groups *g);
/* True when h holds a system message. */
bool rein__history_has_system(const rein_history *h);
/* How many times a message was encoded (tests check the cache). */
size_t rein__history_encode_count(const rein_history *h);
/* A hash of all of h's messages in order; each message is dumped and hashed once, when first
 * asked for, so asking after every append costs what was appended (and after a removal, a
 * few bytes hashed per message after the seam). */
uint64_t rein__history_chain(rein_history *h);

/* The encoder of the OpenAI tool list (openai.c), which Ollama's wire uses too. */
/* A provider's encoded lists of shared tools (tools_enc.c; safe to use from many threads). */
struct rein__tools_cache *rein__tools_cache_new(void);
void rein__tools_cache_free(struct rein__tools_cache *c);
/* Drops a reference to a shared encoded list (NULL: no-op). */
void rein__tools_enc_release(struct rein__tools_enc *e);
/* Points req->tools_json at req's tools encoded for wire w, variant v: a list whose tools are
 * all shared is taken from p's cache, encoded the first time only; any other into
 * req->tools_enc. req->dropped gets what the encoder left out either way. */
rein_err rein__tools_encode(rein_provider *p, rein_model_request *req, const struct rein__wire *w,
                            unsigned v);
rein_err rein__openai_encode_tools(const rein_provider *p, const rein_model_request *req,
                                   struct rein_buf *out);
/*
 * oachunk.c: one OpenAI chat completion chunk (len bytes at p, borrowed) read in one pass and
 * reported to d's assembler as rein__openai_payload's general path would. 1: done; 0:
 * declined, nothing done (the general path reads it); < 0: the assembler's error.
 */
int rein__openai_chunk_fast(struct rein_provider_decoder *d, const char *p, size_t len);
/* The same reader on a whole chat completion body (its choice's "message"), reported as
 * rein__openai_body's general path would (take_object with whole); same answers. The caller
 * still counts the body (rein__decoder_saw) and completes the reply. */
int rein__openai_body_fast(struct rein_provider_decoder *d, const char *p, size_t len);
/* Closes every call of the response (a finished choice has finished calls). */
rein_err rein__openai_close_calls(struct rein_provider_decoder *d);
void rein__openai_chunk_free(struct rein__oa_tmpl *t); /* NULL is fine */
/*
 * The SSE events at the start of the len bytes at p that are text-only chunks of the
 * template's shape (the reader of d between events, d's answer id and model known), each
 * counted and reported as the reader, rein__openai_payload() and its one-pass reader would:
 * a long stream is thousands of them, and each went through the line reader, the payload's
 * checks and the template's match. Returns the bytes read (0: none; the reader takes the
 * rest), *rc the assembler's error (then the bytes of the failed event are counted in).
 */
size_t rein__openai_text_events(struct rein_provider_decoder *d, const char *p, size_t len,
                                rein_err *rc);
/* The OpenAI chat completions decoders and tool_choice writer (openai.c), which DashScope's
 * native wire shares: its messages, tools and replies have the chat completions shapes. */
rein_err rein__openai_payload(struct rein_provider_decoder *d, const char *event, const char *p,
                              size_t len, rein_error *err);
rein_err rein__openai_body(struct rein_provider_decoder *d, const char *p, size_t len,
                           rein_error *err);
void rein__openai_tool_choice(struct rein_jw *w, const char *choice);
/* Adds one header line (copied). */
rein_err rein__header_add(struct curl_slist **list, const char *line);

/* Body helpers shared by the wires. */
/* The model a request asks for: its own, else the provider's. */
const char *rein__request_model(const rein_provider *p, const rein_model_request *req);
/* Writes the request's extra members (rein_model_request_set_extra) into an open object. */
void rein__jw_extra(struct rein_jw *w, const rein_model_request *req);
void rein__jw_tool_args_raw(struct rein_jw *w, const char *raw);
/* Writes the cached pieces (made by wire w) of h's messages from index `from` on into the
 * array open in jw, as one block; on failure err says what could not be encoded. */
rein_err rein__jw_history(struct rein_jw *jw, rein_history *h, size_t from, const rein_provider *p,
                          const struct rein__wire *w, rein_error *err) REIN_WUR;
/* Whether the caller wrote the tool list for wire w (rein_model_request_set_wire_tools). */
bool rein__wire_tools(const rein_model_request *req, const struct rein__wire *w);
/* The tools array: the caller's list for w as it is, else req's encoded tools. */
void rein__jw_tool_list(struct rein_jw *jw, const rein_model_request *req,
                        const struct rein__wire *w);
/* When the request offers tools: "tools" (rein__jw_tool_list), the tool choice in the wire's
 * words (choice writes the member) and parallel_tool_calls when set. */
void rein__jw_tools(struct rein_jw *jw, const rein_model_request *req, const struct rein__wire *w,
                    void (*choice)(struct rein_jw *jw, const char *choice));
/* enable_thinking as the settings ask (Qwen's switch; off for a call not streamed where the
 * preset's quirk says so). */
void rein__jw_thinking(struct rein_jw *jw, const rein_provider *p, const rein_model_request *req);
/*
 * The request's reasoning (rein_model_request_set_reasoning, else the configuration's), in the
 * words of each kind of wire (reasoning.c): the effort (REIN_REASONING_UNSET: nothing to send;
 * a budget's effort when only a budget was asked), and the thinking budget in tokens (0 for
 * none, -1 when nothing is to be sent). Both say UNSET / -1 when the request's extra already
 * holds the wire's own member of that name (member: "reasoning_effort", "reasoning",
 * "thinking"; Gemini's is looked for in the extra's generationConfig).
 */
enum rein_reasoning rein__reasoning_effort(const rein_provider *p, const rein_model_request *req,
                                           const char *member);
int64_t rein__reasoning_budget(const rein_provider *p, const rein_model_request *req,
                               const char *member);
/*
 * What a Claude model takes to think (decision 0099), read off its id (model may be NULL):
 * Claude 4.6 on takes adaptive thinking with an effort (output_config.effort), 4.7 on (and
 * Mythos and Fable) nothing else, refusing a budget and "disabled"; max is an effort word from
 * 4.6 on, xhigh from 4.7 on. An id without a version (a test model) takes budgets, as every
 * Claude before 4.6 does.
 */
struct rein__claude_form {
    bool adaptive, adaptive_only, xhigh, max;
};
void rein__claude_form(const char *model, struct rein__claude_form *f);
/* The one or two numbers after "claude-" in a model id (borrowed, may be NULL), as 10 * major +
 * minor: "claude-3-7-sonnet-20250219" 37, "claude-opus-4-20250514" 40, "claude-sonnet-4-6" 46,
 * "claude-fable-5-1@20261001" 51; 0 when it has none (a date is not a version). newest_family
 * says whether the id names Mythos or Fable, whose previews carry no number. */
int rein__claude_version(const char *model, bool *newest_family);
/* The output limit rein asks of Claude for a request that sets none (max_tokens is required on
 * Anthropic's wire): the model's own limit up to 32,000, the most Claude Code asks, so that an
 * answer is not cut where the caller asked for no cut, while a small account's output rate
 * limit, which Anthropic reckons from max_tokens, is not spent on room no answer uses; 4,096
 * for a model whose limit rein does not know. */
int64_t rein__claude_default_max_tokens(const rein_provider *p, const rein_model_request *req);
/* Claude's thinking as a request's body says it: thinking.type ("enabled", "disabled",
 * "adaptive"), its budget_tokens (enabled), output_config.effort (adaptive; NULL: none) and the
 * output limit to send, which Claude counts the thinking in (0: the wire's usual). */
struct rein__claude_think {
    const char *type;
    int64_t budget;
    const char *effort;
    int64_t max_tokens;
};
/*
 * Claude's thinking for the request, on Anthropic's API and on Bedrock: false when nothing is to
 * be sent (member, the wire's own name for it, is in the request's extra, or nothing was asked,
 * or "none" for a model that refuses "disabled" and does not think unless asked). A model
 * before 4.6 gets a budget (0: disabled) and an output limit of the budget and the usual
 * answer's room when the request set none; a budget that does not fit under the request's own
 * is cut to one less, not below Anthropic's least. Claude 4.6 on gets adaptive thinking and the
 * effort it takes nearest the ask (minimal is low, a level it lacks high), and the table's
 * budget for the word and the answer's room as its limit when the request set none; no effort
 * when the caller's extra holds an output_config of its own.
 */
bool rein__claude_thinking(const rein_provider *p, const rein_model_request *req,
                           const char *member, struct rein__claude_think *t);
/* "thinking": {type, budget_tokens?} and, with an effort, "output_config": {"effort"}: members
 * of the object jw is in. */
void rein__jw_claude_thinking(struct rein_jw *jw, const struct rein__claude_think *t);
/* The sampling settings a Claude model takes (decision 0101): every one before 4.1, one of
 * temperature and top_p up to 4.6, none from 4.7 on, none while it thinks. */
unsigned rein__claude_sampling(const char *model, bool thinks);
/* OpenAI's: none for a reasoning model (o-series, GPT-5 but gpt-5-chat, codex), except GPT-5.1
 * and later while they do not reason; every one for the others. */
unsigned rein__openai_sampling(const char *model, bool thinks);
/* OpenAI's model families by name (model may be NULL; name is it after an organisation's
 * "org/", borrowed): the o-series; GPT-5 by its minor version in gpt5 (0 for gpt-5 itself and
 * its -mini, -nano, -codex; N for gpt-5.N; -1 another name); reasons for a reasoning model
 * (the o-series, GPT-5 but gpt-5-chat, codex). */
struct rein__openai_model {
    const char *name;
    bool o_series, reasons;
    int gpt5;
};
void rein__openai_model(const char *model, struct rein__openai_model *m);
/* Whether req asks its model to think: its reasoning setting (a budget, or an effort other than
 * none), else the configured reasoning_effort. */
bool rein__request_thinks(const rein_provider *p, const rein_model_request *req);
/* OpenAI's word for e on model (may be NULL), the nearest level it has: Claude's max is xhigh,
 * OpenAI's highest; on OpenAI's own reasoning models xhigh is high before GPT-5.2 (but 5.1's
 * codex-max), none is minimal on GPT-5 and low on the o-series, minimal is low from GPT-5.1 on
 * and on the o-series. Another name gets the word as asked. Static. */
const char *rein__openai_effort(enum rein_reasoning e, const char *model);
/* The call (borrowed) a tool result at i answers, by id, from the last assistant message
 * before it (as far as an encode_in hook may look), or NULL. */
const json_t *rein__history_answered_call(const rein_history *h, size_t i, const char *id);
/*
 * The request's output format in each wire's words (output.c, decision 0100); each writes
 * nothing when the request asks for none, when the wire has no form for the kind (a JSON object
 * on Anthropic and Bedrock), or when the request's extra holds the wire's own member.
 * OpenAI chat: "response_format": {...}. Responses: "text": {"format": {...}}. Ollama:
 * "format": schema or "json". Bedrock: "outputConfig": {"textFormat": {...}}.
 */
void rein__jw_output_openai(struct rein_jw *jw, const rein_model_request *req);
void rein__jw_output_responses(struct rein_jw *jw, const rein_model_request *req);
void rein__jw_output_ollama(struct rein_jw *jw, const rein_model_request *req);
void rein__jw_output_bedrock(struct rein_jw *jw, const rein_model_request *req);
/* Anthropic's one "output_config": the thinking's effort (rein__claude_thinking's, NULL: none)
 * and the answer's "format", either or both, or nothing. */
void rein__jw_anthropic_output_config(struct rein_jw *jw, const char *effort,
                                      const rein_model_request *req);
/* Gemini writes its members inside generationConfig: whether there are any, and them
 * ("responseMimeType", "responseJsonSchema"). */
bool rein__output_gemini_has(const rein_model_request *req);
void rein__jw_output_gemini(struct rein_jw *jw, const rein_model_request *req);
void rein__output_release(rein_model_request *req);
/* "reasoning_effort": word (OpenAI chat's) when the request asks for reasoning. */
void rein__jw_reasoning_effort(struct rein_jw *jw, const rein_provider *p,
                               const rein_model_request *req);
/* The output limit under max_key and the temperature, when the request sets them. */
void rein__jw_limits(struct rein_jw *jw, const rein_model_request *req, const char *max_key);
/* top_p under key, when the request sets it. */
void rein__jw_top_p(struct rein_jw *jw, const rein_model_request *req, const char *key);
/* The stop sequences as an array under key, when the request has some. */
void rein__jw_stop(struct rein_jw *jw, const rein_model_request *req, const char *key);
/* True when the request sets anything a wire writes among its generation settings (output
 * limit, temperature, top_p, stop sequences): Ollama, Gemini and Bedrock open an object for
 * them. */
bool rein__request_has_settings(const rein_model_request *req);
const char *rein__json_str(const json_t *obj, const char *key); /* "" when absent */

/* Record and replay (record.c). */
struct rein__recorder *rein__recorder_open(const char *path, rein_error *err);
void rein__recorder_close(struct rein__recorder *rec);
/* Writes one exchange; secrets (the key) are replaced wherever they appear. */
rein_err rein__recorder_write(struct rein__recorder *rec, const rein_provider *p, const char *body,
                              size_t body_len, long status, const char *content_type,
                              const char *resp, size_t resp_len);
struct rein__replay *rein__replay_open(const char *path, rein_error *err);
/* The wire and model of the first recorded exchange (borrowed; *model is replaced with a
 * new copy when the recording names one and *model is NULL). */
rein_err rein__replay_peek(struct rein__replay *rp, const char **wire, char **model);
void rein__replay_close(struct rein__replay *rp);
/*
 * Takes the next recorded exchange, checks the request body against it (REIN_EINVAL with the
 * first difference named when it does not match) and hands out the recorded response.
 * Pointers are borrowed from rp.
 */
rein_err rein__replay_next(struct rein__replay *rp, const char *body, size_t body_len, long *status,
                           const char **content_type, const char **resp, size_t *resp_len,
                           const char **wire, rein_error *err) REIN_WUR;

/* An attachment as OpenAI's APIs take a file inline: "filename" (attachment-N.pdf, named by
 * its index) and "file_data", its data: URL (history.c). */
void rein__jw_file_data(struct rein_jw *w, const json_t *att);
/* key: the attachment's bytes as a data: URL (out of memory: w's error). */
void rein__jw_data_url(struct rein_jw *w, const char *key, const json_t *att);
/* Writes a tool or user message's attachments as items of the array open in w: block writes
 * one the wire takes (and returns true) or writes nothing (false; a NULL block takes none);
 * those are named as not sent (wire names the API) in a last {"type": note_type (left out when
 * NULL), "text": …} item. */
void rein__jw_attachments(struct rein_jw *w, const json_t *msg, const char *wire,
                          const char *note_type,
                          bool (*block)(struct rein_jw *w, const json_t *att));
/* Writes a tool or user message's content as one string: its text, then a note for each
 * attachment (for wires whose messages of that role carry text only). */
void rein__jw_tool_text(struct rein_jw *w, const json_t *msg, const char *wire);
/* The same with notes only for the attachments taken (may be NULL) says the wire does not
 * carry (Ollama's user message: its images go in a member of their own); an attachment taken
 * gets "(attachment N, MIME, taken_where)" when taken_where (static) says where it went. */
void rein__jw_text_notes(struct rein_jw *w, const json_t *msg, const char *wire,
                         bool (*taken)(const char *mime), const char *taken_where);

#endif /* REIN_PROVIDER_INT_H */
