/*
 * Reading a protocol file into a jansson tree that remembers where every value came from.
 *
 * YAML is read with libyaml's document loader and converted with the YAML 1.2 core schema
 * (plain `300` is an integer, `true` a boolean, `~` null, quoted text always a string).
 * Aliases share one jansson value, so an alias bomb costs no memory, and an alias that
 * refers to itself is refused. JSON is read with jansson (duplicate keys refused) and then
 * tokenized once more with jsmn, whose token offsets give each value its line and column.
 *
 * The position table maps each value (and each object key) to its line and column, so that
 * config.c can say "rein-verify.yaml:9:21: protocols.TEST.steps[0].on_failure: must be …"
 * about a file that is well-formed but wrong.
 */
#include "doc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define JSMN_STATIC
#define JSMN_STRICT
#include <jsmn.h>

#define DOC_MAX_DEPTH 64

void rein__doc_release(struct rein__doc *d)
{
    for (size_t i = 0; i < d->npos; i++)
        rein_free(d->pos[i].key);
    rein_free(d->pos);
    json_decref(d->root);
    memset(d, 0, sizeof(*d));
}

static rein_err add_pos(struct rein__doc *d, const json_t *node, const char *key, int line, int col)
{
    if (d->npos == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        struct rein__doc_pos *p = rein_realloc(d->pos, cap * sizeof(*p));
        if (!p)
            return REIN_ENOMEM;
        d->pos = p;
        d->cap = cap;
    }
    d->pos[d->npos] = (struct rein__doc_pos){node, NULL, line, col};
    if (key) {
        d->pos[d->npos].key = rein_strdup(key);
        if (!d->pos[d->npos].key)
            return REIN_ENOMEM;
    }
    d->npos++;
    return REIN_OK;
}

bool rein__doc_where(const struct rein__doc *d, const json_t *node, const char *key, int *line,
                     int *col)
{
    for (size_t i = 0; i < d->npos; i++) {
        const struct rein__doc_pos *p = &d->pos[i];
        if (p->node != node || (key ? !p->key || strcmp(p->key, key) != 0 : p->key != NULL))
            continue;
        *line = p->line;
        *col = p->col;
        return true;
    }
    return false;
}

/* ---- YAML ---- */

struct yctx {
    struct rein__doc *doc;
    yaml_document_t *ydoc;
    json_t **memo;  /* converted value per node, shared by aliases */
    char *visiting; /* nodes being converted: an alias back to one is a cycle */
    const char *name;
    rein_error *err;
};

static int yerr(struct yctx *c, const yaml_mark_t *m, int code, const char *fmt, ...)
    REIN_PRINTF(4, 5);

static int yerr(struct yctx *c, const yaml_mark_t *m, int code, const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rein_error_set(c->err, code, "%s:%d:%d: %s", c->name, (int)m->line + 1, (int)m->column + 1,
                   msg);
    if (c->err) {
        c->err->line = (int)m->line + 1;
        c->err->column = (int)m->column + 1;
    }
    return code;
}

static bool word_is(const char *s, size_t n, const char *const *words)
{
    for (size_t i = 0; words[i]; i++) {
        if (strlen(words[i]) == n && memcmp(s, words[i], n) == 0)
            return true;
    }
    return false;
}

static bool all_in(const char *s, size_t n, const char *set)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!strchr(set, s[i]))
            return false;
    }
    return true;
}

/* The YAML 1.2 core schema for an untagged plain scalar. NULL on ENOMEM. */
static json_t *resolve_plain(const char *s, size_t n)
{
    static const char *const nulls[] = {"~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    char tmp[64], *end;
    size_t d = (n && (s[0] == '-' || s[0] == '+')) ? 1 : 0;

    if (n == 0 || word_is(s, n, nulls))
        return json_null();
    if (word_is(s, n, trues))
        return json_true();
    if (word_is(s, n, falses))
        return json_false();
    if (n < sizeof(tmp)) {
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        if (all_in(s + d, n - d, "0123456789") ||
            (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o'))) {
            long long v;
            errno = 0;
            if (s[0] == '0' && n > 2 && s[1] == 'o')
                v = strtoll(tmp + 2, &end, 8);
            else
                v = strtoll(tmp, &end, s[0] == '0' && n > 2 && s[1] == 'x' ? 16 : 10);
            if (errno == 0 && *end == '\0')
                return json_integer(v);
        } else if (all_in(s + d, n - d, "0123456789.eE+-") && strchr("0123456789.", s[d])) {
            double v = strtod(tmp, &end);
            if (*end == '\0' && end != tmp)
                return json_real(v);
        }
    }
    return json_stringn_nocheck(s, n);
}

static json_t *convert(struct yctx *c, yaml_node_t *node, int depth);

static json_t *convert_mapping(struct yctx *c, yaml_node_t *node, int depth)
{
    json_t *obj = json_object();

    if (!obj) {
        yerr(c, &node->start_mark, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(c->ydoc, p->key);
        yaml_node_t *v = yaml_document_get_node(c->ydoc, p->value);
        const char *key;
        json_t *val;

        if (!k || !v || k->type != YAML_SCALAR_NODE) {
            yerr(c, k ? &k->start_mark : &node->start_mark, REIN_EPARSE,
                 "a mapping key must be plain text");
            goto out_fail;
        }
        key = (const char *)k->data.scalar.value;
        if (strlen(key) != k->data.scalar.length) {
            yerr(c, &k->start_mark, REIN_EPARSE, "a key contains a NUL character");
            goto out_fail;
        }
        if (json_object_get(obj, key)) {
            yerr(c, &k->start_mark, REIN_EPARSE, "duplicate key \"%s\"", key);
            goto out_fail;
        }
        if (add_pos(c->doc, obj, key, (int)k->start_mark.line + 1, (int)k->start_mark.column + 1)) {
            yerr(c, &k->start_mark, REIN_ENOMEM, "out of memory");
            goto out_fail;
        }
        val = convert(c, v, depth + 1);
        if (!val)
            goto out_fail;
        if (json_object_set_new(obj, key, val)) {
            yerr(c, &k->start_mark, REIN_ENOMEM, "out of memory");
            goto out_fail;
        }
    }
    return obj;

out_fail:
    json_decref(obj);
    return NULL;
}

static json_t *convert_sequence(struct yctx *c, yaml_node_t *node, int depth)
{
    json_t *arr = json_array();

    if (!arr) {
        yerr(c, &node->start_mark, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top;
         it++) {
        yaml_node_t *v = yaml_document_get_node(c->ydoc, *it);
        json_t *val = v ? convert(c, v, depth + 1) : NULL;
        if (!val || json_array_append_new(arr, val)) {
            if (val)
                yerr(c, &node->start_mark, REIN_ENOMEM, "out of memory");
            else if (!v)
                yerr(c, &node->start_mark, REIN_EPARSE, "broken sequence");
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *convert_scalar(struct yctx *c, yaml_node_t *node)
{
    const char *s = (const char *)node->data.scalar.value;
    size_t n = node->data.scalar.length;
    json_t *v;

    if (memchr(s, '\0', n)) {
        yerr(c, &node->start_mark, REIN_EPARSE, "text contains a NUL character");
        return NULL;
    }
    v = node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? resolve_plain(s, n)
                                                           : json_stringn_nocheck(s, n);
    if (!v)
        yerr(c, &node->start_mark, REIN_ENOMEM, "out of memory");
    return v;
}

static json_t *convert(struct yctx *c, yaml_node_t *node, int depth)
{
    size_t idx = (size_t)(node - c->ydoc->nodes.start);
    json_t *v;

    if (c->memo[idx])
        return json_incref(c->memo[idx]);
    if (c->visiting[idx]) {
        yerr(c, &node->start_mark, REIN_EPARSE, "an alias refers to the value containing it");
        return NULL;
    }
    if (depth > DOC_MAX_DEPTH) {
        yerr(c, &node->start_mark, REIN_EDEPTH, "nested too deeply");
        return NULL;
    }
    c->visiting[idx] = 1;
    switch (node->type) {
    case YAML_MAPPING_NODE:
        v = convert_mapping(c, node, depth);
        break;
    case YAML_SEQUENCE_NODE:
        v = convert_sequence(c, node, depth);
        break;
    case YAML_SCALAR_NODE:
        v = convert_scalar(c, node);
        break;
    default:
        v = NULL;
        yerr(c, &node->start_mark, REIN_EPARSE, "empty node");
        break;
    }
    c->visiting[idx] = 0;
    if (!v)
        return NULL;
    if (add_pos(c->doc, v, NULL, (int)node->start_mark.line + 1,
                (int)node->start_mark.column + 1)) {
        json_decref(v);
        yerr(c, &node->start_mark, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    c->memo[idx] = v;
    return json_incref(v);
}

/* Line and column (1-based, in characters) of byte offset off in text. */
static void offset_to_mark(const char *text, size_t len, size_t off, yaml_mark_t *m)
{
    m->line = 0;
    m->column = 0;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n') {
            m->line++;
            m->column = 0;
        } else if (((unsigned char)text[i] & 0xc0) != 0x80) {
            m->column++;
        }
    }
}

static int parser_error(struct yctx *c, yaml_parser_t *p, const char *text, size_t len)
{
    yaml_mark_t m = p->problem_mark;
    char msg[200];

    if (p->error == YAML_MEMORY_ERROR)
        return rein_error_set(c->err, REIN_ENOMEM, "%s: out of memory", c->name);
    if (p->error == YAML_READER_ERROR)
        offset_to_mark(text, len, p->problem_offset, &m);
    snprintf(msg, sizeof(msg), "%s%s%s", p->problem ? p->problem : "malformed YAML",
             p->context ? " " : "", p->context ? p->context : "");
    return yerr(c, &m, REIN_EPARSE, "%s", msg);
}

static rein_err load_yaml(struct rein__doc *d, const char *text, size_t len, const char *name,
                          rein_error *err)
{
    yaml_parser_t parser;
    yaml_document_t ydoc, extra;
    struct yctx c = {.doc = d, .ydoc = &ydoc, .name = name, .err = err};
    yaml_node_t *root;
    rein_err rc = REIN_OK;
    size_t nnodes;

    if (!yaml_parser_initialize(&parser))
        return rein_error_set(err, REIN_ENOMEM, "%s: out of memory", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &ydoc)) {
        rc = parser_error(&c, &parser, text, len);
        yaml_parser_delete(&parser);
        return rc;
    }
    root = yaml_document_get_root_node(&ydoc);
    if (!root) {
        rc = rein_error_set(err, REIN_EPARSE, "%s:1:1: the file is empty", name);
        if (err)
            err->line = err->column = 1;
        goto out_doc;
    }
    /* A second document would be silently ignored; refuse it instead. */
    if (!yaml_parser_load(&parser, &extra)) {
        rc = parser_error(&c, &parser, text, len);
        goto out_doc;
    }
    if (yaml_document_get_root_node(&extra))
        rc = yerr(&c, &yaml_document_get_root_node(&extra)->start_mark, REIN_EPARSE,
                  "a protocol file holds one YAML document, this is a second one");
    yaml_document_delete(&extra);
    if (rc)
        goto out_doc;
    nnodes = (size_t)(ydoc.nodes.top - ydoc.nodes.start);
    c.memo = rein_calloc(nnodes, sizeof(json_t *));
    c.visiting = rein_calloc(nnodes, 1);
    if (!c.memo || !c.visiting) {
        rc = rein_error_set(err, REIN_ENOMEM, "%s: out of memory", name);
        goto out_memo;
    }
    d->root = convert(&c, root, 0);
    if (!d->root)
        rc = err && err->code ? err->code : REIN_EPARSE;
out_memo:
    for (size_t i = 0; c.memo && i < nnodes; i++)
        json_decref(c.memo[i]);
    rein_free(c.memo);
    rein_free(c.visiting);
out_doc:
    yaml_document_delete(&ydoc);
    yaml_parser_delete(&parser);
    return rc;
}

/* ---- JSON ---- */

struct jwalk {
    struct rein__doc *doc;
    const char *text;
    const jsmntok_t *tok;
    int ntok;
    int i;
    /* A cursor that turns increasing offsets into lines and columns in one pass. */
    size_t off;
    int line, col;
};

static void jw_mark(struct jwalk *w, size_t target, int *line, int *col)
{
    for (; w->off < target; w->off++) {
        if (w->text[w->off] == '\n') {
            w->line++;
            w->col = 1;
        } else if (((unsigned char)w->text[w->off] & 0xc0) != 0x80) {
            w->col++;
        }
    }
    *line = w->line;
    *col = w->col;
}

/* Start of token t: for a string, its opening quote. */
static size_t tok_start(const jsmntok_t *t)
{
    return (size_t)(t->type == JSMN_STRING && t->start > 0 ? t->start - 1 : t->start);
}

/* Walks v and the jsmn tokens together; false when they disagree (positions stay partial). */
static bool jwalk_value(struct jwalk *w, const json_t *v, int depth)
{
    const jsmntok_t *t;
    int line, col;

    if (w->i >= w->ntok || depth > DOC_MAX_DEPTH)
        return false;
    t = &w->tok[w->i++];
    jw_mark(w, tok_start(t), &line, &col);
    if (add_pos(w->doc, v, NULL, line, col))
        return false;
    if (json_is_object(v)) {
        const char *key;
        json_t *item;
        if (t->type != JSMN_OBJECT || (size_t)t->size != json_object_size(v))
            return false;
        json_object_foreach((json_t *)v, key, item)
        {
            if (w->i >= w->ntok || w->tok[w->i].type != JSMN_STRING)
                return false;
            jw_mark(w, tok_start(&w->tok[w->i]), &line, &col);
            w->i++;
            if (add_pos(w->doc, v, key, line, col) || !jwalk_value(w, item, depth + 1))
                return false;
        }
        return true;
    }
    if (json_is_array(v)) {
        size_t idx;
        json_t *item;
        if (t->type != JSMN_ARRAY || (size_t)t->size != json_array_size(v))
            return false;
        json_array_foreach(v, idx, item)
        {
            if (!jwalk_value(w, item, depth + 1))
                return false;
        }
        return true;
    }
    return t->type == JSMN_STRING || t->type == JSMN_PRIMITIVE;
}

static rein_err load_json(struct rein__doc *d, const char *text, size_t len, const char *name,
                          rein_error *err)
{
    jsmn_parser p;
    jsmntok_t *tok;
    int n;

    d->root = rein_json_parse(text, len, JSON_REJECT_DUPLICATES, err);
    if (!d->root) {
        if (err && err->code == REIN_EPARSE) {
            /* "<name>:<line>:<col>: <jansson's words>", without its own " at line …" tail. */
            char msg[sizeof(err->msg)];
            char *at;
            int line = err->line, col = err->column;
            snprintf(msg, sizeof(msg), "%s", err->msg);
            at = strstr(msg, " at line ");
            if (at)
                *at = '\0';
            rein_error_set(err, REIN_EPARSE, "%s:%d:%d: %s", name, line, col, msg);
            err->line = line;
            err->column = col;
        }
        return err ? err->code : REIN_EPARSE;
    }
    /* Positions are a courtesy for later messages: if jsmn cannot follow, they are left out. */
    jsmn_init(&p);
    n = jsmn_parse(&p, text, len, NULL, 0);
    if (n <= 0 || n > (1 << 22))
        return REIN_OK;
    tok = rein_calloc((size_t)n, sizeof(*tok));
    if (!tok)
        return REIN_OK;
    jsmn_init(&p);
    if (jsmn_parse(&p, text, len, tok, (unsigned)n) == n) {
        struct jwalk w = {.doc = d, .text = text, .tok = tok, .ntok = n, .line = 1, .col = 1};
        jwalk_value(&w, d->root, 0);
    }
    rein_free(tok);
    return REIN_OK;
}

static bool looks_like_json(const char *text, size_t len, const char *name)
{
    size_t n = name ? strlen(name) : 0;

    if (n >= 5 && strcmp(name + n - 5, ".json") == 0)
        return true;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')
            continue;
        return text[i] == '{';
    }
    return false;
}

rein_err rein__doc_load(struct rein__doc *d, const char *text, size_t len, const char *name,
                        rein_error *err)
{
    memset(d, 0, sizeof(*d));
    if (!name)
        name = "(protocol file)";
    d->is_json = looks_like_json(text, len, name);
    return d->is_json ? load_json(d, text, len, name, err) : load_yaml(d, text, len, name, err);
}
