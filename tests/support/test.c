/*
 * Shared helpers for rein's cmocka tests (tests/support/test.h): paths to shared data,
 * temporary folders, free ports and the fault-injecting allocator.
 */
#include "test.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

void test_assert_ok(int rc, const rein_error *err, const char *file, int line)
{
    if (rc == REIN_OK)
        return;
    print_error("%s:%d: expected REIN_OK, got %s (%d): %s%s%s\n", file, line, rein_err_name(rc), rc,
                err && err->where[0] ? err->where : "", err && err->where[0] ? ": " : "",
                err ? err->msg : "");
    fail();
}

const char *test_shared_dir(void)
{
    static char path[4096];
    const char *env = getenv("REIN_SHARED_DIR");
    struct stat st;

    if (!env || !*env)
        env = REIN_SHARED_DIR_DEFAULT;
    if (stat(env, &st) != 0 || !S_ISDIR(st.st_mode))
        return NULL;
    snprintf(path, sizeof(path), "%s", env);
    return path;
}

const char *test_shared_path(const char *subpath)
{
    static char path[4096];
    const char *dir = test_shared_dir();
    int len = snprintf(path, sizeof(path), "%s/%s", dir ? dir : "(no shared dir)", subpath);

    if (len < 0 || (size_t)len >= sizeof(path))
        fail_msg("the shared path %s/%s is longer than %zu bytes", dir ? dir : "", subpath,
                 sizeof(path) - 1);
    return path;
}

const char *test_require_shared(const char *subpath)
{
    const char *path = test_shared_path(subpath);
    struct stat st;

    if (!test_shared_dir() || stat(path, &st) != 0) {
        print_message("[  SKIPPED ] shared data %s is absent\n", subpath);
        skip();
    }
    return path;
}

char *test_tmpdir(void)
{
    char tmpl[] = "/tmp/rein-test-XXXXXX";
    char *dir = mkdtemp(tmpl);

    assert_non_null(dir);
    return strdup(dir);
}

void test_rmtree(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;

    if (!d) {
        unlink(path);
        return;
    }
    while ((e = readdir(d))) {
        char child[4096];
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
        if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
            test_rmtree(child);
        else
            unlink(child);
    }
    closedir(d);
    rmdir(path);
}

void test_walk_files(const char *dir, void (*fn)(const char *path, void *ud), void *ud)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    assert_non_null(d);
    while ((e = readdir(d))) {
        char path[4096];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (e->d_type == DT_DIR)
            test_walk_files(path, fn, ud);
        else
            fn(path, ud);
    }
    closedir(d);
}

static void mkdirs_for(const char *path)
{
    char tmp[4096];

    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
}

char *test_write_file(const char *dir, const char *name, const char *text)
{
    char *path = NULL;
    FILE *f;

    assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
    mkdirs_for(path);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    fclose(f);
    return path;
}

char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    return buf;
}

int test_free_port(void)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    socklen_t alen = sizeof(addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int port;

    assert_true(fd >= 0);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &alen), 0);
    port = ntohs(addr.sin_port);
    close(fd);
    return port;
}

/* The socket inodes among pid's descriptors, at most max; how many there are. */
static size_t socket_inodes(int pid, unsigned long *inodes, size_t max)
{
    char path[64], link[64];
    struct dirent *de;
    size_t n = 0;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/fd", pid);
    d = opendir(path);
    if (!d)
        return 0;
    while (n < max) {
        char fd_path[320];
        ssize_t len;
        unsigned long inode;

        de = readdir(d);
        if (!de)
            break;
        snprintf(fd_path, sizeof(fd_path), "%s/%s", path, de->d_name);
        len = readlink(fd_path, link, sizeof(link) - 1);
        if (len <= 0)
            continue;
        link[len] = '\0';
        if (sscanf(link, "socket:[%lu]", &inode) == 1)
            inodes[n++] = inode;
    }
    closedir(d);
    return n;
}

int test_listen_port(int pid)
{
    static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    unsigned long inodes[256];
    size_t n = socket_inodes(pid, inodes, REIN_ARRAY_SIZE(inodes));

    for (size_t t = 0; t < REIN_ARRAY_SIZE(tables) && n; t++) {
        FILE *f = fopen(tables[t], "r");
        char line[512];

        if (!f)
            continue;
        /* "sl local_address rem_address st ... inode": addresses are HEX_IP:HEX_PORT, a
         * listening socket's st is 0A. */
        while (fgets(line, sizeof(line), f)) {
            unsigned int port, st;
            unsigned long inode;
            if (sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*s %x %*s %*s %*s %*u %*u %lu", &port, &st,
                       &inode) != 3 ||
                st != 0x0A)
                continue;
            for (size_t i = 0; i < n; i++) {
                if (inodes[i] == inode) {
                    fclose(f);
                    return (int)port;
                }
            }
        }
        fclose(f);
    }
    return 0;
}

const char *test_rein_bin(void)
{
    const char *env = getenv("REIN_BIN");

    return env && *env ? env : REIN_BUILD_DIR "/rein";
}

const char *test_bin_dir(void)
{
    const char *env = getenv("REIN_TEST_BIN_DIR");

    return env && *env ? env : REIN_BUILD_DIR "/tests/bin";
}

/* The counting allocator: a thin layer over malloc, so memory from before it was installed
 * can still be freed through it. */
static atomic_long alloc_count;
static atomic_long fail_at;
static atomic_long failures;

static void *count_malloc(size_t size)
{
    long n = atomic_fetch_add(&alloc_count, 1) + 1;
    long f = atomic_load(&fail_at);

    if (f > 0 && n == f) {
        atomic_fetch_add(&failures, 1);
        return NULL;
    }
    return malloc(size);
}

static void *count_realloc(void *p, size_t size)
{
    long n = atomic_fetch_add(&alloc_count, 1) + 1;
    long f = atomic_load(&fail_at);

    if (f > 0 && n == f) {
        atomic_fetch_add(&failures, 1);
        return NULL;
    }
    return realloc(p, size);
}

void test_alloc_install(void)
{
    static const struct rein_allocator a = {count_malloc, count_realloc, free};

    rein_set_allocator(&a);
}

void test_alloc_fail_at(long n)
{
    atomic_store(&failures, 0);
    atomic_store(&alloc_count, 0);
    atomic_store(&fail_at, n);
}

long test_alloc_count(void)
{
    return atomic_load(&alloc_count);
}

long test_alloc_failures(void)
{
    return atomic_load(&failures);
}

void test_alloc_torture(void (*fn)(void *arg), void *arg)
{
    long total;

    test_alloc_install();
    test_alloc_fail_at(0);
    fn(arg);
    total = test_alloc_count();
    for (long i = 1; i <= total; i++) {
        test_alloc_fail_at(i);
        fn(arg);
    }
    test_alloc_fail_at(0);
    rein_set_allocator(NULL);
}

/* The measuring allocator: live bytes by malloc_usable_size, so memory from before it was
 * installed can still be freed through it (its bytes then count as freed). */
static atomic_llong live_bytes, peak_bytes;

static void track_add(long long n)
{
    long long now = atomic_fetch_add(&live_bytes, n) + n;
    long long peak = atomic_load(&peak_bytes);

    while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now))
        ;
}

static void *track_malloc(size_t size)
{
    void *p = malloc(size);

    if (p)
        track_add((long long)malloc_usable_size(p));
    return p;
}

static void *track_realloc(void *p, size_t size)
{
    long long before = p ? (long long)malloc_usable_size(p) : 0;
    void *q = realloc(p, size);

    if (q)
        track_add((long long)malloc_usable_size(q) - before);
    return q;
}

static void track_free(void *p)
{
    if (p)
        track_add(-(long long)malloc_usable_size(p));
    free(p);
}

void test_mem_track_start(void)
{
    static const struct rein_allocator a = {track_malloc, track_realloc, track_free};

    atomic_store(&live_bytes, 0);
    atomic_store(&peak_bytes, 0);
    rein_set_allocator(&a);
}

size_t test_mem_track_stop(void)
{
    rein_set_allocator(NULL);
    return (size_t)atomic_load(&peak_bytes);
}

void test_sh(const char *dir, const char *cmd)
{
    const char *argv[] = {"sh", "-c", cmd, NULL};
    struct rein_proc_run_opts o = {.proc = {.argv = argv, .cwd = dir, .merge_stderr = true},
                                   .timeout_ms = 60000};
    struct rein_proc_result r;

    assert_rein_ok(rein_proc_run(&o, &r, NULL), NULL);
    if (r.exit_code != 0)
        fail_msg("%s: %s", cmd, r.out.ptr);
    rein_proc_result_release(&r);
}

bool test_pid_alive(pid_t pid)
{
    char path[64], stat[256] = "";
    char *close_paren;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return false;
    if (!fgets(stat, sizeof(stat), f))
        stat[0] = '\0';
    fclose(f);
    close_paren = strrchr(stat, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] != 'Z';
}

rein_model_response *test_decode(const char *fmt_name, const char *text, size_t len, size_t chunk,
                                 bool lines, char *notes, size_t notes_size, rein_error *err)
{
    enum rein_wire_format fmt;
    struct rein_decoder_options opt = {.payload_lines = lines};
    rein_provider_decoder *d;
    rein_model_response *r = NULL;
    rein_err rc = REIN_OK;

    assert_rein_ok(rein_wire_format_parse(fmt_name, &fmt), NULL);
    d = rein_provider_decoder_new(fmt, &opt, NULL, NULL);
    assert_non_null(d);
    rein_error_clear(err);
    if (!chunk)
        chunk = len ? len : 1;
    for (size_t off = 0; off < len && !rc; off += chunk)
        rc = rein_provider_decoder_feed(d, text + off, len - off < chunk ? len - off : chunk, err);
    if (!rc)
        rc = rein_provider_decoder_finish(d, &r, err);
    if (notes)
        snprintf(notes, notes_size, "%s", rein_provider_decoder_notes(d));
    rein_provider_decoder_free(d);
    return rc ? NULL : r;
}

const json_t *test_json_at(const json_t *v, const char *path)
{
    char buf[256], *save = NULL, *tok;

    snprintf(buf, sizeof(buf), "%s", path);
    for (tok = strtok_r(buf, ".", &save); tok && v; tok = strtok_r(NULL, ".", &save)) {
        if (json_is_array(v))
            v = json_array_get(v, (size_t)strtoul(tok, NULL, 10));
        else
            v = json_object_get(v, tok);
    }
    return v;
}
