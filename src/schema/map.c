/*
 * Small open-addressing hash maps for the schema compiler (src/schema/schema_int.h): URIs to
 * resources and jansson values to compiled nodes. Keys are borrowed; only the slot array is
 * owned. Linear probing, grown to keep the load under one half.
 */
#include "schema/schema_int.h"

#include <assert.h>
#include <string.h>

size_t rein__schema_hash(const char *s, size_t len)
{
    return (size_t)rein__fnv1a64(REIN_FNV64_INIT, s, len);
}

static size_t key_hash(const struct smap *m, const void *key)
{
    if (m->ptr_keys) {
        uint64_t x = (uint64_t)(uintptr_t)key;
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
        return (size_t)x;
    }
    return rein__schema_hash(key, strlen(key));
}

static bool key_eq(const struct smap *m, const struct smap_ent *e, const void *key, size_t h)
{
    if (m->ptr_keys)
        return e->key == key;
    return e->hash == h && strcmp(e->key, key) == 0;
}

void rein__smap_init(struct smap *m, bool ptr_keys)
{
    memset(m, 0, sizeof(*m));
    m->ptr_keys = ptr_keys;
}

void rein__smap_release(struct smap *m)
{
    rein_free(m->e);
    m->e = NULL;
    m->cap = m->n = 0;
}

static rein_err grow(struct smap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 16;
    struct smap_ent *ne = rein_calloc(ncap, sizeof(*ne));

    if (!ne)
        return REIN_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->e[i].key)
            continue;
        size_t j = m->e[i].hash & (ncap - 1);
        while (ne[j].key)
            j = (j + 1) & (ncap - 1);
        ne[j] = m->e[i];
    }
    rein_free(m->e);
    m->e = ne;
    m->cap = ncap;
    return REIN_OK;
}

rein_err rein__smap_put(struct smap *m, const void *key, void *val)
{
    size_t h = key_hash(m, key);

    if ((m->n + 1) * 2 > m->cap && grow(m))
        return REIN_ENOMEM;
    size_t j = h & (m->cap - 1);
    while (m->e[j].key) {
        if (key_eq(m, &m->e[j], key, h)) {
            m->e[j].val = val;
            return REIN_OK;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->e[j].key = key;
    m->e[j].hash = h;
    m->e[j].val = val;
    m->n++;
    /* schema_int.h's invariant: probes always reach an empty slot. */
    assert((m->cap & (m->cap - 1)) == 0 && 2 * m->n <= m->cap);
    return REIN_OK;
}

void *rein__smap_get(const struct smap *m, const void *key)
{
    if (!m->cap)
        return NULL;
    size_t h = key_hash(m, key);
    size_t j = h & (m->cap - 1);
    while (m->e[j].key) {
        if (key_eq(m, &m->e[j], key, h))
            return m->e[j].val;
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}
