/*
 * The OpenAI Responses API wire (POST {base}/responses), JSON and SSE, as the
 * official SDKs (openai-python's types/responses, openai-node) and the Vercel
 * AI SDK speak it.
 *
 * Decoding. A stream is typed events; each is tokenized once with jsmn and its
 * "type" picks what is pulled out (no tree per event):
 *   response.output_text.delta, response.refusal.delta        text, refusal
 *   response.reasoning_summary_text.delta, .reasoning_text.delta   reasoning
 * (summary parts joined with a blank line) response.output_item.added / .done
 * a function_call item opens (call_id, name) and closes; a reasoning item, and
 * an item a hosted tool wrote (web search, file search, code interpreter, image
 * generation, MCP), is kept whole to go back with the history; a
 *                                                             message item
 * gives its text when no deltas did response.function_call_arguments.delta /
 * .done           the call at output_index response.completed / .incomplete /
 * .failed               usage (with cached and reasoning tokens), the finish,
 * the error error                                                     the error
 * object response.created / .in_progress / .queued                the response
 * id response.output_text.annotation.added              an annotation of the text
 * (a url_citation in the chat completions wire's nested shape) Every other
 * response.* event (content parts, hosted tool
 * progress, audio, MCP, code interpreter, image generation, custom tool input)
 * is a known event with nothing for rein: counted as recognized and skipped.
 * The whole body is the response object (or
 * {"error": …}); its output items are read as the stream's done events are.
 *
 * Encoding. rein keeps its own history, so by default every request carries the
 * whole conversation as input items with "store": false: system and user
 * messages, an assistant message as its reasoning items (verbatim, with
 * encrypted_content, which reasoning models need back after a tool call;
 * requested with include reasoning.encrypted_content), its text and one
 * function_call item per call, a tool result as a function_call_output item
 * (its output a list of input_text, input_image and input_file items when it
 * has attachments).
 * With the setting previous_response_id the response is stored and only what
 * came after the last stored response is sent. Tools are function tools,
 * "strict" where the schema allows it (every object closed with
 * additionalProperties false and every property required).
 */
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include "jpull.h"

/* ---------------------------------------------------------------------------------------
 * Decoding
 */

enum slot_kind { S_NONE, S_CALL, S_REASONING, S_MESSAGE };

/* What an output_index holds. */
struct slot {
    enum slot_kind kind;
    int call;      /* S_CALL: the call's index */
    bool got_args; /* S_CALL: arguments came as deltas */
    bool custom;   /* S_CALL: a custom tool's call, its {"input":" written */
};

#define MAX_SLOTS 4096 /* output items of one response: far more than any reply has */

struct rein__responses_state {
    struct slot *s;
    size_t n;
    bool got_text;           /* output_text or refusal deltas came */
    bool got_reasoning;      /* reasoning deltas came */
    bool got_annotations;    /* output_text.annotation.added events came */
    int responses;           /* response.created events: a multi-step capture holds several
                  */
    size_t calls_before;     /* calls made by the earlier responses */
    int64_t base[4], cur[4]; /* usage of the earlier responses, and of this one: input,
               * output, cached, reasoning tokens (-1 unknown) */
};

static void responses_state_free(void *wire_state)
{
    struct rein__responses_state *st = wire_state;

    if (!st)
        return;
    rein_free(st->s);
    rein_free(st);
}

static struct rein__responses_state *state(struct rein_provider_decoder *d)
{
    struct rein__responses_state *st = d->wire_state;

    if (!st && (st = rein_calloc(1, sizeof(*st)))) {
        for (int i = 0; i < 4; i++)
            st->cur[i] = -1;
        d->wire_state = st;
    }
    return st;
}

/* A capture of several responses is assembled in order; a note says so. */
static rein_err responses_end(struct rein_provider_decoder *d)
{
    const struct rein__responses_state *st = d->wire_state;

    if (st && st->responses > 1)
        rein__decoder_note(d, "the recording holds several responses: they were assembled in "
                              "order (text joined, tool calls kept, usage summed)");
    return REIN_OK;
}

/* The slot of output_index k (grown as needed), or NULL when k is out of bounds
 * or memory is exhausted (*oom says which). */
static struct slot *slot_at(struct rein__responses_state *st, int64_t k, bool *oom)
{
    *oom = false;
    if (k < 0 || k >= MAX_SLOTS)
        return NULL;
    if ((size_t)k >= st->n) {
        size_t n = (size_t)k + 8;
        struct slot *v = rein_realloc(st->s, n * sizeof(*v));
        if (!v) {
            *oom = true;
            return NULL;
        }
        memset(v + st->n, 0, (n - st->n) * sizeof(*v));
        st->s = v;
        st->n = n;
    }
    return &st->s[k];
}

static int64_t int_at(const struct jdoc *doc, int obj, const char *key, size_t klen)
{
    int64_t v;
    return jint(doc, jget(doc, obj, key, klen), &v) ? v : -1;
}

static int64_t plus(int64_t base, int64_t v)
{
    return v < 0 ? (base > 0 ? base : -1) : v + base;
}

/* Usage as reported, added to that of the earlier responses of a multi-step
 * capture. */
static void take_usage(struct rein_provider_decoder *d, struct rein__responses_state *st,
                       const struct jdoc *doc, int u)
{
    int64_t *c = st->cur, *b = st->base;

    if (!jis(doc, u, JSMN_OBJECT))
        return;
    c[0] = int_at(doc, u, "input_tokens", 12);
    c[1] = int_at(doc, u, "output_tokens", 13);
    c[2] = int_at(doc, JGET(doc, u, "input_tokens_details"), "cached_tokens", 13);
    c[3] = int_at(doc, JGET(doc, u, "output_tokens_details"), "reasoning_tokens", 16);
    rein__asm_usage(&d->a, plus(b[0], c[0]), plus(b[1], c[1]));
    rein__asm_usage_detail(&d->a, plus(b[2], c[2]), plus(b[3], c[3]));
}

/* A response begins: the output indexes of the one before (a multi-step
 * capture) are done. */
static void response_begins(struct rein__responses_state *st, size_t ncalls)
{
    if (st->responses++ > 0) {
        for (int i = 0; i < 4; i++)
            st->base[i] += st->cur[i] > 0 ? st->cur[i] : 0;
    }
    for (int i = 0; i < 4; i++)
        st->cur[i] = -1;
    if (st->n)
        memset(st->s, 0, st->n * sizeof(*st->s));
    st->calls_before = ncalls;
    st->got_text = st->got_reasoning = st->got_annotations = false;
}

/* A function_call item at output index k: the call is opened (or found) at key
 * k. */
static int open_call(struct rein_provider_decoder *d, struct slot *sl, int64_t k,
                     const struct jdoc *doc, int item)
{
    static const struct jkey keys[] = {JK("call_id"), JK("name")};
    int f[2], call;

    if (sl && sl->kind == S_CALL)
        return sl->call;
    JFIELDS(doc, item, keys, f);
    call = rein__asm_call(&d->a, k, jstr(doc, f[0]), jstr(doc, f[1]));
    if (call >= 0 && sl) {
        sl->kind = S_CALL;
        sl->call = call;
    }
    return call;
}

/*
 * A custom tool's call (custom_tool_call) at output index k: opened as a function call is, its
 * free-form input kept as the arguments {"input": "…"} (decision 0096), which is how rein
 * offers a custom tool to every other wire. The input's pieces are the escaped text of JSON
 * strings, so they go between the quotes as they came.
 */
static int open_custom(struct rein_provider_decoder *d, struct slot *sl, int64_t k,
                       const struct jdoc *doc, int item)
{
    int call = open_call(d, sl, k, doc, item);
    rein_model_call *c;
    rein_err rc;

    if (call < 0 || (sl && sl->custom))
        return call;
    c = d->r->calls[call];
    if (c->custom)
        return call;
    c->custom = true;
    if (sl)
        sl->custom = true;
    rc = rein__asm_call_args_raw(&d->a, (size_t)call, "{\"input\":\"", 10);
    return rc ? rc : call;
}

/* The custom call's input (the escaped text of a JSON string, borrowed), and its end. */
static rein_err custom_input(struct rein_provider_decoder *d, int call, struct rein__jstr s)
{
    return rein__asm_call_args_raw(&d->a, (size_t)call, s.p, s.len);
}

static rein_err custom_end(struct rein_provider_decoder *d, int call)
{
    rein_err rc = rein__asm_call_args_raw(&d->a, (size_t)call, "\"}", 2);

    return rc ? rc : rein__asm_call_close(&d->a, (size_t)call);
}

/* A reasoning item, kept as the API takes it back: type, id, summary,
 * encrypted_content. */
/* An item (o, taken; NULL: out of memory) that goes back with the history whole, in its place
 * among the response's reasoning_items, told to a listener as the event kind. */
static rein_err keep_item(struct rein_provider_decoder *d, enum rein_model_event_type kind,
                          json_t *o)
{
    rein_model_response *r = d->r;
    bool bad = !o;

    if (!bad && !r->reasoning_items)
        bad = !(r->reasoning_items = json_array());
    bad = bad || rein__asm_tell(&d->a, kind, o) != REIN_OK;
    if (!bad)
        bad = json_array_append_new(r->reasoning_items, o) != 0;
    else
        json_decref(o);
    return bad ? REIN_ENOMEM : REIN_OK;
}

static rein_err keep_reasoning(struct rein_provider_decoder *d, const struct jdoc *doc, int item)
{
    static const struct jkey keys[] = {JK("id"), JK("summary"), JK("encrypted_content")};
    json_t *o = json_object(), *v;
    int f[3], bad = !o;

    JFIELDS(doc, item, keys, f);
    bad |= o && json_object_set_new(o, "type", json_string("reasoning"));
    for (int i = 0; i < 3 && !bad; i++) {
        if (f[i] < 0 || jnull(doc, f[i]))
            continue;
        v = jtree(doc, f[i]);
        bad |= !v || json_object_set_new(o, keys[i].s, v);
    }
    if (bad) {
        json_decref(o);
        return REIN_ENOMEM;
    }
    /* a listener (the gateway's Responses wire) hands it on whole, encrypted_content and all */
    return keep_item(d, REIN_MEV_REASONING_ITEM, o);
}

/* The texts of a reasoning item's summary (or content) parts, when no deltas
 * gave them. */
static rein_err reasoning_texts(struct rein_provider_decoder *d, const struct jdoc *doc, int arr)
{
    static const struct rein__jstr gap = {"\\n\\n", 4, true};
    int n = jis(doc, arr, JSMN_ARRAY) ? doc->t[arr].size : 0;
    rein_err rc = REIN_OK;

    for (int k = 0, i = arr + 1; k < n && !rc; k++, i = jnext(doc, i)) {
        int t = JGET(doc, i, "text");
        if (!jis(doc, t, JSMN_STRING))
            continue;
        if (d->r->reasoning.len)
            rc = rein__asm_reasoning(&d->a, gap);
        if (!rc)
            rc = rein__asm_reasoning(&d->a, jstr(doc, t));
    }
    return rc;
}

/* A message item's content parts (output_text, refusal), when no deltas gave
 * them. */
/*
 * One of the message text's annotations (a url_citation of a web search, a file citation), as
 * the neutral response keeps OpenAI's: in the chat completions wire's shape, whose url_citation
 * nests its members ({"type": "url_citation", "url_citation": {start_index, end_index, url,
 * title}}); another type is kept as this wire wrote it.
 */
static rein_err take_annotation(struct rein_provider_decoder *d, const struct jdoc *doc, int at)
{
    json_t *a = jis(doc, at, JSMN_OBJECT) ? jtree(doc, at) : NULL;
    json_t *piece;

    if (!jis(doc, at, JSMN_OBJECT) || !jis(doc, JGET(doc, at, "type"), JSMN_STRING)) {
        json_decref(a); /* not an annotation of any type */
        return REIN_OK;
    }
    if (a && JEQ(doc, JGET(doc, at, "type"), "url_citation")) {
        json_t *nested = json_pack("{s:s, s:O}", "type", "url_citation", "url_citation", a);
        (void)json_object_del(json_object_get(nested, "url_citation"), "type");
        json_decref(a);
        a = nested;
    }
    piece = a ? json_pack("[o]", a) : NULL;
    return piece ? rein__asm_annotations(&d->a, piece) : REIN_ENOMEM;
}

/* The message's text parts; with their annotations when no annotation events came. */
static rein_err message_texts(struct rein_provider_decoder *d, const struct jdoc *doc, int arr,
                              bool text, bool annotations)
{
    int n = jis(doc, arr, JSMN_ARRAY) ? doc->t[arr].size : 0;
    rein_err rc = REIN_OK;

    for (int k = 0, i = arr + 1; k < n && !rc; k++, i = jnext(doc, i)) {
        int type = JGET(doc, i, "type"), list = JGET(doc, i, "annotations");
        int m = jis(doc, list, JSMN_ARRAY) ? doc->t[list].size : 0;
        if (text && JEQ(doc, type, "output_text"))
            rc = rein__asm_text(&d->a, jstr(doc, JGET(doc, i, "text")));
        else if (text && JEQ(doc, type, "refusal"))
            rc = rein__asm_refusal(&d->a, jstr(doc, JGET(doc, i, "refusal")));
        for (int j = 0, e = list + 1; annotations && j < m && !rc; j++, e = jnext(doc, e))
            rc = take_annotation(d, doc, e);
    }
    return rc;
}

enum { I_TYPE, I_ARGUMENTS, I_SUMMARY, I_CONTENT, I_INPUT };

/* The items a hosted tool writes (it ran at OpenAI): they go back with the history whole, as
 * reasoning items do, and a listener (the gateway's Responses wire) hands them on. Items that
 * wait for the caller (computer_call, local_shell_call, mcp_approval_request) are not these. */
static bool hosted_item(const struct jdoc *doc, int type)
{
    static const char *const types[] = {
        "web_search_call",       "file_search_call", "code_interpreter_call",
        "image_generation_call", "mcp_call",         "mcp_list_tools"};

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (jeq(doc, type, types[i], strlen(types[i])))
            return true;
    }
    return false;
}

static rein_err keep_hosted(struct rein_provider_decoder *d, const struct jdoc *doc, int item)
{
    return keep_item(d, REIN_MEV_OUTPUT_ITEM, jtree(doc, item));
}

/* A reasoning item begins: a listener learns its id before its summary streams, so what it
 * writes of the item carries the upstream's id from the start. */
static rein_err reasoning_begins(struct rein_provider_decoder *d, const struct jdoc *doc, int item)
{
    int id = JGET(doc, item, "id");
    json_t *o;
    rein_err rc;

    if (!jis(doc, id, JSMN_STRING))
        return REIN_OK;
    o = json_pack("{s:s, s:o, s:s}", "type", "reasoning", "id", jtree(doc, id), "status",
                  "in_progress");
    if (!o)
        return REIN_ENOMEM;
    rc = rein__asm_tell(&d->a, REIN_MEV_REASONING_ITEM, o);
    json_decref(o);
    return rc;
}

/* An output item that is finished (output_item.done, or an item of a whole
 * body). */
static rein_err item_done(struct rein_provider_decoder *d, struct rein__responses_state *st,
                          int64_t k, const struct jdoc *doc, int item)
{
    static const struct jkey keys[] = {JK("type"), JK("arguments"), JK("summary"), JK("content"),
                                       JK("input")};
    int f[5], call;
    bool oom;
    struct slot *sl = slot_at(st, k, &oom);
    rein_err rc = REIN_OK;

    if (oom)
        return REIN_ENOMEM;
    JFIELDS(doc, item, keys, f);
    if (JEQ(doc, f[I_TYPE], "function_call")) {
        call = open_call(d, sl, k, doc, item);
        if (call < 0)
            return call;
        if (!(sl && sl->got_args) && jis(doc, f[I_ARGUMENTS], JSMN_STRING))
            rc = rein__asm_call_args(&d->a, (size_t)call, jstr(doc, f[I_ARGUMENTS]));
        if (sl)
            sl->got_args = true;
        return rc ? rc : rein__asm_call_close(&d->a, (size_t)call);
    }
    if (JEQ(doc, f[I_TYPE], "custom_tool_call")) {
        call = open_custom(d, sl, k, doc, item);
        if (call < 0)
            return call;
        if (!(sl && sl->got_args) && jis(doc, f[I_INPUT], JSMN_STRING))
            rc = custom_input(d, call, jstr(doc, f[I_INPUT]));
        if (sl)
            sl->got_args = true;
        return rc ? rc : custom_end(d, call);
    }
    if (JEQ(doc, f[I_TYPE], "reasoning")) {
        if (!st->got_reasoning) {
            rc = reasoning_texts(d, doc, f[I_SUMMARY]);
            if (!rc && !d->r->reasoning.len)
                rc = reasoning_texts(d, doc, f[I_CONTENT]);
        }
        return rc ? rc : keep_reasoning(d, doc, item);
    }
    if (JEQ(doc, f[I_TYPE], "message") && (!st->got_text || !st->got_annotations))
        return message_texts(d, doc, f[I_CONTENT], !st->got_text, !st->got_annotations);
    if (hosted_item(doc, f[I_TYPE]))
        return keep_hosted(d, doc, item);
    return REIN_OK;
}

/* The response object's id, usage and status
 * (response.completed/.incomplete/.failed). */
static rein_err take_response(struct rein_provider_decoder *d, struct rein__responses_state *st,
                              const struct jdoc *doc, int resp)
{
    static const struct jkey keys[] = {
        JK("id"), JK("status"), JK("usage"), JK("error"), JK("incomplete_details"), JK("model")};
    int f[6];
    rein_err rc;

    JFIELDS(doc, resp, keys, f);
    if ((rc = rein__asm_identity(&d->a, jstr(doc, f[0]), jstr(doc, f[5]))))
        return rc;
    if (jis(doc, f[0], JSMN_STRING) && !d->r->response_id) {
        struct rein__jstr id = jstr(doc, f[0]);
        d->r->response_id = rein_strndup(id.p, id.len);
        if (!d->r->response_id)
            return REIN_ENOMEM;
    }
    take_usage(d, st, doc, f[2]);
    if (f[3] >= 0 && !jnull(doc, f[3]))
        rein__asm_error(&d->a, jtree(doc, f[3]));
    if (JEQ(doc, f[1], "completed")) {
        static const struct rein__jstr calls = {"tool_calls", 10, false};
        static const struct rein__jstr stop = {"stop", 4, false};
        rc = rein__asm_finish_reason(&d->a, d->r->ncalls > st->calls_before ? calls : stop);
        rein__asm_complete(&d->a);
    } else if (JEQ(doc, f[1], "incomplete")) {
        /* Cut by max_output_tokens or a content filter: the reply ended, short. */
        int reason = JGET(doc, f[4], "reason");
        static const struct rein__jstr length = {"length", 6, false};
        rc = rein__asm_finish_reason(&d->a, JEQ(doc, reason, "content_filter") ? jstr(doc, reason)
                                                                               : length);
        rein__asm_complete(&d->a);
    } else if (JEQ(doc, f[1], "failed") && !d->r->error) {
        json_t *e = json_pack("{s:s}", "message", "the response failed");
        rein__asm_error(&d->a, e);
    }
    return rc;
}

enum {
    E_TYPE,
    E_DELTA,
    E_OUTPUT_INDEX,
    E_ITEM,
    E_RESPONSE,
    E_ARGUMENTS,
    E_ERROR,
    E_SUMMARY_INDEX,
    E_CODE,
    E_MESSAGE,
    E_ANNOTATION,
    E_INPUT,
};

static rein_err take_delta_event(struct rein_provider_decoder *d, struct rein__responses_state *st,
                                 const struct jdoc *doc, const int *f)
{
    int type = f[E_TYPE];
    struct rein__jstr delta = jstr(doc, f[E_DELTA]);

    if (JEQ(doc, type, "response.output_text.delta")) {
        st->got_text = true;
        return rein__asm_text(&d->a, delta);
    }
    if (JEQ(doc, type, "response.refusal.delta")) {
        st->got_text = true;
        return rein__asm_refusal(&d->a, delta);
    }
    /* reasoning_summary_text.delta or reasoning_text.delta */
    st->got_reasoning = true;
    return rein__asm_reasoning(&d->a, delta);
}

/* The call a piece event (arguments or a custom call's input) at its output_index is for,
 * opened when its added event was missing; *sl its slot (NULL: none). A negative rein_err. */
static int piece_call(struct rein_provider_decoder *d, struct rein__responses_state *st,
                      const struct jdoc *doc, const int *f, bool custom, struct slot **sl)
{
    int64_t k = -1;
    bool oom;

    (void)jint(doc, f[E_OUTPUT_INDEX], &k);
    *sl = slot_at(st, k, &oom);
    if (oom)
        return REIN_ENOMEM;
    return custom ? open_custom(d, *sl, k, doc, -1) : open_call(d, *sl, k, doc, -1);
}

/* response.function_call_arguments.delta / .done at output_index k. */
static rein_err take_arguments(struct rein_provider_decoder *d, struct rein__responses_state *st,
                               const struct jdoc *doc, const int *f, bool done)
{
    struct slot *sl;
    int call = piece_call(d, st, doc, f, false, &sl);

    if (call < 0)
        return call;
    if (!done) {
        if (sl)
            sl->got_args = true;
        return rein__asm_call_args(&d->a, (size_t)call, jstr(doc, f[E_DELTA]));
    }
    if (!(sl && sl->got_args) && jis(doc, f[E_ARGUMENTS], JSMN_STRING)) {
        rein_err rc = rein__asm_call_args(&d->a, (size_t)call, jstr(doc, f[E_ARGUMENTS]));
        if (rc)
            return rc;
    }
    if (sl)
        sl->got_args = true;
    return rein__asm_call_close(&d->a, (size_t)call);
}

/* The "error" event: {type: "error", code, message, param} (the documented
 * shape) or with the fields inside an "error" object (as some recordings show).
 */
static void take_error_event(struct rein_provider_decoder *d, const struct jdoc *doc, const int *f)
{
    if (jis(doc, f[E_ERROR], JSMN_OBJECT)) {
        rein__asm_error(&d->a, jtree(doc, f[E_ERROR]));
        return;
    }
    json_t *e = json_object();
    if (!e)
        return;
    if (f[E_CODE] >= 0 && !jnull(doc, f[E_CODE]))
        json_object_set_new(e, "code", jtree(doc, f[E_CODE]));
    json_object_set_new(e, "message",
                        f[E_MESSAGE] >= 0 ? jtree(doc, f[E_MESSAGE])
                                          : json_string("the stream failed"));
    rein__asm_error(&d->a, e);
}

/* response.custom_tool_call_input.delta / .done at output_index k: the custom call's input. */
static rein_err take_custom_input(struct rein_provider_decoder *d, struct rein__responses_state *st,
                                  const struct jdoc *doc, const int *f, bool done)
{
    struct slot *sl;
    int call = piece_call(d, st, doc, f, true, &sl);

    if (call < 0)
        return call;
    if (done && sl && sl->got_args)
        return REIN_OK;
    if (sl)
        sl->got_args = true;
    return custom_input(d, call, jstr(doc, f[done ? E_INPUT : E_DELTA]));
}

static bool has_prefix(const struct jdoc *doc, int i, const char *lit, size_t len)
{
    return jis(doc, i, JSMN_STRING) && (size_t)(doc->t[i].end - doc->t[i].start) >= len &&
           memcmp(doc->js + doc->t[i].start, lit, len) == 0;
}

static rein_err take_event(struct rein_provider_decoder *d, const struct jdoc *doc, int obj)
{
    static const struct jkey keys[] = {JK("type"),    JK("delta"),         JK("output_index"),
                                       JK("item"),    JK("response"),      JK("arguments"),
                                       JK("error"),   JK("summary_index"), JK("code"),
                                       JK("message"), JK("annotation"),    JK("input")};
    struct rein__responses_state *st = state(d);
    int f[12], type;
    int64_t k = -1;
    rein_err rc = REIN_OK;
    bool oom;

    if (!st)
        return REIN_ENOMEM;
    JFIELDS(doc, obj, keys, f);
    type = f[E_TYPE];
    if (!jis(doc, type, JSMN_STRING))
        return REIN_OK;
    (void)jint(doc, f[E_OUTPUT_INDEX], &k);
    if (JEQ(doc, type, "response.output_text.delta") || JEQ(doc, type, "response.refusal.delta") ||
        JEQ(doc, type, "response.reasoning_summary_text.delta") ||
        JEQ(doc, type, "response.reasoning_text.delta")) {
        rc = take_delta_event(d, st, doc, f);
    } else if (JEQ(doc, type, "response.output_text.annotation.added")) {
        st->got_annotations = true;
        rc = take_annotation(d, doc, f[E_ANNOTATION]);
    } else if (JEQ(doc, type, "response.function_call_arguments.delta")) {
        rc = take_arguments(d, st, doc, f, false);
    } else if (JEQ(doc, type, "response.function_call_arguments.done")) {
        rc = take_arguments(d, st, doc, f, true);
    } else if (has_prefix(doc, type, "response.custom_tool_call_input.", 32)) {
        rc = take_custom_input(d, st, doc, f,
                               JEQ(doc, type, "response.custom_tool_call_input.done"));
    } else if (JEQ(doc, type, "response.reasoning_summary_part.added")) {
        static const struct rein__jstr gap = {"\\n\\n", 4, true};
        if (d->r->reasoning.len)
            rc = rein__asm_reasoning(&d->a, gap);
    } else if (JEQ(doc, type, "response.output_item.added")) {
        int it = JGET(doc, f[E_ITEM], "type");
        struct slot *sl = slot_at(st, k, &oom);
        if (oom)
            return REIN_ENOMEM;
        if (JEQ(doc, it, "function_call")) {
            int call = open_call(d, sl, k, doc, f[E_ITEM]);
            rc = call < 0 ? call : REIN_OK;
        } else if (JEQ(doc, it, "custom_tool_call")) {
            int call = open_custom(d, sl, k, doc, f[E_ITEM]);
            rc = call < 0 ? call : REIN_OK;
        } else if (JEQ(doc, it, "reasoning")) {
            rc = reasoning_begins(d, doc, f[E_ITEM]);
        } else if (hosted_item(doc, it)) {
            rc = rein__asm_tell_text(&d->a, REIN_MEV_OUTPUT_ITEM_EVENT, doc->js + doc->t[obj].start,
                                     (size_t)(doc->t[obj].end - doc->t[obj].start));
        }
    } else if (JEQ(doc, type, "response.output_item.done")) {
        rc = item_done(d, st, k, doc, f[E_ITEM]);
    } else if (JEQ(doc, type, "response.created")) {
        response_begins(st, d->r->ncalls);
        d->r->complete = false;
        rc = take_response(d, st, doc, f[E_RESPONSE]);
    } else if (JEQ(doc, type, "response.completed") || JEQ(doc, type, "response.incomplete") ||
               JEQ(doc, type, "response.failed") || JEQ(doc, type, "response.in_progress") ||
               JEQ(doc, type, "response.queued")) {
        rc = take_response(d, st, doc, f[E_RESPONSE]);
    } else if (JEQ(doc, type, "error")) {
        take_error_event(d, doc, f);
    } else if (!has_prefix(doc, type, "response.", 9)) {
        return REIN_OK; /* not an event of this wire: not counted */
    }
    d->recognized++;
    return rc;
}

/*
 * Events rein does not tokenize: those that repeat what the deltas gave (content_part.*,
 * output_text.done with the whole text again, …) or report what rein does not read (MCP
 * approvals, audio): nothing in them for rein; and a hosted tool's progress (searching,
 * interpreting, a partial image, …), which a listener (a gateway's Responses client) may
 * show. They are often the largest events of a stream, so their type is read from the
 * payload's first member (every event starts {"type":…}) and the rest is left alone.
 */
enum untokenized { TOKENIZED, SKIPPED, HOSTED_PROGRESS };

static enum untokenized untokenized(const char *p, size_t len)
{
    static const struct {
        const char *prefix;
        enum untokenized kind;
    } types[] = {
        {"response.content_part.", SKIPPED},
        {"response.output_text.done", SKIPPED},
        {"response.refusal.done", SKIPPED},
        {"response.reasoning_summary_text.done", SKIPPED},
        {"response.reasoning_summary_part.done", SKIPPED},
        {"response.reasoning_text.done", SKIPPED},
        {"response.web_search_call.", HOSTED_PROGRESS},
        {"response.file_search_call.", HOSTED_PROGRESS},
        {"response.code_interpreter_call", HOSTED_PROGRESS},
        {"response.image_generation_call.", HOSTED_PROGRESS},
        {"response.mcp_call", HOSTED_PROGRESS},
        {"response.mcp_list_tools.", HOSTED_PROGRESS},
        {"response.mcp_", SKIPPED},
        {"response.audio.", SKIPPED},
    };
    size_t i = 0;

    while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    if (len - i < 10 || memcmp(p + i, "{\"type\":\"", 9) != 0)
        return TOKENIZED;
    i += 9;
    for (size_t k = 0; k < REIN_ARRAY_SIZE(types); k++) {
        size_t n = strlen(types[k].prefix);
        if (len - i > n && memcmp(p + i, types[k].prefix, n) == 0)
            return types[k].kind;
    }
    return TOKENIZED;
}

static rein_err responses_payload(struct rein_provider_decoder *d, const char *event, const char *p,
                                  size_t len, rein_error *err)
{
    enum untokenized kind;
    struct jdoc doc;
    size_t n;
    int r;

    if (jblank(p, len))
        return REIN_OK;
    n = rein__decoder_saw(d, p, len);
    /* At the end of the input an event may be cut: that one is parsed, to tell. */
    if (!d->at_eof && (kind = untokenized(p, len)) != TOKENIZED) {
        d->recognized++;
        /* a hosted tool's progress: a listener (the gateway's Responses wire) hands it on */
        return kind == HOSTED_PROGRESS
                   ? rein__asm_tell_text(&d->a, REIN_MEV_OUTPUT_ITEM_EVENT, p, len)
                   : REIN_OK;
    }
    if (len >= 6 && memcmp(p, "[DONE]", 6) == 0 && jblank(p + 6, len - 6)) {
        d->done_seen = true; /* proxies that end every stream OpenAI's older way */
        d->recognized++;
        return REIN_OK;
    }
    r = jdoc_payload(d, event, p, len, n, &doc, err);
    if (r <= 0)
        return r;
    for (int i = 0; i < doc.n; i = jnext(&doc, i)) {
        if (doc.t[i].type != JSMN_OBJECT)
            return rein__decoder_bad(d, n, p, len, "an event must be a JSON object", err);
        rein_err rc = take_event(d, &doc, i);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

static rein_err responses_body(struct rein_provider_decoder *d, const char *p, size_t len,
                               rein_error *err)
{
    struct rein__responses_state *st;
    struct jdoc doc;
    int output, e;
    rein_err rc = jdoc_body(d, p, len, &doc, err);

    if (rc)
        return rc;
    st = state(d);
    if (!st)
        return REIN_ENOMEM;
    output = JGET(&doc, 0, "output");
    e = JGET(&doc, 0, "error");
    if (!jis(&doc, output, JSMN_ARRAY)) {
        if (!jis(&doc, e, JSMN_OBJECT))
            return rein__decoder_bad(d, 0, p, len, "no output array and no error", err);
        rein__asm_error(&d->a, jtree(&doc, e)); /* an error body */
        d->recognized++;
        return REIN_OK;
    }
    d->recognized++;
    for (int k = 0, i = output + 1; k < doc.t[output].size && !rc; k++, i = jnext(&doc, i)) {
        if (jis(&doc, i, JSMN_OBJECT))
            rc = item_done(d, st, k, &doc, i);
    }
    return rc ? rc : take_response(d, st, &doc, 0);
}

/* ---------------------------------------------------------------------------------------
 * Encoding
 */

static void jw_member(struct rein_jw *w, const char *key, const char *value)
{
    rein_jw_key(w, key);
    rein_jw_str(w, value);
}

/* A medium function_call_output takes, and how: "input_image" for the image formats the
 * API reads (PNG, JPEG, WebP, non-animated GIF), "input_file" for PDF; NULL for the rest
 * (audio). */
static const char *output_item(const char *mime)
{
    static const char *const images[] = {"image/png", "image/jpeg", "image/webp", "image/gif"};

    for (size_t i = 0; i < REIN_ARRAY_SIZE(images); i++)
        if (strcmp(mime, images[i]) == 0)
            return "input_image";
    return strcmp(mime, "application/pdf") == 0 ? "input_file" : NULL;
}

/* An attachment as an input_image or input_file item, when the API takes its medium. */
static bool output_item_of(struct rein_jw *w, const json_t *att)
{
    const char *type = output_item(rein__json_str(att, "mime_type"));

    if (!type)
        return false;
    rein_jw_obj_begin(w);
    jw_member(w, "type", type);
    if (type[6] == 'f') {
        rein__jw_file_data(w, att);
    } else {
        rein__jw_data_url(w, "image_url", att);
        jw_member(w, "detail", "auto");
    }
    rein_jw_obj_end(w);
    return true;
}

/* A tool result with attachments: the output as a list of content items (the text, then an
 * item per attachment the API takes, the others named as not sent in a last input_text). */
static void output_items(struct rein_jw *w, const json_t *msg)
{
    rein_jw_arr_begin(w);
    rein_jw_obj_begin(w);
    jw_member(w, "type", "input_text");
    jw_member(w, "text", rein__json_str(msg, "content"));
    rein_jw_obj_end(w);
    rein__jw_attachments(w, msg, "the Responses API", "input_text", output_item_of);
    rein_jw_arr_end(w);
}

static bool responses_takes_media(const char *mime)
{
    return output_item(mime) != NULL;
}

/* A user or system message: its text as a string, or, with attachments, its content as
 * input_text (when it has text) and an input_image or input_file per attachment the API takes,
 * the others named as not sent in a last input_text. */
static void input_message(struct rein_jw *w, const json_t *msg)
{
    const char *content = rein__json_str(msg, "content");

    rein_jw_obj_begin(w);
    jw_member(w, "role", rein__json_str(msg, "role"));
    if (!json_array_size(json_object_get(msg, "attachments"))) {
        jw_member(w, "content", content);
    } else {
        rein_jw_key(w, "content");
        rein_jw_arr_begin(w);
        if (content[0]) {
            rein_jw_obj_begin(w);
            jw_member(w, "type", "input_text");
            jw_member(w, "text", content);
            rein_jw_obj_end(w);
        }
        rein__jw_attachments(w, msg, "the Responses API", "input_text", output_item_of);
        rein_jw_arr_end(w);
    }
    rein_jw_obj_end(w);
}

/* A tool result: output text, or content items with its attachments. kind: the item's type
 * (function_call_output, custom_tool_call_output). */
static void tool_output(struct rein_jw *w, const json_t *msg, const char *kind)
{
    rein_jw_obj_begin(w);
    jw_member(w, "type", kind);
    jw_member(w, "call_id", rein__json_str(msg, "tool_call_id"));
    if (json_array_size(json_object_get(msg, "attachments"))) {
        rein_jw_key(w, "output");
        output_items(w, msg);
    } else {
        jw_member(w, "output", rein__json_str(msg, "content"));
    }
    rein_jw_obj_end(w);
}

/* A custom tool's call (decision 0096) as the API takes it back: its input is the text the
 * arguments {"input": …} hold (or the argument text itself when they hold no such thing). */
static void custom_call(struct rein_jw *w, const json_t *call)
{
    const char *raw = rein__json_str(call, "arguments");
    json_t *args = rein_json_parse(raw, strlen(raw), 0, NULL);
    const char *input = json_string_value(json_object_get(args, "input"));

    rein_jw_obj_begin(w);
    jw_member(w, "type", "custom_tool_call");
    jw_member(w, "call_id", rein__json_str(call, "id"));
    jw_member(w, "name", rein__json_str(call, "name"));
    jw_member(w, "input", input ? input : raw);
    rein_jw_obj_end(w);
    json_decref(args);
}

static rein_err responses_encode_message(const rein_provider *p, const json_t *msg,
                                         struct rein_buf *out)
{
    const char *role = rein__json_str(msg, "role");
    const json_t *calls = json_object_get(msg, "tool_calls");
    const json_t *items = json_object_get(msg, "reasoning_items");
    const char *content = rein__json_str(msg, "content");
    struct rein_jw w;
    size_t i;
    json_t *v;

    (void)p;
    rein_jw_init(&w, out);
    if (strcmp(role, "tool") == 0) {
        tool_output(&w, msg, "function_call_output");
        return rein_jw_finish(&w);
    }
    if (strcmp(role, "assistant") != 0) {
        input_message(&w, msg);
        return rein_jw_finish(&w);
    }
    /* The items go out in the order the model made them: reasoning and hosted tools'
   * calls, the text, the calls. A reasoning item goes back only with its encrypted
   * content: rein does not store responses at OpenAI, so an id alone would name
   * nothing there. */
    json_array_foreach(items, i, v)
    {
        if (strcmp(rein__json_str(v, "type"), "reasoning") == 0 &&
            !rein__json_str(v, "encrypted_content")[0])
            continue;
        rein_jw_json(&w, v); /* a hosted tool's call goes back whole */
    }
    if (!content[0])
        content = rein__json_str(msg, "refusal");
    if (content[0] || !json_array_size(calls)) {
        rein_jw_obj_begin(&w);
        jw_member(&w, "role", "assistant");
        jw_member(&w, "content", content);
        rein_jw_obj_end(&w);
    }
    json_array_foreach(calls, i, v)
    {
        const char *raw = rein__json_str(v, "arguments");
        if (json_is_true(json_object_get(v, "custom"))) {
            custom_call(&w, v);
            continue;
        }
        rein_jw_obj_begin(&w);
        jw_member(&w, "type", "function_call");
        jw_member(&w, "call_id", rein__json_str(v, "id"));
        jw_member(&w, "name", rein__json_str(v, "name"));
        /* The exact string the model sent; a zero-argument call's "" goes back as
     * "{}". */
        jw_member(&w, "arguments", raw[0] ? raw : "{}");
        rein_jw_obj_end(&w);
    }
    return rein_jw_finish(&w);
}

/* Message i's piece: a tool result answering a custom tool's call is that call's output. */
static rein_err responses_encode_in(const rein_provider *p, const rein_history *h, size_t i,
                                    struct rein_buf *out)
{
    const json_t *m = rein_history_get(h, i);
    struct rein_jw w;

    if (strcmp(rein__json_str(m, "role"), "tool") != 0 ||
        !json_is_true(json_object_get(
            rein__history_answered_call(h, i, rein__json_str(m, "tool_call_id")), "custom")))
        return responses_encode_message(p, m, out);
    rein_jw_init(&w, out);
    tool_output(&w, m, "custom_tool_call_output");
    return rein_jw_finish(&w);
}

/*
 * True when OpenAI's strict mode takes the schema as it is: every object schema
 * closes its properties (additionalProperties false) and requires all of them,
 * all the way down, with no composition strict mode refuses (allOf, oneOf, not,
 * if). Strict is then on, so the model's arguments always match; otherwise it
 * is off and rein's own validation checks them.
 */
static bool strict_ok(const json_t *s, int depth)
{
    static const char *const nested[] = {"items", "additionalItems", NULL};
    static const char *const maps[] = {"$defs", "definitions", NULL};
    const json_t *props, *req, *v;
    const char *k;
    size_t i;

    if (depth > 10 || !json_is_object(s))
        return false;
    if (json_object_get(s, "allOf") || json_object_get(s, "oneOf") || json_object_get(s, "not") ||
        json_object_get(s, "if"))
        return false;
    props = json_object_get(s, "properties");
    if (props || strcmp(rein__json_str(s, "type"), "object") == 0) {
        if (!json_is_false(json_object_get(s, "additionalProperties")))
            return false;
        req = json_object_get(s, "required");
        json_object_foreach((json_t *)props, k, v)
        {
            bool listed = false;
            json_t *r;
            json_array_foreach(req, i, r)
            {
                listed |= json_is_string(r) && strcmp(json_string_value(r), k) == 0;
            }
            if (!listed || !strict_ok(v, depth + 1))
                return false;
        }
    }
    for (i = 0; nested[i]; i++) {
        v = json_object_get(s, nested[i]);
        if (v && !strict_ok(v, depth + 1))
            return false;
    }
    json_array_foreach(json_object_get(s, "anyOf"), i, v)
    {
        if (!strict_ok(v, depth + 1))
            return false;
    }
    for (i = 0; maps[i]; i++) {
        json_object_foreach(json_object_get(s, maps[i]), k, v)
        {
            if (!strict_ok(v, depth + 1))
                return false;
        }
    }
    return true;
}

static rein_err responses_encode_tools(const rein_provider *p, const rein_model_request *req,
                                       struct rein_buf *out)
{
    struct rein_jw w;

    (void)p;
    rein_jw_init(&w, out);
    rein_jw_arr_begin(&w);
    for (size_t i = 0; i < req->ntools; i++) {
        const struct rein__tool *t = &req->tools[i];
        rein_jw_obj_begin(&w);
        jw_member(&w, "type", "function");
        jw_member(&w, "name", t->name);
        if (t->description)
            jw_member(&w, "description", t->description);
        rein_jw_key(&w, "parameters");
        if (t->parameters)
            rein_jw_json(&w, t->parameters);
        else
            rein_jw_raw(&w, "{\"type\":\"object\",\"properties\":{}}", 33);
        /* The API's default is strict: say so either way. */
        rein_jw_key(&w, "strict");
        rein_jw_bool(&w, t->parameters && strict_ok(t->parameters, 0));
        rein_jw_obj_end(&w);
    }
    rein_jw_arr_end(&w);
    return rein_jw_finish(&w);
}

static void choice_of(struct rein_jw *w, const char *choice, const char *type)
{
    rein_jw_key(w, "tool_choice");
    if (!strcmp(choice, "auto") || !strcmp(choice, "none") || !strcmp(choice, "required")) {
        rein_jw_str(w, choice);
        return;
    }
    rein_jw_obj_begin(w);
    jw_member(w, "type", type);
    jw_member(w, "name", choice);
    rein_jw_obj_end(w);
}

static void tool_choice(struct rein_jw *w, const char *choice)
{
    choice_of(w, choice, "function");
}

/* A choice of a custom tool the caller offered in the API's own words (the gateway's custom
 * tools, decision 0096) names its type. */
static void custom_choice(struct rein_jw *w, const char *choice)
{
    choice_of(w, choice, "custom");
}

/* Whether the request's tool_choice names a custom tool of its more tools. Read only for a
 * choice of one tool: a rare request. */
static bool chooses_custom(const rein_model_request *req)
{
    const char *c = req->tool_choice;
    json_t *more, *t;
    bool found = false;
    size_t i;

    if (!c || !req->more_tools || strcmp(req->more_tools_for, rein__wire_responses.name) != 0 ||
        !strcmp(c, "auto") || !strcmp(c, "none") || !strcmp(c, "required"))
        return false;
    more = rein_json_parse(req->more_tools, req->more_tools_len, 0, NULL);
    json_array_foreach(more, i, t)
    {
        found |=
            !strcmp(rein__json_str(t, "name"), c) && !strcmp(rein__json_str(t, "type"), "custom");
    }
    json_decref(more);
    return found;
}

/* Reasoning models (o-series, gpt-5, codex) return reasoning items that must
 * come back. */
static bool reasoning_model(const char *model)
{
    struct rein__openai_model m;

    rein__openai_model(model, &m);
    return m.reasons;
}

/* The index of the first message after the last assistant message with a stored
 * response id (*id set to it), or 0 when there is none. */
static size_t after_stored(rein_history *h, const char **id)
{
    *id = NULL;
    for (size_t i = rein_history_len(h); i-- > 0;) {
        const json_t *m = rein_history_get(h, i);
        const char *rid = rein__json_str(m, "response_id");
        if (strcmp(rein__json_str(m, "role"), "assistant") == 0 && rid[0]) {
            *id = rid;
            return i + 1;
        }
    }
    return 0;
}

static rein_err responses_build_body(rein_provider *p, const rein_model_request *req,
                                     rein_history *h, struct rein__body *body, rein_error *err)
{
    const char *model = rein__request_model(p, req), *prev = NULL;
    bool store = p->cfg.previous_response_id;
    size_t from = store ? after_stored(h, &prev) : 0;
    enum rein_reasoning effort;
    struct rein_jw w;
    rein_err rc = REIN_OK;

    rein_jw_init(&w, &body->buf);
    rein_jw_obj_begin(&w);
    jw_member(&w, "model", model);
    if (prev)
        jw_member(&w, "previous_response_id", prev);
    rein_jw_key(&w, "input");
    rein_jw_arr_begin(&w);
    rc = rein__jw_history(&w, h, from, p, &rein__wire_responses, err);
    if (rc)
        return rc;
    rein_jw_arr_end(&w);
    rein__jw_tools(&w, req, &rein__wire_responses,
                   chooses_custom(req) ? custom_choice : tool_choice);
    rein__jw_limits(&w, req, "max_output_tokens");
    rein__jw_top_p(&w, req, "top_p");
    rein_jw_key(&w, "stream");
    rein_jw_bool(&w, req->stream);
    /* rein keeps the history: nothing is stored at OpenAI unless
   * previous_response_id is asked for, and then a reasoning model's items come
   * back encrypted with each reply. */
    rein_jw_key(&w, "store");
    rein_jw_bool(&w, store);
    if (!store && reasoning_model(model)) {
        rein_jw_key(&w, "include");
        rein_jw_raw(&w, "[\"reasoning.encrypted_content\"]", 31);
    }
    effort = rein__reasoning_effort(p, req, "reasoning");
    if (effort != REIN_REASONING_UNSET) {
        rein_jw_key(&w, "reasoning");
        rein_jw_obj_begin(&w);
        jw_member(&w, "effort", rein__openai_effort(effort, model));
        rein_jw_obj_end(&w);
    }
    rein__jw_output_responses(&w, req);
    rein__jw_extra(&w, req);
    rein_jw_obj_end(&w);
    rc = rein_jw_finish(&w);
    return rc ? rein_error_set(err, rc, "encoding the request: %s", rein_strerror(rc)) : REIN_OK;
}

const struct rein__wire rein__wire_responses = {
    .name = "openai-responses",
    .path = "/responses",
    .auth = "Authorization: Bearer ",
    .formats = {"openai-responses-sse", "openai-responses-json"},
    .framing = REIN__FRAMING_SSE,
    .stop_max = 0, /* the Responses API has no stop field */
    .reasoning = true,
    .sampling = rein__openai_sampling,
    .output_format = true,
    .decode_payload = responses_payload,
    .decode_body = responses_body,
    .decode_end = responses_end,
    .decode_free = responses_state_free,
    .encode_message = responses_encode_message,
    .encode_in = responses_encode_in,
    .encode_tools = responses_encode_tools,
    .takes_media = responses_takes_media,
    .build_body = responses_build_body,
};
