/*
 * What the MCP client's OAuth keeps on this machine (src/mcp/oauth_int.h): the loopback
 * listener the authorization server redirects the browser to (RFC 8252 §7.3: 127.0.0.1, any
 * port, one path), and the token file under rein's state folder (mode 0600; written through a
 * new file renamed into place, under a lock, so two rein processes never lose each other's
 * tokens and a crash never leaves half a file). Tokens are never logged.
 */
#include "mcp/oauth_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define WHERE        "mcp/oauth"
#define MAX_REQUEST  8192
#define READ_WAIT_MS 5000

/* ---- the loopback redirect ------------------------------------------------------------------ */

rein_err rein__oauth_loopback_open(struct rein__oauth_loopback *lb, int port, rein_error *err)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    socklen_t alen = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    lb->fd = -1;
    lb->port = 0;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 8) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return rein_error_set(err, REIN_EIO,
                              "cannot listen on 127.0.0.1:%d for the authorization redirect: %s",
                              port, strerror(e));
    }
    lb->fd = fd;
    lb->port = ntohs(a.sin_port);
    return REIN_OK;
}

void rein__oauth_loopback_close(struct rein__oauth_loopback *lb)
{
    if (lb->fd >= 0)
        close(lb->fd);
    lb->fd = -1;
}

static void answer(int fd, int status, const char *text)
{
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: %zu\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
                     status,
                     status == 200   ? "OK"
                     : status == 400 ? "Bad Request"
                                     : "Not Found",
                     strlen(text));
    /* The browser gets what can be sent; a short write changes nothing for rein. */
    if (n > 0 && write(fd, head, (size_t)n) == n)
        (void)!write(fd, text, strlen(text));
}

/* Reads one request head (up to the blank line) from fd into buf; false when it does not come
 * in time, is too long, or holds a NUL. */
static bool read_head(int fd, char *buf, size_t size)
{
    size_t n = 0;
    int64_t until = rein_now_ms() + READ_WAIT_MS;

    while (n + 1 < size) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t left = until - rein_now_ms();
        ssize_t got;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return false;
        got = read(fd, buf + n, size - 1 - n);
        if (got <= 0)
            return false;
        if (memchr(buf + n, '\0', (size_t)got))
            return false;
        n += (size_t)got;
        buf[n] = '\0';
        if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
            return true;
    }
    return false;
}

/* Compares a and b in time that does not depend on where they differ. */
static bool same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;

    for (size_t i = 0; i < la && i < lb; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

/* One connection: 1 the redirect with a code, 0 something else (answered, keep waiting),
 * a REIN_E* code when the redirect says the authorization failed or is not ours. */
static int handle(int fd, const char *state, char *code, size_t size, rein_error *err)
{
    char req[MAX_REQUEST], got_state[512], error[128], *q, *sp;

    if (!read_head(fd, req, sizeof(req)))
        return 0;
    if (strncmp(req, "GET /callback", 13) != 0 || (req[13] != '?' && req[13] != ' ')) {
        answer(fd, 404, "Not found.\n");
        return 0;
    }
    q = req[13] == '?' ? req + 14 : req + 13;
    sp = strpbrk(q, " \r\n");
    if (sp)
        *sp = '\0';
    if (!rein__oauth_query_get(q, "state", got_state, sizeof(got_state)) ||
        !same_secret(got_state, state)) {
        /* Not the answer to the request rein made (RFC 6749 §10.12): refused, not used. */
        answer(fd, 400,
               "rein: this authorization answer does not belong to the login in "
               "progress (its state differs); it was not used.\n");
        return rein_error_set(err, REIN_EDENIED,
                              "the authorization redirect carried a state that is not the one "
                              "rein sent; it was refused (start the login again)");
    }
    if (rein__oauth_query_get(q, "error", error, sizeof(error))) {
        answer(fd, 400, "rein: the authorization server refused the authorization.\n");
        for (char *c = error; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
                *c = '?';
        return rein_error_set(err, REIN_EDENIED, "the authorization server answered \"%s\"", error);
    }
    if (!rein__oauth_query_get(q, "code", code, size) || !code[0]) {
        answer(fd, 400, "rein: the redirect carried no authorization code.\n");
        return rein_error_set(err, REIN_EDENIED,
                              "the authorization redirect carried no code (and no error)");
    }
    answer(fd, 200, "rein: authorized. You can close this window.\n");
    return 1;
}

rein_err rein__oauth_loopback_wait(struct rein__oauth_loopback *lb, const char *state,
                                   int64_t timeout_ms, rein_cancel *cancel, char *code, size_t size,
                                   rein_error *err)
{
    int64_t until = rein_now_ms() + timeout_ms;

    for (;;) {
        struct pollfd p[2] = {{.fd = lb->fd, .events = POLLIN},
                              {.fd = cancel ? rein_cancel_fd(cancel) : -1, .events = POLLIN}};
        int64_t left = until - rein_now_ms();
        int fd, rc;
        if (left <= 0)
            return rein_error_set(err, REIN_ETIMEDOUT,
                                  "no authorization arrived at http://127.0.0.1:%d/callback "
                                  "within %lld s",
                                  lb->port, (long long)(timeout_ms / 1000));
        if (poll(p, 2, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
            return rein_error_set(err, REIN_EIO, "waiting for the authorization redirect: %s",
                                  strerror(errno));
        if (cancel && rein_cancel_is_set(cancel))
            return rein_error_set(err, REIN_ECANCELED,
                                  "cancelled while waiting for the "
                                  "authorization redirect");
        if (!(p[0].revents & POLLIN))
            continue;
        fd = accept4(lb->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        rc = handle(fd, state, code, size, err);
        close(fd);
        if (rc == 1)
            return REIN_OK;
        if (rc < 0)
            return rc;
    }
}

/* ---- the token file ------------------------------------------------------------------------- */

bool rein__mcp_state_dir(char *out, size_t size)
{
    const char *dir = getenv("REIN_STATE_DIR"), *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    int n;

    if (dir && dir[0] == '/')
        n = snprintf(out, size, "%s", dir);
    else if (xdg && xdg[0] == '/')
        n = snprintf(out, size, "%s/rein", xdg);
    else if (home && home[0] == '/')
        n = snprintf(out, size, "%s/.local/state/rein", home);
    else
        return false;
    return n > 0 && (size_t)n < size;
}

bool rein__oauth_store_path(char *out, size_t size)
{
    char dir[3000];
    int n;

    if (!rein__mcp_state_dir(dir, sizeof(dir)))
        return false;
    n = snprintf(out, size, "%s/mcp-oauth.json", dir);
    return n > 0 && (size_t)n < size;
}

rein_err rein__mcp_make_state_dir(const char *dir, rein_error *err)
{
    char path[3000];

    snprintf(path, sizeof(path), "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        (void)mkdir(path, 0755);
        *p = '/';
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return rein_error_set(err, REIN_EIO, "cannot create %s: %s", path, strerror(errno));
    return REIN_OK;
}

/* The whole file (a new object; empty when there is no file). */
static rein_err read_all(const char *path, json_t **out, rein_error *err)
{
    struct stat st;
    json_error_t jerr;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

    *out = NULL;
    if (fd < 0) {
        if (errno != ENOENT)
            return rein_error_set(err, REIN_EIO, "cannot read %s: %s", path, strerror(errno));
        *out = json_object();
        return *out ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) ||
        st.st_uid != geteuid()) {
        close(fd);
        return rein_error_set(err, REIN_EDENIED,
                              "%s is readable by others or not yours; rein does not use tokens "
                              "that may have leaked (remove it and log in again)",
                              path);
    }
    *out = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr);
    close(fd);
    if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return rein_error_set(err, REIN_EPARSE, "%s is not a JSON object (line %d: %s)", path,
                              jerr.line, jerr.text);
    }
    return REIN_OK;
}

rein_err rein__oauth_store_load(const char *key, json_t **out, rein_error *err)
{
    char path[3100];
    json_t *all;
    rein_err rc;

    *out = NULL;
    if (!rein__oauth_store_path(path, sizeof(path)))
        return REIN_OK; /* no state folder: nothing stored */
    rc = read_all(path, &all, err);
    if (rc)
        return rc;
    *out = json_incref(json_object_get(all, key));
    json_decref(all);
    return REIN_OK;
}

static rein_err write_file(const char *path, const json_t *all, rein_error *err)
{
    char tmp[3300];
    char *text = rein_json_dumps(all);
    size_t len = text ? strlen(text) : 0;
    int fd;
    bool ok;

    if (!text)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    (void)unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    ok = fd >= 0 && fchmod(fd, 0600) == 0 && write(fd, text, len) == (ssize_t)len &&
         write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    rein_free(text);
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        (void)unlink(tmp);
        return rein_error_set(err, REIN_EIO, "cannot write %s: %s", path, strerror(e));
    }
    return REIN_OK;
}

rein_err rein__oauth_store_save(const char *key, json_t *entry, rein_error *err)
{
    char path[3100], dir[3000], lock[3200];
    json_t *all = NULL;
    int lfd;
    rein_err rc;

    if (!rein__mcp_state_dir(dir, sizeof(dir)) || !rein__oauth_store_path(path, sizeof(path)))
        return rein_error_set(err, REIN_EINVAL,
                              "no folder for the MCP tokens: set REIN_STATE_DIR or HOME");
    rc = rein__mcp_make_state_dir(dir, err);
    if (rc)
        return rc;
    snprintf(lock, sizeof(lock), "%s.lock", path);
    lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lfd < 0 || flock(lfd, LOCK_EX) != 0) {
        if (lfd >= 0)
            close(lfd);
        return rein_error_set(err, REIN_EIO, "cannot lock %s: %s", lock, strerror(errno));
    }
    rc = read_all(path, &all, err);
    if (!rc) {
        rc = entry ? (json_object_set(all, key, entry) ? REIN_ENOMEM : REIN_OK)
                   : (json_object_del(all, key), REIN_OK);
        if (rc)
            rein_error_set(err, rc, "out of memory");
    }
    if (!rc)
        rc = write_file(path, all, err);
    json_decref(all);
    close(lfd); /* releases the lock */
    if (!rc)
        rein_log(REIN_LOG_DEBUG, WHERE, "stored the authorization for %s in %s", key, path);
    return rc;
}
