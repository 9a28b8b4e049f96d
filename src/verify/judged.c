/*
 * FUNCTIONALITY and ARCHITECT without steps: the protocols the seed (002, 2.6) gives to the
 * LLM judge.
 *
 *   FUNCTIONALITY  "derive the expected behaviour from the task, generate cases, run them,
 *                  and when they cannot be run, LLM-as-judge". With `run: COMMAND` the model
 *                  states the behaviour and proposes cases through a `cases` tool (its
 *                  arguments validated by the call pipeline against a schema); each case runs
 *                  COMMAND ({input} in a word replaced by the case's input, which is also its
 *                  standard input, no shell) and passes when its trimmed standard output
 *                  equals the expected text. Without `run` the judge decides whether the
 *                  change implements the behaviour.
 *   ARCHITECT      "identify architecture changes (new files, dependencies, API), check the
 *                  existing patterns, assess complexity, LLM-as-judge on the design": the
 *                  judge reviews the diff with those criteria.
 *
 * The judge's PASS passes, FAIL fails (its risks become the diagnostics), NEEDS_REVIEW and no
 * valid verdict are UNVERIFIABLE, the first also asking for a person's review. Without a model
 * (or, for FUNCTIONALITY, without anything that says what the code should do) the protocol is
 * UNVERIFIABLE with the reason: a check that could not be made is never a pass, and never a
 * configuration error either.
 */
#include "output_int.h"
#include "report_int.h"

#include <rein/proc.h>

#include <stdio.h>
#include <string.h>

#define CASES_MAX      20
#define CASE_TIMEOUT   30000
#define CASE_OUT_MAX   ((size_t)64 << 10)
#define DIFF_MAX_BYTES ((size_t)64 << 10)

static const char cases_system[] =
    "You derive the behaviour a change must have from its task and write test cases for it. "
    "You do not write code. Answer by calling the cases tool exactly once.";

static const char cases_description[] =
    "Record the behaviour the code must have and the test cases that check it: each case "
    "has the input given to the program and the exact output expected.";

static const char cases_schema[] =
    "{\"type\": \"object\", \"additionalProperties\": false,"
    " \"required\": [\"behaviour\", \"cases\"],"
    " \"properties\": {"
    "  \"behaviour\": {\"type\": \"string\", \"minLength\": 1},"
    "  \"cases\": {\"type\": \"array\", \"minItems\": 1, \"maxItems\": 20,"
    "   \"items\": {\"type\": \"object\", \"additionalProperties\": false,"
    "    \"required\": [\"input\", \"expected\"],"
    "    \"properties\": {\"input\": {\"type\": \"string\"}, \"expected\": {\"type\": \"string\"},"
    "     \"why\": {\"type\": \"string\"}}}}}}";

static rein_err unverifiable(struct rein__presult *p, const char *why)
{
    p->status = REIN_VERIFY_STATUS_UNVERIFIABLE;
    p->own_confidence = 0.5; /* nothing was shown either way */
    rein_free(p->reason);
    p->reason = rein_strdup(why);
    return p->reason ? REIN_OK : REIN_ENOMEM;
}

/* The judge's verdict into p. */
static rein_err take_verdict(struct rein__presult *p, const rein_verify_judge_result *j)
{
    const json_t *reply = rein_verify_judge_result_reply(j), *risk;
    const char *why = rein_verify_judge_result_reason(j);
    struct rein__diags d = {.arr = p->diagnostics};
    size_t i;

    p->judge = rein_verify_judge_result_json(j);
    if (!p->judge)
        return REIN_ENOMEM;
    switch (rein_verify_judge_result_verdict(j)) {
    case REIN_VERIFY_JUDGE_PASS:
        p->status = REIN_VERIFY_STATUS_PASSED;
        p->own_confidence = rein_verify_judge_result_confidence(j);
        p->reason = rein_asprintf("the judge: %s", why);
        break;
    case REIN_VERIFY_JUDGE_FAIL:
        p->status = REIN_VERIFY_STATUS_FAILED;
        p->own_confidence = 1.0;
        p->reason = rein_asprintf("the judge: %s", why);
        json_array_foreach(json_object_get(reply, "risks"), i, risk)
        {
            json_t *o = rein__diag_new(&d, "error");
            const char *t = json_string_value(risk);
            rein__diag_set_str(&d, o, "message", t, t ? strlen(t) : 0);
        }
        if (d.oom)
            return REIN_ENOMEM;
        break;
    case REIN_VERIFY_JUDGE_NEEDS_REVIEW:
        p->review_why = rein_asprintf("%s: the judge asks for a person's review: %s", p->name, why);
        if (!p->review_why)
            return REIN_ENOMEM;
        return unverifiable(p, p->review_why + strlen(p->name) + 2);
    case REIN_VERIFY_JUDGE_UNVERIFIABLE:
        p->reason = rein_asprintf("the judge gave no verdict: %s", why);
        p->status = REIN_VERIFY_STATUS_UNVERIFIABLE;
        p->own_confidence = 0.5;
        break;
    }
    return p->reason ? REIN_OK : REIN_ENOMEM;
}

static rein_err ask_judge(const struct rein__judged_in *in, struct rein__presult *p,
                          const char *requirement, const char *diff)
{
    rein_verify_judge_result *j = NULL;
    rein_error err;
    rein_err rc = rein_verify_judge_run(in->judge, requirement, diff, in->judge_opts, &j, &err);

    if (rc)
        return rc == REIN_ECANCELED ? rc : REIN_ENOMEM;
    rc = take_verdict(p, j);
    rein_verify_judge_result_free(j);
    return rc;
}

/* One word of the case command with {input} replaced. New; NULL on ENOMEM. */
static char *substitute(const char *word, const char *input)
{
    struct rein_buf b;
    const char *at;
    char *out;

    rein_buf_init(&b, 0);
    while ((at = strstr(word, "{input}"))) {
        if (rein_buf_add(&b, word, (size_t)(at - word)) || rein_buf_adds(&b, input))
            goto fail;
        word = at + 7;
    }
    if (rein_buf_adds(&b, word))
        goto fail;
    out = rein_buf_detach(&b, NULL);
    rein_buf_release(&b);
    return out;
fail:
    rein_buf_release(&b);
    return NULL;
}

/* s without leading and trailing blanks, as n bytes from *start. */
static void trim(const char *s, size_t len, const char **start, size_t *n)
{
    while (len && strchr(" \t\r\n", *s)) {
        s++;
        len--;
    }
    while (len && strchr(" \t\r\n", s[len - 1]))
        len--;
    *start = s;
    *n = len;
}

/* Runs one case; *passed and, when it failed, a diagnostic. */
static rein_err run_case(const struct rein__judged_in *in, struct rein__presult *p, size_t k,
                         const json_t *c, bool *passed)
{
    const char *input = json_string_value(json_object_get(c, "input"));
    const char *expected = json_string_value(json_object_get(c, "expected"));
    struct rein__diags d = {.arr = p->diagnostics};
    char **argv = in->proto->case_argv, **words;
    struct rein_proc_result res;
    struct rein_proc_run_opts po;
    const char *got, *want;
    size_t n = 0, gn, wn;
    char name[120], msg[400];
    rein_err rc = REIN_ENOMEM;
    rein_error perr;

    while (argv[n])
        n++;
    words = rein_calloc(n + 1, sizeof(*words));
    if (!words)
        return REIN_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (!(words[i] = substitute(argv[i], input)))
            goto out;
    }
    memset(&po, 0, sizeof(po));
    po.proc.argv = (const char *const *)words;
    po.proc.cwd = in->cwd;
    po.input = input;
    po.input_len = strlen(input);
    po.stdout_max = CASE_OUT_MAX;
    po.timeout_ms = CASE_TIMEOUT;
    po.cancel = in->cancel;
    snprintf(name, sizeof(name), "case %zu: %.80s", k + 1, input);
    if (rein_proc_run(&po, &res, &perr) != REIN_OK) {
        *passed = false;
        snprintf(msg, sizeof(msg), "could not run `%s`: %s", in->proto->case_command, perr.msg);
        rein__diag_test(&d, name, strlen(name), msg);
        rc = d.oom ? REIN_ENOMEM : REIN_OK;
        goto out;
    }
    trim(res.out.ptr, res.out.len, &got, &gn);
    trim(expected, strlen(expected), &want, &wn);
    *passed = !res.timed_out && gn == wn && memcmp(got, want, gn) == 0;
    if (!*passed) {
        if (res.timed_out)
            snprintf(msg, sizeof(msg), "timed out after %d s", CASE_TIMEOUT / 1000);
        else
            snprintf(msg, sizeof(msg), "expected \"%.*s\", got \"%.*s\" (exit code %d)",
                     (int)(wn < 150 ? wn : 150), want, (int)(gn < 150 ? gn : 150), got,
                     res.exit_code);
        rein__verify_utf8_fix(msg, strlen(msg));
        rein__diag_test(&d, name, strlen(name), msg);
    }
    rein_proc_result_release(&res);
    rc = d.oom ? REIN_ENOMEM : REIN_OK;
out:
    rein__verify_argv_free(words);
    return rc;
}

/* FUNCTIONALITY with `run`: the model proposes cases, rein runs them. */
static rein_err run_cases(const struct rein__judged_in *in, struct rein__presult *p,
                          const char *requirement, const char *diff)
{
    struct rein__verify_ask a = {.system = cases_system,
                                 .tool = "cases",
                                 .what = "set of cases",
                                 .description = cases_description,
                                 .opts = in->judge_opts};
    json_t *reply = NULL, *c;
    char *reason = NULL, *prompt;
    rein_error err;
    rein_err rc;
    size_t i;

    a.schema = rein_json_parse(cases_schema, sizeof(cases_schema) - 1, 0, &err);
    prompt = rein_asprintf(
        "## Task\nDerive from the goal below the behaviour the code must have, then propose up "
        "to %d test cases that check it, the edge cases included. Each case runs the "
        "command\n    %s\nwith {input} replaced by the case's input, which is also given on "
        "its standard input; the case passes when its standard output, without leading and "
        "trailing blanks, equals the expected text.\n\n## Goal\n%s\n\n## Code change\n"
        "```diff\n%.*s\n```\n\nCall the cases tool with {\"behaviour\": string, \"cases\": "
        "[{\"input\": string, \"expected\": string, \"why\": string}]}.\n",
        CASES_MAX, in->proto->case_command, requirement, (int)strnlen(diff, DIFF_MAX_BYTES), diff);
    if (!a.schema || !prompt) {
        json_decref(a.schema);
        rein_free(prompt);
        return REIN_ENOMEM;
    }
    a.prompt = prompt;
    rc = rein__verify_ask_run(in->judge, &a, &reply, &reason, &err);
    rein_free(prompt);
    json_decref(a.schema);
    if (rc)
        return rc == REIN_ECANCELED ? rc : REIN_ENOMEM;
    if (!reply) {
        char *why = rein_asprintf("the model proposed no valid cases: %s", reason);
        rein_free(reason);
        if (!why)
            return REIN_ENOMEM;
        rc = unverifiable(p, why);
        rein_free(why);
        return rc;
    }
    rein_free(reason);
    p->judge = json_pack("{s:O, s:O}", "behaviour", json_object_get(reply, "behaviour"), "cases",
                         json_object_get(reply, "cases"));
    p->counts.has_tests = true;
    json_array_foreach(json_object_get(reply, "cases"), i, c)
    {
        bool passed = false;
        if (rein_cancel_is_set(in->cancel)) {
            json_decref(reply);
            return REIN_ECANCELED;
        }
        rc = run_case(in, p, i, c, &passed);
        if (rc)
            break;
        p->counts.total++;
        p->counts.passed += passed;
        p->counts.failed += !passed;
    }
    json_decref(reply);
    if (rc || !p->judge)
        return rc ? rc : REIN_ENOMEM;
    snprintf(p->counts.format, sizeof(p->counts.format), "cases");
    p->status = p->counts.failed ? REIN_VERIFY_STATUS_FAILED : REIN_VERIFY_STATUS_PASSED;
    p->own_confidence = p->counts.failed ? 1.0 : 0.8; /* the cases are the model's own */
    p->reason = p->counts.failed
                    ? rein_asprintf("%lld of %lld proposed cases failed",
                                    (long long)p->counts.failed, (long long)p->counts.total)
                    : rein_asprintf("all %lld proposed cases passed", (long long)p->counts.total);
    return p->reason ? REIN_OK : REIN_ENOMEM;
}

static const char architect_task[] =
    "Review the architecture of this change, for the goal: %s\n"
    "Check: (1) new files, new dependencies and changed public interfaces (API signatures): "
    "are they needed and do they follow the patterns the project already uses; (2) did "
    "complexity grow without need (duplication, a second way of doing what exists, layering "
    "broken); (3) is the design sound. Any red flag is a FAIL; say NEEDS_REVIEW when a person "
    "must decide.";

static const char functionality_task[] =
    "The code must have this behaviour: %s\n"
    "Check whether the change implements it correctly, edge cases included, as if you ran it "
    "on the cases that matter. FAIL when it does not (CORRECT is PASS, INCORRECT is FAIL).";

rein_err rein__verify_judged(const struct rein__judged_in *in, struct rein__presult *p)
{
    const struct rein__protocol *pr = in->proto;
    bool arch = strcmp(pr->name, "ARCHITECT") == 0;
    const char *goal = in->goal && in->goal[0] ? in->goal : pr->description;
    char *diff = NULL, *req, why[300];
    rein_error err;
    rein_err rc;

    if (!in->judge) {
        snprintf(why, sizeof(why),
                 "no model to judge %s with (--judge and a model, or steps for "
                 "it in the protocol file)",
                 pr->name);
        return unverifiable(p, why);
    }
    if (!arch && (!goal || !goal[0]))
        return unverifiable(p, "nothing says what the code should do: give the goal "
                               "(`rein verify --goal TEXT`) or FUNCTIONALITY a description");
    rc = rein_verify_diff(in->cwd, in->base, DIFF_MAX_BYTES, &diff, &err);
    if (rc == REIN_ENOMEM)
        return rc;
    if (rc) {
        snprintf(why, sizeof(why), "the change could not be read: %s", err.msg);
        return unverifiable(p, why);
    }
    if (!arch && pr->case_argv) {
        rc = run_cases(in, p, goal, diff);
    } else {
        req = rein_asprintf(arch ? architect_task : functionality_task,
                            goal && goal[0] ? goal : "(not stated)");
        rc = req ? ask_judge(in, p, req, diff) : REIN_ENOMEM;
        rein_free(req);
    }
    rein_free(diff);
    return rc;
}
