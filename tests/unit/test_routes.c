/*
 * The request bodies of the skill host and agent API (src/server/routes_bodies.c) on their own:
 * what each reader accepts, every problem reported with its JSON Pointer, titles cut on
 * character boundaries, and the readers under allocation failure (no crash, no leak).
 */
#include "test.h"

#include "server/server_int.h"

static json_t *parse(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);

    assert_non_null(v);
    return v;
}

/* The paths of the problems, joined by spaces. */
static const char *paths(const json_t *details)
{
    static char out[512];
    const json_t *d;
    size_t i;

    out[0] = '\0';
    json_array_foreach(details, i, d)
    {
        size_t len = strlen(out);
        snprintf(out + len, sizeof(out) - len, "%s%s", len ? " " : "",
                 json_string_value(json_object_get(d, "path")));
    }
    return out;
}

static void chat_body(void **state)
{
    struct rein__chat_body cb;
    json_t *body, *details = json_array();

    (void)state;
    body = parse("{\"message\": \"hi\", \"conversation_id\": \"c-1\", \"mode\": \"propose\","
                 " \"verification\": \"force\", \"max_tool_calls\": 3, \"max_tokens\": 900,"
                 " \"timeout_ms\": 5000}");
    assert_true(rein__chat_body_read(body, &cb, details));
    assert_string_equal(cb.message, "hi");
    assert_string_equal(cb.conv_id, "c-1");
    assert_int_equal(cb.turn.mode, REIN_AGENT_MODE_PROPOSE);
    assert_int_equal(cb.turn.verification, REIN_AGENT_VERIFY_FORCE);
    assert_int_equal(cb.turn.max_tool_calls, 3);
    assert_int_equal(cb.turn.max_tokens, 900);
    assert_int_equal(cb.turn.timeout_ms, 5000);
    json_decref(body);

    /* Defaults: auto mode, auto verification, no limits, a new conversation. */
    body = parse("{\"message\": \"hi\", \"conversation_id\": null, \"mode\": null}");
    assert_true(rein__chat_body_read(body, &cb, details));
    assert_null(cb.conv_id);
    assert_int_equal(cb.turn.mode, REIN_AGENT_MODE_AUTO);
    assert_int_equal(cb.turn.max_tool_calls, 0);
    json_decref(body);

    /* Every problem at once, in member order after the unknown ones. */
    body = parse("{\"mdoe\": \"auto\", \"message\": \"\\t \", \"mode\": \"often\","
                 " \"max_tokens\": 0, \"conversation_id\": \"a/b\"}");
    assert_false(rein__chat_body_read(body, &cb, details));
    assert_string_equal(paths(details), "/mdoe /message /conversation_id /mode /max_tokens");
    json_decref(body);
    json_decref(details);
}

static void other_bodies(void **state)
{
    struct rein_call_input in;
    json_t *body, *details = json_array();
    char reason[REIN__REASON_MAX];
    int64_t timeout = 0;
    bool flag = false;

    (void)state;
    memset(&in, 0, sizeof(in));
    body = parse("{\"arguments\": {\"text\": \"x\"}, \"call_id\": \"k\", \"timeout_ms\": 7}");
    assert_true(rein__invoke_body_read(body, "echo", &in, &timeout, details));
    assert_string_equal(in.call_id, "k");
    assert_int_equal(timeout, 7);
    assert_true(json_is_object(in.args));
    json_decref(body);
    body = parse("{\"tool\": \"calc\", \"call_id\": \"a b\"}");
    assert_false(rein__invoke_body_read(body, "echo", &in, &timeout, details));
    assert_string_equal(paths(details), "/arguments /tool /call_id");
    json_array_clear(details);
    json_decref(body);

    body = parse("{\"approve\": false}");
    flag = true;
    assert_true(rein__approval_body_read(body, &flag, details));
    assert_false(flag);
    json_decref(body);
    body = parse("{\"approve\": 1}");
    assert_false(rein__approval_body_read(body, &flag, details));
    json_array_clear(details);
    json_decref(body);

    body = parse("{\"action\": \"discard\"}");
    assert_true(rein__proposal_body_read(body, &flag, details));
    assert_false(flag);
    json_decref(body);
    body = parse("{\"action\": \"RUN\"}");
    assert_false(rein__proposal_body_read(body, &flag, details));
    json_array_clear(details);
    json_decref(body);

    assert_true(rein__cancel_body_read(NULL, reason, details));
    assert_string_equal(reason, "cancelled by a client");
    body = parse("{\"reason\": \"stop\"}");
    assert_true(rein__cancel_body_read(body, reason, details));
    assert_string_equal(reason, "cancelled by a client: stop");
    json_decref(body);
    body = parse("[]");
    assert_false(rein__cancel_body_read(body, reason, details));
    assert_string_equal(paths(details), "");
    json_decref(body);
    json_decref(details);
}

static void read_all(void *arg)
{
    struct rein__chat_body cb;
    struct rein_call_input in;
    int64_t timeout = 0;
    json_t *details = json_array();
    json_t *bad =
        json_loads("{\"mode\": 1, \"x\": [], \"message\": \"\", \"max_tokens\": -1}", 0, NULL);
    json_t *good = json_loads("{\"message\": \"hi\", \"arguments\": {}}", 0, NULL);

    (void)arg;
    memset(&in, 0, sizeof(in));
    if (details && bad && good) {
        (void)rein__chat_body_read(bad, &cb, details);
        (void)rein__invoke_body_read(good, "echo", &in, &timeout, details);
    }
    json_decref(good);
    json_decref(bad);
    json_decref(details);
}

static void bodies_out_of_memory(void **state)
{
    (void)state;
    test_alloc_torture(read_all, NULL);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(chat_body),
    cmocka_unit_test(other_bodies),
    cmocka_unit_test(bodies_out_of_memory),
};

REIN_TEST_MAIN(tests)
