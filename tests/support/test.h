/*
 * Shared helpers for rein's cmocka tests.
 *
 * Every test file ends with REIN_TEST_MAIN(tests): the CTest case for one test passes its name
 * as argv[1], which becomes cmocka's filter, so each test runs (and times out, and reports
 * sanitizer errors) on its own.
 */
#ifndef REIN_TEST_H
#define REIN_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>

#include <rein/rein.h>

#define REIN_TEST_MAIN(tests)                                                                      \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        if (argc > 1)                                                                              \
            cmocka_set_test_filter(argv[1]);                                                       \
        return cmocka_run_group_tests(tests, NULL, NULL);                                          \
    }

/* Fails the test with both values printed when rc is not REIN_OK; err may be NULL. */
#define assert_rein_ok(rc, err) test_assert_ok((rc), (err), __FILE__, __LINE__)
void test_assert_ok(int rc, const rein_error *err, const char *file, int line);

/*
 * The shared data folder (fixtures, conformance suites), or NULL when it is absent. Tests that
 * need it call test_require_shared(), which skips the test (with the reason) when it is not
 * there; CI always has it.
 */
const char *test_shared_dir(void);
const char *test_require_shared(const char *subpath);
/* Path of a file under the shared folder, in a static buffer (valid until the next call). */
const char *test_shared_path(const char *subpath);

/* A new temporary directory (removed by test_rmtree); returns malloc'd path. */
char *test_tmpdir(void);
void test_rmtree(const char *path);
/* Calls fn(path, ud) for every file under dir and its folders (names starting with '.'
 * left out), in directory order; fails the test when dir cannot be read. */
void test_walk_files(const char *dir, void (*fn)(const char *path, void *ud), void *ud);
/* Writes text to dir/name, creating parent folders. Returns the malloc'd full path. */
char *test_write_file(const char *dir, const char *name, const char *text);
/* Reads a whole file into malloc'd memory (NUL-terminated); NULL when it cannot. */
char *test_read_file(const char *path, size_t *len);

/* Decodes len bytes of text as the reply format named fmt ("gemini-sse", ...), fed in pieces
 * of chunk bytes (0: whole); lines: one payload per line (a .stream.jsonl recording); notes
 * (may be NULL) gets the decoder's notes. The response (caller frees), or NULL with err set. */
rein_model_response *test_decode(const char *fmt, const char *text, size_t len, size_t chunk,
                                 bool lines, char *notes, size_t notes_size, rein_error *err);
/* The value at a dotted path in v ("contents.0.parts.1.text": members, and array indexes),
 * borrowed; NULL when there is none. */
const json_t *test_json_at(const json_t *v, const char *path);

/* Runs cmd with /bin/sh in dir (stdout and stderr merged, 60 s at most); fails the test with
 * the output when it does not exit 0. */
void test_sh(const char *dir, const char *cmd);

/* A free TCP port on 127.0.0.1, bound and released: another test can take it at any moment
 * after, so it is for a port nobody is to listen on (a refused connection). A server a test
 * starts binds port 0 itself and names its port, or test_listen_port() finds it. */
int test_free_port(void);
/* The TCP port process pid listens on (its first listening socket), or 0 while it listens on
 * none. For a server told to bind port 0 that does not say which port it got. Linux: reads
 * /proc/PID/fd and /proc/net/tcp{,6}. */
int test_listen_port(int pid);
/* True while pid runs; a zombie left for a non-reaping init counts as gone. */
bool test_pid_alive(pid_t pid);
/* The built rein binary and the folder with test programs (from the environment). */
const char *test_rein_bin(void);
const char *test_bin_dir(void);

/*
 * Fault injection. test_alloc_install() routes rein's allocations (jansson's too) through a
 * counting allocator; test_alloc_fail_at(n) makes the nth allocation from now fail (0: none).
 * test_alloc_torture(fn, arg) runs fn once to count its allocations, then once per allocation
 * with that one failing: fn must return normally (any error is fine) and leak nothing.
 */
void test_alloc_install(void);
void test_alloc_fail_at(long n);
long test_alloc_count(void);
long test_alloc_failures(void);
void test_alloc_torture(void (*fn)(void *arg), void *arg);
/*
 * Memory accounting: from test_mem_track_start() on, rein's allocations (jansson's and
 * expat's too) are counted by their usable size; test_mem_track_stop() restores the C
 * library's allocator and returns the peak of live bytes in between. Start and stop when no
 * other thread uses the library.
 */
void test_mem_track_start(void);
size_t test_mem_track_stop(void);

#endif /* REIN_TEST_H */
