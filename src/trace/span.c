/*
 * Spans (include/rein/trace.h): ids and the current context for every span, and for the
 * recorded ones their name, times, attributes, events and status until export.
 *
 * A span that is not recorded costs a span id and two pointer stores, so the propagation of
 * context works with export off at almost no cost; everything else happens only when
 * rein__trace_sample() keeps the span (export on, sampler says yes).
 */
#include "trace_int.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t rein__trace_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The next attribute of a, grown in the span's store st (NULL: the heap, for the resource);
 * NULL when memory is exhausted. The caller counts it (a->n++) once its value is set. */
static struct rein__attr *attr_slot(struct rein__bump *st, struct rein__attrs *a, const char *key,
                                    enum attr_type type)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 12;
        struct rein__attr *v;
        if (st) {
            /* The old array stays in the store until the span is freed: a few hundred bytes
             * at most, against a malloc per attribute. */
            v = rein__bump_alloc(st, cap * sizeof(*v));
            if (v && a->n)
                memcpy(v, a->v, a->n * sizeof(*v));
        } else {
            v = rein_realloc(a->v, cap * sizeof(*v));
        }
        if (!v)
            return NULL;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n].key = key;
    a->v[a->n].type = type;
    return &a->v[a->n];
}

/* A string attribute whose copy lives in st (NULL: the heap). */
static bool attrs_add(struct rein__bump *st, struct rein__attrs *a, const char *key, const char *v,
                      size_t len)
{
    struct rein__attr *at = attr_slot(st, a, key, ATTR_STR);
    char *copy;

    if (!at)
        return false;
    copy = st ? rein__bump_strndup(st, v, len) : rein_malloc(len + 1);
    if (!copy)
        return false;
    if (!st) {
        memcpy(copy, v, len);
        copy[len] = '\0';
    }
    at->u.s = copy;
    at->u.slen = len;
    a->n++;
    return true;
}

bool rein__attrs_add_str(struct rein__attrs *a, const char *key, const char *v, size_t len)
{
    return attrs_add(NULL, a, key, v, len);
}

void rein__attrs_release(struct rein__attrs *a)
{
    for (size_t i = 0; i < a->n; i++) {
        struct rein__attr *at = &a->v[i];
        if (at->type == ATTR_STR)
            rein_free(at->u.s);
        if (at->type == ATTR_STRS) {
            for (size_t j = 0; j < at->u.strs.n; j++)
                rein_free(at->u.strs.v[j]);
            rein_free(at->u.strs.v);
        }
    }
    rein_free(a->v);
    memset(a, 0, sizeof(*a));
}

/*
 * Records are reused: a record is 1 KB and more, past the sizes glibc's per-thread cache
 * keeps, and it is allocated on the turn's thread and freed on the exporter's, so every
 * malloc and free went through the arena's slow path (about 1,000 instructions a span,
 * bench/trace.sh). The pool keeps at most POOL_MAX, one default batch.
 */
#define POOL_MAX 512

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rein__span_rec *pool;
static size_t pool_len;

void rein__span_recs_free(struct rein__span_rec *const *r, size_t n)
{
    struct rein__span_rec *spare = NULL;

    for (size_t i = 0; i < n; i++)
        if (r[i])
            rein__bump_release(&r[i]->store); /* everything the record holds */
    pthread_mutex_lock(&pool_mu);
    for (size_t i = 0; i < n; i++) {
        if (!r[i])
            continue;
        if (pool_len < POOL_MAX) {
            r[i]->pool_next = pool;
            pool = r[i];
            pool_len++;
        } else {
            r[i]->pool_next = spare;
            spare = r[i];
        }
    }
    pthread_mutex_unlock(&pool_mu);
    while (spare) {
        struct rein__span_rec *next = spare->pool_next;
        rein_free(spare);
        spare = next;
    }
}

void rein__span_rec_free(struct rein__span_rec *r)
{
    rein__span_recs_free(&r, 1);
}

void rein__span_pool_drain(void)
{
    pthread_mutex_lock(&pool_mu);
    struct rein__span_rec *r = pool;
    pool = NULL;
    pool_len = 0;
    pthread_mutex_unlock(&pool_mu);
    while (r) {
        struct rein__span_rec *next = r->pool_next;
        rein_free(r);
        r = next;
    }
}

static struct rein__span_rec *rec_alloc(void)
{
    struct rein__span_rec *r;

    pthread_mutex_lock(&pool_mu);
    r = pool;
    if (r) {
        pool = r->pool_next;
        pool_len--;
    }
    pthread_mutex_unlock(&pool_mu);
    return r ? r : rein_malloc(sizeof(*r) + REIN__SPAN_INLINE);
}

static char *store_str(struct rein__span_rec *r, const char *s)
{
    return rein__bump_strndup(&r->store, s, strlen(s));
}

/* One allocation for the record and, in its tail, what a usual span holds. */
static struct rein__span_rec *rec_new(const struct rein_span *s,
                                      const struct rein_trace_context *parent, const char *name,
                                      enum rein_span_kind kind)
{
    struct rein__span_rec *r = rec_alloc();

    if (!r)
        return NULL;
    memset(r, 0, sizeof(*r));
    rein__bump_init(&r->store, r->tail, REIN__SPAN_INLINE);
    memcpy(r->trace_id, s->ctx.trace_id, sizeof(r->trace_id));
    memcpy(r->span_id, s->ctx.span_id, sizeof(r->span_id));
    if (parent)
        memcpy(r->parent_id, parent->span_id, sizeof(r->parent_id));
    r->flags = s->ctx.flags;
    r->kind = kind;
    r->name = store_str(r, name ? name : "span");
    r->state = s->ctx.state[0] ? store_str(r, s->ctx.state) : NULL;
    if (!r->name || (s->ctx.state[0] && !r->state)) {
        rein__span_rec_free(r);
        return NULL;
    }
    r->start_ns = rein__trace_now_ns();
    return r;
}

void rein_span_start(struct rein_span *s, const char *name, enum rein_span_kind kind,
                     const char *trace_id)
{
    const struct rein_trace_context *parent = rein_trace_current();
    bool own_id = trace_id && rein_trace_id_is_valid(trace_id);

    /* A turn that names its trace continues only a context of that trace: a stale context on a
     * reused thread must not adopt it. */
    if (parent && own_id && strcmp(parent->trace_id, trace_id) != 0)
        parent = NULL;
    s->prev = rein_trace_current();
    s->rec = NULL;
    if (parent) {
        memcpy(s->ctx.trace_id, parent->trace_id, sizeof(s->ctx.trace_id));
        memcpy(s->ctx.state, parent->state, strlen(parent->state) + 1);
    } else {
        if (own_id)
            memcpy(s->ctx.trace_id, trace_id, REIN_TRACE_ID_LEN + 1);
        else
            rein_trace_id_new(s->ctx.trace_id);
        s->ctx.state[0] = '\0';
    }
    rein_span_id_new(s->ctx.span_id);
    /* Export off: the parent's decision travels on (W3C 3.2.2.6: pass the flags through). */
    s->ctx.flags = parent ? parent->flags : 0;
    if (rein_trace_enabled()) {
        bool keep = rein__trace_sample(parent, s->ctx.trace_id);
        s->ctx.flags =
            (uint8_t)((s->ctx.flags & ~REIN_TRACE_SAMPLED) | (keep ? REIN_TRACE_SAMPLED : 0));
        if (keep)
            s->rec = rec_new(s, parent, name, kind);
    }
    rein__trace_set_current(&s->ctx);
}

void rein_span_set_name(struct rein_span *s, const char *name)
{
    char *copy;

    if (!s || !s->rec || !name || !(copy = store_str(s->rec, name)))
        return;
    s->rec->name = copy;
}

bool rein_span_is_recording(const struct rein_span *s)
{
    return s && s->rec;
}

void rein_span_set_strn(struct rein_span *s, const char *key, const char *value, size_t len)
{
    if (s && s->rec && value)
        (void)attrs_add(&s->rec->store, &s->rec->attrs, key, value, len);
}

void rein_span_set_str(struct rein_span *s, const char *key, const char *value)
{
    if (value)
        rein_span_set_strn(s, key, value, strlen(value));
}

void rein_span_set_int(struct rein_span *s, const char *key, int64_t value)
{
    struct rein__attr *at =
        s && s->rec ? attr_slot(&s->rec->store, &s->rec->attrs, key, ATTR_INT) : NULL;

    if (at) {
        at->u.i = value;
        s->rec->attrs.n++;
    }
}

void rein_span_set_double(struct rein_span *s, const char *key, double value)
{
    struct rein__attr *at =
        s && s->rec ? attr_slot(&s->rec->store, &s->rec->attrs, key, ATTR_DOUBLE) : NULL;

    if (at) {
        at->u.d = value;
        s->rec->attrs.n++;
    }
}

void rein_span_set_bool(struct rein_span *s, const char *key, bool value)
{
    struct rein__attr *at =
        s && s->rec ? attr_slot(&s->rec->store, &s->rec->attrs, key, ATTR_BOOL) : NULL;

    if (at) {
        at->u.b = value;
        s->rec->attrs.n++;
    }
}

void rein_span_set_strs(struct rein_span *s, const char *key, const char *const *values, size_t n)
{
    struct rein__attr *at;
    char **v;

    if (!s || !s->rec || !values)
        return;
    v = rein__bump_alloc(&s->rec->store, (n ? n : 1) * sizeof(*v));
    at = v ? attr_slot(&s->rec->store, &s->rec->attrs, key, ATTR_STRS) : NULL;
    if (!at)
        return;
    for (size_t i = 0; i < n; i++)
        if (!(v[i] = store_str(s->rec, values[i] ? values[i] : "")))
            return;
    at->u.strs.v = v;
    at->u.strs.n = n;
    s->rec->attrs.n++;
}

void rein_span_event(struct rein_span *s, const char *name)
{
    struct rein__span_rec *r = s ? s->rec : NULL;

    if (!r || !name)
        return;
    if (r->nevents == r->ecap) {
        size_t cap = r->ecap ? r->ecap * 2 : 4;
        struct rein__span_event *v = rein__bump_alloc(&r->store, cap * sizeof(*v));
        if (!v)
            return;
        if (r->nevents)
            memcpy(v, r->events, r->nevents * sizeof(*v));
        r->events = v;
        r->ecap = cap;
    }
    struct rein__span_event *e = &r->events[r->nevents];
    memset(e, 0, sizeof(*e));
    if (!(e->name = store_str(r, name)))
        return;
    e->time_ns = rein__trace_now_ns();
    r->nevents++;
}

static struct rein__attrs *last_event_attrs(struct rein_span *s)
{
    return s && s->rec && s->rec->nevents ? &s->rec->events[s->rec->nevents - 1].attrs : NULL;
}

void rein_span_event_str(struct rein_span *s, const char *key, const char *value)
{
    struct rein__attrs *a = last_event_attrs(s);

    if (a && value)
        (void)attrs_add(&s->rec->store, a, key, value, strlen(value));
}

void rein_span_event_int(struct rein_span *s, const char *key, int64_t value)
{
    struct rein__attrs *a = last_event_attrs(s);
    struct rein__attr *at = a ? attr_slot(&s->rec->store, a, key, ATTR_INT) : NULL;

    if (at) {
        at->u.i = value;
        a->n++;
    }
}

void rein_span_event_double(struct rein_span *s, const char *key, double value)
{
    struct rein__attrs *a = last_event_attrs(s);
    struct rein__attr *at = a ? attr_slot(&s->rec->store, a, key, ATTR_DOUBLE) : NULL;

    if (at) {
        at->u.d = value;
        a->n++;
    }
}

void rein_span_event_bool(struct rein_span *s, const char *key, bool value)
{
    struct rein__attrs *a = last_event_attrs(s);
    struct rein__attr *at = a ? attr_slot(&s->rec->store, a, key, ATTR_BOOL) : NULL;

    if (at) {
        at->u.b = value;
        a->n++;
    }
}

void rein_span_fail(struct rein_span *s, const char *type, const char *message)
{
    if (!s || !s->rec)
        return;
    s->rec->failed = true;
    rein_span_set_str(s, "error.type", type ? type : "_OTHER");
    s->rec->status_msg = message ? store_str(s->rec, message) : NULL;
}

void rein_span_end(struct rein_span *s)
{
    if (!s)
        return;
    rein__trace_set_current(s->prev);
    if (s->rec) {
        s->rec->end_ns = rein__trace_now_ns();
        (void)rein__trace_enqueue(s->rec);
        s->rec = NULL;
    }
}
