/*
 * Arenas for per-request and per-turn memory (include/rein/arena.h).
 *
 * Blocks are chained; a request larger than a block gets a block of its own, so one large
 * allocation does not waste the rest of the current block.
 */
#include <rein/arena.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ARENA_ALIGN ((size_t)16)

struct block {
    struct block *next;
    size_t size;
    size_t used;
    max_align_t data[];
};

struct cleanup {
    struct cleanup *next;
    void (*fn)(void *data);
    void *data;
};

struct rein_arena {
    struct block *head;
    struct cleanup *cleanups;
    size_t block_size;
    size_t handed_out;
};

rein_arena *rein_arena_new(size_t block_size)
{
    rein_arena *a = rein_calloc(1, sizeof(*a));

    if (!a)
        return NULL;
    a->block_size = block_size ? block_size : 16384;
    return a;
}

void rein_arena_free(rein_arena *a)
{
    if (!a)
        return;
    while (a->cleanups) {
        struct cleanup *c = a->cleanups;
        a->cleanups = c->next;
        c->fn(c->data);
    }
    while (a->head) {
        struct block *b = a->head;
        a->head = b->next;
        rein_free(b);
    }
    rein_free(a);
}

static struct block *new_block(rein_arena *a, size_t min)
{
    size_t size = min > a->block_size ? min : a->block_size;
    struct block *b;

    if (size > SIZE_MAX - sizeof(*b))
        return NULL;
    b = rein_malloc(sizeof(*b) + size);
    if (!b)
        return NULL;
    b->size = size;
    b->used = 0;
    if (a->head && min > a->block_size) {
        /* An oversized block goes behind the current one, which may still have room. */
        b->next = a->head->next;
        a->head->next = b;
    } else {
        b->next = a->head;
        a->head = b;
    }
    return b;
}

void *rein_arena_alloc(rein_arena *a, size_t size)
{
    struct block *b = a->head;
    size_t need;

    if (size > SIZE_MAX - ARENA_ALIGN)
        return NULL;
    need = (size + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
    if (!need)
        need = ARENA_ALIGN;
    if (!b || b->size - b->used < need) {
        b = new_block(a, need);
        if (!b)
            return NULL;
    }
    void *p = (char *)b->data + b->used;
    b->used += need;
    a->handed_out += size;
    return p;
}

void *rein_arena_calloc(rein_arena *a, size_t n, size_t size)
{
    void *p;

    if (size && n > SIZE_MAX / size)
        return NULL;
    p = rein_arena_alloc(a, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

char *rein_arena_strndup(rein_arena *a, const char *s, size_t len)
{
    char *p;

    if (!s)
        return NULL;
    p = rein_arena_alloc(a, len + 1);
    if (!p)
        return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *rein_arena_strdup(rein_arena *a, const char *s)
{
    return s ? rein_arena_strndup(a, s, strlen(s)) : NULL;
}

char *rein_arena_printf(rein_arena *a, const char *fmt, ...)
{
    va_list ap;
    int n;
    char *p;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    p = rein_arena_alloc(a, (size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

rein_err rein_arena_on_free(rein_arena *a, void (*fn)(void *data), void *data)
{
    struct cleanup *c = rein_arena_alloc(a, sizeof(*c));

    if (!c)
        return REIN_ENOMEM;
    c->fn = fn;
    c->data = data;
    c->next = a->cleanups;
    a->cleanups = c;
    return REIN_OK;
}

size_t rein_arena_used(const rein_arena *a)
{
    return a->handed_out;
}
