/*
 * tests/support/http_client.h: libcurl requests and a Server-Sent Events splitter for tests.
 */
#include "http_client.h"
#include "core/internal.h"
#include "test.h"

#include <curl/curl.h>
#include <string.h>
#include <strings.h>
#include <time.h>

size_t th_on_body(char *data, size_t size, size_t n, void *ud)
{
    struct th_resp *r = ud;
    size_t len = size * n;
    char *grown = realloc(r->body, r->len + len + 1);

    if (!grown)
        return 0;
    r->body = grown;
    memcpy(r->body + r->len, data, len);
    r->len += len;
    r->body[r->len] = '\0';
    return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
    struct th_resp *r = ud;
    size_t len = size * n;

    if (r->hlen + len < sizeof(r->headers) - 1) {
        memcpy(r->headers + r->hlen, data, len);
        r->hlen += len;
        r->headers[r->hlen] = '\0';
    }
    return len;
}

typedef size_t (*th_writer)(char *data, size_t size, size_t n, void *ud);

/*
 * One request; with json_default, a body without a Content-Type header is sent as JSON. The
 * body's bytes go to write(wd) (th_on_body on out when write is NULL).
 */
static void request_to(const char *method, const char *url, const char *body, size_t len,
                       const char *const *headers, bool json_default, struct th_resp *out,
                       th_writer write, void *wd)
{
    CURL *c = curl_easy_init();
    struct curl_slist *list = NULL;
    bool has_ct = false;

    memset(out, 0, sizeof(*out));
    assert_non_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write ? write : th_on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, write ? wd : (void *)out);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    for (size_t i = 0; headers && headers[i]; i++) {
        list = curl_slist_append(list, headers[i]);
        has_ct = has_ct || strncasecmp(headers[i], "Content-Type:", 13) == 0;
    }
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        if (!has_ct && json_default)
            list = curl_slist_append(list, "Content-Type: application/json");
    }
    list = curl_slist_append(list, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
    out->curl_rc = (int)curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    curl_slist_free_all(list);
    curl_easy_cleanup(c);
    if (!out->body)
        out->body = calloc(1, 1);
    out->json = json_loads(out->body, 0, NULL);
}

static void request(const char *method, const char *url, const char *body, size_t len,
                    const char *const *headers, bool json_default, struct th_resp *out)
{
    request_to(method, url, body, len, headers, json_default, out, NULL, NULL);
}

void th_http(const char *method, const char *url, const char *body, const char *const *headers,
             struct th_resp *out)
{
    request(method, url, body, body ? strlen(body) : 0, headers, true, out);
}

void th_http_raw(const char *method, const char *url, const char *body, size_t len,
                 const char *const *headers, struct th_resp *out)
{
    request(method, url, body, len, headers, false, out);
}

void th_post(const char *url, const char *body, struct th_resp *out)
{
    th_http("POST", url, body, NULL, out);
}

void th_get(const char *url, struct th_resp *out)
{
    th_http("GET", url, NULL, NULL, out);
}

void th_post_sse(const char *url, const char *body, struct th_resp *out)
{
    static const char *const accept[] = {"Accept: text/event-stream", NULL};

    th_http("POST", url, body, accept, out);
}

void th_resp_free(struct th_resp *r)
{
    free(r->body);
    json_decref(r->json);
    memset(r, 0, sizeof(*r));
}

const char *th_header(const struct th_resp *r, const char *name)
{
    static char value[512];
    size_t n = strlen(name);

    for (const char *line = r->headers; line && *line;) {
        const char *end = strstr(line, "\r\n");
        if (!end)
            end = line + strlen(line);
        if ((size_t)(end - line) > n + 1 && strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1;
            while (*v == ' ')
                v++;
            snprintf(value, sizeof(value), "%.*s", (int)(end - v), v);
            return value;
        }
        line = *end ? end + 2 : end;
    }
    return NULL;
}

void th_assert_error(const struct th_resp *r, long status, const char *code)
{
    const json_t *e = json_object_get(r->json, "error");
    const char *got = json_string_value(json_object_get(e, "code"));

    if (r->status != status || !got || strcmp(got, code) != 0)
        fail_msg("expected %ld %s, got %ld: %s", status, code, r->status, r->body);
    assert_non_null(json_string_value(json_object_get(e, "message")));
}

json_t *th_sse_events(const char *body, int *comments)
{
    json_t *events = json_array();
    char event[64] = "", id[32] = "";
    const char *p = body;

    if (comments)
        *comments = 0;
    while (*p) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0) {
            event[0] = '\0';
            id[0] = '\0';
        } else if (p[0] == ':') {
            if (comments)
                (*comments)++;
        } else if (len > 7 && strncmp(p, "event: ", 7) == 0) {
            snprintf(event, sizeof(event), "%.*s", (int)(len - 7), p + 7);
        } else if (len > 4 && strncmp(p, "id: ", 4) == 0) {
            snprintf(id, sizeof(id), "%.*s", (int)(len - 4), p + 4);
        } else if (len > 6 && strncmp(p, "data: ", 6) == 0) {
            json_t *data = json_loadb(p + 6, len - 6, 0, NULL);
            json_t *ev;
            if (!data)
                fail_msg("SSE data is not JSON: %.*s", (int)len, p);
            ev = json_pack("{s:s, s:o}", "event", event, "data", data);
            if (id[0])
                json_object_set_new(ev, "id", json_string(id));
            json_array_append_new(events, ev);
        }
        p += len + (end ? 1 : 0);
    }
    return events;
}

/* The body's bytes of a background request, appended under its lock for th_bg_wait_body. */
static size_t bg_on_body(char *data, size_t size, size_t n, void *ud)
{
    struct th_bg *b = ud;
    size_t len;

    pthread_mutex_lock(&b->mu);
    len = th_on_body(data, size, n, &b->r);
    b->got = b->r.body != NULL;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    return len;
}

static void *bg_main(void *arg)
{
    static const char *const accept[] = {"Accept: text/event-stream", NULL};
    struct th_bg *b = arg;

    request_to(b->get ? "GET" : "POST", b->url, b->get ? NULL : b->body,
               b->get ? 0 : strlen(b->body), b->sse ? accept : NULL, true, &b->r, bg_on_body, b);
    pthread_mutex_lock(&b->mu);
    b->done = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

static struct th_bg *bg_start(struct th_bg *b)
{
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    assert_int_equal(pthread_create(&b->th, NULL, bg_main, b), 0);
    return b;
}

bool th_bg_wait_body(struct th_bg *b, const char *marker, int timeout_ms)
{
    struct timespec until = rein__deadline_ts(CLOCK_REALTIME, timeout_ms);
    bool found = false;

    pthread_mutex_lock(&b->mu);
    for (;;) {
        /* r is read only once a write has been made under the lock: the request's own
         * set-up writes to r before its first byte and are ordered before that write. */
        found = b->got && strstr(b->r.body, marker);
        if (found || b->done || pthread_cond_timedwait(&b->cv, &b->mu, &until) != 0)
            break;
    }
    if (!found && b->got)
        found = strstr(b->r.body, marker) != NULL;
    pthread_mutex_unlock(&b->mu);
    return found;
}

struct th_bg *th_bg_get(const char *url)
{
    struct th_bg *b = calloc(1, sizeof(*b));

    assert_non_null(b);
    assert_true(strlen(url) < sizeof(b->url));
    snprintf(b->url, sizeof(b->url), "%s", url);
    b->get = true;
    return bg_start(b);
}

struct th_bg *th_bg_post(const char *url, const char *body, bool sse)
{
    struct th_bg *b = calloc(1, sizeof(*b));

    assert_non_null(b);
    assert_true(strlen(url) < sizeof(b->url) && strlen(body) < sizeof(b->body));
    snprintf(b->url, sizeof(b->url), "%s", url);
    snprintf(b->body, sizeof(b->body), "%s", body);
    b->sse = sse;
    return bg_start(b);
}

/* Appends to the th_resp and stops (a hang-up) once the marker has arrived. */
struct until {
    struct th_resp *r;
    const char *marker;
};

static size_t until_marker(char *data, size_t size, size_t n, void *ud)
{
    struct until *u = ud;
    size_t len = th_on_body(data, size, n, u->r);

    return len && strstr(u->r->body, u->marker) ? 0 : len;
}

void th_post_sse_until(const char *url, const char *body, const char *marker, struct th_resp *out)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    struct until u = {out, marker};

    memset(out, 0, sizeof(*out));
    assert_non_null(c);
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: text/event-stream");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, until_marker);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &u);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    out->curl_rc = (int)curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (!out->body)
        out->body = calloc(1, 1);
    if (out->curl_rc != CURLE_WRITE_ERROR)
        fail_msg("the stream ended before %s arrived: %s", marker, out->body);
}

void th_bg_join(struct th_bg *b)
{
    pthread_join(b->th, NULL);
}

void th_bg_free(struct th_bg *b)
{
    th_resp_free(&b->r);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b);
}

const char *th_jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

const json_t *th_ledger_entry(const json_t *conv, const char *call_id)
{
    const json_t *e;
    size_t i;

    json_array_foreach(json_object_get(conv, "ledger"), i, e)
    {
        const char *id = th_jstr(e, "call_id");
        if (id && strcmp(id, call_id) == 0)
            return e;
    }
    fail_msg("no ledger entry %s", call_id);
    return NULL;
}
