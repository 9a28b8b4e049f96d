/*
 * Child processes without a shell (include/rein/proc.h).
 *
 * A program never runs as rein's direct child. rein forks a small supervisor (the same
 * process image, running only async-signal-safe system calls and never returning to rein's
 * code), which makes itself the leader of a new process group, asks the kernel for a signal
 * when rein dies (PR_SET_PDEATHSIG), and forks and executes the program inside that group.
 * The supervisor then waits: it reports the program's pid and, when it ends, its wait status
 * on a pipe, and stays alive as the group's leader until rein kills the group. That gives
 * three guarantees posix_spawn alone cannot:
 *   - when rein dies in any way (kill -9, a crash, an exit that skipped cleanup), the
 *     supervisor gets the parent-death signal and kills its whole group with SIGKILL, so no
 *     program and nothing it started runs on re-parented to PID 1;
 *   - rein can always signal the group safely: its id is the supervisor's pid, which cannot be
 *     reused while rein has not reaped the supervisor;
 *   - a program's leftovers (a background job that kept running after the program exited) are
 *     killed with the group when rein frees the handle, i.e. when the call or turn ends.
 * PR_SET_PDEATHSIG fires when the *thread* that forked exits, not only the process; the
 * supervisor therefore checks that its parent process is really gone (getppid() changed)
 * before it kills anything, and otherwise keeps waiting (the signal is re-armed for the next
 * thread the kernel re-parents it to).
 *
 * Programs get default signal dispositions and an empty signal mask whatever the host program
 * set, their three pipes and no other descriptor of rein's, and are observed with poll() on
 * the status pipe instead of SIGCHLD. rein_proc_run() drives
 * one poll loop over stdin, stdout, stderr, the status pipe and the cancel descriptor, so a
 * program that floods its output, never reads its input or never exits cannot stall the
 * caller.
 */
#include <rein/proc.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/*
 * Invariants: pgid is the supervisor's pid and stays valid to signal until sup_reaped;
 * exited is set once the program's wait status is known (status); status_fd reads the
 * supervisor's reports and is -1 once it reached end of file.
 */
struct rein_proc {
    pid_t pgid;    /* the supervisor: group leader */
    pid_t pid;     /* the program */
    int status_fd; /* the supervisor's reports: the program's wait status */
    int in_fd, out_fd, err_fd;
    bool exited;
    bool sup_reaped;
    int status;
};

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* Reads exactly len bytes, retrying on EINTR; false at end of file or on an error. */
static bool read_full(int fd, void *buf, size_t len)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* ---- in the forked processes: async-signal-safe system calls only -------------------- */

/* Reports an errno on fd (the exec pipe) and ends the process. */
_Noreturn static void child_fail(int fd, int e)
{
    ssize_t n = write(fd, &e, sizeof(e));

    (void)n;
    _exit(127);
}

/* What the forked processes need, prepared before fork() so they allocate nothing. */
struct spawn_plan {
    const char *path; /* resolved program */
    char *const *argv;
    char *const *envp;
    const char *cwd;
    pid_t parent;
    int in_r, out_w, err_w; /* the child's ends */
    int exec_w;             /* close-on-exec: an errno when exec fails */
    int status_w;           /* supervisor → rein: the program's pid, then its wait status */
};

/* Moves fd to a number of at least 10, so dup2 onto 0, 1 and 2 cannot clobber another. */
static int lift(int fd, int exec_w)
{
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);

    if (high < 0)
        child_fail(exec_w, errno);
    return high;
}

_Noreturn static void exec_program(const struct spawn_plan *sp)
{
    int exec_w = lift(sp->exec_w, sp->exec_w);
    int in = lift(sp->in_r, exec_w), out = lift(sp->out_w, exec_w);
    int err = sp->err_w == sp->out_w ? out : lift(sp->err_w, exec_w);
    struct sigaction dfl;
    sigset_t none;

    if (dup2(in, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
        child_fail(exec_w, errno);
    /* Only the three pipes (and the exec pipe, closed by exec) go to the program: a socket of
     * rein's held open by a skill would keep its peer from ever seeing it close. */
    if (dup2(exec_w, 3) < 0)
        child_fail(exec_w, errno);
    exec_w = 3;
    (void)fcntl(exec_w, F_SETFD, FD_CLOEXEC);
    (void)syscall(SYS_close_range, 4U, ~0U, 0U);
    if (sp->cwd && chdir(sp->cwd) != 0)
        child_fail(exec_w, errno);
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        (void)sigaction(sig, &dfl, NULL);
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);
    execve(sp->path, sp->argv, sp->envp);
    child_fail(exec_w, errno);
}

/* The supervisor: see the comment at the top of the file. Never returns. */
_Noreturn static void supervise(const struct spawn_plan *sp)
{
    sigset_t all;
    struct sigaction dfl;
    pid_t child;
    int status;

    if (setpgid(0, 0) != 0)
        child_fail(sp->exec_w, errno);
    sigfillset(&all);
    (void)sigprocmask(SIG_SETMASK, &all, NULL);
    /* SIGCHLD must not be ignored (the program would be reaped behind our back). */
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    (void)sigaction(SIGCHLD, &dfl, NULL);
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
        child_fail(sp->exec_w, errno);
    if (getppid() != sp->parent) /* rein died before the request was in place */
        _exit(127);
    child = fork();
    if (child < 0)
        child_fail(sp->exec_w, errno);
    if (child == 0)
        exec_program(sp);
    /* Keep only the status pipe (as fd 0): every descriptor of rein's is let go. */
    if (dup2(sp->status_w, 0) < 0)
        _exit(127);
    (void)syscall(SYS_close_range, 1U, ~0U, 0U);
    if (write(0, &child, sizeof(child)) != (ssize_t)sizeof(child))
        (void)kill(child, SIGKILL);
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&all, &si);
        if (getppid() != sp->parent)
            (void)kill(0, SIGKILL); /* rein is gone: so is everything it started */
        if (sig != SIGCHLD || child < 0)
            continue;
        if (waitpid(child, &status, WNOHANG) == child) {
            ssize_t n = write(0, &status, sizeof(status));
            (void)n;
            child = -1; /* stay, as the group's leader, until rein kills the group */
        }
    }
}

/* ---- in rein ------------------------------------------------------------------------- */

/*
 * Finds argv0 the way posix_spawnp does: a name with a slash is used as it is, any other is
 * looked up in rein's PATH (not the child's). Returns the path (new) or NULL with *e set.
 */
static char *resolve_program(const char *argv0, int *e)
{
    const char *path = getenv("PATH");
    int found_noexec = 0;

    if (strchr(argv0, '/'))
        return rein_strdup(argv0);
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
        char *full = dlen ? rein_asprintf("%.*s/%s", (int)dlen, p, argv0) : rein_strdup(argv0);
        struct stat st;
        if (!full) {
            *e = ENOMEM;
            return NULL;
        }
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(full, X_OK) == 0)
                return full;
            found_noexec = 1;
        }
        rein_free(full);
        if (!colon)
            break;
        p = colon + 1;
    }
    *e = found_noexec ? EACCES : ENOENT;
    return NULL;
}

/* Kills the group, reaps the supervisor and closes what is left; for failed starts too. */
static void reap_supervisor(rein_proc *p)
{
    if (!p->sup_reaped && p->pgid > 0) {
        (void)kill(-p->pgid, SIGKILL);
        while (waitpid(p->pgid, NULL, 0) < 0 && errno == EINTR)
            ;
        p->sup_reaped = true;
    }
}

rein_err rein_proc_start(const struct rein_proc_opts *opts, rein_proc **out, rein_error *err)
{
    int pipes[5][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
    struct spawn_plan sp;
    rein_proc *p = NULL;
    char *path;
    rein_err rc;
    int e = 0;

    *out = NULL;
    if (!opts || !opts->argv || !opts->argv[0])
        return rein_error_set(err, REIN_EINVAL, "no program to run");
    path = resolve_program(opts->argv[0], &e);
    if (!path)
        return rein_error_set(err, e == ENOMEM ? REIN_ENOMEM : REIN_ENOTFOUND, "cannot run %s: %s",
                              opts->argv[0], strerror(e));
    /* stdin, stdout, stderr, the exec pipe, the status pipe */
    for (int i = 0; i < 5; i++) {
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
    p->status_fd = p->in_fd = p->out_fd = p->err_fd = -1;
    sp = (struct spawn_plan){
        .path = path,
        .argv = (char *const *)opts->argv,
        .envp = opts->env ? (char *const *)opts->env : environ,
        .cwd = opts->cwd,
        .parent = getpid(),
        .in_r = pipes[0][0],
        .out_w = pipes[1][1],
        .err_w = opts->merge_stderr ? pipes[1][1] : pipes[2][1],
        .exec_w = pipes[3][1],
        .status_w = pipes[4][1],
    };
    p->pgid = fork();
    if (p->pgid < 0) {
        rc = rein_error_set(err, REIN_EIO, "cannot start %s: fork: %s", opts->argv[0],
                            strerror(errno));
        goto out_free_proc;
    }
    if (p->pgid == 0)
        supervise(&sp);
    for (int i = 0; i < 5; i++)
        close_fd(i == 0 ? &pipes[i][0] : &pipes[i][1]);
    p->in_fd = pipes[0][1];
    p->out_fd = pipes[1][0];
    p->err_fd = pipes[2][0];
    p->status_fd = pipes[4][0];
    pipes[0][1] = pipes[1][0] = pipes[2][0] = pipes[4][0] = -1;
    /* The exec pipe closes (end of file) once the program runs; bytes there are an errno. */
    if (read_full(pipes[3][0], &e, sizeof(e)) ||
        !read_full(p->status_fd, &p->pid, sizeof(p->pid))) {
        if (e == 0)
            e = ECHILD;
        rc = rein_error_set(err, e == ENOENT || e == EACCES ? REIN_ENOTFOUND : REIN_EIO,
                            "cannot run %s: %s%s%s%s", opts->argv[0], strerror(e),
                            opts->cwd ? " (in " : "", opts->cwd ? opts->cwd : "",
                            opts->cwd ? ")" : "");
        goto out_free_proc;
    }
    close_fd(&pipes[3][0]);
    fcntl(p->in_fd, F_SETFL, O_NONBLOCK);
    fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
    rein_free(path);
    *out = p;
    return REIN_OK;

out_free_proc:
    if (p) {
        reap_supervisor(p);
        close_fd(&p->in_fd);
        close_fd(&p->out_fd);
        close_fd(&p->err_fd);
        close_fd(&p->status_fd);
    }
    rein_free(p);
out_close_pipes:
    for (int i = 0; i < 5; i++) {
        close_fd(&pipes[i][0]);
        close_fd(&pipes[i][1]);
    }
    rein_free(path);
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
    /* Readable (a report, or end of file) once the program has exited. */
    return p->status_fd;
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
    /* Safe while the supervisor is not reaped: the group's id cannot be reused until then. */
    if (p && !p->sup_reaped)
        kill(-p->pgid, sig);
}

static int status_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

/* Reads the supervisor's report of the program's end; a supervisor that died without one
 * was killed with its group (SIGKILL), so the program was too. */
static void take_status(rein_proc *p)
{
    if (!read_full(p->status_fd, &p->status, sizeof(p->status)))
        p->status = SIGKILL; /* as a wait status: killed by SIGKILL */
    close_fd(&p->status_fd);
    p->exited = true;
}

/* Waits for the program to end; its wait status is in p->status once p->exited is set. */
static rein_err reap(rein_proc *p, int64_t timeout_ms)
{
    if (!p->exited) {
        struct pollfd pfd = {p->status_fd, POLLIN, 0};
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
        take_status(p);
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
    /* The whole group goes, the program if it still runs and whatever it left behind. */
    reap_supervisor(p);
    close_fd(&p->in_fd);
    close_fd(&p->out_fd);
    close_fd(&p->err_fd);
    close_fd(&p->status_fd);
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
    size_t more_written; /* bytes of opts->more_input already written */
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
    if (st->written < o->input_len)
        return;
    if (!o->more_input) {
        rein_proc_close_stdin(st->p);
        return;
    }
    while (st->p->in_fd >= 0 && st->more_written < o->more_input->len) {
        ssize_t n = write_nosigpipe(st->p->in_fd, o->more_input->ptr + st->more_written,
                                    o->more_input->len - st->more_written);
        if (n > 0) {
            st->more_written += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            if (n < 0 && errno != EAGAIN)
                rein_proc_close_stdin(st->p);
            return;
        }
    }
    if (st->more_written == o->more_input->len) {
        rein_buf_reset(o->more_input);
        st->more_written = 0;
    }
}

/* True while there is input the program has not been given yet. */
static bool input_pending(const struct run_state *st)
{
    const struct rein_proc_run_opts *o = st->opts;

    return st->written < o->input_len || (o->more_input && o->more_input->len > st->more_written);
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
    if (p->exited && p->out_fd < 0 && p->err_fd < 0)
        return false;
    if (p->exited && now - st->exited_at > 2000) {
        /* Leftover members of the group still hold the pipes open: end them. */
        rein_proc_kill(p, SIGKILL);
        return false;
    }
    pfd[nfd++] = (struct pollfd){p->exited ? -1 : p->status_fd, POLLIN, 0};
    pfd[nfd++] = (struct pollfd){p->out_fd, POLLIN, 0};
    pfd[nfd++] = (struct pollfd){p->err_fd, POLLIN, 0};
    pfd[nfd++] = (struct pollfd){input_pending(st) ? p->in_fd : -1, POLLOUT, 0};
    pfd[nfd++] = (struct pollfd){res->cancelled ? -1 : rein_cancel_fd(o->cancel), POLLIN, 0};
    if (st->deadline && !res->timed_out)
        wait = (int)(st->deadline - now < wait ? st->deadline - now : wait);
    if (st->kill_at)
        wait = 50;
    if (p->exited)
        wait = 100;
    if (poll(pfd, (nfds_t)nfd, wait < 0 ? 0 : wait) < 0 && errno != EINTR)
        return false;
    if (pfd[1].revents)
        drain(&p->out_fd, &st->out, o->on_stdout, o->stdout_data);
    if (pfd[2].revents)
        drain(&p->err_fd, &st->err, o->on_stderr, o->stderr_data);
    if (pfd[3].revents || (o->more_input && input_pending(st)))
        feed_stdin(st);
    if (pfd[4].revents && rein_cancel_is_set(o->cancel)) {
        res->cancelled = true;
        stop_group(st);
    }
    if (o->kill_on_flood && st->out.truncated && !st->kill_at)
        stop_group(st);
    if (pfd[0].revents && !p->exited && reap(p, 0) == REIN_OK)
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
    if ((!opts->input || opts->input_len == 0) && !opts->more_input)
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
