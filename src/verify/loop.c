/*
 * The verification loop (include/rein/loop.h): act (an agent turn), check (the protocols and
 * the answer's claims), judge (optional), decide (the termination tracker), perceive (the
 * observation for the next turn), until the criteria hold or the loop stops for a named
 * reason. This file runs the iterations and keeps the result; loop_text.c writes what the
 * agent reads.
 *
 * The loop is a driver over three parts that each work alone: rein_agent_run() for the
 * agent, rein_verify_run() for the checks and rein_verify_judge_run() for the judge. What
 * decides is the tracker of term.c, fed one iteration at a time; the loop only adds what it
 * alone knows (a failing judge, the review flag, a blocker and a confidence the agent
 * stated) and the stops that are not the tracker's to name (cancelled, provider_error,
 * error).
 */
#include "loop_int.h"

#include <rein/trace.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TEXT_KEPT        2000 /* bytes of each answer kept in the history */
#define ARG_KEPT         200  /* bytes of each string argument kept in the history */
#define BLOCKED_WHY      300
#define JUDGE_SIGNATURE  "judge:fail"
#define TRIED_IN_MESSAGE 5

struct rein_loop_result {
    enum rein_verify_stop_reason reason;
    enum rein_verify_verdict verdict;
    int iterations, max_iterations;
    bool extended;
    char *goal, *answer, *message, *suggestion;
    char trace_id[REIN_TRACE_ID_LEN + 1];
    rein_verify_report *report;      /* the last one, or NULL */
    rein_verify_judge_result *judge; /* the last one, or NULL */
    json_t *history;                 /* iteration records */
    rein_verify_criteria *criteria;  /* derived from the goal, or NULL */
    int64_t input_tokens, output_tokens, latency_ms;
    int model_calls;
    size_t tool_calls;
};

/* The state of one run. */
struct loop {
    rein_agent *agent;
    const struct rein_loop_opts *o;
    rein_loop_result *r;
    char cwd[PATH_MAX];
    rein_history *h;
    rein_verify_term *term;
    struct rein_agent_turn_opts turn;
    rein_cancel *cancel; /* the loop's (opts.cancel), may be NULL */
    char *message;       /* the next user message */
    int64_t start_ms;
    const rein_verify_config *protocols; /* the caller's, or the derived criteria's */
    rein_verify_criteria *criteria;      /* derived (handed to the result), or NULL */
};

/* ---- the result ---- */

void rein_loop_result_free(rein_loop_result *r)
{
    if (!r)
        return;
    rein_free(r->goal);
    rein_free(r->answer);
    rein_free(r->message);
    rein_free(r->suggestion);
    rein_verify_report_free(r->report);
    rein_verify_judge_result_free(r->judge);
    json_decref(r->history);
    rein_verify_criteria_free(r->criteria);
    rein_free(r);
}

const json_t *rein_loop_result_criteria(const rein_loop_result *r)
{
    return r->criteria ? rein_verify_criteria_json(r->criteria) : NULL;
}

enum rein_verify_stop_reason rein_loop_result_reason(const rein_loop_result *r)
{
    return r->reason;
}

bool rein_loop_result_success(const rein_loop_result *r)
{
    return r->reason == REIN_VERIFY_STOP_SUCCESS ||
           r->reason == REIN_VERIFY_STOP_SUCCESS_WITH_WARNINGS;
}

bool rein_loop_result_needs_review(const rein_loop_result *r)
{
    return r->reason == REIN_VERIFY_STOP_NEEDS_REVIEW;
}

enum rein_verify_verdict rein_loop_result_verdict(const rein_loop_result *r)
{
    return r->verdict;
}

int rein_loop_result_iterations(const rein_loop_result *r)
{
    return r->iterations;
}

int rein_loop_result_max_iterations(const rein_loop_result *r)
{
    return r->max_iterations;
}

const char *rein_loop_result_message(const rein_loop_result *r)
{
    return r->message ? r->message : "";
}

const char *rein_loop_result_suggestion(const rein_loop_result *r)
{
    return r->suggestion ? r->suggestion : "";
}

const char *rein_loop_result_answer(const rein_loop_result *r)
{
    return r->answer ? r->answer : "";
}

const rein_verify_report *rein_loop_result_report(const rein_loop_result *r)
{
    return r->report;
}

const rein_verify_judge_result *rein_loop_result_judge(const rein_loop_result *r)
{
    return r->judge;
}

const char *rein_loop_stop_word(enum rein_verify_stop_reason r)
{
    switch (r) {
    case REIN_VERIFY_STOP_SUCCESS:
    case REIN_VERIFY_STOP_SUCCESS_WITH_WARNINGS:
        return "final_answer";
    case REIN_VERIFY_STOP_MAX_ITERATIONS:
        return "max_iterations";
    case REIN_VERIFY_STOP_CANCELLED:
        return "cancelled";
    case REIN_VERIFY_STOP_PROVIDER_ERROR:
        return "provider_error";
    case REIN_VERIFY_STOP_ERROR:
        return "error";
    default:
        return "stalled";
    }
}

static json_t *jstr_or_null(const char *s)
{
    return s ? rein__verify_jstr(s) : json_null();
}

json_t *rein_loop_result_json(const rein_loop_result *r)
{
    json_t *o = json_object(), *meta = json_object();
    json_t *report = r->report ? rein_verify_report_json(r->report) : json_null();
    json_t *judge = r->judge ? rein_verify_judge_result_json(r->judge) : json_null();

    if (!o || !meta || !report || !judge ||
        json_object_set_new(meta, "input_tokens", json_integer(r->input_tokens)) ||
        json_object_set_new(meta, "output_tokens", json_integer(r->output_tokens)) ||
        json_object_set_new(meta, "model_calls", json_integer(r->model_calls)) ||
        json_object_set_new(meta, "tool_calls", json_integer((json_int_t)r->tool_calls)) ||
        json_object_set_new(meta, "latency_ms", json_integer(r->latency_ms)))
        goto fail;
    if (json_object_set_new(o, "success", json_boolean(rein_loop_result_success(r))) ||
        json_object_set_new(o, "needs_review", json_boolean(rein_loop_result_needs_review(r))) ||
        json_object_set_new(o, "verdict", json_string(rein_verify_verdict_name(r->verdict))) ||
        json_object_set_new(o, "reason", json_string(rein_verify_stop_reason_name(r->reason))) ||
        json_object_set_new(o, "stop_reason", json_string(rein_loop_stop_word(r->reason))) ||
        json_object_set_new(o, "message", rein__verify_jstr(rein_loop_result_message(r))) ||
        json_object_set_new(o, "suggestion", rein__verify_jstr(rein_loop_result_suggestion(r))) ||
        json_object_set_new(o, "goal", jstr_or_null(r->goal)) ||
        json_object_set_new(o, "answer", rein__verify_jstr(rein_loop_result_answer(r))) ||
        json_object_set_new(o, "iterations", json_integer(r->iterations)) ||
        json_object_set_new(o, "max_iterations", json_integer(r->max_iterations)) ||
        json_object_set_new(o, "extended", json_boolean(r->extended)) ||
        json_object_set_new(o, "trace_id", json_string(r->trace_id)) ||
        json_object_set_new(o, "history", json_deep_copy(r->history)) ||
        json_object_set_new(o, "report", report) || json_object_set_new(o, "judge", judge) ||
        json_object_set_new(o, "criteria",
                            r->criteria ? json_deep_copy(rein_verify_criteria_json(r->criteria))
                                        : json_null()) ||
        json_object_set_new(o, "meta", meta)) {
        json_decref(o);
        return NULL;
    }
    return o;
fail:
    json_decref(o);
    json_decref(meta);
    json_decref(report);
    json_decref(judge);
    return NULL;
}

/* ---- events ---- */

/* Sends an event made by json_pack (taken), with "type" and "iteration". */
static void emit(struct loop *L, json_t *ev)
{
    if (ev && L->o->on_event)
        L->o->on_event(ev, L->o->event_data);
    json_decref(ev);
}

/* ---- checking one iteration ---- */

static bool cancelled(const struct loop *L)
{
    return (L->cancel && rein_cancel_is_set(L->cancel)) ||
           (L->turn.cancel && rein_cancel_is_set(L->turn.cancel));
}

/* The record of the agent's turn in the history (new), and its share of the totals. */
static json_t *agent_record(struct loop *L, const rein_agent_result *ar)
{
    json_t *calls = rein_agent_result_tool_calls_json(ar), *list = json_array(), *c;
    const char *answer = rein_agent_result_text(ar);
    char *text = rein_strndup(answer, strnlen(answer, TEXT_KEPT));
    json_t *rec = NULL;
    size_t i;

    L->r->input_tokens += rein_agent_result_input_tokens(ar);
    L->r->output_tokens += rein_agent_result_output_tokens(ar);
    L->r->model_calls += rein_agent_result_model_calls(ar);
    L->r->tool_calls += rein_agent_result_tool_call_count(ar);
    if (!calls || !list || !text)
        goto out;
    rein__verify_utf8_fix(text, strlen(text));
    json_array_foreach(calls, i, c)
    {
        json_t *res = json_object_get(c, "result");
        /* The normalized result's error.code (docs/decisions/0020); a bare error object
         * {code, …} as older results had it reads too. */
        json_t *err = json_object_get(res, "error");
        json_t *code = json_object_get(json_is_object(err) ? err : res, "code");
        const char *status = json_string_value(json_object_get(c, "status"));
        json_t *one = json_pack("{s:O?, s:O?, s:o?}", "tool", json_object_get(c, "tool"), "status",
                                json_object_get(c, "status"), "arguments",
                                rein__loop_shorten(json_object_get(c, "arguments"), ARG_KEPT));
        if (!one || json_array_append_new(list, one))
            goto out;
        /* Why a call failed or was not run (denied, invalid_arguments, …), and the seed-001
         * self-verification record: what a person reading the loop needs to see. */
        if (status && strcmp(status, "success") != 0 && json_is_string(code) &&
            json_object_set(one, "code", code))
            goto out;
        if (json_object_get(c, "verification") &&
            json_object_set(one, "verification", json_object_get(c, "verification")))
            goto out;
    }
    rec = json_pack("{s:s, s:s, s:O, s:I, s:I}", "stop_reason",
                    rein_agent_stop_name(rein_agent_result_stop(ar)), "text", text, "tool_calls",
                    list, "input_tokens", (json_int_t)rein_agent_result_input_tokens(ar),
                    "output_tokens", (json_int_t)rein_agent_result_output_tokens(ar));
out:
    json_decref(calls);
    json_decref(list);
    rein_free(text);
    return rec;
}

/* [{check, signature, priority}] of the failing protocols (and the judge), new. */
static json_t *failing_json(const rein_verify_report *rep, bool judge_failed)
{
    struct rein_verify_protocol_info p;
    json_t *a = json_array();

    for (size_t i = 0; a && rein_verify_report_protocol(rep, i, &p); i++) {
        if (p.status != REIN_VERIFY_STATUS_FAILED)
            continue;
        if (json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "check", p.name, "signature",
                                               p.signature, "priority",
                                               rein_verify_priority_name(p.priority)))) {
            json_decref(a);
            return NULL;
        }
    }
    if (a && judge_failed &&
        json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "check", REIN__VERIFY_JUDGE_CHECK,
                                           "signature", JUDGE_SIGNATURE, "priority", "P1"))) {
        json_decref(a);
        return NULL;
    }
    return a;
}

static json_t *refuted_json(const rein_verify_report *rep)
{
    const rein_claims *claims = rein_verify_report_claims(rep);
    json_t *a = json_array();

    for (size_t i = 0; a && i < rein_claims_count(claims); i++) {
        const struct rein_claim *c = rein_claims_get(claims, i);
        if (c->status != REIN_CLAIM_REFUTED)
            continue;
        if (json_array_append_new(a, json_pack("{s:o, s:o}", "text", rein__verify_jstr(c->text),
                                               "evidence", rein__verify_jstr(c->evidence)))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* What an iteration found, gathered before the decision. */
struct iteration {
    int n;
    rein_agent_result *agent;
    rein_verify_report *report;
    rein_verify_judge_result *judge;
    char tree[REIN_VERIFY_HASH_LEN + 1];
    bool has_tree;
    char *summary;
    bool blocked;
    char blocked_why[BLOCKED_WHY];
    double confidence; /* the agent's stated one, NaN when none */
    bool needs_review;
    bool judge_failed;
    enum rein_verify_verdict verdict;
    struct rein_verify_decision d;
};

static void iteration_release(struct iteration *it)
{
    rein_agent_result_free(it->agent);
    rein_verify_report_free(it->report);
    rein_verify_judge_result_free(it->judge);
    rein_free(it->summary);
}

static rein_err run_checks(struct loop *L, struct iteration *it, rein_error *err)
{
    const char *answer = rein_agent_result_text(it->agent);
    /* the turn's own calls: tool claims in the answer are checked against them */
    json_t *ledger = rein_ledger_json(rein_agent_result_ledger(it->agent), true, false, 0);
    struct rein_verify_opts vo = {.cwd = L->cwd,
                                  .mode = L->o->mode,
                                  .only = L->o->until,
                                  .claims_text = answer,
                                  .claims_len = strlen(answer),
                                  .base = L->o->base,
                                  .pool = L->o->pool,
                                  .cancel = L->cancel,
                                  .judge = L->o->judge,
                                  .judge_opts = L->o->judge_opts,
                                  .goal = L->r->goal,
                                  .ledger = ledger,
                                  .registry = rein_agent_registry(L->agent)};
    rein_error herr;
    rein_err rc;

    if (!ledger)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = rein_verify_run(L->protocols, &vo, &it->report, err);
    json_decref(ledger);
    if (rc != REIN_OK)
        return err ? err->code : REIN_EINTERNAL;
    it->verdict = rein_verify_report_verdict(it->report);
    /* A tree too large to hash only switches off repeated-state detection. */
    it->has_tree = rein_verify_tree_hash(L->cwd, it->tree, &herr) == REIN_OK;
    /* Layer 6 in thorough and full mode: architecture or security-sensitive changes. */
    it->needs_review = it->report->review_required && it->verdict != REIN_VERIFY_FAILED;
    return REIN_OK;
}

static rein_err run_judge(struct loop *L, struct iteration *it, rein_error *err)
{
    const struct rein_verify_judge_opts *jo = L->o->judge_opts;
    struct rein_verify_judge_opts o = jo ? *jo : (struct rein_verify_judge_opts){0};
    char *diff = NULL;
    json_t *ev;
    rein_err rc;

    if (!L->o->judge || it->verdict == REIN_VERIFY_FAILED)
        return REIN_OK;
    if (!o.cancel)
        o.cancel = L->cancel;
    rc = rein_verify_diff(L->cwd, L->o->base, o.max_diff_bytes, &diff, err);
    if (rc)
        return rc;
    rc = rein_verify_judge_run(L->o->judge, L->r->goal, diff, &o, &it->judge, err);
    rein_free(diff);
    if (rc)
        return rc;
    ev = rein_verify_judge_result_json(it->judge);
    L->r->input_tokens += json_integer_value(json_object_get(ev, "input_tokens"));
    L->r->output_tokens += json_integer_value(json_object_get(ev, "output_tokens"));
    L->r->model_calls += rein_verify_judge_result_attempts(it->judge);
    emit(L, ev ? json_pack("{s:s, s:i, s:o}", "type", "judge", "iteration", it->n, "judge", ev)
               : NULL);
    switch (rein_verify_judge_result_verdict(it->judge)) {
    case REIN_VERIFY_JUDGE_PASS:
        break;
    case REIN_VERIFY_JUDGE_FAIL:
        it->judge_failed = true;
        it->verdict = REIN_VERIFY_FAILED;
        break;
    default: /* NEEDS_REVIEW, or no valid verdict: a person decides */
        it->needs_review = true;
        break;
    }
    return REIN_OK;
}

static rein_err decide(struct loop *L, struct iteration *it, rein_error *err)
{
    const char *answer = rein_agent_result_text(it->agent);
    json_t *calls = rein_agent_result_tool_calls_json(it->agent);
    struct rein_verify_failing judge = {REIN__VERIFY_JUDGE_CHECK, JUDGE_SIGNATURE, REIN_VERIFY_P1};
    double stated = rein_agent_stated_confidence(answer);
    struct rein_verify_iteration more = {0};

    it->summary = calls ? rein__loop_summary(calls, answer) : NULL;
    json_decref(calls);
    if (!it->summary)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    it->blocked =
        rein__loop_blocked(answer, strlen(answer), it->blocked_why, sizeof(it->blocked_why));
    it->confidence = stated < 0 ? NAN : stated;
    more.verdict = it->verdict;
    more.failing = it->judge_failed ? &judge : NULL;
    more.n_failing = it->judge_failed ? 1 : 0;
    more.tree_hash = it->has_tree ? it->tree : NULL;
    more.confidence = it->confidence;
    more.external_blocker = it->blocked;
    more.summary = it->summary;
    more.needs_review = it->needs_review;
    return rein__verify_term_add_report(L->term, it->report, &more, &it->d, err);
}

/* Appends the iteration's record to the result's history. */
static rein_err record(struct loop *L, struct iteration *it, enum rein_verify_stop_reason reason)
{
    json_t *agent = agent_record(L, it->agent);
    json_t *failing = failing_json(it->report, it->judge_failed);
    json_t *refuted = refuted_json(it->report);
    json_t *judge = it->judge ? rein_verify_judge_result_json(it->judge) : json_null();
    json_t *rec = NULL;

    if (agent && failing && refuted && judge)
        rec = json_pack(
            "{s:i, s:O, s:s, s:f, s:o, s:o, s:O, s:O, s:O, s:o, s:{s:s, s:s, s:b, s:b}}",
            "iteration", it->n, "agent", agent, "verdict", rein_verify_verdict_name(it->verdict),
            "progress", rein_verify_report_progress(it->report), "confidence",
            isnan(it->confidence)
                ? json_real(rein_verify_report_confidence(it->report))
                : json_real(fmin(it->confidence, rein_verify_report_confidence(it->report))),
            "tree_hash", it->has_tree ? json_string(it->tree) : json_null(), "failing", failing,
            "refuted_claims", refuted, "judge", judge, "summary", rein__verify_jstr(it->summary),
            "decision", "action", it->d.action == REIN_VERIFY_STOP ? "stop" : "continue", "reason",
            rein_verify_stop_reason_name(reason), "progress", it->d.progress, "extended",
            it->d.extended);
    if (rec && it->blocked &&
        json_object_set_new(rec, "blocked", rein__verify_jstr(it->blocked_why))) {
        json_decref(rec);
        rec = NULL;
    }
    json_decref(agent);
    json_decref(failing);
    json_decref(refuted);
    json_decref(judge);
    if (!rec || json_array_append_new(L->r->history, rec))
        return REIN_ENOMEM;
    return REIN_OK;
}

/* ---- stopping ---- */

/* The message of a stop the tracker did not make: why, what still fails, what was tried. */
static rein_err stop_message(struct loop *L, const char *why)
{
    size_t n = json_array_size(L->r->history);
    size_t first = n > TRIED_IN_MESSAGE ? n - TRIED_IN_MESSAGE : 0;
    const json_t *last = json_array_get(L->r->history, n ? n - 1 : 0), *f;
    struct rein_buf b;
    rein_err rc;
    size_t i;

    rein_buf_init(&b, 1 << 16);
    rc = rein_buf_addf(&b, "Stopped after %d iteration%s: %s", L->r->iterations,
                       L->r->iterations == 1 ? "" : "s", why);
    json_array_foreach(json_object_get(last, "failing"), i, f)
    {
        if (!rc)
            rc = rein_buf_adds(&b, i ? ", " : " Still failing: ");
        if (!rc)
            rc = rein__verify_failing_words(&b, json_string_value(json_object_get(f, "check")));
    }
    if (!rc && json_array_size(json_object_get(last, "failing")))
        rc = rein_buf_addch(&b, '.');
    for (i = first; !rc && i < n; i++) {
        const json_t *it = json_array_get(L->r->history, i);
        rc = rein_buf_addf(&b, "%s(%lld) %s;", i == first ? " Tried: " : " ",
                           (long long)json_integer_value(json_object_get(it, "iteration")),
                           json_string_value(json_object_get(it, "summary")));
    }
    if (!rc && n && b.ptr[b.len - 1] == ';')
        b.ptr[b.len - 1] = '.';
    rein_free(L->r->message);
    L->r->message = rc ? NULL : rein_buf_detach(&b, NULL);
    rein_buf_release(&b);
    return L->r->message ? REIN_OK : REIN_ENOMEM;
}

static rein_err stop_with(struct loop *L, enum rein_verify_stop_reason reason, const char *why,
                          const char *suggestion)
{
    L->r->reason = reason;
    rein_free(L->r->suggestion);
    L->r->suggestion = rein_strdup(suggestion);
    if (!L->r->suggestion)
        return REIN_ENOMEM;
    return stop_message(L, why);
}

static void emit_decision(struct loop *L, const struct iteration *it)
{
    emit(L, json_pack(
                "{s:s, s:i, s:s, s:s, s:b, s:b, s:i, s:s, s:s}", "type", "decision", "iteration",
                it->n, "action", L->r->reason == REIN_VERIFY_STOP_NONE ? "continue" : "stop",
                "reason", rein_verify_stop_reason_name(L->r->reason), "progress", it->d.progress,
                "extended", it->d.extended, "max_iterations", L->r->max_iterations, "message",
                rein_loop_result_message(L->r), "suggestion", rein_loop_result_suggestion(L->r)));
}

/* Takes the tracker's decision into the result (its strings are only borrowed). */
static rein_err take_decision(struct loop *L, struct iteration *it)
{
    L->r->max_iterations = it->d.max_iterations;
    L->r->extended |= it->d.extended;
    L->r->verdict = it->verdict;
    if (it->d.action != REIN_VERIFY_STOP)
        return REIN_OK;
    L->r->reason = it->d.reason;
    rein_free(L->r->message);
    rein_free(L->r->suggestion);
    L->r->message = rein_strdup(it->d.message);
    L->r->suggestion = rein_strdup(it->d.suggestion);
    return L->r->message && L->r->suggestion ? REIN_OK : REIN_ENOMEM;
}

/* Keeps the iteration's answer, report and judge result as the latest. */
static rein_err keep_latest(struct loop *L, struct iteration *it)
{
    char *answer = rein_strdup(rein_agent_result_text(it->agent));

    if (!answer)
        return REIN_ENOMEM;
    rein_free(L->r->answer);
    L->r->answer = answer;
    if (it->report) {
        rein_verify_report_free(L->r->report);
        L->r->report = it->report;
        it->report = NULL;
    }
    rein_verify_judge_result_free(L->r->judge);
    L->r->judge = it->judge;
    it->judge = NULL;
    return REIN_OK;
}

/* ---- one iteration ---- */

enum step { STEP_NEXT, STEP_STOP };

static rein_err act(struct loop *L, struct iteration *it, rein_error *err)
{
    json_t *rec;

    emit(L, json_pack("{s:s, s:i, s:i}", "type", "iteration", "iteration", it->n, "max_iterations",
                      L->r->max_iterations));
    /* In a session the conversation is the stored one, and the session writes each turn. */
    if ((L->o->session
             ? rein_session_run(L->o->session, L->agent, L->message, &L->turn, &it->agent, err)
             : rein_agent_run(L->agent, L->h, L->message, &L->turn, &it->agent, err)) != REIN_OK)
        return err ? err->code : REIN_EINTERNAL;
    rec = json_pack("{s:s, s:i, s:s, s:s, s:I}", "type", "agent", "iteration", it->n, "stop_reason",
                    rein_agent_stop_name(rein_agent_result_stop(it->agent)), "text",
                    rein_agent_result_text(it->agent), "tool_calls",
                    (json_int_t)rein_agent_result_tool_call_count(it->agent));
    emit(L, rec);
    return REIN_OK;
}

/*
 * A stop that is not the tracker's: the agent's model failed and the checks do not hold.
 * Fills why and returns the reason, or REIN_VERIFY_STOP_NONE.
 */
static enum rein_verify_stop_reason agent_failure(const struct iteration *it, char *why,
                                                  size_t why_len)
{
    enum rein_agent_stop s = rein_agent_result_stop(it->agent);
    const char *detail = rein_agent_result_detail(it->agent);

    if (it->d.action == REIN_VERIFY_STOP ||
        (s != REIN_AGENT_STOP_PROVIDER_ERROR && s != REIN_AGENT_STOP_ERROR))
        return REIN_VERIFY_STOP_NONE;
    snprintf(why, why_len, "%s: %.500s",
             s == REIN_AGENT_STOP_PROVIDER_ERROR ? "the agent's model could not be asked"
                                                 : "the agent's turn failed",
             detail[0] ? detail : rein_agent_result_text(it->agent));
    rein__verify_utf8_fix(why, strlen(why));
    return s == REIN_AGENT_STOP_PROVIDER_ERROR ? REIN_VERIFY_STOP_PROVIDER_ERROR
                                               : REIN_VERIFY_STOP_ERROR;
}

static const char provider_suggestion[] =
    "Check the provider settings (model, URL, key) and that the service is reachable, then run "
    "again; the working tree keeps what was done so far.";
static const char cancelled_suggestion[] =
    "Run again when you want the loop to go on; the working tree keeps what was done so far.";

static rein_err next_message(struct loop *L, struct iteration *it)
{
    struct rein__loop_observation ob = {.iteration = it->n,
                                        .max_iterations = L->r->max_iterations,
                                        .extended = it->d.extended,
                                        .cfg = L->protocols,
                                        .report = L->r->report,
                                        .judge = L->r->judge,
                                        .history = L->r->history};

    rein_free(L->message);
    L->message = rein__loop_observation(&ob);
    return L->message ? REIN_OK : REIN_ENOMEM;
}

static rein_err iterate(struct loop *L, int n, enum step *step, rein_error *err)
{
    struct iteration it = {.n = n, .confidence = NAN};
    enum rein_verify_stop_reason failure;
    char why[700];
    rein_err rc;
    json_t *rj;

    struct rein_span span;

    *step = STEP_STOP;
    L->r->iterations = n;
    /* One span per iteration: the agent's turn, the checks' model calls and the judge nest in
     * it. */
    rein_span_start(&span, "rein.loop.iteration", REIN_SPAN_INTERNAL, L->r->trace_id);
    rein_span_set_int(&span, "rein.loop.iteration", n);
    rc = act(L, &it, err);
    if (!rc && !cancelled(L) && rein_agent_result_stop(it.agent) != REIN_AGENT_STOP_CANCELLED) {
        rc = run_checks(L, &it, err);
        if (!rc) {
            rein_span_set_str(&span, "rein.verify.verdict", rein_verify_verdict_name(it.verdict));
            rj = rein_verify_report_json(it.report);
            emit(L,
                 rj ? json_pack("{s:s, s:i, s:o}", "type", "report", "iteration", n, "report", rj)
                    : NULL);
            rc = run_judge(L, &it, err);
        }
    }
    if (it.agent && (rc == REIN_ECANCELED || cancelled(L) ||
                     rein_agent_result_stop(it.agent) == REIN_AGENT_STOP_CANCELLED)) {
        rc = keep_latest(L, &it);
        if (!rc)
            rc = stop_with(L, REIN_VERIFY_STOP_CANCELLED, "the loop was cancelled.",
                           cancelled_suggestion);
        goto out;
    }
    if (rc)
        goto out;
    rc = decide(L, &it, err);
    if (!rc)
        rc = take_decision(L, &it);
    if (rc)
        goto out;
    failure = agent_failure(&it, why, sizeof(why));
    if (failure != REIN_VERIFY_STOP_NONE)
        L->r->reason = failure;
    rc = record(L, &it, L->r->reason);
    if (!rc && failure != REIN_VERIFY_STOP_NONE)
        rc = stop_with(L, failure, why, provider_suggestion);
    if (!rc)
        rc = keep_latest(L, &it);
    if (rc)
        goto out;
    emit_decision(L, &it);
    *step = L->r->reason == REIN_VERIFY_STOP_NONE ? STEP_NEXT : STEP_STOP;
    if (*step == STEP_NEXT)
        rc = next_message(L, &it);
out:
    if (rein_span_is_recording(&span)) {
        rein_span_set_str(&span, "rein.loop.decision", *step == STEP_NEXT ? "continue" : "stop");
        if (rc)
            rein_span_fail(&span, rein_err_name(rc), err ? err->msg : NULL);
    }
    rein_span_end(&span);
    iteration_release(&it);
    if (rc == REIN_ENOMEM)
        rein_error_set(err, rc, "out of memory");
    return rc;
}

/* ---- the run ---- */

/* Without a protocol file: the criteria of the goal and the project, announced before the
 * first iteration. They go into the result once it exists (start). */
static rein_err derive_criteria(struct loop *L, const char *goal, rein_error *err)
{
    rein_error e;

    if (L->protocols)
        return REIN_OK;
    rein_error_clear(&e);
    L->criteria = rein_verify_criteria_derive(goal, L->o->cwd, &e);
    if (!L->criteria) {
        /* Nothing to check is the caller's to fix, like an unusable working tree. */
        if (e.code == REIN_ENOTFOUND)
            e.code = REIN_EINVAL;
        if (err)
            *err = e;
        return e.code;
    }
    L->protocols = rein_verify_criteria_config(L->criteria);
    emit(L, json_pack("{s:s, s:i, s:O}", "type", "criteria", "iteration", 0, "criteria",
                      rein_verify_criteria_json(L->criteria)));
    return REIN_OK;
}

/* Fails with REIN_EINVAL when a name in until is not a protocol of cfg. */
static rein_err check_until(const struct rein_loop_opts *o, const rein_verify_config *cfg,
                            rein_error *err)
{
    for (size_t i = 0; o->until && o->until[i]; i++) {
        if (!rein_verify_config_has_protocol(cfg, o->until[i])) {
            char names[512] = "";
            size_t len = 0;
            for (size_t k = 0; k < rein_verify_config_protocol_count(cfg); k++) {
                int w = snprintf(names + len, sizeof(names) - len, "%s%s", k ? ", " : "",
                                 rein_verify_config_protocol_name(cfg, k));
                if (w < 0 || (size_t)w >= sizeof(names) - len)
                    break;
                len += (size_t)w;
            }
            return rein_error_set(err, REIN_EINVAL,
                                  "\"%s\" is not a protocol of the protocol file (it has: %s)",
                                  o->until[i], names[0] ? names : "none");
        }
    }
    return REIN_OK;
}

static rein_err start(struct loop *L, const char *goal, rein_error *err)
{
    struct rein__loop_brief brief = {
        .goal = goal, .cwd = L->cwd, .cfg = L->protocols, .until = L->o->until, .mode = L->o->mode};
    struct rein_verify_term_opts to = L->o->term;
    struct stat st;

    if (!realpath(L->o->cwd ? L->o->cwd : ".", L->cwd) || stat(L->cwd, &st) != 0 ||
        !S_ISDIR(st.st_mode))
        return rein_error_set(err, REIN_EINVAL, "the working tree %s is not a directory: %s",
                              L->o->cwd ? L->o->cwd : ".", strerror(errno ? errno : ENOTDIR));
    if (L->o->base) {
        /* A base revision git does not know is the caller's mistake: say so before any turn. */
        struct rein_verify_changes ch;
        rein_err rc = rein_verify_changes_read(L->cwd, L->o->base, &ch, err);
        if (rc)
            return rc;
    }
    to.continue_on_blocking = L->o->keep_going;
    L->term = rein_verify_term_new(&to);
    L->h = rein_history_new();
    L->r = rein_calloc(1, sizeof(*L->r));
    if (!L->term || !L->h || !L->r || !(L->r->goal = rein_strdup(goal)) ||
        !(L->r->history = json_array()))
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    L->r->verdict = REIN_VERIFY_FAILED;
    L->r->criteria = L->criteria; /* the result owns them from here */
    L->criteria = NULL;
    L->r->max_iterations = to.max_iterations > 0 ? to.max_iterations : 10;
    if (L->o->session)
        snprintf(L->r->trace_id, sizeof(L->r->trace_id), "%s",
                 rein_session_trace_id(L->o->session));
    else if (rein_trace_current()) /* the trace the loop runs in (decision 0029) */
        memcpy(L->r->trace_id, rein_trace_current()->trace_id, sizeof(L->r->trace_id));
    else
        rein_trace_id_new(L->r->trace_id);
    if (L->o->turn)
        L->turn = *L->o->turn;
    if (!L->turn.cancel)
        L->turn.cancel = L->cancel;
    L->turn.trace_id = L->r->trace_id;
    brief.max_iterations = L->r->max_iterations;
    L->message = rein__loop_first_message(&brief);
    return L->message ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
}

rein_err rein_loop_run(rein_agent *agent, const char *goal, const struct rein_loop_opts *opts,
                       rein_loop_result **out, rein_error *err)
{
    struct loop L = {.agent = agent, .o = opts, .start_ms = rein_now_ms()};
    enum step step = STEP_NEXT;
    rein_err rc;

    if (out)
        *out = NULL;
    if (!agent || !goal || !goal[0] || !opts || !out)
        return rein_error_set(err, REIN_EINVAL, "the loop needs an agent and a goal");
    L.cancel = opts->cancel;
    L.protocols = opts->protocols;
    rc = derive_criteria(&L, goal, err);
    if (!rc)
        rc = check_until(opts, L.protocols, err);
    if (!rc)
        rc = start(&L, goal, err);
    for (int n = 1; !rc && step == STEP_NEXT; n++) {
        rein_error ierr = {0};
        rc = iterate(&L, n, &step, &ierr);
        if (rc == REIN_ENOMEM || (rc == REIN_EINVAL && json_array_size(L.r->history) == 0)) {
            /* Out of memory, or options the first iteration refused (an unknown tool in
             * turn->tools, a base revision git does not know): the caller's to fix. */
            if (err)
                *err = ierr;
        } else if (rc) {
            char why[400];
            snprintf(why, sizeof(why), "%s.", ierr.msg[0] ? ierr.msg : rein_strerror(rc));
            rc = stop_with(&L, REIN_VERIFY_STOP_ERROR, why,
                           "Fix what rein reported (the protocol file, the working tree), then "
                           "run again.");
            if (rc)
                rein_error_set(err, rc, "out of memory");
            step = STEP_STOP;
        }
    }
    if (L.r)
        L.r->latency_ms = rein_now_ms() - L.start_ms;
    rein_history_free(L.h);
    rein_verify_term_free(L.term);
    rein_verify_criteria_free(L.criteria);
    rein_free(L.message);
    if (rc) {
        rein_loop_result_free(L.r);
        return rc;
    }
    *out = L.r;
    return REIN_OK;
}
