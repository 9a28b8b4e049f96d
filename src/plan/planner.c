/*
 * The plan engine's handle and its model turns: the planner (create_plan), the replanner
 * (replan, the seed's ReplanResult) and the prompts of the replanner and the aggregation.
 *
 * The planner and the replanner are agent turns (rein_agent_run) offered one tool each, from
 * registries of their own, so their calls take the one pipeline: the schema preflight and
 * the meaning check in tools.c, an invalid call answered with the invalid payload, the model
 * trying again. The turn's ledger hook watches for the first successful call: it keeps its
 * arguments and stops the turn through the turn's cancel handle, so no closing model call
 * follows (a successful call would otherwise reach the success cap and ask the model for a
 * summary nobody reads). A reply with no call gets one reminder to call the tool.
 */
#include "plan_int.h"

#include <stdio.h>
#include <string.h>

#define DEFAULT_PLANNER_ATTEMPTS 3
#define OUTPUT_SHOWN             4000

static const char step_role[] =
    "You carry out one step of a larger plan. Do only that step, with the tools you have, then "
    "reply with what the step produced. Report only what your tool calls actually did: never "
    "say that you called a tool, wrote a file or got a result unless a tool call did it and "
    "succeeded.";

static const char planner_role[] =
    "You are a planner. Break the user's request into a short list of concrete steps that can "
    "each be carried out with the tools available, and record the plan by calling the "
    "create_plan tool once: a title, the steps in order, and for each step that needs the "
    "results of others the 0-based indices of those steps (dependencies). Steps that do not "
    "depend on each other run at the same time. A step never depends on itself, and the "
    "dependencies must not form a loop. Prefer few steps. Do not carry out the request "
    "yourself.";

static const char replan_role[] =
    "You fix plans. A step of a plan failed its check: it left a tool call without a result, "
    "or its answer claimed something its tool calls did not do. Decide how to fix it and record "
    "the decision by calling the replan tool: rewrite (a clearer description of the same step, "
    "for example naming the tool to call), split (two or more smaller steps that replace it), "
    "or give_up (the step cannot be done with the tools available).";

static const char answer_role[] =
    "You write the final answer to the user's request from the results of the steps of a plan "
    "that was carried out for it. Use only what the results say, and say plainly what could "
    "not be done.";

/* ---- the handle ---- */

rein_planner *rein_planner_new(rein_provider *provider, const rein_registry *reg, rein_error *err)
{
    rein_planner *pl;

    if (!provider || !reg) {
        rein_error_set(err, REIN_EINVAL, "the plan engine needs a provider and a registry");
        return NULL;
    }
    pl = rein_calloc(1, sizeof(*pl));
    if (!pl) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    pl->provider = provider;
    pl->reg = reg;
    pl->planner_reg = rein_registry_new(err);
    pl->replan_reg = pl->planner_reg ? rein_registry_new(err) : NULL;
    if (!pl->replan_reg ||
        rein__plan_register_tools(pl->planner_reg, pl->replan_reg, err) != REIN_OK)
        goto fail;
    pl->step_agent = rein_agent_new(provider, reg, err);
    pl->planner_agent = pl->step_agent ? rein_agent_new(provider, pl->planner_reg, err) : NULL;
    pl->replan_agent = pl->planner_agent ? rein_agent_new(provider, pl->replan_reg, err) : NULL;
    pl->answer_agent = pl->replan_agent ? rein_agent_new(provider, reg, err) : NULL;
    if (!pl->answer_agent || rein_agent_set_system_prompt(pl->step_agent, step_role) ||
        rein_agent_set_system_prompt(pl->planner_agent, planner_role) ||
        rein_agent_set_system_prompt(pl->replan_agent, replan_role) ||
        rein_agent_set_system_prompt(pl->answer_agent, answer_role)) {
        if (pl->answer_agent)
            rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto fail;
    }
    return pl;
fail:
    rein_planner_free(pl);
    return NULL;
}

void rein_planner_free(rein_planner *pl)
{
    if (!pl)
        return;
    rein_agent_free(pl->answer_agent);
    rein_agent_free(pl->replan_agent);
    rein_agent_free(pl->planner_agent);
    rein_agent_free(pl->step_agent);
    rein_registry_free(pl->replan_reg);
    rein_registry_free(pl->planner_reg);
    rein_free(pl);
}

rein_agent *rein_planner_step_agent(rein_planner *pl)
{
    return pl ? pl->step_agent : NULL;
}

void rein_planner_set_pool(rein_planner *pl, rein_pool *pool)
{
    if (pl)
        pl->pool = pool;
}

void rein__plan_stats_add(struct rein__plan_stats *st, const rein_agent_result *r)
{
    if (!st || !r)
        return;
    atomic_fetch_add(&st->model_calls, rein_agent_result_model_calls(r));
    atomic_fetch_add(&st->in_tokens, rein_agent_result_input_tokens(r));
    atomic_fetch_add(&st->out_tokens, rein_agent_result_output_tokens(r));
    atomic_fetch_add(&st->tool_calls, (long long)rein_agent_result_tool_call_count(r));
}

/* ---- a turn that must end in one tool call ---- */

struct tt_state {
    struct rein__plan_tool_turn *tt;
    pthread_mutex_t mu;
    rein_cancel *cancel;
    int invalid;
};

static rein_err tt_hook(void *ud, const struct rein_ledger_entry *e)
{
    struct tt_state *st = ud;
    struct rein__plan_tool_turn *tt = st->tt;
    json_t *result;
    const char *msg;

    if (e->status == REIN_CALL_PENDING)
        return REIN_OK;
    pthread_mutex_lock(&st->mu);
    if (!tt->accepted && strcmp(e->tool, tt->tool) == 0 && e->status == REIN_CALL_SUCCESS) {
        tt->accepted = rein_json_parse(e->args, strlen(e->args), 0, NULL);
        rein_cancel_trigger(st->cancel, "the decision was made");
    } else if (!tt->accepted && e->status != REIN_CALL_SUCCESS) {
        result = e->result ? rein_json_parse(e->result, strlen(e->result), 0, NULL) : NULL;
        msg = json_string_value(json_object_get(result, "message"));
        snprintf(tt->last_error, sizeof(tt->last_error), "%s",
                 msg ? msg : rein_call_status_name(e->status));
        json_decref(result);
        if (++st->invalid >= tt->attempts)
            rein_cancel_trigger(st->cancel, "too many invalid calls");
    }
    pthread_mutex_unlock(&st->mu);
    return REIN_OK;
}

static void tt_event(const struct rein_agent_event *ev, void *ud)
{
    struct rein__plan_tool_turn *tt = ud;

    rein__plan_emit_agent(tt->events, tt->phase, tt->step, ev);
}

rein_err rein__plan_tool_turn_run(struct rein__plan_tool_turn *tt, const char *message,
                                  rein_error *err)
{
    const char *tools[1] = {tt->tool};
    struct tt_state st = {.tt = tt};
    rein_history *h = rein_history_new();
    char nudge[200];
    int replies = 0, nudges = 0;
    rein_err rc = REIN_OK;

    tt->accepted = NULL;
    tt->last_error[0] = '\0';
    if (tt->attempts <= 0)
        tt->attempts = DEFAULT_PLANNER_ATTEMPTS;
    st.cancel = rein_cancel_new_child(tt->parent);
    if (!h || !st.cancel) {
        rein_history_free(h);
        rein_cancel_unref(st.cancel);
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&st.mu, NULL);
    snprintf(nudge, sizeof(nudge),
             "You did not call the %s tool. Call it now; that is the only way to record your "
             "answer.",
             tt->tool);
    while (!tt->accepted && replies < tt->attempts) {
        struct rein_agent_turn_opts o = {0};
        rein_ledger *ledger = rein_ledger_new();
        rein_agent_result *r = NULL;
        enum rein_agent_stop stop;
        if (!ledger) {
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
            break;
        }
        rein_ledger_set_hook(ledger, tt_hook, &st);
        o.mode = REIN_AGENT_MODE_AUTO;
        o.verification = REIN_AGENT_VERIFY_OFF;
        o.max_iterations = tt->attempts - replies;
        o.cancel = st.cancel;
        o.ledger = ledger;
        o.tools = tools;
        o.tool_count = 1;
        o.on_event = tt->events && tt->events->fn ? tt_event : NULL;
        o.event_data = tt;
        rc = rein_agent_run(tt->agent, h, replies == 0 ? message : nudge, &o, &r, err);
        if (rc) {
            rein_ledger_free(ledger);
            break;
        }
        rein__plan_stats_add(tt->stats, r);
        replies += rein_agent_result_model_calls(r) > 0 ? rein_agent_result_model_calls(r) : 1;
        stop = rein_agent_result_stop(r);
        if (!tt->accepted && rein_cancel_is_set(tt->parent)) {
            rc = rein_error_set(err, REIN_ECANCELED, "%s", rein_cancel_reason(tt->parent));
        } else if (!tt->accepted &&
                   (stop == REIN_AGENT_STOP_PROVIDER_ERROR || stop == REIN_AGENT_STOP_TIMEOUT ||
                    stop == REIN_AGENT_STOP_ERROR)) {
            rc = rein_error_set(err, REIN_EPROVIDER, "the model could not be asked (%s): %s",
                                rein_agent_stop_name(stop), rein_agent_result_detail(r));
        } else if (!tt->accepted && rein_cancel_is_set(st.cancel)) {
            rc = REIN_EINVALID; /* too many invalid calls */
        } else if (!tt->accepted && stop == REIN_AGENT_STOP_FINAL_ANSWER) {
            nudges++;
        }
        rein_agent_result_free(r);
        rein_ledger_free(ledger);
        if (rc)
            break;
    }
    if (!tt->accepted && (!rc || rc == REIN_EINVALID)) {
        if (tt->last_error[0])
            rc = rein_error_set(err, REIN_EINVALID,
                                "the model made no valid %s call in %d replies; the last "
                                "problem: %s",
                                tt->tool, replies, tt->last_error);
        else
            rc = rein_error_set(err, REIN_EINVALID,
                                "the model did not call %s (%d replies, %d reminder%s)", tt->tool,
                                replies, nudges, nudges == 1 ? "" : "s");
    }
    pthread_mutex_destroy(&st.mu);
    rein_cancel_unref(st.cancel);
    rein_history_free(h);
    return tt->accepted ? REIN_OK : rc;
}

/* ---- prompts ---- */

/* Appends "- name: description" for each tool a step may use. */
static void add_tools(struct rein__plan_text *b, const rein_registry *reg,
                      const struct rein_agent_turn_opts *step)
{
    size_t n = step && step->tools ? step->tool_count : rein_registry_count(reg);

    if (n == 0)
        rein__plan_text_adds(b, "(none)\n");
    for (size_t i = 0; i < n; i++) {
        const rein_tool *t =
            step && step->tools ? rein_registry_get(reg, step->tools[i]) : rein_registry_at(reg, i);
        if (t)
            rein__plan_text_addf(b, "- %s: %s\n", rein_tool_id(t), rein_tool_description(t));
    }
}

static char *planner_prompt(const char *query, const rein_registry *reg,
                            const struct rein_agent_turn_opts *step)
{
    struct rein__plan_text b;

    rein__plan_text_init(&b, 0);
    rein__plan_text_addf(&b, "The request:\n%s\n\nTools the steps can use:\n", query);
    add_tools(&b, reg, step);
    rein__plan_text_adds(&b, "\nCall create_plan with the plan.");
    return rein__plan_text_detach(&b);
}

static void add_output(struct rein__plan_text *b, const char *text)
{
    size_t n = strlen(text);

    if (n <= OUTPUT_SHOWN) {
        rein__plan_text_adds(b, text);
        return;
    }
    n = OUTPUT_SHOWN;
    while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
        n--;
    rein__plan_text_add(b, text, n);
    rein__plan_text_addf(b, " … (%zu more bytes)", strlen(text) - n);
}

static void add_plan(struct rein__plan_text *b, const rein_plan *p, size_t failed)
{
    for (size_t i = 0; i < p->n; i++) {
        const struct rein__plan_step *s = &p->steps[i];
        rein__plan_text_addf(b, "%zu. [%s] %s", i,
                             i == failed ? "failed" : rein_plan_status_name(s->status), s->desc);
        if (s->ndeps) {
            rein__plan_text_adds(b, " (needs");
            for (size_t k = 0; k < s->ndeps; k++)
                rein__plan_text_addf(b, "%s %d", k ? "," : "", s->deps[k]);
            rein__plan_text_adds(b, ")");
        }
        if (s->status == REIN_PLAN_COMPLETED && s->output) {
            rein__plan_text_adds(b, "\n   output: ");
            add_output(b, s->output);
        }
        rein__plan_text_addch(b, '\n');
    }
}

char *rein__plan_replan_prompt(const rein_plan *p, size_t i, const json_t *report,
                               const rein_registry *reg, const struct rein_agent_turn_opts *step)
{
    const struct rein__plan_step *s = &p->steps[i];
    json_t *calls = json_pack("{s:O?, s:O?, s:O?}", "pending", json_object_get(report, "pending"),
                              "failed_calls", json_object_get(report, "failed_calls"), "claims",
                              json_object_get(report, "claims"));
    char *calls_text = NULL;
    const char *reason = json_string_value(json_object_get(report, "reason"));
    struct rein__plan_text b;

    if (calls) {
        struct rein_buf cb;
        rein_buf_init(&cb, 0);
        if (rein_json_dump_indent(&cb, calls, 1) == REIN_OK)
            calls_text = rein_buf_detach(&cb, NULL);
        rein_buf_release(&cb);
    }
    rein__plan_text_init(&b, 0);
    rein__plan_text_addf(&b, "The request:\n%s\n\n## The whole plan\n", p->query);
    add_plan(&b, p, i);
    rein__plan_text_addf(&b,
                         "\n## The failed step\n- Index: %zu\n- Description: %s\n- Replans so "
                         "far: %d\n- Why it failed: %s\n\n## Failed tool calls and claims\n",
                         i, s->desc, s->replans, reason ? reason : "(unknown)");
    if (calls_text)
        add_output(&b, calls_text);
    rein__plan_text_adds(&b, "\n\n## Available tools\n");
    add_tools(&b, reg, step);
    rein__plan_text_adds(
        &b, "\n## What you can do\n1. rewrite: give the step a new description "
            "(new_description)\n2. split: replace the step with two or more smaller steps "
            "(new_steps, and new_dependencies among them by their index in new_steps)\n"
            "3. give_up: the step cannot be done\n\nCall the replan tool with your decision.");
    rein_free(calls_text);
    json_decref(calls);
    return rein__plan_text_detach(&b);
}

/* "Step i (description) — status" with the step's output when it completed, else its note. */
static void add_step_result(struct rein__plan_text *b, const rein_plan *p, size_t i)
{
    const struct rein__plan_step *s = &p->steps[i];

    rein__plan_text_addf(b, "Step %zu (%s) — %s", i, s->desc, rein_plan_status_name(s->status));
    if (s->status == REIN_PLAN_COMPLETED && s->output) {
        rein__plan_text_adds(b, ":\n");
        add_output(b, s->output);
    } else if (s->note) {
        rein__plan_text_addf(b, ": %s", s->note);
    }
}

char *rein__plan_answer_prompt(const rein_plan *p)
{
    struct rein__plan_text b;

    rein__plan_text_init(&b, 0);
    rein__plan_text_addf(&b,
                         "The request:\n%s\n\nThe plan \"%s\" was carried out. What each step "
                         "produced:\n\n",
                         p->query, p->title);
    for (size_t i = 0; i < p->n; i++) {
        add_step_result(&b, p, i);
        rein__plan_text_adds(&b, "\n\n");
    }
    rein__plan_text_adds(&b, "Write the answer to the request from these results.");
    return rein__plan_text_detach(&b);
}

char *rein__plan_fallback_answer(const rein_plan *p, const char *why)
{
    struct rein__plan_text b;

    rein__plan_text_init(&b, 0);
    rein__plan_text_addf(&b,
                         "No answer was written (%s). What the steps "
                         "produced:\n",
                         why);
    for (size_t i = 0; i < p->n; i++) {
        rein__plan_text_addch(&b, '\n');
        add_step_result(&b, p, i);
        rein__plan_text_addch(&b, '\n');
    }
    return rein__plan_text_detach(&b);
}

/* ---- the planner ---- */

rein_err rein__plan_make(rein_planner *pl, const char *query, const struct rein_plan_opts *o,
                         struct rein__plan_events *ev, struct rein__plan_stats *st, rein_plan **out,
                         rein_error *err)
{
    struct rein__plan_tool_turn tt = {
        .pl = pl,
        .agent = pl->planner_agent,
        .tool = "create_plan",
        .phase = "plan",
        .step = -1,
        .attempts = o->planner_attempts > 0 ? o->planner_attempts : DEFAULT_PLANNER_ATTEMPTS,
        .parent = o->cancel,
        .events = ev,
        .stats = st,
    };
    char *msg = planner_prompt(query, pl->reg, &o->step);
    rein_err rc;

    *out = NULL;
    if (!msg)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = rein__plan_tool_turn_run(&tt, msg, err);
    rein_free(msg);
    if (rc)
        return rc;
    *out = rein_plan_from_spec(tt.accepted, query, err);
    json_decref(tt.accepted);
    return *out ? REIN_OK : (err && err->code ? err->code : REIN_ENOMEM);
}
