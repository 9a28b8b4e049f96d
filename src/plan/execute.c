/*
 * The executor (docs/DESIGN.md [cortex], "Cortex integration"): runs every ready step, at
 * most max_parallel at once, each as an agent turn restricted to that step; verifies each
 * step as it finishes; replans a failed one (rewrite, split, give_up) up to max_replans
 * times, then blocks it and skips what depends on it; and, when nothing is left to run,
 * makes the aggregation call.
 *
 * One coordinator (the caller's thread) starts steps and waits; each step runs on the pool,
 * and the same job then verifies it and, when it failed, asks the replanner, so one slow
 * replan never holds back the steps that are ready. Everything that touches the plan does so
 * under the run's lock. A step is found by its uid, not its index, because a split elsewhere
 * may move it while it runs.
 *
 * Every change is saved (when a save path is set) before anything else happens: the status
 * of a step before its turn starts, each ledger entry (pending before the call runs, through
 * the ledger hook, so a call that cannot be recorded does not run), the verdict, the replan.
 * A process killed at any point leaves a file from which rein_planner_execute resumes
 * without running a completed step again.
 */
#include "plan_int.h"

#include <rein/trace.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_MAX_PARALLEL 4
#define MAX_PARALLEL_CAP     64
#define DEP_OUTPUT_SHOWN     8000
#define REASON_MAX           300 /* a failed step's reason, as the replanner gets it */
#define WHY_MAX              400 /* why the replanner could not decide */

struct job;

struct run {
    rein_planner *pl;
    rein_plan *plan;
    const struct rein_plan_opts *o;
    unsigned max_parallel;
    int max_replans;
    struct rein__plan_events *ev;
    struct rein__plan_stats *st;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rein_cancel *cancel; /* a child of o->cancel; also triggered when the run cannot go on */
    rein_pool *pool;
    struct job *active[MAX_PARALLEL_CAP];
    unsigned running;
    rein_err fatal;
    char detail[300];
    const struct rein_trace_context *trace; /* the plan's span, for the pool's threads */
};

struct job {
    struct run *r;
    uint64_t uid;
    atomic_int idx; /* the step's index now (a split may move it) */
    int replans;    /* the step's replan count when it started */
    char *message;
};

/* ---- saving and events (called locked) ---- */

static void fail_run(struct run *r, rein_err rc, const char *fmt, ...) REIN_PRINTF(3, 4);
static void fail_run(struct run *r, rein_err rc, const char *fmt, ...)
{
    struct rein_plan_event ev;
    va_list ap;

    if (r->fatal)
        return;
    r->fatal = rc;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
    va_end(ap);
    rein_cancel_trigger(r->cancel, r->detail);
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_PLAN_EV_ERROR;
    ev.step = -1;
    ev.text = r->detail;
    rein__plan_emit(r->ev, &ev);
}

static rein_err save_locked(struct run *r)
{
    rein_error err;
    rein_err rc;

    if (!r->o->save_path)
        return REIN_OK;
    rein_error_clear(&err);
    rc = rein_plan_save_file(r->plan, r->o->save_path, &err);
    if (rc)
        fail_run(r, rc, "the plan could not be saved: %s", err.msg);
    return rc;
}

static void emit_step(struct run *r, size_t i)
{
    const struct rein__plan_step *s = &r->plan->steps[i];
    struct rein_plan_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_PLAN_EV_STEP;
    ev.step = (int)i;
    ev.status = s->status;
    ev.attempt = s->replans + 1;
    ev.text = s->desc;
    ev.note = s->note;
    rein__plan_emit(r->ev, &ev);
}

/* why: "new", "resumed" or "split". */
static void emit_plan(struct run *r, const char *why)
{
    struct rein_plan_event ev;
    json_t *j;

    if (!r->ev || !r->ev->fn)
        return;
    j = rein_plan_to_json(r->plan);
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_PLAN_EV_PLAN;
    ev.step = -1;
    ev.ok = strcmp(why, "resumed") == 0;
    ev.text = why;
    ev.data = j;
    rein__plan_emit(r->ev, &ev);
    json_decref(j);
}

/* Emits a STEP event for every step skipped since the counts were taken. */
static void emit_skipped(struct run *r, const enum rein_plan_status *before)
{
    for (size_t i = 0; i < r->plan->n; i++) {
        if (r->plan->steps[i].status == REIN_PLAN_SKIPPED && before[i] != REIN_PLAN_SKIPPED)
            emit_step(r, i);
    }
}

static void renumber_jobs(struct run *r)
{
    for (unsigned k = 0; k < r->running; k++) {
        long i = rein__plan_find_uid(r->plan, r->active[k]->uid);
        atomic_store(&r->active[k]->idx, (int)i);
    }
}

/* ---- the ledger mirror ---- */

/* The ledger hook of a step's turn: every entry lands in the step's history and is saved
 * before the pipeline goes on. An error stops a pending call from running. */
static rein_err mirror(void *ud, const struct rein_ledger_entry *e)
{
    struct job *job = ud;
    struct run *r = job->r;
    json_t *entry = rein_ledger_entry_to_json(e);
    rein_err rc;
    long i;

    if (!entry)
        return REIN_ENOMEM;
    pthread_mutex_lock(&r->mu);
    i = rein__plan_find_uid(r->plan, job->uid);
    rc = i < 0 ? REIN_EINTERNAL : rein_plan_record_entry(r->plan, (size_t)i, entry, NULL);
    json_decref(entry);
    if (rc == REIN_ENOMEM)
        fail_run(r, rc, "out of memory recording a tool call");
    if (!rc)
        rc = save_locked(r);
    pthread_mutex_unlock(&r->mu);
    return rc;
}

/* ---- a step's turn ---- */

static void job_event(const struct rein_agent_event *ev, void *ud)
{
    struct job *job = ud;

    rein__plan_emit_agent(job->r->ev, "step", atomic_load(&job->idx), ev);
}

/* What a step's turn is told: the request, its description, what its dependencies produced. */
static char *step_message(const rein_plan *p, size_t i)
{
    const struct rein__plan_step *s = &p->steps[i];
    struct rein__plan_text b;

    rein__plan_text_init(&b, 0);
    rein__plan_text_addf(&b, "The request:\n%s\n\nYour step (step %zu of the plan \"%s\"):\n%s\n",
                         p->query, i, p->title, s->desc);
    if (s->ndeps)
        rein__plan_text_adds(&b, "\nWhat the steps it depends on produced:\n");
    for (size_t k = 0; k < s->ndeps; k++) {
        const struct rein__plan_step *d = &p->steps[s->deps[k]];
        const char *out = d->output ? d->output : "";
        size_t n = strlen(out);
        if (n > DEP_OUTPUT_SHOWN) {
            n = DEP_OUTPUT_SHOWN;
            while (n > 0 && ((unsigned char)out[n] & 0xC0) == 0x80)
                n--;
        }
        rein__plan_text_addf(&b, "- Step %d (%s):\n%.*s%s\n", s->deps[k], d->desc, (int)n, out,
                             n < strlen(out) ? " …" : "");
    }
    if (s->replans > 0 && s->note)
        rein__plan_text_addf(&b, "\nAn earlier attempt at this step failed its check: %s\n",
                             s->note);
    rein__plan_text_adds(&b, "\nDo this step now with the tools you have, then reply with its "
                             "result. Report only what your tool calls actually did.");
    return rein__plan_text_detach(&b);
}

/* Paths the step's successful calls named (argument members whose names mention a path or a
 * file): the seed's step_files. */
static void collect_files(struct rein__plan_step *s)
{
    size_t k;
    json_t *e;

    json_array_foreach(s->history, k, e)
    {
        const char *st = json_string_value(json_object_get(e, "status"));
        const char *key;
        json_t *v;
        if (!rein__plan_entry_current(s, e) || !st || strcmp(st, "success") != 0)
            continue;
        json_object_foreach(json_object_get(e, "args"), key, v)
        {
            bool seen = false;
            size_t q;
            json_t *f;
            if (!json_is_string(v) || (!strcasestr(key, "path") && !strcasestr(key, "file")))
                continue;
            json_array_foreach(s->files, q, f) seen = seen || json_equal(f, v);
            if (!seen)
                (void)json_array_append(s->files, v);
        }
    }
}

/* The step's turn ended because the run is stopping: back to not_started, its calls marked. */
static void interrupt_step(struct run *r, size_t i)
{
    rein__plan_step_interrupt(r->plan, i);
    r->plan->steps[i].status = REIN_PLAN_NOT_STARTED;
    (void)save_locked(r);
    emit_step(r, i);
}

static void emit_verdict(struct run *r, size_t i, bool passed, const json_t *report)
{
    struct rein_plan_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_PLAN_EV_VERIFICATION;
    ev.step = (int)i;
    ev.ok = passed;
    ev.text = json_string_value(json_object_get(report, "reason"));
    ev.data = report;
    rein__plan_emit(r->ev, &ev);
}

/* Verifies step i after its turn (res may be NULL when the turn could not run). Locked. */
static bool verify(struct run *r, size_t i, const rein_agent_result *res, json_t **report)
{
    const struct rein_agent_turn_opts *so = &r->o->step;
    enum rein_agent_stop stop = res ? rein_agent_result_stop(res) : REIN_AGENT_STOP_ERROR;
    bool passed = rein_plan_verify_step(r->plan, i, res ? rein_agent_result_text(res) : NULL,
                                        r->pl->reg, so->tools, so->tool_count, report);
    char why[400];

    if (stop != REIN_AGENT_STOP_PROVIDER_ERROR && stop != REIN_AGENT_STOP_TIMEOUT &&
        stop != REIN_AGENT_STOP_ERROR)
        return passed;
    /* The turn gave no answer of its own: the step did not happen, whatever its ledger says. */
    snprintf(why, sizeof(why), "the step's turn stopped (%s)%s%s", rein_agent_stop_name(stop),
             res && rein_agent_result_detail(res)[0] ? ": " : "",
             res ? rein_agent_result_detail(res) : "");
    if (*report) {
        (void)json_object_set_new(*report, "passed", json_false());
        (void)json_object_set_new(*report, "reason", json_string(why));
    }
    return false;
}

static void block_step(struct run *r, size_t i, const char *note)
{
    enum rein_plan_status before[REIN_PLAN_MAX_STEPS] = {0};

    for (size_t k = 0; k < r->plan->n; k++)
        before[k] = r->plan->steps[k].status;
    rein__plan_mark(r->plan, i, REIN_PLAN_BLOCKED, note);
    rein_plan_skip_dependents(r->plan, i);
    (void)save_locked(r);
    emit_step(r, i);
    emit_skipped(r, before);
}

/* Applies the replanner's decision (NULL: it could not decide, why says so) to step uid. */
static void apply_replan(struct run *r, struct job *job, const json_t *d, const char *reason,
                         const char *why)
{
    const char *action = json_string_value(json_object_get(d, "action"));
    long at = rein__plan_find_uid(r->plan, job->uid);
    size_t i;
    int replans;
    /* the longest: the attempt, the reason, and the replanner's or the split's error */
    char note[REASON_MAX + WHY_MAX + 128];

    if (at < 0)
        return;
    i = (size_t)at;
    replans = r->plan->steps[i].replans;
    if (action && strcmp(action, "give_up") == 0) {
        const char *because = json_string_value(json_object_get(d, "reason"));
        snprintf(note, sizeof(note), "the replanner gave up after attempt %d: %s", replans + 1,
                 because ? because : reason);
        block_step(r, i, note);
        return;
    }
    if (action && strcmp(action, "rewrite") == 0 &&
        rein_plan_rewrite_step(r->plan, i, json_string_value(json_object_get(d, "new_description")),
                               NULL) == REIN_OK) {
        snprintf(note, sizeof(note), "rewritten after attempt %d failed: %s", replans + 1, reason);
    } else if (action && strcmp(action, "split") == 0) {
        const json_t *steps = json_object_get(d, "new_steps");
        const char *descs[REIN_PLAN_MAX_STEPS];
        size_t n = json_array_size(steps);
        rein_error err;
        for (size_t k = 0; k < n && k < REIN_PLAN_MAX_STEPS; k++)
            descs[k] = json_string_value(json_array_get(steps, k));
        if (rein_plan_split_step(r->plan, i, descs, n, json_object_get(d, "new_dependencies"),
                                 &err) != REIN_OK) {
            snprintf(note, sizeof(note), "attempt %d failed (%s); the split could not be made: %s",
                     replans + 1, reason, err.msg);
            n = 1;
        } else {
            snprintf(note, sizeof(note), "split into steps %zu to %zu after attempt %d failed: %s",
                     i, i + n - 1, replans + 1, reason);
            renumber_jobs(r);
        }
        for (size_t k = 0; k < n; k++)
            rein_plan_set_step_replans(r->plan, i + k, replans + 1);
        rein__plan_mark(r->plan, i, REIN_PLAN_NOT_STARTED, note);
        (void)save_locked(r);
        emit_plan(r, "split");
        return;
    } else {
        snprintf(note, sizeof(note), "attempt %d failed (%s); %s", replans + 1, reason,
                 why ? why : "the replanner gave no decision");
    }
    rein_plan_set_step_replans(r->plan, i, replans + 1);
    rein__plan_mark(r->plan, i, REIN_PLAN_NOT_STARTED, note);
    (void)save_locked(r);
    emit_step(r, i);
}

/* Asks the replanner about step uid (unlocked while the model is asked). Called locked. */
static void replan(struct run *r, struct job *job, size_t i, const json_t *report)
{
    struct rein__plan_tool_turn tt = {
        .pl = r->pl,
        .agent = r->pl->replan_agent,
        .tool = "replan",
        .phase = "replan",
        .step = (int)i,
        .attempts = r->o->planner_attempts,
        .parent = r->cancel,
        .events = r->ev,
        .stats = r->st,
    };
    const char *reason = json_string_value(json_object_get(report, "reason"));
    char *prompt = rein__plan_replan_prompt(r->plan, i, report, r->pl->reg, &r->o->step);
    char reason_copy[REASON_MAX], why[WHY_MAX];
    struct rein_plan_event ev;
    rein_error err;
    rein_err rc;
    long at;

    struct rein_span span;

    snprintf(reason_copy, sizeof(reason_copy), "%s", reason ? reason : "verification failed");
    pthread_mutex_unlock(&r->mu);
    rein_span_start(&span, "rein.plan.replan", REIN_SPAN_INTERNAL, NULL);
    rein_span_set_str(&span, "rein.plan.replan.reason", reason_copy);
    rein_error_clear(&err);
    rc = prompt ? rein__plan_tool_turn_run(&tt, prompt, &err)
                : rein_error_set(&err, REIN_ENOMEM, "out of memory");
    if (rc)
        rein_span_fail(&span, rein_err_name(rc), err.msg);
    else
        rein_span_set_str(&span, "rein.plan.replan.action",
                          json_string_value(json_object_get(tt.accepted, "action")));
    rein_span_end(&span);
    atomic_fetch_add(&r->st->replans, 1);
    rein_free(prompt);
    pthread_mutex_lock(&r->mu);
    at = rein__plan_find_uid(r->plan, job->uid);
    if (at >= 0 && (rc == REIN_ECANCELED || rein_cancel_is_set(r->cancel))) {
        interrupt_step(r, (size_t)at);
    } else if (at >= 0) {
        memset(&ev, 0, sizeof(ev));
        ev.type = REIN_PLAN_EV_REPLAN;
        ev.step = (int)at;
        ev.text = rc ? "none" : json_string_value(json_object_get(tt.accepted, "action"));
        ev.data = tt.accepted;
        rein__plan_emit(r->ev, &ev);
        snprintf(why, sizeof(why), "the replanner could not decide: %s", err.msg);
        apply_replan(r, job, rc ? NULL : tt.accepted, reason_copy, rc ? why : NULL);
    }
    json_decref(tt.accepted);
}

/* After the step's turn: verify, then complete, block or replan. Called locked. */
static void finish_step(struct run *r, struct job *job, rein_err rc, const rein_agent_result *res,
                        const rein_error *err)
{
    long at = rein__plan_find_uid(r->plan, job->uid);
    struct rein__plan_step *s;
    json_t *report = NULL;
    bool passed;
    size_t i;

    if (at < 0)
        return;
    i = (size_t)at;
    s = &r->plan->steps[i];
    if (rc || !res) {
        fail_run(r, rc ? rc : REIN_EINTERNAL, "step %zu could not run: %s", i, err->msg);
        interrupt_step(r, i);
        return;
    }
    if (rein_cancel_is_set(r->cancel) || rein_agent_result_stop(res) == REIN_AGENT_STOP_CANCELLED) {
        interrupt_step(r, i);
        return;
    }
    passed = verify(r, i, res, &report);
    emit_verdict(r, i, passed, report);
    if (passed) {
        if (rein_plan_set_step_output(r->plan, i, rein_agent_result_text(res)) != REIN_OK) {
            fail_run(r, REIN_ENOMEM, "out of memory");
            interrupt_step(r, i);
        } else {
            collect_files(s);
            s->status = REIN_PLAN_COMPLETED;
            (void)save_locked(r);
            emit_step(r, i);
        }
    } else if (s->replans >= r->max_replans) {
        char note[500];
        const char *why = json_string_value(json_object_get(report, "reason"));
        snprintf(note, sizeof(note), "blocked after %d attempt%s: %s", s->replans + 1,
                 s->replans ? "s" : "", why ? why : "verification failed");
        block_step(r, i, note);
    } else {
        replan(r, job, i, report);
    }
    json_decref(report);
}

static void job_done(struct job *job)
{
    struct run *r = job->r;

    for (unsigned k = 0; k < r->running; k++) {
        if (r->active[k] == job) {
            r->active[k] = r->active[--r->running];
            break;
        }
    }
    pthread_cond_broadcast(&r->cv);
}

static void job_main(void *arg)
{
    struct job *job = arg;
    struct run *r = job->r;
    struct rein_agent_turn_opts o = r->o->step;
    rein_ledger *ledger = rein_ledger_new();
    rein_history *h = rein_history_new();
    rein_agent_result *res = NULL;
    rein_error err;
    rein_err rc = REIN_ENOMEM;

    struct rein_trace_scope scope;
    struct rein_span span;

    /* The step is a child of the plan's span whichever thread runs it; its turn, model calls
     * and tool calls nest below it. */
    rein_trace_scope_enter(&scope, r->trace);
    rein_span_start(&span, "rein.plan.step", REIN_SPAN_INTERNAL, NULL);
    rein_span_set_int(&span, "rein.plan.step.index", atomic_load(&job->idx));
    rein_span_set_int(&span, "rein.plan.step.attempt", job->replans + 1);
    rein_error_clear(&err);
    if (ledger && h) {
        rein_ledger_set_hook(ledger, mirror, job);
        o.ledger = ledger;
        o.has_step = true;
        o.step = atomic_load(&job->idx);
        o.cancel = r->cancel;
        o.on_event = r->ev && r->ev->fn ? job_event : NULL;
        o.event_data = job;
        o.persist = NULL;
        o.trace_id = NULL;
        rc = rein_agent_run(r->pl->step_agent, h, job->message, &o, &res, &err);
    } else {
        rein_error_set(&err, REIN_ENOMEM, "out of memory");
    }
    rein__plan_stats_add(r->st, res);
    pthread_mutex_lock(&r->mu);
    finish_step(r, job, rc, res, &err);
    if (rein_span_is_recording(&span)) {
        long at = rein__plan_find_uid(r->plan, job->uid);
        enum rein_plan_status st = at >= 0 ? r->plan->steps[at].status : REIN_PLAN_BLOCKED;
        rein_span_set_str(&span, "rein.plan.step.status", rein_plan_status_name(st));
        if (rc || (st != REIN_PLAN_COMPLETED && st != REIN_PLAN_NOT_STARTED))
            rein_span_fail(&span, rc ? rein_err_name(rc) : rein_plan_status_name(st), NULL);
    }
    job_done(job);
    pthread_mutex_unlock(&r->mu);
    rein_span_end(&span);
    rein_trace_scope_leave(&scope);
    rein_agent_result_free(res);
    rein_history_free(h);
    rein_ledger_free(ledger);
    rein_free(job->message);
    rein_free(job);
}

/* Starts step i. Called locked; returns false when the run must stop. */
static bool start_step(struct run *r, size_t i)
{
    struct rein__plan_step *s = &r->plan->steps[i];
    struct job *job = rein_calloc(1, sizeof(*job));

    if (job)
        job->message = step_message(r->plan, i);
    if (!job || !job->message) {
        rein_free(job);
        fail_run(r, REIN_ENOMEM, "out of memory starting step %zu", i);
        return false;
    }
    job->r = r;
    job->uid = s->uid;
    job->replans = s->replans;
    atomic_init(&job->idx, (int)i);
    s->status = REIN_PLAN_IN_PROGRESS;
    if (save_locked(r) != REIN_OK) {
        s->status = REIN_PLAN_NOT_STARTED;
        rein_free(job->message);
        rein_free(job);
        return false;
    }
    emit_step(r, i);
    r->active[r->running++] = job;
    if (!r->pool || rein_pool_submit(r->pool, job_main, job) != REIN_OK) {
        /* No worker to take it: run it here (the lock is the job's to take). */
        pthread_mutex_unlock(&r->mu);
        job_main(job);
        pthread_mutex_lock(&r->mu);
    }
    return true;
}

static bool stopping(struct run *r)
{
    return r->fatal || rein_cancel_is_set(r->cancel);
}

/* Starts ready steps and waits for them until nothing is left. Called locked. */
static void schedule(struct run *r)
{
    size_t ready[REIN_PLAN_MAX_STEPS];

    while (!stopping(r)) {
        size_t n = rein_plan_ready_steps(r->plan, ready, REIN_PLAN_MAX_STEPS);
        size_t started = 0;
        uint64_t uids[REIN_PLAN_MAX_STEPS];
        for (size_t k = 0; k < n; k++)
            uids[k] = r->plan->steps[ready[k]].uid;
        for (size_t k = 0; k < n && r->running < r->max_parallel && !stopping(r); k++) {
            /* An inline run may have moved or finished steps: look each one up again. */
            long at = rein__plan_find_uid(r->plan, uids[k]);
            if (at < 0 || r->plan->steps[at].status != REIN_PLAN_NOT_STARTED)
                continue;
            if (!start_step(r, (size_t)at))
                break;
            started++;
        }
        if (r->running == 0 && started == 0)
            break;
        if (r->running > 0 && (started == 0 || r->running >= r->max_parallel))
            pthread_cond_wait(&r->cv, &r->mu);
    }
    while (r->running > 0)
        pthread_cond_wait(&r->cv, &r->mu);
}

/* ---- the answer ---- */

static void answer_event(const struct rein_agent_event *ev, void *ud)
{
    struct run *r = ud;

    rein__plan_emit_agent(r->ev, "answer", -1, ev);
}

/* Asks for the answer; on failure *answer is composed by rein and why says what happened. */
static bool aggregate(struct run *r, char **answer, char *why, size_t size)
{
    static const char *const no_tools[1] = {NULL};
    struct rein_agent_turn_opts o = {0};
    char *prompt = rein__plan_answer_prompt(r->plan);
    rein_history *h = rein_history_new();
    rein_agent_result *res = NULL;
    rein_error err;
    bool ok = false;

    *answer = NULL;
    rein_error_clear(&err);
    o.verification = REIN_AGENT_VERIFY_OFF;
    o.tools = no_tools;
    o.tool_count = 0;
    o.cancel = r->cancel;
    o.on_event = r->ev && r->ev->fn ? answer_event : NULL;
    o.event_data = r;
    if (prompt && h && rein_agent_run(r->pl->answer_agent, h, prompt, &o, &res, &err) == REIN_OK) {
        rein__plan_stats_add(r->st, res);
        ok = rein_agent_result_stop(res) == REIN_AGENT_STOP_FINAL_ANSWER &&
             rein_agent_result_text(res)[0];
        if (ok)
            *answer = rein_strdup(rein_agent_result_text(res));
        else
            snprintf(why, size, "%s%s%s", rein_agent_stop_name(rein_agent_result_stop(res)),
                     rein_agent_result_detail(res)[0] ? ": " : "", rein_agent_result_detail(res));
    } else {
        snprintf(why, size, "%s", err.msg[0] ? err.msg : "out of memory");
    }
    if (ok && !*answer) {
        ok = false;
        snprintf(why, size, "out of memory");
    }
    rein_agent_result_free(res);
    rein_history_free(h);
    rein_free(prompt);
    return ok;
}

/* ---- the run ---- */

static bool all_completed(const rein_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->steps[i].status != REIN_PLAN_COMPLETED)
            return false;
    }
    return true;
}

static bool has_progress(const rein_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->steps[i].status != REIN_PLAN_NOT_STARTED || p->steps[i].replans ||
            json_array_size(p->steps[i].history))
            return true;
    }
    return p->answer != NULL;
}

/* "step 1 (…) is blocked: <note>" for the first blocked step, and how many others. */
static void describe_blocked(const rein_plan *p, char *detail, size_t size)
{
    size_t blocked = 0, skipped = 0, first = 0;

    for (size_t i = 0; i < p->n; i++) {
        if (p->steps[i].status == REIN_PLAN_BLOCKED && blocked++ == 0)
            first = i;
        skipped += p->steps[i].status == REIN_PLAN_SKIPPED;
    }
    if (blocked == 0)
        return;
    snprintf(detail, size, "step %zu (%.80s) is blocked: %.160s%s%zu more blocked, %zu skipped",
             first, p->steps[first].desc, p->steps[first].note ? p->steps[first].note : "no note",
             "; ", blocked - 1, skipped);
}

/* Runs the steps and the answer; fills stop, answer (new) and detail. */
static void run_plan(struct run *r, const char **stop, char **answer, char *detail, size_t size)
{
    bool answered = false, resumed;

    pthread_mutex_lock(&r->mu);
    resumed = has_progress(r->plan);
    rein_plan_resume_reset(r->plan);
    emit_plan(r, resumed ? "resumed" : "new");
    if (save_locked(r) == REIN_OK)
        schedule(r);
    pthread_mutex_unlock(&r->mu);
    if (!stopping(r) && r->plan->answer && rein_plan_is_finished(r->plan)) {
        *answer = rein_strdup(r->plan->answer);
        answered = *answer != NULL;
    } else if (!stopping(r)) {
        answered = aggregate(r, answer, detail, size);
        pthread_mutex_lock(&r->mu);
        if (answered && rein_plan_set_answer(r->plan, *answer) == REIN_OK)
            (void)save_locked(r);
        pthread_mutex_unlock(&r->mu);
        if (!answered && detail[0]) {
            char why[400];
            snprintf(why, sizeof(why), "the answer could not be written: %s", detail);
            snprintf(detail, size, "%s", why);
        }
    }
    if (r->fatal) {
        *stop = "error";
        snprintf(detail, size, "%s", r->detail);
    } else if (rein_cancel_is_set(r->cancel)) {
        *stop = "cancelled";
        snprintf(detail, size, "%s", rein_cancel_reason(r->cancel));
    } else if (!answered) {
        *stop = "error";
    } else {
        *stop = all_completed(r->plan) ? "completed" : "blocked";
        if (!all_completed(r->plan))
            describe_blocked(r->plan, detail, size);
    }
    if (!*answer)
        *answer = rein__plan_fallback_answer(r->plan, detail[0] ? detail : *stop);
}

rein_err rein__plan_execute(rein_planner *pl, rein_plan *plan, const struct rein_plan_opts *o,
                            struct rein__plan_events *ev, struct rein__plan_stats *st,
                            int64_t start_ms, rein_plan_result **out, rein_error *err)
{
    struct run r;
    rein_pool *own = NULL;
    const char *stop = "error";
    char *answer = NULL, detail[400] = "";
    struct rein_plan_event fev;

    memset(&r, 0, sizeof(r));
    r.pl = pl;
    r.plan = plan;
    r.o = o;
    r.ev = ev;
    r.st = st;
    r.max_parallel = o->max_parallel ? o->max_parallel : DEFAULT_MAX_PARALLEL;
    if (r.max_parallel > MAX_PARALLEL_CAP)
        r.max_parallel = MAX_PARALLEL_CAP;
    r.max_replans = o->max_replans == 0  ? REIN_PLAN_MAX_REPLANS
                    : o->max_replans < 0 ? 0
                                         : o->max_replans;
    r.cancel = rein_cancel_new_child(o->cancel);
    if (!r.cancel) {
        rein_plan_free(plan);
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    r.pool = pl->pool;
    if (!r.pool && r.max_parallel > 1)
        r.pool = own = rein_pool_new(r.max_parallel, NULL); /* NULL: steps run one by one here */
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cv, NULL);
    r.trace = rein_trace_current(); /* the plan's span (plan_span) */
    run_plan(&r, &stop, &answer, detail, sizeof(detail));
    rein_pool_free(own);
    memset(&fev, 0, sizeof(fev));
    fev.type = REIN_PLAN_EV_FINAL;
    fev.step = -1;
    fev.ok = strcmp(stop, "completed") == 0;
    fev.stop_reason = stop;
    fev.text = answer ? answer : "";
    rein__plan_emit(ev, &fev);
    pthread_cond_destroy(&r.cv);
    pthread_mutex_destroy(&r.mu);
    rein_cancel_unref(r.cancel);
    *out = rein__plan_result_new(plan, stop, answer ? answer : "", detail, fev.ok, st,
                                 rein_now_ms() - start_ms);
    rein_free(answer);
    if (!*out)
        return rein_error_set(err, REIN_ENOMEM, "out of memory building the plan's result");
    return REIN_OK;
}

/* ---- the public entry points ---- */

static void events_init(struct rein__plan_events *e, const struct rein_plan_opts *o)
{
    memset(e, 0, sizeof(*e));
    e->fn = o->on_event;
    e->data = o->event_data;
    pthread_mutex_init(&e->mu, NULL);
}

/* What every entry point does first: err cleared and placed in this module. */
static void begin(rein_error *err)
{
    rein_error_clear(err);
    rein_error_where(err, REIN__PLAN_WHERE);
}

/* The options (the defaults for NULL) and the event sink over them; destroy ev->mu after. */
static const struct rein_plan_opts *start_events(struct rein__plan_events *ev,
                                                 const struct rein_plan_opts *opts)
{
    static const struct rein_plan_opts defaults;

    if (!opts)
        opts = &defaults;
    events_init(ev, opts);
    return opts;
}

rein_err rein_planner_plan(rein_planner *pl, const char *query, const struct rein_plan_opts *opts,
                           rein_plan **out, rein_error *err)
{
    struct rein__plan_events ev;
    struct rein__plan_stats st = {0};
    rein_err rc;

    begin(err);
    if (out)
        *out = NULL;
    if (!pl || !query || !query[0] || !out)
        return rein_error_set(err, REIN_EINVAL, "planning needs an engine and a request");
    opts = start_events(&ev, opts);
    rc = rein__plan_make(pl, query, opts, &ev, &st, out, err);
    pthread_mutex_destroy(&ev.mu);
    return rc;
}

/* A plan's run is one "rein.plan" span: the planner's model calls and every step nest in it. */
static void plan_span_end(struct rein_span *span, rein_err rc, const rein_plan_result *res,
                          const rein_error *err)
{
    if (rc)
        rein_span_fail(span, rein_err_name(rc), err ? err->msg : NULL);
    else if (res && !rein_plan_result_success(res))
        rein_span_fail(span, rein_plan_result_stop_reason(res), rein_plan_result_detail(res));
    if (res)
        rein_span_set_str(span, "rein.plan.stop_reason", rein_plan_result_stop_reason(res));
    rein_span_end(span);
}

rein_err rein_planner_execute(rein_planner *pl, rein_plan *plan, const struct rein_plan_opts *opts,
                              rein_plan_result **out, rein_error *err)
{
    struct rein__plan_events ev;
    struct rein__plan_stats st = {0};
    struct rein_span span;
    rein_err rc;

    begin(err);
    if (out)
        *out = NULL;
    if (!pl || !plan || !out) {
        rein_plan_free(plan);
        return rein_error_set(err, REIN_EINVAL,
                              "execute needs an engine, a plan and a place "
                              "for the result");
    }
    opts = start_events(&ev, opts);
    rein_span_start(&span, "rein.plan", REIN_SPAN_INTERNAL, NULL);
    rc = rein__plan_execute(pl, plan, opts, &ev, &st, rein_now_ms(), out, err);
    plan_span_end(&span, rc, *out, err);
    pthread_mutex_destroy(&ev.mu);
    return rc;
}

rein_err rein_planner_run(rein_planner *pl, const char *query, const struct rein_plan_opts *opts,
                          rein_plan_result **out, rein_error *err)
{
    struct rein__plan_events ev;
    struct rein__plan_stats st = {0};
    int64_t start = rein_now_ms();
    rein_plan *plan = NULL;
    struct rein_span span;
    rein_err rc;

    begin(err);
    if (out)
        *out = NULL;
    if (!pl || !query || !query[0] || !out)
        return rein_error_set(err, REIN_EINVAL, "a plan run needs an engine and a request");
    opts = start_events(&ev, opts);
    rein_span_start(&span, "rein.plan", REIN_SPAN_INTERNAL, NULL);
    rc = rein__plan_make(pl, query, opts, &ev, &st, &plan, err);
    if (!rc)
        rein_span_set_int(&span, "rein.plan.steps", (int64_t)rein_plan_step_count(plan));
    if (!rc) {
        rc = rein__plan_execute(pl, plan, opts, &ev, &st, start, out, err);
    } else {
        /* Event readers learn why nothing ran. */
        struct rein_plan_event fail = {.type = REIN_PLAN_EV_ERROR, .step = -1};
        fail.text = err && err->msg[0] ? err->msg : rein_strerror(rc);
        rein__plan_emit(&ev, &fail);
    }
    plan_span_end(&span, rc, *out, err);
    pthread_mutex_destroy(&ev.mu);
    return rc;
}
