/*
 * The HTTP skill host the runner tests call (skill_http.h): real sockets on loopback, one
 * thread per connection so /hang can block its own request without stalling the others.
 */
#include "skill_http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct skill_http {
    struct MHD_Daemon *d;
    int port;
    pthread_mutex_t lock;
    pthread_cond_t stop_cond;
    bool stopping;
    int requests;
};

struct upload {
    char *data;
    size_t len;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             const char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc;

    MHD_add_response_header(r, "Content-Type", type);
    rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static void hang(struct skill_http *s)
{
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&s->stop_cond, &s->lock, &until);
    }
    pthread_mutex_unlock(&s->lock);
}

static enum MHD_Result answer(struct skill_http *s, struct MHD_Connection *c, const char *url,
                              struct upload *u)
{
    static const char html[] = "<!doctype html><html><head><title>Sign in</title></head>"
                               "<body><form>Login</form></body></html>";
    static const char error[] = "{\"ok\": false, \"error\": {\"code\": \"denied\", \"message\": "
                                "\"quota exceeded\", \"details\": []}}";
    const char *trace = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Trace-Id");
    enum MHD_Result rc;

    if (strcmp(url, "/ok") == 0) {
        size_t n = u->len + 256;
        char *body = malloc(n);
        int len = snprintf(body, n,
                           "{\"ok\": true, \"output\": {\"received\": %.*s, "
                           "\"trace\": \"%s\"}}",
                           (int)u->len, u->data ? u->data : "null", trace ? trace : "");
        rc = reply(c, 200, "application/json", body, (size_t)len);
        free(body);
        return rc;
    }
    if (strcmp(url, "/raw") == 0)
        return reply(c, 200, "application/json; charset=utf-8", "{\"answer\": 42}", 14);
    if (strcmp(url, "/hang") == 0) {
        hang(s);
        return reply(c, 503, "text/plain", "stopping", 8);
    }
    if (strcmp(url, "/html") == 0)
        return reply(c, 200, "text/html; charset=utf-8", html, sizeof(html) - 1);
    if (strcmp(url, "/error") == 0)
        return reply(c, 500, "application/json", error, sizeof(error) - 1);
    if (strcmp(url, "/gateway") == 0)
        return reply(c, 502, "text/plain", "Bad Gateway", 11);
    if (strcmp(url, "/broken") == 0)
        return reply(c, 200, "application/json", "{\"ok\": tru", 10);
    if (strcmp(url, "/big") == 0) {
        size_t n = (size_t)2 << 20;
        char *body = malloc(n + 16);
        memcpy(body, "{\"blob\": \"", 10);
        memset(body + 10, 'a', n);
        memcpy(body + 10 + n, "\"}", 2);
        rc = reply(c, 200, "application/json", body, n + 12);
        free(body);
        return rc;
    }
    return reply(c, 404, "text/plain", "not found", 9);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *size, void **con_cls)
{
    struct skill_http *s = cls;
    struct upload *u = *con_cls;

    (void)method;
    (void)version;
    if (!u) {
        u = calloc(1, sizeof(*u));
        *con_cls = u;
        pthread_mutex_lock(&s->lock);
        s->requests++;
        pthread_mutex_unlock(&s->lock);
        return MHD_YES;
    }
    if (*size) {
        char *d = realloc(u->data, u->len + *size + 1);
        if (!d)
            return MHD_NO;
        memcpy(d + u->len, data, *size);
        u->len += *size;
        d[u->len] = '\0';
        u->data = d;
        *size = 0;
        return MHD_YES;
    }
    return answer(s, c, url, u);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct upload *u = *con_cls;

    (void)cls;
    (void)c;
    (void)toe;
    if (u) {
        free(u->data);
        free(u);
        *con_cls = NULL;
    }
}

struct skill_http *skill_http_start(void)
{
    struct skill_http *s = calloc(1, sizeof(*s));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    const union MHD_DaemonInfo *info;

    if (!s)
        return NULL;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->stop_cond, NULL);
    s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                            NULL, NULL, handler, s, MHD_OPTION_SOCK_ADDR, &addr,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (!s->d) {
        free(s);
        return NULL;
    }
    info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    return s;
}

int skill_http_port(const struct skill_http *s)
{
    return s->port;
}

int skill_http_requests(struct skill_http *s)
{
    int n;

    pthread_mutex_lock(&s->lock);
    n = s->requests;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void skill_http_stop(struct skill_http *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->stop_cond);
    pthread_mutex_unlock(&s->lock);
    MHD_stop_daemon(s->d);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->stop_cond);
    free(s);
}
