/*
 * Tool calls written as text, and <think> sections in the text.
 *
 * Local models (and some hosted ones) put their calls in the answer text instead of the
 * tool-call field and end with finish_reason "stop": Hermes/Qwen templates write
 * <tool_call>{"name": …, "arguments": …}</tool_call> (Qwen3-Coder writes
 * <tool_call><function=name><parameter=k>v</parameter></function></tool_call>), Mistral
 * writes [TOOL_CALLS][{…}] or [TOOL_CALLS]name[ARGS]{…}, Llama 3.x writes
 * <|python_tag|>{"name": …, "parameters": …} or a bare JSON object, and many write a fenced
 * ```json block. Taken as a final answer these would be silent failures, so at the end of
 * every reply the text is scanned once: each call found becomes a call marked from_text
 * (its raw arguments are the exact bytes of the "arguments" value), or, in report mode, is
 * counted and left in place. A marker whose JSON is cut or broken still becomes a call, so
 * the pipeline can answer it with an invalid payload.
 *
 * Fenced and bare JSON are ordinary in answers, so they count as calls only when the object
 * has a string "name" and an "arguments" (or "parameters") member, and, when the request's
 * tool names are known, only when the name is one of them.
 *
 * A reply that also carries native calls (llama.cpp leaks the start of its markup before it
 * sends the call natively) keeps only the text calls the native ones do not cover; the
 * markup of the covered ones is taken out of the text all the same.
 *
 * Reasoning models served through OpenAI-compatible servers leak their thinking into the
 * text: a leading <think>…</think>, or (Qwen3 on Ollama) the thinking followed by a lone
 * </think> because the template opened the tag in the prompt. Both move to the reasoning.
 */
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include "jpull.h"

const char *const rein__text_markers[] = {"<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "```",
                                          NULL};

/*
 * The first needle (nlen >= 1) in hay, or NULL: memmem's answer. Each scan goes over the
 * whole answer at its end (a long answer is tens of KiB, and there are five of them), and the
 * markers' first bytes are rare in text, so finding those with memchr and comparing there
 * costs a small part of what glibc's memmem does on the same bytes.
 */
static const char *find(const char *hay, size_t hlen, const char *needle, size_t nlen)
{
    const char *end = hay + hlen, *p = hay;

    while ((size_t)(end - p) >= nlen && (p = memchr(p, needle[0], (size_t)(end - p) - nlen + 1))) {
        if (memcmp(p + 1, needle + 1, nlen - 1) == 0)
            return p;
        p++;
    }
    return NULL;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static size_t skip_ws(const char *s, size_t i, size_t n)
{
    while (i < n && is_ws(s[i]))
        i++;
    return i;
}

size_t rein__json_value_end(const char *s, size_t len)
{
    int depth = 0;
    bool in_str = false;

    if (len == 0 || (s[0] != '{' && s[0] != '[' && s[0] != '"'))
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"') {
                in_str = false;
                if (depth == 0)
                    return i + 1;
            }
            continue;
        }
        if (c == '"')
            in_str = true;
        else if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']') {
            if (--depth == 0)
                return i + 1;
            if (depth < 0)
                return 0;
        }
    }
    return 0;
}

/* ---- reading call objects ---- */

struct found {
    const char *name;
    size_t name_len;
    bool name_esc;
    const char *raw; /* arguments: the exact bytes, or a string's content */
    size_t raw_len;
    bool raw_esc; /* raw is a JSON string's content (escapes to undo) */
};

struct scan {
    struct rein__asm *a;
    void *tok;
    int tokcap;
    struct found f[64];
    size_t nf;
    size_t native;  /* the reply's native calls (all calls made before the scan) */
    size_t dropped; /* text calls left out because native calls cover them */
};

/*
 * True when the reply's native calls cover a text call named name[0..len): the reply has
 * native calls and the text call's name is empty or the start (or all) of a native call's
 * name. llama.cpp leaks the start of its markup ("<tool_call>\n<function=get_") into the
 * content before its parser catches up and sends the same call natively; that markup is a
 * shadow of the native call, not a call of its own.
 */
static bool covered_by_native(const struct scan *sc, const char *name, size_t len)
{
    const rein_model_response *r = sc->a->r;

    for (size_t i = 0; i < sc->native; i++) {
        const rein_model_call *c = r->calls[i];
        if (len == 0 || (len <= c->name.len && memcmp(c->name.ptr, name, len) == 0))
            return true;
    }
    return false;
}

/* Makes one text call, unless native calls cover it. The call index, 0 when left out, or a
 * negative code. */
static int text_call(struct scan *sc, const char *name, size_t name_len, const char *raw,
                     size_t raw_len, bool closed)
{
    if (covered_by_native(sc, name, name_len)) {
        sc->dropped++;
        return 0;
    }
    return rein__asm_call_whole(sc->a, name, name_len, raw, raw_len, true, closed);
}

/* A call object at token i: {"name", "arguments"|"parameters"} or {"function": {…}}. */
static bool read_call(struct scan *sc, const struct jdoc *d, int i)
{
    int fn = JGET(d, i, "function");
    int name, args;
    struct found *f;

    if (jis(d, fn, JSMN_OBJECT))
        i = fn;
    name = JGET(d, i, "name");
    args = JGET(d, i, "arguments");
    if (args < 0)
        args = JGET(d, i, "parameters");
    if (!jis(d, name, JSMN_STRING) || args < 0 || sc->nf >= REIN_ARRAY_SIZE(sc->f))
        return false;
    f = &sc->f[sc->nf];
    f->name = d->js + d->t[name].start;
    f->name_len = (size_t)(d->t[name].end - d->t[name].start);
    f->name_esc = memchr(f->name, '\\', f->name_len) != NULL;
    f->raw = jraw(d, args, &f->raw_len);
    f->raw_esc = d->t[args].type == JSMN_STRING;
    if (jnull(d, args))
        f->raw_len = 0;
    sc->nf++;
    return true;
}

/* Reads one or more call objects from a complete JSON value; false when it is not calls. */
static bool read_calls(struct scan *sc, const char *s, size_t len)
{
    struct jdoc d;
    size_t start = sc->nf;
    int r = jdoc_parse(&d, s, len, &sc->tok, &sc->tokcap);

    if (r <= 0)
        return false;
    if (d.t[0].type == JSMN_OBJECT) {
        if (!read_call(sc, &d, 0))
            return false;
    } else if (d.t[0].type == JSMN_ARRAY && d.t[0].size > 0) {
        for (int k = 0, i = 1; k < d.t[0].size; k++, i = jnext(&d, i)) {
            if (!jis(&d, i, JSMN_OBJECT) || !read_call(sc, &d, i)) {
                sc->nf = start;
                return false;
            }
        }
    } else {
        return false;
    }
    return true;
}

static bool name_offered(const struct rein__asm *a, const struct found *f)
{
    if (!a->opt->tool_names || a->opt->tool_name_count == 0)
        return true;
    for (size_t i = 0; i < a->opt->tool_name_count; i++) {
        const char *t = a->opt->tool_names[i];
        if (t && strlen(t) == f->name_len && memcmp(t, f->name, f->name_len) == 0)
            return true;
    }
    return false;
}

/* Calls in a fenced or bare JSON value, only when every name is offered. */
static bool read_guarded(struct scan *sc, const char *s, size_t len)
{
    size_t start = sc->nf;

    if (!read_calls(sc, s, len))
        return false;
    for (size_t i = start; i < sc->nf; i++) {
        if (!name_offered(sc->a, &sc->f[i])) {
            sc->nf = start;
            return false;
        }
    }
    return true;
}

bool rein__textcalls_fenced_is_call(const struct rein__asm *a, const char *body, size_t len)
{
    struct scan sc;
    size_t i = skip_ws(body, 0, len), end;
    bool ok = false;

    memset(&sc, 0, sizeof(sc));
    sc.a = (struct rein__asm *)a;
    end = rein__json_value_end(body + i, len - i);
    if (end && skip_ws(body, i + end, len) == len)
        ok = read_guarded(&sc, body + i, end);
    rein_free(sc.tok);
    return ok;
}

/* ---- making calls ---- */

static rein_err emit_found(struct scan *sc, bool closed)
{
    struct rein_buf name, raw;
    rein_err rc = REIN_OK;

    rein_buf_init(&name, 4096);
    rein_buf_init(&raw, 0);
    for (size_t i = 0; i < sc->nf && !rc; i++) {
        struct found *f = &sc->f[i];
        uint32_t hi = 0;
        rein_buf_reset(&name);
        rein_buf_reset(&raw);
        rc = rein__json_unescape(&name, f->name, f->name_len, &hi);
        if (!rc)
            rc = rein__json_unescape_flush(&name, &hi);
        if (!rc && f->raw_esc) {
            rc = rein__json_unescape(&raw, f->raw, f->raw_len, &hi);
            if (!rc)
                rc = rein__json_unescape_flush(&raw, &hi);
        } else if (!rc) {
            rc = rein_buf_add(&raw, f->raw, f->raw_len);
        }
        if (!rc) {
            int idx = text_call(sc, name.ptr, name.len, raw.ptr, raw.len, closed);
            if (idx < 0)
                rc = idx;
        }
    }
    sc->nf = 0;
    rein_buf_release(&name);
    rein_buf_release(&raw);
    return rc;
}

/* A call whose JSON is cut or broken: the name if one can be seen, the rest as arguments. */
static rein_err emit_broken(struct scan *sc, const char *s, size_t len, bool closed)
{
    const char *key = memmem(s, len, "\"name\"", 6);
    const char *name = "", *args = s;
    size_t name_len = 0, args_len = len;

    if (key) {
        size_t i = skip_ws(s, (size_t)(key - s) + 6, len);
        if (i < len && s[i] == ':')
            i = skip_ws(s, i + 1, len);
        if (i < len && s[i] == '"') {
            size_t e = rein__json_value_end(s + i, len - i);
            if (e >= 2) {
                name = s + i + 1;
                name_len = e - 2;
            }
        }
    }
    const char *ak = memmem(s, len, "\"arguments\"", 11);
    if (!ak)
        ak = memmem(s, len, "\"parameters\"", 12);
    if (ak) {
        const char *colon = memchr(ak, ':', len - (size_t)(ak - s));
        if (colon) {
            size_t i = skip_ws(s, (size_t)(colon - s) + 1, len);
            args = s + i;
            args_len = len - i;
        }
    }
    int idx = text_call(sc, name, name_len, args, args_len, closed);
    return idx < 0 ? idx : REIN_OK;
}

/* Qwen3-Coder's XML form: <function=name><parameter=k>v</parameter>…</function>. */
static rein_err emit_xml_function(struct scan *sc, const char *s, size_t len, bool closed)
{
    const char *name = s + 10, *gt = memchr(name, '>', len - 10);
    struct rein_buf args;
    struct rein_jw w;
    rein_err rc;

    if (!gt)
        return emit_broken(sc, s, len, false);
    rein_buf_init(&args, 0);
    rein_jw_init(&w, &args);
    rein_jw_obj_begin(&w);
    const char *p = gt + 1, *end = s + len;
    for (;;) {
        const char *ps = memmem(p, (size_t)(end - p), "<parameter=", 11);
        if (!ps)
            break;
        const char *kend = memchr(ps + 11, '>', (size_t)(end - ps - 11));
        if (!kend)
            break;
        const char *vend = memmem(kend + 1, (size_t)(end - kend - 1), "</parameter>", 12);
        const char *v = kend + 1;
        size_t vlen = vend ? (size_t)(vend - v) : (size_t)(end - v);
        while (vlen && (*v == '\n'))
            v++, vlen--;
        while (vlen && v[vlen - 1] == '\n')
            vlen--;
        rein_jw_keyn(&w, ps + 11, (size_t)(kend - ps - 11));
        json_t *j = rein_json_parse(v, vlen, 0, NULL);
        if (j && !json_is_string(j))
            rein_jw_raw(&w, v, vlen); /* numbers, booleans, objects keep their text */
        else
            rein_jw_strn(&w, v, vlen);
        json_decref(j);
        if (!vend)
            break;
        p = vend + 12;
    }
    rein_jw_obj_end(&w);
    rc = rein_jw_finish(&w);
    if (!rc) {
        int idx = text_call(sc, name, (size_t)(gt - name), args.ptr, args.len, closed);
        rc = idx < 0 ? idx : REIN_OK;
    }
    rein_buf_release(&args);
    return rc;
}

/* One JSON call value (or array) at s; emits it whole or broken. *used: bytes consumed. */
static rein_err take_json(struct scan *sc, const char *s, size_t len, bool guarded, size_t *used,
                          bool *is_call)
{
    size_t end = rein__json_value_end(s, len);

    *is_call = false;
    *used = 0;
    if (!end) {
        if (guarded)
            return REIN_OK;
        *is_call = true;
        *used = len;
        return emit_broken(sc, s, len, false);
    }
    if (guarded ? read_guarded(sc, s, end) : read_calls(sc, s, end)) {
        *is_call = true;
        *used = end;
        return emit_found(sc, true);
    }
    if (guarded)
        return REIN_OK;
    *is_call = true;
    *used = end;
    return emit_broken(sc, s, end, true);
}

/* ---- the markers ---- */

static rein_err take_tool_call_tag(struct scan *sc, const char *t, size_t len, size_t *pos)
{
    size_t b = *pos + 11;
    const char *close = memmem(t + b, len - b, "</tool_call>", 12);
    size_t e = close ? (size_t)(close - t) : len;
    size_t i = skip_ws(t, b, e), used;
    size_t j = e;
    bool is_call;
    rein_err rc;

    while (j > i && is_ws(t[j - 1]))
        j--;
    *pos = close ? e + 12 : len;
    if (j - i >= 10 && memcmp(t + i, "<function=", 10) == 0)
        return emit_xml_function(sc, t + i, j - i, close != NULL);
    if (i < j && (t[i] == '{' || t[i] == '[')) {
        rc = take_json(sc, t + i, j - i, false, &used, &is_call);
        return rc;
    }
    return emit_broken(sc, t + i, j - i, close != NULL);
}

static rein_err take_mistral(struct scan *sc, const char *t, size_t len, size_t *pos)
{
    size_t i = skip_ws(t, *pos + 12, len), used;
    bool is_call;
    rein_err rc;

    if (i < len && (t[i] == '[' || t[i] == '{')) {
        rc = take_json(sc, t + i, len - i, false, &used, &is_call);
        *pos = i + used;
        return rc;
    }
    /* [TOOL_CALLS]name[ARGS]{…} (newer Mistral templates); [CALL_ID]id may sit between. */
    const char *args = memmem(t + i, len - i, "[ARGS]", 6);
    if (!args) {
        *pos = len;
        return emit_broken(sc, t + i, len - i, false);
    }
    size_t name_end = (size_t)(args - t);
    const char *cid = memmem(t + i, name_end - i, "[CALL_ID]", 9);
    if (cid)
        name_end = (size_t)(cid - t);
    while (name_end > i && is_ws(t[name_end - 1]))
        name_end--;
    size_t a0 = skip_ws(t, (size_t)(args - t) + 6, len);
    size_t end = rein__json_value_end(t + a0, len - a0);
    bool closed = end != 0;
    if (!end)
        end = len - a0;
    *pos = a0 + end;
    int idx = text_call(sc, t + i, name_end - i, t + a0, end, closed);
    return idx < 0 ? idx : REIN_OK;
}

static rein_err take_python_tag(struct scan *sc, const char *t, size_t len, size_t *pos)
{
    static const char *const ends[] = {"<|eom_id|>", "<|eot_id|>"};
    size_t i = skip_ws(t, *pos + 14, len), used;
    bool is_call, any = false;
    rein_err rc = REIN_OK;

    while (i < len && t[i] == '{') {
        rc = take_json(sc, t + i, len - i, false, &used, &is_call);
        if (rc)
            return rc;
        any = true;
        i = skip_ws(t, i + used, len);
        if (i < len && t[i] == ';')
            i = skip_ws(t, i + 1, len);
    }
    if (!any) {
        /* Code for Llama's built-in interpreter, not a JSON call: still not an answer. */
        size_t e = len;
        const char *eom = memmem(t + i, len - i, ends[0], 10);
        if (eom)
            e = (size_t)(eom - t);
        rc = emit_broken(sc, t + i, e - i, true);
        i = e;
    }
    for (size_t k = 0; k < 2; k++) {
        if (len - i >= 10 && memcmp(t + i, ends[k], 10) == 0)
            i += 10;
    }
    *pos = i;
    return rc;
}

/* A fenced block at pos: a call (consumed) or text (copied to out). */
static rein_err take_fence(struct scan *sc, const char *t, size_t len, size_t *pos,
                           struct rein_buf *out)
{
    const char *nl = memchr(t + *pos + 3, '\n', len - *pos - 3);
    const char *close = nl ? memmem(nl + 1, (size_t)(t + len - nl - 1), "```", 3) : NULL;
    size_t used;
    bool is_call = false;
    rein_err rc;

    if (!close) {
        rc = rein_buf_add(out, t + *pos, len - *pos);
        *pos = len;
        return rc;
    }
    size_t b = skip_ws(t, (size_t)(nl + 1 - t), (size_t)(close - t));
    size_t e = (size_t)(close - t);
    while (e > b && is_ws(t[e - 1]))
        e--;
    if (b < e && (t[b] == '{' || t[b] == '[') && rein__json_value_end(t + b, e - b) == e - b) {
        rc = take_json(sc, t + b, e - b, true, &used, &is_call);
        if (rc)
            return rc;
    }
    if (!is_call) {
        rc = rein_buf_add(out, t + *pos, (size_t)(close + 3 - t) - *pos);
        if (rc)
            return rc;
    }
    *pos = (size_t)(close + 3 - t);
    return REIN_OK;
}

/* ---- XML tool tags ---- */

static bool tag_boundary(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '/' || c == '>';
}

size_t rein__textcalls_tool_tag(const struct rein_decoder_options *opt, const char *s, size_t n,
                                bool *partial)
{
    *partial = false;
    if (!opt->tool_names || n == 0 || s[0] != '<')
        return 0;
    for (size_t i = 0; i < opt->tool_name_count; i++) {
        const char *name = opt->tool_names[i];
        size_t l = name ? strlen(name) : 0;
        if (l == 0)
            continue;
        if (n >= l + 2 && memcmp(s + 1, name, l) == 0 && tag_boundary(s[l + 1]))
            return l;
        if (n < l + 2 && memcmp(s + 1, name, n - 1 < l ? n - 1 : l) == 0)
            *partial = true;
    }
    return 0;
}

/* "&quot;" and friends in an attribute value. */
static void xml_value(struct rein_jw *w, const char *v, size_t n)
{
    static const struct {
        const char *ent;
        char c;
    } ents[] = {{"&quot;", '"'}, {"&apos;", '\''}, {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}};
    char buf[512];
    size_t k = 0;

    if (n > sizeof(buf) || !memchr(v, '&', n)) {
        rein_jw_strn(w, v, n);
        return;
    }
    for (size_t i = 0; i < n;) {
        size_t e = 0;
        for (; e < REIN_ARRAY_SIZE(ents); e++) {
            size_t el = strlen(ents[e].ent);
            if (n - i >= el && memcmp(v + i, ents[e].ent, el) == 0) {
                buf[k++] = ents[e].c;
                i += el;
                break;
            }
        }
        if (e == REIN_ARRAY_SIZE(ents))
            buf[k++] = v[i++];
    }
    rein_jw_strn(w, buf, k);
}

/*
 * An offered tool written as an XML tag (a local model's own format, as in
 * <run_command command="ls -l" />): attributes become string arguments; a body that is a
 * JSON object is the arguments; any other body is kept as the (invalid) raw arguments.
 */
static rein_err take_xml_tag(struct scan *sc, const char *t, size_t len, size_t *pos,
                             size_t name_len)
{
    const char *name = t + *pos + 1;
    size_t p = *pos + 1 + name_len;
    bool closed = false, body = false;
    struct rein_buf args;
    struct rein_jw w;
    rein_err rc;
    int idx;

    rein_buf_init(&args, 0);
    rein_jw_init(&w, &args);
    rein_jw_obj_begin(&w);
    while (p < len) {
        p = skip_ws(t, p, len);
        if (p + 1 < len && t[p] == '/' && t[p + 1] == '>') {
            p += 2;
            closed = true;
            break;
        }
        if (p < len && t[p] == '>') {
            p++;
            body = true;
            break;
        }
        size_t k = p;
        while (p < len && !tag_boundary(t[p]) && t[p] != '=')
            p++;
        size_t klen = p - k;
        p = skip_ws(t, p, len);
        if (klen == 0 || p >= len || t[p] != '=')
            break;
        p = skip_ws(t, p + 1, len);
        if (p >= len || (t[p] != '"' && t[p] != '\''))
            break;
        const char *q = memchr(t + p + 1, t[p], len - p - 1);
        if (!q)
            break;
        rein_jw_keyn(&w, t + k, klen);
        xml_value(&w, t + p + 1, (size_t)(q - t) - p - 1);
        p = (size_t)(q - t) + 1;
    }
    rein_jw_obj_end(&w);
    rc = rein_jw_finish(&w);
    if (rc) {
        rein_buf_release(&args);
        return rc;
    }
    if (body) {
        char close[300];
        int cl = snprintf(close, sizeof(close), "</%.*s>", (int)name_len, name);
        const char *end = memmem(t + p, len - p, close, (size_t)cl);
        size_t b = skip_ws(t, p, end ? (size_t)(end - t) : len);
        size_t e = end ? (size_t)(end - t) : len;
        while (e > b && is_ws(t[e - 1]))
            e--;
        closed = end != NULL;
        if (b < e) {
            /* The body is the arguments: JSON as it is, anything else kept for the hint. */
            rein_buf_reset(&args);
            rc = rein_buf_add(&args, t + b, e - b);
        }
        p = end ? (size_t)(end - t) + (size_t)cl : len;
    }
    idx = rc ? rc : text_call(sc, name, name_len, args.ptr, args.len, closed);
    rein_buf_release(&args);
    *pos = closed || body ? p : len;
    return idx < 0 ? idx : REIN_OK;
}

/* ---- <think> ---- */

static rein_err add_reasoning(rein_model_response *r, const char *s, size_t n)
{
    size_t i = skip_ws(s, 0, n);

    while (n > i && is_ws(s[n - 1]))
        n--;
    if (n == i)
        return REIN_OK;
    if (r->reasoning.len) {
        rein_err rc = rein_buf_addch(&r->reasoning, '\n');
        if (rc)
            return rc;
    }
    return rein_buf_add(&r->reasoning, s + i, n - i);
}

static rein_err set_text(rein_model_response *r, const char *s, size_t n)
{
    struct rein_buf b;
    rein_err rc;

    rein_buf_init(&b, r->text.max);
    rc = rein_buf_add(&b, s, n);
    if (rc) {
        rein_buf_release(&b);
        return rc;
    }
    rein_buf_release(&r->text);
    r->text = b;
    return REIN_OK;
}

static rein_err take_think(rein_model_response *r)
{
    const char *t = r->text.ptr;
    size_t len = r->text.len, i = skip_ws(t, 0, len);
    const char *close;
    rein_err rc;

    if (len - i >= 7 && memcmp(t + i, "<think>", 7) == 0) {
        close = find(t + i + 7, len - i - 7, "</think>", 8);
        size_t inner_end = close ? (size_t)(close - t) : len;
        rc = add_reasoning(r, t + i + 7, inner_end - i - 7);
        if (rc)
            return rc;
        size_t rest = close ? skip_ws(t, inner_end + 8, len) : len;
        return set_text(r, t + rest, len - rest);
    }
    close = find(t, len, "</think>", 8);
    if (close && !find(t, (size_t)(close - t), "<think>", 7)) {
        rc = add_reasoning(r, t, (size_t)(close - t));
        if (rc)
            return rc;
        size_t rest = skip_ws(t, (size_t)(close - t) + 8, len);
        return set_text(r, t + rest, len - rest);
    }
    return REIN_OK;
}

/* ---- the scan ---- */

static const char xml_marker[] = "<tool>";

static size_t first_marker(const struct scan *sc, const char *t, size_t len, size_t from,
                           const char **which, size_t *name_len)
{
    size_t best = len;

    *which = NULL;
    /* An offered tool's name as a tag counts only when the tool names are known. */
    for (const char *lt = memchr(t + from, '<', len - from); sc->a->opt->tool_names && lt;
         lt = memchr(lt + 1, '<', (size_t)(t + len - lt - 1))) {
        bool partial;
        size_t n = rein__textcalls_tool_tag(sc->a->opt, lt, (size_t)(t + len - lt), &partial);
        if (n) {
            best = (size_t)(lt - t);
            *which = xml_marker;
            *name_len = n;
            break;
        }
        if (lt + 1 >= t + len)
            break;
    }
    for (size_t m = 0; rein__text_markers[m]; m++) {
        const char *hit =
            find(t + from, len - from, rein__text_markers[m], strlen(rein__text_markers[m]));
        if (hit && (size_t)(hit - t) < best) {
            best = (size_t)(hit - t);
            *which = rein__text_markers[m];
        }
    }
    return best;
}

static rein_err scan_text(struct scan *sc, const char *t, size_t len, struct rein_buf *out)
{
    size_t pos = 0, i = skip_ws(t, 0, len), used;
    size_t e = len;
    bool is_call;
    rein_err rc;

    while (e > i && is_ws(t[e - 1]))
        e--;
    /* The whole answer is one JSON value naming a tool: a bare call (Llama 3.x). */
    if (i < e && (t[i] == '{' || t[i] == '[') && rein__json_value_end(t + i, e - i) == e - i) {
        rc = take_json(sc, t + i, e - i, true, &used, &is_call);
        if (rc || is_call)
            return rc;
    }
    while (pos < len) {
        const char *which;
        size_t name_len = 0;
        size_t at = first_marker(sc, t, len, pos, &which, &name_len);
        /* No marker and no call: the text stays as it is, and out is not read */
        if (!which && pos == 0 && sc->a->r->ncalls == sc->native && !sc->dropped)
            return REIN_OK;
        rc = rein_buf_add(out, t + pos, at - pos);
        if (rc || !which)
            return rc;
        pos = at;
        if (strcmp(which, "<tool_call>") == 0)
            rc = take_tool_call_tag(sc, t, len, &pos);
        else if (strcmp(which, "[TOOL_CALLS]") == 0)
            rc = take_mistral(sc, t, len, &pos);
        else if (strcmp(which, "<|python_tag|>") == 0)
            rc = take_python_tag(sc, t, len, &pos);
        else if (which == xml_marker)
            rc = take_xml_tag(sc, t, len, &pos, name_len);
        else
            rc = take_fence(sc, t, len, &pos, out);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

rein_err rein__textcalls_apply(struct rein__asm *a)
{
    rein_model_response *r = a->r;
    size_t before = r->ncalls;
    struct scan sc;
    struct rein_buf out;
    rein_err rc = REIN_OK;

    if (!a->opt->keep_think_tags) {
        rc = take_think(r);
        if (rc)
            return rc;
    }
    if (!r->text.len)
        return REIN_OK;
    memset(&sc, 0, sizeof(sc));
    sc.a = a;
    sc.native = before;
    rein_buf_init(&out, r->text.max);
    /* Report mode makes the calls only to count them: no events for them. */
    rein_model_event_fn fn = a->fn;
    if (a->opt->text_calls == REIN_TEXT_CALLS_REPORT)
        a->fn = NULL;
    rc = scan_text(&sc, r->text.ptr, r->text.len, &out);
    a->fn = fn;
    rein_free(sc.tok);
    if (!rc && (r->ncalls > before || sc.dropped)) {
        if (a->opt->text_calls == REIN_TEXT_CALLS_REPORT) {
            /* Report: the calls are counted, not made; the text stays as it was. */
            for (size_t i = before; i < r->ncalls; i++) {
                rein_model_call *c = r->calls[i];
                rein_free(c->id);
                rein_buf_release(&c->name);
                rein_buf_release(&c->args);
                rein__call_drop_doc(c);
                rein_free(c->error);
                rein_free(c);
            }
            r->text_calls += r->ncalls - before;
            r->ncalls = before;
        } else {
            size_t i = skip_ws(out.ptr, 0, out.len), e = out.len;
            while (e > i && is_ws(out.ptr[e - 1]))
                e--;
            rc = set_text(r, out.ptr + i, e - i);
        }
    }
    rein_buf_release(&out);
    return rc;
}
