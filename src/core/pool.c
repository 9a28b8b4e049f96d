/*
 * A bounded worker pool (include/rein/pool.h).
 *
 * Jobs wait in a FIFO under one mutex. A worker with nothing to do parks on a semaphore of its
 * own, on a stack of parked workers; a job submitted while one is parked is handed to it
 * directly (the one that parked last, whose cache is warmest) and only that worker wakes. It
 * finds the job in its parking slot and runs it without taking the pool's lock again: with a
 * condition variable, every woken worker took the mutex once more, and at a gateway's rate the
 * submitting network thread and the workers queued on that mutex (futex waits and wakes on
 * about every request at 64 connections; decision 0066). So the queue holds jobs only while
 * no worker is parked.
 *
 * A growing pool (rein_pool_new_growing, decision 0082) starts with no worker. A job that
 * finds none parked starts one while fewer than the core count run; past that it queues, as
 * in a fixed pool, where a worker that finishes takes it without parking: jobs that keep the
 * cores busy are served by the core workers. Only a job that has waited in the queue for the
 * stall time starts one more worker, up to the bound: when the next job comes, or when
 * rein_pool_unstall() looks (the server's ticker). A worker that stays parked for the idle
 * time stops, and whoever next starts a worker (or frees the pool) joins it. Parked last,
 * first to be handed a job: so the workers that stop are the ones a lighter load no longer
 * reaches.
 *
 * A batch is a shared counter of job indices: helpers queued on the pool and the calling
 * thread all take indices from it until none are left, so the batch completes even when
 * every worker is busy elsewhere.
 */
#include <rein/pool.h>

#include "core/internal.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

struct job {
    struct job *next;
    void (*fn)(void *arg);
    void *arg;
    int64_t queued_ms; /* when it was queued with no worker parked (growing pools) */
};

/* A parked worker (on its own stack while it waits). */
struct park {
    struct park *next;
    sem_t sem;
    struct job *job; /* set under the pool's lock before sem is posted; NULL: stop */
};

/* A worker thread not yet joined: running, parked, or stopped after its idle time. */
struct thr {
    struct thr *next;
    rein_pool *pool;
    pthread_t tid;
    bool stopped; /* it left on its own (idle): join it */
};

struct rein_pool {
    pthread_mutex_t lock;
    struct job *head, *tail; /* jobs no worker has taken; empty while one is parked */
    struct park *parked;     /* the worker that parked last on top */
    bool stopping;
    unsigned nthreads; /* workers running or parked */
    unsigned core;     /* a growing pool starts a worker per job up to this many */
    unsigned max;      /* ...and for jobs queued stall_ms up to this many */
    unsigned stall_ms;
    unsigned idle_ms; /* a growing pool's worker parked this long stops (0: fixed pool) */
    struct thr *threads;
};

/* Takes me off the parked stack if it is still there (under the lock). */
static bool unpark(rein_pool *pool, struct park *me)
{
    for (struct park **pp = &pool->parked; *pp; pp = &(*pp)->next) {
        if (*pp == me) {
            *pp = me->next;
            return true;
        }
    }
    return false;
}

/*
 * Waits on the parking slot. A growing pool's worker gives up after the idle time: false when
 * it has left the pool (it was still parked, so no job can reach it any more).
 */
static bool wait_parked(rein_pool *pool, struct thr *t, struct park *me)
{
    struct timespec until;

    if (!pool->idle_ms) {
        while (sem_wait(&me->sem) != 0 && errno == EINTR)
            ;
        return true;
    }
    /* sem_timedwait, not sem_clockwait on the monotonic clock: ThreadSanitizer sees the post
     * it waits for only through the calls it knows. A wall clock set back only delays a stop. */
    until = rein__deadline_ts(CLOCK_REALTIME, pool->idle_ms);
    for (;;) {
        if (sem_timedwait(&me->sem, &until) == 0)
            return true;
        if (errno == EINTR)
            continue;
        pthread_mutex_lock(&pool->lock);
        if (!unpark(pool, me)) {
            /* handed a job (or told to stop) as the time ran out: its post is on the way */
            pthread_mutex_unlock(&pool->lock);
            while (sem_wait(&me->sem) != 0 && errno == EINTR)
                ;
            return true;
        }
        pool->nthreads--;
        t->stopped = true;
        pthread_mutex_unlock(&pool->lock);
        return false;
    }
}

static void *worker(void *arg)
{
    struct thr *t = arg;
    rein_pool *pool = t->pool;
    struct park me = {.job = NULL};

    sem_init(&me.sem, 0, 0);
    for (;;) {
        struct job *j;
        bool park = false;

        pthread_mutex_lock(&pool->lock);
        j = pool->head;
        if (j) {
            pool->head = j->next;
            if (!pool->head)
                pool->tail = NULL;
        } else if (!pool->stopping) {
            me.job = NULL;
            me.next = pool->parked;
            pool->parked = &me;
            park = true;
        }
        pthread_mutex_unlock(&pool->lock);
        if (park) {
            if (!wait_parked(pool, t, &me))
                break;
            j = me.job;
        }
        if (!j)
            break;
        j->fn(j->arg);
        rein_free(j);
    }
    sem_destroy(&me.sem);
    return NULL;
}

/* Starts one more worker (under the lock, or before anything else can see the pool). */
static rein_err start_worker(rein_pool *pool)
{
    struct thr *t = rein_calloc(1, sizeof(*t));

    if (!t)
        return REIN_ENOMEM;
    t->pool = pool;
    if (pthread_create(&t->tid, NULL, worker, t) != 0) {
        rein_free(t);
        return REIN_EIO;
    }
    t->next = pool->threads;
    pool->threads = t;
    pool->nthreads++;
    return REIN_OK;
}

/* Joins the workers that stopped on their own (under the lock: they no longer take it), or
 * all of them once the pool is stopping. */
static void join_workers(rein_pool *pool, bool all)
{
    struct thr **tp = &pool->threads;

    while (*tp) {
        struct thr *t = *tp;
        if (all || t->stopped) {
            *tp = t->next;
            pthread_join(t->tid, NULL);
            rein_free(t);
        } else {
            tp = &t->next;
        }
    }
}

static rein_pool *pool_alloc(rein_error *err)
{
    rein_pool *pool = rein_calloc(1, sizeof(*pool));

    if (!pool) {
        rein_error_set(err, REIN_ENOMEM, "out of memory creating a worker pool");
        return NULL;
    }
    pthread_mutex_init(&pool->lock, NULL);
    return pool;
}

rein_pool *rein_pool_new(unsigned nthreads, rein_error *err)
{
    rein_pool *pool;
    long ncpu;

    if (nthreads == 0) {
        ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = ncpu > 0 ? (unsigned)ncpu : 2;
    }
    if (!(pool = pool_alloc(err)))
        return NULL;
    pool->max = nthreads;
    for (unsigned i = 0; i < nthreads; i++) {
        if (start_worker(pool) != REIN_OK) {
            rein_error_set(err, REIN_EIO, "could only start %u of %u pool threads", i, nthreads);
            rein_pool_free(pool);
            return NULL;
        }
    }
    return pool;
}

rein_pool *rein_pool_new_growing(const struct rein_pool_growth *g, rein_error *err)
{
    rein_pool *pool;

    if (!g || g->max == 0 || g->idle_ms == 0 || g->core > g->max) {
        rein_error_set(err, REIN_EINVAL,
                       "a growing pool needs a bound above 0, a core count within it and an "
                       "idle time above 0");
        return NULL;
    }
    if (!(pool = pool_alloc(err)))
        return NULL;
    pool->core = g->core;
    pool->max = g->max;
    pool->stall_ms = g->stall_ms;
    pool->idle_ms = g->idle_ms;
    return pool;
}

/* Whether a queued job has waited long enough for one more worker (under the lock). */
static bool stalled(const rein_pool *pool, const struct job *j, int64_t now)
{
    return j && now - j->queued_ms >= (int64_t)pool->stall_ms;
}

/*
 * A growing pool's answer to a job that found no worker parked (under the lock): one more
 * worker while fewer than core run, or when the oldest queued job has stalled. False only
 * when none could start and none runs.
 */
static bool grow(rein_pool *pool, int64_t now)
{
    if (pool->nthreads >= pool->max ||
        (pool->nthreads >= pool->core && !stalled(pool, pool->head, now)))
        return true;
    join_workers(pool, false);
    return start_worker(pool) == REIN_OK || pool->nthreads > 0;
}

unsigned rein_pool_unstall(rein_pool *pool)
{
    unsigned started = 0, waiting = 0;
    int64_t now = rein_now_ms();

    if (!pool || !pool->idle_ms)
        return 0;
    pthread_mutex_lock(&pool->lock);
    /* one worker per job that has waited the stall time, oldest first */
    for (const struct job *j = pool->head; stalled(pool, j, now); j = j->next)
        waiting++;
    if (waiting && !pool->stopping)
        join_workers(pool, false);
    while (started < waiting && !pool->stopping && pool->nthreads < pool->max &&
           start_worker(pool) == REIN_OK)
        started++;
    pthread_mutex_unlock(&pool->lock);
    return started;
}

void rein_pool_free(rein_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    /* Parked workers wake with no job and stop; busy ones run what is queued, then stop. */
    while (pool->parked) {
        struct park *w = pool->parked;
        pool->parked = w->next;
        w->job = NULL;
        sem_post(&w->sem);
    }
    pthread_mutex_unlock(&pool->lock);
    /* No worker starts once stopping is set, and none takes the lock once it is joined. */
    join_workers(pool, true);
    pthread_mutex_destroy(&pool->lock);
    rein_free(pool);
}

unsigned rein_pool_size(const rein_pool *pool)
{
    unsigned n;

    if (!pool)
        return 0;
    /* a growing pool's count moves; the lock is the pool's own, not part of what it holds */
    pthread_mutex_lock((pthread_mutex_t *)&pool->lock);
    n = pool->nthreads;
    pthread_mutex_unlock((pthread_mutex_t *)&pool->lock);
    return n;
}

rein_err rein_pool_submit(rein_pool *pool, void (*fn)(void *arg), void *arg)
{
    struct job *j = rein_calloc(1, sizeof(*j));
    struct park *w;

    if (!j)
        return REIN_ENOMEM;
    j->fn = fn;
    j->arg = arg;
    pthread_mutex_lock(&pool->lock);
    if (pool->stopping) {
        pthread_mutex_unlock(&pool->lock);
        rein_free(j);
        return REIN_ESTATE;
    }
    w = pool->parked;
    if (w) {
        pool->parked = w->next;
        w->job = j;
    } else {
        if (pool->tail)
            pool->tail->next = j;
        else
            pool->head = j;
        pool->tail = j;
        if (pool->idle_ms) {
            j->queued_ms = rein_now_ms();
            if (!grow(pool, j->queued_ms) && pool->head == j) {
                /* nothing would ever run it */
                pool->head = pool->tail = NULL;
                pthread_mutex_unlock(&pool->lock);
                rein_free(j);
                return REIN_EIO;
            }
        }
    }
    pthread_mutex_unlock(&pool->lock);
    /* Posted after the unlock: the woken worker does not need the lock, and the submitter
     * holds it no longer than the hand-over. w waits for this post on its own stack, so it
     * is still there; rein_pool_free never runs alongside a submit (it frees the pool). */
    if (w)
        sem_post(&w->sem);
    return REIN_OK;
}

struct batch {
    void (*fn)(void *arg, size_t i);
    void *arg;
    size_t n;
    atomic_size_t next;
    size_t done;   /* under lock */
    unsigned refs; /* helpers still holding the batch, under lock */
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

static void batch_work(struct batch *b)
{
    size_t i, ran = 0;

    while ((i = atomic_fetch_add(&b->next, 1)) < b->n) {
        b->fn(b->arg, i);
        ran++;
    }
    pthread_mutex_lock(&b->lock);
    b->done += ran;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

static void batch_helper(void *arg)
{
    struct batch *b = arg;

    batch_work(b);
    pthread_mutex_lock(&b->lock);
    b->refs--;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

/*
 * Takes back helpers of b that no worker has started. Without this, a caller whose workers
 * are all busy (each waiting on a batch of its own) would wait for helpers that never run.
 */
static void unqueue_helpers(rein_pool *pool, struct batch *b)
{
    struct job *prev = NULL, *j, *next;
    unsigned removed = 0;

    pthread_mutex_lock(&pool->lock);
    for (j = pool->head; j; j = next) {
        next = j->next;
        if (j->fn == batch_helper && j->arg == b) {
            if (prev)
                prev->next = next;
            else
                pool->head = next;
            if (pool->tail == j)
                pool->tail = prev;
            rein_free(j);
            removed++;
        } else {
            prev = j;
        }
    }
    pthread_mutex_unlock(&pool->lock);
    pthread_mutex_lock(&b->lock);
    b->refs -= removed;
    pthread_mutex_unlock(&b->lock);
}

void rein_pool_run_batch(rein_pool *pool, size_t n, unsigned max_parallel,
                         void (*fn)(void *arg, size_t i), void *arg)
{
    struct batch b = {.fn = fn, .arg = arg, .n = n};
    size_t helpers;

    if (n == 0)
        return;
    if (!pool || n == 1 || max_parallel == 1) {
        for (size_t i = 0; i < n; i++)
            fn(arg, i);
        return;
    }
    atomic_init(&b.next, 0);
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.cond, NULL);
    helpers = max_parallel ? max_parallel - 1 : pool->max;
    if (helpers > n - 1)
        helpers = n - 1;
    for (size_t h = 0; h < helpers; h++) {
        pthread_mutex_lock(&b.lock);
        b.refs++;
        pthread_mutex_unlock(&b.lock);
        if (rein_pool_submit(pool, batch_helper, &b)) {
            pthread_mutex_lock(&b.lock);
            b.refs--;
            pthread_mutex_unlock(&b.lock);
            break; /* the caller runs what the helpers would have */
        }
    }
    batch_work(&b);
    unqueue_helpers(pool, &b);
    pthread_mutex_lock(&b.lock);
    /* b lives on this stack: wait for every job and for every helper to let go of it. */
    while (b.done < n || b.refs > 0)
        pthread_cond_wait(&b.cond, &b.lock);
    pthread_mutex_unlock(&b.lock);
    pthread_mutex_destroy(&b.lock);
    pthread_cond_destroy(&b.cond);
}
