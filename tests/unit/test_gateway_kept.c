/*
 * Unit tests for the responses the gateway keeps for the Responses wire (src/gateway/kept.c,
 * decision 0090): what a later request finds by previous_response_id and item_reference, for
 * which client, and how the memory stays bounded (bytes, least recently used first, age).
 */
#include "test.h"

#include "gateway/gateway_int.h"

#include <string.h>
#include <time.h>

#define PARAM_MAX 128 /* room for a refusal's parameter */

/* A response's input and response object: a user message and an assistant message of n bytes
 * of text, with the item ids in_id and out_id. */
static void put(struct rein__gw_kept *k, const char *owner, const char *id, const char *prev,
                const char *in_id, const char *out_id, size_t n)
{
    char *text = malloc(n + 1);
    json_t *in, *out;

    assert_non_null(text);
    memset(text, 'x', n);
    text[n] = '\0';
    in = json_pack("[{s:s, s:s, s:s}]", "role", "user", "content", id, "id", in_id);
    out = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s, s:[{s:s, s:s}]}]}", "id", id, "object",
                    "response", "output", "type", "message", "id", out_id, "role", "assistant",
                    "content", "type", "output_text", "text", text);
    assert_non_null(in);
    assert_non_null(out);
    assert_rein_ok(rein__gw_kept_put(k, owner, id, prev, in, out), NULL);
    json_decref(in);
    json_decref(out);
    free(text);
}

/* Resolves body (JSON text) for owner: REIN_OK with the input as resolved in *input (new), or
 * the refusal's code with its parameter in param (PARAM_MAX bytes, may be NULL). */
static rein_err resolve(struct rein__gw_kept *k, const char *owner, const char *body,
                        json_t **input, char *param)
{
    json_t *b = json_loads(body, 0, NULL), *own = NULL;
    struct rein__gw_bad bad;
    rein_err rc;

    assert_non_null(b);
    memset(&bad, 0, sizeof(bad));
    rc = rein__gw_kept_resolve(k, owner, b, &own, &bad);
    *input = rc ? NULL : json_incref(json_object_get(b, "input"));
    if (param)
        snprintf(param, PARAM_MAX, "%s", bad.param);
    if (!rc)
        assert_non_null(own);
    json_decref(own);
    json_decref(b);
    return rc;
}

/* The "content" (user) or "id" (others) of each input item, joined by spaces. */
static const char *names(const json_t *input, char *out, size_t cap)
{
    size_t i, n = 0;
    json_t *item;

    out[0] = '\0';
    json_array_foreach(input, i, item)
    {
        const char *v =
            json_string_value(json_object_get(item, "role")) &&
                    strcmp(json_string_value(json_object_get(item, "role")), "user") == 0
                ? json_string_value(json_object_get(item, "content"))
                : json_string_value(json_object_get(item, "id"));
        n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? " " : "", v ? v : "?");
    }
    return out;
}

static void test_chain_and_references(void **state)
{
    struct rein__gw_kept k;
    json_t *input;
    char buf[256], param[PARAM_MAX];

    (void)state;
    assert_rein_ok(rein__gw_kept_init(&k, 1 << 20, 3600 * 1000), NULL);
    put(&k, "a", "r1", NULL, "u1", "m1", 4);
    put(&k, "a", "r2", "r1", "u2", "m2", 4);
    /* a chain, oldest first, then the request's own input */
    assert_rein_ok(resolve(&k, "a",
                           "{\"previous_response_id\":\"r2\",\"input\":[{\"role\":\"user\","
                           "\"content\":\"now\"}]}",
                           &input, NULL),
                   NULL);
    assert_string_equal(names(input, buf, sizeof(buf)), "r1 m1 r2 m2 now");
    json_decref(input);
    /* a string input becomes a user message */
    assert_rein_ok(
        resolve(&k, "a", "{\"previous_response_id\":\"r1\",\"input\":\"hi\"}", &input, NULL), NULL);
    assert_string_equal(names(input, buf, sizeof(buf)), "r1 m1 hi");
    json_decref(input);
    /* references, input and output items alike */
    assert_rein_ok(resolve(&k, "a",
                           "{\"input\":[{\"type\":\"item_reference\",\"id\":\"m2\"},"
                           "{\"type\":\"item_reference\",\"id\":\"u1\"}]}",
                           &input, NULL),
                   NULL);
    assert_string_equal(names(input, buf, sizeof(buf)), "m2 r1");
    json_decref(input);
    /* another owner finds nothing */
    assert_int_equal(
        resolve(&k, "b", "{\"previous_response_id\":\"r1\",\"input\":\"hi\"}", &input, param),
        REIN_EINVAL);
    assert_string_equal(param, "previous_response_id");
    assert_int_equal(resolve(&k, "b", "{\"input\":[{\"type\":\"item_reference\",\"id\":\"m1\"}]}",
                             &input, param),
                     REIN_EINVAL);
    assert_string_equal(param, "input");
    assert_int_equal(resolve(&k, "a", "{\"input\":[{\"type\":\"item_reference\"}]}", &input, param),
                     REIN_EINVAL);
    rein__gw_kept_release(&k);
}

/* Past the bound the least recently used go first, with their items; a response used again
 * is kept over an older one; one larger than the bound is not kept at all. */
static void test_bytes_bound_least_recently_used(void **state)
{
    struct rein__gw_kept k;
    json_t *input;
    char buf[256], param[PARAM_MAX];

    (void)state;
    assert_rein_ok(rein__gw_kept_init(&k, 3000, 3600 * 1000), NULL);
    put(&k, "a", "r1", NULL, "u1", "m1", 600);
    put(&k, "a", "r2", NULL, "u2", "m2", 600);
    put(&k, "a", "r3", NULL, "u3", "m3", 600);
    assert_true(k.bytes <= 3000);
    /* r1 used: r2 is the least recently used now */
    assert_rein_ok(
        resolve(&k, "a", "{\"previous_response_id\":\"r1\",\"input\":\"x\"}", &input, NULL), NULL);
    json_decref(input);
    put(&k, "a", "r4", NULL, "u4", "m4", 600);
    assert_true(k.bytes <= 3000);
    assert_int_equal(
        resolve(&k, "a", "{\"previous_response_id\":\"r2\",\"input\":\"x\"}", &input, param),
        REIN_EINVAL);
    assert_int_equal(resolve(&k, "a", "{\"input\":[{\"type\":\"item_reference\",\"id\":\"m2\"}]}",
                             &input, param),
                     REIN_EINVAL);
    assert_rein_ok(
        resolve(&k, "a", "{\"previous_response_id\":\"r1\",\"input\":\"x\"}", &input, NULL), NULL);
    assert_string_equal(names(input, buf, sizeof(buf)), "r1 m1 x");
    json_decref(input);
    assert_int_equal(json_object_size(k.responses), 3);
    /* too large for the bound: not kept, nothing else lost */
    put(&k, "a", "big", NULL, "ub", "mb", 5000);
    assert_int_equal(json_object_size(k.responses), 3);
    assert_int_equal(
        resolve(&k, "a", "{\"previous_response_id\":\"big\",\"input\":\"x\"}", &input, param),
        REIN_EINVAL);
    /* a chain whose start was forgotten says so */
    put(&k, "a", "r5", "r2", "u5", "m5", 10);
    assert_int_equal(
        resolve(&k, "a", "{\"previous_response_id\":\"r5\",\"input\":\"x\"}", &input, param),
        REIN_EINVAL);
    assert_string_equal(param, "previous_response_id");
    rein__gw_kept_release(&k);
}

/* A response unused for keep_ms is forgotten; keeping nothing refuses a previous response and
 * leaves references for the converter to refuse. */
static void test_age_and_keeping_nothing(void **state)
{
    struct rein__gw_kept k;
    json_t *input;
    char param[PARAM_MAX];
    struct timespec ts = {0, 30 * 1000 * 1000};

    (void)state;
    assert_rein_ok(rein__gw_kept_init(&k, 1 << 20, 10), NULL);
    put(&k, "a", "r1", NULL, "u1", "m1", 4);
    nanosleep(&ts, NULL);
    assert_int_equal(
        resolve(&k, "a", "{\"previous_response_id\":\"r1\",\"input\":\"x\"}", &input, param),
        REIN_EINVAL);
    put(&k, "a", "r2", NULL, "u2", "m2", 4);
    assert_int_equal(json_object_size(k.responses), 1); /* r1 went with the put */
    rein__gw_kept_release(&k);

    assert_rein_ok(rein__gw_kept_init(&k, -1, 0), NULL);
    put(&k, "a", "r1", NULL, "u1", "m1", 4);
    assert_int_equal(
        resolve(&k, "a", "{\"previous_response_id\":\"r1\",\"input\":\"x\"}", &input, param),
        REIN_EINVAL);
    assert_rein_ok(
        resolve(&k, "a", "{\"input\":[{\"type\":\"item_reference\",\"id\":\"m1\"}]}", &input, NULL),
        NULL);
    assert_string_equal(json_string_value(json_object_get(json_array_get(input, 0), "type")),
                        "item_reference");
    json_decref(input);
    rein__gw_kept_release(&k);
}

/* A client that holds more than half the bound makes room from its own responses: it cannot
 * push out another client's, older as they may be. */
static void test_one_client_cannot_push_out_the_others(void **state)
{
    struct rein__gw_kept k;
    json_t *input;
    char param[PARAM_MAX];

    (void)state;
    assert_rein_ok(rein__gw_kept_init(&k, 4000, 3600 * 1000), NULL);
    put(&k, "b", "b1", NULL, "ub1", "mb1", 750);
    put(&k, "a", "a1", NULL, "ua1", "ma1", 750);
    put(&k, "a", "a2", NULL, "ua2", "ma2", 750);
    put(&k, "a", "a3", NULL, "ua3", "ma3", 750);
    put(&k, "a", "a4", NULL, "ua4", "ma4", 750);
    assert_true(k.bytes <= 4000);
    assert_rein_ok(
        resolve(&k, "b", "{\"previous_response_id\":\"b1\",\"input\":\"x\"}", &input, NULL), NULL);
    json_decref(input);
    assert_int_equal(
        resolve(&k, "a", "{\"previous_response_id\":\"a1\",\"input\":\"x\"}", &input, param),
        REIN_EINVAL);
    assert_rein_ok(
        resolve(&k, "a", "{\"previous_response_id\":\"a4\",\"input\":\"x\"}", &input, NULL), NULL);
    json_decref(input);
    rein__gw_kept_release(&k);
}

/* A small request may not make a huge one: a chain is followed to 16 MiB, no further. */
static void test_chain_bytes_bound(void **state)
{
    struct rein__gw_kept k;
    json_t *input;
    char param[PARAM_MAX];

    (void)state;
    assert_rein_ok(rein__gw_kept_init(&k, 64 << 20, 3600 * 1000), NULL);
    put(&k, "a", "r1", NULL, "u1", "m1", 6 << 20);
    put(&k, "a", "r2", "r1", "u2", "m2", 6 << 20);
    put(&k, "a", "r3", "r2", "u3", "m3", 6 << 20);
    assert_rein_ok(
        resolve(&k, "a", "{\"previous_response_id\":\"r2\",\"input\":\"x\"}", &input, NULL), NULL);
    assert_int_equal(json_array_size(input), 5);
    json_decref(input);
    assert_int_equal(
        resolve(&k, "a", "{\"previous_response_id\":\"r3\",\"input\":\"x\"}", &input, param),
        REIN_EINVAL);
    assert_string_equal(param, "previous_response_id");
    rein__gw_kept_release(&k);
}

/* Clients are told apart by their key's hash, never by the key itself. */
/* What GET and DELETE /v1/responses/{id} read: the response as kept, its own input, for its
 * owner only; a deleted response is gone, and so are its items and its place in a chain. */
static void test_get_and_delete(void **state)
{
    struct rein__gw_kept k;
    json_t *resp, *input;
    size_t bytes, n;
    char names_out[64];

    (void)state;
    assert_rein_ok(rein__gw_kept_init(&k, 1 << 20, 60000), NULL);
    put(&k, "a", "resp_1", NULL, "in_1", "out_1", 10);
    put(&k, "a", "resp_2", "resp_1", "in_2", "out_2", 10);
    assert_int_equal(rein__gw_kept_get(&k, "a", "resp_2", &resp, &input), REIN_OK);
    assert_string_equal(json_string_value(json_object_get(resp, "id")), "resp_2");
    assert_string_equal(names(input, names_out, sizeof(names_out)), "resp_2");
    json_decref(resp);
    json_decref(input);
    assert_int_equal(rein__gw_kept_get(&k, "b", "resp_2", &resp, NULL), REIN_ENOTFOUND);
    assert_null(resp);
    assert_int_equal(rein__gw_kept_delete(&k, "b", "resp_1"), REIN_ENOTFOUND);
    assert_int_equal(rein__gw_kept_delete(&k, "a", "resp_1"), REIN_OK);
    assert_int_equal(rein__gw_kept_delete(&k, "a", "resp_1"), REIN_ENOTFOUND);
    assert_int_equal(rein__gw_kept_get(&k, "a", "resp_1", &resp, NULL), REIN_ENOTFOUND);
    assert_int_equal(resolve(&k, "a",
                             "{\"input\": [{\"type\": \"item_reference\", \"id\": "
                             "\"out_1\"}]}",
                             &input, NULL),
                     REIN_EINVAL);
    /* the response that continued it is still there, but its chain is broken */
    assert_int_equal(rein__gw_kept_get(&k, "a", "resp_2", &resp, NULL), REIN_OK);
    json_decref(resp);
    assert_int_equal(resolve(&k, "a",
                             "{\"input\": \"x\", \"previous_response_id\": "
                             "\"resp_2\"}",
                             &input, NULL),
                     REIN_EINVAL);
    rein__gw_kept_stats(&k, &bytes, &n);
    assert_int_equal(n, 1);
    rein__gw_kept_release(&k);

    assert_rein_ok(rein__gw_kept_init(&k, 0, 60000), NULL);
    assert_int_equal(rein__gw_kept_get(&k, "a", "resp_1", &resp, &input), REIN_ENOTFOUND);
    assert_int_equal(rein__gw_kept_delete(&k, "a", "resp_1"), REIN_ENOTFOUND);
    rein__gw_kept_release(&k);
}

static void test_owner(void **state)
{
    char a[REIN__GW_OWNER_LEN + 1], b[REIN__GW_OWNER_LEN + 1], none[REIN__GW_OWNER_LEN + 1];

    (void)state;
    rein__gw_kept_owner("sk-secret-1", a);
    rein__gw_kept_owner("sk-secret-2", b);
    rein__gw_kept_owner(NULL, none);
    assert_int_equal(strlen(a), REIN__GW_OWNER_LEN);
    assert_string_not_equal(a, b);
    assert_string_not_equal(a, none);
    assert_null(strstr(a, "secret"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_and_references),
        cmocka_unit_test(test_bytes_bound_least_recently_used),
        cmocka_unit_test(test_age_and_keeping_nothing),
        cmocka_unit_test(test_one_client_cannot_push_out_the_others),
        cmocka_unit_test(test_chain_bytes_bound),
        cmocka_unit_test(test_get_and_delete),
        cmocka_unit_test(test_owner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
