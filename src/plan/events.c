/*
 * Events of a plan run (include/rein/plan.h): one struct, one JSON writer, and the emitter
 * that numbers events and keeps the caller's callback from running twice at once, since
 * steps run on several threads and each step's turn reports its own agent events.
 */
#include "plan_int.h"

#include <string.h>

#define NAME(id, name) name,
static const char *const type_names[] = {"error", REIN_PLAN_EV_MAP(NAME)};
#undef NAME

const char *rein_plan_event_type_name(enum rein_plan_event_type t)
{
    return (size_t)t < REIN_ARRAY_SIZE(type_names) ? type_names[t] : "error";
}

static void write_step(struct rein_jw *w, int step)
{
    if (step < 0)
        return;
    rein_jw_key(w, "step");
    rein_jw_int(w, step);
}

static rein_err write_agent(struct rein_jw *w, const struct rein_agent_event *ev)
{
    struct rein_buf b;
    rein_err rc;

    rein_buf_init(&b, 0);
    rc = rein_agent_event_write(ev, &b);
    if (!rc) {
        rein_jw_key(w, "event");
        rein_jw_raw(w, b.ptr, b.len);
    }
    rein_buf_release(&b);
    return rc;
}

rein_err rein_plan_event_write(const struct rein_plan_event *ev, struct rein_buf *out)
{
    struct rein_jw w;
    rein_err rc = REIN_OK;

    rein_jw_init(&w, out);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "type");
    rein_jw_str(&w, rein_plan_event_type_name(ev->type));
    rein_jw_key(&w, "seq");
    rein_jw_uint(&w, ev->seq);
    switch (ev->type) {
    case REIN_PLAN_EV_PLAN:
        rein_jw_key(&w, "plan");
        if (ev->data)
            rein_jw_json(&w, ev->data);
        else
            rein_jw_null(&w);
        rein_jw_key(&w, "reason");
        rein_jw_str(&w, ev->text ? ev->text : "new");
        rein_jw_key(&w, "resumed");
        rein_jw_bool(&w, ev->ok);
        break;
    case REIN_PLAN_EV_STEP:
        write_step(&w, ev->step);
        rein_jw_key(&w, "status");
        rein_jw_str(&w, rein_plan_status_name(ev->status));
        rein_jw_key(&w, "attempt");
        rein_jw_int(&w, ev->attempt);
        rein_jw_key(&w, "description");
        rein_jw_str(&w, ev->text ? ev->text : "");
        if (ev->note) {
            rein_jw_key(&w, "note");
            rein_jw_str(&w, ev->note);
        }
        break;
    case REIN_PLAN_EV_VERIFICATION:
        write_step(&w, ev->step);
        rein_jw_key(&w, "passed");
        rein_jw_bool(&w, ev->ok);
        rein_jw_key(&w, "reason");
        rein_jw_str(&w, ev->text ? ev->text : "");
        if (ev->data) {
            rein_jw_key(&w, "report");
            rein_jw_json(&w, ev->data);
        }
        break;
    case REIN_PLAN_EV_REPLAN:
        write_step(&w, ev->step);
        rein_jw_key(&w, "action");
        rein_jw_str(&w, ev->text ? ev->text : "");
        rein_jw_key(&w, "decision");
        if (ev->data)
            rein_jw_json(&w, ev->data);
        else
            rein_jw_null(&w);
        break;
    case REIN_PLAN_EV_AGENT:
        rein_jw_key(&w, "phase");
        rein_jw_str(&w, ev->phase ? ev->phase : "step");
        write_step(&w, ev->step);
        if (ev->agent)
            rc = write_agent(&w, ev->agent);
        break;
    case REIN_PLAN_EV_FINAL:
        rein_jw_key(&w, "success");
        rein_jw_bool(&w, ev->ok);
        rein_jw_key(&w, "stop_reason");
        rein_jw_str(&w, ev->stop_reason ? ev->stop_reason : "");
        rein_jw_key(&w, "answer");
        rein_jw_str(&w, ev->text ? ev->text : "");
        break;
    default:
        rein_jw_key(&w, "message");
        rein_jw_str(&w, ev->text ? ev->text : "");
        break;
    }
    rein_jw_obj_end(&w);
    return rc ? rc : rein_jw_finish(&w);
}

void rein__plan_emit(struct rein__plan_events *e, struct rein_plan_event *ev)
{
    if (!e || !e->fn)
        return;
    pthread_mutex_lock(&e->mu);
    ev->seq = ++e->seq;
    e->fn(ev, e->data);
    pthread_mutex_unlock(&e->mu);
}

void rein__plan_emit_agent(struct rein__plan_events *e, const char *phase, int step,
                           const struct rein_agent_event *aev)
{
    struct rein_plan_event ev;

    if (!e || !e->fn)
        return;
    if (aev->type == REIN_AGENT_EV_FINAL &&
        (strcmp(phase, "plan") == 0 || strcmp(phase, "replan") == 0))
        return;
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_PLAN_EV_AGENT;
    ev.phase = phase;
    ev.step = step;
    ev.agent = aev;
    rein__plan_emit(e, &ev);
}
