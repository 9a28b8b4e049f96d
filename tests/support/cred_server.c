/*
 * The scripted credentials endpoint (cred_server.h).
 */
#include "cred_server.h"
#include "mhd_upload.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ROUTES_MAX 32
#define LOG_MAX    256

struct route {
    char *method, *path, *body, *need;
    int status;
};

struct logged {
    char *method, *path, *body;
};

struct cs_server {
    struct mhd_upload_daemon http;
    char url[64];
    pthread_mutex_t lock;
    struct route routes[ROUTES_MAX];
    size_t nroutes;
    struct logged log[LOG_MAX];
    size_t nlog;
    char *last; /* cs_last_body's copy */
};

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static enum MHD_Result reply(struct MHD_Connection *c, int status, const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc;

    MHD_add_response_header(r, "Content-Type", body[0] == '{' ? "application/json" : "text/plain");
    rc = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

/* True when c carries the header "name: value" need names (or need is NULL). */
static bool has_header(struct MHD_Connection *c, const char *need)
{
    const char *colon = need ? strchr(need, ':') : NULL;
    char name[128];
    const char *v;

    if (!need)
        return true;
    if (!colon || (size_t)(colon - need) >= sizeof(name))
        return false;
    memcpy(name, need, (size_t)(colon - need));
    name[colon - need] = '\0';
    v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    return v && strcmp(v, colon + 1 + strspn(colon + 1, " ")) == 0;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *method,
                              const char *url, struct mhd_upload *u)
{
    cs_server *s = cls;
    struct route r = {0};
    bool found = false;

    pthread_mutex_lock(&s->lock);
    if (s->nlog < LOG_MAX) {
        struct logged *l = &s->log[s->nlog++];
        l->method = strdup(method);
        l->path = strdup(url);
        l->body = strdup(u->data ? u->data : "");
    }
    for (size_t i = s->nroutes; i-- > 0 && !found;) {
        if (!strcmp(s->routes[i].method, method) && !strcmp(s->routes[i].path, url)) {
            r = s->routes[i];
            r.body = strdup(r.body);
            r.need = dup_or_null(r.need);
            found = true;
        }
    }
    pthread_mutex_unlock(&s->lock);
    if (!found)
        return reply(c, 404, "no such route");
    enum MHD_Result rc = has_header(c, r.need) ? reply(c, r.status, r.body)
                                               : reply(c, 401, "missing or wrong header");
    free(r.body);
    free(r.need);
    return rc;
}

cs_server *cs_start(void)
{
    cs_server *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    if (!mhd_upload_start(&s->http, answer, s)) {
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->http.port);
    return s;
}

void cs_stop(cs_server *s)
{
    if (!s)
        return;
    mhd_upload_stop(&s->http);
    for (size_t i = 0; i < s->nroutes; i++) {
        free(s->routes[i].method);
        free(s->routes[i].path);
        free(s->routes[i].body);
        free(s->routes[i].need);
    }
    for (size_t i = 0; i < s->nlog; i++) {
        free(s->log[i].method);
        free(s->log[i].path);
        free(s->log[i].body);
    }
    free(s->last);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

const char *cs_url(const cs_server *s)
{
    return s->url;
}

void cs_route(cs_server *s, const char *method, const char *path, int status, const char *body,
              const char *need)
{
    pthread_mutex_lock(&s->lock);
    if (s->nroutes < ROUTES_MAX) {
        struct route *r = &s->routes[s->nroutes++];
        r->method = strdup(method);
        r->path = strdup(path);
        r->body = strdup(body);
        r->need = dup_or_null(need);
        r->status = status;
    }
    pthread_mutex_unlock(&s->lock);
}

size_t cs_count(cs_server *s, const char *method, const char *path)
{
    size_t n = 0;

    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->nlog; i++)
        n += (!method || !strcmp(s->log[i].method, method)) &&
             (!path || !strcmp(s->log[i].path, path));
    pthread_mutex_unlock(&s->lock);
    return n;
}

const char *cs_last_body(cs_server *s, const char *path)
{
    pthread_mutex_lock(&s->lock);
    free(s->last);
    s->last = NULL;
    for (size_t i = s->nlog; i-- > 0 && !s->last;)
        if (!strcmp(s->log[i].path, path))
            s->last = strdup(s->log[i].body);
    pthread_mutex_unlock(&s->lock);
    return s->last ? s->last : "";
}
