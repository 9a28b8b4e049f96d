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
    b->at = b->mid_len = b->copied = 0;
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

/* Adds block bytes c->done..len-1 to the cache's state, marking each step it completes. */
static void sha_extend(struct rein__sha_cache *c, const char *block, size_t len)
{
    while (c->done < len) {
        size_t next = (c->done / REIN__SHA_STEP + 1) * REIN__SHA_STEP;
        size_t to = next < len ? next : len;
        rein__sha256_add(&c->state, block + c->done, to - c->done);
        c->done = to;
        if (to == next && c->nmarks == next / REIN__SHA_STEP) {
            if (c->nmarks == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 8;
                struct rein__sha256 *v = rein_realloc(c->marks, cap * sizeof(*v));
                if (!v)
                    continue; /* no mark: a cut below this point hashes more */
                c->marks = v;
                c->cap = cap;
            }
            c->marks[c->nmarks++] = c->state;
        }
    }
}

void rein__body_sha256_hex(const struct rein__body *b, char out[65])
{
    /* The history's block, spliced or copied, and the tail after it. */
    const char *blk = b->mid ? b->mid : b->copied ? b->buf.ptr + b->at : NULL;
    size_t blk_len = b->mid ? b->mid_len : b->copied;
    struct rein__sha_cache *c = blk && b->hist ? rein__history_sha_cache(b->hist) : NULL;
    struct rein__sha256 s;
    struct span sp[3];
    size_t k = pieces(b, sp);

    if (!b->mid && c)
        sp[2] = (struct span){blk + blk_len, b->buf.len - b->at - blk_len};
    if (!c || b->at == 0 || b->at > sizeof(c->head)) {
        rein__sha256_init(&s);
        for (size_t i = 0; i < k; i++)
            rein__sha256_add(&s, sp[i].p, sp[i].len);
        rein__sha256_hex(&s, out, 64);
        return;
    }
    /* Another head: start again from it (mark 0 is the head alone). */
    if (c->head_len != b->at || memcmp(c->head, b->buf.ptr, b->at) != 0 || !c->nmarks) {
        rein__sha256_init(&c->state);
        rein__sha256_add(&c->state, b->buf.ptr, b->at);
        memcpy(c->head, b->buf.ptr, b->at);
        c->head_len = b->at;
        c->done = 0;
        c->nmarks = 0;
        c->upto = 0;
        if (c->cap || (c->marks = rein_malloc(8 * sizeof(*c->marks))) != NULL) {
            c->cap = c->cap ? c->cap : 8;
            c->marks[c->nmarks++] = c->state;
        }
        if (!c->nmarks) { /* out of memory: the whole body, this once */
            c->head_len = 0;
            rein__sha256_init(&s);
            for (size_t i = 0; i < k; i++)
                rein__sha256_add(&s, sp[i].p, sp[i].len);
            rein__sha256_hex(&s, out, 64);
            return;
        }
    }
    /* Bytes past upto changed since they were hashed: back to the last mark before them. */
    if (c->done > c->upto || c->done > blk_len) {
        size_t m = (c->upto < blk_len ? c->upto : blk_len) / REIN__SHA_STEP;
        if (m >= c->nmarks)
            m = c->nmarks - 1;
        c->state = c->marks[m];
        c->done = m * REIN__SHA_STEP;
        c->nmarks = m + 1;
    }
    sha_extend(c, blk, blk_len);
    c->upto = blk_len;
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
    if (b->mid && b->mid == g->items) {
        b->hist = g->h;
    } else if (!b->mid && !w->err && g->items_len && b->buf.len >= g->items_len) {
        /* copied: it ends the buffer */
        b->hist = g->h;
        b->at = b->buf.len - g->items_len;
        b->copied = g->items_len;
    }
    /* The close goes straight into the buffer: the writer has counted the block as one
     * value already. */
    if (!w->err && g->open)
        w->err = rein_buf_add(&b->buf, "]}", 2);
    rein_jw_arr_end(w);
    return w->err;
}

rein_err rein__body_groups_start(rein_provider *p, const rein_model_request *req, rein_history *h,
                                 const struct rein__wire *wire, struct rein__body *body,
                                 struct rein__groups *g, struct rein_jw *w, rein_error *err)
{
    rein_err rc = rein__history_groups(h, p, wire, g);

    /* The block is spliced when large; the rest is copied. */
    if (!rc)
        rc = rein_buf_grow(&body->buf, (g->items_len < REIN__SPLICE_MIN ? g->items_len : 0) +
                                           g->system_len + req->tools_len + BODY_SLACK);
    if (rc)
        return rein_error_set(err, rc, "encoding the history: %s", rein_strerror(rc));
    rein_jw_init(w, &body->buf);
    rein_jw_obj_begin(w);
    return REIN_OK;
}

void rein__jw_system_list(struct rein_jw *w, const struct rein__groups *g)
{
    rein_jw_arr_begin(w);
    rein_jw_raw(w, g->system, g->system_len);
    rein_jw_arr_end(w);
}
