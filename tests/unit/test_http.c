/*
 * The server's request parsers (src/server/http_parse.c) on their own: percent-decoding,
 * route matching with encoded tricks, content types, Accept, Bearer keys.
 */
#include "test.h"

#include "server/server_int.h"

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

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pct_decode),
    cmocka_unit_test(route_match),
    cmocka_unit_test(headers),
    cmocka_unit_test(status_map),
};

REIN_TEST_MAIN(tests)
