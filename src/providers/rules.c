/*
 * The rules provider (issue 4 item 8; option B of docs/DESIGN.md [skill-host]): a backend that
 * answers like a model without one. The router (router.c) turns the request into calls of the
 * offered tools; this file proposes them one reply at a time and words the answer from their
 * results (rules_answer.c).
 *
 * It is a provider, not a second way to run tools: it proposes tool calls in an ordinary
 * response, which the agent runs through the one pipeline and records in the ledger like any
 * model's calls. It keeps no state: every send reads the history. After the last user message
 * it counts the calls it already made and the results that came back:
 *
 *   next call                 one call per reply, in the order the request asked for them,
 *                             so a later one runs after the earlier one succeeded
 *   all calls done, or a      the answer, worded from the results in the request's language
 *   call failed               (English, Simplified or Traditional Chinese)
 *   steps it could not read   the answer of the steps that ran, each step it could not read
 *                             named, and finish reason "unroutable": the turn did not do all
 *                             it was asked, and a model behind the rules takes it over
 *   nothing routes            finish reason "unroutable" (REIN_RULES_UNROUTABLE in
 *                             rein/provider.h) and a text that says what rein can do offline
 *                             and how to configure a model; the agent's fast path reads the
 *                             finish reason and asks the model instead, and a turn that ends
 *                             on it did not succeed
 */
#include "router_int.h"

#include "rules_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FINISH_ROUTED  "tool_calls"
#define FINISH_ANSWER  "stop"
#define FINISH_NOROUTE REIN_FINISH_UNROUTABLE

/* ---- what happened after the last user message ---- */

static bool result_ok(const json_t *content)
{
    return json_is_true(json_object_get(content, "ok")) ||
           (json_is_string(json_object_get(content, "status")) &&
            strcmp(json_string_value(json_object_get(content, "status")), "proposed") == 0);
}

/* The arguments of the call with id among the assistant messages after the user's (new). */
static json_t *call_arguments(rein_history *h, size_t from, const char *id)
{
    for (size_t i = from; id && i < rein_history_len(h); i++) {
        const json_t *calls = json_object_get(rein_history_get(h, i), "tool_calls"), *c;
        size_t k;
        json_array_foreach(calls, k, c)
        {
            const char *args = rein__json_str(c, "arguments");
            if (strcmp(rein__json_str(c, "id"), id) == 0)
                return rein_json_parse(args, strlen(args), 0, NULL);
        }
    }
    return NULL;
}

static rein_err read_state(rein_history *h, struct rein__rules_state *st, rein_error *err)
{
    size_t n = rein_history_len(h), u = n;

    memset(st, 0, sizeof(st[0]));
    while (u-- > 0) {
        const json_t *m = rein_history_get(h, u);
        if (strcmp(rein__json_str(m, "role"), "user") == 0)
            break;
    }
    if (u >= n)
        return rein_error_set(err, REIN_EINVAL, "nothing to route: there is no user message");
    st->message = rein__json_str(rein_history_get(h, u), "content");
    st->lang = rein__router_language(st->message);
    st->results = json_array();
    if (!st->results)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    for (size_t i = u + 1; i < n; i++) {
        const json_t *m = rein_history_get(h, i);
        const char *role = rein__json_str(m, "role");
        if (strcmp(role, "assistant") == 0) {
            st->calls_made += json_array_size(json_object_get(m, "tool_calls"));
        } else if (strcmp(role, "tool") == 0) {
            const char *c = rein__json_str(m, "content");
            json_t *v = rein_json_parse(c, strlen(c), 0, NULL), *args;
            if (!v)
                v = json_string(c);
            st->failed = !result_ok(v);
            args = call_arguments(h, u + 1, rein__json_str(m, "tool_call_id"));
            json_array_append_new(st->results,
                                  json_pack("{s:s, s:o, s:o}", "tool", rein__json_str(m, "name"),
                                            "content", v ? v : json_null(), "arguments",
                                            args ? args : json_object()));
        }
    }
    return REIN_OK;
}

/* ---- building the reply ---- */

static void emit(const rein_model_request *req, enum rein_model_event_type type, const char *text,
                 size_t len, const char *finish)
{
    struct rein_model_event ev;

    if (!req->fn)
        return;
    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.text = text;
    ev.len = len;
    ev.finish_reason = finish;
    if (type == REIN_MEV_USAGE)
        ev.input_tokens = ev.output_tokens = 0;
    req->fn(&ev, req->ud);
}

/* A reply with text only. */
static rein_err reply_text(const rein_model_request *req, const struct rein__text *text,
                           const char *finish, rein_model_response **out)
{
    rein_model_response *r = rein__response_new(0);

    if (!r || text->rc || rein_buf_add(&r->text, text->b.ptr, text->b.len) != REIN_OK ||
        !(r->finish_reason = rein_strdup(finish))) {
        rein_model_response_free(r);
        return REIN_ENOMEM;
    }
    r->input_tokens = r->output_tokens = 0;
    r->complete = true;
    emit(req, REIN_MEV_TEXT_DELTA, r->text.ptr, r->text.len, NULL);
    emit(req, REIN_MEV_USAGE, NULL, 0, NULL);
    emit(req, REIN_MEV_FINISH, NULL, 0, finish);
    *out = r;
    return REIN_OK;
}

/* A reply with one tool call, through the assembler so its events and id are a model's. */
static rein_err reply_call(const rein_model_request *req, rein_history *h,
                           const struct rein__rules_state *st, const struct rein__routed *rt,
                           rein_model_response **out)
{
    static const struct rein_decoder_options opt = {.keep_think_tags = true};
    rein_model_response *r = rein__response_new(0);
    struct rein__jstr finish = {FINISH_ROUTED, sizeof(FINISH_ROUTED) - 1, false};
    const char *name = rein_tool_id(rt->tool);
    char *args = rein_json_dumps(rt->args);
    struct rein__asm a;
    rein_err rc = REIN_ENOMEM;
    int idx;

    if (!r || !args) {
        rein_model_response_free(r);
        rein_free(args);
        return REIN_ENOMEM;
    }
    rein__asm_init(&a, r, &opt, req->fn, req->ud);
    /* Ids differ across turns and calls, and stay the same for the same history. */
    a.id_seed = rein__hash64(rein__hash64(rein_history_len(h), st->message, strlen(st->message)),
                             &st->calls_made, sizeof(st->calls_made));
    idx = rein__asm_call_whole(&a, name, strlen(name), args, strlen(args), false, true);
    if (idx >= 0 && rein__asm_call_close(&a, (size_t)idx) == REIN_OK &&
        rein__asm_finish_reason(&a, finish) == REIN_OK) {
        rein__asm_usage(&a, 0, 0);
        rein__asm_complete(&a);
        rc = rein__asm_end(&a);
    }
    rein__asm_release(&a);
    rein_free(args);
    if (rc) {
        rein_model_response_free(r);
        return rc;
    }
    *out = r;
    return REIN_OK;
}

static rein_err rules_send(rein_provider *p, rein_model_request *req, rein_history *h,
                           rein_model_response **out, rein_error *err)
{
    struct rein__route_plan plan;
    struct rein__rules_state st;
    struct rein__text text = {.rc = REIN_OK};
    const char *names[64];
    size_t nnames = 0;
    bool none = req->tool_choice && strcmp(req->tool_choice, "none") == 0;
    rein_err rc;

    (void)p;
    if (rein_cancel_is_set(req->cancel))
        return rein_error_set(err, REIN_ECANCELED, "the request was cancelled: %s",
                              rein_cancel_reason(req->cancel));
    if (!h)
        return rein_error_set(err, REIN_EINVAL, "nothing to route: no history");
    rc = read_state(h, &st, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < req->ntools && nnames < 64; i++)
        names[nnames++] = req->tools[i].name;
    rein_buf_init(&text.b, 0);
    rc = rein__router_route(req->reg, names, nnames, st.message, &plan);
    if (rc) {
        /* out of memory routing */
    } else if (!none && plan.n > 0 && st.calls_made < plan.n && !st.failed) {
        rc = reply_call(req, h, &st, &plan.calls[st.calls_made], out);
    } else if (json_array_size(st.results) > 0 || st.calls_made > 0) {
        rein__rules_compose(&st, &text);
        rein__rules_skipped(&st, &plan, &text);
        rc = text.rc ? text.rc
                     : reply_text(req, &text, plan.nskipped ? FINISH_NOROUTE : FINISH_ANSWER, out);
    } else {
        rein__rules_unroutable(req, &st, &text);
        rc = text.rc ? text.rc : reply_text(req, &text, FINISH_NOROUTE, out);
    }
    rein__route_plan_release(&plan);
    json_decref(st.results);
    rein_buf_release(&text.b);
    if (rc)
        return rein_error_set(err, rc, "the rules provider: %s", rein_strerror(rc));
    return REIN_OK;
}

const struct rein__wire rein__wire_rules = {
    .name = "rules",
    .send = rules_send,
};

rein_err rein__rules_open(rein_provider *p, rein_error *err)
{
    /* No model and no network: the router answers from the tools' routes. */
    if (!p->cfg.model && !(p->cfg.model = rein_strdup("rules")))
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    p->endpoint = rein_strdup("rules:");
    return p->endpoint ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
}
