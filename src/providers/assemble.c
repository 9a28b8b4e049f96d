/*
 * The response assembler: every wire decoder reports what it reads here (text, reasoning,
 * refusal, tool-call pieces keyed by the wire's index, usage, finish reason, errors) and the
 * events go out from here, so all providers assemble and report a reply the same way.
 *
 * Tool calls are assembled by the wire's index. A call that reappears at an index with a
 * different id is a new call (Ollama's OpenAI endpoint sends every call at index 0); an
 * empty name or id in a continuation delta changes nothing (DashScope, GLM). A call's status
 * is decided when the wire says it is finished or when the reply ends (rein__call_decide).
 *
 * Text events pass through a small filter so that markup which turns out to be a tool call
 * written as text, or a <think> section, is not shown as answer text while it streams: a
 * suffix that may be the start of a marker is held back until the next delta decides it.
 * The assembled text is decided at the end from the whole reply (textcalls.c); the filter
 * only shapes the events, and what it held back is flushed then.
 */
#include "provider_int.h"

#include <assert.h>
#include <string.h>

#define TEXT_MAX ((size_t)256 << 20)

rein_model_response *rein__response_new(size_t max_bytes)
{
    rein_model_response *r = rein_calloc(1, sizeof(*r));
    size_t max = max_bytes > TEXT_MAX ? max_bytes : TEXT_MAX;

    if (!r)
        return NULL;
    rein_buf_init(&r->text, max);
    rein_buf_init(&r->reasoning, max);
    rein_buf_init(&r->signature, max);
    rein_buf_init(&r->refusal, max);
    r->input_tokens = -1;
    r->output_tokens = -1;
    r->cached_tokens = -1;
    r->reasoning_tokens = -1;
    r->cache_write_tokens = -1;
    r->retry_after_ms = -1;
    return r;
}

/* The seed of made-up call ids, made on first use when it comes from a function. */
static uint64_t id_seed(struct rein__asm *a)
{
    if (a->id_seed_fn) {
        a->id_seed = a->id_seed_fn(a->id_seed_ud);
        a->id_seed_fn = NULL;
    }
    return a->id_seed;
}

void rein__asm_init(struct rein__asm *a, rein_model_response *r,
                    const struct rein_decoder_options *opt, rein_model_event_fn fn, void *ud)
{
    memset(a, 0, sizeof(*a));
    a->r = r;
    a->opt = opt;
    a->fn = fn;
    a->ud = ud;
    a->tmode = TM_START;
    rein_buf_init(&a->emitted, TEXT_MAX);
    rein_buf_init(&a->scratch, TEXT_MAX);
}

void rein__asm_release(struct rein__asm *a)
{
    rein_buf_release(&a->emitted);
    rein_buf_release(&a->scratch);
}

static void emit(struct rein__asm *a, struct rein_model_event *ev)
{
    if (a->fn)
        a->fn(ev, a->ud);
}

/* An event that says only that something happened (its text is empty). */
static void emit_piece_empty(struct rein__asm *a, enum rein_model_event_type type)
{
    struct rein_model_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.text = "";
    emit(a, &ev);
}

static void emit_piece(struct rein__asm *a, enum rein_model_event_type type, size_t index,
                       const char *p, size_t len)
{
    struct rein_model_event ev;

    if (!a->fn || len == 0)
        return;
    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.index = index;
    ev.text = p;
    ev.len = len;
    emit(a, &ev);
}

/* ---- the text event filter ---- */

static bool has_prefix(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n >= l && memcmp(s, lit, l) == 0;
}

/* Longest suffix of s[0..n) that is a proper prefix of lit. */
static size_t partial_suffix(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    size_t k = n < l - 1 ? n : l - 1;

    for (; k > 0; k--) {
        if (memcmp(s + n - k, lit, k) == 0)
            return k;
    }
    return 0;
}

/* The emitted text kept in a->emitted from now on (see emitted_run). */
static rein_err split_emitted(struct rein__asm *a)
{
    rein_err rc;

    if (a->emitted_split)
        return REIN_OK;
    rc = rein_buf_add(&a->emitted, a->r->text.ptr, a->emitted_run);
    if (!rc)
        a->emitted_split = true;
    return rc;
}

/* p is a piece of a->r->text. */
static rein_err emit_text(struct rein__asm *a, const char *p, size_t len)
{
    rein_err rc;

    if (len == 0)
        return REIN_OK;
    if (!a->emitted_split && (size_t)(p - a->r->text.ptr) == a->emitted_run) {
        a->emitted_run += len;
    } else {
        rc = split_emitted(a);
        if (!rc)
            rc = rein_buf_add(&a->emitted, p, len);
        if (rc)
            return rc;
    }
    emit_piece(a, REIN_MEV_TEXT_DELTA, 0, p, len);
    return REIN_OK;
}

/* Bytes that can start call markup ("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "```"):
 * most deltas hold none, and then no marker is compared at all. */
static bool marker_start(unsigned char c)
{
    return c == '<' || c == '[' || c == '`';
}

#define ONES8 UINT64_C(0x0101010101010101)

/* Nonzero when one of the eight bytes of w is c (exact for the lowest such byte). */
static inline uint64_t has8(uint64_t w, unsigned char c)
{
    uint64_t x = w ^ (ONES8 * c);

    return (x - ONES8) & ~x & (ONES8 * 0x80);
}

/* The first byte from i on in s[0..n) that can start a marker, or n. Text deltas are scanned
 * eight bytes at a time: a plain delta has no such byte at all. */
static inline size_t next_marker_start(const char *s, size_t i, size_t n)
{
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (has8(w, '<') | has8(w, '[') | has8(w, '`'))
            break;
    }
    while (i < n && !marker_start((unsigned char)s[i]))
        i++;
    return i;
}

/* Earliest marker in s[0..n): its offset, or n; *which gets the marker. An offered tool's
 * name written as a tag ("<run_command ") counts as one. *plain is set when s holds no byte
 * that can start a marker at all. */
static size_t find_marker(const struct rein__asm *a, const char *s, size_t n, const char **which,
                          bool *plain)
{
    size_t first = next_marker_start(s, 0, n);

    *which = NULL;
    *plain = first == n;
    for (size_t i = first; i < n; i = next_marker_start(s, i + 1, n)) {
        bool partial;
        if (rein__textcalls_tool_tag(a->opt, s + i, n - i, &partial)) {
            *which = "<tool>";
            return i;
        }
        for (size_t m = 0; rein__text_markers[m]; m++) {
            size_t l = strlen(rein__text_markers[m]);
            if (n - i >= l && memcmp(s + i, rein__text_markers[m], l) == 0) {
                *which = rein__text_markers[m];
                return i;
            }
        }
    }
    return n;
}

/* Length of the longest suffix of s[0..n) that may be the start of a marker. */
static size_t marker_holdback(const struct rein__asm *a, const char *s, size_t n)
{
    size_t from = n > 13 ? n - 13 : 0; /* the longest marker is 14 bytes */

    if (a->opt->tool_names) {
        /* A tool tag can be as long as a tool name: look back to the last '<'. */
        const char *lt = memrchr(s, '<', n);
        bool partial = false;
        if (lt && !rein__textcalls_tool_tag(a->opt, lt, (size_t)(s + n - lt), &partial) && partial)
            return (size_t)(s + n - lt);
    }
    for (size_t i = next_marker_start(s, from, n); i < n; i = next_marker_start(s, i + 1, n)) {
        for (size_t m = 0; rein__text_markers[m]; m++) {
            size_t l = strlen(rein__text_markers[m]);
            if (n - i < l && memcmp(s + i, rein__text_markers[m], n - i) == 0)
                return n - i;
        }
    }
    return 0;
}

static rein_err filter_start(struct rein__asm *a, bool *wait)
{
    const char *t = a->r->text.ptr;
    size_t len = a->r->text.len, k = a->tpos;

    while (k < len && (t[k] == ' ' || t[k] == '\n' || t[k] == '\r' || t[k] == '\t'))
        k++;
    *wait = true;
    if (k == len)
        return REIN_OK;
    if (!a->opt->keep_think_tags && has_prefix(t + k, len - k, "<think>")) {
        a->tmode = TM_THINK;
        a->tpos = k + 7;
        *wait = false;
        return REIN_OK;
    }
    if (!a->opt->keep_think_tags && len - k < 7 && memcmp(t + k, "<think>", len - k) == 0)
        return REIN_OK;
    if (t[k] == '{' || t[k] == '[') {
        a->tmode = TM_HOLD; /* may be a bare JSON call: decided at the end */
        return REIN_OK;
    }
    if (a->think_closed)
        a->tpos = k;
    a->tmode = TM_NORMAL;
    *wait = false;
    return REIN_OK;
}

static void filter_think(struct rein__asm *a, bool *wait)
{
    const char *t = a->r->text.ptr;
    size_t len = a->r->text.len;
    const char *close = memmem(t + a->tpos, len - a->tpos, "</think>", 8);

    if (close) {
        emit_piece(a, REIN_MEV_REASONING_DELTA, 0, t + a->tpos, (size_t)(close - t) - a->tpos);
        a->tpos = (size_t)(close - t) + 8;
        a->tmode = TM_START;
        a->think_closed = true;
        *wait = false;
        return;
    }
    size_t hold = partial_suffix(t + a->tpos, len - a->tpos, "</think>");
    emit_piece(a, REIN_MEV_REASONING_DELTA, 0, t + a->tpos, len - a->tpos - hold);
    a->tpos = len - hold;
    *wait = true;
}

/* Whitespace at the end of s[0..n) is held back too: if markup follows, the assembled text
 * will not end with it. */
static size_t without_trailing_space(const char *s, size_t n)
{
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == '\t'))
        n--;
    return n;
}

static rein_err filter_normal(struct rein__asm *a, bool *wait)
{
    const char *t = a->r->text.ptr;
    size_t len = a->r->text.len, n = len - a->tpos, at, show;
    const char *which;
    bool plain;
    rein_err rc;

    at = find_marker(a, t + a->tpos, n, &which, &plain);
    if (which) {
        show = without_trailing_space(t + a->tpos, at);
        rc = emit_text(a, t + a->tpos, show);
        a->fence_at = a->tpos + at;
        a->tpos += show; /* the whitespace before the marker waits for the verdict */
        a->tmode = strcmp(which, "```") == 0 ? TM_FENCE : TM_HOLD;
        *wait = a->tmode == TM_HOLD;
        return rc;
    }
    /* text with no '<', '[' or '`' can end in no part of a marker or tool tag */
    show = without_trailing_space(t + a->tpos, plain ? n : n - marker_holdback(a, t + a->tpos, n));
    rc = emit_text(a, t + a->tpos, show);
    a->tpos += show;
    *wait = true;
    return rc;
}

static rein_err filter_fence(struct rein__asm *a, bool *wait)
{
    const char *t = a->r->text.ptr;
    size_t len = a->r->text.len;
    const char *nl = memchr(t + a->fence_at + 3, '\n', len - a->fence_at - 3);
    const char *close;
    rein_err rc;

    *wait = true;
    if (!nl)
        return REIN_OK;
    close = memmem(nl + 1, (size_t)(t + len - nl - 1), "```", 3);
    if (!close)
        return REIN_OK;
    /* The whitespace before the fence is text either way; the block only if not a call. */
    if (rein__textcalls_fenced_is_call(a, nl + 1, (size_t)(close - nl - 1)))
        rc = emit_text(a, t + a->tpos, a->fence_at - a->tpos);
    else
        rc = emit_text(a, t + a->tpos, (size_t)(close + 3 - t) - a->tpos);
    a->tpos = (size_t)(close + 3 - t);
    a->tmode = TM_NORMAL;
    *wait = false;
    return rc;
}

static rein_err filter_text(struct rein__asm *a)
{
    bool wait = false;
    rein_err rc = REIN_OK;

    if (!a->fn)
        return REIN_OK;
    while (!wait && !rc) {
        switch (a->tmode) {
        case TM_START:
            rc = filter_start(a, &wait);
            break;
        case TM_THINK:
            filter_think(a, &wait);
            break;
        case TM_NORMAL:
            rc = filter_normal(a, &wait);
            break;
        case TM_FENCE:
            rc = filter_fence(a, &wait);
            break;
        default:
            wait = true;
            break;
        }
    }
    return rc;
}

/*
 * The filter's usual step on a long stream, without its loop: in normal text, when what waits
 * (the text held back and the new delta) holds no byte that can start a marker, it is shown
 * but for its trailing whitespace, as filter_normal() shows it, and the filter waits for the
 * next delta; anything else goes through the filter.
 */
static rein_err filter_plain(struct rein__asm *a)
{
    const char *w = a->r->text.ptr + a->tpos;
    size_t n = a->r->text.len - a->tpos, show;

    if (a->tmode != TM_NORMAL || !a->fn || next_marker_start(w, 0, n) != n)
        return filter_text(a);
    show = without_trailing_space(w, n);
    a->tpos += show;
    return emit_text(a, w, show);
}

/* ---- text, reasoning, refusal ---- */

rein_err rein__asm_text(struct rein__asm *a, struct rein__jstr s)
{
    rein_err rc;

    if (s.len == 0)
        return REIN_OK;
    if (!s.esc && !a->hi_text) {
        /* No escape and no surrogate half waiting: the text is these bytes, as
         * rein__json_unescape would copy them (without looking for a backslash again). */
        struct rein_buf *t = &a->r->text;
        if (s.len < t->alloc - t->len) {
            memcpy(t->ptr + t->len, s.p, s.len);
            t->len += s.len;
            t->ptr[t->len] = '\0';
            return filter_plain(a);
        }
        rc = rein_buf_add(t, s.p, s.len);
    } else {
        rc = rein__json_unescape(&a->r->text, s.p, s.len, &a->hi_text);
    }
    return rc ? rc : filter_text(a);
}

static rein_err append_field(struct rein__asm *a, struct rein_buf *b, uint32_t *hi,
                             struct rein__jstr s, enum rein_model_event_type type)
{
    size_t before = b->len;
    rein_err rc;

    if (s.len == 0)
        return REIN_OK;
    rc = rein__json_unescape(b, s.p, s.len, hi);
    if (!rc && type)
        emit_piece(a, type, 0, b->ptr + before, b->len - before);
    return rc;
}

rein_err rein__asm_reasoning(struct rein__asm *a, struct rein__jstr s)
{
    return append_field(a, &a->r->reasoning, &a->hi_reason, s, REIN_MEV_REASONING_DELTA);
}

rein_err rein__asm_signature(struct rein__asm *a, struct rein__jstr s)
{
    return append_field(a, &a->r->signature, &a->hi_sig, s, 0);
}

rein_err rein__asm_block_signature(struct rein__asm *a, struct rein__jstr s)
{
    return append_field(a, &a->r->signature, &a->hi_sig, s, REIN_MEV_REASONING_SIGNATURE);
}

rein_err rein__asm_redacted(struct rein__asm *a, json_t *data)
{
    rein_model_response *r = a->r;

    if (!r->redacted && !(r->redacted = json_array())) {
        json_decref(data);
        return REIN_ENOMEM;
    }
    emit_piece(a, REIN_MEV_REDACTED_REASONING, 0, json_string_value(data),
               json_string_length(data));
    return json_array_append_new(r->redacted, data) ? REIN_ENOMEM : REIN_OK;
}

rein_err rein__asm_tell(struct rein__asm *a, enum rein_model_event_type type, const json_t *v)
{
    struct rein_buf b;

    if (!a->fn)
        return REIN_OK;
    rein_buf_init(&b, 0);
    if (rein_json_dump(&b, v)) {
        rein_buf_release(&b);
        return REIN_ENOMEM;
    }
    emit_piece(a, type, 0, b.ptr, b.len);
    rein_buf_release(&b);
    return REIN_OK;
}

/* What the filter holds back in plain text (trailing whitespace, the start of what may be
 * markup) ends the text block before a new block of Anthropic's: markup does not run across
 * blocks, and the text goes out in the block it came in. */
static rein_err release_held(struct rein__asm *a)
{
    rein_err rc;

    if (!a->fn || a->tmode != TM_NORMAL || a->tpos >= a->r->text.len)
        return REIN_OK;
    rc = emit_text(a, a->r->text.ptr + a->tpos, a->r->text.len - a->tpos);
    a->tpos = a->r->text.len;
    return rc;
}

rein_err rein__asm_tell_text(struct rein__asm *a, enum rein_model_event_type type, const char *p,
                             size_t len)
{
    /* the text held back goes first: what is told comes after it in the reply */
    rein_err rc = release_held(a);

    if (!rc)
        emit_piece(a, type, 0, p, len);
    return rc;
}

rein_err rein__asm_server_block(struct rein__asm *a, json_t *block)
{
    rein_model_response *r = a->r;

    if (release_held(a)) {
        json_decref(block);
        return REIN_ENOMEM;
    }

    if (!r->server_blocks && !(r->server_blocks = json_array())) {
        json_decref(block);
        return REIN_ENOMEM;
    }
    if (rein__asm_tell(a, REIN_MEV_SERVER_BLOCK, block)) {
        json_decref(block);
        return REIN_ENOMEM;
    }
    return json_array_append_new(r->server_blocks, block) ? REIN_ENOMEM : REIN_OK;
}

/* Joins a logprobs piece to what the reply has: arrays (content, refusal) are concatenated, a
 * null keeps what was there (a chunk of text has "refusal": null), anything else replaces it. */
static rein_err join_logprobs(json_t *have, const json_t *piece)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)piece, key, v)
    {
        json_t *was = json_object_get(have, key);
        if (was && json_is_null(v))
            continue;
        if (json_is_array(was) && json_is_array(v) ? json_array_extend(was, v)
                                                   : json_object_set(have, key, v))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

rein_err rein__asm_logprobs(struct rein__asm *a, json_t *piece)
{
    rein_model_response *r = a->r;
    rein_err rc = rein__asm_tell(a, REIN_MEV_LOGPROBS, piece);

    if (!rc && !r->logprobs && !(r->logprobs = json_object()))
        rc = REIN_ENOMEM;
    if (!rc)
        rc = join_logprobs(r->logprobs, piece);
    json_decref(piece);
    return rc;
}

rein_err rein__asm_annotations(struct rein__asm *a, json_t *piece)
{
    rein_model_response *r = a->r;
    rein_err rc = rein__asm_tell(a, REIN_MEV_ANNOTATIONS, piece);

    if (!rc && !r->annotations && !(r->annotations = json_array()))
        rc = REIN_ENOMEM;
    if (!rc && json_array_extend(r->annotations, piece))
        rc = REIN_ENOMEM;
    json_decref(piece);
    return rc;
}

rein_err rein__asm_text_block(struct rein__asm *a, json_t *citations)
{
    rein_model_response *r = a->r;
    json_t *b = json_pack("{s:I, s:I}", "at", (json_int_t)r->text.len, "server",
                          (json_int_t)json_array_size(r->server_blocks));
    rein_err rc = b ? REIN_OK : REIN_ENOMEM;

    if (!rc)
        rc = release_held(a);
    if (!rc && citations && json_object_set(b, "citations", citations))
        rc = REIN_ENOMEM;
    if (!rc && !r->text_blocks && !(r->text_blocks = json_array()))
        rc = REIN_ENOMEM;
    if (!rc && json_array_append(r->text_blocks, b))
        rc = REIN_ENOMEM;
    if (!rc && citations)
        rc = rein__asm_tell(a, REIN_MEV_TEXT_BLOCK, citations);
    else if (!rc && a->fn)
        emit_piece_empty(a, REIN_MEV_TEXT_BLOCK);
    json_decref(b);
    json_decref(citations);
    return rc;
}

rein_err rein__asm_citation(struct rein__asm *a, json_t *citation)
{
    json_t *b = json_array_get(a->r->text_blocks, json_array_size(a->r->text_blocks) - 1);
    json_t *list = json_object_get(b, "citations");
    rein_err rc = rein__asm_tell(a, REIN_MEV_CITATION, citation);

    if (!rc && b && !list && (!(list = json_array()) || json_object_set_new(b, "citations", list)))
        rc = REIN_ENOMEM;
    /* a citation outside any text block has no text to go with: it is told and not kept */
    if (!rc && list && json_array_append(list, citation))
        rc = REIN_ENOMEM;
    json_decref(citation);
    return rc;
}

/* The text changed at the end: the blocks' places no longer hold, their citations do. */
static rein_err text_blocks_joined(rein_model_response *r)
{
    json_t *one = json_pack("{s:i, s:i, s:[]}", "at", 0, "server", 0, "citations");
    json_t *all = json_object_get(one, "citations");
    size_t i;
    json_t *b;

    if (!one)
        return REIN_ENOMEM;
    json_array_foreach(r->text_blocks, i, b)
    {
        if (json_array_extend(all, json_object_get(b, "citations"))) {
            json_decref(one);
            return REIN_ENOMEM;
        }
    }
    json_decref(r->text_blocks);
    r->text_blocks = json_array();
    if (!r->text_blocks || (json_array_size(all) && json_array_append(r->text_blocks, one))) {
        json_decref(one);
        return REIN_ENOMEM;
    }
    json_decref(one);
    return REIN_OK;
}

rein_err rein__asm_refusal(struct rein__asm *a, struct rein__jstr s)
{
    return append_field(a, &a->r->refusal, &a->hi_refusal, s, REIN_MEV_REFUSAL_DELTA);
}

/* ---- tool calls ---- */

static void emit_start(struct rein__asm *a, size_t i)
{
    rein_model_call *c = a->r->calls[i];
    struct rein_model_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_MEV_TOOL_CALL_START;
    ev.index = i;
    ev.id = c->id;
    ev.name = c->name.ptr;
    emit(a, &ev);
}

static void call_free(rein_model_call *c)
{
    if (!c)
        return;
    rein_free(c->id);
    rein_free(c->signature);
    rein_buf_release(&c->name);
    rein_buf_release(&c->args);
    rein__call_drop_doc(c);
    rein_free(c->error);
    rein_free(c);
}

static int call_new(struct rein__asm *a, int64_t key, struct rein__jstr id)
{
    rein_model_response *r = a->r;
    rein_model_call *c;

    if (r->ncalls == r->calls_cap) {
        size_t cap = r->calls_cap ? r->calls_cap * 2 : 4;
        rein_model_call **v = rein_realloc(r->calls, cap * sizeof(rein_model_call *));
        if (!v)
            return REIN_ENOMEM;
        r->calls = v;
        r->calls_cap = cap;
    }
    c = rein_calloc(1, sizeof(*c));
    if (!c)
        return REIN_ENOMEM;
    rein_buf_init(&c->name, 4096);
    rein_buf_init(&c->args, TEXT_MAX);
    c->key = key;
    if (id.len) {
        struct rein_buf b;
        rein_buf_init(&b, 4096);
        uint32_t hi = 0;
        if (rein__json_unescape(&b, id.p, id.len, &hi) || rein__json_unescape_flush(&b, &hi)) {
            rein_buf_release(&b);
            call_free(c);
            return REIN_ENOMEM;
        }
        c->id = b.alloc ? rein_buf_detach(&b, NULL) : rein_strdup("");
        rein_buf_release(&b);
    }
    if (!c->id || !c->id[0]) {
        char made[REIN_ID_MAX];
        rein_free(c->id);
        rein__call_id_make(id_seed(a), r->ncalls, "", made);
        c->id = rein_strdup(made);
        c->synthetic_id = true;
    }
    if (!c->id) {
        call_free(c);
        return REIN_ENOMEM;
    }
    r->calls[r->ncalls] = c;
    return (int)r->ncalls++;
}

/* True when the id token names a different call than c (an empty id never does). */
static bool other_id(const rein_model_call *c, struct rein__jstr id)
{
    if (id.len == 0)
        return false;
    if (c->synthetic_id)
        return c->args.len > 0;
    return strlen(c->id) != id.len || memcmp(c->id, id.p, id.len) != 0;
}

/* A call that began without an id and gets one before its arguments takes it. */
static rein_err adopt_id(rein_model_call *c, struct rein__jstr id)
{
    struct rein_buf b;
    uint32_t hi = 0;
    char *v;

    if (!c->synthetic_id || id.len == 0)
        return REIN_OK;
    rein_buf_init(&b, 4096);
    if (rein__json_unescape(&b, id.p, id.len, &hi) || rein__json_unescape_flush(&b, &hi) ||
        !(v = rein_buf_detach(&b, NULL))) {
        rein_buf_release(&b);
        return REIN_ENOMEM;
    }
    rein_free(c->id);
    c->id = v;
    c->synthetic_id = false;
    return REIN_OK;
}

static rein_err set_name(struct rein__asm *a, size_t i, struct rein__jstr name)
{
    rein_model_call *c = a->r->calls[i];
    uint32_t hi = 0;
    rein_err rc;

    if (name.len == 0)
        return REIN_OK;
    rein_buf_reset(&a->scratch);
    rc = rein__json_unescape(&a->scratch, name.p, name.len, &hi);
    if (!rc)
        rc = rein__json_unescape_flush(&a->scratch, &hi);
    if (rc)
        return rc;
    /* Some servers repeat the whole name in every delta, a few split it: equal is a repeat,
     * anything else continues the name. */
    if (c->name.len == a->scratch.len && memcmp(c->name.ptr, a->scratch.ptr, c->name.len) == 0)
        return REIN_OK;
    return rein_buf_add(&c->name, a->scratch.ptr, a->scratch.len);
}

int rein__asm_call(struct rein__asm *a, int64_t key, struct rein__jstr id, struct rein__jstr name)
{
    rein_model_response *r = a->r;
    int idx = -1;
    rein_err rc;

    if (key >= 0) {
        for (size_t i = r->ncalls; i-- > 0;) {
            if (r->calls[i]->key == key && !r->calls[i]->from_text) {
                idx = (int)i;
                break;
            }
        }
    } else if (r->ncalls && !r->calls[r->ncalls - 1]->from_text &&
               !(name.len && r->calls[r->ncalls - 1]->name.len &&
                 r->calls[r->ncalls - 1]->args.len)) {
        /* Without an index, a delta continues the last call, unless it names a call while
         * the last one already has its name and arguments (servers that send each call
         * whole, with neither index nor id). */
        idx = (int)r->ncalls - 1;
    }
    if (idx >= 0 && other_id(r->calls[idx], id)) {
        /* The previous call at this index is finished: close it before the next begins. */
        rc = rein__asm_call_close(a, (size_t)idx);
        if (rc)
            return rc;
        idx = -1;
    }
    if (idx < 0) {
        idx = call_new(a, key, id);
        if (idx < 0)
            return idx;
    } else {
        rc = adopt_id(r->calls[idx], id);
        if (rc)
            return rc;
    }
    rc = set_name(a, (size_t)idx, name);
    if (rc)
        return rc;
    /* START goes out once, as soon as the call has a name (or at its first arguments). */
    if (r->calls[idx]->name.len && !r->calls[idx]->started) {
        r->calls[idx]->started = true;
        emit_start(a, (size_t)idx);
    }
    return idx;
}

/* START for a call that never got a name before its arguments or its end. */
static void ensure_started(struct rein__asm *a, size_t i)
{
    rein_model_call *c = a->r->calls[i];

    if (!c->started) {
        c->started = true;
        emit_start(a, i);
    }
}

void rein__call_drop_doc(rein_model_call *c)
{
    rein_doc_free(c->doc);
    c->doc = NULL;
    rein_free(c->doc_text);
    c->doc_text = NULL;
}

/*
 * Arguments that grow after the call was decided (a wire sending more after the end): the
 * document reads the old text in place, so it moves to a copy of that text first and keeps
 * what it held.
 */
static rein_err keep_doc_text(rein_model_call *c)
{
    rein_doc *doc;

    if (!c->doc || c->doc_text)
        return REIN_OK;
    c->doc_text = rein_malloc(c->args.len + 1);
    if (!c->doc_text)
        return REIN_ENOMEM;
    memcpy(c->doc_text, c->args.ptr, c->args.len + 1);
    doc = rein_doc_parse(c->doc_text, c->args.len, NULL);
    if (!doc)
        return REIN_ENOMEM; /* it parsed before: only memory can fail */
    rein_doc_free(c->doc);
    c->doc = doc;
    return REIN_OK;
}

rein_err rein__asm_call_args(struct rein__asm *a, size_t i, struct rein__jstr s)
{
    rein_model_call *c = a->r->calls[i];
    size_t before = c->args.len;
    rein_err rc;

    if (s.len == 0)
        return REIN_OK;
    ensure_started(a, i);
    rc = keep_doc_text(c);
    if (!rc)
        rc = rein__json_unescape(&c->args, s.p, s.len, &c->hi_args);
    if (rc)
        return rc;
    emit_piece(a, REIN_MEV_TOOL_CALL_DELTA, i, c->args.ptr + before, c->args.len - before);
    return REIN_OK;
}

rein_err rein__asm_call_args_raw(struct rein__asm *a, size_t i, const char *p, size_t len)
{
    rein_model_call *c = a->r->calls[i];
    rein_err rc;

    if (len == 0)
        return REIN_OK;
    ensure_started(a, i);
    rc = keep_doc_text(c);
    if (!rc)
        rc = rein_buf_add(&c->args, p, len);
    if (!rc)
        emit_piece(a, REIN_MEV_TOOL_CALL_DELTA, i, p, len);
    return rc;
}

int rein__asm_call_whole(struct rein__asm *a, const char *name, size_t name_len, const char *raw,
                         size_t raw_len, bool from_text, bool closed)
{
    struct rein__jstr none = {"", 0, false};
    int idx = call_new(a, -1, none);
    rein_model_call *c;
    rein_err rc;

    if (idx < 0)
        return idx;
    c = a->r->calls[idx];
    c->from_text = from_text;
    c->key = -2;
    rc = rein_buf_add(&c->name, name, name_len);
    if (!rc && c->synthetic_id) {
        char made[REIN_ID_MAX];
        rein__call_id_make(id_seed(a), (size_t)idx, c->name.ptr, made);
        char *id = rein_strdup(made);
        if (!id)
            return REIN_ENOMEM;
        rein_free(c->id);
        c->id = id;
    }
    if (rc)
        return rc;
    ensure_started(a, (size_t)idx);
    rc = rein__asm_call_args_raw(a, (size_t)idx, raw, raw_len);
    if (rc)
        return rc;
    c->closed = closed;
    return idx;
}

rein_err rein__asm_call_close(struct rein__asm *a, size_t i)
{
    rein_model_call *c = a->r->calls[i];
    struct rein_model_event ev;
    rein_err rc;

    if (c->ended)
        return REIN_OK;
    ensure_started(a, i);
    rc = rein__json_unescape_flush(&c->args, &c->hi_args);
    if (rc)
        return rc;
    c->closed = true;
    rc = rein__call_decide(c, true);
    if (rc)
        return rc;
    c->ended = true;
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_MEV_TOOL_CALL_END;
    ev.index = i;
    ev.call = c;
    emit(a, &ev);
    return REIN_OK;
}

/* ---- usage, finish, errors ---- */

void rein__asm_usage(struct rein__asm *a, int64_t in, int64_t out)
{
    rein_model_response *r = a->r;
    struct rein_model_event ev;
    bool changed = false;

    if (in >= 0 && in != r->input_tokens) {
        r->input_tokens = in;
        changed = true;
    }
    if (out >= 0 && out != r->output_tokens) {
        r->output_tokens = out;
        changed = true;
    }
    if (!changed)
        return;
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_MEV_USAGE;
    ev.input_tokens = r->input_tokens;
    ev.output_tokens = r->output_tokens;
    emit(a, &ev);
}

/* *slot = the unescaped contents of s, unless it is set already or s is empty. */
static rein_err keep_first(char **slot, struct rein__jstr s)
{
    struct rein_buf b;
    uint32_t hi = 0;
    rein_err rc;

    if (*slot || s.len == 0)
        return REIN_OK;
    rein_buf_init(&b, 0);
    rc = rein__json_unescape(&b, s.p, s.len, &hi);
    if (!rc)
        rc = rein__json_unescape_flush(&b, &hi);
    if (!rc && !(*slot = rein_strndup(b.ptr ? b.ptr : "", b.len)))
        rc = REIN_ENOMEM;
    rein_buf_release(&b);
    return rc;
}

rein_err rein__asm_identity(struct rein__asm *a, struct rein__jstr id, struct rein__jstr model)
{
    rein_err rc = keep_first(&a->r->answer_id, id);

    return rc ? rc : keep_first(&a->r->answer_model, model);
}

void rein__asm_usage_detail(struct rein__asm *a, int64_t cached, int64_t reasoning)
{
    if (cached >= 0)
        a->r->cached_tokens = cached;
    if (reasoning >= 0)
        a->r->reasoning_tokens = reasoning;
}

void rein__asm_cache_write(struct rein__asm *a, int64_t tokens)
{
    if (tokens >= 0)
        a->r->cache_write_tokens = tokens;
}

rein_err rein__asm_call_signature(struct rein__asm *a, size_t i, struct rein__jstr s)
{
    struct rein_buf b;
    uint32_t hi = 0;
    rein_err rc;

    if (i >= a->r->ncalls)
        return REIN_OK;
    rein_buf_init(&b, 1 << 20);
    rc = rein__json_unescape(&b, s.p, s.len, &hi);
    if (!rc)
        rc = rein__json_unescape_flush(&b, &hi);
    if (!rc) {
        char *v = rein_buf_detach(&b, NULL);
        if (!v)
            rc = REIN_ENOMEM;
        else {
            rein_free(a->r->calls[i]->signature);
            a->r->calls[i]->signature = v;
        }
    }
    rein_buf_release(&b);
    return rc;
}

/* *field = the text of s, unescaped (a new string; the old one freed). */
static rein_err set_text(char **field, struct rein__jstr s)
{
    struct rein_buf b;
    uint32_t hi = 0;
    rein_err rc;

    rein_buf_init(&b, 1024);
    rc = rein__json_unescape(&b, s.p, s.len, &hi);
    if (!rc)
        rc = rein__json_unescape_flush(&b, &hi);
    if (!rc) {
        char *v = rein_buf_detach(&b, NULL);
        if (!v)
            rc = REIN_ENOMEM;
        else {
            rein_free(*field);
            *field = v;
        }
    }
    rein_buf_release(&b);
    return rc;
}

rein_err rein__asm_finish_reason(struct rein__asm *a, struct rein__jstr s)
{
    return set_text(&a->r->finish_reason, s);
}

rein_err rein__asm_stop_sequence(struct rein__asm *a, struct rein__jstr s)
{
    return set_text(&a->r->stop_sequence, s);
}

rein_err rein__asm_request_id(struct rein__asm *a, struct rein__jstr id)
{
    return keep_first(&a->r->request_id, id);
}

void rein__asm_error(struct rein__asm *a, json_t *error)
{
    if (!error)
        return;
    if (a->r->error) {
        json_decref(error);
        return;
    }
    a->r->error = error;
}

void rein__asm_complete(struct rein__asm *a)
{
    a->r->complete = true;
}

static rein_err flush_text_events(struct rein__asm *a)
{
    const struct rein_buf *t = &a->r->text;
    const struct rein_buf *e = &a->emitted;

    if (!a->fn)
        return REIN_OK;
    assert(a->emitted_split || a->emitted_run == 0);
    if (a->tmode == TM_THINK && a->tpos < t->len) {
        /* A <think> that never closed: the rest was thinking. */
        return REIN_OK;
    }
    if (t->len > e->len && memcmp(t->ptr, e->ptr, e->len) == 0)
        return emit_text(a, t->ptr + e->len, t->len - e->len);
    return REIN_OK;
}

rein_err rein__asm_end(struct rein__asm *a)
{
    rein_model_response *r = a->r;
    struct rein_model_event ev;
    size_t raw;
    rein_err rc;

    if (a->finished)
        return REIN_OK;
    /* A reply that carries the provider's error did not end normally, whatever else it
     * said (OpenRouter sends finish_reason "error"; some servers an error after [DONE]). */
    if (r->error)
        r->complete = false;
    /* The text may change from here on (a replacement character, text-written calls taken
     * out): what was emitted is kept as it was. */
    rc = split_emitted(a);
    if (!rc)
        rc = rein__json_unescape_flush(&r->text, &a->hi_text);
    if (!rc)
        rc = rein__json_unescape_flush(&r->reasoning, &a->hi_reason);
    if (!rc)
        rc = rein__json_unescape_flush(&r->refusal, &a->hi_refusal);
    if (!rc)
        rc = rein__json_unescape_flush(&r->signature, &a->hi_sig);
    raw = r->text.len;
    if (!rc && r->text.len)
        rc = rein__textcalls_apply(a);
    if (!rc && r->text_blocks && r->text.len != raw)
        rc = text_blocks_joined(r);
    for (size_t i = 0; !rc && i < r->ncalls; i++) {
        rein_model_call *c = r->calls[i];
        struct rein_model_event end;
        if (c->ended)
            continue;
        ensure_started(a, i);
        rc = rein__json_unescape_flush(&c->args, &c->hi_args);
        if (!rc)
            rc = rein__call_decide(c, r->complete);
        if (rc)
            break;
        c->ended = true;
        memset(&end, 0, sizeof(end));
        end.type = REIN_MEV_TOOL_CALL_END;
        end.index = i;
        end.call = c;
        emit(a, &end);
    }
    if (!rc)
        rc = flush_text_events(a);
    if (rc)
        return rc;
    a->finished = true;
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_MEV_FINISH;
    ev.finish_reason = r->finish_reason;
    emit(a, &ev);
    return REIN_OK;
}

/* ---- deciding a call ---- */

/* Decodes one UTF-8 sequence at s; returns its length (0 when invalid) and the code point. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    size_t len;
    uint32_t v;

    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        len = 2, v = s[0] & 0x1F;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF)
        len = 3, v = s[0] & 0x0F;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4)
        len = 4, v = s[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
        (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

/* Letters of the scripts tool names are written in; symbols (⚙, emoji, punctuation) are not. */
static bool cp_is_letter(uint32_t cp)
{
    return (cp >= 0xC0 && cp <= 0x24F && cp != 0xD7 && cp != 0xF7) || /* Latin */
           (cp >= 0x370 && cp <= 0x3FF) ||                            /* Greek */
           (cp >= 0x400 && cp <= 0x4FF) ||                            /* Cyrillic */
           (cp >= 0x5D0 && cp <= 0x5EA) || (cp >= 0x620 && cp <= 0x64A) ||
           (cp >= 0x3040 && cp <= 0x30FF) ||                                   /* kana */
           (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x4E00 && cp <= 0x9FFF) || /* CJK */
           (cp >= 0xAC00 && cp <= 0xD7A3);                                     /* Hangul */
}

bool rein__tool_name_is_valid(const char *name, size_t len)
{
    const unsigned char *s = (const unsigned char *)name;
    bool alnum = false;
    size_t i = 0;

    if (len == 0 || len > 256)
        return false;
    while (i < len) {
        uint32_t cp;
        size_t n = utf8_decode(s + i, len - i, &cp);
        if (n == 0)
            return false;
        if (cp <= 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0xA0 || cp == 0x3000 ||
            (cp >= 0x2000 && cp <= 0x200F) || cp == 0xFEFF)
            return false; /* spaces and control characters */
        if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
            cp_is_letter(cp))
            alnum = true;
        i += n;
    }
    return alnum;
}

static bool all_space(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != ' ' && s[i] != '\n' && s[i] != '\r' && s[i] != '\t')
            return false;
    }
    return true;
}

static rein_err set_status(rein_model_call *c, enum rein_model_call_status st, char *msg)
{
    c->status = st;
    rein_free(c->error);
    c->error = msg;
    if (st != REIN_MODEL_CALL_OK && !msg)
        return REIN_ENOMEM;
    if (st != REIN_MODEL_CALL_OK)
        rein__call_drop_doc(c);
    /* The call's invariants (provider_int.h): an id once it exists, parsed only when ok. */
    assert(c->id != NULL);
    assert(!c->doc || st == REIN_MODEL_CALL_OK);
    assert(c->name.ptr[c->name.len] == '\0' && c->args.ptr[c->args.len] == '\0');
    return REIN_OK;
}

rein_err rein__call_decide(rein_model_call *c, bool reply_complete)
{
    bool finished = c->closed || reply_complete;
    rein_error jerr;
    rein_doc *doc;
    int type;

    rein__call_drop_doc(c);
    if (!rein__tool_name_is_valid(c->name.ptr, c->name.len)) {
        return set_status(
            c, REIN_MODEL_CALL_INVALID_NAME,
            c->name.len ? rein_asprintf("the tool name \"%.*s\" is not a usable name: "
                                        "use one of the offered tool names",
                                        (int)(c->name.len > 80 ? 80 : c->name.len), c->name.ptr)
                        : rein_strdup("the tool call has no name: call a tool by "
                                      "one of the offered names"));
    }
    if (all_space(c->args.ptr, c->args.len)) {
        if (!finished)
            return set_status(c, REIN_MODEL_CALL_INCOMPLETE,
                              rein_strdup("the reply ended before the call's arguments arrived"));
        /* A zero-argument call streams "" (or nothing): its arguments are {}. */
        c->doc = rein_doc_parse("{}", 2, NULL);
        return c->doc ? set_status(c, REIN_MODEL_CALL_OK, NULL) : REIN_ENOMEM;
    }
    rein_error_clear(&jerr);
    /* A document of rein's own: no jansson tree unless someone asks for one (decision 0056). */
    doc = rein_doc_parse(c->args.ptr, c->args.len, &jerr);
    if (!doc) {
        if (jerr.code == REIN_ENOMEM)
            return REIN_ENOMEM;
        if (!finished)
            return set_status(c, REIN_MODEL_CALL_INCOMPLETE,
                              rein_asprintf("the reply ended in the middle of the call's "
                                            "arguments (%zu bytes received)",
                                            c->args.len));
        return set_status(c, REIN_MODEL_CALL_INVALID_JSON,
                          rein_asprintf("the arguments are not valid JSON: %s", jerr.msg));
    }
    type = rein_doc_type(doc);
    if (type != JSON_OBJECT) {
        rein_doc_free(doc);
        return set_status(c, REIN_MODEL_CALL_INVALID_JSON,
                          rein_asprintf("the arguments must be a JSON object, got %s",
                                        rein__json_type_word(type)));
    }
    c->doc = doc;
    return set_status(c, REIN_MODEL_CALL_OK, NULL);
}

/* ---- ids ---- */

uint64_t rein__hash64(uint64_t h, const void *data, size_t len)
{
    /* 0 starts a new hash; the ids made from it must stay stable (recordings replay them). */
    return rein__fnv1a64(h ? h : REIN_FNV64_INIT, data, len);
}

void rein__call_id_make(uint64_t seed, size_t index, const char *name, char out[REIN_ID_MAX])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t h = rein__hash64(0, &seed, sizeof(seed));

    h = rein__hash64(h, &index, sizeof(index));
    h = rein__hash64(h, name, strlen(name));
    memcpy(out, "call_", 5);
    for (int i = 0; i < 16; i++)
        out[5 + i] = hex[(h >> (60 - 4 * i)) & 15];
    out[21] = '\0';
}
