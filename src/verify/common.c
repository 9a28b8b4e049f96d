/*
 * Small pieces the rest of src/verify/ stands on: the names of the public enums, confidence
 * propagation, SHA-256 (written from FIPS 180-4; used for tree hashes, state hashes and
 * failure signatures, where two different states must not collide by accident), and text
 * helpers that clean command output (ANSI colours, carriage returns) and cut its tail.
 */
#include "verify_int.h"

#include <math.h>
#include <string.h>

#define NAME(id, name) name,
static const char *const priority_names[] = {REIN_VERIFY_PRIORITY_MAP(NAME)};
static const char *const mode_names[] = {REIN_VERIFY_MODE_MAP(NAME)};
static const char *const status_names[] = {REIN_VERIFY_STATUS_MAP(NAME)};
static const char *const verdict_names[] = {REIN_VERIFY_VERDICT_MAP(NAME)};
static const char *const format_names[] = {REIN_VERIFY_FORMAT_MAP(NAME)};
#undef NAME

const char *rein_verify_priority_name(enum rein_verify_priority p)
{
    return (unsigned)p < REIN_ARRAY_SIZE(priority_names) ? priority_names[p] : "P?";
}

const char *rein_verify_mode_name(enum rein_verify_mode m)
{
    return (unsigned)m < REIN_ARRAY_SIZE(mode_names) ? mode_names[m] : "unknown";
}

bool rein_verify_mode_parse(const char *text, enum rein_verify_mode *out)
{
    for (size_t i = 1; text && i < REIN_ARRAY_SIZE(mode_names); i++) {
        if (strcmp(text, mode_names[i]) == 0) {
            *out = (enum rein_verify_mode)i;
            return true;
        }
    }
    return false;
}

const char *rein_verify_status_name(enum rein_verify_status s)
{
    return (unsigned)s < REIN_ARRAY_SIZE(status_names) ? status_names[s] : "unknown";
}

const char *rein_verify_verdict_name(enum rein_verify_verdict v)
{
    return (unsigned)v < REIN_ARRAY_SIZE(verdict_names) ? verdict_names[v] : "UNKNOWN";
}

const char *rein_verify_format_name(enum rein_verify_format f)
{
    return (unsigned)f < REIN_ARRAY_SIZE(format_names) ? format_names[f] : "unknown";
}

bool rein_verify_format_parse(const char *text, enum rein_verify_format *out)
{
    for (size_t i = 0; text && i < REIN_ARRAY_SIZE(format_names); i++) {
        if (strcmp(text, format_names[i]) == 0) {
            *out = (enum rein_verify_format)i;
            return true;
        }
    }
    /* Names people reach for: clang diagnostics look like gcc's. */
    if (text && strcmp(text, "clang") == 0) {
        *out = REIN_VERIFY_FORMAT_GCC;
        return true;
    }
    if (text && strcmp(text, "junit-xml") == 0) {
        *out = REIN_VERIFY_FORMAT_JUNIT;
        return true;
    }
    return false;
}

/* ---- confidence ---- */

static double clamp01(double c)
{
    if (isnan(c) || c < 0)
        return 0;
    return c > 1 ? 1 : c;
}

double rein_verify_confidence_propagate(double own, const double *inputs, size_t n)
{
    double c = clamp01(own);

    /* Uncertainty only accumulates: downstream is never surer than what it was built on. */
    for (size_t i = 0; inputs && i < n; i++) {
        double in = clamp01(inputs[i]);
        if (in < c)
            c = in;
    }
    return c;
}

enum rein_verify_confidence_level rein_verify_confidence_level(double c)
{
    c = clamp01(c);
    if (c >= REIN_VERIFY_CONFIDENCE_HIGH)
        return REIN_VERIFY_CONFIDENCE_LEVEL_HIGH;
    if (c >= REIN_VERIFY_CONFIDENCE_LOW)
        return REIN_VERIFY_CONFIDENCE_LEVEL_MEDIUM;
    return REIN_VERIFY_CONFIDENCE_LEVEL_LOW;
}

const char *rein_verify_confidence_label(double c)
{
    switch (rein_verify_confidence_level(c)) {
    case REIN_VERIFY_CONFIDENCE_LEVEL_HIGH:
        return "verified";
    case REIN_VERIFY_CONFIDENCE_LEVEL_MEDIUM:
        return "UNVERIFIED";
    case REIN_VERIFY_CONFIDENCE_LEVEL_LOW:
        break;
    }
    return "withheld";
}

/* ---- text ---- */

/* Length of the escape sequence starting at p[0] == ESC, within n bytes. */
static size_t escape_len(const unsigned char *p, size_t n)
{
    size_t i = 1;

    if (n < 2)
        return 1;
    if (p[1] == '[') { /* CSI: parameters, intermediates, one final byte */
        for (i = 2; i < n && !(p[i] >= 0x40 && p[i] <= 0x7e); i++)
            ;
        return i < n ? i + 1 : n;
    }
    if (p[1] == ']') { /* OSC: ends with BEL or ESC \ */
        for (i = 2; i < n; i++) {
            if (p[i] == 0x07)
                return i + 1;
            if (p[i] == 0x1b && i + 1 < n && p[i + 1] == '\\')
                return i + 2;
        }
        return n;
    }
    return 2; /* a two-byte escape */
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;

    if (!len || len > n)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
    }
    if ((len == 2 && c < 0xc2) || (len == 3 && c == 0xe0 && s[1] < 0xa0) ||
        (len == 3 && c == 0xed && s[1] > 0x9f) ||
        (len == 4 && (c > 0xf4 || (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))))
        return 0;
    return len;
}

void rein__verify_utf8_fix(char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = utf8_len((const unsigned char *)s + i, n - i);
        if (len == 0) {
            s[i++] = '?';
            continue;
        }
        i += len;
    }
}

json_t *rein__verify_jstr(const char *s)
{
    json_t *v;
    char *copy;

    if (!s)
        return json_null();
    v = json_string(s);
    if (v)
        return v;
    copy = rein_strdup(s);
    if (!copy)
        return NULL;
    rein__verify_utf8_fix(copy, strlen(copy));
    v = json_string(copy);
    rein_free(copy);
    return v;
}

char *rein__verify_clean_text(const char *in, size_t len, size_t *out_len)
{
    const unsigned char *p = (const unsigned char *)in;
    char *out = rein_malloc(len + 1);
    size_t o = 0;

    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        if (p[i] == 0x1b) {
            i += escape_len(p + i, len - i);
        } else if (p[i] == '\r') {
            out[o++] = '\n';
            i += (i + 1 < len && p[i + 1] == '\n') ? 2 : 1;
        } else {
            out[o++] = p[i] ? (char)p[i] : ' ';
            i++;
        }
    }
    out[o] = '\0';
    /* Tools print bytes, not always UTF-8; what rein reports must be valid text. */
    rein__verify_utf8_fix(out, o);
    if (out_len)
        *out_len = o;
    return out;
}

const char *rein__verify_tail(const char *text, size_t len, size_t max, size_t *tail_len)
{
    const char *start = text;

    if (len > max) {
        const char *nl;
        start = text + (len - max);
        nl = memchr(start, '\n', max);
        /* Start at a line when one begins in the window; else at a character boundary. */
        if (nl && nl + 1 < text + len)
            start = nl + 1;
        else
            while (start < text + len && ((unsigned char)*start & 0xc0) == 0x80)
                start++;
    }
    *tail_len = (size_t)(text + len - start);
    return start;
}

bool rein__verify_has_prefix_ci(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++) {
        char a = *s, b = *prefix;
        if (a >= 'A' && a <= 'Z')
            a = (char)(a - 'A' + 'a');
        if (b >= 'A' && b <= 'Z')
            b = (char)(b - 'A' + 'a');
        if (a != b || !*s)
            return false;
    }
    return true;
}
