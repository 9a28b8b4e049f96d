/*
 * The server's request parsers (src/server/http_parse.c) on their own: percent-decoding,
 * route matching with encoded tricks, content types, Accept, Bearer keys.
 */
#include "test.h"

#include "server/server_int.h"

#include <limits.h>

static void pct_decode(void **state)
{
    char out[64];
    size_t n = 0;

    (void)state;
    assert_true(rein__http_pct_decode("a%2Fb+c", 7, false, out, &n));
    assert_string_equal(out, "a/b+c");
    assert_true(rein__http_pct_decode("a%2fb+c", 7, true, out, &n));
    assert_string_equal(out, "a/b c");
    assert_int_equal(n, 5);
    assert_false(rein__http_pct_decode("a%2", 3, false, out, &n));
    assert_false(rein__http_pct_decode("a%", 2, false, out, &n));
    assert_false(rein__http_pct_decode("%zz", 3, false, out, &n));
    assert_false(rein__http_pct_decode("%00", 3, false, out, &n));
    assert_true(rein__http_pct_decode("%252F", 5, false, out, &n));
    assert_string_equal(out, "%2F"); /* decoded once only */
}

static void route_match(void **state)
{
    rein_arena *a = rein_arena_new(0);
    char names[REIN_HTTP_MAX_PARAMS][32];
    char *values[REIN_HTTP_MAX_PARAMS];
    int n = -1;

    (void)state;
    assert_true(rein__http_match("/a/{id}", "/a/x1", a, names, values, &n));
    assert_int_equal(n, 1);
    assert_string_equal(names[0], "id");
    assert_string_equal(values[0], "x1");
    assert_true(rein__http_match("/a/{id}", "/a/..%2Fb", a, names, values, &n));
    assert_string_equal(values[0], "../b");
    assert_false(rein_store_id_is_valid(values[0]));
    assert_true(rein__http_match("/a/{id}", "/a/%zz", a, names, values, &n));
    assert_null(values[0]);
    assert_false(rein__http_match("/a/{id}", "/a/", a, names, values, &n));
    assert_false(rein__http_match("/a/{id}", "/a/b/c", a, names, values, &n));
    assert_false(rein__http_match("/a/{id}", "/a", a, names, values, &n));
    assert_false(rein__http_match("/a", "/a/", a, names, values, &n));
    assert_true(rein__http_match("/a", "/%61", a, names, values, &n));
    assert_true(rein__http_match("/s/{id}/invoke", "/s/echo/invoke", a, names, values, &n));
    assert_false(rein__http_match("/s/{id}/invoke", "/s/echo/invokes", a, names, values, &n));
    assert_true(rein__http_match("/c/{id}/approvals/{call_id}", "/c/c1/approvals/call_9", a, names,
                                 values, &n));
    assert_int_equal(n, 2);
    assert_string_equal(names[1], "call_id");
    assert_string_equal(values[1], "call_9");
    assert_false(rein__http_match("/a", "a", a, names, values, &n));
    rein_arena_free(a);
}

static void headers(void **state)
{
    char *keys[] = {"k1", "secret"};

    (void)state;
    assert_true(rein__http_is_json_type("application/json"));
    assert_true(rein__http_is_json_type("Application/JSON; charset=utf-8"));
    assert_false(rein__http_is_json_type("application/jsonx"));
    assert_false(rein__http_is_json_type("text/plain"));
    assert_false(rein__http_is_json_type(NULL));
    assert_true(rein__http_accepts_sse("application/json, text/event-stream;q=0.9"));
    assert_false(rein__http_accepts_sse("application/json"));
    assert_true(rein__http_bearer_ok("Bearer secret", keys, 2));
    assert_true(rein__http_bearer_ok("bearer  k1 ", keys, 2));
    assert_false(rein__http_bearer_ok("Bearer secre", keys, 2));
    assert_false(rein__http_bearer_ok("Bearer ", keys, 2));
    assert_false(rein__http_bearer_ok("Basic secret", keys, 2));
    assert_false(rein__http_bearer_ok(NULL, keys, 2));
    {
        long v = 0;
        assert_true(rein__http_parse_uint("42", 1, 100, &v));
        assert_int_equal(v, 42);
        assert_false(rein__http_parse_uint("0", 1, 100, &v));
        assert_false(rein__http_parse_uint("-1", 0, 100, &v));
        assert_false(rein__http_parse_uint("1e3", 0, 10000, &v));
        assert_false(rein__http_parse_uint("99999999999999", 0, 100, &v));
        /* Digits only, 1 to 9 of them: what a Content-Length or a limit may be here. */
        assert_true(rein__http_parse_uint("999999999", 0, 999999999, &v));
        assert_int_equal(v, 999999999);
        assert_true(rein__http_parse_uint("007", 0, 100, &v));
        assert_int_equal(v, 7);
        assert_false(rein__http_parse_uint("1000000000", 0, LONG_MAX, &v));
        assert_false(rein__http_parse_uint("", 0, 100, &v));
        assert_false(rein__http_parse_uint(NULL, 0, 100, &v));
        assert_false(rein__http_parse_uint("+1", 0, 100, &v));
        assert_false(rein__http_parse_uint(" 1", 0, 100, &v));
        assert_false(rein__http_parse_uint("1 ", 0, 100, &v));
        assert_false(rein__http_parse_uint("101", 0, 100, &v));
        assert_int_equal(v, 7);
    }
}

static void status_map(void **state)
{
    (void)state;
    assert_int_equal(rein_http_status_for(REIN_EINVAL), 400);
    assert_int_equal(rein_http_status_for(REIN_ENOTFOUND), 404);
    assert_int_equal(rein_http_status_for(REIN_EBUSY), 409);
    assert_int_equal(rein_http_status_for(REIN_ESTORE), 503);
    assert_string_equal(rein_http_error_code_for(REIN_ENOTFOUND), "not_found");
}

/* What the acceptor answers itself (libmicrohttpd 0.9.75 stacks two answers there). */
static void head_verdicts(void **state)
{
    static const struct {
        const char *head;
        int verdict;
        bool complete;
    } cases[] = {
        {"POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n", 0, true},
        {"POST / HTTP/1.1\r\nContent-Length:    12\r\n\r\n", 0, true}, /* leading blanks */
        {"POST / HTTP/1.1\r\ncontent-length: 0\r\n\r\n", 0, true},
        {"POST / HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n", 0, true},
        {"POST / HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n", 413, true},
        {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999 x\r\n\r\n", 413, true},
        {"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400, true},
        {"POST / HTTP/1.1\r\nContent-Length: x99999999999999999999\r\n\r\n", 400, true},
        {"POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", 400, true},
        {"POST / HTTP/1.1\r\nContent-Length: 12 \r\n\r\n", 400, true},
        {"POST / HTTP/1.1\nContent-Length: -1\n\n", 400, true}, /* bare LF ends lines */
        {"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", 400, true},
        /* 0.9.75 appends a continuation line to the field's name, not to its value */
        {"POST / HTTP/1.1\r\nContent-Length: 1\r\n 2\r\n\r\n", 0, true},
        {"POST / HTTP/1.1\r\nContent-Length: x\r\n y\r\n\r\n", 0, true},
        {"POST / HTTP/1.1\r\nContent-: abc\r\n Length\r\n\r\n", 400, true},
        {"POST / HTTP/1.1\r\nContent-: abc\r\n\tLeng\r\n th\r\nX: y\r\n\r\n", 400, true},
        {"POST / HTTP/1.1\r\nX-A: 1\r\n x\r\nContent-Length: x\r\n\r\n", 400, true},
        /* a first field line that starts with a blank is a name with a blank */
        {"POST / HTTP/1.1\r\n Content-Length: abc\r\n\r\n", 0, true},
        /* only the first Content-Length is read; Transfer-Encoding anywhere: none is */
        {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: x\r\n\r\n", 0, true},
        {"POST / HTTP/1.1\r\nContent-Length: x\r\nTransfer-Encoding: chunked\r\n\r\n", 0, true},
        {"POST / HTTP/1.1\r\ntransfer-encoding: gzip\r\nContent-Length: x\r\n\r\n", 0, true},
        /* a name with a blank before the colon is another name */
        {"POST / HTTP/1.1\r\nContent-Length : x\r\n\r\n", 0, true},
        /* empty lines before the request line are skipped */
        {"\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400, true},
        /* a line without a colon: libmicrohttpd drops the request before any length */
        {"POST / HTTP/1.1\r\nbroken\r\nContent-Length: x\r\n\r\n", 0, true},
        /* not complete yet: no verdict */
        {"POST / HTTP/1.1\r\nContent-Length: x\r\n", 0, false},
        {"POST / HTTP/1.1\r\nContent-Length: x", 0, false},
        {"", 0, false},
        {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0, true},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool complete = !cases[i].complete;
        int v = rein__http_head_verdict(cases[i].head, strlen(cases[i].head), &complete);
        if (v != cases[i].verdict || complete != cases[i].complete)
            fail_msg("case %zu (%s): verdict %d complete %d", i, cases[i].head, v, complete);
    }
    /* A NUL ends a line's value as it ends libmicrohttpd's C string. */
    {
        static const char nul[] = "POST / HTTP/1.1\r\nContent-Length: 5\0xy\r\n\r\n";
        bool complete = false;
        assert_int_equal(rein__http_head_verdict(nul, sizeof(nul) - 1, &complete), 0);
        assert_true(complete);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pct_decode), cmocka_unit_test(route_match),   cmocka_unit_test(headers),
    cmocka_unit_test(status_map), cmocka_unit_test(head_verdicts),
};

REIN_TEST_MAIN(tests)
