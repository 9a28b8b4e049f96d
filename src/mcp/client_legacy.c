/*
 * The MCP client's legacy HTTP+SSE transport (protocol 2024-11-05), for servers that have not
 * moved to Streamable HTTP: a GET opens one event stream; its first "endpoint" event names the
 * URL to POST messages to (which must be on the stream's own origin); every answer and
 * notification arrives on the stream as a "message" event. A stream that ends loses the
 * connection (the owner reconnects it, decision 0023).
 */
#include "mcp/client_int.h"
#include "core/internal.h"

#include <rein/version.h>

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define WHERE "mcp/client"

struct reader {
    struct rein__mcp_conn *c;
    struct rein__mcp_sse sse;
    bool bad_endpoint;
};

/* The origin (scheme://authority) of url into out; false when url has none. */
static bool origin_of(const char *url, char *out, size_t size)
{
    const char *auth = strstr(url, "://");
    size_t n;

    if (!auth)
        return false;
    n = (size_t)(auth + 3 - url) + strcspn(auth + 3, "/?#");
    if (n >= size || n == (size_t)(auth + 3 - url))
        return false;
    memcpy(out, url, n);
    out[n] = '\0';
    return true;
}

/* The endpoint event's URL resolved against the stream's; NULL when it is on another origin
 * (a server must not send rein's messages elsewhere) or malformed. */
static char *resolve_endpoint(const char *base, const char *data, size_t len)
{
    char origin[1024], other[1024];
    char *ref = rein_strndup(data, len), *out = NULL;

    if (!ref || strpbrk(ref, " \r\n") || !origin_of(base, origin, sizeof(origin))) {
        rein_free(ref);
        return NULL;
    }
    if (ref[0] == '/' && ref[1] != '/')
        out = rein_asprintf("%s%s", origin, ref);
    else if (origin_of(ref, other, sizeof(other)) && strcasecmp(other, origin) == 0)
        out = rein_strdup(ref);
    rein_free(ref);
    return out;
}

static rein_err on_event(void *ud, const char *event, const char *id, const char *data, size_t len)
{
    struct reader *r = ud;
    struct rein__mcp_conn *c = r->c;

    (void)id;
    if (event && strcmp(event, "endpoint") == 0) {
        char *url = resolve_endpoint(c->cfg->url, data, len);
        pthread_mutex_lock(&c->mu);
        if (url && !c->legacy_endpoint) {
            c->legacy_endpoint = url;
            url = NULL;
        } else if (!url) {
            r->bad_endpoint = true;
        }
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        rein_free(url);
        return r->bad_endpoint ? REIN_EINVAL : REIN_OK;
    }
    if (len && (!event || strcmp(event, "message") == 0))
        rein__mcp_client_dispatch_text(c, data, len, NULL);
    return REIN_OK;
}

static size_t discard(char *data, size_t size, size_t n, void *ud)
{
    (void)data;
    (void)ud;
    return size * n;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    struct reader *r = ud;

    return rein__mcp_sse_feed(&r->sse, data, size * n) == REIN_OK ? size * n : 0;
}

/* Headers: the configured ones (credentials) and what the request carries. */
static struct curl_slist *headers(const struct rein__mcp_conn *c, const char *first)
{
    struct curl_slist *list = curl_slist_append(NULL, first), *next;

    for (char **h = c->cfg->headers; list && h && *h; h++) {
        next = curl_slist_append(list, *h);
        if (!next) {
            curl_slist_free_all(list);
            return NULL;
        }
        list = next;
    }
    return list;
}

static void *reader_main(void *arg)
{
    struct rein__mcp_conn *c = arg;
    struct reader r = {.c = c};
    struct curl_slist *h = headers(c, "Accept: text/event-stream");
    char detail[CURL_ERROR_SIZE] = "", why[400];
    bool cancelled = false;
    long status = 0;
    CURLcode code = CURLE_OUT_OF_MEMORY;
    CURL *easy = h ? curl_easy_init() : NULL;

    rein__mcp_sse_init(&r.sse, c->cfg->max_message_bytes, on_event, &r);
    if (easy) {
        curl_easy_setopt(easy, CURLOPT_URL, c->cfg->url);
        curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(easy, CURLOPT_WRITEDATA, &r);
        curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, detail);
        curl_easy_setopt(easy, CURLOPT_USERAGENT, "rein/" REIN_VERSION_STRING);
        curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
        code = rein__curl_perform(easy, c->legacy_stop, &cancelled);
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(easy);
    }
    curl_slist_free_all(h);
    rein__mcp_sse_release(&r.sse);
    if (r.bad_endpoint)
        snprintf(why, sizeof(why),
                 "%s named an endpoint for messages that is not on its own origin; refused",
                 c->cfg->url);
    else if (code != CURLE_OK && !(code == CURLE_WRITE_ERROR && status / 100 == 2))
        snprintf(why, sizeof(why), "%s: %s", c->cfg->url,
                 detail[0] ? detail : curl_easy_strerror(code));
    else
        snprintf(why, sizeof(why), "%s ended its event stream (HTTP %ld)", c->cfg->url, status);
    pthread_mutex_lock(&c->mu);
    bool lost = !c->closing && !cancelled;
    c->legacy_done = true;
    if (lost) {
        snprintf(c->error, sizeof(c->error), "%s", why);
        rein__mcp_client_fail_all(c, REIN_EIO, why);
        if (c->state == REIN__MCP_ST_READY)
            c->state = REIN__MCP_ST_FAILED;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (lost) {
        rein_log(REIN_LOG_INFO, WHERE, "%s", why);
        rein__mcp_client_changed(c);
    }
    return NULL;
}

rein_err rein__mcp_legacy_open(struct rein__mcp_conn *c, int64_t deadline, rein_error *err)
{
    rein_err rc = rein__curl_global_init(err);

    if (rc)
        return rc;
    c->legacy_stop = rein_cancel_new();
    if (!c->legacy_stop)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    c->legacy_done = false;
    if (pthread_create(&c->legacy_reader, NULL, reader_main, c) != 0) {
        rein_cancel_unref(c->legacy_stop);
        c->legacy_stop = NULL;
        return rein_error_set(err, REIN_EIO, "cannot start a thread for %s", c->cfg->url);
    }
    c->legacy_running = true;
    /* The server says where to send messages before anything else. */
    pthread_mutex_lock(&c->mu);
    while (!c->legacy_endpoint && !c->legacy_done) {
        int64_t left = deadline - rein_now_ms();
        if (left <= 0)
            break;
        rein__mcp_cond_wait_ms(&c->cv, &c->mu, left < 1000 ? left : 1000);
    }
    if (!c->legacy_endpoint)
        rc = rein_error_set(err, c->legacy_done ? REIN_EIO : REIN_ETIMEDOUT,
                            "%s sent no endpoint event%s%s", c->cfg->url, c->error[0] ? ": " : "",
                            c->error);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

rein_err rein__mcp_legacy_send(struct rein__mcp_conn *c, const char *json, size_t len,
                               rein_error *err)
{
    struct curl_slist *h = headers(c, "Content-Type: application/json");
    char detail[CURL_ERROR_SIZE] = "", *url;
    long status = 0;
    CURLcode code;
    CURL *easy;

    pthread_mutex_lock(&c->mu);
    url = c->legacy_endpoint ? rein_strdup(c->legacy_endpoint) : NULL;
    pthread_mutex_unlock(&c->mu);
    easy = h && url ? curl_easy_init() : NULL;
    if (!easy) {
        curl_slist_free_all(h);
        rein_free(url);
        return rein_error_set(err, url || !h ? REIN_ENOMEM : REIN_EIO, "%s is not connected",
                              c->cfg->url);
    }
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, json);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, detail);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "rein/" REIN_VERSION_STRING);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 30000L);
    code = curl_easy_perform(easy);
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(easy);
    curl_slist_free_all(h);
    if (code != CURLE_OK || status / 100 != 2) {
        rein_err rc = code != CURLE_OK
                          ? rein_error_set(err, REIN_EHTTP, "%s: %s", url,
                                           detail[0] ? detail : curl_easy_strerror(code))
                          : rein_error_set(err, REIN_EHTTP, "%s answered HTTP %ld", url, status);
        rein_free(url);
        return rc;
    }
    rein_free(url);
    return REIN_OK;
}

void rein__mcp_legacy_close(struct rein__mcp_conn *c)
{
    if (c->legacy_running) {
        rein_cancel_trigger(c->legacy_stop, "closing");
        pthread_join(c->legacy_reader, NULL);
        c->legacy_running = false;
    }
    rein_cancel_unref(c->legacy_stop);
    c->legacy_stop = NULL;
    pthread_mutex_lock(&c->mu);
    rein_free(c->legacy_endpoint);
    c->legacy_endpoint = NULL;
    pthread_mutex_unlock(&c->mu);
}
