/*
 * The allocation choke point (include/rein/core.h).
 *
 * Every allocation in rein, jansson's included, goes through the hook installed here, which is
 * what lets the tests fail the Nth allocation and check that each failure is handled.
 */
#include <rein/core.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct rein_allocator hooks = {malloc, realloc, free};

void rein_set_allocator(const struct rein_allocator *alloc)
{
    if (alloc && alloc->malloc_fn && alloc->realloc_fn && alloc->free_fn)
        hooks = *alloc;
    else
        hooks = (struct rein_allocator){malloc, realloc, free};
    json_set_alloc_funcs(hooks.malloc_fn, hooks.free_fn);
}

void *rein_malloc(size_t size)
{
    return hooks.malloc_fn(size ? size : 1);
}

void *rein_calloc(size_t n, size_t size)
{
    void *p;

    if (size && n > SIZE_MAX / size)
        return NULL;
    size_t total = n * size;

    p = hooks.malloc_fn(total ? total : 1);
    if (p)
        memset(p, 0, total);
    return p;
}

void *rein_realloc(void *ptr, size_t size)
{
    return hooks.realloc_fn(ptr, size ? size : 1);
}

void rein_free(void *ptr)
{
    if (ptr)
        hooks.free_fn(ptr);
}

char *rein_strndup(const char *s, size_t len)
{
    char *p;

    if (!s)
        return NULL;
    p = rein_malloc(len + 1);
    if (!p)
        return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *rein_strdup(const char *s)
{
    return s ? rein_strndup(s, strlen(s)) : NULL;
}

/* Formats once into a buffer on the stack, and a second time only when the text is longer:
 * most texts here are short (store keys, messages), and each formatting pass costs about a
 * thousand instructions (the Redis store makes about 70 such texts per turn, issue 25). */
char *rein_asprintf(const char *fmt, ...)
{
    char small[256];
    va_list ap;
    int n;
    char *p;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    p = rein_malloc((size_t)n + 1);
    if (!p)
        return NULL;
    if ((size_t)n < sizeof(small)) {
        memcpy(p, small, (size_t)n + 1);
        return p;
    }
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}
