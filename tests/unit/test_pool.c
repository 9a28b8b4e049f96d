/*
 * Unit tests for the worker pool (src/core/pool.c): batches run in parallel, every index
 * exactly once, and batches nested inside pool jobs finish even when every worker is busy.
 */
#include "test.h"

#include <stdatomic.h>

struct counts {
    atomic_int hits[64];
    atomic_int running, peak;
};

static void count_job(void *arg, size_t i)
{
    struct counts *c = arg;
    int now = atomic_fetch_add(&c->running, 1) + 1;
    int peak = atomic_load(&c->peak);

    while (now > peak && !atomic_compare_exchange_weak(&c->peak, &peak, now))
        ;
    rein_sleep_ms(20);
    atomic_fetch_add(&c->hits[i], 1);
    atomic_fetch_sub(&c->running, 1);
}

static void test_batch_runs_each_index_once_in_parallel(void **state)
{
    rein_pool *pool = rein_pool_new(4, NULL);
    struct counts c = {0};

    (void)state;
    assert_non_null(pool);
    rein_pool_run_batch(pool, 16, 0, count_job, &c);
    for (int i = 0; i < 16; i++)
        assert_int_equal(atomic_load(&c.hits[i]), 1);
    assert_true(atomic_load(&c.peak) > 1);
    rein_pool_free(pool);
}

static void test_batch_respects_max_parallel(void **state)
{
    rein_pool *pool = rein_pool_new(4, NULL);
    struct counts c = {0};

    (void)state;
    rein_pool_run_batch(pool, 12, 2, count_job, &c);
    assert_true(atomic_load(&c.peak) <= 2);
    for (int i = 0; i < 12; i++)
        assert_int_equal(atomic_load(&c.hits[i]), 1);
    rein_pool_free(pool);
}

struct nested {
    rein_pool *pool;
    atomic_int inner_done;
};

static void inner_job(void *arg, size_t i)
{
    struct nested *n = arg;

    (void)i;
    rein_sleep_ms(5);
    atomic_fetch_add(&n->inner_done, 1);
}

static void outer_job(void *arg, size_t i)
{
    struct nested *n = arg;

    (void)i;
    rein_pool_run_batch(n->pool, 4, 0, inner_job, n);
}

static void test_nested_batches_do_not_deadlock(void **state)
{
    struct nested n = {0};

    (void)state;
    /* Two workers, eight outer jobs each running an inner batch on the same pool. */
    n.pool = rein_pool_new(2, NULL);
    rein_pool_run_batch(n.pool, 8, 0, outer_job, &n);
    assert_int_equal(atomic_load(&n.inner_done), 32);
    rein_pool_free(n.pool);
}

static atomic_int submitted_runs;
static void submitted(void *arg)
{
    (void)arg;
    atomic_fetch_add(&submitted_runs, 1);
}

static void test_free_waits_for_queued_jobs(void **state)
{
    rein_pool *pool = rein_pool_new(1, NULL);

    (void)state;
    for (int i = 0; i < 50; i++)
        assert_rein_ok(rein_pool_submit(pool, submitted, NULL), NULL);
    rein_pool_free(pool);
    assert_int_equal(atomic_load(&submitted_runs), 50);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_batch_runs_each_index_once_in_parallel),
    cmocka_unit_test(test_batch_respects_max_parallel),
    cmocka_unit_test(test_nested_batches_do_not_deadlock),
    cmocka_unit_test(test_free_waits_for_queued_jobs),
};

REIN_TEST_MAIN(tests)
