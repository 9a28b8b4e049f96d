/*
 * The "http" runner: an external skill behind a URL.
 *
 *   "runner": {"kind": "http", "url": "http://127.0.0.1:9000/skills/search",
 *              "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"},
 *              "max_response_bytes": 4194304}
 *
 * Each call is one POST of the call JSON ({tool, call_id, trace_id, arguments, step?,
 * timeout_ms}) with X-Trace-Id, X-Call-Id and traceparent (tracestate) headers; the answer must be JSON (a normalized
 * result or the output itself). The transfer runs on a curl multi handle polled together with
 * the call's cancel descriptor, so a cancel stops it at once; the call's deadline is the
 * transfer's timeout. Redirects are not followed, only http and https are allowed, and a
 * response beyond the size limit is cut off. "${NAME}" in a header value is replaced by the
 * environment variable NAME when the manifest is loaded, so secrets stay out of manifests; the
 * runner's "env_allow" must name it (rein's own REIN_* variables never).
 */
#include "skills_int.h"

#include <curl/curl.h>
#include <rein/trace.h>
#include <rein/version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_RESPONSE ((size_t)4 << 20)
#define CONNECT_TIMEOUT_MS   10000

struct http_runner {
    char *url;
    char **headers; /* "Name: value" */
    size_t nheaders;
    size_t max_response;
};

static void http_close(void *state)
{
    struct http_runner *h = state;

    if (!h)
        return;
    for (size_t i = 0; h->headers && i < h->nheaders; i++)
        rein_free(h->headers[i]);
    rein_free(h->headers);
    rein_free(h->url);
    rein_free(h);
}

static rein_err http_open(const json_t *runner, const char *base_dir, void **state, rein_error *err)
{
    json_t *headers = json_object_get(runner, "headers");
    json_t *max = json_object_get(runner, "max_response_bytes");
    struct http_runner *h = rein_calloc(1, sizeof(*h));
    const char *key;
    json_t *v;

    (void)base_dir;
    *state = NULL;
    if (!h)
        goto out_nomem;
    if (rein__skills_env_allow_check(json_object_get(runner, "env_allow"), err) != REIN_OK) {
        http_close(h);
        return REIN_ESCHEMA;
    }
    h->url = rein_strdup(json_string_value(json_object_get(runner, "url")));
    h->headers = rein_calloc(json_object_size(headers) + 1, sizeof(*h->headers));
    if (!h->url || !h->headers)
        goto out_nomem;
    json_object_foreach(headers, key, v)
    {
        if (!key[0] || strpbrk(key, ": \r\n") || strpbrk(json_string_value(v), "\r\n")) {
            http_close(h);
            return rein_error_set(err, REIN_ESCHEMA,
                                  "/headers/%s: header names and values are single tokens "
                                  "without ':' or line breaks",
                                  key);
        }
        char *prefix = rein_asprintf("%s: ", key);
        rein_err rc = prefix ? rein__skills_expand_env_allowed(prefix, json_string_value(v),
                                                               json_object_get(runner, "env_allow"),
                                                               &h->headers[h->nheaders], err)
                             : REIN_ENOMEM;
        rein_free(prefix);
        if (rc == REIN_EDENIED) {
            rein_error_prefix(err, "/headers/%s: ", key);
            http_close(h);
            return REIN_ESCHEMA;
        }
        if (rc)
            goto out_nomem;
        h->nheaders++;
    }
    h->max_response = max ? (size_t)json_integer_value(max) : DEFAULT_MAX_RESPONSE;
    *state = h;
    return REIN_OK;

out_nomem:
    http_close(h);
    return rein_error_set(err, REIN_ENOMEM, "out of memory preparing an HTTP runner");
}

struct transfer {
    struct rein_buf body;
    bool too_big;
};

static size_t on_data(char *data, size_t size, size_t n, void *userdata)
{
    struct transfer *t = userdata;

    if (rein_buf_add(&t->body, data, size * n)) {
        t->too_big = true;
        return 0; /* aborts the transfer */
    }
    return size * n;
}

/* The request headers: fixed ones, the call's ids, then the manifest's. */
static struct curl_slist *request_headers(const struct http_runner *h,
                                          const struct rein_invocation *inv)
{
    struct curl_slist *list = NULL, *next;
    char line[REIN_ID_MAX + 256];

    const char *fixed[] = {"Content-Type: application/json", "Accept: application/json", "Expect:"};
    for (size_t i = 0; i < REIN_ARRAY_SIZE(fixed); i++) {
        next = curl_slist_append(list, fixed[i]);
        if (!next)
            goto fail;
        list = next;
    }
    snprintf(line, sizeof(line), "X-Trace-Id: %s", inv->trace_id);
    if (!(next = curl_slist_append(list, line)))
        goto fail;
    list = next;
    snprintf(line, sizeof(line), "X-Call-Id: %s", inv->call_id);
    if (!(next = curl_slist_append(list, line)))
        goto fail;
    list = next;
    /* W3C Trace Context: the skill's own spans join the call's trace. */
    const struct rein_trace_context *tc = rein_trace_current();
    if (tc) {
        char tp[REIN_TRACEPARENT_LEN + 1];
        rein_trace_context_format(tc, tp);
        snprintf(line, sizeof(line), "traceparent: %s", tp);
        if (!(next = curl_slist_append(list, line)))
            goto fail;
        list = next;
        if (tc->state[0]) {
            char *st = rein_asprintf("tracestate: %s", tc->state);
            next = st ? curl_slist_append(list, st) : NULL;
            rein_free(st);
            if (!next)
                goto fail;
            list = next;
        }
    }
    for (size_t i = 0; i < h->nheaders; i++) {
        if (!(next = curl_slist_append(list, h->headers[i])))
            goto fail;
        list = next;
    }
    return list;
fail:
    curl_slist_free_all(list);
    return NULL;
}

static bool is_json_type(const char *ct)
{
    return !ct || strstr(ct, "json") != NULL;
}

/* Reads a finished transfer into the reply. */
static rein_err read_response(const struct http_runner *h, CURL *easy, struct transfer *t,
                              struct rein_tool_reply *reply, rein_error *err)
{
    long status = 0;
    char *ct = NULL;
    char head[240];
    rein_error perr;
    json_t *doc;
    rein_err rc;

    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(easy, CURLINFO_CONTENT_TYPE, &ct);
    rein__skills_snippet(t->body.ptr, t->body.len, head, sizeof(head));
    rein_error_clear(&perr);
    doc = is_json_type(ct) && t->body.len ? rein_json_parse(t->body.ptr, t->body.len, 0, &perr)
                                          : NULL;
    if (status < 200 || status > 299) {
        /* A skill host may explain a failure with a normalized error; use it when it does. */
        if (doc && json_is_false(json_object_get(doc, "ok"))) {
            rc = rein__skills_read_reply(doc, reply, err);
            json_decref(doc);
            return rc;
        }
        json_decref(doc);
        return rein_error_set(err, REIN_EHTTP, "%s answered HTTP %ld%s%s", h->url, status,
                              t->body.len ? ": " : "", head);
    }
    if (!is_json_type(ct))
        return rein_error_set(err, REIN_EHTTP, "%s answered %s (HTTP %ld), not JSON: %s", h->url,
                              ct, status, head);
    if (!doc)
        return rein_error_set(err, REIN_EHTTP, "%s answered HTTP %ld with %s", h->url, status,
                              t->body.len ? "a body that is not JSON" : "an empty body");
    rc = rein__skills_read_reply(doc, reply, err);
    json_decref(doc);
    return rc;
}

static rein_err transfer_failed(const struct http_runner *h, const struct rein_invocation *inv,
                                CURLcode code, bool cancelled, const struct transfer *t,
                                const char *detail, rein_error *err)
{
    if (cancelled)
        return rein_error_set(err, REIN_ECANCELED, "cancelled (%s) while waiting for %s",
                              rein_cancel_reason(inv->cancel), h->url);
    if (t->too_big)
        return rein_error_set(err, REIN_ETOOBIG, "%s answered more than %zu bytes", h->url,
                              h->max_response);
    if (code == CURLE_OPERATION_TIMEDOUT)
        return rein_error_set(err, REIN_ETIMEDOUT, "timed out after %lld ms waiting for %s",
                              (long long)inv->timeout_ms, h->url);
    return rein_error_set(err, REIN_EHTTP, "%s: %s", h->url,
                          detail[0] ? detail : curl_easy_strerror(code));
}

static rein_err http_invoke(void *state, const struct rein_invocation *inv,
                            struct rein_tool_reply *reply, rein_error *err)
{
    const struct http_runner *h = state;
    struct transfer t = {.too_big = false};
    struct curl_slist *headers = NULL;
    char detail[CURL_ERROR_SIZE] = "";
    struct rein_buf body;
    int64_t left = rein_invocation_remaining_ms(inv);
    bool cancelled;
    CURLcode code;
    CURL *easy;
    rein_err rc;

    rc = rein__curl_global_init(err);
    if (rc)
        return rc;
    if (left == 0)
        return rein_error_set(err, REIN_ETIMEDOUT, "timed out before %s was called", h->url);
    rein_buf_init(&body, 0);
    rein_buf_init(&t.body, h->max_response + 1);
    easy = curl_easy_init();
    headers = request_headers(h, inv);
    if (!easy || !headers || rein_invocation_write(inv, &body)) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory calling %s", h->url);
        goto out;
    }
    curl_easy_setopt(easy, CURLOPT_URL, h->url);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.ptr);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, detail);
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "rein/" REIN_VERSION_STRING);
    if (left > 0) {
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)left);
        curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                         (long)(left < CONNECT_TIMEOUT_MS ? left : CONNECT_TIMEOUT_MS));
    }
    code = rein__curl_perform(easy, inv->cancel, &cancelled);
    if (code != CURLE_OK || cancelled)
        rc = transfer_failed(h, inv, code, cancelled, &t, detail, err);
    else
        rc = read_response(h, easy, &t, reply, err);
out:
    curl_slist_free_all(headers);
    curl_easy_cleanup(easy);
    rein_buf_release(&body);
    rein_buf_release(&t.body);
    return rc;
}

static const struct rein_runner_kind http_kind = {
    .name = "http",
    .schema = "{\"type\":\"object\",\"required\":[\"kind\",\"url\"],\"properties\":{"
              "\"kind\":{\"const\":\"http\"},"
              "\"url\":{\"type\":\"string\",\"pattern\":\"^https?://[^\\\\s]+$\"},"
              "\"headers\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
              "\"env_allow\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
              "\"pattern\":\"^[A-Za-z_][A-Za-z0-9_]*$\"}},"
              "\"max_response_bytes\":{\"type\":\"integer\",\"minimum\":1,"
              "\"maximum\":1073741824}},"
              "\"additionalProperties\":false}",
    .open = http_open,
    .invoke = http_invoke,
    .text_args = true,
    .close = http_close,
};

const struct rein_runner_kind *rein__skills_http_kind(void)
{
    return &http_kind;
}
