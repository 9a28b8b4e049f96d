/*
 * Leases (include/rein/store.h): a conversation's lock kept alive while its turn runs, and a
 * cancel request written by any instance turned into a rein_cancel trigger.
 *
 * One thread per store handle, the keeper, serves every lease of the handle: it sleeps until
 * the next lease is due (its renewal, lease_ms / 3 apart, or its next look for a cancel
 * request, poll_ms apart), does that lease's store calls, and sleeps again. A thread per lease
 * cost a thread start and a join, and their wake-ups, on every turn (issue 25); most turns end
 * before their lease is first due. The keeper starts with the handle's first lease and ends
 * when the handle is freed.
 */
#include "store/store_int.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#define WHERE "store"

/*
 * Invariants: a lease is on its keeper's list from a successful acquire until
 * rein_store_lease_stop() takes it off; the keeper touches it (outside mu) only as busy, and
 * stop waits until it is not. token never changes; cancel is triggered at most once (by the
 * keeper) and lives as long as the lease. next, renew_at, look_at and expires belong to the
 * keeper's mu.
 */
struct rein_store_lease {
    rein_store *store; /* borrowed */
    char conv_id[REIN_ID_MAX];
    char token[REIN_ID_MAX];
    int64_t lease_ms;
    rein_cancel *cancel; /* triggered on a cancel request or a lost lock */
    rein_store_lease *next;
    int64_t renew_at; /* monotonic ms: the next renewal */
    int64_t look_at;  /* the next look for a cancel request; INT64_MAX once cancelled */
    int64_t expires;  /* the lock's end, as far as this process knows */
    bool stopped;     /* off the list: the keeper no longer touches it */
};

/* Invariants: leases lists the leases kept; busy is the one whose store calls run now (mu not
 * held), else NULL; done is broadcast whenever busy is cleared. */
struct rein__lease_keeper {
    pthread_mutex_t mu;
    pthread_cond_t wake; /* a lease was added, or stopping */
    pthread_cond_t done; /* busy was cleared */
    rein_store_lease *leases;
    rein_store_lease *busy;
    bool stopping;
    pthread_t thread;
};

static int64_t due(const rein_store_lease *l)
{
    return l->renew_at < l->look_at ? l->renew_at : l->look_at;
}

/* One visit of a due lease (mu not held): renews it when its renewal is due, then looks for a
 * cancel request; what lease_main's loop did once per wake. Returns false once the lock is
 * lost (the lease then waits for its stop, unvisited). */
static bool visit(rein_store_lease *l, int64_t now)
{
    rein_store *s = l->store;
    rein_error err;
    bool requested = false;
    char reason[160];

    if (now >= l->renew_at) {
        rein_err rc = rein_store_lock_renew(s, l->conv_id, l->token, l->lease_ms, &err);
        if (rc == REIN_OK) {
            int64_t every = l->lease_ms / 3 > 0 ? l->lease_ms / 3 : 1;
            l->expires = now + l->lease_ms;
            l->renew_at = now + every;
        } else if (rc == REIN_ESTATE || now >= l->expires) {
            rein_log(REIN_LOG_WARN, WHERE, "lock of %s lost: %s", l->conv_id, err.msg);
            rein_cancel_trigger(l->cancel, "lock lost");
            return false;
        } else {
            /* A passing store failure: try again soon, while the lease still runs. */
            rein_log(REIN_LOG_WARN, WHERE, "renewing lock of %s: %s", l->conv_id, err.msg);
            l->renew_at = now + s->opts.poll_ms;
        }
    }
    if (!rein_cancel_is_set(l->cancel) &&
        rein_store_cancel_check(s, l->conv_id, l->token, &requested, reason, &err) == REIN_OK &&
        requested)
        rein_cancel_trigger(l->cancel, reason[0] ? reason : "cancelled");
    l->look_at = rein_cancel_is_set(l->cancel) ? INT64_MAX : now + s->opts.poll_ms;
    return true;
}

/* Waits on k->wake until deadline (monotonic ms; INT64_MAX: until woken). */
static void sleep_until(struct rein__lease_keeper *k, int64_t deadline)
{
    struct timespec ts;
    int64_t left;

    if (deadline == INT64_MAX) {
        pthread_cond_wait(&k->wake, &k->mu);
        return;
    }
    left = deadline - rein_now_ms();
    if (left <= 0)
        return;
    ts = rein__deadline_ts(CLOCK_MONOTONIC, left);
    pthread_cond_timedwait(&k->wake, &k->mu, &ts);
}

static void *keeper_main(void *arg)
{
    struct rein__lease_keeper *k = arg;

    pthread_mutex_lock(&k->mu);
    while (!k->stopping) {
        int64_t now = rein_now_ms(), next = INT64_MAX;
        rein_store_lease *l, *first = NULL;

        for (l = k->leases; l; l = l->next) {
            if (due(l) <= now) {
                first = l;
                break;
            }
            if (due(l) < next)
                next = due(l);
        }
        if (!first) {
            sleep_until(k, next);
            continue;
        }
        k->busy = first;
        pthread_mutex_unlock(&k->mu);
        if (!visit(first, now)) {
            first->renew_at = INT64_MAX;
            first->look_at = INT64_MAX;
        }
        pthread_mutex_lock(&k->mu);
        k->busy = NULL;
        pthread_cond_broadcast(&k->done);
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

/* s's keeper, started on first use. */
static struct rein__lease_keeper *keeper(rein_store *s, rein_error *err)
{
    static pthread_mutex_t start_mu = PTHREAD_MUTEX_INITIALIZER;
    struct rein__lease_keeper *k;
    pthread_condattr_t attr;
    int prc;

    pthread_mutex_lock(&start_mu);
    k = s->keeper;
    if (k)
        goto out;
    k = rein_calloc(1, sizeof(*k));
    if (!k) {
        rein_error_set(err, REIN_ENOMEM, "store: out of memory");
        goto out;
    }
    pthread_mutex_init(&k->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&k->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&k->done, NULL);
    prc = pthread_create(&k->thread, NULL, keeper_main, k);
    if (prc != 0) {
        rein_error_set(err, REIN_ENOMEM, "store: cannot start the lease thread: %s", strerror(prc));
        pthread_mutex_destroy(&k->mu);
        pthread_cond_destroy(&k->wake);
        pthread_cond_destroy(&k->done);
        rein_free(k);
        k = NULL;
        goto out;
    }
    s->keeper = k;
out:
    pthread_mutex_unlock(&start_mu);
    return k;
}

void rein__store_keeper_stop(rein_store *s)
{
    struct rein__lease_keeper *k = s->keeper;

    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    k->stopping = true;
    pthread_cond_signal(&k->wake);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->thread, NULL);
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->wake);
    pthread_cond_destroy(&k->done);
    rein_free(k);
    s->keeper = NULL;
}

rein_err rein_store_lease_acquire(rein_store *s, const char *conv_id, int64_t lease_ms,
                                  const char *state, rein_store_lease **out,
                                  struct rein_store_lock_info *held, rein_error *err)
{
    struct rein__lease_keeper *k;
    rein_store_lease *l;
    int64_t now;
    rein_err rc;

    *out = NULL;
    k = keeper(s, err);
    if (!k)
        return err ? err->code : REIN_ENOMEM;
    l = rein_calloc(1, sizeof(*l));
    if (!l)
        return rein_error_set(err, REIN_ENOMEM, "store: out of memory");
    l->store = s;
    l->lease_ms = lease_ms;
    l->cancel = rein_cancel_new();
    if (!l->cancel) {
        rein_free(l);
        return rein_error_set(err, REIN_ENOMEM, "store: out of memory");
    }
    rc = rein_store_lock_acquire(s, conv_id, lease_ms, state, l->token, held, err);
    if (rc != REIN_OK) {
        rein_cancel_unref(l->cancel);
        rein_free(l);
        return rc;
    }
    memcpy(l->conv_id, conv_id, strlen(conv_id) + 1);
    now = rein_now_ms();
    l->expires = now + lease_ms;
    l->renew_at = now + (lease_ms / 3 > 0 ? lease_ms / 3 : 1);
    l->look_at = now + s->opts.poll_ms;
    pthread_mutex_lock(&k->mu);
    l->next = k->leases;
    k->leases = l;
    /* The keeper sleeps until its earliest lease is due, or without end when it has none; a
     * new lease is due later than any other kept now, so it needs a wake only then. */
    if (!l->next)
        pthread_cond_signal(&k->wake);
    pthread_mutex_unlock(&k->mu);
    *out = l;
    return REIN_OK;
}

rein_cancel *rein_store_lease_cancel(rein_store_lease *l)
{
    return l->cancel;
}

const char *rein_store_lease_token(const rein_store_lease *l)
{
    return l->token;
}

rein_err rein_store_lease_set_state(rein_store_lease *l, const char *state, const char *tool,
                                    rein_error *err)
{
    return rein_store_lock_set_state(l->store, l->conv_id, l->token, state, tool, err);
}

void rein_store_lease_stop(rein_store_lease *l)
{
    struct rein__lease_keeper *k;

    if (!l || l->stopped)
        return;
    k = l->store->keeper;
    pthread_mutex_lock(&k->mu);
    while (k->busy == l)
        pthread_cond_wait(&k->done, &k->mu);
    for (rein_store_lease **p = &k->leases; *p; p = &(*p)->next) {
        if (*p == l) {
            *p = l->next;
            break;
        }
    }
    l->stopped = true;
    pthread_mutex_unlock(&k->mu);
}

void rein_store_lease_release(rein_store_lease *l)
{
    rein_error err;

    if (!l)
        return;
    rein_store_lease_stop(l);
    if (rein_store_lock_release(l->store, l->conv_id, l->token, &err) != REIN_OK &&
        err.code != REIN_ESTATE)
        rein_log(REIN_LOG_WARN, WHERE, "releasing lock of %s: %s", l->conv_id, err.msg);
    rein_cancel_unref(l->cancel);
    rein_free(l);
}
