/*
 * rein/proc.h: child processes without a shell.
 *
 * Process skills, verification protocols and stdio MCP servers all start programs the same
 * way: with an argv (never /bin/sh unless the caller puts it in argv), in a process group of
 * their own, with bounded capture of their output. Children die with rein: a timeout, a
 * cancel or rein_proc_free() kills the program's whole group (the program and everything it
 * started, also what it left running after it exited), and so does rein's own death in any
 * form, kill -9 and crashes included (a small supervisor process leads each group and kills
 * it when the kernel reports rein gone, PR_SET_PDEATHSIG). No program outlives its handle.
 *
 * Threading: a rein_proc belongs to one thread at a time. rein_proc_run() may be called from
 * many threads at once. rein does not install signal handlers and never waits for children
 * it did not start.
 */
#ifndef REIN_PROC_H
#define REIN_PROC_H

#include <rein/buf.h>
#include <rein/cancel.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rein_proc_opts {
    const char *const *argv; /* borrowed, NULL-terminated; argv[0] is looked up in PATH */
    const char *cwd;         /* borrowed; NULL: inherit */
    const char *const *env;  /* borrowed "KEY=VALUE" list, NULL-terminated; NULL: inherit */
    bool merge_stderr;       /* stderr goes to the stdout pipe */
};

typedef struct rein_proc rein_proc;

/*
 * Starts a program with pipes on stdin, stdout and stderr. *out receives a new handle.
 * REIN_ENOTFOUND when argv[0] cannot be executed (err names it).
 */
REIN_EXTERN rein_err rein_proc_start(const struct rein_proc_opts *opts, rein_proc **out,
                                     rein_error *err) REIN_WUR;
/* Descriptors owned by p (non-blocking); -1 once closed. */
REIN_EXTERN int rein_proc_stdin_fd(const rein_proc *p);
REIN_EXTERN int rein_proc_stdout_fd(const rein_proc *p);
REIN_EXTERN int rein_proc_stderr_fd(const rein_proc *p);
/* A descriptor (owned by p) that becomes readable when the program exits; -1 once
 * rein_proc_wait() has seen the exit. For poll() next to the program's pipes. */
REIN_EXTERN int rein_proc_pidfd(const rein_proc *p);
/* The program's process id (its group's id is another: the supervisor's). */
REIN_EXTERN int rein_proc_pid(const rein_proc *p);
/* Closes the child's stdin (end of input). */
REIN_EXTERN void rein_proc_close_stdin(rein_proc *p);
/* Sends sig to the child's whole process group. */
REIN_EXTERN void rein_proc_kill(rein_proc *p, int sig);
/*
 * Waits for the child to exit, up to timeout_ms (negative: forever). REIN_ETIMEDOUT when it
 * is still running. On exit, *exit_code is its status (128 + signal when killed).
 */
REIN_EXTERN rein_err rein_proc_wait(rein_proc *p, int64_t timeout_ms, int *exit_code) REIN_WUR;
/* Kills the program's group (whatever still runs in it), reaps, closes everything. NULL is a
 * no-op. */
REIN_EXTERN void rein_proc_free(rein_proc *p);

/* Running a program to completion with its input given and its output captured. */
struct rein_proc_run_opts {
    struct rein_proc_opts proc;
    const char *input; /* borrowed bytes written to stdin, then stdin is closed; may be NULL */
    size_t input_len;
    size_t stdout_max;   /* bytes kept; 0: 1 MiB */
    size_t stderr_max;   /* bytes kept; 0: 64 KiB */
    bool kill_on_flood;  /* stop the program when stdout passes stdout_max (else keep draining) */
    bool keep_tail;      /* keep the last bytes rather than the first when output is too long */
    int64_t timeout_ms;  /* <= 0: no limit */
    rein_cancel *cancel; /* borrowed; may be NULL */
    /* Called with each piece of stderr as it arrives (before it is kept in the result), on
     * the calling thread; for programs that report progress on stderr. May be NULL. */
    void (*on_stderr)(void *userdata, const char *data, size_t len);
    void *stderr_data;
    /* The same for stdout (stderr too with merge_stderr): every byte is passed, also those
     * beyond stdout_max, so a caller can read output of any size as it streams. */
    void (*on_stdout)(void *userdata, const char *data, size_t len);
    void *stdout_data;
    /* A program that is answered while it runs (a process skill asking the client, see
     * src/skills/runner_process.c): when set (borrowed), stdin stays open after input until the
     * program ends, and whatever the callbacks above append to *more_input is written to it in
     * order, from the run's poll loop (a program that does not read cannot block the run). */
    struct rein_buf *more_input;
};

struct rein_proc_result {
    int exit_code;   /* exit status, 128 + signal when killed, -1 when it never ran */
    int term_signal; /* the signal that ended it, or 0 */
    bool timed_out;
    bool cancelled;
    bool stdout_truncated;
    bool stderr_truncated;
    int64_t duration_ms;
    struct rein_buf out; /* owned by the result: release with rein_proc_result_release() */
    struct rein_buf err;
};

/*
 * Runs a program to completion. res is filled (and must be released) whenever REIN_OK is
 * returned, even when the program failed, timed out or was cancelled: those are reported in
 * res, not as errors. An error is returned only when the program could not be started.
 */
REIN_EXTERN rein_err rein_proc_run(const struct rein_proc_run_opts *opts,
                                   struct rein_proc_result *res, rein_error *err) REIN_WUR;
REIN_EXTERN void rein_proc_result_release(struct rein_proc_result *res);

/*
 * Writes all len bytes of data (borrowed) to a pipe or socket fd: short writes and EINTR are
 * retried, a non-blocking fd that is full is waited on, and a reader that has gone is an
 * error (false, errno EPIPE) instead of a SIGPIPE that would end the host program.
 */
REIN_EXTERN bool rein_proc_write_all(int fd, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* REIN_PROC_H */
