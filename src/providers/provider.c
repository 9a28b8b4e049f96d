/*
 * The provider dispatcher (include/rein/provider.h): configuration in, one rein_provider per
 * configured backend, and rein_provider_send(), which every wire shares.
 *
 * A send encodes the request through the wire (the history's cached pieces, the request's
 * cached tool list), then runs attempts over libcurl's multi interface so that it can wait on
 * the transfer and on the request's cancel descriptor at once: cancelling aborts the
 * transfer immediately, not at the next progress tick. Deadlines are kept here rather than
 * in curl: connect (CURLOPT_CONNECTTIMEOUT_MS), first byte (from the start of the attempt),
 * idle (between received bytes, so between SSE events) and total (the whole send, retries
 * and waits included).
 *
 * The curl handles of an attempt (one easy handle in its own multi handle) come from a small
 * pool kept in the provider and go back to it, reset, when the attempt ends: an attempt on a
 * long-lived provider does not pay for creating and tearing down both handles (and the
 * multi handle's wake-up socket pair) every time. Each pair keeps its own connections (its
 * multi handle's cache), so an attempt finds its connection without a lock shared by every
 * sending thread; the pool hands out the pair given back last, whose connection is the one
 * most likely still open. Names resolved are kept in the provider's share.
 *
 * Each attempt's bytes go straight into the wire's decoder, chosen by the response's
 * content type, so events reach the caller while the reply streams. What happens after an
 * attempt is decided in one place (next_step): 429/500/502/503/529, transient in-stream errors
 * (overloaded_error and the others error_is_transient names),
 * connection failures and first-byte timeouts are retried with exponential backoff and full
 * jitter, waiting what Retry-After or retry-after-ms asks when they say; a stream that drops
 * before any tool call arrived is asked for once more; a later drop ends the send with
 * REIN_EPROVIDER and the partial response (its calls marked incomplete). A REIN_MEV_RETRY
 * event tells the caller to forget the deltas of the attempt that failed.
 *
 * The API key goes into one header and nowhere else: not into logs, errors or recordings.
 */
#include "provider_int.h"

#include "core/internal.h"

#include <rein/trace.h>
#include <rein/version.h>

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WHERE          "providers"
#define ERROR_BODY_MAX ((size_t)1 << 20)
/* Idle curl handle pairs a provider keeps: about the sends that run at once on one provider
 * in a busy server (rein serve's 32 workers by default); more are made when needed and freed
 * after. With 16, a gateway sending 32 requests at once made and freed a pair (a socketpair,
 * three closes, curl's set-up) for about one request in ten. */
#define HANDLES_KEPT 64

/* ---------------------------------------------------------------------------------------
 * Small shared helpers
 */

const char *rein__json_str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

const char *rein__request_model(const rein_provider *p, const rein_model_request *req)
{
    return req->model ? req->model : p->cfg.model;
}

void rein__jw_extra(struct rein_jw *w, const rein_model_request *req)
{
    const char *key;
    json_t *v;

    json_object_foreach(req->extra, key, v)
    {
        rein_jw_key(w, key);
        rein_jw_json(w, v);
    }
}

rein_err rein__jw_history(struct rein_jw *jw, rein_history *h, size_t from, const rein_provider *p,
                          const struct rein__wire *w, rein_error *err)
{
    const char *all, *first, *start;
    size_t len, skip = 0;
    rein_err rc = REIN_OK;

    if (from >= rein_history_len(h))
        return REIN_OK;
    /* The pieces sit one after another in the history's buffer: from message `from` on they
     * are the joined block's tail (its offset taken while the buffer stands still). */
    if (from > 0) {
        size_t n;
        rc = rein__history_piece(h, from, p, w, &first, &n);
        if (!rc)
            rc = rein__history_piece(h, 0, p, w, &start, &n);
        skip = rc ? 0 : (size_t)(first - start);
    }
    if (!rc)
        rc = rein__history_joined(h, p, w, &all, &len);
    if (!rc)
        rc = rein_buf_grow(jw->buf, len - skip);
    if (rc)
        return rein_error_set(err, rc, "encoding the history: %s", rein_strerror(rc));
    rein_jw_raw(jw, all + skip, len - skip); /* the items, commas included */
    return REIN_OK;
}

/* The more tools set for w: the text inside their array's brackets (*n bytes), or NULL. */
static const char *more_tools(const rein_model_request *req, const struct rein__wire *w, size_t *n)
{
    if (!req->more_tools || strcmp(req->more_tools_for, w->name) != 0)
        return NULL;
    *n = req->more_tools_len - 2;
    return req->more_tools + 1;
}

bool rein__wire_tools(const rein_model_request *req, const struct rein__wire *w)
{
    size_t n;

    return (req->wire_tools && strcmp(req->wire_tools_for, w->name) == 0) ||
           more_tools(req, w, &n) != NULL;
}

void rein__jw_tool_list(struct rein_jw *jw, const rein_model_request *req,
                        const struct rein__wire *w)
{
    size_t n = 0;
    const char *more = more_tools(req, w, &n);
    const char *list = req->tools_json;
    size_t len = req->tools_len;

    if (req->wire_tools && strcmp(req->wire_tools_for, w->name) == 0) {
        list = req->wire_tools;
        len = req->wire_tools_len;
    }
    if (!more) {
        rein_jw_raw(jw, list, len);
        return;
    }
    /* the list's items, then the more tools' items, in one array: each run of items is
     * written as one raw value, so the writer puts the comma between them */
    rein_jw_arr_begin(jw);
    if ((req->ntools || list != req->tools_json) && len > 2)
        rein_jw_raw(jw, list + 1, len - 2);
    if (n)
        rein_jw_raw(jw, more, n);
    rein_jw_arr_end(jw);
}

void rein__jw_tools(struct rein_jw *jw, const rein_model_request *req, const struct rein__wire *w,
                    void (*choice)(struct rein_jw *jw, const char *choice))
{
    if (!req->ntools && !rein__wire_tools(req, w))
        return;
    rein_jw_key(jw, "tools");
    rein__jw_tool_list(jw, req, w);
    if (req->tool_choice)
        choice(jw, req->tool_choice);
    if (req->parallel >= 0) {
        rein_jw_key(jw, "parallel_tool_calls");
        rein_jw_bool(jw, req->parallel > 0);
    }
}

void rein__jw_limits(struct rein_jw *jw, const rein_model_request *req, const char *max_key)
{
    if (req->max_tokens > 0) {
        rein_jw_key(jw, max_key);
        rein_jw_int(jw, req->max_tokens);
    }
    if (req->temperature >= 0) {
        rein_jw_key(jw, "temperature");
        rein_jw_double(jw, req->temperature);
    }
}

void rein__jw_stop(struct rein_jw *jw, const rein_model_request *req, const char *key)
{
    if (!req->nstop)
        return;
    rein_jw_key(jw, key);
    rein_jw_arr_begin(jw);
    for (size_t i = 0; i < req->nstop; i++)
        rein_jw_str(jw, req->stop[i]);
    rein_jw_arr_end(jw);
}

bool rein__request_has_settings(const rein_model_request *req)
{
    return req->max_tokens > 0 || req->temperature >= 0 || req->top_p >= 0 || req->nstop > 0;
}

void rein__jw_top_p(struct rein_jw *jw, const rein_model_request *req, const char *key)
{
    if (req->top_p >= 0) {
        rein_jw_key(jw, key);
        rein_jw_double(jw, req->top_p);
    }
}

void rein__jw_thinking(struct rein_jw *jw, const rein_provider *p, const rein_model_request *req)
{
    /* DashScope's Qwen3 models refuse a call that is not streamed unless thinking is off. */
    if (!req->stream && (p->cfg.quirks & Q_ENABLE_THINKING_OFF_NONSTREAM)) {
        rein_jw_key(jw, "enable_thinking");
        rein_jw_bool(jw, false);
    } else if (p->cfg.enable_thinking >= 0) {
        rein_jw_key(jw, "enable_thinking");
        rein_jw_bool(jw, p->cfg.enable_thinking > 0);
    }
}

void rein__jw_tool_args_raw(struct rein_jw *w, const char *raw)
{
    /* The raw text goes back byte for byte when it is a JSON object; otherwise (a
     * zero-argument call's "", arguments that never parsed) the wire needs an object. */
    json_t *v = raw && raw[0] ? rein_json_parse(raw, strlen(raw), 0, NULL) : NULL;

    if (json_is_object(v))
        rein_jw_raw(w, raw, strlen(raw));
    else
        rein_jw_raw(w, "{}", 2);
    json_decref(v);
}

rein_err rein__header_add(struct curl_slist **list, const char *line)
{
    struct curl_slist *l = curl_slist_append(*list, line);

    if (!l)
        return REIN_ENOMEM;
    *list = l;
    return REIN_OK;
}

/* Adds the API key's header (a bearer token when the settings say so, else the preset's, else
 * the wire's) when a key is configured. */
/* The key header: the request's own key (rein_model_request_set_api_key: a gateway's client
 * key) before the provider's. */
static rein_err header_auth(const rein_provider *p, const rein_model_request *req,
                            struct curl_slist **list)
{
    const char *prefix = p->cfg.auth_bearer    ? "Authorization: Bearer "
                         : p->cfg.preset->auth ? p->cfg.preset->auth
                                               : p->wire->auth;
    const char *key = req->api_key ? req->api_key : p->cfg.api_key;
    rein_err rc;
    char *h;

    if (!key || !prefix)
        return REIN_OK;
    h = rein_asprintf("%s%s", prefix, key);
    if (!h)
        return REIN_ENOMEM;
    rc = rein__header_add(list, h);
    /* The key does not stay behind in freed memory. */
    memset(h, 0, strlen(h));
    rein_free(h);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * Requests
 */

rein_model_request *rein_model_request_new(void)
{
    rein_model_request *req = rein_calloc(1, sizeof(*req));

    if (!req)
        return NULL;
    req->stream = true;
    req->temperature = -1;
    req->top_p = -1;
    req->parallel = -1;
    req->retries = -1;
    rein_buf_init(&req->tools_enc, 0);
    return req;
}

void rein_model_request_clear_tools(rein_model_request *req)
{
    for (size_t i = 0; i < req->ntools; i++) {
        rein_free(req->tools[i].name);
        rein_free(req->tools[i].description);
        json_decref(req->tools[i].parameters);
    }
    req->ntools = 0;
    req->tools_valid = false;
    rein__tools_enc_release(req->shared);
    req->shared = NULL;
    req->tools_json = NULL;
    req->tools_len = 0;
}

void rein_model_request_free(rein_model_request *req)
{
    if (!req)
        return;
    rein_model_request_clear_tools(req);
    rein_free(req->tools);
    rein_free(req->tool_choice);
    rein_free(req->model);
    if (req->api_key) {
        memset(req->api_key, 0, strlen(req->api_key));
        rein_free(req->api_key);
    }
    json_decref(req->extra);
    rein__output_release(req);
    curl_slist_free_all(req->headers);
    for (size_t i = 0; i < req->nstop; i++)
        rein_free(req->stop[i]);
    rein_free(req->stop);
    json_decref(req->dropped);
    rein_buf_release(&req->tools_enc);
    rein_cancel_unref(req->cancel);
    rein_free(req);
}

/* Adds a tool; shared: its parameters never change (see rein_model_request_add_tool_shared). */
static rein_err add_tool(rein_model_request *req, const char *name, const char *description,
                         json_t *parameters, bool shared)
{
    struct rein__tool *t;

    if (!name || !name[0])
        return REIN_EINVAL;
    if (parameters && !json_is_object(parameters))
        return REIN_EINVAL;
    if (req->ntools == req->tools_cap) {
        size_t cap = req->tools_cap ? req->tools_cap * 2 : 8;
        t = rein_realloc(req->tools, cap * sizeof(*t));
        if (!t)
            return REIN_ENOMEM;
        req->tools = t;
        req->tools_cap = cap;
    }
    t = &req->tools[req->ntools];
    t->name = rein_strdup(name);
    t->description = description ? rein_strdup(description) : NULL;
    if (!t->name || (description && !t->description)) {
        rein_free(t->name);
        rein_free(t->description);
        return REIN_ENOMEM;
    }
    t->parameters = json_incref(parameters);
    t->shared = shared;
    req->ntools++;
    req->tools_valid = false;
    return REIN_OK;
}

rein_err rein_model_request_add_tool(rein_model_request *req, const char *name,
                                     const char *description, json_t *parameters)
{
    return add_tool(req, name, description, parameters, false);
}

rein_err rein_model_request_add_tool_shared(rein_model_request *req, const char *name,
                                            const char *description, const json_t *parameters)
{
    /* The reference taken is the only write: jansson's count, not the value. */
    return add_tool(req, name, description, (json_t *)parameters, true);
}

rein_err rein_model_request_set_tool_choice(rein_model_request *req, const char *choice)
{
    char *v = NULL;

    if (choice && !(v = rein_strdup(choice)))
        return REIN_ENOMEM;
    rein_free(req->tool_choice);
    req->tool_choice = v;
    return REIN_OK;
}

rein_err rein_model_request_set_model(rein_model_request *req, const char *model)
{
    char *v = NULL;

    if (model && !(v = rein_strdup(model)))
        return REIN_ENOMEM;
    rein_free(req->model);
    req->model = v;
    return REIN_OK;
}

rein_err rein_model_request_set_api_key(rein_model_request *req, const char *key)
{
    char *v = NULL;

    if (key && !(v = rein_strdup(key)))
        return REIN_ENOMEM;
    if (req->api_key) {
        memset(req->api_key, 0, strlen(req->api_key));
        rein_free(req->api_key);
    }
    req->api_key = v;
    return REIN_OK;
}

void rein_model_request_set_extra(rein_model_request *req, json_t *members)
{
    json_t *old = req->extra;

    req->extra = json_is_object(members) ? json_incref(members) : NULL;
    json_decref(old);
}

/* Headers the provider writes itself: a caller's line must not stand beside them. */
static bool owned_header(const char *name)
{
    static const char *const owned[] = {
        "authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "host",
        "content-type",
        "content-length",
        "accept",
        "expect",
        "user-agent",
        "anthropic-version",
        "x-amz-date",
        "x-amz-security-token",
        "x-amz-content-sha256",
        "traceparent",
        "tracestate",
    };

    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
        if (strcasecmp(name, owned[i]) == 0)
            return true;
    return false;
}

rein_err rein_model_request_add_header(rein_model_request *req, const char *name, const char *value)
{
    struct curl_slist *l;
    char *line;

    if (!name || !value || !name[0] || owned_header(name))
        return REIN_EINVAL;
    for (const char *p = name; *p; p++)
        if (*p <= ' ' || *p >= 127 || strchr("()<>@,;:\\\"/[]?={}", *p))
            return REIN_EINVAL;
    if (strpbrk(value, "\r\n"))
        return REIN_EINVAL;
    line = rein_asprintf("%s: %s", name, value);
    l = line ? curl_slist_append(req->headers, line) : NULL;
    rein_free(line);
    if (!l)
        return REIN_ENOMEM;
    req->headers = l;
    return REIN_OK;
}

rein_err rein_model_request_set_more_tools(rein_model_request *req, const char *wire,
                                           const char *json, size_t len)
{
    if (json && (!wire || strlen(wire) >= sizeof(req->more_tools_for) || len < 2 ||
                 json[0] != '[' || json[len - 1] != ']'))
        return REIN_EINVAL;
    req->more_tools = json;
    req->more_tools_len = json ? len : 0;
    snprintf(req->more_tools_for, sizeof(req->more_tools_for), "%s", json ? wire : "");
    return REIN_OK;
}

rein_err rein_model_request_set_wire_tools(rein_model_request *req, const char *wire,
                                           const char *json, size_t len)
{
    if (json && (!wire || strlen(wire) >= sizeof(req->wire_tools_for)))
        return REIN_EINVAL;
    req->wire_tools = json;
    req->wire_tools_len = json ? len : 0;
    snprintf(req->wire_tools_for, sizeof(req->wire_tools_for), "%s", json ? wire : "");
    return REIN_OK;
}

void rein_model_request_set_retries(rein_model_request *req, int retries)
{
    req->retries = retries < 0 ? -1 : retries;
}

void rein_model_request_set_max_tokens(rein_model_request *req, int64_t max_tokens)
{
    req->max_tokens = max_tokens > 0 ? max_tokens : 0;
}

void rein_model_request_set_temperature(rein_model_request *req, double temperature)
{
    req->temperature = temperature >= 0 ? temperature : -1;
}

rein_err rein_model_request_set_stop(rein_model_request *req, const char *const *stop, size_t n)
{
    char **v = NULL;

    if (n > REIN_STOP_MAX || (n && !stop))
        return REIN_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!stop[i] || !stop[i][0])
            return REIN_EINVAL;
    }
    if (n && !(v = rein_calloc(n, sizeof(*v))))
        return REIN_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (!(v[i] = rein_strdup(stop[i]))) {
            while (i-- > 0)
                rein_free(v[i]);
            rein_free(v);
            return REIN_ENOMEM;
        }
    }
    for (size_t i = 0; i < req->nstop; i++)
        rein_free(req->stop[i]);
    rein_free(req->stop);
    req->stop = v;
    req->nstop = n;
    return REIN_OK;
}

const json_t *rein_model_request_dropped(const rein_model_request *req)
{
    return json_array_size(req->dropped) ? req->dropped : NULL;
}

void rein_model_request_set_top_p(rein_model_request *req, double top_p)
{
    req->top_p = top_p >= 0 && top_p <= 1 ? top_p : -1;
}

void rein_model_request_set_stream(rein_model_request *req, bool stream)
{
    req->stream = stream;
}

void rein_model_request_set_parallel_tools(rein_model_request *req, bool on)
{
    req->parallel = on ? 1 : 0;
}

void rein_model_request_set_cancel(rein_model_request *req, rein_cancel *c)
{
    if (c)
        rein_cancel_ref(c);
    rein_cancel_unref(req->cancel);
    req->cancel = c;
}

void rein_model_request_set_events(rein_model_request *req, rein_model_event_fn fn, void *userdata)
{
    req->fn = fn;
    req->ud = userdata;
}

void rein_model_request_set_on_wait(rein_model_request *req, void (*fn)(void *userdata),
                                    void *userdata)
{
    req->wait_fn = fn;
    req->wait_ud = userdata;
}

void rein_model_request_set_registry(rein_model_request *req, const rein_registry *reg)
{
    req->reg = reg;
}

/* ---------------------------------------------------------------------------------------
 * Providers
 */

/* The curl handles of one attempt: an easy handle and the multi handle it runs in (it is
 * added only while an attempt runs). */
struct handles {
    CURL *easy;
    CURLM *multi;
    bool set;   /* the options every attempt of the provider has are set (set_fixed) */
    bool proxy; /* the provider's proxy settings are set (proxy_for) */
    CURLU *uh;  /* url_text parsed once (CURLOPT_CURLU), or NULL */
    char *url_text;
};

/* Idle handle pairs, taken and given back by the threads that send. Invariant: every pair in
 * idle[0..n-1] is reset, its easy handle in no multi handle. */
struct handle_pool {
    pthread_mutex_t mu;
    size_t n;
    struct handles idle[HANDLES_KEPT];
};

static void handles_free(struct handles *hs)
{
    curl_multi_cleanup(hs->multi);
    curl_easy_cleanup(hs->easy);
    curl_url_cleanup(hs->uh);
    rein_free(hs->url_text);
}

/* A pair from the pool, or a new one; false when out of memory. */
static bool handles_take(rein_provider *p, struct handles *hs)
{
    struct handle_pool *pool = p->pool;

    if (pool) {
        pthread_mutex_lock(&pool->mu);
        if (pool->n) {
            *hs = pool->idle[--pool->n];
            pthread_mutex_unlock(&pool->mu);
            return true;
        }
        pthread_mutex_unlock(&pool->mu);
    }
    hs->easy = curl_easy_init();
    hs->multi = curl_multi_init();
    hs->set = hs->proxy = false;
    hs->uh = NULL;
    hs->url_text = NULL;
    if (hs->easy && hs->multi)
        return true;
    handles_free(hs);
    return false;
}

/* Gives a pair whose easy handle is in no multi handle back to the pool (freed when full). */
static void handles_give(rein_provider *p, struct handles *hs, bool reset)
{
    struct handle_pool *pool = p->pool;

    /* The options every attempt sets stay (set_fixed); those that point into the attempt
     * (its header list, buffers and callbacks' data) are set again by the next one, and these
     * two are cleared so that no idle handle points at memory that is gone. A handle that
     * sent a spliced body (its read callbacks, its upload buffer) starts over. */
    if (reset) {
        curl_easy_reset(hs->easy);
        hs->set = hs->proxy = false;
    } else {
        curl_easy_setopt(hs->easy, CURLOPT_HTTPHEADER, NULL);
        curl_easy_setopt(hs->easy, CURLOPT_ERRORBUFFER, NULL);
    }
    if (pool) {
        pthread_mutex_lock(&pool->mu);
        if (pool->n < HANDLES_KEPT) {
            pool->idle[pool->n++] = *hs;
            pthread_mutex_unlock(&pool->mu);
            return;
        }
        pthread_mutex_unlock(&pool->mu);
    }
    handles_free(hs);
}

static void pool_free(struct handle_pool *pool)
{
    if (!pool)
        return;
    for (size_t i = 0; i < pool->n; i++)
        handles_free(&pool->idle[i]);
    pthread_mutex_destroy(&pool->mu);
    rein_free(pool);
}

/* One mutex per kind of shared data: curl may hold one while taking another. */
static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
    pthread_mutex_t *mu = ud;

    (void)h;
    (void)access;
    pthread_mutex_lock(&mu[(unsigned)data < CURL_LOCK_DATA_LAST ? data : 0]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
    pthread_mutex_t *mu = ud;

    (void)h;
    pthread_mutex_unlock(&mu[(unsigned)data < CURL_LOCK_DATA_LAST ? data : 0]);
}

static char *make_endpoint(const char *base, const char *path)
{
    size_t n = strlen(base), m = strlen(path);

    while (n > 0 && base[n - 1] == '/')
        n--;
    /* A base that already names the endpoint is taken as it is. */
    if (n >= m && strncmp(base + n - m, path, m) == 0)
        return rein_strndup(base, n);
    return rein_asprintf("%.*s%s", (int)n, base, path);
}

rein_err rein__replay_setup(rein_provider *p, rein_error *err)
{
    const char *wire = NULL;

    if (!p->cfg.replay)
        return rein_error_set(err, REIN_EINVAL,
                              "the replay provider needs a recording: set REIN_REPLAY, --replay "
                              "or \"replay\" in the config file");
    p->replay = rein__replay_open(p->cfg.replay, err);
    if (!p->replay)
        return err ? err->code : REIN_EIO;
    /* The recording says which wire made it; that wire encodes and decodes the replay. */
    if (rein__replay_peek(p->replay, &wire, &p->cfg.model) != REIN_OK || !wire)
        return rein_error_set(err, REIN_EINVAL, "%s: the recording is empty", p->cfg.replay);
    /* A rules recording is replayed by routing again, checked against the file; the others by
     * the wire that made them. */
    p->wire = strcmp(wire, "rules") == 0 ? &rein__wire_rules : rein__wire_find(wire);
    if (!p->wire)
        return rein_error_set(err, REIN_EINVAL,
                              "%s: made with the wire \"%.40s\", which rein does not know",
                              p->cfg.replay, wire);
    p->endpoint = rein_strdup("replay:");
    return p->endpoint ? REIN_OK : REIN_ENOMEM;
}

static rein_err resolve_key(rein_provider *p, rein_error *err)
{
    const struct rein__preset *pre = p->cfg.preset;
    const char *env = p->cfg.api_key_env ? p->cfg.api_key_env : pre->key_env;
    const char *v;

    if (!p->cfg.api_key && env && (v = getenv(env)) && *v) {
        p->cfg.api_key = rein_strdup(v);
        if (!p->cfg.api_key)
            return REIN_ENOMEM;
    }
    /* A hosted provider at its own address needs a key; a proxy or local server may not. */
    if (!p->cfg.api_key && pre->key_env && !p->cfg.base_url)
        return rein_error_set(err, REIN_EINVAL,
                              "the %s provider needs an API key: set %s (or REIN_API_KEY)",
                              pre->name, env ? env : pre->key_env);
    return REIN_OK;
}

/* The setup of a preset whose wire is spoken over HTTP at a base URL. */
rein_err rein__http_setup(rein_provider *p, rein_error *err)
{
    const struct rein__preset *pre = p->cfg.preset;
    const char *base = p->cfg.base_url ? p->cfg.base_url : pre->base_url;
    rein_err rc;

    if (!p->cfg.model)
        return rein_error_set(err, REIN_EINVAL,
                              "no model for the %s provider: set REIN_MODEL, --model or "
                              "\"model\" in the config file",
                              pre->name);
    if (!base)
        return rein_error_set(err, REIN_EINVAL,
                              "the %s provider needs a base URL (ending in /v1): set "
                              "REIN_BASE_URL, --base-url or \"base_url\"",
                              pre->name);
    if (strncmp(base, "http://", 7) != 0 && strncmp(base, "https://", 8) != 0)
        return rein_error_set(err, REIN_EINVAL,
                              "the base URL must start with http:// or "
                              "https://");
    rc = resolve_key(p, err);
    if (rc)
        return rc;
    p->endpoint = make_endpoint(base, p->wire->path);
    return p->endpoint ? REIN_OK : REIN_ENOMEM;
}

/* A copy of the value of the first of the variables names (NULL-terminated) that is set and
 * not empty, as libcurl reads them; "" when none is. */
static char *env_first(const char *const *names)
{
    for (size_t i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v && v[0])
            return rein_strdup(v);
    }
    return rein_strdup("");
}

/*
 * The proxy of the environment for an HTTP endpoint, read once: libcurl read it again for
 * every request. Its rules, for the endpoint's scheme: http_proxy for http:// (never
 * HTTP_PROXY, which a CGI program's environment may hold from a client's Proxy header),
 * https_proxy or HTTPS_PROXY for https://, else all_proxy or ALL_PROXY; no_proxy or NO_PROXY
 * names the hosts reached directly (libcurl still matches the host against it).
 */
static rein_err resolve_proxy(rein_provider *p)
{
    static const char *const http[] = {"http_proxy", "all_proxy", "ALL_PROXY", NULL};
    static const char *const https[] = {"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                                        NULL};
    static const char *const no[] = {"no_proxy", "NO_PROXY", NULL};

    if (!p->endpoint)
        return REIN_OK;
    p->proxy_https = strncmp(p->endpoint, "https://", 8) == 0;
    if (!p->proxy_https && strncmp(p->endpoint, "http://", 7) != 0)
        return REIN_OK;
    p->proxy = env_first(p->proxy_https ? https : http);
    p->noproxy = env_first(no);
    return p->proxy && p->noproxy ? REIN_OK : REIN_ENOMEM;
}

rein_provider *rein_provider_new(const rein_provider_config *cfg, rein_error *err)
{
    rein_provider *p;
    const struct rein__preset *pre = cfg->preset;
    rein_err rc;

    if (rein__curl_global_init(err))
        return NULL;
    p = rein_calloc(1, sizeof(*p));
    if (!p || rein__config_copy(&p->cfg, cfg) != REIN_OK) {
        rein_free(p);
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    rein_error_where(err, WHERE);
    p->wire = pre->wire;
    rc = pre->open ? pre->open(p, err) : rein__http_setup(p, err);
    if (!rc)
        rc = resolve_proxy(p);
    if (!rc && p->cfg.reasoning != REIN_REASONING_UNSET && !rein_provider_writes_reasoning(p, NULL))
        rc = rein_error_set(err, REIN_EINVAL,
                            "reasoning_effort: the %s wire (provider %s) has no reasoning "
                            "setting rein can write for model %s; leave reasoning_effort unset "
                            "for it",
                            p->wire ? p->wire->name : "replay", p->cfg.provider,
                            p->cfg.model ? p->cfg.model : "(none)");
    if (rc)
        goto fail;
    snprintf(p->ua_line, sizeof(p->ua_line), "User-Agent: %s",
             p->cfg.user_agent ? p->cfg.user_agent : "rein/" REIN_VERSION_STRING);
    rein__caps_resolve(&p->cfg, p->cfg.model, &p->caps);
    /* The rules read the history and send nothing anywhere: no context window to fit, so a
     * long tool result is never shortened into something they cannot render. */
    if (p->wire == &rein__wire_rules)
        p->caps.context_window = 0;
    if (p->cfg.record) {
        p->rec = rein__recorder_open(p->cfg.record, err);
        if (!p->rec) {
            rc = err ? err->code : REIN_EIO;
            goto fail;
        }
    }
    p->share_lock = rein_calloc(CURL_LOCK_DATA_LAST, sizeof(pthread_mutex_t));
    p->share = p->share_lock ? curl_share_init() : NULL;
    if (p->share) {
        for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
            pthread_mutex_init((pthread_mutex_t *)p->share_lock + i, NULL);
        curl_share_setopt(p->share, CURLSHOPT_LOCKFUNC, share_lock);
        curl_share_setopt(p->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
        curl_share_setopt(p->share, CURLSHOPT_USERDATA, p->share_lock);
        /* Connections are not shared: libcurl 7.88 looks one up in the shared cache under
         * its lock, walking every connection to the host and polling the idle one it picks,
         * so 32 sending threads queued on that lock (futex waits and context switches on
         * every request at 64 connections; bench/gateway.sh). */
        curl_share_setopt(p->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    } else {
        rein_free(p->share_lock);
        p->share_lock = NULL;
    }
    /* Without a cache (out of memory) every request encodes its own tool list. */
    p->tools = rein__tools_cache_new();
    /* Without a pool (out of memory) every attempt makes its own handles, as it can. */
    p->pool = rein_calloc(1, sizeof(struct handle_pool));
    if (p->pool)
        pthread_mutex_init(&((struct handle_pool *)p->pool)->mu, NULL);
    return p;
fail:
    if (rc == REIN_ENOMEM)
        rein_error_set(err, REIN_ENOMEM, "out of memory");
    rein_provider_free(p);
    return NULL;
}

void rein_provider_free(rein_provider *p)
{
    if (!p)
        return;
    /* The handles first: they point at the share. */
    pool_free(p->pool);
    if (p->share) {
        curl_share_cleanup(p->share);
        for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
            pthread_mutex_destroy((pthread_mutex_t *)p->share_lock + i);
    }
    rein_free(p->share_lock);
    rein__recorder_close(p->rec);
    rein__aws_free(p->aws);
    rein__gcp_free(p->gcp);
    rein__replay_close(p->replay);
    rein__tools_cache_free(p->tools);
    rein_free(p->endpoint);
    rein_free(p->proxy);
    rein_free(p->noproxy);
    rein__config_release(&p->cfg);
    rein_free(p);
}

const char *rein_provider_name(const rein_provider *p)
{
    return p->cfg.preset->name;
}

const char *rein_provider_wire(const rein_provider *p)
{
    return p->replay ? "replay" : p->wire->name;
}

const char *rein_provider_model(const rein_provider *p)
{
    return p->cfg.model;
}

const char *rein_provider_endpoint(const rein_provider *p)
{
    return p->endpoint;
}

void rein_provider_caps(const rein_provider *p, struct rein_model_caps *caps)
{
    *caps = p->caps;
}

void rein_provider_model_caps(const rein_provider *p, const char *model,
                              struct rein_model_caps *caps)
{
    if (!model)
        *caps = p->caps;
    else
        rein__caps_resolve(&p->cfg, model, caps);
}

bool rein_provider_writes_reasoning(const rein_provider *p, const char *model)
{
    if (!model)
        model = p->cfg.model;
    if (!p->wire)
        return false;
    return p->wire->reasoning_for ? model && p->wire->reasoning_for(model) : p->wire->reasoning;
}

bool rein_provider_request_thinks(const rein_provider *p, const rein_model_request *req)
{
    return rein__request_thinks(p, req);
}

unsigned rein_provider_sampling(const rein_provider *p, const rein_model_request *req)
{
    return p->wire && p->wire->sampling
               ? p->wire->sampling(rein__request_model(p, req), rein__request_thinks(p, req))
               : REIN_SAMPLING_ALL;
}

/* Whether key is one of the NULL-terminated list's. */
static bool in_list(const char *const *list, const char *key)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(list[i], key) == 0)
            return true;
    return false;
}

/* xAI's reasoning models: grok-3-mini, grok-4 (but its -non-reasoning forms), grok-code. */
static bool grok_reasons(const char *m)
{
    return (!strncmp(m, "grok-3-mini", 11) || !strncmp(m, "grok-4", 6) ||
            !strncmp(m, "grok-code", 9)) &&
           !strstr(m, "non-reasoning");
}

/* Of the grok reasoning models only grok-3-mini and grok-4.3 on take reasoning_effort;
 * grok-4, its fast forms, grok-code and grok-4.20 answer 400 to it. */
static bool grok_takes_effort(const char *m)
{
    return !strncmp(m, "grok-3-mini", 11) ||
           (!strncmp(m, "grok-4.", 7) && m[7] >= '3' && m[7] <= '9' && m[8] != '0');
}

/*
 * Mistral's chat completions take these members and answer 422 "Extra inputs are not
 * permitted" to any other (ChatCompletionRequest in its OpenAPI document, August 2026);
 * OpenAI's seed is written as its random_seed (openai.c).
 */
static const char *const mistral_members[] = {"model",
                                              "messages",
                                              "tools",
                                              "tool_choice",
                                              "parallel_tool_calls",
                                              "stream",
                                              "max_tokens",
                                              "temperature",
                                              "top_p",
                                              "stop",
                                              "n",
                                              "random_seed",
                                              "seed",
                                              "response_format",
                                              "presence_penalty",
                                              "frequency_penalty",
                                              "metadata",
                                              "prediction",
                                              "prompt_mode",
                                              "safe_prompt",
                                              "guardrails",
                                              "reasoning_effort",
                                              "prompt_cache_key",
                                              "service_tier",
                                              NULL};

bool rein_provider_refuses(const rein_provider *p, const rein_model_request *req,
                           const char *member)
{
    static const char *const groq[] = {"logprobs", "top_logprobs", "logit_bias", NULL};
    static const char *const grok[] = {"presence_penalty", "frequency_penalty", "stop", NULL};
    const char *m = p ? rein__request_model(p, req) : NULL;
    unsigned q = p ? p->cfg.quirks : 0;

    if (!m || !member)
        return false;
    if (strrchr(m, '/'))
        m = strrchr(m, '/') + 1;
    if ((q & Q_GROQ_PARAMS) && in_list(groq, member))
        return true;
    if (q & Q_MISTRAL)
        return !in_list(mistral_members, member);
    if ((q & Q_XAI_PARAMS) && grok_reasons(m))
        return in_list(grok, member) ||
               (!strcmp(member, "reasoning_effort") && !grok_takes_effort(m));
    /* deepseek-reasoner: "setting logprobs or top_logprobs is an error" */
    if ((q & Q_REASONING_ON_CALLS) && !strncmp(m, "deepseek-reasoner", 17))
        return !strcmp(member, "logprobs") || !strcmp(member, "top_logprobs");
    return false;
}

bool rein_provider_takes_media(const rein_provider *p, const char *mime)
{
    return p && p->wire && p->wire->takes_media && mime && p->wire->takes_media(mime);
}

/* ---------------------------------------------------------------------------------------
 * One attempt
 */

enum outcome {
    O_DONE,       /* a reply: complete, or ended by an in-stream error */
    O_HTTP_ERROR, /* a non-2xx status */
    O_CONNECT,    /* no connection, or nothing came back */
    O_FIRST_BYTE, /* nothing within the first-byte timeout */
    O_DROPPED,    /* the stream ended or broke before the reply was complete */
    O_TOTAL,      /* the total deadline passed */
    O_CANCELLED,
    O_DECODE, /* the bytes could not be decoded */
    O_FATAL,  /* out of memory and the like */
};

struct attempt {
    rein_provider *p;
    const char *url; /* where this request goes */
    rein_model_request *req;
    const struct rein_decoder_options *opt;
    struct send_state *send; /* whose seed names calls sent without an id */
    rein_provider_decoder *dec;
    struct rein_buf errbody;
    struct rein_buf raw; /* the response bytes, when recording */
    bool recording;
    long status;
    char ctype[128];
    char error_type[64];    /* AWS's x-amzn-ErrorType, up to its ':' */
    int64_t retry_after_ms; /* -1: none asked */
    /* The response's headers rein keeps for the caller (headers.c); they go to the response
     * the attempt ends with, and to the caller's events before the first byte is decoded. */
    struct rein_model_headers hdrs;
    int64_t t_start, t_last;
    bool got_byte;
    bool got_more; /* bytes since t_last was set */
    rein_err drc;  /* a decoder failure */
    rein_error derr;
    char curl_err[CURL_ERROR_SIZE];
    const struct rein__body *body; /* a spliced body, read by read_body */
    size_t body_pos;
};

/*
 * The decoder for the reply's content type: the wire's own stream or body decoder; a stream
 * framed otherwise than the wire streams (an SSE proxy in front of Ollama, NDJSON from a
 * server that speaks OpenAI) goes to the first wire of the table with that framing.
 */
static rein_provider_decoder *decoder_for(const struct attempt *at)
{
    const struct rein__wire *w = at->p->wire;
    enum rein__framing framing;
    bool body;

    if (strncasecmp(at->ctype, "text/event-stream", 17) == 0) {
        framing = REIN__FRAMING_SSE;
        body = false;
    } else if (strncasecmp(at->ctype, "application/x-ndjson", 20) == 0) {
        framing = REIN__FRAMING_LINES;
        body = false;
    } else if (strncasecmp(at->ctype, "application/vnd.amazon.eventstream", 34) == 0) {
        framing = REIN__FRAMING_EVENTSTREAM;
        body = false;
    } else {
        framing = w->framing;
        body = strncasecmp(at->ctype, "application/json", 16) == 0 || !at->req->stream;
    }
    if (!body && w->framing != framing)
        w = rein__wire_with_framing(framing);
    return rein__decoder_new(w, body, at->opt, at->req->fn, at->req->ud);
}

static bool status_ok(long status)
{
    return status >= 200 && status < 300;
}

static uint64_t send_seed(void *ud);

static rein_err start_decoder(struct attempt *at)
{
    at->dec = decoder_for(at);
    if (!at->dec)
        return REIN_ENOMEM;
    rein__decoder_set_id_seed_fn(at->dec, send_seed, at->send);
    return REIN_OK;
}

/* The kept headers, to the caller before the reply's first event: a caller that forwards the
 * reply sends its own headers before the first byte it forwards. */
static void tell_headers(const struct attempt *at)
{
    struct rein_model_event ev;

    if (!at->req->fn || !at->hdrs.n)
        return;
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_MEV_HEADERS;
    ev.headers = &at->hdrs;
    at->req->fn(&ev, at->req->ud);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
    struct attempt *at = ud;
    size_t len = size * nmemb;

    /* the clock is read once per wait, after it (run_attempt), not for every piece */
    at->got_byte = at->got_more = true;
    if (at->recording && rein_buf_add(&at->raw, data, len) != REIN_OK)
        at->recording = false; /* a recording too large to keep is cut, not fatal */
    if (!status_ok(at->status)) {
        size_t room = ERROR_BODY_MAX - at->errbody.len;
        /* An error body is kept up to 1 MiB; the rest is not needed to report it. */
        if (rein_buf_add(&at->errbody, data, len < room ? len : room) != REIN_OK)
            return len;
        return len;
    }
    if (!at->dec) {
        tell_headers(at);
        if ((at->drc = start_decoder(at)) != REIN_OK)
            return 0;
    }
    at->drc = rein_provider_decoder_feed(at->dec, data, len, &at->derr);
    return at->drc ? 0 : len;
}

static bool header_is(const char *line, size_t n, const char *name, const char **value,
                      size_t *vlen)
{
    size_t k = strlen(name);

    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return false;
    *value = line + k + 1;
    *vlen = n - k - 1;
    while (*vlen && (**value == ' ' || **value == '\t'))
        (*value)++, (*vlen)--;
    while (*vlen && ((*value)[*vlen - 1] == '\r' || (*value)[*vlen - 1] == '\n' ||
                     (*value)[*vlen - 1] == ' '))
        (*vlen)--;
    return true;
}

static int64_t parse_retry_after(const char *v, size_t n, bool ms)
{
    char buf[64];
    char *end;
    double secs;

    if (n == 0 || n >= sizeof(buf))
        return -1;
    memcpy(buf, v, n);
    buf[n] = '\0';
    secs = strtod(buf, &end);
    if (end != buf && *end == '\0' && secs >= 0)
        return ms ? (int64_t)secs : (int64_t)(secs * 1000.0);
    if (ms)
        return -1;
    /* An HTTP date. */
    time_t when = curl_getdate(buf, NULL);
    if (when < 0)
        return -1;
    int64_t delta = (int64_t)when * 1000 - rein_wall_ms();
    return delta > 0 ? delta : 0;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *ud)
{
    struct attempt *at = ud;
    size_t n = size * nmemb;
    const char *v;
    size_t vlen;

    if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* A new response (after 100 Continue, a redirect): start over. */
        const char *sp = memchr(line, ' ', n);
        at->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        at->ctype[0] = '\0';
        at->error_type[0] = '\0';
        at->retry_after_ms = -1;
        rein__headers_clear(&at->hdrs);
        return n;
    }
    if (header_is(line, n, "content-type", &v, &vlen)) {
        if (vlen >= sizeof(at->ctype))
            vlen = sizeof(at->ctype) - 1;
        memcpy(at->ctype, v, vlen);
        at->ctype[vlen] = '\0';
    } else if (header_is(line, n, "x-amzn-errortype", &v, &vlen)) {
        size_t k = strcspn(v, ":\r\n");
        if (k > vlen)
            k = vlen;
        if (k >= sizeof(at->error_type))
            k = sizeof(at->error_type) - 1;
        memcpy(at->error_type, v, k);
        at->error_type[k] = '\0';
    } else if (header_is(line, n, "retry-after-ms", &v, &vlen)) {
        int64_t ms = parse_retry_after(v, vlen, true);
        if (ms >= 0)
            at->retry_after_ms = ms;
    } else if (header_is(line, n, "retry-after", &v, &vlen)) {
        int64_t ms = parse_retry_after(v, vlen, false);
        if (ms >= 0 && at->retry_after_ms < 0)
            at->retry_after_ms = ms;
    } else {
        const char *keys[2] = {at->p->cfg.api_key, at->req->api_key};
        /* A header that cannot be kept (out of memory) is left out, as one past the bound is:
         * the reply does not fail for it. */
        (void)rein__headers_offer(&at->hdrs, line, n, keys, 2);
    }
    return n;
}

/* W3C Trace Context: the request continues the current span (the model call's). */
static rein_err header_trace(struct curl_slist **list)
{
    const struct rein_trace_context *c = rein_trace_current();
    char line[REIN_TRACESTATE_MAX + 16];
    rein_err rc;

    if (!c)
        return REIN_OK;
    memcpy(line, "traceparent: ", 13);
    rein_trace_context_format(c, line + 13);
    rc = rein__header_add(list, line);
    if (!rc && c->state[0]) {
        snprintf(line, sizeof(line), "tracestate: %s", c->state);
        rc = rein__header_add(list, line);
    }
    return rc;
}

/* Lines every request starts with. curl only reads a header list; these are not const
 * because a list's lines are not. */
static char ct_line[] = "Content-Type: application/json";
static char accept_stream[] = "Accept: text/event-stream, application/x-ndjson, application/json";
static char accept_json[] = "Accept: application/json";
static char expect_line[] = "Expect:";

/* A request's header list: the lines every request has, in nodes of its own (no allocation),
 * then the others (allocated). */
struct headers {
    struct curl_slist fixed[4];
    struct curl_slist *rest;
};

/* The list hd holds, ready for CURLOPT_HTTPHEADER. */
static struct curl_slist *headers_list(struct headers *hd, size_t nfixed)
{
    for (size_t i = 0; i < nfixed; i++)
        hd->fixed[i].next = i + 1 < nfixed ? &hd->fixed[i + 1] : hd->rest;
    return nfixed ? &hd->fixed[0] : hd->rest;
}

/* The lines every request of p carries after the fixed ones: the wire's own, the key, and the
 * caller's (rein_model_request_add_header); the attempt adds its trace context around them. */
static rein_err request_headers(const rein_provider *p, const rein_model_request *req,
                                struct curl_slist **list)
{
    rein_err rc = p->wire->headers ? p->wire->headers(p, req, list) : REIN_OK;

    if (!rc)
        rc = header_auth(p, req, list);
    for (const struct curl_slist *l = req->headers; !rc && l; l = l->next)
        rc = rein__header_add(list, l->data);
    return rc;
}

static rein_err build_headers(struct attempt *at, const struct rein__body *body, struct headers *hd,
                              struct curl_slist **list)
{
    const rein_provider *p = at->p;
    size_t n = 0;
    rein_err rc = REIN_OK;

    hd->rest = NULL;
    hd->fixed[n++].data = ct_line;
    hd->fixed[n++].data = at->req->stream ? accept_stream : accept_json;
    hd->fixed[n++].data = at->p->ua_line;
    /* No 100-continue round trip. A signing wire sends no valueless line (it is not sent, and
     * a signer that signs every header would sign it). */
    if (!p->wire->sign)
        hd->fixed[n++].data = expect_line;
    rc = request_headers(p, at->req, &hd->rest);
    if (!rc)
        rc = header_trace(&hd->rest);
    /* a request's own key stands for the signature, as a configured key does (bedrock.c) */
    if (!rc && p->wire->sign && !at->req->api_key)
        rc = p->wire->sign(p, at->url, body, &hd->rest);
    *list = headers_list(hd, n);
    return rc;
}

/* Milliseconds until the nearest deadline; *which says which one (0 none). */
static int64_t next_deadline(const struct attempt *at, int64_t total_end, int *which)
{
    const int64_t *t = at->p->cfg.timeout;
    int64_t now = rein_now_ms(), left = INT64_MAX;

    *which = 0;
    if (total_end > 0 && total_end - now < left) {
        left = total_end - now;
        *which = O_TOTAL;
    }
    if (!at->got_byte && t[REIN_TIMEOUT_FIRST_BYTE] > 0 &&
        at->t_start + t[REIN_TIMEOUT_FIRST_BYTE] - now < left) {
        left = at->t_start + t[REIN_TIMEOUT_FIRST_BYTE] - now;
        *which = O_FIRST_BYTE;
    }
    if (at->got_byte && t[REIN_TIMEOUT_IDLE] > 0 &&
        at->t_last + t[REIN_TIMEOUT_IDLE] - now < left) {
        left = at->t_last + t[REIN_TIMEOUT_IDLE] - now;
        *which = O_DROPPED; /* an idle stream counts as a dropped one */
    }
    return left;
}

static enum outcome classify_curl(struct attempt *at, CURLcode cc, rein_error *err)
{
    if (at->drc == REIN_ENOMEM)
        return O_FATAL;
    if (at->drc) {
        *err = at->derr;
        return O_DECODE;
    }
    switch (cc) {
    case CURLE_OK:
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
        rein_error_set(err, REIN_EIO, "could not connect to %s: %s", at->p->endpoint,
                       at->curl_err[0] ? at->curl_err : curl_easy_strerror(cc));
        return O_CONNECT;
    case CURLE_OPERATION_TIMEDOUT:
        rein_error_set(err, REIN_ETIMEDOUT, "connecting to %s timed out after %lld ms",
                       at->p->endpoint, (long long)at->p->cfg.timeout[REIN_TIMEOUT_CONNECT]);
        return O_CONNECT;
    case CURLE_OUT_OF_MEMORY:
        return O_FATAL;
    default:
        if (!at->got_byte) {
            rein_error_set(err, REIN_EIO, "%s: the connection closed before a reply (%s)",
                           at->p->endpoint,
                           at->curl_err[0] ? at->curl_err : curl_easy_strerror(cc));
            return O_CONNECT;
        }
        if (!status_ok(at->status))
            break; /* a cut error body: still an HTTP error */
        rein_error_set(err, REIN_EPROVIDER, "the reply stream broke off: %s",
                       at->curl_err[0] ? at->curl_err : curl_easy_strerror(cc));
        return O_DROPPED;
    }
    if (!status_ok(at->status))
        return O_HTTP_ERROR;
    return O_DONE;
}

/* The largest upload buffer asked of libcurl for a spliced body (its own limit is 2 MB). */
#define UPLOAD_BUFFER_MAX ((size_t)512 << 10)

/* libcurl's read callback for a spliced body: the next bytes from where they lie. */
static size_t read_body(char *dst, size_t size, size_t n, void *userdata)
{
    struct attempt *at = userdata;
    size_t left = rein__body_len(at->body) - at->body_pos;
    size_t take = size * n < left ? size * n : left;

    rein__body_copy(at->body, at->body_pos, dst, take);
    at->body_pos += take;
    return take;
}

/* libcurl rewinds the body to send it again on a new connection (a kept-alive one the
 * server had closed). */
static int seek_body(void *userdata, curl_off_t offset, int origin)
{
    struct attempt *at = userdata;

    if (origin != SEEK_SET || offset < 0 || (size_t)offset > rein__body_len(at->body))
        return CURL_SEEKFUNC_CANTSEEK;
    at->body_pos = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

/*
 * The options every attempt of p sets alike, set once per pooled handle: setting them again
 * for every request (after a curl_easy_reset) cost about 6,000 instructions per request.
 */
/* How every request of p reaches its server: no signals, any encoding, the connect timeout,
 * the shared connection cache. */
static void set_transport(const rein_provider *p, CURL *easy)
{
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
    if (p->cfg.timeout[REIN_TIMEOUT_CONNECT] > 0)
        curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                         (long)p->cfg.timeout[REIN_TIMEOUT_CONNECT]);
    if (p->share)
        curl_easy_setopt(easy, CURLOPT_SHARE, p->share);
}

static void set_fixed(rein_provider *p, struct handles *hs)
{
    CURL *easy = hs->easy;

    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    set_transport(p, easy);
    hs->set = true;
}

/* Whether the proxy read from the environment (resolve_proxy) is url's: it was read for one
 * scheme. */
static bool proxy_applies(const rein_provider *p, const char *url)
{
    return p->proxy && (strncmp(url, "https://", 8) == 0) == p->proxy_https;
}

/*
 * The proxy for url: the environment's, read once (resolve_proxy), when url has the scheme it
 * was read for. Set, libcurl reads no variable itself (five getenv calls per request, each a
 * walk of the environment); for another scheme it reads them as before.
 */
static void proxy_for(const rein_provider *p, const char *url, struct handles *hs)
{
    bool want = proxy_applies(p, url);

    if (want == hs->proxy)
        return;
    curl_easy_setopt(hs->easy, CURLOPT_PROXY, want ? p->proxy : NULL);
    curl_easy_setopt(hs->easy, CURLOPT_NOPROXY, want ? p->noproxy : NULL);
    hs->proxy = want;
}

/*
 * The attempt's URL. libcurl 7.88 parses a CURLOPT_URL text again on every transfer and
 * writes it back out (about 16,000 instructions a request); a URL handle (CURLOPT_CURLU) is
 * only copied. The pair keeps the handle of the URL it sent to last, which is the same one
 * for every request of most providers; a URL the handle refuses goes as text, as before.
 */
static void set_url(struct handles *hs, const char *url)
{
    if (!hs->url_text || strcmp(hs->url_text, url) != 0) {
        curl_url_cleanup(hs->uh);
        rein_free(hs->url_text);
        hs->uh = curl_url();
        hs->url_text = rein_strdup(url);
        if (hs->uh && hs->url_text &&
            curl_url_set(hs->uh, CURLUPART_URL, url,
                         CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
            curl_url_cleanup(hs->uh);
            hs->uh = NULL;
        }
    }
    if (hs->uh && hs->url_text) {
        curl_easy_setopt(hs->easy, CURLOPT_CURLU, hs->uh);
    } else {
        curl_easy_setopt(hs->easy, CURLOPT_CURLU, NULL);
        curl_easy_setopt(hs->easy, CURLOPT_URL, url);
    }
}

/* A cancelled request wakes its transfer's curl_multi_poll() (rein_cancel_on's hook). */
static void wake_multi(void *multi)
{
    curl_multi_wakeup(multi);
}

/*
 * The sockets curl watches for an attempt, as its socket callback reports them: a connection
 * being made may try more than one address at once; a transfer watches one.
 */
#define SOCKS_MAX 4
struct socks {
    curl_socket_t fd[SOCKS_MAX];
    int what[SOCKS_MAX]; /* CURL_POLL_IN, _OUT or _INOUT */
    int n;
    bool lost; /* more sockets than fit: the attempt goes on with curl_multi_perform */
};

static int on_socket(CURL *easy, curl_socket_t s, int what, void *ud, void *sockp)
{
    struct socks *ss = ud;
    int i = 0;

    (void)easy;
    (void)sockp;
    while (i < ss->n && ss->fd[i] != s)
        i++;
    if (what == CURL_POLL_REMOVE) {
        if (i < ss->n) {
            ss->n--;
            ss->fd[i] = ss->fd[ss->n];
            ss->what[i] = ss->what[ss->n];
        }
        return 0;
    }
    if (i == ss->n) {
        if (ss->n == SOCKS_MAX) {
            ss->lost = true;
            return 0;
        }
        ss->fd[ss->n++] = s;
    }
    ss->what[i] = what;
    return 0;
}

/*
 * Waits for the transfer (its sockets, the cancel descriptor when there is no hook, curl's
 * own timers and wake-up) up to ms, then lets curl act on what is ready. Each socket curl
 * watches is also passed as an extra descriptor, so the wait says which one is ready and how:
 * curl_multi_socket_action() then reads or writes it without polling it once more, which
 * curl_multi_perform() does on every call (one poll() per upstream read saved). A wait that
 * returns for anything else (curl's wake-up, an unknown descriptor) hands the rest of the
 * attempt to curl_multi_perform(), which looks at everything, as before (*perform).
 */
static CURLMcode wait_and_act(CURLM *multi, struct socks *ss, int cancel_fd, int ms, bool *perform,
                              int *running)
{
    struct curl_waitfd extra[SOCKS_MAX + 1];
    curl_socket_t fds[SOCKS_MAX];
    unsigned n = 0, nsock = 0;
    int nfds = 0;
    bool acted = false;
    CURLMcode mc;

    memset(extra, 0, sizeof(extra));
    if (!*perform && !ss->lost) {
        for (int i = 0; i < ss->n; i++) {
            fds[nsock++] = ss->fd[i];
            extra[n].fd = ss->fd[i];
            extra[n++].events = (short)(((ss->what[i] & CURL_POLL_IN) ? CURL_WAIT_POLLIN : 0) |
                                        ((ss->what[i] & CURL_POLL_OUT) ? CURL_WAIT_POLLOUT : 0));
        }
    }
    if (cancel_fd >= 0) {
        extra[n].fd = cancel_fd;
        extra[n++].events = CURL_WAIT_POLLIN;
    }
    mc = curl_multi_poll(multi, n ? extra : NULL, n, ms, &nfds);
    if (mc != CURLM_OK)
        return mc;
    if (*perform || ss->lost)
        return curl_multi_perform(multi, running);
    for (unsigned i = 0; i < nsock; i++) {
        int bits =
            ((extra[i].revents & (CURL_WAIT_POLLIN | CURL_WAIT_POLLPRI)) ? CURL_CSELECT_IN : 0) |
            ((extra[i].revents & CURL_WAIT_POLLOUT) ? CURL_CSELECT_OUT : 0);
        if (!bits)
            continue;
        acted = true;
        mc = curl_multi_socket_action(multi, fds[i], bits, running);
        if (mc != CURLM_OK)
            return mc;
    }
    if (acted)
        return CURLM_OK;
    if (nfds > 0 && !(cancel_fd >= 0 && extra[n - 1].revents)) {
        *perform = true;
        return curl_multi_perform(multi, running);
    }
    /* Nothing ready: curl's timers (a connect timeout, a retry of an address) */
    return curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, running);
}

/*
 * Runs one HTTP attempt to its end. The decoder (at->dec) holds whatever was received.
 * Cancellation wakes the poll through the multi handle's own wakeup (made once per pooled
 * handle), not the cancel handle's descriptor: that was an eventfd made and closed for every
 * request that waited (the gateway's requests each have a cancel handle of their own).
 */
static enum outcome run_attempt(struct attempt *at, const struct rein__body *body, size_t body_len,
                                int64_t total_end, rein_error *err)
{
    rein_provider *p = at->p;
    struct curl_slist *headers = NULL;
    struct headers hd = {.rest = NULL};
    struct handles hs;
    CURL *easy;
    CURLM *multi;
    enum outcome out = O_FATAL;
    int running = 1, hook = 0;
    bool added = false, spliced = false, perform = false, bad;
    struct socks ss = {.n = 0};
    CURLcode cc = CURLE_OK;

    at->t_start = at->t_last = rein_now_ms();
    at->retry_after_ms = -1;
    if (!handles_take(p, &hs))
        return O_FATAL;
    easy = hs.easy;
    multi = hs.multi;
    if (build_headers(at, body, &hd, &headers) != REIN_OK)
        goto done;
    if (!hs.set)
        set_fixed(p, &hs);
    set_url(&hs, at->url);
    if (body->mid) {
        at->body = body;
        at->body_pos = 0;
        /* A spliced body is read through the callbacks; the handle is reset before it is
         * used again (handles_give). */
        spliced = true;
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, NULL);
        curl_easy_setopt(easy, CURLOPT_READFUNCTION, read_body);
        curl_easy_setopt(easy, CURLOPT_READDATA, at);
        curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, seek_body);
        curl_easy_setopt(easy, CURLOPT_SEEKDATA, at);
        /* libcurl reads and sends an upload 64 KB at a time by default, each piece a send
         * and a poll (and a wakeup of the server): a larger buffer sends a long
         * conversation in fewer rounds (bench/scale.sh). */
        curl_easy_setopt(easy, CURLOPT_UPLOAD_BUFFERSIZE,
                         (long)(body_len < UPLOAD_BUFFER_MAX ? body_len : UPLOAD_BUFFER_MAX));
    } else {
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body->buf.ptr);
    }
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, at);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, at);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, at->curl_err);
    proxy_for(p, at->url, &hs);
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, &ss);
    if (curl_multi_add_handle(multi, easy) != CURLM_OK)
        goto done;
    added = true;
    /* The transfer starts on curl's timer (an added handle is due at once). */
    if (curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running) != CURLM_OK)
        goto done;
    for (;;) {
        int which;
        int64_t left;

        if (at->drc || !running)
            break;
        if (rein_cancel_is_set(at->req->cancel)) {
            out = O_CANCELLED;
            goto done;
        }
        left = next_deadline(at, total_end, &which);
        if (left <= 0) {
            out = (enum outcome)which;
            if (out == O_TOTAL)
                rein_error_set(err, REIN_ETIMEDOUT,
                               "the reply took longer than the total "
                               "timeout of %lld ms",
                               (long long)p->cfg.timeout[REIN_TIMEOUT_TOTAL]);
            else if (out == O_FIRST_BYTE)
                rein_error_set(err, REIN_ETIMEDOUT,
                               "no reply within the first-byte timeout of "
                               "%lld ms",
                               (long long)p->cfg.timeout[REIN_TIMEOUT_FIRST_BYTE]);
            else
                rein_error_set(err, REIN_ETIMEDOUT, "the stream was idle longer than %lld ms",
                               (long long)p->cfg.timeout[REIN_TIMEOUT_IDLE]);
            goto done;
        }
        /* Registered before the first wait only: a local upstream often answers within the
         * first perform. A trigger from then on wakes the poll (or the next one, when it
         * comes before it); the descriptor only when no hook could be registered. */
        if (hook == 0 && at->req->cancel)
            hook = rein_cancel_on(at->req->cancel, wake_multi, multi);
        if (at->req->wait_fn)
            at->req->wait_fn(at->req->wait_ud);
        if (wait_and_act(multi, &ss, hook < 0 ? rein_cancel_fd(at->req->cancel) : -1,
                         (int)(left < 1000 ? left : 1000), &perform, &running) != CURLM_OK)
            goto done;
        if (at->got_more) {
            at->got_more = false;
            at->t_last = rein_now_ms();
        }
    }
    {
        CURLMsg *msg;
        int queued;
        while ((msg = curl_multi_info_read(multi, &queued))) {
            if (msg->msg == CURLMSG_DONE)
                cc = msg->data.result;
        }
    }
    if (at->status == 0)
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &at->status);
    out = classify_curl(at, cc, err);
done:
    /* After this the hook neither runs nor is running: the multi handle may go back. */
    rein_cancel_off(at->req->cancel, hook);
    /* A pair that failed in curl itself is not trusted again; any other goes back. */
    bad = added && curl_multi_remove_handle(multi, easy) != CURLM_OK;
    /* ss lives on this stack: an idle pair's multi handle must not point at it. */
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, NULL);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, NULL);
    if (bad || out == O_FATAL)
        handles_free(&hs);
    else
        handles_give(p, &hs, spliced);
    curl_slist_free_all(hd.rest);
    return out;
}

/* ---------------------------------------------------------------------------------------
 * Sending: attempts, retries, the decision after each attempt
 */

static bool status_retryable(long s)
{
    return s == 429 || s == 500 || s == 502 || s == 503 || s == 529;
}

/*
 * True when an error reported inside a reply (after HTTP 200) is transient, so asking again
 * may succeed. What the providers document as such:
 *   Anthropic: overloaded_error (529), api_error (500), rate_limit_error (429), except the
 *     rate_limit_error whose details.error_code is enforced_spend_limit_reached (a monthly
 *     spend limit: asking again fails until the month ends);
 *   OpenAI: type server_error (a chat completions stream), code server_error or
 *     rate_limit_exceeded (the Responses API's error event and response.failed);
 *   OpenRouter: a numeric code mirroring the HTTP status: 408 timeout, 429 rate limited,
 *     502 the model is down, 503 no provider available (and the usual 500/504/529);
 *   DashScope: the codes Throttling… (429) and InternalError… (500);
 *   Bedrock: the exceptions throttling, serviceUnavailable, internalServer and
 *     modelStreamError (AWS's transient ones, which its SDKs retry).
 *   Gemini: google.rpc.Status, whose numeric code is the HTTP status (503 UNAVAILABLE, 500
 *     INTERNAL, 429 RESOURCE_EXHAUSTED are transient; 400 INVALID_ARGUMENT is not).
 * Anything else (invalid_request_error, Groq's tool_use_failed, insufficient_quota, a
 * content filter) would fail the same way again and is not retried.
 */
static bool error_is_transient(const json_t *e)
{
    static const char *const names[] = {
        "overloaded_error", "api_error", "rate_limit_error", "server_error", "rate_limit_exceeded",
        /* Bedrock's exceptions (ConverseStream's exception messages, x-amzn-ErrorType) */
        "throttlingException", "ThrottlingException", "serviceUnavailableException",
        "ServiceUnavailableException", "internalServerException", "InternalServerException",
        "modelStreamErrorException", "ModelNotReadyException"};
    const json_t *code = json_object_get(e, "code");
    const char *type = json_string_value(json_object_get(e, "type"));
    const char *scode = json_string_value(code);
    const char *detail =
        json_string_value(json_object_get(json_object_get(e, "details"), "error_code"));

    if (json_is_integer(code)) {
        json_int_t c = json_integer_value(code);
        return c == 408 || c == 429 || c == 500 || c == 502 || c == 503 || c == 504 || c == 529;
    }
    if (detail && strcmp(detail, "enforced_spend_limit_reached") == 0)
        return false;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(names); i++) {
        if ((type && strcmp(type, names[i]) == 0) || (scode && strcmp(scode, names[i]) == 0))
            return true;
    }
    return scode &&
           (strncmp(scode, "Throttling", 10) == 0 || strncmp(scode, "InternalError", 13) == 0);
}

static bool any_call(const rein_model_response *r)
{
    return r && r->ncalls > 0;
}

/* Offset of the first case-insensitive occurrence of lit in p[0..n), or n. */
static size_t find_nocase(const char *p, size_t n, const char *lit)
{
    size_t l = strlen(lit);

    for (size_t i = 0; i + l <= n; i++) {
        if (strncasecmp(p + i, lit, l) == 0)
            return i;
    }
    return n;
}

/* Appends p[0..n) to b with tags left out (when html) and runs of whitespace made one space. */
static void one_line(struct rein_buf *b, const char *p, size_t n, bool html)
{
    bool space = false, tag = false;

    for (size_t i = 0; i < n && b->len < 300; i++) {
        char c = p[i];
        if (html && (c == '<' || tag)) {
            tag = c != '>';
            space = true;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            space = true;
            continue;
        }
        if (space && b->len && rein_buf_addch(b, ' ') != REIN_OK)
            return;
        space = false;
        if (rein_buf_addch(b, c) != REIN_OK)
            return;
    }
}

/*
 * The error object for an error body that is not JSON (a proxy's HTML page, plain text, an
 * empty body): {"message": one line a person can read (an HTML page's title), "body": the
 * text as received}. NULL when memory is exhausted.
 */
static json_t *text_error(const char *p, size_t n)
{
    struct rein_buf line, out;
    struct rein_jw w;
    json_t *e = NULL;
    bool html = find_nocase(p, n < 512 ? n : 512, "<html") < (n < 512 ? n : 512) ||
                find_nocase(p, n < 512 ? n : 512, "<!doctype") < (n < 512 ? n : 512);
    size_t t = html ? find_nocase(p, n, "<title>") : n;

    rein_buf_init(&line, 0);
    if (t < n) {
        size_t end = t + 7 + find_nocase(p + t + 7, n - t - 7, "</title>");
        one_line(&line, p + t + 7, end - t - 7, false);
    }
    if (!line.len)
        one_line(&line, p, n, html);
    rein_buf_init(&out, 0);
    rein_jw_init(&w, &out);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "message");
    if (line.len)
        rein_jw_strn(&w, line.ptr, line.len);
    else
        rein_jw_str(&w, "the error body is empty");
    rein_jw_key(&w, "body");
    rein_jw_strn(&w, p, n); /* the writer cleans bytes that are not UTF-8 */
    rein_jw_obj_end(&w);
    if (rein_jw_finish(&w) == REIN_OK)
        e = rein_json_parse(out.ptr, out.len, 0, NULL);
    rein_buf_release(&out);
    rein_buf_release(&line);
    return e;
}

/* Decodes an error body (n bytes at p) with wire's body format, for the provider's error
 * object. */
static rein_model_response *decode_error_bytes(const struct rein__wire *wire,
                                               const struct rein_decoder_options *opt,
                                               const char *p, size_t n)
{
    rein_provider_decoder *d = rein__decoder_new(wire, true, opt, NULL, NULL);
    rein_model_response *r = NULL;
    rein_error e;

    if (!d)
        return NULL;
    if (rein_provider_decoder_feed(d, p, n, &e) != REIN_OK ||
        rein_provider_decoder_finish(d, &r, &e) != REIN_OK) {
        rein_provider_decoder_free(d);
        r = rein__response_new(0);
        if (!r)
            return NULL;
        /* Not JSON: a readable line, and the text itself so nothing is lost. */
        r->error = text_error(p, n);
        return r;
    }
    rein_provider_decoder_free(d);
    return r;
}

static rein_model_response *decode_error_body(const struct attempt *at)
{
    return decode_error_bytes(at->p->wire, at->opt, at->errbody.ptr, at->errbody.len);
}

/* An error body may echo the key (some proxies do): every string of the error object that
 * holds it gets it starred out, so a caller that forwards the object forwards no key. */
static void scrub_json(json_t *v, const char *key)
{
    size_t n = key ? strlen(key) : 0;
    const char *k;
    json_t *item;
    size_t i;

    if (n < 4 || !v)
        return;
    if (json_is_string(v) && strstr(json_string_value(v), key)) {
        char *copy = rein_strndup(json_string_value(v), json_string_length(v));
        char *hit;
        if (!copy)
            return;
        while ((hit = strstr(copy, key)))
            memset(hit, '*', n);
        json_string_set(v, copy);
        rein_free(copy);
    } else if (json_is_object(v)) {
        json_object_foreach(v, k, item)
        {
            scrub_json(item, key);
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, item)
        {
            scrub_json(item, key);
        }
    }
}

/*
 * A message that is no string: Mistral's 422 for a body it refuses carries pydantic's list,
 * {"detail": [{"loc": ["body", "stream_options"], "msg": "Extra inputs are not permitted"}]},
 * written "body.stream_options: Extra inputs are not permitted" (items joined by "; "); any
 * other value as its JSON. Into buf.
 */
static const char *structured_message(const json_t *m, char *buf, size_t size)
{
    const json_t *item, *part;
    struct rein_buf b;
    size_t i, k;
    rein_err rc = REIN_OK;

    rein_buf_init(&b, size);
    json_array_foreach(json_object_get(m, "detail"), i, item)
    {
        rc = rc ? rc : rein_buf_adds(&b, i ? "; " : "");
        json_array_foreach(json_object_get(item, "loc"), k, part)
        {
            if (!rc && json_is_string(part))
                rc = rein_buf_addf(&b, "%s%s", k ? "." : "", json_string_value(part));
            else if (!rc)
                rc = rein_buf_addf(&b, "%s%" JSON_INTEGER_FORMAT, k ? "." : "",
                                   json_integer_value(part));
        }
        rc = rc ? rc : rein_buf_addf(&b, ": %s", rein__json_str(item, "msg"));
    }
    if (!b.len)
        rc = rein_json_dump(&b, m); /* past size, what fit */
    snprintf(buf, size, "%s", b.len ? b.ptr : rein_strerror(rc));
    rein_buf_release(&b);
    return buf;
}

/* The error's message; OpenRouter's "Provider returned error" says what the upstream said in
 * metadata.raw, which follows it (decision 0105). buf holds the text when there is a raw, or
 * when the message is no string. */
static const char *error_message(const json_t *e, char *buf, size_t size)
{
    const json_t *mv = json_object_get(e, "message");
    const char *m = json_string_value(mv);
    const char *raw = json_string_value(json_object_get(json_object_get(e, "metadata"), "raw"));

    if (mv && !m && !json_is_null(mv))
        return structured_message(mv, buf, size);
    if (!raw || !raw[0])
        return m ? m : "";
    snprintf(buf, size, "%s: %s", m ? m : "", raw);
    return buf;
}

/* Finishes the attempt's decoder (if any) into a response; a decoder that failed (or fails
 * now) still hands out what it assembled. */
static rein_err finish_decoder(struct attempt *at, rein_model_response **out, rein_error *err)
{
    rein_err rc = REIN_OK;

    *out = NULL;
    if (!at->dec)
        return REIN_OK;
    if (!at->drc)
        rc = rein_provider_decoder_finish(at->dec, out, err);
    if (!*out)
        *out = rein__decoder_salvage(at->dec);
    return rc;
}

static int64_t backoff_ms(const rein_provider *p, int retry)
{
    int64_t base = p->cfg.retry_base_ms > 0 ? p->cfg.retry_base_ms : 1;
    int64_t cap = p->cfg.retry_max_wait_ms > 0 ? p->cfg.retry_max_wait_ms : 60000;
    int64_t ceiling = base << (retry < 16 ? retry : 16);
    uint32_t rnd;

    if (ceiling > cap)
        ceiling = cap;
    /* Full jitter between half and all of the ceiling: spread, but never a zero wait. */
    rein_random_bytes(&rnd, sizeof(rnd));
    return ceiling / 2 + (int64_t)(rnd % (uint32_t)(ceiling / 2 + 1));
}

static void emit_retry(const rein_model_request *req, int attempt)
{
    struct rein_model_event ev;

    if (!req->fn)
        return;
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_MEV_RETRY;
    ev.attempt = attempt;
    req->fn(&ev, req->ud);
}

static rein_err ensure_tools(rein_provider *p, rein_model_request *req)
{
    const struct rein__wire *w = p->wire;
    unsigned v = w->variant ? w->variant(p) : 0;
    rein_err rc;

    if (req->tools_valid && req->tools_wire == w && req->tools_variant == v)
        return REIN_OK;
    rc = rein__tools_encode(p, req, w, v);
    if (rc)
        return rc;
    req->tools_wire = w;
    req->tools_variant = v;
    req->tools_valid = true;
    return REIN_OK;
}

/* What the wire cannot carry of req, refused before anything is sent. */
static rein_err check_request(const rein_provider *p, const rein_model_request *req,
                              rein_error *err)
{
    const struct rein__wire *w = p->wire;

    if (req->nstop && !w->stop_max)
        return rein_error_set(err, REIN_EINVAL,
                              "the %s wire has no stop sequences: the provider \"%s\" cannot stop "
                              "at one (%zu given)",
                              w->name, rein_provider_name(p), req->nstop);
    if (req->nstop > w->stop_max)
        return rein_error_set(err, REIN_EINVAL,
                              "the %s wire takes at most %zu stop sequences, not %zu", w->name,
                              w->stop_max, req->nstop);
    /* a structured answer asked of a wire that cannot ask for one would come back as plain
     * text with nothing said (decision 0100) */
    if (req->output != REIN_OUTPUT_TEXT && !w->output_format)
        return rein_error_set(err, REIN_EINVAL,
                              "the %s wire has no output format: the provider \"%s\" cannot ask "
                              "for a JSON answer",
                              w->name, rein_provider_name(p));
    return REIN_OK;
}

rein_err rein_provider_prepare(rein_provider *p, rein_model_request *req, rein_error *err)
{
    rein_err rc;

    rein_error_clear(err);
    rein_error_where(err, WHERE);
    if (!p->wire)
        return rein_error_set(err, REIN_EINTERNAL, "the provider has no wire protocol");
    rc = check_request(p, req, err);
    if (rc || !p->wire->encode_tools)
        return rc;
    rc = ensure_tools(p, req);
    return rc ? rein_error_set(err, rc, "encoding the tools: %s", rein_strerror(rc)) : REIN_OK;
}

struct send_state {
    rein_provider *p;
    rein_model_request *req;
    const struct rein__body *body;
    size_t body_len;
    rein_history *h;
    uint64_t seed;
    bool seeded; /* seed is made (send_seed) */
    int64_t total_end;
    struct rein_decoder_options opt;
    const char **names;
    char *url; /* the wire's URL for this request, or NULL: the endpoint */
    int attempt;
    int retries;     /* retries used for errors and statuses */
    bool drop_retry; /* the one retry of a dropped stream is used */
};

static void attempt_init(struct attempt *at, struct send_state *s)
{
    memset(at, 0, sizeof(*at));
    at->p = s->p;
    at->url = s->url ? s->url : s->p->endpoint;
    at->req = s->req;
    at->opt = &s->opt;
    at->send = s;
    at->recording = s->p->rec != NULL;
    rein_buf_init(&at->errbody, ERROR_BODY_MAX + 1);
    rein_buf_init(&at->raw, (size_t)256 << 20);
    rein_error_clear(&at->derr);
}

static void attempt_release(struct attempt *at)
{
    rein__headers_release(&at->hdrs);
    rein_provider_decoder_free(at->dec);
    rein_buf_release(&at->errbody);
    rein_buf_release(&at->raw);
}

/* What to do after an attempt. */
enum step { S_RETURN, S_RETRY };

/*
 * Decides, from the attempt's outcome and what it received, whether to retry (setting
 * *wait_ms) or to return (setting *rc, *resp and err).
 */
static enum step next_step(struct send_state *s, struct attempt *at, enum outcome out,
                           rein_model_response **resp, int64_t *wait_ms, rein_err *rc,
                           rein_error *err)
{
    rein_provider *p = s->p;
    int max = s->req->retries >= 0 ? s->req->retries : p->cfg.max_retries;
    bool retry_ok = s->retries < max;
    char text[256];
    rein_err frc;

    *wait_ms = 0;
    if (out == O_FATAL) {
        *rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        return S_RETURN;
    }
    if (out == O_CANCELLED) {
        (void)finish_decoder(at, resp, NULL);
        *rc = rein_error_set(err, REIN_ECANCELED, "the request was cancelled: %s",
                             rein_cancel_reason(s->req->cancel));
        return S_RETURN;
    }
    if (out == O_HTTP_ERROR) {
        *resp = decode_error_body(at);
        if (*resp) {
            /* A Retry-After header wins over a delay the error body names (Gemini's
             * RetryInfo), which the decoder put there. */
            if (at->retry_after_ms >= 0 || (*resp)->retry_after_ms < 0)
                (*resp)->retry_after_ms = at->retry_after_ms;
            else
                at->retry_after_ms = (*resp)->retry_after_ms;
            /* AWS names the error's type in a header, not in the body. */
            if (at->error_type[0] && json_is_object((*resp)->error) &&
                !json_object_get((*resp)->error, "type"))
                json_object_set_new((*resp)->error, "type", json_string(at->error_type));
            scrub_json((*resp)->error, p->cfg.api_key);
            scrub_json((*resp)->error, s->req->api_key);
        }
        *rc = rein_error_set(
            err, REIN_EHTTP, "HTTP %ld from %s%s%s", at->status, at->url,
            *resp && (*resp)->error ? ": " : "",
            *resp && (*resp)->error ? error_message((*resp)->error, text, sizeof(text)) : "");
        err->detail = (int)at->status;
        if (status_retryable(at->status) && retry_ok) {
            *wait_ms = at->retry_after_ms >= 0 ? at->retry_after_ms : backoff_ms(p, s->retries);
            s->retries++;
            return S_RETRY;
        }
        return S_RETURN;
    }
    if (out == O_CONNECT || out == O_FIRST_BYTE) {
        if (retry_ok) {
            *wait_ms = backoff_ms(p, s->retries);
            s->retries++;
            return S_RETRY;
        }
        *rc = err->code ? err->code : REIN_EIO;
        return S_RETURN;
    }
    if (out == O_TOTAL) {
        (void)finish_decoder(at, resp, NULL);
        *rc = REIN_ETIMEDOUT;
        return S_RETURN;
    }
    /* O_DONE, O_DROPPED, O_DECODE: the decoder holds what arrived. */
    frc = finish_decoder(at, resp, out == O_DECODE ? NULL : err);
    if (frc == REIN_ENOMEM) {
        *rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        return S_RETURN;
    }
    if (out == O_DONE && frc) {
        out = O_DECODE;
    }
    if (out == O_DONE && *resp && (*resp)->error) {
        if (error_is_transient((*resp)->error) && retry_ok) {
            *wait_ms = backoff_ms(p, s->retries);
            s->retries++;
            return S_RETRY;
        }
        *rc = rein_error_set(err, REIN_EPROVIDER, "the provider reported an error: %s",
                             error_message((*resp)->error, text, sizeof(text)));
        return S_RETURN;
    }
    if (out == O_DONE && *resp && (*resp)->complete) {
        *rc = REIN_OK;
        return S_RETURN;
    }
    if (out == O_DONE) /* the stream ended without its end marker */
        rein_error_set(err, REIN_EPROVIDER, "the reply stream ended before it was complete");
    /* A dropped, cut or undecodable stream: once more if no tool call had begun. */
    if (!any_call(*resp) && !s->drop_retry && s->req->retries != 0) {
        s->drop_retry = true;
        return S_RETRY;
    }
    if (out == O_DECODE) {
        *rc =
            rein_error_set(err, REIN_EPROVIDER, "the reply could not be decoded: %s", at->derr.msg);
    } else {
        char why[sizeof(err->msg)];
        snprintf(why, sizeof(why), "%s", err->msg[0] ? err->msg : "the connection closed");
        *rc = rein_error_set(err, REIN_EPROVIDER, "%s%s",
                             any_call(*resp) ? "the stream dropped after a tool call had "
                                               "begun: "
                                             : "the stream dropped twice: ",
                             why);
    }
    return S_RETURN;
}

static void record_exchange(struct send_state *s, struct attempt *at)
{
    const struct rein_buf *b = status_ok(at->status) ? &at->raw : &at->errbody;

    if (!s->p->rec || at->status == 0)
        return;
    if (rein__recorder_write(s->p->rec, s->p, s->body->buf.ptr, s->body_len, at->status, at->ctype,
                             b->ptr, b->len) != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "could not write to the recording %s", s->p->cfg.record);
}

/* Serves the next recorded exchange through the same decoding and decisions. */
static enum outcome replay_attempt(struct send_state *s, struct attempt *at, rein_error *err)
{
    const char *ctype, *resp, *wire;
    size_t len;
    rein_err rc;

    rc = rein__replay_next(s->p->replay, s->body->buf.ptr, s->body_len, &at->status, &ctype, &resp,
                           &len, &wire, err);
    if (rc)
        return rc == REIN_ENOMEM ? O_FATAL : O_DECODE;
    snprintf(at->ctype, sizeof(at->ctype), "%s", ctype);
    at->got_byte = true;
    if (!status_ok(at->status)) {
        if (rein_buf_add(&at->errbody, resp, len < ERROR_BODY_MAX ? len : ERROR_BODY_MAX))
            return O_FATAL;
        return O_HTTP_ERROR;
    }
    if (start_decoder(at) != REIN_OK)
        return O_FATAL;
    /* Fed in pieces, so events arrive as they would from the network. */
    for (size_t off = 0; off < len; off += 4096) {
        size_t n = len - off < 4096 ? len - off : 4096;
        at->drc = rein_provider_decoder_feed(at->dec, resp + off, n, &at->derr);
        if (at->drc) {
            *err = at->derr;
            return at->drc == REIN_ENOMEM ? O_FATAL : O_DECODE;
        }
    }
    return O_DONE;
}

/* An error body may echo the key (some proxies do): it never leaves in a message. */
static void scrub_message(rein_error *err, const char *key)
{
    size_t n = key ? strlen(key) : 0;
    char *hit;

    if (!err || n < 4)
        return;
    while ((hit = strstr(err->msg, key))) {
        memset(hit, '*', n);
    }
}

static rein_err send_loop(struct send_state *s, rein_model_response **out, rein_error *err)
{
    for (;;) {
        struct attempt at;
        enum outcome o;
        enum step st;
        int64_t wait_ms;
        rein_err rc = REIN_OK;
        rein_model_response *resp = NULL;

        s->attempt++;
        attempt_init(&at, s);
        rein_error_clear(err);
        rein_error_where(err, WHERE);
        if (s->p->replay) {
            o = replay_attempt(s, &at, err);
            if (o == O_DECODE && err->code == REIN_EINVAL) {
                /* A replay mismatch is the answer itself, never a reason to retry. */
                attempt_release(&at);
                return err->code;
            }
        } else {
            o = run_attempt(&at, s->body, s->body_len, s->total_end, err);
            record_exchange(s, &at);
        }
        st = next_step(s, &at, o, &resp, &wait_ms, &rc, err);
        if (resp) { /* the headers go with the response of the attempt that made it */
            resp->headers = at.hdrs;
            memset(&at.hdrs, 0, sizeof(at.hdrs));
        }
        attempt_release(&at);
        scrub_message(err, s->p->cfg.api_key);
        scrub_message(err, s->req->api_key);
        if (st == S_RETURN || s->p->replay) {
            if (st == S_RETRY) /* a recording holds no second attempt */
                rc = err->code ? err->code : REIN_EPROVIDER;
            *out = resp;
            return rc;
        }
        if (wait_ms > 0) {
            int64_t now = rein_now_ms();
            if (wait_ms > s->p->cfg.retry_max_wait_ms && s->p->cfg.retry_max_wait_ms > 0) {
                *out = resp; /* the error body that asked for the wait */
                return rein_error_set(err, REIN_EHTTP,
                                      "the provider asked to wait %lld ms before retrying, "
                                      "longer than retry_max_wait_ms (%lld ms)",
                                      (long long)wait_ms, (long long)s->p->cfg.retry_max_wait_ms);
            }
            if (s->total_end > 0 && now + wait_ms >= s->total_end) {
                *out = resp;
                return rein_error_set(err, REIN_ETIMEDOUT,
                                      "a retry after %lld ms would pass the total timeout",
                                      (long long)wait_ms);
            }
            rein_log(REIN_LOG_INFO, WHERE, "attempt %d failed (%s); retrying in %lld ms",
                     s->attempt, err->msg[0] ? err->msg : "the stream dropped", (long long)wait_ms);
            if (s->req->wait_fn)
                s->req->wait_fn(s->req->wait_ud);
            if (rein_cancel_wait(s->req->cancel, wait_ms)) {
                *out = resp;
                return rein_error_set(err, REIN_ECANCELED, "the request was cancelled: %s",
                                      rein_cancel_reason(s->req->cancel));
            }
        }
        if (wait_ms <= 0)
            rein_log(REIN_LOG_INFO, WHERE, "attempt %d failed (%s); asking once more", s->attempt,
                     err->msg[0] ? err->msg : "the stream dropped");
        rein_model_response_free(resp);
        emit_retry(s->req, s->attempt + 1);
    }
}

/* What a backend without HTTP (the rules) was asked, as one JSON body for a recording:
 * {"messages": the history, "tools": the names offered}. */
static rein_err local_request(const rein_model_request *req, const rein_history *h,
                              struct rein_buf *b)
{
    json_t *names = json_array(), *messages = rein_history_to_json(h), *doc;
    rein_err rc;

    for (size_t i = 0; names && i < req->ntools; i++)
        json_array_append_new(names, json_string(req->tools[i].name));
    doc = names && messages ? json_pack("{s:O, s:O}", "messages", messages, "tools", names) : NULL;
    rc = doc ? rein_json_dump(b, doc) : REIN_ENOMEM;
    json_decref(doc);
    json_decref(names);
    json_decref(messages);
    return rc;
}

/* Checks a local answer against the recorded one (replay of a rules recording). */
static rein_err replay_local(rein_provider *p, const struct rein_buf *body, const char *got,
                             rein_error *err)
{
    const char *ctype, *resp, *wire;
    size_t len;
    long status;
    json_t *a, *b;
    bool same;
    rein_err rc = rein__replay_next(p->replay, body->ptr, body->len, &status, &ctype, &resp, &len,
                                    &wire, err);

    if (rc)
        return rc;
    a = rein_json_parse(resp, len, 0, NULL);
    b = rein_json_parse(got, strlen(got), 0, NULL);
    same = a && b && json_equal(a, b);
    json_decref(a);
    json_decref(b);
    if (!same)
        return rein_error_set(err, REIN_EINVAL,
                              "replay: the rules answer differently from %s now: recorded %.100s",
                              p->cfg.replay, resp);
    return REIN_OK;
}

/* A backend that answers without HTTP, with its exchanges recorded and replayed like any
 * model's, so `rein provider chat --record` works offline and never leaves an empty file. */
static rein_err send_local(rein_provider *p, rein_model_request *req, rein_history *h,
                           rein_model_response **out, rein_error *err)
{
    struct rein_buf body;
    json_t *j;
    char *text = NULL;
    rein_err rc = p->wire->send(p, req, h, out, err);

    if (rc || (!p->rec && !p->replay))
        return rc;
    rein_buf_init(&body, 0);
    j = rein_model_response_to_json(*out);
    text = j ? rein_json_dumps(j) : NULL;
    json_decref(j);
    if (!text || local_request(req, h, &body) != REIN_OK) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory recording the exchange");
    } else if (p->replay) {
        rc = replay_local(p, &body, text, err);
    } else if (rein__recorder_write(p->rec, p, body.ptr, body.len, 200, "application/json", text,
                                    strlen(text)) != REIN_OK) {
        rein_log(REIN_LOG_WARN, WHERE, "could not write to the recording %s", p->cfg.record);
    }
    rein_free(text);
    rein_buf_release(&body);
    if (rc) {
        rein_model_response_free(*out);
        *out = NULL;
    }
    return rc;
}

/*
 * The seed of the ids made for calls the provider sent without one: the same request gives
 * the same ids (a retried attempt names its calls alike), another request others. The
 * messages come in through the history's chained hash, made once per message; the body's head
 * and tail (model, tools, parameters) and its length cover the rest, so no request hashes the
 * whole conversation again.
 */
static uint64_t request_seed(rein_history *h, const struct rein__body *body)
{
    enum { EDGE = 4096 };
    uint64_t chain = rein__history_chain(h);
    uint64_t s = rein__hash64(0, &chain, sizeof(chain));
    size_t len = rein__body_len(body);
    size_t head = len < EDGE ? len : EDGE;
    size_t tail = len - head < EDGE ? len - head : EDGE;

    s = rein__hash64(s, &len, sizeof(len));
    if (len) {
        s = rein__body_hash(body, s, 0, head);
        s = rein__body_hash(body, s, len - tail, tail);
    }
    return s;
}

/* The request's seed, made the first time a call without an id needs it: hashing the
 * conversation cost about 9,000 instructions per gateway request whose reply needed none. */
static uint64_t send_seed(void *ud)
{
    struct send_state *s = ud;

    if (!s->seeded) {
        s->seed = request_seed(s->h, s->body);
        s->seeded = true;
    }
    return s->seed;
}

static rein_err send_request(rein_provider *p, rein_model_request *req, rein_history *h,
                             rein_model_response **out, rein_error *err)
{
    struct send_state s;
    struct rein__body body;
    rein_error local;
    rein_err rc;

    /* err may be NULL (core.h); the send's failure paths below read and copy the error. */
    if (!err)
        err = &local;
    *out = NULL;
    rein_error_clear(err);
    rein_error_where(err, WHERE);
    if (!p->wire)
        return rein_error_set(err, REIN_EINTERNAL, "the provider has no wire protocol");
    rc = check_request(p, req, err);
    if (rc)
        return rc;
    if (p->wire->send)
        return send_local(p, req, h, out, err);
    if (!h || rein_history_len(h) == 0)
        return rein_error_set(err, REIN_EINVAL, "nothing to send: the history is empty");
    if (rein_cancel_is_set(req->cancel))
        return rein_error_set(err, REIN_ECANCELED, "the request was cancelled: %s",
                              rein_cancel_reason(req->cancel));
    memset(&s, 0, sizeof(s));
    s.p = p;
    s.req = req;
    rc = ensure_tools(p, req);
    if (rc)
        return rein_error_set(err, rc, "encoding the tools: %s", rein_strerror(rc));
    rein__body_init(&body);
    rc = p->wire->build_body(p, req, h, &body, err);
    /* A recording and a replay read the body as one piece (a signer reads the pieces). */
    if (!rc && (p->rec || p->replay) && rein__body_flatten(&body) != REIN_OK)
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    if (rc) {
        rein__body_release(&body);
        return rc;
    }
    s.body = &body;
    s.body_len = rein__body_len(&body);
    if (p->wire->url && !p->replay && !(s.url = p->wire->url(p, req))) {
        rein__body_release(&body);
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    s.h = h;
    if (p->cfg.timeout[REIN_TIMEOUT_TOTAL] > 0)
        s.total_end = rein_now_ms() + p->cfg.timeout[REIN_TIMEOUT_TOTAL];
    s.opt.text_calls = p->cfg.text_calls;
    s.opt.keep_think_tags = p->cfg.keep_think_tags;
    if (req->ntools) {
        s.names = rein_calloc(req->ntools, sizeof(*s.names));
        if (!s.names) {
            rein_free(s.url);
            rein__body_release(&body);
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < req->ntools; i++)
            s.names[i] = req->tools[i].name;
        s.opt.tool_names = s.names;
        s.opt.tool_name_count = req->ntools;
    }
    rc = send_loop(&s, out, err);
    rein_free(s.url);
    rein_free(s.names);
    rein__body_release(&body);
    if (rc && !err->msg[0])
        rein_error_set(err, rc, "%s", rein_strerror(rc));
    scrub_message(err, p->cfg.api_key);
    scrub_message(err, req->api_key);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * Token count
 *
 * Four wires have a count of their own: Anthropic's POST /v1/messages/count_tokens (on Vertex
 * AI POST …/publishers/anthropic/models/count-tokens:rawPredict, the model in the body), the
 * Responses API's POST /v1/responses/input_tokens, Gemini's POST models/MODEL:countTokens and
 * Bedrock's POST /model/MODEL/count-tokens (signed as a send is). A count is one plain
 * exchange (no retry, no stream): the answer is read whole, its number taken from the wire's
 * member, an error status decoded as a send's is.
 */

/* The member of a count answer that holds the number, by wire; NULL: the wire has no count. */
static const char *count_member(const rein_provider *p)
{
    const char *w = p->wire ? p->wire->name : "";

    if (p->replay || !p->endpoint)
        return NULL;
    if (!strcmp(w, "anthropic") || !strcmp(w, "openai-responses"))
        return "input_tokens";
    if (!strcmp(w, "gemini"))
        return "totalTokens";
    if (!strcmp(w, "bedrock"))
        return "inputTokens";
    return NULL;
}

bool rein_provider_can_count(const rein_provider *p)
{
    return p && count_member(p) != NULL;
}

/* The count's URL: the endpoint's path with the count's own (before any query). New. */
static char *count_url(const rein_provider *p, const rein_model_request *req)
{
    const char *model = rein__request_model(p, req);
    const char *q = strchr(p->endpoint, '?');
    int n = q ? (int)(q - p->endpoint) : (int)strlen(p->endpoint);

    if (!strcmp(p->wire->name, "bedrock"))
        return rein__bedrock_count_url(p, req);
    /* Claude on Vertex AI counts at one address for every model, named in the body */
    if (p->wire == &rein__wire_vertex_anthropic)
        return rein_asprintf("%.*s/models/count-tokens:rawPredict%s", n, p->endpoint, q ? q : "");
    if (!strcmp(p->wire->name, "gemini")) {
        if (!strncmp(model, "models/", 7))
            model += 7;
        return rein_asprintf("%.*s/models/%s:countTokens%s", n, p->endpoint, model, q ? q : "");
    }
    return rein_asprintf("%.*s/%s%s", n, p->endpoint,
                         strcmp(p->wire->name, "anthropic") ? "input_tokens" : "count_tokens",
                         q ? q : "");
}

/* What one count exchange gathers (count_header, count_write). */
struct count_xfer {
    const rein_provider *p;
    const rein_model_request *req;
    struct rein_buf body; /* the answer, at most 1 MiB */
    long status;
    int64_t retry_after_ms; /* -1: none asked */
    char error_type[64];    /* AWS's x-amzn-ErrorType, up to its ':' */
    struct rein_model_headers hdrs;
};

static size_t count_write(char *p, size_t size, size_t n, void *userdata)
{
    struct count_xfer *x = userdata;

    /* an answer past 1 MiB is no token count */
    if (x->body.len + size * n > ERROR_BODY_MAX || rein_buf_add(&x->body, p, size * n))
        return 0;
    return size * n;
}

static size_t count_header(char *line, size_t size, size_t nmemb, void *ud)
{
    struct count_xfer *x = ud;
    size_t n = size * nmemb, vlen;
    const char *v;

    if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) { /* a new response: start over */
        const char *sp = memchr(line, ' ', n);
        x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        x->retry_after_ms = -1;
        x->error_type[0] = '\0';
        rein__headers_clear(&x->hdrs);
    } else if (header_is(line, n, "x-amzn-errortype", &v, &vlen)) {
        size_t k = strcspn(v, ":\r\n");
        if (k > vlen)
            k = vlen;
        if (k >= sizeof(x->error_type))
            k = sizeof(x->error_type) - 1;
        memcpy(x->error_type, v, k);
        x->error_type[k] = '\0';
    } else if (header_is(line, n, "retry-after-ms", &v, &vlen)) {
        int64_t ms = parse_retry_after(v, vlen, true);
        if (ms >= 0)
            x->retry_after_ms = ms;
    } else if (header_is(line, n, "retry-after", &v, &vlen)) {
        int64_t ms = parse_retry_after(v, vlen, false);
        if (ms >= 0 && x->retry_after_ms < 0)
            x->retry_after_ms = ms;
    } else {
        const char *keys[2] = {x->p->cfg.api_key, x->req->api_key};
        (void)rein__headers_offer(&x->hdrs, line, n, keys, 2);
    }
    return n;
}

/* The transfer's progress: a cancelled request stops it. */
static int count_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    const struct count_xfer *x = ud;

    (void)dt, (void)dn, (void)ut, (void)un;
    return x->req->cancel && rein_cancel_is_set(x->req->cancel);
}

/* POSTs body (one piece) to url, signed as a send of the wire is (a request's own key stands
 * for the signature there too); x gets the answer. REIN_OK once an answer came. */
static rein_err count_post(struct count_xfer *x, const char *url, const struct rein__body *body,
                           rein_error *err)
{
    const rein_provider *p = x->p;
    struct curl_slist *headers = NULL;
    int64_t limit = p->cfg.timeout[REIN_TIMEOUT_FIRST_BYTE];
    CURL *easy = curl_easy_init();
    rein_err rc = easy ? rein__header_add(&headers, ct_line) : REIN_ENOMEM;
    CURLcode cc;

    if (!rc)
        rc = rein__header_add(&headers, accept_json);
    if (!rc)
        rc = rein__header_add(&headers, p->ua_line);
    if (!rc)
        rc = request_headers(p, x->req, &headers);
    if (!rc && p->wire->sign && !x->req->api_key)
        rc = p->wire->sign(p, url, body, &headers);
    if (rc) {
        curl_slist_free_all(headers);
        curl_easy_cleanup(easy);
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body->buf.ptr);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->buf.len);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, count_write);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, count_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, count_progress);
    curl_easy_setopt(easy, CURLOPT_XFERINFODATA, x);
    curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)(limit > 0 ? limit : 60000));
    set_transport(p, easy);
    if (proxy_applies(p, url)) {
        curl_easy_setopt(easy, CURLOPT_PROXY, p->proxy);
        curl_easy_setopt(easy, CURLOPT_NOPROXY, p->noproxy);
    }
    cc = curl_easy_perform(easy);
    curl_slist_free_all(headers);
    curl_easy_cleanup(easy);
    if (cc == CURLE_OK)
        return REIN_OK;
    rc = cc == CURLE_OPERATION_TIMEDOUT    ? REIN_ETIMEDOUT
         : cc == CURLE_ABORTED_BY_CALLBACK ? REIN_ECANCELED
         : cc == CURLE_OUT_OF_MEMORY       ? REIN_ENOMEM
                                           : REIN_EIO;
    return rein_error_set(err, rc, "counting tokens at %s: %s", url, curl_easy_strerror(cc));
}

/* An error status: the answer decoded as a send's failed response is (*out, new). */
static rein_err count_failed(struct count_xfer *x, const char *url, rein_model_response **out,
                             rein_error *err)
{
    static const struct rein_decoder_options opt;
    rein_model_response *r = decode_error_bytes(x->p->wire, &opt, x->body.ptr, x->body.len);
    char text[256];

    if (r) {
        if (x->retry_after_ms >= 0 || r->retry_after_ms < 0)
            r->retry_after_ms = x->retry_after_ms;
        /* AWS names the error's type in a header, not in the body. */
        if (x->error_type[0] && json_is_object(r->error) && !json_object_get(r->error, "type"))
            json_object_set_new(r->error, "type", json_string(x->error_type));
        scrub_json(r->error, x->p->cfg.api_key);
        scrub_json(r->error, x->req->api_key);
        r->headers = x->hdrs;
        memset(&x->hdrs, 0, sizeof(x->hdrs));
    }
    *out = r;
    rein_error_set(err, REIN_EHTTP, "HTTP %ld from %s%s%s", x->status, url,
                   r && r->error ? ": " : "",
                   r && r->error ? error_message(r->error, text, sizeof(text)) : "");
    err->detail = (int)x->status;
    return REIN_EHTTP;
}

/* A 2xx answer: its number, or REIN_EPROVIDER naming what came instead. */
static rein_err count_read(const struct count_xfer *x, int64_t *tokens, rein_error *err)
{
    const char *member = count_member(x->p);
    json_t *a = rein_json_parse(x->body.ptr, x->body.len, 0, NULL);
    const json_t *v = json_object_get(a, member);
    bool ok = json_is_integer(v) && json_integer_value(v) >= 0;

    if (ok)
        *tokens = json_integer_value(v);
    json_decref(a);
    if (ok)
        return REIN_OK;
    return rein_error_set(err, REIN_EPROVIDER,
                          "the upstream's token count answer has no \"%s\" number: %.120s", member,
                          x->body.len ? x->body.ptr : "(an empty body)");
}

rein_err rein_provider_count_tokens(rein_provider *p, const rein_model_request *req,
                                    const char *body, size_t len, int64_t *tokens,
                                    struct rein_buf *answer, rein_model_response **out,
                                    rein_error *err)
{
    static const rein_model_request none = {.retries = -1};
    struct count_xfer x = {.p = p, .req = req ? req : &none, .retry_after_ms = -1};
    struct rein__body sent;
    char *url;
    rein_err rc;

    *tokens = -1;
    *out = NULL;
    rein_error_clear(err);
    rein_error_where(err, WHERE);
    if (!count_member(p))
        return rein_error_set(err, REIN_ENOTSUP,
                              "the %s wire has no token count (Anthropic's, the Responses API's, "
                              "Gemini's and Bedrock's have)",
                              p->replay ? "replay"
                              : p->wire ? p->wire->name
                                        : "provider's");
    url = count_url(p, x.req);
    if (!url)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    /* The body as the signer reads one (a copy: a count's body is small next to its wait). */
    rein__body_init(&sent);
    if (rein_buf_add(&sent.buf, body, len)) {
        rein_free(url);
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    rein_buf_init(&x.body, 0);
    rc = count_post(&x, url, &sent, err);
    if (!rc && !status_ok(x.status))
        rc = count_failed(&x, url, out, err);
    else if (!rc)
        rc = count_read(&x, tokens, err);
    if ((!rc || rc == REIN_EPROVIDER) && answer && rein_buf_add(answer, x.body.ptr, x.body.len))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    rein__headers_release(&x.hdrs);
    rein_buf_release(&x.body);
    rein__body_release(&sent);
    rein_free(url);
    scrub_message(err, p->cfg.api_key);
    scrub_message(err, x.req->api_key);
    return rc;
}

/* The members of a send's body each wire's count takes (the rest it refuses with a 400). */
static const char *const count_anthropic[] = {"model",       "messages", "system",      "tools",
                                              "tool_choice", "thinking", "mcp_servers", NULL};
static const char *const count_responses[] = {"model",        "input",       "instructions",
                                              "tools",        "tool_choice", "parallel_tool_calls",
                                              "reasoning",    "text",        "previous_response_id",
                                              "conversation", "truncation",  NULL};
/* Gemini's GenerateContentRequest (the model is added); Vertex AI's CountTokensRequest has
 * these at its top level, and no generateContentRequest. */
static const char *const count_gemini[] = {
    "contents",         "systemInstruction", "tools",         "toolConfig",
    "generationConfig", "safetySettings",    "cachedContent", NULL};
static const char *const count_vertex[] = {"contents", "systemInstruction", "tools",
                                           "generationConfig", NULL};
/* Bedrock's ConverseTokensRequest: the Converse members it takes, under input.converse (no
 * inferenceConfig, which its count does not read). */
static const char *const count_bedrock[] = {"messages", "system", "toolConfig",
                                            "additionalModelRequestFields", NULL};

/* {"input": {"converse": o}} (o taken, may be NULL), or NULL when memory is exhausted. */
static json_t *bedrock_count_shape(json_t *o)
{
    json_t *input = json_object(), *top = json_object();

    if (!o || !input || !top) {
        json_decref(o);
        json_decref(input);
        json_decref(top);
        return NULL;
    }
    /* json_object_set_new takes its value even when it fails */
    if (json_object_set_new(input, "converse", o)) {
        json_decref(input);
        json_decref(top);
        return NULL;
    }
    if (json_object_set_new(top, "input", input)) {
        json_decref(top);
        return NULL;
    }
    return top;
}

/* The count's body from a send's (sent, taken): only what the count takes, in its shape. */
static json_t *count_shape(const rein_provider *p, const rein_model_request *req, json_t *sent)
{
    bool gemini = !strcmp(p->wire->name, "gemini");
    bool vertex = gemini && !strcmp(rein_provider_name(p), "vertex");
    bool bedrock = !strcmp(p->wire->name, "bedrock");
    const char *const *keep = vertex                                ? count_vertex
                              : gemini                              ? count_gemini
                              : bedrock                             ? count_bedrock
                              : !strcmp(p->wire->name, "anthropic") ? count_anthropic
                                                                    : count_responses;
    json_t *o = json_object(), *top;
    const char *model = rein__request_model(p, req);
    char *name;

    for (size_t i = 0; o && keep[i]; i++) {
        json_t *v = json_object_get(sent, keep[i]);
        if (v && json_object_set(o, keep[i], v)) {
            json_decref(o);
            o = NULL;
        }
    }
    if (bedrock) {
        json_decref(sent);
        return bedrock_count_shape(o);
    }
    /* Vertex's send names its Claude in the URL; its count takes the model in the body */
    if (o && p->wire == &rein__wire_vertex_anthropic &&
        json_object_set_new(o, "model", json_string(model))) {
        json_decref(o);
        o = NULL;
    }
    if (!o || !gemini || vertex) {
        json_decref(sent);
        return o;
    }
    /* Gemini's count reads system and tools only inside a generateContentRequest, which names
     * its model as a resource. */
    name = rein_asprintf("models/%s", strncmp(model, "models/", 7) ? model : model + 7);
    top = json_object();
    if (!name || !top || json_object_set_new(o, "model", json_string(name))) {
        json_decref(o);
        json_decref(top);
        top = NULL;
    } else if (json_object_set_new(top, "generateContentRequest", o)) {
        json_decref(top);
        top = NULL;
    }
    rein_free(name);
    json_decref(sent);
    return top;
}

rein_err rein__provider_count_body(rein_provider *p, rein_model_request *req, rein_history *h,
                                   char **text, rein_error *err)
{
    bool stream = req->stream;
    struct rein__body body;
    json_t *sent = NULL;
    rein_err rc = rein_provider_prepare(p, req, err);

    if (rc)
        return rc;
    rein__body_init(&body);
    req->stream = false; /* no "stream" member, Gemini's non-streaming shape */
    rc = p->wire->build_body(p, req, h, &body, err);
    req->stream = stream;
    if (!rc && rein__body_flatten(&body))
        rc = REIN_ENOMEM;
    if (!rc && !(sent = rein_json_parse(body.buf.ptr, body.buf.len, 0, NULL)))
        rc = REIN_ENOMEM; /* the wire's own writing parses: only memory can fail it */
    rein__body_release(&body);
    if (!rc && !(sent = count_shape(p, req, sent)))
        rc = REIN_ENOMEM;
    if (!rc && !(*text = rein_json_dumps(sent)))
        rc = REIN_ENOMEM;
    json_decref(sent);
    if (rc == REIN_ENOMEM)
        return rein_error_set(err, rc, "out of memory writing the count's body");
    return rc;
}

rein_err rein_provider_count_request(rein_provider *p, rein_model_request *req, rein_history *h,
                                     int64_t *tokens, struct rein_buf *answer,
                                     rein_model_response **out, rein_error *err)
{
    char *body = NULL;
    rein_err rc;

    *tokens = -1;
    *out = NULL;
    rein_error_clear(err);
    rein_error_where(err, WHERE);
    if (!count_member(p))
        return rein_provider_count_tokens(p, req, "", 0, tokens, answer, out, err);
    rc = rein__provider_count_body(p, req, h, &body, err);
    if (!rc)
        rc = rein_provider_count_tokens(p, req, body, strlen(body), tokens, answer, out, err);
    rein_free(body);
    return rc;
}

/* Adds a JSON attribute (message contents) to span; v is taken. */
static void span_set_json(struct rein_span *span, const char *key, json_t *v)
{
    char *text = v ? rein_json_dumps(v) : NULL;

    rein_span_set_str(span, key, text);
    rein_free(text);
    json_decref(v);
}

/* The OpenTelemetry GenAI attributes of a chat span (docs/decisions/0029). */
static void chat_attributes(struct rein_span *span, const rein_provider *p,
                            const rein_model_request *req, const rein_history *h,
                            const rein_model_response *r, rein_err rc, const rein_error *err)
{
    rein_span_set_str(span, "gen_ai.operation.name", "chat");
    rein_span_set_str(span, "gen_ai.provider.name", rein_provider_name(p));
    rein_span_set_str(span, "gen_ai.request.model", rein__request_model(p, req));
    if (req->max_tokens > 0)
        rein_span_set_int(span, "gen_ai.request.max_tokens", req->max_tokens);
    if (req->temperature >= 0)
        rein_span_set_double(span, "gen_ai.request.temperature", req->temperature);
    if (rein_trace_capture_content() && h)
        span_set_json(span, "gen_ai.input.messages", rein_history_to_json(h));
    if (r) {
        const char *reason = rein_model_response_finish_reason(r);
        if (reason && reason[0])
            rein_span_set_strs(span, "gen_ai.response.finish_reasons", &reason, 1);
        rein_span_set_str(span, "gen_ai.response.model", r->answer_model);
        rein_span_set_str(span, "gen_ai.response.id", r->answer_id);
        if (r->input_tokens >= 0)
            rein_span_set_int(span, "gen_ai.usage.input_tokens", r->input_tokens);
        if (r->output_tokens >= 0)
            rein_span_set_int(span, "gen_ai.usage.output_tokens", r->output_tokens);
        /* Of the input tokens, those read from the provider's prompt cache. */
        if (r->cached_tokens >= 0)
            rein_span_set_int(span, "gen_ai.usage.cache_read.input_tokens", r->cached_tokens);
        /* And those written to it (counted in the input tokens too, as the conventions ask). */
        if (r->cache_write_tokens >= 0)
            rein_span_set_int(span, "gen_ai.usage.cache_creation.input_tokens",
                              r->cache_write_tokens);
        rein_span_set_int(span, "rein.tool_calls", (int64_t)r->ncalls);
        if (rein_trace_capture_content())
            span_set_json(span, "gen_ai.output.messages", rein_model_response_message(r));
    }
    if (rc) {
        char status[16];
        /* error.type: the HTTP status when the provider answered one, else rein's code. */
        if (err && err->detail >= 400 && err->detail < 600)
            snprintf(status, sizeof(status), "%d", err->detail);
        rein_span_fail(span,
                       err && err->detail >= 400 && err->detail < 600 ? status
                       : rc == REIN_ETIMEDOUT                         ? "timeout"
                                                                      : rein_err_name(rc),
                       err ? err->msg : NULL);
    }
}

/*
 * A model call is one "chat {model}" client span (the GenAI conventions): it is the current
 * context while the request is sent, so the request's traceparent names it.
 */
rein_err rein_provider_send(rein_provider *p, rein_model_request *req, rein_history *h,
                            rein_model_response **out, rein_error *err)
{
    const char *model = rein__request_model(p, req);
    struct rein_span span;
    char name[160];
    rein_err rc;

    /* The span's full name only when it is recorded: formatting it cost as much as the rest
     * of the span's start, for every model call. */
    rein_span_start(&span, "chat", REIN_SPAN_CLIENT, NULL);
    if (model && rein_span_is_recording(&span)) {
        snprintf(name, sizeof(name), "chat %s", model);
        rein_span_set_name(&span, name);
    }
    rc = send_request(p, req, h, out, err);
    if (rein_span_is_recording(&span))
        chat_attributes(&span, p, req, h, *out, rc, err);
    rein_span_end(&span);
    return rc;
}
