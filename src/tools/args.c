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
    /* rein_json_parse tries rein's own parser first; errors are jansson's, with positions. */
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
