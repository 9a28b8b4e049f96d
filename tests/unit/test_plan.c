/*
 * Unit tests for the plan (include/rein/plan.h): the seed's tests by name (the verifier's
 * pass/fail rules, rewrite_step, split_step), the Plan methods, create_plan's and replan's
 * checks (the replanner's output formats), the text-claim check, saving and loading with the
 * seed's field names (the data-driven cases in tests/data/plan/), resuming, showing, events,
 * and allocation failure.
 */
#include "test.h"

#include "plan/plan_int.h"

#include <dirent.h>
#include <sys/stat.h>

static json_t *parse(const char *text)
{
    rein_error err;
    json_t *j = rein_json_parse(text, strlen(text), 0, &err);

    assert_non_null(j);
    return j;
}

static rein_plan *spec(const char *text)
{
    json_t *j = parse(text);
    rein_error err;
    rein_plan *p = rein_plan_from_spec(j, "the request", &err);

    if (!p)
        fail_msg("%s", err.msg);
    json_decref(j);
    return p;
}

static void deps_are(const rein_plan *p, size_t i, const char *want)
{
    size_t n;
    const int *d = rein_plan_step_deps(p, i, &n);
    char got[128] = "";

    for (size_t k = 0; k < n; k++) {
        size_t l = strlen(got);
        snprintf(got + l, sizeof(got) - l, "%s%d", k ? "," : "", d[k]);
    }
    assert_string_equal(got, want);
}

/* Records a call with a result, as the engine's ledger mirror does. */
static void call(rein_plan *p, size_t i, const char *tool, const char *args,
                 enum rein_call_status status, const char *result)
{
    json_t *a = args ? parse(args) : NULL, *r = result ? parse(result) : NULL;
    rein_error err;

    assert_rein_ok(rein_plan_add_tool_call(p, i, NULL, tool, a, &err), &err);
    if (status != REIN_CALL_PENDING)
        assert_rein_ok(rein_plan_update_tool_result(p, i, NULL, tool, status, r, &err), &err);
    json_decref(a);
    json_decref(r);
}

/* ---- the seed's verifier tests ---- */

static void test_verify_pass_when_no_tool_calls(void **state)
{
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"a\"]}");
    json_t *report = NULL;

    (void)state;
    assert_true(rein_plan_verify_step(p, 0, NULL, NULL, NULL, 0, &report));
    assert_true(json_is_true(json_object_get(report, "passed")));
    assert_string_equal(json_string_value(json_object_get(report, "reason")),
                        "the step made no tool calls");
    json_decref(report);
    rein_plan_free(p);
}

static void test_verify_pass_when_all_success(void **state)
{
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"a\"]}");

    (void)state;
    call(p, 0, "write_file", "{\"path\":\"main.py\",\"content\":\"x\"}", REIN_CALL_SUCCESS,
         "\"File written\"");
    call(p, 0, "read", "{\"path\":\"main.py\"}", REIN_CALL_SUCCESS, "\"x\"");
    assert_true(rein_plan_verify_step(p, 0, NULL, NULL, NULL, 0, NULL));
    /* A call that ran and failed is not a lost one: the seed passes it. */
    call(p, 0, "read", "{}", REIN_CALL_ERROR, "{\"code\":\"execution_failed\"}");
    assert_true(rein_plan_verify_step(p, 0, NULL, NULL, NULL, 0, NULL));
    rein_plan_free(p);
}

static void test_verify_fail_when_has_pending(void **state)
{
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"a\"]}");
    json_t *report = NULL, *pending;

    (void)state;
    call(p, 0, "write_file", "{\"path\":\"main.py\"}", REIN_CALL_SUCCESS, "\"ok\"");
    call(p, 0, "write_file", "{\"path\":\"test.py\"}", REIN_CALL_PENDING, NULL);
    assert_false(rein_plan_verify_step(p, 0, NULL, NULL, NULL, 0, &report));
    pending = json_object_get(report, "pending");
    assert_int_equal(json_array_size(pending), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(pending, 0), "args"), "path")),
                        "test.py");
    assert_non_null(strstr(json_string_value(json_object_get(report, "reason")),
                           "1 call never got a response: write_file"));
    json_decref(report);
    rein_plan_free(p);
}

/* ---- the seed's plan tests ---- */

static void test_rewrite_step_updates_description(void **state)
{
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"a\",\"b\"],\"dependencies\":{\"1\":[0]}}");
    rein_error err;

    (void)state;
    call(p, 0, "x", "{}", REIN_CALL_PENDING, NULL);
    assert_rein_ok(rein_plan_rewrite_step(p, 0, "a, done properly", &err), &err);
    assert_string_equal(rein_plan_step_description(p, 0), "a, done properly");
    /* The rest of the step and the plan stay as they were. */
    assert_int_equal(json_array_size(rein_plan_step_history(p, 0)), 1);
    deps_are(p, 1, "0");
    assert_int_equal(rein_plan_rewrite_step(p, 0, "", &err), REIN_EINVAL);
    assert_int_equal(rein_plan_rewrite_step(p, 5, "x", &err), REIN_EINVAL);
    rein_plan_free(p);
}

static void test_split_step_updates_dag(void **state)
{
    /* 0 → 1 → 3, 2 → 3; split 1 into a, b, c where b needs a. */
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"s0\",\"s1\",\"s2\",\"s3\"],"
                        "\"dependencies\":{\"1\":[0],\"3\":[1,2]}}");
    const char *parts[] = {"a", "b", "c"};
    json_t *deps = parse("{\"1\":[0]}");
    rein_error err;

    (void)state;
    assert_rein_ok(rein_plan_split_step(p, 1, parts, 3, deps, &err), &err);
    assert_int_equal(rein_plan_step_count(p), 6);
    assert_string_equal(rein_plan_step_description(p, 0), "s0");
    assert_string_equal(rein_plan_step_description(p, 1), "a");
    assert_string_equal(rein_plan_step_description(p, 2), "b");
    assert_string_equal(rein_plan_step_description(p, 3), "c");
    assert_string_equal(rein_plan_step_description(p, 4), "s2");
    assert_string_equal(rein_plan_step_description(p, 5), "s3");
    /* The new steps inherit step 1's dependency on 0; b also needs a. */
    deps_are(p, 1, "0");
    deps_are(p, 2, "0,1");
    deps_are(p, 3, "0");
    /* s3 depended on old 1 and on s2: now on the new steps nothing else in the split needs
     * (b and c), and on s2 at its new place. */
    deps_are(p, 5, "2,3,4");
    deps_are(p, 4, "");
    for (size_t i = 1; i <= 3; i++)
        assert_int_equal(rein_plan_step_status(p, i), REIN_PLAN_NOT_STARTED);
    json_decref(deps);
    rein_plan_free(p);
}

static void test_split_step_preserves_completed_steps(void **state)
{
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"s0\",\"s1\",\"s2\",\"s3\"],"
                        "\"dependencies\":{\"1\":[0],\"2\":[1]}}");
    const char *parts[] = {"a", "b"};
    rein_error err;
    json_t *j;

    (void)state;
    call(p, 0, "read", "{\"path\":\"x\"}", REIN_CALL_SUCCESS, "\"x\"");
    assert_rein_ok(rein_plan_mark_step(p, 0, REIN_PLAN_COMPLETED, NULL), NULL);
    assert_rein_ok(rein_plan_set_step_output(p, 0, "zero's output"), NULL);
    call(p, 3, "read", "{}", REIN_CALL_SUCCESS, "\"y\"");
    assert_rein_ok(rein_plan_mark_step(p, 3, REIN_PLAN_COMPLETED, "fine"), NULL);
    assert_rein_ok(rein_plan_set_step_output(p, 3, "three's output"), NULL);
    rein_plan_set_step_replans(p, 1, 1);
    call(p, 1, "write", "{}", REIN_CALL_PENDING, NULL);
    assert_rein_ok(rein_plan_mark_step(p, 1, REIN_PLAN_IN_PROGRESS, "failed once"), NULL);

    assert_rein_ok(rein_plan_split_step(p, 1, parts, 2, NULL, &err), &err);
    assert_int_equal(rein_plan_step_count(p), 5);
    /* Completed steps keep status, output and history, at their new places. */
    assert_int_equal(rein_plan_step_status(p, 0), REIN_PLAN_COMPLETED);
    assert_string_equal(rein_plan_get_step_output(p, 0), "zero's output");
    assert_int_equal(rein_plan_step_status(p, 4), REIN_PLAN_COMPLETED);
    assert_string_equal(rein_plan_get_step_output(p, 4), "three's output");
    assert_string_equal(rein_plan_step_note(p, 4), "fine");
    assert_int_equal(json_array_size(rein_plan_step_history(p, 4)), 1);
    assert_int_equal(json_integer_value(
                         json_object_get(json_array_get(rein_plan_step_history(p, 4), 0), "step")),
                     4);
    /* The first new step keeps the failed step's record; both keep its replan count. */
    assert_int_equal(json_array_size(rein_plan_step_history(p, 1)), 1);
    assert_string_equal(rein_plan_step_note(p, 1), "failed once");
    assert_int_equal(json_array_size(rein_plan_step_history(p, 2)), 0);
    assert_int_equal(rein_plan_step_replans(p, 1), 1);
    assert_int_equal(rein_plan_step_replans(p, 2), 1);
    deps_are(p, 3, "1,2"); /* s2 needs both new steps (neither needs the other) */
    /* The saved form follows. */
    j = rein_plan_to_json(p);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "step_outputs"), "4")),
                        "three's output");
    assert_null(json_object_get(json_object_get(j, "step_outputs"), "3"));
    json_decref(j);
    rein_plan_free(p);
}

static void test_split_step_refuses_bad_input(void **state)
{
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"s0\",\"s1\"],\"dependencies\":{\"1\":[0]}}");
    const char *parts[] = {"a", "b"}, *empty[] = {"a", ""};
    json_t *cyc = parse("{\"0\":[1],\"1\":[0]}"), *range = parse("{\"1\":[5]}");
    rein_error err;

    (void)state;
    assert_int_equal(rein_plan_split_step(p, 1, parts, 2, cyc, &err), REIN_EINVALID);
    assert_non_null(strstr(err.msg, "cycle"));
    assert_int_equal(rein_plan_split_step(p, 1, parts, 2, range, &err), REIN_EINVALID);
    assert_non_null(strstr(err.msg, "/new_dependencies/1/0"));
    assert_int_equal(rein_plan_split_step(p, 1, empty, 2, NULL, &err), REIN_EINVALID);
    assert_int_equal(rein_plan_split_step(p, 1, parts, 0, NULL, &err), REIN_EINVALID);
    assert_int_equal(rein_plan_split_step(p, 7, parts, 2, NULL, &err), REIN_EINVALID);
    /* Nothing changed. */
    assert_int_equal(rein_plan_step_count(p), 2);
    deps_are(p, 1, "0");
    json_decref(cyc);
    json_decref(range);
    rein_plan_free(p);
}

/* ---- the other Plan methods ---- */

static void test_tool_history_pairs_results(void **state)
{
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"a\"]}");
    const json_t *h;
    json_t *pending;
    rein_error err;

    (void)state;
    /* Two calls of one tool without ids: results pair first in, first out. */
    call(p, 0, "write_file", "{\"path\":\"1\"}", REIN_CALL_PENDING, NULL);
    call(p, 0, "write_file", "{\"path\":\"2\"}", REIN_CALL_PENDING, NULL);
    assert_rein_ok(
        rein_plan_update_tool_result(p, 0, NULL, "write_file", REIN_CALL_SUCCESS, NULL, &err),
        &err);
    h = rein_plan_step_history(p, 0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(h, 0), "status")),
                        "success");
    assert_true(json_is_string(json_object_get(json_array_get(h, 0), "response_time")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(h, 1), "status")),
                        "pending");
    pending = rein_plan_finalize_step(p, 0);
    assert_int_equal(json_array_size(pending), 1);
    json_decref(pending);
    assert_int_equal(
        rein_plan_update_tool_result(p, 0, NULL, "read", REIN_CALL_SUCCESS, NULL, &err),
        REIN_ENOTFOUND);
    assert_int_equal(
        rein_plan_update_tool_result(p, 0, "call_nope", NULL, REIN_CALL_SUCCESS, NULL, &err),
        REIN_ENOTFOUND);
    /* A ledger entry replaces the entry with its call id. */
    json_t *e = parse("{\"call_id\":\"c9\",\"tool\":\"read\",\"args\":{},\"status\":\"pending\","
                      "\"result\":null,\"step\":null}");
    assert_rein_ok(rein_plan_record_entry(p, 0, e, &err), &err);
    json_object_set_new(e, "status", json_string("success"));
    assert_rein_ok(rein_plan_record_entry(p, 0, e, &err), &err);
    assert_int_equal(json_array_size(h), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(h, 2), "step")), 0);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(h, 2), "attempt")), 0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(h, 2), "status")),
                        "success");
    json_decref(e);
    rein_plan_free(p);
}

static void test_ready_steps_and_skips(void **state)
{
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"a\",\"b\",\"c\",\"d\",\"e\"],"
                        "\"dependencies\":{\"1\":[0],\"2\":[0],\"3\":[1],\"4\":[]}}");
    size_t ready[8];

    (void)state;
    assert_int_equal(rein_plan_ready_steps(p, ready, 8), 2);
    assert_int_equal(ready[0], 0);
    assert_int_equal(ready[1], 4);
    assert_rein_ok(rein_plan_mark_step(p, 0, REIN_PLAN_COMPLETED, NULL), NULL);
    assert_int_equal(rein_plan_ready_steps(p, ready, 8), 3);
    assert_rein_ok(rein_plan_mark_step(p, 1, REIN_PLAN_BLOCKED, "no luck"), NULL);
    assert_int_equal(rein_plan_skip_dependents(p, 1), 1);
    assert_int_equal(rein_plan_step_status(p, 3), REIN_PLAN_SKIPPED);
    assert_string_equal(rein_plan_step_note(p, 3), "skipped: step 1 (b) is blocked");
    assert_int_equal(rein_plan_step_status(p, 2), REIN_PLAN_NOT_STARTED);
    assert_false(rein_plan_is_finished(p));
    assert_rein_ok(rein_plan_mark_step(p, 2, REIN_PLAN_COMPLETED, NULL), NULL);
    assert_rein_ok(rein_plan_mark_step(p, 4, REIN_PLAN_COMPLETED, NULL), NULL);
    assert_true(rein_plan_is_finished(p));
    /* Only completed steps have an output to give. */
    assert_rein_ok(rein_plan_set_step_output(p, 1, "half"), NULL);
    assert_null(rein_plan_get_step_output(p, 1));
    rein_plan_free(p);
}

static void test_add_step_checks_dependencies(void **state)
{
    rein_plan *p = rein_plan_new("t", NULL);
    int bad[] = {3}, good[] = {0};
    size_t at;
    rein_error err;

    (void)state;
    assert_rein_ok(rein_plan_add_step(p, "first", NULL, 0, &at, &err), &err);
    assert_int_equal(rein_plan_add_step(p, "second", bad, 1, NULL, &err), REIN_EINVAL);
    assert_rein_ok(rein_plan_add_step(p, "second", good, 1, &at, &err), &err);
    assert_int_equal(at, 1);
    deps_are(p, 1, "0");
    for (int i = 2; i < REIN_PLAN_MAX_STEPS; i++)
        assert_rein_ok(rein_plan_add_step(p, "more", NULL, 0, NULL, &err), &err);
    assert_int_equal(rein_plan_add_step(p, "one too many", NULL, 0, NULL, &err), REIN_ETOOBIG);
    rein_plan_free(p);
}

/* ---- create_plan ---- */

static void spec_fails(const char *text, const char *path, const char *words)
{
    json_t *j = parse(text), *details = NULL;
    rein_error err;
    bool found = false;
    size_t i;
    json_t *d;

    assert_int_equal(rein_plan_spec_check(j, &details, &err), REIN_EINVALID);
    assert_non_null(details);
    json_array_foreach(details, i, d)
    {
        if (strcmp(json_string_value(json_object_get(d, "path")), path) == 0 &&
            strstr(json_string_value(json_object_get(d, "message")), words))
            found = true;
    }
    if (!found)
        fail_msg("no problem at %s with \"%s\" in %s", path, words, json_dumps(details, 0));
    assert_null(rein_plan_from_spec(j, "q", &err));
    assert_int_equal(err.code, REIN_EINVALID);
    json_decref(details);
    json_decref(j);
}

static void test_create_plan_checks(void **state)
{
    rein_plan *p;

    (void)state;
    p = spec("{\"title\":\"t\",\"steps\":[\"a\",\"b\",\"c\"],\"dependencies\":{\"2\":[0,1,1]}}");
    assert_string_equal(rein_plan_title(p), "t");
    assert_string_equal(rein_plan_query(p), "the request");
    deps_are(p, 2, "0,1"); /* duplicates dropped */
    rein_plan_free(p);
    spec_fails("{\"title\":\"t\",\"steps\":[\"a\",\"b\",\"c\"],"
               "\"dependencies\":{\"0\":[2],\"2\":[1],\"1\":[0]}}",
               "/dependencies", "0 → 2 → 1 → 0");
    spec_fails("{\"title\":\"t\",\"steps\":[\"a\"],\"dependencies\":{\"0\":[0]}}",
               "/dependencies/0/0", "cannot depend on itself");
    spec_fails("{\"title\":\"t\",\"steps\":[\"a\",\"b\"],\"dependencies\":{\"1\":[2]}}",
               "/dependencies/1/0", "2 is not a step");
    spec_fails("{\"title\":\"t\",\"steps\":[\"a\",\"b\"],\"dependencies\":{\"5\":[0]}}",
               "/dependencies/5", "not a step index");
    spec_fails("{\"title\":\"t\",\"steps\":[\"a\",\"b\"],\"dependencies\":{\"01\":[0]}}",
               "/dependencies/01", "not a step index");
    spec_fails("{\"title\":\"t\",\"steps\":[\"a\",\"b\"],\"dependencies\":{\"1\":[\"0\"]}}",
               "/dependencies/1/0", "integer");
    spec_fails("{\"title\":\"t\",\"steps\":[]}", "/steps", "non-empty");
    spec_fails("{\"title\":\"t\",\"steps\":[\"a\", \"\"]}", "/steps/1", "non-empty");
    spec_fails("{\"steps\":[\"a\"]}", "/title", "required");
    spec_fails("{\"title\":\"t\",\"steps\":[\"a\"],\"dependancies\":{}}", "/dependancies",
               "unknown member");
    spec_fails("[1]", "", "must be an object");
}

static rein_call_result *run_call(const rein_registry *reg, const char *tool, const char *args)
{
    struct rein_call_input in = {.name = tool, .args_text = args, .args_len = strlen(args)};
    rein_call_result *res = NULL;
    rein_error err;

    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, &err), &err);
    return res;
}

static void test_create_plan_tool_through_pipeline(void **state)
{
    rein_registry *pr, *rr;
    rein_call_result *res;
    const json_t *inv;
    rein_error err;
    char *text;

    (void)state;
    pr = rein_registry_new(&err);
    rr = rein_registry_new(&err);
    assert_rein_ok(rein__plan_register_tools(pr, rr, &err), &err);
    /* A cyclic plan passes the schema and is refused by the meaning check, with the path. */
    res = run_call(pr, "create_plan",
                   "{\"title\":\"t\",\"steps\":[\"a\",\"b\"],\"dependencies\":{\"0\":[1],"
                   "\"1\":[0]}}");
    assert_int_equal(rein_call_result_status(res), REIN_CALL_INVALID);
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_ARGUMENTS);
    inv = rein_call_result_invalid_json(res);
    text = rein_json_dumps(inv);
    assert_non_null(strstr(text, "\"path\":\"/dependencies\""));
    assert_non_null(strstr(text, "0 → 1 → 0"));
    assert_non_null(strstr(text, "call create_plan again"));
    assert_true(json_is_object(json_object_get(inv, "expected")));
    rein_free(text);
    rein_call_result_free(res);
    /* The schema's own preflight: steps must be an array. */
    res = run_call(pr, "create_plan", "{\"title\":\"t\",\"steps\":\"a, then b\"}");
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_ARGUMENTS);
    rein_call_result_free(res);
    /* A repaired name and a good plan: accepted. */
    res = run_call(pr, "createPlan", "{\"title\":\"t\",\"steps\":[\"a\"]}");
    assert_true(rein_call_result_ok(res));
    assert_true(json_is_true(json_object_get(rein_call_result_output(res), "accepted")));
    rein_call_result_free(res);
    /* replan: a split whose dependencies point outside the new steps. */
    res = run_call(rr, "replan",
                   "{\"action\":\"split\",\"new_steps\":[\"a\",\"b\"],"
                   "\"new_dependencies\":{\"1\":[3]}}");
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_ARGUMENTS);
    text = rein_json_dumps(rein_call_result_invalid_json(res));
    assert_non_null(strstr(text, "/new_dependencies/1/0"));
    rein_free(text);
    rein_call_result_free(res);
    res = run_call(rr, "replan", "{\"action\":\"rewrite\",\"new_description\":\"x\"}");
    assert_true(rein_call_result_ok(res));
    rein_call_result_free(res);
    rein_registry_free(pr);
    rein_registry_free(rr);
}

/* ---- the replanner's output formats ---- */

static void replan_ok(const char *text)
{
    json_t *j = parse(text), *details = NULL;
    rein_error err;

    assert_rein_ok(rein_plan_replan_check(j, &details, &err), &err);
    assert_null(details);
    json_decref(j);
}

static void replan_fails(const char *text, const char *path)
{
    json_t *j = parse(text), *details = NULL;
    rein_error err;
    bool found = false;
    size_t i;
    json_t *d;

    assert_int_equal(rein_plan_replan_check(j, &details, &err), REIN_EINVALID);
    json_array_foreach(details, i, d) found =
        found || strcmp(json_string_value(json_object_get(d, "path")), path) == 0;
    if (!found)
        fail_msg("%s: no problem at %s (%s)", text, path, err.msg);
    json_decref(details);
    json_decref(j);
}

static void test_replan_rewrite_format(void **state)
{
    (void)state;
    replan_ok("{\"action\":\"rewrite\",\"new_description\":\"Call write_file with path x\"}");
    replan_ok("{\"action\":\"rewrite\",\"new_description\":\"x\",\"new_steps\":null,"
              "\"reason\":\"clearer\"}");
    replan_fails("{\"action\":\"rewrite\"}", "/new_description");
    replan_fails("{\"action\":\"rewrite\",\"new_description\":\"\"}", "/new_description");
    replan_fails("{\"action\":\"rewrite\",\"new_description\":\"x\",\"new_steps\":[\"a\",\"b\"]}",
                 "/new_steps");
}

static void test_replan_split_format(void **state)
{
    (void)state;
    replan_ok("{\"action\":\"split\",\"new_steps\":[\"a\",\"b\"]}");
    replan_ok("{\"action\":\"split\",\"new_steps\":[\"a\",\"b\",\"c\"],"
              "\"new_dependencies\":{\"2\":[0,1]}}");
    replan_fails("{\"action\":\"split\"}", "/new_steps");
    replan_fails("{\"action\":\"split\",\"new_steps\":[\"only one\"]}", "/new_steps");
    replan_fails("{\"action\":\"split\",\"new_steps\":[\"a\",\"b\"],"
                 "\"new_dependencies\":{\"1\":[2]}}",
                 "/new_dependencies/1/0");
    replan_fails("{\"action\":\"split\",\"new_steps\":[\"a\",\"b\"],"
                 "\"new_dependencies\":{\"0\":[1],\"1\":[0]}}",
                 "/new_dependencies");
    replan_fails("{\"action\":\"split\",\"new_steps\":[\"a\",\"b\"],\"new_description\":\"x\"}",
                 "/new_description");
}

static void test_replan_give_up_format(void **state)
{
    (void)state;
    replan_ok("{\"action\":\"give_up\"}");
    replan_ok("{\"action\":\"give_up\",\"reason\":\"no tool can do it\"}");
    replan_fails("{\"action\":\"give_up\",\"new_dependencies\":{}}", "/new_dependencies");
    replan_fails("{\"action\":\"retry\"}", "/action");
    replan_fails("{}", "/action");
    replan_fails("{\"action\":\"give_up\",\"why\":\"x\"}", "/why");
    replan_fails("{\"action\":\"give_up\",\"reason\":3}", "/reason");
}

/* ---- the text-claim check ---- */

static void test_verify_text_claims(void **state)
{
    const char *tools[] = {"write_file", "read"};
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"a\"]}");
    json_t *report = NULL;

    (void)state;
    /* A write the ledger does not have: named tool, and a file said to be written. */
    assert_false(
        rein_plan_verify_step(p, 0, "I wrote notes.txt with write_file.", NULL, tools, 2, &report));
    assert_non_null(strstr(json_string_value(json_object_get(report, "reason")), "write_file"));
    assert_true(json_array_size(json_object_get(report, "claims")) >= 1);
    json_decref(report);
    assert_false(rein_plan_verify_step(p, 0, "Done. I created summary.md.", NULL, tools, 2, NULL));
    assert_false(rein_plan_verify_step(p, 0, "Created summary.md.", NULL, tools, 2, NULL));
    /* A fact the step found is not something it claims to have done. */
    assert_true(rein_plan_verify_step(p, 0, "The log says config.yaml was modified yesterday.",
                                      NULL, tools, 2, NULL));
    /* Honest reports of what did not happen claim nothing. */
    assert_true(rein_plan_verify_step(p, 0, "I could not call write_file: it is not available.",
                                      NULL, tools, 2, NULL));
    assert_true(rein_plan_verify_step(p, 0, "write_file failed, so nothing was saved.", NULL, tools,
                                      2, NULL));
    assert_true(rein_plan_verify_step(p, 0, "I didn't create notes.txt.", NULL, tools, 2, NULL));
    assert_true(rein_plan_verify_step(p, 0, "Should I call write_file?", NULL, tools, 2, NULL));
    assert_true(rein_plan_verify_step(p, 0, "Next I will write notes.txt.", NULL, tools, 2, NULL));
    /* An ordinary word that is also a tool's name counts only as a tool. */
    assert_true(rein_plan_verify_step(p, 0, "I read the brief carefully.", NULL, tools, 2, NULL));
    assert_false(rein_plan_verify_step(p, 0, "I used the read tool on it.", NULL, tools, 2, NULL));
    /* Backed by a successful call: passes. */
    call(p, 0, "write_file", "{\"path\":\"docs/notes.txt\",\"content\":\"hi\"}", REIN_CALL_SUCCESS,
         "{\"path\":\"docs/notes.txt\"}");
    assert_true(
        rein_plan_verify_step(p, 0, "I wrote notes.txt with write_file.", NULL, tools, 2, NULL));
    assert_false(rein_plan_verify_step(p, 0, "I wrote notes.txt and other.txt with write_file.",
                                       NULL, tools, 2, NULL));
    rein_plan_free(p);
}

/* The sentences issue 14 opens with, each the whole answer of a one-step plan with no call:
 * each fails the step, naming its claim; the plan for later passes. */
static void test_verify_issue_sentences(void **state)
{
    static const char *const said[][2] = {
        {"I used the calculator and it returned 2.", "calculator"},
        {"The calculator returned 2.", "calculator"},
        {"I wrote the result to result.txt.", "result.txt"},
        {"I saved the mean to result.txt.", "result.txt"},
        {"Saved result.txt.", "result.txt"},
        {"I added parse_args to src/cli.c.", "parse_args"},
        {"我调用了 calculator，结果是 2。", "calculator"},
        {"我已将结果写入 result.txt。", "result.txt"},
    };
    const char *tools[] = {"calculator", "write_file"};
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"a\"]}");
    json_t *report = NULL;

    (void)state;
    for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++) {
        if (rein_plan_verify_step(p, 0, said[i][0], NULL, tools, 2, &report))
            fail_msg("\"%s\" passed the step", said[i][0]);
        assert_non_null(strstr(json_string_value(json_object_get(report, "reason")), said[i][1]));
        json_decref(report);
        report = NULL;
    }
    assert_true(rein_plan_verify_step(p, 0, "下一步我会创建 report.csv。", NULL, tools, 2, NULL));
    rein_plan_free(p);
}

/* Regression (found by fuzz/plan_file.c): a loaded entry without "args" or "result". */
static void test_verify_entry_without_args(void **state)
{
    static const char text[] =
        "{\"title\":\"t\",\"steps\":[\"a\"],\"step_tool_history\":{\"0\":[{\"tool\":"
        "\"write_file\",\"status\":\"success\"}]}}";
    rein_error err;
    rein_plan *p = rein_plan_parse(text, sizeof(text) - 1, &err);

    (void)state;
    assert_non_null(p);
    assert_false(rein_plan_verify_step(p, 0, "I wrote notes.txt.", NULL, NULL, 0, NULL));
    rein_plan_free(p);
}

static rein_err noop_tool(void *ud, const struct rein_invocation *inv,
                          struct rein_tool_reply *reply, rein_error *err)
{
    (void)ud;
    (void)inv;
    (void)err;
    reply->output = json_null();
    return REIN_OK;
}

static void test_verify_read_only_tool_backs_no_write(void **state)
{
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"a\"]}");
    rein_registry *reg;
    rein_error err;
    json_t *m;

    (void)state;
    reg = rein_registry_new(&err);
    m = parse("{\"id\":\"cat\",\"description\":\"Show a file\",\"read_only\":true,"
              "\"parameters\":{\"type\":\"object\"}}");
    assert_rein_ok(rein_registry_add_builtin(reg, m, noop_tool, NULL, NULL, &err), &err);
    json_decref(m);
    call(p, 0, "cat", "{\"path\":\"notes.txt\"}", REIN_CALL_SUCCESS, "\"hi\"");
    /* Reading notes.txt is no evidence that it was modified. */
    assert_false(rein_plan_verify_step(p, 0, "I updated notes.txt.", reg, NULL, 0, NULL));
    assert_true(
        rein_plan_verify_step(p, 0, "I ran cat on notes.txt: it says hi.", reg, NULL, 0, NULL));
    rein_registry_free(reg);
    rein_plan_free(p);
}

static void test_verify_looks_at_the_current_attempt(void **state)
{
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"a\"]}");
    json_t *report = NULL;

    (void)state;
    call(p, 0, "write_file", "{}", REIN_CALL_PENDING, NULL);
    assert_false(rein_plan_verify_step(p, 0, NULL, NULL, NULL, 0, NULL));
    /* After a replan the earlier attempt's lost call no longer counts ... */
    rein_plan_set_step_replans(p, 0, 1);
    assert_true(rein_plan_verify_step(p, 0, NULL, NULL, NULL, 0, NULL));
    /* ... and neither does an interrupted run's. */
    call(p, 0, "write_file", "{}", REIN_CALL_PENDING, NULL);
    assert_rein_ok(rein_plan_mark_step(p, 0, REIN_PLAN_IN_PROGRESS, NULL), NULL);
    assert_int_equal(rein_plan_resume_reset(p), 1);
    assert_int_equal(rein_plan_step_status(p, 0), REIN_PLAN_NOT_STARTED);
    assert_true(json_is_true(
        json_object_get(json_array_get(rein_plan_step_history(p, 0), 1), "interrupted")));
    assert_true(rein_plan_verify_step(p, 0, NULL, NULL, NULL, 0, &report));
    assert_int_equal(json_array_size(rein_plan_step_history(p, 0)), 2); /* both kept */
    json_decref(report);
    rein_plan_free(p);
}

/* ---- saving and loading ---- */

static void test_json_uses_the_seed_field_names(void **state)
{
    rein_plan *p =
        spec("{\"title\":\"Ship it\",\"steps\":[\"a\",\"b\"],\"dependencies\":{\"1\":[0]}}");
    static const char *const names[] = {"title",         "steps",        "dependencies",
                                        "step_statuses", "step_notes",   "step_tool_history",
                                        "step_files",    "step_outputs", "replan_attempts"};
    json_t *j, *again;
    rein_plan *q;
    rein_error err;

    (void)state;
    call(p, 0, "write_file", "{\"path\":\"a.txt\"}", REIN_CALL_SUCCESS, "\"ok\"");
    assert_rein_ok(rein_plan_mark_step(p, 0, REIN_PLAN_COMPLETED, "done well"), NULL);
    assert_rein_ok(rein_plan_set_step_output(p, 0, "out"), NULL);
    rein_plan_set_step_replans(p, 1, 2);
    assert_rein_ok(rein_plan_set_answer(p, "the answer"), NULL);
    j = rein_plan_to_json(p);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_non_null(json_object_get(j, names[i]));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "step_statuses"), "0")), "completed");
    assert_int_equal(json_integer_value(json_array_get(
                         json_object_get(json_object_get(j, "dependencies"), "1"), 0)),
                     0);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "replan_attempts"), "1")), 2);
    q = rein_plan_from_json(j, &err);
    if (!q)
        fail_msg("%s", err.msg);
    again = rein_plan_to_json(q);
    assert_true(json_equal(j, again));
    assert_string_equal(rein_plan_answer(q), "the answer");
    json_decref(again);
    json_decref(j);
    rein_plan_free(q);
    rein_plan_free(p);
}

/* tests/data/plan/<case>/input with either error (words the message must hold) or output
 * (the plan as written back). */
static void test_plan_files(void **state)
{
    const char *dir = REIN_SOURCE_DIR "/tests/data/plan";
    DIR *d = opendir(dir);
    struct dirent *de;
    int cases = 0;

    (void)state;
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        char path[1024], *input, *want_err, *want_out;
        rein_error err;
        rein_plan *p;
        size_t len;
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s/input", dir, de->d_name);
        input = test_read_file(path, &len);
        assert_non_null(input);
        snprintf(path, sizeof(path), "%s/%s/error", dir, de->d_name);
        want_err = test_read_file(path, NULL);
        snprintf(path, sizeof(path), "%s/%s/output", dir, de->d_name);
        want_out = test_read_file(path, NULL);
        p = rein_plan_parse(input, len, &err);
        if (want_err) {
            want_err[strcspn(want_err, "\n")] = '\0';
            if (p)
                fail_msg("%s: parsed, but should fail with \"%s\"", de->d_name, want_err);
            if (!strstr(err.msg, want_err))
                fail_msg("%s: error \"%s\" lacks \"%s\"", de->d_name, err.msg, want_err);
        } else {
            json_t *got, *want;
            if (!p)
                fail_msg("%s: %s", de->d_name, err.msg);
            assert_non_null(want_out);
            got = rein_plan_to_json(p);
            want = parse(want_out);
            if (!json_equal(got, want))
                fail_msg("%s: wrote %s", de->d_name, json_dumps(got, JSON_COMPACT));
            json_decref(got);
            json_decref(want);
        }
        rein_plan_free(p);
        free(input);
        free(want_err);
        free(want_out);
        cases++;
    }
    closedir(d);
    assert_true(cases >= 10);
}

static void test_save_is_atomic_and_loads_back(void **state)
{
    char *dir = test_tmpdir(), path[512], bad[512];
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"a\",\"b\"]}"), *q;
    rein_error err;
    DIR *d;
    struct dirent *de;
    int files = 0;

    (void)state;
    snprintf(path, sizeof(path), "%s/plan.json", dir);
    assert_rein_ok(rein_plan_save_file(p, path, &err), &err);
    assert_rein_ok(rein_plan_mark_step(p, 0, REIN_PLAN_COMPLETED, NULL), NULL);
    assert_rein_ok(rein_plan_save_file(p, path, &err), &err);
    q = rein_plan_load_file(path, &err);
    assert_non_null(q);
    assert_int_equal(rein_plan_step_status(q, 0), REIN_PLAN_COMPLETED);
    rein_plan_free(q);
    /* No temporary file is left behind. */
    d = opendir(dir);
    while ((de = readdir(d)) != NULL)
        files += de->d_name[0] != '.' || strncmp(de->d_name, ".plan", 5) == 0;
    closedir(d);
    assert_int_equal(files, 1);
    /* A folder that does not exist: an error naming the file, and nothing else changes. */
    snprintf(bad, sizeof(bad), "%s/none/plan.json", dir);
    assert_int_equal(rein_plan_save_file(p, bad, &err), REIN_EIO);
    assert_non_null(strstr(err.msg, bad));
    assert_null(rein_plan_load_file(bad, &err));
    assert_int_equal(err.code, REIN_ENOTFOUND);
    rein_plan_free(p);
    test_rmtree(dir);
    free(dir);
}

static void test_resume_reset_skips_unreachable_steps(void **state)
{
    rein_plan *p = spec("{\"title\":\"t\",\"steps\":[\"a\",\"b\",\"c\",\"d\"],"
                        "\"dependencies\":{\"1\":[0],\"2\":[1],\"3\":[]}}");

    (void)state;
    assert_rein_ok(rein_plan_mark_step(p, 0, REIN_PLAN_BLOCKED, "gave up"), NULL);
    assert_rein_ok(rein_plan_mark_step(p, 3, REIN_PLAN_IN_PROGRESS, NULL), NULL);
    assert_int_equal(rein_plan_resume_reset(p), 1);
    assert_int_equal(rein_plan_step_status(p, 1), REIN_PLAN_SKIPPED);
    assert_int_equal(rein_plan_step_status(p, 2), REIN_PLAN_SKIPPED);
    assert_string_equal(rein_plan_step_note(p, 2), "skipped: step 0 (a) is blocked");
    assert_int_equal(rein_plan_step_status(p, 3), REIN_PLAN_NOT_STARTED);
    rein_plan_free(p);
}

/* ---- showing ---- */

static void test_show_text_and_dot(void **state)
{
    rein_plan *p = spec("{\"title\":\"Say \\\"hi\\\"\",\"steps\":[\"first\\nline\",\"second\"],"
                        "\"dependencies\":{\"1\":[0]}}");
    struct rein_buf b;

    (void)state;
    assert_rein_ok(rein_plan_mark_step(p, 0, REIN_PLAN_COMPLETED, NULL), NULL);
    assert_rein_ok(rein_plan_mark_step(p, 1, REIN_PLAN_BLOCKED, "no tool"), NULL);
    rein_buf_init(&b, 0);
    assert_rein_ok(rein_plan_write_text(p, &b), NULL);
    assert_non_null(strstr(b.ptr, "Plan: Say \"hi\"\n"));
    assert_non_null(strstr(b.ptr, "  0  completed    first line\n"));
    assert_non_null(strstr(b.ptr, "  1  blocked      second  (needs 0)\n"));
    assert_non_null(strstr(b.ptr, "note: no tool"));
    rein_buf_reset(&b);
    assert_rein_ok(rein_plan_write_dot(p, &b), NULL);
    assert_non_null(strstr(b.ptr, "digraph plan {"));
    assert_non_null(strstr(b.ptr, "label=\"Say \\\"hi\\\"\""));
    assert_non_null(strstr(b.ptr, "s0 [label=\"0: first line\\n(completed)\""));
    assert_non_null(strstr(b.ptr, "s0 -> s1;"));
    assert_non_null(strstr(b.ptr, "#ef9a9a")); /* blocked */
    rein_buf_release(&b);
    rein_plan_free(p);
}

/* ---- events ---- */

static void test_event_json(void **state)
{
    struct rein_plan_event ev = {.type = REIN_PLAN_EV_STEP,
                                 .seq = 3,
                                 .step = 1,
                                 .status = REIN_PLAN_BLOCKED,
                                 .attempt = 3,
                                 .text = "do it",
                                 .note = "why"};
    struct rein_agent_event aev = {.type = REIN_AGENT_EV_STATUS,
                                   .seq = 1,
                                   .state = REIN_AGENT_STATE_EXECUTING,
                                   .tool = "echo",
                                   .call_id = "c1"};
    struct rein_buf b;
    json_t *j;

    (void)state;
    rein_buf_init(&b, 0);
    assert_rein_ok(rein_plan_event_write(&ev, &b), NULL);
    j = parse(b.ptr);
    assert_string_equal(json_string_value(json_object_get(j, "type")), "step");
    assert_string_equal(json_string_value(json_object_get(j, "status")), "blocked");
    assert_int_equal(json_integer_value(json_object_get(j, "attempt")), 3);
    assert_string_equal(json_string_value(json_object_get(j, "note")), "why");
    json_decref(j);
    rein_buf_reset(&b);
    ev = (struct rein_plan_event){
        .type = REIN_PLAN_EV_AGENT, .seq = 4, .step = 0, .phase = "step", .agent = &aev};
    assert_rein_ok(rein_plan_event_write(&ev, &b), NULL);
    j = parse(b.ptr);
    assert_string_equal(json_string_value(json_object_get(j, "phase")), "step");
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "event"), "state")),
                        "executing");
    json_decref(j);
    rein_buf_release(&b);
}

/* ---- allocation failure ---- */

static void torture_body(void *arg)
{
    static const char text[] =
        "{\"title\":\"t\",\"query\":\"q\",\"steps\":[\"a\",\"b\",\"c\"],"
        "\"dependencies\":{\"1\":[0],\"2\":[1]},\"step_statuses\":{\"0\":\"completed\","
        "\"1\":\"in_progress\"},\"step_notes\":{\"0\":\"n\"},\"step_outputs\":{\"0\":\"o\"},"
        "\"step_tool_history\":{\"1\":[{\"call_id\":\"c1\",\"tool\":\"w\",\"status\":"
        "\"pending\",\"attempt\":0}]},\"step_files\":{\"0\":[\"a.txt\"]},"
        "\"replan_attempts\":{\"1\":0}}";
    const char *parts[] = {"x", "y"};
    const char *tools[] = {"w"};
    rein_plan *p = rein_plan_parse(text, sizeof(text) - 1, NULL);
    struct rein_buf b;
    json_t *j, *report = NULL;

    (void)arg;
    if (!p)
        return;
    (void)rein_plan_resume_reset(p);
    j = rein_plan_to_json(p);
    json_decref(j);
    (void)rein_plan_verify_step(p, 1, "I wrote a.txt with w.", NULL, tools, 1, &report);
    json_decref(report);
    /* Any outcome is fine; what matters is no crash and no leak. */
    if (rein_plan_split_step(p, 1, parts, 2, NULL, NULL) == REIN_OK &&
        rein_plan_add_tool_call(p, 0, NULL, "w", NULL, NULL) == REIN_OK) {
        rein_buf_init(&b, 0);
        if (rein_plan_write_dot(p, &b) == REIN_OK && rein_plan_write_text(p, &b) == REIN_OK)
            assert_true(b.len > 0);
        rein_buf_release(&b);
    }
    rein_plan_free(p);
}

static void test_plan_alloc_torture(void **state)
{
    (void)state;
    test_alloc_torture(torture_body, NULL);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_verify_pass_when_no_tool_calls),
    cmocka_unit_test(test_verify_pass_when_all_success),
    cmocka_unit_test(test_verify_fail_when_has_pending),
    cmocka_unit_test(test_rewrite_step_updates_description),
    cmocka_unit_test(test_split_step_updates_dag),
    cmocka_unit_test(test_split_step_preserves_completed_steps),
    cmocka_unit_test(test_split_step_refuses_bad_input),
    cmocka_unit_test(test_tool_history_pairs_results),
    cmocka_unit_test(test_ready_steps_and_skips),
    cmocka_unit_test(test_add_step_checks_dependencies),
    cmocka_unit_test(test_create_plan_checks),
    cmocka_unit_test(test_create_plan_tool_through_pipeline),
    cmocka_unit_test(test_replan_rewrite_format),
    cmocka_unit_test(test_replan_split_format),
    cmocka_unit_test(test_replan_give_up_format),
    cmocka_unit_test(test_verify_text_claims),
    cmocka_unit_test(test_verify_issue_sentences),
    cmocka_unit_test(test_verify_entry_without_args),
    cmocka_unit_test(test_verify_read_only_tool_backs_no_write),
    cmocka_unit_test(test_verify_looks_at_the_current_attempt),
    cmocka_unit_test(test_json_uses_the_seed_field_names),
    cmocka_unit_test(test_plan_files),
    cmocka_unit_test(test_save_is_atomic_and_loads_back),
    cmocka_unit_test(test_resume_reset_skips_unreachable_steps),
    cmocka_unit_test(test_show_text_and_dot),
    cmocka_unit_test(test_event_json),
    cmocka_unit_test(test_plan_alloc_torture),
};

REIN_TEST_MAIN(tests)
