/*
 * rein/history.h: a conversation's messages in the neutral shape (docs/decisions/0001), with
 * each message's wire encoding cached.
 *
 * A message is a JSON object:
 *   {"role": "system" | "user" | "assistant" | "tool", "content": "…",
 *    "tool_calls": [{"id", "name", "arguments": "<the exact string the model sent>",
 *                    "signature", "custom": true (a custom tool's call: arguments
 *                    {"input": "…"}; the Responses API gets it as a custom_tool_call)}],
 *    "reasoning", "reasoning_signature", "redacted_reasoning": ["…"], "refusal",
 *    "server_blocks": [ {…Anthropic server tool blocks, replayed verbatim…} ],
 *    "reasoning_details": [ {…OpenRouter's reasoning details, replayed verbatim…} ],
 *    "reasoning_items": [ {…the Responses API's items before the message: reasoning and
 *                          hosted tools' calls (web search, …), replayed verbatim…} ],
 *    "response_id": "resp_…" (the Responses API's id of the reply),
 *    "tool_call_id", "name", "is_error", "attachments",
 *    "openai_message": {…}, "anthropic_blocks": [ {…} ]}
 * (tool_calls, reasoning*, refusal, server_blocks, reasoning_details, reasoning_items and
 * response_id on assistant messages; tool_call_id, name and is_error on tool messages;
 * attachments on tool and user messages; absent members mean none.) attachments are media
 * given inline, [{"type": "image"|"audio"|"document", "mime_type", "data" (base64), "index":
 * N}], beside the text in content (a tool's media, or what a user pasted: decision 0097). Each
 * wire writes those it takes in its own blocks after the text, and names the others as not
 * sent in the text (rein_provider_takes_media says which it takes in a user message). openai_message and anthropic_blocks are the message as a client wrote
 * it on that wire (the whole chat completions message; the content blocks that stand for
 * this message): that wire's provider writes them as they are instead of encoding the
 * message, so what the neutral shape does not hold (images, documents, cache_control,
 * citations, a developer role) reaches the model; every other wire reads the neutral members.
 * rein's gateway sets them for an upstream of the client's own wire (decision 0085).
 *
 * A provider encodes each message once, the first time it is sent, and keeps the encoding
 * beside the message; a request body is assembled from the cached pieces, so the cost of a
 * turn grows with what is new, not with the length of the conversation. Tool arguments go
 * back to the provider as the raw string the model sent, byte for byte (an empty string,
 * a zero-argument call, goes as {}). How each wire format needs the messages arranged
 * (Anthropic: system prompt apart, consecutive tool results merged into one user message,
 * thinking blocks with their signatures before tool_use; OpenAI: tool messages with
 * tool_call_id) is the provider's business, not the caller's.
 *
 * Threading: one history, one thread at a time (sending encodes into it).
 */
#ifndef REIN_HISTORY_H
#define REIN_HISTORY_H

#include <rein/json.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_history rein_history;
typedef struct rein_model_response rein_model_response;

/* New empty history, NULL when memory is exhausted. */
REIN_EXTERN rein_history *rein_history_new(void);
/* NULL is a no-op. */
REIN_EXTERN void rein_history_free(rein_history *h);
REIN_EXTERN size_t rein_history_len(const rein_history *h);
/*
 * Appends a copy of msg (borrowed). REIN_EINVAL, with err naming the member, when msg is not
 * a message of the neutral shape (unknown role, a member of the wrong type, a tool message
 * without tool_call_id, a tool call without id or name, arguments that are not a string).
 */
REIN_EXTERN rein_err rein_history_append(rein_history *h, const json_t *msg,
                                         rein_error *err) REIN_WUR;
/*
 * Appends the message whose JSON text is json (len bytes, borrowed; one read from a store),
 * checked as append does: REIN_EPARSE (err says so) when it is not JSON. The history keeps
 * the parsed tree until rein_history_compact(h), and keeps json itself as the message's text
 * when it is in rein_json_dump's form (else it writes the tree out). When json is the text of
 * a shared message whose encoding the history keeps (an agent's system prompt, decision 0080),
 * that message is appended shared, as rein_history_append_shared would, and nothing is parsed.
 */
REIN_EXTERN rein_err rein_history_append_text(rein_history *h, const char *json, size_t len,
                                              rein_error *err) REIN_WUR;
/*
 * Appends msg itself, not a copy: a new reference is taken, and msg must not be modified by
 * anyone afterwards (the history keeps its encoding). For a message many histories share,
 * such as an agent's system prompt, which is then kept once. Checked as by append.
 */
REIN_EXTERN rein_err rein_history_append_shared(rein_history *h, json_t *msg,
                                                rein_error *err) REIN_WUR;
/* Conveniences for the common messages; text is copied. REIN_EINVAL when text is not UTF-8. */
REIN_EXTERN rein_err rein_history_add_system(rein_history *h, const char *text) REIN_WUR;
REIN_EXTERN rein_err rein_history_add_user(rein_history *h, const char *text) REIN_WUR;
/* The assistant message of a response (borrowed): text, calls with raw arguments,
 * reasoning and signature, redacted reasoning, refusal, server blocks. */
REIN_EXTERN rein_err rein_history_add_response(rein_history *h,
                                               const rein_model_response *r) REIN_WUR;
/* A tool result for call_id (name may be NULL); content is the text the model reads. */
REIN_EXTERN rein_err rein_history_add_tool_result(rein_history *h, const char *call_id,
                                                  const char *name, const char *content,
                                                  bool is_error) REIN_WUR;
/*
 * The same with attachments (taken, even on failure): media the tool returned, which content
 * names as "[attachment N: ...]": [{"type": "image"|"audio"|"document", "mime_type", "data"
 * (base64), "index": N, "uri"?}]. Each provider sends what its wire takes in a tool result as
 * its own blocks (Anthropic: images and PDFs) and says in the text which were not sent.
 */
REIN_EXTERN rein_err rein_history_add_tool_result_media(rein_history *h, const char *call_id,
                                                        const char *name, const char *content,
                                                        bool is_error,
                                                        json_t *attachments) REIN_WUR;
/* The i-th message, or NULL when out of range or memory is exhausted. Borrowed; it must not
 * be modified. Valid until the message leaves h or until rein_history_compact(h), which gives
 * back the trees of an idle conversation (its messages are kept as their JSON text and made
 * into trees again when asked for). */
REIN_EXTERN const json_t *rein_history_get(const rein_history *h, size_t i);
/*
 * The i-th message's JSON text, the bytes rein_json_dump() writes of rein_history_get(h, i),
 * with *len its length (it is NUL-terminated too); NULL when i is out of range, memory is
 * exhausted, or the message is shared (rein_history_append_shared: the history keeps its tree,
 * not its text). Borrowed, valid as rein_history_get's result is. Makes no tree: for a caller
 * that stores the message, which then need not write it out again.
 */
REIN_EXTERN const char *rein_history_text(const rein_history *h, size_t i, size_t *len);
/* The i-th message's role ("system", "user", "assistant" or "tool"; static), or NULL when out
 * of range. Makes no tree. */
REIN_EXTERN const char *rein_history_role(const rein_history *h, size_t i);
/* True when an assistant message of h carries a tool call with this id (services refuse a
 * history where two calls share one). Constant time on average: the history keeps its ids in
 * a set as messages are appended and truncated. */
REIN_EXTERN bool rein_history_has_call_id(const rein_history *h, const char *id);
/* Index of the first assistant message with a tool call that the tool messages right after
 * it do not answer, or whose name is outside ^[a-zA-Z0-9_-]{1,64}$ (histories services
 * refuse); rein_history_len(h) when there is none. Costs the last exchange's size: earlier
 * ones are judged once, as the history grows. */
REIN_EXTERN size_t rein_history_first_open(const rein_history *h);
/* Sums over all messages, for estimating a request's size: *text_bytes gets the bytes of
 * their content and reasoning and of each tool call's id, name and arguments, *calls the
 * number of tool calls. Constant time: kept as messages are appended and truncated. */
REIN_EXTERN void rein_history_size(const rein_history *h, int64_t *text_bytes, size_t *calls);
/*
 * Gives back memory kept only to make the next request cheaper where keeping it costs more
 * than making it again: the cached encodings of a short conversation (under 8 KB; longer
 * ones are kept, so a step's cost does not grow with the history) and spare room. A short
 * conversation whose encodings were made again after a compaction (it came back for another
 * turn) keeps them from then on, as a long one does. For a conversation going idle
 * (rein_agent_run calls it when a turn ends); the messages and the next request's bytes are
 * unchanged.
 */
REIN_EXTERN void rein_history_compact(rein_history *h);
/*
 * rein_history_compact(), and a short conversation's encodings given back even when it came
 * back before: for a conversation the caller expects to stay idle a long while (one a cache
 * evicts, say), where memory counts more than the next turn's encoding. The next turn makes
 * them again; the messages and the next request's bytes are unchanged.
 */
REIN_EXTERN void rein_history_freeze(rein_history *h);
/*
 * Replaces message i with msg (borrowed; checked as by append, and of the same role). The
 * other messages keep their cached encodings: msg alone is encoded, when next sent, and the
 * later ones' pieces are moved, so shortening an old tool result costs about one copy of the
 * encoded bytes after it. REIN_EINVAL when i is out of range or the role differs.
 */
REIN_EXTERN rein_err rein_history_replace(rein_history *h, size_t i, const json_t *msg,
                                          rein_error *err) REIN_WUR;
/* Keeps the first n messages (n >= len: no change). */
REIN_EXTERN void rein_history_truncate(rein_history *h, size_t n);
/*
 * Removes messages from..to-1 (to past the end: up to the end), keeping the others in order.
 * The messages after them keep their cached encodings (moved down, not made again), so
 * trimming a long conversation costs about one copy of its encoded bytes.
 */
REIN_EXTERN void rein_history_remove(rein_history *h, size_t from, size_t to);
/* All messages as a JSON array (new reference; NULL when memory is exhausted). */
REIN_EXTERN json_t *rein_history_to_json(const rein_history *h);
/* A history from a JSON array of messages (borrowed), each checked as by append. */
REIN_EXTERN rein_history *rein_history_from_json(const json_t *messages, rein_error *err);

#ifdef __cplusplus
}
#endif
#endif /* REIN_HISTORY_H */
