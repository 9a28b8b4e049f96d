/*
 * The AWS event stream framing (application/vnd.amazon.eventstream), as Bedrock's
 * ConverseStream sends it: a sequence of binary messages, each
 *
 *   total length (4 bytes, big endian) | headers length (4) | prelude CRC (4) |
 *   headers | payload | message CRC (4)
 *
 * where the prelude CRC is the CRC-32 (IEEE 802.3, as zlib's crc32) of the first 8 bytes and
 * the message CRC that of everything before it. A header is a name (1-byte length, then the
 * bytes), a type byte and a value: 0 true, 1 false (no bytes), 2 byte (1), 3 short (2),
 * 4 integer (4), 5 long (8), 6 byte array and 7 string (2-byte length, then the bytes),
 * 8 timestamp (8), 9 UUID (16). Both CRCs are checked, lengths are checked against each other
 * and against the size limit, every header is bounds-checked and an unknown type is an error:
 * a message is handed on only when all of it is sound.
 *
 * Bytes arrive split anywhere; a message is kept until it is whole, and only that message.
 */
#include "provider_int.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define PRELUDE     12
#define MIN_MESSAGE 16

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t rein__crc32(uint32_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;

    pthread_once(&crc_once, crc_init);
    crc = ~crc;
    for (size_t i = 0; i < len; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void rein__evs_init(struct rein__evs *s, size_t max, rein__evs_fn fn, void *ud)
{
    memset(s, 0, sizeof(*s));
    rein_buf_init(&s->buf, max + PRELUDE + 4);
    s->max = max;
    s->fn = fn;
    s->ud = ud;
}

void rein__evs_release(struct rein__evs *s)
{
    rein_buf_release(&s->buf);
}

static rein_err bad(struct rein__evs *s, rein_error *err, const char *what)
{
    return rein_error_set(err, REIN_EPARSE, "event stream message %zu: %s", s->count + 1, what);
}

/* Copies a string header's value (bounded) into out. */
static void take_string(char *out, size_t size, const uint8_t *v, size_t n)
{
    if (n >= size)
        n = size - 1;
    memcpy(out, v, n);
    out[n] = '\0';
}

/* Reads the headers of a whole message into m; every length is checked against end. */
static rein_err parse_headers(struct rein__evs *s, const uint8_t *p, const uint8_t *end,
                              struct rein__evs_msg *m, rein_error *err)
{
    static const size_t fixed[] = {0, 0, 1, 2, 4, 8, 0, 0, 8, 16};

    while (p < end) {
        size_t nlen = *p++;
        const uint8_t *name = p;
        uint8_t type;
        size_t vlen;
        if (nlen == 0 || (size_t)(end - p) < nlen + 1)
            return bad(s, err, "a header name runs past the headers");
        p += nlen;
        type = *p++;
        if (type > 9)
            return bad(s, err, "a header has an unknown value type");
        if (type == 6 || type == 7) {
            if (end - p < 2)
                return bad(s, err, "a header value runs past the headers");
            vlen = (size_t)p[0] << 8 | p[1];
            p += 2;
        } else {
            vlen = fixed[type];
        }
        if ((size_t)(end - p) < vlen)
            return bad(s, err, "a header value runs past the headers");
        if (type == 7) {
#define IS(lit) (nlen == sizeof(lit) - 1 && memcmp(name, lit, nlen) == 0)
            if (IS(":message-type"))
                take_string(m->message_type, sizeof(m->message_type), p, vlen);
            else if (IS(":event-type") || IS(":exception-type") || IS(":error-code"))
                take_string(m->event_type, sizeof(m->event_type), p, vlen);
            else if (IS(":error-message"))
                take_string(m->error_message, sizeof(m->error_message), p, vlen);
            else if (IS(":content-type") || IS("content-type"))
                take_string(m->content_type, sizeof(m->content_type), p, vlen);
#undef IS
        }
        p += vlen;
    }
    return REIN_OK;
}

/* Checks and hands on the whole message at p (total bytes). */
static rein_err take_message(struct rein__evs *s, const uint8_t *p, size_t total, rein_error *err)
{
    struct rein__evs_msg m;
    size_t hlen = be32(p + 4);
    rein_err rc;

    if (rein__crc32(0, p, total - 4) != be32(p + total - 4))
        return bad(s, err, "the message CRC does not match its bytes");
    memset(&m, 0, sizeof(m));
    rc = parse_headers(s, p + PRELUDE, p + PRELUDE + hlen, &m, err);
    if (rc)
        return rc;
    m.payload = (const char *)p + PRELUDE + hlen;
    m.len = total - PRELUDE - hlen - 4;
    m.index = ++s->count;
    return s->fn(s->ud, &m, err);
}

/* The prelude at p (12 bytes): the message's total length, or 0 with err set. */
static size_t check_prelude(struct rein__evs *s, const uint8_t *p, rein_error *err)
{
    size_t total = be32(p), hlen = be32(p + 4);
    char why[128];

    if (rein__crc32(0, p, 8) != be32(p + 8)) {
        bad(s, err, "the prelude CRC does not match (not an event stream, or bytes were lost)");
        return 0;
    }
    if (total < MIN_MESSAGE || hlen > total - MIN_MESSAGE) {
        snprintf(why, sizeof(why), "lengths that do not fit (total %zu, headers %zu)", total, hlen);
        bad(s, err, why);
        return 0;
    }
    if (total - MIN_MESSAGE > s->max) {
        snprintf(why, sizeof(why), "%zu bytes, more than the limit of %zu", total, s->max);
        bad(s, err, why);
        return 0;
    }
    return total;
}

rein_err rein__evs_feed(struct rein__evs *s, const void *data, size_t len, rein_error *err)
{
    const uint8_t *in = data;
    rein_err rc = REIN_OK;

    /* Whole messages straight from the input; only a message split across feeds is copied. */
    while (len > 0 && !rc) {
        const uint8_t *p;
        size_t have, total;
        if (s->buf.len == 0 && len >= PRELUDE) {
            total = check_prelude(s, in, err);
            if (!total)
                return REIN_EPARSE;
            if (len >= total) {
                rc = take_message(s, in, total, err);
                in += total;
                len -= total;
                continue;
            }
        }
        /* Gather the prelude, then the rest of the message. */
        have = s->buf.len;
        if (have < PRELUDE) {
            size_t take = PRELUDE - have < len ? PRELUDE - have : len;
            if ((rc = rein_buf_add(&s->buf, in, take)) != REIN_OK)
                return rc;
            in += take;
            len -= take;
            if (s->buf.len < PRELUDE)
                break;
        }
        p = (const uint8_t *)s->buf.ptr;
        total = check_prelude(s, p, err);
        if (!total)
            return REIN_EPARSE;
        have = s->buf.len;
        if (len > 0 && have < total) {
            size_t take = total - have < len ? total - have : len;
            if ((rc = rein_buf_add(&s->buf, in, take)) != REIN_OK)
                return rc;
            in += take;
            len -= take;
        }
        if (s->buf.len == total) {
            rc = take_message(s, (const uint8_t *)s->buf.ptr, total, err);
            rein_buf_reset(&s->buf);
        }
    }
    return rc;
}

size_t rein__evs_pending(const struct rein__evs *s)
{
    return s->buf.len;
}
