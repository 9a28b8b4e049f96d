/*
 * Integration tests of the scripted model server (tests/support/model_server.h): libcurl
 * over real sockets against each wire format, streamed and not; faults (chunking, cuts,
 * malformed lines, in-stream errors, hangs, delays); status codes with headers; the request
 * validation of the real services; scenario files and their errors; match predicates; the
 * request log, the control endpoints and the rein-model-server program.
 */
/* rein-test-timeout: 60 */
#include "test.h"
#include "model_server.h"

#include <curl/curl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

/* ---- an HTTP client for the tests ---------------------------------------------------- */

struct http {
    long status;
    CURLcode rc;
    struct rein_buf body;
    json_t *headers; /* lower-case name -> value */
    json_t *json;    /* parsed body when it is JSON */
    size_t writes;   /* write callbacks (one per received piece) */
    size_t max_write;
    int64_t t_start, t_headers, t_first_byte;
};

static size_t on_write(char *data, size_t size, size_t n, void *userdata)
{
    struct http *h = userdata;

    if (!h->writes)
        h->t_first_byte = rein_now_ms();
    h->writes++;
    if (size * n > h->max_write)
        h->max_write = size * n;
    return rein_buf_add(&h->body, data, size * n) == REIN_OK ? size * n : 0;
}

static size_t on_header(char *data, size_t size, size_t n, void *userdata)
{
    struct http *h = userdata;
    size_t len = size * n;
    char *colon = memchr(data, ':', len);

    if (len <= 2) /* the blank line after the headers */
        h->t_headers = rein_now_ms();
    if (colon) {
        char name[128], value[512];
        size_t nl = (size_t)(colon - data), vl;
        const char *v = colon + 1;
        while (v < data + len && *v == ' ')
            v++;
        vl = (size_t)(data + len - v);
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
            vl--;
        snprintf(name, sizeof(name), "%.*s", (int)nl, data);
        for (char *p = name; *p; p++)
            *p = (char)((*p >= 'A' && *p <= 'Z') ? *p + 32 : *p);
        snprintf(value, sizeof(value), "%.*s", (int)vl, v);
        json_object_set_new(h->headers, name, json_string(value));
    }
    return len;
}

/* One request. headers: NULL-terminated "Name: value" list; body NULL means GET. */
static void http_do(const char *url, const char *body, const char *const *headers, long timeout_ms,
                    struct http *h)
{
    CURL *c = curl_easy_init();
    struct curl_slist *hl = NULL;

    memset(h, 0, sizeof(*h));
    rein_buf_init(&h->body, 0);
    h->headers = json_object();
    assert_non_null(c);
    for (size_t i = 0; headers && headers[i]; i++)
        hl = curl_slist_append(hl, headers[i]);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (timeout_ms > 0)
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    h->t_start = rein_now_ms();
    h->rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h->status);
    h->json = rein_json_parse(h->body.ptr, h->body.len, 0, NULL);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
}

static void http_release(struct http *h)
{
    rein_buf_release(&h->body);
    json_decref(h->headers);
    json_decref(h->json);
}

static const char *hdr(const struct http *h, const char *name)
{
    return json_string_value(json_object_get(h->headers, name));
}

static const char *const openai_headers[] = {"Content-Type: application/json",
                                             "Authorization: Bearer sk-test", NULL};
static const char *const anthropic_headers[] = {
    "Content-Type: application/json", "x-api-key: sk-ant", "anthropic-version: 2023-06-01", NULL};
static const char *const json_headers[] = {"Content-Type: application/json", NULL};

static void post(ms_server *s, const char *path, const char *body, const char *const *headers,
                 struct http *h)
{
    char url[256];

    snprintf(url, sizeof(url), "%s%s", ms_url(s), path);
    http_do(url, body, headers, 10000, h);
}

#define OA_PATH "/v1/chat/completions"
#define AN_PATH "/v1/messages"
#define OL_PATH "/api/chat"

static const char *oa_body(bool stream)
{
    return stream ? "{\"model\":\"gpt-4o\",\"stream\":true,\"stream_options\":{\"include_usage\":"
                    "true},\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
                  : "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
}

static const char *an_body(bool stream)
{
    return stream ? "{\"model\":\"claude-x\",\"max_tokens\":100,\"stream\":true,\"messages\":"
                    "[{\"role\":\"user\",\"content\":\"hi\"}]}"
                  : "{\"model\":\"claude-x\",\"max_tokens\":100,\"messages\":[{\"role\":\"user\","
                    "\"content\":\"hi\"}]}";
}

static ms_server *start(void)
{
    static bool curl_ready;
    rein_error err;
    ms_server *s;

    /* Before any thread exists: curl's global init is not thread-safe. */
    if (!curl_ready)
        curl_ready = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    rein_error_clear(&err);
    s = ms_start(0, &err);
    assert_non_null(s);
    assert_true(ms_port(s) > 0);
    return s;
}

static void script(ms_server *s, const char *text)
{
    rein_error err;

    rein_error_clear(&err);
    assert_rein_ok(ms_script(s, text, true, &err), &err);
}

/* ---- SSE helpers --------------------------------------------------------------------- */

/* Splits an SSE body into [{event, data}] with data parsed (or the raw text on failure). */
static json_t *sse_parse(const char *body)
{
    json_t *out = json_array();
    const char *p = body;

    while (*p) {
        const char *end = strstr(p, "\n\n");
        const char *stop = end ? end : p + strlen(p);
        json_t *ev = json_object();
        const char *line = p;
        while (line < stop) {
            const char *nl = memchr(line, '\n', (size_t)(stop - line));
            const char *le = nl ? nl : stop;
            if (strncmp(line, "event: ", 7) == 0)
                json_object_set_new(ev, "event", json_stringn(line + 7, (size_t)(le - line - 7)));
            if (strncmp(line, "data: ", 6) == 0) {
                json_t *d = rein_json_parse(line + 6, (size_t)(le - line - 6), 0, NULL);
                json_object_set_new(ev, "data",
                                    d ? d : json_stringn(line + 6, (size_t)(le - line - 6)));
            }
            line = le + 1;
        }
        json_array_append_new(out, ev);
        p = end ? end + 2 : stop;
    }
    return out;
}

static const char *ev_name(json_t *events, size_t i)
{
    return json_string_value(json_object_get(json_array_get(events, i), "event"));
}

static json_t *ev_data(json_t *events, size_t i)
{
    return json_object_get(json_array_get(events, i), "data");
}

/* Concatenates the OpenAI delta field key over all chunks. */
static char *oa_join(json_t *events, const char *key)
{
    struct rein_buf b;
    size_t i;
    json_t *ev;

    rein_buf_init(&b, 0);
    json_array_foreach(events, i, ev)
    {
        json_t *delta = json_object_get(
            json_array_get(json_object_get(json_object_get(ev, "data"), "choices"), 0), "delta");
        const char *s = json_string_value(json_object_get(delta, key));
        if (s)
            assert_int_equal(rein_buf_adds(&b, s), REIN_OK);
    }
    return rein_buf_detach(&b, NULL);
}

/* Concatenates the arguments of OpenAI tool call index idx over all chunks. */
static char *oa_join_args(json_t *events, int idx, const char **id, const char **name)
{
    struct rein_buf b;
    size_t i, j;
    json_t *ev, *call;

    rein_buf_init(&b, 0);
    json_array_foreach(events, i, ev)
    {
        json_t *delta = json_object_get(
            json_array_get(json_object_get(json_object_get(ev, "data"), "choices"), 0), "delta");
        json_array_foreach(json_object_get(delta, "tool_calls"), j, call)
        {
            json_t *fn = json_object_get(call, "function");
            if (json_integer_value(json_object_get(call, "index")) != idx)
                continue;
            if (json_object_get(call, "id")) {
                *id = json_string_value(json_object_get(call, "id"));
                *name = json_string_value(json_object_get(fn, "name"));
                assert_string_equal(json_string_value(json_object_get(call, "type")), "function");
            }
            assert_int_equal(rein_buf_adds(&b, json_string_value(json_object_get(fn, "arguments"))),
                             REIN_OK);
        }
    }
    return rein_buf_detach(&b, NULL);
}

/* ---- OpenAI -------------------------------------------------------------------------- */

static void test_openai_text_json(void **state)
{
    ms_server *s = start();
    struct http h;
    json_t *msg;

    (void)state;
    script(s, "{\"text\":\"Hello there\",\"usage\":{\"input_tokens\":11,\"output_tokens\":3}}");
    post(s, OA_PATH, oa_body(false), openai_headers, &h);
    assert_int_equal(h.rc, CURLE_OK);
    assert_int_equal(h.status, 200);
    assert_non_null(strstr(hdr(&h, "content-type"), "application/json"));
    assert_non_null(hdr(&h, "x-request-id"));
    assert_non_null(h.json);
    assert_string_equal(json_string_value(json_object_get(h.json, "object")), "chat.completion");
    assert_string_equal(json_string_value(json_object_get(h.json, "model")), "gpt-4o");
    msg = json_object_get(json_array_get(json_object_get(h.json, "choices"), 0), "message");
    assert_string_equal(json_string_value(json_object_get(msg, "role")), "assistant");
    assert_string_equal(json_string_value(json_object_get(msg, "content")), "Hello there");
    assert_true(json_is_null(json_object_get(msg, "refusal")));
    assert_null(json_object_get(msg, "tool_calls"));
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(h.json, "choices"), 0),
                                          "finish_reason")),
        "stop");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(h.json, "usage"), "prompt_tokens")), 11);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(h.json, "usage"), "total_tokens")), 14);
    http_release(&h);
    ms_stop(s);
}

static void test_openai_text_stream(void **state)
{
    ms_server *s = start();
    struct http h;
    json_t *ev, *last;
    char *text;
    size_t n;

    (void)state;
    script(s, "{\"text\":[\"Hel\",\"lo \",\"wörld\"],\"usage\":{\"input_tokens\":5,"
              "\"output_tokens\":2}}");
    post(s, OA_PATH, oa_body(true), openai_headers, &h);
    assert_int_equal(h.rc, CURLE_OK);
    assert_int_equal(h.status, 200);
    assert_non_null(strstr(hdr(&h, "content-type"), "text/event-stream"));
    ev = sse_parse(h.body.ptr);
    n = json_array_size(ev);
    /* role, 3 deltas, finish, usage, [DONE] */
    assert_int_equal(n, 7);
    assert_string_equal(json_string_value(ev_data(ev, n - 1)), "[DONE]");
    assert_string_equal(json_string_value(json_object_get(ev_data(ev, 0), "object")),
                        "chat.completion.chunk");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(ev_data(ev, 0), "choices"), 0), "delta"),
            "role")),
        "assistant");
    text = oa_join(ev, "content");
    assert_string_equal(text, "Hello wörld");
    rein_free(text);
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(ev_data(ev, n - 3), "choices"), 0), "finish_reason")),
        "stop");
    last = ev_data(ev, n - 2);
    assert_int_equal(json_array_size(json_object_get(last, "choices")), 0);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(last, "usage"), "completion_tokens")),
        2);
    /* include_usage: every other chunk carries "usage": null */
    assert_true(json_is_null(json_object_get(ev_data(ev, 1), "usage")));
    json_decref(ev);
    http_release(&h);
    ms_stop(s);
}

static void test_openai_tool_calls_stream(void **state)
{
    ms_server *s = start();
    struct http h;
    json_t *ev;
    const char *id = NULL, *name = NULL;
    char *args;
    size_t n;

    (void)state;
    script(s, "{\"tool_calls\":[{\"id\":\"call_a\",\"name\":\"read\",\"arguments\":[\"{\\\"pa\","
              "\"th\\\":\\\"a.txt\\\"}\"]},{\"id\":\"call_b\",\"name\":\"list\",\"arguments\":"
              "\"{\\\"dir\\\": 12345678901234567890}\"}],\"delta_bytes\":5}");
    post(s, OA_PATH,
         "{\"model\":\"gpt-4o\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":"
         "\"x\"}]}",
         openai_headers, &h);
    assert_int_equal(h.rc, CURLE_OK);
    ev = sse_parse(h.body.ptr);
    n = json_array_size(ev);
    args = oa_join_args(ev, 0, &id, &name);
    assert_string_equal(args, "{\"path\":\"a.txt\"}");
    assert_string_equal(id, "call_a");
    assert_string_equal(name, "read");
    rein_free(args);
    args = oa_join_args(ev, 1, &id, &name);
    /* the raw string reaches the client byte for byte, big integer included */
    assert_string_equal(args, "{\"dir\": 12345678901234567890}");
    assert_string_equal(id, "call_b");
    rein_free(args);
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(ev_data(ev, n - 2), "choices"), 0), "finish_reason")),
        "tool_calls");
    /* no include_usage: no usage chunk and no "usage" members */
    assert_null(json_object_get(ev_data(ev, n - 2), "usage"));
    assert_string_equal(json_string_value(ev_data(ev, n - 1)), "[DONE]");
    json_decref(ev);
    http_release(&h);
    ms_stop(s);
}

static void test_openai_tool_calls_json(void **state)
{
    ms_server *s = start();
    struct http h;
    json_t *msg, *call;

    (void)state;
    script(s, "{\"tool_calls\":[{\"id\":\"call_1\",\"name\":\"read\",\"arguments\":"
              "\"{\\\"filePath\\\": \\\"x\"}]}"); /* deliberately truncated JSON */
    post(s, OA_PATH, oa_body(false), openai_headers, &h);
    msg = json_object_get(json_array_get(json_object_get(h.json, "choices"), 0), "message");
    assert_true(json_is_null(json_object_get(msg, "content")));
    call = json_array_get(json_object_get(msg, "tool_calls"), 0);
    assert_string_equal(json_string_value(json_object_get(call, "id")), "call_1");
    assert_string_equal(json_string_value(json_object_get(call, "type")), "function");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(call, "function"), "arguments")),
        "{\"filePath\": \"x");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(h.json, "choices"), 0),
                                          "finish_reason")),
        "tool_calls");
    http_release(&h);
    ms_stop(s);
}

static void test_openai_refusal_reasoning_and_finish(void **state)
{
    ms_server *s = start();
    struct http h;
    json_t *ev, *delta0;
    char *text;
    size_t n;

    (void)state;
    script(s, "[{\"refusal\":\"I can't help with that.\"},"
              "{\"reasoning\":\"think hard\",\"text\":\"42\",\"finish_reason\":\"length\"},"
              "{\"text\":\"\",\"finish_reason\":\"content_filter\",\"stream\":false}]");
    post(s, OA_PATH, oa_body(true), openai_headers, &h);
    ev = sse_parse(h.body.ptr);
    delta0 =
        json_object_get(json_array_get(json_object_get(ev_data(ev, 0), "choices"), 0), "delta");
    assert_true(json_is_null(json_object_get(delta0, "content")));
    assert_string_equal(json_string_value(json_object_get(delta0, "refusal")), "");
    text = oa_join(ev, "refusal");
    assert_string_equal(text, "I can't help with that.");
    rein_free(text);
    json_decref(ev);
    http_release(&h);

    post(s, OA_PATH, oa_body(true), openai_headers, &h);
    ev = sse_parse(h.body.ptr);
    n = json_array_size(ev);
    text = oa_join(ev, "reasoning_content");
    assert_string_equal(text, "think hard");
    rein_free(text);
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(ev_data(ev, n - 3), "choices"), 0), "finish_reason")),
        "length");
    json_decref(ev);
    http_release(&h);

    /* "stream": false in the reply overrides the request's stream: true */
    post(s, OA_PATH, oa_body(true), openai_headers, &h);
    assert_non_null(h.json);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(h.json, "choices"), 0),
                                          "finish_reason")),
        "content_filter");
    http_release(&h);
    ms_stop(s);
}

/* ---- Anthropic ----------------------------------------------------------------------- */

static void test_anthropic_stream_sequence(void **state)
{
    static const char *const want[] = {
        "message_start",       "content_block_start", "ping",
        "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_delta",
        "content_block_stop",  "content_block_start", "content_block_delta",
        "content_block_delta", "content_block_stop",  "message_delta",
        "message_stop"};
    ms_server *s = start();
    struct http h;
    json_t *ev, *d;
    size_t n, i;

    (void)state;
    script(s, "{\"reasoning\":\"hmm\",\"signature\":\"sig123\",\"text\":[\"Let me \",\"check.\"],"
              "\"tool_calls\":[{\"id\":\"toolu_1\",\"name\":\"get_weather\",\"arguments\":"
              "[\"{\\\"city\\\":\",\"\\\"Paris\\\"}\"]}],\"usage\":{\"input_tokens\":20,"
              "\"output_tokens\":9}}");
    post(s, AN_PATH, an_body(true), anthropic_headers, &h);
    assert_int_equal(h.rc, CURLE_OK);
    assert_int_equal(h.status, 200);
    assert_non_null(hdr(&h, "request-id"));
    assert_non_null(strstr(hdr(&h, "content-type"), "text/event-stream"));
    ev = sse_parse(h.body.ptr);
    n = json_array_size(ev);
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (i = 0; i < n; i++) {
        assert_string_equal(ev_name(ev, i), want[i]);
        assert_string_equal(json_string_value(json_object_get(ev_data(ev, i), "type")), want[i]);
    }
    d = json_object_get(ev_data(ev, 0), "message");
    assert_string_equal(json_string_value(json_object_get(d, "role")), "assistant");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(d, "usage"), "input_tokens")), 20);
    /* thinking block: thinking_delta then signature_delta */
    d = json_object_get(ev_data(ev, 1), "content_block");
    assert_string_equal(json_string_value(json_object_get(d, "type")), "thinking");
    d = json_object_get(ev_data(ev, 3), "delta");
    assert_string_equal(json_string_value(json_object_get(d, "type")), "thinking_delta");
    assert_string_equal(json_string_value(json_object_get(d, "thinking")), "hmm");
    d = json_object_get(ev_data(ev, 4), "delta");
    assert_string_equal(json_string_value(json_object_get(d, "type")), "signature_delta");
    assert_string_equal(json_string_value(json_object_get(d, "signature")), "sig123");
    /* tool_use block at index 2 with input {} and input_json_delta pieces */
    d = ev_data(ev, 10);
    assert_int_equal(json_integer_value(json_object_get(d, "index")), 2);
    d = json_object_get(d, "content_block");
    assert_string_equal(json_string_value(json_object_get(d, "type")), "tool_use");
    assert_string_equal(json_string_value(json_object_get(d, "id")), "toolu_1");
    assert_string_equal(json_string_value(json_object_get(d, "name")), "get_weather");
    assert_int_equal(json_object_size(json_object_get(d, "input")), 0);
    d = json_object_get(ev_data(ev, 11), "delta");
    assert_string_equal(json_string_value(json_object_get(d, "type")), "input_json_delta");
    assert_string_equal(json_string_value(json_object_get(d, "partial_json")), "{\"city\":");
    d = ev_data(ev, 14);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(d, "delta"), "stop_reason")), "tool_use");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(d, "usage"), "output_tokens")), 9);
    json_decref(ev);
    http_release(&h);
    ms_stop(s);
}

static void test_anthropic_json_and_stop_reasons(void **state)
{
    ms_server *s = start();
    struct http h;
    json_t *content;

    (void)state;
    script(s, "[{\"text\":\"ok\",\"tool_calls\":[{\"id\":\"toolu_9\",\"name\":\"f\",\"arguments\":"
              "\"{\\\"n\\\": 1.50, \\\"a\\\": [1]}\"}]},"
              "{\"text\":\"cut\",\"finish_reason\":\"length\"},"
              "{\"refusal\":\"no\"}]");
    post(s, AN_PATH, an_body(false), anthropic_headers, &h);
    assert_int_equal(h.status, 200);
    assert_string_equal(json_string_value(json_object_get(h.json, "type")), "message");
    assert_string_equal(json_string_value(json_object_get(h.json, "stop_reason")), "tool_use");
    content = json_object_get(h.json, "content");
    assert_int_equal(json_array_size(content), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(content, 0), "text")),
                        "ok");
    /* the arguments are embedded as the raw text: 1.50 stays 1.50 */
    assert_non_null(strstr(h.body.ptr, "\"input\":{\"n\": 1.50, \"a\": [1]}"));
    http_release(&h);
    post(s, AN_PATH, an_body(false), anthropic_headers, &h);
    assert_string_equal(json_string_value(json_object_get(h.json, "stop_reason")), "max_tokens");
    http_release(&h);
    post(s, AN_PATH, an_body(false), anthropic_headers, &h);
    assert_string_equal(json_string_value(json_object_get(h.json, "stop_reason")), "refusal");
    http_release(&h);
    ms_stop(s);
}

/* ---- Ollama -------------------------------------------------------------------------- */

static void test_ollama_stream_and_json(void **state)
{
    ms_server *s = start();
    struct http h;
    json_t *line, *call;
    char *save = NULL, *tok, *text;
    size_t lines = 0;

    (void)state;
    script(s, "[{\"text\":[\"Hi \",\"there\"],\"tool_calls\":[{\"name\":\"get_weather\","
              "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]},{\"text\":\"plain\"}]");
    /* Ollama streams unless "stream": false */
    post(s, OL_PATH, "{\"model\":\"llama3\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
         json_headers, &h);
    assert_int_equal(h.status, 200);
    assert_string_equal(hdr(&h, "content-type"), "application/x-ndjson");
    text = rein_strdup(h.body.ptr);
    for (tok = strtok_r(text, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save)) {
        line = rein_json_parse(tok, strlen(tok), 0, NULL);
        assert_non_null(line);
        lines++;
        call = json_array_get(json_object_get(json_object_get(line, "message"), "tool_calls"), 0);
        if (call) {
            assert_null(json_object_get(call, "id"));
            assert_true(
                json_is_object(json_object_get(json_object_get(call, "function"), "arguments")));
        }
        if (json_is_true(json_object_get(line, "done")))
            assert_string_equal(json_string_value(json_object_get(line, "done_reason")), "stop");
        json_decref(line);
    }
    assert_int_equal(lines, 4); /* two text lines, the tool call line, the done line */
    rein_free(text);
    http_release(&h);
    post(s, OL_PATH,
         "{\"model\":\"llama3\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":"
         "\"x\"}]}",
         json_headers, &h);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(h.json, "message"), "content")), "plain");
    assert_true(json_is_true(json_object_get(h.json, "done")));
    http_release(&h);
    ms_stop(s);
}

/* ---- status codes, headers and errors ------------------------------------------------ */

static void test_status_with_headers_and_error_bodies(void **state)
{
    ms_server *s = start();
    struct http h;
    json_t *e;

    (void)state;
    script(s,
           "[{\"status\":429,\"headers\":{\"Retry-After\":\"2\",\"x-ratelimit-remaining-requests\":"
           "\"0\"}},{\"status\":529},{\"status\":400,\"error\":{\"message\":\"bad thing\","
           "\"param\":\"messages[0]\",\"code\":\"weird\"}},{\"status\":503,\"format\":"
           "\"ollama\"}]");
    post(s, OA_PATH, oa_body(true), openai_headers, &h);
    assert_int_equal(h.status, 429);
    assert_string_equal(hdr(&h, "retry-after"), "2");
    assert_string_equal(hdr(&h, "x-ratelimit-remaining-requests"), "0");
    assert_non_null(strstr(hdr(&h, "content-type"), "application/json"));
    e = json_object_get(h.json, "error");
    assert_string_equal(json_string_value(json_object_get(e, "type")), "requests");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "rate_limit_exceeded");
    assert_true(json_is_null(json_object_get(e, "param")));
    assert_non_null(json_string_value(json_object_get(e, "message")));
    http_release(&h);

    post(s, AN_PATH, an_body(true), anthropic_headers, &h);
    assert_int_equal(h.status, 529);
    assert_string_equal(json_string_value(json_object_get(h.json, "type")), "error");
    e = json_object_get(h.json, "error");
    assert_string_equal(json_string_value(json_object_get(e, "type")), "overloaded_error");
    assert_string_equal(json_string_value(json_object_get(e, "message")), "Overloaded");
    assert_non_null(json_string_value(json_object_get(h.json, "request_id")));
    http_release(&h);

    post(s, OA_PATH, oa_body(false), openai_headers, &h);
    assert_int_equal(h.status, 400);
    e = json_object_get(h.json, "error");
    assert_string_equal(json_string_value(json_object_get(e, "message")), "bad thing");
    assert_string_equal(json_string_value(json_object_get(e, "param")), "messages[0]");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "weird");
    assert_string_equal(json_string_value(json_object_get(e, "type")), "invalid_request_error");
    http_release(&h);

    post(s, OA_PATH, oa_body(false), openai_headers, &h);
    assert_int_equal(h.status, 503);
    assert_true(json_is_string(json_object_get(h.json, "error"))); /* Ollama's shape */
    http_release(&h);
    ms_stop(s);
}

/* ---- faults -------------------------------------------------------------------------- */

static void test_chunk_bytes_split_utf8_anywhere(void **state)
{
    ms_server *s = start();
    struct http h;
    json_t *ev;
    char *text;

    (void)state;
    script(s, "{\"text\":\"日本語のテキスト😀\",\"fault\":{\"chunk_bytes\":3}}");
    post(s, OA_PATH, oa_body(true), openai_headers, &h);
    assert_int_equal(h.rc, CURLE_OK);
    assert_true(h.writes > h.body.len / 3 - 1);
    assert_true(h.max_write <= 3);
    ev = sse_parse(h.body.ptr);
    text = oa_join(ev, "content");
    assert_string_equal(text, "日本語のテキスト😀");
    rein_free(text);
    json_decref(ev);
    http_release(&h);
    ms_stop(s);
}

static void test_cut_after_events_mid_tool_call(void **state)
{
    ms_server *s = start();
    struct http h;
    json_t *ev;

    (void)state;
    script(s, "{\"tool_calls\":[{\"id\":\"call_1\",\"name\":\"read\",\"arguments\":[\"{\\\"a\","
              "\"\\\":1}\"]}],\"fault\":{\"cut_after_events\":3}}");
    post(s, OA_PATH, oa_body(true), openai_headers, &h);
    assert_int_equal(h.status, 200);
    /* the connection closes without the terminating chunk: the client sees the cut */
    assert_int_not_equal(h.rc, CURLE_OK);
    ev = sse_parse(h.body.ptr);
    assert_int_equal(json_array_size(ev), 3);
    assert_null(strstr(h.body.ptr, "[DONE]"));
    assert_null(strstr(h.body.ptr, "\":1}"));
    json_decref(ev);
    http_release(&h);
    ms_stop(s);
}

static void test_cut_after_bytes_json(void **state)
{
    ms_server *s = start();
    struct http h;

    (void)state;
    script(s, "{\"text\":\"a long enough answer\",\"fault\":{\"cut_after_bytes\":40}}");
    post(s, OA_PATH, oa_body(false), openai_headers, &h);
    assert_int_equal(h.status, 200);
    assert_int_equal(h.rc, CURLE_PARTIAL_FILE); /* Content-Length promised more */
    assert_int_equal(h.body.len, 40);
    http_release(&h);
    ms_stop(s);
}

static void test_malformed_line_and_stream_error_event(void **state)
{
    ms_server *s = start();
    struct http h;
    json_t *ev, *e;
    size_t n;

    (void)state;
    script(s, "[{\"text\":\"abc\",\"fault\":{\"malformed_after_events\":1}},"
              "{\"text\":[\"one\",\"two\"],\"fault\":{\"error_after_events\":4}},"
              "{\"text\":\"x\",\"fault\":{\"error_after_events\":1,\"error_event\":{\"type\":"
              "\"server_error\",\"message\":\"boom\"}}}]");
    post(s, OA_PATH, oa_body(true), openai_headers, &h);
    assert_int_equal(h.rc, CURLE_OK);
    ev = sse_parse(h.body.ptr);
    assert_true(json_is_string(ev_data(ev, 1))); /* not JSON */
    assert_string_equal(json_string_value(ev_data(ev, 1)), "{\"broken");
    json_decref(ev);
    http_release(&h);

    /* Anthropic: message_start, block start, ping, 1 delta, then event: error; no message_stop */
    post(s, AN_PATH, an_body(true), anthropic_headers, &h);
    assert_int_equal(h.rc, CURLE_OK);
    ev = sse_parse(h.body.ptr);
    n = json_array_size(ev);
    assert_int_equal(n, 5);
    assert_string_equal(ev_name(ev, 4), "error");
    e = json_object_get(ev_data(ev, 4), "error");
    assert_string_equal(json_string_value(json_object_get(e, "type")), "overloaded_error");
    assert_string_equal(json_string_value(json_object_get(e, "message")), "Overloaded");
    assert_null(strstr(h.body.ptr, "message_stop"));
    json_decref(ev);
    http_release(&h);

    post(s, OA_PATH, oa_body(true), openai_headers, &h);
    ev = sse_parse(h.body.ptr);
    assert_int_equal(json_array_size(ev), 2);
    e = json_object_get(ev_data(ev, 1), "error");
    assert_string_equal(json_string_value(json_object_get(e, "message")), "boom");
    assert_string_equal(json_string_value(json_object_get(e, "type")), "server_error");
    json_decref(ev);
    http_release(&h);
    ms_stop(s);
}

static void test_delays_before_headers_and_first_byte(void **state)
{
    ms_server *s = start();
    struct http h;

    (void)state;
    script(s, "[{\"text\":\"x\",\"delay_headers_ms\":200},{\"text\":[\"a\",\"b\",\"c\"],"
              "\"delay_first_byte_ms\":200,\"delay_chunk_ms\":30}]");
    post(s, OA_PATH, oa_body(false), openai_headers, &h);
    assert_int_equal(h.status, 200);
    assert_true(h.t_headers - h.t_start >= 190);
    http_release(&h);
    post(s, OA_PATH, oa_body(true), openai_headers, &h);
    assert_int_equal(h.rc, CURLE_OK);
    /* The body started no earlier than the delay. (Whether MHD flushes the headers before the
     * first byte is its own business, so only the start-to-first-byte time is checked.) */
    assert_true(h.t_first_byte - h.t_start >= 190);
    assert_true(rein_now_ms() - h.t_first_byte >= 5 * 30 - 10);
    http_release(&h);
    ms_stop(s);
}

static void test_hang_until_client_gives_up(void **state)
{
    ms_server *s = start();
    struct http h;
    char url[256];

    (void)state;
    script(s, "[{\"fault\":{\"hang\":true}},{\"text\":[\"a\",\"b\"],\"fault\":"
              "{\"hang_after_events\":2}},{\"text\":\"after\"}]");
    snprintf(url, sizeof(url), "%s" OA_PATH, ms_url(s));
    http_do(url, oa_body(false), openai_headers, 300, &h);
    assert_int_equal(h.rc, CURLE_OPERATION_TIMEDOUT);
    assert_int_equal(h.status, 0); /* no headers ever came */
    http_release(&h);
    http_do(url, oa_body(true), openai_headers, 300, &h);
    assert_int_equal(h.rc, CURLE_OPERATION_TIMEDOUT);
    assert_int_equal(h.status, 200);
    assert_non_null(strstr(h.body.ptr, "\"a\""));
    assert_null(strstr(h.body.ptr, "\"b\""));
    http_release(&h);
    /* the server is still fine */
    post(s, OA_PATH, oa_body(false), openai_headers, &h);
    assert_int_equal(h.status, 200);
    http_release(&h);
    ms_stop(s);
}

struct bg {
    ms_server *s;
    struct http h;
};

static void *bg_request(void *arg)
{
    struct bg *b = arg;

    post(b->s, OA_PATH, oa_body(false), openai_headers, &b->h);
    return NULL;
}

static void test_hang_ends_when_server_stops(void **state)
{
    struct bg b;
    pthread_t t;

    (void)state;
    b.s = start();
    script(b.s, "{\"fault\":{\"hang\":true}}");
    assert_int_equal(pthread_create(&t, NULL, bg_request, &b), 0);
    assert_true(ms_wait(b.s, 1, 5000));
    ms_stop(b.s); /* must return although a reply hangs */
    pthread_join(t, NULL);
    assert_int_not_equal(b.h.rc, CURLE_OK);
    http_release(&b.h);
}

/* ---- validation ---------------------------------------------------------------------- */

static void expect_openai_400(ms_server *s, const char *body, const char *message,
                              const char *param)
{
    struct http h;
    json_t *e;

    post(s, OA_PATH, body, openai_headers, &h);
    assert_int_equal(h.status, 400);
    e = json_object_get(h.json, "error");
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "type")), "invalid_request_error");
    if (!strstr(json_string_value(json_object_get(e, "message")), message))
        fail_msg("message \"%s\" lacks \"%s\"", json_string_value(json_object_get(e, "message")),
                 message);
    if (param)
        assert_string_equal(json_string_value(json_object_get(e, "param")), param);
    http_release(&h);
}

static void test_openai_validation(void **state)
{
    ms_server *s = start();
    struct http h;
    const struct ms_request *r;

    (void)state;
    script(s, "{\"text\":\"valid\"}");
    expect_openai_400(s,
                      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
                      "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\","
                      "\"type\":\"function\",\"function\":{\"name\":\"a\",\"arguments\":\"{}\"}},"
                      "{\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"b\","
                      "\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"call_1\","
                      "\"content\":\"ok\"},{\"role\":\"user\",\"content\":\"next\"}]}",
                      "An assistant message with 'tool_calls' must be followed by tool messages "
                      "responding to each 'tool_call_id'. The following tool_call_ids did not "
                      "have response messages: call_2",
                      "messages.[3].role");
    expect_openai_400(s,
                      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
                      "{\"role\":\"tool\",\"tool_call_id\":\"call_9\",\"content\":\"r\"}]}",
                      "messages with role 'tool' must be a response to a preceeding message with "
                      "'tool_calls'",
                      "messages.[1].role");
    expect_openai_400(s,
                      "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{"
                      "\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"a\","
                      "\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"zzz\","
                      "\"content\":\"r\"}]}",
                      "'tool_call_id' of 'zzz' not found in 'tool_calls' of previous message",
                      "messages.[1].tool_call_id");
    expect_openai_400(s,
                      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                      "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"math.add\"}}]}",
                      "string does not match pattern", "tools[0].function.name");
    expect_openai_400(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                      "you must provide a model parameter", NULL);
    expect_openai_400(s, "{\"model\":\"m\"}", "Missing required parameter: 'messages'.",
                      "messages");
    expect_openai_400(s, "{\"model\":\"m\",", "We could not parse the JSON body", NULL);
    expect_openai_400(s,
                      "{\"model\":\"m\",\"stream_options\":{\"include_usage\":true},\"messages\":"
                      "[{\"role\":\"user\",\"content\":\"x\"}]}",
                      "only allowed when 'stream' is enabled", "stream_options");
    expect_openai_400(s,
                      "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{"
                      "\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"a\","
                      "\"arguments\":{}}}]}]}",
                      "expected a string, but got an object instead",
                      "messages[0].tool_calls[0].function.arguments");
    /* refused requests use no reply: the scripted one is still there for a valid request */
    assert_int_equal(ms_replies_left(s), 1);
    r = ms_last_request(s);
    assert_int_equal(r->status, 400);
    assert_int_equal(r->reply, -1);
    assert_non_null(strstr(r->error, "expected a string, but got an object"));
    /* media in a tool message: the API takes text parts there only (decision 0098) */
    expect_openai_400(s,
                      "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{"
                      "\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"a\","
                      "\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"c1\","
                      "\"content\":[{\"type\":\"text\",\"text\":\"shot\"},{\"type\":\"image_url\","
                      "\"image_url\":{\"url\":\"data:image/png;base64,iVBORw0KGgo=\"}}]}]}",
                      "a tool message's part must be text with its data (type image_url)",
                      "messages[1].content[1]");
    /* a user message between the tool messages of one turn */
    expect_openai_400(
        s,
        "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{"
        "\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"a\","
        "\"arguments\":\"{}\"}},{\"id\":\"c2\",\"type\":\"function\",\"function\":{"
        "\"name\":\"a\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":"
        "\"c1\",\"content\":\"r\"},{\"role\":\"user\",\"content\":[{\"type\":"
        "\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,iVBORw0KGgo=\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"r\"}]}",
        "The following tool_call_ids did not have response messages: c2", "messages.[2].role");
    /* a complete history passes, with a user message of the tool result's media after the
     * tool message */
    post(
        s, OA_PATH,
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":"
        "\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\","
        "\"function\":{\"name\":\"a\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":"
        "\"call_1\",\"content\":\"ok\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
        "\"text\":\"call_1's media\"},{\"type\":\"image_url\",\"image_url\":{\"url\":"
        "\"data:image/"
        "png;base64,iVBORw0KGgo=\"}}]}],\"tools\":[{\"type\":\"function\",\"function\":"
        "{\"name\":\"a\",\"parameters\":{\"type\":\"object\"}}}]}",
        openai_headers, &h);
    assert_int_equal(h.status, 200);
    http_release(&h);
    ms_stop(s);
}

static void test_auth_checks(void **state)
{
    static const char *const no_key[] = {"Content-Type: application/json", NULL};
    static const char *const wrong_key[] = {"Authorization: Bearer sk-wrong", NULL};
    static const char *const an_wrong[] = {"x-api-key: nope", "anthropic-version: 2023-06-01",
                                           NULL};
    static const char *const an_bearer[] = {"Authorization: Bearer sk-ant",
                                            "anthropic-version: 2023-06-01", NULL};
    ms_server *s = start();
    struct http h;
    json_t *e;

    (void)state;
    ms_set_api_key(s, "sk-test");
    script(s, "{\"text\":\"ok\",\"times\":0}");
    post(s, OA_PATH, oa_body(false), no_key, &h);
    assert_int_equal(h.status, 401);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(h.json, "error"), "message")),
               "You didn't provide an API key"));
    http_release(&h);
    post(s, OA_PATH, oa_body(false), wrong_key, &h);
    assert_int_equal(h.status, 401);
    e = json_object_get(h.json, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "invalid_api_key");
    http_release(&h);
    post(s, OA_PATH, oa_body(false), openai_headers, &h);
    assert_int_equal(h.status, 200);
    http_release(&h);

    ms_set_api_key(s, "sk-ant");
    post(s, AN_PATH, an_body(false), an_wrong, &h);
    assert_int_equal(h.status, 401);
    e = json_object_get(h.json, "error");
    assert_string_equal(json_string_value(json_object_get(e, "type")), "authentication_error");
    assert_string_equal(json_string_value(json_object_get(e, "message")), "invalid x-api-key");
    http_release(&h);
    post(s, AN_PATH, an_body(false), json_headers, &h);
    assert_int_equal(h.status, 401);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(h.json, "error"), "message")),
        "x-api-key header is required");
    http_release(&h);
    post(s, AN_PATH, an_body(false), anthropic_headers, &h);
    assert_int_equal(h.status, 200);
    http_release(&h);
    /* Anthropic SDKs from 1.x send the key as a bearer token */
    post(s, AN_PATH, an_body(false), an_bearer, &h);
    assert_int_equal(h.status, 200);
    http_release(&h);
    ms_stop(s);
}

static void expect_anthropic_400(ms_server *s, const char *body, const char *const *headers,
                                 const char *message)
{
    struct http h;
    json_t *e;

    post(s, AN_PATH, body, headers ? headers : anthropic_headers, &h);
    assert_int_equal(h.status, 400);
    assert_string_equal(json_string_value(json_object_get(h.json, "type")), "error");
    e = json_object_get(h.json, "error");
    assert_string_equal(json_string_value(json_object_get(e, "type")), "invalid_request_error");
    if (!strstr(json_string_value(json_object_get(e, "message")), message))
        fail_msg("message \"%s\" lacks \"%s\"", json_string_value(json_object_get(e, "message")),
                 message);
    http_release(&h);
}

static void test_anthropic_validation(void **state)
{
    static const char *const no_version[] = {"Content-Type: application/json", NULL};
    static const char *const twice[] = {"anthropic-version: 2023-06-01, 2023-06-01", NULL};
    ms_server *s = start();
    struct http h;

    (void)state;
    script(s, "{\"text\":\"valid\"}");
    expect_anthropic_400(s, an_body(false), no_version, "anthropic-version: header is required");
    expect_anthropic_400(s, an_body(false), twice,
                         "anthropic-version: \"2023-06-01, 2023-06-01\" is not a valid version");
    expect_anthropic_400(s,
                         "{\"model\":\"c\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                         NULL, "max_tokens: Field required");
    expect_anthropic_400(s, "{\"model\":\"c\",\"max_tokens\":5}", NULL, "messages: Field required");
    expect_anthropic_400(s, "{nope", NULL, "The request body is not valid JSON");
    expect_anthropic_400(
        s,
        "{\"model\":\"c\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":"
        "\"f\",\"input\":{}}]},{\"role\":\"user\",\"content\":\"and?\"}]}",
        NULL,
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next "
        "message.");
    expect_anthropic_400(
        s,
        "{\"model\":\"c\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
        "\"text\",\"text\":\"x\"},{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_X\","
        "\"content\":"
        "\"r\"}]}]}",
        NULL,
        "messages.0.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_X. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
        "message.");
    expect_anthropic_400(s,
                         "{\"model\":\"c\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\","
                         "\"content\":\"x\"}],\"tools\":[{\"name\":\"bad name\",\"input_schema\":"
                         "{\"type\":\"object\"}}]}",
                         NULL, "tools.0.custom.name: String should match pattern");
    expect_anthropic_400(s,
                         "{\"model\":\"c\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\","
                         "\"content\":\"\"}]}",
                         NULL, "all messages must have non-empty content");
    expect_anthropic_400(s,
                         "{\"model\":\"c\",\"max_tokens\":5,\"messages\":[{\"role\":\"system\","
                         "\"content\":\"x\"}]}",
                         NULL, "messages.0.role: Input should be 'user' or 'assistant'");
    assert_int_equal(ms_replies_left(s), 1);
    /* a complete tool round passes */
    post(s, AN_PATH,
         "{\"model\":\"c\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
         "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"t\"},{\"type\":"
         "\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{}}]},{\"role\":\"user\","
         "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":\"r\"}]}],"
         "\"tools\":[{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}}]}",
         anthropic_headers, &h);
    assert_int_equal(h.status, 200);
    http_release(&h);
    ms_stop(s);
}

#define VX_PATH "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/"
#define VX_MSG  "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]"
#define VX_VER  "\"anthropic_version\":\"vertex-2023-10-16\""

/* POSTs body to the Vertex path tail; the status and, when not 200, a piece of the message of
 * the error, whose shape is Google's (google) or Anthropic's. */
static void expect_vertex(ms_server *s, const char *tail, const char *body,
                          const char *const *headers, long status, bool google, const char *message)
{
    char path[256];
    struct http h;
    const json_t *e;

    snprintf(path, sizeof(path), VX_PATH "%s", tail);
    post(s, path, body, headers, &h);
    if (h.status != status)
        fail_msg("%s: %ld %s", body, h.status, h.body.ptr);
    e = json_object_get(h.json, "error");
    if (status != 200) {
        assert_string_equal(json_string_value(json_object_get(e, google ? "status" : "type")),
                            google ? "UNAUTHENTICATED" : "invalid_request_error");
        if (!strstr(json_string_value(json_object_get(e, "message")), message))
            fail_msg("message \"%s\" lacks \"%s\"",
                     json_string_value(json_object_get(e, "message")), message);
    }
    http_release(&h);
}

/*
 * Claude on Vertex AI: no bearer token (or another token) is Vertex's 401 in Google's shape; a
 * body with a model, without anthropic_version or with another one is refused in Anthropic's;
 * the rest is checked as the Messages API does, the URL's model standing for the body's; the
 * method decides streaming; the count takes the model in its body and answers input_tokens.
 */
static void test_vertex_claude_validation(void **state)
{
    static const char *const bearer[] = {"Authorization: Bearer ya29.t", NULL};
    static const char *const other[] = {"Authorization: Bearer ya29.other", NULL};
    static const char *const none[] = {"Content-Type: application/json", NULL};
    ms_server *s = start();
    char path[256];
    struct http h;

    (void)state;
    ms_set_api_key(s, "ya29.t");
    script(s, "{\"text\":\"valid\",\"usage\":{\"input_tokens\":12},\"times\":0}");
    expect_vertex(s, "claude-sonnet-4-6:rawPredict", "{" VX_VER ",\"max_tokens\":5," VX_MSG "}",
                  none, 401, true, "invalid authentication credentials");
    expect_vertex(s, "claude-sonnet-4-6:rawPredict", "{" VX_VER ",\"max_tokens\":5," VX_MSG "}",
                  other, 401, true, "invalid authentication credentials");
    expect_vertex(s, "claude-sonnet-4-6:rawPredict",
                  "{\"model\":\"claude-sonnet-4-6\"," VX_VER ",\"max_tokens\":5," VX_MSG "}",
                  bearer, 400, false, "model: Extra inputs are not permitted");
    expect_vertex(s, "claude-sonnet-4-6:rawPredict", "{\"max_tokens\":5," VX_MSG "}", bearer, 400,
                  false, "anthropic_version: Field required");
    expect_vertex(s, "claude-sonnet-4-6:rawPredict",
                  "{\"anthropic_version\":\"2023-06-01\",\"max_tokens\":5," VX_MSG "}", bearer, 400,
                  false, "anthropic_version: Input should be 'vertex-2023-10-16'");
    expect_vertex(s, "claude-sonnet-4-6:rawPredict", "{" VX_VER "," VX_MSG "}", bearer, 400, false,
                  "max_tokens: Field required");
    expect_vertex(s, "count-tokens:rawPredict", "{" VX_MSG "}", bearer, 400, false,
                  "model: Field required");
    expect_vertex(s, "count-tokens:rawPredict",
                  "{\"model\":\"claude-sonnet-4-6\",\"max_tokens\":5," VX_MSG "}", bearer, 400,
                  false, "max_tokens: Extra inputs are not permitted");
    assert_int_equal(ms_request_count(s), 8);
    expect_vertex(s, "claude-sonnet-4-6:rawPredict", "{" VX_VER ",\"max_tokens\":5," VX_MSG "}",
                  bearer, 200, false, NULL);
    assert_string_equal(ms_last_request(s)->format, "anthropic");
    expect_vertex(s, "claude-sonnet-4-6:streamRawPredict",
                  "{" VX_VER ",\"max_tokens\":5,\"stream\":true," VX_MSG "}", bearer, 200, false,
                  NULL);
    assert_true(ms_last_request(s)->stream);
    snprintf(path, sizeof(path), VX_PATH "count-tokens:rawPredict");
    post(s, path, "{\"model\":\"claude-sonnet-4-6\"," VX_VER "," VX_MSG "}", bearer, &h);
    assert_int_equal(h.status, 200);
    assert_int_equal(json_integer_value(json_object_get(h.json, "input_tokens")), 12);
    http_release(&h);
    ms_stop(s);
}

static void test_validation_can_be_turned_off(void **state)
{
    ms_server *s = start();
    struct http h;

    (void)state;
    script(s, "{\"validate\":false,\"replies\":[{\"text\":\"served anyway\"}]}");
    post(s, AN_PATH, "{\"model\":\"c\"}", json_headers, &h);
    assert_int_equal(h.status, 200);
    assert_non_null(strstr(h.body.ptr, "served anyway"));
    http_release(&h);
    ms_stop(s);
}

/* ---- script exhaustion, scenarios, predicates ---------------------------------------- */

static void test_script_ran_out_names_scenario_and_request(void **state)
{
    ms_server *s = start();
    struct http h;
    const char *msg;

    (void)state;
    ms_set_name(s, "agent-retry");
    script(s, "{\"text\":\"only one\"}");
    post(s, AN_PATH, an_body(false), anthropic_headers, &h);
    http_release(&h);
    post(s, AN_PATH, an_body(false), anthropic_headers, &h);
    assert_int_equal(h.status, 500);
    msg = json_string_value(json_object_get(json_object_get(h.json, "error"), "message"));
    assert_non_null(strstr(msg, "\"agent-retry\""));
    assert_non_null(strstr(msg, "request #2"));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(h.json, "error"), "type")), "api_error");
    http_release(&h);
    ms_stop(s);
}

static void test_scenario_file_with_body_file(void **state)
{
    char *dir = test_tmpdir();
    char *path;
    ms_server *s = start();
    struct http h;
    rein_error err;
    json_t *ev;

    (void)state;
    char *sse = test_write_file(
        dir, "fixtures/one.sse",
        "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"A\"}}]}"
        "\n\ndata: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
        "\"B\"}}]}\n\ndata: [DONE]\n\n");
    path = test_write_file(dir, "scenario.json",
                           "{\"name\":\"file-scenario\",\"api_key\":\"sk-test\",\"replies\":["
                           "{\"name\":\"first\",\"body_file\":\"fixtures/one.sse\",\"stream\":true,"
                           "\"fault\":{\"cut_after_events\":2}},{\"name\":\"second\",\"text\":"
                           "\"hi\"}]}");
    rein_error_clear(&err);
    assert_rein_ok(ms_load(s, path, false, &err), &err);
    assert_int_equal(ms_replies_left(s), 2);
    post(s, OA_PATH, oa_body(false), openai_headers, &h);
    assert_int_equal(h.status, 200);
    assert_non_null(strstr(hdr(&h, "content-type"), "text/event-stream"));
    ev = sse_parse(h.body.ptr);
    assert_int_equal(json_array_size(ev), 2);
    assert_int_not_equal(h.rc, CURLE_OK);
    json_decref(ev);
    http_release(&h);
    assert_string_equal(ms_last_request(s)->reply_name, "first");
    post(s, OA_PATH, oa_body(false), json_headers, &h); /* the scenario's key is required */
    assert_int_equal(h.status, 401);
    http_release(&h);
    free(path);
    free(sse);
    test_rmtree(dir);
    free(dir);
    ms_stop(s);
}

static void test_recorded_fixture_replay(void **state)
{
    const char *fixture =
        test_require_shared("fixtures/anthropic/sdkpy-sonnet4-text-then-tool-use.sse");
    ms_server *s = start();
    struct http h;
    json_t *reply, *ev;
    rein_error err;

    (void)state;
    reply = json_pack("{s:s, s:b, s:{s:i}}", "body_file", fixture, "stream", 1, "fault",
                      "chunk_bytes", 7);
    rein_error_clear(&err);
    assert_rein_ok(ms_add(s, reply, &err), &err);
    post(s, AN_PATH, an_body(true), anthropic_headers, &h);
    assert_int_equal(h.rc, CURLE_OK);
    assert_true(h.max_write <= 7);
    ev = sse_parse(h.body.ptr);
    assert_string_equal(ev_name(ev, 0), "message_start");
    assert_string_equal(ev_name(ev, json_array_size(ev) - 1), "message_stop");
    json_decref(ev);
    http_release(&h);
    ms_stop(s);
}

static void test_stream_jsonl_fixture_wrapped_as_sse(void **state)
{
    char an[4096], oa[4096];
    ms_server *s = start();
    struct http h;
    json_t *ev;
    rein_error err;
    size_t n;

    (void)state;
    snprintf(an, sizeof(an), "%s",
             test_require_shared("fixtures/anthropic/vercel-text-then-tool-use-empty-input."
                                 "stream.jsonl"));
    snprintf(oa, sizeof(oa), "%s",
             test_require_shared("fixtures/openai/vercel-azure-model-router-content-filter."
                                 "stream.jsonl"));
    rein_error_clear(&err);
    assert_rein_ok(ms_add(s, json_pack("{s:s, s:s}", "body_file", an, "wrap_lines", "sse"), &err),
                   &err);
    assert_rein_ok(ms_add(s, json_pack("{s:s, s:s}", "body_file", oa, "wrap_lines", "sse"), &err),
                   &err);
    post(s, AN_PATH, an_body(true), anthropic_headers, &h);
    assert_int_equal(h.rc, CURLE_OK);
    assert_non_null(strstr(hdr(&h, "content-type"), "text/event-stream"));
    ev = sse_parse(h.body.ptr);
    n = json_array_size(ev);
    assert_true(n > 4);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(ev_name(ev, i),
                            json_string_value(json_object_get(ev_data(ev, i), "type")));
    assert_string_equal(ev_name(ev, 0), "message_start");
    assert_string_equal(ev_name(ev, n - 1), "message_stop");
    json_decref(ev);
    http_release(&h);
    post(s, OA_PATH, oa_body(true), openai_headers, &h);
    ev = sse_parse(h.body.ptr);
    n = json_array_size(ev);
    assert_null(ev_name(ev, 0));
    assert_true(json_is_object(ev_data(ev, 0)));
    assert_string_equal(json_string_value(ev_data(ev, n - 1)), "[DONE]");
    json_decref(ev);
    http_release(&h);
    ms_stop(s);
}

static void test_bad_scripts_are_refused_and_change_nothing(void **state)
{
    static const struct {
        const char *text;
        const char *msg;
    } bad[] = {
        {"{\"text\":\"a\",\"fautl\":{}}", "replies[0]: unknown member \"fautl\""},
        {"[{\"text\":\"ok\"},{\"status\":\"429\"}]", "replies[1].status: expected a non-negative"},
        {"{\"tool_calls\":[{\"arguments\":\"{}\"}]}", "replies[0].tool_calls[0]: \"name\" is"},
        {"{\"format\":\"cohere\"}", "replies[0].format: \"cohere\" is not one of"},
        {"{\"fault\":{\"cut_after_event\":1}}", "replies[0].fault: unknown member"},
        {"{\"match\":{\"last_role\":1}}", "replies[0].match.last_role: expected a string"},
        {"{\"replies\":[],\"nmae\":\"x\"}", "scenario: unknown member \"nmae\""},
        {"{\"text\":[\"a\",1]}", "replies[0].text: expected a string or an array of strings"},
        {"{\"status\":700}", "replies[0].status: 700 is not an HTTP status"},
        {"{\"body\":\"x\",\"wrap_lines\":\"ndjson\"}", "replies[0].wrap_lines: the only"},
        {"{\"headers\":{\"X\":\"a\\r\\nb\"}}", "line breaks"},
        {"42", "one reply, not integer"},
        {"{\"text\":", "script: "},
    };
    ms_server *s = start();
    rein_error err;

    (void)state;
    script(s, "{\"text\":\"keep me\"}");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rein_error_clear(&err);
        assert_int_not_equal(ms_script(s, bad[i].text, false, &err), REIN_OK);
        if (!strstr(err.msg, bad[i].msg))
            fail_msg("script %s: error \"%s\" lacks \"%s\"", bad[i].text, err.msg, bad[i].msg);
        assert_int_equal(ms_replies_left(s), 1);
    }
    rein_error_clear(&err);
    assert_int_equal(ms_load(s, "/nonexistent/scenario.json", false, &err), REIN_ENOTFOUND);
    assert_int_equal(ms_replies_left(s), 1);
    ms_stop(s);
}

static const char *const agent_history_invalid =
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"read a\"},{\"role\":"
    "\"assistant\",\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{"
    "\"name\":\"read\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"call_1\","
    "\"content\":\"{\\\"error\\\":\\\"Invalid arguments: missing required field(s): "
    "filePath\\\"}\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"read\"}}]}";

static void test_match_predicates(void **state)
{
    ms_server *s = start();
    struct http h;
    const char *args;

    (void)state;
    script(s, "[{\"name\":\"fix\",\"match\":{\"tool_result_contains\":\"Invalid arguments\","
              "\"tools_include\":\"read\"},\"tool_calls\":[{\"id\":\"call_2\",\"name\":\"read\","
              "\"arguments\":\"{\\\"filePath\\\":\\\"a\\\"}\"}]},"
              "{\"name\":\"third\",\"match\":{\"nth\":3},\"text\":\"third request\"},"
              "{\"name\":\"ordered\",\"text\":\"first in order\"},"
              "{\"name\":\"always\",\"times\":0,\"match\":{\"last_role\":\"user\",\"format\":"
              "\"anthropic\"},\"text\":\"anthropic user\"}]");
    /* request 1: plain user turn -> the first ordered reply */
    post(s, OA_PATH, oa_body(false), openai_headers, &h);
    assert_non_null(strstr(h.body.ptr, "first in order"));
    http_release(&h);
    /* request 2: a tool result with the invalid payload -> the predicate reply */
    post(s, OA_PATH, agent_history_invalid, openai_headers, &h);
    args = json_string_value(json_object_get(
        json_object_get(
            json_array_get(
                json_object_get(
                    json_object_get(json_array_get(json_object_get(h.json, "choices"), 0),
                                    "message"),
                    "tool_calls"),
                0),
            "function"),
        "arguments"));
    assert_string_equal(args, "{\"filePath\":\"a\"}");
    assert_string_equal(ms_last_request(s)->reply_name, "fix");
    http_release(&h);
    /* request 3: nth */
    post(s, OA_PATH, oa_body(false), openai_headers, &h);
    assert_non_null(strstr(h.body.ptr, "third request"));
    http_release(&h);
    /* requests 4, 5: the unlimited Anthropic reply */
    for (int i = 0; i < 2; i++) {
        post(s, AN_PATH, an_body(false), anthropic_headers, &h);
        assert_non_null(strstr(h.body.ptr, "anthropic user"));
        http_release(&h);
    }
    /* the predicate reply was used up: the same history now finds nothing */
    post(s, OA_PATH, agent_history_invalid, openai_headers, &h);
    assert_int_equal(h.status, 500);
    http_release(&h);
    ms_stop(s);
}

static void test_unknown_path_and_scripted_custom_path(void **state)
{
    ms_server *s = start();
    struct http h;

    (void)state;
    post(s, "/v1/completions", "{}", json_headers, &h);
    assert_int_equal(h.status, 404);
    assert_non_null(strstr(h.body.ptr, "Invalid URL (POST /v1/completions)"));
    http_release(&h);
    script(s, "{\"match\":{\"path\":\"/custom/v1/generate\"},"
              "\"body\":\"{\\\"output\\\":{\\\"text\\\":\\\"native\\\"}}\"}");
    post(s, "/custom/v1/generate", "{\"model\":\"qwen\"}", json_headers, &h);
    assert_int_equal(h.status, 200);
    assert_string_equal(h.body.ptr, "{\"output\":{\"text\":\"native\"}}");
    http_release(&h);
    assert_int_equal(ms_request_count(s), 2);
    assert_string_equal(ms_request(s, 0)->format, "unknown");
    ms_stop(s);
}

/* ---- the request log and the control endpoints ---------------------------------------- */

static void test_request_log(void **state)
{
    ms_server *s = start();
    struct http h;
    const struct ms_request *r;
    json_t *log;
    int64_t before = rein_wall_ms();

    (void)state;
    script(s, "{\"name\":\"greeting\",\"text\":\"hi\"}");
    post(s, OA_PATH "?api-version=1", oa_body(true), openai_headers, &h);
    http_release(&h);
    assert_true(ms_wait(s, 1, 1000));
    assert_false(ms_wait(s, 2, 50));
    r = ms_request(s, 0);
    assert_non_null(r);
    assert_null(ms_request(s, 1));
    assert_int_equal(r->index, 0);
    assert_string_equal(r->method, "POST");
    assert_string_equal(r->path, OA_PATH);
    assert_string_equal(r->query, "api-version=1");
    assert_string_equal(ms_request_header(r, "Authorization"), "Bearer sk-test");
    assert_string_equal(r->body, oa_body(true));
    assert_int_equal(r->body_len, strlen(oa_body(true)));
    assert_string_equal(json_string_value(json_object_get(r->json, "model")), "gpt-4o");
    assert_true(r->time_ms >= before);
    assert_string_equal(r->format, "openai");
    assert_true(r->stream);
    assert_int_equal(r->reply, 0);
    assert_string_equal(r->reply_name, "greeting");
    assert_int_equal(r->status, 200);
    assert_null(r->error);
    log = ms_requests_json(s);
    assert_int_equal(json_array_size(log), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(log, 0), "reply_name")),
                        "greeting");
    json_decref(log);
    ms_reset(s);
    assert_int_equal(ms_request_count(s), 0);
    assert_int_equal(ms_replies_left(s), 0);
    ms_stop(s);
}

static void test_log_limit_counts_but_keeps_the_first(void **state)
{
    ms_server *s = start();
    struct http h;

    (void)state;
    ms_set_log_limit(s, 2);
    script(s, "{\"match\":{\"nth\":3},\"text\":\"third\"}");
    script(s, "{\"text\":\"any\",\"times\":0}");
    for (int i = 0; i < 3; i++) {
        post(s, OA_PATH, oa_body(false), openai_headers, &h);
        assert_int_equal(h.status, 200);
        if (i == 2)
            assert_non_null(strstr(h.body.ptr, "third")); /* nth counts unkept requests */
        http_release(&h);
    }
    assert_int_equal(ms_request_count(s), 3);
    assert_true(ms_wait(s, 3, 10));
    assert_non_null(ms_request(s, 1));
    assert_null(ms_request(s, 2));
    assert_int_equal(ms_last_request(s)->index, 1);
    ms_stop(s);
}

static void test_control_endpoints(void **state)
{
    ms_server *s = start();
    struct http h;
    char url[256];
    json_t *rec;

    (void)state;
    snprintf(url, sizeof(url), "%s/__script", ms_url(s));
    http_do(url, "{\"name\":\"remote\",\"replies\":[{\"text\":\"one\"}]}", json_headers, 5000, &h);
    assert_int_equal(h.status, 200);
    assert_int_equal(json_integer_value(json_object_get(h.json, "replies")), 1);
    http_release(&h);
    snprintf(url, sizeof(url), "%s/__script?append=1", ms_url(s));
    http_do(url, "[{\"text\":\"two\"}]", json_headers, 5000, &h);
    assert_int_equal(json_integer_value(json_object_get(h.json, "replies")), 2);
    http_release(&h);
    http_do(url, "{\"text\":\"x\",\"bogus\":1}", json_headers, 5000, &h);
    assert_int_equal(h.status, 400);
    assert_non_null(strstr(json_string_value(json_object_get(h.json, "error")), "bogus"));
    http_release(&h);

    post(s, OA_PATH, oa_body(false), openai_headers, &h);
    assert_non_null(strstr(h.body.ptr, "\"one\""));
    http_release(&h);
    snprintf(url, sizeof(url), "%s/__requests", ms_url(s));
    http_do(url, NULL, NULL, 5000, &h);
    assert_int_equal(h.status, 200);
    assert_int_equal(json_array_size(h.json), 1); /* control requests are not logged */
    rec = json_array_get(h.json, 0);
    assert_string_equal(json_string_value(json_object_get(rec, "path")), OA_PATH);
    assert_string_equal(json_string_value(json_object_get(json_object_get(rec, "json"), "model")),
                        "gpt-4o");
    assert_int_equal(json_integer_value(json_object_get(rec, "reply")), 0);
    assert_non_null(json_string_value(json_object_get(rec, "time")));
    http_release(&h);
    snprintf(url, sizeof(url), "%s/__reset", ms_url(s));
    http_do(url, "", json_headers, 5000, &h);
    assert_int_equal(h.status, 200);
    http_release(&h);
    assert_int_equal(ms_request_count(s), 0);
    ms_stop(s);
}

struct worker {
    ms_server *s;
    int ok;
};

static void *hammer(void *arg)
{
    struct worker *w = arg;

    for (int i = 0; i < 5; i++) {
        struct http h;
        post(w->s, i % 2 ? AN_PATH : OA_PATH, i % 2 ? an_body(true) : oa_body(true),
             i % 2 ? anthropic_headers : openai_headers, &h);
        if (h.rc == CURLE_OK && h.status == 200 && strstr(h.body.ptr, "concurrent"))
            w->ok++;
        http_release(&h);
    }
    return NULL;
}

static void test_concurrent_clients(void **state)
{
    ms_server *s = start();
    struct worker w[8];
    pthread_t t[8];
    int total = 0;

    (void)state;
    script(s, "{\"text\":\"concurrent\",\"times\":0,\"delay_chunk_ms\":2}");
    for (int i = 0; i < 8; i++) {
        w[i] = (struct worker){.s = s};
        assert_int_equal(pthread_create(&t[i], NULL, hammer, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        total += w[i].ok;
    }
    assert_int_equal(total, 40);
    assert_int_equal(ms_request_count(s), 40);
    ms_stop(s);
}

static ms_server *torture_server;

static void install_scenario(void *arg)
{
    rein_error err;

    (void)arg;
    (void)ms_script(torture_server,
                    "{\"name\":\"t\",\"replies\":[{\"text\":\"a\",\"fault\":{\"malformed\":\"x\"}},"
                    "{\"tool_calls\":[{\"name\":\"f\",\"arguments\":\"{}\"}],\"match\":"
                    "{\"nth\":2}}]}",
                    false, &err);
}

static void test_scripting_survives_allocation_failures(void **state)
{
    (void)state;
    torture_server = start();
    test_alloc_torture(install_scenario, NULL);
    ms_stop(torture_server);
}

/* ---- the program --------------------------------------------------------------------- */

/* The program under test; the teardown kills it when an assertion ends the test early. */
static rein_proc *program;

static int kill_program(void **state)
{
    (void)state;
    rein_proc_free(program);
    program = NULL;
    return 0;
}

static void test_program_serves_until_sigterm(void **state)
{
    char *dir = test_tmpdir();
    char *scenario = test_write_file(dir, "s.json", "{\"replies\":[{\"text\":\"from process\"}]}");
    char bin[1024], line[256] = "", url[300];
    const char *argv[] = {bin, "--scenario", scenario, NULL};
    struct rein_proc_opts o = {.argv = argv};
    rein_proc *p;
    rein_error err;
    struct http h;
    size_t got = 0;
    int code = -1;

    (void)state;
    snprintf(bin, sizeof(bin), "%s/rein-model-server", test_bin_dir());
    rein_error_clear(&err);
    assert_rein_ok(rein_proc_start(&o, &p, &err), &err);
    program = p;
    while (got + 1 < sizeof(line) && !strchr(line, '\n')) {
        struct pollfd pfd = {.fd = rein_proc_stdout_fd(p), .events = POLLIN};
        ssize_t n;
        if (poll(&pfd, 1, 10000) != 1)
            break;
        n = read(pfd.fd, line + got, sizeof(line) - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        line[got] = '\0';
    }
    assert_non_null(strchr(line, '\n'));
    *strchr(line, '\n') = '\0';
    assert_int_equal(strncmp(line, "http://127.0.0.1:", 17), 0);
    snprintf(url, sizeof(url), "%s" OA_PATH, line);
    http_do(url, oa_body(false), json_headers, 5000, &h);
    assert_int_equal(h.status, 200);
    assert_non_null(strstr(h.body.ptr, "from process"));
    http_release(&h);
    snprintf(url, sizeof(url), "%s/__requests", line);
    http_do(url, NULL, NULL, 5000, &h);
    assert_int_equal(json_array_size(h.json), 1);
    http_release(&h);
    rein_proc_kill(p, SIGTERM);
    assert_rein_ok(rein_proc_wait(p, 10000, &code), NULL);
    assert_int_equal(code, 0);
    rein_proc_free(p);
    program = NULL;
    free(scenario);
    test_rmtree(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_openai_text_json),
    cmocka_unit_test(test_openai_text_stream),
    cmocka_unit_test(test_openai_tool_calls_stream),
    cmocka_unit_test(test_openai_tool_calls_json),
    cmocka_unit_test(test_openai_refusal_reasoning_and_finish),
    cmocka_unit_test(test_anthropic_stream_sequence),
    cmocka_unit_test(test_anthropic_json_and_stop_reasons),
    cmocka_unit_test(test_ollama_stream_and_json),
    cmocka_unit_test(test_status_with_headers_and_error_bodies),
    cmocka_unit_test(test_chunk_bytes_split_utf8_anywhere),
    cmocka_unit_test(test_cut_after_events_mid_tool_call),
    cmocka_unit_test(test_cut_after_bytes_json),
    cmocka_unit_test(test_malformed_line_and_stream_error_event),
    cmocka_unit_test(test_delays_before_headers_and_first_byte),
    cmocka_unit_test(test_hang_until_client_gives_up),
    cmocka_unit_test(test_hang_ends_when_server_stops),
    cmocka_unit_test(test_openai_validation),
    cmocka_unit_test(test_auth_checks),
    cmocka_unit_test(test_anthropic_validation),
    cmocka_unit_test(test_vertex_claude_validation),
    cmocka_unit_test(test_validation_can_be_turned_off),
    cmocka_unit_test(test_script_ran_out_names_scenario_and_request),
    cmocka_unit_test(test_scenario_file_with_body_file),
    cmocka_unit_test(test_recorded_fixture_replay),
    cmocka_unit_test(test_stream_jsonl_fixture_wrapped_as_sse),
    cmocka_unit_test(test_bad_scripts_are_refused_and_change_nothing),
    cmocka_unit_test(test_match_predicates),
    cmocka_unit_test(test_unknown_path_and_scripted_custom_path),
    cmocka_unit_test(test_request_log),
    cmocka_unit_test(test_log_limit_counts_but_keeps_the_first),
    cmocka_unit_test(test_control_endpoints),
    cmocka_unit_test(test_concurrent_clients),
    cmocka_unit_test(test_scripting_survives_allocation_failures),
    cmocka_unit_test_teardown(test_program_serves_until_sigterm, kill_program),
};

REIN_TEST_MAIN(tests)
