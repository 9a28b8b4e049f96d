/*
 * Argument parsing: the third step of the call pipeline.
 *
 * Models send arguments as a JSON text (OpenAI, DashScope, vLLM), as an object (Ollama,
 * Anthropic after assembly), as "" for a tool without parameters, or as a text cut off in
 * the middle when a stream broke. rein does not guess at content: anything but one JSON
 * object (or nothing at all, which means {}) is refused with the parse error and its position,
 * so the model can see exactly what to fix. Duplicate keys are refused, because which of the
 * two values the model meant is a guess, and integers beyond 64 bits are refused with a hint
 * to send them as strings (docs/DESIGN.md, "JSON on the hot paths"), because a double would change
 * their value silently.
 */
#include "tools_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#include <jsmn.h>

static bool only_space(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return false;
    }
    return true;
}

/* Appends one JSON Pointer segment (RFC 6901 escapes) to out. */
static void pointer_add(char *out, size_t size, size_t *n, const char *seg, size_t len)
{
    if (*n + 1 >= size)
        return;
    out[(*n)++] = '/';
    for (size_t i = 0; i < len && *n + 2 < size; i++) {
        if (seg[i] == '~' || seg[i] == '/') {
            out[(*n)++] = '~';
            out[(*n)++] = seg[i] == '~' ? '0' : '1';
        } else {
            out[(*n)++] = seg[i];
        }
    }
    out[*n] = '\0';
}

/* The pointer of token k, built from the parent links (segments collected leaf first). */
static void token_pointer(const char *text, const jsmntok_t *tok, int k, char *out, size_t size)
{
    int chain[64];
    int depth = 0;
    size_t n = 0;

    /* Collect the chain of (container, child) steps from the token up to the root. */
    while (k >= 0 && tok[k].parent >= 0 && depth < 64) {
        chain[depth++] = k;
        int p = tok[k].parent;
        k = tok[p].type == JSMN_STRING ? tok[p].parent : p;
    }
    out[0] = '\0';
    for (int d = depth - 1; d >= 0; d--) {
        int c = chain[d], p = tok[c].parent;
        if (tok[p].type == JSMN_STRING) {
            pointer_add(out, size, &n, text + tok[p].start, (size_t)(tok[p].end - tok[p].start));
        } else if (tok[p].type == JSMN_ARRAY) {
            char idx[24];
            int count = 0;
            for (int j = p + 1; j < c; j++)
                count += tok[j].parent == p;
            snprintf(idx, sizeof(idx), "%d", count);
            pointer_add(out, size, &n, idx, strlen(idx));
        }
    }
}

void rein__tools_pointer_at(const char *text, size_t len, size_t offset, char *out, size_t out_size)
{
    jsmn_parser p;
    jsmntok_t *tok;
    int ntok, best = -1;

    out[0] = '\0';
    jsmn_init(&p);
    ntok = jsmn_parse(&p, text, len, NULL, 0);
    if (ntok <= 0)
        return;
    tok = rein_calloc((size_t)ntok, sizeof(*tok));
    if (!tok)
        return;
    jsmn_init(&p);
    ntok = jsmn_parse(&p, text, len, tok, (unsigned)ntok);
    /* The innermost value that spans the offset: the last one in document order. */
    for (int i = 0; i < ntok; i++) {
        if (tok[i].start >= 0 && (size_t)tok[i].start <= offset && offset <= (size_t)tok[i].end &&
            (tok[i].type == JSMN_PRIMITIVE ||
             (tok[i].type == JSMN_STRING &&
              !(tok[i].parent >= 0 && tok[tok[i].parent].type == JSMN_OBJECT))))
            best = i;
    }
    if (best >= 0)
        token_pointer(text, tok, best, out, out_size);
    rein_free(tok);
}

/*
 * The fast path. A model's arguments are small objects, and jansson's loader spends most of
 * its time on per-token buffers; building the values directly from the text is several
 * times faster. This parser accepts a subset of what jansson accepts (RFC 8259, no NUL in
 * keys, depth at most FAST_MAX_DEPTH) and gives up, returning NULL, on anything it does not
 * handle or that is wrong; the caller then asks jansson, whose answer (value or error, with
 * line and column) is the one that counts. So the fast path changes speed, never results: the
 * fuzz target checks that both agree.
 */
#define FAST_MAX_DEPTH 256

struct fast {
    const char *p, *end;
    int depth;
};

static void fast_ws(struct fast *f)
{
    while (f->p < f->end && (*f->p == ' ' || *f->p == '\t' || *f->p == '\n' || *f->p == '\r'))
        f->p++;
}

static json_t *fast_value(struct fast *f);

static int hex4(const char *p)
{
    int v = 0;

    for (int i = 0; i < 4; i++) {
        int d = rein__hex_digit(p[i]);
        if (d < 0)
            return -1;
        v = (v << 4) | d;
    }
    return v;
}

static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Decodes the escapes of s[0..len) into out (at least len bytes); returns the length or -1. */
static long unescape(const char *s, size_t len, char *out)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\') {
            out[n++] = s[i];
            continue;
        }
        if (++i >= len)
            return -1;
        switch (s[i]) {
        case '"':
        case '\\':
        case '/':
            out[n++] = s[i];
            break;
        case 'b':
            out[n++] = '\b';
            break;
        case 'f':
            out[n++] = '\f';
            break;
        case 'n':
            out[n++] = '\n';
            break;
        case 'r':
            out[n++] = '\r';
            break;
        case 't':
            out[n++] = '\t';
            break;
        case 'u': {
            int hi = i + 4 < len ? hex4(s + i + 1) : -1, lo;
            uint32_t cp;
            if (hi < 0)
                return -1;
            i += 4;
            cp = (uint32_t)hi;
            if (hi >= 0xdc00 && hi <= 0xdfff)
                return -1;
            if (hi >= 0xd800 && hi <= 0xdbff) {
                if (i + 6 >= len || s[i + 1] != '\\' || s[i + 2] != 'u' ||
                    (lo = hex4(s + i + 3)) < 0xdc00 || lo > 0xdfff)
                    return -1;
                cp = 0x10000 + (((uint32_t)hi - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
                i += 6;
            }
            /* \u0000 makes a 1-byte NUL from a 6-byte escape; the output never outgrows s. */
            n += put_utf8(out + n, cp);
            break;
        }
        default:
            return -1;
        }
    }
    return (long)n;
}

/* The bytes that stop the scan of a string: the quote, the backslash and control bytes. */
static const bool string_special[256] = {
    [0x00] = true, [0x01] = true, [0x02] = true, [0x03] = true, [0x04] = true, [0x05] = true,
    [0x06] = true, [0x07] = true, [0x08] = true, [0x09] = true, [0x0a] = true, [0x0b] = true,
    [0x0c] = true, [0x0d] = true, [0x0e] = true, [0x0f] = true, [0x10] = true, [0x11] = true,
    [0x12] = true, [0x13] = true, [0x14] = true, [0x15] = true, [0x16] = true, [0x17] = true,
    [0x18] = true, [0x19] = true, [0x1a] = true, [0x1b] = true, [0x1c] = true, [0x1d] = true,
    [0x1e] = true, [0x1f] = true, ['"'] = true,  ['\\'] = true,
};

/* A string value or key: the text between the quotes, checked and unescaped. */
static json_t *fast_string(struct fast *f, bool key, char *keybuf, size_t *keylen)
{
    const char *start = ++f->p;
    bool escaped = false;
    unsigned char high = 0; /* any byte >= 0x80 sets the top bit */
    char stack[256];
    char *buf = stack;
    json_t *v = NULL;
    long n;

    /*
     * One pass to the closing quote. Arguments' strings are mostly short, and a byte loop
     * beats a memchr for the quote followed by a second pass for escapes and control bytes.
     * The byte after a backslash is skipped here (so an escaped quote does not end the
     * string); unescape() checks it.
     */
    const char *c = f->p;
    for (;;) {
        while (c < f->end && !string_special[(unsigned char)*c])
            high |= (unsigned char)*c++;
        if (c >= f->end || (unsigned char)*c < 0x20)
            return NULL;
        if (*c == '"')
            break;
        escaped = true; /* a backslash: skip it and the byte it escapes */
        if (++c < f->end)
            c++;
    }
    f->p = c;
    size_t len = (size_t)(f->p - start);
    f->p++; /* the closing quote */
    if (escaped) {
        if (len > sizeof(stack) && !(buf = rein_malloc(len)))
            return NULL;
        n = unescape(start, len, buf);
        start = buf;
        len = n < 0 ? 0 : (size_t)n;
        if (n < 0)
            goto out;
    }
    if (key) {
        /* Keys go to the caller's buffer; jansson refuses NUL bytes in keys (only \u0000
         * makes one: a raw control byte was refused above). */
        if (len >= REIN__TOOLS_KEY_MAX || (escaped && memchr(start, '\0', len)))
            goto out;
        memcpy(keybuf, start, len);
        keybuf[len] = '\0';
        *keylen = len;
        v = high & 0x80 ? json_null() : json_true(); /* markers: success, and whether ASCII */
    } else {
        /* ASCII is UTF-8; anything else is checked by jansson. */
        v = high & 0x80 ? json_stringn(start, len) : json_stringn_nocheck(start, len);
    }
out:
    if (buf != stack)
        rein_free(buf);
    return v;
}

static json_t *fast_number(struct fast *f)
{
    const char *start = f->p;
    bool real = false;
    char tmp[64];

    if (f->p < f->end && *f->p == '-')
        f->p++;
    if (f->p >= f->end || *f->p < '0' || *f->p > '9')
        return NULL;
    if (*f->p == '0')
        f->p++;
    else
        while (f->p < f->end && *f->p >= '0' && *f->p <= '9')
            f->p++;
    if (f->p < f->end && *f->p == '.') {
        real = true;
        if (++f->p >= f->end || *f->p < '0' || *f->p > '9')
            return NULL;
        while (f->p < f->end && *f->p >= '0' && *f->p <= '9')
            f->p++;
    }
    if (f->p < f->end && (*f->p == 'e' || *f->p == 'E')) {
        real = true;
        if (++f->p < f->end && (*f->p == '+' || *f->p == '-'))
            f->p++;
        if (f->p >= f->end || *f->p < '0' || *f->p > '9')
            return NULL;
        while (f->p < f->end && *f->p >= '0' && *f->p <= '9')
            f->p++;
    }
    size_t len = (size_t)(f->p - start);
    if (len >= sizeof(tmp))
        return NULL;
    memcpy(tmp, start, len);
    tmp[len] = '\0';
    errno = 0;
    if (!real) {
        long long v = strtoll(tmp, NULL, 10);
        return errno ? NULL : json_integer((json_int_t)v); /* overflow: jansson explains */
    }
    double d = strtod(tmp, NULL);
    return errno || !isfinite(d) ? NULL : json_real(d);
}

static json_t *fast_literal(struct fast *f, const char *word, size_t n, json_t *v)
{
    if ((size_t)(f->end - f->p) < n || memcmp(f->p, word, n) != 0)
        return NULL;
    f->p += n;
    return v;
}

static json_t *fast_container(struct fast *f, bool object)
{
    json_t *c = object ? json_object() : json_array();
    char key[REIN__TOOLS_KEY_MAX];
    size_t klen = 0;
    bool key_ascii = false;

    if (!c || ++f->depth > FAST_MAX_DEPTH)
        goto fail;
    f->p++;
    fast_ws(f);
    if (f->p < f->end && *f->p == (object ? '}' : ']')) {
        f->p++;
        f->depth--;
        return c;
    }
    for (;;) {
        json_t *v;
        if (object) {
            json_t *marker =
                f->p < f->end && *f->p == '"' ? fast_string(f, true, key, &klen) : NULL;
            if (!marker)
                goto fail;
            key_ascii = json_is_true(marker);
            fast_ws(f);
            if (f->p >= f->end || *f->p != ':')
                goto fail;
            f->p++;
            fast_ws(f);
            /* A duplicate key is an error; jansson says so with its position. */
            if (json_object_size(c) && json_object_getn(c, key, klen))
                goto fail;
        }
        v = fast_value(f);
        /* A key that is not ASCII is checked to be UTF-8, as jansson's loader does. */
        if (!v || (object ? (key_ascii ? json_object_setn_new_nocheck(c, key, klen, v)
                                       : json_object_setn_new(c, key, klen, v))
                          : json_array_append_new(c, v)))
            goto fail;
        fast_ws(f);
        if (f->p < f->end && *f->p == ',') {
            f->p++;
            fast_ws(f);
            continue;
        }
        if (f->p < f->end && *f->p == (object ? '}' : ']')) {
            f->p++;
            f->depth--;
            return c;
        }
        goto fail;
    }
fail:
    json_decref(c);
    return NULL;
}

static json_t *fast_value(struct fast *f)
{
    if (f->p >= f->end)
        return NULL;
    switch (*f->p) {
    case '{':
        return fast_container(f, true);
    case '[':
        return fast_container(f, false);
    case '"':
        return fast_string(f, false, NULL, NULL);
    case 't':
        return fast_literal(f, "true", 4, json_true());
    case 'f':
        return fast_literal(f, "false", 5, json_false());
    case 'n':
        return fast_literal(f, "null", 4, json_null());
    default:
        return fast_number(f);
    }
}

json_t *rein__tools_json_parse_fast(const char *text, size_t len)
{
    struct fast f = {text, text + len, 0};
    json_t *v;

    fast_ws(&f);
    v = fast_value(&f);
    fast_ws(&f);
    if (v && f.p != f.end) {
        json_decref(v);
        return NULL;
    }
    return v;
}

rein_err rein__tools_args_parse(const char *text, size_t len, size_t max_len, json_t **out,
                                struct rein__tools_args_error *e)
{
    rein_error perr;
    json_t *v;

    *out = NULL;
    e->msg[0] = e->path[0] = e->hint[0] = '\0';
    e->offset = 0;
    if (!text || only_space(text, len)) {
        *out = json_object();
        return *out ? REIN_OK : REIN_ENOMEM;
    }
    if (max_len && len > max_len) {
        snprintf(e->msg, sizeof(e->msg), "the arguments are %zu bytes; the limit is %zu bytes", len,
                 max_len);
        return REIN_EINVALID;
    }
    v = rein__tools_json_parse_fast(text, len);
    if (json_is_object(v)) {
        *out = v;
        return REIN_OK;
    }
    json_decref(v);
    /* Anything else, errors included, is jansson's to decide and to explain. */
    rein_error_clear(&perr);
    v = rein_json_parse(text, len, JSON_REJECT_DUPLICATES, &perr);
    if (!v) {
        if (perr.code == REIN_ENOMEM || strstr(perr.msg, "out of memory")) {
            snprintf(e->msg, sizeof(e->msg), "out of memory parsing the arguments");
            return REIN_ENOMEM;
        }
        e->offset = perr.detail > 0 ? (size_t)perr.detail : 0;
        snprintf(e->msg, sizeof(e->msg), "the arguments are not valid JSON: %s", perr.msg);
        if (strstr(perr.msg, "too big")) {
            rein__tools_pointer_at(text, len, e->offset, e->path, sizeof(e->path));
            snprintf(e->hint, sizeof(e->hint),
                     "send integers that do not fit in 64 bits as strings");
        }
        return REIN_EINVALID;
    }
    if (!json_is_object(v)) {
        snprintf(e->msg, sizeof(e->msg), "the arguments must be a JSON object, got %s",
                 rein_json_type_name(v));
        json_decref(v);
        return REIN_EINVALID;
    }
    *out = v;
    return REIN_OK;
}
