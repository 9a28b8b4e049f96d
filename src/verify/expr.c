/*
 * Success conditions of protocol steps and protocols: `exit_code == 0 and failed == 0`,
 * `output contains "OK"`, `all_tests_pass`, `not timed_out`.
 *
 * A condition is compiled when the protocol file is loaded, so a misspelt name or a type
 * mistake (`failed == "x"`) is reported with the file's line and column before anything runs.
 * Evaluation is three-valued: a name the output did not report (failed, when no parser
 * recognised the output) is unknown, and an unknown condition counts as not met, with a note
 * saying which value was missing, rather than as a silent pass.
 */
#include "verify_int.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPR_MAX_DEPTH 64

enum vtype {
    T_NUM,
    T_BOOL,
    T_STR,
};

enum var {
    V_EXIT_CODE,
    V_TIMED_OUT,
    V_DURATION_MS,
    V_PASSED,
    V_FAILED,
    V_SKIPPED,
    V_TOTAL,
    V_ERRORS,
    V_WARNINGS,
    V_ALL_TESTS_PASS,
    V_OUTPUT,
    V_COVERAGE,
};

static const struct {
    const char *name;
    enum var var;
    enum vtype type;
} vars[] = {
    {"exit_code", V_EXIT_CODE, T_NUM},
    {"timed_out", V_TIMED_OUT, T_BOOL},
    {"duration_ms", V_DURATION_MS, T_NUM},
    {"passed", V_PASSED, T_NUM},
    {"failed", V_FAILED, T_NUM},
    {"skipped", V_SKIPPED, T_NUM},
    {"total", V_TOTAL, T_NUM},
    {"errors", V_ERRORS, T_NUM},
    {"error_count", V_ERRORS, T_NUM},
    {"warnings", V_WARNINGS, T_NUM},
    {"warning_count", V_WARNINGS, T_NUM},
    {"all_tests_pass", V_ALL_TESTS_PASS, T_BOOL},
    {"output", V_OUTPUT, T_STR},
    {"coverage", V_COVERAGE, T_NUM},
};

enum node_kind {
    N_NUM,
    N_BOOL,
    N_STR,
    N_VAR,
    N_NOT,
    N_AND,
    N_OR,
    N_CMP,
    N_CONTAINS,
    N_MATCHES,
};

enum cmp_op {
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
};

struct rein__expr {
    enum node_kind kind;
    enum vtype type;
    enum cmp_op op;
    enum var var;
    double num;
    bool b;
    char *str;
    pcre2_code *re;
    struct rein__expr *a, *b2;
};

struct parser {
    const char *text;
    size_t pos;
    size_t err_pos;
    char *why;
    size_t why_len;
    bool failed;
    int depth;
};

static void *pcre_alloc(PCRE2_SIZE n, void *ud)
{
    (void)ud;
    return rein_malloc(n);
}

static void pcre_free(void *p, void *ud)
{
    (void)ud;
    rein_free(p);
}

static struct rein__expr *fail_at(struct parser *p, size_t pos, const char *fmt, ...)
    REIN_PRINTF(3, 4);

static struct rein__expr *fail_at(struct parser *p, size_t pos, const char *fmt, ...)
{
    va_list ap;

    if (!p->failed) {
        p->failed = true;
        p->err_pos = pos;
        va_start(ap, fmt);
        vsnprintf(p->why, p->why_len, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

void rein__verify_expr_free(struct rein__expr *e)
{
    if (!e)
        return;
    rein__verify_expr_free(e->a);
    rein__verify_expr_free(e->b2);
    rein_free(e->str);
    pcre2_code_free(e->re);
    rein_free(e);
}

static struct rein__expr *node(struct parser *p, enum node_kind kind, enum vtype type)
{
    struct rein__expr *e = rein_calloc(1, sizeof(*e));

    if (!e)
        return fail_at(p, p->pos, "out of memory");
    e->kind = kind;
    e->type = type;
    return e;
}

static void skip_space(struct parser *p)
{
    while (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' || p->text[p->pos] == '\n' ||
           p->text[p->pos] == '\r')
        p->pos++;
}

static bool is_ident_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
}

/* True (and consumes it) when the next token is the word w (a keyword, not a prefix). */
static bool take_word(struct parser *p, const char *w)
{
    size_t n = strlen(w);

    skip_space(p);
    if (strncmp(p->text + p->pos, w, n) != 0 || is_ident_char(p->text[p->pos + n], false))
        return false;
    p->pos += n;
    return true;
}

static bool take_sym(struct parser *p, const char *sym)
{
    size_t n = strlen(sym);

    skip_space(p);
    if (strncmp(p->text + p->pos, sym, n) != 0)
        return false;
    p->pos += n;
    return true;
}

static struct rein__expr *parse_or(struct parser *p);

static struct rein__expr *parse_string(struct parser *p)
{
    char quote = p->text[p->pos];
    size_t start = p->pos++;
    struct rein_buf b;
    struct rein__expr *e;

    rein_buf_init(&b, 1 << 16);
    for (;;) {
        char c = p->text[p->pos];
        rein_err rc;
        if (c == '\0') {
            rein_buf_release(&b);
            return fail_at(p, start, "unterminated string");
        }
        p->pos++;
        if (c == quote)
            break;
        if (c == '\\' && p->text[p->pos]) {
            c = p->text[p->pos++];
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        rc = rein_buf_addch(&b, c);
        if (rc) {
            rein_buf_release(&b);
            return fail_at(p, start, "out of memory");
        }
    }
    e = node(p, N_STR, T_STR);
    if (e) {
        e->str = rein_buf_detach(&b, NULL);
        if (!e->str) {
            rein_free(e);
            e = fail_at(p, start, "out of memory");
        }
    }
    rein_buf_release(&b);
    return e;
}

static struct rein__expr *parse_number(struct parser *p)
{
    const char *s = p->text + p->pos;
    char *end;
    double v = strtod(s, &end);
    struct rein__expr *e;

    if (end == s)
        return fail_at(p, p->pos, "expected a number");
    p->pos += (size_t)(end - s);
    e = node(p, N_NUM, T_NUM);
    if (e)
        e->num = v;
    return e;
}

static struct rein__expr *parse_ident(struct parser *p)
{
    size_t start = p->pos, n = 0;
    char name[32];
    struct rein__expr *e;

    while (is_ident_char(p->text[p->pos], p->pos == start))
        p->pos++;
    n = p->pos - start;
    if (n == 0)
        return fail_at(p, start, "expected a name, a number, a string or '('");
    if (n >= sizeof(name))
        n = sizeof(name) - 1;
    memcpy(name, p->text + start, n);
    name[n] = '\0';
    if (strcmp(name, "true") == 0 || strcmp(name, "false") == 0) {
        e = node(p, N_BOOL, T_BOOL);
        if (e)
            e->b = name[0] == 't';
        return e;
    }
    for (size_t i = 0; i < REIN_ARRAY_SIZE(vars); i++) {
        if (strcmp(vars[i].name, name) == 0) {
            e = node(p, N_VAR, vars[i].type);
            if (e)
                e->var = vars[i].var;
            return e;
        }
    }
    return fail_at(p, start,
                   "unknown name \"%s\" (known: exit_code, timed_out, duration_ms, passed, "
                   "failed, skipped, total, errors, warnings, all_tests_pass, coverage, output)",
                   name);
}

static struct rein__expr *parse_primary(struct parser *p)
{
    char c;

    skip_space(p);
    c = p->text[p->pos];
    if (c == '(') {
        struct rein__expr *e;
        size_t open = p->pos++;
        if (++p->depth > EXPR_MAX_DEPTH)
            return fail_at(p, open, "nested too deeply");
        e = parse_or(p);
        p->depth--;
        if (e && !take_sym(p, ")")) {
            rein__verify_expr_free(e);
            return fail_at(p, open, "'(' is never closed");
        }
        return e;
    }
    if (c == '"' || c == '\'')
        return parse_string(p);
    if ((c >= '0' && c <= '9') || c == '-' || c == '.')
        return parse_number(p);
    return parse_ident(p);
}

static bool take_cmp(struct parser *p, enum cmp_op *op)
{
    static const struct {
        const char *sym;
        enum cmp_op op;
    } ops[] = {{"==", OP_EQ}, {"!=", OP_NE}, {"<=", OP_LE},
               {">=", OP_GE}, {"<", OP_LT},  {">", OP_GT}};

    for (size_t i = 0; i < REIN_ARRAY_SIZE(ops); i++) {
        if (take_sym(p, ops[i].sym)) {
            *op = ops[i].op;
            return true;
        }
    }
    return false;
}

static bool compile_regex(struct parser *p, struct rein__expr *e, size_t at)
{
    pcre2_general_context *g = pcre2_general_context_create(pcre_alloc, pcre_free, NULL);
    pcre2_compile_context *cc = g ? pcre2_compile_context_create(g) : NULL;
    int code = 0;
    PCRE2_SIZE off = 0;
    char msg[160];

    if (cc)
        e->re = pcre2_compile((PCRE2_SPTR)e->b2->str, PCRE2_ZERO_TERMINATED, PCRE2_MULTILINE, &code,
                              &off, cc);
    pcre2_compile_context_free(cc);
    pcre2_general_context_free(g);
    if (e->re)
        return true;
    if (!cc) {
        fail_at(p, at, "out of memory");
        return false;
    }
    pcre2_get_error_message(code, (PCRE2_UCHAR *)msg, sizeof(msg));
    fail_at(p, at, "bad regular expression: %s", msg);
    return false;
}

static struct rein__expr *parse_cmp(struct parser *p)
{
    size_t at;
    struct rein__expr *l = parse_primary(p), *r, *e;
    enum cmp_op op = OP_EQ;
    enum node_kind kind;

    if (!l)
        return NULL;
    skip_space(p);
    at = p->pos;
    if (take_word(p, "contains"))
        kind = N_CONTAINS;
    else if (take_word(p, "matches"))
        kind = N_MATCHES;
    else if (take_cmp(p, &op))
        kind = N_CMP;
    else
        return l;
    r = parse_primary(p);
    if (!r) {
        rein__verify_expr_free(l);
        return NULL;
    }
    e = node(p, kind, T_BOOL);
    if (!e) {
        rein__verify_expr_free(l);
        rein__verify_expr_free(r);
        return NULL;
    }
    e->a = l;
    e->b2 = r;
    e->op = op;
    if (kind != N_CMP) {
        if (l->type != T_STR || r->kind != N_STR) {
            rein__verify_expr_free(e);
            return fail_at(p, at, "'%s' needs text on the left and a \"string\" on the right",
                           kind == N_CONTAINS ? "contains" : "matches");
        }
        if (kind == N_MATCHES && !compile_regex(p, e, at)) {
            rein__verify_expr_free(e);
            return NULL;
        }
        return e;
    }
    if (l->type != r->type || (l->type != T_NUM && op != OP_EQ && op != OP_NE)) {
        const char *why = l->type != r->type ? " (a number, a truth value and text differ)"
                                             : " (only numbers are ordered)";
        rein__verify_expr_free(e); /* frees l and r too */
        return fail_at(p, at, "cannot compare these values%s", why);
    }
    return e;
}

static struct rein__expr *want_bool(struct parser *p, struct rein__expr *e, size_t at)
{
    if (e && e->type != T_BOOL) {
        rein__verify_expr_free(e);
        return fail_at(p, at, "expected a condition (a comparison or a truth value)");
    }
    return e;
}

static struct rein__expr *parse_not(struct parser *p)
{
    size_t at;

    skip_space(p);
    at = p->pos;
    if (take_word(p, "not") || take_word(p, "NOT") ||
        (p->text[p->pos] == '!' && p->text[p->pos + 1] != '=' && take_sym(p, "!"))) {
        struct rein__expr *inner, *e;
        if (++p->depth > EXPR_MAX_DEPTH)
            return fail_at(p, at, "nested too deeply");
        skip_space(p);
        inner = want_bool(p, parse_not(p), p->pos);
        p->depth--;
        if (!inner)
            return NULL;
        e = node(p, N_NOT, T_BOOL);
        if (!e) {
            rein__verify_expr_free(inner);
            return NULL;
        }
        e->a = inner;
        return e;
    }
    return parse_cmp(p);
}

static struct rein__expr *parse_binary(struct parser *p, bool is_or)
{
    size_t at;
    struct rein__expr *l;

    skip_space(p);
    at = p->pos;
    l = is_or ? parse_binary(p, false) : parse_not(p);
    for (;;) {
        struct rein__expr *r, *e;
        size_t rat;
        bool more = is_or ? (take_word(p, "or") || take_word(p, "OR") || take_sym(p, "||"))
                          : (take_word(p, "and") || take_word(p, "AND") || take_sym(p, "&&"));
        if (!l || !more)
            return l;
        l = want_bool(p, l, at);
        skip_space(p);
        rat = p->pos;
        r = want_bool(p, is_or ? parse_binary(p, false) : parse_not(p), rat);
        if (!l || !r) {
            rein__verify_expr_free(l);
            rein__verify_expr_free(r);
            return NULL;
        }
        e = node(p, is_or ? N_OR : N_AND, T_BOOL);
        if (!e) {
            rein__verify_expr_free(l);
            rein__verify_expr_free(r);
            return NULL;
        }
        e->a = l;
        e->b2 = r;
        l = e;
    }
}

static struct rein__expr *parse_or(struct parser *p)
{
    return parse_binary(p, true);
}

struct rein__expr *rein__verify_expr_compile(const char *text, size_t *offset, char *why,
                                             size_t why_len)
{
    struct parser p = {.text = text, .why = why, .why_len = why_len};
    struct rein__expr *e;

    *offset = 0;
    e = want_bool(&p, parse_or(&p), 0);
    skip_space(&p);
    if (e && text[p.pos] != '\0') {
        rein__verify_expr_free(e);
        e = fail_at(&p, p.pos, "unexpected text \"%s\"", text + p.pos);
    }
    if (!e) {
        *offset = p.err_pos;
        if (!p.failed)
            snprintf(why, why_len, "empty condition");
    }
    return e;
}

/* ---- evaluation ---- */

struct value {
    enum rein__tri known; /* TRUE when known, UNKNOWN when not */
    double num;
    bool b;
    const char *s;
    size_t slen;
};

static void note_missing(char *note, size_t note_len, const char *what)
{
    if (note && note_len && !note[0])
        snprintf(note, note_len, "%s was not reported by the output", what);
}

static struct value var_value(const struct rein__expr *e, const struct rein__expr_env *env,
                              char *note, size_t note_len)
{
    const struct rein_verify_counts *c = env->counts;
    struct value v = {.known = REIN__TRUE};
    bool tests = c && c->has_tests, diags = c && c->has_diagnostics;

    switch (e->var) {
    case V_EXIT_CODE:
        v.num = env->exit_code;
        return v;
    case V_TIMED_OUT:
        v.b = env->timed_out;
        return v;
    case V_DURATION_MS:
        v.num = (double)env->duration_ms;
        return v;
    case V_OUTPUT:
        v.s = env->output ? env->output : "";
        v.slen = env->output ? env->output_len : 0;
        return v;
    case V_PASSED:
    case V_FAILED:
    case V_SKIPPED:
    case V_TOTAL:
    case V_ALL_TESTS_PASS:
        if (!tests) {
            note_missing(note, note_len, "the test count");
            v.known = REIN__UNKNOWN;
            return v;
        }
        v.num = (double)(e->var == V_PASSED    ? c->passed
                         : e->var == V_FAILED  ? c->failed
                         : e->var == V_SKIPPED ? c->skipped
                                               : c->total);
        v.b = c->failed == 0 && c->total > 0;
        return v;
    case V_ERRORS:
    case V_WARNINGS:
        if (!diags) {
            note_missing(note, note_len, "the diagnostic count");
            v.known = REIN__UNKNOWN;
            return v;
        }
        v.num = (double)(e->var == V_ERRORS ? c->errors : c->warnings);
        return v;
    case V_COVERAGE:
        if (!c || !c->has_coverage) {
            note_missing(note, note_len, "the coverage");
            v.known = REIN__UNKNOWN;
            return v;
        }
        v.num = c->coverage;
        return v;
    }
    v.known = REIN__UNKNOWN;
    return v;
}

static struct value eval(const struct rein__expr *e, const struct rein__expr_env *env, char *note,
                         size_t note_len);

static struct value tri_value(enum rein__tri t)
{
    struct value v = {.known = t == REIN__UNKNOWN ? REIN__UNKNOWN : REIN__TRUE};

    v.b = t == REIN__TRUE;
    return v;
}

static enum rein__tri as_tri(struct value v)
{
    if (v.known == REIN__UNKNOWN)
        return REIN__UNKNOWN;
    return v.b ? REIN__TRUE : REIN__FALSE;
}

static bool compare(const struct value *l, const struct value *r, enum vtype type, enum cmp_op op)
{
    int c;

    if (type == T_NUM)
        c = l->num < r->num ? -1 : l->num > r->num ? 1 : 0;
    else if (type == T_BOOL)
        c = l->b == r->b ? 0 : 1;
    else
        c = (l->slen == r->slen && (l->slen == 0 || memcmp(l->s, r->s, l->slen) == 0)) ? 0 : 1;
    switch (op) {
    case OP_EQ:
        return c == 0;
    case OP_NE:
        return c != 0;
    case OP_LT:
        return c < 0;
    case OP_LE:
        return c <= 0;
    case OP_GT:
        return c > 0;
    case OP_GE:
        return c >= 0;
    }
    return false;
}

static enum rein__tri eval_match(const struct rein__expr *e, const struct value *l)
{
    pcre2_general_context *g;
    pcre2_match_data *md;
    int rc;

    if (e->kind == N_CONTAINS) {
        size_t n = strlen(e->b2->str);
        return (n == 0 || (l->slen >= n && memmem(l->s, l->slen, e->b2->str, n))) ? REIN__TRUE
                                                                                  : REIN__FALSE;
    }
    g = pcre2_general_context_create(pcre_alloc, pcre_free, NULL);
    md = g ? pcre2_match_data_create_from_pattern(e->re, g) : NULL;
    if (!md) {
        pcre2_general_context_free(g);
        return REIN__UNKNOWN;
    }
    rc = pcre2_match(e->re, (PCRE2_SPTR)l->s, l->slen, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    pcre2_general_context_free(g);
    return rc >= 0 ? REIN__TRUE : rc == PCRE2_ERROR_NOMATCH ? REIN__FALSE : REIN__UNKNOWN;
}

static struct value eval(const struct rein__expr *e, const struct rein__expr_env *env, char *note,
                         size_t note_len)
{
    struct value v = {.known = REIN__TRUE}, l, r;

    switch (e->kind) {
    case N_NUM:
        v.num = e->num;
        return v;
    case N_BOOL:
        v.b = e->b;
        return v;
    case N_STR:
        v.s = e->str;
        v.slen = strlen(e->str);
        return v;
    case N_VAR:
        return var_value(e, env, note, note_len);
    case N_NOT: {
        enum rein__tri t = as_tri(eval(e->a, env, note, note_len));
        return tri_value(t == REIN__UNKNOWN ? t : t == REIN__TRUE ? REIN__FALSE : REIN__TRUE);
    }
    case N_AND:
    case N_OR: {
        enum rein__tri a = as_tri(eval(e->a, env, note, note_len));
        enum rein__tri b = as_tri(eval(e->b2, env, note, note_len));
        enum rein__tri decisive = e->kind == N_AND ? REIN__FALSE : REIN__TRUE;
        if (a == decisive || b == decisive)
            return tri_value(decisive);
        if (a == REIN__UNKNOWN || b == REIN__UNKNOWN)
            return tri_value(REIN__UNKNOWN);
        return tri_value(e->kind == N_AND ? REIN__TRUE : REIN__FALSE);
    }
    case N_CMP:
    case N_CONTAINS:
    case N_MATCHES:
        l = eval(e->a, env, note, note_len);
        r = eval(e->b2, env, note, note_len);
        if (l.known == REIN__UNKNOWN || r.known == REIN__UNKNOWN)
            return tri_value(REIN__UNKNOWN);
        if (e->kind != N_CMP)
            return tri_value(eval_match(e, &l));
        return tri_value(compare(&l, &r, e->a->type, e->op) ? REIN__TRUE : REIN__FALSE);
    }
    return tri_value(REIN__UNKNOWN);
}

enum rein__tri rein__verify_expr_eval(const struct rein__expr *e, const struct rein__expr_env *env,
                                      char *note, size_t note_len)
{
    if (note && note_len)
        note[0] = '\0';
    return as_tri(eval(e, env, note, note_len));
}
