/*
 * rein's own JSON document parser, the first try of rein_json_parse() (src/core/json.c).
 *
 * jansson's loader reads through a per-byte stream with a token buffer for every string and
 * number; building the values straight from the text is several times faster, for a model's
 * small arguments as for a 10 MB one (issue 25; decision 0037). This parser accepts a subset of
 * what jansson accepts (RFC 8259, no NUL in keys, no duplicate keys, depth at most
 * FAST_MAX_DEPTH, numbers that strtoll/strtod read without a range error) and gives up,
 * returning NULL, on anything it does not handle or that is wrong; the caller then asks
 * jansson, whose answer (value or error, with line and column) is the one that counts. So
 * this parser changes speed, never results: a value it returns is the one jansson would build
 * (same members in the same order, same numbers, same strings), which the fuzz target
 * json_parse checks against jansson on every input.
 */
#include "core/internal.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* jansson checks keys as it stores them; longer keys are rare enough to leave to it. */
#define FAST_KEY_MAX   1024
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

long rein__jf_unescape(const char *s, size_t len, char *out)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\') {
            /* The run up to the next backslash (or the end) at once. */
            const char *bs = memchr(s + i, '\\', len - i);
            size_t run = bs ? (size_t)(bs - (s + i)) : len - i;
            memcpy(out + n, s + i, run);
            n += run;
            i += run - 1;
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

#define ONES  UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* Nonzero when one of the eight bytes in v is a quote, a backslash or a control byte (a zero
 * byte test per class: exact for "any", which is all the scan asks). */
static inline uint64_t special8(uint64_t v)
{
    uint64_t q = v ^ (ONES * '"'), b = v ^ (ONES * '\\');

    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((v - ONES * 0x20) & ~v)) & HIGHS;
}

/* ASCII eight bytes at a time. */
bool rein__jf_utf8_ok(const char *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        uint64_t v;
        size_t n;
        if (len - i >= 8) {
            memcpy(&v, s + i, 8);
            if (!(v & HIGHS)) {
                i += 8;
                continue;
            }
        }
        if (!((unsigned char)s[i] & 0x80)) {
            i++;
            continue;
        }
        n = rein__utf8_seq_len((const unsigned char *)s + i, len - i);
        if (!n)
            return false;
        i += n;
    }
    return true;
}

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The index of the first byte special8() flags (its lowest flag is exact: a false one can only
 * follow a true one, from the borrow). */
#define FIRST_FLAGGED(m) ((size_t)__builtin_ctzll(m) >> 3)
#endif

/*
 * One pass to the closing quote, eight bytes at a time while none of them is special, then to
 * the special one. The byte after a backslash is skipped here (so an escaped quote does not
 * end the string); rein__jf_unescape checks it.
 */
const char *rein__jf_scan_string(const char *c, const char *end, bool *escaped, bool *high_out)
{
    unsigned char high = 0; /* any byte >= 0x80 sets the top bit */
    uint64_t high8 = 0;

    *escaped = false;
    for (;;) {
        /* Long strings (a file's content in one argument) eight bytes at a time. */
        while (end - c >= 8) {
            uint64_t w, m;
            memcpy(&w, c, 8);
            m = special8(w);
            if (m) {
#ifdef FIRST_FLAGGED
                size_t k = FIRST_FLAGGED(m);
                high8 |= k ? w & ((UINT64_C(1) << (8 * k)) - 1) : 0; /* the bytes before it */
                c += k;
#endif
                break;
            }
            high8 |= w;
            c += 8;
        }
        while (c < end && !string_special[(unsigned char)*c])
            high |= (unsigned char)*c++;
        if (c >= end || (unsigned char)*c < 0x20)
            return NULL;
        if (*c == '"')
            break;
        *escaped = true; /* a backslash: skip it and the byte it escapes */
        if (++c < end)
            c++;
    }
    *high_out = (high & 0x80) || (high8 & HIGHS);
    return c;
}

/*
 * A string value, or a key: the text between the quotes, checked and unescaped. A key is not
 * made into a value: *key points at its text (in the document, or unescaped into keybuf,
 * FAST_KEY_MAX bytes), *keylen is its length, and the result is a marker, json_true() when
 * the key is ASCII and json_null() when it is not (jansson's loader checks such a key).
 */
static json_t *fast_string(struct fast *f, char *keybuf, const char **key, size_t *keylen)
{
    const char *start = ++f->p;
    bool escaped, high;
    char stack[256];
    char *buf = stack;
    json_t *v = NULL;
    long n;
    const char *c = rein__jf_scan_string(f->p, f->end, &escaped, &high);

    if (!c)
        return NULL;
    f->p = c;
    size_t len = (size_t)(f->p - start);
    f->p++; /* the closing quote */
    if (key) {
        /* jansson refuses NUL bytes in keys (only \u0000 makes one: a raw control byte was
         * refused above); longer keys are left to it. */
        if (len >= FAST_KEY_MAX)
            return NULL;
        if (escaped) {
            n = rein__jf_unescape(start, len, keybuf);
            if (n < 0 || memchr(keybuf, '\0', (size_t)n))
                return NULL;
            start = keybuf;
            len = (size_t)n;
        }
        *key = start;
        *keylen = len;
        return high ? json_null() : json_true();
    }
    if (escaped) {
        if (len > sizeof(stack) && !(buf = rein_malloc(len)))
            return NULL;
        n = rein__jf_unescape(start, len, buf);
        start = buf;
        len = n < 0 ? 0 : (size_t)n;
        if (n < 0)
            goto out;
    }
    /* ASCII is UTF-8; anything else is checked here as jansson checks it (invalid: jansson
     * decides and explains). */
    if (!high || rein__jf_utf8_ok(start, len))
        v = json_stringn_nocheck(start, len);
out:
    if (buf != stack)
        rein_free(buf);
    return v;
}

/*
 * A real whose decimal digits make an integer w of at most 2^53 and whose power of ten e is at
 * most 22 either way: w and 10^|e| are exact doubles, so w * 10^e or w / 10^-e is one correctly
 * rounded operation, the double strtod returns (Clinger's fast path). That takes every real of
 * up to 15 significant digits and most of 16 (a shortest round-trip form such as Python's or
 * JavaScript's output often has 16 or 17). Anything else (w above 2^53, larger powers, a
 * platform that evaluates doubles in wider registers) is strtod's.
 * text is a number the scanner accepted (JSON grammar), len bytes.
 */
#define EXACT_MAX (UINT64_C(1) << 53)
static bool exact_real(const char *text, size_t len, double *out)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *p = text, *end = text + len;
    bool neg = *p == '-';
    uint64_t w = 0; /* at most EXACT_MAX * 10 + 9 before the check that ends the loop */
    int e = 0;

    p += neg;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (w > EXACT_MAX)
            return false;
        w = w * 10 + (uint64_t)(*p - '0');
    }
    if (p < end && *p == '.') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++) {
            if (w > EXACT_MAX)
                return false;
            w = w * 10 + (uint64_t)(*p - '0');
            e--;
        }
    }
    if (p < end) { /* 'e' or 'E' */
        bool eneg;
        int x = 0, xd = 0;
        p++;
        eneg = p < end && *p == '-';
        p += p < end && (*p == '-' || *p == '+');
        for (; p < end; p++, xd++) {
            if (xd >= 4)
                return false;
            x = x * 10 + (*p - '0');
        }
        e += eneg ? -x : x;
    }
    if (w > EXACT_MAX || e < -22 || e > 22)
        return false;
    *out = e >= 0 ? (double)w * pow10[e] : (double)w / pow10[-e];
    if (neg)
        *out = -*out;
    return true;
#else
    (void)text;
    (void)len;
    (void)out;
    return false;
#endif
}

int rein__jf_number(const char **pp, const char *end, json_int_t *iv, double *dv)
{
    const char *p = *pp, *start = p;
    bool real = false;
    char tmp[64];

    if (p < end && *p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9')
        return 0;
    if (*p == '0')
        p++;
    else
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    if (p < end && *p == '.') {
        real = true;
        if (++p >= end || *p < '0' || *p > '9')
            return 0;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        real = true;
        if (++p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9')
            return 0;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    *pp = p;
    size_t len = (size_t)(p - start);
    if (!real && len - (*start == '-') <= 18) {
        /* Eighteen digits cannot overflow an int64: no copy, no strtoll. */
        long long v = 0;
        for (const char *q = start + (*start == '-'); q < p; q++)
            v = v * 10 + (*q - '0');
        *iv = (json_int_t)(*start == '-' ? -v : v);
        return 1;
    }
    if (real && exact_real(start, len, dv))
        return 2;
    if (len >= sizeof(tmp))
        return 0;
    memcpy(tmp, start, len);
    tmp[len] = '\0';
    errno = 0;
    if (!real) {
        long long v = strtoll(tmp, NULL, 10);
        *iv = (json_int_t)v;
        return errno ? 0 : 1; /* overflow: jansson explains */
    }
    *dv = strtod(tmp, NULL);
    return errno || !isfinite(*dv) ? 0 : 2;
}

static json_t *fast_number(struct fast *f)
{
    json_int_t i;
    double d;

    switch (rein__jf_number(&f->p, f->end, &i, &d)) {
    case 1:
        return json_integer(i);
    case 2:
        return json_real(d);
    default:
        return NULL;
    }
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
    char keybuf[FAST_KEY_MAX];
    const char *key = NULL;
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
                f->p < f->end && *f->p == '"' ? fast_string(f, keybuf, &key, &klen) : NULL;
            if (!marker)
                goto fail;
            key_ascii = json_is_true(marker);
            fast_ws(f);
            if (f->p >= f->end || *f->p != ':')
                goto fail;
            f->p++;
            fast_ws(f);
        }
        v = fast_value(f);
        size_t before = object ? json_object_size(c) : 0;
        /* A key that is not ASCII is checked to be UTF-8, as jansson's loader does. */
        if (!v || (object ? (key_ascii ? json_object_setn_new_nocheck(c, key, klen, v)
                                       : json_object_setn_new(c, key, klen, v))
                          : json_array_append_new(c, v)))
            goto fail;
        /* A key that was there already replaced its value instead of adding one: a duplicate,
         * which jansson refuses (with its position) or keeps the last of, as its flags say. */
        if (object && json_object_size(c) == before)
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
        return fast_string(f, NULL, NULL, NULL);
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

json_t *rein__json_parse_fast(const char *text, size_t len)
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
