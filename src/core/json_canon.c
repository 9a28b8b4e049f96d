/*
 * Recognizes JSON text that is already in rein's written form (include/rein/json.h,
 * rein_json_is_written_form).
 *
 * Stored texts that rein wrote itself (a conversation's messages) are sent again inside larger
 * answers. Parsing each into a tree only to write the tree back gives the same bytes whenever
 * the text is in the writer's form, so such a text can be copied as it is. The check is a
 * single pass and deliberately narrow: anything the writer would not have written byte for
 * byte (a space, an escape other than the writer's own, a real number, "-0", a repeated key,
 * deep nesting, many keys open at once) answers false, and the caller takes the parse and
 * write path, which decides as it always did.
 */
#include "core/internal.h"

#include <rein/json.h>

#include <string.h>

#define CANON_MAX_DEPTH  32 /* deeper texts take the parse and write path */
#define CANON_MAX_KEYS   64 /* keys of the objects open at once, kept to find a repeated one */
#define CANON_MAX_DIGITS 18 /* any integer this long fits in int64 */

struct canon {
    const unsigned char *s;
    size_t len, i;
    int depth;
    /* The keys of every object still open (offsets of the first byte after the opening quote
     * and lengths), innermost last. */
    size_t key_off[CANON_MAX_KEYS], key_len[CANON_MAX_KEYS];
    int nkeys;
};

static bool is_hex_lower(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static unsigned hex_value(unsigned char c)
{
    return c <= '9' ? (unsigned)(c - '0') : (unsigned)(c - 'a' + 10);
}

/*
 * A string as the writer writes it, from its opening quote: printable ASCII but '"' and '\\'
 * as it is, valid UTF-8 as it is, and only the writer's escapes (\" \\ \n \r \t \b \f, and
 * \u00XX in lowercase for the other control bytes but NUL, which a key cannot hold).
 */
static bool canon_string(struct canon *c)
{
    const unsigned char *s = c->s;

    c->i++; /* the opening quote */
    while (c->i < c->len) {
        unsigned char b = s[c->i];
        if (b == '"') {
            c->i++;
            return true;
        }
        if (b >= 0x20 && b < 0x80 && b != '\\') {
            c->i++;
            continue;
        }
        if (b >= 0x80) {
            size_t n = rein__utf8_seq_len(s + c->i, c->len - c->i);
            if (n == 0)
                return false;
            c->i += n;
            continue;
        }
        if (b != '\\' || c->i + 1 >= c->len)
            return false; /* a raw control byte, or a text that ends inside an escape */
        switch (s[c->i + 1]) {
        case '"':
        case '\\':
        case 'n':
        case 'r':
        case 't':
        case 'b':
        case 'f':
            c->i += 2;
            continue;
        case 'u': {
            unsigned v;
            if (c->len - c->i < 6 || s[c->i + 2] != '0' || s[c->i + 3] != '0' ||
                !is_hex_lower(s[c->i + 4]) || !is_hex_lower(s[c->i + 5]))
                return false;
            v = hex_value(s[c->i + 4]) * 16 + hex_value(s[c->i + 5]);
            /* The writer spells these five with their short escapes, and writes nothing else
             * below 0x20 this way but NUL, left to the parse path. */
            if (v == 0 || v >= 0x20 || v == '\b' || v == '\t' || v == '\n' || v == '\f' ||
                v == '\r')
                return false;
            c->i += 6;
            continue;
        }
        default:
            return false;
        }
    }
    return false;
}

/* An integer as the writer writes one: no "-0", no leading zero, no fraction or exponent. */
static bool canon_integer(struct canon *c)
{
    bool neg = c->s[c->i] == '-';
    size_t start = c->i + neg, n;

    c->i = start;
    while (c->i < c->len && c->s[c->i] >= '0' && c->s[c->i] <= '9')
        c->i++;
    n = c->i - start;
    if (n == 0 || n > CANON_MAX_DIGITS || (c->s[start] == '0' && (n > 1 || neg)))
        return false;
    /* A fraction or exponent makes it a real, which the parse path writes its own way. */
    return c->i >= c->len || (c->s[c->i] != '.' && c->s[c->i] != 'e' && c->s[c->i] != 'E');
}

static bool canon_word(struct canon *c, const char *word, size_t n)
{
    if (c->len - c->i < n || memcmp(c->s + c->i, word, n) != 0)
        return false;
    c->i += n;
    return true;
}

static bool canon_value(struct canon *c);

/* A key not seen before in its object (keys open before first..nkeys-1). */
static bool canon_key(struct canon *c, int first)
{
    size_t off = c->i + 1, n;

    if (c->i >= c->len || c->s[c->i] != '"' || !canon_string(c))
        return false;
    n = c->i - 1 - off;
    /* The writer's form of a string is unique, so equal texts are equal keys and back. */
    for (int k = first; k < c->nkeys; k++) {
        if (c->key_len[k] == n && memcmp(c->s + c->key_off[k], c->s + off, n) == 0)
            return false;
    }
    if (c->nkeys == CANON_MAX_KEYS)
        return false;
    c->key_off[c->nkeys] = off;
    c->key_len[c->nkeys] = n;
    c->nkeys++;
    return c->i < c->len && c->s[c->i++] == ':';
}

static bool canon_container(struct canon *c, bool object)
{
    const unsigned char close = object ? '}' : ']';
    int first = c->nkeys;

    if (++c->depth > CANON_MAX_DEPTH)
        return false;
    c->i++;
    if (c->i < c->len && c->s[c->i] == close) {
        c->i++;
        c->depth--;
        return true;
    }
    for (;;) {
        if (object && !canon_key(c, first))
            return false;
        if (!canon_value(c) || c->i >= c->len)
            return false;
        if (c->s[c->i] == close)
            break;
        if (c->s[c->i] != ',')
            return false;
        c->i++;
    }
    c->i++;
    c->nkeys = first;
    c->depth--;
    return true;
}

static bool canon_value(struct canon *c)
{
    if (c->i >= c->len)
        return false;
    switch (c->s[c->i]) {
    case '{':
        return canon_container(c, true);
    case '[':
        return canon_container(c, false);
    case '"':
        return canon_string(c);
    case 't':
        return canon_word(c, "true", 4);
    case 'f':
        return canon_word(c, "false", 5);
    case 'n':
        return canon_word(c, "null", 4);
    default:
        return (c->s[c->i] == '-' || (c->s[c->i] >= '0' && c->s[c->i] <= '9')) && canon_integer(c);
    }
}

bool rein_json_is_written_form(const char *text, size_t len)
{
    struct canon c = {.s = (const unsigned char *)text, .len = len};

    return text && canon_value(&c) && c.i == len;
}
