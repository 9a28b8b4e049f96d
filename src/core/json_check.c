/*
 * Checking JSON text without reading it into a tree (rein_json_check in include/rein/json.h).
 *
 * Texts that rein keeps as they are (a ledger entry's arguments and result, an event's
 * payload, a conversation's metadata) only need to be known good before they are stored; a
 * jansson tree built for that and thrown away would cost an allocation per member. This is a
 * recursive-descent recognizer of exactly the texts rein_json_parse() accepts (jansson 2.14
 * with JSON_DECODE_ANY and JSON_ALLOW_NUL): RFC 8259, strings of valid UTF-8 without control
 * characters, escapes with surrogates in pairs, no "\u0000" in object keys, integers that fit
 * in 64 bits, reals that do not overflow, at most JSON_PARSER_MAX_DEPTH nested values. One
 * difference, on the safe side: jansson skips a NUL byte right after a number or a literal
 * (an artefact of how it puts a byte back), which this check refuses like any other stray
 * byte. fuzz/json_check.c holds it to jansson's answer on every input.
 */
#include "core/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Invariants: start <= p <= end; depth counts the values being read, as jansson does. */
struct jc {
    const unsigned char *start, *p, *end;
    int depth;
    const char *why; /* the first problem, static */
};

static bool fail(struct jc *c, const char *why)
{
    if (!c->why)
        c->why = why;
    return false;
}

static void skip_ws(struct jc *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool literal(struct jc *c, const char *word)
{
    size_t n = strlen(word);

    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return fail(c, "invalid token");
    c->p += n;
    return true;
}

/* Reads the four hex digits of a \u escape at c->p; -1 when they are not four hex digits. */
static long hex4(struct jc *c)
{
    long v = 0;

    if (c->end - c->p < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        int d = rein__hex_digit((char)c->p[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    c->p += 4;
    return v;
}

/* One UTF-8 character starting at c->p (a byte >= 0x80): shortest form, no surrogates, at most
 * U+10FFFF. */
static bool utf8_char(struct jc *c)
{
    const unsigned char *s = c->p;
    unsigned char b = s[0];
    size_t n = b >= 0xC2 && b <= 0xDF   ? 2
               : b >= 0xE0 && b <= 0xEF ? 3
               : b >= 0xF0 && b <= 0xF4 ? 4
                                        : 0;
    long cp;

    if (n == 0 || (size_t)(c->end - s) < n)
        return fail(c, "invalid UTF-8");
    cp = b & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return fail(c, "invalid UTF-8");
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return fail(c, "invalid UTF-8");
    c->p += n;
    return true;
}

/* A \u escape after the backslash and 'u'; *nul is set when it is U+0000. */
static bool unicode_escape(struct jc *c, bool *nul)
{
    long v = hex4(c);

    if (v < 0)
        return fail(c, "invalid escape");
    if (v >= 0xDC00 && v <= 0xDFFF)
        return fail(c, "invalid Unicode: a lone low surrogate");
    if (v >= 0xD800 && v <= 0xDBFF) {
        long low;
        if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u')
            return fail(c, "invalid Unicode: a high surrogate without its low one");
        c->p += 2;
        low = hex4(c);
        if (low < 0)
            return fail(c, "invalid escape");
        if (low < 0xDC00 || low > 0xDFFF)
            return fail(c, "invalid Unicode: a high surrogate without its low one");
    }
    if (v == 0)
        *nul = true;
    return true;
}

/* A string, c->p at the opening quote. *nul (may be NULL) is set when it holds U+0000. */
static bool string(struct jc *c, bool *nul)
{
    bool has_nul = false;

    c->p++;
    while (c->p < c->end) {
        unsigned char ch;
        /* Most of a string is bytes that need no look: eight at a time while they last (a
         * long text), then one at a time up to the next byte that does (a short one's end). */
        while (c->end - c->p >= 8 && rein__json_plain8(c->p))
            c->p += 8;
        while (c->p < c->end && *c->p >= 0x20 && *c->p < 0x80 && *c->p != '"' && *c->p != '\\')
            c->p++;
        if (c->p >= c->end)
            break;
        ch = *c->p;
        if (ch == '"') {
            c->p++;
            if (nul)
                *nul = has_nul;
            return true;
        }
        if (ch < 0x20)
            return fail(c, "control character in a string");
        if (ch >= 0x80) {
            if (!utf8_char(c))
                return false;
            continue;
        }
        c->p++;
        if (ch != '\\')
            continue;
        if (c->p >= c->end)
            break;
        ch = *c->p++;
        if (ch == 'u') {
            if (!unicode_escape(c, &has_nul))
                return false;
        } else if (!strchr("\"\\/bfnrt", ch) || ch == '\0') {
            return fail(c, "invalid escape");
        }
    }
    return fail(c, "premature end of input in a string");
}

static bool digits(struct jc *c)
{
    const unsigned char *from = c->p;

    while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
        c->p++;
    return c->p > from;
}

/* Converts the number text [from, to) as jansson does: integers must fit in 64 bits, reals
 * must not overflow (they may underflow to 0). int_digits counts the digits before any '.' or
 * exponent, exp_digits those of the exponent (0: none). Most numbers are decided by their
 * digits alone: an integer of 18 digits fits in 64 bits, and a real below 10^300 without an
 * exponent past two digits cannot overflow; only the others are converted. */
static bool number_value(struct jc *c, const unsigned char *from, bool is_int, size_t int_digits,
                         size_t exp_digits)
{
    size_t n = (size_t)(c->p - from);
    char small[64], *text;
    bool ok;

    if (is_int ? int_digits <= 18 : int_digits <= 200 && exp_digits <= 2)
        return true;
    text = n < sizeof(small) ? small : malloc(n + 1);
    if (!text)
        return fail(c, "out of memory");
    memcpy(text, from, n);
    text[n] = '\0';
    errno = 0;
    if (is_int) {
        (void)strtoll(text, NULL, 10);
        ok = errno != ERANGE;
    } else {
        double d = strtod(text, NULL);
        ok = !(errno == ERANGE && (d > 1.0 || d < -1.0));
    }
    if (text != small)
        free(text);
    return ok ? true : fail(c, is_int ? "too big integer" : "real number overflow");
}

static bool number(struct jc *c)
{
    const unsigned char *from = c->p, *int_from;
    size_t int_digits, exp_digits = 0;
    bool is_int = true;

    if (*c->p == '-')
        c->p++;
    int_from = c->p;
    if (c->p < c->end && *c->p == '0')
        c->p++;
    else if (!digits(c))
        return fail(c, "invalid token");
    int_digits = (size_t)(c->p - int_from);
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        is_int = false;
        if (!digits(c))
            return fail(c, "invalid token");
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        is_int = false;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
            c->p++;
        int_from = c->p;
        if (!digits(c))
            return fail(c, "invalid token");
        exp_digits = (size_t)(c->p - int_from);
    }
    return number_value(c, from, is_int, int_digits, exp_digits);
}

static bool value(struct jc *c);

static bool array(struct jc *c)
{
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        return true;
    }
    for (;;) {
        if (!value(c))
            return false;
        skip_ws(c);
        if (c->p >= c->end)
            return fail(c, "premature end of input in an array");
        if (*c->p == ']') {
            c->p++;
            return true;
        }
        if (*c->p++ != ',')
            return fail(c, "',' or ']' expected");
        skip_ws(c);
    }
}

static bool object(struct jc *c)
{
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return true;
    }
    for (;;) {
        bool nul = false;
        if (c->p >= c->end || *c->p != '"')
            return fail(c, "string or '}' expected");
        if (!string(c, &nul))
            return false;
        if (nul)
            return fail(c, "NUL byte in an object key");
        skip_ws(c);
        if (c->p >= c->end || *c->p++ != ':')
            return fail(c, "':' expected");
        skip_ws(c);
        if (!value(c))
            return false;
        skip_ws(c);
        if (c->p >= c->end)
            return fail(c, "premature end of input in an object");
        if (*c->p == '}') {
            c->p++;
            return true;
        }
        if (*c->p++ != ',')
            return fail(c, "',' or '}' expected");
        skip_ws(c);
    }
}

/* One value at c->p (whitespace before it already skipped). */
static bool value(struct jc *c)
{
    bool ok;

    if (++c->depth > JSON_PARSER_MAX_DEPTH)
        return fail(c, "maximum parsing depth reached");
    if (c->p >= c->end)
        return fail(c, "premature end of input");
    switch (*c->p) {
    case '{':
        ok = object(c);
        break;
    case '[':
        ok = array(c);
        break;
    case '"':
        ok = string(c, NULL);
        break;
    case 't':
        ok = literal(c, "true");
        break;
    case 'f':
        ok = literal(c, "false");
        break;
    case 'n':
        ok = literal(c, "null");
        break;
    default:
        ok = *c->p == '-' || (*c->p >= '0' && *c->p <= '9') ? number(c) : fail(c, "invalid token");
        break;
    }
    c->depth--;
    return ok;
}

rein_err rein_json_check(const char *text, size_t len, rein_error *err)
{
    struct jc c = {(const unsigned char *)text, (const unsigned char *)text,
                   (const unsigned char *)text, 0, NULL};
    int line = 1, column = 0;
    rein_err code;

    if (text) {
        c.end += len;
        skip_ws(&c);
        if (value(&c)) {
            skip_ws(&c);
            if (c.p == c.end)
                return REIN_OK;
            fail(&c, "end of input expected");
        }
    } else {
        fail(&c, "no text");
    }
    for (const unsigned char *q = c.start; q < c.p && q < c.end; q++) {
        if (*q == '\n') {
            line++;
            column = 0;
        } else {
            column++;
        }
    }
    code = strcmp(c.why, "out of memory") == 0 ? REIN_ENOMEM : REIN_EPARSE;
    rein_error_set(err, code, "%s at line %d, column %d", c.why, line, column + 1);
    if (err) {
        err->line = line;
        err->column = column + 1;
        err->detail = (int)(c.p - c.start);
    }
    return code;
}
