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
    switch (json_typeof(v)) {
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
