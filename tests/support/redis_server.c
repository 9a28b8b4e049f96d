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

struct test_redis *test_redis_start(void)
{
    return test_redis_start_on(0);
}

struct test_redis *test_redis_start_on(int on_port)
{
    const char *bin = find_redis();
    struct test_redis *r;
    char port[16], logfile[512];
    rein_proc *p = NULL;
    rein_error err;
    int64_t deadline;

    if (!bin) {
        print_message(
            "[  SKIPPED ] redis-server is not installed (apt-get install redis-server)\n");
        skip();
    }
    r = calloc(1, sizeof(*r));
    assert_non_null(r);
    r->dir = test_tmpdir();
    r->port = on_port ? on_port : test_free_port();
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
    deadline = rein_now_ms() + 10000;
    for (;;) {
        const char *reply = test_redis_command(r, "PING");
        if (reply && strncmp(reply, "+PONG", 5) == 0)
            break;
        if (rein_now_ms() > deadline) {
            test_redis_stop(r);
            fail_msg("redis-server did not answer on port %d", r->port);
        }
        rein_sleep_ms(10);
    }
    return r;
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
