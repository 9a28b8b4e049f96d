/*
 * The OpenAI chat completions wire protocol, and every server that speaks it (DashScope's
 * compatible mode, vLLM, llama.cpp server, LM Studio, Ollama's /v1, Groq, DeepSeek, xAI).
 *
 * Decoding: each streamed chunk is tokenized once with jsmn and only the fields the reply
 * needs are pulled out (content, reasoning_content / reasoning, refusal, tool_calls by
 * index, finish_reason, usage); no tree is built per chunk. Quirks the recordings show are
 * handled here: usage on every chunk (vLLM, last wins), usage inside the finish chunk
 * (DeepSeek), "finish_reason" absent rather than null (xAI), an empty-arguments delta in the
 * finish chunk (vLLM), "name":"" in continuation deltas, choices:[] chunks (Azure), n > 1
 * streams (choice 0 is assembled, the others noted), in-stream {"error": …} objects (Groq,
 * after HTTP 200), and DashScope's native API (output.choices[].message with the literal
 * finish_reason "null", cumulative usage with input_tokens/output_tokens, error events with
 * {code, message}), and OpenRouter's reasoning_details (kept, merged by index, and sent back).
 *
 * Encoding: messages become chat completion messages (tool results as role "tool" with
 * tool_call_id; assistant tool calls with the raw argument string), cached per message in
 * the history; the body is assembled from the cached pieces.
 */
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include "jpull.h"

#include <ctype.h>
#include <curl/curl.h>
#include <math.h>
#include <stdio.h>

/* ---------------------------------------------------------------------------------------
 * Decoding
 */

static int64_t int_member(const struct jdoc *d, int obj, const char *k1, size_t l1, const char *k2,
                          size_t l2)
{
    int64_t v;
    int i = jget(d, obj, k1, l1);

    if (i < 0 && k2)
        i = jget(d, obj, k2, l2);
    return jint(d, i, &v) ? v : -1;
}

static void take_usage(struct rein_provider_decoder *d, const struct jdoc *doc, int u)
{
    int64_t in, out;

    if (!jis(doc, u, JSMN_OBJECT))
        return;
    in = int_member(doc, u, "prompt_tokens", 13, "input_tokens", 12);
    out = int_member(doc, u, "completion_tokens", 17, "output_tokens", 13);
    rein__asm_usage(&d->a, in, out);
    rein__asm_usage_detail(
        &d->a, int_member(doc, JGET(doc, u, "prompt_tokens_details"), "cached_tokens", 13, NULL, 0),
        int_member(doc, JGET(doc, u, "completion_tokens_details"), "reasoning_tokens", 16, NULL,
                   0));
    /* OpenRouter reports prompt-cache writes (of providers that bill them) here. */
    rein__asm_cache_write(&d->a, int_member(doc, JGET(doc, u, "prompt_tokens_details"),
                                            "cache_write_tokens", 18, NULL, 0));
}

static rein_err take_tool_calls(struct rein_provider_decoder *d, const struct jdoc *doc, int arr)
{
    static const struct jkey call_keys[] = {JK("index"), JK("id"), JK("function")};
    static const struct jkey fn_keys[] = {JK("name"), JK("arguments")};
    int n = doc->t[arr].size;
    int i = arr + 1;

    for (int k = 0; k < n; k++, i = jnext(doc, i)) {
        int64_t index = -1;
        int f[3], fn[2], call;
        rein_err rc;

        if (!jis(doc, i, JSMN_OBJECT))
            continue;
        JFIELDS(doc, i, call_keys, f);
        JFIELDS(doc, f[2], fn_keys, fn);
        (void)jint(doc, f[0], &index);
        call = rein__asm_call(&d->a, index, jstr(doc, f[1]), jstr(doc, fn[0]));
        if (call < 0)
            return call;
        if (jis(doc, fn[1], JSMN_STRING)) {
            rc = rein__asm_call_args(&d->a, (size_t)call, jstr(doc, fn[1]));
        } else if (jis(doc, fn[1], JSMN_OBJECT)) {
            /* A few servers send the arguments as an object: keep its exact text. */
            size_t len;
            const char *raw = jraw(doc, fn[1], &len);
            rc = rein__asm_call_args_raw(&d->a, (size_t)call, raw, len);
        } else {
            rc = REIN_OK;
        }
        if (rc)
            return rc;
    }
    return REIN_OK;
}

/* Appends the string b to the string member key of o (both strings), else sets it. */
static int merge_member(json_t *o, const char *key, json_t *b)
{
    json_t *a = json_object_get(o, key);

    if (json_is_string(a) && json_is_string(b)) {
        size_t la = json_string_length(a), lb = json_string_length(b);
        char *s = rein_malloc(la + lb + 1);
        int bad;
        if (!s)
            return -1;
        memcpy(s, json_string_value(a), la);
        memcpy(s + la, json_string_value(b), lb);
        s[la + lb] = '\0';
        bad = json_string_setn(a, s, la + lb);
        rein_free(s);
        return bad;
    }
    return json_is_null(b) ? 0 : json_object_set(o, key, b);
}

/*
 * OpenRouter's reasoning_details: each item a {"type": "reasoning.text" | "reasoning.summary" |
 * "reasoning.encrypted", "text" | "summary" | "data", "signature", "id", "format", "index"}.
 * A stream sends an item in pieces with the same index and type (the text in parts, then
 * the signature): the text members are joined, the others take the latest non-null value.
 * Reasoning chunks are few next to text chunks, so a small tree here costs little.
 */
static rein_err take_reasoning_details(struct rein_provider_decoder *d, const struct jdoc *doc,
                                       int arr)
{
    rein_model_response *r = d->r;
    json_t *items = jtree(doc, arr), *it, *v;
    const char *key;
    size_t i;
    int bad = 0;

    if (!items)
        return REIN_ENOMEM;
    if (!r->reasoning_details && !(r->reasoning_details = json_array())) {
        json_decref(items);
        return REIN_ENOMEM;
    }
    json_array_foreach(items, i, it)
    {
        json_t *same = NULL, *idx = json_object_get(it, "index"), *old;
        size_t k;
        if (!json_is_object(it))
            continue;
        json_array_foreach(r->reasoning_details, k, old)
        {
            if (json_is_integer(idx) && json_equal(json_object_get(old, "index"), idx) &&
                json_equal(json_object_get(old, "type"), json_object_get(it, "type")))
                same = old;
        }
        if (!same) {
            bad |= json_array_append(r->reasoning_details, it);
            continue;
        }
        json_object_foreach(it, key, v)
        {
            bool joined = !strcmp(key, "text") || !strcmp(key, "summary") || !strcmp(key, "data");
            if (joined)
                bad |= merge_member(same, key, v);
            else if (!json_is_null(v))
                bad |= json_object_set(same, key, v);
        }
    }
    json_decref(items);
    return bad ? REIN_ENOMEM : REIN_OK;
}

/*
 * A content array, as Mistral's reasoning models (Magistral, and others asked for a
 * reasoning_effort) write their answers: {"type": "text", "text"} chunks are the answer, and
 * a {"type": "thinking", "thinking": [...]} chunk holds the reasoning as text chunks of its
 * own. Other chunks (references, images) carry neither and are passed over.
 */
static rein_err take_thinking(struct rein_provider_decoder *d, const struct jdoc *doc, int arr)
{
    int n = jis(doc, arr, JSMN_ARRAY) ? doc->t[arr].size : 0, c = arr + 1;
    rein_err rc = REIN_OK;

    for (int k = 0; k < n && !rc; k++, c = jnext(doc, c)) {
        int text = JGET(doc, c, "text");
        if (JEQ(doc, JGET(doc, c, "type"), "text") && jis(doc, text, JSMN_STRING))
            rc = rein__asm_reasoning(&d->a, jstr(doc, text));
    }
    return rc;
}

static rein_err take_text_chunks(struct rein_provider_decoder *d, const struct jdoc *doc, int arr)
{
    int n = doc->t[arr].size, c = arr + 1;
    rein_err rc = REIN_OK;

    for (int k = 0; k < n && !rc; k++, c = jnext(doc, c)) {
        int type = JGET(doc, c, "type"), text = JGET(doc, c, "text");
        if (JEQ(doc, type, "text") && jis(doc, text, JSMN_STRING))
            rc = rein__asm_text(&d->a, jstr(doc, text));
        else if (JEQ(doc, type, "thinking"))
            rc = take_thinking(d, doc, JGET(doc, c, "thinking"));
    }
    return rc;
}

enum {
    D_CONTENT,
    D_REASONING_CONTENT,
    D_REASONING,
    D_REFUSAL,
    D_TOOL_CALLS,
    D_FUNCTION_CALL,
    D_REASONING_DETAILS,
    D_ANNOTATIONS
};

static rein_err take_delta(struct rein_provider_decoder *d, const struct jdoc *doc, int delta)
{
    static const struct jkey keys[] = {
        JK("content"),    JK("reasoning_content"), JK("reasoning"),         JK("refusal"),
        JK("tool_calls"), JK("function_call"),     JK("reasoning_details"), JK("annotations")};
    int f[8], i;
    rein_err rc;

    if (!jis(doc, delta, JSMN_OBJECT))
        return REIN_OK;
    JFIELDS(doc, delta, keys, f);
    if (jis(doc, f[D_CONTENT], JSMN_STRING)) {
        rc = rein__asm_text(&d->a, jstr(doc, f[D_CONTENT]));
        if (rc)
            return rc;
    } else if (jis(doc, f[D_CONTENT], JSMN_ARRAY)) {
        rc = take_text_chunks(d, doc, f[D_CONTENT]);
        if (rc)
            return rc;
    }
    /* vLLM sends "reasoning" and "reasoning_content" with the same text: take one. */
    i = f[D_REASONING_CONTENT];
    if (!jis(doc, i, JSMN_STRING) || doc->t[i].end == doc->t[i].start)
        i = f[D_REASONING];
    if (jis(doc, i, JSMN_STRING)) {
        rc = rein__asm_reasoning(&d->a, jstr(doc, i));
        if (rc)
            return rc;
    }
    if (jis(doc, f[D_REFUSAL], JSMN_STRING)) {
        rc = rein__asm_refusal(&d->a, jstr(doc, f[D_REFUSAL]));
        if (rc)
            return rc;
    }
    if (jis(doc, f[D_REASONING_DETAILS], JSMN_ARRAY) && doc->t[f[D_REASONING_DETAILS]].size > 0) {
        rc = take_reasoning_details(d, doc, f[D_REASONING_DETAILS]);
        if (rc)
            return rc;
    }
    /* A search model's url citations point into the text before them. */
    if (jis(doc, f[D_ANNOTATIONS], JSMN_ARRAY) && doc->t[f[D_ANNOTATIONS]].size > 0) {
        json_t *v = jtree(doc, f[D_ANNOTATIONS]);
        rc = v ? rein__asm_annotations(&d->a, v) : REIN_ENOMEM;
        if (rc)
            return rc;
    }
    if (jis(doc, f[D_TOOL_CALLS], JSMN_ARRAY)) {
        rc = take_tool_calls(d, doc, f[D_TOOL_CALLS]);
        if (rc)
            return rc;
    }
    i = f[D_FUNCTION_CALL]; /* the pre-tools form */
    if (jis(doc, i, JSMN_OBJECT)) {
        struct rein__jstr none = {"", 0, false};
        int call = rein__asm_call(&d->a, 0, none, jstr(doc, JGET(doc, i, "name")));
        if (call < 0)
            return call;
        return rein__asm_call_args(&d->a, (size_t)call, jstr(doc, JGET(doc, i, "arguments")));
    }
    return REIN_OK;
}

rein_err rein__openai_close_calls(struct rein_provider_decoder *d)
{
    for (size_t i = 0; i < d->r->ncalls; i++) {
        rein_err rc = rein__asm_call_close(&d->a, i);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

static rein_err take_choices(struct rein_provider_decoder *d, const struct jdoc *doc, int arr,
                             bool whole)
{
    int n = doc->t[arr].size;
    int c = arr + 1;

    for (int k = 0; k < n; k++, c = jnext(doc, c)) {
        static const struct jkey keys[] = {JK("index"), JK("delta"), JK("message"),
                                           JK("finish_reason"), JK("logprobs")};
        int64_t index = 0;
        int f[5], delta, fr;
        rein_err rc;

        if (!jis(doc, c, JSMN_OBJECT))
            continue;
        JFIELDS(doc, c, keys, f);
        (void)jint(doc, f[0], &index);
        if (index != 0) {
            d->a.other_choices = true;
            continue;
        }
        /* before the text they score, so that a listener has them when the text comes */
        if (jis(doc, f[4], JSMN_OBJECT)) {
            json_t *v = jtree(doc, f[4]);
            rc = v ? rein__asm_logprobs(&d->a, v) : REIN_ENOMEM;
            if (rc)
                return rc;
        }
        delta = jis(doc, f[1], JSMN_OBJECT) ? f[1] : f[2];
        rc = take_delta(d, doc, delta);
        if (rc)
            return rc;
        fr = f[3];
        if (JEQ(doc, fr, "error")) {
            /* OpenRouter ends a choice that failed upstream this way, next to an "error"
             * object: the reply did not end normally, and open calls stay unfinished. */
            rc = rein__asm_finish_reason(&d->a, jstr(doc, fr));
            if (rc)
                return rc;
        } else if (jis(doc, fr, JSMN_STRING) && !JEQ(doc, fr, "null") &&
                   doc->t[fr].end > doc->t[fr].start) {
            rc = rein__asm_finish_reason(&d->a, jstr(doc, fr));
            if (!rc)
                rc = rein__openai_close_calls(d); /* a finished choice has finished calls */
            if (rc)
                return rc;
            rein__asm_complete(&d->a);
        } else if (whole) {
            rc = rein__openai_close_calls(d);
            if (rc)
                return rc;
        }
    }
    return REIN_OK;
}

/* An error object: the inner "error" member when it is one, else a message string wrapped. */
static json_t *error_value(const struct jdoc *doc, int i)
{
    json_t *v = jtree(doc, i);

    if (v && !json_is_object(v)) {
        json_t *o = json_object();
        if (o && json_object_set_new(o, "message", v) == 0)
            return o;
        json_decref(o);
        json_decref(v);
        return NULL;
    }
    return v;
}

/* One chunk (or body) object. */
enum { O_ERROR, O_CHOICES, O_OUTPUT, O_USAGE, O_TYPE, O_CODE, O_MESSAGE, O_ID, O_MODEL };

static rein_err take_object(struct rein_provider_decoder *d, const struct jdoc *doc, int obj,
                            const char *event, bool whole)
{
    static const struct jkey keys[] = {JK("error"),   JK("choices"), JK("output"),
                                       JK("usage"),   JK("type"),    JK("code"),
                                       JK("message"), JK("id"),      JK("model")};
    int f[9], e, choices;
    bool known = false;
    rein_err rc;

    JFIELDS(doc, obj, keys, f);
    e = f[O_ERROR];
    if (e >= 0 && !jnull(doc, e)) {
        rein__asm_error(&d->a, error_value(doc, e));
        known = true;
    }
    choices = f[O_CHOICES];
    if (!jis(doc, choices, JSMN_ARRAY) && jis(doc, f[O_OUTPUT], JSMN_OBJECT))
        choices = JGET(doc, f[O_OUTPUT], "choices"); /* DashScope's native API */
    if (!known && !jis(doc, choices, JSMN_ARRAY) &&
        ((event && strcmp(event, "error") == 0) || (f[O_CODE] >= 0 && f[O_MESSAGE] >= 0))) {
        /* DashScope's native errors: {code, message, request_id} as the body or an event. */
        rein__asm_error(&d->a, jtree(doc, obj));
        known = true;
    }
    if (jis(doc, choices, JSMN_ARRAY)) {
        rc = rein__asm_identity(&d->a, jstr(doc, f[O_ID]), jstr(doc, f[O_MODEL]));
        if (!rc)
            rc = take_choices(d, doc, choices, whole);
        if (rc)
            return rc;
        known = true;
    }
    /* A usage-only chunk; an object with a "type" is another wire's event (Anthropic). */
    if (f[O_USAGE] >= 0 && (known || !jis(doc, f[O_TYPE], JSMN_STRING))) {
        take_usage(d, doc, f[O_USAGE]);
        known = true;
    }
    if (known)
        d->recognized++;
    return REIN_OK;
}

rein_err rein__openai_payload(struct rein_provider_decoder *d, const char *event, const char *p,
                              size_t len, rein_error *err)
{
    struct jdoc doc;
    size_t n;
    int r;

    if (jblank(p, len))
        return REIN_OK;
    n = rein__decoder_saw(d, p, len);
    if (len >= 6 && p[0] == '[' && memcmp(p, "[DONE]", 6) == 0 && jblank(p + 6, len - 6)) {
        d->done_seen = true;
        d->recognized++;
        rein__asm_complete(&d->a);
        return REIN_OK;
    }
    if (!d->general_only) {
        r = rein__openai_chunk_fast(d, p, len);
        if (r != 0)
            return r > 0 ? REIN_OK : r;
    }
    r = jdoc_payload(d, event, p, len, n, &doc, err);
    if (r <= 0)
        return r;
    /* Several values in one payload (data lines with no blank line between): each counts. */
    for (int i = 0; i < doc.n; i = jnext(&doc, i)) {
        if (doc.t[i].type != JSMN_OBJECT)
            return rein__decoder_bad(d, n, p, len, "a chunk must be a JSON object", err);
        rein_err rc = take_object(d, &doc, i, event, false);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

rein_err rein__openai_body(struct rein_provider_decoder *d, const char *p, size_t len,
                           rein_error *err)
{
    struct jdoc doc;
    rein_err rc;
    int r = 0;

    if (d->general_only || jblank(p, len)) {
        rc = jdoc_body(d, p, len, &doc, err);
    } else {
        /* The one-pass reader takes the usual bodies (oachunk.c); the rest are tokenized. */
        rein__decoder_saw(d, p, len);
        r = rein__openai_body_fast(d, p, len);
        if (r < 0)
            return r;
        rc = r ? REIN_OK : jdoc_body_seen(d, p, len, &doc, err);
    }
    if (rc)
        return rc;
    if (r == 0 && (rc = take_object(d, &doc, 0, NULL, true)) != REIN_OK)
        return rc;
    if (!d->recognized)
        return rein__decoder_bad(d, 0, p, len, "no choices, output or error member", err);
    if (!d->r->error)
        rein__asm_complete(&d->a);
    return rein__openai_close_calls(d);
}

/* ---------------------------------------------------------------------------------------
 * Encoding
 */

/* DashScope's native API writes its messages with this wire's pieces but takes no media in
 * them (its text-generation endpoint): a variant of their own. */
#define V_NO_MEDIA (1u << 31)

static unsigned openai_variant(const rein_provider *p)
{
    return (p->cfg.quirks & (Q_SEND_REASONING | Q_MISTRAL | Q_REASONING_ON_CALLS | Q_KIMI)) |
           (p->wire && p->wire->takes_media ? 0 : V_NO_MEDIA);
}

/* The content part a user message's attachment is on this wire ("image_url", "file",
 * "input_audio"), or NULL for a medium it does not take there. */
static const char *user_part_type(const char *mime)
{
    static const char *const map[][2] = {
        {"image/png", "image_url"},    {"image/jpeg", "image_url"},  {"image/webp", "image_url"},
        {"image/gif", "image_url"},    {"application/pdf", "file"},  {"audio/wav", "input_audio"},
        {"audio/mpeg", "input_audio"}, {"audio/mp3", "input_audio"},
    };

    for (size_t i = 0; i < REIN_ARRAY_SIZE(map); i++)
        if (strcmp(mime, map[i][0]) == 0)
            return map[i][1];
    return NULL;
}

static bool openai_takes_media(const char *mime)
{
    return user_part_type(mime) != NULL;
}

/* An attachment as a content part of a user message: an image as an image_url data URL, a PDF
 * as a file with its file_data, audio as input_audio (base64 and its format, wav or mp3). */
static bool user_part(struct rein_jw *w, const json_t *att)
{
    const char *mime = rein__json_str(att, "mime_type"), *type = user_part_type(mime);

    if (!type)
        return false;
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, type);
    rein_jw_key(w, type);
    rein_jw_obj_begin(w);
    if (type[0] == 'f') {
        rein__jw_file_data(w, att);
    } else if (type[0] == 'i' && type[1] == 'm') {
        rein__jw_data_url(w, "url", att);
    } else {
        REIN_JW_KEY(w, "data");
        rein_jw_str(w, rein__json_str(att, "data"));
        REIN_JW_KEY(w, "format");
        rein_jw_str(w, strcmp(mime, "audio/wav") == 0 ? "wav" : "mp3");
    }
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
    return true;
}

/* A user message's content: text, or with attachments content parts (its text, then a part
 * per attachment, the ones not taken named in a last text part); a wire of no media (DashScope
 * native) gets its text with the notes. */
static void user_content(const rein_provider *p, struct rein_jw *w, const json_t *msg)
{
    const char *content = rein__json_str(msg, "content");

    REIN_JW_KEY(w, "content");
    if (!json_array_size(json_object_get(msg, "attachments"))) {
        rein_jw_str(w, content);
        return;
    }
    if (!p->wire || !p->wire->takes_media) {
        rein__jw_tool_text(w, msg, "DashScope's native API");
        return;
    }
    rein_jw_arr_begin(w);
    if (content[0]) {
        rein_jw_obj_begin(w);
        REIN_JW_KEY(w, "type");
        rein_jw_str(w, "text");
        REIN_JW_KEY(w, "text");
        rein_jw_str(w, content);
        rein_jw_obj_end(w);
    }
    rein__jw_attachments(w, msg, "the OpenAI chat completions API", "text", user_part);
    rein_jw_arr_end(w);
}

/*
 * A tool message's text on this wire (decision 0098): its content, then a note per attachment,
 * either that it follows in the user message after the turn's tool results (the media this
 * wire takes in a user message) or that it was not sent. A wire of no media (DashScope native)
 * names every attachment as not sent.
 */
static void tool_text(const rein_provider *p, struct rein_jw *w, const json_t *msg)
{
    if (!p->wire || !p->wire->takes_media) {
        rein__jw_tool_text(w, msg, "DashScope's native API");
        return;
    }
    rein__jw_text_notes(w, msg, "the OpenAI chat completions API", openai_takes_media,
                        "is in the user message after the tool results: the OpenAI chat "
                        "completions API takes media in user messages only");
}

/*
 * A call id as Mistral takes it, [a-zA-Z0-9]{9} (decision 0105): one of that form as it is (the
 * ids Mistral itself writes), any other as nine base-62 digits of its hash. The same id maps to
 * the same nine characters in every request, so an assistant message's tool_calls[].id and the
 * tool message's tool_call_id agree without rein keeping anything, and the client keeps its ids.
 */
static const char *mistral_id(const char *id, char out[10])
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    size_t n = strlen(id), i;
    uint64_t h;

    for (i = 0; i < n && isalnum((unsigned char)id[i]); i++)
        ;
    if (n == 9 && i == n)
        return id;
    h = rein__hash64(UINT64_C(0x6d697374726131), id, n);
    for (i = 0; i < 9; i++, h /= 62)
        out[i] = digits[h % 62];
    out[9] = '\0';
    return out;
}

/* Writes key: the call id msg holds under from, as the provider takes ids. */
static void jw_call_id(const rein_provider *p, struct rein_jw *w, const char *key,
                       const json_t *msg, const char *from)
{
    const char *id = rein__json_str(msg, from);
    char mapped[10];

    rein_jw_key(w, key);
    rein_jw_str(w, (p->cfg.quirks & Q_MISTRAL) ? mistral_id(id, mapped) : id);
}

/* Whether tool message msg has an attachment this wire carries in a user message. */
static bool has_user_media(const json_t *msg)
{
    size_t i;
    json_t *a;

    json_array_foreach(json_object_get(msg, "attachments"), i, a)
    {
        if (user_part_type(rein__json_str(a, "mime_type")))
            return true;
    }
    return false;
}

/*
 * The user message that carries the media of the tool results from..to-1 of h (decision
 * 0098): the chat completions API takes media in user messages only, and its tool messages
 * must follow their assistant message with nothing between them, so the media of a turn's
 * tool results come after the last of them, each result's media after a text part naming its
 * call. Nothing is written when none of them has media this wire takes in a user message
 * (nor for a wire of no media). Returns whether it wrote the message.
 */
static bool tool_media_message(const rein_provider *p, struct rein_jw *w, const rein_history *h,
                               size_t from, size_t to)
{
    bool open = false;

    if (!p->wire || !p->wire->takes_media)
        return false;
    for (size_t i = from; i < to; i++) {
        const json_t *m = rein_history_get(h, i);
        const char *name = rein__json_str(m, "name"), *id;
        char *intro, mapped[10];
        size_t k;
        json_t *a;
        if (!m || !has_user_media(m))
            continue;
        if (!open) {
            rein_jw_obj_begin(w);
            REIN_JW_KEY(w, "role");
            rein_jw_str(w, "user");
            REIN_JW_KEY(w, "content");
            rein_jw_arr_begin(w);
            open = true;
        }
        id = rein__json_str(m, "tool_call_id");
        if (p->cfg.quirks & Q_MISTRAL)
            id = mistral_id(id, mapped);
        intro = rein_asprintf("The media of the result of tool call %s%s%s%s (tool messages "
                              "carry text only):",
                              id, name[0] ? " (" : "", name, name[0] ? ")" : "");
        if (!intro)
            w->err = REIN_ENOMEM;
        rein_jw_obj_begin(w);
        REIN_JW_KEY(w, "type");
        rein_jw_str(w, "text");
        REIN_JW_KEY(w, "text");
        rein_jw_str(w, intro ? intro : "");
        rein_jw_obj_end(w);
        rein_free(intro);
        json_array_foreach(json_object_get(m, "attachments"), k, a)
        {
            (void)user_part(w, a); /* the others are named in the tool message */
        }
    }
    if (open) {
        rein_jw_arr_end(w);
        rein_jw_obj_end(w);
    }
    return open;
}

/* The first of the tool results that end just before message end (end itself when message
 * end-1 is not one). */
static size_t tool_run_start(const rein_history *h, size_t end)
{
    while (end > 0 && rein__history_role(h, end - 1) == 't')
        end--;
    return end;
}

static void jw_member_str(struct rein_jw *w, const char *key, const json_t *msg, const char *from)
{
    rein_jw_key(w, key);
    rein_jw_str(w, rein__json_str(msg, from));
}

static void encode_calls(const rein_provider *p, struct rein_jw *w, const json_t *calls)
{
    size_t i;
    json_t *c;

    REIN_JW_KEY(w, "tool_calls");
    rein_jw_arr_begin(w);
    json_array_foreach(calls, i, c)
    {
        const char *raw = rein__json_str(c, "arguments");
        rein_jw_obj_begin(w);
        jw_call_id(p, w, "id", c, "id");
        REIN_JW_KEY(w, "type");
        rein_jw_str(w, "function");
        REIN_JW_KEY(w, "function");
        rein_jw_obj_begin(w);
        jw_member_str(w, "name", c, "name");
        REIN_JW_KEY(w, "arguments");
        /* The exact string the model sent; a zero-argument call's "" goes back as "{}". */
        bool blank = true;
        for (const char *q = raw; *q && blank; q++)
            blank = *q == ' ' || *q == '\n' || *q == '\r' || *q == '\t';
        rein_jw_str(w, blank ? "{}" : raw);
        rein_jw_obj_end(w);
        rein_jw_obj_end(w);
    }
    rein_jw_arr_end(w);
}

/* The reasoning_content a thinking DeepSeek or Kimi needs on a tool turn: the one kept, else
 * empty, or for Kimi, which counts an empty one as missing, a single space. */
static const char *call_reasoning(const rein_provider *p, const char *kept)
{
    return kept[0] || !(p->cfg.quirks & Q_KIMI) ? kept : " ";
}

/* A tool turn as its client wrote it, which the SDK's types leave without reasoning_content,
 * with the one the upstream needs. */
static void jw_with_reasoning(const rein_provider *p, struct rein_jw *w, const json_t *as_sent)
{
    const char *key;
    json_t *v;

    rein_jw_obj_begin(w);
    json_object_foreach((json_t *)as_sent, key, v)
    {
        if (strcmp(key, "reasoning_content") == 0)
            continue;
        rein_jw_key(w, key);
        rein_jw_json(w, v);
    }
    REIN_JW_KEY(w, "reasoning_content");
    rein_jw_str(w, call_reasoning(p, rein__json_str(as_sent, "reasoning_content")));
    rein_jw_obj_end(w);
}

static rein_err openai_encode_message(const rein_provider *p, const json_t *msg,
                                      struct rein_buf *out)
{
    const char *role = rein__json_str(msg, "role");
    const json_t *calls = json_object_get(msg, "tool_calls");
    bool has_calls = json_array_size(calls) > 0;
    const json_t *as_sent = json_object_get(msg, "openai_message");
    struct rein_jw w;

    rein_jw_init(&w, out);
    if (json_is_object(as_sent) && !(p->cfg.quirks & Q_MISTRAL)) {
        /* the message as a client wrote it on this wire stands for it (history.h); not for
         * Mistral, whose call ids are rein's to write (mistral_id) */
        if (has_calls && (p->cfg.quirks & Q_REASONING_ON_CALLS))
            jw_with_reasoning(p, &w, as_sent);
        else
            rein_jw_json(&w, as_sent);
        return rein_jw_finish(&w);
    }
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "role");
    rein_jw_str(&w, role);
    if (strcmp(role, "tool") == 0) {
        jw_call_id(p, &w, "tool_call_id", msg, "tool_call_id");
        REIN_JW_KEY(&w, "content");
        tool_text(p, &w, msg);
    } else if (strcmp(role, "assistant") == 0) {
        const char *content = rein__json_str(msg, "content");
        REIN_JW_KEY(&w, "content");
        if (!content[0] && has_calls)
            rein_jw_null(&w);
        else
            rein_jw_str(&w, content);
        if (has_calls)
            encode_calls(p, &w, calls);
        /* Mistral's assistant message has no member for either (its 422 names them) */
        if (json_object_get(msg, "refusal") && !(p->cfg.quirks & Q_MISTRAL)) {
            REIN_JW_KEY(&w, "refusal");
            rein_jw_str(&w, rein__json_str(msg, "refusal"));
        }
        /* DeepSeek and Kimi refuse a tool-calling turn without its reasoning_content in
         * thinking mode ("must be passed back"), and ignore it on other turns; Kimi counts
         * an empty one as missing */
        if (((p->cfg.quirks & Q_SEND_REASONING) && rein__json_str(msg, "reasoning")[0]) ||
            ((p->cfg.quirks & Q_REASONING_ON_CALLS) && has_calls)) {
            REIN_JW_KEY(&w, "reasoning_content");
            rein_jw_str(&w, call_reasoning(p, rein__json_str(msg, "reasoning")));
        }
        /* OpenRouter asks for its reasoning_details back as they came. */
        if (json_array_size(json_object_get(msg, "reasoning_details")) &&
            !(p->cfg.quirks & Q_MISTRAL)) {
            REIN_JW_KEY(&w, "reasoning_details");
            rein_jw_json(&w, json_object_get(msg, "reasoning_details"));
        }
    } else if (strcmp(role, "user") == 0) {
        user_content(p, &w, msg);
    } else {
        jw_member_str(&w, "content", msg, "content");
    }
    rein_jw_obj_end(&w);
    return rein_jw_finish(&w);
}

/*
 * Mistral refuses a user (or system) message right after a tool message ("Unexpected role
 * 'user' after role 'tool'"): an assistant message goes between them, saying only that the
 * results came (decision 0105). Writes it, with the comma after it, when p is Mistral's.
 */
#define MISTRAL_BRIDGE "(tool results received)"
static rein_err mistral_bridge(const rein_provider *p, struct rein_buf *out)
{
    static const char bridge[] = "{\"role\":\"assistant\",\"content\":\"" MISTRAL_BRIDGE "\"},";

    if (!(p->cfg.quirks & Q_MISTRAL))
        return REIN_OK;
    return rein_buf_add(out, bridge, sizeof(bridge) - 1);
}

/* Whether any of the tool results from..to-1 of h has media for a user message. */
static bool tools_have_media(const rein_provider *p, const rein_history *h, size_t from, size_t to)
{
    for (size_t i = from; p->wire && p->wire->takes_media && i < to; i++) {
        const json_t *m = rein_history_get(h, i);
        if (m && has_user_media(m))
            return true;
    }
    return false;
}

/*
 * Message i's piece: the message, after the user message with the media of the tool results
 * just before it when it is the first message after them (decision 0098). The media of tool
 * results that end the history are written by build_body, after the pieces.
 */
static rein_err openai_encode_in(const rein_provider *p, const rein_history *h, size_t i,
                                 struct rein_buf *out)
{
    const json_t *m = rein_history_get(h, i);
    size_t from = rein__history_role(h, i) == 't' ? i : tool_run_start(h, i);

    if (!m)
        return REIN_ENOMEM;
    if (from < i && (tools_have_media(p, h, from, i) || rein__history_role(h, i) == 'u' ||
                     rein__history_role(h, i) == 's')) {
        rein_err rc = mistral_bridge(p, out);
        if (rc)
            return rc;
    }
    if (from < i) {
        struct rein_jw w;
        rein_err rc;
        rein_jw_init(&w, out);
        if (tool_media_message(p, &w, h, from, i)) {
            rc = rein_jw_finish(&w);
            if (!rc)
                rc = rein_buf_addch(out, ',');
            if (rc)
                return rc;
        }
    }
    return openai_encode_message(p, m, out);
}

rein_err rein__openai_encode_tools(const rein_provider *p, const rein_model_request *req,
                                   struct rein_buf *out)
{
    struct rein_jw w;

    (void)p;
    rein_jw_init(&w, out);
    rein_jw_arr_begin(&w);
    for (size_t i = 0; i < req->ntools; i++) {
        const struct rein__tool *t = &req->tools[i];
        rein_jw_obj_begin(&w);
        REIN_JW_KEY(&w, "type");
        rein_jw_str(&w, "function");
        REIN_JW_KEY(&w, "function");
        rein_jw_obj_begin(&w);
        REIN_JW_KEY(&w, "name");
        rein_jw_str(&w, t->name);
        if (t->description) {
            REIN_JW_KEY(&w, "description");
            rein_jw_str(&w, t->description);
        }
        REIN_JW_KEY(&w, "parameters");
        if (t->parameters)
            rein_jw_json(&w, t->parameters);
        else
            rein_jw_raw(&w, "{\"type\":\"object\",\"properties\":{}}", 33);
        rein_jw_obj_end(&w);
        rein_jw_obj_end(&w);
    }
    rein_jw_arr_end(&w);
    return rein_jw_finish(&w);
}

void rein__openai_tool_choice(struct rein_jw *w, const char *choice)
{
    REIN_JW_KEY(w, "tool_choice");
    if (!strcmp(choice, "auto") || !strcmp(choice, "none") || !strcmp(choice, "required")) {
        rein_jw_str(w, choice);
        return;
    }
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "type");
    rein_jw_str(w, "function");
    REIN_JW_KEY(w, "function");
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "name");
    rein_jw_str(w, choice);
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
}

/* Mistral's tool_choice: its word for "call some tool" is "any" (its API reference). */
static void mistral_tool_choice(struct rein_jw *w, const char *choice)
{
    if (strcmp(choice, "required") != 0) {
        rein__openai_tool_choice(w, choice);
        return;
    }
    REIN_JW_KEY(w, "tool_choice");
    rein_jw_str(w, "any");
}

/* The members added to the body (the gateway's client's, a config's extra): Mistral's name
 * for OpenAI's seed is random_seed, and a random_seed given too wins. */
static void jw_extra(const rein_provider *p, struct rein_jw *w, const rein_model_request *req)
{
    const char *key;
    json_t *v;

    if (!(p->cfg.quirks & Q_MISTRAL)) {
        rein__jw_extra(w, req);
        return;
    }
    json_object_foreach(req->extra, key, v)
    {
        if (!strcmp(key, "seed") && json_object_get(req->extra, "random_seed"))
            continue;
        rein_jw_key(w, strcmp(key, "seed") ? key : "random_seed");
        rein_jw_json(w, v);
    }
}

static rein_err openai_build_body(rein_provider *p, const rein_model_request *req, rein_history *h,
                                  struct rein__body *body, rein_error *err)
{
    struct rein_jw w;
    rein_err rc;
    const char *msgs;
    size_t len, from;

    /* The messages first: with their size known the body is allocated once, and a large
     * block of them is not copied at all (rein__body_block). */
    rc = rein__history_joined(h, p, &rein__wire_openai, &msgs, &len);
    if (!rc)
        rc = rein_buf_grow(&body->buf,
                           (len < REIN__SPLICE_MIN ? len : 0) + req->tools_len + BODY_SLACK);
    if (rc)
        return rein_error_set(err, rc, "encoding the history: %s", rein_strerror(rc));
    rein_jw_init(&w, &body->buf);
    rein_jw_obj_begin(&w);
    REIN_JW_KEY(&w, "model");
    rein_jw_str(&w, rein__request_model(p, req));
    REIN_JW_KEY(&w, "messages");
    rein_jw_arr_begin(&w);
    rein__body_block(body, &w, msgs, len); /* the items, commas included */
    /* the media of the tool results that end the history: no message after them to carry
     * them in its piece (openai_encode_in) */
    from = tool_run_start(h, rein_history_len(h));
    if ((p->cfg.quirks & Q_MISTRAL) && tools_have_media(p, h, from, rein_history_len(h))) {
        rein_jw_obj_begin(&w); /* mistral_bridge's message */
        REIN_JW_KEY(&w, "role");
        rein_jw_str(&w, "assistant");
        REIN_JW_KEY(&w, "content");
        rein_jw_str(&w, MISTRAL_BRIDGE);
        rein_jw_obj_end(&w);
    }
    (void)tool_media_message(p, &w, h, from, rein_history_len(h));
    rein_jw_arr_end(&w);
    rein__jw_tools(&w, req, &rein__wire_openai,
                   (p->cfg.quirks & Q_MISTRAL) ? mistral_tool_choice : rein__openai_tool_choice);
    rein__jw_limits(&w, req,
                    (p->cfg.quirks & Q_MAX_COMPLETION_TOKENS) ? "max_completion_tokens"
                                                              : "max_tokens");
    rein__jw_top_p(&w, req, "top_p");
    rein__jw_stop(&w, req, "stop");
    REIN_JW_KEY(&w, "stream");
    rein_jw_bool(&w, req->stream);
    if (req->stream && !(p->cfg.quirks & Q_NO_STREAM_OPTIONS)) {
        REIN_JW_KEY(&w, "stream_options");
        rein_jw_raw(&w, "{\"include_usage\":true}", 22);
    }
    rein__jw_thinking(&w, p, req);
    rein__jw_reasoning_effort(&w, p, req);
    rein__jw_output_openai(&w, req);
    jw_extra(p, &w, req);
    rein_jw_obj_end(&w);
    rc = rein_jw_finish(&w);
    return rc ? rein_error_set(err, rc, "encoding the request: %s", rein_strerror(rc)) : REIN_OK;
}

const struct rein__wire rein__wire_openai = {
    .name = "openai",
    .path = "/chat/completions",
    .auth = "Authorization: Bearer ",
    .formats = {"openai-sse", "openai-json"},
    .alias_formats = {"dashscope-sse", "dashscope-json"}, /* DashScope's native stream too */
    .framing = REIN__FRAMING_SSE,
    .stop_max = 4, /* "Up to 4 sequences" (the chat completions reference) */
    .reasoning = true,
    .output_format = true,
    .decode_payload = rein__openai_payload,
    .decode_body = rein__openai_body,
    .variant = openai_variant,
    .encode_message = openai_encode_message,
    .encode_in = openai_encode_in,
    .encode_tools = rein__openai_encode_tools,
    .sampling = rein__openai_sampling,
    .takes_media = openai_takes_media,
    .build_body = openai_build_body,
};
