/*
 * Unit tests of the MCP module's parts that need no process or socket: the JSON-RPC decoder
 * and encoders (every malformed message gets the right code and keeps its id when it can),
 * the SSE reader (line endings, pieces of any size, BOM, ids, retry, priming events, limits),
 * the mapping of runner outputs and call results to MCP content, the mcpServers configuration
 * reader, and the provider loader leaving mcpServers to MCP.
 */
#include "test.h"

#include "mcp/mcp_int.h"

/* ---- JSON-RPC ---- */

static rein_err decode(const char *text, struct rein__mcp_msg *msg, json_t **bad_id)
{
    rein_error err;

    rein_error_clear(&err);
    return rein__mcp_decode(text, strlen(text), 0, msg, bad_id, &err);
}

static void jsonrpc_kinds(void **state)
{
    struct rein__mcp_msg m;

    (void)state;
    assert_rein_ok(decode("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}", &m, NULL),
                   NULL);
    assert_int_equal(m.kind, REIN__MCP_REQUEST);
    assert_int_equal(json_integer_value(m.id), 7);
    assert_string_equal(m.method, "tools/list");
    assert_null(m.params);
    rein__mcp_msg_release(&m);

    assert_rein_ok(
        decode("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"x\",\"params\":{}}", &m, NULL),
        NULL);
    assert_int_equal(m.kind, REIN__MCP_REQUEST);
    assert_string_equal(json_string_value(m.id), "a");
    assert_true(json_is_object(m.params));
    rein__mcp_msg_release(&m);

    assert_rein_ok(
        decode("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &m, NULL), NULL);
    assert_int_equal(m.kind, REIN__MCP_NOTIFICATION);
    assert_null(m.id);
    rein__mcp_msg_release(&m);

    assert_rein_ok(decode("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"a\":1}}", &m, NULL), NULL);
    assert_int_equal(m.kind, REIN__MCP_RESPONSE);
    assert_int_equal(json_integer_value(json_object_get(m.result, "a")), 1);
    rein__mcp_msg_release(&m);

    assert_rein_ok(decode("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                          "\"message\":\"bad\",\"data\":[1]}}",
                          &m, NULL),
                   NULL);
    assert_int_equal(m.kind, REIN__MCP_ERROR);
    assert_int_equal(m.error_code, -32700);
    assert_string_equal(m.error_message, "bad");
    assert_true(json_is_array(m.error_data));
    rein__mcp_msg_release(&m);
}

/* Every way a message can be wrong, the code it earns, and the id kept for the answer. */
static void jsonrpc_bad_messages(void **state)
{
    static const struct {
        const char *text;
        rein_err rc;
        const char *says;
        int keeps_id; /* the id 5 can still be read */
    } cases[] = {
        {"", REIN_EPARSE, "Parse error", 0},
        {"{\"jsonrpc\":\"2.0\",", REIN_EPARSE, "Parse error", 0},
        {"garbage", REIN_EPARSE, "Parse error", 0},
        {"{\"a\":1,\"a\":2}", REIN_EPARSE, "duplicate", 0},
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", REIN_EINVALID, "batches", 0},
        {"\"ping\"", REIN_EINVALID, "not string", 0},
        {"{\"id\":5,\"method\":\"ping\"}", REIN_EINVALID, "jsonrpc", 1},
        {"{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}", REIN_EINVALID, "jsonrpc", 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", REIN_EINVALID, "never null", 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", REIN_EINVALID, "integer", 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"\"}", REIN_EINVALID, "non-empty", 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":7}", REIN_EINVALID, "non-empty", 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\",\"params\":[1]}", REIN_EINVALID, "params",
         1},
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\",\"result\":{}}", REIN_EINVALID, "both", 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":5}", REIN_EINVALID, "exactly one", 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":1,\"error\":{}}", REIN_EINVALID, "exactly one",
         1},
        {"{\"jsonrpc\":\"2.0\",\"result\":{}}", REIN_EINVALID, "response", 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"message\":\"x\"}}", REIN_EINVALID,
         "integer \"code\"", 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":\"boom\"}", REIN_EINVALID, "integer \"code\"", 1},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rein__mcp_msg m;
        json_t *id = NULL;
        rein_error err;
        rein_err rc;

        rein_error_clear(&err);
        rc = rein__mcp_decode(cases[i].text, strlen(cases[i].text), 0, &m, &id, &err);
        if (rc != cases[i].rc || !strstr(err.msg, cases[i].says) ||
            (cases[i].keeps_id != (id != NULL))) {
            print_error("case %zu %s: got %s \"%s\" id %s\n", i, cases[i].text, rein_err_name(rc),
                        err.msg, id ? "kept" : "none");
            fail();
        }
        assert_null(m.doc);
        if (id)
            assert_int_equal(json_integer_value(id), 5);
        json_decref(id);
        assert_int_equal(rein__mcp_decode_error_code(rc),
                         rc == REIN_EPARSE ? REIN__MCP_PARSE_ERROR : REIN__MCP_INVALID_REQUEST);
    }
}

/* A broken message meant as a response is marked so, for the transports to leave it
 * unanswered; a broken request or notification is not. */
static void jsonrpc_broken_responses(void **state)
{
    static const struct {
        const char *text;
        bool response;
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":\"boom\"}", true},
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}", true},
        {"{\"id\":6,\"result\":{}}", true},
        {"{\"jsonrpc\":\"2.0\",\"result\":1,\"error\":{}}", true},
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\",\"result\":{}}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":5}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", false},
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]", false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rein__mcp_msg m;

        assert_int_equal(decode(cases[i].text, &m, NULL), REIN_EINVALID);
        if ((m.kind == REIN__MCP_RESPONSE) != cases[i].response) {
            print_error("case %zu %s: kind %d\n", i, cases[i].text, (int)m.kind);
            fail();
        }
    }
}

static void jsonrpc_limits_and_encoders(void **state)
{
    struct rein__mcp_msg m;
    struct rein_buf b;
    rein_error err;
    json_t *id = json_string("x\"y"), *params = json_pack("{s:i}", "a", 1);
    char key[64];

    (void)state;
    rein_error_clear(&err);
    assert_int_equal(
        rein__mcp_decode("{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}", 33, 10, &m, NULL, &err),
        REIN_ETOOBIG);
    rein_buf_init(&b, 0);
    assert_rein_ok(rein__mcp_write_result(&b, id, params), NULL);
    assert_string_equal(b.ptr, "{\"jsonrpc\":\"2.0\",\"id\":\"x\\\"y\",\"result\":{\"a\":1}}");
    rein_buf_reset(&b);
    assert_rein_ok(rein__mcp_write_error(&b, NULL, -32700, "bad\nline", NULL), NULL);
    assert_string_equal(b.ptr,
                        "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":"
                        "\"bad\\nline\"}}");
    rein_buf_reset(&b);
    assert_rein_ok(rein__mcp_write_notification(&b, "notifications/initialized", NULL), NULL);
    assert_string_equal(b.ptr, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    rein_buf_reset(&b);
    assert_rein_ok(rein__mcp_write_request(&b, 42, "tools/call", params), NULL);
    assert_rein_ok(decode(b.ptr, &m, NULL), NULL);
    assert_int_equal(m.kind, REIN__MCP_REQUEST);
    assert_int_equal(json_integer_value(m.id), 42);
    rein__mcp_msg_release(&m);
    rein_buf_release(&b);

    assert_true(rein__mcp_id_key(id, key, sizeof(key)));
    assert_string_equal(key, "\"x\\\"y\"");
    json_decref(id);
    id = json_integer(-3);
    assert_true(rein__mcp_id_key(id, key, sizeof(key)));
    assert_string_equal(key, "-3");
    json_decref(id);
    id = json_real(1.5);
    assert_false(rein__mcp_id_key(id, key, sizeof(key)));
    json_decref(id);
    json_decref(params);

    assert_true(rein__mcp_version_supported("2025-06-18"));
    assert_true(rein__mcp_version_supported("2025-03-26"));
    assert_false(rein__mcp_version_supported("2024-11-05"));
    assert_true(rein__mcp_version_primes("2025-11-25"));
    assert_false(rein__mcp_version_primes("2025-06-18"));
    assert_int_equal(rein__mcp_level_index("warning"), 3);
    assert_int_equal(rein__mcp_level_index("loud"), -1);
}

/* ---- SSE ---- */

struct seen {
    char events[16][256];
    int n;
};

static rein_err keep(void *ud, const char *event, const char *id, const char *data, size_t len)
{
    struct seen *s = ud;

    if (s->n < 16)
        snprintf(s->events[s->n++], 256, "%s|%s|%.*s", event ? event : "-", id ? id : "-", (int)len,
                 data);
    return REIN_OK;
}

static void feed_all(const char *text, size_t piece, struct seen *s, int64_t *retry)
{
    struct rein__mcp_sse sse;
    size_t len = strlen(text);

    memset(s, 0, sizeof(*s));
    rein__mcp_sse_init(&sse, 0, keep, s);
    for (size_t i = 0; i < len; i += piece)
        assert_rein_ok(rein__mcp_sse_feed(&sse, text + i, len - i < piece ? len - i : piece), NULL);
    if (retry)
        *retry = sse.retry_ms;
    rein__mcp_sse_release(&sse);
}

static void sse_reader(void **state)
{
    static const char stream[] = "\xEF\xBB\xBF: a comment\r\n"
                                 "id: s-0\r\nretry: 750\r\ndata: \r\n\r\n"
                                 "event: message\nid: s-1\ndata: {\"a\":\ndata: 1}\n\n"
                                 "data:no-space\r\r"
                                 "retry: 12x\nunknown: field\nid\ndata\n\n"
                                 "event: other\ndata: x\n\n"
                                 "data: unterminated";
    int64_t retry = 0;
    struct seen s;

    (void)state;
    /* Whatever the pieces, the same events come out. */
    for (size_t piece = 1; piece <= sizeof(stream); piece = piece * 2 + 1) {
        feed_all(stream, piece, &s, &retry);
        assert_int_equal(s.n, 5);
        assert_string_equal(s.events[0], "-|s-0|"); /* the priming event: id, empty data */
        assert_string_equal(s.events[1], "message|s-1|{\"a\":\n1}");
        assert_string_equal(s.events[2], "-|s-1|no-space"); /* the id is remembered */
        assert_string_equal(s.events[3], "-|-|");           /* "id" alone clears it */
        assert_string_equal(s.events[4], "other|-|x");
        assert_int_equal(retry, 750); /* "12x" is not a number and is ignored */
    }
}

static void sse_limits(void **state)
{
    struct rein__mcp_sse sse;
    struct seen s = {0};
    char big[300];

    (void)state;
    memset(big, 'a', sizeof(big));
    rein__mcp_sse_init(&sse, 100, keep, &s);
    assert_int_equal(rein__mcp_sse_feed(&sse, big, sizeof(big)), REIN_ETOOBIG);
    rein__mcp_sse_release(&sse);
    /* An id with a NUL is ignored, as the rules say. */
    rein__mcp_sse_init(&sse, 0, keep, &s);
    assert_rein_ok(rein__mcp_sse_feed(&sse, "id: a\0b\ndata: x\n\n", 17), NULL);
    rein__mcp_sse_release(&sse);
    assert_string_equal(s.events[0], "-|-|x");
}

/* ---- results ---- */

static void content_mapping(void **state)
{
    json_t *out, *r;

    (void)state;
    /* MCP content passes through. */
    out = json_pack("{s:[{s:s, s:s, s:s}], s:{s:i}}", "content", "type", "image", "data", "AAAA",
                    "mimeType", "image/png", "structuredContent", "n", 1);
    assert_true(rein__mcp_is_content_result(out));
    r = rein__mcp_output_to_result(out);
    assert_true(json_equal(r, out));
    json_decref(r);
    json_decref(out);
    /* Not content: an unknown block type, an extra key. */
    out = json_pack("{s:[{s:s}]}", "content", "type", "video");
    assert_false(rein__mcp_is_content_result(out));
    json_decref(out);
    out = json_pack("{s:[], s:b}", "content", "isError", 1);
    assert_false(rein__mcp_is_content_result(out));
    r = rein__mcp_output_to_result(out);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "content"), 0), "text")),
                        "{\"content\":[],\"isError\":true}");
    assert_true(json_equal(json_object_get(r, "structuredContent"), out));
    json_decref(r);
    json_decref(out);
    /* A string is its own text; an array is JSON text without structuredContent. */
    out = json_string("plain words");
    r = rein__mcp_output_to_result(out);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "content"), 0), "text")),
                        "plain words");
    assert_null(json_object_get(r, "structuredContent"));
    json_decref(r);
    json_decref(out);
    out = json_pack("[i,i]", 1, 2);
    r = rein__mcp_output_to_result(out);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "content"), 0), "text")),
                        "[1,2]");
    assert_null(json_object_get(r, "structuredContent"));
    json_decref(r);
    json_decref(out);
}

/* A call that could not run is isError with the invalid payload as text, and the normalized
 * result (the invalid payload in it) as structure. */
static void call_results(void **state)
{
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    struct rein_call_input in = {.name = "echo", .args_text = "{}", .args_len = 2};
    rein_call_result *res = NULL;
    json_t *r, *sc;
    const char *text;

    (void)state;
    assert_non_null(reg);
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, &err), &err);
    r = rein__mcp_call_result_json(res);
    assert_true(json_is_true(json_object_get(r, "isError")));
    sc = json_object_get(r, "structuredContent");
    assert_string_equal(json_string_value(json_object_get(sc, "tool")), "echo");
    assert_true(json_is_false(json_object_get(sc, "ok")));
    assert_true(json_is_array(json_object_get(json_object_get(sc, "invalid_payload"), "errors")));
    assert_true(
        json_is_object(json_object_get(json_object_get(sc, "invalid_payload"), "expected")));
    text = json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
    assert_non_null(strstr(text, "missing required field(s): text"));
    json_decref(r);
    rein_call_result_free(res);

    in.args_text = "{\"text\":\"hi\"}";
    in.args_len = strlen(in.args_text);
    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, &err), &err);
    r = rein__mcp_call_result_json(res);
    assert_null(json_object_get(r, "isError"));
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "content"), 0), "text")),
                        "hi");
    json_decref(r);
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* ---- configuration ---- */

static rein_err parse_entry(const char *text, struct rein__mcp_conn_config **cfg, rein_error *err)
{
    json_t *entry = json_loads(text, 0, NULL);
    rein_err rc;

    assert_non_null(entry);
    rein_error_clear(err);
    rc = rein__mcp_conn_config_parse("srv", entry, "/base", cfg, err);
    json_decref(entry);
    return rc;
}

static void config_entries(void **state)
{
    static const struct {
        const char *text;
        const char *says;
    } bad[] = {
        {"[]", "must be an object"},
        {"{}", "either \"command\""},
        {"{\"command\":\"x\",\"url\":\"http://a\"}", "either \"command\""},
        {"{\"command\":\"\"}", "command: must be a program"},
        {"{\"command\":\"x\",\"args\":\"-v\"}", "args: must be an array"},
        {"{\"command\":\"x\",\"args\":[1]}", "args[0]"},
        {"{\"command\":\"x\",\"env\":{\"A\":1}}", "env: must be an object of string"},
        {"{\"command\":\"x\",\"env\":{\"A=B\":\"1\"}}", "not a variable name"},
        {"{\"url\":\"ftp://a\"}", "http:// or https://"},
        {"{\"url\":\"http://a\",\"headers\":{\"Bad: x\":\"1\"}}", "single tokens"},
        {"{\"url\":\"http://a\",\"headers\":{\"X\":\"a\\nb\"}}", "line breaks"},
        {"{\"url\":\"http://a\",\"type\":\"websocket\"}", "legacy HTTP+SSE (\"sse\")"},
        {"{\"command\":\"x\",\"type\":\"sse\"}", "needs a \"url\""},
        {"{\"url\":\"http://a\",\"oauth\":{\"grant\":\"password\"}}", "oauth.grant"},
        {"{\"url\":\"http://a\",\"oauth\":{\"colour\":\"x\"}}", "unknown member"},
        {"{\"url\":\"http://a\",\"oauth\":{\"redirect_port\":70000}}", "a port"},
        {"{\"url\":\"http://a\",\"oauth\":7}", "an object or false"},
        {"{\"command\":\"x\",\"timeout_ms\":0}", "timeout_ms"},
        {"{\"command\":\"x\",\"max_message_bytes\":5}", "max_message_bytes"},
    };
    struct rein__mcp_conn_config *cfg = NULL;
    rein_error err;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rein_err rc = parse_entry(bad[i].text, &cfg, &err);
        if (rc != REIN_EINVAL || !strstr(err.msg, bad[i].says)) {
            print_error("case %s: got %s \"%s\"\n", bad[i].text, rein_err_name(rc), err.msg);
            fail();
        }
        assert_null(cfg);
    }
    setenv("REIN_TEST_TOKEN", "s3cret", 1);
    assert_rein_ok(parse_entry("{\"command\":\"npx\",\"args\":[\"-y\",\"pkg\"],\"cwd\":\"sub\","
                               "\"env\":{\"K\":\"v-${REIN_TEST_TOKEN}\"},\"timeout_ms\":500,"
                               "\"comment\":\"ignored\"}",
                               &cfg, &err),
                   &err);
    assert_false(cfg->http);
    assert_string_equal(cfg->argv[0], "npx");
    assert_string_equal(cfg->argv[2], "pkg");
    assert_null(cfg->argv[3]);
    assert_string_equal(cfg->env[0], "K=v-s3cret");
    assert_string_equal(cfg->cwd, "/base/sub");
    assert_int_equal(cfg->timeout_ms, 500);
    rein__mcp_conn_config_free(cfg);
    assert_rein_ok(parse_entry("{\"url\":\"https://x/mcp\",\"type\":\"http\",\"headers\":"
                               "{\"X-Team\":\"a\"},\"bearer_token\":\"${REIN_TEST_TOKEN}\"}",
                               &cfg, &err),
                   &err);
    assert_true(cfg->http);
    assert_string_equal(cfg->headers[0], "X-Team: a");
    assert_string_equal(cfg->headers[1], "Authorization: Bearer s3cret");
    assert_int_equal(cfg->timeout_ms, 60000);
    rein__mcp_conn_config_free(cfg);
    unsetenv("REIN_TEST_TOKEN");
}

static void config_documents(void **state)
{
    rein_mcp_clients *set = rein_mcp_clients_new();
    rein_provider_config *pc = rein_provider_config_new();
    json_t *doc = json_loads("{\"provider\":\"openai\",\"model\":\"gpt-4o\",\"mcpServers\":{"
                             "\"a\":{\"command\":\"x\"},\"b\":{\"url\":\"http://h/mcp\"}}}",
                             0, NULL);
    json_t *status;
    rein_error err;

    (void)state;
    assert_non_null(doc);
    rein_error_clear(&err);
    /* One file for both: the provider loader leaves mcpServers alone, and the reverse. */
    assert_rein_ok(rein_provider_config_apply_json(pc, doc, &err), &err);
    assert_rein_ok(rein_mcp_clients_add_config(set, doc, NULL, &err), &err);
    assert_int_equal(rein_mcp_clients_count(set), 2);
    assert_int_equal(rein_mcp_clients_add_config(set, doc, NULL, &err), REIN_EEXIST);
    status = rein_mcp_clients_status_json(set);
    assert_int_equal(json_array_size(status), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(status, 0), "state")),
                        "not connected");
    assert_string_equal(json_string_value(json_object_get(json_array_get(status, 1), "transport")),
                        "http");
    json_decref(status);
    json_decref(doc);
    doc = json_loads("{\"mcpServers\":[1]}", 0, NULL);
    assert_int_equal(rein_mcp_clients_add_config(set, doc, NULL, &err), REIN_EINVAL);
    json_decref(doc);
    rein_provider_config_free(pc);
    rein_mcp_clients_free(set);
}

/* Decoding, encoding, content mapping and SSE reading under allocation failure: no crash, no
 * leak, whatever allocation fails. */
static void torture_codec(void *arg)
{
    static const char text[] = "{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"tools/call\","
                               "\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}}";
    static const char stream[] = "id: s-0\nretry: 5\ndata: \n\ndata: {\"jsonrpc\":\"2.0\","
                                 "\"method\":\"notifications/progress\",\"params\":{}}\n\n";
    struct rein__mcp_msg m;
    struct rein__mcp_sse sse;
    struct seen seen;
    struct rein_buf b;
    json_t *bad = NULL, *r;

    (void)arg;
    rein_buf_init(&b, 0);
    if (rein__mcp_decode(text, sizeof(text) - 1, 0, &m, &bad, NULL) == REIN_OK) {
        r = rein__mcp_output_to_result(m.params);
        (void)(rein__mcp_write_result(&b, m.id, r) == REIN_OK);
        json_decref(r);
        rein__mcp_msg_release(&m);
    }
    json_decref(bad);
    bad = NULL;
    if (rein__mcp_decode("[1]", 3, 0, &m, &bad, NULL) == REIN_OK)
        rein__mcp_msg_release(&m);
    json_decref(bad);
    (void)(rein__mcp_write_error(&b, NULL, -32600, "x", NULL) == REIN_OK);
    rein_buf_release(&b);
    memset(&seen, 0, sizeof(seen));
    rein__mcp_sse_init(&sse, 0, keep, &seen);
    (void)(rein__mcp_sse_feed(&sse, stream, sizeof(stream) - 1) == REIN_OK);
    rein__mcp_sse_release(&sse);
}

static void codec_under_allocation_failure(void **state)
{
    (void)state;
    test_alloc_torture(torture_codec, NULL);
}

/* 2026-07-28's header values: plain visible ASCII, or the base64 sentinel form. */
static void header_values(void **state)
{
    static const struct {
        const char *in, *out; /* out NULL: refused */
    } cases[] = {
        {"us-west1", "us-west1"},
        {"a b\tc", "a b\tc"},
        {"=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, \xe4\xb8\x96\xe7\x95\x8c"},
        {"=?base64?IHBhZGRlZCA=?=", " padded "},
        {"=?base64?bGluZTEKbGluZTI=?=", "line1\nline2"},
        {"=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?="},
        {"=?base64?"
         "?=",
         ""},
        {"=?base64?YQ?=", NULL},       /* not padded */
        {"=?base64?Y=Fh?=", NULL},     /* '=' inside */
        {"=?base64?YWJj!A==?=", NULL}, /* not the alphabet */
        {"=?base64?AA==?=", NULL},     /* a NUL byte */
        {"caf\xc3\xa9", NULL},         /* not ASCII */
        {"a\rb", NULL},
        {"=?BASE64?YQ==?=", "=?BASE64?YQ==?="}, /* the markers are lowercase only */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = rein__mcp_header_decode(cases[i].in);
        if (cases[i].out) {
            assert_non_null(got);
            assert_string_equal(got, cases[i].out);
        } else {
            assert_null(got);
        }
        rein_free(got);
    }
}

/* The checks of a stateless request's headers against its body. */
static void stateless_headers(void **state)
{
    const char *text = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{"
                       "\"uri\":\"file:///a b\",\"_meta\":{\"io.modelcontextprotocol/"
                       "protocolVersion\":\"2026-07-28\"}}}";
    struct rein__mcp_msg m;
    char why[300];

    (void)state;
    assert_int_equal(rein__mcp_decode(text, strlen(text), 0, &m, NULL, NULL), REIN_OK);
    assert_string_equal(rein__mcp_request_version(&m), "2026-07-28");
    assert_true(rein__mcp_check_headers(&m, "2026-07-28", "2026-07-28", "resources/read",
                                        "file:///a b", why, sizeof(why)));
    assert_true(rein__mcp_check_headers(&m, "2026-07-28", "2026-07-28", "resources/read",
                                        "=?base64?ZmlsZTovLy9hIGI=?=", why, sizeof(why)));
    assert_false(rein__mcp_check_headers(&m, "2026-07-28", "2026-07-28", "resources/read",
                                         "file:///a", why, sizeof(why)));
    assert_non_null(strstr(why, "Mcp-Name"));
    assert_false(rein__mcp_check_headers(&m, "2026-07-28", "2026-07-28", "resources/read", NULL,
                                         why, sizeof(why)));
    assert_false(rein__mcp_check_headers(&m, "2026-07-28", "2026-07-28", "Resources/read",
                                         "file:///a b", why, sizeof(why)));
    assert_non_null(strstr(why, "Mcp-Method"));
    assert_false(rein__mcp_check_headers(&m, "2026-07-28", NULL, "resources/read", "file:///a b",
                                         why, sizeof(why)));
    assert_non_null(strstr(why, "MCP-Protocol-Version"));
    rein__mcp_msg_release(&m);
    /* No _meta version: a legacy request. */
    text = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{}}}";
    assert_int_equal(rein__mcp_decode(text, strlen(text), 0, &m, NULL, NULL), REIN_OK);
    assert_null(rein__mcp_request_version(&m));
    rein__mcp_msg_release(&m);
}

/* SEP-1034: a form answered without a person takes the defaults its schema gives, and only
 * those that fit their property; a required field without one declines the form. */
static json_t *elicit(const char *params_json, const char **why)
{
    json_t *params = json_loads(params_json, 0, NULL), *out;

    assert_non_null(params);
    out = rein_mcp_elicit_defaults(params, why);
    json_decref(params);
    assert_non_null(out);
    return out;
}

static void elicitation_defaults(void **state)
{
    const char *why = "unset";
    json_t *out, *want;

    (void)state;
    out = elicit("{\"message\":\"m\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{"
                 "\"name\":{\"type\":\"string\",\"default\":\"John Doe\"},"
                 "\"age\":{\"type\":\"integer\",\"default\":30},"
                 "\"score\":{\"type\":\"number\",\"default\":95.5},"
                 "\"status\":{\"type\":\"string\",\"enum\":[\"active\",\"inactive\"],"
                 "\"default\":\"active\"},"
                 "\"verified\":{\"type\":\"boolean\",\"default\":true},"
                 "\"tags\":{\"type\":\"array\",\"items\":{\"anyOf\":[{\"const\":\"a\"},"
                 "{\"const\":\"b\"}]},\"default\":[\"b\"]},"
                 "\"note\":{\"type\":\"string\"}},\"required\":[\"name\"]}}",
                 &why);
    want = json_loads("{\"action\":\"accept\",\"content\":{\"name\":\"John Doe\",\"age\":30,"
                      "\"score\":95.5,\"status\":\"active\",\"verified\":true,\"tags\":[\"b\"]}}",
                      0, NULL);
    assert_true(json_equal(out, want));
    assert_null(why);
    json_decref(want);
    json_decref(out);
    /* Defaults that do not fit are not sent: a choice not offered, a fraction for an integer,
     * a string for a boolean, an array item not among the choices. */
    out = elicit("{\"requestedSchema\":{\"type\":\"object\",\"properties\":{"
                 "\"s\":{\"type\":\"string\",\"oneOf\":[{\"const\":\"x\",\"title\":\"X\"}],"
                 "\"default\":\"y\"},"
                 "\"i\":{\"type\":\"integer\",\"default\":1.5},"
                 "\"b\":{\"type\":\"boolean\",\"default\":\"true\"},"
                 "\"t\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\"]},\"default\":[\"z\"]},"
                 "\"u\":{\"default\":1}}}}",
                 &why);
    want = json_loads("{\"action\":\"accept\",\"content\":{}}", 0, NULL);
    assert_true(json_equal(out, want));
    json_decref(want);
    json_decref(out);
    /* A required field without a usable default: declined, and why. */
    out = elicit("{\"requestedSchema\":{\"type\":\"object\",\"properties\":{"
                 "\"email\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\",\"default\":2}},"
                 "\"required\":[\"n\",\"email\"]}}",
                 &why);
    assert_string_equal(json_string_value(json_object_get(out, "action")), "decline");
    assert_null(json_object_get(out, "content"));
    assert_non_null(strstr(why, "requires"));
    json_decref(out);
    /* URL mode needs a person; a form without a schema is accepted empty. */
    out = elicit("{\"mode\":\"url\",\"url\":\"https://example.com\",\"message\":\"m\"}", &why);
    assert_string_equal(json_string_value(json_object_get(out, "action")), "decline");
    assert_non_null(why);
    json_decref(out);
    out = elicit("{\"message\":\"m\"}", NULL);
    assert_string_equal(json_string_value(json_object_get(out, "action")), "accept");
    json_decref(out);
}

/* rein_mcp_elicit_ask with the person's lines in input; what it showed goes to *shown (new). */
static json_t *ask_person(const char *params_json, const char *input, char **shown)
{
    json_t *params = json_loads(params_json, 0, NULL), *answer;
    FILE *in = fmemopen((void *)input, strlen(input), "r");
    size_t size = 0;
    FILE *out = open_memstream(shown, &size);

    assert_non_null(params);
    assert_non_null(in);
    assert_non_null(out);
    answer = rein_mcp_elicit_ask(params, in, out);
    fclose(in);
    fclose(out);
    json_decref(params);
    assert_non_null(answer);
    return answer;
}

/* A form answered at a terminal: each field read as its type and checked against its schema,
 * asked again with the reason when it does not fit; defaults for empty entries; decline,
 * cancel, the end of input, and a URL-mode request. */
static void elicitation_asked(void **state)
{
    static const char form[] =
        "{\"message\":\"Who are you?\",\"requestedSchema\":{\"type\":\"object\","
        "\"properties\":{"
        "\"name\":{\"type\":\"string\",\"title\":\"Name\",\"minLength\":2},"
        "\"age\":{\"type\":\"integer\",\"minimum\":0},"
        "\"color\":{\"type\":\"string\",\"oneOf\":[{\"const\":\"r\",\"title\":\"Red\"},"
        "{\"const\":\"g\",\"title\":\"Green\"}]},"
        "\"size\":{\"type\":\"string\",\"enum\":[\"s\",\"m\",\"l\"]},"
        "\"verified\":{\"type\":\"boolean\",\"default\":true},"
        "\"score\":{\"type\":\"number\"},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"anyOf\":[{\"const\":\"a\"},"
        "{\"const\":\"b\"}]}},"
        "\"note\":{\"type\":\"string\"},"
        "\"mail\":{\"type\":\"string\",\"format\":\"email\"}},"
        "\"required\":[\"name\",\"age\",\"color\"]}}";
    char *shown = NULL;
    json_t *answer, *want;

    (void)state;
    /* name: too short, then Ada; age: not a number, below the minimum, then 36; color: by its
     * title; size: by its number; verified: the default; score: a fraction; tags: one not
     * offered, then both; note: left out; mail: not an address, then one. */
    answer = ask_person(form,
                        "x\naccept\nA\n  Ada  \nold\n-1\n36\ngreen\n3\n\n2.5\nz\na, b\n\nnope\n"
                        "ada@example.com\n",
                        &shown);
    want = json_loads("{\"action\":\"accept\",\"content\":{\"name\":\"Ada\",\"age\":36,"
                      "\"color\":\"g\",\"size\":\"l\",\"verified\":true,\"score\":2.5,"
                      "\"tags\":[\"a\",\"b\"],\"mail\":\"ada@example.com\"}}",
                      0, NULL);
    assert_true(json_equal(answer, want));
    json_decref(want);
    json_decref(answer);
    assert_non_null(strstr(shown, "The server asks: Who are you?"));
    assert_non_null(strstr(shown, "Name (string, required)"));
    assert_non_null(strstr(shown, "  2) Green"));
    assert_non_null(strstr(shown, "not a whole number; try again"));
    assert_non_null(strstr(shown, "verified (boolean, default true)"));
    assert_non_null(strstr(shown, "not among the choices"));
    /* The schema's own checks: minLength and minimum, in the schema module's words. */
    assert_non_null(strstr(shown, "must be at least 2 characters long, got 1; try again"));
    assert_non_null(strstr(shown, "must be at least 0, got -1; try again"));
    assert_non_null(strstr(shown, "must be a valid email, got \"nope\"; try again"));
    free(shown);

    /* A required field left empty is asked again. */
    answer = ask_person(form, "a\n\nAda\n1\nr\n\n\n\n\n\n\n", &shown);
    assert_non_null(strstr(shown, "this field is required; try again"));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(answer, "content"), "name")), "Ada");
    assert_int_equal(json_object_size(json_object_get(answer, "content")), 4); /* + verified */
    json_decref(answer);
    free(shown);

    answer = ask_person(form, "d\n", &shown);
    assert_string_equal(json_string_value(json_object_get(answer, "action")), "decline");
    assert_null(json_object_get(answer, "content"));
    json_decref(answer);
    free(shown);
    answer = ask_person(form, "cancel\n", &shown);
    assert_string_equal(json_string_value(json_object_get(answer, "action")), "cancel");
    json_decref(answer);
    free(shown);
    /* The end of input, before the action or in the middle of the form, cancels. */
    answer = ask_person(form, "", &shown);
    assert_string_equal(json_string_value(json_object_get(answer, "action")), "cancel");
    json_decref(answer);
    free(shown);
    answer = ask_person(form, "a\nAda\n", &shown);
    assert_string_equal(json_string_value(json_object_get(answer, "action")), "cancel");
    assert_null(json_object_get(answer, "content"));
    json_decref(answer);
    free(shown);
    /* URL mode: the address is shown; accept carries no content. */
    answer = ask_person("{\"mode\":\"url\",\"message\":\"Sign in\",\"url\":"
                        "\"https://example.com/login\",\"elicitationId\":\"e1\"}",
                        "a\n", &shown);
    assert_string_equal(json_string_value(json_object_get(answer, "action")), "accept");
    assert_null(json_object_get(answer, "content"));
    assert_non_null(strstr(shown, "https://example.com/login"));
    json_decref(answer);
    free(shown);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(jsonrpc_kinds),
    cmocka_unit_test(elicitation_defaults),
    cmocka_unit_test(elicitation_asked),
    cmocka_unit_test(jsonrpc_bad_messages),
    cmocka_unit_test(jsonrpc_broken_responses),
    cmocka_unit_test(jsonrpc_limits_and_encoders),
    cmocka_unit_test(sse_reader),
    cmocka_unit_test(sse_limits),
    cmocka_unit_test(content_mapping),
    cmocka_unit_test(call_results),
    cmocka_unit_test(config_entries),
    cmocka_unit_test(config_documents),
    cmocka_unit_test(codec_under_allocation_failure),
    cmocka_unit_test(header_values),
    cmocka_unit_test(stateless_headers),
};

REIN_TEST_MAIN(tests)
