/*
 * The calculator skill: statistics over a list of numbers, and arithmetic expressions read by
 * a small recursive-descent parser (never an eval), so a model gets the exact position of what
 * it got wrong.
 *
 * Grammar (whitespace between tokens is ignored):
 *   expr    := term (("+" | "-") term)*
 *   term    := unary (("*" | "/" | "%") unary)*
 *   unary   := ("+" | "-") unary | power
 *   power   := primary (("^" | "**") unary)?          right-associative; -2^2 = -4
 *   primary := number | "(" expr ")" | name | name "(" expr ("," expr)* ")"
 * Names: pi, e; functions sqrt abs exp ln log log10 log2 sin cos tan asin acos atan floor ceil
 * round trunc, and min max hypot pow with several arguments.
 */
#include "skills_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 100
#define MAX_ARGS  64

struct parser {
    const char *s;
    size_t len, pos;
    int depth;
    struct rein__skills_calc_error *e;
};

static bool failf(struct parser *p, enum rein__skills_calc_fail kind, size_t pos, const char *fmt,
                  ...) REIN_PRINTF(4, 5);

static bool failf(struct parser *p, enum rein__skills_calc_fail kind, size_t pos, const char *fmt,
                  ...)
{
    va_list ap;

    if (p->e->kind)
        return false; /* the first problem is the one reported */
    p->e->kind = kind;
    p->e->position = pos + 1;
    va_start(ap, fmt);
    vsnprintf(p->e->msg, sizeof(p->e->msg), fmt, ap);
    va_end(ap);
    return false;
}

static void skip_space(struct parser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                               p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static bool peek(struct parser *p, char c)
{
    skip_space(p);
    return p->pos < p->len && p->s[p->pos] == c;
}

/* Describes the token at pos for messages ("'@'", "the end"). */
static const char *describe(struct parser *p, char *buf, size_t size)
{
    if (p->pos >= p->len)
        return "the end of the expression";
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, size, "'%c'", c);
    else
        snprintf(buf, size, "byte 0x%02x", c);
    return buf;
}

static bool check(struct parser *p, double v, size_t pos)
{
    if (isfinite(v))
        return true;
    return failf(p, REIN__SKILLS_CALC_MATH, pos, "the result at position %zu is %s", pos + 1,
                 isnan(v) ? "not a number" : "too large");
}

static bool parse_expr(struct parser *p, double *out);

static bool parse_number(struct parser *p, double *out)
{
    char buf[128];
    size_t start = p->pos, n = 0;
    char *end;

    while (p->pos < p->len && n + 1 < sizeof(buf)) {
        char c = p->s[p->pos];
        bool exp_sign = (c == '+' || c == '-') && n > 0 && (buf[n - 1] == 'e' || buf[n - 1] == 'E');
        if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || exp_sign))
            break;
        buf[n++] = c;
        p->pos++;
    }
    buf[n] = '\0';
    *out = strtod(buf, &end);
    if (n == 0 || *end != '\0')
        return failf(p, REIN__SKILLS_CALC_SYNTAX, start, "malformed number \"%s\" at position %zu",
                     buf, start + 1);
    return check(p, *out, start);
}

struct fn {
    const char *name;
    int arity; /* -1: one or more */
};

static const struct fn functions[] = {
    {"sqrt", 1}, {"abs", 1},   {"exp", 1},   {"ln", 1},   {"log", 1},  {"log10", 1},  {"log2", 1},
    {"sin", 1},  {"cos", 1},   {"tan", 1},   {"asin", 1}, {"acos", 1}, {"atan", 1},   {"floor", 1},
    {"ceil", 1}, {"round", 1}, {"trunc", 1}, {"min", -1}, {"max", -1}, {"hypot", -1}, {"pow", 2},
};

static bool apply(struct parser *p, const char *name, const double *a, int n, size_t pos,
                  double *out)
{
    double x = a[0];

    if ((strcmp(name, "sqrt") == 0 && x < 0) ||
        ((strcmp(name, "ln") == 0 || strncmp(name, "log", 3) == 0) && x <= 0) ||
        ((strcmp(name, "asin") == 0 || strcmp(name, "acos") == 0) && (x < -1 || x > 1)))
        return failf(p, REIN__SKILLS_CALC_MATH, pos, "%s(%g) is undefined (position %zu)", name, x,
                     pos + 1);
    if (strcmp(name, "sqrt") == 0)
        *out = sqrt(x);
    else if (strcmp(name, "abs") == 0)
        *out = fabs(x);
    else if (strcmp(name, "exp") == 0)
        *out = exp(x);
    else if (strcmp(name, "ln") == 0 || strcmp(name, "log") == 0)
        *out = log(x);
    else if (strcmp(name, "log10") == 0)
        *out = log10(x);
    else if (strcmp(name, "log2") == 0)
        *out = log2(x);
    else if (strcmp(name, "sin") == 0)
        *out = sin(x);
    else if (strcmp(name, "cos") == 0)
        *out = cos(x);
    else if (strcmp(name, "tan") == 0)
        *out = tan(x);
    else if (strcmp(name, "asin") == 0)
        *out = asin(x);
    else if (strcmp(name, "acos") == 0)
        *out = acos(x);
    else if (strcmp(name, "atan") == 0)
        *out = atan(x);
    else if (strcmp(name, "floor") == 0)
        *out = floor(x);
    else if (strcmp(name, "ceil") == 0)
        *out = ceil(x);
    else if (strcmp(name, "round") == 0)
        *out = round(x);
    else if (strcmp(name, "trunc") == 0)
        *out = trunc(x);
    else if (strcmp(name, "pow") == 0)
        *out = pow(a[0], a[1]);
    else {
        /* min, max, hypot over every argument */
        *out = x;
        for (int i = 1; i < n; i++) {
            if (strcmp(name, "min") == 0)
                *out = a[i] < *out ? a[i] : *out;
            else if (strcmp(name, "max") == 0)
                *out = a[i] > *out ? a[i] : *out;
            else
                *out = hypot(*out, a[i]);
        }
        if (strcmp(name, "hypot") == 0 && n == 1)
            *out = fabs(x);
    }
    return check(p, *out, pos);
}

static bool parse_call(struct parser *p, const struct fn *f, size_t pos, double *out)
{
    double args[MAX_ARGS] = {0};
    int n = 0;

    p->pos++; /* "(" */
    for (;;) {
        if (n == MAX_ARGS)
            return failf(p, REIN__SKILLS_CALC_SYNTAX, p->pos, "%s takes at most %d arguments",
                         f->name, MAX_ARGS);
        if (!parse_expr(p, &args[n++]))
            return false;
        if (peek(p, ',')) {
            p->pos++;
            continue;
        }
        if (peek(p, ')')) {
            p->pos++;
            break;
        }
        char d[32];
        return failf(p, REIN__SKILLS_CALC_SYNTAX, p->pos,
                     "expected ',' or ')' at position %zu, found %s", p->pos + 1,
                     describe(p, d, sizeof(d)));
    }
    if (f->arity >= 0 && n != f->arity)
        return failf(p, REIN__SKILLS_CALC_SYNTAX, pos,
                     "%s takes %d argument%s, got %d (position %zu)", f->name, f->arity,
                     f->arity == 1 ? "" : "s", n, pos + 1);
    return apply(p, f->name, args, n, pos, out);
}

static bool parse_name(struct parser *p, double *out)
{
    size_t start = p->pos;
    char name[32];
    size_t n;

    while (p->pos < p->len && ((p->s[p->pos] >= 'a' && p->s[p->pos] <= 'z') ||
                               (p->s[p->pos] >= 'A' && p->s[p->pos] <= 'Z') ||
                               (p->s[p->pos] >= '0' && p->s[p->pos] <= '9') || p->s[p->pos] == '_'))
        p->pos++;
    n = p->pos - start;
    if (n >= sizeof(name))
        return failf(p, REIN__SKILLS_CALC_SYNTAX, start, "unknown name at position %zu", start + 1);
    memcpy(name, p->s + start, n);
    name[n] = '\0';
    for (size_t i = 0; i < n; i++)
        name[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    if (peek(p, '(')) {
        for (size_t i = 0; i < REIN_ARRAY_SIZE(functions); i++) {
            if (strcmp(functions[i].name, name) == 0)
                return parse_call(p, &functions[i], start, out);
        }
        return failf(p, REIN__SKILLS_CALC_SYNTAX, start, "unknown function \"%s\" at position %zu",
                     name, start + 1);
    }
    if (strcmp(name, "pi") == 0) {
        *out = M_PI;
        return true;
    }
    if (strcmp(name, "e") == 0) {
        *out = M_E;
        return true;
    }
    return failf(p, REIN__SKILLS_CALC_SYNTAX, start,
                 "unknown name \"%s\" at position %zu (only numbers, pi, e and functions)", name,
                 start + 1);
}

static bool parse_primary(struct parser *p, double *out)
{
    char d[32];

    *out = 0;
    skip_space(p);
    if (p->pos >= p->len)
        return failf(p, REIN__SKILLS_CALC_SYNTAX, p->pos,
                     "the expression ends where a number was expected (position %zu)", p->pos + 1);
    char c = p->s[p->pos];
    if ((c >= '0' && c <= '9') || c == '.')
        return parse_number(p, out);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
        return parse_name(p, out);
    if (c == '(') {
        size_t open = p->pos++;
        if (++p->depth > MAX_DEPTH)
            return failf(p, REIN__SKILLS_CALC_SYNTAX, open,
                         "the expression nests more than %d deep", MAX_DEPTH);
        if (!parse_expr(p, out))
            return false;
        p->depth--;
        if (!peek(p, ')'))
            return failf(p, REIN__SKILLS_CALC_SYNTAX, p->pos,
                         "expected ')' at position %zu to close '(' at position %zu, found %s",
                         p->pos + 1, open + 1, describe(p, d, sizeof(d)));
        p->pos++;
        return true;
    }
    return failf(p, REIN__SKILLS_CALC_SYNTAX, p->pos, "unexpected %s at position %zu",
                 describe(p, d, sizeof(d)), p->pos + 1);
}

static bool parse_unary(struct parser *p, double *out);

static bool parse_power(struct parser *p, double *out)
{
    double exponent = 0;
    size_t op;

    if (!parse_primary(p, out))
        return false;
    skip_space(p);
    op = p->pos;
    if (peek(p, '^'))
        p->pos++;
    else if (p->pos + 1 < p->len && p->s[p->pos] == '*' && p->s[p->pos + 1] == '*')
        p->pos += 2;
    else
        return true;
    if (++p->depth > MAX_DEPTH)
        return failf(p, REIN__SKILLS_CALC_SYNTAX, op, "the expression nests more than %d deep",
                     MAX_DEPTH);
    if (!parse_unary(p, &exponent))
        return false;
    p->depth--;
    if (*out == 0 && exponent < 0)
        return failf(p, REIN__SKILLS_CALC_MATH, op,
                     "division by zero: 0 to a negative power at position %zu", op + 1);
    if (*out < 0 && exponent != floor(exponent))
        return failf(p, REIN__SKILLS_CALC_MATH, op,
                     "a negative number to a fractional power is not real (position %zu)", op + 1);
    *out = pow(*out, exponent);
    return check(p, *out, op);
}

static bool parse_unary(struct parser *p, double *out)
{
    if (peek(p, '-') || peek(p, '+')) {
        bool neg = p->s[p->pos] == '-';
        size_t at = p->pos++;
        if (++p->depth > MAX_DEPTH)
            return failf(p, REIN__SKILLS_CALC_SYNTAX, at, "the expression nests more than %d deep",
                         MAX_DEPTH);
        if (!parse_unary(p, out))
            return false;
        p->depth--;
        if (neg)
            *out = -*out;
        return true;
    }
    return parse_power(p, out);
}

static bool parse_term(struct parser *p, double *out)
{
    if (!parse_unary(p, out))
        return false;
    for (;;) {
        double rhs = 0;
        skip_space(p);
        if (p->pos >= p->len)
            return true;
        char op = p->s[p->pos];
        size_t at = p->pos;
        /* "**" is power, handled below the term level. */
        if (!(op == '*' || op == '/' || op == '%') ||
            (op == '*' && at + 1 < p->len && p->s[at + 1] == '*'))
            return true;
        p->pos++;
        if (!parse_unary(p, &rhs))
            return false;
        if ((op == '/' || op == '%') && rhs == 0)
            return failf(p, REIN__SKILLS_CALC_MATH, at, "division by zero at position %zu", at + 1);
        *out = op == '*' ? *out * rhs : op == '/' ? *out / rhs : fmod(*out, rhs);
        if (!check(p, *out, at))
            return false;
    }
}

static bool parse_expr(struct parser *p, double *out)
{
    if (++p->depth > MAX_DEPTH)
        return failf(p, REIN__SKILLS_CALC_SYNTAX, p->pos, "the expression nests more than %d deep",
                     MAX_DEPTH);
    if (!parse_term(p, out))
        return false;
    for (;;) {
        double rhs = 0;
        if (!(peek(p, '+') || peek(p, '-'))) {
            p->depth--;
            return true;
        }
        char op = p->s[p->pos];
        size_t at = p->pos++;
        if (!parse_term(p, &rhs))
            return false;
        *out = op == '+' ? *out + rhs : *out - rhs;
        if (!check(p, *out, at))
            return false;
    }
}

rein_err rein__skills_calc_eval(const char *expr, size_t len, double *out,
                                struct rein__skills_calc_error *e)
{
    struct parser p = {expr, len, 0, 0, e};
    char d[32];

    memset(e, 0, sizeof(*e));
    *out = 0;
    skip_space(&p);
    if (p.pos >= len) {
        failf(&p, REIN__SKILLS_CALC_SYNTAX, 0, "the expression is empty");
        return REIN_EINVALID;
    }
    if (!parse_expr(&p, out))
        return e->kind == REIN__SKILLS_CALC_MATH ? REIN_EIO : REIN_EINVALID;
    skip_space(&p);
    if (p.pos < len) {
        failf(&p, REIN__SKILLS_CALC_SYNTAX, p.pos, "unexpected %s at position %zu",
              describe(&p, d, sizeof(d)), p.pos + 1);
        return REIN_EINVALID;
    }
    if (*out == 0)
        *out = 0; /* no "-0" in results */
    return REIN_OK;
}

/* ---- the skill ---- */

static const char calculator_manifest[] =
    "{\"id\":\"calculator\","
    "\"description\":\"Compute statistics over a list of numbers ({op, values}) or evaluate an "
    "arithmetic expression ({expression}, e.g. \\\"2*(3+4)/5\\\"; + - * / % ^, parentheses, pi, "
    "e, sqrt, abs, ln, log10, sin, cos, min, max, round, ...).\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{"
    "\"op\":{\"type\":\"string\",\"enum\":[\"mean\",\"sum\",\"min\",\"max\",\"median\","
    "\"stdev\",\"count\",\"product\"],\"description\":\"The statistic to compute over values "
    "(stdev is the sample standard deviation)\"},"
    "\"values\":{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"maxItems\":1000000,"
    "\"description\":\"The numbers, with op\"},"
    "\"expression\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":10000,"
    "\"description\":\"An arithmetic expression, instead of op and values\"}},"
    "\"dependentRequired\":{\"op\":[\"values\"],\"values\":[\"op\"]},"
    "\"additionalProperties\":false},"
    "\"output_schema\":{\"type\":\"object\",\"properties\":{"
    "\"op\":{\"type\":\"string\",\"description\":\"The statistic computed (with values)\"},"
    "\"expression\":{\"type\":\"string\",\"description\":\"The expression evaluated\"},"
    "\"result\":{\"type\":\"number\"},"
    "\"count\":{\"type\":\"integer\",\"description\":\"How many values there were\"}},"
    "\"required\":[\"result\"]},"
    "\"read_only\":true,\"idempotent\":true,\"open_world\":false,\"timeout_ms\":5000,"
    "\"examples\":[{\"text\":\"what is 2*(3+4)/5?\",\"arguments\":{\"expression\":\"2*(3+4)/5\"}},"
    "{\"text\":\"the average of 3, 4 and 8\",\"arguments\":{\"op\":\"mean\",\"values\":[3,4,8]}},"
    "{\"text\":\"计算 [1,2,3,4,5] 的平均值\",\"arguments\":{\"op\":\"mean\","
    "\"values\":[1,2,3,4,5]}}]}";

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Neumaier's compensated sum: mean([0.1, 0.2, 0.3]) is 0.2, not 0.20000000000000004. */
static double sum_of(const double *v, size_t n)
{
    double s = 0, c = 0;

    for (size_t i = 0; i < n; i++) {
        double t = s + v[i];
        c += fabs(s) >= fabs(v[i]) ? (s - t) + v[i] : (v[i] - t) + s;
        s = t;
    }
    return s + c;
}

static rein_err statistic(const char *op, double *v, size_t n, double *out, rein_error *err,
                          json_t **details)
{
    if (strcmp(op, "count") == 0) {
        *out = (double)n;
        return REIN_OK;
    }
    if (strcmp(op, "sum") == 0) {
        *out = sum_of(v, n);
        return REIN_OK;
    }
    if (strcmp(op, "product") == 0) {
        *out = 1;
        for (size_t i = 0; i < n; i++)
            *out *= v[i];
        return REIN_OK;
    }
    if (n == 0 || (strcmp(op, "stdev") == 0 && n < 2)) {
        *details = json_pack("[{s:s, s:s}]", "path", "/values", "message",
                             n == 0 ? "is empty" : "has one value; stdev needs at least two");
        return rein_error_set(err, REIN_EINVALID, "%s of %s is undefined; give at least %d value%s",
                              op, n == 0 ? "an empty list" : "one value", n == 0 ? 1 : 2,
                              n == 0 ? "" : "s");
    }
    if (strcmp(op, "mean") == 0) {
        *out = sum_of(v, n) / (double)n;
    } else if (strcmp(op, "min") == 0 || strcmp(op, "max") == 0) {
        bool min = op[1] == 'i';
        *out = v[0];
        for (size_t i = 1; i < n; i++)
            *out = (min ? v[i] < *out : v[i] > *out) ? v[i] : *out;
    } else if (strcmp(op, "median") == 0) {
        qsort(v, n, sizeof(*v), cmp_double);
        *out = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    } else { /* stdev: two passes, sample (n - 1) */
        double mean = sum_of(v, n) / (double)n, ss = 0, c = 0;
        for (size_t i = 0; i < n; i++) {
            double d = v[i] - mean, y = d * d - c, t = ss + y;
            c = (t - ss) - y;
            ss = t;
        }
        *out = sqrt(ss / (double)(n - 1));
    }
    return REIN_OK;
}

static rein_err run_stats(const struct rein_invocation *inv, struct rein_tool_reply *reply,
                          rein_error *err)
{
    const char *op = json_string_value(json_object_get(inv->args, "op"));
    json_t *values = json_object_get(inv->args, "values"), *item;
    size_t n = json_array_size(values), i;
    double *v = rein_calloc(n ? n : 1, sizeof(*v)), result;
    rein_err rc;

    if (!v)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    json_array_foreach(values, i, item) v[i] = json_number_value(item);
    rc = statistic(op, v, n, &result, err, &reply->details);
    rein_free(v);
    if (rc)
        return rc;
    if (!isfinite(result))
        return rein_error_set(err, REIN_EIO, "the %s of these values is too large to represent",
                              op);
    reply->output = json_pack("{s:s, s:o, s:I}", "op", op, "result",
                              rein__skills_json_number(result), "count", (json_int_t)n);
    return reply->output ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
}

static rein_err calculator_run(void *userdata, const struct rein_invocation *inv,
                               struct rein_tool_reply *reply, rein_error *err)
{
    json_t *expr = json_object_get(inv->args, "expression");
    struct rein__skills_calc_error ce;
    double result;
    rein_err rc;

    (void)userdata;
    if (expr && json_object_get(inv->args, "op"))
        return rein_error_set(err, REIN_EINVALID,
                              "give either expression, or op with values, not both");
    if (!expr && !json_object_get(inv->args, "op")) {
        reply->details =
            json_pack("[{s:s, s:s}]", "path", "", "message", "needs expression, or op and values");
        return rein_error_set(err, REIN_EINVALID,
                              "give an expression (\"2*(3+4)/5\") or op and values "
                              "({\"op\": \"mean\", \"values\": [1, 2, 3]})");
    }
    if (!expr)
        return run_stats(inv, reply, err);
    rc = rein__skills_calc_eval(json_string_value(expr), json_string_length(expr), &result, &ce);
    if (rc) {
        reply->details = json_pack("[{s:s, s:s}]", "path", "/expression", "message", ce.msg);
        return rein_error_set(err, rc, "%s", ce.msg);
    }
    reply->output =
        json_pack("{s:O, s:o}", "expression", expr, "result", rein__skills_json_number(result));
    return reply->output ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
}

rein_err rein__skills_calculator_register(rein_registry *reg, rein_error *err)
{
    return rein__skills_register(reg, calculator_manifest, calculator_run, NULL, NULL, err);
}
