/*
 * Request bodies (provider_int.h, struct rein__body): one buffer, or a buffer with the
 * history's block of encoded messages spliced in, read in place when the body is sent.
 */
#include "provider_int.h"

#include <string.h>

void rein__body_init(struct rein__body *b)
{
    memset(b, 0, sizeof(*b));
    rein_buf_init(&b->buf, 0);
}

void rein__body_release(struct rein__body *b)
{
    rein_buf_release(&b->buf);
    b->mid = NULL;
    b->hist = NULL;
    b->at = b->mid_len = 0;
}

size_t rein__body_len(const struct rein__body *b)
{
    return b->buf.len + b->mid_len;
}

void rein__body_block(struct rein__body *b, struct rein_jw *w, const char *block, size_t len)
{
    if (len < REIN__SPLICE_MIN || b->mid) {
        rein_jw_raw(w, block, len);
        return;
    }
    rein_jw_raw(w, "", 0); /* the separator before it, and the writer counts a value */
    b->at = b->buf.len;
    b->mid = block;
    b->mid_len = len;
}

/*
 * The body as three pieces in order: the head, the block, the tail. Calls fn on each part
 * of bytes off..off+n-1 in order.
 */
struct span {
    const char *p;
    size_t len;
};

static size_t pieces(const struct rein__body *b, struct span out[3])
{
    if (!b->mid) {
        out[0] = (struct span){b->buf.ptr, b->buf.len};
        return 1;
    }
    out[0] = (struct span){b->buf.ptr, b->at};
    out[1] = (struct span){b->mid, b->mid_len};
    out[2] = (struct span){b->buf.ptr + b->at, b->buf.len - b->at};
    return 3;
}

void rein__body_copy(const struct rein__body *b, size_t off, char *dst, size_t n)
{
    struct span s[3];
    size_t k = pieces(b, s);

    for (size_t i = 0; i < k && n > 0; i++) {
        if (off >= s[i].len) {
            off -= s[i].len;
            continue;
        }
        size_t take = s[i].len - off < n ? s[i].len - off : n;
        memcpy(dst, s[i].p + off, take);
        dst += take;
        n -= take;
        off = 0;
    }
}

uint64_t rein__body_hash(const struct rein__body *b, uint64_t h, size_t off, size_t n)
{
    struct span s[3];
    size_t k = pieces(b, s);

    /* FNV-1a runs byte by byte, so hashing the parts in turn equals hashing them joined. */
    for (size_t i = 0; i < k && n > 0; i++) {
        if (off >= s[i].len) {
            off -= s[i].len;
            continue;
        }
        size_t take = s[i].len - off < n ? s[i].len - off : n;
        h = rein__hash64(h, s[i].p + off, take);
        n -= take;
        off = 0;
    }
    return h;
}

void rein__body_sha256_hex(const struct rein__body *b, char out[65])
{
    struct rein__sha_cache *c = b->mid && b->hist ? rein__history_sha_cache(b->hist) : NULL;
    struct rein__sha256 s;
    struct span sp[3];
    size_t k = pieces(b, sp);

    if (!c || b->at > sizeof(c->head)) {
        rein__sha256_init(&s);
        for (size_t i = 0; i < k; i++)
            rein__sha256_add(&s, sp[i].p, sp[i].len);
        rein__sha256_hex(&s, out, 64);
        return;
    }
    /* The head and the block as far as the last request hashed them are in the cache when
     * they are the same bytes; only the rest of the block is hashed, and the cache moves on
     * to its end. */
    if (!c->valid || c->head_len != b->at || memcmp(c->head, b->buf.ptr, b->at) != 0 ||
        c->done > b->mid_len) {
        rein__sha256_init(&c->state);
        rein__sha256_add(&c->state, b->buf.ptr, b->at);
        memcpy(c->head, b->buf.ptr, b->at);
        c->head_len = b->at;
        c->done = 0;
        c->valid = true;
    }
    rein__sha256_add(&c->state, b->mid + c->done, b->mid_len - c->done);
    c->done = b->mid_len;
    s = c->state;
    rein__sha256_add(&s, sp[2].p, sp[2].len);
    rein__sha256_hex(&s, out, 64);
}

rein_err rein__body_flatten(struct rein__body *b)
{
    size_t tail;
    rein_err rc;

    if (!b->mid)
        return REIN_OK;
    rc = rein_buf_grow(&b->buf, b->mid_len);
    if (rc)
        return rc;
    tail = b->buf.len - b->at;
    memmove(b->buf.ptr + b->at + b->mid_len, b->buf.ptr + b->at, tail);
    memcpy(b->buf.ptr + b->at, b->mid, b->mid_len);
    b->buf.len += b->mid_len;
    b->buf.ptr[b->buf.len] = '\0';
    b->mid = NULL;
    b->hist = NULL;
    b->at = b->mid_len = 0;
    return REIN_OK;
}

rein_err rein__body_groups(struct rein__body *b, struct rein_jw *w, const struct rein__groups *g)
{
    rein_jw_arr_begin(w);
    rein__body_block(b, w, g->items, g->items_len);
    if (b->mid && b->mid == g->items)
        b->hist = g->h;
    /* The close goes straight into the buffer: the writer has counted the block as one
     * value already. */
    if (!w->err && g->open)
        w->err = rein_buf_add(&b->buf, "]}", 2);
    rein_jw_arr_end(w);
    return w->err;
}
