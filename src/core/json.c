/*
 * jansson documents in and out of rein buffers (include/rein/json.h).
 *
 * jansson's error record is copied into rein_error at once, with its line and column, so the
 * caller can point a person (or a model) at the exact place where the text went wrong.
 */
#include "core/internal.h"

#include <rein/json.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

json_t *rein_json_parse(const char *text, size_t len, size_t flags, rein_error *err)
{
    json_error_t jerr;
    json_t *v;

    /* rein's parser first where it can only agree with jansson: it refuses duplicate keys,
     * so it serves both with and without JSON_REJECT_DUPLICATES, and no other flag. */
    if (!(flags & ~(size_t)(JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL))) {
        v = rein__json_parse_fast(text, len);
        if (v)
            return v;
    }
    v = json_loadb(text, len, flags | JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (v)
        return v;
    if (err) {
        rein_error_set(err, REIN_EPARSE, "%s at line %d, column %d", jerr.text, jerr.line,
                       jerr.column);
        err->line = jerr.line;
        err->column = jerr.column;
        err->detail = (int)jerr.position;
    }
    return NULL;
}

json_t *rein_json_load_file(const char *path, rein_error *err)
{
    json_error_t jerr;
    json_t *v;
    FILE *f = fopen(path, "rb");

    if (!f) {
        rein_error_set(err, errno == ENOENT ? REIN_ENOTFOUND : REIN_EIO, "%s: %s", path,
                       strerror(errno));
        return NULL;
    }
    v = json_loadf(f, JSON_DECODE_ANY, &jerr);
    fclose(f);
    if (v)
        return v;
    if (err) {
        rein_error_set(err, REIN_EPARSE, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
        err->line = jerr.line;
        err->column = jerr.column;
    }
    return NULL;
}

void rein_jw_json(struct rein_jw *w, const json_t *v)
{
    const char *key;
    json_t *item;
    size_t i;

    switch (json_typeof(v)) {
    case JSON_OBJECT:
        rein_jw_obj_begin(w);
        json_object_foreach((json_t *)v, key, item)
        {
            rein_jw_key(w, key);
            rein_jw_json(w, item);
            if (w->err)
                return;
        }
        rein_jw_obj_end(w);
        break;
    case JSON_ARRAY:
        rein_jw_arr_begin(w);
        json_array_foreach(v, i, item)
        {
            rein_jw_json(w, item);
            if (w->err)
                return;
        }
        rein_jw_arr_end(w);
        break;
    case JSON_STRING:
        rein_jw_strn(w, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        rein_jw_int(w, (int64_t)json_integer_value(v));
        break;
    case JSON_REAL:
        rein_jw_double(w, json_real_value(v));
        break;
    case JSON_TRUE:
        rein_jw_bool(w, true);
        break;
    case JSON_FALSE:
        rein_jw_bool(w, false);
        break;
    default:
        rein_jw_null(w);
        break;
    }
}

rein_err rein_json_dump(struct rein_buf *b, const json_t *v)
{
    struct rein_jw w;

    rein_jw_init(&w, b);
    rein_jw_json(&w, v);
    return rein_jw_finish(&w);
}

/* One value with line breaks and indent spaces per level, as jansson's JSON_INDENT lays it out
 * but with rein's number text. */
static rein_err dump_pretty(struct rein_buf *b, const json_t *v, int indent, int depth)
{
    const char *key;
    json_t *item;
    size_t i, n;
    char num[REIN_JSON_DOUBLE_MAX];
    rein_err rc = REIN_OK;
    bool object = json_is_object(v);

    if (depth >= REIN_JW_MAX_DEPTH)
        return REIN_EDEPTH;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
    case JSON_ARRAY:
        n = object ? json_object_size(v) : json_array_size(v);
        if (n == 0)
            return rein_buf_adds(b, object ? "{}" : "[]");
        rc = rein_buf_addch(b, object ? '{' : '[');
        i = 0;
        if (object) {
            json_object_foreach((json_t *)v, key, item)
            {
                rc = rc ? rc
                        : rein_buf_addf(b, "%s\n%*s\"", i++ ? "," : "", indent * (depth + 1), "");
                rc = rc ? rc : rein_json_escape(b, key, strlen(key));
                rc = rc ? rc : rein_buf_adds(b, "\": ");
                rc = rc ? rc : dump_pretty(b, item, indent, depth + 1);
            }
        } else {
            json_array_foreach(v, i, item)
            {
                rc = rc ? rc : rein_buf_addf(b, "%s\n%*s", i ? "," : "", indent * (depth + 1), "");
                rc = rc ? rc : dump_pretty(b, item, indent, depth + 1);
            }
        }
        rc = rc ? rc : rein_buf_addf(b, "\n%*s%c", indent * depth, "", object ? '}' : ']');
        return rc;
    case JSON_STRING:
        rc = rein_buf_addch(b, '"');
        rc = rc ? rc : rein_json_escape(b, json_string_value(v), json_string_length(v));
        return rc ? rc : rein_buf_addch(b, '"');
    case JSON_INTEGER:
        return rein_buf_addf(b, "%lld", (long long)json_integer_value(v));
    case JSON_REAL:
        return rein_buf_add(b, num, (size_t)rein_json_double_text(json_real_value(v), num));
    case JSON_TRUE:
        return rein_buf_adds(b, "true");
    case JSON_FALSE:
        return rein_buf_adds(b, "false");
    default:
        return rein_buf_adds(b, "null");
    }
}

rein_err rein_json_dump_indent(struct rein_buf *b, const json_t *v, int indent)
{
    size_t len = b->len;
    rein_err rc;

    if (indent <= 0)
        return rein_json_dump(b, v);
    rc = dump_pretty(b, v, indent > 16 ? 16 : indent, 0);
    if (rc)
        rein_buf_truncate(b, len);
    return rc;
}

char *rein_json_dumps(const json_t *v)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    if (rein_json_dump(&b, v)) {
        rein_buf_release(&b);
        return NULL;
    }
    return rein_buf_detach(&b, NULL);
}

const char *rein_json_type_name(const json_t *v)
{
    return rein__json_type_word(json_typeof(v));
}

const char *rein__json_type_word(int type)
{
    switch (type) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    default:
        return "null";
    }
}

json_t *rein__json_string_lossy(const char *s, size_t len)
{
    struct rein_buf b;
    json_t *v;

    v = json_stringn(s, len);
    if (v || !s)
        return v;
    /* Not UTF-8 (or out of memory): the JSON writer replaces bad bytes with U+FFFD. */
    rein_buf_init(&b, 0);
    if (rein_buf_addch(&b, '"') || rein_json_escape(&b, s, len) || rein_buf_addch(&b, '"')) {
        rein_buf_release(&b);
        return NULL;
    }
    v = rein_json_parse(b.ptr, b.len, 0, NULL);
    rein_buf_release(&b);
    return v;
}

/* ---- finding a member in the text ----------------------------------------------------------
 * jansson keeps no positions once a document is parsed, so a check that finds a problem in the
 * tree (an unknown key in a configuration) scans the text again for the place to name. */

#define LOCATE_MAX_DEPTH 512

struct cursor {
    const unsigned char *p, *end;
    int line, column;
};

static void step(struct cursor *c)
{
    if (*c->p == '\n') {
        c->line++;
        c->column = 1;
    } else if ((*c->p & 0xC0) != 0x80) {
        c->column++; /* a column is a character, as jansson counts them */
    }
    c->p++;
}

static void skip_ws(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        step(c);
}

/* Four hex digits at c->p (consumed), or -1. */
static long hex4(struct cursor *c)
{
    long v = 0;

    for (int i = 0; i < 4; i++) {
        int h = c->p < c->end ? rein__hex_digit((char)*c->p) : -1;
        if (h < 0)
            return -1;
        v = v * 16 + h;
        step(c);
    }
    return v;
}

/* Appends code point cp as UTF-8 to out (room for 4 more bytes is checked by the caller). */
static size_t put_utf8(unsigned char *out, unsigned long cp)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Consumes the string at c->p (on its opening quote); true when it decodes to want (wlen
 * bytes; NULL compares nothing). False with c->p == NULL when the text is broken. */
static bool scan_string(struct cursor *c, const char *want, size_t wlen)
{
    const unsigned char *w = (const unsigned char *)want;
    size_t at = 0;
    bool same = want != NULL;

    step(c); /* the opening quote */
    while (c->p < c->end && *c->p != '"') {
        unsigned char tmp[4];
        size_t n = 1;
        if (*c->p == '\\') {
            static const char plain[] = "\"\\/bfnrt", real[] = "\"\\/\b\f\n\r\t";
            const char *k;
            step(c);
            if (c->p >= c->end)
                break;
            if (*c->p == 'u') {
                long cp, lo;
                step(c);
                cp = hex4(c);
                if (cp >= 0xD800 && cp <= 0xDBFF && c->end - c->p >= 6 && c->p[0] == '\\' &&
                    c->p[1] == 'u') {
                    step(c);
                    step(c);
                    lo = hex4(c);
                    cp = lo >= 0xDC00 && lo <= 0xDFFF
                             ? 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
                             : -1;
                }
                if (cp < 0)
                    break;
                n = put_utf8(tmp, (unsigned long)cp);
            } else if ((k = strchr(plain, *c->p)) != NULL && *c->p) {
                tmp[0] = (unsigned char)real[k - plain];
                step(c);
            } else {
                break;
            }
        } else {
            tmp[0] = *c->p;
            step(c);
        }
        if (same && (at + n > wlen || memcmp(w + at, tmp, n) != 0))
            same = false;
        at += n;
    }
    if (c->p >= c->end || *c->p != '"') {
        c->p = NULL;
        return false;
    }
    step(c);
    return same && at == wlen;
}

static bool skip_value(struct cursor *c, int depth);

/* Consumes a member's key and its colon; *hit (may be NULL) says whether the key is want. */
static bool member_key(struct cursor *c, const char *want, size_t wlen, bool *hit)
{
    bool same;

    if (c->p >= c->end || *c->p != '"')
        return false;
    same = scan_string(c, want, wlen);
    if (!c->p)
        return false;
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':')
        return false;
    step(c);
    if (hit)
        *hit = same;
    return true;
}

/* Consumes a container's members or elements; each member's key is checked when key is set. */
static bool skip_container(struct cursor *c, int depth)
{
    unsigned char close = *c->p == '{' ? '}' : ']';
    bool object = close == '}';

    step(c);
    skip_ws(c);
    if (c->p < c->end && *c->p == close) {
        step(c);
        return true;
    }
    for (;;) {
        if (object && !member_key(c, NULL, 0, NULL))
            return false;
        if (!skip_value(c, depth + 1))
            return false;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            step(c);
            skip_ws(c);
            continue;
        }
        if (c->p < c->end && *c->p == close) {
            step(c);
            return true;
        }
        return false;
    }
}

static bool skip_value(struct cursor *c, int depth)
{
    skip_ws(c);
    if (c->p >= c->end || depth > LOCATE_MAX_DEPTH)
        return false;
    if (*c->p == '{' || *c->p == '[')
        return skip_container(c, depth);
    if (*c->p == '"') {
        scan_string(c, NULL, 0);
        return c->p != NULL;
    }
    /* A number or a literal: everything up to the next delimiter. */
    while (c->p < c->end && !strchr(",]} \t\r\n", *c->p))
        step(c);
    return true;
}

/* Decodes the next pointer segment of *ptr into seg (at most size - 1 bytes); advances *ptr. */
static bool next_segment(const char **ptr, char *seg, size_t size, size_t *len)
{
    const char *p = *ptr + 1; /* past the '/' */
    size_t n = 0;

    while (*p && *p != '/') {
        char ch = *p++;
        if (ch == '~') {
            if (*p != '0' && *p != '1')
                return false;
            ch = *p++ == '0' ? '~' : '/';
        }
        if (n + 1 >= size)
            return false;
        seg[n++] = ch;
    }
    seg[n] = '\0';
    *len = n;
    *ptr = p;
    return true;
}

/* Moves c to the member key (object) or element (array) named by seg; false when absent. */
static bool enter(struct cursor *c, const char *seg, size_t slen, struct cursor *at)
{
    bool object = *c->p == '{';
    size_t index = 0, want = 0;
    char *endp = NULL;

    if (!object) {
        if (slen == 0 || (slen > 1 && seg[0] == '0'))
            return false;
        want = strtoul(seg, &endp, 10);
        if (*endp)
            return false;
    }
    step(c);
    skip_ws(c);
    if (c->p < c->end && (*c->p == '}' || *c->p == ']'))
        return false;
    for (;; index++) {
        bool hit;
        skip_ws(c);
        *at = *c;
        if (object) {
            if (!member_key(c, seg, slen, &hit))
                return false;
            skip_ws(c);
        } else {
            hit = index == want;
            *at = *c;
        }
        if (hit)
            return true;
        if (!skip_value(c, 1))
            return false;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ',')
            return false;
        step(c);
    }
}

bool rein_json_locate(const char *text, size_t len, const char *pointer, int *line, int *column)
{
    struct cursor c, at;
    char seg[256];
    size_t slen;

    if (!text || !pointer || (pointer[0] && pointer[0] != '/'))
        return false;
    c.p = (const unsigned char *)text;
    c.end = c.p + len;
    c.line = c.column = 1;
    skip_ws(&c);
    at = c;
    while (*pointer) {
        if (c.p >= c.end || (*c.p != '{' && *c.p != '['))
            return false;
        if (!next_segment(&pointer, seg, sizeof(seg), &slen) || !enter(&c, seg, slen, &at))
            return false;
    }
    if (at.p >= at.end)
        return false;
    *line = at.line;
    *column = at.column;
    return true;
}
