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
/*
 * New pool for jobs that mostly wait (on a remote service): it starts with no worker, starts
 * one for each job that finds none free, up to max at once (past that, jobs queue), and a
 * worker with no job for idle_ms stops. NULL on failure (err says why; both must be above 0).
 */
REIN_EXTERN rein_pool *rein_pool_new_growing(unsigned max, unsigned idle_ms, rein_error *err);
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
