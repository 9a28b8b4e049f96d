/*
 * Encoded tool lists shared by a provider's requests (issue 25, decision 0052).
 *
 * An agent offers the same tools on every turn of every conversation, and each request used
 * to write the same list again: the schemas walked and escaped, 20,000 to 110,000
 * instructions per request. A list whose tools were all added as shared (their parameters
 * never change: rein_model_request_add_tool_shared) is encoded once per wire and variant and
 * kept in the provider; every request offering the same list reads that encoding. An entry is
 * immutable once made and refcounted: the cache holds one reference, each request reading it
 * another, so an entry evicted (the cache keeps the last TOOLS_KEEP lists used) stays valid
 * for the requests still sending it.
 *
 * The key is the wire, the variant, and each tool's name and description (compared as text)
 * and parameters (compared by identity: the entry holds a reference, so the address cannot
 * be reused while it lives, and a shared tool's parameters never change).
 */
#include "provider_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define TOOLS_KEEP 8

struct rein__tools_enc {
    atomic_size_t refs;
    const struct rein__wire *wire;
    unsigned variant;
    struct rein__tool *tools; /* the key: copies of the names and descriptions, references */
    size_t ntools;
    char *json; /* the encoded list */
    size_t len;
    char *dropped; /* what the encoder left out, as JSON text, or NULL when nothing */
};

struct rein__tools_cache {
    pthread_mutex_t mu;
    struct rein__tools_enc *e[TOOLS_KEEP]; /* most recently used first; NULL: free */
};

struct rein__tools_cache *rein__tools_cache_new(void)
{
    struct rein__tools_cache *c = rein_calloc(1, sizeof(*c));

    if (c)
        pthread_mutex_init(&c->mu, NULL);
    return c;
}

void rein__tools_enc_release(struct rein__tools_enc *e)
{
    if (!e || atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    for (size_t i = 0; i < e->ntools; i++) {
        rein_free(e->tools[i].name);
        rein_free(e->tools[i].description);
        json_decref(e->tools[i].parameters);
    }
    rein_free(e->tools);
    rein_free(e->json);
    rein_free(e->dropped);
    rein_free(e);
}

void rein__tools_cache_free(struct rein__tools_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < TOOLS_KEEP; i++)
        rein__tools_enc_release(c->e[i]);
    pthread_mutex_destroy(&c->mu);
    rein_free(c);
}

/* Moves entries 0..n-1 one place down, making room in front (the entry at n is written
 * over). */
static void shift_down(struct rein__tools_cache *c, size_t n)
{
    for (size_t i = n; i > 0; i--)
        c->e[i] = c->e[i - 1];
}

static bool same_text(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static bool matches(const struct rein__tools_enc *e, const rein_model_request *req,
                    const struct rein__wire *w, unsigned v)
{
    if (e->wire != w || e->variant != v || e->ntools != req->ntools)
        return false;
    for (size_t i = 0; i < e->ntools; i++) {
        if (e->tools[i].parameters != req->tools[i].parameters)
            return false;
    }
    for (size_t i = 0; i < e->ntools; i++) {
        if (!same_text(e->tools[i].name, req->tools[i].name) ||
            !same_text(e->tools[i].description, req->tools[i].description))
            return false;
    }
    return true;
}

/* The cached list for req on w (a new reference), or NULL. */
static struct rein__tools_enc *lookup(struct rein__tools_cache *c, const rein_model_request *req,
                                      const struct rein__wire *w, unsigned v)
{
    struct rein__tools_enc *hit = NULL;

    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < TOOLS_KEEP && c->e[i]; i++) {
        if (matches(c->e[i], req, w, v)) {
            hit = c->e[i];
            /* to the front: the least recently used goes first */
            shift_down(c, i);
            c->e[0] = hit;
            atomic_fetch_add(&hit->refs, 1);
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

/* Adds e (the cache takes a reference of its own) in front, evicting the least recently
 * used list when full. */
static void insert(struct rein__tools_cache *c, struct rein__tools_enc *e)
{
    struct rein__tools_enc *gone;

    atomic_fetch_add(&e->refs, 1);
    pthread_mutex_lock(&c->mu);
    gone = c->e[TOOLS_KEEP - 1];
    shift_down(c, TOOLS_KEEP - 1);
    c->e[0] = e;
    pthread_mutex_unlock(&c->mu);
    rein__tools_enc_release(gone);
}

/* A new entry (one reference) for req's tools encoded as out holds them; NULL when memory
 * is exhausted. */
static struct rein__tools_enc *entry_new(const rein_model_request *req, const struct rein__wire *w,
                                         unsigned v, struct rein_buf *out)
{
    struct rein__tools_enc *e = rein_calloc(1, sizeof(*e));
    bool ok = e && (e->tools = rein_calloc(req->ntools, sizeof(*e->tools))) != NULL;

    if (!e)
        return NULL;
    atomic_init(&e->refs, 1);
    e->wire = w;
    e->variant = v;
    for (size_t i = 0; ok && i < req->ntools; i++) {
        const struct rein__tool *t = &req->tools[i];
        e->tools[i].name = rein_strdup(t->name);
        e->tools[i].description = t->description ? rein_strdup(t->description) : NULL;
        e->tools[i].parameters = json_incref(t->parameters);
        e->ntools = i + 1;
        ok = e->tools[i].name && (!t->description || e->tools[i].description);
    }
    if (ok && json_array_size(req->dropped))
        ok = (e->dropped = rein_json_dumps(req->dropped)) != NULL;
    if (ok) {
        e->len = out->len;
        ok = (e->json = rein_buf_detach(out, NULL)) != NULL;
    }
    if (!ok) {
        rein__tools_enc_release(e);
        return NULL;
    }
    return e;
}

static bool all_shared(const rein_model_request *req)
{
    for (size_t i = 0; i < req->ntools; i++) {
        if (!req->tools[i].shared)
            return false;
    }
    return req->ntools > 0;
}

/* req's dropped list is the entry's. */
static rein_err take_dropped(rein_model_request *req, const struct rein__tools_enc *e)
{
    json_t *d;
    int bad;

    if (!e->dropped)
        return REIN_OK;
    d = rein_json_parse(e->dropped, strlen(e->dropped), 0, NULL);
    bad = !d || json_array_extend(req->dropped, d) != 0;
    json_decref(d);
    return bad ? REIN_ENOMEM : REIN_OK;
}

rein_err rein__tools_encode(rein_provider *p, rein_model_request *req, const struct rein__wire *w,
                            unsigned v)
{
    struct rein__tools_enc *e = NULL;
    rein_err rc;

    rein__tools_enc_release(req->shared);
    req->shared = NULL;
    rein_buf_reset(&req->tools_enc);
    if (!req->dropped && !(req->dropped = json_array()))
        return REIN_ENOMEM;
    json_array_clear(req->dropped);
    if (p->tools && all_shared(req) && (e = lookup(p->tools, req, w, v)) != NULL) {
        rc = take_dropped(req, e);
        if (rc) {
            rein__tools_enc_release(e);
            return rc;
        }
    } else {
        rc = w->encode_tools(p, req, &req->tools_enc);
        if (rc)
            return rc;
        /* Out of memory the list is still sent, from the request's own copy. */
        if (p->tools && all_shared(req) && (e = entry_new(req, w, v, &req->tools_enc)) != NULL)
            insert(p->tools, e);
    }
    req->shared = e;
    req->tools_json = e ? e->json : req->tools_enc.ptr;
    req->tools_len = e ? e->len : req->tools_enc.len;
    return REIN_OK;
}
