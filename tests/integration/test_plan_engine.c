/*
 * Integration tests for the plan engine (include/rein/plan.h) over real HTTP against the
 * scripted model server, with a real process skill (tests/support/bin/plan_skill.c,
 * write_file confined to a temporary folder):
 *  - the seed's Cortex integration test: a step whose model claims a write it never made fails
 *    verification, is rewritten by the replanner and then passes;
 *  - a step that fails three times is blocked and its dependents are skipped;
 *  - two independent steps with a slow tool overlap in time (the recorded start and end of
 *    their calls), and the step that needs both sees both outputs;
 *  - a cyclic plan from the planner is refused with the invalid payload and asked again; a
 *    planner that never gets it right gives up with the last problem;
 *  - a split replaces a step, keeps what was done, and rewires its dependents;
 *  - a saved plan resumes without running its completed step again.
 * Each test asserts what the model server received, not only what rein reports.
 */
/* rein-test-timeout: 90 */
#include "test.h"

#include "core/internal.h"
#include "model_server.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* ---- a tool that waits for a partner ---- */

struct meet {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived, running, max_running;
};

/* rendezvous {tag}: returns 60 ms after two calls are running at the same time (or after
 * 10 s alone, so a run that never overlaps fails on the times instead of hanging). */
static rein_err tool_rendezvous(void *ud, const struct rein_invocation *inv,
                                struct rein_tool_reply *reply, rein_error *err)
{
    struct meet *m = ud;
    struct timespec until;

    (void)err;
    until = rein__deadline_ts(CLOCK_REALTIME, 10000);
    pthread_mutex_lock(&m->mu);
    m->arrived++;
    m->running++;
    if (m->running > m->max_running)
        m->max_running = m->running;
    pthread_cond_broadcast(&m->cv);
    while (m->arrived < 2 && pthread_cond_timedwait(&m->cv, &m->mu, &until) == 0)
        ;
    pthread_mutex_unlock(&m->mu);
    /* Both are in now: stay in a while, so the recorded times (milliseconds, read on each
     * call's own thread) show the overlap well above their resolution. */
    rein_sleep_ms(60);
    pthread_mutex_lock(&m->mu);
    m->running--;
    pthread_mutex_unlock(&m->mu);
    reply->output = json_pack("{s:O}", "tag", json_object_get(inv->args, "tag"));
    return REIN_OK;
}

/* ---- the fixture ---- */

struct fx {
    ms_server *ms;
    rein_provider_config *cfg;
    rein_provider *p;
    rein_registry *reg;
    rein_planner *pl;
    rein_plan_result *r;
    struct rein_plan_opts o;
    struct meet meet;
    struct rein_buf events;
    pthread_mutex_t ev_mu;
    char *root;
};

static void on_event(const struct rein_plan_event *ev, void *ud)
{
    struct fx *f = ud;

    pthread_mutex_lock(&f->ev_mu);
    assert_rein_ok(rein_plan_event_write(ev, &f->events), NULL);
    assert_rein_ok(rein_buf_addch(&f->events, '\n'), NULL);
    pthread_mutex_unlock(&f->ev_mu);
}

static void add_manifest(struct fx *f, const char *text)
{
    rein_error err;
    json_t *m = rein_json_parse(text, strlen(text), 0, &err);

    assert_non_null(m);
    assert_rein_ok(rein_registry_add_manifest(f->reg, m, NULL, NULL, &err), &err);
    json_decref(m);
}

static void fx_start_wire(struct fx *f, const char *wire)
{
    bool anthropic = strcmp(wire, "anthropic") == 0;
    bool gemini = strcmp(wire, "gemini") == 0, bedrock = strcmp(wire, "bedrock") == 0;
    char manifest[2048], base[128];
    rein_error err;
    json_t *m;

    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->meet.mu, NULL);
    pthread_cond_init(&f->meet.cv, NULL);
    pthread_mutex_init(&f->ev_mu, NULL);
    f->root = test_tmpdir();
    f->ms = ms_start(0, &err);
    if (!f->ms)
        fail_msg("model server: %s", err.msg);
    ms_set_api_key(f->ms, "sk-test");
    f->cfg = rein_provider_config_new();
    assert_rein_ok(rein_provider_config_set(f->cfg, "provider", wire, &err), &err);
    snprintf(base, sizeof(base), "%s%s",
             gemini || anthropic || bedrock ? ms_url(f->ms) : ms_openai_url(f->ms),
             gemini ? "/v1beta" : "");
    assert_rein_ok(rein_provider_config_set_base_url(f->cfg, base), NULL);
    assert_rein_ok(rein_provider_config_set_model(f->cfg, "test-model"), NULL);
    assert_rein_ok(rein_provider_config_set_api_key(f->cfg, "sk-test"), NULL);
    f->p = rein_provider_new(f->cfg, &err);
    if (!f->p)
        fail_msg("provider: %s", err.msg);
    f->reg = rein_registry_new(&err);
    assert_rein_ok(rein_skills_register_runners(f->reg, &err), &err);
    snprintf(manifest, sizeof(manifest),
             "{\"id\":\"write_file\",\"description\":\"Write content to a file\","
             "\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
             "\"content\":{\"type\":\"string\"}},\"required\":[\"path\",\"content\"]},"
             "\"runner\":{\"kind\":\"process\",\"command\":[\"%s/plan_skill\",\"write\",\"%s\"]}}",
             test_bin_dir(), f->root);
    add_manifest(f, manifest);
    snprintf(manifest, sizeof(manifest),
             "{\"id\":\"rendezvous\",\"description\":\"Meet another call\",\"parameters\":"
             "{\"type\":\"object\",\"properties\":{\"tag\":{\"type\":\"string\"}}}}");
    m = rein_json_parse(manifest, strlen(manifest), 0, &err);
    assert_non_null(m);
    assert_rein_ok(rein_registry_add_builtin(f->reg, m, tool_rendezvous, &f->meet, NULL, &err),
                   &err);
    json_decref(m);
    f->pl = rein_planner_new(f->p, f->reg, &err);
    if (!f->pl)
        fail_msg("planner: %s", err.msg);
    rein_buf_init(&f->events, 0);
    f->o.on_event = on_event;
    f->o.event_data = f;
    /* Steps' calls are not self-verified (test-model states no confidence, so auto would ask
     * about each one): the plan engine is what these tests are about. */
    f->o.step.verification = REIN_AGENT_VERIFY_OFF;
}

static void fx_start(struct fx *f)
{
    fx_start_wire(f, "openai");
}

static void fx_stop(struct fx *f)
{
    rein_plan_result_free(f->r);
    rein_planner_free(f->pl);
    rein_registry_free(f->reg);
    rein_provider_free(f->p);
    rein_provider_config_free(f->cfg);
    ms_stop(f->ms);
    rein_buf_release(&f->events);
    test_rmtree(f->root);
    free(f->root);
    pthread_mutex_destroy(&f->ev_mu);
    pthread_cond_destroy(&f->meet.cv);
    pthread_mutex_destroy(&f->meet.mu);
}

static void fx_script(struct fx *f, const char *json)
{
    rein_error err;

    if (ms_script(f->ms, json, false, &err) != REIN_OK)
        fail_msg("script: %s", err.msg);
}

static void fx_run(struct fx *f, const char *query)
{
    rein_error err;

    assert_rein_ok(rein_planner_run(f->pl, query, &f->o, &f->r, &err), &err);
    assert_non_null(f->r);
}

/* Every request the server got must have been valid and served from the script. */
static void all_served(struct fx *f)
{
    for (size_t i = 0; i < ms_request_count(f->ms); i++) {
        const struct ms_request *r = ms_request(f->ms, i);
        if (r->status != 200 || r->error)
            fail_msg("request %zu: status %d: %s\n%.2000s", i, r->status, r->error ? r->error : "",
                     r->body);
    }
}

/* How many requests have needle in their body. */
static size_t requests_with(struct fx *f, const char *needle)
{
    size_t n = 0;

    for (size_t i = 0; i < ms_request_count(f->ms); i++)
        n += strstr(ms_request(f->ms, i)->body, needle) != NULL;
    return n;
}

static const struct ms_request *request_with(struct fx *f, const char *needle)
{
    for (size_t i = 0; i < ms_request_count(f->ms); i++) {
        if (strstr(ms_request(f->ms, i)->body, needle))
            return ms_request(f->ms, i);
    }
    fail_msg("no request has \"%s\"", needle);
    return NULL;
}

static json_t *result_json(struct fx *f)
{
    json_t *j = rein_plan_result_json(f->r);

    assert_non_null(j);
    return j;
}

/* Milliseconds of an ISO 8601 time "2026-01-26T10:00:00.123Z". */
static int64_t iso_ms(const char *iso)
{
    struct tm tm;
    int ms = 0;

    assert_non_null(iso);
    memset(&tm, 0, sizeof(tm));
    assert_int_equal(sscanf(iso, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                            &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms),
                     7);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000 + ms;
}

/* ---- the tests ---- */

static const char claimed_write[] =
    "[{\"match\":{\"tools_include\":\"create_plan\"},\"tool_calls\":[{\"id\":\"p1\",\"name\":"
    "\"create_plan\",\"arguments\":\"{\\\"title\\\":\\\"Notes\\\",\\\"steps\\\":[\\\"Save the "
    "word hello in notes.txt\\\"]}\"}]},"
    "{\"match\":{\"tools_include\":\"replan\"},\"tool_calls\":[{\"id\":\"r1\",\"name\":\"replan\","
    "\"arguments\":\"{\\\"action\\\":\\\"rewrite\\\",\\\"new_description\\\":\\\"Call write_file "
    "with path notes.txt and content hello, then say what it returned\\\"}\"}]},"
    "{\"match\":{\"body_contains\":\"Write the answer to the request\"},\"text\":\"notes.txt now "
    "says hello.\"},"
    "{\"match\":{\"body_contains\":\"Call write_file with path notes.txt\",\"last_role\":"
    "\"user\"},\"tool_calls\":[{\"id\":\"w1\",\"name\":\"write_file\",\"arguments\":"
    "\"{\\\"path\\\":\\\"notes.txt\\\",\\\"content\\\":\\\"hello\\\"}\"}]},"
    "{\"match\":{\"body_contains\":\"Call write_file with path notes.txt\",\"last_role\":"
    "\"tool\"},\"text\":\"I wrote notes.txt with write_file: 5 bytes.\"},"
    "{\"match\":{\"body_contains\":\"Save the word hello in notes.txt\",\"last_role\":\"user\"},"
    "\"text\":\"I wrote notes.txt with write_file.\"}]";

/* The seed's Cortex integration test: verification fails, the replanner rewrites, it passes. */
static void cortex(const char *wire)
{
    struct fx f;
    json_t *j, *step, *calls;
    char *content, path[512];

    fx_start_wire(&f, wire);
    fx_script(&f, claimed_write);
    fx_run(&f, "Put hello into notes.txt");
    all_served(&f);
    if (!rein_plan_result_success(f.r))
        fail_msg("%s: %s\n%s", rein_plan_result_stop_reason(f.r), rein_plan_result_detail(f.r),
                 f.events.ptr);
    assert_string_equal(rein_plan_result_answer(f.r), "notes.txt now says hello.");
    assert_int_equal(ms_request_count(f.ms), 6);
    /* The replanner was told which claim had no call behind it, found by the claims module
     * (the tool, and the file it names). */
    assert_non_null(strstr(request_with(&f, "\"replan\"")->body,
                           "claims what its calls do not show: \\\"I wrote notes.txt with "
                           "write_file\\\" (tool write_file): no call shows it"));
    j = result_json(&f);
    step = json_array_get(json_object_get(j, "steps"), 0);
    assert_string_equal(json_string_value(json_object_get(step, "status")), "completed");
    assert_int_equal(json_integer_value(json_object_get(step, "replans")), 1);
    assert_int_equal(json_integer_value(json_object_get(step, "attempts")), 2);
    assert_non_null(strstr(json_string_value(json_object_get(step, "description")),
                           "Call write_file with path notes.txt"));
    calls = json_object_get(step, "calls");
    assert_int_equal(json_array_size(calls), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(calls, 0), "status")),
                        "success");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(calls, 0), "attempt")), 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(step, "files"), 0)),
                        "notes.txt");
    assert_string_equal(json_string_value(json_object_get(j, "stop_reason")), "completed");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "meta"), "model_calls")),
                     6);
    json_decref(j);
    snprintf(path, sizeof(path), "%s/notes.txt", f.root);
    content = test_read_file(path, NULL);
    assert_non_null(content);
    assert_string_equal(content, "hello");
    free(content);
    /* The events tell the story in order. */
    assert_non_null(strstr(f.events.ptr, "\"type\":\"verification\",\"seq\""));
    assert_non_null(strstr(f.events.ptr, "\"passed\":false"));
    assert_non_null(strstr(f.events.ptr, "\"type\":\"replan\""));
    assert_non_null(strstr(f.events.ptr, "\"action\":\"rewrite\""));
    assert_non_null(strstr(f.events.ptr, "\"type\":\"final\""));
    assert_true(strstr(f.events.ptr, "\"passed\":false") < strstr(f.events.ptr, "\"passed\":true"));
    fx_stop(&f);
}

static void test_cortex_claimed_write_is_rewritten_then_passes(void **state)
{
    (void)state;
    cortex("openai");
}

/* The same on the Anthropic wire (tool results merged into user messages, tool_use blocks). */
static void test_cortex_on_the_anthropic_wire(void **state)
{
    (void)state;
    cortex("anthropic");
}

/* And on Gemini's (function calls and responses as parts, the plan tools' schemas in
 * Gemini's subset). */
static void test_cortex_on_the_gemini_wire(void **state)
{
    (void)state;
    cortex("gemini");
}

/* And on Bedrock's Converse (toolUse and toolResult blocks, a binary event stream). */
static void test_cortex_on_the_bedrock_wire(void **state)
{
    (void)state;
    cortex("bedrock");
}

/* And on the OpenAI Responses wire (input items, function_call_output; issue 24). */
static void test_cortex_on_the_responses_wire(void **state)
{
    (void)state;
    cortex("openai-responses");
}

static const char always_claims[] =
    "[{\"match\":{\"tools_include\":\"create_plan\"},\"tool_calls\":[{\"id\":\"p1\",\"name\":"
    "\"create_plan\",\"arguments\":\"{\\\"title\\\":\\\"Notes\\\",\\\"steps\\\":[\\\"Save hello "
    "in notes.txt\\\",\\\"Read notes.txt back\\\",\\\"Say it is done\\\"],\\\"dependencies\\\":"
    "{\\\"1\\\":[0],\\\"2\\\":[1]}}\"}]},"
    "{\"match\":{\"tools_include\":\"replan\"},\"times\":0,\"tool_calls\":[{\"name\":\"replan\","
    "\"arguments\":\"{\\\"action\\\":\\\"rewrite\\\",\\\"new_description\\\":\\\"Save hello in "
    "notes.txt with write_file\\\"}\"}]},"
    "{\"match\":{\"body_contains\":\"Write the answer to the request\"},\"text\":\"Nothing was "
    "saved.\"},"
    "{\"match\":{\"body_contains\":\"Your step (step 0\"},\"times\":0,\"text\":\"I wrote "
    "notes.txt with write_file.\"}]";

static void test_step_failing_three_times_is_blocked_and_dependents_skipped(void **state)
{
    struct fx f;
    const rein_plan *p;

    (void)state;
    fx_start(&f);
    fx_script(&f, always_claims);
    fx_run(&f, "Save hello, read it back, report");
    all_served(&f);
    assert_false(rein_plan_result_success(f.r));
    assert_string_equal(rein_plan_result_stop_reason(f.r), "blocked");
    /* planner, three attempts of step 0, two replans, the answer */
    assert_int_equal(ms_request_count(f.ms), 7);
    assert_int_equal(requests_with(&f, "\"replan\",\"description\""), 2);
    assert_int_equal(requests_with(&f, "Your step (step 1"), 0);
    assert_int_equal(requests_with(&f, "Your step (step 2"), 0);
    p = rein_plan_result_plan(f.r);
    assert_int_equal(rein_plan_step_status(p, 0), REIN_PLAN_BLOCKED);
    assert_int_equal(rein_plan_step_replans(p, 0), 2);
    assert_non_null(strstr(rein_plan_step_note(p, 0), "blocked after 3 attempts"));
    assert_int_equal(rein_plan_step_status(p, 1), REIN_PLAN_SKIPPED);
    assert_int_equal(rein_plan_step_status(p, 2), REIN_PLAN_SKIPPED);
    assert_string_equal(rein_plan_step_note(p, 1),
                        "skipped: step 0 (Save hello in notes.txt with write_file) is blocked");
    assert_string_equal(rein_plan_step_note(p, 2),
                        "skipped: step 0 (Save hello in notes.txt with write_file) is blocked");
    assert_string_equal(rein_plan_result_answer(f.r), "Nothing was saved.");
    assert_non_null(strstr(rein_plan_result_detail(f.r), "step 0 (Save hello in notes.txt with "
                                                         "write_file) is blocked: blocked after "
                                                         "3 attempts"));
    assert_non_null(strstr(rein_plan_result_detail(f.r), "0 more blocked, 2 skipped"));
    /* The aggregation saw why. */
    assert_non_null(strstr(request_with(&f, "Write the answer to the request")->body,
                           "blocked after 3 attempts"));
    fx_stop(&f);
}

static const char two_parts[] =
    "[{\"match\":{\"tools_include\":\"create_plan\"},\"tool_calls\":[{\"id\":\"p1\",\"name\":"
    "\"create_plan\",\"arguments\":\"{\\\"title\\\":\\\"Parts\\\",\\\"steps\\\":[\\\"Fetch part "
    "A\\\",\\\"Fetch part B\\\",\\\"Join the parts\\\"],\\\"dependencies\\\":{\\\"2\\\":[0,1]}}\"}"
    "]},"
    "{\"match\":{\"body_contains\":\"Write the answer to the request\"},\"text\":\"AB\"},"
    "{\"match\":{\"body_contains\":\"Your step (step 0\",\"last_role\":\"user\"},\"tool_calls\":["
    "{\"id\":\"a1\",\"name\":\"rendezvous\",\"arguments\":\"{\\\"tag\\\":\\\"A\\\"}\"}]},"
    "{\"match\":{\"body_contains\":\"Your step (step 0\",\"last_role\":\"tool\"},\"text\":\"part "
    "A is alpha\"},"
    "{\"match\":{\"body_contains\":\"Your step (step 1\",\"last_role\":\"user\"},\"tool_calls\":["
    "{\"id\":\"b1\",\"name\":\"rendezvous\",\"arguments\":\"{\\\"tag\\\":\\\"B\\\"}\"}]},"
    "{\"match\":{\"body_contains\":\"Your step (step 1\",\"last_role\":\"tool\"},\"text\":\"part "
    "B is beta\"},"
    "{\"match\":{\"body_contains\":\"Your step (step 2\"},\"text\":\"alpha and beta\"}]";

static void test_independent_steps_overlap_in_time(void **state)
{
    struct fx f;
    const rein_plan *p;
    const json_t *a, *b;
    int64_t a0, a1, b0, b1;
    const char *join;

    (void)state;
    fx_start(&f);
    f.o.max_parallel = 2;
    fx_script(&f, two_parts);
    fx_run(&f, "Get A and B and join them");
    all_served(&f);
    if (!rein_plan_result_success(f.r))
        fail_msg("%s: %s", rein_plan_result_stop_reason(f.r), rein_plan_result_detail(f.r));
    p = rein_plan_result_plan(f.r);
    a = json_array_get(rein_plan_step_history(p, 0), 0);
    b = json_array_get(rein_plan_step_history(p, 1), 0);
    a0 = iso_ms(json_string_value(json_object_get(a, "call_time")));
    a1 = iso_ms(json_string_value(json_object_get(a, "response_time")));
    b0 = iso_ms(json_string_value(json_object_get(b, "call_time")));
    b1 = iso_ms(json_string_value(json_object_get(b, "response_time")));
    /* Each call started well before the other ended: they ran at the same time. */
    if ((a1 < b1 ? a1 : b1) - (a0 > b0 ? a0 : b0) < 40)
        fail_msg("A ran %lld..%lld, B ran %lld..%lld", (long long)a0, (long long)a1, (long long)b0,
                 (long long)b1);
    assert_int_equal(f.meet.max_running, 2);
    /* The step that needs both saw both outputs. */
    join = request_with(&f, "Your step (step 2")->body;
    assert_non_null(strstr(join, "part A is alpha"));
    assert_non_null(strstr(join, "part B is beta"));
    assert_int_equal(requests_with(&f, "part A is alpha"), 2); /* step 2 and the answer */
    fx_stop(&f);
}

static void test_max_parallel_one_runs_steps_one_by_one(void **state)
{
    static const char script[] =
        "[{\"match\":{\"tools_include\":\"create_plan\"},\"tool_calls\":[{\"name\":"
        "\"create_plan\",\"arguments\":\"{\\\"title\\\":\\\"T\\\",\\\"steps\\\":[\\\"one\\\","
        "\\\"two\\\"]}\"}]},"
        "{\"match\":{\"body_contains\":\"Write the answer\"},\"text\":\"both\"},"
        "{\"match\":{\"body_contains\":\"Your step\"},\"times\":0,\"text\":\"done\"}]";
    struct fx f;

    (void)state;
    fx_start(&f);
    f.o.max_parallel = 1;
    fx_script(&f, script);
    fx_run(&f, "one then two");
    all_served(&f);
    assert_true(rein_plan_result_success(f.r));
    assert_int_equal(ms_request_count(f.ms), 4);
    fx_stop(&f);
}

static void test_cyclic_plan_is_rejected_and_asked_again(void **state)
{
    static const char script[] =
        "[{\"match\":{\"tool_result_contains\":\"Invalid arguments\"},\"tool_calls\":[{\"id\":"
        "\"p2\",\"name\":\"create_plan\",\"arguments\":\"{\\\"title\\\":\\\"T\\\",\\\"steps\\\":"
        "[\\\"a\\\",\\\"b\\\"],\\\"dependencies\\\":{\\\"1\\\":[0]}}\"}]},"
        "{\"tool_calls\":[{\"id\":\"p1\",\"name\":\"create_plan\",\"arguments\":\"{\\\"title\\\":"
        "\\\"T\\\",\\\"steps\\\":[\\\"a\\\",\\\"b\\\"],\\\"dependencies\\\":{\\\"0\\\":[1],"
        "\\\"1\\\":[0]}}\"}]}]";
    struct fx f;
    rein_plan *p = NULL;
    rein_error err;
    const struct ms_request *second;
    size_t n;

    (void)state;
    fx_start(&f);
    fx_script(&f, script);
    assert_rein_ok(rein_planner_plan(f.pl, "do a then b", &f.o, &p, &err), &err);
    all_served(&f);
    assert_int_equal(ms_request_count(f.ms), 2);
    assert_int_equal(rein_plan_step_count(p), 2);
    assert_int_equal(rein_plan_step_deps(p, 1, &n)[0], 0);
    /* The second request carried the invalid payload: what was wrong, where, and the schema. */
    second = ms_request(f.ms, 1);
    assert_non_null(strstr(second->body, "Invalid arguments"));
    assert_non_null(strstr(second->body, "/dependencies"));
    assert_non_null(strstr(second->body, "0 → 1 → 0"));
    assert_non_null(strstr(second->body, "call create_plan again"));
    /* The planner saw the tools the steps can use. */
    assert_non_null(strstr(ms_request(f.ms, 0)->body, "- write_file: Write content to a file"));
    rein_plan_free(p);
    fx_stop(&f);
}

static void test_planner_gives_up_after_its_attempts(void **state)
{
    static const char script[] =
        "[{\"times\":0,\"tool_calls\":[{\"name\":\"create_plan\",\"arguments\":\"{\\\"title\\\":"
        "\\\"T\\\",\\\"steps\\\":[]}\"}]}]";
    struct fx f;
    rein_plan_result *r = NULL;
    rein_error err;

    (void)state;
    fx_start(&f);
    f.o.planner_attempts = 3;
    fx_script(&f, script);
    assert_int_equal(rein_planner_run(f.pl, "anything", &f.o, &r, &err), REIN_EINVALID);
    assert_null(r);
    assert_non_null(strstr(err.msg, "no valid create_plan call in 3 replies"));
    assert_non_null(strstr(err.msg, "/steps"));
    assert_int_equal(ms_request_count(f.ms), 3);
    all_served(&f);
    fx_stop(&f);
}

static void test_planner_reminds_a_model_that_only_talks(void **state)
{
    static const char script[] =
        "[{\"match\":{\"last_contains\":\"You did not call the create_plan tool\"},\"tool_calls\":"
        "[{\"name\":\"create_plan\",\"arguments\":\"{\\\"title\\\":\\\"T\\\",\\\"steps\\\":"
        "[\\\"a\\\"]}\"}]},"
        "{\"text\":\"Here is my plan: do a.\"}]";
    struct fx f;
    rein_plan *p = NULL;
    rein_error err;

    (void)state;
    fx_start(&f);
    fx_script(&f, script);
    assert_rein_ok(rein_planner_plan(f.pl, "do a", &f.o, &p, &err), &err);
    assert_int_equal(rein_plan_step_count(p), 1);
    assert_int_equal(ms_request_count(f.ms), 2);
    all_served(&f);
    rein_plan_free(p);
    fx_stop(&f);
}

static const char split_script[] =
    "[{\"match\":{\"tools_include\":\"create_plan\"},\"tool_calls\":[{\"name\":\"create_plan\","
    "\"arguments\":\"{\\\"title\\\":\\\"Report\\\",\\\"steps\\\":[\\\"Write the whole report\\\","
    "\\\"Publish the report\\\"],\\\"dependencies\\\":{\\\"1\\\":[0]}}\"}]},"
    "{\"match\":{\"tools_include\":\"replan\"},\"tool_calls\":[{\"name\":\"replan\",\"arguments\":"
    "\"{\\\"action\\\":\\\"split\\\",\\\"new_steps\\\":[\\\"Write part one to one.txt\\\","
    "\\\"Write part two to two.txt\\\"]}\"}]},"
    "{\"match\":{\"body_contains\":\"Write the answer to the request\"},\"text\":\"published\"},"
    "{\"match\":{\"body_contains\":\"Write part one to one.txt\\\\n\",\"last_role\":\"user\"},"
    "\"tool_calls\":[{\"name\":\"write_file\",\"arguments\":\"{\\\"path\\\":\\\"one.txt\\\","
    "\\\"content\\\":\\\"1\\\"}\"}]},"
    "{\"match\":{\"body_contains\":\"Write part one to one.txt\\\\n\",\"last_role\":\"tool\"},"
    "\"text\":\"one.txt holds part one\"},"
    "{\"match\":{\"body_contains\":\"Write part two to two.txt\\\\n\",\"last_role\":\"user\"},"
    "\"tool_calls\":[{\"name\":\"write_file\",\"arguments\":\"{\\\"path\\\":\\\"two.txt\\\","
    "\\\"content\\\":\\\"2\\\"}\"}]},"
    "{\"match\":{\"body_contains\":\"Write part two to two.txt\\\\n\",\"last_role\":\"tool\"},"
    "\"text\":\"two.txt holds part two\"},"
    "{\"match\":{\"body_contains\":\"Publish the report\\\\n\"},\"text\":\"published both parts\"},"
    "{\"match\":{\"body_contains\":\"Write the whole report\"},\"text\":\"I created report.md.\"}]";

static void test_split_replaces_a_step_and_rewires_its_dependents(void **state)
{
    struct fx f;
    const rein_plan *p;
    const int *deps;
    size_t n;
    const char *publish;

    (void)state;
    fx_start(&f);
    f.o.max_parallel = 2;
    fx_script(&f, split_script);
    fx_run(&f, "Write and publish the report");
    all_served(&f);
    if (!rein_plan_result_success(f.r))
        fail_msg("%s: %s\n%s", rein_plan_result_stop_reason(f.r), rein_plan_result_detail(f.r),
                 f.events.ptr);
    p = rein_plan_result_plan(f.r);
    assert_int_equal(rein_plan_step_count(p), 3);
    assert_string_equal(rein_plan_step_description(p, 0), "Write part one to one.txt");
    assert_string_equal(rein_plan_step_description(p, 1), "Write part two to two.txt");
    assert_string_equal(rein_plan_step_description(p, 2), "Publish the report");
    deps = rein_plan_step_deps(p, 2, &n);
    assert_int_equal(n, 2);
    assert_int_equal(deps[0], 0);
    assert_int_equal(deps[1], 1);
    assert_int_equal(rein_plan_step_replans(p, 0), 1);
    assert_int_equal(rein_plan_step_replans(p, 1), 1);
    assert_non_null(strstr(rein_plan_step_note(p, 0), "split into steps 0 to 1"));
    publish = request_with(&f, "Publish the report\\n")->body;
    assert_non_null(strstr(publish, "one.txt holds part one"));
    assert_non_null(strstr(publish, "two.txt holds part two"));
    assert_int_equal(requests_with(&f, "Your step (step 0 of the plan \\\"Report\\\"):\\nWrite "
                                       "the whole report"),
                     1);
    /* The live view's rebuild event: a plan event after the split. */
    assert_non_null(strstr(f.events.ptr, "\"reason\":\"split\""));
    fx_stop(&f);
}

static void test_saved_plan_resumes_without_rerunning_completed_steps(void **state)
{
    static const char saved[] =
        "{\"title\":\"Two\",\"query\":\"first, then second\",\"steps\":[\"first\",\"second\"],"
        "\"dependencies\":{\"1\":[0]},\"step_statuses\":{\"0\":\"completed\",\"1\":"
        "\"in_progress\"},\"step_outputs\":{\"0\":\"FIRST-OUTPUT\"},\"step_tool_history\":{\"1\":"
        "[{\"call_id\":\"lost\",\"tool\":\"write_file\",\"args\":{},\"status\":\"pending\","
        "\"result\":null,\"step\":1,\"attempt\":0}]}}";
    static const char script[] =
        "[{\"match\":{\"body_contains\":\"Write the answer\"},\"text\":\"done twice\"},"
        "{\"match\":{\"body_contains\":\"Your step (step 1\"},\"text\":\"second done\"}]";
    struct fx f;
    char *path;
    rein_plan *p, *again;
    rein_error err;
    const json_t *h;

    (void)state;
    fx_start(&f);
    path = test_write_file(f.root, "plan.json", saved);
    p = rein_plan_load_file(path, &err);
    assert_non_null(p);
    fx_script(&f, script);
    f.o.save_path = path;
    assert_rein_ok(rein_planner_execute(f.pl, p, &f.o, &f.r, &err), &err);
    all_served(&f);
    assert_true(rein_plan_result_success(f.r));
    assert_int_equal(ms_request_count(f.ms), 2);
    assert_int_equal(requests_with(&f, "Your step (step 0"), 0);
    assert_non_null(strstr(request_with(&f, "Your step (step 1")->body, "FIRST-OUTPUT"));
    /* The lost call is kept, marked, and did not fail the new run. */
    again = rein_plan_load_file(path, &err);
    assert_non_null(again);
    h = rein_plan_step_history(again, 1);
    assert_int_equal(json_array_size(h), 1);
    assert_true(json_is_true(json_object_get(json_array_get(h, 0), "interrupted")));
    assert_int_equal(rein_plan_step_status(again, 1), REIN_PLAN_COMPLETED);
    assert_string_equal(rein_plan_answer(again), "done twice");
    assert_non_null(strstr(f.events.ptr, "\"resumed\":true"));
    rein_plan_free(again);
    /* A finished plan with an answer asks nobody anything. */
    rein_plan_result_free(f.r);
    f.r = NULL;
    again = rein_plan_load_file(path, &err);
    assert_rein_ok(rein_planner_execute(f.pl, again, &f.o, &f.r, &err), &err);
    assert_true(rein_plan_result_success(f.r));
    assert_string_equal(rein_plan_result_answer(f.r), "done twice");
    assert_int_equal(ms_request_count(f.ms), 2);
    free(path);
    fx_stop(&f);
}

struct canceller {
    ms_server *ms;
    rein_cancel *c;
};

/* Cancels the run once the step's request (the second) has reached the server. */
static void *cancel_when_asked(void *arg)
{
    struct canceller *k = arg;

    if (ms_wait(k->ms, 2, 20000))
        rein_cancel_trigger(k->c, "stopped by the test");
    return NULL;
}

static void test_cancel_stops_the_run_and_keeps_the_plan_resumable(void **state)
{
    static const char script[] =
        "[{\"match\":{\"tools_include\":\"create_plan\"},\"tool_calls\":[{\"name\":"
        "\"create_plan\",\"arguments\":\"{\\\"title\\\":\\\"T\\\",\\\"steps\\\":[\\\"wait\\\"]}\"}"
        "]},"
        "{\"match\":{\"body_contains\":\"Your step\"},\"fault\":{\"hang\":true}}]";
    struct fx f;
    struct canceller k;
    char path[512];
    rein_plan *saved;
    rein_error err;
    pthread_t t;

    (void)state;
    fx_start(&f);
    fx_script(&f, script);
    snprintf(path, sizeof(path), "%s/plan.json", f.root);
    f.o.save_path = path;
    k.ms = f.ms;
    k.c = rein_cancel_new();
    f.o.cancel = k.c;
    assert_int_equal(pthread_create(&t, NULL, cancel_when_asked, &k), 0);
    fx_run(&f, "wait for ever");
    pthread_join(t, NULL);
    assert_false(rein_plan_result_success(f.r));
    assert_string_equal(rein_plan_result_stop_reason(f.r), "cancelled");
    assert_string_equal(rein_plan_result_detail(f.r), "stopped by the test");
    assert_int_equal(ms_request_count(f.ms), 2); /* no answer was asked for */
    saved = rein_plan_load_file(path, &err);
    assert_non_null(saved);
    assert_int_equal(rein_plan_step_status(saved, 0), REIN_PLAN_NOT_STARTED);
    assert_null(rein_plan_answer(saved));
    rein_plan_free(saved);
    rein_cancel_unref(k.c);
    fx_stop(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_cortex_claimed_write_is_rewritten_then_passes),
    cmocka_unit_test(test_cortex_on_the_anthropic_wire),
    cmocka_unit_test(test_cortex_on_the_gemini_wire),
    cmocka_unit_test(test_cortex_on_the_bedrock_wire),
    cmocka_unit_test(test_cortex_on_the_responses_wire),
    cmocka_unit_test(test_step_failing_three_times_is_blocked_and_dependents_skipped),
    cmocka_unit_test(test_independent_steps_overlap_in_time),
    cmocka_unit_test(test_max_parallel_one_runs_steps_one_by_one),
    cmocka_unit_test(test_cyclic_plan_is_rejected_and_asked_again),
    cmocka_unit_test(test_planner_gives_up_after_its_attempts),
    cmocka_unit_test(test_planner_reminds_a_model_that_only_talks),
    cmocka_unit_test(test_split_replaces_a_step_and_rewires_its_dependents),
    cmocka_unit_test(test_saved_plan_resumes_without_rerunning_completed_steps),
    cmocka_unit_test(test_cancel_stops_the_run_and_keeps_the_plan_resumable),
};

REIN_TEST_MAIN(tests)
