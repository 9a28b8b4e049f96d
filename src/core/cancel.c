/*
 * Cancellation handles (include/rein/cancel.h).
 *
 * A handle is an eventfd plus a list of callbacks under a mutex. Triggering writes the
 * eventfd (waking every poll() that includes it) and runs the callbacks outside the lock.
 * The eventfd is made the first time someone asks for it (rein_cancel_fd, rein_cancel_wait):
 * most handles (one per HTTP request, one per call) are never polled, and two system calls
 * per handle were a tenth of a small request's cost in `rein serve`.
 * rein_cancel_off() waits for a callback that is running on another thread, so the caller may
 * free what the callback touches as soon as it returns.
 */
#include <rein/cancel.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct hook {
    struct hook *next;
    int id;
    rein_cancel_fn fn;
    void *userdata;
};

struct rein_cancel {
    atomic_int refs;
    atomic_bool set;
    int fd; /* -1 until rein_cancel_fd() makes it (under lock) */
    int next_id;
    int running_id; /* id of the callback being run by rein_cancel_trigger(), or 0 */
    pthread_t runner;
    pthread_mutex_t lock;
    pthread_cond_t done;
    struct hook *hooks;
    rein_cancel *parent;
    int parent_hook;
    char reason[160];
};

rein_cancel *rein_cancel_new(void)
{
    rein_cancel *c = rein_calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->fd = -1;
    atomic_init(&c->refs, 1);
    atomic_init(&c->set, false);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->done, NULL);
    return c;
}

static void trigger_from_parent(void *userdata)
{
    rein_cancel *child = userdata;

    rein_cancel_trigger(child, rein_cancel_reason(child->parent));
}

rein_cancel *rein_cancel_new_child(rein_cancel *parent)
{
    rein_cancel *c = rein_cancel_new();
    int id;

    if (!c || !parent)
        return c;
    c->parent = rein_cancel_ref(parent);
    id = rein_cancel_on(parent, trigger_from_parent, c);
    if (id < 0) {
        rein_cancel_unref(c);
        return NULL;
    }
    c->parent_hook = id;
    return c;
}

rein_cancel *rein_cancel_ref(rein_cancel *c)
{
    if (c)
        atomic_fetch_add(&c->refs, 1);
    return c;
}

void rein_cancel_unref(rein_cancel *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    if (c->parent) {
        rein_cancel_off(c->parent, c->parent_hook);
        rein_cancel_unref(c->parent);
    }
    while (c->hooks) {
        struct hook *h = c->hooks;
        c->hooks = h->next;
        rein_free(h);
    }
    if (c->fd >= 0)
        close(c->fd);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->done);
    rein_free(c);
}

void rein_cancel_trigger(rein_cancel *c, const char *reason)
{
    uint64_t one = 1;

    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    if (atomic_load(&c->set)) {
        pthread_mutex_unlock(&c->lock);
        return;
    }
    if (reason)
        memccpy(c->reason, reason, '\0', sizeof(c->reason) - 1);
    atomic_store(&c->set, true);
    /* The eventfd counter cannot overflow from a single write of 1. */
    if (c->fd >= 0 && write(c->fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        rein_log(REIN_LOG_WARN, "core/cancel", "eventfd write failed: %s", strerror(errno));
    c->runner = pthread_self();
    while (c->hooks) {
        struct hook *h = c->hooks;
        c->hooks = h->next;
        c->running_id = h->id;
        pthread_mutex_unlock(&c->lock);
        h->fn(h->userdata);
        rein_free(h);
        pthread_mutex_lock(&c->lock);
        c->running_id = 0;
        pthread_cond_broadcast(&c->done);
    }
    pthread_mutex_unlock(&c->lock);
}

bool rein_cancel_is_set(const rein_cancel *c)
{
    return c && atomic_load(&((rein_cancel *)c)->set);
}

const char *rein_cancel_reason(const rein_cancel *c)
{
    if (!c || !rein_cancel_is_set(c) || !c->reason[0])
        return "cancelled";
    return c->reason;
}

int rein_cancel_fd(const rein_cancel *c)
{
    rein_cancel *m = (rein_cancel *)c; /* the descriptor is made on first use */
    uint64_t one = 1;
    int fd;

    if (!m)
        return -1;
    pthread_mutex_lock(&m->lock);
    if (m->fd < 0) {
        m->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (m->fd < 0)
            rein_log(REIN_LOG_ERROR, "core/cancel", "eventfd: %s", strerror(errno));
        else if (atomic_load(&m->set) && write(m->fd, &one, sizeof(one)) < 0)
            rein_log(REIN_LOG_WARN, "core/cancel", "eventfd write failed: %s", strerror(errno));
    }
    fd = m->fd;
    pthread_mutex_unlock(&m->lock);
    return fd;
}

int rein_cancel_on(rein_cancel *c, rein_cancel_fn fn, void *userdata)
{
    struct hook *h;
    int id;

    if (!c || !fn)
        return REIN_EINVAL;
    pthread_mutex_lock(&c->lock);
    if (atomic_load(&c->set)) {
        pthread_mutex_unlock(&c->lock);
        fn(userdata);
        return INT32_MAX; /* never matches a registered id; rein_cancel_off ignores it */
    }
    h = rein_calloc(1, sizeof(*h));
    if (!h) {
        pthread_mutex_unlock(&c->lock);
        return REIN_ENOMEM;
    }
    id = h->id = ++c->next_id;
    h->fn = fn;
    h->userdata = userdata;
    h->next = c->hooks;
    c->hooks = h;
    /* h may be run and freed by a trigger as soon as the lock is released. */
    pthread_mutex_unlock(&c->lock);
    return id;
}

void rein_cancel_off(rein_cancel *c, int id)
{
    if (!c || id <= 0)
        return;
    pthread_mutex_lock(&c->lock);
    for (struct hook **pp = &c->hooks; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            struct hook *h = *pp;
            *pp = h->next;
            rein_free(h);
            pthread_mutex_unlock(&c->lock);
            return;
        }
    }
    /* Not in the list: it may be running right now on the triggering thread. */
    while (c->running_id == id && !pthread_equal(c->runner, pthread_self()))
        pthread_cond_wait(&c->done, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

bool rein_cancel_wait(rein_cancel *c, int64_t timeout_ms)
{
    int64_t deadline = timeout_ms >= 0 ? rein_now_ms() + timeout_ms : -1;

    if (!c) {
        if (timeout_ms > 0)
            rein_sleep_ms(timeout_ms);
        return false;
    }
    while (!rein_cancel_is_set(c)) {
        struct pollfd pfd = {rein_cancel_fd(c), POLLIN, 0};
        int wait = -1;
        if (deadline >= 0) {
            int64_t left = deadline - rein_now_ms();
            if (left <= 0)
                return false;
            wait = left > 60000 ? 60000 : (int)left;
        }
        /* Without a descriptor (none left), look again every 10 ms. */
        if (pfd.fd < 0 && (wait < 0 || wait > 10))
            wait = 10;
        if (poll(&pfd, 1, wait) < 0 && errno != EINTR)
            return rein_cancel_is_set(c);
    }
    return true;
}
