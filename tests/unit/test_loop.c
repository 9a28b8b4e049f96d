/*
 * Unit tests for the parts of the verification loop that need no model (src/verify/loop*.c,
 * diff.c, the judge's check and the tracker's needs_review): what the agent reads (the first
 * message, the observation built from a real verification run), what the loop reads back
 * (a blocker line, the summary of a turn), the judge's diff of a git tree, the schema check
 * under allocation failure, and the stop words. The loop itself, the judge's model calls and
 * `rein loop` run against the scripted model server in tests/integration/test_loop_run.c and
 * tests/scripts/loop_cli.sh.
 */
#include "test.h"

#include "verify/loop_int.h"

#include <math.h>

static int sh(const char *dir, const char *cmd)
{
    char line[4096];

    snprintf(line, sizeof(line), "cd '%s' && (%s) >/dev/null 2>&1", dir, cmd);
    return system(line);
}

static rein_verify_config *cfg_parse(const char *text)
{
    rein_error err;
    rein_verify_config *cfg =
        rein_verify_config_parse(text, strlen(text), "rein-verify.yaml", &err);

    if (!cfg)
        fail_msg("config: %s", err.msg);
    return cfg;
}

#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        if (!strstr((hay), (needle)))                                                              \
            fail_msg("\"%s\" not in:\n%s", (needle), (hay));                                       \
    } while (0)

/* ---- what the loop reads back ---- */

static void test_blocked_lines(void **state)
{
    char why[64];

    (void)state;
    assert_true(rein__loop_blocked("BLOCKED: need the API key", 25, why, sizeof(why)));
    assert_string_equal(why, "need the API key");
    assert_true(
        rein__loop_blocked("Tried.\n**BLOCKED:** no network  \r\nmore", 38, why, sizeof(why)));
    assert_string_equal(why, "no network");
    assert_true(rein__loop_blocked("- BLOCKED - waiting for a decision", 34, why, sizeof(why)));
    assert_string_equal(why, "waiting for a decision");
    assert_true(rein__loop_blocked("阻塞：需要数据库密码", strlen("阻塞：需要数据库密码"), why,
                                   sizeof(why)));
    assert_string_equal(why, "需要数据库密码");
    assert_true(rein__loop_blocked("BLOCKED: x", 10, NULL, 0));
    /* Only at the start of a line, in capitals. */
    assert_false(rein__loop_blocked("I am not BLOCKED: all fine", 26, why, sizeof(why)));
    assert_false(rein__loop_blocked("blocked: lower case is prose", 28, why, sizeof(why)));
    assert_false(rein__loop_blocked("", 0, why, sizeof(why)));
    /* A long reason is cut to the buffer without splitting a character. */
    assert_true(rein__loop_blocked(
        "BLOCKED: "
        "需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要",
        strlen("BLOCKED: "
               "需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需要需"
               "要需要"),
        why, 16));
    assert_true(strlen(why) <= 15);
}

static void test_summary(void **state)
{
    json_t *calls =
        json_loads("[{\"tool\": \"write_file\", \"arguments\": {\"path\": \"a.c\", "
                   "\"content\": \"x\"}, \"status\": \"success\"},"
                   " {\"tool\": \"run\", \"arguments\": {\"command\": \"make\"}, "
                   "\"status\": \"error\"},"
                   " {\"tool\": \"echo\", \"arguments\": {}, \"status\": \"success\"},"
                   " {\"tool\": \"x\", \"arguments\": \"raw\", \"status\": \"invalid\"},"
                   " {\"tool\": \"y\", \"arguments\": {}, \"status\": \"success\"}]",
                   0, NULL);
    char *s;

    (void)state;
    s = rein__loop_summary(calls, "Fixed the bug. Then more words follow here.");
    assert_string_equal(s, "write_file a.c, run make error, echo, x invalid and 1 more call; "
                           "said \"Fixed the bug.\"");
    rein_free(s);
    s = rein__loop_summary(NULL, "");
    assert_string_equal(s, "no tool calls");
    rein_free(s);
    s = rein__loop_summary(NULL, "\n  A very long answer that goes on and on without a full stop "
                                 "for far more than one hundred and twenty bytes, which is what a "
                                 "summary keeps of it");
    assert_contains(s, "no tool calls; said \"A very long answer");
    assert_contains(s, "…\"");
    assert_true(strlen(s) < 200);
    rein_free(s);
    json_decref(calls);
}

static void test_shorten(void **state)
{
    json_t *v = json_pack("{s:s, s:[s, i], s:n}", "content",
                          "0123456789012345678901234567890123456789", "list", "short", 7, "n");
    json_t *s;

    (void)state;
    s = rein__loop_shorten(v, 10);
    assert_string_equal(json_string_value(json_object_get(s, "content")), "0123456789… (40 bytes)");
    assert_string_equal(json_string_value(json_array_get(json_object_get(s, "list"), 0)), "short");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(s, "list"), 1)), 7);
    assert_true(json_is_null(json_object_get(s, "n")));
    json_decref(s);
    json_decref(v);
}

/* ---- what the agent reads ---- */

static const char two_protocols[] =
    "protocols:\n"
    "  BUILD:\n"
    "    priority: P0\n"
    "    steps: [{command: \"true\"}]\n"
    "  TEST:\n"
    "    priority: P1\n"
    "    steps:\n"
    "      - command: printf '1..2\\nok 1 - alpha\\nnot ok 2 - beta\\n'; exit 1\n"
    "        shell: true\n"
    "        format: tap\n"
    "  LINT:\n"
    "    priority: P2\n"
    "    steps: [{command: \"true\"}, {command: \"true\"}, {command: \"true\"}, "
    "{command: \"false\"}]\n";

static void test_first_message(void **state)
{
    rein_verify_config *cfg = cfg_parse(two_protocols);
    const char *until[] = {"TEST", NULL};
    struct rein__loop_brief b = {
        .goal = "Fix beta.", .cwd = "/work/x", .cfg = cfg, .until = until, .max_iterations = 7};
    char *m;

    (void)state;
    m = rein__loop_first_message(&b);
    assert_true(strncmp(m, "Fix beta.\n\nYou are working in /work/x.", 38) == 0);
    assert_contains(m, "every one must pass:\n- TEST (P1): `printf");
    assert_null(strstr(m, "BUILD"));
    assert_contains(m, "up to 7 iterations");
    assert_contains(m, "\"BLOCKED: <what you need>\"");
    rein_free(m);
    b.until = NULL;
    m = rein__loop_first_message(&b);
    assert_contains(m, "the checks of this project (standard mode):\n- BUILD (P0): `true`\n");
    assert_contains(m, "- LINT (P2): `true`, then `true`, then `true` and 1 more step\n");
    rein_free(m);
    rein_verify_config_free(cfg);
}

static rein_verify_report *run_report(const char *dir, const rein_verify_config *cfg,
                                      const char *claims)
{
    struct rein_verify_opts o = {
        .cwd = dir, .claims_text = claims, .claims_len = claims ? strlen(claims) : 0};
    rein_verify_report *r = NULL;
    rein_error err;

    assert_rein_ok(rein_verify_run(cfg, &o, &r, &err), &err);
    return r;
}

static void test_observation(void **state)
{
    rein_verify_config *cfg = cfg_parse(two_protocols);
    char *dir = test_tmpdir();
    rein_verify_report *r = run_report(dir, cfg, "I fixed beta. All tests pass.");
    json_t *history = json_loads("[{\"iteration\": 1, \"summary\": \"write_file a.c\", "
                                 "\"verdict\": \"FAILED\"}, {\"iteration\": 2, \"summary\": "
                                 "\"write_file b.c\", \"verdict\": \"FAILED\"}]",
                                 0, NULL);
    struct rein__loop_observation o = {.iteration = 2,
                                       .max_iterations = 6,
                                       .extended = true,
                                       .cfg = cfg,
                                       .report = r,
                                       .history = history};
    char *m;

    (void)state;
    m = rein__loop_observation(&o);
    assert_true(strncmp(m, "Iteration 2 of 6: the checks say FAILED.\n", 41) == 0);
    assert_contains(m, "\nTEST failed (P1, `printf");
    assert_contains(m, "1 of 2 tests failed; ");
    assert_contains(m, "Last lines of its output:\n```\n1..2\nok 1 - alpha\nnot ok 2 - beta\n```");
    assert_contains(m, "LINT failed (P2, `true`, then `true`, then `true` and 1 more step)");
    assert_contains(m, "It printed nothing.");
    assert_contains(m, "- You said: \"All tests pass\". But: TEST failed");
    assert_contains(m, "Passed: BUILD.");
    assert_contains(m, "Tried so far:\n(1) write_file a.c → FAILED\n(2) write_file b.c → FAILED\n");
    assert_contains(m, "the limit is now 6 iterations");
    assert_contains(m, "Fix what failed");
    rein_free(m);
    json_decref(history);
    rein_verify_report_free(r);
    rein_verify_config_free(cfg);
    test_rmtree(dir);
    free(dir);
}

struct observe_arg {
    const rein_verify_config *cfg;
    const rein_verify_report *r;
};

static void observe(void *arg)
{
    const struct observe_arg *a = arg;
    struct rein__loop_observation o = {
        .iteration = 1, .max_iterations = 3, .cfg = a->cfg, .report = a->r};
    struct rein__loop_brief b = {.goal = "g", .cwd = "/", .cfg = a->cfg, .max_iterations = 3};
    json_t *calls = json_loads("[{\"tool\": \"w\", \"arguments\": {\"path\": \"p\"}}]", 0, NULL);
    char *s = rein__loop_observation(&o);
    json_t *short_v;

    rein_free(s);
    s = rein__loop_first_message(&b);
    rein_free(s);
    s = calls ? rein__loop_summary(calls, "Done. Really.") : NULL;
    rein_free(s);
    short_v = calls ? rein__loop_shorten(calls, 1) : NULL;
    json_decref(short_v);
    json_decref(calls);
}

static void test_text_alloc_torture(void **state)
{
    rein_verify_config *cfg = cfg_parse(two_protocols);
    char *dir = test_tmpdir();
    rein_verify_report *r = run_report(dir, cfg, "All tests pass.");
    struct observe_arg a = {cfg, r};

    (void)state;
    test_alloc_torture(observe, &a);
    rein_verify_report_free(r);
    rein_verify_config_free(cfg);
    test_rmtree(dir);
    free(dir);
}

/* ---- the judge's diff and check ---- */

static void test_diff(void **state)
{
    char *dir = test_tmpdir(), *diff = NULL;
    rein_error err;

    (void)state;
    /* Outside git: no diff. */
    assert_rein_ok(rein_verify_diff(dir, NULL, 0, &diff, &err), &err);
    assert_string_equal(diff, "");
    rein_free(diff);
    free(test_write_file(dir, "calc.c", "int f(void) { return 0; }\n"));
    free(test_write_file(dir, ".gitignore", "*.o\n"));
    assert_int_equal(sh(dir, "git init -q . && git add -A && git -c user.email=t@t -c "
                             "user.name=t commit -qm init"),
                     0);
    free(test_write_file(dir, "calc.c", "int f(void) { return 1; }\n"));
    free(test_write_file(dir, "src/new.c", "int g(void);\nint h(void)"));
    free(test_write_file(dir, "ignored.o", "object"));
    assert_int_equal(sh(dir, "printf 'a\\0b' > blob.bin"), 0);
    assert_rein_ok(rein_verify_diff(dir, NULL, 0, &diff, &err), &err);
    assert_contains(diff, "-int f(void) { return 0; }\n+int f(void) { return 1; }\n");
    assert_contains(diff, "diff --git a/src/new.c b/src/new.c\nnew file (untracked)\n"
                          "--- /dev/null\n+++ b/src/new.c\n@@ -0,0 +1,2 @@\n+int g(void);\n"
                          "+int h(void)\n\\ No newline at end of file\n");
    assert_contains(diff, "Binary file blob.bin added");
    assert_null(strstr(diff, "ignored.o"));
    rein_free(diff);
    /* Bounded: cut at a line, with a note. */
    assert_rein_ok(rein_verify_diff(dir, NULL, 120, &diff, &err), &err);
    assert_true(strlen(diff) < 200);
    assert_contains(diff, "… (diff cut: ");
    rein_free(diff);
    /* Against a base, and a base git does not know. */
    assert_rein_ok(rein_verify_diff(dir, "HEAD", 0, &diff, &err), &err);
    assert_contains(diff, "+int f(void) { return 1; }");
    rein_free(diff);
    assert_int_equal(rein_verify_diff(dir, "no-such-rev", 0, &diff, &err), REIN_EINVAL);
    assert_null(diff);
    test_rmtree(dir);
    free(dir);
}

struct replies {
    json_t *good, *bad;
};

static void check_replies(void *arg)
{
    struct replies *r = arg;
    json_t *errors = NULL;
    rein_err rc = rein_verify_judge_check(r->good, NULL, NULL);

    /* Out of memory is the only way a conforming reply may fail. */
    if (rc != REIN_OK && rc != REIN_ENOMEM)
        fail_msg("good reply: %s", rein_err_name(rc));
    rc = rein_verify_judge_check(r->bad, &errors, NULL);
    if (rc == REIN_EINVALID)
        assert_true(json_array_size(errors) > 0);
    else if (rc != REIN_ENOMEM)
        fail_msg("bad reply: %s", rein_err_name(rc));
    json_decref(errors);
}

static void test_judge_check_alloc_torture(void **state)
{
    /* Parsed before the allocator starts failing: jansson's parser may drop a character when
     * its buffer cannot grow, and the replies must be the same in every round. */
    struct replies r = {
        json_loads("{\"functionality_score\": 8, \"quality_score\": 7, \"risks\": [], "
                   "\"verdict\": \"PASS\", \"reasoning\": \"ok\"}",
                   0, NULL),
        json_loads("{\"verdict\": \"OK\", \"extra\": 1}", 0, NULL)};

    (void)state;
    assert_non_null(r.good);
    assert_non_null(r.bad);
    test_alloc_torture(check_replies, &r);
    json_decref(r.good);
    json_decref(r.bad);
}

/* ---- the tracker's review stop and the stop words ---- */

static void test_needs_review_and_stop_words(void **state)
{
    struct rein_verify_iteration it = {
        .verdict = REIN_VERIFY_SUCCESS, .progress = NAN, .confidence = NAN, .needs_review = true};
    struct rein_verify_failing f = {"TEST", "abc", REIN_VERIFY_P1};
    struct rein_verify_decision d;
    rein_verify_term *t = rein_verify_term_new(NULL);
    rein_error err;

    (void)state;
    assert_rein_ok(rein_verify_term_add(t, &it, &d, &err), &err);
    assert_int_equal(d.action, REIN_VERIFY_STOP);
    assert_int_equal(d.reason, REIN_VERIFY_STOP_NEEDS_REVIEW);
    assert_contains(d.message, "a person must review");
    assert_contains(d.suggestion, "Review the change yourself");
    rein_verify_term_free(t);
    /* A failing iteration is not held for review: it goes on. */
    t = rein_verify_term_new(NULL);
    it.verdict = REIN_VERIFY_FAILED;
    it.failing = &f;
    it.n_failing = 1;
    assert_rein_ok(rein_verify_term_add(t, &it, &d, &err), &err);
    assert_int_equal(d.action, REIN_VERIFY_CONTINUE);
    rein_verify_term_free(t);

    assert_string_equal(rein_verify_stop_reason_name(REIN_VERIFY_STOP_NEEDS_REVIEW),
                        "needs_review");
    assert_string_equal(rein_verify_stop_reason_name(REIN_VERIFY_STOP_PROVIDER_ERROR),
                        "provider_error");
    assert_string_equal(rein_verify_stop_reason_name(REIN_VERIFY_STOP_ERROR), "error");
    assert_string_equal(rein_loop_stop_word(REIN_VERIFY_STOP_SUCCESS_WITH_WARNINGS),
                        "final_answer");
    assert_string_equal(rein_loop_stop_word(REIN_VERIFY_STOP_MAX_ITERATIONS), "max_iterations");
    assert_string_equal(rein_loop_stop_word(REIN_VERIFY_STOP_OSCILLATION), "stalled");
    assert_string_equal(rein_loop_stop_word(REIN_VERIFY_STOP_NEEDS_REVIEW), "stalled");
    assert_string_equal(rein_loop_stop_word(REIN_VERIFY_STOP_CANCELLED), "cancelled");
    assert_string_equal(rein_verify_judge_verdict_name(REIN_VERIFY_JUDGE_UNVERIFIABLE),
                        "UNVERIFIABLE");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_blocked_lines),
    cmocka_unit_test(test_summary),
    cmocka_unit_test(test_shorten),
    cmocka_unit_test(test_first_message),
    cmocka_unit_test(test_observation),
    cmocka_unit_test(test_text_alloc_torture),
    cmocka_unit_test(test_diff),
    cmocka_unit_test(test_judge_check_alloc_torture),
    cmocka_unit_test(test_needs_review_and_stop_words),
};

REIN_TEST_MAIN(tests)
