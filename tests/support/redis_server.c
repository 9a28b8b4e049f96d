/*
 * tests/support/redis_server.h: start and stop a real redis-server for a test.
 */
#include "redis_server.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *find_redis(void)
{
    static const char *const paths[] = {"/usr/bin/redis-server", "/usr/local/bin/redis-server",
                                        "/usr/sbin/redis-server"};

    for (size_t i = 0; i < REIN_ARRAY_SIZE(paths); i++) {
        if (access(paths[i], X_OK) == 0)
            return paths[i];
    }
    return NULL;
}

const char *test_redis_command(const struct test_redis *r, const char *command)
{
    static char reply[512];
    struct sockaddr_in addr = {.sin_family = AF_INET};
    struct pollfd pfd;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ssize_t n;
    size_t len = 0;

    if (fd < 0)
        return NULL;
    addr.sin_port = htons((uint16_t)r->port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        goto fail;
    if (write(fd, command, strlen(command)) < 0 || write(fd, "\r\n", 2) < 0)
        goto fail;
    pfd.fd = fd;
    pfd.events = POLLIN;
    while (len < sizeof(reply) - 1 && poll(&pfd, 1, 5000) > 0) {
        n = read(fd, reply + len, sizeof(reply) - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        if (memchr(reply, '\n', len))
            break;
    }
    close(fd);
    reply[len] = '\0';
    return len ? reply : NULL;
fail:
    close(fd);
    return NULL;
}

/* What redis-server wrote to its log so far (empty when nothing), in a static buffer. */
static const char *start_log(const struct test_redis *r)
{
    static char text[4096];
    char path[600];
    char *log;

    snprintf(path, sizeof(path), "%s/redis.log", r->dir);
    log = test_read_file(path, NULL);
    snprintf(text, sizeof(text), "%s", log ? log : "");
    free(log);
    return text;
}

/* Starts redis-server on r->port and waits until it answers. True when it did; false, with
 * nothing left running, when the port was taken before redis-server bound it. */
static bool start_on_port(struct test_redis *r, const char *bin)
{
    char port[16], logfile[600];
    rein_proc *p = NULL;
    rein_error err;
    int64_t deadline = rein_now_ms() + 10000;
    int code;

    snprintf(port, sizeof(port), "%d", r->port);
    snprintf(logfile, sizeof(logfile), "%s/redis.log", r->dir);
    snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d", r->port);
    {
        const char *argv[] = {bin,     "--port",       port, "--bind", "127.0.0.1", "--save",
                              "",      "--appendonly", "no", "--dir",  r->dir,      "--logfile",
                              logfile, "--daemonize",  "no", NULL};
        struct rein_proc_opts opts = {.argv = argv};
        assert_rein_ok(rein_proc_start(&opts, &p, &err), &err);
    }
    rein_proc_close_stdin(p);
    r->proc = p;
    for (;;) {
        /* Up to 10 ms for it to exit: it does at once when it cannot bind. */
        if (rein_proc_wait(p, 10, &code) == REIN_OK) {
            const char *log = start_log(r);
            r->proc = NULL;
            rein_proc_free(p);
            if (strstr(log, "Address already in use")) {
                unlink(logfile);
                return false;
            }
            print_error("redis-server on port %d exited with %d: %s\n", r->port, code, log);
            test_redis_stop(r);
            fail();
        }
        /* Its log says so once it listens; then a PING that answers came from this server, not
         * from one another test started on the same port. */
        if (strstr(start_log(r), "Ready to accept connections")) {
            const char *reply = test_redis_command(r, "PING");
            if (reply && strncmp(reply, "+PONG", 5) == 0)
                return true;
        }
        if (rein_now_ms() > deadline) {
            print_error("redis-server did not answer on port %d: %s\n", r->port, start_log(r));
            test_redis_stop(r);
            fail();
        }
    }
}

struct test_redis *test_redis_start(void)
{
    const char *bin = find_redis();
    struct test_redis *r;

    if (!bin) {
        print_message(
            "[  SKIPPED ] redis-server is not installed (apt-get install redis-server)\n");
        skip();
    }
    r = calloc(1, sizeof(*r));
    assert_non_null(r);
    r->dir = test_tmpdir();
    /* redis-server cannot bind port 0 and say which port it got: a port found free here can
     * be taken by another test before redis-server binds it, and then it is tried again with
     * another. */
    for (int attempt = 0; attempt < 5; attempt++) {
        r->port = test_free_port();
        if (start_on_port(r, bin))
            return r;
    }
    test_redis_stop(r);
    fail_msg("redis-server found its port taken 5 times");
    return NULL;
}

void test_redis_stop(struct test_redis *r)
{
    int code = 0;

    if (!r)
        return;
    if (r->proc) {
        rein_proc_kill(r->proc, SIGTERM);
        if (rein_proc_wait(r->proc, 5000, &code) != REIN_OK)
            rein_proc_kill(r->proc, SIGKILL);
        rein_proc_free(r->proc);
    }
    test_rmtree(r->dir);
    free(r->dir);
    free(r);
}
