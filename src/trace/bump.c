/*
 * The bump allocator of trace_int.h: a span's strings and arrays are many small pieces that
 * live and die together, so they are carved from blocks rather than allocated one by one.
 */
#include "trace_int.h"

#include <string.h>

#define BLOCK_MIN 4096

void rein__bump_init(struct rein__bump *b, void *first, size_t cap)
{
    memset(b, 0, sizeof(*b));
    b->first = first;
    b->first_cap = first ? cap : 0;
    b->p = first;
    b->left = b->first_cap;
}

void *rein__bump_alloc(struct rein__bump *b, size_t n)
{
    size_t need = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    void *out;

    if (need < n)
        return NULL; /* overflow */
    if (need > b->left) {
        /* Each new block at least as large as all before it: a few blocks per use. */
        size_t cap = need > BLOCK_MIN ? need : BLOCK_MIN;
        if (cap < b->total)
            cap = b->total;
        struct rein__bump_block *blk = rein_malloc(sizeof(*blk) + cap);
        if (!blk)
            return NULL;
        blk->cap = cap;
        b->total += cap;
        blk->next = b->blocks;
        b->blocks = blk;
        b->p = (char *)blk->data;
        b->left = cap;
    }
    out = b->p;
    b->p += need;
    b->left -= need;
    memset(out, 0, n);
    return out;
}

char *rein__bump_strndup(struct rein__bump *b, const char *s, size_t n)
{
    char *out = n + 1 > n ? rein__bump_alloc(b, n + 1) : NULL;

    if (out)
        memcpy(out, s, n); /* the terminator is zeroed already */
    return out;
}

void rein__bump_release(struct rein__bump *b)
{
    while (b->blocks) {
        struct rein__bump_block *blk = b->blocks;
        b->blocks = blk->next;
        rein_free(blk);
    }
    b->total = 0;
    b->p = b->first;
    b->left = b->first_cap;
}
