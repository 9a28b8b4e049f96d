/*
 * The result of a plan run: the plan as it ended, the answer, why the run stopped, and the
 * counters of every model turn it made; its JSON lists every step with status, attempts,
 * output and calls (the seed's aggregation, plus what a person needs to see what happened).
 */
#include "plan_int.h"

#include <string.h>

rein_plan_result *rein__plan_result_new(rein_plan *plan, const char *stop_reason,
                                        const char *answer, const char *detail, bool success,
                                        const struct rein__plan_stats *st, int64_t latency_ms)
{
    rein_plan_result *r = rein_calloc(1, sizeof(*r));

    if (!r) {
        rein_plan_free(plan);
        return NULL;
    }
    r->plan = plan;
    r->success = success;
    r->stop_reason = rein_strdup(stop_reason);
    r->answer = rein_strdup(answer ? answer : "");
    r->detail = rein_strdup(detail ? detail : "");
    r->latency_ms = latency_ms;
    if (st) {
        r->model_calls = atomic_load(&st->model_calls);
        r->in_tokens = atomic_load(&st->in_tokens);
        r->out_tokens = atomic_load(&st->out_tokens);
        r->tool_calls = atomic_load(&st->tool_calls);
        r->replans = atomic_load(&st->replans);
    }
    if (!r->stop_reason || !r->answer || !r->detail) {
        rein_plan_result_free(r);
        return NULL;
    }
    return r;
}

void rein_plan_result_free(rein_plan_result *r)
{
    if (!r)
        return;
    rein_plan_free(r->plan);
    rein_free(r->stop_reason);
    rein_free(r->answer);
    rein_free(r->detail);
    rein_free(r);
}

rein_plan *rein_plan_result_plan(const rein_plan_result *r)
{
    return r ? r->plan : NULL;
}

bool rein_plan_result_success(const rein_plan_result *r)
{
    return r && r->success;
}

const char *rein_plan_result_stop_reason(const rein_plan_result *r)
{
    return r ? r->stop_reason : "error";
}

const char *rein_plan_result_answer(const rein_plan_result *r)
{
    return r ? r->answer : "";
}

const char *rein_plan_result_detail(const rein_plan_result *r)
{
    return r ? r->detail : "";
}

/* How many times the step ran: its replans, plus the run that ended it (or is running). */
static int attempts(const struct rein__plan_step *s)
{
    bool ran = s->status == REIN_PLAN_COMPLETED || s->status == REIN_PLAN_BLOCKED ||
               s->status == REIN_PLAN_IN_PROGRESS;
    return s->replans + (ran ? 1 : 0);
}

static json_t *step_json(const rein_plan *p, size_t i)
{
    const struct rein__plan_step *s = &p->steps[i];
    json_t *deps = json_array(), *j;

    for (size_t k = 0; deps && k < s->ndeps; k++) {
        if (json_array_append_new(deps, json_integer(s->deps[k]))) {
            json_decref(deps);
            deps = NULL;
        }
    }
    if (!deps)
        return NULL;
    j = json_pack("{s:I, s:s, s:s, s:o, s:i, s:i, s:O, s:O}", "index", (json_int_t)i, "description",
                  s->desc, "status", rein_plan_status_name(s->status), "dependencies", deps,
                  "attempts", attempts(s), "replans", s->replans, "files", s->files, "calls",
                  s->history);
    if (j && s->note && json_object_set_new(j, "note", json_string(s->note))) {
        json_decref(j);
        return NULL;
    }
    if (j && s->output && s->status == REIN_PLAN_COMPLETED &&
        json_object_set_new(j, "output", json_string(s->output))) {
        json_decref(j);
        return NULL;
    }
    return j;
}

json_t *rein_plan_result_json(const rein_plan_result *r)
{
    json_t *steps = json_array(), *j;
    const rein_plan *p;

    if (!r || !steps) {
        json_decref(steps);
        return NULL;
    }
    p = r->plan;
    for (size_t i = 0; i < p->n; i++) {
        if (json_array_append_new(steps, step_json(p, i))) {
            json_decref(steps);
            return NULL;
        }
    }
    j = json_pack("{s:b, s:s, s:s, s:s, s:s, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
                  "success", r->success, "stop_reason", r->stop_reason, "title", p->title, "query",
                  p->query, "answer", r->answer, "steps", steps, "meta", "model_calls",
                  (json_int_t)r->model_calls, "input_tokens", (json_int_t)r->in_tokens,
                  "output_tokens", (json_int_t)r->out_tokens, "total_tokens",
                  (json_int_t)(r->in_tokens + r->out_tokens), "tool_calls",
                  (json_int_t)r->tool_calls, "replans", (json_int_t)r->replans, "latency_ms",
                  (json_int_t)r->latency_ms);
    if (j && r->detail[0] && json_object_set_new(j, "detail", json_string(r->detail))) {
        json_decref(j);
        return NULL;
    }
    return j;
}
