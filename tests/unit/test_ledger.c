/*
 * Unit tests for the call ledger (src/tools/ledger.c), following the test list of
 * docs/DESIGN.md [cortex]: add_tool_call / update_tool_result / finalize_step, the
 * verifier's pass and fail cases, and FIFO pairing when the provider gives no call ids; plus
 * the hook the store will use and concurrent appends.
 */
#include "test.h"

#include <pthread.h>

static void add_call(rein_ledger *l, int step, const char *id, const char *tool, const char *args)
{
    json_t *a = rein_json_parse(args, strlen(args), 0, NULL);
    struct rein_ledger_call c = {
        .call_id = id, .tool = tool, .args = a, .has_step = true, .step = step};
    rein_error err;

    assert_rein_ok(rein_ledger_add_call(l, &c, NULL, &err), &err);
    json_decref(a);
}

static void update(rein_ledger *l, int step, const char *id, const char *tool, const char *result)
{
    json_t *r = json_string(result);
    rein_error err;

    assert_rein_ok(rein_ledger_update_result(l, true, step, id, tool, REIN_CALL_SUCCESS, r, &err),
                   &err);
    json_decref(r);
}

static const char *entry_str(const rein_ledger *l, size_t i, const char *key, char *buf,
                             size_t size)
{
    json_t *e = rein_ledger_entry_json(l, i);
    const char *v = json_string_value(json_object_get(e, key));

    snprintf(buf, size, "%s", v ? v : "(null)");
    json_decref(e);
    return buf;
}

static void test_verify_pass_when_no_tool_calls(void **state)
{
    rein_ledger *l = rein_ledger_new();
    json_t *pending = rein_ledger_finalize(l, true, 0);

    (void)state;
    assert_true(rein_ledger_verify(l, true, 0));
    assert_int_equal(json_array_size(pending), 0);
    json_decref(pending);
    rein_ledger_free(l);
}

static void test_verify_pass_when_all_success(void **state)
{
    rein_ledger *l = rein_ledger_new();
    char buf[64];

    (void)state;
    add_call(l, 1, "call_a", "write_file", "{\"path\":\"main.py\",\"content\":\"...\"}");
    add_call(l, 1, "call_b", "read_file", "{\"path\":\"main.py\"}");
    assert_false(rein_ledger_verify(l, true, 1));
    update(l, 1, "call_b", "read_file", "...");
    update(l, 1, "call_a", "write_file", "File written");
    assert_true(rein_ledger_verify(l, true, 1));
    assert_string_equal(entry_str(l, 0, "status", buf, sizeof(buf)), "success");
    assert_string_equal(entry_str(l, 0, "result", buf, sizeof(buf)), "File written");
    assert_string_equal(entry_str(l, 1, "result", buf, sizeof(buf)), "...");
    rein_ledger_free(l);
}

static void test_verify_fail_when_has_pending(void **state)
{
    rein_ledger *l = rein_ledger_new();
    json_t *pending;

    (void)state;
    add_call(l, 3, "call_a", "write_file", "{\"path\":\"a\"}");
    add_call(l, 3, "call_b", "run_tests", "{}");
    update(l, 3, "call_a", "write_file", "ok");
    /* finalize_step: the step is over; one call never got its result. */
    pending = rein_ledger_finalize(l, true, 3);
    assert_false(rein_ledger_verify(l, true, 3));
    assert_int_equal(json_array_size(pending), 1);
    json_t *e = json_array_get(pending, 0);
    assert_string_equal(json_string_value(json_object_get(e, "call_id")), "call_b");
    assert_string_equal(json_string_value(json_object_get(e, "tool")), "run_tests");
    assert_string_equal(json_string_value(json_object_get(e, "status")), "pending");
    assert_true(json_is_null(json_object_get(e, "result")));
    assert_true(json_is_null(json_object_get(e, "response_time")));
    json_decref(pending);
    rein_ledger_free(l);
}

static void test_fifo_pairing_without_ids(void **state)
{
    rein_ledger *l = rein_ledger_new();
    char buf[64];

    (void)state;
    /* An Ollama-style turn: three calls, no ids, two of them to the same tool. */
    add_call(l, 0, NULL, "get_weather", "{\"city\":\"Paris\"}");
    add_call(l, 0, NULL, "get_time", "{}");
    add_call(l, 0, NULL, "get_weather", "{\"city\":\"Tokyo\"}");
    update(l, 0, NULL, "get_weather", "sunny in Paris");
    update(l, 0, NULL, "get_weather", "rain in Tokyo");
    assert_string_equal(entry_str(l, 0, "result", buf, sizeof(buf)), "sunny in Paris");
    assert_string_equal(entry_str(l, 2, "result", buf, sizeof(buf)), "rain in Tokyo");
    assert_string_equal(entry_str(l, 1, "status", buf, sizeof(buf)), "pending");
    assert_false(rein_ledger_verify(l, true, 0));
    update(l, 0, NULL, "get_time", "12:00");
    assert_true(rein_ledger_verify(l, true, 0));
    /* Every entry got an id of its own even without the provider's. */
    assert_true(strncmp(entry_str(l, 0, "call_id", buf, sizeof(buf)), "call_", 5) == 0);
    rein_ledger_free(l);
}

static void test_results_are_paired_by_call_id(void **state)
{
    rein_ledger *l = rein_ledger_new();
    char buf[64];
    rein_error err;

    (void)state;
    add_call(l, 0, "call_1", "search", "{\"q\":\"a\"}");
    add_call(l, 0, "call_2", "search", "{\"q\":\"b\"}");
    /* Results arrive out of order; the ids, not the order, decide. */
    update(l, 0, "call_2", "search", "b results");
    update(l, 0, "call_1", "search", "a results");
    assert_string_equal(entry_str(l, 0, "result", buf, sizeof(buf)), "a results");
    assert_string_equal(entry_str(l, 1, "result", buf, sizeof(buf)), "b results");
    /* A second result for the same call finds nothing pending. */
    assert_int_equal(
        rein_ledger_update_result(l, true, 0, "call_1", "search", REIN_CALL_SUCCESS, NULL, &err),
        REIN_ENOTFOUND);
    assert_int_equal(
        rein_ledger_update_result(l, true, 0, NULL, "nothing", REIN_CALL_ERROR, NULL, &err),
        REIN_ENOTFOUND);
    rein_ledger_free(l);
}

static void test_steps_are_kept_apart(void **state)
{
    rein_ledger *l = rein_ledger_new();
    json_t *all, *step1;

    (void)state;
    add_call(l, 1, NULL, "a", "{}");
    add_call(l, 2, NULL, "a", "{}");
    /* A result for step 2 never completes step 1's call. */
    update(l, 2, NULL, "a", "done");
    assert_false(rein_ledger_verify(l, true, 1));
    assert_true(rein_ledger_verify(l, true, 2));
    assert_true(rein_ledger_verify(l, true, 9));
    all = rein_ledger_json(l, true, false, 0);
    step1 = rein_ledger_json(l, false, true, 1);
    assert_int_equal(json_array_size(all), 2);
    assert_int_equal(json_array_size(step1), 1);
    assert_int_equal(rein_ledger_pending_count(l, true, false, 0), 1);
    json_decref(all);
    json_decref(step1);
    rein_ledger_free(l);
}

static void test_entry_shape(void **state)
{
    rein_ledger *l = rein_ledger_new();
    struct rein_ledger_call c = {.call_id = "call_9",
                                 .tool = "file_search",
                                 .sent_name = "fileSearch",
                                 .trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"};
    json_t *e;
    size_t at = 99;

    (void)state;
    assert_rein_ok(rein_ledger_add_call(l, &c, &at, NULL), NULL);
    assert_int_equal(at, 0);
    e = rein_ledger_entry_json(l, 0);
    static const char *const keys[] = {"call_id",   "tool",      "args",          "status",
                                       "result",    "call_time", "response_time", "step",
                                       "sent_name", "trace_id",  "latency_ms",    "interrupted"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        assert_non_null(json_object_get(e, keys[i]));
    assert_int_equal(json_object_size(e), sizeof(keys) / sizeof(keys[0]));
    assert_true(json_is_null(json_object_get(e, "step")));
    assert_string_equal(json_string_value(json_object_get(e, "sent_name")), "fileSearch");
    const char *t = json_string_value(json_object_get(e, "call_time"));
    assert_int_equal(strlen(t), 24); /* 2026-11-21T21:07:03.120Z */
    assert_int_equal(t[23], 'Z');
    json_decref(e);
    assert_null(rein_ledger_entry_json(l, 1));
    rein_ledger_free(l);
}

struct seen {
    pthread_mutex_t lock;
    json_t *entries;
};

static rein_err remember(void *userdata, const struct rein_ledger_entry *entry)
{
    struct seen *s = userdata;

    pthread_mutex_lock(&s->lock);
    json_array_append_new(s->entries, rein_ledger_entry_to_json(entry));
    pthread_mutex_unlock(&s->lock);
    return REIN_OK;
}

static void test_hook_sees_every_change(void **state)
{
    rein_ledger *l = rein_ledger_new();
    struct seen s = {PTHREAD_MUTEX_INITIALIZER, json_array()};

    (void)state;
    rein_ledger_set_hook(l, remember, &s);
    add_call(l, 0, "call_1", "a", "{\"x\":1}");
    update(l, 0, "call_1", "a", "r");
    assert_int_equal(json_array_size(s.entries), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(s.entries, 0), "status")),
                        "pending");
    assert_string_equal(json_string_value(json_object_get(json_array_get(s.entries, 1), "status")),
                        "success");
    json_decref(s.entries);
    rein_ledger_free(l);
}

static void *append_many(void *arg)
{
    rein_ledger *l = arg;

    for (int i = 0; i < 500; i++) {
        char id[32];
        snprintf(id, sizeof(id), "call_%p_%d", (void *)&id, i);
        struct rein_ledger_call c = {.call_id = id, .tool = "t"};
        if (rein_ledger_add_call(l, &c, NULL, NULL) == REIN_OK &&
            rein_ledger_update_result(l, false, 0, id, "t", REIN_CALL_SUCCESS, NULL, NULL))
            break; /* the count check below reports it */
    }
    return NULL;
}

static void test_concurrent_appends_and_updates(void **state)
{
    rein_ledger *l = rein_ledger_new();
    pthread_t t[6];

    (void)state;
    for (int i = 0; i < 6; i++)
        assert_int_equal(pthread_create(&t[i], NULL, append_many, l), 0);
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(rein_ledger_count(l), 3000);
    assert_true(rein_ledger_verify(l, false, 0));
    rein_ledger_free(l);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_verify_pass_when_no_tool_calls),
    cmocka_unit_test(test_verify_pass_when_all_success),
    cmocka_unit_test(test_verify_fail_when_has_pending),
    cmocka_unit_test(test_fifo_pairing_without_ids),
    cmocka_unit_test(test_results_are_paired_by_call_id),
    cmocka_unit_test(test_steps_are_kept_apart),
    cmocka_unit_test(test_entry_shape),
    cmocka_unit_test(test_hook_sees_every_change),
    cmocka_unit_test(test_concurrent_appends_and_updates),
};

REIN_TEST_MAIN(tests)
