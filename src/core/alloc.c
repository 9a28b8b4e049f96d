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

char *rein_asprintf(const char *fmt, ...)
{
    va_list ap;
    int n;
    char *p;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    p = rein_malloc((size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}
