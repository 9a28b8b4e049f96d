/*
 * tests/support/tcp_relay.h: a TCP relay that holds a port while the server behind it
 * restarts.
 */
#include "tcp_relay.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#define RELAY_PAIRS 64

struct relay_pair {
    int fd[2]; /* the client's connection, the server's; -1 when the slot is free */
};

struct tcp_relay {
    int listen_fd;
    int wake[2]; /* a byte on wake[1] stops the thread */
    int port;
    atomic_int target;
    pthread_t thread;
    struct relay_pair pairs[RELAY_PAIRS];
};

/* Closes fd so that the peer sees a reset rather than an end of stream. */
static void close_reset(int fd)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};

    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}

/* A connection to 127.0.0.1:port, or -1. */
static int connect_to(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void accept_one(struct tcp_relay *r)
{
    int client = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    int target = atomic_load(&r->target);
    int server;

    if (client < 0)
        return;
    server = target > 0 ? connect_to(target) : -1;
    if (server < 0) {
        close_reset(client);
        return;
    }
    for (size_t i = 0; i < RELAY_PAIRS; i++) {
        if (r->pairs[i].fd[0] < 0) {
            r->pairs[i].fd[0] = client;
            r->pairs[i].fd[1] = server;
            return;
        }
    }
    close_reset(client);
    close(server);
}

/* Moves what can be read from `from` to `to`; false when either side is done. */
static bool pump(int from, int to)
{
    char buf[16384];
    ssize_t n = read(from, buf, sizeof(buf));

    if (n < 0 && errno == EINTR)
        return true;
    if (n <= 0)
        return false;
    for (ssize_t off = 0; off < n;) {
        ssize_t w = send(to, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        off += w;
    }
    return true;
}

static void pair_close(struct relay_pair *p)
{
    close(p->fd[0]);
    close(p->fd[1]);
    p->fd[0] = p->fd[1] = -1;
}

static void *relay_main(void *arg)
{
    struct tcp_relay *r = arg;
    struct pollfd pfd[2 + 2 * RELAY_PAIRS];
    size_t slot[2 * RELAY_PAIRS];

    for (;;) {
        nfds_t n = 2;

        pfd[0] = (struct pollfd){.fd = r->wake[0], .events = POLLIN};
        pfd[1] = (struct pollfd){.fd = r->listen_fd, .events = POLLIN};
        for (size_t i = 0; i < RELAY_PAIRS; i++) {
            if (r->pairs[i].fd[0] < 0)
                continue;
            for (int side = 0; side < 2; side++) {
                slot[n - 2] = i;
                pfd[n++] = (struct pollfd){.fd = r->pairs[i].fd[side], .events = POLLIN};
            }
        }
        if (poll(pfd, n, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pfd[0].revents)
            break;
        for (nfds_t k = 2; k < n; k++) {
            struct relay_pair *p = &r->pairs[slot[k - 2]];
            int side = (k - 2) % 2;
            if (!pfd[k].revents || p->fd[side] != pfd[k].fd)
                continue;
            if (!pump(p->fd[side], p->fd[1 - side]))
                pair_close(p);
        }
        if (pfd[1].revents)
            accept_one(r);
    }
    for (size_t i = 0; i < RELAY_PAIRS; i++) {
        if (r->pairs[i].fd[0] >= 0)
            pair_close(&r->pairs[i]);
    }
    return NULL;
}

struct tcp_relay *tcp_relay_start(int target)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t alen = sizeof(a);
    struct tcp_relay *r = calloc(1, sizeof(*r));

    assert_non_null(r);
    for (size_t i = 0; i < RELAY_PAIRS; i++)
        r->pairs[i].fd[0] = r->pairs[i].fd[1] = -1;
    atomic_init(&r->target, target);
    r->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(r->listen_fd >= 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(r->listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(r->listen_fd, 64), 0);
    assert_int_equal(getsockname(r->listen_fd, (struct sockaddr *)&a, &alen), 0);
    r->port = ntohs(a.sin_port);
    assert_int_equal(pipe2(r->wake, O_CLOEXEC), 0);
    assert_int_equal(pthread_create(&r->thread, NULL, relay_main, r), 0);
    return r;
}

int tcp_relay_port(const struct tcp_relay *r)
{
    return r->port;
}

void tcp_relay_target(struct tcp_relay *r, int target)
{
    atomic_store(&r->target, target);
}

void tcp_relay_stop(struct tcp_relay *r)
{
    if (!r)
        return;
    while (write(r->wake[1], "x", 1) < 0 && errno == EINTR)
        ;
    pthread_join(r->thread, NULL);
    close(r->wake[0]);
    close(r->wake[1]);
    close(r->listen_fd);
    free(r);
}
