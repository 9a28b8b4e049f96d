/*
 * gateway_int.h: what the files of the gateway module share (include/rein/gateway.h).
 *
 *   gateway.c    the gateway object, one request from start to answer: options, the rounds
 *                with the upstream, re-asks, server-side tools, the answer
 *   check.c      the request's tools as a registry (cached), and each call through the one
 *                pipeline with check_only
 *   record.c     recording a request in its conversation (session), and the metrics
 *   openai.c     the OpenAI chat completions wire as a server: request parser, JSON answer,
 *                stream chunks, error bodies, the model list
 *   anthropic.c  the same for the Anthropic messages wire
 *   responses.c  the OpenAI Responses wire, read as the chat completions request it means
 *   gemini.c     Google's Gemini API (generateContent) with its own parser (decision 0092)
 *   media.c      a client's inline media as a user message's attachments (decision 0097)
 *   kept.c       the Responses answers kept for previous_response_id and item_reference
 *   reasoned.c   the reasoning a reply's calls need back, kept for a client of another wire
 *   background.c Responses requests run in the background, on the gateway's own workers
 *   routes.c     the HTTP adapter: the /v1 routes on a rein_server
 *
 * The parsers read bytes from the network: fuzz/gateway_request.c drives them.
 */
#ifndef REIN_GATEWAY_INT_H
#define REIN_GATEWAY_INT_H

#include <rein/buf.h>
#include <rein/doc.h>
#include <rein/gateway.h>
#include <rein/history.h>
#include <rein/json.h>
#include <rein/session.h>

#include <rein/pool.h>

#include <pthread.h>
#include <string.h>

#define REIN__GW_WHERE "gateway"

/* ---- a client request in neutral form ------------------------------------------------- */

/* One tool the client declared; strings and the schema are borrowed from the request's doc. */
struct rein__gw_tool {
    const char *name;
    const char *description; /* may be NULL */
    json_t *parameters;      /* an object schema, or NULL: no parameters */
    /* A custom (free-form) tool, declared to everyone as a function of one string, input
     * (decision 0089): its calls go back to the client in the custom shape. */
    bool custom;
    /* ... and as the Responses API declares it ({"type": "custom", name, description,
     * format}, in r->made), which a Responses upstream gets instead (decision 0096). */
    const json_t *native;
};

/*
 * A parsed request. Invariants: doc owns every borrowed string and schema; h holds the
 * conversation as neutral messages (decision 0001); passthrough holds the members the gateway
 * does not read itself, verbatim, for an upstream that speaks the client's wire; common holds
 * the sampling members other wires have too, in the client's naming.
 */
struct rein__gw_req {
    enum rein_gateway_api api;
    /* The body's tree; or, when the OpenAI parser read the body as a rein_doc (its common
     * shape, decision 0060), just the tools member's tree, or NULL without tools. */
    json_t *doc;
    char *model_own; /* the model's name when the body was read as a rein_doc (owned) */
    rein_history *h;
    struct rein__gw_tool *tools;
    size_t ntools;
    json_t *tools_json;    /* the tools member as sent (borrowed from doc), or NULL */
    const char *tools_raw; /* ... its bytes in the body (borrowed), or NULL: not found */
    size_t tools_raw_len;
    /* Set before parsing: tools_raw are the bytes of a tools cache entry, which checked them
     * and keeps what the request needs of them (struct rein__gw_tools); the parser leaves them
     * out (tools, ntools and tools_json stay empty). */
    bool tools_known;
    /* Set before parsing: the upstream speaks the client's wire, so each message and the tool
     * list go up as the client wrote them (history.h's openai_message and anthropic_blocks,
     * rein_model_request_set_wire_tools; decision 0085), and what only that wire has (images,
     * documents, cache_control, Anthropic's server tools) is taken instead of refused. */
    bool verbatim;
    /* Set before parsing: the body is a token count's, which has no max_tokens (the count
     * endpoints refuse one), so the parsers ask for none. */
    bool count;
    /* Set before parsing (may stay NULL: every medium is taken): the upstream's provider, which
     * says which media a user message may carry to it (decision 0097). Borrowed. */
    const rein_provider *upstream;
    /* Set before parsing: the body is a Responses request as the chat body it means
     * (responses.c), whose tool messages may hold content parts of media (a
     * function_call_output's input_image and input_file), which a chat client's cannot: they
     * become the tool message's attachments, for an upstream of any wire (decision 0098). */
    bool tool_media;
    const char *model;  /* may be NULL */
    char *tool_choice;  /* "auto", "none", "required", a tool name, or NULL */
    int parallel;       /* -1 unset, 0 or 1 */
    int64_t max_tokens; /* 0: unset */
    double temperature; /* < 0: unset */
    double top_p;       /* < 0: unset */
    json_t *stop;       /* array of stop strings (new), or NULL */
    bool stream;
    bool include_usage;  /* OpenAI stream_options.include_usage */
    json_t *passthrough; /* object (new) */
    /* Values the parser made that tools[] point into (Gemini's schemas as JSON Schema): an
     * array (new), or NULL. The doc stays as the client wrote it. */
    json_t *made;
    json_t *dropped;     /* names the other wires may drop harmlessly (new array) */
    json_t *unsupported; /* names only the client's own wire can carry (new array) */
};

/* Why a request is refused (400): where in the body, and what is wrong. */
struct rein__gw_bad {
    char param[128]; /* "messages[2].content" (OpenAI) or "messages.2.content" (Anthropic) */
    char msg[400];
};

void rein__gw_req_init(struct rein__gw_req *r, enum rein_gateway_api api);
void rein__gw_req_release(struct rein__gw_req *r);
/* Records a refusal in bad and returns REIN_EINVAL. */
rein_err rein__gw_bad(struct rein__gw_bad *bad, const char *param, const char *fmt, ...)
    REIN_PRINTF(3, 4);

/* The request parsers (the fuzz target calls these): REIN_EINVAL with bad filled for a body
 * the wire would refuse, REIN_ENOMEM. */
rein_err rein__gw_openai_parse(struct rein__gw_req *r, const char *body, size_t len,
                               struct rein__gw_bad *bad);
rein_err rein__gw_anthropic_parse(struct rein__gw_req *r, const char *body, size_t len,
                                  struct rein__gw_bad *bad);
/* Gemini's: r->model and r->stream come from the URL and are set before (the body's model,
 * when it has one, only when r->model is NULL). */
rein_err rein__gw_gemini_parse(struct rein__gw_req *r, const char *body, size_t len,
                               struct rein__gw_bad *bad);
/* The OpenAI parser's general path alone: the whole body as a jansson tree. The parser above
 * reads the common shape of a body without one and hands everything else, refusals included,
 * to this path; the fuzz target compares the two. */
rein_err rein__gw_openai_parse_tree(struct rein__gw_req *r, const char *body, size_t len,
                                    struct rein__gw_bad *bad);
/*
 * The document paths' pieces (decisions 0060, 0067). DECLINED: the body is not of the common
 * shape (or is refused): the general path reads it. rein__gw_collect adds the value at v under
 * key k to *obj (made on first use). rein__gw_listed: whether list holds the name of n bytes at
 * key (which need not end with a NUL).
 */
#define REIN__GW_DECLINED 1
static inline bool rein__gw_node_is(const struct rein_doc_node *k, const char *name, size_t n)
{
    return k->n == n && memcmp(k->u.str, name, n) == 0;
}
#define REIN__GW_NODE_IS(k, lit) rein__gw_node_is((k), (lit), sizeof(lit) - 1)
static inline bool rein__gw_node_has_nul(const struct rein_doc_node *k)
{
    return memchr(k->u.str, '\0', k->n) != NULL;
}
rein_err rein__gw_collect(json_t **obj, const struct rein_doc_node *k,
                          const struct rein_doc_node *v);
/* Member camel_name of o, or its snake_case spelling, as Google's endpoints take both
 * (gemini.c). Borrowed. */
json_t *rein__gw_gm_member(const json_t *o, const char *camel_name);
bool rein__gw_listed(const char *const *list, const char *key, size_t n);
/* Takes name out of the array of names list; false when it was not there. */
bool rein__gw_unlist(json_t *list, const char *name);
/* A member rein does not read (key, value v borrowed): as written in r->passthrough, for an
 * upstream of the client's wire, and named (name) among the members another wire may drop
 * (droppable) or cannot carry. */
rein_err rein__gw_rest(struct rein__gw_req *r, const char *key, json_t *v, const char *name,
                       bool droppable);
/*
 * Walks the members of the document object root: the value of a member named keys[i] (keys
 * ends with NULL) goes to found[i] (borrowed from root's document), any other member to *opts
 * when handled lists its name, else to *rest (rein__gw_collect). DECLINED for a name holding a
 * NUL.
 */
int rein__gw_members(const struct rein_doc_node *root, const char *const *keys,
                     const struct rein_doc_node **found, const char *const *handled, json_t **opts,
                     json_t **rest);
/* The same for the Anthropic parser (decision 0067). */
rein_err rein__gw_anthropic_parse_tree(struct rein__gw_req *r, const char *body, size_t len,
                                       struct rein__gw_bad *bad);
/*
 * Finds the member name of the object that n bytes of s (a JSON text the parser accepted)
 * hold, and sets *out (pointing into s) and *out_len to its value's bytes as written. False
 * when the text is not an object, the name is not there as written (spelt with escapes), or
 * is there twice.
 */
bool rein__gw_raw_member(const char *s, size_t n, const char *name, const char **out,
                         size_t *out_len);
/*
 * Appends msg (taken; NULL: out of memory) to r's history. A message made only of values of
 * its own (own) is kept as it is, with no copy; one holding values of the request's tree is
 * copied (the history must not share them). REIN_EINVAL with bad naming param for a message
 * the history refuses.
 */
rein_err rein__gw_append(struct rein__gw_req *r, bool own, json_t *msg, const char *param,
                         struct rein__gw_bad *bad);
/* {"role": role, "content": text} of new values; NULL when memory is exhausted. */
json_t *rein__gw_text_msg(const char *role, const char *text, size_t len);
/* True when n bytes of args parse as an object: checked, not built (a tree of the arguments
 * costs more than the rest of a call's block). */
bool rein__gw_args_object(const char *args, size_t n);
/* Text of a content value (a string, or an array of text parts/blocks joined by "\n") into
 * *out (new); REIN_EINVAL (bad names param) for parts that are not text, unless others: then
 * they are left out (the caller keeps them as they were sent). */
rein_err rein__gw_content_text(const json_t *content, const char *param, bool anthropic,
                               bool others, char **out, struct rein__gw_bad *bad);

/* ---- a client's inline media (media.c, decision 0097) ---- */
/*
 * Appends to *atts (made when NULL; new, the caller's) the attachment of the medium of type mime
 * (mime_len bytes) with base64 data (data_len bytes), both borrowed, a user message's part at
 * param. REIN_EINVAL (bad names param, in r->api's wording) when mime is not a media type, data
 * is not base64, or r->upstream does not take that type in a user message; REIN_ENOMEM.
 */
rein_err rein__gw_media(const struct rein__gw_req *r, json_t **atts, const char *mime,
                        size_t mime_len, const char *data, size_t data_len, const char *param,
                        struct rein__gw_bad *bad);
/* The same for url (borrowed): a data: URL (data:MIME;base64,DATA) is read; any other URL is
 * refused as rein__gw_media_ref() says. */
rein_err rein__gw_media_url(const struct rein__gw_req *r, json_t **atts, const char *url,
                            const char *param, struct rein__gw_bad *bad);
/* REIN_EINVAL: the part at param gives its medium by what ("a URL", "a file_id"), which another
 * wire's upstream cannot read; it says to send it inline. */
rein_err rein__gw_media_ref(const struct rein__gw_req *r, const char *param, const char *what,
                            struct rein__gw_bad *bad);
/* {"role": "user", "content": text, "attachments": atts (borrowed, a reference taken; NULL:
 * none)} of new values; NULL when memory is exhausted. */
json_t *rein__gw_user_msg(const char *text, size_t len, json_t *atts);

/*
 * A token count's body (count.c) as the body the parser of api's generate route reads, into
 * out: Anthropic's and the Responses API's as they came, Gemini's {"contents"} as it is and its
 * {"generateContentRequest"} as the request inside. REIN_EINVAL with bad filled for a body that
 * is not a JSON object, a Gemini body of other members or of both or neither, and for the chat
 * completions API (it has no count); REIN_ENOMEM.
 */
rein_err rein__gw_count_body(enum rein_gateway_api api, const char *body, size_t len,
                             struct rein_buf *out, struct rein__gw_bad *bad);
/* A count of tokens in api's answer shape, appended to out. */
rein_err rein__gw_count_answer(enum rein_gateway_api api, int64_t tokens, struct rein_buf *out);

/* ---- what the client gets -------------------------------------------------------------- */

/* A call handed to the client. Strings are owned. */
struct rein__gw_call {
    char *id;        /* unique within the answer and the request's history */
    char *name;      /* the declared tool (repaired when it had to be) */
    char *args;      /* the argument text as handed out ("{}" for an empty one) */
    char *sent_name; /* the name the model sent, when it was repaired; else NULL */
    char *input;     /* a custom tool's free-form input (the call goes out in the custom
                      * shape, decision 0089); else NULL */
    char *signature; /* the opaque signature the call came with (Gemini's thoughtSignature),
                      * or NULL */
    bool from_text;  /* the model wrote the call as text */
    bool invalid;    /* passed on under the pass policy although it is invalid */
};

/* An error answer: status and the wire's words for it. */
struct rein__gw_err {
    int status;
    const char *type;  /* the wire's error type; NULL: from the status */
    const char *code;  /* OpenAI's code member; may be NULL */
    const char *param; /* OpenAI's param member; may be NULL */
    char message[600];
    const json_t *upstream; /* the upstream's error object (borrowed), or NULL */
    bool upstream_same;     /* ... from an upstream of the client's wire: sent as it is */
    const char *request_id; /* the upstream's id for the request (borrowed), or NULL */
};

struct rein__gw_ctx;

/* ---- the responses the gateway keeps (kept.c, decision 0090) --------------------------------- */

/*
 * Invariants: on when max_bytes > 0 and the maps exist; bytes is the sum of the entries'
 * "bytes" and at most max_bytes; every value of items is an item of an entry of responses of
 * the same owner. mu guards everything but the four limits.
 */
struct rein__gw_kept {
    pthread_mutex_t mu;
    json_t *responses; /* "owner:resp_id" -> {prev, input, output, at, bytes}, oldest use first */
    json_t *items;     /* "owner:item_id" -> the item */
    json_t *owners;    /* "owner" -> the bytes of its responses (none: 0) */
    size_t bytes;
    int64_t max_bytes; /* <= 0: nothing is kept */
    int64_t keep_ms;   /* an entry not used for longer is forgotten */
    bool on;
};

#define REIN__GW_OWNER_LEN 32 /* hex digits of the hash that names a client */

rein_err rein__gw_kept_init(struct rein__gw_kept *k, int64_t max_bytes, int64_t keep_ms);
void rein__gw_kept_release(struct rein__gw_kept *k);
/* The name of the client that presented key (NULL: none) in the kept responses. */
void rein__gw_kept_owner(const char *key, char out[REIN__GW_OWNER_LEN + 1]);
/*
 * Keeps response id (of owner; prev: the response it continued, or NULL) with copies of input
 * (an array of items) and response (the response object as answered, whose "output" holds the
 * output items), both borrowed. A response larger than everything kept may be is not kept. A
 * no-op when k keeps nothing.
 */
rein_err rein__gw_kept_put(struct rein__gw_kept *k, const char *owner, const char *id,
                           const char *prev, const json_t *input, const json_t *response);
/*
 * Owner's kept response id, used now: copies of its response object into *response and of its
 * own input items into *input (new references; input may be NULL: not wanted). REIN_ENOTFOUND
 * when it is not kept (never was, forgotten, another owner's), REIN_ENOMEM.
 */
rein_err rein__gw_kept_get(struct rein__gw_kept *k, const char *owner, const char *id,
                           json_t **response, json_t **input);
/* Forgets owner's kept response id and its items; REIN_ENOTFOUND when it is not kept. */
rein_err rein__gw_kept_delete(struct rein__gw_kept *k, const char *owner, const char *id);
/*
 * Makes a Responses body (changed in place) say what it refers to: a string input becomes a
 * user message item; each item_reference in input becomes a copy of the item of owner's kept
 * responses it names; a previous_response_id puts the conversation it continues (each kept
 * response's input and output, oldest first) before input. *own (new, or NULL when input is no
 * array) is the request's own input, references resolved, as its response is kept with. k NULL
 * or keeping nothing: references stay (the converter refuses them) and a
 * previous_response_id is refused. REIN_EINVAL with bad filled for a response or item not kept.
 */
rein_err rein__gw_kept_resolve(struct rein__gw_kept *k, const char *owner, json_t *body,
                               json_t **own, struct rein__gw_bad *bad);

/* How much k keeps now: its bytes and its responses (under the lock). */
void rein__gw_kept_stats(struct rein__gw_kept *k, size_t *bytes, size_t *responses);

/* ---- the reasoning kept for a client of another wire (reasoned.c, decision 0102) ---------- */

/*
 * After an answer whose calls (c->out) a client of another wire than the upstream's got: the
 * final reply's signed reasoning (Claude's thinking blocks, redacted ones, Bedrock's reasoning
 * with its signature, Gemini's thought signatures) kept in g->reasoned under the client and
 * the first call's id. A no-op when there is none, or nothing is kept.
 */
void rein__gw_reasoned_keep(struct rein__gw_ctx *c);
/*
 * Before the first upstream call, for a client of another wire: each assistant message of the
 * history with calls and no reasoning of its own gets the reasoning kept for those calls; then a
 * Claude request with thinking whose final turn of calls still has none is asked without
 * thinking (the client's reasoning member named in r->dropped), and a Gemini 3 request's
 * current turn gets Google's stand-in signature on each first call that has none. REIN_ENOMEM.
 */
rein_err rein__gw_reasoned_restore(struct rein__gw_ctx *c);

/*
 * For a chat completions client and an upstream of the Responses wire (OpenAI's two APIs, one
 * family): what r's body holds that the Responses API has too, in its shape (reasoning_effort
 * as reasoning.effort, verbosity as text.verbosity, response_format as text.format, and
 * metadata, user, service_tier, prompt_cache_key and safety_identifier as they are) into *out
 * (new object for rein_model_request_set_extra, NULL: none); those members leave r's dropped
 * and unsupported lists. Reads r's passthrough, so it may run again for every round. REIN_EINVAL
 * with bad filled for a response_format the API would refuse.
 */
rein_err rein__gw_rs_chat_members(struct rein__gw_req *r, json_t **out, struct rein__gw_bad *bad);
/* rein_gateway_kept_response for owner (responses.c). */
rein_err rein__gw_rs_kept_answer(struct rein__gw_kept *k, const char *owner,
                                 const struct rein_gateway_call *call, enum rein_gateway_kept_op op,
                                 const char *id, const char *(*query)(void *, const char *),
                                 int *status, struct rein_buf *out);

/* What a client's body may refer to by id: k (NULL: nothing kept) and the client's name. */
struct rein__gw_refs {
    struct rein__gw_kept *kept;
    const char *owner;
    bool background; /* the request runs in the background: its background true is taken */
};

/* The wire a client speaks, as a server. */
struct rein__gw_wire {
    /* "openai" | "anthropic" | "openai-responses" | "gemini": also the provider wire that is
     * the same */
    const char *name;
    const char *id_prefix; /* of made-up call ids */
    /*
     * A wire whose body means another wire's (the Responses API's means a chat completions
     * body), or NULL: the text of that body into out, which parse() then reads, and what the
     * client's body holds beyond it into *extra (new): {"passthrough", "dropped",
     * "unsupported"} as struct rein__gw_req has them, and what the answer is kept with
     * ("store", "previous_response_id", "own_input"). upstream: the upstream's wire, which
     * decides what the body can carry; refs: what ids in it may refer to. REIN_EINVAL with bad filled. parse_as names the other
     * wire: an upstream of it gets that body as written (decision 0085).
     */
    rein_err (*convert)(const char *upstream, const struct rein__gw_refs *refs, const char *body,
                        size_t len, struct rein_buf *out, json_t **extra, struct rein__gw_bad *bad);
    const char *parse_as;
    rein_err (*parse)(struct rein__gw_req *r, const char *body, size_t len,
                      struct rein__gw_bad *bad);
    /* The whole JSON answer. */
    rein_err (*reply)(const struct rein__gw_ctx *c, struct rein_buf *out);
    /* An error body; rein_ext (borrowed, may be NULL) joins it as "rein". */
    rein_err (*error)(const struct rein__gw_err *e, const json_t *rein_ext, struct rein_buf *out);
    /* Streaming: text of one kind, a whole checked call, the end, an error after the start. */
    rein_err (*s_text)(struct rein__gw_ctx *c, enum rein_model_event_type kind, const char *p,
                       size_t n);
    /* What the upstream's reply holds besides text and calls, as its event's JSON text: a
     * thinking block's signature, a redacted thinking block or a server tool's block
     * (REIN_MEV_REASONING_SIGNATURE, _REDACTED_REASONING, _SERVER_BLOCK), OpenAI's logprobs
     * and annotations (REIN_MEV_LOGPROBS, _ANNOTATIONS). A wire skips the kinds it has no
     * place for. */
    rein_err (*s_block)(struct rein__gw_ctx *c, enum rein_model_event_type kind, const char *p,
                        size_t n);
    rein_err (*s_call)(struct rein__gw_ctx *c, const struct rein__gw_call *call, size_t index);
    rein_err (*s_end)(struct rein__gw_ctx *c);
    rein_err (*s_error)(struct rein__gw_ctx *c, const struct rein__gw_err *e);
    rein_err (*models)(const rein_gateway *g, struct rein_buf *out);
};

extern const struct rein__gw_wire rein__gw_openai;
extern const struct rein__gw_wire rein__gw_anthropic;
extern const struct rein__gw_wire rein__gw_responses;
extern const struct rein__gw_wire rein__gw_gemini;
/* Gemini: a tool the toolConfig holds the model to must be one of the request's tools (or a
 * server-side one); REIN_EINVAL with bad filled. */
rein_err rein__gw_gm_check_choice(const struct rein__gw_ctx *c, struct rein__gw_bad *bad);
/* One model in Gemini's shape ({"name": "models/…", …}), appended to out: name (NULL: the
 * upstream's model). */
rein_err rein__gw_gm_model(const rein_gateway *g, const char *name, struct rein_buf *out);
/*
 * For an upstream of the Responses wire, the tools it takes in its own words after the
 * request's function tools (rein_model_request_set_more_tools): a Responses client's hosted
 * tools (web search, …), which the conversion left in c->conv_extra, and every client's custom
 * tools as custom tools (decision 0096). A no-op when there are none; the text is kept in
 * c->up_tools.
 */
rein_err rein__gw_rs_native_tools(struct rein__gw_ctx *c);

/* ---- the request's tools ----------------------------------------------------------------- */

/* A client tool as the upstream is offered it: owned copies, never changed once made. */
struct rein__gw_decl {
    char *name;
    char *description;  /* may be NULL */
    json_t *parameters; /* the schema as the client sent it, or NULL */
    bool custom;        /* as struct rein__gw_tool's */
    json_t *native;     /* as struct rein__gw_tool's (a copy), or NULL */
};

/*
 * The tools one request offers, as a registry the pipeline checks calls against: the client's
 * declared tools and the server-side tools it asked for (a runner kind that never runs: the
 * calls are checked with check_only). Shared between requests with the same tools through the
 * gateway's cache; immutable once made. The client's tools are also kept as declared, for the
 * upstream request: their parameters are the same objects on every request, so the provider
 * encodes the list once (rein_model_request_add_tool_shared, decision 0052).
 */
struct rein__gw_tools {
    char *key; /* what the cache compares */
    rein_registry *reg;
    struct rein__gw_decl *client; /* the client's tools, in the request's order */
    size_t nclient;
    const rein_tool **server; /* the server-side tools of the gateway's registry */
    size_t nserver;
    /* For an upstream of the client's wire (verbatim): the text of the client's tools as sent,
     * then the server-side ones in that wire's shape; NULL otherwise. */
    char *wire_tools;
    size_t wire_tools_len;
    int refs; /* guarded by the cache's lock */
};

/* A small cache of tool registries (most recently used first). */
#define REIN__GW_CACHE 32
struct rein__gw_cache {
    pthread_mutex_t mu;
    struct rein__gw_tools *slot[REIN__GW_CACHE];
    size_t n;
};

void rein__gw_cache_init(struct rein__gw_cache *cache);
void rein__gw_cache_release(struct rein__gw_cache *cache);
/*
 * The tools of request r plus the server-side tools server (NULL-terminated ids of the
 * gateway's registry, already checked), from the cache or made now. REIN_EINVAL with bad set
 * for a tool the pipeline cannot take (its name, its schema).
 */
rein_err rein__gw_tools_get(rein_gateway *g, const struct rein__gw_req *r,
                            const rein_tool *const *server, size_t nserver,
                            struct rein__gw_tools **out, struct rein__gw_bad *bad);
void rein__gw_tools_put(rein_gateway *g, struct rein__gw_tools *t);
/*
 * Before parsing: when the tools of the body (len bytes) can be found as written and a cache
 * entry holds them (with the server-side tools server), sets r->tools_raw and r->tools_known
 * and *out to the entry (a reference); else leaves r and *out (NULL) as they were. The parser
 * then leaves those bytes out: an agent's SDK sends the same tools with every request.
 */
void rein__gw_tools_find(rein_gateway *g, struct rein__gw_req *r, const char *body, size_t len,
                         const rein_tool *const *server, size_t nserver,
                         struct rein__gw_tools **out);
/*
 * The request's body parsed as the wire's parser reads it (duplicate names refused): body
 * itself, or, when r->tools_known, a copy in which the tools' bytes are an array over the same
 * lines and columns, so every other member parses, fails and is reported at the same place as
 * in body. New reference, or NULL with err set (REIN_ENOMEM when memory is exhausted).
 */
json_t *rein__gw_parse_doc(const struct rein__gw_req *r, const char *body, size_t len,
                           rein_error *err);
/*
 * The text a parser's document path reads (decision 0060): the body, or, when its tools are
 * known, the body with them cut to "[]" (they are most of a small body's bytes, and the
 * document is read only to the first refusal: positions do not matter there). *len is the
 * text's length in and out. In stack (size bytes) when it fits, else in *heap (new, the
 * caller frees it); NULL when memory is exhausted.
 */
const char *rein__gw_doc_text(const struct rein__gw_req *r, const char *body, size_t *len,
                              char *stack, size_t size, char **heap);
/* r (and bad) as they were before a document path began, the known tools kept: the general
 * path reads the body again from the start. */
void rein__gw_req_restart(struct rein__gw_req *r, struct rein__gw_bad *bad);
/* True when name is one of t's server-side tools. */
bool rein__gw_tools_is_server(const struct rein__gw_tools *t, const char *name);
/* True when name is one of the client's custom (free-form) tools in t (t may be NULL). */
bool rein__gw_tools_is_custom(const struct rein__gw_tools *t, const char *name);
/*
 * A custom tool as the function the pipeline checks and every upstream is offered (decision
 * 0089): {"type": "object", "properties": {"input": {"type": "string", ...}}, "required":
 * ["input"], "additionalProperties": false}. format is the tool's format as the chat wire
 * writes it ({"type": "text"}, {"type": "grammar", "grammar": {"syntax", "definition"}}), or
 * NULL: free text. A regular expression becomes the input's anchored pattern when rein's
 * patterns can read it; a Lark grammar (and a pattern they cannot) is told to the model in
 * the input's description, and not checked. New reference; NULL with bad filled (param names
 * the format) for a format the API would refuse, or when memory is exhausted (bad empty).
 */
json_t *rein__gw_custom_schema(const json_t *format, const char *param, struct rein__gw_bad *bad);
/* The input of a custom tool's call from its argument text: the string member input, or the
 * text itself when it holds none (a call handed out under the pass policy). New string. */
char *rein__gw_custom_input(const char *args);

/* ---- the gateway ------------------------------------------------------------------------- */

struct rein__gw_metrics {
    rein_metric *invalid, *repairs, *text_calls, *reasks, *upstream;
    rein_metric *invalid_answers; /* answers that did not follow the asked form (decision 0100) */
    rein_metric *kept_bytes, *kept_responses; /* gauges of the kept responses (kept.c) */
    rein_metric *background;                  /* background responses running */
};

struct rein_gateway {
    rein_provider *provider;
    const rein_registry *reg;
    rein_store *store;
    rein_metrics *metrics;
    enum rein_gateway_policy on_invalid;
    int max_reasks;
    int max_tool_rounds;
    const rein_tool **tools; /* the configured server-side tools */
    size_t ntools;
    char **keys; /* the server's API keys, never forwarded */
    size_t nkeys;
    bool forward_key, model_from_client, fill_defaults, record_all;
    int64_t lease_ms;
    struct rein__gw_cache cache;
    struct rein__gw_kept kept;
    /* the reasoning kept for clients of another wire (reasoned.c): the same bounds as kept */
    struct rein__gw_kept reasoned;
    struct rein__gw_metrics m;
    /* Responses run in the background (background.c): at most bg_max at once, on bg_pool;
     * bg_mu guards the list and the count. */
    pthread_mutex_t bg_mu;
    struct rein__gw_job *jobs;
    int bg_n, bg_max;
    rein_pool *bg_pool;
    bool bg_on;
    /* The events of the streamed ones (background.c), oldest first, log_bytes of them at most
     * kept.max_bytes; following: the streams that read them; bg_cv: one ended (for
     * rein_gateway_free, which sets bg_closing). All under bg_mu. */
    struct rein__gw_log *logs;
    size_t log_bytes;
    int following;
    pthread_cond_t bg_cv;
    bool bg_closing;
};

/* ---- one request --------------------------------------------------------------------------- */

/* The options of one request (headers over configuration). */
struct rein__gw_opts {
    enum rein_gateway_policy policy;
    int max_reasks;
    const rein_tool *server[64];
    size_t nserver;
    char conversation[REIN_ID_MAX + 8]; /* "" : not recorded */
    bool fill_defaults;
    const char *client_key; /* borrowed from the headers; NULL: the configured key */
};

/* What a round of the conversation with the upstream did with one call. */
enum rein__gw_verdict {
    REIN__GW_VALID = 0, /* a client tool, checked: handed out */
    REIN__GW_INVALID,   /* a client tool (or an unknown one), refused */
    REIN__GW_SERVER,    /* a server-side tool: rein runs it */
};

struct rein__gw_round_call {
    enum rein__gw_verdict verdict;
    rein_call_result *res; /* the pipeline's check (owned) */
    char *id;              /* as handed out (unique); owned */
    char *name;            /* the name in the history: the tool, or the name as sent */
    char *args;            /* raw text as sent ("{}" for empty); owned */
    bool from_text;
    bool emitted;
};

/*
 * A client's structured-output ask (output.c, decision 0100), read from its wire's words.
 * kind REIN_OUTPUT_TEXT: none (member is set when the client named text, the default).
 */
struct rein__gw_output {
    enum rein_output_kind kind;
    const char *member;           /* the client's name for it (static), or NULL */
    char name[72];                /* the schema's name, when the client gave one */
    char schema_at[72];           /* the client's name for the schema itself */
    json_t *schema;               /* the JSON Schema (owned) of a json_schema */
    bool strict;                  /* OpenAI's strict */
    struct rein_schema *compiled; /* schema compiled for the answer's check (owned) */
};
/* The ask in wire's words from the request's members (pt, borrowed) into o (released first):
 * REIN_EINVAL with bad filled for a malformed one, REIN_ENOMEM; o is empty on failure. */
rein_err rein__gw_output_read(const struct rein__gw_wire *wire, const json_t *pt,
                              struct rein__gw_output *o, struct rein__gw_bad *bad);
/* Compiles a json_schema ask's schema for the answer's check: REIN_EINVAL with bad filled
 * for a schema rein's validator refuses. */
rein_err rein__gw_output_compile(struct rein__gw_output *o, struct rein__gw_bad *bad);
void rein__gw_output_release(struct rein__gw_output *o);
/* Checks an answer's text (len bytes) against the ask: REIN_OK with *problem NULL when it
 * follows it; else *problem (new) is the "rein" member's problem ({output, code
 * "invalid_output", message, errors [{path, message}]}) and *reask (new, rein_free) what the
 * model reads on a re-ask. REIN_ENOMEM. */
rein_err rein__gw_output_check(const struct rein__gw_output *o, const char *text, size_t len,
                               json_t **problem, char **reask);
/*
 * The request's ask into c->output; for an upstream of another wire (other_wire) also into the
 * upstream request's output format, the members it came in taken off the refused list, a
 * malformed ask a 400 (REIN_EINVAL with bad). For the client's own wire (whose body goes as
 * written) a malformed or uncheckable ask is left to the upstream and not checked.
 */
rein_err rein__gw_output(struct rein__gw_ctx *c, bool other_wire, struct rein__gw_bad *bad);

/*
 * One request from start to answer. Invariants: out_calls are the calls the client receives (in
 * order, across rounds); streaming is set when the client asked for a stream, started once the
 * stream's first byte went out (from then on errors are stream events); gone once the client
 * left (nothing more is sent).
 */
struct rein__gw_ctx {
    rein_gateway *g;
    struct rein__gw_job *job; /* the background job the request runs in, or NULL */
    const struct rein_gateway_call *call;
    const struct rein_gateway_sink *sink;
    const struct rein__gw_wire *wire;
    struct rein__gw_req req;
    struct rein__gw_opts o;
    struct rein__gw_tools *tools;
    rein_model_request *mreq;
    rein_session *session;
    char trace_id[REIN_TRACE_ID_LEN + 1];
    char id[REIN_ID_MAX]; /* the answer's id (chatcmpl-…, msg_…) */
    int64_t created;      /* seconds since the epoch */
    const char *model;    /* what the answer names as its model */
    /* The member the client's reasoning ask was written in, when rein__gw_reasoning mapped it
     * to the upstream's (static; NULL: none was). */
    const char *reasoning_name;
    json_t *seen_ids; /* call ids of the history and of the answer: {id: true} */
    /* the current round */
    int round;
    struct rein__gw_round_call *rc;
    size_t nrc, rc_cap;
    int64_t round_in, round_out;
    /* the answer */
    struct rein__gw_call *out;
    size_t nout, out_cap;
    rein_model_response *last; /* the final round's response (owned) */
    struct rein_buf streamed;  /* the text the client got while streaming (recorded requests) */
    int64_t in_tokens, out_tokens;
    /* Of those, over the rounds: read from and written to the prompt cache, spent reasoning;
     * -1 while no round reported them. */
    int64_t cached_tokens, cache_write_tokens, reasoning_tokens;
    int reasks;
    json_t *problems, *repairs, *converted, *renamed; /* arrays, created on first use */
    struct rein__gw_output output;                    /* the answer's form the client asked for */
    /* A structured answer's text held back from a stream until it is checked (decision
     * 0100): hold while the round's text is held, held the text so far. */
    bool hold;
    struct rein_buf held;
    /* streaming */
    bool streaming, started, gone;
    /* The upstream's kept headers were given to the answer (once: the first round's for a
     * stream, else the final round's, or the failed one's; decision 0086). */
    bool headers_passed;
    bool role_sent; /* OpenAI: the first chunk (role) went out */
    /* OpenAI: the upstream's logprobs piece that goes with the next chunk (JSON text; empty:
     * none). The piece comes before the text it scores, which the filter may hold back. */
    struct rein_buf logprobs;
    /* Responses: the output items the stream has given whole (for response.completed), the
     * open item's text and id, the events' sequence_number. */
    json_t *rs_items;
    json_t *rs_annots; /* the open message's annotations in this wire's shape, or NULL */
    struct rein_buf rs_text;
    char rs_item[256]; /* rein's id, or a Responses upstream's (reasoning) */
    /* the client, in the kept responses and reasoning: rein__gw_owner() fills it when first
     * asked (a hash the plain path does not need); a Responses client's is filled as its body
     * is read */
    char owner[REIN__GW_OWNER_LEN + 1];
    struct rein_buf up_tools; /* a Responses upstream's own tools (rein__gw_rs_native_tools) */
    int64_t rs_seq;
    /* A wire read as another's (wire->convert): the body the parser read, and what the
     * client's body holds beyond it (new, or NULL). */
    struct rein_buf conv;
    json_t *conv_extra;
    /* the client's members the upstream's model refuses, left out (decision 0105), or NULL */
    json_t *refused;
    int block; /* Anthropic: index of the open block, -1 none */
    int next_block;
    char block_type[20];    /* "text", "thinking", "thinking_signed" (its signature began) */
    struct rein_buf ev;     /* one event's text, reused */
    struct rein_buf frames; /* framed events not yet handed over (sink->stream_frames) */
    /* A text event's frame up to its text (rein__gw_frame_text): OpenAI's "data: ", chunk_head
     * and the text's key; Anthropic's content_block_delta up to the text. Made once per kind
     * of text (and Anthropic block). */
    struct rein_buf frame_head;
    enum rein_model_event_type frame_head_kind; /* ... for this kind of text event */
    int frame_head_block;                       /* ... and this block (Anthropic) */
    struct rein_buf chunk_head; /* OpenAI: what every chunk starts with (made once) */
    struct rein_jw chunk_w;     /* ... and the writer's state after those bytes */
    rein_err sink_rc;           /* the first failure of the sink */
};

/* The wire the request's body is read as: the client's, or the one its body means. */
static inline const char *rein__gw_body_wire(const struct rein__gw_ctx *c)
{
    return c->wire->parse_as ? c->wire->parse_as : c->wire->name;
}
/* Sends one stream event, starting the stream first; remembers a gone client. */
rein_err rein__gw_emit(struct rein__gw_ctx *c, const char *event, const char *data, size_t len);
/* The "rein" member of an answer (new), or NULL when nothing was repaired, re-asked or passed. */
json_t *rein__gw_rein_ext(const struct rein__gw_ctx *c);
/* An error after the stream began, for a wire that ends a failed stream with one more data
 * line holding its error body (with the "rein" member): OpenAI's chat wire, Gemini's. */
rein_err rein__gw_s_error_body(struct rein__gw_ctx *c, const struct rein__gw_err *e);
/* Writes the answer's "rein" member (a key and its object) when it has one. */
void rein__gw_rein_member(const struct rein__gw_ctx *c, struct rein_jw *w);
/* The finish word the client's wire uses for the answer. */
const char *rein__gw_finish(const struct rein__gw_ctx *c, bool anthropic);
/* The HTTP status an error answer gets for a REIN_E* code of the upstream send. */
int rein__gw_status_for(rein_err rc);

/* ---- background responses (background.c, decision 0093) ----------------------------------- */

struct rein__gw_job;
struct rein__gw_log;

/* One request, as rein_gateway_serve runs it; job: the background job it runs in, or NULL. */
rein_err rein__gw_serve(rein_gateway *g, const struct rein_gateway_call *call,
                        const struct rein_gateway_sink *sink, struct rein__gw_job *job);
/* The gateway's background jobs: at most max at once (0: none run); REIN_ENOMEM. Release
 * cancels every job and waits for them. */
rein_err rein__gw_bg_init(rein_gateway *g, int max);
void rein__gw_bg_release(rein_gateway *g);
/*
 * A Responses request with background true (call borrowed, of the client of owner): run as a
 * job, and answered on sink once the job has read the body: with the response in progress
 * (200) when it was accepted, else with the job's refusal; a 429 when owner or the gateway
 * has no room for one more job.
 */
rein_err rein__gw_bg_serve(rein_gateway *g, const struct rein_gateway_call *call,
                           const struct rein_gateway_sink *sink, const char *owner);
/*
 * After the request's body was read, before the first upstream call: whether the job may go
 * on in the background (it then keeps the response in progress, and the client gets it, or
 * with stream the job's events as they come), or false with bad filled (store false, the
 * gateway keeping nothing).
 */
bool rein__gw_bg_accept(struct rein__gw_ctx *c, struct rein__gw_bad *bad);
/* Cancels owner's running background response id and waits (10 s at most) for it to end:
 * REIN_OK, or REIN_ETIMEDOUT. A response that is not running is left as it is. */
rein_err rein__gw_bg_cancel(rein_gateway *g, const char *owner, const char *id);
/*
 * GET /v1/responses/{id}?stream=true[&starting_after=N] for owner (rein_gateway_kept_stream):
 * the kept events of a background response asked with stream after N (all without), then
 * the rest as they come, through sink; or an error answer (400, 404, 429) through it.
 */
rein_err rein__gw_bg_stream(rein_gateway *g, const struct rein_gateway_call *call,
                            const char *owner, const char *id,
                            const char *(*query)(void *header_data, const char *name),
                            const struct rein_gateway_sink *sink);
/* Forgets the events of owner's response id (it was deleted); a no-op when none are kept. */
void rein__gw_bg_forget(rein_gateway *g, const char *owner, const char *id);
/* The response object in progress for c, as the client gets it and the gateway keeps it
 * (responses.c); kept as owner's response c->id. */
rein_err rein__gw_rs_in_progress(struct rein__gw_ctx *c, struct rein_buf *out);

/* ---- checks (check.c) ---------------------------------------------------------------------- */

/*
 * Checks call (borrowed) of the current round through the pipeline and appends the outcome to
 * c->rc; *out receives its index there.
 */
rein_err rein__gw_check(struct rein__gw_ctx *c, const rein_model_call *call, size_t *out);

/*
 * The frames buffer (c->frames) with room for n more bytes, the stream started (sink->
 * stream_frames set): the caller appends one whole frame there itself, then calls
 * rein__gw_framed(). Errors as rein__gw_emit().
 */
rein_err rein__gw_frame_room(struct rein__gw_ctx *c, size_t n) REIN_WUR;
/* After a frame was appended to c->frames: hands a full batch over. */
rein_err rein__gw_framed(struct rein__gw_ctx *c) REIN_WUR;
/*
 * A text event's frame written where it goes (sink->stream_frames): c->frame_head (the frame
 * up to the text, which the wire made), the n bytes at p escaped as rein_json_escape() escapes
 * them, then tail (tlen bytes: the rest of the event and its blank line), in one reservation
 * for the plain case. A failure leaves no part of the frame. Errors as rein__gw_emit().
 */
rein_err rein__gw_frame_text(struct rein__gw_ctx *c, const char *p, size_t n, const char *tail,
                             size_t tlen) REIN_WUR;

/* ---- recording (record.c) -------------------------------------------------------------------- */

/* Opens the request's conversation when it is recorded; REIN_EBUSY with held filled. */
rein_err rein__gw_record_open(struct rein__gw_ctx *c, struct rein_store_lock_info *held,
                              rein_error *err);
/* An event of the request (type, a JSON object's text). Failures are logged. */
void rein__gw_record(struct rein__gw_ctx *c, const char *type, const char *json, size_t len);
/* The request as it arrived: the event, the client's new messages, the results it reports. */
void rein__gw_record_request(struct rein__gw_ctx *c);
/* One upstream call of round c->round (rc its outcome, resp may be NULL). */
void rein__gw_record_upstream(struct rein__gw_ctx *c, rein_err rc, const rein_error *err,
                              const rein_model_response *resp, int64_t ms);
/* One checked call (c->rc[i]): the check event, the metrics, the ledger for an invalid one. */
void rein__gw_record_check(struct rein__gw_ctx *c, size_t i);
/* A re-ask of round c->round: of its invalid calls, or of its answer when it has no calls (the
 * tool label "(answer)", which no tool name can be). */
void rein__gw_record_reask(struct rein__gw_ctx *c);
/* An answer of round c->round that did not follow the form the client asked for. */
void rein__gw_record_invalid_answer(struct rein__gw_ctx *c);
/* The end: the answer's status, the reply as a message, the result event; closes the
 * conversation. */
void rein__gw_record_close(struct rein__gw_ctx *c, int status);
/* The ledger hook of server-side calls (rein_ledger_hook_fn over the session). */
rein_err rein__gw_ledger_hook(void *ctx, const struct rein_ledger_entry *e);
/* Registers the gateway's metric families. */
rein_err rein__gw_metrics_init(rein_gateway *g, rein_error *err);

/* The client's reasoning ask (its wire's member in c->req.passthrough) into c->mreq for an
 * upstream of another wire whose model takes one; the member then leaves c->req.dropped
 * (reasoning.c, decision 0095). */
/* Fits the upstream request to the upstream's model, for a client of another wire: the client's
 * temperature and top_p the model refuses (rein_provider_sampling) are unset and named in the
 * dropped list (the client's names), and an output limit above the model's (its capabilities'
 * max_output) is lowered to it. REIN_ENOMEM only. */
rein_err rein__gw_fit(struct rein__gw_ctx *c);
/* The client's name in the kept stores (c->owner, hashed from its key when first asked). */
const char *rein__gw_owner(struct rein__gw_ctx *c);
void rein__gw_reasoning(struct rein__gw_ctx *c);
/* The reasoning ask of a client of wire in its passthrough members (borrowed): the member's
 * name as x-rein-dropped names it, with *effort and *budget (0: none) set; NULL when the body
 * asks nothing rein can pass on. */
const char *rein__gw_reasoning_ask(const struct rein__gw_wire *wire, const json_t *passthrough,
                                   enum rein_reasoning *effort, int64_t *budget);

#endif /* REIN_GATEWAY_INT_H */
