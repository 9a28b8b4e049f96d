/*
 * Child processes without a shell (include/rein/proc.h).
 *
 * Programs start with posix_spawnp in a process group of their own, with default signal
 * dispositions and an empty signal mask whatever the host program set, and with a pidfd so
 * exits are observed with poll() instead of SIGCHLD. rein_proc_run() drives one poll loop
 * over stdin, stdout, stderr, the pidfd and the cancel descriptor, so a program that floods
 * its output, never reads its input or never exits cannot stall the caller. The child gets
 * its three pipes and no other descriptor of the caller's, whether or not it was close-on-exec.
 */
#include <rein/proc.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct rein_proc {
    pid_t pid;
    int pidfd;
    int in_fd, out_fd, err_fd;
    bool reaped;
    int status;
};

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static rein_err spawn_setup(const struct rein_proc_opts *opts, int pipes[3][2],
                            posix_spawn_file_actions_t *fa, posix_spawnattr_t *attr)
{
    sigset_t none, all;
    int rc = 0;

    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    rc |= posix_spawn_file_actions_init(fa);
    rc |= posix_spawn_file_actions_adddup2(fa, pipes[0][0], STDIN_FILENO);
    rc |= posix_spawn_file_actions_adddup2(fa, pipes[1][1], STDOUT_FILENO);
    rc |= posix_spawn_file_actions_adddup2(fa, opts->merge_stderr ? pipes[1][1] : pipes[2][1],
                                           STDERR_FILENO);
    /* Only the three pipes go to the child: a socket of rein's (a client's connection, a
     * provider's keep-alive) held open by a skill would keep that peer from ever seeing it
     * close. */
    rc |= posix_spawn_file_actions_addclosefrom_np(fa, STDERR_FILENO + 1);
    if (opts->cwd)
        rc |= posix_spawn_file_actions_addchdir_np(fa, opts->cwd);
    rc |= posix_spawnattr_init(attr);
    rc |= posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                             POSIX_SPAWN_SETSIGDEF);
    rc |= posix_spawnattr_setpgroup(attr, 0);
    rc |= posix_spawnattr_setsigmask(attr, &none);
    rc |= posix_spawnattr_setsigdefault(attr, &all);
    return rc ? REIN_ENOMEM : REIN_OK;
}

rein_err rein_proc_start(const struct rein_proc_opts *opts, rein_proc **out, rein_error *err)
{
    int pipes[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    rein_proc *p;
    rein_err rc;
    int src;

    *out = NULL;
    if (!opts || !opts->argv || !opts->argv[0])
        return rein_error_set(err, REIN_EINVAL, "no program to run");
    for (int i = 0; i < 3; i++) {
        if (pipe2(pipes[i], O_CLOEXEC) < 0) {
            rc = rein_error_set(err, REIN_EIO, "pipe: %s", strerror(errno));
            goto out_close_pipes;
        }
    }
    p = rein_calloc(1, sizeof(*p));
    if (!p) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory starting %s", opts->argv[0]);
        goto out_close_pipes;
    }
    rc = spawn_setup(opts, pipes, &fa, &attr);
    if (rc) {
        rein_error_set(err, rc, "cannot prepare to start %s", opts->argv[0]);
        goto out_free_proc;
    }
    src = posix_spawnp(&p->pid, opts->argv[0], &fa, &attr, (char *const *)opts->argv,
                       opts->env ? (char *const *)opts->env : environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (src != 0) {
        rc = rein_error_set(err, src == ENOENT || src == EACCES ? REIN_ENOTFOUND : REIN_EIO,
                            "cannot run %s: %s%s%s%s", opts->argv[0], strerror(src),
                            opts->cwd ? " (in " : "", opts->cwd ? opts->cwd : "",
                            opts->cwd ? ")" : "");
        goto out_free_proc;
    }
    p->pidfd = pidfd_open(p->pid, 0);
    if (p->pidfd < 0) {
        /* The child exists; without a pidfd we cannot wait on it with poll, so stop it. */
        kill(-p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        rc = rein_error_set(err, REIN_EIO, "pidfd_open: %s", strerror(errno));
        goto out_free_proc;
    }
    p->in_fd = pipes[0][1];
    p->out_fd = pipes[1][0];
    p->err_fd = pipes[2][0];
    close(pipes[0][0]);
    close(pipes[1][1]);
    close(pipes[2][1]);
    fcntl(p->in_fd, F_SETFL, O_NONBLOCK);
    fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
    *out = p;
    return REIN_OK;

out_free_proc:
    rein_free(p);
out_close_pipes:
    for (int i = 0; i < 3; i++) {
        close_fd(&pipes[i][0]);
        close_fd(&pipes[i][1]);
    }
    return rc;
}

int rein_proc_stdin_fd(const rein_proc *p)
{
    return p->in_fd;
}

int rein_proc_stdout_fd(const rein_proc *p)
{
    return p->out_fd;
}

int rein_proc_stderr_fd(const rein_proc *p)
{
    return p->err_fd;
}

int rein_proc_pidfd(const rein_proc *p)
{
    return p->pidfd;
}

int rein_proc_pid(const rein_proc *p)
{
    return (int)p->pid;
}

void rein_proc_close_stdin(rein_proc *p)
{
    close_fd(&p->in_fd);
}

void rein_proc_kill(rein_proc *p, int sig)
{
    if (p && !p->reaped)
        kill(-p->pid, sig);
}

static int status_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

/* Waits for and reaps the child; the result is in p->status once p->reaped is set. */
static rein_err reap(rein_proc *p, int64_t timeout_ms)
{
    if (!p->reaped) {
        struct pollfd pfd = {p->pidfd, POLLIN, 0};
        int64_t deadline = timeout_ms >= 0 ? rein_now_ms() + timeout_ms : -1;
        for (;;) {
            int wait = -1;
            if (deadline >= 0) {
                int64_t left = deadline - rein_now_ms();
                wait = left < 0 ? 0 : (left > 60000 ? 60000 : (int)left);
            }
            int n = poll(&pfd, 1, wait);
            if (n > 0)
                break;
            if (n < 0 && errno != EINTR)
                return REIN_EIO;
            if (n == 0 && deadline >= 0 && rein_now_ms() >= deadline)
                return REIN_ETIMEDOUT;
        }
        while (waitpid(p->pid, &p->status, 0) < 0) {
            if (errno != EINTR) {
                p->status = 0;
                break;
            }
        }
        p->reaped = true;
    }
    return REIN_OK;
}

rein_err rein_proc_wait(rein_proc *p, int64_t timeout_ms, int *exit_code)
{
    rein_err rc = reap(p, timeout_ms);

    if (rc)
        return rc;
    if (exit_code)
        *exit_code = status_code(p->status);
    return REIN_OK;
}

void rein_proc_free(rein_proc *p)
{
    if (!p)
        return;
    if (!p->reaped) {
        kill(-p->pid, SIGKILL);
        if (reap(p, -1))
            rein_log(REIN_LOG_WARN, "core/proc", "could not reap child %d", (int)p->pid);
    }
    close_fd(&p->in_fd);
    close_fd(&p->out_fd);
    close_fd(&p->err_fd);
    close_fd(&p->pidfd);
    rein_free(p);
}

/* Output capture for rein_proc_run(): keeps the head or the tail, counting what was cut. */
struct sink {
    struct rein_buf *buf;
    size_t max;
    bool tail;
    bool truncated;
};

static void sink_add(struct sink *s, const char *data, size_t n)
{
    if (!s->tail) {
        size_t room = s->buf->len < s->max ? s->max - s->buf->len : 0;
        if (n > room) {
            s->truncated = true;
            n = room;
        }
        if (rein_buf_add(s->buf, data, n))
            s->truncated = true;
        return;
    }
    if (n >= s->max) {
        rein_buf_reset(s->buf);
        s->truncated |= n > s->max;
        data += n - s->max;
        n = s->max;
    } else if (s->buf->len + n > s->max) {
        size_t drop = s->buf->len + n - s->max;
        memmove(s->buf->ptr, s->buf->ptr + drop, s->buf->len - drop);
        rein_buf_truncate(s->buf, s->buf->len - drop);
        s->truncated = true;
    }
    if (rein_buf_add(s->buf, data, n))
        s->truncated = true;
}

/*
 * Reads what is available on *fd into s; closes *fd at end of file. tap (may be NULL) sees
 * every piece first.
 */
static void drain(int *fd, struct sink *s, void (*tap)(void *ud, const char *data, size_t len),
                  void *tap_data)
{
    char chunk[16384];

    for (;;) {
        ssize_t n = read(*fd, chunk, sizeof(chunk));
        if (n > 0) {
            if (tap)
                tap(tap_data, chunk, (size_t)n);
            sink_add(s, chunk, (size_t)n);
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR))
            close_fd(fd);
        if (n < 0 && errno == EINTR)
            continue;
        return;
    }
}

struct run_state {
    const struct rein_proc_run_opts *opts;
    rein_proc *p;
    struct sink out, err;
    size_t written;
    int64_t deadline;
    int64_t kill_at; /* when a SIGTERM'd group gets SIGKILL, or 0 */
    int64_t exited_at;
};

static void stop_group(struct run_state *st)
{
    if (st->kill_at)
        return;
    rein_proc_kill(st->p, SIGTERM);
    st->kill_at = rein_now_ms() + 500;
}

/*
 * Writing to a pipe whose reader has exited raises SIGPIPE, which would kill the host program.
 * rein installs no handlers, so the signal is blocked on this thread for the write and a
 * pending one is consumed before the mask is restored (the technique curl documents).
 */
static ssize_t write_nosigpipe(int fd, const void *data, size_t len)
{
    sigset_t pipe_set, old;
    ssize_t n;
    int saved;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    n = write(fd, data, len);
    saved = errno;
    if (n < 0 && errno == EPIPE && !sigismember(&old, SIGPIPE)) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return n;
}

bool rein_proc_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;

    while (len > 0) {
        ssize_t n = write_nosigpipe(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd pfd = {fd, POLLOUT, 0};
            if (poll(&pfd, 1, 1000) >= 0)
                continue;
        }
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

static void feed_stdin(struct run_state *st)
{
    const struct rein_proc_run_opts *o = st->opts;

    while (st->p->in_fd >= 0 && st->written < o->input_len) {
        ssize_t n =
            write_nosigpipe(st->p->in_fd, o->input + st->written, o->input_len - st->written);
        if (n > 0) {
            st->written += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            if (n < 0 && errno != EAGAIN)
                rein_proc_close_stdin(st->p); /* EPIPE: the program stopped reading */
            return;
        }
    }
    if (st->written >= o->input_len)
        rein_proc_close_stdin(st->p);
}

/* One pass of the poll loop; returns false when the run is over. */
static bool run_step(struct run_state *st, struct rein_proc_result *res)
{
    const struct rein_proc_run_opts *o = st->opts;
    rein_proc *p = st->p;
    struct pollfd pfd[5];
    int nfd = 0, wait = 1000;
    int64_t now = rein_now_ms();

    if (st->deadline && now >= st->deadline && !res->timed_out) {
        res->timed_out = true;
        stop_group(st);
    }
    if (st->kill_at && now >= st->kill_at)
        rein_proc_kill(p, SIGKILL);
    if (p->reaped && p->out_fd < 0 && p->err_fd < 0)
        return false;
    if (p->reaped && now - st->exited_at > 2000) {
        /* Leftover members of the group still hold the pipes open: end them. */
        kill(-p->pid, SIGKILL);
        return false;
    }
    pfd[nfd++] = (struct pollfd){p->reaped ? -1 : p->pidfd, POLLIN, 0};
    pfd[nfd++] = (struct pollfd){p->out_fd, POLLIN, 0};
    pfd[nfd++] = (struct pollfd){p->err_fd, POLLIN, 0};
    pfd[nfd++] = (struct pollfd){st->written < o->input_len ? p->in_fd : -1, POLLOUT, 0};
    pfd[nfd++] = (struct pollfd){res->cancelled ? -1 : rein_cancel_fd(o->cancel), POLLIN, 0};
    if (st->deadline && !res->timed_out)
        wait = (int)(st->deadline - now < wait ? st->deadline - now : wait);
    if (st->kill_at)
        wait = 50;
    if (p->reaped)
        wait = 100;
    if (poll(pfd, (nfds_t)nfd, wait < 0 ? 0 : wait) < 0 && errno != EINTR)
        return false;
    if (pfd[1].revents)
        drain(&p->out_fd, &st->out, NULL, NULL);
    if (pfd[2].revents)
        drain(&p->err_fd, &st->err, o->on_stderr, o->stderr_data);
    if (pfd[3].revents)
        feed_stdin(st);
    if (pfd[4].revents && rein_cancel_is_set(o->cancel)) {
        res->cancelled = true;
        stop_group(st);
    }
    if (o->kill_on_flood && st->out.truncated && !st->kill_at)
        stop_group(st);
    if (pfd[0].revents && !p->reaped && reap(p, 0) == REIN_OK)
        st->exited_at = rein_now_ms();
    return true;
}

rein_err rein_proc_run(const struct rein_proc_run_opts *opts, struct rein_proc_result *res,
                       rein_error *err)
{
    struct run_state st = {0};
    int64_t start = rein_now_ms();
    rein_err rc;

    memset(res, 0, sizeof(*res));
    rein_buf_init(&res->out, 0);
    rein_buf_init(&res->err, 0);
    res->exit_code = -1;
    rc = rein_proc_start(&opts->proc, &st.p, err);
    if (rc)
        return rc;
    st.opts = opts;
    st.out = (struct sink){&res->out, opts->stdout_max ? opts->stdout_max : 1 << 20,
                           opts->keep_tail, false};
    st.err = (struct sink){&res->err, opts->stderr_max ? opts->stderr_max : 64 << 10,
                           opts->keep_tail, false};
    st.deadline = opts->timeout_ms > 0 ? start + opts->timeout_ms : 0;
    if (!opts->input || opts->input_len == 0)
        rein_proc_close_stdin(st.p);
    else
        feed_stdin(&st);
    while (run_step(&st, res))
        ;
    res->duration_ms = rein_now_ms() - start;
    res->stdout_truncated = st.out.truncated;
    res->stderr_truncated = st.err.truncated;
    res->exit_code = status_code(st.p->status);
    res->term_signal = WIFSIGNALED(st.p->status) ? WTERMSIG(st.p->status) : 0;
    rein_proc_free(st.p);
    return REIN_OK;
}

void rein_proc_result_release(struct rein_proc_result *res)
{
    rein_buf_release(&res->out);
    rein_buf_release(&res->err);
}
