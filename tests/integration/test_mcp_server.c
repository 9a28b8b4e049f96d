/*
 * rein as an MCP server, through its real transports: `rein mcp serve` as a child process
 * talking newline-delimited JSON-RPC on its stdin and stdout, and /mcp on a rein HTTP server
 * started in the test on an ephemeral port, driven with libcurl. Covers the lifecycle and
 * version negotiation, tools/list with the manifests' annotations, tools/call through the
 * pipeline (results, content, isError with the invalid payload, unknown tools as JSON-RPC
 * errors, name repair), every kind of bad input, logging levels, progress (the skill's own and
 * the heartbeat), cancellation reaching the skill's process group, end of input, sessions,
 * DNS rebinding checks, SSE streams with priming events, resumption with Last-Event-ID, and
 * stopping with calls running.
 */
/* rein-test-timeout: 120 */
#include "http_client.h"
#include "otlp_receiver.h"
#include "raw_http.h"
#include "test.h"

#include <curl/curl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *skills_dir(void)
{
    static char path[4096];

    snprintf(path, sizeof(path), "%s/tests/data/mcp-skills", REIN_SOURCE_DIR);
    return path;
}

/* A folder with two test skills: hang (never answers; writes its grandchild's pid to
 * <dir>/hang.pid) and wipe (destructive, runs echo's program). */
static char *extra_skills(void)
{
    char *dir = test_tmpdir(), m[8192];

    snprintf(m, sizeof(m),
             "{\"id\":\"hang\",\"description\":\"never answers\",\"parameters\":{\"type\":"
             "\"object\"},\"timeout_ms\":60000,\"runner\":{\"kind\":\"process\",\"command\":"
             "[\"%s/skill_proc\",\"hang\",\"%s/hang.pid\"]}}",
             test_bin_dir(), dir);
    free(test_write_file(dir, "hang/manifest.json", m));
    snprintf(m, sizeof(m),
             "{\"id\":\"wipe\",\"description\":\"deletes things\",\"destructive\":true,"
             "\"parameters\":{\"type\":\"object\"},\"runner\":{\"kind\":\"process\",\"command\":"
             "[\"%s/skill_proc\",\"echo\"]}}",
             test_bin_dir());
    free(test_write_file(dir, "wipe/manifest.json", m));
    snprintf(m, sizeof(m),
             "{\"id\":\"delete_note\",\"description\":\"deletes a note\",\"destructive\":"
             "true,\"parameters\":{\"type\":\"object\"},\"runner\":{\"kind\":\"process\","
             "\"command\":[\"%s/skill_proc\",\"touch\",\"%s/deleted\"]}}",
             test_bin_dir(), dir);
    free(test_write_file(dir, "delete_note/manifest.json", m));
    /* Arguments mirrored in Mcp-Param-* headers (2026-07-28, SEP-2243). */
    snprintf(m, sizeof(m),
             "{\"id\":\"route\",\"description\":\"routes by region\",\"parameters\":{"
             "\"type\":\"object\",\"properties\":{\"region\":{\"type\":\"string\","
             "\"x-mcp-header\":\"Region\"},\"shards\":{\"type\":\"integer\","
             "\"x-mcp-header\":\"Shards\"}}},\"runner\":{\"kind\":\"process\","
             "\"command\":[\"%s/skill_proc\",\"echo\"]}}",
             test_bin_dir());
    free(test_write_file(dir, "route/manifest.json", m));
    /* Skills that ask the client (runner_process.c's asking protocol). */
    snprintf(m, sizeof(m),
             "{\"id\":\"asker\",\"description\":\"asks the client three things\","
             "\"parameters\":{\"type\":\"object\"},\"timeout_ms\":20000,\"runner\":{"
             "\"kind\":\"process\",\"command\":[\"%s/skill_proc\",\"ask\","
             "\"sampling/createMessage\",\"elicitation/create\",\"roots/list\"],"
             "\"client_requests\":[\"sampling\",\"elicitation\",\"roots\"]}}",
             test_bin_dir());
    free(test_write_file(dir, "asker/manifest.json", m));
    snprintf(m, sizeof(m),
             "{\"id\":\"slow_asker\",\"description\":\"asks with little time\","
             "\"parameters\":{\"type\":\"object\"},\"timeout_ms\":700,\"runner\":{"
             "\"kind\":\"process\",\"command\":[\"%s/skill_proc\",\"ask\","
             "\"sampling/createMessage\"],\"client_requests\":[\"sampling\"]}}",
             test_bin_dir());
    free(test_write_file(dir, "slow_asker/manifest.json", m));
    snprintf(m, sizeof(m),
             "{\"id\":\"one_asker\",\"description\":\"asks one thing\","
             "\"parameters\":{\"type\":\"object\"},\"timeout_ms\":20000,\"runner\":{"
             "\"kind\":\"process\",\"command\":[\"%s/skill_proc\",\"ask\","
             "\"sampling/createMessage\"],\"client_requests\":[\"sampling\"]}}",
             test_bin_dir());
    free(test_write_file(dir, "one_asker/manifest.json", m));
    return dir;
}

/* Waits until the hang skill's grandchild was started, then until it is gone. */
static pid_t hang_pid(const char *dir)
{
    char path[4200];
    char *text = NULL;
    size_t len;

    snprintf(path, sizeof(path), "%s/hang.pid", dir);
    for (int i = 0; i < 500 && !(text = test_read_file(path, &len)); i++)
        rein_sleep_ms(10);
    assert_non_null(text);
    pid_t pid = (pid_t)strtol(text, NULL, 10);
    free(text);
    unlink(path);
    return pid;
}

static void expect_gone(pid_t pid)
{
    for (int i = 0; i < 500 && test_pid_alive(pid); i++)
        rein_sleep_ms(10);
    assert_false(test_pid_alive(pid));
}

/* ---- stdio -------------------------------------------------------------------------------- */

struct child {
    rein_proc *p;
    char buf[1 << 16];
    size_t len;
    char *dir;
};

/* rein mcp serve with the conformance skills, the extra ones, and root (may be NULL) as the
 * folder its files come from; env_extra: name, value, ..., NULL. */
static void child_start_root(struct child *c, const char *const *env_extra, const char *root)
{
    rein_error err;

    memset(c, 0, sizeof(*c));
    c->dir = extra_skills();
    for (size_t i = 0; env_extra && env_extra[i]; i += 2)
        setenv(env_extra[i], env_extra[i + 1], 1);
    const char *argv[] = {
        test_rein_bin(),        "mcp", "serve", "--skills", skills_dir(), "--skills", c->dir,
        root ? "--root" : NULL, root,  NULL};
    struct rein_proc_opts po = {.argv = argv};
    assert_rein_ok(rein_proc_start(&po, &c->p, &err), &err);
    for (size_t i = 0; env_extra && env_extra[i]; i += 2)
        unsetenv(env_extra[i]);
}

static void child_start(struct child *c, const char *const *env_extra)
{
    child_start_root(c, env_extra, NULL);
}

static void write_fully(int fd, const char *p, size_t len)
{
    for (size_t off = 0; off < len;) {
        struct pollfd pfd = {fd, POLLOUT, 0};
        ssize_t n = write(fd, p + off, len - off);
        if (n > 0)
            off += (size_t)n;
        else
            assert_true(poll(&pfd, 1, 5000) > 0); /* the pipe is full: wait for room */
    }
}

static void child_send(struct child *c, const char *line)
{
    write_fully(rein_proc_stdin_fd(c->p), line, strlen(line));
    write_fully(rein_proc_stdin_fd(c->p), "\n", 1);
}

/* The next message from the child, or NULL after timeout_ms or at end of output. */
static json_t *child_recv(struct child *c, int timeout_ms)
{
    int64_t deadline = rein_now_ms() + timeout_ms;

    for (;;) {
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl) {
            size_t n = (size_t)(nl - c->buf);
            json_t *v = json_loadb(c->buf, n, 0, NULL);
            memmove(c->buf, nl + 1, c->len - n - 1);
            c->len -= n + 1;
            assert_non_null(v); /* every line rein writes is JSON */
            return v;
        }
        int64_t left = deadline - rein_now_ms();
        struct pollfd pfd = {rein_proc_stdout_fd(c->p), POLLIN, 0};
        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
            return NULL;
        ssize_t r = read(pfd.fd, c->buf + c->len, sizeof(c->buf) - c->len);
        if (r <= 0)
            return NULL;
        c->len += (size_t)r;
    }
}

/* The response with this integer id; notifications before it are appended to notes. */
static json_t *child_wait(struct child *c, int id, json_t *notes)
{
    for (;;) {
        json_t *m = child_recv(c, 20000);
        assert_non_null(m);
        if (json_integer_value(json_object_get(m, "id")) == id && !json_object_get(m, "method"))
            return m;
        assert_non_null(json_object_get(m, "method")); /* no response for another id */
        if (notes)
            json_array_append(notes, m);
        json_decref(m);
    }
}

static json_t *child_call(struct child *c, int id, const char *method, const char *params,
                          json_t *notes)
{
    char line[4096];

    snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"%s%s}", id,
             method, params ? ",\"params\":" : "", params ? params : "");
    child_send(c, line);
    return child_wait(c, id, notes);
}

static void child_init(struct child *c, const char *version)
{
    char params[256];
    json_t *r;

    snprintf(params, sizeof(params),
             "{\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\","
             "\"version\":\"1\"}}",
             version);
    r = child_call(c, 1, "initialize", params, NULL);
    json_decref(r);
    child_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

/* initialize declaring the client capabilities caps (a JSON object's text). */
static void child_init_caps(struct child *c, const char *version, const char *caps)
{
    char params[512];

    snprintf(params, sizeof(params),
             "{\"protocolVersion\":\"%s\",\"capabilities\":%s,\"clientInfo\":{\"name\":\"t\","
             "\"version\":\"1\"}}",
             version, caps);
    json_decref(child_call(c, 1, "initialize", params, NULL));
    child_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

static int child_stop(struct child *c)
{
    int code = -1;

    rein_proc_close_stdin(c->p);
    assert_rein_ok(rein_proc_wait(c->p, 20000, &code), NULL);
    rein_proc_free(c->p);
    test_rmtree(c->dir);
    free(c->dir);
    return code;
}

static const json_t *result_of(const json_t *m)
{
    const json_t *r = json_object_get(m, "result");

    if (!r) {
        char *t = json_dumps(m, 0);
        print_error("no result: %s\n", t);
        free(t);
        fail();
    }
    return r;
}

static const char *first_text(const json_t *result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

static void stdio_lifecycle_and_tools(void **state)
{
    struct child c;
    json_t *m;
    const json_t *r, *tool;
    size_t i;
    bool seen_echo = false, seen_wipe = false, seen_schema = false;

    (void)state;
    child_start(&c, NULL);
    /* A revision rein does not speak is answered with its newest. */
    m = child_call(&c, 1, "initialize",
                   "{\"protocolVersion\":\"2024-01-01\",\"capabilities\":{},\"clientInfo\":{"
                   "\"name\":\"t\",\"version\":\"1\"}}",
                   NULL);
    r = result_of(m);
    assert_string_equal(json_string_value(json_object_get(r, "protocolVersion")), "2025-11-25");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r, "serverInfo"), "name")), "rein");
    assert_non_null(json_object_get(json_object_get(r, "capabilities"), "tools"));
    assert_non_null(json_object_get(json_object_get(r, "capabilities"), "logging"));
    json_decref(m);
    /* Only one initialize per session. */
    m = child_call(&c, 2, "initialize",
                   "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{}}",
                   NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")),
                     -32600);
    json_decref(m);
    m = child_call(&c, 3, "tools/list", NULL, NULL);
    json_array_foreach(json_object_get(result_of(m), "tools"), i, tool)
    {
        const char *name = json_string_value(json_object_get(tool, "name"));
        const json_t *ann = json_object_get(tool, "annotations");
        assert_non_null(json_string_value(json_object_get(tool, "description")));
        assert_true(json_is_object(json_object_get(tool, "inputSchema")));
        if (strcmp(name, "echo") == 0) {
            seen_echo = true;
            assert_true(json_is_true(json_object_get(ann, "readOnlyHint")));
            assert_true(json_is_false(json_object_get(ann, "destructiveHint")));
        } else if (strcmp(name, "calculator") == 0) {
            /* rein's own tools say what their structured output looks like. */
            const json_t *out = json_object_get(tool, "outputSchema");
            assert_string_equal(json_string_value(json_object_get(out, "type")), "object");
            assert_non_null(json_object_get(json_object_get(out, "properties"), "result"));
        } else if (strcmp(name, "wipe") == 0) {
            seen_wipe = true;
            assert_true(json_is_false(json_object_get(ann, "readOnlyHint")));
            assert_true(json_is_true(json_object_get(ann, "destructiveHint")));
        } else if (strcmp(name, "json_schema_2020_12_tool") == 0) {
            const json_t *s = json_object_get(tool, "inputSchema");
            seen_schema = true;
            assert_string_equal(json_string_value(json_object_get(s, "$schema")),
                                "https://json-schema.org/draft/2020-12/schema");
            assert_non_null(json_object_get(json_object_get(s, "$defs"), "address"));
        }
    }
    assert_true(seen_echo && seen_wipe && seen_schema);
    assert_null(json_object_get(result_of(m), "nextCursor"));
    json_decref(m);
    m = child_call(&c, 4, "tools/list", "{\"cursor\":\"nonsense\"}", NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")),
                     -32602);
    json_decref(m);
    /* The skill folder's resources and prompts, next to rein's own (stdio_resources_prompts_
     * completion has the rest). */
    m = child_call(&c, 5, "resources/list", NULL, NULL);
    assert_true(json_array_size(json_object_get(result_of(m), "resources")) >= 2);
    json_decref(m);
    m = child_call(&c, 6, "resources/templates/list", NULL, NULL);
    assert_true(json_array_size(json_object_get(result_of(m), "resourceTemplates")) >= 1);
    json_decref(m);
    m = child_call(&c, 7, "prompts/list", NULL, NULL);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(result_of(m), "prompts"), 0), "name")),
                        "tool_use_rules");
    json_decref(m);
    m = child_call(&c, 8, "ping", NULL, NULL);
    assert_int_equal(json_object_size(result_of(m)), 0);
    json_decref(m);
    assert_int_equal(child_stop(&c), 0);
}

static void stdio_calls(void **state)
{
    struct child c;
    json_t *m;
    const json_t *r, *sc, *e;

    (void)state;
    child_start(&c, NULL);
    child_init(&c, "2025-06-18");
    m = child_call(&c, 2, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}",
                   NULL);
    assert_string_equal(first_text(result_of(m)), "hi");
    assert_null(json_object_get(result_of(m), "isError"));
    json_decref(m);
    /* Names are exact at the protocol boundary: "Echo" is not echo (-32602, MCP's unknown
     * tool), and nothing runs. */
    m = child_call(&c, 3, "tools/call", "{\"name\":\"Echo\",\"arguments\":{\"text\":\"again\"}}",
                   NULL);
    e = json_object_get(m, "error");
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "\"Echo\""));
    json_decref(m);
    /* Bad arguments: isError, with the invalid payload as text, and the normalized result with
     * the payload in it as structuredContent (the shape every path shows). */
    m = child_call(&c, 4, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":5}}", NULL);
    r = result_of(m);
    assert_true(json_is_true(json_object_get(r, "isError")));
    sc = json_object_get(r, "structuredContent");
    assert_string_equal(json_string_value(json_object_get(sc, "tool")), "echo");
    assert_string_equal(json_string_value(json_object_get(json_object_get(sc, "error"), "code")),
                        "invalid_arguments");
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(json_object_get(sc, "invalid_payload"), "errors"), 0),
            "path")),
        "/text");
    assert_non_null(strstr(first_text(r), "\"receivedArgs\":{\"text\":5}"));
    json_decref(m);
    /* An unknown tool is a JSON-RPC error whose data lists the tools. */
    m = child_call(&c, 5, "tools/call", "{\"name\":\"nope_nothing\",\"arguments\":{}}", NULL);
    e = json_object_get(m, "error");
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
    assert_true(json_array_size(json_object_get(json_object_get(e, "data"), "available_tools")) >
                4);
    json_decref(m);
    m = child_call(&c, 6, "tools/call", "{\"arguments\":{}}", NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")),
                     -32602);
    json_decref(m);
    /* A skill that fails: isError with the normalized error. */
    m = child_call(&c, 7, "tools/call", "{\"name\":\"test_error_handling\"}", NULL);
    r = result_of(m);
    assert_true(json_is_true(json_object_get(r, "isError")));
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(r, "structuredContent"), "error"), "message")),
        "This tool intentionally returns an error for testing");
    json_decref(m);
    /* MCP content from a skill passes through. */
    m = child_call(&c, 8, "tools/call", "{\"name\":\"test_multiple_content_types\"}", NULL);
    r = result_of(m);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "content"), 1), "type")),
                        "image");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(r, "content"), 2), "resource"), "uri")),
        "test://mixed-content-resource");
    json_decref(m);
    /* An object output: JSON text plus structuredContent. */
    m = child_call(&c, 9, "tools/call",
                   "{\"name\":\"calculator\",\"arguments\":{\"expression\":\"2*(3+4)\"}}", NULL);
    r = result_of(m);
    assert_true(json_is_object(json_object_get(r, "structuredContent")));
    assert_non_null(strstr(first_text(r), "14"));
    json_decref(m);
    assert_int_equal(child_stop(&c), 0);
}

/* The error code of m, or 0. */
static int err_code(const json_t *m)
{
    return (int)json_integer_value(json_object_get(json_object_get(m, "error"), "code"));
}

/* The text of the first contents of a resources/read answer. */
static const char *contents_text(const json_t *m)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result_of(m), "contents"), 0), "text"));
}

/* The nextCursor of m as a params object (a static buffer). */
static const char *next_page(const json_t *m)
{
    static char params[600];

    snprintf(params, sizeof(params), "{\"cursor\":\"%s\"}",
             json_string_value(json_object_get(result_of(m), "nextCursor")));
    return params;
}

/*
 * Issue 20, the whole server side: resources (declared ones, files under the roots, stored
 * conversations as rein:// resources, templates, subscriptions with update notifications),
 * prompts (rein's own and templates from a folder) and completions.
 */
static void stdio_resources_prompts_completion(void **state)
{
    char *root = test_tmpdir(), store_url[4300], uri[4400], params[4600], conv_id[REIN_ID_MAX];
    const char *env[] = {"REIN_STORE", store_url, NULL};
    const char *msg = "{\"role\":\"user\",\"content\":\"hello there\"}";
    struct child c;
    rein_store *store;
    rein_error err;
    json_t *m;
    const json_t *r;
    char *page;
    bool found = false;

    (void)state;
    free(test_write_file(root, "notes.txt", "first version\n"));
    free(test_write_file(root, "pixel.png", "\x89PNG\r\n\x1a\n\x01\x02"));
    snprintf(store_url, sizeof(store_url), "sqlite:%s/store.db", root);
    assert_rein_ok(rein_store_open(store_url, NULL, &store, &err), &err);
    assert_rein_ok(rein_store_conv_create(store, NULL, "a talk", NULL, conv_id, &err), &err);
    assert_rein_ok(rein_store_message_append(store, conv_id, msg, strlen(msg), NULL, NULL, &err),
                   &err);
    child_start_root(&c, env, root);
    m = child_call(&c, 1, "initialize",
                   "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{"
                   "\"name\":\"t\",\"version\":\"1\"}}",
                   NULL);
    r = json_object_get(result_of(m), "capabilities");
    assert_true(json_is_true(json_object_get(json_object_get(r, "resources"), "subscribe")));
    assert_non_null(json_object_get(r, "completions"));
    assert_non_null(json_object_get(r, "prompts"));
    json_decref(m);
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");

    /* Listing walks the declared resources, then the files, then the conversations. */
    m = child_call(&c, 2, "resources/list", NULL, NULL);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(result_of(m), "resources"), 0), "uri")),
                        "test://static-text");
    snprintf(params, sizeof(params), "%s", next_page(m));
    json_decref(m);
    m = child_call(&c, 3, "resources/list", params, NULL);
    page = json_dumps(result_of(m), 0);
    assert_non_null(strstr(page, "notes.txt"));
    assert_non_null(strstr(page, "\"mimeType\": \"image/png\""));
    free(page);
    snprintf(params, sizeof(params), "%s", next_page(m));
    json_decref(m);
    m = child_call(&c, 4, "resources/list", params, NULL);
    page = json_dumps(result_of(m), 0);
    snprintf(uri, sizeof(uri), "rein://conversations/%s/transcript", conv_id);
    assert_non_null(strstr(page, uri));
    free(page);
    json_decref(m);
    m = child_call(&c, 5, "resources/list", "{\"cursor\":\"zz\"}", NULL);
    assert_int_equal(err_code(m), -32602);
    json_decref(m);

    /* Reading: declared text, a template, files (text and binary), a conversation. */
    m = child_call(&c, 6, "resources/read", "{\"uri\":\"test://static-text\"}", NULL);
    assert_string_equal(contents_text(m), "This is the content of the static text resource.");
    json_decref(m);
    m = child_call(&c, 7, "resources/read", "{\"uri\":\"test://template/123/data\"}", NULL);
    assert_string_equal(contents_text(m),
                        "{\"id\":\"123\",\"templateTest\":true,\"data\":\"Data for ID: 123\"}");
    json_decref(m);
    snprintf(params, sizeof(params), "{\"uri\":\"file://%s/notes.txt\"}", root);
    m = child_call(&c, 8, "resources/read", params, NULL);
    assert_string_equal(contents_text(m), "first version\n");
    json_decref(m);
    snprintf(params, sizeof(params), "{\"uri\":\"file://%s/pixel.png\"}", root);
    m = child_call(&c, 9, "resources/read", params, NULL);
    r = json_array_get(json_object_get(result_of(m), "contents"), 0);
    assert_string_equal(json_string_value(json_object_get(r, "blob")), "iVBORw0KGgoBAg==");
    assert_string_equal(json_string_value(json_object_get(r, "mimeType")), "image/png");
    json_decref(m);
    snprintf(params, sizeof(params), "{\"uri\":\"%s\"}", uri);
    m = child_call(&c, 10, "resources/read", params, NULL);
    assert_non_null(strstr(contents_text(m), "hello there"));
    json_decref(m);
    /* Outside the roots (also through ..) is the same as not there, with the URI as data. */
    snprintf(params, sizeof(params), "{\"uri\":\"file://%s/../../etc/passwd\"}", root);
    m = child_call(&c, 11, "resources/read", params, NULL);
    assert_int_equal(err_code(m), -32002);
    json_decref(m);
    m = child_call(&c, 12, "resources/read", "{\"uri\":\"file:///etc/passwd\"}", NULL);
    assert_int_equal(err_code(m), -32002);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(m, "error"), "data"), "uri")),
                        "file:///etc/passwd");
    json_decref(m);
    m = child_call(&c, 13, "resources/templates/list", NULL, NULL);
    page = json_dumps(result_of(m), 0);
    assert_non_null(strstr(page, "rein://conversations/{id}/ledger"));
    assert_non_null(strstr(page, "test://template/{id}/data"));
    free(page);
    json_decref(m);

    /* Subscriptions: the file changes, and the conversation gets a message. */
    snprintf(params, sizeof(params), "{\"uri\":\"file://%s/notes.txt\"}", root);
    json_decref(child_call(&c, 14, "resources/subscribe", params, NULL));
    snprintf(params, sizeof(params), "{\"uri\":\"%s\"}", uri);
    json_decref(child_call(&c, 15, "resources/subscribe", params, NULL));
    json_decref(child_call(&c, 16, "resources/subscribe", "{\"uri\":\"test://watched\"}", NULL));
    free(test_write_file(root, "notes.txt", "second version, longer\n"));
    msg = "{\"role\":\"assistant\",\"content\":\"hi\"}";
    assert_rein_ok(rein_store_message_append(store, conv_id, msg, strlen(msg), NULL, NULL, &err),
                   &err);
    for (int seen = 0; seen < 2; seen++) {
        json_t *n = child_recv(&c, 10000);
        assert_non_null(n);
        const char *nuri = json_string_value(json_object_get(json_object_get(n, "params"), "uri"));
        assert_string_equal(json_string_value(json_object_get(n, "method")),
                            "notifications/resources/updated");
        found = found || strcmp(nuri, uri) == 0;
        json_decref(n);
    }
    assert_true(found);
    json_decref(child_call(&c, 17, "resources/unsubscribe", params, NULL));

    /* Prompts: rein's own, templates from the folder, the errors MCP names. */
    m = child_call(&c, 18, "prompts/list", NULL, NULL);
    page = json_dumps(result_of(m), 0);
    assert_non_null(strstr(page, "\"review_tool_call\""));
    assert_non_null(strstr(page, "\"test_prompt_with_arguments\""));
    assert_null(strstr(page, "\"values\"")); /* completions are not part of the list */
    free(page);
    json_decref(m);
    m = child_call(&c, 19, "prompts/get",
                   "{\"name\":\"test_prompt_with_arguments\",\"arguments\":{\"arg1\":\"a\","
                   "\"arg2\":\"b\"}}",
                   NULL);
    r = json_array_get(json_object_get(result_of(m), "messages"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "content"), "text")),
                        "Prompt with arguments: arg1='a', arg2='b'");
    json_decref(m);
    m = child_call(&c, 20, "prompts/get",
                   "{\"name\":\"test_prompt_with_arguments\",\"arguments\":{\"arg1\":\"a\"}}",
                   NULL);
    assert_int_equal(err_code(m), -32602);
    json_decref(m);
    m = child_call(&c, 21, "prompts/get", "{\"name\":\"nope\"}", NULL);
    assert_int_equal(err_code(m), -32602);
    json_decref(m);
    m = child_call(&c, 22, "prompts/get",
                   "{\"name\":\"review_tool_call\",\"arguments\":{\"request\":\"delete my note\","
                   "\"tool\":\"delete_note\",\"arguments\":\"{}\"}}",
                   NULL);
    r = json_array_get(json_object_get(result_of(m), "messages"), 0);
    const char *q = json_string_value(json_object_get(json_object_get(r, "content"), "text"));
    assert_non_null(strstr(q, "Answer YES or NO"));
    assert_non_null(strstr(q, "it is destructive"));
    json_decref(m);

    /* Completion: a prompt's declared values, tool names, conversation ids. */
    m = child_call(&c, 23, "completion/complete",
                   "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"test_prompt_with_arguments\"},"
                   "\"argument\":{\"name\":\"arg1\",\"value\":\"hel\"}}",
                   NULL);
    page = json_dumps(json_object_get(result_of(m), "completion"), JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(page, "{\"hasMore\":false,\"total\":2,\"values\":[\"hello\",\"help\"]}");
    free(page);
    json_decref(m);
    m = child_call(&c, 24, "completion/complete",
                   "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"review_tool_call\"},"
                   "\"argument\":{\"name\":\"tool\",\"value\":\"ec\"}}",
                   NULL);
    assert_string_equal(
        json_string_value(json_array_get(
            json_object_get(json_object_get(result_of(m), "completion"), "values"), 0)),
        "echo");
    json_decref(m);
    snprintf(params, sizeof(params),
             "{\"ref\":{\"type\":\"ref/resource\",\"uri\":\"rein://conversations/{id}/ledger\"},"
             "\"argument\":{\"name\":\"id\",\"value\":\"%.6s\"}}",
             conv_id);
    m = child_call(&c, 25, "completion/complete", params, NULL);
    assert_string_equal(
        json_string_value(json_array_get(
            json_object_get(json_object_get(result_of(m), "completion"), "values"), 0)),
        conv_id);
    json_decref(m);
    m = child_call(&c, 26, "completion/complete",
                   "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"nope\"},\"argument\":{"
                   "\"name\":\"x\",\"value\":\"\"}}",
                   NULL);
    assert_int_equal(err_code(m), -32602);
    json_decref(m);
    assert_int_equal(child_stop(&c), 0);
    rein_store_free(store);
    test_rmtree(root);
    free(root);
}

/* Issue 20: "delete_notes" and "Delete-Note" ran delete_note, bypassing a host that allows or
 * denies tools by exact name. Only a name tools/list gave runs a tool. */
static void stdio_exact_names(void **state)
{
    const char *near[] = {"delete_notes", "Delete-Note",           "deleteNote",
                          "DELETE_NOTE",  "functions.delete_note", "delete_note "};
    struct child c;
    char params[256], marker[4200];
    size_t len;
    json_t *m;

    (void)state;
    child_start(&c, NULL);
    child_init(&c, "2025-11-25");
    snprintf(marker, sizeof(marker), "%s/deleted", c.dir);
    for (size_t i = 0; i < sizeof(near) / sizeof(near[0]); i++) {
        snprintf(params, sizeof(params), "{\"name\":\"%s\",\"arguments\":{}}", near[i]);
        m = child_call(&c, (int)i + 2, "tools/call", params, NULL);
        const json_t *e = json_object_get(m, "error");
        assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
        assert_null(json_object_get(m, "result"));
        json_decref(m);
    }
    assert_null(test_read_file(marker, &len));
    /* The exact name runs it. */
    m = child_call(&c, 20, "tools/call", "{\"name\":\"delete_note\",\"arguments\":{}}", NULL);
    assert_null(json_object_get(result_of(m), "isError"));
    json_decref(m);
    char *text = test_read_file(marker, &len);
    assert_non_null(text);
    assert_string_equal(text, "ran\n");
    free(text);
    assert_int_equal(child_stop(&c), 0);
}

static void stdio_bad_input(void **state)
{
    struct child c;
    json_t *m;
    char *big;
    size_t n = (size_t)5 << 20;

    (void)state;
    child_start(&c, NULL);
    m = child_call(&c, 1, "tools/list", NULL, NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")),
                     -32600);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(m, "error"), "message")),
               "initialize first"));
    json_decref(m);
    child_init(&c, "2025-11-25");
    child_send(&c, "");
    child_send(&c, "   ");
    child_send(&c, "this is not json");
    m = child_recv(&c, 10000);
    assert_true(json_is_null(json_object_get(m, "id")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")),
                     -32700);
    json_decref(m);
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\",\"params\":[]}");
    m = child_recv(&c, 10000);
    assert_int_equal(json_integer_value(json_object_get(m, "id")), 9);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")),
                     -32600);
    json_decref(m);
    child_send(&c, "[{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}]");
    m = child_recv(&c, 10000);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")),
                     -32600);
    json_decref(m);
    /* A response (rein asked nothing) and an unknown notification: ignored, no answer. */
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":77,\"result\":{}}");
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}");
    m = child_call(&c, 11, "no/such/method", NULL, NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")),
                     -32601);
    json_decref(m);
    m = child_call(&c, 12, "logging/setLevel", "{\"level\":\"loud\"}", NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")),
                     -32602);
    json_decref(m);
    /* An oversized line is refused and skipped; the session goes on. */
    big = malloc(n + 1);
    assert_non_null(big);
    memset(big, 'x', n);
    big[n] = '\0';
    child_send(&c, big);
    free(big);
    m = child_recv(&c, 20000);
    assert_non_null(strstr(
        json_string_value(json_object_get(json_object_get(m, "error"), "message")), "larger than"));
    json_decref(m);
    m = child_call(&c, 13, "ping", NULL, NULL);
    assert_non_null(json_object_get(m, "result"));
    json_decref(m);
    assert_int_equal(child_stop(&c), 0);
}

static int error_of(const json_t *m)
{
    return (int)json_integer_value(json_object_get(json_object_get(m, "error"), "code"));
}

/* Ids echoed exactly, ids and methods of the wrong type, broken responses left unanswered,
 * and tools/call arguments that are not an object. */
static void stdio_jsonrpc_edges(void **state)
{
    struct child c;
    json_t *m;

    (void)state;
    child_start(&c, NULL);
    child_init(&c, "2025-11-25");
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}");
    m = child_recv(&c, 10000);
    assert_true(json_is_integer(json_object_get(m, "id")));
    assert_int_equal(json_integer_value(json_object_get(m, "id")), 0);
    assert_non_null(json_object_get(m, "result"));
    json_decref(m);
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":\"0 x\\u00e9\",\"method\":\"ping\"}");
    m = child_recv(&c, 10000);
    assert_string_equal(json_string_value(json_object_get(m, "id")), "0 x\xc3\xa9");
    json_decref(m);
    /* Ids of the wrong type: -32600 with a null id. */
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}");
    m = child_recv(&c, 10000);
    assert_true(json_is_null(json_object_get(m, "id")));
    assert_int_equal(error_of(m), -32600);
    json_decref(m);
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":2.5,\"method\":\"ping\"}");
    m = child_recv(&c, 10000);
    assert_true(json_is_null(json_object_get(m, "id")));
    assert_int_equal(error_of(m), -32600);
    json_decref(m);
    /* A method that is not a string, a missing or wrong jsonrpc: -32600 with the id. */
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":[\"ping\"]}");
    m = child_recv(&c, 10000);
    assert_int_equal(json_integer_value(json_object_get(m, "id")), 3);
    assert_int_equal(error_of(m), -32600);
    json_decref(m);
    child_send(&c, "{\"id\":4,\"method\":\"ping\"}");
    m = child_recv(&c, 10000);
    assert_int_equal(json_integer_value(json_object_get(m, "id")), 4);
    assert_int_equal(error_of(m), -32600);
    json_decref(m);
    child_send(&c, "{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}");
    m = child_recv(&c, 10000);
    assert_int_equal(error_of(m), -32600);
    json_decref(m);
    /* Responses, well-formed or not, and notifications are never answered: the next message
     * is the answer to ping 20 (child_wait fails on any other response). */
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":\"never-sent\",\"result\":{}}");
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":\"boom\"}");
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}");
    child_send(&c, "{\"id\":6,\"result\":{}}");
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
                   "\"progressToken\":1,\"progress\":1}}");
    m = child_call(&c, 20, "ping", NULL, NULL);
    assert_non_null(json_object_get(m, "result"));
    json_decref(m);
    /* arguments must be an object (null counts as none). */
    m = child_call(&c, 21, "tools/call",
                   "{\"name\":\"echo\",\"arguments\":\"{\\\"text\\\":\\\"hi\\\"}\"}", NULL);
    assert_int_equal(error_of(m), -32602);
    assert_non_null(strstr(
        json_string_value(json_object_get(json_object_get(m, "error"), "message")), "object"));
    json_decref(m);
    m = child_call(&c, 22, "tools/call", "{\"name\":\"echo\",\"arguments\":[1]}", NULL);
    assert_int_equal(error_of(m), -32602);
    json_decref(m);
    m = child_call(&c, 23, "tools/call", "{\"name\":7,\"arguments\":{}}", NULL);
    assert_int_equal(error_of(m), -32602);
    json_decref(m);
    m = child_call(&c, 24, "tools/call", "{\"name\":\"test_simple_text\",\"arguments\":null}",
                   NULL);
    assert_non_null(first_text(result_of(m)));
    json_decref(m);
    assert_int_equal(child_stop(&c), 0);
}

static int count_method(const json_t *notes, const char *method)
{
    const json_t *n;
    size_t i;
    int k = 0;

    json_array_foreach(notes, i, n)
    {
        k += strcmp(json_string_value(json_object_get(n, "method")), method) == 0;
    }
    return k;
}

static void stdio_progress_and_logging(void **state)
{
    struct child c;
    json_t *m, *notes = json_array();
    const json_t *n;
    size_t i;
    double last = -1;

    (void)state;
    child_start(&c, NULL);
    child_init(&c, "2025-11-25");
    m = child_call(&c, 2, "logging/setLevel", "{\"level\":\"debug\"}", NULL);
    assert_int_equal(json_object_size(result_of(m)), 0);
    json_decref(m);
    m = child_call(&c, 3, "tools/call", "{\"name\":\"test_tool_with_logging\"}", notes);
    json_decref(m);
    assert_int_equal(count_method(notes, "notifications/message"), 3);
    n = json_array_get(notes, 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(n, "params"), "data")),
                        "Tool processing data");
    json_array_clear(notes);
    /* Above the level: no log lines reach the client. */
    json_decref(child_call(&c, 4, "logging/setLevel", "{\"level\":\"warning\"}", NULL));
    json_decref(child_call(&c, 5, "tools/call", "{\"name\":\"test_tool_with_logging\"}", notes));
    assert_int_equal(count_method(notes, "notifications/message"), 0);
    /* Progress goes to requests with a token, strictly increasing. */
    json_decref(child_call(&c, 6, "tools/call",
                           "{\"name\":\"test_tool_with_progress\",\"_meta\":{\"progressToken\":"
                           "\"tok-1\"}}",
                           notes));
    assert_int_equal(count_method(notes, "notifications/progress"), 3);
    json_array_foreach(notes, i, n)
    {
        const json_t *p = json_object_get(n, "params");
        assert_string_equal(json_string_value(json_object_get(p, "progressToken")), "tok-1");
        assert_true(json_number_value(json_object_get(p, "progress")) > last);
        assert_true(json_number_value(json_object_get(p, "total")) == 100);
        last = json_number_value(json_object_get(p, "progress"));
    }
    json_array_clear(notes);
    json_decref(child_call(&c, 7, "tools/call", "{\"name\":\"test_tool_with_progress\"}", notes));
    assert_int_equal(json_array_size(notes), 0);
    json_decref(notes);
    assert_int_equal(child_stop(&c), 0);
}

/* A silent call gets heartbeat progress; notifications/cancelled stops it and its process. */
static void stdio_cancel_and_heartbeat(void **state)
{
    static const char *const env[] = {"REIN_MCP_PROGRESS_MS", "100", NULL};
    struct child c;
    json_t *m;
    int beats = 0;
    double last = -1;

    (void)state;
    child_start(&c, env);
    child_init(&c, "2025-11-25");
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":\"call-a\",\"method\":\"tools/call\",\"params\":{"
                   "\"name\":\"hang\",\"_meta\":{\"progressToken\":7}}}");
    pid_t pid = hang_pid(c.dir);
    while (beats < 2) {
        m = child_recv(&c, 10000);
        assert_non_null(m);
        assert_string_equal(json_string_value(json_object_get(m, "method")),
                            "notifications/progress");
        const json_t *p = json_object_get(m, "params");
        assert_int_equal(json_integer_value(json_object_get(p, "progressToken")), 7);
        assert_true(json_number_value(json_object_get(p, "progress")) > last);
        last = json_number_value(json_object_get(p, "progress"));
        beats++;
        json_decref(m);
    }
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                   "\"requestId\":\"call-a\",\"reason\":\"user stopped it\"}}");
    expect_gone(pid);
    /* No response is sent for a cancelled request: the next answer is the ping's. */
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"ping\"}");
    for (;;) {
        m = child_recv(&c, 10000);
        assert_non_null(m);
        assert_null(json_object_get(m, "result") ? NULL : json_object_get(m, "error"));
        if (json_integer_value(json_object_get(m, "id")) == 99) {
            json_decref(m);
            break;
        }
        assert_string_equal(json_string_value(json_object_get(m, "method")),
                            "notifications/progress");
        json_decref(m);
    }
    assert_int_equal(child_stop(&c), 0);
}

/* The next request rein sends the client (skipping notifications); its id is copied to id. */
static json_t *child_request(struct child *c, char *id, size_t size)
{
    for (;;) {
        json_t *m = child_recv(c, 20000);
        assert_non_null(m);
        if (json_object_get(m, "id") && json_object_get(m, "method")) {
            char *t = json_dumps(json_object_get(m, "id"), JSON_ENCODE_ANY);
            snprintf(id, size, "%s", t);
            free(t);
            return m;
        }
        assert_null(json_object_get(m, "id")); /* no response before the questions */
        json_decref(m);
    }
}

/* The answers a skill_proc "ask" skill printed, from its tools/call response. */
static const json_t *skill_answers(const json_t *m)
{
    return json_object_get(
        json_object_get(json_object_get(result_of(m), "structuredContent"), "output"), "answers");
}

/* A process skill asks the client (decision 0031): its requests reach the client as MCP
 * requests, in order, and the client's answers reach the skill, which returns them. */
static void stdio_skill_asks_the_client(void **state)
{
    static const char *const methods[] = {"sampling/createMessage", "elicitation/create",
                                          "roots/list"};
    static const char *const results[] = {
        "{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"sampled\"},"
        "\"model\":\"m\"}",
        "{\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}",
        "{\"roots\":[{\"uri\":\"file:///srv/data\",\"name\":\"data\"}]}"};
    struct child c;
    char id[64], line[1024];
    json_t *m;

    (void)state;
    child_start(&c, NULL);
    child_init_caps(&c, "2025-11-25", "{\"sampling\":{},\"elicitation\":{},\"roots\":{}}");
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
                   "\"name\":\"asker\",\"arguments\":{}}}");
    for (int i = 0; i < 3; i++) {
        m = child_request(&c, id, sizeof(id));
        assert_string_equal(json_string_value(json_object_get(m, "method")), methods[i]);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "params"), "asked")),
                         i);
        json_decref(m);
        snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}", id,
                 results[i]);
        child_send(&c, line);
    }
    m = child_wait(&c, 2, NULL);
    const json_t *answers = skill_answers(m);
    assert_int_equal(json_array_size(answers), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(answers, 0), "id")), "q0");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(json_array_get(answers, 0), "result"), "content"),
            "text")),
        "sampled");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(json_array_get(answers, 1), "result"), "content"),
            "name")),
        "Ada");
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(
                json_object_get(json_object_get(json_array_get(answers, 2), "result"), "roots"), 0),
            "uri")),
        "file:///srv/data");
    json_decref(m);
    /* The client's error reaches the skill as an error with the client's words (a skill with
     * time to spare: on a loaded machine 700 ms can pass before the question arrives). */
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
                   "\"name\":\"one_asker\",\"arguments\":{}}}");
    json_decref(child_request(&c, id, sizeof(id)));
    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-1,\"message\":\"User "
             "rejected sampling request\"}}",
             id);
    child_send(&c, line);
    m = child_wait(&c, 3, NULL);
    const json_t *e = json_object_get(json_array_get(skill_answers(m), 0), "error");
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32603);
    assert_non_null(
        strstr(json_string_value(json_object_get(e, "message")), "User rejected sampling request"));
    json_decref(m);
    /* A client that does not answer: the call's limit (700 ms) ends the wait and the skill.
     * The question is usually asked first, but on a loaded machine the limit may end the call
     * before the skill got to ask: child_wait takes either order. */
    int64_t t0 = rein_now_ms();
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{"
                   "\"name\":\"slow_asker\",\"arguments\":{}}}");
    m = child_wait(&c, 4, NULL);
    assert_true(json_is_true(json_object_get(result_of(m), "isError")));
    assert_non_null(strstr(first_text(result_of(m)), "timed out"));
    assert_true(rein_now_ms() - t0 < 10000);
    json_decref(m);
    /* notifications/cancelled while the client is asked: no response, and the session goes
     * on (a late answer to the question is ignored). */
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{"
                   "\"name\":\"asker\",\"arguments\":{}}}");
    json_decref(child_request(&c, id, sizeof(id)));
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                   "\"requestId\":5}}");
    snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}", id, results[0]);
    child_send(&c, line);
    m = child_call(&c, 6, "ping", NULL, NULL);
    assert_non_null(result_of(m));
    json_decref(m);
    assert_int_equal(child_stop(&c), 0);
}

/* A client without the capabilities: every question is answered -32601 at once, naming the
 * capability, and nothing is sent to the client. */
static void stdio_skill_asks_a_client_that_cannot_answer(void **state)
{
    struct child c;
    json_t *m;

    (void)state;
    child_start(&c, NULL);
    child_init_caps(&c, "2025-11-25", "{\"experimental\":{}}");
    m = child_call(&c, 2, "tools/call", "{\"name\":\"asker\",\"arguments\":{}}", NULL);
    const json_t *answers = skill_answers(m);
    const json_t *e0 = json_object_get(json_array_get(answers, 0), "error");
    const json_t *e2 = json_object_get(json_array_get(answers, 2), "error");
    assert_int_equal(json_integer_value(json_object_get(e0, "code")), -32601);
    assert_non_null(strstr(json_string_value(json_object_get(e0, "message")),
                           "did not declare the \"sampling\" capability"));
    assert_int_equal(json_integer_value(json_object_get(e2, "code")), -32601);
    assert_non_null(strstr(json_string_value(json_object_get(e2, "message")), "\"roots\""));
    json_decref(m);
    assert_int_equal(child_stop(&c), 0);
}

/* The end of input ends the session: running calls are cancelled and rein exits. */
static void stdio_end_of_input(void **state)
{
    struct child c;
    int64_t t0;

    (void)state;
    child_start(&c, NULL);
    child_init(&c, "2025-11-25");
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                   "\"hang\"}}");
    pid_t pid = hang_pid(c.dir);
    t0 = rein_now_ms();
    char *dir = rein_strdup(c.dir);
    assert_int_equal(child_stop(&c), 0);
    assert_true(rein_now_ms() - t0 < 10000);
    expect_gone(pid);
    rein_free(dir);
}

/* SIGTERM to `rein mcp serve` alone (not its group) while a skill runs: the skill's process
 * and what it started die with rein instead of running on under PID 1. */
static void stdio_sigterm_takes_running_skills_along(void **state)
{
    struct child c;
    int code = -1;

    (void)state;
    child_start(&c, NULL);
    child_init(&c, "2025-11-25");
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                   "\"hang\"}}");
    pid_t pid = hang_pid(c.dir);
    kill(rein_proc_pid(c.p), SIGTERM);
    assert_rein_ok(rein_proc_wait(c.p, 20000, &code), NULL);
    expect_gone(pid);
    rein_proc_free(c.p);
    test_rmtree(c.dir);
    free(c.dir);
}

/* ---- the stateless revision (2026-07-28) ----------------------------------------------------- */

#define META_2026                                                                                  \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"

/* What 2026-07-28 asks of every result, and of the cacheable ones. */
static void assert_modern_result(const json_t *r, const char *scope)
{
    const json_t *info =
        json_object_get(json_object_get(r, "_meta"), "io.modelcontextprotocol/serverInfo");

    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
    assert_non_null(json_string_value(json_object_get(info, "name")));
    assert_non_null(json_string_value(json_object_get(info, "version")));
    if (scope) {
        assert_true(json_is_integer(json_object_get(r, "ttlMs")));
        assert_true(json_integer_value(json_object_get(r, "ttlMs")) >= 0);
        assert_string_equal(json_string_value(json_object_get(r, "cacheScope")), scope);
    } else {
        assert_null(json_object_get(r, "ttlMs"));
    }
}

/* A client of 2026-07-28 over stdio: no initialize; server/discover and every request name the
 * version in _meta; the removed methods are unknown; the legacy handshake still works after. */
#define ALL_CAPS "{\"sampling\":{},\"elicitation\":{},\"roots\":{}}"

/* One round of the asker skill, stateless: answers (a JSON object's members, may be "") and the
 * state of the last round (may be NULL). The result, a new reference. */
static json_t *asker_round(struct child *c, int id, const char *tool, const char *answers,
                           const char *state, const char *caps)
{
    char params[4000];

    snprintf(params, sizeof(params),
             "{\"name\":\"%s\",\"arguments\":{},\"inputResponses\":{%s}%s%s%s,"
             "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
             "\"io.modelcontextprotocol/clientCapabilities\":%s}}",
             tool, answers, state ? ",\"requestState\":\"" : "", state ? state : "",
             state ? "\"" : "", caps);
    return child_call(c, id, "tools/call", params, NULL);
}

/* The one input request of an input-required result, checked; its requestState copied. */
static void expect_input_required(const json_t *m, const char *key, const char *method, char *state,
                                  size_t size)
{
    const json_t *r = result_of(m);
    const json_t *reqs = json_object_get(r, "inputRequests");

    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "input_required");
    assert_int_equal(json_object_size(reqs), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(reqs, key), "method")),
                        method);
    assert_true(json_is_string(json_object_get(r, "requestState")));
    snprintf(state, size, "%s", json_string_value(json_object_get(r, "requestState")));
}

/* 2026-07-28 has no requests from server to client: a stateless call's skill that asks ends
 * the round with an input-required result (SEP-2322); the client retries with the answers
 * (and the requestState, which carries the earlier ones), and the skill runs again, answered at
 * once, until it finishes. A changed state, or one for another call, is -32602; a question
 * whose capability the request did not declare is answered -32601 and never sent. */
static void stdio_input_required_rounds(void **state)
{
    static const char *const sampled =
        "\"q0\":{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"s\"},"
        "\"model\":\"m\"}";
    struct child c;
    char s1[2048], s2[2048], s3[2048], answers[600];
    json_t *m;

    (void)state;
    child_start(&c, NULL);
    m = asker_round(&c, 2, "asker", "", NULL, ALL_CAPS);
    expect_input_required(m, "q0", "sampling/createMessage", s1, sizeof(s1));
    assert_int_equal(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(json_object_get(result_of(m), "inputRequests"), "q0"),
                            "params"),
            "asked")),
        0);
    json_decref(m);
    m = asker_round(&c, 3, "asker", sampled, s1, ALL_CAPS);
    expect_input_required(m, "q1", "elicitation/create", s2, sizeof(s2));
    json_decref(m);
    m = asker_round(&c, 4, "asker", "\"q1\":{\"action\":\"accept\",\"content\":{\"n\":1}}", s2,
                    ALL_CAPS);
    expect_input_required(m, "q2", "roots/list", s3, sizeof(s3));
    json_decref(m);
    /* The last round brings only q2: q0 and q1 come from the state. */
    m = asker_round(&c, 5, "asker", "\"q2\":{\"roots\":[]}", s3, ALL_CAPS);
    const json_t *got = skill_answers(m);
    assert_string_equal(json_string_value(json_object_get(result_of(m), "resultType")), "complete");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(json_array_get(got, 0), "result"), "content"), "text")),
        "s");
    assert_int_equal(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(json_array_get(got, 1), "result"), "content"), "n")),
        1);
    assert_true(
        json_is_array(json_object_get(json_object_get(json_array_get(got, 2), "result"), "roots")));
    json_decref(m);
    /* A changed state, and a state for another tool: -32602, and nothing runs. */
    s3[strlen(s3) / 2] = s3[strlen(s3) / 2] == 'A' ? 'B' : 'A';
    m = asker_round(&c, 6, "asker", "\"q2\":{\"roots\":[]}", s3, ALL_CAPS);
    assert_int_equal(err_code(m), -32602);
    assert_non_null(strstr(
        json_string_value(json_object_get(json_object_get(m, "error"), "message")), "integrity"));
    json_decref(m);
    m = asker_round(&c, 7, "slow_asker", sampled, s2, ALL_CAPS);
    assert_int_equal(err_code(m), -32602);
    json_decref(m);
    /* Only sampling declared: the other two questions are answered -32601 at once. */
    snprintf(answers, sizeof(answers), "%s", sampled);
    m = asker_round(&c, 8, "asker", answers, NULL, "{\"sampling\":{}}");
    got = skill_answers(m);
    assert_non_null(json_object_get(json_array_get(got, 0), "result"));
    assert_int_equal(json_integer_value(
                         json_object_get(json_object_get(json_array_get(got, 1), "error"), "code")),
                     -32601);
    assert_int_equal(json_integer_value(
                         json_object_get(json_object_get(json_array_get(got, 2), "error"), "code")),
                     -32601);
    json_decref(m);
    assert_int_equal(child_stop(&c), 0);
}

/* One round of "asker" by a new `rein mcp serve` with env: the state it gives (into out, when
 * not NULL) after answering the first question, or the error code when it refuses state. */
static int state_round(const char *const *env, const char *state, char *out, size_t size)
{
    static const char *const sampled =
        "\"q0\":{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"s\"},"
        "\"model\":\"m\"}";
    struct child c;
    json_t *m;
    int code = 0;

    child_start(&c, env);
    m = asker_round(&c, 2, "asker", state ? sampled : "", state, ALL_CAPS);
    if (json_object_get(m, "error"))
        code = err_code(m);
    else
        expect_input_required(m, state ? "q1" : "q0",
                              state ? "elicitation/create" : "sampling/createMessage", out, size);
    json_decref(m);
    assert_int_equal(child_stop(&c), 0);
    return code;
}

/* The requestState key outlived neither a restart nor a second replica (it was random per
 * process): it is kept in the state folder (mode 0600), or derived from REIN_MCP_STATE_SECRET. */
static void request_state_across_servers(void **state)
{
    char *dir = test_tmpdir(), *other = test_tmpdir(), path[4200], s1[2048], s2[2048];
    const char *const kept[] = {"REIN_STATE_DIR", dir, NULL};
    const char *const shared_a[] = {"REIN_STATE_DIR", dir, "REIN_MCP_STATE_SECRET", "one", NULL};
    const char *const shared_b[] = {"REIN_STATE_DIR", other, "REIN_MCP_STATE_SECRET", "one", NULL};
    const char *const foreign[] = {"REIN_STATE_DIR", dir, "REIN_MCP_STATE_SECRET", "two", NULL};
    const char *const elsewhere[] = {"REIN_STATE_DIR", other, NULL};
    struct stat st;

    (void)state;
    /* A restart: the second server reads the key the first one kept. */
    assert_int_equal(state_round(kept, NULL, s1, sizeof(s1)), 0);
    snprintf(path, sizeof(path), "%s/mcp-request-state.key", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(state_round(kept, s1, s2, sizeof(s2)), 0);
    /* A server with another key (another folder) refuses it. */
    assert_int_equal(state_round(elsewhere, s1, NULL, 0), -32602);
    /* A key file others can read is not used (a random key instead). */
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(state_round(kept, s1, NULL, 0), -32602);
    assert_int_equal(chmod(path, 0600), 0);
    /* Replicas sharing a secret accept each other's states; another secret does not. */
    assert_int_equal(state_round(shared_a, NULL, s1, sizeof(s1)), 0);
    assert_int_equal(state_round(shared_b, s1, s2, sizeof(s2)), 0);
    assert_int_equal(state_round(foreign, s1, NULL, 0), -32602);
    test_rmtree(dir);
    test_rmtree(other);
    free(dir);
    free(other);
}

/* One stateless prompts/get of test_prompt_with_arguments with args and inputResponses (JSON
 * members' text, may be "") from a client declaring caps. */
static json_t *prompt_round(struct child *c, int id, const char *args, const char *responses,
                            const char *caps)
{
    char params[2000];

    snprintf(params, sizeof(params),
             "{\"name\":\"test_prompt_with_arguments\",\"arguments\":{%s},"
             "\"inputResponses\":{%s},\"_meta\":{"
             "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
             "\"io.modelcontextprotocol/clientCapabilities\":%s}}",
             args, responses, caps);
    return child_call(c, id, "prompts/get", params, NULL);
}

/* SEP-2322 beyond tools: a prompt template's missing required arguments are asked of a
 * stateless client that declares elicitation (one form, its fields described, a listed
 * argument's values as choices), and its retry with the answer gets the prompt. Without the
 * capability, or in a session, a missing argument is still -32602. */
static void stdio_prompt_asks_for_arguments(void **state)
{
    struct child c;
    const json_t *r, *ask, *schema;
    json_t *m;

    (void)state;
    child_start(&c, NULL);
    m = prompt_round(&c, 2, "\"arg2\":\"two\"", "", "{\"elicitation\":{}}");
    r = result_of(m);
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "input_required");
    ask = json_object_get(json_object_get(r, "inputRequests"), "prompt_arguments");
    assert_string_equal(json_string_value(json_object_get(ask, "method")), "elicitation/create");
    schema = json_object_get(json_object_get(ask, "params"), "requestedSchema");
    assert_int_equal(json_object_size(json_object_get(schema, "properties")), 1); /* arg2 given */
    assert_string_equal(json_string_value(json_array_get(json_object_get(schema, "required"), 0)),
                        "arg1");
    assert_int_equal(json_array_size(json_object_get(
                         json_object_get(json_object_get(schema, "properties"), "arg1"), "enum")),
                     3);
    assert_null(json_object_get(r, "messages"));
    json_decref(m);
    /* The retry brings the form's answer. */
    m = prompt_round(
        &c, 3, "\"arg2\":\"two\"",
        "\"prompt_arguments\":{\"action\":\"accept\",\"content\":{\"arg1\":\"hello\"}}",
        "{\"elicitation\":{}}");
    r = result_of(m);
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(r, "messages"), 0), "content"), "text")),
        "Prompt with arguments: arg1='hello', arg2='two'");
    json_decref(m);
    /* Declined: the prompt cannot be made. */
    m = prompt_round(&c, 4, "", "\"prompt_arguments\":{\"action\":\"decline\"}",
                     "{\"elicitation\":{}}");
    assert_int_equal(err_code(m), -32602);
    assert_non_null(strstr(
        json_string_value(json_object_get(json_object_get(m, "error"), "message")), "decline"));
    json_decref(m);
    /* No elicitation declared: as before. */
    m = prompt_round(&c, 5, "", "", "{}");
    assert_int_equal(err_code(m), -32602);
    json_decref(m);
    /* Every argument given: nothing is asked. */
    m = prompt_round(&c, 6, "\"arg1\":\"a\",\"arg2\":\"b\"", "", "{\"elicitation\":{}}");
    assert_string_equal(json_string_value(json_object_get(result_of(m), "resultType")), "complete");
    json_decref(m);
    /* A session's client (2025-11-25) without elicitation: -32602, as before. */
    child_init(&c, "2025-11-25");
    m = child_call(&c, 7, "prompts/get", "{\"name\":\"test_prompt_with_arguments\"}", NULL);
    assert_int_equal(err_code(m), -32602);
    json_decref(m);
    assert_int_equal(child_stop(&c), 0);
}

/* A prompts/get that lacks arg1 from a session client that declared elicitation: the request
 * rein sends it, checked, and the id to answer it by. */
static void expect_prompt_form(struct child *c, int id, char *ask_id, size_t size)
{
    char line[512];
    json_t *m;
    const json_t *schema;

    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"prompts/get\",\"params\":{"
             "\"name\":\"test_prompt_with_arguments\",\"arguments\":{\"arg2\":\"two\"}}}",
             id);
    child_send(c, line);
    m = child_request(c, ask_id, size);
    assert_string_equal(json_string_value(json_object_get(m, "method")), "elicitation/create");
    schema = json_object_get(json_object_get(m, "params"), "requestedSchema");
    assert_int_equal(json_object_size(json_object_get(schema, "properties")), 1); /* arg2 given */
    assert_string_equal(json_string_value(json_array_get(json_object_get(schema, "required"), 0)),
                        "arg1");
    json_decref(m);
}

/* One round: the prompts/get with this id, its form, and the client's answer to the form
 * (the members after "id" of a JSON-RPC response); returns rein's answer to the prompts/get. */
static json_t *prompt_form_round(struct child *c, int id, const char *answer)
{
    char ask_id[64], line[512];

    expect_prompt_form(c, id, ask_id, sizeof(ask_id));
    snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":%s,%s}", ask_id, answer);
    child_send(c, line);
    return child_wait(c, id, NULL);
}

/* m is the error -32602 and its message says says. */
static void expect_not_given(json_t *m, const char *says)
{
    assert_int_equal(err_code(m), -32602);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(m, "error"), "message")), says));
    json_decref(m);
}

/* A client with a session (2025-06-18, 2025-11-25) that declared elicitation is asked for a
 * prompt's missing required arguments with elicitation/create during its prompts/get; a
 * declined or cancelled form, or a client's error, is -32602, and a cancelled request gets no
 * answer. */
static void stdio_prompt_asks_session_client(void **state)
{
    static const char *const versions[] = {"2025-06-18", "2025-11-25"};
    char id[64];
    struct child c;
    json_t *m;

    (void)state;
    for (size_t v = 0; v < 2; v++) {
        child_start(&c, NULL);
        child_init_caps(&c, versions[v], "{\"elicitation\":{}}");
        m = prompt_form_round(
            &c, 2, "\"result\":{\"action\":\"accept\",\"content\":{\"arg1\":\"hello\"}}");
        assert_string_equal(
            json_string_value(json_object_get(
                json_object_get(json_array_get(json_object_get(result_of(m), "messages"), 0),
                                "content"),
                "text")),
            "Prompt with arguments: arg1='hello', arg2='two'");
        json_decref(m);
        expect_not_given(prompt_form_round(&c, 3, "\"result\":{\"action\":\"decline\"}"),
                         "decline");
        expect_not_given(
            prompt_form_round(&c, 4, "\"error\":{\"code\":-32000,\"message\":\"no person here\"}"),
            "no person here");
        /* Cancelled while asked: no answer, and the session goes on. */
        expect_prompt_form(&c, 5, id, sizeof(id));
        child_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                       "\"params\":{\"requestId\":5}}");
        m = child_call(&c, 6, "ping", NULL, NULL); /* fails on any response to 5 */
        json_decref(m);
        /* ... and so does this round */
        expect_not_given(prompt_form_round(&c, 7, "\"result\":{\"action\":\"cancel\"}"), "cancel");
        assert_int_equal(child_stop(&c), 0);
    }
}

/* 2026-07-28's subscriptions/listen over stdio: acknowledged first (what rein honours),
 * resources/updated for the subscribed file with the subscription's id, other requests served
 * meanwhile, and notifications/cancelled ends it with no response. */
static void stdio_subscriptions_listen(void **state)
{
    char *root = test_tmpdir(), line[4096];
    struct child c;
    json_t *m;
    const json_t *p;

    (void)state;
    free(test_write_file(root, "notes.txt", "first\n"));
    child_start_root(&c, NULL, root);
    m = child_call(&c, 3, "subscriptions/listen", "{" META_2026 "}", NULL);
    assert_int_equal(err_code(m), -32602);
    json_decref(m);
    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":\"sub-1\",\"method\":\"subscriptions/listen\","
             "\"params\":{\"notifications\":{\"toolsListChanged\":true,\"promptsListChanged\":"
             "true,\"resourceSubscriptions\":[\"file://%s/notes.txt\"]}," META_2026 "}}",
             root);
    child_send(&c, line);
    for (;;) {
        m = child_recv(&c, 10000);
        assert_non_null(m);
        assert_null(json_object_get(m, "id")); /* no response: the stream stays open */
        p = json_object_get(m, "params");
        if (strcmp(json_string_value(json_object_get(json_object_get(p, "_meta"),
                                                     "io.modelcontextprotocol/subscriptionId"))
                       ?: "",
                   "sub-1") == 0)
            break;
        json_decref(m);
    }
    assert_string_equal(json_string_value(json_object_get(m, "method")),
                        "notifications/subscriptions/acknowledged");
    assert_true(
        json_is_true(json_object_get(json_object_get(p, "notifications"), "toolsListChanged")));
    assert_null(json_object_get(json_object_get(p, "notifications"), "promptsListChanged"));
    json_decref(m);
    /* Other requests are served while the stream is open. */
    m = child_call(&c, 4, "tools/list", "{" META_2026 "}", NULL);
    assert_true(json_array_size(json_object_get(result_of(m), "tools")) > 3);
    json_decref(m);
    free(test_write_file(root, "notes.txt", "second version, longer\n"));
    m = child_recv(&c, 10000);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "method")),
                        "notifications/resources/updated");
    p = json_object_get(m, "params");
    snprintf(line, sizeof(line), "file://%s/notes.txt", root);
    assert_string_equal(json_string_value(json_object_get(p, "uri")), line);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(p, "_meta"), "io.modelcontextprotocol/subscriptionId")),
                        "sub-1");
    json_decref(m);
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                   "\"requestId\":\"sub-1\"}}");
    /* No response for sub-1: the next response is the tools/list's (child_wait fails on a
     * response for another id). */
    json_decref(child_call(&c, 5, "tools/list", "{" META_2026 "}", NULL));
    assert_int_equal(child_stop(&c), 0);
    test_rmtree(root);
    free(root);
}

static void stdio_stateless_revision(void **state)
{
    struct child c;
    json_t *m, *notes = json_array();
    const json_t *r, *v;
    size_t i;
    bool legacy = false;

    (void)state;
    child_start(&c, NULL);
    m = child_call(&c, 1, "server/discover", "{" META_2026 "}", NULL);
    r = result_of(m);
    assert_modern_result(r, "public");
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(r, "supportedVersions"), 0)),
        "2026-07-28");
    json_array_foreach(json_object_get(r, "supportedVersions"), i, v) legacy =
        legacy || strcmp(json_string_value(v), "2025-11-25") == 0;
    assert_true(legacy);
    assert_true(json_is_object(json_object_get(json_object_get(r, "capabilities"), "tools")));
    json_decref(m);

    m = child_call(&c, 2, "tools/list", "{" META_2026 "}", NULL);
    r = result_of(m);
    assert_modern_result(r, "public");
    assert_true(json_array_size(json_object_get(r, "tools")) > 3);
    json_decref(m);
    m = child_call(&c, 3, "tools/call", "{\"name\":\"test_simple_text\"," META_2026 "}", NULL);
    r = result_of(m);
    assert_modern_result(r, NULL);
    assert_string_equal(first_text(r), "This is a simple text response for testing.");
    json_decref(m);

    /* Log lines only for a request that asked for a level. */
    json_decref(child_call(&c, 4, "tools/call",
                           "{\"name\":\"test_tool_with_logging\"," META_2026 "}", notes));
    assert_int_equal(count_method(notes, "notifications/message"), 0);
    json_decref(
        child_call(&c, 5, "tools/call",
                   "{\"name\":\"test_tool_with_logging\",\"_meta\":{\"io.modelcontextprotocol/"
                   "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"
                   "clientCapabilities\":{},\"io.modelcontextprotocol/logLevel\":\"debug\"}}",
                   notes));
    assert_int_equal(count_method(notes, "notifications/message"), 3);

    /* A missing resource is -32602 in this revision (-32002 before). */
    m = child_call(&c, 6, "resources/read", "{\"uri\":\"rein://nothing/here\"," META_2026 "}",
                   NULL);
    assert_int_equal(err_code(m), -32602);
    json_decref(m);
    /* Unsupported versions name the supported ones; capabilities are required; ping is gone. */
    m = child_call(&c, 7, "tools/list",
                   "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"1900-01-01\","
                   "\"io.modelcontextprotocol/clientCapabilities\":{}}}",
                   NULL);
    assert_int_equal(err_code(m), -32022);
    v = json_object_get(json_object_get(m, "error"), "data");
    assert_string_equal(json_string_value(json_object_get(v, "requested")), "1900-01-01");
    assert_string_equal(json_string_value(json_array_get(json_object_get(v, "supported"), 0)),
                        "2026-07-28");
    json_decref(m);
    m = child_call(&c, 8, "tools/list",
                   "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}",
                   NULL);
    assert_int_equal(err_code(m), -32602);
    json_decref(m);
    m = child_call(&c, 9, "ping", "{" META_2026 "}", NULL);
    assert_int_equal(err_code(m), -32601);
    json_decref(m);
    m = child_call(&c, 12, "initialize", "{" META_2026 "}", NULL);
    assert_int_equal(err_code(m), -32601);
    json_decref(m);
    /* Without _meta nor initialize a request is still refused as before. */
    m = child_call(&c, 10, "tools/list", NULL, NULL);
    assert_int_equal(err_code(m), -32600);
    json_decref(m);

    /* notifications/cancelled reaches a stateless call (stdio keeps it). */
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"tools/call\",\"params\":{"
                   "\"name\":\"hang\"," META_2026 "}}");
    pid_t pid = hang_pid(c.dir);
    child_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                   "\"requestId\":\"s1\"}}");
    expect_gone(pid);

    /* A legacy client asking for 2026-07-28 in initialize gets the newest legacy revision. */
    m = child_call(&c, 11, "initialize",
                   "{\"protocolVersion\":\"2026-07-28\",\"capabilities\":{},\"clientInfo\":{"
                   "\"name\":\"t\",\"version\":\"1\"}}",
                   NULL);
    assert_string_equal(json_string_value(json_object_get(result_of(m), "protocolVersion")),
                        "2025-11-25");
    assert_null(json_object_get(result_of(m), "resultType"));
    json_decref(m);
    json_decref(notes);
    assert_int_equal(child_stop(&c), 0);
}

/* ---- HTTP --------------------------------------------------------------------------------- */

struct http_fixture {
    rein_registry *reg;
    rein_mcp_server *mcp;
    rein_server *srv;
    char *dir;
    char url[128];
};

static struct http_fixture *http_start(const struct rein_mcp_server_opts *opts)
{
    struct http_fixture *f = calloc(1, sizeof(*f));
    rein_error err;

    assert_non_null(f);
    f->dir = extra_skills();
    f->reg = rein_registry_new(&err);
    assert_rein_ok(rein_skills_register_runners(f->reg, &err), &err);
    assert_rein_ok(rein_mcp_register_runner(f->reg, &err), &err);
    assert_non_null(f->reg);
    assert_rein_ok(rein_skills_register_builtins(f->reg, NULL, &err), &err);
    assert_rein_ok(rein_registry_load_dir(f->reg, skills_dir(), NULL, &err), &err);
    assert_rein_ok(rein_registry_load_dir(f->reg, f->dir, NULL, &err), &err);
    f->mcp = rein_mcp_server_new(f->reg, opts, &err);
    assert_non_null(f->mcp);
    f->srv = rein_server_new(&err);
    assert_non_null(f->srv);
    rein_server_set_port(f->srv, 0);
    rein_server_set_heartbeat_ms(f->srv, 200);
    assert_rein_ok(rein_mcp_server_add_routes(f->mcp, f->srv, &err), &err);
    assert_rein_ok(rein_server_start(f->srv, &err), &err);
    snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d/mcp", rein_server_port(f->srv));
    return f;
}

static void http_stop(struct http_fixture *f)
{
    rein_server_free(f->srv);
    rein_mcp_server_free(f->mcp);
    rein_registry_free(f->reg);
    test_rmtree(f->dir);
    free(f->dir);
    free(f);
}

/* One request through the support client, headers exactly as given. */
static void http(const char *method, const char *url, const char *body, const char *const *headers,
                 struct th_resp *out)
{
    th_http_raw(method, url, body, body ? strlen(body) : 0, headers, out);
    assert_int_equal(out->curl_rc, CURLE_OK);
}

/* A response header's value, "" when absent (th_header's static buffer). */
static const char *hdr(const struct th_resp *r, const char *name)
{
    const char *v = th_header(r, name);

    return v ? v : "";
}

static json_t *body_json(const struct th_resp *r)
{
    json_t *v = json_loads(r->body ? r->body : "", 0, NULL);

    if (!v)
        print_error("not JSON (HTTP %ld): %s\n", r->status, r->body ? r->body : "");
    assert_non_null(v);
    return v;
}

static int error_code(const struct th_resp *r)
{
    json_t *v = body_json(r);
    int code = (int)json_integer_value(json_object_get(json_object_get(v, "error"), "code"));

    json_decref(v);
    return code;
}

#define JSON_HEADERS(...)                                                                          \
    (const char *const[])                                                                          \
    {                                                                                              \
        "Content-Type: application/json", "Accept: application/json, text/event-stream",           \
            __VA_ARGS__, NULL                                                                      \
    }

/* initialize over HTTP; returns the session id (static buffer). */
static const char *http_init(const struct http_fixture *f, const char *version)
{
    static char session[128];
    char body[256];
    struct th_resp r;

    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\","
             "\"version\":\"1\"}}}",
             version);
    http("POST", f->url, body, JSON_HEADERS("X-Nothing: 1"), &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(hdr(&r, "Content-Type"), "application/json"));
    assert_true(strncmp(hdr(&r, "Mcp-Session-Id"), "mcp_", 4) == 0);
    snprintf(session, sizeof(session), "%s", hdr(&r, "Mcp-Session-Id"));
    th_resp_free(&r);
    return session;
}

static void http_sessions(void **state)
{
    struct http_fixture *f = http_start(NULL);
    const char *list = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}";
    char sh[200], bogus[] = "Mcp-Session-Id: mcp_doesnotexist";
    struct th_resp r;

    (void)state;
    snprintf(sh, sizeof(sh), "Mcp-Session-Id: %s", http_init(f, "2025-11-25"));
    http("POST", f->url, list, JSON_HEADERS("X-Nothing: 1"), &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32600);
    th_resp_free(&r);
    http("POST", f->url, list, JSON_HEADERS(bogus), &r);
    assert_int_equal(r.status, 404);
    assert_int_equal(error_code(&r), -32001);
    th_resp_free(&r);
    http("POST", f->url, list, JSON_HEADERS(sh, "MCP-Protocol-Version: 1999-01-01"), &r);
    assert_int_equal(r.status, 400);
    th_resp_free(&r);
    http("POST", f->url, list, JSON_HEADERS(sh, "MCP-Protocol-Version: 2025-11-25"), &r);
    assert_int_equal(r.status, 200);
    json_t *v = body_json(&r);
    assert_true(json_array_size(json_object_get(json_object_get(v, "result"), "tools")) > 10);
    json_decref(v);
    th_resp_free(&r);
    http("POST", f->url, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
         JSON_HEADERS(sh), &r);
    assert_int_equal(r.status, 202);
    assert_int_equal(r.len, 0);
    th_resp_free(&r);
    http("DELETE", f->url, NULL, (const char *const[]){sh, NULL}, &r);
    assert_int_equal(r.status, 204);
    th_resp_free(&r);
    http("POST", f->url, list, JSON_HEADERS(sh), &r);
    assert_int_equal(r.status, 404);
    th_resp_free(&r);
    http("DELETE", f->url, NULL, (const char *const[]){sh, NULL}, &r);
    assert_int_equal(r.status, 404);
    th_resp_free(&r);
    http_stop(f);
}

static void http_guards(void **state)
{
    struct rein_mcp_server_opts opts = {.allowed_hosts = "rein.internal, gw.example:8443"};
    struct http_fixture *f = http_start(&opts);
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{"
                       "\"name\":\"t\",\"version\":\"1\"}}}";
    char sh[200];
    struct th_resp r;

    (void)state;
    /* DNS rebinding: foreign Host or Origin is refused before anything else. */
    http("POST", f->url, init, JSON_HEADERS("Host: evil.example.com"), &r);
    assert_int_equal(r.status, 403);
    th_resp_free(&r);
    http("POST", f->url, init, JSON_HEADERS("Origin: http://evil.example.com"), &r);
    assert_int_equal(r.status, 403);
    th_resp_free(&r);
    http("POST", f->url, init, JSON_HEADERS("Origin: null"), &r);
    assert_int_equal(r.status, 403);
    th_resp_free(&r);
    http("POST", f->url, init, JSON_HEADERS("Host: gw.example:9999"), &r);
    assert_int_equal(r.status, 403);
    th_resp_free(&r);
    http("POST", f->url, init,
         JSON_HEADERS("Host: localhost:1234", "Origin: http://localhost:1234"), &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    http("POST", f->url, init, JSON_HEADERS("Host: [::1]:80", "Origin: https://rein.internal"), &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    http("POST", f->url, init, JSON_HEADERS("Host: gw.example:8443"), &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    /* Media types. */
    http("POST", f->url, init, (const char *const[]){"Content-Type: text/plain", NULL}, &r);
    assert_int_equal(r.status, 415);
    th_resp_free(&r);
    http("POST", f->url, init,
         (const char *const[]){"Content-Type: application/json", "Accept: text/html", NULL}, &r);
    assert_int_equal(r.status, 406);
    th_resp_free(&r);
    /* Bodies. */
    http("POST", f->url, "{not json", JSON_HEADERS("X-A: 1"), &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32700);
    th_resp_free(&r);
    http("POST", f->url, "[]", JSON_HEADERS("X-A: 1"), &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32600);
    th_resp_free(&r);
    http("POST", f->url, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}",
         JSON_HEADERS("X-A: 1"), &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(error_code(&r), -32602);
    assert_string_equal(hdr(&r, "Mcp-Session-Id"), ""); /* a failed initialize makes no session */
    th_resp_free(&r);
    /* GET resumes a stream the session has, or opens its standalone stream (see
     * http_standalone_stream). */
    snprintf(sh, sizeof(sh), "Mcp-Session-Id: %s", http_init(f, "2025-11-25"));
    http("GET", f->url, NULL,
         (const char *const[]){"Accept: text/event-stream", sh, "Last-Event-ID: nope-3", NULL}, &r);
    assert_int_equal(r.status, 400);
    th_resp_free(&r);
    http("GET", f->url, NULL, (const char *const[]){"Accept: application/json", sh, NULL}, &r);
    assert_int_equal(r.status, 406);
    th_resp_free(&r);
    http_stop(f);
}

/* POST with this Accept header (NULL: none at all); returns the status. */
static long post_accept(const struct http_fixture *f, const char *body, const char *sh,
                        const char *accept)
{
    char line[200];
    struct th_resp r;
    long status;

    snprintf(line, sizeof(line), "Accept:%s%s", accept ? " " : "", accept ? accept : "");
    http("POST", f->url, body,
         (const char *const[]){"Content-Type: application/json", line, sh ? sh : "X-A: 1", NULL},
         &r);
    status = r.status;
    th_resp_free(&r);
    return status;
}

/* Accept negotiation, answers to responses, and MCP-Protocol-Version on DELETE. */
static void http_negotiation(void **state)
{
    struct http_fixture *f = http_start(NULL);
    const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}";
    char sh[200];
    struct th_resp r;

    (void)state;
    snprintf(sh, sizeof(sh), "Mcp-Session-Id: %s", http_init(f, "2025-06-18"));
    assert_int_equal(post_accept(f, ping, sh, "application/json, text/event-stream"), 200);
    assert_int_equal(post_accept(f, ping, sh, "*/*"), 200);
    assert_int_equal(post_accept(f, ping, sh, "application/*, text/*;q=0.5"), 200);
    assert_int_equal(post_accept(f, ping, sh, "TEXT/EVENT-STREAM;q=1, Application/JSON"), 200);
    assert_int_equal(post_accept(f, ping, sh, "application/json"), 406);
    assert_int_equal(post_accept(f, ping, sh, "text/event-stream"), 406);
    assert_int_equal(post_accept(f, ping, sh, NULL), 406);
    assert_int_equal(post_accept(f, ping, sh, "application/json-seq, text/event-stream"), 406);
    assert_int_equal(post_accept(f, ping, sh, "application/json;q=0, text/event-stream, */*"), 406);
    /* A response to a request rein never sent: accepted, 202 and no body. */
    http("POST", f->url, "{\"jsonrpc\":\"2.0\",\"id\":\"srv-9\",\"result\":{}}", JSON_HEADERS(sh),
         &r);
    assert_int_equal(r.status, 202);
    assert_int_equal(r.len, 0);
    th_resp_free(&r);
    /* A malformed response: 400, and the error has no id (it answers nothing). */
    http("POST", f->url, "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":\"boom\"}", JSON_HEADERS(sh), &r);
    assert_int_equal(r.status, 400);
    json_t *v = body_json(&r);
    assert_true(json_is_null(json_object_get(v, "id")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "error"), "code")),
                     -32600);
    json_decref(v);
    th_resp_free(&r);
    /* No MCP-Protocol-Version: 2025-03-26 is assumed, which rein speaks. */
    http("POST", f->url, ping, JSON_HEADERS(sh), &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    /* DELETE with an unsupported version is refused and ends nothing. */
    http("DELETE", f->url, NULL,
         (const char *const[]){sh, "MCP-Protocol-Version: 1999-01-01", NULL}, &r);
    assert_int_equal(r.status, 400);
    th_resp_free(&r);
    http("POST", f->url, ping, JSON_HEADERS(sh, "MCP-Protocol-Version: 2025-06-18"), &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    http("DELETE", f->url, NULL,
         (const char *const[]){sh, "MCP-Protocol-Version: 2025-06-18", NULL}, &r);
    assert_int_equal(r.status, 204);
    th_resp_free(&r);
    http_stop(f);
}

/* The id of the first "id:" line of an event stream, into out. */
static void first_id(const char *body, char *out, size_t size)
{
    const char *p = strstr(body, "id: ");

    assert_non_null(p);
    snprintf(out, size, "%.*s", (int)strcspn(p + 4, "\r\n"), p + 4);
}

/* The id of the last event in an event stream's text. */
static void last_id(const char *body, char *out, size_t size)
{
    const char *p = NULL;

    for (const char *q = strstr(body, "id: "); q; q = strstr(q + 4, "id: "))
        if (q == body || q[-1] == '\n')
            p = q;
    assert_non_null(p);
    snprintf(out, size, "%.*s", (int)strcspn(p + 4, "\r\n"), p + 4);
}

static void http_streams(void **state)
{
    struct rein_mcp_server_opts opts = {.sse_retry_ms = 321};
    struct http_fixture *f = http_start(&opts);
    const char *call = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{"
                       "\"name\":\"test_tool_with_progress\",\"_meta\":{\"progressToken\":1}}}";
    char sh[200], id[128];
    struct th_resp r;

    (void)state;
    snprintf(sh, sizeof(sh), "Mcp-Session-Id: %s", http_init(f, "2025-11-25"));
    http("POST", f->url, call, JSON_HEADERS(sh), &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(hdr(&r, "Content-Type"), "text/event-stream");
    /* The priming event comes first: an id, the retry advice, empty data. */
    first_id(r.body, id, sizeof(id));
    assert_true(strlen(id) > 2 && strcmp(id + strlen(id) - 2, "-0") == 0);
    assert_non_null(strstr(r.body, "retry: 321\ndata: \n\n"));
    assert_true(strstr(r.body, "notifications/progress") < strstr(r.body, "\"id\":5"));
    assert_non_null(strstr(r.body, "Tool with progress executed successfully"));
    th_resp_free(&r);
    /* A client must accept both media types (MCP), so one that takes only JSON is refused. */
    http("POST", f->url, call,
         (const char *const[]){"Content-Type: application/json", "Accept: application/json", sh,
                               NULL},
         &r);
    assert_int_equal(r.status, 406);
    th_resp_free(&r);
    /* A 2025-06-18 session gets no priming event (older clients cannot read empty data). */
    snprintf(sh, sizeof(sh), "Mcp-Session-Id: %s", http_init(f, "2025-06-18"));
    http("POST", f->url, call, JSON_HEADERS(sh), &r);
    assert_null(strstr(r.body, "retry:"));
    assert_null(strstr(r.body, "-0\n"));
    assert_non_null(strstr(r.body, "\"id\":5"));
    th_resp_free(&r);
    http_stop(f);
}

/* SSE polling: the stream ends before the answer; Last-Event-ID brings the rest. */
static void http_resume(void **state)
{
    struct rein_mcp_server_opts opts = {.sse_close_ms = 150};
    struct http_fixture *f;
    char sh[200], last[160], id[128];
    struct th_resp r;

    (void)state;
    setenv("TEST_RECONNECTION_SLEEP", "0.8", 1);
    f = http_start(&opts);
    snprintf(sh, sizeof(sh), "Mcp-Session-Id: %s", http_init(f, "2025-11-25"));
    http("POST", f->url,
         "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":"
         "\"test_reconnection\"}}",
         JSON_HEADERS(sh), &r);
    assert_int_equal(r.status, 200);
    assert_null(strstr(r.body, "\"id\":8")); /* ended before the answer */
    first_id(r.body, id, sizeof(id));
    th_resp_free(&r);
    snprintf(last, sizeof(last), "Last-Event-ID: %s", id);
    http("GET", f->url, NULL, (const char *const[]){"Accept: text/event-stream", sh, last, NULL},
         &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"id\":8"));
    assert_non_null(strstr(r.body, "Reconnection test completed"));
    th_resp_free(&r);
    /* A delivered stream stays resumable a while (the answer may have been lost with the
     * connection): from the same event it is replayed; from its last event there is nothing
     * more, and the stream ends (it was 400, "names no stream"). */
    http("GET", f->url, NULL, (const char *const[]){"Accept: text/event-stream", sh, last, NULL},
         &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"id\":8"));
    last_id(r.body, id, sizeof(id));
    th_resp_free(&r);
    snprintf(last, sizeof(last), "Last-Event-ID: %s", id);
    http("GET", f->url, NULL, (const char *const[]){"Accept: text/event-stream", sh, last, NULL},
         &r);
    assert_int_equal(r.status, 200);
    assert_null(strstr(r.body, "\"id\":8"));
    th_resp_free(&r);
    /* A stream this session never had is still refused. */
    http("GET", f->url, NULL,
         (const char *const[]){"Accept: text/event-stream", sh, "Last-Event-ID: nosuchstream-3",
                               NULL},
         &r);
    assert_int_equal(r.status, 400);
    th_resp_free(&r);
    unsetenv("TEST_RECONNECTION_SLEEP");
    http_stop(f);
}

struct bg_call {
    const char *url;
    char session[200];
    struct th_resp r;
    pthread_t thread;
};

static void *bg_main(void *arg)
{
    struct bg_call *b = arg;

    http("POST", b->url,
         "{\"jsonrpc\":\"2.0\",\"id\":\"h1\",\"method\":\"tools/call\",\"params\":{\"name\":"
         "\"hang\"}}",
         JSON_HEADERS(b->session), &b->r);
    return NULL;
}

static void http_cancel(void **state)
{
    struct http_fixture *f = http_start(NULL);
    struct bg_call b = {.url = f->url};
    struct th_resp r;

    (void)state;
    snprintf(b.session, sizeof(b.session), "Mcp-Session-Id: %s", http_init(f, "2025-11-25"));
    assert_int_equal(pthread_create(&b.thread, NULL, bg_main, &b), 0);
    pid_t pid = hang_pid(f->dir);
    http("POST", f->url,
         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":"
         "\"h1\"}}",
         JSON_HEADERS(b.session), &r);
    assert_int_equal(r.status, 202);
    th_resp_free(&r);
    pthread_join(b.thread, NULL);
    expect_gone(pid);
    assert_int_equal(b.r.status, 200);
    assert_null(strstr(b.r.body, "\"h1\"")); /* no response for a cancelled request */
    th_resp_free(&b.r);
    http_stop(f);
}

/* Stopping the server cancels the calls still running; nothing hangs. */
static void http_stop_with_calls_running(void **state)
{
    struct http_fixture *f = http_start(NULL);
    struct bg_call b = {.url = f->url};
    int64_t t0;

    (void)state;
    snprintf(b.session, sizeof(b.session), "Mcp-Session-Id: %s", http_init(f, "2025-11-25"));
    assert_int_equal(pthread_create(&b.thread, NULL, bg_main, &b), 0);
    pid_t pid = hang_pid(f->dir);
    t0 = rein_now_ms();
    rein_server_stop(f->srv, 100);
    pthread_join(b.thread, NULL);
    th_resp_free(&b.r);
    char *dir = rein_strdup(f->dir);
    http_stop(f);
    assert_true(rein_now_ms() - t0 < 10000);
    expect_gone(pid);
    rein_free(dir);
}

/* Opens GET /mcp (the standalone stream) of session sh ("Mcp-Session-Id: ...") on a raw
 * socket and reads for timeout_ms; the socket stays open for the caller to close. */
static int standalone_open(const struct http_fixture *f, const char *sh, int timeout_ms,
                           struct rh_resp *out)
{
    char req[512];
    int port = (int)strtol(strrchr(f->url, ':') + 1, NULL, 10);
    int fd = rh_connect(port);

    snprintf(req, sizeof(req),
             "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n"
             "Connection: close\r\n%s\r\n\r\n",
             port, sh);
    assert_true(rh_send(fd, req, strlen(req)));
    rh_read(fd, timeout_ms, false, out);
    return fd;
}

/* Reads fd (a raw socket) into buf until it holds needle or timeout_ms pass; false then. */
static bool read_until(int fd, char *buf, size_t size, size_t *len, const char *needle,
                       int timeout_ms)
{
    int64_t deadline = rein_now_ms() + timeout_ms;

    while (!strstr(buf, needle)) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int64_t left = deadline - rein_now_ms();
        if (left <= 0 || *len + 1 >= size || poll(&pfd, 1, (int)left) <= 0)
            return false;
        ssize_t n = read(fd, buf + *len, size - *len - 1);
        if (n <= 0)
            return false;
        *len += (size_t)n;
        buf[*len] = '\0';
    }
    return true;
}

/* subscriptions/listen over HTTP: an event stream that is acknowledged, then carries
 * tools/list_changed (asked for) with the subscription's id when a tool leaves; closing it
 * ends the subscription, and a new one can be opened. */
static void http_subscriptions_listen(void **state)
{
    static const char body[] =
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"subscriptions/listen\",\"params\":{"
        "\"notifications\":{\"toolsListChanged\":true}," META_2026 "}}";
    struct http_fixture *f = http_start(NULL);
    int port = (int)strtol(strrchr(f->url, ':') + 1, NULL, 10);
    char req[2048], buf[16384];
    rein_error err;

    (void)state;
    snprintf(req, sizeof(req),
             "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
             "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
             "Mcp-Method: subscriptions/listen\r\nContent-Length: %zu\r\n\r\n%s",
             port, strlen(body), body);
    for (int round = 0; round < 2; round++) {
        size_t len = 0;
        int fd = rh_connect(port);
        buf[0] = '\0';
        assert_true(rh_send(fd, req, strlen(req)));
        assert_true(read_until(fd, buf, sizeof(buf), &len,
                               "notifications/subscriptions/acknowledged", 10000));
        assert_non_null(strstr(buf, "text/event-stream"));
        assert_non_null(strstr(buf, "\"io.modelcontextprotocol/subscriptionId\":7"));
        if (round == 0) {
            assert_rein_ok(rein_registry_remove(f->reg, "wipe", &err), &err);
            assert_true(
                read_until(fd, buf, sizeof(buf), &len, "notifications/tools/list_changed", 10000));
            assert_non_null(strstr(strstr(buf, "notifications/tools/list_changed"),
                                   "\"io.modelcontextprotocol/subscriptionId\":7"));
        }
        close(fd); /* ends the subscription; the next round opens another */
    }
    http_stop(f);
}

/* The standalone stream: what the server says outside requests (a tool that joins or leaves
 * the registry: notifications/tools/list_changed), one reader at a time. */
static void http_standalone_stream(void **state)
{
    struct http_fixture *f = http_start(NULL);
    char sh[200];
    struct th_resp r;
    struct rh_resp rr;
    rein_error err;
    int fd;

    (void)state;
    snprintf(sh, sizeof(sh), "Mcp-Session-Id: %s", http_init(f, "2025-11-25"));
    http("POST", f->url, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
         JSON_HEADERS(sh), &r);
    assert_int_equal(r.status, 202);
    th_resp_free(&r);
    /* A tool leaves while nobody reads: the notice waits in the stream for the reader. */
    assert_rein_ok(rein_registry_remove(f->reg, "wipe", &err), &err);
    fd = standalone_open(f, sh, 1500, &rr);
    assert_int_equal(rr.status, 200);
    assert_true(rr.timed_out); /* the stream stays open */
    assert_non_null(strstr(rr.body, "notifications/tools/list_changed"));
    rh_resp_free(&rr);
    /* One reader at a time: a new GET takes the stream over and the older connection ends (a
     * client that reconnects is never refused because its dead connection was not noticed). */
    struct rh_resp second;
    int fd2 = standalone_open(f, sh, 300, &second);
    assert_int_equal(second.status, 200);
    rh_resp_free(&second);
    assert_true(rh_wait_closed(fd, 5000));
    close(fd2);
    /* tools/list shows the change. */
    http("POST", f->url, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}",
         JSON_HEADERS(sh), &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"echo\""));
    assert_null(strstr(r.body, "\"wipe\""));
    th_resp_free(&r);
    close(fd);
    /* Stopping the server does not give a stream that only waits for news the grace period
     * running requests get: it ends at once. */
    struct rh_resp third;
    int fd3 = standalone_open(f, sh, 300, &third);
    assert_int_equal(third.status, 200);
    rh_resp_free(&third);
    int64_t t0 = rein_now_ms();
    rein_server_stop(f->srv, 30000);
    assert_true(rein_now_ms() - t0 < 20000);
    assert_true(rh_wait_closed(fd3, 5000));
    close(fd3);
    http_stop(f);
}

/* Issue 20: a second initialize on a session got 200 (and a new session). */
static void http_second_initialize_refused(void **state)
{
    struct http_fixture *f = http_start(NULL);
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{"
                       "\"name\":\"t\",\"version\":\"1\"}}}";
    char sh[200];
    struct th_resp r;

    (void)state;
    snprintf(sh, sizeof(sh), "Mcp-Session-Id: %s", http_init(f, "2025-11-25"));
    http("POST", f->url, init, JSON_HEADERS(sh), &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32600);
    assert_string_equal(hdr(&r, "Mcp-Session-Id"), "");
    th_resp_free(&r);
    /* The session goes on. */
    http("POST", f->url, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}", JSON_HEADERS(sh),
         &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    http_stop(f);
}

/* Issue 20: a body over the limit got a 413 whose body was not JSON-RPC. */
static void http_oversized_body_is_jsonrpc(void **state)
{
    struct http_fixture *f = http_start(NULL);
    int port = (int)strtol(strrchr(f->url, ':') + 1, NULL, 10);
    char req[512];
    struct rh_resp rr;

    (void)state;
    snprintf(req, sizeof(req),
             "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
             "Accept: application/json, text/event-stream\r\nContent-Length: 2097152\r\n\r\n",
             port);
    rh_exchange(port, req, strlen(req), 5000, &rr);
    assert_int_equal(rr.status, 413);
    assert_non_null(rr.json);
    assert_string_equal(json_string_value(json_object_get(rr.json, "jsonrpc")), "2.0");
    assert_true(json_is_null(json_object_get(rr.json, "id")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(rr.json, "error"), "code")),
                     -32600);
    rh_resp_free(&rr);
    http_stop(f);
}

/* Issue 20: eight long calls from one client stalled every other /mcp request (another
 * client's initialize included). Twelve calls that never end now leave the rest answered. */
static void http_long_calls_block_nothing(void **state)
{
    struct http_fixture *f = http_start(NULL);
    struct bg_call b[12];
    char sh[200], other[200];
    struct th_resp r;

    (void)state;
    snprintf(sh, sizeof(sh), "Mcp-Session-Id: %s", http_init(f, "2025-11-25"));
    for (int i = 0; i < 12; i++) {
        memset(&b[i], 0, sizeof(b[i]));
        b[i].url = f->url;
        snprintf(b[i].session, sizeof(b[i].session), "%s", sh);
        assert_int_equal(pthread_create(&b[i].thread, NULL, bg_main, &b[i]), 0);
    }
    (void)hang_pid(f->dir); /* the calls are running */
    snprintf(other, sizeof(other), "Mcp-Session-Id: %s", http_init(f, "2025-06-18"));
    http("POST", f->url, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}",
         JSON_HEADERS(other), &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    http("POST", f->url,
         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
         "\"echo\",\"arguments\":{\"text\":\"still here\"}}}",
         JSON_HEADERS(other), &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "still here"));
    th_resp_free(&r);
    http("POST", f->url, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}", JSON_HEADERS(sh),
         &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    /* Ending the session cancels its calls; their streams end. */
    http("DELETE", f->url, NULL, (const char *const[]){sh, NULL}, &r);
    assert_int_equal(r.status, 204);
    th_resp_free(&r);
    for (int i = 0; i < 12; i++) {
        pthread_join(b[i].thread, NULL);
        th_resp_free(&b[i].r);
    }
    http_stop(f);
}

/* The headers a 2026-07-28 client sends: the version, the method, and more as given. */
#define MODERN_HEADERS(method, ...)                                                                \
    JSON_HEADERS("MCP-Protocol-Version: 2026-07-28", "Mcp-Method: " method, __VA_ARGS__)

/* 2026-07-28 over HTTP: no session; the headers must match the body; its errors are 400, an
 * unknown method 404; streams have no ids; closing a stream cancels its call. */
static void http_stateless_revision(void **state)
{
    struct http_fixture *f = http_start(NULL);
    const char *call = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
                       "\"name\":\"test_simple_text\"," META_2026 "}}";
    char req[2048];
    struct th_resp r;
    json_t *v;
    int fd;

    (void)state;
    http("POST", f->url,
         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META_2026 "}}",
         MODERN_HEADERS("server/discover", "X-Nothing: 1"), &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(hdr(&r, "Mcp-Session-Id"), "");
    v = body_json(&r);
    assert_modern_result(json_object_get(v, "result"), "public");
    json_decref(v);
    th_resp_free(&r);

    /* A process skill's call streams; its events carry no ids (nothing resumes). */
    http("POST", f->url, call, MODERN_HEADERS("tools/call", "Mcp-Name: test_simple_text"), &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(hdr(&r, "Content-Type"), "text/event-stream");
    assert_string_equal(hdr(&r, "Mcp-Session-Id"), "");
    assert_null(strstr(r.body, "id: "));
    assert_non_null(strstr(r.body, "\"resultType\":\"complete\""));
    assert_non_null(strstr(r.body, "This is a simple text response for testing."));
    th_resp_free(&r);
    /* Mcp-Name in the base64 form. */
    http("POST", f->url, call,
         MODERN_HEADERS("tools/call", "Mcp-Name: =?base64?dGVzdF9zaW1wbGVfdGV4dA==?="), &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "This is a simple text response for testing."));
    th_resp_free(&r);

    /* Whitespace around a header value is not part of it. */
    http("POST", f->url, call, MODERN_HEADERS("tools/call", "Mcp-Name:  test_simple_text  "), &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    /* Headers that disagree with the body, or are missing, are -32020 with 400. */
    http("POST", f->url, call, MODERN_HEADERS("tools/call", "Mcp-Name: echo"), &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32020);
    th_resp_free(&r);
    http("POST", f->url, call, MODERN_HEADERS("tools/call", "X-Nothing: 1"), &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32020);
    th_resp_free(&r);
    http("POST", f->url, call, MODERN_HEADERS("tools/list", "Mcp-Name: test_simple_text"), &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32020);
    th_resp_free(&r);
    http("POST", f->url, call,
         JSON_HEADERS("MCP-Protocol-Version: 2025-11-25", "Mcp-Method: tools/call",
                      "Mcp-Name: test_simple_text"),
         &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32020);
    th_resp_free(&r);
    http("POST", f->url, call, JSON_HEADERS("Mcp-Method: tools/call", "Mcp-Name: test_simple_text"),
         &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32020);
    th_resp_free(&r);
    /* An unsupported version is 400 with -32022; an unknown method 404 with -32601. */
    http("POST", f->url,
         "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
         "\"io.modelcontextprotocol/protocolVersion\":\"1900-01-01\","
         "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
         JSON_HEADERS("MCP-Protocol-Version: 1900-01-01", "Mcp-Method: tools/list"), &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32022);
    th_resp_free(&r);
    http("POST", f->url,
         "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"nothing/here\",\"params\":{" META_2026 "}}",
         MODERN_HEADERS("nothing/here", "X-Nothing: 1"), &r);
    assert_int_equal(r.status, 404);
    assert_int_equal(error_code(&r), -32601);
    th_resp_free(&r);
    /* initialize is not a method of this revision; a request without _meta is malformed. */
    http("POST", f->url,
         "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\",\"params\":{" META_2026 "}}",
         MODERN_HEADERS("initialize", "X-Nothing: 1"), &r);
    assert_int_equal(r.status, 404);
    assert_int_equal(error_code(&r), -32601);
    th_resp_free(&r);
    http("POST", f->url, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\"}",
         MODERN_HEADERS("tools/list", "X-Nothing: 1"), &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32602);
    th_resp_free(&r);
    /* A notification without a session is accepted and does nothing. */
    http(
        "POST", f->url,
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}",
        MODERN_HEADERS("notifications/cancelled", "X-Nothing: 1"), &r);
    assert_int_equal(r.status, 202);
    th_resp_free(&r);

    /* Closing the stream cancels the call and stops its process. */
    const char *hang = "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{"
                       "\"name\":\"hang\"," META_2026 "}}";
    snprintf(req, sizeof(req),
             "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
             "Mcp-Method: tools/call\r\nMcp-Name: hang\r\nContent-Length: %zu\r\n\r\n%s",
             strlen(hang), hang);
    fd = rh_connect(rein_server_port(f->srv));
    assert_true(rh_send(fd, req, strlen(req)));
    pid_t pid = hang_pid(f->dir);
    close(fd);
    expect_gone(pid);
    http_stop(f);
}

/* 2026-07-28 (SEP-2243): arguments whose schema says x-mcp-header travel in Mcp-Param-*
 * headers too, and the server holds the headers to the body (-32020 with 400 otherwise). */
static void http_param_headers(void **state)
{
    struct http_fixture *f = http_start(NULL);
    const char *call =
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
        "\"name\":\"route\",\"arguments\":{\"region\":\"Hello\",\"shards\":4}," META_2026 "}}";
    const char *no_shards = "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\","
                            "\"params\":{\"name\":\"route\",\"arguments\":{\"region\":"
                            "\"Hello\"}," META_2026 "}}";
    struct th_resp r;

    (void)state;
    /* tools/list shows the annotation, so clients know to send the headers. */
    http("POST", f->url,
         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META_2026 "}}",
         MODERN_HEADERS("tools/list", "X-Nothing: 1"), &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"x-mcp-header\":\"Region\""));
    th_resp_free(&r);
    /* Plain and base64 values that match run the call. */
    http("POST", f->url, call,
         MODERN_HEADERS("tools/call", "Mcp-Name: route", "Mcp-Param-Region: Hello",
                        "Mcp-Param-Shards: 4"),
         &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    http("POST", f->url, call,
         MODERN_HEADERS("tools/call", "Mcp-Name: route",
                        "Mcp-Param-Region: =?base64?SGVsbG8=?=", "Mcp-Param-Shards: 4"),
         &r);
    assert_int_equal(r.status, 200);
    th_resp_free(&r);
    /* A value without the wrapper is literal: base64 text is not decoded. */
    http("POST", f->url, call,
         MODERN_HEADERS("tools/call", "Mcp-Name: route",
                        "Mcp-Param-Region: SGVsbG8=", "Mcp-Param-Shards: 4"),
         &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32020);
    th_resp_free(&r);
    /* Bad base64 (padding, alphabet), a missing header, a different value, a header without
     * its argument: all refused. */
    const char *bad[][2] = {{"Mcp-Param-Region: =?base64?SGVsbG8?=", "Mcp-Param-Shards: 4"},
                            {"Mcp-Param-Region: =?base64?SGVs!!!bG8=?=", "Mcp-Param-Shards: 4"},
                            {"Mcp-Param-Shards: 4", "X-Nothing: 1"},
                            {"Mcp-Param-Region: Hello", "Mcp-Param-Shards: 5"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        http("POST", f->url, call,
             MODERN_HEADERS("tools/call", "Mcp-Name: route", bad[i][0], bad[i][1]), &r);
        if (r.status != 400 || error_code(&r) != -32020)
            fail_msg("case %zu: %d %s", i, r.status, r.body);
        th_resp_free(&r);
    }
    http("POST", f->url, no_shards,
         MODERN_HEADERS("tools/call", "Mcp-Name: route", "Mcp-Param-Region: Hello",
                        "Mcp-Param-Shards: 4"),
         &r);
    assert_int_equal(r.status, 400);
    assert_int_equal(error_code(&r), -32020);
    th_resp_free(&r);
    http_stop(f);
}

/* An attribute of span's first event named event (OTLP/JSON, {"stringValue": ...}; borrowed),
 * or NULL; the event itself when key is NULL. */
static json_t *span_event_value(json_t *span, const char *event, const char *key)
{
    json_t *ev = otlp_event_named(span, event);

    return key ? otlp_event_attr(ev, key) : ev;
}

static const char *span_event_str(json_t *span, const char *event, const char *key)
{
    return json_string_value(json_object_get(span_event_value(span, event, key), "stringValue"));
}

/* A destructive call from a client that offers sampling and elicitation: the client's model
 * reviews it (answer YES or NO) and, after a YES, its user approves. */
static void reviewed_call(struct child *c, int call_id, const char *verdict)
{
    char id[64], line[512];
    json_t *m;

    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
             "\"name\":\"wipe\",\"arguments\":{\"text\":\"x\"}}}",
             call_id);
    child_send(c, line);
    m = child_request(c, id, sizeof(id));
    assert_string_equal(json_string_value(json_object_get(m, "method")), "sampling/createMessage");
    json_decref(m);
    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"role\":\"assistant\",\"content\":{"
             "\"type\":\"text\",\"text\":\"%s\"},\"model\":\"m\"}}",
             id, verdict);
    child_send(c, line);
    if (strncmp(verdict, "YES", 3) == 0) {
        m = child_request(c, id, sizeof(id));
        assert_string_equal(json_string_value(json_object_get(m, "method")), "elicitation/create");
        json_decref(m);
        snprintf(line, sizeof(line),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"action\":\"accept\",\"content\":{"
                 "\"approve\":true}}}",
                 id);
        child_send(c, line);
    }
    m = child_wait(c, call_id, NULL);
    assert_true(json_is_true(json_object_get(result_of(m), "isError")) ==
                (strncmp(verdict, "YES", 3) != 0));
    json_decref(m);
}

/* Seed 001 over MCP on the trace (issue 23, decision 0047): the client's model's review and its
 * user's approval are rein.self_check and rein.approval events on the call's execute_tool
 * span, as the agent's own stages are. */
static void stdio_review_and_approval_on_the_span(void **state)
{
    struct otlp_receiver *r = otlp_start();
    const char *env[] = {"OTEL_EXPORTER_OTLP_ENDPOINT",
                         otlp_url(r),
                         "OTEL_EXPORTER_OTLP_PROTOCOL",
                         "http/json",
                         "OTEL_BSP_SCHEDULE_DELAY",
                         "20",
                         NULL};
    json_t *spans, *s, *passed = NULL, *rejected = NULL;
    struct child c;
    size_t i;

    (void)state;
    child_start(&c, env);
    unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
    unsetenv("OTEL_EXPORTER_OTLP_PROTOCOL");
    unsetenv("OTEL_BSP_SCHEDULE_DELAY");
    child_init_caps(&c, "2025-11-25", "{\"sampling\":{},\"elicitation\":{}}");
    reviewed_call(&c, 2, "YES");
    reviewed_call(&c, 3, "NO, it deletes things nobody asked to delete");
    assert_int_equal(child_stop(&c), 0);
    assert_true(otlp_wait_spans(r, 2, 10000));
    spans = otlp_spans(r);
    json_array_foreach(spans, i, s)
    {
        if (strcmp(json_string_value(json_object_get(s, "name")), "execute_tool wipe") != 0)
            continue;
        const char *verdict = span_event_str(s, "rein.self_check", "rein.self_check.verdict");
        assert_non_null(verdict);
        if (strcmp(verdict, "passed") == 0)
            passed = s;
        else
            rejected = s;
    }
    assert_non_null(passed);
    assert_non_null(rejected);
    assert_string_equal(span_event_str(passed, "rein.self_check", "rein.self_check.judge"),
                        "client_model");
    assert_string_equal(span_event_str(passed, "rein.self_check", "rein.self_check.code"), "said");
    assert_non_null(span_event_value(passed, "rein.self_check", "rein.self_check.wait_ms"));
    assert_string_equal(span_event_str(passed, "rein.approval", "rein.approval.decision"),
                        "approved");
    assert_string_equal(span_event_str(passed, "rein.approval", "rein.approval.by"), "client_user");
    assert_string_equal(span_event_str(rejected, "rein.self_check", "rein.self_check.verdict"),
                        "rejected");
    assert_null(span_event_value(rejected, "rein.approval", NULL)); /* no person was asked */
    json_decref(spans);
    otlp_stop(r);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(http_param_headers),
    cmocka_unit_test(stdio_lifecycle_and_tools),
    cmocka_unit_test(stdio_calls),
    cmocka_unit_test(stdio_exact_names),
    cmocka_unit_test(stdio_resources_prompts_completion),
    cmocka_unit_test(stdio_bad_input),
    cmocka_unit_test(stdio_jsonrpc_edges),
    cmocka_unit_test(stdio_progress_and_logging),
    cmocka_unit_test(stdio_cancel_and_heartbeat),
    cmocka_unit_test(stdio_end_of_input),
    cmocka_unit_test(stdio_sigterm_takes_running_skills_along),
    cmocka_unit_test(stdio_stateless_revision),
    cmocka_unit_test(stdio_skill_asks_the_client),
    cmocka_unit_test(stdio_review_and_approval_on_the_span),
    cmocka_unit_test(stdio_skill_asks_a_client_that_cannot_answer),
    cmocka_unit_test(stdio_input_required_rounds),
    cmocka_unit_test(request_state_across_servers),
    cmocka_unit_test(stdio_prompt_asks_for_arguments),
    cmocka_unit_test(stdio_prompt_asks_session_client),
    cmocka_unit_test(stdio_subscriptions_listen),
    cmocka_unit_test(http_subscriptions_listen),
    cmocka_unit_test(http_sessions),
    cmocka_unit_test(http_guards),
    cmocka_unit_test(http_negotiation),
    cmocka_unit_test(http_streams),
    cmocka_unit_test(http_resume),
    cmocka_unit_test(http_cancel),
    cmocka_unit_test(http_stop_with_calls_running),
    cmocka_unit_test(http_standalone_stream),
    cmocka_unit_test(http_second_initialize_refused),
    cmocka_unit_test(http_oversized_body_is_jsonrpc),
    cmocka_unit_test(http_long_calls_block_nothing),
    cmocka_unit_test(http_stateless_revision),
};

REIN_TEST_MAIN(tests)
