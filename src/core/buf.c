/*
 * The bounded byte buffer (include/rein/buf.h).
 *
 * Modelled on git's strbuf and curl's dynbuf: ptr always points at a NUL-terminated string
 * (a shared empty one before the first allocation), and growth stops at max so input from
 * the network cannot grow without limit.
 */
#include <rein/buf.h>

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* Never written: a buffer with alloc == 0 only ever reads it. */
static char empty_slot[1];

/* The invariants of buf.h, checked after every change (Debug builds). */
static inline void check(const struct rein_buf *b)
{
    assert(b->ptr != NULL && b->ptr[b->len] == '\0');
    assert(b->alloc == 0 ? b->ptr == empty_slot && b->len == 0 : b->len < b->alloc);
    assert(b->len + 1 <= b->max);
    (void)b;
}

void rein_buf_init(struct rein_buf *b, size_t max)
{
    b->len = 0;
    b->alloc = 0;
    b->max = max ? max : REIN_BUF_DEFAULT_MAX;
    b->ptr = empty_slot;
}

void rein_buf_release(struct rein_buf *b)
{
    if (b->alloc)
        rein_free(b->ptr);
    rein_buf_init(b, b->max);
}

rein_err rein_buf_grow(struct rein_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;

    if (extra > b->max || b->len + 1 > b->max - extra)
        return REIN_ETOOBIG;
    need = b->len + extra + 1;
    if (need <= b->alloc)
        return REIN_OK;
    cap = b->alloc ? b->alloc : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > b->max)
        cap = b->max;
    p = rein_realloc(b->alloc ? b->ptr : NULL, cap);
    if (!p)
        return REIN_ENOMEM;
    if (!b->alloc)
        p[0] = '\0';
    b->ptr = p;
    b->alloc = cap;
    return REIN_OK;
}

rein_err rein_buf_add(struct rein_buf *b, const void *data, size_t len)
{
    if (len == 0)
        return REIN_OK;
    /* Most calls (a few hundred per gateway request) find room and skip the growth checks;
     * alloc never exceeds max, and with alloc 0 the test always asks for growth. */
    if (len >= b->alloc - b->len) {
        rein_err rc = rein_buf_grow(b, len);
        if (rc)
            return rc;
    }
    memcpy(b->ptr + b->len, data, len);
    b->len += len;
    b->ptr[b->len] = '\0';
    check(b);
    return REIN_OK;
}

rein_err rein_buf_adds(struct rein_buf *b, const char *s)
{
    return rein_buf_add(b, s, strlen(s));
}

rein_err rein_buf_addch(struct rein_buf *b, char c)
{
    if (b->len + 1 < b->alloc) { /* room: no call, no copy */
        b->ptr[b->len++] = c;
        b->ptr[b->len] = '\0';
        check(b);
        return REIN_OK;
    }
    return rein_buf_add(b, &c, 1);
}

rein_err rein_buf_addvf(struct rein_buf *b, const char *fmt, va_list ap)
{
    va_list cp;
    int n;
    rein_err rc;

    va_copy(cp, ap);
    n = vsnprintf(b->alloc ? b->ptr + b->len : NULL, b->alloc ? b->alloc - b->len : 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return REIN_EINVAL;
    if (b->alloc && (size_t)n < b->alloc - b->len) {
        b->len += (size_t)n;
        check(b);
        return REIN_OK;
    }
    rc = rein_buf_grow(b, (size_t)n);
    if (rc) {
        if (b->alloc)
            b->ptr[b->len] = '\0';
        return rc;
    }
    vsnprintf(b->ptr + b->len, b->alloc - b->len, fmt, ap);
    b->len += (size_t)n;
    check(b);
    return REIN_OK;
}

rein_err rein_buf_addf(struct rein_buf *b, const char *fmt, ...)
{
    va_list ap;
    rein_err rc;

    va_start(ap, fmt);
    rc = rein_buf_addvf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void rein_buf_truncate(struct rein_buf *b, size_t n)
{
    if (n >= b->len)
        return;
    b->len = n;
    b->ptr[n] = '\0';
    check(b);
}

void rein_buf_reset(struct rein_buf *b)
{
    rein_buf_truncate(b, 0);
}

char *rein_buf_detach(struct rein_buf *b, size_t *len_out)
{
    char *p;

    if (!b->alloc && rein_buf_grow(b, 0))
        return NULL;
    p = b->ptr;
    if (len_out)
        *len_out = b->len;
    b->alloc = 0;
    rein_buf_init(b, b->max);
    return p;
}
