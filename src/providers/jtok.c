/*
 * A fast path in front of jsmn (jpull.h). The stream decoders tokenize every SSE event's JSON,
 * and jsmn walks it one byte at a time through a switch: on a long streamed answer that walk
 * was half of rein's instructions per event (decision 0050). This tokenizer accepts only
 * well-formed JSON (RFC 8259; several values one after another, as jsmn allows) and gives
 * exactly the tokens jsmn_parse gives the same text with JSMN_STRICT and JSMN_PARENT_LINKS:
 * the same types, offsets, sizes and parent links. Strings, the bulk of the bytes, are
 * scanned eight bytes at a time.
 *
 * Whatever it does not accept it declines, and the caller runs jsmn on the text: bytes that
 * are not JSON, a value cut short, a NUL, control bytes inside a string, a literal such as
 * "nul" that jsmn takes loosely. So every answer and every error code stays jsmn's own; the
 * fast path only has to be right on the text it accepts (fuzz/fuzz_jtok.c compares the two).
 */
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include "jpull.h"

#include <stdint.h>

#define ONES  UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)
#define NONE  SIZE_MAX

/* Nonzero when one of the eight bytes of w is '"', '\\' or below 0x20 (the test can flag a
 * byte next to a real match too; it never misses one). */
static inline uint64_t special8(uint64_t w)
{
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');

    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | (w - ONES * 0x20)) & ~w & HIGHS;
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

/* The closing quote of the string whose text starts at i, or NONE. */
static inline size_t string_end(const char *js, size_t len, size_t i)
{
    for (;;) {
        size_t k;
        if (i + 8 <= len) {
            k = first_special(js + i);
        } else {
            char tail[8] = "aaaaaaaa"; /* the last bytes, padded with a plain letter */
            if (i >= len)
                return NONE;
            memcpy(tail, js + i, len - i);
            k = first_special(tail);
            if (i + k >= len)
                return NONE;
        }
        i += k;
        if (k == 8)
            continue;
        if (js[i] == '"')
            return i;
        if ((unsigned char)js[i] < 0x20 || i + 1 >= len)
            return NONE;
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
                return NONE;
            i += 6;
            break;
        default:
            return NONE;
        }
    }
}

static inline bool digit_at(const char *js, size_t len, size_t i)
{
    return i < len && js[i] >= '0' && js[i] <= '9';
}

/* Past the digits from i (at least one), or NONE. */
static inline size_t digits(const char *js, size_t len, size_t i)
{
    if (!digit_at(js, len, i))
        return NONE;
    while (digit_at(js, len, i))
        i++;
    return i;
}

/* The end of the number or literal at i, which jsmn ends at the next whitespace, ',', ']' or
 * '}' (at the end of the text jsmn says "cut short": NONE, declined). */
static size_t primitive_end(const char *js, size_t len, size_t i)
{
    if (js[i] == 't' || js[i] == 'f' || js[i] == 'n') {
        const char *lit = js[i] == 't' ? "true" : js[i] == 'f' ? "false" : "null";
        size_t n = js[i] == 'f' ? 5 : 4;
        if (len - i < n || memcmp(js + i, lit, n) != 0)
            return NONE;
        i += n;
    } else {
        if (js[i] == '-')
            i++;
        if (digit_at(js, len, i) && js[i] == '0')
            i++;
        else if ((i = digits(js, len, i)) == NONE)
            return NONE;
        if (i < len && js[i] == '.' && (i = digits(js, len, i + 1)) == NONE)
            return NONE;
        if (i < len && (js[i] == 'e' || js[i] == 'E')) {
            i++;
            if (i < len && (js[i] == '+' || js[i] == '-'))
                i++;
            if ((i = digits(js, len, i)) == NONE)
                return NONE;
        }
    }
    if (i >= len)
        return NONE;
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
        return NONE;
    }
}

#define SKIP_WS()                                                                                  \
    while (i < len && (js[i] == ' ' || js[i] == '\n' || js[i] == '\r' || js[i] == '\t'))           \
    i++

/*
 * One function with the parser's state in locals (a state machine through labels: value,
 * after a value, key, close), which keeps it in registers. The token that takes a value as a
 * child (owner) is, as in jsmn, the array it is an element of, the key it is the value of, or
 * -1 at the top; the innermost open container (cur) is found again through the parent links
 * when one closes, as jsmn finds it, so no stack is needed.
 */
int rein__jtok_fast(const char *js, size_t len, jsmntok_t *t, int cap)
{
    size_t i = 0, e;
    int n = 0, cur, owner;
    jsmntok_t *k;
    char c;

    if (len > (size_t)0x7fffffff)
        return REIN__JTOK_DECLINED;
top:
    SKIP_WS();
    if (i >= len)
        return n;
    cur = owner = -1;
value:
    SKIP_WS();
    if (i >= len)
        return REIN__JTOK_DECLINED;
    if (n >= cap)
        return REIN__JTOK_FULL;
    c = js[i];
    if (owner >= 0)
        t[owner].size++;
    k = &t[n];
    k->size = 0;
    k->parent = owner;
    if (c == '"') {
        if ((e = string_end(js, len, i + 1)) == NONE)
            return REIN__JTOK_DECLINED;
        k->type = JSMN_STRING;
        k->start = (int)i + 1;
        k->end = (int)e;
        n++;
        i = e + 1;
    } else if (c == '{' || c == '[') {
        k->type = c == '{' ? JSMN_OBJECT : JSMN_ARRAY;
        k->start = (int)i;
        k->end = -1;
        cur = n++;
        i++;
        SKIP_WS();
        if (i >= len)
            return REIN__JTOK_DECLINED;
        if (js[i] == (c == '{' ? '}' : ']'))
            goto close;
        if (c == '{')
            goto key;
        owner = cur;
        goto value;
    } else {
        if ((e = primitive_end(js, len, i)) == NONE)
            return REIN__JTOK_DECLINED;
        k->type = JSMN_PRIMITIVE;
        k->start = (int)i;
        k->end = (int)e;
        n++;
        i = e;
    }
after:
    if (cur < 0)
        goto top;
    SKIP_WS();
    if (i >= len)
        return REIN__JTOK_DECLINED;
    c = js[i];
    if (c == ',') {
        i++;
        if (t[cur].type == JSMN_ARRAY) {
            owner = cur;
            goto value;
        }
        SKIP_WS();
        goto key;
    }
    if (c != (t[cur].type == JSMN_OBJECT ? '}' : ']'))
        return REIN__JTOK_DECLINED;
close:
    t[cur].end = (int)i + 1;
    i++;
    owner = t[cur].parent;
    cur = owner < 0 ? -1 : t[owner].type == JSMN_STRING ? t[owner].parent : owner;
    goto after;
key:
    if (i >= len || js[i] != '"')
        return REIN__JTOK_DECLINED;
    if (n >= cap)
        return REIN__JTOK_FULL;
    if ((e = string_end(js, len, i + 1)) == NONE)
        return REIN__JTOK_DECLINED;
    t[cur].size++;
    k = &t[n];
    k->type = JSMN_STRING;
    k->start = (int)i + 1;
    k->end = (int)e;
    k->size = 0;
    k->parent = cur;
    owner = n++;
    i = e + 1;
    SKIP_WS();
    if (i >= len || js[i] != ':')
        return REIN__JTOK_DECLINED;
    i++;
    goto value;
}
