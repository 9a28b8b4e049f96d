/*
 * Running the tool calls of one model reply (issue 5 items 4 and 6).
 *
 * Every call goes through rein_call_run(), the one pipeline: calls that may run, calls that
 * must not (past max_tool_calls, cut off mid-stream, the turn has ended: they are given a
 * cancel handle triggered with the reason, so the pipeline answers "cancelled" after its own
 * checks and records them), and proposals (check_only). Consecutive calls of tools that are
 * not "sequential" run together on the pool; a sequential tool's call runs alone. Each slot
 * keeps its own result, and the loop appends them in the model's order afterwards.
 *
 * Self-verification and approval live in the pipeline's policy hook, which runs after the
 * arguments passed preflight and before the runner: a denied call never executes, and the
 * model gets the "denied" invalid payload with the reason.
 */
#include "agent_int.h"

#include <rein/trace.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define VERIFY_MAX_TOKENS    256
#define DEFAULT_APPROVAL_MS  60000
#define CONFIDENCE_THRESHOLD 0.8
#define VERIFIER_REPLY_SHOWN 300

static const char verifier_system[] =
    "You review one tool call before it runs. You get the user's request and the call an "
    "assistant is about to make. Decide whether the call is correct and is what the user asked "
    "for. Answer YES or NO on the first line, then give the reason in one sentence.";

const char *rein_agent_review_system(void)
{
    return verifier_system;
}

/* printf's "%s" of s */
static const char *pstr(const char *s)
{
    return s ? s : "(null)";
}

char *rein_agent_review_question(const char *request, const rein_tool *tool, const json_t *args)
{
    struct rein_buf b;
    rein_err rc;

    /* Made piece by piece (what a format string made with the arguments written out and
     * copied once more: a turn asks it for every call it verifies, issue 25). */
    rein_buf_init(&b, 0);
    rc = rein_buf_adds(&b, "The user asked:\n");
    if (!rc)
        rc = rein_buf_adds(&b, request ? request : "");
    if (!rc)
        rc = rein_buf_adds(&b, "\n\nThe assistant is about to call the tool \"");
    if (!rc)
        rc = rein_buf_adds(&b, pstr(rein_tool_id(tool)));
    if (!rc)
        rc = rein_buf_adds(&b, "\" (");
    if (!rc)
        rc = rein_buf_adds(&b, pstr(rein_tool_description(tool)));
    if (!rc)
        rc = rein_buf_adds(&b, ")");
    if (!rc && rein_tool_is_destructive(tool))
        rc = rein_buf_adds(&b, "; it is destructive: it changes or deletes data");
    if (!rc)
        rc = rein_buf_adds(&b, " with these arguments:\n");
    if (!rc)
        rc = args ? rein_json_dump(&b, args) : rein_buf_adds(&b, "{}");
    if (!rc)
        rc = rein_buf_adds(&b, "\n\nIs this call correct and what the user asked for? Answer YES "
                               "or NO on the first line, then give the reason.");
    if (rc) {
        rein_buf_release(&b);
        return NULL;
    }
    return rein_buf_detach(&b, NULL);
}

bool rein_agent_review_verdict(const char *answer, char *reason, size_t size)
{
    bool passed = false;

    rein__agent_parse_verdict(answer ? answer : "", &passed, reason, size);
    return passed;
}

rein_cancel *rein__skip_cancel(const char *reason)
{
    rein_cancel *c = rein_cancel_new();

    if (c)
        rein_cancel_trigger(c, reason);
    return c;
}

/* ---- self-verification ---- */

const char *rein__agent_parse_verdict(const char *text, bool *passed, char *reason, size_t size)
{
    const char *p = text, *rest;
    size_t n;

    while (*p && (isspace((unsigned char)*p) || strchr("*#>`\"'[(_-", *p)))
        p++;
    *passed = false;
    if (strncasecmp(p, "YES", 3) == 0 && !isalpha((unsigned char)p[3])) {
        *passed = true;
        rest = p + 3;
    } else if (strncasecmp(p, "NO", 2) == 0 && !isalpha((unsigned char)p[2])) {
        rest = p + 2;
    } else if (strncmp(p, "是", 3) == 0 || strncmp(p, "对", 3) == 0) {
        *passed = true;
        rest = p + 3;
    } else if (strncmp(p, "否", 3) == 0 || strncmp(p, "不", 3) == 0) {
        rest = p + 3;
    } else {
        n = strlen(text);
        snprintf(reason, size, "the verifier did not answer YES or NO (it said: \"%.*s\")",
                 (int)(n < 120 ? n : 120), text);
        return "unclear";
    }
    while (*rest && (isspace((unsigned char)*rest) || strchr("*.,:;!-)\"'", *rest)))
        rest++;
    n = strlen(rest);
    if (n == 0) {
        snprintf(reason, size, "%s",
                 *passed ? "the verifier approved the call" : "the verifier rejected the call");
        return *passed ? "approved" : "rejected";
    }
    snprintf(reason, size, "%.*s", (int)(n < VERIFIER_REPLY_SHOWN ? n : VERIFIER_REPLY_SHOWN),
             rest);
    return "said";
}

/* Asks the verifier about the call. false and the reason when it is rejected or cannot be
 * asked. */
static bool self_check(struct call_slot *s, const struct rein_policy_check *chk, char *reason,
                       size_t size, const char **code)
{
    struct turn *t = s->t;
    rein_agent *a = t->a;
    rein_provider *p = a->verifier ? a->verifier : a->provider;
    rein_history *vh = rein_history_new();
    rein_model_request *req = rein_model_request_new();
    rein_model_response *resp = NULL;
    char *question = NULL;
    bool passed = false;
    rein_error err;
    rein_err rc = REIN_ENOMEM;

    rein_error_clear(&err);
    *code = "failed"; /* the verifier could not be asked; the reason says why */
    if (!vh || !req)
        goto out;
    question = rein_agent_review_question(t->message, chk->tool, chk->args);
    if (!question || rein_history_append_shared(vh, a->verifier_msg, NULL) != REIN_OK ||
        rein_history_add_user(vh, question) != REIN_OK)
        goto out;
    rein_model_request_set_max_tokens(req, VERIFY_MAX_TOKENS);
    rein_model_request_set_cancel(req, t->cancel);
    rc = rein_provider_send(p, req, vh, &resp, &err);
    if (resp)
        rein__turn_add_tokens(t, resp);
    if (rc == REIN_OK)
        *code = rein__agent_parse_verdict(rein_model_response_text(resp), &passed, reason, size);
out:
    if (rc == REIN_ENOMEM)
        snprintf(reason, size, "the call could not be verified: out of memory");
    else if (rc)
        snprintf(reason, size, "the call could not be verified: %s",
                 err.msg[0] ? err.msg : rein_strerror(rc));
    rein_model_response_free(resp);
    rein_model_request_free(req);
    rein_history_free(vh);
    rein_free(question);
    return passed;
}

static bool needs_verification(const struct turn *t, const rein_tool *tool)
{
    switch (t->o->verification) {
    case REIN_AGENT_VERIFY_OFF:
        return false;
    case REIN_AGENT_VERIFY_FORCE:
        return true;
    default:
        /* 001's should_verify: destructive calls always; otherwise a call is verified unless
         * its reply stated a confidence of at least 0.8. A model the capability table says
         * cannot state one gets every call verified (its confidence is never read), and so
         * does a reply of a capable model that left the line out. */
        return rein_tool_is_destructive(tool) || !(t->confidence >= CONFIDENCE_THRESHOLD);
    }
}

static void verification_event(struct call_slot *s, const char *kind, const char *code, bool passed)
{
    struct rein_agent_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_VERIFICATION;
    ev.call_id = s->id;
    ev.tool = s->tool ? rein_tool_id(s->tool) : s->name;
    ev.kind = kind;
    ev.ok = passed;
    ev.code = code;
    ev.text = s->note;
    ev.len = strlen(s->note);
    rein__turn_emit(s->t, &ev);
}

/* Who judges the self-check: a model, or rein's rules when the verifier is the rules
 * provider (which routes by rules and answers no open question). */
static const char *judge_of(const rein_agent *a)
{
    const rein_provider *p = a->verifier ? a->verifier : a->provider;

    return strcmp(rein_provider_name(p), "rules") == 0 ? "rules" : "model";
}

/*
 * The self-verification stage on the call's execute_tool span: the verdict ("passed",
 * "rejected", or "skipped" when the strategy's rule let a confident call through), its code
 * (the verification event's), who judged and how long the call waited. The verifier's own
 * words are model output, so they are recorded only with content capture on; a rejection's
 * reason is in the span's status message either way (the pipeline's denial).
 */
static void self_check_span_event(struct call_slot *s, struct rein_span *span, const char *verdict,
                                  const char *code, const char *judge, int64_t wait_ns)
{
    if (!rein_span_is_recording(span))
        return;
    rein_span_event(span, "rein.self_check");
    rein_span_event_str(span, "rein.self_check.verdict", verdict);
    rein_span_event_str(span, "rein.self_check.code", code);
    rein_span_event_str(span, "rein.self_check.judge", judge);
    rein_span_event_double(span, "rein.self_check.wait_ms", (double)wait_ns / 1e6);
    if (s->t->confidence >= 0)
        rein_span_event_double(span, "rein.self_check.confidence", s->t->confidence);
    if (s->note[0] && rein_trace_capture_content())
        rein_span_event_str(span, "rein.self_check.reason", s->note);
}

/* A person's approval on the span: the decision (the verification event's code) and the
 * wait. */
static void approval_span_event(struct rein_span *span, const char *decision, int64_t wait_ns)
{
    if (!rein_span_is_recording(span))
        return;
    rein_span_event(span, "rein.approval");
    rein_span_event_str(span, "rein.approval.decision", decision);
    rein_span_event_double(span, "rein.approval.wait_ms", (double)wait_ns / 1e6);
}

static rein_err ask_approval(struct call_slot *s, const struct rein_policy_check *chk,
                             rein_error *why)
{
    struct turn *t = s->t;
    const struct rein_agent_turn_opts *o = t->o;
    int64_t timeout = o->approval_timeout_ms > 0 ? o->approval_timeout_ms : DEFAULT_APPROVAL_MS;
    struct rein_agent_approval req = {
        .call_id = chk->call_id,
        .tool = rein_tool_id(chk->tool),
        .args = chk->args,
        .trace_id = chk->trace_id,
        .conversation_id = o->conversation_id,
        .timeout_ms = timeout,
        .cancel = t->cancel,
    };
    struct rein_agent_event ev;
    char *args = NULL;
    bool approved = false;
    rein_error aerr;
    rein_err rc;

    if (rein__turn_wants_events(t)) {
        args = rein_json_dumps(chk->args);
        memset(&ev, 0, sizeof(ev));
        ev.type = REIN_AGENT_EV_APPROVAL_REQUIRED;
        ev.call_id = chk->call_id;
        ev.tool = req.tool;
        ev.json = args;
        ev.json_len = args ? strlen(args) : 0;
        ev.timeout_ms = timeout;
        rein__turn_emit(t, &ev);
        rein_free(args);
    }
    rein__turn_status(t, REIN_AGENT_STATE_WAITING_APPROVAL, req.tool, chk->call_id);
    rein_error_clear(&aerr);
    int64_t t0 = rein_now_ns();
    rc = o->approve(o->approval_data, &req, &approved, &aerr);
    int64_t waited = rein_now_ns() - t0;
    s->asked = true;
    if (rc == REIN_ECANCELED || rein_cancel_is_set(t->cancel)) {
        snprintf(s->note, sizeof(s->note), "the turn was cancelled while waiting for approval");
        verification_event(s, "approval", "cancelled", false);
        approval_span_event(chk->span, "cancelled", waited);
        return rein_error_set(why, REIN_ECANCELED, "%s", rein_cancel_reason(t->cancel));
    }
    if (rc == REIN_OK && approved) {
        s->approved = true;
        snprintf(s->note, sizeof(s->note), "approved by a person");
        verification_event(s, "approval", "approved", true);
        approval_span_event(chk->span, "approved", waited);
        return REIN_OK;
    }
    if (rc == REIN_ETIMEDOUT)
        snprintf(s->note, sizeof(s->note),
                 "nobody approved this call within %lld seconds, so it was not run",
                 (long long)((timeout + 999) / 1000));
    else if (rc == REIN_OK)
        snprintf(s->note, sizeof(s->note), "a person denied this call, so it was not run");
    else
        snprintf(s->note, sizeof(s->note),
                 "approval could not be asked for (%s), so the call was "
                 "not run",
                 aerr.msg[0] ? aerr.msg : rein_strerror(rc));
    /* A denied call did not pass verification, whatever the self-check said before. */
    s->verified = true;
    s->verify_passed = false;
    const char *decision = rc == REIN_ETIMEDOUT ? "timeout"
                           : rc == REIN_OK      ? "denied"
                                                : "unavailable";
    verification_event(s, "approval", decision, false);
    approval_span_event(chk->span, decision, waited);
    return rein_error_set(why, REIN_EDENIED, "%s", s->note);
}

/* The store's last word before the call runs (rein_agent_persist.before_call): what it was
 * given, the pending entry included, is on disk, or the call does not run. */
static rein_err before_call(struct turn *t, const char *call_id, rein_error *why)
{
    const struct rein_agent_persist *p = t->o->persist;
    rein_error err;
    rein_err rc;

    if (!p || !p->before_call)
        return REIN_OK;
    rein_error_clear(&err);
    rc = p->before_call(p->userdata, call_id, &err);
    if (rc == REIN_OK)
        return REIN_OK;
    /* Never read as a denial or a cancel: the call fails as internal. */
    if (rc == REIN_EDENIED || rc == REIN_ECANCELED)
        rc = REIN_ESTORE;
    return rein_error_set(why, rc, "the call could not be recorded: %s",
                          err.msg[0] ? err.msg : rein_strerror(rc));
}

/* The pipeline's policy step: self-verification, then a person's approval. */
static rein_err policy(void *userdata, const struct rein_policy_check *chk, rein_error *why)
{
    struct call_slot *s = userdata;
    struct turn *t = s->t;

    /* A call that must not run: the runner step answers it "cancelled" with the reason. */
    if (rein_cancel_is_set(chk->cancel))
        return REIN_OK;
    s->tool = chk->tool;
    if (needs_verification(t, chk->tool)) {
        rein__turn_status(t, REIN_AGENT_STATE_VERIFYING, rein_tool_id(chk->tool), chk->call_id);
        s->verified = true;
        const char *code = NULL;
        int64_t t0 = rein_now_ns();
        s->verify_passed = self_check(s, chk, s->note, sizeof(s->note), &code);
        self_check_span_event(s, chk->span, s->verify_passed ? "passed" : "rejected", code,
                              judge_of(t->a), rein_now_ns() - t0);
        verification_event(s, "self_check", code, s->verify_passed);
        if (rein_cancel_is_set(t->cancel))
            return rein_error_set(why, REIN_ECANCELED, "%s", rein_cancel_reason(t->cancel));
        if (!s->verify_passed)
            return rein_error_set(why, REIN_EDENIED, "self-verification rejected this call: %s",
                                  s->note);
    } else if (t->o->verification == REIN_AGENT_VERIFY_AUTO) {
        /* The strategy's rule let the call through unasked: say so, so a trace shows why a
         * call ran without a check. */
        self_check_span_event(s, chk->span, "skipped", "confident", "rules", 0);
    }
    if (rein_tool_is_destructive(chk->tool) && t->o->approve) {
        rein_err rc = ask_approval(s, chk, why);
        if (rc)
            return rc;
    }
    rein__turn_status(t, REIN_AGENT_STATE_EXECUTING, rein_tool_id(chk->tool), chk->call_id);
    return before_call(t, chk->call_id, why);
}

/* ---- contents ---- */

rein_err rein__calls_proposal_content(struct call_slot *s)
{
    struct rein_jw w;

    rein_buf_reset(&s->content);
    rein_jw_init(&w, &s->content);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "tool");
    rein_jw_str(&w, rein_call_result_tool_name(s->res));
    rein_jw_key(&w, "status");
    rein_jw_str(&w, "proposed");
    const rein_tool *tool = rein_registry_get(s->t->a->reg, rein_call_result_tool_name(s->res));

    if (tool && rein_tool_is_destructive(tool)) {
        rein_jw_key(&w, "destructive");
        rein_jw_bool(&w, true);
    }
    rein_jw_key(&w, "message");
    rein_jw_str(&w, "Not run: the call was checked and proposed for approval; it runs only when "
                    "a person or a program approves it. Do not call it again.");
    rein_jw_obj_end(&w);
    return rein_jw_finish(&w);
}

/* The tool message when not even the pipeline could make a result (memory ran out). */
static void fallback_content(struct call_slot *s)
{
    struct rein_jw w;

    rein_buf_reset(&s->content);
    rein_jw_init(&w, &s->content);
    rein_call_result_write_error(&w, s->res ? rein_call_result_tool_name(s->res) : s->name, s->id,
                                 s->t->trace_id, REIN_CALL_INTERNAL,
                                 "rein ran out of memory handling this call");
    if (rein_jw_finish(&w) != REIN_OK)
        rein_buf_release(&s->content); /* leaves the shared empty string; the loop checks */
}

static void result_event(struct call_slot *s)
{
    struct rein_agent_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_TOOL_RESULT;
    ev.call_id = s->id;
    ev.tool = s->res ? rein_call_result_tool_name(s->res) : s->name;
    ev.kind = s->proposed ? "proposed"
              : s->res    ? rein_call_status_name(rein_call_result_status(s->res))
                          : "error";
    ev.ok = s->res && rein_call_result_ok(s->res) && !s->proposed;
    ev.latency_ms = s->res ? rein_call_result_latency_ms(s->res) : 0;
    ev.json = s->content.ptr;
    ev.json_len = s->content.len;
    rein__turn_emit(s->t, &ev);
}

/* ---- running ---- */

struct batch {
    struct turn *t;
    struct call_slot *slots;
    bool check_only;
    const struct rein_trace_context *trace; /* the turn's, for the pool's threads */
};

static void run_slot(struct turn *t, struct call_slot *s, bool check_only)
{
    const rein_model_call *mc = s->mc;
    const char *raw = rein_model_call_raw_arguments(mc);
    struct rein_call_input in = {
        .call_id = s->id,
        .name = rein_model_call_name(mc),
        .args = rein_model_call_arguments(mc),
        .args_text = raw,
        .args_len = strlen(raw),
        .trace_id = t->trace_id,
        .has_step = t->o->has_step,
        .step = t->o->step,
    };
    struct rein_call_opts opts = {
        .ledger = t->ledger,
        .cancel = s->skip ? s->skip : t->cancel,
        .policy = check_only ? NULL : policy,
        .policy_data = s,
        .check_only = check_only && !s->skip,
    };
    rein_error err;

    /* The turn's deadline reaches running tools through the cancel handle (the watchdog),
     * so a tool stopped by it is answered "cancelled: the turn's time limit was reached"
     * rather than with a timeout of its own. */
    if (!in.name[0])
        in.name_len = 0;
    if (rein_call_run(t->a->reg, &in, &opts, &s->res, &err) != REIN_OK) {
        s->res = NULL;
        fallback_content(s);
    } else if (opts.check_only && rein_call_result_ok(s->res)) {
        s->proposed = true;
        if (rein__calls_proposal_content(s) != REIN_OK)
            fallback_content(s);
    } else {
        struct rein_jw w;
        rein_buf_reset(&s->content);
        rein_jw_init(&w, &s->content);
        rein_call_result_write_for_model(s->res, &w);
        if (rein_jw_finish(&w) != REIN_OK || rein__calls_media(s, &s->attachments) != REIN_OK)
            fallback_content(s);
    }
    if (t->a->obs.tool_call && s->res && !opts.check_only)
        t->a->obs.tool_call(t->a->obs.userdata,
                            rein_call_result_tool(s->res) ? rein_call_result_tool_name(s->res)
                                                          : NULL,
                            rein_call_status_name(rein_call_result_status(s->res)));
    result_event(s);
}

static void batch_job(void *arg, size_t i)
{
    struct batch *b = arg;
    struct rein_trace_scope scope;

    /* A call run on a pool thread is still a child of the turn's span. */
    rein_trace_scope_enter(&scope, b->trace);
    run_slot(b->t, &b->slots[i], b->check_only);
    rein_trace_scope_leave(&scope);
}

static bool is_sequential(const struct turn *t, struct call_slot *s)
{
    if (s->skip)
        return false;
    if (!s->tool)
        s->tool = rein_registry_resolve(t->a->reg, rein_model_call_name(s->mc), NULL, NULL);
    return s->tool && rein_tool_is_sequential(s->tool);
}

void rein__calls_run(struct turn *t, struct call_slot *slots, size_t n, bool check_only)
{
    size_t i = 0;

    while (i < n) {
        size_t j = i;
        if (is_sequential(t, &slots[i])) {
            run_slot(t, &slots[i], check_only);
            i++;
            continue;
        }
        while (j < n && !is_sequential(t, &slots[j]))
            j++;
        if (j - i == 1 || check_only) {
            for (size_t k = i; k < j; k++)
                run_slot(t, &slots[k], check_only);
        } else {
            struct batch b = {t, slots + i, check_only, rein_trace_current()};
            rein_pool_run_batch(rein__agent_pool(t->a), j - i, t->a->max_parallel, batch_job, &b);
        }
        i = j;
    }
}
