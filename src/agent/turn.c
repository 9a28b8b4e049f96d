/*
 * One agent turn (include/rein/agent.h): the ReAct loop of docs/DESIGN.md [react] with its
 * limits, modes and stop reasons.
 *
 *   user message → [model → tool calls through the pipeline → results] … → answer
 *
 * Each pass asks the model (or the rules fast path) with the history as it stands; a reply
 * without tool calls ends the turn; a reply with calls is appended, its calls run
 * (calls.c), their results appended in the model's order, and the limits are checked. A cap
 * ends the turn with one more model call with tool_choice "none" (close()), so the user gets an
 * answer; cancellation, a timeout and a provider failure end it at once, with every call the
 * model made answered and an answer composed from what happened.
 *
 * A turn's own state lives in struct turn on the caller's stack; everything it allocates is
 * released in finish(), and what the result needs moves into the result.
 */
#include "agent_int.h"

#include <rein/trace.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_MAX_ITERATIONS 10
#define SUCCESS_CAP_AUTO       5
#define SUCCESS_CAP_SINGLE     1
#define MIN_ANSWER_TOKENS      32
#define DETAIL_MAX             ((size_t)4096)

static const char nudge_text[] =
    "Your last reply wrote a tool call as text. Tools run only when you call them through the "
    "tool-calling interface: call the tool that way, or answer without it.";

/* ---- small helpers ---- */

static void set_text(struct rein_buf *b, const char *fmt, ...) REIN_PRINTF(2, 3);
static void set_text(struct rein_buf *b, const char *fmt, ...)
{
    va_list ap;

    rein_buf_reset(b);
    va_start(ap, fmt);
    if (rein_buf_addvf(b, fmt, ap) != REIN_OK)
        rein_buf_reset(b);
    va_end(ap);
}

static void stop_with(struct turn *t, enum rein_agent_stop stop, const char *detail)
{
    if (t->stopped)
        return;
    t->stopped = true;
    t->stop = stop;
    if (detail && detail[0])
        set_text(&t->detail, "%s", detail);
}

/* True once the turn is cancelled or out of time. The deadline is checked here as well as by
 * the watchdog thread, which may not have woken yet: no model request starts after it. */
static bool cancelled_or_late(struct turn *t)
{
    if (t->deadline_ms > 0 && rein_now_ms() >= t->deadline_ms && !rein_cancel_is_set(t->cancel)) {
        atomic_store(&t->timed_out, true);
        rein_cancel_trigger(t->cancel, "the turn's time limit was reached");
    }
    return rein_cancel_is_set(t->cancel);
}

static bool interrupted(struct turn *t)
{
    if (!cancelled_or_late(t))
        return false;
    if (atomic_load(&t->timed_out))
        stop_with(t, REIN_AGENT_STOP_TIMEOUT, "the turn's time limit was reached");
    else
        stop_with(t, REIN_AGENT_STOP_CANCELLED, rein_cancel_reason(t->cancel));
    return true;
}

rein_err rein__turn_persist_last(struct turn *t)
{
    const struct rein_agent_persist *p = t->o->persist;
    size_t pos = rein_history_len(t->h) - 1;
    const json_t *m = rein_history_get(t->h, pos);
    rein_error err;
    rein_err rc;

    t->pending_bytes += rein__message_bytes(m);
    if (!p || !p->message)
        return REIN_OK;
    rein_error_clear(&err);
    rc = p->message(p->userdata, pos + t->dropped, m, &err);
    if (rc) {
        const char *why = err.msg[0] ? err.msg : rein_strerror(rc);
        rein__turn_error_event(t, "persistence", "saving the conversation failed: %s", why);
        if (!t->fatal) {
            t->fatal = rc;
            set_text(&t->detail, "saving the conversation failed: %s", why);
        }
    }
    return rc;
}

void rein__turn_add_tokens(struct turn *t, const rein_model_response *r)
{
    int64_t in = rein_model_response_input_tokens(r), out = rein_model_response_output_tokens(r);

    if (in > 0)
        atomic_fetch_add(&t->in_tokens, in);
    if (out > 0)
        atomic_fetch_add(&t->out_tokens, out);
}

static int64_t tokens_used(struct turn *t)
{
    return atomic_load(&t->in_tokens) + atomic_load(&t->out_tokens);
}

/* ---- the model ---- */

static void model_event(const struct rein_model_event *ev, void *userdata)
{
    struct turn *t = userdata;
    struct rein_agent_event out;

    if (ev->type == REIN_MEV_TEXT_DELTA) {
        memset(&out, 0, sizeof(out));
        out.type = REIN_AGENT_EV_TEXT_DELTA;
        out.text = ev->text;
        out.len = ev->len;
        rein__turn_emit(t, &out);
    } else if (ev->type == REIN_MEV_RETRY) {
        rein__turn_error_event(t, "retry",
                               "the reply broke off; asking for it again (attempt %d): forget "
                               "the text shown since the last status",
                               ev->attempt);
    }
}

static bool unroutable(const rein_model_response *r)
{
    const char *f = rein_model_response_finish_reason(r);
    return f && strcmp(f, REIN_FINISH_UNROUTABLE) == 0;
}

/* Asks for the next reply: the rules fast path once per turn, then the model (or the rules,
 * when they took the turn). A reply that breaks off part-way is asked for once more; its
 * partial text and calls are forgotten, since nothing of it ran. */
/* One model request, reported to the observer's model_call (the GenAI client metrics). */
static rein_err send_model(struct turn *t, rein_provider *p, rein_model_response **out,
                           rein_error *err)
{
    const struct rein_agent_observer *obs = &t->a->obs;
    int64_t t0 = obs->model_call ? rein_now_ns() : 0;
    rein_err rc = rein_provider_send(p, t->req, t->h, out, err);

    if (obs->model_call) {
        struct rein_agent_model_call mc = {
            .provider = rein_provider_name(p),
            .model = rein_provider_model(p),
            .response_model = *out ? rein_model_response_model(*out) : NULL,
            .seconds = (double)(rein_now_ns() - t0) / 1e9,
            .input_tokens = *out ? rein_model_response_input_tokens(*out) : -1,
            .output_tokens = *out ? rein_model_response_output_tokens(*out) : -1,
            .error = !rc                    ? NULL
                     : rc == REIN_ETIMEDOUT ? "timeout"
                                            : rein_err_name(rc),
        };
        obs->model_call(obs->userdata, &mc);
    }
    return rc;
}

static rein_err ask(struct turn *t, rein_model_response **out, rein_error *err)
{
    rein_agent *a = t->a;
    rein_provider *p;
    rein_err rc;

    *out = NULL;
    rein__turn_status(t, REIN_AGENT_STATE_THINKING, NULL, NULL);
    if (a->rules && !t->on_rules && !t->rules_tried) {
        t->rules_tried = true;
        rein_model_request_set_events(t->req, NULL, NULL);
        rc = send_model(t, a->rules, out, err);
        if (t->o->on_event)
            rein_model_request_set_events(t->req, model_event, t);
        if (rc == REIN_OK && !unroutable(*out)) {
            t->on_rules = true;
            t->model_calls++;
            goto got;
        }
        rein_model_response_free(*out);
        *out = NULL;
        rein_error_clear(err);
    }
    p = t->on_rules ? a->rules : a->provider;
    for (int attempt = 0;; attempt++) {
        rc = send_model(t, p, out, err);
        t->model_calls++;
        if (*out)
            rein__turn_add_tokens(t, *out);
        if (rc == REIN_EPROVIDER && attempt == 0 && !rein_cancel_is_set(t->cancel)) {
            rein__turn_error_event(t, "retry",
                                   "the reply failed part-way (%s); asking for it again: forget "
                                   "the text shown since the last status",
                                   err->msg);
            rein_model_response_free(*out);
            *out = NULL;
            continue;
        }
        break;
    }
    if (rc && a->obs.provider_error)
        a->obs.provider_error(a->obs.userdata, rein_provider_name(p),
                              rc == REIN_ETIMEDOUT ? "timeout" : rein_err_name(rc));
    if (rc == REIN_OK && t->on_rules && a->rules && unroutable(*out)) {
        /* The rules ran the steps they could read and not the rest: the model takes the turn
         * over, with what ran in the history. */
        t->on_rules = false;
        rein_model_response_free(*out);
        *out = NULL;
        return ask(t, out, err);
    }
got:
    if (*out) {
        int64_t in = rein_model_response_input_tokens(*out);
        if (in > 0) {
            /* The provider's count covers everything sent; only what is appended from now on
             * is estimated. */
            t->est_tokens = in;
            t->est_valid = true;
            t->pending_bytes = 0;
        }
    }
    return rc;
}

/* False when the next request would pass the token budget; else lowers the request's
 * max_tokens to what is left. */
static bool budget_allows(struct turn *t)
{
    int64_t budget = t->o->max_tokens, left;

    if (budget <= 0)
        return true;
    left = budget - tokens_used(t) - rein__context_estimate(t);
    if (left < MIN_ANSWER_TOKENS)
        return false;
    rein_model_request_set_max_tokens(t->req, left);
    return true;
}

/* ---- appending ---- */

static rein_err add_rec(struct turn *t, struct call_slot *s)
{
    struct call_rec *r;

    if (t->nrecs == t->recs_cap) {
        size_t cap = t->recs_cap ? t->recs_cap * 2 : 8;
        r = rein_realloc(t->recs, cap * sizeof(*r));
        if (!r)
            return REIN_ENOMEM;
        t->recs = r;
        t->recs_cap = cap;
    }
    r = &t->recs[t->nrecs++];
    memset(r, 0, sizeof(*r));
    r->res = s->res;
    s->res = NULL;
    r->iteration = t->iterations;
    r->proposed = s->proposed;
    r->verified = s->verified;
    r->verify_passed = s->verify_passed;
    r->asked = s->asked;
    r->approved = s->approved;
    if ((s->verified || s->asked) && s->note[0])
        r->note = rein_strdup(s->note);
    return REIN_OK;
}

/* Adds "warning" to a tool message that is a JSON object. */
static void add_warning(struct rein_buf *content, const char *warning)
{
    size_t len = content->len;

    if (len < 2 || content->ptr[len - 1] != '}')
        return;
    rein_buf_truncate(content, len - 1);
    if (rein_buf_adds(content, len > 2 ? ",\"warning\":\"" : "\"warning\":\"") != REIN_OK ||
        rein_json_escape(content, warning, strlen(warning)) != REIN_OK ||
        rein_buf_adds(content, "\"}") != REIN_OK) {
        /* Memory ran out: put the object back as it was. */
        rein_buf_truncate(content, len - 1);
        if (rein_buf_addch(content, '}') != REIN_OK) /* cannot fail: the room is there */
            rein_buf_reset(content);
    }
}

/*
 * Appends each slot's tool message in the model's order and keeps the calls for the result.
 * mark is the history's length before the reply was appended: when a result cannot be
 * appended (memory), the reply and its results are taken back out, so the history never holds
 * a call without its result. (A store that already saved the reply gets the missing results
 * when the conversation is next loaded: rein_agent_history_repair.)
 */
static void append_results(struct turn *t, struct call_slot *slots, size_t n, size_t mark)
{
    for (size_t i = 0; i < n; i++) {
        struct call_slot *s = &slots[i];
        bool is_error = !s->proposed && !(s->res && rein_call_result_ok(s->res));
        rein_err rc =
            !s->content.len ? REIN_ENOMEM
            : s->attachments
                ? rein_history_add_tool_result_media(t->h, s->id, s->name, s->content.ptr, is_error,
                                                     s->attachments)
                : rein_history_add_tool_result(t->h, s->id, s->name, s->content.ptr, is_error);
        s->attachments = NULL; /* taken */
        if (rc) {
            if (!t->fatal)
                t->fatal = rc;
            rein_history_truncate(t->h, mark);
            t->est_valid = false;
            break;
        }
        (void)rein__turn_persist_last(t);
        if (s->proposed)
            t->nproposed++;
    }
    for (size_t i = 0; i < n; i++) {
        if (slots[i].res && add_rec(t, &slots[i]) != REIN_OK && !t->fatal)
            t->fatal = REIN_ENOMEM;
    }
}

static void release_slots(struct call_slot *slots, size_t n)
{
    for (size_t i = 0; slots && i < n; i++) {
        rein_call_result_free(slots[i].res);
        rein_cancel_unref(slots[i].skip);
        rein_buf_release(&slots[i].content);
        json_decref(slots[i].attachments);
    }
    rein_free(slots);
}

/* The arguments of a call as JSON text for an event: the raw text when it parsed, else the
 * raw text as a JSON string. */
static void call_event(struct turn *t, const struct call_slot *s)
{
    const char *raw = rein_model_call_raw_arguments(s->mc);
    struct rein_agent_event ev;
    struct rein_buf b;
    struct rein_jw w;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    if (rein_model_call_status(s->mc) == REIN_MODEL_CALL_OK)
        rein_jw_raw(&w, raw[0] ? raw : "{}", raw[0] ? strlen(raw) : 2);
    else
        rein_jw_str(&w, raw);
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_TOOL_CALL;
    ev.call_id = s->id;
    ev.tool = rein_model_call_name(s->mc);
    ev.iteration = t->iterations;
    if (rein_jw_finish(&w) == REIN_OK) {
        ev.json = b.ptr;
        ev.json_len = b.len;
    }
    rein__turn_emit(t, &ev);
    rein_buf_release(&b);
}

/*
 * Appends a reply with calls and gives every call a result: run (unless skip_all names why
 * none may run) or answered "not run". Returns the slots (the caller releases them), NULL
 * when memory ran out (t->fatal set).
 */
static struct call_slot *take_reply(struct turn *t, const rein_model_response *resp,
                                    const char *skip_all, bool check_only, size_t *nout)
{
    size_t n = rein_model_response_call_count(resp);
    struct call_slot *slots = rein_calloc(n ? n : 1, sizeof(*slots));
    int limit = t->o->max_tool_calls;
    char why[160];

    *nout = n;
    if (!slots) {
        t->fatal = REIN_ENOMEM;
        return NULL;
    }
    if (rein__history_add_reply(t, resp, slots, n) != REIN_OK) {
        if (!t->fatal)
            t->fatal = REIN_ENOMEM;
        /* Nothing was appended, so no call needs an answer. */
        for (size_t i = 0; i < n; i++) {
            rein_buf_release(&slots[i].content);
            json_decref(slots[i].attachments);
        }
        rein_free(slots);
        *nout = 0;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        struct call_slot *s = &slots[i];
        const char *reason = skip_all;
        if (!reason && rein_model_call_status(s->mc) == REIN_MODEL_CALL_INCOMPLETE)
            reason = "the model's reply broke off before this call was complete";
        if (!reason && limit > 0 && t->tool_calls >= limit) {
            snprintf(why, sizeof(why), "the turn's limit of %d tool calls was reached", limit);
            reason = why;
        }
        if (reason && !(s->skip = rein__skip_cancel(reason)))
            t->fatal = REIN_ENOMEM;
        t->tool_calls++;
        call_event(t, s);
    }
    rein__calls_run(t, slots, n, check_only);
    return slots;
}

/* A reply that came back with a failure: its text is kept for the answer and its calls, which
 * never ran, are answered. */
static void absorb_partial(struct turn *t, const rein_model_response *resp, const char *reason)
{
    const char *text = rein_model_response_text(resp);
    struct call_slot *slots;
    size_t n;

    if (text[0] && rein_buf_adds(&t->partial, text) != REIN_OK)
        rein_buf_reset(&t->partial);
    if (rein_model_response_call_count(resp) == 0)
        return;
    size_t mark = rein_history_len(t->h);

    slots = take_reply(t, resp, reason, false, &n);
    if (slots)
        append_results(t, slots, n, mark);
    release_slots(slots, n);
}

/* ---- the answer when the model could not give one ---- */

static void summarize_calls(struct turn *t, struct rein_buf *b)
{
    size_t from = t->nrecs > 10 ? t->nrecs - 10 : 0;
    rein_err rc = REIN_OK;

    if (t->nrecs == 0)
        return;
    rc = rein_buf_adds(b, "\n\nTool calls in this turn: ");
    if (from > 0 && !rc)
        rc = rein_buf_addf(b, "(%zu earlier ones not listed) ", from);
    for (size_t i = from; i < t->nrecs && !rc; i++) {
        rein_call_result *res = t->recs[i].res;
        const char *status =
            t->recs[i].proposed ? "proposed" : rein_call_status_name(rein_call_result_status(res));
        rc = rein_buf_addf(b, "%s%s (%s", i > from ? "; " : "", rein_call_result_tool_name(res),
                           status);
        if (!rc && !rein_call_result_ok(res))
            rc = rein_buf_addf(b, ": %.200s", rein_call_result_message(res));
        if (!rc)
            rc = rein_buf_adds(b, ")");
    }
    if (!rc)
        rc = rein_buf_adds(b, ".");
    (void)rc;
}

static void compose(struct turn *t)
{
    const char *d = t->detail.ptr;

    if (t->text.len > 0)
        return;
    switch (t->stop) {
    case REIN_AGENT_STOP_CANCELLED:
        set_text(&t->text, "The turn was cancelled (%s).", d);
        break;
    case REIN_AGENT_STOP_TIMEOUT:
        set_text(&t->text, "The turn ran out of time after %lld ms.", (long long)t->o->timeout_ms);
        break;
    case REIN_AGENT_STOP_PROVIDER_ERROR:
        set_text(&t->text, "The model could not answer: %s.", d);
        break;
    case REIN_AGENT_STOP_TOKEN_BUDGET:
        set_text(&t->text,
                 "I stopped because the next request would pass this turn's token budget of "
                 "%lld tokens (%lld used).",
                 (long long)t->o->max_tokens, (long long)tokens_used(t));
        break;
    case REIN_AGENT_STOP_MAX_ITERATIONS:
        set_text(&t->text, "I stopped after %d rounds of tool calls, the limit for one turn.",
                 t->iterations);
        break;
    case REIN_AGENT_STOP_SUCCESS_CAP:
        set_text(&t->text,
                 "I stopped after %d successful rounds of tool calls, the limit of the "
                 "%s mode.",
                 t->successes, rein_agent_mode_name(t->o->mode));
        break;
    case REIN_AGENT_STOP_STALLED:
        set_text(&t->text, "I stopped because I was not making progress: %s.", d);
        break;
    case REIN_AGENT_STOP_MAX_TOOL_CALLS:
        set_text(&t->text, "I stopped after %d tool calls, the limit for this turn.",
                 t->tool_calls);
        break;
    case REIN_AGENT_STOP_PROPOSED:
        set_text(&t->text, "These tool calls were checked and are waiting for approval; none "
                           "of them has run.");
        break;
    case REIN_AGENT_STOP_ERROR:
        set_text(&t->text, "The turn could not continue: %s.", d[0] ? d : "internal error");
        break;
    default:
        break;
    }
    if (t->partial.len > 0 &&
        (rein_buf_adds(&t->text, "\n\nThe model's unfinished reply: ") != REIN_OK ||
         rein_buf_add(&t->text, t->partial.ptr, t->partial.len) != REIN_OK))
        rein_buf_reset(&t->partial);
    summarize_calls(t, &t->text);
    t->composed = t->text.len > 0;
}

/* ---- ending a turn at a cap: one more call, tools off ---- */

static void close_turn(struct turn *t, enum rein_agent_stop stop, const char *detail)
{
    rein_model_response *resp = NULL;
    rein_error err;
    char why[200];
    rein_err rc;

    stop_with(t, stop, detail);
    if (t->fatal || cancelled_or_late(t) || !budget_allows(t))
        return;
    rein__context_fit(t);
    if (t->fatal || rein_model_request_set_tool_choice(t->req, "none") != REIN_OK)
        return;
    rein_error_clear(&err);
    rc = ask(t, &resp, &err);
    snprintf(why, sizeof(why), "the turn had already ended (%s)", rein_agent_stop_name(stop));
    if (rc) {
        if (resp)
            absorb_partial(t, resp, why);
    } else if (rein_model_response_call_count(resp) > 0) {
        absorb_partial(t, resp, why);
        rein_buf_reset(&t->text);
        if (t->partial.len > 0 && rein_buf_add(&t->text, t->partial.ptr, t->partial.len) == 0)
            rein_buf_reset(&t->partial);
    } else {
        const char *text = rein_model_response_text(resp);
        if (text[0] && rein_history_add_response(t->h, resp) == REIN_OK)
            (void)rein__turn_persist_last(t);
        set_text(&t->text, "%s", text);
    }
    rein_model_response_free(resp);
}

/* ---- one reply ---- */

double rein_agent_stated_confidence(const char *text)
{
    static const char *const words[] = {"confidence", "置信度", "信心"};
    double best = -1;

    for (size_t w = 0; w < REIN_ARRAY_SIZE(words); w++) {
        size_t wl = strlen(words[w]);
        for (const char *p = text; (p = strcasestr(p, words[w])) != NULL; p += wl) {
            const char *q = p + wl;
            char *end;
            double v;
            while (*q == ' ' || *q == '*' || *q == ':' || *q == '=' || *q == '\t')
                q++;
            if (strncmp(q, "：", 3) == 0)
                q += 3;
            while (*q == ' ')
                q++;
            if (!isdigit((unsigned char)*q))
                continue;
            v = strtod(q, &end);
            if (*end == '%' || v > 1)
                v /= 100;
            if (v >= 0 && v <= 1 && (best < 0 || v < best))
                best = v;
        }
    }
    return best;
}

/* Feeds the reply's outcomes to the detector, adding warnings to the tool messages. Returns
 * true when the turn stalls (detail set). */
static bool detect(struct turn *t, struct call_slot *slots, size_t n)
{
    char msg[700];
    bool stall = false;

    for (size_t i = 0; i < n; i++) {
        struct call_slot *s = &slots[i];
        struct rein__detect_call c;
        const json_t *args;
        const char *raw;
        enum rein__detect_action act;

        if (!s->res || s->skip || s->proposed)
            continue;
        args = rein_call_result_args(s->res);
        raw = rein_model_call_raw_arguments(s->mc);
        c.tool = rein_call_result_tool_name(s->res);
        c.code = rein_call_result_code(s->res);
        c.status = rein_call_result_status(s->res);
        c.message = rein_call_result_message(s->res);
        c.call_sig = rein__hash_bytes(args ? rein__json_hash(args, false)
                                           : rein__hash_bytes(9, raw, strlen(raw)),
                                      c.tool, strlen(c.tool));
        c.result_sig = c.code == REIN_CALL_OK
                           ? rein__json_hash(rein_call_result_output(s->res), true)
                           : rein__hash_bytes((uint64_t)c.code, c.message, strlen(c.message));
        act = rein__detect_call(&t->det, &c, msg, sizeof(msg));
        if (act == DETECT_STALL && !stall) {
            stall = true;
            set_text(&t->detail, "%s", msg);
        } else if (act == DETECT_WARN) {
            add_warning(&s->content, msg);
            rein__turn_error_event(t, "warning", "%s", msg);
        }
    }
    if (!stall && n > 0) {
        struct call_slot *last = &slots[n - 1];
        enum rein__detect_action act = rein__detect_reply(&t->det, msg, sizeof(msg));
        if (act == DETECT_STALL) {
            stall = true;
            set_text(&t->detail, "%s", msg);
        } else if (act == DETECT_WARN) {
            add_warning(&last->content, msg);
            rein__turn_error_event(t, "warning", "%s", msg);
        }
    }
    return stall;
}

/* Handles a reply with tool calls. */
static void handle_calls(struct turn *t, const rein_model_response *resp)
{
    bool propose = t->o->mode == REIN_AGENT_MODE_PROPOSE, all_ok = true, all_proposed = true;
    struct call_slot *slots;
    size_t mark = rein_history_len(t->h), n;
    bool stall;

    t->iterations++;
    t->confidence =
        t->a->caps.confidence ? rein_agent_stated_confidence(rein_model_response_text(resp)) : -1;
    /* The rules router is no model: its calls are rein's own reading of the request, which
     * self-verification (a check on model output) has nothing to add to. */
    if (t->on_rules || strcmp(rein_provider_name(t->a->provider), "rules") == 0)
        t->confidence = 1.0;
    slots = take_reply(t, resp, NULL, propose, &n);
    if (!slots) {
        stop_with(t, REIN_AGENT_STOP_ERROR, NULL);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(slots[i].res && rein_call_result_ok(slots[i].res)) || slots[i].proposed)
            all_ok = false;
        if (!slots[i].proposed)
            all_proposed = false;
    }
    stall = !propose && detect(t, slots, n);
    append_results(t, slots, n, mark);
    release_slots(slots, n);
    if (t->fatal) {
        stop_with(t, REIN_AGENT_STOP_ERROR, NULL);
        return;
    }
    if (interrupted(t))
        return;
    if (!all_ok && t->on_rules && t->a->rules) {
        /* A routed call failed: the model takes over, with the error in the history. */
        t->on_rules = false;
    }
    if (propose) {
        if (all_proposed) {
            set_text(&t->text, "%s", rein_model_response_text(resp));
            stop_with(t, REIN_AGENT_STOP_PROPOSED, NULL);
        }
        return;
    }
    if (stall) {
        close_turn(t, REIN_AGENT_STOP_STALLED, NULL);
        return;
    }
    if (t->o->max_tool_calls > 0 && t->tool_calls >= t->o->max_tool_calls) {
        char d[96];
        snprintf(d, sizeof(d), "the limit of %d tool calls was reached", t->o->max_tool_calls);
        close_turn(t, REIN_AGENT_STOP_MAX_TOOL_CALLS, d);
        return;
    }
    if (all_ok && ++t->successes >= t->success_cap) {
        char d[96];
        snprintf(d, sizeof(d), "%d successful round%s of tool calls (%s mode)", t->successes,
                 t->successes == 1 ? "" : "s", rein_agent_mode_name(t->o->mode));
        close_turn(t, REIN_AGENT_STOP_SUCCESS_CAP, d);
    }
}

/* A reply without tool calls: the answer. */
static void take_answer(struct turn *t, const rein_model_response *resp)
{
    const char *text = rein_model_response_text(resp);
    const char *refusal = rein_model_response_refusal(resp);

    if ((text[0] || refusal) && rein_history_add_response(t->h, resp) == REIN_OK)
        (void)rein__turn_persist_last(t);
    set_text(&t->text, "%s", text[0] ? text : refusal ? refusal : "");
    /* The rules provider answering "I could not route this" is an answer, not a success. */
    t->unroutable = unroutable(resp);
    if (t->fatal) {
        stop_with(t, REIN_AGENT_STOP_ERROR, NULL);
        return;
    }
    if (rein__turn_claims_reask(t))
        return; /* verification force: the claims went back, the model answers again */
    stop_with(t,
              t->o->mode == REIN_AGENT_MODE_PROPOSE && t->nproposed > 0
                  ? REIN_AGENT_STOP_PROPOSED
                  : REIN_AGENT_STOP_FINAL_ANSWER,
              NULL);
}

/* The model could not be asked: cancel, timeout or provider failure. */
static void ask_failed(struct turn *t, rein_err rc, rein_model_response *resp,
                       const rein_error *err)
{
    char reason[320];

    if (rc == REIN_ECANCELED || rein_cancel_is_set(t->cancel)) {
        (void)interrupted(t);
        snprintf(reason, sizeof(reason), "the turn ended before it ran (%s)", t->detail.ptr);
    } else {
        const char *why = err->msg[0] ? err->msg : rein_strerror(rc);
        stop_with(t, REIN_AGENT_STOP_PROVIDER_ERROR, why);
        rein__turn_error_event(t, "provider", "%s", why);
        snprintf(reason, sizeof(reason), "the model's reply failed before this call could run");
    }
    if (resp)
        absorb_partial(t, resp, reason);
}

static void loop(struct turn *t)
{
    while (!t->stopped) {
        rein_model_response *resp = NULL;
        rein_error err;
        rein_err rc;

        if (interrupted(t))
            return;
        if (t->iterations >= t->max_iterations) {
            char d[96];
            snprintf(d, sizeof(d), "%d rounds of tool calls, the limit for one turn",
                     t->iterations);
            close_turn(t, REIN_AGENT_STOP_MAX_ITERATIONS, d);
            return;
        }
        rein__context_fit(t);
        if (t->fatal) {
            stop_with(t, REIN_AGENT_STOP_ERROR, "the conversation could not be shortened");
            return;
        }
        if (!budget_allows(t)) {
            char d[96];
            snprintf(d, sizeof(d), "the next request would pass the budget of %lld tokens",
                     (long long)t->o->max_tokens);
            stop_with(t, REIN_AGENT_STOP_TOKEN_BUDGET, d);
            return;
        }
        rein_error_clear(&err);
        rc = ask(t, &resp, &err);
        if (rc) {
            ask_failed(t, rc, resp, &err);
        } else if (rein_model_response_call_count(resp) > 0) {
            handle_calls(t, resp);
        } else if (rein_model_response_text_call_count(resp) > 0 && !t->nudged) {
            /* Calls written as text (report mode) are not an answer: say so once. */
            t->nudged = true;
            if (rein_history_add_response(t->h, resp) != REIN_OK ||
                rein__turn_persist_last(t) != REIN_OK ||
                rein_history_add_user(t->h, nudge_text) != REIN_OK ||
                rein__turn_persist_last(t) != REIN_OK)
                stop_with(t, REIN_AGENT_STOP_ERROR, NULL);
        } else {
            take_answer(t, resp);
        }
        rein_model_response_free(resp);
        if (t->fatal)
            stop_with(t, REIN_AGENT_STOP_ERROR, NULL);
    }
}

/* ---- setting up and finishing ---- */

static void *watchdog(void *arg)
{
    struct turn *t = arg;
    int64_t left = t->deadline_ms - rein_now_ms();

    if (!rein_cancel_wait(t->done, left > 0 ? left : 0)) {
        atomic_store(&t->timed_out, true);
        rein_cancel_trigger(t->cancel, "the turn's time limit was reached");
    }
    return NULL;
}

static rein_err offer_tool(struct turn *t, const rein_tool *tool, rein_error *err)
{
    /* A registry's tools do not change: their list is encoded once per provider and wire. */
    if (rein_model_request_add_tool_shared(t->req, rein_tool_id(tool), rein_tool_description(tool),
                                           rein_tool_parameters(tool)) != REIN_OK)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    return REIN_OK;
}

/* The tools offered: opts.tools (each must exist), or every tool of the registry. */
static rein_err offer_tools(struct turn *t, rein_error *err)
{
    const rein_registry *reg = t->a->reg;
    const struct rein_agent_turn_opts *o = t->o;
    rein_err rc = REIN_OK;

    if (!o->tools) {
        for (size_t i = 0; !rc && i < rein_registry_count(reg); i++) {
            /* NULL when a tool left (an MCP server changed its list) during the loop. */
            const rein_tool *tool = rein_registry_at(reg, i);
            rc = tool ? offer_tool(t, tool, err) : REIN_OK;
        }
        return rc;
    }
    for (size_t i = 0; !rc && i < o->tool_count; i++) {
        const rein_tool *tool = rein_registry_get(reg, o->tools[i]);
        rc = tool ? offer_tool(t, tool, err)
                  : rein_error_set(err, REIN_EINVAL, "no tool named \"%s\"", o->tools[i]);
    }
    return rc;
}

static rein_err setup(struct turn *t, rein_error *err)
{
    const struct rein_agent_turn_opts *o = t->o;

    t->start_ms = rein_now_ms();
    t->max_iterations = o->max_iterations > 0 ? o->max_iterations : DEFAULT_MAX_ITERATIONS;
    t->success_cap = o->success_cap > 0                  ? o->success_cap
                     : o->mode == REIN_AGENT_MODE_SINGLE ? SUCCESS_CAP_SINGLE
                                                         : SUCCESS_CAP_AUTO;
    /* A turn without a trace id of its own joins the trace it runs in (a plan step's, a
     * loop iteration's), so its spans and ledger entries share one trace id. */
    if (o->trace_id && rein_trace_id_is_valid(o->trace_id))
        snprintf(t->trace_id, sizeof(t->trace_id), "%s", o->trace_id);
    else if (rein_trace_current())
        memcpy(t->trace_id, rein_trace_current()->trace_id, sizeof(t->trace_id));
    else
        rein_trace_id_new(t->trace_id);
    t->last_in = t->last_out = -1;
    t->confidence = -1;
    pthread_mutex_init(&t->ev_mu, NULL);
    pthread_mutex_init(&t->tools_mu, NULL);
    rein_buf_init(&t->text, 0);
    rein_buf_init(&t->detail, DETAIL_MAX);
    rein_buf_init(&t->partial, 0);
    rein__detect_init(&t->det);
    t->cancel = rein_cancel_new_child(o->cancel);
    t->req = rein_model_request_new();
    if (o->ledger) {
        t->ledger = o->ledger;
    } else {
        t->own_ledger = t->ledger = rein_ledger_new();
        /* The turn's own hook notes each entry's tool for the claims check and calls the
         * persistence hook; the result gets the ledger back with the persistence hook only
         * (rein__result_from_turn). */
        t->tools_known = true;
        if (t->ledger)
            rein_ledger_set_hook(t->ledger, rein__turn_ledger_hook, t);
    }
    if (!t->cancel || !t->req || !t->ledger)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    t->ledger_mark = rein_ledger_count(t->ledger);
    if (offer_tools(t, err) != REIN_OK)
        return err ? err->code : REIN_EINVAL;
    rein_model_request_set_registry(t->req, t->a->reg);
    rein_model_request_set_cancel(t->req, t->cancel);
    if (o->on_event)
        rein_model_request_set_events(t->req, model_event, t);
    if (o->timeout_ms > 0) {
        t->deadline_ms = t->start_ms + o->timeout_ms;
        t->done = rein_cancel_new();
        if (!t->done)
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
        t->has_watchdog = pthread_create(&t->watchdog, NULL, watchdog, t) == 0;
        if (!t->has_watchdog)
            return rein_error_set(err, REIN_EINTERNAL, "cannot start the timeout thread");
    }
    return REIN_OK;
}

/* Answers calls a dead turn left behind, adds the system prompt to a new conversation, then
 * the user's message. Fails only before the user message is in. */
static rein_err begin(struct turn *t, rein_error *err)
{
    rein_err rc = rein__history_close_calls(t, t->h, NULL, NULL, NULL, err);

    if (!rc && rein_history_len(t->h) == 0) {
        rc = rein_history_append_shared(t->h, t->a->system_msg, err);
        if (!rc)
            rc = rein__turn_persist_last(t);
    }
    if (!rc) {
        rc = rein_history_add_user(t->h, t->message);
        if (!rc)
            rc = rein__turn_persist_last(t);
    }
    if (rc && !t->detail.len)
        set_text(&t->detail, "%s", err && err->msg[0] ? err->msg : rein_strerror(rc));
    return rc;
}

static void release(struct turn *t)
{
    if (t->has_watchdog) {
        rein_cancel_trigger(t->done, "turn over");
        pthread_join(t->watchdog, NULL);
    }
    rein_cancel_unref(t->done);
    rein_model_request_free(t->req);
    rein_cancel_unref(t->cancel);
    rein_ledger_free(t->own_ledger);
    rein__turn_tools_release(t);
    for (size_t i = 0; i < t->nrecs; i++) {
        rein_call_result_free(t->recs[i].res);
        rein_free(t->recs[i].note);
    }
    rein_free(t->recs);
    rein__detect_release(&t->det);
    rein_buf_release(&t->text);
    rein_buf_release(&t->detail);
    rein_buf_release(&t->partial);
    json_decref(t->refuted);
    pthread_mutex_destroy(&t->ev_mu);
    pthread_mutex_destroy(&t->tools_mu);
}

static void final_event(struct turn *t, bool success)
{
    struct rein_agent_event ev;

    rein__turn_status(t, REIN_AGENT_STATE_IDLE, NULL, NULL);
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_FINAL;
    ev.text = t->text.ptr;
    ev.len = t->text.len;
    ev.stop = t->stop;
    ev.ok = success;
    ev.code = t->composed ? "composed" : NULL;
    rein__turn_emit(t, &ev);
}

/* The OpenTelemetry GenAI attributes of an invoke_agent span, and rein's own. */
static void span_attributes(struct rein_span *span, struct turn *t, rein_agent_result *r)
{
    rein_span_set_str(span, "gen_ai.operation.name", "invoke_agent");
    if (t->a->provider) {
        rein_span_set_str(span, "gen_ai.provider.name", rein_provider_name(t->a->provider));
        rein_span_set_str(span, "gen_ai.request.model", rein_provider_model(t->a->provider));
    }
    rein_span_set_int(span, "gen_ai.usage.input_tokens", atomic_load(&t->in_tokens));
    rein_span_set_int(span, "gen_ai.usage.output_tokens", atomic_load(&t->out_tokens));
    rein_span_set_str(span, "rein.stop_reason", rein_agent_stop_name(t->stop));
    rein_span_set_int(span, "rein.iterations", t->iterations);
    rein_span_set_int(span, "rein.model_calls", t->model_calls);
    /* The calls have moved into the result by now. */
    rein_span_set_int(span, "rein.tool_calls",
                      (int64_t)(r ? rein_agent_result_tool_call_count(r) : t->nrecs));
    /* The refuted claims have moved into the result too (it was never set while this read
     * t->refuted, which the result had taken). */
    if (t->claims_read && r)
        rein_span_set_int(span, "rein.claims.refuted",
                          (int64_t)json_array_size(rein_agent_result_claims(r)));
    if (t->claims_sent) /* verification force sent the answer's claims back once */
        rein_span_set_bool(span, "rein.claims.reasked", true);
    if (!r || !rein_agent_result_success(r))
        rein_span_fail(span, rein_agent_stop_name(t->stop), t->detail.len ? t->detail.ptr : NULL);
}

rein_err rein_agent_run(rein_agent *a, rein_history *h, const char *message,
                        const struct rein_agent_turn_opts *opts, rein_agent_result **out,
                        rein_error *err)
{
    static const struct rein_agent_turn_opts defaults;
    struct turn t;
    struct rein_span span;
    rein_agent_result *r;
    rein_err rc;

    if (out)
        *out = NULL;
    rein_error_clear(err);
    rein_error_where(err, REIN__AGENT_WHERE);
    if (!a || !h || !out)
        return rein_error_set(err, REIN_EINVAL,
                              "rein_agent_run needs an agent, a history and a "
                              "place for the result");
    if (!message || !message[0])
        return rein_error_set(err, REIN_EINVAL, "the message is empty");
    if (rein_utf8_valid_prefix(message, strlen(message)) != strlen(message))
        return rein_error_set(err, REIN_EINVAL, "the message is not valid UTF-8 at byte %zu",
                              rein_utf8_valid_prefix(message, strlen(message)) + 1);
    memset(&t, 0, sizeof(t));
    t.a = a;
    t.h = h;
    t.o = opts ? opts : &defaults;
    t.message = message;
    rc = setup(&t, err);
    if (!rc)
        rc = begin(&t, err);
    if (rc) {
        release(&t);
        if (rc == REIN_ENOMEM)
            rein_error_set(err, REIN_ENOMEM, "out of memory");
        return rc;
    }
    if (a->obs.turn_running)
        a->obs.turn_running(a->obs.userdata, 1);
    /* The turn's span: its model calls and tool calls are children through the thread's
     * current context (docs/decisions/0029). */
    rein_span_start(&span, "invoke_agent", REIN_SPAN_INTERNAL, t.trace_id);
    loop(&t);
    if (t.stop != REIN_AGENT_STOP_FINAL_ANSWER || t.text.len == 0)
        compose(&t);
    rein__turn_claims_report(&t);
    r = rein__result_from_turn(&t);
    final_event(&t, r && rein_agent_result_success(r));
    if (rein_span_is_recording(&span))
        span_attributes(&span, &t, r);
    rein_span_end(&span);
    if (a->obs.turn_running)
        a->obs.turn_running(a->obs.userdata, -1);
    release(&t);
    /* The conversation goes idle: what it kept only for the next request goes back. */
    rein_history_compact(h);
    if (!r)
        return rein_error_set(err, REIN_ENOMEM, "out of memory building the turn's result");
    *out = r;
    return REIN_OK;
}
