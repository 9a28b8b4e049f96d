/*
 * The server's own acceptor (src/server/server_int.h; decision 0035).
 *
 * libmicrohttpd 0.9.75, the newest Debian has, answers a request whose Content-Length is not a
 * number (empty, a sign, blanks after it) or is past 2^64 with two stacked 400 (or 413) header
 * blocks: its error path writes the header block and its state machine writes it again
 * (fixed upstream in 0.9.77), and rein's handler never sees the request. So the server listens
 * itself: this thread accepts each connection, peeks (MSG_PEEK) at its first request head,
 * answers a malformed Content-Length with one 400 or 413 and closes, and hands every other
 * socket to libmicrohttpd untouched (MHD_add_connection), which reads the same bytes again.
 * Only a connection's first request is seen here: a later request on a kept-alive connection
 * is read by libmicrohttpd, and answered from its error log (the end of this file, decision
 * 0040).
 *
 * Most clients send the head with the connection, so it is usually judged at accept and the
 * socket never waits here. What held for a connection before still holds while it waits: its
 * head must be complete within the header timeout (counted from accept, as the server's
 * ticker counts it) and the client may not stay silent past the idle timeout,
 * the connections of one client address (waiting here and held by libmicrohttpd together)
 * stay within the per-client cap, and at most max_pending sockets wait at once (the
 * connection limit). Sockets wait in an epoll set, edge-triggered: a peek leaves the bytes in
 * the socket, so a level-triggered wait would wake at once again (a busy loop); an edge wakes
 * on each new arrival. A head that does not end within the peek buffer (the size of
 * libmicrohttpd's connection memory) is handed over as it is: libmicrohttpd refuses it.
 *
 * One thread, so the pending list and the peek buffer need no lock.
 */
#include "server/server_int.h"

#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define WHERE       "server"
#define PEEK_MAX    16384 /* libmicrohttpd's connection memory: a longer head is refused there */
#define ACCEPT_MAX  64    /* accepts per wake: the pending sockets get their turn too */
#define EMFILE_WAIT 100   /* ms without accepting when the process is out of descriptors */

/* A socket waiting for its first request head. */
struct pending {
    struct pending *next, *prev;
    int fd;
    int64_t deadline_ms; /* the header deadline */
    int64_t idle_ms;     /* when it is idle too long (0: never) */
    size_t seen;         /* bytes peeked so far */
    struct sockaddr_storage addr;
    socklen_t addrlen;
};

struct rein__acceptor {
    struct rein__acceptor_opts o;
    int lfd, ep, stop_fd;
    int port;
    pthread_t thread;
    bool running;
    struct pending *head;
    unsigned npending;
    int64_t paused_until; /* out of descriptors: not accepting until then (0: accepting) */
    char buf[PEEK_MAX];
};

/* Markers in epoll_event.data for the two descriptors that are not pending sockets. */
static char listen_mark, stop_mark;

bool rein__same_client(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family)
        return false;
    if (a->sa_family == AF_INET)
        return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                      &((const struct sockaddr_in *)b)->sin_addr, sizeof(struct in_addr)) == 0;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
    return false;
}

static void pending_drop(struct rein__acceptor *a, struct pending *p, bool close_fd)
{
    (void)epoll_ctl(a->ep, EPOLL_CTL_DEL, p->fd, NULL);
    if (close_fd)
        close(p->fd);
    if (p->prev)
        p->prev->next = p->next;
    else
        a->head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    a->npending--;
    rein_free(p);
}

/*
 * Writes the one answer to a malformed Content-Length (status 400 or 413, rein's JSON error)
 * on fd and shuts its sending side; fd stays open. What arrived is read first (into scratch),
 * so the close that follows is a FIN after the answer rather than a reset that could destroy
 * it.
 */
static void answer_length(int fd, int status, char *scratch, size_t cap)
{
    const char *msg = status == 413 ? "the Content-Length is larger than any body this server takes"
                                    : "the Content-Length is not a decimal number of bytes";
    const char *code = status == 413 ? "payload_too_large" : "bad_request";
    const char *reason = status == 413 ? "Content Too Large" : "Bad Request";
    char body[256], head[256];
    int bn =
        snprintf(body, sizeof(body), "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}", code, msg);
    int hn = snprintf(head, sizeof(head),
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: "
                      "%d\r\nConnection: close\r\n\r\n",
                      status, reason, bn);

    for (int i = 0; i < 4 && recv(fd, scratch, cap, MSG_DONTWAIT) > 0; i++)
        ;
    /* Small enough for any socket's send buffer: a short write means the client is gone. */
    if (send(fd, head, (size_t)hn, MSG_NOSIGNAL | MSG_MORE) == hn)
        (void)send(fd, body, (size_t)bn, MSG_NOSIGNAL);
    (void)shutdown(fd, SHUT_WR);
    rein_log(REIN_LOG_INFO, WHERE, "a request head with a malformed Content-Length: %d", status);
}

/* Answers the first head's refusal (status 400 or 413) on fd and closes it. */
static void refuse(struct rein__acceptor *a, int fd, int status)
{
    answer_length(fd, status, a->buf, sizeof(a->buf));
    close(fd);
}

/* What to do with a socket, from what its client has sent so far. */
enum look { L_WAIT, L_HAND, L_CLOSE, L_400 = 400, L_413 = 413 };

/* Peeks at fd; *seen is the number of bytes there (unchanged when none could be read). */
static enum look look(struct rein__acceptor *a, int fd, size_t *seen)
{
    ssize_t n = recv(fd, a->buf, sizeof(a->buf), MSG_PEEK | MSG_DONTWAIT);
    bool complete;
    int verdict;

    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return L_WAIT;
    if (n <= 0)
        return L_CLOSE; /* gone before it asked anything */
    *seen = (size_t)n;
    verdict = rein__http_head_verdict(a->buf, (size_t)n, &complete);
    if (verdict)
        return verdict == 413 ? L_413 : L_400;
    /* The rest of the head is still on its way (the next edge brings it), or it is longer
     * than libmicrohttpd takes (it refuses that itself). */
    return complete || (size_t)n == sizeof(a->buf) ? L_HAND : L_WAIT;
}

/* Does what look() decided for fd, which is in no epoll set of the acceptor any more. */
static void act(struct rein__acceptor *a, enum look l, int fd, const struct sockaddr *addr,
                socklen_t len)
{
    if (l == L_HAND)
        a->o.hand(a->o.ctx, fd, addr, len);
    else if (l == L_CLOSE)
        close(fd);
    else
        refuse(a, fd, (int)l);
}

/* A waiting socket's client sent something (or went away). */
static void examine(struct rein__acceptor *a, struct pending *p)
{
    size_t seen = p->seen;
    enum look l = look(a, p->fd, &seen);
    int fd = p->fd;
    struct sockaddr_storage addr = p->addr;
    socklen_t len = p->addrlen;

    if (seen > p->seen && a->o.idle_timeout_ms > 0)
        p->idle_ms = rein_now_ms() + a->o.idle_timeout_ms;
    p->seen = seen;
    if (l == L_WAIT)
        return;
    pending_drop(a, p, false);
    act(a, l, fd, (const struct sockaddr *)&addr, len);
}

static unsigned pending_of(const struct rein__acceptor *a, const struct sockaddr *addr)
{
    unsigned n = 0;

    for (const struct pending *p = a->head; p; p = p->next)
        n += rein__same_client((const struct sockaddr *)&p->addr, addr);
    return n;
}

/* Accepts what waits in the backlog (up to ACCEPT_MAX). */
static void accept_some(struct rein__acceptor *a)
{
    for (int i = 0; i < ACCEPT_MAX; i++) {
        struct sockaddr_storage addr = {0};
        socklen_t len = sizeof(addr);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET};
        struct pending *p;
        size_t seen = 0;
        enum look l;
        int fd = accept4(a->lfd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* The backlog stays readable: pause rather than spin on it. */
                struct epoll_event off = {.events = 0, .data.ptr = &listen_mark};
                (void)epoll_ctl(a->ep, EPOLL_CTL_MOD, a->lfd, &off);
                a->paused_until = rein_now_ms() + EMFILE_WAIT;
                rein_log(REIN_LOG_WARN, WHERE, "cannot accept connections: %s", strerror(errno));
            }
            return;
        }
        /* Over the limits: closed at once, as libmicrohttpd closes them. */
        if (a->npending >= a->o.max_pending ||
            (a->o.max_per_client && pending_of(a, (struct sockaddr *)&addr) +
                                            a->o.held(a->o.ctx, (struct sockaddr *)&addr) >=
                                        a->o.max_per_client)) {
            close(fd);
            continue;
        }
        /* The head usually arrived with the connection: then it needs no waiting. */
        l = look(a, fd, &seen);
        if (l != L_WAIT) {
            act(a, l, fd, (const struct sockaddr *)&addr, len);
            continue;
        }
        p = rein_calloc(1, sizeof(*p));
        if (!p) {
            close(fd);
            continue;
        }
        p->seen = seen;
        p->fd = fd;
        p->deadline_ms = rein_now_ms() + a->o.header_timeout_ms;
        p->idle_ms = a->o.idle_timeout_ms > 0 ? rein_now_ms() + a->o.idle_timeout_ms : 0;
        p->addr = addr;
        p->addrlen = len;
        ev.data.ptr = p;
        if (epoll_ctl(a->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            rein_free(p);
            continue;
        }
        p->next = a->head;
        if (a->head)
            a->head->prev = p;
        a->head = p;
        a->npending++; /* bytes that came meanwhile are an edge already: the add saw them */
    }
}

/* Closes the sockets whose head did not arrive in time, or that sent nothing for the idle
 * timeout (as libmicrohttpd closes an idle connection); returns ms to the next deadline (-1:
 * none, capped at a second). */
static int expire(struct rein__acceptor *a)
{
    int64_t now = rein_now_ms(), next = -1;
    struct pending *p = a->head;

    while (p) {
        struct pending *n = p->next;
        int64_t due = p->idle_ms && p->idle_ms < p->deadline_ms ? p->idle_ms : p->deadline_ms;
        if (due <= now)
            pending_drop(a, p, true);
        else if (next < 0 || due - now < next)
            next = due - now;
        p = n;
    }
    if (a->paused_until) {
        if (a->paused_until <= now) {
            struct epoll_event on = {.events = EPOLLIN, .data.ptr = &listen_mark};
            (void)epoll_ctl(a->ep, EPOLL_CTL_MOD, a->lfd, &on);
            a->paused_until = 0;
        } else if (next < 0 || a->paused_until - now < next) {
            next = a->paused_until - now;
        }
    }
    return next < 0 || next > 1000 ? (next < 0 ? -1 : 1000) : (int)next + 1;
}

static void *acceptor_main(void *arg)
{
    struct rein__acceptor *a = arg;
    struct epoll_event evs[64];

    for (;;) {
        int n = epoll_wait(a->ep, evs, 64, expire(a));
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &stop_mark)
                return NULL;
            if (evs[i].data.ptr == &listen_mark)
                accept_some(a);
            else
                examine(a, evs[i].data.ptr);
        }
        if (n < 0 && errno != EINTR) {
            rein_log(REIN_LOG_ERROR, WHERE, "the acceptor stops: epoll_wait: %s", strerror(errno));
            return NULL;
        }
    }
}

/* The listening socket on o->addr (SO_REUSEADDR, IPv6 only for an IPv6 address, as
 * libmicrohttpd set it up before); -1 with errno. */
static int listen_on(const struct sockaddr *addr, socklen_t len)
{
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;

    if (fd < 0)
        return -1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        (addr->sa_family == AF_INET6 &&
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) ||
        bind(fd, addr, len) != 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int bound_port(int fd)
{
    union {
        struct sockaddr sa;
        struct sockaddr_in v4;
        struct sockaddr_in6 v6;
    } u;
    socklen_t len = sizeof(u);

    memset(&u, 0, sizeof(u));
    if (getsockname(fd, &u.sa, &len) != 0)
        return -1;
    return ntohs(u.sa.sa_family == AF_INET ? u.v4.sin_port : u.v6.sin6_port);
}

static void acceptor_close(struct rein__acceptor *a)
{
    while (a->head)
        pending_drop(a, a->head, true);
    if (a->ep >= 0)
        close(a->ep);
    if (a->stop_fd >= 0)
        close(a->stop_fd);
    if (a->lfd >= 0)
        close(a->lfd);
    rein_free(a);
}

rein_err rein__acceptor_listen(const struct rein__acceptor_opts *o, struct rein__acceptor **out,
                               rein_error *err)
{
    struct rein__acceptor *a = rein_calloc(1, sizeof(*a));

    *out = NULL;
    if (!a)
        return rein_error_set(err, REIN_ENOMEM, "server: out of memory");
    a->o = *o;
    a->ep = a->stop_fd = -1;
    a->lfd = listen_on(o->addr, o->addrlen);
    if (a->lfd < 0) {
        rein_free(a);
        return rein_error_set(err, REIN_EIO, "cannot listen: %s", strerror(errno));
    }
    a->port = bound_port(a->lfd);
    *out = a;
    return REIN_OK;
}

int rein__acceptor_port(const struct rein__acceptor *a)
{
    return a ? a->port : -1;
}

rein_err rein__acceptor_start(struct rein__acceptor *a, rein_error *err)
{
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &listen_mark};
    struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &stop_mark};

    a->ep = epoll_create1(EPOLL_CLOEXEC);
    a->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (a->ep < 0 || a->stop_fd < 0 || epoll_ctl(a->ep, EPOLL_CTL_ADD, a->lfd, &lev) != 0 ||
        epoll_ctl(a->ep, EPOLL_CTL_ADD, a->stop_fd, &sev) != 0)
        return rein_error_set(err, REIN_EIO, "server: cannot set up the acceptor: %s",
                              strerror(errno));
    if (pthread_create(&a->thread, NULL, acceptor_main, a) != 0)
        return rein_error_set(err, REIN_ENOMEM, "server: cannot start the acceptor thread");
    a->running = true;
    return REIN_OK;
}

void rein__acceptor_free(struct rein__acceptor *a)
{
    uint64_t one = 1;

    if (!a)
        return;
    if (a->running) {
        if (write(a->stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
            rein_log(REIN_LOG_ERROR, WHERE, "cannot stop the acceptor: %s", strerror(errno));
        pthread_join(a->thread, NULL);
    }
    acceptor_close(a);
}

/* ---- later requests of a kept-alive connection ------------------------------------------ */

/*
 * libmicrohttpd reads a kept-alive connection's later heads itself; the acceptor never sees
 * them. None of rein's callbacks runs between 0.9.75's two header blocks, but its error log
 * runs before either is built: parse_connection_headers logs the malformed length, then
 * transmit_error_response builds the first block, the state machine the second, and the
 * socket is written after that. The log has no connection, so the URI callback, which runs
 * for every request as its request line is parsed on the connection's own network thread,
 * records the connection per thread; the log then answers it once and shuts the socket's
 * sending side, libmicrohttpd's own write fails, and it closes the connection.
 *
 * A network thread serves many connections, and a head that arrives in parts lets another
 * connection's request line in between. So the record is dropped when its request reaches
 * the handler or completes and when anything else is logged, and the log acts only when the
 * recorded connection's head is complete (MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE): a thread
 * parses one head at a time, and a recorded connection with a complete head that has neither
 * reached the handler nor failed is the one being parsed. In doubt it does nothing, and the
 * client gets libmicrohttpd's two blocks.
 */
static _Thread_local struct MHD_Connection *parsing;

void rein__mhd_request_line(struct MHD_Connection *c)
{
    parsing = c;
}

void rein__mhd_request_left(struct MHD_Connection *c)
{
    if (parsing == c)
        parsing = NULL;
}

bool rein__mhd_logged(const char *fmt)
{
    /* 0.9.75's two messages for a refused length, logged before its answer is built. */
    static const char bad[] = "Failed to parse `Content-Length' header.";
    static const char big[] = "Too large value of 'Content-Length' header.";
    struct MHD_Connection *c = parsing;
    const union MHD_ConnectionInfo *fd;
    char scratch[4096];
    int status;

    parsing = NULL;
    if (!c)
        return false;
    if (strncmp(fmt, bad, sizeof(bad) - 1) == 0)
        status = 400;
    else if (strncmp(fmt, big, sizeof(big) - 1) == 0)
        status = 413;
    else
        return false;
    fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!fd || !MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE))
        return false;
    answer_length(fd->connect_fd, status, scratch, sizeof(scratch));
    return true;
}
