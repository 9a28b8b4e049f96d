/*
 * Scanning well-formed JSON text (RFC 8259) at speed, shared by the fast tokenizer (jtok.c)
 * and the one-pass chunk readers (oachunk.c): strings eight bytes at a time, numbers and
 * literals exactly as the grammar has them. Each function answers JS_NONE for anything it does
 * not accept, and the caller then leaves the text to jsmn.
 */
#ifndef REIN_JSCAN_H
#define REIN_JSCAN_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define JS_ONES  UINT64_C(0x0101010101010101)
#define JS_HIGHS UINT64_C(0x8080808080808080)
#define JS_NONE  SIZE_MAX

/* Nonzero when one of the eight bytes of w is '"', '\\' or below 0x20 (the test can flag a
 * byte next to a real match too; it never misses one). */
static inline uint64_t special8(uint64_t w)
{
    uint64_t q = w ^ (JS_ONES * '"'), b = w ^ (JS_ONES * '\\');

    return (((q - JS_ONES) & ~q) | ((b - JS_ONES) & ~b) | (w - JS_ONES * 0x20)) & ~w & JS_HIGHS;
}

/*
 * Where the first '"', '\\' or control byte is in the eight bytes at p (8 when none is). On a
 * little-endian machine the lowest flagged byte of special8() is always a real one (a false
 * flag needs a real one below it), so its position is the answer; elsewhere the bytes are
 * looked at one by one.
 */
static inline size_t first_special(const char *p)
{
    uint64_t w, m;

    memcpy(&w, p, 8);
    m = special8(w);
    if (!m)
        return 8;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (size_t)__builtin_ctzll(m) / 8;
#else
    for (size_t k = 0;; k++) {
        unsigned char c = (unsigned char)p[k];
        if (c == '"' || c == '\\' || c < 0x20)
            return k;
    }
#endif
}

static inline bool hexdig(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The closing quote of the string whose text starts at i, or JS_NONE. *esc (when esc is not
 * NULL) is set when the string has an escape and left alone otherwise. */
static inline size_t string_end(const char *js, size_t len, size_t i, bool *esc)
{
    for (;;) {
        size_t k;
        if (i + 8 <= len) {
            k = first_special(js + i);
        } else {
            char tail[8] = "aaaaaaaa"; /* the last bytes, padded with a plain letter */
            if (i >= len)
                return JS_NONE;
            memcpy(tail, js + i, len - i);
            k = first_special(tail);
            if (i + k >= len)
                return JS_NONE;
        }
        i += k;
        if (k == 8)
            continue;
        if (js[i] == '"')
            return i;
        if ((unsigned char)js[i] < 0x20 || i + 1 >= len)
            return JS_NONE;
        if (esc)
            *esc = true;
        switch (js[i + 1]) { /* after a backslash */
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            i += 2;
            break;
        case 'u':
            if (i + 6 > len || !hexdig(js[i + 2]) || !hexdig(js[i + 3]) || !hexdig(js[i + 4]) ||
                !hexdig(js[i + 5]))
                return JS_NONE;
            i += 6;
            break;
        default:
            return JS_NONE;
        }
    }
}

/*
 * string_end() for the text paths (oachunk.c, sse.c): sixteen bytes at a time where the CPU has SSE2 (a text
 * delta is most often one or two such blocks, which the eight-byte test takes two to three
 * rounds for), string_end() itself from the first byte that needs a look (the closing quote
 * is answered here; an escape or a control byte there).
 */
static inline size_t string_end_wide(const char *js, size_t len, size_t i, bool *esc)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i below = _mm_set1_epi8(0x1f);

    for (; i + 16 <= len; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(js + i));
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                 _mm_cmpeq_epi8(_mm_min_epu8(v, below), v)); /* v <= 0x1f */
        unsigned bits = (unsigned)_mm_movemask_epi8(m);
        if (bits) {
            i += (size_t)__builtin_ctz(bits);
            return js[i] == '"' ? i : string_end(js, len, i, esc);
        }
    }
#endif
    return string_end(js, len, i, esc);
}

static inline bool digit_at(const char *js, size_t len, size_t i)
{
    return i < len && js[i] >= '0' && js[i] <= '9';
}

/* Past the digits from i (at least one), or JS_NONE. */
static inline size_t digits(const char *js, size_t len, size_t i)
{
    if (!digit_at(js, len, i))
        return JS_NONE;
    while (digit_at(js, len, i))
        i++;
    return i;
}

/* The end of the number or literal at i, which jsmn ends at the next whitespace, ',', ']' or
 * '}' (at the end of the text jsmn says "cut short": JS_NONE, declined). */
static inline size_t primitive_end(const char *js, size_t len, size_t i)
{
    if (js[i] == 't' || js[i] == 'f' || js[i] == 'n') {
        const char *lit = js[i] == 't' ? "true" : js[i] == 'f' ? "false" : "null";
        size_t n = js[i] == 'f' ? 5 : 4;
        if (len - i < n || memcmp(js + i, lit, n) != 0)
            return JS_NONE;
        i += n;
    } else {
        if (js[i] == '-')
            i++;
        if (digit_at(js, len, i) && js[i] == '0')
            i++;
        else if ((i = digits(js, len, i)) == JS_NONE)
            return JS_NONE;
        if (i < len && js[i] == '.' && (i = digits(js, len, i + 1)) == JS_NONE)
            return JS_NONE;
        if (i < len && (js[i] == 'e' || js[i] == 'E')) {
            i++;
            if (i < len && (js[i] == '+' || js[i] == '-'))
                i++;
            if ((i = digits(js, len, i)) == JS_NONE)
                return JS_NONE;
        }
    }
    if (i >= len)
        return JS_NONE;
    switch (js[i]) {
    case ' ':
    case '\n':
    case '\r':
    case '\t':
    case ',':
    case ']':
    case '}':
        return i;
    default:
        return JS_NONE;
    }
}

#endif /* REIN_JSCAN_H */
