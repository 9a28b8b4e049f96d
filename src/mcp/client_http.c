/*
 * The MCP client's Streamable HTTP transport (libcurl): each message is a POST whose answer is
 * one JSON body or an event stream carrying notifications and then the response; messages
 * arriving on it go to client.c. A stream that ends before the response is resumed with a GET
 * carrying Last-Event-ID after the server's retry delay. A 404 for the session tells the
 * caller to initialize again.
 */
#include "mcp/client_int.h"
#include "mcp/oauth_int.h"
#include "core/internal.h"

#include <rein/version.h>

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define WHERE "mcp/client"

enum body_mode { BODY_UNKNOWN, BODY_JSON, BODY_SSE, BODY_OTHER };

struct xfer {
    struct rein__mcp_conn *c;
    struct rein__mcp_pending *p; /* the request this transfer answers; NULL for notifications */
    CURL *easy;
    enum body_mode mode;
    struct rein_buf body; /* a JSON answer, or the start of anything else */
    struct rein__mcp_sse sse;
    char session[256];
    char www[2048]; /* WWW-Authenticate */
    bool too_big;
    bool stop;       /* the response arrived: the rest of the stream is not needed */
    bool idled;      /* p's idle limit passed (no progress for too long) */
    bool standalone; /* the GET of the standalone stream */
};

/* The standalone stream answered (or will not): rein__mcp_http_listen_start stops waiting. */
static void listen_answered(struct rein__mcp_conn *c)
{
    pthread_mutex_lock(&c->mu);
    c->listen_up = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* libcurl's progress callback, about once a second: ends a transfer whose request has gone
 * quiet for longer than its idle limit (progress notifications move the limit on). */
static int on_xferinfo(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    struct xfer *x = ud;
    int64_t idle;

    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    if (!x->p)
        return 0;
    pthread_mutex_lock(&x->c->mu);
    idle = rein__mcp_pending_idle_deadline(x->p);
    pthread_mutex_unlock(&x->c->mu);
    x->idled = idle && rein_now_ms() >= idle;
    return x->idled ? 1 : 0;
}

/* The value of a "name: value" header line of len bytes (name_len bytes with the colon),
 * trimmed, into out; left alone when it does not fit. */
static void header_value(const char *data, size_t len, size_t name_len, char *out, size_t size)
{
    const char *v = data + name_len;
    size_t vlen = len - name_len;

    while (vlen > 0 && (*v == ' ' || *v == '\t')) {
        v++;
        vlen--;
    }
    while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
        vlen--;
    if (vlen < size) {
        memcpy(out, v, vlen);
        out[vlen] = '\0';
    }
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = size * n;
    static const char name[] = "mcp-session-id:";
    static const char www[] = "www-authenticate:";

    if (len > sizeof(www) && strncasecmp(data, www, sizeof(www) - 1) == 0 && !x->www[0])
        header_value(data, len, sizeof(www) - 1, x->www, sizeof(x->www));
    if (len > sizeof(name) && strncasecmp(data, name, sizeof(name) - 1) == 0)
        header_value(data, len, sizeof(name) - 1, x->session, sizeof(x->session));
    if (x->standalone && (len == 2 || len == 1) && (data[0] == '\r' || data[0] == '\n'))
        listen_answered(x->c); /* the blank line that ends the headers: the stream is open */
    return len;
}

static rein_err on_sse_event(void *ud, const char *event, const char *id, const char *data,
                             size_t len)
{
    struct xfer *x = ud;

    (void)id;
    if (len == 0 || (event && strcmp(event, "message") != 0))
        return REIN_OK; /* priming events and other types carry no message */
    rein__mcp_client_dispatch_text(x->c, data, len, x->p);
    pthread_mutex_lock(&x->c->mu);
    x->stop = x->p && x->p->done;
    pthread_mutex_unlock(&x->c->mu);
    return REIN_OK;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = size * n;

    if (x->mode == BODY_UNKNOWN) {
        char *ct = NULL;
        long status = 0;
        curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        if (ct && strncasecmp(ct, "text/event-stream", 17) == 0 && status / 100 == 2)
            x->mode = BODY_SSE;
        else if (ct && strcasestr(ct, "json"))
            x->mode = BODY_JSON;
        else
            x->mode = BODY_OTHER;
    }
    if (x->mode == BODY_SSE) {
        if (rein__mcp_sse_feed(&x->sse, data, len) != REIN_OK) {
            x->too_big = true;
            return 0;
        }
        return x->stop ? 0 : len; /* 0 ends a stream that has given what was asked */
    }
    if (x->mode == BODY_OTHER) {
        /* Only the start is kept, to quote it. */
        size_t room = x->body.len < 4096 ? 4096 - x->body.len : 0;
        if (rein_buf_add(&x->body, data, len < room ? len : room))
            return 0;
        return len;
    }
    if (rein_buf_add(&x->body, data, len)) {
        x->too_big = true;
        return 0;
    }
    return len;
}

/* "Name: value" into out, the value in the base64 sentinel form when it is not plain visible
 * ASCII (2026-07-28's rule for Mcp-Name); false when out of memory. */
static bool header_line(char *out, size_t size, const char *name, const char *value)
{
    size_t len = strlen(value);
    bool plain =
        len > 0 && value[0] != ' ' && value[len - 1] != ' ' &&
        !(strncmp(value, "=?base64?", 9) == 0 && len >= 11 && strcmp(value + len - 2, "?=") == 0);
    char *enc;

    for (size_t i = 0; plain && i < len; i++)
        plain = (unsigned char)value[i] >= 0x20 && (unsigned char)value[i] < 0x7f;
    if (plain) {
        snprintf(out, size, "%s: %s", name, value);
        return true;
    }
    enc = rein__base64((const unsigned char *)value, len);
    if (!enc)
        return false;
    snprintf(out, size, "%s: =?base64?%s?=", name, enc);
    rein_free(enc);
    return true;
}

/* Adds line to *list; false when out of memory (the list is then freed). */
static bool add_header(struct curl_slist **list, const char *line)
{
    struct curl_slist *next = curl_slist_append(*list, line);

    if (!next) {
        curl_slist_free_all(*list);
        *list = NULL;
    }
    *list = next;
    return next != NULL;
}

static struct curl_slist *http_headers(struct rein__mcp_conn *c, const struct rein__mcp_pending *p,
                                       bool sse_only, const char *last_id, uint64_t *gen)
{
    struct curl_slist *list = NULL, *next;
    char line[600], bearer[4200];
    const char *fixed[3] = {"Content-Type: application/json",
                            sse_only ? "Accept: text/event-stream"
                                     : "Accept: application/json, text/event-stream",
                            "Expect:"};

    for (size_t i = 0; i < 3; i++) {
        if (!(next = curl_slist_append(list, fixed[i])))
            goto fail;
        list = next;
    }
    char version[sizeof(c->version) + 32];
    pthread_mutex_lock(&c->mu);
    line[0] = version[0] = '\0';
    if (c->session_id)
        snprintf(line, sizeof(line), "Mcp-Session-Id: %s", c->session_id);
    if (c->version[0])
        snprintf(version, sizeof(version), "MCP-Protocol-Version: %s", c->version);
    pthread_mutex_unlock(&c->mu);
    if (line[0]) {
        if (!(next = curl_slist_append(list, line)))
            goto fail;
        list = next;
    }
    if (version[0]) {
        if (!(next = curl_slist_append(list, version)))
            goto fail;
        list = next;
    }
    if (last_id) {
        snprintf(line, sizeof(line), "Last-Event-ID: %s", last_id);
        if (!(next = curl_slist_append(list, line)))
            goto fail;
        list = next;
    }
    for (char **h = c->cfg->headers; h && *h; h++) {
        if (!(next = curl_slist_append(list, *h)))
            goto fail;
        list = next;
    }
    rein__oauth_header(c, bearer, sizeof(bearer), gen);
    if (bearer[0]) {
        next = curl_slist_append(list, bearer);
        memset(bearer, 0, sizeof(bearer));
        if (!next)
            goto fail;
        list = next;
    }
    pthread_mutex_lock(&c->mu);
    bool modern = c->modern;
    pthread_mutex_unlock(&c->mu);
    /* 2026-07-28 mirrors the method and the name of a request into headers. */
    if (modern && p && p->method) {
        snprintf(line, sizeof(line), "Mcp-Method: %s", p->method);
        if (!add_header(&list, line))
            return NULL;
        if (p->name &&
            (!header_line(line, sizeof(line), "Mcp-Name", p->name) || !add_header(&list, line)))
            goto fail;
    }
    return list;
fail:
    curl_slist_free_all(list);
    return NULL;
}

int rein__mcp_http_exchange(struct rein__mcp_conn *c, struct rein__mcp_pending *p, const char *body,
                            size_t len, const char *last_id, int64_t deadline, rein_cancel *cancel,
                            char *last_out, int64_t *retry_out, struct rein__mcp_auth *auth,
                            rein_error *err)
{
    struct xfer x = {.c = c, .p = p, .standalone = !p && !body};
    uint64_t gen = 0;
    struct curl_slist *headers;
    char detail[CURL_ERROR_SIZE] = "", snippet[240];
    bool cancelled = false, done, had_session;
    long status = 0;
    char *ct = NULL;
    CURLcode code;
    int rc;

    rc = rein__curl_global_init(err);
    if (rc)
        return rc;
    rein_buf_init(&x.body, c->cfg->max_message_bytes + 1);
    rein__mcp_sse_init(&x.sse, c->cfg->max_message_bytes, on_sse_event, &x);
    x.easy = curl_easy_init();
    headers = http_headers(c, p, body == NULL, last_id, &gen);
    if (!x.easy || !headers) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory calling %s", c->cfg->url);
        goto out;
    }
    curl_easy_setopt(x.easy, CURLOPT_URL, c->cfg->url);
    curl_easy_setopt(x.easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(x.easy, CURLOPT_NOSIGNAL, 1L);
    if (body) {
        curl_easy_setopt(x.easy, CURLOPT_POST, 1L);
        curl_easy_setopt(x.easy, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(x.easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(x.easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(x.easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(x.easy, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(x.easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(x.easy, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(x.easy, CURLOPT_ERRORBUFFER, detail);
    curl_easy_setopt(x.easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(x.easy, CURLOPT_USERAGENT, "rein/" REIN_VERSION_STRING);
    curl_easy_setopt(x.easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    if (deadline) {
        int64_t left = deadline - rein_now_ms();
        curl_easy_setopt(x.easy, CURLOPT_TIMEOUT_MS, (long)(left > 1 ? left : 1));
    }
    curl_easy_setopt(x.easy, CURLOPT_XFERINFOFUNCTION, on_xferinfo);
    curl_easy_setopt(x.easy, CURLOPT_XFERINFODATA, &x);
    curl_easy_setopt(x.easy, CURLOPT_NOPROGRESS, 0L);
    pthread_mutex_lock(&c->mu);
    had_session = c->session_id != NULL;
    pthread_mutex_unlock(&c->mu);
    code = rein__curl_perform(x.easy, cancel, &cancelled);
    curl_easy_getinfo(x.easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(x.easy, CURLINFO_CONTENT_TYPE, &ct);
    if (body) {
        /* Could the server be reached at all? (A request that fails otherwise is its own
         * problem; a server that cannot be reached is lost until it comes back.) */
        pthread_mutex_lock(&c->mu);
        c->transport_down = code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
                            code == CURLE_COULDNT_RESOLVE_PROXY || code == CURLE_SEND_ERROR ||
                            (code == CURLE_RECV_ERROR && status == 0);
        pthread_mutex_unlock(&c->mu);
    }
    if (x.session[0] && body) {
        pthread_mutex_lock(&c->mu);
        if (!c->session_id || strcmp(c->session_id, x.session) != 0) {
            rein_free(c->session_id);
            c->session_id = rein_strdup(x.session);
        }
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_lock(&c->mu);
    done = p && p->done;
    pthread_mutex_unlock(&c->mu);
    if (done) {
        rc = REIN_OK; /* also when the stream was cut short on purpose */
        goto out;
    }
    if (cancelled) {
        rc = rein_error_set(err, REIN_ECANCELED, "cancelled while waiting for %s", c->cfg->url);
        goto out;
    }
    if (x.too_big) {
        rc = rein_error_set(err, REIN_ETOOBIG, "%s sent a message larger than %zu bytes",
                            c->cfg->url, c->cfg->max_message_bytes);
        goto out;
    }
    if (code == CURLE_OPERATION_TIMEDOUT || x.idled) {
        rc = rein_error_set(err, REIN_ETIMEDOUT, "timed out waiting for %s", c->cfg->url);
        goto out;
    }
    if (code != CURLE_OK) {
        rc = rein_error_set(err, REIN_EHTTP, "%s: %s", c->cfg->url,
                            detail[0] ? detail : curl_easy_strerror(code));
        goto out;
    }
    /* A server that restarted answers 404 (MCP) or, as many SDK servers do, 400 for a session
     * it does not know: the session is over, and the caller initializes again. */
    if ((status == 404 || status == 400) && had_session && (body || !last_id)) {
        rc = REIN__MCP_SESSION_EXPIRED;
        goto out;
    }
    if (status == 405 && !body) {
        rc = REIN__MCP_NO_STREAM; /* a GET the server does not offer */
        goto out;
    }
    if (auth && (status == 401 || status == 403)) {
        /* The MCP authorization spec: a token is missing, expired, or has too little scope. */
        auth->status = status;
        auth->gen = gen;
        snprintf(auth->www, sizeof(auth->www), "%s", x.www);
        rc = REIN__MCP_AUTH_NEEDED;
        goto out;
    }
    if (x.mode == BODY_JSON && x.body.len) {
        /* A JSON answer, or a JSON-RPC error explaining an HTTP error. */
        rein__mcp_client_dispatch_text(c, x.body.ptr, x.body.len, p);
        pthread_mutex_lock(&c->mu);
        done = p && p->done;
        pthread_mutex_unlock(&c->mu);
        if (done || (!p && status / 100 == 2)) {
            rc = REIN_OK;
            goto out;
        }
    }
    if (!p && status / 100 == 2) {
        /* A notification or response was accepted, or the standalone stream ended (it can be
         * resumed from its last event id). */
        rc = REIN_OK;
        if (x.mode == BODY_SSE && x.sse.last_id[0]) {
            snprintf(last_out, 256, "%s", x.sse.last_id);
            *retry_out = x.sse.retry_ms;
            rc = REIN__MCP_NEED_RESUME;
        }
        goto out;
    }
    if (x.mode == BODY_SSE && status / 100 == 2) {
        if (x.sse.last_id[0]) {
            snprintf(last_out, 256, "%s", x.sse.last_id);
            *retry_out = x.sse.retry_ms;
            rc = REIN__MCP_NEED_RESUME;
        } else {
            rc = rein_error_set(err, REIN_EIO,
                                "%s ended its event stream before answering, without an event "
                                "id to resume from",
                                c->cfg->url);
        }
        goto out;
    }
    {
        size_t n = x.body.len < sizeof(snippet) - 1 ? x.body.len : sizeof(snippet) - 1;
        for (size_t i = 0; i < n; i++)
            snippet[i] = (unsigned char)x.body.ptr[i] < 0x20 ? ' ' : x.body.ptr[i];
        snippet[n] = '\0';
    }
    if (status / 100 != 2)
        rc = rein_error_set(err, REIN_EHTTP, "%s answered HTTP %ld%s%s", c->cfg->url, status,
                            snippet[0] ? ": " : "", snippet);
    else if (x.mode == BODY_OTHER || x.mode == BODY_UNKNOWN)
        rc = rein_error_set(err, REIN_EHTTP, "%s answered %s (HTTP %ld), not JSON-RPC%s%s",
                            c->cfg->url, ct ? ct : "no content type", status,
                            snippet[0] ? ": " : "", snippet);
    else
        rc = rein_error_set(err, REIN_EHTTP, "%s answered HTTP %ld without a JSON-RPC response%s%s",
                            c->cfg->url, status, snippet[0] ? ": " : "", snippet);
out:
    curl_slist_free_all(headers);
    if (x.easy)
        curl_easy_cleanup(x.easy);
    rein__mcp_sse_release(&x.sse);
    rein_buf_release(&x.body);
    return rc;
}

/* A request over HTTP: POST, then resume as often as the server asks (within limits). */
int rein__mcp_http_roundtrip(struct rein__mcp_conn *c, struct rein__mcp_pending *p,
                             const char *json, size_t len, int64_t deadline, rein_cancel *cancel,
                             rein_error *err)
{
    char last[256] = "";
    int64_t retry = -1;
    struct rein__mcp_auth auth;
    int attempt = 0;
    int rc =
        rein__mcp_http_exchange(c, p, json, len, NULL, deadline, cancel, last, &retry, &auth, err);

    while (rc == REIN__MCP_AUTH_NEEDED) {
        rc = rein__oauth_authorize(c, auth.status, auth.www[0] ? auth.www : NULL, auth.gen,
                                   &attempt, deadline, cancel, err);
        if (rc)
            return rc;
        rc = rein__mcp_http_exchange(c, p, json, len, NULL, deadline, cancel, last, &retry, &auth,
                                     err);
    }
    for (int i = 0; rc == REIN__MCP_NEED_RESUME && i < REIN__MCP_MAX_RESUMES; i++) {
        int64_t wait = retry >= 0 ? retry : REIN__MCP_DEFAULT_RETRY_MS;
        if (deadline && rein_now_ms() + wait >= deadline)
            return rein_error_set(err, REIN_ETIMEDOUT, "timed out waiting for %s", c->cfg->url);
        /* The server's retry field says how long to wait before reconnecting. */
        if (rein_cancel_wait(cancel, wait))
            return rein_error_set(err, REIN_ECANCELED, "cancelled while waiting for %s",
                                  c->cfg->url);
        rc =
            rein__mcp_http_exchange(c, p, NULL, 0, last, deadline, cancel, last, &retry, NULL, err);
    }
    if (rc == REIN__MCP_NEED_RESUME)
        return rein_error_set(err, REIN_EIO, "%s kept ending its stream without answering",
                              c->cfg->url);
    return rc;
}

int rein__mcp_http_send(struct rein__mcp_conn *c, const char *json, size_t len, int64_t deadline,
                        rein_error *err)
{
    char last[256];
    int64_t retry;
    struct rein__mcp_auth auth;
    int attempt = 0;
    int rc =
        rein__mcp_http_exchange(c, NULL, json, len, NULL, deadline, NULL, last, &retry, &auth, err);

    while (rc == REIN__MCP_AUTH_NEEDED) {
        rc = rein__oauth_authorize(c, auth.status, auth.www[0] ? auth.www : NULL, auth.gen,
                                   &attempt, deadline, NULL, err);
        if (!rc)
            rc = rein__mcp_http_exchange(c, NULL, json, len, NULL, deadline, NULL, last, &retry,
                                         &auth, err);
    }
    return rc;
}

/* ---- the standalone stream: what the server says outside requests ----------------------- */

#define LISTEN_BACKOFF_MAX_MS 30000

static void *listen_main(void *arg)
{
    struct rein__mcp_conn *c = arg;
    rein_cancel *stop = c->listen_stop;
    int64_t backoff = 500;
    char last[256] = "";

    while (!rein_cancel_is_set(stop)) {
        char out[256] = "";
        int64_t retry = -1, wait;
        rein_error err;
        int rc;

        rein_error_clear(&err);
        rc = rein__mcp_http_exchange(c, NULL, NULL, 0, last[0] ? last : NULL, 0, stop, out, &retry,
                                     NULL, &err);
        listen_answered(c);
        if (rein_cancel_is_set(stop))
            break;
        if (rc == REIN__MCP_NO_STREAM || rc == REIN__MCP_SESSION_EXPIRED) {
            /* No standalone stream here, or the session is over (the next request starts a
             * new one, and listening with it). */
            rein_log(REIN_LOG_DEBUG, WHERE, "%s: no standalone stream (%s)", c->cfg->name,
                     rc == REIN__MCP_NO_STREAM ? "405" : "session ended");
            break;
        }
        if (rc == REIN__MCP_NEED_RESUME) {
            snprintf(last, sizeof(last), "%s", out);
            wait = retry >= 0 ? retry : REIN__MCP_DEFAULT_RETRY_MS;
            backoff = 500;
        } else {
            if (rc != REIN_OK)
                rein_log(REIN_LOG_DEBUG, WHERE, "%s: standalone stream: %s", c->cfg->name, err.msg);
            last[0] = '\0';
            wait = backoff;
            backoff = backoff * 2 > LISTEN_BACKOFF_MAX_MS ? LISTEN_BACKOFF_MAX_MS : backoff * 2;
        }
        rein_cancel_wait(stop, wait);
    }
    return NULL;
}

/* How long opening the standalone stream may hold up the connection's first call. */
#define LISTEN_OPEN_WAIT_MS 3000

/*
 * Starts reading the standalone stream, and waits until it is open (its headers came; at most
 * LISTEN_OPEN_WAIT_MS): a server that asks something outside a call's stream (the TypeScript
 * SDK's Server.request during a tool call) drops the request when no such stream is open yet,
 * and the call would then wait for an answer that never comes.
 */
void rein__mcp_http_listen_start(struct rein__mcp_conn *c)
{
    int64_t until = rein_now_ms() + LISTEN_OPEN_WAIT_MS, left;

    if (c->listening)
        return;
    c->listen_stop = rein_cancel_new();
    if (!c->listen_stop)
        return;
    pthread_mutex_lock(&c->mu);
    c->listen_up = false;
    pthread_mutex_unlock(&c->mu);
    if (pthread_create(&c->listener, NULL, listen_main, c) != 0) {
        rein_cancel_unref(c->listen_stop);
        c->listen_stop = NULL;
        return;
    }
    c->listening = true;
    pthread_mutex_lock(&c->mu);
    while (!c->listen_up && (left = until - rein_now_ms()) > 0)
        rein__mcp_cond_wait_ms(&c->cv, &c->mu, left);
    pthread_mutex_unlock(&c->mu);
}

void rein__mcp_http_listen_stop(struct rein__mcp_conn *c)
{
    if (!c->listening)
        return;
    rein_cancel_trigger(c->listen_stop, "closing");
    pthread_join(c->listener, NULL);
    rein_cancel_unref(c->listen_stop);
    c->listen_stop = NULL;
    c->listening = false;
}

void rein__mcp_http_close(struct rein__mcp_conn *c)
{
    CURL *easy;
    struct curl_slist *headers;

    if (!c->session_id)
        return;
    easy = rein__curl_global_init(NULL) == REIN_OK ? curl_easy_init() : NULL;
    uint64_t gen;
    headers = easy ? http_headers(c, NULL, false, NULL, &gen) : NULL;
    if (easy && headers) {
        /* Ending the session is a courtesy; its failure changes nothing here. */
        curl_easy_setopt(easy, CURLOPT_URL, c->cfg->url);
        curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, "DELETE");
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 2000L);
        curl_easy_setopt(easy, CURLOPT_NOBODY, 0L);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, NULL);
        if (curl_easy_perform(easy) != CURLE_OK)
            rein_log(REIN_LOG_DEBUG, WHERE, "%s: could not end the session", c->cfg->name);
    }
    curl_slist_free_all(headers);
    if (easy)
        curl_easy_cleanup(easy);
    rein_free(c->session_id);
    c->session_id = NULL;
}
