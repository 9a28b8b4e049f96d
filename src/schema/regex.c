/*
 * Patterns for "pattern", "patternProperties" and format "regex": ECMA-262 regular
 * expressions run by PCRE2 in UTF mode.
 *
 * The two dialects mostly agree; where they do not, the pattern is rewritten before PCRE2
 * sees it so the ECMA meaning holds: "\s" and "." use ECMA's sets of white space and line
 * terminators, "\v", "\0", "\uXXXX" (surrogate pairs combined) and "\u{...}" become code
 * points, "[" inside a class is literal, "$" matches only at the very end, and "\d", "\w" and
 * "\b" stay ASCII. Constructs ECMA-262 does not have ("\a", "\Z", "(?>", possessive
 * quantifiers, inline flags) are rejected rather than silently given PCRE2's meaning. A match
 * limit keeps catastrophic backtracking from hanging a validation.
 */
#include "schema/schema_int.h"

#include <string.h>

#define WS_SET                                                                                     \
    "\\t\\n\\x{0b}\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}"  \
    "\\x{3000}\\x{feff}"
#define COMPILE_OPTIONS (PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALLOW_EMPTY_CLASS)

/* Parses exactly n hex digits at s; -1 when they are not there. */
static long hex_n(const char *s, size_t left, size_t n)
{
    long v = 0;

    if (left < n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int h = rein__hex_digit(s[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

struct tr {
    struct rein_buf *out;
    bool failed;
};

static void put(struct tr *t, const char *s, size_t n)
{
    if (!t->failed && rein_buf_add(t->out, s, n))
        t->failed = true;
}

static void puts_(struct tr *t, const char *s)
{
    put(t, s, strlen(s));
}

static void put_cp(struct tr *t, long cp)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof(tmp), "\\x{%lx}", cp);

    put(t, tmp, (size_t)n);
}

/* ECMA-262 property names PCRE2 10.42 spells differently: General_Category long names and
 * the "gc=", "sc=" and "scx=" forms. */
static void property_name(struct tr *t, const char *name, size_t len)
{
    static const char *const long_names[][2] = {
        {"Letter", "L"},
        {"Cased_Letter", "L&"},
        {"Uppercase_Letter", "Lu"},
        {"Lowercase_Letter", "Ll"},
        {"Titlecase_Letter", "Lt"},
        {"Modifier_Letter", "Lm"},
        {"Other_Letter", "Lo"},
        {"Mark", "M"},
        {"Combining_Mark", "M"},
        {"Nonspacing_Mark", "Mn"},
        {"Spacing_Mark", "Mc"},
        {"Enclosing_Mark", "Me"},
        {"Number", "N"},
        {"Decimal_Number", "Nd"},
        {"digit", "Nd"},
        {"Letter_Number", "Nl"},
        {"Other_Number", "No"},
        {"Punctuation", "P"},
        {"punct", "P"},
        {"Connector_Punctuation", "Pc"},
        {"Dash_Punctuation", "Pd"},
        {"Open_Punctuation", "Ps"},
        {"Close_Punctuation", "Pe"},
        {"Initial_Punctuation", "Pi"},
        {"Final_Punctuation", "Pf"},
        {"Other_Punctuation", "Po"},
        {"Symbol", "S"},
        {"Math_Symbol", "Sm"},
        {"Currency_Symbol", "Sc"},
        {"Modifier_Symbol", "Sk"},
        {"Other_Symbol", "So"},
        {"Separator", "Z"},
        {"Space_Separator", "Zs"},
        {"Line_Separator", "Zl"},
        {"Paragraph_Separator", "Zp"},
        {"Other", "C"},
        {"Control", "Cc"},
        {"cntrl", "Cc"},
        {"Format", "Cf"},
        {"Surrogate", "Cs"},
        {"Private_Use", "Co"},
        {"Unassigned", "Cn"},
    };
    const char *eq = memchr(name, '=', len);

    if (eq) {
        /* "General_Category=Letter", "Script=Greek": PCRE2 takes the value alone. */
        len -= (size_t)(eq + 1 - name);
        name = eq + 1;
    }
    for (size_t k = 0; k < REIN_ARRAY_SIZE(long_names); k++) {
        if (strlen(long_names[k][0]) == len && memcmp(long_names[k][0], name, len) == 0) {
            puts_(t, long_names[k][1]);
            return;
        }
    }
    put(t, name, len);
}

/* Translates the escape at src[i] (a backslash); returns the bytes consumed or 0 (invalid). */
static size_t escape(struct tr *t, const char *src, size_t len, size_t i, bool in_class,
                     const char **why)
{
    char e;
    long cp;

    if (i + 1 >= len) {
        *why = "the pattern ends with a lone backslash";
        return 0;
    }
    e = src[i + 1];
    switch (e) {
    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 'n':
    case 'r':
    case 't':
    case 'f':
        put(t, src + i, 2);
        return 2;
    case 'b':
        if (in_class)
            puts_(t, "\\x{08}");
        else
            put(t, src + i, 2);
        return 2;
    case 'B':
        if (in_class)
            break;
        put(t, src + i, 2);
        return 2;
    case 'v':
        puts_(t, "\\x{0b}");
        return 2;
    case 's':
        puts_(t, in_class ? WS_SET : "[" WS_SET "]");
        return 2;
    case 'S':
        puts_(t, in_class ? "\\S" : "[^" WS_SET "]");
        return 2;
    case 'c':
        if (i + 2 < len && ((src[i + 2] >= 'a' && src[i + 2] <= 'z') ||
                            (src[i + 2] >= 'A' && src[i + 2] <= 'Z'))) {
            put_cp(t, src[i + 2] % 32);
            return 3;
        }
        break;
    case '0':
        if (i + 2 < len && src[i + 2] >= '0' && src[i + 2] <= '9')
            break;
        puts_(t, "\\x{0}");
        return 2;
    case 'x':
        cp = hex_n(src + i + 2, len - i - 2, 2);
        if (cp < 0)
            break;
        put_cp(t, cp);
        return 4;
    case 'u':
        if (i + 2 < len && src[i + 2] == '{') {
            size_t j = i + 3;
            cp = 0;
            while (j < len && rein__hex_digit(src[j]) >= 0 && cp <= 0x10FFFF)
                cp = cp * 16 + rein__hex_digit(src[j++]);
            if (j == i + 3 || j >= len || src[j] != '}' || cp > 0x10FFFF)
                break;
            put_cp(t, cp);
            return j + 1 - i;
        }
        cp = hex_n(src + i + 2, len - i - 2, 4);
        if (cp < 0)
            break;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 12 <= len && src[i + 6] == '\\' &&
            src[i + 7] == 'u') {
            long lo = hex_n(src + i + 8, len - i - 8, 4);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                put_cp(t, 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00));
                return 12;
            }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            /* A lone surrogate cannot occur in UTF-8 text: it matches nothing. */
            puts_(t, in_class ? "" : "(?!)");
            return 6;
        }
        put_cp(t, cp);
        return 6;
    case 'k':
        if (i + 2 < len && src[i + 2] == '<') {
            const char *end = memchr(src + i + 3, '>', len - i - 3);
            if (!end)
                break;
            put(t, src + i, (size_t)(end - (src + i)) + 1);
            return (size_t)(end - (src + i)) + 1;
        }
        break;
    case 'p':
    case 'P':
        if (i + 2 < len && src[i + 2] == '{') {
            const char *end = memchr(src + i + 3, '}', len - i - 3);
            if (!end)
                break;
            put(t, src + i, 3);
            property_name(t, src + i + 3, (size_t)(end - (src + i + 3)));
            put(t, "}", 1);
            return (size_t)(end - (src + i)) + 1;
        }
        break;
    default:
        if (e >= '1' && e <= '9' && !in_class) {
            size_t j = i + 1;
            while (j < len && src[j] >= '0' && src[j] <= '9')
                j++;
            puts_(t, "\\g{");
            put(t, src + i + 1, j - i - 1);
            puts_(t, "}");
            return j - i;
        }
        if (!is_alnum(e) && (unsigned char)e < 0x80) {
            /* An identity escape of a syntax character. */
            put(t, src + i, 2);
            return 2;
        }
        if (e == '-' && in_class) {
            put(t, src + i, 2);
            return 2;
        }
        break;
    }
    *why = "invalid escape sequence";
    return 0;
}

bool rein__regex_translate(const char *src, size_t len, struct rein_buf *out, const char **why)
{
    struct tr t = {out, false};
    bool in_class = false, after_quant = false;
    size_t i = 0;

    *why = NULL;
    while (i < len) {
        char c = src[i];
        bool quant = false;
        if (c == '\\') {
            size_t n = escape(&t, src, len, i, in_class, why);
            if (!n)
                return false;
            i += n;
        } else if (in_class) {
            if (c == ']')
                in_class = false;
            if (c == '[')
                puts_(&t, "\\[");
            else
                put(&t, &c, 1);
            i++;
        } else if (c == '[') {
            in_class = true;
            put(&t, &c, 1);
            i++;
            if (i < len && src[i] == '^')
                put(&t, src + i++, 1);
            if (i < len && src[i] == ']') {
                /* "[]" and "[^]": an empty class, complete as it stands. */
                put(&t, src + i++, 1);
                in_class = false;
            }
        } else if (c == '.') {
            puts_(&t, "[^\\n\\r\\x{2028}\\x{2029}]");
            i++;
        } else if (c == '(' && i + 1 < len && src[i + 1] == '?') {
            const char *r = src + i + 2;
            size_t left = len - i - 2;
            if (!(left >= 1 && (r[0] == ':' || r[0] == '=' || r[0] == '!')) &&
                !(left >= 2 && r[0] == '<' && (r[1] == '=' || r[1] == '!')) &&
                !(left >= 2 && r[0] == '<' && memchr(r, '>', left))) {
                *why = "unsupported group syntax \"(?\"";
                return false;
            }
            put(&t, src + i, 2);
            i += 2;
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (after_quant && c != '?') {
                *why = "nothing to repeat";
                return false;
            }
            if (c == '{') {
                size_t j = i + 1;
                while (j < len && ((src[j] >= '0' && src[j] <= '9') || src[j] == ','))
                    j++;
                quant = j < len && src[j] == '}' && j > i + 1 && src[i + 1] != ',';
                if (quant) {
                    put(&t, src + i, j + 1 - i);
                    i = j + 1;
                } else {
                    /* A literal brace, as in Annex B. */
                    puts_(&t, "\\{");
                    i++;
                }
            } else {
                quant = !(c == '?' && after_quant);
                put(&t, &c, 1);
                i++;
            }
        } else {
            put(&t, &c, 1);
            i++;
        }
        after_quant = quant;
    }
    if (in_class) {
        *why = "missing terminating ] for character class";
        return false;
    }
    if (t.failed) {
        *why = "out of memory";
        return false;
    }
    return true;
}

static void register_regex(rein_schema *schema, struct sregex *re, bool *failed)
{
    if (schema->nregexes == schema->regexes_cap) {
        size_t ncap = schema->regexes_cap ? schema->regexes_cap * 2 : 8;
        struct sregex **nr = rein_realloc(schema->regexes, ncap * sizeof(struct sregex *));
        if (!nr) {
            *failed = true;
            return;
        }
        schema->regexes = nr;
        schema->regexes_cap = ncap;
    }
    schema->regexes[schema->nregexes++] = re;
}

rein_err rein__regex_compile(rein_schema *schema, const char *pattern, size_t len,
                             struct sregex *re, rein_error *err)
{
    struct rein_buf tr;
    const char *why;
    int errcode;
    PCRE2_SIZE erroff;
    bool failed = false;

    rein_buf_init(&tr, 0);
    re->source = pattern;
    re->code = NULL;
    if (!rein__regex_translate(pattern, len, &tr, &why)) {
        rein_buf_release(&tr);
        if (strcmp(why, "out of memory") == 0)
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
        return rein_error_set(err, REIN_ESCHEMA, "%s", why);
    }
    re->code =
        pcre2_compile((PCRE2_SPTR)tr.ptr, tr.len, COMPILE_OPTIONS, &errcode, &erroff, schema->cctx);
    rein_buf_release(&tr);
    if (!re->code) {
        PCRE2_UCHAR msg[160];
        if (errcode == PCRE2_ERROR_HEAPLIMIT || errcode == PCRE2_ERROR_NOMEMORY)
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        return rein_error_set(err, REIN_ESCHEMA, "%s", (const char *)msg);
    }
    register_regex(schema, re, &failed);
    if (failed) {
        pcre2_code_free(re->code);
        re->code = NULL;
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    /* JIT makes matching several times faster; without it (or on failure) PCRE2 interprets. */
    (void)pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
    schema->uses_regex = true;
    return REIN_OK;
}

int rein__regex_search(const struct sregex *re, const char *s, size_t len, pcre2_match_data *md,
                       pcre2_match_context *mctx)
{
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, md, mctx);

    if (rc >= 0)
        return 1;
    switch (rc) {
    case PCRE2_ERROR_NOMATCH:
        return 0;
    case PCRE2_ERROR_MATCHLIMIT:
    case PCRE2_ERROR_DEPTHLIMIT:
    case PCRE2_ERROR_HEAPLIMIT:
    case PCRE2_ERROR_JIT_STACKLIMIT:
    case PCRE2_ERROR_NOMEMORY:
        return REIN_ETOOBIG;
    default:
        return REIN_EINVAL;
    }
}

bool rein__regex_is_valid(const char *s, size_t len)
{
    struct rein_buf tr;
    const char *why;
    int errcode;
    PCRE2_SIZE erroff;
    pcre2_code *code;

    rein_buf_init(&tr, 0);
    if (!rein__regex_translate(s, len, &tr, &why)) {
        rein_buf_release(&tr);
        return false;
    }
    code = pcre2_compile((PCRE2_SPTR)tr.ptr, tr.len, COMPILE_OPTIONS, &errcode, &erroff, NULL);
    rein_buf_release(&tr);
    pcre2_code_free(code);
    return code != NULL;
}
