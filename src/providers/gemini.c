/*
 * The Google Gemini wire protocol (generateContent), as the Gemini API (AI Studio, key in
 * x-goog-api-key) and Vertex AI (bearer token) both speak it. The model and the method are
 * part of the URL: BASE/models/MODEL:generateContent, or :streamGenerateContent?alt=sse for a
 * stream of SSE events.
 *
 * Decoding: every payload (each SSE event, or the one body; a body that is a JSON array, as
 * :streamGenerateContent answers without alt=sse, is taken element by element) is a
 * GenerateContentResponse, tokenized once with jsmn. Candidate 0's content.parts are read in
 * order: text (or reasoning when "thought" is true), functionCall (a whole call: id when the
 * model gave one, name, args as an object whose exact text is the raw argument string; or,
 * with Vertex's streamFunctionCallArguments, a call opened with willContinue whose
 * partialArgs pieces (jsonPath and value) build the arguments until an empty functionCall
 * ends it),
 * thoughtSignature (kept with the call it came on, or as the reply's signature when it came on
 * a text part); finishReason ends the reply (Gemini has no other end marker) and is kept as
 * the provider says it (STOP, MAX_TOKENS, SAFETY, RECITATION, MALFORMED_FUNCTION_CALL, …:
 * rein_model_response_finish() maps them); blocked safety ratings and finishMessage become
 * notes; a prompt blocked before any candidate (promptFeedback.blockReason) ends the reply
 * with that reason. usageMetadata: prompt tokens in, candidates plus thoughts tokens out, and
 * the cached and thoughts parts. {"error": {code, message, status, details}} is the
 * provider's error; a RetryInfo detail's retryDelay becomes the reply's retry_after_ms.
 *
 * Encoding: system messages go to systemInstruction; user text and tool results are "user"
 * contents (consecutive ones merged, as Gemini wants the answers to one turn's calls in one
 * content), assistant messages "model" contents of a text part and functionCall parts, each
 * with the signature it came with. A tool result is a functionResponse {name, response:
 * {"output": …} or {"error": …}}, its output the parsed JSON when the content is JSON,
 * followed by an inlineData part for each attachment (an MCP image, audio or PDF).
 * Tools become functionDeclarations whose parameters are converted to the subset of OpenAPI
 * 3.0 that Gemini's Schema object takes (see schema_out); what had to be dropped goes to
 * the request's dropped list (rein_model_request_dropped) and the log, once per request's tool
 * list.
 */
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include "jpull.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>

#define WHERE "providers"

/* ---------------------------------------------------------------------------------------
 * Decoding
 */

struct gemini_state {
    int64_t calls; /* functionCall parts seen: each is its own call */
    /* A call whose arguments stream (Vertex's streamFunctionCallArguments): the arguments
     * built from its partialArgs so far, and its call index. */
    json_t *partial;
    int open_call;
};

static void gemini_state_free(void *wire_state)
{
    struct gemini_state *s = wire_state;

    if (s)
        json_decref(s->partial);
    rein_free(s);
}

static struct gemini_state *state(struct rein_provider_decoder *d)
{
    if (!d->wire_state)
        d->wire_state = rein_calloc(1, sizeof(struct gemini_state));
    return d->wire_state;
}

static void take_usage(struct rein_provider_decoder *d, const struct jdoc *doc, int u)
{
    int64_t in, cand, thoughts, cached;

    if (!jis(doc, u, JSMN_OBJECT))
        return;
    in = JGET_INT(doc, u, "promptTokenCount");
    cand = JGET_INT(doc, u, "candidatesTokenCount");
    thoughts = JGET_INT(doc, u, "thoughtsTokenCount");
    cached = JGET_INT(doc, u, "cachedContentTokenCount");
    /* Thinking is billed as output: the output is what the candidates and thoughts took. */
    rein__asm_usage(
        &d->a, in,
        cand >= 0 || thoughts >= 0 ? (cand > 0 ? cand : 0) + (thoughts > 0 ? thoughts : 0) : -1);
    rein__asm_usage_detail(&d->a, cached, thoughts);
}

/*
 * Sets the value at a partialArg's jsonPath ("$.a.b", "$.list[2]") in root, making the
 * objects and arrays on the way; a string value continues the string already there (a long
 * string arrives in pieces). Paths rein cannot follow are skipped.
 */
static rein_err partial_set(json_t *root, const char *path, json_t *v, bool append)
{
    json_t *cur = root;
    const char *p = path;

    if (!v)
        return REIN_ENOMEM;
    if (*p++ != '$') {
        json_decref(v);
        return REIN_OK;
    }
    while (*p) {
        char key[256];
        size_t n = 0;
        long idx = -1;
        json_t *next;
        if (*p == '.') {
            for (p++; *p && *p != '.' && *p != '[' && n + 1 < sizeof(key); p++)
                key[n++] = *p;
            key[n] = '\0';
        } else if (*p == '[') {
            idx = strtol(p + 1, (char **)&p, 10);
            if (*p != ']' || idx < 0 || idx > 4096)
                break;
            p++;
        } else {
            break;
        }
        bool last = *p == '\0';
        if (idx < 0 && !json_is_object(cur))
            break;
        if (idx >= 0 && !json_is_array(cur))
            break;
        /* An array grows to the index with nulls: pieces come in order, but need not. */
        while (idx >= 0 && json_array_size(cur) < (size_t)idx) {
            if (json_array_append_new(cur, json_null()) != 0)
                goto nomem;
        }
        next = idx < 0 ? json_object_get(cur, key) : json_array_get(cur, (size_t)idx);
        if (last) {
            if (append && json_is_string(next) && json_is_string(v)) {
                char *joined = rein_asprintf("%s%s", json_string_value(next), json_string_value(v));
                json_decref(v);
                v = joined ? json_string(joined) : NULL;
                rein_free(joined);
                if (!v)
                    return REIN_ENOMEM;
            }
            if (idx < 0)
                return json_object_set_new(cur, key, v) ? REIN_ENOMEM : REIN_OK;
            if (next)
                return json_array_set_new(cur, (size_t)idx, v) ? REIN_ENOMEM : REIN_OK;
            return json_array_append_new(cur, v) ? REIN_ENOMEM : REIN_OK;
        }
        if (!next) {
            next = *p == '[' ? json_array() : json_object();
            if (!next || (idx < 0 ? json_object_set_new(cur, key, next)
                                  : json_array_append_new(cur, next)) != 0)
                goto nomem;
        }
        cur = next;
    }
    json_decref(v);
    return REIN_OK;
nomem:
    json_decref(v);
    return REIN_ENOMEM;
}

static rein_err take_partial_args(struct gemini_state *s, const struct jdoc *doc, int arr)
{
    rein_err rc = REIN_OK;
    int i = arr + 1;

    for (int k = 0; jis(doc, arr, JSMN_ARRAY) && k < doc->t[arr].size && !rc;
         k++, i = jnext(doc, i)) {
        static const struct jkey keys[] = {JK("jsonPath"), JK("stringValue"), JK("numberValue"),
                                           JK("boolValue"), JK("nullValue")};
        int f[5];
        json_t *path;
        JFIELDS(doc, i, keys, f);
        path = jtree(doc, f[0]);
        if (json_is_string(path)) {
            int v = f[1] >= 0 ? f[1] : f[2] >= 0 ? f[2] : f[3];
            rc = partial_set(s->partial, json_string_value(path),
                             v >= 0 ? jtree(doc, v) : json_null(), f[1] >= 0);
        }
        json_decref(path);
    }
    return rc;
}

/* Ends the call whose arguments streamed: its arguments are what the pieces built. */
static rein_err close_partial(struct rein_provider_decoder *d, struct gemini_state *s, bool close)
{
    char *raw = rein_json_dumps(s->partial);
    rein_err rc =
        raw ? rein__asm_call_args_raw(&d->a, (size_t)s->open_call, raw, strlen(raw)) : REIN_ENOMEM;

    rein_free(raw);
    json_decref(s->partial);
    s->partial = NULL;
    return rc || !close ? rc : rein__asm_call_close(&d->a, (size_t)s->open_call);
}

/* One functionCall part: a whole call, or a piece of one whose arguments stream. */
static rein_err take_call(struct rein_provider_decoder *d, const struct jdoc *doc, int fc, int sig)
{
    static const struct jkey keys[] = {JK("id"), JK("name"), JK("args"), JK("partialArgs"),
                                       JK("willContinue")};
    struct gemini_state *s = state(d);
    int f[5], call;
    rein_err rc = REIN_OK;

    if (!s)
        return REIN_ENOMEM;
    JFIELDS(doc, fc, keys, f);
    if (s->partial && f[1] < 0) {
        /* The streaming call goes on ({partialArgs, willContinue}) or ends ({}). */
        rc = take_partial_args(s, doc, f[3]);
        return rc || jtrue(doc, f[4]) ? rc : close_partial(d, s, true);
    }
    if (s->partial && (rc = close_partial(d, s, true)) != REIN_OK)
        return rc;
    call = rein__asm_call(&d->a, s->calls++, jstr(doc, f[0]), jstr(doc, f[1]));
    if (call < 0)
        return call;
    if (jis(doc, sig, JSMN_STRING))
        rc = rein__asm_call_signature(&d->a, (size_t)call, jstr(doc, sig));
    if (!rc && jtrue(doc, f[4]) && !jis(doc, f[2], JSMN_OBJECT)) {
        s->partial = json_object();
        s->open_call = call;
        return s->partial ? take_partial_args(s, doc, f[3]) : REIN_ENOMEM;
    }
    if (!rc && f[2] >= 0 && !jnull(doc, f[2])) {
        /* The exact text of args is the raw argument string (not an object: the call's
         * check says so). */
        size_t len;
        const char *raw = jraw(doc, f[2], &len);
        rc = rein__asm_call_args_raw(&d->a, (size_t)call, raw, len);
    } else if (!rc) {
        rc = rein__asm_call_args_raw(&d->a, (size_t)call, "{}", 2);
    }
    return rc ? rc : rein__asm_call_close(&d->a, (size_t)call);
}

/* A stream that ended inside a call whose arguments streamed: what arrived is kept, and the
 * call stays open (the reply decides it as cut). */
static rein_err gemini_end(struct rein_provider_decoder *d)
{
    struct gemini_state *s = d->wire_state;

    return s && s->partial ? close_partial(d, s, false) : REIN_OK;
}

static rein_err take_parts(struct rein_provider_decoder *d, const struct jdoc *doc, int parts)
{
    static const struct jkey keys[] = {JK("text"), JK("thought"), JK("functionCall"),
                                       JK("thoughtSignature")};
    rein_err rc = REIN_OK;
    int i = parts + 1;

    for (int k = 0; k < doc->t[parts].size && !rc; k++, i = jnext(doc, i)) {
        int f[4];
        if (!jis(doc, i, JSMN_OBJECT))
            continue;
        JFIELDS(doc, i, keys, f);
        if (jis(doc, f[2], JSMN_OBJECT)) {
            rc = take_call(d, doc, f[2], f[3]);
            continue;
        }
        if (jis(doc, f[0], JSMN_STRING))
            rc = jtrue(doc, f[1]) ? rein__asm_reasoning(&d->a, jstr(doc, f[0]))
                                  : rein__asm_text(&d->a, jstr(doc, f[0]));
        /* A signature on a text or thought part: one per reply goes back, the first. */
        if (!rc && jis(doc, f[3], JSMN_STRING) && d->r->signature.len == 0)
            rc = rein__asm_signature(&d->a, jstr(doc, f[3]));
        if (f[0] < 0 && f[3] < 0)
            rein__decoder_note(d, "a part that is not text, thought or functionCall (code "
                                  "execution, inline data) was skipped");
    }
    return rc;
}

static void note_safety(struct rein_provider_decoder *d, const struct jdoc *doc, int ratings)
{
    int i = ratings + 1;

    for (int k = 0; jis(doc, ratings, JSMN_ARRAY) && k < doc->t[ratings].size;
         k++, i = jnext(doc, i)) {
        struct rein__jstr cat = jstr(doc, JGET(doc, i, "category"));
        struct rein__jstr prob = jstr(doc, JGET(doc, i, "probability"));
        char note[200];
        if (!jtrue(doc, JGET(doc, i, "blocked")))
            continue;
        snprintf(note, sizeof(note), "safety: %.*s (%.*s) blocked the reply",
                 (int)(cat.len < 80 ? cat.len : 80), cat.p, (int)(prob.len < 40 ? prob.len : 40),
                 prob.p);
        rein__decoder_note(d, note);
    }
}

static rein_err take_candidate(struct rein_provider_decoder *d, const struct jdoc *doc, int cand)
{
    static const struct jkey keys[] = {JK("content"), JK("finishReason"), JK("safetyRatings"),
                                       JK("finishMessage"), JK("index")};
    int f[5];
    int64_t index = 0;
    rein_err rc = REIN_OK;

    JFIELDS(doc, cand, keys, f);
    if (jint(doc, f[4], &index) && index != 0) {
        d->a.other_choices = true;
        return REIN_OK;
    }
    if (jis(doc, f[0], JSMN_OBJECT)) {
        int parts = JGET(doc, f[0], "parts");
        if (jis(doc, parts, JSMN_ARRAY))
            rc = take_parts(d, doc, parts);
    }
    note_safety(d, doc, f[2]);
    if (!rc && jis(doc, f[1], JSMN_STRING)) {
        rc = rein__asm_finish_reason(&d->a, jstr(doc, f[1]));
        rein__asm_complete(&d->a);
        if (!JEQ(doc, f[1], "STOP") && jis(doc, f[3], JSMN_STRING)) {
            struct rein__jstr m = jstr(doc, f[3]);
            char note[300];
            snprintf(note, sizeof(note), "finishMessage: %.*s", (int)(m.len < 260 ? m.len : 260),
                     m.p);
            rein__decoder_note(d, note);
        }
    }
    return rc;
}

/* "34.4s" (a protobuf Duration in JSON) in milliseconds, or -1. */
static int64_t duration_ms(const struct jdoc *doc, int i)
{
    char buf[32], *end;
    size_t len;
    const char *p;
    double secs;

    if (!jis(doc, i, JSMN_STRING))
        return -1;
    p = jraw(doc, i, &len);
    if (len == 0 || len >= sizeof(buf) || p[len - 1] != 's')
        return -1;
    memcpy(buf, p, len - 1);
    buf[len - 1] = '\0';
    secs = strtod(buf, &end);
    return end != buf && *end == '\0' && secs >= 0 && secs < 1e9 ? (int64_t)(secs * 1000.0) : -1;
}

static void take_error(struct rein_provider_decoder *d, const struct jdoc *doc, int e)
{
    int details = JGET(doc, e, "details"), i = details + 1;

    for (int k = 0; jis(doc, details, JSMN_ARRAY) && k < doc->t[details].size;
         k++, i = jnext(doc, i)) {
        int64_t ms = duration_ms(doc, JGET(doc, i, "retryDelay"));
        if (ms >= 0)
            d->r->retry_after_ms = ms;
    }
    rein__asm_error(&d->a, jtree(doc, e));
}

/* One GenerateContentResponse (or an error object). */
static rein_err take_response(struct rein_provider_decoder *d, const struct jdoc *doc, int obj)
{
    static const struct jkey keys[] = {JK("candidates"), JK("usageMetadata"), JK("promptFeedback"),
                                       JK("error"),      JK("responseId"),    JK("modelVersion")};
    int f[6];
    rein_err rc;

    JFIELDS(doc, obj, keys, f);
    if (f[3] >= 0 && !jnull(doc, f[3])) {
        take_error(d, doc, f[3]);
        d->recognized++;
        return REIN_OK;
    }
    if (f[0] < 0 && f[1] < 0 && f[2] < 0)
        return REIN_OK; /* not a shape rein knows: skipped, not counted */
    d->recognized++;
    if ((rc = rein__asm_identity(&d->a, jstr(doc, f[4]), jstr(doc, f[5]))))
        return rc;
    if (jis(doc, f[0], JSMN_ARRAY)) {
        int c = f[0] + 1;
        for (int k = 0; k < doc->t[f[0]].size && !rc; k++, c = jnext(doc, c))
            rc = jis(doc, c, JSMN_OBJECT) ? take_candidate(d, doc, c) : REIN_OK;
    }
    take_usage(d, doc, f[1]);
    if (!rc && jis(doc, f[2], JSMN_OBJECT)) {
        int br = JGET(doc, f[2], "blockReason");
        if (jis(doc, br, JSMN_STRING)) {
            /* The prompt was refused before any candidate: that is how the reply ends. */
            note_safety(d, doc, JGET(doc, f[2], "safetyRatings"));
            rein__decoder_note(d, "the prompt was blocked (promptFeedback.blockReason)");
            rc = rein__asm_finish_reason(&d->a, jstr(doc, br));
            rein__asm_complete(&d->a);
        }
    }
    return rc;
}

static bool blank(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            return false;
    }
    return true;
}

/* Every object at the top (one object, or the elements of an array). */
static rein_err take_top(struct rein_provider_decoder *d, const struct jdoc *doc, bool *shape)
{
    rein_err rc = REIN_OK;

    *shape = true;
    if (doc->t[0].type == JSMN_OBJECT)
        return take_response(d, doc, 0);
    if (doc->t[0].type != JSMN_ARRAY) {
        *shape = false;
        return REIN_OK;
    }
    for (int k = 0, i = 1; k < doc->t[0].size && !rc; k++, i = jnext(doc, i)) {
        if (!jis(doc, i, JSMN_OBJECT)) {
            *shape = false;
            return REIN_OK;
        }
        rc = take_response(d, doc, i);
    }
    return rc;
}

static rein_err gemini_payload(struct rein_provider_decoder *d, const char *event, const char *p,
                               size_t len, rein_error *err)
{
    struct jdoc doc;
    size_t n;
    bool shape;
    int r;
    rein_err rc;

    if (blank(p, len))
        return REIN_OK;
    n = rein__decoder_saw(d, p, len);
    r = jdoc_parse(&doc, p, len, &d->tok, &d->tokcap);
    if (r == JSMN_ERROR_NOMEM)
        return REIN_ENOMEM;
    if (r <= 0 && rein__decoder_cut_at_eof(d, r == JSMN_ERROR_PART))
        return REIN_OK;
    if (r <= 0 && rein__decoder_error_text(d, event, p, len))
        return REIN_OK;
    if (r <= 0 || jnext(&doc, 0) != doc.n)
        return rein__decoder_bad(d, n, p, len,
                                 r == JSMN_ERROR_PART ? "the JSON is cut short"
                                 : r <= 0             ? "not JSON"
                                                      : "an event must be one JSON value",
                                 err);
    rc = take_top(d, &doc, &shape);
    if (!rc && !shape)
        return rein__decoder_bad(d, n, p, len, "an event must be a JSON object", err);
    return rc;
}

static rein_err gemini_body(struct rein_provider_decoder *d, const char *p, size_t len,
                            rein_error *err)
{
    struct jdoc doc;
    bool shape;
    int r;
    rein_err rc;

    if (blank(p, len))
        return rein__decoder_bad(d, 0, p, len, "the body is empty", err);
    rein__decoder_saw(d, p, len);
    r = jdoc_parse(&doc, p, len, &d->tok, &d->tokcap);
    if (r == JSMN_ERROR_NOMEM)
        return REIN_ENOMEM;
    if (r <= 0 || jnext(&doc, 0) != doc.n) {
        rein_error jerr;
        rein_error_clear(&jerr);
        json_t *v = rein_json_parse(p, len, 0, &jerr);
        json_decref(v);
        return rein__decoder_bad(d, 0, p, len, v ? "the body must be one JSON value" : jerr.msg,
                                 err);
    }
    rc = take_top(d, &doc, &shape);
    if (!rc && (!shape || !d->recognized))
        return rein__decoder_bad(d, 0, p, len, "no candidates, usageMetadata or error", err);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * Tools: JSON Schema to Gemini's Schema object
 *
 * Gemini's Schema is a subset of OpenAPI 3.0 (ai.google.dev/api/caching#Schema): type (one of
 * STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT, NULL), format, title, description,
 * nullable, enum (strings), items, minItems, maxItems, properties, required, minProperties,
 * maxProperties, propertyOrdering, minLength, maxLength, pattern, minimum, maximum, anyOf,
 * example, default. Anything else makes the request fail, so it is converted where there is
 * a faithful form and dropped otherwise: ["T", "null"] becomes T with nullable; const a
 * one-value enum; oneOf anyOf (looser: "exactly one" becomes "at least one"); a local $ref
 * into $defs/definitions is inlined (to a depth of 8; deeper or recursive ones are dropped).
 * Dropped keywords are collected as {"tool", "keyword", "at" (a JSON pointer), "reason"}.
 */

struct conv {
    const json_t *root;
    const char *tool;
    json_t *dropped; /* the request's list */
    int depth;
};

/* Past this many entries per request the list stops growing (a schema built to be huge). */
#define DROPPED_MAX 200

static void dropped(struct conv *c, const char *key, const char *at, const char *reason)
{
    /* A failure to note it loses nothing the request needs: the keyword is left out either
     * way. */
    if (json_array_size(c->dropped) >= DROPPED_MAX)
        return;
    json_array_append_new(c->dropped, json_pack("{s:s, s:s, s:s, s:s}", "tool", c->tool, "keyword",
                                                key, "at", at[0] ? at : "/", "reason", reason));
}

static const char *gemini_type(const char *t)
{
    static const char *const map[][2] = {
        {"string", "STRING"}, {"number", "NUMBER"}, {"integer", "INTEGER"}, {"boolean", "BOOLEAN"},
        {"array", "ARRAY"},   {"object", "OBJECT"}, {"null", "NULL"}};

    for (size_t i = 0; t && i < REIN_ARRAY_SIZE(map); i++) {
        if (strcmp(t, map[i][0]) == 0)
            return map[i][1];
    }
    return NULL;
}

/* The format values Gemini takes for a type; others are dropped. */
static bool format_ok(const char *type, const char *fmt)
{
    if (!type || !fmt)
        return false;
    if (!strcmp(type, "STRING"))
        return !strcmp(fmt, "enum") || !strcmp(fmt, "date-time");
    if (!strcmp(type, "NUMBER"))
        return !strcmp(fmt, "float") || !strcmp(fmt, "double");
    if (!strcmp(type, "INTEGER"))
        return !strcmp(fmt, "int32") || !strcmp(fmt, "int64");
    return false;
}

static void schema_out(struct conv *c, struct rein_jw *w, const json_t *s, const char *at);

/* A local reference's target (#/$defs/X or #/definitions/X), or NULL. */
static const json_t *ref_target(const struct conv *c, const char *ref)
{
    const char *name;
    const json_t *defs;

    if (!strncmp(ref, "#/$defs/", 8)) {
        defs = json_object_get(c->root, "$defs");
        name = ref + 8;
    } else if (!strncmp(ref, "#/definitions/", 14)) {
        defs = json_object_get(c->root, "definitions");
        name = ref + 14;
    } else {
        return NULL;
    }
    return json_object_get(defs, name);
}

/* The type of s for Gemini, and whether null is allowed besides (a type array). */
static const char *type_of(struct conv *c, const json_t *s, bool *nullable, const char *at)
{
    const json_t *t = json_object_get(s, "type");
    const char *out = NULL;
    size_t i, others = 0;
    const json_t *v;

    *nullable = false;
    if (json_is_string(t))
        return gemini_type(json_string_value(t));
    json_array_foreach(t, i, v)
    {
        const char *g = gemini_type(json_string_value(v));
        if (g && !strcmp(g, "NULL"))
            *nullable = true;
        else if (g && !out)
            out = g;
        else if (g)
            others++;
    }
    if (others)
        dropped(c, "type", at, "Gemini takes one type (and nullable): the others were left out");
    if (!t) {
        /* Gemini wants a type where JSON Schema may leave it to the other keywords. */
        if (json_object_get(s, "properties"))
            return "OBJECT";
        if (json_object_get(s, "items"))
            return "ARRAY";
    }
    return out;
}

static void props_out(struct conv *c, struct rein_jw *w, const json_t *props, const char *at)
{
    const char *k;
    const json_t *v;

    rein_jw_key(w, "properties");
    rein_jw_obj_begin(w);
    json_object_foreach((json_t *)props, k, v)
    {
        char sub[512];
        snprintf(sub, sizeof(sub), "%s/properties/%s", at, k);
        rein_jw_key(w, k);
        schema_out(c, w, v, sub);
    }
    rein_jw_obj_end(w);
}

static void any_of_out(struct conv *c, struct rein_jw *w, const json_t *arr, const char *at,
                       const char *key)
{
    size_t i;
    const json_t *v;

    rein_jw_key(w, "anyOf");
    rein_jw_arr_begin(w);
    json_array_foreach(arr, i, v)
    {
        char sub[512];
        snprintf(sub, sizeof(sub), "%s/%s/%zu", at, key, i);
        schema_out(c, w, v, sub);
    }
    rein_jw_arr_end(w);
}

static bool all_strings(const json_t *arr)
{
    size_t i;
    const json_t *v;

    if (!json_is_array(arr))
        return false;
    json_array_foreach(arr, i, v)
    {
        if (!json_is_string(v))
            return false;
    }
    return true;
}

/* Members copied as they are when their value has the right JSON type. */
static bool copy_member(struct rein_jw *w, const char *k, const json_t *v)
{
    static const char *const strs[] = {"title", "description", "pattern"};
    static const char *const nums[] = {"minItems",      "maxItems",      "minLength", "maxLength",
                                       "minProperties", "maxProperties", "minimum",   "maximum"};

    for (size_t i = 0; i < REIN_ARRAY_SIZE(strs); i++) {
        if (!strcmp(k, strs[i]) && json_is_string(v))
            goto copy;
    }
    for (size_t i = 0; i < REIN_ARRAY_SIZE(nums); i++) {
        if (!strcmp(k, nums[i]) && json_is_number(v))
            goto copy;
    }
    if ((!strcmp(k, "required") || !strcmp(k, "propertyOrdering")) && all_strings(v))
        goto copy;
    if ((!strcmp(k, "example") || !strcmp(k, "default")) ||
        (!strcmp(k, "nullable") && json_is_boolean(v)))
        goto copy;
    return false;
copy:
    rein_jw_key(w, k);
    rein_jw_json(w, v);
    return true;
}

/* Keywords that carry no constraint: left out without a word. */
static bool silent(const char *k)
{
    return !strcmp(k, "$schema") || !strcmp(k, "$id") || !strcmp(k, "$comment") ||
           !strcmp(k, "$defs") || !strcmp(k, "definitions") || !strcmp(k, "examples");
}

static void schema_out(struct conv *c, struct rein_jw *w, const json_t *s, const char *at)
{
    const char *k, *type;
    const json_t *v, *ref = json_object_get(s, "$ref");
    bool nullable;

    if (json_is_string(ref)) {
        const json_t *target = ref_target(c, json_string_value(ref));
        if (target && c->depth < 8) {
            c->depth++;
            schema_out(c, w, target, at);
            c->depth--;
            return;
        }
        dropped(c, "$ref", at, "not a local reference, recursive or nested deeper than 8");
        rein_jw_obj_begin(w);
        rein_jw_obj_end(w);
        return;
    }
    if (!json_is_object(s)) {
        if (!json_is_true(s))
            dropped(c, "schema", at, "a schema that is not an object");
        rein_jw_obj_begin(w);
        rein_jw_obj_end(w);
        return;
    }
    type = type_of(c, s, &nullable, at);
    rein_jw_obj_begin(w);
    if (type) {
        rein_jw_key(w, "type");
        rein_jw_str(w, type);
    }
    if (nullable) {
        rein_jw_key(w, "nullable");
        rein_jw_bool(w, true);
    }
    json_object_foreach((json_t *)s, k, v)
    {
        if (!strcmp(k, "type") || silent(k) || (nullable && !strcmp(k, "nullable")))
            continue;
        if (!strcmp(k, "properties") && json_is_object(v)) {
            props_out(c, w, v, at);
        } else if (!strcmp(k, "items") && json_is_object(v)) {
            char sub[512];
            snprintf(sub, sizeof(sub), "%s/items", at);
            rein_jw_key(w, "items");
            schema_out(c, w, v, sub);
        } else if ((!strcmp(k, "anyOf") || !strcmp(k, "oneOf")) && json_is_array(v) &&
                   !json_object_get(s, !strcmp(k, "oneOf") ? "anyOf" : "")) {
            any_of_out(c, w, v, at, k);
        } else if (!strcmp(k, "enum") && all_strings(v)) {
            rein_jw_key(w, "enum");
            rein_jw_json(w, v);
        } else if (!strcmp(k, "const") && json_is_string(v) && !json_object_get(s, "enum")) {
            rein_jw_key(w, "enum");
            rein_jw_arr_begin(w);
            rein_jw_str(w, json_string_value(v));
            rein_jw_arr_end(w);
        } else if (!strcmp(k, "format") && json_is_string(v)) {
            if (format_ok(type, json_string_value(v))) {
                rein_jw_key(w, "format");
                rein_jw_json(w, v);
            } else {
                dropped(c, "format", at, "not a format Gemini takes for this type");
            }
        } else if (!copy_member(w, k, v)) {
            dropped(c, k, at, "not in Gemini's Schema");
        }
    }
    rein_jw_obj_end(w);
}

/* True when the tool takes no arguments (no parameters, or an object without properties):
 * Gemini refuses an OBJECT schema with empty properties, so parameters are left out. */
static bool no_params(const json_t *p)
{
    const json_t *props = json_object_get(p, "properties");

    return !p || (!json_object_size(props) && !json_object_get(p, "$ref") &&
                  !json_object_get(p, "anyOf") && !json_object_get(p, "oneOf"));
}

/* Logs what was dropped from tool t's parameters: the entries of list from `from` on. */
static void log_dropped(const char *tool, const json_t *list, size_t from)
{
    struct rein_buf b;

    if (json_array_size(list) <= from || !rein_log_enabled(REIN_LOG_WARN))
        return;
    rein_buf_init(&b, 0);
    /* Only for the log: a failed append ends the line there. */
    for (size_t i = from; i < json_array_size(list); i++) {
        const json_t *e = json_array_get(list, i);
        if (rein_buf_addf(&b, "%s%s at %s", i > from ? ", " : "", rein__json_str(e, "keyword"),
                          rein__json_str(e, "at")) != REIN_OK)
            break;
    }
    rein_log(REIN_LOG_WARN, WHERE,
             "gemini: tool \"%s\": dropped from its parameters (Gemini's Schema does not take "
             "them): %s",
             tool, b.len ? b.ptr : "?");
    rein_buf_release(&b);
}

static rein_err gemini_encode_tools(const rein_provider *p, const rein_model_request *req,
                                    struct rein_buf *out)
{
    struct rein_jw w;

    (void)p;
    rein_jw_init(&w, out);
    rein_jw_arr_begin(&w);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "functionDeclarations");
    rein_jw_arr_begin(&w);
    for (size_t i = 0; i < req->ntools; i++) {
        const struct rein__tool *t = &req->tools[i];
        size_t before = json_array_size(req->dropped);
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "name");
        rein_jw_str(&w, t->name);
        if (t->description) {
            rein_jw_key(&w, "description");
            rein_jw_str(&w, t->description);
        }
        if (!no_params(t->parameters)) {
            struct conv c = {t->parameters, t->name, req->dropped, 0};
            rein_jw_key(&w, "parameters");
            schema_out(&c, &w, t->parameters, "");
        }
        rein_jw_obj_end(&w);
        log_dropped(t->name, req->dropped, before);
    }
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    rein_jw_arr_end(&w);
    return rein_jw_finish(&w);
}

/* ---------------------------------------------------------------------------------------
 * Messages. A message's cached piece is its parts, comma-separated, without the brackets:
 * the body merges the pieces of consecutive messages of one role into one content.
 */

static void text_part(struct rein_jw *w, const char *text, const char *sig)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "text");
    rein_jw_str(w, text);
    if (sig && sig[0]) {
        rein_jw_key(w, "thoughtSignature");
        rein_jw_str(w, sig);
    }
    rein_jw_obj_end(w);
}

static void call_part(struct rein_jw *w, const json_t *call)
{
    const char *id = rein__json_str(call, "id");
    const char *sig = rein__json_str(call, "signature");

    rein_jw_obj_begin(w);
    rein_jw_key(w, "functionCall");
    rein_jw_obj_begin(w);
    if (id[0] && !rein_model_call_id_made_up(id)) {
        rein_jw_key(w, "id");
        rein_jw_str(w, id);
    }
    rein_jw_key(w, "name");
    rein_jw_str(w, rein__json_str(call, "name"));
    rein_jw_key(w, "args");
    rein__jw_tool_args_raw(w, rein__json_str(call, "arguments"));
    rein_jw_obj_end(w);
    if (sig[0]) {
        rein_jw_key(w, "thoughtSignature");
        rein_jw_str(w, sig);
    }
    rein_jw_obj_end(w);
}

/* True for the media Gemini takes as inline data (ai.google.dev: image, audio and document
 * understanding): PNG, JPEG, WebP, HEIC and HEIF images, WAV, MP3 (audio/mp3 or audio/mpeg),
 * AIFF, AAC, OGG and FLAC audio, PDF and plain text. */
static bool inline_ok(const char *mime)
{
    static const char *const ok[] = {"image/png",       "image/jpeg", "image/webp", "image/heic",
                                     "image/heif",      "audio/wav",  "audio/mp3",  "audio/mpeg",
                                     "audio/aiff",      "audio/aac",  "audio/ogg",  "audio/flac",
                                     "application/pdf", "text/plain"};

    for (size_t i = 0; i < REIN_ARRAY_SIZE(ok); i++)
        if (strcmp(mime, ok[i]) == 0)
            return true;
    return false;
}

/* An attachment as an inlineData part, when it is a medium Gemini takes inline. */
static bool inline_part(struct rein_jw *w, const json_t *att)
{
    const char *mime = rein__json_str(att, "mime_type");

    if (!inline_ok(mime))
        return false;
    rein_jw_obj_begin(w);
    rein_jw_key(w, "inlineData");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "mimeType");
    /* MP3's registered type, as other wires name it, in the name Gemini's list gives it */
    rein_jw_str(w, strcmp(mime, "audio/mpeg") == 0 ? "audio/mp3" : mime);
    rein_jw_key(w, "data");
    rein_jw_str(w, rein__json_str(att, "data"));
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
    return true;
}

/* A tool result: {"output": the content} or {"error": …}, the content parsed when it is
 * JSON (so the model reads structure, not an escaped string); then its attachments. */
static void response_part(struct rein_jw *w, const json_t *msg, const char *name)
{
    const char *id = rein__json_str(msg, "tool_call_id");
    const char *content = rein__json_str(msg, "content");
    json_t *parsed = content[0] == '{' || content[0] == '['
                         ? rein_json_parse(content, strlen(content), 0, NULL)
                         : NULL;

    rein_jw_obj_begin(w);
    rein_jw_key(w, "functionResponse");
    rein_jw_obj_begin(w);
    if (id[0] && !rein_model_call_id_made_up(id)) {
        rein_jw_key(w, "id");
        rein_jw_str(w, id);
    }
    rein_jw_key(w, "name");
    rein_jw_str(w, name);
    rein_jw_key(w, "response");
    rein_jw_obj_begin(w);
    rein_jw_key(w, json_is_true(json_object_get(msg, "is_error")) ? "error" : "output");
    if (parsed)
        rein_jw_json(w, parsed);
    else
        rein_jw_str(w, content);
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
    json_decref(parsed);
    /* The attachments follow in the same content (as the Vercel AI SDK sends a tool's media:
     * every Gemini model reads such parts, not only those that take parts inside a
     * functionResponse); the others named as not sent in a last text part. */
    rein__jw_attachments(w, msg, "the Gemini API", NULL, inline_part);
}

/* A user (or system) message's parts: its text, then an inlineData part per attachment Gemini
 * takes (the others named as not sent in a last text part). A message of media alone has no
 * text part: an empty one says nothing. */
static void user_parts(struct rein_jw *w, const json_t *msg)
{
    const char *content = rein__json_str(msg, "content");

    if (content[0] || !json_array_size(json_object_get(msg, "attachments")))
        text_part(w, content, NULL);
    rein__jw_attachments(w, msg, "the Gemini API", NULL, inline_part);
}

static bool gemini_takes_media(const char *mime)
{
    return inline_ok(mime);
}

static void model_parts(struct rein_jw *w, const json_t *msg)
{
    const char *content = rein__json_str(msg, "content");
    const char *sig = rein__json_str(msg, "reasoning_signature");
    const json_t *calls = json_object_get(msg, "tool_calls");
    const json_t *c;
    size_t i;

    if (content[0] || !json_array_size(calls))
        text_part(w, content, sig);
    else if (sig[0] && !json_is_string(json_object_get(json_array_get(calls, 0), "signature")))
        text_part(w, "", sig);
    json_array_foreach(calls, i, c)
    {
        call_part(w, c);
    }
}

/* Drops the brackets of an encoded array: "[a,b]" -> "a,b". */
static void unbracket(struct rein_buf *out)
{
    memmove(out->ptr, out->ptr + 1, out->len - 2);
    rein_buf_truncate(out, out->len - 2);
}

static rein_err gemini_encode_message(const rein_provider *p, const json_t *msg,
                                      struct rein_buf *out)
{
    const char *role = rein__json_str(msg, "role");
    struct rein_jw w;
    rein_err rc;

    (void)p;
    rein_jw_init(&w, out);
    rein_jw_arr_begin(&w);
    if (!strcmp(role, "tool"))
        response_part(&w, msg, rein__json_str(msg, "name"));
    else if (!strcmp(role, "assistant"))
        model_parts(&w, msg);
    else
        user_parts(&w, msg);
    rein_jw_arr_end(&w);
    rc = rein_jw_finish(&w);
    if (!rc)
        unbracket(out);
    return rc;
}

/* The name of the call a tool result without one answers: from the assistant turn before. */
static const char *call_name(const rein_history *h, size_t i, const char *id)
{
    return rein__json_str(rein__history_answered_call(h, i, id), "name");
}

/* Message i's piece: a tool result that does not name its call gets the name of the call it
 * answers, from the assistant message before it. */
static rein_err gemini_encode_in(const rein_provider *p, const rein_history *h, size_t i,
                                 struct rein_buf *out)
{
    const json_t *m = rein_history_get(h, i);
    struct rein_jw w;
    rein_err rc;

    if (strcmp(rein__json_str(m, "role"), "tool") != 0 || rein__json_str(m, "name")[0])
        return gemini_encode_message(p, m, out);
    rein_jw_init(&w, out);
    rein_jw_arr_begin(&w);
    response_part(&w, m, call_name(h, i, rein__json_str(m, "tool_call_id")));
    rein_jw_arr_end(&w);
    rc = rein_jw_finish(&w);
    if (rc)
        return rc;
    unbracket(out);
    return REIN_OK;
}

static void tool_config(struct rein_jw *w, const char *choice)
{
    rein_jw_key(w, "toolConfig");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "functionCallingConfig");
    rein_jw_obj_begin(w);
    rein_jw_key(w, "mode");
    if (!strcmp(choice, "auto") || !strcmp(choice, "none")) {
        rein_jw_str(w, !strcmp(choice, "auto") ? "AUTO" : "NONE");
    } else {
        rein_jw_str(w, "ANY");
        if (strcmp(choice, "required") != 0) {
            rein_jw_key(w, "allowedFunctionNames");
            rein_jw_arr_begin(w);
            rein_jw_str(w, choice);
            rein_jw_arr_end(w);
        }
    }
    rein_jw_obj_end(w);
    rein_jw_obj_end(w);
}

/* True when the generationConfig member key (as a caller's extra names it) is one the request's
 * own settings write. */
static bool own_setting(const rein_model_request *req, const char *key)
{
    return (req->max_tokens > 0 && !strcmp(key, "maxOutputTokens")) ||
           (req->temperature >= 0 && !strcmp(key, "temperature")) ||
           (req->top_p >= 0 && !strcmp(key, "topP")) ||
           (req->nstop > 0 && !strcmp(key, "stopSequences"));
}

/* Gemini 3's thinkingLevel for e: Flash's four levels (minimal, low, medium, high; none is
 * its minimal, as Gemini 3 cannot stop thinking), Pro's two (low up to low, high above). */
static const char *gemini3_level(const char *model, enum rein_reasoning e)
{
    if (strstr(model, "flash"))
        return e <= REIN_REASONING_MINIMAL  ? "minimal"
               : e == REIN_REASONING_LOW    ? "low"
               : e == REIN_REASONING_MEDIUM ? "medium"
                                            : "high";
    return e <= REIN_REASONING_LOW ? "low" : "high";
}

/* Gemini 2.5 Flash's and Flash-Lite's highest thinking budget (Pro's is 32,768). */
#define FLASH_BUDGET_MAX 24576

/*
 * thinkingConfig for the request's reasoning (decision 0095), with the thoughts' summaries, the
 * reasoning other wires show. Gemini 3 asks for a thinkingLevel, low or high (it cannot stop
 * thinking; Flash has four, decision 0099): an effort word becomes one; a budget goes as
 * thinkingBudget, which every thinking
 * Gemini takes (Gemini 3 for compatibility).
 */
static void thinking_config(struct rein_jw *w, const rein_provider *p,
                            const rein_model_request *req, int64_t budget)
{
    const char *model = rein__request_model(p, req);
    const char *base = strncmp(model, "models/", 7) == 0 ? model + 7 : model;
    enum rein_reasoning e = rein__reasoning_effort(p, req, "thinkingConfig");

    rein_jw_key(w, "thinkingConfig");
    rein_jw_obj_begin(w);
    if (strncmp(base, "gemini-3", 8) == 0 && req->reasoning_budget <= 0) {
        rein_jw_key(w, "thinkingLevel");
        rein_jw_str(w, gemini3_level(base, e));
        budget = 1;
    } else {
        /* Flash and Flash-Lite think at most 24,576 tokens; Pro 32,768 */
        if (strstr(base, "flash") && budget > FLASH_BUDGET_MAX)
            budget = FLASH_BUDGET_MAX;
        rein_jw_key(w, "thinkingBudget");
        rein_jw_int(w, budget);
    }
    if (budget > 0) {
        rein_jw_key(w, "includeThoughts");
        rein_jw_bool(w, true);
    }
    rein_jw_obj_end(w);
}

/*
 * generationConfig: the request's settings, then the members of an extra generationConfig
 * object (a Gemini client's thinkingConfig, responseSchema, … through rein's gateway) that
 * they do not write. The extra's generationConfig is not written again at the top level.
 */
static void generation_config(struct rein_jw *w, const rein_provider *p,
                              const rein_model_request *req)
{
    const json_t *more = json_object_get(req->extra, "generationConfig");
    int64_t budget = rein__reasoning_budget(p, req, "thinkingConfig");
    const char *key;
    json_t *v;

    if (!rein__request_has_settings(req) && !json_object_size(more) && budget < 0 &&
        !rein__output_gemini_has(req))
        return;
    rein_jw_key(w, "generationConfig");
    rein_jw_obj_begin(w);
    rein__jw_limits(w, req, "maxOutputTokens");
    rein__jw_top_p(w, req, "topP");
    rein__jw_stop(w, req, "stopSequences");
    if (budget >= 0)
        thinking_config(w, p, req, budget);
    rein__jw_output_gemini(w, req);
    json_object_foreach((json_t *)more, key, v)
    {
        if (own_setting(req, key))
            continue;
        rein_jw_key(w, key);
        rein_jw_json(w, v);
    }
    rein_jw_obj_end(w);
}

static void gemini_extra(struct rein_jw *w, const rein_model_request *req)
{
    const char *key;
    json_t *v;

    json_object_foreach(req->extra, key, v)
    {
        if (!strcmp(key, "generationConfig") && json_is_object(v))
            continue; /* joined the request's own (generation_config) */
        rein_jw_key(w, key);
        rein_jw_json(w, v);
    }
}

static rein_err gemini_build_body(rein_provider *p, const rein_model_request *req, rein_history *h,
                                  struct rein__body *body, rein_error *err)
{
    struct rein_jw w;
    struct rein__groups g;
    rein_err rc;

    /* The contents, when large, are sent from where the history keeps them. */
    rc = rein__body_groups_start(p, req, h, &rein__wire_gemini, body, &g, &w, err);
    if (rc)
        return rc;
    rein_jw_key(&w, "contents");
    rc = rein__body_groups(body, &w, &g);
    if (!rc && g.has_system) {
        rein_jw_key(&w, "systemInstruction");
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "parts");
        rein__jw_system_list(&w, &g);
        rein_jw_obj_end(&w);
        rc = w.err;
    }
    if (rc)
        return rein_error_set(err, rc, "encoding the history: %s", rein_strerror(rc));
    if (req->ntools) {
        rein_jw_key(&w, "tools");
        rein_jw_raw(&w, req->tools_json, req->tools_len);
        if (req->tool_choice)
            tool_config(&w, req->tool_choice);
    }
    generation_config(&w, p, req);
    gemini_extra(&w, req);
    rein_jw_obj_end(&w);
    rc = rein_jw_finish(&w);
    return rc ? rein_error_set(err, rc, "encoding the request: %s", rein_strerror(rc)) : REIN_OK;
}

/* BASE/models/MODEL:generateContent, or :streamGenerateContent?alt=sse (SSE, not the JSON
 * array Gemini streams otherwise). A model given as "models/x" is not doubled. */
static char *gemini_url(const rein_provider *p, const rein_model_request *req)
{
    const char *model = rein__request_model(p, req);

    if (!strncmp(model, "models/", 7))
        model += 7;
    return rein_asprintf("%s/models/%s:%s", p->endpoint, model,
                         req->stream ? "streamGenerateContent?alt=sse" : "generateContent");
}

/* Vertex with Application Default Credentials: the token as a bearer (fetched again when it
 * nears its end). */
static rein_err gemini_headers(const rein_provider *p, const rein_model_request *req,
                               struct curl_slist **list)
{
    (void)req;
    return p->gcp ? rein__gcp_header(p->gcp, list) : REIN_OK;
}

const struct rein__wire rein__wire_gemini = {
    .name = "gemini",
    .path = "",
    .auth = "x-goog-api-key: ",
    .formats = {"gemini-sse", "gemini-json"},
    .framing = REIN__FRAMING_SSE,
    .stop_max = 5, /* GenerationConfig: "The set of character sequences (up to 5)" */
    .reasoning = true,
    .output_format = true,
    .decode_payload = gemini_payload,
    .decode_body = gemini_body,
    .decode_end = gemini_end,
    .decode_free = gemini_state_free,
    .encode_message = gemini_encode_message,
    .encode_in = gemini_encode_in,
    .group_user = "{\"role\":\"user\",\"parts\":[",
    .group_model = "{\"role\":\"model\",\"parts\":[",
    .encode_tools = gemini_encode_tools,
    .takes_media = gemini_takes_media,
    .build_body = gemini_build_body,
    .headers = gemini_headers,
    .url = gemini_url,
};
