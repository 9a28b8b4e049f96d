/*
 * rein/pool.h: a bounded pool of worker threads, fixed or growing with its load.
 *
 * One process serves many conversations without a thread per conversation: parallel tool
 * calls, plan steps and background work share a fixed set of workers. rein_pool_run_batch()
 * lets the calling thread take part in its own batch, so a job that itself runs a batch on the
 * same pool (a plan step whose turn runs parallel tools) can never deadlock the pool.
 *
 * Threading: all functions may be called from any thread; jobs run on pool threads or on the
 * thread that called rein_pool_run_batch().
 */
#ifndef REIN_POOL_H
#define REIN_POOL_H

#include <rein/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_pool rein_pool;

/* New pool with nthreads workers (0: the number of CPUs). NULL on failure (err says why). */
REIN_EXTERN rein_pool *rein_pool_new(unsigned nthreads, rein_error *err);
/* How a growing pool grows (rein_pool_new_growing). */
struct rein_pool_growth {
    unsigned core;     /* workers started at once for jobs that find none free */
    unsigned max;      /* workers at most (above 0, at least core) */
    unsigned stall_ms; /* past core, a job queued this long starts one more worker */
    unsigned idle_ms;  /* a worker with no job this long stops (above 0) */
};

/*
 * New pool for jobs that may wait a long while (on a remote service) or not at all. It starts
 * with no worker and starts one for each job that finds none free while fewer than core run;
 * past that, jobs queue and busy workers take them as they finish, unless a job waits
 * stall_ms: then one more worker starts for it, up to max, when the next job is submitted or
 * when rein_pool_unstall() runs (call it every so often: nothing else notices a stall while
 * no job comes). A worker with no job for idle_ms stops. NULL on failure (err says why).
 */
REIN_EXTERN rein_pool *rein_pool_new_growing(const struct rein_pool_growth *g, rein_error *err);
/* Starts a worker for each job of a growing pool queued stall_ms or longer (up to max);
 * returns how many it started. 0 for a fixed pool or NULL. */
REIN_EXTERN unsigned rein_pool_unstall(rein_pool *pool);
/* Waits for queued jobs to finish, then stops the workers. NULL is a no-op. */
REIN_EXTERN void rein_pool_free(rein_pool *pool);
/* Workers running or parked now (a growing pool's count moves). */
REIN_EXTERN unsigned rein_pool_size(const rein_pool *pool);
/* Queues fn(arg) to run on a worker. arg is borrowed until fn returns. */
REIN_EXTERN rein_err rein_pool_submit(rein_pool *pool, void (*fn)(void *arg), void *arg) REIN_WUR;
/*
 * Runs fn(arg, i) for i in [0, n) with at most max_parallel at once (0: pool size + 1) and
 * returns when all have finished. The caller runs jobs too. pool may be NULL: everything
 * runs on the calling thread, in order.
 */
REIN_EXTERN void rein_pool_run_batch(rein_pool *pool, size_t n, unsigned max_parallel,
                                     void (*fn)(void *arg, size_t i), void *arg);

#ifdef __cplusplus
}
#endif
#endif /* REIN_POOL_H */
