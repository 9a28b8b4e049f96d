/*
 * The one-pass reader of an OpenAI chat completion chunk (decision 0055). A streamed answer is
 * thousands of chunks that differ in a few bytes of delta; tokenizing each one and then
 * looking its members up (jpull.h) cost about 4,000 instructions a chunk. This reader walks
 * the bytes once, validating them as it goes (the grammar of RFC 8259, jscan.h), and keeps
 * only the spans the assembler needs.
 *
 * It takes only the chunk shapes a stream is made of: one object with a "choices" array of
 * at most one choice of index 0, whose "delta" carries content, reasoning (reasoning_content
 * or reasoning) and tool call pieces; any other member anywhere is read over whatever its
 * value. Anything else it declines before it has done anything (the first chunk's role,
 * refusal and null members included are fine; a finish_reason, a usage object, an error,
 * several choices, a duplicate member it reads, a value of a type it does not expect, JSON
 * that is not well-formed, more than one value in the payload), and the general path
 * (jtok/jsmn and take_object in openai.c) reads the payload as before, errors included. On
 * what it accepts it reports exactly what take_object reports, in the same order: the
 * member names are compared raw, the first-found rules cannot differ (duplicates decline),
 * and the spans are the same bytes. fuzz/fuzz_oachunk.c and tests/unit/test_oachunk.c
 * compare the two paths.
 */
#include "jscan.h"
#include "provider_int.h"

#include <stddef.h>

#define MAX_DEPTH 32 /* deeper values are left to the general path */
#define MAX_CALLS 4  /* tool call pieces in one delta */

/*
 * A hole: a string value of the chunk, which the template (below) lets vary. target says
 * where its span goes: one of the H_ values, or H_CALL + 3 * k + (0 id, 1 name, 2 arguments)
 * for call piece k; H_OTHER for a string nothing reads.
 */
enum { H_OTHER, H_ID, H_MODEL, H_FINISH, H_CONTENT, H_RCONTENT, H_REASONING, H_CALL };
#define MAX_HOLES 16

struct hole {
    size_t start, end; /* the string's text: after its opening quote, at its closing one */
    int target;
    bool esc;    /* the string has an escape */
    bool varies; /* the template reads it from each chunk (else it is compared as bytes) */
};

struct scan {
    const char *js;
    size_t len, i;
    struct hole holes[MAX_HOLES];
    int nholes;
    bool no_template; /* a string that is read did not get a hole */
    bool body;        /* a whole chat completion (its choice's "message"), not a chunk */
};

struct call_piece {
    int64_t index; /* -1: none */
    struct rein__jstr id, name, args;
    bool has_args;
};

/* The usage counts as take_usage reads them (-1: absent or not an integer). */
struct usage {
    int64_t in, out, cached, reasoning, cache_write;
};

struct chunk {
    struct rein__jstr id, model, content, rcontent, reasoning, finish;
    bool has_choices, has_content, has_rcontent, has_reasoning, has_finish, has_usage;
    struct usage usage; /* values, not spans: the template compares numbers as bytes */
    int ncalls;
    struct call_piece calls[MAX_CALLS];
};

static const struct rein__jstr no_str = {"", 0, false};

static inline void ws(struct scan *s)
{
    while (s->i < s->len && (s->js[s->i] == ' ' || s->js[s->i] == '\n' || s->js[s->i] == '\r' ||
                             s->js[s->i] == '\t'))
        s->i++;
}

static inline bool at(const struct scan *s, char c)
{
    return s->i < s->len && s->js[s->i] == c;
}

/* The string at s->i (its opening quote) into *out, escapes intact. */
static inline bool str(struct scan *s, struct rein__jstr *out)
{
    bool esc = false;
    size_t e;

    if (!at(s, '"'))
        return false;
    e = string_end(s->js, s->len, s->i + 1, &esc);
    if (e == JS_NONE)
        return false;
    out->p = s->js + s->i + 1;
    out->len = e - s->i - 1;
    out->esc = esc;
    s->i = e + 1;
    return true;
}

/* A string value at s->i into *out, noted as a hole for target. */
static inline bool vstr(struct scan *s, struct rein__jstr *out, int target)
{
    size_t start = s->i + 1;

    if (!str(s, out))
        return false;
    if (s->nholes < MAX_HOLES)
        s->holes[s->nholes++] = (struct hole){start, s->i - 1, target, out->esc, false};
    else if (target != H_OTHER)
        s->no_template = true;
    return true;
}

/* A literal null at s->i (read over). */
static inline bool null_at(struct scan *s)
{
    size_t e;

    if (!at(s, 'n'))
        return false;
    e = primitive_end(s->js, s->len, s->i);
    if (e == JS_NONE)
        return false;
    s->i = e;
    return true;
}

/* null or an empty array, read over */
static bool empty_at(struct scan *s)
{
    if (!at(s, '['))
        return null_at(s);
    s->i++;
    ws(s);
    if (!at(s, ']'))
        return false;
    s->i++;
    return true;
}

/* The next item of the object or array being read (close: its closing byte): 1 with s->i at
 * it, 0 at the end (read over), -1 for anything else. *first is true right after the opening
 * byte. */
static int item(struct scan *s, bool *first, char close)
{
    ws(s);
    if (at(s, close)) {
        s->i++;
        return 0;
    }
    if (!*first) {
        if (!at(s, ','))
            return -1;
        s->i++;
        ws(s);
    }
    *first = false;
    return s->i < s->len ? 1 : -1;
}

/* The next member of the object being read: as item(), with its name in *key and s->i at
 * its value. */
static int member(struct scan *s, bool *first, struct rein__jstr *key)
{
    int m = item(s, first, '}');

    if (m <= 0)
        return m;
    if (!str(s, key))
        return -1;
    ws(s);
    if (!at(s, ':'))
        return -1;
    s->i++;
    ws(s);
    return 1;
}

static int element(struct scan *s, bool *first)
{
    return item(s, first, ']');
}

/* Reads over any well-formed value. */
static bool skip_value(struct scan *s, int depth)
{
    struct rein__jstr k;
    bool first = true;
    int m;
    size_t e;

    if (s->i >= s->len)
        return false;
    switch (s->js[s->i]) {
    case '"':
        return vstr(s, &k, H_OTHER);
    case '{':
        if (depth >= MAX_DEPTH)
            return false;
        s->i++;
        while ((m = member(s, &first, &k)) > 0) {
            if (!skip_value(s, depth + 1))
                return false;
        }
        return m == 0;
    case '[':
        if (depth >= MAX_DEPTH)
            return false;
        s->i++;
        while ((m = element(s, &first)) > 0) {
            if (!skip_value(s, depth + 1))
                return false;
        }
        return m == 0;
    default:
        e = primitive_end(s->js, s->len, s->i);
        if (e == JS_NONE)
            return false;
        s->i = e;
        return true;
    }
}

static inline bool key_is_(const struct rein__jstr *k, const char *lit, size_t n)
{
    return k->len == n && memcmp(k->p, lit, n) == 0;
}
#define key_is(k, lit) key_is_((k), (lit), sizeof(lit) - 1)

/* Marks bit in *seen; false when it was there already (a duplicate member). */
static inline bool once(unsigned *seen, unsigned bit)
{
    if (*seen & bit)
        return false;
    *seen |= bit;
    return true;
}

/* A string or null (then *has stays false) into *out. */
static inline bool str_or_null(struct scan *s, struct rein__jstr *out, bool *has, int target)
{
    if (null_at(s))
        return true;
    *has = true;
    return vstr(s, out, target);
}

/* A call index as jint reads it (plain digits only here), or null (-1). */
static bool call_index(struct scan *s, int64_t *out)
{
    size_t e;
    int64_t v = 0;

    if (null_at(s))
        return true;
    e = primitive_end(s->js, s->len, s->i);
    if (e == JS_NONE)
        return false;
    for (size_t k = s->i; k < e; k++) {
        char c = s->js[k];
        if (c < '0' || c > '9' || v > (INT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (c - '0');
    }
    *out = v;
    s->i = e;
    return true;
}

/*
 * One member of an object being read: key is its name, s->i at its value. True when the value
 * was read (or read over); false declines the chunk. seen marks the members read, against
 * duplicates.
 */
typedef bool (*field_fn)(struct scan *s, const struct rein__jstr *key, unsigned *seen, void *ctx);

/* The object at s->i, each member through field. */
static bool read_object(struct scan *s, field_fn field, void *ctx)
{
    struct rein__jstr k;
    unsigned seen = 0;
    bool first = true;
    int m;

    if (!at(s, '{'))
        return false;
    s->i++;
    while ((m = member(s, &first, &k)) > 0) {
        if (!field(s, &k, &seen, ctx))
            return false;
    }
    return m == 0;
}

struct call_ctx {
    struct call_piece *c;
    int nth; /* which piece of the delta */
};

static bool function_field(struct scan *s, const struct rein__jstr *k, unsigned *seen, void *ctx)
{
    struct call_ctx *x = ctx;
    bool has_name = false;

    if (key_is(k, "name"))
        return once(seen, 1) && str_or_null(s, &x->c->name, &has_name, H_CALL + 3 * x->nth + 1);
    if (key_is(k, "arguments"))
        return once(seen, 2) &&
               str_or_null(s, &x->c->args, &x->c->has_args, H_CALL + 3 * x->nth + 2);
    return skip_value(s, 3);
}

static bool call_field(struct scan *s, const struct rein__jstr *k, unsigned *seen, void *ctx)
{
    struct call_ctx *x = ctx;
    bool has_id = false;

    if (key_is(k, "index"))
        return once(seen, 1) && call_index(s, &x->c->index);
    if (key_is(k, "id"))
        return once(seen, 2) && str_or_null(s, &x->c->id, &has_id, H_CALL + 3 * x->nth);
    if (key_is(k, "function"))
        return once(seen, 4) && (null_at(s) || read_object(s, function_field, x));
    return skip_value(s, 2);
}

static bool read_calls(struct scan *s, struct chunk *c)
{
    bool first = true;
    int m;

    if (null_at(s))
        return true;
    if (!at(s, '['))
        return false;
    s->i++;
    while ((m = element(s, &first)) > 0) {
        struct call_ctx x;
        if (c->ncalls == MAX_CALLS)
            return false;
        x.c = &c->calls[c->ncalls];
        x.nth = c->ncalls;
        x.c->index = -1;
        x.c->id = x.c->name = x.c->args = no_str;
        x.c->has_args = false;
        if (!read_object(s, call_field, &x))
            return false;
        c->ncalls++;
    }
    return m == 0;
}

enum {
    DL_CONTENT = 1,
    DL_RCONTENT = 2,
    DL_REASONING = 4,
    DL_REFUSAL = 8,
    DL_CALLS = 16,
    DL_FUNCTION_CALL = 32,
    DL_DETAILS = 64,
    DL_ANNOTATIONS = 128
};

static bool delta_field(struct scan *s, const struct rein__jstr *k, unsigned *seen, void *ctx)
{
    struct chunk *c = ctx;

    if (key_is(k, "content"))
        return once(seen, DL_CONTENT) && str_or_null(s, &c->content, &c->has_content, H_CONTENT);
    if (key_is(k, "reasoning_content"))
        return once(seen, DL_RCONTENT) &&
               str_or_null(s, &c->rcontent, &c->has_rcontent, H_RCONTENT);
    if (key_is(k, "reasoning"))
        return once(seen, DL_REASONING) &&
               str_or_null(s, &c->reasoning, &c->has_reasoning, H_REASONING);
    if (key_is(k, "tool_calls"))
        return once(seen, DL_CALLS) && read_calls(s, c);
    /* These three are rare: only their null is read here. */
    if (key_is(k, "refusal"))
        return once(seen, DL_REFUSAL) && null_at(s);
    if (key_is(k, "function_call"))
        return once(seen, DL_FUNCTION_CALL) && null_at(s);
    if (key_is(k, "reasoning_details"))
        return once(seen, DL_DETAILS) && null_at(s);
    /* OpenAI's bodies say "annotations": [] (a search model's citations are rare) */
    if (key_is(k, "annotations"))
        return once(seen, DL_ANNOTATIONS) && empty_at(s);
    return skip_value(s, 2);
}

/* A choice: index 0 (or none, which reads as 0), a delta, a finish_reason that is null or a
 * string (which one the general path's rules allow is decided before reporting). */
static bool choice_field(struct scan *s, const struct rein__jstr *k, unsigned *seen, void *ctx)
{
    struct chunk *c = ctx;

    if (key_is(k, "index")) {
        bool zero = once(seen, 1) && at(s, '0') && primitive_end(s->js, s->len, s->i) == s->i + 1;
        s->i++;
        return zero;
    }
    /* A chunk's "delta", a body's "message": the general path reads a delta object before a
     * message, so each kind declines the other's member. */
    if (key_is(k, "delta"))
        return !s->body && once(seen, 2) && read_object(s, delta_field, ctx);
    if (key_is(k, "finish_reason"))
        return once(seen, 4) && str_or_null(s, &c->finish, &c->has_finish, H_FINISH);
    if (key_is(k, "message"))
        return s->body && once(seen, 2) && read_object(s, delta_field, ctx);
    if (key_is(k, "logprobs")) /* asked for, they are read by the general path */
        return once(seen, 8) && null_at(s);
    return skip_value(s, 2);
}

/* The choices array: none (Azure's choices:[] chunks) or one. */
static bool read_choices(struct scan *s, struct chunk *c)
{
    bool first = true;
    int n = 0, m;

    if (!at(s, '['))
        return false;
    s->i++;
    while ((m = element(s, &first)) > 0) {
        if (n++ == 1 || !read_object(s, choice_field, c))
            return false;
    }
    return m == 0;
}

/* One usage count: present (whatever its value, as jget finds it), and its value as jint
 * reads it: the leading digits of a number, -1 for any other value or one past 63 bits. */
struct count {
    bool present;
    int64_t v;
};

static bool count_value(struct scan *s, struct count *n)
{
    size_t e;

    n->present = true;
    n->v = -1;
    if (at(s, '"') || at(s, '{') || at(s, '['))
        return skip_value(s, 3);
    e = primitive_end(s->js, s->len, s->i);
    if (e == JS_NONE)
        return false;
    if (s->js[s->i] >= '0' && s->js[s->i] <= '9') {
        int64_t v = 0;
        size_t k = s->i;
        for (; k < e && s->js[k] >= '0' && s->js[k] <= '9'; k++) {
            if (v > (INT64_MAX - 9) / 10)
                break;
            v = v * 10 + (s->js[k] - '0');
        }
        if (k == e || s->js[k] < '0' || s->js[k] > '9')
            n->v = v;
    }
    s->i = e;
    return true;
}

/* What take_usage reads of a usage object. */
struct usage_read {
    struct count prompt, input, completion, output, cached, cache_write, reasoning;
};

static bool prompt_details_field(struct scan *s, const struct rein__jstr *k, unsigned *seen,
                                 void *ctx)
{
    struct usage_read *u = ctx;

    if (key_is(k, "cached_tokens"))
        return once(seen, 1) && count_value(s, &u->cached);
    if (key_is(k, "cache_write_tokens"))
        return once(seen, 2) && count_value(s, &u->cache_write);
    return skip_value(s, 3);
}

static bool completion_details_field(struct scan *s, const struct rein__jstr *k, unsigned *seen,
                                     void *ctx)
{
    struct usage_read *u = ctx;

    if (key_is(k, "reasoning_tokens"))
        return once(seen, 1) && count_value(s, &u->reasoning);
    return skip_value(s, 3);
}

/* A details object; any other value counts as absent, as jget on a non-object. */
static bool details(struct scan *s, field_fn field, struct usage_read *u)
{
    return at(s, '{') ? read_object(s, field, u) : skip_value(s, 2);
}

static bool usage_field(struct scan *s, const struct rein__jstr *k, unsigned *seen, void *ctx)
{
    struct usage_read *u = ctx;

    if (key_is(k, "prompt_tokens"))
        return once(seen, 1) && count_value(s, &u->prompt);
    if (key_is(k, "input_tokens"))
        return once(seen, 2) && count_value(s, &u->input);
    if (key_is(k, "completion_tokens"))
        return once(seen, 4) && count_value(s, &u->completion);
    if (key_is(k, "output_tokens"))
        return once(seen, 8) && count_value(s, &u->output);
    if (key_is(k, "prompt_tokens_details"))
        return once(seen, 16) && details(s, prompt_details_field, u);
    if (key_is(k, "completion_tokens_details"))
        return once(seen, 32) && details(s, completion_details_field, u);
    return skip_value(s, 2);
}

/* A usage object into c->usage: the first name take_usage looks for when it is there (its
 * value read or -1), else the second. */
static bool read_usage(struct scan *s, struct chunk *c)
{
    struct usage_read u;

    memset(&u, 0, sizeof(u));
    if (!read_object(s, usage_field, &u))
        return false;
    c->has_usage = true;
    c->usage.in = u.prompt.present ? u.prompt.v : u.input.present ? u.input.v : -1;
    c->usage.out = u.completion.present ? u.completion.v : u.output.present ? u.output.v : -1;
    c->usage.cached = u.cached.present ? u.cached.v : -1;
    c->usage.cache_write = u.cache_write.present ? u.cache_write.v : -1;
    c->usage.reasoning = u.reasoning.present ? u.reasoning.v : -1;
    return true;
}

enum { CH_ID = 1, CH_MODEL = 2, CH_CHOICES = 4, CH_USAGE = 8, CH_ERROR = 16 };

static bool chunk_field(struct scan *s, const struct rein__jstr *k, unsigned *seen, void *ctx)
{
    struct chunk *c = ctx;

    if (key_is(k, "id"))
        return once(seen, CH_ID) && vstr(s, &c->id, H_ID);
    if (key_is(k, "model"))
        return once(seen, CH_MODEL) && vstr(s, &c->model, H_MODEL);
    if (key_is(k, "choices")) {
        if (!once(seen, CH_CHOICES) || !read_choices(s, c))
            return false;
        c->has_choices = true;
        return true;
    }
    /* an error leaves the chunk to the general path */
    if (key_is(k, "usage"))
        return once(seen, CH_USAGE) && (null_at(s) || read_usage(s, c));
    if (key_is(k, "error"))
        return once(seen, CH_ERROR) && null_at(s);
    return skip_value(s, 1);
}

/* The whole payload: one chunk object with a choices array, and nothing but whitespace after
 * it. */
static bool read_chunk(struct scan *s, struct chunk *c)
{
    ws(s);
    if (!read_object(s, chunk_field, c) || !c->has_choices)
        return false;
    ws(s);
    return s->i == s->len;
}

/* What take_object (openai.c) reports for a chunk (body: a whole chat completion) of this
 * shape, in its order. */
static rein_err report(struct rein_provider_decoder *d, const struct chunk *c, bool body)
{
    /* the first chunk's id and model are kept; the thousands after it need no call */
    rein_err rc = d->a.r->answer_id && d->a.r->answer_model
                      ? REIN_OK
                      : rein__asm_identity(&d->a, c->id, c->model);

    if (rc)
        return rc;
    if (c->has_content && (rc = rein__asm_text(&d->a, c->content)) != REIN_OK)
        return rc;
    /* vLLM sends "reasoning" and "reasoning_content" with the same text: one is taken */
    if (c->has_rcontent && c->rcontent.len > 0)
        rc = rein__asm_reasoning(&d->a, c->rcontent);
    else if (c->has_reasoning)
        rc = rein__asm_reasoning(&d->a, c->reasoning);
    if (rc)
        return rc;
    for (int k = 0; k < c->ncalls; k++) {
        const struct call_piece *p = &c->calls[k];
        int call = rein__asm_call(&d->a, p->index, p->id, p->name);
        if (call < 0)
            return call;
        if (p->has_args && (rc = rein__asm_call_args(&d->a, (size_t)call, p->args)) != REIN_OK)
            return rc;
    }
    if (c->has_finish) {
        /* a finished choice has finished calls */
        rc = rein__asm_finish_reason(&d->a, c->finish);
        if (!rc)
            rc = rein__openai_close_calls(d);
        if (rc)
            return rc;
        rein__asm_complete(&d->a);
    } else if (body && (rc = rein__openai_close_calls(d)) != REIN_OK) {
        return rc; /* a whole reply's calls are whole */
    }
    if (c->has_usage) {
        rein__asm_usage(&d->a, c->usage.in, c->usage.out);
        rein__asm_usage_detail(&d->a, c->usage.cached, c->usage.reasoning);
        rein__asm_cache_write(&d->a, c->usage.cache_write);
    }
    d->recognized++;
    return REIN_OK;
}

/* The finish reasons the general path reads as a plain finish: a string of its own bytes
 * (no escape), not empty, not "null", not "error" (OpenRouter's failed choice). */
static bool plain_finish(const struct chunk *c)
{
    const struct rein__jstr *f = &c->finish;

    return !c->has_finish || (!f->esc && f->len > 0 && !(f->len == 4 && !memcmp(f->p, "null", 4)) &&
                              !(f->len == 5 && !memcmp(f->p, "error", 5)));
}

/*
 * The template: the last chunk read in full, with its string values as holes. The chunks of
 * a stream repeat each other but for a few strings (the text piece, OpenAI's "obfuscation"
 * padding), so the next one is most often the same bytes around the holes: then it reads as
 * the template read, with each hole's string taken from the new bytes (and checked as a
 * string). A reading is a function of the bytes alone, and each hole holds a string either
 * way, so the member names, nulls, numbers and nesting, all in the bytes compared, are the
 * same, and only the spans differ: exactly what the holes give.
 *
 * Holes whose strings stay the same from chunk to chunk (the id, the model, "object") are
 * compared as bytes with the rest; only those marked as varying are scanned. The texts and
 * arguments start marked; a chunk that matches only when every hole is scanned marks the
 * holes it found changed.
 */
#define TMPL_MAX 1024 /* longer chunks are read in full each time */

struct rein__oa_tmpl {
    size_t len;
    int nholes;
    /* The chunk carries text and nothing else the assembler is told of (no calls, reasoning,
     * finish or usage), and its bytes hold no line break: rein__openai_text_events() may
     * read events of this shape straight from the stream. */
    bool text_only;
    /* the holes marked varying, in order (what from_template() scans of each chunk) */
    int nvary;
    unsigned char vary[MAX_HOLES];
    struct hole holes[MAX_HOLES];
    struct chunk c;
    char text[TMPL_MAX];
};

static struct rein__jstr *target_span(struct chunk *c, int target)
{
    switch (target) {
    case H_ID:
        return &c->id;
    case H_MODEL:
        return &c->model;
    case H_FINISH:
        return &c->finish;
    case H_CONTENT:
        return &c->content;
    case H_RCONTENT:
        return &c->rcontent;
    case H_REASONING:
        return &c->reasoning;
    case H_OTHER:
        return NULL;
    default:
        target -= H_CALL;
        return target % 3 == 0   ? &c->calls[target / 3].id
               : target % 3 == 1 ? &c->calls[target / 3].name
                                 : &c->calls[target / 3].args;
    }
}

/*
 * Reads p as the template t with the holes marked varying (every hole when all) scanned and
 * the rest of the bytes compared; the spans go to *c, and when changed is not NULL, the holes
 * whose strings differ from the template's are marked there. False: not this shape.
 */
static bool from_template(const struct rein__oa_tmpl *t, const char *p, size_t len, bool all,
                          struct chunk *c, bool *changed)
{
    size_t at = 0, from = 0;

    /* the calls only as far as there are any: a chunk of text has none */
    memcpy(c, &t->c, offsetof(struct chunk, calls));
    memcpy(c->calls, t->c.calls, sizeof(c->calls[0]) * (size_t)t->c.ncalls);
    for (int h = 0; h < t->nholes; h++) {
        const struct hole *o = &t->holes[h];
        struct rein__jstr *span = target_span(c, o->target);
        size_t e;
        bool esc = false;

        if (!all && !o->varies) {
            /* same bytes as the template's, where they are once the comparison below
             * (up to the next varying hole, or the end) has said so */
            if (span) {
                span->p = p + at + (o->start - from);
                span->len = o->end - o->start;
                span->esc = o->esc;
            }
            continue;
        }
        if (len - at < o->start - from || memcmp(p + at, t->text + from, o->start - from) != 0)
            return false;
        at += o->start - from;
        e = string_end(p, len, at, &esc);
        if (e == JS_NONE)
            return false;
        if (span) {
            span->p = p + at;
            span->len = e - at;
            span->esc = esc;
        }
        if (changed)
            changed[h] =
                e - at != o->end - o->start || memcmp(p + at, t->text + o->start, e - at) != 0;
        at = e;
        from = o->end;
    }
    return len - at == t->len - from && memcmp(p + at, t->text + from, len - at) == 0;
}

static void note_varying(struct rein__oa_tmpl *t)
{
    t->nvary = 0;
    for (int h = 0; h < t->nholes; h++) {
        if (t->holes[h].varies)
            t->vary[t->nvary++] = (unsigned char)h;
    }
}

static void keep_template(struct rein_provider_decoder *d, const struct scan *s,
                          const struct chunk *c)
{
    struct rein__oa_tmpl *t = d->oa_tmpl;

    if (s->no_template || s->len > TMPL_MAX)
        return;
    if (!t && !(t = d->oa_tmpl = rein_malloc(sizeof(*t))))
        return; /* no template: each chunk is read in full */
    t->len = s->len;
    memcpy(t->text, s->js, s->len);
    t->nholes = s->nholes;
    for (int h = 0; h < s->nholes; h++) {
        t->holes[h] = s->holes[h];
        t->holes[h].varies = s->holes[h].target >= H_CONTENT;
    }
    note_varying(t);
    memcpy(&t->c, c, offsetof(struct chunk, calls));
    memcpy(t->c.calls, c->calls, sizeof(c->calls[0]) * (size_t)c->ncalls);
    t->text_only = c->has_content && !c->has_rcontent && !c->has_reasoning && !c->has_finish &&
                   !c->has_usage && c->ncalls == 0 && !memchr(t->text, '\n', t->len) &&
                   !memchr(t->text, '\r', t->len);
}

/* The chunk at p through the template when it has its shape, marking the holes that turn out
 * to vary. */
static bool through_template(struct rein__oa_tmpl *t, const char *p, size_t len, struct chunk *c)
{
    bool changed[MAX_HOLES];

    if (from_template(t, p, len, false, c, NULL))
        return true;
    if (!from_template(t, p, len, true, c, changed))
        return false;
    for (int h = 0; h < t->nholes; h++)
        t->holes[h].varies |= changed[h];
    note_varying(t);
    return true;
}

/*
 * One SSE event at p ("data: ", a chunk of the template's text-only shape, its line end and
 * the blank line, all within len) read as from_template() with only the varying holes scanned
 * would read the chunk: its length, with the text's span in *text; 0 for anything else. The
 * template's bytes hold no line break and a hole's string no control byte, so the line ends
 * where the template's bytes do, as the SSE reader would find it.
 */
static size_t text_event(const struct rein__oa_tmpl *t, const char *p, size_t len,
                         struct rein__jstr *text)
{
    size_t at, from = 0, end;
    const char *q;

    if (len < 8 || memcmp(p, "data:", 5) != 0)
        return 0;
    at = p[5] == ' ' ? 6 : 5; /* the one space the reader takes off */
    q = p + at;
    len -= at;
    at = 0;
    for (int v = 0; v < t->nvary; v++) {
        const struct hole *o = &t->holes[t->vary[v]];
        size_t e;
        bool esc = false;

        if (len - at < o->start - from || memcmp(q + at, t->text + from, o->start - from) != 0)
            return 0;
        at += o->start - from;
        e = string_end_wide(q, len, at, &esc);
        if (e == JS_NONE)
            return 0;
        if (o->target == H_CONTENT) {
            text->p = q + at;
            text->len = e - at;
            text->esc = esc;
        }
        at = e;
        from = o->end;
    }
    if (len - at < t->len - from || memcmp(q + at, t->text + from, t->len - from) != 0)
        return 0;
    end = rein__sse_event_end(q, len, at + t->len - from);
    return end ? (size_t)(q - p) + end : 0;
}

size_t rein__openai_text_events(struct rein_provider_decoder *d, const char *p, size_t len,
                                rein_err *rc)
{
    const struct rein__oa_tmpl *t = d->oa_tmpl;
    size_t done = 0;

    *rc = REIN_OK;
    /* the identity known too (report() asks for it until it is) */
    if (!t || !t->text_only || !d->a.r->answer_id || !d->a.r->answer_model ||
        !rein__sse_between_events(d, t->len))
        return 0;
    while (done < len) {
        struct rein__jstr text = no_str;
        size_t n = text_event(t, p + done, len - done, &text);

        if (!n)
            break;
        done += n;
        /* the data line and the blank one, as rein__decoder_saw() and report() count it */
        if ((*rc = rein__sse_took_text(d, 2, text)) != REIN_OK)
            break;
    }
    return done;
}

void rein__openai_chunk_free(struct rein__oa_tmpl *t)
{
    rein_free(t);
}

/* Reads p in full into *c (body: as a whole chat completion); false: not this shape. */
static bool read_in_full(struct scan *s, struct chunk *c, const char *p, size_t len, bool body)
{
    s->js = p;
    s->len = len;
    s->i = 0;
    s->nholes = 0;
    s->no_template = false;
    s->body = body;
    c->id = c->model = c->content = c->rcontent = c->reasoning = c->finish = no_str;
    c->has_choices = c->has_content = c->has_rcontent = c->has_reasoning = false;
    c->has_finish = c->has_usage = false;
    c->ncalls = 0;
    return read_chunk(s, c);
}

int rein__openai_chunk_fast(struct rein_provider_decoder *d, const char *p, size_t len)
{
    struct scan s;
    struct chunk c;
    rein_err rc;

    if (len > (size_t)0x7fffffff)
        return 0;
    if (!d->oa_tmpl || !through_template(d->oa_tmpl, p, len, &c)) {
        if (!read_in_full(&s, &c, p, len, false))
            return 0;
        keep_template(d, &s, &c);
    }
    if (!plain_finish(&c))
        return 0;
    rc = report(d, &c, false);
    return rc ? rc : 1;
}

int rein__openai_body_fast(struct rein_provider_decoder *d, const char *p, size_t len)
{
    struct scan s;
    struct chunk c;
    rein_err rc;

    /* one body per decoder: no template */
    if (len > (size_t)0x7fffffff || !read_in_full(&s, &c, p, len, true) || !plain_finish(&c))
        return 0;
    rc = report(d, &c, true);
    return rc ? rc : 1;
}
