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

#include "jscan.h"

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
        if ((e = string_end(js, len, i + 1, NULL)) == JS_NONE)
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
        if ((e = primitive_end(js, len, i)) == JS_NONE)
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
    if ((e = string_end(js, len, i + 1, NULL)) == JS_NONE)
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
