/*
 * Unit tests for child processes (src/core/proc.c) and cancellation handles
 * (src/core/cancel.c): capture, timeouts that kill the whole group, output floods, programs
 * that do not exist, cancellation from another thread.
 */
#include "test.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_run_captures_output_and_exit(void **state)
{
    const char *argv[] = {"sh", "-c", "read x; echo out:$x; echo err >&2; exit 3", NULL};
    struct rein_proc_run_opts o = {.proc = {.argv = argv}, .input = "hi\n", .input_len = 3};
    struct rein_proc_result r;
    rein_error err;

    (void)state;
    assert_rein_ok(rein_proc_run(&o, &r, &err), &err);
    assert_int_equal(r.exit_code, 3);
    assert_string_equal(r.out.ptr, "out:hi\n");
    assert_string_equal(r.err.ptr, "err\n");
    assert_false(r.timed_out);
    rein_proc_result_release(&r);
}

/* A descriptor the caller left without close-on-exec (as libcurl's sockets are) stays out. */
static void test_child_gets_only_its_pipes(void **state)
{
    char script[64];
    const char *argv[] = {"sh", "-c", script, NULL};
    struct rein_proc_run_opts o = {.proc = {.argv = argv}};
    struct rein_proc_result r;
    int fd = open("/dev/null", O_RDONLY);

    (void)state;
    assert_true(fd > 2);
    snprintf(script, sizeof(script), "test -e /proc/$$/fd/%d && echo open || echo closed", fd);
    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    assert_string_equal(r.out.ptr, "closed\n");
    rein_proc_result_release(&r);
    close(fd);
}

static void test_run_missing_program_is_not_found(void **state)
{
    const char *argv[] = {"/nonexistent/rein-no-such-program", NULL};
    struct rein_proc_run_opts o = {.proc = {.argv = argv}};
    struct rein_proc_result r;
    rein_error err;

    (void)state;
    rein_error_clear(&err);
    assert_int_equal(rein_proc_run(&o, &r, &err), REIN_ENOTFOUND);
    assert_non_null(strstr(err.msg, "rein-no-such-program"));
}

static void test_timeout_kills_the_whole_group(void **state)
{
    char *dir = test_tmpdir();
    char script[512];
    const char *argv[] = {"sh", "-c", script, NULL};
    /* The limit leaves the shell time to start its grandchild and write the pid even on a
     * loaded machine under ThreadSanitizer (300 ms did not always). */
    struct rein_proc_run_opts o = {.proc = {.argv = argv}, .timeout_ms = 1500};
    struct rein_proc_result r;
    char *pidfile, *pidpath = NULL;
    size_t len;
    int64_t t0 = rein_now_ms();

    (void)state;
    /* The grandchild records its pid; after the timeout it must be gone too. */
    snprintf(script, sizeof(script), "sleep 30 & echo $! > %s/pid; wait", dir);
    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    assert_true(r.timed_out);
    assert_true(rein_now_ms() - t0 < 10000);
    assert_true(asprintf(&pidpath, "%s/pid", dir) > 0);
    pidfile = test_read_file(pidpath, &len);
    free(pidpath);
    assert_non_null(pidfile);
    pid_t grandchild = (pid_t)strtol(pidfile, NULL, 10);
    assert_true(grandchild > 0);
    for (int i = 0; i < 500 && test_pid_alive(grandchild); i++)
        rein_sleep_ms(10);
    assert_false(test_pid_alive(grandchild));
    free(pidfile);
    rein_proc_result_release(&r);
    test_rmtree(dir);
    free(dir);
}

static void test_flood_is_truncated_and_stopped(void **state)
{
    const char *argv[] = {"sh", "-c", "yes flood", NULL};
    struct rein_proc_run_opts o = {
        .proc = {.argv = argv}, .stdout_max = 4096, .kill_on_flood = true, .timeout_ms = 10000};
    struct rein_proc_result r;

    (void)state;
    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    assert_true(r.stdout_truncated);
    assert_int_equal(r.out.len, 4096);
    assert_false(r.timed_out);
    assert_int_not_equal(r.exit_code, 0);
    rein_proc_result_release(&r);
}

static void test_keep_tail_keeps_the_end(void **state)
{
    const char *argv[] = {"sh", "-c", "seq 1 20000", NULL};
    struct rein_proc_run_opts o = {.proc = {.argv = argv}, .stdout_max = 64, .keep_tail = true};
    struct rein_proc_result r;

    (void)state;
    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    assert_true(r.stdout_truncated);
    assert_true(r.out.len <= 64);
    assert_non_null(strstr(r.out.ptr, "19999\n20000\n"));
    rein_proc_result_release(&r);
}

static void test_cwd_and_env_are_applied(void **state)
{
    const char *argv[] = {"sh", "-c", "pwd; echo $REIN_X", NULL};
    const char *env[] = {"REIN_X=from-env", "PATH=/usr/bin:/bin", NULL};
    struct rein_proc_run_opts o = {.proc = {.argv = argv, .cwd = "/tmp", .env = env}};
    struct rein_proc_result r;

    (void)state;
    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    assert_string_equal(r.out.ptr, "/tmp\nfrom-env\n");
    rein_proc_result_release(&r);
}

static void test_large_input_to_a_program_that_exits_early(void **state)
{
    const char *argv[] = {"sh", "-c", "head -c 10 >/dev/null; echo done", NULL};
    size_t n = 4 << 20;
    char *big = malloc(n);
    struct rein_proc_run_opts o = {.proc = {.argv = argv}, .input = big, .input_len = n};
    struct rein_proc_result r;

    (void)state;
    memset(big, 'a', n);
    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    assert_string_equal(r.out.ptr, "done\n");
    rein_proc_result_release(&r);
    free(big);
}

static void *trigger_later(void *arg)
{
    rein_sleep_ms(100);
    rein_cancel_trigger(arg, "user pressed stop");
    return NULL;
}

static void test_cancel_stops_a_running_program(void **state)
{
    const char *argv[] = {"sleep", "30", NULL};
    rein_cancel *c = rein_cancel_new();
    struct rein_proc_run_opts o = {.proc = {.argv = argv}, .cancel = c};
    struct rein_proc_result r;
    pthread_t t;
    int64_t t0 = rein_now_ms();

    (void)state;
    pthread_create(&t, NULL, trigger_later, c);
    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    pthread_join(t, NULL);
    assert_true(r.cancelled);
    assert_true(rein_now_ms() - t0 < 5000);
    assert_string_equal(rein_cancel_reason(c), "user pressed stop");
    rein_proc_result_release(&r);
    rein_cancel_unref(c);
}

static int hook_calls;
static void count_hook(void *ud)
{
    (void)ud;
    hook_calls++;
}

static void test_cancel_child_follows_parent(void **state)
{
    rein_cancel *parent = rein_cancel_new();
    rein_cancel *child = rein_cancel_new_child(parent);
    int id, id2;

    (void)state;
    hook_calls = 0;
    id = rein_cancel_on(child, count_hook, NULL);
    assert_true(id > 0);
    id2 = rein_cancel_on(child, count_hook, NULL);
    rein_cancel_off(child, id2);
    assert_false(rein_cancel_is_set(child));
    assert_false(rein_cancel_wait(child, 10));
    rein_cancel_trigger(parent, "turn timeout");
    assert_true(rein_cancel_is_set(child));
    assert_true(rein_cancel_wait(child, 0));
    assert_string_equal(rein_cancel_reason(child), "turn timeout");
    assert_int_equal(hook_calls, 1);
    /* Registering on a triggered handle runs the callback at once. */
    assert_true(rein_cancel_on(child, count_hook, NULL) > 0);
    assert_int_equal(hook_calls, 2);
    rein_cancel_unref(child);
    rein_cancel_unref(parent);
}

static void test_cancel_child_freed_before_parent_triggers(void **state)
{
    rein_cancel *parent = rein_cancel_new();
    rein_cancel *child = rein_cancel_new_child(parent);

    (void)state;
    rein_cancel_unref(child);
    rein_cancel_trigger(parent, NULL);
    assert_string_equal(rein_cancel_reason(parent), "cancelled");
    rein_cancel_unref(parent);
}

/* Waits up to 5 s for path to hold a pid; returns it (or 0). */
static pid_t wait_pidfile(const char *path)
{
    for (int i = 0; i < 500; i++) {
        size_t len;
        char *text = test_read_file(path, &len);
        pid_t pid = text && strchr(text, '\n') ? (pid_t)strtol(text, NULL, 10) : 0;
        free(text);
        if (pid > 0)
            return pid;
        rein_sleep_ms(10);
    }
    return 0;
}

static bool gone_within(pid_t pid, int ms)
{
    for (int i = 0; i < ms / 10 && test_pid_alive(pid); i++)
        rein_sleep_ms(10);
    return !test_pid_alive(pid);
}

/* A job the program left running after it exited (its output sent elsewhere, so no pipe
 * keeps the run open) is killed with the group when the run ends. */
static void test_leftovers_die_when_the_run_ends(void **state)
{
    const char *argv[] = {"sh", "-c", "sleep 30 >/dev/null 2>&1 </dev/null & echo $!", NULL};
    struct rein_proc_run_opts o = {.proc = {.argv = argv}, .timeout_ms = 10000};
    struct rein_proc_result r;
    pid_t left;

    (void)state;
    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    assert_int_equal(r.exit_code, 0);
    left = (pid_t)strtol(r.out.ptr, NULL, 10);
    assert_true(left > 0);
    assert_true(gone_within(left, 2000));
    rein_proc_result_release(&r);
}

/* kill -9 of the process that started a program: the program and its children die too
 * (PR_SET_PDEATHSIG on the group's supervisor), instead of running on under PID 1. */
static void test_children_die_with_their_parent(void **state)
{
    char *dir = test_tmpdir();
    char script[2600], pidpath[560];
    const char *argv[] = {"sh", "-c", script, NULL};
    pid_t parent, prog, grandchild;

    (void)state;
    snprintf(pidpath, sizeof(pidpath), "%s/pids", dir);
    snprintf(script, sizeof(script),
             "sleep 30 & echo $! > %s.tmp; echo $$ >> %s.tmp; mv %s.tmp %s; wait", pidpath, pidpath,
             pidpath, pidpath);
    parent = fork();
    assert_true(parent >= 0);
    if (parent == 0) {
        struct rein_proc_opts opts = {.argv = argv};
        rein_proc *p = NULL;
        if (rein_proc_start(&opts, &p, NULL) != REIN_OK)
            _exit(1);
        for (;;)
            pause();
    }
    grandchild = wait_pidfile(pidpath);
    assert_true(grandchild > 0);
    {
        size_t len;
        char *text = test_read_file(pidpath, &len);
        prog = (pid_t)strtol(strchr(text, '\n') + 1, NULL, 10);
        free(text);
    }
    assert_true(prog > 0);
    assert_true(test_pid_alive(prog));
    kill(parent, SIGKILL);
    waitpid(parent, NULL, 0);
    assert_true(gone_within(prog, 5000));
    assert_true(gone_within(grandchild, 5000));
    test_rmtree(dir);
    free(dir);
}

/* The parent-death signal follows the thread that started the program; a program started
 * from a thread that has since ended must keep running. */
static void *start_from_thread(void *arg)
{
    const char *argv[] = {"sleep", "30", NULL};
    struct rein_proc_opts opts = {.argv = argv};

    if (rein_proc_start(&opts, (rein_proc **)arg, NULL) != REIN_OK)
        *(rein_proc **)arg = NULL;
    return NULL;
}

static void test_program_outlives_the_thread_that_started_it(void **state)
{
    rein_proc *p = NULL;
    pthread_t t;
    int code = -1;

    (void)state;
    pthread_create(&t, NULL, start_from_thread, &p);
    pthread_join(t, NULL);
    assert_non_null(p);
    assert_int_equal(rein_proc_wait(p, 300, &code), REIN_ETIMEDOUT);
    assert_true(test_pid_alive(rein_proc_pid(p)));
    rein_proc_kill(p, SIGTERM);
    assert_rein_ok(rein_proc_wait(p, 5000, &code), NULL);
    assert_int_equal(code, 128 + SIGTERM);
    rein_proc_free(p);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_leftovers_die_when_the_run_ends),
    cmocka_unit_test(test_children_die_with_their_parent),
    cmocka_unit_test(test_program_outlives_the_thread_that_started_it),
    cmocka_unit_test(test_run_captures_output_and_exit),
    cmocka_unit_test(test_child_gets_only_its_pipes),
    cmocka_unit_test(test_run_missing_program_is_not_found),
    cmocka_unit_test(test_timeout_kills_the_whole_group),
    cmocka_unit_test(test_flood_is_truncated_and_stopped),
    cmocka_unit_test(test_keep_tail_keeps_the_end),
    cmocka_unit_test(test_cwd_and_env_are_applied),
    cmocka_unit_test(test_large_input_to_a_program_that_exits_early),
    cmocka_unit_test(test_cancel_stops_a_running_program),
    cmocka_unit_test(test_cancel_child_follows_parent),
    cmocka_unit_test(test_cancel_child_freed_before_parent_triggers),
};

REIN_TEST_MAIN(tests)
